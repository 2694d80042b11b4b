/* Prepared linear layers: the dispatch, and the OpenBLAS backend (the reference). */
#include "vit/core/gemm.h"

#include <cblas.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vit/base/alloc.h"
#include "vit/base/hot.h"
#include "vit/core/gemm_internal.h"

int gemm_backend_available(gemm_backend backend) {
    if (backend == GEMM_OPENBLAS) return 1;
#ifdef VIT_ONEDNN
    return onednn_available();
#else
    return 0;
#endif
}

const char *gemm_backend_name(gemm_backend backend) {
    return backend == GEMM_ONEDNN ? "onednn" : "openblas";
}

const char *gemm_precision_name(gemm_precision precision) {
    return precision == PRECISION_INT8 ? "int8" : precision == PRECISION_BF16 ? "bf16" : "fp32";
}

const char *gemm_backend_describe(gemm_backend backend, char *buf, size_t size) {
#ifdef VIT_ONEDNN
    if (backend == GEMM_ONEDNN) return onednn_describe(buf, size);
#endif
    if (backend == GEMM_ONEDNN)
        snprintf(buf, size, "oneDNN (not in this build)");
    else
        snprintf(buf, size, "OpenBLAS %s", openblas_get_corename());
    return buf;
}

int gemm_bf16_native(gemm_backend backend) {
#ifdef VIT_ONEDNN
    if (backend == GEMM_ONEDNN) return onednn_bf16_native();
#endif
    (void)backend;
    return 0;
}

HOT_LOOP static void round_rows_bf16_kernel(float *out, const float *x, size_t n) {
    for (size_t i = 0; i < n; i++) out[i] = round_to_bf16(x[i]);
}
void round_rows_bf16(float *out, const float *x, size_t n) {
    round_rows_bf16_kernel(out, x, n);
}

HOT_LOOP static void add_rows(float *y, const float *acc, size_t n) {
    for (size_t i = 0; i < n; i++) y[i] += acc[i];
}

void apply_epilogue(float *y, const float *acc, size_t n, gemm_epilogue epilogue) {
    switch (epilogue) {
    case EPILOGUE_GELU:
        activation_serial(y, y, n, ACT_GELU);
        break;
    case EPILOGUE_GELU_TANH:
        activation_serial(y, y, n, ACT_GELU_TANH);
        break;
    case EPILOGUE_RELU:
        activation_serial(y, y, n, ACT_RELU);
        break;
    case EPILOGUE_QUICK_GELU:
        activation_serial(y, y, n, ACT_QUICK_GELU);
        break;
    case EPILOGUE_ACCUMULATE:
        add_rows(y, acc, n);
        break;
    case EPILOGUE_NONE:
        break;
    }
}

/* ---- OpenBLAS ---- */

/* Each OpenMP thread: its rows into out (bias, then sgemm adding to it), then the epilogue; a
 * residual branch goes through the workspace and is added to y. The same operations, in the
 * same order, as linear_forward + activation_forward / vector_add. */
static void openblas_run(const gemm_weight *w, const float *x, int N, float *y, float *ws) {
    const int IN = w->IN, OUT = w->OUT, accumulate = w->epilogue == EPILOGUE_ACCUMULATE;
    const float *W = w->rounded ? w->rounded : w->weight;
    float *branch = accumulate ? ws : y;
    if (w->rounded) { /* bf16 in fp32: the activations rounded too, after the branch rows */
        float *xr = ws + (accumulate ? (size_t)N * OUT : 0);
        round_rows_bf16(xr, x, (size_t)N * IN);
        x = xr;
    }
#pragma omp parallel if (N >= 16)
    {
        const int t = omp_get_thread_num(), k = omp_get_num_threads();
        const int lo = (int)((long long)N * t / k), hi = (int)((long long)N * (t + 1) / k);
        if (hi > lo) {
            float *out = branch + (size_t)lo * OUT;
            if (w->bias)
                for (int n = lo; n < hi; n++)
                    memcpy(branch + (size_t)n * OUT, w->bias, sizeof(float) * (size_t)OUT);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, hi - lo, OUT, IN, 1.0f,
                        x + (size_t)lo * IN, IN, W, IN, w->bias ? 1.0f : 0.0f, out, OUT);
            const size_t n = (size_t)(hi - lo) * OUT;
            if (accumulate)
                apply_epilogue(y + (size_t)lo * OUT, out, n, EPILOGUE_ACCUMULATE);
            else if (w->rounded && w->epilogue == EPILOGUE_GELU_TANH) /* bf16: fp32 keeps tanhf */
                gelu_tanh_fast(out, n);
            else
                apply_epilogue(out, NULL, n, w->epilogue);
        }
    }
}

