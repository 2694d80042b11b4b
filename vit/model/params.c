#include "vit/model/params.h"

#include "patch/patch.h"
#include "vit/base/alloc.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Builds the name table; `assign` records where each tensor lives. Two passes: count, then fill. */
typedef struct {
    model *m;
    size_t offset;
    size_t values; /* the tensors' elements (those present in a file), without the padding */
    int count;
    int fill;
    int packed;      /* the next tensor follows this one with no padding (query/key/value stacks) */
    int transposed;  /* the tensors added are stored [in, out] (GPT-2's Conv1D) */
    const char *sub; /* put before the prefixed names (open_clip's "trunk." of a timm tower) */
} layout;

static float *add_param(layout *L, int prefixed, int decay, int absent, int ndim,
                        const int64_t *shape, const char *fmt, ...)
    __attribute__((format(printf, 7, 8)));

static float *add_param(layout *L, int prefixed, int decay, int absent, int ndim,
                        const int64_t *shape, const char *fmt, ...) {
    size_t numel = 1;
    for (int d = 0; d < ndim; d++) numel *= (size_t)shape[d];
    float *where = L->fill && L->m->params ? L->m->params + L->offset : NULL;
    if (L->fill) {
        param_entry *e = &L->m->entries[L->count];
        va_list ap;
        va_start(ap, fmt);
        const int sub = prefixed && L->sub ? snprintf(e->name, sizeof e->name, "%s", L->sub) : 0;
        vsnprintf(e->name + sub, sizeof e->name - (size_t)sub, fmt, ap);
        va_end(ap);
        e->ndim = ndim;
        memcpy(e->shape, shape, sizeof(int64_t) * (size_t)ndim);
        e->offset = L->offset;
        e->numel = numel;
        e->prefixed = prefixed;
        e->decay = decay;
        e->absent = absent;
        e->transposed = L->transposed && ndim == 2;
    }
    L->count++;
    if (!absent) L->values += numel;
    /* 16-float alignment keeps every tensor 64-byte aligned for the BLAS kernels */
    L->offset += L->packed ? numel : (numel + 15) & ~(size_t)15;
    return where;
}

#define SHAPE(...)             ((const int64_t[]){__VA_ARGS__})
#define P1(decay, n0, ...)     add_param(L, 1, decay, 0, 1, SHAPE(n0), __VA_ARGS__)
#define P2(decay, n0, n1, ...) add_param(L, 1, decay, 0, 2, SHAPE(n0, n1), __VA_ARGS__)

/* Query, key and value stacked into one [3D, D] block so one GEMM computes all three; the
 * weights (and the biases) are packed back to back, with no padding between them, or a hidden size
 * that is not a multiple of 16 would leave gaps inside the [3D, D] and [3D] blocks. */
static void add_qkv_parts(layout *L, encoder_layer *w, int l, const char *fmt,
                          const char *const parts[3], int D, int has_bias, int key_bias) {
    char name[96];
    for (int i = 0; i < 3; i++) {
        snprintf(name, sizeof name, fmt, l, parts[i]);
        L->packed = i < 2;
        float *p = add_param(L, 1, 1, 0, 2, SHAPE(D, D), "%s.weight", name);
        if (i == 0) w->qkv_w = p;
    }
    for (int i = 0; i < 3; i++) {
        snprintf(name, sizeof name, fmt, l, parts[i]);
        L->packed = i < 2;
        const int absent = !has_bias || (i == 1 && !key_bias); /* BEiT: q and v only */
        float *p = add_param(L, 1, 0, absent, 1, SHAPE(D), "%s.bias", name);
        if (i == 0) w->qkv_b = p;
    }
    L->packed = 0;
}

static void add_qkv(layout *L, encoder_layer *w, int l, const char *fmt, int D, int has_bias) {
    static const char *const parts[] = {"query", "key", "value"};
    add_qkv_parts(L, w, l, fmt, parts, D, has_bias, has_bias);
}

static void add_mlp(layout *L, encoder_layer *w, int l, int D, int I) {
    w->fc1_w = P2(1, I, D, "encoder.layer.%d.intermediate.dense.weight", l);
    w->fc1_b = P1(0, I, "encoder.layer.%d.intermediate.dense.bias", l);
    w->fc2_w = P2(1, D, I, "encoder.layer.%d.output.dense.weight", l);
    w->fc2_b = P1(0, D, "encoder.layer.%d.output.dense.bias", l);
}

/* The special tokens back to back ([S, D], one patch_tokens_forward argument), then the position
 * embeddings for them and the N patches. */
static void add_vit_embeddings(layout *L, model *m) {
    const model_config *c = &m->cfg;
    const int D = c->hidden_size, P = c->patch_size;
    const int N = (c->image_size / P) * (c->image_width / P), S = config_special_tokens(c);
    L->packed = S > 1;
    m->cls_token = add_param(L, 1, 0, 0, 3, SHAPE(1, 1, D), "embeddings.cls_token");
    L->packed = 0;
    if (S > 1) add_param(L, 1, 0, 0, 3, SHAPE(1, 1, D), "embeddings.distillation_token");
    m->pos_embed = add_param(L, 1, 0, 0, 3, SHAPE(1, N + S, D), "embeddings.position_embeddings");
    m->patch_w = add_param(L, 1, 1, 0, 4, SHAPE(D, c->num_channels, P, P),
                           "embeddings.patch_embeddings.projection.weight");
    m->patch_b = P1(0, D, "embeddings.patch_embeddings.projection.bias");
}

/* ViT's classifier, or a DeiT with teacher's two (HF names them by the token they read). */
static void add_vit_heads(layout *L, model *m) {
    const int D = m->cfg.hidden_size, K = m->cfg.num_labels;
    const int two = config_classifier_heads(&m->cfg) > 1;
    m->head_w = add_param(L, 0, 1, 0, 2, SHAPE(K, D), "%sclassifier.weight", two ? "cls_" : "");
    m->head_b = add_param(L, 0, 0, 0, 1, SHAPE(K), "%sclassifier.bias", two ? "cls_" : "");
    if (!two) return;
    m->dist_head_w = add_param(L, 0, 1, 0, 2, SHAPE(K, D), "distillation_classifier.weight");
    m->dist_head_b = add_param(L, 0, 0, 0, 1, SHAPE(K), "distillation_classifier.bias");
}

static void layout_vit(layout *L, model *m) {
    const model_config *c = &m->cfg;
    const int D = c->hidden_size, I = c->intermediate_size;
    add_vit_embeddings(L, m);
    for (int l = 0; l < c->num_layers; l++) {
        encoder_layer *w = &m->layers[l];
        w->ln1_w = P1(0, D, "encoder.layer.%d.layernorm_before.weight", l);
        w->ln1_b = P1(0, D, "encoder.layer.%d.layernorm_before.bias", l);
        add_qkv(L, w, l, "encoder.layer.%d.attention.attention.%s", D, c->qkv_bias);
        w->proj_w = P2(1, D, D, "encoder.layer.%d.attention.output.dense.weight", l);
        w->proj_b = P1(0, D, "encoder.layer.%d.attention.output.dense.bias", l);
        w->ln2_w = P1(0, D, "encoder.layer.%d.layernorm_after.weight", l);
        w->ln2_b = P1(0, D, "encoder.layer.%d.layernorm_after.bias", l);
        add_mlp(L, w, l, D, I);
    }
    m->final_ln_w = P1(0, D, "layernorm.weight");
    m->final_ln_b = P1(0, D, "layernorm.bias");
    if (c->opt.head != HEAD_NONE) add_vit_heads(L, m);
}

