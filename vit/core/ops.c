#include "vit/core/ops.h"

#include "vit/core/fastmath.h"
#include "vit/core/gemm_internal.h"

#include "vit/base/hot.h"
#include "vit/base/rng.h"

#include <cblas.h>
#include <math.h>
#ifdef VIT_ONEDNN
#include <oneapi/dnnl/dnnl.h>
#endif
#include <omp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define ATTENTION_ROW_BLOCK  64
#define ATTENTION_GEMM_MIN_T 64 /* the attention backward's products by sgemm from here on */

/* Threads: OpenMP owns the cores. OpenBLAS runs single-threaded inside each OpenMP thread on a
 * slice of the rows (ops_init sets this up), so the two never spin against each other. */

/* OpenBLAS's pthreads build starts a thread pool when it loads, whose threads spin (sched_yield)
 * for about 0.1 s before they sleep: a core taken from the start of every command (vit classify
 * 140 ms -> 50 ms from exec to exit without it). vit's threads are OpenMP's and run OpenBLAS
 * single-threaded, so the pool is shut down at once, where the library exports the call (a weak
 * reference: other builds simply lack it). */
extern int blas_thread_shutdown_(void) __attribute__((weak));

/* OpenBLAS's thread count is the process's, not the calling thread's: set once, never changed,
 * so contexts computing on several threads at once each call single-threaded sgemm (the pthread
 * OpenBLAS serves concurrent calls from several threads). */
static void openblas_single(void) {
    openblas_set_num_threads(1);
    if (blas_thread_shutdown_) blas_thread_shutdown_();
}

void ops_init(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, openblas_single);
}

#ifdef VIT_ONEDNN
static ops_blas blas = OPS_BLAS_ONEDNN;
#else
static ops_blas blas = OPS_BLAS_OPENBLAS;
#endif

int ops_set_blas(ops_blas b) {
#ifdef VIT_ONEDNN
    if (b == OPS_BLAS_ONEDNN_BF16 && !onednn_bf16_native()) return -1;
#else
    if (b != OPS_BLAS_OPENBLAS) return -1;
#endif
    blas = b;
    return 0;
}

ops_blas ops_get_blas(void) {
    return blas;
}

void ops_release_buffers(void) {
#ifdef VIT_ONEDNN
#pragma omp parallel
    onednn_gemm_bf16_release();
#endif
}

/* Row-major C[M, N] = alpha·op(A)·op(B) + beta·C, on the calling thread alone when called from a
 * parallel region (oneDNN's sgemm runs serially there, as OpenBLAS does once ops_init ran). */
static void sgemm(int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A,
                  int lda, const float *B, int ldb, float beta, float *C, int ldc) {
#ifdef VIT_ONEDNN
    if (blas == OPS_BLAS_ONEDNN_BF16 &&
        onednn_gemm_bf16(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc) == 0)
        return;
    if (blas != OPS_BLAS_OPENBLAS) { /* bf16 where oneDNN could not: the fp32 product */
        dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', M, N, K, alpha, A, lda, B, ldb, beta,
                   C, ldc);
        return;
    }
#endif
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
                trans_b ? CblasTrans : CblasNoTrans, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

/* x[i] ranks before x[j]: larger, or equal and i lower; NaN after every number (a total order,
 * so the heap below stays consistent whatever the values). */
static int ranks_before(const float *x, int i, int j) {
    const int nan_i = isnan(x[i]) != 0, nan_j = isnan(x[j]) != 0;
    if (nan_i || nan_j) return nan_i == nan_j ? i < j : nan_j;
    return x[i] > x[j] || (x[i] == x[j] && i < j);
}

/* Restores heap[at..]: heap[0] ranks last of the n kept (a min-heap in the ranking). */
static void sift_down(const float *x, int *heap, int n, int at) {
    for (;;) {
        int last = at;
        const int l = 2 * at + 1, r = l + 1;
        if (l < n && ranks_before(x, heap[last], heap[l])) last = l;
        if (r < n && ranks_before(x, heap[last], heap[r])) last = r;
        if (last == at) return;
        const int t = heap[at];
        heap[at] = heap[last];
        heap[last] = t;
        at = last;
    }
}

/* O(n log k): the k best so far in a heap whose root is the one to beat; then the heap is taken
 * apart from its root, which fills out from the back. */
int topk_indices(const float *x, int n, int k, int *out) {
    k = k < n ? k : n;
    if (k <= 0) return 0;
    for (int i = 0; i < k; i++) out[i] = i;
    for (int i = k / 2 - 1; i >= 0; i--) sift_down(x, out, k, i);
    for (int j = k; j < n; j++)
        if (ranks_before(x, j, out[0])) {
            out[0] = j;
            sift_down(x, out, k, 0);
        }
    for (int m = k - 1; m > 0; m--) {
        const int t = out[0];
        out[0] = out[m];
        out[m] = t;
        sift_down(x, out, m, 0);
    }
    return k;
}

/* This thread's share [lo, hi) of n rows. */
static void thread_rows(int n, int *lo, int *hi) {
    const int t = omp_get_thread_num(), k = omp_get_num_threads();
    *lo = (int)((long long)n * t / k);
    *hi = (int)((long long)n * (t + 1) / k);
}

/* Element-wise work: below this many elements one thread does it all (a parallel region costs
 * more than it saves). */
#define PARALLEL_MIN 32768

/* This thread's share [lo, hi) of n elements, cut at multiples of 16 (whole cache lines). */
static void thread_elements(size_t n, size_t *lo, size_t *hi) {
    const size_t t = (size_t)omp_get_thread_num(), k = (size_t)omp_get_num_threads();
    const size_t units = (n + 15) / 16;
    *lo = units * t / k * 16;
    *hi = units * (t + 1) / k * 16;
    if (*lo > n) *lo = n;
    if (*hi > n) *hi = n;
}

typedef void (*unary_kernel)(float *out, const float *inp, size_t n);
typedef void (*binary_kernel)(float *out, const float *a, const float *b, size_t n);

/* out[i] = k(inp[i]) over the threads. */
static void run_unary(unary_kernel k, float *out, const float *inp, size_t n) {
    if (n < PARALLEL_MIN) {
        k(out, inp, n);
        return;
    }
#pragma omp parallel
    {
        size_t lo, hi;
        thread_elements(n, &lo, &hi);
        if (hi > lo) k(out + lo, inp + lo, hi - lo);
    }
}

static void run_binary(binary_kernel k, float *out, const float *a, const float *b, size_t n) {
    if (n < PARALLEL_MIN) {
        k(out, a, b, n);
        return;
    }
#pragma omp parallel
    {
        size_t lo, hi;
        thread_elements(n, &lo, &hi);
        if (hi > lo) k(out + lo, a + lo, b + lo, hi - lo);
    }
}