static int openblas_prepare(gemm_weight *w, vit_error *err) {
    if (w->precision == PRECISION_INT8)
        return vit_fail(err, "int8 needs the oneDNN backend (this build or CPU has none)");
    const size_t branch = w->epilogue == EPILOGUE_ACCUMULATE ? (size_t)w->max_rows * w->OUT : 0;
    const size_t rows = w->precision == PRECISION_BF16 ? (size_t)w->max_rows * w->IN : 0;
    w->workspace_bytes = (branch + rows) * sizeof(float);
    if (w->precision != PRECISION_BF16) return 0;
    const size_t n = (size_t)w->OUT * w->IN;
    if (!(w->rounded = vit_alloc_floats(n))) return vit_fail(err, "out of memory");
    round_rows_bf16(w->rounded, w->weight, n);
    return 0;
}

/* ---- dispatch ---- */

gemm_weight *gemm_prepare(gemm_backend backend, gemm_precision precision, const float *weight,
                          const float *bias, int OUT, int IN, gemm_epilogue epilogue, int max_rows,
                          vit_error *err) {
    if (!gemm_backend_available(backend))
        return vit_fail(err, "the %s backend is not available in this build",
                        gemm_backend_name(backend)),
               NULL;
    gemm_weight *w = calloc(1, sizeof *w);
    if (!w) return vit_fail(err, "out of memory"), NULL;
    *w = (gemm_weight){.backend = backend,
                       .precision = precision,
                       .epilogue = epilogue,
                       .OUT = OUT,
                       .IN = IN,
                       .max_rows = max_rows,
                       .weight = weight,
                       .bias = bias};
    int rc;
#ifdef VIT_ONEDNN
    if (backend == GEMM_ONEDNN)
        rc = onednn_prepare(w, err);
    else
#endif
        rc = openblas_prepare(w, err);
    if (rc != 0) {
        gemm_free(w);
        return NULL;
    }
    return w;
}

gemm_weight *gemm_prepare_scaled(gemm_backend backend, gemm_precision precision,
                                 const float *weight, const float *bias, const float *scale,
                                 int OUT, int IN, gemm_epilogue epilogue, int max_rows,
                                 vit_error *err) {
    const size_t n = (size_t)OUT * IN;
    float *copy = vit_alloc_floats(n + (bias ? (size_t)OUT : 0));
    if (!copy) return vit_fail(err, "out of memory"), NULL;
    for (int o = 0; o < OUT; o++)
        for (int i = 0; i < IN; i++)
            copy[(size_t)o * IN + i] = weight[(size_t)o * IN + i] * scale[o];
    for (int o = 0; bias && o < OUT; o++) copy[n + o] = bias[o] * scale[o];
    gemm_weight *w = gemm_prepare(backend, precision, copy, bias ? copy + n : NULL, OUT, IN,
                                  epilogue, max_rows, err);
    if (!w) {
        free(copy);
        return NULL;
    }
    w->owned = copy;
    return w;
}

