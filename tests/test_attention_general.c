/* attention_general_forward/backward (Tq query rows against Tk keys) against a float64 reference
 * written here with plain loops: the forward on cross shapes, causal offsets, key masks, fused
 * and strided buffers, a KV cache with room left, Tq = 1, rows that see no key, more keys than one
 * score chunk; the gradients against central differences of the float64 reference; and both
 * against the fused-qkv attention_forward/backward when Tq = Tk.
 *
 * Every buffer element the kernels must not read (stride padding, cache rows past Tk) is NaN, so
 * a stray read shows as a NaN in the output; every gradient element they must write starts as
 * NaN, and the padding columns of the gradient buffers must still be NaN afterwards. */
#include "tests/testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "vit/core/ops.h"

/* Forward against float64: the kernels compute in float32 on values in [-1, 1]; scores are sums
 * of dh products (rounding ~dh·6e-8), fast_expf is within 2e-7 relative, the output a convex
 * combination of values in [-1, 1]: a few 1e-8 in all, measured at most 1e-7 here. */
#define FWD_TOL 1e-6
/* Against the fused attention_forward/backward (the same maths, summed in another order), and
 * decoding row by row against the full pass: measured at most 2.4e-7. */
#define SAME_TOL 1e-6
/* Gradients against central differences of the float64 reference (h = 1e-5: truncation h²/6·f'''
 * and rounding 1e-16/h both near 1e-11, so the numeric side is exact to float32's eyes). The error
 * left is the float32 backward's own, from the float32 forward's weights (sums of Tk or Tq
 * products of O(1) terms): measured at most 1e-7. The check is |a - n| <= GRAD_TOL · max(1, |n|):
 * absolute for the O(1) gradients here, relative for larger ones. */
#define GRAD_TOL 1e-6
#define FD_STEP  1e-5

typedef struct {
    int B, Tq, Tk, D, H;
    int causal; /* < 0: none; else the number of keys before the first query */
    int masked; /* 0: no mask; 1: some keys masked; 2: also the last item has no key at all */
    int fused;  /* k and v slices of one [.., 2D + pad] buffer */
    int pad;    /* extra floats per row of q, k, v: strides */
    int spare;  /* cache rows past Tk per item (kv_rows = Tk + spare), NaN */
} att_case;

/* The inputs in float (what the kernels read) and in double (the reference), same layout. */
typedef struct {
    att_case c;
    int ldq, ldkv, kv_rows;
    size_t nq, nkv;
    uint8_t *mask;
    float *qbuf, *kbuf, *vbuf; /* vbuf == kbuf when fused */
    double *qd, *kd, *vd;      /* double copies of the buffers */
    size_t v_off;              /* v = vbuf + v_off */
} inputs;

static float *nan_floats(size_t n) {
    float *x = test_alloc_floats(n);
    for (size_t i = 0; i < n; i++) x[i] = NAN;
    return x;
}

static double *to_double(const float *x, size_t n) {
    double *d = malloc(n * sizeof *d);
    assert_non_null(d);
    for (size_t i = 0; i < n; i++) d[i] = x[i];
    return d;
}

/* Random [-1, 1) in columns [0, cols) of rows [0, used) of each item's `rows` rows of ld floats. */
static void fill_rows(float *x, int items, int rows, int used, int ld, int cols) {
    for (int b = 0; b < items; b++)
        for (int j = 0; j < used; j++)
            test_fill(x + ((size_t)b * rows + j) * ld, (size_t)cols, -1.0f, 1.0f);
}

/* masked 1: item 1 loses key 0 (so with causal 0 its first query sees nothing) and its last key,
 * item 2 every third key; masked 2: the last item no key at all. */
static uint8_t *make_mask(const att_case *c, int kv_rows) {
    uint8_t *m = malloc((size_t)c->B * kv_rows);
    assert_non_null(m);
    memset(m, 1, (size_t)c->B * kv_rows);
    if (c->B > 1) m[kv_rows] = m[kv_rows + c->Tk - 1] = 0;
    if (c->B > 2)
        for (int j = 0; j < c->Tk; j += 3) m[2 * kv_rows + j] = 0;
    if (c->masked == 2) memset(m + (size_t)(c->B - 1) * kv_rows, 0, (size_t)kv_rows);
    return m;
}

