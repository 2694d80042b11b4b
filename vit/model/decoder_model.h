#ifndef VIT_MODEL_DECODER_MODEL_H
#define VIT_MODEL_DECODER_MODEL_H

/* A VisionEncoderDecoderModel's decoder (TrOCRForCausalLM, GPT2LMHeadModel with cross-attention):
 * the shared encoder block, causal, with cross-attention over the image encoder's states and a
 * cache of its keys and values, so a generation step runs one new row per sequence:
 *
 *   ids [rows, T] -> token embeddings (x sqrt(D) for TrOCR's scale_embedding) + positions (learned,
 *   or TrOCR's sinusoids) (-> TrOCR's layernorm_embedding) -> layers (self-attention over the
 *   cached rows and these, cross-attention, MLP) (-> GPT-2's ln_f) -> output projection -> logits
 *
 *   decoder_acts a;
 *   decoder_acts_alloc(&a, &m, rows, max_len, images, S, &err);
 *   decoder_set_states(&m, &a, states, images, S, beams, &err);  // image encoder output, once
 *   decoder_forward(&m, &a, start_ids, rows, 1, 0, logits, &err); // step 0
 *   decoder_reorder(&a, parent, rows);                           // beams chose their parents
 *   decoder_forward(&m, &a, next_ids, rows, 1, 0, logits, &err); // step 1, ...
 *
 * On prepared layers (model_prepare) set a.gemm to a model_gemm_state first; m is only read,
 * so threads may share it, each with its own decoder_acts.
 *
 * Training (teacher forcing, HF's VisionEncoderDecoderModel.forward with labels): whole sequences
 * without a cache, every activation kept, one image's states per row:
 *
 *   decoder_acts_alloc_train(&a, &m, rows, max_len, S, &err);
 *   decoder_shift_right(&m.cfg, labels, rows, T, ids);                     // decoder input
 *   decoder_train_forward(&m, &a, states, S, ids, rows, T, &mode, logits, &err); // [rows, T, V]
 *   ... dlogits from the loss (token_crossentropy_*) ...
 *   decoder_train_backward(&m, &grads, &a, dlogits, dstates);   // dstates: the encoder's share */

#include <stdint.h>

#include "vit/base/error.h"
#include "vit/core/encoder.h"
#include "vit/model/mode.h"
#include "vit/model/params.h"

typedef struct {
    int max_rows, max_len, max_images, cross_tokens;
    float *block;            /* one allocation for the buffers below */
    float *x;                /* [rows, T, D] the layers' input and output */
    float *states;           /* [images, S, D] the encoder's states after enc_to_dec_proj */
    float *last;             /* [rows, D] each row's last position, the output projection's input */
    gemm_state *gemm;        /* running the prepared layers: the caller's state (not owned) */
    encoder_scratch scratch; /* the layers' inference buffers */
    encoder_kv_cache cache;  /* inference: the keys and values of the positions run so far */
    encoder_tape tape;       /* training: every layer's activations */
    /* Training (decoder_acts_alloc_train), all zero otherwise: */
    int training;
    int32_t *ids;               /* [rows, T] the last forward's input (the embeddings' gradient) */
    float *emb_in;              /* [rows, T, D] layernorm_embedding's input (TrOCR) */
    float *emb_mean, *emb_rstd; /* [rows, T] */
    float *out_in;              /* [rows, T, D] GPT-2's ln_f's input */
    float *out_mean, *out_rstd; /* [rows, T] */
    float *dx, *dtmp;           /* [rows, T, D] gradients wrt the hidden rows */
    float *dstates;             /* [rows, S, D] wrt the projected states (enc_to_dec_proj) */
    uint8_t *emb_keep;          /* [rows, T, D] the embeddings' dropout mask */
    const float *enc_states;    /* the forward's states, enc_to_dec_proj's input */
    float drop;                 /* the last forward's dropout */
    int rows, T, S;             /* the last forward's shape */
} decoder_acts;

/* Buffers for up to max_rows sequences of up to max_len positions (at most the model's
 * max_position_embeddings), reading up to max_images sets of cross_tokens encoder states. */
int decoder_acts_alloc(decoder_acts *a, const model *m, int max_rows, int max_len, int max_images,
                       int cross_tokens, vit_error *err);
void decoder_acts_free(decoder_acts *a);

/* The encoder's output states [images, S, encoder_hidden] for the following forwards: row r reads
 * image r / rows_per_image. Empties the cache. */
int decoder_set_states(const model *m, decoder_acts *a, const float *states, int images, int S,
                       int rows_per_image, vit_error *err);

/* T new ids per row, ids [rows, T] (row-major), after the positions run so far. logits: [rows, V]
 * for each row's last position, or with all_positions [rows, T, V]. */
int decoder_forward(const model *m, decoder_acts *a, const int32_t *ids, int rows, int T,
                    int all_positions, float *logits, vit_error *err);

/* Row r of the next forward continues row parent[r] of the rows run so far (beam search). */
void decoder_reorder(decoder_acts *a, const int *parent, int rows);

/* Positions run so far. */
int decoder_past(const decoder_acts *a);

/* ---- training ---- */

/* Buffers for training forwards of up to max_rows sequences of up to max_len tokens, each row
 * reading one image's cross_tokens encoder states (per-layer activations, dropout masks, the
 * backward's scratch). */
int decoder_acts_alloc_train(decoder_acts *a, const model *m, int max_rows, int max_len,
                             int cross_tokens, vit_error *err);

/* HF's shift_tokens_right: ids[r, 0] = the decoder start token, ids[r, t] = labels[r, t - 1] with
 * the ignored (-100) labels replaced by pad. labels and ids [rows, T]; the start and pad ids are
 * config.json's decoder_start_token_id and pad_token_id (model_config). */
void decoder_shift_right(const model_config *c, const int *labels, int rows, int T, int32_t *ids);

/* Teacher forcing: logits [rows, T, V] of the whole sequences ids [rows, T], row r reading
 * states + r·S·encoder_hidden ([rows, S, encoder_hidden]: the encoder's output, which must stay
 * unchanged until the backward). mode NULL: eval (nothing kept); mode->train keeps every
 * activation for decoder_train_backward, with mode->dropout on the embeddings and on every
 * branch's output (HF: TrOCR's dropout, GPT-2's embd_pdrop and resid_pdrop; attention dropout is
 * refused: the cross-attention weights would go without it). mode->freeze_encoder is the image
 * encoder's business and ignored here. */
int decoder_train_forward(const model *m, decoder_acts *a, const float *states, int S,
                          const int32_t *ids, int rows, int T, const forward_mode *mode,
                          float *logits, vit_error *err);

/* Backward of the last training forward from dlogits [rows, T, V]: parameter gradients ACCUMULATE
 * into grads (m's layout rebased, model_bind; a tied output projection adds into the token
 * embeddings), and dstates [rows, S, encoder_hidden] (NULL: not wanted) is OVERWRITTEN with the
 * gradient wrt the states, through enc_to_dec_proj where the model has it. */
void decoder_train_backward(const model *m, const model *grads, decoder_acts *a,
                            const float *dlogits, float *dstates);

#endif
