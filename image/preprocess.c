/* A model's preprocessor_config.json and the transform it describes (docs/SPEC.md §5): resize
 * (uint8, as Pillow) -> center crop (uint8, zero padding) -> rescale (float64 product rounded to
 * float32, as HF's rescale) -> normalise (float32, as HF's normalize) -> CHW. */
#include "image/image.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vit/base/hot.h"
#include "vit/base/json.h"

/* ViTImageProcessor's defaults; `size` is the model's image_size when there is no
 * preprocessor_config.json at all, HF's 224 when the file exists but omits it. */
static void set_defaults(preprocess_config *cfg, int size, int channels) {
    *cfg = (preprocess_config){
        .do_resize = 1,
        .resize_height = size,
        .resize_width = size,
        .resample = RESAMPLE_BILINEAR,
        .crop_height = 224,
        .crop_width = 224,
        .do_rescale = 1,
        .rescale_factor = 1.0 / 255.0,
        .do_normalize = 1,
        .mean = {0.5f, 0.5f, 0.5f},
        .std = {0.5f, 0.5f, 0.5f},
        .channels = channels,
    };
}

/* One integer member of a size object, 1..IMAGE_MAX_SIDE (null or another type is an error). */
static int size_member(const cJSON *obj, const char *key, int *out, const char *src,
                       const char *field, vit_error *err) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= 1 && v->valuedouble <= IMAGE_MAX_SIDE) ||
        v->valuedouble != floor(v->valuedouble))
        return vit_fail(err, "%s: field '%s': '%s' must be an integer in 1..%d", src, field, key,
                        IMAGE_MAX_SIDE);
    *out = v->valueint;
    return 0;
}

/* `size`/`crop_size`: an int N (N x N; with allow_shortest 2, SIZE_SHORT below: CLIP's and Bit's
 * reading, the short side N), {"height", "width"}, or (size only) {"shortest_edge"}.
 * Keys are matched exactly, as transformers reads them: any other key ("Width",
 * "Shortest_Edge", "longest_edge") is an error rather than a size silently left out. */
static int get_size(const cJSON *root, const char *key, int allow_shortest, int *height, int *width,
                    int *shortest, const char *src, vit_error *err) {
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!item || cJSON_IsNull(item)) return 0;
    if (cJSON_IsNumber(item)) {
        int n = 0;
        if (json_get_int(root, key, 1, IMAGE_MAX_SIDE, &n, src, err) != 0) return -1;
        *height = *width = n;
        if (shortest) *shortest = allow_shortest == 2 ? n : 0;
        return 0;
    }
    if (!cJSON_IsObject(item))
        return vit_fail(err, "%s: field '%s' must be an integer or an object", src, key);
    const cJSON *member;
    cJSON_ArrayForEach(member, item) {
        const char *k = member->string;
        if (strcmp(k, "height") != 0 && strcmp(k, "width") != 0 &&
            !(allow_shortest && strcmp(k, "shortest_edge") == 0))
            return vit_fail(
                err, "%s: field '%s' has an unsupported key '%s' (expected %s)", src, key, k,
                allow_shortest ? "height and width, or shortest_edge" : "height and width");
    }
    if (allow_shortest && cJSON_GetObjectItemCaseSensitive(item, "shortest_edge")) {
        if (cJSON_GetArraySize(item) != 1)
            return vit_fail(err, "%s: field '%s': shortest_edge goes alone", src, key);
        return size_member(item, "shortest_edge", shortest, src, key, err);
    }
    int h = 0, w = 0;
    if (size_member(item, "height", &h, src, key, err) != 0 ||
        size_member(item, "width", &w, src, key, err) != 0)
        return -1;
    *height = h;
    *width = w;
    if (shortest) *shortest = 0;
    return 0;
}

/* image_mean / image_std: one number for every channel, or a list of `channels` numbers. */
static int get_channel_values(const cJSON *root, const char *key, int channels, int positive,
                              float out[3], const char *src, vit_error *err) {
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!item || cJSON_IsNull(item)) return 0;
    double v[3];
    int n = cJSON_IsArray(item) ? cJSON_GetArraySize(item) : 1;
    if (cJSON_IsNumber(item)) {
        v[0] = v[1] = v[2] = item->valuedouble;
        n = channels;
    } else if (!cJSON_IsArray(item) || n != channels) {
        return vit_fail(err, "%s: field '%s' must be a number or a list of %d numbers", src, key,
                        channels);
    } else {
        for (int c = 0; c < n; c++) {
            const cJSON *e = cJSON_GetArrayItem(item, c);
            if (!cJSON_IsNumber(e))
                return vit_fail(err, "%s: field '%s' must hold numbers", src, key);
            v[c] = e->valuedouble;
        }
    }
    for (int c = 0; c < channels; c++) {
        if (positive ? !(v[c] > 0 && v[c] < 1e30) : !(v[c] > -1e30 && v[c] < 1e30))
            return vit_fail(err, "%s: field '%s' has %g%s", src, key, v[c],
                            positive ? " (must be positive)" : " (must be finite)");
        out[c] = (float)v[c];
    }
    return 0;
}

