/* timm's VisionTransformer folders (issue 41): config.json holds `architecture` (a name timm
 * registers, "vit_base_patch16_224"), `pretrained_cfg` (input size, classes, preprocessing) and
 * sometimes `model_args`; the tensors keep timm's names (params.c's layout_timm). The shape comes
 * as timm.create_model builds it: the registration's model_args (config_timm_archs.h, generated
 * from timm's source by tools/timm_archs.py) over VisionTransformer's defaults, the file's
 * model_args over those, then num_classes, in_chans and (fixed_input_size) img_size from
 * pretrained_cfg. The tensors are then checked against that shape at load, as timm's strict
 * load_state_dict does. What the one encoder cannot run is refused, naming it. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vit/base/json.h"
#include "vit/model/config.h"

typedef struct {
    const char *name;
    int img_size, patch_size, embed_dim, depth, num_heads;
    double mlp_ratio;
    activation_kind act;
    float eps;
    int qkv_bias, layer_scale, class_token, no_embed_class, reg_tokens, pre_norm, fc_norm;
    const char *global_pool, *why;
} timm_arch;

static const timm_arch archs[] = {
#include "vit/model/config_timm_archs.h"
};

/* One architecture with a folder's model_args and pretrained_cfg applied. */
typedef struct {
    timm_arch a;
    int img_h, img_w, in_chans, num_classes; /* -1: not given yet */
    char pool[16];
} timm_model;

int config_timm_is(const cJSON *root) {
    return cJSON_IsString(cJSON_GetObjectItemCaseSensitive(root, "architecture")) &&
           !cJSON_GetObjectItemCaseSensitive(root, "model_type");
}

static const timm_arch *find_arch(const char *name) {
    for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++)
        if (strcmp(archs[i].name, name) == 0) return &archs[i];
    return NULL;
}

/* img_size: an int or [height, width]. */
static int get_img_size(const cJSON *v, int *h, int *w, const char *src, vit_error *err) {
    const cJSON *a = cJSON_IsArray(v) ? cJSON_GetArrayItem(v, 0) : v;
    const cJSON *b = cJSON_IsArray(v) ? cJSON_GetArrayItem(v, 1) : v;
    if ((cJSON_IsArray(v) && cJSON_GetArraySize(v) != 2) || !cJSON_IsNumber(a) ||
        !cJSON_IsNumber(b) || !(a->valuedouble >= 1 && a->valuedouble <= 65536) ||
        !(b->valuedouble >= 1 && b->valuedouble <= 65536) || a->valuedouble != a->valueint ||
        b->valuedouble != b->valueint)
        return vit_fail(err, "%s: field 'model_args.img_size' must be an integer or [h, w]", src);
    *h = a->valueint, *w = b->valueint;
    return 0;
}

/* The model_args keys that only change training (dropout, initialisation): no effect here. */
static int training_only(const char *k) {
    static const char *const keys[] = {"drop_rate",      "pos_drop_rate",  "patch_drop_rate",
                                       "proj_drop_rate", "attn_drop_rate", "drop_path_rate",
                                       "weight_init",    "fix_init",       "dynamic_img_size"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (strcmp(k, keys[i]) == 0) return 1;
    return 0;
}

/* Keys whose only value vit runs is VisionTransformer's default (true or false). */
static int plain_bool(const cJSON *item, int *known) {
    static const char *const off[] = {"qk_norm", "scale_attn_norm", "scale_mlp_norm",
                                      "pool_include_prefix", "dynamic_img_pad"};
    static const char *const on[] = {"final_norm", "proj_bias"};
    *known = 1;
    for (size_t i = 0; i < sizeof off / sizeof off[0]; i++)
        if (strcmp(item->string, off[i]) == 0) return cJSON_IsFalse(item);
    for (size_t i = 0; i < sizeof on / sizeof on[0]; i++)
        if (strcmp(item->string, on[i]) == 0) return cJSON_IsTrue(item);
    if (strcmp(item->string, "pos_embed") == 0)
        return cJSON_IsString(item) && strcmp(item->valuestring, "learn") == 0;
    *known = 0;
    return 0;
}

static int get_act(const cJSON *args, timm_model *t, const char *src, vit_error *err) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(args, "act_layer");
    if (!v || cJSON_IsNull(v)) return 0;
    const char *s = cJSON_IsString(v) ? v->valuestring : "";
    if (t->a.act == ACT_SWIGLU && strcmp(s, "silu") == 0) return 0; /* SwiGLUPacked's own */
    if (t->a.act == ACT_SWIGLU)
        return vit_fail(err, "%s: field 'model_args.act_layer': %s's SwiGLU MLP gates with silu",
                        src, t->a.name);
    t->a.act = strcmp(s, "gelu") == 0         ? ACT_GELU
               : strcmp(s, "gelu_tanh") == 0  ? ACT_GELU_TANH
               : strcmp(s, "quick_gelu") == 0 ? ACT_QUICK_GELU
                                              : (activation_kind)-1;
    if ((int)t->a.act == -1)
        return vit_fail(err,
                        "%s: field 'model_args.act_layer' must be gelu, gelu_tanh or quick_gelu "
                        "(the activations vit runs)",
                        src);
    return 0;
}

