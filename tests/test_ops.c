/* The building blocks on cases small enough to work by hand; every expected value is derived in
 * the comment beside it (or is a published constant), never by running the same code twice. */
#include "tests/testutil.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vit/base/rng.h"
#include "vit/core/ops.h"

/* float32 arithmetic on O(1) values: a few ulp of error, well under 1e-6. */
#define TOL 1e-6

static void expect_floats(const float *got, const double *want, int n, double tol) {
    for (int i = 0; i < n; i++)
        if (fabs((double)got[i] - want[i]) > tol)
            fail_msg("element %d: got %.9g, want %.9g (tol %g)", i, got[i], want[i], tol);
}

static void test_linear_forward(void **state) {
    (void)state;
    /* inp [[1,2,3],[4,5,6]], W [[1,0,-1],[0.5,0.5,0.5]], b [1,-1]:
     * row 0: 1-3+1 = -1, 0.5·6-1 = 2;  row 1: 4-6+1 = -1, 0.5·15-1 = 6.5 */
    const float inp[] = {1, 2, 3, 4, 5, 6}, w[] = {1, 0, -1, 0.5f, 0.5f, 0.5f}, b[] = {1, -1};
    float out[4];
    linear_forward(out, inp, w, b, 2, 3, 2);
    expect_floats(out, (const double[]){-1, 2, -1, 6.5}, 4, TOL);
    linear_forward(out, inp, w, NULL, 2, 3, 2); /* no bias: the same minus b */
    expect_floats(out, (const double[]){-2, 3, -2, 7.5}, 4, TOL);
}

static void test_linear_backward(void **state) {
    (void)state;
    /* dout = identity [[1,0],[0,1]]: dinp = dout·W = W; dW = doutᵀ·inp = inp; db = [1, 1].
     * dW, db start at 1 and must accumulate to inp + 1 and 2; dinp starts as garbage and is
     * overwritten. */
    const float inp[] = {1, 2, 3, 4, 5, 6}, w[] = {1, 0, -1, 0.5f, 0.5f, 0.5f},
                dout[] = {1, 0, 0, 1};
    float dinp[6] = {9, 9, 9, 9, 9, 9}, dw[6], db[2] = {1, 1};
    for (int i = 0; i < 6; i++) dw[i] = 1;
    linear_backward(dinp, dw, db, dout, inp, w, 2, 3, 2);
    expect_floats(dinp, (const double[]){1, 0, -1, 0.5, 0.5, 0.5}, 6, TOL);
    expect_floats(dw, (const double[]){2, 3, 4, 5, 6, 7}, 6, TOL);
    expect_floats(db, (const double[]){2, 2}, 2, TOL);
}

/* x rounded to bfloat16, ties to even, by its bits (finite x). */
static double bf16_of(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
    float r;
    memcpy(&r, &u, sizeof r);
    return r;
}

/* Σ_k a[n,k]·w[o,k] (+ b[o]) in double, the operands rounded (or not) to bfloat16 first. */
static void linear_reference(double *out, const float *a, const float *w, const float *b, int N,
                             int IN, int OUT, int rounded) {
    for (int n = 0; n < N; n++)
        for (int o = 0; o < OUT; o++) {
            double sum = b ? b[o] : 0.0;
            for (int k = 0; k < IN; k++) {
                const float x = a[(size_t)n * IN + k], y = w[(size_t)o * IN + k];
                sum += rounded ? bf16_of(x) * bf16_of(y) : (double)x * y;
            }
            out[(size_t)n * OUT + o] = sum;
        }
}

/* The bf16 training products (OPS_BLAS_ONEDNN_BF16): each product of two bfloat16 numbers is
 * exact in fp32, so the results are the double sums of the rounded operands but for the fp32
 * summation (37..70 terms of size ~1: under 1e-4), and measurably not the unrounded ones. All
 * three layouts the training ops use: forward (B transposed, bias as beta = 1), dinp, dweight
 * (A transposed, accumulating). */
