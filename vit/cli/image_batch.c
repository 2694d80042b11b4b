/* Image files through vit_embed in batches, for vit embed and vit search: the batch itself is
 * vit/data/pipeline.c's (pipeline_run_batch); here are the queue and the reporting. */
#include "vit/cli/image_batch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vit/base/threads.h"
#include "vit/data/pipeline.h"

struct image_batch {
    vit_context *ctx;
    const char *command;
    vit_pool pool;
    int batch, threads, failed, pending;
    pipeline_model model;     /* the context's preprocessing, and vit_embed with pool */
    float *pixels, *features; /* [batch, C·H·W], [batch, dim] */
    pipeline_item *items;     /* [batch] the files waiting for the next forward pass */
    size_t *tags;             /* [batch] */
    image_row_fn on_row;
    void *user;
};

static int preprocess(void *self, const char *path, float *pixels, vit_error *err) {
    return vit_preprocess_file(((const image_batch *)self)->ctx, path, pixels, err);
}

static int embed(void *self, const float *pixels, int n, float *features, vit_error *err) {
    const image_batch *b = self;
    return vit_embed(b->ctx, pixels, n, b->pool, features, err);
}

image_batch *image_batch_create(vit_context *ctx, const char *command, int batch, vit_pool pool,
                                int dim, image_row_fn on_row, void *user) {
    image_batch *b = calloc(1, sizeof *b);
    if (!b) return NULL;
    *b = (image_batch){.ctx = ctx,
                       .command = command,
                       .pool = pool,
                       .batch = batch,
                       .threads = threads_resolve(0), /* as many as an OpenMP region would have */
                       .on_row = on_row,
                       .user = user};
    b->model = (pipeline_model){.self = b,
                                .input_floats = vit_input_floats(ctx),
                                .outputs = dim,
                                .preprocess = preprocess,
                                .forward = embed};
    b->pixels = malloc(sizeof(float) * vit_input_floats(ctx) * batch);
    b->features = malloc(sizeof(float) * dim * batch);
    b->items = calloc((size_t)batch, sizeof *b->items);
    b->tags = calloc((size_t)batch, sizeof *b->tags);
    if (!b->pixels || !b->features || !b->items || !b->tags) {
        image_batch_free(b);
        return NULL;
    }
    return b;
}

int image_batch_flush(image_batch *b) {
    vit_error err = {0};
    int rc = pipeline_run_batch(&b->model, b->threads, b->items, b->pending, b->pixels, b->features,
                                &err);
    for (int i = 0; i < b->pending; i++)
        if (!b->items[i].ok) {
            fprintf(stderr, "vit %s: %s\n", b->command, b->items[i].err.msg);
            b->failed++;
        }
    if (rc != 0) fprintf(stderr, "vit %s: %s\n", b->command, err.msg);
    for (int i = 0; rc == 0 && i < b->pending; i++)
        if (b->items[i].ok &&
            b->on_row(b->user, b->items[i].path, b->tags[i], b->items[i].logits) != 0)
            rc = -1;
    for (int i = 0; i < b->pending; i++) free(b->items[i].path);
    b->pending = 0;
    return rc;
}

int image_batch_add(image_batch *b, const char *path, size_t tag) {
    pipeline_item *it = &b->items[b->pending];
    *it = (pipeline_item){.path = strdup(path)};
    if (!it->path) {
        fprintf(stderr, "vit %s: out of memory\n", b->command);
        return -1;
    }
    b->tags[b->pending++] = tag;
    return b->pending == b->batch ? image_batch_flush(b) : 0;
}

int image_batch_failed(const image_batch *b) {
    return b->failed;
}

void image_batch_free(image_batch *b) {
    if (!b) return;
    for (int i = 0; b->items && i < b->pending; i++) free(b->items[i].path);
    free(b->pixels);
    free(b->features);
    free(b->items);
    free(b->tags);
    free(b);
}
