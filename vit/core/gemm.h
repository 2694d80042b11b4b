#ifndef VIT_CORE_GEMM_H
#define VIT_CORE_GEMM_H

/* Linear layers for inference, weights prepared once at load: y[N, OUT] = x[N, IN]·Wᵀ + b, then
 * an epilogue (an activation, or an add into y for a residual branch) in the same pass where the
 * backend allows it. Two backends:
 *   - OpenBLAS: the reference fp32 path (and the training path, which uses ops.h directly):
 *     OpenMP owns the cores, each thread runs single-threaded sgemm on its share of the rows;
 *     OpenBLAS has no way to keep a packed weight, so "prepared" is the weight itself.
 *   - oneDNN (when built with it): one matmul primitive per layer, created at load with the
 *     batch rows a run-time dimension, the weight read in place in PyTorch's [OUT, IN] layout
 *     (on AVX2 the layout oneDNN picks for itself is slower at batch 1), bias and epilogue fused.
 *     Called from serial code: oneDNN runs its own OpenMP region on the same pool. The
 *     primitives use a scratchpad the caller gives (gemm_state), never one of their own, so two
 *     threads may run one at once (oneDNN's "user" scratchpad mode). A primitive's thread count
 *     is the creating thread's OpenMP count (oneDNN fixes it then): prepare on the thread count
 *     the layers will run with.
 * Precisions: fp32; bf16 (weights and activations rounded to bfloat16, products accumulated in
 * fp32: oneDNN's bf16 kernels where the CPU has them, else the same numbers computed in fp32,
 * with no speed-up); int8 (oneDNN: weights per output channel, symmetric, at load; activations
 * per row, at run time, as ONNX Runtime's dynamic quantisation; u8·s8 products in int32). */

#include <stddef.h>

#include "vit/base/error.h"
#include "vit/core/ops.h"

typedef enum { GEMM_OPENBLAS, GEMM_ONEDNN } gemm_backend;
typedef enum { PRECISION_FP32, PRECISION_BF16, PRECISION_INT8 } gemm_precision;
typedef enum {
    EPILOGUE_NONE,
    EPILOGUE_GELU,      /* y = gelu_erf(xWᵀ + b) */
    EPILOGUE_GELU_TANH, /* y = gelu_tanh(xWᵀ + b) */
    EPILOGUE_RELU,
    EPILOGUE_QUICK_GELU, /* y = quick_gelu(xWᵀ + b): x·σ(1.702x) */
    EPILOGUE_ACCUMULATE  /* y += xWᵀ + b (y holds the residual stream) */
} gemm_epilogue;

typedef struct gemm_weight gemm_weight;

/* What the build and the CPU offer. */
int gemm_backend_available(gemm_backend backend);
/* "OpenBLAS Zen" / "oneDNN 2.6 (avx2)": the kernels a backend runs here. */
const char *gemm_backend_describe(gemm_backend backend, char *buf, size_t size);
/* bf16 runs on bf16 kernels (1), or is computed in fp32 with bf16-rounded operands (0). */
int gemm_bf16_native(gemm_backend backend);
const char *gemm_backend_name(gemm_backend backend);
const char *gemm_precision_name(gemm_precision precision);

/* A prepared layer for weight [OUT, IN] and bias [OUT] (may be NULL), for at most max_rows rows
 * per run. The weight and bias must stay valid while the layer is used (fp32 reads them in
 * place). Errors: a precision the backend cannot run, memory. */
gemm_weight *gemm_prepare(gemm_backend backend, gemm_precision precision, const float *weight,
                          const float *bias, int OUT, int IN, gemm_epilogue epilogue, int max_rows,
                          vit_error *err);
/* The same for y = (x·Wᵀ + b) ⊙ scale, scale [OUT] applied before the epilogue (a layer scale
 * folded into the weight's rows and the bias): the layer computes with scaled copies it owns
 * (freed by gemm_free), so weight, bias and scale need not outlive the call. */
