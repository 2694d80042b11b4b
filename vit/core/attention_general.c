/* Multi-head attention of Tq query rows against Tk key/value rows: cross-attention (queries from
 * the decoder, keys and values from the encoder) and self-attention over a KV cache (the new rows'
 * queries against every cached key). ops.h documents the contract.
 *
 * Tasks are (item, head, block of query rows) in the forward and (item, head) in the backward
 * (its dK and dV sum over every query row of the pair, so one task owns them). Within a task the
 * rows go TILE_ROWS at a time, each tile's scores in a buffer of TILE_ROWS x KEY_CHUNK floats on
 * the stack (4 KB): no scratch from the caller, no allocation, and a bounded stack whatever Tk.
 *
 * The products are written out as loops over the head size with `omp simd` (any dh, no packing):
 * the decoder's step is one query row, for which a GEMM call's fixed cost (OpenBLAS packs its
 * operands) would outweigh the arithmetic; ops.c's attention_backward measured the same at
 * ViT sizes. Measured on one thread at B 8, T 64, D 768, H 12, causal: forward 4.0 ms (3.4 ms for
 * the OpenBLAS-based attention_forward), backward 6.2 ms (6.4 ms for attention_backward); one
 * query row of 4 items against 577 keys reads 14 MB of K/V in 1.2 ms, memory-bound. */
#include <math.h>
#include <omp.h>
#include <string.h>

#include "vit/base/hot.h"
#include "vit/core/fastmath.h"
#include "vit/core/ops.h"

#define TILE_ROWS    4     /* query rows that share each key row while it is in L1 */
#define KEY_CHUNK    256   /* keys per score tile when the weights are not kept */
#define TASK_ROWS    16    /* query rows per forward task: Tq = 1 gives B·H tasks of one row */
#define PARALLEL_OPS 32768 /* below this many multiply-adds one thread does it all */

/* ---- the kernels: tiles of n <= TILE_ROWS rows ---- */

/* s[r, j] (rows lds apart) = scale · a_r · b_j for r < n, j < nk: a_r = a + r·lda, b_j = b + j·ldb,
 * dh long. A full tile reads each b_j once for its four rows; a partial one (Tq = 1: the decoding
 * step) computes only its own rows. */
HOT_LOOP static void tile_dots(float *s, int lds, const float *a, int lda, int n, const float *b,
                               int ldb, int nk, int dh, float scale) {
    const float *a0 = a, *a1 = a + lda, *a2 = a + 2 * (size_t)lda, *a3 = a + 3 * (size_t)lda;
    for (int j = 0; j < nk; j++) {
        const float *bj = b + (size_t)j * ldb;
        if (n == TILE_ROWS) {
            float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;
#pragma omp simd reduction(+ : s0, s1, s2, s3)
            for (int d = 0; d < dh; d++) {
                s0 += a0[d] * bj[d];
                s1 += a1[d] * bj[d];
                s2 += a2[d] * bj[d];
                s3 += a3[d] * bj[d];
            }
            s[j] = scale * s0, s[lds + j] = scale * s1;
            s[2 * (size_t)lds + j] = scale * s2, s[3 * (size_t)lds + j] = scale * s3;
            continue;
        }
        for (int r = 0; r < n; r++) {
            const float *ar = a + (size_t)r * lda;
            float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
            for (int d = 0; d < dh; d++) sum += ar[d] * bj[d];
            s[(size_t)r * lds + j] = scale * sum;
        }
    }
}

/* out_r[:dh] += Σ_{j < nk} s[r, j] · m_j for r < n (out rows ldo apart, m rows ldm apart): the
 * weights times V, and dS times K. Zero weights (masked keys) are skipped. */