static void test_linear_bf16(void **state) {
    (void)state;
    if (ops_set_blas(OPS_BLAS_ONEDNN_BF16) != 0) {
        fprintf(stderr, "SKIPPED: no oneDNN bf16 kernels here (build or CPU)\n");
        skip();
    }
    enum { N = 37, IN = 70, OUT = 45 };
    float *inp = malloc(sizeof(float) * N * IN), *w = malloc(sizeof(float) * OUT * IN),
          *b = malloc(sizeof(float) * OUT), *out = malloc(sizeof(float) * N * OUT),
          *dout = malloc(sizeof(float) * N * OUT), *dinp = malloc(sizeof(float) * N * IN),
          *dw = malloc(sizeof(float) * OUT * IN), *db = calloc(OUT, sizeof(float));
    double *want = malloc(sizeof(double) * N * IN * OUT), *plain = malloc(sizeof(double) * N * OUT);
    for (int i = 0; i < N * IN; i++) inp[i] = (float)sin(0.37 * i + 0.1) * 1.3f;
    for (int i = 0; i < OUT * IN; i++) w[i] = (float)cos(0.91 * i) * 0.7f;
    for (int i = 0; i < OUT; i++) b[i] = 0.01f * i;
    for (int i = 0; i < N * OUT; i++) dout[i] = (float)sin(1.7 * i + 0.3);
    for (int i = 0; i < OUT * IN; i++) dw[i] = 0.5f; /* dW accumulates onto it */
    linear_forward(out, inp, w, b, N, IN, OUT);
    linear_reference(want, inp, w, b, N, IN, OUT, 1);
    linear_reference(plain, inp, w, b, N, IN, OUT, 0);
    double off_plain = 0;
    for (int i = 0; i < N * OUT; i++) off_plain = fmax(off_plain, fabs(out[i] - plain[i]));
    expect_floats(out, want, N * OUT, 1e-4);
    if (off_plain < 1e-3)
        fail_msg("bf16 products as close as %g to fp32's: not rounded", off_plain);
    linear_backward(dinp, dw, db, dout, inp, w, N, IN, OUT);
    for (int n = 0; n < N; n++) /* dinp = dout · W */
        for (int k = 0; k < IN; k++) {
            double sum = 0;
            for (int o = 0; o < OUT; o++)
                sum += bf16_of(dout[n * OUT + o]) * bf16_of(w[o * IN + k]);
            want[n * IN + k] = sum;
        }
    expect_floats(dinp, want, N * IN, 1e-4);
    for (int o = 0; o < OUT; o++) /* dW = 0.5 + doutᵀ · inp */
        for (int k = 0; k < IN; k++) {
            double sum = 0.5;
            for (int n = 0; n < N; n++)
                sum += bf16_of(dout[n * OUT + o]) * bf16_of(inp[n * IN + k]);
            want[o * IN + k] = sum;
        }
    expect_floats(dw, want, OUT * IN, 1e-4);
    ops_release_buffers();
    ops_set_blas(OPS_BLAS_ONEDNN);
    free(inp), free(w), free(b), free(out), free(dout), free(dinp), free(dw), free(db);
    free(want), free(plain);
}

static void test_layernorm_forward(void **state) {
    (void)state;
    /* [1,2,3,4]: mean 2.5, biased var (2.25+0.25+0.25+2.25)/4 = 1.25, rstd = 1/√1.25 =
     * 0.894427191; out = [-1.5,-0.5,0.5,1.5]·rstd. Row 2 = row 1 + 100 normalises the same.
     * Row 3 with w = 2, b = 1 handled below. */
    const float x[] = {1, 2, 3, 4, 101, 102, 103, 104}, w[] = {1, 1, 1, 1}, b[] = {0, 0, 0, 0};
    const double r = 0.894427190999916;
    float out[8], mean[2], rstd[2];
    layernorm_forward(out, mean, rstd, x, w, b, 2, 4, 1e-12f);
    const double want[] = {-1.5 * r, -0.5 * r, 0.5 * r, 1.5 * r,
                           -1.5 * r, -0.5 * r, 0.5 * r, 1.5 * r};
    expect_floats(out, want, 8, 1e-5); /* row 2: 101..104 in float carry ~1e-5 relative error */
    expect_floats(mean, (const double[]){2.5, 102.5}, 2, 1e-4);
    expect_floats(rstd, (const double[]){r, r}, 2, 1e-5);
    /* w = 2, b = 1: 2·x̂ + 1 = [1 - 3r, 1 - r, 1 + r, 1 + 3r] */
    const float w2[] = {2, 2, 2, 2}, b2[] = {1, 1, 1, 1};
    layernorm_forward(out, NULL, NULL, x, w2, b2, 1, 4, 1e-12f);
    expect_floats(out, (const double[]){1 - 3 * r, 1 - r, 1 + r, 1 + 3 * r}, 4, TOL);
}