HOT_LOOP static void add_kernel(float *out, const float *a, const float *b, size_t n) {
    for (size_t i = 0; i < n; i++) out[i] = a[i] + b[i];
}

void vector_add(float *out, const float *a, const float *b, size_t n) {
    run_binary(add_kernel, out, a, b, n);
}

void linear_forward(float *out, const float *inp, const float *weight, const float *bias, int N,
                    int IN, int OUT) {
#ifdef VIT_ONEDNN
    /* bf16: the layer's product as one oneDNN product on all the threads (its own split), each
     * operand rounded once, where slices per thread would round the shared one (the weight, or
     * dweight's whole input) on every thread; rounding was 15 % of a bf16 training step. Where
     * oneDNN could not, the slices below (they write the bias again). */
    if (blas == OPS_BLAS_ONEDNN_BF16 && !omp_in_parallel()) {
        if (bias) {
#pragma omp parallel for schedule(static) if (N >= 16)
            for (int n = 0; n < N; n++)
                memcpy(out + (size_t)n * OUT, bias, sizeof(float) * (size_t)OUT);
        }
        if (onednn_gemm_bf16(0, 1, N, OUT, IN, 1.0f, inp, IN, weight, IN, bias ? 1.0f : 0.0f, out,
                             OUT) == 0)
            return;
    }
#endif
#pragma omp parallel if (N >= 16)
    {
        int lo, hi;
        thread_rows(N, &lo, &hi);
        if (hi > lo) {
            if (bias)
                for (int n = lo; n < hi; n++)
                    memcpy(out + (size_t)n * OUT, bias, sizeof(float) * (size_t)OUT);
            sgemm(0, 1, hi - lo, OUT, IN, 1.0f, inp + (size_t)lo * IN, IN, weight, IN,
                  bias ? 1.0f : 0.0f, out + (size_t)lo * OUT, OUT);
        }
    }
}

/* dbias[o] += Σ_n dout[n, o] for the columns lo..hi-1, rows in order (a fixed summation order);
 * cloned for the wider vectors, which the OpenMP region around it is not. */
HOT_LOOP static void sum_columns(float *dbias, const float *dout, int N, int OUT, int lo, int hi) {
    for (int n = 0; n < N; n++) {
        const float *g = dout + (size_t)n * OUT;
        for (int o = lo; o < hi; o++) dbias[o] += g[o];
    }
}

void linear_backward(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                     const float *weight, int N, int IN, int OUT) {
#ifdef VIT_ONEDNN
    /* bf16: dinp and dweight as whole products (see linear_forward), dout rounded once for both;
     * each falls back to the slices below (flagged done only when it ran) */
    if (blas == OPS_BLAS_ONEDNN_BF16 && !omp_in_parallel()) {
        const int done = onednn_linear_backward_bf16(dinp, dweight, dout, inp, weight, N, IN, OUT);
        if (done & 1) dinp = NULL;
        if (done & 2) dweight = NULL;
    }
#endif
#pragma omp parallel if (N >= 16)
    {
        int lo, hi;
        /* dinp: rows are independent, so each thread takes a slice of them */
        thread_rows(N, &lo, &hi);
        if (dinp && hi > lo)
            sgemm(0, 0, hi - lo, IN, OUT, 1.0f, dout + (size_t)lo * OUT, OUT, weight, IN, 0.0f,
                  dinp + (size_t)lo * IN, IN);
        /* dweight and dbias sum over all N rows: split the OUT outputs instead, so every element
         * has one writer and a fixed summation order (results do not depend on scheduling) */
        thread_rows(OUT, &lo, &hi);
        if (dweight && hi > lo)
            sgemm(1, 0, hi - lo, IN, N, 1.0f, dout + lo, OUT, inp, IN, 1.0f,
                  dweight + (size_t)lo * IN, IN);
        if (dbias && hi > lo) sum_columns(dbias, dout, N, OUT, lo, hi);
    }
}

/* A row's mean and 1/sqrt(variance + eps). Two passes in double: the variance of activations with
 * a large mean stays exact (the sums vectorised: their order does not matter at double's
 * precision). Inlined into each HOT_LOOP clone (called, it ran in the default clone's SSE2). */
static inline __attribute__((always_inline)) void row_moments(const float *x, int D, float eps,
                                                              float *mean, float *rstd) {
    double sum = 0.0;
#pragma omp simd reduction(+ : sum)
    for (int i = 0; i < D; i++) sum += x[i];
    double m = sum / D, var = 0.0;
#pragma omp simd reduction(+ : var)
    for (int i = 0; i < D; i++) var += (x[i] - m) * (x[i] - m);
    var /= D;
    *rstd = (float)(1.0 / sqrt(var + eps));
    *mean = (float)m;
}

/* Rows [n0, n1) of layernorm_forward. */
HOT_LOOP static void layernorm_rows(float *out, float *mean, float *rstd, const float *inp,
                                    const float *w, const float *b, int n0, int n1, int D,
                                    float eps) {
    for (int n = n0; n < n1; n++) {
        const float *x = inp + (size_t)n * D;
        float *y = out + (size_t)n * D;
        float mf, s;
        row_moments(x, D, eps, &mf, &s);
        for (int i = 0; i < D; i++) y[i] = (x[i] - mf) * s * w[i] + b[i];
        if (mean) mean[n] = mf;
        if (rstd) rstd[n] = s;
    }
}

/* The same rows rounded to bfloat16 as they are written. */
HOT_LOOP static void layernorm_rows_bf16(uint16_t *out, const float *inp, const float *w,
                                         const float *b, int n0, int n1, int D, float eps) {
    for (int n = n0; n < n1; n++) {
        const float *x = inp + (size_t)n * D;
        uint16_t *y = out + (size_t)n * D;
        float mf, s;
        row_moments(x, D, eps, &mf, &s);
        for (int i = 0; i < D; i++) y[i] = bf16_bits((x[i] - mf) * s * w[i] + b[i]);
    }
}

void layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *w,
                       const float *b, int N, int D, float eps) {
    if (N < 64) {
        layernorm_rows(out, mean, rstd, inp, w, b, 0, N, D, eps);
        return;
    }
#pragma omp parallel
    {
        int lo, hi;
        thread_rows(N, &lo, &hi);
        layernorm_rows(out, mean, rstd, inp, w, b, lo, hi, D, eps);
    }
}

void layernorm_forward_bf16(uint16_t *out, const float *inp, const float *w, const float *b, int N,
                            int D, float eps) {
#pragma omp parallel if (N >= 64)
    {
        int lo, hi;
        thread_rows(N, &lo, &hi);
        layernorm_rows_bf16(out, inp, w, b, lo, hi, D, eps);
    }
}

