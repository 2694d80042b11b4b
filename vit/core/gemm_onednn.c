/* The oneDNN backend of vit/core/gemm.h: one matmul primitive per layer, made at load with the
 * rows a run-time dimension. Compiled when the build has oneDNN (VIT_ONEDNN). */
#ifdef VIT_ONEDNN
#include <math.h>
#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <oneapi/dnnl/dnnl.h>

#include "vit/base/alloc.h"
#include "vit/base/hot.h"
#include "vit/core/gemm_internal.h"

/* ---- the engine ---- */

static dnnl_engine_t engine;
static dnnl_stream_t stream;
static int ready;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void create_engine(void) {
    ready = dnnl_engine_create(&engine, dnnl_cpu, 0) == dnnl_success &&
            dnnl_stream_create(&stream, engine, dnnl_stream_default_flags) == dnnl_success;
}

int onednn_available(void) {
    pthread_once(&once, create_engine);
    return ready;
}

static int has_isa(dnnl_cpu_isa_t want) {
    return ((unsigned)dnnl_get_effective_cpu_isa() & (unsigned)want) == (unsigned)want;
}

static const char *isa_name(void) {
    if (has_isa(dnnl_cpu_isa_avx512_core_bf16)) return "avx512_core_bf16";
    if (has_isa(dnnl_cpu_isa_avx512_core_vnni)) return "avx512_core_vnni";
    if (has_isa(dnnl_cpu_isa_avx512_core)) return "avx512_core";
    if (has_isa(dnnl_cpu_isa_avx2_vnni)) return "avx2_vnni";
    if (has_isa(dnnl_cpu_isa_avx2)) return "avx2";
    return "below avx2";
}

const char *onednn_describe(char *buf, size_t size) {
    const dnnl_version_t *v = dnnl_version();
    snprintf(buf, size, "oneDNN %d.%d.%d (%s)", v->major, v->minor, v->patch, isa_name());
    return buf;
}

/* ---- memory descriptors ---- */

/* rows x cols, row-major; rows DNNL_RUNTIME_DIM_VAL for the batch rows. */
static dnnl_memory_desc_t matrix(dnnl_dim_t rows, dnnl_dim_t cols, dnnl_data_type_t type) {
    dnnl_memory_desc_t md;
    const dnnl_dims_t dims = {rows, cols};
    dnnl_memory_desc_init_by_tag(&md, 2, dims, type, dnnl_ab);
    return md;
}

/* The weight [OUT, IN] read as matmul's [IN, OUT] (PyTorch's layout, no reorder). */
static dnnl_memory_desc_t weight_desc(int IN, int OUT, dnnl_data_type_t type) {
    dnnl_memory_desc_t md;
    const dnnl_dims_t dims = {IN, OUT};
    dnnl_memory_desc_init_by_tag(&md, 2, dims, type, dnnl_ba);
    return md;
}

/* ---- the layer ---- */

typedef struct {
    dnnl_primitive_t prim;
    dnnl_memory_t weight, bias; /* made once; src and dst are made per run (the rows vary) */
    dnnl_data_type_t src_type, dst_type;
    int emulate_bf16; /* bf16 in fp32: rounded weight, rounded activations */
    void *owned;      /* the bf16 or int8 copy of the weight */
    float *scales;    /* int8: per output channel */
    int32_t *colsum;  /* int8: Σ_k of each output channel's integer weights */
    int q;            /* int8: the weights' largest magnitude */
} layer;

static dnnl_primitive_attr_t make_attr(gemm_epilogue epilogue, gemm_precision precision) {
    dnnl_primitive_attr_t attr;
    if (dnnl_primitive_attr_create(&attr) != dnnl_success) return NULL;
    if (precision == PRECISION_INT8) return attr; /* the epilogue follows the dequantisation */
    dnnl_post_ops_t po;
    dnnl_post_ops_create(&po);
    switch (epilogue) {
    case EPILOGUE_GELU:
        dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_gelu_erf, 0, 0);
        break;
    case EPILOGUE_GELU_TANH:
        dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_gelu_tanh, 0, 0);
        break;
    case EPILOGUE_RELU:
        dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_relu, 0, 0);
        break;
    case EPILOGUE_ACCUMULATE:
        dnnl_post_ops_append_sum(po, 1.0f);
        break;
    case EPILOGUE_NONE:
        break;
    }
    dnnl_primitive_attr_set_post_ops(attr, po);
    dnnl_post_ops_destroy(po);
    return attr;
}

/* The matmul primitive for src [*, IN] x weight -> dst [*, OUT], or NULL when oneDNN has no
 * implementation for these types on this CPU. */
