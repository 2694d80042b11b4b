/* JPEG encoding with libjpeg(-turbo)'s defaults at a chosen quality. libjpeg reports errors by
 * longjmp: the setjmp sits in a function of its own, its state in a struct its caller owns. */
#include <errno.h>
#include <setjmp.h>
#include <stdio.h> /* before jpeglib.h, which uses FILE */
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>

#include "image/encode.h"

typedef struct {
    struct jpeg_error_mgr mgr;
    jmp_buf jump;
    char message[JMSG_LENGTH_MAX];
} encode_error;

static void encode_on_error(j_common_ptr cinfo) {
    encode_error *e = (encode_error *)cinfo->err;
    e->mgr.format_message(cinfo, e->message);
    longjmp(e->jump, 1);
}

typedef struct {
    struct jpeg_compress_struct cinfo;
    encode_error error;
    unsigned char *data; /* libjpeg's memory destination (malloc'd by it) */
    unsigned long size;
} encode_state;

static int encode_run(encode_state *s, const image_u8 *img, int quality) {
    if (setjmp(s->error.jump)) return -1;
    jpeg_create_compress(&s->cinfo);
    jpeg_mem_dest(&s->cinfo, &s->data, &s->size);
    s->cinfo.image_width = (JDIMENSION)img->width;
    s->cinfo.image_height = (JDIMENSION)img->height;
    s->cinfo.input_components = img->channels;
    s->cinfo.in_color_space = img->channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
    jpeg_set_defaults(&s->cinfo);
    jpeg_set_quality(&s->cinfo, quality, TRUE);
    jpeg_start_compress(&s->cinfo, TRUE);
    const size_t stride = (size_t)img->width * (size_t)img->channels;
    while (s->cinfo.next_scanline < s->cinfo.image_height) {
        JSAMPROW row = img->pixels + (size_t)s->cinfo.next_scanline * stride;
        jpeg_write_scanlines(&s->cinfo, &row, 1);
    }
    jpeg_finish_compress(&s->cinfo);
    return 0;
}

int image_encode_jpeg(const image_u8 *img, int quality, uint8_t **data, size_t *size,
                      vit_error *err) {
    if (quality < 1 || quality > 100)
        return vit_fail(err, "JPEG quality %d is outside 1..100", quality);
    if ((img->channels != 1 && img->channels != 3) || img->width < 1 || img->height < 1)
        return vit_fail(err, "cannot encode a %dx%d image of %d channels as JPEG", img->width,
                        img->height, img->channels);
    encode_state *s = calloc(1, sizeof *s);
    if (!s) return vit_fail(err, "out of memory encoding a JPEG");
    s->cinfo.err = jpeg_std_error(&s->error.mgr);
    s->error.mgr.error_exit = encode_on_error;
    int rc = encode_run(s, img, quality);
    if (rc != 0) vit_fail(err, "JPEG encoding failed: %s", s->error.message);
    jpeg_destroy_compress(&s->cinfo);
    if (rc == 0) {
        *data = s->data, *size = s->size;
    } else {
        free(s->data);
    }
    free(s);
    return rc;
}

int image_write_jpeg(const char *path, const image_u8 *img, int quality, vit_error *err) {
    uint8_t *data = NULL;
    size_t size = 0;
    vit_error why = {{0}};
    if (image_encode_jpeg(img, quality, &data, &size, &why) != 0)
        return vit_fail(err, "%s: %s", path, why.msg);
    FILE *f = fopen(path, "wb");
    if (!f) {
        const int saved = errno;
        free(data);
        return vit_fail(err, "%s: %s", path, strerror(saved));
    }
    int bad = fwrite(data, 1, size, f) != size;
    bad |= fclose(f) != 0;
    free(data);
    if (bad) return vit_fail(err, "%s: write error (disk full?)", path);
    return 0;
}
