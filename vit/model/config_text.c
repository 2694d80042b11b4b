/* The text encoders beside BERT: config.json of RoBERTa, XLM-R, DistilBERT and MPNet folders
 * (transformers' configuration_*.py and modeling_*.py), each a base model, its
 * ForSequenceClassification or its ForTokenClassification class; and two long-context embedders
 * from remote code, base models only: NomicBERT (model_type nomic_bert: rotary positions, SwiGLU
 * or GeGLU, fused Wqkv, no biases; modeling_hf_nomic_bert.py, TEI's nomic.rs) and JinaBERT v2
 * (model_type bert, architectures JinaBert*: ALiBi, GeGLU, the MLP's own LayerNorm; TEI's
 * jina.rs). What they read becomes named
 * options of the one encoder and of the small parts around it (config_text_options): no family
 * test below vit/model. The tensor names of every text encoder, BERT's included, are here too
 * (config_text_names), for params.c's one text layout. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vit/base/json.h"
#include "vit/model/config.h"

enum { TEXT_ROBERTA, TEXT_XLMR, TEXT_DISTILBERT, TEXT_MPNET, TEXT_NOMIC, TEXT_JINA };

/* BERT's names, which RoBERTa and XLM-R keep (RobertaLayer is BertLayer under another name). */
#define BERT_LAYER(part) "encoder.layer.%d." part
#define BERT_NAMES                                                                                 \
    .word = "embeddings.word_embeddings", .position = "embeddings.position_embeddings",            \
    .token_type = "embeddings.token_type_embeddings", .embed_norm = "embeddings.LayerNorm",        \
    .qkv = BERT_LAYER("attention.self.%s"), .parts = {"query", "key", "value"},                    \
    .out = BERT_LAYER("attention.output.dense"),                                                   \
    .norm1 = BERT_LAYER("attention.output.LayerNorm"), .fc1 = BERT_LAYER("intermediate.dense"),    \
    .fc2 = BERT_LAYER("output.dense"), .norm2 = BERT_LAYER("output.LayerNorm"),                    \
    .pooler = "pooler.dense"

static const text_names bert_names = {BERT_NAMES, .head_dense = "pooler.dense",
                                      .head_dense_prefixed = 1, .head_out = "classifier"};
/* RobertaClassificationHead: dense, tanh, out_proj on <s> (no pooler in the classifier) */
static const text_names roberta_names = {BERT_NAMES, .head_dense = "classifier.dense",
                                         .head_out = "classifier.out_proj"};
static const text_names distilbert_names = {.word = "embeddings.word_embeddings",
                                            .position = "embeddings.position_embeddings",
                                            .embed_norm = "embeddings.LayerNorm",
                                            .qkv = "transformer.layer.%d.attention.%s",
                                            .parts = {"q_lin", "k_lin", "v_lin"},
                                            .out = "transformer.layer.%d.attention.out_lin",
                                            .norm1 = "transformer.layer.%d.sa_layer_norm",
                                            .fc1 = "transformer.layer.%d.ffn.lin1",
                                            .fc2 = "transformer.layer.%d.ffn.lin2",
                                            .norm2 = "transformer.layer.%d.output_layer_norm",
                                            .head_dense = "pre_classifier",
                                            .head_out = "classifier"};
static const text_names mpnet_names = {.word = "embeddings.word_embeddings",
                                       .position = "embeddings.position_embeddings",
                                       .embed_norm = "embeddings.LayerNorm",
                                       .qkv = "encoder.layer.%d.attention.attn.%s",
                                       .parts = {"q", "k", "v"},
                                       .out = "encoder.layer.%d.attention.attn.o",
                                       .norm1 = "encoder.layer.%d.attention.LayerNorm",
                                       .fc1 = "encoder.layer.%d.intermediate.dense",
                                       .fc2 = "encoder.layer.%d.output.dense",
                                       .norm2 = "encoder.layer.%d.output.LayerNorm",
                                       .rel_bias = "encoder.relative_attention_bias",
                                       .pooler = "pooler.dense",
                                       .head_dense = "classifier.dense",
                                       .head_out = "classifier.out_proj"};

/* NomicBertModel: Wqkv for all three, no learned positions, the MLP's fc12 (the gate: fc11 times
 * act(fc12)) then fc11 as fc1's halves; emb_ln on the embeddings; norm1, norm2 post-LN. */
