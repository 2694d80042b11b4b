#ifndef VIT_ENCODER_H
#define VIT_ENCODER_H

/* The shared transformer encoder: [B, T, D] token embeddings in, [B, T, D] out. It knows nothing
 * of images or text; ViT runs it pre-LN, BERT post-LN. A decoder is the same block with a
 * cross-attention branch between the self-attention and the MLP (shape.cross), causal, and with a
 * cache of the self-attention's keys and values so each step computes only its new rows
 * (encoder_acts_alloc_cache). */

#include <stddef.h>
#include <stdint.h>

#include "vit/core/gemm.h"
#include "vit/core/ops.h"

typedef struct {
    int layers, dim, heads;
    int mlp_dim;         /* the MLP's hidden width (SwiGLU: h, with fc1 [2h, D] and fc2 [D, h]) */
    activation_kind act; /* ACT_SWIGLU: fc1's output split in halves u₁, u₂, fc2 on silu(u₁)·u₂ */
    float eps;
    int post_norm; /* 0: x += Attn(LN1(x)); x += MLP(LN2(x))   1: x = LN1(x + Attn(x)); x = LN2(x +
                      MLP(x)) */
    int causal;
    int cross;       /* decoder: a cross-attention branch over other states (an encoder's output) */
    int cross_dim;   /* the width of those states (the branch's keys and values are computed from
                        them) */
    int layer_scale; /* layers may have ls1/ls2 (encoder_layer): set it before encoder_acts_alloc,
                        for training keeps the scaled branches' outputs for the scales' gradient */
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
    float *fc1_w, *fc1_b; /* [I, D], [I] (SwiGLU: [2I, D], [2I]) */
    float *fc2_w, *fc2_b; /* [D, I], [D] */
    /* Layer scale (shape.layer_scale; NULL: none): x += ls1 ⊙ drop(Attn(..)), x += ls2 ⊙
     * drop(MLP(..)), each [D]. Prepared layers (below) have it folded into proj and fc2. */
    float *ls1, *ls2;
    /* NULL, or [H, T, T] for the forward's T: added to the self-attention scores of every batch
     * item before the softmax (BEiT's relative position bias, built by the model; layers may share
     * one). Not applied by decoder inference over a KV cache. */
    float *attn_bias;
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

/* Activations, sized for at most max_batch x tokens. Allocated with `per_layer` (for training),
 * every layer has its own set of buffers, which a forward in `keep` mode fills for the backward
 * pass; otherwise (inference, or keep off) all layers share the first set. */
typedef struct {
    int per_layer, max_batch, tokens, layers, dim, heads;
    int keep;            /* the next forward keeps every layer's activations (encoder_set_mode) */
    size_t layer_floats; /* floats per layer set */
    float *block;        /* one allocation for everything below */
    /* per layer set (index with encoder_acts_layer): */
    float *layer_in; /* [B,T,D] pre-LN: input of the layer; post-LN: unused */
    float *ln1_out; /* [B,T,D] pre-LN: LN1(x); post-LN: the MLP's input (LN1's, or LNx's, output) */
    float *ln1_mean, *ln1_rstd; /* [B,T] */
    float *qkv;                 /* [B,T,3D] */
    float *probs;               /* [B,H,T,T] */
    float *ctx;                 /* [B,T,D] heads concatenated, before the output projection */
    float *mid;     /* [B,T,D] pre-LN: x after the attention residual; post-LN: x + Attn(x) */
    float *ln2_out; /* [B,T,D] */
    float *ln2_mean, *ln2_rstd;
    float *fc1_out;      /* [B,T,I] before the activation (SwiGLU: [B,T,2I]) */
    float *act_out;      /* [B,T,I] */
    float *sum2;         /* [B,T,D] post-LN: x + MLP(x) before LN2 */
    float *scratch;      /* [B,T,D] projection outputs before the residual add */
    float *attn_out;     /* [B,T,D] training with shape.layer_scale (else NULL): the attention */
    float *mlp_out;      /* and MLP branches' outputs after dropout, before the layer scale */
    gemm_state *gemm;    /* running the prepared layers: the caller's state (not owned), set
                          * before an inference forward on them */
    float *attn_scratch; /* inference attention (attention_infer), for attn_threads threads */
    int attn_threads;

    /* Training mode (per_layer) only, all zero otherwise. */
    float hidden_drop, attn_drop; /* dropout probabilities of the next forward (0: eval mode) */
    uint64_t *rng;                /* generator the dropout masks are drawn from */
    /* this batch is examples batch_first.. of a batch of batch_total split among processes
     * (0, 0: the whole batch): the masks are that part of the whole batch's */
    int batch_first, batch_total;
    int run_tokens;      /* T of the forward under way */
    uint8_t *mask_block; /* one allocation for the masks, each one per layer: */
    uint8_t *keep_attn;  /* [B,T,D] dropout on the attention output projection */
    uint8_t *keep_mlp;   /* [B,T,D] dropout on the MLP output */
    uint8_t *keep_probs; /* [B,H,T,T] dropout on the attention weights */
    float *grad_block;   /* one allocation for the backward's scratch, shared by all layers: */
    float *d_ln;         /* [B,T,D] gradient wrt a branch's input (the LN output in pre-LN) */
    float *d_res;        /* [B,T,D] post-LN: gradient wrt the sum before a LayerNorm */
    float *d_ctx;        /* [B,T,D] */
    float *d_qkv;        /* [B,T,3D] */
    float *d_act;        /* [B,T,I] gradient wrt act_out, then wrt fc1_out */
    float *d_fc1;        /* [B,T,2I] SwiGLU: the gradient wrt fc1_out (else NULL) */
    float *d_probs;      /* [B,H,T,T] attention scratch (also the dropped weights in the forward) */
    /* NULL, or [layers, B, H, T, T] set by the caller: the backward leaves there the gradient wrt
     * every layer's attention weights (gradient-weighted explanations). */
    float *probs_grad;

    /* Decoders at inference (encoder_acts_alloc_cache), all zero otherwise. */
    float *cache_block; /* one allocation for the buffers below */
    float *kv_cache;    /* [layers, max_batch, cache_len, 2D] each row's self-attention keys and
                         * values (key then value per position) of the positions run so far */
    float *kv_spare;    /* the same size: the reordered cache is built here, then swapped in */
    float *cross_kv;    /* [layers, images, cross_tokens, 2D] keys and values of the states
                         * cross-attention reads (encoder_cross_states) */
    float *xq_buf;      /* [B, T, D] cross-attention queries */
    int cache_len;      /* positions a row can hold */
    int past;           /* positions cached: the next forward's rows come after them */
    int max_images, cross_tokens; /* what the cross buffers hold at most */
    int images, cross_run;        /* what encoder_cross_states last gave: images x cross_run */
    int rows_per_image; /* rows r·k .. r·k + k-1 of a forward read image r's states (k beams) */

    /* Training a decoder (encoder_acts_alloc_cross), all zero otherwise; cross_kv above is then
     * [layers, max_batch, cross_tokens, 2D] and max_images = max_batch. */
    int cross;           /* the shape has a cross-attention branch (set by encoder_acts_alloc) */
    size_t cross_floats; /* floats per layer set of the fields below */
    float *cross_block;  /* one allocation for them; per layer set (encoder_acts_cross): */
    float *xln_in;       /* [B,T,D] LNx's input: pre-LN x after self-attention, post-LN
                          * x1 + Cross(x1) */
    float *xln_out;      /* [B,T,D] pre-LN: LNx's output, the branch's input */
    float *xln_mean, *xln_rstd; /* [B,T] */
    float *x_in;                /* [B,T,D] post-LN: the branch's input x1 (LN1's output) */
    float *xq;                  /* [B,T,D] queries */
    float *xprobs;              /* [B,H,T,S] weights (per image: its rows_per_image·T rows) */
    float *xctx;                /* [B,T,D] heads concatenated, before the output projection */
    float *cross_shared;        /* one allocation for cross_kv and the backward's scratch: */
    float *d_xq;                /* [B,T,D] */
    float *d_xkv;               /* [B,S,2D] one layer's gradient wrt its keys and values */
    float *d_states;            /* [B,S,cross_dim] one layer's share of the states' gradient */
    uint8_t *cross_masks;       /* one allocation for: */
    uint8_t *keep_cross; /* [layers, B,T,D] dropout on the cross-attention output projection */
    const float *cross_states; /* what encoder_cross_states was given: read by the backward */
    /* NULL, or [images, S, cross_dim] set by the caller: the backward leaves there (overwritten)
     * the gradient wrt the states given to encoder_cross_states, summed over the layers. */
    float *d_cross_states;
} encoder_acts;

/* per_layer also allocates the dropout masks and the backward's scratch. */
int encoder_acts_alloc(encoder_acts *acts, const encoder_shape *shape, int max_batch, int tokens,
                       int per_layer);
void encoder_acts_free(encoder_acts *acts);
/* Adds a decoder's inference buffers to acts (allocated for inference): a self-attention cache of
 * cache_len positions per row, and cross-attention keys and values for up to max_images sets of
 * cross_tokens states. -1 when out of memory. */
int encoder_acts_alloc_cache(encoder_acts *acts, const encoder_shape *shape, int cache_len,
                             int max_images, int cross_tokens);
/* Adds the buffers training a decoder needs (acts allocated per_layer, shape.cross, no cache):
 * every layer's cross-attention activations for up to cross_tokens states per sequence, the keys
 * and values of up to max_batch images, the backward's scratch. -1 when acts cannot take them or
 * out of memory. The cross-attention weights get no dropout: encoder_set_mode refuses attn > 0. */
int encoder_acts_alloc_cross(encoder_acts *acts, const encoder_shape *shape, int cross_tokens);
/* The keys and values of every layer's cross-attention for states [images, S, cross_dim] (S <=
 * cross_tokens, images <= max_images), each image read by rows_per_image consecutive rows of
 * the following forwards; empties the self-attention cache (past = 0). When training, states
 * must stay as they are until the backward (it reads them for the key/value weights' gradient). */
void encoder_cross_states(const encoder_shape *shape, const encoder_layer *layers,
                          encoder_acts *acts, const float *states, int images, int S,
                          int rows_per_image);
/* Rows continue other rows: row r of the next forward extends what row parent[r] (of the rows
 * run so far) holds. rows <= max_batch. */
void encoder_cache_reorder(encoder_acts *acts, const int *parent, int rows);
/* Pointer to layer l's copy of a field of acts (the shared copy unless keep is on). */
float *encoder_acts_layer(const encoder_acts *acts, float *field, int layer);
/* Layer l's copy of a cross-attention training field (xln_in .. xctx). */
float *encoder_acts_cross(const encoder_acts *acts, float *field, int layer);
/* Layer l's copy of a dropout mask field (keep_attn, keep_mlp, keep_probs, keep_cross). */
uint8_t *encoder_acts_mask(const encoder_acts *acts, uint8_t *field, int layer);

/* The mode of the following forwards. keep: every layer's activations stay for encoder_backward
 * (acts allocated per_layer). Training-mode dropout (HF ViT/BERT in train()): `hidden`
 * (hidden_dropout_prob) on the attention output projection and on the MLP output, each before
 * its residual add; `attn` (attention_probs_dropout_prob) on the attention weights; masks drawn
 * from *rng and kept for the backward (keep required). 0, 0, 0 is eval mode (the default).
 * A decoder (shape.cross) also drops `hidden` on the cross-attention output projection; keep
 * needs encoder_acts_alloc_cross, and attn > 0 is refused (the cross-attention weights would go
 * without the dropout HF applies to them).
 * Returns -1 (and changes nothing) when acts cannot serve the mode. */
int encoder_set_mode(encoder_acts *acts, int keep, float hidden, float attn, uint64_t *rng);
/* The batch's place in a batch split among processes, for the dropout masks (0, 0: whole). */
void encoder_set_batch_part(encoder_acts *acts, int first, int total);

/* x [B, T, D] in, transformed in place. key_mask [B, T] or NULL (0 = padding). With a cache
 * (encoder_acts_alloc_cache) the T rows of each sequence come after the acts->past cached ones
 * (causal attention over all of them), are cached in turn, and past grows by T. */
void encoder_forward(const encoder_shape *shape, const encoder_layer *layers, encoder_acts *acts,
                     float *x, const uint8_t *key_mask, int B, int T);
/* Backward of the last encoder_forward on acts (keep on, same dropout settings, same B, T).
 * dx [B, T, D]: in, the gradient wrt the encoder output; out, wrt its input (in place).
 * Parameter gradients ACCUMULATE into grads (same layout as layers, e.g. a model_bind view),
 * the attention bias's too: grads[l].attn_bias [H, T, T] (if set) receives layer l's, summed over
 * the batch (layers sharing one bias may share one gradient buffer: their shares add up).
 * The key mask needs no argument: masked keys have zero attention weight in acts->probs.
 * A decoder's cross-attention: its key/value weights' gradients come from the states given to
 * encoder_cross_states, and acts->d_cross_states (if set) receives the states' gradient. */
void encoder_backward(const encoder_shape *shape, const encoder_layer *layers,
                      const encoder_layer *grads, encoder_acts *acts, float *dx, int B, int T);

#endif
