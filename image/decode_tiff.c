/* TIFF to 8-bit RGB with libtiff, read from memory: the first image of the file, in the layouts
 * Pillow 9.4's TiffImagePlugin reads (its OPEN_INFO table), converted as its convert("RGB") does:
 *   - grey and bilevel, 1, 2, 4 or 8 bits (min-is-white inverted), grey + alpha;
 *   - 16-bit grey as Pillow's I;16, which convert("RGB") clips to 255 (not scaled);
 *   - RGB, 8 or 16 bits (16: the high byte), with extra samples: alpha dropped, premultiplied
 *     alpha first divided out as Pillow's unpackers do;
 *   - palette, 1 to 8 bits (colour map entries / 256), palette + alpha;
 *   - YCbCr: with JPEG compression libjpeg converts it to RGB, as Pillow asks libtiff to; with
 *     other compressions libtiff's TIFFRGBAImage does, read in blocks as Pillow reads it;
 *   - any compression libtiff decodes, strips or tiles, 8-bit samples also in separate planes.
 * CMYK, Lab, signed or floating-point samples and uncompressed YCbCr (which Pillow misreads) are
 * refused. A file without a Photometric tag is min-is-white, as Pillow reads it. The Orientation
 * tag is applied when loading, as Pillow 9.4 does for TIFF.
 *
 * One difference: Pillow's own reader of uncompressed files (it hands compressed ones to libtiff)
 * fails on some layouts ("unknown raw mode": 8-bit min-is-white and 1-, 2- and 4-bit palette
 * files with fill order 2, separate planes with two extra samples) and leaves the bits of
 * separate planes with fill order 2 unreversed. Here these decode as the same files compressed
 * do in Pillow.
 *
 * Errors and warnings go to handlers of this file only (libtiff's per-file handlers), never to
 * stderr. */
#ifdef VIT_TIFF /* built with libtiff (image/decode.c refuses these files otherwise) */

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tiffio.h>

#include "image/decode_internal.h"

/* ---- libtiff on memory ---- */

typedef struct {
    const decode_source *src;
    uint64_t pos;
    char message[256]; /* libtiff's last error */
    int jpeg_eof;      /* libjpeg (in libtiff) warned of a premature end of its data */
} tiff_io;

static tmsize_t io_read(thandle_t h, void *buf, tmsize_t n) {
    tiff_io *io = (tiff_io *)h;
    const uint64_t size = io->src->size;
    if (n <= 0 || io->pos >= size) return 0;
    const uint64_t take = (uint64_t)n < size - io->pos ? (uint64_t)n : size - io->pos;
    memcpy(buf, io->src->data + io->pos, (size_t)take);
    io->pos += take;
    return (tmsize_t)take;
}

static tmsize_t io_write(thandle_t h, void *buf, tmsize_t n) {
    (void)h, (void)buf, (void)n;
    return 0;
}

static toff_t io_seek(thandle_t h, toff_t off, int whence) {
    tiff_io *io = (tiff_io *)h;
    const uint64_t base = whence == SEEK_CUR ? io->pos : whence == SEEK_END ? io->src->size : 0;
    io->pos = base + off; /* reading past the end reads nothing */
    return io->pos;
}

static int io_close(thandle_t h) {
    (void)h;
    return 0;
}

static toff_t io_size(thandle_t h) {
    return ((tiff_io *)h)->src->size;
}

/* The file is already in memory: libtiff reads strips from it in place. */
static int io_map(thandle_t h, void **base, toff_t *size) {
    tiff_io *io = (tiff_io *)h;
    *base = (void *)io->src->data;
    *size = io->src->size;
    return 1;
}

static void io_unmap(thandle_t h, void *base, toff_t size) {
    (void)h, (void)base, (void)size;
}

static int on_error(TIFF *tif, void *user, const char *module, const char *fmt, va_list ap) {
    (void)tif;
    tiff_io *io = user;
    /* the module is a codec's name, or the file's, which the message names already */
    const int named = module && *module && strcmp(module, io->src->name) != 0;
    int n = named ? snprintf(io->message, sizeof io->message, "%s: ", module) : 0;
    if (n < 0 || (size_t)n >= sizeof io->message) n = 0;
    vsnprintf(io->message + n, sizeof io->message - (size_t)n, fmt, ap);
    return 1; /* handled: not passed on to libtiff's global handler */
}

