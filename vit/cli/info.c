/* vit info: what a model directory holds. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "image/image.h"
#include "text/sentencepiece.h"
#include "text/text_tokenizer.h"
#include "vit/io/model_dir.h"
#include "vit/base/dist.h"
#include "vit/cli/cli.h"
#include "vit/core/gemm.h"
#include "vit/data/ocr_render.h"
#include "vit/gen/generate.h"
#include "vit/model/params.h"

enum { OPT_LABELS = 1 };

static const cli_option options[] = {
    CLI_MODEL_OPTION("model directory", CLI_MODEL_DEFAULT),
    {OPT_LABELS, "labels", 0, NULL, "list every label", "the first five"},
};

static const cli_command command = {
    "info",
    "describe a model: architecture, parameters, FLOPs, labels, the build",
    "[options]",
    "Describes the model directory, and the library and kernels this build runs it with.",
    options,
    sizeof options / sizeof options[0]};

const cli_command *cli_info_command(void) {
    return &command;
}

static void print_preprocessing(const char *dir) {
    preprocess_config p;
    vit_error err = {0};
    if (model_dir_load_preprocess(dir, &p, &err) != 0) {
        printf("preprocessing:  unreadable (%s)\n", err.msg);
        return;
    }
    char what[256];
    preprocess_describe(&p, what, sizeof what);
    printf("preprocessing:  %s\n", what);
}

/* An image model's input, cost and preprocessing. */
static void print_image_input(const model *m, const char *dir) {
    const model_config *cfg = &m->cfg;
    const int tokens = model_vit_tokens(m, 0);
    printf("input:          %d channel%s, %dx%d, patch %d (%d tokens)\n", cfg->num_channels,
           cfg->num_channels > 1 ? "s" : "", cfg->image_width, cfg->image_size, cfg->patch_size,
           tokens);
    printf("flops/image:    %.3f GFLOP\n", model_flops(m, tokens) / 1e9);
    print_preprocessing(dir);
}

/* The parts an image classifier or backbone was assembled from (config_apply_family's options):
 * the tokens, the positions, what the encoder's blocks hold, the pooling and the head. */
static void print_image_parts(const model *m) {
    const model_config *c = &m->cfg;
    const tower_options *o = &c->opt;
    printf("parts:          tokens: %s%s", o->special > 1 ? "CLS, distillation" : "CLS",
           o->registers ? ", " : "");
    if (o->registers) printf("%d registers (no positions)", o->registers);
    printf(", patches; %s; blocks: %s, %s, %s%s%s%s\n",
           !o->abs_pos        ? "no absolute positions"
           : o->pos_antialias ? "absolute positions (other sizes: antialiased bicubic)"
                              : "absolute positions (other sizes: bicubic)",
           o->post_norm ? "post-LN" : "pre-LN",
           o->swiglu ? "SwiGLU feed-forward" : activation_name(c->act),
           o->key_bias ? (c->qkv_bias ? "qkv biases" : "no qkv bias") : "q and v biases (no k)",
           o->layer_scale ? ", layer scale" : "",
           o->rel_bias ? ", a relative position bias per layer" : "",
           o->shared_rel_bias ? ", a shared relative position bias" : "");
    const char *pool = o->pool == POOL_CLS_MEAN ? "final LayerNorm, [CLS, mean of the patches]"
                       : o->pool == POOL_MEAN   ? "mean of the patches, then pooler.layernorm"
                                                : "final LayerNorm, CLS";
    if (config_classifier_heads(c) > 1)
        printf("                pooled: final LayerNorm, CLS and distillation token; a classifier "
               "on each [%d, %d], logits their mean\n",
               c->num_labels, c->hidden_size);
    else if (o->head == HEAD_NONE)
        printf("                pooled: %s; no classifier (outputs: %d features)\n", pool,
               c->num_labels);
    else
        printf("                pooled: %s; classifier [%d, %d]\n", pool, c->num_labels,
               c->hidden_size * (o->pool == POOL_CLS_MEAN ? 2 : 1));
}

