/* BMP to 8-bit RGB, a strict reader of the uncompressed layouts Pillow 9.4 reads (its
 * BmpImagePlugin, rule for rule): core (12-byte), info (40), OS/2 v2 (64), v4 (108) and v5 (124)
 * headers; 1-, 4- and 8-bit palettes (an index beyond the palette shows Pillow's grey ramp); 16-bit
 * 5-5-5 and, with BI_BITFIELDS, 5-6-5; 24-bit; 32-bit with the byte orders Pillow's bitfield table
 * allows, alpha dropped. Rows bottom-up, or top-down for a negative height. RLE and other
 * compressions are refused.
 *
 * One deliberate difference: for a palette that is all grey (entry i = (i, i, i), or black and
 * white for two colours) Pillow 9.4 drops the palette and reads the data as 8-bit grey ("L") or
 * 1-bit ("1") whatever the file's bit depth, which misreads 1-bit files with such a palette of
 * other than two colours, 4-bit files, and 8-bit files with a two-colour black and white palette.
 * Here the palette is always applied: the same pixels wherever Pillow reads the file correctly. */
#include <stdlib.h>
#include <string.h>

#include "image/decode_internal.h"

enum { BI_RGB = 0, BI_RLE8 = 1, BI_RLE4 = 2, BI_BITFIELDS = 3 };

static uint32_t u16le(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8;
}
static uint32_t u32le(const uint8_t *p) {
    return u16le(p) | u16le(p + 2) << 16;
}

typedef enum { PALETTE, RGB555, RGB565, BYTES } bmp_kind;

typedef struct {
    uint32_t width, height, bits, compression, colors, offset, header_size;
    int top_down;
    size_t pos; /* where the palette starts */
    bmp_kind kind;
    int r, g, b; /* BYTES: each colour's byte within a pixel */
    uint32_t masks[4];
    int has_alpha_mask;
} bmp_info;

/* The header fields (14-byte file header, then the DIB header). */
static int read_header(const decode_source *src, bmp_info *h, vit_error *err) {
    const uint8_t *d = src->data;
    if (src->size < 18) return vit_fail(err, "%s: invalid BMP: truncated BMP header", src->name);
    h->offset = u32le(d + 10);
    h->header_size = u32le(d + 14);
    const uint32_t hs = h->header_size;
    if (hs != 12 && hs != 40 && hs != 64 && hs != 108 && hs != 124)
        return vit_fail(err, "%s: unsupported BMP header size %u", src->name, hs);
    if (src->size < 14 + (size_t)hs)
        return vit_fail(err, "%s: invalid BMP: truncated BMP header", src->name);
    const uint8_t *p = d + 18;
    h->pos = 14 + (size_t)hs;
    if (hs == 12) {
        h->width = u16le(p), h->height = u16le(p + 2), h->bits = u16le(p + 6);
        h->compression = BI_RGB;
        return 0;
    }
    h->top_down = p[7] == 0xff; /* a negative height, as Pillow tells it */
    h->width = u32le(p);
    h->height = h->top_down ? (uint32_t)(0u - u32le(p + 4)) : u32le(p + 4);
    h->bits = u16le(p + 10);
    h->compression = u32le(p + 12);
    h->colors = u32le(p + 28);
    if (h->compression != BI_BITFIELDS) return 0;
    if (hs >= 56) { /* the masks are in the header */
        for (int i = 0; i < 4; i++) h->masks[i] = u32le(p + 36 + 4 * i);
        h->has_alpha_mask = 1;
        return 0;
    }
    if (src->size < h->pos + 12) /* a 40-byte header: three masks follow it */
        return vit_fail(err, "%s: invalid BMP: truncated BMP header", src->name);
    for (int i = 0; i < 3; i++) h->masks[i] = u32le(d + h->pos + 4 * i);
    h->pos += 12;
    return 0;
}

static void set_bytes(bmp_info *h, int r, int g, int b) {
    h->kind = BYTES, h->r = r, h->g = g, h->b = b;
}

/* The pixel layout for bits and compression (Pillow's BIT2MODE and bitfield table). */
static int choose_layout(const decode_source *src, bmp_info *h, vit_error *err) {
    const uint32_t bits = h->bits, *m = h->masks;
    if (bits != 1 && bits != 4 && bits != 8 && bits != 16 && bits != 24 && bits != 32)
        return vit_fail(err, "%s: unsupported BMP bit depth %u", src->name, bits);
    if (h->compression == BI_RLE8 || h->compression == BI_RLE4)
        return vit_fail(err, "%s: RLE-compressed BMP is not supported", src->name);
    if (h->compression == BI_RGB) {
        if (bits <= 8)
            h->kind = PALETTE;
        else if (bits == 16)
            h->kind = RGB555;
        else
            set_bytes(h, 2, 1, 0); /* BGR, BGRX */
        return 0;
    }
    if (h->compression != BI_BITFIELDS)
        return vit_fail(err, "%s: unsupported BMP compression %u", src->name, h->compression);
    const uint32_t a = m[3];
    if (bits == 32 && m[0] == 0xff0000 && m[1] == 0xff00 && m[2] == 0xff &&
        (a == 0 || a == 0xff000000u))
        set_bytes(h, 2, 1, 0); /* BGRX, BGRA */
    else if (bits == 32 && m[0] == 0xff000000u && m[1] == 0xff0000 && m[2] == 0xff00 &&
             (a == 0 || a == 0xff))
        set_bytes(h, 3, 2, 1); /* XBGR, ABGR */
    else if (bits == 32 && m[0] == 0xff && m[1] == 0xff00 && m[2] == 0xff0000 && a == 0xff000000u)
        set_bytes(h, 0, 1, 2); /* RGBA */
    else if (bits == 32 && m[0] == 0 && m[1] == 0 && m[2] == 0 && a == 0)
        set_bytes(h, 2, 1, 0); /* all-zero masks: Pillow reads BGRA */
    else if (bits == 24 && m[0] == 0xff0000 && m[1] == 0xff00 && m[2] == 0xff)
        set_bytes(h, 2, 1, 0);
    else if (bits == 16 && m[0] == 0xf800 && m[1] == 0x7e0 && m[2] == 0x1f)
        h->kind = RGB565;
    else if (bits == 16 && m[0] == 0x7c00 && m[1] == 0x3e0 && m[2] == 0x1f)
        h->kind = RGB555;
    else
        return vit_fail(err, "%s: unsupported BMP bitfields layout", src->name);
    return 0;
}

