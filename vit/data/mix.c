#include "vit/data/mix.h"

#include <math.h>
#include <string.h>

#include "vit/base/rng.h"

static int clamp(int v, int lo, int hi) {
    return v < lo ? lo : v > hi ? hi : v;
}

void mix_draw_batch(const mix_options *o, int S, uint64_t *state, mix_draw *d) {
    memset(d, 0, sizeof *d);
    d->lambda = 1.0f;
    const int mixup = o->mixup_alpha > 0.0f, cutmix = o->cutmix_alpha > 0.0f;
    if (!mixup && !cutmix) return;
    d->active = 1;
    d->cut = cutmix && (!mixup || rng_uniform(state) < 0.5);
    const double alpha = d->cut ? o->cutmix_alpha : o->mixup_alpha;
    const double lambda = rng_beta(state, alpha, alpha);
    if (!d->cut) {
        d->lambda = (float)lambda;
        return;
    }
    /* timm's rand_bbox: sides √(1-λ)·S, the centre uniform over the image, clipped */
    const int side = (int)(S * sqrt(1.0 - lambda));
    const int cy = rng_int(state, 0, S - 1), cx = rng_int(state, 0, S - 1);
    d->y0 = clamp(cy - side / 2, 0, S), d->y1 = clamp(cy + side / 2, 0, S);
    d->x0 = clamp(cx - side / 2, 0, S), d->x1 = clamp(cx + side / 2, 0, S);
    d->lambda = (float)(1.0 - (double)(d->y1 - d->y0) * (d->x1 - d->x0) / ((double)S * S));
}

void mix_apply(float *image, const float *partner, int C, int S, const mix_draw *d) {
    if (!d->active) return;
    const size_t plane = (size_t)S * S, count = (size_t)C * plane;
    if (!d->cut) {
        const float a = d->lambda, b = 1.0f - d->lambda;
        for (size_t i = 0; i < count; i++) image[i] = a * image[i] + b * partner[i];
        return;
    }
    const int width = d->x1 - d->x0;
    if (width <= 0) return;
    for (size_t p = 0; p < (size_t)C; p++)
        for (int y = d->y0; y < d->y1; y++) {
            const size_t at = p * plane + (size_t)y * S + d->x0;
            memcpy(image + at, partner + at, (size_t)width * sizeof(float));
        }
}
