#include "vit/model/config.h"

#include "vit/base/file.h"
#include "vit/base/json.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_CONFIG_BYTES (16 << 20)

static int get_activation_key(const cJSON *root, const char *key, activation_kind *out,
                              const char *src, vit_error *err) {
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!item) return 0;
    if (!cJSON_IsString(item)) return vit_fail(err, "%s: field '%s' must be a string", src, key);
    const char *s = item->valuestring;
    if (strcmp(s, "gelu") == 0)
        *out = ACT_GELU;
    else if (strcmp(s, "gelu_new") == 0 || strcmp(s, "gelu_pytorch_tanh") == 0)
        *out = ACT_GELU_TANH;
    else if (strcmp(s, "relu") == 0)
        *out = ACT_RELU;
    else if (strcmp(s, "quick_gelu") == 0)
        *out = ACT_QUICK_GELU;
    else
        return vit_fail(err,
                        "%s: field '%s' is '%s', expected gelu, gelu_new, "
                        "gelu_pytorch_tanh, quick_gelu or relu",
                        src, key, s);
    return 0;
}

static int get_activation(const cJSON *root, activation_kind *out, const char *src,
                          vit_error *err) {
    return get_activation_key(root, "hidden_act", out, src, err);
}

const char *activation_name(activation_kind act) {
    return act == ACT_GELU         ? "gelu"
           : act == ACT_GELU_TANH  ? "gelu_new"
           : act == ACT_QUICK_GELU ? "quick_gelu"
           : act == ACT_SWIGLU     ? "swiglu"
           : act == ACT_GEGLU      ? "geglu"
                                   : "relu";
}

int config_special_tokens(const model_config *cfg) {
    return cfg->opt.special + cfg->opt.registers;
}

int config_class_token(const model_config *cfg) {
    return cfg->family == FAMILY_TIMM ? cfg->timm_class_token : cfg->opt.special > 0;
}

/* TrOCR: post-LN, learned positions offset by 2 or sinusoidal ones, optional embedding scale and
 * LayerNorm; GPT-2: pre-LN, learned positions, a final LayerNorm, Conv1D weights. */
static void decoder_options(const model_config *c, tower_options *o) {
    const int trocr = c->dec_arch == DECODER_TROCR;
    o->post_norm = trocr;
    o->causal = o->cross = 1;
    o->enc_proj = c->encoder_hidden != c->hidden_size && c->cross_dim == c->hidden_size;
    o->sinusoidal = trocr && !c->learned_positions;
    o->pos_offset = trocr && c->learned_positions ? 2 : 0;
    o->scale_embedding = trocr && c->scale_embedding;
    o->embed_norm = trocr && c->layernorm_embedding;
    o->final_norm = !trocr;
    o->tied_head = c->tie_word_embeddings;
    o->conv1d = !trocr;
    o->pool = POOL_NEXT;
    o->head = HEAD_LINEAR;
}

void config_apply_family(model_config *c) {
    tower_options o = {0};
    if (c->kind == MODEL_DECODER) {
        decoder_options(c, &o);
    } else if (config_is_backbone(c)) {
        config_backbone_options(c, &o);
    } else if (c->family == FAMILY_TIMM) {
        config_timm_options(c, &o);
    } else if (c->family == FAMILY_TEXT) {
        config_text_options(c, &o);
    } else if (c->family == FAMILY_VED) { /* ViTModel / DeiTModel: every row out */
        o.special = c->arch == ARCH_VIT ? 1 : 2;
        o.patch_bias = o.abs_pos = o.key_bias = 1;
        o.pool = POOL_ALL;
        o.head = HEAD_NONE;
    } else if (config_is_joint(c)) {
        config_joint_options(c, &o);
    } else if (c->kind == MODEL_VIT) { /* ViT, DeiT */
        o.special = c->arch != ARCH_VIT ? 2 : 1;
        o.patch_bias = o.abs_pos = o.key_bias = 1;
        o.pool = POOL_CLS;
        o.head = c->bare ? HEAD_NONE : HEAD_CLASSIFIER;
    } else { /* BERT */
        o.embed_norm = o.token_types = o.post_norm = 1;
        o.pool = c->token_classifier ? POOL_TOKENS : POOL_BERT;
        o.pooler = !c->token_classifier && !c->no_pooler;
        o.head = c->bare ? HEAD_NONE /* BertModel: the pooler's output */ : HEAD_CLASSIFIER;
    }
    c->opt = o;
}

