/* Finite-difference checks of every backward pass: ops one by one, the encoder alone (post-LN
 * with a padding mask; pre-LN causal; both with dropout), and a whole small ViT through
 * the ViT forward/backward (vit_model.h), every element of every parameter tensor.
 *
 * Numeric gradient: the five-point stencil (8·(L(θ+h) - L(θ-h)) - (L(θ+2h) - L(θ-2h))) / 12h,
 * truncation error h⁴/30·f⁽⁵⁾. Its other error is float32 noise: the code under test is float32,
 * and an O(1) loss comes out with ~1e-6 of rounding that changes from one evaluation to the next,
 * which the stencil turns into 18/(12h)·1e-6 (~1e-4 at h = 1e-2) of absolute error. Scalar losses
 * are accumulated in double (Σ w·out with fixed random w, or the cross-entropy recomputed in double
 * from the logits), so the reduction adds nothing to it. No single h suits every element: most
 * agree to 1e-4 at h = 2e-2, a few sit where the loss curves sharply (a LayerNorm over a row of
 * small variance) and need h = 5e-3, a few have tiny gradients and need the noise cut by
 * h = 5e-2 (we saw both: the numeric value moved off the analytic one as h grew, or scattered
 * around it as h shrank). check_tensor therefore tries h = 2e-2, then 5e-2 and 5e-3 for elements
 * that disagree, keeping the best: a correct gradient agrees at some step, a wrong one at none
 * (16 mutations we tried, from a dropped factor to a lost row of a tile, each fail some check
 * here by 0.25..1).
 *
 * Error per element: |a - n| / max(|a| + |n|, FLOOR), i.e. relative for gradients above
 * FLOOR = 1e-2 and absolute, 1e-4, below it (elements whose true gradient is 0, like the key bias,
 * measure ~1e-5). REL_TOL = 1e-2: the worst we measure over 16 seeds is 3e-3. The largest gradient
 * of every tensor is 1e-2..16 (printed as max |g|), so each tensor is checked to 1% on its large
 * elements (but the key bias, whose true gradient is 0: softmax ignores a shift shared by all
 * scores). */
#include "tests/testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "patch/patch.h"
#include "vit/model/config.h"
#include "vit/core/encoder.h"
#include "vit/model/params.h"
#include "vit/core/ops.h"
#include "vit/model/vit_model.h"
#include "vit/io/model_dir.h"
#include "vit/train/optim.h"

#define REL_TOL GRADCHECK_TOL

/* Σ w·x in double: the scalar loss of the op checks (its gradient wrt x is w). */
static double dot(const float *w, const float *x, size_t n) {
    double s = 0.0;
    for (size_t i = 0; i < n; i++) s += (double)w[i] * x[i];
    return s;
}

typedef gradcheck_loss loss_fn;

static double last_max_grad; /* largest |analytic| of the last check_tensor, for the report */

/* Max error of grad against numeric gradients of loss wrt x (testutil.h: gradcheck_tensor). */
static double check_tensor(float *x, const float *grad, size_t n, loss_fn loss, void *ctx) {
    return gradcheck_tensor(x, grad, n, loss, ctx, &last_max_grad);
}

static void expect_close(const char *what, double err) {
    print_message("  %-54s max rel err %.2e  (max |g| %.2e)\n", what, err, last_max_grad);
    if (!(err <= REL_TOL)) fail_msg("%s: max relative error %.3g above %g", what, err, REL_TOL);
}

/* ---- linear ---- */

typedef struct {
    int N, IN, OUT;
    float *inp, *w, *b, *out, *wout;
} linear_case;

static double linear_loss(void *p) {
    linear_case *c = p;
    linear_forward(c->out, c->inp, c->w, c->b, c->N, c->IN, c->OUT);
    return dot(c->wout, c->out, (size_t)c->N * c->OUT);
}

static void test_linear(void **state) {
    (void)state;
    linear_case c = {.N = 5, .IN = 4, .OUT = 3};
    c.inp = test_alloc_floats(20), c.w = test_alloc_floats(12), c.b = test_alloc_floats(3);
    c.out = test_alloc_floats(15), c.wout = test_alloc_floats(15);
    test_fill(c.inp, 20, -1, 1), test_fill(c.w, 12, -1, 1), test_fill(c.b, 3, -1, 1),
        test_fill(c.wout, 15, -1, 1);
    float *dinp = test_alloc_floats(20), *dw = test_alloc_floats(12), *db = test_alloc_floats(3);
    linear_backward(dinp, dw, db, c.wout, c.inp, c.w, c.N, c.IN, c.OUT);
    expect_close("linear dinp", check_tensor(c.inp, dinp, 20, linear_loss, &c));
    expect_close("linear dweight", check_tensor(c.w, dw, 12, linear_loss, &c));
    expect_close("linear dbias", check_tensor(c.b, db, 3, linear_loss, &c));
    free(c.inp), free(c.w), free(c.b), free(c.out), free(c.wout), free(dinp), free(dw), free(db);
}

/* ---- layernorm ---- */

typedef struct {
    int N, D;
    float *inp, *w, *b, *out, *mean, *rstd, *wout;
} ln_case;

static double ln_loss(void *p) {
    ln_case *c = p;
    layernorm_forward(c->out, c->mean, c->rstd, c->inp, c->w, c->b, c->N, c->D, 1e-5f);
    return dot(c->wout, c->out, (size_t)c->N * c->D);
}