/* How a class reads an integer `size` (get_size's rule): a square, the short side (get_size_dict
 * with default_to_square=False, then a shortest-edge resize), or not at all (SigLIP: its
 * get_size_dict makes {"shortest_edge": N} and its preprocess reads size["height"]). */
enum { SIZE_SQUARE = 1, SIZE_SHORT = 2, SIZE_HEIGHT_WIDTH = 3, SIZE_SQUARE_OR_HW = 4 };

/* Each class's __init__ defaults for the fields a file leaves out (transformers'
 * image_processing_{vit,deit,beit,clip,bit,siglip}.py; tools/processor_reference.py has the same
 * table for the goldens). size 0 x 0 with shortest > 0: a shortest-edge resize. */
typedef struct {
    const char *name; /* without ImageProcessor / ImageProcessorFast / FeatureExtractor */
    int size_rule, height, width, shortest, resample, crop;
    const float *mean, *std;
    int keep_aspect; /* NougatImageProcessor's steps (preprocess_config.keep_aspect) */
} processor_class;

static const float half[3] = {0.5f, 0.5f, 0.5f};
static const float clip_mean[3] = {0.48145466f, 0.4578275f, 0.40821073f};
static const float clip_std[3] = {0.26862954f, 0.26130258f, 0.27577711f};
static const float imagenet_mean[3] = {0.485f, 0.456f, 0.406f};
static const float imagenet_std[3] = {0.229f, 0.224f, 0.225f};
static const processor_class classes[] = {
    {"ViT", SIZE_SQUARE, 224, 224, 0, RESAMPLE_BILINEAR, 0, half, half, 0},
    {"DeiT", SIZE_SQUARE, 256, 256, 0, RESAMPLE_BICUBIC, 224, half, half, 0},
    {"Beit", SIZE_SQUARE, 256, 256, 0, RESAMPLE_BICUBIC, 224, half, half, 0},
    {"CLIP", SIZE_SHORT, 0, 0, 224, RESAMPLE_BICUBIC, 224, clip_mean, clip_std, 0},
    {"Bit", SIZE_SHORT, 0, 0, 224, RESAMPLE_BICUBIC, 224, clip_mean, clip_std, 0},
    {"Siglip", SIZE_HEIGHT_WIDTH, 224, 224, 0, RESAMPLE_BICUBIC, 0, half, half, 0},
    /* get_size_dict(size): an int is a square; its resize reads size["height"], ["width"] */
    {"Nougat", SIZE_SQUARE_OR_HW, 896, 672, 0, RESAMPLE_BILINEAR, 0, imagenet_mean, imagenet_std,
     1},
};

/* AutoImageProcessor's class for a file that names none: IMAGE_PROCESSOR_MAPPING's entry for
 * config.json's model_type (transformers' models/auto/image_processing_auto.py). */
static const struct {
    const char *model_type, *processor;
} by_model_type[] = {
    {"vit", "ViTImageProcessor"},    {"deit", "DeiTImageProcessor"},
    {"beit", "BeitImageProcessor"},  {"data2vec-vision", "BeitImageProcessor"},
    {"dinov2", "BitImageProcessor"}, {"dinov2_with_registers", "BitImageProcessor"},
    {"clip", "CLIPImageProcessor"},  {"siglip", "SiglipImageProcessor"},
};

/* That class for the folder's config.json; ViTImageProcessor (vit's own files before they
 * named it) when there is none or its model_type has no entry (transformers then fails). */
static const char *class_for_model_type(const char *model_dir) {
    char path[4096];
    snprintf(path, sizeof path, "%s/config.json", model_dir);
    FILE *probe = fopen(path, "rb");
    if (!probe) return "ViTImageProcessor";
    fclose(probe);
    cJSON *root = json_load_object(path, NULL);
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(root, "model_type");
    const char *name = "ViTImageProcessor";
    for (size_t i = 0; cJSON_IsString(type) && i < sizeof by_model_type / sizeof by_model_type[0];
         i++)
        if (strcmp(type->valuestring, by_model_type[i].model_type) == 0)
            name = by_model_type[i].processor;
    cJSON_Delete(root);
    return name;
}

/* The class image_processor_type (or an old file's feature_extractor_type) names, or for a file
 * that names none the model_type's. NULL: a class vit does not know, whose defaults it cannot
 * guess. */