int config_classifier_heads(const model_config *cfg) {
    return cfg->kind == MODEL_VIT && cfg->arch == ARCH_DEIT_TEACHER ? 2 : 1;
}

const char *config_architecture(const model_config *cfg) {
    if (cfg->kind == MODEL_DECODER)
        return cfg->dec_arch == DECODER_TROCR ? "TrOCRForCausalLM" : "GPT2LMHeadModel";
    if (cfg->family == FAMILY_VED)
        return cfg->arch == ARCH_VIT ? "ViTModel (encoder)" : "DeiTModel (encoder)";
    if (config_is_backbone(cfg)) return config_backbone_class(cfg);
    if (cfg->family == FAMILY_TIMM) return cfg->timm_arch; /* timm's registered name */
    if (config_is_joint(cfg)) return config_joint_architecture(cfg);
    if (cfg->family == FAMILY_TEXT) return config_text_architecture(cfg);
    if (cfg->kind == MODEL_TEXT)
        return cfg->bare               ? "BertModel"
               : cfg->token_classifier ? "BertForTokenClassification"
                                       : "BertForSequenceClassification";
    if (cfg->bare) return "ViTModel";
    return cfg->arch == ARCH_DEIT           ? "DeiTForImageClassification"
           : cfg->arch == ARCH_DEIT_TEACHER ? "DeiTForImageClassificationWithTeacher"
                                            : "ViTForImageClassification";
}

const char *config_model_type(const model_config *cfg) {
    if (cfg->kind == MODEL_DECODER) return cfg->dec_arch == DECODER_TROCR ? "trocr" : "gpt2";
    if (cfg->family == FAMILY_VED) return cfg->arch == ARCH_VIT ? "vit" : "deit";
    if (config_is_backbone(cfg)) return config_backbone_model_type(cfg);
    if (cfg->family == FAMILY_TIMM) return "timm"; /* no model_type: timm's own config.json */
    if (cfg->family == FAMILY_TEXT) return config_text_model_type(cfg);
    if (config_is_joint(cfg)) return config_joint_model_type(cfg);
    return cfg->kind == MODEL_TEXT ? "bert" : cfg->arch == ARCH_VIT ? "vit" : "deit";
}

const char *config_family_name(const model_config *cfg) {
    static const char *const names[] = {
        [FAMILY_VED] = "VisionEncoderDecoder",         [FAMILY_DINOV2] = "DINOv2",
        [FAMILY_DINOV2_REG] = "DINOv2 with registers", [FAMILY_BEIT] = "BEiT",
        [FAMILY_DATA2VEC] = "data2vec-vision",         [FAMILY_TIMM] = "timm ViT"};
    if (cfg->kind == MODEL_DECODER) return cfg->dec_arch == DECODER_TROCR ? "TrOCR" : "GPT-2";
    if (cfg->family == FAMILY_TEXT) return config_text_name(cfg);
    if (config_is_joint(cfg)) return config_joint_name(cfg);
    if (cfg->family != FAMILY_PLAIN) return names[cfg->family];
    return cfg->kind == MODEL_TEXT ? "BERT" : cfg->arch == ARCH_VIT ? "ViT" : "DeiT";
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
    cfg->image_size = cfg->image_width = 224;
    cfg->patch_size = 16;
    cfg->num_channels = 3;
    cfg->qkv_bias = 1;
    cfg->vocab_size = 30522;
    cfg->max_position_embeddings = 512;
    cfg->type_vocab_size = 2;
}

