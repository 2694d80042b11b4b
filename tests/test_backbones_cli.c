/* bin/vit on the DINOv2 and BEiT micro models against the goldens of tools/dinov2_reference.py and
 * tools/beit_reference.py (the images are golden-images/, read raw: --no-exif):
 * - vit embed --pool patches: [n, grid, grid, D] in safetensors and .npy, each image's
 *   last_hidden_state rows after CLS and the registers (BEiT with mean pooling: as the last layer
 *   left them, it has no final LayerNorm), at the processor's size and at --size N; --pool cls
 *   and mean: pooler_output, and for DINOv2 the mean of the patch rows (registers left out);
 * - vit explain --method last --raw: the last layer's CLS attention over the patches, one map per
 *   head, with and without registers;
 * - a base model: classify refuses it in one line, explain --method grad too, rollout runs;
 * - vit info names the parts; vit bench runs.
 * Tolerance 1e-4 (test_backbones.c says why). */
#include "tests/testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vit/io/safetensors.h"

#define TOL 1e-4

static const char *const images[3] = {"rgb_64x48.png", "tall_40x400.jpg", "palette_120x90.png"};

static void image_path(int i, char *buf, size_t size) {
    snprintf(buf, size, GOLDEN_IMAGES "/%s", images[i]);
}

static float *golden_at(const char *model, const char *file, const char *image, const char *what,
                        size_t *n) {
    char path[256], name[128];
    snprintf(path, sizeof path, TEST_DATA "/%s/%s", model, file);
    snprintf(name, sizeof name, "%s/%s", image, what);
    float *t = test_read_tensor(path, name, n);
    if (!t) fail_msg("%s: no %s", path, name);
    return t;
}

static void expect_close(const char *what, const float *got, const float *want, size_t n) {
    double worst = 0;
    for (size_t i = 0; i < n; i++) worst = fmax(worst, fabs((double)got[i] - want[i]));
    if (!(worst <= TOL)) fail_msg("%s: max |difference| %.3g", what, worst);
}

static test_run_result run(const char *const *args) {
    test_run_result r = test_run_vit(NULL, NULL, args);
    if (r.status != 0) fail_msg("vit %s: exit %d: %s", args[0], r.status, r.err);
    return r;
}

/* The embeddings tensor's shape in a safetensors file. */
static void expect_shape(const char *path, int ndim, const int64_t *shape) {
    st_file f;
    vit_error err = {0};
    if (st_open(path, &f, &err) != 0) fail_msg("%s", err.msg);
    const st_tensor *t = st_find(&f, "embeddings");
    assert_non_null(t);
    assert_int_equal(t->ndim, ndim);
    for (int d = 0; d < ndim; d++) assert_int_equal(t->shape[d], shape[d]);
    st_close(&f);
}

/* vit embed --pool patches on the three images (at size, or the processor's when NULL), against
 * the goldens' last_hidden_state after the first `skip` rows (CLS, registers). */
static void check_patches(const char *model, const char *size, const char *file, int grid, int D,
                          int skip) {
    char dir[128], out[4200], a[3][256];
    snprintf(dir, sizeof dir, TEST_DATA "/%s", model);
    for (int ext = 0; ext < 2; ext++) {
        snprintf(out, sizeof out, "%s/%s-patches.%s", test_tmpdir(), model,
                 ext ? "npy" : "safetensors");
        for (int i = 0; i < 3; i++) image_path(i, a[i], sizeof a[i]);
        const char *args[] = {"embed", "-m", dir,  "--pool", "patches", "--no-exif",
                              "-o",    out,  a[0], a[1],     a[2],      size ? "--size" : NULL,
                              size,    NULL};
        test_run_result r = run(args);
        test_run_free(&r);
        const size_t per = (size_t)grid * grid * D;
        float *got;
        if (ext == 0) {
            const int64_t shape[] = {3, grid, grid, D};
            expect_shape(out, 4, shape);
            got = test_read_tensor(out, "embeddings", NULL);
        } else { /* the header says the shape; the data follows it */
            size_t bytes;
            uint8_t *npy = read_whole_file(out, &bytes);
            char want[128];
            snprintf(want, sizeof want, "'shape': (3, %d, %d, %d)", grid, grid, D);
            assert_non_null(strstr((char *)npy + 10, want));
            const size_t header = 10 + (npy[8] | (size_t)npy[9] << 8);
            assert_int_equal(bytes, header + 3 * per * sizeof(float));
            got = test_alloc_floats(3 * per);
            memcpy(got, npy + header, 3 * per * sizeof(float));
            free(npy);
        }
        for (int i = 0; i < 3; i++) {
            float *hidden = golden_at(model, file, images[i], "last_hidden_state", NULL);
            char what[4400];
            snprintf(what, sizeof what, "%s patches of %s (%s)", model, images[i], out);
            expect_close(what, got + i * per, hidden + (size_t)skip * D, per);
            free(hidden);
        }
        free(got);
    }
}

