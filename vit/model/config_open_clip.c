/* open_clip's folders (issue 41): open_clip_config.json {"model_cfg": {embed_dim, vision_cfg,
 * text_cfg, quick_gelu, init_logit_bias, ...}, "preprocess_cfg": {...}} beside
 * open_clip_model.safetensors, as open_clip's push_to_hf_hub writes them (LAION's, DataComp's
 * CLIPs). The model is a CLIP (FAMILY_CLIP): open_clip's VisionTransformer and TextTransformer are
 * CLIP's towers under other names (params.c's layout_open_clip_*). Read as open_clip's factory
 * builds the model (src/open_clip/model.py CLIPVisionCfg, CLIPTextCfg, _build_vision_tower,
 * _build_text_tower; transformer.py); what the one encoder does not run is refused by name. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "vit/base/json.h"
#include "vit/model/config.h"

/* Keys that change only training, what a forward returns beside the embedding, or fields that
 * are read only in a mode the other keys have ruled out (timm's when there is no timm tower,
 * the modern text tower's, the HF text tower's): no effect on the features vit computes. */
static const char *const ignored_keys[] = {"patch_dropout",
                                           "output_tokens",
                                           "final_ln_after_pool",
                                           "attn_pooler_queries",
                                           "attn_pooler_heads",
                                           "image_seq_len",
                                           "hf_model_pretrained",
                                           "hf_proj_type",
                                           "hf_pooler_type",
                                           "hf_model_config",
                                           "pad_id",
                                           "bos_id",
                                           "tiktoken_name",
                                           "attention_mode",
                                           "pos_embed",
                                           "rope_temperature",
                                           "mlp_type",
                                           "norm_type",
                                           "norm_eps",
                                           "attn_gated",
                                           "pre_norm",
                                           "norm_placement",
                                           "zero_init_residual",
                                           "reg_tokens",
                                           "value_residual",
                                           "attention_bias",
                                           "mlp_bias",
                                           "gate_bias",
                                           "use_pad_mask",
                                           "correct_cls_mask",
                                           "freeze_output"};

/* Keys vit runs only at open_clip's default: false (the custom attention blocks, the
 * attentional pooler, a class embedding in the text, bidirectional text, older versions'
 * patch norm and average pool). */
static const char *const false_keys[] = {"qk_norm",          "scaled_cosine_attn", "scale_heads",
                                         "scale_attn_inner", "scale_attn",         "scale_fc",
                                         "attentional_pool", "embed_cls",          "variable_text",
                                         "input_patchnorm",  "global_average_pool"};

/* Keys read below (sizes, pooling, projection, norms). */
static const char *const read_keys[] = {"layers",
                                        "width",
                                        "head_width",
                                        "heads",
                                        "mlp_ratio",
                                        "patch_size",
                                        "image_size",
                                        "context_length",
                                        "vocab_size",
                                        "ls_init_value",
                                        "no_ln_pre",
                                        "pos_embed_type",
                                        "pool_type",
                                        "no_causal_mask",
                                        "eos_id",
                                        "proj_bias",
                                        "proj_type",
                                        "act_kwargs",
                                        "norm_kwargs",
                                        "block_type",
                                        "timm_model_name",
                                        "hf_model_name",
                                        "text_arch",
                                        "tokenizer_kwargs",
                                        "hf_tokenizer_name",
                                        "tokenizer_mode",
                                        "tokenizer_type",
                                        "timm_pool",
                                        "timm_proj",
                                        "timm_proj_bias",
                                        "timm_model_kwargs",
                                        "timm_model_pretrained",
                                        "timm_drop",
                                        "timm_drop_path"};

static int in_list(const char *key, const char *const *list, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (strcmp(key, list[i]) == 0) return 1;
    return 0;
}
#define IN(key, list) in_list(key, list, sizeof list / sizeof list[0])

