/* Multi-head attention for inference, without the [B, H, T, T] weights: each task takes a block
 * of query rows of one (batch, head), computes their scores against every key in a tile that
 * stays in the L1 cache, turns them into weights there and multiplies them with V at once.
 *
 * The products run on register tiles of 6 rows x 16 columns, one 16-float vector a row: six
 * 512-bit accumulators where the CPU has AVX-512 (the x86-64-v4 clone; twelve 256-bit ones in the
 * AVX2 clone, as many as its 16 registers leave room for). Written as 8-float vectors before, they
 * ran at half the rate of a 512-bit FMA pipe (Zen 5, Intel). Scores against Kᵀ, which is packed per
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

/* s [rows, Tp] = q [rows, dh] (rows ld apart) · kt [dh, Tp]. */
HOT_LOOP static void scores(float *s, const float *q, int rows, int ld, const float *kt, int Tp,
                            int dh) {
    for (int i0 = 0; i0 < rows; i0 += TILE_R) {
        const float *qr[TILE_R]; /* rows past the block repeat its last: computed, not stored */
        for (int r = 0; r < TILE_R; r++)
            qr[r] = q + (size_t)(i0 + r < rows ? i0 + r : rows - 1) * ld;
        for (int j0 = 0; j0 < Tp; j0 += TILE_C) {
            v16f acc[TILE_R];
            for (int r = 0; r < TILE_R; r++) acc[r] = (v16f){0};
            for (int d = 0; d < dh; d++) {
                v16f k;
                load16(&k, kt + (size_t)d * Tp + j0);
                for (int r = 0; r < TILE_R; r++) acc[r] += qr[r][d] * k;
            }
            for (int r = 0; r < TILE_R && i0 + r < rows; r++)
                store16(s + (size_t)(i0 + r) * Tp + j0, &acc[r]);
        }
    }
}

/* out [rows, dh] (rows ld_out apart) = diag(inv) · p [rows, T] (rows Tp apart) · v [T, dh]
 * (rows ld apart). */
HOT_LOOP static void weighted_values(float *out, int ld_out, const float *p, const float *inv,
                                     int rows, int Tp, const float *v, int ld, int T, int dh) {
    for (int i0 = 0; i0 < rows; i0 += TILE_R) {
        const float *pr[TILE_R];
        for (int r = 0; r < TILE_R; r++)
            pr[r] = p + (size_t)(i0 + r < rows ? i0 + r : rows - 1) * Tp;
        for (int c0 = 0; c0 < dh; c0 += TILE_C) {
            v16f acc[TILE_R];
            for (int r = 0; r < TILE_R; r++) acc[r] = (v16f){0};
            for (int j = 0; j < T; j++) {
                v16f vj;
                load16(&vj, v + (size_t)j * ld + c0);
                for (int r = 0; r < TILE_R; r++) acc[r] += pr[r][j] * vj;
            }
            for (int r = 0; r < TILE_R && i0 + r < rows; r++) {
                const v16f a = acc[r] * inv[i0 + r];
                store16(out + (size_t)(i0 + r) * ld_out + c0, &a);
            }
        }
    }
}

/* Each row of s [rows, Tp]: its exponentials (the row's max subtracted) in place, and the
 * inverse of their sum in inv[row], which weighted_values applies to its output rows (one
 * multiplication per output instead of per weight). A row with every key masked gets weights 0
 * and inv 0: it attends to nothing rather than NaN, as softmax_forward. */
HOT_LOOP static void exponentials(float *s, int rows, int Tp, int T, float *inv) {
    for (int i = 0; i < rows; i++) {
        float *row = s + (size_t)i * Tp;
        float max = -INFINITY;
        /* the pragma lets the compiler reorder the reduction (it kept 16 partial maxima as 16
         * scalar vmaxss); the maximum is the same in any order */
#pragma omp simd reduction(max : max)
        for (int j = 0; j < T; j++) max = row[j] > max ? row[j] : max;
        if (max == -INFINITY) {
            memset(row, 0, sizeof(float) * (size_t)T);
            inv[i] = 0.0f;
            continue;
        }
        float sum[TILE_C] = {0};
        int j = 0;
        for (; j + TILE_C <= T; j += TILE_C)
            for (int k = 0; k < TILE_C; k++) sum[k] += row[j + k] = fast_expf(row[j + k] - max);
        float total = 0.0f;
        for (; j < T; j++) total += row[j] = fast_expf(row[j] - max);
        for (int k = 0; k < TILE_C; k++) total += sum[k];
        inv[i] = 1.0f / total;
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

/* Masked keys (padding, or later than the query when causal) get no weight. */
static void mask_scores(float *s, int rows, int Tp, int T, int r0, const uint8_t *key_mask,
                        int causal) {
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < T; j++)
            if ((key_mask && !key_mask[j]) || (causal && j > r0 + i))
                s[(size_t)i * Tp + j] = -INFINITY;
}

typedef struct {
    float *out;
    const float *qkv, *bias;
    const uint8_t *key_mask;
    int causal, B, T, D, H;
} attention_call;

/* The rows of one task, up to their exponentials in s (and inv): scores, bias, masks, softmax. */
static void softmax_rows(const attention_call *c, float *s, int b, int h, int r0, int rows, int Tp,
                         float *inv) {
    const int T = c->T;
    if (c->bias) add_bias(s, rows, Tp, T, c->bias + ((size_t)h * T + r0) * T);
    if (c->key_mask || c->causal)
        mask_scores(s, rows, Tp, T, r0, c->key_mask ? c->key_mask + (size_t)b * T : NULL,
                    c->causal);
    exponentials(s, rows, Tp, T, inv);
}

static void run_fp32(const attention_call *c, float *scratch, int team) {
    const int B = c->B, T = c->T, D = c->D, H = c->H;
    const int dh = D / H, Tp = padded(T), ld = 3 * D;
    const int blocks = (T + ROWS_PER_TASK - 1) / ROWS_PER_TASK, tasks = B * H * blocks;
    const float scale = 1.0f / sqrtf((float)dh);
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
            scores(s, base + (size_t)r0 * ld, rows, ld, kt_all + (size_t)bh * dh * Tp, Tp, dh);
            float inv[ROWS_PER_TASK];
            softmax_rows(c, s, b, h, r0, rows, Tp, inv);
            weighted_values(c->out + ((size_t)b * T + r0) * D + h * dh, D, s, inv, rows, Tp,
                            base + 2 * D, ld, T, dh);
        }
    }
}

