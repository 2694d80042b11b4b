#ifndef VIT_MODEL_EXPLAIN_H
#define VIT_MODEL_EXPLAIN_H

/* Where a ViT looked, from the attention weights of one image's forward (and, for the gradient
 * method, its backward), per patch of the grid (the special tokens left out):
 *
 *   EXPLAIN_ROLLOUT  attention rollout (Abnar & Zuidema 2020): per layer the mean over heads plus
 *                    the identity (the residual), rows normalised; multiplied through the layers,
 *                    first layer rightmost; the CLS row. Class-agnostic.
 *   EXPLAIN_LAST     the last layer's CLS attention, one map per head.
 *   EXPLAIN_GRAD     gradient-weighted rollout (Chefer, Gur & Wolf 2021, "Generic
 *                    Attention-model Explainability"): per layer the mean over heads of
 *                    max(0, dy/dA ∘ A), y the explained class's logit; R = I, then R += Ā·R layer
 * by layer; the CLS row. Class-specific.
 *
 * It runs the training forward (plain fp32 products, activations kept, no dropout) on its own
 * buffers, so it gives the same maps whatever backend and precision the model was prepared for.
 *
 *   explainer e;
 *   explainer_init(&e, &m, height, width, &err);
 *   explainer_run(&e, &m, pixels, EXPLAIN_GRAD, label, logits, map, &err);
 *   explainer_free(&e); */

#include "vit/base/error.h"
#include "vit/model/params.h"
#include "vit/model/vit_model.h"

typedef enum { EXPLAIN_ROLLOUT, EXPLAIN_LAST, EXPLAIN_GRAD } explain_method;

typedef struct {
    vit_acts acts;     /* training-mode buffers for one image */
    float *grads;      /* the parameter gradients the backward accumulates (unused), m.num_params */
    model g;           /* their view, model_bind */
    float *probs_grad; /* [layers, heads, T, T] dy/dA of every layer */
    double *rollout, *step, *scratch; /* [T, T] each */
    float *logits;                    /* [num_labels] of the last run */
} explainer;

/* Buffers for images of height x width (0 x 0: the model's image_size). Errors: memory, a model
 * the training forward does not run (DeiT with teacher). */
int explainer_init(explainer *e, const model *m, int height, int width, vit_error *err);
void explainer_free(explainer *e);

/* Maps per image: 1, or the heads for EXPLAIN_LAST; each grid x grid floats. */
int explain_maps(const model *m, explain_method method);

/* pixels [C, size, size] -> logits [num_labels] and map [explain_maps, grid, grid]. *label: the
 * class the gradient method explains (< 0: the most probable, and *label set to it); the other
 * methods do not depend on it. */
int explainer_run(explainer *e, const model *m, const float *pixels, explain_method method,
                  int *label, float *logits, float *map, vit_error *err);

#endif