static const text_names nomic_names = {
    .word = "embeddings.word_embeddings",
    .token_type = "embeddings.token_type_embeddings",
    .embed_norm = "emb_ln",
    .qkv_fused = "encoder.layers.%d.attn.Wqkv",
    .out = "encoder.layers.%d.attn.out_proj",
    .norm1 = "encoder.layers.%d.norm1",
    .fc1_parts = {"encoder.layers.%d.mlp.fc12", "encoder.layers.%d.mlp.fc11"},
    .fc2 = "encoder.layers.%d.mlp.fc2",
    .norm2 = "encoder.layers.%d.norm2",
    .pooler = "pooler.dense"};
/* JinaBertModel: BERT's attention, no learned positions, JinaBertGLUMLP's gated_layers [2I, D]
 * (its first I the gate: act(first) times the rest), wo, and its layernorm after the residual. */
static const text_names jina_names = {.word = "embeddings.word_embeddings",
                                      .token_type = "embeddings.token_type_embeddings",
                                      .embed_norm = "embeddings.LayerNorm",
                                      .qkv = BERT_LAYER("attention.self.%s"),
                                      .parts = {"query", "key", "value"},
                                      .out = BERT_LAYER("attention.output.dense"),
                                      .norm1 = BERT_LAYER("attention.output.LayerNorm"),
                                      .fc1 = BERT_LAYER("mlp.gated_layers"),
                                      .fc2 = BERT_LAYER("mlp.wo"),
                                      .norm2 = BERT_LAYER("mlp.layernorm"),
                                      .pooler = "pooler.dense",
                                      .head_dense = "pooler.dense",
                                      .head_dense_prefixed = 1,
                                      .head_out = "classifier"};

/* One row per family: model_type, the three classes (NULL: not run), another name of the base
 * model (the class a folder of embeddings names), the tensor prefix, the name for people and the
 * tensor names. */
typedef struct {
    const char *type, *base, *sequence, *token, *base_alias, *prefix, *name;
    const text_names *names;
} text_family;

static const text_family families[] = {
    [TEXT_ROBERTA] = {"roberta", "RobertaModel", "RobertaForSequenceClassification",
                      "RobertaForTokenClassification", NULL, "roberta.", "RoBERTa", &roberta_names},
    [TEXT_XLMR] = {"xlm-roberta", "XLMRobertaModel", "XLMRobertaForSequenceClassification",
                   "XLMRobertaForTokenClassification", NULL, "roberta.", "XLM-RoBERTa",
                   &roberta_names},
    [TEXT_DISTILBERT] = {"distilbert", "DistilBertModel", "DistilBertForSequenceClassification",
                         "DistilBertForTokenClassification", NULL, "distilbert.", "DistilBERT",
                         &distilbert_names},
    [TEXT_MPNET] = {"mpnet", "MPNetModel", "MPNetForSequenceClassification",
                    "MPNetForTokenClassification", NULL, "mpnet.", "MPNet", &mpnet_names},
    [TEXT_NOMIC] = {"nomic_bert", "NomicBertModel", NULL, NULL, NULL, "bert.", "NomicBERT",
                    &nomic_names},
    /* jina-embeddings-v2 name their masked-LM class; AutoModel (and sentence-transformers)
     * builds JinaBertModel from them, whose output is what vit gives. The rerankers
     * (jina-reranker-v1-*) are BertForSequenceClassification's head on it. */
    [TEXT_JINA] = {"bert", "JinaBertModel", "JinaBertForSequenceClassification", NULL,
                   "JinaBertForMaskedLM", "bert.", "JinaBERT v2", &jina_names},
};
enum { NUM_FAMILIES = sizeof families / sizeof families[0] };

static const text_family *family_of(const model_config *cfg) {
    return &families[cfg->text_arch];
}

static void set_family(model_config *cfg, int i) {
    cfg->kind = MODEL_TEXT;
    cfg->family = FAMILY_TEXT;
    cfg->text_arch = i;
}

int config_text_type_of(const cJSON *root, const char *model_type, model_config *cfg) {
    if (strcmp(model_type, "bert") != 0) return 0;
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(root, "architectures"), *item;
    if (!cJSON_IsArray(list)) return 0;
    cJSON_ArrayForEach(item, list) {
        if (cJSON_IsString(item) && strncmp(item->valuestring, "JinaBert", 8) == 0)
            return set_family(cfg, TEXT_JINA), 1;
    }
    return 0;
}