/* image_size: an int (square) or [height, width], as HF's ViTPatchEmbeddings reads it. */
static int get_image_size(const cJSON *root, model_config *cfg, const char *src, vit_error *err) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "image_size");
    if (cJSON_IsArray(v)) {
        const cJSON *h = cJSON_GetArrayItem(v, 0), *w = cJSON_GetArrayItem(v, 1);
        const int ok = cJSON_GetArraySize(v) == 2 && cJSON_IsNumber(h) && cJSON_IsNumber(w) &&
                       h->valuedouble >= 1 && h->valuedouble <= 65536 && w->valuedouble >= 1 &&
                       w->valuedouble <= 65536 && h->valuedouble == (int)h->valuedouble &&
                       w->valuedouble == (int)w->valuedouble;
        if (!ok)
            return vit_fail(err,
                            "%s: field 'image_size' must be an integer or [height, width] in "
                            "1..65536",
                            src);
        cfg->image_size = (int)h->valuedouble, cfg->image_width = (int)w->valuedouble;
        return 0;
    }
    if (json_get_int(root, "image_size", 1, 65536, &cfg->image_size, src, err) != 0) return -1;
    cfg->image_width = cfg->image_size;
    return 0;
}

int config_parse_common(const cJSON *root, model_config *cfg, const char *src, vit_error *err) {
    const int big = 1 << 20;
    if (json_get_int(root, "hidden_size", 1, big, &cfg->hidden_size, src, err) ||
        json_get_int(root, "num_hidden_layers", 1, 1000, &cfg->num_layers, src, err) ||
        json_get_int(root, "num_attention_heads", 1, 4096, &cfg->num_heads, src, err) ||
        json_get_int(root, "intermediate_size", 1, big, &cfg->intermediate_size, src, err) ||
        get_activation(root, &cfg->act, src, err) || get_image_size(root, cfg, src, err) ||
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
    const int side = cfg->image_size < cfg->image_width ? cfg->image_size : cfg->image_width;
    const int longest = cfg->image_size > cfg->image_width ? cfg->image_size : cfg->image_width;
    if (cfg->kind == MODEL_VIT && cfg->patch_size > side)
        return vit_fail(err, "%s: field 'patch_size' (%d) is larger than image_size (%d)", src,
                        cfg->patch_size, side);
    if (cfg->kind == MODEL_VIT && longest / cfg->patch_size > CONFIG_MAX_GRID)
        return vit_fail(err,
                        "%s: image_size / patch_size is %d patches per side, more than the limit "
                        "of %d",
                        src, longest / cfg->patch_size, CONFIG_MAX_GRID);
    if (cfg->kind == MODEL_VIT && cfg->num_channels != 1 && cfg->num_channels != 3)
        return vit_fail(err, "%s: field 'num_channels' is %d; only 1 and 3 are supported", src,
                        cfg->num_channels);
    const int classifier =
        (cfg->family == FAMILY_PLAIN || config_is_backbone(cfg) || cfg->family == FAMILY_TEXT) &&
        !cfg->bare;
    return classifier ? get_labels(root, cfg, src, err) : 0;
}

/* The classes vit runs, per model_type (the first of each: the class of a folder that names
 * none). bare: the base model (features, no classifier). The joint families and the backbones
 * have their own lists (config_joint.c, config_backbone.c). */
static const struct {
    const char *type, *name;
    image_arch arch;
    int bare;
} classes[] = {{"vit", "ViTForImageClassification", ARCH_VIT, 0},
               {"vit", "ViTModel", ARCH_VIT, 1},
               {"deit", "DeiTForImageClassification", ARCH_DEIT, 0},
               {"deit", "DeiTForImageClassificationWithTeacher", ARCH_DEIT_TEACHER, 0},
               {"bert", "BertForSequenceClassification", ARCH_VIT, 0},
               {"bert", "BertModel", ARCH_VIT, 1},
               {"bert", "BertForTokenClassification", ARCH_VIT, 0},
               {"vision-encoder-decoder", "VisionEncoderDecoderModel", ARCH_VIT, 0}};
enum { NUM_CLASSES = sizeof classes / sizeof classes[0] };

int config_pick_class(const cJSON *root, const char *type, const char *const *names, int n,
                      const char *src, vit_error *err) {
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(root, "architectures"), *item;
    int at = 0;
    if (list && !cJSON_IsNull(list) && !cJSON_IsArray(list))
        return vit_fail(err, "%s: field 'architectures' must be a list of strings", src);
    if (cJSON_IsArray(list) && cJSON_GetArraySize(list) > 0) {
        at = -1;
        cJSON_ArrayForEach(item, list) {
            if (!cJSON_IsString(item))
                return vit_fail(err, "%s: field 'architectures' must be a list of strings", src);
            for (int i = 0; at < 0 && i < n; i++)
                if (strcmp(names[i], item->valuestring) == 0) at = i;
        }
    }
    if (at >= 0) return at;
    char runs[256];
    size_t used = 0;
    runs[0] = 0;
    for (int i = 0; i < n && used < sizeof runs; i++)
        used +=
            (size_t)snprintf(runs + used, sizeof runs - used, "%s%s", used ? ", " : "", names[i]);
    return vit_fail(err,
                    "%s: architectures names %s, a class vit does not run; for model_type "
                    "%s it runs %s",
                    src, cJSON_GetArrayItem(list, 0)->valuestring, type, runs);
}

/* The class the folder names: the first entry of `architectures` that vit runs for its
 * model_type (none at all: the type's first class); only classes vit does not run (a
 * BertForTokenClassification, a ViTForMaskedImageModeling, ...) is an error naming the first,
 * not a model run as something else. */
static int get_class(const cJSON *root, const char *type, model_config *cfg, const char *src,
                     vit_error *err) {
    const char *names[NUM_CLASSES];
    int index[NUM_CLASSES], n = 0;
    for (int i = 0; i < NUM_CLASSES; i++)
        if (strcmp(classes[i].type, type) == 0) names[n] = classes[i].name, index[n++] = i;
    const int at = config_pick_class(root, type, names, n, src, err);
    if (at < 0) return -1;
    cfg->arch = classes[index[at]].arch;
    cfg->bare = classes[index[at]].bare;
    cfg->token_classifier = strcmp(classes[index[at]].name, "BertForTokenClassification") == 0;
    return 0;
}

/* model_type: "vit" (also when absent), "deit", "bert", or a joint model's (config_joint.c);
 * the class from architectures when `with_class` (a VisionEncoderDecoder's encoder names
 * ViTModel or DeiTModel, and is run as its encoder whatever it names). */
static int get_model_type(const cJSON *root, config_tower tower, int with_class, model_config *cfg,
                          const char *src, vit_error *err) {
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(root, "model_type");
    cfg->kind = MODEL_VIT;
    cfg->arch = ARCH_VIT;
    if (type && !cJSON_IsString(type))
        return vit_fail(err, "%s: field 'model_type' must be a string", src);
    const char *name = type ? type->valuestring : "vit";
    if (config_text_type_of(root, name, cfg)) return 0; /* JinaBERT v2: model_type bert */
    if (strcmp(name, "bert") == 0) cfg->kind = MODEL_TEXT;
    if (strcmp(name, "vit") == 0 || strcmp(name, "bert") == 0 || strcmp(name, "deit") == 0)
        return with_class ? get_class(root, name, cfg, src, err) : 0;
    if (config_joint_type(name, tower, cfg))
        return with_class ? config_joint_pick_class(root, name, cfg, src, err) : 0;
    if (config_backbone_type(type->valuestring, cfg)) return 0;
    if (config_text_type(type->valuestring, cfg)) return 0;
    return vit_fail(err,
                    "%s: field 'model_type' is '%s'; supported: vit, deit, bert, clip, siglip "
                    "(and their _vision_model and _text_model folders), dinov2, "
                    "dinov2_with_registers, beit, data2vec-vision, roberta, xlm-roberta, "
                    "distilbert, mpnet, nomic_bert (and bert with JinaBert architectures)",
                    src, type->valuestring);
}

int config_dim_labels(model_config *cfg, int n, const char *src, vit_error *err) {
    cfg->num_labels = n;
    cfg->labels = calloc((size_t)n, sizeof *cfg->labels);
    if (!cfg->labels) return vit_fail(err, "%s: out of memory", src);
    for (int i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof name, "DIM_%d", i);
        if (!(cfg->labels[i] = strdup(name))) return vit_fail(err, "%s: out of memory", src);
    }
    return 0;
}