/* Where the model runs by default when it is not its image_size (DINOv2: the preprocessor's). */
static void print_run_size(const model *m, const char *dir) {
    preprocess_config p;
    vit_error err = {0};
    if (!m->cfg.opt.processor_size || model_dir_load_preprocess(dir, &p, &err) != 0) return;
    int c, h, w;
    preprocess_output_shape(&p, &c, &h, &w);
    const int P = m->cfg.patch_size;
    const int T = (h / P) * (w / P) + config_special_tokens(&m->cfg);
    if (h > 0 && (h != m->cfg.image_size || w != m->cfg.image_size))
        printf("runs at:        %dx%d, the preprocessor's size (%d tokens, %.3f GFLOP/image; "
               "positions resized from %dx%d patches)\n",
               w, h, T, model_flops(m, T) / 1e9, m->cfg.image_size / P, m->cfg.image_size / P);
}

static void print_input(const model *m, const char *dir) {
    const model_config *cfg = &m->cfg;
    if (cfg->kind == MODEL_VIT) {
        const char *deit = cfg->arch == ARCH_DEIT_TEACHER ? ", distillation token and head"
                           : cfg->arch == ARCH_DEIT       ? ", distillation token"
                                                          : "";
        printf("architecture:   %s (%s encoder%s)\n", config_architecture(cfg),
               cfg->opt.post_norm ? "post-LN" : "pre-LN", deit);
        print_image_input(m, dir);
        print_run_size(m, dir);
    } else {
        printf("architecture:   %s (%s encoder)\n", config_architecture(cfg),
               cfg->opt.post_norm ? "post-LN" : "pre-LN");
        printf("input:          up to %d tokens, vocabulary %d\n", cfg->max_position_embeddings,
               cfg->vocab_size);
        printf("flops/128 tok:  %.3f GFLOP\n", model_flops(m, 128) / 1e9);
    }
}

/* The parts a joint model's tower was assembled from (config_apply_family's options). */
static void print_tower_parts(const model *m) {
    static const char *const pools[] = {[POOL_CLS] = "the CLS row",
                                        [POOL_PROBE] = "every row, then the attention probe",
                                        [POOL_ALL] = "none (no attention-pooling head: every "
                                                     "row is the output)",
                                        [POOL_BERT] = "token 0 through the tanh pooler",
                                        [POOL_EOS] = "the first end token",
                                        [POOL_EOS_MAX] = "the largest id (eos_token_id 2)",
                                        [POOL_LAST] = "the last position"};
    static const char *const heads[] = {[HEAD_CLASSIFIER] = "a classifier",
                                        [HEAD_PROJECTION] = "a projection without bias",
                                        [HEAD_LINEAR] = "a linear head",
                                        [HEAD_NONE] = "no projection"};
    const model_config *c = &m->cfg;
    const tower_options *o = &c->opt;
    printf("                %s%d layers %s%s, hidden %d, %d heads, mlp %d, %s; final "
           "LayerNorm, pooled by %s, then %s\n",
           o->embed_norm ? "embedding LayerNorm, " : "", c->num_layers,
           o->post_norm ? "post-LN" : "pre-LN", o->causal ? " causal" : "", c->hidden_size,
           c->num_heads, c->intermediate_size, activation_name(c->act), pools[o->pool],
           heads[o->head]);
}

