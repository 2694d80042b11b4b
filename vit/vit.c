/* The public API for images (vit.h): a loaded model, its preprocessing and its buffers. */
#include "vit/vit.h"

#include <stdatomic.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "image/image.h"
#include "vit/base/alloc.h"
#include "vit/base/threads.h"
#include "vit/core/ops.h"
#include "vit/io/model_dir.h"
#include "vit/model/explain.h"
#include "vit/model/vit_model.h"
#include "vit/vit_internal.h"

#define STR(x)  #x
#define XSTR(x) STR(x)

/* What the contexts of one vit_load (and its vit_share copies) have in common: written while
 * vit_load runs, only read after, freed with the last context using it. */
typedef struct {
    atomic_int refs;           /* contexts using it */
    model m;                   /* the parameters and their prepared layers */
    preprocess_config prep;    /* at the run size */
    vit_params params;         /* as loaded */
    char compute[128];         /* what runs the linear layers */
    char model_dir[4096];      /* for messages: the resolved folder */
    int run_height, run_width; /* where it runs: params.image_size, or DINOv2's processor's */
    char defaults[384]; /* vit_preprocess_defaults: "" when preprocessor_config.json is there */
    char preprocessing[256]; /* vit_model_info's: the steps as the folder has them */
} vit_weights;

/* One computation's state over shared weights. */
struct vit_context {
    vit_weights *w;
    vit_acts acts;
    gemm_state *gemm; /* acts.gemm: running the prepared layers */
    int threads;
    float *block; /* one image's pixels, logits of a batch, one image's normalised tokens */
    float *pixels, *logits, *tokens;
    explainer *explain; /* vit_explain's buffers, made on its first call */
};

api_image_view api_image_context(vit_context *c) {
    return (api_image_view){.m = &c->w->m,
                            .prep = &c->w->prep,
                            .size = c->acts.height == c->acts.width ? c->acts.height : 0,
                            .height = c->acts.height,
                            .width = c->acts.width,
                            .threads = c->threads,
                            .max_pixels = c->w->params.max_pixels,
                            .decode_flags =
                                c->w->params.exif_orientation ? IMAGE_EXIF_ORIENTATION : 0,
                            .model_dir = c->w->model_dir,
                            .explain = &c->explain};
}

void api_patched_geometry(const model *m, preprocess_geometry *g) {
    const int P = m->cfg.patch_size;
    g->out_w -= g->out_w % P;
    g->out_h -= g->out_h % P;
}

const float *api_image_hidden(const vit_context *c) {
    return vit_acts_hidden(&c->acts);
}

/* A failed forward's message, prefixed with the model it ran (the forward knows no path). */
static int name_model(const vit_context *c, int rc, vit_error *err) {
    if (rc != 0 && err) {
        char why[sizeof err->msg];
        snprintf(why, sizeof why, "%s", err->msg);
        vit_fail(err, "%s: %s", c->w->model_dir, why);
    }
    return rc;
}

const char *vit_version(void) {
    return XSTR(VIT_VERSION_MAJOR) "." XSTR(VIT_VERSION_MINOR) "." XSTR(VIT_VERSION_PATCH);
}

vit_params vit_default_params(void) {
    return (vit_params){.threads = 0,
                        .max_batch = 1,
                        .image_size = 0,
                        .max_pixels = 0,
                        .backend = VIT_BACKEND_DEFAULT,
                        .precision = VIT_FP32,
                        .exif_orientation = 1};
}

