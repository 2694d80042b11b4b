/* The encoder block's options for DINOv2, BEiT, NomicBERT and JinaBERT (vit/core/encoder.h):
 * layer scale (ls1, ls2), the SwiGLU and GeGLU feed-forwards (ACT_SWIGLU, ACT_GEGLU), rotary
 * positions on the queries and keys (rotary_dim: whole heads or part of them, halves or
 * interleaved pairs) and a bias on the attention scores (attn_bias, per layer or shared by the
 * layers; ALiBi's is one), alone and together.
 *
 * - Training: every parameter's gradient, the scales', the bias's and the input's against
 *   five-point finite differences (testutil.h: gradcheck_tensor; test_gradcheck.c explains the
 *   stencil, the steps and the error measure), pre-LN (both families' layout), with a padding
 *   mask, and with hidden and attention dropout (fixed masks); post-LN once with everything on.
 *   Tolerance GRADCHECK_TOL (1e-2 relative above 1e-2, absolute below), as every gradient check.
 * - Inference: the training forward (plain products, attention_forward, weights kept) against
 *   the inference forward unprepared (attention_infer), and prepared by model_prepare on each
 *   backend in fp32 (the scales folded into proj and fc2, SwiGLU after a plain fc1): within
 *   1e-5, float32 rounding of the same sums taken in another order. bf16 and int8 prepared
 *   against fp32 prepared within the bounds below.
 * - attention_infer with a bias against attention_forward with it, for T on and off its tiles.
 * - gemm_chain: fc1 -> fc2 chained in bf16 and int8 gives what the two layers give unchained, bit
 *   for bit.
 */
#include "tests/testutil.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vit/core/encoder.h"
#include "vit/core/gemm.h"
#include "vit/core/ops.h"
#include "vit/model/config.h"
#include "vit/model/params.h"

enum { L = 2, MAX_T = 37 };
#define N_TENSORS 14
#define SAME_TOL  1e-5 /* inference against the training forward, fp32 */
/* Reduced precision against fp32 on the inference case below (outputs of O(1)): bf16 rounds every
 * operand to 8 bits of mantissa (2^-9 relative), int8 weights per output channel and activations
 * per row to 8 bits. About twice the largest error measured (printed). */
#define BF16_BOUND 0.06
#define INT8_BOUND 0.16

static const char *names[N_TENSORS] = {"ln1_w",  "ln1_b", "qkv_w", "qkv_b", "proj_w",
                                       "proj_b", "ln2_w", "ln2_b", "fc1_w", "fc1_b",
                                       "fc2_w",  "fc2_b", "ls1",   "ls2"};

typedef struct {
    int layer_scale, swiglu, geglu;
    int rotary; /* 0: none, 1: whole heads, GPT-NeoX's halves, 2: interleaved pairs, 3: half of
                   each head (rotary_emb_fraction 0.5) */
    int bias;   /* 0: none, 1: one per layer, 2: one shared by the layers */
    int post_norm, masked;
    float drop; /* hidden and attention dropout */
} options;

typedef struct {
    options o;
    int D, H, I, B, T;
    encoder_shape s;
    encoder_layer w[L], g[L];
    float *wp[L][N_TENSORS], *gp[L][N_TENSORS];
    size_t sizes[N_TENSORS], layer_floats, bias_floats;
    float *params, *grads, *bias, *dbias;
    encoder_tape tape;
    uint8_t mask[2 * MAX_T];
    float *x0, *x, *wout;
} opt_case;

static double dot(const float *w, const float *x, size_t n) {
    double s = 0.0;
    for (size_t i = 0; i < n; i++) s += (double)w[i] * x[i];
    return s;
}

static void set_sizes(opt_case *c) {
    const size_t D = (size_t)c->D, I = (size_t)c->I, W1 = c->o.swiglu || c->o.geglu ? 2 * I : I;
    const size_t sizes[N_TENSORS] = {D, D,      3 * D * D, 3 * D, D * D, D, D,
                                     D, W1 * D, W1,        D * I, D,     D, D};
    memcpy(c->sizes, sizes, sizeof sizes);
    c->layer_floats = 0;
    for (int i = 0; i < N_TENSORS; i++) c->layer_floats += sizes[i];
}

/* Layer l's tensors in block (names[] order); no layer scale: ls1, ls2 laid out but not used. */
static encoder_layer layout(const opt_case *c, float *block, int l, float *p[N_TENSORS]) {
    float *at = block + (size_t)l * c->layer_floats;
    for (int i = 0; i < N_TENSORS; i++) p[i] = at, at += c->sizes[i];
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
                           .fc2_b = p[11],
                           .ls1 = c->o.layer_scale ? p[12] : NULL,
                           .ls2 = c->o.layer_scale ? p[13] : NULL};
}

/* The score biases: [H, T, T] per layer, or one for all; the gradients' buffers alike. */
static void attach_bias(opt_case *c) {
    const size_t per = (size_t)c->H * c->T * c->T;
    c->bias_floats = c->o.bias == 1 ? L * per : c->o.bias == 2 ? per : 0;
    if (!c->bias_floats) return;
    c->bias = test_alloc_floats(c->bias_floats), c->dbias = test_alloc_floats(c->bias_floats);
    test_fill(c->bias, c->bias_floats, -1.5f, 1.5f);
    for (int l = 0; l < L; l++) {
        const size_t at = c->o.bias == 1 ? l * per : 0;
        c->w[l].attn_bias = c->bias + at;
        c->g[l].attn_bias = c->dbias + at;
    }
}

static void case_init(opt_case *c, options o, int D, int H, int I, int B, int T) {
    memset(c, 0, sizeof *c);
    c->o = o, c->D = D, c->H = H, c->I = I, c->B = B, c->T = T;
    set_sizes(c);
    c->s = (encoder_shape){.layers = L,
                           .dim = D,
                           .heads = H,
                           .mlp_dim = I,
                           .act = o.geglu    ? ACT_GEGLU
                                  : o.swiglu ? ACT_SWIGLU
                                             : ACT_GELU,
                           .eps = 1e-6f,
                           .post_norm = o.post_norm,
                           .layer_scale = o.layer_scale,
                           .rotary_dim = !o.rotary       ? 0
                                         : o.rotary == 3 ? D / H / 2
                                                         : D / H,
                           .rotary_interleaved = o.rotary == 2,
                           .rotary_base = 10.0};
    c->params = test_alloc_floats(c->layer_floats * L);
    c->grads = test_alloc_floats(c->layer_floats * L);
    test_fill(c->params, c->layer_floats * L, -0.3f, 0.3f);
    for (int l = 0; l < L; l++) {
        c->w[l] = layout(c, c->params, l, c->wp[l]);
        c->g[l] = layout(c, c->grads, l, c->gp[l]);
        for (int i = 0; i < D; i++) { /* LayerNorm weights near 1, scales 0.2..1.2 */
            c->wp[l][0][i] += 1, c->wp[l][6][i] += 1;
            c->wp[l][12][i] += 0.7f, c->wp[l][13][i] += 0.7f;
        }
    }
    attach_bias(c);
    for (int i = 0; i < B * T; i++) c->mask[i] = !o.masked || i < B * T - 2; /* last item pads */
    const size_t n = (size_t)B * T * D;
    c->x0 = test_alloc_floats(n), c->x = test_alloc_floats(n), c->wout = test_alloc_floats(n);
    test_fill(c->x0, n, -1, 1), test_fill(c->wout, n, -1, 1);
    assert_int_equal(encoder_tape_alloc(&c->tape, &c->s, B, T), 0);
}

