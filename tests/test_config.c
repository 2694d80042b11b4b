/* config.json parsing (docs/SPEC.md §1): HF defaults for missing fields, errors naming the field.
 */
#include "tests/testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vit/model/config.h"

static void expect_tower_error(const char *json, config_tower tower, const char *needle) {
    model_config cfg;
    vit_error err = {0};
    assert_int_equal(model_config_parse_tower(json, "m/config.json", tower, &cfg, &err), -1);
    print_message("  %s\n", err.msg);
    if (!strstr(err.msg, "m/config.json") || !strstr(err.msg, needle))
        fail_msg("expected '%s' in '%s'", needle, err.msg);
}

static void expect_error(const char *json, const char *needle) {
    expect_tower_error(json, TOWER_DEFAULT, needle);
}

static void test_defaults(void **state) {
    (void)state;
    model_config cfg;
    vit_error err = {0};
    assert_int_equal(model_config_parse("{\"model_type\": \"vit\"}", "m/config.json", &cfg, &err),
                     0);
    /* transformers ViTConfig defaults */
    assert_int_equal(cfg.hidden_size, 768);
    assert_int_equal(cfg.num_layers, 12);
    assert_int_equal(cfg.num_heads, 12);
    assert_int_equal(cfg.intermediate_size, 3072);
    assert_int_equal(cfg.image_size, 224);
    assert_int_equal(cfg.patch_size, 16);
    assert_int_equal(cfg.num_channels, 3);
    assert_int_equal(cfg.qkv_bias, 1);
    assert_int_equal(cfg.act, ACT_GELU);
    assert_true(cfg.layer_norm_eps == 1e-12f);
    assert_int_equal(cfg.num_labels, 2);
    assert_string_equal(cfg.labels[1], "LABEL_1");
    model_config_free(&cfg);
}

static void test_fields_and_labels(void **state) {
    (void)state;
    model_config cfg;
    vit_error err = {0};
    const char *json =
        "{\"model_type\":\"vit\",\"hidden_size\":60,\"num_attention_heads\":3,"
        "\"hidden_act\":\"gelu_new\",\"qkv_bias\":false,\"layer_norm_eps\":1e-6,"
        "\"id2label\":{\"1\":\"dog\",\"0\":\"cat\",\"2\":\"T-shirt/top\"},\"unknown\":[1]}";
    assert_int_equal(model_config_parse(json, "m/config.json", &cfg, &err), 0);
    assert_int_equal(cfg.hidden_size, 60);
    assert_int_equal(cfg.act, ACT_GELU_TANH);
    assert_int_equal(cfg.qkv_bias, 0);
    assert_true(cfg.layer_norm_eps == 1e-6f);
    assert_int_equal(cfg.num_labels, 3);
    assert_string_equal(cfg.labels[0], "cat");
    assert_string_equal(cfg.labels[2], "T-shirt/top");
    model_config_free(&cfg);
    assert_int_equal(
        model_config_parse("{\"model_type\":\"bert\",\"num_labels\":5}", "b", &cfg, &err), 0);
    assert_int_equal(cfg.kind, MODEL_TEXT);
    assert_int_equal(cfg.num_labels, 5);
    assert_int_equal(cfg.max_position_embeddings, 512);
    model_config_free(&cfg);
}

static void test_errors(void **state) {
    (void)state;
    expect_error("not json", "not a valid JSON object");
    expect_error("{\"hidden_size\": \"wide\"}", "field 'hidden_size' must be an integer");
    expect_error("{\"hidden_size\": 64.5}", "field 'hidden_size' must be an integer");
    expect_error("{\"hidden_size\": -8}", "field 'hidden_size'");
    expect_error("{\"hidden_size\": 64, \"num_attention_heads\": 5}", "not divisible");
    expect_error("{\"image_size\": 8, \"patch_size\": 16}", "field 'patch_size' (16) is larger");
    expect_error("{\"hidden_act\": \"swish\"}", "field 'hidden_act'");
    expect_error("{\"model_type\": \"gpt2\"}", "field 'model_type'");
    expect_error("{\"layer_norm_eps\": -1}", "field 'layer_norm_eps'");
    expect_error("{\"qkv_bias\": 3}", "field 'qkv_bias'");
    expect_error("{\"id2label\": {\"0\": \"a\", \"5\": \"b\"}}", "id2label key '5'");
    expect_error("{\"id2label\": {\"x\": \"a\"}}", "id2label key 'x'");
    expect_error("{\"id2label\": {\"0\": 7}}", "id2label[0]");
    expect_error("{\"num_channels\": 2}", "field 'num_channels'");
    /* found by tests/fuzz/fuzz_config: false read as 0 escaped the range and divided by zero */
    expect_error("{\"patch_size\": false}", "field 'patch_size' is false, outside 1..65536");
    expect_error("{\"image_size\": 4096, \"patch_size\": 2}", "2048 patches per side");
}