/* ---- VisionEncoderDecoderModel: an encoder and a decoder sub-config ---- */

static int parse_ved_encoder(const cJSON *enc, model_config *cfg, const char *src, vit_error *err) {
    model_config type = {0};
    if (get_model_type(enc, TOWER_IMAGE, 0, &type, src, err) != 0) return -1;
    if (type.kind != MODEL_VIT || type.family != FAMILY_PLAIN)
        return vit_fail(err, "%s: the encoder's model_type must be vit or deit", src);
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(enc, "model_type");
    set_defaults(cfg, MODEL_VIT);
    cfg->arch = t && strcmp(t->valuestring, "deit") == 0 ? ARCH_DEIT : ARCH_VIT;
    cfg->family = FAMILY_VED;
    return config_parse_common(enc, cfg, src, err);
}

/* TrOCRConfig's defaults (trocr-base's decoder). */
static void trocr_defaults(model_config *c) {
    c->vocab_size = 50265;
    c->hidden_size = 1024;
    c->num_layers = 12;
    c->num_heads = 16;
    c->intermediate_size = 4096;
    c->max_position_embeddings = 512;
    c->pad_token_id = 1;
    c->eos_token_id = 2;
    c->learned_positions = c->layernorm_embedding = 1;
}

/* GPT2Config's defaults (gpt2's); intermediate_size 0 until n_inner or 4 x n_embd sets it. */
static void gpt2_defaults(model_config *c) {
    c->vocab_size = 50257;
    c->hidden_size = 768;
    c->num_layers = 12;
    c->num_heads = 12;
    c->intermediate_size = 0;
    c->max_position_embeddings = 1024;
    c->act = ACT_GELU_TANH;
    c->pad_token_id = -1;
    c->eos_token_id = 50256;
}

