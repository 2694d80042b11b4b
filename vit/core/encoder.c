#include "vit/core/encoder.h"

#include "vit/base/alloc.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "vit/core/ops.h"

/* Floats per row of fc1's output: a gated MLP's first layer is twice as wide. */
static size_t fc1_width(const encoder_shape *s) {
    return (size_t)s->mlp_dim * (activation_gated(s->act) ? 2 : 1);
}

/* What a forward or backward works with: the caller's run and the buffers of its mode. */
typedef struct {
    const encoder_run *run;
    int keep, T; /* keep: TRAIN or EXPLAIN, every layer's activations on the tape; T: tokens */
    const encoder_layer_acts *set; /* layer 0's */
    size_t stride;                 /* floats from one layer's set to the next (0: one shared) */
    float *scratch, *xq;           /* xq: inference's cross-attention queries */
    float *attn_scratch;           /* NULL: the fast inference attention is not run */
    int attn_threads;
    encoder_tape *tape;      /* keep: the masks, the backward's scratch, cross activations */
    encoder_kv_cache *cache; /* a decoder's inference step */
    /* cross-attention: keys and values [images, S, 2D] per layer, xkv_layer floats apart; image
     * g is read by rows g·k .. g·k + k-1 (k = rows_per_image) */
    const float *xkv;
    size_t xkv_layer;
    int S, rows_per_image;
} pass;

/* Layer l's copy of an activation field (the shared copy in inference). */
static float *at(const pass *p, float *field, int l) {
    /* a field left out of the buffers (the attention weights where the fast attention runs) */
    if (!field) return NULL;
    return field + (size_t)l * p->stride;
}

/* Layer l's copy of a cross-attention field of the tape. */
static float *cross_at(const pass *p, float *field, int l) {
    return field + (size_t)l * p->tape->cross.layer_floats;
}

#define LAYOUT_MAX 16 /* arrays in encoder_layer_acts */

/* One layer's set into sizes[] and fields[] (encoder_layer_acts's order; returns the count): keep
 * (a tape) adds the layer's input and, with a layer scale, the branches' outputs. */

static size_t layer_layout(const encoder_shape *s, encoder_layer_acts *set, size_t BT, size_t BHTT,
                           int keep, size_t *sizes, float ***fields) {
    const size_t D = (size_t)s->dim, I = (size_t)s->mlp_dim;
    const size_t in = keep ? BT * D : 0, kept = keep && s->layer_scale ? BT * D : 0;
    /* clang-format off */
    const size_t n[] = {
        in,                                 /* layer_in */
        BT * D, BT, BT,                     /* ln1 */
        BT * 3 * D, BHTT,                   /* qkv, probs */
        BT * D, BT * D,                     /* ctx, mid */
        BT * D, BT, BT,                     /* ln2 */
        BT * fc1_width(s), BT * I,          /* fc1_out, act_out */
        BT * D,                             /* sum2 */
        kept, kept,                         /* attn_out, mlp_out */
    };
    /* clang-format on */
    float **f[] = {&set->layer_in, &set->ln1_out,  &set->ln1_mean, &set->ln1_rstd,
                   &set->qkv,      &set->probs,    &set->ctx,      &set->mid,
                   &set->ln2_out,  &set->ln2_mean, &set->ln2_rstd, &set->fc1_out,
                   &set->act_out,  &set->sum2,     &set->attn_out, &set->mlp_out};
    const size_t count = sizeof n / sizeof n[0];
    memcpy(sizes, n, sizeof n);
    memcpy(fields, f, sizeof f);
    return count;
}

/* The arrays a layout gave no floats are NULL. */
static void null_empty(const size_t *sizes, float ***fields, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!sizes[i]) *fields[i] = NULL;
}

int encoder_scratch_alloc(encoder_scratch *sc, const encoder_shape *s, int max_batch, int tokens) {
    memset(sc, 0, sizeof *sc);
    const size_t BT = (size_t)max_batch * tokens, D = (size_t)s->dim;
    size_t sizes[LAYOUT_MAX + 2];
    float **fields[LAYOUT_MAX + 2];
    /* the fast attention keeps no weights: [B, H, T, T] only for the general one (at 8192 tokens,
     * 12 heads and a batch of 16 the weights alone would be 51 GB) */
    const size_t BHTT = attention_infer_supported(s->dim, s->heads)
                            ? 0
                            : (size_t)max_batch * s->heads * tokens * tokens;
    const size_t n = layer_layout(s, &sc->set, BT, BHTT, 0, sizes, fields);
    sizes[n] = BT * D, fields[n] = &sc->scratch;
    sizes[n + 1] = s->cross ? BT * D : 0, fields[n + 1] = &sc->xq;
    sc->block = alloc_float_block(n + 2, sizes, fields);
    if (!sc->block) return -1;
    null_empty(sizes, fields, n + 2);
    sc->attn_threads = omp_get_num_procs();
    if (attention_infer_supported(s->dim, s->heads) &&
        !(sc->attn_scratch = vit_alloc_floats(
              attention_infer_scratch(max_batch, tokens, s->dim, sc->attn_threads)))) {
        encoder_scratch_free(sc);
        return -1;
    }
    sc->max_batch = max_batch;
    sc->tokens = tokens;
    return 0;
}

void encoder_scratch_free(encoder_scratch *sc) {
    free(sc->block);
    free(sc->attn_scratch);
    memset(sc, 0, sizeof *sc);
}

/* The tape's per-layer dropout masks (bytes), the backward's scratch and the projections'
 * scratch, shared by all layers. */