/* CLIP and SigLIP: each tower from its sub-config with the family's defaults (CLIPVisionConfig,
 * CLIPTextConfig, Siglip*Config), the options config_apply_family sets, the embedding length as
 * num_labels, one-tower folders, and the joint fields' errors. */
static void test_joint(void **state) {
    (void)state;
    model_config c;
    vit_error err = {0};
    const char *clip = "{\"model_type\": \"clip\", \"projection_dim\": 40, \"text_config\": "
                       "{\"hidden_size\": 64, \"num_attention_heads\": 4, \"eos_token_id\": 2}}";
    assert_int_equal(model_config_parse_tower(clip, "m", TOWER_IMAGE, &c, &err), 0);
    assert_int_equal(c.kind, MODEL_VIT);
    assert_int_equal(c.hidden_size, 768); /* CLIPVisionConfig's */
    assert_int_equal(c.patch_size, 32);
    assert_int_equal(c.act, ACT_QUICK_GELU);
    assert_int_equal(c.num_labels, 40);
    assert_true(c.opt.embed_norm && !c.opt.patch_bias && c.opt.special == 1);
    assert_int_equal(c.opt.head, HEAD_PROJECTION);
    model_config_free(&c);
    assert_int_equal(model_config_parse_tower(clip, "m", TOWER_TEXT, &c, &err), 0);
    assert_int_equal(c.kind, MODEL_TEXT);
    assert_int_equal(c.hidden_size, 64);
    assert_int_equal(c.max_position_embeddings, 77);
    assert_true(c.opt.causal && !c.opt.post_norm && !c.opt.embed_norm && !c.opt.token_types);
    assert_int_equal(c.opt.pool, POOL_EOS_MAX); /* eos_token_id 2: the largest id */
    model_config_free(&c);
    const char *siglip = "{\"model_type\": \"siglip\"}";
    assert_int_equal(model_config_parse_tower(siglip, "m", TOWER_IMAGE, &c, &err), 0);
    assert_true(c.opt.special == 0 && c.opt.patch_bias && c.opt.pool == POOL_PROBE);
    assert_int_equal(c.num_labels, 768); /* the probe's output: the width */
    assert_int_equal(c.act, ACT_GELU_TANH);
    model_config_free(&c);
    assert_int_equal(model_config_parse_tower(siglip, "m", TOWER_TEXT, &c, &err), 0);
    assert_true(!c.opt.causal && c.opt.pool == POOL_LAST && c.opt.head == HEAD_LINEAR);
    assert_int_equal(c.max_position_embeddings, 64);
    model_config_free(&c);
    /* a one-tower folder is that tower whatever is asked */
    const char *text_only = "{\"model_type\": \"clip_text_model\", \"projection_dim\": 16}";
    assert_int_equal(model_config_parse_tower(text_only, "m", TOWER_IMAGE, &c, &err), 0);
    assert_int_equal(c.kind, MODEL_TEXT);
    assert_int_equal(c.num_labels, 16);
    assert_int_equal(c.opt.pool, POOL_EOS); /* the default eos_token_id 49407 */
    model_config_free(&c);
    expect_error("{\"model_type\": \"clip\", \"vision_config\": 3}",
                 "field 'vision_config' must be an object");
    expect_error("{\"model_type\": \"clip\", \"projection_dim\": 0}", "field 'projection_dim'");
    expect_error("{\"model_type\": \"siglip\", \"vision_config\": {\"vision_use_head\": false}}",
                 "vision_use_head false in a SiglipModel");
    expect_error("{\"model_type\": \"siglip\", \"vision_config\": {\"hidden_act\": \"x\"}}",
                 "field 'hidden_act'");
}

/* Each joint class vit runs, by the names transformers gives it (config_joint.c's table): the
 * class reported, model_type, family and joint class, a tower alone or not, the tensor prefix,
 * and how the scores are read (joint_sigmoid: SigLIP's sigmoid plus logit_bias; CLIP's
 * softmax). A ViT or a BERT is no joint tower. */
