/* The ViT (and DeiT) forward pass, top to bottom, and its backward: patches -> embeddings
 * (+dropout) -> encoder -> final LayerNorm on the rows the classifiers read -> classifiers; then
 * the same stages backwards. */
#include "vit/model/vit_model.h"

#include <stdlib.h>
#include <string.h>

#include "patch/patch.h"
#include "vit/base/alloc.h"
#include "vit/core/ops.h"
#include "vit/core/probe.h"

static int set_resolution(vit_acts *a, const model *m, int size, vit_error *err) {
    const model_config *c = &m->cfg;
    a->size = size > 0 ? size : c->image_size;
    if (a->size % c->patch_size != 0 || a->size < c->patch_size)
        return vit_fail(err, "input size %d is not a positive multiple of the patch size %d",
                        a->size, c->patch_size);
    if (a->size / c->patch_size > CONFIG_MAX_GRID)
        return vit_fail(err, "input size %d is %d patches per side, more than the limit of %d",
                        a->size, a->size / c->patch_size, CONFIG_MAX_GRID);
    a->special = config_special_tokens(c);
    a->heads = config_classifier_heads(c);
    a->grid = a->size / c->patch_size;
    a->tokens = a->grid * a->grid + a->special;
    a->patch_dim = c->num_channels * c->patch_size * c->patch_size;
    const int n = c->image_size / c->patch_size;
    a->pos = m->pos_embed;
    if (a->grid == n) return 0;
    a->pos_owned = vit_alloc_floats((size_t)a->tokens * c->hidden_size);
    if (!a->pos_owned) return vit_fail(err, "out of memory");
    pos_embed_interpolate(a->pos_owned, m->pos_embed, a->special, n, a->grid, c->hidden_size);
    a->pos = a->pos_owned;
    return 0;
}

int vit_acts_alloc(vit_acts *a, const model *m, int max_batch, int size, int training,
                   vit_error *err) {
    memset(a, 0, sizeof *a);
    if (m->cfg.kind != MODEL_VIT) return vit_fail(err, "not a ViT model");
    if (max_batch < 1) return vit_fail(err, "batch size %d is not positive", max_batch);
    if (training == VIT_ACTS_TRAIN && size > 0 && size != m->cfg.image_size)
        return vit_fail(err, "training runs at the model's image_size %d, not %d",
                        m->cfg.image_size, size);
    if (training == VIT_ACTS_EXPLAIN && config_classifier_heads(&m->cfg) > 1)
        return vit_fail(err,
                        "%s: no explanations for a model with two heads (the backward runs "
                        "one); a DeiTForImageClassification has one",
                        config_architecture(&m->cfg));
    if (m->cfg.family != FAMILY_HF && (training || (size > 0 && size != m->cfg.image_size)))
        return vit_fail(err, "%s: inference at the model's image_size only, for now",
                        config_architecture(&m->cfg));
    if (training && config_classifier_heads(&m->cfg) > 1)
        return vit_fail(err,
                        "%s is inference-only (as in Hugging Face): fine-tune it as a "
                        "DeiTForImageClassification",
                        config_architecture(&m->cfg));
    if (set_resolution(a, m, size, err) != 0) return -1;
    a->max_batch = max_batch;
    a->training = training;
    const size_t B = (size_t)max_batch, N = (size_t)a->grid * a->grid, T = (size_t)a->tokens;
    const size_t D = (size_t)m->cfg.hidden_size, K = (size_t)a->patch_dim;
    const size_t H = (size_t)a->heads, L = (size_t)m->cfg.num_labels;
    const size_t g = training ? 1 : 0; /* gradient buffers only when training */
    const size_t sizes[] = {B * N * K,     B * N * D,     B * T * D,    H * B * D,
                            H * B * D,     H * B,         H * B,        (H - 1) * B * L,
                            g * B * T * D, g * H * B * D, g * H * B * D};
    float **fields[] = {&a->patches,  &a->embed,    &a->x,  &a->cls_in,  &a->cls_ln, &a->cls_mean,
                        &a->cls_rstd, &a->head_out, &a->dx, &a->dcls_in, &a->dcls_ln};
    a->block = alloc_float_block(sizeof sizes / sizeof sizes[0], sizes, fields);
    if (training) a->emb_keep = malloc(B * T * D);
    const int probe = m->cfg.opt.pool == POOL_PROBE;
    if (probe)
        a->probe_scratch = vit_alloc_floats(probe_pool_scratch_floats(
            max_batch, a->tokens, m->cfg.hidden_size, m->cfg.intermediate_size));
    if (!a->block || (training && !a->emb_keep) || (probe && !a->probe_scratch) ||
        encoder_acts_alloc(&a->enc, &m->enc, max_batch, a->tokens, training) != 0) {
        vit_acts_free(a);
        return vit_fail(err, "out of memory for batches of %d images", max_batch);
    }
    return 0;
}

