/* timm's VisionTransformer folders (issue 41) against tools/timm_reference.py: its float64
 * forward (written from timm's vision_transformer.py) and its eval transform (PIL and torchvision
 * as timm runs them) on the example photos and golden images; the same weights as a
 * ViTForImageClassification folder; vit info, classify and embed on them; what is refused. */
#include "tests/testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vit/vit.h"

/* float32 against float64 through two pre-LN blocks of width 24-32: measured below 2e-6 (printed
 * below); 1e-4 is the project's tolerance for outputs against float64 goldens, and a wrong part
 * (a missing layer scale, positions on the class token, the norm before the mean) moves them by
 * 1e-2 or more. */
#define TOL 1e-4

static const char *const images[] = {
    "examples/photos/cat.jpg",
    "examples/photos/coffee.jpg",
    "examples/photos/rocket.jpg",
    "tests/data/golden-images/rgb_300x200.png",
    "tests/data/golden-images/tall_40x400.jpg",
    "tests/data/golden-images/wide_500x37.png",
    "tests/data/golden-images/baseline_q90_240x180.jpg",
    "tests/data/golden-images/rgb_17x23.png",
};
#define IMAGES (int)(sizeof images / sizeof images[0])

static const char *const folders[] = {
    "tests/data/timm-vit-micro",          "tests/data/timm-gap-reg-micro",
    "tests/data/timm-deit3-micro",        "tests/data/timm-dinov2-reg-micro",
    "tests/data/timm-siglip-micro",       "tests/data/timm-siglip-gap-micro",
    "tests/data/timm-dinov2-giant-micro", "tests/data/timm-so150m-reg-micro",
};

static vit_context *load(const char *dir) {
    vit_error err = {0};
    vit_context *ctx = vit_load(dir, NULL, &err);
    if (!ctx) fail_msg("%s: %s", dir, err.msg);
    return ctx;
}

/* Each image preprocessed as timm's eval transform: the same float32 pixels as the reference's
 * (PIL's resize, torchvision's center crop offsets, ToTensor, Normalize): exactly. */
static void test_preprocessing_is_timms(void **state) {
    (void)state;
    for (size_t f = 0; f < sizeof folders / sizeof folders[0]; f++) {
        vit_context *ctx = load(folders[f]);
        const size_t n = vit_input_floats(ctx);
        float *px = test_alloc_floats(n);
        for (int i = 0; i < IMAGES; i++) {
            vit_error err = {0};
            if (vit_preprocess_file(ctx, images[i], px, &err) != 0)
                fail_msg("%s: %s", images[i], err.msg);
            char name[32];
            snprintf(name, sizeof name, "pixels.%d", i);
            size_t numel;
            float *want = test_golden_tensor(folders[f], name, &numel);
            assert_int_equal(numel, n);
            size_t off = 0;
            for (size_t k = 0; k < n; k++) off += px[k] != want[k];
            if (off) fail_msg("%s, %s: %zu of %zu pixels differ", folders[f], images[i], off, n);
            free(want);
        }
        free(px);
        vit_free(ctx);
    }
}

/* The forward on the reference's pixels against its float64 outputs (logits, or the pooled
 * features of a folder without a head). */
static void test_outputs_match_reference(void **state) {
    (void)state;
    for (size_t f = 0; f < sizeof folders / sizeof folders[0]; f++) {
        vit_context *ctx = load(folders[f]);
        const int K = vit_num_labels(ctx);
        float *out = test_alloc_floats((size_t)K);
        double worst = 0;
        for (int i = 0; i < IMAGES; i++) {
            char name[32];
            size_t numel;
            snprintf(name, sizeof name, "pixels.%d", i);
            float *px = test_golden_tensor(folders[f], name, NULL);
            snprintf(name, sizeof name, "output.%d", i);
            float *want = test_golden_tensor(folders[f], name, &numel);
            assert_int_equal(numel, (size_t)K);
            vit_error err = {0};
            if (vit_forward(ctx, px, 1, out, &err) != 0) fail_msg("%s", err.msg);
            for (int k = 0; k < K; k++) {
                const double d = fabs((double)out[k] - want[k]);
                worst = d > worst ? d : worst;
                if (!(d <= TOL))
                    fail_msg("%s, %s: output %d is %g, the reference %g", folders[f], images[i], k,
                             out[k], want[k]);
            }
            free(px);
            free(want);
        }
        print_message("%s: largest difference %.2g\n", folders[f], worst);
        free(out);
        vit_free(ctx);
    }
}

