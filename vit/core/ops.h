#ifndef VIT_OPS_H
#define VIT_OPS_H

/* The transformer's building blocks, each with explicit shapes. Row-major throughout:
 * a [N, D] tensor is N rows of D floats. Matrix products go through oneDNN's sgemm or OpenBLAS
 * (ops_set_blas; but for the tiny per-head products of attention_backward, written out by hand:
 * see ops.c).
 *
 * Every *_backward sits beside its *_forward. Gradient conventions:
 *   - parameter gradients (dweight, dbias, dw, db) always ACCUMULATE (+=): several batches, or
 *     several uses of one tensor, add up in the one grads block;
 *   - input gradients are OVERWRITTEN by linear, activation, attention, dropout and
 *     cross-entropy (they feed a fresh scratch buffer, so no memset is needed) and ACCUMULATED
 *     by layernorm (its input is the residual stream, which already holds the skip gradient).
 * Any gradient pointer documented "may be NULL" is skipped when NULL. */

#include <stddef.h>
#include <stdint.h>

/* quick_gelu: x·σ(1.702·x) (CLIP). ACT_SWIGLU and ACT_GEGLU are not element-wise: a
 * feed-forward whose first layer is twice as wide, silu (GeGLU: the erf GELU) of one half times
 * the other (swiglu_forward, geglu_forward); activation_forward and activation_backward take the
 * element-wise kinds only. */
typedef enum {
    ACT_GELU,
    ACT_GELU_TANH,
    ACT_RELU,
    ACT_QUICK_GELU,
    ACT_SWIGLU,
    ACT_GEGLU
} activation_kind;

/* 1 for the gated kinds, whose first layer gives both halves. */
static inline int activation_gated(activation_kind act) {
    return act == ACT_SWIGLU || act == ACT_GEGLU;
}

/* OpenBLAS single-threaded: OpenMP owns the cores (see vit/base/threads.h) and each of its
 * threads runs OpenBLAS on its share of the rows. Call before the first matrix product. */
void ops_init(void);

/* Who computes these ops' matrix products (each single-threaded on a thread's share, as above):
 * OpenBLAS, or oneDNN's sgemm (dnnl_sgemm, its AVX-512/AVX2 kernels picked for the CPU whatever
 * OPENBLAS_CORETYPE says), the default where the build has oneDNN. Process-wide: set it before
 * any op runs, not while one does. OPS_BLAS_ONEDNN_BF16: training in bf16, the products' operands
 * rounded to bfloat16 and summed in fp32 on oneDNN's bf16 kernels (everything else, the
 * parameters and their updates stay fp32). ops_set_blas returns -1 for oneDNN in a build without
 * it, and for bf16 on a CPU without bf16 kernels. gemm_backend_describe names the kernels either
 * runs. */
typedef enum { OPS_BLAS_OPENBLAS, OPS_BLAS_ONEDNN, OPS_BLAS_ONEDNN_BF16 } ops_blas;
int ops_set_blas(ops_blas blas);
ops_blas ops_get_blas(void);
/* Frees what the bf16 products keep per thread (their rounded operands), on each thread of the
 * current team: call after a run, outside any parallel region. */
void ops_release_buffers(void);

/* out[0..m) = indices of the m = min(k, n) largest of x[0..n), largest first (ties: lower index
 * first; NaN after every number); returns m (0 when k <= 0). O(n log k). */
int topk_indices(const float *x, int n, int k, int *out);

/* out[n] = a[n] + b[n] (out may alias either). */
void vector_add(float *out, const float *a, const float *b, size_t n);

/* out[N, OUT] = inp[N, IN] · weight[OUT, IN]ᵀ + bias[OUT] (PyTorch nn.Linear; bias may be NULL). */
void linear_forward(float *out, const float *inp, const float *weight, const float *bias, int N,
                    int IN, int OUT);
/* dinp[N, IN] = dout[N, OUT] · weight (overwritten); dweight[OUT, IN] += doutᵀ · inp;
 * dbias[OUT] += column sums of dout. Each of dinp, dweight, dbias may be NULL. */
void linear_backward(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                     const float *weight, int N, int IN, int OUT);

/* f as bfloat16 bits, rounded to nearest, ties to even, branch-free so loops vectorise: rounding
 * carries into the exponent as it should (the largest floats become infinity, infinity stays); a
 * NaN becomes a quiet NaN, never infinity. */
static inline uint16_t bf16_bits(float f) {
    uint32_t u;
    __builtin_memcpy(&u, &f, sizeof u);
    const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    const uint32_t nan = (u >> 16) | 0x40u;
    return (uint16_t)((u & 0x7fffffffu) > 0x7f800000u ? nan : rounded);
}