static void inputs_make(inputs *in, const att_case *c) {
    memset(in, 0, sizeof *in);
    in->c = *c;
    in->ldq = c->D + c->pad;
    in->ldkv = (c->fused ? 2 * c->D : c->D) + c->pad;
    in->kv_rows = c->Tk + c->spare;
    in->nq = (size_t)c->B * c->Tq * in->ldq;
    in->nkv = (size_t)c->B * in->kv_rows * in->ldkv;
    in->qbuf = nan_floats(in->nq);
    fill_rows(in->qbuf, c->B, c->Tq, c->Tq, in->ldq, c->D);
    in->kbuf = nan_floats(in->nkv);
    fill_rows(in->kbuf, c->B, in->kv_rows, c->Tk, in->ldkv, c->fused ? 2 * c->D : c->D);
    in->vbuf = c->fused ? in->kbuf : nan_floats(in->nkv);
    if (!c->fused) fill_rows(in->vbuf, c->B, in->kv_rows, c->Tk, in->ldkv, c->D);
    in->v_off = c->fused ? (size_t)c->D : 0;
    in->mask = c->masked ? make_mask(c, in->kv_rows) : NULL;
    in->qd = to_double(in->qbuf, in->nq);
    in->kd = to_double(in->kbuf, in->nkv);
    in->vd = c->fused ? in->kd : to_double(in->vbuf, in->nkv);
}

static void inputs_free(inputs *in) {
    if (in->vbuf != in->kbuf) free(in->vbuf), free(in->vd);
    free(in->qbuf), free(in->kbuf), free(in->qd), free(in->kd), free(in->mask);
}

/* The float64 reference, straight from the definition: out [B, Tq, D], probs [B, H, Tq, Tk]. */
static void reference(double *out, double *probs, const inputs *in, const double *q,
                      const double *k, const double *v) {
    const att_case *c = &in->c;
    const int dh = c->D / c->H, Tk = c->Tk;
    for (int b = 0; b < c->B; b++)
        for (int h = 0; h < c->H; h++)
            for (int i = 0; i < c->Tq; i++) {
                double s[Tk], max = -INFINITY, sum = 0.0;
                int seen[Tk];
                const double *qi = q + ((size_t)b * c->Tq + i) * in->ldq + h * dh;
                for (int j = 0; j < Tk; j++) {
                    const size_t row = ((size_t)b * in->kv_rows + j) * in->ldkv + h * dh;
                    seen[j] = (c->causal < 0 || j <= c->causal + i) &&
                              (!in->mask || in->mask[(size_t)b * in->kv_rows + j]);
                    s[j] = 0.0;
                    for (int d = 0; d < dh && seen[j]; d++) s[j] += qi[d] * k[row + d];
                    s[j] /= sqrt((double)dh);
                    if (seen[j] && s[j] > max) max = s[j];
                }
                for (int j = 0; j < Tk; j++) sum += seen[j] ? exp(s[j] - max) : 0.0;
                double *p = probs + (((size_t)b * c->H + h) * c->Tq + i) * Tk;
                for (int j = 0; j < Tk; j++) p[j] = seen[j] ? exp(s[j] - max) / sum : 0.0;
                for (int d = 0; d < dh; d++) {
                    double o = 0.0;
                    for (int j = 0; j < Tk; j++)
                        if (seen[j])
                            o += p[j] * v[((size_t)b * in->kv_rows + j) * in->ldkv + h * dh + d];
                    out[((size_t)b * c->Tq + i) * c->D + h * dh + d] = o;
                }
            }
}

/* Max |got - want| over n; fails above tol. */
static double expect_close(const char *what, const float *got, const double *want, size_t n,
                           double tol) {
    double worst = 0.0;
    for (size_t i = 0; i < n; i++) {
        const double e = fabs((double)got[i] - want[i]);
        if (!(e <= tol)) fail_msg("%s: element %zu: got %.9g, want %.9g", what, i, got[i], want[i]);
        if (e > worst) worst = e;
    }
    return worst;
}