static const processor_class *processor_class_of(const cJSON *root, const char *model_dir,
                                                 const char **name) {
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(root, "image_processor_type");
    if (!cJSON_IsString(type))
        type = cJSON_GetObjectItemCaseSensitive(root, "feature_extractor_type");
    *name = cJSON_IsString(type) ? type->valuestring : class_for_model_type(model_dir);
    static const char *suffixes[] = {"ImageProcessor", "ImageProcessorFast", "FeatureExtractor"};
    for (size_t i = 0; i < sizeof classes / sizeof classes[0]; i++) {
        const size_t n = strlen(classes[i].name);
        if (strncmp(*name, classes[i].name, n) != 0) continue;
        for (size_t s = 0; s < sizeof suffixes / sizeof suffixes[0]; s++)
            if (strcmp(*name + n, suffixes[s]) == 0) return &classes[i];
    }
    return NULL;
}

/* The class's defaults into cfg. */
static void processor_defaults(const processor_class *k, preprocess_config *cfg) {
    cfg->resize_height = k->height, cfg->resize_width = k->width;
    cfg->shortest_edge = k->shortest;
    cfg->resample = k->resample;
    cfg->do_center_crop = k->crop > 0;
    cfg->crop_height = cfg->crop_width = k->crop > 0 ? k->crop : 224;
    memcpy(cfg->mean, k->mean, sizeof cfg->mean);
    memcpy(cfg->std, k->std, sizeof cfg->std);
    cfg->keep_aspect = k->keep_aspect;
    cfg->do_crop_margin = cfg->do_thumbnail = cfg->do_pad = k->keep_aspect;
    cfg->do_align_long_axis = 0;
}

/* NougatImageProcessor's own flags; it reads no center crop (a do_center_crop in its file is an
 * attribute transformers never uses). Its output must have one size: do_pad. */
static int parse_keep_aspect(const cJSON *root, preprocess_config *cfg, const char *src,
                             vit_error *err) {
    if (json_get_bool(root, "do_crop_margin", &cfg->do_crop_margin, src, err) ||
        json_get_bool(root, "do_thumbnail", &cfg->do_thumbnail, src, err) ||
        json_get_bool(root, "do_align_long_axis", &cfg->do_align_long_axis, src, err) ||
        json_get_bool(root, "do_pad", &cfg->do_pad, src, err))
        return -1;
    if (!cfg->do_pad)
        return vit_fail(err,
                        "%s: do_pad is false: NougatImageProcessor then gives images of any size, "
                        "and vit's models take one",
                        src);
    return 0;
}

static int parse_preprocessor(const cJSON *root, const char *model_dir, preprocess_config *cfg,
                              const char *src, vit_error *err) {
    double factor = cfg->rescale_factor;
    const char *name;
    const processor_class *k = processor_class_of(root, model_dir, &name);
    if (!k)
        return vit_fail(err,
                        "%s: image processor '%s' is not one vit reads (ViT, DeiT, Beit, CLIP, "
                        "Bit, Siglip, Nougat: ImageProcessor or FeatureExtractor)",
                        src, name);
    processor_defaults(k, cfg);
    if (k->size_rule == SIZE_HEIGHT_WIDTH &&
        cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(root, "size")))
        return vit_fail(err,
                        "%s: field 'size' is an integer, which %s does not take (transformers "
                        "fails on it): give {\"height\": N, \"width\": N}",
                        src, name);
    if (json_get_bool(root, "do_resize", &cfg->do_resize, src, err) ||
        get_size(root, "size",
                 k->size_rule == SIZE_HEIGHT_WIDTH || k->size_rule == SIZE_SQUARE_OR_HW
                     ? 0
                     : k->size_rule,
                 &cfg->resize_height, &cfg->resize_width, &cfg->shortest_edge, src, err) ||
        json_get_int(root, "resample", 0, 5, &cfg->resample, src, err) ||
        (k->keep_aspect ? parse_keep_aspect(root, cfg, src, err)
                        : json_get_bool(root, "do_center_crop", &cfg->do_center_crop, src, err) ||
                              get_size(root, "crop_size", 0, &cfg->crop_height, &cfg->crop_width,
                                       NULL, src, err)) ||
        json_get_bool(root, "do_rescale", &cfg->do_rescale, src, err) ||
        json_get_number(root, "rescale_factor", 1e-30, 1e30, &factor, src, err) ||
        json_get_bool(root, "do_normalize", &cfg->do_normalize, src, err) ||
        get_channel_values(root, "image_mean", cfg->channels, 0, cfg->mean, src, err) ||
        get_channel_values(root, "image_std", cfg->channels, 1, cfg->std, src, err))
        return -1;
    cfg->rescale_factor = factor;
    return 0;
}

/* timm's transforms_imagenet_eval (timm/data/transforms_factory.py) from pretrained_cfg, with
 * resolve_data_config's defaults: scale = floor(input_size / crop_pct) per side; crop_mode
 * 'center' resizes the short side to it (torchvision's Resize(int): the long side
 * int(scale * long / short), Pillow's filter), 'squash' both sides; then CenterCrop(input_size)
 * (torchvision's offsets), ToTensor (v / 255 in float32: the same floats as v * (1/255) rounded)
 * and Normalize(mean, std). */
