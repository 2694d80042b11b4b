#include "patch/patch.h"

#include <math.h>
#include <string.h>

void patch_extract(float *patches, const float *pixels, int B, int C, int H, int W, int P) {
    const int gh = H / P, gw = W / P, K = C * P * P;
    for (int b = 0; b < B; b++)
        for (int py = 0; py < gh; py++)
            for (int px = 0; px < gw; px++) {
                float *row = patches + ((size_t)(b * gh + py) * gw + px) * K;
                for (int c = 0; c < C; c++)
                    for (int y = 0; y < P; y++) {
                        const float *src =
                            pixels + (((size_t)b * C + c) * H + py * P + y) * W + px * P;
                        memcpy(row + (c * P + y) * P, src, sizeof(float) * (size_t)P);
                    }
            }
}

void patch_tokens_forward(float *x, const float *embed, const float *special, int S,
                          const float *pos, int B, int N, int D) {
    const int T = S + N;
    for (int b = 0; b < B; b++) {
        float *xb = x + (size_t)b * T * D;
        for (int i = 0; i < S * D; i++) xb[i] = special[i] + pos[i];
        for (int i = 0; i < N; i++) {
            const float *e = embed + ((size_t)b * N + i) * D;
            const float *p = pos + (size_t)(S + i) * D;
            float *row = xb + (size_t)(S + i) * D;
            for (int d = 0; d < D; d++) row[d] = e[d] + p[d];
        }
    }
}

void patch_tokens_backward(float *dembed, float *dspecial, int S, float *dpos, const float *dx,
                           int B, int N, int D) {
    const int T = S + N;
    for (int b = 0; b < B; b++) {
        const float *db = dx + (size_t)b * T * D;
        for (int i = 0; i < S * D; i++) dspecial[i] += db[i];
        if (dpos)
            for (size_t i = 0; i < (size_t)T * D; i++) dpos[i] += db[i];
        memcpy(dembed + (size_t)b * N * D, db + (size_t)S * D, sizeof(float) * (size_t)N * D);
    }
}

/* PyTorch's cubic convolution weights for fractional offset t, A = −0.75. */
static void cubic_weights(double t, double w[4]) {
    const double A = -0.75;
    double x;
    x = t + 1.0;
    w[0] = ((A * x - 5 * A) * x + 8 * A) * x - 4 * A;
    x = t;
    w[1] = ((A + 2) * x - (A + 3)) * x * x + 1;
    x = 1.0 - t;
    w[2] = ((A + 2) * x - (A + 3)) * x * x + 1;
    x = 2.0 - t;
    w[3] = ((A * x - 5 * A) * x + 8 * A) * x - 4 * A;
}

static int clamp_index(int i, int n) {
    return i < 0 ? 0 : i >= n ? n - 1 : i;
}

void pos_embed_interpolate(float *out, const float *pos, int S, int n, int m, int D) {
    memcpy(out, pos, sizeof(float) * (size_t)S * D); /* the special tokens' positions are kept */
    const float *grid = pos + (size_t)S * D;
    const double scale = (double)n / m;
    for (int oy = 0; oy < m; oy++) {
        double sy = (oy + 0.5) * scale - 0.5, wy[4];
        int y0 = (int)floor(sy);
        cubic_weights(sy - y0, wy);
        for (int ox = 0; ox < m; ox++) {
            double sx = (ox + 0.5) * scale - 0.5, wx[4];
            int x0 = (int)floor(sx);
            cubic_weights(sx - x0, wx);
            float *dst = out + (size_t)(S + oy * m + ox) * D;
            for (int d = 0; d < D; d++) {
                double acc = 0.0;
                for (int i = 0; i < 4; i++) {
                    const float *r = grid + (size_t)clamp_index(y0 - 1 + i, n) * n * D;
                    double row = 0.0;
                    for (int j = 0; j < 4; j++)
                        row += wx[j] * r[(size_t)clamp_index(x0 - 1 + j, n) * D + d];
                    acc += wy[i] * row;
                }
                dst[d] = (float)acc;
            }
        }
    }
}