void layernorm_backward(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                        const float *mean, const float *rstd, const float *w, int N, int D) {
#pragma omp parallel if (N >= 64)
    {
        /* With x̂ = (x - mean)·rstd and g = dout·w:  dx = rstd · (g - mean(g) - x̂ · mean(g·x̂)). */
#pragma omp for schedule(static) nowait
        for (int n = 0; n < N; n++) {
            const float *x = inp + (size_t)n * D, *dy = dout + (size_t)n * D;
            const float m = mean[n], r = rstd[n];
            float *dx = dinp + (size_t)n * D;
            float sum_g = 0.0f, sum_gx = 0.0f;
            for (int i = 0; i < D; i++) {
                const float g = dy[i] * w[i];
                sum_g += g;
                sum_gx += g * (x[i] - m) * r;
            }
            const float mean_g = sum_g / D, mean_gx = sum_gx / D;
            for (int i = 0; i < D; i++)
                dx[i] += r * (dy[i] * w[i] - mean_g - (x[i] - m) * r * mean_gx);
        }
        /* dw, db sum over rows: each thread owns a slice of the D columns (one writer per
         * element, fixed order) */
        int lo, hi;
        thread_rows(D, &lo, &hi);
        for (int n = 0; n < N && hi > lo; n++) {
            const float *x = inp + (size_t)n * D, *dy = dout + (size_t)n * D;
            const float m = mean[n], r = rstd[n];
            if (dw)
                for (int i = lo; i < hi; i++) dw[i] += dy[i] * (x[i] - m) * r;
            if (db)
                for (int i = lo; i < hi; i++) db[i] += dy[i];
        }
    }
}

static float gelu_erf(float x) {
    return 0.5f * x * (1.0f + fast_erff(x * (float)M_SQRT1_2));
}

static float gelu_tanh(float x) {
    const float k = 0.7978845608028654f; /* sqrt(2/pi) */
    return 0.5f * x * (1.0f + tanhf(k * (x + 0.044715f * x * x * x)));
}

HOT_LOOP static void gelu_erf_kernel(float *out, const float *inp, size_t n) {
    for (size_t i = 0; i < n; i++) out[i] = gelu_erf(inp[i]);
}
HOT_LOOP static void gelu_tanh_kernel(float *out, const float *inp, size_t n) {
    for (size_t i = 0; i < n; i++) out[i] = gelu_tanh(inp[i]);
}
/* 0.5·x·(1 + tanh(u)) = x·σ(2u): one exp and one division, and no cancellation in 1 + tanh(u)
 * where u is negative. Where e^(-2u) overflows the quotient is ±0, as the GELU rounds there. */
static inline float gelu_tanh_sigmoid(float x) {
    const float k2 = 2 * 0.7978845608028654f, c = 0.044715f; /* 2·sqrt(2/pi) */
    return x / (1.0f + fast_expf(x * (-k2 - k2 * c * (x * x))));
}
HOT_LOOP static void gelu_tanh_fast_kernel(float *y, size_t n) {
    for (size_t i = 0; i < n; i++) y[i] = gelu_tanh_sigmoid(y[i]);
}
void gelu_tanh_fast(float *y, size_t n) {
    gelu_tanh_fast_kernel(y, n);
}
HOT_LOOP static void relu_kernel(float *out, const float *inp, size_t n) {
    for (size_t i = 0; i < n; i++) out[i] = inp[i] > 0.0f ? inp[i] : 0.0f;
}
/* CLIP's quick_gelu, x·σ(1.702x), with expf (x/(1 + e^(-1.702x)) is the same value, one division)
 */
HOT_LOOP static void quick_gelu_kernel(float *out, const float *inp, size_t n) {
    for (size_t i = 0; i < n; i++) out[i] = inp[i] / (1.0f + expf(-1.702f * inp[i]));
}

static const unary_kernel activation_kernels[] = {[ACT_GELU] = gelu_erf_kernel,
                                                  [ACT_GELU_TANH] = gelu_tanh_kernel,
                                                  [ACT_RELU] = relu_kernel,
                                                  [ACT_QUICK_GELU] = quick_gelu_kernel};

void activation_forward(float *out, const float *inp, size_t n, activation_kind act) {
    run_unary(activation_kernels[act], out, inp, n);
}

void activation_serial(float *out, const float *inp, size_t n, activation_kind act) {
    activation_kernels[act](out, inp, n);
}

/* d/dx 0.5·x·(1 + erf(x/√2)) = Φ(x) + x·φ(x). */
static float gelu_erf_grad(float x) {
    const float inv_sqrt_2pi = 0.3989422804014327f;
    return 0.5f * (1.0f + fast_erff(x * (float)M_SQRT1_2)) +
           x * inv_sqrt_2pi * fast_expf(-0.5f * x * x);
}

/* d/dx 0.5·x·(1 + tanh(u)), u = k·(x + c·x³):  0.5·(1 + t) + 0.5·x·(1 - t²)·k·(1 + 3c·x²). */
static float gelu_tanh_grad(float x) {
    const float k = 0.7978845608028654f, c = 0.044715f;
    const float t = tanhf(k * (x + c * x * x * x));
    return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * k * (1.0f + 3.0f * c * x * x);
}

HOT_LOOP static void gelu_erf_grad_kernel(float *dinp, const float *dout, const float *inp,
                                          size_t n) {
    for (size_t i = 0; i < n; i++) dinp[i] = dout[i] * gelu_erf_grad(inp[i]);
}
HOT_LOOP static void gelu_tanh_grad_kernel(float *dinp, const float *dout, const float *inp,
                                           size_t n) {
    for (size_t i = 0; i < n; i++) dinp[i] = dout[i] * gelu_tanh_grad(inp[i]);
}
/* d/dx x·σ(ax) = σ(ax)·(1 + a·x·(1 - σ(ax))), a = 1.702. */
HOT_LOOP static void quick_gelu_grad_kernel(float *dinp, const float *dout, const float *inp,
                                            size_t n) {
    for (size_t i = 0; i < n; i++) {
        const float s = 1.0f / (1.0f + expf(-1.702f * inp[i]));
        dinp[i] = dout[i] * s * (1.0f + 1.702f * inp[i] * (1.0f - s));
    }
}
HOT_LOOP static void relu_grad_kernel(float *dinp, const float *dout, const float *inp, size_t n) {
    for (size_t i = 0; i < n; i++) dinp[i] = inp[i] > 0.0f ? dout[i] : 0.0f;
}

