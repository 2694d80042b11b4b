#ifndef VIT_H
#define VIT_H

/* vit: Vision Transformer inference from Hugging Face model directories.
 *
 *   vit_params p = vit_default_params();
 *   vit_context *ctx = vit_load("models/fashion-vit", &p, &err);
 *   vit_preprocess_file(ctx, "photo.png", pixels, &err);   // pixels: vit_input_floats(ctx)
 *   vit_forward(ctx, pixels, 1, logits);                   // logits: vit_num_labels(ctx)
 *   vit_free(ctx);
 */

#include <stddef.h>
#include <stdint.h>

#include "vit/base/error.h"

typedef struct vit_context vit_context;

typedef struct {
    int threads;        /* compute threads; 0 = one per core (OMP_NUM_THREADS respected) */
    int max_batch;      /* largest batch vit_forward will be given (buffers are sized once) */
    int image_size;     /* 0 = the model's image_size; else run at this resolution (pos. interpolation) */
    int64_t max_pixels; /* decoder limit; 0 = the image library's default */
} vit_params;

vit_params vit_default_params(void);

vit_context *vit_load(const char *model_dir, const vit_params *params, vit_error *err);
void vit_free(vit_context *ctx);

int vit_num_labels(const vit_context *ctx);
const char *vit_label(const vit_context *ctx, int index);
/* Floats in one preprocessed input (C·H·W) and its shape. */
size_t vit_input_floats(const vit_context *ctx);
void vit_input_shape(const vit_context *ctx, int *channels, int *height, int *width);
int vit_tokens(const vit_context *ctx);
double vit_flops_per_image(const vit_context *ctx);
size_t vit_num_parameters(const vit_context *ctx);

/* Decodes and preprocesses one image file into pixels (vit_input_floats floats). Thread-safe. */
int vit_preprocess_file(const vit_context *ctx, const char *path, float *pixels, vit_error *err);

/* logits [batch, labels] for pixels [batch, C, H, W]; batch <= max_batch. Not thread-safe
 * (one context runs one forward at a time; it owns the buffers). */
int vit_forward(vit_context *ctx, const float *pixels, int batch, float *logits, vit_error *err);

/* In-place softmax of n logits. */
void vit_softmax(float *logits, int n);

#endif
