#ifndef VIT_CONFIG_H
#define VIT_CONFIG_H

#include "vit/base/error.h"
#include "vit/core/ops.h"

/* config.json of a Hugging Face model directory (docs/SPEC.md §1). */

/* MODEL_VIT: the image classifiers (ViT and DeiT, one forward); MODEL_BERT: text. */
/* The most patches per side of an image (128: 16,384 tokens, a 2048-pixel image at patch 16):
 * attention grows with the square of the tokens, and n * n must not overflow. */
#define CONFIG_MAX_GRID 128

typedef enum { MODEL_VIT, MODEL_BERT } model_kind;

/* Which image classifier (model_type and architectures in config.json). They share the encoder
 * and differ in the special tokens before the patches and the classifier heads on them:
 *   ARCH_VIT           ViTForImageClassification: [CLS]; a classifier on CLS
 *   ARCH_DEIT          DeiTForImageClassification: [CLS, distillation]; a classifier on CLS
 *   ARCH_DEIT_TEACHER  DeiTForImageClassificationWithTeacher: [CLS, distillation]; one classifier
 *                      on each, logits = their mean */
typedef enum { ARCH_VIT, ARCH_DEIT, ARCH_DEIT_TEACHER } image_arch;

typedef struct {
    model_kind kind;
    /* shared encoder */
    int hidden_size, num_layers, num_heads, intermediate_size;
    activation_kind act;
    float layer_norm_eps;
    /* ViT, DeiT */
    image_arch arch;
    int image_size, patch_size, num_channels, qkv_bias;
    /* BERT */
    int vocab_size, max_position_embeddings, type_vocab_size;
    int pad_token_id; /* the embedding row HF keeps at zero when initialising */
    /* classifier */
    int num_labels;
    char **labels; /* num_labels strings */
} model_config;

int model_config_load(const char *model_dir, model_config *cfg, vit_error *err);
/* Parses config.json text; `source` names it in errors. */
int model_config_parse(const char *json, const char *source, model_config *cfg, vit_error *err);
void model_config_free(model_config *cfg);
const char *activation_name(activation_kind act);

/* Tokens before the patches: 1 (CLS), or 2 for a DeiT (CLS, distillation). */
int config_special_tokens(const model_config *cfg);
/* Classifier heads, each on one of the first tokens after the final LayerNorm; logits are their
 * mean: 2 for DeiTForImageClassificationWithTeacher, else 1. */
int config_classifier_heads(const model_config *cfg);
/* The Hugging Face class ("ViTForImageClassification", ...) and model_type ("vit", "deit",
 * "bert") of cfg. */
const char *config_architecture(const model_config *cfg);
const char *config_model_type(const model_config *cfg);

#endif