int api_prepare(model *m, vit_backend backend, vit_precision precision, int max_batch, int tokens,
                int threads, int release, char *compute, size_t size, vit_error *err) {
    gemm_backend b = backend == VIT_BACKEND_OPENBLAS ? GEMM_OPENBLAS : GEMM_ONEDNN;
    if (backend == VIT_BACKEND_DEFAULT && !gemm_backend_available(GEMM_ONEDNN)) b = GEMM_OPENBLAS;
    const gemm_precision p = precision == VIT_INT8   ? PRECISION_INT8
                             : precision == VIT_BF16 ? PRECISION_BF16
                                                     : PRECISION_FP32;
    const threads_scope scope = threads_begin(threads);
    const int rc = release ? model_prepare_released(m, b, p, max_batch, tokens, err)
                           : model_prepare(m, b, p, max_batch, tokens, err);
    threads_end(scope);
    if (rc != 0) return -1;
    char what[96];
    snprintf(compute, size, "%s, %s%s", gemm_backend_describe(b, what, sizeof what),
             gemm_precision_name(p),
             p == PRECISION_BF16 && !gemm_bf16_native(b)
                 ? " (computed in fp32: no bf16 kernels here)"
                 : "");
    return 0;
}

/* ---- weights: loaded once, shared ---- */

static void weights_release(vit_weights *w) {
    if (!w || atomic_fetch_sub(&w->refs, 1) != 1) return;
    model_free(&w->m);
    free(w);
}

/* The size the preprocessor makes (DINOv2 runs there by default, not at image_size: docs/SPEC.md
 * §11), a rectangle too (28x112: transformers resizes the positions to the 2x8 grid); image_size
 * when it makes none (no crop, a shortest-edge resize). */
static int processor_size(vit_weights *w, vit_error *err) {
    preprocess_config p;
    if (model_dir_load_preprocess(w->model_dir, &p, err) != 0) return -1;
    int c, h, wd;
    preprocess_output_shape(&p, &c, &h, &wd);
    w->run_height = h > 0 ? h : w->m.cfg.image_size;
    w->run_width = h > 0 ? wd : w->m.cfg.image_size;
    if (w->run_height == w->run_width) w->params.image_size = w->run_height;
    return 0;
}

/* The model of model_dir, unprepared, with one reference. */
static vit_weights *weights_load(const char *model_dir, const vit_params *params, vit_error *err) {
    vit_weights *w = calloc(1, sizeof *w);
    if (!w) return vit_fail(err, "out of memory"), NULL;
    atomic_init(&w->refs, 1);
    w->params = params ? *params : vit_default_params();
    if (w->params.max_batch < 1) w->params.max_batch = 1;
    snprintf(w->model_dir, sizeof w->model_dir, "%s", model_dir);
    /* for inference alone, each weight is read from the file as it is prepared (and released) */
    if ((w->params.inference_only ? model_load_lazy : model_load)(&w->m, model_dir, err) != 0) {
        free(w);
        return NULL;
    }
    if (w->m.cfg.kind != MODEL_VIT) {
        vit_fail(err, "%s: a text model (%s); use 'vit text' for text models", model_dir,
                 config_architecture(&w->m.cfg));
        weights_release(w);
        return NULL;
    }
    w->run_height = w->run_width = w->params.image_size;
    if (w->params.image_size == 0 && w->m.cfg.opt.processor_size && processor_size(w, err) != 0) {
        weights_release(w);
        return NULL;
    }
    ops_init();
    return w;
}

/* The preprocessing must yield exactly what the model takes at the run size. */
static int setup_preprocessing(vit_weights *w, int height, int width, vit_error *err) {
    if (model_dir_load_preprocess(w->model_dir, &w->prep, err) != 0) return -1;
    preprocess_describe(&w->prep, w->preprocessing, sizeof w->preprocessing);
    int pc, ph, pw;
    preprocess_output_shape(&w->prep, &pc, &ph, &pw);
    /* a rectangle for a model that runs at its square: transformers' forward refuses such pixels
     * (no interpolate_pos_encoding); squaring them here would run what the folder does not say */
    if (w->params.image_size == 0 && ph > 0 && ph != pw && height == width)
        return vit_fail(err,
                        "%s/preprocessor_config.json: makes %dx%d images (height x width), and the "
                        "model takes %dx%d (transformers refuses them too; a run size, --size N, "
                        "preprocesses to that square)",
                        w->model_dir, ph, pw, height, width);
    if (height == width) preprocess_config_set_size(&w->prep, height);
    preprocess_output_shape(&w->prep, &pc, &ph, &pw);
    if (pc != w->m.cfg.num_channels || ph != height || pw != width)
        return vit_fail(err, "%s: preprocessing yields %dx%dx%d but the model takes %dx%dx%d",
                        w->model_dir, pc, ph, pw, w->m.cfg.num_channels, height, width);
    if (w->prep.from_defaults) {
        char what[256];
        preprocess_describe(&w->prep, what, sizeof what);
        snprintf(w->defaults, sizeof w->defaults,
                 "no preprocessor_config.json: ViTImageProcessor's defaults at %dx%d (%s)", height,
                 width, what);
    }
    return 0;
}