void activation_backward(float *dinp, const float *dout, const float *inp, size_t n,
                         activation_kind act) {
    static const binary_kernel kernels[] = {[ACT_GELU] = gelu_erf_grad_kernel,
                                            [ACT_GELU_TANH] = gelu_tanh_grad_kernel,
                                            [ACT_RELU] = relu_grad_kernel,
                                            [ACT_QUICK_GELU] = quick_gelu_grad_kernel};
    run_binary(kernels[act], dinp, dout, inp, n);
}

/* silu(x) = x·σ(x), with expf (as quick_gelu). */
static inline float silu(float x) {
    return x / (1.0f + expf(-x));
}

/* One row of SwiGLU: out[c] = silu(u[c]) · u[h + c]. */
HOT_LOOP static void swiglu_row(float *out, const float *u, int h) {
    for (int c = 0; c < h; c++) out[c] = silu(u[c]) * u[h + c];
}

/* d/da silu(a)·b = b·σ(a)·(1 + a·(1 - σ(a))); d/db = silu(a). */
HOT_LOOP static void swiglu_grad_row(float *du, const float *dout, const float *u, int h) {
    for (int c = 0; c < h; c++) {
        const float a = u[c], s = 1.0f / (1.0f + expf(-a));
        du[c] = dout[c] * u[h + c] * s * (1.0f + a * (1.0f - s));
        du[h + c] = dout[c] * a * s;
    }
}

void swiglu_forward(float *out, const float *inp, int rows, int h) {
#pragma omp parallel for schedule(static) if ((size_t)rows * h >= PARALLEL_MIN)
    for (int r = 0; r < rows; r++) swiglu_row(out + (size_t)r * h, inp + (size_t)r * 2 * h, h);
}

void swiglu_backward(float *dinp, const float *dout, const float *inp, int rows, int h) {
#pragma omp parallel for schedule(static) if ((size_t)rows * h >= PARALLEL_MIN)
    for (int r = 0; r < rows; r++)
        swiglu_grad_row(dinp + (size_t)r * 2 * h, dout + (size_t)r * h, inp + (size_t)r * 2 * h, h);
}

/* One row of GeGLU: out[c] = gelu(u[c]) · u[h + c]. */
HOT_LOOP static void geglu_row(float *out, const float *u, int h) {
    for (int c = 0; c < h; c++) out[c] = gelu_erf(u[c]) * u[h + c];
}

/* d/da gelu(a)·b = b·gelu'(a); d/db = gelu(a). */
HOT_LOOP static void geglu_grad_row(float *du, const float *dout, const float *u, int h) {
    for (int c = 0; c < h; c++) {
        du[c] = dout[c] * u[h + c] * gelu_erf_grad(u[c]);
        du[h + c] = dout[c] * gelu_erf(u[c]);
    }
}

void geglu_forward(float *out, const float *inp, int rows, int h) {
#pragma omp parallel for schedule(static) if ((size_t)rows * h >= PARALLEL_MIN)
    for (int r = 0; r < rows; r++) geglu_row(out + (size_t)r * h, inp + (size_t)r * 2 * h, h);
}

void geglu_backward(float *dinp, const float *dout, const float *inp, int rows, int h) {
#pragma omp parallel for schedule(static) if ((size_t)rows * h >= PARALLEL_MIN)
    for (int r = 0; r < rows; r++)
        geglu_grad_row(dinp + (size_t)r * 2 * h, dout + (size_t)r * h, inp + (size_t)r * 2 * h, h);
}

/* One head's first rot columns turned by the angles whose cosines and sines are c, s [rot/2]. */
static void rotary_head(float *x, const float *c, const float *s, int rot, int interleaved) {
    const int half = rot / 2, step = interleaved ? 2 : 1, other = interleaved ? 1 : half;
    for (int i = 0; i < half; i++) {
        float *a = x + (size_t)i * step, *b = a + other;
        const float x1 = *a, x2 = *b;
        *a = x1 * c[i] - x2 * s[i];
        *b = x2 * c[i] + x1 * s[i];
    }
}

void rotary_forward(float *qkv, int B, int T, size_t ld, int D, int heads, int rot, double base,
                    int interleaved, int pos0, int inverse) {
    const int hd = D / heads, half = rot / 2;
#pragma omp parallel for schedule(static) if ((size_t)B * T * D >= PARALLEL_MIN)
    for (int t = 0; t < T; t++) {
        float c[512], s[512]; /* half <= 512: rot is at most a head's width (checked at load) */
        for (int i = 0; i < half; i++) {
            /* the angle in double: float32's pos·inv_freq would lose digits at long positions */
            const double angle = (double)(pos0 + t) * pow(base, -2.0 * i / rot);
            c[i] = (float)cos(angle);
            s[i] = (float)(inverse ? -sin(angle) : sin(angle));
        }
        for (int b = 0; b < B; b++)
            for (int part = 0; part < 2; part++) /* queries, keys */
                for (int h = 0; h < heads; h++)
                    rotary_head(qkv + ((size_t)b * T + t) * ld + (size_t)part * D + (size_t)h * hd,
                                c, s, rot, interleaved);
    }
}

/* 2^(−8(h+1)/n) for n a power of two. */
static double alibi_power_of_two(int n, int h) {
    return pow(2.0, -8.0 * (h + 1) / n);
}

double alibi_slope(int heads, int h) {
    int closest = 1;
    while (closest * 2 <= heads) closest *= 2;
    if (h < closest) return alibi_power_of_two(closest, h);
    return alibi_power_of_two(2 * closest, 2 * (h - closest)); /* every other of 2·closest */
}

void alibi_bias(float *bias, int H, int T) {
    for (int h = 0; h < H; h++) {
        const double slope = alibi_slope(H, h);
        for (int i = 0; i < T; i++)
            for (int j = 0; j < T; j++)
                bias[((size_t)h * T + i) * T + j] = (float)(-slope * abs(i - j));
    }
}

HOT_LOOP static void scale_row(float *out, const float *inp, const float *scale, int D) {
    for (int d = 0; d < D; d++) out[d] = inp[d] * scale[d];
}

void layer_scale_forward(float *out, const float *inp, const float *scale, int N, int D) {
#pragma omp parallel for schedule(static) if ((size_t)N * D >= PARALLEL_MIN)
    for (int n = 0; n < N; n++) scale_row(out + (size_t)n * D, inp + (size_t)n * D, scale, D);
}

void layer_scale_backward(float *dinp, float *dscale, const float *dout, const float *inp,
                          const float *scale, int N, int D) {
    if (dscale) /* before dinp, which may alias dout */
        for (int n = 0; n < N; n++) {
            const float *g = dout + (size_t)n * D, *x = inp + (size_t)n * D;
#pragma omp simd
            for (int d = 0; d < D; d++) dscale[d] += g[d] * x[d];
        }
    layer_scale_forward(dinp, dout, scale, N, D);
}

