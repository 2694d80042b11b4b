/* PNG and JPEG files to 8-bit RGB (or L) pixels, as Pillow's Image.open(f).convert(mode) gives
 * them (SPEC §4). libpng and libjpeg report errors by longjmp; each decoder keeps the setjmp in a
 * small function of its own and all state it must clean up in a struct owned by its caller, so no
 * local variable is modified between setjmp and longjmp. */
#include "image/image.h"

#include <setjmp.h>
#include <stdio.h> /* before jpeglib.h, which uses FILE */
#include <stdlib.h>
#include <string.h>

#include <jerror.h>
#include <jpeglib.h>
#include <png.h>

#include "vit/base/file.h"

void image_free(image_u8 *img) {
    free(img->pixels);
    memset(img, 0, sizeof *img);
}

static int check_dimensions(const char *name, const char *format, long long width, long long height,
                            int64_t max_pixels, vit_error *err) {
    if (width <= 0 || height <= 0)
        return vit_fail(err, "%s: %s with a zero dimension (%lldx%lld)", name, format, width,
                        height);
    if (width * height > max_pixels)
        return vit_fail(err, "%s: %s of %lldx%lld pixels exceeds the limit of %lld pixels", name,
                        format, width, height, (long long)max_pixels);
    return 0;
}

/* Pillow's RGB -> L: L = (19595 R + 38470 G + 7471 B + 0x8000) >> 16. In place. The weights sum
 * to 65536, so grey replicated to RGB comes back unchanged. */
static void rgb_to_l(uint8_t *pixels, size_t count) {
    for (size_t i = 0; i < count; i++) {
        const uint8_t *p = pixels + 3 * i;
        pixels[i] = (uint8_t)((19595u * p[0] + 38470u * p[1] + 7471u * p[2] + 0x8000u) >> 16);
    }
}

/* Interleaved pixels of `from` channels (1 grey, 2 grey+alpha, 3 RGB, 4 RGBA) to RGB in place;
 * buf holds count * max(from, 3) bytes. Alpha is dropped, not composited (Pillow's convert). */
