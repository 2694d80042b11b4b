#include "vit/serve/tasks.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One worker's: its contexts (worker 0: the caller's; the others vit_share's over the same
 * weights) and its buffers. */
typedef struct {
    vit_gen_context *gen; /* an image-to-text model; image is then its encoder */
    vit_context *image;
    vit_text_context *text;
    vit_generation *generated; /* [max_batch] (gen) */
    float *pixels;  /* [max_batch, C, H, W]: a batch's decoded images side by side (two or more) */
    float *outputs; /* [max_batch, the widest answer] */
    const char **texts, **queries;
    size_t *lengths, *query_lengths;
    float *scores; /* [max_batch]: a batch of pairs' logits */
} task_worker;

struct serve_tasks {
    vit_gen_context *gen; /* the caller's (worker 0's) */
    vit_context *image;   /* the caller's (worker 0's): decoding, and what the answers are */
    vit_text_context *text;
    int tags; /* the text model is a token classifier */
    int max_batch, workers;
    task_worker *worker;                   /* [workers] */
    atomic_llong tokens, padded, one_pass; /* serve_tasks_padding */
};

const char *serve_task_name(serve_task task) {
    static const char *const names[] = {[SERVE_CLASSIFY] = "classify",
                                        [SERVE_EMBED_CLS] = "embed",
                                        [SERVE_EMBED_MEAN] = "embed",
                                        [SERVE_TEXT] = "text",
                                        [SERVE_EMBED_JOINT] = "embed",
                                        [SERVE_EMBED_OWN] = "embed",
                                        [SERVE_EMBED_TEXT] = "embed_text",
                                        [SERVE_GENERATE] = "generate",
                                        [SERVE_CLASSES] = "classes",
                                        [SERVE_EXPLAIN_ROLLOUT] = "explain",
                                        [SERVE_EXPLAIN_GRAD] = "explain",
                                        [SERVE_RERANK] = "rerank",
                                        [SERVE_TAG] = "tag"};
    return task >= SERVE_CLASSIFY && task < SERVE_TASKS ? names[task] : "unknown";
}

static size_t explain_cells(const vit_context *image) {
    int gh = 0, gw = 0;
    vit_patch_grid(image, &gh, &gw);
    return (size_t)gh * gw;
}

size_t serve_task_outputs(const serve_tasks *t, serve_task task) {
    switch (task) {
    case SERVE_CLASSIFY:
        return t->image ? (size_t)vit_num_labels(t->image) : 0;
    case SERVE_EMBED_CLS:
    case SERVE_EMBED_MEAN:
        return t->image ? (size_t)vit_hidden_size(t->image) : 0;
    case SERVE_TEXT:
        return t->text ? (size_t)vit_text_num_labels(t->text) : 0;
    case SERVE_EMBED_JOINT:
        return t->image ? (size_t)vit_joint_dim(t->image) : 0;
    case SERVE_EMBED_OWN:
        return t->image ? (size_t)vit_embed_size(t->image, vit_default_pool(t->image)) : 0;
    case SERVE_EMBED_TEXT:
        return t->text ? (size_t)vit_text_embed_size(t->text, vit_text_default_pool(t->text)) : 0;
    case SERVE_EXPLAIN_ROLLOUT:
    case SERVE_EXPLAIN_GRAD:
        return t->image && !t->gen ? explain_cells(t->image) : 0;
    case SERVE_RERANK: /* a cross-encoder's logit and score */
        return t->text && vit_text_num_labels(t->text) == 1 ? 2 : 0;
    case SERVE_TAG:
        return t->tags ? (size_t)vit_text_max_tokens(t->text) * vit_text_num_labels(t->text) : 0;
    case SERVE_GENERATE:
    case SERVE_CLASSES:
    case SERVE_TASKS:
        return 0;
    }
    return 0;
}

static size_t widest_output(const serve_tasks *t) {
    size_t w = 0;
    for (int task = SERVE_CLASSIFY; task < SERVE_TASKS; task++) {
        const size_t n = serve_task_outputs(t, (serve_task)task);
        if (n > w) w = n;
    }
    return w;
}