static int tape_extras(encoder_tape *t, const encoder_shape *s, size_t BT, size_t BHTT) {
    const size_t D = (size_t)s->dim, I = (size_t)s->mlp_dim, L = (size_t)s->layers;
    const size_t mask_sizes[] = {L * BT * D, L * BT * D, L * BHTT};
    uint8_t **masks[] = {&t->keep_attn, &t->keep_mlp, &t->keep_probs};
    t->mask_block = alloc_byte_block(3, mask_sizes, masks);
    const size_t swiglu = activation_gated(s->act) ? BT * 2 * I : 0;
    const size_t sizes[] = {BT * D, BT * D, BT * D, BT * 3 * D, BT * I, BHTT, swiglu, BT * D};
    float **fields[] = {&t->d_ln,  &t->d_res,   &t->d_ctx, &t->d_qkv,
                        &t->d_act, &t->d_probs, &t->d_fc1, &t->scratch};
    t->grad_block = alloc_float_block(8, sizes, fields);
    if (!swiglu) t->d_fc1 = NULL;
    return t->mask_block && t->grad_block ? 0 : -1;
}

int encoder_tape_alloc(encoder_tape *t, const encoder_shape *s, int max_batch, int tokens) {
    memset(t, 0, sizeof *t);
    const size_t BT = (size_t)max_batch * tokens;
    const size_t BHTT = (size_t)max_batch * s->heads * tokens * tokens;
    size_t sizes[LAYOUT_MAX];
    float **fields[LAYOUT_MAX];
    const size_t n = layer_layout(s, &t->set, BT, BHTT, 1, sizes, fields);
    t->block = alloc_float_sets((size_t)s->layers, n, sizes, fields, &t->layer_floats);
    if (!t->block) return -1;
    null_empty(sizes, fields, n);
    t->max_batch = max_batch, t->tokens = tokens, t->layers = s->layers;
    t->dim = s->dim, t->heads = s->heads;
    if (tape_extras(t, s, BT, BHTT) != 0) {
        encoder_tape_free(t);
        return -1;
    }
    return 0;
}

void encoder_tape_free(encoder_tape *t) {
    free(t->block);
    free(t->mask_block);
    free(t->grad_block);
    free(t->cross.block);
    free(t->cross.shared);
    free(t->cross.keep_cross);
    memset(t, 0, sizeof *t);
}

/* Per layer: LNx's input, output and statistics, the branch's input (post-LN), queries, weights
 * and heads; once: every layer's keys and values, and the backward's scratch. */
int encoder_tape_alloc_cross(encoder_tape *t, const encoder_shape *s, int cross_tokens) {
    encoder_cross_tape *c = &t->cross;
    if (!s->cross || !t->block || c->block || cross_tokens < 1) return -1;
    const size_t B = (size_t)t->max_batch, BT = B * t->tokens, D = (size_t)s->dim;
    const size_t S = (size_t)cross_tokens, L = (size_t)s->layers;
    const size_t sets[] = {BT * D, BT * D, BT, BT, BT * D, BT * D, BT * s->heads * S, BT * D};
    float **set_fields[] = {&c->xln_in, &c->xln_out, &c->xln_mean, &c->xln_rstd,
                            &c->x_in,   &c->xq,      &c->xprobs,   &c->xctx};
    c->block = alloc_float_sets(L, 8, sets, set_fields, &c->layer_floats);
    const size_t shared[] = {L * B * S * 2 * D, BT * D, B * S * 2 * D, B * S * s->cross_dim};
    float **shared_fields[] = {&c->kv, &c->d_xq, &c->d_xkv, &c->d_states};
    c->shared = alloc_float_block(4, shared, shared_fields);
    const size_t masks[] = {L * BT * D};
    uint8_t **mask_fields[] = {&c->keep_cross};
    uint8_t *mask_block = alloc_byte_block(1, masks, mask_fields);
    if (!c->block || !c->shared || !mask_block) {
        free(c->block), free(c->shared), free(mask_block);
        memset(c, 0, sizeof *c);
        return -1;
    }
    c->cross_tokens = cross_tokens;
    c->images = 0;
    return 0;
}

float *encoder_tape_layer(const encoder_tape *t, float *field, int layer) {
    return field + (size_t)layer * t->layer_floats;
}

float *encoder_tape_cross(const encoder_tape *t, float *field, int layer) {
    return field + (size_t)layer * t->cross.layer_floats;
}

uint8_t *encoder_tape_mask(const encoder_tape *t, uint8_t *field, int layer) {
    /* each mask field holds one [B,T,D] (or [B,H,T,T]) mask per layer, back to back */
    const size_t BT = (size_t)t->max_batch * t->tokens;
    const size_t per = field == t->keep_probs ? BT * t->heads * t->tokens : BT * t->dim;
    return field + (size_t)layer * per;
}

/* The cross keys and values of layer l of `layers` for n states into kv (prepared with gemm when
 * the layer is and gemm is given). */
static void cross_kv_forward(const encoder_shape *s, const encoder_layer *w, gemm_state *gemm,
                             const float *states, int n, float *kv) {
    if (w->xkv && gemm)
        gemm_run(w->xkv, states, n, kv, gemm);
    else
        linear_forward(kv, states, w->xkv_w, w->xkv_b, n, s->cross_dim, 2 * s->dim);
}

void encoder_tape_cross_states(encoder_tape *t, const encoder_shape *s, const encoder_layer *layers,
                               const float *states, int images, int S, int rows_per_image) {
    encoder_cross_tape *c = &t->cross;
    const size_t layer = (size_t)t->max_batch * c->cross_tokens * 2 * s->dim;
    for (int l = 0; l < s->layers; l++)
        cross_kv_forward(s, &layers[l], NULL, states, images * S, c->kv + (size_t)l * layer);
    c->states = states;
    c->images = images;
    c->S = S;
    c->rows_per_image = rows_per_image;
}

/* ---- the key/value cache ---- */

int encoder_kv_cache_alloc(encoder_kv_cache *c, const encoder_shape *s, int max_rows, int cache_len,
                           int max_images, int cross_tokens) {
    memset(c, 0, sizeof *c);
    const size_t L = (size_t)s->layers, D = (size_t)s->dim;
    const size_t cache = L * max_rows * (size_t)cache_len * 2 * D;
    const size_t sizes[] = {cache, cache, L * (size_t)max_images * (size_t)cross_tokens * 2 * D};
    float **fields[] = {&c->kv, &c->spare, &c->cross_kv};
    c->block = alloc_float_block(3, sizes, fields);
    if (!c->block) return -1;
    c->layers = s->layers, c->dim = s->dim, c->max_rows = max_rows, c->cache_len = cache_len;
    c->max_images = max_images;
    c->cross_tokens = cross_tokens;
    c->rows_per_image = 1;
    return 0;
}