static int on_warning(TIFF *tif, void *user, const char *module, const char *fmt, va_list ap) {
    (void)tif, (void)module;
    tiff_io *io = user;
    char text[256];
    vsnprintf(text, sizeof text, fmt, ap);
    if (strstr(text, "Premature end of JPEG")) io->jpeg_eof = 1;
    return 1;
}

/* ---- what the file holds ---- */

typedef enum { GREY, PALETTE, RGB } tiff_color;

typedef struct {
    uint32_t width, height;
    uint16_t bits, spp, photometric, compression, planar, fillorder, sampleformat;
    uint16_t extra_count;
    const uint16_t *extra;
    int big_endian, tiled;
    /* the layout chosen */
    tiff_color color;
    int invert;        /* min-is-white, 1 to 8 bits */
    int premultiplied; /* RGB with associated alpha in sample 3 */
    int separate;      /* planes */
    int rgba;          /* YCbCr read through TIFFRGBAImage */
    decode_palette palette;
} tiff_layout;

static void read_fields(TIFF *tif, tiff_layout *t) {
    TIFFGetField(tif, TIFFTAG_IMAGEWIDTH, &t->width);
    TIFFGetField(tif, TIFFTAG_IMAGELENGTH, &t->height);
    TIFFGetFieldDefaulted(tif, TIFFTAG_BITSPERSAMPLE, &t->bits);
    TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLESPERPIXEL, &t->spp);
    TIFFGetFieldDefaulted(tif, TIFFTAG_COMPRESSION, &t->compression);
    TIFFGetFieldDefaulted(tif, TIFFTAG_PLANARCONFIG, &t->planar);
    TIFFGetFieldDefaulted(tif, TIFFTAG_FILLORDER, &t->fillorder);
    TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLEFORMAT, &t->sampleformat);
    TIFFGetFieldDefaulted(tif, TIFFTAG_EXTRASAMPLES, &t->extra_count, &t->extra);
    t->photometric = PHOTOMETRIC_MINISWHITE; /* Pillow's reading of a file without the tag */
    TIFFGetField(tif, TIFFTAG_PHOTOMETRIC, &t->photometric);
    t->big_endian = TIFFIsBigEndian(tif);
    t->tiled = TIFFIsTiled(tif);
}

static int is_low_depth(int bits) {
    return bits == 1 || bits == 2 || bits == 4 || bits == 8;
}

/* Extra samples as one of Pillow's RGB entries: the first one 0 (unspecified), 1 (associated
 * alpha) or 2 (alpha), any others 0. */
static int rgb_extras_known(const tiff_layout *t) {
    if (t->extra_count != t->spp - 3 || t->extra[0] > 2) return 0;
    for (int i = 1; i < t->extra_count; i++)
        if (t->extra[i] != 0) return 0;
    return 1;
}

/* Pillow's OPEN_INFO for grey, RGB and palette files; 1 when the file matches an entry. */
static int match_layout(TIFF *tif, tiff_layout *t) {
    const int lsb = t->fillorder == FILLORDER_LSB2MSB, photo = t->photometric;
    const int alpha_extra = t->extra_count == 1 && t->extra[0] == EXTRASAMPLE_UNASSALPHA;
    switch (photo) {
    case PHOTOMETRIC_MINISWHITE:
    case PHOTOMETRIC_MINISBLACK:
        t->color = GREY;
        t->invert = photo == PHOTOMETRIC_MINISWHITE && t->bits <= 8;
        if (t->spp == 1 && t->extra_count == 0 && is_low_depth(t->bits)) return 1;
        if (t->spp == 1 && t->extra_count == 0 && t->bits == 16) /* I;16: II 0/1, MM 1 */
            return photo == PHOTOMETRIC_MINISBLACK ? !(lsb && t->big_endian)
                                                   : !t->big_endian && !lsb;
        return photo == PHOTOMETRIC_MINISBLACK && t->spp == 2 && t->bits == 8 && alpha_extra &&
               !lsb; /* LA */
    case PHOTOMETRIC_RGB:
        t->color = RGB;
        if (t->spp == 3 && t->extra_count == 0) return t->bits == 8 || (t->bits == 16 && !lsb);
        t->premultiplied = t->extra_count > 0 && t->extra[0] == EXTRASAMPLE_ASSOCALPHA;
        return !lsb && rgb_extras_known(t) &&
               ((t->bits == 8 && t->spp <= 6) || (t->bits == 16 && t->spp == 4));
    case PHOTOMETRIC_PALETTE:
        t->color = PALETTE;
        if (t->spp == 1 && t->extra_count == 0) return is_low_depth(t->bits);
        return t->spp == 2 && t->bits == 8 && alpha_extra && !lsb; /* PA */
    case PHOTOMETRIC_YCBCR:
        t->color = RGB;
        if (t->spp != 3 || t->extra_count != 0 || t->bits != 8 || lsb) return 0;
        t->rgba = t->compression != COMPRESSION_JPEG || t->planar != PLANARCONFIG_CONTIG;
        /* JPEG: libjpeg turns it into RGB, as Pillow asks libtiff to */
        return t->rgba || TIFFSetField(tif, TIFFTAG_JPEGCOLORMODE, JPEGCOLORMODE_RGB) == 1;
    }
    return 0;
}