/* ---- a context: one computation's state ---- */

static int alloc_buffers(vit_context *c, vit_error *err) {
    const model *m = &c->w->m;
    const size_t D = (size_t)m->cfg.hidden_size;
    const size_t sizes[] = {vit_input_floats(c), (size_t)c->w->params.max_batch * m->cfg.num_labels,
                            (size_t)c->acts.tokens * D};
    float **fields[] = {&c->pixels, &c->logits, &c->tokens};
    c->block = alloc_float_block(3, sizes, fields);
    return c->block ? 0 : vit_fail(err, "out of memory");
}

/* A context over w (taking one reference to it, released on failure), its activations and
 * buffers made; the gemm state follows once w is prepared. */
static vit_context *context_create(vit_weights *w, int threads, vit_error *err) {
    vit_context *c = calloc(1, sizeof *c);
    if (!c) {
        weights_release(w);
        return vit_fail(err, "out of memory"), NULL;
    }
    c->w = w;
    c->threads = threads;
    if (vit_acts_alloc_rect(&c->acts, &w->m, w->params.max_batch, w->run_height, w->run_width, 0,
                            err) != 0) {
        name_model(c, -1, err);
        vit_free(c);
        return NULL;
    }
    if (alloc_buffers(c, err) != 0) {
        vit_free(c);
        return NULL;
    }
    return c;
}

/* The context's gemm state for its weights' prepared layers. */
static int add_gemm_state(vit_context *c, vit_error *err) {
    c->acts.gemm = c->gemm = model_gemm_state(&c->w->m, err);
    return c->gemm ? 0 : -1;
}

vit_context *vit_load(const char *model, const vit_params *params, vit_error *err) {
    char model_dir[4096];
    if (vit_resolve_model(model, model_dir, sizeof model_dir, err) != 0) return NULL;
    vit_weights *w = weights_load(model_dir, params, err);
    if (!w) return NULL;
    vit_context *c = context_create(w, threads_resolve(w->params.threads), err);
    if (!c) return NULL;
    if (setup_preprocessing(w, c->acts.height, c->acts.width, err) != 0 ||
        api_prepare(&w->m, w->params.backend, w->params.precision, w->params.max_batch,
                    c->acts.tokens, c->threads, w->params.inference_only, w->compute,
                    sizeof w->compute, err) != 0 ||
        name_model(c, model_read_rest(&w->m, err), err) != 0 || add_gemm_state(c, err) != 0) {
        vit_free(c);
        return NULL;
    }
    return c;
}

vit_context *vit_share(const vit_context *ctx, vit_error *err) {
    atomic_fetch_add(&ctx->w->refs, 1);
    vit_context *c = context_create(ctx->w, ctx->threads, err);
    if (c && add_gemm_state(c, err) != 0) {
        vit_free(c);
        return NULL;
    }
    return c;
}

void vit_free(vit_context *c) {
    if (!c) return;
    if (c->explain) explainer_free(c->explain);
    free(c->explain);
    vit_acts_free(&c->acts);
    gemm_state_free(c->gemm);
    free(c->block);
    weights_release(c->w);
    free(c);
}