/* A CLIP or SigLIP folder: both towers and how the scores are made. */
static void print_joint(const model *image, const char *dir) {
    const model_config *c = &image->cfg;
    const int tokens = model_vit_tokens(image, 0);
    printf("architecture:   %s: an image and a text tower, embeddings of %d\n",
           config_joint_class(c), c->num_labels);
    printf("image tower:    %d channels, %dx%d, patch %d (%d tokens), %.3f GFLOP/image\n",
           c->num_channels, c->image_size, c->image_size, c->patch_size, tokens,
           model_flops(image, tokens) / 1e9);
    print_tower_parts(image);
    print_preprocessing(dir);
    model text;
    vit_error err = {0};
    if (model_load_tower(&text, dir, TOWER_TEXT, &err) != 0) {
        printf("text tower:     not loadable: %s\n", err.msg);
    } else {
        printf("text tower:     up to %d tokens, vocabulary %d, %zu parameters\n",
               text.cfg.max_position_embeddings, text.cfg.vocab_size, model_live_params(&text));
        print_tower_parts(&text);
        model_free(&text);
    }
    printf("scores:         exp(logit_scale) = %.4g times the cosine%s; %s\n",
           exp((double)image->logit_scale[0]), image->logit_bias ? " plus logit_bias" : "",
           image->logit_bias ? "a sigmoid per class (SigLIP)"
                             : "a softmax over the classes (CLIP)");
}

/* A joint model's tower saved alone (CLIPVisionModelWithProjection, SiglipVisionModel, ...):
 * that tower, and the scores' scale only where the folder has one. */
static void print_one_tower(const model *m, const char *dir) {
    const model_config *c = &m->cfg;
    const int image = c->kind == MODEL_VIT, tokens = image ? model_vit_tokens(m, 0) : 128;
    printf("architecture:   %s: one %s tower alone (no %s tower%s), %s\n", config_architecture(c),
           image ? "image" : "text", image ? "text" : "image",
           m->logit_scale ? "" : ", no joint space",
           c->opt.pool == POOL_ALL ? "every row out (last_hidden_state)"
           : c->opt.pool == POOL_PROBE && !m->logit_scale
               ? "pooled output of the attention-pooling head (pooler_output)"
           : c->opt.head == HEAD_NONE ? "the CLS row normalised (pooler_output)"
                                      : "embeddings of the joint space");
    if (image)
        printf("image tower:    %d channels, %dx%d, patch %d (%d tokens), %.3f GFLOP/image\n",
               c->num_channels, c->image_size, c->image_size, c->patch_size, tokens,
               model_flops(m, tokens) / 1e9);
    else
        printf("text tower:     up to %d tokens, vocabulary %d\n", c->max_position_embeddings,
               c->vocab_size);
    print_tower_parts(m);
    if (image) print_preprocessing(dir);
    if (m->logit_scale)
        printf("scores:         exp(logit_scale) = %.4g times the cosine%s\n",
               exp((double)m->logit_scale[0]), m->logit_bias ? " plus logit_bias" : "");
}

/* A VisionEncoderDecoder's decoder: its block, positions, embeddings, cross-attention and head. */
static void print_decoder(const model_config *d) {
    printf("decoder:        %s, %d layers %s, hidden %d, %d heads, ffn %d, %s\n",
           config_architecture(d), d->num_layers, d->opt.post_norm ? "post-LN" : "pre-LN",
           d->hidden_size, d->num_heads, d->intermediate_size, activation_name(d->act));
    printf("                positions %s, %d", d->opt.sinusoidal ? "sinusoidal" : "learned",
           d->max_position_embeddings);
    if (d->opt.pos_offset) printf(" (offset %d)", d->opt.pos_offset);
    if (d->opt.scale_embedding) printf("; token embeddings x sqrt(%d)", d->hidden_size);
    if (d->opt.embed_norm) printf("; embedding LayerNorm");
    if (d->opt.final_norm) printf("; final LayerNorm");
    printf("\n                cross-attention over the encoder's states, ");
    if (d->opt.enc_proj)
        printf("through enc_to_dec_proj (%d -> %d)\n", d->encoder_hidden, d->hidden_size);
    else if (d->cross_dim != d->hidden_size)
        printf("keys and values at cross_attention_hidden_size %d\n", d->cross_dim);
    else
        printf("as wide as the decoder (%d)\n", d->hidden_size);
    printf("                output head %s, vocabulary %d\n",
           d->opt.tied_head ? "tied to the token embeddings" : "of its own", d->vocab_size);
}

/* " NAME ID", or " NAME unset" for an id of -1. */
static void print_id(const char *name, int id) {
    if (id >= 0)
        printf(", %s %d", name, id);
    else
        printf(", %s unset", name);
}

