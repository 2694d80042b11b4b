/* PNG to 8-bit RGB with libpng, as Pillow gives it (docs/SPEC.md §4): every colour type and bit
 * depth, interlaced; alpha and palette transparency dropped; 16-bit samples keep their high byte.
 * The EXIF orientation comes from where Pillow's getexif looks (before or after the image data):
 * the eXIf chunk, else the hex "Raw profile type exif" text ImageMagick writes, and when neither
 * has the tag, tiff:Orientation in the XMP text (XML:com.adobe.xmp). libpng reports errors by
 * longjmp: the setjmp sits in a small function of its own and all state it must clean up lives in
 * a struct owned by its caller, so no local variable is modified between setjmp and longjmp. */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <png.h>

#include "image/decode_internal.h"

#define TRUNCATED "truncated PNG data"

typedef struct {
    const decode_source *src;
    size_t pos;
    char message[200];
    png_structp png;
    png_infop info;
    uint8_t *pixels;
    png_bytep *rows;
    png_uint_32 width, height;
    int channels;
    int complete; /* every row decoded: what is missing after that does not matter (Pillow) */
    int repaired; /* decoding repair_truncated's copy of a file cut short */
} png_state;

static void png_read_memory(png_structp png, png_bytep out, png_size_t n) {
    png_state *s = png_get_io_ptr(png);
    if (n > s->src->size - s->pos) png_error(png, TRUNCATED);
    memcpy(out, s->src->data + s->pos, n);
    s->pos += n;
}

/* Past the last row (of the last pass, interlaced): libpng has handed over every row and only
 * checks the end of the zlib stream, the chunk CRC and IEND. */
static int past_last_row(png_structp png, const png_state *s) {
    const png_uint_32 row = png_get_current_row_number(png);
    const int pass = png_get_current_pass_number(png);
    return s->rows && row != PNG_UINT_32_MAX && (pass >= 7 || (pass == 0 && row >= s->height));
}

