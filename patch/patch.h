#ifndef VIT_PATCH_H
#define VIT_PATCH_H

/* Stage 2: a preprocessed image becomes tokens. P×P patches, flattened in [C][P][P] order (the
 * conv weight's layout) to be embedded with one matrix product per batch; CLS in front; learned
 * position embeddings added. */

/* patches [B·N, C·P·P] from pixels [B, C, H, W], N = (H/P)·(W/P) in row-major patch order. */
void patch_extract(float *patches, const float *pixels, int B, int C, int H, int W, int P);

/* The patch embedding itself is a linear layer the model runs (embed = patches·Wᵀ + b, the conv
 * weight [D, C·P·P] read as a matrix); these place its rows among the tokens. Before the patches
 * come S special tokens: ViT's CLS (S = 1), or DeiT's CLS and distillation token (S = 2). */

/* x [B, T, D] with T = S + N: row s < S = special[s] + pos[s], row S + i = embed[i] + pos[S + i];
 * special [S, D], embed [B·N, D] the projected patches. */
void patch_tokens_forward(float *x, const float *embed, const float *special, int S,
                          const float *pos, int B, int N, int D);

/* Backward of patch_tokens_forward from dx [B, T, D]: dembed [B·N, D] gets the patch rows'
 * gradients (overwritten); dspecial [S, D] and dpos [T, D] ACCUMULATE (summed over the batch);
 * dpos NULL: no position gradient. */
void patch_tokens_backward(float *dembed, float *dspecial, int S, float *dpos, const float *dx,
                           int B, int N, int D);

/* HF interpolate_pos_encoding (ViT's, and DeiT's for two special tokens): the [n·n, D] grid after
 * the S special rows of pos [(S + n·n), D] is resized to [m·m, D] with PyTorch's bicubic
 * (A = −0.75, align_corners=False, edge clamp, no antialias); the special rows are kept; out
 * [(S + m·m), D]. */
void pos_embed_interpolate(float *out, const float *pos, int S, int n, int m, int D);

#endif