static void test_layernorm_backward(void **state) {
    (void)state;
    /* x = [1,2,3,4] (x̂ = c·r, c = [-1.5,-0.5,0.5,1.5], r² = 0.8), w = 1, dout = [1,0,0,0]:
     * mean(g) = 0.25, mean(g·x̂) = -1.5r/4 = -0.375r, so
     * dx = r·(dout - 0.25 + x̂·0.375r) = r·(dout - 0.25 + 0.3c) = r·[0.3, -0.4, -0.1, 0.2];
     * dw = dout·x̂ = [-1.5r, 0, 0, 0]; db = dout. dinp starts at 1: accumulated. */
    const float x[] = {1, 2, 3, 4}, w[] = {1, 1, 1, 1}, b[] = {0, 0, 0, 0}, dout[] = {1, 0, 0, 0};
    const double r = 0.894427190999916;
    float out[4], mean[1], rstd[1], dinp[4] = {1, 1, 1, 1}, dw[4] = {0}, db[4] = {0};
    layernorm_forward(out, mean, rstd, x, w, b, 1, 4, 1e-12f);
    layernorm_backward(dinp, dw, db, dout, x, mean, rstd, w, 1, 4);
    expect_floats(dinp, (const double[]){1 + 0.3 * r, 1 - 0.4 * r, 1 - 0.1 * r, 1 + 0.2 * r}, 4,
                  TOL);
    expect_floats(dw, (const double[]){-1.5 * r, 0, 0, 0}, 4, TOL);
    expect_floats(db, (const double[]){1, 0, 0, 0}, 4, TOL);
}

static void test_softmax(void **state) {
    (void)state;
    /* [1,2,3] -> e^{-2}, e^{-1}, 1 over their sum 1.503214724:
     * 0.0900305732, 0.2447284711, 0.6652409558. [1001,1002,1003] is the same (shift invariance,
     * and no overflow). [0, -inf] -> [1, 0]; an all -inf row (every key masked) -> zeros. */
    const double p[] = {0.09003057317038046, 0.24472847105479767, 0.6652409557748219};
    float x[] = {1, 2, 3, 1001, 1002, 1003, -1000, -999, -998};
    softmax_forward(x, 3, 3);
    expect_floats(x, p, 3, TOL);
    expect_floats(x + 3, p, 3, TOL);
    expect_floats(x + 6, p, 3, TOL);
    float y[] = {0, -INFINITY, -INFINITY, -INFINITY};
    softmax_forward(y, 2, 2);
    expect_floats(y, (const double[]){1, 0, 0, 0}, 4, 0.0);
}

static void test_activations(void **state) {
    (void)state;
    /* GELU(x) = x·Φ(x): Φ(1) = 0.8413447460685429, Φ(-1) = 0.15865525393145707,
     * Φ(2) = 0.9772498680518208. tanh form 0.5x(1 + tanh(√(2/π)(x + 0.044715x³))) at 1, -1, 2. */
    const float x[] = {1, -1, 2, 0, -0.5f};
    float y[5];
    activation_forward(y, x, 5, ACT_GELU);
    expect_floats(y,
                  (const double[]){0.8413447460685429, -0.15865525393145707, 1.9544997361036416, 0,
                                   -0.15426876936299344},
                  5, TOL);
    activation_forward(y, x, 5, ACT_GELU_TANH);
    expect_floats(y,
                  (const double[]){0.8411919906082768, -0.15880800939172324, 1.954597694087775, 0,
                                   -0.15428599017485606},
                  5, TOL);
    activation_forward(y, x, 5, ACT_RELU);
    expect_floats(y, (const double[]){1, 0, 2, 0, 0}, 5, 0.0);
    /* quick_gelu x·σ(1.702x): σ(1.702) = 0.8457958, σ(3.404) = 0.9678293, σ(-0.851) = 0.2992231 */
    activation_forward(y, x, 5, ACT_QUICK_GELU);
    expect_floats(y,
                  (const double[]){0.8457957659328212, -0.1542042340671787, 1.9356586231442083, 0,
                                   -0.1496115633936199},
                  5, TOL);
}

