#ifndef VIT_ENCODER_H
#define VIT_ENCODER_H

/* The shared transformer encoder: [B, T, D] token embeddings in, [B, T, D] out. It knows nothing
 * of images or text; ViT runs it pre-LN, BERT post-LN. A decoder is the same block with a
 * cross-attention branch between the self-attention and the MLP (shape.cross), causal, and with a
 * cache of the self-attention's keys and values so each step computes only its new rows
 * (encoder_kv_cache, encoder_forward_cached).
 *
 * A forward is told what to do (encoder_run: infer, train or explain, the GEMM state, dropout)
 * and where: inference in an encoder_scratch, training and explanations on an encoder_tape that
 * keeps what encoder_backward reads, a decoder's generation over its encoder_kv_cache. */

#include <stddef.h>
#include <stdint.h>

#include "vit/core/gemm.h"
#include "vit/core/ops.h"

typedef struct {
    int layers, dim, heads;
    int mlp_dim; /* the MLP's hidden width (SwiGLU, GeGLU: h, with fc1 [2h, D] and fc2 [D, h]) */
    /* ACT_SWIGLU: fc1's output split in halves u₁, u₂, fc2 on silu(u₁)·u₂; ACT_GEGLU: gelu(u₁)·u₂
     */
    activation_kind act;
    float eps;
    int post_norm; /* 0: x += Attn(LN1(x)); x += MLP(LN2(x))   1: x = LN1(x + Attn(x)); x = LN2(x +
                      MLP(x)) */
    int causal;
    int cross;       /* decoder: a cross-attention branch over other states (an encoder's output) */
    int cross_dim;   /* the width of those states (the branch's keys and values are computed from
                        them) */
    int layer_scale; /* layers may have ls1/ls2 (encoder_layer): set it before encoder_tape_alloc:
                        training keeps the scaled branches' outputs for the scales' gradient */
    /* Rotary positions (NomicBERT; 0: none): the first rotary_dim columns of every query and key
     * head turned by position (rotary_forward) before the scores, with rotary_base and
     * rotary_interleaved pairs. Prepared layers then give qkv in floats (model_prepare). */
    int rotary_dim, rotary_interleaved;
    double rotary_base;
} encoder_shape;

/* One layer's parameters, pointing into the model's single parameter block.
 * qkv_w [3D, D] holds query, key, value weights stacked (one GEMM for all three).
 * The grads argument of encoder_backward has the same layout: each field points where that
 * tensor's gradient accumulates (NULL: not wanted, for ls1, ls2 and attn_bias). */
typedef struct {
    float *ln1_w, *ln1_b;
    float *qkv_w, *qkv_b;
    float *proj_w, *proj_b;
    float *ln2_w, *ln2_b;
    float *fc1_w, *fc1_b; /* [I, D], [I] (SwiGLU, GeGLU: [2I, D], [2I]) */
    float *fc2_w, *fc2_b; /* [D, I], [D] */
    /* Layer scale (shape.layer_scale; NULL: none): x += ls1 ⊙ drop(Attn(..)), x += ls2 ⊙
     * drop(MLP(..)), each [D]. Prepared layers (below) have it folded into proj and fc2. */
    float *ls1, *ls2;
    /* NULL, or [H, T, T] for the forward's T: added to the self-attention scores of every batch
     * item before the softmax (BEiT's relative position bias, built by the model; layers may share
     * one). Not applied by decoder inference over a KV cache. */
    float *attn_bias;
    /* 0, or the queries (self- and cross-attention) times it before the scores (GPT-2's
     * scale_attn_by_inverse_layer_idx: 1/(layer+1)); prepared layers have it folded into qkv and
     * xq. */
    float q_scale;
    /* The same four linear layers prepared for inference (vit/core/gemm.h; NULL: not prepared,
     * as for training): qkv plain, proj and fc2 adding into the residual stream (times ls1, ls2
     * when set: gemm_prepare_scaled), fc1 with the activation (SwiGLU: plain, [2I] wide). */
    gemm_weight *qkv, *proj, *fc1, *fc2;
    /* Cross-attention (shape.cross): its LayerNorm (pre-LN: on the branch's input; post-LN: after
     * its residual add), queries xq [D, D], keys and values stacked xkv [2D, cross_dim], output
     * xproj [D, D]; prepared like the others (xproj adding into the residual stream). */
    float *lnx_w, *lnx_b;
    float *xq_w, *xq_b, *xkv_w, *xkv_b, *xproj_w, *xproj_b;
    gemm_weight *xq, *xkv, *xproj;
} encoder_layer;