static void run_forward(const inputs *in, float *out, float *probs) {
    const att_case *c = &in->c;
    attention_general_forward(out, probs, in->qbuf, in->ldq, in->kbuf, in->vbuf + in->v_off,
                              in->ldkv, in->mask, c->causal, c->B, c->Tq, c->Tk, in->kv_rows, c->D,
                              c->H);
}

/* Both paths, with the weights kept (training) and without (inference), against the reference. */
static void check_forward(const char *what, att_case c) {
    inputs in;
    inputs_make(&in, &c);
    const size_t nout = (size_t)c.B * c.Tq * c.D, np = (size_t)c.B * c.H * c.Tq * c.Tk;
    double *want = malloc(nout * sizeof *want), *want_p = malloc(np * sizeof *want_p);
    assert_true(want && want_p);
    reference(want, want_p, &in, in.qd, in.kd, in.vd + in.v_off);
    float *out = nan_floats(nout), *probs = nan_floats(np);
    run_forward(&in, out, probs);
    const double e_out = expect_close(what, out, want, nout, FWD_TOL);
    const double e_p = expect_close(what, probs, want_p, np, FWD_TOL);
    for (size_t i = 0; i < nout; i++) out[i] = NAN;
    run_forward(&in, out, NULL);
    const double e_inf = expect_close(what, out, want, nout, FWD_TOL);
    print_message("  %-58s out %.1e probs %.1e, no weights kept %.1e\n", what, e_out, e_p, e_inf);
    free(want), free(want_p), free(out), free(probs);
    inputs_free(&in);
}

static void test_forward_against_float64(void **state) {
    (void)state;
    /* B, Tq, Tk, D, H, causal, masked, fused, pad, spare */
    check_forward("cross 3 x 7, dh 4", (att_case){2, 3, 7, 12, 3, -1, 0, 0, 0, 0});
    check_forward("cross 5 x 9, dh 5, masks, fused k|v, strides",
                  (att_case){3, 5, 9, 10, 2, -1, 1, 1, 3, 0});
    check_forward("Tq > Tk (20 x 5: two query blocks), dh 3",
                  (att_case){2, 20, 5, 6, 2, -1, 0, 0, 0, 0});
    check_forward("causal 0, 6 x 6, masks (a row sees no key)",
                  (att_case){3, 6, 6, 8, 2, 0, 1, 0, 0, 0});
    check_forward("causal 5 (cache of 5 + 3 new rows), cache room 4, fused",
                  (att_case){2, 3, 8, 12, 4, 5, 0, 1, 2, 4});
    check_forward("Tq 1, causal 10 against 11 cached keys, masks, cache room 5",
                  (att_case){3, 1, 11, 16, 2, 10, 1, 1, 1, 5});
    check_forward("Tq 1 cross, item with no key at all", (att_case){2, 1, 7, 8, 2, -1, 2, 0, 0, 0});
    check_forward("dh 1 (D = H = 3)", (att_case){2, 4, 5, 3, 3, 0, 0, 0, 0, 0});
    check_forward("Tq 1 against 600 keys (three chunks), masks",
                  (att_case){3, 1, 600, 32, 2, -1, 1, 1, 0, 7});
    check_forward("9 x 600, causal 591, masks, dh 13",
                  (att_case){3, 9, 600, 26, 2, 591, 1, 0, 2, 0});
    check_forward("37 x 300 cross, dh 24, no key for the last item",
                  (att_case){2, 37, 300, 48, 2, -1, 2, 1, 0, 0});
}

/* ---- the KV cache: decoding row by row gives the full causal attention's rows ---- */

/* Item stride trick: with Tq = 1, ldq steps from item to item, so q = qkv + t·3D with
 * ldq = T·3D picks row t of every item of a fused [B, T, 3D] buffer. */