/* The settings generate uses unless a call changes them (vit generate's options). */
static void print_generation_settings(const char *dir) {
    gen_config g;
    vit_error err = {0};
    if (gen_config_load(dir, &g, &err) != 0) {
        printf("generation:     unreadable (%s)\n", err.msg);
        return;
    }
    static const char *const early[] = {"false", "true", "\"never\""};
    printf("generation:     num_beams %d (%s search), ", g.num_beams,
           g.num_beams > 1 ? "beam" : "greedy");
    if (g.max_new_tokens > 0)
        printf("max_new_tokens %d", g.max_new_tokens);
    else
        printf("max_length %d", g.max_length);
    printf(", min_length %d, length_penalty %g\n", g.min_length, g.length_penalty);
    printf("                no_repeat_ngram_size %d, early_stopping %s; eos",
           g.no_repeat_ngram_size, early[g.early_stopping]);
    for (int i = 0; i < g.num_eos; i++) printf("%s%d", i ? "," : " ", g.eos_ids[i]);
    if (g.num_eos == 0) printf(" unset");
    print_id("pad", g.pad_token_id);
    print_id("decoder_start", g.decoder_start_token_id);
    print_id("bos", g.bos_token_id);
    printf("\n");
}

static void print_tokenizer(const char *dir) {
    text_tokenizer *t = NULL;
    vit_error err = {0};
    if (text_tokenizer_load(dir, &t, &err) != 0) {
        printf("tokenizer:      not loadable: %s\n", err.msg);
        return;
    }
    printf("tokenizer:      %s (%s), %d ids\n", text_tokenizer_class(t), text_tokenizer_kind(t),
           text_tokenizer_vocab_size(t));
    text_tokenizer_free(t);
}

/* A VisionEncoderDecoderModel folder: its encoder as an image model's, then the decoder, the
 * tokenizer and the generation settings. */
static void print_image_to_text(const model *enc, const char *dir) {
    const model_config *c = &enc->cfg;
    printf("architecture:   VisionEncoderDecoderModel, image to text (vit generate)\n");
    print_image_input(enc, dir);
    printf("encoder:        %s (pre-LN%s), %d layers, hidden %d, %d heads, mlp %d, %s, "
           "layer_norm_eps %g%s\n",
           c->arch == ARCH_VIT ? "ViTModel" : "DeiTModel",
           c->arch == ARCH_VIT ? "" : ", distillation token", c->num_layers, c->hidden_size,
           c->num_heads, c->intermediate_size, activation_name(c->act), c->layer_norm_eps,
           c->qkv_bias ? "" : ", no qkv bias");
    model dec;
    vit_error err = {0};
    if (model_load_tower(&dec, dir, TOWER_TEXT, &err) != 0) {
        printf("decoder:        not loadable: %s\n", err.msg);
        printf("parameters:     %zu (encoder)\n", model_live_params(enc));
        return;
    }
    print_decoder(&dec.cfg);
    print_tokenizer(dir);
    print_generation_settings(dir);
    printf("parameters:     %zu (encoder %zu, decoder %zu)\n",
           model_live_params(enc) + model_live_params(&dec), model_live_params(enc),
           model_live_params(&dec));
    model_free(&dec);
}

/* Labels often contain commas themselves ("tench, Tinca tinca"): index and quote each. */
static void print_labels(const model_config *cfg, int all) {
    printf("labels:         %d", cfg->num_labels);
    if (all) {
        printf("\n");
        for (int i = 0; i < cfg->num_labels; i++) printf("  %4d  %s\n", i, cfg->labels[i]);
        return;
    }
    const int shown = cfg->num_labels < 5 ? cfg->num_labels : 5;
    for (int i = 0; i < shown; i++) printf("%s%d \"%s\"", i ? ", " : ": ", i, cfg->labels[i]);
    printf("%s\n", shown < cfg->num_labels ? ", ... (--labels lists all)" : "");
}

