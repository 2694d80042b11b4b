/* GIF (87a, 89a) to 8-bit RGB with giflib: the first frame, as Pillow 9.4 loads it. The image is
 * the logical screen, grown to hold the first frame if it reaches beyond; outside the frame it
 * holds the frame's transparent index if its graphic control extension gives one, else index 0;
 * indices become colours through the frame's local colour table, else the global one (no table:
 * grey, the index itself; an index beyond the table: Pillow's grey ramp). Transparency is dropped,
 * not composited. Image data cut short, or ending (with its end code) before the frame is full, is
 * an error, as in Pillow ("image file is truncated"). */
#ifdef VIT_GIF /* built with giflib (image/decode.c refuses these files otherwise) */

#include <stdlib.h>
#include <string.h>

#include <gif_lib.h>

#include "image/decode_internal.h"

typedef struct {
    const uint8_t *data;
    size_t size, pos;
    int short_read; /* the file ended where more was asked for */
} gif_reader;

/* giflib's input function: fewer bytes than asked for means the file is cut short. One byte asked
 * for at the very end reads as 0, the block terminator: a file cut just after the last block of
 * image data then decodes, as in Pillow, which stops reading once the frame is full (if pixels
 * were still missing, giflib fails on the empty block, and the error says truncated). */
static int gif_read(GifFileType *gif, GifByteType *buf, int n) {
    gif_reader *r = gif->UserData;
    if (n == 1 && r->pos == r->size) {
        buf[0] = 0;
        r->short_read = 1;
        return 1;
    }
    const size_t left = r->size - r->pos;
    const size_t take = (size_t)n < left ? (size_t)n : left;
    memcpy(buf, r->data + r->pos, take);
    r->pos += take;
    r->short_read |= take < (size_t)n;
    return (int)take;
}

static int gif_error(const decode_source *src, const gif_reader *r, int code, vit_error *err) {
    if (r->short_read) return vit_fail(err, "%s: invalid GIF: truncated GIF data", src->name);
    if (code == D_GIF_ERR_READ_FAILED) /* giflib's word for bad sizes as well */
        return vit_fail(err, "%s: invalid GIF: bad block or LZW code size", src->name);
    if (code == D_GIF_ERR_EOF_TOO_SOON)
        return vit_fail(err, "%s: invalid GIF: the image data ends before the image does",
                        src->name);
    const char *what = GifErrorString(code);
    return vit_fail(err, "%s: invalid GIF: %s", src->name, what ? what : "cannot decode");
}

typedef struct {
    GifFileType *gif;
    int transparency; /* the first frame's transparent index, or -1 */
    uint8_t *index;   /* canvas of palette indices */
} gif_state;

/* Reads the records before the first image; a graphic control extension among them may set the
 * transparent index (the last one that sets it counts, as in Pillow). */
static int skip_to_image(const decode_source *src, gif_state *s, vit_error *err) {
    for (;;) {
        GifRecordType type;
        if (DGifGetRecordType(s->gif, &type) == GIF_ERROR)
            return gif_error(src, s->gif->UserData, s->gif->Error, err);
        if (type == IMAGE_DESC_RECORD_TYPE) return 0;
        if (type == TERMINATE_RECORD_TYPE)
            return vit_fail(err, "%s: invalid GIF: no image in the file", src->name);
        if (type != EXTENSION_RECORD_TYPE) continue;
        int code;
        GifByteType *ext;
        if (DGifGetExtension(s->gif, &code, &ext) == GIF_ERROR)
            return gif_error(src, s->gif->UserData, s->gif->Error, err);
        if (code == GRAPHICS_EXT_FUNC_CODE) {
            if (!ext || ext[0] < 4)
                return vit_fail(err, "%s: invalid GIF: short graphic control extension", src->name);
            if (ext[1] & 1) s->transparency = ext[4];
        }
        while (ext)
            if (DGifGetExtensionNext(s->gif, &ext) == GIF_ERROR)
                return gif_error(src, s->gif->UserData, s->gif->Error, err);
    }
}

/* The first frame's rows into the canvas (cw wide) at its place, in interlaced order if so. */
static int read_frame(const decode_source *src, gif_state *s, long cw, vit_error *err) {
    static const int start[4] = {0, 4, 2, 1}, step[4] = {8, 8, 4, 2};
    const GifImageDesc *d = &s->gif->Image;
    const int passes = d->Interlace ? 4 : 1;
    for (int p = 0; p < passes; p++) {
        for (long y = d->Interlace ? start[p] : 0; y < d->Height; y += d->Interlace ? step[p] : 1) {
            uint8_t *row = s->index + (d->Top + y) * cw + d->Left;
            if (DGifGetLine(s->gif, row, d->Width) == GIF_ERROR)
                return gif_error(src, s->gif->UserData, s->gif->Error, err);
        }
    }
    return 0;
}

static int gif_run(const decode_source *src, gif_state *s, image_u8 *out, vit_error *err) {
    if (skip_to_image(src, s, err) != 0) return -1;
    if (DGifGetImageDesc(s->gif) == GIF_ERROR)
        return gif_error(src, s->gif->UserData, s->gif->Error, err);
    const GifImageDesc *d = &s->gif->Image;
    const long right = (long)d->Left + d->Width, bottom = (long)d->Top + d->Height;
    const long cw = right > s->gif->SWidth ? right : s->gif->SWidth;
    const long ch = bottom > s->gif->SHeight ? bottom : s->gif->SHeight;
    if (d->Left < 0 || d->Top < 0 || d->Width < 0 || d->Height < 0)
        return vit_fail(err, "%s: invalid GIF: bad frame position", src->name);
    if (decode_check_dimensions(src->name, "GIF", cw, ch, src->max_pixels, err) != 0) return -1;
    const size_t count = (size_t)cw * ch;
    s->index = malloc(count);
    out->pixels = malloc(count * 3);
    if (!s->index || !out->pixels)
        return vit_fail(err, "%s: out of memory for %ldx%ld pixels", src->name, cw, ch);
    memset(s->index, s->transparency >= 0 ? s->transparency : 0, count);
    if (read_frame(src, s, cw, err) != 0) return -1;
    decode_palette pal;
    decode_palette_ramp(&pal);
    const ColorMapObject *map = d->ColorMap ? d->ColorMap : s->gif->SColorMap;
    for (int i = 0; map && i < map->ColorCount && i < 256; i++) {
        pal.rgb[i][0] = map->Colors[i].Red;
        pal.rgb[i][1] = map->Colors[i].Green;
        pal.rgb[i][2] = map->Colors[i].Blue;
    }
    for (size_t i = 0; i < count; i++) memcpy(out->pixels + 3 * i, pal.rgb[s->index[i]], 3);
    out->width = (int)cw;
    out->height = (int)ch;
    return 0;
}

int decode_gif(const decode_source *src, image_u8 *out, decode_meta *meta, vit_error *err) {
    (void)meta; /* GIF has no EXIF for Pillow */
    gif_reader reader = {src->data, src->size, 0, 0};
    int code = 0;
    gif_state s = {.transparency = -1};
    if (!(s.gif = DGifOpen(&reader, gif_read, &code))) return gif_error(src, &reader, code, err);
    const int rc = gif_run(src, &s, out, err);
    DGifCloseFile(s.gif, &code);
    free(s.index);
    if (rc != 0) {
        free(out->pixels);
        out->pixels = NULL;
    }
    return rc;
}

#endif /* VIT_GIF */