static int team_size(int threads) {
    return omp_get_max_threads() < threads ? omp_get_max_threads() : threads;
}

void attention_infer(float *out, const float *qkv, const uint8_t *key_mask, const float *bias,
                     int causal, float *scratch, int threads, int B, int T, int D, int H) {
    const attention_call c = {out, qkv, bias, key_mask, causal, B, T, D, H};
    run_fp32(&c, scratch, team_size(threads));
}

/* ---- bfloat16 ----
 * AVX512-BF16's dot product (vdpbf16ps) adds to each fp32 lane the products of a pair of bf16
 * values from each operand: twice the multiply-adds of an fp32 FMA per instruction. So both
 * products take pairs along their sums: the keys packed as [dh/2][Tp][2] (for a pair of head
 * dimensions, 16 keys' pairs make one vector), the query's pair broadcast; the values as [T2/2][dh]
 * [2] (T2: T rounded up to even), the weights' pair (two keys) broadcast. */
#ifdef VIT_BF16_ATTENTION
#define BF16_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

/* f's bfloat16 bits, rounded as the products' operands are (round_to_bf16). */
static inline uint16_t bf16_round(float f) {
    const float r = round_to_bf16(f);
    uint32_t u;
    memcpy(&u, &r, sizeof u);
    return (uint16_t)(u >> 16);
}