static void test_layernorm(void **state) {
    (void)state;
    ln_case c = {.N = 4, .D = 6};
    const size_t n = 24;
    c.inp = test_alloc_floats(n), c.w = test_alloc_floats(6), c.b = test_alloc_floats(6),
    c.out = test_alloc_floats(n);
    c.mean = test_alloc_floats(4), c.rstd = test_alloc_floats(4), c.wout = test_alloc_floats(n);
    test_fill(c.inp, n, -2, 2), test_fill(c.w, 6, 0.5f, 1.5f), test_fill(c.b, 6, -1, 1),
        test_fill(c.wout, n, -1, 1);
    float *dinp = test_alloc_floats(n), *dw = test_alloc_floats(6), *db = test_alloc_floats(6);
    ln_loss(&c);
    layernorm_backward(dinp, dw, db, c.wout, c.inp, c.mean, c.rstd, c.w, c.N, c.D);
    expect_close("layernorm dinp", check_tensor(c.inp, dinp, n, ln_loss, &c));
    expect_close("layernorm dw", check_tensor(c.w, dw, 6, ln_loss, &c));
    expect_close("layernorm db", check_tensor(c.b, db, 6, ln_loss, &c));
    free(c.inp), free(c.w), free(c.b), free(c.out), free(c.mean), free(c.rstd), free(c.wout);
    free(dinp), free(dw), free(db);
}

/* ---- activations ---- */

typedef struct {
    activation_kind act;
    float *x, *y, *w;
    size_t n;
} act_case;

static double act_loss(void *p) {
    act_case *c = p;
    activation_forward(c->y, c->x, c->n, c->act);
    return dot(c->w, c->y, c->n);
}

static void test_activations(void **state) {
    (void)state;
    /* points spread over [-3, 3], none within 2h = 0.1 of ReLU's kink at 0 */
    float x[] = {-3.0f, -2.1f, -1.3f, -0.7f, -0.31f, 0.23f, 0.6f, 1.1f, 1.9f, 2.7f};
    const size_t n = sizeof x / sizeof x[0];
    float y[10], w[10], d[10];
    test_fill(w, n, -1, 1);
    const activation_kind kinds[] = {ACT_GELU, ACT_GELU_TANH, ACT_RELU};
    const char *names[] = {"gelu (erf) backward", "gelu (tanh) backward", "relu backward"};
    for (int k = 0; k < 3; k++) {
        act_case c = {.act = kinds[k], .x = x, .y = y, .w = w, .n = n};
        activation_backward(d, w, x, n, kinds[k]);
        expect_close(names[k], check_tensor(x, d, n, act_loss, &c));
    }
}

/* SwiGLU: silu(u₁)·u₂ over rows of [2h], and the layer scale (inp ⊙ scale per row). */
typedef struct {
    int rows, h;
    float *u, *y, *w, *scale;
} gated_case;

static double swiglu_loss(void *p) {
    gated_case *c = p;
    swiglu_forward(c->y, c->u, c->rows, c->h);
    return dot(c->w, c->y, (size_t)c->rows * c->h);
}

static double scale_loss(void *p) {
    gated_case *c = p;
    layer_scale_forward(c->y, c->u, c->scale, c->rows, c->h);
    return dot(c->w, c->y, (size_t)c->rows * c->h);
}

static void test_swiglu_and_layer_scale(void **state) {
    (void)state;
    enum { R = 3, HH = 5, D = 7 };
    float u[R * 2 * HH], y[R * 2 * HH], w[R * 2 * HH], du[R * 2 * HH];
    test_fill(u, R * 2 * HH, -3, 3), test_fill(w, R * 2 * HH, -1, 1);
    gated_case c = {.rows = R, .h = HH, .u = u, .y = y, .w = w};
    swiglu_backward(du, w, u, R, HH);
    expect_close("swiglu backward", check_tensor(u, du, R * 2 * HH, swiglu_loss, &c));
    /* the layer scale of rows of D, with dscale accumulated onto a nonzero start */
    float x[R * D], dx[R * D], scale[D], dscale[D];
    test_fill(x, R * D, -2, 2), test_fill(scale, D, -1.5f, 1.5f);
    for (int d = 0; d < D; d++) dscale[d] = 0.25f;
    gated_case s = {.rows = R, .h = D, .u = x, .y = y, .w = w, .scale = scale};
    layer_scale_backward(dx, dscale, w, x, scale, R, D);
    for (int d = 0; d < D; d++) dscale[d] -= 0.25f;
    expect_close("layer scale dinp", check_tensor(x, dx, R * D, scale_loss, &s));
    expect_close("layer scale dscale", check_tensor(scale, dscale, D, scale_loss, &s));
}

/* ---- attention ---- */

typedef struct {
    int B, T, D, H, causal;
    const uint8_t *key_mask, *keep;
    float p;
    float *qkv, *out, *probs, *dropped, *wout, *bias;
} attn_case;

static double attn_loss(void *p) {
    attn_case *c = p;
    if (c->keep)
        attention_forward_dropout(c->out, c->probs, c->dropped, c->qkv, c->key_mask, c->bias,
                                  c->causal, c->keep, c->p, c->B, c->T, c->D, c->H);
    else
        attention_forward(c->out, c->probs, c->qkv, c->key_mask, c->bias, c->causal, c->B, c->T,
                          c->D, c->H);
    return dot(c->wout, c->out, (size_t)c->B * c->T * c->D);
}

/* B = 2 sequences of T tokens, D = H·dh. dh = 3 runs the plain-loop kernels, dh a multiple of 8
 * the register-tiled ones (T = 7 then leaves partial tiles of rows and columns). biased: a score
 * bias [H, T, T] (BEiT's relative positions), whose gradient is checked too. */
