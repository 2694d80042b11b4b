/* The ViT forward pass (and DeiT's, DINOv2's, BEiT's: the same network with other parts), top to
 * bottom, and its backward: patches -> embeddings (+registers, +dropout) -> encoder (with BEiT's
 * relative position biases) -> the final LayerNorm on the rows the classifiers read -> classifiers;
 * then the same stages backwards. */
#include "vit/model/vit_model.h"

#include <stdlib.h>
#include <string.h>

#include "patch/patch.h"
#include "vit/base/alloc.h"
#include "vit/core/ops.h"
#include "vit/core/probe.h"

/* The absolute positions at this size: the model's (its grid nh x nw), or resized from its grid as
 * transformers does (DINOv2 with registers: antialiased; only a square grid runs at other sizes,
 * set_resolution). */
static int resize_positions(vit_acts *a, const model *m, int nh, int nw, vit_error *err) {
    const model_config *c = &m->cfg;
    const int S = c->opt.special, n = nh;
    a->pos = m->pos_embed;
    if ((a->grid_h == nh && a->grid_w == nw) || !m->pos_embed) return 0;
    a->pos_owned = vit_alloc_floats((size_t)(S + a->grid_h * a->grid_w) * c->hidden_size);
    if (!a->pos_owned || pos_embed_resize_rect(
                             a->pos_owned, m->pos_embed, S, n, a->grid_h, a->grid_w, c->hidden_size,
                             c->opt.pos_antialias ? GRID_BICUBIC_AA : GRID_BICUBIC) != 0)
        return vit_fail(err, "out of memory");
    a->pos = a->pos_owned;
    return 0;
}

/* BEiT's relative position tables at this size (docs/SPEC.md §12): bilinear copies when the
 * window differs from the config's; and the buffers for the biases built from them. */
static int relative_biases(vit_acts *a, const model *m, int n, vit_error *err) {
    const tower_options *o = &m->cfg.opt;
    const int L = m->cfg.num_layers, H = m->cfg.num_heads, T = a->tokens;
    a->nbias = o->rel_bias ? L : o->shared_rel_bias ? 1 : 0;
    if (!a->nbias) return 0;
    const int tables = (o->rel_bias ? L : 0) + o->shared_rel_bias;
    const size_t rows = (size_t)relpos_table_rows(a->grid_h) * H, TT = (size_t)T * T;
    a->bias = vit_alloc_floats((size_t)a->nbias * H * TT);
    a->dbias = a->training ? vit_alloc_floats((size_t)a->nbias * H * TT) : NULL;
    a->run_layers = calloc((size_t)L, sizeof *a->run_layers);
    a->grad_layers = a->training ? calloc((size_t)L, sizeof *a->grad_layers) : NULL;
    if (a->grid_h != n) a->rel_resized = vit_alloc_floats((size_t)tables * rows);
    int ok = a->bias && a->run_layers && (!a->training || (a->dbias && a->grad_layers)) &&
             (a->grid_h == n || a->rel_resized);
    for (int t = 0; ok && a->rel_resized && t < tables; t++) {
        const float *from = o->rel_bias && t < L ? m->rel_table[t] : m->shared_rel_table;
        ok = relpos_table_resize(a->rel_resized + t * rows, from, n, a->grid_h, H) == 0;
    }
    return ok ? 0 : vit_fail(err, "out of memory for the relative position biases");
}

/* A side that is not a multiple of the patch runs as transformers runs it: the patch convolution
 * (stride P, no padding) leaves out the last side % P pixels (google/siglip-so400m-patch14-384:
 * 384 = 27 x 14 + 6). */
static int check_side(int side, int P, vit_error *err) {
    if (side < P) return vit_fail(err, "input size %d is smaller than the patch size %d", side, P);
    if (side / P > CONFIG_MAX_GRID)
        return vit_fail(err, "input size %d is %d patches per side, more than the limit of %d",
                        side, side / P, CONFIG_MAX_GRID);
    return 0;
}