static void check_cache(int B, int T, int D, int H, int masked) {
    const int ld = 3 * D, cap = T + 3;
    const size_t n = (size_t)B * T * ld;
    float *qkv = test_alloc_floats(n), *full = test_alloc_floats((size_t)B * T * D);
    float *step = test_alloc_floats((size_t)B * D);
    test_fill(qkv, n, -1.0f, 1.0f);
    uint8_t *mask = NULL, *cache_mask = NULL;
    if (masked) {
        mask = malloc((size_t)B * T), cache_mask = malloc((size_t)B * cap);
        assert_true(mask && cache_mask);
        for (int i = 0; i < B * T; i++) mask[i] = i % 5 != 2;
        for (int b = 0; b < B; b++)
            for (int j = 0; j < cap; j++) cache_mask[b * cap + j] = j < T ? mask[b * T + j] : 1;
    }
    attention_general_forward(full, NULL, qkv, ld, qkv + D, qkv + 2 * D, ld, mask, 0, B, T, T, T, D,
                              H);
    /* the cache: [B, cap, 2D] rows K|V, NaN where nothing was written yet */
    float *cache = nan_floats((size_t)B * cap * 2 * D);
    double worst = 0.0;
    for (int t = 0; t < T; t++) {
        for (int b = 0; b < B; b++)
            memcpy(cache + ((size_t)b * cap + t) * 2 * D, qkv + ((size_t)b * T + t) * ld + D,
                   sizeof(float) * 2 * (size_t)D);
        attention_general_forward(step, NULL, qkv + (size_t)t * ld, T * ld, cache, cache + D, 2 * D,
                                  cache_mask, t, B, 1, t + 1, cap, D, H);
        for (int b = 0; b < B; b++)
            for (int c = 0; c < D; c++) {
                const double e = fabs(step[b * D + c] - full[((size_t)b * T + t) * D + c]);
                if (!(e <= SAME_TOL))
                    fail_msg("T %d step %d item %d column %d: %.9g vs %.9g", T, t, b, c,
                             step[b * D + c], full[((size_t)b * T + t) * D + c]);
                worst = e > worst ? e : worst;
            }
    }
    /* the last row alone against all T keys (causal T-1) with the weights kept, too */
    float *probs = test_alloc_floats((size_t)B * H * T);
    attention_general_forward(step, probs, qkv + (size_t)(T - 1) * ld, T * ld, qkv + D, qkv + 2 * D,
                              ld, mask, T - 1, B, 1, T, T, D, H);
    for (int b = 0; b < B; b++)
        for (int c = 0; c < D; c++) {
            const double e = fabs(step[b * D + c] - full[((size_t)b * T + T - 1) * D + c]);
            if (!(e <= SAME_TOL))
                fail_msg("T %d last row, weights kept: item %d column %d", T, b, c);
            worst = e > worst ? e : worst;
        }
    print_message("  KV cache, T %d, D %d, H %d%s: max difference %.1e\n", T, D, H,
                  masked ? ", masks" : "", worst);
    free(qkv), free(full), free(step), free(cache), free(probs), free(mask), free(cache_mask);
}

static void test_kv_cache_rows_equal_full_causal(void **state) {
    (void)state;
    check_cache(2, 9, 16, 2, 0);
    check_cache(3, 12, 12, 3, 1);
    check_cache(2, 300, 32, 4, 1); /* past one key chunk */
}

/* ---- Tq = Tk with fused qkv: the same as attention_forward / attention_backward ---- */