static void test_activation_backward(void **state) {
    (void)state;
    /* GELU'(x) = Φ(x) + x·φ(x), φ(1) = 0.24197072451914337:
     *   x=1: 0.8413447461 + 0.2419707245 = 1.0833154706;  x=-1: 0.1586552539 - 0.2419707245;
     *   x=2: 0.9772498681 + 2·0.0539909665 = 1.0852318011.
     * tanh form: 0.5(1+t) + 0.5x(1-t²)·k·(1 + 3·0.044715x²), t = tanh(k(x + 0.044715x³)),
     * k = √(2/π): at 1: t = tanh(0.8153620) = 0.6724281, 0.8362141 +
     * 0.5·0.5478405·0.7978846·1.134145 = 1.0829640838. ReLU': 1 above 0, 0 at and below. dout = 2
     * scales them all. In place. */
    const float x[] = {1, -1, 2};
    float d[3];
    for (int i = 0; i < 3; i++) d[i] = 2;
    activation_backward(d, d, x, 3, ACT_GELU);
    expect_floats(
        d,
        (const double[]){2 * 1.0833154705876864, 2 * -0.08331547058768629, 2 * 1.085231801078197},
        3, 2 * TOL);
    for (int i = 0; i < 3; i++) d[i] = 2;
    activation_backward(d, d, x, 3, ACT_GELU_TANH);
    expect_floats(
        d,
        (const double[]){2 * 1.0829640838457826, 2 * -0.08296408384578255, 2 * 1.0860992566236183},
        3, 2 * TOL);
    /* quick_gelu': σ(ax)·(1 + a·x·(1 - σ(ax))), a = 1.702 */
    for (int i = 0; i < 3; i++) d[i] = 2;
    activation_backward(d, d, x, 3, ACT_QUICK_GELU);
    expect_floats(
        d,
        (const double[]){2 * 1.067779606556334, 2 * -0.06777960655633404, 2 * 1.0738153543085418},
        3, 2 * TOL);
    const float xr[] = {1, -1, 0};
    for (int i = 0; i < 3; i++) d[i] = 2;
    activation_backward(d, d, xr, 3, ACT_RELU);
    expect_floats(d, (const double[]){2, 0, 0}, 3, 0.0);
}

/* T = 2, D = 2, H = 1, so dh = 2 and scale = 1/√2. Rows of qkv are [q | k | v]:
 *   q0 = [1, 0], q1 = [0, 1];  k0 = [0, 0], k1 = [√2·ln3, 0];  v0 = [1, 2], v1 = [3, 4].
 * Scores (scale·q·k): row 0 [0, ln3] -> softmax [1/4, 3/4]; row 1 [0, 0] -> [1/2, 1/2].
 * out0 = 1/4·[1,2] + 3/4·[3,4] = [2.5, 3.5]; out1 = [2, 3]. */
static const float tiny_qkv[] = {1, 0, 0, 0, 1, 2, 0, 1, 1.5536723984241867f, 0, 3, 4};

static void test_attention_by_hand(void **state) {
    (void)state;
    float out[4], probs[4];
    attention_forward(out, probs, tiny_qkv, NULL, NULL, 0, 1, 2, 2, 1);
    expect_floats(probs, (const double[]){0.25, 0.75, 0.5, 0.5}, 4, TOL);
    expect_floats(out, (const double[]){2.5, 3.5, 2, 3}, 4, 4 * TOL);
}

static void test_attention_masks(void **state) {
    (void)state;
    float out[4], probs[4];
    /* causal: query 0 sees key 0 only -> [1, 0], out0 = v0; query 1 unchanged. */
    attention_forward(out, probs, tiny_qkv, NULL, NULL, 1, 1, 2, 2, 1);
    expect_floats(probs, (const double[]){1, 0, 0.5, 0.5}, 4, TOL);
    expect_floats(out, (const double[]){1, 2, 2, 3}, 4, 4 * TOL);
    /* key 1 is padding: both queries see key 0 only -> out = v0 twice. */
    const uint8_t pad[] = {1, 0};
    attention_forward(out, probs, tiny_qkv, pad, NULL, 0, 1, 2, 2, 1);
    expect_floats(probs, (const double[]){1, 0, 1, 0}, 4, 0.0);
    expect_floats(out, (const double[]){1, 2, 1, 2}, 4, TOL);
    /* every key padding: no NaN, weights and output zero. */
    const uint8_t none[] = {0, 0};
    attention_forward(out, probs, tiny_qkv, none, NULL, 0, 1, 2, 2, 1);
    expect_floats(probs, (const double[]){0, 0, 0, 0}, 4, 0.0);
    expect_floats(out, (const double[]){0, 0, 0, 0}, 4, 0.0);
}

