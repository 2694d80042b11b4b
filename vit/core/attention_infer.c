/* Multi-head attention for inference, without the [B, H, T, T] weights: each task takes a block
 * of query rows of one (batch, head), computes their scores against every key in a tile that
 * stays in the L1 cache, turns them into weights there and multiplies them with V at once.
 *
 * The products run on register tiles of 6 rows x 16 columns, one 16-float vector a row: six
 * 512-bit accumulators where the CPU has AVX-512 (the x86-64-v4 clone; twelve 256-bit ones in the
 * AVX2 clone, as many as its 16 registers leave room for). Written as 8-float vectors before, they
 * ran at half the rate of a 512-bit FMA pipe (Zen 5, Intel). The bf16 kernels' tiles are two or
 * four vectors wide (below). Scores against Kᵀ, which is packed per
 * (batch, head) first so that the keys are contiguous, pre-multiplied by 1/√dh; then weights
 * times V straight from the fused qkv rows. The head size must be a multiple of 16 (64 in every
 * ViT and BERT configuration we know); other shapes take attention_forward. A score bias (BEiT's
 * relative positions) is added to each score tile as it is made. */
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <string.h>
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define VIT_BF16_ATTENTION 1
#endif

#include "vit/base/hot.h"
#include "vit/core/fastmath.h"
#include "vit/core/gemm_internal.h"
#include "vit/core/ops.h"

/* nc, a tile's vectors, is a constant at each call of an ALWAYS_INLINE tile: the accumulators
 * stay in registers */
#define ALWAYS_INLINE inline __attribute__((always_inline))
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define VIT_WIDE_REGISTERS 1 /* AVX-512's 32 vector registers, chosen at run time */
#define WIDE_TARGET        __attribute__((target("avx512f")))
#endif

#define ROWS_PER_TASK 18 /* query rows per task: an 18 x T score tile, three row tiles */
#define TILE_R        6  /* 6 x 16: few loads per FMA */
#define TILE_C        16

/* 16 floats as one value (GCC/Clang vector extension): one zmm register with AVX-512, two ymm
 * with AVX2. */
typedef float v16f __attribute__((vector_size(TILE_C * sizeof(float))));

/* (Through pointers: passing vectors by value would tie the ABI to the ISA flags.) */
static inline void load16(v16f *v, const float *p) {
    memcpy(v, p, sizeof *v);
}
static inline void store16(float *p, const v16f *v) {
    memcpy(p, v, sizeof *v);
}

/* Keys rounded up to whole tiles: the packed Kᵀ and the score tiles are this wide. */
static int padded(int T) {
    return (T + TILE_C - 1) / TILE_C * TILE_C;
}

int attention_infer_supported(int D, int H) {
    return (D / H) % TILE_C == 0;
}

/* Per thread: the score tile [ROWS_PER_TASK, Tp] floats, then (bf16) its rows rounded and the
 * block's queries rounded, ROWS_PER_TASK x (Tp + D) bfloat16 at most: half as many floats. */
static size_t tile_floats(int T, int D) {
    const size_t Tp = (size_t)padded(T);
    return ROWS_PER_TASK * Tp + ROWS_PER_TASK * (Tp + (size_t)D) / 2 + 16;
}

/* The packed keys (fp32: Kᵀ [dh, Tp] per (batch, head)), or in bf16 the packed keys and values in
 * the same space (each half the size), then each thread's tiles. */
size_t attention_infer_scratch(int B, int T, int D, int threads) {
    return (size_t)B * D * padded(T) + (size_t)threads * tile_floats(T, D);
}

/* kt [dh, Tp] = scale · Kᵀ of one (batch, head), zero past T. */
HOT_LOOP static void pack_keys(float *kt, const float *k, int T, int Tp, int ld, int dh,
                               float scale) {
    for (int d = 0; d < dh; d++) {
        float *row = kt + (size_t)d * Tp;
        for (int j = 0; j < T; j++) row[j] = scale * k[(size_t)j * ld + d];
        for (int j = T; j < Tp; j++) row[j] = 0.0f;
    }
}

/* The products' register tiles are TILE_R rows x nc vectors of 16 columns. One vector (six
 * accumulators, twelve ymm in the AVX2 clone) is all AVX2's 16 registers hold; AVX-512's 32 take
 * two or four (twelve or twenty-four accumulators), enough to keep two FMA pipes busy through
 * the FMA's latency, which six alone leave a quarter or more of their slots idle on. */

/* s [valid rows, j0 .. j0 + 16 nc) = qr rows · kt's columns. */
static ALWAYS_INLINE void scores_tile(float *s, const float *const *qr, int valid, const float *kt,
                                      int Tp, int j0, int dh, int nc) {
    v16f acc[TILE_R][2];
    for (int r = 0; r < TILE_R; r++)
        for (int c = 0; c < nc; c++) acc[r][c] = (v16f){0};
    for (int d = 0; d < dh; d++) {
        v16f k[2];
        for (int c = 0; c < nc; c++) load16(&k[c], kt + (size_t)d * Tp + j0 + TILE_C * c);
        for (int r = 0; r < TILE_R; r++) {
            const float q = qr[r][d];
            for (int c = 0; c < nc; c++) acc[r][c] += q * k[c];
        }
    }
    for (int r = 0; r < valid; r++)
        for (int c = 0; c < nc; c++) store16(s + (size_t)r * Tp + j0 + TILE_C * c, &acc[r][c]);
}