/* ---- the text encoders: BERT, RoBERTa, XLM-R, DistilBERT, MPNet (config_text_names) ---- */

/* A weight and bias pair under the prefix (prefixed) or at the top; fmt may hold the layer's %d. */
static void add_named(layout *L, float **w, float **b, int prefixed, int OUT, int IN,
                      const char *fmt, int l) {
    char name[96];
    snprintf(name, sizeof name, fmt, l);
    const int matrix = IN > 0; /* a LayerNorm's weight is a vector */
    *w = matrix ? add_param(L, prefixed, 1, 0, 2, SHAPE(OUT, IN), "%s.weight", name)
                : add_param(L, prefixed, 0, 0, 1, SHAPE(OUT), "%s.weight", name);
    *b = add_param(L, prefixed, 0, 0, 1, SHAPE(OUT), "%s.bias", name);
}

/* A linear layer [OUT, IN] under the prefix whose bias may be absent (zero: NomicBERT's
 * qkv_proj_bias false, ...). */
static void add_linear_opt(layout *L, float **w, float **b, int OUT, int IN, const char *fmt, int l,
                           int no_bias) {
    char name[96];
    snprintf(name, sizeof name, fmt, l);
    *w = add_param(L, 1, 1, 0, 2, SHAPE(OUT, IN), "%s.weight", name);
    *b = add_param(L, 1, 0, no_bias, 1, SHAPE(OUT), "%s.bias", name);
}

/* A gated MLP's first layer [2I, D] from its two halves' tensors (parts[0] is u₁), packed back to
 * back as one, the biases likewise. */
static void add_fc1_halves(layout *L, encoder_layer *w, const char *const parts[2], int I, int D,
                           int l, int no_bias) {
    char name[96];
    for (int i = 0; i < 2; i++) {
        snprintf(name, sizeof name, parts[i], l);
        L->packed = i == 0;
        float *p = add_param(L, 1, 1, 0, 2, SHAPE(I, D), "%s.weight", name);
        if (i == 0) w->fc1_w = p;
    }
    for (int i = 0; i < 2; i++) {
        snprintf(name, sizeof name, parts[i], l);
        L->packed = i == 0;
        float *p = add_param(L, 1, 0, no_bias, 1, SHAPE(I), "%s.bias", name);
        if (i == 0) w->fc1_b = p;
    }
    L->packed = 0;
}

static void add_text_layer(layout *L, model *m, const text_names *n, int l) {
    const int D = m->cfg.hidden_size, I = m->cfg.intermediate_size, nb = m->cfg.opt.no_bias;
    const int I1 = activation_gated(m->cfg.act) ? 2 * I : I;
    encoder_layer *w = &m->layers[l];
    if (n->qkv_fused)
        add_linear_opt(L, &w->qkv_w, &w->qkv_b, 3 * D, D, n->qkv_fused, l, nb & NO_BIAS_QKV);
    else
        add_qkv_parts(L, w, l, n->qkv, n->parts, D, !(nb & NO_BIAS_QKV), 1);
    add_linear_opt(L, &w->proj_w, &w->proj_b, D, D, n->out, l, nb & NO_BIAS_OUT);
    add_named(L, &w->ln1_w, &w->ln1_b, 1, D, 0, n->norm1, l);
    if (n->fc1_parts[0])
        add_fc1_halves(L, w, n->fc1_parts, I, D, l, nb & NO_BIAS_FC1);
    else
        add_linear_opt(L, &w->fc1_w, &w->fc1_b, I1, D, n->fc1, l, nb & NO_BIAS_FC1);
    add_linear_opt(L, &w->fc2_w, &w->fc2_b, D, I, n->fc2, l, nb & NO_BIAS_FC2);
    add_named(L, &w->ln2_w, &w->ln2_b, 1, D, 0, n->norm2, l);
}

/* The pooler of a base model, or a classifier: a sequence classifier's dense layer on token 0
 * (pooler_w: BERT's pooler, RoBERTa's classifier.dense, DistilBERT's pre_classifier) and its
 * output layer, or a token classifier's one layer on every row. */
static void add_text_head(layout *L, model *m, const text_names *n) {
    const model_config *c = &m->cfg;
    const int D = c->hidden_size, K = c->num_labels;
    if (c->opt.head == HEAD_NONE) {
        if (c->opt.pooler) add_named(L, &m->pooler_w, &m->pooler_b, 1, D, D, n->pooler, 0);
        return;
    }
    if (c->opt.pooler)
        add_named(L, &m->pooler_w, &m->pooler_b, n->head_dense_prefixed, D, D, n->head_dense, 0);
    add_named(L, &m->head_w, &m->head_b, 0, K, D,
              c->opt.pool == POOL_TOKENS ? "classifier" : n->head_out, 0);
}

static void layout_text(layout *L, model *m) {
    const model_config *c = &m->cfg;
    const text_names *n = config_text_names(c);
    const int D = c->hidden_size;
    /* decayed, unlike a ViT's: HF's recipes for BERT exempt only biases and LayerNorm weights,
     * and the word table (most of a small BERT) is where text models overfit */
    m->word_emb = P2(1, c->vocab_size, D, "%s.weight", n->word);
    if (n->position) /* none with rotary or ALiBi positions */
        m->pos_emb = P2(1, c->max_position_embeddings, D, "%s.weight", n->position);
    if (c->opt.token_types) m->type_emb = P2(1, c->type_vocab_size, D, "%s.weight", n->token_type);
    add_named(L, &m->emb_ln_w, &m->emb_ln_b, 1, D, 0, n->embed_norm, 0);
    for (int l = 0; l < c->num_layers; l++) add_text_layer(L, m, n, l);
    /* MPNet's bucket table, [buckets, heads], shared by every layer as BEiT's shared table is */
    if (c->opt.rel_buckets)
        m->shared_rel_table = P2(0, c->opt.rel_buckets, c->num_heads, "%s.weight", n->rel_bias);
    add_text_head(L, m, n);
}

/* ---- the towers of CLIP and SigLIP (CLIPEncoderLayer's names, pre-LN) ---- */

static float *add_norm(layout *L, float **bias, int D, const char *name) {
    float *w = add_param(L, 1, 0, 0, 1, SHAPE(D), "%s.weight", name);
    *bias = add_param(L, 1, 0, 0, 1, SHAPE(D), "%s.bias", name);
    return w;
}

static void add_linear(layout *L, float **w, float **b, int OUT, int IN, const char *name) {
    *w = add_param(L, 1, 1, 0, 2, SHAPE(OUT, IN), "%s.weight", name);
    *b = add_param(L, 1, 0, 0, 1, SHAPE(OUT), "%s.bias", name);
}

static void add_clip_layers(layout *L, model *m) {
    static const char *const parts[] = {"q_proj", "k_proj", "v_proj"};
    const int D = m->cfg.hidden_size, I = m->cfg.intermediate_size;
    for (int l = 0; l < m->cfg.num_layers; l++) {
        encoder_layer *w = &m->layers[l];
        char name[96];
        snprintf(name, sizeof name, "encoder.layers.%d.layer_norm1", l);
        w->ln1_w = add_norm(L, &w->ln1_b, D, name);
        add_qkv_parts(L, w, l, "encoder.layers.%d.self_attn.%s", parts, D, 1, 1);
        w->proj_w = P2(1, D, D, "encoder.layers.%d.self_attn.out_proj.weight", l);
        w->proj_b = P1(0, D, "encoder.layers.%d.self_attn.out_proj.bias", l);
        snprintf(name, sizeof name, "encoder.layers.%d.layer_norm2", l);
        w->ln2_w = add_norm(L, &w->ln2_b, D, name);
        w->fc1_w = P2(1, I, D, "encoder.layers.%d.mlp.fc1.weight", l);
        w->fc1_b = P1(0, I, "encoder.layers.%d.mlp.fc1.bias", l);
        w->fc2_w = P2(1, D, I, "encoder.layers.%d.mlp.fc2.weight", l);
        w->fc2_b = P1(0, D, "encoder.layers.%d.mlp.fc2.bias", l);
    }
}

