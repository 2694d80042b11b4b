/* PNG to 8-bit RGB with libpng, as Pillow gives it (SPEC §4): every colour type and bit depth,
 * interlaced; alpha and palette transparency dropped; 16-bit samples keep their high byte. The
 * EXIF orientation comes from where Pillow's getexif looks (before or after the image data): the
 * eXIf chunk, else the hex "Raw profile type exif" text ImageMagick writes, and when neither has
 * the tag, tiff:Orientation in the XMP text (XML:com.adobe.xmp). libpng reports errors by
 * longjmp: the setjmp sits in a small function of its own and all state it must clean up lives in
 * a struct owned by its caller, so no local variable is modified between setjmp and longjmp. */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <png.h>

#include "image/decode_internal.h"

typedef struct {
    const decode_source *src;
    size_t pos;
    char message[200];
    png_structp png;
    png_infop info;
    uint8_t *pixels;
    png_bytep *rows;
} png_state;

static void png_read_memory(png_structp png, png_bytep out, png_size_t n) {
    png_state *s = png_get_io_ptr(png);
    if (n > s->src->size - s->pos) png_error(png, "truncated PNG data");
    memcpy(out, s->src->data + s->pos, n);
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

/* The last text chunk with this key, or NULL. */
static const png_text *find_text(png_state *s, const char *key) {
    png_textp text = NULL;
    const int n = png_get_text(s->png, s->info, &text, NULL);
    const png_text *found = NULL;
    for (int i = 0; i < n; i++)
        if (text[i].key && strcmp(text[i].key, key) == 0) found = &text[i];
    return found;
}

static int hex_digit(int c) {
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

/* ImageMagick's "Raw profile type exif": "\nexif\n   LENGTH\nHEX...", read as Pillow does (the
 * lines after the third joined, then bytes.fromhex: whitespace allowed between bytes). */
static int raw_profile_orientation(const png_text *t) {
    const char *p = t->text, *end = t->text + (t->itxt_length ? t->itxt_length : t->text_length);
    for (int lines = 0; lines < 3 && p < end; p++)
        if (*p == '\n') lines++;
    uint8_t *bytes = malloc((size_t)(end - p) / 2 + 1);
    size_t n = 0;
    int o = 0, bad = !bytes;
    while (!bad && p < end) {
        if (*p == '\n' || *p == ' ' || *p == '\t' || *p == '\r' || *p == '\v' || *p == '\f') {
            p++;
            continue;
        }
        const int hi = hex_digit(p[0]), lo = p + 1 < end ? hex_digit(p[1]) : -1;
        if (hi < 0 || lo < 0)
            bad = 1;
        else
            bytes[n++] = (uint8_t)(hi << 4 | lo), p += 2;
    }
    if (!bad) o = exif_orientation(bytes, n); /* Pillow fails on bad hex: no rotation here */
    free(bytes);
    return o;
}

/* The first tiff:Orientation="D" or tiff:Orientation>D in XMP text (Pillow's regular expression).
 */
static int xmp_orientation(const png_text *t) {
    static const char tag[] = "tiff:Orientation";
    const size_t len = t->itxt_length ? t->itxt_length : t->text_length;
    const char *p = t->text, *end = t->text + len;
    while ((p = memmem(p, (size_t)(end - p), tag, sizeof tag - 1))) {
        p += sizeof tag - 1;
        const char *d = end - p >= 2 && p[0] == '=' && p[1] == '"' ? p + 2
                        : p < end && *p == '>'                     ? p + 1
                                                                   : NULL;
        if (d && d < end && *d >= '0' && *d <= '9') return *d - '0';
    }
    return 0;
}

static void png_find_exif(png_state *s, decode_meta *meta) {
    png_uint_32 n = 0;
    png_bytep exif = NULL;
    const png_text *t;
    int o = 0;
    if (png_get_eXIf_1(s->png, s->info, &n, &exif) != 0 && exif)
        o = exif_orientation(exif, n);
    else if ((t = find_text(s, "Raw profile type exif")))
        o = raw_profile_orientation(t);
    if (o == 0 && (t = find_text(s, "XML:com.adobe.xmp"))) o = xmp_orientation(t);
    meta->exif_orientation = o;
}

/* Runs libpng; on error returns -1 with s->message set (or err already filled). Allocations live
 * in s. */
static int png_run(png_state *s, image_u8 *out, decode_meta *meta, vit_error *err) {
    if (setjmp(png_jmpbuf(s->png))) return -1;
    png_set_read_fn(s->png, s, png_read_memory);
    png_read_info(s->png, s->info);
    png_uint_32 width, height;
    int depth, color, interlace;
    png_get_IHDR(s->png, s->info, &width, &height, &depth, &color, &interlace, NULL, NULL);
    if (decode_check_dimensions(s->src->name, "PNG", width, height, s->src->max_pixels, err) != 0) {
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
    /* the chunks after the image data are kept only when an eXIf there matters */
    png_read_end(s->png, s->src->want_exif ? s->info : NULL);
    if (s->src->want_exif) png_find_exif(s, meta);
    decode_to_rgb_inplace(s->pixels, count, channels);
    out->width = (int)width;
    out->height = (int)height;
    return 0;
}

int decode_png(const decode_source *src, image_u8 *out, decode_meta *meta, vit_error *err) {
    png_state s = {.src = src};
    s.png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &s, png_on_error, png_on_warning);
    if (s.png) s.info = png_create_info_struct(s.png);
    if (!s.png || !s.info) {
        png_destroy_read_struct(s.png ? &s.png : NULL, NULL, NULL);
        return vit_fail(err, "%s: out of memory", src->name);
    }
    int rc = png_run(&s, out, meta, err);
    png_destroy_read_struct(&s.png, &s.info, NULL);
    free(s.rows);
    if (rc != 0) {
        free(s.pixels);
        if (s.message[0]) vit_fail(err, "%s: invalid PNG: %s", src->name, s.message);
        return -1;
    }
    out->pixels = s.pixels;
    return 0;
}