static int parse_timm(const cJSON *p, preprocess_config *cfg, const char *src, vit_error *err) {
    static const char *const filters[] = {"nearest", "lanczos", "bilinear",
                                          "bicubic", "box",     "hamming"};
    static const float mean[3] = {0.485f, 0.456f, 0.406f}, std[3] = {0.229f, 0.224f, 0.225f};
    const cJSON *size = cJSON_GetObjectItemCaseSensitive(p, "input_size");
    const cJSON *interp = cJSON_GetObjectItemCaseSensitive(p, "interpolation");
    const cJSON *mode = cJSON_GetObjectItemCaseSensitive(p, "crop_mode");
    const char *m = cJSON_IsString(mode) ? mode->valuestring : "center";
    double pct = 0.875; /* DEFAULT_CROP_PCT */
    int border = 0, h = 224, w = 224;
    memcpy(cfg->mean, mean, sizeof mean);
    memcpy(cfg->std, std, sizeof std);
    int code = interp && !cJSON_IsNull(interp) ? -1 : RESAMPLE_BICUBIC; /* resolve_data_config */
    for (int i = 0; cJSON_IsString(interp) && i < 6; i++)
        if (strcmp(interp->valuestring, filters[i]) == 0) code = i;
    if (code < 0)
        return vit_fail(err,
                        "%s: pretrained_cfg.interpolation must be one of Pillow's filters "
                        "(bicubic, bilinear, ...)",
                        src);
    cfg->resample = code;
    if (cJSON_IsArray(size) && cJSON_GetArraySize(size) == 3) {
        const cJSON *hh = cJSON_GetArrayItem(size, 1), *ww = cJSON_GetArrayItem(size, 2);
        h = cJSON_IsNumber(hh) ? hh->valueint : 0, w = cJSON_IsNumber(ww) ? ww->valueint : 0;
    }
    if (h < 1 || w < 1 || h > IMAGE_MAX_SIDE || w > IMAGE_MAX_SIDE)
        return vit_fail(err, "%s: pretrained_cfg.input_size must be [C, H, W]", src);
    if (json_get_number(p, "crop_pct", 0.01, 100, &pct, src, err) ||
        json_get_int(p, "crop_border_pixels", 0, 0, &border, src, err) ||
        get_channel_values(p, "mean", cfg->channels, 0, cfg->mean, src, err) ||
        get_channel_values(p, "std", cfg->channels, 1, cfg->std, src, err))
        return -1;
    const int sh = (int)floor(h / pct), sw = (int)floor(w / pct);
    if (sh < 1 || sw < 1 || sh > IMAGE_MAX_SIDE || sw > IMAGE_MAX_SIDE ||
        (strcmp(m, "center") != 0 && strcmp(m, "squash") != 0) ||
        (strcmp(m, "center") == 0 && sh != sw))
        return vit_fail(err,
                        "%s: pretrained_cfg: crop_mode '%s' at crop_pct %g for %dx%d is not "
                        "one vit follows (center with a square scale, squash)",
                        src, m, pct, w, h);
    cfg->do_center_crop = cfg->torch_crop = 1;
    cfg->crop_pct = pct;
    cfg->crop_height = h, cfg->crop_width = w;
    cfg->shortest_edge = strcmp(m, "center") == 0 ? sh : 0;
    cfg->resize_height = sh, cfg->resize_width = sw;
    return 0;
}

/* config.json's pretrained_cfg when it is a timm folder's: 1 (cfg set, or -1 on an error), 0
 * when config.json is not timm's. */
static int timm_preprocessor(const char *model_dir, int channels, preprocess_config *cfg,
                             vit_error *err) {
    char path[4096];
    snprintf(path, sizeof path, "%s/config.json", model_dir);
    FILE *probe = fopen(path, "rb");
    if (!probe) return 0;
    fclose(probe);
    cJSON *root = json_load_object(path, NULL);
    const cJSON *arch = cJSON_GetObjectItemCaseSensitive(root, "architecture");
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(root, "pretrained_cfg");
    int rc = 0;
    if (cJSON_IsString(arch) && !cJSON_GetObjectItemCaseSensitive(root, "model_type")) {
        set_defaults(cfg, 224, channels);
        rc = parse_timm(cJSON_IsObject(p) ? p : root, cfg, path, err) != 0 ? -1 : 1;
    }
    cJSON_Delete(root);
    return rc;
}

/* open_clip's eval transform (transform.py image_transform, is_train false) from
 * open_clip_config.json's preprocess_cfg over PreprocessCfg's defaults (OpenAI's mean and std,
 * bicubic, 'shortest'), at the image tower's size (the factory sets preprocess_cfg's size to it):
 * 'shortest' Resize(size) on the short side (the long one int(size * long / short)), then
 * CenterCrop(size) with torchvision's offsets; 'squash' Resize((size, size)); then ToTensor and
 * Normalize(mean, std), as timm's. 'longest' (ResizeKeepRatio, CenterCropOrPad) is refused. */
