#include "vit/data/pipeline.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "vit/base/threads.h"

/* Two batch slots take turns. The loader lists a batch from the source, then its images are
 * decoded by whoever is free: the loader, the extra decode threads (plain threads at nice 19, see
 * threads_become_decoder) and the main thread when it would otherwise wait for the batch (the
 * first batch, or a loader fallen behind), at normal priority then. pipeline_run_batch uses one
 * slot, decoded by the caller and helpers, with no loader. */

enum { SLOT_FREE, SLOT_DECODING, SLOT_FULL };

typedef struct {
    pipeline_item *items;
    float *pixels; /* [batch, C, H, W]; failed items leave their slot unused */
    int state;
    int count, claimed, finished; /* items listed, taken by a decoder, decoded */
    int last;                     /* the input ended with this batch */
    int source_failed;            /* the source stopped the run: source_err says why */
    vit_error source_err;
} batch_slot;

typedef struct {
    const pipeline_model *model;
    pipeline_options opt;
    pipeline_source_fn source;
    void *user; /* the source's and the done callback's */
    size_t floats;
    batch_slot slots[2];
    pthread_mutex_t lock; /* guards the slots' state and counters, stop and listed_all */
    pthread_cond_t changed;
    int stop;       /* the main thread gave up (an error) */
    int listed_all; /* the loader has listed its last batch */
} pipeline;

/* The source's next batch into a free slot (only the loader touches a free slot). */
static void list_batch(pipeline *p, batch_slot *s) {
    int rc = 1;
    s->count = 0;
    while (s->count < p->opt.batch) {
        pipeline_item *it = &s->items[s->count];
        memset(it, 0, sizeof *it);
        if ((rc = p->source(p->user, it)) != 1) break;
        s->count++;
    }
    s->last = rc != 1;
    s->source_failed = rc < 0;
    if (rc < 0) {
        s->source_err = s->items[s->count].err;
        free(s->items[s->count].path);
    }
}

/* With the lock held: decodes the slot's unclaimed items one at a time, dropping the lock while
 * decoding. Whoever finishes the last item marks the slot full. */
static void help_decode(pipeline *p, batch_slot *s) {
    while (s->state == SLOT_DECODING && s->claimed < s->count) {
        pipeline_item *it = &s->items[s->claimed++];
        float *pixels = s->pixels + (size_t)(it - s->items) * p->floats;
        pthread_mutex_unlock(&p->lock);
        if (!it->err.msg[0]) /* else it failed at the source */
            it->ok = p->model->preprocess(p->model->self, it->path, pixels, &it->err) == 0;
        pthread_mutex_lock(&p->lock);
        if (++s->finished == s->count) {
            s->state = SLOT_FULL;
            pthread_cond_broadcast(&p->changed);
        }
    }
}

