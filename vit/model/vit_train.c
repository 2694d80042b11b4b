/* The ViT training step, top to bottom and back: patches -> embeddings (+dropout) -> encoder ->
 * final LayerNorm on the CLS rows -> classifier -> cross-entropy, then the same stages backwards.
 */
#include "vit/model/vit_train.h"

#include <stdlib.h>
#include <string.h>

#include "patch/patch.h"
#include "vit/base/alloc.h"
#include "vit/core/encoder.h"
#include "vit/core/ops.h"

struct vit_trainer {
    model *m;
    model g; /* the gradients: m's layout rebased onto grads */
    float *grads;
    int max_batch, freeze;
    float attn_drop;
    /* channels, image size, patch size, patches, tokens, patch dim (C·P·P), hidden, labels */
    int C, S, P, N, T, K, D, L;
    encoder_acts acts;      /* per layer: the training forward keeps everything for the backward */
    encoder_acts eval_acts; /* one shared set: eval forwards and the frozen encoder */
    float *work;            /* one block for the buffers below */
    float *patches;         /* [B·N, K] */
    float *embed;           /* [B·N, D] patch embeddings; scratch of patch_embed_backward */
    float *x, *dx;          /* [B, T, D] encoder input/output and its gradient */
    float *cls_in, *cls_ln; /* [B, D] CLS rows before and after the final LayerNorm */
    float *cls_mean, *cls_rstd;      /* [B] */
    float *dcls_ln, *dcls_in;        /* [B, D] */
    float *logits, *probs, *dlogits; /* [B, L] */
    uint8_t *emb_keep;               /* [B, T, D] embedding dropout mask */
};

static size_t pad16(size_t n) {
    return (n + 15) & ~(size_t)15;
}

static int alloc_work(vit_trainer *t) {
    const size_t B = (size_t)t->max_batch, N = (size_t)t->N, T = (size_t)t->T, D = (size_t)t->D;
    const size_t L = (size_t)t->L, K = (size_t)t->K;
    size_t sizes[] = {B * N * K, B * N * D, B * T * D, B * T * D, B * D, B * D, B,
                      B,         B * D,     B * D,     B * L,     B * L, B * L};
    float **fields[] = {&t->patches, &t->embed,    &t->x,        &t->dx,      &t->cls_in,
                        &t->cls_ln,  &t->cls_mean, &t->cls_rstd, &t->dcls_ln, &t->dcls_in,
                        &t->logits,  &t->probs,    &t->dlogits};
    size_t total = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) total += pad16(sizes[i]);
    t->work = vit_alloc_floats(total);
    t->emb_keep = malloc(B * T * D);
    if (!t->work || !t->emb_keep) return -1;
    total = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        *fields[i] = t->work + total;
        total += pad16(sizes[i]);
    }
    return 0;
}

vit_trainer *vit_trainer_create(model *m, int max_batch, vit_error *err) {
    const model_config *c = &m->cfg;
    if (c->kind != MODEL_VIT) return vit_fail(err, "training supports ViT models only"), NULL;
    if (max_batch < 1) return vit_fail(err, "max_batch %d must be at least 1", max_batch), NULL;
    if (c->image_size % c->patch_size != 0)
        return vit_fail(err, "image_size %d is not a multiple of patch_size %d", c->image_size,
                        c->patch_size),
               NULL;
    vit_trainer *t = calloc(1, sizeof *t);
    if (!t) return vit_fail(err, "out of memory"), NULL;
    t->m = m;
    t->max_batch = max_batch;
    t->C = c->num_channels;
    t->S = c->image_size;
    t->P = c->patch_size;
    t->N = (t->S / t->P) * (t->S / t->P);
    t->T = t->N + 1;
    t->K = t->C * t->P * t->P;
    t->D = c->hidden_size;
    t->L = c->num_labels;
    t->grads = vit_alloc_floats(m->num_params);
    if (!t->grads || model_bind(&t->g, m, t->grads) != 0 || alloc_work(t) != 0 ||
        encoder_acts_alloc(&t->acts, &m->enc, max_batch, t->T, 1) != 0 ||
        encoder_acts_alloc(&t->eval_acts, &m->enc, max_batch, t->T, 0) != 0) {
        vit_trainer_free(t);
        return vit_fail(err, "out of memory for training buffers (batch %d)", max_batch), NULL;
    }
    vit_trainer_zero_grads(t);
    vit_threads_init(0);
    return t;
}