HOT_LOOP static void tile_weighted(float *out, int ldo, const float *s, int lds, int n,
                                   const float *m, int ldm, int nk, int dh) {
    float *o0 = out, *o1 = out + ldo, *o2 = out + 2 * (size_t)ldo, *o3 = out + 3 * (size_t)ldo;
    for (int j = 0; j < nk; j++) {
        const float *mj = m + (size_t)j * ldm;
        if (n == TILE_ROWS) {
            const float w0 = s[j], w1 = s[lds + j], w2 = s[2 * (size_t)lds + j],
                        w3 = s[3 * (size_t)lds + j];
            if (w0 == 0.0f && w1 == 0.0f && w2 == 0.0f && w3 == 0.0f) continue;
#pragma omp simd
            for (int d = 0; d < dh; d++) {
                o0[d] += w0 * mj[d];
                o1[d] += w1 * mj[d];
                o2[d] += w2 * mj[d];
                o3[d] += w3 * mj[d];
            }
            continue;
        }
        for (int r = 0; r < n; r++) {
            const float w = s[(size_t)r * lds + j];
            float *o = out + (size_t)r * ldo;
            if (w == 0.0f) continue;
#pragma omp simd
            for (int d = 0; d < dh; d++) o[d] += w * mj[d];
        }
    }
}

/* m_j[:dh] += Σ_{r < n} s[r, j] · a_r for j < nk (the transposed product): dS·Q into dK and
 * P·dO into dV, one read and write of each key row per tile. */
HOT_LOOP static void tile_weighted_t(float *m, int ldm, const float *s, int lds, int n,
                                     const float *a, int lda, int nk, int dh) {
    const float *a0 = a, *a1 = a + lda, *a2 = a + 2 * (size_t)lda, *a3 = a + 3 * (size_t)lda;
    for (int j = 0; j < nk; j++) {
        float *mj = m + (size_t)j * ldm;
        if (n == TILE_ROWS) {
            const float w0 = s[j], w1 = s[lds + j], w2 = s[2 * (size_t)lds + j],
                        w3 = s[3 * (size_t)lds + j];
            if (w0 == 0.0f && w1 == 0.0f && w2 == 0.0f && w3 == 0.0f) continue;
#pragma omp simd
            for (int d = 0; d < dh; d++) mj[d] += w0 * a0[d] + w1 * a1[d] + w2 * a2[d] + w3 * a3[d];
            continue;
        }
        for (int r = 0; r < n; r++) {
            const float w = s[(size_t)r * lds + j];
            const float *ar = a + (size_t)r * lda;
            if (w == 0.0f) continue;
#pragma omp simd
            for (int d = 0; d < dh; d++) mj[d] += w * ar[d];
        }
    }
}

/* rows[n, dh] (ld apart) = 0 */
static void zero_rows(float *x, int ld, int n, int dh) {
    for (int r = 0; r < n; r++) memset(x + (size_t)r * ld, 0, sizeof(float) * (size_t)dh);
}

/* ---- the forward ---- */

/* Keys query i may see: all Tk, or (causal >= 0) those up to its position causal + i. */
static int visible_keys(int i, int causal, int Tk) {
    if (causal < 0) return Tk;
    const long long n = (long long)i + causal + 1;
    return n < Tk ? (int)n : Tk;
}

/* What one task needs, for one (item, head): pointers at the head's columns of item b. */
typedef struct {
    float *out;     /* [Tq] rows D apart */
    float *probs;   /* [Tq, Tk] or NULL */
    const float *q; /* [Tq] rows ldq apart */
    const float *k, *v;
    const uint8_t *mask; /* [Tk] or NULL */
    int ldq, ldkv, D, Tk, dh, causal;
    float scale;
} head_view;

/* Masked keys of rows [i0, i0 + n) (tile columns j0.. of width nk, rows lds apart) get -inf. */
static void mask_tile(float *s, int lds, const head_view *h, int i0, int n, int j0, int nk) {
    for (int r = 0; r < n; r++) {
        float *row = s + (size_t)r * lds;
        const int vis = visible_keys(i0 + r, h->causal, h->Tk) - j0;
        for (int j = vis > 0 ? vis : 0; j < nk; j++) row[j] = -INFINITY;
        if (h->mask)
            for (int j = 0; j < nk && j < vis; j++)
                if (!h->mask[j0 + j]) row[j] = -INFINITY;
    }
}