void encoder_kv_cache_free(encoder_kv_cache *c) {
    free(c->block);
    memset(c, 0, sizeof *c);
}

void encoder_kv_cache_reset(encoder_kv_cache *c) {
    c->past = 0;
}

/* Layer l's cache of row b: [cache_len, 2D], key then value per position. */
static float *cache_row(const encoder_kv_cache *c, float *kv, int l, int b) {
    const size_t row = (size_t)c->cache_len * 2 * c->dim;
    return kv + ((size_t)l * c->max_rows + b) * row;
}

void encoder_kv_cache_reorder(encoder_kv_cache *c, const int *parent, int rows) {
    const size_t used = (size_t)c->past * 2 * c->dim * sizeof(float);
    for (int l = 0; l < c->layers; l++)
        for (int r = 0; r < rows; r++)
            memcpy(cache_row(c, c->spare, l, r), cache_row(c, c->kv, l, parent[r]), used);
    float *t = c->kv;
    c->kv = c->spare;
    c->spare = t;
}

void encoder_kv_cache_states(encoder_kv_cache *c, const encoder_shape *s,
                             const encoder_layer *layers, gemm_state *gemm, const float *states,
                             int images, int S, int rows_per_image) {
    const size_t layer = (size_t)c->max_images * c->cross_tokens * 2 * s->dim;
    for (int l = 0; l < s->layers; l++)
        cross_kv_forward(s, &layers[l], gemm, states, images * S, c->cross_kv + (size_t)l * layer);
    c->images = images;
    c->S = S;
    c->rows_per_image = rows_per_image;
    encoder_kv_cache_reset(c);
}

/* ---- the forward ---- */

int encoder_run_check(const encoder_shape *s, const encoder_run *r, const encoder_scratch *sc,
                      const encoder_tape *t) {
    const int dropout = r->hidden_drop > 0.0f || r->attn_drop > 0.0f;
    switch (r->mode) {
    case ENCODER_INFER:
        return sc && sc->block && !dropout && (!s->cross || (t && t->cross.block)) ? 0 : -1;
    case ENCODER_EXPLAIN:
        if (dropout) return -1;
        break;
    case ENCODER_TRAIN:
        if (dropout && !r->rng) return -1;
        break;
    default:
        return -1;
    }
    if (!t || !t->block) return -1;
    return !s->cross || (t->cross.block && r->attn_drop <= 0.0f) ? 0 : -1;
}

/* A mask of B examples of per floats each, as this batch's part of the whole batch's mask. */
static void batch_mask(const pass *p, uint8_t *keep, int B, size_t per, float prob) {
    const encoder_run *r = p->run;
    const size_t first = (size_t)r->batch_first * per;
    const size_t total = (size_t)(r->batch_total > 0 ? r->batch_total : B) * per;
    dropout_mask_part(keep, (size_t)B * per, prob, r->rng, first, total);
}

/* Training: a fresh dropout mask for layer l's branch output in p->scratch (B·per floats). */
static void branch_dropout(pass *p, uint8_t *field, int l, int B, size_t per) {
    if (p->run->hidden_drop <= 0.0f) return;
    uint8_t *keep = encoder_tape_mask(p->tape, field, l);
    batch_mask(p, keep, B, per, p->run->hidden_drop);
    dropout_forward(p->scratch, p->scratch, keep, (size_t)B * per, p->run->hidden_drop);
}

/* Prepared layers run inference (vit/core/gemm.h) with the caller's gemm_state; training keeps
 * the plain products. */
static int prepared(const pass *p, const encoder_layer *w) {
    return w->qkv && p->run->gemm && !p->keep;
}

/* A residual branch's output projection [D, in]: the layer (prepared and plain), its layer scale
 * (NULL: none), the fields of its dropout mask and of its output kept for the scale's gradient. */
typedef struct {
    const gemm_weight *prepared;
    const float *weight, *bias, *scale;
    int in;
    uint8_t *mask;
    float *kept;
} branch_out;

/* A prepared layer on inp: floats, or bfloat16 when inp_bf16 (written so because the layer takes
 * bf16: gemm_takes_bf16). */
static void run_prepared(const gemm_weight *layer, const float *inp, int inp_bf16, int BT,
                         float *out, gemm_state *s) {
    if (inp_bf16)
        gemm_run_bf16(layer, (const uint16_t *)(const void *)inp, BT, out, s);
    else
        gemm_run(layer, inp, BT, out, s);
}

/* The branch's output projection added into residual (which holds the residual stream), through
 * dropout when training, times the layer scale (folded into the prepared layer). */
static void add_branch(const encoder_layer *w, pass *p, int l, const branch_out *o,
                       const float *inp, int inp_bf16, int BT, int D, float *residual) {
    if (prepared(p, w)) {
        run_prepared(o->prepared, inp, inp_bf16, BT, residual, p->run->gemm);
        return;
    }
    linear_forward(p->scratch, inp, o->weight, o->bias, BT, o->in, D);
    branch_dropout(p, o->mask, l, BT / p->T, (size_t)p->T * D);
    if (o->scale) {
        if (p->keep) memcpy(at(p, o->kept, l), p->scratch, sizeof(float) * BT * D);
        layer_scale_forward(p->scratch, p->scratch, o->scale, BT, D);
    }
    vector_add(residual, residual, p->scratch, (size_t)BT * D);
}

/* The query columns [0, D) of rows [rows, ld] times the layer's q_scale (set, and not folded
 * into a prepared layer): the forward's queries, or their gradient on the way back. */
static void scale_queries(const pass *p, const encoder_layer *w, float *x, int rows, int D,
                          int ld) {
    if (!w->q_scale || prepared(p, w)) return;
    for (size_t r = 0; r < (size_t)rows; r++)
        for (int d = 0; d < D; d++) x[r * ld + d] *= w->q_scale;
}