/* out[N, D] = (inp - mean) * rstd * w + b per row, biased variance, eps inside the square root.
 * mean/rstd [N] are saved for the backward pass (either may be NULL). */
void layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *w,
                       const float *b, int N, int D, float eps);
/* The same output rounded to bfloat16 as it is written (bf16_bits of layernorm_forward's, bit for
 * bit), for a layer that takes bf16 input (inference: no mean or rstd kept). */
void layernorm_forward_bf16(uint16_t *out, const float *inp, const float *w, const float *b, int N,
                            int D, float eps);
/* From the forward's inp, mean, rstd: dinp[N, D] += ∂/∂inp (accumulated: the residual stream),
 * dw[D] += Σ dout·x̂, db[D] += Σ dout. dinp must not alias dout. dw, db may be NULL. */
void layernorm_backward(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                        const float *mean, const float *rstd, const float *w, int N, int D);

/* out[n] = act(inp[n]); in place allowed. */
void activation_forward(float *out, const float *inp, size_t n, activation_kind act);
/* The same on the calling thread only (inside a parallel region, on its share). */
void activation_serial(float *out, const float *inp, size_t n, activation_kind act);
/* y[n] = the tanh GELU of y in place, as x·σ(2u) = x / (1 + e^(-2u)) with fast_expf (the same
 * function, within a few ulps of it in double; no tanhf call, so it vectorises), for the products
 * of the reduced-precision layers. fp32 keeps activation_*'s tanhf form, its goldens unchanged. */
void gelu_tanh_fast(float *y, size_t n);
/* dinp[n] = dout[n] · act'(inp[n]) with inp the forward's input (overwritten; dinp may alias dout).
 * GELU uses the exact erf derivative Φ(x) + x·φ(x). */
void activation_backward(float *dinp, const float *dout, const float *inp, size_t n,
                         activation_kind act);

/* SwiGLU (DINOv2's use_swiglu_ffn): each row of inp [rows, 2h] is u₁ (its first h) and u₂;
 * out [rows, h] = silu(u₁) · u₂, silu(x) = x·σ(x). */
void swiglu_forward(float *out, const float *inp, int rows, int h);
/* dinp [rows, 2h] (overwritten; must not overlap dout) from dout [rows, h] and the forward's inp.
 */
void swiglu_backward(float *dinp, const float *dout, const float *inp, int rows, int h);
/* GeGLU (JinaBERT v2's gated_layers): out = gelu(u₁) · u₂, the erf GELU; the backward likewise. */
void geglu_forward(float *out, const float *inp, int rows, int h);
void geglu_backward(float *dinp, const float *dout, const float *inp, int rows, int h);

/* Rotary positions (RoFormer) on the queries and keys of qkv [B·T, ld] (query columns [0, D), key
 * columns [D, 2D), heads of D/heads each): in every head the first rot columns turn by the
 * angles (pos0 + t)·base^(−2i/rot), i < rot/2, t the row's position in its sequence; pairs are
 * (i, i + rot/2), GPT-NeoX's halves, or (2i, 2i + 1) when interleaved (GPT-J's). inverse turns
 * the other way: the transpose, which takes a gradient wrt the turned rows back to the rows. */
void rotary_forward(float *qkv, int B, int T, size_t ld, int D, int heads, int rot, double base,
                    int interleaved, int pos0, int inverse);
/* ALiBi (Press et al.; BLOOM's and JinaBERT's get_slopes): head h's slope, the geometric series
 * 2^(−8(h+1)/n) for n heads a power of two, else the closest power's and every other one of
 * twice that. */
double alibi_slope(int heads, int h);
/* bias [H, T, T] = −slope_h · |i − j| (an encoder's symmetric ALiBi). */
void alibi_bias(float *bias, int H, int T);

/* Layer scale (DINOv2's lambda1, BEiT's lambda_1/2): out[n, d] = inp[n, d] · scale[d] for
 * inp [N, D]; in place allowed. */
void layer_scale_forward(float *out, const float *inp, const float *scale, int N, int D);
/* dinp[n, d] = dout[n, d] · scale[d] (overwritten; in place allowed); dscale[D] += Σₙ dout · inp
 * (may be NULL) with inp the forward's input. */
void layer_scale_backward(float *dinp, float *dscale, const float *dout, const float *inp,
                          const float *scale, int N, int D);

/* Dropout (PyTorch nn.Dropout in training mode): keep[n] = 1 with probability 1 - p, else 0,
 * drawn from the splitmix64 generator *rng (advanced; same state -> same mask). */
void dropout_mask(uint8_t *keep, size_t n, float p, uint64_t *rng);
/* Elements first..first+n of the mask dropout_mask would draw for total elements (and *rng
 * advanced as it would be): one process's part of a batch split among several. */
