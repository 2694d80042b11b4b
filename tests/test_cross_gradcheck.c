/* A decoder's layers (the encoder block with cross-attention, vit/core/encoder.h) in training:
 * every parameter's gradient, the input's and the cross-attended states' against five-point
 * finite differences (testutil.h: gradcheck_tensor; test_gradcheck.c explains the stencil, the
 * steps and the error measure), pre-LN (GPT-2) and post-LN (TrOCR), with a padding mask, hidden
 * dropout (fixed masks) and several sequences reading one image. The training forward also gives
 * the inference forward's numbers (the lead's cached path: all rows at once, and row by row).
 *
 * Tolerance: GRADCHECK_TOL (1e-2 relative above 1e-2, absolute below), as every gradient check of
 * the project: the losses are float32 computations, whose rounding noise the stencil divides by
 * the step. */
#include "tests/testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vit/core/encoder.h"
#include "vit/core/ops.h"

enum { L = 2, T = 4, D = 8, H = 2, I = 16, S = 5, C = 6, MAX_B = 3 };
#define N_TENSORS 20

static const char *names[N_TENSORS] = {
    "ln1_w", "ln1_b", "qkv_w", "qkv_b", "proj_w", "proj_b", "ln2_w", "ln2_b", "fc1_w",   "fc1_b",
    "fc2_w", "fc2_b", "lnx_w", "lnx_b", "xq_w",   "xq_b",   "xkv_w", "xkv_b", "xproj_w", "xproj_b"};

static size_t tensor_size(int i) {
    const size_t sizes[N_TENSORS] = {D,     D,     3 * D * D, 3 * D, D * D, D, D,
                                     D,     I * D, I,         D * I, D,     D, D,
                                     D * D, D,     2 * D * C, 2 * D, D * D, D};
    return sizes[i];
}

static size_t layer_floats(void) {
    size_t n = 0;
    for (int i = 0; i < N_TENSORS; i++) n += tensor_size(i);
    return n;
}

/* The 20 tensors of layer l in block, in the order of names[]. */
static encoder_layer layout(float *block, int l, float *p[N_TENSORS]) {
    float *at = block + (size_t)l * layer_floats();
    for (int i = 0; i < N_TENSORS; i++) p[i] = at, at += tensor_size(i);
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
                           .lnx_w = p[12],
                           .lnx_b = p[13],
                           .xq_w = p[14],
                           .xq_b = p[15],
                           .xkv_w = p[16],
                           .xkv_b = p[17],
                           .xproj_w = p[18],
                           .xproj_b = p[19]};
}

typedef struct {
    encoder_shape s;
    encoder_layer w[L], g[L];
    float *wp[L][N_TENSORS], *gp[L][N_TENSORS];
    float *params, *grads;
    encoder_tape tape;
    const uint8_t *mask;
    int B, images, rows_per_image;
    float drop;
    float *x0, *x, *states, *wout;
} dec_case;

static double dot(const float *w, const float *x, size_t n) {
    double s = 0.0;
    for (size_t i = 0; i < n; i++) s += (double)w[i] * x[i];
    return s;
}

/* Σ wout·layers(x0) with the states cross-attended; the same dropout masks every time. */
static double dec_loss(void *p) {
    dec_case *c = p;
    const size_t n = (size_t)c->B * T * D;
    uint64_t rng = 7;
    const encoder_run run = {.mode = ENCODER_TRAIN, .hidden_drop = c->drop, .rng = &rng};
    encoder_tape_cross_states(&c->tape, &c->s, c->w, c->states, c->images, S, c->rows_per_image);
    memcpy(c->x, c->x0, n * sizeof(float));
    assert_int_equal(encoder_forward(&c->s, c->w, &run, NULL, &c->tape, c->x, c->mask, c->B, T), 0);
    return dot(c->wout, c->x, n);
}

