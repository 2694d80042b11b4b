#ifndef VIT_CONFIG_H
#define VIT_CONFIG_H

#include "vit/base/error.h"
#include "vit/core/ops.h"

/* config.json of a Hugging Face model directory (docs/SPEC.md §1). */

/* The most patches per side of an image (128: 16,384 tokens, a 2048-pixel image at patch 16):
 * attention grows with the square of the tokens, and n * n must not overflow. */
#define CONFIG_MAX_GRID 128

/* Which forward runs the model: MODEL_VIT an image encoder (ViT, DeiT, DINOv2, BEiT, the image
 * towers of CLIP and SigLIP, a VisionEncoderDecoder's encoder: vit_model); MODEL_TEXT a text
 * encoder (BERT, the text towers of CLIP and SigLIP: text_model); MODEL_DECODER a text decoder
 * with cross-attention (a VisionEncoderDecoderModel's decoder: decoder_model). */
typedef enum { MODEL_VIT, MODEL_TEXT, MODEL_DECODER } model_kind;

/* Which image classifier (model_type and architectures in config.json). They share the encoder
 * and differ in the special tokens before the patches and the classifier heads on them:
 *   ARCH_VIT           ViTForImageClassification: [CLS]; a classifier on CLS
 *   ARCH_DEIT          DeiTForImageClassification: [CLS, distillation]; a classifier on CLS
 *   ARCH_DEIT_TEACHER  DeiTForImageClassificationWithTeacher: [CLS, distillation]; one classifier
 *                      on each, logits = their mean */
typedef enum { ARCH_VIT, ARCH_DEIT, ARCH_DEIT_TEACHER } image_arch;

/* FAMILY_PLAIN: Hugging Face's ViT, DeiT and BERT (classifiers, or base models for features).
 * FAMILY_CLIP, FAMILY_SIGLIP: the towers of a joint image-text model (CLIPModel, SiglipModel and
 * their one-tower folders; config_joint.c). A folder of a joint model holds two towers; which one
 * a model_config describes is chosen when it is read (config_tower). */
/* FAMILY_VED: a VisionEncoderDecoderModel folder, whose image tower is its encoder (ViTModel or
 * DeiTModel: no head, every row out) and whose text tower is its decoder (decoder_arch). */
/* The image backbones (docs/SPEC.md §11, §12), each a base model (features) or its
 * ForImageClassification class (cfg->bare says which): FAMILY_DINOV2 (model_type "dinov2"),
 * FAMILY_DINOV2_REG ("dinov2_with_registers"), FAMILY_BEIT ("beit") and FAMILY_DATA2VEC
 * ("data2vec-vision": BEiT's architecture under another name). FAMILY_TIMM: a timm
 * VisionTransformer folder (config.json with `architecture` and `pretrained_cfg`, timm's tensor
 * names; config_timm.c). */
typedef enum {
    FAMILY_PLAIN,
    FAMILY_CLIP,
    FAMILY_SIGLIP,
    FAMILY_VED,
    FAMILY_DINOV2,
    FAMILY_DINOV2_REG,
    FAMILY_BEIT,
    FAMILY_DATA2VEC,
    FAMILY_TIMM,
    FAMILY_TEXT
} model_family;
/* FAMILY_TEXT: the text encoders beside BERT (RoBERTa, XLM-R, DistilBERT, MPNet;
 * config_text.c), each a base model, a sequence or a token classifier. */
typedef enum { DECODER_TROCR, DECODER_GPT2 } decoder_arch;
typedef enum { TOWER_DEFAULT, TOWER_IMAGE, TOWER_TEXT } config_tower;

/* What is read out of the encoder's output:
 *   POOL_CLS      image: the final LayerNorm on the special tokens' rows (ViT, DeiT, CLIP)
 *   POOL_PROBE    image: the final LayerNorm on every row, then SigLIP's attention probe
 *   POOL_BERT     text: token 0 through the tanh pooler (BERT)
 *   POOL_EOS      text: the final LayerNorm at the first end token (CLIP)
 *   POOL_EOS_MAX  text: the same at the largest id (CLIP configs with the old eos_token_id 2)
 *   POOL_LAST     text: the same at the last position (SigLIP, texts padded to max_length) */
