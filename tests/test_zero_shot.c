/* Joint image-text models through the public API (vit.h) against tools/clip_reference.py's goldens
 * (tests/data/clip-micro, clip-micro-gelu, siglip-micro; siglip-remainder-micro, the image tower
 * only, from tools/remainder_reference.py): CLIPImageProcessor's and
 * SiglipImageProcessor's pixels from the image files, normalised image embeddings (vit_embed,
 * VIT_POOL_JOINT), text embeddings from the texts themselves (CLIP's BPE tokenizer and text tower),
 * zero-shot scores (vit_classes_create + vit_zero_shot) equal to logits_per_image, their softmax,
 * CLIP's prompt ensembling against the mean computed here, and the errors.
 *
 * Tolerances: pixels 1e-6 (Pillow's integer resize is matched bit for bit; the rest is float32
 * arithmetic in the same order); embeddings and scores 1e-4, as tests/test_clip.c. */
#include "tests/testutil.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vit/vit.h"

#define IMAGES 3
#define TEXTS  5

static const char *const image_names[IMAGES] = {"rgb_64x48.png", "tall_40x400.jpg",
                                                "palette_120x90.png"};

static void expect_close(const char *what, const float *got, const float *want, size_t n,
                         double tol) {
    for (size_t i = 0; i < n; i++)
        if (!(fabs((double)got[i] - want[i]) <= tol))
            fail_msg("%s[%zu]: %.7g, want %.7g (tolerance %g)", what, i, got[i], want[i], tol);
}

static void normalise(float *x, int n) {
    double s = 0;
    for (int i = 0; i < n; i++) s += (double)x[i] * x[i];
    for (int i = 0; i < n; i++) x[i] = (float)(x[i] / sqrt(s));
}

/* The golden texts (golden.json's "texts"), NULL-terminated copies. */
static char **golden_texts(const char *dir) {
    char path[256];
    snprintf(path, sizeof path, "%s/golden.json", dir);
    char *json = (char *)read_whole_file(path, NULL);
    cJSON *root = cJSON_Parse(json);
    const cJSON *texts = cJSON_GetObjectItem(root, "texts");
    assert_int_equal(cJSON_GetArraySize(texts), TEXTS);
    char **out = calloc(TEXTS + 1, sizeof *out);
    for (int i = 0; i < TEXTS; i++) out[i] = strdup(cJSON_GetArrayItem(texts, i)->valuestring);
    cJSON_Delete(root);
    free(json);
    return out;
}

/* vit_classes_score of the images' joint embeddings: vit_zero_shot's scores and probabilities,
 * bit for bit (the same batch); vit_classes_top_k: each image's classes by probability, named. */
static void check_score_and_top_k(vit_context *img, const vit_classes *classes, const float *pixels,
                                  const float *scores, const float *probs) {
    float embeds[IMAGES * 64], again[IMAGES * TEXTS], again_probs[IMAGES * TEXTS];
    vit_error err = {0};
    assert_int_equal(vit_embed(img, pixels, IMAGES, VIT_POOL_JOINT, embeds, &err), 0);
    assert_int_equal(vit_classes_score(classes, embeds, IMAGES, again, again_probs, &err), 0);
    assert_memory_equal(again, scores, sizeof again);
    assert_memory_equal(again_probs, probs, sizeof again_probs);
    assert_int_equal(vit_classes_score(classes, embeds, 0, again, NULL, &err), -1);
    for (int i = 0; i < IMAGES; i++) {
        const float *p = probs + i * TEXTS;
        vit_prediction top[TEXTS + 1];
        assert_int_equal(vit_classes_top_k(classes, p, TEXTS + 1, top, &err), TEXTS);
        int seen = 0;
        for (int j = 0; j < TEXTS; j++) {
            seen |= 1 << top[j].index;
            assert_string_equal(top[j].label, vit_classes_name(classes, top[j].index));
            assert_true(top[j].prob == p[top[j].index]);
            if (j > 0) assert_true(top[j - 1].prob >= top[j].prob);
        }
        assert_int_equal(seen, (1 << TEXTS) - 1);
        assert_int_equal(vit_classes_top_k(classes, p, 2, top, &err), 2);
        assert_int_equal(vit_classes_top_k(classes, p, -1, top, &err), -1);
        assert_non_null(strstr(err.msg, "negative"));
    }
}

