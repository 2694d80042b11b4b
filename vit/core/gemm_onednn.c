/* The oneDNN backend of vit/core/gemm.h: matmul primitives made for a fixed number of rows, the
 * weight reordered once at load into the layout they choose (blocked, for oneDNN's brgemm
 * kernels: on AVX-512 1.1-1.2x the run-time-rows primitive in fp32 at ViT-B, and the only way to
 * its bf16 kernels). One primitive for the full batch is made at load and kept in the layer;
 * each caller's gemm_state keeps one per layer for the last other row count it ran (oneDNN's
 * primitive cache makes a repeat cheap). Where no fixed-rows primitive exists, one primitive
 * with the rows a run-time dimension.
 *
 * Threads: a prepared layer is never written after gemm_prepare. Its primitives run with the
 * scratchpad in the caller's workspace (oneDNN's user scratchpad mode: "thread-safe as long as
 * the scratchpad buffers are not used concurrently"), on the caller's stream; the weight and
 * bias memory objects are only read. Compiled when the build has oneDNN (VIT_ONEDNN). */
#ifdef VIT_ONEDNN
#include <math.h>
#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <oneapi/dnnl/dnnl.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "vit/base/alloc.h"
#include "vit/base/hot.h"
#include "vit/core/fastmath.h"
#include "vit/core/gemm_internal.h"

/* ---- the engine ---- */

static dnnl_engine_t engine;
static int ready;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void create_engine(void) {
    ready = dnnl_engine_create(&engine, dnnl_cpu, 0) == dnnl_success;
}

int onednn_available(void) {
    pthread_once(&once, create_engine);
    return ready;
}

static int has_isa(dnnl_cpu_isa_t want) {
    return ((unsigned)dnnl_get_effective_cpu_isa() & (unsigned)want) == (unsigned)want;
}

/* The widest ISA oneDNN uses here: AMX (Sapphire Rapids) is named, as its int8 and bf16
 * products run on the tile kernels (brg:avx512_core_amx_int8 in ONEDNN_VERBOSE) where the
 * CPU and the kernel grant them. */
static const char *isa_name(void) {
    if (has_isa(dnnl_cpu_isa_avx512_core_amx)) return "avx512_core_amx";
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

static size_t align64(size_t n) {
    return (n + 63) & ~(size_t)63;
}

/* The scratchpad a primitive runs with (user mode: the caller gives it). */
static const dnnl_memory_desc_t *scratchpad_desc(const_dnnl_primitive_t prim) {
    const_dnnl_primitive_desc_t pd = NULL;
    if (dnnl_primitive_get_primitive_desc(prim, &pd) != dnnl_success) return NULL;
    return dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
}

static size_t scratchpad_bytes(const_dnnl_primitive_t prim) {
    const dnnl_memory_desc_t *md = scratchpad_desc(prim);
    return md ? dnnl_memory_desc_get_size(md) : 0;
}

/* rows x cols, row-major; rows DNNL_RUNTIME_DIM_VAL for the batch rows. */
static dnnl_memory_desc_t matrix(dnnl_dim_t rows, dnnl_dim_t cols, dnnl_data_type_t type) {
    dnnl_memory_desc_t md;
    const dnnl_dims_t dims = {rows, cols};
    dnnl_memory_desc_init_by_tag(&md, 2, dims, type, dnnl_ab);
    return md;
}

/* The weight [OUT, IN] read as matmul's [IN, OUT] (PyTorch's layout, as given). */
static dnnl_memory_desc_t weight_desc(int IN, int OUT, dnnl_data_type_t type) {
    dnnl_memory_desc_t md;
    const dnnl_dims_t dims = {IN, OUT};
    dnnl_memory_desc_init_by_tag(&md, 2, dims, type, dnnl_ba);
    return md;
}

/* ---- the layer ---- */

typedef struct {
    dnnl_data_type_t src_type, wei_type, dst_type;
    int with_bias;
    int runtime_rows;            /* one primitive for any row count (no fixed-rows one here) */
    dnnl_memory_desc_t wei_md;   /* the weight's layout, chosen at load */
    dnnl_primitive_t prim;       /* for max_rows rows (any rows where runtime_rows) */
    size_t scratchpad;           /* prim's scratchpad bytes, after `own` in the workspace */
    size_t own;                  /* the workspace bytes run_int8 and the bf16 paths use, aligned */
    dnnl_memory_t weight, bias;  /* made once; src and dst are made per run (the rows vary) */
    int emulate_bf16;            /* bf16 in fp32: rounded weight, rounded activations */
    int chained_in, chained_out; /* gemm_chain: the input, the output is the hand-over */
    int writes_bf16;             /* gemm_write_bf16: the output bfloat16 (int8: rounded as
                                  * dequantised; bf16: the product's dst_type) */
    void *owned;                 /* the bf16 or int8 copy of the weight */
    int reads_weight;            /* L->weight is w->weight itself, in place (fp32, plain layout) */
    float *scales;               /* int8: per output channel */
    int32_t *colsum;             /* int8: Σ_k of each output channel's integer weights */
    int q;                       /* int8: the weights' largest magnitude */
    int gelu_avx512;             /* int8: the GELUs by gelu_rows_avx512, gelu_tanh_rows_avx512 */
} layer;

static dnnl_primitive_attr_t make_attr(gemm_epilogue epilogue, gemm_precision precision) {
    dnnl_primitive_attr_t attr;
    if (dnnl_primitive_attr_create(&attr) != dnnl_success) return NULL;
    if (dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user) != dnnl_success) {
        dnnl_primitive_attr_destroy(attr);
        return NULL;
    }
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
    case EPILOGUE_QUICK_GELU: /* swish: x·σ(alpha·x) */
        dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_swish, 1.702f, 0);
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

/* The matmul primitive for src [rows, IN] x weight -> dst [rows, OUT] (rows may be
 * DNNL_RUNTIME_DIM_VAL), the weight in layout wei_md (format any: oneDNN chooses, and *chosen
 * tells), or NULL when oneDNN has no implementation for these types on this CPU. */