/* The typed keys: sizes, flags, layer scale, fc_norm, pooling, activation. */
static int typed_args(const cJSON *args, timm_model *t, const char *src, vit_error *err) {
    timm_arch *a = &t->a;
    const cJSON *v;
    if (json_get_int(args, "patch_size", 1, 65536, &a->patch_size, src, err) ||
        json_get_int(args, "embed_dim", 1, 1 << 16, &a->embed_dim, src, err) ||
        json_get_int(args, "depth", 1, 1000, &a->depth, src, err) ||
        json_get_int(args, "num_heads", 1, 4096, &a->num_heads, src, err) ||
        json_get_int(args, "reg_tokens", 0, 1024, &a->reg_tokens, src, err) ||
        json_get_int(args, "in_chans", 1, 4, &t->in_chans, src, err) ||
        json_get_int(args, "num_classes", 0, 1 << 20, &t->num_classes, src, err) ||
        json_get_number(args, "mlp_ratio", 1e-6, 1e6, &a->mlp_ratio, src, err) ||
        json_get_bool(args, "qkv_bias", &a->qkv_bias, src, err) ||
        json_get_bool(args, "class_token", &a->class_token, src, err) ||
        json_get_bool(args, "no_embed_class", &a->no_embed_class, src, err) ||
        json_get_bool(args, "pre_norm", &a->pre_norm, src, err) || get_act(args, t, src, err))
        return -1;
    if ((v = cJSON_GetObjectItemCaseSensitive(args, "img_size")) &&
        get_img_size(v, &t->img_h, &t->img_w, src, err) != 0)
        return -1;
    if ((v = cJSON_GetObjectItemCaseSensitive(args, "init_values")))
        a->layer_scale = !cJSON_IsNull(v);
    if ((v = cJSON_GetObjectItemCaseSensitive(args, "fc_norm")))
        a->fc_norm = cJSON_IsNull(v) ? -1 : cJSON_IsTrue(v);
    if ((v = cJSON_GetObjectItemCaseSensitive(args, "global_pool"))) {
        if (!cJSON_IsString(v) || strlen(v->valuestring) >= sizeof t->pool)
            return vit_fail(err, "%s: field 'model_args.global_pool' must be a pooling name", src);
        snprintf(t->pool, sizeof t->pool, "%s", v->valuestring);
    }
    return 0;
}

/* model_args as create_model passes them: over the registration's. A key vit does not know, or
 * one it knows at a value it cannot run, is refused by name. */
static int apply_model_args(const cJSON *args, timm_model *t, const char *src, vit_error *err) {
    static const char *const typed[] = {
        "patch_size",  "embed_dim", "depth",       "num_heads",   "reg_tokens",     "in_chans",
        "num_classes", "mlp_ratio", "qkv_bias",    "class_token", "no_embed_class", "pre_norm",
        "act_layer",   "img_size",  "init_values", "fc_norm",     "global_pool"};
    if (!args || cJSON_IsNull(args)) return 0;
    if (!cJSON_IsObject(args))
        return vit_fail(err, "%s: field 'model_args' must be an object", src);
    const cJSON *item;
    cJSON_ArrayForEach(item, args) {
        int known = training_only(item->string), ok = 1;
        for (size_t i = 0; !known && i < sizeof typed / sizeof typed[0]; i++)
            known = strcmp(item->string, typed[i]) == 0;
        if (!known) ok = plain_bool(item, &known);
        if (!known)
            return vit_fail(err, "%s: field 'model_args.%s' is not one vit reads", src,
                            item->string);
        if (!ok)
            return vit_fail(err, "%s: field 'model_args.%s' asks for what vit does not run", src,
                            item->string);
    }
    return typed_args(args, t, src, err);
}