static int parse_open_clip(const cJSON *p, int size, preprocess_config *cfg, const char *src,
                           vit_error *err) {
    static const float mean[3] = {0.48145466f, 0.4578275f, 0.40821073f};
    static const float std[3] = {0.26862954f, 0.26130258f, 0.27577711f};
    const cJSON *interp = cJSON_GetObjectItemCaseSensitive(p, "interpolation");
    const cJSON *mode = cJSON_GetObjectItemCaseSensitive(p, "resize_mode");
    const cJSON *color = cJSON_GetObjectItemCaseSensitive(p, "mode");
    const char *i = cJSON_IsString(interp) ? interp->valuestring : "bicubic";
    const char *m = cJSON_IsString(mode) ? mode->valuestring : "shortest";
    memcpy(cfg->mean, mean, sizeof mean);
    memcpy(cfg->std, std, sizeof std);
    if (p && !cJSON_IsObject(p))
        return vit_fail(err, "%s: field 'preprocess_cfg' must be an object", src);
    if ((interp && !cJSON_IsNull(interp) && !cJSON_IsString(interp)) ||
        (strcmp(i, "bicubic") != 0 && strcmp(i, "bilinear") != 0 && strcmp(i, "random") != 0))
        return vit_fail(err, "%s: preprocess_cfg.interpolation must be bicubic or bilinear", src);
    if ((mode && !cJSON_IsNull(mode) && !cJSON_IsString(mode)) ||
        (strcmp(m, "shortest") != 0 && strcmp(m, "squash") != 0))
        return vit_fail(err,
                        "%s: preprocess_cfg.resize_mode '%s' is not one vit follows (shortest, "
                        "squash)",
                        src, cJSON_IsString(mode) ? mode->valuestring : "?");
    if (color && !cJSON_IsNull(color) &&
        !(cJSON_IsString(color) && !strcmp(color->valuestring, "RGB")))
        return vit_fail(err, "%s: preprocess_cfg.mode must be RGB", src);
    if (get_channel_values(p, "mean", cfg->channels, 0, cfg->mean, src, err) ||
        get_channel_values(p, "std", cfg->channels, 1, cfg->std, src, err))
        return -1;
    /* 'random' is bicubic at eval time (image_transform's note) */
    cfg->resample = strcmp(i, "bilinear") == 0 ? RESAMPLE_BILINEAR : RESAMPLE_BICUBIC;
    cfg->resize_height = cfg->resize_width = size;
    cfg->shortest_edge = strcmp(m, "shortest") == 0 ? size : 0;
    cfg->do_center_crop = cfg->torch_crop = cfg->shortest_edge > 0;
    cfg->crop_height = cfg->crop_width = size;
    return 0;
}

/* An open_clip folder (open_clip_config.json, no config.json): 1 (cfg set, or -1 on an error),
 * 0 when the folder is not one. */
static int open_clip_preprocessor(const char *model_dir, int size, int channels,
                                  preprocess_config *cfg, vit_error *err) {
    char path[4096];
    snprintf(path, sizeof path, "%s/config.json", model_dir);
    FILE *probe = fopen(path, "rb");
    if (probe) return fclose(probe), 0;
    snprintf(path, sizeof path, "%s/open_clip_config.json", model_dir);
    if (!(probe = fopen(path, "rb"))) return 0;
    fclose(probe);
    cJSON *root = json_load_object(path, err);
    if (!root) return -1;
    set_defaults(cfg, size, channels);
    const int rc = parse_open_clip(cJSON_GetObjectItemCaseSensitive(root, "preprocess_cfg"), size,
                                   cfg, path, err);
    cJSON_Delete(root);
    return rc != 0 ? -1 : 1;
}

int preprocess_config_read(const char *model_dir, int image_size, int channels,
                           preprocess_config *cfg, vit_error *err) {
    /* timm runs its folders with pretrained_cfg's transform whatever else the folder holds */
    const int timm = timm_preprocessor(model_dir, channels, cfg, err);
    if (timm != 0) return timm < 0 ? -1 : 0;
    const int open_clip = open_clip_preprocessor(model_dir, image_size, channels, cfg, err);
    if (open_clip != 0) return open_clip < 0 ? -1 : 0;
    char path[4096];
    snprintf(path, sizeof path, "%s/preprocessor_config.json", model_dir);
    FILE *probe = fopen(path, "rb");
    if (!probe) {
        set_defaults(cfg, image_size, channels);
        cfg->from_defaults = 1;
        return 0;
    }
    fclose(probe);
    set_defaults(cfg, 224, channels);
    cJSON *root = json_load_object(path, err);
    if (!root) return -1;
    int rc = parse_preprocessor(root, model_dir, cfg, path, err);
    cJSON_Delete(root);
    return rc;
}