/* The colour map (16-bit entries; Pillow keeps entry / 256) over Pillow's grey ramp. */
static int read_palette(TIFF *tif, tiff_layout *t) {
    uint16_t *r, *g, *b;
    if (!TIFFGetField(tif, TIFFTAG_COLORMAP, &r, &g, &b)) return -1;
    decode_palette_ramp(&t->palette);
    for (int i = 0; i < 1 << t->bits; i++) {
        t->palette.rgb[i][0] = (uint8_t)(r[i] >> 8);
        t->palette.rgb[i][1] = (uint8_t)(g[i] >> 8);
        t->palette.rgb[i][2] = (uint8_t)(b[i] >> 8);
    }
    return 0;
}

/* Refusals with their reasons, then the layout. */
static int choose_layout(const decode_source *src, TIFF *tif, tiff_layout *t, vit_error *err) {
    const char *name = src->name;
    if (t->compression == COMPRESSION_OJPEG)
        return vit_fail(err, "%s: unsupported TIFF: old-style JPEG compression", name);
    if (t->photometric == PHOTOMETRIC_SEPARATED)
        return vit_fail(err, "%s: CMYK TIFF is not supported; convert it to RGB first", name);
    if (t->photometric == PHOTOMETRIC_YCBCR && t->compression == COMPRESSION_NONE)
        return vit_fail(err, "%s: unsupported TIFF: uncompressed YCbCr", name);
    if (t->sampleformat != SAMPLEFORMAT_UINT)
        return vit_fail(err, "%s: unsupported TIFF: signed or floating-point samples", name);
    if (!match_layout(tif, t))
        return vit_fail(err,
                        "%s: unsupported TIFF: photometric %u with %u samples of %u bits, %u "
                        "extra, fill order %u",
                        name, t->photometric, t->spp, t->bits, t->extra_count, t->fillorder);
    t->separate = t->planar == PLANARCONFIG_SEPARATE && t->spp > 1 && !t->rgba;
    if (t->separate && (t->bits != 8 || t->premultiplied))
        return vit_fail(err, "%s: unsupported TIFF: %s in separate planes", name,
                        t->premultiplied ? "premultiplied alpha" : "16-bit samples");
    if (t->color == PALETTE && read_palette(tif, t) != 0)
        return vit_fail(err, "%s: invalid TIFF: palette image without a colour map", name);
    return 0;
}

/* ---- samples ---- */

typedef struct {
    uint8_t *raw; /* the decoded samples: planes x height rows of row_bytes */
    uint64_t row_bytes;
    int planes;     /* planes kept: 1, or 3 for separate RGB */
    uint8_t *chunk; /* one strip or tile */
} tiff_buffers;

static int tiff_fail(const decode_source *src, const tiff_io *io, const char *what,
                     vit_error *err) {
    if (io->message[0]) return vit_fail(err, "%s: invalid TIFF: %s", src->name, io->message);
    return vit_fail(err, "%s: invalid TIFF: %s", src->name, what);
}

