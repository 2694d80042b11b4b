/* Reduced precision against fp32, on the real models and the reference's inputs (the golden
 * pixels and texts of ../shared): bf16 and int8 logits within a bound of the fp32 ones, and the
 * same top-1 class on nearly every input.
 *
 * The bounds, and why: bf16 keeps 8 bits of mantissa, so every weight and activation entering a
 * product is off by up to 2^-9 relative (0.2 %); summed over a row of products the errors partly
 * cancel, and over 12 layers they add up to logit errors of a few hundredths on ViT-Tiny's logits
 * (which reach ~20). int8 keeps 7 bits of weight per output channel (8 where the CPU has VNNI:
 * without it, pairs of u8·s8 products meet in a saturating int16) and 8 bits of activation per
 * token: logit errors of several tenths, spread over every layer (no single layer dominates;
 * PyTorch's own dynamic int8, per-tensor, errs by 3.9 on the same images). The bounds below are
 * about twice the largest error measured on these inputs (the tests print it), and below what a
 * real mistake gives: 8-bit weights on the saturating path move logits by 4.8. */
#include "tests/testutil.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vit/vit.h"

#define VIT_BF16_BOUND  0.15 /* max |Δlogit| against fp32, ViT-Tiny, 20 images; measured 0.075 */
#define VIT_INT8_BOUND  1.60 /* measured 0.84 */
#define BERT_BF16_BOUND 0.01 /* bert-sst2-tiny, 30 texts (2 layers); measured 0.0031 */
#define BERT_INT8_BOUND 0.05 /* measured 0.023 */

typedef struct {
    int n, labels;
    float *pixels; /* [n, floats] */
    float *fp32;   /* [n, labels] */
} image_case;

/* The golden pixels of vit-tiny-in1k's images and their fp32 logits on the default backend. */
static vit_context *load(vit_precision precision) {
    vit_params p = vit_default_params();
    p.precision = precision;
    vit_error err = {0};
    vit_context *ctx = vit_load(shared_path("models/vit-tiny-in1k"), &p, &err);
    if (!ctx) fail_msg("%s", err.msg);
    return ctx;
}

