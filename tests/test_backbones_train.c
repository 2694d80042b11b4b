/* Fine-tuning DINOv2 and BEiT models with the trainer, as a ViT is (vit train --init): on a tiny
 * synthetic image folder, one epoch from each micro model of tests/data. What comes out is the
 * model's ForImageClassification class with a new classifier (a base model gets one), its own
 * family's config.json (registers, SwiGLU, the relative-bias switches: it must read back as the
 * same network) and names, every family-specific tensor trained (the registers, the layer scales,
 * the relative position tables), and a folder vit_load runs. */
#include "tests/testutil.h"

#include <math.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "vit/base/rng.h"
#include "vit/io/model_dir.h"
#include "vit/io/safetensors.h"
#include "vit/train/run.h"
#include "vit/vit.h"

/* 3 classes of 12x12 RGB images (red, green, blue-ish with noise), 8 per class. */
static const char *make_folder(void) {
    static char root[4096];
    if (root[0]) return root;
    snprintf(root, sizeof root, "%s/colours", test_tmpdir());
    mkdir(root, 0777);
    const char *classes[] = {"red", "green", "blue"};
    uint64_t st = 11;
    for (int c = 0; c < 3; c++) {
        char dir[4200];
        snprintf(dir, sizeof dir, "%s/%s", root, classes[c]);
        mkdir(dir, 0777);
        for (int i = 0; i < 8; i++) {
            uint8_t px[12 * 12 * 3];
            for (int j = 0; j < 12 * 12 * 3; j++)
                px[j] = (uint8_t)((j % 3 == c ? 150 : 0) + rng_uniform(&st) * 100);
            char path[4300];
            snprintf(path, sizeof path, "%s/%02d.png", dir, i);
            png_image img = {
                .version = PNG_IMAGE_VERSION, .width = 12, .height = 12, .format = PNG_FORMAT_RGB};
            assert_true(png_image_write_to_file(&img, path, 0, px, 0, NULL));
        }
    }
    return root;
}

/* How far tensor name moved between the two models (both must have it). */
static double moved(const model *a, const model *b, const char *name) {
    const param_entry *x = model_find_param(a, name), *y = model_find_param(b, name);
    if (!x || !y) fail_msg("no tensor %s", name);
    double change = 0;
    for (size_t j = 0; j < x->numel; j++)
        change = fmax(change, fabs(a->params[x->offset + j] - b->params[y->offset + j]));
    return change;
}

static void fine_tune(const char *from_dir, const char *arch, const char *const *trained,
                      const char *const *config_has) {
    char out[4200], path[4300];
    snprintf(out, sizeof out, "%s/tuned-%s", test_tmpdir(), strrchr(from_dir, '/') + 1);
    train_options o = train_default_options();
    o.train_path = make_folder();
    o.out_dir = out;
    o.init_dir = from_dir;
    o.val_split = 0.25f;
    o.epochs = 1, o.batch = 6, o.lr = 1e-3f, o.seed = 3, o.threads = 1;
    vit_error err = {0};
    if (train_run(&o, 0, NULL, &err) != 0) fail_msg("%s", err.msg);
    model from, m;
    if (model_load(&from, from_dir, &err) != 0 || model_load(&m, out, &err) != 0)
        fail_msg("%s", err.msg);
    assert_string_equal(config_architecture(&m.cfg), arch);
    assert_int_equal(m.cfg.num_labels, 3);
    assert_int_equal(m.cfg.opt.head, HEAD_CLASSIFIER);
    assert_int_equal(m.num_entries - from.num_entries, from.cfg.bare ? 2 : 0); /* + classifier */
    for (const char *const *name = trained; *name; name++) {
        const double change = moved(&from, &m, *name);
        print_message("  %s: %s moved by up to %.3g\n", from_dir, *name, change);
        assert_true(change > 0 && change < 0.1);
    }
    snprintf(path, sizeof path, "%s/config.json", out);
    char *config = (char *)read_whole_file(path, NULL), *to = config;
    for (const char *c = config; *c; c++) /* without whitespace: "key":value */
        if (*c != ' ' && *c != '\t' && *c != '\n') *to++ = *c;
    *to = 0;
    for (const char *const *field = config_has; *field; field++)
        if (!strstr(config, *field)) fail_msg("%s: no %s in\n%s", path, *field, config);
    free(config);
    /* the folder runs through the API, at its preprocessor's size */
    vit_context *ctx = vit_load(out, NULL, &err);
    if (!ctx) fail_msg("%s", err.msg);
    vit_prediction top[3];
    snprintf(path, sizeof path, "%s/red/00.png", make_folder());
    assert_int_equal(vit_classify_file(ctx, path, 3, top, &err), 3);
    vit_free(ctx);
    model_free(&from), model_free(&m);
}

