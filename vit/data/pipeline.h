#ifndef VIT_DATA_PIPELINE_H
#define VIT_DATA_PIPELINE_H

/* Files in, logits out, in batches: a loader thread decodes and preprocesses the next batch while
 * the forward pass runs on the current one. Memory stays bounded: two batches in flight. */

#include <stddef.h>

#include "vit/base/error.h"

/* What the pipeline runs: any model that preprocesses a file into input_floats floats (on any
 * thread, concurrently) and maps a batch of such inputs to `outputs` floats each (on the calling
 * thread). vit/eval/eval_images.h makes one of a vit_context. */
typedef struct {
    void *self;
    size_t input_floats;
    int outputs;
    int (*preprocess)(void *self, const char *path, float *input, vit_error *err);
    int (*forward)(void *self, const float *inputs, int n, float *outputs, vit_error *err);
} pipeline_model;

typedef struct {
    char *path;
    int tag;             /* the source's value for this input (e.g. its true class), or 0 */
    int ok;              /* decoded and classified */
    vit_error err;       /* why not, when !ok */
    const float *logits; /* [outputs] when ok */
} pipeline_item;

/* The input: fills item->path (malloc'ed, the pipeline frees it) and may set item->tag.
 * A source may hand over an input that already failed (e.g. a file it could not list) by setting
 * item->err.msg: it is reported as not ok without being decoded. Returns 1, 0 at the end, or -1
 * with item->err set to stop the run with that error. Called on the loader thread. */
typedef int (*pipeline_source_fn)(void *user, pipeline_item *item);
/* Called on the main thread for each batch, items in input order. */
typedef void (*pipeline_done_fn)(void *user, const pipeline_item *items, int count);

typedef struct {
    int batch;          /* inputs per forward pass (<= what the model's forward accepts) */
    int decode_threads; /* threads decoding beside the forward pass, the loader included (>= 1);
                         * the calling thread decodes too while it would otherwise wait */
} pipeline_options;

/* Runs every input of source through the model, each batch to done (user: both callbacks').
 * Returns 0, or -1 with err when the run stops (a forward pass, a source's error, memory). */
int pipeline_run_source(const pipeline_model *model, const pipeline_options *opt,
                        pipeline_source_fn source, pipeline_done_fn done, void *user,
                        vit_error *err);

/* One batch the caller gathered itself (vit embed and vit search queue files between other work):
 * items[0..count) (path set; err.msg set: failed already, not decoded) are preprocessed into
 * pixels [count, input_floats] by `threads` threads, the caller one of them, and the decoded ones
 * go through one forward pass into outputs [count, outputs]; each item's ok, err and logits are
 * set, in order. The paths stay the caller's. Returns 0, or -1 with err when the forward fails. */
int pipeline_run_batch(const pipeline_model *model, int threads, pipeline_item *items, int count,
                       float *pixels, float *outputs, vit_error *err);

#endif