/* Every key of a tower's cfg is one vit knows, and the false ones are false. */
static int check_keys(const cJSON *t, const char *src, vit_error *err) {
    const cJSON *item;
    cJSON_ArrayForEach(item, t) {
        const char *k = item->string;
        if (IN(k, false_keys)) {
            if (!cJSON_IsFalse(item) && !cJSON_IsNull(item))
                return vit_fail(err, "%s: field '%s' asks for what vit does not run", src, k);
        } else if (!IN(k, ignored_keys) && !IN(k, read_keys)) {
            return vit_fail(err, "%s: field '%s' is not one vit reads", src, k);
        }
    }
    return 0;
}

/* A string field at one of the values vit runs (absent or null: the first). */
static int string_is(const cJSON *t, const char *key, const char *a, const char *b, const char *src,
                     vit_error *err) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(t, key);
    if (!v || cJSON_IsNull(v)) return 0;
    if (cJSON_IsString(v) &&
        (strcmp(v->valuestring, a) == 0 || (b && strcmp(v->valuestring, b) == 0)))
        return 0;
    return vit_fail(err, "%s: field '%s' is %s%s%s; vit runs '%s'%s%s%s", src, key,
                    cJSON_IsString(v) ? "'" : "",
                    cJSON_IsString(v) ? v->valuestring : "not a string",
                    cJSON_IsString(v) ? "'" : "", a, b ? " and '" : "", b ? b : "", b ? "'" : "");
}

/* act_kwargs, the activation's arguments (open_clip: partial(act_layer, **act_kwargs)): none, or
 * nn.GELU's approximate 'none' or 'tanh' (the SigLIP 2 exports' text towers); QuickGELU takes
 * none. */
static int act_kwargs(const cJSON *t, model_config *cfg, const char *src, vit_error *err) {
    const cJSON *act = cJSON_GetObjectItemCaseSensitive(t, "act_kwargs"), *item;
    if (!act || cJSON_IsNull(act) || (cJSON_IsObject(act) && !act->child)) return 0;
    if (!cJSON_IsObject(act) || cfg->act != ACT_GELU)
        return vit_fail(err, "%s: field 'act_kwargs': vit runs %s without arguments", src,
                        cfg->act == ACT_GELU ? "nn.GELU" : "QuickGELU");
    cJSON_ArrayForEach(item, act) {
        if (strcmp(item->string, "approximate") != 0)
            return vit_fail(err, "%s: field 'act_kwargs.%s' is not one vit reads (approximate is)",
                            src, item->string);
    }
    if (string_is(act, "approximate", "none", "tanh", src, err)) return -1;
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(act, "approximate");
    if (cJSON_IsString(a) && strcmp(a->valuestring, "tanh") == 0) cfg->act = ACT_GELU_TANH;
    return 0;
}

/* norm_kwargs {eps} (LayerNorm's 1e-5 otherwise); act_kwargs. */
static int norm_and_act(const cJSON *t, model_config *cfg, const char *src, vit_error *err) {
    const cJSON *norm = cJSON_GetObjectItemCaseSensitive(t, "norm_kwargs"), *item;
    if (act_kwargs(t, cfg, src, err) != 0) return -1;
    if (!norm || cJSON_IsNull(norm)) return 0;
    if (!cJSON_IsObject(norm))
        return vit_fail(err, "%s: field 'norm_kwargs' must be an object", src);
    cJSON_ArrayForEach(item, norm) if (strcmp(item->string, "eps") != 0) return vit_fail(
        err, "%s: field 'norm_kwargs.%s' is not one vit reads (eps is)", src, item->string);
    double eps = cfg->layer_norm_eps;
    if (json_get_number(norm, "eps", 1e-30, 1, &eps, src, err) != 0) return -1;
    cfg->layer_norm_eps = (float)eps;
    return 0;
}

/* What both towers share: the blocks' sizes, layer scale, norms, activation. heads: the text's
 * "heads", or the image's width / head_width. */