static void test_attention_backward_by_hand(void **state) {
    (void)state;
    /* dout = [[1, 0], [0, 0]] (only out0[0] = 1/4·1 + 3/4·3 matters). By hand:
     * dV = Pᵀ·dO: dv0 = [1/4, 0], dv1 = [3/4, 0].
     * dP row 0 = dO0·Vᵀ = [v0[0], v1[0]] = [1, 3]; dS0 = P0∘(dP0 - P0·dP0) = [1/4, 3/4]∘([1,3]
     * - 2.5) = [-0.375, 0.375]; row 1 is zero. dQ0 = scale·Σ_j dS0j·k_j = (1/√2)·0.375·[√2·ln3, 0]
     * = [0.375·ln3, 0]; dQ1 = 0. dK_j = scale·dS0j·q0: dk0 = [-0.375/√2, 0], dk1 = [0.375/√2, 0].
     */
    float out[4], probs[4], dqkv[12], dprobs[4];
    const float dout[] = {1, 0, 0, 0};
    attention_forward(out, probs, tiny_qkv, NULL, NULL, 0, 1, 2, 2, 1);
    memset(dqkv, 0x7f, sizeof dqkv); /* garbage: every element must be written */
    attention_backward(dqkv, dprobs, NULL, NULL, dout, tiny_qkv, probs, NULL, 0.0f, 1, 2, 2, 1);
    const double q = 0.375 * log(3.0), k = 0.375 / sqrt(2.0);
    expect_floats(dqkv, (const double[]){q, 0, -k, 0, 0.25, 0, 0, 0, k, 0, 0.75, 0}, 12, 4 * TOL);
}

static void test_crossentropy(void **state) {
    (void)state;
    /* Row 0: logits [0,0,0], label 0, eps 0.1: p = 1/3 each, loss = ln 3 whatever q;
     *   grad = p - q, q = [0.9 + 0.1/3, 0.1/3, 0.1/3] -> [-0.6, 0.3, 0.3].
     * Row 1: logits [0, ln3, ln3]: p = [1/7, 3/7, 3/7], label 2: loss = 0.9·(-ln 3/7)
     *   + 0.1·mean(-ln p) = 0.9·0.8472978604 + 0.1·(1.9459101491 + 2·0.8472978604)/3
     *   = 0.7625680743 + 0.1213501957 = 0.8839182700; grad = p - [1/30, 1/30, 0.9 + 1/30].
     * Batch mean: (ln 3 + 0.8839182700)/2; gradients divided by B = 2. */
    const float logits[] = {0, 0, 0, 0, (float)log(3.0), (float)log(3.0)};
    const int labels[] = {0, 2};
    float probs[6], d[6];
    double loss = crossentropy_forward(probs, logits, labels, 2, 3, 0.1f);
    assert_true(fabs(loss - (log(3.0) + 0.8839182700) / 2) < 1e-7);
    expect_floats(probs, (const double[]){1 / 3.0, 1 / 3.0, 1 / 3.0, 1 / 7.0, 3 / 7.0, 3 / 7.0}, 6,
                  TOL);
    crossentropy_backward(d, probs, labels, 2, 3, 0.1f, 1.0f);
    const double e = 1 / 30.0;
    expect_floats(d,
                  (const double[]){-0.3, 0.15, 0.15, (1 / 7.0 - e) / 2, (3 / 7.0 - e) / 2,
                                   (3 / 7.0 - 0.9 - e) / 2},
                  6, TOL);
    /* eps = 0: plain NLL, -ln(1/3) and -ln(3/7) */
    loss = crossentropy_forward(probs, logits, labels, 2, 3, 0.0f);
    assert_true(fabs(loss - (log(3.0) + log(7.0 / 3.0)) / 2) < 1e-7);
}

