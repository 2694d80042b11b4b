#ifndef VIT_MODEL_TEXT_MODEL_H
#define VIT_MODEL_TEXT_MODEL_H

/* The text encoders, forward and backward, one pass for inference and training: BERT, RoBERTa,
 * XLM-R, DistilBERT and MPNet (base models, sequence and token classifiers) and the text towers of
 * CLIP and SigLIP (inference only), told apart by their options (cfg.opt), not by name:
 *
 *   ids [B, T] -> word + position (RoBERTa's counted from the ids) (+ token type) embeddings ->
 *   LayerNorm (+dropout) -> encoder (post-LN, padding masked as keys, MPNet's relative position
 *   bias; CLIP pre-LN and causal) -> token 0 (+dropout before RoBERTa's and MPNet's dense) ->
 *   tanh pooler or dense (ReLU: DistilBERT) (+dropout) -> logits [B, L], or every row (+dropout)
 *   -> logits [B, T, L]; CLIP, SigLIP: the final LayerNorm at the end token (CLIP) or the last
 *   position (SigLIP), then the projection into the joint space
 *
 * Padding: a padded position is masked as an attention key in every layer, so its hidden states
 * reach [CLS] by no path and every gradient flowing back into its row is exactly zero (the
 * attention backward multiplies by its zero weights). Its embedding rows are still scattered into,
 * as autograd would, adding exact zeros; tests/test_bert_gradcheck.c checks both facts. */

#include <stdint.h>

#include "vit/base/error.h"
#include "vit/core/encoder.h"
#include "vit/model/mode.h"
#include "vit/model/params.h"

typedef struct {
    int max_batch, max_tokens, training;
    float *block;               /* one allocation for the buffers below */
    float *emb;                 /* [B, T, D] summed embeddings, the embedding LayerNorm's input */
    float *emb_mean, *emb_rstd; /* [B·T] */
    float *x;                   /* [B, T, D] the encoder's input and output */
    float *cls, *pooled, *head_in;   /* [B, D] token 0, tanh(pooler), pooled after dropout */
    float *cls_in;                   /* [B, D] token 0 after the dropout before a dense head */
    float *dx, *demb, *dhead, *dcls; /* training: gradients */
    float *tok_in;           /* training, a token classifier: [B, T, D] the rows after dropout */
    uint8_t *emb_keep;       /* training: [B, T, D] dropout mask after the embedding LayerNorm */
    uint8_t *head_keep;      /* training: [B, D] classifier dropout mask ([B, T, D] per token) */
    uint8_t *cls_keep;       /* training: [B, D] the mask before RoBERTa's and MPNet's dense */
    gemm_state *gemm;        /* running the prepared layers: the caller's state (not owned) */
    encoder_scratch scratch; /* the encoder's inference buffers */
    encoder_tape tape;       /* training: every layer's activations */
    forward_mode mode;       /* of the last forward (the backward follows it) */
    /* of the last forward (not owned: the caller keeps them until the backward; types NULL) */
    const int32_t *ids, *types;
    int last_batch, last_tokens;
    /* MPNet's relative position bias [H, T, T] for bias_tokens = T (0: not built), and the
     * model's layers pointing at it (the model is shared and read-only) */
    float *bias;
    encoder_layer *run_layers;
    int bias_tokens;
    /* training MPNet: the bias's gradient [H, T, T] and the gradient layers pointing at it */
    float *dbias;
    encoder_layer *grad_layers;
} text_acts;

/* Whether m trains: not a joint model's text tower, nor an encoder with rotary positions
 * (NomicBERT) or ALiBi (JinaBERT v2), whose steps have no backward; one line naming the class. */
int text_model_check_train(const model *m, vit_error *err);

/* Buffers for batches of up to max_batch sequences of up to max_tokens tokens (at most
 * max_position_embeddings); training: per-layer activations and gradient buffers too. */
int text_acts_alloc(text_acts *a, const model *m, int max_batch, int max_tokens, int training,
                    vit_error *err);
void text_acts_free(text_acts *a);

/* MPNet's bucket of a relative position rel (key position - query position) among `buckets`
 * (relative_position_bucket: exact below buckets / 4 each way, then logarithmic up to
 * max_distance, computed in float32 as PyTorch does). */
int text_relative_bucket(int rel, int buckets, int max_distance);

/* logits [B, num_labels] (a token classifier: [B, T, num_labels]) of ids [B, T] (every id in
 * 0..vocab_size-1, padding included) with mask [B, T] (1 = token, 0 = padding, masked as an
 * attention key as HF's attention_mask; NULL: none). Positions 0..T-1, token type 0 (single
 * sentences). mode NULL: inference; with mode->train the activations stay for text_model_backward
 * (ids must stay valid until then). */
int text_model_forward(const model *m, text_acts *a, const int32_t *ids, const uint8_t *mask, int B,
                       int T, const forward_mode *mode, float *logits, vit_error *err);
/* The same with the token type of each token: types [B, T] (BERT's segment of a pair: 0, 1), NULL
 * for all 0 (kept until the backward, as ids). */
int text_model_forward_typed(const model *m, text_acts *a, const int32_t *ids, const int32_t *types,
                             const uint8_t *mask, int B, int T, const forward_mode *mode,
                             float *logits, vit_error *err);

/* Backward of the last training forward from dlogits [B, num_labels] (a token classifier:
 * [B, T, num_labels]): parameter gradients ACCUMULATE into grads (m's layout rebased,
 * model_bind). With mode.freeze_encoder only the pooler and the classifier get gradients. */
void text_model_backward(const model *m, const model *grads, text_acts *a, const float *dlogits);
/* The same from dhidden [B, T, D], the gradient wrt the final hidden states a->x of the last
 * training forward (what a sentence-transformers pooling reads; a base model's pooler gets
 * none). A base model trains through this one only. */
void text_model_backward_hidden(const model *m, const model *grads, text_acts *a,
                                const float *dhidden);

#endif