static void dec_case_init(dec_case *c, int post_norm, activation_kind act, int B,
                          int rows_per_image) {
    memset(c, 0, sizeof *c);
    c->s = (encoder_shape){.layers = L,
                           .dim = D,
                           .heads = H,
                           .mlp_dim = I,
                           .act = act,
                           .eps = 1e-5f,
                           .post_norm = post_norm,
                           .causal = 1,
                           .cross = 1,
                           .cross_dim = C};
    c->B = B;
    c->rows_per_image = rows_per_image;
    c->images = (B + rows_per_image - 1) / rows_per_image;
    c->params = test_alloc_floats(layer_floats() * L);
    c->grads = test_alloc_floats(layer_floats() * L);
    test_fill(c->params, layer_floats() * L, -0.3f, 0.3f);
    for (int l = 0; l < L; l++) {
        c->w[l] = layout(c->params, l, c->wp[l]);
        c->g[l] = layout(c->grads, l, c->gp[l]);
        for (int i = 0; i < D; i++) /* LayerNorm weights near 1 */
            c->w[l].ln1_w[i] += 1, c->w[l].ln2_w[i] += 1, c->w[l].lnx_w[i] += 1;
    }
    const size_t n = (size_t)B * T * D, ns = (size_t)c->images * S * C;
    c->x0 = test_alloc_floats(n), c->x = test_alloc_floats(n), c->wout = test_alloc_floats(n);
    c->states = test_alloc_floats(ns);
    test_fill(c->x0, n, -1, 1), test_fill(c->wout, n, -1, 1), test_fill(c->states, ns, -1, 1);
    assert_int_equal(encoder_tape_alloc(&c->tape, &c->s, MAX_B, T), 0);
    assert_int_equal(encoder_tape_alloc_cross(&c->tape, &c->s, S), 0);
}

static void dec_case_free(dec_case *c) {
    encoder_tape_free(&c->tape);
    free(c->params), free(c->grads), free(c->x0), free(c->x), free(c->wout), free(c->states);
}

static void expect_close(const char *what, double err, double max_grad) {
    print_message("  %-40s max rel err %.2e  (max |g| %.2e)\n", what, err, max_grad);
    if (!(err <= GRADCHECK_TOL))
        fail_msg("%s: max relative error %.3g above %g", what, err, GRADCHECK_TOL);
}

static void check_decoder(const char *what, dec_case *c) {
    const size_t n = (size_t)c->B * T * D, ns = (size_t)c->images * S * C;
    float *dx = test_alloc_floats(n), *dstates = test_alloc_floats(ns);
    for (size_t i = 0; i < ns; i++) dstates[i] = NAN; /* overwritten, every element */
    dec_loss(c);
    memcpy(dx, c->wout, n * sizeof(float));
    const encoder_run run = {
        .mode = ENCODER_TRAIN, .hidden_drop = c->drop, .d_cross_states = dstates};
    encoder_backward(&c->s, c->w, c->g, &run, &c->tape, dx, c->B, T);
    print_message(" %s\n", what);
    char label[64];
    double max_grad;
    for (int l = 0; l < L; l++)
        for (int i = 0; i < N_TENSORS; i++) {
            snprintf(label, sizeof label, "layer %d %s", l, names[i]);
            const double e =
                gradcheck_tensor(c->wp[l][i], c->gp[l][i], tensor_size(i), dec_loss, c, &max_grad);
            expect_close(label, e, max_grad);
        }
    expect_close("input dx", gradcheck_tensor(c->x0, dx, n, dec_loss, c, &max_grad), max_grad);
    expect_close("cross-attended states",
                 gradcheck_tensor(c->states, dstates, ns, dec_loss, c, &max_grad), max_grad);
    free(dx), free(dstates);
}

static void test_pre_norm_decoder(void **state) {
    (void)state;
    /* GPT-2's layout: pre-LN, gelu_tanh; sequence 1 pads its last token; hidden dropout */
    static const uint8_t mask[2 * T] = {1, 1, 1, 1, 1, 1, 1, 0};
    dec_case c;
    dec_case_init(&c, 0, ACT_GELU_TANH, 2, 1);
    c.mask = mask;
    c.drop = 0.2f;
    check_decoder("pre-LN decoder, causal + padding, dropout 0.2 (fixed masks)", &c);
    dec_case_free(&c);
}

/* GPT-2's scale_attn_by_inverse_layer_idx: layer l's queries times 1/(l + 1) (q_scale), in the
 * self- and the cross-attention; its gradient reaches qkv and xq through the scale. */
static void test_pre_norm_decoder_scaled_by_layer(void **state) {
    (void)state;
    dec_case c;
    dec_case_init(&c, 0, ACT_GELU_TANH, 2, 1);
    for (int l = 0; l < L; l++) c.w[l].q_scale = 1.0f / (float)(l + 1);
    c.w[0].q_scale = 0.75f; /* layer 0's 1/1 would not show a missing scale */
    check_decoder("pre-LN decoder, queries scaled 0.75 and 1/2", &c);
    dec_case_free(&c);
}

static void test_post_norm_decoder(void **state) {
    (void)state;
    /* TrOCR's layout: post-LN, gelu; three sequences, two of them reading image 0 */
    dec_case c;
    dec_case_init(&c, 1, ACT_GELU, 3, 2);
    check_decoder("post-LN decoder, 3 sequences on 2 images", &c);
    dec_case_free(&c);
}

