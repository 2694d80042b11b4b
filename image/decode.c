/* Image files to 8-bit RGB (or L) pixels, as Pillow's Image.open(f).convert(mode) gives them
 * (docs/SPEC.md §4). The format comes from the file's first bytes, never from its name; each
 * format's decoder is in image/decode_FORMAT.c. Afterwards, on request, the pixels are turned
 * upright as the file's EXIF orientation says (image/exif.c). */
#include "image/image.h"

#include <stdlib.h>
#include <string.h>

#include "image/decode_internal.h"
#include "vit/base/file.h"

void image_free(image_u8 *img) {
    free(img->pixels);
    memset(img, 0, sizeof *img);
}

int decode_check_dimensions(const char *name, const char *format, long long width, long long height,
                            int64_t max_pixels, vit_error *err) {
    if (width <= 0 || height <= 0)
        return vit_fail(err, "%s: %s with a zero dimension (%lldx%lld)", name, format, width,
                        height);
    if (width > max_pixels / height) /* width·height > max_pixels, without overflow */
        return vit_fail(err, "%s: %s of %lldx%lld pixels exceeds the limit of %lld pixels", name,
                        format, width, height, (long long)max_pixels);
    return 0;
}

/* Pillow's RGB -> L: L = (19595 R + 38470 G + 7471 B + 0x8000) >> 16. In place. The weights sum
 * to 65536, so grey replicated to RGB comes back unchanged; Pillow's P, RGBA and LA -> L give the
 * same as going through RGB. */
static void rgb_to_l(uint8_t *pixels, size_t count) {
    for (size_t i = 0; i < count; i++) {
        const uint8_t *p = pixels + 3 * i;
        pixels[i] = (uint8_t)((19595u * p[0] + 38470u * p[1] + 7471u * p[2] + 0x8000u) >> 16);
    }
}

void decode_to_rgb_inplace(uint8_t *buf, size_t count, int from) {
    if (from == 1 || from == 2) {
        /* growing: walk backwards so no source pixel is overwritten before it is read */
        for (size_t i = count; i-- > 0;) {
            uint8_t v = buf[i * (size_t)from];
            buf[3 * i] = buf[3 * i + 1] = buf[3 * i + 2] = v;
        }
    } else if (from == 4) {
        for (size_t i = 0; i < count; i++) memmove(buf + 3 * i, buf + 4 * i, 3);
    }
}

void decode_palette_ramp(decode_palette *p) {
    for (int i = 0; i < 256; i++) p->rgb[i][0] = p->rgb[i][1] = p->rgb[i][2] = (uint8_t)i;
}

/* ---- dispatch ---- */

typedef int (*decoder)(const decode_source *, image_u8 *, decode_meta *, vit_error *);

/* The optional formats are compiled in with their libraries (make WEBP=0 TIFF=0 GIF=0 leaves
 * them out, as does a build without the package); their signatures are known either way. */
#ifdef VIT_WEBP
#define WEBP_DECODER decode_webp
#else
#define WEBP_DECODER NULL
#endif
#ifdef VIT_TIFF
#define TIFF_DECODER decode_tiff
#else
#define TIFF_DECODER NULL
#endif
#ifdef VIT_GIF
#define GIF_DECODER decode_gif
#else
#define GIF_DECODER NULL
#endif

static int is_png(const uint8_t *d, size_t n) {
    return n >= 8 && memcmp(d, "\x89PNG\r\n\x1a\n", 8) == 0;
}
static int is_jpeg(const uint8_t *d, size_t n) {
    return n >= 3 && memcmp(d, "\xff\xd8\xff", 3) == 0;
}
static int is_webp(const uint8_t *d, size_t n) {
    return n >= 12 && memcmp(d, "RIFF", 4) == 0 && memcmp(d + 8, "WEBP", 4) == 0;
}
static int is_tiff(const uint8_t *d, size_t n) {
    return n >= 4 && (memcmp(d, "II*\0", 4) == 0 || memcmp(d, "MM\0*", 4) == 0 ||
                      memcmp(d, "II+\0", 4) == 0 || memcmp(d, "MM\0+", 4) == 0);
}
static int is_gif(const uint8_t *d, size_t n) {
    return n >= 6 && (memcmp(d, "GIF87a", 6) == 0 || memcmp(d, "GIF89a", 6) == 0);
}
static int is_bmp(const uint8_t *d, size_t n) {
    return n >= 2 && memcmp(d, "BM", 2) == 0;
}