gemm_state *gemm_state_create(gemm_backend backend, size_t workspace_bytes, vit_error *err) {
    gemm_state *s = calloc(1, sizeof *s);
    if (!s) return vit_fail(err, "out of memory"), NULL;
    s->workspace_bytes = workspace_bytes;
    int ok = !workspace_bytes || (s->workspace = vit_alloc_floats(workspace_bytes / 4 + 1));
#ifdef VIT_ONEDNN
    if (ok && backend == GEMM_ONEDNN) ok = (s->onednn = onednn_state_create()) != NULL;
#endif
    (void)backend;
    if (!ok) {
        gemm_state_free(s);
        return vit_fail(err, "out of memory"), NULL;
    }
    return s;
}

void gemm_state_free(gemm_state *s) {
    if (!s) return;
#ifdef VIT_ONEDNN
    onednn_state_free(s->onednn);
#endif
    free(s->workspace);
    free(s);
}

#ifdef VIT_ONEDNN
/* A layer whose output may be handed over in another form (gemm_chain, gemm_write_bf16): on
 * oneDNN below fp32, and not adding to a residual the caller holds in floats. */
static int may_hand_over(const gemm_weight *w) {
    return w->backend == GEMM_ONEDNN && gemm_weight_runs_reduced(w) &&
           w->epilogue != EPILOGUE_ACCUMULATE;
}
#endif

int gemm_chain(gemm_weight *first, gemm_weight *second) {
#ifdef VIT_ONEDNN
    if (!may_hand_over(first) || second->backend != GEMM_ONEDNN ||
        first->precision != second->precision || first->OUT != second->IN ||
        first->max_rows != second->max_rows)
        return 0;
    return onednn_chain(first, second);
#else
    (void)first, (void)second;
    return 0;
#endif
}

void gemm_run(const gemm_weight *w, const float *x, int N, float *y, gemm_state *s) {
#ifdef VIT_ONEDNN
    if (w->backend == GEMM_ONEDNN) {
        onednn_run(w, x, N, y, s);
        return;
    }
#endif
    openblas_run(w, x, N, y, s->workspace);
}

int gemm_write_bf16(gemm_weight *w) {
#ifdef VIT_ONEDNN
    return may_hand_over(w) && onednn_write_bf16(w);
#else
    (void)w;
    return 0;
#endif
}

int gemm_writes_bf16(const gemm_weight *w) {
#ifdef VIT_ONEDNN
    return w->backend == GEMM_ONEDNN && onednn_writes_bf16(w);
#else
    (void)w;
    return 0;
#endif
}

int gemm_takes_bf16(const gemm_weight *w) {
#ifdef VIT_ONEDNN
    return w->backend == GEMM_ONEDNN && onednn_takes_bf16(w);
#else
    (void)w;
    return 0;
#endif
}

void gemm_run_bf16(const gemm_weight *w, const uint16_t *x, int N, float *y, gemm_state *s) {
#ifdef VIT_ONEDNN
    onednn_run_bf16(w, x, N, y, s);
#else
    (void)w, (void)x, (void)N, (void)y, (void)s;
#endif
}

void gemm_free(gemm_weight *w) {
    if (!w) return;
#ifdef VIT_ONEDNN
    if (w->backend == GEMM_ONEDNN) onednn_free(w);
#endif
    free(w->rounded);
    free(w->owned);
    free(w);
}

size_t gemm_workspace_bytes(const gemm_weight *w) {
    return w->workspace_bytes;
}

int gemm_weight_reads_source(const gemm_weight *w) {
    if (w->owned) return 0; /* scaled: the layer's own copy */
#ifdef VIT_ONEDNN
    if (w->backend == GEMM_ONEDNN) return onednn_reads_weight(w);
#endif
    return w->rounded == NULL; /* OpenBLAS: fp32 in place, bf16 from its rounded copy */
}

int gemm_weight_runs_reduced(const gemm_weight *w) {
    return w->precision == PRECISION_INT8 ||
           (w->precision == PRECISION_BF16 && gemm_bf16_native(w->backend));
}