/* The training forward (keep, no dropout) against the inference path with a key/value cache:
 * all T rows in one forward, and one row per forward as generation runs. */
static void check_inference_matches(int post_norm, float q_scale) {
    enum { B = 3, K = 2 };
    dec_case c;
    dec_case_init(&c, post_norm, ACT_GELU, B, K);
    for (int l = 0; l < L; l++) c.w[l].q_scale = q_scale / (float)(l + 1);
    dec_loss(&c); /* c.x: the training forward's output */
    encoder_scratch inf;
    encoder_kv_cache cache;
    const encoder_run run = {.mode = ENCODER_INFER};
    assert_int_equal(encoder_scratch_alloc(&inf, &c.s, B, T), 0);
    assert_int_equal(encoder_kv_cache_alloc(&cache, &c.s, B, T, c.images, S), 0);
    float *y = test_alloc_floats((size_t)B * T * D), *row = test_alloc_floats((size_t)B * D);
    encoder_kv_cache_states(&cache, &c.s, c.w, NULL, c.states, c.images, S, K);
    memcpy(y, c.x0, sizeof(float) * B * T * D);
    encoder_forward_cached(&c.s, c.w, &run, &inf, &cache, y, B, T);
    double all = 0.0, step = 0.0;
    for (size_t i = 0; i < (size_t)B * T * D; i++) all = fmax(all, fabs(y[i] - c.x[i]));
    encoder_kv_cache_states(&cache, &c.s, c.w, NULL, c.states, c.images, S, K); /* empties it */
    for (int t = 0; t < T; t++) {
        for (int b = 0; b < B; b++)
            memcpy(row + b * D, c.x0 + ((size_t)b * T + t) * D, sizeof(float) * D);
        encoder_forward_cached(&c.s, c.w, &run, &inf, &cache, row, B, 1);
        for (int b = 0; b < B; b++)
            for (int d = 0; d < D; d++)
                step = fmax(step, fabs(row[b * D + d] - c.x[((size_t)b * T + t) * D + d]));
    }
    print_message("  %s: training forward vs inference, all rows %.1e, row by row %.1e\n",
                  post_norm ? "post-LN" : "pre-LN", all, step);
    if (!(all <= 1e-5 && step <= 1e-5)) fail_msg("training and inference forwards differ");
    encoder_scratch_free(&inf);
    encoder_kv_cache_free(&cache);
    free(y), free(row);
    dec_case_free(&c);
}

static void test_training_forward_is_inference_forward(void **state) {
    (void)state;
    check_inference_matches(0, 0.0f);
    check_inference_matches(1, 0.0f);
    check_inference_matches(0, 0.75f); /* queries scaled per layer (GPT-2's option) */
}

/* Row b of a step's input: position t of sequence b of x. */
static void step_rows(float *out, const float *x, int B, int t) {
    for (int b = 0; b < B; b++)
        memcpy(out + (size_t)b * D, x + ((size_t)b * T + t) * D, sizeof(float) * D);
}

/* Steps t0..t1-1 of x on the cache, one position per row each; out: the last step's rows. */
static void run_steps(dec_case *c, encoder_scratch *sc, encoder_kv_cache *cache, const float *x,
                      int B, int t0, int t1, float *out) {
    const encoder_run run = {.mode = ENCODER_INFER};
    for (int t = t0; t < t1; t++) {
        step_rows(out, x, B, t);
        encoder_forward_cached(&c->s, c->w, &run, sc, cache, out, B, 1);
    }
}

/* The cache as beam search uses it: after T0 steps the rows take parents {2, 2, 0} and go on with
 * their own inputs; each row must then give what one forward over its parent's first T0 positions
 * and its own last ones gives (the reorder moved every layer's keys and values). A reset starts
 * over: the first steps then give the same numbers bit for bit (the cache holds 2T positions, so
 * a cache not emptied would give other numbers, not write past its end). */
