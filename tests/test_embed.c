/* Features: vit_text_embed against a float64 PyTorch reference (tools/embed_reference.py), and
 * `vit embed` (safetensors, .npy, text lines, the list of inputs) against the library's vit_embed;
 * for CLIP and SigLIP folders, images and --text in the joint space against vit_embed and
 * vit_text_embed with VIT_POOL_JOINT and against tools/clip_reference.py's logits_per_image.
 * (vit_embed itself is checked against the goldens' hidden states in test_api and test_deit, the
 * joint embeddings in test_zero_shot.) */
#include "tests/testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vit/vit.h"

#include <cjson/cJSON.h>

/* float32 against float64 through two post-LN layers: measured below 3e-6; 1e-4 is the project's
 * tolerance for logits against the float64 goldens (README). */
#define TOL 1e-4

#define REFERENCE "tests/data/embed/bert-sst2-tiny.safetensors"

static const char *const texts[] = {
    "it 's a charming and often affecting journey . ",
    "unflinchingly bleak and desperate ",
    "allows us to hope that nolan is poised to embark a major career as a commercial yet "
    "inventive filmmaker . ",
};

static void test_text_features_match_reference(void **state) {
    (void)state;
    REQUIRE_SHARED("models/bert-sst2-tiny");
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", shared_path("models/bert-sst2-tiny"));
    vit_error err = {0};
    vit_text_context *ctx = vit_text_load(dir, NULL, &err);
    if (!ctx) fail_msg("%s", err.msg);
    const int D = vit_text_hidden_size(ctx), n = 3;
    size_t lengths[3];
    for (int i = 0; i < n; i++) lengths[i] = strlen(texts[i]);
    const char *names[] = {"cls", "mean", "pooler"};
    const vit_pool pools[] = {VIT_POOL_CLS, VIT_POOL_MEAN, VIT_POOL_POOLER};
    float *got = malloc(sizeof(float) * n * D);
    for (int p = 0; p < 3; p++) {
        /* one batch of three texts of different lengths: padding must not leak into any */
        assert_int_equal(vit_text_embed(ctx, texts, lengths, n, pools[p], got, &err), 0);
        size_t numel;
        float *want = test_read_tensor(REFERENCE, names[p], &numel);
        assert_non_null(want);
        double worst = 0;
        for (int i = 0; i < n * D; i++) worst = fmax(worst, fabs((double)got[i] - want[i]));
        print_message("bert-sst2-tiny %s features: max |d| %.2g\n", names[p], worst);
        assert_true(worst <= TOL);
        free(want);
    }
    assert_int_equal(vit_text_embed(ctx, texts, lengths, n, (vit_pool)99, got, &err), -1);
    free(got);
    vit_text_free(ctx);
}

static void expect_reference(const char *what, const char *golden, const char *name,
                             const float *got, size_t n) {
    size_t numel;
    float *want = test_read_tensor(golden, name, &numel);
    assert_non_null(want);
    assert_int_equal(numel, n);
    double worst = 0;
    for (size_t i = 0; i < n; i++) worst = fmax(worst, fabs((double)got[i] - want[i]));
    print_message("%s %s features: max |d| %.2g\n", what, name, worst);
    assert_true(worst <= TOL);
    free(want);
}

/* Base models without a head, in the layout transformers saves them (no prefix, a pooler, no
 * classifier; tools/base_model_reference.py): a ViTModel's features (vit_embed) and a
 * BertModel's (vit_text_embed) against float64 forwards. Issue 40: both were refused for a
 * missing classifier. */
static void test_base_models_match_reference(void **state) {
    (void)state;
    vit_error err = {0};
    const char *golden = TEST_DATA "/vit-base-micro/golden.safetensors";
    vit_params params = vit_default_params();
    params.max_batch = 2;
    vit_context *ctx = vit_load(TEST_DATA "/vit-base-micro", &params, &err);
    if (!ctx) fail_msg("%s", err.msg);
    size_t numel;
    float *pixels = test_read_tensor(golden, "pixels", &numel);
    assert_true(pixels && numel == 2 * 3 * 32 * 32);
    const int D = vit_hidden_size(ctx);
    float got[2 * 24];
    assert_int_equal(D, 24);
    assert_int_equal(vit_default_pool(ctx), VIT_POOL_CLS);
    if (vit_embed(ctx, pixels, 2, VIT_POOL_CLS, got, &err) != 0) fail_msg("%s", err.msg);
    expect_reference("vit-base-micro", golden, "cls", got, 2 * 24);
    assert_int_equal(vit_embed(ctx, pixels, 2, VIT_POOL_MEAN, got, &err), 0);
    expect_reference("vit-base-micro", golden, "mean", got, 2 * 24);
    free(pixels);
    vit_free(ctx);
    golden = TEST_DATA "/bert-base-micro/golden.safetensors";
    vit_text_context *text = vit_text_load(TEST_DATA "/bert-base-micro", NULL, &err);
    if (!text) fail_msg("%s", err.msg);
    const char *lines[] = {"the cat sat on the mat", "a dog ran",
                           "it was very good and then my old dog slept in the sun"};
    size_t lengths[3];
    for (int i = 0; i < 3; i++) lengths[i] = strlen(lines[i]);
    float features[3 * 32];
    const char *names[] = {"cls", "mean", "pooler"};
    const vit_pool pools[] = {VIT_POOL_CLS, VIT_POOL_MEAN, VIT_POOL_POOLER};
    for (int p = 0; p < 3; p++) {
        assert_int_equal(vit_text_embed(text, lines, lengths, 3, pools[p], features, &err), 0);
        expect_reference("bert-base-micro", golden, names[p], features, 3 * 32);
    }
    vit_text_free(text);
}