/* Another input size (--size N, vit_params.image_size): the positions resampled as timm's
 * resample_abs_pos_embed does for dynamic_img_size and create_model(img_size=N) (bicubic,
 * antialias=True, the prefix rows kept: the class token's with positions, the registers' with
 * positions, none with no_embed_class), the eval transform at N; against
 * tools/timm_resize_reference.py's float64 goldens. Before, refused ('inference at the model's
 * image_size only'). */
static void test_other_sizes(void **state) {
    (void)state;
    static const struct {
        const char *dir;
        int size;
    } runs[] = {{"tests/data/timm-vit-micro", 48},
                {"tests/data/timm-gap-reg-micro", 42},
                {"tests/data/timm-so150m-reg-micro", 40}};
    for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++) {
        vit_error err = {0};
        vit_params params = vit_default_params();
        params.image_size = runs[r].size;
        vit_context *ctx = vit_load(runs[r].dir, &params, &err);
        if (!ctx) fail_msg("%s at %d: %s", runs[r].dir, runs[r].size, err.msg);
        char golden[256];
        snprintf(golden, sizeof golden, "%s/golden-size%d.safetensors", runs[r].dir, runs[r].size);
        const size_t n = vit_input_floats(ctx);
        const int K = vit_num_labels(ctx);
        float *px = test_alloc_floats(n), *out = test_alloc_floats((size_t)K);
        double worst = 0;
        for (int i = 0; i < 3; i++) {
            char name[32];
            size_t numel;
            snprintf(name, sizeof name, "pixels.%d", i);
            float *want_px = test_read_tensor(golden, name, &numel);
            assert_non_null(want_px);
            assert_int_equal(numel, n);
            if (vit_preprocess_file(ctx, images[i], px, &err) != 0) fail_msg("%s", err.msg);
            size_t off = 0;
            for (size_t k = 0; k < n; k++) off += px[k] != want_px[k];
            if (off) fail_msg("%s at %d: %zu pixels differ", runs[r].dir, runs[r].size, off);
            snprintf(name, sizeof name, "output.%d", i);
            float *want = test_read_tensor(golden, name, &numel);
            assert_int_equal(numel, (size_t)K);
            if (vit_forward(ctx, want_px, 1, out, &err) != 0) fail_msg("%s", err.msg);
            for (int k = 0; k < K; k++) {
                const double d = fabs((double)out[k] - want[k]);
                worst = d > worst ? d : worst;
                if (!(d <= TOL))
                    fail_msg("%s at %d, %s: output %d is %g, the reference %g", runs[r].dir,
                             runs[r].size, images[i], k, out[k], want[k]);
            }
            free(want_px), free(want);
        }
        print_message("%s at %d: largest difference %.2g\n", runs[r].dir, runs[r].size, worst);
        free(px), free(out);
        vit_free(ctx);
    }
}

/* timm-vit-micro-hf holds timm-vit-micro's weights under transformers' names (qkv split into
 * query, key and value): the same logits and CLS features, bit for bit. */