static void png_on_error(png_structp png, png_const_charp message) {
    png_state *s = png_get_error_ptr(png);
    snprintf(s->message, sizeof s->message, "%s", message);
    /* the file ends after the last row (a CRC error there is still an error, as in Pillow) */
    if (past_last_row(png, s) && (s->repaired || strcmp(message, TRUNCATED) == 0)) s->complete = 1;
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

/* Runs libpng: 0 when the file was read to its end, 1 when it ends early but after the last row
 * (Pillow decodes such a file: it stops once it has the pixels, so a missing IEND, chunk CRC or
 * zlib checksum does not matter), -1 on error with s->message set (or err already filled).
 * Allocations live in s. */
static int png_run(png_state *s, decode_meta *meta, vit_error *err) {
    if (setjmp(png_jmpbuf(s->png))) return s->complete ? 1 : -1;
    png_set_read_fn(s->png, s, png_read_memory);
    png_read_info(s->png, s->info);
    int depth, color, interlace;
    png_get_IHDR(s->png, s->info, &s->width, &s->height, &depth, &color, &interlace, NULL, NULL);
    if (decode_check_dimensions(s->src->name, "PNG", s->width, s->height, s->src->max_pixels,
                                err) != 0) {
        s->message[0] = 0; /* err already says why */
        return -1;
    }
    if (color == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(s->png);
    if (color == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(s->png);
    if (depth == 16) png_set_strip_16(s->png); /* keeps the high byte, as Pillow */
    png_set_interlace_handling(s->png);
    png_read_update_info(s->png, s->info);
    /* Palette transparency may or may not have become an alpha channel: ask, then drop it. */
    s->channels = png_get_channels(s->png, s->info);
    const size_t count = (size_t)s->width * s->height;
    if (png_get_rowbytes(s->png, s->info) != (size_t)s->width * s->channels) {
        snprintf(s->message, sizeof s->message, "unexpected row layout");
        return -1;
    }
    s->pixels = malloc(count * (size_t)(s->channels > 3 ? s->channels : 3));
    s->rows = malloc(sizeof *s->rows * s->height);
    if (!s->pixels || !s->rows) {
        snprintf(s->message, sizeof s->message, "out of memory for %ux%u pixels", s->width,
                 s->height);
        return -1;
    }
    for (png_uint_32 y = 0; y < s->height; y++)
        s->rows[y] = s->pixels + (size_t)y * s->width * s->channels;
    png_read_image(s->png, s->rows);
    s->complete = 1;
    /* the chunks after the image data are kept only when an eXIf there matters */
    png_read_end(s->png, s->src->want_exif ? s->info : NULL);
    if (s->src->want_exif) png_find_exif(s, meta);
    return 0;
}

/* One libpng run over src into s (see png_run); repaired: CRCs are not checked (the repair's
 * shortened chunk has none). */
static int png_decode_once(png_state *s, const decode_source *src, int repaired, decode_meta *meta,
                           vit_error *err) {
    *s = (png_state){.src = src, .repaired = repaired};
    s->png = png_create_read_struct(PNG_LIBPNG_VER_STRING, s, png_on_error, png_on_warning);
    if (s->png) s->info = png_create_info_struct(s->png);
    if (!s->png || !s->info) {
        png_destroy_read_struct(s->png ? &s->png : NULL, NULL, NULL);
        snprintf(s->message, sizeof s->message, "out of memory");
        return -1;
    }
    if (repaired) png_set_crc_action(s->png, PNG_CRC_QUIET_USE, PNG_CRC_QUIET_USE);
    const int rc = png_run(s, meta, err);
    if (rc == 1 && src->want_exif) png_find_exif(s, meta); /* what came before the end */
    png_destroy_read_struct(&s->png, &s->info, NULL);
    free(s->rows);
    s->rows = NULL;
    if (rc < 0) {
        free(s->pixels);
        s->pixels = NULL;
    }
    return rc;
}

static uint32_t be32(const uint8_t *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* A file cut short, as Pillow reads it: the chunks that are whole, the image data of a cut IDAT
 * chunk as far as it goes (its length made to say so), then IEND. NULL when the file is not cut
 * inside or after its image data (nothing to repair) or out of memory. */
static uint8_t *repair_truncated(const uint8_t *data, size_t size, size_t *out_size) {
    uint8_t *out = malloc(size + 16); /* a cut chunk gains its 4 CRC bytes, then IEND: 12 */
    if (!out || size < 8) return free(out), NULL;
    memcpy(out, data, 8);
    size_t at = 8, n = 8;
    while (at + 8 <= size) {
        const uint32_t len = be32(data + at);
        const int idat = memcmp(data + at + 4, "IDAT", 4) == 0;
        if (len > size - at - 8 || size - at - 8 - len < 4) { /* this chunk is cut */
            if (!idat) break;
            const size_t have = size - at - 8 < len ? size - at - 8 : len;
            memcpy(out + n, data + at, 8);
            out[n] = (uint8_t)(have >> 24), out[n + 1] = (uint8_t)(have >> 16);
            out[n + 2] = (uint8_t)(have >> 8), out[n + 3] = (uint8_t)have;
            memcpy(out + n + 8, data + at + 8, have);
            memset(out + n + 8 + have, 0, 4); /* no CRC: not checked in the repaired run */
            n += 12 + have;
            break;
        }
        memcpy(out + n, data + at, 12 + (size_t)len);
        n += 12 + (size_t)len;
        at += 12 + (size_t)len;
        if (memcmp(data + at - len - 8, "IEND", 4) == 0) return free(out), NULL; /* not cut */
    }
    static const uint8_t iend[12] = {0, 0, 0, 0, 'I', 'E', 'N', 'D', 0xae, 0x42, 0x60, 0x82};
    memcpy(out + n, iend, 12);
    *out_size = n + 12;
    return out;
}

int decode_png(const decode_source *src, image_u8 *out, decode_meta *meta, vit_error *err) {
    png_state s;
    int rc = png_decode_once(&s, src, 0, meta, err);
    if (rc < 0 && strcmp(s.message, TRUNCATED) == 0) {
        /* Pillow decodes a cut file when the image data it holds covers every row: so does vit
         * (a file cut inside its image data still fails, as "Not enough image data") */
        size_t size = 0;
        uint8_t *fixed = repair_truncated(src->data, src->size, &size);
        if (fixed) {
            decode_source again = *src;
            again.data = fixed, again.size = size;
            png_state t;
            if (png_decode_once(&t, &again, 1, meta, err) >= 0) s = t, rc = 1;
            free(fixed);
        }
    }
    if (rc < 0) {
        if (s.message[0]) vit_fail(err, "%s: invalid PNG: %s", src->name, s.message);
        return -1;
    }
    decode_to_rgb_inplace(s.pixels, (size_t)s.width * s.height, s.channels);
    out->width = (int)s.width;
    out->height = (int)s.height;
    out->pixels = s.pixels;
    return 0;
}