void dropout_mask_part(uint8_t *keep, size_t n, float p, uint64_t *rng, size_t first, size_t total);
/* out[i] = inp[i] · keep[i] / (1 - p) (p >= 1 zeroes everything, as PyTorch does); in place
 * allowed. */
void dropout_forward(float *out, const float *inp, const uint8_t *keep, size_t n, float p);
/* Dropout is linear and self-adjoint: dinp = dout through the same scaled mask (overwritten; in
 * place allowed). */
void dropout_backward(float *dinp, const float *dout, const uint8_t *keep, size_t n, float p);

/* Stable softmax of each row of x[rows, cols], in place, in float (attention weights). */
void softmax_forward(float *x, int rows, int cols);
/* A classifier's probabilities: softmax of each row of logits[rows, cols] into probs (may alias),
 * accumulated in double so probabilities near 0 or 1 keep their digits. */
void softmax_probs(float *probs, const float *logits, int rows, int cols);

/* Multi-head self-attention core (no projections).
 * qkv [B, T, 3D]: per token Q, K, V, each D = H·dh with head h at columns h·dh..h·dh+dh-1.
 * probs [B, H, T, T] receives the attention weights; out [B, T, D] the heads concatenated.
 * key_mask [B, T] (NULL: none): 0 marks padding keys that no query may attend to.
 * causal: query t sees keys 0..t only.
 * bias [H, T, T] (NULL: none): added to the scaled scores Q·Kᵀ/√dh of every batch item before the
 * mask and the softmax (BEiT's relative position bias), row i of head h at bias + (h·T + i)·T. */
void attention_forward(float *out, float *probs, const float *qkv, const uint8_t *key_mask,
                       const float *bias, int causal, int B, int T, int D, int H);
/* Inference attention (no weights kept, no dropout): the same result as attention_forward,
 * computed block by block of query rows in the cache (vit/core/attention_infer.c). Needs
 * D/H a multiple of 16 (attention_infer_supported) and scratch of attention_infer_scratch
 * floats for a team of up to `threads` threads (the region uses no more). */
int attention_infer_supported(int D, int H);
size_t attention_infer_scratch(int B, int T, int D, int threads);
void attention_infer(float *out, const float *qkv, const uint8_t *key_mask, const float *bias,
                     int causal, float *scratch, int threads, int B, int T, int D, int H);
/* The same with the two products in bfloat16 (bf16 inference): Q, K, V and the softmax's
 * exponentials rounded to bfloat16, the products summed in fp32 by AVX512-BF16's dot products
 * and scaled by 1/√dh; the scores, their maximum, the exponentials' sum and the normalisation stay
 * fp32. Only where the
 * CPU has AVX512-BF16 (attention_infer_bf16_available); same scratch. */
int attention_infer_bf16_available(void);
void attention_infer_bf16(float *out, const float *qkv, const uint8_t *key_mask, const float *bias,
                          int causal, float *scratch, int threads, int B, int T, int D, int H);
/* 1 when attention_infer_bf16 runs its bf16 kernels for this shape here (AVX512-BF16, D/H a
 * multiple of 16 and at most 256). */
int attention_infer_bf16_supported(int D, int H);
/* attention_infer_bf16 with bfloat16 at either end: qkv16 [B, T, 3D] instead of qkv when set
 * (only where attention_infer_bf16_supported: otherwise out is NaN); out16 [B, T, D] written
 * instead of out when set and the bf16 kernels run (bf16_bits of the float output, bit for bit),
 * which the return value says (1), else out holds floats (0). */
int attention_infer_bf16_io(uint16_t *out16, float *out, const float *qkv, const uint16_t *qkv16,
                            const uint8_t *key_mask, const float *bias, int causal, float *scratch,
                            int threads, int B, int T, int D, int H);
/* Training variant: HF's attention_probs_dropout on the weights. keep [B, H, T, T] (from
 * dropout_mask) and p drop weights before they multiply V; probs still receives the weights
 * before dropout (the backward needs them); dropped [B, H, T, T] is scratch. */
void attention_forward_dropout(float *out, float *probs, float *dropped, const float *qkv,
                               const uint8_t *key_mask, const float *bias, int causal,
                               const uint8_t *keep, float p, int B, int T, int D, int H);
/* dqkv [B, T, 3D] (overwritten, every element) from dout [B, T, D] and the forward's qkv and
 * probs; dprobs [B, H, T, T] is scratch. keep/p: the attention dropout mask, or NULL/0.
 * probs_grad [B, H, T, T] or NULL: gets the gradient wrt the attention weights (before dropout).
 * dbias [H, T, T] or NULL: the gradient wrt the forward's score bias, summed over the batch,
 * ACCUMULATED (the bias itself is not needed: the softmax backward reads only the weights).
 * Masked (padding, causal) keys have zero weight, so they get zero gradient without the mask. */
