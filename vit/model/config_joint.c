/* The joint image-text families' config.json: CLIP and SigLIP, each a two-tower folder
 * (CLIPModel, SiglipModel: vision_config and text_config) or one tower saved alone
 * (CLIPVisionModelWithProjection, SiglipTextModel, ...). Everything that tells the two apart is
 * a row of `families`: model_types and classes, tensor prefixes and projection names, the
 * defaults, the options of the one encoder, how the scores are read. Below vit/model only the
 * options are seen (config_joint_options); no family test elsewhere. */
#include <cjson/cJSON.h>
#include <string.h>

#include "vit/base/json.h"
#include "vit/model/config.h"

typedef struct {
    const char *name;
    int no_projection; /* its output is pooler_output, no projection into the joint space */
} joint_class;

typedef struct {
    const char *type;
    int tower;              /* 0: both (vision_config, text_config), 1: image, 2: text */
    joint_class classes[2]; /* the classes vit runs for it, the first a folder's default */
} joint_type;

struct joint_family;
/* The embedding's length (num_labels): the projection's, or the width. tower: the tower's fields
 * (root in a one-tower folder; NULL: every field at its default). */
typedef int (*joint_dim_reader)(const cJSON *root, const cJSON *tower, model_config *cfg, int *dim,
                                const char *src, vit_error *err);

typedef struct joint_family {
    model_family family;
    const char *name, *joint_class, *image_class, *text_class; /* the last two: in a joint folder */
    joint_type types[3];
    const char *image_prefix, *text_prefix;
    /* the projections into the joint space (NULL: none) and where they are: under the tower's
     * prefix (SigLIP's text head) or at the top (CLIP's) */
    const char *image_projection, *text_projection;
    int projection_prefixed;
    int scale_ndim; /* logit_scale: a 0-d tensor (CLIP) or [1] (SigLIP) */
    int sigmoid;    /* scores read one by one through a sigmoid, plus logit_bias (SigLIP) */
    /* text_config_dict / vision_config_dict, when not null, replace the tower's fields: CLIPConfig
     * updates text_config with CLIPTextConfig(**text_config_dict).to_dict(), every field the
     * dict leaves out at its default (openai/clip-vit-large-patch14's file). SiglipConfig
     * ignores them. */
    int config_dicts;
    /* the options of the one encoder */
    int class_token, pre_norm, causal_text; /* pre_norm: CLIP's pre_layrnorm, no patch bias */
    pool_kind image_pool, text_pool;
    head_kind image_head, text_head;
    /* the Config classes' defaults */
    activation_kind act;
    float eps;
    int patch_size, vocab_size, max_positions, eos_token_id, text_width, text_mlp, text_heads;
    joint_dim_reader dim;
} joint_family;

static int clip_dim(const cJSON *root, const cJSON *tower, model_config *cfg, int *dim,
                    const char *src, vit_error *err);
static int siglip_dim(const cJSON *root, const cJSON *tower, model_config *cfg, int *dim,
                      const char *src, vit_error *err);

static const joint_family families[] = {
    {.family = FAMILY_CLIP,
     .name = "CLIP",
     .joint_class = "CLIPModel",
     .image_class = "CLIPModel (vision tower)",
     .text_class = "CLIPModel (text tower)",
     .types = {{"clip", 0, {{"CLIPModel", 0}}},
               {"clip_vision_model",
                1,
                {{"CLIPVisionModelWithProjection", 0}, {"CLIPVisionModel", 1}}},
               {"clip_text_model", 2, {{"CLIPTextModelWithProjection", 0}}}},
     .image_prefix = "vision_model.",
     .text_prefix = "text_model.",
     .image_projection = "visual_projection",
     .text_projection = "text_projection",
     .projection_prefixed = 0,
     .scale_ndim = 0,
     .sigmoid = 0,
     .config_dicts = 1,
     .class_token = 1,
     .pre_norm = 1,
     .causal_text = 1,
     .image_pool = POOL_CLS,
     .text_pool = POOL_EOS,
     .image_head = HEAD_PROJECTION,
     .text_head = HEAD_PROJECTION,
     .act = ACT_QUICK_GELU,
     .eps = 1e-5f,
     .patch_size = 32,
     .vocab_size = 49408,
     .max_positions = 77,
     .eos_token_id = 49407,
     .text_width = 512,
     .text_mlp = 2048,
     .text_heads = 8,
     .dim = clip_dim},
    {.family = FAMILY_SIGLIP,
     .name = "SigLIP",
     .joint_class = "SiglipModel",
     .image_class = "SiglipModel (vision tower)",
     .text_class = "SiglipModel (text tower)",
     .types = {{"siglip", 0, {{"SiglipModel", 0}}},
               {"siglip_vision_model", 1, {{"SiglipVisionModel", 0}}},
               {"siglip_text_model", 2, {{"SiglipTextModel", 0}}}},
     .image_prefix = "vision_model.",
     .text_prefix = "text_model.",
     .image_projection = NULL, /* the probe's output is the embedding */
     .text_projection = "head",
     .projection_prefixed = 1,
     .scale_ndim = 1,
     .sigmoid = 1,
     .config_dicts = 0,
     .class_token = 0,
     .pre_norm = 0,
     .causal_text = 0,
     .image_pool = POOL_PROBE,
     .text_pool = POOL_LAST, /* texts padded to max_length */
     .image_head = HEAD_NONE,
     .text_head = HEAD_LINEAR,
     .act = ACT_GELU_TANH,
     .eps = 1e-6f,
     .patch_size = 16,
     .vocab_size = 32000,
     .max_positions = 64,
     .eos_token_id = 49407, /* SiglipTextConfig's (CLIP's); unused: pooled at the last position */
     .text_width = 768,
     .text_mlp = 3072,
     .text_heads = 12,
     .dim = siglip_dim},
};
enum { NUM_FAMILIES = sizeof families / sizeof families[0] };