static void *loader_main(void *arg) {
    pipeline *p = arg;
    threads_become_decoder("vit-decode");
    pthread_mutex_lock(&p->lock);
    for (int k = 0; !p->stop; k ^= 1) {
        batch_slot *s = &p->slots[k];
        while (s->state != SLOT_FREE && !p->stop) pthread_cond_wait(&p->changed, &p->lock);
        if (p->stop) break;
        pthread_mutex_unlock(&p->lock);
        list_batch(p, s);
        pthread_mutex_lock(&p->lock);
        s->claimed = s->finished = 0;
        s->state = s->count > 0 ? SLOT_DECODING : SLOT_FULL;
        p->listed_all = s->last;
        pthread_cond_broadcast(&p->changed);
        help_decode(p, s);
        if (s->last) break;
    }
    p->listed_all = 1;
    pthread_cond_broadcast(&p->changed);
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

/* The extra decode threads: help with any slot that has work until the input is all listed. */
static void *helper_main(void *arg) {
    pipeline *p = arg;
    threads_become_decoder("vit-decode");
    pthread_mutex_lock(&p->lock);
    for (;;) {
        batch_slot *work = NULL;
        for (int k = 0; k < 2 && !work; k++)
            if (p->slots[k].state == SLOT_DECODING && p->slots[k].claimed < p->slots[k].count)
                work = &p->slots[k];
        if (work)
            help_decode(p, work);
        else if (p->listed_all || p->stop)
            break;
        else
            pthread_cond_wait(&p->changed, &p->lock);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

/* Main thread: waits for slot s to be full, decoding its images meanwhile. */
static void await_slot(pipeline *p, batch_slot *s) {
    pthread_mutex_lock(&p->lock);
    while (s->state != SLOT_FULL) {
        if (s->state == SLOT_DECODING && s->claimed < s->count)
            help_decode(p, s);
        else
            pthread_cond_wait(&p->changed, &p->lock);
    }
    pthread_mutex_unlock(&p->lock);
}

/* Moves the decoded images to the front so one forward pass covers exactly them. */
static int pack_ok(batch_slot *s, size_t floats) {
    int n = 0;
    for (int i = 0; i < s->count; i++)
        if (s->items[i].ok) {
            if (n != i)
                memmove(s->pixels + (size_t)n * floats, s->pixels + (size_t)i * floats,
                        floats * sizeof(float));
            n++;
        }
    return n;
}

/* The slot's decoded images through one forward pass, each one's logits set. */
static int forward_slot(const pipeline_model *m, batch_slot *s, float *logits, vit_error *err) {
    const int n = pack_ok(s, m->input_floats),
              rc = n > 0 ? m->forward(m->self, s->pixels, n, logits, err) : 0;
    for (int i = 0, j = 0; i < s->count; i++)
        if (s->items[i].ok) s->items[i].logits = logits + (size_t)m->outputs * j++;
    return rc;
}

static int consume_slot(pipeline *p, batch_slot *s, float *logits, pipeline_done_fn done,
                        vit_error *err) {
    int rc = forward_slot(p->model, s, logits, err);
    if (rc == 0 && s->count > 0) done(p->user, s->items, s->count);
    for (int i = 0; i < s->count; i++) free(s->items[i].path);
    s->count = 0;
    if (rc == 0 && s->source_failed) {
        if (err) *err = s->source_err;
        rc = -1;
    }
    return rc;
}

/* The batches in turn on the calling thread; stops the others on an error. */
static int consume_all(pipeline *p, float *logits, pipeline_done_fn done, vit_error *err) {
    int rc = 0;
    for (int k = 0, last = 0; !last && rc == 0; k ^= 1) {
        batch_slot *s = &p->slots[k];
        await_slot(p, s);
        last = s->last;
        rc = consume_slot(p, s, logits, done, err);
        pthread_mutex_lock(&p->lock);
        s->state = SLOT_FREE;
        if (rc != 0) p->stop = 1;
        pthread_cond_broadcast(&p->changed);
        pthread_mutex_unlock(&p->lock);
    }
    return rc;
}

static int alloc_slots(pipeline *p, vit_error *err) {
    for (int k = 0; k < 2; k++) {
        p->slots[k].items = calloc((size_t)p->opt.batch, sizeof(pipeline_item));
        p->slots[k].pixels = malloc(sizeof(float) * p->floats * (size_t)p->opt.batch);
        if (!p->slots[k].items || !p->slots[k].pixels)
            return vit_fail(err, "out of memory for batch %d", p->opt.batch);
    }
    return 0;
}

/* The slots, with the paths of batches listed but never consumed (after an error). */
static void free_slots(pipeline *p) {
    for (int k = 0; k < 2; k++) {
        for (int i = 0; p->slots[k].items && i < p->slots[k].count; i++)
            free(p->slots[k].items[i].path);
        free(p->slots[k].items);
        free(p->slots[k].pixels);
    }
}

int pipeline_run_source(const pipeline_model *model, const pipeline_options *opt,
                        pipeline_source_fn source, pipeline_done_fn done, void *user,
                        vit_error *err) {
    pipeline p = {
        .model = model, .opt = *opt, .source = source, .user = user, .floats = model->input_floats};
    if (p.opt.batch < 1) p.opt.batch = 1;
    if (p.opt.decode_threads < 1) p.opt.decode_threads = 1;
    float *logits = malloc(sizeof(float) * (size_t)p.opt.batch * (size_t)model->outputs);
    int rc = logits ? alloc_slots(&p, err) : vit_fail(err, "out of memory");
    pthread_mutex_init(&p.lock, NULL);
    pthread_cond_init(&p.changed, NULL);
    pthread_t threads[64];
    int started = 0, wanted = p.opt.decode_threads < 64 ? p.opt.decode_threads : 64;
    if (rc == 0 && pthread_create(&threads[started], NULL, loader_main, &p) == 0)
        started++;
    else if (rc == 0)
        rc = vit_fail(err, "cannot start the loader thread");
    /* Extra decoders are a speed-up only: run with fewer when they cannot be started. */
    while (rc == 0 && started < wanted &&
           pthread_create(&threads[started], NULL, helper_main, &p) == 0)
        started++;
    if (rc == 0) rc = consume_all(&p, logits, done, err);
    for (int i = 0; i < started; i++) pthread_join(threads[i], NULL);
    free_slots(&p);
    pthread_mutex_destroy(&p.lock);
    pthread_cond_destroy(&p.changed);
    free(logits);
    return rc;
}

int pipeline_run_batch(const pipeline_model *model, int threads, pipeline_item *items, int count,
                       float *pixels, float *outputs, vit_error *err) {
    pipeline p = {.model = model, .floats = model->input_floats, .listed_all = 1};
    batch_slot *s = &p.slots[0];
    *s = (batch_slot){.items = items,
                      .pixels = pixels,
                      .count = count,
                      .last = 1,
                      .state = count > 0 ? SLOT_DECODING : SLOT_FULL};
    pthread_mutex_init(&p.lock, NULL);
    pthread_cond_init(&p.changed, NULL);
    /* helpers, the caller being one of the threads; fewer when they cannot be started */
    pthread_t helpers[64];
    int started = 0, wanted = threads < count ? threads : count;
    wanted = wanted > 64 ? 63 : wanted - 1;
    while (started < wanted && pthread_create(&helpers[started], NULL, helper_main, &p) == 0)
        started++;
    await_slot(&p, s);
    for (int i = 0; i < started; i++) pthread_join(helpers[i], NULL);
    pthread_mutex_destroy(&p.lock);
    pthread_cond_destroy(&p.changed);
    return forward_slot(model, s, outputs, err);
}