void dropout_mask(uint8_t *keep, size_t n, float p, uint64_t *rng) {
    /* keep when a uniform 32-bit number is >= p·2³², two numbers per 64-bit draw */
    const uint64_t threshold = p <= 0.0f   ? 0
                               : p >= 1.0f ? (1ull << 32)
                                           : (uint64_t)((double)p * 4294967296.0);
    const uint64_t base = *rng;
    const long long draws = (long long)((n + 1) / 2);
#pragma omp parallel for if (draws >= 65536) schedule(static)
    for (long long j = 0; j < draws; j++) {
        const uint64_t r = rng_mix(base + (uint64_t)(j + 1) * RNG_GAMMA);
        keep[2 * j] = (r & 0xffffffffu) >= threshold;
        if ((size_t)(2 * j + 1) < n) keep[2 * j + 1] = (r >> 32) >= threshold;
    }
    *rng = base + (uint64_t)draws * RNG_GAMMA;
}

void dropout_mask_part(uint8_t *keep, size_t n, float p, uint64_t *rng, size_t first,
                       size_t total) {
    if (first == 0 && n == total) {
        dropout_mask(keep, n, p, rng);
        return;
    }
    const uint64_t threshold = p <= 0.0f   ? 0
                               : p >= 1.0f ? (1ull << 32)
                                           : (uint64_t)((double)p * 4294967296.0);
    const uint64_t base = *rng;
#pragma omp parallel for if (n >= 131072) schedule(static)
    for (size_t i = 0; i < n; i++) { /* element g of the whole mask, as dropout_mask draws it */
        const size_t g = first + i;
        const uint64_t r = rng_mix(base + (uint64_t)(g / 2 + 1) * RNG_GAMMA);
        keep[i] = ((g & 1) ? r >> 32 : r & 0xffffffffu) >= threshold;
    }
    *rng = base + (uint64_t)((total + 1) / 2) * RNG_GAMMA;
}

static float dropout_scale(float p) {
    return p >= 1.0f ? 0.0f : 1.0f / (1.0f - p);
}

void dropout_forward(float *out, const float *inp, const uint8_t *keep, size_t n, float p) {
    const float s = dropout_scale(p);
    const long long count = (long long)n;
#pragma omp parallel for simd if (count >= 32768) schedule(static)
    for (long long i = 0; i < count; i++) out[i] = keep[i] ? inp[i] * s : 0.0f;
}

void dropout_backward(float *dinp, const float *dout, const uint8_t *keep, size_t n, float p) {
    dropout_forward(dinp, dout, keep, n, p);
}

/* Σ x[0..n) in eight interleaved partial sums: the sum's latency chain, not the adds, would
 * otherwise bound the loop (a 197-wide row: 4x faster). */
static inline float sum8(const float *x, int n) {
    float part[8] = {0};
    int i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++) part[k] += x[i + k];
    float sum = 0.0f;
    for (; i < n; i++) sum += x[i];
    for (int k = 0; k < 8; k++) sum += part[k];
    return sum;
}

/* max x[0..n) the same way. */
static inline float max8(const float *x, int n) {
    float part[8] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY,
                     -INFINITY, -INFINITY, -INFINITY, -INFINITY};
    int i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++) part[k] = x[i + k] > part[k] ? x[i + k] : part[k];
    float max = -INFINITY;
    for (; i < n; i++) max = x[i] > max ? x[i] : max;
    for (int k = 0; k < 8; k++) max = part[k] > max ? part[k] : max;
    return max;
}

HOT_LOOP static void softmax_rows(float *x, int rows, int cols) {
    for (int r = 0; r < rows; r++) {
        float *row = x + (size_t)r * cols;
        const float max = max8(row, cols);
        if (max == -INFINITY) { /* every key masked: attend to nothing rather than NaN */
            memset(row, 0, sizeof(float) * (size_t)cols);
            continue;
        }
        /* the exponentials in one vectorised pass, then their sum */
        for (int c = 0; c < cols; c++) row[c] = fast_expf(row[c] - max);
        const float inv = 1.0f / sum8(row, cols);
        for (int c = 0; c < cols; c++) row[c] *= inv;
    }
}

void softmax_forward(float *x, int rows, int cols) {
    softmax_rows(x, rows, cols);
}

void softmax_probs(float *probs, const float *logits, int rows, int cols) {
    for (int r = 0; r < rows; r++) {
        const float *x = logits + (size_t)r * cols;
        float *p = probs + (size_t)r * cols;
        double max = x[0], sum = 0.0;
        for (int j = 1; j < cols; j++) max = x[j] > max ? x[j] : max;
        for (int j = 0; j < cols; j++) sum += exp(x[j] - max);
        for (int j = 0; j < cols; j++) p[j] = (float)(exp(x[j] - max) / sum);
    }
}

/* Scores, softmax and weighted values for queries [r0, r1) of one (batch, head). bias: this
 * head's [T, T] score bias, or NULL. With keep (training dropout on the weights), the dropped
 * weights go to pd and multiply V; p keeps the softmax. */
static void attention_rows(float *out, float *p, float *pd, const float *q, const uint8_t *key_mask,
                           const float *bias, int causal, const uint8_t *keep, float drop, int r0,
                           int r1, int T, int D, int dh, float scale) {
    const int ld = 3 * D;
    const float *k = q + D, *v = q + 2 * D;
    /* scores[r0:r1, T] = scale · Q Kᵀ (+ bias), read in place from the fused qkv rows (stride 3D)
     */
    if (bias) memcpy(p + (size_t)r0 * T, bias + (size_t)r0 * T, sizeof(float) * (r1 - r0) * T);
    sgemm(0, 1, r1 - r0, T, dh, scale, q + (size_t)r0 * ld, ld, k, ld, bias ? 1.0f : 0.0f,
          p + (size_t)r0 * T, T);
    if (key_mask || causal)
        for (int i = r0; i < r1; i++)
            for (int j = 0; j < T; j++)
                if ((key_mask && !key_mask[j]) || (causal && j > i))
                    p[(size_t)i * T + j] = -INFINITY;
    softmax_forward(p + (size_t)r0 * T, r1 - r0, T);
    const float *weights = p;
    if (keep) {
        const size_t a = (size_t)r0 * T, n = (size_t)(r1 - r0) * T;
        dropout_forward(pd + a, p + a, keep + a, n, drop);
        weights = pd;
    }
    sgemm(0, 0, r1 - r0, dh, T, 1.0f, weights + (size_t)r0 * T, T, v, ld, 0.0f,
          out + (size_t)r0 * D, D);
}

/* Both forwards: tasks of (batch, head, block of query rows), enough of them to keep every core
 * busy at batch 1. */