/* BEiT's relative position tables are resized for a square window only (relpos_table_resize);
 * transformers' BeitRelativePositionBias interpolates to a rectangle since 4.43, which vit does not
 * follow yet: refused rather than run with a wrong bias. */
static int check_rel_bias_grid(const vit_acts *a, const model *m, vit_error *err) {
    const tower_options *o = &m->cfg.opt;
    if ((o->rel_bias || o->shared_rel_bias) && a->grid_h != a->grid_w)
        return vit_fail(err,
                        "%s at %dx%d pixels: its relative position bias runs on a square patch "
                        "grid only, not %dx%d (give its preprocessor a square size)",
                        config_architecture(&m->cfg), a->width, a->height, a->grid_w, a->grid_h);
    return 0;
}

static int set_resolution(vit_acts *a, const model *m, int height, int width, vit_error *err) {
    const model_config *c = &m->cfg;
    const int P = c->patch_size, square = c->image_width == c->image_size;
    if (!square && height > 0 && (height != c->image_size || width != c->image_width))
        return vit_fail(err,
                        "a model of %d x %d pixels runs at that size only (its positions are "
                        "not a square grid to interpolate)",
                        c->image_size, c->image_width);
    a->height = height > 0 ? height : c->image_size;
    a->width = height > 0 ? width : c->image_width;
    if (check_side(a->height, P, err) != 0 || check_side(a->width, P, err) != 0) return -1;
    a->special = config_special_tokens(c);
    a->heads = config_classifier_heads(c);
    a->grid_h = a->height / P, a->grid_w = a->width / P;
    a->tokens = a->grid_h * a->grid_w + a->special;
    a->patch_dim = c->num_channels * P * P;
    const int nh = c->image_size / P, nw = c->image_width / P;
    if (check_rel_bias_grid(a, m, err) != 0 || resize_positions(a, m, nh, nw, err) != 0) return -1;
    return relative_biases(a, m, nh, err); /* BEiT's: square models only (config.c) */
}

/* What the configuration allows: training at image_size, explanations of one-head models, the
 * joint and encoder-decoder towers at their size only (height x width; 0: the model's). */
static int check_use(const model *m, int height, int width, int training, vit_error *err) {
    const model_config *c = &m->cfg;
    if (c->kind != MODEL_VIT) return vit_fail(err, "not a ViT model");
    if (training && m->weights_released)
        return vit_fail(err,
                        "loaded for inference only (the weights its prepared layers copied were "
                        "released): it cannot %s",
                        training == VIT_ACTS_EXPLAIN ? "explain" : "train");
    const int other = height > 0 && (height != c->image_size || width != c->image_width);
    /* a square size: the height alone (a non-square model says so in set_resolution) */
    const int other_side =
        height > 0 && (height != c->image_size || (width != height && width != c->image_width));
    if (training == VIT_ACTS_TRAIN && other)
        return vit_fail(err, "training runs at the model's image_size %d, not %d", c->image_size,
                        height);
    if (training == VIT_ACTS_EXPLAIN && config_classifier_heads(c) > 1)
        return vit_fail(err,
                        "%s: no explanations for a model with two heads (the backward runs "
                        "one); a DeiTForImageClassification has one",
                        config_architecture(c));
    const int trains =
        c->family == FAMILY_PLAIN || config_is_backbone(c) || c->family == FAMILY_VED;
    if (training == VIT_ACTS_EXPLAIN && !trains)
        return vit_fail(err,
                        "%s: no explanations for this family yet (they run the training forward, "
                        "which it does not have)",
                        config_architecture(c));
    if (training && !trains)
        return vit_fail(err, "%s: inference only, for now (no training forward for this family)",
                        config_architecture(c));
    if (c->family != FAMILY_PLAIN && !config_is_backbone(c) && other_side)
        return vit_fail(err, "%s: inference at the model's image_size only, for now",
                        config_architecture(c));
    if (training && config_classifier_heads(c) > 1)
        return vit_fail(err,
                        "%s is inference-only (as in Hugging Face): fine-tune it as a "
                        "DeiTForImageClassification",
                        config_architecture(c));
    if (training == VIT_ACTS_TRAIN && c->opt.head == HEAD_NONE && c->opt.pool != POOL_ALL)
        return vit_fail(err,
                        "%s has no classifier to train: fine-tune it with a new one (vit train "
                        "--init)",
                        config_architecture(c));
    return 0;
}

