/* TEMPORARY (until the helper's attention_general lands): plain attention with Tq != Tk. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>

size_t attention_general_scratch(int Tk) {
    return (size_t)Tk;
}

void attention_general_forward(float *out, float *probs, float *scratch, const float *q, int ldq,
                               const float *k, const float *v, int ldkv, const uint8_t *key_mask,
                               int causal, int B, int Tq, int Tk, int D, int H) {
    const int dh = D / H;
    const float scale = 1.0f / sqrtf((float)dh);
    (void)probs;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int i = 0; i < Tq; i++) {
                const float *qi = q + ((size_t)b * Tq + i) * ldq + h * dh;
                float *s = scratch, max = -INFINITY;
                for (int j = 0; j < Tk; j++) {
                    const float *kj = k + ((size_t)b * Tk + j) * ldkv + h * dh;
                    float acc = 0;
                    for (int c = 0; c < dh; c++) acc += qi[c] * kj[c];
                    s[j] = acc * scale;
                    if ((key_mask && !key_mask[b * Tk + j]) || (causal >= 0 && j > i + causal))
                        s[j] = -INFINITY;
                    if (s[j] > max) max = s[j];
                }
                double sum = 0;
                for (int j = 0; j < Tk; j++) sum += s[j] = max == -INFINITY ? 0 : expf(s[j] - max);
                float *o = out + ((size_t)b * Tq + i) * D + h * dh;
                for (int c = 0; c < dh; c++) o[c] = 0;
                for (int j = 0; j < Tk; j++) {
                    const float *vj = v + ((size_t)b * Tk + j) * ldkv + h * dh;
                    const float p = sum > 0 ? (float)(s[j] / sum) : 0.0f;
                    for (int c = 0; c < dh; c++) o[c] += p * vj[c];
                }
            }
}
