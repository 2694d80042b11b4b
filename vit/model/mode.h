#ifndef VIT_MODEL_MODE_H
#define VIT_MODEL_MODE_H

/* How a model's forward pass runs. NULL (or all zero) is inference: no dropout, nothing kept.
 * Training (llm.c's gpt2_forward with targets) keeps every activation for the backward pass and
 * draws dropout masks, as HF's models in train(). */

#include <stdint.h>

typedef struct {
    int train;          /* keep activations for *_backward; dropout as below */
    int freeze_encoder; /* linear probe: the encoder (and BERT's embeddings) run as in eval mode
                         * and keep nothing; the backward stops below the head */
    float dropout;      /* hidden_dropout_prob: embeddings, attention output, MLP output */
    float attention_dropout;  /* attention_probs_dropout_prob: on the attention weights */
    float classifier_dropout; /* BERT's dropout before the classifier; < 0: `dropout` */
    uint64_t *rng;            /* splitmix64 state the masks are drawn from (advanced) */
} forward_mode;

#endif