/* The forward's buffers beyond the encoder's. */
static int alloc_buffers(vit_acts *a, const model *m, int max_batch, int training) {
    const size_t B = (size_t)max_batch, N = (size_t)a->grid_h * a->grid_w, T = (size_t)a->tokens;
    const size_t D = (size_t)m->cfg.hidden_size, K = (size_t)a->patch_dim;
    const size_t H = (size_t)a->heads, L = (size_t)m->cfg.num_labels;
    const size_t g = training ? 1 : 0; /* gradient buffers only when training */
    const pool_kind pool = m->cfg.opt.pool;
    const size_t all = pool == POOL_CLS_MEAN || pool == POOL_NORM_MEAN; /* every row normalised */
    const size_t ved = g && m->cfg.opt.pool == POOL_ALL ? 1 : 0;        /* kept for the backward */
    const size_t sizes[] = {
        B * N * K,           B * N * D,       B * T * D,       H * B * D,
        H * B * D,           H * B,           H * B,           (H - 1) * B * L,
        g * B * T * D,       g * H * B * D,   g * H * B * D,   all * B * T * D,
        all * B * T,         all * B * T,     all * B * 2 * D, g * all * B * 2 * D,
        g * all * B * T * D, ved * B * T * D, ved * B * T,     ved * B * T};
    float **fields[] = {&a->patches,  &a->embed,    &a->x,        &a->cls_in,   &a->cls_ln,
                        &a->cls_mean, &a->cls_rstd, &a->head_out, &a->dx,       &a->dcls_in,
                        &a->dcls_ln,  &a->hid_ln,   &a->hid_mean, &a->hid_rstd, &a->feat,
                        &a->dfeat,    &a->dhid_ln,  &a->all_in,   &a->all_mean, &a->all_rstd};
    a->block = alloc_float_block(sizeof sizes / sizeof sizes[0], sizes, fields);
    if (training) a->emb_keep = malloc(B * T * D);
    const int probe = m->cfg.opt.pool == POOL_PROBE;
    if (probe)
        a->probe_scratch = vit_alloc_floats(probe_pool_scratch_floats(
            max_batch, a->tokens, m->cfg.hidden_size, m->cfg.intermediate_size));
    return a->block && (!training || a->emb_keep) && (!probe || a->probe_scratch) ? 0 : -1;
}

int vit_model_check_explain(const model *m, int size, vit_error *err) {
    return check_use(m, size, size, VIT_ACTS_EXPLAIN, err);
}

int vit_model_check_train(const model *m, vit_error *err) {
    return check_use(m, 0, 0, VIT_ACTS_TRAIN, err);
}

int vit_acts_alloc(vit_acts *a, const model *m, int max_batch, int size, int training,
                   vit_error *err) {
    return vit_acts_alloc_rect(a, m, max_batch, size, size, training, err);
}

int vit_acts_alloc_rect(vit_acts *a, const model *m, int max_batch, int height, int width,
                        int training, vit_error *err) {
    memset(a, 0, sizeof *a);
    if (check_use(m, height, width, training, err) != 0) return -1;
    if (max_batch < 1) return vit_fail(err, "batch size %d is not positive", max_batch);
    a->max_batch = max_batch;
    a->training = training;
    if (set_resolution(a, m, height, width, err) != 0) {
        vit_acts_free(a);
        return -1;
    }
    if (alloc_buffers(a, m, max_batch, training) != 0 ||
        encoder_scratch_alloc(&a->scratch, &m->enc, max_batch, a->tokens) != 0 ||
        (training && encoder_tape_alloc(&a->tape, &m->enc, max_batch, a->tokens) != 0)) {
        vit_acts_free(a);
        return vit_fail(err, "out of memory for batches of %d images", max_batch);
    }
    return 0;
}

