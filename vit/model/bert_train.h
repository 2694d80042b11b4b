#ifndef VIT_BERT_TRAIN_H
#define VIT_BERT_TRAIN_H

/* Training maths for a BERT sentence classifier (HF BertForSequenceClassification): forward with
 * the activations kept, softmax cross-entropy with label smoothing, and the backward pass into one
 * gradient block laid out like the model's parameters (grads[e.offset .. e.offset + e.numel)
 * belongs to parameter entry e). The BERT analogue of vit_train.h:
 *
 *   bert_trainer *t = bert_trainer_create(&m, 32, 128, &err);
 *   bert_trainer_zero_grads(t);
 *   bert_train_step(t, ids, mask, labels, B, T, 0.0f, 0.1f, &rng, &loss, &correct, &err);
 *   ... optimizer reads bert_trainer_grads(t), updates m.params ...
 *
 * Threads: like inference, OpenMP owns the cores and OpenBLAS runs single-threaded inside
 * (bert_trainer_create calls vit_threads_init(0); call vit_threads_init(n) to pick n). */

#include <stdint.h>

#include "vit/base/error.h"
#include "vit/model/model.h"

typedef struct bert_trainer bert_trainer; /* opaque */

/* Training state for the BERT m (not owned; must outlive the trainer): the gradient block
 * (m->num_params floats, zeroed), per-layer activations, dropout masks and scratch for batches of
 * up to max_batch sequences of up to max_tokens tokens (at most max_position_embeddings).
 * Everything is allocated here, once. */
bert_trainer *bert_trainer_create(model *m, int max_batch, int max_tokens, vit_error *err);
void bert_trainer_free(bert_trainer *t);

/* m->num_params floats at the same offsets as m->params. */
float *bert_trainer_grads(bert_trainer *t);
/* The gradients as a model view (same tensor pointers, rebased onto the grads block). */
const model *bert_trainer_grad_model(const bert_trainer *t);
void bert_trainer_zero_grads(bert_trainer *t);

/* One forward + backward over ids [B, T] (every id in 0..vocab_size-1, padding included) with
 * mask [B, T] (1 = real token, 0 = padding: masked as an attention key, as HF's attention_mask)
 * and labels [B] in 0..num_labels-1. Positions 0..T-1, token type 0 (single sentences).
 * Loss: PyTorch CrossEntropyLoss(label_smoothing=label_smoothing), mean over the batch.
 * p_drop in [0, 1): HF BERT's hidden_dropout_prob in training mode, after the embeddings'
 * LayerNorm, on the attention output projection and on the MLP output; the pooled output gets
 * the classifier dropout (p_drop unless bert_trainer_set_classifier_dropout says otherwise) and
 * the attention weights bert_trainer_set_attention_dropout's. Masks are drawn from the splitmix64
 * state *rng_state, which is advanced (same state -> same masks; NULL allowed when no dropout
 * applies). Gradients ACCUMULATE into the grads block. *loss: mean loss; *correct: sequences whose
 * argmax logit is the label (either pointer may be NULL). Returns 0, or -1 with err on bad
 * arguments. */
int bert_train_step(bert_trainer *t, const int32_t *ids, const uint8_t *mask, const int *labels,
                    int B, int T, float label_smoothing, float p_drop, uint64_t *rng_state,
                    float *loss, int *correct, vit_error *err);

/* Eval-mode forward (no dropout, nothing kept for a backward): logits [B, num_labels]. Same
 * arithmetic as bert_forward, so the same logits bit for bit. */
int bert_train_logits(bert_trainer *t, const int32_t *ids, const uint8_t *mask, int B, int T,
                      float *logits, vit_error *err);

/* The logits [B, num_labels] of the last bert_train_step. */
const float *bert_trainer_last_logits(const bert_trainer *t);

/* Dropout on the attention weights (HF attention_probs_dropout_prob) in bert_train_step, drawn
 * from the same rng_state. Default 0, as vit_trainer; BERT configs usually say 0.1. */
void bert_trainer_set_attention_dropout(bert_trainer *t, float p);

/* Dropout on the pooled output before the classifier (HF classifier_dropout). Negative (the
 * default) follows bert_train_step's p_drop, as HF does when classifier_dropout is null. */
void bert_trainer_set_classifier_dropout(bert_trainer *t, float p);

/* Linear probe (--freeze-encoder): when set, bert_train_step runs the embeddings and the encoder
 * in eval mode (no dropout: a fixed feature extractor) without keeping activations, and the
 * backward stops below the pooler: only pooler and classifier gradients are computed, all others
 * stay as they are (zero). Which of them an optimizer updates is its own choice. */
void bert_trainer_freeze_encoder(bert_trainer *t, int freeze);

#endif