static const joint_family *family_of(const model_config *cfg) {
    for (int i = 0; i < NUM_FAMILIES; i++)
        if (families[i].family == cfg->family) return &families[i];
    return NULL;
}

static const joint_type *find_type(const char *model_type, const joint_family **family) {
    for (int i = 0; i < NUM_FAMILIES; i++)
        for (int t = 0; t < 3; t++)
            if (strcmp(model_type, families[i].types[t].type) == 0) {
                *family = &families[i];
                return &families[i].types[t];
            }
    return NULL;
}

int config_is_joint(const model_config *cfg) {
    return family_of(cfg) != NULL;
}

const char *config_joint_class(const model_config *cfg) {
    if (cfg->open_clip) return cfg->oc_custom_text ? "open_clip CustomTextCLIP" : "open_clip CLIP";
    return family_of(cfg)->joint_class;
}

const char *config_joint_name(const model_config *cfg) {
    return family_of(cfg)->name;
}

const char *config_joint_model_type(const model_config *cfg) {
    if (cfg->open_clip) return "open_clip"; /* no model_type: open_clip's own config */
    return family_of(cfg)->types[0].type;
}

const char *config_joint_prefix(const model_config *cfg) {
    const joint_family *f = family_of(cfg);
    if (cfg->open_clip) /* open_clip's CLIP: visual.*, the text at the top (CustomTextCLIP: text.*)
                         */
        return cfg->kind == MODEL_VIT ? "visual." : cfg->oc_custom_text ? "text." : "";
    return cfg->kind == MODEL_VIT ? f->image_prefix : f->text_prefix;
}

/* A tower alone: the class it was read as; a joint folder's: "CLIPModel (vision tower)", ... */
const char *config_joint_architecture(const model_config *cfg) {
    const joint_family *f = family_of(cfg);
    const int image = cfg->kind == MODEL_VIT;
    if (cfg->open_clip)
        return image ? "open_clip CLIP (vision tower)" : "open_clip CLIP (text tower)";
    if (!cfg->one_tower) return image ? f->image_class : f->text_class;
    const joint_type *t = &f->types[image ? 1 : 2];
    return image && cfg->no_projection && t->classes[1].name ? t->classes[1].name
                                                             : t->classes[0].name;
}

void config_joint_tensors(const model_config *cfg, joint_tensors *t) {
    const joint_family *f = family_of(cfg);
    t->projection = cfg->kind == MODEL_VIT ? f->image_projection : f->text_projection;
    t->projection_prefixed = f->projection_prefixed;
    t->scale_ndim = f->scale_ndim;
}

int config_joint_type(const char *model_type, config_tower tower, model_config *cfg) {
    const joint_family *f;
    const joint_type *t = find_type(model_type, &f);
    if (!t) return 0;
    cfg->family = f->family;
    cfg->one_tower = t->tower != 0;
    const int text = t->tower ? t->tower == 2 : tower == TOWER_TEXT;
    cfg->kind = text ? MODEL_TEXT : MODEL_VIT;
    return 1;
}

int config_joint_pick_class(const cJSON *root, const char *model_type, model_config *cfg,
                            const char *src, vit_error *err) {
    const joint_family *f;
    const joint_type *t = find_type(model_type, &f);
    const char *names[2];
    int n = 0;
    while (n < 2 && t->classes[n].name) names[n] = t->classes[n].name, n++;
    const int at = config_pick_class(root, model_type, names, n, src, err);
    if (at < 0) return -1;
    cfg->arch = ARCH_VIT;
    cfg->bare = t->tower != 0; /* a tower alone: no logit_scale, which is the joint model's */
    cfg->no_projection = t->classes[at].no_projection;
    return 0;
}

/* CLIPVisionConfig / CLIPTextConfig and SiglipVisionConfig / SiglipTextConfig defaults. */
static void set_defaults(const joint_family *f, model_config *cfg) {
    cfg->act = f->act;
    cfg->layer_norm_eps = f->eps;
    cfg->patch_size = f->patch_size;
    cfg->vocab_size = f->vocab_size;
    cfg->max_position_embeddings = f->max_positions;
    cfg->eos_token_id = f->eos_token_id;
    if (cfg->kind == MODEL_TEXT) {
        cfg->hidden_size = f->text_width;
        cfg->intermediate_size = f->text_mlp;
        cfg->num_heads = f->text_heads;
    }
}