/* SigLIP's attention-pooling head as a layer: in_proj (q, k, v packed as torch's
 * MultiheadAttention stores them) in qkv, out_proj in proj, its LayerNorm in ln2, its MLP. */
static void add_probe_head(layout *L, model *m) {
    const int D = m->cfg.hidden_size, I = m->cfg.intermediate_size;
    encoder_layer *w = &m->probe;
    m->probe_token = add_param(L, 1, 0, 0, 3, SHAPE(1, 1, D), "head.probe");
    w->qkv_w = P2(1, 3 * D, D, "head.attention.in_proj_weight");
    w->qkv_b = P1(0, 3 * D, "head.attention.in_proj_bias");
    w->proj_w = P2(1, D, D, "head.attention.out_proj.weight");
    w->proj_b = P1(0, D, "head.attention.out_proj.bias");
    w->ln2_w = add_norm(L, &w->ln2_b, D, "head.layernorm");
    w->fc1_w = P2(1, I, D, "head.mlp.fc1.weight");
    w->fc1_b = P1(0, I, "head.mlp.fc1.bias");
    w->fc2_w = P2(1, D, I, "head.mlp.fc2.weight");
    w->fc2_b = P1(0, D, "head.mlp.fc2.bias");
}

/* The projection into the joint space (CLIP: at the top, no bias; SigLIP's text head: under the
 * tower's prefix, with one), and the scores' scale and bias (config_joint_tensors). */
static void add_joint_head(layout *L, model *m) {
    const model_config *c = &m->cfg;
    const int D = c->hidden_size, P = c->num_labels;
    joint_tensors t;
    config_joint_tensors(c, &t);
    if (c->opt.head != HEAD_NONE) {
        const int in = t.projection_prefixed;
        m->head_w = add_param(L, in, 1, 0, 2, SHAPE(P, D), "%s.weight", t.projection);
        m->head_b = add_param(L, in, 0, c->opt.head == HEAD_PROJECTION, 1, SHAPE(P), "%s.bias",
                              t.projection);
    }
    if (c->bare) return; /* a tower alone: the scores' scale and bias are the joint model's */
    m->logit_scale = add_param(L, 0, 0, 0, t.scale_ndim, SHAPE(1), "logit_scale");
    if (c->opt.joint_sigmoid) m->logit_bias = add_param(L, 0, 0, 0, 1, SHAPE(1), "logit_bias");
}

static void layout_joint_image(layout *L, model *m) {
    const model_config *c = &m->cfg;
    const int D = c->hidden_size, P = c->patch_size, n = c->image_size / P, S = c->opt.special;
    if (S) m->cls_token = add_param(L, 1, 0, 0, 1, SHAPE(D), "embeddings.class_embedding");
    m->patch_w = add_param(L, 1, 1, 0, 4, SHAPE(D, c->num_channels, P, P),
                           "embeddings.patch_embedding.weight");
    m->patch_b =
        add_param(L, 1, 0, !c->opt.patch_bias, 1, SHAPE(D), "embeddings.patch_embedding.bias");
    m->pos_embed =
        add_param(L, 1, 0, 0, 2, SHAPE(n * n + S, D), "embeddings.position_embedding.weight");
    if (c->opt.embed_norm) m->emb_ln_w = add_norm(L, &m->emb_ln_b, D, "pre_layrnorm");
    add_clip_layers(L, m);
    m->final_ln_w = add_norm(L, &m->final_ln_b, D, "post_layernorm");
    if (c->opt.pool == POOL_PROBE) add_probe_head(L, m);
    add_joint_head(L, m);
}

static void layout_joint_text(layout *L, model *m) {
    const model_config *c = &m->cfg;
    const int D = c->hidden_size;
    m->word_emb = P2(1, c->vocab_size, D, "embeddings.token_embedding.weight");
    m->pos_emb = P2(1, c->max_position_embeddings, D, "embeddings.position_embedding.weight");
    add_clip_layers(L, m);
    m->final_ln_w = add_norm(L, &m->final_ln_b, D, "final_layer_norm");
    add_joint_head(L, m);
}

/* ---- the image backbones: DINOv2 (docs/SPEC.md §11) and BEiT (§12) ---- */

/* CLS, DINOv2's registers, the absolute positions (BEiT: optional) and the patch projection. */
static void add_backbone_embeddings(layout *L, model *m) {
    const model_config *c = &m->cfg;
    const int D = c->hidden_size, P = c->patch_size, n = c->image_size / P, R = c->opt.registers;
    m->cls_token = add_param(L, 1, 0, 0, 3, SHAPE(1, 1, D), "embeddings.cls_token");
    if (R)
        m->register_tokens = add_param(L, 1, 0, 0, 3, SHAPE(1, R, D), "embeddings.register_tokens");
    if (c->opt.abs_pos)
        m->pos_embed =
            add_param(L, 1, 0, 0, 3, SHAPE(1, n * n + 1, D), "embeddings.position_embeddings");
    m->patch_w = add_param(L, 1, 1, 0, 4, SHAPE(D, c->num_channels, P, P),
                           "embeddings.patch_embeddings.projection.weight");
    m->patch_b = P1(0, D, "embeddings.patch_embeddings.projection.bias");
}

/* A classifier on the pooled features: [K, 2D] on DINOv2's [CLS, patch mean], else [K, D]. */
static void add_backbone_head(layout *L, model *m) {
    const model_config *c = &m->cfg;
    if (c->opt.head == HEAD_NONE) return;
    const int F = c->hidden_size * (c->opt.pool == POOL_CLS_MEAN ? 2 : 1), K = c->num_labels;
    m->head_w = add_param(L, 0, 1, 0, 2, SHAPE(K, F), "classifier.weight");
    m->head_b = add_param(L, 0, 0, 0, 1, SHAPE(K), "classifier.bias");
}

/* Dinov2Layer: norm1, attention, layer_scale1, norm2, mlp (fc1/fc2, or SwiGLU's weights_in [2I, D]
 * and weights_out), layer_scale2. */
static void add_dinov2_layer(layout *L, model *m, int l) {
    const model_config *c = &m->cfg;
    const int D = c->hidden_size, I = c->intermediate_size, swiglu = c->opt.swiglu;
    encoder_layer *w = &m->layers[l];
    char a[96];
    snprintf(a, sizeof a, "encoder.layer.%d.norm1", l);
    w->ln1_w = add_norm(L, &w->ln1_b, D, a);
    add_qkv_parts(L, w, l, "encoder.layer.%d.attention.attention.%s",
                  (const char *const[]){"query", "key", "value"}, D, c->qkv_bias, c->qkv_bias);
    snprintf(a, sizeof a, "encoder.layer.%d.attention.output.dense", l);
    add_linear(L, &w->proj_w, &w->proj_b, D, D, a);
    w->ls1 = P1(0, D, "encoder.layer.%d.layer_scale1.lambda1", l);
    snprintf(a, sizeof a, "encoder.layer.%d.norm2", l);
    w->ln2_w = add_norm(L, &w->ln2_b, D, a);
    snprintf(a, sizeof a, "encoder.layer.%d.mlp.%s", l, swiglu ? "weights_in" : "fc1");
    add_linear(L, &w->fc1_w, &w->fc1_b, swiglu ? 2 * I : I, D, a);
    snprintf(a, sizeof a, "encoder.layer.%d.mlp.%s", l, swiglu ? "weights_out" : "fc2");
    add_linear(L, &w->fc2_w, &w->fc2_b, D, I, a);
    w->ls2 = P1(0, D, "encoder.layer.%d.layer_scale2.lambda1", l);
}