/* The palette (BGR or BGRX entries after the header) over Pillow's grey ramp. Like Pillow, it
 * takes the bytes there are: a palette said to be longer than the file (a core header's always
 * counts 2^bits entries) ends where the file does, or overlaps the pixel data. */
static int read_palette(const decode_source *src, const bmp_info *h, decode_palette *pal,
                        vit_error *err) {
    uint32_t colors = h->colors ? h->colors : 1u << h->bits;
    if (colors > 256)
        return vit_fail(err, "%s: unsupported BMP palette of %u colours", src->name, colors);
    const size_t entry = h->header_size == 12 ? 3 : 4;
    if (src->size < h->pos + entry * colors) colors = (uint32_t)((src->size - h->pos) / entry);
    decode_palette_ramp(pal);
    for (uint32_t i = 0; i < colors; i++) {
        const uint8_t *e = src->data + h->pos + entry * i;
        pal->rgb[i][0] = e[2], pal->rgb[i][1] = e[1], pal->rgb[i][2] = e[0];
    }
    return 0;
}

/* One file row of `width` pixels to RGB. */
static void unpack_row(const bmp_info *h, const decode_palette *pal, const uint8_t *in,
                       uint8_t *out) {
    const uint32_t w = h->width, bits = h->bits;
    for (uint32_t x = 0; x < w; x++, out += 3) {
        if (h->kind == PALETTE) {
            const uint32_t bit = x * bits, shift = 8 - bits - bit % 8;
            const unsigned i = (in[bit / 8] >> shift) & ((1u << bits) - 1);
            memcpy(out, pal->rgb[i], 3);
        } else if (h->kind == RGB555 || h->kind == RGB565) {
            const uint32_t v = u16le(in + 2 * x), g6 = h->kind == RGB565;
            out[0] = (uint8_t)(((v >> (g6 ? 11 : 10)) & 31) * 255 / 31);
            out[1] = (uint8_t)(g6 ? ((v >> 5) & 63) * 255 / 63 : ((v >> 5) & 31) * 255 / 31);
            out[2] = (uint8_t)((v & 31) * 255 / 31);
        } else {
            const uint8_t *p = in + (size_t)x * (bits / 8);
            out[0] = p[h->r], out[1] = p[h->g], out[2] = p[h->b];
        }
    }
}

int decode_bmp(const decode_source *src, image_u8 *out, decode_meta *meta, vit_error *err) {
    (void)meta; /* no EXIF in BMP */
    bmp_info h = {0};
    if (read_header(src, &h, err) != 0 || choose_layout(src, &h, err) != 0) return -1;
    if (decode_check_dimensions(src->name, "BMP", h.width, h.height, src->max_pixels, err) != 0)
        return -1;
    decode_palette pal;
    if (h.kind == PALETTE && read_palette(src, &h, &pal, err) != 0) return -1;
    uint64_t offset = h.offset;
    if (offset == 14 + (uint64_t)h.header_size && h.bits <= 8) /* palette not counted: Pillow */
        offset += 4 * (uint64_t)(h.colors ? h.colors : 1u << h.bits);
    /* rows padded to 4 bytes; Pillow does not need the last row's padding */
    const uint64_t stride = (((uint64_t)h.width * h.bits + 31) >> 3) & ~(uint64_t)3;
    const uint64_t need = offset + stride * (h.height - 1) + ((uint64_t)h.width * h.bits + 7) / 8;
    if (need > src->size)
        return vit_fail(err, "%s: invalid BMP: truncated BMP pixel data", src->name);
    if (!(out->pixels = malloc((size_t)h.width * h.height * 3)))
        return vit_fail(err, "%s: out of memory for %ux%u pixels", src->name, h.width, h.height);
    for (uint32_t y = 0; y < h.height; y++) {
        const uint32_t row = h.top_down ? y : h.height - 1 - y;
        unpack_row(&h, &pal, src->data + offset + stride * y,
                   out->pixels + (size_t)row * h.width * 3);
    }
    out->width = (int)h.width;
    out->height = (int)h.height;
    return 0;
}