static void test_kv_cache_reorder_and_reset(void **state) {
    (void)state;
    enum { B = 3, T0 = 2 };
    dec_case c;
    dec_case_init(&c, 0, ACT_GELU, B, B); /* three rows on one image */
    const size_t n = (size_t)B * T * D;
    float *x1 = test_alloc_floats(n), *whole = test_alloc_floats(n);
    float *step = test_alloc_floats((size_t)B * D), *first = test_alloc_floats((size_t)B * D);
    test_fill(x1, n, -1, 1);
    const int parent[B] = {2, 2, 0};
    for (int b = 0; b < B; b++) { /* row b: its parent's first T0 positions, then its own */
        memcpy(whole + (size_t)b * T * D, c.x0 + (size_t)parent[b] * T * D, sizeof(float) * T0 * D);
        memcpy(whole + ((size_t)b * T + T0) * D, x1 + ((size_t)b * T + T0) * D,
               sizeof(float) * (T - T0) * D);
    }
    encoder_scratch sc;
    encoder_kv_cache cache;
    const encoder_run run = {.mode = ENCODER_INFER};
    assert_int_equal(encoder_scratch_alloc(&sc, &c.s, B, T), 0);
    assert_int_equal(encoder_kv_cache_alloc(&cache, &c.s, B, 2 * T, 1, S), 0);
    encoder_kv_cache_states(&cache, &c.s, c.w, NULL, c.states, 1, S, B);
    encoder_forward_cached(&c.s, c.w, &run, &sc, &cache, whole, B, T);
    encoder_kv_cache_reset(&cache);
    run_steps(&c, &sc, &cache, c.x0, B, 0, T0, first);
    encoder_kv_cache_reorder(&cache, parent, B);
    run_steps(&c, &sc, &cache, x1, B, T0, T, step);
    assert_int_equal(cache.past, T);
    double worst = 0.0; /* the last step's rows against the whole sequences' last rows */
    for (int b = 0; b < B; b++)
        for (int d = 0; d < D; d++)
            worst = fmax(worst, fabs(step[b * D + d] - whole[((size_t)b * T + T - 1) * D + d]));
    print_message("  reordered cache against whole sequences: %.1e\n", worst);
    if (!(worst <= 1e-5)) fail_msg("the reordered cache does not continue the parents' rows");
    encoder_kv_cache_reset(&cache);
    assert_int_equal(cache.past, 0);
    run_steps(&c, &sc, &cache, c.x0, B, 0, T0, step);
    assert_memory_equal(step, first, sizeof(float) * B * D);
    encoder_scratch_free(&sc);
    encoder_kv_cache_free(&cache);
    free(x1), free(whole), free(step), free(first);
    dec_case_free(&c);
}

static void test_modes_refused(void **state) {
    (void)state;
    dec_case c;
    dec_case_init(&c, 0, ACT_GELU, 2, 1);
    uint64_t rng = 1;
    /* the cross-attention weights have no dropout: refused rather than silently skipped */
    const encoder_run both = {
        .mode = ENCODER_TRAIN, .hidden_drop = 0.1f, .attn_drop = 0.1f, .rng = &rng};
    const encoder_run hidden = {.mode = ENCODER_TRAIN, .hidden_drop = 0.1f, .rng = &rng};
    assert_int_equal(encoder_run_check(&c.s, &both, NULL, &c.tape), -1);
    assert_int_equal(encoder_run_check(&c.s, &hidden, NULL, &c.tape), 0);
    /* dropout without an rng, and in an explanation */
    const encoder_run no_rng = {.mode = ENCODER_TRAIN, .hidden_drop = 0.1f};
    const encoder_run explain = {.mode = ENCODER_EXPLAIN, .hidden_drop = 0.1f, .rng = &rng};
    assert_int_equal(encoder_run_check(&c.s, &no_rng, NULL, &c.tape), -1);
    assert_int_equal(encoder_run_check(&c.s, &explain, NULL, &c.tape), -1);
    /* a tape without the cross-attention's training buffers, for training and for inference
     * (no states to read) */
    encoder_tape plain;
    encoder_scratch sc;
    const encoder_run train = {.mode = ENCODER_TRAIN}, infer = {.mode = ENCODER_INFER};
    assert_int_equal(encoder_tape_alloc(&plain, &c.s, 2, T), 0);
    assert_int_equal(encoder_scratch_alloc(&sc, &c.s, 2, T), 0);
    assert_int_equal(encoder_run_check(&c.s, &train, &sc, &plain), -1);
    assert_int_equal(encoder_run_check(&c.s, &infer, &sc, &plain), -1);
    assert_int_equal(encoder_run_check(&c.s, &infer, &sc, &c.tape), 0);
    assert_int_equal(encoder_run_check(&c.s, &train, &sc, NULL), -1);
    assert_int_equal(encoder_tape_alloc_cross(&plain, &c.s, 0), -1);
    encoder_tape_free(&plain);
    encoder_scratch_free(&sc);
    dec_case_free(&c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pre_norm_decoder),
        cmocka_unit_test(test_pre_norm_decoder_scaled_by_layer),
        cmocka_unit_test(test_post_norm_decoder),
        cmocka_unit_test(test_training_forward_is_inference_forward),
        cmocka_unit_test(test_kv_cache_reorder_and_reset),
        cmocka_unit_test(test_modes_refused),
    };
    return cmocka_run_group_tests_name("cross_gradcheck", tests, NULL, NULL);
}
