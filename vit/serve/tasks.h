#ifndef VIT_SERVE_TASKS_H
#define VIT_SERVE_TASKS_H

/* The batcher's model for `vit serve`: a loaded image model (classify, embed), or an image-to-text
 * model (generate; its encoder embeds), and/or a text model, behind serve_model. Each job's data
 * is an encoded image (PNG or JPEG, any format vit_preprocess_memory reads) or a UTF-8 text, and
 * its out gets serve_task_outputs floats; the exceptions, whose results are typed, are a class
 * set's job (SERVE_CLASSES), whose data is a serve_class_request, generation's (SERVE_GENERATE),
 * a serve_gen_request, an explanation's (SERVE_EXPLAIN_*), a serve_explain_request, and a text's
 * embedding (SERVE_EMBED_TEXT), a serve_text_request. */

#include <stddef.h>
#include <stdint.h>

#include "vit/serve/batcher.h"
#include "vit/serve/class_sets.h"
#include "vit/vit.h"

typedef enum {
    SERVE_CLASSIFY,    /* image -> logits [num_labels] */
    SERVE_EMBED_CLS,   /* image -> the CLS feature [hidden] (vit_embed, VIT_POOL_CLS) */
    SERVE_EMBED_MEAN,  /* image -> the mean patch feature [hidden] (VIT_POOL_MEAN) */
    SERVE_TEXT,        /* text -> logits [the text model's num_labels] */
    SERVE_EMBED_JOINT, /* image -> its joint embedding [joint dim] (VIT_POOL_JOINT), normalised */
    /* image -> its embedding with the model's own pooling (vit_default_pool, what `vit embed`
     * gives by default) [vit_embed_size] */
    SERVE_EMBED_OWN,
    /* text -> its embedding with the model's own pooling (vit_text_default_pool, as `vit embed`
     * does: a joint model's text tower the joint embedding, a BERT the final hidden state at
     * [CLS]) [vit_text_embed_size]; data is a serve_text_request (its token count filled in) */
    SERVE_EMBED_TEXT,
    SERVE_GENERATE, /* image -> text: data is a serve_gen_request, out unused (no floats) */
    SERVE_CLASSES,  /* a class set: data is a serve_class_request, out unused (no floats) */
    /* image -> where the model looked (vit_explain: attention rollout, or gradient-weighted
     * rollout for the most probable class): the map, one float per patch, grid_h x grid_w
     * (vit_patch_grid); data is a serve_explain_request (the rest filled in) */
    SERVE_EXPLAIN_ROLLOUT,
    SERVE_EXPLAIN_GRAD,
    /* (query, document) -> a cross-encoder's logit and score (vit_text_pair_activate) [2]; data
     * is a serve_pair_request (its token count filled in) */
    SERVE_RERANK,
    /* text -> a token classifier's logits of every token [max_tokens, labels] (vit_text_token_
     * logits' rows); data is a serve_tag_request (its ids filled in) */
    SERVE_TAG,
    SERVE_TASKS
} serve_task;

/* An image to explain. The submitter owns it; a job done with SERVE_OK has the rest filled in
 * (its map is in the job's out). */
typedef struct {
    const void *image; /* encoded, as the other image tasks' data */
    size_t size;
    int label;         /* the class explained; -1 for a model without classes */
    float prob;        /* its probability */
    int width, height; /* the image as decoded, upright */
    float region[4];   /* the part of it the input is: x, y, width, height (in its pixels) */
} serve_explain_request;

/* A text to embed (SERVE_EMBED_TEXT). The submitter owns it; a job done with SERVE_OK has its
 * token count filled in (the start and end tokens included). */
typedef struct {
    const char *text; /* UTF-8 */
    size_t size;
    int tokens;
    int no_truncate; /* longer than vit_text_max_tokens: SERVE_TOO_LONG, not cut (TEI's
                      * "truncate": false) */
} serve_text_request;

/* A (query, document) pair to score (SERVE_RERANK). The submitter owns it; a job done with
 * SERVE_OK has the pair's token count filled in. */
typedef struct {
    const char *query, *text; /* UTF-8 */
    size_t query_size, size;
    int tokens;
    int no_truncate; /* as serve_text_request's */
} serve_pair_request;

/* A text to tag (SERVE_TAG). The submitter owns it and its ids, starts and ends (room for
 * vit_text_max_tokens each); a job done with SERVE_OK has the text's ids and their count filled
 * in, and their byte offsets with offsets 1 where the tokenizer gives them
 * (vit_text_token_offsets). */
typedef struct {
    const char *text; /* UTF-8 */
    size_t size;
    int32_t *ids, *starts, *ends;
    int tokens, offsets;
    char no_offsets[sizeof(((vit_error *)0)->msg)]; /* why there are none, when offsets is 0 */
} serve_tag_request;

/* An image's text asked of a forward thread. The submitter owns it; jobs whose options are equal
 * share a forward pass (one vit_generate over their images), and a job done with SERVE_OK has its
 * result filled in (taken: the submitter frees it with vit_generation_free). */
typedef struct {
    const void *image; /* encoded, as the other image tasks' data */
    size_t size;
    vit_gen_options options;
    vit_generation result;
} serve_gen_request;

/* A zero-shot class set asked of a forward thread: found in the cache or embedded there with that
 * worker's text context. The submitter owns it; the forward pass fills in set (taken: the
 * submitter releases it) or, when embedding failed, err. */
typedef struct {
    serve_class_cache *cache;
    serve_class_query query;
    serve_class_set *set;
    vit_error err;
} serve_class_request;

/* The task's name, for metrics: "classify", "embed", "text", "embed_text", "generate",
 * "classes", "explain", "rerank" or "tag". */
const char *serve_task_name(serve_task task);

typedef struct serve_tasks serve_tasks;

/* Either model may be NULL (not both); both were loaded with max_batch >= max_batch. The models
 * stay the caller's and compute for worker 0 only; each further worker (up to workers) computes
 * with a vit_share (vit_text_share) of them: one copy of the weights, a state per worker. The
 * batcher must have as many workers. */
serve_tasks *serve_tasks_create(vit_context *image, vit_text_context *text, int max_batch,
                                int workers, vit_error *err);
/* The same for an image-to-text model (loaded with max_batch >= max_batch), whose encoder
 * (vit_gen_image_context) is the image model: each further worker generates and embeds with a
 * vit_gen_share of it. */
serve_tasks *serve_tasks_create_gen(vit_gen_context *gen, vit_text_context *text, int max_batch,
                                    int workers, vit_error *err);
void serve_tasks_free(serve_tasks *t);

/* The texts' tokens run so far (tokens), the places they took in their padded forward passes
 * (padded), and what one pass per batch, padded to its longest, would have taken (one_pass): a
 * text batch runs as passes of texts of near lengths (serve_tasks' forward), and padded - tokens
 * is the padding that cost. */
void serve_tasks_padding(const serve_tasks *t, long long *tokens, long long *padded,
                         long long *one_pass);

serve_model serve_tasks_model(serve_tasks *t);
/* Floats one job of the task writes to its out; 0 when its model is not loaded (or the image
 * model is not a joint one, for SERVE_EMBED_JOINT; an image-to-text model's encoder, for the
 * explanations), and for SERVE_CLASSES and SERVE_GENERATE. */
size_t serve_task_outputs(const serve_tasks *t, serve_task task);

#endif