static void test_joint_names(void **state) {
    (void)state;
    static const struct {
        const char *json;
        config_tower tower;
        const char *arch, *type, *family, *joint, *prefix;
        int one_tower, sigmoid;
    } rows[] = {
        {"{\"model_type\": \"clip\"}", TOWER_IMAGE, "CLIPModel (vision tower)", "clip", "CLIP",
         "CLIPModel", "vision_model.", 0, 0},
        {"{\"model_type\": \"clip\"}", TOWER_TEXT, "CLIPModel (text tower)", "clip", "CLIP",
         "CLIPModel", "text_model.", 0, 0},
        {"{\"model_type\": \"clip_vision_model\"}", TOWER_DEFAULT, "CLIPVisionModelWithProjection",
         "clip", "CLIP", "CLIPModel", "vision_model.", 1, 0},
        {"{\"model_type\": \"clip_vision_model\", \"architectures\": [\"CLIPVisionModel\"]}",
         TOWER_TEXT, "CLIPVisionModel", "clip", "CLIP", "CLIPModel", "vision_model.", 1, 0},
        {"{\"model_type\": \"clip_text_model\"}", TOWER_IMAGE, "CLIPTextModelWithProjection",
         "clip", "CLIP", "CLIPModel", "text_model.", 1, 0},
        {"{\"model_type\": \"siglip\"}", TOWER_DEFAULT, "SiglipModel (vision tower)", "siglip",
         "SigLIP", "SiglipModel", "vision_model.", 0, 1},
        {"{\"model_type\": \"siglip\"}", TOWER_TEXT, "SiglipModel (text tower)", "siglip", "SigLIP",
         "SiglipModel", "text_model.", 0, 1},
        {"{\"model_type\": \"siglip_vision_model\"}", TOWER_TEXT, "SiglipVisionModel", "siglip",
         "SigLIP", "SiglipModel", "vision_model.", 1, 1},
        {"{\"model_type\": \"siglip_text_model\"}", TOWER_IMAGE, "SiglipTextModel", "siglip",
         "SigLIP", "SiglipModel", "text_model.", 1, 1},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        model_config c;
        vit_error err = {0};
        if (model_config_parse_tower(rows[i].json, "m", rows[i].tower, &c, &err) != 0)
            fail_msg("%s", err.msg);
        print_message("  %s\n", config_architecture(&c));
        assert_true(config_is_joint(&c) && c.opt.joint);
        assert_string_equal(config_architecture(&c), rows[i].arch);
        assert_string_equal(config_model_type(&c), rows[i].type);
        assert_string_equal(config_family_name(&c), rows[i].family);
        assert_string_equal(config_joint_class(&c), rows[i].joint);
        assert_string_equal(config_joint_prefix(&c), rows[i].prefix);
        assert_int_equal(c.one_tower, rows[i].one_tower);
        assert_int_equal(c.bare, rows[i].one_tower); /* a tower alone has no logit_scale */
        assert_int_equal(c.opt.joint_sigmoid, rows[i].sigmoid);
        model_config_free(&c);
    }
    static const char *const not_joint[] = {"{\"model_type\": \"vit\"}",
                                            "{\"model_type\": \"bert\"}"};
    for (size_t i = 0; i < 2; i++) {
        model_config c;
        vit_error err = {0};
        assert_int_equal(model_config_parse(not_joint[i], "m", &c, &err), 0);
        assert_true(!config_is_joint(&c) && !c.opt.joint && !c.opt.joint_sigmoid);
        model_config_free(&c);
    }
}

/* text_config_dict / vision_config_dict (old CLIP files: openai/clip-vit-large-patch14 has both
 * and text_config at CLIPTextConfig's defaults; openai/clip-vit-base-patch32 has them null):
 * CLIPConfig updates text_config with CLIPTextConfig(**text_config_dict).to_dict(), so every
 * field comes from the dict or the sub-config's default, whatever text_config says; null is as
 * absent. SiglipConfig has no such fields (its __init__ keeps text_config). */
