#ifndef VIT_MODEL_MODE_H
#define VIT_MODEL_MODE_H

/* How a model's forward pass runs. NULL (or all zero) is inference: no dropout, nothing kept.
 * Training (llm.c's gpt2_forward with targets) keeps every activation for the backward pass and
 * draws dropout masks, as HF's models in train(). */

#include <stddef.h>
#include <stdint.h>

#include "vit/base/error.h"

typedef struct {
    int train;          /* keep activations for *_backward; dropout as below */
    int freeze_encoder; /* linear probe: the encoder (and BERT's embeddings) run as in eval mode
                         * and keep nothing; the backward stops below the head */
    float dropout;      /* hidden_dropout_prob: embeddings, attention output, MLP output */
    float attention_dropout;  /* attention_probs_dropout_prob: on the attention weights */
    float classifier_dropout; /* BERT's dropout before the classifier; < 0: `dropout` */
    uint64_t *rng;            /* splitmix64 state the masks are drawn from (advanced) */
    /* the batch is examples batch_first.. of a batch of batch_total split among processes (0,
     * 0: the whole batch): its dropout masks are that part of the whole batch's */
    int batch_first, batch_total;
} forward_mode;

/* mode, or the all-zero inference mode when mode is NULL. */
const forward_mode *forward_mode_or_inference(const forward_mode *mode);
/* The dropout before the classifier in effect (0 outside training). */
float forward_mode_classifier_dropout(const forward_mode *mode);
/* Probabilities in [0, 1), an rng wherever a mask is drawn, training buffers for training. */
int forward_mode_check(const forward_mode *mode, int training_buffers, vit_error *err);
/* An inference forward's last step: logits [n] all finite, else an error (NaN or Inf weights,
 * or a matrix product that could not run), never probabilities computed from them. Training
 * checks its loss instead. */
int forward_logits_check(const forward_mode *mode, const float *logits, size_t n, vit_error *err);

#endif