/* pretrained_cfg's input_size: [C, H, W]. */
static int get_input_size(const cJSON *v, int chw[3], const char *src, vit_error *err) {
    if (!v || cJSON_IsNull(v)) return 0;
    int ok = cJSON_IsArray(v) && cJSON_GetArraySize(v) == 3;
    for (int i = 0; ok && i < 3; i++) {
        const cJSON *e = cJSON_GetArrayItem(v, i);
        ok = cJSON_IsNumber(e) && e->valuedouble >= 1 && e->valuedouble <= 65536 &&
             e->valuedouble == floor(e->valuedouble);
        if (ok) chw[i] = (int)e->valuedouble;
    }
    return ok ? 0 : vit_fail(err, "%s: field 'pretrained_cfg.input_size' must be [C, H, W]", src);
}

/* What pretrained_cfg gives where model_args left it unset (timm's _update_default_model_kwargs):
 * num_classes (config.json's top-level num_classes over pretrained_cfg's), in_chans, and img_size
 * when the architecture fixes its input size; else VisionTransformer's defaults. */
static int pretrained_defaults(const cJSON *root, const cJSON *pcfg, timm_model *t, const char *src,
                               vit_error *err) {
    int fixed = 0, chw[3] = {3, 224, 224}, classes = 1000;
    if (json_get_bool(pcfg, "fixed_input_size", &fixed, src, err) ||
        get_input_size(cJSON_GetObjectItemCaseSensitive(pcfg, "input_size"), chw, src, err) ||
        json_get_int(pcfg, "num_classes", 0, 1 << 20, &classes, src, err) ||
        json_get_int(root, "num_classes", 0, 1 << 20, &classes, src, err))
        return -1;
    if (t->num_classes < 0) t->num_classes = classes;
    if (t->in_chans < 0) t->in_chans = chw[0];
    if (t->img_h < 0 && t->a.img_size > 0) t->img_h = t->img_w = t->a.img_size;
    if (t->img_h < 0) t->img_h = fixed ? chw[1] : 224, t->img_w = fixed ? chw[2] : 224;
    return 0;
}

/* The pooling onto the encoder's: 'token' (the final norm at the class token: ViT's), 'avg' with
 * fc_norm (the mean of the patch rows, then its norm: BEiT's mean pooling) or without it (the
 * final norm on every row, then their mean; the registrations that do this have no class token),
 * 'map' (the final norm on every row, then the attention pool: SigLIP's probe). */
static int resolve_pool(const timm_model *t, model_config *cfg, const char *src, vit_error *err) {
    const timm_arch *a = &t->a;
    const int prefix = a->class_token + a->reg_tokens;
    const int use_fc_norm = a->fc_norm >= 0 ? a->fc_norm : strcmp(t->pool, "avg") == 0;
    cfg->timm_fc_norm = use_fc_norm;
    if (strcmp(t->pool, "token") == 0 && a->class_token) {
        cfg->timm_pool = POOL_CLS;
        return 0;
    }
    if (strcmp(t->pool, "avg") == 0 && (use_fc_norm || !a->class_token)) {
        cfg->timm_pool = use_fc_norm ? POOL_MEAN : POOL_NORM_MEAN;
        return 0;
    }
    if (strcmp(t->pool, "map") == 0 && !prefix && !use_fc_norm && t->num_classes == 0 &&
        a->act != ACT_SWIGLU) { /* AttentionPoolLatent's MLP is never a SwiGLU */
        cfg->timm_pool = POOL_PROBE;
        return 0;
    }
    const char *why = strcmp(t->pool, "token") == 0 ? "without a class token"
                      : strcmp(t->pool, "avg") == 0 ? "with fc_norm false and a class token"
                      : strcmp(t->pool, "map") == 0
                          ? "with prefix tokens, fc_norm, a SwiGLU MLP or a classifier after the "
                            "attention pool"
                          : "(vit runs token, avg and map)";
    return vit_fail(err, "%s: %s: global_pool '%s' %s is not one vit runs", src, a->name, t->pool,
                    why);
}