static int is_explain_task(int task) {
    return task == SERVE_EXPLAIN_ROLLOUT || task == SERVE_EXPLAIN_GRAD;
}

static int is_image_task(int task) {
    return task == SERVE_CLASSIFY || task == SERVE_EMBED_CLS || task == SERVE_EMBED_MEAN ||
           task == SERVE_EMBED_JOINT || task == SERVE_EMBED_OWN || task == SERVE_GENERATE ||
           is_explain_task(task);
}

/* vit_text_count_tokens' limit (1 MiB): a longer text is taken as long as the model reads. */
#define COUNTED_BYTES ((size_t)1 << 20)

static int is_text_task(int task) {
    return task == SERVE_TEXT || task == SERVE_EMBED_TEXT || task == SERVE_RERANK ||
           task == SERVE_TAG;
}

/* A text job's tokens, counted whole; one longer than the model takes is refused (-2) when its
 * request will not have it cut, else its length for the batcher is the places it will take in a
 * pass (vit_text_padded_length: a SigLIP tower's texts all take max_tokens, so its batches are
 * never split). */
static int decode_text(serve_tasks *t, serve_job *job, vit_error *err) {
    if (!t->text) return vit_fail(err, "no text model");
    const serve_text_request *text = job->task == SERVE_EMBED_TEXT ? job->data : NULL;
    const serve_pair_request *pair = job->task == SERVE_RERANK ? job->data : NULL;
    const serve_tag_request *tag = job->task == SERVE_TAG ? job->data : NULL;
    const int max = vit_text_max_tokens(t->text);
    const int refuse = (text && text->no_truncate) || (pair && pair->no_truncate);
    const size_t bytes = pair   ? pair->query_size + pair->size
                         : text ? text->size
                         : tag  ? tag->size
                                : job->size;
    if (bytes > COUNTED_BYTES) { /* beyond what is counted: cut, or refused whole */
        if (refuse)
            return vit_fail(err,
                            "%zu bytes: too long to count its tokens (over 1 MiB), and the model "
                            "takes %d; send \"truncate\": true to have it cut",
                            bytes, max),
                   -2;
        job->length = vit_text_padded_length(t->text, max);
        return 0;
    }
    const int n = pair   ? vit_text_count_pair_tokens(t->text, pair->query, pair->query_size,
                                                      pair->text, pair->size, err)
                  : text ? vit_text_count_tokens(t->text, text->text, text->size, err)
                  : tag  ? vit_text_count_tokens(t->text, tag->text, tag->size, err)
                         : vit_text_count_tokens(t->text, job->data, job->size, err);
    if (n < 0) return -1;
    if (n > max && refuse)
        return vit_fail(err,
                        "%d tokens, more than the model's %d (its max_seq_length); send "
                        "\"truncate\": true to have it cut",
                        n, max),
               -2;
    job->length = vit_text_padded_length(t->text, n < max ? n : max);
    return 0;
}

/* Images are preprocessed on the decode threads; texts counted there (decode_text) and
 * tokenized in the forward call. */
static int decode(void *self, serve_job *job, vit_error *err) {
    serve_tasks *t = self;
    if (is_text_task(job->task)) return decode_text(t, job, err);
    if (!is_image_task(job->task)) return 0;
    if (!t->image) return vit_fail(err, "no image model");
    if (job->task == SERVE_GENERATE && !t->gen) return vit_fail(err, "no image-to-text model");
    const serve_gen_request *g = job->task == SERVE_GENERATE ? job->data : NULL;
    const size_t floats = vit_input_floats(t->image);
    if (!(job->input = malloc(sizeof(float) * floats))) return vit_fail(err, "out of memory");
    if (is_explain_task(job->task)) { /* the pixels; the image's size and the region told */
        serve_explain_request *x = (serve_explain_request *)job->data; /* the submitter's */
        int size[2];
        if (vit_preprocess_memory_region(t->image, x->image, x->size, job->input, size, x->region,
                                         err) != 0)
            return -1;
        x->width = size[0], x->height = size[1];
        return 0;
    }
    return vit_preprocess_memory(t->image, g ? g->image : job->data, g ? g->size : job->size,
                                 job->input, err);
}