static int parse_trocr(const cJSON *d, model_config *c, const char *src, vit_error *err) {
    const int big = 1 << 20;
    return json_get_int(d, "d_model", 1, big, &c->hidden_size, src, err) ||
           json_get_int(d, "decoder_layers", 1, 1000, &c->num_layers, src, err) ||
           json_get_int(d, "decoder_attention_heads", 1, 4096, &c->num_heads, src, err) ||
           json_get_int(d, "decoder_ffn_dim", 1, big, &c->intermediate_size, src, err) ||
           get_activation_key(d, "activation_function", &c->act, src, err) ||
           json_get_int(d, "max_position_embeddings", 2, big, &c->max_position_embeddings, src,
                        err) ||
           json_get_bool(d, "use_learned_position_embeddings", &c->learned_positions, src, err) ||
           json_get_bool(d, "scale_embedding", &c->scale_embedding, src, err) ||
           json_get_bool(d, "layernorm_embedding", &c->layernorm_embedding, src, err);
}

/* GPT-2's attention settings: scale_attn_by_inverse_layer_idx divides layer l's scores by l + 1
 * as well (self- and cross-attention); reorder_and_upcast_attn computes the scores in fp32 with
 * the scale applied to the queries' product, which fp32 inference already is. Without the
 * 1/sqrt(head size) scale, or without cross-attention (GPT2Block has it only when
 * add_cross_attention is true, and a VisionEncoderDecoderModel's forward then fails): refused,
 * not ignored. */