/*   POOL_NORM_MEAN image: the final LayerNorm on every row, then the mean of the patch rows
 *                 (timm's global_pool 'avg' with fc_norm false; no class token)
 *   POOL_ALL      image: the final LayerNorm on every row (a VisionEncoderDecoder's encoder)
 *   POOL_NEXT     text: every row through the output projection (a decoder's next-token logits)
 *   POOL_CLS_MEAN image: the final LayerNorm on every row, then [CLS, the mean of the patch rows]
 *                 (Dinov2ForImageClassification; registers left out of the mean)
 *   POOL_MEAN     image: no final LayerNorm; the mean of the patch rows through its own LayerNorm
 *                 (BEiT's use_mean_pooling: pooler.layernorm) */
typedef enum {
    POOL_CLS,
    POOL_CLS_MEAN,
    POOL_MEAN,
    POOL_PROBE,
    POOL_BERT,
    POOL_EOS,
    POOL_EOS_MAX,
    POOL_LAST,
    POOL_ALL,
    POOL_NEXT,
    POOL_NORM_MEAN,
    POOL_TOKENS
} pool_kind;
/*   POOL_TOKENS   text: every row through the classifier (ForTokenClassification) */
/* The head on the pooled rows: a classifier (num_labels, with bias), a projection into a joint
 * space without bias (CLIP) or with one (SigLIP's text head), or none (SigLIP's image tower: the
 * probe's output is the embedding). For the last three num_labels is the embedding's length. */
typedef enum { HEAD_CLASSIFIER, HEAD_PROJECTION, HEAD_LINEAR, HEAD_NONE } head_kind;

/* The named options the family sets (config_apply_family), which the layout and the forwards
 * follow: no family test below this point. */
typedef struct {
    int special;     /* image: tokens before the patches: 0 (SigLIP), 1 (CLS), 2 (DeiT) */
    int patch_bias;  /* image: the patch projection has a bias (not CLIP's) */
    int embed_norm;  /* a LayerNorm on the summed embeddings (BERT; CLIP's pre_layrnorm) */
    int token_types; /* text: token type embeddings (BERT) */
    int post_norm;   /* the encoder is post-LN (BERT) */
    int causal;      /* text: each position attends to itself and those before it (CLIP) */
    pool_kind pool;
    head_kind head;
    /* decoders */
    int cross;           /* cross-attention over the encoder's states in every layer */
    int enc_proj;        /* those states go through enc_to_dec_proj first (widths differ) */
    int pos_offset;      /* learned positions: row of position p is p + pos_offset (TrOCR: 2) */
    int sinusoidal;      /* positions from the sinusoid table (TrOCR), not learned */
    int scale_embedding; /* token embeddings times sqrt(hidden_size) */
    int final_norm;      /* a LayerNorm after the last layer (GPT-2's ln_f) */
    int tied_head;       /* the output projection is the token embedding matrix */
    int conv1d;          /* linear weights stored [in, out] (GPT-2's Conv1D) */
    /* image backbones (DINOv2, BEiT) */
    int registers;       /* tokens after the special ones and before the patches, without
                          * positions (DINOv2's registers) */
    int abs_pos;         /* learned absolute positions on the special tokens and the patches */
    int pos_antialias;   /* another size resizes them with antialiasing (DINOv2 with registers) */
    int layer_scale;     /* per-layer vectors scaling both branches before the residual add */
    int swiglu;          /* the feed-forward is SwiGLU (fc1 twice the width, no activation) */
    int key_bias;        /* the key projection has a bias (not BEiT's: q and v only) */
    int rel_bias;        /* a relative position bias table per layer (BEiT) */
    int shared_rel_bias; /* one relative position bias table for every layer (BEiT) */
    int processor_size;  /* runs by default at the preprocessor's size, not image_size
                          * (DINOv2: the Hub's configs say 518, their processors crop 224) */
    /* joint image-text towers (config_joint.c) */
    int joint;         /* a tower of a joint image-text model (CLIP, SigLIP; also saved alone):
                        * its output is an embedding, scored against the other tower's */
    int joint_sigmoid; /* those scores are read one by one through a sigmoid, plus logit_bias
                        * (SigLIP); else a softmax over the classes (CLIP) */
    /* text encoders (config_text.c) */
    int pos_from_ids; /* positions count the non-padding ids up from pos_pad + 1, padding at
                       * pos_pad (RoBERTa's create_position_ids_from_input_ids) */
    int pos_pad;      /* that padding index */
    int pooler;       /* a dense layer on token 0 (BERT's pooler, RoBERTa's classifier.dense,
                       * DistilBERT's pre_classifier); 0: none, the row itself is read */
    int pooler_relu;  /* its activation is ReLU (DistilBERT), else tanh */
    int drop_first;   /* training: dropout on token 0 before that dense layer too
                       * (RobertaClassificationHead, MPNetClassificationHead) */
    int rel_buckets;  /* MPNet: one table of relative position buckets for every layer */
    /* NomicBERT: rotary positions on rotary_dim columns of each head (encoder_shape's), no
     * learned ones; JinaBERT v2: ALiBi's bias on the scores (alibi), no learned positions */
    int rotary_dim, rotary_interleaved, alibi;
    double rotary_base;
    int no_bias; /* projections without a bias (NO_BIAS_QKV | ...): NomicBERT's qkv_proj_bias ... */
} tower_options;
enum { NO_BIAS_QKV = 1, NO_BIAS_OUT = 2, NO_BIAS_FC1 = 4, NO_BIAS_FC2 = 8 };

