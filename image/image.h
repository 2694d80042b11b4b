#ifndef VIT_IMAGE_H
#define VIT_IMAGE_H

/* Stage 1 of the data's path: an image file becomes 8-bit pixels, then the float tensor a model
 * consumes, exactly as Pillow's Image.open(f).convert("RGB") plus a Hugging Face image processor
 * (docs/SPEC.md §4-§6). */

#include <stddef.h>
#include <stdint.h>

#include "vit/base/error.h"

#define IMAGE_DEFAULT_MAX_PIXELS 100000000LL /* 100 megapixels; refuse larger before allocating */
#define IMAGE_MAX_FILE_BYTES     (1LL << 30) /* 1 GiB: larger files are refused unread */

/* 8-bit interleaved pixels, row-major: pixels[(y * width + x) * channels + c]; channels 1 (L) or 3
 * (RGB). */
typedef struct {
    int width, height, channels;
    uint8_t *pixels;
} image_u8;

void image_free(image_u8 *img);

/* Flag of image_decode_* and preprocess_file: turn the pixels upright as the file's EXIF
 * orientation (tag 274) says, as Pillow's ImageOps.exif_transpose, which Hugging Face pipelines
 * apply. Without it: Pillow's Image.open(f) pixels. */
#define IMAGE_EXIF_ORIENTATION 1

/* The formats the decoder knows, in the order it tries their signatures: the name of the i-th
 * (from 0; NULL past the last) and whether this build decodes it (WebP, TIFF and GIF are optional
 * in the build; a file of a format built without is refused, one line saying so). */
const char *image_format(int i, int *built_in);

/* Decodes a PNG, JPEG, WebP, TIFF, GIF (first frame) or BMP, told by its first bytes, into
 * `channels` (3: RGB, 1: Pillow's L), as Pillow's Image.open(f).convert(mode) gives it (a TIFF's
 * own Orientation tag is applied either way, as Pillow does when it loads a TIFF). max_pixels <= 0
 * means IMAGE_DEFAULT_MAX_PIXELS. flags: 0 or IMAGE_EXIF_ORIENTATION. Errors are one line naming
 * `name` (usually the path); a WebP, TIFF or GIF file in a build without that format is one. */
int image_decode_memory(const uint8_t *data, size_t size, const char *name, int channels,
                        int64_t max_pixels, int flags, image_u8 *out, vit_error *err);
int image_decode_file(const char *path, int channels, int64_t max_pixels, int flags, image_u8 *out,
                      vit_error *err);
/* 8-bit RGB pixels in memory (width·height·3 bytes) as if decoded: copied, converted to L when
 * channels is 1, with the same size limits. */
int image_from_rgb(const uint8_t *rgb, int width, int height, const char *name, int channels,
                   int64_t max_pixels, image_u8 *out, vit_error *err);

/* Pillow's resample codes (docs/SPEC.md §5). */
enum {
    RESAMPLE_NEAREST = 0,
    RESAMPLE_LANCZOS = 1,
    RESAMPLE_BILINEAR = 2,
    RESAMPLE_BICUBIC = 3,
    RESAMPLE_BOX = 4,
    RESAMPLE_HAMMING = 5
};

#define IMAGE_MAX_SIDE 16384 /* largest size or crop_size a preprocessor config may ask for */

/* Pillow-exact 8-bit resize (docs/SPEC.md §6), any of the resample codes above. dst is allocated
 * (image_free it). */
int image_resize(const image_u8 *src, int out_width, int out_height, int resample, image_u8 *dst,
                 vit_error *err);

/* Pillow's Image.resize(size, resample, reducing_gap=reducing_gap) (>= 1): when the image is at
 * least twice reducing_gap times the size on an axis it is first Image.reduce'd by
 * int(in / out / reducing_gap) there (block means), then resized from the reduced box. */
int image_resize_reducing(const image_u8 *src, int out_width, int out_height, int resample,
                          double reducing_gap, image_u8 *dst, vit_error *err);

/* The preprocessing a model's preprocessor_config.json asks for. */
typedef struct {
    int do_resize;
    int resize_height, resize_width; /* exact size, used when shortest_edge == 0 */
    int shortest_edge;               /* > 0: scale the short side to this */
    int resample;
    int do_center_crop;
    int crop_height, crop_width;
    int do_rescale;
    double rescale_factor;
    int do_normalize;
    float mean[3], std[3];
    int channels;      /* from config.json num_channels */
    double crop_pct;   /* > 0: timm's eval transform, whose resize is floor(size / crop_pct) at
                        * any input size (preprocess_config_set_size) */
    int torch_crop;    /* center crop offsets as torchvision's CenterCrop (timm's eval transform):
                        * round((size - crop) / 2) half to even, not floor */
    int from_defaults; /* 1: there was no preprocessor_config.json (ViTImageProcessor's defaults) */
    /* NougatImageProcessor (keep_aspect 1): the size is resize_height x resize_width; in order
     * crop_margin, align_long_axis, resize of the short side to min(height, width), thumbnail
     * (bicubic, reducing_gap 2), pad centred with 0, then rescale and normalise. */
    int keep_aspect;
    int do_crop_margin, do_align_long_axis, do_thumbnail, do_pad;
} preprocess_config;

/* Reads MODEL_DIR/preprocessor_config.json for a model of image_size and channels (its
 * config.json's; the file's absence means ViTImageProcessor's defaults at image_size). A timm
 * folder (config.json with `architecture` and no model_type) gets timm's eval transform from its
 * pretrained_cfg instead, as timm runs it (a preprocessor_config.json beside it is not read). */
int preprocess_config_read(const char *model_dir, int image_size, int channels,
                           preprocess_config *cfg, vit_error *err);

/* Makes the config produce size x size outputs (for --size N; docs/SPEC.md §7) keeping its
 * transform. */
void preprocess_config_set_size(preprocess_config *cfg, int size);

/* The transform in words ("shortest edge 248 bicubic, center crop 224x224, mean [0.5 0.5 0.5] std
 * [0.5 0.5 0.5]"), as vit info prints it. */
void preprocess_describe(const preprocess_config *cfg, char *buf, size_t size);

/* Output tensor shape of preprocess_image. */
void preprocess_output_shape(const preprocess_config *cfg, int *channels, int *height, int *width);

/* Where the model's input comes from in an image of width x height: the image is resized to
 * resized_w x resized_h, and the input's pixel (x, y) is the resized image's (x + left, y + top)
 * (zero where that falls outside: a crop larger than the image). */
typedef struct {
    int resized_w, resized_h;
    int left, top;
    int out_w, out_h;
} preprocess_geometry;
int preprocess_geometry_of(const preprocess_config *cfg, int width, int height,
                           preprocess_geometry *g, vit_error *err);

/* img (with cfg->channels channels) -> CHW float32 written into out (channels*height*width floats).
 */
int preprocess_image(const preprocess_config *cfg, const image_u8 *img, float *out, vit_error *err);

/* Convenience: decode (flags as image_decode_file's) + preprocess one file into out. */
int preprocess_file(const preprocess_config *cfg, const char *path, int64_t max_pixels, int flags,
                    float *out, vit_error *err);

#endif