static void test_config_dicts(void **state) {
    (void)state;
    model_config c;
    vit_error err = {0};
    const char *clip =
        "{\"model_type\": \"clip\", \"projection_dim\": 40, \"transformers_version\": null, "
        "\"text_config\": {\"hidden_size\": 512, \"num_attention_heads\": 8, "
        "\"max_position_embeddings\": 16, \"eos_token_id\": 2}, "
        "\"text_config_dict\": {\"hidden_size\": 64, \"num_attention_heads\": 4, "
        "\"num_hidden_layers\": 2}, \"vision_config\": {\"patch_size\": 8}, "
        "\"vision_config_dict\": {\"hidden_size\": 48, \"num_attention_heads\": 4, "
        "\"patch_size\": 14}}";
    assert_int_equal(model_config_parse_tower(clip, "m", TOWER_TEXT, &c, &err), 0);
    assert_int_equal(c.hidden_size, 64);
    assert_int_equal(c.num_heads, 4);
    assert_int_equal(c.num_layers, 2);
    assert_int_equal(c.max_position_embeddings, 77); /* text_config's 16 is overridden */
    assert_int_equal(c.eos_token_id, 49407);         /* and its 2 */
    assert_int_equal(c.opt.pool, POOL_EOS);
    assert_int_equal(c.num_labels, 40);
    model_config_free(&c);
    assert_int_equal(model_config_parse_tower(clip, "m", TOWER_IMAGE, &c, &err), 0);
    assert_int_equal(c.hidden_size, 48);
    assert_int_equal(c.patch_size, 14);
    model_config_free(&c);
    const char *nulls = "{\"model_type\": \"clip\", \"text_config\": {\"hidden_size\": 64, "
                        "\"num_attention_heads\": 4}, \"text_config_dict\": null, "
                        "\"vision_config_dict\": null}";
    assert_int_equal(model_config_parse_tower(nulls, "m", TOWER_TEXT, &c, &err), 0);
    assert_int_equal(c.hidden_size, 64);
    model_config_free(&c);
    const char *siglip =
        "{\"model_type\": \"siglip\", \"text_config\": {\"hidden_size\": 64, "
        "\"num_attention_heads\": 4}, \"text_config_dict\": {\"hidden_size\": 32}}";
    assert_int_equal(model_config_parse_tower(siglip, "m", TOWER_TEXT, &c, &err), 0);
    assert_int_equal(c.hidden_size, 64);
    model_config_free(&c);
    expect_error("{\"model_type\": \"clip\", \"text_config_dict\": [1]}",
                 "field 'text_config_dict' must be an object or null");
}

/* transformers' defaults, for a config.json that gives only model_type (hand-written files carry
 * only what differs), read from huggingface/transformers' src/transformers/models/<x>/
 * configuration_<x>.py: ViTConfig, DeiTConfig (ViTConfig's), BertConfig, CLIPVisionConfig and
 * CLIPTextConfig (CLIPConfig's projection_dim 512), SiglipVisionConfig and SiglipTextConfig
 * (projection_size: the width; eos_token_id 49407), Dinov2Config (patch 14, eps 1e-6,
 * mlp_ratio 4), Dinov2WithRegistersConfig (patch 16, 4 registers), BeitConfig and
 * Data2VecVisionConfig (layer_scale_init_value 0.1, use_mean_pooling, no absolute or relative
 * positions), TrOCRConfig (d_model 1024, 16 heads, ffn 4096, 512 learned positions offset by 2,
 * layernorm_embedding, pad 1, eos 2; nn.LayerNorm's eps 1e-5), GPT2Config (n_embd 768, n_inner
 * None: 4 x n_embd, gelu_new, layer_norm_epsilon 1e-5, n_positions 1024, eos 50256; a
 * VisionEncoderDecoderConfig needs encoder and decoder, and its decoder_start_token_id and
 * pad_token_id are PretrainedConfig's None: -1 here). num_labels: a classifier's
 * PretrainedConfig default of 2, else the embedding's length. */
typedef struct {
    const char *json;
    config_tower tower;
    int hidden, layers, heads, inter;
    activation_kind act;
    float eps;
    int image, patch, vocab, positions, eos, labels;
} default_row;

static void expect_defaults(const default_row *r) {
    model_config c;
    vit_error err = {0};
    if (model_config_parse_tower(r->json, "m", r->tower, &c, &err) != 0) fail_msg("%s", err.msg);
    print_message("  %s: %s\n", r->json, config_architecture(&c));
    assert_int_equal(c.hidden_size, r->hidden);
    assert_int_equal(c.num_layers, r->layers);
    assert_int_equal(c.num_heads, r->heads);
    assert_int_equal(c.intermediate_size, r->inter);
    assert_int_equal(c.act, r->act);
    assert_true(c.layer_norm_eps == r->eps);
    if (c.kind == MODEL_VIT) {
        assert_int_equal(c.image_size, r->image);
        assert_int_equal(c.image_width, r->image);
        assert_int_equal(c.patch_size, r->patch);
        assert_int_equal(c.num_channels, 3);
    } else {
        assert_int_equal(c.vocab_size, r->vocab);
        assert_int_equal(c.max_position_embeddings, r->positions);
        assert_int_equal(c.eos_token_id, r->eos);
    }
    assert_int_equal(c.num_labels, r->labels);
    model_config_free(&c);
}