void preprocess_describe(const preprocess_config *p, char *buf, size_t size) {
    static const char *filters[] = {"nearest", "lanczos", "bilinear", "bicubic", "box", "hamming"};
    const char *filter = p->resample >= 0 && p->resample <= 5 ? filters[p->resample] : "?";
    size_t n = 0;
    if (p->keep_aspect)
        n = (size_t)snprintf(buf, size, "keep aspect (Nougat):%s%s%s%s pad to %dx%d",
                             p->do_crop_margin ? " crop margin," : "",
                             p->do_align_long_axis ? " align long axis," : "",
                             p->do_resize ? " shortest edge min(h, w)," : "",
                             p->do_thumbnail ? " thumbnail," : "", p->resize_width,
                             p->resize_height);
    else if (!p->do_resize)
        n = (size_t)snprintf(buf, size, "no resize");
    else if (p->shortest_edge > 0)
        n = (size_t)snprintf(buf, size, "shortest edge %d %s", p->shortest_edge, filter);
    else
        n = (size_t)snprintf(buf, size, "resize %dx%d %s", p->resize_width, p->resize_height,
                             filter);
    if (n < size && p->do_center_crop)
        n += (size_t)snprintf(buf + n, size - n, ", center crop %dx%d", p->crop_width,
                              p->crop_height);
    if (n < size && p->keep_aspect && p->do_resize)
        n += (size_t)snprintf(buf + n, size - n, " %s", filter);
    if (n < size && p->do_normalize)
        snprintf(buf + n, size - n, ", mean [%g %g %g] std [%g %g %g]", p->mean[0], p->mean[1],
                 p->mean[2], p->std[0], p->std[1], p->std[2]);
}

void preprocess_output_shape(const preprocess_config *cfg, int *channels, int *height, int *width) {
    *channels = cfg->channels;
    if (cfg->keep_aspect) { /* do_pad: always the size */
        *height = cfg->resize_height;
        *width = cfg->resize_width;
    } else if (cfg->do_center_crop) {
        *height = cfg->crop_height;
        *width = cfg->crop_width;
    } else if (cfg->do_resize && cfg->shortest_edge == 0) {
        *height = cfg->resize_height;
        *width = cfg->resize_width;
    } else {
        *height = *width = 0; /* follows the image */
    }
}

void preprocess_config_set_size(preprocess_config *cfg, int size) {
    int c, h, w;
    preprocess_output_shape(cfg, &c, &h, &w);
    if (h == size && w == size) return;
    if (cfg->keep_aspect) {
        cfg->resize_height = cfg->resize_width = size;
    } else if (cfg->crop_pct > 0) { /* timm: resolve_data_config at input_size (3, size, size) */
        const int scale = (int)floor(size / cfg->crop_pct);
        if (cfg->shortest_edge > 0) cfg->shortest_edge = scale;
        cfg->resize_height = cfg->resize_width = scale;
        cfg->crop_height = cfg->crop_width = size;
    } else if (cfg->do_center_crop && cfg->do_resize) {
        /* keep the crop's share of the resized image (timm's crop_pct) */
        if (cfg->shortest_edge > 0) {
            cfg->shortest_edge = (int)((double)cfg->shortest_edge * size / cfg->crop_height);
        } else {
            cfg->resize_height = (int)((double)cfg->resize_height * size / cfg->crop_height);
            cfg->resize_width = (int)((double)cfg->resize_width * size / cfg->crop_width);
        }
        cfg->crop_height = cfg->crop_width = size;
    } else if (cfg->do_center_crop) {
        cfg->crop_height = cfg->crop_width = size;
    } else {
        cfg->do_resize = 1;
        cfg->shortest_edge = 0;
        cfg->resize_height = cfg->resize_width = size;
    }
}

/* HF get_resize_output_image_size(default_to_square=False): the short side becomes S, the long
 * one int(S * long / short). An error when that side would be absurd (an extreme aspect ratio):
 * it cannot be resized to anyway. */
static int shortest_edge_size(int width, int height, int s, int *out_w, int *out_h,
                              vit_error *err) {
    const int is_wide = width > height;
    const int shorter = is_wide ? height : width, longer = is_wide ? width : height;
    const double new_long = floor((double)s * longer / shorter);
    if (new_long > (double)IMAGE_DEFAULT_MAX_PIXELS / s)
        return vit_fail(err,
                        "preprocess: a %dx%d image with its short side at %d would be %.0f pixels "
                        "long, beyond the limit of %lld pixels",
                        width, height, s, new_long, IMAGE_DEFAULT_MAX_PIXELS);
    *out_w = is_wide ? (int)new_long : s;
    *out_h = is_wide ? s : (int)new_long;
    return 0;
}

static int floor_half(int n) {
    return n >= 0 ? n / 2 : -((-n + 1) / 2);
}

/* Where a crop of the resized side starts (negative: the crop is larger, zeros around): HF's
 * (size - crop) // 2, or torchvision's CenterCrop: round((size - crop) / 2.0) half to even, and
 * a larger crop pads (crop - size) // 2 before. */