/* Self-attention of T new rows per sequence over the cached rows and themselves: their keys and
 * values join the cache first, then each sequence's queries attend causally. */
static void cached_attention(encoder_kv_cache *c, int l, const float *qkv, float *ctx, int B, int T,
                             int D, int H) {
    for (int b = 0; b < B; b++) {
        float *cache = cache_row(c, c->kv, l, b);
        for (int t = 0; t < T; t++)
            memcpy(cache + (size_t)(c->past + t) * 2 * D, qkv + ((size_t)b * T + t) * 3 * D + D,
                   2 * D * sizeof *cache);
    }
    /* every row's cache is cache_len positions of 2D, so one call covers the batch */
    float *cache = cache_row(c, c->kv, l, 0);
    attention_general_forward(ctx, NULL, qkv, 3 * D, cache, cache + D, 2 * D, NULL, c->past, B, T,
                              c->past + T, c->cache_len, D, H);
}

/* Rows of the sequences reading image g: g·k .. g·k + return - 1 (k = rows_per_image; the last
 * image may have fewer). */
static int image_rows(const pass *p, int g, int B) {
    const int k = p->rows_per_image, left = B - g * k;
    return left < k ? left : k;
}

/* Cross-attention: the rows of each image's sequences attend to that image's states' keys and
 * values (all its rows in one call: one item of rows·T queries). Training keeps the queries, the
 * weights and the heads in the layer's own buffers. */
static void cross_attention_block(const encoder_shape *s, const encoder_layer *w, pass *p, int l,
                                  const float *inp, int B, int T, float *residual) {
    const int D = s->dim, H = s->heads, BT = B * T, k = p->rows_per_image, S = p->S;
    const encoder_tape *t = p->tape;
    float *q = p->keep ? encoder_tape_cross(t, t->cross.xq, l) : p->xq;
    float *ctx = p->keep ? encoder_tape_cross(t, t->cross.xctx, l) : at(p, p->set->ctx, l);
    float *probs = p->keep ? encoder_tape_cross(t, t->cross.xprobs, l) : NULL;
    if (prepared(p, w))
        gemm_run(w->xq, inp, BT, q, p->run->gemm);
    else
        linear_forward(q, inp, w->xq_w, w->xq_b, BT, D, D);
    scale_queries(p, w, q, BT, D, D);
    const float *kv = p->xkv + (size_t)l * p->xkv_layer;
    for (int g = 0; g * k < B; g++) {
        const size_t first = (size_t)g * k * T; /* the image's first query row */
        const float *img = kv + (size_t)g * S * 2 * D;
        attention_general_forward(ctx + first * D, probs ? probs + first * H * S : NULL,
                                  q + first * D, D, img, img + D, 2 * D, NULL, -1, 1,
                                  image_rows(p, g, B) * T, S, S, D, H);
    }
    const branch_out out = {
        w->xproj, w->xproj_w, w->xproj_b, NULL, D, p->keep ? t->cross.keep_cross : NULL, NULL};
    add_branch(w, p, l, &out, ctx, 0, BT, D, residual);
}

/* Pre-LN: x += Cross(LNx(x)). Training keeps LNx's input, output and statistics; inference
 * borrows LN1's buffers (nothing is kept). */
static void cross_pre_norm(const encoder_shape *s, const encoder_layer *w, pass *p, int l, float *x,
                           int B, int T) {
    const int BT = B * T;
    const encoder_tape *t = p->keep ? p->tape : NULL;
    float *out = t ? encoder_tape_cross(t, t->cross.xln_out, l) : at(p, p->set->ln1_out, l);
    float *mean = t ? encoder_tape_cross(t, t->cross.xln_mean, l) : NULL;
    float *rstd = t ? encoder_tape_cross(t, t->cross.xln_rstd, l) : NULL;
    if (t) memcpy(encoder_tape_cross(t, t->cross.xln_in, l), x, sizeof *x * (size_t)BT * s->dim);
    layernorm_forward(out, mean, rstd, x, w->lnx_w, w->lnx_b, BT, s->dim, s->eps);
    cross_attention_block(s, w, p, l, out, B, T, x);
}

/* Post-LN: x = LNx(x + Cross(x)). Training keeps the branch's input, LNx's input and statistics;
 * inference sums in mid. */
static void cross_post_norm(const encoder_shape *s, const encoder_layer *w, pass *p, int l,
                            float *x, int B, int T) {
    const int BT = B * T;
    const size_t n = (size_t)BT * s->dim;
    const encoder_tape *t = p->keep ? p->tape : NULL;
    float *sum = t ? encoder_tape_cross(t, t->cross.xln_in, l) : at(p, p->set->mid, l);
    float *mean = t ? encoder_tape_cross(t, t->cross.xln_mean, l) : NULL;
    float *rstd = t ? encoder_tape_cross(t, t->cross.xln_rstd, l) : NULL;
    if (t) memcpy(encoder_tape_cross(t, t->cross.x_in, l), x, n * sizeof *x);
    memcpy(sum, x, n * sizeof *x);
    cross_attention_block(s, w, p, l, x, B, T, sum);
    layernorm_forward(x, mean, rstd, sum, w->lnx_w, w->lnx_b, BT, s->dim, s->eps);
}

/* Inference's self-attention of qkv into ctx: over the cache when decoding; the bf16 kernels
 * for bf16 and int8 layers (qkv_bf16: qkv holds bfloat16, written so by a layer that always takes
 * them, model_prepare decides); else the fast fp32 kernels where D/H allow (attn_scratch), else
 * the general one. Returns 1 when ctx is written as bfloat16 for proj. */