/* Images from their files: pixels and normalised embeddings against the goldens. */
static float *check_images(vit_context *img, const char *dir, int dim) {
    const size_t F = vit_input_floats(img);
    float *pixels = test_alloc_floats(IMAGES * F), *embeds = test_alloc_floats(IMAGES * dim);
    vit_error err = {0};
    for (int i = 0; i < IMAGES; i++) {
        char path[256], name[128];
        snprintf(path, sizeof path, "tests/data/golden-images/%s", image_names[i]);
        if (vit_preprocess_file(img, path, pixels + i * F, &err) != 0) fail_msg("%s", err.msg);
        size_t n;
        snprintf(name, sizeof name, "image/%s/pixels", image_names[i]);
        float *want = test_golden_tensor(dir, name, &n);
        assert_int_equal(n, F);
        expect_close(name, pixels + i * F, want, F, 1e-6);
        free(want);
    }
    if (vit_embed(img, pixels, IMAGES, VIT_POOL_JOINT, embeds, &err) != 0) fail_msg("%s", err.msg);
    for (int i = 0; i < IMAGES; i++) {
        char name[128];
        size_t n;
        snprintf(name, sizeof name, "image/%s/embeds", image_names[i]);
        float *want = test_golden_tensor(dir, name, &n);
        normalise(want, (int)n);
        expect_close(name, embeds + (size_t)i * dim, want, n, 1e-4);
        free(want);
    }
    free(embeds);
    return pixels;
}

/* A joint model through the API; scale and bias: what tools/clip_reference.py wrote as
 * logit_scale (exp'ed) and logit_bias (0: CLIP, scores through a softmax; SigLIP: a sigmoid). */
static void check_joint(const char *dir, double scale, double bias, int sigmoid) {
    vit_error err = {0};
    vit_params ip = vit_default_params();
    ip.max_batch = IMAGES;
    vit_context *img = vit_load(dir, &ip, &err);
    if (!img) fail_msg("%s", err.msg);
    vit_text_context *txt = vit_text_load(dir, NULL, &err);
    if (!txt) fail_msg("%s", err.msg);
    const int dim = vit_joint_dim(img);
    assert_true(dim > 0);
    assert_int_equal(vit_text_joint_dim(txt), dim);
    float *pixels = check_images(img, dir, dim);
    /* the texts: their embeddings, then as class names (no template) their scores */
    char **texts = golden_texts(dir);
    size_t lengths[TEXTS];
    for (int i = 0; i < TEXTS; i++) lengths[i] = strlen(texts[i]);
    float embeds[TEXTS * 64];
    if (vit_text_embed(txt, (const char *const *)texts, lengths, TEXTS, VIT_POOL_JOINT, embeds,
                       &err) != 0)
        fail_msg("%s", err.msg);
    for (int i = 0; i < TEXTS; i++) {
        char name[64];
        size_t n;
        snprintf(name, sizeof name, "text/%d/embeds", i);
        float *want = test_golden_tensor(dir, name, &n);
        normalise(want, (int)n);
        expect_close(name, embeds + (size_t)i * dim, want, n, 1e-4);
        free(want);
    }
    vit_classes *classes =
        vit_classes_create(txt, (const char *const *)texts, TEXTS, NULL, 0, &err);
    if (!classes) fail_msg("%s", err.msg);
    assert_int_equal(vit_classes_count(classes), TEXTS);
    assert_string_equal(vit_classes_name(classes, 0), texts[0]);
    assert_int_equal(vit_classes_sigmoid(classes), sigmoid);
    float scores[IMAGES * TEXTS], probs[IMAGES * TEXTS];
    if (vit_zero_shot(img, classes, pixels, IMAGES, scores, probs, &err) != 0)
        fail_msg("%s", err.msg);
    size_t n;
    float *want = test_golden_tensor(dir, "logits_per_image", &n);
    assert_int_equal(n, IMAGES * TEXTS);
    expect_close("logits_per_image", scores, want, n, 1e-4);
    for (int i = 0; i < IMAGES; i++) { /* the softmax over each image's classes, or sigmoids */
        double sum = 0;
        for (int k = 0; k < TEXTS; k++) sum += exp(want[i * TEXTS + k]);
        for (int k = 0; k < TEXTS; k++) {
            const double s = want[i * TEXTS + k];
            assert_float_equal(probs[i * TEXTS + k], sigmoid ? 1 / (1 + exp(-s)) : exp(s) / sum,
                               1e-5);
        }
    }
    free(want);
    check_score_and_top_k(img, classes, pixels, scores, probs);
    vit_classes_free(classes);
    /* prompt ensembling: the class embedding is the normalised mean of its prompts' normalised
     * embeddings ("{}" filled everywhere it stands) */
    const char *templates[] = {"a photo of a {}.", "{} and {}", "the {}"};
    const char *name = "cat";
    const char *prompts[] = {"a photo of a cat.", "cat and cat", "the cat"};
    const size_t plen[] = {strlen(prompts[0]), strlen(prompts[1]), strlen(prompts[2])};
    float each[3 * 64], mean[64] = {0};
    if (vit_text_embed(txt, prompts, plen, 3, VIT_POOL_JOINT, each, &err) != 0)
        fail_msg("%s", err.msg);
    for (int p = 0; p < 3; p++)
        for (int d = 0; d < dim; d++) mean[d] += each[p * dim + d];
    normalise(mean, dim);
    classes = vit_classes_create(txt, &name, 1, templates, 3, &err);
    if (!classes) fail_msg("%s", err.msg);
    float one[IMAGES];
    assert_int_equal(vit_zero_shot(img, classes, pixels, IMAGES, one, NULL, &err), 0);
    float image0[64];
    assert_int_equal(vit_embed(img, pixels, 1, VIT_POOL_JOINT, image0, &err), 0);
    double dot = 0;
    for (int d = 0; d < dim; d++) dot += (double)image0[d] * mean[d];
    assert_float_equal(one[0], dot * scale + bias, 1e-4);
    vit_classes_free(classes);
    for (int i = 0; i < TEXTS; i++) free(texts[i]);
    free(texts);
    free(pixels);
    vit_text_free(txt);
    vit_free(img);
}

