/* The image backbones' config.json (docs/SPEC.md §11, §12): DINOv2 (with and without registers)
 * and BEiT (and data2vec-vision, its architecture under another name), each a base model or its
 * ForImageClassification class. What they read becomes named options of the one encoder and of
 * small parts around it (config_backbone_options): no family test below vit/model. */
#include <cjson/cJSON.h>
#include <math.h>
#include <string.h>

#include "vit/base/json.h"
#include "vit/model/config.h"

typedef struct {
    const char *type, *prefix, *base, *head;
    model_family family;
} backbone;

static const backbone backbones[] = {
    {"dinov2", "dinov2.", "Dinov2Model", "Dinov2ForImageClassification", FAMILY_DINOV2},
    {"dinov2_with_registers", "dinov2_with_registers.", "Dinov2WithRegistersModel",
     "Dinov2WithRegistersForImageClassification", FAMILY_DINOV2_REG},
    {"beit", "beit.", "BeitModel", "BeitForImageClassification", FAMILY_BEIT},
    {"data2vec-vision", "data2vec_vision.", "Data2VecVisionModel",
     "Data2VecVisionForImageClassification", FAMILY_DATA2VEC},
};

static const backbone *backbone_of(const model_config *cfg) {
    for (size_t i = 0; i < sizeof backbones / sizeof backbones[0]; i++)
        if (backbones[i].family == cfg->family) return &backbones[i];
    return NULL;
}

static int is_dinov2(const model_config *cfg) {
    return cfg->family == FAMILY_DINOV2 || cfg->family == FAMILY_DINOV2_REG;
}

int config_is_backbone(const model_config *cfg) {
    return backbone_of(cfg) != NULL;
}

const char *config_backbone_prefix(const model_config *cfg) {
    return backbone_of(cfg)->prefix;
}

const char *config_backbone_class(const model_config *cfg) {
    const backbone *b = backbone_of(cfg);
    return cfg->bare ? b->base : b->head;
}

const char *config_backbone_model_type(const model_config *cfg) {
    return backbone_of(cfg)->type;
}

int config_backbone_type(const char *model_type, model_config *cfg) {
    for (size_t i = 0; i < sizeof backbones / sizeof backbones[0]; i++)
        if (strcmp(model_type, backbones[i].type) == 0) {
            cfg->kind = MODEL_VIT;
            cfg->family = backbones[i].family;
            return 1;
        }
    return 0;
}

/* Dinov2Config / Dinov2WithRegistersConfig and BeitConfig / Data2VecVisionConfig defaults beyond
 * ViTConfig's (which they otherwise share). */
static void set_defaults(model_config *cfg) {
    if (is_dinov2(cfg)) {
        cfg->layer_norm_eps = 1e-6f;
        /* Dinov2Config's 14, Dinov2WithRegistersConfig's 16 (the Hub's files all say 14) */
        cfg->patch_size = cfg->family == FAMILY_DINOV2_REG ? 16 : 14;
        cfg->mlp_ratio = 4.0;
        cfg->layer_scale_init = 1.0;
        cfg->num_registers = cfg->family == FAMILY_DINOV2_REG ? 4 : 0;
    } else {
        cfg->layer_scale_init = 0.1;
        cfg->mean_pooling = 1;
    }
}

/* The class, as AutoModel / AutoModelForImageClassification would be asked for it: the first entry
 * of `architectures` naming the base model or its classifier; none at all means the base model
 * (the Hub's DINOv2 files); only other classes (BeitForMaskedImageModeling, Dinov2Backbone, ...)
 * is an error. */
static int get_class(const cJSON *root, model_config *cfg, const char *src, vit_error *err) {
    const backbone *b = backbone_of(cfg);
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(root, "architectures"), *item;
    cfg->bare = 1;
    if (!list || cJSON_IsNull(list) || (cJSON_IsArray(list) && cJSON_GetArraySize(list) == 0))
        return 0;
    if (!cJSON_IsArray(list))
        return vit_fail(err, "%s: field 'architectures' must be a list of strings", src);
    cJSON_ArrayForEach(item, list) {
        if (!cJSON_IsString(item))
            return vit_fail(err, "%s: field 'architectures' must be a list of strings", src);
        if (strcmp(item->valuestring, b->base) == 0 || strcmp(item->valuestring, b->head) == 0) {
            cfg->bare = strcmp(item->valuestring, b->base) == 0;
            return 0;
        }
    }
    return vit_fail(err, "%s: architectures names %s; supported for model_type %s: %s, %s", src,
                    cJSON_GetArrayItem(list, 0)->valuestring, b->type, b->base, b->head);
}

