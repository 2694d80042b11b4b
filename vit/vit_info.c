/* vit_model_info: what a loaded model is, from the configuration its loader parsed. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "vit/io/st_folder.h"
#include "vit/model/config.h"
#include "vit/model/params.h"
#include "vit/vit_internal.h"

static vit_model_kind folder_kind(const model_config *c) {
    if (c->family == FAMILY_VED) return VIT_KIND_IMAGE_TO_TEXT;
    if (c->opt.joint && !c->one_tower) return VIT_KIND_JOINT;
    return c->kind == MODEL_VIT ? VIT_KIND_IMAGE : VIT_KIND_TEXT;
}

static const char *const pooling_names[] = {
    [POOL_CLS] = "cls",         [POOL_CLS_MEAN] = "cls_mean",   [POOL_MEAN] = "mean",
    [POOL_PROBE] = "probe",     [POOL_BERT] = "bert",           [POOL_EOS] = "eos",
    [POOL_EOS_MAX] = "eos_max", [POOL_LAST] = "last",           [POOL_ALL] = "all",
    [POOL_NEXT] = "next",       [POOL_NORM_MEAN] = "norm_mean", [POOL_TOKENS] = "tokens"};
static const char *const head_names[] = {[HEAD_CLASSIFIER] = "classifier",
                                         [HEAD_PROJECTION] = "projection",
                                         [HEAD_LINEAR] = "linear",
                                         [HEAD_NONE] = "none"};

static const char *folder_class(const model_config *c) {
    if (c->family == FAMILY_VED) return "VisionEncoderDecoderModel";
    if (c->opt.joint && !c->one_tower) return config_joint_class(c);
    return config_architecture(c);
}

/* The blocks' options, the pooling and head, the cost and the scores' scale. */
static void tower_build_info(const model *m, vit_model_info *info) {
    const model_config *c = &m->cfg;
    const tower_options *o = &c->opt;
    info->folder_class = folder_class(c);
    info->tower_alone = c->one_tower;
    info->parameters = model_live_params(m);
    if (c->kind == MODEL_VIT) {
        info->size_tokens = model_vit_tokens(m, 0);
        info->flops = model_flops(m, info->size_tokens);
        info->special_tokens = o->special;
        info->classifier_heads = config_classifier_heads(c);
    } else if (c->kind == MODEL_TEXT) {
        info->flops = model_flops(m, 128);
    }
    info->registers = o->registers;
    if (c->family == FAMILY_TIMM && c->timm_reg_pos) { /* special tokens to the encoder */
        info->special_tokens = c->timm_class_token;
        info->registers = c->num_registers;
        info->registers_positioned = 1;
    }
    info->positions = !o->abs_pos ? 0 : c->family == FAMILY_TIMM ? 3 : o->pos_antialias ? 2 : 1;
    info->qkv_bias = c->qkv_bias;
    info->key_bias = o->key_bias;
    info->swiglu = o->swiglu;
    info->layer_scale = o->layer_scale;
    info->embed_norm = o->embed_norm;
    info->final_norm = o->final_norm;
    info->causal = o->causal;
    info->rel_bias = o->shared_rel_bias || o->rel_buckets ? 2 : o->rel_bias ? 1 : 0;
    info->pooling = pooling_names[o->pool];
    info->head = head_names[o->head];
    info->score_scale = m->logit_scale ? exp((double)m->logit_scale[0]) : 0;
    info->score_bias = m->logit_bias != NULL;
    info->pos_offset = o->pos_offset;
    info->scale_embedding = o->scale_embedding;
}