int config_text_type(const char *model_type, model_config *cfg) {
    for (int i = 0; i < NUM_FAMILIES; i++)
        if (i != TEXT_JINA && strcmp(model_type, families[i].type) == 0) {
            cfg->kind = MODEL_TEXT;
            cfg->family = FAMILY_TEXT;
            cfg->text_arch = i;
            return 1;
        }
    return 0;
}

const char *config_text_architecture(const model_config *cfg) {
    const text_family *f = family_of(cfg);
    return cfg->bare ? f->base : cfg->token_classifier ? f->token : f->sequence;
}
const char *config_text_model_type(const model_config *cfg) {
    return family_of(cfg)->type;
}
const char *config_text_name(const model_config *cfg) {
    return family_of(cfg)->name;
}
const char *config_text_prefix(const model_config *cfg) {
    return family_of(cfg)->prefix;
}

const text_names *config_text_names(const model_config *cfg) {
    return cfg->family == FAMILY_TEXT ? family_of(cfg)->names : &bert_names;
}

int config_text_max_tokens(const model_config *cfg) {
    const int skip = cfg->opt.pos_from_ids ? cfg->opt.pos_pad + 1 : 0;
    return cfg->max_position_embeddings - skip;
}

/* The class, as AutoModel / AutoModelFor...Classification would be asked for it: the first entry
 * of `architectures` naming one of the three (none at all: the base model); only other classes
 * (RobertaForMaskedLM, ...) is an error naming them. */
static int get_class(const cJSON *root, model_config *cfg, const char *src, vit_error *err) {
    const text_family *f = family_of(cfg);
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(root, "architectures"), *item;
    cfg->bare = 1;
    if (!list || cJSON_IsNull(list) || (cJSON_IsArray(list) && cJSON_GetArraySize(list) == 0))
        return 0;
    if (!cJSON_IsArray(list))
        return vit_fail(err, "%s: field 'architectures' must be a list of strings", src);
    cJSON_ArrayForEach(item, list) {
        if (!cJSON_IsString(item))
            return vit_fail(err, "%s: field 'architectures' must be a list of strings", src);
        const char *s = item->valuestring;
        const int base = strcmp(s, f->base) == 0 || (f->base_alias && !strcmp(s, f->base_alias));
        if (base || (f->sequence && strcmp(s, f->sequence) == 0) ||
            (f->token && strcmp(s, f->token) == 0)) {
            cfg->bare = base;
            cfg->token_classifier = f->token && strcmp(s, f->token) == 0;
            return 0;
        }
    }
    const char *runs[] = {f->base, f->base_alias, f->sequence, f->token};
    char list_of[256] = "";
    for (size_t i = 0, used = 0; i < 4; i++)
        if (runs[i] && used < sizeof list_of)
            used += (size_t)snprintf(list_of + used, sizeof list_of - used, "%s%s",
                                     used ? ", " : "", runs[i]);
    return vit_fail(err, "%s: architectures names %s; supported for model_type %s: %s", src,
                    cJSON_GetArrayItem(list, 0)->valuestring, f->type, list_of);
}

/* RobertaConfig / XLMRobertaConfig and MPNetConfig: BERT's keys (config_parse_common); only
 * absolute positions (RoBERTa's position_embedding_type), MPNet's 32 buckets. */
static int bert_like_fields(const cJSON *root, model_config *cfg, const char *src, vit_error *err) {
    const cJSON *pos = cJSON_GetObjectItemCaseSensitive(root, "position_embedding_type");
    if (pos && !(cJSON_IsString(pos) && strcmp(pos->valuestring, "absolute") == 0))
        return vit_fail(err, "%s: position_embedding_type %s is not one vit runs (absolute only)",
                        src, cJSON_IsString(pos) ? pos->valuestring : "(not a string)");
    if (cfg->text_arch != TEXT_MPNET) return 0;
    if (json_get_int(root, "relative_attention_num_buckets", 1, 1 << 16, &cfg->rel_buckets, src,
                     err))
        return -1;
    /* MPNetEncoder.compute_position_bias buckets with its default of 32 whatever the table
     * holds: another count would index a table of another size */
    if (cfg->rel_buckets != 32)
        return vit_fail(err,
                        "%s: relative_attention_num_buckets %d: MPNet's encoder buckets "
                        "positions into 32",
                        src, cfg->rel_buckets);
    return 0;
}

