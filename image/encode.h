#ifndef VIT_IMAGE_ENCODE_H
#define VIT_IMAGE_ENCODE_H

/* 8-bit pixels to JPEG (libjpeg-turbo, baseline, 4:2:0 for RGB), for pictures vit makes: the
 * compression of synthetic scans (vit/data/ocr_render.h). PNG is written by image_write_png
 * (image/draw.h). */

#include <stddef.h>
#include <stdint.h>

#include "image/image.h"

/* img (1 or 3 channels) as JPEG at quality 1..100 into *data (malloc'd, caller frees), *size
 * bytes. Returns 0, or -1 with err. */
int image_encode_jpeg(const image_u8 *img, int quality, uint8_t **data, size_t *size,
                      vit_error *err);

/* The same written to path; errors name it. */
int image_write_jpeg(const char *path, const image_u8 *img, int quality, vit_error *err);

#endif