static void test_hf_defaults(void **state) {
    (void)state;
    static const char ved_trocr[] = "{\"model_type\": \"vision-encoder-decoder\", \"encoder\": "
                                    "{\"model_type\": \"vit\"}, \"decoder\": {\"model_type\": "
                                    "\"trocr\"}}";
    static const char ved_gpt2[] = "{\"model_type\": \"vision-encoder-decoder\", \"encoder\": "
                                   "{\"model_type\": \"deit\"}, \"decoder\": {\"model_type\": "
                                   "\"gpt2\", \"add_cross_attention\": true}}";
    static const default_row rows[] = {
        {"{\"model_type\": \"vit\"}", TOWER_DEFAULT, 768, 12, 12, 3072, ACT_GELU, 1e-12f, 224, 16,
         0, 0, 0, 2},
        {"{\"model_type\": \"deit\"}", TOWER_DEFAULT, 768, 12, 12, 3072, ACT_GELU, 1e-12f, 224, 16,
         0, 0, 0, 2},
        {"{\"model_type\": \"bert\"}", TOWER_DEFAULT, 768, 12, 12, 3072, ACT_GELU, 1e-12f, 0, 0,
         30522, 512, 0, 2},
        {"{\"model_type\": \"clip\"}", TOWER_IMAGE, 768, 12, 12, 3072, ACT_QUICK_GELU, 1e-5f, 224,
         32, 0, 0, 0, 512},
        {"{\"model_type\": \"clip\"}", TOWER_TEXT, 512, 12, 8, 2048, ACT_QUICK_GELU, 1e-5f, 0, 0,
         49408, 77, 49407, 512},
        {"{\"model_type\": \"clip_vision_model\"}", TOWER_DEFAULT, 768, 12, 12, 3072,
         ACT_QUICK_GELU, 1e-5f, 224, 32, 0, 0, 0, 512},
        {"{\"model_type\": \"clip_text_model\"}", TOWER_DEFAULT, 512, 12, 8, 2048, ACT_QUICK_GELU,
         1e-5f, 0, 0, 49408, 77, 49407, 512},
        {"{\"model_type\": \"siglip\"}", TOWER_IMAGE, 768, 12, 12, 3072, ACT_GELU_TANH, 1e-6f, 224,
         16, 0, 0, 0, 768},
        {"{\"model_type\": \"siglip\"}", TOWER_TEXT, 768, 12, 12, 3072, ACT_GELU_TANH, 1e-6f, 0, 0,
         32000, 64, 49407, 768},
        {"{\"model_type\": \"siglip_vision_model\"}", TOWER_DEFAULT, 768, 12, 12, 3072,
         ACT_GELU_TANH, 1e-6f, 224, 16, 0, 0, 0, 768},
        {"{\"model_type\": \"siglip_text_model\"}", TOWER_DEFAULT, 768, 12, 12, 3072, ACT_GELU_TANH,
         1e-6f, 0, 0, 32000, 64, 49407, 768},
        {"{\"model_type\": \"dinov2\"}", TOWER_DEFAULT, 768, 12, 12, 3072, ACT_GELU, 1e-6f, 224, 14,
         0, 0, 0, 768},
        {"{\"model_type\": \"dinov2_with_registers\"}", TOWER_DEFAULT, 768, 12, 12, 3072, ACT_GELU,
         1e-6f, 224, 16, 0, 0, 0, 768},
        {"{\"model_type\": \"beit\"}", TOWER_DEFAULT, 768, 12, 12, 3072, ACT_GELU, 1e-12f, 224, 16,
         0, 0, 0, 768},
        {"{\"model_type\": \"data2vec-vision\"}", TOWER_DEFAULT, 768, 12, 12, 3072, ACT_GELU,
         1e-12f, 224, 16, 0, 0, 0, 768},
        {ved_trocr, TOWER_IMAGE, 768, 12, 12, 3072, ACT_GELU, 1e-12f, 224, 16, 0, 0, 0, 0},
        {ved_trocr, TOWER_TEXT, 1024, 12, 16, 4096, ACT_GELU, 1e-5f, 0, 0, 50265, 512, 2, 50265},
        {ved_gpt2, TOWER_TEXT, 768, 12, 12, 3072, ACT_GELU_TANH, 1e-5f, 0, 0, 50257, 1024, 50256,
         50257},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) expect_defaults(&rows[i]);
    model_config c;
    vit_error err = {0};
    /* the families' own fields */
    assert_int_equal(
        model_config_parse("{\"model_type\": \"dinov2_with_registers\"}", "m", &c, &err), 0);
    assert_int_equal(c.num_registers, 4);
    assert_true(c.mlp_ratio == 4.0 && c.layer_scale_init == 1.0 && !c.use_swiglu && c.bare);
    model_config_free(&c);
    assert_int_equal(model_config_parse("{\"model_type\": \"beit\"}", "m", &c, &err), 0);
    assert_true(c.layer_scale && c.layer_scale_init == 0.1 && c.mean_pooling && !c.use_abs_pos &&
                !c.use_rel_bias && !c.use_shared_rel_bias && c.bare);
    model_config_free(&c);
    assert_int_equal(model_config_parse("{\"model_type\": \"bert\"}", "m", &c, &err), 0);
    assert_true(c.type_vocab_size == 2 && c.pad_token_id == 0);
    model_config_free(&c);
    assert_int_equal(model_config_parse_tower(ved_trocr, "m", TOWER_TEXT, &c, &err), 0);
    assert_true(c.pad_token_id == 1 && c.learned_positions && c.layernorm_embedding &&
                !c.scale_embedding && c.tie_word_embeddings && c.opt.pos_offset == 2);
    assert_true(c.start_token_id == -1 && c.shift_pad_id == -1);
    model_config_free(&c);
    assert_int_equal(model_config_parse_tower(ved_gpt2, "m", TOWER_TEXT, &c, &err), 0);
    assert_true(c.pad_token_id == -1 && !c.scale_attn_by_layer && c.tie_word_embeddings);
    model_config_free(&c);
    /* GPT2Config's add_cross_attention is false: GPT2Block then has no cross-attention */
    expect_tower_error("{\"model_type\": \"vision-encoder-decoder\", \"encoder\": {\"model_type\": "
                       "\"vit\"}, \"decoder\": {\"model_type\": \"gpt2\"}}",
                       TOWER_TEXT, "no cross-attention (add_cross_attention false or absent");
    expect_tower_error("{\"model_type\": \"vision-encoder-decoder\", \"encoder\": {\"model_type\": "
                       "\"vit\"}}",
                       TOWER_TEXT, "field 'decoder' must be an object");
    /* a joint folder's embedding length is the top-level projection_dim (CLIPModel's), not
     * a tower's */
    assert_int_equal(model_config_parse_tower("{\"model_type\": \"clip\", \"text_config\": "
                                              "{\"projection_dim\": 64}}",
                                              "m", TOWER_TEXT, &c, &err),
                     0);
    assert_int_equal(c.num_labels, 512);
    model_config_free(&c);
}