static dnnl_primitive_t make_matmul(const gemm_weight *w, const layer *L, dnnl_dim_t rows,
                                    const dnnl_memory_desc_t *wei_md, dnnl_memory_desc_t *chosen) {
    const dnnl_memory_desc_t src_md = matrix(rows, w->IN, L->src_type);
    const dnnl_memory_desc_t bias_md = matrix(1, w->OUT, dnnl_f32);
    const dnnl_memory_desc_t dst_md = matrix(rows, w->OUT, L->dst_type);
    dnnl_matmul_desc_t desc;
    if (dnnl_matmul_desc_init(&desc, &src_md, wei_md, L->with_bias ? &bias_md : NULL, &dst_md) !=
        dnnl_success)
        return NULL;
    dnnl_primitive_attr_t attr = make_attr(w->epilogue, w->precision);
    dnnl_primitive_desc_t pd = NULL;
    dnnl_primitive_t prim = NULL;
    if (attr && dnnl_primitive_desc_create(&pd, &desc, attr, engine, NULL) == dnnl_success &&
        dnnl_primitive_create(&prim, pd) == dnnl_success && chosen)
        *chosen = *dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    dnnl_primitive_desc_destroy(pd);
    dnnl_primitive_attr_destroy(attr);
    return prim;
}

static dnnl_memory_desc_t any_layout(const gemm_weight *w, dnnl_data_type_t type) {
    dnnl_memory_desc_t md;
    const dnnl_dims_t dims = {w->IN, w->OUT};
    dnnl_memory_desc_init_by_tag(&md, 2, dims, type, dnnl_format_tag_any);
    return md;
}

/* L->prim and L->wei_md: a primitive for max_rows rows in the weight layout oneDNN chooses,
 * provided that layout serves a single row too (so every row count in between can have its
 * own); else one primitive for any row count. Returns 0, or -1 when there is neither. */
static int make_primitives(const gemm_weight *w, layer *L) {
    const dnnl_memory_desc_t any = any_layout(w, L->wei_type);
    L->prim = make_matmul(w, L, w->max_rows, &any, &L->wei_md);
    if (L->prim) {
        dnnl_primitive_t one = make_matmul(w, L, 1, &L->wei_md, NULL);
        const int serves_one = one != NULL;
        dnnl_primitive_destroy(one);
        if (serves_one) return 0;
        dnnl_primitive_destroy(L->prim);
    }
    L->runtime_rows = 1;
    L->prim = make_matmul(w, L, DNNL_RUNTIME_DIM_VAL, &any, &L->wei_md);
    return L->prim ? 0 : -1;
}

static int make_memory(dnnl_memory_t *m, dnnl_memory_desc_t md, const void *data) {
    return dnnl_memory_create(m, &md, engine, (void *)data) == dnnl_success ? 0 : -1;
}

/* L->weight from data [OUT, IN] of L->wei_type: in place where the chosen layout is PyTorch's
 * (returns 0), else reordered once into memory of oneDNN's, its bytes added to *extra (returns
 * 1); -1 when out of memory. */
static int make_weight_memory(const gemm_weight *w, layer *L, const void *data) {
    const dnnl_memory_desc_t plain = weight_desc(w->IN, w->OUT, L->wei_type);
    if (dnnl_memory_desc_equal(&plain, &L->wei_md)) return make_memory(&L->weight, plain, data);
    dnnl_memory_t from = NULL;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_primitive_t reorder = NULL;
    dnnl_stream_t stream = NULL; /* this load's own: another thread may be loading too */
    int rc = -1;
    if (dnnl_stream_create(&stream, engine, dnnl_stream_default_flags) == dnnl_success &&
        make_memory(&from, plain, data) == 0 &&
        dnnl_memory_create(&L->weight, &L->wei_md, engine, DNNL_MEMORY_ALLOCATE) == dnnl_success &&
        dnnl_reorder_primitive_desc_create(&pd, &plain, engine, &L->wei_md, engine, NULL) ==
            dnnl_success &&
        dnnl_primitive_create(&reorder, pd) == dnnl_success) {
        dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, L->weight}};
        rc = dnnl_primitive_execute(reorder, stream, 2, args) == dnnl_success &&
                     dnnl_stream_wait(stream) == dnnl_success
                 ? 1
                 : -1;
    }
    dnnl_primitive_destroy(reorder);
    dnnl_primitive_desc_destroy(pd);
    dnnl_memory_destroy(from);
    dnnl_stream_destroy(stream);
    return rc;
}

/* The primitives and the weight memory for data (the layer's own copy, L->owned, is freed once
 * reordered); 0, or -1 with err set. The workspace grows by the primitive's scratchpad, after
 * the part the layer uses itself. */
static int make_layer(gemm_weight *w, layer *L, const void *data, vit_error *err) {
    if (make_primitives(w, L) != 0)
        return vit_fail(err, "oneDNN has no %s matmul on this CPU (%s)",
                        gemm_precision_name(w->precision), isa_name());
    L->own = align64(w->workspace_bytes);
    L->scratchpad = scratchpad_bytes(L->prim);
    w->workspace_bytes = L->own + L->scratchpad;
    const int reordered = make_weight_memory(w, L, data);
    if (reordered < 0) return vit_fail(err, "out of memory");
    L->reads_weight = !reordered && data == (const void *)w->weight;
    if (reordered && data == L->owned) {
        free(L->owned);
        L->owned = NULL;
    }
    return 0;
}

int onednn_bf16_native(void) {
    static int native = -1;
#pragma omp critical(vit_onednn_bf16)
    if (native < 0) {
        const gemm_weight probe = {.precision = PRECISION_BF16, .OUT = 16, .IN = 16};
        const layer bf16 = {.src_type = dnnl_bf16, .wei_type = dnnl_bf16, .dst_type = dnnl_f32};
        const dnnl_memory_desc_t any = any_layout(&probe, dnnl_bf16);
        dnnl_primitive_t p = onednn_available() ? make_matmul(&probe, &bf16, 16, &any, NULL) : NULL;
        native = p != NULL;
        dnnl_primitive_destroy(p);
    }
    return native;
}