/* A SigLIP image tower saved alone (SiglipVisionModel: no logit_scale, which is SiglipModel's),
 * with and without its attention-pooling head (vision_use_head false): loaded, its features
 * against float64 forwards (tools/siglip_tower_reference.py), no joint space claimed, and vit info
 * saying what it is. Issue 40: the first was refused for a missing logit_scale, the second for
 * vision_use_head false. */
static void test_siglip_vision_tower_alone(void **state) {
    (void)state;
    static const char *const dirs[] = {TEST_DATA "/siglip-vision-micro",
                                       TEST_DATA "/siglip-vision-nohead-micro"};
    for (int k = 0; k < 2; k++) {
        char golden[4200];
        snprintf(golden, sizeof golden, "%s/golden.safetensors", dirs[k]);
        vit_params params = vit_default_params();
        params.max_batch = 3;
        vit_error err = {0};
        vit_context *ctx = vit_load(dirs[k], &params, &err);
        if (!ctx) fail_msg("%s", err.msg);
        size_t numel;
        float *pixels = test_read_tensor(golden, "pixels", &numel), got[3 * 16 * 32];
        assert_true(pixels && numel == 3 * 3 * 32 * 32);
        assert_int_equal(vit_joint_dim(ctx), 0); /* no text tower, no logit_scale */
        assert_int_equal(vit_default_pool(ctx), k == 0 ? VIT_POOL_POOLER : VIT_POOL_MEAN);
        if (k == 0) {
            if (vit_embed(ctx, pixels, 3, VIT_POOL_POOLER, got, &err) != 0) fail_msg("%s", err.msg);
            expect_reference(dirs[k], golden, "pooler", got, 3 * 32);
        } else {
            assert_int_equal(vit_embed(ctx, pixels, 3, VIT_POOL_POOLER, got, &err), -1);
            assert_non_null(strstr(err.msg, "pooler_output is None"));
            assert_int_equal(vit_forward(ctx, pixels, 3, got, &err), -1);
            assert_non_null(strstr(err.msg, "no output vector"));
        }
        assert_int_equal(vit_embed(ctx, pixels, 3, VIT_POOL_MEAN, got, &err), 0);
        expect_reference(dirs[k], golden, "mean", got, 3 * 32);
        assert_int_equal(vit_embed(ctx, pixels, 3, VIT_POOL_PATCHES, got, &err), 0);
        expect_reference(dirs[k], golden, "patches", got, 3 * 16 * 32);
        assert_int_equal(vit_embed(ctx, pixels, 3, VIT_POOL_JOINT, got, &err), -1);
        assert_non_null(strstr(err.msg, "no joint image-text space"));
        assert_int_equal(vit_embed(ctx, pixels, 3, VIT_POOL_CLS, got, &err), -1);
        assert_non_null(strstr(err.msg, "no CLS token"));
        free(pixels);
        vit_free(ctx);
        const char *args[] = {"info", "-m", dirs[k], NULL};
        test_run_result run = test_run_vit(NULL, NULL, args);
        assert_int_equal(run.status, 0);
        assert_non_null(strstr(run.out, "SiglipVisionModel: one image tower alone (no text tower, "
                                        "no joint space)"));
        assert_non_null(strstr(run.out, k == 0 ? "pooler_output" : "every row out"));
        assert_null(strstr(run.out, "text tower:"));
        assert_null(strstr(run.out, "logit_scale"));
        test_run_free(&run);
    }
}

/* A text tower saved alone (dir): vit_text_forward's output against golden `text/I/embeds`, for
 * the golden.json texts of clip-micro and siglip-micro (the same five), one forward each; no
 * joint space claimed. */
