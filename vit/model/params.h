#ifndef VIT_MODEL_PARAMS_H
#define VIT_MODEL_PARAMS_H

/* A model's parameters: one allocation, every tensor known by its Hugging Face name (docs/SPEC.md
 * §2). */

#include <stddef.h>
#include <stdint.h>

#include "vit/model/config.h"
#include "vit/core/encoder.h"
#include "vit/base/error.h"

typedef struct {
    char name[96]; /* without the "vit."/"deit."/"bert." prefix */
    int ndim;
    int64_t shape[4];
    size_t offset, numel; /* into model.params */
    int prefixed;         /* stored as PREFIX + name in model.safetensors */
    int decay;      /* AdamW weight decay applies: matrices, and a BERT's embeddings (not a ViT's);
                     * never biases or norms */
    int absent;     /* not in the file (qkv_bias false): stays zero and frozen */
    int transposed; /* stored [shape[1], shape[0]] in the file (GPT-2's Conv1D weights) */
} param_entry;

/* Where a model's tensors still come from while it is loaded lazily (vit/io's model_load_lazy):
 * read fills params[offset, offset + count) from the file, each tensor once (a tensor already
 * read, even if released since, is not read again); close ends the reading. */
typedef struct {
    void *ctx;
    int (*read)(void *ctx, float *params, size_t offset, size_t count, vit_error *err);
    void (*close)(void *ctx);
} model_source;

typedef struct {
    model_config cfg;
    encoder_shape enc;
    float *params; /* one block for every parameter */
    size_t num_params;
    param_entry *entries;
    int num_entries;
    encoder_layer *layers;
    /* ViT and DeiT embeddings: patch projection [D, C·P·P] and [D]; the S special tokens [S, D]
     * back to back (CLS, then a DeiT's distillation token; S = config_special_tokens); position
     * embeddings [S + N, D] */
    float *patch_w, *patch_b, *cls_token, *pos_embed;
    /* DINOv2 and BEiT: register tokens [R, D] (after CLS, without positions); BEiT's relative
     * position bias tables [(2n − 1)² + 3, H] for the config's n × n window: one per layer
     * (rel_table[l], an array of num_layers pointers) and one shared by every layer. pos_embed is
     * NULL for a BEiT without absolute positions. */
    float *register_tokens, **rel_table, *shared_rel_table;
    /* BERT embeddings and pooler */
    float *word_emb, *pos_emb, *type_emb, *emb_ln_w, *emb_ln_b, *pooler_w, *pooler_b;
    /* head: ViT's final LayerNorm, classifier (a DeiT with teacher: cls_classifier, and
     * distillation_classifier as dist_head_*) */
    float *final_ln_w, *final_ln_b, *head_w, *head_b, *dist_head_w, *dist_head_b;
    /* SigLIP's attention-pooling head: the probe [D] and a layer holding in_proj (qkv), out_proj
     * (proj), its LayerNorm (ln2) and MLP; a joint model's score scale (and SigLIP's bias), [1] */
    float *probe_token, *logit_scale, *logit_bias;
    encoder_layer probe;
    /* A decoder: its token and learned position embeddings are word_emb and pos_emb (pos_table:
     * the sinusoid table instead, computed at load, [max_position_embeddings + pad + 1, D]), its
     * embedding LayerNorm emb_ln, GPT-2's last LayerNorm final_ln, the output projection head_w
     * ([vocab, D], word_emb itself when tied); enc_proj (enc_to_dec_proj) takes the encoder's
     * states to the decoder's width. */
    float *pos_table, *enc_proj_w, *enc_proj_b;
    /* Inference: the linear layers outside the encoder prepared for a backend (model_prepare;
     * the encoder's are in its layers; NULL: not prepared), and what a caller's gemm_state for
     * them needs (model_gemm_state). Prepared layers are read-only: any number of threads may
     * run forwards on one model at once, each with its own activations and gemm_state. */
    gemm_weight *patch, *pooler, *head, *dist_head, *enc_proj;
    gemm_backend backend;
    size_t gemm_workspace_bytes;
    /* model_prepare(..., release_weights): the float weights its prepared layers copied are gone
     * (their pages released): the model runs prepared inference only */
    int weights_released;
    /* a lazily loaded model's file (read NULL: every tensor is in params) */
    model_source source;
    /* which files the loader read the weights from, for people (vit info's weights: line) */
    char weights_from[160];
} model;

