/* GET /v1/model: what `vit info` says of the served models, as JSON, written once at start. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "image/image.h"
#include "text/text_tokenizer.h"
#include "vit/cli/json_writer.h"
#include "vit/cli/serve.h"
#include "vit/core/gemm.h"
#include "vit/gen/generate.h"
#include "vit/io/model_dir.h"

static void write_encoder(json_writer *w, const vit_model_info *info) {
    json_key(w, "encoder");
    json_object(w);
    json_key(w, "layers");
    json_int(w, info->layers);
    json_key(w, "hidden");
    json_int(w, info->hidden);
    json_key(w, "heads");
    json_int(w, info->heads);
    json_key(w, "mlp");
    json_int(w, info->mlp);
    json_key(w, "activation");
    json_string(w, info->activation);
    json_key(w, "layer_norm_eps");
    json_float(w, info->layer_norm_eps);
    json_key(w, "norm");
    json_string(w, info->post_norm ? "post-LN" : "pre-LN");
    json_end(w);
}

static void write_labels(json_writer *w, int count, const char *(*label)(const void *, int),
                         const void *ctx) {
    json_key(w, "labels");
    json_array(w);
    for (int i = 0; i < count; i++) json_string(w, label(ctx, i));
    json_end(w);
}

static const char *image_label(const void *ctx, int i) {
    return vit_label(ctx, i);
}
static const char *text_label(const void *ctx, int i) {
    return vit_text_label(ctx, i);
}

static void write_size(json_writer *w, const char *key, int height, int width) {
    json_key(w, key);
    json_object(w);
    json_key(w, "height");
    json_int(w, height);
    json_key(w, "width");
    json_int(w, width);
    json_end(w);
}

/* The preprocessing as it runs (at --size, if given). */
static void write_preprocessing(json_writer *w, const char *dir, int size) {
    preprocess_config p;
    vit_error err = {0};
    if (model_dir_load_preprocess(dir, &p, &err) != 0) return;
    preprocess_config_set_size(&p, size);
    static const char *filters[] = {"nearest", "lanczos", "bilinear", "bicubic", "box", "hamming"};
    json_key(w, "preprocessing");
    json_object(w);
    if (p.do_resize && p.shortest_edge > 0) {
        json_key(w, "shortest_edge");
        json_int(w, p.shortest_edge);
    } else if (p.do_resize) {
        write_size(w, "resize", p.resize_height, p.resize_width);
    }
    if (p.do_resize && p.resample >= 0 && p.resample <= 5) {
        json_key(w, "resample");
        json_string(w, filters[p.resample]);
    }
    if (p.do_center_crop) write_size(w, "center_crop", p.crop_height, p.crop_width);
    if (p.do_rescale) {
        json_key(w, "rescale_factor");
        json_float(w, (float)p.rescale_factor);
    }
    if (p.do_normalize) {
        json_key(w, "mean");
        json_array(w);
        for (int c = 0; c < p.channels; c++) json_float(w, p.mean[c]);
        json_end(w);
        json_key(w, "std");
        json_array(w);
        for (int c = 0; c < p.channels; c++) json_float(w, p.std[c]);
        json_end(w);
    }
    json_end(w);
}

static void write_bool(json_writer *w, const char *key, int value) {
    json_key(w, key);
    json_raw(w, value ? "true" : "false", value ? 4 : 5);
}

/* An image-to-text model's decoder, as `vit info` describes it. */
static void write_decoder(json_writer *w, const vit_gen_context *gen) {
    vit_model_info d;
    vit_gen_decoder_info(gen, &d);
    json_key(w, "decoder");
    json_object(w);
    json_key(w, "architecture");
    json_string(w, d.architecture);
    json_key(w, "model_type");
    json_string(w, d.model_type);
    json_key(w, "layers");
    json_int(w, d.layers);
    json_key(w, "hidden");
    json_int(w, d.hidden);
    json_key(w, "heads");
    json_int(w, d.heads);
    json_key(w, "ffn");
    json_int(w, d.mlp);
    json_key(w, "activation");
    json_string(w, d.activation);
    json_key(w, "norm");
    json_string(w, d.post_norm ? "post-LN" : "pre-LN");
    json_key(w, "positions");
    json_string(w, d.sinusoidal ? "sinusoidal" : "learned");
    json_key(w, "max_positions");
    json_int(w, d.max_positions);
    json_key(w, "cross_attention"); /* how it reads the encoder's states */
    json_string(w, d.cross_project             ? "enc_to_dec_proj"
                   : d.cross_width != d.hidden ? "cross_attention_hidden_size"
                                               : "same width");
    json_key(w, "cross_width");
    json_int(w, d.cross_width);
    write_bool(w, "tied_head", d.tied_head);
    json_key(w, "vocabulary");
    json_int(w, d.vocab_size);
    json_key(w, "tokenizer");
    json_string(w, d.tokenizer);
    json_key(w, "compute");
    json_string(w, vit_gen_compute(gen));
    json_end(w);
}

