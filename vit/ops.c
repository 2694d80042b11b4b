#include "vit/ops.h"

#include <cblas.h>
#include <math.h>
#include <omp.h>
#include <string.h>

#define ATTENTION_ROW_BLOCK 64

/* Threads: OpenMP owns the cores. OpenBLAS runs single-threaded inside each OpenMP thread on a
 * slice of the rows (vit_threads_init sets this up), so the two never spin against each other. */

void vit_threads_init(int threads) {
    openblas_set_num_threads(1);
    if (threads > 0) omp_set_num_threads(threads);
}

/* This thread's share [lo, hi) of n rows. */
static void thread_rows(int n, int *lo, int *hi) {
    const int t = omp_get_thread_num(), k = omp_get_num_threads();
    *lo = (int)((long long)n * t / k);
    *hi = (int)((long long)n * (t + 1) / k);
}

void linear_forward(float *out, const float *inp, const float *weight, const float *bias, int N, int IN,
                    int OUT) {
#pragma omp parallel if (N >= 16)
    {
        int lo, hi;
        thread_rows(N, &lo, &hi);
        if (hi > lo) {
            if (bias)
                for (int n = lo; n < hi; n++) memcpy(out + (size_t)n * OUT, bias, sizeof(float) * (size_t)OUT);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, hi - lo, OUT, IN, 1.0f, inp + (size_t)lo * IN,
                        IN, weight, IN, bias ? 1.0f : 0.0f, out + (size_t)lo * OUT, OUT);
        }
    }
}

void layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *w,
                       const float *b, int N, int D, float eps) {
#pragma omp parallel for if (N >= 64) schedule(static)
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

/* exp(x) without a libm call so loops over it vectorise: x = n·ln2 + r, |r| <= ln2/2, degree-6
 * polynomial for e^r (relative error < 2e-7, like expf's 1 ulp at float32), 2^n from the bits.
 * Underflows to exactly 0 below -87.3 (masked attention scores are -inf). */
static inline float fast_expf(float x) {
    const float hi = 88.3762626647949f, lo = -87.3365447504f;
    float xc = x > hi ? hi : (x < lo ? lo : x);
    /* round to nearest by the 1.5·2^23 trick: a libm round() call would stop vectorisation */
    float n = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
    float r = xc - n * 0.693359375f + n * 2.12194440e-4f; /* ln2 split in two for exactness */
    float p = 1.0f / 720;
    p = p * r + 1.0f / 120;
    p = p * r + 1.0f / 24;
    p = p * r + 1.0f / 6;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    int32_t bits = ((int32_t)n + 127) << 23;
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    return x < lo ? 0.0f : p * scale;
}

/* erf as an odd/even rational minimax fit on [-4, 4] (the one XLA and Eigen use; outside, erf is
 * ±1 in float32). Max error ~2 ulp against erf in double; erff itself is a scalar libm call and was
 * a quarter of inference time. */
static inline float fast_erff(float x) {
    x = x > 4.0f ? 4.0f : (x < -4.0f ? -4.0f : x);
    const float x2 = x * x;
    float p = -2.72614225801306e-10f;
    p = p * x2 + 2.77068142495902e-08f;
    p = p * x2 - 2.10102402082508e-06f;
    p = p * x2 - 5.69250639462346e-05f;
    p = p * x2 - 7.34990630326855e-04f;
    p = p * x2 - 2.95459980854025e-03f;
    p = p * x2 - 1.60960333262415e-02f;
    float q = -1.45660718464996e-05f;
    q = q * x2 - 2.13374055278905e-04f;
    q = q * x2 - 1.68282697438203e-03f;
    q = q * x2 - 7.37332916720468e-03f;
    q = q * x2 - 1.42647390514189e-02f;
    return x * p / q;
}

static float gelu_erf(float x) { return 0.5f * x * (1.0f + fast_erff(x * (float)M_SQRT1_2)); }

static float gelu_tanh(float x) {
    const float k = 0.7978845608028654f; /* sqrt(2/pi) */
    return 0.5f * x * (1.0f + tanhf(k * (x + 0.044715f * x * x * x)));
}

void activation_forward(float *out, const float *inp, size_t n, activation_kind act) {
    const long long count = (long long)n;
    switch (act) {
    case ACT_GELU:
#pragma omp parallel for simd if (count >= 32768) schedule(static)
        for (long long i = 0; i < count; i++) out[i] = gelu_erf(inp[i]);
        break;
    case ACT_GELU_TANH:
#pragma omp parallel for simd if (count >= 32768) schedule(static)
        for (long long i = 0; i < count; i++) out[i] = gelu_tanh(inp[i]);
        break;
    case ACT_RELU:
#pragma omp parallel for simd if (count >= 32768) schedule(static)
        for (long long i = 0; i < count; i++) out[i] = inp[i] > 0.0f ? inp[i] : 0.0f;
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
        for (int c = 0; c < cols; c++) sum += row[c] = fast_expf(row[c] - max);
        float inv = 1.0f / sum;
        for (int c = 0; c < cols; c++) row[c] *= inv;
    }
}

/* Scores, softmax and weighted values for queries [r0, r1) of one (batch, head). */
static void attention_rows(float *out, float *p, const float *q, const uint8_t *key_mask, int causal,
                           int r0, int r1, int T, int D, int dh, float scale) {
    const int ld = 3 * D;
    const float *k = q + D, *v = q + 2 * D;
    /* scores[r0:r1, T] = scale · Q Kᵀ, read in place from the fused qkv rows (stride 3D) */
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, r1 - r0, T, dh, scale, q + (size_t)r0 * ld, ld, k,
                ld, 0.0f, p + (size_t)r0 * T, T);
    if (key_mask || causal)
        for (int i = r0; i < r1; i++)
            for (int j = 0; j < T; j++)
                if ((key_mask && !key_mask[j]) || (causal && j > i)) p[(size_t)i * T + j] = -INFINITY;
    softmax_forward(p + (size_t)r0 * T, r1 - r0, T);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, r1 - r0, dh, T, 1.0f, p + (size_t)r0 * T, T, v, ld,
                0.0f, out + (size_t)r0 * D, D);
}

void attention_forward(float *out, float *probs, const float *qkv, const uint8_t *key_mask, int causal,
                       int B, int T, int D, int H) {
    const int dh = D / H, blocks = (T + ATTENTION_ROW_BLOCK - 1) / ATTENTION_ROW_BLOCK;
    const float scale = 1.0f / sqrtf((float)dh);
    /* Tasks of (batch, head, block of query rows): enough of them to keep every core busy at batch 1. */
#pragma omp parallel for schedule(dynamic) if (B * H * blocks > 1)
    for (int task = 0; task < B * H * blocks; task++) {
        const int b = task / (H * blocks), h = task / blocks % H, blk = task % blocks;
        const int r0 = blk * ATTENTION_ROW_BLOCK, r1 = r0 + ATTENTION_ROW_BLOCK < T ? r0 + ATTENTION_ROW_BLOCK : T;
        attention_rows(out + (size_t)b * T * D + h * dh, probs + ((size_t)b * H + h) * T * T,
                       qkv + (size_t)b * T * 3 * D + h * dh, key_mask ? key_mask + (size_t)b * T : NULL, causal,
                       r0, r1, T, D, dh, scale);
    }
}
