#ifndef VIT_IMAGE_DECODE_INTERNAL_H
#define VIT_IMAGE_DECODE_INTERNAL_H

/* What the format decoders (image/decode_*.c) share with the dispatch in image/decode.c. Each
 * decoder turns one encoded file into 8-bit RGB, as Pillow's Image.open(f).convert("RGB") gives
 * it; the dispatch then converts to L when asked and turns the pixels upright. */

#include "image/image.h"

typedef struct {
    const uint8_t *data;
    size_t size;
    const char *name;   /* for errors: "NAME: ..." */
    int64_t max_pixels; /* > 0 */
    int want_exif;      /* look for the EXIF orientation (it is applied only on request) */
} decode_source;

typedef struct {
    /* The orientation in the file's EXIF metadata (2..8: a rotation or flip; anything else: none).
     * Applied only with IMAGE_EXIF_ORIENTATION, as Pillow's ImageOps.exif_transpose. */
    int exif_orientation;
    /* An orientation that is part of the pixels' layout: TIFF's Orientation tag, which Pillow
     * applies when it loads a TIFF. Always applied. */
    int orientation;
} decode_meta;

/* Each returns 0 with out->width, out->height and out->pixels (width·height RGB triples, malloc'd)
 * set, or -1 with err naming src->name and nothing allocated. WebP, TIFF and GIF are compiled in
 * with their libraries only (VIT_WEBP, VIT_TIFF, VIT_GIF; see image/decode.c). */
int decode_png(const decode_source *src, image_u8 *out, decode_meta *meta, vit_error *err);
int decode_jpeg(const decode_source *src, image_u8 *out, decode_meta *meta, vit_error *err);
int decode_webp(const decode_source *src, image_u8 *out, decode_meta *meta, vit_error *err);
int decode_tiff(const decode_source *src, image_u8 *out, decode_meta *meta, vit_error *err);
int decode_gif(const decode_source *src, image_u8 *out, decode_meta *meta, vit_error *err);
int decode_bmp(const decode_source *src, image_u8 *out, decode_meta *meta, vit_error *err);

/* An error unless 0 < width, height and width·height <= max_pixels; `format` names the format in
 * the message. Call before allocating the pixels. */
int decode_check_dimensions(const char *name, const char *format, long long width, long long height,
                            int64_t max_pixels, vit_error *err);

/* Interleaved pixels of `from` channels (1 grey, 2 grey+alpha, 3 RGB, 4 RGBA) to RGB in place;
 * buf holds count · max(from, 3) bytes. Alpha is dropped, not composited (Pillow's convert). */
void decode_to_rgb_inplace(uint8_t *buf, size_t count, int from);

/* A palette as Pillow holds one: 256 RGB entries, those the file gives first, the rest Pillow's
 * initial grey ramp (i, i, i), which is what an index beyond the file's palette shows. */
typedef struct {
    uint8_t rgb[256][3];
} decode_palette;
void decode_palette_ramp(decode_palette *p);

/* The orientation tag (274) of an EXIF block as Pillow's Image.getexif() reads it: `data` is a
 * TIFF structure, optionally after "Exif\0\0". Returns 2..8 for a rotation or flip; 1 when the tag
 * is there but says nothing Pillow acts on (1, 9, text...); 0 when the block has no readable tag
 * 274 or cannot be read at all (Pillow then does not rotate either). */
int exif_orientation(const uint8_t *data, size_t size);

/* Transposes img (1 or 3 channels) in place as Pillow's Image.transpose does for EXIF orientation
 * o (2..8; 1 and anything else leave it as it is). Only fails when out of memory. */
int image_orient(image_u8 *img, int o, const char *name, vit_error *err);

#endif
