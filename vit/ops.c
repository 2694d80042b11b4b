#include "vit/ops.h"

#include <cblas.h>
#include <math.h>
#include <string.h>

void linear_forward(float *out, const float *inp, const float *weight, const float *bias, int N, int IN,
                    int OUT) {
    float beta = 0.0f;
    if (bias) {
        for (int n = 0; n < N; n++) memcpy(out + (size_t)n * OUT, bias, sizeof(float) * (size_t)OUT);
        beta = 1.0f;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, OUT, IN, 1.0f, inp, IN, weight, IN, beta, out,
                OUT);
}

void layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *w,
                       const float *b, int N, int D, float eps) {
    for (int n = 0; n < N; n++) {
        const float *x = inp + (size_t)n * D;
        float *y = out + (size_t)n * D;
        /* Two passes in double: the variance of activations with a large mean stays exact. */
        double sum = 0.0;
        for (int i = 0; i < D; i++) sum += x[i];
        double m = sum / D, var = 0.0;
        for (int i = 0; i < D; i++) var += (x[i] - m) * (x[i] - m);
        var /= D;
        float s = (float)(1.0 / sqrt(var + eps)), mf = (float)m;
        for (int i = 0; i < D; i++) y[i] = (x[i] - mf) * s * w[i] + b[i];
        if (mean) mean[n] = mf;
        if (rstd) rstd[n] = s;
    }
}

static float gelu_erf(float x) { return 0.5f * x * (1.0f + erff(x * (float)M_SQRT1_2)); }

static float gelu_tanh(float x) {
    const float k = 0.7978845608028654f; /* sqrt(2/pi) */
    return 0.5f * x * (1.0f + tanhf(k * (x + 0.044715f * x * x * x)));
}

void activation_forward(float *out, const float *inp, size_t n, activation_kind act) {
    switch (act) {
    case ACT_GELU:
        for (size_t i = 0; i < n; i++) out[i] = gelu_erf(inp[i]);
        break;
    case ACT_GELU_TANH:
        for (size_t i = 0; i < n; i++) out[i] = gelu_tanh(inp[i]);
        break;
    case ACT_RELU:
        for (size_t i = 0; i < n; i++) out[i] = inp[i] > 0.0f ? inp[i] : 0.0f;
        break;
    }
}

void softmax_forward(float *x, int rows, int cols) {
    for (int r = 0; r < rows; r++) {
        float *row = x + (size_t)r * cols;
        float max = -INFINITY;
        for (int c = 0; c < cols; c++) max = row[c] > max ? row[c] : max;
        if (max == -INFINITY) { /* every key masked: attend to nothing rather than NaN */
            memset(row, 0, sizeof(float) * (size_t)cols);
            continue;
        }
        float sum = 0.0f;
        for (int c = 0; c < cols; c++) sum += row[c] = expf(row[c] - max);
        float inv = 1.0f / sum;
        for (int c = 0; c < cols; c++) row[c] *= inv;
    }
}

void attention_forward(float *out, float *probs, const float *qkv, const uint8_t *key_mask, int causal,
                       int B, int T, int D, int H) {
    const int dh = D / H, ld = 3 * D;
    const float scale = 1.0f / sqrtf((float)dh);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++) {
            const float *q = qkv + (size_t)b * T * ld + h * dh;
            const float *k = q + D, *v = q + 2 * D;
            float *p = probs + ((size_t)b * H + h) * T * T;
            /* scores[T, T] = scale · Q Kᵀ, read in place from the fused qkv rows (stride 3D) */
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, dh, scale, q, ld, k, ld, 0.0f, p, T);
            if (key_mask || causal)
                for (int i = 0; i < T; i++)
                    for (int j = 0; j < T; j++)
                        if ((key_mask && !key_mask[(size_t)b * T + j]) || (causal && j > i))
                            p[(size_t)i * T + j] = -INFINITY;
            softmax_forward(p, T, T);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, dh, T, 1.0f, p, T, v, ld, 0.0f,
                        out + (size_t)b * T * D + h * dh, D);
        }
}