/* Mixed targets (Mixup, CutMix), by hand with the rows of test_crossentropy, lambda 0.25, eps 0.1:
 * Row 0 (p = 1/3 each), label 0, partner 1: loss ln 3; q = 0.25·[0.9 + e, e, e] + 0.75·[e, 0.9 + e,
 *   e] = [0.225 + e, 0.675 + e, e] with e = 0.1/3.
 * Row 1 (p = [1/7, 3/7, 3/7]), label 2, partner 0: loss 0.25·0.8839182700 + 0.75·(0.9·ln 7 +
 *   0.1213501957) = 0.25·0.8839182700 + 0.75·1.8726693299 = 1.6254815649; q = [0.675 + e, e,
 *   0.225 + e]. Then the gradient against central differences of the loss on random logits. */
static void test_crossentropy_mixed(void **state) {
    (void)state;
    const float logits[] = {0, 0, 0, 0, (float)log(3.0), (float)log(3.0)};
    const int labels[] = {0, 2}, partners[] = {1, 0};
    float probs[6], d[6];
    double loss = crossentropy_mixed_forward(probs, logits, labels, partners, 0.25f, 2, 3, 0.1f);
    assert_true(fabs(loss - (log(3.0) + 1.6254815649) / 2) < 1e-7);
    crossentropy_mixed_backward(d, probs, labels, partners, 0.25f, 2, 3, 0.1f, 1.0f);
    const double e = 1 / 30.0;
    expect_floats(d,
                  (const double[]){(1 / 3.0 - 0.225 - e) / 2, (1 / 3.0 - 0.675 - e) / 2,
                                   (1 / 3.0 - e) / 2, (1 / 7.0 - 0.675 - e) / 2, (3 / 7.0 - e) / 2,
                                   (3 / 7.0 - 0.225 - e) / 2},
                  6, TOL);
    enum { B = 3, L = 5 };
    uint64_t rng = 11;
    float z[B * L], p[B * L], g[B * L];
    for (int i = 0; i < B * L; i++) z[i] = (float)(2.0 * rng_normal(&rng));
    const int lab[B] = {0, 4, 2}, par[B] = {3, 4, 1}; /* a row mixed with its own class too */
    crossentropy_mixed_forward(p, z, lab, par, 0.7f, B, L, 0.1f);
    crossentropy_mixed_backward(g, p, lab, par, 0.7f, B, L, 0.1f, 1.0f);
    for (int i = 0; i < B * L; i++) {
        const float keep = z[i], h = 1e-2f;
        z[i] = keep + h;
        const double up = crossentropy_mixed_forward(p, z, lab, par, 0.7f, B, L, 0.1f);
        z[i] = keep - h;
        const double down = crossentropy_mixed_forward(p, z, lab, par, 0.7f, B, L, 0.1f);
        z[i] = keep;
        assert_true(fabs((up - down) / (2 * h) - g[i]) < 1e-4);
    }
}

static void test_dropout(void **state) {
    (void)state;
    enum { n = 100000 };
    static uint8_t keep[n], keep2[n];
    static float x[n];
    uint64_t rng = 42, rng2 = 42;
    dropout_mask(keep, n, 0.25f, &rng);
    dropout_mask(keep2, n, 0.25f, &rng2);
    assert_memory_equal(keep, keep2, n); /* same state, same mask */
    assert_true(rng == rng2 && rng != 42);
    int kept = 0;
    for (int i = 0; i < n; i++) kept += keep[i];
    /* binomial(1e5, 0.75): sd = 137, so ±1000 is ~7 sd */
    assert_true(abs(kept - 75000) < 1000);
    dropout_mask(keep2, n, 0.25f, &rng2); /* the advanced state gives another mask */
    assert_true(memcmp(keep, keep2, n) != 0);
    for (int i = 0; i < n; i++) x[i] = 3.0f;
    dropout_forward(x, x, keep, n, 0.25f); /* kept: 3/(1 - 0.25) = 4; dropped: 0 */
    for (int i = 0; i < n; i++) assert_true(x[i] == (keep[i] ? 4.0f : 0.0f));
    dropout_mask(keep, 7, 0.0f, &rng); /* p = 0 keeps all, p = 1 drops all (odd n: the tail) */
    for (int i = 0; i < 7; i++) assert_int_equal(keep[i], 1);
    dropout_mask(keep, 7, 1.0f, &rng);
    for (int i = 0; i < 7; i++) assert_int_equal(keep[i], 0);
}

/* ---- top-k ---- */