/* DistilBertConfig's own keys (dim, n_layers, n_heads, hidden_dim, activation). */
static int distilbert_fields(const cJSON *root, model_config *cfg, const char *src,
                             vit_error *err) {
    const int big = 1 << 20;
    int sinusoidal = 0;
    if (json_get_int(root, "dim", 1, big, &cfg->hidden_size, src, err) ||
        json_get_int(root, "n_layers", 1, 1000, &cfg->num_layers, src, err) ||
        json_get_int(root, "n_heads", 1, 4096, &cfg->num_heads, src, err) ||
        json_get_int(root, "hidden_dim", 1, big, &cfg->intermediate_size, src, err) ||
        json_get_bool(root, "sinusoidal_pos_embds", &sinusoidal, src, err))
        return -1;
    if (sinusoidal) return vit_fail(err, "%s: sinusoidal_pos_embds true is not one vit runs", src);
    const cJSON *act = cJSON_GetObjectItemCaseSensitive(root, "activation");
    if (act && !(cJSON_IsString(act) &&
                 (strcmp(act->valuestring, "gelu") == 0 || strcmp(act->valuestring, "relu") == 0)))
        return vit_fail(err, "%s: field 'activation' must be gelu or relu", src);
    if (act) cfg->act = strcmp(act->valuestring, "gelu") == 0 ? ACT_GELU : ACT_RELU;
    return 0;
}

/* The configuration classes' defaults where they differ from BertConfig's. */
/* sentence-transformers' CrossEncoder stores its activation_fn by its torch class path */
int config_score_activation(const cJSON *root, model_config *cfg, const char *src, vit_error *err) {
    static const struct {
        const char *path;
        score_activation act;
    } known[] = {{"torch.nn.modules.linear.Identity", SCORE_IDENTITY},
                 {"torch.nn.modules.activation.Sigmoid", SCORE_SIGMOID},
                 {"torch.nn.modules.activation.Tanh", SCORE_TANH}};
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(root, "sentence_transformers");
    const cJSON *fn = cJSON_GetObjectItemCaseSensitive(st, "activation_fn");
    if (!fn) fn = cJSON_GetObjectItemCaseSensitive(root, "sbert_ce_default_activation_function");
    cfg->score_act = SCORE_DEFAULT;
    if (!fn || cJSON_IsNull(fn)) return 0;
    for (size_t i = 0; cJSON_IsString(fn) && i < sizeof known / sizeof *known; i++)
        if (strcmp(fn->valuestring, known[i].path) == 0) return cfg->score_act = known[i].act, 0;
    return vit_fail(err, "%s: activation_fn %s is not one vit follows (Identity, Sigmoid, Tanh)",
                    src, cJSON_IsString(fn) ? fn->valuestring : "(not a string)");
}

/* A field whose every set value (not null, false or 0) is a variant vit does not run: refused by
 * name and value. */
static int refuse_set(const cJSON *root, const char *key, const char *what, const char *src,
                      vit_error *err) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!v || cJSON_IsNull(v) || cJSON_IsFalse(v) || (cJSON_IsNumber(v) && v->valuedouble == 0))
        return 0;
    char *text = cJSON_PrintUnformatted(v);
    vit_fail(err, "%s: %s %s: %s is not done", src, key, text ? text : "(set)", what);
    free(text);
    return -1;
}

/* NomicBERT's variants vit does not run, each refused by its field. */
static int nomic_refusals(const cJSON *root, const char *src, vit_error *err) {
    static const struct {
        const char *key, *what;
    } fields[] = {
        {"prenorm", "a pre-LN NomicBERT"},
        {"rotary_scaling_factor", "dynamic NTK scaling of the rotary base"},
        {"rotary_emb_scale_base", "XPos scaling of the rotary embeddings"},
        {"rotary_head_dim", "rotary over the head axis (xformers' layout)"},
        {"use_rms_norm", "RMSNorm"},
        {"parallel_block", "attention and MLP in parallel"},
        {"causal", "a causal NomicBERT"},
        {"num_experts", "a mixture of experts (nomic-embed-text-v2-moe)"},
        {"moe_every_n_layers", "a mixture of experts (nomic-embed-text-v2-moe)"},
    };
    for (size_t i = 0; i < sizeof fields / sizeof *fields; i++)
        if (refuse_set(root, fields[i].key, fields[i].what, src, err)) return -1;
    return 0;
}