static void case_free(opt_case *c) {
    encoder_tape_free(&c->tape);
    free(c->params), free(c->grads), free(c->bias), free(c->dbias);
    free(c->x0), free(c->x), free(c->wout);
}

/* Σ wout·encoder(x0) in training mode, the same dropout masks every time. */
static double case_loss(void *p) {
    opt_case *c = p;
    const size_t n = (size_t)c->B * c->T * c->D;
    uint64_t rng = 7;
    const encoder_run run = {
        .mode = ENCODER_TRAIN, .hidden_drop = c->o.drop, .attn_drop = c->o.drop, .rng = &rng};
    memcpy(c->x, c->x0, n * sizeof(float));
    assert_int_equal(encoder_forward(&c->s, c->w, &run, NULL, &c->tape, c->x,
                                     c->o.masked ? c->mask : NULL, c->B, c->T),
                     0);
    return dot(c->wout, c->x, n);
}

static void expect_close(const char *what, double err, double max_grad) {
    print_message("  %-32s max rel err %.2e  (max |g| %.2e)\n", what, err, max_grad);
    if (!(err <= GRADCHECK_TOL))
        fail_msg("%s: max relative error %.3g above %g", what, err, GRADCHECK_TOL);
}

/* One gradient against finite differences; it must not be all zero (a tensor nothing reads
 * would pass as 0 against 0). */
static void check_one(opt_case *c, const char *what, float *x, const float *g, size_t n) {
    double max_grad;
    const double err = gradcheck_tensor(x, g, n, case_loss, c, &max_grad);
    expect_close(what, err, max_grad);
    if (!(max_grad > 0.0)) fail_msg("%s: zero gradient", what);
}

static void check_gradients(const char *what, options o) {
    enum { B = 2, T = 5, D = 8, H = 2, I = 12 };
    opt_case c;
    case_init(&c, o, D, H, I, B, T);
    const size_t n = (size_t)B * T * D;
    float *dx = test_alloc_floats(n);
    if (c.dbias) /* accumulated into: start from an offset, taken off after */
        for (size_t i = 0; i < c.bias_floats; i++) c.dbias[i] = 0.5f;
    case_loss(&c);
    memcpy(dx, c.wout, n * sizeof(float));
    const encoder_run run = {.mode = ENCODER_TRAIN, .hidden_drop = o.drop, .attn_drop = o.drop};
    encoder_backward(&c.s, c.w, c.g, &run, &c.tape, dx, B, T);
    for (size_t i = 0; i < c.bias_floats; i++) c.dbias[i] -= 0.5f;
    print_message(" %s\n", what);
    char label[64];
    for (int l = 0; l < L; l++)
        for (int i = 0; i < (o.layer_scale ? N_TENSORS : N_TENSORS - 2); i++) {
            snprintf(label, sizeof label, "layer %d %s", l, names[i]);
            check_one(&c, label, c.wp[l][i], c.gp[l][i], c.sizes[i]);
        }
    if (c.bias_floats)
        check_one(&c, o.bias == 2 ? "shared attention bias" : "attention biases", c.bias, c.dbias,
                  c.bias_floats);
    check_one(&c, "input dx", c.x0, dx, n);
    free(dx);
    case_free(&c);
}

static void test_layer_scale_gradients(void **state) {
    (void)state;
    check_gradients("pre-LN, layer scale", (options){.layer_scale = 1});
}

static void test_swiglu_gradients(void **state) {
    (void)state;
    check_gradients("pre-LN, SwiGLU", (options){.swiglu = 1});
}

static void test_geglu_gradients(void **state) {
    (void)state;
    check_gradients("pre-LN, GeGLU", (options){.geglu = 1});
    check_gradients("post-LN, GeGLU, padding", (options){.geglu = 1, .post_norm = 1, .masked = 1});
}

/* The rotation's transpose takes the gradient back (T 5: angles up to 4 rad at base 10). */
static void test_rotary_gradients(void **state) {
    (void)state;
    check_gradients("pre-LN, rotary halves", (options){.rotary = 1});
    check_gradients("pre-LN, rotary interleaved, padding", (options){.rotary = 2, .masked = 1});
    check_gradients("post-LN, rotary on half of each head, SwiGLU",
                    (options){.rotary = 3, .swiglu = 1, .post_norm = 1});
}

static void test_bias_gradients(void **state) {
    (void)state;
    check_gradients("pre-LN, attention bias per layer, padding", (options){.bias = 1, .masked = 1});
    check_gradients("pre-LN, one attention bias shared by the layers", (options){.bias = 2});
}

static void test_all_options_gradients(void **state) {
    (void)state;
    const options all = {.layer_scale = 1, .swiglu = 1, .bias = 1, .masked = 1};
    check_gradients("pre-LN, layer scale + SwiGLU + bias, padding", all);
    options drop = all;
    drop.drop = 0.2f;
    check_gradients("the same, hidden and attention dropout 0.2 (fixed masks)", drop);
    options post = drop;
    post.post_norm = 1, post.bias = 2;
    check_gradients("post-LN, all options, shared bias, dropout 0.2", post);
}

/* ---- the new options' maths by hand ---- */

/* rotary_forward on one head of 4 at base 100: position 1 turns pair 0 by 1 rad and pair 1 by
 * 100^(-1/2) = 0.1 rad, position 0 not at all; values stay; the inverse turns back. */