#if defined(__x86_64__)
/* int8's GELU on AVX-512: fast_erff's fit with fused multiply-adds, and its division replaced by a
 * reciprocal estimate and one Newton step (within an ulp or two of the quotient): int8 rounds these
 * values to 8 bits next. GELU went from 7.2 to 4.3 % of an int8 ViT-Ti batch 8 forward. */
__attribute__((target("avx512f"), always_inline)) static inline __m512 gelu16(__m512 v) {
    const __m512 x = _mm512_max_ps(_mm512_min_ps(v * (float)M_SQRT1_2, _mm512_set1_ps(4.0f)),
                                   _mm512_set1_ps(-4.0f));
    const __m512 x2 = x * x;
    __m512 p = _mm512_set1_ps(fast_erf_p[0]), q = _mm512_set1_ps(fast_erf_q[0]);
    for (int i = 1; i < 7; i++) p = _mm512_fmadd_ps(p, x2, _mm512_set1_ps(fast_erf_p[i]));
    for (int i = 1; i < 5; i++) q = _mm512_fmadd_ps(q, x2, _mm512_set1_ps(fast_erf_q[i]));
    __m512 r = _mm512_rcp14_ps(q);
    r = _mm512_mul_ps(r, _mm512_fnmadd_ps(q, r, _mm512_set1_ps(2.0f)));
    const __m512 erf = _mm512_mul_ps(_mm512_mul_ps(x, p), r);
    return _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(0.5f), v),
                         _mm512_add_ps(erf, _mm512_set1_ps(1.0f)));
}

/* The tanh GELU as gelu_tanh_fast computes it, x / (1 + e^t) with t = -2u, here with fused
 * multiply-adds, 2^n by scalef and the division by the reciprocal refined once. t is clamped to
 * [-100, 80]: e^80 keeps the Newton step finite (at -inf it would make 0·inf), and below -100 the
 * quotient is x itself either way; a NaN is carried by v. The scalar tanhf made a SigLIP-B/16
 * tower in int8 half as fast as the same tower with quick_gelu. */
__attribute__((target("avx512f"), always_inline)) static inline __m512 gelu_tanh16(__m512 v) {
    const float k2 = 2 * 0.7978845608028654f, c = 0.044715f;
    __m512 t = _mm512_mul_ps(
        v, _mm512_fmadd_ps(_mm512_mul_ps(v, v), _mm512_set1_ps(-k2 * c), _mm512_set1_ps(-k2)));
    t = _mm512_max_ps(_mm512_min_ps(t, _mm512_set1_ps(80.0f)), _mm512_set1_ps(-100.0f));
    const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(t, _mm512_set1_ps(1.44269504088896341f)),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), t); /* fast_expf's ln2 split */
    r = _mm512_fmadd_ps(n, _mm512_set1_ps(2.12194440e-4f), r);
    __m512 p = _mm512_set1_ps(1.0f / 720);
    static const float poly[6] = {1.0f / 120, 1.0f / 24, 1.0f / 6, 0.5f, 1.0f, 1.0f};
    for (int i = 0; i < 6; i++) p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(poly[i]));
    const __m512 q = _mm512_add_ps(_mm512_scalef_ps(p, n), _mm512_set1_ps(1.0f));
    __m512 inv = _mm512_rcp14_ps(q);
    inv = _mm512_mul_ps(inv, _mm512_fnmadd_ps(q, inv, _mm512_set1_ps(2.0f)));
    return _mm512_mul_ps(v, inv);
}

/* y[0, n) through f16, the tail of fewer than 16 lanes masked. */
#define AVX512_ROWS(y, n, f16)                                                                     \
    do {                                                                                           \
        int i_ = 0;                                                                                \
        for (; i_ + 16 <= (n); i_ += 16)                                                           \
            _mm512_storeu_ps((y) + i_, f16(_mm512_loadu_ps((y) + i_)));                            \
        if (i_ < (n)) {                                                                            \
            const __mmask16 tail = (__mmask16)((1u << ((n)-i_)) - 1);                              \
            _mm512_mask_storeu_ps((y) + i_, tail, f16(_mm512_maskz_loadu_ps(tail, (y) + i_)));     \
        }                                                                                          \
    } while (0)

__attribute__((target("avx512f"))) static void gelu_rows_avx512(float *y, int n) {
    AVX512_ROWS(y, n, gelu16);
}

__attribute__((target("avx512f"))) static void gelu_tanh_rows_avx512(float *y, int n) {
    AVX512_ROWS(y, n, gelu_tanh16);
}

static int has_avx512(void) {
    return __builtin_cpu_supports("avx512f");
}
#else
static void gelu_rows_avx512(float *y, int n) {
    apply_epilogue(y, NULL, (size_t)n, EPILOGUE_GELU);
}
static void gelu_tanh_rows_avx512(float *y, int n) {
    gelu_tanh_fast(y, (size_t)n);
}
static int has_avx512(void) {
    return 0;
}
#endif

/* The largest |x[i]| (a NaN left out, as `a > m ? a : m` leaves it), in 16 lanes that the
 * compiler turns into vector maxima: the one-lane chain was 22 % of loading bge-base in int8. */
HOT_LOOP static float abs_max(const float *x, int n) {
    float lane[16] = {0};
    int i = 0;
    for (; i + 16 <= n; i += 16)
        for (int j = 0; j < 16; j++) {
            const float a = fabsf(x[i + j]);
            lane[j] = a > lane[j] ? a : lane[j];
        }
    float m = 0.0f;
    for (; i < n; i++) m = fabsf(x[i]) > m ? fabsf(x[i]) : m;
    for (int j = 0; j < 16; j++) m = lane[j] > m ? lane[j] : m;
    return m;
}