static void layout_dinov2(layout *L, model *m) {
    const int D = m->cfg.hidden_size;
    add_backbone_embeddings(L, m);
    for (int l = 0; l < m->cfg.num_layers; l++) add_dinov2_layer(L, m, l);
    m->final_ln_w = add_norm(L, &m->final_ln_b, D, "layernorm");
    add_backbone_head(L, m);
}

/* BeitLayer: ViT's names, a query and value bias without a key bias, a relative position bias
 * table per layer (use_relative_position_bias), lambda_1 and lambda_2 (layer_scale_init_value >
 * 0). */
static void add_beit_layer(layout *L, model *m, int l) {
    const model_config *c = &m->cfg;
    const int D = c->hidden_size, n = c->image_size / c->patch_size;
    encoder_layer *w = &m->layers[l];
    w->ln1_w = P1(0, D, "encoder.layer.%d.layernorm_before.weight", l);
    w->ln1_b = P1(0, D, "encoder.layer.%d.layernorm_before.bias", l);
    add_qkv_parts(L, w, l, "encoder.layer.%d.attention.attention.%s",
                  (const char *const[]){"query", "key", "value"}, D, 1, 0);
    if (c->opt.rel_bias)
        m->rel_table[l] = P2(0, relpos_table_rows(n), c->num_heads,
                             "encoder.layer.%d.attention.attention.relative_position_bias."
                             "relative_position_bias_table",
                             l);
    w->proj_w = P2(1, D, D, "encoder.layer.%d.attention.output.dense.weight", l);
    w->proj_b = P1(0, D, "encoder.layer.%d.attention.output.dense.bias", l);
    w->ln2_w = P1(0, D, "encoder.layer.%d.layernorm_after.weight", l);
    w->ln2_b = P1(0, D, "encoder.layer.%d.layernorm_after.bias", l);
    add_mlp(L, w, l, D, c->intermediate_size);
    if (!c->opt.layer_scale) return;
    w->ls1 = P1(0, D, "encoder.layer.%d.lambda_1", l);
    w->ls2 = P1(0, D, "encoder.layer.%d.lambda_2", l);
}

/* Mean pooling normalises the pooled mean (pooler.layernorm), else the last layer's output
 * (layernorm): either is the LayerNorm before the classifier, final_ln. */
static void layout_beit(layout *L, model *m) {
    const model_config *c = &m->cfg;
    const int D = c->hidden_size, n = c->image_size / c->patch_size;
    add_backbone_embeddings(L, m);
    for (int l = 0; l < c->num_layers; l++) add_beit_layer(L, m, l);
    if (c->opt.shared_rel_bias)
        m->shared_rel_table = P2(0, relpos_table_rows(n), c->num_heads,
                                 "encoder.relative_position_bias.relative_position_bias_table");
    m->final_ln_w =
        add_norm(L, &m->final_ln_b, D, c->opt.pool == POOL_MEAN ? "pooler.layernorm" : "layernorm");
    add_backbone_head(L, m);
}

/* ---- timm's VisionTransformer (config_timm.c): its state_dict's names ---- */

/* cls_token, reg_token, pos_embed and the patch projection. With no_embed_class the file's
 * positions cover the patches alone: a zero row for the class token (absent from the file)
 * goes before them, so the encoder adds positions as for every other model (and adding 0 to the
 * class token changes no bit). */
static void add_timm_embeddings(layout *L, model *m) {
    const model_config *c = &m->cfg;
    const int D = c->hidden_size, P = c->patch_size, S = c->opt.special, R = c->opt.registers;
    const int N = (c->image_size / P) * (c->image_width / P);
    if (c->timm_reg_pos) { /* the registers as special tokens: right after the class token */
        L->packed = 1;
        float *cls =
            c->timm_class_token ? add_param(L, 1, 0, 0, 3, SHAPE(1, 1, D), "cls_token") : NULL;
        L->packed = 0;
        float *regs = add_param(L, 1, 0, 0, 3, SHAPE(1, c->num_registers, D), "reg_token");
        m->cls_token = cls ? cls : regs;
    } else {
        if (S) m->cls_token = add_param(L, 1, 0, 0, 3, SHAPE(1, 1, D), "cls_token");
        if (R) m->register_tokens = add_param(L, 1, 0, 0, 3, SHAPE(1, R, D), "reg_token");
    }
    if (S && c->timm_no_embed_class) {
        L->packed = 1;
        m->pos_embed = add_param(L, 1, 0, 1, 1, SHAPE(D), "pos_embed (class token's zero row)");
        L->packed = 0;
        add_param(L, 1, 0, 0, 3, SHAPE(1, N, D), "pos_embed");
    } else {
        m->pos_embed = add_param(L, 1, 0, 0, 3, SHAPE(1, N + S, D), "pos_embed");
    }
    m->patch_w =
        add_param(L, 1, 1, 0, 4, SHAPE(D, c->num_channels, P, P), "patch_embed.proj.weight");
    m->patch_b = add_param(L, 1, 0, !c->opt.patch_bias, 1, SHAPE(D), "patch_embed.proj.bias");
    if (c->opt.embed_norm) m->emb_ln_w = add_norm(L, &m->emb_ln_b, D, "norm_pre");
}

/* Block: norm1, attn.qkv (query, key and value fused [3D, D]: the encoder's own stacking),
 * attn.proj, ls1.gamma, norm2, mlp.fc1 ([2I, D] for SwiGLUPacked), mlp.fc2, ls2.gamma. */
static void add_timm_block(layout *L, model *m, int l) {
    const model_config *c = &m->cfg;
    const int D = c->hidden_size, I = c->intermediate_size;
    encoder_layer *w = &m->layers[l];
    char a[96];
    snprintf(a, sizeof a, "blocks.%d.norm1", l);
    w->ln1_w = add_norm(L, &w->ln1_b, D, a);
    w->qkv_w = P2(1, 3 * D, D, "blocks.%d.attn.qkv.weight", l);
    w->qkv_b = add_param(L, 1, 0, !c->qkv_bias, 1, SHAPE(3 * D), "blocks.%d.attn.qkv.bias", l);
    snprintf(a, sizeof a, "blocks.%d.attn.proj", l);
    add_linear(L, &w->proj_w, &w->proj_b, D, D, a);
    if (c->opt.layer_scale) w->ls1 = P1(0, D, "blocks.%d.ls1.gamma", l);
    snprintf(a, sizeof a, "blocks.%d.norm2", l);
    w->ln2_w = add_norm(L, &w->ln2_b, D, a);
    snprintf(a, sizeof a, "blocks.%d.mlp.fc1", l);
    add_linear(L, &w->fc1_w, &w->fc1_b, c->opt.swiglu ? 2 * I : I, D, a);
    snprintf(a, sizeof a, "blocks.%d.mlp.fc2", l);
    add_linear(L, &w->fc2_w, &w->fc2_b, D, I, a);
    if (c->opt.layer_scale) w->ls2 = P1(0, D, "blocks.%d.ls2.gamma", l);
}