static void test_rotary_by_hand(void **state) {
    (void)state;
    for (int inter = 0; inter < 2; inter++) {
        /* rows: position 0, position 1; each q [4], k [4], v [4] */
        float qkv[2][12] = {{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12},
                            {1, 0, 0, 0, 0, 0, 1, 0, 7, 7, 7, 7}};
        const float c1 = cosf(1), s1 = sinf(1), c2 = cosf(0.1f), s2 = sinf(0.1f);
        /* halves pair (0, 2), (1, 3); interleaved (0, 1), (2, 3) */
        const float want_q[2][4] = {{c1, 0, s1, 0}, {c1, s1, 0, 0}};
        const float want_k[2][4] = {{0, 0, 0, 0}, {0, 0, c2, s2}};
        float want_k_h[4] = {-s1, 0, c1, 0}; /* halves: k[2] = 1 is pair 0's second */
        rotary_forward(&qkv[0][0], 1, 2, 12, 4, 1, 4, 100.0, inter, 0, 0);
        for (int i = 0; i < 4; i++) {
            assert_float_equal(qkv[0][i], (float)(i + 1), 1e-6);
            assert_float_equal(qkv[1][i], want_q[inter][i], 1e-6);
            assert_float_equal(qkv[1][4 + i], inter ? want_k[1][i] : want_k_h[i], 1e-6);
            assert_float_equal(qkv[1][8 + i], 7, 0);
        }
        rotary_forward(&qkv[0][0], 1, 2, 12, 4, 1, 4, 100.0, inter, 0, 1);
        const float back[8] = {1, 0, 0, 0, 0, 0, 1, 0};
        for (int i = 0; i < 8; i++) assert_float_equal(qkv[1][i], back[i], 1e-6);
    }
    /* pos0 shifts the positions: row 0 at pos0 1 is what row 1 was */
    float one[12] = {1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    rotary_forward(one, 1, 1, 12, 4, 1, 4, 100.0, 0, 1, 0);
    assert_float_equal(one[0], cosf(1), 1e-6);
    assert_float_equal(one[2], sinf(1), 1e-6);
}

/* ALiBi's slopes: 8 heads 2^-1 .. 2^-8; 12 heads those and 2^-0.5, 2^-1.5, 2^-2.5, 2^-3.5 (every
 * other of 16's); 3 heads 2^-4, 2^-8, then 2^-2; the bias -slope·|i - j|. */
static void test_alibi_by_hand(void **state) {
    (void)state;
    for (int h = 0; h < 8; h++) assert_float_equal(alibi_slope(8, h), pow(2, -(h + 1)), 1e-15);
    const double twelve[4] = {pow(2, -0.5), pow(2, -1.5), pow(2, -2.5), pow(2, -3.5)};
    for (int h = 0; h < 12; h++)
        assert_float_equal(alibi_slope(12, h), h < 8 ? pow(2, -(h + 1)) : twelve[h - 8], 1e-15);
    assert_float_equal(alibi_slope(3, 0), 1.0 / 16, 1e-15);
    assert_float_equal(alibi_slope(3, 1), 1.0 / 256, 1e-15);
    assert_float_equal(alibi_slope(3, 2), 1.0 / 4, 1e-15);
    float bias[3 * 4 * 4];
    alibi_bias(bias, 3, 4);
    assert_float_equal(bias[(2 * 4 + 0) * 4 + 3], -0.75f, 0); /* head 2, i 0, j 3 */
    assert_float_equal(bias[(2 * 4 + 3) * 4 + 1], -0.5f, 0);  /* symmetric: |3 - 1| */
    assert_float_equal(bias[(0 * 4 + 1) * 4 + 1], 0.0f, 0);   /* the diagonal */
    assert_float_equal(bias[(1 * 4 + 0) * 4 + 1], -1.0f / 256, 0);
}

/* GeGLU: gelu(u1)·u2 with the erf GELU: gelu(1) = 0.841344746, gelu(-2) = -0.045500264. */
static void test_geglu_by_hand(void **state) {
    (void)state;
    const float u[4] = {1, -2, 3, 0.5f};
    float out[2];
    geglu_forward(out, u, 1, 2);
    assert_float_equal(out[0], 3 * 0.8413447460685429, 1e-6);
    assert_float_equal(out[1], 0.5 * -0.04550026389635839, 1e-6);
}

/* ---- inference against the training forward ---- */

static double max_diff(const float *a, const float *b, size_t n) {
    double m = 0.0;
    for (size_t i = 0; i < n; i++) m = fmax(m, fabs((double)a[i] - b[i]));
    return m;
}

/* A model whose encoder layers are c's (its own parameters set aside), so that model_prepare
 * prepares c's layers as it prepares a loaded model's: restore with host_restore. */
typedef struct {
    model m;
    encoder_layer *own;
    encoder_shape enc;
} host;

static void host_init(host *h, opt_case *c) {
    static const char *json =
        "{\"model_type\": \"vit\", \"image_size\": 8, \"patch_size\": 4, \"num_channels\": 3,"
        " \"hidden_size\": %d, \"num_hidden_layers\": %d, \"num_attention_heads\": %d,"
        " \"intermediate_size\": %d, \"num_labels\": 3}";
    char text[400];
    snprintf(text, sizeof text, json, c->D, L, c->H, c->I);
    model_config cfg;
    vit_error err = {0};
    if (model_config_parse(text, "options", &cfg, &err) != 0 || model_create(&h->m, &cfg, &err))
        fail_msg("%s", err.msg);
    h->own = h->m.layers, h->enc = h->m.enc;
    h->m.layers = c->w, h->m.enc = c->s;
}

static void host_restore(host *h) {
    model_unprepare(&h->m);
    h->m.layers = h->own, h->m.enc = h->enc;
    model_free(&h->m);
}

/* The inference forward of c.x0 into y: prepared (backend >= 0, precision) or plain. */
static int run_inference(opt_case *c, host *h, int backend, gemm_precision precision, float *y) {
    vit_error err = {0};
    gemm_state *gs = NULL;
    if (backend >= 0) {
        if (model_prepare(&h->m, (gemm_backend)backend, precision, c->B, c->T, &err) != 0)
            return print_message("  (%s %s: %s)\n", gemm_backend_name((gemm_backend)backend),
                                 gemm_precision_name(precision), err.msg),
                   -1;
        if (!(gs = model_gemm_state(&h->m, &err))) fail_msg("%s", err.msg);
    }
    encoder_scratch inf;
    assert_int_equal(encoder_scratch_alloc(&inf, &c->s, c->B, c->T), 0);
    assert_non_null(inf.attn_scratch); /* dh 16: the fast inference attention */
    const encoder_run run = {.mode = ENCODER_INFER, .gemm = gs};
    memcpy(y, c->x0, sizeof(float) * c->B * c->T * c->D);
    assert_int_equal(encoder_forward(&c->s, h->m.layers, &run, &inf, NULL, y,
                                     c->o.masked ? c->mask : NULL, c->B, c->T),
                     0);
    encoder_scratch_free(&inf);
    gemm_state_free(gs);
    model_unprepare(&h->m);
    return 0;
}

static void check_inference(const char *what, options o) {
    enum { B = 2, T = 19, D = 32, H = 2, I = 24 };
    opt_case c;
    case_init(&c, o, D, H, I, B, T);
    host h;
    host_init(&h, &c);
    const size_t n = (size_t)B * T * D;
    float *y = test_alloc_floats(n), *fp32 = test_alloc_floats(n);
    case_loss(&c); /* c.x: the training forward */
    print_message(" %s\n", what);
    int backends[3];
    const int nb = test_backends(backends);
    for (int k = 0; k < nb; k++) {
        const int be = backends[k];
        assert_int_equal(run_inference(&c, &h, be, PRECISION_FP32, y), 0);
        const char *name = be < 0 ? "unprepared" : gemm_backend_name((gemm_backend)be);
        const double d = max_diff(y, c.x, n);
        print_message("  %-10s fp32 against training %.2e\n", name, d);
        if (!(d <= SAME_TOL)) fail_msg("%s: %s differs by %.3g", what, name, d);
        if (be < 0) continue;
        memcpy(fp32, y, n * sizeof(float));
        const gemm_precision low[] = {PRECISION_BF16, PRECISION_INT8};
        const double bound[] = {BF16_BOUND, INT8_BOUND};
        for (int p = 0; p < 2; p++) {
            if (run_inference(&c, &h, be, low[p], y) != 0) continue; /* int8: oneDNN only */
            const double e = max_diff(y, fp32, n);
            print_message("  %-10s %s against fp32 %.2e (bound %g)\n", name,
                          gemm_precision_name(low[p]), e, bound[p]);
            if (!(e <= bound[p]))
                fail_msg("%s: %s %s off by %.3g", what, name, gemm_precision_name(low[p]), e);
        }
    }
    host_restore(&h);
    free(y), free(fp32);
    case_free(&c);
}

static void test_inference_matches_training(void **state) {
    (void)state;
    check_inference("layer scale", (options){.layer_scale = 1});
    check_inference("SwiGLU", (options){.swiglu = 1});
    check_inference("attention bias per layer, padding", (options){.bias = 1, .masked = 1});
    check_inference("all three, shared bias", (options){.layer_scale = 1, .swiglu = 1, .bias = 2});
    check_inference("all three, post-LN",
                    (options){.layer_scale = 1, .swiglu = 1, .bias = 1, .post_norm = 1});
    /* NomicBERT's block: post-LN, rotary, SwiGLU; JinaBERT's: post-LN, a score bias, GeGLU */
    check_inference("rotary + SwiGLU, post-LN, padding",
                    (options){.rotary = 1, .swiglu = 1, .post_norm = 1, .masked = 1});
    check_inference("rotary on half of each head, post-LN", (options){.rotary = 3, .post_norm = 1});
    check_inference("rotary interleaved", (options){.rotary = 2});
    check_inference("bias + GeGLU, post-LN, padding",
                    (options){.geglu = 1, .bias = 2, .post_norm = 1, .masked = 1});
}

/* ---- attention_infer with a bias ---- */

static void check_infer_bias(int T, int D, int H, int masked, int causal) {
    enum { B = 2 };
    const size_t nqkv = (size_t)B * T * 3 * D, nout = (size_t)B * T * D;
    float *qkv = test_alloc_floats(nqkv), *bias = test_alloc_floats((size_t)H * T * T);
    float *want = test_alloc_floats(nout), *got = test_alloc_floats(nout);
    float *probs = test_alloc_floats((size_t)B * H * T * T);
    uint8_t mask[2 * MAX_T];
    for (int i = 0; i < B * T; i++) mask[i] = i < B * T - 3 || !masked;
    test_fill(qkv, nqkv, -1.5f, 1.5f), test_fill(bias, (size_t)H * T * T, -2, 2);
    const int threads = 2;
    float *scratch = test_alloc_floats(attention_infer_scratch(B, T, D, threads));
    attention_forward(want, probs, qkv, masked ? mask : NULL, bias, causal, B, T, D, H);
    attention_infer(got, qkv, masked ? mask : NULL, bias, causal, scratch, threads, B, T, D, H);
    const double d = max_diff(got, want, nout);
    if (!(d <= SAME_TOL))
        fail_msg("T %d, D %d, H %d, mask %d, causal %d: attention_infer differs by %.3g", T, D, H,
                 masked, causal, d);
    /* and the bias matters: without it the output moves (but for one key, which takes it all) */
    attention_infer(got, qkv, masked ? mask : NULL, NULL, causal, scratch, threads, B, T, D, H);
    assert_true(T == 1 || max_diff(got, want, nout) > 1e-3);
    free(qkv), free(bias), free(want), free(got), free(probs), free(scratch);
}

static void test_attention_infer_bias(void **state) {
    (void)state;
    /* query blocks of 18 rows, score tiles of 6 x 16 or 6 x 32: T below, at and past each; head
     * sizes 16 to 80 take the weighted values' tiles of 16, 32 and 64 columns and their tails */
    const int Ts[] = {1, 5, 6, 16, 17, 18, 19, 33, 35, 37};
    for (size_t i = 0; i < sizeof Ts / sizeof Ts[0]; i++) {
        check_infer_bias(Ts[i], 32, 2, 0, 0);
        check_infer_bias(Ts[i], 64, 2, Ts[i] > 3, 0);
        check_infer_bias(Ts[i], 48, 3, 0, 1);
        check_infer_bias(Ts[i], 96, 2, 0, 0);
        check_infer_bias(Ts[i], 128, 2, Ts[i] > 3, 1);
        check_infer_bias(Ts[i], 160, 2, 0, 0);
    }
    print_message("  attention_infer with a bias = attention_forward with it, within %g\n",
                  SAME_TOL);
}

/* ---- attention_infer_bf16 ---- */

static double bf16_value(double x) { /* float x rounded to bfloat16, to nearest even */
    const float f = (float)x;
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    u += 0x7fffu + ((u >> 16) & 1u);
    u &= 0xffff0000u;
    float r;
    memcpy(&r, &u, sizeof r);
    return r;
}

/* How far a bf16 rounding of e may fall from bf16_value(e) when e is off by a relative 1e-4:
 * 0, or one bf16 step where e lies that close to the midpoint between two bf16 values. */
static double bf16_rounding_slack(double e) {
    const double lo = bf16_value(e * (1 - 1e-4)), hi = bf16_value(e * (1 + 1e-4));
    return hi - lo;
}

/* out [B, T, D] in double from the operands as the bf16 kernels take them: Q, K and V rounded to
 * bfloat16, the scores summed exactly and scaled by 1/√dh, the exponentials rounded to bfloat16 in
 * the weighted sum and not in the normaliser. The kernels' fp32 scores are off from the exact ones
 * in their last bits, so an exponential that lies within a hair of a bf16 midpoint may round the
 * other way there: slack [B, T, D] sums what such roundings may move each output by. */
static void bf16_reference(double *out, double *slack, const float *qkv, const uint8_t *mask,
                           const float *bias, int causal, int B, int T, int D, int H) {
    const int dh = D / H, ld = 3 * D;
    const double scale = 1.0 / sqrt(dh);
    double *s = malloc(sizeof(double) * T);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int i = 0; i < T; i++) {
                const float *q = qkv + ((size_t)b * T + i) * ld + h * dh;
                double max = -INFINITY;
                for (int j = 0; j < T; j++) {
                    const float *k = qkv + ((size_t)b * T + j) * ld + D + h * dh;
                    double dot = 0;
                    for (int d = 0; d < dh; d++) dot += bf16_value(q[d]) * bf16_value(k[d]);
                    dot *= (float)scale; /* the kernels' scale, a float */
                    if (bias) dot += bias[((size_t)h * T + i) * T + j];
                    if ((mask && !mask[b * T + j]) || (causal && j > i)) dot = -INFINITY;
                    s[j] = dot;
                    max = dot > max ? dot : max;
                }
                double sum = 0;
                for (int j = 0; j < T; j++) sum += s[j] = s[j] == -INFINITY ? 0 : exp(s[j] - max);
                for (int d = 0; d < dh; d++) {
                    double acc = 0, may_move = 0;
                    for (int j = 0; j < T; j++) {
                        const double v =
                            bf16_value(qkv[((size_t)b * T + j) * ld + 2 * D + h * dh + d]);
                        acc += bf16_value(s[j]) * v;
                        may_move += bf16_rounding_slack(s[j]) * fabs(v);
                    }
                    out[((size_t)b * T + i) * D + h * dh + d] = acc / sum;
                    slack[((size_t)b * T + i) * D + h * dh + d] = may_move / sum;
                }
            }
    free(s);
}

