#ifndef VIT_DATA_OCR_EFFECTS_H
#define VIT_DATA_OCR_EFFECTS_H

/* What a scan or a photo does to printed text, on a grey canvas of floats in 0..1 (0 black): the
 * second half of vit/data/ocr_render.h, which draws these settings per line and applies them. */

#include <stdint.h>

#define OCR_MAX_SPOTS 3

typedef struct {
    float paper, ink; /* grey levels of the page and of the print */
    /* lighting: the page's level times 1 + gradient · t, t running from -1/2 to 1/2 across the
     * canvas in direction gradient_angle (radians, 0: left to right) */
    float gradient, gradient_angle;
    /* stains and shadows: spots[i] adds amplitude · exp(-d² / 2r²) at (x, y), pixels */
    int spots;
    float spot_x[OCR_MAX_SPOTS], spot_y[OCR_MAX_SPOTS], spot_r[OCR_MAX_SPOTS],
        spot_amp[OCR_MAX_SPOTS];
    float gamma; /* ink coverage c becomes c^gamma: below 1 bolder strokes, above 1 fainter */
    float blur;  /* Gaussian sigma, pixels (0: none) */
    float scale; /* < 1: the resolution lost to that scale and back (bilinear, antialiased) */
    float noise; /* Gaussian sigma (0..1 units) added per pixel */
    float salt;  /* share of pixels set to black or white */
} ocr_effects;

/* The effects of a clean line: white paper, black ink, nothing else. */
ocr_effects ocr_effects_none(void);

/* The least difference between the page's level and the ink's, wherever lighting and stains
 * take the page: the print stays legible. */
#define OCR_MIN_CONTRAST 0.2f

/* The page with the print on it: coverage [h, w] (0..1, how much of each pixel the glyphs cover)
 * composited as paper · (1 - c^gamma) + ink · c^gamma into out [h, w], the paper's level lit and
 * stained as e says (and kept OCR_MIN_CONTRAST above the ink's). */
void ocr_compose(const float *coverage, int w, int h, const ocr_effects *e, float *out);

/* Separable Gaussian blur of img [h, w] in place (edges repeated), sigma in pixels; tmp holds
 * w · h floats. sigma <= 0 leaves img as it is. */
void ocr_blur(float *img, int w, int h, float sigma, float *tmp);

/* Resamples src [h, w] to dst [dh, dw] with a triangle filter widened by the reduction (Pillow's
 * bilinear resize with antialiasing); tmp holds dw · h floats. */
void ocr_resample(const float *src, int w, int h, float *dst, int dw, int dh, float *tmp);

/* Gaussian noise of sigma and salt and pepper of share salt, drawn from *rng, then clamped to
 * 0..1 and rounded to 8-bit grey levels into out. */
void ocr_finish(const float *img, int w, int h, float noise, float salt, uint64_t *rng,
                uint8_t *out);

#endif