static int same_options(const vit_gen_options *a, const vit_gen_options *b) {
    return a->num_beams == b->num_beams && a->max_new_tokens == b->max_new_tokens &&
           a->max_length == b->max_length && a->min_length == b->min_length &&
           a->length_penalty == b->length_penalty && a->early_stopping == b->early_stopping &&
           a->no_repeat_ngram_size == b->no_repeat_ngram_size;
}

/* Images to text share a forward pass when they ask for the same options. */
static int same_batch(void *self, const serve_job *a, const serve_job *b) {
    (void)self;
    if (a->task != SERVE_GENERATE) return 1;
    return same_options(&((const serve_gen_request *)a->data)->options,
                        &((const serve_gen_request *)b->data)->options);
}

/* The batch's decoded images side by side: a lone image's own pixels (no copy), else copied into
 * the worker's buffer. */
static const float *batch_pixels(task_worker *w, serve_job *const *jobs, int n) {
    if (n == 1) return jobs[0]->input;
    const size_t floats = vit_input_floats(w->image);
    for (int i = 0; i < n; i++)
        memcpy(w->pixels + (size_t)i * floats, jobs[i]->input, sizeof(float) * floats);
    return w->pixels;
}

static int forward_images(task_worker *w, serve_job *const *jobs, int n, vit_error *err) {
    const float *pixels = batch_pixels(w, jobs, n);
    switch ((serve_task)jobs[0]->task) {
    case SERVE_CLASSIFY:
        return vit_forward(w->image, pixels, n, w->outputs, err);
    case SERVE_EMBED_CLS:
        return vit_embed(w->image, pixels, n, VIT_POOL_CLS, w->outputs, err);
    case SERVE_EMBED_JOINT:
        return vit_embed(w->image, pixels, n, VIT_POOL_JOINT, w->outputs, err);
    case SERVE_EMBED_OWN:
        return vit_embed(w->image, pixels, n, vit_default_pool(w->image), w->outputs, err);
    default:
        return vit_embed(w->image, pixels, n, VIT_POOL_MEAN, w->outputs, err);
    }
}

/* The batch's images (of equal options) in one vit_generate: images x beams rows a step. */
static int forward_generate(task_worker *w, serve_job *const *jobs, int n, vit_error *err) {
    const float *pixels = batch_pixels(w, jobs, n);
    const serve_gen_request *first = jobs[0]->data;
    if (vit_generate(w->gen, pixels, n, &first->options, w->generated, err) != 0) return -1;
    for (int i = 0; i < n; i++) {
        serve_gen_request *req = (serve_gen_request *)jobs[i]->data; /* the submitter's */
        req->result = w->generated[i];
        w->generated[i] = (vit_generation){0};
    }
    return 0;
}

static int forward_texts(task_worker *w, serve_job *const *jobs, int n, vit_error *err) {
    const int embed = jobs[0]->task == SERVE_EMBED_TEXT;
    for (int i = 0; i < n; i++) {
        const serve_text_request *req = embed ? jobs[i]->data : NULL;
        w->texts[i] = req ? req->text : jobs[i]->data;
        w->lengths[i] = req ? req->size : jobs[i]->size;
    }
    if (!embed) return vit_text_forward(w->text, w->texts, w->lengths, n, w->outputs, NULL, err);
    if (vit_text_embed(w->text, w->texts, w->lengths, n, vit_text_default_pool(w->text), w->outputs,
                       err) != 0)
        return -1;
    for (int i = 0; i < n; i++) { /* each text's token count, into the submitter's request */
        serve_text_request *req = (serve_text_request *)jobs[i]->data;
        vit_text_ids(w->text, i, &req->tokens);
    }
    return 0;
}