/* attention_infer_bf16 against bf16_reference within 2e-5 (the fp32 sums' rounding) beyond the
 * reference's slack (the exponentials that may round either way), and measurably not the fp32
 * attention (the rounding shows at ~1e-3 with values of magnitude 1.5): the bf16 products did
 * run. (A fixed 2e-4 passed for years of data and failed for other random operands: one
 * exponential rounding the other way moved an output by 2.7e-4.) */
static void test_attention_infer_bf16(void **state) {
    (void)state;
    if (!attention_infer_bf16_available()) {
        print_message("  SKIPPED: this CPU has no AVX512-BF16 (bf16 inference keeps fp32 "
                      "attention)\n");
        return;
    }
    enum { B = 2 };
    /* T: on and off the 16- and 32-key tiles; head sizes 32, 48, 64 and 80 take every width
     * of the products' register tiles (64, 32 and 16 columns) */
    const int Ts[] = {1, 6, 17, 18, 19, 33, 37, 64};
    const int Ds[] = {64, 64, 96, 96, 128, 160}, Hs[] = {2, 2, 3, 2, 2, 2};
    double worst = 0, apart = INFINITY, widest = 0;
    for (size_t t = 0; t < sizeof Ts / sizeof Ts[0]; t++)
        for (int variant = 0; variant < 6; variant++) {
            const int T = Ts[t], D = Ds[variant], H = Hs[variant];
            const int masked = (variant == 1 || variant == 5) && T > 3;
            const int causal = variant == 2 || variant == 4;
            const size_t nqkv = (size_t)B * T * 3 * D, nout = (size_t)B * T * D;
            float *qkv = test_alloc_floats(nqkv), *bias = test_alloc_floats((size_t)H * T * T);
            float *got = test_alloc_floats(nout), *fp32 = test_alloc_floats(nout);
            double *want = malloc(nout * sizeof(double)), *slack = malloc(nout * sizeof(double));
            uint8_t mask[B * 64];
            for (int i = 0; i < B * T; i++) mask[i] = i < B * T - 3 || !masked;
            test_fill(qkv, nqkv, -1.5f, 1.5f), test_fill(bias, (size_t)H * T * T, -2, 2);
            const float *b = variant == 1 ? bias : NULL;
            float *scratch = test_alloc_floats(attention_infer_scratch(B, T, D, 2));
            attention_infer_bf16(got, qkv, masked ? mask : NULL, b, causal, scratch, 2, B, T, D, H);
            /* qkv given as bfloat16 (a qkv layer writing bf16): the same, bit for bit */
            uint16_t *qkv16 = malloc(sizeof(uint16_t) * nqkv);
            float *from16 = test_alloc_floats(nout);
            for (size_t i = 0; i < nqkv; i++) qkv16[i] = bf16_bits(qkv[i]);
            attention_infer_bf16_io(NULL, from16, NULL, qkv16, masked ? mask : NULL, b, causal,
                                    scratch, 2, B, T, D, H);
            if (memcmp(from16, got, sizeof(float) * nout) != 0)
                fail_msg("T %d, D %d, H %d: bf16 qkv gives %.3g apart", T, D, H,
                         max_diff(from16, got, nout));
            free(qkv16), free(from16);
            attention_infer(fp32, qkv, masked ? mask : NULL, b, causal, scratch, 2, B, T, D, H);
            bf16_reference(want, slack, qkv, masked ? mask : NULL, b, causal, B, T, D, H);
            double d = 0, from_fp32 = 0;
            for (size_t i = 0; i < nout; i++) {
                d = fmax(d, fabs(got[i] - want[i]) - slack[i]);
                widest = fmax(widest, slack[i]);
                from_fp32 = fmax(from_fp32, fabs(got[i] - fp32[i]));
            }
            if (!(d <= 2e-5))
                fail_msg("T %d, D %d, H %d: bf16 attention off by %.3g beyond its slack", T, D, H,
                         d);
            worst = fmax(worst, d);
            if (T > 1) apart = fmin(apart, from_fp32);
            free(qkv), free(bias), free(got), free(fp32), free(want), free(slack), free(scratch);
        }
    print_message(
        "  bf16 attention: within %.3g beyond the bf16-operand reference's slack (at most "
        "%.3g), at least %.3g from fp32\n",
        worst, widest, apart);
    assert_true(apart > 5e-4);
}

