#ifndef VIT_OPTIM_H
#define VIT_OPTIM_H

/* Optimisation for the trainer: AdamW over a model's parameter block, the learning-rate schedule
 * (linear warm-up, then cosine decay) and gradient clipping by the global norm.
 *
 *   adamw opt;
 *   adamw_init(&opt, &m, &(adamw_hparams){.lr = 1e-3f, .weight_decay = 0.05f}, &err);
 *   ... per step: grads from train_step's forward and backward ...
 *   grad_clip_global_norm(&m, grads, &opt, 1.0f);
 *   adamw_step(&opt, &m, grads, lr_at(&sched, step));
 *   adamw_free(&opt);
 */

#include <stddef.h>
#include <stdint.h>

#include "vit/base/error.h"
#include "vit/model/params.h"

typedef struct {
    float lr;           /* peak learning rate (the schedule scales it) */
    float beta1, beta2; /* 0, 0: PyTorch's defaults 0.9, 0.999 */
    float eps;          /* 0: 1e-8 */
    float weight_decay; /* decoupled; applied only to entries with param_entry.decay */
} adamw_hparams;

typedef struct {
    adamw_hparams hp;
    int64_t step;      /* updates done so far (bias correction uses step + 1 for the next) */
    size_t num_params; /* the model's block size */
    float *m, *v;      /* first and second moments, laid out like the model's params */
    uint8_t *frozen;   /* [num_entries]: 1 = the entry is never updated (linear probe) */
    float *lr_scale;   /* [num_entries]: the entry's learning rate times this; NULL: 1 */
    int num_entries;
} adamw;

/* Zeroed moments for model m (its layout; m is not kept). Absent entries are frozen. */
int adamw_init(adamw *opt, const model *m, const adamw_hparams *hp, vit_error *err);
void adamw_free(adamw *opt);
/* Freezes (1) or unfreezes (0) every entry whose name does not start with one of the prefixes
 * "layernorm.", "pooler." or "classifier." (the linear probe's trainable head). */
void adamw_freeze_encoder(adamw *opt, const model *m, int freeze);
/* Freezes (1) or unfreezes (0) every entry whose name starts with prefix (an image-to-text
 * model's encoder: "encoder."); absent entries stay frozen. */
void adamw_freeze_prefix(adamw *opt, const model *m, const char *prefix, int freeze);

/* Layer-wise learning-rate decay (BEiT's fine-tuning): an entry at depth d from the top learns at
 * lr·decay^d, weight decay included (as a PyTorch parameter group's lr). Depth counts layers:
 * "encoder.layer.N." entries are at depth L - N (L layers), the embeddings' ("embeddings." in the
 * name) at L + 1, everything else (final norm, pooler, classifier) at 0. */
int adamw_layer_decay(adamw *opt, const model *m, float decay, vit_error *err);
/* The depth adamw_layer_decay gives an entry of a model with num_layers layers. */
int layer_depth(const char *name, int num_layers);

/* One AdamW update with learning rate lr, as PyTorch's torch.optim.AdamW (non-amsgrad,
 * single-tensor path): for each trainable element
 *   p -= lr·wd·p                     (decoupled decay, entries with decay only)
 *   m = β1·m + (1-β1)·g;  v = β2·v + (1-β2)·g²
 *   p -= lr/(1-β1^t) · m / (√v/√(1-β2^t) + eps)      with t = step after the increment. */
void adamw_step(adamw *opt, const model *m, const float *grads, float lr);

/* Global L2 norm of the gradients of the entries not frozen in opt (all entries when opt is NULL),
 * accumulated in double. */
double grad_global_norm(const model *m, const float *grads, const adamw *opt);
/* PyTorch clip_grad_norm_: when the global norm exceeds max_norm > 0, scales every gradient by
 * max_norm / (norm + 1e-6). Returns the norm before clipping. */
double grad_clip_global_norm(const model *m, float *grads, const adamw *opt, float max_norm);

/* Learning rate at step (0-based): linear warm-up lr·(step+1)/warmup over steps 0..warmup-1, then
 * min_lr + (lr - min_lr)·(1 + cos(π·(step - warmup)/(total - warmup)))/2: lr at step warmup,
 * min_lr at step total (past it, min_lr). */
typedef struct {
    float lr, min_lr;
    int64_t warmup, total;
} lr_schedule;

float lr_at(const lr_schedule *s, int64_t step);

#endif
