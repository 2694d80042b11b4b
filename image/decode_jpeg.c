/* JPEG to 8-bit RGB with libjpeg(-turbo) defaults (ISLOW DCT, fancy upsampling), as Pillow
 * (docs/SPEC.md §4). The first APP1 segment that starts with "Exif\0\0" gives the EXIF orientation,
 * as for Pillow. libjpeg reports errors by longjmp: the setjmp sits in a small function of its own
 * and all state it must clean up lives in a struct owned by its caller. */
#include <setjmp.h>
#include <stdio.h> /* before jpeglib.h, which uses FILE */
#include <stdlib.h>
#include <string.h>

#include <jerror.h>
#include <jpeglib.h>

#include "image/decode_internal.h"

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

static int jpeg_find_exif(const struct jpeg_decompress_struct *cinfo) {
    for (jpeg_saved_marker_ptr m = cinfo->marker_list; m; m = m->next)
        if (m->marker == JPEG_APP0 + 1 && m->data_length >= 6 &&
            memcmp(m->data, "Exif\0\0", 6) == 0)
            return exif_orientation(m->data, m->data_length);
    return 1;
}

static int jpeg_run(jpeg_state *s, const decode_source *src, image_u8 *out, decode_meta *meta,
                    vit_error *err) {
    if (setjmp(s->error.jump)) return -1;
    jpeg_create_decompress(&s->cinfo);
    jpeg_mem_src(&s->cinfo, src->data, (unsigned long)src->size);
    if (src->want_exif) jpeg_save_markers(&s->cinfo, JPEG_APP0 + 1, 0xffff);
    jpeg_read_header(&s->cinfo, TRUE);
    const unsigned width = s->cinfo.image_width, height = s->cinfo.image_height;
    if (decode_check_dimensions(src->name, "JPEG", width, height, src->max_pixels, err) != 0)
        return -1;
    J_COLOR_SPACE space = s->cinfo.jpeg_color_space;
    if (space == JCS_CMYK || space == JCS_YCCK)
        return vit_fail(err, "%s: CMYK JPEG is not supported; convert it to RGB first", src->name);
    if (src->want_exif) meta->exif_orientation = jpeg_find_exif(&s->cinfo);
    const int channels = space == JCS_GRAYSCALE ? 1 : 3;
    s->cinfo.out_color_space = channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
    s->pixels = malloc((size_t)width * height * 3);
    if (!s->pixels)
        return vit_fail(err, "%s: out of memory for %ux%u pixels", src->name, width, height);
    jpeg_start_decompress(&s->cinfo);
    while (s->cinfo.output_scanline < height) {
        JSAMPROW row = s->pixels + (size_t)s->cinfo.output_scanline * width * channels;
        jpeg_read_scanlines(&s->cinfo, &row, 1);
    }
    jpeg_finish_decompress(&s->cinfo);
    decode_to_rgb_inplace(s->pixels, (size_t)width * height, channels);
    out->width = (int)width;
    out->height = (int)height;
    return 0;
}

int decode_jpeg(const decode_source *src, image_u8 *out, decode_meta *meta, vit_error *err) {
    jpeg_state s;
    memset(&s, 0, sizeof s);
    s.cinfo.err = jpeg_std_error(&s.error.mgr);
    s.error.mgr.error_exit = jpeg_on_error;
    s.error.mgr.emit_message = jpeg_on_message;
    int rc = jpeg_run(&s, src, out, meta, err);
    jpeg_destroy_decompress(&s.cinfo);
    if (rc != 0) {
        free(s.pixels);
        if (s.error.message[0]) vit_fail(err, "%s: invalid JPEG: %s", src->name, s.error.message);
        return -1;
    }
    out->pixels = s.pixels;
    return 0;
}