/* The batch's pairs in one forward pass: each job's out its logit and its score. */
static int forward_pairs(task_worker *w, serve_job *const *jobs, int n, vit_error *err) {
    for (int i = 0; i < n; i++) {
        const serve_pair_request *req = jobs[i]->data;
        w->queries[i] = req->query, w->query_lengths[i] = req->query_size;
        w->texts[i] = req->text, w->lengths[i] = req->size;
    }
    const vit_text_pairs pairs = {w->queries, w->texts, w->query_lengths, w->lengths};
    if (vit_text_forward_pairs(w->text, &pairs, n, w->scores, NULL, err) != 0) return -1;
    for (int i = 0; i < n; i++) w->outputs[2 * i] = w->outputs[2 * i + 1] = w->scores[i];
    for (int i = 0; i < n; i++) vit_text_pair_activate(w->text, w->outputs + 2 * i + 1, 1);
    for (int i = 0; i < n; i++) { /* each pair's token count, into the submitter's request */
        serve_pair_request *req = (serve_pair_request *)jobs[i]->data;
        vit_text_ids(w->text, i, &req->tokens);
    }
    return 0;
}

/* The batch's texts' token logits in one forward pass, each text's ids into its request. */
static int forward_tags(task_worker *w, serve_job *const *jobs, int n, vit_error *err) {
    for (int i = 0; i < n; i++) {
        const serve_tag_request *req = jobs[i]->data;
        w->texts[i] = req->text, w->lengths[i] = req->size;
    }
    if (vit_text_token_logits(w->text, w->texts, w->lengths, n, w->outputs, err) != 0) return -1;
    for (int i = 0; i < n; i++) {
        serve_tag_request *req = (serve_tag_request *)jobs[i]->data; /* the submitter's */
        const int32_t *ids = vit_text_ids(w->text, i, &req->tokens), *starts, *ends;
        memcpy(req->ids, ids, sizeof *ids * (size_t)req->tokens);
        vit_error none = {0};
        req->offsets = vit_text_token_offsets(w->text, i, &starts, &ends, &none) >= 0;
        snprintf(req->no_offsets, sizeof req->no_offsets, "%s", req->offsets ? "" : none.msg);
        if (req->offsets) {
            memcpy(req->starts, starts, sizeof *starts * (size_t)req->tokens);
            memcpy(req->ends, ends, sizeof *ends * (size_t)req->tokens);
        }
    }
    return 0;
}

/* Each class set from the cache, or embedded here with this worker's text context; a set that
 * fails is that job's error alone. */
static int forward_classes(task_worker *w, serve_job *const *jobs, int n, vit_error *err) {
    if (!w->text || vit_text_joint_dim(w->text) <= 0)
        return vit_fail(err, "zero-shot needs a joint model's text tower");
    for (int i = 0; i < n; i++) {
        serve_class_request *req = (serve_class_request *)jobs[i]->data; /* the submitter's */
        req->set = serve_class_cache_get(req->cache, &req->query, w->text, &req->err);
    }
    return 0;
}

/* Each image alone (an explanation is not batched): its class and probability into its request,
 * its map into its out. */
static int forward_explain(task_worker *w, serve_job *const *jobs, int n, vit_error *err) {
    const size_t cells = explain_cells(w->image);
    const vit_explain_method method =
        jobs[0]->task == SERVE_EXPLAIN_GRAD ? VIT_EXPLAIN_GRAD : VIT_EXPLAIN_ROLLOUT;
    for (int i = 0; i < n; i++) {
        vit_explanation x;
        if (vit_explain(w->image, jobs[i]->input, method, -1, &x, err) != 0) return -1;
        serve_explain_request *req = (serve_explain_request *)jobs[i]->data; /* the submitter's */
        req->label = x.label;
        req->prob = x.prob;
        memcpy(jobs[i]->out, x.map, sizeof(float) * cells); /* one map: rollout */
        vit_explanation_free(&x);
    }
    return 0;
}

/* A pass's cost in token places: its texts padded to the longest, and a fixed share for the pass
 * itself (the weights read once more, the per-layer calls): splitting a batch of 16 tokens into
 * two of 8 costs more than it saves. */
#define PASS_COST 64

static int by_length(const void *a, const void *b) {
    const serve_job *x = *(serve_job *const *)a, *y = *(serve_job *const *)b;
    return (x->length > y->length) - (x->length < y->length);
}