void vit_acts_free(vit_acts *a) {
    free(a->pos_owned);
    free(a->rel_resized);
    free(a->bias);
    free(a->dbias);
    free(a->run_layers);
    free(a->grad_layers);
    free(a->block);
    free(a->emb_keep);
    free(a->probe_scratch);
    encoder_scratch_free(&a->scratch);
    encoder_tape_free(&a->tape);
    memset(a, 0, sizeof *a);
}

const float *vit_acts_hidden(const vit_acts *a) {
    return a->x;
}
const float *vit_acts_cls(const vit_acts *a) {
    return a->cls_ln;
}

void vit_model_last_hidden(const model *m, const vit_acts *a, int b, float *out) {
    const int D = m->cfg.hidden_size, T = a->tokens;
    const size_t at = (size_t)b * T * D;
    if (m->cfg.opt.pool == POOL_CLS_MEAN || m->cfg.opt.pool == POOL_NORM_MEAN)
        memcpy(out, a->hid_ln + at, sizeof(float) * (size_t)T * D);
    else if (m->cfg.opt.pool == POOL_MEAN || m->cfg.opt.pool == POOL_ALL ||
             m->cfg.opt.pool == POOL_PROBE) /* no norm, or done in place */
        memcpy(out, a->x + at, sizeof(float) * (size_t)T * D);
    else
        layernorm_forward(out, NULL, NULL, a->x + at, m->final_ln_w, m->final_ln_b, T, D,
                          m->cfg.layer_norm_eps);
}

/* The layers this forward runs: the model's, with BEiT's biases for this size built from the
 * tables (per layer, plus the shared one; a shared one alone is one bias for every layer). */
static const encoder_layer *layers_with_biases(const model *m, vit_acts *a) {
    if (!a->nbias) return m->layers;
    const tower_options *o = &m->cfg.opt;
    const int L = m->cfg.num_layers, H = m->cfg.num_heads, T = a->tokens;
    const size_t rows = (size_t)relpos_table_rows(a->grid_h) * H, HTT = (size_t)H * T * T;
    const float *shared = !o->shared_rel_bias ? NULL
                          : a->rel_resized    ? a->rel_resized + (o->rel_bias ? L : 0) * rows
                                              : m->shared_rel_table;
    /* inference acts run on weights that do not change (a loaded model is read-only): the biases
     * are built once; training's change every step */
    for (int b = 0; (a->training || !a->bias_built) && b < a->nbias; b++) {
        float *bias = a->bias + b * HTT;
        if (o->rel_bias)
            relpos_bias(bias, a->rel_resized ? a->rel_resized + b * rows : m->rel_table[b],
                        a->grid_h, H, 0);
        if (shared) relpos_bias(bias, shared, a->grid_h, H, o->rel_bias);
    }
    a->bias_built = 1;
    memcpy(a->run_layers, m->layers, sizeof *a->run_layers * (size_t)L);
    for (int l = 0; l < L; l++) a->run_layers[l].attn_bias = a->bias + (o->rel_bias ? l : 0) * HTT;
    return a->run_layers;
}

/* One classifier, head (0: classifier / cls_classifier, 1: distillation_classifier), on rows
 * [B, IN]. No classifier (a base model): the rows are the output. */
static void head_forward(const model *m, vit_acts *a, int head, const float *rows, int B, int IN,
                         int fast, float *logits) {
    const int L = m->cfg.num_labels;
    if (m->cfg.opt.head == HEAD_NONE)
        memcpy(logits, rows, sizeof(float) * (size_t)B * IN);
    else if (fast)
        gemm_run(head ? m->dist_head : m->head, rows, B, logits, a->gemm);
    else if (head)
        linear_forward(logits, rows, m->dist_head_w, m->dist_head_b, B, IN, L);
    else
        linear_forward(logits, rows, m->head_w, m->head_b, B, IN, L);
}