/* The texts of the towers' goldens (tools/clip_tower_reference.py: clip_reference.py's TEXTS). */
static const char *const tower_texts[5] = {
    "a photo of a cat", "A Photo of the DOG's photo!", "",
    "cat dog cat dog cat dog cat dog cat dog cat dog cat dog cat dog",
    "the photo 12 of a bird \xc3\xa9t\xc3\xa9"};

static void expect_text_tower(const char *dir) {
    char golden[4200];
    snprintf(golden, sizeof golden, "%s/golden.safetensors", dir);
    vit_error err = {0};
    vit_text_context *text = vit_text_load(dir, NULL, &err);
    if (!text) fail_msg("%s", err.msg);
    assert_int_equal(vit_text_joint_dim(text), 0);
    const char *const *texts = tower_texts;
    for (int i = 0; i < 5; i++) {
        const size_t len = strlen(texts[i]);
        float got[64];
        assert_true(vit_text_num_labels(text) <= 64);
        if (vit_text_forward(text, &texts[i], &len, 1, got, NULL, &err) != 0)
            fail_msg("%s", err.msg);
        char name[32];
        snprintf(name, sizeof name, "text/%d/embeds", i);
        expect_reference(dir, golden, name, got, (size_t)vit_text_num_labels(text));
        /* the default pooling is that output (text_embeds, pooler_output) */
        if (vit_text_embed(text, &texts[i], &len, 1, vit_text_default_pool(text), got, &err) != 0)
            fail_msg("%s", err.msg);
        expect_reference(dir, golden, name, got, (size_t)vit_text_num_labels(text));
    }
    vit_text_free(text);
}

/* An image tower saved alone (dir): vit_forward's output, D floats an image, against golden
 * `name` for its three golden images; no joint space claimed. */
static void expect_image_tower(const char *dir, const char *name, int D) {
    char golden[4200];
    snprintf(golden, sizeof golden, "%s/golden.safetensors", dir);
    vit_params params = vit_default_params();
    params.max_batch = 3;
    vit_error err = {0};
    vit_context *ctx = vit_load(dir, &params, &err);
    if (!ctx) fail_msg("%s", err.msg);
    size_t numel;
    float *pixels = test_read_tensor(golden, "pixels", &numel), got[3 * 64];
    assert_true(pixels && numel == 3 * 3 * 32 * 32 && D <= 64);
    assert_int_equal(vit_joint_dim(ctx), 0);
    assert_int_equal(vit_num_labels(ctx), D);
    if (vit_forward(ctx, pixels, 3, got, &err) != 0) fail_msg("%s", err.msg);
    expect_reference(dir, golden, name, got, 3 * (size_t)D);
    /* the default pooling is that output (image_embeds, pooler_output) */
    if (vit_embed(ctx, pixels, 3, vit_default_pool(ctx), got, &err) != 0) fail_msg("%s", err.msg);
    expect_reference(dir, golden, name, got, 3 * (size_t)D);
    assert_int_equal(vit_embed(ctx, pixels, 3, VIT_POOL_JOINT, got, &err), -1);
    free(pixels);
    vit_free(ctx);
}

/* Towers saved alone, as transformers saves them (tools/clip_tower_reference.py, from clip-micro
 * and siglip-micro): CLIPVisionModelWithProjection and CLIPTextModelWithProjection (no
 * logit_scale, which is CLIPModel's; their output image_embeds / text_embeds, the projection of
 * the pooled row, unnormalised) and SiglipTextModel (no logit_scale or logit_bias; its output
 * pooler_output, the head at the last position), and CLIPVisionModel (no projection either: its
 * pooler_output, the CLS row normalised), against float64 forwards, no joint space claimed (no
 * other tower, no score scale). Issue 40: the first three were refused for a missing logit_scale,
 * CLIPVisionModel as a class vit does not run. */
static void test_towers_alone(void **state) {
    (void)state;
    expect_image_tower(TEST_DATA "/clip-vision-proj-micro", "image_embeds", 20);
    expect_image_tower(TEST_DATA "/clip-vision-micro", "pooler", 32);
    expect_text_tower(TEST_DATA "/clip-text-proj-micro");
#ifdef VIT_SENTENCEPIECE
    expect_text_tower(TEST_DATA "/siglip-text-micro");
#endif
}