/* The most parameters a configuration may ask for (8 GB of float32): a config.json alone must not
 * be able to make vit allocate without bound. */
#define MODEL_MAX_PARAMS ((size_t)1 << 31)

/* Lays out zeroed parameters for cfg (takes ownership of cfg's labels); an error when cfg asks
 * for more than MODEL_MAX_PARAMS. The same in two steps: model_layout makes the table of tensors
 * (names, shapes, offsets) without the parameter block, so a checkpoint can be checked against it
 * first; model_alloc then allocates and zeroes the block (on failure, both free m). */
int model_create(model *m, model_config *cfg, vit_error *err);
int model_layout(model *m, model_config *cfg, vit_error *err);
int model_alloc(model *m, vit_error *err);
void model_free(model *m);
const char *model_prefix(const model *m);
const param_entry *model_find_param(const model *m, const char *name);
/* Absent parameters (no qkv bias in the checkpoint) stay zero and frozen: the backward passes
 * clear whatever their gradients (grads: m's layout) received. */
void model_clear_absent(const model *m, float *grads);
/* Parameters stored in the model (absent ones not counted). */
size_t model_live_params(const model *m);
/* Multiply-adds x2 of one forward pass for one input of `tokens` tokens. */
double model_flops(const model *m, int tokens);
/* Tokens of a ViT input of size x size pixels: (size/P)² patches + the special tokens; size 0:
 * the model's own image_size x image_width. */
int model_vit_tokens(const model *m, int size);

/* Prepares every linear layer for inference with backend and precision, for batches of up to
 * max_batch inputs of up to tokens tokens; model_unprepare releases them (model_free does too).
 * Training uses the parameters as they are, unprepared. */
int model_prepare(model *m, gemm_backend backend, gemm_precision precision, int max_batch,
                  int tokens, vit_error *err);
/* The same for a ViT used for inference alone: each encoder, patch and head weight matrix that its
 * prepared layer copied (oneDNN's reordered layout, bf16, int8, a folded layer scale) is released
 * as soon as the layer is ready, so the model never holds both copies (a ViT-B in fp32 on oneDNN:
 * 0.35 GB less). The model cannot then be prepared again, train, or explain (refused). */
int model_prepare_released(model *m, gemm_backend backend, gemm_precision precision, int max_batch,
                           int tokens, vit_error *err);
void model_unprepare(model *m);
/* A lazily loaded model (model_source): reads every tensor not read yet and closes the file. */
int model_read_rest(model *m, vit_error *err);
/* A state for running m's prepared layers, for one thread at a time (encoder_run.gemm). NULL
 * with err when out of memory. */
gemm_state *model_gemm_state(const model *m, vit_error *err);

/* A view of another block with layout's shapes (gradients, optimizer moments): every tensor
 * pointer of layout (its layers', the SigLIP probe's and the scores' scale and bias included)
 * rebased from layout->params onto block (layout->num_params floats). The view shares layout's
 * cfg, entries and pos_table (a sinusoid table computed at load, not a parameter) and owns only
 * its layers and rel_table arrays: release it with model_unbind, never model_free. Returns -1 when
 * out of memory. (A new tensor pointer in `model` or `encoder_layer` must be added to model_bind
 * too: test_safetensors' test_bind_covers_every_tensor finds one that is not.) */
int model_bind(model *view, const model *layout, float *block);
void model_unbind(model *view);

/* One parameter block for models trained together (a VisionEncoderDecoder's encoder and
 * decoder): joint lists the tensors of parts[0..n) under their full file names (prefix included;
 * prefixed 0), with part i's at offset[i] into joint->params, copied from parts[i]->params.
 * Optimizer, gradient clipping and checkpoints work on joint; the forwards on views of the parts,
 * model_bind(view, parts[i], joint->params + offset[i]). joint has no layers nor tensor pointers,
 * kind and family those of the last part; model_free releases it. */
int model_join(model *joint, const model *const *parts, int n, size_t *offset, vit_error *err);

#endif