/* Training: rows [i0, i0 + n) scored into their rows of probs, softmax there (kept for the
 * backward), then the weights times V. Keys past the tile's causal limit are never computed. */
static void tile_with_probs(const head_view *h, int i0, int n) {
    const int nk = visible_keys(i0 + n - 1, h->causal, h->Tk);
    float *p = h->probs + (size_t)i0 * h->Tk, *out = h->out + (size_t)i0 * h->D;
    tile_dots(p, h->Tk, h->q + (size_t)i0 * h->ldq, h->ldq, n, h->k, h->ldkv, nk, h->dh, h->scale);
    mask_tile(p, h->Tk, h, i0, n, 0, nk);
    for (int r = 0; r < n; r++) {
        float *row = p + (size_t)r * h->Tk;
        softmax_forward(row, 1, nk); /* a row with every key masked gets weights 0 */
        memset(row + nk, 0, sizeof(float) * (size_t)(h->Tk - nk));
    }
    zero_rows(out, h->D, n, h->dh);
    tile_weighted(out, h->D, p, h->Tk, n, h->v, h->ldkv, nk, h->dh);
}

/* One chunk's scores s[n, nk] (rows KEY_CHUNK apart) to exponentials against each row's running
 * max m[r], rescaling what rows r of out and sum l[r] hold so far when the max grows (the online
 * softmax). A row that has seen no key yet contributes nothing. */
static void online_softmax_step(float *s, int n, int nk, float *m, float *l, float *out, int D,
                                int dh) {
    for (int r = 0; r < n; r++) {
        float *row = s + (size_t)r * KEY_CHUNK, max = m[r];
        for (int j = 0; j < nk; j++) max = row[j] > max ? row[j] : max;
        if (max == -INFINITY) {
            memset(row, 0, sizeof(float) * (size_t)nk);
            continue;
        }
        if (max > m[r]) {
            const float alpha = fast_expf(m[r] - max); /* 0 for the first key seen */
            float *o = out + (size_t)r * D;
            for (int d = 0; d < dh; d++) o[d] *= alpha;
            l[r] *= alpha;
            m[r] = max;
        }
        float sum = 0.0f;
        for (int j = 0; j < nk; j++) sum += row[j] = fast_expf(row[j] - max);
        l[r] += sum;
    }
}

/* Inference: rows [i0, i0 + n) against the keys KEY_CHUNK at a time, the weights normalised at
 * the end (each output row divided by its sum of exponentials). */
static void tile_online(const head_view *h, int i0, int n) {
    float s[TILE_ROWS * KEY_CHUNK], m[TILE_ROWS], l[TILE_ROWS];
    const int nk = visible_keys(i0 + n - 1, h->causal, h->Tk);
    const float *q = h->q + (size_t)i0 * h->ldq;
    float *out = h->out + (size_t)i0 * h->D;
    for (int r = 0; r < n; r++) m[r] = -INFINITY, l[r] = 0.0f;
    zero_rows(out, h->D, n, h->dh);
    for (int j0 = 0; j0 < nk; j0 += KEY_CHUNK) {
        const int w = nk - j0 < KEY_CHUNK ? nk - j0 : KEY_CHUNK;
        tile_dots(s, KEY_CHUNK, q, h->ldq, n, h->k + (size_t)j0 * h->ldkv, h->ldkv, w, h->dh,
                  h->scale);
        mask_tile(s, KEY_CHUNK, h, i0, n, j0, w);
        online_softmax_step(s, n, w, m, l, out, h->D, h->dh);
        tile_weighted(out, h->D, s, KEY_CHUNK, n, h->v + (size_t)j0 * h->ldkv, h->ldkv, w, h->dh);
    }
    for (int r = 0; r < n; r++) { /* no key seen: l = 0 and the row stays 0 */
        const float inv = l[r] > 0.0f ? 1.0f / l[r] : 0.0f;
        float *o = out + (size_t)r * h->D;
        for (int d = 0; d < h->dh; d++) o[d] *= inv;
    }
}