static int gpt2_attention(const cJSON *d, model_config *c, const char *src, vit_error *err) {
    int scale = 1, cross = 0, upcast = 0; /* add_cross_attention: PretrainedConfig's false */
    if (json_get_bool(d, "scale_attn_weights", &scale, src, err) ||
        json_get_bool(d, "scale_attn_by_inverse_layer_idx", &c->scale_attn_by_layer, src, err) ||
        json_get_bool(d, "reorder_and_upcast_attn", &upcast, src, err) ||
        json_get_bool(d, "add_cross_attention", &cross, src, err))
        return -1;
    if (!scale)
        return vit_fail(err,
                        "%s: GPT-2 attention without the 1/sqrt(head size) scale "
                        "(scale_attn_weights false) is not supported",
                        src);
    if (!cross)
        return vit_fail(err,
                        "%s: the GPT-2 decoder has no cross-attention (add_cross_attention "
                        "false or absent: GPT2Config's default)",
                        src);
    return 0;
}

static int parse_gpt2(const cJSON *d, model_config *c, const char *src, vit_error *err) {
    const int big = 1 << 20;
    double eps = 1e-5;
    if (json_get_int(d, "n_embd", 1, big, &c->hidden_size, src, err) ||
        json_get_int(d, "n_layer", 1, 1000, &c->num_layers, src, err) ||
        json_get_int(d, "n_head", 1, 4096, &c->num_heads, src, err) ||
        json_get_int(d, "n_inner", 1, big, &c->intermediate_size, src, err) ||
        get_activation_key(d, "activation_function", &c->act, src, err) ||
        json_get_int(d, "n_positions", 2, big, &c->max_position_embeddings, src, err) ||
        json_get_number(d, "layer_norm_epsilon", 1e-30, 1, &eps, src, err) ||
        gpt2_attention(d, c, src, err))
        return -1;
    if (c->intermediate_size == 0) c->intermediate_size = 4 * c->hidden_size;
    c->layer_norm_eps = (float)eps;
    return 0;
}

/* The decoder's cross-attention reads the encoder's states at cross_attention_hidden_size (set:
 * TrOCR's keys and values take that width) or at its own width, through enc_to_dec_proj when the
 * encoder's differs (modeling_vision_encoder_decoder.py's rule). */
static int parse_cross(const cJSON *d, model_config *c, const char *src, vit_error *err) {
    c->cross_dim = 0;
    if (json_get_int(d, "cross_attention_hidden_size", 1, 1 << 20, &c->cross_dim, src, err))
        return -1;
    if (c->cross_dim == 0) {
        c->cross_dim = c->hidden_size;
        return 0;
    }
    if (c->cross_dim != c->encoder_hidden ||
        (c->dec_arch == DECODER_GPT2 && c->cross_dim != c->hidden_size))
        return vit_fail(err,
                        "%s: the decoder's cross_attention_hidden_size %d does not fit the "
                        "encoder's hidden_size %d",
                        src, c->cross_dim, c->encoder_hidden);
    return 0;
}

static int parse_ved_decoder(const cJSON *d, int encoder_hidden, model_config *c, const char *src,
                             vit_error *err) {
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(d, "model_type");
    if (!cJSON_IsString(type))
        return vit_fail(err, "%s: the decoder's model_type is missing or not a string", src);
    const char *name = type->valuestring;
    if (strcmp(name, "trocr") != 0 && strcmp(name, "gpt2") != 0)
        return vit_fail(err, "%s: the decoder's model_type is '%s'; supported: trocr, gpt2", src,
                        name);
    set_defaults(c, MODEL_DECODER);
    c->family = FAMILY_VED;
    c->dec_arch = strcmp(name, "trocr") == 0 ? DECODER_TROCR : DECODER_GPT2;
    c->layer_norm_eps = 1e-5f; /* nn.LayerNorm's default (TrOCR), GPT2Config's */
    c->encoder_hidden = encoder_hidden;
    c->tie_word_embeddings = 1;
    (c->dec_arch == DECODER_TROCR ? trocr_defaults : gpt2_defaults)(c);
    if ((c->dec_arch == DECODER_TROCR ? parse_trocr : parse_gpt2)(d, c, src, err) ||
        json_get_int(d, "vocab_size", 1, 1 << 24, &c->vocab_size, src, err) ||
        json_get_int(d, "pad_token_id", -1, 1 << 24, &c->pad_token_id, src, err) ||
        json_get_int(d, "eos_token_id", -1, 1 << 24, &c->eos_token_id, src, err) ||
        json_get_bool(d, "tie_word_embeddings", &c->tie_word_embeddings, src, err) ||
        parse_cross(d, c, src, err))
        return -1;
    if (c->hidden_size % c->num_heads != 0)
        return vit_fail(err, "%s: the decoder's width %d is not divisible by its %d heads", src,
                        c->hidden_size, c->num_heads);
    c->num_labels = c->vocab_size; /* the output projection's width */
    return 0;
}