/* s [rows, Tp] = q [rows, dh] (rows ld apart) · kt [dh, Tp]; wide: two vectors a tile. */
static ALWAYS_INLINE void scores_rows(float *s, const float *q, int rows, int ld, const float *kt,
                                      int Tp, int dh, int wide) {
    for (int i0 = 0; i0 < rows; i0 += TILE_R) {
        const float *qr[TILE_R]; /* rows past the block repeat its last: computed, not stored */
        for (int r = 0; r < TILE_R; r++)
            qr[r] = q + (size_t)(i0 + r < rows ? i0 + r : rows - 1) * ld;
        const int valid = rows - i0 < TILE_R ? rows - i0 : TILE_R;
        float *si = s + (size_t)i0 * Tp;
        int j0 = 0;
        if (wide)
            for (; j0 + 2 * TILE_C <= Tp; j0 += 2 * TILE_C)
                scores_tile(si, qr, valid, kt, Tp, j0, dh, 2);
        for (; j0 < Tp; j0 += TILE_C) scores_tile(si, qr, valid, kt, Tp, j0, dh, 1);
    }
}

/* out [valid rows, c0 .. c0 + 16 nc) (rows ld_out apart) = diag(inv) · pr rows (T weights) · v's
 * columns (rows ld apart). */
static ALWAYS_INLINE void values_tile(float *out, int ld_out, const float *const *pr,
                                      const float *inv, int valid, const float *v, int ld, int T,
                                      int c0, int nc) {
    v16f acc[TILE_R][4];
    for (int r = 0; r < TILE_R; r++)
        for (int c = 0; c < nc; c++) acc[r][c] = (v16f){0};
    for (int j = 0; j < T; j++) {
        v16f vj[4];
        for (int c = 0; c < nc; c++) load16(&vj[c], v + (size_t)j * ld + c0 + TILE_C * c);
        for (int r = 0; r < TILE_R; r++) {
            const float w = pr[r][j];
            for (int c = 0; c < nc; c++) acc[r][c] += w * vj[c];
        }
    }
    for (int r = 0; r < valid; r++)
        for (int c = 0; c < nc; c++) {
            const v16f a = acc[r][c] * inv[r];
            store16(out + (size_t)r * ld_out + c0 + TILE_C * c, &a);
        }
}

/* out [rows, dh] (rows ld_out apart) = diag(inv) · p [rows, T] (rows Tp apart) · v [T, dh]
 * (rows ld apart); wide: up to four vectors a tile. */
static ALWAYS_INLINE void values_rows(float *out, int ld_out, const float *p, const float *inv,
                                      int rows, int Tp, const float *v, int ld, int T, int dh,
                                      int wide) {
    for (int i0 = 0; i0 < rows; i0 += TILE_R) {
        const float *pr[TILE_R];
        for (int r = 0; r < TILE_R; r++)
            pr[r] = p + (size_t)(i0 + r < rows ? i0 + r : rows - 1) * Tp;
        const int valid = rows - i0 < TILE_R ? rows - i0 : TILE_R;
        float *oi = out + (size_t)i0 * ld_out;
        int c0 = 0;
        if (wide) {
            for (; c0 + 4 * TILE_C <= dh; c0 += 4 * TILE_C)
                values_tile(oi, ld_out, pr, inv + i0, valid, v, ld, T, c0, 4);
            for (; c0 + 2 * TILE_C <= dh; c0 += 2 * TILE_C)
                values_tile(oi, ld_out, pr, inv + i0, valid, v, ld, T, c0, 2);
        }
        for (; c0 < dh; c0 += TILE_C) values_tile(oi, ld_out, pr, inv + i0, valid, v, ld, T, c0, 1);
    }
}

HOT_LOOP static void scores(float *s, const float *q, int rows, int ld, const float *kt, int Tp,
                            int dh) {
    scores_rows(s, q, rows, ld, kt, Tp, dh, 0);
}

HOT_LOOP static void weighted_values(float *out, int ld_out, const float *p, const float *inv,
                                     int rows, int Tp, const float *v, int ld, int T, int dh) {
    values_rows(out, ld_out, p, inv, rows, Tp, v, ld, T, dh, 0);
}

#ifdef VIT_WIDE_REGISTERS
WIDE_TARGET static void scores_wide(float *s, const float *q, int rows, int ld, const float *kt,
                                    int Tp, int dh) {
    scores_rows(s, q, rows, ld, kt, Tp, dh, 1);
}

WIDE_TARGET static void weighted_values_wide(float *out, int ld_out, const float *p,
                                             const float *inv, int rows, int Tp, const float *v,
                                             int ld, int T, int dh) {
    values_rows(out, ld_out, p, inv, rows, Tp, v, ld, T, dh, 1);
}

static int wide_registers(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f");
}
#else
#define scores_wide          scores
#define weighted_values_wide weighted_values
static int wide_registers(void) {
    return 0;
}
#endif

/* The largest of a row's first T scores. */
HOT_LOOP static float row_max(const float *row, int T) {
    float max = -INFINITY;
    /* the pragma lets the compiler reorder the reduction (it kept 16 partial maxima as 16
     * scalar vmaxss); the maximum is the same in any order */
#pragma omp simd reduction(max : max)
    for (int j = 0; j < T; j++) max = row[j] > max ? row[j] : max;
    return max;
}