static void test_clip_quick_gelu(void **state) {
    (void)state;
    check_joint("tests/data/clip-micro", exp(2.6592), 0, 0);
}

static void test_clip_gelu(void **state) {
    (void)state;
    check_joint("tests/data/clip-micro-gelu", exp(2.6592), 0, 0);
}

/* SigLIP: its SentencePiece tokenizer (where the build has it), texts padded to max_length, the
 * sigmoid of the scale times the cosine plus logit_bias. */
static void test_siglip(void **state) {
    (void)state;
    vit_error err = {0};
    vit_text_context *probe = vit_text_load("tests/data/siglip-micro", NULL, &err);
    if (!probe) {
        print_message("SKIP test_siglip: %s\n", err.msg);
        assert_non_null(strstr(err.msg, "without SentencePiece"));
        skip();
    }
    vit_text_free(probe);
    check_joint("tests/data/siglip-micro", exp(2.3), -1.7, 1);
}

/* An image side that is not a multiple of the patch (30 with patch 8, as 384 with 14 in
 * google/siglip-so400m-patch14-384): the patch convolution leaves out the last 6 rows and columns,
 * a 3x3 grid against the 9 positions the checkpoint holds (tools/remainder_reference.py; image
 * tower only, the folder has no tokenizer). */
static void test_siglip_remainder(void **state) {
    (void)state;
    const char *dir = "tests/data/siglip-remainder-micro";
    vit_error err = {0};
    vit_params ip = vit_default_params();
    ip.max_batch = IMAGES;
    vit_context *img = vit_load(dir, &ip, &err);
    if (!img) fail_msg("%s", err.msg);
    int gh, gw, c, h, w;
    vit_patch_grid(img, &gh, &gw);
    vit_input_shape(img, &c, &h, &w);
    assert_true(gh == 3 && gw == 3 && h == 30 && w == 30);
    assert_int_equal(vit_tokens(img), 9);
    free(check_images(img, dir, vit_joint_dim(img)));
    vit_free(img);
}

/* SigLIP's image tower has no CLS token: its embedding is the joint one only. */
static void test_siglip_no_cls(void **state) {
    (void)state;
    vit_error err = {0};
    vit_context *img = vit_load("tests/data/siglip-micro", NULL, &err);
    if (!img) fail_msg("%s", err.msg);
    assert_int_equal(vit_joint_dim(img), 32);
    float features[32];
    float *pixels = test_alloc_floats(vit_input_floats(img));
    assert_int_equal(vit_embed(img, pixels, 1, VIT_POOL_CLS, features, &err), -1);
    assert_non_null(strstr(err.msg, "no CLS token"));
    free(pixels);
    vit_free(img);
}

/* Scores of images x texts (the golden texts as class names) at one precision, both towers. */
static void scores_at(const char *dir, vit_precision precision, float *scores) {
    vit_error err = {0};
    vit_params ip = vit_default_params();
    ip.max_batch = IMAGES;
    ip.precision = precision;
    vit_text_params tp = vit_text_default_params();
    tp.precision = precision;
    vit_context *img = vit_load(dir, &ip, &err);
    vit_text_context *txt = img ? vit_text_load(dir, &tp, &err) : NULL;
    if (!img || !txt) fail_msg("%s", err.msg);
    const size_t F = vit_input_floats(img);
    float *pixels = test_alloc_floats(IMAGES * F);
    for (int i = 0; i < IMAGES; i++) {
        char path[256];
        snprintf(path, sizeof path, "tests/data/golden-images/%s", image_names[i]);
        if (vit_preprocess_file(img, path, pixels + i * F, &err) != 0) fail_msg("%s", err.msg);
    }
    char **texts = golden_texts(dir);
    vit_classes *classes =
        vit_classes_create(txt, (const char *const *)texts, TEXTS, NULL, 0, &err);
    if (!classes || vit_zero_shot(img, classes, pixels, IMAGES, scores, NULL, &err) != 0)
        fail_msg("%s", err.msg);
    vit_classes_free(classes);
    for (int i = 0; i < TEXTS; i++) free(texts[i]);
    free(texts);
    free(pixels);
    vit_text_free(txt);
    vit_free(img);
}

