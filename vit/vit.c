/* The ViT forward pass, top to bottom: patches -> embeddings -> shared encoder -> CLS head. */
#include "vit/vit.h"

#include <stdlib.h>
#include <string.h>

#include "image/image.h"
#include "patch/patch.h"
#include "vit/core/encoder.h"
#include "vit/model/model.h"
#include "vit/core/ops.h"

struct vit_context {
    model m;
    vit_params params;
    preprocess_config prep;
    int size, grid, tokens, patch_dim;
    float *pos;      /* position embeddings at the run resolution (== m.pos_embed if unchanged) */
    float *work;     /* one block: patches, embed scratch, x, cls rows */
    float *patches, *embed, *x, *cls;
    encoder_acts acts;
};

vit_params vit_default_params(void) {
    return (vit_params){.threads = 0, .max_batch = 1, .image_size = 0, .max_pixels = 0};
}

static int alloc_work(vit_context *c, vit_error *err) {
    const size_t B = (size_t)c->params.max_batch, D = (size_t)c->m.cfg.hidden_size;
    const size_t N = (size_t)c->grid * c->grid;
    size_t n_patches = B * N * c->patch_dim, n_embed = B * N * D, n_x = B * c->tokens * D, n_cls = B * D;
    c->work = malloc(sizeof(float) * (n_patches + n_embed + n_x + n_cls));
    if (!c->work) return vit_fail(err, "out of memory for batch %zu", B);
    c->patches = c->work;
    c->embed = c->patches + n_patches;
    c->x = c->embed + n_embed;
    c->cls = c->x + n_x;
    if (encoder_acts_alloc(&c->acts, &c->m.enc, (int)B, c->tokens, 0) != 0)
        return vit_fail(err, "out of memory for encoder activations (batch %zu)", B);
    return 0;
}

static int setup_resolution(vit_context *c, const char *model_dir, vit_error *err) {
    const model_config *cfg = &c->m.cfg;
    c->size = c->params.image_size > 0 ? c->params.image_size : cfg->image_size;
    if (c->size % cfg->patch_size != 0 || c->size < cfg->patch_size)
        return vit_fail(err, "%s: input size %d is not a positive multiple of the patch size %d", model_dir,
                        c->size, cfg->patch_size);
    c->grid = c->size / cfg->patch_size;
    c->tokens = c->grid * c->grid + 1;
    c->patch_dim = cfg->num_channels * cfg->patch_size * cfg->patch_size;
    int n = cfg->image_size / cfg->patch_size;
    if (c->grid == n) {
        c->pos = c->m.pos_embed;
        return 0;
    }
    c->pos = malloc(sizeof(float) * (size_t)c->tokens * cfg->hidden_size);
    if (!c->pos) return vit_fail(err, "out of memory");
    pos_embed_interpolate(c->pos, c->m.pos_embed, n, c->grid, cfg->hidden_size);
    return 0;
}

vit_context *vit_load(const char *model_dir, const vit_params *params, vit_error *err) {
    vit_context *c = calloc(1, sizeof *c);
    if (!c) return vit_fail(err, "out of memory"), NULL;
    c->params = params ? *params : vit_default_params();
    if (c->params.max_batch < 1) c->params.max_batch = 1;
    if (model_load(&c->m, model_dir, err) != 0) {
        free(c);
        return NULL;
    }
    if (c->m.cfg.kind != MODEL_VIT) {
        vit_fail(err, "%s: a BERT model; use 'vit text' for text models", model_dir);
        goto fail;
    }
    if (setup_resolution(c, model_dir, err) != 0) goto fail;
    if (preprocess_config_load(model_dir, &c->prep, err) != 0) goto fail;
    preprocess_config_set_size(&c->prep, c->size);
    int pc, ph, pw;
    preprocess_output_shape(&c->prep, &pc, &ph, &pw);
    if (pc != c->m.cfg.num_channels || ph != c->size || pw != c->size) {
        vit_fail(err, "%s: preprocessing yields %dx%dx%d but the model takes %dx%dx%d", model_dir, pc, ph,
                 pw, c->m.cfg.num_channels, c->size, c->size);
        goto fail;
    }
    if (alloc_work(c, err) != 0) goto fail;
    vit_threads_init(c->params.threads);
    return c;
fail:
    vit_free(c);
    return NULL;
}

void vit_free(vit_context *c) {
    if (!c) return;
    if (c->pos != c->m.pos_embed) free(c->pos);
    free(c->work);
    encoder_acts_free(&c->acts);
    model_free(&c->m);
    free(c);
}

int vit_num_labels(const vit_context *c) { return c->m.cfg.num_labels; }
const char *vit_label(const vit_context *c, int i) { return c->m.cfg.labels[i]; }
size_t vit_input_floats(const vit_context *c) { return (size_t)c->m.cfg.num_channels * c->size * c->size; }
int vit_tokens(const vit_context *c) { return c->tokens; }
double vit_flops_per_image(const vit_context *c) { return model_flops(&c->m, c->tokens); }

size_t vit_num_parameters(const vit_context *c) {
    size_t n = 0;
    for (int i = 0; i < c->m.num_entries; i++) n += c->m.entries[i].absent ? 0 : c->m.entries[i].numel;
    return n;
}

void vit_input_shape(const vit_context *c, int *channels, int *height, int *width) {
    *channels = c->m.cfg.num_channels;
    *height = *width = c->size;
}

int vit_preprocess_file(const vit_context *c, const char *path, float *pixels, vit_error *err) {
    return preprocess_file(&c->prep, path, c->params.max_pixels, pixels, err);
}

int vit_forward(vit_context *c, const float *pixels, int B, float *logits, vit_error *err) {
    const model *m = &c->m;
    const int D = m->cfg.hidden_size, N = c->grid * c->grid;
    if (B < 1 || B > c->params.max_batch)
        return vit_fail(err, "batch %d outside 1..%d", B, c->params.max_batch);
    patch_extract(c->patches, pixels, B, m->cfg.num_channels, c->size, c->size, m->cfg.patch_size);
    patch_embed_forward(c->x, c->embed, c->patches, m->patch_w, m->patch_b, m->cls_token, c->pos, B, N,
                        c->patch_dim, D);
    encoder_forward(&m->enc, m->layers, &c->acts, c->x, NULL, B, c->tokens);
    /* Only the CLS token reaches the classifier: normalise just those rows. */
    for (int b = 0; b < B; b++)
        layernorm_forward(c->cls + (size_t)b * D, NULL, NULL, c->x + (size_t)b * c->tokens * D,
                          m->final_ln_w, m->final_ln_b, 1, D, m->cfg.layer_norm_eps);
    linear_forward(logits, c->cls, m->head_w, m->head_b, B, D, m->cfg.num_labels);
    return 0;
}

void vit_softmax(float *logits, int n) { softmax_forward(logits, 1, n); }