/* AttentionPoolLatent as the probe layer: latent, q and kv packed into the [3D, D] in_proj
 * (kv holds the keys, then the values), proj, norm, mlp. */
static void add_timm_attn_pool(layout *L, model *m) {
    const int D = m->cfg.hidden_size, I = m->cfg.intermediate_size;
    encoder_layer *w = &m->probe;
    m->probe_token = add_param(L, 1, 0, 0, 3, SHAPE(1, 1, D), "attn_pool.latent");
    L->packed = 1;
    w->qkv_w = P2(1, D, D, "attn_pool.q.weight");
    L->packed = 0;
    P2(1, 2 * D, D, "attn_pool.kv.weight");
    L->packed = 1;
    w->qkv_b = P1(0, D, "attn_pool.q.bias");
    L->packed = 0;
    P1(0, 2 * D, "attn_pool.kv.bias");
    add_linear(L, &w->proj_w, &w->proj_b, D, D, "attn_pool.proj");
    w->ln2_w = add_norm(L, &w->ln2_b, D, "attn_pool.norm");
    add_linear(L, &w->fc1_w, &w->fc1_b, I, D, "attn_pool.mlp.fc1");
    add_linear(L, &w->fc2_w, &w->fc2_b, D, I, "attn_pool.mlp.fc2");
}

/* The final norm is `norm` before pooling, or `fc_norm` after it (avg pooling): either is the
 * LayerNorm the pooled rows go through, final_ln. */
static void add_timm_trunk(layout *L, model *m) {
    const model_config *c = &m->cfg;
    add_timm_embeddings(L, m);
    for (int l = 0; l < c->num_layers; l++) add_timm_block(L, m, l);
    m->final_ln_w =
        add_norm(L, &m->final_ln_b, c->hidden_size, c->timm_fc_norm ? "fc_norm" : "norm");
    if (c->opt.pool == POOL_PROBE) add_timm_attn_pool(L, m);
}

static void layout_timm(layout *L, model *m) {
    const model_config *c = &m->cfg;
    const int D = c->hidden_size;
    add_timm_trunk(L, m);
    if (c->opt.head == HEAD_NONE) return;
    m->head_w = add_param(L, 1, 1, 0, 2, SHAPE(c->num_labels, D), "head.weight");
    m->head_b = add_param(L, 1, 0, 0, 1, SHAPE(c->num_labels), "head.bias");
}

/* ---- open_clip's CLIP (config_open_clip.c): its state_dict's names ---- */

/* ResidualAttentionBlock: ln_1, attn.in_proj (query, key and value fused [3D, D], as the encoder
 * stacks them), attn.out_proj, ls_1.gamma, ln_2, mlp.c_fc, mlp.c_proj, ls_2.gamma. */
static void add_open_clip_blocks(layout *L, model *m) {
    const model_config *c = &m->cfg;
    const int D = c->hidden_size, I = c->intermediate_size;
    for (int l = 0; l < c->num_layers; l++) {
        encoder_layer *w = &m->layers[l];
        char a[96];
        snprintf(a, sizeof a, "transformer.resblocks.%d.ln_1", l);
        w->ln1_w = add_norm(L, &w->ln1_b, D, a);
        w->qkv_w = P2(1, 3 * D, D, "transformer.resblocks.%d.attn.in_proj_weight", l);
        w->qkv_b = P1(0, 3 * D, "transformer.resblocks.%d.attn.in_proj_bias", l);
        snprintf(a, sizeof a, "transformer.resblocks.%d.attn.out_proj", l);
        add_linear(L, &w->proj_w, &w->proj_b, D, D, a);
        if (c->opt.layer_scale) w->ls1 = P1(0, D, "transformer.resblocks.%d.ls_1.gamma", l);
        snprintf(a, sizeof a, "transformer.resblocks.%d.ln_2", l);
        w->ln2_w = add_norm(L, &w->ln2_b, D, a);
        snprintf(a, sizeof a, "transformer.resblocks.%d.mlp.c_fc", l);
        add_linear(L, &w->fc1_w, &w->fc1_b, I, D, a);
        snprintf(a, sizeof a, "transformer.resblocks.%d.mlp.c_proj", l);
        add_linear(L, &w->fc2_w, &w->fc2_b, D, I, a);
        if (c->opt.layer_scale) w->ls2 = P1(0, D, "transformer.resblocks.%d.ls_2.gamma", l);
    }
}

/* The projection into the joint space: a [width, embed_dim] parameter used as x @ proj (listed
 * [embed_dim, width] and transposed, as GPT-2's Conv1D), or the text's nn.Linear with a bias
 * (proj_bias); then the scores' scale and bias, 0-d or [1] (nonscalar_logit_scale). */
static void add_open_clip_head(layout *L, model *m, const char *name) {
    const model_config *c = &m->cfg;
    const int D = c->hidden_size, E = c->num_labels, nd = c->oc_scale_ndim;
    if (c->opt.head == HEAD_LINEAR) {
        add_linear(L, &m->head_w, &m->head_b, E, D, name);
    } else {
        L->transposed = 1;
        m->head_w = add_param(L, 1, 1, 0, 2, SHAPE(E, D), "%s", name);
        L->transposed = 0;
        m->head_b = add_param(L, 1, 0, 1, 1, SHAPE(E), "%s (no bias)", name);
    }
    m->logit_scale = add_param(L, 0, 0, 0, nd, SHAPE(1), "logit_scale");
    if (c->opt.joint_sigmoid) m->logit_bias = add_param(L, 0, 0, 0, nd, SHAPE(1), "logit_bias");
}

/* VisionTransformer: class_embedding, conv1 (no bias), positional_embedding, ln_pre (unless
 * no_ln_pre), the blocks, ln_post (on the class row: 'tok' pooling), proj. */
static void layout_open_clip_image(layout *L, model *m) {
    const model_config *c = &m->cfg;
    const int D = c->hidden_size, P = c->patch_size, n = c->image_size / P;
    m->cls_token = add_param(L, 1, 0, 0, 1, SHAPE(D), "class_embedding");
    m->patch_w = add_param(L, 1, 1, 0, 4, SHAPE(D, c->num_channels, P, P), "conv1.weight");
    m->patch_b = add_param(L, 1, 0, 1, 1, SHAPE(D), "conv1.bias (none)");
    m->pos_embed = add_param(L, 1, 0, 0, 2, SHAPE(n * n + 1, D), "positional_embedding");
    if (c->opt.embed_norm) m->emb_ln_w = add_norm(L, &m->emb_ln_b, D, "ln_pre");
    add_open_clip_blocks(L, m);
    m->final_ln_w = add_norm(L, &m->final_ln_b, D, "ln_post");
    add_open_clip_head(L, m, "proj");
}

/* open_clip's TimmModel: the timm trunk under trunk., then its projection: head.proj (an
 * nn.Linear, a bias with timm_proj_bias), the trunk's own head (an embed_dim-wide classifier) or
 * none; then the scores' scale and bias. */
static void layout_open_clip_timm(layout *L, model *m) {
    const model_config *c = &m->cfg;
    const int D = c->hidden_size, E = c->num_labels, nd = c->oc_scale_ndim;
    L->sub = "trunk.";
    add_timm_trunk(L, m);
    if (c->oc_timm == OC_TIMM_TRUNK_HEAD) add_linear(L, &m->head_w, &m->head_b, E, D, "head");
    L->sub = NULL;
    if (c->oc_timm == OC_TIMM_PROJ) {
        m->head_w = add_param(L, 1, 1, 0, 2, SHAPE(E, D), "head.proj.weight");
        m->head_b = add_param(L, 1, 0, !c->oc_proj_bias, 1, SHAPE(E), "head.proj.bias");
    }
    m->logit_scale = add_param(L, 0, 0, 0, nd, SHAPE(1), "logit_scale");
    if (c->opt.joint_sigmoid) m->logit_bias = add_param(L, 0, 0, 0, nd, SHAPE(1), "logit_bias");
}

