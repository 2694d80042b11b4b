/* Image files through vit_embed in batches, for vit embed and vit search. */
#include "vit/cli/image_batch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct image_batch {
    vit_context *ctx;
    const char *command;
    vit_pool pool;
    int batch, dim, failed, pending;
    float *pixels, *features; /* [batch, C·H·W], [batch, dim] */
    char **paths;             /* [batch] the files waiting for the next forward pass */
    size_t *tags;             /* [batch] */
    int *ok;                  /* [batch] preprocessed */
    vit_error *errs;          /* [batch] */
    image_row_fn on_row;
    void *user;
};

image_batch *image_batch_create(vit_context *ctx, const char *command, int batch, vit_pool pool,
                                int dim, image_row_fn on_row, void *user) {
    image_batch *b = calloc(1, sizeof *b);
    if (!b) return NULL;
    *b = (image_batch){.ctx = ctx,
                       .command = command,
                       .pool = pool,
                       .batch = batch,
                       .dim = dim,
                       .on_row = on_row,
                       .user = user};
    b->pixels = malloc(sizeof(float) * vit_input_floats(ctx) * batch);
    b->features = malloc(sizeof(float) * dim * batch);
    b->paths = calloc((size_t)batch, sizeof *b->paths);
    b->tags = calloc((size_t)batch, sizeof *b->tags);
    b->ok = calloc((size_t)batch, sizeof *b->ok);
    b->errs = calloc((size_t)batch, sizeof *b->errs);
    if (!b->pixels || !b->features || !b->paths || !b->tags || !b->ok || !b->errs) {
        image_batch_free(b);
        return NULL;
    }
    return b;
}

int image_batch_flush(image_batch *b) {
    const size_t floats = vit_input_floats(b->ctx);
#pragma omp parallel for schedule(dynamic)
    for (int i = 0; i < b->pending; i++)
        b->ok[i] =
            vit_preprocess_file(b->ctx, b->paths[i], b->pixels + i * floats, &b->errs[i]) == 0;
    /* the forward pass on the readable ones, packed to the front */
    int n = 0;
    for (int i = 0; i < b->pending; i++) {
        if (!b->ok[i]) {
            fprintf(stderr, "vit %s: %s\n", b->command, b->errs[i].msg);
            b->failed++;
            continue;
        }
        if (n != i) memcpy(b->pixels + n * floats, b->pixels + i * floats, sizeof(float) * floats);
        n++;
    }
    vit_error err = {0};
    int rc = n > 0 ? vit_embed(b->ctx, b->pixels, n, b->pool, b->features, &err) : 0;
    if (rc != 0) fprintf(stderr, "vit %s: %s\n", b->command, err.msg);
    for (int i = 0, row = 0; rc == 0 && i < b->pending; i++)
        if (b->ok[i] &&
            b->on_row(b->user, b->paths[i], b->tags[i], b->features + (size_t)row++ * b->dim) != 0)
            rc = -1;
    for (int i = 0; i < b->pending; i++) free(b->paths[i]);
    b->pending = 0;
    return rc;
}

int image_batch_add(image_batch *b, const char *path, size_t tag) {
    if (!(b->paths[b->pending] = strdup(path))) {
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
    for (int i = 0; i < b->pending; i++) free(b->paths[i]);
    free(b->pixels);
    free(b->features);
    free(b->paths);
    free(b->tags);
    free(b->ok);
    free(b->errs);
    free(b);
}