/* q[i] = x[i] / scale rounded to the nearest integer, ties to even (lrintf's rounding in the
 * default mode: adding and taking off 1.5·2^23 rounds |v| < 2^22 exactly so, inline and
 * vectorised where lrintf was a call per weight); a NaN gives 0 as before. Returns Σ q[i]. */
HOT_LOOP static int32_t round_row(int8_t *q, const float *x, int n, float scale) {
    const float magic = 12582912.0f; /* 1.5 * 2^23 */
    int32_t sum = 0;
    for (int i = 0; i < n; i++) {
        const float v = x[i] / scale;
        const float r = v == v ? (v + magic) - magic : 0.0f;
        sum += q[i] = (int8_t)(int)r;
    }
    return sum;
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
        const float amax = abs_max(row, w->IN);
        const float scale = amax > 0.0f ? amax / (float)L->q : 1.0f;
        L->scales[o] = scale;
        L->colsum[o] = round_row(w8 + (size_t)o * w->IN, row, w->IN, scale);
    }
    return 0;
}

static int prepare_int8(layer *L, gemm_weight *w, vit_error *err) {
    if (quantize_weight(L, w) != 0) return vit_fail(err, "out of memory");
    L->gelu_avx512 = has_avx512();
    L->src_type = dnnl_u8;
    L->wei_type = dnnl_s8;
    L->dst_type = dnnl_s32;
    const size_t rows = (size_t)w->max_rows;
    /* u8 rows, then each row's scale and zero point, then the int32 products (run_int8) */
    w->workspace_bytes =
        align64(rows * w->IN) + 2 * align64(rows * sizeof(float)) + rows * w->OUT * sizeof(int32_t);
    return make_layer(w, L, L->owned, err);
}

static void convert_rows_bf16(uint16_t *out, const float *x, size_t n);

/* bf16 on bf16 kernels: the weight converted once; else the same numbers in fp32. */
static int prepare_bf16(layer *L, gemm_weight *w, vit_error *err) {
    const size_t n = (size_t)w->OUT * w->IN;
    if (onednn_bf16_native()) {
        uint16_t *w16 = malloc(n * sizeof *w16);
        if (!(L->owned = w16)) return vit_fail(err, "out of memory");
        convert_rows_bf16(w16, w->weight, n);
        L->src_type = L->wei_type = dnnl_bf16;
        L->dst_type = dnnl_f32;
        w->workspace_bytes = (size_t)w->max_rows * w->IN * sizeof(uint16_t);
        return make_layer(w, L, w16, err);
    }
    L->emulate_bf16 = 1;
    if (!(w->rounded = vit_alloc_floats(n))) return vit_fail(err, "out of memory");
    round_rows_bf16(w->rounded, w->weight, n);
    w->workspace_bytes = (size_t)w->max_rows * w->IN * sizeof(float);
    L->src_type = L->wei_type = L->dst_type = dnnl_f32;
    return make_layer(w, L, w->rounded, err);
}

int onednn_prepare(gemm_weight *w, vit_error *err) {
    layer *L = calloc(1, sizeof *L);
    if (!(w->onednn = L)) return vit_fail(err, "out of memory");
    L->with_bias = w->bias && w->precision != PRECISION_INT8;
    int rc;
    if (w->precision == PRECISION_INT8) {
        rc = prepare_int8(L, w, err);
    } else if (w->precision == PRECISION_BF16) {
        rc = prepare_bf16(L, w, err);
    } else {
        L->src_type = L->wei_type = L->dst_type = dnnl_f32;
        rc = make_layer(w, L, w->weight, err);
    }
    if (rc == 0 && L->with_bias && make_memory(&L->bias, matrix(1, w->OUT, dnnl_f32), w->bias) != 0)
        rc = vit_fail(err, "out of memory");
    return rc;
}

/* bf16: the layer's product writes bfloat16 (1; 0 when oneDNN has none, the layer unchanged). */
static int output_bf16(gemm_weight *w, layer *L) {
    L->dst_type = dnnl_bf16;
    dnnl_primitive_t prim =
        make_matmul(w, L, L->runtime_rows ? DNNL_RUNTIME_DIM_VAL : w->max_rows, &L->wei_md, NULL);
    if (!prim) {
        L->dst_type = dnnl_f32;
        return 0;
    }
    dnnl_primitive_destroy(L->prim);
    L->prim = prim;
    L->scratchpad = scratchpad_bytes(prim);
    const size_t need = L->own + L->scratchpad;
    w->workspace_bytes = need > w->workspace_bytes ? need : w->workspace_bytes;
    return 1;
}

int onednn_write_bf16(gemm_weight *w) {
    layer *L = w->onednn;
    if (L->chained_out ||
        (w->precision == PRECISION_BF16 && (L->emulate_bf16 || !output_bf16(w, L))))
        return 0;
    return L->writes_bf16 = 1;
}

int onednn_writes_bf16(const gemm_weight *w) {
    const layer *L = w->onednn;
    return L->writes_bf16;
}

int onednn_chain(gemm_weight *first, gemm_weight *second) {
    layer *from = first->onednn, *to = second->onednn;
    if (first->precision == PRECISION_BF16 && (from->emulate_bf16 || !output_bf16(first, from)))
        return 0;
    if (first->precision == PRECISION_INT8 && first->OUT < 128) /* room for int8_handover */
        return 0;
    from->chained_out = to->chained_in = 1;
    return 1;
}

int onednn_reads_weight(const gemm_weight *w) {
    const layer *L = w->onednn;
    return L && L->reads_weight;
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
        /* without the pragma the compiler keeps this a scalar loop (a NaN's order), and it was 16 %
         * of an int8 forward; a NaN is left out of the range either way */
#pragma omp simd reduction(min : lo) reduction(max : hi)
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
        /* clamped as integers: v is whole, so this is the float clamp's result for every number
         * (a NaN's INT_MIN gives 0 where the float clamp gave 255; the NaN stays in the residual
         * stream either way), and the compiler packs it with integer min/max where the float
         * clamp cost compares and masks (8 % of an int8 ViT-Ti forward) */
        for (int k = 0; k < K; k++) {
            int v = (int)((row[k] * inv + 12582912.0f) - 12582912.0f + z);
            v = v < 255 ? v : 255;
            out[k] = (uint8_t)(v > 0 ? v : 0);
        }
    }
}

