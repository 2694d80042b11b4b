#include "vit/core/encoder.h"

#include "vit/base/alloc.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "vit/core/ops.h"

/* Floats per row of fc1's output: SwiGLU's first layer is twice as wide. */
static size_t fc1_width(const encoder_shape *s) {
    return (size_t)s->mlp_dim * (s->act == ACT_SWIGLU ? 2 : 1);
}

/* Training's extra buffers: per-layer dropout masks (bytes) and the backward's shared scratch. */
static int training_alloc(encoder_acts *a, const encoder_shape *s, int max_batch, int tokens) {
    const size_t BT = (size_t)max_batch * tokens, D = (size_t)s->dim, I = (size_t)s->mlp_dim;
    const size_t BHTT = (size_t)max_batch * s->heads * tokens * tokens, L = (size_t)s->layers;
    const size_t mask_sizes[] = {L * BT * D, L * BT * D, L * BHTT};
    uint8_t **masks[] = {&a->keep_attn, &a->keep_mlp, &a->keep_probs};
    a->mask_block = alloc_byte_block(3, mask_sizes, masks);
    const size_t swiglu = s->act == ACT_SWIGLU ? BT * 2 * I : 0;
    const size_t sizes[] = {BT * D, BT * D, BT * D, BT * 3 * D, BT * I, BHTT, swiglu};
    float **fields[] = {&a->d_ln,  &a->d_res,   &a->d_ctx, &a->d_qkv,
                        &a->d_act, &a->d_probs, &a->d_fc1};
    a->grad_block = alloc_float_block(7, sizes, fields);
    if (!swiglu) a->d_fc1 = NULL;
    return a->mask_block && a->grad_block ? 0 : -1;
}

int encoder_acts_alloc(encoder_acts *acts, const encoder_shape *s, int max_batch, int tokens,
                       int per_layer) {
    memset(acts, 0, sizeof *acts);
    size_t BT = (size_t)max_batch * tokens, D = (size_t)s->dim, I = (size_t)s->mlp_dim;
    const size_t kept = per_layer && s->layer_scale ? BT * D : 0;
    /* clang-format off */
    const size_t sizes[] = {
        BT * D,                                         /* layer_in */
        BT * D, BT, BT,                                 /* ln1 */
        BT * 3 * D,                                     /* qkv */
        (size_t)max_batch * s->heads * tokens * tokens, /* probs */
        BT * D, BT * D,                                 /* ctx, mid */
        BT * D, BT, BT,                                 /* ln2 */
        BT * fc1_width(s), BT * I,                      /* fc1_out, act_out */
        BT * D, BT * D,                                 /* sum2, scratch */
        kept, kept,                                     /* attn_out, mlp_out */
    };
    /* clang-format on */
    float **fields[] = {&acts->layer_in, &acts->ln1_out,  &acts->ln1_mean, &acts->ln1_rstd,
                        &acts->qkv,      &acts->probs,    &acts->ctx,      &acts->mid,
                        &acts->ln2_out,  &acts->ln2_mean, &acts->ln2_rstd, &acts->fc1_out,
                        &acts->act_out,  &acts->sum2,     &acts->scratch,  &acts->attn_out,
                        &acts->mlp_out};
    const size_t count = sizeof sizes / sizeof sizes[0];
    acts->block = alloc_float_sets(per_layer ? (size_t)s->layers : 1, count, sizes, fields,
                                   &acts->layer_floats);
    if (!acts->block) return -1;
    if (!kept) acts->attn_out = acts->mlp_out = NULL;
    acts->attn_threads = omp_get_num_procs();
    if (attention_infer_supported(s->dim, s->heads) &&
        !(acts->attn_scratch = vit_alloc_floats(
              attention_infer_scratch(max_batch, tokens, s->dim, acts->attn_threads)))) {
        encoder_acts_free(acts);
        return -1;
    }
    acts->per_layer = per_layer;
    acts->max_batch = max_batch;
    acts->tokens = tokens;
    acts->layers = s->layers;
    acts->dim = s->dim;
    acts->heads = s->heads;
    acts->cross = s->cross;
    if (per_layer && training_alloc(acts, s, max_batch, tokens) != 0) {
        encoder_acts_free(acts);
        return -1;
    }
    return 0;
}

void encoder_acts_free(encoder_acts *acts) {
    free(acts->block);
    free(acts->attn_scratch);
    free(acts->mask_block);
    free(acts->grad_block);
    free(acts->cache_block);
    free(acts->cross_block);
    free(acts->cross_shared);
    free(acts->cross_masks);
    memset(acts, 0, sizeof *acts);
}