static void check_attention_biased(const char *what, int T, int D, int H, int causal, int masked,
                                   int dropout, int biased) {
    enum { B = 2, MAX_T = 66 };
    assert_true(T <= MAX_T);
    /* batch 1 pads its last two tokens; batch 0 has none */
    uint8_t key_mask[B * MAX_T];
    for (int i = 0; i < B * T; i++) key_mask[i] = i < 2 * T - 2;
    static uint8_t keep[B * 4 * MAX_T * MAX_T];
    uint64_t rng = 99;
    dropout_mask(keep, (size_t)B * H * T * T, 0.3f, &rng);
    attn_case c = {.B = B,
                   .T = T,
                   .D = D,
                   .H = H,
                   .causal = causal,
                   .key_mask = masked ? key_mask : NULL,
                   .keep = dropout ? keep : NULL,
                   .p = 0.3f};
    const size_t nqkv = (size_t)B * T * 3 * D, nout = (size_t)B * T * D, np = (size_t)B * H * T * T;
    c.qkv = test_alloc_floats(nqkv), c.out = test_alloc_floats(nout),
    c.probs = test_alloc_floats(np);
    c.dropped = test_alloc_floats(np), c.wout = test_alloc_floats(nout);
    test_fill(c.qkv, nqkv, -1.5f, 1.5f), test_fill(c.wout, nout, -1, 1);
    const size_t nb = (size_t)H * T * T;
    float *dbias = biased ? test_alloc_floats(nb) : NULL;
    if (biased) {
        c.bias = test_alloc_floats(nb);
        test_fill(c.bias, nb, -1.5f, 1.5f);
        for (size_t i = 0; i < nb; i++) dbias[i] = 0.5f; /* accumulated into: this offset stays */
    }
    float *dqkv = test_alloc_floats(nqkv), *dprobs = test_alloc_floats(np);
    attn_loss(&c);
    attention_backward(dqkv, dprobs, NULL, dbias, c.wout, c.qkv, c.probs, c.keep, c.p, B, T, D, H);
    expect_close(what, check_tensor(c.qkv, dqkv, nqkv, attn_loss, &c));
    if (biased) {
        for (size_t i = 0; i < nb; i++) dbias[i] -= 0.5f;
        expect_close("  and its dbias", check_tensor(c.bias, dbias, nb, attn_loss, &c));
        free(c.bias), free(dbias);
    }
    if (masked) /* padding keys get no gradient in K and V */
        for (int t = T - 2; t < T; t++)
            for (int j = D; j < 3 * D; j++) assert_true(dqkv[((size_t)T + t) * 3 * D + j] == 0.0f);
    free(c.qkv), free(c.out), free(c.probs), free(c.dropped), free(c.wout), free(dqkv),
        free(dprobs);
}

static void check_attention(const char *what, int T, int D, int H, int causal, int masked,
                            int dropout) {
    check_attention_biased(what, T, D, H, causal, masked, dropout, 0);
}

static void test_attention(void **state) {
    (void)state;
    check_attention_biased("attention dqkv, score bias", 5, 6, 2, 0, 0, 0, 1);
    check_attention_biased("attention dqkv, score bias, padding + causal + dropout", 7, 32, 2, 1, 1,
                           1, 1);
    check_attention_biased("attention dqkv, score bias, dh 16, T 8, padding", 8, 64, 4, 0, 1, 0, 1);
    check_attention("attention dqkv", 5, 6, 2, 0, 0, 0);
    check_attention("attention dqkv, causal", 5, 6, 2, 1, 0, 0);
    check_attention("attention dqkv, key padding mask", 5, 6, 2, 0, 1, 0);
    check_attention("attention dqkv, padding + causal + weight dropout", 5, 6, 2, 1, 1, 1);
    check_attention("attention dqkv, dh 8 (tiled)", 7, 24, 3, 0, 0, 0);
    check_attention("attention dqkv, dh 16 (tiled), padding + causal + dropout", 7, 32, 2, 1, 1, 1);
    check_attention("attention dqkv, dh 16 (tiled), T 8, padding", 8, 64, 4, 0, 1, 0);
    /* from T 64 on the backward's products go through oneDNN's sgemm (where built) */
    check_attention("attention dqkv, T 66 (by sgemm), padding + causal + dropout", 66, 16, 2, 1, 1,
                    1);
    check_attention_biased("attention dqkv, T 65 (by sgemm), score bias, padding", 65, 6, 2, 0, 1,
                           0, 1);
}

/* ---- cross-entropy with label smoothing ---- */

typedef struct {
    int B, L;
    const int *labels;
    float eps;
    float *logits, *probs;
} ce_case;

static double ce_loss(void *p) {
    ce_case *c = p;
    return crossentropy_forward(c->probs, c->logits, c->labels, c->B, c->L, c->eps);
}

static void test_crossentropy(void **state) {
    (void)state;
    const int labels[] = {2, 0, 3};
    float logits[12], probs[12], d[12];
    test_fill(logits, 12, -3, 3);
    for (int s = 0; s < 2; s++) {
        ce_case c = {.B = 3,
                     .L = 4,
                     .labels = labels,
                     .eps = s ? 0.1f : 0.0f,
                     .logits = logits,
                     .probs = probs};
        ce_loss(&c);
        crossentropy_backward(d, probs, labels, 3, 4, c.eps, 1.0f);
        expect_close(s ? "cross-entropy dlogits, smoothing 0.1" : "cross-entropy dlogits",
                     check_tensor(logits, d, 12, ce_loss, &c));
    }
}

/* ---- patch embedding ---- */

typedef struct {
    int B, N, K, D, S;
    float *patches, *w, *b, *cls, *pos, *x, *scratch, *wx; /* cls: the S special tokens */
} patch_case;