/* out [D] = the mean of rows [N, D] (in double). */
static void mean_rows(float *out, const float *rows, int N, int D) {
    for (int d = 0; d < D; d++) {
        double sum = 0.0;
        for (int i = 0; i < N; i++) sum += rows[(size_t)i * D + d];
        out[d] = (float)(sum / N);
    }
}

/* Dinov2ForImageClassification: the final LayerNorm on every row, then the classifier on
 * [CLS, mean of the patch rows] (registers left out). */
static void cls_mean_forward(const model *m, vit_acts *a, int B, int fast, float *logits) {
    const int D = m->cfg.hidden_size, T = a->tokens, P0 = a->special, N = T - P0;
    layernorm_forward(a->hid_ln, a->hid_mean, a->hid_rstd, a->x, m->final_ln_w, m->final_ln_b,
                      B * T, D, m->cfg.layer_norm_eps);
    for (int b = 0; b < B; b++) {
        const float *h = a->hid_ln + (size_t)b * T * D;
        float *f = a->feat + (size_t)b * 2 * D;
        memcpy(f, h, sizeof(float) * (size_t)D);
        memcpy(a->cls_ln + (size_t)b * D, h, sizeof(float) * (size_t)D);
        mean_rows(f + D, h + (size_t)P0 * D, N, D);
    }
    head_forward(m, a, 0, a->feat, B, 2 * D, fast, logits);
}

/* timm's global_pool 'avg' without fc_norm: the final LayerNorm on every row, then the classifier
 * on the mean of the patch rows (registers left out). */
static void norm_mean_forward(const model *m, vit_acts *a, int B, int fast, float *logits) {
    const int D = m->cfg.hidden_size, T = a->tokens, P0 = a->special;
    layernorm_forward(a->hid_ln, a->hid_mean, a->hid_rstd, a->x, m->final_ln_w, m->final_ln_b,
                      B * T, D, m->cfg.layer_norm_eps);
    for (int b = 0; b < B; b++)
        mean_rows(a->cls_ln + (size_t)b * D, a->hid_ln + ((size_t)b * T + P0) * D, T - P0, D);
    head_forward(m, a, 0, a->cls_ln, B, D, fast, logits);
}

/* Only the rows the classifiers read reach the final LayerNorm: token h of each image for head h,
 * gathered head by head ([heads, B, D]), or (mean pooling) the mean of the patch rows through its
 * LayerNorm. Two heads (DeiT with teacher): logits = their mean, as HF's
 * DeiTForImageClassificationWithTeacher at inference. */
static void pooled_heads_forward(const model *m, vit_acts *a, int B, int fast, float *logits) {
    const int D = m->cfg.hidden_size, T = a->tokens, H = a->heads;
    const size_t BL = (size_t)B * m->cfg.num_labels;
    for (int h = 0; h < H; h++)
        for (int b = 0; b < B; b++) {
            float *row = a->cls_in + ((size_t)h * B + b) * D;
            const float *x = a->x + (size_t)b * T * D;
            if (m->cfg.opt.pool == POOL_MEAN)
                mean_rows(row, x + (size_t)a->special * D, T - a->special, D);
            else
                memcpy(row, x + (size_t)h * D, sizeof(float) * (size_t)D);
        }
    layernorm_forward(a->cls_ln, a->cls_mean, a->cls_rstd, a->cls_in, m->final_ln_w, m->final_ln_b,
                      H * B, D, m->cfg.layer_norm_eps);
    head_forward(m, a, 0, a->cls_ln, B, D, fast, logits);
    if (H == 1) return;
    head_forward(m, a, 1, a->cls_ln + (size_t)B * D, B, D, fast, a->head_out);
    for (size_t i = 0; i < BL; i++) logits[i] = (logits[i] + a->head_out[i]) * 0.5f;
}

