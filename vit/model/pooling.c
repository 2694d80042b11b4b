/* Sentence poolings and the layers after them (pooling.h). Sums are in double: a text's
 * hundreds of rows summed in float would differ from the float64 reference by more than the
 * encoder does. */
#include "vit/model/pooling.h"

#include <math.h>
#include <string.h>

/* The mask with the skipped tokens out: is token t read by the poolings over tokens? */
static int counted(const uint8_t *mask, int skip, int t) {
    return t >= skip && mask[t];
}

/* sum over counted tokens of weight(t) * x[t] into out, returning the summed weight. weighted:
 * token t weighs t + 1 (models.Pooling's weightedmean), else 1. */
static double weighted_sum(const float *x, const uint8_t *mask, int T, int D, int skip,
                           int weighted, double *acc) {
    double total = 0.0;
    for (int d = 0; d < D; d++) acc[d] = 0.0;
    for (int t = 0; t < T; t++) {
        if (!counted(mask, skip, t)) continue;
        const double wt = weighted ? t + 1.0 : 1.0;
        for (int d = 0; d < D; d++) acc[d] += wt * x[(size_t)t * D + d];
        total += wt;
    }
    return total;
}

/* Padding set to -1e9 and the maximum taken, as models.Pooling does (an all-masked text
 * gives -1e9). */
static void max_tokens(const float *x, const uint8_t *mask, int T, int D, int skip, float *out) {
    for (int d = 0; d < D; d++) {
        float m = -INFINITY;
        for (int t = 0; t < T; t++) {
            const float v = counted(mask, skip, t) ? x[(size_t)t * D + d] : -1e9f;
            m = v > m ? v : m;
        }
        out[d] = m;
    }
}

/* The last counted token's row, zeros when there is none. */
static void last_token(const float *x, const uint8_t *mask, int T, int D, int skip, float *out) {
    int last = -1;
    for (int t = 0; t < T; t++)
        if (counted(mask, skip, t)) last = t;
    if (last < 0)
        memset(out, 0, sizeof *out * (size_t)D);
    else
        memcpy(out, x + (size_t)last * D, sizeof *out * (size_t)D);
}

static void divide(const double *acc, int D, double by, float *out) {
    for (int d = 0; d < D; d++) out[d] = (float)(acc[d] / by);
}

void pool_tokens(const float *x, const uint8_t *mask, int T, int D, int modes, int skip,
                 float *out) {
    double acc[D > 0 ? D : 1];
    if (modes & POOL_MODE_CLS) memcpy(out, x, sizeof *out * (size_t)D), out += D;
    if (modes & POOL_MODE_MAX) max_tokens(x, mask, T, D, skip, out), out += D;
    if (modes & (POOL_MODE_MEAN | POOL_MODE_MEAN_SQRT_LEN)) {
        double n = weighted_sum(x, mask, T, D, skip, 0, acc);
        n = n > 1e-9 ? n : 1e-9; /* models.Pooling's clamp */
        if (modes & POOL_MODE_MEAN) divide(acc, D, n, out), out += D;
        if (modes & POOL_MODE_MEAN_SQRT_LEN) divide(acc, D, sqrt(n), out), out += D;
    }
    if (modes & POOL_MODE_WEIGHTED_MEAN) {
        const double n = weighted_sum(x, mask, T, D, skip, 1, acc);
        divide(acc, D, n > 1e-9 ? n : 1e-9, out), out += D;
    }
    if (modes & POOL_MODE_LAST_TOKEN) last_token(x, mask, T, D, skip, out);
}

static double activate(dense_act act, double v) {
    switch (act) {
    case DENSE_TANH:
        return tanh(v);
    case DENSE_RELU:
        return v > 0.0 ? v : 0.0;
    case DENSE_SIGMOID:
        return 1.0 / (1.0 + exp(-v));
    case DENSE_GELU:
        return 0.5 * v * (1.0 + erf(v / sqrt(2.0))); /* nn.GELU's exact form */
    case DENSE_IDENTITY:
        break;
    }
    return v;
}

void dense_forward(const float *w, const float *b, int n_in, int n_out, dense_act act,
                   const float *x, float *out) {
    for (int o = 0; o < n_out; o++) {
        const float *row = w + (size_t)o * n_in;
        double s = b ? b[o] : 0.0;
        for (int i = 0; i < n_in; i++) s += (double)row[i] * x[i];
        out[o] = (float)activate(act, s);
    }
}

void l2_normalize(float *x, int n) {
    double s = 0.0;
    for (int i = 0; i < n; i++) s += (double)x[i] * x[i];
    const double norm = sqrt(s) > 1e-12 ? sqrt(s) : 1e-12;
    for (int i = 0; i < n; i++) x[i] = (float)(x[i] / norm);
}