/* A strip or tile that could not be read: cut off by the end of the file, or damaged. */
static int chunk_error(const decode_source *src, TIFF *tif, uint32_t index, const tiff_io *io,
                       vit_error *err) {
    const uint64_t end = TIFFGetStrileOffset(tif, index) + TIFFGetStrileByteCount(tif, index);
    if (end > src->size)
        return vit_fail(
            err, "%s: invalid TIFF: truncated TIFF data (a %s ends at byte %llu of %zu)", src->name,
            TIFFIsTiled(tif) ? "tile" : "strip", (unsigned long long)end, src->size);
    return tiff_fail(src, io, "damaged image data", err);
}

static int read_strips(const decode_source *src, TIFF *tif, const tiff_layout *t, tiff_buffers *b,
                       const tiff_io *io, vit_error *err) {
    uint32_t rows = t->height;
    TIFFGetFieldDefaulted(tif, TIFFTAG_ROWSPERSTRIP, &rows);
    if (rows == 0 || rows > t->height) rows = t->height;
    for (int p = 0; p < b->planes; p++)
        for (uint32_t y = 0; y < t->height; y += rows) {
            const uint32_t n = rows < t->height - y ? rows : t->height - y;
            const uint32_t strip = TIFFComputeStrip(tif, y, (uint16_t)p);
            const tmsize_t got = TIFFReadEncodedStrip(tif, strip, b->chunk, (tmsize_t)-1);
            if (got < 0 || (uint64_t)got < n * b->row_bytes)
                return chunk_error(src, tif, strip, io, err);
            memcpy(b->raw + ((uint64_t)p * t->height + y) * b->row_bytes, b->chunk,
                   n * b->row_bytes);
        }
    return 0;
}

static int read_tiles(const decode_source *src, TIFF *tif, const tiff_layout *t, tiff_buffers *b,
                      const tiff_io *io, vit_error *err) {
    uint32_t tw = 0, th = 0;
    TIFFGetField(tif, TIFFTAG_TILEWIDTH, &tw);
    TIFFGetField(tif, TIFFTAG_TILELENGTH, &th);
    const uint64_t tile_row = TIFFTileRowSize64(tif), tile_size = TIFFTileSize64(tif);
    const uint64_t pixel_bits = (uint64_t)t->bits * (t->separate ? 1 : t->spp);
    if (tw == 0 || th == 0 || tile_row == 0 || tile_size < tile_row * th)
        return tiff_fail(src, io, "bad tile size", err);
    for (int p = 0; p < b->planes; p++)
        for (uint32_t ty = 0; ty < t->height; ty += th)
            for (uint32_t tx = 0; tx < t->width; tx += tw) {
                const uint32_t tile = TIFFComputeTile(tif, tx, ty, 0, (uint16_t)p);
                const tmsize_t got = TIFFReadEncodedTile(tif, tile, b->chunk, (tmsize_t)-1);
                if (got < 0 || (uint64_t)got < tile_size)
                    return chunk_error(src, tif, tile, io, err);
                const uint64_t x0 = tx * pixel_bits / 8; /* tile widths are multiples of 16 */
                const uint64_t len = b->row_bytes - x0 < tile_row ? b->row_bytes - x0 : tile_row;
                for (uint32_t r = 0; r < th && ty + r < t->height; r++)
                    memcpy(b->raw + ((uint64_t)p * t->height + ty + r) * b->row_bytes + x0,
                           b->chunk + r * tile_row, len);
            }
    return 0;
}

/* Sample s (0-based) of pixel x in row y: plane s's row when separate. */
static const uint8_t *sample_row(const tiff_layout *t, const tiff_buffers *b, uint32_t y, int s) {
    return b->raw + ((uint64_t)(t->separate ? s : 0) * t->height + y) * b->row_bytes;
}

static unsigned sample(const tiff_layout *t, const uint8_t *row, uint64_t index) {
    if (t->bits == 16) {
        uint16_t v;
        memcpy(&v, row + 2 * index, 2); /* libtiff gives native byte order */
        return v;
    }
    if (t->bits == 8) return row[index];
    const uint64_t bit = index * t->bits;
    return (row[bit / 8] >> (8 - t->bits - bit % 8)) & ((1u << t->bits) - 1);
}

/* Pillow's unpacking of premultiplied RGBA (8 bits, or the high bytes of 16). */
static uint8_t unpremultiply(unsigned c, unsigned a) {
    if (a == 0) return 0;
    if (a == 255) return (uint8_t)c;
    const unsigned v = c * 255 / a;
    return (uint8_t)(v > 255 ? 255 : v);
}

