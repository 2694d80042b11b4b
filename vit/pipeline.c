#include "vit/pipeline.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    pipeline_item *items;
    float *pixels; /* [batch, C, H, W]; failed items leave their slot unused */
    int count;
    int full; /* filled by the loader, not yet consumed */
    int last; /* the input ended with this batch */
} batch_slot;

typedef struct {
    vit_context *ctx;
    pipeline_options opt;
    pipeline_next_fn next;
    void *user;
    size_t floats;
    batch_slot slots[2];
    pthread_mutex_t lock;
    pthread_cond_t changed;
    int stop;
} pipeline;

static void fill_slot(pipeline *p, batch_slot *s) {
    s->count = 0;
    char *path;
    while (s->count < p->opt.batch && p->next(p->user, &path)) {
        memset(&s->items[s->count], 0, sizeof s->items[0]);
        s->items[s->count++].path = path;
    }
    s->last = s->count < p->opt.batch;
#pragma omp parallel for num_threads(p->opt.decode_threads) schedule(dynamic)
    for (int i = 0; i < s->count; i++) {
        pipeline_item *it = &s->items[i];
        it->ok = vit_preprocess_file(p->ctx, it->path, s->pixels + (size_t)i * p->floats, &it->err) == 0;
    }
}

static void *loader_main(void *arg) {
    pipeline *p = arg;
    for (int k = 0;; k ^= 1) {
        batch_slot *s = &p->slots[k];
        pthread_mutex_lock(&p->lock);
        while (s->full && !p->stop) pthread_cond_wait(&p->changed, &p->lock);
        int stop = p->stop;
        pthread_mutex_unlock(&p->lock);
        if (stop) break;
        fill_slot(p, s);
        pthread_mutex_lock(&p->lock);
        s->full = 1;
        pthread_cond_broadcast(&p->changed);
        pthread_mutex_unlock(&p->lock);
        if (s->last) break;
    }
    return NULL;
}

/* Moves the decoded images to the front so one forward pass covers exactly them. */
static int pack_ok(batch_slot *s, size_t floats) {
    int n = 0;
    for (int i = 0; i < s->count; i++)
        if (s->items[i].ok) {
            if (n != i) memmove(s->pixels + (size_t)n * floats, s->pixels + (size_t)i * floats, floats * sizeof(float));
            n++;
        }
    return n;
}

static int consume_slot(pipeline *p, batch_slot *s, float *logits, pipeline_done_fn done, vit_error *err) {
    int n = pack_ok(s, p->floats), L = vit_num_labels(p->ctx), rc = 0;
    if (n > 0) rc = vit_forward(p->ctx, s->pixels, n, logits, err);
    for (int i = 0, j = 0; i < s->count; i++)
        if (s->items[i].ok) s->items[i].logits = logits + (size_t)L * j++;
    if (rc == 0) done(p->user, s->items, s->count);
    for (int i = 0; i < s->count; i++) free(s->items[i].path);
    return rc;
}

int pipeline_run(vit_context *ctx, const pipeline_options *opt, pipeline_next_fn next,
                 pipeline_done_fn done, void *user, vit_error *err) {
    pipeline p = {.ctx = ctx, .opt = *opt, .next = next, .user = user, .floats = vit_input_floats(ctx)};
    if (p.opt.batch < 1) p.opt.batch = 1;
    if (p.opt.decode_threads < 1) p.opt.decode_threads = 1;
    float *logits = malloc(sizeof(float) * (size_t)p.opt.batch * vit_num_labels(ctx));
    int rc = logits ? 0 : vit_fail(err, "out of memory");
    for (int k = 0; k < 2 && rc == 0; k++) {
        p.slots[k].items = calloc((size_t)p.opt.batch, sizeof(pipeline_item));
        p.slots[k].pixels = malloc(sizeof(float) * p.floats * (size_t)p.opt.batch);
        if (!p.slots[k].items || !p.slots[k].pixels) rc = vit_fail(err, "out of memory for batch %d", p.opt.batch);
    }
    pthread_mutex_init(&p.lock, NULL);
    pthread_cond_init(&p.changed, NULL);
    pthread_t loader;
    if (rc == 0 && pthread_create(&loader, NULL, loader_main, &p) != 0) rc = vit_fail(err, "cannot start the loader thread");
    if (rc == 0) {
        for (int k = 0, last = 0; !last; k ^= 1) {
            batch_slot *s = &p.slots[k];
            pthread_mutex_lock(&p.lock);
            while (!s->full) pthread_cond_wait(&p.changed, &p.lock);
            pthread_mutex_unlock(&p.lock);
            last = s->last;
            if (rc == 0) rc = consume_slot(&p, s, logits, done, err);
            pthread_mutex_lock(&p.lock);
            s->full = 0;
            if (rc != 0) p.stop = 1;
            pthread_cond_broadcast(&p.changed);
            pthread_mutex_unlock(&p.lock);
            if (rc != 0) break;
        }
        pthread_join(loader, NULL);
    }
    for (int k = 0; k < 2; k++) /* batches decoded but never consumed after an error */
        if (p.slots[k].full && p.slots[k].items)
            for (int i = 0; i < p.slots[k].count; i++) free(p.slots[k].items[i].path);
    pthread_mutex_destroy(&p.lock);
    pthread_cond_destroy(&p.changed);
    for (int k = 0; k < 2; k++) {
        free(p.slots[k].items);
        free(p.slots[k].pixels);
    }
    free(logits);
    return rc;
}
