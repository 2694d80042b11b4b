/* Image decoding of every format vit reads (told by the first bytes), with the EXIF orientation
 * applied, within a pixel limit that keeps each input fast; then the preprocessing of a model to a
 * small size (resize bicubic to a short side of 12, center crop 8, rescale, normalise), and the
 * grey conversion of 1-channel models. */
#include "image/image.h"
#include "tests/fuzz/fuzz_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    vit_error err;
    image_u8 img;
    const int channels = size && (data[size - 1] & 1) ? 1 : 3;
    if (image_decode_memory(data, size, "fuzz", channels, 1 << 20, IMAGE_EXIF_ORIENTATION, &img,
                            &err) != 0)
        return 0;
    if (img.width < 1 || img.height < 1 || !img.pixels) abort(); /* success must mean an image */
    preprocess_config cfg = {.do_resize = 1,
                             .shortest_edge = 12,
                             .resample = RESAMPLE_BICUBIC,
                             .do_center_crop = 1,
                             .crop_height = 8,
                             .crop_width = 8,
                             .do_rescale = 1,
                             .rescale_factor = 1.0 / 255,
                             .do_normalize = 1,
                             .mean = {0.5f, 0.5f, 0.5f},
                             .std = {0.5f, 0.5f, 0.5f},
                             .channels = channels};
    /* A thin image scaled to a short side of 12 can be millions of pixels long: correct and
     * bounded (the library's limit is 100 megapixels), but seconds per input under ASan. The
     * harness keeps to resizes of at most 1 megapixel. */
    preprocess_geometry g;
    if (preprocess_geometry_of(&cfg, img.width, img.height, &g, &err) != 0 ||
        (double)g.resized_w * g.resized_h > (double)(1 << 20)) {
        image_free(&img);
        return 0;
    }
    float out[3 * 8 * 8];
    preprocess_image(&cfg, &img, out, &err);
    /* NougatImageProcessor's steps (margin crop, short side to 8, thumbnail, pad) to 8 x 24, and
     * turned to 24 x 8 (align_long_axis); a margin crop may leave one row of a long image, which
     * the short side of 8 makes 8 times as long: long sides of 4096 at most */
    if (img.width > 4096 || img.height > 4096) {
        image_free(&img);
        return 0;
    }
    preprocess_config keep = cfg;
    keep.do_center_crop = 0, keep.shortest_edge = 0;
    keep.keep_aspect = keep.do_crop_margin = keep.do_thumbnail = keep.do_pad = 1;
    keep.resize_height = 8, keep.resize_width = 24;
    float wide[3 * 8 * 24];
    preprocess_image(&keep, &img, wide, &err);
    keep.do_align_long_axis = 1, keep.resize_height = 24, keep.resize_width = 8;
    preprocess_image(&keep, &img, wide, &err);
    image_free(&img);
    return 0;
}