/* ---- gemm_chain ---- */

/* A oneDNN state with room for running layers a and b (b may be NULL). */
static gemm_state *state_for(const gemm_weight *a, const gemm_weight *b) {
    vit_error err = {0};
    size_t bytes = gemm_workspace_bytes(a);
    if (b && gemm_workspace_bytes(b) > bytes) bytes = gemm_workspace_bytes(b);
    gemm_state *s = gemm_state_create(GEMM_ONEDNN, bytes, &err);
    assert_non_null(s);
    return s;
}

/* y [N, D] = y0 + fc2(gelu(fc1(x))) through layers prepared in precision, chained or not; N rows
 * of at most max_rows. Returns gemm_chain's answer (0 unchained), or -1 when the precision cannot
 * be prepared here. */
static int run_mlp(float *y, const float *y0, const float *x, const float *w1, const float *b1,
                   const float *w2, const float *b2, int N, int max_rows, int D, int I,
                   gemm_precision precision, int chain) {
    vit_error err = {0};
    gemm_weight *fc1 =
        gemm_prepare(GEMM_ONEDNN, precision, w1, b1, I, D, EPILOGUE_GELU, max_rows, &err);
    gemm_weight *fc2 =
        gemm_prepare(GEMM_ONEDNN, precision, w2, b2, D, I, EPILOGUE_ACCUMULATE, max_rows, &err);
    if (!fc1 || !fc2) {
        gemm_free(fc1), gemm_free(fc2);
        return -1;
    }
    const int chained = chain ? gemm_chain(fc1, fc2) : 0;
    gemm_state *s = state_for(fc1, fc2);
    float *h = test_alloc_floats((size_t)max_rows * I);
    memcpy(y, y0, sizeof(float) * (size_t)N * D);
    gemm_run(fc1, x, N, h, s);
    gemm_run(fc2, h, N, y, s);
    free(h);
    gemm_state_free(s);
    gemm_free(fc1), gemm_free(fc2);
    return chained;
}

/* fc1 -> fc2 chained in bf16 (where oneDNN has bf16 kernels) and int8 gives what the two layers
 * give unchained, bit for bit: oneDNN rounds fc1's output to bfloat16 as the unchained fc2
 * rounds its input; int8's fc1 quantises its output rows as fc2 would. fp32 is not chained. */
static void test_gemm_chain(void **state) {
    (void)state;
    if (!gemm_backend_available(GEMM_ONEDNN)) {
        print_message("  SKIPPED: no oneDNN here (nothing is chained)\n");
        return;
    }
    enum { D = 48, I = 200, ROWS = 37 }; /* I: a row of fc1 ends in a part of a vector */
    float *w1 = test_alloc_floats((size_t)I * D), *b1 = test_alloc_floats(I);
    float *w2 = test_alloc_floats((size_t)D * I), *b2 = test_alloc_floats(D);
    float *x = test_alloc_floats((size_t)ROWS * D), *y0 = test_alloc_floats((size_t)ROWS * D);
    float *plain = test_alloc_floats((size_t)ROWS * D), *chained = test_alloc_floats(ROWS * D);
    test_fill(w1, (size_t)I * D, -0.3f, 0.3f), test_fill(b1, I, -0.5f, 0.5f);
    test_fill(w2, (size_t)D * I, -0.3f, 0.3f), test_fill(b2, D, -0.5f, 0.5f);
    test_fill(x, (size_t)ROWS * D, -2, 2), test_fill(y0, (size_t)ROWS * D, -1, 1);
    const gemm_precision precisions[] = {PRECISION_BF16, PRECISION_INT8};
    for (int p = 0; p < 2; p++) {
        const char *name = gemm_precision_name(precisions[p]);
        if (precisions[p] == PRECISION_BF16 && !gemm_bf16_native(GEMM_ONEDNN)) {
            print_message("  %s: SKIPPED, no oneDNN bf16 kernels here\n", name);
            continue;
        }
        /* all rows (the layers' own primitive), then fewer (a primitive made for that count) */
        const int rows[] = {ROWS, ROWS - 5, 1};
        for (int k = 0; k < 3; k++) {
            const int N = rows[k];
            const int unchained =
                run_mlp(plain, y0, x, w1, b1, w2, b2, N, ROWS, D, I, precisions[p], 0);
            if (unchained < 0) {
                print_message("  %s: SKIPPED, oneDNN cannot prepare it here\n", name);
                break;
            }
            assert_int_equal(
                run_mlp(chained, y0, x, w1, b1, w2, b2, N, ROWS, D, I, precisions[p], 1), 1);
            if (memcmp(plain, chained, sizeof(float) * (size_t)N * D) != 0)
                fail_msg("%s, %d rows: chained MLP differs from unchained by %.3g", name, N,
                         max_diff(plain, chained, (size_t)N * D));
            if (k == 2)
                print_message("  %s: chained fc1 -> fc2 = unchained, bit for bit (37, 32 "
                              "and 1 rows)\n",
                              name);
        }
    }
    assert_int_equal(run_mlp(chained, y0, x, w1, b1, w2, b2, ROWS, ROWS, D, I, PRECISION_FP32, 1),
                     0);
    free(w1), free(b1), free(w2), free(b2), free(x), free(y0), free(plain), free(chained);
}