/* ---- a run: what one forward (and the backward that follows it) does ---- */

/* INFER: nothing kept, prepared layers (run.gemm) where the layers have them, the fast inference
 * attention; buffers: an encoder_scratch. TRAIN: the plain products, every layer's activations
 * kept on an encoder_tape for encoder_backward, dropout as the run says. EXPLAIN: the same tape
 * without dropout, for the attention weights and (run.probs_grad) their gradients. */
typedef enum { ENCODER_INFER = 0, ENCODER_TRAIN, ENCODER_EXPLAIN } encoder_mode;

/* The caller's, per call; read only. All zero: inference on plain layers. */
typedef struct {
    encoder_mode mode;
    gemm_state *gemm; /* INFER on prepared layers (vit/core/gemm.h): the caller's state */
    /* TRAIN's dropout (HF ViT/BERT in train()): hidden (hidden_dropout_prob) on the attention
     * output projection, the MLP output and a decoder's cross-attention output projection, each
     * before its residual add; attn (attention_probs_dropout_prob) on the attention weights
     * (refused for a decoder: its cross-attention weights would go without the dropout HF
     * applies to them). Masks drawn from *rng and kept on the tape for the backward. */
    float hidden_drop, attn_drop;
    uint64_t *rng;
    /* this batch is examples batch_first.. of a batch of batch_total split among processes
     * (0, 0: the whole batch): the masks are that part of the whole batch's */
    int batch_first, batch_total;
    /* The backward's optional outputs (NULL: not wanted). probs_grad [layers, B, H, T, T]: the
     * gradient wrt every layer's attention weights (EXPLAIN, gradient-weighted explanations).
     * d_cross_states [images, S, cross_dim]: a decoder's gradient wrt the states given to
     * encoder_tape_cross_states, summed over the layers (overwritten). */
    float *probs_grad, *d_cross_states;
} encoder_run;

/* ---- buffers ---- */

/* One set of a layer's activations (pointers into a block). */
typedef struct {
    float *layer_in; /* [B,T,D] the layer's input (the tape's only: the backward reads it) */
    float *ln1_out; /* [B,T,D] pre-LN: LN1(x); post-LN: the MLP's input (LN1's, or LNx's, output) */
    float *ln1_mean, *ln1_rstd; /* [B,T] */
    float *qkv;                 /* [B,T,3D] */
    float *probs;               /* [B,H,T,T] */
    float *ctx;                 /* [B,T,D] heads concatenated, before the output projection */
    float *mid;     /* [B,T,D] pre-LN: x after the attention residual; post-LN: x + Attn(x) */
    float *ln2_out; /* [B,T,D] */
    float *ln2_mean, *ln2_rstd;
    float *fc1_out;  /* [B,T,I] before the activation (SwiGLU: [B,T,2I]) */
    float *act_out;  /* [B,T,I] */
    float *sum2;     /* [B,T,D] post-LN: x + MLP(x) before LN2 */
    float *attn_out; /* [B,T,D] training with shape.layer_scale (else NULL): the attention */
    float *mlp_out;  /* and MLP branches' outputs after dropout, before the layer scale */
} encoder_layer_acts;

/* Inference buffers for at most max_batch x tokens: one set every layer reuses (layer_in,
 * attn_out, mlp_out NULL), the fast attention's scratch, a decoder's cross-attention queries. */
typedef struct {
    int max_batch, tokens;
    float *block; /* one allocation for set, scratch and xq */
    encoder_layer_acts set;
    float *scratch;      /* [B,T,D] projection outputs before the residual add */
    float *xq;           /* [B,T,D] shape.cross: cross-attention queries (else NULL) */
    float *attn_scratch; /* attention_infer's, for attn_threads threads (NULL: D/H unsupported) */
    int attn_threads;
} encoder_scratch;

/* A decoder's training buffers for cross-attention (encoder_tape_alloc_cross), all zero
 * otherwise. */