static const cJSON *ved_part(const cJSON *root, const char *name, const char *src, vit_error *err) {
    const cJSON *sub = cJSON_GetObjectItemCaseSensitive(root, name);
    if (!cJSON_IsObject(sub))
        vit_fail(err, "%s: field '%s' must be an object (a VisionEncoderDecoder config)", src,
                 name);
    return cJSON_IsObject(sub) ? sub : NULL;
}

/* tower TOWER_TEXT: the decoder; else the encoder. */
static int parse_ved(const cJSON *root, config_tower tower, model_config *cfg, const char *src,
                     vit_error *err) {
    const cJSON *enc = ved_part(root, "encoder", src, err), *dec = NULL;
    if (!enc || (tower == TOWER_TEXT && !(dec = ved_part(root, "decoder", src, err)))) return -1;
    model_config encoder = {0};
    int rc = parse_ved_encoder(enc, &encoder, src, err);
    if (rc == 0 && !dec) {
        *cfg = encoder; /* its labels are cfg's now */
        return 0;
    }
    if (rc == 0) rc = parse_ved_decoder(dec, encoder.hidden_size, cfg, src, err);
    model_config_free(&encoder);
    cfg->start_token_id = cfg->shift_pad_id = -1;
    if (rc == 0)
        rc = json_get_int(root, "decoder_start_token_id", -1, 1 << 24, &cfg->start_token_id, src,
                          err) ||
             json_get_int(root, "pad_token_id", -1, 1 << 24, &cfg->shift_pad_id, src, err);
    return rc;
}

static int is_ved(const cJSON *root) {
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(root, "model_type");
    return cJSON_IsString(type) && strcmp(type->valuestring, "vision-encoder-decoder") == 0;
}

/* PretrainedConfig's problem_type: null, or one of its three values (regression the one that
 * changes what vit does). */
static int get_problem_type(const cJSON *root, model_config *cfg, const char *src, vit_error *err) {
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(root, "problem_type");
    if (!p || cJSON_IsNull(p)) return 0;
    static const char *const known[] = {"regression", "single_label_classification",
                                        "multi_label_classification"};
    for (int i = 0; cJSON_IsString(p) && i < 3; i++)
        if (strcmp(p->valuestring, known[i]) == 0) return cfg->regression = i == 0, 0;
    return vit_fail(err,
                    "%s: field 'problem_type' must be regression, single_label_classification "
                    "or multi_label_classification",
                    src);
}