static int attention_infer_path(const encoder_shape *s, const encoder_layer *w, const pass *p,
                                int l, const float *qkv, int qkv_bf16, const uint8_t *mask,
                                float *ctx, float *probs, int B, int T) {
    const int D = s->dim, H = s->heads;
    if (p->cache) {
        cached_attention(p->cache, l, qkv, ctx, B, T, D, H);
        return 0;
    }
    if (qkv_bf16 || (p->attn_scratch && prepared(p, w) && gemm_weight_runs_reduced(w->qkv))) {
        uint16_t *ctx16 = gemm_takes_bf16(w->proj) ? (uint16_t *)(void *)ctx : NULL;
        return attention_infer_bf16_io(ctx16, ctx, qkv_bf16 ? NULL : qkv,
                                       qkv_bf16 ? (const uint16_t *)(const void *)qkv : NULL, mask,
                                       w->attn_bias, s->causal, p->attn_scratch, p->attn_threads, B,
                                       T, D, H);
    }
    if (p->attn_scratch)
        attention_infer(ctx, qkv, mask, w->attn_bias, s->causal, p->attn_scratch, p->attn_threads,
                        B, T, D, H);
    else
        attention_forward(ctx, probs, qkv, mask, w->attn_bias, s->causal, B, T, D, H);
    return 0;
}

/* Training's and explanations' self-attention: the weights kept in probs, dropped (the mask drawn
 * for this batch's part) when run.attn_drop is set. */
static void attention_keep_path(const encoder_shape *s, const encoder_layer *w, const pass *p,
                                int l, const float *qkv, const uint8_t *mask, float *ctx,
                                float *probs, int B, int T) {
    const int D = s->dim, H = s->heads;
    const float drop = p->run->attn_drop;
    if (drop <= 0.0f) {
        attention_forward(ctx, probs, qkv, mask, w->attn_bias, s->causal, B, T, D, H);
        return;
    }
    uint8_t *keep = encoder_tape_mask(p->tape, p->tape->keep_probs, l);
    batch_mask(p, keep, B, (size_t)H * T * T, drop);
    attention_forward_dropout(ctx, probs, p->tape->d_probs, qkv, mask, w->attn_bias, s->causal,
                              keep, drop, B, T, D, H);
}

/* inp_bf16: inp holds bfloat16 for qkv (prepared and taking bf16). */
static void attention_block(const encoder_shape *s, const encoder_layer *w, pass *p, int l,
                            const float *inp, int inp_bf16, const uint8_t *mask, int B, int T,
                            float *residual) {
    const int D = s->dim, BT = B * T;
    float *qkv = at(p, p->set->qkv, l), *ctx = at(p, p->set->ctx, l);
    float *probs = at(p, p->set->probs, l);
    const int qkv_bf16 = prepared(p, w) && gemm_writes_bf16(w->qkv);
    if (prepared(p, w))
        run_prepared(w->qkv, inp, inp_bf16, BT, qkv, p->run->gemm);
    else
        linear_forward(qkv, inp, w->qkv_w, w->qkv_b, BT, D, 3 * D);
    scale_queries(p, w, qkv, BT, D, 3 * D);
    if (s->rotary_dim && !qkv_bf16) /* model_prepare keeps a rotary model's qkv in floats */
        rotary_forward(qkv, B, T, 3 * (size_t)D, D, s->heads, s->rotary_dim, s->rotary_base,
                       s->rotary_interleaved, p->cache ? p->cache->past : 0, 0);
    int ctx_bf16 = 0; /* ctx written as bfloat16 for proj */
    if (p->keep)
        attention_keep_path(s, w, p, l, qkv, mask, ctx, probs, B, T);
    else
        ctx_bf16 = attention_infer_path(s, w, p, l, qkv, qkv_bf16, mask, ctx, probs, B, T);
    const branch_out out = {w->proj,         w->proj_w, w->proj_b,
                            w->ls1,          D,         p->keep ? p->tape->keep_attn : NULL,
                            p->set->attn_out};
    add_branch(w, p, l, &out, ctx, ctx_bf16, BT, D, residual);
}

/* inp_bf16: inp holds bfloat16 for fc1 (prepared and taking bf16). */
static void mlp_block(const encoder_shape *s, const encoder_layer *w, pass *p, int l,
                      const float *inp, int inp_bf16, int BT, float *residual) {
    const int D = s->dim, I = s->mlp_dim, swiglu = activation_gated(s->act);
    float *fc1 = at(p, p->set->fc1_out, l), *act = at(p, p->set->act_out, l);
    if (prepared(p, w) && !swiglu) /* the activation is fc1's epilogue */
        run_prepared(w->fc1, inp, inp_bf16, BT, act, p->run->gemm);
    else if (prepared(p, w))
        run_prepared(w->fc1, inp, inp_bf16, BT, fc1, p->run->gemm);
    else
        linear_forward(fc1, inp, w->fc1_w, w->fc1_b, BT, D, (int)fc1_width(s));
    if (s->act == ACT_GEGLU)
        geglu_forward(act, fc1, BT, I);
    else if (swiglu)
        swiglu_forward(act, fc1, BT, I);
    else if (!prepared(p, w))
        activation_forward(act, fc1, (size_t)BT * I, s->act);
    const branch_out out = {
        w->fc2, w->fc2_w, w->fc2_b, w->ls2, I, p->keep ? p->tape->keep_mlp : NULL, p->set->mlp_out};
    add_branch(w, p, l, &out, act, 0, BT, D, residual);
}

/* out = LayerNorm(x) (norm weight g, bias b) for the layer that reads it next: rounded to bfloat16
 * as it is written when that layer is prepared and takes bf16 (returns 1), else floats with the
 * statistics kept (0). */
static int norm_for(const encoder_shape *s, pass *p, const encoder_layer *w,
                    const gemm_weight *next, float *out, float *mean, float *rstd, const float *x,
                    const float *g, const float *b, int BT) {
    if (prepared(p, w) && gemm_takes_bf16(next)) {
        layernorm_forward_bf16((uint16_t *)(void *)out, x, g, b, BT, s->dim, s->eps);
        return 1;
    }
    layernorm_forward(out, mean, rstd, x, g, b, BT, s->dim, s->eps);
    return 0;
}