/* config.json as Python's json.loads reads it (transformers' _dict_from_json_file: open with
 * encoding utf-8, json.loads): spacing and key order are free, a key given twice keeps its last
 * value (nested ones too), and a UTF-8 byte order mark, comments or text after the object are
 * refused, each in one line naming the file. */
static void test_json_as_python_reads_it(void **state) {
    (void)state;
    model_config c;
    vit_error err = {0};
    const char *spaced = "{ \"model_type\" : \"vit\" ,\n\t\"hidden_size\" : 64 , "
                         "\"num_attention_heads\" :4 }\n\n";
    assert_int_equal(model_config_parse(spaced, "m", &c, &err), 0);
    assert_int_equal(c.hidden_size, 64);
    model_config_free(&c);
    const char *twice = "{\"model_type\": \"clip\", \"hidden_size\": 8, \"text_config\": "
                        "{\"hidden_size\": 64, \"num_attention_heads\": 4, \"hidden_size\": 32}, "
                        "\"projection_dim\": 40, \"projection_dim\": 24}";
    assert_int_equal(model_config_parse_tower(twice, "m", TOWER_TEXT, &c, &err), 0);
    assert_int_equal(c.hidden_size, 32);
    assert_int_equal(c.num_labels, 24);
    model_config_free(&c);
    const char *labels = "{\"id2label\": {\"0\": \"cat\", \"1\": \"dog\", \"0\": \"lion\"}}";
    assert_int_equal(model_config_parse(labels, "m", &c, &err), 0);
    assert_int_equal(c.num_labels, 2);
    assert_string_equal(c.labels[0], "lion");
    assert_string_equal(c.labels[1], "dog");
    model_config_free(&c);
    expect_error("\xef\xbb\xbf{\"model_type\": \"vit\"}",
                 "not a valid JSON object: starts with a UTF-8 byte order mark, which Python's "
                 "json.loads (transformers) refuses");
    expect_error("{\"model_type\": \"vit\",\n  // a comment\n  \"hidden_size\": 64}",
                 "a syntax error at line 2");
    expect_error("{\"model_type\": \"vit\"}\n{\"model_type\": \"deit\"}",
                 "a syntax error at line 2, column 1");
}

