#include "patch/patch.h"

#include <math.h>
#include <stdlib.h>
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

void patch_tokens_place(float *x, const float *embed, const float *special, int S,
                        const float *registers, int R, const float *pos, int B, int N, int D) {
    const int T = S + R + N;
    for (int b = 0; b < B; b++) {
        float *xb = x + (size_t)b * T * D;
        for (int i = 0; i < S * D; i++) xb[i] = special[i] + (pos ? pos[i] : 0.0f);
        if (R) memcpy(xb + (size_t)S * D, registers, sizeof(float) * (size_t)R * D);
        for (int i = 0; i < N; i++) {
            const float *e = embed + ((size_t)b * N + i) * D;
            float *row = xb + (size_t)(S + R + i) * D;
            if (!pos) {
                memcpy(row, e, sizeof(float) * (size_t)D);
                continue;
            }
            const float *p = pos + (size_t)(S + i) * D;
            for (int d = 0; d < D; d++) row[d] = e[d] + p[d];
        }
    }
}

void patch_tokens_forward(float *x, const float *embed, const float *special, int S,
                          const float *pos, int B, int N, int D) {
    patch_tokens_place(x, embed, special, S, NULL, 0, pos, B, N, D);
}

void patch_tokens_place_backward(float *dembed, float *dspecial, int S, float *dregisters, int R,
                                 float *dpos, const float *dx, int B, int N, int D) {
    const int T = S + R + N;
    for (int b = 0; b < B; b++) {
        const float *db = dx + (size_t)b * T * D, *dpatch = db + (size_t)(S + R) * D;
        for (int i = 0; i < S * D; i++) dspecial[i] += db[i];
        for (int i = 0; i < R * D; i++) dregisters[i] += db[(size_t)S * D + i];
        if (dpos) {
            for (int i = 0; i < S * D; i++) dpos[i] += db[i];
            for (size_t i = 0; i < (size_t)N * D; i++) dpos[(size_t)S * D + i] += dpatch[i];
        }
        memcpy(dembed + (size_t)b * N * D, dpatch, sizeof(float) * (size_t)N * D);
    }
}

void patch_tokens_backward(float *dembed, float *dspecial, int S, float *dpos, const float *dx,
                           int B, int N, int D) {
    patch_tokens_place_backward(dembed, dspecial, S, NULL, 0, dpos, dx, B, N, D);
}

/* Keys' cubic convolution kernel at distance x (PyTorch: A = −0.75; antialiased: a = −0.5). */
static double cubic(double x, double a) {
    x = fabs(x);
    if (x < 1.0) return ((a + 2) * x - (a + 3)) * x * x + 1;
    if (x < 2.0) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
    return 0.0;
}

/* Row i of one axis's [m, n] resize matrix M (out = M · in), zero outside lo[i] .. hi[i] - 1. */
static void axis_row(double *row, int *lo, int *hi, int i, int n, int m, grid_filter filter) {
    const double s = (double)n / m;
    memset(row, 0, sizeof(double) * (size_t)n);
    if (filter == GRID_BICUBIC) { /* taps clamped to the edge: their weights add up there */
        const double x = (i + 0.5) * s - 0.5, x0 = floor(x);
        for (int k = -1; k <= 2; k++) {
            const int at = (int)x0 + k < 0 ? 0 : (int)x0 + k >= n ? n - 1 : (int)x0 + k;
            row[at] += cubic(x - (x0 + k), -0.75);
        }
    } else if (filter == GRID_BILINEAR) {
        const double x = fmax((i + 0.5) * s - 0.5, 0.0);
        const int x0 = (int)x, x1 = x0 + 1 < n ? x0 + 1 : n - 1;
        row[x0] += 1.0 - (x - x0);
        row[x1] += x - x0;
    } else { /* antialiased: the filter widened by the scale, taps outside the grid dropped */
        const double support = 2.0 * fmax(s, 1.0), inv = s >= 1.0 ? 1.0 / s : 1.0;
        const double c = s * (i + 0.5);
        const int a = (int)(c - support + 0.5) > 0 ? (int)(c - support + 0.5) : 0;
        const int b = (int)(c + support + 0.5) < n ? (int)(c + support + 0.5) : n;
        double sum = 0.0;
        for (int x = a; x < b; x++) sum += row[x] = cubic((x - c + 0.5) * inv, -0.5);
        for (int x = a; x < b && sum != 0.0; x++) row[x] /= sum;
    }
    *lo = n, *hi = 0;
    for (int x = 0; x < n; x++)
        if (row[x] != 0.0) *lo = x < *lo ? x : *lo, *hi = x + 1;
}

/* The [m, n] matrix of one axis and each row's nonzero span [lo, hi). */
static double *axis_matrix(int n, int m, grid_filter filter, int *lo, int *hi) {
    double *M = malloc(sizeof(double) * (size_t)m * n);
    for (int i = 0; M && i < m; i++) axis_row(M + (size_t)i * n, &lo[i], &hi[i], i, n, m, filter);
    return M;
}

int grid_resize_rect(float *out, const float *grid, int nh, int nw, int mh, int mw, int C,
                     grid_filter filter) {
    int *span = malloc(sizeof(int) * 2 * (size_t)(mh + mw));
    double *My = span ? axis_matrix(nh, mh, filter, span, span + mh) : NULL;
    int *lx = span ? span + 2 * mh : NULL, *hx = span ? lx + mw : NULL;
    double *Mx = My ? axis_matrix(nw, mw, filter, lx, hx) : NULL;
    if (!Mx) return free(span), free(My), -1;
    const int *ly = span, *hy = span + mh;
    for (int i = 0; i < mh; i++)
        for (int l = 0; l < mw; l++) {
            float *dst = out + ((size_t)i * mw + l) * C;
            const double *wy = My + (size_t)i * nh, *wx = Mx + (size_t)l * nw;
            for (int c = 0; c < C; c++) {
                double acc = 0.0;
                for (int j = ly[i]; j < hy[i]; j++) {
                    double row = 0.0;
                    for (int k = lx[l]; k < hx[l]; k++)
                        row += wx[k] * grid[((size_t)j * nw + k) * C + c];
                    acc += wy[j] * row;
                }
                dst[c] = (float)acc;
            }
        }
    free(span), free(My), free(Mx);
    return 0;
}

int grid_resize(float *out, const float *grid, int n, int m, int C, grid_filter filter) {
    return grid_resize_rect(out, grid, n, n, m, m, C, filter);
}

int pos_embed_resize_rect(float *out, const float *pos, int S, int n, int mh, int mw, int D,
                          grid_filter filter) {
    memcpy(out, pos, sizeof(float) * (size_t)S * D); /* the special tokens' positions are kept */
    return grid_resize_rect(out + (size_t)S * D, pos + (size_t)S * D, n, n, mh, mw, D, filter);
}

int pos_embed_resize(float *out, const float *pos, int S, int n, int m, int D, grid_filter filter) {
    return pos_embed_resize_rect(out, pos, S, n, m, m, D, filter);
}

int pos_embed_interpolate(float *out, const float *pos, int S, int n, int m, int D) {
    return pos_embed_resize(out, pos, S, n, m, D, GRID_BICUBIC);
}