/* `vit embed` of two images (a folder and a file) in the three output forms, against vit_embed. */
static void test_cli_matches_library(void **state) {
    (void)state;
    REQUIRE_BIN();
    const char *model = "tests/data/deit-micro";
    const char *images[] = {"examples/photos/cat.jpg", "examples/photos/coffee.jpg"};
    vit_error err = {0};
    vit_context *ctx = vit_load(model, NULL, &err);
    if (!ctx) fail_msg("%s", err.msg);
    const int D = vit_hidden_size(ctx);
    float *pixels = malloc(sizeof(float) * vit_input_floats(ctx)),
          *want = malloc(sizeof(float) * 2 * D);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(vit_preprocess_file(ctx, images[i], pixels, &err), 0);
        assert_int_equal(vit_embed(ctx, pixels, 1, VIT_POOL_MEAN, want + i * D, &err), 0);
    }
    char out[4096], list[4096];
    snprintf(out, sizeof out, "%s/features.safetensors", test_tmpdir());
    const char *args[] = {"embed",   "-m",      model, "--pool", "mean",
                          images[0], images[1], "-o",  out,      NULL};
    test_run_result r = test_run_vit(NULL, NULL, args);
    assert_int_equal(r.status, 0);
    test_run_free(&r);
    size_t numel;
    float *got = test_read_tensor(out, "embeddings", &numel);
    assert_non_null(got);
    assert_int_equal(numel, 2 * D);
    for (int i = 0; i < 2 * D; i++) assert_true(fabs(got[i] - want[i]) <= 1e-5);
    free(got);
    snprintf(list, sizeof list, "%s/features.txt", test_tmpdir());
    size_t size;
    char *names = (char *)read_whole_file(list, &size);
    assert_string_equal(names, "examples/photos/cat.jpg\nexamples/photos/coffee.jpg\n");
    free(names);
    /* .npy (args[8] is out): the header NumPy writes for a [2, D] little-endian float32 array,
     * then the rows */
    snprintf(out, sizeof out, "%s/features.npy", test_tmpdir());
    test_run_result n = test_run_vit(NULL, NULL, args);
    assert_int_equal(n.status, 0);
    test_run_free(&n);
    uint8_t *npy = read_whole_file(out, &size);
    char header[80];
    snprintf(header, sizeof header, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, %d), }",
             D);
    assert_memory_equal(npy, "\x93NUMPY\x01\x00", 8);
    const size_t header_len = npy[8] | (size_t)npy[9] << 8;
    assert_int_equal((10 + header_len) % 64, 0);
    assert_memory_equal(npy + 10, header, strlen(header));
    assert_int_equal(size, 10 + header_len + sizeof(float) * 2 * D);
    float row0;
    memcpy(&row0, npy + 10 + header_len, sizeof row0);
    assert_true(fabs(row0 - want[0]) <= 1e-5);
    free(npy);
    /* -: name, tab, numbers */
    const char *lines[] = {"embed", "-m", model, "--pool", "mean", images[1], "-o", "-", NULL};
    test_run_result t = test_run_vit(NULL, NULL, lines);
    assert_int_equal(t.status, 0);
    assert_true(strncmp(t.out, "examples/photos/coffee.jpg\t", 27) == 0);
    char *end = t.out + 27;
    for (int d = 0; d < D; d++) {
        const double v = strtod(end, &end);
        assert_true(fabs(v - want[D + d]) <= 1e-5);
    }
    assert_string_equal(end, "\n");
    test_run_free(&t);
    free(pixels);
    free(want);
    vit_free(ctx);
}

/* An input that cannot be read: one line naming it, the others written, exit 1. */
static void test_cli_unreadable_input(void **state) {
    (void)state;
    REQUIRE_BIN();
    const char *args[] = {
        "embed", "-m", "tests/data/deit-micro", "no-such.jpg", "examples/photos/cat.jpg", "-o",
        "-",     NULL};
    test_run_result r = test_run_vit(NULL, NULL, args);
    assert_int_equal(r.status, 1);
    assert_string_equal(r.err, "vit embed: no-such.jpg: No such file or directory\n");
    assert_true(strncmp(r.out, "examples/photos/cat.jpg\t", 24) == 0);
    test_run_free(&r);
    const char *pooler[] = {"embed",  "-m",     "tests/data/deit-micro",
                            "--pool", "pooler", "examples/photos/cat.jpg",
                            "-o",     "-",      NULL};
    r = test_run_vit(NULL, NULL, pooler);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "--pool pooler is for text models"));
    test_run_free(&r);
}

/* ---- joint models: CLIP and SigLIP ---- */

#define GOLDEN_IMAGES_N 3
#define GOLDEN_TEXTS_N  5
static const char *const golden_images[GOLDEN_IMAGES_N] = {
    "tests/data/golden-images/rgb_64x48.png", "tests/data/golden-images/tall_40x400.jpg",
    "tests/data/golden-images/palette_120x90.png"};