void vit_acts_free(vit_acts *a) {
    free(a->pos_owned);
    free(a->block);
    free(a->emb_keep);
    free(a->probe_scratch);
    encoder_acts_free(&a->enc);
    memset(a, 0, sizeof *a);
}

const float *vit_acts_hidden(const vit_acts *a) {
    return a->x;
}
const float *vit_acts_cls(const vit_acts *a) {
    return a->cls_ln;
}

/* One classifier, head (0: classifier / cls_classifier, 1: distillation_classifier), on rows
 * [B, D]. */
static void head_forward(const model *m, vit_acts *a, int head, const float *rows, int B, int fast,
                         float *logits) {
    const int D = m->cfg.hidden_size, L = m->cfg.num_labels;
    if (fast)
        gemm_run(head ? m->dist_head : m->head, rows, B, logits, a->enc.gemm);
    else if (head)
        linear_forward(logits, rows, m->dist_head_w, m->dist_head_b, B, D, L);
    else
        linear_forward(logits, rows, m->head_w, m->head_b, B, D, L);
}

/* Only the rows the classifiers read reach the final LayerNorm: token h of each image for head h,
 * gathered head by head ([heads, B, D]). Two heads (DeiT with teacher): logits = their mean, as
 * HF's DeiTForImageClassificationWithTeacher at inference. */
static void heads_forward(const model *m, vit_acts *a, int B, int fast, float *logits) {
    const int D = m->cfg.hidden_size, T = a->tokens, H = a->heads;
    if (m->cfg.opt.pool == POOL_ALL) { /* a VisionEncoderDecoder's encoder: every row, in a->x */
        layernorm_forward(a->x, NULL, NULL, a->x, m->final_ln_w, m->final_ln_b, B * T, D,
                          m->cfg.layer_norm_eps);
        return;
    }
    if (m->cfg.opt.pool == POOL_PROBE) { /* SigLIP: every row normalised, then the probe */
        const model_config *c = &m->cfg;
        layernorm_forward(a->x, NULL, NULL, a->x, m->final_ln_w, m->final_ln_b, B * T, D,
                          c->layer_norm_eps);
        probe_pool_forward(&m->probe, m->probe_token, a->x, B, T, D, c->num_heads,
                           c->intermediate_size, c->act, c->layer_norm_eps, a->probe_scratch,
                           logits);
        return;
    }
    const size_t BL = (size_t)B * m->cfg.num_labels;
    for (int h = 0; h < H; h++)
        for (int b = 0; b < B; b++)
            memcpy(a->cls_in + ((size_t)h * B + b) * D, a->x + ((size_t)b * T + h) * D,
                   sizeof(float) * (size_t)D);
    layernorm_forward(a->cls_ln, a->cls_mean, a->cls_rstd, a->cls_in, m->final_ln_w, m->final_ln_b,
                      H * B, D, m->cfg.layer_norm_eps);
    head_forward(m, a, 0, a->cls_ln, B, fast, logits);
    if (H == 1) return;
    head_forward(m, a, 1, a->cls_ln + (size_t)B * D, B, fast, a->head_out);
    for (size_t i = 0; i < BL; i++) logits[i] = (logits[i] + a->head_out[i]) * 0.5f;
}

