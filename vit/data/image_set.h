#ifndef VIT_TRAIN_DATA_H
#define VIT_TRAIN_DATA_H

/* Training images in memory: every image decoded and resized once (the model's evaluation
 * transform up to its 8-bit stage: resize, center crop), kept as uint8 [count, C, S, S]. A batch is
 * then made by augmenting those bytes (random crop with zero padding, random resized crop,
 * horizontal flip) and mapping them to floats through the transform's rescale + normalise, taken
 * as a 256-entry table per channel from preprocess_image itself so training sees exactly the
 * values evaluation does. */

#include <stddef.h>
#include <stdint.h>

#include "image/image.h"
#include "vit/base/error.h"

typedef struct {
    int count, C, H, W;
    int S;           /* H when square, else 0 (the augmentations need a square) */
    uint8_t *pixels; /* [count, C, H, W]; with grey, [count, H, W] */
    int *labels;     /* [count] */
    /* image_set_load_lines: an image whose C channels are equal is held once (a third of the
     * memory for grey lines in an RGB model), colour[i] [C, H, W] when they are not (else NULL) */
    int grey;
    uint8_t **colour;
} image_set;

void image_set_free(image_set *s);

/* Decodes paths[0..n) into out with pp's transform (any H x W), using the
 * OpenMP threads. labels[i] is copied. An undecodable image is an error naming its file.
 * progress (may be NULL) is called on the calling thread now and then with images done so far. */
typedef void (*image_set_progress_fn)(void *user, size_t done, size_t total);
int image_set_load(image_set *out, const preprocess_config *pp, char *const *paths,
                   const int *labels, size_t n, image_set_progress_fn progress, void *user,
                   vit_error *err);

/* The same for text lines (never augmented): each image whose channels are all equal after the
 * transform is held as one plane (memory: count·H·W bytes for grey lines, not C times that). */
int image_set_load_lines(image_set *out, const preprocess_config *pp, char *const *paths,
                         const int *labels, size_t n, image_set_progress_fn progress, void *user,
                         vit_error *err);

/* lut[c·256 + v]: the float pp's rescale + normalise give byte v of channel c (C·256 floats). */
int pixel_lut(const preprocess_config *pp, float *lut, vit_error *err);

typedef struct {
    int crop_pad;     /* > 0: random crop of S x S from the image zero-padded by crop_pad */
    int resized_crop; /* random resized crop: scale [rrc_min_scale, 1], ratio [3/4, 4/3] */
    float rrc_min_scale;
    int flip; /* horizontal flip with probability 1/2 */
} augment_options;

/* pixels [n, C, H, W] floats of images idx[0..n) of s, through lut. With aug non-NULL (a square
 * set only, not a grey one: callers check S > 0) each image
 * is augmented with draws from the counter-based generator seeded by (seed, i): the same seed
 * gives the same batch whatever the thread count. */
void image_set_batch(const image_set *s, const int *idx, int n, const float *lut,
                     const augment_options *aug, uint64_t seed, float *pixels);
/* The same for images first..first+n-1 of a batch split among processes: image i draws as the
 * whole batch's image first + i would. */
void image_set_batch_part(const image_set *s, const int *idx, int n, const float *lut,
                          const augment_options *aug, uint64_t seed, int first, float *pixels);

#endif