/* NomicBertConfig: GPT2Config's n_embd, n_head, n_layer, n_inner, n_positions,
 * layer_norm_epsilon, activation_function, and its own rotary and bias keys (its defaults where
 * absent). */
static int nomic_fields(const cJSON *root, model_config *cfg, const char *src, vit_error *err) {
    const int big = 1 << 20;
    int inner = 0, multiple = 1, interleaved = 0, qkv_bias = 1, fc1_bias = 1, fc2_bias = 1;
    double fraction = 0, base = 10000, eps = 1e-5;
    if (nomic_refusals(root, src, err) ||
        json_get_int(root, "n_embd", 1, big, &cfg->hidden_size, src, err) ||
        json_get_int(root, "n_head", 1, 4096, &cfg->num_heads, src, err) ||
        json_get_int(root, "n_layer", 1, 1000, &cfg->num_layers, src, err) ||
        json_get_int(root, "n_inner", 1, big, &inner, src, err) ||
        json_get_int(root, "n_positions", 2, big, &cfg->max_position_embeddings, src, err) ||
        json_get_int(root, "vocab_size", 1, 1 << 24, &cfg->vocab_size, src, err) ||
        json_get_int(root, "type_vocab_size", 0, 1 << 16, &cfg->type_vocab_size, src, err) ||
        json_get_int(root, "pad_vocab_size_multiple", 1, 1 << 16, &multiple, src, err) ||
        json_get_number(root, "layer_norm_epsilon", 1e-30, 1, &eps, src, err) ||
        json_get_number(root, "rotary_emb_fraction", 0, 1, &fraction, src, err) ||
        json_get_number(root, "rotary_emb_base", 1e-30, 1e30, &base, src, err) ||
        json_get_bool(root, "rotary_emb_interleaved", &interleaved, src, err) ||
        json_get_bool(root, "qkv_proj_bias", &qkv_bias, src, err) ||
        json_get_bool(root, "mlp_fc1_bias", &fc1_bias, src, err) ||
        json_get_bool(root, "mlp_fc2_bias", &fc2_bias, src, err))
        return -1;
    const cJSON *act = cJSON_GetObjectItemCaseSensitive(root, "activation_function");
    const char *a = cJSON_IsString(act) ? act->valuestring : "gelu_new"; /* GPT2Config's */
    if (strcmp(a, "swiglu") != 0 && strcmp(a, "geglu") != 0)
        return vit_fail(err,
                        "%s: activation_function %s: vit runs NomicBERT's gated MLPs (swiglu, "
                        "geglu)",
                        src, a);
    cfg->act = a[1] == 'w' ? ACT_SWIGLU : ACT_GEGLU;
    if (cfg->hidden_size % cfg->num_heads != 0)
        return vit_fail(err, "%s: n_embd %d is not divisible by n_head %d", src, cfg->hidden_size,
                        cfg->num_heads);
    /* rotary_emb_dim = head_dim · fraction, pairs of columns (0: learned positions instead) */
    const double rot = cfg->hidden_size / cfg->num_heads * fraction;
    if (!(rot >= 2) || rot != (int)rot || (int)rot % 2 || rot > 1024)
        return vit_fail(err,
                        "%s: rotary_emb_fraction %g gives %g rotary columns of a head of %d; vit "
                        "runs an even count from 2 to 1024 (0: learned positions, not done)",
                        src, fraction, rot, cfg->hidden_size / cfg->num_heads);
    cfg->rotary_dim = (int)rot, cfg->rotary_base = base, cfg->rotary_interleaved = interleaved;
    /* NomciBertGatedMLP: n_inner (or 8/3 of n_embd) rounded up to a multiple of 256 */
    if (!inner) inner = 8 * cfg->hidden_size / 3;
    cfg->intermediate_size = (inner + 255) / 256 * 256;
    cfg->vocab_size = (cfg->vocab_size + multiple - 1) / multiple * multiple; /* NomicBertModel */
    cfg->layer_norm_eps = (float)eps;
    cfg->no_bias = (qkv_bias ? 0 : NO_BIAS_QKV | NO_BIAS_OUT) | (fc1_bias ? 0 : NO_BIAS_FC1) |
                   (fc2_bias ? 0 : NO_BIAS_FC2);
    return 0;
}

