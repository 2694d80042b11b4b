#ifndef VIT_TRAIN_H
#define VIT_TRAIN_H

/* Training maths for a ViT classifier: forward with the activations kept, softmax cross-entropy
 * with label smoothing, and the backward pass into one gradient block laid out like the model's
 * parameters (grads[e.offset .. e.offset + e.numel) belongs to parameter entry e).
 *
 *   vit_trainer *t = vit_trainer_create(&m, 128, &err);
 *   vit_trainer_zero_grads(t);
 *   vit_train_step(t, pixels, labels, B, 0.1f, 0.0f, &rng, &loss, &correct, &err);
 *   ... optimizer reads vit_trainer_grads(t), updates m.params ...
 *
 * Threads: like inference, OpenMP owns the cores and OpenBLAS runs single-threaded inside
 * (vit_trainer_create calls vit_threads_init(0); call vit_threads_init(n) to pick n). */

#include <stdint.h>

#include "vit/base/error.h"
#include "vit/model/model.h"

typedef struct vit_trainer vit_trainer; /* opaque */

/* Training state for the ViT m (not owned; must outlive the trainer): the gradient block
 * (m->num_params floats, zeroed), per-layer activations, dropout masks and scratch for batches of
 * up to max_batch images at m->cfg.image_size. Everything is allocated here, once. */
vit_trainer *vit_trainer_create(model *m, int max_batch, vit_error *err);
void vit_trainer_free(vit_trainer *t);

/* m->num_params floats at the same offsets as m->params. */
float *vit_trainer_grads(vit_trainer *t);
/* The gradients as a model view (same tensor pointers, rebased onto the grads block). */
const model *vit_trainer_grad_model(const vit_trainer *t);
void vit_trainer_zero_grads(vit_trainer *t);

/* One forward + backward over pixels [B, C, H, W] (H = W = m->cfg.image_size) with labels [B] in
 * 0..num_labels-1. Loss: PyTorch CrossEntropyLoss(label_smoothing=label_smoothing), mean over the
 * batch. p_drop in [0, 1): HF ViT's training-mode dropout (hidden_dropout_prob) after the
 * embeddings, on the attention output projection and on the MLP output; masks drawn from the
 * splitmix64 state *rng_state, which is advanced (same state -> same masks; NULL allowed when
 * p_drop is 0). Gradients ACCUMULATE into the grads block; absent (frozen) parameters keep zero
 * gradients. *loss: mean loss; *correct: images whose argmax logit is the label (either pointer
 * may be NULL). Returns 0, or -1 with err on bad arguments. */
int vit_train_step(vit_trainer *t, const float *pixels, const int *labels, int B,
                   float label_smoothing, float p_drop, uint64_t *rng_state, float *loss,
                   int *correct, vit_error *err);

/* Eval-mode forward (no dropout, nothing kept for a backward): logits [B, num_labels]. Same
 * arithmetic as vit_forward. */
int vit_train_logits(vit_trainer *t, const float *pixels, int B, float *logits, vit_error *err);

/* The logits [B, num_labels] of the last vit_train_step. */
const float *vit_trainer_last_logits(const vit_trainer *t);

/* Linear probe (--freeze-encoder): when set, vit_train_step runs the encoder in eval mode (no
 * dropout: it is a fixed feature extractor) without keeping activations, and the backward stops
 * after the final LayerNorm and classifier; all other gradients stay as they are (zero). */
void vit_trainer_freeze_encoder(vit_trainer *t, int freeze);

/* Dropout on the attention weights (HF attention_probs_dropout_prob) in vit_train_step, drawn
 * from the same rng_state. Default 0: p_drop is hidden_dropout_prob only, as in ViT configs. */
void vit_trainer_set_attention_dropout(vit_trainer *t, float p);

#endif