/* One output of an int8 product: (acc - zero·colsum)·(row scale · channel scale) + bias; acc holds
 * Σ q·w, so the zero point's share comes off as zero times the channel's weight sum. */
static inline float dequantized(int32_t acc, float zero, int32_t colsum, float row_scale,
                                float scale, const float *bias, int o) {
    return ((float)acc - zero * (float)colsum) * (row_scale * scale) + (bias ? bias[o] : 0.0f);
}

/* dequantized over rows [r0, r1) into y, or added to it. */
HOT_LOOP static void dequantize_rows(float *y, const int32_t *acc, const float *row_scale,
                                     const float *row_zero, const float *scales,
                                     const int32_t *colsum, const float *bias, int r0, int r1,
                                     int OUT, int accumulate) {
    for (int r = r0; r < r1; r++) {
        const int32_t *a = acc + (size_t)r * OUT;
        float *out = y + (size_t)r * OUT;
        const float s = row_scale[r], z = row_zero[r];
        for (int o = 0; o < OUT; o++) {
            const float v = dequantized(a[o], z, colsum[o], s, scales[o], bias, o);
            out[o] = accumulate ? out[o] + v : v;
        }
    }
}

/* dequantize_rows's values (no residual) rounded to bfloat16 as they are written, for a layer
 * writing bf16 with no epilogue (qkv): one pass instead of floats written and read back. */
HOT_LOOP static void dequantize_rows_bf16(uint16_t *y, const int32_t *acc, const float *row_scale,
                                          const float *row_zero, const float *scales,
                                          const int32_t *colsum, const float *bias, int r0, int r1,
                                          int OUT) {
    for (int r = r0; r < r1; r++) {
        const int32_t *a = acc + (size_t)r * OUT;
        uint16_t *out = y + (size_t)r * OUT;
        const float s = row_scale[r], z = row_zero[r];
        for (int o = 0; o < OUT; o++)
            out[o] = bf16_bits(dequantized(a[o], z, colsum[o], s, scales[o], bias, o));
    }
}

/* bf16_bits over n floats (a vectorised loop: as a scalar one it was 7 % of a bf16 training
 * step). */
HOT_LOOP static void convert_bf16(uint16_t *out, const float *x, size_t n) {
    for (size_t i = 0; i < n; i++) out[i] = bf16_bits(x[i]);
}

/* x [n] to bfloat16, the threads each on a share (at ViT-S batch 1 a serial pass was 6 % of the
 * forward). */
static void convert_rows_bf16(uint16_t *out, const float *x, size_t n) {
#pragma omp parallel if (n >= 65536)
    {
        const int t = omp_get_thread_num(), k = omp_get_num_threads();
        const size_t lo = n * t / k, hi = n * (t + 1) / k;
        convert_bf16(out + lo, x + lo, hi - lo);
    }
}

/* ---- a caller's state: its stream, and its primitives for other row counts ---- */

typedef struct {
    const gemm_weight *w; /* NULL: a free slot */
    int rows;
    dnnl_primitive_t prim;
    size_t scratchpad;
} other_primitive;

typedef struct {
    dnnl_stream_t stream;
    other_primitive *slots; /* open addressing on the layer's address */
    size_t capacity, used;
} caller;

void *onednn_state_create(void) {
    caller *c = calloc(1, sizeof *c);
    if (c && onednn_available() &&
        dnnl_stream_create(&c->stream, engine, dnnl_stream_default_flags) == dnnl_success)
        return c;
    free(c);
    return NULL;
}

void onednn_state_free(void *state) {
    caller *c = state;
    if (!c) return;
    for (size_t i = 0; i < c->capacity; i++) dnnl_primitive_destroy(c->slots[i].prim);
    free(c->slots);
    dnnl_stream_destroy(c->stream);
    free(c);
}

static other_primitive *find_slot(other_primitive *slots, size_t capacity, const gemm_weight *w) {
    size_t i = ((uintptr_t)w >> 4) * 0x9E3779B97F4A7C15u % capacity;
    while (slots[i].w && slots[i].w != w) i = (i + 1) % capacity;
    return &slots[i];
}

/* c's slot for layer w (a new one zeroed); NULL when out of memory. */
static other_primitive *slot_for(caller *c, const gemm_weight *w) {
    if (2 * (c->used + 1) > c->capacity) {
        const size_t capacity = c->capacity ? 2 * c->capacity : 64;
        other_primitive *slots = calloc(capacity, sizeof *slots);
        if (!slots) return NULL;
        for (size_t i = 0; i < c->capacity; i++)
            if (c->slots[i].w) *find_slot(slots, capacity, c->slots[i].w) = c->slots[i];
        free(c->slots);
        c->slots = slots;
        c->capacity = capacity;
    }
    other_primitive *slot = find_slot(c->slots, c->capacity, w);
    if (!slot->w) {
        slot->w = w;
        c->used++;
    }
    return slot;
}

/* The workspace holds at least bytes (its contents are not kept); 0, or -1 out of memory. */
static int reserve_workspace(gemm_state *s, size_t bytes) {
    if (bytes <= s->workspace_bytes) return 0;
    float *grown = vit_alloc_floats(bytes / 4 + 1);
    if (!grown) return -1;
    free(s->workspace);
    s->workspace = grown;
    s->workspace_bytes = bytes;
    return 0;
}

/* The primitive for N rows and its scratchpad bytes: the layer's for max_rows, else the
 * caller's, made when a new row count comes (oneDNN's cache keeps the ones made before); NULL
 * when it cannot be made (out of memory). */