/* The batch's texts by length, cut into runs of near lengths that cost the fewest token places
 * (an O(n^2) search over the cuts of the sorted order: n is a batch); each run a forward pass of
 * its own, and the padding counted. */
static int forward_text_runs(serve_tasks *t, task_worker *w, serve_job *const *jobs, int n,
                             vit_error *err,
                             int (*run)(task_worker *, serve_job *const *, int, vit_error *)) {
    serve_job *sorted[n];
    memcpy(sorted, jobs, sizeof *sorted * (size_t)n);
    qsort(sorted, (size_t)n, sizeof *sorted, by_length);
    long long best[n + 1];
    int cut[n + 1]; /* the start of the last run of the best split of sorted[0..i) */
    best[0] = 0;
    for (int i = 1; i <= n; i++) {
        best[i] = -1;
        for (int j = 0; j < i; j++) {
            const long long c = best[j] + (long long)(i - j) * sorted[i - 1]->length + PASS_COST;
            if (best[i] < 0 || c < best[i]) best[i] = c, cut[i] = j;
        }
    }
    int starts[n + 1], runs = 0;
    for (int i = n; i > 0; i = cut[i]) starts[runs++] = cut[i];
    long long tokens = 0, padded = 0;
    int longest = 0;
    for (int i = 0; i < n; i++) {
        tokens += sorted[i]->length;
        longest = sorted[i]->length > longest ? sorted[i]->length : longest;
    }
    const size_t width = serve_task_outputs(t, (serve_task)jobs[0]->task);
    for (int r = runs - 1; r >= 0; r--) { /* the shortest texts first */
        const int from = starts[r], to = r ? starts[r - 1] : n;
        if (run(w, sorted + from, to - from, err) != 0) return -1;
        for (int i = from; i < to; i++)
            memcpy(sorted[i]->out, w->outputs + (size_t)(i - from) * width, sizeof(float) * width);
        padded += (long long)(to - from) * sorted[to - 1]->length;
    }
    atomic_fetch_add(&t->tokens, tokens);
    atomic_fetch_add(&t->padded, padded);
    atomic_fetch_add(&t->one_pass, (long long)n * longest);
    return 0;
}

void serve_tasks_padding(const serve_tasks *t, long long *tokens, long long *padded,
                         long long *one_pass) {
    *tokens = atomic_load(&((serve_tasks *)t)->tokens);
    *padded = atomic_load(&((serve_tasks *)t)->padded);
    *one_pass = atomic_load(&((serve_tasks *)t)->one_pass);
}

static int forward(void *self, int worker, serve_job *const *jobs, int n, vit_error *err) {
    serve_tasks *t = self;
    task_worker *w = &t->worker[worker];
    const serve_task task = (serve_task)jobs[0]->task;
    if (is_text_task(task) && serve_task_outputs(t, task) > 0)
        return forward_text_runs(t, w, jobs, n, err,
                                 task == SERVE_RERANK ? forward_pairs
                                 : task == SERVE_TAG  ? forward_tags
                                                      : forward_texts);
    if (task == SERVE_CLASSES) return forward_classes(w, jobs, n, err);
    if (task == SERVE_GENERATE)
        return w->gen ? forward_generate(w, jobs, n, err)
                      : vit_fail(err, "no image-to-text model loaded");
    const size_t width = serve_task_outputs(t, task);
    if (width == 0) return vit_fail(err, "no model loaded for task %d", (int)task);
    if (is_explain_task(task)) return forward_explain(w, jobs, n, err);
    const int rc = is_image_task(task)    ? forward_images(w, jobs, n, err)
                   : task == SERVE_RERANK ? forward_pairs(w, jobs, n, err)
                   : task == SERVE_TAG    ? forward_tags(w, jobs, n, err)
                                          : forward_texts(w, jobs, n, err);
    for (int i = 0; rc == 0 && i < n; i++)
        memcpy(jobs[i]->out, w->outputs + (size_t)i * width, sizeof(float) * width);
    return rc;
}