/* The texts of a model folder's golden.json (tools/clip_reference.py), copies in texts[]. */
static void golden_texts(const char *dir, char **texts) {
    char path[256];
    snprintf(path, sizeof path, "%s/golden.json", dir);
    char *json = (char *)read_whole_file(path, NULL);
    assert_non_null(json);
    cJSON *root = cJSON_Parse(json);
    const cJSON *list = cJSON_GetObjectItem(root, "texts");
    assert_int_equal(cJSON_GetArraySize(list), GOLDEN_TEXTS_N);
    for (int i = 0; i < GOLDEN_TEXTS_N; i++)
        texts[i] = strdup(cJSON_GetArrayItem(list, i)->valuestring);
    cJSON_Delete(root);
    free(json);
}

/* `vit embed ARGS... -o out` (args NULL-terminated, at most 16): the rows of its 'embeddings'
 * (rows x dim) and the list of names beside it. */
static float *run_embed(const char *const *args, const char *out, size_t rows, int dim,
                        char **names) {
    const char *argv[24] = {"embed"};
    int n = 1;
    while (*args) argv[n++] = *args++;
    argv[n++] = "-o";
    argv[n++] = out;
    argv[n] = NULL;
    test_run_result r = test_run_vit(NULL, NULL, argv);
    if (r.status != 0) fail_msg("vit embed exited %d: %s", r.status, r.err);
    test_run_free(&r);
    size_t numel;
    float *got = test_read_tensor(out, "embeddings", &numel);
    assert_non_null(got);
    assert_int_equal(numel, rows * (size_t)dim);
    char list[4200];
    snprintf(list, sizeof list, "%.*s.txt", (int)(strrchr(out, '.') - out), out);
    *names = (char *)read_whole_file(list, NULL);
    assert_non_null(*names);
    return got;
}

static void expect_rows(const char *what, const float *got, const float *want, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!(fabs((double)got[i] - want[i]) <= 1e-5))
            fail_msg("%s[%zu]: %.7g, want %.7g", what, i, got[i], want[i]);
}

/* A CLIP folder: images (joint by default) and --text rows equal vit_embed and vit_text_embed
 * with VIT_POOL_JOINT (the library: checked against float64 in test_zero_shot), of unit length;
 * an image's row times a text's row is their cosine similarity, so times exp(logit_scale) it is
 * the reference's logits_per_image. */
static void check_joint_cli(const char *dir) {
    vit_error err = {0};
    vit_params ip = vit_default_params();
    ip.max_batch = GOLDEN_IMAGES_N;
    vit_context *img = vit_load(dir, &ip, &err);
    if (!img) fail_msg("%s", err.msg);
    vit_text_context *txt = vit_text_load(dir, NULL, &err);
    if (!txt) fail_msg("%s", err.msg);
    const int D = vit_joint_dim(img);
    assert_true(D > 0);
    const size_t F = vit_input_floats(img);
    float *pixels = test_alloc_floats(GOLDEN_IMAGES_N * F),
          *want_img = test_alloc_floats(GOLDEN_IMAGES_N * D),
          *want_txt = test_alloc_floats(GOLDEN_TEXTS_N * D);
    for (int i = 0; i < GOLDEN_IMAGES_N; i++)
        assert_int_equal(vit_preprocess_file(img, golden_images[i], pixels + i * F, &err), 0);
    assert_int_equal(vit_embed(img, pixels, GOLDEN_IMAGES_N, VIT_POOL_JOINT, want_img, &err), 0);
    char *texts[GOLDEN_TEXTS_N];
    golden_texts(dir, texts);
    size_t lengths[GOLDEN_TEXTS_N];
    for (int i = 0; i < GOLDEN_TEXTS_N; i++) lengths[i] = strlen(texts[i]);
    assert_int_equal(vit_text_embed(txt, (const char *const *)texts, lengths, GOLDEN_TEXTS_N,
                                    VIT_POOL_JOINT, want_txt, &err),
                     0);

    char out[4200], *names;
    snprintf(out, sizeof out, "%s/images.safetensors", test_tmpdir());
    const char *image_args[] = {"-m", dir, golden_images[0], golden_images[1], golden_images[2],
                                NULL};
    float *got_img = run_embed(image_args, out, GOLDEN_IMAGES_N, D, &names);
    expect_rows("image rows", got_img, want_img, (size_t)GOLDEN_IMAGES_N * D);
    free(names);
    /* the texts: three --text, the other two from a --text-file, in the order given */
    char file_text[512];
    snprintf(file_text, sizeof file_text, "%s\n%s\n", texts[3], texts[4]);
    const char *file = write_temp_file("texts.txt", file_text, strlen(file_text));
    snprintf(out, sizeof out, "%s/texts.safetensors", test_tmpdir());
    const char *text_args[] = {"-m",     dir,      "--text",      texts[0], "--text", texts[1],
                               "--text", texts[2], "--text-file", file,     NULL};
    float *got_txt = run_embed(text_args, out, GOLDEN_TEXTS_N, D, &names);
    expect_rows("text rows", got_txt, want_txt, (size_t)GOLDEN_TEXTS_N * D);
    char want_names[1024];
    snprintf(want_names, sizeof want_names, "%s\n%s\n%s\n%s:1\n%s:2\n", texts[0], texts[1],
             texts[2], file, file);
    assert_string_equal(names, want_names);
    free(names);

    size_t n;
    char golden[256];
    snprintf(golden, sizeof golden, "%s/golden.safetensors", dir);
    float *logits = test_read_tensor(golden, "logits_per_image", &n);
    assert_int_equal(n, GOLDEN_IMAGES_N * GOLDEN_TEXTS_N);
    for (int i = 0; i < GOLDEN_IMAGES_N; i++) {
        double norm = 0;
        for (int d = 0; d < D; d++) norm += (double)got_img[i * D + d] * got_img[i * D + d];
        assert_float_equal(norm, 1.0, 1e-5);
        for (int t = 0; t < GOLDEN_TEXTS_N; t++) {
            double dot = 0, tnorm = 0;
            for (int d = 0; d < D; d++) {
                dot += (double)got_img[i * D + d] * got_txt[t * D + d];
                tnorm += (double)got_txt[t * D + d] * got_txt[t * D + d];
            }
            assert_float_equal(tnorm, 1.0, 1e-5);
            /* the reference's scale: exp(logit_scale), logit_scale = 2.6592 */
            assert_float_equal(dot * exp(2.6592), logits[i * GOLDEN_TEXTS_N + t], 1e-4);
        }
    }
    free(logits);
    free(got_img);
    free(got_txt);
    for (int i = 0; i < GOLDEN_TEXTS_N; i++) free(texts[i]);
    free(pixels);
    free(want_img);
    free(want_txt);
    vit_text_free(txt);
    vit_free(img);
}