static void attention_tasks(float *out, float *probs, float *dropped, const float *qkv,
                            const uint8_t *key_mask, const float *bias, int causal,
                            const uint8_t *keep, float drop, int B, int T, int D, int H) {
    const int dh = D / H, blocks = (T + ATTENTION_ROW_BLOCK - 1) / ATTENTION_ROW_BLOCK;
    const float scale = 1.0f / sqrtf((float)dh);
#pragma omp parallel for schedule(dynamic) if (B * H * blocks > 1)
    for (int task = 0; task < B * H * blocks; task++) {
        const int b = task / (H * blocks), h = task / blocks % H, blk = task % blocks;
        const int r0 = blk * ATTENTION_ROW_BLOCK,
                  r1 = r0 + ATTENTION_ROW_BLOCK < T ? r0 + ATTENTION_ROW_BLOCK : T;
        const size_t head = ((size_t)b * H + h) * T * T;
        attention_rows(out + (size_t)b * T * D + h * dh, probs + head, keep ? dropped + head : NULL,
                       qkv + (size_t)b * T * 3 * D + h * dh,
                       key_mask ? key_mask + (size_t)b * T : NULL,
                       bias ? bias + (size_t)h * T * T : NULL, causal, keep ? keep + head : NULL,
                       drop, r0, r1, T, D, dh, scale);
    }
}

void attention_forward(float *out, float *probs, const float *qkv, const uint8_t *key_mask,
                       const float *bias, int causal, int B, int T, int D, int H) {
    attention_tasks(out, probs, NULL, qkv, key_mask, bias, causal, NULL, 0.0f, B, T, D, H);
}

void attention_forward_dropout(float *out, float *probs, float *dropped, const float *qkv,
                               const uint8_t *key_mask, const float *bias, int causal,
                               const uint8_t *keep, float p, int B, int T, int D, int H) {
    attention_tasks(out, probs, dropped, qkv, key_mask, bias, causal, keep, p, B, T, D, H);
}

/* Attention backward of one (batch, head), products written out by hand.
 *
 * Why not cblas_sgemm: at ViT sizes (T ~ 50, dh ~ 16) the four small products per head cost more
 * in OpenBLAS's per-call overhead than in arithmetic, and concurrent calls slow each other down: a
 * 50x50x16 sgemm took 1.1 us on one thread but 2.2 us per call on each of two (measured; the
 * profile shows its buffer lock and memsets), so the threads gained nothing. The kernels below
 * work on register tiles of 4 rows x 8 floats (dh a multiple of 8, the common case) and scale
 * with the threads: B 128, T 50, D 64, H 4 went from 2.8 to 1.9 ms on two threads.
 *
 * Layout: q points at this head's Q columns in the fused [T, 3D] rows (K at +D, V at +2D), dq
 * likewise into dqkv; dout at this head's columns of [T, D] rows; P, dp, keep are [T, T]. */
#define TILE_ROWS 4
#define TILE_W    8

/* 8 floats as one value (GCC/Clang vector extension): scalar · vector broadcasts, and the tiles
 * below stay in registers. Loads and stores go through memcpy (no alignment assumed). */
typedef float v8f __attribute__((vector_size(TILE_W * sizeof(float))));

/* (Through pointers: passing vectors by value would tie the functions' ABI to the ISA flags.) */
static inline void load8(v8f *v, const float *p) {
    memcpy(v, p, sizeof *v);
}
static inline void store8(float *p, const v8f *v) {
    memcpy(p, v, sizeof *v);
}

/* dp[T, T] = dO·Vᵀ, with vt [dh, Tp] = Vᵀ zero-padded to Tp = T rounded up to TILE_W. */
HOT_LOOP static void head_dp(float *dp, const float *dout, const float *vt, int T, int Tp, int D,
                             int dh) {
    for (int i0 = 0; i0 < T; i0 += TILE_ROWS) {
        const float *o[TILE_ROWS]; /* rows past T repeat the last one; they are not stored */
        for (int r = 0; r < TILE_ROWS; r++) o[r] = dout + (size_t)(i0 + r < T ? i0 + r : T - 1) * D;
        for (int j0 = 0; j0 < Tp; j0 += TILE_W) {
            v8f acc[TILE_ROWS] = {0};
            for (int d = 0; d < dh; d++) {
                v8f v;
                load8(&v, vt + (size_t)d * Tp + j0);
                for (int r = 0; r < TILE_ROWS; r++) acc[r] += o[r][d] * v;
            }
            for (int r = 0; r < TILE_ROWS && i0 + r < T; r++) {
                float *row = dp + (size_t)(i0 + r) * T;
                if (j0 + TILE_W <= T)
                    store8(row + j0, &acc[r]);
                else
                    for (int c = 0; j0 + c < T; c++) row[j0 + c] = acc[r][c];
            }
        }
    }
}

/* out[i, :dh] (rows ld_out apart) = Σ_j a[i, j]·m[j, :dh] (rows ld_m apart), i.e. out = a·m. */
HOT_LOOP static void head_am(float *out, int ld_out, const float *a, const float *m, int ld_m,
                             int T, int dh) {
    for (int i0 = 0; i0 < T; i0 += TILE_ROWS) {
        const float *ar[TILE_ROWS];
        for (int r = 0; r < TILE_ROWS; r++) ar[r] = a + (size_t)(i0 + r < T ? i0 + r : T - 1) * T;
        for (int c0 = 0; c0 < dh; c0 += TILE_W) {
            v8f acc[TILE_ROWS] = {0};
            for (int j = 0; j < T; j++) {
                v8f mj;
                load8(&mj, m + (size_t)j * ld_m + c0);
                for (int r = 0; r < TILE_ROWS; r++) acc[r] += ar[r][j] * mj;
            }
            for (int r = 0; r < TILE_ROWS && i0 + r < T; r++)
                store8(out + (size_t)(i0 + r) * ld_out + c0, &acc[r]);
        }
    }
}

/* out[j, :dh] (rows ld_out apart) = Σ_i a[i, j]·m[i, :dh] (rows ld_m apart), i.e. out = aᵀ·m. */
HOT_LOOP static void head_atm(float *out, int ld_out, const float *a, const float *m, int ld_m,
                              int T, int dh) {
    for (int j0 = 0; j0 < T; j0 += TILE_ROWS) {
        int col[TILE_ROWS];
        for (int r = 0; r < TILE_ROWS; r++) col[r] = j0 + r < T ? j0 + r : T - 1;
        for (int c0 = 0; c0 < dh; c0 += TILE_W) {
            v8f acc[TILE_ROWS] = {0};
            for (int i = 0; i < T; i++) {
                const float *ai = a + (size_t)i * T;
                v8f mi;
                load8(&mi, m + (size_t)i * ld_m + c0);
                for (int r = 0; r < TILE_ROWS; r++) acc[r] += ai[col[r]] * mi;
            }
            for (int r = 0; r < TILE_ROWS && j0 + r < T; r++)
                store8(out + (size_t)(j0 + r) * ld_out + c0, &acc[r]);
        }
    }
}

