#ifndef VIT_VIT_INTERNAL_H
#define VIT_VIT_INTERNAL_H

/* Shared by the files of the public API (vit.c images, vit_text.c texts, vit_joint.c joint
 * image-text models, vit_explain.c explanations, vit_generate.c image to text, vit_info.c what a
 * model is). */

#include <stddef.h>

#include "image/image.h"
#include "text/text_tokenizer.h"
#include "vit/model/explain.h"
#include "vit/model/params.h"
#include "vit/vit.h"

/* What vit_explain.c needs of an image context (vit.c owns the struct). */
typedef struct {
    const model *m;
    const preprocess_config *prep;
    int size, threads; /* size: the run size when square, else 0 */
    int height, width; /* the run size */
    int64_t max_pixels;
    int decode_flags;
    const char *model_dir;
    explainer **explain; /* NULL until the first explanation */
} api_image_view;
api_image_view api_image_context(vit_context *ctx);
/* g narrowed to the part of the input the patches cover (the patch convolution drops the
 * remainder of a side that is not a multiple of the patch): what a map of the patches lies
 * over. */
void api_patched_geometry(const model *m, preprocess_geometry *g);
/* After a failed forward: when an input value (B images of n floats) is NaN or Inf, err says
 * so (image and position) in place of the forward's own message, which blames the weights, and
 * 1 is returned; else 0, err untouched. */
int api_blame_input(const float *pixels, int B, size_t n, vit_error *err);
/* The last forward's encoder output rows, [batch, tokens, hidden] (after the final LayerNorm for a
 * VisionEncoderDecoder's encoder). */
const float *api_image_hidden(const vit_context *ctx);

/* Prepares m's linear layers on the backend and precision asked for (VIT_BACKEND_DEFAULT:
 * oneDNN where the build has it, else OpenBLAS), for batches of max_batch inputs of tokens
 * tokens run with `threads` threads (oneDNN fixes a primitive's thread count when it is made),
 * and describes the result in compute ("oneDNN 2.6.3 (avx2), fp32"). release: a ViT for
 * inference alone, the weights its prepared layers copied released (model_prepare_released). */
int api_prepare(model *m, vit_backend backend, vit_precision precision, int max_batch, int tokens,
                int threads, int release, char *compute, size_t size, vit_error *err);

/* A joint model's tower: its embedding length, exp(logit_scale) and logit_bias (0 where it has
 * none), and whether scores are read through a sigmoid; -1 (with err) when m is not one. */
typedef struct {
    int dim, sigmoid;
    double scale, bias;
} api_joint;
int api_joint_of(const model *m, api_joint *out, vit_error *err);
const model *api_text_model(const vit_text_context *c);
/* vit_text_entities' working memory and results (vit_tag.c), one per text context, created at
 * its first call into *api_text_tag_state(c). */
typedef struct vit_entities api_tag_state;
void api_tag_state_free(api_tag_state *s);
api_tag_state **api_text_tag_state(vit_text_context *c);

/* The pipeline's aggregation on given tokens, what vit_text_entities runs (vit_tag.c): n tokens
 * (the start and end tokens left out) of K labels, each with its probabilities, its piece
 * (convert_ids_to_tokens), whether it is the unk token and its byte offsets into text (bs < 0:
 * none); join is convert_tokens_to_string (as text_tokenizer_tokens_to_string: a length as
 * snprintf's, or -1 with err), word_aware
 * whether the model has a continuing_subword_prefix. */
typedef struct {
    const float *probs;
    const char *piece;
    int unk, index;
    int32_t bs, be;
} api_tag_token;
/* tokens[0..n) are those of tokens first..last of the input (first <= last) */
typedef int (*api_tag_join)(void *user, const char *const *tokens, int n, int first, int last,
                            char *out, size_t size, vit_error *err);
typedef struct {
    const char *text;
    size_t len;
    const api_tag_token *tokens;
    int n, K;
    const char *const *labels;
    int word_aware, keep_all;
    vit_aggregation aggregation;
    api_tag_join join;
    void *user;
    const char *no_offsets; /* why the tokens have none (their bs < 0), for the refusal */
} api_tag_input;
/* Entities into s (api_tag_state_create), as vit_text_entities returns them. */
api_tag_state *api_tag_state_create(void);
int api_tag_aggregate(api_tag_state *s, const api_tag_input *in, const vit_entity **out,
                      vit_error *err);

/* A text context's tokenizer (read-only, shared by its copies). */
const text_tokenizer *api_text_tokenizer(const vit_text_context *c);
/* What vit_model_info says of m's configuration alone (tokens, joint_dim, capabilities and the
 * tokenizer are the context's: left 0 and NULL). */
void api_tower_info(const model *m, vit_model_info *info);
/* The preprocessing as the folder describes it (before the run size is set). */
const char *api_preprocessing(const vit_context *ctx);
/* Each of the n rows of x [n, dim] divided by its L2 norm (in double). */
void api_normalize_rows(float *x, int n, int dim);

/* The k most probable of probs[0..L) with their labels (labels[i] for class i), in vit_top_k's
 * order; -1 with err for k < 0 or out of memory. Shared by the image, text and zero-shot APIs. */
int api_top_k(char *const *labels, int L, const float *probs, int k, vit_prediction *top,
              vit_error *err);

#endif
