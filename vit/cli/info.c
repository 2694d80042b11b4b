/* vit info: what a model directory holds. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "image/image.h"
#include "text/sentencepiece.h"
#include "vit/base/dist.h"
#include "vit/cli/cli.h"
#include "vit/core/gemm.h"
#include "vit/data/ocr_render.h"
#include "vit/vit.h"

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

/* The plural's "s" for a count: "1 layer", "2 layers". */
static const char *plural(long long n) {
    return n == 1 ? "" : "s";
}

/* The files the weights were read from (safetensors, shards, a .bin and its format). */
static void print_weights(const vit_model_info *in) {
    if (in->weights && in->weights[0]) printf("weights:        %s\n", in->weights);
}

/* A tower's size, cost and preprocessing. */
static void print_image_input(const vit_model_info *in) {
    printf("input:          %d channel%s, %dx%d, patch %d (%d token%s)\n", in->channels,
           plural(in->channels), in->image_width, in->image_height, in->patch_size, in->size_tokens,
           plural(in->size_tokens));
    printf("flops/image:    %.3f GFLOP\n", in->flops / 1e9);
    printf("preprocessing:  %s\n", in->preprocessing);
}

/* The parts an image classifier or backbone was assembled from (the family's options): the
 * tokens, the positions, what the encoder's blocks hold, the pooling and the head. */
static void print_image_parts(const vit_model_info *in) {
    printf("parts:          tokens: %s", in->special_tokens > 1 ? "CLS, distillation, "
                                         : in->special_tokens   ? "CLS, "
                                                                : "");
    if (in->registers)
        printf("%d register%s (%s), ", in->registers, plural(in->registers),
               in->registers_positioned ? "with positions" : "no positions");
    printf("patches; %s; blocks: %s, %s, %s%s%s%s\n",
           in->positions == 0   ? "no absolute positions"
           : in->positions == 2 ? "absolute positions (other sizes: antialiased bicubic)"
           : in->positions == 3 ? "absolute positions (at its size only)"
                                : "absolute positions (other sizes: bicubic)",
           in->post_norm ? "post-LN" : "pre-LN",
           in->swiglu ? "SwiGLU feed-forward" : in->activation,
           in->key_bias ? (in->qkv_bias ? "qkv biases" : "no qkv bias") : "q and v biases (no k)",
           in->layer_scale ? ", layer scale" : "",
           in->rel_bias == 1 ? ", a relative position bias per layer" : "",
           in->rel_bias == 2 ? ", a shared relative position bias" : "");
    const int cls_mean = !strcmp(in->pooling, "cls_mean");
    const int timm = !strcmp(in->model_type, "timm");
    const char *pool = cls_mean ? "final LayerNorm, [CLS, mean of the patches]"
                       : !strcmp(in->pooling, "mean")
                           ? (timm ? "mean of the patches, then fc_norm"
                                   : "mean of the patches, then pooler.layernorm")
                       : !strcmp(in->pooling, "norm_mean")
                           ? "final LayerNorm on every row, then the mean of the patches"
                       : !strcmp(in->pooling, "probe")
                           ? "final LayerNorm on every row, then the attention pool (attn_pool)"
                           : "final LayerNorm, CLS";
    if (in->classifier_heads > 1)
        printf("                pooled: final LayerNorm, CLS and distillation token; a classifier "
               "on each [%d, %d], logits their mean\n",
               in->num_labels, in->hidden);
    else if (!strcmp(in->head, "none"))
        printf("                pooled: %s; no classifier (outputs: %d feature%s)\n", pool,
               in->num_labels, plural(in->num_labels));
    else
        printf("                pooled: %s; classifier [%d, %d]\n", pool, in->num_labels,
               in->hidden * (cls_mean ? 2 : 1));
}