int vit_num_labels(const vit_context *c) {
    return c->w->m.cfg.num_labels;
}
int vit_has_classifier(const vit_context *c) {
    const head_kind head = c->w->m.cfg.opt.head;
    return head == HEAD_CLASSIFIER;
}
void vit_patch_grid(const vit_context *c, int *grid_h, int *grid_w) {
    *grid_h = c->acts.grid_h, *grid_w = c->acts.grid_w;
}
const char *vit_label(const vit_context *c, int i) {
    return i >= 0 && i < c->w->m.cfg.num_labels ? c->w->m.cfg.labels[i] : NULL;
}
size_t vit_input_floats(const vit_context *c) {
    return (size_t)c->w->m.cfg.num_channels * c->acts.height * c->acts.width;
}
int vit_tokens(const vit_context *c) {
    return c->acts.tokens;
}
int vit_hidden_size(const vit_context *c) {
    return c->w->m.cfg.hidden_size;
}
double vit_flops_per_image(const vit_context *c) {
    return model_flops(&c->w->m, c->acts.tokens);
}
size_t vit_num_parameters(const vit_context *c) {
    return model_live_params(&c->w->m);
}
const char *vit_compute(const vit_context *c) {
    return c->w->compute;
}
const char *api_preprocessing(const vit_context *c) {
    return c->w->preprocessing;
}
const char *vit_preprocess_defaults(const vit_context *c) {
    return c->w->defaults[0] ? c->w->defaults : NULL;
}

void vit_input_shape(const vit_context *c, int *channels, int *height, int *width) {
    *channels = c->w->m.cfg.num_channels;
    *height = c->acts.height, *width = c->acts.width;
}

/* ---- preprocessing ---- */

/* image_decode_* flags for the context's parameters. */
static int decode_flags(const vit_context *c) {
    return c->w->params.exif_orientation ? IMAGE_EXIF_ORIENTATION : 0;
}

int vit_preprocess_file(const vit_context *c, const char *path, float *pixels, vit_error *err) {
    return preprocess_file(&c->w->prep, path, c->w->params.max_pixels, decode_flags(c), pixels,
                           err);
}

/* An image already decoded: preprocess it, its errors named after `name`. */
static int preprocess_named(const vit_context *c, image_u8 *img, const char *name, float *pixels,
                            vit_error *err) {
    const int rc = preprocess_image(&c->w->prep, img, pixels, err);
    image_free(img);
    if (rc != 0 && err) {
        vit_error inner = *err;
        vit_fail(err, "%s: %s", name, inner.msg);
    }
    return rc;
}

int vit_preprocess_memory(const vit_context *c, const void *bytes, size_t size, float *pixels,
                          vit_error *err) {
    image_u8 img;
    if (image_decode_memory(bytes, size, "image in memory", c->w->prep.channels,
                            c->w->params.max_pixels, decode_flags(c), &img, err) != 0)
        return -1;
    return preprocess_named(c, &img, "image in memory", pixels, err);
}

/* The part of an image of width x height that preprocessing resizes and crops into the input and
 * the patches cover, in the image's pixels: the crop's corner and size scaled back through the
 * resize. */
static int input_region(const vit_context *c, int width, int height, float region[4],
                        vit_error *err) {
    preprocess_geometry g;
    if (preprocess_geometry_of(&c->w->prep, width, height, &g, err) != 0) return -1;
    api_patched_geometry(&c->w->m, &g);
    const double sx = (double)width / g.resized_w, sy = (double)height / g.resized_h;
    region[0] = (float)(g.left * sx);
    region[1] = (float)(g.top * sy);
    region[2] = (float)(g.out_w * sx);
    region[3] = (float)(g.out_h * sy);
    return 0;
}

int vit_preprocess_memory_region(const vit_context *c, const void *bytes, size_t size,
                                 float *pixels, int image_size[2], float region[4],
                                 vit_error *err) {
    image_u8 img;
    if (image_decode_memory(bytes, size, "image in memory", c->w->prep.channels,
                            c->w->params.max_pixels, decode_flags(c), &img, err) != 0)
        return -1;
    image_size[0] = img.width;
    image_size[1] = img.height;
    if (input_region(c, img.width, img.height, region, err) != 0) {
        image_free(&img);
        return -1;
    }
    return preprocess_named(c, &img, "image in memory", pixels, err);
}