int model_config_parse_tower(const char *json, const char *source, config_tower tower,
                             model_config *cfg, vit_error *err) {
    memset(cfg, 0, sizeof *cfg);
    char why[160];
    cJSON *root = json_parse_object(json, strlen(json), why, sizeof why);
    if (!root) return vit_fail(err, "%s: not a valid JSON object: %s", source, why);
    if (config_timm_is(root)) { /* timm's config.json: config_timm.c */
        const int rc = config_timm_parse(root, cfg, source, err);
        cJSON_Delete(root);
        if (rc != 0) model_config_free(cfg);
        if (rc == 0) config_apply_family(cfg);
        return rc;
    }
    if (is_ved(root)) {
        model_config type = {0};
        const int rc = get_class(root, "vision-encoder-decoder", &type, source, err) != 0
                           ? -1
                           : parse_ved(root, tower, cfg, source, err);
        cJSON_Delete(root);
        if (rc != 0) model_config_free(cfg);
        if (rc == 0) config_apply_family(cfg);
        return rc;
    }
    model_config type = {0};
    if (get_model_type(root, tower, 1, &type, source, err) != 0) {
        cJSON_Delete(root);
        return -1;
    }
    set_defaults(cfg, type.kind); /* DeiTConfig's defaults are ViTConfig's */
    cfg->arch = type.arch;
    cfg->bare = type.bare;
    cfg->one_tower = type.one_tower;
    cfg->no_projection = type.no_projection;
    cfg->token_classifier = type.token_classifier;
    cfg->text_arch = type.text_arch;
    cfg->family = type.family;
    int rc = cfg->family == FAMILY_PLAIN  ? config_parse_common(root, cfg, source, err)
             : config_is_joint(cfg)       ? config_joint_parse(root, cfg, source, err)
             : cfg->family == FAMILY_TEXT ? config_text_parse(root, cfg, source, err)
                                          : config_backbone_parse(root, cfg, source, err);
    /* a base model's output: its features (ViTModel: the final LayerNorm at CLS; BertModel: the
     * pooler's) */
    if (rc == 0) rc = config_score_activation(root, cfg, source, err);
    if (rc == 0 && cfg->kind == MODEL_TEXT) rc = get_problem_type(root, cfg, source, err);
    if (rc == 0 && cfg->family == FAMILY_PLAIN && cfg->bare)
        rc = config_dim_labels(cfg, cfg->hidden_size, source, err);
    if (rc == 0 && cfg->family != FAMILY_PLAIN && cfg->image_width != cfg->image_size)
        rc = vit_fail(err, "%s: a [height, width] image_size is for ViT and DeiT models only",
                      source);
    cJSON_Delete(root);
    if (rc != 0) model_config_free(cfg);
    if (rc == 0) config_apply_family(cfg);
    return rc;
}

int model_config_parse(const char *json, const char *source, model_config *cfg, vit_error *err) {
    return model_config_parse_tower(json, source, TOWER_DEFAULT, cfg, err);
}

/* An open_clip folder's open_clip_config.json (config_open_clip.c). */
static int load_open_clip(const char *path, config_tower tower, model_config *cfg, vit_error *err) {
    cJSON *root = json_load_object(path, err);
    if (!root) return -1;
    const int rc = config_open_clip_parse(root, tower, cfg, path, err);
    cJSON_Delete(root);
    if (rc != 0) model_config_free(cfg);
    if (rc == 0) config_apply_family(cfg);
    return rc;
}

int model_config_load_tower(const char *model_dir, config_tower tower, model_config *cfg,
                            vit_error *err) {
    char path[4096];
    memset(cfg, 0, sizeof *cfg);
    /* config.json first, as transformers reads a folder: the Hub's open_clip repos that also
     * hold a CLIPModel's files load as that */
    snprintf(path, sizeof path, "%s/config.json", model_dir);
    if (access(path, F_OK) != 0) {
        snprintf(path, sizeof path, "%s/%s", model_dir, OPEN_CLIP_CONFIG);
        if (access(path, F_OK) == 0) return load_open_clip(path, tower, cfg, err);
        snprintf(path, sizeof path, "%s/config.json", model_dir);
    }
    char *json = vit_read_file(path, MAX_CONFIG_BYTES, NULL, err);
    if (!json) return -1;
    int rc = model_config_parse_tower(json, path, tower, cfg, err);
    free(json);
    return rc;
}

int model_config_load(const char *model_dir, model_config *cfg, vit_error *err) {
    return model_config_load_tower(model_dir, TOWER_DEFAULT, cfg, err);
}

void model_config_free(model_config *cfg) {
    if (cfg->labels)
        for (int i = 0; i < cfg->num_labels; i++) free(cfg->labels[i]);
    free(cfg->labels);
    cfg->labels = NULL;
    cfg->num_labels = 0;
}