int encoder_acts_alloc_cache(encoder_acts *a, const encoder_shape *s, int cache_len, int max_images,
                             int cross_tokens) {
    const size_t L = (size_t)s->layers, D = (size_t)s->dim, B = (size_t)a->max_batch;
    const size_t cache = L * B * (size_t)cache_len * 2 * D;
    const size_t sizes[] = {cache, cache, L * (size_t)max_images * (size_t)cross_tokens * 2 * D,
                            B * (size_t)a->tokens * D};
    float **fields[] = {&a->kv_cache, &a->kv_spare, &a->cross_kv, &a->xq_buf};
    a->cache_block = alloc_float_block(4, sizes, fields);
    if (!a->cache_block) return -1;
    a->cache_len = cache_len;
    a->max_images = max_images;
    a->cross_tokens = cross_tokens;
    a->past = a->images = 0;
    a->rows_per_image = 1;
    return 0;
}

/* Per layer: LNx's input, output and statistics, the branch's input (post-LN), queries, weights
 * and heads; once: every layer's keys and values, and the backward's scratch. */
int encoder_acts_alloc_cross(encoder_acts *a, const encoder_shape *s, int cross_tokens) {
    if (!s->cross || !a->per_layer || a->kv_cache || a->cross_block || cross_tokens < 1) return -1;
    const size_t B = (size_t)a->max_batch, BT = B * a->tokens, D = (size_t)s->dim;
    const size_t S = (size_t)cross_tokens, L = (size_t)s->layers;
    const size_t sets[] = {BT * D, BT * D, BT, BT, BT * D, BT * D, BT * s->heads * S, BT * D};
    float **set_fields[] = {&a->xln_in, &a->xln_out, &a->xln_mean, &a->xln_rstd,
                            &a->x_in,   &a->xq,      &a->xprobs,   &a->xctx};
    a->cross_block = alloc_float_sets(L, 8, sets, set_fields, &a->cross_floats);
    const size_t shared[] = {L * B * S * 2 * D, BT * D, B * S * 2 * D, B * S * s->cross_dim};
    float **shared_fields[] = {&a->cross_kv, &a->d_xq, &a->d_xkv, &a->d_states};
    a->cross_shared = alloc_float_block(4, shared, shared_fields);
    const size_t masks[] = {L * BT * D};
    uint8_t **mask_fields[] = {&a->keep_cross};
    a->cross_masks = alloc_byte_block(1, masks, mask_fields);
    if (!a->cross_block || !a->cross_shared || !a->cross_masks) {
        free(a->cross_block), free(a->cross_shared), free(a->cross_masks);
        a->cross_block = a->cross_shared = NULL, a->cross_masks = NULL;
        return -1;
    }
    a->max_images = a->max_batch;
    a->cross_tokens = cross_tokens;
    a->images = 0;
    a->rows_per_image = 1;
    return 0;
}

float *encoder_acts_cross(const encoder_acts *acts, float *field, int layer) {
    return acts->keep ? field + (size_t)layer * acts->cross_floats : field;
}

/* Layer l's cache of row b: [cache_len, 2D], key then value per position. */
static float *cache_row(const encoder_acts *a, float *cache, int l, int b) {
    const size_t row = (size_t)a->cache_len * 2 * a->dim;
    return cache + ((size_t)l * a->max_batch + b) * row;
}

/* Layer l's cross-attention keys and values: [images, cross_run, 2D]. */
static float *cross_layer(const encoder_acts *a, int l) {
    return a->cross_kv + (size_t)l * a->max_images * a->cross_tokens * 2 * a->dim;
}

void encoder_cross_states(const encoder_shape *s, const encoder_layer *layers, encoder_acts *a,
                          const float *states, int images, int S, int rows_per_image) {
    for (int l = 0; l < s->layers; l++) {
        const encoder_layer *w = &layers[l];
        if (w->xkv && a->gemm)
            gemm_run(w->xkv, states, images * S, cross_layer(a, l), a->gemm);
        else
            linear_forward(cross_layer(a, l), states, w->xkv_w, w->xkv_b, images * S, s->cross_dim,
                           2 * s->dim);
    }
    a->cross_states = states;
    a->images = images;
    a->cross_run = S;
    a->rows_per_image = rows_per_image;
    a->past = 0;
}

void encoder_cache_reorder(encoder_acts *a, const int *parent, int rows) {
    const size_t used = (size_t)a->past * 2 * a->dim * sizeof(float);
    for (int l = 0; l < a->layers; l++)
        for (int r = 0; r < rows; r++)
            memcpy(cache_row(a, a->kv_spare, l, r), cache_row(a, a->kv_cache, l, parent[r]), used);
    float *t = a->kv_cache;
    a->kv_cache = a->kv_spare;
    a->kv_spare = t;
}

float *encoder_acts_layer(const encoder_acts *acts, float *field, int layer) {
    return acts->keep ? field + (size_t)layer * acts->layer_floats : field;
}