static int tower_common(const cJSON *t, model_config *cfg, int image, const char *src,
                        vit_error *err) {
    double ratio = 4.0;
    int head_width = 64;
    if (check_keys(t, src, err) ||
        json_get_int(t, "width", 1, 1 << 16, &cfg->hidden_size, src, err) ||
        json_get_number(t, "mlp_ratio", 1e-6, 1e6, &ratio, src, err) ||
        (image ? json_get_int(t, "head_width", 1, 1 << 16, &head_width, src, err)
               : json_get_int(t, "heads", 1, 4096, &cfg->num_heads, src, err)) ||
        string_is(t, "block_type", "default", NULL, src, err) || norm_and_act(t, cfg, src, err))
        return -1;
    const cJSON *layers = cJSON_GetObjectItemCaseSensitive(t, "layers");
    if (cJSON_IsArray(layers))
        return vit_fail(err,
                        "%s: field 'layers' is a list: a ModifiedResNet image tower, not one "
                        "vit runs",
                        src);
    if (json_get_int(t, "layers", 1, 1000, &cfg->num_layers, src, err)) return -1;
    if (image) cfg->num_heads = cfg->hidden_size / head_width; /* open_clip's vision_heads */
    if (cfg->num_heads < 1 || cfg->hidden_size % cfg->num_heads != 0)
        return vit_fail(err, "%s: width %d does not split into %d heads", src, cfg->hidden_size,
                        cfg->num_heads);
    cfg->intermediate_size = (int)floor(cfg->hidden_size * ratio); /* int(d_model * mlp_ratio) */
    if (cfg->intermediate_size < 1 || cfg->intermediate_size > (1 << 20))
        return vit_fail(err, "%s: mlp_ratio %g gives an MLP width of %d", src, ratio,
                        cfg->intermediate_size);
    const cJSON *ls = cJSON_GetObjectItemCaseSensitive(t, "ls_init_value");
    cfg->layer_scale = ls && !cJSON_IsNull(ls); /* LayerScale's gamma: ls_1, ls_2 */
    return 0;
}

/* image_size: an int or a square [h, w] (the joint towers run square images). */
static int image_size(const cJSON *t, model_config *cfg, const char *src, vit_error *err) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(t, "image_size");
    if (cJSON_IsArray(v) && cJSON_GetArraySize(v) == 2 && cJSON_IsNumber(v->child) &&
        cJSON_IsNumber(v->child->next) && v->child->valuedouble == v->child->next->valuedouble) {
        cfg->image_size = cfg->image_width = v->child->valueint;
        return cfg->image_size >= 1 && cfg->image_size <= 65536 &&
                       v->child->valuedouble == cfg->image_size
                   ? 0
                   : vit_fail(err, "%s: field 'image_size' must be an integer", src);
    }
    if (cJSON_IsArray(v))
        return vit_fail(err, "%s: field 'image_size' is not square: not one vit runs", src);
    if (json_get_int(t, "image_size", 1, 65536, &cfg->image_size, src, err)) return -1;
    cfg->image_width = cfg->image_size;
    return 0;
}

/* A string field: absent gives fallback, null or "" gives "" (open_clip tests them as false). */
static int get_string(const cJSON *t, const char *key, const char *fallback, const char **out,
                      const char *src, vit_error *err) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(t, key);
    *out = !v ? fallback : cJSON_IsString(v) ? v->valuestring : "";
    if (v && !cJSON_IsNull(v) && !cJSON_IsString(v))
        return vit_fail(err, "%s: field '%s' must be a string", src, key);
    return 0;
}

/* timm_proj: 'linear' (head.proj: nn.Linear to embed_dim, a bias with timm_proj_bias), 'none'
 * (the trunk's pooled features are the embedding), unset (the trunk's own classifier, embed_dim
 * wide); 'mlp' is refused. */
static int timm_projection(const cJSON *t, model_config *cfg, const char *src, vit_error *err) {
    const char *proj;
    if (get_string(t, "timm_proj", "linear", &proj, src, err) ||
        json_get_bool(t, "timm_proj_bias", &cfg->oc_proj_bias, src, err))
        return -1;
    cfg->oc_timm = !strcmp(proj, "linear") ? OC_TIMM_PROJ
                   : !strcmp(proj, "none") ? OC_TIMM_NONE
                   : !*proj                ? OC_TIMM_TRUNK_HEAD
                                           : OC_TIMM_NO;
    if (cfg->oc_timm == OC_TIMM_NO)
        return vit_fail(err, "%s: timm_proj '%s' is not one vit runs (linear, none, unset)", src,
                        proj);
    return 0;
}