static void heads_forward(const model *m, vit_acts *a, int B, int fast, float *logits) {
    const model_config *c = &m->cfg;
    const int D = c->hidden_size, T = a->tokens;
    if (c->opt.pool == POOL_ALL) { /* a VisionEncoderDecoder's encoder: every row, in a->x */
        const int keep = a->mode.train && !a->mode.freeze_encoder; /* for the backward */
        if (keep) memcpy(a->all_in, a->x, sizeof(float) * (size_t)B * T * D);
        layernorm_forward(a->x, keep ? a->all_mean : NULL, keep ? a->all_rstd : NULL,
                          keep ? a->all_in : a->x, m->final_ln_w, m->final_ln_b, B * T, D,
                          c->layer_norm_eps);
    } else if (c->opt.pool == POOL_PROBE) { /* SigLIP: every row normalised, then the probe */
        layernorm_forward(a->x, NULL, NULL, a->x, m->final_ln_w, m->final_ln_b, B * T, D,
                          c->layer_norm_eps);
        probe_pool_forward(&m->probe, m->probe_token, a->x, B, T, D, c->num_heads,
                           c->intermediate_size, c->act, c->layer_norm_eps, a->probe_scratch,
                           logits);
    } else if (c->opt.pool == POOL_CLS_MEAN) {
        cls_mean_forward(m, a, B, fast, logits);
    } else if (c->opt.pool == POOL_NORM_MEAN) {
        norm_mean_forward(m, a, B, fast, logits);
    } else {
        pooled_heads_forward(m, a, B, fast, logits);
    }
}

/* patches -> tokens: one matrix product embeds every patch of the batch; CLS (and DeiT's
 * distillation token), DINOv2's registers, the positions; CLIP's pre_layrnorm; dropout. */
static void embed(const model *m, vit_acts *a, const float *pixels, int B, int fast,
                  const forward_mode *mode, float p_drop) {
    const model_config *c = &m->cfg;
    const int D = c->hidden_size, N = a->grid_h * a->grid_w, T = a->tokens;
    const size_t n = (size_t)B * T * D;
    patch_extract(a->patches, pixels, B, c->num_channels, a->height, a->width, c->patch_size);
    if (fast)
        gemm_run(m->patch, a->patches, B * N, a->embed, a->gemm);
    else
        linear_forward(a->embed, a->patches, m->patch_w, m->patch_b, B * N, a->patch_dim, D);
    patch_tokens_place(a->x, a->embed, m->cls_token, c->opt.special, m->register_tokens,
                       c->opt.registers, a->pos, B, N, D);
    if (c->opt.embed_norm) /* CLIP's pre_layrnorm */
        layernorm_forward(a->x, NULL, NULL, a->x, m->emb_ln_w, m->emb_ln_b, B * T, D,
                          c->layer_norm_eps);
    if (p_drop > 0.0f) { /* HF ViTEmbeddings ends with dropout */
        const size_t per = n / (size_t)B;
        dropout_mask_part(a->emb_keep, n, p_drop, mode->rng, (size_t)mode->batch_first * per,
                          (size_t)(mode->batch_total > 0 ? mode->batch_total : B) * per);
        dropout_forward(a->x, a->x, a->emb_keep, n, p_drop);
    }
}

/* The encoder's run for a forward in mode (and the backward that follows it): inference unless it
 * trains (explanation buffers: explains), HF's dropout when training. */
static encoder_run encoder_run_of(const vit_acts *a, const forward_mode *mode) {
    if (!mode->train || mode->freeze_encoder) return (encoder_run){.gemm = a->gemm};
    return (encoder_run){.mode = a->training == VIT_ACTS_EXPLAIN ? ENCODER_EXPLAIN : ENCODER_TRAIN,
                         .hidden_drop = mode->dropout,
                         .attn_drop = mode->attention_dropout,
                         .rng = mode->rng,
                         .batch_first = mode->batch_first,
                         .batch_total = mode->batch_total,
                         .probs_grad = a->probs_grad};
}