/* `vit embed --text` of the five golden texts by a text tower saved alone (dir), by default:
 * its output (text_embeds, pooler_output), against the float64 goldens, each row within TOL. */
static void expect_text_tower_cli(const char *dir, int dim) {
    char out[4200], golden[4200], *names;
    snprintf(out, sizeof out, "%s/tower-texts.safetensors", test_tmpdir());
    snprintf(golden, sizeof golden, "%s/golden.safetensors", dir);
    const char *argv[13] = {"-m", dir}; /* five --text TEXT, NULL */
    for (int i = 0, n = 2; i < 5; i++) argv[n++] = "--text", argv[n++] = tower_texts[i];
    float *got = run_embed(argv, out, 5, dim, &names);
    for (int i = 0; i < 5; i++) {
        char name[32];
        snprintf(name, sizeof name, "text/%d/embeds", i);
        expect_reference(dir, golden, name, got + (size_t)i * dim, (size_t)dim);
    }
    free(names);
    free(got);
}

/* Issue 40: `vit embed` on towers saved alone gives what transformers' class outputs, by
 * default: a CLIPVisionModelWithProjection's image_embeds (the projection of the pooled CLS row;
 * it gave the CLS row), a CLIPTextModelWithProjection's text_embeds and a SiglipTextModel's
 * pooler_output (--text refused both: "its text embedding is VIT_POOL_JOINT"), against the
 * float64 goldens (tools/clip_tower_reference.py) within TOL. */