/* The formats by their first bytes (the signatures Pillow recognises), in the order tried. */
static const struct {
    const char *name;
    int (*matches)(const uint8_t *, size_t);
    decoder decode;      /* NULL: this build is without it */
    const char *package; /* the Debian package a build with it needs */
} formats[] = {
    {"PNG", is_png, decode_png, NULL},
    {"JPEG", is_jpeg, decode_jpeg, NULL},
    {"WebP", is_webp, WEBP_DECODER, "libwebp-dev"},
    {"TIFF", is_tiff, TIFF_DECODER, "libtiff-dev"},
    {"GIF", is_gif, GIF_DECODER, "libgif-dev"},
    {"BMP", is_bmp, decode_bmp, NULL},
};
enum { NUM_FORMATS = sizeof formats / sizeof formats[0] };

const char *image_format(int i, int *built_in) {
    if (i < 0 || i >= NUM_FORMATS) return NULL;
    if (built_in) *built_in = formats[i].decode != NULL;
    return formats[i].name;
}

/* The decoder for the file's first bytes; NULL with err set when the format is unknown or not
 * built in. */
static decoder find_decoder(const uint8_t *d, size_t n, const char *name, vit_error *err) {
    for (int i = 0; i < NUM_FORMATS; i++) {
        if (!formats[i].matches(d, n)) continue;
        if (!formats[i].decode)
            vit_fail(err,
                     "%s: a %s file, and this vit was built without %s support (rebuild it with "
                     "%s installed)",
                     name, formats[i].name, formats[i].name, formats[i].package);
        return formats[i].decode;
    }
    vit_fail(err, "%s: not a PNG, JPEG, WebP, TIFF, GIF or BMP file", name);
    return NULL;
}

static int check_channels(const char *name, int channels, vit_error *err) {
    if (channels == 1 || channels == 3) return 0;
    return vit_fail(err, "%s: %d channels requested; supported: 1 (L), 3 (RGB)", name, channels);
}

int image_decode_memory(const uint8_t *data, size_t size, const char *name, int channels,
                        int64_t max_pixels, int flags, image_u8 *out, vit_error *err) {
    memset(out, 0, sizeof *out);
    if (check_channels(name, channels, err) != 0) return -1;
    if (size == 0) return vit_fail(err, "%s: empty file", name);
    const decoder decode = find_decoder(data, size, name, err);
    if (!decode) return -1;
    const decode_source src = {.data = data,
                               .size = size,
                               .name = name,
                               .max_pixels = max_pixels > 0 ? max_pixels : IMAGE_DEFAULT_MAX_PIXELS,
                               .want_exif = (flags & IMAGE_EXIF_ORIENTATION) != 0};
    decode_meta meta = {.exif_orientation = 1, .orientation = 1};
    if (decode(&src, out, &meta, err) != 0) {
        memset(out, 0, sizeof *out);
        return -1;
    }
    out->channels = channels;
    if (channels == 1) rgb_to_l(out->pixels, (size_t)out->width * out->height);
    if (image_orient(out, meta.orientation, name, err) != 0 ||
        (src.want_exif && image_orient(out, meta.exif_orientation, name, err) != 0)) {
        image_free(out);
        return -1;
    }
    return 0;
}

int image_from_rgb(const uint8_t *rgb, int width, int height, const char *name, int channels,
                   int64_t max_pixels, image_u8 *out, vit_error *err) {
    memset(out, 0, sizeof *out);
    if (check_channels(name, channels, err) != 0) return -1;
    if (max_pixels <= 0) max_pixels = IMAGE_DEFAULT_MAX_PIXELS;
    if (!rgb) return vit_fail(err, "%s: no pixels", name);
    if (decode_check_dimensions(name, "RGB", width, height, max_pixels, err) != 0) return -1;
    const size_t count = (size_t)width * (size_t)height;
    if (!(out->pixels = malloc(count * 3)))
        return vit_fail(err, "%s: out of memory for %dx%d pixels", name, width, height);
    memcpy(out->pixels, rgb, count * 3);
    out->width = width;
    out->height = height;
    out->channels = channels;
    if (channels == 1) rgb_to_l(out->pixels, count);
    return 0;
}

int image_decode_file(const char *path, int channels, int64_t max_pixels, int flags, image_u8 *out,
                      vit_error *err) {
    size_t size;
    uint8_t *data = (uint8_t *)vit_read_file(path, IMAGE_MAX_FILE_BYTES, &size, err);
    if (!data) {
        memset(out, 0, sizeof *out);
        return -1;
    }
    int rc = image_decode_memory(data, size, path, channels, max_pixels, flags, out, err);
    free(data);
    return rc;
}