static dnnl_primitive_t primitive_for(const layer *L, const gemm_weight *w, int N, gemm_state *s,
                                      size_t *scratchpad) {
    *scratchpad = L->scratchpad;
    if (L->runtime_rows || N == w->max_rows) return L->prim;
    other_primitive *o = slot_for(s->onednn, w);
    if (!o) return NULL;
    if (N != o->rows) {
        dnnl_primitive_destroy(o->prim);
        o->prim = make_matmul(w, L, N, &L->wei_md, NULL);
        o->rows = o->prim ? N : 0;
        o->scratchpad = o->prim ? scratchpad_bytes(o->prim) : 0;
    }
    *scratchpad = o->scratchpad;
    return o->prim && reserve_workspace(s, L->own + o->scratchpad) == 0 ? o->prim : NULL;
}

/* dst = src x weight (+ bias, epilogue) on the caller's stream, with its scratchpad after the
 * layer's own part of the workspace. Returns 0, or -1 when it could not run. */
static int execute(const layer *L, const gemm_weight *w, dnnl_primitive_t prim, size_t scratchpad,
                   const void *src, int N, void *dst, gemm_state *s) {
    const caller *c = s->onednn;
    dnnl_memory_t m[3] = {NULL, NULL, NULL};
    make_memory(&m[0], matrix(N, w->IN, L->src_type), src);
    make_memory(&m[1], matrix(N, w->OUT, L->dst_type), dst);
    dnnl_exec_arg_t args[5] = {
        {DNNL_ARG_SRC, m[0]}, {DNNL_ARG_WEIGHTS, L->weight}, {DNNL_ARG_DST, m[1]}};
    int nargs = 3, ok = 1;
    if (L->bias) args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_BIAS, L->bias};
    if (scratchpad) {
        ok = make_memory(&m[2], *scratchpad_desc(prim), (char *)s->workspace + L->own) == 0;
        args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, m[2]};
    }
    ok = ok && m[0] && m[1] &&
         dnnl_primitive_execute(prim, c->stream, nargs, args) == dnnl_success &&
         dnnl_stream_wait(c->stream) == dnnl_success;
    for (int i = 0; i < 3; i++) dnnl_memory_destroy(m[i]);
    return ok ? 0 : -1;
}

/* A product that could not run leaves NaN, never a stale or partial answer: the models'
 * finite-logits check then reports it. */
static void fail_rows(float *y, int N, int OUT) {
    for (size_t i = 0; i < (size_t)N * OUT; i++) y[i] = NAN;
}

/* The hand-over between chained int8 layers (gemm_chain), in a buffer of N rows of K floats: the
 * u8 rows, then each row's scale, then its zero point (K >= 128 leaves room: onednn_chain). */
static void int8_handover(const void *buf, int N, int K, uint8_t **q, float **scale, float **zero) {
    *q = (uint8_t *)buf;
    *scale = (float *)(*q + align64((size_t)N * K));
    *zero = (float *)((uint8_t *)*scale + align64((size_t)N * sizeof(float)));
}

/* An int8 row's epilogue: the GELUs on AVX-512 by the kernels above, the tanh GELU elsewhere by
 * gelu_tanh_fast (tanhf's scalar calls were as slow as the products), the rest as everywhere. */
static void int8_epilogue(const layer *L, float *y, int n, gemm_epilogue epilogue) {
    if (epilogue == EPILOGUE_GELU && L->gelu_avx512)
        gelu_rows_avx512(y, n);
    else if (epilogue == EPILOGUE_GELU_TANH && L->gelu_avx512)
        gelu_tanh_rows_avx512(y, n);
    else if (epilogue == EPILOGUE_GELU_TANH)
        gelu_tanh_fast(y, (size_t)n);
    else
        apply_epilogue(y, NULL, (size_t)n, epilogue);
}

/* Row r of the int32 products acc [*, OUT] dequantized with the epilogue into y, or, when the
 * layer hands over to a chained one, in place (each int32 read before its float is written) and
 * quantised from there into the hand-over as the next layer would quantise it. */
static void finish_row(const layer *L, const gemm_weight *w, int32_t *acc, const float *row_scale,
                       const float *row_zero, int r, float *y, uint8_t *next_q, float *next_scale,
                       float *next_zero) {
    const int accumulate = w->epilogue == EPILOGUE_ACCUMULATE;
    if (L->writes_bf16 && !L->chained_out && w->epilogue == EPILOGUE_NONE) {
        dequantize_rows_bf16((uint16_t *)(void *)y, acc, row_scale, row_zero, L->scales, L->colsum,
                             w->bias, r, r + 1, w->OUT);
        return;
    }
    float *out = L->chained_out || L->writes_bf16 ? (float *)(void *)acc : y;
    dequantize_rows(out, acc, row_scale, row_zero, L->scales, L->colsum, w->bias, r, r + 1, w->OUT,
                    accumulate);
    const size_t at = (size_t)r * w->OUT;
    if (!accumulate) int8_epilogue(L, out + at, w->OUT, w->epilogue);
    if (L->chained_out)
        quantize_rows(next_q, next_scale, next_zero, out, r, r + 1, w->OUT);
    else if (L->writes_bf16)
        convert_bf16((uint16_t *)(void *)y + at, out + at, (size_t)w->OUT);
}

/* Fewer elements than this are quantised, or dequantised, by the calling thread alone. */
enum { INT8_PARALLEL_MIN = 65536 };

/* The products in int32 of x quantized per row (or of the hand-over x of a chained layer), then
 * dequantized with the epilogue. The workspace: the u8 rows, each row's scale and zero point, the
 * int32 products. */