/* TextTransformer as CLIP holds it: token_embedding, positional_embedding, the blocks,
 * ln_final, text_projection. */
static void layout_open_clip_text(layout *L, model *m) {
    const model_config *c = &m->cfg;
    const int D = c->hidden_size;
    m->word_emb = P2(1, c->vocab_size, D, "token_embedding.weight");
    m->pos_emb = P2(1, c->max_position_embeddings, D, "positional_embedding");
    add_open_clip_blocks(L, m);
    m->final_ln_w = add_norm(L, &m->final_ln_b, D, "ln_final");
    add_open_clip_head(L, m, "text_projection");
}

/* ---- a VisionEncoderDecoder's decoder: TrOCR's names (post-LN) or GPT-2's (pre-LN, Conv1D) ----
 */

/* Two projections stacked into one [2·OUT, IN] block (keys and values), packed like add_qkv. */
static void add_pair(layout *L, float **w, float **b, int OUT, int IN, const char *first,
                     const char *second) {
    L->packed = 1;
    *w = add_param(L, 1, 1, 0, 2, SHAPE(OUT, IN), "%s.weight", first);
    L->packed = 0;
    add_param(L, 1, 1, 0, 2, SHAPE(OUT, IN), "%s.weight", second);
    L->packed = 1;
    *b = add_param(L, 1, 0, 0, 1, SHAPE(OUT), "%s.bias", first);
    L->packed = 0;
    add_param(L, 1, 0, 0, 1, SHAPE(OUT), "%s.bias", second);
}

static void add_trocr_layer(layout *L, encoder_layer *w, int l, int D, int C, int I) {
    static const char *const parts[] = {"q_proj", "k_proj", "v_proj"};
    char a[96], b[96];
    add_qkv_parts(L, w, l, "layers.%d.self_attn.%s", parts, D, 1, 1);
    snprintf(a, sizeof a, "layers.%d.self_attn.out_proj", l);
    add_linear(L, &w->proj_w, &w->proj_b, D, D, a);
    snprintf(a, sizeof a, "layers.%d.self_attn_layer_norm", l);
    w->ln1_w = add_norm(L, &w->ln1_b, D, a);
    snprintf(a, sizeof a, "layers.%d.encoder_attn.q_proj", l);
    add_linear(L, &w->xq_w, &w->xq_b, D, D, a);
    snprintf(a, sizeof a, "layers.%d.encoder_attn.k_proj", l);
    snprintf(b, sizeof b, "layers.%d.encoder_attn.v_proj", l);
    add_pair(L, &w->xkv_w, &w->xkv_b, D, C, a, b);
    snprintf(a, sizeof a, "layers.%d.encoder_attn.out_proj", l);
    add_linear(L, &w->xproj_w, &w->xproj_b, D, D, a);
    snprintf(a, sizeof a, "layers.%d.encoder_attn_layer_norm", l);
    w->lnx_w = add_norm(L, &w->lnx_b, D, a);
    snprintf(a, sizeof a, "layers.%d.fc1", l);
    add_linear(L, &w->fc1_w, &w->fc1_b, I, D, a);
    snprintf(a, sizeof a, "layers.%d.fc2", l);
    add_linear(L, &w->fc2_w, &w->fc2_b, D, I, a);
    snprintf(a, sizeof a, "layers.%d.final_layer_norm", l);
    w->ln2_w = add_norm(L, &w->ln2_b, D, a);
}

/* GPT-2's Conv1D weights are [in, out] in the file: listed here in the [out, in] of every other
 * linear layer, marked transposed. c_attn holds query, key and value (or, in the cross-attention,
 * key and value) side by side: transposed, they are the stacked blocks the encoder runs. */
static void add_gpt2_layer(layout *L, encoder_layer *w, int l, int D, int I) {
    char a[96];
    snprintf(a, sizeof a, "h.%d.ln_1", l);
    w->ln1_w = add_norm(L, &w->ln1_b, D, a);
    L->transposed = 1;
    snprintf(a, sizeof a, "h.%d.attn.c_attn", l);
    add_linear(L, &w->qkv_w, &w->qkv_b, 3 * D, D, a);
    snprintf(a, sizeof a, "h.%d.attn.c_proj", l);
    add_linear(L, &w->proj_w, &w->proj_b, D, D, a);
    snprintf(a, sizeof a, "h.%d.crossattention.q_attn", l);
    add_linear(L, &w->xq_w, &w->xq_b, D, D, a);
    snprintf(a, sizeof a, "h.%d.crossattention.c_attn", l);
    add_linear(L, &w->xkv_w, &w->xkv_b, 2 * D, D, a);
    snprintf(a, sizeof a, "h.%d.crossattention.c_proj", l);
    add_linear(L, &w->xproj_w, &w->xproj_b, D, D, a);
    snprintf(a, sizeof a, "h.%d.mlp.c_fc", l);
    add_linear(L, &w->fc1_w, &w->fc1_b, I, D, a);
    snprintf(a, sizeof a, "h.%d.mlp.c_proj", l);
    add_linear(L, &w->fc2_w, &w->fc2_b, D, I, a);
    L->transposed = 0;
    snprintf(a, sizeof a, "h.%d.ln_cross_attn", l);
    w->lnx_w = add_norm(L, &w->lnx_b, D, a);
    snprintf(a, sizeof a, "h.%d.ln_2", l);
    w->ln2_w = add_norm(L, &w->ln2_b, D, a);
}

static void layout_decoder(layout *L, model *m) {
    const model_config *c = &m->cfg;
    const int D = c->hidden_size, I = c->intermediate_size, trocr = c->dec_arch == DECODER_TROCR;
    m->word_emb = P2(1, c->vocab_size, D, trocr ? "embed_tokens.weight" : "wte.weight");
    if (!c->opt.sinusoidal)
        m->pos_emb = P2(1, c->max_position_embeddings + c->opt.pos_offset, D,
                        trocr ? "embed_positions.weight" : "wpe.weight");
    if (c->opt.embed_norm) m->emb_ln_w = add_norm(L, &m->emb_ln_b, D, "layernorm_embedding");
    for (int l = 0; l < c->num_layers; l++) {
        if (trocr)
            add_trocr_layer(L, &m->layers[l], l, D, c->cross_dim, I);
        else
            add_gpt2_layer(L, &m->layers[l], l, D, I);
    }
    if (c->opt.final_norm) m->final_ln_w = add_norm(L, &m->final_ln_b, D, "ln_f");
    m->head_w = c->opt.tied_head ? m->word_emb
                                 : add_param(L, 0, 1, 0, 2, SHAPE(c->vocab_size, D), "%s",
                                             trocr ? "decoder.output_projection.weight"
                                                   : "decoder.lm_head.weight");
    if (!c->opt.enc_proj) return;
    m->enc_proj_w = add_param(L, 0, 1, 0, 2, SHAPE(D, c->encoder_hidden), "enc_to_dec_proj.weight");
    m->enc_proj_b = add_param(L, 0, 0, 0, 1, SHAPE(D), "enc_to_dec_proj.bias");
}