void vit_trainer_free(vit_trainer *t) {
    if (!t) return;
    encoder_acts_free(&t->acts);
    encoder_acts_free(&t->eval_acts);
    if (t->g.layers) model_unbind(&t->g);
    free(t->grads);
    free(t->work);
    free(t->emb_keep);
    free(t);
}

float *vit_trainer_grads(vit_trainer *t) {
    return t->grads;
}
const model *vit_trainer_grad_model(const vit_trainer *t) {
    return &t->g;
}
const float *vit_trainer_last_logits(const vit_trainer *t) {
    return t->logits;
}
void vit_trainer_zero_grads(vit_trainer *t) {
    memset(t->grads, 0, t->m->num_params * sizeof(float));
}
void vit_trainer_freeze_encoder(vit_trainer *t, int freeze) {
    t->freeze = freeze;
}
void vit_trainer_set_attention_dropout(vit_trainer *t, float p) {
    t->attn_drop = p;
}

/* pixels -> x [B, T, D]: the encoder's input. */
static void embed(vit_trainer *t, const float *pixels, int B) {
    const model *m = t->m;
    patch_extract(t->patches, pixels, B, t->C, t->S, t->S, t->P);
    patch_embed_forward(t->x, t->embed, t->patches, m->patch_w, m->patch_b, m->cls_token,
                        m->pos_embed, B, t->N, t->K, t->D);
}

/* Final LayerNorm on the CLS rows only (nothing else reaches the classifier), then the logits. */
static void head_forward(vit_trainer *t, int B, float *logits) {
    const model *m = t->m;
    const int D = t->D;
    for (int b = 0; b < B; b++)
        memcpy(t->cls_in + (size_t)b * D, t->x + (size_t)b * t->T * D, sizeof(float) * (size_t)D);
    layernorm_forward(t->cls_ln, t->cls_mean, t->cls_rstd, t->cls_in, m->final_ln_w, m->final_ln_b,
                      B, D, m->cfg.layer_norm_eps);
    linear_forward(logits, t->cls_ln, m->head_w, m->head_b, B, D, t->L);
}

/* dlogits -> dx [B, T, D], zero but for the CLS rows. */
static void head_backward(vit_trainer *t, int B) {
    const model *m = t->m;
    const int D = t->D;
    linear_backward(t->dcls_ln, t->g.head_w, t->g.head_b, t->dlogits, t->cls_ln, m->head_w, B, D,
                    t->L);
    memset(t->dcls_in, 0, sizeof(float) * (size_t)B * D);
    layernorm_backward(t->dcls_in, t->g.final_ln_w, t->g.final_ln_b, t->dcls_ln, t->cls_in,
                       t->cls_mean, t->cls_rstd, m->final_ln_w, B, D);
}

static int check_batch(const vit_trainer *t, const float *pixels, int B, vit_error *err) {
    if (B < 1 || B > t->max_batch) return vit_fail(err, "batch %d outside 1..%d", B, t->max_batch);
    if (!pixels) return vit_fail(err, "no pixels");
    return 0;
}