typedef int32_t v16i __attribute__((vector_size(TILE_C * sizeof(int32_t))));

/* exp(x) of 16 scores less their row's maximum, so x <= 0: fast_expf's polynomial on whole
 * vectors, written with the vector extension (GCC left the scalar function's clamps and NaN test
 * as masked blends and reloaded its constants every 16 keys). x below fast_expf's range (-inf:
 * masked keys) gives 0; a NaN stays NaN, so a NaN score never becomes a weight. */
static inline void exp_nonpositive(v16f *e, const v16f *in) {
    const v16f x = *in;
    const v16f lo = (v16f){0} - 87.3365447504f, shift = (v16f){0} + 12582912.0f;
    const v16i keep = x >= lo, nan = x != x;
    const v16f xc = (v16f)(((v16i)x & keep) | ((v16i)lo & ~keep));
    const v16f n = (xc * 1.44269504088896341f + shift) - shift;
    const v16f r = xc - n * 0.693359375f + n * 2.12194440e-4f;
    const v16f p = FAST_EXP_POLY(r);
    const v16i bits = (__builtin_convertvector(n, v16i) + 127) << 23;
    const v16f y = p * (v16f)bits;
    *e = (v16f)(((v16i)y & keep) | ((v16i)x & nan));
}

/* The exponentials of row [j0, j0 + 16) less max, zero from T on (past T the padded row holds
 * finite scores against the zero keys), added to sum. Whole vectors to the padded width: a scalar
 * tail cost as much as a third of a row of 197. */
static inline void exp16(v16f *e, v16f *sum, const float *row, int j0, int T, float max) {
    v16f x;
    load16(&x, row + j0);
    x -= max;
    exp_nonpositive(e, &x);
    if (j0 + TILE_C > T) {
        v16i lane;
        for (int k = 0; k < TILE_C; k++) lane[k] = j0 + k;
        *e = (v16f)((v16i)*e & (lane < T));
    }
    *sum += *e;
}

/* 1 / the sum of the 16 partial sums. */
static inline float inverse_total(const v16f *sum) {
    float total = 0.0f;
    for (int k = 0; k < TILE_C; k++) total += (*sum)[k];
    return 1.0f / total;
}

/* Each row of s [rows, Tp]: its exponentials (the row's max subtracted) in place, zero from T on,
 * and the inverse of their sum in inv[row], which weighted_values applies to its output rows (one
 * multiplication per output instead of per weight). A row with every key masked gets weights 0
 * and inv 0: it attends to nothing rather than NaN, as softmax_forward. */
HOT_LOOP static void exponentials(float *s, int rows, int Tp, int T, float *inv) {
    for (int i = 0; i < rows; i++) {
        float *row = s + (size_t)i * Tp;
        const float max = row_max(row, T);
        if (max == -INFINITY) {
            memset(row, 0, sizeof(float) * (size_t)Tp);
            inv[i] = 0.0f;
            continue;
        }
        v16f sum = {0};
        for (int j0 = 0; j0 < Tp; j0 += TILE_C) {
            v16f e;
            exp16(&e, &sum, row, j0, T, max);
            store16(row + j0, &e);
        }
        inv[i] = inverse_total(&sum);
    }
}

/* s [rows, Tp] += bias rows [rows, T] (this head's, from the block's first row; rows T apart). */
HOT_LOOP static void add_bias(float *s, int rows, int Tp, int T, const float *bias) {
    for (int i = 0; i < rows; i++) {
        float *row = s + (size_t)i * Tp;
        const float *b = bias + (size_t)i * T;
        for (int j = 0; j < T; j++) row[j] += b[j];
    }
}

/* Masked keys (padding, or later than the query when causal) get no weight. The padding's
 * columns are found once per tile and only they are written: testing every score's key was 2.3 %
 * of a MiniLM-shaped int8 forward at batch 1, whose texts have no padding at all. */
static void mask_scores(float *s, int rows, int Tp, int T, int r0, const uint8_t *key_mask,
                        int causal) {
    const uint8_t *z = key_mask ? memchr(key_mask, 0, (size_t)T) : NULL;
    while (z) {
        const int j = (int)(z - key_mask);
        for (int i = 0; i < rows; i++) s[(size_t)i * Tp + j] = -INFINITY;
        z = j + 1 < T ? memchr(z + 1, 0, (size_t)(T - j - 1)) : NULL;
    }
    if (causal)
        for (int i = 0; i < rows; i++)
            for (int j = r0 + i + 1; j < T; j++) s[(size_t)i * Tp + j] = -INFINITY;
}

typedef struct {
    float *out;
    uint16_t *out16;       /* bf16 kernels: the output as bfloat16 here instead, when set */
    const uint16_t *qkv16; /* bf16 kernels: qkv as bfloat16, when set (qkv unused) */
    const float *qkv, *bias;
    const uint8_t *key_mask;
    int causal, B, T, D, H;
    float scale; /* bf16 kernels: 1/√dh, applied to the scores */
} attention_call;