static void run_layout(layout *L, model *m) {
    const model_family f = m->cfg.family;
    if (m->cfg.kind == MODEL_DECODER)
        layout_decoder(L, m);
    else if (f == FAMILY_DINOV2 || f == FAMILY_DINOV2_REG)
        layout_dinov2(L, m);
    else if (f == FAMILY_BEIT || f == FAMILY_DATA2VEC)
        layout_beit(L, m);
    else if (f == FAMILY_TIMM)
        layout_timm(L, m);
    else if (m->cfg.family == FAMILY_VED)
        layout_vit(L, m); /* ViTModel / DeiTModel: no head */
    else if (m->cfg.open_clip && m->cfg.oc_timm && m->cfg.kind == MODEL_VIT)
        layout_open_clip_timm(L, m);
    else if (m->cfg.open_clip)
        (m->cfg.kind == MODEL_VIT ? layout_open_clip_image : layout_open_clip_text)(L, m);
    else if (config_is_joint(&m->cfg) && m->cfg.kind == MODEL_VIT)
        layout_joint_image(L, m);
    else if (config_is_joint(&m->cfg))
        layout_joint_text(L, m);
    else if (m->cfg.kind == MODEL_VIT)
        layout_vit(L, m);
    else
        layout_text(L, m); /* BERT and config_text.c's families */
}

int model_layout(model *m, model_config *cfg, vit_error *err) {
    memset(m, 0, sizeof *m);
    m->cfg = *cfg;
    memset(cfg, 0, sizeof *cfg); /* labels now belong to the model */
    config_apply_family(&m->cfg);
    const model_config *c = &m->cfg;
    m->enc = (encoder_shape){.layers = c->num_layers,
                             .dim = c->hidden_size,
                             .heads = c->num_heads,
                             .mlp_dim = c->intermediate_size,
                             .act = c->act,
                             .eps = c->layer_norm_eps,
                             .post_norm = c->opt.post_norm,
                             .causal = c->opt.causal,
                             .cross = c->opt.cross,
                             .cross_dim = c->cross_dim,
                             .layer_scale = c->opt.layer_scale,
                             .rotary_dim = c->opt.rotary_dim,
                             .rotary_interleaved = c->opt.rotary_interleaved,
                             .rotary_base = c->opt.rotary_base};
    if (c->opt.swiglu) m->enc.act = ACT_SWIGLU;
    m->layers = calloc((size_t)c->num_layers, sizeof *m->layers);
    for (int l = 0; m->layers && c->scale_attn_by_layer && l < c->num_layers; l++)
        m->layers[l].q_scale = 1.0f / (float)(l + 1); /* GPT-2's layer_idx counts from 0 */
    if (c->opt.rel_bias) m->rel_table = calloc((size_t)c->num_layers, sizeof *m->rel_table);
    const int ready = m->layers && (m->rel_table || !c->opt.rel_bias);
    layout L = {.m = m};
    if (ready) run_layout(&L, m); /* count */
    m->entries = ready ? calloc((size_t)L.count, sizeof *m->entries) : NULL;
    m->num_params = L.offset;
    if (!m->entries) {
        model_free(m);
        return vit_fail(err, "out of memory");
    }
    if (L.offset > MODEL_MAX_PARAMS) {
        model_free(m);
        return vit_fail(err,
                        "the configuration asks for %zu parameters, more than the limit of %zu",
                        L.offset, (size_t)MODEL_MAX_PARAMS);
    }
    L = (layout){.m = m, .fill = 1};
    run_layout(&L, m); /* the table of names, shapes and offsets */
    m->num_entries = L.count;
    return 0;
}

/* TrOCRSinusoidalPositionalEmbedding's table: row p holds sin(p·f_i) for the D/2 frequencies f_i =
 * exp(-i·ln(10000)/(D/2 - 1)), then their cosines (a zero column when D is odd); the padding
 * token's row is zero. Rows up to the last position a decoder of max_position_embeddings positions
 * reaches (its positions start after the padding id). Computed in double, rounded once. */
static int sinusoid_table(model *m) {
    const model_config *c = &m->cfg;
    const int D = c->hidden_size, half = D / 2, pad = c->pad_token_id > 0 ? c->pad_token_id : 0;
    const int rows = c->max_position_embeddings + pad + 1;
    m->pos_table = vit_alloc_floats((size_t)rows * D);
    if (!m->pos_table) return -1;
    const double step = half > 1 ? log(10000.0) / (half - 1) : 0.0;
    for (int p = 0; p < rows; p++) {
        float *row = m->pos_table + (size_t)p * D;
        for (int i = 0; i < half; i++) {
            const double angle = p * exp(-i * step);
            row[i] = p == c->pad_token_id ? 0.0f : (float)sin(angle);
            row[half + i] = p == c->pad_token_id ? 0.0f : (float)cos(angle);
        }
        if (D % 2) row[D - 1] = 0.0f;
    }
    return 0;
}

int model_alloc(model *m, vit_error *err) {
    m->params = vit_alloc_floats(m->num_params);
    if (!m->params) {
        const size_t n = m->num_params;
        model_free(m);
        return vit_fail(err, "out of memory for %zu parameters", n);
    }
    vit_zero_lazily(m->params, m->num_params * sizeof(float));
    layout L = {.m = m, .fill = 1};
    run_layout(&L, m); /* the tensor pointers, into the block */
    if (m->cfg.opt.sinusoidal && sinusoid_table(m) != 0) {
        model_free(m);
        return vit_fail(err, "out of memory");
    }
    return 0;
}

int model_create(model *m, model_config *cfg, vit_error *err) {
    return model_layout(m, cfg, err) != 0 ? -1 : model_alloc(m, err);
}

static void close_source(model *m) {
    if (m->source.close) m->source.close(m->source.ctx);
    m->source = (model_source){0};
}

int model_read_rest(model *m, vit_error *err) {
    const int rc =
        m->source.read ? m->source.read(m->source.ctx, m->params, 0, m->num_params, err) : 0;
    close_source(m);
    return rc;
}

void model_free(model *m) {
    close_source(m);
    model_unprepare(m);
    free(m->params);
    free(m->pos_table);
    free(m->entries);
    free(m->layers);
    free(m->rel_table);
    model_config_free(&m->cfg);
    memset(m, 0, sizeof *m);
}

/* HF's base_model_prefix: "vit.", "deit." or "bert."; a joint model's tower: "vision_model." or
 * "text_model.". */
const char *model_prefix(const model *m) {
    if (m->cfg.kind == MODEL_DECODER)
        return m->cfg.dec_arch == DECODER_TROCR ? "decoder.model.decoder." : "decoder.transformer.";
    if (m->cfg.family == FAMILY_VED) return "encoder.";
    if (config_is_backbone(&m->cfg)) return config_backbone_prefix(&m->cfg);
    if (m->cfg.family == FAMILY_TIMM) return ""; /* timm's state_dict names */
    if (m->cfg.family == FAMILY_TEXT) return m->cfg.bare ? "" : config_text_prefix(&m->cfg);
    if (m->cfg.family == FAMILY_PLAIN && m->cfg.bare) return ""; /* ViTModel, BertModel */
    if (config_is_joint(&m->cfg)) return config_joint_prefix(&m->cfg);
    return m->cfg.kind == MODEL_TEXT ? "bert." : m->cfg.arch == ARCH_VIT ? "vit." : "deit.";
}

const param_entry *model_find_param(const model *m, const char *name) {
    for (int i = 0; i < m->num_entries; i++)
        if (strcmp(m->entries[i].name, name) == 0) return &m->entries[i];
    return NULL;
}

