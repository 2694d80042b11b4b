#include "vit/model/config.h"

#include "vit/base/file.h"
#include "vit/base/json.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CONFIG_BYTES (16 << 20)

static int get_activation(const cJSON *root, activation_kind *out, const char *src,
                          vit_error *err) {
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(root, "hidden_act");
    if (!item) return 0;
    if (!cJSON_IsString(item)) return vit_fail(err, "%s: field 'hidden_act' must be a string", src);
    const char *s = item->valuestring;
    if (strcmp(s, "gelu") == 0)
        *out = ACT_GELU;
    else if (strcmp(s, "gelu_new") == 0 || strcmp(s, "gelu_pytorch_tanh") == 0)
        *out = ACT_GELU_TANH;
    else if (strcmp(s, "relu") == 0)
        *out = ACT_RELU;
    else
        return vit_fail(err, "%s: field 'hidden_act' is '%s', expected gelu, gelu_new or relu", src,
                        s);
    return 0;
}

const char *activation_name(activation_kind act) {
    return act == ACT_GELU ? "gelu" : act == ACT_GELU_TANH ? "gelu_new" : "relu";
}

int config_special_tokens(const model_config *cfg) {
    return cfg->kind == MODEL_VIT && cfg->arch != ARCH_VIT ? 2 : 1;
}

int config_classifier_heads(const model_config *cfg) {
    return cfg->kind == MODEL_VIT && cfg->arch == ARCH_DEIT_TEACHER ? 2 : 1;
}

const char *config_architecture(const model_config *cfg) {
    if (cfg->kind == MODEL_BERT) return "BertForSequenceClassification";
    return cfg->arch == ARCH_DEIT           ? "DeiTForImageClassification"
           : cfg->arch == ARCH_DEIT_TEACHER ? "DeiTForImageClassificationWithTeacher"
                                            : "ViTForImageClassification";
}

const char *config_model_type(const model_config *cfg) {
    return cfg->kind == MODEL_BERT ? "bert" : cfg->arch == ARCH_VIT ? "vit" : "deit";
}

static int get_labels(const cJSON *root, model_config *cfg, const char *src, vit_error *err) {
    const cJSON *map = cJSON_GetObjectItemCaseSensitive(root, "id2label");
    int n = 2; /* HF PretrainedConfig default */
    if (cJSON_IsObject(map) && cJSON_GetArraySize(map) > 0)
        n = cJSON_GetArraySize(map);
    else if (map && !cJSON_IsNull(map) && !cJSON_IsObject(map))
        return vit_fail(err, "%s: field 'id2label' must be an object", src);
    if (!cJSON_IsObject(map) || cJSON_GetArraySize(map) == 0) {
        if (json_get_int(root, "num_labels", 1, 1 << 20, &n, src, err) != 0) return -1;
    }
    cfg->labels = calloc((size_t)n, sizeof *cfg->labels);
    if (!cfg->labels) return vit_fail(err, "%s: out of memory", src);
    cfg->num_labels = n;
    const cJSON *item;
    if (cJSON_IsObject(map)) {
        cJSON_ArrayForEach(item, map) {
            char *end;
            long id = strtol(item->string, &end, 10);
            if (*item->string == 0 || *end != 0 || id < 0 || id >= n)
                return vit_fail(err, "%s: id2label key '%s' is not an index below %d", src,
                                item->string, n);
            if (!cJSON_IsString(item))
                return vit_fail(err, "%s: id2label[%ld] must be a string", src, id);
            if (cfg->labels[id])
                return vit_fail(err, "%s: id2label key %ld appears twice", src, id);
            cfg->labels[id] = strdup(item->valuestring);
            if (!cfg->labels[id]) return vit_fail(err, "%s: out of memory", src);
        }
    }
    for (int i = 0; i < n; i++)
        if (!cfg->labels[i]) {
            char name[32];
            snprintf(name, sizeof name, "LABEL_%d", i);
            if (!(cfg->labels[i] = strdup(name))) return vit_fail(err, "%s: out of memory", src);
        }
    return 0;
}

static void set_defaults(model_config *cfg, model_kind kind) {
    memset(cfg, 0, sizeof *cfg);
    cfg->kind = kind;
    cfg->hidden_size = 768;
    cfg->num_layers = 12;
    cfg->num_heads = 12;
    cfg->intermediate_size = 3072;
    cfg->act = ACT_GELU;
    cfg->layer_norm_eps = 1e-12f;
    cfg->image_size = 224;
    cfg->patch_size = 16;
    cfg->num_channels = 3;
    cfg->qkv_bias = 1;
    cfg->vocab_size = 30522;
    cfg->max_position_embeddings = 512;
    cfg->type_vocab_size = 2;
}