/* A task's score rows before their softmax: the bias added, masked keys at -inf. */
static void bias_and_masks(const attention_call *c, float *s, int b, int h, int r0, int rows,
                           int Tp) {
    const int T = c->T;
    if (c->bias) add_bias(s, rows, Tp, T, c->bias + ((size_t)h * T + r0) * T);
    if (c->key_mask || c->causal)
        mask_scores(s, rows, Tp, T, r0, c->key_mask ? c->key_mask + (size_t)b * T : NULL,
                    c->causal);
}

static void run_fp32(const attention_call *c, float *scratch, int team) {
    const int B = c->B, T = c->T, D = c->D, H = c->H;
    const int dh = D / H, Tp = padded(T), ld = 3 * D;
    const int blocks = (T + ROWS_PER_TASK - 1) / ROWS_PER_TASK, tasks = B * H * blocks;
    const float scale = 1.0f / sqrtf((float)dh);
    const int wide = wide_registers();
    float *kt_all = scratch, *tiles = scratch + (size_t)B * D * Tp;
#pragma omp parallel num_threads(team)
    {
#pragma omp for schedule(static)
        for (int bh = 0; bh < B * H; bh++) {
            const int b = bh / H, h = bh % H;
            pack_keys(kt_all + (size_t)bh * dh * Tp, c->qkv + (size_t)b * T * ld + D + h * dh, T,
                      Tp, ld, dh, scale);
        }
        float *s = tiles + (size_t)omp_get_thread_num() * tile_floats(T, D);
#pragma omp for schedule(dynamic)
        for (int task = 0; task < tasks; task++) {
            const int bh = task / blocks, b = bh / H, h = bh % H;
            const int r0 = task % blocks * ROWS_PER_TASK;
            const int rows = T - r0 < ROWS_PER_TASK ? T - r0 : ROWS_PER_TASK;
            const float *base = c->qkv + (size_t)b * T * ld + h * dh;
            (wide ? scores_wide : scores)(s, base + (size_t)r0 * ld, rows, ld,
                                          kt_all + (size_t)bh * dh * Tp, Tp, dh);
            float inv[ROWS_PER_TASK];
            bias_and_masks(c, s, b, h, r0, rows, Tp);
            exponentials(s, rows, Tp, T, inv);
            (wide ? weighted_values_wide
                  : weighted_values)(c->out + ((size_t)b * T + r0) * D + h * dh, D, s, inv, rows,
                                     Tp, base + 2 * D, ld, T, dh);
        }
    }
}

/* qkv given as bfloat16 where the bf16 kernels cannot run (a caller's mistake): out NaN, which
 * the model's finite check reports; returns 0 (no bf16 output). */
static int refuse_bf16_qkv(float *out, int B, int T, int D) {
    for (size_t i = 0; i < (size_t)B * T * D; i++) out[i] = NAN;
    return 0;
}

static int team_size(int threads) {
    return omp_get_max_threads() < threads ? omp_get_max_threads() : threads;
}

void attention_infer(float *out, const float *qkv, const uint8_t *key_mask, const float *bias,
                     int causal, float *scratch, int threads, int B, int T, int D, int H) {
    const attention_call c = {out, NULL, NULL, qkv, bias, key_mask, causal, B, T, D, H, 0.0f};
    run_fp32(&c, scratch, team_size(threads));
}

/* ---- bfloat16 ----
 * AVX512-BF16's dot product (vdpbf16ps) adds to each fp32 lane the products of a pair of bf16
 * values from each operand: twice the multiply-adds of an fp32 FMA per instruction. So both
 * products take pairs along their sums: the keys packed as [dh/2][Tp][2] (for a pair of head
 * dimensions, 16 keys' pairs make one vector), the query's pair broadcast; the values as [T2/2][dh]
 * [2] (T2: T rounded up to even), the weights' pair (two keys) broadcast. */
#ifdef VIT_BF16_ATTENTION
#define BF16_TARGET   __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))
#define MAX_BF16_HEAD 256 /* larger heads (none we know of) take the fp32 kernels */

/* A pair of bf16 values as one 32-bit lane (memcpy: the buffers hold uint16_t). */
static inline int pair_at(const uint16_t *p) {
    int v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* kp's columns j0 .. j0 + 16 (kp [dh/2][Tp][2]: keys in pairs of dimensions) from 16 keys' bf16
 * rows (ld apart, the first at rows), each pair's column gathered into one vector; keys from T on
 * zero, their rows never read. */
BF16_TARGET static void gather_key_pairs(uint16_t *kp, const uint16_t *rows, int ld, int j0, int T,
                                         int Tp, int dh) {
    const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m512i at = _mm512_mullo_epi32(lane, _mm512_set1_epi32(ld / 2)); /* in pairs */
    const __mmask16 real = _mm512_cmplt_epi32_mask(_mm512_add_epi32(lane, _mm512_set1_epi32(j0)),
                                                   _mm512_set1_epi32(T));
    for (int p = 0; p < dh / 2; p++)
        _mm512_storeu_si512(kp + ((size_t)p * Tp + j0) * 2,
                            _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), real,
                                                        _mm512_add_epi32(at, _mm512_set1_epi32(p)),
                                                        rows, 4));
}

/* kp = K of one (batch, head) from floats (rows ld apart), zero past T: 16 keys' rows rounded
 * into a block, then their pairs gathered (element by element, the rounding and the strided
 * stores took 4 % of a bf16 ViT-Ti forward). (The scores are scaled by 1/√dh as they are stored,
 * not the keys: keys given in bf16 already could not be.) */