int model_vit_tokens(const model *m, int size) {
    const int P = m->cfg.patch_size;
    const int h = size > 0 ? size : m->cfg.image_size, w = size > 0 ? size : m->cfg.image_width;
    return (h / P) * (w / P) + config_special_tokens(&m->cfg);
}

double model_flops(const model *m, int T) {
    const model_config *c = &m->cfg;
    const double D = c->hidden_size, I = c->intermediate_size;
    /* a gated MLP's (SwiGLU's, GeGLU's) fc1 is twice as wide */
    const double mlp = c->opt.swiglu || activation_gated(c->act) ? 3 : 2;
    double per_layer = 2.0 * T * D * 3 * D      /* qkv */
                       + 2.0 * 2 * T * T * D    /* scores and weighted values */
                       + 2.0 * T * D * D        /* output projection */
                       + 2.0 * mlp * T * D * I; /* MLP */
    const int patches = T - config_special_tokens(c);
    double embed = c->kind == MODEL_VIT
                       ? 2.0 * patches * D * c->num_channels * c->patch_size * c->patch_size
                       : 0.0;
    const double head_in = c->opt.pool == POOL_CLS_MEAN ? 2 * D : D; /* DINOv2: [CLS, mean] */
    const double head_rows = c->opt.pool == POOL_TOKENS ? T : 1;     /* a classifier per token */
    double head =
        2.0 * head_in * c->num_labels * config_classifier_heads(c) * head_rows +
        (c->kind == MODEL_TEXT && (c->opt.pooler || config_is_joint(c)) ? 2.0 * D * D : 0.0);
    return embed + c->num_layers * per_layer + head;
}

static float *rebase(const model *layout, float *block, float *p) {
    return p ? block + (p - layout->params) : NULL;
}

/* v: w's tensor pointers rebased from layout's block onto block. */
static void bind_layer(encoder_layer *v, const encoder_layer *w, const model *layout,
                       float *block) {
    float *const *from[] = {&w->ln1_w,   &w->ln1_b,   &w->qkv_w, &w->qkv_b, &w->proj_w, &w->proj_b,
                            &w->ln2_w,   &w->ln2_b,   &w->fc1_w, &w->fc1_b, &w->fc2_w,  &w->fc2_b,
                            &w->lnx_w,   &w->lnx_b,   &w->xq_w,  &w->xq_b,  &w->xkv_w,  &w->xkv_b,
                            &w->xproj_w, &w->xproj_b, &w->ls1,   &w->ls2};
    float **to[] = {&v->ln1_w,   &v->ln1_b,   &v->qkv_w, &v->qkv_b, &v->proj_w, &v->proj_b,
                    &v->ln2_w,   &v->ln2_b,   &v->fc1_w, &v->fc1_b, &v->fc2_w,  &v->fc2_b,
                    &v->lnx_w,   &v->lnx_b,   &v->xq_w,  &v->xq_b,  &v->xkv_w,  &v->xkv_b,
                    &v->xproj_w, &v->xproj_b, &v->ls1,   &v->ls2};
    for (size_t i = 0; i < sizeof to / sizeof to[0]; i++) *to[i] = rebase(layout, block, *from[i]);
    v->q_scale = w->q_scale;
}

int model_bind(model *view, const model *layout, float *block) {
    *view = *layout;
    view->params = block;
    view->source = (model_source){0};
    view->patch = view->pooler = view->head = view->dist_head = view->enc_proj = NULL;
    view->gemm_workspace_bytes = 0;
    const int L = layout->cfg.num_layers;
    view->layers = calloc((size_t)L, sizeof *view->layers);
    view->rel_table = layout->rel_table ? calloc((size_t)L, sizeof *view->rel_table) : NULL;
    if ((!view->layers && L > 0) || (layout->rel_table && !view->rel_table)) {
        free(view->layers);
        return -1;
    }
    for (int l = 0; view->rel_table && l < L; l++)
        view->rel_table[l] = rebase(layout, block, layout->rel_table[l]);
    for (int l = 0; l < L; l++) bind_layer(&view->layers[l], &layout->layers[l], layout, block);
    bind_layer(&view->probe, &layout->probe, layout, block); /* SigLIP's attention-pooling head */
    float **fields[] = {
        &view->patch_w,          &view->patch_b,     &view->cls_token,   &view->pos_embed,
        &view->word_emb,         &view->pos_emb,     &view->type_emb,    &view->emb_ln_w,
        &view->emb_ln_b,         &view->pooler_w,    &view->pooler_b,    &view->final_ln_w,
        &view->final_ln_b,       &view->head_w,      &view->head_b,      &view->dist_head_w,
        &view->dist_head_b,      &view->enc_proj_w,  &view->enc_proj_b,  &view->register_tokens,
        &view->shared_rel_table, &view->probe_token, &view->logit_scale, &view->logit_bias};
    /* the fields still hold layout's pointers (*view = *layout above); pos_table, the sinusoid
     * table computed at load, is no parameter (nothing trains it): the view shares it */
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        *fields[i] = rebase(layout, block, *fields[i]);
    return 0;
}

void model_unbind(model *view) {
    free(view->layers);
    free(view->rel_table);
    memset(view, 0, sizeof *view);
}

size_t model_live_params(const model *m) {
    size_t n = 0;
    for (int i = 0; i < m->num_entries; i++) n += m->entries[i].absent ? 0 : m->entries[i].numel;
    return n;
}

void model_clear_absent(const model *m, float *grads) {
    for (int i = 0; i < m->num_entries; i++) {
        const param_entry *e = &m->entries[i];
        if (e->absent) memset(grads + e->offset, 0, e->numel * sizeof(float));
    }
}

/* joint's table of entries: every part's, renamed to the file's names, offsets shifted. */
static int join_entries(model *joint, const model *const *parts, int n, const size_t *offset) {
    int count = 0;
    for (int i = 0; i < n; i++) count += parts[i]->num_entries;
    joint->entries = calloc((size_t)count, sizeof *joint->entries);
    if (!joint->entries) return -1;
    for (int i = 0; i < n; i++)
        for (int k = 0; k < parts[i]->num_entries; k++) {
            param_entry *e = &joint->entries[joint->num_entries++];
            *e = parts[i]->entries[k];
            char full[2 * sizeof e->name];
            const int len = snprintf(full, sizeof full, "%s%s",
                                     e->prefixed ? model_prefix(parts[i]) : "", e->name);
            if (len < 0 || (size_t)len >= sizeof e->name) return -1; /* never: names are short */
            memcpy(e->name, full, (size_t)len + 1);
            e->prefixed = 0;
            e->offset += offset[i];
        }
    return 0;
}

int model_join(model *joint, const model *const *parts, int n, size_t *offset, vit_error *err) {
    memset(joint, 0, sizeof *joint);
    for (int i = 0; i < n; i++) { /* each part 16-float aligned, as every tensor in it */
        offset[i] = joint->num_params;
        joint->num_params += alloc_pad16(parts[i]->num_params);
    }
    joint->cfg.kind = parts[n - 1]->cfg.kind;
    joint->cfg.family = parts[n - 1]->cfg.family;
    joint->params = vit_alloc_floats(joint->num_params);
    if (!joint->params || join_entries(joint, parts, n, offset) != 0) {
        const size_t count = joint->num_params;
        model_free(joint);
        return vit_fail(err, "out of memory for %zu parameters (or a name of over 95 bytes)",
                        count);
    }
    memset(joint->params, 0, joint->num_params * sizeof(float));
    for (int i = 0; i < n; i++)
        memcpy(joint->params + offset[i], parts[i]->params, parts[i]->num_params * sizeof(float));
    return 0;
}