static int crop_offset(const preprocess_config *cfg, int d) {
    if (!cfg->torch_crop) return floor_half(d);
    if (d < 0) return -((-d) / 2);
    return d / 2 + (d % 2 && (d / 2) % 2); /* k + 0.5 rounds to the even of k, k + 1 */
}

/* Center crop (zero outside the image) fused with rescale, normalise and HWC -> CHW. */
HOT_LOOP static void crop_normalize(const preprocess_config *cfg, const image_u8 *img, int out_h,
                                    int out_w, int top, int left, float *out) {
    const int C = img->channels;
    for (int c = 0; c < C; c++) {
        float table[256];
        for (int v = 0; v < 256; v++) {
            float x = cfg->do_rescale ? (float)(v * cfg->rescale_factor) : (float)v;
            table[v] = cfg->do_normalize ? (x - cfg->mean[c]) / cfg->std[c] : x;
        }
        for (int y = 0; y < out_h; y++) {
            const int sy = y + top;
            float *o = out + ((size_t)c * out_h + y) * out_w;
            for (int x = 0; x < out_w; x++) {
                const int sx = x + left;
                const int inside = sy >= 0 && sy < img->height && sx >= 0 && sx < img->width;
                o[x] = table[inside ? img->pixels[((size_t)sy * img->width + sx) * C + c] : 0];
            }
        }
    }
}

/* NougatImageProcessor.crop_margin: the box of the pixels whose grey (Pillow's L), stretched to
 * 0..255 in float64 as numpy does, is below 200; an image of one grey is left whole. */
static void margin_box(const image_u8 *img, int *x0, int *y0, int *x1, int *y1) {
    const int C = img->channels;
    const size_t n = (size_t)img->width * img->height;
    int lo = 255, hi = 0;
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1) {
            *x0 = img->width, *y0 = img->height, *x1 = *y1 = 0;
            if (lo == hi) { /* max == min: nothing to crop */
                *x0 = *y0 = 0, *x1 = img->width, *y1 = img->height;
                return;
            }
        }
        for (size_t i = 0; i < n; i++) {
            const uint8_t *p = img->pixels + i * C;
            const int v =
                C == 3 ? (int)((19595u * p[0] + 38470u * p[1] + 7471u * p[2] + 0x8000u) >> 16)
                       : p[0];
            if (pass == 0) {
                lo = v < lo ? v : lo, hi = v > hi ? v : hi;
                continue;
            }
            if (!((double)(v - lo) / (double)(hi - lo) * 255.0 < 200.0)) continue;
            const int x = (int)(i % img->width), y = (int)(i / img->width);
            if (x < *x0) *x0 = x;
            if (y < *y0) *y0 = y;
            if (x + 1 > *x1) *x1 = x + 1;
            if (y + 1 > *y1) *y1 = y + 1;
        }
    }
}

/* Pixels x0..x1 x y0..y1 of img, or (rotate) img turned 90 degrees clockwise, np.rot90(img, 3),
 * into a new image. */
static int crop_or_turn(const image_u8 *img, int x0, int y0, int x1, int y1, int rotate,
                        image_u8 *out, vit_error *err) {
    const int C = img->channels, w = rotate ? img->height : x1 - x0,
              h = rotate ? img->width : y1 - y0;
    uint8_t *px = malloc((size_t)w * h * C);
    if (!px) return vit_fail(err, "preprocess: out of memory");
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            /* rot90(k=3): out[y][x] = in[H - 1 - x][y] */
            const int sx = rotate ? y : x + x0, sy = rotate ? img->height - 1 - x : y + y0;
            memcpy(px + ((size_t)y * w + x) * C, img->pixels + ((size_t)sy * img->width + sx) * C,
                   (size_t)C);
        }
    *out = (image_u8){w, h, C, px};
    return 0;
}

/* Replaces *cur (owned when it is not orig) by next. */
static void step_to(image_u8 *owned, const image_u8 **cur, image_u8 *next) {
    image_free(owned);
    *owned = *next;
    *cur = owned;
}

/* NougatImageProcessor.preprocess step by step (transformers'
 * models/nougat/image_processing_nougat.py), every resize Pillow's. */