/* open_clip's TimmModel (timm_model.py): timm.create_model(timm_model_name, **timm_model_kwargs)
 * with, without an extra projection, num_classes (embed_dim, or 0 for 'none') and global_pool
 * timm_pool; with one, the trunk's classifier removed (its pooling timm_pool when set) and
 * head.proj after it. open_clip does not pass image_size to timm: the trunk's size is its
 * pretrained_cfg's, which this folder does not hold; image_size stands for it (the preprocessing's
 * size; the weights' positions are checked against it at load). */
static int timm_tower(const cJSON *t, model_config *cfg, int dim, const char *src, vit_error *err) {
    const model_config keep = *cfg; /* model_fields' settings */
    const char *name, *pool;
    const cJSON *kw = cJSON_GetObjectItemCaseSensitive(t, "timm_model_kwargs");
    if (check_keys(t, src, err) || image_size(t, cfg, src, err) ||
        get_string(t, "timm_model_name", "", &name, src, err) ||
        get_string(t, "timm_pool", "avg", &pool, src, err) || timm_projection(t, cfg, src, err))
        return -1;
    if (!strcmp(pool, "abs_attn") || !strcmp(pool, "rot_attn") || !strcmp(pool, "attn"))
        return vit_fail(err,
                        "%s: timm_pool '%s' (open_clip's own attention pool) is not one vit "
                        "runs",
                        src, pool);
    const int oc_timm = cfg->oc_timm, bias = cfg->oc_proj_bias, extra = oc_timm == OC_TIMM_PROJ;
    if (!extra && !*pool)
        return vit_fail(err, "%s: timm_pool '' leaves the trunk unpooled: not one vit runs", src);
    char where[4300]; /* the model_args reader names its keys 'model_args.KEY' */
    snprintf(where, sizeof where, "%s (timm_model_kwargs as timm's model_args)", src);
    if (config_timm_tower(name, kw, cfg->image_size, oc_timm == OC_TIMM_TRUNK_HEAD ? dim : 0,
                          *pool ? pool : NULL, extra, cfg, where, err) != 0)
        return -1;
    if (oc_timm == OC_TIMM_NONE && cfg->hidden_size != dim)
        return vit_fail(err, "%s: timm_proj 'none': the trunk's %d features are not embed_dim %d",
                        src, cfg->hidden_size, dim);
    cfg->family = FAMILY_CLIP, cfg->open_clip = 1, cfg->oc_timm = oc_timm;
    cfg->oc_proj_bias = bias, cfg->oc_custom_text = keep.oc_custom_text;
    cfg->oc_scale_ndim = keep.oc_scale_ndim, cfg->oc_logit_bias = keep.oc_logit_bias;
    cfg->bare = 0;
    return 0;
}

static int vision_tower(const cJSON *t, model_config *cfg, int dim, const char *src,
                        vit_error *err) {
    const cJSON *timm = cJSON_GetObjectItemCaseSensitive(t, "timm_model_name");
    if (timm && !cJSON_IsNull(timm)) return timm_tower(t, cfg, dim, src, err);
    cfg->hidden_size = 768, cfg->patch_size = 16, cfg->image_size = cfg->image_width = 224;
    int no_ln_pre = 0;
    if (tower_common(t, cfg, 1, src, err) || image_size(t, cfg, src, err) ||
        json_get_int(t, "patch_size", 1, 65536, &cfg->patch_size, src, err) ||
        json_get_bool(t, "no_ln_pre", &no_ln_pre, src, err) ||
        /* sin_cos_2d positions are a parameter too (frozen), in the weights as learned ones */
        string_is(t, "pos_embed_type", "learnable", "sin_cos_2d", src, err) ||
        string_is(t, "pool_type", "tok", NULL, src, err))
        return -1;
    cfg->oc_ln_pre = !no_ln_pre;
    if (cfg->patch_size > cfg->image_size || cfg->image_size / cfg->patch_size > CONFIG_MAX_GRID)
        return vit_fail(err, "%s: patch_size %d does not fit image_size %d", src, cfg->patch_size,
                        cfg->image_size);
    return 0;
}