/* Any dh, plain loops: the fallback when dh is not a multiple of TILE_W. */
static void head_dp_any(float *dp, const float *dout, const float *v, int T, int D, int dh) {
    const int ld = 3 * D;
    for (int i = 0; i < T; i++)
        for (int j = 0; j < T; j++) {
            float sum = 0.0f;
            for (int d = 0; d < dh; d++)
                sum = fmaf(dout[(size_t)i * D + d], v[(size_t)j * ld + d], sum);
            dp[(size_t)i * T + j] = sum;
        }
}

static void head_am_any(float *out, int ld_out, const float *a, const float *m, int ld_m, int T,
                        int dh, int transpose) {
    for (int i = 0; i < T; i++)
        for (int d = 0; d < dh; d++) {
            float sum = 0.0f;
            for (int j = 0; j < T; j++)
                sum = fmaf(transpose ? a[(size_t)j * T + i] : a[(size_t)i * T + j],
                           m[(size_t)j * ld_m + d], sum);
            out[(size_t)i * ld_out + d] = sum;
        }
}

/* How one head's backward products run: oneDNN's sgemm, the tiles (dh a multiple of the tile),
 * or the plain loops for any size. */
typedef enum { HEAD_BY_GEMM, HEAD_TILED, HEAD_ANY } head_path;

/* dV = P'ᵀ·dO, with P' (weights) the attention weights after dropout. */
static void head_dv(head_path path, float *dv, const float *weights, const float *dout, int T,
                    int D, int dh) {
    const int ld = 3 * D;
    if (path == HEAD_BY_GEMM)
        sgemm(1, 0, T, dh, T, 1.0f, weights, T, dout, D, 0.0f, dv, ld);
    else if (path == HEAD_TILED)
        head_atm(dv, ld, weights, dout, D, T, dh);
    else
        head_am_any(dv, ld, weights, dout, D, T, dh, 1);
}

/* dP' = dO·Vᵀ into dp [T, T]. */
static void head_dweights(head_path path, float *dp, const float *dout, const float *v, int T,
                          int D, int dh) {
    const int ld = 3 * D, Tp = (T + TILE_W - 1) / TILE_W * TILE_W;
    if (path == HEAD_BY_GEMM) {
        sgemm(0, 1, T, T, dh, 1.0f, dout, D, v, ld, 0.0f, dp, T);
    } else if (path == HEAD_TILED) {
        float vt[dh * Tp]; /* Vᵀ, zero-padded: a few KB at ViT sizes (150 KB at T 577, dh 64) */
        for (int d = 0; d < dh; d++) {
            for (int j = 0; j < T; j++) vt[d * Tp + j] = v[(size_t)j * ld + d];
            for (int j = T; j < Tp; j++) vt[d * Tp + j] = 0.0f;
        }
        head_dp(dp, dout, vt, T, Tp, D, dh);
    } else {
        head_dp_any(dp, dout, v, T, D, dh);
    }
}

/* softmax, in place on dp: dS = P ∘ (dP - rowsum(dP ∘ P)), times the score scale (S =
 * scale·Q·Kᵀ); zero wherever P is (masked keys) */
static void head_softmax_backward(float *dp, const float *P, int T, float scale) {
    for (int i = 0; i < T; i++) {
        float *g = dp + (size_t)i * T;
        const float *pr = P + (size_t)i * T;
        float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
        for (int j = 0; j < T; j++) dot += g[j] * pr[j];
#pragma omp simd
        for (int j = 0; j < T; j++) g[j] = scale * pr[j] * (g[j] - dot);
    }
}

/* dQ = dS·K, dK = dSᵀ·Q (dS in dp; q, k and dq, dk rows of stride 3·D). */
static void head_dqk(head_path path, float *dq, float *dk, const float *dp, const float *q,
                     const float *k, int T, int D, int dh) {
    const int ld = 3 * D;
    if (path == HEAD_BY_GEMM) {
        sgemm(0, 0, T, dh, T, 1.0f, dp, T, k, ld, 0.0f, dq, ld);
        sgemm(1, 0, T, dh, T, 1.0f, dp, T, q, ld, 0.0f, dk, ld);
    } else if (path == HEAD_TILED) {
        head_am(dq, ld, dp, k, ld, T, dh);
        head_atm(dk, ld, dp, q, ld, T, dh);
    } else {
        head_am_any(dq, ld, dp, k, ld, T, dh, 0);
        head_am_any(dk, ld, dp, q, ld, T, dh, 1);
    }
}

/* dp: [T, T] scratch. */
static void attention_head_backward(float *dq, float *dp, float *dp_out, const float *dout,
                                    const float *q, const float *P, const uint8_t *keep, float drop,
                                    int T, int D, int dh, float scale) {
    /* from T 64 on, oneDNN's sgemm (no lock, little per-call overhead) beats the tiles: at ViT-Ti
     * 224 (T 197, dh 64) they were a quarter of a training step */
    const head_path path = blas != OPS_BLAS_OPENBLAS && T >= ATTENTION_GEMM_MIN_T ? HEAD_BY_GEMM
                           : dh % TILE_W == 0                                     ? HEAD_TILED
                                                                                  : HEAD_ANY;
    const float *k = q + D, *v = q + 2 * D;
    float *dk = dq + D, *dv = dq + 2 * D;
    /* out = P'·V with P' the weights after dropout (built in dp, free until the next product) */
    const float *weights = P;
    if (keep) {
        dropout_forward(dp, P, keep, (size_t)T * T, drop);
        weights = dp;
    }
    head_dv(path, dv, weights, dout, T, D, dh);
    head_dweights(path, dp, dout, v, T, D, dh); /* dP', back through the mask to dP */
    if (keep) dropout_backward(dp, dp, keep, (size_t)T * T, drop);
    if (dp_out) memcpy(dp_out, dp, sizeof(float) * T * T);
    head_softmax_backward(dp, P, T, scale);
    head_dqk(path, dq, dk, dp, q, k, T, D, dh);
}

/* One (batch, head) pair's backward, task = b·H + h, with dp its [T, T] scratch; its score
 * gradient (left in dp, times the scale) added into dbias when wanted. */
