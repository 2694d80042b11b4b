/* vit eval on images: walk the folder, decode beside the forward pass, score each image. */
#include "vit/eval/eval_images.h"

#include <stdlib.h>
#include <string.h>

#include "vit/core/ops.h"

static int preprocess_file(void *self, const char *path, float *pixels, vit_error *err) {
    return vit_preprocess_file(self, path, pixels, err);
}

static int forward(void *self, const float *pixels, int n, float *logits, vit_error *err) {
    return vit_forward(self, pixels, n, logits, err);
}

pipeline_model eval_pipeline_model(vit_context *ctx) {
    return (pipeline_model){.self = ctx,
                            .input_floats = vit_input_floats(ctx),
                            .outputs = vit_num_labels(ctx),
                            .preprocess = preprocess_file,
                            .forward = forward};
}

static int zero_shot_preprocess(void *self, const char *path, float *pixels, vit_error *err) {
    return vit_preprocess_file(((const eval_zero_shot *)self)->image, path, pixels, err);
}

/* vit_zero_shot writes a batch's scores [n, K] and probabilities [n, K] apart; the pipeline wants
 * each input's row: its scores, then its probabilities. */
static int zero_shot_forward(void *self, const float *pixels, int n, float *out, vit_error *err) {
    const eval_zero_shot *zs = self;
    const size_t K = (size_t)vit_classes_count(zs->classes);
    float *scores = malloc(sizeof(float) * 2 * (size_t)n * K), *probs = scores + (size_t)n * K;
    if (!scores) return vit_fail(err, "out of memory");
    const int rc = vit_zero_shot(zs->image, zs->classes, pixels, n, scores, probs, err);
    for (int b = 0; rc == 0 && b < n; b++) {
        memcpy(out + 2 * K * (size_t)b, scores + K * (size_t)b, sizeof(float) * K);
        memcpy(out + 2 * K * (size_t)b + K, probs + K * (size_t)b, sizeof(float) * K);
    }
    free(scores);
    return rc;
}

pipeline_model eval_zero_shot_model(const eval_zero_shot *zs) {
    return (pipeline_model){.self = (void *)zs,
                            .input_floats = vit_input_floats(zs->image),
                            .outputs = 2 * vit_classes_count(zs->classes),
                            .preprocess = zero_shot_preprocess,
                            .forward = zero_shot_forward};
}

int eval_num_classes(const vit_context *ctx, const vit_classes *classes) {
    return classes ? vit_classes_count(classes) : vit_num_labels(ctx);
}

const char *eval_class_name(const vit_context *ctx, const vit_classes *classes, int i) {
    return classes ? vit_classes_name(classes, i) : vit_label(ctx, i);
}

int eval_map_classes(imagefolder *f, const vit_context *ctx, const char *const *names,
                     int num_names, const char *class_map, int *by_order, vit_error *err) {
    const int L = names ? num_names : vit_num_labels(ctx);
    *by_order = 0;
    if (class_map) return imagefolder_map_file(f, class_map, L, err);
    const char **labels = malloc(sizeof *labels * (size_t)L);
    if (!labels) return vit_fail(err, "out of memory");
    for (int i = 0; i < L; i++) labels[i] = names ? names[i] : vit_label(ctx, i);
    const int rc = imagefolder_map_labels(f, labels, L, by_order, err);
    free(labels);
    return rc;
}

typedef struct {
    const eval_images_options *opt;
    imagefolder_walk *walk;
    eval_report *report;
    float *probs;
    int labels;
    int rank, ranks; /* the share: ranks >= 1 */
    long walked;     /* entries of the walk seen (loader thread) */
    long done;       /* inputs of the share finished (main thread) */
} eval_run;

/* Loader thread: the next image of this process's share of the walk, its true class as the tag.
 */