static void write_id(json_writer *w, const char *key, int id) {
    json_key(w, key);
    if (id >= 0)
        json_int(w, id);
    else
        json_raw(w, "null", 4);
}

/* The settings a request gets unless it asks otherwise, the special ids and the limits. */
static void write_generation(json_writer *w, const char *dir, const vit_gen_context *gen) {
    static const char *const early[] = {"false", "true", "\"never\""};
    const vit_gen_options o = vit_gen_default_options(gen);
    json_key(w, "generation");
    json_object(w);
    json_key(w, "num_beams");
    json_int(w, o.num_beams);
    json_key(w, o.max_new_tokens > 0 ? "max_new_tokens" : "max_length");
    json_int(w, o.max_new_tokens > 0 ? o.max_new_tokens : o.max_length);
    json_key(w, "min_length");
    json_int(w, o.min_length);
    json_key(w, "length_penalty");
    json_float(w, o.length_penalty);
    json_key(w, "no_repeat_ngram_size");
    json_int(w, o.no_repeat_ngram_size);
    json_key(w, "early_stopping");
    json_raw(w, early[o.early_stopping], strlen(early[o.early_stopping]));
    gen_config g;
    vit_error err = {0};
    if (gen_config_load(dir, &g, &err) == 0) {
        write_id(w, "decoder_start_token_id", g.decoder_start_token_id);
        write_id(w, "eos_token_id", g.num_eos > 0 ? g.eos_ids[0] : -1);
        write_id(w, "pad_token_id", g.pad_token_id);
    }
    json_key(w, "max_new_tokens_limit");
    json_int(w, vit_gen_max_new_tokens(gen));
    json_end(w);
}

static void write_image_model(json_writer *w, const char *dir, const vit_context *ctx,
                              const vit_gen_context *gen, const vit_model_info *info) {
    int channels, height, width;
    vit_input_shape(ctx, &channels, &height, &width);
    json_key(w, "input");
    json_object(w);
    json_key(w, "channels");
    json_int(w, channels);
    json_key(w, "height");
    json_int(w, height);
    json_key(w, "width");
    json_int(w, width);
    json_key(w, "patch");
    json_int(w, info->patch_size);
    json_key(w, "tokens");
    json_int(w, vit_tokens(ctx));
    json_end(w);
    json_key(w, "flops_per_image");
    json_float(w, (float)vit_flops_per_image(ctx));
    write_preprocessing(w, dir, height);
    write_encoder(w, info);
    json_key(w, "parameters");
    json_int(w, (long long)vit_num_parameters(ctx));
    json_key(w, "embedding_size"); /* what /v1/embed and /v1/embeddings give by default */
    json_int(w, vit_embed_size(ctx, vit_default_pool(ctx)));
    write_bool(w, "explain", info->capabilities & VIT_CAN_EXPLAIN); /* POST /v1/explain answers */
    if (gen) {                                                      /* no labels: text */
        write_decoder(w, gen);
        write_generation(w, dir, gen);
    } else if (vit_joint_dim(ctx) > 0) { /* its outputs are the joint space's, not labels */
        json_key(w, "joint_dim");
        json_int(w, vit_joint_dim(ctx));
    } else if (info->capabilities & VIT_CAN_CLASSIFY) { /* a base model's outputs are features */
        write_labels(w, vit_num_labels(ctx), image_label, ctx);
    }
    json_key(w, "compute");
    json_string(w, vit_compute(ctx));
}