static void pre_norm_layer(const encoder_shape *s, const encoder_layer *w, pass *p, int l, float *x,
                           const uint8_t *mask, int B, int T) {
    const int D = s->dim, BT = B * T;
    const size_t n = (size_t)BT * D;
    float *ln1 = at(p, p->set->ln1_out, l), *ln2 = at(p, p->set->ln2_out, l);
    if (p->keep) memcpy(at(p, p->set->layer_in, l), x, n * sizeof *x);
    const int ln1_bf16 = norm_for(s, p, w, w->qkv, ln1, at(p, p->set->ln1_mean, l),
                                  at(p, p->set->ln1_rstd, l), x, w->ln1_w, w->ln1_b, BT);
    attention_block(s, w, p, l, ln1, ln1_bf16, mask, B, T, x);
    if (s->cross) cross_pre_norm(s, w, p, l, x, B, T);
    if (p->keep) memcpy(at(p, p->set->mid, l), x, n * sizeof *x);
    const int ln2_bf16 = norm_for(s, p, w, w->fc1, ln2, at(p, p->set->ln2_mean, l),
                                  at(p, p->set->ln2_rstd, l), x, w->ln2_w, w->ln2_b, BT);
    mlp_block(s, w, p, l, ln2, ln2_bf16, BT, x);
}

static void post_norm_layer(const encoder_shape *s, const encoder_layer *w, pass *p, int l,
                            float *x, const uint8_t *mask, int B, int T) {
    const int D = s->dim, BT = B * T;
    const size_t n = (size_t)BT * D;
    float *mid = at(p, p->set->mid, l), *sum2 = at(p, p->set->sum2, l);
    if (p->keep) memcpy(at(p, p->set->layer_in, l), x, n * sizeof *x);
    memcpy(mid, x, n * sizeof *x); /* the residual the attention branch adds to */
    attention_block(s, w, p, l, x, 0, mask, B, T, mid);
    layernorm_forward(x, at(p, p->set->ln1_mean, l), at(p, p->set->ln1_rstd, l), mid, w->ln1_w,
                      w->ln1_b, BT, D, s->eps);
    if (s->cross) cross_post_norm(s, w, p, l, x, B, T);
    if (p->keep) memcpy(at(p, p->set->ln1_out, l), x, n * sizeof *x);
    memcpy(sum2, x, n * sizeof *x);
    mlp_block(s, w, p, l, x, 0, BT, sum2);
    layernorm_forward(x, at(p, p->set->ln2_mean, l), at(p, p->set->ln2_rstd, l), sum2, w->ln2_w,
                      w->ln2_b, BT, D, s->eps);
}

static void run_layers(const encoder_shape *s, const encoder_layer *layers, pass *p, float *x,
                       const uint8_t *key_mask, int B, int T) {
    p->T = T;
    for (int l = 0; l < s->layers; l++) {
        if (s->post_norm)
            post_norm_layer(s, &layers[l], p, l, x, key_mask, B, T);
        else
            pre_norm_layer(s, &layers[l], p, l, x, key_mask, B, T);
    }
}

/* A pass over the tape (TRAIN, EXPLAIN: the backward too), its cross states when it has them. */
static pass tape_pass(const encoder_run *run, encoder_tape *t) {
    return (pass){.run = run,
                  .keep = 1,
                  .set = &t->set,
                  .stride = t->layer_floats,
                  .scratch = t->scratch,
                  .tape = t,
                  .xkv = t->cross.kv,
                  .xkv_layer = (size_t)t->max_batch * t->cross.cross_tokens * 2 * t->dim,
                  .S = t->cross.S,
                  .rows_per_image = t->cross.rows_per_image};
}

/* An inference pass in sc (one set for every layer). */
static pass scratch_pass(const encoder_run *run, encoder_scratch *sc) {
    return (pass){.run = run,
                  .set = &sc->set,
                  .scratch = sc->scratch,
                  .xq = sc->xq,
                  .attn_scratch = sc->attn_scratch,
                  .attn_threads = sc->attn_threads};
}

int encoder_forward(const encoder_shape *s, const encoder_layer *layers, const encoder_run *run,
                    encoder_scratch *sc, encoder_tape *t, float *x, const uint8_t *key_mask, int B,
                    int T) {
    if (encoder_run_check(s, run, sc, t) != 0) return -1;
    pass p;
    if (run->mode == ENCODER_INFER) {
        p = scratch_pass(run, sc);
        if (s->cross) { /* the tape's cross states (a decoder's training buffers in eval mode) */
            const pass tp = tape_pass(run, t);
            p.xkv = tp.xkv, p.xkv_layer = tp.xkv_layer, p.S = tp.S;
            p.rows_per_image = tp.rows_per_image;
        }
    } else {
        p = tape_pass(run, t);
    }
    run_layers(s, layers, &p, x, key_mask, B, T);
    return 0;
}

void encoder_forward_cached(const encoder_shape *s, const encoder_layer *layers,
                            const encoder_run *run, encoder_scratch *sc, encoder_kv_cache *c,
                            float *x, int B, int T) {
    pass p = scratch_pass(run, sc);
    p.cache = c;
    p.xkv = c->cross_kv;
    p.xkv_layer = (size_t)c->max_images * c->cross_tokens * 2 * s->dim;
    p.S = c->S;
    p.rows_per_image = c->rows_per_image;
    run_layers(s, layers, &p, x, NULL, B, T);
    c->past += T;
}

/* ---- backward ---- */

/* Gradient wrt a residual branch's output projection from d, wrt what the branch adds to the
 * residual stream: d itself in eval mode without a layer scale, else in p->scratch, through the
 * scale (its gradient accumulated into dscale when set) and layer l's dropout mask. */
static const float *branch_backward(pass *p, const float *d, const float *scale, float *dscale,
                                    float *kept, uint8_t *mask, int l, int BT, int D) {
    const size_t n = (size_t)BT * D;
    if (scale) {
        layer_scale_backward(p->scratch, dscale, d, at(p, kept, l), scale, BT, D);
        d = p->scratch;
    }
    if (p->run->hidden_drop <= 0.0f) return d;
    dropout_backward(p->scratch, d, encoder_tape_mask(p->tape, mask, l), n, p->run->hidden_drop);
    return p->scratch;
}