/* ---- int8 rows ---- */

/* y [N, width] for N rows of x: first's output, or, with second (first chained to it), second's
 * on first's hand-over in h; y starts as the residual y0 when there is one. */
static void run_rows(gemm_weight *first, gemm_weight *second, const float *x, const float *y0,
                     int N, int width, float *h, float *y, gemm_state *s) {
    if (y0) memcpy(y, y0, sizeof(float) * (size_t)N * width);
    if (second) {
        gemm_run(first, x, N, h, s);
        gemm_run(second, h, N, y, s);
    } else {
        gemm_run(first, x, N, y, s);
    }
}

/* An int8 layer's rows are independent (each quantised on its own, the integer sums exact), so
 * any number of rows at once (the layer's own primitive for all of them, or one made for fewer)
 * gives what the same rows give one at a time, bit for bit: with GELU, adding to a residual,
 * writing bf16, and handing over to a chained layer. */
static void test_int8_rows(void **state) {
    (void)state;
    if (!gemm_backend_available(GEMM_ONEDNN)) {
        print_message("  SKIPPED: no oneDNN here (int8 runs on oneDNN only)\n");
        return;
    }
    enum { IN = 48, OUT = 2048, ROWS = 600 };
    float *w1 = test_alloc_floats((size_t)OUT * IN), *b1 = test_alloc_floats(OUT);
    float *w2 = test_alloc_floats((size_t)IN * OUT), *b2 = test_alloc_floats(IN);
    float *x = test_alloc_floats((size_t)ROWS * IN), *y0 = test_alloc_floats((size_t)ROWS * OUT);
    float *h = test_alloc_floats((size_t)ROWS * OUT), *h1 = test_alloc_floats(OUT);
    float *all = test_alloc_floats((size_t)ROWS * OUT), *one = test_alloc_floats(ROWS * OUT);
    test_fill(w1, (size_t)OUT * IN, -0.3f, 0.3f), test_fill(b1, OUT, -0.5f, 0.5f);
    test_fill(w2, (size_t)IN * OUT, -0.05f, 0.05f), test_fill(b2, IN, -0.5f, 0.5f);
    test_fill(x, (size_t)ROWS * IN, -2, 2), test_fill(y0, (size_t)ROWS * OUT, -1, 1);
    const char *names[] = {"GELU", "adding to a residual", "writing bf16", "chained to fc2"};
    const gemm_epilogue epilogues[] = {EPILOGUE_GELU, EPILOGUE_ACCUMULATE, EPILOGUE_NONE,
                                       EPILOGUE_GELU};
    vit_error err = {0};
    for (int v = 0; v < 4; v++) {
        gemm_weight *f =
            gemm_prepare(GEMM_ONEDNN, PRECISION_INT8, w1, b1, OUT, IN, epilogues[v], ROWS, &err);
        gemm_weight *g = v == 3 ? gemm_prepare(GEMM_ONEDNN, PRECISION_INT8, w2, b2, IN, OUT,
                                               EPILOGUE_ACCUMULATE, ROWS, &err)
                                : NULL;
        if (!f || (v == 3 && !g)) {
            print_message("  SKIPPED: no int8 matmul on this CPU (%s)\n", err.msg);
            gemm_free(f), gemm_free(g);
            break;
        }
        if (v == 2) assert_int_equal(gemm_write_bf16(f), 1);
        if (v == 3) assert_int_equal(gemm_chain(f, g), 1);
        gemm_state *s = state_for(f, g);
        const int width = v == 3 ? IN : OUT;
        /* bytes of one output row: bfloat16 or float */
        const size_t row_bytes = (v == 2 ? sizeof(uint16_t) : sizeof(float)) * (size_t)width;
        const float *residual = v == 1 || v == 3 ? y0 : NULL;
        const int counts[] = {ROWS, 512, 100};
        for (int c = 0; c < 3; c++) {
            const int N = counts[c];
            run_rows(f, g, x, residual, N, width, h, all, s);
            for (int r = 0; r < N; r++)
                run_rows(f, g, x + (size_t)r * IN, residual ? residual + (size_t)r * width : NULL,
                         1, width, h1, (float *)(void *)((char *)one + r * row_bytes), s);
            if (memcmp(all, one, row_bytes * N) != 0)
                fail_msg("int8 %s, %d rows: differs from the rows one at a time", names[v], N);
        }
        print_message("  int8 %s: 600, 512 and 100 rows = the rows one at a time, bit for bit\n",
                      names[v]);
        gemm_state_free(s);
        gemm_free(f), gemm_free(g);
    }
    free(w1), free(b1), free(w2), free(b2), free(x), free(y0), free(h), free(h1), free(all),
        free(one);
}

/* ---- the GELUs of the reduced-precision layers ---- */

static double gelu_erf_double(double v) {
    return 0.5 * v * (1.0 + erf(v / sqrt(2.0)));
}

/* PyTorch's gelu(approximate="tanh"), HF's gelu_pytorch_tanh and gelu_new. */
static double gelu_tanh_double(double v) {
    return 0.5 * v * (1.0 + tanh(sqrt(2.0 / M_PI) * (v + 0.044715 * v * v * v)));
}

/* Bound on a GELU's float32 output against the double one of the same input: a few ulps (the
 * erf fit's ~2 ulp, or fast_expf's ~1 and the division's; a reciprocal estimate refined once), and
 * 1e-6 absolute near zero and for negative inputs, where the output is small. */
static double gelu_bound(double want) {
    return 4e-7 * fabs(want) + 1e-6;
}

static int gelu_within(double got, double want) {
    return fabs(got - want) <= gelu_bound(want);
}

static const int gelu_widths[] = {1, 2, 15, 16, 17, 31, 37, 64, 200};

/* A layer with the GELU epilogue gives the GELU (want, in double) of the same layer's output
 * without it: the products are the same, so this isolates the epilogue's own kernel, at widths
 * with and without a tail of fewer than 16 lanes. The largest error as a fraction of the bound goes
 * to *worst; 0, or -1 when the layer cannot be prepared here. */
