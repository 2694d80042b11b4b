#ifndef VIT_TRAIN_ST_LOSS_H
#define VIT_TRAIN_ST_LOSS_H

/* Training a sentence-transformers folder (vit/io/st_folder.h) with sentence_transformers'
 * MultipleNegativesRankingLoss: each example is an anchor, its positive and optionally a hard
 * negative; the batch's N = k·n texts (k columns of n: anchors, positives, negatives) run in one
 * forward, each through the folder's pooling and its Dense and Normalize modules to its
 * embedding; scores = scale · cos(anchor i, every positive and negative j), cross-entropy with
 * positive i as the target, the mean over the anchors. The backward runs through the same
 * pipeline into the Transformer's gradients and the Dense modules' (sentence-transformers trains
 * both). */

#include <stdint.h>

#include "vit/io/st_folder.h"
#include "vit/model/text_model.h"

typedef struct {
    text_acts acts;
    int max_texts, max_tokens, widest;
    float *block;           /* one allocation for the buffers below */
    float *feat;            /* [N, D] the model's own output (unused) */
    float *stages;          /* [nsteps + 1, N, widest]: the pooled rows, then each step's output */
    float *norm;            /* [N, widest] embeddings normalised for the cosine */
    float *dnorm, *da, *db; /* [N, widest] gradients */
    float *scores;          /* [n, N - n] */
    float *dhidden;         /* [N, T, D] */
} st_train;

/* Buffers for batches of up to max_texts texts of max_tokens tokens over model m (the folder's
 * Transformer, a base model) and pipeline p. */
int st_train_alloc(st_train *s, const model *m, const st_pipeline *p, int max_texts, int max_tokens,
                   vit_error *err);
void st_train_free(st_train *s);

/* ids, mask [k·n, T]: k columns of n texts. The loss (mean over the n anchors) into *loss and the
 * anchors whose own positive scores highest into *hits; with mode->train the gradients
 * ACCUMULATE into grads (m's layout) and into dense_grads (may be NULL: not kept), p->ndense
 * entries whose w and b are the gradients of p->dense's. mode NULL: evaluation. */
int st_train_pass(st_train *s, const model *m, const model *grads, const st_pipeline *p,
                  const st_dense *dense_grads, const int32_t *ids, const uint8_t *mask, int k,
                  int n, int T, const forward_mode *mode, float scale, double *loss, int *hits,
                  vit_error *err);

#endif