/* The tower's fields: its sub-object (text_config, vision_config, or the family's older
 * text_config_dict / vision_config_dict) in a joint folder, the root in a tower alone. */
static int tower_object(const cJSON *root, const model_config *cfg, const cJSON **tower,
                        const char *src, vit_error *err) {
    const char *name = cfg->kind == MODEL_TEXT ? "text_config" : "vision_config";
    *tower = root;
    if (cfg->one_tower) return 0;
    const cJSON *sub = cJSON_GetObjectItemCaseSensitive(root, name);
    if (sub && !cJSON_IsObject(sub) && !cJSON_IsNull(sub))
        return vit_fail(err, "%s: field '%s' must be an object", src, name);
    *tower = cJSON_IsObject(sub) ? sub : NULL; /* NULL: every field at its default */
    if (!family_of(cfg)->config_dicts) return 0;
    static const char *const dicts[2] = {"text_config_dict", "vision_config_dict"};
    for (int i = 0; i < 2; i++) { /* both, as CLIPConfig reads both whichever tower is asked */
        const cJSON *dict = cJSON_GetObjectItemCaseSensitive(root, dicts[i]);
        if (dict && !cJSON_IsObject(dict) && !cJSON_IsNull(dict))
            return vit_fail(err, "%s: field '%s' must be an object or null", src, dicts[i]);
        if (cJSON_IsObject(dict) && (i == 0) == (cfg->kind == MODEL_TEXT))
            *tower = dict; /* null: as absent */
    }
    return 0;
}

/* CLIP: projection_dim, 512 by default: a joint folder's top-level one (CLIPModel reads
 * config.projection_dim, not the towers'), a tower alone's own; or the width for a
 * CLIPVisionModel (its pooler_output). */
static int clip_dim(const cJSON *root, const cJSON *tower, model_config *cfg, int *dim,
                    const char *src, vit_error *err) {
    (void)tower;
    if (cfg->no_projection) return 0;
    *dim = 512;
    return json_get_int(root, "projection_dim", 1, 1 << 20, dim, src, err) ? -1 : 0;
}

/* SigLIP: the text head's projection_size (the width by default); the image tower's width, its
 * probe (vision_use_head) optional only in a tower alone. */
static int siglip_dim(const cJSON *root, const cJSON *tower, model_config *cfg, int *dim,
                      const char *src, vit_error *err) {
    if (cfg->kind == MODEL_TEXT)
        return json_get_int(tower ? tower : root, "projection_size", 1, 1 << 20, dim, src, err) ? -1
                                                                                                : 0;
    int use_head = 1;
    if (json_get_bool(tower ? tower : root, "vision_use_head", &use_head, src, err)) return -1;
    /* SiglipModel's image embedding is the probe's output (get_image_features) */
    if (!use_head && tower != root)
        return vit_fail(err,
                        "%s: vision_use_head false in a SiglipModel: its image embedding is "
                        "the attention-pooling head's output",
                        src);
    cfg->no_probe = !use_head;
    return 0;
}

int config_joint_parse(const cJSON *root, model_config *cfg, const char *src, vit_error *err) {
    const joint_family *f = family_of(cfg);
    set_defaults(f, cfg);
    const cJSON *tower;
    if (tower_object(root, cfg, &tower, src, err) != 0) return -1;
    static const cJSON empty = {.type = cJSON_Object};
    const cJSON *fields = tower ? tower : &empty;
    if (config_parse_common(fields, cfg, src, err) != 0 ||
        json_get_int(fields, "eos_token_id", 0, 1 << 24, &cfg->eos_token_id, src, err) != 0)
        return -1;
    int dim = cfg->hidden_size;
    if (f->dim(root, tower, cfg, &dim, src, err) != 0) return -1;
    return config_dim_labels(cfg, dim, src, err);
}

void config_joint_options(const model_config *c, tower_options *o) {
    const joint_family *f = family_of(c);
    if (c->open_clip) {
        config_open_clip_options(c, o);
        return;
    }
    o->joint = 1;
    o->joint_sigmoid = f->sigmoid;
    if (c->kind == MODEL_VIT) {
        o->special = f->class_token;
        o->patch_bias = !f->pre_norm;
        o->embed_norm = f->pre_norm;
        o->abs_pos = o->key_bias = 1;
        /* SigLIP without its probe: every row normalised is the output (last_hidden_state) */
        o->pool = f->image_pool == POOL_PROBE && c->no_probe ? POOL_ALL : f->image_pool;
        o->head = c->no_projection ? HEAD_NONE : f->image_head;
        return;
    }
    o->causal = f->causal_text;
    /* CLIP configs with the old eos_token_id 2: the end token is the largest id */
    o->pool = f->text_pool == POOL_EOS && c->eos_token_id == 2 ? POOL_EOS_MAX : f->text_pool;
    o->head = f->text_head;
}