/* CrossEncoder's activation_fn on a pair's logits: torch.nn.Identity, Sigmoid, Tanh */
typedef enum { SCORE_DEFAULT, SCORE_IDENTITY, SCORE_SIGMOID, SCORE_TANH } score_activation;

typedef struct {
    model_kind kind;
    model_family family;
    tower_options opt; /* set from kind, arch and family by config_apply_family */
    int eos_token_id;  /* text towers of joint models */
    /* shared encoder */
    int hidden_size, num_layers, num_heads, intermediate_size;
    activation_kind act;
    float layer_norm_eps;
    /* ViT, DeiT */
    image_arch arch;
    int image_size, patch_size, num_channels, qkv_bias;
    int image_width; /* image_size is the height: a config's [height, width] (HF ViTConfig takes
                      * either form) gives another width; an int the same */
    /* BERT */
    int vocab_size, max_position_embeddings, type_vocab_size;
    int pad_token_id;     /* the embedding row HF keeps at zero when initialising */
    int text_arch;        /* FAMILY_TEXT: which of config_text.c's families */
    int token_classifier; /* a ForTokenClassification class: logits for every token */
    int rel_buckets;      /* relative_attention_num_buckets (MPNet) */
    /* NomicBERT (config_text.c): rotary_emb_fraction of each head as columns, rotary_emb_base,
     * rotary_emb_interleaved; the projections without bias (tower_options' NO_BIAS_*) */
    int rotary_dim, rotary_interleaved, no_bias;
    double rotary_base;
    /* problem_type "regression": the logits are scores (MSE when trained; the pipeline applies
     * no function to them) */
    int regression;
    /* a cross-encoder's score of its logit (sentence-transformers' CrossEncoder activation_fn):
     * config.json's sentence_transformers.activation_fn, else its older
     * sbert_ce_default_activation_function, else sigmoid for one label, identity for more */
    score_activation score_act;
    int no_pooler; /* a base text model saved without its pooler (add_pooling_layer=False; set
                    * at load from the file): token 0's final state is its output */
    /* decoders (MODEL_DECODER) */
    decoder_arch dec_arch;
    int cross_dim;      /* width of the states cross-attention reads */
    int encoder_hidden; /* the encoder's width (enc_to_dec_proj's input) */
    int tie_word_embeddings, learned_positions, scale_embedding, layernorm_embedding;
    int scale_attn_by_layer; /* GPT-2's scale_attn_by_inverse_layer_idx: scores / (layer + 1) */
    /* DINOv2, BEiT (docs/SPEC.md §11, §12) */
    int bare; /* the base model (ViTModel, BertModel, Dinov2Model, BeitModel, ...): features, no
               * classifier; a SigLIP image tower alone (SiglipVisionModel): no logit_scale */
    int one_tower; /* a joint model's tower saved alone (model_type clip_vision_model, ...) */
    int no_probe;  /* a SigLIP image tower with vision_use_head false: no attention-pooling probe */
    int no_projection; /* CLIPVisionModel: a CLIP image tower without visual_projection */
    int num_registers; /* num_register_tokens (dinov2_with_registers) */
    int use_swiglu, layer_scale, use_abs_pos, use_rel_bias, use_shared_rel_bias, mean_pooling;
    double mlp_ratio, layer_scale_init; /* layerscale_value / layer_scale_init_value */
    /* training's decoder input (HF's shift_tokens_right): config.json's top-level
     * decoder_start_token_id and pad_token_id, -1 when unset */
    int start_token_id, shift_pad_id;
    /* timm (config_timm.c): the registered architecture, and what its model_args say beyond the
     * shared fields: a class token, positions on the patches only (no_embed_class), a LayerNorm
     * on the embeddings (pre_norm), the norm after pooling (fc_norm) and the pooling */
    char timm_arch[64];
    int timm_class_token, timm_no_embed_class, timm_pre_norm, timm_fc_norm;
    int timm_reg_pos; /* registers with positions (reg_tokens and no_embed_class false) */
    pool_kind timm_pool;
    /* open_clip (config_open_clip.c): read from open_clip_config.json, the tensors under
     * open_clip's names in open_clip_model.safetensors; a CustomTextCLIP's text tower under
     * "text."; logit_scale 0-d or [1] (nonscalar_logit_scale); a logit_bias (init_logit_bias:
     * the scores through a sigmoid); ln_pre (no_ln_pre false); the text projection an
     * nn.Linear with bias (proj_bias) or a [width, embed_dim] matrix; the text pooling */
    int open_clip, oc_custom_text, oc_scale_ndim, oc_logit_bias, oc_ln_pre, oc_proj_bias;
    pool_kind oc_text_pool;
    /* an HFTokenizer (hf_tokenizer_name: the folder's tokenizer files, padded to context_length
     * with their pad token) with tokenizer_kwargs {"clean": "canonicalize"} */
    int oc_hf_tokenizer;
    /* an open_clip timm image tower (TimmModel, timm_model_name): the trunk under "trunk." with
     * the timm fields above, then its projection (oc_proj_bias: with a bias) */
    enum { OC_TIMM_NO = 0, OC_TIMM_PROJ, OC_TIMM_TRUNK_HEAD, OC_TIMM_NONE } oc_timm;
    /* classifier */
    int num_labels;
    char **labels; /* num_labels strings */
} model_config;