BF16_TARGET static void pack_keys_bf16(uint16_t *kp, const float *k, int T, int Tp, int ld,
                                       int dh) {
    uint16_t rows[16 * MAX_BF16_HEAD]; /* 16 keys of dh */
    for (int j0 = 0; j0 < Tp; j0 += 16) {
        for (int r = 0; r < 16 && j0 + r < T; r++)
            for (int d = 0; d < dh; d += 16) {
                const __m256bh h =
                    _mm512_cvtneps_pbh(_mm512_loadu_ps(k + (size_t)(j0 + r) * ld + d));
                memcpy(rows + r * dh + d, &h, sizeof h);
            }
        gather_key_pairs(kp, rows, dh, j0, T, Tp, dh);
    }
}

/* The same from K in bfloat16 (rows ld apart), gathered straight from its rows. */
BF16_TARGET static void pack_keys_from_bf16(uint16_t *kp, const uint16_t *k, int T, int Tp, int ld,
                                            int dh) {
    for (int j0 = 0; j0 < Tp; j0 += 16)
        gather_key_pairs(kp, k + (size_t)j0 * ld, ld, j0, T, Tp, dh);
}

/* vp [T2/2][dh][2] = V of one (batch, head) in pairs of keys, the pad row zero: two rows rounded
 * into one vector (the first in its low half), then interleaved. */
BF16_TARGET static void pack_values_bf16(uint16_t *vp, const float *v, int T, int ld, int dh) {
    const __m512i interleave =
        _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7, 22, 6,
                         21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    for (int jp = 0; jp < (T + 1) / 2; jp++) {
        const float *v0 = v + (size_t)(2 * jp) * ld, *v1 = v0 + ld;
        uint16_t *out = vp + (size_t)jp * dh * 2;
        for (int c = 0; c < dh; c += 16) {
            const __m512 second = 2 * jp + 1 < T ? _mm512_loadu_ps(v1 + c) : _mm512_setzero_ps();
            const __m512i both = (__m512i)_mm512_cvtne2ps_pbh(second, _mm512_loadu_ps(v0 + c));
            _mm512_storeu_si512(out + 2 * c, _mm512_permutexvar_epi16(interleave, both));
        }
    }
}

/* The same from V in bfloat16 (rows ld apart): each pair of rows interleaved, 32 columns at a
 * time. */
BF16_TARGET static void pack_values_from_bf16(uint16_t *vp, const uint16_t *v, int T, int ld,
                                              int dh) {
    __m512i low, high; /* the interleaving: lanes 2i, 2i+1 <- row 0's i, row 1's i */
    {
        uint16_t lo_idx[32], hi_idx[32];
        for (int i = 0; i < 16; i++) {
            lo_idx[2 * i] = (uint16_t)i, lo_idx[2 * i + 1] = (uint16_t)(32 + i);
            hi_idx[2 * i] = (uint16_t)(16 + i), hi_idx[2 * i + 1] = (uint16_t)(48 + i);
        }
        low = _mm512_loadu_si512(lo_idx), high = _mm512_loadu_si512(hi_idx);
    }
    for (int jp = 0; jp < (T + 1) / 2; jp++) {
        const uint16_t *v0 = v + (size_t)(2 * jp) * ld, *v1 = v0 + ld;
        const int second = 2 * jp + 1 < T;
        uint16_t *out = vp + (size_t)jp * dh * 2;
        for (int c = 0; c < dh; c += 32) {
            const int n = dh - c < 32 ? dh - c : 32; /* 16 or 32 */
            const __mmask32 cols = n == 32 ? 0xffffffffu : 0xffffu;
            const __m512i a = _mm512_maskz_loadu_epi16(cols, v0 + c);
            const __m512i b =
                second ? _mm512_maskz_loadu_epi16(cols, v1 + c) : _mm512_setzero_si512();
            _mm512_storeu_si512(out + 2 * c, _mm512_permutex2var_epi16(a, low, b));
            if (n == 32)
                _mm512_storeu_si512(out + 2 * c + 32, _mm512_permutex2var_epi16(a, high, b));
        }
    }
}

/* dst [rows][n] bf16 = src rows (ld apart), n a multiple of 16. */
BF16_TARGET static void round_rows(uint16_t *dst, const float *src, int rows, int n, size_t ld) {
    for (int r = 0; r < rows; r++)
        for (int j = 0; j < n; j += 16) {
            const __m256bh h = _mm512_cvtneps_pbh(_mm512_loadu_ps(src + (size_t)r * ld + j));
            memcpy(dst + (size_t)r * n + j, &h, sizeof h);
        }
}

/* The products' register tiles are TILE_R rows x nc vectors of 16 columns: with nc = 2, twelve
 * accumulators, as many as keep two 512-bit pipes busy through vdpbf16ps's latency (six left half
 * the pipes' slots empty: the kernels ran at about half the bf16 peak). nc = 1 takes the last 16
 * columns of a row (and the weighted values take four where the head has 64 columns). */