static int argmax(const float *x, int n) {
    int best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

static void image_case_load(image_case *c) {
    const char *golden = shared_path("models/vit-tiny-in1k/golden.json");
    size_t size;
    char *text = (char *)read_whole_file(golden, &size);
    assert_non_null(text);
    cJSON *root = cJSON_Parse(text);
    const cJSON *images = cJSON_IsArray(root) ? root : cJSON_GetObjectItem(root, "images");
    assert_non_null(images);
    vit_context *ctx = load(VIT_FP32);
    const size_t F = vit_input_floats(ctx);
    c->labels = vit_num_labels(ctx);
    c->n = cJSON_GetArraySize(images);
    c->pixels = malloc(sizeof(float) * F * c->n);
    c->fp32 = malloc(sizeof(float) * c->labels * c->n);
    vit_error err = {0};
    for (int i = 0; i < c->n; i++) {
        const cJSON *item = cJSON_GetArrayItem(images, i);
        const cJSON *name = cJSON_IsString(item) ? item : cJSON_GetObjectItem(item, "image");
        char key[512];
        snprintf(key, sizeof key, "%s/pixels", name->valuestring);
        size_t numel;
        float *px =
            test_read_tensor(shared_path("models/vit-tiny-in1k/golden.safetensors"), key, &numel);
        assert_non_null(px);
        assert_int_equal(numel, F);
        memcpy(c->pixels + F * i, px, sizeof(float) * F);
        free(px);
        assert_int_equal(vit_forward(ctx, c->pixels + F * i, 1, c->fp32 + c->labels * i, &err), 0);
    }
    vit_free(ctx);
    cJSON_Delete(root);
    free(text);
}

static void check_images(const image_case *c, vit_precision precision, double bound) {
    vit_context *ctx = load(precision);
    const size_t F = vit_input_floats(ctx);
    float *logits = malloc(sizeof(float) * c->labels);
    double worst = 0;
    int same = 0;
    vit_error err = {0};
    for (int i = 0; i < c->n; i++) {
        assert_int_equal(vit_forward(ctx, c->pixels + F * i, 1, logits, &err), 0);
        const float *want = c->fp32 + c->labels * i;
        for (int j = 0; j < c->labels; j++) worst = fmax(worst, fabs(logits[j] - want[j]));
        same += argmax(logits, c->labels) == argmax(want, c->labels);
    }
    print_message("vit-tiny-in1k, %s: max |dlogit| against fp32 %.3g (bound %g), top-1 the same "
                  "on %d of %d images\n",
                  vit_compute(ctx), worst, bound, same, c->n);
    assert_true(worst <= bound);
    assert_true(same >= c->n - 1);
    free(logits);
    vit_free(ctx);
}

static void test_vit_precisions(void **state) {
    (void)state;
    REQUIRE_SHARED("models/vit-tiny-in1k/golden.safetensors");
    image_case c;
    image_case_load(&c);
    check_images(&c, VIT_BF16, VIT_BF16_BOUND);
    vit_params p = vit_default_params();
    p.precision = VIT_INT8;
    vit_error err = {0};
    vit_context *probe = vit_load(MICRO_A, &p, &err);
    if (probe) {
        vit_free(probe);
        check_images(&c, VIT_INT8, VIT_INT8_BOUND);
    } else {
        print_message("int8 not checked: %s\n", err.msg);
    }
    free(c.pixels);
    free(c.fp32);
}

/* ---- text ---- */

static void text_logits(vit_precision precision, const char **texts, const size_t *lens, int n,
                        float *logits, char *what, size_t size) {
    vit_text_params p = vit_text_default_params();
    p.precision = precision;
    vit_error err = {0};
    vit_text_context *ctx = vit_text_load(shared_path("models/bert-sst2-tiny"), &p, &err);
    if (!ctx) fail_msg("%s", err.msg);
    for (int i0 = 0; i0 < n; i0 += 8) {
        const int k = n - i0 < 8 ? n - i0 : 8;
        assert_int_equal(
            vit_text_forward(ctx, texts + i0, lens + i0, k, logits + 2 * i0, NULL, &err), 0);
    }
    snprintf(what, size, "%s", vit_text_compute(ctx));
    vit_text_free(ctx);
}

static void test_bert_precisions(void **state) {
    (void)state;
    REQUIRE_SHARED("models/bert-sst2-tiny");
    size_t size;
    char *json = (char *)read_whole_file(shared_path("models/bert-sst2-tiny/golden.json"), &size);
    cJSON *root = cJSON_Parse(json);
    const int n = cJSON_GetArraySize(root);
    const char **texts = malloc(sizeof *texts * n);
    size_t *lens = malloc(sizeof *lens * n);
    for (int i = 0; i < n; i++) {
        texts[i] = cJSON_GetObjectItem(cJSON_GetArrayItem(root, i), "text")->valuestring;
        lens[i] = strlen(texts[i]);
    }
    float *fp32 = malloc(sizeof(float) * 2 * n), *other = malloc(sizeof(float) * 2 * n);
    char what[160];
    text_logits(VIT_FP32, texts, lens, n, fp32, what, sizeof what);
    const vit_precision precisions[] = {VIT_BF16, VIT_INT8};
    const double bounds[] = {BERT_BF16_BOUND, BERT_INT8_BOUND};
    for (int k = 0; k < 2; k++) {
        vit_text_params p = vit_text_default_params();
        p.precision = precisions[k];
        vit_error err;
        vit_text_context *probe = vit_text_load(shared_path("models/bert-sst2-tiny"), &p, &err);
        if (!probe) {
            print_message("bert-sst2-tiny: precision %d not checked: %s\n", k, err.msg);
            continue;
        }
        vit_text_free(probe);
        text_logits(precisions[k], texts, lens, n, other, what, sizeof what);
        double worst = 0;
        int same = 0;
        for (int i = 0; i < n; i++) {
            for (int j = 0; j < 2; j++)
                worst = fmax(worst, fabs(other[2 * i + j] - fp32[2 * i + j]));
            same += argmax(other + 2 * i, 2) == argmax(fp32 + 2 * i, 2);
        }
        print_message("bert-sst2-tiny, %s: max |dlogit| against fp32 %.3g (bound %g), the same "
                      "class on %d of %d texts\n",
                      what, worst, bounds[k], same, n);
        assert_true(worst <= bounds[k]);
        assert_true(same >= n - 1);
    }
    free(fp32), free(other), free(texts), free(lens);
    cJSON_Delete(root);
    free(json);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vit_precisions),
        cmocka_unit_test(test_bert_precisions),
    };
    return cmocka_run_group_tests_name("precision", tests, NULL, NULL);
}