int model_config_load(const char *model_dir, model_config *cfg, vit_error *err);
/* Parses config.json text; `source` names it in errors. */
int model_config_parse(const char *json, const char *source, model_config *cfg, vit_error *err);
/* The same for one tower of a joint model (TOWER_DEFAULT: a joint model's image tower; a ViT,
 * DeiT or BERT folder has one tower whatever is asked). */
int model_config_load_tower(const char *model_dir, config_tower tower, model_config *cfg,
                            vit_error *err);
int model_config_parse_tower(const char *json, const char *source, config_tower tower,
                             model_config *cfg, vit_error *err);
/* Sets cfg->opt from cfg->kind, arch and family (done by the parser and by model_layout, so a
 * configuration built in code gets its options too). */
void config_apply_family(model_config *cfg);
void model_config_free(model_config *cfg);
const char *activation_name(activation_kind act);

/* Tokens before the patches: 1 (CLS), 2 for a DeiT (CLS, distillation), 0 for SigLIP, 1 + the
 * registers for DINOv2 with registers. */
int config_special_tokens(const model_config *cfg);
/* Whether the first of them is a class token (not SigLIP's none, not a timm model's register). */
int config_class_token(const model_config *cfg);
/* Classifier heads, each on one of the first tokens after the final LayerNorm; logits are their
 * mean: 2 for DeiTForImageClassificationWithTeacher, else 1. */
int config_classifier_heads(const model_config *cfg);
/* The Hugging Face class ("ViTForImageClassification", ...) and model_type ("vit", "deit",
 * "bert") of cfg. */
