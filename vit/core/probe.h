#ifndef VIT_CORE_PROBE_H
#define VIT_CORE_PROBE_H

/* Attention pooling with a learned probe (SigLIP's SiglipMultiheadAttentionPoolingHead): one query,
 * the probe, attends to every token of each input; then the output projection, and a residual MLP
 * on a LayerNorm of that:
 *
 *   a = out_proj(MultiheadAttention(probe, x, x));   y = a + fc2(act(fc1(LN(a))))
 *
 * The head's parameters sit in an encoder_layer: qkv the packed in_proj ([3D, D] and [3D], query,
 * key, value, as torch.nn.MultiheadAttention stores them), proj the out_proj, ln2 the LayerNorm,
 * fc1 and fc2 the MLP. Computed in fp32 with the plain (OpenBLAS) linear layers. */

#include <stddef.h>

#include "vit/core/encoder.h"

/* Floats of scratch probe_pool_forward needs for B inputs of T tokens. */
size_t probe_pool_scratch_floats(int B, int T, int D, int I);

/* x [B, T, D] -> out [B, D]; scratch: probe_pool_scratch_floats floats. */
void probe_pool_forward(const encoder_layer *w, const float *probe, const float *x, int B, int T,
                        int D, int heads, int I, activation_kind act, float eps, float *scratch,
                        float *out);

#endif