/* Where the model runs by default when it is not its image_size (DINOv2: the preprocessor's). */
static void print_run_size(const vit_context *ctx, const vit_model_info *in) {
    int c, h, w;
    vit_input_shape(ctx, &c, &h, &w);
    const int P = in->patch_size;
    if (h != in->image_height || w != in->image_width)
        printf("runs at:        %dx%d, the preprocessor's size (%d token%s, %.3f GFLOP/image; "
               "positions resized from %dx%d patches)\n",
               w, h, vit_tokens(ctx), plural(vit_tokens(ctx)), vit_flops_per_image(ctx) / 1e9,
               in->image_width / P, in->image_height / P);
}

static void print_encoder(const vit_model_info *in) {
    printf("encoder:        %d layer%s, hidden %d, %d head%s, mlp %d, %s, layer_norm_eps %g%s\n",
           in->layers, plural(in->layers), in->hidden, in->heads, plural(in->heads), in->mlp,
           in->activation, in->layer_norm_eps, in->qkv_bias ? "" : ", no qkv bias");
}

/* How a tower pools its rows, in words. */
static const char *pooling_words(const char *pooling, const char *model_type) {
    if (!strcmp(pooling, "eos_max") && !strcmp(model_type, "open_clip"))
        return "the largest id (open_clip's argmax)";
    static const char *const words[][2] = {
        {"cls", "the CLS row"},
        {"probe", "every row, then the attention probe"},
        {"all", "none (no attention-pooling head: every row is the output)"},
        {"bert", "token 0 through the tanh pooler"},
        {"eos", "the first end token"},
        {"eos_max", "the largest id (eos_token_id 2)"},
        {"last", "the last position"}};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (!strcmp(pooling, words[i][0])) return words[i][1];
    return pooling;
}

/* The head after the pooling, in words. */
static const char *head_words(const char *head) {
    return !strcmp(head, "classifier")   ? "a classifier"
           : !strcmp(head, "projection") ? "a projection without bias"
           : !strcmp(head, "linear")     ? "a linear head"
                                         : "no projection";
}

/* The parts a joint model's tower was assembled from (the family's options). */
static void print_tower_parts(const vit_model_info *in) {
    printf("                %s%d layer%s %s%s, hidden %d, %d head%s, mlp %d, %s%s; final "
           "LayerNorm, pooled by %s, then %s\n",
           in->embed_norm ? "embedding LayerNorm, " : "", in->layers, plural(in->layers),
           in->post_norm ? "post-LN" : "pre-LN", in->causal ? " causal" : "", in->hidden, in->heads,
           plural(in->heads), in->mlp, in->activation, in->layer_scale ? ", layer scale" : "",
           pooling_words(in->pooling, in->model_type), head_words(in->head));
}

static void print_image_tower(const vit_model_info *in) {
    printf("image tower:    %d channel%s, %dx%d, patch %d (%d token%s), %.3f GFLOP/image\n",
           in->channels, plural(in->channels), in->image_width, in->image_height, in->patch_size,
           in->size_tokens, plural(in->size_tokens), in->flops / 1e9);
}

/* A text tower described without its tokenizer (vit_text_params.tokenizer_optional): why. */
/* The tokenizer a text tower reads, or why it could not be read. */
static void print_tokenizer(const vit_text_context *t, const vit_model_info *in) {
    if (vit_text_tokenizer_error(t))
        printf("tokenizer:      not loadable: %s\n", vit_text_tokenizer_error(t));
    else
        printf("tokenizer:      %s (%s), %d id%s\n", in->tokenizer, in->tokenizer_kind,
               in->tokenizer_ids, plural(in->tokenizer_ids));
}

/* A text tower for describing: its tokenizer files may be missing. */
static vit_text_context *load_text_for_info(const char *dir, vit_error *err) {
    vit_text_params tp = vit_text_default_params();
    tp.tokenizer_optional = 1;
    return vit_text_load(dir, &tp, err);
}