static void test_embed_patches(void **state) {
    (void)state;
    check_patches("dinov2-reg-micro", NULL, "golden.safetensors", 3, 48, 5);
    check_patches("dinov2-reg-micro", "70", "golden-size70.safetensors", 5, 48, 5);
    check_patches("dinov2-micro-swiglu", NULL, "golden.safetensors", 2, 32, 1);
    check_patches("beit-micro", NULL, "golden.safetensors", 4, 32, 1);
    check_patches("beit-micro-shared", "24", "golden-size24.safetensors", 3, 48, 1);
}

/* --pool cls (pooler_output) and mean (DINOv2: of the patch rows, registers left out; BEiT with
 * mean pooling: its pooler_output). */
static void check_pool(const char *model, const char *pool, int D, int skip, int T) {
    char dir[128], out[4200], a[3][256];
    snprintf(dir, sizeof dir, TEST_DATA "/%s", model);
    snprintf(out, sizeof out, "%s/%s-%s.safetensors", test_tmpdir(), model, pool);
    for (int i = 0; i < 3; i++) image_path(i, a[i], sizeof a[i]);
    const char *args[] = {"embed", "-m", dir,  "--pool", pool, "--no-exif",
                          "-o",    out,  a[0], a[1],     a[2], NULL};
    test_run_result r = run(args);
    test_run_free(&r);
    float *got = test_read_tensor(out, "embeddings", NULL);
    for (int i = 0; i < 3; i++) {
        float want[64];
        if (skip) { /* the mean of last_hidden_state's patch rows */
            float *hidden =
                golden_at(model, "golden.safetensors", images[i], "last_hidden_state", NULL);
            for (int d = 0; d < D; d++) {
                double sum = 0;
                for (int t = skip; t < T; t++) sum += hidden[t * D + d];
                want[d] = (float)(sum / (T - skip));
            }
            free(hidden);
        } else {
            float *pooled =
                golden_at(model, "golden.safetensors", images[i], "pooler_output", NULL);
            memcpy(want, pooled, sizeof(float) * D);
            free(pooled);
        }
        char what[200];
        snprintf(what, sizeof what, "%s --pool %s, image %d", model, pool, i);
        expect_close(what, got + i * D, want, (size_t)D);
    }
    free(got);
}

static void test_embed_pools(void **state) {
    (void)state;
    check_pool("dinov2-reg-micro", "cls", 48, 0, 0);
    check_pool("dinov2-reg-micro", "mean", 48, 5, 14);
    check_pool("dinov2-micro", "mean", 32, 1, 10);
    check_pool("beit-micro", "mean", 32, 0, 0); /* use_mean_pooling: pooler_output */
    check_pool("beit-micro-shared", "cls", 48, 0, 0);
}