static void check_same_as_fused(int B, int T, int D, int H, int causal, int masked) {
    const int ld = 3 * D;
    const size_t n = (size_t)B * T * ld, nout = (size_t)B * T * D, np = (size_t)B * H * T * T;
    float *qkv = test_alloc_floats(n), *out1 = test_alloc_floats(nout);
    float *out2 = test_alloc_floats(nout), *p1 = test_alloc_floats(np), *p2 = test_alloc_floats(np);
    test_fill(qkv, n, -1.0f, 1.0f);
    uint8_t *mask = malloc((size_t)B * T);
    assert_non_null(mask);
    for (int i = 0; i < B * T; i++) mask[i] = i % 7 != 3;
    const uint8_t *m = masked ? mask : NULL;
    attention_forward(out1, p1, qkv, m, NULL, causal, B, T, D, H);
    attention_general_forward(out2, p2, qkv, ld, qkv + D, qkv + 2 * D, ld, m, causal ? 0 : -1, B, T,
                              T, T, D, H);
    double e_out = 0, e_p = 0, e_inf = 0, e_d = 0;
    for (size_t i = 0; i < nout; i++) e_out = fmax(e_out, fabs(out1[i] - out2[i]));
    for (size_t i = 0; i < np; i++) e_p = fmax(e_p, fabs(p1[i] - p2[i]));
    attention_general_forward(out2, NULL, qkv, ld, qkv + D, qkv + 2 * D, ld, m, causal ? 0 : -1, B,
                              T, T, T, D, H);
    for (size_t i = 0; i < nout; i++) e_inf = fmax(e_inf, fabs(out1[i] - out2[i]));
    /* the backward, from the same weights */
    float *dout = test_alloc_floats(nout), *d1 = test_alloc_floats(n), *d2 = nan_floats(n);
    float *dprobs = test_alloc_floats(np);
    test_fill(dout, nout, -1.0f, 1.0f);
    attention_backward(d1, dprobs, NULL, NULL, dout, qkv, p1, NULL, 0.0f, B, T, D, H);
    attention_general_backward(d2, ld, d2 + D, d2 + 2 * D, ld, dout, p1, qkv, ld, qkv + D,
                               qkv + 2 * D, ld, B, T, T, D, H);
    for (size_t i = 0; i < n; i++) e_d = fmax(e_d, isnan(d2[i]) ? INFINITY : fabs(d1[i] - d2[i]));
    print_message("  B %d T %d D %d H %d%s%s: out %.1e probs %.1e no weights %.1e dqkv %.1e\n", B,
                  T, D, H, causal ? " causal" : "", masked ? " masks" : "", e_out, e_p, e_inf, e_d);
    if (!(e_out <= SAME_TOL && e_p <= SAME_TOL && e_inf <= SAME_TOL && e_d <= SAME_TOL))
        fail_msg("differs from attention_forward/backward by more than %g", SAME_TOL);
    free(qkv), free(out1), free(out2), free(p1), free(p2), free(mask), free(dout), free(d1),
        free(d2), free(dprobs);
}

static void test_same_as_fused_attention(void **state) {
    (void)state;
    check_same_as_fused(2, 5, 6, 2, 0, 0);
    check_same_as_fused(2, 7, 24, 3, 1, 1);
    check_same_as_fused(3, 50, 64, 4, 0, 1);
    check_same_as_fused(1, 65, 64, 2, 1, 0);
}

/* ---- gradients against central differences of the float64 reference ---- */

typedef struct {
    inputs *in;
    double *out, *probs; /* the reference's buffers */
    const double *w;     /* the loss Σ w·out: w is dL/dout */
    size_t nout;
} fd_ctx;

static double ref_loss(const fd_ctx *f) {
    reference(f->out, f->probs, f->in, f->in->qd, f->in->kd, f->in->vd + f->in->v_off);
    double loss = 0.0;
    for (size_t i = 0; i < f->nout; i++) loss += f->w[i] * f->out[i];
    return loss;
}

/* grad (float) against the central difference of the loss wrt x (double, the same layout) in
 * columns [c0, c0 + cols) of rows [0, used) of each item's `rows` rows of ld; the columns outside
 * every slice that is checked (stride padding) must still hold their NaN. Returns the max error. */
static double check_grad_rows(const char *what, const fd_ctx *f, double *x, const float *grad,
                              int rows, int used, int ld, int c0, int cols) {
    double worst = 0.0;
    for (int b = 0; b < f->in->c.B; b++)
        for (int j = 0; j < used; j++)
            for (int c = c0; c < c0 + cols; c++) {
                const size_t at = ((size_t)b * rows + j) * ld + c;
                const double keep = x[at];
                x[at] = keep + FD_STEP;
                const double up = ref_loss(f);
                x[at] = keep - FD_STEP;
                const double down = ref_loss(f);
                x[at] = keep;
                const double num = (up - down) / (2 * FD_STEP);
                const double e = fabs(grad[at] - num) / fmax(1.0, fabs(num));
                if (!(e <= GRAD_TOL))
                    fail_msg("%s: item %d row %d column %d: analytic %.9g, numeric %.9g", what, b,
                             j, c, grad[at], num);
                worst = e > worst ? e : worst;
            }
    return worst;
}

static void expect_nan_padding(const float *g, int rows, int ld, int from) {
    for (int r = 0; r < rows; r++)
        for (int c = from; c < ld; c++)
            if (!isnan(g[(size_t)r * ld + c])) fail_msg("row %d padding column %d written", r, c);
}