/* The patch embedding as the ViT runs it: a linear layer on the patches, then the tokens. */
static double patch_loss(void *p) {
    patch_case *c = p;
    linear_forward(c->scratch, c->patches, c->w, c->b, c->B * c->N, c->K, c->D);
    patch_tokens_forward(c->x, c->scratch, c->cls, c->S, c->pos, c->B, c->N, c->D);
    return dot(c->wx, c->x, (size_t)c->B * (c->S + c->N) * c->D);
}

/* S special tokens before the patches: ViT's CLS (1), DeiT's CLS and distillation token (2). */
static void check_patch_embed(int S) {
    enum { B = 2, C = 2, SZ = 4, P = 2, N = 4, K = C * P * P, D = 3 };
    const int T = S + N;
    float pixels[B * C * SZ * SZ];
    test_fill(pixels, sizeof pixels / sizeof *pixels, -1, 1);
    patch_case c = {.B = B, .N = N, .K = K, .D = D, .S = S};
    c.patches = test_alloc_floats(B * N * K), c.w = test_alloc_floats(D * K),
    c.b = test_alloc_floats(D);
    c.cls = test_alloc_floats(S * D), c.pos = test_alloc_floats(T * D),
    c.x = test_alloc_floats(B * T * D);
    c.scratch = test_alloc_floats(B * N * D), c.wx = test_alloc_floats(B * T * D);
    patch_extract(c.patches, pixels, B, C, SZ, SZ, P);
    test_fill(c.w, D * K, -1, 1), test_fill(c.b, D, -1, 1), test_fill(c.cls, S * D, -1, 1),
        test_fill(c.pos, T * D, -1, 1);
    test_fill(c.wx, B * T * D, -1, 1);
    float *dw = test_alloc_floats(D * K), *db = test_alloc_floats(D),
          *dcls = test_alloc_floats(S * D), *dpos = test_alloc_floats(T * D);
    patch_loss(&c);
    patch_tokens_backward(c.scratch, dcls, S, dpos, c.wx, B, N, D);
    linear_backward(NULL, dw, db, c.scratch, c.patches, NULL, B * N, K, D);
    print_message(" %d special token%s\n", S, S > 1 ? "s" : "");
    expect_close("patch embed dweight", check_tensor(c.w, dw, D * K, patch_loss, &c));
    expect_close("patch embed dbias", check_tensor(c.b, db, D, patch_loss, &c));
    expect_close("patch embed dspecial", check_tensor(c.cls, dcls, S * D, patch_loss, &c));
    expect_close("patch embed dpos", check_tensor(c.pos, dpos, T * D, patch_loss, &c));
    free(c.patches), free(c.w), free(c.b), free(c.cls), free(c.pos), free(c.x), free(c.scratch),
        free(c.wx);
    free(dw), free(db), free(dcls), free(dpos);
}

static void test_patch_embed(void **state) {
    (void)state;
    check_patch_embed(1);
    check_patch_embed(2);
}

/* ---- the encoder alone: post-LN (BERT) with a padding mask, pre-LN causal ---- */

typedef struct {
    encoder_shape s;
    encoder_layer *w;
    encoder_tape tape;
    const uint8_t *mask;
    int B, T;
    float hidden_drop, attn_drop;
    float *x0, *x, *wout;
} enc_case;

static double enc_loss(void *p) {
    enc_case *c = p;
    const size_t n = (size_t)c->B * c->T * c->s.dim;
    uint64_t rng = 7; /* the same dropout masks on every evaluation */
    const encoder_run run = {.mode = ENCODER_TRAIN,
                             .hidden_drop = c->hidden_drop,
                             .attn_drop = c->attn_drop,
                             .rng = &rng};
    memcpy(c->x, c->x0, n * sizeof(float));
    assert_int_equal(encoder_forward(&c->s, c->w, &run, NULL, &c->tape, c->x, c->mask, c->B, c->T),
                     0);
    return dot(c->wout, c->x, n);
}

/* Lays out one layer's 12 tensors in block (advancing *off); returns the layer. */
static encoder_layer layout_layer(float *block, size_t *off, int D, int I) {
    size_t sizes[] = {(size_t)D,     (size_t)D, 3 * (size_t)D * D, 3 * (size_t)D,
                      (size_t)D * D, (size_t)D, (size_t)D,         (size_t)D,
                      (size_t)I * D, (size_t)I, (size_t)D * I,     (size_t)D};
    float *p[12];
    for (int i = 0; i < 12; i++) {
        p[i] = block + *off;
        *off += sizes[i];
    }
    return (encoder_layer){.ln1_w = p[0],
                           .ln1_b = p[1],
                           .qkv_w = p[2],
                           .qkv_b = p[3],
                           .proj_w = p[4],
                           .proj_b = p[5],
                           .ln2_w = p[6],
                           .ln2_b = p[7],
                           .fc1_w = p[8],
                           .fc1_b = p[9],
                           .fc2_w = p[10],
                           .fc2_b = p[11]}; /* not prepared for inference: no gemm_weights */
}