static char *read_text(const char *path) {
    size_t n;
    char *text = (char *)read_whole_file(path, &n);
    if (!text) fail_msg("%s: unreadable", path);
    return text;
}

/* Nulls where transformers reads None as "not given": the files as transformers 4.16's full
 * to_dict wrote them (tests/data/quirks: openai/clip-vit-base-patch32's form, with
 * transformers_version, text_config_dict and vision_config_dict null, every tower's
 * architectures, finetuning_task, problem_type, ... null and the vision tower's bos, eos and
 * pad ids null; microsoft/trocr-base-handwritten's form, with the top-level
 * decoder_start_token_id and pad_token_id null), at micro sizes. Each loads with its sizes and
 * the defaults of what is null. */
static void test_nulls_as_absent(void **state) {
    (void)state;
    model_config c;
    vit_error err = {0};
    char *clip = read_text("tests/data/quirks/clip-nulls.json");
    assert_int_equal(model_config_parse_tower(clip, "m", TOWER_TEXT, &c, &err), 0);
    assert_true(c.hidden_size == 64 && c.num_layers == 2 && c.num_labels == 40);
    assert_int_equal(c.opt.pool, POOL_EOS_MAX); /* its eos_token_id 2 */
    model_config_free(&c);
    assert_int_equal(model_config_parse_tower(clip, "m", TOWER_IMAGE, &c, &err), 0);
    assert_true(c.hidden_size == 48 && c.image_size == 64 && c.patch_size == 16);
    model_config_free(&c);
    free(clip);
    char *ved = read_text("tests/data/quirks/trocr-nulls.json");
    assert_int_equal(model_config_parse_tower(ved, "m", TOWER_TEXT, &c, &err), 0);
    assert_true(c.hidden_size == 64 && c.cross_dim == 48 && c.vocab_size == 1000);
    assert_true(c.start_token_id == -1 && c.shift_pad_id == -1); /* null: None */
    model_config_free(&c);
    assert_int_equal(model_config_parse_tower(ved, "m", TOWER_IMAGE, &c, &err), 0);
    assert_true(c.hidden_size == 48 && !c.qkv_bias);
    model_config_free(&c);
    free(ved);
    /* a null model_type is no model_type transformers knows (AutoConfig fails) */
    expect_tower_error("{\"model_type\": \"vision-encoder-decoder\", \"encoder\": {}, "
                       "\"decoder\": {\"model_type\": null}}",
                       TOWER_TEXT, "the decoder's model_type is missing or not a string");
}

static image_arch deit_arch(const char *architectures) {
    char json[512];
    snprintf(json, sizeof json, "{\"model_type\": \"deit\"%s%s}", architectures ? "," : "",
             architectures ? architectures : "");
    model_config cfg;
    vit_error err = {0};
    if (model_config_parse(json, "m/config.json", &cfg, &err) != 0) fail_msg("%s", err.msg);
    const image_arch arch = cfg.arch;
    assert_int_equal(cfg.kind, MODEL_VIT);
    assert_int_equal(config_special_tokens(&cfg), 2);
    assert_int_equal(config_classifier_heads(&cfg), arch == ARCH_DEIT_TEACHER ? 2 : 1);
    assert_string_equal(config_model_type(&cfg), "deit");
    model_config_free(&cfg);
    return arch;
}

/* model_type "deit": DeiTConfig's defaults (ViTConfig's), and the class chosen from
 * architectures as AutoModelForImageClassification chooses: the first entry naming one of its two
 * DeiT classes, else DeiTForImageClassification. */
static void test_deit(void **state) {
    (void)state;
    model_config cfg;
    vit_error err = {0};
    assert_int_equal(model_config_parse("{\"model_type\": \"deit\"}", "m", &cfg, &err), 0);
    assert_int_equal(cfg.hidden_size, 768);
    assert_int_equal(cfg.image_size, 224);
    assert_true(cfg.layer_norm_eps == 1e-12f);
    assert_string_equal(config_architecture(&cfg), "DeiTForImageClassification");
    model_config_free(&cfg);
    assert_int_equal(deit_arch(NULL), ARCH_DEIT);
    assert_int_equal(deit_arch("\"architectures\": null"), ARCH_DEIT);
    assert_int_equal(deit_arch("\"architectures\": [\"DeiTForImageClassification\"]"), ARCH_DEIT);
    assert_int_equal(deit_arch("\"architectures\": [\"DeiTForImageClassificationWithTeacher\"]"),
                     ARCH_DEIT_TEACHER);
    assert_int_equal(
        deit_arch("\"architectures\": [\"DeiTModel\", \"DeiTForImageClassificationWithTeacher\"]"),
        ARCH_DEIT_TEACHER);
    expect_error("{\"model_type\": \"deit\", \"architectures\": [\"DeiTForMaskedImageModeling\"]}",
                 "architectures names DeiTForMaskedImageModeling, a class vit does not run; for "
                 "model_type deit it runs DeiTForImageClassification, "
                 "DeiTForImageClassificationWithTeacher");
    expect_error("{\"model_type\": \"deit\", \"architectures\": \"DeiTForImageClassification\"}",
                 "field 'architectures' must be a list of strings");
    expect_error("{\"model_type\": \"deit\", \"architectures\": [1]}",
                 "field 'architectures' must be a list of strings");
    expect_error("{\"model_type\": \"levit\"}", "supported: vit, deit, bert");
}