static void check_backward(const char *what, att_case c) {
    assert_int_equal(c.spare, 0); /* the backward reads dense items */
    inputs in;
    inputs_make(&in, &c);
    const size_t nout = (size_t)c.B * c.Tq * c.D, np = (size_t)c.B * c.H * c.Tq * c.Tk;
    float *out = test_alloc_floats(nout), *probs = test_alloc_floats(np);
    float *dout = test_alloc_floats(nout);
    test_fill(dout, nout, -1.0f, 1.0f);
    run_forward(&in, out, probs);
    float *dq = nan_floats(in.nq), *dk = nan_floats(in.nkv);
    float *dv = c.fused ? dk : nan_floats(in.nkv);
    attention_general_backward(dq, in.ldq, dk, dv + in.v_off, in.ldkv, dout, probs, in.qbuf, in.ldq,
                               in.kbuf, in.vbuf + in.v_off, in.ldkv, c.B, c.Tq, c.Tk, c.D, c.H);
    fd_ctx f = {.in = &in, .nout = nout, .w = to_double(dout, nout)};
    f.out = malloc(nout * sizeof(double)), f.probs = malloc(np * sizeof(double));
    assert_true(f.out && f.probs);
    const double eq = check_grad_rows(what, &f, in.qd, dq, c.Tq, c.Tq, in.ldq, 0, c.D);
    const double ek = check_grad_rows(what, &f, in.kd, dk, c.Tk, c.Tk, in.ldkv, 0, c.D);
    const double ev = check_grad_rows(what, &f, in.vd, dv, c.Tk, c.Tk, in.ldkv, (int)in.v_off, c.D);
    expect_nan_padding(dq, c.B * c.Tq, in.ldq, c.D);
    expect_nan_padding(dk, c.B * c.Tk, in.ldkv, c.fused ? 2 * c.D : c.D);
    if (!c.fused) expect_nan_padding(dv, c.B * c.Tk, in.ldkv, c.D);
    print_message("  %-58s dq %.1e dk %.1e dv %.1e\n", what, eq, ek, ev);
    free(out), free(probs), free(dout), free(dq), free(dk), free((void *)f.w), free(f.out),
        free(f.probs);
    if (!c.fused) free(dv);
    inputs_free(&in);
}

static void test_backward_against_finite_differences(void **state) {
    (void)state;
    /* B, Tq, Tk, D, H, causal, masked, fused, pad, spare */
    check_backward("cross 3 x 7, dh 4", (att_case){2, 3, 7, 12, 3, -1, 0, 0, 0, 0});
    check_backward("cross 5 x 9, dh 5, masks, fused k|v, strides",
                   (att_case){3, 5, 9, 10, 2, -1, 1, 1, 3, 0});
    check_backward("causal 0, 6 x 6, masks (a row sees no key)",
                   (att_case){3, 6, 6, 8, 2, 0, 1, 0, 1, 0});
    check_backward("causal 5 (3 new rows, 8 keys), fused, strides",
                   (att_case){2, 3, 8, 12, 4, 5, 0, 1, 2, 0});
    check_backward("Tq 1, causal 10 against 11 keys, masks",
                   (att_case){3, 1, 11, 8, 2, 10, 1, 1, 1, 0});
    check_backward("Tq 1 cross, item with no key at all",
                   (att_case){2, 1, 7, 8, 2, -1, 2, 0, 0, 0});
    check_backward("Tq 9 > Tk 5, causal 0, dh 1", (att_case){2, 9, 5, 2, 2, 0, 0, 0, 0, 0});
    check_backward("2 x 300 (two key chunks), masks, fused",
                   (att_case){3, 2, 300, 4, 1, -1, 1, 1, 0, 0});
    check_backward("5 x 300, causal 296, masks", (att_case){2, 5, 300, 4, 2, 296, 1, 0, 0, 0});
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_forward_against_float64),
        cmocka_unit_test(test_kv_cache_rows_equal_full_causal),
        cmocka_unit_test(test_same_as_fused_attention),
        cmocka_unit_test(test_backward_against_finite_differences),
    };
    return cmocka_run_group_tests_name("attention_general", tests, NULL, NULL);
}