/* dy: gradient wrt the attention branch output (after the projection). Leaves the gradient wrt
 * the branch input inp in p->tape->d_ln (overwritten). */
static void attention_block_backward(const encoder_shape *s, const encoder_layer *w,
                                     const encoder_layer *g, pass *p, int l, const float *dy,
                                     const float *inp, int B, int T) {
    const int D = s->dim, BT = B * T, H = s->heads;
    const float *qkv = at(p, p->set->qkv, l), *ctx = at(p, p->set->ctx, l);
    const uint8_t *keep =
        p->run->attn_drop > 0.0f ? encoder_tape_mask(p->tape, p->tape->keep_probs, l) : NULL;
    linear_backward(p->tape->d_ctx, g->proj_w, g->proj_b, dy, ctx, w->proj_w, BT, D, D);
    float *probs_grad = p->run->probs_grad ? p->run->probs_grad + (size_t)l * B * H * T * T : NULL;
    attention_backward(p->tape->d_qkv, p->tape->d_probs, probs_grad, g->attn_bias, p->tape->d_ctx,
                       qkv, at(p, p->set->probs, l), keep, p->run->attn_drop, B, T, D, H);
    if (s->rotary_dim) /* the rotation's transpose: back to the unturned queries and keys */
        rotary_forward(p->tape->d_qkv, B, T, 3 * (size_t)D, D, H, s->rotary_dim, s->rotary_base,
                       s->rotary_interleaved, 0, 1);
    scale_queries(p, w, p->tape->d_qkv, BT, D, 3 * D);
    linear_backward(p->tape->d_ln, g->qkv_w, g->qkv_b, p->tape->d_qkv, inp, w->qkv_w, BT, D, 3 * D);
}

/* Same for the MLP branch: dy wrt its output, p->tape->d_ln gets the gradient wrt its input inp. */
static void mlp_block_backward(const encoder_shape *s, const encoder_layer *w,
                               const encoder_layer *g, pass *p, int l, const float *dy,
                               const float *inp, int BT) {
    const int D = s->dim, I = s->mlp_dim;
    const float *fc1 = at(p, p->set->fc1_out, l), *act = at(p, p->set->act_out, l);
    linear_backward(p->tape->d_act, g->fc2_w, g->fc2_b, dy, act, w->fc2_w, BT, I, D);
    float *dfc1 = p->tape->d_act; /* in place, but a gated MLP's gradient is twice as wide */
    if (s->act == ACT_GEGLU)
        geglu_backward(dfc1 = p->tape->d_fc1, p->tape->d_act, fc1, BT, I);
    else if (s->act == ACT_SWIGLU)
        swiglu_backward(dfc1 = p->tape->d_fc1, p->tape->d_act, fc1, BT, I);
    else
        activation_backward(p->tape->d_act, p->tape->d_act, fc1, (size_t)BT * I, s->act);
    linear_backward(p->tape->d_ln, g->fc1_w, g->fc1_b, dfc1, inp, w->fc1_w, BT, D,
                    (int)fc1_width(s));
}

/* The keys' and values' gradient d_xkv of layer l's images to its xkv weights, and through them
 * to the states (added into run.d_cross_states when set). */
static void cross_kv_backward(const encoder_shape *s, const encoder_layer *w,
                              const encoder_layer *g, pass *p, int images) {
    const int n = images * p->S, D = s->dim, C = s->cross_dim;
    float *dstates = p->run->d_cross_states ? p->tape->cross.d_states : NULL;
    linear_backward(dstates, g->xkv_w, g->xkv_b, p->tape->cross.d_xkv, p->tape->cross.states,
                    w->xkv_w, n, C, 2 * D);
    if (dstates) vector_add(p->run->d_cross_states, p->run->d_cross_states, dstates, (size_t)n * C);
}

/* dy: gradient wrt the cross-attention branch's output (after the projection). Leaves the
 * gradient wrt the branch input inp in p->tape->d_ln (overwritten). */
static void cross_block_backward(const encoder_shape *s, const encoder_layer *w,
                                 const encoder_layer *g, pass *p, int l, const float *dy,
                                 const float *inp, int B, int T) {
    const int D = s->dim, H = s->heads, BT = B * T, k = p->rows_per_image, S = p->S;
    const float *q = cross_at(p, p->tape->cross.xq, l),
                *probs = cross_at(p, p->tape->cross.xprobs, l);
    linear_backward(p->tape->d_ctx, g->xproj_w, g->xproj_b, dy, cross_at(p, p->tape->cross.xctx, l),
                    w->xproj_w, BT, D, D);
    const float *kv = p->xkv + (size_t)l * p->xkv_layer;
    int images = 0;
    for (; images * k < B; images++) { /* an image's dK, dV sum over all its rows */
        const size_t first = (size_t)images * k * T, img = (size_t)images * S * 2 * D;
        attention_general_backward(p->tape->cross.d_xq + first * D, D, p->tape->cross.d_xkv + img,
                                   p->tape->cross.d_xkv + img + D, 2 * D,
                                   p->tape->d_ctx + first * D, probs + first * H * S, q + first * D,
                                   D, kv + img, kv + img + D, 2 * D, 1,
                                   image_rows(p, images, B) * T, S, D, H);
    }
    scale_queries(p, w, p->tape->cross.d_xq, BT, D, D);
    linear_backward(p->tape->d_ln, g->xq_w, g->xq_b, p->tape->cross.d_xq, inp, w->xq_w, BT, D, D);
    cross_kv_backward(s, w, g, p, images);
}

/* Pre-LN x_out = x + drop(Cross(LNx(x))): dx (wrt x_out) gets LNx's branch's share added. */
static void cross_pre_norm_backward(const encoder_shape *s, const encoder_layer *w,
                                    const encoder_layer *g, pass *p, int l, float *dx, int B,
                                    int T) {
    const int BT = B * T;
    const float *dy =
        branch_backward(p, dx, NULL, NULL, NULL, p->tape->cross.keep_cross, l, BT, s->dim);
    cross_block_backward(s, w, g, p, l, dy, cross_at(p, p->tape->cross.xln_out, l), B, T);
    layernorm_backward(dx, g->lnx_w, g->lnx_b, p->tape->d_ln, cross_at(p, p->tape->cross.xln_in, l),
                       cross_at(p, p->tape->cross.xln_mean, l),
                       cross_at(p, p->tape->cross.xln_rstd, l), w->lnx_w, BT, s->dim);
}

