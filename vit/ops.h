#ifndef VIT_OPS_H
#define VIT_OPS_H

/* The transformer's building blocks, each with explicit shapes. Row-major throughout:
 * a [N, D] tensor is N rows of D floats. Matrix products go through OpenBLAS. */

#include <stddef.h>
#include <stdint.h>

#include "vit/config.h"

/* Makes OpenMP own the cores: `threads` OpenMP threads (0: one per core), OpenBLAS single-threaded
 * inside them. Call before the first forward pass. */
void vit_threads_init(int threads);

/* out[N, OUT] = inp[N, IN] · weight[OUT, IN]ᵀ + bias[OUT] (PyTorch nn.Linear; bias may be NULL). */
void linear_forward(float *out, const float *inp, const float *weight, const float *bias, int N, int IN,
                    int OUT);

/* out[N, D] = (inp - mean) * rstd * w + b per row, biased variance, eps inside the square root.
 * mean/rstd [N] are saved for the backward pass (either may be NULL). */
void layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *w,
                       const float *b, int N, int D, float eps);

/* out[n] = act(inp[n]); in place allowed. */
void activation_forward(float *out, const float *inp, size_t n, activation_kind act);

/* Stable softmax of each row of x[rows, cols], in place. */
void softmax_forward(float *x, int rows, int cols);

/* Multi-head self-attention core (no projections).
 * qkv [B, T, 3D]: per token Q, K, V, each D = H·dh with head h at columns h·dh..h·dh+dh-1.
 * probs [B, H, T, T] receives the attention weights; out [B, T, D] the heads concatenated.
 * key_mask [B, T] (NULL: none): 0 marks padding keys that no query may attend to.
 * causal: query t sees keys 0..t only. */
void attention_forward(float *out, float *probs, const float *qkv, const uint8_t *key_mask, int causal,
                       int B, int T, int D, int H);

#endif