/* The order topk_indices promises, written out plainly for qsort: larger first, ties the lower
 * index first, NaN after every number. */
static const float *sort_keys;

static int ranks_after(const void *a, const void *b) {
    const int i = *(const int *)a, j = *(const int *)b;
    const float x = sort_keys[i], y = sort_keys[j];
    if (!isnan(x) != !isnan(y)) return isnan(x) ? 1 : -1;
    if (!isnan(x) && x != y) return x < y ? 1 : -1;
    return i - j;
}

/* out[0..min(k, n)) as a full sort of x has it, nothing written past them. */
static void expect_top_k(const float *x, int n, int k) {
    int *want = malloc(sizeof(int) * (size_t)n), *got = malloc(sizeof(int) * (size_t)(n + 8));
    for (int i = 0; i < n; i++) want[i] = i;
    sort_keys = x;
    qsort(want, (size_t)n, sizeof(int), ranks_after);
    for (int i = 0; i < n + 8; i++) got[i] = -7;
    const int m = k < n ? (k > 0 ? k : 0) : n;
    assert_int_equal(topk_indices(x, n, k, got), m);
    for (int i = 0; i < m; i++)
        if (got[i] != want[i])
            fail_msg("n %d, k %d: place %d holds index %d, a full sort has %d", n, k, i, got[i],
                     want[i]);
    for (int i = m; i < n + 8; i++)
        if (got[i] != -7) fail_msg("n %d, k %d: out[%d] written past the %d asked", n, k, i, m);
    free(want), free(got);
}

/* Random values from a few levels (many ties), and from a continuum; k = 0, 1, a middle value, n
 * and beyond n. */
static void test_topk_matches_full_sort(void **state) {
    (void)state;
    test_seed(7);
    const int sizes[] = {1, 2, 3, 7, 64, 1000};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        const int n = sizes[s];
        float *x = test_alloc_floats((size_t)n);
        for (int tied = 0; tied < 2; tied++) {
            for (int i = 0; i < n; i++)
                x[i] = tied ? floorf(test_uniform(-3, 3)) : test_uniform(-1, 1);
            const int ks[] = {0, 1, n / 2, n - 1, n, n + 1, n + 5};
            for (size_t t = 0; t < sizeof ks / sizeof ks[0]; t++) expect_top_k(x, n, ks[t]);
        }
        free(x);
    }
    /* NaN (a softmax of inf - inf) ranks after every number, -inf included */
    const float odd[] = {NAN, 1, -INFINITY, NAN, 2, INFINITY, 1};
    for (int k = 0; k <= 8; k++) expect_top_k(odd, 7, k);
}

/* All 1000 of an ImageNet head, as `?k=1000` asks: far under 10 ms (a heap, O(n log k)); the
 * former O(k²·n) selection took about 170 ms. Best of five, for a loaded machine. */
static void test_topk_is_fast(void **state) {
    (void)state;
    enum { N = 1000 };
    float x[N];
    int out[N];
    test_seed(11);
    test_fill(x, N, 0, 1);
    double best = 1e9;
    for (int rep = 0; rep < 5; rep++) {
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        topk_indices(x, N, N, out);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        const double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
        if (s < best) best = s;
    }
    print_message("    top-1000 of 1000: %.3f ms\n", best * 1e3);
    if (best > 0.010) fail_msg("top-1000 of 1000 took %.1f ms (over 10 ms)", best * 1e3);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_linear_forward),
        cmocka_unit_test(test_linear_backward),
        cmocka_unit_test(test_linear_bf16),
        cmocka_unit_test(test_layernorm_forward),
        cmocka_unit_test(test_layernorm_backward),
        cmocka_unit_test(test_softmax),
        cmocka_unit_test(test_activations),
        cmocka_unit_test(test_activation_backward),
        cmocka_unit_test(test_attention_by_hand),
        cmocka_unit_test(test_attention_masks),
        cmocka_unit_test(test_attention_backward_by_hand),
        cmocka_unit_test(test_crossentropy),
        cmocka_unit_test(test_crossentropy_mixed),
        cmocka_unit_test(test_dropout),
        cmocka_unit_test(test_topk_matches_full_sort),
        cmocka_unit_test(test_topk_is_fast),
    };
    return cmocka_run_group_tests_name("ops", tests, NULL, NULL);
}
