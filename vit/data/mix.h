#ifndef VIT_DATA_MIX_H
#define VIT_DATA_MIX_H

/* Mixup (Zhang et al., 2018) and CutMix (Yun et al., 2019) over a training batch, as timm's Mixup
 * in its batch mode: one draw per batch, image b of a batch of B mixed with image B-1-b (the batch
 * reversed), its target λ of its own label and 1 - λ of its partner's.
 *   Mixup:  pixels = λ·own + (1-λ)·partner, λ ~ Beta(α, α).
 *   CutMix: a box of about (1-λ) of the area, centred anywhere and clipped to the image, taken
 *           from the partner; λ is then 1 - the box's share of the area.
 * With both on, each batch takes one of them with chance 1/2. */

#include <stdint.h>

typedef struct {
    float mixup_alpha, cutmix_alpha; /* Beta(α, α) of λ; 0: that kind off */
} mix_options;

typedef struct {
    int active;         /* 0: the batch stays as it is (both kinds off) */
    int cut;            /* 1: CutMix, 0: Mixup */
    int y0, y1, x0, x1; /* CutMix's box: rows y0..y1-1, columns x0..x1-1 (may be empty) */
    float lambda;       /* the share of each image's own label in its target */
} mix_draw;

/* This batch's draw for S x S images, from *state. */
void mix_draw_batch(const mix_options *o, int S, uint64_t *state, mix_draw *d);

/* image [C, S, S] mixed with partner [C, S, S] as d says. */
void mix_apply(float *image, const float *partner, int C, int S, const mix_draw *d);

#endif
