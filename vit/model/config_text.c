/* The text encoders beside BERT: config.json of RoBERTa, XLM-R, DistilBERT and MPNet folders
 * (transformers' configuration_*.py and modeling_*.py), each a base model, its
 * ForSequenceClassification or its ForTokenClassification class. What they read becomes named
 * options of the one encoder and of the small parts around it (config_text_options): no family
 * test below vit/model. The tensor names of every text encoder, BERT's included, are here too
 * (config_text_names), for params.c's one text layout. */
#include <cjson/cJSON.h>
#include <string.h>

#include "vit/base/json.h"
#include "vit/model/config.h"

enum { TEXT_ROBERTA, TEXT_XLMR, TEXT_DISTILBERT, TEXT_MPNET };

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

/* One row per family: model_type, the three classes, the tensor prefix, the name for people and
 * the tensor names. */
typedef struct {
    const char *type, *base, *sequence, *token, *prefix, *name;
    const text_names *names;
} text_family;

static const text_family families[] = {
    [TEXT_ROBERTA] = {"roberta", "RobertaModel", "RobertaForSequenceClassification",
                      "RobertaForTokenClassification", "roberta.", "RoBERTa", &roberta_names},
    [TEXT_XLMR] = {"xlm-roberta", "XLMRobertaModel", "XLMRobertaForSequenceClassification",
                   "XLMRobertaForTokenClassification", "roberta.", "XLM-RoBERTa", &roberta_names},
    [TEXT_DISTILBERT] = {"distilbert", "DistilBertModel", "DistilBertForSequenceClassification",
                         "DistilBertForTokenClassification", "distilbert.", "DistilBERT",
                         &distilbert_names},
    [TEXT_MPNET] = {"mpnet", "MPNetModel", "MPNetForSequenceClassification",
                    "MPNetForTokenClassification", "mpnet.", "MPNet", &mpnet_names},
};
enum { NUM_FAMILIES = sizeof families / sizeof families[0] };

static const text_family *family_of(const model_config *cfg) {
    return &families[cfg->text_arch];
}

int config_text_type(const char *model_type, model_config *cfg) {
    for (int i = 0; i < NUM_FAMILIES; i++)
        if (strcmp(model_type, families[i].type) == 0) {
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
        if (strcmp(s, f->base) == 0 || strcmp(s, f->sequence) == 0 || strcmp(s, f->token) == 0) {
            cfg->bare = strcmp(s, f->base) == 0;
            cfg->token_classifier = strcmp(s, f->token) == 0;
            return 0;
        }
    }
    return vit_fail(err, "%s: architectures names %s; supported for model_type %s: %s, %s, %s", src,
                    cJSON_GetArrayItem(list, 0)->valuestring, f->type, f->base, f->sequence,
                    f->token);
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

static void set_defaults(model_config *cfg) {
    cfg->pad_token_id = cfg->text_arch == TEXT_DISTILBERT ? 0 : 1;
    if (cfg->text_arch == TEXT_ROBERTA) cfg->vocab_size = 50265;
    if (cfg->text_arch == TEXT_MPNET) cfg->vocab_size = 30527, cfg->rel_buckets = 32;
    if (cfg->text_arch == TEXT_DISTILBERT) cfg->num_layers = 6;
}

int config_text_parse(const cJSON *root, model_config *cfg, const char *src, vit_error *err) {
    set_defaults(cfg);
    const int distil = cfg->text_arch == TEXT_DISTILBERT;
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
    const int distil = c->text_arch == TEXT_DISTILBERT;
    o->embed_norm = o->post_norm = 1;
    o->token_types = c->text_arch == TEXT_ROBERTA || c->text_arch == TEXT_XLMR;
    o->pos_from_ids = !distil;
    o->pos_pad = distil ? 0 : c->pad_token_id;
    o->rel_buckets = c->text_arch == TEXT_MPNET ? c->rel_buckets : 0;
    o->pool = c->token_classifier ? POOL_TOKENS : POOL_BERT;
    o->head = c->bare ? HEAD_NONE : HEAD_CLASSIFIER;
    /* DistilBertModel has no pooler; no token classifier has one */
    o->pooler = !c->token_classifier && !(distil && c->bare) && !c->no_pooler;
    o->pooler_relu = distil; /* pre_classifier, then ReLU */
    o->drop_first = !distil && !c->bare && !c->token_classifier;
}