/* A CLIP or SigLIP folder: both towers and how the scores are made. */
static void print_joint(const vit_model_info *image, const char *dir) {
    printf("architecture:   %s: an image and a text tower, embeddings of %d\n", image->folder_class,
           image->num_labels);
    print_image_tower(image);
    print_tower_parts(image);
    printf("preprocessing:  %s\n", image->preprocessing);
    vit_error err = {0};
    vit_text_context *text = load_text_for_info(dir, &err);
    if (!text) {
        printf("text tower:     not loadable: %s\n", err.msg);
    } else {
        vit_model_info t;
        vit_text_model_info(text, &t);
        printf("text tower:     up to %d token%s, vocabulary %d, %zu parameter%s\n",
               t.max_positions, plural(t.max_positions), t.vocab_size, t.parameters,
               plural((long long)t.parameters));
        print_tower_parts(&t);
        print_tokenizer(text, &t);
        vit_text_free(text);
    }
    printf("scores:         exp(logit_scale) = %.4g times the cosine%s; %s\n", image->score_scale,
           image->score_bias ? " plus logit_bias" : "",
           image->score_bias ? "a sigmoid per class (SigLIP)"
                             : "a softmax over the classes (CLIP)");
}

/* A joint model's tower saved alone (CLIPVisionModelWithProjection, SiglipVisionModel, ...):
 * that tower, and the scores' scale only where the folder has one. */
static void print_one_tower(const vit_model_info *in) {
    const int image = in->tower == VIT_TOWER_IMAGE;
    printf("architecture:   %s: one %s tower alone (no %s tower%s), %s\n", in->architecture,
           image ? "image" : "text", image ? "text" : "image",
           in->score_scale ? "" : ", no joint space",
           !strcmp(in->pooling, "all") ? "every row out (last_hidden_state)"
           : !strcmp(in->pooling, "probe") && !in->score_scale
               ? "pooled output of the attention-pooling head (pooler_output)"
           : !strcmp(in->head, "none") ? (image ? "the CLS row normalised (pooler_output)"
                                                : "the pooled row normalised (pooler_output)")
           : in->score_scale           ? "embeddings of the joint space"
           : !strcmp(in->head, "projection")
               ? (image ? "the projection of the pooled row (image_embeds)"
                        : "the projection of the pooled row (text_embeds)")
               : "the head at the last position (pooler_output)");
    if (image)
        print_image_tower(in);
    else
        printf("text tower:     up to %d token%s, vocabulary %d\n", in->max_positions,
               plural(in->max_positions), in->vocab_size);
    print_tower_parts(in);
    if (image) printf("preprocessing:  %s\n", in->preprocessing);
    if (in->score_scale)
        printf("scores:         exp(logit_scale) = %.4g times the cosine%s\n", in->score_scale,
               in->score_bias ? " plus logit_bias" : "");
}

/* vit embed's default pooling (vit_default_pool / vit_text_default_pool), as --pool names it. */
static void print_embedding(const vit_model_info *in) {
    static const char *const names[] = {[VIT_POOL_CLS] = "cls",
                                        [VIT_POOL_MEAN] = "mean",
                                        [VIT_POOL_POOLER] = "pooler",
                                        [VIT_POOL_JOINT] = "joint",
                                        [VIT_POOL_PATCHES] = "patches",
                                        [VIT_POOL_PROJECTION] = "projection",
                                        [VIT_POOL_MAX] = "max",
                                        [VIT_POOL_MEAN_SQRT_LEN] = "mean_sqrt_len",
                                        [VIT_POOL_WEIGHTED_MEAN] = "weightedmean",
                                        [VIT_POOL_LAST_TOKEN] = "lasttoken",
                                        [VIT_POOL_SENTENCE] =
                                            "sentence (the folder's modules.json pipeline)"};
    printf("embedding:      --pool %s (vit embed's default)\n", names[in->pool]);
}

/* A sentence-transformers folder's modules, prompts and similarity. */
static void print_sentence_pipeline(const vit_text_context *t) {
    if (!vit_text_pipeline(t)) return;
    printf("pipeline:       %s (modules.json); similarity %s; texts cut at %d tokens\n",
           vit_text_pipeline(t), vit_text_similarity(t), vit_text_max_tokens(t));
    const int n = vit_text_prompt_count(t);
    for (int i = 0; i < n; i++) {
        const char *name = vit_text_prompt_name(t, i), *def = vit_text_default_prompt(t);
        printf("%s%s \"%s\"%s", i ? ", " : "prompts:        ", name, vit_text_prompt(t, name),
               def && strcmp(def, name) == 0 ? " (default)" : "");
    }
    if (n) printf("\n");
}

