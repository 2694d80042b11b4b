/* Non-square inputs (a text line is wide): config.json's image_size as [height, width], a model
 * of 16x48 (tests/data/vit-wide-micro: micro-a with its positions resized to 2x6 by
 * F.interpolate, tools/wide_reference.py) against its float64 goldens on every backend, the
 * position resize against F.interpolate's, and what is refused (another size, a bad value, a
 * family that does not take it). The training side is in test_gradcheck (a 2x3 grid) and
 * test_ved_train_run (--input-height/--input-width). */
#include "tests/testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "patch/patch.h"
#include "vit/io/model_dir.h"
#include "vit/model/config.h"
#include "vit/model/vit_model.h"
#include "vit/vit.h"

#define WIDE    TEST_DATA "/vit-wide-micro"
#define IMAGES  3
#define CLASSES 5

static const char *const image_names[IMAGES] = {"wide_500x37.png", "rgb_64x48.png",
                                                "tall_40x400.jpg"};

static void expect_config(const char *image_size, int height, int width) {
    char json[512];
    snprintf(json, sizeof json,
             "{\"model_type\": \"vit\", \"image_size\": %s, \"patch_size\": 8, "
             "\"hidden_size\": 16, \"num_attention_heads\": 2}",
             image_size);
    model_config c;
    vit_error err = {0};
    if (model_config_parse(json, "config.json", &c, &err) != 0) fail_msg("%s", err.msg);
    assert_int_equal(c.image_size, height);
    assert_int_equal(c.image_width, width);
    model_config_free(&c);
}

static void expect_config_refused(const char *json, const char *what) {
    model_config c;
    vit_error err = {0};
    assert_int_equal(model_config_parse(json, "config.json", &c, &err), -1);
    print_message("  %s\n", err.msg);
    if (!strstr(err.msg, what)) fail_msg("'%s' does not say '%s'", err.msg, what);
}

static void test_config(void **state) {
    (void)state;
    expect_config("32", 32, 32);
    expect_config("[16, 48]", 16, 48);
    expect_config("[48, 16]", 48, 16);
    const char *bad[] = {"[16]", "[16, 48, 8]", "[0, 48]", "[16, 48.5]", "[\"16\", 48]", "\"16\""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char json[256];
        snprintf(json, sizeof json, "{\"model_type\": \"vit\", \"image_size\": %s}", bad[i]);
        expect_config_refused(json, "image_size");
    }
    expect_config_refused("{\"model_type\": \"vit\", \"image_size\": [4, 64], \"patch_size\": 8}",
                          "larger than image_size (4)");
    expect_config_refused("{\"model_type\": \"dinov2\", \"image_size\": [16, 48], "
                          "\"patch_size\": 8}",
                          "for ViT and DeiT models only");
}

/* micro-a's positions resized to 2x6 here, against F.interpolate's (stored in the goldens). */
static void test_positions(void **state) {
    (void)state;
    size_t n, m;
    float *pos =
        test_read_tensor(MICRO_A "/model.safetensors", "vit.embeddings.position_embeddings", &n);
    float *want = test_golden_tensor(WIDE, "positions", &m);
    assert_non_null(pos);
    assert_int_equal(n, (1 + 16) * 48), assert_int_equal(m, (1 + 12) * 48);
    float *got = test_alloc_floats(m);
    assert_int_equal(pos_embed_resize_rect(got, pos, 1, 4, 2, 6, 48, GRID_BICUBIC), 0);
    double worst = 0;
    for (size_t k = 0; k < m; k++) worst = fmax(worst, fabs((double)got[k] - want[k]));
    print_message("  4x4 -> 2x6 bicubic: max |d| %.3g\n", worst);
    assert_true(worst < 1e-6);
    /* the square case is still grid_resize's */
    float *sq = test_alloc_floats(17 * 48), *sq2 = test_alloc_floats(17 * 48);
    assert_int_equal(pos_embed_resize_rect(sq, pos, 1, 4, 4, 4, 48, GRID_BICUBIC_AA), 0);
    assert_int_equal(pos_embed_resize(sq2, pos, 1, 4, 4, 48, GRID_BICUBIC_AA), 0);
    assert_memory_equal(sq, sq2, 17 * 48 * sizeof(float));
    free(pos), free(want), free(got), free(sq), free(sq2);
}