int vit_model_forward(const model *m, vit_acts *a, const float *pixels, int B,
                      const forward_mode *mode, float *logits, vit_error *err) {
    mode = forward_mode_or_inference(mode);
    if (B < 1 || B > a->max_batch) return vit_fail(err, "batch %d outside 1..%d", B, a->max_batch);
    if (forward_mode_check(mode, a->training, err) != 0) return -1;
    const model_config *c = &m->cfg;
    const size_t n = (size_t)B * a->tokens * c->hidden_size;
    const int encoder_trains = mode->train && !mode->freeze_encoder;
    const float p_drop = encoder_trains ? mode->dropout : 0.0f;
    a->mode = *mode;
    a->last_batch = B;
    const int fast = m->patch && !mode->train; /* prepared layers run inference */
    if (fast && !a->gemm) return vit_fail(err, "prepared layers run without a gemm_state");
    embed(m, a, pixels, B, fast, mode, p_drop);
    /* the shared encoder, pre-LN */
    const encoder_run run = encoder_run_of(a, mode);
    if (encoder_forward(&m->enc, layers_with_biases(m, a), &run, &a->scratch, &a->tape, a->x, NULL,
                        B, a->tokens) != 0)
        return vit_fail(err, "the encoder's buffers cannot run this mode (explanation buffers "
                             "run without dropout)");
    heads_forward(m, a, B, fast, logits);
    if (c->opt.pool == POOL_ALL) return forward_logits_check(mode, a->x, n, err);
    return forward_logits_check(mode, logits, (size_t)B * c->num_labels, err);
}

/* The classifier's backward into dx [B, T, D] (overwritten): the gradient reaches the rows the
 * head read, through the final LayerNorm (Dinov2ForImageClassification: every row; mean
 * pooling: its mean, spread over the patch rows; a VisionEncoderDecoder's encoder: every row,
 * dlogits being the gradient wrt its output). With a frozen encoder, dx is left alone. */
static void heads_backward(const model *m, const model *g, vit_acts *a, const float *dlogits) {
    const int B = a->last_batch, D = m->cfg.hidden_size, T = a->tokens, P0 = a->special;
    const int N = T - P0, K = m->cfg.num_labels, all = m->cfg.opt.pool == POOL_CLS_MEAN;
    const size_t n = (size_t)B * T * D;
    if (m->cfg.opt.pool == POOL_ALL) { /* dlogits: the gradient wrt every row after the norm */
        if (a->mode.freeze_encoder) return;
        memset(a->dx, 0, n * sizeof(float));
        layernorm_backward(a->dx, g->final_ln_w, g->final_ln_b, dlogits, a->all_in, a->all_mean,
                           a->all_rstd, m->final_ln_w, B * T, D);
        return;
    }
    if (all) {
        linear_backward(a->dfeat, g->head_w, g->head_b, dlogits, a->feat, m->head_w, B, 2 * D, K);
        memset(a->dhid_ln, 0, n * sizeof(float));
        for (int b = 0; b < B; b++)
            for (int i = 0; i < T; i++) {
                const float *src = a->dfeat + (size_t)b * 2 * D + (i ? D : 0);
                float *dst = a->dhid_ln + ((size_t)b * T + i) * D;
                const float scale = i == 0 ? 1.0f : i < P0 ? 0.0f : 1.0f / N;
                for (int d = 0; d < D; d++) dst[d] = src[d] * scale;
            }
    } else if (m->cfg.opt.head == HEAD_NONE) {
        memcpy(a->dcls_ln, dlogits, sizeof(float) * (size_t)B * D);
    } else {
        linear_backward(a->dcls_ln, g->head_w, g->head_b, dlogits, a->cls_ln, m->head_w, B, D, K);
    }
    const int frozen = a->mode.freeze_encoder;
    memset(a->dx, 0, n * sizeof(float));
    if (all) {
        layernorm_backward(a->dx, g->final_ln_w, g->final_ln_b, a->dhid_ln, a->x, a->hid_mean,
                           a->hid_rstd, m->final_ln_w, B * T, D);
        return;
    }
    memset(a->dcls_in, 0, sizeof(float) * (size_t)B * D);
    layernorm_backward(a->dcls_in, g->final_ln_w, g->final_ln_b, a->dcls_ln, a->cls_in, a->cls_mean,
                       a->cls_rstd, m->final_ln_w, B, D);
    /* one head: training a DeiT with teacher is refused by vit_acts_alloc */
    for (int b = 0; !frozen && b < B; b++) {
        const float *d = a->dcls_in + (size_t)b * D;
        if (m->cfg.opt.pool != POOL_MEAN) {
            memcpy(a->dx + (size_t)b * T * D, d, sizeof(float) * (size_t)D);
            continue;
        }
        for (int i = P0; i < T; i++)
            for (int k = 0; k < D; k++) a->dx[((size_t)b * T + i) * D + k] = d[k] / N;
    }
}