void api_tower_info(const model *m, vit_model_info *info) {
    const model_config *c = &m->cfg;
    memset(info, 0, sizeof *info);
    info->kind = folder_kind(c);
    info->tower = c->kind == MODEL_VIT    ? VIT_TOWER_IMAGE
                  : c->kind == MODEL_TEXT ? VIT_TOWER_TEXT
                                          : VIT_TOWER_DECODER;
    info->family = config_family_name(c);
    info->model_type = config_model_type(c);
    info->architecture = config_architecture(c);
    info->layers = c->num_layers;
    info->hidden = c->hidden_size;
    info->heads = c->num_heads;
    info->mlp = c->intermediate_size;
    info->activation = activation_name(c->act);
    info->layer_norm_eps = c->layer_norm_eps;
    info->post_norm = c->opt.post_norm;
    info->channels = c->num_channels;
    info->image_height = c->image_size;
    info->image_width = c->image_width;
    info->patch_size = c->patch_size;
    info->max_positions =
        c->kind == MODEL_TEXT ? config_text_max_tokens(c) : c->max_position_embeddings;
    info->positions_from_padding = c->opt.pos_from_ids;
    info->rotary_dim = c->opt.rotary_dim;
    info->rotary_interleaved = c->opt.rotary_interleaved;
    info->rotary_base = c->opt.rotary_base;
    info->alibi = c->opt.alibi;
    info->no_bias = c->opt.no_bias;
    info->pooler = !c->opt.pooler ? NULL : c->opt.pooler_relu ? "relu" : "tanh";
    info->vocab_size = c->vocab_size;
    info->num_labels = c->num_labels;
    info->sigmoid = c->opt.joint_sigmoid;
    info->sinusoidal = c->opt.sinusoidal;
    info->cross_project = c->opt.enc_proj;
    info->cross_width = c->cross_dim;
    info->tied_head = c->opt.tied_head;
    info->weights = m->weights_from;
    tower_build_info(m, info);
}

void vit_model_info_get(const vit_context *ctx, vit_model_info *info) {
    const api_image_view v = api_image_context((vit_context *)ctx);
    api_tower_info(v.m, info);
    info->tokens = vit_tokens(ctx);
    info->joint_dim = vit_joint_dim(ctx);
    info->pool = vit_default_pool(ctx);
    info->preprocessing = api_preprocessing(ctx);
    info->capabilities = VIT_CAN_EMBED | (vit_has_classifier(ctx) ? VIT_CAN_CLASSIFY : 0);
    if (info->kind == VIT_KIND_JOINT) info->capabilities |= VIT_CAN_ZERO_SHOT;
    if (info->kind == VIT_KIND_IMAGE_TO_TEXT)
        info->capabilities |= VIT_CAN_GENERATE;
    else if (vit_explain_check(ctx, NULL) == 0)
        info->capabilities |= VIT_CAN_EXPLAIN;
}

void vit_text_model_info(const vit_text_context *ctx, vit_model_info *info) {
    const model *m = api_text_model(ctx);
    api_tower_info(m, info);
    info->joint_dim = vit_text_joint_dim(ctx);
    info->pool = vit_text_default_pool(ctx);
    const int classifier = m->cfg.opt.head == HEAD_CLASSIFIER,
              tags = m->cfg.opt.pool == POOL_TOKENS;
    const text_tokenizer *tok = api_text_tokenizer(ctx);
    if (tok) { /* none when it could not load (tokenizer_optional) */
        info->tokenizer = text_tokenizer_class(tok);
        info->tokenizer_kind = text_tokenizer_kind(tok);
        info->tokenizer_ids = text_tokenizer_vocab_size(tok);
    }
    info->capabilities =
        VIT_CAN_EMBED | (classifier && !tags ? VIT_CAN_CLASSIFY : 0) | (tags ? VIT_CAN_TAG : 0);
    if (info->kind == VIT_KIND_JOINT) info->capabilities |= VIT_CAN_ZERO_SHOT;
}

/* The config of the folder model names (a sentence-transformers folder's Transformer's). */
static int folder_config(const char *model, model_config *cfg, vit_error *err) {
    char model_dir[4096];
    if (vit_resolve_model(model, model_dir, sizeof model_dir, err) != 0) return -1;
    if (st_folder_is(model_dir)) { /* sentence-transformers: its Transformer module's folder */
        st_pipeline st;
        if (st_pipeline_load(model_dir, &st, err) != 0) return -1;
        snprintf(model_dir, sizeof model_dir, "%s", st.transformer_dir);
        st_pipeline_free(&st);
    }
    return model_config_load(model_dir, cfg, err);
}

int vit_folder_kind(const char *model, vit_model_kind *kind, vit_error *err) {
    model_config cfg;
    if (folder_config(model, &cfg, err) != 0) return -1;
    *kind = folder_kind(&cfg);
    model_config_free(&cfg);
    return 0;
}

int vit_folder_tags(const char *model, int *tags, vit_error *err) {
    model_config cfg;
    if (folder_config(model, &cfg, err) != 0) return -1;
    *tags = cfg.kind == MODEL_TEXT && cfg.token_classifier;
    model_config_free(&cfg);
    return 0;
}