/* JinaBertConfig beyond BERT's keys: ALiBi positions, the GeGLU feed-forward (gelu of the first
 * half times the second), without the code models' LayerNorms on the queries and keys. */
static int jina_fields(const cJSON *root, model_config *cfg, const char *src, vit_error *err) {
    const cJSON *pos = cJSON_GetObjectItemCaseSensitive(root, "position_embedding_type");
    const cJSON *ff = cJSON_GetObjectItemCaseSensitive(root, "feed_forward_type");
    const cJSON *map = cJSON_GetObjectItemCaseSensitive(root, "auto_map");
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(map, "AutoModel");
    if (cJSON_IsString(model) && strstr(model->valuestring, "qk-post-norm"))
        return vit_fail(err,
                        "%s: auto_map AutoModel %s: JinaBERT v2 with LayerNorms on the queries "
                        "and keys (the code models) is not done",
                        src, model->valuestring);
    if (!cJSON_IsString(pos) || strcmp(pos->valuestring, "alibi") != 0)
        return vit_fail(err, "%s: position_embedding_type %s: vit runs JinaBERT v2 with alibi", src,
                        cJSON_IsString(pos) ? pos->valuestring : "(absent)");
    /* TEI's jina.rs reads every JinaBERT as gated (the v2 configs say geglu) */
    if (ff && !(cJSON_IsString(ff) && strcmp(ff->valuestring, "geglu") == 0))
        return vit_fail(err, "%s: feed_forward_type %s: vit runs JinaBERT v2's geglu", src,
                        cJSON_IsString(ff) ? ff->valuestring : "(not a string)");
    if (cfg->act != ACT_GELU)
        return vit_fail(err, "%s: hidden_act %s: vit runs JinaBERT v2's GeGLU with the erf gelu",
                        src, activation_name(cfg->act));
    cfg->act = ACT_GEGLU;
    return 0;
}

static void set_defaults(model_config *cfg) {
    cfg->pad_token_id = cfg->text_arch == TEXT_DISTILBERT ? 0 : 1;
    if (cfg->text_arch == TEXT_NOMIC || cfg->text_arch == TEXT_JINA) cfg->pad_token_id = 0;
    if (cfg->text_arch == TEXT_NOMIC) /* GPT2Config's */
        cfg->vocab_size = 50257, cfg->max_position_embeddings = 1024;
    if (cfg->text_arch == TEXT_ROBERTA) cfg->vocab_size = 50265;
    if (cfg->text_arch == TEXT_MPNET) cfg->vocab_size = 30527, cfg->rel_buckets = 32;
    if (cfg->text_arch == TEXT_DISTILBERT) cfg->num_layers = 6;
}

int config_text_parse(const cJSON *root, model_config *cfg, const char *src, vit_error *err) {
    set_defaults(cfg);
    const int distil = cfg->text_arch == TEXT_DISTILBERT;
    if (cfg->text_arch == TEXT_NOMIC) /* GPT-2's keys: none of BERT's */
        return get_class(root, cfg, src, err) || nomic_fields(root, cfg, src, err) ||
                       config_dim_labels(cfg, cfg->hidden_size, src, err)
                   ? -1
                   : 0;
    if (cfg->text_arch == TEXT_JINA) /* a classifier's labels: config_parse_common's */
        return get_class(root, cfg, src, err) || config_parse_common(root, cfg, src, err) ||
                       jina_fields(root, cfg, src, err) ||
                       (cfg->bare && config_dim_labels(cfg, cfg->hidden_size, src, err))
                   ? -1
                   : 0;
    if (get_class(root, cfg, src, err) != 0 ||
        (distil ? distilbert_fields : bert_like_fields)(root, cfg, src, err) != 0 ||
        config_parse_common(root, cfg, src, err) != 0)
        return -1;
    if (distil) cfg->layer_norm_eps = 1e-12f; /* nn.LayerNorm(dim, eps=1e-12) throughout */
    /* RoBERTa's positions start after padding_idx (MPNetEmbeddings: padding_idx 1 always) */
    if (cfg->text_arch == TEXT_MPNET) cfg->pad_token_id = 1;
    if (!distil && (cfg->pad_token_id < 0 || cfg->pad_token_id + 2 > cfg->max_position_embeddings))
        return vit_fail(err,
                        "%s: pad_token_id %d leaves no positions in max_position_embeddings %d",
                        src, cfg->pad_token_id, cfg->max_position_embeddings);
    /* a base model's output is its features (the pooler's, or token 0's without one) */
    return cfg->bare ? config_dim_labels(cfg, cfg->hidden_size, src, err) : 0;
}