static void check_encoder(const char *what, int post_norm, int causal, int masked,
                          activation_kind act, float drop) {
    enum { L = 2, B = 2, T = 5, D = 8, H = 2, I = 16 };
    static const uint8_t mask[B * T] = {1, 1, 1, 1, 1, 1, 1, 1, 0, 0};
    const size_t per_layer = 6 * D + 3 * D * D + 3 * D + D * D + 2 * I * D + I;
    float *params = test_alloc_floats(per_layer * L), *grads = test_alloc_floats(per_layer * L);
    encoder_layer w[L], g[L];
    size_t off = 0, goff = 0;
    for (int l = 0; l < L; l++) {
        w[l] = layout_layer(params, &off, D, I);
        g[l] = layout_layer(grads, &goff, D, I);
    }
    test_fill(params, per_layer * L, -0.3f, 0.3f);
    for (int l = 0; l < L; l++) /* LayerNorm weights near 1 */
        for (int i = 0; i < D; i++) w[l].ln1_w[i] += 1.0f, w[l].ln2_w[i] += 1.0f;
    enc_case c = {.s = {.layers = L,
                        .dim = D,
                        .heads = H,
                        .mlp_dim = I,
                        .act = act,
                        .eps = 1e-12f,
                        .post_norm = post_norm,
                        .causal = causal},
                  .w = w,
                  .mask = masked ? mask : NULL,
                  .B = B,
                  .T = T,
                  .hidden_drop = drop,
                  .attn_drop = drop};
    assert_int_equal(encoder_tape_alloc(&c.tape, &c.s, B, T), 0);
    const size_t n = (size_t)B * T * D;
    c.x0 = test_alloc_floats(n), c.x = test_alloc_floats(n), c.wout = test_alloc_floats(n);
    test_fill(c.x0, n, -1, 1), test_fill(c.wout, n, -1, 1);
    float *dx = test_alloc_floats(n);
    enc_loss(&c);
    memcpy(dx, c.wout, n * sizeof(float));
    const encoder_run run = {.mode = ENCODER_TRAIN, .hidden_drop = drop, .attn_drop = drop};
    encoder_backward(&c.s, w, g, &run, &c.tape, dx, B, T);
    static const char *names[] = {"ln1_w", "ln1_b", "qkv_w", "qkv_b", "proj_w", "proj_b",
                                  "ln2_w", "ln2_b", "fc1_w", "fc1_b", "fc2_w",  "fc2_b"};
    print_message(" %s\n", what);
    char label[96];
    for (int l = 0; l < L; l++) {
        float *wp[] = {w[l].ln1_w, w[l].ln1_b, w[l].qkv_w, w[l].qkv_b, w[l].proj_w, w[l].proj_b,
                       w[l].ln2_w, w[l].ln2_b, w[l].fc1_w, w[l].fc1_b, w[l].fc2_w,  w[l].fc2_b};
        float *gp[] = {g[l].ln1_w, g[l].ln1_b, g[l].qkv_w, g[l].qkv_b, g[l].proj_w, g[l].proj_b,
                       g[l].ln2_w, g[l].ln2_b, g[l].fc1_w, g[l].fc1_b, g[l].fc2_w,  g[l].fc2_b};
        for (int i = 0; i < 12; i++) {
            size_t numel =
                (size_t)((i + 1 < 12 ? wp[i + 1] : params + per_layer * (l + 1)) - wp[i]);
            snprintf(label, sizeof label, "layer %d %s", l, names[i]);
            expect_close(label, check_tensor(wp[i], gp[i], numel, enc_loss, &c));
        }
    }
    expect_close("input dx", check_tensor(c.x0, dx, n, enc_loss, &c));
    encoder_tape_free(&c.tape);
    free(params), free(grads), free(c.x0), free(c.x), free(c.wout), free(dx);
}

static void test_encoder_post_norm_masked(void **state) {
    (void)state;
    check_encoder("post-LN (BERT) encoder, key padding mask, gelu_tanh", 1, 0, 1, ACT_GELU_TANH,
                  0.0f);
}

static void test_encoder_pre_norm_causal_dropout(void **state) {
    (void)state;
    check_encoder("pre-LN encoder, causal + padding, dropout 0.2 (fixed masks)", 0, 1, 1, ACT_GELU,
                  0.2f);
    check_encoder("post-LN encoder, padding, dropout 0.2 (fixed masks)", 1, 0, 1, ACT_GELU, 0.2f);
}

/* ---- a whole small ViT: the training forward, cross-entropy, the backward ---- */

static const char *tiny_vit_json =
    "{\"model_type\": \"%s\", \"image_size\": %s, \"patch_size\": 4, \"num_channels\": 3,"
    " \"hidden_size\": 8, \"num_hidden_layers\": 2, \"num_attention_heads\": 2,"
    " \"intermediate_size\": 16, \"num_labels\": 3, \"layer_norm_eps\": 1e-12, \"qkv_bias\": %s}";

enum { VB = 3 }; /* batch of the ViT checks */

typedef struct {
    model m;
    vit_acts a;
    model g;      /* the gradients: m's layout on grads */
    float *grads; /* accumulate over steps until zeroed */
    float logits[VB * 3], probs[VB * 3], dlogits[VB * 3];
    float pixels[VB * 3 * 8 * 12]; /* 8x8, or 8x12 for the non-square case */
    int labels[VB];
    float smoothing, p_drop, attn_drop;
    int freeze;
    const char *image_size; /* config.json's image_size; NULL: 8 */
} vit_case;

/* type: "vit", or "deit" (a DeiTForImageClassification: the distillation token reaches the loss
 * through attention only). */