/* The shape's limits, as config.c checks a Hugging Face config's. */
static int check_shape(const timm_model *t, const char *src, vit_error *err) {
    const timm_arch *a = &t->a;
    const int side = t->img_h < t->img_w ? t->img_h : t->img_w;
    const int longest = t->img_h > t->img_w ? t->img_h : t->img_w;
    if (a->embed_dim % a->num_heads != 0)
        return vit_fail(err, "%s: %s: embed_dim %d is not divisible by num_heads %d", src, a->name,
                        a->embed_dim, a->num_heads);
    if (a->patch_size > side || longest / a->patch_size > CONFIG_MAX_GRID)
        return vit_fail(err,
                        "%s: %s: patch_size %d does not fit img_size %dx%d (at most %d "
                        "patches a side)",
                        src, a->name, a->patch_size, t->img_w, t->img_h, CONFIG_MAX_GRID);
    if (t->in_chans != 1 && t->in_chans != 3)
        return vit_fail(err, "%s: in_chans is %d; only 1 and 3 are supported", src, t->in_chans);
    const double width = floor(a->embed_dim * a->mlp_ratio);
    if (a->act == ACT_SWIGLU && fmod(width, 2) != 0)
        return vit_fail(err, "%s: %s: its SwiGLU MLP's width %.0f is odd", src, a->name, width);
    if (width < 1 || width > (1 << 20))
        return vit_fail(err, "%s: %s: mlp_ratio %g gives an MLP width of %.0f", src, a->name,
                        a->mlp_ratio, width);
    return 0;
}

/* num_classes names: label_names (config.json's top level, as push_to_hf_hub writes it, over
 * pretrained_cfg's) when it has one per class, else LABEL_i. */
static int timm_labels(const cJSON *root, const cJSON *pcfg, model_config *cfg, int n,
                       const char *src, vit_error *err) {
    const cJSON *names = cJSON_GetObjectItemCaseSensitive(root, "label_names");
    if (!names) names = cJSON_GetObjectItemCaseSensitive(pcfg, "label_names");
    const int named = cJSON_IsArray(names) && cJSON_GetArraySize(names) == n;
    if (!(cfg->labels = calloc((size_t)n, sizeof *cfg->labels)))
        return vit_fail(err, "%s: out of memory", src);
    cfg->num_labels = n;
    for (int i = 0; i < n; i++) {
        const cJSON *s = named ? cJSON_GetArrayItem(names, i) : NULL;
        char name[32];
        snprintf(name, sizeof name, "LABEL_%d", i);
        if (s && !cJSON_IsString(s))
            return vit_fail(err, "%s: label_names[%d] must be a string", src, i);
        if (!(cfg->labels[i] = strdup(s ? s->valuestring : name)))
            return vit_fail(err, "%s: out of memory", src);
    }
    return 0;
}

/* The registration named name, refused when vit cannot run it. */
static int get_arch(const char *name, timm_model *t, const char *src, vit_error *err) {
    const timm_arch *a = find_arch(name);
    if (!a)
        return vit_fail(err,
                        "%s: architecture '%s' is not a timm VisionTransformer vit knows (the "
                        "registrations of timm's vision_transformer.py and deit.py)",
                        src, name);
    if (*a->why) return vit_fail(err, "%s: timm's %s: vit does not run %s", src, name, a->why);
    *t = (timm_model){.a = *a, .img_h = -1, .img_w = -1, .in_chans = -1, .num_classes = -1};
    snprintf(t->pool, sizeof t->pool, "%s", a->global_pool);
    return 0;
}