/* s [valid rows, j0 .. j0 + 16 nc) = qr rows (bf16) · kp's columns. */
BF16_TARGET static ALWAYS_INLINE void scores_tile_bf16(float *s, const uint16_t *const *qr,
                                                       int valid, const uint16_t *kp, int Tp,
                                                       int j0, int dh, float scale, __m512 *vmax,
                                                       int T, int nc) {
    __m512 acc[TILE_R][2];
    for (int r = 0; r < TILE_R; r++)
        for (int c = 0; c < nc; c++) acc[r][c] = _mm512_setzero_ps();
    for (int p = 0; p < dh / 2; p++) {
        __m512bh k[2];
        for (int c = 0; c < nc; c++)
            k[c] = (__m512bh)_mm512_loadu_si512(kp + ((size_t)p * Tp + j0 + 16 * c) * 2);
        for (int r = 0; r < TILE_R; r++) {
            const __m512bh q = (__m512bh)_mm512_set1_epi32(pair_at(qr[r] + 2 * p));
            for (int c = 0; c < nc; c++) acc[r][c] = _mm512_dpbf16_ps(acc[r][c], q, k[c]);
        }
    }
    for (int c = 0; c < nc; c++) {
        const int j = j0 + 16 * c; /* the keys from T on are padding: not in the maximum */
        const __mmask16 keys = j + 16 <= T ? 0xffff : (__mmask16)((1u << (T > j ? T - j : 0)) - 1u);
        for (int r = 0; r < valid; r++) {
            const __m512 y = _mm512_mul_ps(acc[r][c], _mm512_set1_ps(scale));
            _mm512_storeu_ps(s + (size_t)r * Tp + j, y);
            /* y second: a NaN score is passed over, as row_max does */
            if (vmax) vmax[r] = _mm512_mask_max_ps(vmax[r], keys, vmax[r], y);
        }
    }
}

/* s [rows, Tp] = scale · qb [rows, dh] (bf16, rows ldq apart) · kp, and, when max is set, each
 * row's maximum over its first T scores in max[row] (taken from the registers as they are stored:
 * a pass over the row less, for scores no bias or mask changes afterwards). */
BF16_TARGET static void scores_bf16(float *s, const uint16_t *qb, size_t ldq, int rows,
                                    const uint16_t *kp, int Tp, int dh, float scale, float *max,
                                    int T) {
    for (int i0 = 0; i0 < rows; i0 += TILE_R) {
        const uint16_t *qr[TILE_R];
        for (int r = 0; r < TILE_R; r++)
            qr[r] = qb + (size_t)(i0 + r < rows ? i0 + r : rows - 1) * ldq;
        const int valid = rows - i0 < TILE_R ? rows - i0 : TILE_R;
        float *si = s + (size_t)i0 * Tp;
        __m512 vmax[TILE_R];
        for (int r = 0; r < TILE_R; r++) vmax[r] = _mm512_set1_ps(-INFINITY);
        __m512 *track = max ? vmax : NULL;
        int j0 = 0;
        for (; j0 + 32 <= Tp; j0 += 32)
            scores_tile_bf16(si, qr, valid, kp, Tp, j0, dh, scale, track, T, 2);
        if (j0 < Tp) scores_tile_bf16(si, qr, valid, kp, Tp, j0, dh, scale, track, T, 1);
        for (int r = 0; max && r < valid; r++) max[i0 + r] = _mm512_reduce_max_ps(vmax[r]);
    }
}

/* ops.h's bf16_bits on 16 lanes at once, the same rounding as every other bf16 writer
 * (vcvtneps2bf16 would flush subnormals); bf16_bits through a loop of its own cost the bf16
 * forward 3-4 %. */
BF16_TARGET static inline __m256i bf16_bits16(__m512 x) {
    const __m512i u = _mm512_castps_si512(x);
    const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    const __m512i rounded = _mm512_srli_epi32(
        _mm512_add_epi32(u, _mm512_add_epi32(odd, _mm512_set1_epi32(0x7fff))), 16);
    const __mmask16 nan = _mm512_cmpgt_epu32_mask(
        _mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)), _mm512_set1_epi32(0x7f800000));
    const __m512i quiet = _mm512_or_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x40));
    return _mm512_cvtepi32_epi16(_mm512_mask_mov_epi32(rounded, nan, quiet));
}

/* out (or out16, as bfloat16, when set) [valid rows, c0 .. c0 + 16 nc) (rows ld_out apart) =
 * diag(inv) · pr rows · vp's columns. */
BF16_TARGET static ALWAYS_INLINE void values_tile_bf16(float *out, uint16_t *out16, int ld_out,
                                                       const uint16_t *const *pr, const float *inv,
                                                       int valid, const uint16_t *vp, int T, int dh,
                                                       int c0, int nc) {
    __m512 acc[TILE_R][4];
    for (int r = 0; r < TILE_R; r++)
        for (int c = 0; c < nc; c++) acc[r][c] = _mm512_setzero_ps();
    for (int jp = 0; jp < (T + 1) / 2; jp++) {
        __m512bh v[4];
        for (int c = 0; c < nc; c++)
            v[c] = (__m512bh)_mm512_loadu_si512(vp + ((size_t)jp * dh + c0 + 16 * c) * 2);
        for (int r = 0; r < TILE_R; r++) {
            const __m512bh w = (__m512bh)_mm512_set1_epi32(pair_at(pr[r] + 2 * jp));
            for (int c = 0; c < nc; c++) acc[r][c] = _mm512_dpbf16_ps(acc[r][c], w, v[c]);
        }
    }
    for (int r = 0; r < valid; r++)
        for (int c = 0; c < nc; c++) {
            const __m512 y = _mm512_mul_ps(acc[r][c], _mm512_set1_ps(inv[r]));
            const size_t at = (size_t)r * ld_out + c0 + 16 * c;
            if (out16)
                _mm256_storeu_si256((__m256i *)(void *)(out16 + at), bf16_bits16(y));
            else
                _mm512_storeu_ps(out + at, y);
        }
}