static int check_gelu(gemm_backend backend, gemm_precision precision, gemm_epilogue epilogue,
                      double (*want_of)(double), double *worst) {
    enum { IN = 40, ROWS = 9 };
    *worst = 0;
    for (size_t k = 0; k < sizeof gelu_widths / sizeof *gelu_widths; k++) {
        const int OUT = gelu_widths[k];
        float *w = test_alloc_floats((size_t)OUT * IN), *b = test_alloc_floats(OUT);
        float *x = test_alloc_floats((size_t)ROWS * IN);
        /* 16 floats of -1 after the output: a tail mask too wide writes GELU(-1) there */
        float *plain = test_alloc_floats((size_t)ROWS * OUT);
        float *gelu = test_alloc_floats(ROWS * OUT + 16);
        for (int i = 0; i < 16; i++) gelu[ROWS * OUT + i] = -1.0f;
        test_fill(w, (size_t)OUT * IN, -0.5f, 0.5f), test_fill(b, OUT, -1, 1);
        /* outputs of about ±11: past erf's fit range of ±4·√2, and into the tanh form's clamp */
        test_fill(x, (size_t)ROWS * IN, -3, 3);
        vit_error err = {0};
        gemm_weight *f = gemm_prepare(backend, precision, w, b, OUT, IN, EPILOGUE_NONE, ROWS, &err);
        gemm_weight *g = gemm_prepare(backend, precision, w, b, OUT, IN, epilogue, ROWS, &err);
        if (!f || !g) {
            print_message("  SKIPPED: no %s matmul on this CPU (%s)\n",
                          gemm_precision_name(precision), err.msg);
            gemm_free(f), gemm_free(g);
            free(w), free(b), free(x), free(plain), free(gelu);
            return -1;
        }
        size_t bytes = gemm_workspace_bytes(f);
        if (gemm_workspace_bytes(g) > bytes) bytes = gemm_workspace_bytes(g);
        gemm_state *s = gemm_state_create(backend, bytes, &err);
        assert_non_null(s);
        gemm_run(f, x, ROWS, plain, s);
        gemm_run(g, x, ROWS, gelu, s);
        for (int i = 0; i < ROWS * OUT; i++) {
            const double v = plain[i], want = want_of(v);
            if (!gelu_within(gelu[i], want))
                fail_msg("%s %s %s, width %d, element %d: %.9g, want %.9g (of %.9g)",
                         gemm_backend_name(backend), gemm_precision_name(precision),
                         epilogue == EPILOGUE_GELU ? "GELU" : "tanh GELU", OUT, i, gelu[i], want,
                         v);
            const double e = fabs(gelu[i] - want) / gelu_bound(want);
            *worst = e > *worst ? e : *worst;
        }
        for (int i = 0; i < 16; i++)
            if (gelu[ROWS * OUT + i] != -1.0f)
                fail_msg("%s %s, width %d: float %d past the output written",
                         gemm_backend_name(backend), gemm_precision_name(precision), OUT, i);
        gemm_state_free(s);
        gemm_free(f), gemm_free(g);
        free(w), free(b), free(x), free(plain), free(gelu);
    }
    return 0;
}

/* int8's GELU (erf) kernel: within the bound of the GELU in double (it failed with the tail's
 * mask or the Newton step broken). */
static void test_int8_gelu(void **state) {
    (void)state;
    if (!gemm_backend_available(GEMM_ONEDNN)) {
        print_message("  SKIPPED: no oneDNN here (int8 runs on oneDNN only)\n");
        return;
    }
    double worst;
    if (check_gelu(GEMM_ONEDNN, PRECISION_INT8, EPILOGUE_GELU, gelu_erf_double, &worst) == 0)
        print_message("  int8 GELU = GELU in double of the same products, widths 1-200: |error| "
                      "at most %.3g of the bound\n",
                      worst);
}

/* The tanh GELU (SigLIP's gelu_pytorch_tanh) of int8 (vit's own kernel, AVX-512 or
 * gelu_tanh_fast) and of bf16 (oneDNN's eltwise_gelu_tanh post-op; vit's gelu_tanh_fast on
 * OpenBLAS) against the one in double of the same products. */
static void test_gelu_tanh_epilogue(void **state) {
    (void)state;
    const struct {
        gemm_backend backend;
        gemm_precision precision;
    } runs[] = {{GEMM_ONEDNN, PRECISION_INT8},
                {GEMM_ONEDNN, PRECISION_BF16},
                {GEMM_OPENBLAS, PRECISION_BF16}};
    for (int r = 0; r < 3; r++) {
        if (!gemm_backend_available(runs[r].backend)) {
            print_message("  %s: SKIPPED (not in this build)\n",
                          gemm_backend_name(runs[r].backend));
            continue;
        }
        double worst;
        if (check_gelu(runs[r].backend, runs[r].precision, EPILOGUE_GELU_TANH, gelu_tanh_double,
                       &worst) == 0)
            print_message("  %s %s tanh GELU = tanh GELU in double of the same products, widths "
                          "1-200: |error| at most %.3g of the bound\n",
                          gemm_backend_name(runs[r].backend),
                          gemm_precision_name(runs[r].precision), worst);
    }
}

/* gelu_tanh_fast, the portable kernel (int8's without AVX-512, bf16's on OpenBLAS), against the
 * tanh GELU in double: every 1/1024 on [-16, 16] (the clamp-free quotient's whole range: past -16
 * the GELU is below 1e-6 and past 16 it is x in float), at lengths 1-40 (the vector loop's
 * remainders), and infinities, NaN, ±0 and huge values. */
static void test_gelu_tanh_fast(void **state) {
    (void)state;
    enum { N = 32 * 1024 + 1 };
    float *x = test_alloc_floats(N), *y = test_alloc_floats(N);
    for (int i = 0; i < N; i++) x[i] = (float)(i - N / 2) / 1024.0f;
    memcpy(y, x, sizeof(float) * N);
    gelu_tanh_fast(y, N);
    double worst = 0;
    for (int i = 0; i < N; i++) {
        const double want = gelu_tanh_double(x[i]);
        if (!gelu_within(y[i], want))
            fail_msg("gelu_tanh_fast(%.9g) = %.9g, want %.9g", x[i], y[i], want);
        const double e = fabs(y[i] - want) / gelu_bound(want);
        worst = e > worst ? e : worst;
    }
    for (int n = 1; n <= 40; n++) { /* y[n] is left as it was */
        memcpy(y, x + 11 * 1024, sizeof(float) * (n + 1));
        gelu_tanh_fast(y, (size_t)n);
        for (int i = 0; i < n; i++)
            if (!gelu_within(y[i], gelu_tanh_double(x[11 * 1024 + i])))
                fail_msg("gelu_tanh_fast over %d floats, element %d: %.9g", n, i, y[i]);
        assert_true(y[n] == x[11 * 1024 + n]);
    }
    const float special[] = {0.0f, -0.0f, 1e-30f, -1e-30f, 30.0f, -30.0f, 1e30f, -1e30f};
    float got[8], inf[] = {INFINITY, NAN};
    memcpy(got, special, sizeof got);
    gelu_tanh_fast(got, 8);
    for (int i = 0; i < 8; i++)
        if (!gelu_within(got[i], gelu_tanh_double(special[i])))
            fail_msg("gelu_tanh_fast(%.9g) = %.9g", special[i], got[i]);
    assert_true(!signbit(got[0]) && signbit(got[1]) && got[4] == 30.0f && got[6] == 1e30f);
    gelu_tanh_fast(inf, 2);
    assert_true(inf[0] == INFINITY && isnan(inf[1]));
    print_message(
        "  gelu_tanh_fast = tanh GELU in double on [-16, 16]: |error| at most %.3g of the bound\n",
        worst);
    free(x), free(y);
}

