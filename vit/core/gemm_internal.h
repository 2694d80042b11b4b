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
void onednn_free(gemm_weight *w);
void *onednn_state_create(void);
void onednn_state_free(void *state);
#endif

#endif
