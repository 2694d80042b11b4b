#ifndef VIT_CONFIG_H
#define VIT_CONFIG_H

#include "vit/base/error.h"
#include "vit/core/ops.h"

/* config.json of a Hugging Face model directory (SPEC §1). */

typedef enum { MODEL_VIT, MODEL_BERT } model_kind;

typedef struct {
    model_kind kind;
    /* shared encoder */
    int hidden_size, num_layers, num_heads, intermediate_size;
    activation_kind act;
    float layer_norm_eps;
    /* ViT */
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

#endif