static int dinov2_fields(const cJSON *root, model_config *cfg, const char *src, vit_error *err) {
    if (json_get_number(root, "mlp_ratio", 1e-6, 1e6, &cfg->mlp_ratio, src, err) ||
        json_get_number(root, "layerscale_value", -1e30, 1e30, &cfg->layer_scale_init, src, err) ||
        json_get_bool(root, "use_swiglu_ffn", &cfg->use_swiglu, src, err))
        return -1;
    if (cfg->family == FAMILY_DINOV2_REG &&
        json_get_int(root, "num_register_tokens", 0, 1024, &cfg->num_registers, src, err))
        return -1;
    cfg->layer_scale = 1; /* Dinov2LayerScale is always there; layerscale_value only starts it */
    return 0;
}

static int beit_fields(const cJSON *root, model_config *cfg, const char *src, vit_error *err) {
    if (json_get_bool(root, "use_absolute_position_embeddings", &cfg->use_abs_pos, src, err) ||
        json_get_bool(root, "use_relative_position_bias", &cfg->use_rel_bias, src, err) ||
        json_get_bool(root, "use_shared_relative_position_bias", &cfg->use_shared_rel_bias, src,
                      err) ||
        json_get_number(root, "layer_scale_init_value", -1e30, 1e30, &cfg->layer_scale_init, src,
                        err) ||
        json_get_bool(root, "use_mean_pooling", &cfg->mean_pooling, src, err))
        return -1;
    cfg->layer_scale = cfg->layer_scale_init > 0; /* BeitLayer: lambdas only when > 0 */
    return 0;
}

/* Dinov2MLP's width int(D · mlp_ratio), or Dinov2SwiGLUFFN's: two thirds of it rounded up to a
 * multiple of 8. */
static int dinov2_width(model_config *cfg, const char *src, vit_error *err) {
    const double width = floor(cfg->hidden_size * cfg->mlp_ratio);
    if (width < 1 || width > (1 << 20))
        return vit_fail(err, "%s: field 'mlp_ratio' (%g) gives a feed-forward width of %.0f", src,
                        cfg->mlp_ratio, width);
    cfg->intermediate_size = (int)width;
    if (cfg->use_swiglu) cfg->intermediate_size = ((int)(width * 2 / 3) + 7) / 8 * 8;
    return 0;
}

int config_backbone_parse(const cJSON *root, model_config *cfg, const char *src, vit_error *err) {
    set_defaults(cfg);
    if (get_class(root, cfg, src, err) != 0 ||
        (is_dinov2(cfg) ? dinov2_fields : beit_fields)(root, cfg, src, err) != 0 ||
        config_parse_common(root, cfg, src, err) != 0)
        return -1;
    if (!is_dinov2(cfg)) cfg->qkv_bias = 1; /* BEiT: query and value biases, never a key bias */
    if (is_dinov2(cfg) && dinov2_width(cfg, src, err) != 0) return -1;
    /* a base model's output is its pooled features (pooler_output) */
    return cfg->bare ? config_dim_labels(cfg, cfg->hidden_size, src, err) : 0;
}

void config_backbone_options(const model_config *c, tower_options *o) {
    const int dinov2 = is_dinov2(c);
    o->special = 1;
    o->registers = c->num_registers;
    o->patch_bias = 1;
    o->abs_pos = dinov2 || c->use_abs_pos;
    o->pos_antialias = c->family == FAMILY_DINOV2_REG;
    o->layer_scale = c->layer_scale;
    o->swiglu = dinov2 && c->use_swiglu;
    o->key_bias = dinov2;
    o->rel_bias = !dinov2 && c->use_rel_bias;
    o->shared_rel_bias = !dinov2 && c->use_shared_rel_bias;
    o->processor_size = dinov2;
    o->pool = dinov2            ? (c->bare ? POOL_CLS : POOL_CLS_MEAN)
              : c->mean_pooling ? POOL_MEAN
                                : POOL_CLS;
    o->head = c->bare ? HEAD_NONE : HEAD_CLASSIFIER;
}

void config_backbone_write(cJSON *root, const model_config *c) {
    if (is_dinov2(c)) {
        cJSON_AddNumberToObject(root, "mlp_ratio", c->mlp_ratio);
        cJSON_AddBoolToObject(root, "use_swiglu_ffn", c->use_swiglu);
        cJSON_AddNumberToObject(root, "layerscale_value", c->layer_scale_init);
        if (c->family == FAMILY_DINOV2_REG)
            cJSON_AddNumberToObject(root, "num_register_tokens", c->num_registers);
        return;
    }
    cJSON_AddBoolToObject(root, "use_absolute_position_embeddings", c->use_abs_pos);
    cJSON_AddBoolToObject(root, "use_relative_position_bias", c->use_rel_bias);
    cJSON_AddBoolToObject(root, "use_shared_relative_position_bias", c->use_shared_rel_bias);
    cJSON_AddNumberToObject(root, "layer_scale_init_value",
                            c->layer_scale ? c->layer_scale_init : 0);
    cJSON_AddBoolToObject(root, "use_mean_pooling", c->mean_pooling);
}