int vit_model_forward(const model *m, vit_acts *a, const float *pixels, int B,
                      const forward_mode *mode, float *logits, vit_error *err) {
    mode = forward_mode_or_inference(mode);
    if (B < 1 || B > a->max_batch) return vit_fail(err, "batch %d outside 1..%d", B, a->max_batch);
    if (forward_mode_check(mode, a->training, err) != 0) return -1;
    const model_config *c = &m->cfg;
    const int D = c->hidden_size, N = a->grid * a->grid, T = a->tokens;
    const size_t n = (size_t)B * T * D;
    const int encoder_trains = mode->train && !mode->freeze_encoder;
    const float p_drop = encoder_trains ? mode->dropout : 0.0f;
    a->mode = *mode;
    a->last_batch = B;
    /* patches -> tokens: one matrix product embeds every patch of the batch */
    const int fast = m->patch && !mode->train; /* prepared layers run inference */
    if (fast && !a->enc.gemm) return vit_fail(err, "prepared layers run without a gemm_state");
    patch_extract(a->patches, pixels, B, c->num_channels, a->size, a->size, c->patch_size);
    if (fast)
        gemm_run(m->patch, a->patches, B * N, a->embed, a->enc.gemm);
    else
        linear_forward(a->embed, a->patches, m->patch_w, m->patch_b, B * N, a->patch_dim, D);
    patch_tokens_forward(a->x, a->embed, m->cls_token, a->special, a->pos, B, N, D);
    if (c->opt.embed_norm) /* CLIP's pre_layrnorm */
        layernorm_forward(a->x, NULL, NULL, a->x, m->emb_ln_w, m->emb_ln_b, B * T, D,
                          c->layer_norm_eps);
    if (p_drop > 0.0f) { /* HF ViTEmbeddings ends with dropout */
        const size_t per = n / (size_t)B;
        dropout_mask_part(a->emb_keep, n, p_drop, mode->rng, (size_t)mode->batch_first * per,
                          (size_t)(mode->batch_total > 0 ? mode->batch_total : B) * per);
        dropout_forward(a->x, a->x, a->emb_keep, n, p_drop);
    }
    /* the shared encoder, pre-LN */
    encoder_set_mode(&a->enc, encoder_trains, p_drop, encoder_trains ? mode->attention_dropout : 0,
                     mode->rng);
    encoder_set_batch_part(&a->enc, mode->batch_first, mode->batch_total);
    encoder_forward(&m->enc, m->layers, &a->enc, a->x, NULL, B, T);
    heads_forward(m, a, B, fast, logits);
    if (c->opt.pool == POOL_ALL) return forward_logits_check(mode, a->x, n, err);
    return forward_logits_check(mode, logits, (size_t)B * c->num_labels, err);
}

static void backward_pass(const model *m, const model *g, vit_acts *a, const float *dlogits) {
    const int B = a->last_batch, D = m->cfg.hidden_size, T = a->tokens, N = a->grid * a->grid;
    const size_t n = (size_t)B * T * D;
    linear_backward(a->dcls_ln, g->head_w, g->head_b, dlogits, a->cls_ln, m->head_w, B, D,
                    m->cfg.num_labels);
    memset(a->dcls_in, 0, sizeof(float) * (size_t)B * D);
    layernorm_backward(a->dcls_in, g->final_ln_w, g->final_ln_b, a->dcls_ln, a->cls_in, a->cls_mean,
                       a->cls_rstd, m->final_ln_w, B, D);
    if (a->mode.freeze_encoder) return;
    /* only the CLS rows of the encoder output have a gradient (one head: training a DeiT with
     * teacher is refused by vit_acts_alloc) */
    memset(a->dx, 0, n * sizeof(float));
    for (int b = 0; b < B; b++)
        memcpy(a->dx + (size_t)b * T * D, a->dcls_in + (size_t)b * D, sizeof(float) * (size_t)D);
    encoder_backward(&m->enc, m->layers, g->layers, &a->enc, a->dx, B, T);
    if (a->mode.dropout > 0.0f) dropout_backward(a->dx, a->dx, a->emb_keep, n, a->mode.dropout);
    patch_tokens_backward(a->embed, g->cls_token, a->special, a->pos_owned ? NULL : g->pos_embed,
                          a->dx, B, N, D);
    linear_backward(NULL, g->patch_w, g->patch_b, a->embed, a->patches, NULL, B * N, a->patch_dim,
                    D);
}

void vit_model_backward(const model *m, const model *grads, vit_acts *a, const float *dlogits) {
    backward_pass(m, grads, a, dlogits);
    model_clear_absent(m, grads->params);
}