typedef struct {
    int cross_tokens;           /* states per sequence at most */
    size_t layer_floats;        /* floats per layer set of the fields below */
    float *block;               /* one allocation for them; per layer set (encoder_tape_cross): */
    float *xln_in;              /* [B,T,D] LNx's input: pre-LN x after self-attention, post-LN
                                 * x1 + Cross(x1) */
    float *xln_out;             /* [B,T,D] pre-LN: LNx's output, the branch's input */
    float *xln_mean, *xln_rstd; /* [B,T] */
    float *x_in;                /* [B,T,D] post-LN: the branch's input x1 (LN1's output) */
    float *xq;                  /* [B,T,D] queries */
    float *xprobs;              /* [B,H,T,S] weights */
    float *xctx;                /* [B,T,D] heads concatenated, before the output projection */
    float *shared;              /* one allocation for kv and the backward's scratch: */
    float *kv;                  /* [layers, B, cross_tokens, 2D] the states' keys and values */
    float *d_xq;                /* [B,T,D] */
    float *d_xkv;               /* [B,S,2D] one layer's gradient wrt its keys and values */
    float *d_states;            /* [B,S,cross_dim] one layer's share of the states' gradient */
    uint8_t *keep_cross; /* [layers, B,T,D] dropout on the cross-attention output projection */
    /* what encoder_tape_cross_states was given (the backward reads states) */
    const float *states;
    int images, S, rows_per_image;
} encoder_cross_tape;

/* Training (and explanation) buffers for at most max_batch x tokens: every layer's activations
 * (layer l's set is l·layer_floats after layer 0's), the dropout masks, the backward's scratch
 * (shared by all layers) and, for a decoder, cross. */
typedef struct {
    int max_batch, tokens, layers, dim, heads;
    size_t layer_floats;
    float *block;           /* one allocation for every layer's set and scratch */
    encoder_layer_acts set; /* layer 0's (index with encoder_tape_layer) */
    float *scratch;         /* [B,T,D] projection outputs before the residual add */
    uint8_t *mask_block;    /* one allocation for the masks, each one per layer: */
    uint8_t *keep_attn;     /* [B,T,D] dropout on the attention output projection */
    uint8_t *keep_mlp;      /* [B,T,D] dropout on the MLP output */
    uint8_t *keep_probs;    /* [B,H,T,T] dropout on the attention weights */
    float *grad_block;      /* one allocation for the backward's scratch: */
    float *d_ln;            /* [B,T,D] gradient wrt a branch's input (the LN output in pre-LN) */
    float *d_res;           /* [B,T,D] post-LN: gradient wrt the sum before a LayerNorm */
    float *d_ctx;           /* [B,T,D] */
    float *d_qkv;           /* [B,T,3D] */
    float *d_act;           /* [B,T,I] gradient wrt act_out, then wrt fc1_out */
    float *d_fc1;           /* [B,T,2I] SwiGLU: the gradient wrt fc1_out (else NULL) */
    float *d_probs; /* [B,H,T,T] attention scratch (also the dropped weights in the forward) */
    encoder_cross_tape cross;
} encoder_tape;

/* -1 when out of memory (nothing left allocated). */
int encoder_scratch_alloc(encoder_scratch *sc, const encoder_shape *shape, int max_batch,
                          int tokens);
void encoder_scratch_free(encoder_scratch *sc);
int encoder_tape_alloc(encoder_tape *t, const encoder_shape *shape, int max_batch, int tokens);
void encoder_tape_free(encoder_tape *t);
/* Adds what training a decoder needs (shape.cross): every layer's cross-attention activations for
 * up to cross_tokens states per sequence, the keys and values of up to max_batch images, the
 * backward's scratch. -1 when the shape has no cross-attention or out of memory. */
int encoder_tape_alloc_cross(encoder_tape *t, const encoder_shape *shape, int cross_tokens);
/* Layer l's copy of an activation field of t (t->set.qkv, ...). */
float *encoder_tape_layer(const encoder_tape *t, float *field, int layer);
/* Layer l's copy of a cross-attention field (t->cross.xln_in .. xctx). */
float *encoder_tape_cross(const encoder_tape *t, float *field, int layer);
/* Layer l's copy of a dropout mask field (keep_attn, keep_mlp, keep_probs, cross.keep_cross). */
uint8_t *encoder_tape_mask(const encoder_tape *t, uint8_t *field, int layer);
/* The keys and values of every layer's cross-attention for states [images, S, cross_dim]
 * (images <= max_batch, S <= cross_tokens), each image read by rows_per_image consecutive rows
 * of the following forwards on t (TRAIN or EXPLAIN, and INFER over this tape's states). states
 * must stay as they are until the backward (it reads them for the key/value weights' gradient). */
void encoder_tape_cross_states(encoder_tape *t, const encoder_shape *shape,
                               const encoder_layer *layers, const float *states, int images, int S,
                               int rows_per_image);

/* ---- a decoder's key/value cache (as whisper.cpp's whisper_kv_cache), owned by the decoder ----
 * Self-attention keys and values of the positions run so far per row, and the cross-attention's
 * keys and values of the states the rows read. */
