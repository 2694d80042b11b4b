#ifndef VIT_PATCH_H
#define VIT_PATCH_H

/* Stage 2: a preprocessed image becomes tokens. P×P patches, flattened in [C][P][P] order (the
 * conv weight's layout), embedded with one matrix product per batch; CLS in front; learned
 * position embeddings added. */

/* patches [B·N, C·P·P] from pixels [B, C, H, W], N = (H/P)·(W/P) in row-major patch order. */
void patch_extract(float *patches, const float *pixels, int B, int C, int H, int W, int P);

/* x [B, T, D] with T = N + 1: row 0 = cls + pos[0], row 1 + i = patches[i]·Wᵀ + b + pos[1 + i].
 * scratch holds [B·N, D]. weight [D, C·P·P] is the conv weight read as a matrix. */
void patch_embed_forward(float *x, float *scratch, const float *patches, const float *weight,
                         const float *bias, const float *cls, const float *pos, int B, int N, int K,
                         int D);

/* Backward of patch_embed_forward from dx [B, T, D] (T = N + 1), every gradient ACCUMULATED:
 * dweight [D, K] and dbias [D] from the patch rows, dcls [D] from the CLS rows, dpos [T, D] from
 * all rows (summed over the batch). scratch [B·N, D] (the forward's, free by now) gathers the patch
 * rows' gradients for one matrix product. Pixels are inputs: they get no gradient. */
void patch_embed_backward(float *dweight, float *dbias, float *dcls, float *dpos, float *scratch,
                          const float *dx, const float *patches, int B, int N, int K, int D);

/* HF interpolate_pos_encoding: the [n·n, D] grid after the CLS row of pos [(n·n + 1), D] is
 * resized to [m·m, D] with PyTorch's bicubic (A = −0.75, align_corners=False, edge clamp,
 * no antialias); out [(m·m + 1), D]. */
void pos_embed_interpolate(float *out, const float *pos, int n, int m, int D);

#endif