static void unpack_row(const tiff_layout *t, const tiff_buffers *b, uint32_t y, uint8_t *out) {
    const int step = t->separate ? 1 : t->spp;
    static const unsigned scale[17] = {[1] = 255, [2] = 0x55, [4] = 0x11, [8] = 1};
    for (uint32_t x = 0; x < t->width; x++, out += 3) {
        const uint64_t i = (uint64_t)x * step;
        if (t->color == PALETTE) {
            memcpy(out, t->palette.rgb[sample(t, sample_row(t, b, y, 0), i)], 3);
        } else if (t->color == GREY) {
            const unsigned v = sample(t, sample_row(t, b, y, 0), i);
            uint8_t g =
                t->bits == 16 ? (uint8_t)(v > 255 ? 255 : v) : (uint8_t)(v * scale[t->bits]);
            out[0] = out[1] = out[2] = t->invert ? (uint8_t)(255 - g) : g;
        } else {
            const int shift = t->bits == 16 ? 8 : 0; /* 16 bits: the high byte */
            unsigned c[3];
            for (int s = 0; s < 3; s++)
                c[s] = sample(t, sample_row(t, b, y, s), i + (t->separate ? 0 : s)) >> shift;
            const unsigned a =
                t->premultiplied ? sample(t, sample_row(t, b, y, 0), i + 3) >> shift : 255;
            for (int s = 0; s < 3; s++) out[s] = unpremultiply(c[s], a);
        }
    }
}

/* YCbCr through libtiff's RGBA conversion, exactly as Pillow's _decodeAsRGBA: blocks of a strip's
 * (or tile's) rows, each read with the requested orientation top-left, which makes libtiff flip
 * the rows of each block as the Orientation tag asks (the tag is then applied again on load: a
 * Pillow 9.4 quirk kept for exactness; it only matters for orientations other than 1 and 5). */
static int read_rgba(const decode_source *src, TIFF *tif, const tiff_layout *t, const tiff_io *io,
                     image_u8 *out, vit_error *err) {
    uint32_t block = 0;
    const int got =
        TIFFGetFieldDefaulted(tif, t->tiled ? TIFFTAG_TILELENGTH : TIFFTAG_ROWSPERSTRIP, &block);
    if (got != 1 || block == 0 || block > t->height) block = t->height;
    char message[1024] = "";
    TIFFRGBAImage img;
    if (!TIFFRGBAImageOK(tif, message) || !TIFFRGBAImageBegin(&img, tif, 0, message))
        return vit_fail(err, "%s: invalid TIFF: %s", src->name,
                        message[0] ? message : "cannot convert YCbCr");
    img.req_orientation = ORIENTATION_TOPLEFT;
    img.col_offset = 0;
    uint32_t *raster = malloc(sizeof *raster * t->width * block);
    int rc = raster ? 0 : vit_fail(err, "%s: out of memory", src->name);
    for (uint32_t y = 0; rc == 0 && y < t->height; y += block) {
        const uint32_t rows = block < t->height - y ? block : t->height - y;
        img.row_offset = (int)y;
        if (!TIFFRGBAImageGet(&img, raster, t->width, rows)) {
            rc = tiff_fail(src, io, "cannot decode the YCbCr data", err);
            break;
        }
        for (uint64_t i = 0; i < (uint64_t)rows * t->width; i++) {
            uint8_t *p = out->pixels + ((uint64_t)y * t->width + i) * 3;
            p[0] = (uint8_t)TIFFGetR(raster[i]);
            p[1] = (uint8_t)TIFFGetG(raster[i]);
            p[2] = (uint8_t)TIFFGetB(raster[i]);
        }
    }
    TIFFRGBAImageEnd(&img);
    free(raster);
    return rc;
}