int vit_preprocess_rgb(const vit_context *c, const uint8_t *rgb, int width, int height,
                       float *pixels, vit_error *err) {
    image_u8 img;
    if (image_from_rgb(rgb, width, height, "RGB image", c->w->prep.channels,
                       c->w->params.max_pixels, &img, err) != 0)
        return -1;
    return preprocess_named(c, &img, "RGB image", pixels, err);
}

/* ---- forward ---- */

int api_blame_input(const float *pixels, int B, size_t n, vit_error *err) {
    if (!pixels || B < 1) return 0;
    for (size_t i = 0; i < (size_t)B * n; i++)
        if (!isfinite(pixels[i])) {
            vit_fail(err, "the input has %s at image %zu, value %zu (pixels must be finite)",
                     isnan(pixels[i]) ? "NaN" : "Inf", i / n, i % n);
            return 1;
        }
    return 0;
}

int vit_forward(vit_context *c, const float *pixels, int B, float *logits, vit_error *err) {
    const model_config *cfg = &c->w->m.cfg;
    if (cfg->opt.pool == POOL_ALL && cfg->opt.joint) /* SigLIP without its probe */
        return vit_fail(err,
                        "%s: %s without its attention-pooling head has no output vector (its "
                        "features: vit_embed with VIT_POOL_MEAN or VIT_POOL_PATCHES)",
                        c->w->model_dir, config_architecture(cfg));
    const threads_scope scope = threads_begin(c->threads);
    const int rc = vit_model_forward(&c->w->m, &c->acts, pixels, B, NULL, logits, err);
    threads_end(scope);
    /* only a failed forward looks at its input: the check costs nothing when all is well; a
     * batch refused for its size was not run, and the caller's buffer may not hold B images */
    if (rc != 0 && B <= c->w->params.max_batch &&
        api_blame_input(pixels, B, vit_input_floats(c), err))
        return rc;
    return name_model(c, rc, err);
}

/* Image b's last_hidden_state rows after the special tokens (CLS, a DeiT's distillation token,
 * DINOv2's registers): into out [N, D] (patches), or their mean [D]. */
static void patch_tokens(vit_context *c, int b, int mean, float *out) {
    const int D = c->w->m.cfg.hidden_size, S = c->acts.special, N = c->acts.tokens - S;
    vit_model_last_hidden(&c->w->m, &c->acts, b, c->tokens);
    const float *rows = c->tokens + (size_t)S * D;
    if (!mean) {
        memcpy(out, rows, sizeof(float) * (size_t)N * D);
        return;
    }
    for (int d = 0; d < D; d++) {
        double sum = 0.0;
        for (int i = 0; i < N; i++) sum += rows[(size_t)i * D + d];
        out[d] = (float)(sum / N);
    }
}

/* Image b's features for pool (not VIT_POOL_JOINT) into out. Mean pooling (BEiT) has its own
 * mean, normalised, and no final LayerNorm for the CLS row; a VisionEncoderDecoder's encoder
 * normalises every row in place (its CLS row among them). */
static void image_features(vit_context *c, int b, vit_pool pool, float *out) {
    const size_t D = (size_t)c->w->m.cfg.hidden_size;
    const int own_mean = c->w->m.cfg.opt.pool == POOL_MEAN;
    const int cls_in_rows = own_mean || c->w->m.cfg.opt.pool == POOL_ALL;
    if (pool == VIT_POOL_PATCHES)
        patch_tokens(c, b, 0, out);
    else if (pool == VIT_POOL_MEAN && !own_mean)
        patch_tokens(c, b, 1, out);
    else if (pool == VIT_POOL_CLS && cls_in_rows)
        memcpy(out, vit_acts_hidden(&c->acts) + b * c->acts.tokens * D, D * sizeof(float));
    else
        memcpy(out, vit_acts_cls(&c->acts) + b * D, D * sizeof(float));
}