/* architectures: a class vit does not run is refused, naming it and the file, not run as
 * another (issue 40: a BertForTokenClassification folder answered one 9-way classification per
 * text, before issue 42 made it a token classifier); the base models ViTModel and BertModel are
 * features without a classifier. */
static void test_architectures(void **state) {
    (void)state;
    expect_error("{\"model_type\": \"bert\", \"architectures\": [\"BertForQuestionAnswering\"], "
                 "\"num_labels\": 9}",
                 "architectures names BertForQuestionAnswering, a class vit does not run; for "
                 "model_type bert it runs BertForSequenceClassification, BertModel, "
                 "BertForTokenClassification");
    expect_error("{\"model_type\": \"vit\", \"architectures\": [\"DeiTForImageClassification\"]}",
                 "names DeiTForImageClassification");
    expect_error("{\"architectures\": [\"ViTForMaskedImageModeling\"]}",
                 "for model_type vit it runs ViTForImageClassification, ViTModel");
    expect_error(
        "{\"model_type\": \"siglip\", \"architectures\": [\"SiglipForImageClassification\"]}",
        "it runs SiglipModel");
    expect_error("{\"model_type\": \"clip_vision_model\", \"architectures\": "
                 "[\"CLIPForImageClassification\"]}",
                 "it runs CLIPVisionModelWithProjection, CLIPVisionModel");
    expect_error("{\"model_type\": \"vision-encoder-decoder\", \"architectures\": [\"X\"], "
                 "\"encoder\": {}, \"decoder\": {\"model_type\": \"gpt2\"}}",
                 "it runs VisionEncoderDecoderModel");
    static const struct {
        const char *json, *arch;
        int bare, labels;
    } ok[] = {
        {"{\"model_type\": \"vit\", \"architectures\": [\"ViTModel\"], \"hidden_size\": 24, "
         "\"num_attention_heads\": 2}",
         "ViTModel", 1, 24},
        {"{\"model_type\": \"bert\", \"architectures\": [\"BertModel\"]}", "BertModel", 1, 768},
        {"{\"model_type\": \"bert\", \"architectures\": [\"BertForMaskedLM\", "
         "\"BertForSequenceClassification\"], \"num_labels\": 3}",
         "BertForSequenceClassification", 0, 3},
        {"{\"model_type\": \"bert\", \"architectures\": []}", "BertForSequenceClassification", 0,
         2},
        {"{\"model_type\": \"vit\"}", "ViTForImageClassification", 0, 2},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        model_config cfg;
        vit_error err = {0};
        if (model_config_parse(ok[i].json, "m", &cfg, &err) != 0) fail_msg("%s", err.msg);
        assert_string_equal(config_architecture(&cfg), ok[i].arch);
        assert_int_equal(cfg.bare, ok[i].bare);
        assert_int_equal(cfg.num_labels, ok[i].labels);
        assert_int_equal(cfg.opt.head, ok[i].bare ? HEAD_NONE : HEAD_CLASSIFIER);
        model_config_free(&cfg);
    }
}

static void test_missing_file(void **state) {
    (void)state;
    model_config cfg;
    vit_error err = {0};
    assert_int_equal(model_config_load("/nonexistent-dir", &cfg, &err), -1);
    assert_non_null(strstr(err.msg, "/nonexistent-dir/config.json"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_fields_and_labels),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_joint),
        cmocka_unit_test(test_joint_names),
        cmocka_unit_test(test_deit),
        cmocka_unit_test(test_architectures),
        cmocka_unit_test(test_missing_file),
        cmocka_unit_test(test_config_dicts),
        cmocka_unit_test(test_hf_defaults),
        cmocka_unit_test(test_json_as_python_reads_it),
        cmocka_unit_test(test_nulls_as_absent),
    };
    return cmocka_run_group_tests_name("config", tests, NULL, NULL);
}