static void test_cli_towers_alone(void **state) {
    (void)state;
    REQUIRE_BIN();
    const char *dir = TEST_DATA "/clip-vision-proj-micro";
    char out[4200], golden[4200], *names;
    snprintf(out, sizeof out, "%s/tower-images.safetensors", test_tmpdir());
    snprintf(golden, sizeof golden, "%s/golden.safetensors", dir);
    const char *args[] = {"-m", dir, golden_images[0], golden_images[1], golden_images[2], NULL};
    float *got = run_embed(args, out, GOLDEN_IMAGES_N, 20, &names);
    expect_reference(dir, golden, "image_embeds", got, GOLDEN_IMAGES_N * 20);
    free(names);
    free(got);
    expect_text_tower_cli(TEST_DATA "/clip-text-proj-micro", 20);
#ifdef VIT_SENTENCEPIECE
    expect_text_tower_cli(TEST_DATA "/siglip-text-micro", 32);
#endif
    /* vit info names that output and the default (it said "no joint space, embeddings of the
     * joint space", and no default pooling) */
    const struct {
        const char *dir, *says[2];
    } info[] = {
        {"clip-vision-proj-micro",
         {"the projection of the pooled row (image_embeds)", "--pool projection"}},
        {"clip-text-proj-micro",
         {"the projection of the pooled row (text_embeds)", "--pool projection"}},
#ifdef VIT_SENTENCEPIECE
        {"siglip-text-micro", {"the head at the last position (pooler_output)", "--pool pooler"}},
#endif
    };
    for (size_t i = 0; i < sizeof info / sizeof info[0]; i++) {
        char path[256];
        snprintf(path, sizeof path, "%s/%s", TEST_DATA, info[i].dir);
        const char *args[] = {"info", "-m", path, NULL};
        test_run_result run = test_run_vit(NULL, NULL, args);
        assert_int_equal(run.status, 0);
        for (int k = 0; k < 2; k++)
            if (!strstr(run.out, info[i].says[k]))
                fail_msg("vit info -m %s does not say '%s':\n%s", path, info[i].says[k], run.out);
        assert_null(strstr(run.out, "embeddings of the joint space"));
        test_run_free(&run);
    }
}

/* Texts from files: a lines file (a blank line left out, each row named by its line in the
 * file) and a TSV's column, by number and by its header's name, give the rows the library gives
 * the same texts (a sentence-transformers folder's pipeline); a row with too few columns is
 * reported by FILE:LINE and left out, exit 1 after the others are written. */
static void test_cli_text_files_and_columns(void **state) {
    (void)state;
    REQUIRE_BIN();
    const char *dir = "tests/data/st-mean-micro";
    static const char *const texts[] = {"the cat sat on the mat", "a dog ran", "", "birds fly"};
    vit_error err = {0};
    vit_text_context *ctx = vit_text_load(dir, NULL, &err);
    if (!ctx) fail_msg("%s", err.msg);
    const int D = vit_text_embed_size(ctx, VIT_POOL_SENTENCE);
    size_t lengths[4];
    for (int i = 0; i < 4; i++) lengths[i] = strlen(texts[i]);
    float *want = test_alloc_floats(4 * (size_t)D);
    assert_int_equal(vit_text_embed_with(ctx, texts, lengths, 4, NULL, want, &err), 0);
    const float *want_lines[] = {want, want + D, want + 3 * D}; /* the empty text is blank */

    char out[4200], *names;
    snprintf(out, sizeof out, "%s/lines.safetensors", test_tmpdir());
    const char lines_text[] = "the cat sat on the mat\na dog ran\n  \nbirds fly\n";
    const char *lines = write_temp_file("lines.txt", lines_text, sizeof lines_text - 1);
    const char *line_args[] = {"-m", dir, "-b", "2", lines, NULL};
    float *got = run_embed(line_args, out, 3, D, &names);
    for (int i = 0; i < 3; i++) expect_rows("lines", got + (size_t)i * D, want_lines[i], (size_t)D);
    char want_names[1024];
    snprintf(want_names, sizeof want_names, "%s:1\n%s:2\n%s:4\n", lines, lines, lines);
    assert_string_equal(names, want_names);
    free(names);
    free(got);

    const char tsv_text[] = "id\ttext\tlabel\n7\tthe cat sat on the mat\t1\n8\ta dog ran\t0\n"
                            "9\t\t1\n10\tbirds fly\n";
    const char *tsv = write_temp_file("texts.tsv", tsv_text, sizeof tsv_text - 1);
    snprintf(out, sizeof out, "%s/column.safetensors", test_tmpdir());
    const char *by_name[] = {"-m", dir, "--column", "text", tsv, NULL};
    got = run_embed(by_name, out, 4, D, &names);
    expect_rows("--column text", got, want, 4 * (size_t)D);
    snprintf(want_names, sizeof want_names, "%s:2\n%s:3\n%s:4\n%s:5\n", tsv, tsv, tsv, tsv);
    assert_string_equal(names, want_names);
    free(names);
    free(got);
    /* by number the header is a text too: the last row is its 'text' */
    const char *by_number[] = {"embed", "-m", dir, "--column", "2", tsv, "-o", "-", NULL};
    test_run_result r = test_run_vit(NULL, NULL, by_number);
    assert_int_equal(r.status, 0);
    char first[64];
    snprintf(first, sizeof first, "%s:1\t", tsv);
    assert_true(strncmp(r.out, first, strlen(first)) == 0);
    test_run_free(&r);
    /* column 3: line 5 has none */
    const char *third[] = {"embed", "-m", dir, "--column", "3", tsv, "-o", "-", NULL};
    r = test_run_vit(NULL, NULL, third);
    assert_int_equal(r.status, 1);
    char says[256];
    snprintf(says, sizeof says, "vit embed: %s:5: no column 3 (the line has fewer)\n", tsv);
    assert_string_equal(r.err, says);
    int rows = 0;
    for (const char *c = r.out; *c; c++) rows += *c == '\n';
    assert_int_equal(rows, 4);
    test_run_free(&r);
    /* a header without that name; --column with images */
    const char *no_name[] = {"embed", "-m", dir, "--column", "sentence", tsv, "-o", "-", NULL};
    r = test_run_vit(NULL, NULL, no_name);
    assert_int_equal(r.status, 1);
    snprintf(says, sizeof says,
             "vit embed: %s: no column 'sentence' in its first line (the header)\n", tsv);
    assert_string_equal(r.err, says);
    test_run_free(&r);
    const char *images[] = {"embed", "--column", "2", "examples/photos", "-o", "-", NULL};
    r = test_run_vit(NULL, NULL, images);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "--column are for texts"));
    test_run_free(&r);
    free(want);
    vit_text_free(ctx);
}