gemm_weight *gemm_prepare_scaled(gemm_backend backend, gemm_precision precision,
                                 const float *weight, const float *bias, const float *scale,
                                 int OUT, int IN, gemm_epilogue epilogue, int max_rows,
                                 vit_error *err);
/* Scratch a run needs (for max_rows rows): one block, shared by the layers that run in turn. */
size_t gemm_workspace_bytes(const gemm_weight *w);
/* 1 when running the layer reads the weight it was prepared from (OpenBLAS fp32, oneDNN fp32 in
 * PyTorch's layout); 0 when it runs on a copy of its own (reordered, bf16, int8, scaled): the
 * caller may then release the original. */
int gemm_weight_reads_source(const gemm_weight *w);
/* 1 when the layer runs below fp32 on kernels of their own: bf16 where the backend has bf16
 * kernels, int8. The model's other products (attention) may then run in bf16. */
int gemm_weight_runs_reduced(const gemm_weight *w);

/* What one caller needs to run prepared layers: the scratch, and on oneDNN a stream of its own
 * and the primitives made for row counts other than max_rows. A prepared layer is read-only
 * while it runs, so callers with a gemm_state each may run the same layers at once on different
 * threads; one gemm_state serves one run at a time. */
typedef struct gemm_state gemm_state;
/* A state for layers of backend whose largest gemm_workspace_bytes is workspace_bytes. NULL with
 * err when out of memory. */
gemm_state *gemm_state_create(gemm_backend backend, size_t workspace_bytes, vit_error *err);
void gemm_state_free(gemm_state *s);

/* Chains two prepared layers, the first's output the second's input (an MLP's fc1 and fc2), where
 * both run on oneDNN in bf16 (on bf16 kernels) or both in int8, and the first adds to no
 * residual. The first then hands its output over in the form the second computes with, in the
 * caller's float buffer y [N, OUT] (the second's x): bfloat16 [N, OUT], or int8's u8 rows, each
 * row's scale and zero point (the activations quantised as the second would quantise them), so
 * no float copy is written, read back and converted between them (bf16: 2-4 % of a ViT forward).
 * The results are the same bit for bit. Returns 1 when chained, 0 when the layers keep floats
 * (another backend or precision, other shapes). The first's workspace may grow: read
 * gemm_workspace_bytes after. */
int gemm_chain(gemm_weight *first, gemm_weight *second);
/* y[N, OUT] from x[N, IN] (N <= max_rows) with the caller's state. x and y must not overlap.
 * Called from serial code: the backend runs its own parallel region, with the calling thread's
 * OpenMP thread count. x or y holds the hand-over of chained layers (gemm_chain), not floats. */
void gemm_run(const gemm_weight *w, const float *x, int N, float *y, gemm_state *s);
/* Makes a prepared layer write its output y [N, OUT] as bfloat16 (in the first half of the
 * caller's float buffer), for a consumer that reads bf16 (the attention after qkv): where it runs
 * on oneDNN in bf16 (on bf16 kernels) or int8, and adds to no residual. The values are bf16_bits
 * of the floats it wrote before. Returns 1 when it does, 0 when it keeps floats. The workspace may
 * grow: read gemm_workspace_bytes after. */
int gemm_write_bf16(gemm_weight *w);
/* 1 when gemm_run of w writes bfloat16 (gemm_write_bf16). */
int gemm_writes_bf16(const gemm_weight *w);
/* 1 when w runs on bf16 kernels (oneDNN, bf16), so that its input may come as bfloat16
 * (gemm_run_bf16), rounded by whatever writes it instead of converted from floats here. */
int gemm_takes_bf16(const gemm_weight *w);
/* gemm_run with x [N, IN] as bfloat16 (gemm_takes_bf16(w)): the result gemm_run gives for floats
 * that round (bf16_bits) to x. */
void gemm_run_bf16(const gemm_weight *w, const uint16_t *x, int N, float *y, gemm_state *s);
void gemm_free(gemm_weight *w);

#endif
