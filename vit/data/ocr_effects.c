/* Scan and photo effects on a grey canvas: lighting, stains, stroke weight, blur, resolution,
 * noise. */
#include "vit/data/ocr_effects.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "vit/base/rng.h"

ocr_effects ocr_effects_none(void) {
    return (ocr_effects){.paper = 1, .ink = 0, .gamma = 1, .scale = 1};
}

static float clamp01(float v) {
    return v < 0 ? 0 : v > 1 ? 1 : v;
}

/* The page's level at (x, y) (pixel centres): its grey, lit and stained. */
static float paper_at(const ocr_effects *e, float x, float y, int w, int h) {
    const float t = ((x / (float)w) - 0.5f) * cosf(e->gradient_angle) +
                    ((y / (float)h) - 0.5f) * sinf(e->gradient_angle);
    float p = e->paper * (1 + e->gradient * t);
    for (int i = 0; i < e->spots; i++) {
        const float dx = x - e->spot_x[i], dy = y - e->spot_y[i], r = e->spot_r[i];
        p += e->spot_amp[i] * expf(-(dx * dx + dy * dy) / (2 * r * r));
    }
    /* however dark the stain or the shadow, the print stays visible on it */
    return clamp01(fmaxf(p, e->ink + OCR_MIN_CONTRAST));
}

void ocr_compose(const float *coverage, int w, int h, const ocr_effects *e, float *out) {
    const int plain = e->gradient == 0 && e->spots == 0;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            const float p = plain ? e->paper : paper_at(e, (float)x + 0.5f, (float)y + 0.5f, w, h);
            float c = coverage[(size_t)y * (size_t)w + (size_t)x];
            if (e->gamma != 1 && c > 0) c = powf(c, e->gamma);
            out[(size_t)y * (size_t)w + (size_t)x] = p * (1 - c) + e->ink * c;
        }
}

/* out[i] = sum_k kernel[k] · in[clamp(i + k - r)] along one line of n samples, stride apart. */
static void convolve_line(const float *in, float *out, int n, size_t stride, const float *kernel,
                          int r) {
    for (int i = 0; i < n; i++) {
        float s = 0;
        for (int k = -r; k <= r; k++) {
            int j = i + k;
            j = j < 0 ? 0 : j >= n ? n - 1 : j;
            s += kernel[k + r] * in[(size_t)j * stride];
        }
        out[(size_t)i * stride] = s;
    }
}

void ocr_blur(float *img, int w, int h, float sigma, float *tmp) {
    if (sigma <= 0) return;
    enum { MAX_RADIUS = 32 };
    int r = (int)ceilf(3 * sigma);
    if (r > MAX_RADIUS) r = MAX_RADIUS;
    float kernel[2 * MAX_RADIUS + 1], sum = 0;
    for (int k = -r; k <= r; k++)
        sum += kernel[k + r] = expf(-(float)(k * k) / (2 * sigma * sigma));
    for (int k = 0; k <= 2 * r; k++) kernel[k] /= sum;
    for (int y = 0; y < h; y++)
        convolve_line(img + (size_t)y * (size_t)w, tmp + (size_t)y * (size_t)w, w, 1, kernel, r);
    for (int x = 0; x < w; x++) convolve_line(tmp + x, img + x, h, (size_t)w, kernel, r);
}

/* One axis: n samples (stride apart) to m (out_stride apart), triangle filter of half-width
 * max(n / m, 1) input samples. */
static void resample_line(const float *in, int n, size_t stride, float *out, int m,
                          size_t out_stride) {
    const double scale = (double)n / m, support = scale > 1 ? scale : 1;
    for (int j = 0; j < m; j++) {
        const double centre = (j + 0.5) * scale;
        int lo = (int)floor(centre - support), hi = (int)ceil(centre + support);
        lo = lo < 0 ? 0 : lo;
        hi = hi > n ? n : hi;
        double s = 0, wsum = 0;
        for (int x = lo; x < hi; x++) {
            const double wt = 1 - fabs(x + 0.5 - centre) / support;
            if (wt <= 0) continue;
            s += wt * in[(size_t)x * stride];
            wsum += wt;
        }
        out[(size_t)j * out_stride] = (float)(wsum > 0 ? s / wsum : 0);
    }
}

void ocr_resample(const float *src, int w, int h, float *dst, int dw, int dh, float *tmp) {
    for (int y = 0; y < h; y++)
        resample_line(src + (size_t)y * (size_t)w, w, 1, tmp + (size_t)y * (size_t)dw, dw, 1);
    for (int x = 0; x < dw; x++) resample_line(tmp + x, h, (size_t)dw, dst + x, dh, (size_t)dw);
}

void ocr_finish(const float *img, int w, int h, float noise, float salt, uint64_t *rng,
                uint8_t *out) {
    const size_t n = (size_t)w * (size_t)h;
    for (size_t i = 0; i < n; i++) {
        float v = img[i];
        if (noise > 0) v += noise * (float)rng_normal(rng);
        if (salt > 0 && rng_uniform(rng) < salt) v = rng_uniform(rng) < 0.5 ? 0.0f : 1.0f;
        out[i] = (uint8_t)lrintf(clamp01(v) * 255.0f);
    }
}