/* bf16 and int8 (where the build has oneDNN) against fp32 on the zero-shot scores of both towers.
 * The scores are exp(logit_scale) = 14.3 times a cosine: a relative error e of the embeddings
 * moves them by about 14.3·e. bf16 rounds weights and activations to 8 bits of mantissa (2^-9
 * relative) through 2-3 layers and two towers; int8 keeps 7-8 bits of weight per channel and 8 of
 * activation per token. These random micro models' scores span about ±14 (the scale times a
 * cosine near ±1), so bf16's 0.05 is 0.35 % of their range. Bounds: about twice the largest
 * difference measured here (printed; bf16 on a CPU without bf16 kernels, rounded the same way),
 * far below what a broken tower gives (scores off by whole units). */
#define CLIP_BF16_BOUND 0.12 /* measured 0.052 (clip-micro), 0.049 (clip-micro-gelu) */
#define CLIP_INT8_BOUND 0.45 /* measured 0.18, 0.21 */

static void check_precisions(const char *dir) {
    float fp32[IMAGES * TEXTS], other[IMAGES * TEXTS];
    scores_at(dir, VIT_FP32, fp32);
    const vit_precision precisions[] = {VIT_BF16, VIT_INT8};
    const double bounds[] = {CLIP_BF16_BOUND, CLIP_INT8_BOUND};
    for (int k = 0; k < 2; k++) {
        vit_error err = {0};
        vit_params p = vit_default_params();
        p.precision = precisions[k];
        vit_context *probe = vit_load(dir, &p, &err);
        if (!probe) { /* int8 needs oneDNN */
            print_message("SKIP %s %s: %s\n", dir, k ? "int8" : "bf16", err.msg);
            continue;
        }
        vit_free(probe);
        scores_at(dir, precisions[k], other);
        double worst = 0;
        for (int i = 0; i < IMAGES * TEXTS; i++)
            worst = fmax(worst, fabs((double)other[i] - fp32[i]));
        print_message("%s, %s: max |d score| against fp32 %.3g (bound %g)\n", dir,
                      k ? "int8" : "bf16", worst, bounds[k]);
        assert_true(worst <= bounds[k]);
    }
}

static void test_precisions(void **state) {
    (void)state;
    check_precisions("tests/data/clip-micro");
    check_precisions("tests/data/clip-micro-gelu");
    vit_error err = {0};
    vit_text_context *probe = vit_text_load("tests/data/siglip-micro", NULL, &err);
    if (probe) check_precisions("tests/data/siglip-micro");
    vit_text_free(probe);
}

/* Not joint models: a ViT has no joint dim and no classes; mismatched towers are refused. */
static void test_errors(void **state) {
    (void)state;
    vit_error err = {0};
    vit_context *vit = vit_load("tests/data/micro-a", NULL, &err);
    if (!vit) fail_msg("%s", err.msg);
    assert_int_equal(vit_joint_dim(vit), 0);
    float x[64];
    float *pixels = test_alloc_floats(vit_input_floats(vit));
    assert_int_equal(vit_embed(vit, pixels, 1, VIT_POOL_JOINT, x, &err), -1);
    assert_non_null(strstr(err.msg, "not a joint image-text model"));
    vit_text_context *txt = vit_text_load("tests/data/clip-micro", NULL, &err);
    if (!txt) fail_msg("%s", err.msg);
    const char *name = "cat";
    assert_null(vit_classes_create(txt, &name, 0, NULL, 0, &err));
    assert_non_null(strstr(err.msg, "no class names"));
    vit_classes *classes = vit_classes_create(txt, &name, 1, NULL, 0, &err);
    assert_non_null(classes);
    float scores[1];
    assert_int_equal(vit_zero_shot(vit, classes, pixels, 1, scores, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "joint dim"));
    vit_context *other = vit_load("tests/data/clip-micro-gelu", NULL, &err);
    assert_non_null(other);
    assert_int_equal(vit_zero_shot(other, classes, pixels, 1, scores, NULL, &err), -1);
    vit_free(other);
    vit_classes_free(classes);
    vit_text_free(txt);
    free(pixels);
    vit_free(vit);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_clip_quick_gelu),  cmocka_unit_test(test_clip_gelu),
        cmocka_unit_test(test_siglip),           cmocka_unit_test(test_siglip_no_cls),
        cmocka_unit_test(test_siglip_remainder), cmocka_unit_test(test_precisions),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
