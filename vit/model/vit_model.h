#ifndef VIT_MODEL_VIT_MODEL_H
#define VIT_MODEL_VIT_MODEL_H

/* The image encoders, forward and backward, one pass for inference and training: ViT and DeiT
 * (DeiT: one more special token and head), DINOv2 (with registers), BEiT, the image towers of
 * CLIP and SigLIP and a VisionEncoderDecoder's encoder, told apart by their options (cfg.opt):
 *
 *   pixels [B, C, H, W] -> patches [B·N, C·P·P] -> patch embedding [B·N, D] -> tokens [B, T, D]
 *   (CLS [, distillation] [, registers], positions) -> encoder (pre-LN) -> what cfg.opt.pool
 *   reads: the final LayerNorm on the rows the classifiers read (CLS [, distillation]) -> logits
 *   [B, L] (the mean of the heads' logits); or features (SigLIP's probe, means, every row)
 *
 *   vit_acts a;
 *   vit_acts_alloc(&a, &m, max_batch, size, training, &err);
 *   vit_model_forward(&m, &a, pixels, B, NULL, logits, &err);          // inference
 *   (on prepared layers, model_prepare: a.gemm = model_gemm_state(&m, &err) first; m is
 *   only read, so threads may share it, each with its own acts and gemm_state)
 *   vit_model_forward(&m, &a, pixels, B, &mode, logits, &err);         // training: keeps acts
 *   vit_model_backward(&m, &grads, &a, dlogits);                       // grads: a model_bind view
 */

#include <stdint.h>

#include "vit/base/error.h"
#include "vit/core/encoder.h"
#include "vit/model/mode.h"
#include "vit/model/params.h"

typedef struct {
    int max_batch, training;
    int height, width;                     /* run resolution */
    int grid_h, grid_w, tokens, patch_dim; /* height/P, width/P, special + N, C·P·P */
    int special, heads;                    /* config_special_tokens, config_classifier_heads */
    const float *pos; /* position embeddings at this size: the model's, or pos_owned; NULL for a
                       * model without absolute positions (BEiT's default) */
    float *pos_owned; /* interpolated (HF interpolate_pos_encoding) when size differs */
    /* BEiT's relative position bias: the tables resized for this size (NULL at the model's
     * size: its own are read), per layer then the shared one, relpos_table_rows(grid) x heads
     * each; the biases [nbias, H, T, T] built from them (nbias: the layers, or 1 for a shared
     * table alone, or 0), by each training forward, once for inference; their gradients when
     * training; run_layers: the model's layers with these biases (the model itself is shared and
     * only read), grad_layers the gradients' layers with the bias gradients. */
    float *rel_resized, *bias, *dbias;
    int nbias, bias_built; /* bias_built: inference acts build them once, at the first forward */
    encoder_layer *run_layers, *grad_layers;
    /* POOL_CLS_MEAN (Dinov2ForImageClassification): every row after the final LayerNorm
     * [B, T, D] and its stats [B, T], the classifier's input [B, 2D], their gradients */
    float *hid_ln, *hid_mean, *hid_rstd, *feat, *dfeat, *dhid_ln;
    float *block;   /* one allocation for the buffers below */
    float *patches; /* [B·N, C·P·P] */
    float *embed;   /* [B·N, D] projected patches; the backward's scratch for their gradient */
    float *x;       /* [B, T, D] the encoder's input and output */
    /* [heads, B, D] the rows the classifiers read (CLS, then the distillation token's for a
     * second head), around the final LayerNorm; stats [heads, B] */
    float *cls_in, *cls_ln, *cls_mean, *cls_rstd;
    float *head_out; /* [B, L] the second head's logits */
    /* training a VisionEncoderDecoder's encoder (POOL_ALL): every row before the final
     * LayerNorm [B, T, D] and its statistics [B, T] */
    float *all_in, *all_mean, *all_rstd;
    float *dx, *dcls_in, *dcls_ln; /* training: gradients */
    uint8_t *emb_keep;             /* training: [B, T, D] dropout mask after the embeddings */
    float *probe_scratch;          /* SigLIP's attention pooling (probe_pool_forward) */
    gemm_state *gemm;              /* running the prepared layers: the caller's state (not owned) */
    encoder_scratch scratch;       /* the encoder's inference buffers */
    encoder_tape tape;             /* training and explanations: every layer's activations */
    /* NULL, or [layers, 1, H, T, T] set by the caller before a backward of explanation buffers:
     * the gradient wrt every layer's attention weights lands there (encoder_run.probs_grad) */
    float *probs_grad;
    forward_mode mode; /* of the last forward (the backward follows it) */
    int last_batch;
} vit_acts;