static void vit_case_init_type(vit_case *c, int qkv_bias, const char *type) {
    char json[512];
    snprintf(json, sizeof json, tiny_vit_json, type, c->image_size ? c->image_size : "8",
             qkv_bias ? "true" : "false");
    model_config cfg;
    vit_error err = {0};
    if (model_config_parse(json, "tiny", &cfg, &err) != 0) fail_msg("%s", err.msg);
    if (model_create(&c->m, &cfg, &err) != 0) fail_msg("%s", err.msg);
    for (int i = 0; i < c->m.num_entries; i++) {
        const param_entry *e = &c->m.entries[i];
        if (e->absent) continue;
        /* LayerNorm weights near 1, everything else O(0.5): activations of O(1) at every stage */
        int ln_weight = strstr(e->name, "layernorm") && strstr(e->name, "weight");
        test_fill(c->m.params + e->offset, e->numel, ln_weight ? 0.7f : -0.5f,
                  ln_weight ? 1.3f : 0.5f);
    }
    test_fill(c->pixels, sizeof c->pixels / sizeof *c->pixels, -1, 1);
    for (int b = 0; b < VB; b++) c->labels[b] = (b * 2 + 1) % 3;
    c->grads = test_alloc_floats(c->m.num_params);
    if (model_bind(&c->g, &c->m, c->grads) != 0 ||
        vit_acts_alloc(&c->a, &c->m, VB, 0, 1, &err) != 0)
        fail_msg("%s", err.msg);
}

static void vit_case_init(vit_case *c, int qkv_bias) {
    vit_case_init_type(c, qkv_bias, "vit");
}

static void vit_case_free(vit_case *c) {
    vit_acts_free(&c->a);
    model_unbind(&c->g);
    free(c->grads);
    model_free(&c->m);
}

static void zero_grads(vit_case *c) {
    memset(c->grads, 0, c->m.num_params * sizeof(float));
}

/* A training step without the update, as the trainer runs it (vit/train/step.c): the forward in
 * training mode, cross-entropy, the backward; gradients accumulate. */
static int step(vit_case *c, int nb, float p_drop, uint64_t *rng, float *loss, vit_error *err) {
    const forward_mode mode = {.train = 1,
                               .freeze_encoder = c->freeze,
                               .dropout = p_drop,
                               .attention_dropout = c->attn_drop,
                               .rng = rng};
    if (vit_model_forward(&c->m, &c->a, c->pixels, nb, &mode, c->logits, err) != 0) return -1;
    *loss = (float)crossentropy_forward(c->probs, c->logits, c->labels, nb, 3, c->smoothing);
    crossentropy_backward(c->dlogits, c->probs, c->labels, nb, 3, c->smoothing, 1.0f);
    vit_model_backward(&c->m, &c->g, &c->a, c->dlogits);
    return 0;
}

/* One step; the loss recomputed in double from the step's logits. */
static double vit_loss(void *p) {
    vit_case *c = p;
    vit_error err = {0};
    uint64_t rng = 2024; /* same masks every evaluation */
    float loss;
    if (step(c, VB, c->p_drop, &rng, &loss, &err) != 0) fail_msg("%s", err.msg);
    float probs[VB * 3];
    return crossentropy_forward(probs, c->logits, c->labels, VB, 3, c->smoothing);
}

/* Analytic gradients of one step, then every element of every parameter tensor by differences. */
static void check_vit(vit_case *c, const char *what) {
    const model *m = &c->m;
    float *analytic = test_alloc_floats(m->num_params);
    zero_grads(c);
    vit_loss(c);
    memcpy(analytic, c->grads, m->num_params * sizeof(float));
    print_message(" %s\n", what);
    for (int i = 0; i < m->num_entries; i++) {
        const param_entry *e = &m->entries[i];
        if (e->absent) continue;
        /* every live tensor must matter to the loss (one nothing reads would pass as 0 vs 0) */
        double norm = 0.0;
        for (size_t j = 0; j < e->numel; j++) norm += fabs(analytic[e->offset + j]);
        if (!(norm > 0.0)) fail_msg("%s: zero gradient", e->name);
        double err =
            check_tensor(m->params + e->offset, analytic + e->offset, e->numel, vit_loss, c);
        char label[128];
        snprintf(label, sizeof label, "%s (%zu)", e->name, e->numel);
        expect_close(label, err);
    }
    free(analytic);
}

static void test_vit_whole_model(void **state) {
    (void)state;
    vit_case c = {.smoothing = 0.1f, .p_drop = 0.0f};
    vit_case_init(&c, 1);
    check_vit(&c, "ViT 8x8/4, hidden 8, 2 layers, 2 heads, smoothing 0.1, no dropout");
    vit_case_free(&c);
}

/* A non-square input (a text line's shape): the 2x3 grid's own positions. */
static void test_vit_non_square(void **state) {
    (void)state;
    vit_case c = {.smoothing = 0.1f, .image_size = "[8, 12]"};
    vit_case_init(&c, 1);
    assert_int_equal(c.a.tokens, 1 + 2 * 3);
    check_vit(&c, "ViT 8x12/4 (a 2x3 grid), hidden 8, 2 layers, 2 heads");
    vit_case_free(&c);
}

/* Sides that are not multiples of the patch (9x10 with patch 4): the 2x2 grid's patches from the
 * top-left 8x8 pixels, the rest left out, as the patch convolution leaves them out. */
static void test_vit_remainder(void **state) {
    (void)state;
    vit_case c = {.smoothing = 0.1f, .image_size = "[9, 10]"};
    vit_case_init(&c, 1);
    assert_int_equal(c.a.tokens, 1 + 2 * 2);
    check_vit(&c, "ViT 9x10/4 (a 2x2 grid, 1 row and 2 columns left out), hidden 8, 2 layers");
    vit_case_free(&c);
}

static void test_vit_whole_model_dropout(void **state) {
    (void)state;
    vit_case c = {.smoothing = 0.0f, .p_drop = 0.2f};
    vit_case_init(&c, 1);
    c.attn_drop = 0.2f;
    check_vit(&c, "ViT, hidden + attention dropout 0.2 (fixed seed)");
    vit_case_free(&c);
}