uint8_t *encoder_acts_mask(const encoder_acts *acts, uint8_t *field, int layer) {
    /* each mask field holds one [B,T,D] (or [B,H,T,T]) mask per layer, back to back */
    const size_t BT = (size_t)acts->max_batch * acts->tokens;
    const size_t per = field == acts->keep_probs ? BT * acts->heads * acts->tokens : BT * acts->dim;
    return field + (size_t)layer * per;
}

int encoder_set_mode(encoder_acts *acts, int keep, float hidden, float attn, uint64_t *rng) {
    const int dropout = hidden > 0.0f || attn > 0.0f;
    if ((keep || dropout) && !acts->per_layer) return -1;
    if (dropout && (!keep || !rng)) return -1;
    if (acts->cross && ((keep && !acts->cross_block) || attn > 0.0f)) return -1;
    acts->keep = keep;
    acts->hidden_drop = hidden > 0.0f ? hidden : 0.0f;
    acts->attn_drop = attn > 0.0f ? attn : 0.0f;
    acts->rng = rng;
    return 0;
}

void encoder_set_batch_part(encoder_acts *acts, int first, int total) {
    acts->batch_first = first;
    acts->batch_total = total;
}

/* A mask of B examples of per floats each, as this batch's part of the whole batch's mask. */
static void batch_mask(const encoder_acts *a, uint8_t *keep, int B, size_t per, float p) {
    const size_t first = (size_t)a->batch_first * per;
    const size_t total = (size_t)(a->batch_total > 0 ? a->batch_total : B) * per;
    dropout_mask_part(keep, (size_t)B * per, p, a->rng, first, total);
}

/* Training: a fresh dropout mask for layer l's branch output in a->scratch (B·per floats). */
static void branch_dropout(encoder_acts *a, uint8_t *field, int l, int B, size_t per) {
    if (a->hidden_drop <= 0.0f) return;
    uint8_t *keep = encoder_acts_mask(a, field, l);
    batch_mask(a, keep, B, per, a->hidden_drop);
    dropout_forward(a->scratch, a->scratch, keep, (size_t)B * per, a->hidden_drop);
}

/* Prepared layers run inference (vit/core/gemm.h) with the caller's gemm_state; training keeps
 * the plain products. */
