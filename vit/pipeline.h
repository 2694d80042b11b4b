#ifndef VIT_PIPELINE_H
#define VIT_PIPELINE_H

/* Files in, logits out, in batches: a loader thread decodes and preprocesses the next batch while
 * the forward pass runs on the current one. Memory stays bounded: two batches in flight. */

#include "vit/error.h"
#include "vit/vit.h"

typedef struct {
    char *path;
    int ok;           /* decoded and classified */
    vit_error err;    /* why not, when !ok */
    const float *logits; /* [labels] when ok */
} pipeline_item;

/* Returns 1 and a malloc'ed path (the pipeline frees it), or 0 at the end of the input. */
typedef int (*pipeline_next_fn)(void *user, char **path);
/* Called on the main thread for each batch, items in input order. */
typedef void (*pipeline_done_fn)(void *user, const pipeline_item *items, int count);

typedef struct {
    int batch;          /* images per forward pass (<= the context's max_batch) */
    int decode_threads; /* threads preprocessing a batch in the loader (>= 1) */
} pipeline_options;

int pipeline_run(vit_context *ctx, const pipeline_options *opt, pipeline_next_fn next,
                 pipeline_done_fn done, void *user, vit_error *err);

#endif