static int parse_fields(const cJSON *root, model_config *cfg, const char *src, vit_error *err) {
    const int big = 1 << 20;
    if (json_get_int(root, "hidden_size", 1, big, &cfg->hidden_size, src, err) ||
        json_get_int(root, "num_hidden_layers", 1, 1000, &cfg->num_layers, src, err) ||
        json_get_int(root, "num_attention_heads", 1, 4096, &cfg->num_heads, src, err) ||
        json_get_int(root, "intermediate_size", 1, big, &cfg->intermediate_size, src, err) ||
        get_activation(root, &cfg->act, src, err) ||
        json_get_int(root, "image_size", 1, 65536, &cfg->image_size, src, err) ||
        json_get_int(root, "patch_size", 1, 65536, &cfg->patch_size, src, err) ||
        json_get_int(root, "num_channels", 1, 4, &cfg->num_channels, src, err) ||
        json_get_bool(root, "qkv_bias", &cfg->qkv_bias, src, err) ||
        json_get_int(root, "vocab_size", 1, 1 << 24, &cfg->vocab_size, src, err) ||
        json_get_int(root, "max_position_embeddings", 2, big, &cfg->max_position_embeddings, src,
                     err) ||
        json_get_int(root, "type_vocab_size", 1, 1 << 16, &cfg->type_vocab_size, src, err) ||
        json_get_int(root, "pad_token_id", -1, 1 << 24, &cfg->pad_token_id, src, err))
        return -1;
    const cJSON *eps = cJSON_GetObjectItemCaseSensitive(root, "layer_norm_eps");
    if (eps) {
        if (!cJSON_IsNumber(eps) || !(eps->valuedouble > 0) || eps->valuedouble > 1)
            return vit_fail(err, "%s: field 'layer_norm_eps' must be a number in (0, 1]", src);
        cfg->layer_norm_eps = (float)eps->valuedouble;
    }
    if (cfg->hidden_size % cfg->num_heads != 0)
        return vit_fail(err,
                        "%s: field 'hidden_size' (%d) is not divisible by num_attention_heads (%d)",
                        src, cfg->hidden_size, cfg->num_heads);
    if (cfg->kind == MODEL_VIT && cfg->patch_size > cfg->image_size)
        return vit_fail(err, "%s: field 'patch_size' (%d) is larger than image_size (%d)", src,
                        cfg->patch_size, cfg->image_size);
    if (cfg->kind == MODEL_VIT && cfg->image_size / cfg->patch_size > CONFIG_MAX_GRID)
        return vit_fail(err,
                        "%s: image_size / patch_size is %d patches per side, more than the limit "
                        "of %d",
                        src, cfg->image_size / cfg->patch_size, CONFIG_MAX_GRID);
    if (cfg->kind == MODEL_VIT && cfg->num_channels != 1 && cfg->num_channels != 3)
        return vit_fail(err, "%s: field 'num_channels' is %d; only 1 and 3 are supported", src,
                        cfg->num_channels);
    return get_labels(root, cfg, src, err);
}

/* A DeiT's class, chosen as transformers' AutoModelForImageClassification chooses among the two
 * it maps "deit" to: the first entry of `architectures` that names one of them, else the first,
 * DeiTForImageClassification. */
static int get_deit_arch(const cJSON *root, image_arch *arch, const char *src, vit_error *err) {
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(root, "architectures"), *item;
    *arch = ARCH_DEIT;
    if (!list || cJSON_IsNull(list)) return 0;
    if (!cJSON_IsArray(list))
        return vit_fail(err, "%s: field 'architectures' must be a list of strings", src);
    cJSON_ArrayForEach(item, list) {
        if (!cJSON_IsString(item))
            return vit_fail(err, "%s: field 'architectures' must be a list of strings", src);
        if (strcmp(item->valuestring, "DeiTForImageClassification") == 0) return 0;
        if (strcmp(item->valuestring, "DeiTForImageClassificationWithTeacher") == 0) {
            *arch = ARCH_DEIT_TEACHER;
            return 0;
        }
    }
    return 0;
}

/* model_type: "vit" (also when absent), "deit" or "bert". */
static int get_model_type(const cJSON *root, model_kind *kind, image_arch *arch, const char *src,
                          vit_error *err) {
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(root, "model_type");
    *kind = MODEL_VIT;
    *arch = ARCH_VIT;
    if (!type || strcmp(cJSON_IsString(type) ? type->valuestring : "", "vit") == 0) return 0;
    if (!cJSON_IsString(type)) return vit_fail(err, "%s: field 'model_type' must be a string", src);
    if (strcmp(type->valuestring, "bert") == 0) {
        *kind = MODEL_BERT;
        return 0;
    }
    if (strcmp(type->valuestring, "deit") == 0) return get_deit_arch(root, arch, src, err);
    return vit_fail(err, "%s: field 'model_type' is '%s'; supported: vit, deit, bert", src,
                    type->valuestring);
}

int model_config_parse(const char *json, const char *source, model_config *cfg, vit_error *err) {
    memset(cfg, 0, sizeof *cfg);
    cJSON *root = cJSON_Parse(json);
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return vit_fail(err, "%s: not a valid JSON object", source);
    }
    model_kind kind;
    image_arch arch;
    if (get_model_type(root, &kind, &arch, source, err) != 0) {
        cJSON_Delete(root);
        return -1;
    }
    set_defaults(cfg, kind); /* DeiTConfig's defaults are ViTConfig's */
    cfg->arch = arch;
    int rc = parse_fields(root, cfg, source, err);
    cJSON_Delete(root);
    if (rc != 0) model_config_free(cfg);
    return rc;
}

int model_config_load(const char *model_dir, model_config *cfg, vit_error *err) {
    char path[4096];
    snprintf(path, sizeof path, "%s/config.json", model_dir);
    memset(cfg, 0, sizeof *cfg);
    char *json = vit_read_file(path, MAX_CONFIG_BYTES, NULL, err);
    if (!json) return -1;
    int rc = model_config_parse(json, path, cfg, err);
    free(json);
    return rc;
}

void model_config_free(model_config *cfg) {
    if (cfg->labels)
        for (int i = 0; i < cfg->num_labels; i++) free(cfg->labels[i]);
    free(cfg->labels);
    cfg->labels = NULL;
    cfg->num_labels = 0;
}
