/* WebP (lossy, lossless, with alpha, animated: the first frame) to 8-bit RGB, the way Pillow 9.4
 * reads it: libwebp's animation decoder with its default options (non-premultiplied RGBA on a
 * transparent canvas), alpha then dropped. The EXIF chunk gives the EXIF orientation. */
#ifdef VIT_WEBP /* built with libwebp (image/decode.c refuses these files otherwise) */

#include <stdlib.h>
#include <string.h>

#include <webp/decode.h>
#include <webp/demux.h>

#include "image/decode_internal.h"

static const char *status_text(VP8StatusCode status) {
    switch (status) {
    case VP8_STATUS_OUT_OF_MEMORY:
        return "out of memory";
    case VP8_STATUS_BITSTREAM_ERROR:
        return "bitstream error";
    case VP8_STATUS_UNSUPPORTED_FEATURE:
        return "unsupported feature";
    case VP8_STATUS_NOT_ENOUGH_DATA:
        return "truncated WebP data";
    default:
        return "cannot decode";
    }
}

/* Why the container could not be read: cut short, or not valid. */
static int container_error(const decode_source *src, const WebPData *data, vit_error *err) {
    WebPDemuxState state;
    WebPDemuxer *demux = WebPDemuxPartial(data, &state);
    WebPDemuxDelete(demux);
    if (state == WEBP_DEMUX_PARSING_HEADER || state == WEBP_DEMUX_PARSED_HEADER)
        return vit_fail(err, "%s: invalid WebP: truncated WebP data", src->name);
    return vit_fail(err, "%s: invalid WebP: malformed container", src->name);
}

static int find_exif(WebPAnimDecoder *dec) {
    const WebPDemuxer *demux = WebPAnimDecoderGetDemuxer(dec);
    WebPChunkIterator it;
    int o = 1;
    if (demux && WebPDemuxGetChunk(demux, "EXIF", 1, &it)) {
        o = exif_orientation(it.chunk.bytes, it.chunk.size);
        WebPDemuxReleaseChunkIterator(&it);
    }
    return o;
}

/* The first frame of an opened decoder into out (RGB). */
static int first_frame(const decode_source *src, WebPAnimDecoder *dec, image_u8 *out,
                       vit_error *err) {
    WebPAnimInfo info;
    if (!WebPAnimDecoderGetInfo(dec, &info))
        return vit_fail(err, "%s: invalid WebP: no image information", src->name);
    if (decode_check_dimensions(src->name, "WebP", info.canvas_width, info.canvas_height,
                                src->max_pixels, err) != 0)
        return -1;
    uint8_t *rgba;
    int timestamp;
    if (!WebPAnimDecoderGetNext(dec, &rgba, &timestamp))
        return vit_fail(err, "%s: invalid WebP: the image data cannot be decoded", src->name);
    const size_t count = (size_t)info.canvas_width * info.canvas_height;
    if (!(out->pixels = malloc(count * 3)))
        return vit_fail(err, "%s: out of memory for %ux%u pixels", src->name, info.canvas_width,
                        info.canvas_height);
    for (size_t i = 0; i < count; i++) memcpy(out->pixels + 3 * i, rgba + 4 * i, 3);
    out->width = (int)info.canvas_width;
    out->height = (int)info.canvas_height;
    return 0;
}

int decode_webp(const decode_source *src, image_u8 *out, decode_meta *meta, vit_error *err) {
    /* the size first: the decoder allocates its canvas when it is created */
    WebPBitstreamFeatures features;
    const VP8StatusCode status = WebPGetFeatures(src->data, src->size, &features);
    if (status != VP8_STATUS_OK)
        return vit_fail(err, "%s: invalid WebP: %s", src->name, status_text(status));
    if (decode_check_dimensions(src->name, "WebP", features.width, features.height, src->max_pixels,
                                err) != 0)
        return -1;
    const WebPData data = {src->data, src->size};
    WebPAnimDecoder *dec = WebPAnimDecoderNew(&data, NULL);
    if (!dec) return container_error(src, &data, err);
    if (src->want_exif) meta->exif_orientation = find_exif(dec);
    const int rc = first_frame(src, dec, out, err);
    WebPAnimDecoderDelete(dec);
    return rc;
}

#endif /* VIT_WEBP */
