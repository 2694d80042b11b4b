/* The whole ViT forward against float64 PyTorch goldens (docs/SPEC.md §9): logits of every golden
 * image, and the hidden states after every stage for the first image, to localise a mismatch. The
 * micro models and their goldens are the repository's (tests/data, tools/vit_reference.py); the
 * real ViT-Tiny is ../shared's. */
#include "tests/testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "patch/patch.h"
#include "vit/core/encoder.h"
#include "vit/io/model_dir.h"
#include "vit/model/params.h"
#include "vit/model/vit_model.h"
#include "vit/core/ops.h"
#include "vit/io/safetensors.h"
#include "vit/vit.h"

/* float32 inference against a float64 reference: the errors are rounding accumulated over the
 * layers, ~1e-6 relative per op; 1e-4 (micro) and 3e-4 (12-layer ViT-Tiny, 1000 logits of up to
 * ~20) leave a margin of ~10x over what we measure while catching any real mistake (a wrong eps,
 * GELU variant or resize shows up as 1e-3 or more). */
#define MICRO_TOL 1e-4
#define TINY_TOL  3e-4

static float *golden_f32(const st_file *g, const char *key, int64_t *numel) {
    const st_tensor *t = st_find(g, key);
    assert_non_null(t);
    float *out = malloc(sizeof(float) * (size_t)t->numel);
    assert_non_null(out);
    assert_int_equal(st_to_f32(g, t, out, NULL), 0);
    if (numel) *numel = t->numel;
    return out;
}

static int argmax(const float *x, int n) {
    int best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

static void check_backend_logits(const char *dir, double tol, vit_backend backend) {
    char golden[4200];
    snprintf(golden, sizeof golden, "%s/golden.safetensors", dir);
    vit_error err = {0};
    vit_params params = vit_default_params();
    params.backend = backend;
    vit_context *ctx = vit_load(dir, &params, &err);
    if (!ctx) fail_msg("%s", err.msg);
    st_file g;
    if (st_open(golden, &g, &err) != 0) fail_msg("%s", err.msg);
    const int L = vit_num_labels(ctx);
    float *logits = malloc(sizeof(float) * (size_t)L);
    double worst = 0.0;
    int images = 0, top1_same = 0;
    for (int i = 0; i < g.count; i++) {
        const char *key = g.tensors[i].name, *slash = strrchr(key, '/');
        if (!slash || strcmp(slash, "/logits") != 0) continue;
        char pix_key[512];
        snprintf(pix_key, sizeof pix_key, "%.*s/pixels", (int)(slash - key), key);
        int64_t n_pix, n_logits;
        float *pixels = golden_f32(&g, pix_key, &n_pix);
        float *want = golden_f32(&g, key, &n_logits);
        assert_int_equal(n_pix, (int64_t)vit_input_floats(ctx));
        assert_int_equal(n_logits, L);
        assert_int_equal(vit_forward(ctx, pixels, 1, logits, &err), 0);
        for (int j = 0; j < L; j++) {
            double d = fabs((double)logits[j] - want[j]);
            if (d > worst) worst = d;
        }
        top1_same += argmax(logits, L) == argmax(want, L);
        images++;
        free(pixels);
        free(want);
    }
    print_message("%s, %s: %d images, max |dlogit| = %.3g, top-1 agreement %d/%d\n", dir,
                  vit_compute(ctx), images, worst, top1_same, images);
    assert_true(images > 0);
    assert_true(worst <= tol);
    assert_int_equal(top1_same, images);
    free(logits);
    st_close(&g);
    vit_free(ctx);
}

/* Every backend of the build, fp32. */
static void check_model_logits(const char *dir, double tol) {
    check_backend_logits(dir, tol, VIT_BACKEND_OPENBLAS);
    vit_error err;
    vit_params p = vit_default_params();
    p.backend = VIT_BACKEND_ONEDNN;
    vit_context *probe = vit_load(MICRO_A, &p, &err);
    if (!probe) {
        print_message("%s: oneDNN not in this build (%s): OpenBLAS only\n", dir, err.msg);
        return;
    }
    vit_free(probe);
    check_backend_logits(dir, tol, VIT_BACKEND_ONEDNN);
}

static void test_micro_a_logits(void **state) {
    (void)state;
    check_model_logits(MICRO_A, MICRO_TOL);
}
static void test_micro_b_logits(void **state) {
    (void)state;
    check_model_logits(MICRO_B, MICRO_TOL);
}
static void test_vit_tiny_logits(void **state) {
    (void)state;
    REQUIRE_SHARED("models/vit-tiny-in1k/golden.safetensors");
    check_model_logits(shared_path("models/vit-tiny-in1k"), TINY_TOL);
}

static double max_rel_diff(const float *got, const float *want, size_t n) {
    double worst = 0.0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - want[i]) / (1.0 + fabs((double)want[i]));
        if (d > worst) worst = d;
    }
    return worst;
}