/* The gradients' layers with a buffer for each bias's gradient, zeroed; NULL gradients at another
 * size (explanations: the tables were resized, their gradient is not wanted). */
static const encoder_layer *grad_layers(const model *m, const model *g, vit_acts *a) {
    if (!a->nbias) return g->layers;
    const int L = m->cfg.num_layers, T = a->tokens;
    const size_t HTT = (size_t)m->cfg.num_heads * T * T;
    memcpy(a->grad_layers, g->layers, sizeof *a->grad_layers * (size_t)L);
    if (!a->rel_resized) memset(a->dbias, 0, sizeof(float) * a->nbias * HTT);
    for (int l = 0; l < L; l++)
        a->grad_layers[l].attn_bias =
            a->rel_resized ? NULL : a->dbias + (m->cfg.opt.rel_bias ? l : 0) * HTT;
    return a->grad_layers;
}

/* The bias gradients into the tables they were read from (the shared one's from every layer). */
static void bias_tables_backward(const model *m, const model *g, const vit_acts *a) {
    if (!a->nbias || a->rel_resized) return;
    const size_t HTT = (size_t)m->cfg.num_heads * a->tokens * a->tokens;
    for (int b = 0; b < a->nbias; b++) {
        const float *d = a->dbias + b * HTT;
        if (m->cfg.opt.rel_bias)
            relpos_bias_backward(g->rel_table[b], d, a->grid_h, m->cfg.num_heads);
        if (m->cfg.opt.shared_rel_bias)
            relpos_bias_backward(g->shared_rel_table, d, a->grid_h, m->cfg.num_heads);
    }
}

static void backward_pass(const model *m, const model *g, vit_acts *a, const float *dlogits) {
    const model_config *c = &m->cfg;
    const int B = a->last_batch, D = c->hidden_size, T = a->tokens, N = a->grid_h * a->grid_w;
    const size_t n = (size_t)B * T * D;
    heads_backward(m, g, a, dlogits);
    if (a->mode.freeze_encoder) return;
    const encoder_run run = encoder_run_of(a, &a->mode);
    encoder_backward(&m->enc, a->nbias ? a->run_layers : m->layers, grad_layers(m, g, a), &run,
                     &a->tape, a->dx, B, T);
    bias_tables_backward(m, g, a);
    if (a->mode.dropout > 0.0f) dropout_backward(a->dx, a->dx, a->emb_keep, n, a->mode.dropout);
    patch_tokens_place_backward(a->embed, g->cls_token, c->opt.special, g->register_tokens,
                                c->opt.registers, a->pos_owned ? NULL : g->pos_embed, a->dx, B, N,
                                D);
    linear_backward(NULL, g->patch_w, g->patch_b, a->embed, a->patches, NULL, B * N, a->patch_dim,
                    D);
}

void vit_model_backward(const model *m, const model *grads, vit_acts *a, const float *dlogits) {
    backward_pass(m, grads, a, dlogits);
    model_clear_absent(m, grads->params);
}