/* A pair of bf16 values as one 32-bit lane (memcpy: the buffers hold uint16_t). */
static inline int pair_at(const uint16_t *p) {
    int v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* kp [dh/2][Tp][2] = scale · K of one (batch, head) in pairs of dimensions, zero past T. */
static void pack_keys_bf16(uint16_t *kp, const float *k, int T, int Tp, int ld, int dh,
                           float scale) {
    for (int j = 0; j < Tp; j++)
        for (int p = 0; p < dh / 2; p++) {
            uint16_t *to = kp + ((size_t)p * Tp + j) * 2;
            const float *row = k + (size_t)j * ld + 2 * p;
            to[0] = j < T ? bf16_round(scale * row[0]) : 0;
            to[1] = j < T ? bf16_round(scale * row[1]) : 0;
        }
}

/* vp [T2/2][dh][2] = V of one (batch, head) in pairs of keys, the pad row zero. */
static void pack_values_bf16(uint16_t *vp, const float *v, int T, int ld, int dh) {
    for (int jp = 0; jp < (T + 1) / 2; jp++) {
        const float *v0 = v + (size_t)(2 * jp) * ld, *v1 = v0 + ld;
        uint16_t *out = vp + (size_t)jp * dh * 2;
        for (int c = 0; c < dh; c++) {
            out[2 * c] = bf16_round(v0[c]);
            out[2 * c + 1] = 2 * jp + 1 < T ? bf16_round(v1[c]) : 0;
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

/* s [rows, Tp] = qb [rows, dh] (bf16) · kp. */
BF16_TARGET static void scores_bf16(float *s, const uint16_t *qb, int rows, const uint16_t *kp,
                                    int Tp, int dh) {
    for (int i0 = 0; i0 < rows; i0 += TILE_R) {
        const uint16_t *qr[TILE_R];
        for (int r = 0; r < TILE_R; r++)
            qr[r] = qb + (size_t)(i0 + r < rows ? i0 + r : rows - 1) * dh;
        for (int j0 = 0; j0 < Tp; j0 += TILE_C) {
            __m512 acc[TILE_R];
            for (int r = 0; r < TILE_R; r++) acc[r] = _mm512_setzero_ps();
            for (int p = 0; p < dh / 2; p++) {
                const __m512bh k = (__m512bh)_mm512_loadu_si512(kp + ((size_t)p * Tp + j0) * 2);
                for (int r = 0; r < TILE_R; r++)
                    acc[r] = _mm512_dpbf16_ps(
                        acc[r], (__m512bh)_mm512_set1_epi32(pair_at(qr[r] + 2 * p)), k);
            }
            for (int r = 0; r < TILE_R && i0 + r < rows; r++)
                _mm512_storeu_ps(s + (size_t)(i0 + r) * Tp + j0, acc[r]);
        }
    }
}

/* out [rows, dh] (rows ld_out apart) = diag(inv) · pb [rows, Tp] (bf16; zero from T on) · vp. */
BF16_TARGET static void weighted_values_bf16(float *out, int ld_out, const uint16_t *pb,
                                             const float *inv, int rows, int Tp, const uint16_t *vp,
                                             int T, int dh) {
    for (int i0 = 0; i0 < rows; i0 += TILE_R) {
        const uint16_t *pr[TILE_R];
        for (int r = 0; r < TILE_R; r++)
            pr[r] = pb + (size_t)(i0 + r < rows ? i0 + r : rows - 1) * Tp;
        for (int c0 = 0; c0 < dh; c0 += TILE_C) {
            __m512 acc[TILE_R];
            for (int r = 0; r < TILE_R; r++) acc[r] = _mm512_setzero_ps();
            for (int jp = 0; jp < (T + 1) / 2; jp++) {
                const __m512bh v = (__m512bh)_mm512_loadu_si512(vp + ((size_t)jp * dh + c0) * 2);
                for (int r = 0; r < TILE_R; r++)
                    acc[r] = _mm512_dpbf16_ps(
                        acc[r], (__m512bh)_mm512_set1_epi32(pair_at(pr[r] + 2 * jp)), v);
            }
            for (int r = 0; r < TILE_R && i0 + r < rows; r++)
                _mm512_storeu_ps(out + (size_t)(i0 + r) * ld_out + c0,
                                 _mm512_mul_ps(acc[r], _mm512_set1_ps(inv[i0 + r])));
        }
    }
}

/* One task: rows r0.. of (b, h). */
static void task_bf16(const attention_call *c, float *tile, const uint16_t *kp, const uint16_t *vp,
                      int b, int h, int r0, int rows) {
    const int T = c->T, D = c->D, dh = D / c->H, Tp = padded(T), ld = 3 * D;
    uint16_t *pb = (uint16_t *)(tile + (size_t)ROWS_PER_TASK * Tp);
    uint16_t *qb = pb + (size_t)ROWS_PER_TASK * Tp;
    const float *base = c->qkv + (size_t)b * T * ld + h * dh;
    round_rows(qb, base + (size_t)r0 * ld, rows, dh, (size_t)ld);
    scores_bf16(tile, qb, rows, kp, Tp, dh);
    float inv[ROWS_PER_TASK];
    softmax_rows(c, tile, b, h, r0, rows, Tp, inv);
    round_rows(pb, tile, rows, Tp, (size_t)Tp); /* past T: zero scores (zero keys), never exp'd */
    weighted_values_bf16(c->out + ((size_t)b * T + r0) * D + h * dh, D, pb, inv, rows, Tp, vp, T,
                         dh);
}

static void run_bf16(const attention_call *c, float *scratch, int team) {
    const int B = c->B, T = c->T, D = c->D, H = c->H;
    const int dh = D / H, Tp = padded(T), ld = 3 * D;
    const int blocks = (T + ROWS_PER_TASK - 1) / ROWS_PER_TASK, tasks = B * H * blocks;
    const float scale = 1.0f / sqrtf((float)dh);
    const size_t per_head = (size_t)dh * Tp; /* bf16 elements of a head's packed keys or values */
    uint16_t *kp_all = (uint16_t *)scratch, *vp_all = kp_all + (size_t)B * H * per_head;
    float *tiles = scratch + (size_t)B * D * Tp;
#pragma omp parallel num_threads(team)
    {
#pragma omp for schedule(static)
        for (int bh = 0; bh < B * H; bh++) {
            const int b = bh / H, h = bh % H;
            const float *base = c->qkv + (size_t)b * T * ld + h * dh;
            pack_keys_bf16(kp_all + bh * per_head, base + D, T, Tp, ld, dh, scale);
            pack_values_bf16(vp_all + bh * per_head, base + 2 * D, T, ld, dh);
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

void attention_infer_bf16(float *out, const float *qkv, const uint8_t *key_mask, const float *bias,
                          int causal, float *scratch, int threads, int B, int T, int D, int H) {
    const attention_call c = {out, qkv, bias, key_mask, causal, B, T, D, H};
    if (attention_infer_bf16_available())
        run_bf16(&c, scratch, team_size(threads));
    else
        run_fp32(&c, scratch, team_size(threads));
}
#else
int attention_infer_bf16_available(void) {
    return 0;
}

void attention_infer_bf16(float *out, const float *qkv, const uint8_t *key_mask, const float *bias,
                          int causal, float *scratch, int threads, int B, int T, int D, int H) {
    attention_infer(out, qkv, key_mask, bias, causal, scratch, threads, B, T, D, H);
}
#endif