static int next_image(void *user, pipeline_item *item) {
    eval_run *r = user;
    for (;;) {
        imagefolder_entry e;
        /* unreadable: err set, not decoded */
        int rc = imagefolder_walk_next(r->walk, &e, &item->err);
        if (rc != 1) return rc;
        if (r->walked++ % r->ranks != r->rank) { /* another process's */
            free(e.path);
            item->err.msg[0] = 0;
            continue;
        }
        item->path = e.path;
        item->tag = e.label;
        return 1;
    }
}

/* A TSV field: the path with tab, newline, carriage return and backslash escaped. */
static void put_field(const char *s, FILE *out) {
    for (; *s; s++) {
        const char *esc = *s == '\t'   ? "\\t"
                          : *s == '\n' ? "\\n"
                          : *s == '\r' ? "\\r"
                          : *s == '\\' ? "\\\\"
                                       : NULL;
        if (esc)
            fputs(esc, out);
        else
            fputc(*s, out);
    }
}

void eval_write_prediction(FILE *out, const eval_result *res) {
    put_field(res->path, out);
    fprintf(out, "\t%d\t%d\t%.6f\n", res->true_label, res->pred, res->prob);
}

/* Main thread: one batch, items in input order. */
static void batch_done(void *user, const pipeline_item *items, int count) {
    eval_run *r = user;
    const eval_images_options *o = r->opt;
    for (int i = 0; i < count; i++) {
        const pipeline_item *it = &items[i];
        /* the share's k-th input is the walk's k·ranks + rank-th (the pipeline keeps the order) */
        eval_result res = {.index = r->done++ * r->ranks + r->rank,
                           .path = it->path,
                           .true_label = it->tag,
                           .pred = -1};
        if (!it->ok) {
            if (o->skipped) o->skipped(o->user, it->path, it->err.msg);
            eval_report_skip(r->report, it->path, it->err.msg);
            res.reason = it->err.msg;
            if (o->result) o->result(o->user, &res);
            continue;
        }
        /* zero-shot: the probabilities follow the scores; else the softmax of the logits */
        const float *probs = o->classes ? it->logits + r->labels : r->probs;
        if (!o->classes) /* the probabilities alone (k 0): eval_score ranks them for top-5 */
            vit_rank(it->logits, r->labels, 1, r->probs, 0, 0.0, NULL, NULL, NULL, NULL);
        eval_score(probs, r->labels, it->tag, &res.pred, &res.in_top5);
        res.prob = probs[res.pred];
        eval_report_add_result(r->report, it->tag, res.pred, res.in_top5);
        if (o->predictions) eval_write_prediction(o->predictions, &res);
        if (o->result) o->result(o->user, &res);
    }
    if (o->progress) o->progress(o->user, r->done);
}

int eval_images(vit_context *ctx, const imagefolder *f, const eval_images_options *opt,
                eval_report *report, vit_error *err) {
    eval_run r = {.opt = opt,
                  .report = report,
                  .labels = eval_num_classes(ctx, opt->classes),
                  .rank = opt->ranks > 1 ? opt->rank : 0,
                  .ranks = opt->ranks > 1 ? opt->ranks : 1};
    if (opt->predictions) fputs(EVAL_PREDICTIONS_HEADER, opt->predictions);
    r.probs = malloc(sizeof(float) * (size_t)r.labels);
    if (!r.probs) return vit_fail(err, "out of memory");
    r.walk = imagefolder_walk_open(f, err);
    int rc = -1;
    if (r.walk) {
        const eval_zero_shot zs = {.image = ctx, .classes = opt->classes};
        const pipeline_model model =
            opt->classes ? eval_zero_shot_model(&zs) : eval_pipeline_model(ctx);
        const pipeline_options popt = {.batch = opt->batch, .decode_threads = opt->decode_threads};
        rc = pipeline_run_source(&model, &popt, next_image, batch_done, &r, err);
    }
    imagefolder_walk_close(r.walk);
    free(r.probs);
    return rc;
}