static void test_same_weights_as_hf_folder(void **state) {
    (void)state;
    vit_context *timm = load("tests/data/timm-vit-micro");
    vit_context *hf = load("tests/data/timm-vit-micro-hf");
    const int K = vit_num_labels(timm), D = vit_hidden_size(timm);
    assert_int_equal(K, vit_num_labels(hf));
    assert_string_equal(vit_label(timm, 3), vit_label(hf, 3));
    float *a = test_alloc_floats((size_t)K + D), *b = test_alloc_floats((size_t)K + D);
    for (int i = 0; i < IMAGES; i++) {
        char name[32];
        snprintf(name, sizeof name, "pixels.%d", i);
        float *px = test_golden_tensor("tests/data/timm-vit-micro", name, NULL);
        vit_error err = {0};
        if (vit_forward(timm, px, 1, a, &err) || vit_forward(hf, px, 1, b, &err) ||
            vit_embed(timm, px, 1, VIT_POOL_CLS, a + K, &err) ||
            vit_embed(hf, px, 1, VIT_POOL_CLS, b + K, &err))
            fail_msg("%s", err.msg);
        if (memcmp(a, b, sizeof(float) * (size_t)(K + D)) != 0)
            fail_msg("%s: the timm folder and the HF folder differ", images[i]);
        free(px);
    }
    free(a);
    free(b);
    vit_free(timm);
    vit_free(hf);
}

/* A folder in the temporary directory with config.json `json` and timm-vit-micro's weights. */
static const char *folder_with_config(const char *name, const char *json) {
    static char dir[4096];
    char link[4096 + 32], target[4096];
    snprintf(dir, sizeof dir, "%s/%s", test_tmpdir(), name);
    mkdir(dir, 0755);
    snprintf(link, sizeof link, "%s/model.safetensors", dir);
    assert_non_null(realpath("tests/data/timm-vit-micro/model.safetensors", target));
    unlink(link);
    assert_int_equal(symlink(target, link), 0);
    char file[4096 + 32];
    snprintf(file, sizeof file, "%s/config.json", name);
    write_temp_file(file, json, strlen(json));
    return dir;
}

/* A timm folder with a preprocessor_config.json beside its config.json (as transformers'
 * TimmWrapper processors write one): pretrained_cfg's transform still, as timm runs it. */
static void test_pretrained_cfg_over_processor_file(void **state) {
    (void)state;
    size_t size;
    char *json = (char *)read_whole_file("tests/data/timm-vit-micro/config.json", &size);
    assert_non_null(json);
    const char *dir = folder_with_config("with-processor", json);
    free(json);
    static const char processor[] = "{\"image_processor_type\": \"ViTImageProcessor\", "
                                    "\"size\": {\"height\": 32, \"width\": 32}}";
    write_temp_file("with-processor/preprocessor_config.json", processor, strlen(processor));
    vit_context *ctx = load(dir);
    const size_t n = vit_input_floats(ctx);
    float *px = test_alloc_floats(n);
    vit_error err = {0};
    assert_int_equal(vit_preprocess_file(ctx, images[0], px, &err), 0);
    float *want = test_golden_tensor("tests/data/timm-vit-micro", "pixels.0", NULL);
    assert_memory_equal(px, want, n * sizeof(float));
    free(want);
    free(px);
    vit_free(ctx);
}

/* What vit cannot run, or what does not match the weights: refused in one line naming the file
 * and the field, the architecture or the tensor. */