const char *config_architecture(const model_config *cfg);
const char *config_model_type(const model_config *cfg);
/* The family's name for people ("ViT", "DeiT", "BERT", "CLIP", "SigLIP", "DINOv2", ...). */
const char *config_family_name(const model_config *cfg);
/* A joint image-text model's tower (CLIP, SigLIP; config_joint.c), the joint model's class
 * ("CLIPModel", "SiglipModel"), the family's name ("CLIP", "SigLIP"), model_type ("clip",
 * "siglip", also for a tower alone), the tower's class ("CLIPModel (vision tower)",
 * "SiglipTextModel", ...) and tensor prefix ("vision_model.", "text_model."). */
int config_is_joint(const model_config *cfg);
const char *config_joint_class(const model_config *cfg);
const char *config_joint_name(const model_config *cfg);
const char *config_joint_model_type(const model_config *cfg);
const char *config_joint_architecture(const model_config *cfg);
const char *config_joint_prefix(const model_config *cfg);
/* For params.c: a joint tower's tensors beyond the encoder's. */
typedef struct {
    const char *projection;  /* the projection into the joint space ("visual_projection",
                              * "text_projection", SigLIP's text "head"); NULL: none */
    int projection_prefixed; /* under the tower's prefix (SigLIP's head), not at the top (CLIP's) */
    int scale_ndim;          /* logit_scale: a 0-d tensor (CLIP) or [1] (SigLIP) */
} joint_tensors;
void config_joint_tensors(const model_config *cfg, joint_tensors *t);
/* A DINOv2 or BEiT family (FAMILY_DINOV2 .. FAMILY_DATA2VEC). */
int config_is_backbone(const model_config *cfg);
/* A backbone's prefix in its ForImageClassification file ("dinov2.", "beit.", ...), its class
 * ("Dinov2Model", "BeitForImageClassification", ...) and model_type. */
const char *config_backbone_prefix(const model_config *cfg);
const char *config_backbone_class(const model_config *cfg);
const char *config_backbone_model_type(const model_config *cfg);

struct cJSON;
/* For the family readers: the fields every family shares (§1's: sizes, activation, eps, image,
 * and id2label for a classifier), and num_labels = n outputs named DIM_0.. (a model whose output
 * is an embedding). */
int config_parse_common(const struct cJSON *root, model_config *cfg, const char *src,
                        vit_error *err);
int config_dim_labels(model_config *cfg, int n, const char *src, vit_error *err);
/* The class a folder names among the n that vit runs for its model_type `type`: the index of the
 * first entry of `architectures` that is one of names (none at all: 0); -1 with err naming the
 * first entry and the n names when none is. */
int config_pick_class(const struct cJSON *root, const char *type, const char *const *names, int n,
                      const char *src, vit_error *err);
/* For config.c: the joint families' reader (config_joint.c). 1 when model_type is one of theirs
 * (cfg's family, kind and one_tower set; tower chooses a joint folder's), 0 when not. */
int config_joint_type(const char *model_type, config_tower tower, model_config *cfg);
/* The class root names (cfg from config_joint_type): cfg's bare and no_projection. */
int config_joint_pick_class(const struct cJSON *root, const char *model_type, model_config *cfg,
                            const char *src, vit_error *err);
/* Its defaults and fields, the embedding's length as num_labels; an error names src. */
int config_joint_parse(const struct cJSON *root, model_config *cfg, const char *src,
                       vit_error *err);
/* Its options, for config_apply_family. */
void config_joint_options(const model_config *cfg, tower_options *o);
/* For config.c: the backbone families' reader (config_backbone.c). 1 when model_type names one
 * (cfg's kind, family and defaults set), 0 when not. */
int config_backbone_type(const char *model_type, model_config *cfg);
/* Its fields and class (cfg from config_backbone_type); an error names src and the field. */
int config_backbone_parse(const struct cJSON *root, model_config *cfg, const char *src,
                          vit_error *err);
/* Its options, for config_apply_family. */
void config_backbone_options(const model_config *cfg, tower_options *o);
/* For config.c: a timm folder's config.json (config_timm.c): 1 when root is one (`architecture`
 * and `pretrained_cfg`, no model_type), and its reader, options and names. */