/* A VisionEncoderDecoder's decoder: its block, positions, embeddings, cross-attention and head. */
static void print_decoder(const vit_model_info *d, int encoder_hidden) {
    printf("decoder:        %s, %d layer%s %s, hidden %d, %d head%s, ffn %d, %s\n", d->architecture,
           d->layers, plural(d->layers), d->post_norm ? "post-LN" : "pre-LN", d->hidden, d->heads,
           plural(d->heads), d->mlp, d->activation);
    printf("                positions %s, %d", d->sinusoidal ? "sinusoidal" : "learned",
           d->max_positions);
    if (d->pos_offset) printf(" (offset %d)", d->pos_offset);
    if (d->scale_embedding) printf("; token embeddings x sqrt(%d)", d->hidden);
    if (d->embed_norm) printf("; embedding LayerNorm");
    if (d->final_norm) printf("; final LayerNorm");
    printf("\n                cross-attention over the encoder's states, ");
    if (d->cross_project)
        printf("through enc_to_dec_proj (%d -> %d)\n", encoder_hidden, d->hidden);
    else if (d->cross_width != d->hidden)
        printf("keys and values at cross_attention_hidden_size %d\n", d->cross_width);
    else
        printf("as wide as the decoder (%d)\n", d->hidden);
    printf("                output head %s, vocabulary %d\n",
           d->tied_head ? "tied to the token embeddings" : "of its own", d->vocab_size);
}

/* " NAME ID", or " NAME unset" for an id of -1. */
static void print_id(const char *name, int id) {
    if (id >= 0)
        printf(", %s %d", name, id);
    else
        printf(", %s unset", name);
}

/* The settings generate uses unless a call changes them (vit generate's options). */
static void print_generation_settings(const vit_gen_context *g, const vit_model_info *d) {
    const vit_gen_options o = vit_gen_default_options(g);
    static const char *const early[] = {"false", "true", "\"never\""};
    printf("generation:     num_beams %d (%s search), ", o.num_beams,
           o.num_beams > 1 ? "beam" : "greedy");
    if (o.max_new_tokens > 0)
        printf("max_new_tokens %d", o.max_new_tokens);
    else
        printf("max_length %d", o.max_length);
    printf(", min_length %d, length_penalty %g\n", o.min_length, o.length_penalty);
    printf("                no_repeat_ngram_size %d, early_stopping %s; eos",
           o.no_repeat_ngram_size, early[o.early_stopping]);
    for (int i = 0; i < d->num_eos; i++) printf("%s%d", i ? "," : " ", d->eos_ids[i]);
    if (d->num_eos == 0) printf(" unset");
    print_id("pad", d->pad_id);
    print_id("decoder_start", d->decoder_start_id);
    print_id("bos", d->bos_id);
    printf("\n");
}

/* A VisionEncoderDecoderModel folder: its encoder as an image model's, then the decoder, the
 * tokenizer and the generation settings. */
static void print_image_to_text(vit_gen_context *g) {
    vit_context *enc = vit_gen_image_context(g);
    vit_model_info e, d;
    vit_model_info_get(enc, &e);
    vit_gen_decoder_info(g, &d);
    print_weights(&e);
    printf("architecture:   VisionEncoderDecoderModel, image to text (vit generate)\n");
    print_image_input(&e);
    printf("encoder:        %s (pre-LN%s), %d layer%s, hidden %d, %d head%s, mlp %d, %s, "
           "layer_norm_eps %g%s\n",
           e.special_tokens > 1 ? "DeiTModel" : "ViTModel",
           e.special_tokens > 1 ? ", distillation token" : "", e.layers, plural(e.layers), e.hidden,
           e.heads, plural(e.heads), e.mlp, e.activation, e.layer_norm_eps,
           e.qkv_bias ? "" : ", no qkv bias");
    print_decoder(&d, e.hidden);
    if (vit_gen_tokenizer_error(g))
        printf("tokenizer:      not loadable: %s\n", vit_gen_tokenizer_error(g));
    else
        printf("tokenizer:      %s (%s), %d id%s\n", d.tokenizer, d.tokenizer_kind, d.tokenizer_ids,
               plural(d.tokenizer_ids));
    print_generation_settings(g, &d);
    printf("parameters:     %zu (encoder %zu, decoder %zu)\n", e.parameters + d.parameters,
           e.parameters, d.parameters);
}