static void test_refusals(void **state) {
    (void)state;
    /* timm-vit-micro's model_args; a case's extra keys come after them (a key given twice keeps
     * its last value, as Python's json.loads) */
    static const char *const args = "\"img_size\": 32, \"patch_size\": 8, \"embed_dim\": 32, "
                                    "\"depth\": 2, \"num_heads\": 2";
    static const char *const pcfg = "\"pretrained_cfg\": {\"input_size\": [3, 32, 32], "
                                    "\"num_classes\": 5}";
    static const struct {
        const char *name, *arch, *extra, *why;
    } cases[] = {
        {"unknown", "vit_nonexistent_patch16_224", "", "is not a timm VisionTransformer vit knows"},
        {"distilled", "deit_base_distilled_patch16_224", "", "distillation token"},
        {"gap_cls", "vit_base_patch16_gap_224", ", \"class_token\": true",
         "global_pool 'avg' with fc_norm false and a class token"},
        {"swiglu", "aimv2_large_patch14_224", "", "vit does not run its MLP SwiGLU"},
        {"qk_norm", "vit_base_patch16_224", ", \"qk_norm\": true",
         "'model_args.qk_norm' asks for what vit does not run"},
        {"unknown_key", "vit_base_patch16_224", ", \"rope\": 1", "'model_args.rope' is not one"},
        {"map_head", "vit_base_patch16_siglip_224", ", \"class_token\": true",
         "global_pool 'map' with prefix tokens, fc_norm, a SwiGLU MLP"},
        {"deeper", "vit_base_patch16_224", ", \"depth\": 3",
         "missing tensor 'blocks.2.norm1.weight'"},
        {"wider", "vit_base_patch16_224", ", \"embed_dim\": 48, \"num_heads\": 3",
         "tensor 'cls_token' has shape [1, 1, 32], expected [1, 1, 48]"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char json[1024];
        snprintf(json, sizeof json, "{\"architecture\": \"%s\", \"model_args\": {%s%s}, %s}",
                 cases[i].arch, args, cases[i].extra, pcfg);
        const char *dir = folder_with_config(cases[i].name, json);
        vit_error err = {0};
        vit_context *ctx = vit_load(dir, NULL, &err);
        if (ctx) fail_msg("%s: loaded", cases[i].name);
        if (!strstr(err.msg, cases[i].why) || !strstr(err.msg, dir) || strchr(err.msg, '\n'))
            fail_msg("%s: '%s' does not say '%s'", cases[i].name, err.msg, cases[i].why);
    }
}

/* vit info names the timm architecture and its parts; vit classify and vit embed run on the
 * folders (embed against the library's vit_embed). */
static void test_cli(void **state) {
    (void)state;
    REQUIRE_BIN();
    const char *info[] = {"info", "-m", "tests/data/timm-gap-reg-micro", NULL};
    test_run_result r = test_run_vit(NULL, NULL, info);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "architecture:   vit_base_patch16_reg4_gap_256"));
    assert_non_null(strstr(r.out, "tokens: 4 registers (no positions), patches"));
    assert_non_null(strstr(r.out, "mean of the patches, then fc_norm; classifier [3, 24]"));
    test_run_free(&r);
    const char *info_reg[] = {"info", "-m", "tests/data/timm-so150m-reg-micro", NULL};
    r = test_run_vit(NULL, NULL, info_reg);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "tokens: 4 registers (with positions), patches"));
    assert_non_null(strstr(r.out, "--pool mean (vit embed's default)"));
    test_run_free(&r);
    const char *classify[] = {"classify", "-m", "tests/data/timm-vit-micro", "-k", "1",
                              images[0],  NULL};
    r = test_run_vit(NULL, NULL, classify);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "class_"));
    test_run_free(&r);
    char out[4096];
    snprintf(out, sizeof out, "%s/timm-embed.safetensors", test_tmpdir());
    const char *embed[] = {"embed", "-m", "tests/data/timm-siglip-micro", images[1], "-o",
                           out,     NULL};
    r = test_run_vit(NULL, NULL, embed);
    assert_int_equal(r.status, 0);
    test_run_free(&r);
    vit_context *ctx = load("tests/data/timm-siglip-micro");
    const int D = vit_hidden_size(ctx);
    float *px = test_alloc_floats(vit_input_floats(ctx)), *want = test_alloc_floats((size_t)D);
    vit_error err = {0};
    assert_int_equal(vit_preprocess_file(ctx, images[1], px, &err), 0);
    assert_int_equal(vit_embed(ctx, px, 1, vit_default_pool(ctx), want, &err), 0);
    size_t numel;
    float *got = test_read_tensor(out, "embeddings", &numel);
    assert_non_null(got);
    assert_int_equal(numel, (size_t)D);
    for (int i = 0; i < D; i++) assert_true(fabs(got[i] - want[i]) <= 1e-6);
    free(got);
    free(px);
    free(want);
    vit_free(ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_preprocessing_is_timms),
        cmocka_unit_test(test_outputs_match_reference),
        cmocka_unit_test(test_other_sizes),
        cmocka_unit_test(test_same_weights_as_hf_folder),
        cmocka_unit_test(test_pretrained_cfg_over_processor_file),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_cli),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
