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

/* ---- backward (training a sentence-transformers pipeline) ---- */

/* dx [T, D] += the gradient of pool_tokens' out wrt x from dout (its layout: D floats per mode).
 * Max sends each dimension's gradient to the first token holding the maximum (torch.max's
 * index); the divisions use the forward's clamped counts. */
void pool_tokens_backward(const float *x, const uint8_t *mask, int T, int D, int modes, int skip,
                          const float *dout, float *dx) {
    if (modes & POOL_MODE_CLS) {
        for (int d = 0; d < D; d++) dx[d] += dout[d];
        dout += D;
    }
    if (modes & POOL_MODE_MAX) {
        for (int d = 0; d < D; d++) {
            int at = -1;
            float m = -INFINITY;
            for (int t = 0; t < T; t++) {
                const float v = counted(mask, skip, t) ? x[(size_t)t * D + d] : -1e9f;
                if (v > m) m = v, at = t;
            }
            if (at >= 0 && counted(mask, skip, at)) dx[(size_t)at * D + d] += dout[d];
        }
        dout += D;
    }
    double n = 0.0, nw = 0.0;
    for (int t = 0; t < T; t++)
        if (counted(mask, skip, t)) n += 1.0, nw += t + 1.0;
    n = n > 1e-9 ? n : 1e-9, nw = nw > 1e-9 ? nw : 1e-9;
    const float *mean = modes & POOL_MODE_MEAN ? dout : NULL;
    if (mean) dout += D;
    const float *sqrt_len = modes & POOL_MODE_MEAN_SQRT_LEN ? dout : NULL;
    if (sqrt_len) dout += D;
    const float *weighted = modes & POOL_MODE_WEIGHTED_MEAN ? dout : NULL;
    if (weighted) dout += D;
    for (int t = 0; t < T; t++) {
        if (!counted(mask, skip, t)) continue;
        float *row = dx + (size_t)t * D;
        for (int d = 0; d < D; d++) {
            double g = 0.0;
            if (mean) g += mean[d] / n;
            if (sqrt_len) g += sqrt_len[d] / sqrt(n);
            if (weighted) g += weighted[d] * (t + 1.0) / nw;
            row[d] += (float)g;
        }
    }
    if (modes & POOL_MODE_LAST_TOKEN) {
        int last = -1;
        for (int t = 0; t < T; t++)
            if (counted(mask, skip, t)) last = t;
        for (int d = 0; last >= 0 && d < D; d++) dx[(size_t)last * D + d] += dout[d];
    }
}

/* act'(pre) from the output y = act(pre) (and pre itself for GELU). */
static double activate_grad(dense_act act, double pre, double y) {
    switch (act) {
    case DENSE_TANH:
        return 1.0 - y * y;
    case DENSE_RELU:
        return pre > 0.0 ? 1.0 : 0.0;
    case DENSE_SIGMOID:
        return y * (1.0 - y);
    case DENSE_GELU:
        return 0.5 * (1.0 + erf(pre / sqrt(2.0))) + pre * exp(-0.5 * pre * pre) / sqrt(2.0 * M_PI);
    case DENSE_IDENTITY:
        break;
    }
    return 1.0;
}

void dense_backward(const float *w, const float *b, int n_in, int n_out, dense_act act,
                    const float *x, const float *out, const float *dout, float *dx, float *dw,
                    float *db) {
    for (int i = 0; i < n_in; i++) dx[i] = 0.0f;
    for (int o = 0; o < n_out; o++) {
        const float *row = w + (size_t)o * n_in;
        double pre = b ? b[o] : 0.0;
        if (act == DENSE_GELU || act == DENSE_RELU)
            for (int i = 0; i < n_in; i++) pre += (double)row[i] * x[i];
        const float g = (float)(dout[o] * activate_grad(act, pre, out[o]));
        for (int i = 0; i < n_in; i++) dx[i] += g * row[i];
        if (dw)
            for (int i = 0; i < n_in; i++) dw[(size_t)o * n_in + i] += g * x[i];
        if (db) db[o] += g;
    }
}

void l2_normalize_backward(const float *x, int n, const float *dy, float *dx) {
    double s = 0.0, dot = 0.0;
    for (int i = 0; i < n; i++) s += (double)x[i] * x[i];
    const double norm = sqrt(s);
    if (norm <= 1e-12) { /* x / 1e-12: linear */
        for (int i = 0; i < n; i++) dx[i] = (float)(dy[i] / 1e-12);
        return;
    }
    for (int i = 0; i < n; i++) dot += (double)x[i] * dy[i];
    for (int i = 0; i < n; i++) dx[i] = (float)((dy[i] - x[i] * dot / s) / norm);
}
