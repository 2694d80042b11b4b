#ifndef VIT_IMAGE_DRAW_H
#define VIT_IMAGE_DRAW_H

/* Pictures vit draws from what a model computed: a heat map blended over the image it came from,
 * a legend strip with a line of text and the colour scale, written as PNG (libpng). RGB only. */

#include <stdint.h>

#include "image/image.h"

/* The colour of a heat value in [0, 1] (matplotlib's "inferno": black, purple, red, yellow). */
void heat_colour(float v, uint8_t rgb[3]);

/* Blends map [grid_h, grid_w] (one value per patch of the model's input) over rgb, a picture of
 * width x height showing the whole original image: the map is placed through the preprocessing
 * geometry g (of the original image, orig_w x orig_h) and interpolated bilinearly between patch
 * centres; values are scaled from the smallest to the 95th percentile onto 0..1. Pixels the model
 * never saw (outside the crop) are darkened instead. */
void draw_heat_overlay(image_u8 *rgb, int orig_w, int orig_h, const preprocess_geometry *g,
                       const float *map, int grid_h, int grid_w, float alpha);

/* An RGB picture of width x height + strip rows: img's pixels copied to the top, the strip below
 * filled dark. */
int draw_add_strip(const image_u8 *img, int strip, image_u8 *out, vit_error *err);

/* The colour scale, low to high, in the rectangle (x, y, w, h). */
void draw_colour_bar(image_u8 *img, int x, int y, int w, int h);

/* Text in the 5x7 font at (x, y), each font pixel scale x scale, cut at the right edge. Returns
 * the x after the last character. */
int draw_text(image_u8 *img, int x, int y, int scale, const char *text, const uint8_t rgb[3]);

/* Nearest-neighbour scaling (for small tiles of a picture). */
int draw_scale_nearest(const image_u8 *src, int width, int height, image_u8 *out, vit_error *err);

/* Writes an RGB (or grey) picture as PNG, atomically (vit/base/file.h: PATH.tmp renamed into
 * place, so it joins an open atomic_group); errors name the path. */
int image_write_png(const char *path, const image_u8 *img, vit_error *err);

#endif