static int run_int8(const layer *L, const gemm_weight *w, dnnl_primitive_t prim, size_t scratchpad,
                    const float *x, int N, float *y, gemm_state *s) {
    uint8_t *q = s->workspace;
    const size_t scales = align64((size_t)w->max_rows * sizeof(float));
    float *row_scale = (float *)(q + align64((size_t)w->max_rows * w->IN));
    float *row_zero = (float *)((uint8_t *)row_scale + scales);
    int32_t *acc = (int32_t *)((uint8_t *)row_zero + scales);
    if (L->chained_in) {
        int8_handover(x, N, w->IN, &q, &row_scale, &row_zero);
    } else {
        /* a short text's rows are quantised by one thread: a team's fork and join cost more than
         * 25 rows' work, and two-thread int8 at batch 1 spent 4.5 s of CPU on what one thread did
         * in 0.66 s */
#pragma omp parallel if ((size_t)N * w->IN >= INT8_PARALLEL_MIN)
        {
            const int t = omp_get_thread_num(), k = omp_get_num_threads();
            quantize_rows(q, row_scale, row_zero, x, (int)((long long)N * t / k),
                          (int)((long long)N * (t + 1) / k), w->IN);
        }
    }
    if (execute(L, w, prim, scratchpad, q, N, acc, s) != 0) return -1;
    uint8_t *next_q = NULL;
    float *next_scale = NULL, *next_zero = NULL;
    if (L->chained_out) int8_handover(y, N, w->OUT, &next_q, &next_scale, &next_zero);
#pragma omp parallel if ((size_t)N * w->OUT >= INT8_PARALLEL_MIN)
    {
        const int t = omp_get_thread_num(), k = omp_get_num_threads();
        const int r0 = (int)((long long)N * t / k), r1 = (int)((long long)N * (t + 1) / k);
        /* row by row, the epilogue (GELU) on each row while it is still in the cache */
        for (int r = r0; r < r1; r++)
            finish_row(L, w, acc, row_scale, row_zero, r, y, next_q, next_scale, next_zero);
    }
    return 0;
}

/* fp32 and bf16: the activations converted (bf16) into the workspace first. */
static int run_float(const layer *L, const gemm_weight *w, dnnl_primitive_t prim, size_t scratchpad,
                     const float *x, int N, float *y, gemm_state *s) {
    const void *src = x;
    if (L->chained_in) { /* x holds bfloat16 already */
    } else if (L->src_type == dnnl_bf16) {
        convert_rows_bf16(s->workspace, x, (size_t)N * w->IN);
        src = s->workspace;
    } else if (L->emulate_bf16) {
        round_rows_bf16(s->workspace, x, (size_t)N * w->IN);
        src = s->workspace;
    }
    return execute(L, w, prim, scratchpad, src, N, y, s);
}

int onednn_takes_bf16(const gemm_weight *w) {
    const layer *L = w->onednn;
    return w->precision == PRECISION_BF16 && L->src_type == dnnl_bf16;
}

void onednn_run_bf16(const gemm_weight *w, const uint16_t *x, int N, float *y, gemm_state *s) {
    const layer *L = w->onednn;
    size_t scratchpad;
    dnnl_primitive_t prim = primitive_for(L, w, N, s, &scratchpad);
    if (!prim || execute(L, w, prim, scratchpad, x, N, y, s) != 0) fail_rows(y, N, w->OUT);
}

void onednn_run(const gemm_weight *w, const float *x, int N, float *y, gemm_state *s) {
    const layer *L = w->onednn;
    size_t scratchpad;
    dnnl_primitive_t prim = primitive_for(L, w, N, s, &scratchpad);
    const int rc = !prim                            ? -1
                   : w->precision == PRECISION_INT8 ? run_int8(L, w, prim, scratchpad, x, N, y, s)
                                                    : run_float(L, w, prim, scratchpad, x, N, y, s);
    if (rc != 0) fail_rows(y, N, w->OUT);
}
/* ---- bf16 products of the training ops (ops.c): any shape, operands rounded per call ---- */

/* A thread's own buffers for the rounded operands, its stream and the primitives' scratchpad
 * (user mode: two threads running the same cached primitive never share one). Grown, never
 * shrunk: after the first steps of a run no product allocates. */
typedef struct {
    dnnl_stream_t stream;
    uint16_t *a, *b;
    void *scratchpad;
    size_t a_cap, b_cap, scratchpad_cap;
} bf16_buffers;

static _Thread_local bf16_buffers own_buffers;

static int grow(void **p, size_t *cap, size_t bytes) {
    if (bytes <= *cap) return 0;
    void *q = vit_alloc_floats(bytes / 4 + 1);
    if (!q) return -1;
    free(*p);
    *p = q;
    *cap = bytes;
    return 0;
}

/* rows x cols of x (leading dimension ld) to bfloat16, packed (leading dimension cols); the
 * threads share the rows when called outside a parallel region (inside one, the nested region is
 * this thread alone). */
static void pack_bf16(uint16_t *out, const float *x, int rows, int cols, int ld) {
#pragma omp parallel for schedule(static) if ((size_t)rows * cols >= 65536)
    for (int r = 0; r < rows; r++)
        convert_bf16(out + (size_t)r * cols, x + (size_t)r * ld, (size_t)cols);
}

/* op(X) [rows, cols] of the packed copy: stored as is (strides {cols, 1}) or transposed. */
static dnnl_memory_desc_t packed_desc(int rows, int cols, int trans, dnnl_data_type_t type) {
    dnnl_memory_desc_t md;
    const dnnl_dims_t dims = {rows, cols};
    const dnnl_dims_t strides = {trans ? 1 : cols, trans ? rows : 1};
    dnnl_memory_desc_init_by_strides(&md, 2, dims, type, strides);
    return md;
}

/* The matmul a[M, K] x b[K, N] -> c[M, N] (alpha scaling the product, beta·c added), with the
 * scratchpad in the caller's hands; NULL when oneDNN has none. */