static void test_cli_joint_clip(void **state) {
    (void)state;
    REQUIRE_BIN();
    check_joint_cli("tests/data/clip-micro");
    check_joint_cli("tests/data/clip-micro-gelu");
}

/* SigLIP's image tower has only the joint embedding: the default; --pool cls is the library's
 * refusal. A folder without its tokenizer: --text says so. And what does not fit: --pool joint for
 * a DeiT, images beside --text. */
static void test_cli_joint_siglip_and_refusals(void **state) {
    (void)state;
    REQUIRE_BIN();
    const char *dir = "tests/data/siglip-micro";
    vit_error err = {0};
    vit_context *img = vit_load(dir, NULL, &err);
    if (!img) fail_msg("%s", err.msg);
    const int D = vit_joint_dim(img);
    float *pixels = test_alloc_floats(vit_input_floats(img)), *want = test_alloc_floats(D);
    assert_int_equal(vit_preprocess_file(img, golden_images[1], pixels, &err), 0);
    assert_int_equal(vit_embed(img, pixels, 1, VIT_POOL_JOINT, want, &err), 0);
    const char *args[] = {"embed", "-m", dir, golden_images[1], "-o", "-", NULL};
    test_run_result r = test_run_vit(NULL, NULL, args);
    assert_int_equal(r.status, 0);
    const size_t len = strlen(golden_images[1]);
    assert_memory_equal(r.out, golden_images[1], len);
    assert_int_equal(r.out[len], '\t');
    char *end = r.out + len + 1;
    for (int d = 0; d < D; d++) assert_true(fabs(strtod(end, &end) - want[d]) <= 1e-5);
    assert_string_equal(end, "\n");
    test_run_free(&r);
    vit_free(img);
    free(pixels);
    free(want);

    const struct {
        const char *args[8];
        int status;
        const char *says;
    } refused[] = {
        {{"embed", "-m", dir, "--pool", "cls", golden_images[1], "-o", "-"}, 1, "no CLS token"},
        {{"embed", "-m", test_joint_without_tokenizer(), "--text", "a cat", "-o", "-"},
         1,
         "no tokenizer files"},
        {{"embed", "-m", "tests/data/deit-micro", "--pool", "joint", golden_images[1], "-o", "-"},
         2,
         "--pool joint is for CLIP and SigLIP models"},
        {{"embed", "-m", "tests/data/clip-micro", "--text", "a cat", golden_images[1], "-o", "-"},
         2,
         "images and --text/--text-file in one run"},
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        const char *argv[9];
        memcpy(argv, refused[i].args, sizeof refused[i].args);
        argv[8] = NULL;
        r = test_run_vit(NULL, NULL, argv);
        assert_int_equal(r.status, refused[i].status);
        if (!strstr(r.err, refused[i].says)) fail_msg("%s: expected '%s'", r.err, refused[i].says);
        assert_string_equal(r.out, "");
        assert_non_null(strchr(r.err, '\n'));
        assert_string_equal(strchr(r.err, '\n'), "\n"); /* one line */
        test_run_free(&r);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_base_models_match_reference),
        cmocka_unit_test(test_siglip_vision_tower_alone),
        cmocka_unit_test(test_towers_alone),
        cmocka_unit_test(test_text_features_match_reference),
        cmocka_unit_test(test_cli_matches_library),
        cmocka_unit_test(test_cli_unreadable_input),
        cmocka_unit_test(test_cli_text_files_and_columns),
        cmocka_unit_test(test_cli_joint_clip),
        cmocka_unit_test(test_cli_towers_alone),
        cmocka_unit_test(test_cli_joint_siglip_and_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