typedef struct {
    int layers, dim, max_rows, cache_len; /* cache_len: positions a row can hold */
    float *block;                         /* one allocation for kv, spare and cross_kv */
    float *kv;       /* [layers, max_rows, cache_len, 2D] key then value per position */
    float *spare;    /* the same size: the reordered cache is built here, then swapped in */
    int past;        /* positions cached: the next forward's rows come after them */
    float *cross_kv; /* [layers, max_images, cross_tokens, 2D] (encoder_kv_cache_states) */
    int max_images, cross_tokens; /* what cross_kv holds at most */
    int images, S;                /* what encoder_kv_cache_states last gave: images x S */
    int rows_per_image; /* rows r·k .. r·k + k-1 of a forward read image r's states (k beams) */
} encoder_kv_cache;

/* cache_len positions for each of max_rows rows, cross keys and values for up to max_images sets
 * of cross_tokens states (0: none, a decoder without cross-attention). -1 when out of memory. */
int encoder_kv_cache_alloc(encoder_kv_cache *c, const encoder_shape *shape, int max_rows,
                           int cache_len, int max_images, int cross_tokens);
void encoder_kv_cache_free(encoder_kv_cache *c);
/* Empties the self-attention cache (past = 0); the cross keys and values stay. */
void encoder_kv_cache_reset(encoder_kv_cache *c);
/* Rows continue other rows: row r of the next forward extends what row parent[r] (of the rows
 * run so far) holds. rows <= max_rows. */
void encoder_kv_cache_reorder(encoder_kv_cache *c, const int *parent, int rows);
/* The keys and values of every layer's cross-attention for states [images, S, cross_dim] (S <=
 * cross_tokens, images <= max_images), each image read by rows_per_image consecutive rows of
 * the following forwards, through prepared layers with gemm where the layers have them (NULL:
 * the plain products); resets the cache. */
void encoder_kv_cache_states(encoder_kv_cache *c, const encoder_shape *shape,
                             const encoder_layer *layers, gemm_state *gemm, const float *states,
                             int images, int S, int rows_per_image);

/* ---- forward and backward ---- */

/* 0 when run can be served: INFER by sc (and, for a decoder, cross states on t), TRAIN and
 * EXPLAIN by t (allocated for cross-attention when the shape has it); probabilities in [0, 1),
 * an rng for dropout, no dropout in EXPLAIN, no attention dropout with cross-attention. */
int encoder_run_check(const encoder_shape *shape, const encoder_run *run, const encoder_scratch *sc,
                      const encoder_tape *t);
/* x [B, T, D] in, transformed in place. key_mask [B, T] or NULL (0 = padding). INFER runs in sc
 * (t: NULL, or a decoder's tape whose cross states it reads), TRAIN and EXPLAIN on t (sc: may be
 * NULL). -1 (nothing run) when encoder_run_check refuses. */
int encoder_forward(const encoder_shape *shape, const encoder_layer *layers, const encoder_run *run,
                    encoder_scratch *sc, encoder_tape *t, float *x, const uint8_t *key_mask, int B,
                    int T);
/* A decoder's inference step: the T rows of each sequence come after the cache's past ones
 * (causal attention over all of them), are cached in turn, and past grows by T; cross-attention
 * reads the cache's states. run.mode is INFER. */
void encoder_forward_cached(const encoder_shape *shape, const encoder_layer *layers,
                            const encoder_run *run, encoder_scratch *sc, encoder_kv_cache *cache,
                            float *x, int B, int T);
/* Backward of the last encoder_forward on t (TRAIN or EXPLAIN, the same run, B and T).
 * dx [B, T, D]: in, the gradient wrt the encoder output; out, wrt its input (in place).
 * Parameter gradients ACCUMULATE into grads (same layout as layers, e.g. a model_bind view),
 * the attention bias's too: grads[l].attn_bias [H, T, T] (if set) receives layer l's, summed over
 * the batch (layers sharing one bias may share one gradient buffer: their shares add up).
 * The key mask needs no argument: masked keys have zero attention weight in t's probs.
 * A decoder's cross-attention: its key/value weights' gradients come from the states given to
 * encoder_tape_cross_states; run.d_cross_states (if set) receives the states' gradient. */
void encoder_backward(const encoder_shape *shape, const encoder_layer *layers,
                      const encoder_layer *grads, const encoder_run *run, encoder_tape *t,
                      float *dx, int B, int T);

#endif