static dnnl_primitive_t bf16_matmul(const dnnl_memory_desc_t *a, const dnnl_memory_desc_t *b,
                                    const dnnl_memory_desc_t *c, float alpha, float beta) {
    dnnl_matmul_desc_t desc;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t po = NULL;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_primitive_t prim = NULL;
    int ok =
        dnnl_matmul_desc_init(&desc, a, b, NULL, c) == dnnl_success &&
        dnnl_primitive_attr_create(&attr) == dnnl_success &&
        dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user) == dnnl_success;
    if (ok && alpha != 1.0f)
        ok = dnnl_primitive_attr_set_output_scales(attr, 1, 0, &alpha) == dnnl_success;
    if (ok && beta != 0.0f)
        ok = dnnl_post_ops_create(&po) == dnnl_success &&
             dnnl_post_ops_append_sum(po, beta) == dnnl_success &&
             dnnl_primitive_attr_set_post_ops(attr, po) == dnnl_success;
    /* oneDNN's primitive cache makes a shape seen before cheap (a few microseconds) */
    if (ok && dnnl_primitive_desc_create(&pd, &desc, attr, engine, NULL) == dnnl_success)
        dnnl_primitive_create(&prim, pd);
    dnnl_primitive_desc_destroy(pd);
    dnnl_post_ops_destroy(po);
    dnnl_primitive_attr_destroy(attr);
    return prim;
}

/* The calling thread's buffers with room for a [a_elems] and b [b_elems], and its stream. */
static bf16_buffers *buffers_for(size_t a_elems, size_t b_elems) {
    bf16_buffers *o = &own_buffers;
    if (!o->stream &&
        dnnl_stream_create(&o->stream, engine, dnnl_stream_default_flags) != dnnl_success)
        return NULL;
    if (grow((void **)&o->a, &o->a_cap, a_elems * 2) != 0 ||
        grow((void **)&o->b, &o->b_cap, b_elems * 2) != 0)
        return NULL;
    return o;
}

/* C [M, N] (leading dimension ldc) = alpha·a·b + beta·C from the operands packed in o. */
static int run_packed(bf16_buffers *o, const dnnl_memory_desc_t *a, const dnnl_memory_desc_t *b,
                      float alpha, float beta, float *C, int M, int N, int ldc) {
    dnnl_memory_desc_t c;
    const dnnl_dims_t dims = {M, N}, strides = {ldc, 1};
    dnnl_memory_desc_init_by_strides(&c, 2, dims, dnnl_f32, strides);
    dnnl_primitive_t prim = bf16_matmul(a, b, &c, alpha, beta);
    if (!prim) return -1;
    const dnnl_memory_desc_t *pad = scratchpad_desc(prim);
    const size_t pad_bytes = pad ? dnnl_memory_desc_get_size(pad) : 0;
    int ok = grow(&o->scratchpad, &o->scratchpad_cap, pad_bytes) == 0;
    dnnl_memory_t m[4] = {NULL, NULL, NULL, NULL};
    ok = ok && make_memory(&m[0], *a, o->a) == 0 && make_memory(&m[1], *b, o->b) == 0 &&
         make_memory(&m[2], c, C) == 0 &&
         (!pad_bytes || make_memory(&m[3], *pad, o->scratchpad) == 0);
    const dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, m[0]},
                                     {DNNL_ARG_WEIGHTS, m[1]},
                                     {DNNL_ARG_DST, m[2]},
                                     {DNNL_ARG_SCRATCHPAD, m[3]}};
    ok = ok && dnnl_primitive_execute(prim, o->stream, pad_bytes ? 4 : 3, args) == dnnl_success &&
         dnnl_stream_wait(o->stream) == dnnl_success;
    for (int i = 0; i < 4; i++) dnnl_memory_destroy(m[i]);
    dnnl_primitive_destroy(prim);
    return ok ? 0 : -1;
}

int onednn_gemm_bf16(int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A,
                     int lda, const float *B, int ldb, float beta, float *C, int ldc) {
    if (M <= 0 || N <= 0 || K <= 0 || !onednn_available()) return -1;
    bf16_buffers *o = buffers_for((size_t)M * K, (size_t)K * N);
    if (!o) return -1;
    trans_a ? pack_bf16(o->a, A, K, M, lda) : pack_bf16(o->a, A, M, K, lda);
    trans_b ? pack_bf16(o->b, B, N, K, ldb) : pack_bf16(o->b, B, K, N, ldb);
    const dnnl_memory_desc_t a = packed_desc(M, K, trans_a, dnnl_bf16),
                             b = packed_desc(K, N, trans_b, dnnl_bf16);
    return run_packed(o, &a, &b, alpha, beta, C, M, N, ldc);
}

int onednn_linear_backward_bf16(float *dinp, float *dweight, const float *dout, const float *inp,
                                const float *weight, int N, int IN, int OUT) {
    if (N <= 0 || IN <= 0 || OUT <= 0 || !onednn_available()) return 0;
    const size_t b_elems = (size_t)(N > OUT ? N : OUT) * IN;
    bf16_buffers *o = buffers_for((size_t)N * OUT, b_elems);
    if (!o) return 0;
    pack_bf16(o->a, dout, N, OUT, OUT); /* once, for both products */
    int done = 0;
    if (dinp) { /* dout [N, OUT] · weight [OUT, IN] */
        pack_bf16(o->b, weight, OUT, IN, IN);
        const dnnl_memory_desc_t a = packed_desc(N, OUT, 0, dnnl_bf16),
                                 b = packed_desc(OUT, IN, 0, dnnl_bf16);
        if (run_packed(o, &a, &b, 1.0f, 0.0f, dinp, N, IN, IN) == 0) done |= 1;
    }
    if (dweight) { /* doutᵀ [OUT, N] (the same packed rows, read transposed) · inp [N, IN] */
        pack_bf16(o->b, inp, N, IN, IN);
        const dnnl_memory_desc_t a = packed_desc(OUT, N, 1, dnnl_bf16),
                                 b = packed_desc(N, IN, 0, dnnl_bf16);
        if (run_packed(o, &a, &b, 1.0f, 1.0f, dweight, OUT, IN, IN) == 0) done |= 2;
    }
    return done;
}

void onednn_gemm_bf16_release(void) {
    bf16_buffers *o = &own_buffers;
    free(o->a), free(o->b), free(o->scratchpad);
    if (o->stream) dnnl_stream_destroy(o->stream);
    memset(o, 0, sizeof *o);
}

#endif