/* 'last' with no_causal_mask (SigLIP's exports): every text padded to context_length, attended
 * to whole, the last row pooled: vit_text.c's POOL_LAST run. Either alone is refused: the causal
 * 'last' and the unmasked argmax or eos would need other runs than the ones vit has. */
static int text_pool_last(const cJSON *t, const char *pool, model_config *cfg, const char *src,
                          vit_error *err) {
    int no_causal = 0;
    if (json_get_bool(t, "no_causal_mask", &no_causal, src, err)) return -1;
    if (no_causal != (strcmp(pool, "last") == 0))
        return vit_fail(
            err,
            "%s: text pool_type '%s' with no_causal_mask %s is not one vit runs ('last' "
            "only without the causal mask, argmax and eos only with it)",
            src, pool, no_causal ? "true" : "false");
    cfg->oc_text_pool = POOL_LAST;
    return 0;
}

/* text_global_pool: 'argmax' (the end token is the largest id: CLIP's BPE), 'eos' (the first
 * eos_id) or 'last' (text_pool_last); 'first' is refused. */
static int text_pool(const cJSON *t, model_config *cfg, const char *src, vit_error *err) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(t, "pool_type");
    const char *pool = cJSON_IsString(v) ? v->valuestring : "argmax";
    if (v && !cJSON_IsNull(v) && !cJSON_IsString(v))
        return vit_fail(err, "%s: field 'pool_type' must be a string", src);
    if (text_pool_last(t, pool, cfg, src, err) != 0) return -1;
    if (strcmp(pool, "last") == 0) return 0;
    cfg->oc_text_pool = POOL_EOS_MAX;
    if (strcmp(pool, "argmax") == 0) return 0;
    if (strcmp(pool, "eos") != 0)
        return vit_fail(err, "%s: text pool_type '%s' is not one vit runs (argmax, eos, last)", src,
                        pool);
    cfg->oc_text_pool = POOL_EOS;
    cfg->eos_token_id = -1;
    if (json_get_int(t, "eos_id", 0, 1 << 24, &cfg->eos_token_id, src, err)) return -1;
    return cfg->eos_token_id >= 0
               ? 0
               : vit_fail(err, "%s: pool_type 'eos' without eos_id (open_clip requires it)", src);
}

/* tokenizer_kwargs: SimpleTokenizer's {"clean": "lower"} (its own cleaning), or an
 * HFTokenizer's {"clean": "canonicalize"}; nothing else (HFTokenizer's default 'whitespace',
 * strip_sep_token, language) is followed. */
static int tokenizer_kwargs(const cJSON *t, int hf, const char *src, vit_error *err) {
    const cJSON *kw = cJSON_GetObjectItemCaseSensitive(t, "tokenizer_kwargs"), *item;
    const char *clean = hf ? "canonicalize" : "lower";
    int cleaned = 0;
    if (kw && !cJSON_IsNull(kw) && !cJSON_IsObject(kw))
        return vit_fail(err, "%s: field 'tokenizer_kwargs' must be an object", src);
    const cJSON *fields = cJSON_IsObject(kw) ? kw : NULL;
    cJSON_ArrayForEach(item, fields) {
        if (strcmp(item->string, "clean") != 0 || !cJSON_IsString(item) ||
            strcmp(item->valuestring, clean) != 0)
            return vit_fail(err,
                            "%s: field 'tokenizer_kwargs.%s' is not one vit follows (%s cleans "
                            "as '%s')",
                            src, item->string,
                            hf ? "with hf_tokenizer_name vit" : "the folder's CLIP tokenizer",
                            clean);
        cleaned = 1;
    }
    if (hf && !cleaned)
        return vit_fail(err,
                        "%s: hf_tokenizer_name without tokenizer_kwargs {\"clean\": "
                        "\"canonicalize\"}: HFTokenizer's 'whitespace' cleaning is not one vit "
                        "follows",
                        src);
    return 0;
}

