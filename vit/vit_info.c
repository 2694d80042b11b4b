/* vit_model_info: what a loaded model is, from the configuration its loader parsed. */
#include <string.h>

#include "vit/model/config.h"
#include "vit/vit_internal.h"

static vit_model_kind folder_kind(const model_config *c) {
    if (c->family == FAMILY_VED) return VIT_KIND_IMAGE_TO_TEXT;
    if (config_is_joint(c) && !c->one_tower) return VIT_KIND_JOINT;
    return c->kind == MODEL_VIT ? VIT_KIND_IMAGE : VIT_KIND_TEXT;
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
    info->max_positions = c->max_position_embeddings;
    info->vocab_size = c->vocab_size;
    info->num_labels = c->num_labels;
    info->sigmoid = c->family == FAMILY_SIGLIP;
    info->sinusoidal = c->opt.sinusoidal;
    info->cross_project = c->opt.enc_proj;
    info->cross_width = c->cross_dim;
    info->tied_head = c->opt.tied_head;
}

void vit_model_info_get(const vit_context *ctx, vit_model_info *info) {
    const api_image_view v = api_image_context((vit_context *)ctx);
    api_tower_info(v.m, info);
    info->tokens = vit_tokens(ctx);
    info->joint_dim = vit_joint_dim(ctx);
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
    info->capabilities =
        VIT_CAN_EMBED | (m->cfg.opt.head == HEAD_CLASSIFIER ? VIT_CAN_CLASSIFY : 0);
    if (info->kind == VIT_KIND_JOINT) info->capabilities |= VIT_CAN_ZERO_SHOT;
}

int vit_folder_kind(const char *model_dir, vit_model_kind *kind, vit_error *err) {
    model_config cfg;
    if (model_config_load(model_dir, &cfg, err) != 0) return -1;
    *kind = folder_kind(&cfg);
    model_config_free(&cfg);
    return 0;
}
