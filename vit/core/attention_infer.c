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
#include <string.h>

#include "vit/base/hot.h"
#include "vit/core/fastmath.h"
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

size_t attention_infer_scratch(int B, int T, int D, int threads) {
    const size_t Tp = (size_t)padded(T);
    return (size_t)B * D * Tp + (size_t)threads * ROWS_PER_TASK * Tp;
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
        float part[TILE_C];
        for (int k = 0; k < TILE_C; k++) part[k] = -INFINITY;
        int j = 0;
        for (; j + TILE_C <= T; j += TILE_C)
            for (int k = 0; k < TILE_C; k++) part[k] = row[j + k] > part[k] ? row[j + k] : part[k];
        float max = -INFINITY;
        for (; j < T; j++) max = row[j] > max ? row[j] : max;
        for (int k = 0; k < TILE_C; k++) max = part[k] > max ? part[k] : max;
        if (max == -INFINITY) {
            memset(row, 0, sizeof(float) * (size_t)T);
            inv[i] = 0.0f;
            continue;
        }
        float sum[TILE_C] = {0};
        for (j = 0; j + TILE_C <= T; j += TILE_C)
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

void attention_infer(float *out, const float *qkv, const uint8_t *key_mask, const float *bias,
                     int causal, float *scratch, int threads, int B, int T, int D, int H) {
    const int dh = D / H, Tp = padded(T), ld = 3 * D;
    const int blocks = (T + ROWS_PER_TASK - 1) / ROWS_PER_TASK, tasks = B * H * blocks;
    const float scale = 1.0f / sqrtf((float)dh);
    float *kt_all = scratch, *tiles = scratch + (size_t)B * D * Tp;
    const int team = omp_get_max_threads() < threads ? omp_get_max_threads() : threads;
#pragma omp parallel num_threads(team)
    {
#pragma omp for schedule(static)
        for (int bh = 0; bh < B * H; bh++) {
            const int b = bh / H, h = bh % H;
            pack_keys(kt_all + (size_t)bh * dh * Tp, qkv + (size_t)b * T * ld + D + h * dh, T, Tp,
                      ld, dh, scale);
        }
        float *s = tiles + (size_t)omp_get_thread_num() * ROWS_PER_TASK * Tp;
#pragma omp for schedule(dynamic)
        for (int task = 0; task < tasks; task++) {
            const int bh = task / blocks, b = bh / H, h = bh % H;
            const int r0 = task % blocks * ROWS_PER_TASK;
            const int rows = T - r0 < ROWS_PER_TASK ? T - r0 : ROWS_PER_TASK;
            const float *base = qkv + (size_t)b * T * ld + h * dh;
            scores(s, base + (size_t)r0 * ld, rows, ld, kt_all + (size_t)bh * dh * Tp, Tp, dh);
            if (bias) add_bias(s, rows, Tp, T, bias + ((size_t)h * T + r0) * T);
            if (key_mask || causal)
                mask_scores(s, rows, Tp, T, r0, key_mask ? key_mask + (size_t)b * T : NULL, causal);
            float inv[ROWS_PER_TASK];
            exponentials(s, rows, Tp, T, inv);
            weighted_values(out + ((size_t)b * T + r0) * D + h * dh, D, s, inv, rows, Tp,
                            base + 2 * D, ld, T, dh);
        }
    }
}