static void set_config(const timm_model *t, model_config *cfg) {
    const timm_arch *a = &t->a;
    memset(cfg, 0, sizeof *cfg);
    cfg->kind = MODEL_VIT;
    cfg->family = FAMILY_TIMM;
    snprintf(cfg->timm_arch, sizeof cfg->timm_arch, "%s", a->name);
    cfg->hidden_size = a->embed_dim;
    cfg->num_layers = a->depth;
    cfg->num_heads = a->num_heads;
    cfg->intermediate_size = (int)floor(a->embed_dim * a->mlp_ratio); /* Mlp: int(dim * ratio) */
    /* SwiGLUPacked: fc1 of that width, halves silu-gated, fc2 from half of it */
    cfg->use_swiglu = a->act == ACT_SWIGLU;
    if (cfg->use_swiglu) cfg->intermediate_size /= 2;
    cfg->mlp_ratio = a->mlp_ratio;
    cfg->act = a->act;
    cfg->layer_norm_eps = a->eps;
    cfg->image_size = t->img_h, cfg->image_width = t->img_w;
    cfg->patch_size = a->patch_size;
    cfg->num_channels = t->in_chans;
    cfg->qkv_bias = a->qkv_bias;
    cfg->layer_scale = a->layer_scale;
    cfg->num_registers = a->reg_tokens;
    cfg->timm_class_token = a->class_token;
    cfg->timm_no_embed_class = a->no_embed_class;
    cfg->timm_pre_norm = a->pre_norm;
    cfg->timm_reg_pos = a->reg_tokens > 0 && !a->no_embed_class;
    cfg->bare = t->num_classes == 0; /* head Identity: the pooled features are the output */
}

int config_timm_parse(const cJSON *root, model_config *cfg, const char *src, vit_error *err) {
    const cJSON *pcfg = cJSON_GetObjectItemCaseSensitive(root, "pretrained_cfg");
    if (!pcfg) pcfg = root; /* timm's older single-dict config.json */
    if (!cJSON_IsObject(pcfg))
        return vit_fail(err, "%s: field 'pretrained_cfg' must be an object", src);
    timm_model t;
    const char *name = cJSON_GetObjectItemCaseSensitive(root, "architecture")->valuestring;
    if (get_arch(name, &t, src, err) ||
        apply_model_args(cJSON_GetObjectItemCaseSensitive(root, "model_args"), &t, src, err) ||
        pretrained_defaults(root, pcfg, &t, src, err) || check_shape(&t, src, err))
        return -1;
    set_config(&t, cfg);
    if (resolve_pool(&t, cfg, src, err) != 0) return -1;
    return t.num_classes ? timm_labels(root, pcfg, cfg, t.num_classes, src, err)
                         : config_dim_labels(cfg, cfg->hidden_size, src, err);
}

void config_timm_options(const model_config *c, tower_options *o) {
    /* registers with positions (no_embed_class false) are special tokens to the encoder: after
     * the class token, each with its position row, as [cls, reg, patches] + pos_embed */
    o->special = c->timm_class_token + (c->timm_reg_pos ? c->num_registers : 0);
    o->registers = c->timm_reg_pos ? 0 : c->num_registers;
    o->patch_bias = !c->timm_pre_norm; /* timm's PatchEmbed: bias=not pre_norm */
    o->embed_norm = c->timm_pre_norm;  /* norm_pre */
    o->abs_pos = 1;
    o->layer_scale = c->layer_scale;
    o->swiglu = c->use_swiglu;
    o->key_bias = 1; /* qkv_bias: all three or none */
    o->pool = c->timm_pool;
    o->head = c->bare ? HEAD_NONE : HEAD_CLASSIFIER;
}

int config_timm_tower(const char *name, const cJSON *model_args, int img_size, int num_classes,
                      const char *pool, int reset, model_config *cfg, const char *src,
                      vit_error *err) {
    timm_model t;
    if (get_arch(name, &t, src, err) != 0) return -1;
    t.img_h = t.img_w = img_size, t.in_chans = 3;
    if (apply_model_args(model_args, &t, src, err) != 0) return -1;
    t.num_classes = num_classes; /* the caller's, over model_args' (create_model's keyword) */
    /* reset_classifier changes the pooling after construction, where fc_norm was decided */
    if (reset && t.a.fc_norm < 0) t.a.fc_norm = strcmp(t.pool, "avg") == 0;
    if (pool) snprintf(t.pool, sizeof t.pool, "%s", pool);
    if (check_shape(&t, src, err) != 0) return -1;
    set_config(&t, cfg);
    return resolve_pool(&t, cfg, src, err);
}