/* ---- bf16 inputs written by their producers ---- */

/* What a layer taking bf16 gets from the norm before it and from the attention, written as
 * bfloat16 by them, is bit for bit bf16_bits of the floats they would write; and gemm_run_bf16 of
 * those bits gives gemm_run's result for the floats. */
static void test_bf16_inputs(void **state) {
    (void)state;
    enum { N = 70, D = 64, H = 2, B = 2, T = 35 }; /* N >= 64: the norm's parallel path */
    float *x = test_alloc_floats((size_t)N * D), *w = test_alloc_floats(D);
    float *b = test_alloc_floats(D), *y = test_alloc_floats((size_t)N * D);
    uint16_t *y16 = malloc(sizeof(uint16_t) * N * D);
    test_fill(x, (size_t)N * D, -3, 5), test_fill(w, D, 0.5f, 1.5f), test_fill(b, D, -1, 1);
    layernorm_forward(y, NULL, NULL, x, w, b, N, D, 1e-6f);
    layernorm_forward_bf16(y16, x, w, b, N, D, 1e-6f);
    for (int i = 0; i < N * D; i++)
        if (y16[i] != bf16_bits(y[i]))
            fail_msg("norm output %d: %04x, bf16_bits of the float %04x", i, y16[i],
                     bf16_bits(y[i]));
    /* the attention */
    const size_t nqkv = (size_t)B * T * 3 * D, nout = (size_t)B * T * D;
    float *qkv = test_alloc_floats(nqkv), *out = test_alloc_floats(nout);
    uint16_t *out16 = malloc(sizeof(uint16_t) * nout);
    test_fill(qkv, nqkv, -1.5f, 1.5f);
    float *scratch = test_alloc_floats(attention_infer_scratch(B, T, D, 2));
    attention_infer_bf16(out, qkv, NULL, NULL, 0, scratch, 2, B, T, D, H);
    if (attention_infer_bf16_io(out16, out, qkv, NULL, NULL, NULL, 0, scratch, 2, B, T, D, H)) {
        for (size_t i = 0; i < nout; i++)
            if (out16[i] != bf16_bits(out[i]))
                fail_msg("attention output %zu: %04x, bf16_bits of the float %04x", i, out16[i],
                         bf16_bits(out[i]));
    } else {
        print_message("  attention: no bf16 kernels here, floats written (checked elsewhere)\n");
    }
    /* a layer taking bf16 (weight [D, D]) */
    vit_error err = {0};
    float *square = test_alloc_floats((size_t)D * D);
    test_fill(square, (size_t)D * D, -0.2f, 0.2f);
    gemm_weight *layer =
        gemm_backend_available(GEMM_ONEDNN)
            ? gemm_prepare(GEMM_ONEDNN, PRECISION_BF16, square, b, D, D, EPILOGUE_NONE, N, &err)
            : NULL;
    if (layer && gemm_takes_bf16(layer)) {
        gemm_state *st = gemm_state_create(GEMM_ONEDNN, gemm_workspace_bytes(layer), &err);
        float *from_floats = test_alloc_floats((size_t)N * D),
              *from_bits = test_alloc_floats(N * D);
        gemm_run(layer, y, N, from_floats, st);
        gemm_run_bf16(layer, y16, N, from_bits, st);
        assert_memory_equal(from_floats, from_bits, sizeof(float) * N * D);
        free(from_floats), free(from_bits);
        gemm_state_free(st);
        print_message("  bf16 inputs from the norm and the attention = bf16_bits of their floats; "
                      "a layer on them = on the floats, bit for bit\n");
    } else {
        print_message("  no oneDNN bf16 kernels here: the norm's bits checked, no layer takes "
                      "bf16\n");
    }
    gemm_free(layer);
    /* a layer writing bf16 (qkv for the attention): bf16_bits of what it writes as floats */
    const gemm_precision precisions[] = {PRECISION_BF16, PRECISION_INT8};
    float *w2 = test_alloc_floats((size_t)3 * D * D), *floats = test_alloc_floats(3 * N * D);
    float *bits = test_alloc_floats((size_t)3 * N * D), *b2 = test_alloc_floats((size_t)3 * D);
    test_fill(w2, (size_t)3 * D * D, -0.2f, 0.2f), test_fill(b2, (size_t)3 * D, -0.5f, 0.5f);
    for (int k = 0; k < 2 && gemm_backend_available(GEMM_ONEDNN); k++) {
        gemm_weight *plain =
            gemm_prepare(GEMM_ONEDNN, precisions[k], w2, b2, 3 * D, D, EPILOGUE_NONE, N, &err);
        gemm_weight *rounding =
            gemm_prepare(GEMM_ONEDNN, precisions[k], w2, b2, 3 * D, D, EPILOGUE_NONE, N, &err);
        if (!plain || !rounding || !gemm_write_bf16(rounding)) {
            print_message("  %s: no layer writes bf16 here\n", gemm_precision_name(precisions[k]));
            gemm_free(plain), gemm_free(rounding);
            continue;
        }
        assert_true(gemm_writes_bf16(rounding) && !gemm_writes_bf16(plain));
        gemm_state *st = state_for(rounding, plain);
        const int rows[] = {N, 5};
        for (int r = 0; r < 2; r++) {
            gemm_run(plain, x, rows[r], floats, st);
            gemm_run(rounding, x, rows[r], bits, st);
            const uint16_t *got = (const uint16_t *)(const void *)bits;
            for (int i = 0; i < rows[r] * 3 * D; i++)
                if (got[i] != bf16_bits(floats[i]))
                    fail_msg("%s, %d rows, output %d: %04x, bf16_bits of the float %04x",
                             gemm_precision_name(precisions[k]), rows[r], i, got[i],
                             bf16_bits(floats[i]));
        }
        print_message("  %s: a layer writing bf16 writes bf16_bits of its floats\n",
                      gemm_precision_name(precisions[k]));
        gemm_state_free(st);
        gemm_free(plain), gemm_free(rounding);
    }
    free(w2), free(b2), free(floats), free(bits), free(square);
    free(x), free(w), free(b), free(y), free(y16), free(qkv), free(out), free(out16), free(scratch);
}

int main(void) {
    if (getenv("GRADCHECK_SEED")) test_seed(strtoull(getenv("GRADCHECK_SEED"), NULL, 10));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layer_scale_gradients),
        cmocka_unit_test(test_swiglu_gradients),
        cmocka_unit_test(test_geglu_gradients),
        cmocka_unit_test(test_rotary_gradients),
        cmocka_unit_test(test_rotary_by_hand),
        cmocka_unit_test(test_alibi_by_hand),
        cmocka_unit_test(test_geglu_by_hand),
        cmocka_unit_test(test_bias_gradients),
        cmocka_unit_test(test_all_options_gradients),
        cmocka_unit_test(test_inference_matches_training),
        cmocka_unit_test(test_attention_infer_bias),
        cmocka_unit_test(test_attention_infer_bf16),
        cmocka_unit_test(test_gemm_chain),
        cmocka_unit_test(test_int8_rows),
        cmocka_unit_test(test_int8_gelu),
        cmocka_unit_test(test_gelu_tanh_epilogue),
        cmocka_unit_test(test_gelu_tanh_fast),
        cmocka_unit_test(test_bf16_inputs),
    };
    return cmocka_run_group_tests_name("encoder_options", tests, NULL, NULL);
}
