/* Every linear layer of a model prepared for inference on a backend (vit/core/gemm.h). */
#include <stdlib.h>

#include "vit/base/alloc.h"
#include "vit/model/params.h"

/* fc1's epilogue: the activation, but SwiGLU's, which halves the width (the encoder runs it). */
static gemm_epilogue activation_epilogue(activation_kind act) {
    return act == ACT_GELU         ? EPILOGUE_GELU
           : act == ACT_GELU_TANH  ? EPILOGUE_GELU_TANH
           : act == ACT_QUICK_GELU ? EPILOGUE_QUICK_GELU
           : activation_gated(act) ? EPILOGUE_NONE
                                   : EPILOGUE_RELU;
}

typedef struct {
    model *m;
    gemm_backend backend;
    gemm_precision precision;
    size_t workspace;
    int release; /* hand back each weight its prepared layer copied */
    int *released;
    vit_error *err;
} prep;

/* count floats at x read from a lazily loaded model's file, if not yet (x NULL, or not in the
 * parameter block: nothing to read). */
static int need(prep *p, const float *x, size_t count) {
    const model *m = p->m;
    if (!x || !m->source.read || x < m->params || x >= m->params + m->num_params) return 0;
    return m->source.read(m->source.ctx, m->params, (size_t)(x - m->params), count, p->err);
}

/* The workspace grows to what layer w needs. */
static void grow_workspace(prep *p, const gemm_weight *w) {
    const size_t need = gemm_workspace_bytes(w);
    p->workspace = need > p->workspace ? need : p->workspace;
}

/* One layer (weight [OUT, IN]), its outputs times scale [OUT] if set (a layer scale, folded into
 * a copy of the weight the prepared layer owns); the workspace grows to the largest need. */
static int scaled(prep *p, gemm_weight **out, const float *w, const float *b, const float *scale,
                  int OUT, int IN, gemm_epilogue epilogue, int rows) {
    if (need(p, w, (size_t)OUT * IN) || need(p, b, (size_t)OUT) || need(p, scale, (size_t)OUT))
        return -1;
    *out = scale ? gemm_prepare_scaled(p->backend, p->precision, w, b, scale, OUT, IN, epilogue,
                                       rows, p->err)
                 : gemm_prepare(p->backend, p->precision, w, b, OUT, IN, epilogue, rows, p->err);
    if (!*out) return -1;
    if (p->release && !gemm_weight_reads_source(*out)) {
        vit_release_pages((void *)w, sizeof *w * (size_t)OUT * IN);
        *p->released = 1;
    }
    grow_workspace(p, *out);
    return 0;
}

static int one(prep *p, gemm_weight **out, const float *w, const float *b, int OUT, int IN,
               gemm_epilogue epilogue, int rows) {
    return scaled(p, out, w, b, NULL, OUT, IN, epilogue, rows);
}

/* Layer w's linear layers; qscale [3D] (or NULL) folds its q_scale into qkv and xq. */
static int prepare_layer(model *m, prep *p, encoder_layer *w, const float *qscale, int rows, int D,
                         int I, int I1) {
    if (scaled(p, &w->qkv, w->qkv_w, w->qkv_b, qscale, 3 * D, D, EPILOGUE_NONE, rows) ||
        scaled(p, &w->proj, w->proj_w, w->proj_b, w->ls1, D, D, EPILOGUE_ACCUMULATE, rows) ||
        one(p, &w->fc1, w->fc1_w, w->fc1_b, I1, D, activation_epilogue(m->enc.act), rows) ||
        scaled(p, &w->fc2, w->fc2_w, w->fc2_b, w->ls2, D, I, EPILOGUE_ACCUMULATE, rows))
        return -1;
    /* qkv in bf16 for the attention's bf16 kernels, which every inference forward of an
     * encoder takes when the CPU and the head size allow (a decoder's cached attention reads
     * floats) */
    if (m->cfg.kind != MODEL_DECODER && !m->enc.rotary_dim &&
        attention_infer_bf16_supported(D, m->enc.heads) && gemm_write_bf16(w->qkv))
        grow_workspace(p, w->qkv);
    /* fc1's activations go to fc2 alone (SwiGLU's go through the encoder first) */
    if (!activation_gated(m->enc.act) && gemm_chain(w->fc1, w->fc2)) grow_workspace(p, w->fc1);
    if (m->enc.cross &&
        (scaled(p, &w->xq, w->xq_w, w->xq_b, qscale, D, D, EPILOGUE_NONE, rows) ||
         one(p, &w->xkv, w->xkv_w, w->xkv_b, 2 * D, m->enc.cross_dim, EPILOGUE_NONE, rows) ||
         one(p, &w->xproj, w->xproj_w, w->xproj_b, D, D, EPILOGUE_ACCUMULATE, rows)))
        return -1;
    return 0;
}

/* qkv's output scale [3D]: the layer's q_scale on the queries, 1 on keys and values (NULL: no
 * q_scale); its first D entries are xq's. */
