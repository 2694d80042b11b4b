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
 * On prepared layers (model_prepare) set a.enc.gemm to a model_gemm_state first; m is only read,
 * so threads may share it, each with its own decoder_acts. */

#include <stdint.h>

#include "vit/base/error.h"
#include "vit/core/encoder.h"
#include "vit/model/params.h"

typedef struct {
    int max_rows, max_len, max_images, cross_tokens;
    float *block;  /* one allocation for the buffers below */
    float *x;      /* [rows, T, D] the layers' input and output */
    float *states; /* [images, S, D] the encoder's states after enc_to_dec_proj */
    float *last;   /* [rows, D] each row's last position, the output projection's input */
    encoder_acts enc;
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

#endif
