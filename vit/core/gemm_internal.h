#ifndef VIT_CORE_GEMM_INTERNAL_H
#define VIT_CORE_GEMM_INTERNAL_H

/* Inside vit/core/gemm*.c only: the prepared layer, and the oneDNN backend's entry points. */

#include <stdint.h>

#include "vit/core/gemm.h"

struct gemm_weight {
    gemm_backend backend;
    gemm_precision precision;
    gemm_epilogue epilogue;
    int OUT, IN, max_rows;
    const float *weight, *bias; /* the fp32 originals, read in place */
    float *rounded;             /* bf16 computed in fp32: the weight rounded to bfloat16 */
    float
        *owned; /* gemm_prepare_scaled: the scaled weight and bias that weight and bias point to */
    void *onednn; /* the oneDNN backend's layer (read-only once prepared) */
    size_t workspace_bytes;
};

/* One caller's: the workspace (64-byte aligned), and the oneDNN backend's part (a stream, the
 * primitives made for other row counts; NULL on OpenBLAS). */
struct gemm_state {
    void *workspace;
    size_t workspace_bytes;
    void *onednn;
};

/* x rounded to the nearest bfloat16 (ties to even), kept as a float; NaN stays NaN. */
static inline float round_to_bf16(float x) {
    union {
        float f;
        uint32_t u;
    } v = {.f = x};
    if ((v.u & 0x7f800000u) == 0x7f800000u) return x; /* inf, NaN */
    v.u = (v.u + 0x7fffu + ((v.u >> 16) & 1u)) & 0xffff0000u;
    return v.f;
}

/* n floats of x rounded to bfloat16 into out. */
void round_rows_bf16(float *out, const float *x, size_t n);
/* The epilogue on rows [r0, r1) of y [*, OUT], y holding xWᵀ + b (acc: the residual to add to,
 * or NULL). */
void apply_epilogue(float *y, const float *acc, size_t n, gemm_epilogue epilogue);

#ifdef VIT_ONEDNN
int onednn_available(void);
const char *onednn_describe(char *buf, size_t size);
int onednn_bf16_native(void);
int onednn_prepare(gemm_weight *w, vit_error *err);
void onednn_run(const gemm_weight *w, const float *x, int N, float *y, gemm_state *s);
int onednn_takes_bf16(const gemm_weight *w);
void onednn_run_bf16(const gemm_weight *w, const uint16_t *x, int N, float *y, gemm_state *s);
void onednn_free(gemm_weight *w);
/* gemm_chain on two oneDNN layers of the same precision (bf16 native or int8): 1 when chained, 0
 * when not (the layers unchanged). */
int onednn_chain(gemm_weight *first, gemm_weight *second);
/* gemm_write_bf16 and gemm_writes_bf16 of a oneDNN layer (bf16 native or int8). */
int onednn_write_bf16(gemm_weight *w);
int onednn_writes_bf16(const gemm_weight *w);
/* 1 when the prepared layer runs on w->weight in place (not on a copy of its own). */
int onednn_reads_weight(const gemm_weight *w);
void *onednn_state_create(void);
void onednn_state_free(void *state);
/* Row-major C[M, N] = alpha·op(A)·op(B) + beta·C with A and B rounded to bfloat16 (ties to even)
 * and the products summed in fp32 on oneDNN's bf16 kernels: on the calling thread alone inside a
 * parallel region (as dnnl_sgemm), on all the threads outside one (the rounding too). Returns 0,
 * or -1 (C untouched) when oneDNN has no such product here or memory runs out. Each thread keeps
 * its buffers until onednn_gemm_bf16_release on that thread. */
int onednn_gemm_bf16(int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A,
                     int lda, const float *B, int ldb, float beta, float *C, int ldc);
/* linear_backward's two bf16 products, dout rounded once for both: dinp [N, IN] = dout·weight
 * (when dinp) and dweight [OUT, IN] += doutᵀ·inp (when dweight), on all the threads (outside a
 * parallel region). Returns which were done: bit 0 dinp, bit 1 dweight (0: oneDNN could not). */
int onednn_linear_backward_bf16(float *dinp, float *dweight, const float *dout, const float *inp,
                                const float *weight, int N, int IN, int OUT);
void onednn_gemm_bf16_release(void);
#endif

#endif