/* open_clip's SimpleTokenizer (CLIP's BPE, the folder's vocab.json and merges.txt), or with
 * hf_tokenizer_name its HFTokenizer, whose tokenizer the folder's files stand for (the exports
 * name their own repository); tokenizer_mode 'clips' is refused. */
static int tokenizer_fields(const cJSON *t, model_config *cfg, const char *src, vit_error *err) {
    const cJSON *hf = cJSON_GetObjectItemCaseSensitive(t, "hf_tokenizer_name");
    if (hf && !cJSON_IsNull(hf) && !cJSON_IsString(hf))
        return vit_fail(err, "%s: field 'hf_tokenizer_name' must be a string", src);
    cfg->oc_hf_tokenizer = hf && !cJSON_IsNull(hf);
    if (string_is(t, "tokenizer_mode", "", NULL, src, err)) return -1;
    if (string_is(t, "tokenizer_type", "", "clip", src, err)) return -1;
    return tokenizer_kwargs(t, cfg->oc_hf_tokenizer, src, err);
}

static int text_tower(const cJSON *t, model_config *cfg, const char *src, vit_error *err) {
    const cJSON *hf = cJSON_GetObjectItemCaseSensitive(t, "hf_model_name");
    if (hf && !cJSON_IsNull(hf))
        return vit_fail(err,
                        "%s: a Hugging Face text tower (hf_model_name '%s') is not one vit "
                        "runs in an open_clip folder",
                        src, cJSON_IsString(hf) ? hf->valuestring : "?");
    cfg->hidden_size = 512, cfg->num_heads = 8;
    cfg->vocab_size = 49408, cfg->max_position_embeddings = 77;
    cfg->eos_token_id = 49407; /* CLIP's <|endoftext|> (argmax pooling does not read it) */
    if (string_is(t, "text_arch", "clip", NULL, src, err) || tower_common(t, cfg, 0, src, err) ||
        json_get_int(t, "context_length", 1, 1 << 16, &cfg->max_position_embeddings, src, err) ||
        json_get_int(t, "vocab_size", 1, 1 << 24, &cfg->vocab_size, src, err) ||
        json_get_bool(t, "proj_bias", &cfg->oc_proj_bias, src, err) ||
        string_is(t, "proj_type", "linear", NULL, src, err) || text_pool(t, cfg, src, err) ||
        tokenizer_fields(t, cfg, src, err))
        return -1;
    return 0;
}

/* model_cfg's own keys: what a CLIP (or CustomTextCLIP) is built from; the other model classes
 * (CoCa, CLAP, GenLIP) are refused. */
static int model_keys(const cJSON *mc, const char *src, vit_error *err) {
    static const char *const known[] = {
        "embed_dim",        "vision_cfg",      "text_cfg",    "quick_gelu",
        "init_logit_scale", "init_logit_bias", "custom_text", "nonscalar_logit_scale",
        "cast_dtype",       "output_dict"};
    const cJSON *item;
    cJSON_ArrayForEach(item, mc) if (!IN(item->string, known)) return vit_fail(
        err, "%s: field 'model_cfg.%s' is not one vit reads (it runs open_clip's CLIP)", src,
        item->string);
    return 0;
}

static const cJSON *sub_object(const cJSON *o, const char *key, const char *src, vit_error *err) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    static const cJSON empty = {.type = cJSON_Object};
    if (!v || cJSON_IsNull(v)) return &empty; /* every field at its default */
    if (!cJSON_IsObject(v))
        return vit_fail(err, "%s: field '%s' must be an object", src, key), NULL;
    return v;
}