void attention_backward(float *dqkv, float *dprobs, float *probs_grad, float *dbias,
                        const float *dout, const float *qkv, const float *probs,
                        const uint8_t *keep, float p, int B, int T, int D, int H);

/* Multi-head attention of Tq query rows against Tk key/value rows, for B items (cross-attention;
 * self-attention of new rows over a KV cache), vit/core/attention_general.c:
 *   out[b,i, h·dh + c] = Σ_j p[b,h,i,j] · v[b,j, h·dh + c],
 *   p[b,h,i,:] = softmax_j(q[b,i,h]·k[b,j,h] / √dh),  dh = D/H (any size; D a multiple of H).
 * Row i of item b of q starts at q + (b·Tq + i)·ldq. Key/value row j of item b starts at
 * k (v) + (b·kv_rows + j)·ldkv: kv_rows = Tk for dense buffers, or a KV cache's capacity (rows
 * Tk.. of each item are not read). k and v may be slices of one fused buffer ([.., 2D] rows with
 * v = k + D, or the qkv rows [.., 3D]). out [B, Tq, D] dense.
 * causal < 0: no mask; causal >= 0: query i sees key j only when j <= causal + i (its position:
 * causal = the number of keys before the first query, e.g. the cache's length before these rows).
 * key_mask [B, kv_rows] or NULL (0 = not a key). A row that sees no key gets weights 0 and output 0
 * (as softmax_forward).
 * probs [B, H, Tq, Tk]: receives the weights for the backward (training); NULL for inference,
 * which then keeps scores only in a tile on each thread's stack (keys in chunks, online softmax).
 * No allocation. */
void attention_general_forward(float *out, float *probs, const float *q, int ldq, const float *k,
                               const float *v, int ldkv, const uint8_t *key_mask, int causal, int B,
                               int Tq, int Tk, int kv_rows, int D, int H);
/* Gradients from dout [B, Tq, D] and the forward's probs (same q, k, v, with kv_rows = Tk):
 * dq (rows lddq apart) and dk, dv (rows lddkv apart; may be slices of one fused buffer like k and
 * v) are OVERWRITTEN in their D columns of every row (other columns untouched). Masked keys have
 * weight 0 in probs and get zero gradient: no mask argument. */
void attention_general_backward(float *dq, int lddq, float *dk, float *dv, int lddkv,
                                const float *dout, const float *probs, const float *q, int ldq,
                                const float *k, const float *v, int ldkv, int B, int Tq, int Tk,
                                int D, int H);

/* Softmax cross-entropy with label smoothing eps, PyTorch's CrossEntropyLoss(label_smoothing=eps)
 * averaged over the batch: target q = (1 - eps)·onehot(label) + eps/L. logits [B, L], labels [B]
 * in 0..L-1; probs [B, L] receives the softmax for the backward. Returns the mean loss (computed
 * in double). */
double crossentropy_forward(float *probs, const float *logits, const int *labels, int B, int L,
                            float eps);
/* dlogits [B, L] = dloss · (probs - q) / B (overwritten). */
void crossentropy_backward(float *dlogits, const float *probs, const int *labels, int B, int L,
                           float eps, float dloss);

/* The same for mixed targets (Mixup, CutMix): row b's target is lambda of labels[b]'s smoothed
 * one-hot and 1 - lambda of partners[b]'s. The cross-entropy is linear in the target, so this is
 * lambda·loss(labels) + (1 - lambda)·loss(partners), and the gradient dloss·(probs - q_mixed)/B. */
double crossentropy_mixed_forward(float *probs, const float *logits, const int *labels,
                                  const int *partners, float lambda, int B, int L, float eps);
void crossentropy_mixed_backward(float *dlogits, const float *probs, const int *labels,
                                 const int *partners, float lambda, int B, int L, float eps,
                                 float dloss);

/* The same over tokens (a decoder's next-token loss, HF's CrossEntropyLoss(ignore_index=-100,
 * label_smoothing=eps)): rows [N, V] of logits, labels [N] where a negative label (-100) marks a
 * row that does not count; the loss is the mean over the counted rows (*counted of them; 0 and a
 * loss of 0 when none). probs [N, V] may alias logits (the softmax replaces them); ignored rows
 * are left as they are. *hits (may be NULL): counted rows whose first largest logit is the label.
 */
double token_crossentropy_forward(float *probs, const float *logits, const int *labels, int N,
                                  int V, float eps, int *counted, int *hits);
/* dlogits [N, V] = dloss · (probs - q) / count on counted rows, 0 on ignored ones (overwritten;
 * may alias probs). count: the divisor (the counted rows of the whole batch when a process
 * holds only part of it). */
void token_crossentropy_backward(float *dlogits, const float *probs, const int *labels, int N,
                                 int V, float eps, float dloss, int count);

#endif