static int check_step_args(const vit_trainer *t, const int *labels, int B, float smoothing,
                           float p_drop, const uint64_t *rng, vit_error *err) {
    if (!labels) return vit_fail(err, "no labels");
    for (int b = 0; b < B; b++)
        if (labels[b] < 0 || labels[b] >= t->L)
            return vit_fail(err, "label %d of image %d outside 0..%d", labels[b], b, t->L - 1);
    if (!(smoothing >= 0.0f && smoothing <= 1.0f))
        return vit_fail(err, "label smoothing %g outside [0, 1]", smoothing);
    if (!(p_drop >= 0.0f && p_drop < 1.0f))
        return vit_fail(err, "dropout %g outside [0, 1)", p_drop);
    if (!(t->attn_drop >= 0.0f && t->attn_drop < 1.0f))
        return vit_fail(err, "attention dropout %g outside [0, 1)", t->attn_drop);
    if ((p_drop > 0.0f || t->attn_drop > 0.0f) && !rng)
        return vit_fail(err, "dropout needs an rng state");
    return 0;
}

static int count_correct(const float *logits, const int *labels, int B, int L) {
    int correct = 0;
    for (int b = 0; b < B; b++) {
        const float *z = logits + (size_t)b * L;
        int best = 0;
        for (int j = 1; j < L; j++)
            if (z[j] > z[best]) best = j;
        correct += best == labels[b];
    }
    return correct;
}

/* Absent parameters (no qkv bias in the checkpoint) are frozen at zero: drop what they received. */
static void zero_absent_grads(vit_trainer *t) {
    for (int i = 0; i < t->m->num_entries; i++) {
        const param_entry *e = &t->m->entries[i];
        if (e->absent) memset(t->grads + e->offset, 0, e->numel * sizeof(float));
    }
}

int vit_train_step(vit_trainer *t, const float *pixels, const int *labels, int B,
                   float label_smoothing, float p_drop, uint64_t *rng_state, float *loss,
                   int *correct, vit_error *err) {
    if (check_batch(t, pixels, B, err) != 0 ||
        check_step_args(t, labels, B, label_smoothing, p_drop, rng_state, err) != 0)
        return -1;
    const model *m = t->m;
    const int T = t->T, D = t->D;
    const size_t n = (size_t)B * T * D;
    embed(t, pixels, B);
    if (t->freeze) {
        encoder_forward(&m->enc, m->layers, &t->eval_acts, t->x, NULL, B, T);
    } else {
        if (p_drop > 0.0f) { /* HF ViTEmbeddings ends with dropout */
            dropout_mask(t->emb_keep, n, p_drop, rng_state);
            dropout_forward(t->x, t->x, t->emb_keep, n, p_drop);
        }
        encoder_set_dropout(&t->acts, p_drop, t->attn_drop, rng_state);
        encoder_forward(&m->enc, m->layers, &t->acts, t->x, NULL, B, T);
    }
    head_forward(t, B, t->logits);
    const double mean_loss =
        crossentropy_forward(t->probs, t->logits, labels, B, t->L, label_smoothing);
    if (loss) *loss = (float)mean_loss;
    if (correct) *correct = count_correct(t->logits, labels, B, t->L);

    crossentropy_backward(t->dlogits, t->probs, labels, B, t->L, label_smoothing, 1.0f);
    head_backward(t, B);
    if (!t->freeze) {
        memset(t->dx, 0, n * sizeof(float));
        for (int b = 0; b < B; b++)
            memcpy(t->dx + (size_t)b * T * D, t->dcls_in + (size_t)b * D,
                   sizeof(float) * (size_t)D);
        encoder_backward(&m->enc, m->layers, t->g.layers, &t->acts, t->dx, B, T);
        if (p_drop > 0.0f) dropout_backward(t->dx, t->dx, t->emb_keep, n, p_drop);
        patch_embed_backward(t->g.patch_w, t->g.patch_b, t->g.cls_token, t->g.pos_embed, t->embed,
                             t->dx, t->patches, B, t->N, t->K, D);
    }
    zero_absent_grads(t);
    return 0;
}

int vit_train_logits(vit_trainer *t, const float *pixels, int B, float *logits, vit_error *err) {
    if (check_batch(t, pixels, B, err) != 0) return -1;
    if (!logits) return vit_fail(err, "no logits buffer");
    embed(t, pixels, B);
    encoder_forward(&t->m->enc, t->m->layers, &t->eval_acts, t->x, NULL, B, t->T);
    head_forward(t, B, logits);
    return 0;
}