static void test_fine_tune_dinov2_registers(void **state) {
    (void)state;
    const char *const trained[] = {"embeddings.register_tokens", "embeddings.position_embeddings",
                                   "encoder.layer.0.layer_scale1.lambda1",
                                   "encoder.layer.1.mlp.fc1.weight", NULL};
    const char *const config[] = {"\"dinov2_with_registers\"", "\"num_register_tokens\":4",
                                  "\"Dinov2WithRegistersForImageClassification\"", NULL};
    fine_tune(TEST_DATA "/dinov2-reg-micro", "Dinov2WithRegistersForImageClassification", trained,
              config);
}

/* A base model (no classifier) becomes Dinov2ForImageClassification. */
static void test_fine_tune_dinov2_base_swiglu(void **state) {
    (void)state;
    const char *const trained[] = {"encoder.layer.0.mlp.weights_in.weight",
                                   "encoder.layer.1.layer_scale2.lambda1", NULL};
    const char *const config[] = {"\"use_swiglu_ffn\":true", "\"Dinov2ForImageClassification\"",
                                  NULL};
    fine_tune(TEST_DATA "/dinov2-micro-swiglu", "Dinov2ForImageClassification", trained, config);
}

/* A ViTModel (google/vit-base-patch16-224-in21k's layout, no prefix, a pooler, no classifier:
 * tests/data/vit-base-micro) becomes a ViTForImageClassification (issue 40: it was refused for a
 * missing classifier). */
static void test_fine_tune_vit_base(void **state) {
    (void)state;
    const char *const trained[] = {"embeddings.cls_token", "encoder.layer.1.output.dense.weight",
                                   NULL};
    const char *const config[] = {"\"ViTForImageClassification\"", "\"model_type\":\"vit\"", NULL};
    fine_tune(TEST_DATA "/vit-base-micro", "ViTForImageClassification", trained, config);
}

static void test_fine_tune_beit(void **state) {
    (void)state;
    const char *const trained[] = {
        "encoder.layer.0.attention.attention.relative_position_bias.relative_position_bias_table",
        "encoder.layer.1.lambda_1", "pooler.layernorm.weight", NULL};
    const char *const config[] = {"\"use_relative_position_bias\":true",
                                  "\"use_mean_pooling\":true", "\"beit\"", NULL};
    fine_tune(TEST_DATA "/beit-micro", "BeitForImageClassification", trained, config);
}

static void test_fine_tune_beit_shared(void **state) {
    (void)state;
    const char *const trained[] = {"encoder.relative_position_bias.relative_position_bias_table",
                                   "embeddings.position_embeddings", "layernorm.weight", NULL};
    const char *const config[] = {"\"use_shared_relative_position_bias\":true",
                                  "\"use_absolute_position_embeddings\":true",
                                  "\"use_mean_pooling\":false", NULL};
    fine_tune(TEST_DATA "/beit-micro-shared", "BeitForImageClassification", trained, config);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fine_tune_dinov2_registers),
        cmocka_unit_test(test_fine_tune_dinov2_base_swiglu),
        cmocka_unit_test(test_fine_tune_vit_base),
        cmocka_unit_test(test_fine_tune_beit),
        cmocka_unit_test(test_fine_tune_beit_shared),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