static dnnl_primitive_t make_matmul(const gemm_weight *w, dnnl_data_type_t src,
                                    dnnl_data_type_t wei, int with_bias, dnnl_data_type_t dst) {
    const dnnl_memory_desc_t src_md = matrix(DNNL_RUNTIME_DIM_VAL, w->IN, src);
    const dnnl_memory_desc_t wei_md = weight_desc(w->IN, w->OUT, wei);
    const dnnl_memory_desc_t bias_md = matrix(1, w->OUT, dnnl_f32);
    const dnnl_memory_desc_t dst_md = matrix(DNNL_RUNTIME_DIM_VAL, w->OUT, dst);
    dnnl_matmul_desc_t desc;
    if (dnnl_matmul_desc_init(&desc, &src_md, &wei_md, with_bias ? &bias_md : NULL, &dst_md) !=
        dnnl_success)
        return NULL;
    dnnl_primitive_attr_t attr = make_attr(w->epilogue, w->precision);
    dnnl_primitive_desc_t pd = NULL;
    dnnl_primitive_t prim = NULL;
    if (attr && dnnl_primitive_desc_create(&pd, &desc, attr, engine, NULL) == dnnl_success)
        dnnl_primitive_create(&prim, pd);
    dnnl_primitive_desc_destroy(pd);
    dnnl_primitive_attr_destroy(attr);
    return prim;
}

static int make_memory(dnnl_memory_t *m, dnnl_memory_desc_t md, const void *data) {
    return dnnl_memory_create(m, &md, engine, (void *)data) == dnnl_success ? 0 : -1;
}

int onednn_bf16_native(void) {
    static int native = -1;
#pragma omp critical(vit_onednn_bf16)
    if (native < 0) {
        const gemm_weight probe = {.precision = PRECISION_BF16, .OUT = 16, .IN = 16};
        dnnl_primitive_t p =
            onednn_available() ? make_matmul(&probe, dnnl_bf16, dnnl_bf16, 1, dnnl_f32) : NULL;
        native = p != NULL;
        dnnl_primitive_destroy(p);
    }
    return native;
}

/* int8: each output channel's weights scaled to the integer range [-q, q] (q 127 where the CPU
 * multiplies u8·s8 pairs into int32 directly (VNNI); else 63, because the AVX2 path adds two
 * u8·s8 products in a saturating int16 first, which 8-bit weights overflow). */
static int quantize_weight(layer *L, const gemm_weight *w) {
    L->q = has_isa(dnnl_cpu_isa_avx512_core_vnni) || has_isa(dnnl_cpu_isa_avx2_vnni) ? 127 : 63;
    int8_t *w8 = malloc((size_t)w->OUT * w->IN);
    L->scales = malloc(sizeof(float) * (size_t)w->OUT);
    L->colsum = malloc(sizeof(int32_t) * (size_t)w->OUT);
    L->owned = w8;
    if (!w8 || !L->scales || !L->colsum) return -1;
    for (int o = 0; o < w->OUT; o++) {
        const float *row = w->weight + (size_t)o * w->IN;
        float amax = 0.0f;
        for (int i = 0; i < w->IN; i++) amax = fabsf(row[i]) > amax ? fabsf(row[i]) : amax;
        const float scale = amax > 0.0f ? amax / (float)L->q : 1.0f;
        int32_t sum = 0;
        for (int i = 0; i < w->IN; i++)
            sum += w8[(size_t)o * w->IN + i] = (int8_t)lrintf(row[i] / scale);
        L->scales[o] = scale;
        L->colsum[o] = sum;
    }
    return 0;
}

static size_t align64(size_t n) {
    return (n + 63) & ~(size_t)63;
}

static int prepare_int8(layer *L, gemm_weight *w, vit_error *err) {
    if (quantize_weight(L, w) != 0) return vit_fail(err, "out of memory");
    L->src_type = dnnl_u8;
    L->dst_type = dnnl_s32;
    L->prim = make_matmul(w, dnnl_u8, dnnl_s8, 0, dnnl_s32);
    if (!L->prim) return vit_fail(err, "oneDNN has no u8·s8 matmul on this CPU (%s)", isa_name());
    if (make_memory(&L->weight, weight_desc(w->IN, w->OUT, dnnl_s8), L->owned) != 0)
        return vit_fail(err, "out of memory");
    const size_t rows = (size_t)w->max_rows;
    /* u8 rows, then each row's scale and zero point, then the int32 products (run_int8) */
    w->workspace_bytes =
        align64(rows * w->IN) + 2 * align64(rows * sizeof(float)) + rows * w->OUT * sizeof(int32_t);
    w->extra_bytes = (size_t)w->OUT * w->IN + (size_t)w->OUT * sizeof(float);
    return 0;
}

