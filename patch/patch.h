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

/* The general form: S special tokens with positions (CLS, DeiT's distillation token), then R
 * tokens without (DINOv2's registers, [R, D]; NULL when R = 0), then the N patches, T = S + R + N;
 * pos [(S + N), D] (no rows for the registers), or NULL for a model without absolute positions
 * (BEiT's default). patch_tokens_forward is this with R = 0. */
void patch_tokens_place(float *x, const float *embed, const float *special, int S,
                        const float *registers, int R, const float *pos, int B, int N, int D);
/* Its backward: dembed overwritten; dspecial [S, D], dregisters [R, D] and dpos [(S + N), D]
 * ACCUMULATE (dpos NULL: no position gradient). */
void patch_tokens_place_backward(float *dembed, float *dspecial, int S, float *dregisters, int R,
                                 float *dpos, const float *dx, int B, int N, int D);

/* PyTorch's F.interpolate(mode=..., align_corners=False) of an n × n grid to m × m, as
 * transformers resizes position tables (docs/SPEC.md §7, §11, §12):
 *   GRID_BICUBIC     A = −0.75, source x = (i + 0.5)·n/m − 0.5, taps floor(x) − 1 .. + 2 clamped
 *                    to the edge, no antialias
 *   GRID_BICUBIC_AA  antialias=True: a = −0.5, support 2·max(n/m, 1), centre (i + 0.5)·n/m, the
 *                    weights of the taps inside the grid divided by their sum
 *   GRID_BILINEAR    x = max((i + 0.5)·n/m − 0.5, 0), x₀ = trunc(x), x₁ = min(x₀ + 1, n − 1)
 * Separable (rows, then columns), in double, rounded once. The functions that resize return -1
 * when out of memory (for the weights), else 0. */
typedef enum { GRID_BICUBIC, GRID_BICUBIC_AA, GRID_BILINEAR } grid_filter;
/* grid [n·n, C] (channels last, row-major cells) -> out [m·m, C]. */
int grid_resize(float *out, const float *grid, int n, int m, int C, grid_filter filter);
/* The same from an nh × nw grid to mh × mw (F.interpolate's size=(mh, mw)). */
int grid_resize_rect(float *out, const float *grid, int nh, int nw, int mh, int mw, int C,
                     grid_filter filter);

/* HF interpolate_pos_encoding (ViT's, and DeiT's for two special tokens): the [n·n, D] grid after
 * the S special rows of pos [(S + n·n), D] is resized to [m·m, D] with PyTorch's bicubic
 * (GRID_BICUBIC); the special rows are kept; out [(S + m·m), D]. pos_embed_resize takes the
 * filter (DINOv2 with registers: GRID_BICUBIC_AA). */
int pos_embed_interpolate(float *out, const float *pos, int S, int n, int m, int D);
int pos_embed_resize(float *out, const float *pos, int S, int n, int m, int D, grid_filter filter);
/* To an mh × mw grid (a non-square input: transformers' interpolate_pos_encoding at height ≠
 * width, size=(mh, mw)); out [(S + mh·mw), D]. */
int pos_embed_resize_rect(float *out, const float *pos, int S, int n, int mh, int mw, int D,
                          grid_filter filter);

/* BEiT's relative position bias (docs/SPEC.md §12). A table [(2n − 1)² + 3, H] made for an n × n
 * window holds, per head, one bias for each offset between two patches ((2n − 1)² of them, row
 * (dy + n − 1)·(2n − 1) + dx + n − 1) and three for CLS: a CLS query, a CLS key, CLS to itself. */
int relpos_table_rows(int n);
/* table for window n -> out for window m: the offsets' grid resized with GRID_BILINEAR (a copy when
 * m = n), the three CLS rows kept. */
int relpos_table_resize(float *out, const float *table, int n, int m, int H);
/* bias [H, T, T], T = m² + 1 (CLS, then the patches row by row), from a table for window m: bias
 * OVERWRITTEN, or (accumulate) added to (a shared table plus per-layer ones). */
void relpos_bias(float *bias, const float *table, int m, int H, int accumulate);
/* Its backward: dtable [(2m − 1)² + 3, H] ACCUMULATES dbias [H, T, T] at the entries each read. */
void relpos_bias_backward(float *dtable, const float *dbias, int m, int H);

#endif