void config_text_options(const model_config *c, tower_options *o) {
    const int distil = c->text_arch == TEXT_DISTILBERT, nomic = c->text_arch == TEXT_NOMIC;
    const int jina = c->text_arch == TEXT_JINA;
    o->embed_norm = o->post_norm = 1;
    o->token_types = c->text_arch == TEXT_ROBERTA || c->text_arch == TEXT_XLMR || jina ||
                     (nomic && c->type_vocab_size > 0);
    if (nomic) {
        o->rotary_dim = c->rotary_dim, o->rotary_base = c->rotary_base;
        o->rotary_interleaved = c->rotary_interleaved;
        o->no_bias = c->no_bias;
    }
    o->alibi = jina;
    if (jina) o->no_bias = NO_BIAS_FC1; /* gated_layers: bias=False */
    o->pos_from_ids = !distil && !nomic && !jina;
    o->pos_pad = distil ? 0 : c->pad_token_id;
    o->rel_buckets = c->text_arch == TEXT_MPNET ? c->rel_buckets : 0;
    o->pool = c->token_classifier ? POOL_TOKENS : POOL_BERT;
    o->head = c->bare ? HEAD_NONE : HEAD_CLASSIFIER;
    /* DistilBertModel has no pooler; no token classifier has one */
    o->pooler = !c->token_classifier && !(distil && c->bare) && !c->no_pooler;
    o->pooler_relu = distil; /* pre_classifier, then ReLU */
    o->drop_first = !distil && !c->bare && !c->token_classifier;
}

void config_text_write(cJSON *root, const model_config *c, float hidden_dropout,
                       float attention_dropout) {
    cJSON_AddNumberToObject(root, "vocab_size", c->vocab_size);
    cJSON_AddNumberToObject(root, "max_position_embeddings", c->max_position_embeddings);
    if (c->text_arch == TEXT_DISTILBERT) { /* DistilBertConfig's own names */
        cJSON_AddBoolToObject(root, "sinusoidal_pos_embds", 0);
        cJSON_AddNumberToObject(root, "n_layers", c->num_layers);
        cJSON_AddNumberToObject(root, "n_heads", c->num_heads);
        cJSON_AddNumberToObject(root, "dim", c->hidden_size);
        cJSON_AddNumberToObject(root, "hidden_dim", c->intermediate_size);
        cJSON_AddItemToObject(root, "dropout", json_shortest_float(hidden_dropout));
        cJSON_AddItemToObject(root, "attention_dropout", json_shortest_float(attention_dropout));
        cJSON_AddStringToObject(root, "activation", activation_name(c->act));
        cJSON_AddItemToObject(root, "initializer_range", json_shortest_float(0.02f));
        cJSON_AddNumberToObject(root, "pad_token_id", c->pad_token_id);
        return;
    }
    cJSON_AddNumberToObject(root, "hidden_size", c->hidden_size);
    cJSON_AddNumberToObject(root, "num_hidden_layers", c->num_layers);
    cJSON_AddNumberToObject(root, "num_attention_heads", c->num_heads);
    cJSON_AddNumberToObject(root, "intermediate_size", c->intermediate_size);
    cJSON_AddStringToObject(root, "hidden_act", activation_name(c->act));
    cJSON_AddItemToObject(root, "hidden_dropout_prob", json_shortest_float(hidden_dropout));
    cJSON_AddItemToObject(root, "attention_probs_dropout_prob",
                          json_shortest_float(attention_dropout));
    cJSON_AddItemToObject(root, "initializer_range", json_shortest_float(0.02f));
    cJSON_AddItemToObject(root, "layer_norm_eps", json_shortest_float(c->layer_norm_eps));
    cJSON_AddNumberToObject(root, "pad_token_id", c->pad_token_id);
    if (c->text_arch == TEXT_MPNET) {
        cJSON_AddNumberToObject(root, "relative_attention_num_buckets", c->rel_buckets);
        return;
    }
    cJSON_AddNumberToObject(root, "type_vocab_size", c->type_vocab_size);
    cJSON_AddStringToObject(root, "position_embedding_type", "absolute");
}