static head_view head_of(float *out, float *probs, const float *q, int ldq, const float *k,
                         const float *v, int ldkv, const uint8_t *key_mask, int causal, int b,
                         int h, int Tq, int Tk, int kv_rows, int D, int H) {
    const int dh = D / H;
    const size_t kv = (size_t)b * kv_rows * ldkv + (size_t)h * dh;
    return (head_view){.out = out + (size_t)b * Tq * D + (size_t)h * dh,
                       .probs = probs ? probs + ((size_t)b * H + h) * Tq * Tk : NULL,
                       .q = q + (size_t)b * Tq * ldq + (size_t)h * dh,
                       .k = k + kv,
                       .v = v + kv,
                       .mask = key_mask ? key_mask + (size_t)b * kv_rows : NULL,
                       .ldq = ldq,
                       .ldkv = ldkv,
                       .D = D,
                       .Tk = Tk,
                       .dh = dh,
                       .causal = causal,
                       .scale = 1.0f / sqrtf((float)dh)};
}

void attention_general_forward(float *out, float *probs, const float *q, int ldq, const float *k,
                               const float *v, int ldkv, const uint8_t *key_mask, int causal, int B,
                               int Tq, int Tk, int kv_rows, int D, int H) {
    const int blocks = (Tq + TASK_ROWS - 1) / TASK_ROWS, tasks = B * H * blocks;
    const double ops = 2.0 * B * Tq * Tk * D;
#pragma omp parallel for schedule(dynamic) if (tasks > 1 && ops >= PARALLEL_OPS)
    for (int task = 0; task < tasks; task++) {
        const int b = task / (H * blocks), h = task / blocks % H, blk = task % blocks;
        const head_view hv =
            head_of(out, probs, q, ldq, k, v, ldkv, key_mask, causal, b, h, Tq, Tk, kv_rows, D, H);
        const int r1 = (blk + 1) * TASK_ROWS < Tq ? (blk + 1) * TASK_ROWS : Tq;
        for (int i0 = blk * TASK_ROWS; i0 < r1; i0 += TILE_ROWS) {
            const int n = r1 - i0 < TILE_ROWS ? r1 - i0 : TILE_ROWS;
            if (probs)
                tile_with_probs(&hv, i0, n);
            else
                tile_online(&hv, i0, n);
        }
    }
}

/* ---- the backward ---- */

/* Keys with a non-zero weight in rows p[n, Tk]: 0..return-1 (masked and causal tails skipped:
 * a zero weight passes no gradient to its key, value or score). */
static int used_keys(const float *p, int n, int Tk) {
    int nk = 0;
    for (int r = 0; r < n; r++) {
        const float *row = p + (size_t)r * Tk;
        int j = Tk;
        while (j > nk && row[j - 1] == 0.0f) j--;
        nk = j > nk ? j : nk;
    }
    return nk;
}

/* Pointers at one (item, head)'s columns for the backward. */
typedef struct {
    float *dq, *dk, *dv;
    const float *dout, *p, *q, *k, *v;
    int lddq, lddkv, ldq, ldkv, D, Tk, dh;
    float scale;
} head_grads;

/* The gradient wrt the scores of rows [i0, i0 + n), keys [j0, j0 + w): g = dO·Vᵀ on the way in
 * (dP), scale · P ∘ (dP - rowdot) on the way out (softmax, then S = scale·Q·Kᵀ). */
static void tile_score_grads(float *g, const head_grads *t, int i0, int n, int j0, int w,
                             const float *rowdot) {
    const float *p = t->p + (size_t)i0 * t->Tk + j0;
    for (int r = 0; r < n; r++) {
        float *gr = g + (size_t)r * KEY_CHUNK;
        const float *pr = p + (size_t)r * t->Tk;
        for (int j = 0; j < w; j++) gr[j] = t->scale * pr[j] * (gr[j] - rowdot[r]);
    }
}

/* Rows [i0, i0 + n): dq written; dk, dv accumulated. rowdot_r = Σ_j P_rj·dP_rj needs the whole
 * row of dP before any dS: a first pass over the chunks sums it (and adds P·dO into dV), the
 * second recomputes dP chunk by chunk, unless one chunk held every key. */
