#include "vit/core/probe.h"

#include <math.h>
#include <string.h>

#include "vit/core/ops.h"

size_t probe_pool_scratch_floats(int B, int T, int D, int I) {
    const size_t b = (size_t)B;
    return (size_t)D               /* the probe's query */
           + b * (size_t)T * 2 * D /* keys and values */
           + (size_t)T             /* one head's weights */
           + 3 * b * (size_t)D     /* heads' outputs, a, LN(a) */
           + b * (size_t)I;        /* the MLP's hidden layer */
}

/* ctx [B, D]: per input and head, the softmax over the tokens of the query against the keys,
 * weighting the values (scale 1/sqrt(head size), as scaled dot-product attention). */
static void probe_attention(const float *q, const float *kv, int B, int T, int D, int heads,
                            float *weights, float *ctx) {
    const int hd = D / heads;
    const float scale = 1.0f / sqrtf((float)hd);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < heads; h++) {
            const float *qh = q + (size_t)h * hd;
            for (int t = 0; t < T; t++) {
                const float *k = kv + ((size_t)b * T + t) * 2 * D + (size_t)h * hd;
                float s = 0.0f;
                for (int i = 0; i < hd; i++) s += qh[i] * k[i];
                weights[t] = s * scale;
            }
            softmax_forward(weights, 1, T);
            float *c = ctx + (size_t)b * D + (size_t)h * hd;
            memset(c, 0, sizeof(float) * (size_t)hd);
            for (int t = 0; t < T; t++) {
                const float *v = kv + ((size_t)b * T + t) * 2 * D + D + (size_t)h * hd;
                for (int i = 0; i < hd; i++) c[i] += weights[t] * v[i];
            }
        }
}

void probe_pool_forward(const encoder_layer *w, const float *probe, const float *x, int B, int T,
                        int D, int heads, int I, activation_kind act, float eps, float *scratch,
                        float *out) {
    float *q = scratch, *kv = q + D, *weights = kv + (size_t)B * T * 2 * D;
    float *ctx = weights + T, *a = ctx + (size_t)B * D, *y = a + (size_t)B * D;
    float *hidden = y + (size_t)B * D;
    /* the probe's query once; keys and values of every token in one product */
    linear_forward(q, probe, w->qkv_w, w->qkv_b, 1, D, D);
    linear_forward(kv, x, w->qkv_w + (size_t)D * D, w->qkv_b + D, B * T, D, 2 * D);
    probe_attention(q, kv, B, T, D, heads, weights, ctx);
    linear_forward(a, ctx, w->proj_w, w->proj_b, B, D, D);
    layernorm_forward(y, NULL, NULL, a, w->ln2_w, w->ln2_b, B, D, eps);
    linear_forward(hidden, y, w->fc1_w, w->fc1_b, B, D, I);
    activation_forward(hidden, hidden, (size_t)B * I, act);
    linear_forward(out, hidden, w->fc2_w, w->fc2_b, B, I, D);
    for (size_t i = 0; i < (size_t)B * D; i++) out[i] += a[i];
}