static int prepared(const encoder_acts *a, const encoder_layer *w) {
    return w->qkv && a->gemm && !a->keep;
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
static void add_branch(const encoder_layer *w, encoder_acts *a, int l, const branch_out *o,
                       const float *inp, int inp_bf16, int BT, int D, float *residual) {
    if (prepared(a, w)) {
        run_prepared(o->prepared, inp, inp_bf16, BT, residual, a->gemm);
        return;
    }
    linear_forward(a->scratch, inp, o->weight, o->bias, BT, o->in, D);
    branch_dropout(a, o->mask, l, BT / a->run_tokens, (size_t)a->run_tokens * D);
    if (o->scale) {
        if (a->keep) memcpy(encoder_acts_layer(a, o->kept, l), a->scratch, sizeof(float) * BT * D);
        layer_scale_forward(a->scratch, a->scratch, o->scale, BT, D);
    }
    vector_add(residual, residual, a->scratch, (size_t)BT * D);
}

/* Self-attention of T new rows per sequence over the cached rows and themselves: their keys and
 * values join the cache first, then each sequence's queries attend causally. */
static void cached_attention(encoder_acts *a, int l, const float *qkv, float *ctx, int B, int T,
                             int D, int H) {
    for (int b = 0; b < B; b++) {
        float *cache = cache_row(a, a->kv_cache, l, b);
        for (int t = 0; t < T; t++)
            memcpy(cache + (size_t)(a->past + t) * 2 * D, qkv + ((size_t)b * T + t) * 3 * D + D,
                   2 * D * sizeof *cache);
    }
    /* every row's cache is cache_len positions of 2D, so one call covers the batch */
    float *cache = cache_row(a, a->kv_cache, l, 0);
    attention_general_forward(ctx, NULL, qkv, 3 * D, cache, cache + D, 2 * D, NULL, a->past, B, T,
                              a->past + T, a->cache_len, D, H);
}

/* Rows of the sequences reading image g: g·k .. g·k + return - 1 (k = rows_per_image; the last
 * image may have fewer). */
static int image_rows(const encoder_acts *a, int g, int B) {
    const int k = a->rows_per_image, left = B - g * k;
    return left < k ? left : k;
}

/* Cross-attention: the rows of each image's sequences attend to that image's states' keys and
 * values (all its rows in one call: one item of rows·T queries). Training keeps the queries, the
 * weights and the heads in the layer's own buffers. */
static void cross_attention_block(const encoder_shape *s, const encoder_layer *w, encoder_acts *a,
                                  int l, const float *inp, int B, int T, float *residual) {
    const int D = s->dim, H = s->heads, BT = B * T, k = a->rows_per_image, S = a->cross_run;
    const int train = a->cross_block != NULL;
    float *q = train ? encoder_acts_cross(a, a->xq, l) : a->xq_buf;
    float *ctx = train ? encoder_acts_cross(a, a->xctx, l) : encoder_acts_layer(a, a->ctx, l);
    float *probs = a->keep ? encoder_acts_cross(a, a->xprobs, l) : NULL;
    if (prepared(a, w))
        gemm_run(w->xq, inp, BT, q, a->gemm);
    else
        linear_forward(q, inp, w->xq_w, w->xq_b, BT, D, D);
    const float *kv = cross_layer(a, l);
    for (int g = 0; g * k < B; g++) {
        const size_t first = (size_t)g * k * T; /* the image's first query row */
        const float *img = kv + (size_t)g * S * 2 * D;
        attention_general_forward(ctx + first * D, probs ? probs + first * H * S : NULL,
                                  q + first * D, D, img, img + D, 2 * D, NULL, -1, 1,
                                  image_rows(a, g, B) * T, S, S, D, H);
    }
    const branch_out out = {w->xproj, w->xproj_w, w->xproj_b, NULL, D, a->keep_cross, NULL};
    add_branch(w, a, l, &out, ctx, 0, BT, D, residual);
}

/* Pre-LN: x += Cross(LNx(x)). Training keeps LNx's input, output and statistics; inference
 * borrows LN1's buffers (nothing is kept). */
static void cross_pre_norm(const encoder_shape *s, const encoder_layer *w, encoder_acts *a, int l,
                           float *x, int B, int T) {
    const int BT = B * T;
    const int train = a->cross_block != NULL;
    float *out =
        train ? encoder_acts_cross(a, a->xln_out, l) : encoder_acts_layer(a, a->ln1_out, l);
    float *mean = train ? encoder_acts_cross(a, a->xln_mean, l) : NULL;
    float *rstd = train ? encoder_acts_cross(a, a->xln_rstd, l) : NULL;
    if (a->keep) memcpy(encoder_acts_cross(a, a->xln_in, l), x, sizeof *x * (size_t)BT * s->dim);
    layernorm_forward(out, mean, rstd, x, w->lnx_w, w->lnx_b, BT, s->dim, s->eps);
    cross_attention_block(s, w, a, l, out, B, T, x);
}

/* Post-LN: x = LNx(x + Cross(x)). Training keeps the branch's input, LNx's input and statistics;
 * inference sums in mid. */
static void cross_post_norm(const encoder_shape *s, const encoder_layer *w, encoder_acts *a, int l,
                            float *x, int B, int T) {
    const int BT = B * T;
    const size_t n = (size_t)BT * s->dim;
    const int train = a->cross_block != NULL;
    float *sum = train ? encoder_acts_cross(a, a->xln_in, l) : encoder_acts_layer(a, a->mid, l);
    float *mean = train ? encoder_acts_cross(a, a->xln_mean, l) : NULL;
    float *rstd = train ? encoder_acts_cross(a, a->xln_rstd, l) : NULL;
    if (a->keep) memcpy(encoder_acts_cross(a, a->x_in, l), x, n * sizeof *x);
    memcpy(sum, x, n * sizeof *x);
    cross_attention_block(s, w, a, l, x, B, T, sum);
    layernorm_forward(x, mean, rstd, sum, w->lnx_w, w->lnx_b, BT, s->dim, s->eps);
}

/* inp_bf16: inp holds bfloat16 for qkv (prepared and taking bf16). */
static void attention_block(const encoder_shape *s, const encoder_layer *w, encoder_acts *a, int l,
                            const float *inp, int inp_bf16, const uint8_t *mask, int B, int T,
                            float *residual) {
    const int D = s->dim, BT = B * T, H = s->heads;
    float *qkv = encoder_acts_layer(a, a->qkv, l), *ctx = encoder_acts_layer(a, a->ctx, l);
    float *probs = encoder_acts_layer(a, a->probs, l);
    int ctx_bf16 = 0; /* ctx written as bfloat16 for proj */
    /* qkv written as bfloat16 (gemm_write_bf16: models whose attention always takes the bf16
     * kernels, model_prepare decides) */
    const int qkv_bf16 = prepared(a, w) && gemm_writes_bf16(w->qkv);
    if (prepared(a, w))
        run_prepared(w->qkv, inp, inp_bf16, BT, qkv, a->gemm);
    else
        linear_forward(qkv, inp, w->qkv_w, w->qkv_b, BT, D, 3 * D);
    if (a->kv_cache) { /* decoder inference: these rows after the cached ones */
        cached_attention(a, l, qkv, ctx, B, T, D, H);
    } else if (qkv_bf16 || (!a->keep && a->attn_scratch && prepared(a, w) &&
                            gemm_weight_runs_reduced(w->qkv))) {
        /* bf16 and int8 inference: the attention's products in bf16 */
        uint16_t *ctx16 = gemm_takes_bf16(w->proj) ? (uint16_t *)(void *)ctx : NULL;
        ctx_bf16 = attention_infer_bf16_io(ctx16, ctx, qkv_bf16 ? NULL : qkv,
                                           qkv_bf16 ? (const uint16_t *)(const void *)qkv : NULL,
                                           mask, w->attn_bias, s->causal, a->attn_scratch,
                                           a->attn_threads, B, T, D, H);
    } else if (!a->keep && a->attn_scratch) { /* inference: no weights kept */
        attention_infer(ctx, qkv, mask, w->attn_bias, s->causal, a->attn_scratch, a->attn_threads,
                        B, T, D, H);
    } else if (a->attn_drop > 0.0f) {
        uint8_t *keep = encoder_acts_mask(a, a->keep_probs, l);
        batch_mask(a, keep, B, (size_t)H * T * T, a->attn_drop);
        attention_forward_dropout(ctx, probs, a->d_probs, qkv, mask, w->attn_bias, s->causal, keep,
                                  a->attn_drop, B, T, D, H);
    } else {
        attention_forward(ctx, probs, qkv, mask, w->attn_bias, s->causal, B, T, D, H);
    }
    const branch_out out = {w->proj, w->proj_w, w->proj_b, w->ls1, D, a->keep_attn, a->attn_out};
    add_branch(w, a, l, &out, ctx, ctx_bf16, BT, D, residual);
}

/* inp_bf16: inp holds bfloat16 for fc1 (prepared and taking bf16). */
static void mlp_block(const encoder_shape *s, const encoder_layer *w, encoder_acts *a, int l,
                      const float *inp, int inp_bf16, int BT, float *residual) {
    const int D = s->dim, I = s->mlp_dim, swiglu = s->act == ACT_SWIGLU;
    float *fc1 = encoder_acts_layer(a, a->fc1_out, l), *act = encoder_acts_layer(a, a->act_out, l);
    if (prepared(a, w) && !swiglu) /* the activation is fc1's epilogue */
        run_prepared(w->fc1, inp, inp_bf16, BT, act, a->gemm);
    else if (prepared(a, w))
        run_prepared(w->fc1, inp, inp_bf16, BT, fc1, a->gemm);
    else
        linear_forward(fc1, inp, w->fc1_w, w->fc1_b, BT, D, (int)fc1_width(s));
    if (swiglu)
        swiglu_forward(act, fc1, BT, I);
    else if (!prepared(a, w))
        activation_forward(act, fc1, (size_t)BT * I, s->act);
    const branch_out out = {w->fc2, w->fc2_w, w->fc2_b, w->ls2, I, a->keep_mlp, a->mlp_out};
    add_branch(w, a, l, &out, act, 0, BT, D, residual);
}

/* out = LayerNorm(x) (norm weight g, bias b) for the layer that reads it next: rounded to bfloat16
 * as it is written when that layer is prepared and takes bf16 (returns 1), else floats with the
 * statistics kept (0). */
static int norm_for(const encoder_shape *s, encoder_acts *a, const encoder_layer *w,
                    const gemm_weight *next, float *out, float *mean, float *rstd, const float *x,
                    const float *g, const float *b, int BT) {
    if (prepared(a, w) && gemm_takes_bf16(next)) {
        layernorm_forward_bf16((uint16_t *)(void *)out, x, g, b, BT, s->dim, s->eps);
        return 1;
    }
    layernorm_forward(out, mean, rstd, x, g, b, BT, s->dim, s->eps);
    return 0;
}

static void pre_norm_layer(const encoder_shape *s, const encoder_layer *w, encoder_acts *a, int l,
                           float *x, const uint8_t *mask, int B, int T) {
    const int D = s->dim, BT = B * T;
    const size_t n = (size_t)BT * D;
    float *ln1 = encoder_acts_layer(a, a->ln1_out, l), *ln2 = encoder_acts_layer(a, a->ln2_out, l);
    if (a->keep) memcpy(encoder_acts_layer(a, a->layer_in, l), x, n * sizeof *x);
    const int ln1_bf16 = norm_for(s, a, w, w->qkv, ln1, encoder_acts_layer(a, a->ln1_mean, l),
                                  encoder_acts_layer(a, a->ln1_rstd, l), x, w->ln1_w, w->ln1_b, BT);
    attention_block(s, w, a, l, ln1, ln1_bf16, mask, B, T, x);
    if (s->cross) cross_pre_norm(s, w, a, l, x, B, T);
    if (a->keep) memcpy(encoder_acts_layer(a, a->mid, l), x, n * sizeof *x);
    const int ln2_bf16 = norm_for(s, a, w, w->fc1, ln2, encoder_acts_layer(a, a->ln2_mean, l),
                                  encoder_acts_layer(a, a->ln2_rstd, l), x, w->ln2_w, w->ln2_b, BT);
    mlp_block(s, w, a, l, ln2, ln2_bf16, BT, x);
}

static void post_norm_layer(const encoder_shape *s, const encoder_layer *w, encoder_acts *a, int l,
                            float *x, const uint8_t *mask, int B, int T) {
    const int D = s->dim, BT = B * T;
    const size_t n = (size_t)BT * D;
    float *mid = encoder_acts_layer(a, a->mid, l), *sum2 = encoder_acts_layer(a, a->sum2, l);
    if (a->keep) memcpy(encoder_acts_layer(a, a->layer_in, l), x, n * sizeof *x);
    memcpy(mid, x, n * sizeof *x); /* the residual the attention branch adds to */
    attention_block(s, w, a, l, x, 0, mask, B, T, mid);
    layernorm_forward(x, encoder_acts_layer(a, a->ln1_mean, l),
                      encoder_acts_layer(a, a->ln1_rstd, l), mid, w->ln1_w, w->ln1_b, BT, D,
                      s->eps);
    if (s->cross) cross_post_norm(s, w, a, l, x, B, T);
    if (a->keep) memcpy(encoder_acts_layer(a, a->ln1_out, l), x, n * sizeof *x);
    memcpy(sum2, x, n * sizeof *x);
    mlp_block(s, w, a, l, x, 0, BT, sum2);
    layernorm_forward(x, encoder_acts_layer(a, a->ln2_mean, l),
                      encoder_acts_layer(a, a->ln2_rstd, l), sum2, w->ln2_w, w->ln2_b, BT, D,
                      s->eps);
}

void encoder_forward(const encoder_shape *s, const encoder_layer *layers, encoder_acts *a, float *x,
                     const uint8_t *key_mask, int B, int T) {
    a->run_tokens = T;
    for (int l = 0; l < s->layers; l++) {
        if (s->post_norm)
            post_norm_layer(s, &layers[l], a, l, x, key_mask, B, T);
        else
            pre_norm_layer(s, &layers[l], a, l, x, key_mask, B, T);
    }
    if (a->kv_cache) a->past += T;
}

/* ---- backward ---- */

/* Gradient wrt a residual branch's output projection from d, wrt what the branch adds to the
 * residual stream: d itself in eval mode without a layer scale, else in a->scratch, through the
 * scale (its gradient accumulated into dscale when set) and layer l's dropout mask. */
static const float *branch_backward(encoder_acts *a, const float *d, const float *scale,
                                    float *dscale, float *kept, uint8_t *mask, int l, int BT,
                                    int D) {
    const size_t n = (size_t)BT * D;
    if (scale) {
        layer_scale_backward(a->scratch, dscale, d, encoder_acts_layer(a, kept, l), scale, BT, D);
        d = a->scratch;
    }
    if (a->hidden_drop <= 0.0f) return d;
    dropout_backward(a->scratch, d, encoder_acts_mask(a, mask, l), n, a->hidden_drop);
    return a->scratch;
}

/* dy: gradient wrt the attention branch output (after the projection). Leaves the gradient wrt
 * the branch input inp in a->d_ln (overwritten). */
static void attention_block_backward(const encoder_shape *s, const encoder_layer *w,
                                     const encoder_layer *g, encoder_acts *a, int l,
                                     const float *dy, const float *inp, int B, int T) {
    const int D = s->dim, BT = B * T, H = s->heads;
    const float *qkv = encoder_acts_layer(a, a->qkv, l), *ctx = encoder_acts_layer(a, a->ctx, l);
    const uint8_t *keep = a->attn_drop > 0.0f ? encoder_acts_mask(a, a->keep_probs, l) : NULL;
    linear_backward(a->d_ctx, g->proj_w, g->proj_b, dy, ctx, w->proj_w, BT, D, D);
    float *probs_grad = a->probs_grad ? a->probs_grad + (size_t)l * B * H * T * T : NULL;
    attention_backward(a->d_qkv, a->d_probs, probs_grad, g->attn_bias, a->d_ctx, qkv,
                       encoder_acts_layer(a, a->probs, l), keep, a->attn_drop, B, T, D, H);
    linear_backward(a->d_ln, g->qkv_w, g->qkv_b, a->d_qkv, inp, w->qkv_w, BT, D, 3 * D);
}

/* Same for the MLP branch: dy wrt its output, a->d_ln gets the gradient wrt its input inp. */
static void mlp_block_backward(const encoder_shape *s, const encoder_layer *w,
                               const encoder_layer *g, encoder_acts *a, int l, const float *dy,
                               const float *inp, int BT) {
    const int D = s->dim, I = s->mlp_dim;
    const float *fc1 = encoder_acts_layer(a, a->fc1_out, l),
                *act = encoder_acts_layer(a, a->act_out, l);
    linear_backward(a->d_act, g->fc2_w, g->fc2_b, dy, act, w->fc2_w, BT, I, D);
    float *dfc1 = a->d_act; /* in place, but SwiGLU's gradient is twice as wide */
    if (s->act == ACT_SWIGLU)
        swiglu_backward(dfc1 = a->d_fc1, a->d_act, fc1, BT, I);
    else
        activation_backward(a->d_act, a->d_act, fc1, (size_t)BT * I, s->act);
    linear_backward(a->d_ln, g->fc1_w, g->fc1_b, dfc1, inp, w->fc1_w, BT, D, (int)fc1_width(s));
}

/* The keys' and values' gradient d_xkv of layer l's images to its xkv weights, and through them
 * to the states (added into acts->d_cross_states when set). */
static void cross_kv_backward(const encoder_shape *s, const encoder_layer *w,
                              const encoder_layer *g, encoder_acts *a, int images) {
    const int n = images * a->cross_run, D = s->dim, C = s->cross_dim;
    float *dstates = a->d_cross_states ? a->d_states : NULL;
    linear_backward(dstates, g->xkv_w, g->xkv_b, a->d_xkv, a->cross_states, w->xkv_w, n, C, 2 * D);
    if (dstates) vector_add(a->d_cross_states, a->d_cross_states, dstates, (size_t)n * C);
}

/* dy: gradient wrt the cross-attention branch's output (after the projection). Leaves the
 * gradient wrt the branch input inp in a->d_ln (overwritten). */
static void cross_block_backward(const encoder_shape *s, const encoder_layer *w,
                                 const encoder_layer *g, encoder_acts *a, int l, const float *dy,
                                 const float *inp, int B, int T) {
    const int D = s->dim, H = s->heads, BT = B * T, k = a->rows_per_image, S = a->cross_run;
    const float *q = encoder_acts_cross(a, a->xq, l), *probs = encoder_acts_cross(a, a->xprobs, l);
    linear_backward(a->d_ctx, g->xproj_w, g->xproj_b, dy, encoder_acts_cross(a, a->xctx, l),
                    w->xproj_w, BT, D, D);
    const float *kv = cross_layer(a, l);
    int images = 0;
    for (; images * k < B; images++) { /* an image's dK, dV sum over all its rows */
        const size_t first = (size_t)images * k * T, img = (size_t)images * S * 2 * D;
        attention_general_backward(a->d_xq + first * D, D, a->d_xkv + img, a->d_xkv + img + D,
                                   2 * D, a->d_ctx + first * D, probs + first * H * S,
                                   q + first * D, D, kv + img, kv + img + D, 2 * D, 1,
                                   image_rows(a, images, B) * T, S, D, H);
    }
    linear_backward(a->d_ln, g->xq_w, g->xq_b, a->d_xq, inp, w->xq_w, BT, D, D);
    cross_kv_backward(s, w, g, a, images);
}

/* Pre-LN x_out = x + drop(Cross(LNx(x))): dx (wrt x_out) gets LNx's branch's share added. */
static void cross_pre_norm_backward(const encoder_shape *s, const encoder_layer *w,
                                    const encoder_layer *g, encoder_acts *a, int l, float *dx,
                                    int B, int T) {
    const int BT = B * T;
    const float *dy = branch_backward(a, dx, NULL, NULL, NULL, a->keep_cross, l, BT, s->dim);
    cross_block_backward(s, w, g, a, l, dy, encoder_acts_cross(a, a->xln_out, l), B, T);
    layernorm_backward(dx, g->lnx_w, g->lnx_b, a->d_ln, encoder_acts_cross(a, a->xln_in, l),
                       encoder_acts_cross(a, a->xln_mean, l), encoder_acts_cross(a, a->xln_rstd, l),
                       w->lnx_w, BT, s->dim);
}

/* Post-LN x2 = LNx(x1 + drop(Cross(x1))): from dres (wrt x2) to dres wrt x1; dx is scratch. */
static void cross_post_norm_backward(const encoder_shape *s, const encoder_layer *w,
                                     const encoder_layer *g, encoder_acts *a, int l, float *dres,
                                     float *dx, int B, int T) {
    const int BT = B * T;
    const size_t n = (size_t)BT * s->dim;
    memset(dx, 0, n * sizeof *dx);
    layernorm_backward(dx, g->lnx_w, g->lnx_b, dres, encoder_acts_cross(a, a->xln_in, l),
                       encoder_acts_cross(a, a->xln_mean, l), encoder_acts_cross(a, a->xln_rstd, l),
                       w->lnx_w, BT, s->dim); /* dx: wrt the sum x1 + drop(Cross(x1)) */
    const float *dy = branch_backward(a, dx, NULL, NULL, NULL, a->keep_cross, l, BT, s->dim);
    cross_block_backward(s, w, g, a, l, dy, encoder_acts_cross(a, a->x_in, l), B, T);
    vector_add(dres, dx, a->d_ln, n);
}

/* x_mid = x + ls1 ⊙ drop(Attn(LN1(x))); x_out = x_mid + ls2 ⊙ drop(MLP(LN2(x_mid))) (no ls: 1).
 * The residual paths carry dx straight through; each LayerNorm backward adds its branch's share
 * into dx. */
static void pre_norm_layer_backward(const encoder_shape *s, const encoder_layer *w,
                                    const encoder_layer *g, encoder_acts *a, int l, float *dx,
                                    int B, int T) {
    const int D = s->dim, BT = B * T;
    const float *dy = branch_backward(a, dx, w->ls2, g->ls2, a->mlp_out, a->keep_mlp, l, BT, D);
    mlp_block_backward(s, w, g, a, l, dy, encoder_acts_layer(a, a->ln2_out, l), BT);
    layernorm_backward(dx, g->ln2_w, g->ln2_b, a->d_ln, encoder_acts_layer(a, a->mid, l),
                       encoder_acts_layer(a, a->ln2_mean, l), encoder_acts_layer(a, a->ln2_rstd, l),
                       w->ln2_w, BT, D);
    if (s->cross) cross_pre_norm_backward(s, w, g, a, l, dx, B, T);
    dy = branch_backward(a, dx, w->ls1, g->ls1, a->attn_out, a->keep_attn, l, BT, D);
    attention_block_backward(s, w, g, a, l, dy, encoder_acts_layer(a, a->ln1_out, l), B, T);
    layernorm_backward(dx, g->ln1_w, g->ln1_b, a->d_ln, encoder_acts_layer(a, a->layer_in, l),
                       encoder_acts_layer(a, a->ln1_mean, l), encoder_acts_layer(a, a->ln1_rstd, l),
                       w->ln1_w, BT, D);
}

/* mid = x + ls1 ⊙ drop(Attn(x)); x1 = LN1(mid); sum2 = x1 + ls2 ⊙ drop(MLP(x1)); x_out =
 * LN2(sum2). A decoder has x2 = LNx(x1 + drop(Cross(x1))) in place of x1 from the MLP on. */
static void post_norm_layer_backward(const encoder_shape *s, const encoder_layer *w,
                                     const encoder_layer *g, encoder_acts *a, int l, float *dx,
                                     int B, int T) {
    const int D = s->dim, BT = B * T;
    const size_t n = (size_t)BT * D;
    float *dres = a->d_res;
    memset(dres, 0, n * sizeof *dres);
    layernorm_backward(dres, g->ln2_w, g->ln2_b, dx, encoder_acts_layer(a, a->sum2, l),
                       encoder_acts_layer(a, a->ln2_mean, l), encoder_acts_layer(a, a->ln2_rstd, l),
                       w->ln2_w, BT, D);
    const float *dy = branch_backward(a, dres, w->ls2, g->ls2, a->mlp_out, a->keep_mlp, l, BT, D);
    mlp_block_backward(s, w, g, a, l, dy, encoder_acts_layer(a, a->ln1_out, l), BT);
    vector_add(dres, dres, a->d_ln, n); /* dres: gradient wrt x1 (with cross-attention, x2) */
    if (s->cross) cross_post_norm_backward(s, w, g, a, l, dres, dx, B, T);
    memset(dx, 0, n * sizeof *dx);
    layernorm_backward(dx, g->ln1_w, g->ln1_b, dres, encoder_acts_layer(a, a->mid, l),
                       encoder_acts_layer(a, a->ln1_mean, l), encoder_acts_layer(a, a->ln1_rstd, l),
                       w->ln1_w, BT, D);
    dy = branch_backward(a, dx, w->ls1, g->ls1, a->attn_out, a->keep_attn, l, BT, D);
    attention_block_backward(s, w, g, a, l, dy, encoder_acts_layer(a, a->layer_in, l), B, T);
    vector_add(dx, dx, a->d_ln, n);
}

void encoder_backward(const encoder_shape *s, const encoder_layer *layers,
                      const encoder_layer *grads, encoder_acts *a, float *dx, int B, int T) {
    if (s->cross && a->d_cross_states) /* every layer adds its share */
        memset(a->d_cross_states, 0,
               sizeof(float) * (size_t)a->images * a->cross_run * (size_t)s->cross_dim);
    for (int l = s->layers - 1; l >= 0; l--) {
        if (s->post_norm)
            post_norm_layer_backward(s, &layers[l], &grads[l], a, l, dx, B, T);
        else
            pre_norm_layer_backward(s, &layers[l], &grads[l], a, l, dx, B, T);
    }
}