static void test_deit_whole_model(void **state) {
    (void)state;
    vit_case c = {.smoothing = 0.1f, .p_drop = 0.1f};
    vit_case_init_type(&c, 1, "deit");
    assert_non_null(model_find_param(&c.m, "embeddings.distillation_token"));
    check_vit(&c, "DeiTForImageClassification 8x8/4 (CLS, distillation token), dropout 0.1");
    vit_case_free(&c);
}

/* A DeiT with teacher is inference-only (HF's has no loss): no training buffers for it. */
static void test_deit_teacher_not_trained(void **state) {
    (void)state;
    char json[600];
    snprintf(json, sizeof json, tiny_vit_json, "deit", "8", "true");
    strcpy(json + strlen(json) - 1,
           ", \"architectures\": [\"DeiTForImageClassificationWithTeacher\"]}");
    model_config cfg;
    model m;
    vit_acts a;
    vit_error err = {0};
    if (model_config_parse(json, "tiny", &cfg, &err) != 0 || model_create(&m, &cfg, &err) != 0)
        fail_msg("%s", err.msg);
    assert_int_equal(vit_acts_alloc(&a, &m, 2, 0, 1, &err), -1);
    print_message("  %s\n", err.msg);
    assert_non_null(strstr(err.msg, "DeiTForImageClassificationWithTeacher is inference-only"));
    assert_int_equal(vit_acts_alloc(&a, &m, 2, 0, 0, &err), 0); /* inference is fine */
    vit_acts_free(&a);
    model_free(&m);
}

/* No qkv bias in the checkpoint: those tensors are frozen, their gradients exactly zero. */
static void test_absent_params_zero_grads(void **state) {
    (void)state;
    vit_case c = {.smoothing = 0.1f};
    vit_case_init(&c, 0);
    vit_loss(&c);
    const float *g = c.grads;
    int absent = 0;
    for (int i = 0; i < c.m.num_entries; i++) {
        const param_entry *e = &c.m.entries[i];
        double norm = 0.0;
        for (size_t j = 0; j < e->numel; j++) norm += fabs(g[e->offset + j]);
        if (e->absent) {
            absent++;
            assert_true(norm == 0.0);
        } else {
            assert_true(norm > 0.0); /* every live tensor receives some gradient */
        }
    }
    assert_int_equal(absent, 6); /* query, key, value bias of 2 layers */
    vit_case_free(&c);
}

/* BEiT's q and v biases without a k bias: one part of the stacked qkv bias absent (the key's,
 * zero and frozen), the other two live. Its gradient is cleared, the optimizer leaves it at zero,
 * and the weights a model writes leave it out. */
static void test_absent_key_bias_alone(void **state) {
    (void)state;
    vit_case c = {.smoothing = 0.1f};
    vit_case_init(&c, 1);
    model *m = &c.m;
    const size_t live = model_live_params(m);
    int keys = 0;
    for (int i = 0; i < m->num_entries; i++) {
        param_entry *e = &m->entries[i];
        if (!strstr(e->name, "attention.key.bias")) continue;
        e->absent = 1, keys++;
        memset(m->params + e->offset, 0, e->numel * sizeof(float));
    }
    assert_int_equal(keys, 2);
    assert_int_equal(model_live_params(m), live - 2 * 8);
    zero_grads(&c);
    vit_loss(&c);
    adamw opt;
    vit_error err = {0};
    assert_int_equal(adamw_init(&opt, m, &(adamw_hparams){.lr = 1e-2f}, &err), 0);
    adamw_step(&opt, m, c.grads, 1e-2f);
    adamw_free(&opt);
    for (int i = 0; i < m->num_entries; i++) {
        const param_entry *e = &m->entries[i];
        if (!strstr(e->name, "attention.attention.") || !strstr(e->name, ".bias")) continue;
        double g = 0.0, p = 0.0;
        for (size_t j = 0; j < e->numel; j++)
            g += fabs(c.grads[e->offset + j]), p += fabs(m->params[e->offset + j]);
        if (e->absent) /* exactly zero, gradient and value */
            assert_true(g == 0.0 && p == 0.0);
        else /* query and value biases train */
            assert_true(g > 0.0 && p > 0.0);
    }
    st_entry st[64];
    char st_names[64][128];
    assert_true(m->num_entries <= 64);
    const int n = model_st_entries(m, m->params, st, st_names);
    assert_int_equal(n, m->num_entries - 2);
    for (int i = 0; i < n; i++) assert_null(strstr(st[i].name, "key.bias"));
    assert_non_null(model_find_param(m, "encoder.layer.1.attention.attention.value.bias"));
    vit_case_free(&c);
}

/* Two steps without zeroing give twice one step's gradients: gradients accumulate. */
static void test_grads_accumulate(void **state) {
    (void)state;
    vit_case c = {.smoothing = 0.1f};
    vit_case_init(&c, 1);
    const size_t n = c.m.num_params;
    float *once = test_alloc_floats(n);
    zero_grads(&c);
    vit_loss(&c);
    memcpy(once, c.grads, n * sizeof(float));
    vit_loss(&c);
    const float *twice = c.grads;
    for (size_t i = 0; i < n; i++)
        assert_float_equal(twice[i], 2.0f * once[i], 1e-6f * (1 + fabsf(once[i])));
    free(once);
    vit_case_free(&c);
}