static float *query_scale(const encoder_layer *w, int D, float *buf) {
    if (!w->q_scale) return NULL;
    for (int i = 0; i < 3 * D; i++) buf[i] = i < D ? w->q_scale : 1.0f;
    return buf;
}

static int prepare_layers(model *m, prep *p, int rows) {
    const int D = m->enc.dim, I = m->enc.mlp_dim;
    const int I1 = activation_gated(m->enc.act) ? 2 * I : I; /* gated: fc1 gives both halves */
    float *buf = malloc(sizeof(float) * 3 * (size_t)D);
    if (!buf) return vit_fail(p->err, "out of memory");
    int rc = 0;
    for (int l = 0; l < m->cfg.num_layers && rc == 0; l++)
        rc = prepare_layer(m, p, &m->layers[l], query_scale(&m->layers[l], D, buf), rows, D, I, I1);
    free(buf);
    return rc;
}

/* A decoder's output projection (no bias; the token embeddings when tied) and enc_to_dec_proj. */
static int prepare_decoder(model *m, prep *p, int rows) {
    const model_config *c = &m->cfg;
    if (one(p, &m->head, m->head_w, NULL, c->vocab_size, c->hidden_size, EPILOGUE_NONE, rows))
        return -1;
    return c->opt.enc_proj ? one(p, &m->enc_proj, m->enc_proj_w, m->enc_proj_b, c->hidden_size,
                                 c->encoder_hidden, EPILOGUE_NONE, rows)
                           : 0;
}

static int prepare(model *m, gemm_backend backend, gemm_precision precision, int max_batch,
                   int tokens, int release, vit_error *err) {
    if (m->weights_released)
        return vit_fail(err, "the model's weights were released after its first preparation");
    model_unprepare(m);
    prep p = {.m = m,
              .backend = backend,
              .precision = precision,
              .release = release,
              .released = &m->weights_released,
              .err = err};
    const model_config *c = &m->cfg;
    const int D = c->hidden_size, B = max_batch;
    int rc = prepare_layers(m, &p, B * tokens);
    /* a text model's pooler and head are kept: small, and read as floats by a forward that is
     * not prepared (text_model.c's linear_forward) */
    if (c->kind == MODEL_TEXT) p.release = 0;
    if (rc == 0 && c->kind == MODEL_DECODER) rc = prepare_decoder(m, &p, B * tokens);
    const int patches = tokens - config_special_tokens(c);
    if (rc == 0 && c->kind == MODEL_VIT)
        rc = one(&p, &m->patch, m->patch_w, m->patch_b, D,
                 c->num_channels * c->patch_size * c->patch_size, EPILOGUE_NONE, B * patches);
    if (rc == 0 && m->pooler_w)
        rc = one(&p, &m->pooler, m->pooler_w, m->pooler_b, D, D, EPILOGUE_NONE, B);
    const int head_in = c->opt.pool == POOL_CLS_MEAN ? 2 * D : D; /* DINOv2: [CLS, mean] */
    if (rc == 0 && m->head_w && c->kind != MODEL_DECODER)
        rc = one(&p, &m->head, m->head_w, m->head_b, c->num_labels, head_in, EPILOGUE_NONE,
                 c->opt.pool == POOL_TOKENS ? B * tokens : B); /* a token classifier: every row */
    if (rc == 0 && m->dist_head_w)
        rc = one(&p, &m->dist_head, m->dist_head_w, m->dist_head_b, c->num_labels, D, EPILOGUE_NONE,
                 B);
    m->backend = backend;
    m->gemm_workspace_bytes = p.workspace;
    if (rc != 0) model_unprepare(m);
    return rc;
}

int model_prepare(model *m, gemm_backend backend, gemm_precision precision, int max_batch,
                  int tokens, vit_error *err) {
    return prepare(m, backend, precision, max_batch, tokens, 0, err);
}

int model_prepare_released(model *m, gemm_backend backend, gemm_precision precision, int max_batch,
                           int tokens, vit_error *err) {
    if (m->cfg.kind == MODEL_DECODER)
        return vit_fail(err, "weights are released for encoder inference only");
    return prepare(m, backend, precision, max_batch, tokens, 1, err);
}

void model_unprepare(model *m) {
    for (int l = 0; m->layers && l < m->cfg.num_layers; l++) {
        encoder_layer *w = &m->layers[l];
        gemm_weight **all[] = {&w->qkv, &w->proj, &w->fc1, &w->fc2, &w->xq, &w->xkv, &w->xproj};
        for (int i = 0; i < 7; i++) {
            gemm_free(*all[i]);
            *all[i] = NULL;
        }
    }
    gemm_weight **all[] = {&m->patch, &m->pooler, &m->head, &m->dist_head, &m->enc_proj};
    for (int i = 0; i < 5; i++) {
        gemm_free(*all[i]);
        *all[i] = NULL;
    }
    m->gemm_workspace_bytes = 0;
}

gemm_state *model_gemm_state(const model *m, vit_error *err) {
    return gemm_state_create(m->backend, m->gemm_workspace_bytes, err);
}
