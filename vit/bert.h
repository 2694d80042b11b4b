#ifndef VIT_BERT_H
#define VIT_BERT_H

/* BERT sentence classification on the shared encoder (post-LN): token + position + segment
 * embeddings, LayerNorm, encoder with a key-padding mask, tanh pooler on [CLS], classifier. */

#include <stdint.h>

#include "vit/error.h"
#include "vit/model.h"

typedef struct bert_runner bert_runner;

/* Buffers for batches of up to max_batch sequences of up to max_tokens tokens. m is not owned. */
bert_runner *bert_runner_create(const model *m, int max_batch, int max_tokens, vit_error *err);
void bert_runner_free(bert_runner *r);

/* ids [B, T] (padded with any id where mask is 0), mask [B, T] (1 = real token) -> logits [B, labels].
 * Token type 0 throughout (single-sentence classification). */
int bert_forward(bert_runner *r, const int32_t *ids, const uint8_t *mask, int B, int T, float *logits,
                 vit_error *err);

#endif