/* Buffers for batches of up to max_batch images of size x size (0: the model's image_size, or its
 * [height, width]; the position embeddings are interpolated for another size, from a square
 * model's only, as in transformers). training (VIT_ACTS_TRAIN): per-layer
 * activations and gradient buffers too; VIT_ACTS_EXPLAIN the same at any size, where the
 * backward leaves the interpolated position embeddings without a gradient (explanations need the
 * attention's gradients, not the parameters'). A side that is not a multiple of the patch leaves
 * its last side % patch pixels out, as the patch convolution does. Errors: a side smaller than the
 * patch, memory, training a DeiT with teacher (inference only, as in Hugging Face), training
 * at another size. A VisionEncoderDecoder's encoder (POOL_ALL) trains too; other towers of the
 * joint families do not. */
enum { VIT_ACTS_INFER = 0, VIT_ACTS_TRAIN = 1, VIT_ACTS_EXPLAIN = 2 };
int vit_acts_alloc(vit_acts *a, const model *m, int max_batch, int size, int training,
                   vit_error *err);
/* The same at height x width (0 x 0: the model's own size): a square model's positions resized
 * to the rectangle's grid, as transformers' interpolate_pos_encoding does whenever the input is
 * not square (DINOv2 behind a preprocessor that makes 28x112). BEiT's relative position bias: a
 * square grid only. */
int vit_acts_alloc_rect(vit_acts *a, const model *m, int max_batch, int height, int width,
                        int training, vit_error *err);
void vit_acts_free(vit_acts *a);
/* 0 when the model can be explained at that size (vit_acts_alloc with VIT_ACTS_EXPLAIN would not
 * refuse it), else -1 with why; allocates nothing. */
int vit_model_check_explain(const model *m, int size, vit_error *err);
/* The same for training at the model's size (vit train checks it before it reads the data). */
int vit_model_check_train(const model *m, vit_error *err);

/* logits [B, num_labels] of pixels [B, C, size, size] (B <= max_batch). A VisionEncoderDecoder's
 * encoder (POOL_ALL) has no logits (NULL): its output is every row after the final LayerNorm,
 * vit_acts_hidden [B, T, D]. mode NULL: inference;
 * with mode->train (acts allocated for training) the activations stay for vit_model_backward. */
int vit_model_forward(const model *m, vit_acts *a, const float *pixels, int B,
                      const forward_mode *mode, float *logits, vit_error *err);

/* The encoder's final hidden states of the last forward: [B, T, D] before the final LayerNorm
 * (special tokens first, then the patches; after it for POOL_ALL), and the CLS rows after it,
 * [B, D] (the classifier's input; for POOL_MEAN the pooled mean after its LayerNorm, for
 * POOL_CLS_MEAN the CLS row after the final LayerNorm). */
const float *vit_acts_hidden(const vit_acts *a);
const float *vit_acts_cls(const vit_acts *a);
/* Image b's last_hidden_state of the last forward, as Hugging Face's models return it, into out
 * [T, D]: every row after the final LayerNorm, or as the encoder left them for a model without
 * one (BEiT with mean pooling). */
void vit_model_last_hidden(const model *m, const vit_acts *a, int b, float *out);

/* Backward of the last training forward from dlogits [B, num_labels] (POOL_ALL: the gradient wrt
 * the hidden states [B, T, D] the forward left in vit_acts_hidden): parameter gradients
 * ACCUMULATE into grads (m's layout rebased, model_bind). With mode.freeze_encoder only the final
 * LayerNorm and the classifier get gradients (POOL_ALL: none). Absent parameters (no qkv bias) get
 * none. */
void vit_model_backward(const model *m, const model *grads, vit_acts *a, const float *dlogits);

#endif