/* Runs the forward stage by stage on the image that has hidden-state goldens. */
static void check_hidden_states(const char *dir, const char *image, double tol) {
    char golden[4200], key[512];
    vit_error err = {0};
    model m;
    if (model_load(&m, dir, &err) != 0) fail_msg("%s", err.msg);
    snprintf(golden, sizeof golden, "%s/golden.safetensors", dir);
    st_file g;
    if (st_open(golden, &g, &err) != 0) fail_msg("%s", err.msg);
    const model_config *c = &m.cfg;
    const int D = c->hidden_size, P = c->patch_size, n = c->image_size / P, N = n * n, T = N + 1;
    const int K = c->num_channels * P * P;
    snprintf(key, sizeof key, "%s/pixels", image);
    float *pixels = golden_f32(&g, key, NULL);
    float *patches = malloc(sizeof(float) * (size_t)N * K),
          *scratch = malloc(sizeof(float) * (size_t)N * D);
    float *x = malloc(sizeof(float) * (size_t)T * D);
    patch_extract(patches, pixels, 1, c->num_channels, c->image_size, c->image_size, P);
    linear_forward(scratch, patches, m.patch_w, m.patch_b, N, K, D);
    patch_tokens_forward(x, scratch, m.cls_token, 1, m.pos_embed, 1, N, D);
    snprintf(key, sizeof key, "%s/embeddings", image);
    float *want = golden_f32(&g, key, NULL);
    double d = max_rel_diff(x, want, (size_t)T * D);
    print_message("%s %s: embeddings %.3g\n", dir, image, d);
    assert_true(d <= tol);
    free(want);
    encoder_shape one = m.enc;
    one.layers = 1;
    encoder_scratch acts;
    assert_int_equal(encoder_scratch_alloc(&acts, &one, 1, T), 0);
    const encoder_run run = {.mode = ENCODER_INFER};
    for (int l = 0; l < c->num_layers; l++) {
        assert_int_equal(encoder_forward(&one, &m.layers[l], &run, &acts, NULL, x, NULL, 1, T), 0);
        snprintf(key, sizeof key, "%s/layer.%d", image, l);
        want = golden_f32(&g, key, NULL);
        d = max_rel_diff(x, want, (size_t)T * D);
        print_message("%s %s: layer.%d %.3g\n", dir, image, l, d);
        assert_true(d <= tol);
        free(want);
    }
    layernorm_forward(x, NULL, NULL, x, m.final_ln_w, m.final_ln_b, T, D, c->layer_norm_eps);
    snprintf(key, sizeof key, "%s/layernorm", image);
    want = golden_f32(&g, key, NULL);
    d = max_rel_diff(x, want, (size_t)T * D);
    print_message("%s %s: layernorm %.3g\n", dir, image, d);
    assert_true(d <= tol);
    free(want);
    encoder_scratch_free(&acts);
    free(pixels);
    free(patches);
    free(scratch);
    free(x);
    st_close(&g);
    model_free(&m);
}

static void test_micro_a_hidden(void **state) {
    (void)state;
    check_hidden_states(MICRO_A, "rgb_64x48.png", MICRO_TOL);
}
static void test_micro_b_hidden(void **state) {
    (void)state;
    check_hidden_states(MICRO_B, "rgb_64x48.png", MICRO_TOL);
}

static void test_vit_tiny_hidden(void **state) {
    (void)state;
    REQUIRE_SHARED("models/vit-tiny-in1k/golden.safetensors");
    check_hidden_states(shared_path("models/vit-tiny-in1k"), "n01440764_tench.JPEG", TINY_TOL);
}

/* Batched and one-by-one passes give the same logits (rows of a batch never mix). */
static void test_batch_matches_single(void **state) {
    (void)state;
    vit_error err = {0};
    vit_params params = vit_default_params();
    params.max_batch = 4;
    vit_context *ctx = vit_load(MICRO_B, &params, &err);
    if (!ctx) fail_msg("%s", err.msg);
    const size_t F = vit_input_floats(ctx);
    const int L = vit_num_labels(ctx);
    float *pixels = malloc(sizeof(float) * F * 4), *batch = malloc(sizeof(float) * (size_t)L * 4);
    float single[16];
    srand(7);
    for (size_t i = 0; i < F * 4; i++) pixels[i] = (float)rand() / RAND_MAX * 4.0f - 2.0f;
    assert_int_equal(vit_forward(ctx, pixels, 4, batch, &err), 0);
    for (int b = 0; b < 4; b++) {
        assert_int_equal(vit_forward(ctx, pixels + F * b, 1, single, &err), 0);
        for (int j = 0; j < L; j++) assert_float_equal(single[j], batch[b * L + j], 1e-5);
    }
    assert_int_equal(vit_forward(ctx, pixels, 5, batch, &err), -1); /* above max_batch */
    free(pixels);
    free(batch);
    vit_free(ctx);
}