static void write_text_model(json_writer *w, const vit_text_context *ctx,
                             const vit_model_info *info) {
    json_key(w, "max_tokens");
    json_int(w, vit_text_max_tokens(ctx));
    json_key(w, "vocabulary");
    json_int(w, info->vocab_size);
    write_encoder(w, info);
    if (vit_text_joint_dim(ctx) > 0) {
        json_key(w, "joint_dim");
        json_int(w, vit_text_joint_dim(ctx));
    } else if (info->capabilities & VIT_CAN_CLASSIFY) {
        write_labels(w, vit_text_num_labels(ctx), text_label, ctx);
    }
    json_key(w, "compute");
    json_string(w, vit_text_compute(ctx));
}

/* "image" or "text": the model directory's description (of its tower, for a joint model), or
 * nothing when it is not served. */
/* What the model does, as a transformers pipeline's task. */
static const char *model_task(const vit_context *image, const vit_gen_context *gen,
                              const vit_model_info *info) {
    if (gen) return "image-to-text";
    const int classifies = (info->capabilities & VIT_CAN_CLASSIFY) != 0;
    if (image)
        return vit_joint_dim(image) > 0 ? "zero-shot-image-classification"
               : classifies             ? "image-classification"
                                        : "image-feature-extraction";
    return classifies ? "text-classification" : "feature-extraction";
}

static void write_model(json_writer *w, const char *key, const char *dir, const vit_context *image,
                        const vit_gen_context *gen, const vit_text_context *text) {
    if (!image && !text) return;
    vit_model_info info;
    if (image)
        vit_model_info_get(image, &info);
    else
        vit_text_model_info(text, &info);
    json_key(w, key);
    json_object(w);
    json_key(w, "model");
    json_string(w, dir);
    json_key(w, "task");
    json_string(w, model_task(image, gen, &info));
    json_key(w, "weights");
    json_string(w, info.weights);
    json_key(w, "architecture");
    json_string(w, gen ? "VisionEncoderDecoderModel" : info.architecture);
    json_key(w, "model_type");
    json_string(w, gen ? "vision-encoder-decoder" : info.model_type);
    if (gen) {
        json_key(w, "encoder_architecture");
        json_string(w, info.architecture);
    }
    if (image)
        write_image_model(w, dir, image, gen, &info);
    else
        write_text_model(w, text, &info);
    json_end(w);
}

/* "joint": a CLIP or SigLIP image model, its joint space, how its scores read and what is served
 * of it. */
static void write_joint(json_writer *w, const vit_context *image, const vit_text_context *text) {
    if (!image || vit_joint_dim(image) <= 0) return;
    vit_model_info info;
    vit_model_info_get(image, &info);
    json_key(w, "joint");
    json_object(w);
    json_key(w, "family");
    json_string(w, info.family);
    json_key(w, "dim");
    json_int(w, info.joint_dim);
    json_key(w, "probabilities");
    json_string(w, info.sigmoid ? "sigmoid" : "softmax");
    json_key(w, "text_tower"); /* served: zero-shot and texts on /v1/embeddings */
    json_raw(w, text ? "true" : "false", text ? 4 : 5);
    json_end(w);
}

char *serve_model_json(const char *image_dir, const vit_context *image, const vit_gen_context *gen,
                       const char *text_dir, const vit_text_context *text) {
    char *json = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&json, &size);
    if (!out) return NULL;
    json_writer w = json_begin(out);
    json_object(&w);
    write_model(&w, "image", image_dir, image, gen, NULL);
    write_model(&w, "text", text_dir, NULL, NULL, text);
    write_joint(&w, image, text);
    char openblas[96], onednn[96];
    json_key(&w, "library");
    json_string(&w, vit_version());
    json_key(&w, "backends");
    json_array(&w);
    json_string(&w, gemm_backend_describe(GEMM_OPENBLAS, openblas, sizeof openblas));
    json_string(&w, gemm_backend_describe(GEMM_ONEDNN, onednn, sizeof onednn));
    json_end(&w);
    json_end(&w);
    json_line(&w);
    fclose(out);
    return json;
}