int config_timm_is(const struct cJSON *root);
int config_timm_parse(const struct cJSON *root, model_config *cfg, const char *src, vit_error *err);
void config_timm_options(const model_config *cfg, tower_options *o);
/* A timm VisionTransformer built by name as timm.create_model(name, num_classes, global_pool,
 * **model_args) builds it (pool NULL: the registration's; img_size: model_args' if it has one),
 * or (reset) built with the registration's pooling and then reset_classifier(num_classes, pool),
 * for a tower inside another folder (open_clip's TimmModel); cfg as config_timm_parse leaves it,
 * without labels. */
int config_timm_tower(const char *name, const struct cJSON *model_args, int img_size,
                      int num_classes, const char *pool, int reset, model_config *cfg,
                      const char *src, vit_error *err);
/* For config.c: an open_clip folder's open_clip_config.json (config_open_clip.c), read as the
 * tower asked (TOWER_DEFAULT: the image tower) of a CLIP-family model, and its options. */
#define OPEN_CLIP_CONFIG  "open_clip_config.json"
#define OPEN_CLIP_WEIGHTS "open_clip_model.safetensors"
int config_open_clip_parse(const struct cJSON *root, config_tower tower, model_config *cfg,
                           const char *src, vit_error *err);
void config_open_clip_options(const model_config *cfg, tower_options *o);
/* For config.c: the text encoders' reader (config_text.c). 1 when model_type names one of
 * them (cfg's kind and family set), 0 when not; then its class, fields and options. */
int config_text_type(const char *model_type, model_config *cfg);
/* The text families config.json's model_type alone does not name: JinaBERT v2 is model_type
 * "bert" with architectures JinaBert*. 1 when root is one (cfg's family set). */
int config_text_type_of(const struct cJSON *root, const char *model_type, model_config *cfg);
int config_text_parse(const struct cJSON *root, model_config *cfg, const char *src, vit_error *err);
/* cfg->score_act from config.json (every model's: an image model has none of its keys) */
int config_score_activation(const struct cJSON *root, model_config *cfg, const char *src,
                            vit_error *err);
void config_text_options(const model_config *cfg, tower_options *o);
/* Into root, the fields of cfg's configuration class (RobertaConfig, XLMRobertaConfig,
 * DistilBertConfig, MPNetConfig) that its parser reads, with the dropouts given; the classes'
 * defaults stand for the rest (bos_token_id, ...) as transformers would read them. */
void config_text_write(struct cJSON *root, const model_config *cfg, float hidden_dropout,
                       float attention_dropout);
/* Its class ("RobertaForSequenceClassification", ...), model_type, name for people ("RoBERTa")
 * and tensor prefix ("roberta."). */
const char *config_text_architecture(const model_config *cfg);
const char *config_text_model_type(const model_config *cfg);
const char *config_text_name(const model_config *cfg);
const char *config_text_prefix(const model_config *cfg);
/* The tensor names of a text encoder (BERT's too) for params.c: formats under the prefix, %d the
 * layer; NULL where the model has no such tensor. */
typedef struct {
    const char *word, *position, *token_type, *embed_norm;
    const char *qkv;         /* "...layer.%d.attention.self.%s": %s one of parts */
    const char *parts[3];    /* query, key, value */
    const char *out, *norm1; /* attention output projection, the LayerNorm after it */
    const char *qkv_fused;   /* or one [3D, D] tensor for all three (NomicBERT's Wqkv) */
    const char *fc1, *fc2, *norm2;
    const char *fc1_parts[2]; /* or a gated MLP's halves as two tensors, u₁ first (NomicBERT's
                               * fc12, the gate, then fc11) */
    const char *rel_bias;     /* the relative position bucket table [buckets, heads] */
    const char *pooler;       /* a base model's pooler (under the prefix) */
    const char *head_dense;   /* a sequence classifier's dense layer on token 0 */
    int head_dense_prefixed;  /* under the prefix (BERT's bert.pooler.dense) */
    const char *head_out;     /* its output layer (at the top) */
} text_names;
const text_names *config_text_names(const model_config *cfg);
/* The longest sequence a text encoder's position table holds (RoBERTa's positions start after
 * its padding index: max_position_embeddings - pad - 1). */
int config_text_max_tokens(const model_config *cfg);
/* Its fields beyond ViTConfig's into a config.json object being written (save_pretrained's
 * names), so that the file reads back as the same model. */
void config_backbone_write(struct cJSON *root, const model_config *cfg);

#endif