/* One forward serves inference, evaluation and training: the eval forward on training buffers
 * gives the public API's logits bit for bit (on the reference backend, OpenBLAS, for both: oneDNN's
 * products round differently, the golden tests bound them), and the training forward (activations
 * kept, no dropout) the same up to the order of the attention sums, whose weights it keeps: within
 * 3e-5, a tenth of the ViT-Tiny golden tolerance (measured 1.1e-5 on ViT-Tiny's logits of up to
 * ~20, equal on micro-b's 17 tokens). */
static void check_training_forward(const char *dir, const char *const images[2]) {
    vit_error err = {0};
    vit_params params = vit_default_params();
    params.max_batch = 2;
    params.backend = VIT_BACKEND_OPENBLAS;
    const ops_blas blas = ops_get_blas();
    ops_set_blas(OPS_BLAS_OPENBLAS); /* the training ops' products on the same library */
    vit_context *ctx = vit_load(dir, &params, &err);
    model m;
    vit_acts train;
    if (!ctx || model_load(&m, dir, &err) != 0 || vit_acts_alloc(&train, &m, 2, 0, 1, &err) != 0)
        fail_msg("%s", err.msg);
    const size_t F = vit_input_floats(ctx);
    const int L = vit_num_labels(ctx);
    float *pixels = malloc(sizeof(float) * F * 2), *want = malloc(sizeof(float) * L * 2),
          *eval = malloc(sizeof(float) * L * 2), *trained = malloc(sizeof(float) * L * 2);
    for (int b = 0; b < 2; b++)
        if (vit_preprocess_file(ctx, images[b], pixels + F * b, &err) != 0) fail_msg("%s", err.msg);
    assert_int_equal(vit_forward(ctx, pixels, 2, want, &err), 0);
    assert_int_equal(vit_model_forward(&m, &train, pixels, 2, NULL, eval, &err), 0);
    const forward_mode mode = {.train = 1};
    assert_int_equal(vit_model_forward(&m, &train, pixels, 2, &mode, trained, &err), 0);
    assert_memory_equal(eval, want, sizeof(float) * L * 2);
    double worst = 0;
    for (int i = 0; i < L * 2; i++) worst = fmax(worst, fabs(trained[i] - want[i]));
    print_message("%s: eval forward == vit_forward bit for bit; training forward within %.2g (2 "
                  "images, %d logits each)\n",
                  dir, worst, L);
    assert_true(worst <= 3e-5);
    free(pixels), free(want), free(eval), free(trained);
    vit_acts_free(&train);
    model_free(&m);
    vit_free(ctx);
    ops_set_blas(blas);
}

static void test_training_forward_equals_inference(void **state) {
    (void)state;
    const char *const images[2] = {GOLDEN_IMAGES "/rgb_64x48.png",
                                   GOLDEN_IMAGES "/tall_40x400.jpg"};
    check_training_forward(MICRO_B, images);
}

static void test_training_forward_equals_inference_vit_tiny(void **state) {
    (void)state;
    REQUIRE_SHARED("data/imagenet-sample-100");
    char tench[4200], jaguar[4200];
    snprintf(tench, sizeof tench, "%s",
             shared_path("data/imagenet-sample-100/n01440764/n01440764_tench.JPEG"));
    snprintf(jaguar, sizeof jaguar, "%s",
             shared_path("data/imagenet-sample-100/n02128925/n02128925_jaguar.JPEG"));
    const char *const images[2] = {tench, jaguar};
    check_training_forward(shared_path("models/vit-tiny-in1k"), images);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_micro_a_logits),
        cmocka_unit_test(test_micro_b_logits),
        cmocka_unit_test(test_vit_tiny_logits),
        cmocka_unit_test(test_micro_a_hidden),
        cmocka_unit_test(test_micro_b_hidden),
        cmocka_unit_test(test_vit_tiny_hidden),
        cmocka_unit_test(test_batch_matches_single),
        cmocka_unit_test(test_training_forward_equals_inference),
        cmocka_unit_test(test_training_forward_equals_inference_vit_tiny),
    };
    return cmocka_run_group_tests_name("vit golden", tests, NULL, NULL);
}