static int tiff_run(const decode_source *src, TIFF *tif, tiff_io *io, tiff_layout *t,
                    tiff_buffers *b, image_u8 *out, decode_meta *meta, vit_error *err) {
    read_fields(tif, t);
    if (decode_check_dimensions(src->name, "TIFF", t->width, t->height, src->max_pixels, err) != 0)
        return -1;
    if (choose_layout(src, tif, t, err) != 0) return -1;
    uint16_t orientation = ORIENTATION_TOPLEFT;
    if (TIFFGetField(tif, TIFFTAG_ORIENTATION, &orientation) && orientation <= 8)
        meta->orientation = orientation;
    if (t->rgba) {
        if (!(out->pixels = malloc((size_t)t->width * t->height * 3)))
            return vit_fail(err, "%s: out of memory", src->name);
        out->width = (int)t->width;
        out->height = (int)t->height;
        return read_rgba(src, tif, t, io, out, err);
    }
    b->planes = t->separate ? (t->color == RGB ? 3 : 1) : 1;
    b->row_bytes = TIFFScanlineSize64(tif);
    const uint64_t chunk = t->tiled ? TIFFTileSize64(tif) : TIFFStripSize64(tif);
    const uint64_t need = ((uint64_t)t->width * t->bits * (t->separate ? 1 : t->spp) + 7) / 8;
    /* a strip or tile far larger than the image (a damaged header) is not allocated */
    const uint64_t image_bytes = (uint64_t)b->planes * t->height * b->row_bytes;
    if (b->row_bytes < need || chunk == 0 || chunk > 16 * image_bytes + ((uint64_t)64 << 20))
        return tiff_fail(src, io, "inconsistent sizes", err);
    b->raw = malloc(image_bytes);
    b->chunk = malloc(chunk);
    out->pixels = malloc((size_t)t->width * t->height * 3);
    if (!b->raw || !b->chunk || !out->pixels)
        return vit_fail(err, "%s: out of memory for %ux%u pixels", src->name, t->width, t->height);
    if ((t->tiled ? read_tiles : read_strips)(src, tif, t, b, io, err) != 0) return -1;
    if (io->jpeg_eof) return vit_fail(err, "%s: invalid TIFF: truncated JPEG data", src->name);
    for (uint32_t y = 0; y < t->height; y++)
        unpack_row(t, b, y, out->pixels + (size_t)y * t->width * 3);
    out->width = (int)t->width;
    out->height = (int)t->height;
    return 0;
}

/* Why libtiff could not open the file; a first directory beyond the end means it was cut short. */
static int open_error(const decode_source *src, const tiff_io *io, vit_error *err) {
    const uint8_t *d = src->data;
    const int big = d[0] == 'M', bigtiff = d[2] == 43 || d[3] == 43;
    uint64_t offset = 0;
    for (int i = 0, n = bigtiff ? 8 : 4, at = bigtiff ? 8 : 4;
         i < n && (size_t)(at + i) < src->size; i++)
        offset |= (uint64_t)d[at + i] << (8 * (big ? n - 1 - i : i));
    if (offset >= src->size)
        return vit_fail(err,
                        "%s: invalid TIFF: its first directory (byte %llu) is beyond the end of "
                        "the file (%zu bytes): truncated or damaged",
                        src->name, (unsigned long long)offset, src->size);
    return tiff_fail(src, io, "cannot read the TIFF header", err);
}

int decode_tiff(const decode_source *src, image_u8 *out, decode_meta *meta, vit_error *err) {
    tiff_io io = {.src = src};
    TIFFOpenOptions *opts = TIFFOpenOptionsAlloc();
    if (!opts) return vit_fail(err, "%s: out of memory", src->name);
    TIFFOpenOptionsSetErrorHandlerExtR(opts, on_error, &io);
    /* libtiff's own buffers: bounded by what an image within the pixel limit needs */
    TIFFOpenOptionsSetMaxSingleMemAlloc(opts, (tmsize_t)(src->max_pixels * 16 + (64 << 20)));
    TIFFOpenOptionsSetWarningHandlerExtR(opts, on_warning, &io);
    TIFF *tif = TIFFClientOpenExt(src->name, "r", (thandle_t)&io, io_read, io_write, io_seek,
                                  io_close, io_size, io_map, io_unmap, opts);
    TIFFOpenOptionsFree(opts);
    if (!tif) return open_error(src, &io, err);
    tiff_layout t = {0};
    tiff_buffers b = {0};
    const int rc = tiff_run(src, tif, &io, &t, &b, out, meta, err);
    TIFFClose(tif);
    free(b.raw);
    free(b.chunk);
    if (rc != 0) {
        free(out->pixels);
        out->pixels = NULL;
    }
    return rc;
}

#endif /* VIT_TIFF */