/* bf16 on bf16 kernels: the weight converted once; else the same numbers in fp32. */
static int prepare_bf16(layer *L, gemm_weight *w, vit_error *err) {
    const size_t n = (size_t)w->OUT * w->IN;
    if (onednn_bf16_native()) {
        uint16_t *w16 = malloc(n * sizeof *w16);
        if (!(L->owned = w16)) return vit_fail(err, "out of memory");
        for (size_t i = 0; i < n; i++) {
            const float r = round_to_bf16(w->weight[i]);
            uint32_t bits;
            memcpy(&bits, &r, sizeof bits);
            w16[i] = (uint16_t)(bits >> 16);
        }
        L->src_type = dnnl_bf16;
        L->dst_type = dnnl_f32;
        L->prim = make_matmul(w, dnnl_bf16, dnnl_bf16, w->bias != NULL, dnnl_f32);
        w->workspace_bytes = (size_t)w->max_rows * w->IN * sizeof(uint16_t);
        w->extra_bytes = n * sizeof(uint16_t);
        return L->prim && make_memory(&L->weight, weight_desc(w->IN, w->OUT, dnnl_bf16), w16) == 0
                   ? 0
                   : vit_fail(err, "oneDNN: no bf16 matmul");
    }
    L->emulate_bf16 = 1;
    if (!(w->rounded = vit_alloc_floats(n))) return vit_fail(err, "out of memory");
    round_rows_bf16(w->rounded, w->weight, n);
    w->extra_bytes = n * sizeof(float);
    w->workspace_bytes = (size_t)w->max_rows * w->IN * sizeof(float);
    L->src_type = L->dst_type = dnnl_f32;
    L->prim = make_matmul(w, dnnl_f32, dnnl_f32, w->bias != NULL, dnnl_f32);
    return L->prim && make_memory(&L->weight, weight_desc(w->IN, w->OUT, dnnl_f32), w->rounded) == 0
               ? 0
               : vit_fail(err, "oneDNN: no fp32 matmul");
}

int onednn_prepare(gemm_weight *w, vit_error *err) {
    layer *L = calloc(1, sizeof *L);
    if (!(w->onednn = L)) return vit_fail(err, "out of memory");
    int rc;
    if (w->precision == PRECISION_INT8) {
        rc = prepare_int8(L, w, err);
    } else if (w->precision == PRECISION_BF16) {
        rc = prepare_bf16(L, w, err);
    } else {
        L->src_type = L->dst_type = dnnl_f32;
        L->prim = make_matmul(w, dnnl_f32, dnnl_f32, w->bias != NULL, dnnl_f32);
        rc =
            L->prim && make_memory(&L->weight, weight_desc(w->IN, w->OUT, dnnl_f32), w->weight) == 0
                ? 0
                : vit_fail(err, "oneDNN: no fp32 matmul on this CPU (%s)", isa_name());
    }
    if (rc == 0 && w->bias && w->precision != PRECISION_INT8 &&
        make_memory(&L->bias, matrix(1, w->OUT, dnnl_f32), w->bias) != 0)
        rc = vit_fail(err, "out of memory");
    return rc;
}

void onednn_free(gemm_weight *w) {
    layer *L = w->onednn;
    if (!L) return;
    dnnl_primitive_destroy(L->prim);
    dnnl_memory_destroy(L->weight);
    dnnl_memory_destroy(L->bias);
    free(L->owned);
    free(L->scales);
    free(L->colsum);
    free(L);
}

/* ---- running ---- */

/* Rows [r0, r1) of x [N, K] to u8, each with its own scale and zero point (asymmetric: the
 * row's range [min, max], zero included, mapped onto 0..255), so a skewed row (GELU's output)
 * keeps all 8 bits: x ≈ (q - zero)·scale. ONNX Runtime's dynamic quantisation, per row. */