/* out [rows, dh] (rows ld_out apart) = diag(inv) · pb [rows, Tp] (bf16; zero from T on) · vp. */
BF16_TARGET static void weighted_values_bf16(float *out, uint16_t *out16, int ld_out,
                                             const uint16_t *pb, const float *inv, int rows, int Tp,
                                             const uint16_t *vp, int T, int dh) {
    for (int i0 = 0; i0 < rows; i0 += TILE_R) {
        const uint16_t *pr[TILE_R];
        for (int r = 0; r < TILE_R; r++)
            pr[r] = pb + (size_t)(i0 + r < rows ? i0 + r : rows - 1) * Tp;
        const int valid = rows - i0 < TILE_R ? rows - i0 : TILE_R;
        float *oi = out16 ? NULL : out + (size_t)i0 * ld_out;
        uint16_t *oi16 = out16 ? out16 + (size_t)i0 * ld_out : NULL;
        int c0 = 0;
        for (; c0 + 64 <= dh; c0 += 64)
            values_tile_bf16(oi, oi16, ld_out, pr, inv + i0, valid, vp, T, dh, c0, 4);
        for (; c0 + 32 <= dh; c0 += 32)
            values_tile_bf16(oi, oi16, ld_out, pr, inv + i0, valid, vp, T, dh, c0, 2);
        if (c0 < dh) values_tile_bf16(oi, oi16, ld_out, pr, inv + i0, valid, vp, T, dh, c0, 1);
    }
}

/* exp_nonpositive with AVX-512's own instructions: the power of two by vscalefps (no clamp on the
 * result needed: below -120 it underflows to 0 by itself), the rounding by vrndscaleps. The same
 * values (the same polynomial on the same r, times the same power of two) for x >= -87.3; below,
 * subnormal weights instead of 0 (beside a row maximum's weight of 1, nothing). max(lo, x), in
 * this order, keeps a NaN. */
BF16_TARGET static inline __m512 exp_avx512(__m512 x) {
    const __m512 xc = _mm512_max_ps(_mm512_set1_ps(-120.0f), x);
    const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(xc, _mm512_set1_ps(1.44269504088896341f)),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), xc);
    r = _mm512_fmadd_ps(n, _mm512_set1_ps(2.12194440e-4f), r);
    const __m512 p = FAST_EXP_POLY(r);
    return _mm512_scalef_ps(p, n);
}

/* exponentials, the weights written as bfloat16 to pb [rows, Tp] at once (not stored as floats
 * and rounded in a second pass); the normaliser sums them unrounded. maxes: the rows' maxima when
 * known already (scores_bf16), else NULL. */
BF16_TARGET static void exponentials_bf16(uint16_t *pb, const float *s, int rows, int Tp, int T,
                                          const float *maxes, float *inv) {
    for (int i = 0; i < rows; i++) {
        const float *row = s + (size_t)i * Tp;
        uint16_t *out = pb + (size_t)i * Tp;
        const float max = maxes ? maxes[i] : row_max(row, T);
        if (max == -INFINITY) {
            memset(out, 0, sizeof(uint16_t) * (size_t)Tp);
            inv[i] = 0.0f;
            continue;
        }
        const __m512 m = _mm512_set1_ps(max);
        __m512 sum = _mm512_setzero_ps();
        for (int j0 = 0; j0 < Tp; j0 += TILE_C) {
            __m512 e = exp_avx512(_mm512_sub_ps(_mm512_loadu_ps(row + j0), m));
            if (j0 + TILE_C > T) e = _mm512_maskz_mov_ps((__mmask16)((1u << (T - j0)) - 1u), e);
            sum = _mm512_add_ps(sum, e);
            const __m256bh h = _mm512_cvtneps_pbh(e);
            memcpy(out + j0, &h, sizeof h);
        }
        v16f partial;
        memcpy(&partial, &sum, sizeof partial);
        inv[i] = inverse_total(&partial);
    }
}