/* The image formats this build decodes, then those it was built without. */
static void print_formats(void) {
    const char *name;
    int built_in, without = 0;
    printf("formats:        ");
    for (int i = 0, n = 0; (name = image_format(i, &built_in)); i++)
        if (built_in)
            printf("%s%s", n++ ? ", " : "", name);
        else
            without++;
    for (int i = 0, n = 0; without && (name = image_format(i, &built_in)); i++)
        if (!built_in) printf("%s%s", n++ ? ", " : "; built without ", name);
    printf("\n");
}

/* The tokenizers this build has: SentencePiece's needs libsentencepiece. */
static void print_tokenizers(void) {
    const char *spm = spm_library();
    if (spm)
        printf("tokenizers:     WordPiece, byte-level BPE, SentencePiece (%s)\n", spm);
    else
        printf("tokenizers:     WordPiece, byte-level BPE; built without SentencePiece\n");
}

/* What draws text for vit render-lines: FreeType, when the build has it. */
static void print_renderer(void) {
    const char *lib = ocr_render_library();
    if (lib)
        printf("text lines:     %s (vit render-lines)\n", lib);
    else
        printf("text lines:     built without FreeType (vit render-lines refuses)\n");
}

static int info_option(const cli_parser *p, int id, void *user) {
    (void)p;
    if (id == OPT_LABELS) *(int *)user = 1;
    return 0;
}

int cli_info(int argc, char **argv) {
    cli_common c = {0};
    int all_labels = 0;
    cli_parser p;
    cli_outcome parsed = cli_parse(&p, &command, argc, argv, &c, info_option, &all_labels);
    if (parsed == CLI_PARSED && p.num_rest)
        parsed = cli_usage_error(&command, "unexpected argument '%s'", p.rest[0]);
    if (parsed != CLI_PARSED) return cli_exit_status(parsed);
    char dir[4096];
    cli_model_dir(c.model, dir, sizeof dir);
    model m;
    vit_error err = {0};
    if (model_load(&m, dir, &err) != 0) {
        cli_print_load_error("info", c.model, dir, &err);
        return 1;
    }
    const model_config *cfg = &m.cfg;
    printf("model:          %s\n", dir);
    if (cfg->family == FAMILY_VED) {
        print_image_to_text(&m, dir);
    } else if (cfg->one_tower) {
        print_one_tower(&m, dir);
        printf("parameters:     %zu\n", model_live_params(&m));
    } else if (config_is_joint(cfg)) {
        print_joint(&m, dir);
        printf("parameters:     %zu (image tower)\n", model_live_params(&m));
    } else {
        print_input(&m, dir);
        printf("encoder:        %d layers, hidden %d, %d heads, mlp %d, %s, layer_norm_eps %g%s\n",
               cfg->num_layers, cfg->hidden_size, cfg->num_heads, cfg->intermediate_size,
               activation_name(cfg->act), cfg->layer_norm_eps,
               cfg->qkv_bias ? "" : ", no qkv bias");
        if (cfg->kind == MODEL_VIT) print_image_parts(&m);
        printf("parameters:     %zu\n", model_live_params(&m));
        if (cfg->opt.head != HEAD_NONE) print_labels(cfg, all_labels);
    }
    char openblas[96], onednn[96];
    printf("library:        vit %s\n", vit_version());
    printf("backends:       %s; %s%s\n",
           gemm_backend_describe(GEMM_OPENBLAS, openblas, sizeof openblas),
           gemm_backend_describe(GEMM_ONEDNN, onednn, sizeof onednn),
           !gemm_backend_available(GEMM_ONEDNN) ? ""
           : gemm_bf16_native(GEMM_ONEDNN)      ? ", bf16 kernels"
                                                : ", no bf16 kernels (bf16 computed in fp32)");
    print_formats();
    print_tokenizers();
    print_renderer();
    printf("mpi:            %s\n",
           dist_library() ? dist_library() : "not built in (make MPI=1 with libopenmpi-dev)");
    model_free(&m);
    return 0;
}