/* The model-wide fields: embed_dim, quick_gelu, the scores' scale and bias, the text's prefix. */
static int model_fields(const cJSON *mc, model_config *cfg, int *dim, const char *src,
                        vit_error *err) {
    int quick = 0, nonscalar = 0;
    const cJSON *bias = cJSON_GetObjectItemCaseSensitive(mc, "init_logit_bias");
    *dim = 0;
    if (model_keys(mc, src, err) || json_get_int(mc, "embed_dim", 1, 1 << 20, dim, src, err) ||
        json_get_bool(mc, "quick_gelu", &quick, src, err) ||
        json_get_bool(mc, "custom_text", &cfg->oc_custom_text, src, err) ||
        json_get_bool(mc, "nonscalar_logit_scale", &nonscalar, src, err))
        return -1;
    if (*dim == 0) return vit_fail(err, "%s: model_cfg has no embed_dim", src);
    cfg->act = quick ? ACT_QUICK_GELU : ACT_GELU; /* QuickGELU, else nn.GELU (erf) */
    cfg->oc_scale_ndim = nonscalar;
    cfg->oc_logit_bias = bias && !cJSON_IsNull(bias);
    return 0;
}

int config_open_clip_parse(const cJSON *root, config_tower tower, model_config *cfg,
                           const char *src, vit_error *err) {
    const cJSON *mc = cJSON_GetObjectItemCaseSensitive(root, "model_cfg");
    if (!cJSON_IsObject(mc))
        return vit_fail(err, "%s: no 'model_cfg' object (open_clip requires one)", src);
    memset(cfg, 0, sizeof *cfg);
    cfg->family = FAMILY_CLIP;
    cfg->open_clip = 1;
    cfg->kind = tower == TOWER_TEXT ? MODEL_TEXT : MODEL_VIT;
    cfg->arch = ARCH_VIT;
    cfg->num_channels = 3, cfg->qkv_bias = 1, cfg->type_vocab_size = 1;
    cfg->num_layers = 12;
    cfg->layer_norm_eps = 1e-5f; /* nn.LayerNorm's */
    int dim;
    if (model_fields(mc, cfg, &dim, src, err) != 0) return -1;
    const int text = cfg->kind == MODEL_TEXT;
    const cJSON *t = sub_object(mc, text ? "text_cfg" : "vision_cfg", src, err);
    char where[4200];
    snprintf(where, sizeof where, "%s (model_cfg.%s)", src, text ? "text_cfg" : "vision_cfg");
    if (!t || (text ? text_tower(t, cfg, where, err) : vision_tower(t, cfg, dim, where, err)) != 0)
        return -1;
    return config_dim_labels(cfg, dim, src, err);
}

void config_open_clip_options(const model_config *c, tower_options *o) {
    o->joint = 1;
    o->joint_sigmoid = c->oc_logit_bias; /* SigLIP-style: each score through a sigmoid */
    o->layer_scale = c->layer_scale;
    if (c->kind == MODEL_VIT && c->oc_timm) { /* the timm trunk, then TimmModel's head */
        config_timm_options(c, o);
        o->joint = 1;
        o->joint_sigmoid = c->oc_logit_bias;
        o->head = c->oc_timm == OC_TIMM_NONE                       ? HEAD_NONE
                  : c->oc_timm == OC_TIMM_PROJ && !c->oc_proj_bias ? HEAD_PROJECTION
                                                                   : HEAD_LINEAR;
        return;
    }
    if (c->kind == MODEL_VIT) {
        o->special = 1;    /* class_embedding */
        o->patch_bias = 0; /* conv1 has none */
        o->embed_norm = c->oc_ln_pre;
        o->abs_pos = o->key_bias = 1;
        o->pool = POOL_CLS; /* 'tok': ln_post on the class row */
        o->head = HEAD_PROJECTION;
        return;
    }
    o->causal = c->oc_text_pool != POOL_LAST; /* attn_mask, unless no_causal_mask ('last') */
    o->pool = c->oc_text_pool;
    o->head = c->oc_proj_bias ? HEAD_LINEAR : HEAD_PROJECTION;
}