int vit_joint_dim(const vit_context *c) {
    api_joint j;
    return api_joint_of(&c->w->m, &j, NULL) == 0 ? j.dim : 0;
}

/* VIT_POOL_JOINT: the image tower's output, normalised. */
static int embed_joint(vit_context *c, const float *pixels, int B, float *features,
                       vit_error *err) {
    api_joint j;
    if (api_joint_of(&c->w->m, &j, err) != 0) return name_model(c, -1, err);
    const int rc = vit_forward(c, pixels, B, features, err);
    if (rc == 0) api_normalize_rows(features, B, j.dim);
    return rc;
}

/* A pooling the model cannot give: a reason, or NULL. */
static const char *pool_refused(const model_config *c, vit_pool pool) {
    if (pool == VIT_POOL_CLS && !config_class_token(c))
        return c->opt.joint ? "a SigLIP image tower has no CLS token (mean or patches; "
                              "pooler or joint with its attention-pooling head)"
               : c->opt.pool == POOL_PROBE
                   ? "this model has no class token (mean or patches; pooler: its attention pool)"
                   : "this model has no class token (mean or patches)";
    if (pool == VIT_POOL_POOLER && c->opt.pool != POOL_PROBE)
        return c->opt.pool == POOL_ALL && c->opt.joint
                   ? "a SigLIP image tower without its head (vision_use_head false) has no pooled "
                     "output (transformers' pooler_output is None): mean or patches"
                   : "VIT_POOL_POOLER for images is a SigLIP image tower's attention-pooling "
                     "output";
    if (pool == VIT_POOL_PROJECTION && c->opt.head != HEAD_PROJECTION)
        return "VIT_POOL_PROJECTION is a CLIP image tower's projection (this model has none)";
    return NULL;
}

vit_pool vit_default_pool(const vit_context *c) {
    const model_config *cfg = &c->w->m.cfg;
    if (vit_joint_dim(c) > 0) return VIT_POOL_JOINT;
    if (cfg->opt.head == HEAD_PROJECTION) return VIT_POOL_PROJECTION; /* image_embeds */
    if (cfg->opt.pool == POOL_PROBE) return VIT_POOL_POOLER;          /* SiglipVisionModel */
    /* a model pooling by the mean (BEiT's use_mean_pooling, timm's 'avg'): its pooled output */
    if (cfg->opt.pool == POOL_MEAN || cfg->opt.pool == POOL_NORM_MEAN) return VIT_POOL_MEAN;
    return config_class_token(cfg) ? VIT_POOL_CLS : VIT_POOL_MEAN;
}

int vit_embed_size(const vit_context *c, vit_pool pool) {
    if (pool == VIT_POOL_JOINT) return vit_joint_dim(c);
    if (pool == VIT_POOL_POOLER || pool == VIT_POOL_PROJECTION) return vit_num_labels(c);
    if (pool != VIT_POOL_PATCHES) return vit_hidden_size(c);
    int gh, gw;
    vit_patch_grid(c, &gh, &gw);
    return gh * gw * vit_hidden_size(c);
}