HOT_LOOP static void quantize_rows(uint8_t *q, float *scale, float *zero, const float *x, int r0,
                                   int r1, int K) {
    for (int r = r0; r < r1; r++) {
        const float *row = x + (size_t)r * K;
        float lo = 0.0f, hi = 0.0f;
        for (int k = 0; k < K; k++) {
            lo = row[k] < lo ? row[k] : lo;
            hi = row[k] > hi ? row[k] : hi;
        }
        const float s = hi > lo ? (hi - lo) / 255.0f : 1.0f, inv = 1.0f / s;
        /* round to nearest by the 1.5·2^23 trick, which vectorises where lrintf does not */
        const float z = (-lo * inv + 12582912.0f) - 12582912.0f;
        scale[r] = s;
        zero[r] = z;
        uint8_t *out = q + (size_t)r * K;
        for (int k = 0; k < K; k++) {
            float v = (row[k] * inv + 12582912.0f) - 12582912.0f + z;
            v = v < 255.0f ? v : 255.0f;
            v = v > 0.0f ? v : 0.0f;
            out[k] = (uint8_t)(int)v;
        }
    }
}

/* y = (acc - zero·colsum)·(row scale · channel scale) + bias, rows [r0, r1): acc holds Σ q·w,
 * so the zero point's share comes off as zero times the channel's weight sum. */
HOT_LOOP static void dequantize_rows(float *y, const int32_t *acc, const float *row_scale,
                                     const float *row_zero, const float *scales,
                                     const int32_t *colsum, const float *bias, int r0, int r1,
                                     int OUT, int accumulate) {
    for (int r = r0; r < r1; r++) {
        const int32_t *a = acc + (size_t)r * OUT;
        float *out = y + (size_t)r * OUT;
        const float s = row_scale[r], z = row_zero[r];
        for (int o = 0; o < OUT; o++) {
            const float v =
                ((float)a[o] - z * (float)colsum[o]) * (s * scales[o]) + (bias ? bias[o] : 0.0f);
            out[o] = accumulate ? out[o] + v : v;
        }
    }
}

static void convert_rows_bf16(uint16_t *out, const float *x, size_t n) {
    for (size_t i = 0; i < n; i++) {
        const float r = round_to_bf16(x[i]);
        uint32_t bits;
        memcpy(&bits, &r, sizeof bits);
        out[i] = (uint16_t)(bits >> 16);
    }
}

static void execute(layer *L, const gemm_weight *w, const void *src, int N, void *dst) {
    dnnl_memory_t s = NULL, d = NULL;
    make_memory(&s, matrix(N, w->IN, L->src_type), src);
    make_memory(&d, matrix(N, w->OUT, L->dst_type), dst);
    dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, s}, {DNNL_ARG_WEIGHTS, L->weight}, {DNNL_ARG_DST, d}};
    int nargs = 3;
    if (L->bias) args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_BIAS, L->bias};
    dnnl_primitive_execute(L->prim, stream, nargs, args);
    dnnl_stream_wait(stream);
    dnnl_memory_destroy(s);
    dnnl_memory_destroy(d);
}

static void run_int8(layer *L, const gemm_weight *w, const float *x, int N, float *y, uint8_t *ws) {
    uint8_t *q = ws;
    const size_t scales = align64((size_t)w->max_rows * sizeof(float));
    float *row_scale = (float *)(ws + align64((size_t)w->max_rows * w->IN));
    float *row_zero = (float *)((uint8_t *)row_scale + scales);
    int32_t *acc = (int32_t *)((uint8_t *)row_zero + scales);
#pragma omp parallel
    {
        const int t = omp_get_thread_num(), k = omp_get_num_threads();
        quantize_rows(q, row_scale, row_zero, x, (int)((long long)N * t / k),
                      (int)((long long)N * (t + 1) / k), w->IN);
    }
    execute(L, w, q, N, acc);
    const int accumulate = w->epilogue == EPILOGUE_ACCUMULATE;
#pragma omp parallel
    {
        const int t = omp_get_thread_num(), k = omp_get_num_threads();
        const int r0 = (int)((long long)N * t / k), r1 = (int)((long long)N * (t + 1) / k);
        dequantize_rows(y, acc, row_scale, row_zero, L->scales, L->colsum, w->bias, r0, r1, w->OUT,
                        accumulate);
        if (!accumulate && r1 > r0)
            apply_epilogue(y + (size_t)r0 * w->OUT, NULL, (size_t)(r1 - r0) * w->OUT, w->epilogue);
    }
}

void onednn_run(gemm_weight *w, const float *x, int N, float *y, void *workspace) {
    layer *L = w->onednn;
    if (w->precision == PRECISION_INT8) {
        run_int8(L, w, x, N, y, workspace);
        return;
    }
    const void *src = x;
    if (L->src_type == dnnl_bf16) {
        convert_rows_bf16(workspace, x, (size_t)N * w->IN);
        src = workspace;
    } else if (L->emulate_bf16) {
        round_rows_bf16(workspace, x, (size_t)N * w->IN);
        src = workspace;
    }
    execute(L, w, src, N, y);
}
#endif
