/* EXIF orientation (tag 274) as Pillow 9.4 reads it and as ImageOps.exif_transpose applies it.
 *
 * Reading follows Image.Exif.load and ImageFileDirectory_v2.load: an optional "Exif\0\0" prefix,
 * an 8-byte TIFF header ("II*\0", "MM\0*", or the byte-swapped "II\0*", "MM*\0" Pillow also takes;
 * BigTIFF headers make Pillow fail, so they count as no orientation), then the first IFD's
 * entries in order until one cannot be read (Pillow stops there and keeps what it has). The last
 * readable entry of tag 274 wins. Its first value counts when it is a number Pillow's lookup
 * matches: integer types, whole rationals and floats; BYTE, ASCII and UNDEFINED values are byte
 * strings that match nothing. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "image/decode_internal.h"

#define TAG_ORIENTATION 274

static uint64_t get_uint(const uint8_t *p, int bytes, int big) {
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++) v = big ? v << 8 | p[i] : v | (uint64_t)p[i] << (8 * i);
    return v;
}

/* Bytes per value of each EXIF type Pillow reads (0: a type it skips): BYTE, ASCII, SHORT, LONG,
 * RATIONAL, SBYTE, UNDEFINED, SSHORT, SLONG, SRATIONAL, FLOAT, DOUBLE, IFD, and LONG8 (16). */
static int type_size(unsigned type) {
    static const int size[17] = {0, 1, 1, 2, 4, 8, 1, 1, 2, 4, 8, 4, 8, 4, 0, 0, 8};
    return type < 17 ? size[type] : 0;
}

/* The first value of an entry as the orientation it names, or 1. */
static int entry_value(unsigned type, const uint8_t *v, int big) {
    double x;
    switch (type) {
    case 3:
    case 4:
    case 13:
    case 16:
        x = (double)get_uint(v, type_size(type), big);
        break;
    case 6:
        x = (int8_t)v[0];
        break;
    case 8:
        x = (int16_t)get_uint(v, 2, big);
        break;
    case 9:
        x = (int32_t)get_uint(v, 4, big);
        break;
    case 5:
    case 10: {
        const uint64_t num = get_uint(v, 4, big), den = get_uint(v + 4, 4, big);
        const double n = type == 5 ? (double)num : (double)(int32_t)num;
        const double d = type == 5 ? (double)den : (double)(int32_t)den;
        if (d == 0) return 1;
        x = n / d; /* only whole values between 2 and 8 count below: exact in a double */
        if (x * d != n) return 1;
        break;
    }
    case 11: {
        const uint32_t bits = (uint32_t)get_uint(v, 4, big);
        float f;
        memcpy(&f, &bits, sizeof f);
        x = f;
        break;
    }
    case 12: {
        const uint64_t bits = get_uint(v, 8, big);
        memcpy(&x, &bits, sizeof x);
        break;
    }
    default:
        return 1; /* byte strings and text */
    }
    return x >= 2 && x <= 8 && x == floor(x) ? (int)x : 1;
}

int exif_orientation(const uint8_t *data, size_t size) {
    if (size >= 6 && memcmp(data, "Exif\0\0", 6) == 0) data += 6, size -= 6;
    if (size < 8) return 0;
    int big;
    if (memcmp(data, "MM\0*", 4) == 0 || memcmp(data, "MM*\0", 4) == 0)
        big = 1;
    else if (memcmp(data, "II*\0", 4) == 0 || memcmp(data, "II\0*", 4) == 0)
        big = 0;
    else
        return 0;
    const uint64_t ifd = get_uint(data + 4, 4, big);
    if (ifd > size || size - ifd < 2) return 0;
    const unsigned count = (unsigned)get_uint(data + ifd, 2, big);
    unsigned found_type = 0;
    const uint8_t *found = NULL;
    for (unsigned i = 0; i < count; i++) {
        const uint64_t at = ifd + 2 + 12 * (uint64_t)i;
        if (at + 12 > size) break; /* a short entry ends the directory */
        const uint8_t *e = data + at;
        const unsigned tag = (unsigned)get_uint(e, 2, big),
                       type = (unsigned)get_uint(e + 2, 2, big);
        const int unit = type_size(type);
        if (unit == 0) continue;
        const uint64_t bytes = get_uint(e + 4, 4, big) * (uint64_t)unit;
        const uint8_t *value = e + 8;
        if (bytes > 4) {
            const uint64_t offset = get_uint(e + 8, 4, big);
            if (offset > size || size - offset < bytes) break; /* Pillow's short read ends it */
            value = data + offset;
        }
        if (bytes == 0) continue;
        if (tag == TAG_ORIENTATION) found_type = type, found = value;
    }
    return found ? entry_value(found_type, found, big) : 0;
}

/* ---- transposing ---- */

/* Output pixel (r, c) of an image transposed for orientation o is input pixel start + r·row_step +
 * c·col_step (in pixels; w, h the input's size). */
static void orient_steps(int o, long w, long h, long *start, long *row_step, long *col_step) {
    switch (o) {
    case 2:
        *start = w - 1, *row_step = w, *col_step = -1;
        break; /* FLIP_LEFT_RIGHT */
    case 3:
        *start = h * w - 1, *row_step = -w, *col_step = -1;
        break; /* ROTATE_180 */
    case 4:
        *start = (h - 1) * w, *row_step = -w, *col_step = 1;
        break; /* FLIP_TOP_BOTTOM */
    case 5:
        *start = 0, *row_step = 1, *col_step = w;
        break; /* TRANSPOSE */
    case 6:
        *start = (h - 1) * w, *row_step = 1, *col_step = -w;
        break; /* ROTATE_270 */
    case 7:
        *start = h * w - 1, *row_step = -1, *col_step = -w;
        break; /* TRANSVERSE */
    default:
        *start = w - 1, *row_step = -1, *col_step = w;
        break; /* 8: ROTATE_90 */
    }
}

int image_orient(image_u8 *img, int o, const char *name, vit_error *err) {
    if (o < 2 || o > 8) return 0;
    const int C = img->channels, swap = o >= 5;
    const long w = img->width, h = img->height;
    const long ow = swap ? h : w, oh = swap ? w : h;
    uint8_t *out = malloc((size_t)w * h * C);
    if (!out) return vit_fail(err, "%s: out of memory for %ldx%ld pixels", name, w, h);
    long start, row_step, col_step;
    orient_steps(o, w, h, &start, &row_step, &col_step);
    for (long r = 0; r < oh; r++) {
        const uint8_t *in = img->pixels + (start + r * row_step) * C;
        uint8_t *dst = out + r * ow * C;
        if (C == 1)
            for (long c = 0; c < ow; c++) dst[c] = in[c * col_step];
        else
            for (long c = 0; c < ow; c++) memcpy(dst + 3 * c, in + c * col_step * 3, 3);
    }
    free(img->pixels);
    img->pixels = out;
    img->width = (int)ow;
    img->height = (int)oh;
    return 0;
}