int vit_embed(vit_context *c, const float *pixels, int B, vit_pool pool, float *features,
              vit_error *err) {
    if (pool == VIT_POOL_JOINT) return embed_joint(c, pixels, B, features, err);
    if (pool != VIT_POOL_CLS && pool != VIT_POOL_MEAN && pool != VIT_POOL_PATCHES &&
        pool != VIT_POOL_POOLER && pool != VIT_POOL_PROJECTION)
        return vit_fail(err, "unknown pooling %d", (int)pool);
    const char *refused = pool_refused(&c->w->m.cfg, pool);
    if (refused) return vit_fail(err, "%s: %s", c->w->model_dir, refused);
    /* the probe's output, or the projection's, as the forward gives it */
    if (pool == VIT_POOL_POOLER || pool == VIT_POOL_PROJECTION)
        return vit_forward(c, pixels, B, features, err);
    const threads_scope scope = threads_begin(c->threads);
    const int rc = vit_model_forward(&c->w->m, &c->acts, pixels, B, NULL, c->logits, err);
    const size_t D = (size_t)c->w->m.cfg.hidden_size, N = (size_t)c->acts.grid_h * c->acts.grid_w;
    const size_t per = pool == VIT_POOL_PATCHES ? N * D : D;
    for (int b = 0; rc == 0 && b < B; b++) image_features(c, b, pool, features + b * per);
    threads_end(scope);
    return name_model(c, rc, err);
}

void vit_softmax(float *logits, int n) {
    softmax_probs(logits, logits, 1, n);
}

/* ---- classification ---- */

static const char *label_of_array(const void *labels, int index) {
    return ((char *const *)labels)[index];
}

int vit_rank(const float *values, int n, int logits, float *probs, int k, double threshold,
             const vit_labeler *labeler, vit_prediction *top, int *shown, vit_error *err) {
    if (k < 0) return vit_fail(err, "top-k: k %d is negative", k);
    k = k < n ? k : n;
    int *idx = k > 0 ? malloc(sizeof(int) * (size_t)k) : NULL;
    if (k > 0 && !idx) return vit_fail(err, "top-k: out of memory for %d indices", k);
    if (logits) softmax_probs(probs, values, 1, n);
    const float *p = logits ? probs : values;
    if (k > 0) topk_indices(p, n, k, idx);
    for (int i = 0; i < k; i++) {
        const char *label =
            labeler && labeler->label ? labeler->label(labeler->labels, idx[i]) : NULL;
        top[i] = (vit_prediction){.index = idx[i], .prob = p[idx[i]], .label = label};
    }
    free(idx);
    int above = 0; /* the top come in decreasing order */
    while (above < k && top[above].prob >= threshold) above++;
    if (shown) *shown = above;
    return k;
}

int api_top_k(char *const *labels, int L, const float *probs, int k, vit_prediction *top,
              vit_error *err) {
    const vit_labeler labeler = {label_of_array, labels};
    return vit_rank(probs, L, 0, NULL, k, 0.0, &labeler, top, NULL, err);
}

int vit_top_k(const vit_context *c, const float *probs, int k, vit_prediction *top,
              vit_error *err) {
    return api_top_k(c->w->m.cfg.labels, c->w->m.cfg.num_labels, probs, k, top, err);
}

/* ctx->pixels (one image) -> top-k. */
static int classify_pixels(vit_context *c, int k, vit_prediction *top, vit_error *err) {
    if (k < 1) return vit_fail(err, "k %d is not positive", k);
    if (vit_forward(c, c->pixels, 1, c->logits, err) != 0) return -1;
    const vit_labeler labeler = {label_of_array, c->w->m.cfg.labels};
    return vit_rank(c->logits, c->w->m.cfg.num_labels, 1, c->logits, k, 0.0, &labeler, top, NULL,
                    err);
}

int vit_classify_file(vit_context *c, const char *path, int k, vit_prediction *top,
                      vit_error *err) {
    if (vit_preprocess_file(c, path, c->pixels, err) != 0) return -1;
    return classify_pixels(c, k, top, err);
}

int vit_classify_memory(vit_context *c, const void *bytes, size_t size, int k, vit_prediction *top,
                        vit_error *err) {
    if (vit_preprocess_memory(c, bytes, size, c->pixels, err) != 0) return -1;
    return classify_pixels(c, k, top, err);
}

int vit_classify_image(vit_context *c, const uint8_t *rgb, int width, int height, int k,
                       vit_prediction *top, vit_error *err) {
    if (vit_preprocess_rgb(c, rgb, width, height, c->pixels, err) != 0) return -1;
    return classify_pixels(c, k, top, err);
}