/* Dropout: same seed -> same loss; different seed or p -> different; p = 0 is eval mode exactly. */
static void test_dropout_determinism(void **state) {
    (void)state;
    vit_case c = {.smoothing = 0.0f};
    vit_case_init(&c, 1);
    vit_error err = {0};
    float l1, l2, l3, l0;
    uint64_t rng = 5;
    assert_int_equal(step(&c, VB, 0.3f, &rng, &l1, &err), 0);
    const uint64_t advanced = rng;
    assert_true(advanced != 5);
    rng = 5;
    assert_int_equal(step(&c, VB, 0.3f, &rng, &l2, &err), 0);
    assert_true(l1 == l2);
    assert_true(rng == advanced);
    assert_int_equal(step(&c, VB, 0.3f, &rng, &l3, &err), 0);
    assert_true(l3 != l1); /* the advanced state draws new masks */
    /* p = 0 (rng untouched, may be NULL): the logits are the eval forward's, bit for bit */
    assert_int_equal(step(&c, VB, 0.0f, NULL, &l0, &err), 0);
    assert_true(l0 != l1);
    float train_logits[VB * 3], eval_logits[VB * 3], probs[VB * 3];
    memcpy(train_logits, c.logits, sizeof train_logits);
    assert_int_equal(vit_model_forward(&c.m, &c.a, c.pixels, VB, NULL, eval_logits, &err), 0);
    assert_memory_equal(train_logits, eval_logits, sizeof eval_logits);
    assert_true(fabs(l0 - crossentropy_forward(probs, eval_logits, c.labels, VB, 3, 0.0f)) < 1e-6);
    vit_case_free(&c);
}

/* Frozen encoder: the head's gradients are those of the full backward, everything else zero. */
static void test_freeze_encoder(void **state) {
    (void)state;
    vit_case c = {.smoothing = 0.1f};
    vit_case_init(&c, 1);
    const size_t n = c.m.num_params;
    float *full = test_alloc_floats(n);
    zero_grads(&c);
    vit_loss(&c);
    memcpy(full, c.grads, n * sizeof(float));
    c.freeze = 1;
    zero_grads(&c);
    vit_loss(&c);
    const float *g = c.grads;
    for (int i = 0; i < c.m.num_entries; i++) {
        const param_entry *e = &c.m.entries[i];
        int head =
            strncmp(e->name, "layernorm.", 10) == 0 || strncmp(e->name, "classifier.", 11) == 0;
        for (size_t j = 0; j < e->numel; j++) {
            if (head)
                assert_float_equal(g[e->offset + j], full[e->offset + j], 1e-6f);
            else
                assert_true(g[e->offset + j] == 0.0f);
        }
    }
    free(full);
    vit_case_free(&c);
}

static void test_forward_argument_errors(void **state) {
    (void)state;
    vit_case c = {0};
    vit_case_init(&c, 1);
    vit_error err = {0};
    float loss;
    assert_int_equal(step(&c, VB + 1, 0.0f, NULL, &loss, &err), -1);
    assert_int_equal(step(&c, VB, 0.5f, NULL, &loss, &err), -1);
    assert_non_null(strstr(err.msg, "rng"));
    assert_int_equal(step(&c, VB, 1.5f, NULL, &loss, &err), -1);
    /* training needs training buffers, at the model's own size */
    vit_acts eval;
    assert_int_equal(vit_acts_alloc(&eval, &c.m, VB, 0, 0, &err), 0);
    const forward_mode train = {.train = 1};
    assert_int_equal(vit_model_forward(&c.m, &eval, c.pixels, VB, &train, c.logits, &err), -1);
    vit_acts_free(&eval);
    assert_int_equal(vit_acts_alloc(&eval, &c.m, VB, 16, 1, &err), -1);
    assert_int_equal(vit_acts_alloc(&eval, &c.m, VB, 3, 0, &err), -1);
    assert_non_null(strstr(err.msg, "input size 3 is smaller than the patch size 4"));
    /* a size that is not a multiple of the patch runs (its last pixels left out) */
    assert_int_equal(vit_acts_alloc(&eval, &c.m, VB, 6, 0, &err), 0);
    assert_true(eval.grid_h == 1 && eval.grid_w == 1);
    vit_acts_free(&eval);
    vit_case_free(&c);
}

int main(void) {
    /* GRADCHECK_SEED=n draws other random weights and inputs (every seed 0..15 passes) */
    if (getenv("GRADCHECK_SEED")) test_seed(strtoull(getenv("GRADCHECK_SEED"), NULL, 10));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_linear),
        cmocka_unit_test(test_layernorm),
        cmocka_unit_test(test_activations),
        cmocka_unit_test(test_swiglu_and_layer_scale),
        cmocka_unit_test(test_attention),
        cmocka_unit_test(test_crossentropy),
        cmocka_unit_test(test_patch_embed),
        cmocka_unit_test(test_encoder_post_norm_masked),
        cmocka_unit_test(test_encoder_pre_norm_causal_dropout),
        cmocka_unit_test(test_vit_whole_model),
        cmocka_unit_test(test_vit_non_square),
        cmocka_unit_test(test_vit_remainder),
        cmocka_unit_test(test_vit_whole_model_dropout),
        cmocka_unit_test(test_deit_whole_model),
        cmocka_unit_test(test_deit_teacher_not_trained),
        cmocka_unit_test(test_absent_params_zero_grads),
        cmocka_unit_test(test_absent_key_bias_alone),
        cmocka_unit_test(test_grads_accumulate),
        cmocka_unit_test(test_dropout_determinism),
        cmocka_unit_test(test_freeze_encoder),
        cmocka_unit_test(test_forward_argument_errors),
    };
    return cmocka_run_group_tests_name("gradcheck", tests, NULL, NULL);
}