/* --method last --raw: the map [H, grid, grid] is cls_attention's patch columns. */
static void check_last(const char *model, int H, int grid, int skip) {
    char dir[128], out[4200], raw[4300], a[256];
    snprintf(dir, sizeof dir, TEST_DATA "/%s", model);
    snprintf(out, sizeof out, "%s/explain-%s", test_tmpdir(), model);
    image_path(0, a, sizeof a);
    const char *args[] = {"explain",   "-m", dir, "--method", "last", "--raw",
                          "--no-exif", "-o", out, a,          NULL};
    test_run_result r = run(args);
    test_run_free(&r);
    snprintf(raw, sizeof raw, "%s/rgb_64x48.safetensors", out);
    size_t n;
    float *map = test_read_tensor(raw, "map", &n);
    assert_non_null(map);
    const int N = grid * grid, T = skip + N;
    assert_int_equal(n, (size_t)H * N);
    float *attn = golden_at(model, "golden.safetensors", images[0], "cls_attention", &n);
    assert_int_equal(n, (size_t)H * T);
    for (int h = 0; h < H; h++) {
        char what[200];
        snprintf(what, sizeof what, "%s last-layer CLS attention, head %d", model, h);
        expect_close(what, map + h * N, attn + h * T + skip, (size_t)N);
    }
    free(map), free(attn);
}

static void test_explain_last(void **state) {
    (void)state;
    check_last("dinov2-micro", 2, 3, 1);
    check_last("dinov2-reg-micro", 3, 3, 5); /* 4 registers: not in the map */
    check_last("dinov2-micro-swiglu", 2, 2, 1);
    check_last("beit-micro", 2, 4, 1);
}

static void expect_refusal(const char *const *args, const char *needle) {
    test_run_result r = test_run_vit(NULL, NULL, args);
    assert_int_not_equal(r.status, 0);
    print_message("  %s", r.err);
    if (!strstr(r.err, needle)) fail_msg("expected '%s' in '%s'", needle, r.err);
    const char *nl = strchr(r.err, '\n');
    assert_true(nl && nl[1] == 0); /* one line */
    test_run_free(&r);
}

static void test_base_model_commands(void **state) {
    (void)state;
    const char *dir = TEST_DATA "/dinov2-micro-swiglu", *img = GOLDEN_IMAGES "/rgb_64x48.png";
    char out[4200];
    snprintf(out, sizeof out, "%s/explain-base", test_tmpdir());
    const char *classify[] = {"classify", "-m", dir, img, NULL};
    expect_refusal(classify, "a base model without a classifier");
    const char *grad[] = {"explain", "-m", dir, "--method", "grad", "-o", out, img, NULL};
    expect_refusal(grad, "Dinov2Model has no classes");
    const char *rollout[] = {"explain", "-m", dir, "-o", out, img, NULL};
    test_run_result r = run(rollout);
    assert_non_null(strstr(r.out, "\t-1\t")); /* no class */
    test_run_free(&r);
}

static void test_info_and_bench(void **state) {
    (void)state;
    static const struct {
        const char *model, *const needles[4];
    } cases[] = {
        {"dinov2-reg-micro",
         {"Dinov2WithRegistersForImageClassification", "4 registers", "layer scale",
          "[CLS, mean of the patches]"}},
        {"dinov2-micro-swiglu", {"Dinov2Model", "SwiGLU", "no classifier (outputs: 32", NULL}},
        {"dinov2-micro", {"runs at:        42x42, the preprocessor's size", NULL}},
        {"beit-micro",
         {"relative position bias per layer", "q and v biases", "mean of the patches", NULL}},
        {"beit-micro-shared", {"shared relative position bias", "absolute positions", NULL}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char dir[128];
        snprintf(dir, sizeof dir, TEST_DATA "/%s", cases[i].model);
        const char *info[] = {"info", "-m", dir, NULL};
        test_run_result r = run(info);
        for (int k = 0; k < 4 && cases[i].needles[k]; k++)
            if (!strstr(r.out, cases[i].needles[k]))
                fail_msg("vit info %s: no '%s' in\n%s", dir, cases[i].needles[k], r.out);
        test_run_free(&r);
        const char *bench[] = {"bench", "-m", dir, "--batch", "2", "--threads", "1", NULL};
        r = run(bench);
        test_run_free(&r);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_embed_patches),  cmocka_unit_test(test_embed_pools),
        cmocka_unit_test(test_explain_last),   cmocka_unit_test(test_base_model_commands),
        cmocka_unit_test(test_info_and_bench),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