/* The golden images' logits through the model on one backend. */
static double logits_on(int backend) {
    model m;
    vit_error err = {0};
    if (model_load(&m, WIDE, &err) != 0) fail_msg("%s", err.msg);
    vit_acts a;
    if (vit_acts_alloc(&a, &m, IMAGES, 0, VIT_ACTS_INFER, &err) != 0) fail_msg("%s", err.msg);
    assert_int_equal(a.height, 16), assert_int_equal(a.width, 48);
    assert_int_equal(a.tokens, 1 + 2 * 6);
    const size_t F = 3 * 16 * 48;
    float *pixels = test_alloc_floats(IMAGES * F), logits[IMAGES * CLASSES];
    for (int i = 0; i < IMAGES; i++) {
        char name[128];
        size_t n;
        snprintf(name, sizeof name, "image/%s/pixels", image_names[i]);
        float *p = test_golden_tensor(WIDE, name, &n);
        assert_int_equal(n, F);
        memcpy(pixels + i * F, p, F * sizeof *p);
        free(p);
    }
    gemm_state *s = test_prepare(&m, backend, IMAGES, a.tokens);
    a.gemm = s;
    if (vit_model_forward(&m, &a, pixels, IMAGES, NULL, logits, &err) != 0) fail_msg("%s", err.msg);
    double worst = 0;
    for (int i = 0; i < IMAGES; i++) {
        char name[128];
        size_t n;
        snprintf(name, sizeof name, "image/%s/logits", image_names[i]);
        float *want = test_golden_tensor(WIDE, name, &n);
        assert_int_equal(n, CLASSES);
        for (int k = 0; k < CLASSES; k++)
            worst = fmax(worst, fabs((double)logits[i * CLASSES + k] - want[k]));
        free(want);
    }
    gemm_state_free(s);
    free(pixels);
    vit_acts_free(&a);
    model_free(&m);
    return worst;
}

/* fp32 against float64: 1e-4 as for every model (float32 rounding through two layers). */
static void test_logits(void **state) {
    (void)state;
    int list[3];
    const int n = test_backends(list);
    for (int b = 0; b < n; b++) {
        const double worst = logits_on(list[b]);
        print_message("  backend %d: max |d logit| %.3g\n", list[b], worst);
        assert_true(worst < 1e-4);
    }
}

/* Through the public API from the image file: its preprocessing resizes to 16x48. */
static void test_api(void **state) {
    (void)state;
    vit_error err = {0};
    vit_context *c = vit_load(WIDE, NULL, &err);
    if (!c) fail_msg("%s", err.msg);
    int ch, h, w, gh, gw;
    vit_input_shape(c, &ch, &h, &w);
    vit_patch_grid(c, &gh, &gw);
    assert_int_equal(h, 16), assert_int_equal(w, 48);
    assert_int_equal(gh, 2), assert_int_equal(gw, 6);
    char path[512];
    snprintf(path, sizeof path, "%s/%s", GOLDEN_IMAGES, image_names[0]);
    vit_prediction top[CLASSES];
    if (vit_classify_file(c, path, CLASSES, top, &err) != CLASSES) fail_msg("%s", err.msg);
    size_t n;
    float *want = test_golden_tensor(WIDE, "image/wide_500x37.png/logits", &n);
    double max = want[0], sum = 0;
    for (int k = 1; k < CLASSES; k++) max = fmax(max, want[k]);
    for (int k = 0; k < CLASSES; k++) sum += exp(want[k] - max);
    for (int k = 0; k < CLASSES; k++)
        assert_true(fabs(top[k].prob - exp(want[top[k].index] - max) / sum) < 1e-5);
    free(want);
    vit_free(c);
}

/* Another size for a non-square model: refused in one line (transformers cannot interpolate a
 * non-square grid either). */
static void test_other_size_refused(void **state) {
    (void)state;
    model m;
    vit_error err = {0};
    if (model_load(&m, WIDE, &err) != 0) fail_msg("%s", err.msg);
    vit_acts a;
    assert_int_equal(vit_acts_alloc(&a, &m, 1, 32, VIT_ACTS_INFER, &err), -1);
    print_message("  %s\n", err.msg);
    assert_non_null(strstr(err.msg, "16 x 48 pixels runs at that size only"));
    model_free(&m);
    vit_params p = vit_default_params();
    p.image_size = 48;
    assert_null(vit_load(WIDE, &p, &err));
    assert_non_null(strstr(err.msg, "runs at that size only"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config),
        cmocka_unit_test(test_positions),
        cmocka_unit_test(test_logits),
        cmocka_unit_test(test_api),
        cmocka_unit_test(test_other_size_refused),
    };
    return cmocka_run_group_tests_name("nonsquare", tests, NULL, NULL);
}