/* One task: rows r0.. of (b, h). */
static void task_bf16(const attention_call *c, float *tile, const uint16_t *kp, const uint16_t *vp,
                      int b, int h, int r0, int rows) {
    const int T = c->T, D = c->D, dh = D / c->H, Tp = padded(T), ld = 3 * D;
    uint16_t *pb = (uint16_t *)(tile + (size_t)ROWS_PER_TASK * Tp);
    uint16_t *qb = pb + (size_t)ROWS_PER_TASK * Tp;
    const size_t first = ((size_t)b * T + r0) * ld + (size_t)h * dh; /* the block's first query */
    /* the block's queries copied together first (read in place, 3D apart, their cache misses
     * stalled the products: 2.5 % of a ViT-Ti forward more) */
    if (c->qkv16)
        for (int r = 0; r < rows; r++)
            memcpy(qb + (size_t)r * dh, c->qkv16 + first + (size_t)r * ld, sizeof(uint16_t) * dh);
    else
        round_rows(qb, c->qkv + first, rows, dh, (size_t)ld);
    /* the rows' maxima as the scores are made, unless a bias or a mask changes them after */
    float maxes[ROWS_PER_TASK], inv[ROWS_PER_TASK];
    const int plain = !c->bias && !c->key_mask && !c->causal;
    scores_bf16(tile, qb, (size_t)dh, rows, kp, Tp, dh, c->scale, plain ? maxes : NULL, T);
    bias_and_masks(c, tile, b, h, r0, rows, Tp);
    exponentials_bf16(pb, tile, rows, Tp, T, plain ? maxes : NULL, inv);
    const size_t at = ((size_t)b * T + r0) * D + (size_t)h * dh;
    weighted_values_bf16(c->out16 ? NULL : c->out + at, c->out16 ? c->out16 + at : NULL, D, pb, inv,
                         rows, Tp, vp, T, dh);
}

static void run_bf16(const attention_call *c, float *scratch, int team) {
    const int B = c->B, T = c->T, D = c->D, H = c->H;
    const int dh = D / H, Tp = padded(T), ld = 3 * D;
    const int blocks = (T + ROWS_PER_TASK - 1) / ROWS_PER_TASK, tasks = B * H * blocks;
    const size_t per_head = (size_t)dh * Tp; /* bf16 elements of a head's packed keys or values */
    uint16_t *kp_all = (uint16_t *)scratch, *vp_all = kp_all + (size_t)B * H * per_head;
    float *tiles = scratch + (size_t)B * D * Tp;
#pragma omp parallel num_threads(team)
    {
#pragma omp for schedule(static)
        for (int bh = 0; bh < B * H; bh++) {
            const int b = bh / H, h = bh % H;
            const size_t base = (size_t)b * T * ld + (size_t)h * dh;
            if (c->qkv16) {
                pack_keys_from_bf16(kp_all + bh * per_head, c->qkv16 + base + D, T, Tp, ld, dh);
                pack_values_from_bf16(vp_all + bh * per_head, c->qkv16 + base + 2 * D, T, ld, dh);
            } else {
                pack_keys_bf16(kp_all + bh * per_head, c->qkv + base + D, T, Tp, ld, dh);
                pack_values_bf16(vp_all + bh * per_head, c->qkv + base + 2 * D, T, ld, dh);
            }
        }
        float *tile = tiles + (size_t)omp_get_thread_num() * tile_floats(T, D);
#pragma omp for schedule(dynamic)
        for (int task = 0; task < tasks; task++) {
            const int bh = task / blocks, r0 = task % blocks * ROWS_PER_TASK;
            task_bf16(c, tile, kp_all + bh * per_head, vp_all + bh * per_head, bh / H, bh % H, r0,
                      T - r0 < ROWS_PER_TASK ? T - r0 : ROWS_PER_TASK);
        }
    }
}

int attention_infer_bf16_available(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512bf16") && __builtin_cpu_supports("avx512bw");
}

int attention_infer_bf16_supported(int D, int H) {
    return attention_infer_bf16_available() && attention_infer_supported(D, H) &&
           D / H <= MAX_BF16_HEAD;
}

int attention_infer_bf16_io(uint16_t *out16, float *out, const float *qkv, const uint16_t *qkv16,
                            const uint8_t *key_mask, const float *bias, int causal, float *scratch,
                            int threads, int B, int T, int D, int H) {
    const int bf16 = attention_infer_bf16_supported(D, H);
    if (!bf16 && qkv16) return refuse_bf16_qkv(out, B, T, D);
    const attention_call c = {
        out, bf16 ? out16 : NULL,         qkv16, qkv, bias, key_mask, causal, B, T, D,
        H,   1.0f / sqrtf((float)(D / H))};
    if (bf16)
        run_bf16(&c, scratch, team_size(threads));
    else
        run_fp32(&c, scratch, team_size(threads));
    return bf16 && out16;
}

void attention_infer_bf16(float *out, const float *qkv, const uint8_t *key_mask, const float *bias,
                          int causal, float *scratch, int threads, int B, int T, int D, int H) {
    attention_infer_bf16_io(NULL, out, qkv, NULL, key_mask, bias, causal, scratch, threads, B, T, D,
                            H);
}
#else
int attention_infer_bf16_available(void) {
    return 0;
}

void attention_infer_bf16(float *out, const float *qkv, const uint8_t *key_mask, const float *bias,
                          int causal, float *scratch, int threads, int B, int T, int D, int H) {
    attention_infer(out, qkv, key_mask, bias, causal, scratch, threads, B, T, D, H);
}

int attention_infer_bf16_supported(int D, int H) {
    (void)D, (void)H;
    return 0;
}

int attention_infer_bf16_io(uint16_t *out16, float *out, const float *qkv, const uint16_t *qkv16,
                            const uint8_t *key_mask, const float *bias, int causal, float *scratch,
                            int threads, int B, int T, int D, int H) {
    (void)out16;
    if (qkv16) return refuse_bf16_qkv(out, B, T, D);
    attention_infer(out, qkv, key_mask, bias, causal, scratch, threads, B, T, D, H);
    return 0;
}
#endif