/* Post-LN x2 = LNx(x1 + drop(Cross(x1))): from dres (wrt x2) to dres wrt x1; dx is scratch. */
static void cross_post_norm_backward(const encoder_shape *s, const encoder_layer *w,
                                     const encoder_layer *g, pass *p, int l, float *dres, float *dx,
                                     int B, int T) {
    const int BT = B * T;
    const size_t n = (size_t)BT * s->dim;
    memset(dx, 0, n * sizeof *dx);
    layernorm_backward(dx, g->lnx_w, g->lnx_b, dres, cross_at(p, p->tape->cross.xln_in, l),
                       cross_at(p, p->tape->cross.xln_mean, l),
                       cross_at(p, p->tape->cross.xln_rstd, l), w->lnx_w, BT,
                       s->dim); /* dx: wrt the sum x1 + drop(Cross(x1)) */
    const float *dy =
        branch_backward(p, dx, NULL, NULL, NULL, p->tape->cross.keep_cross, l, BT, s->dim);
    cross_block_backward(s, w, g, p, l, dy, cross_at(p, p->tape->cross.x_in, l), B, T);
    vector_add(dres, dx, p->tape->d_ln, n);
}

/* x_mid = x + ls1 ⊙ drop(Attn(LN1(x))); x_out = x_mid + ls2 ⊙ drop(MLP(LN2(x_mid))) (no ls: 1).
 * The residual paths carry dx straight through; each LayerNorm backward adds its branch's share
 * into dx. */
static void pre_norm_layer_backward(const encoder_shape *s, const encoder_layer *w,
                                    const encoder_layer *g, pass *p, int l, float *dx, int B,
                                    int T) {
    const int D = s->dim, BT = B * T;
    const float *dy =
        branch_backward(p, dx, w->ls2, g->ls2, p->set->mlp_out, p->tape->keep_mlp, l, BT, D);
    mlp_block_backward(s, w, g, p, l, dy, at(p, p->set->ln2_out, l), BT);
    layernorm_backward(dx, g->ln2_w, g->ln2_b, p->tape->d_ln, at(p, p->set->mid, l),
                       at(p, p->set->ln2_mean, l), at(p, p->set->ln2_rstd, l), w->ln2_w, BT, D);
    if (s->cross) cross_pre_norm_backward(s, w, g, p, l, dx, B, T);
    dy = branch_backward(p, dx, w->ls1, g->ls1, p->set->attn_out, p->tape->keep_attn, l, BT, D);
    attention_block_backward(s, w, g, p, l, dy, at(p, p->set->ln1_out, l), B, T);
    layernorm_backward(dx, g->ln1_w, g->ln1_b, p->tape->d_ln, at(p, p->set->layer_in, l),
                       at(p, p->set->ln1_mean, l), at(p, p->set->ln1_rstd, l), w->ln1_w, BT, D);
}

/* mid = x + ls1 ⊙ drop(Attn(x)); x1 = LN1(mid); sum2 = x1 + ls2 ⊙ drop(MLP(x1)); x_out =
 * LN2(sum2). A decoder has x2 = LNx(x1 + drop(Cross(x1))) in place of x1 from the MLP on. */
static void post_norm_layer_backward(const encoder_shape *s, const encoder_layer *w,
                                     const encoder_layer *g, pass *p, int l, float *dx, int B,
                                     int T) {
    const int D = s->dim, BT = B * T;
    const size_t n = (size_t)BT * D;
    float *dres = p->tape->d_res;
    memset(dres, 0, n * sizeof *dres);
    layernorm_backward(dres, g->ln2_w, g->ln2_b, dx, at(p, p->set->sum2, l),
                       at(p, p->set->ln2_mean, l), at(p, p->set->ln2_rstd, l), w->ln2_w, BT, D);
    const float *dy =
        branch_backward(p, dres, w->ls2, g->ls2, p->set->mlp_out, p->tape->keep_mlp, l, BT, D);
    mlp_block_backward(s, w, g, p, l, dy, at(p, p->set->ln1_out, l), BT);
    vector_add(dres, dres, p->tape->d_ln, n); /* dres: gradient wrt x1 (with cross-attention, x2) */
    if (s->cross) cross_post_norm_backward(s, w, g, p, l, dres, dx, B, T);
    memset(dx, 0, n * sizeof *dx);
    layernorm_backward(dx, g->ln1_w, g->ln1_b, dres, at(p, p->set->mid, l),
                       at(p, p->set->ln1_mean, l), at(p, p->set->ln1_rstd, l), w->ln1_w, BT, D);
    dy = branch_backward(p, dx, w->ls1, g->ls1, p->set->attn_out, p->tape->keep_attn, l, BT, D);
    attention_block_backward(s, w, g, p, l, dy, at(p, p->set->layer_in, l), B, T);
    vector_add(dx, dx, p->tape->d_ln, n);
}

void encoder_backward(const encoder_shape *s, const encoder_layer *layers,
                      const encoder_layer *grads, const encoder_run *run, encoder_tape *t,
                      float *dx, int B, int T) {
    pass p = tape_pass(run, t);
    p.T = T;
    if (s->cross && run->d_cross_states) /* every layer adds its share */
        memset(run->d_cross_states, 0,
               sizeof(float) * (size_t)t->cross.images * t->cross.S * (size_t)s->cross_dim);
    for (int l = s->layers - 1; l >= 0; l--) {
        if (s->post_norm)
            post_norm_layer_backward(s, &layers[l], &grads[l], &p, l, dx, B, T);
        else
            pre_norm_layer_backward(s, &layers[l], &grads[l], &p, l, dx, B, T);
    }
}