/* Worker i's contexts (shares of the caller's beyond the first) and buffers. */
static int worker_init(serve_tasks *t, int i, vit_error *err) {
    task_worker *w = &t->worker[i];
    if (t->gen) {
        w->gen = i == 0 ? t->gen : vit_gen_share(t->gen, err);
        w->image = w->gen ? vit_gen_image_context(w->gen) : NULL;
    } else {
        w->image = i == 0 || !t->image ? t->image : vit_share(t->image, err);
    }
    w->text = i == 0 || !t->text ? t->text : vit_text_share(t->text, err);
    if ((t->image && !w->image) || (t->text && !w->text)) return -1;
    const size_t B = (size_t)t->max_batch;
    if (t->gen && !(w->generated = calloc(B, sizeof *w->generated)))
        return vit_fail(err, "out of memory");
    w->outputs = malloc(sizeof(float) * B * widest_output(t));
    w->pixels = t->image ? malloc(sizeof(float) * B * vit_input_floats(t->image)) : NULL;
    w->texts = malloc(sizeof *w->texts * B);
    w->lengths = malloc(sizeof *w->lengths * B);
    w->queries = malloc(sizeof *w->queries * B);
    w->query_lengths = malloc(sizeof *w->query_lengths * B);
    w->scores = malloc(sizeof *w->scores * B);
    if (!w->outputs || (t->image && !w->pixels) || !w->texts || !w->lengths || !w->queries ||
        !w->query_lengths || !w->scores)
        return vit_fail(err, "out of memory");
    return 0;
}

static serve_tasks *tasks_create(vit_gen_context *gen, vit_context *image, vit_text_context *text,
                                 int max_batch, int workers, vit_error *err) {
    if (!image && !text) return vit_fail(err, "no model to serve"), NULL;
    serve_tasks *t = calloc(1, sizeof *t);
    if (!t) return vit_fail(err, "out of memory"), NULL;
    *t = (serve_tasks){.gen = gen,
                       .image = image,
                       .text = text,
                       .max_batch = max_batch < 1 ? 1 : max_batch,
                       .workers = workers < 1 ? 1 : workers};
    if (text) {
        vit_model_info info;
        vit_text_model_info(text, &info);
        t->tags = (info.capabilities & VIT_CAN_TAG) != 0;
    }
    t->worker = calloc((size_t)t->workers, sizeof *t->worker);
    int rc = t->worker ? 0 : vit_fail(err, "out of memory");
    for (int i = 0; rc == 0 && i < t->workers; i++) rc = worker_init(t, i, err);
    if (rc != 0) {
        serve_tasks_free(t);
        return NULL;
    }
    return t;
}

serve_tasks *serve_tasks_create(vit_context *image, vit_text_context *text, int max_batch,
                                int workers, vit_error *err) {
    return tasks_create(NULL, image, text, max_batch, workers, err);
}

serve_tasks *serve_tasks_create_gen(vit_gen_context *gen, vit_text_context *text, int max_batch,
                                    int workers, vit_error *err) {
    if (!gen) return vit_fail(err, "no image-to-text model"), NULL;
    return tasks_create(gen, vit_gen_image_context(gen), text, max_batch, workers, err);
}

void serve_tasks_free(serve_tasks *t) {
    if (!t) return;
    for (int i = 0; t->worker && i < t->workers; i++) {
        task_worker *w = &t->worker[i];
        if (i > 0) { /* the shares (a generator's own its encoder's) */
            if (t->gen)
                vit_gen_free(w->gen);
            else
                vit_free(w->image);
            vit_text_free(w->text);
        }
        vit_generation_free(w->generated, w->generated ? t->max_batch : 0);
        free(w->generated);
        free(w->pixels);
        free(w->outputs);
        free(w->texts);
        free(w->lengths);
        free(w->queries);
        free(w->query_lengths);
        free(w->scores);
    }
    free(t->worker);
    free(t);
}

serve_model serve_tasks_model(serve_tasks *t) {
    return (serve_model){.self = t, .decode = decode, .forward = forward, .same_batch = same_batch};
}