static int keep_aspect_image(const preprocess_config *cfg, const image_u8 *img, float *out,
                             vit_error *err) {
    const int H = cfg->resize_height, W = cfg->resize_width;
    const image_u8 *cur = img;
    image_u8 owned = {0}, next = {0};
    int rc = 0;
    if (cfg->do_crop_margin) {
        int x0 = 0, y0 = 0, x1 = cur->width, y1 = cur->height; /* set by margin_box */
        margin_box(cur, &x0, &y0, &x1, &y1);
        if (x0 != 0 || y0 != 0 || x1 != cur->width || y1 != cur->height) {
            if ((rc = crop_or_turn(cur, x0, y0, x1, y1, 0, &next, err)) != 0) goto done;
            step_to(&owned, &cur, &next);
        }
    }
    if (cfg->do_align_long_axis &&
        ((W < H && cur->width > cur->height) || (W > H && cur->width < cur->height))) {
        if ((rc = crop_or_turn(cur, 0, 0, 0, 0, 1, &next, err)) != 0) goto done;
        step_to(&owned, &cur, &next);
    }
    if (cfg->do_resize) { /* the short side to min(height, width), the long int(s * long / short) */
        int rw = 0, rh = 0;
        if ((rc = shortest_edge_size(cur->width, cur->height, H < W ? H : W, &rw, &rh, err)) != 0 ||
            (rc = image_resize(cur, rw, rh, cfg->resample, &next, err)) != 0)
            goto done;
        step_to(&owned, &cur, &next);
    }
    if (cfg->do_thumbnail) { /* no side beyond the size, aspect kept by truncation */
        int th = cur->height < H ? cur->height : H, tw = cur->width < W ? cur->width : W;
        if (th != cur->height || tw != cur->width) {
            if (cur->height > cur->width)
                tw = (int)((double)((int64_t)cur->width * th) / cur->height);
            else if (cur->width > cur->height)
                th = (int)((double)((int64_t)cur->height * tw) / cur->width);
            if (tw < 1 || th < 1) {
                rc = vit_fail(err,
                              "preprocess: a %dx%d image has no %dx%d thumbnail of a pixel or "
                              "more (transformers fails on it too)",
                              cur->width, cur->height, W, H);
                goto done;
            }
            if ((rc = image_resize_reducing(cur, tw, th, RESAMPLE_BICUBIC, 2.0, &next, err)) != 0)
                goto done;
            step_to(&owned, &cur, &next);
        }
    }
    if (cur->width > W || cur->height > H) { /* np.pad refuses a negative padding */
        rc = vit_fail(err,
                      "preprocess: the image is %dx%d after resizing, larger than the pad size "
                      "%dx%d (transformers fails on it too)",
                      cur->width, cur->height, W, H);
        goto done;
    }
    /* pad_image: (size - image) // 2 before, the rest after, value 0 */
    crop_normalize(cfg, cur, H, W, -((H - cur->height) / 2), -((W - cur->width) / 2), out);
done:
    image_free(&owned);
    return rc;
}

int preprocess_geometry_of(const preprocess_config *cfg, int width, int height,
                           preprocess_geometry *g, vit_error *err) {
    int c;
    if (cfg->keep_aspect)
        return vit_fail(err, "preprocess: where a keep-aspect (Nougat) input comes from depends on "
                             "the pixels (its margin crop), not on the image's size alone");
    preprocess_output_shape(cfg, &c, &g->out_h, &g->out_w);
    if (g->out_h == 0) return vit_fail(err, "preprocess: the configuration gives no fixed size");
    g->resized_w = width, g->resized_h = height;
    if (cfg->do_resize) {
        g->resized_w = cfg->resize_width, g->resized_h = cfg->resize_height;
        if (cfg->shortest_edge > 0 && shortest_edge_size(width, height, cfg->shortest_edge,
                                                         &g->resized_w, &g->resized_h, err) != 0)
            return -1;
    }
    g->top = crop_offset(cfg, g->resized_h - g->out_h);
    g->left = crop_offset(cfg, g->resized_w - g->out_w);
    return 0;
}

int preprocess_image(const preprocess_config *cfg, const image_u8 *img, float *out,
                     vit_error *err) {
    if (img->channels != cfg->channels)
        return vit_fail(err, "preprocess: image has %d channels, the model takes %d", img->channels,
                        cfg->channels);
    if (cfg->keep_aspect) return keep_aspect_image(cfg, img, out, err);
    preprocess_geometry g = {0};
    if (preprocess_geometry_of(cfg, img->width, img->height, &g, err) != 0) return -1;
    image_u8 resized = {0};
    const image_u8 *src = img;
    if (cfg->do_resize) {
        if (image_resize(img, g.resized_w, g.resized_h, cfg->resample, &resized, err) != 0)
            return -1;
        src = &resized;
    }
    crop_normalize(cfg, src, g.out_h, g.out_w, g.top, g.left, out);
    image_free(&resized);
    return 0;
}

int preprocess_file(const preprocess_config *cfg, const char *path, int64_t max_pixels, int flags,
                    float *out, vit_error *err) {
    image_u8 img;
    if (image_decode_file(path, cfg->channels, max_pixels, flags, &img, err) != 0) return -1;
    int rc = preprocess_image(cfg, &img, out, err);
    if (rc != 0 && err) {
        /* name the file: preprocess_image's errors do not know it */
        vit_error inner = *err;
        vit_fail(err, "%s: %s", path, inner.msg);
    }
    image_free(&img);
    return rc;
}