/* A context's labels: vit_label's or vit_text_label's. */
typedef struct {
    const vit_context *image;
    const vit_text_context *text;
} labeled;

static const char *label_of(const labeled *l, int i) {
    return l->image ? vit_label(l->image, i) : vit_text_label(l->text, i);
}

/* Labels often contain commas themselves ("tench, Tinca tinca"): index and quote each. */
static void print_labels(const labeled *l, int n, int all) {
    printf("labels:         %d", n);
    if (all) {
        printf("\n");
        for (int i = 0; i < n; i++) printf("  %4d  %s\n", i, label_of(l, i));
        return;
    }
    const int shown = n < 5 ? n : 5;
    for (int i = 0; i < shown; i++) printf("%s%d \"%s\"", i ? ", " : ": ", i, label_of(l, i));
    printf("%s\n", shown < n ? ", ... (--labels lists all)" : "");
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
        printf("tokenizers:     tokenizer.json, WordPiece, byte-level BPE, SentencePiece (%s)\n",
               spm);
    else
        printf("tokenizers:     tokenizer.json, WordPiece, byte-level BPE; built without "
               "SentencePiece\n");
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

/* An image classifier or base model: its architecture, input, encoder, parts and labels. */
static void print_image_model(const vit_context *ctx, const vit_model_info *in, int all_labels) {
    printf("architecture:   %s (%s encoder%s)\n", in->architecture,
           in->post_norm ? "post-LN" : "pre-LN",
           in->classifier_heads > 1 ? ", distillation token and head"
           : in->special_tokens > 1 ? ", distillation token"
                                    : "");
    print_image_input(in);
    print_run_size(ctx, in);
    print_encoder(in);
    print_image_parts(in);
    printf("parameters:     %zu\n", in->parameters);
    print_embedding(in);
    const labeled l = {.image = ctx};
    if (strcmp(in->head, "none")) print_labels(&l, in->num_labels, all_labels);
}

/* A text encoder's positions and head where they are not BERT's (BERT's lines stay as they
 * were). */
static void print_text_parts(const vit_model_info *in) {
    if (in->positions_from_padding || in->rel_bias)
        printf("positions:      learned%s%s\n",
               in->positions_from_padding ? ", counted from padding_idx + 1" : "",
               in->rel_bias ? "; relative position buckets, one table for every layer" : "");
    if (in->rotary_dim)
        printf("positions:      rotary positions on %d of %d columns per head (%s; base %g), "
               "none learned\n",
               in->rotary_dim, in->hidden / in->heads,
               in->rotary_interleaved ? "interleaved pairs" : "halves", in->rotary_base);
    if (in->alibi)
        printf("positions:      ALiBi positions (-slope·|i - j| on the scores, the ALiBi paper's "
               "slopes for %d heads), none learned\n",
               in->heads);
    if (in->no_bias) {
        static const char *const parts[] = {"qkv", "attention output", "fc1", "fc2"};
        printf("no bias on:    ");
        for (int i = 0, first = 1; i < 4; i++)
            if (in->no_bias & 1 << i) printf("%s %s", first ? "" : ",", parts[i]), first = 0;
        printf("\n");
    }
    if (!strcmp(in->pooling, "tokens"))
        printf("head:           a classifier on every token\n");
    else if (!strcmp(in->head, "classifier") && in->pooler && !strcmp(in->pooler, "relu"))
        printf("head:           token 0, dense + ReLU (pre_classifier), classifier\n");
    else if (!strcmp(in->head, "classifier") && in->family && strcmp(in->family, "BERT"))
        printf("head:           token 0, dense + tanh, out_proj\n");
    else if (!strcmp(in->head, "none") && !in->pooler && !strcmp(in->pooling, "bert"))
        printf("head:           none: token 0's final state (no pooler)\n");
}

/* A BERT or another text encoder: its architecture, input, encoder and labels. */
static void print_text_model(const vit_text_context *ctx, const vit_model_info *in,
                             int all_labels) {
    printf("architecture:   %s (%s encoder)\n", in->architecture,
           in->post_norm ? "post-LN" : "pre-LN");
    printf("input:          up to %d token%s, vocabulary %d\n", in->max_positions,
           plural(in->max_positions), in->vocab_size);
    print_tokenizer(ctx, in);
    printf("flops/128 tok:  %.3f GFLOP\n", in->flops / 1e9);
    print_encoder(in);
    print_text_parts(in);
    printf("parameters:     %zu\n", in->parameters);
    print_embedding(in);
    const labeled l = {.text = ctx};
    if (strcmp(in->head, "none")) print_labels(&l, in->num_labels, all_labels);
}

/* The model part of vit info, loaded by the loader its folder's kind takes; -1 if it fails. */
/* shown: what the model line names (a Hub name with its snapshot, or the folder). */
static int print_model(const char *dir, const char *shown, int all_labels, vit_error *err) {
    vit_model_kind kind;
    if (vit_folder_kind(dir, &kind, err) != 0) return -1;
    vit_model_info in;
    if (kind == VIT_KIND_IMAGE_TO_TEXT) {
        vit_gen_params gp = vit_gen_default_params();
        gp.tokenizer_optional = 1;
        vit_gen_context *g = vit_gen_load(dir, &gp, err);
        if (!g) return -1;
        printf("model:          %s\n", shown);
        print_image_to_text(g);
        vit_gen_free(g);
    } else if (kind == VIT_KIND_TEXT) {
        vit_text_context *t = load_text_for_info(dir, err);
        if (!t) return -1;
        vit_text_model_info(t, &in);
        printf("model:          %s\n", shown);
        print_weights(&in);
        if (in.tower_alone) {
            print_one_tower(&in);
            print_tokenizer(t, &in);
            printf("parameters:     %zu\n", in.parameters);
            print_embedding(&in);
        } else {
            print_text_model(t, &in, all_labels);
        }
        print_sentence_pipeline(t);
        vit_text_free(t);
    } else {
        vit_context *ctx = vit_load(dir, NULL, err);
        if (!ctx) return -1;
        vit_model_info_get(ctx, &in);
        printf("model:          %s\n", shown);
        print_weights(&in);
        if (kind == VIT_KIND_JOINT) {
            print_joint(&in, dir);
            printf("parameters:     %zu (image tower)\n", in.parameters);
            print_embedding(&in);
        } else if (in.tower_alone) {
            print_one_tower(&in);
            printf("parameters:     %zu\n", in.parameters);
            print_embedding(&in);
        } else {
            print_image_model(ctx, &in, all_labels);
        }
        vit_free(ctx);
    }
    return 0;
}

/* The library, its backends and what this build reads. */
static void print_build(void) {
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
    if (!cli_model_dir("info", c.model, dir, sizeof dir)) return 1;
    /* a Hub name is shown as such, with the snapshot it resolved to */
    const char *env = getenv("VIT_MODEL"), *ref = c.model ? c.model : env && *env ? env : NULL;
    char shown[4400];
    if (ref && strcmp(ref, dir) != 0 && !cli_is_dir(ref))
        snprintf(shown, sizeof shown, "%s (%s)", ref, dir);
    else
        snprintf(shown, sizeof shown, "%s", dir);
    vit_error err = {0};
    if (print_model(dir, shown, all_labels, &err) != 0) {
        cli_print_load_error("info", c.model, dir, &err);
        return 1;
    }
    print_build();
    return 0;
}