static void tile_backward(const head_grads *t, int i0, int n) {
    float g[TILE_ROWS * KEY_CHUNK], rowdot[TILE_ROWS] = {0};
    const float *p = t->p + (size_t)i0 * t->Tk, *dout = t->dout + (size_t)i0 * t->D;
    const float *q = t->q + (size_t)i0 * t->ldq;
    float *dq = t->dq + (size_t)i0 * t->lddq;
    const int nk = used_keys(p, n, t->Tk);
    zero_rows(dq, t->lddq, n, t->dh);
    for (int j0 = 0; j0 < nk; j0 += KEY_CHUNK) {
        const int w = nk - j0 < KEY_CHUNK ? nk - j0 : KEY_CHUNK;
        tile_weighted_t(t->dv + (size_t)j0 * t->lddkv, t->lddkv, p + j0, t->Tk, n, dout, t->D, w,
                        t->dh);
        tile_dots(g, KEY_CHUNK, dout, t->D, n, t->v + (size_t)j0 * t->ldkv, t->ldkv, w, t->dh,
                  1.0f);
        for (int r = 0; r < n; r++)
            for (int j = 0; j < w; j++)
                rowdot[r] += p[(size_t)r * t->Tk + j0 + j] * g[(size_t)r * KEY_CHUNK + j];
    }
    for (int j0 = 0; j0 < nk; j0 += KEY_CHUNK) {
        const int w = nk - j0 < KEY_CHUNK ? nk - j0 : KEY_CHUNK;
        if (nk > KEY_CHUNK)
            tile_dots(g, KEY_CHUNK, dout, t->D, n, t->v + (size_t)j0 * t->ldkv, t->ldkv, w, t->dh,
                      1.0f);
        tile_score_grads(g, t, i0, n, j0, w, rowdot);
        tile_weighted(dq, t->lddq, g, KEY_CHUNK, n, t->k + (size_t)j0 * t->ldkv, t->ldkv, w, t->dh);
        tile_weighted_t(t->dk + (size_t)j0 * t->lddkv, t->lddkv, g, KEY_CHUNK, n, q, t->ldq, w,
                        t->dh);
    }
}

void attention_general_backward(float *dq, int lddq, float *dk, float *dv, int lddkv,
                                const float *dout, const float *probs, const float *q, int ldq,
                                const float *k, const float *v, int ldkv, int B, int Tq, int Tk,
                                int D, int H) {
    const int dh = D / H, tasks = B * H;
    const double ops = 4.0 * B * Tq * Tk * D;
#pragma omp parallel for schedule(dynamic) if (tasks > 1 && ops >= PARALLEL_OPS)
    for (int task = 0; task < tasks; task++) {
        const int b = task / H, h = task % H;
        const size_t col = (size_t)h * dh;
        const head_grads t = {.dq = dq + (size_t)b * Tq * lddq + col,
                              .dk = dk + (size_t)b * Tk * lddkv + col,
                              .dv = dv + (size_t)b * Tk * lddkv + col,
                              .dout = dout + (size_t)b * Tq * D + col,
                              .p = probs + (size_t)task * Tq * Tk,
                              .q = q + (size_t)b * Tq * ldq + col,
                              .k = k + (size_t)b * Tk * ldkv + col,
                              .v = v + (size_t)b * Tk * ldkv + col,
                              .lddq = lddq,
                              .lddkv = lddkv,
                              .ldq = ldq,
                              .ldkv = ldkv,
                              .D = D,
                              .Tk = Tk,
                              .dh = dh,
                              .scale = 1.0f / sqrtf((float)dh)};
        zero_rows(t.dk, lddkv, Tk, dh); /* both sum over every query row of the pair */
        zero_rows(t.dv, lddkv, Tk, dh);
        for (int i0 = 0; i0 < Tq; i0 += TILE_ROWS)
            tile_backward(&t, i0, Tq - i0 < TILE_ROWS ? Tq - i0 : TILE_ROWS);
    }
}