static void to_rgb_inplace(uint8_t *buf, size_t count, int from) {
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

/* ---- PNG ---- */

typedef struct {
    const uint8_t *data;
    size_t size, pos;
    char message[200];
    png_structp png;
    png_infop info;
    uint8_t *pixels;
    png_bytep *rows;
} png_state;

static void png_read_memory(png_structp png, png_bytep out, png_size_t n) {
    png_state *s = png_get_io_ptr(png);
    if (n > s->size - s->pos) png_error(png, "truncated PNG data");
    memcpy(out, s->data + s->pos, n);
    s->pos += n;
}

static void png_on_error(png_structp png, png_const_charp message) {
    png_state *s = png_get_error_ptr(png);
    snprintf(s->message, sizeof s->message, "%s", message);
    png_longjmp(png, 1);
}

/* Warnings (bad ancillary chunk CRCs, unknown chunks...) are not errors for Pillow either. */
static void png_on_warning(png_structp png, png_const_charp message) {
    (void)png;
    (void)message;
}

/* Runs libpng; on error returns -1 with s->message set. Allocations live in s. */
static int png_run(png_state *s, const char *name, int64_t max_pixels, image_u8 *out,
                   vit_error *err) {
    if (setjmp(png_jmpbuf(s->png))) return -1;
    png_set_read_fn(s->png, s, png_read_memory);
    png_read_info(s->png, s->info);
    png_uint_32 width, height;
    int depth, color, interlace;
    png_get_IHDR(s->png, s->info, &width, &height, &depth, &color, &interlace, NULL, NULL);
    if (check_dimensions(name, "PNG", width, height, max_pixels, err) != 0) {
        s->message[0] = 0; /* err already says why */
        return -1;
    }
    if (color == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(s->png);
    if (color == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(s->png);
    if (depth == 16) png_set_strip_16(s->png); /* keeps the high byte, as Pillow */
    png_set_interlace_handling(s->png);
    png_read_update_info(s->png, s->info);
    /* Palette transparency may or may not have become an alpha channel: ask, then drop it. */
    const int channels = png_get_channels(s->png, s->info);
    const size_t count = (size_t)width * height;
    if (png_get_rowbytes(s->png, s->info) != (size_t)width * channels) {
        snprintf(s->message, sizeof s->message, "unexpected row layout");
        return -1;
    }
    s->pixels = malloc(count * (size_t)(channels > 3 ? channels : 3));
    s->rows = malloc(sizeof *s->rows * height);
    if (!s->pixels || !s->rows) {
        snprintf(s->message, sizeof s->message, "out of memory for %ux%u pixels", width, height);
        return -1;
    }
    for (png_uint_32 y = 0; y < height; y++) s->rows[y] = s->pixels + (size_t)y * width * channels;
    png_read_image(s->png, s->rows);
    png_read_end(s->png, NULL);
    to_rgb_inplace(s->pixels, count, channels);
    out->width = (int)width;
    out->height = (int)height;
    return 0;
}

static int decode_png(const uint8_t *data, size_t size, const char *name, int64_t max_pixels,
                      image_u8 *out, vit_error *err) {
    png_state s = {.data = data, .size = size};
    s.png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &s, png_on_error, png_on_warning);
    if (s.png) s.info = png_create_info_struct(s.png);
    if (!s.png || !s.info) {
        png_destroy_read_struct(s.png ? &s.png : NULL, NULL, NULL);
        return vit_fail(err, "%s: out of memory", name);
    }
    int rc = png_run(&s, name, max_pixels, out, err);
    png_destroy_read_struct(&s.png, &s.info, NULL);
    free(s.rows);
    if (rc != 0) {
        free(s.pixels);
        if (s.message[0]) vit_fail(err, "%s: invalid PNG: %s", name, s.message);
        return -1;
    }
    out->pixels = s.pixels;
    return 0;
}

/* ---- JPEG ---- */

typedef struct {
    struct jpeg_error_mgr mgr;
    jmp_buf jump;
    char message[JMSG_LENGTH_MAX];
} jpeg_error;

static void jpeg_on_error(j_common_ptr cinfo) {
    jpeg_error *e = (jpeg_error *)cinfo->err;
    e->mgr.format_message(cinfo, e->message);
    longjmp(e->jump, 1);
}

/* libjpeg only warns at a premature end of data and pads the image with grey; Pillow refuses such
 * a file ("image file is truncated"), so that warning is an error here. Other warnings (extraneous
 * bytes before a marker...) are ignored, as Pillow ignores them. */
static void jpeg_on_message(j_common_ptr cinfo, int level) {
    jpeg_error *e = (jpeg_error *)cinfo->err;
    if (level < 0 && e->mgr.msg_code == JWRN_JPEG_EOF) {
        snprintf(e->message, sizeof e->message, "truncated JPEG data");
        longjmp(e->jump, 1);
    }
}

typedef struct {
    struct jpeg_decompress_struct cinfo;
    jpeg_error error;
    uint8_t *pixels;
} jpeg_state;

static int jpeg_run(jpeg_state *s, const uint8_t *data, size_t size, const char *name,
                    int64_t max_pixels, image_u8 *out, vit_error *err) {
    if (setjmp(s->error.jump)) return -1;
    jpeg_create_decompress(&s->cinfo);
    jpeg_mem_src(&s->cinfo, data, (unsigned long)size);
    jpeg_read_header(&s->cinfo, TRUE);
    const unsigned width = s->cinfo.image_width, height = s->cinfo.image_height;
    if (check_dimensions(name, "JPEG", width, height, max_pixels, err) != 0) return -1;
    J_COLOR_SPACE space = s->cinfo.jpeg_color_space;
    if (space == JCS_CMYK || space == JCS_YCCK)
        return vit_fail(err, "%s: CMYK JPEG is not supported; convert it to RGB first", name);
    const int channels = space == JCS_GRAYSCALE ? 1 : 3;
    s->cinfo.out_color_space = channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
    s->pixels = malloc((size_t)width * height * 3);
    if (!s->pixels) return vit_fail(err, "%s: out of memory for %ux%u pixels", name, width, height);
    jpeg_start_decompress(&s->cinfo);
    while (s->cinfo.output_scanline < height) {
        JSAMPROW row = s->pixels + (size_t)s->cinfo.output_scanline * width * channels;
        jpeg_read_scanlines(&s->cinfo, &row, 1);
    }
    jpeg_finish_decompress(&s->cinfo);
    to_rgb_inplace(s->pixels, (size_t)width * height, channels);
    out->width = (int)width;
    out->height = (int)height;
    return 0;
}

static int decode_jpeg(const uint8_t *data, size_t size, const char *name, int64_t max_pixels,
                       image_u8 *out, vit_error *err) {
    jpeg_state s;
    memset(&s, 0, sizeof s);
    s.cinfo.err = jpeg_std_error(&s.error.mgr);
    s.error.mgr.error_exit = jpeg_on_error;
    s.error.mgr.emit_message = jpeg_on_message;
    int rc = jpeg_run(&s, data, size, name, max_pixels, out, err);
    jpeg_destroy_decompress(&s.cinfo);
    if (rc != 0) {
        free(s.pixels);
        if (s.error.message[0]) vit_fail(err, "%s: invalid JPEG: %s", name, s.error.message);
        return -1;
    }
    out->pixels = s.pixels;
    return 0;
}

/* ---- dispatch ---- */

int image_decode_memory(const uint8_t *data, size_t size, const char *name, int channels,
                        int64_t max_pixels, image_u8 *out, vit_error *err) {
    static const uint8_t png_magic[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    static const uint8_t jpeg_magic[3] = {0xff, 0xd8, 0xff};
    memset(out, 0, sizeof *out);
    if (channels != 1 && channels != 3)
        return vit_fail(err, "%s: %d channels requested; supported: 1 (L), 3 (RGB)", name,
                        channels);
    if (max_pixels <= 0) max_pixels = IMAGE_DEFAULT_MAX_PIXELS;
    if (size == 0) return vit_fail(err, "%s: empty file", name);
    int rc;
    if (size >= sizeof png_magic && memcmp(data, png_magic, sizeof png_magic) == 0)
        rc = decode_png(data, size, name, max_pixels, out, err);
    else if (size >= sizeof jpeg_magic && memcmp(data, jpeg_magic, sizeof jpeg_magic) == 0)
        rc = decode_jpeg(data, size, name, max_pixels, out, err);
    else
        return vit_fail(err, "%s: not a PNG or JPEG file", name);
    if (rc != 0) return -1;
    out->channels = channels;
    if (channels == 1) rgb_to_l(out->pixels, (size_t)out->width * out->height);
    return 0;
}

int image_from_rgb(const uint8_t *rgb, int width, int height, const char *name, int channels,
                   int64_t max_pixels, image_u8 *out, vit_error *err) {
    memset(out, 0, sizeof *out);
    if (channels != 1 && channels != 3)
        return vit_fail(err, "%s: %d channels requested; supported: 1 (L), 3 (RGB)", name,
                        channels);
    if (max_pixels <= 0) max_pixels = IMAGE_DEFAULT_MAX_PIXELS;
    if (!rgb) return vit_fail(err, "%s: no pixels", name);
    if (check_dimensions(name, "RGB", width, height, max_pixels, err) != 0) return -1;
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

int image_decode_file(const char *path, int channels, int64_t max_pixels, image_u8 *out,
                      vit_error *err) {
    size_t size;
    uint8_t *data = (uint8_t *)vit_read_file(path, IMAGE_MAX_FILE_BYTES, &size, err);
    if (!data) {
        memset(out, 0, sizeof *out);
        return -1;
    }
    int rc = image_decode_memory(data, size, path, channels, max_pixels, out, err);
    free(data);
    return rc;
}