static void attention_pair_backward(float *dqkv, float *dp, float *probs_grad, float *dbias,
                                    const float *dout, const float *qkv, const float *probs,
                                    const uint8_t *keep, float p, int task, int T, int D, int H) {
    const int b = task / H, h = task % H, dh = D / H;
    const float scale = 1.0f / sqrtf((float)dh);
    const size_t head = (size_t)task * T * T;
    attention_head_backward(dqkv + (size_t)b * T * 3 * D + h * dh, dp,
                            probs_grad ? probs_grad + head : NULL,
                            dout + (size_t)b * T * D + h * dh, qkv + (size_t)b * T * 3 * D + h * dh,
                            probs + head, keep ? keep + head : NULL, p, T, D, dh, scale);
    if (!dbias) return;
    /* the bias enters the scores unscaled: its gradient is dS without the scale */
    float *db = dbias + (size_t)h * T * T;
    const float inv = 1.0f / scale;
    for (size_t i = 0; i < (size_t)T * T; i++) db[i] += inv * dp[i];
}

void attention_backward(float *dqkv, float *dprobs, float *probs_grad, float *dbias,
                        const float *dout, const float *qkv, const float *probs,
                        const uint8_t *keep, float p, int B, int T, int D, int H) {
    const int max_threads = omp_get_max_threads();
    /* (batch, head) pairs are independent and write disjoint columns of dqkv. Each thread reuses
     * one [T, T] slot of dprobs for every pair it takes, so that scratch stays in its cache (at
     * most one thread per pair, so the slots fit). With dbias, a thread takes every item of a
     * head, so that no two threads add into one head's bias gradient (and the sum's order is
     * fixed). */
    const int tasks = dbias ? H : B * H, per = dbias ? B : 1;
#pragma omp parallel num_threads(max_threads < tasks ? max_threads : tasks)
    {
        float *dp = dprobs + (size_t)omp_get_thread_num() * T * T;
#pragma omp for schedule(dynamic)
        for (int task = 0; task < tasks; task++)
            for (int k = 0; k < per; k++) /* dbias: task is head h, items b = k */
                attention_pair_backward(dqkv, dp, probs_grad, dbias, dout, qkv, probs, keep, p,
                                        dbias ? k * H + task : task, T, D, H);
    }
}

double crossentropy_forward(float *probs, const float *logits, const int *labels, int B, int L,
                            float eps) {
    double total = 0.0;
    for (int b = 0; b < B; b++) {
        const float *z = logits + (size_t)b * L;
        float *p = probs + (size_t)b * L;
        double max = z[0], sum = 0.0, zsum = 0.0;
        for (int j = 1; j < L; j++) max = z[j] > max ? z[j] : max;
        for (int j = 0; j < L; j++) {
            sum += exp(z[j] - max);
            zsum += z[j];
        }
        const double lse = max + log(sum);
        for (int j = 0; j < L; j++) p[j] = (float)exp(z[j] - lse);
        /* -Σ q_j log p_j = (1 - eps)·(lse - z_y) + eps·(lse - mean z) */
        total += (1.0 - eps) * (lse - z[labels[b]]) + eps * (lse - zsum / L);
    }
    return total / B;
}

void crossentropy_backward(float *dlogits, const float *probs, const int *labels, int B, int L,
                           float eps, float dloss) {
    const float k = dloss / B, off = eps / L;
    for (int b = 0; b < B; b++) {
        const float *p = probs + (size_t)b * L;
        float *d = dlogits + (size_t)b * L;
        for (int j = 0; j < L; j++) d[j] = k * (p[j] - off);
        d[labels[b]] -= k * (1.0f - eps);
    }
}

/* q_mixed = q(label) + (1 - lambda)·(q(partner) - q(label)), and q(partner) - q(label) is (1 - eps)
 * on the partner's class and -(1 - eps) on the label's (the eps/L parts cancel): loss(partner) -
 * loss(label) = (1 - eps)·(z_label - z_partner). */
double crossentropy_mixed_forward(float *probs, const float *logits, const int *labels,
                                  const int *partners, float lambda, int B, int L, float eps) {
    double total = crossentropy_forward(probs, logits, labels, B, L, eps) * B;
    for (int b = 0; b < B; b++) {
        const float *z = logits + (size_t)b * L;
        total += (1.0 - lambda) * (1.0 - eps) * ((double)z[labels[b]] - z[partners[b]]);
    }
    return total / B;
}

void crossentropy_mixed_backward(float *dlogits, const float *probs, const int *labels,
                                 const int *partners, float lambda, int B, int L, float eps,
                                 float dloss) {
    crossentropy_backward(dlogits, probs, labels, B, L, eps, dloss);
    const float shift = dloss / B * (1.0f - lambda) * (1.0f - eps);
    for (int b = 0; b < B; b++) {
        dlogits[(size_t)b * L + labels[b]] += shift;
        dlogits[(size_t)b * L + partners[b]] -= shift;
    }
}

/* One counted row of token_crossentropy_forward: its softmax into p (p may alias z) and its loss
 * -Σ q_j log p_j = (1 - eps)·(lse - z_y) + eps·(lse - mean z), sums in double. */
static double token_row(float *p, const float *z, int y, int V, float eps, int *hit) {
    float max = z[0];
    int best = 0;
    for (int j = 1; j < V; j++)
        if (z[j] > max) max = z[j], best = j;
    double sum = 0.0, zsum = 0.0;
    for (int j = 0; j < V; j++) {
        sum += (double)expf(z[j] - max);
        zsum += z[j];
    }
    const double lse = max + log(sum);
    const double loss = (1.0 - eps) * (lse - z[y]) + eps * (lse - zsum / V);
    *hit = best == y;
    for (int j = 0; j < V; j++) p[j] = expf((float)(z[j] - lse));
    return loss;
}

double token_crossentropy_forward(float *probs, const float *logits, const int *labels, int N,
                                  int V, float eps, int *counted, int *hits) {
    double total = 0.0;
    int count = 0, right = 0;
#pragma omp parallel for reduction(+ : total, count, right) schedule(static) if (N >= 8)
    for (int r = 0; r < N; r++) {
        if (labels[r] < 0) continue;
        int hit;
        total += token_row(probs + (size_t)r * V, logits + (size_t)r * V, labels[r], V, eps, &hit);
        count++;
        right += hit;
    }
    *counted = count;
    if (hits) *hits = right;
    return count ? total / count : 0.0;
}

void token_crossentropy_backward(float *dlogits, const float *probs, const int *labels, int N,
                                 int V, float eps, float dloss, int count) {
    const float k = count > 0 ? dloss / (float)count : 0.0f, off = eps / V;
#pragma omp parallel for schedule(static) if (N >= 8)
    for (int r = 0; r < N; r++) {
        const float *p = probs + (size_t)r * V;
        float *d = dlogits + (size_t)r * V;
        if (labels[r] < 0) {
            memset(d, 0, sizeof(float) * (size_t)V);
            continue;
        }
        for (int j = 0; j < V; j++) d[j] = k * (p[j] - off);
        d[labels[r]] -= k * (1.0f - eps);
    }
}
