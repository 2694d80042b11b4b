/* vit_explain: the maps against a float64 PyTorch reference (tools/explain_reference.py, the same
 * weights and the goldens' pixels), the picture's size, and a model trained here on images whose
 * class evidence sits in one quadrant: its maps are hottest there. */
#include "tests/testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "image/draw.h"
#include "image/image.h"
#include "vit/io/safetensors.h"
#include "vit/train/run.h"
#include "vit/vit.h"

/* The reference computes in float64 from the float32 weights and pixels; vit's training forward
 * runs in float32, so the attention weights differ by float32 rounding carried through two or
 * three layers: measured at most 3e-8 (rollout) and 4.8e-7 (last) on these models. The issue's
 * bound, 1e-5, is 20x that. The gradient-weighted map is a product of gradients and weights:
 * compared relative to max(1, its largest value), within 1e-5 (measured 1.9e-7). */
#define MAP_TOL 1e-5

/* A tensor read with the tests' own safetensors parser (independent of the library's). */
static float *tensor(const char *path, const char *key, int64_t *numel) {
    size_t n;
    float *out = test_read_tensor(path, key, &n);
    if (!out) fail_msg("%s: no tensor '%s'", path, key);
    if (numel) *numel = (int64_t)n;
    return out;
}

static double max_diff(const float *a, const float *b, int64_t n, double *scale) {
    double worst = 0.0, big = 0.0;
    for (int64_t i = 0; i < n; i++) {
        worst = fmax(worst, fabs((double)a[i] - b[i]));
        big = fmax(big, fabs((double)b[i]));
    }
    if (scale) *scale = big;
    return worst;
}

/* Every image of model_dir's golden file, every method, against the reference file. */
static void check_model(const char *model_dir, const char *reference) {
    char path[4096];
    snprintf(path, sizeof path, "%s/golden.safetensors", model_dir);
    st_file golden, ref;
    vit_error err = {0};
    if (st_open(path, &golden, &err) != 0 || st_open(reference, &ref, &err) != 0)
        fail_msg("%s", err.msg);
    vit_context *ctx = vit_load(model_dir, NULL, &err);
    if (!ctx) fail_msg("%s", err.msg);
    const char *methods[] = {"rollout", "last", "grad"};
    double worst[3] = {0, 0, 0};
    int images = 0;
    for (int i = 0; i < golden.count; i++) {
        const char *key = golden.tensors[i].name, *slash = strrchr(key, '/');
        if (!slash || strcmp(slash, "/pixels") != 0) continue;
        char image[256], name[320], label_text[32];
        snprintf(image, sizeof image, "%.*s", (int)(slash - key), key);
        float *pixels = tensor(path, key, NULL);
        snprintf(name, sizeof name, "%s/label", image);
        assert_int_equal(st_metadata(&ref, name, label_text, sizeof label_text, &err), 0);
        for (int m = 0; m < 3; m++) {
            vit_explanation x;
            if (vit_explain(ctx, pixels, (vit_explain_method)m, -1, &x, &err) != 0)
                fail_msg("%s", err.msg);
            assert_int_equal(x.label, atoi(label_text));
            snprintf(name, sizeof name, "%s/%s", image, methods[m]);
            int64_t n;
            float *want = tensor(reference, name, &n);
            assert_int_equal(n, (int64_t)x.maps * x.grid_h * x.grid_w);
            double scale;
            const double d = max_diff(x.map, want, n, &scale);
            worst[m] = fmax(worst[m], m == 2 ? d / fmax(scale, 1.0) : d);
            free(want);
            vit_explanation_free(&x);
        }
        free(pixels);
        images++;
    }
    print_message("%s: %d images, max |d| rollout %.2g, last %.2g, grad (relative) %.2g\n",
                  model_dir, images, worst[0], worst[1], worst[2]);
    assert_true(images > 0);
    for (int m = 0; m < 3; m++) assert_true(worst[m] <= MAP_TOL);
    vit_free(ctx);
    st_close(&golden);
    st_close(&ref);
}

static void test_micro_models_match_reference(void **state) {
    (void)state;
    check_model(MICRO_A, TEST_DATA "/explain/micro-a.safetensors");
    check_model(MICRO_B, TEST_DATA "/explain/micro-b.safetensors");
}

/* At another resolution (--size: position embeddings interpolated) the grid follows the size, and
 * the maps of a size equal to the model's are those of the default. */
static void test_other_sizes(void **state) {
    (void)state;
    vit_params p = vit_default_params();
    p.image_size = 48;
    vit_error err = {0};
    vit_context *ctx = vit_load("tests/data/deit-micro", &p, &err);
    if (!ctx) fail_msg("%s", err.msg);
    float *pixels = malloc(sizeof(float) * vit_input_floats(ctx));
    assert_int_equal(vit_preprocess_file(ctx, "examples/photos/cat.jpg", pixels, &err), 0);
    for (int m = 0; m < 3; m++) {
        vit_explanation x;
        if (vit_explain(ctx, pixels, (vit_explain_method)m, -1, &x, &err) != 0)
            fail_msg("%s", err.msg);
        assert_int_equal(x.grid_h, 6);
        assert_int_equal(x.grid_w, 6);
        vit_explanation_free(&x);
    }
    free(pixels);
    vit_free(ctx);
}

/* Two special tokens (CLS and distillation) left out of the map. */
static void test_deit_matches_reference(void **state) {
    (void)state;
    check_model("tests/data/deit-micro", "tests/data/explain/deit-micro.safetensors");
}

/* The picture: the original's width, its height plus the legend strip; the explanation returned
 * with it equals vit_explain's on the same pixels. */
static void test_picture_has_the_original_size(void **state) {
    (void)state;
    vit_error err = {0};
    vit_context *ctx = vit_load("models/fashion-vit", NULL, &err);
    if (!ctx) fail_msg("%s", err.msg);
    char png[4096];
    snprintf(png, sizeof png, "%s/explained.png", test_tmpdir());
    const char *photo = "examples/photos/cat.jpg";
    vit_explanation x;
    if (vit_explain_file(ctx, photo, VIT_EXPLAIN_GRAD, 3, png, &x, &err) != 0)
        fail_msg("%s", err.msg);
    assert_int_equal(x.label, 3);
    image_u8 orig, pic;
    assert_int_equal(image_decode_file(photo, 3, 0, IMAGE_EXIF_ORIENTATION, &orig, &err), 0);
    assert_int_equal(image_decode_file(png, 3, 0, 0, &pic, &err), 0);
    assert_int_equal(pic.width, orig.width);
    assert_true(pic.height > orig.height && pic.height <= orig.height + 40);
    float *pixels = malloc(sizeof(float) * vit_input_floats(ctx));
    assert_int_equal(vit_preprocess_file(ctx, photo, pixels, &err), 0);
    vit_explanation y;
    assert_int_equal(vit_explain(ctx, pixels, VIT_EXPLAIN_GRAD, 3, &y, &err), 0);
    assert_memory_equal(x.map, y.map, sizeof(float) * x.grid_h * x.grid_w);
    vit_explanation_free(&y);
    assert_int_equal(vit_explain(ctx, pixels, VIT_EXPLAIN_GRAD, 10, &y, &err), -1);
    assert_non_null(strstr(err.msg, "label 10 outside"));
    /* a DeiT with teacher has two heads: refused in one line */
    vit_context *teacher = vit_load("tests/data/deit-micro-teacher", NULL, &err);
    assert_non_null(teacher);
    float *tp = malloc(sizeof(float) * vit_input_floats(teacher));
    assert_int_equal(vit_preprocess_file(teacher, photo, tp, &err), 0);
    assert_int_equal(vit_explain(teacher, tp, VIT_EXPLAIN_ROLLOUT, -1, &y, &err), -1);
    assert_non_null(strstr(err.msg, "no explanations for a model with two heads"));
    free(tp);
    vit_free(teacher);
    vit_explanation_free(&x);
    vit_explanation_free(&y);
    free(pixels);
    image_free(&orig);
    image_free(&pic);
    vit_free(ctx);
}

/* ---- a model whose evidence sits in one quadrant ---- */

#define SIDE 32 /* images; patch 8: a 4 x 4 grid, 2 x 2 patches per quadrant */

/* Grey noise; with a quadrant (0..3, -1: none), a bright 8x8 square somewhere inside it. */
static void synthetic_image(image_u8 *img, int quadrant) {
    img->width = img->height = SIDE;
    img->channels = 1;
    img->pixels = malloc(SIDE * SIDE);
    for (int i = 0; i < SIDE * SIDE; i++) img->pixels[i] = (uint8_t)test_uniform(0.0f, 120.0f);
    if (quadrant < 0) return;
    const int x0 = (quadrant % 2) * 16 + (int)test_uniform(0.0f, 8.99f);
    const int y0 = (quadrant / 2) * 16 + (int)test_uniform(0.0f, 8.99f);
    for (int y = y0; y < y0 + 8; y++)
        for (int x = x0; x < x0 + 8; x++) img->pixels[y * SIDE + x] = 255;
}

static void write_images(const char *dir, const char *cls, int count, int with_square) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, cls);
    mkdir(path, 0755);
    for (int i = 0; i < count; i++) {
        image_u8 img;
        synthetic_image(&img, with_square ? i % 4 : -1);
        snprintf(path, sizeof path, "%s/%s/%04d.png", dir, cls, i);
        vit_error err;
        if (image_write_png(path, &img, &err) != 0) fail_msg("%s", err.msg);
        image_free(&img);
    }
}

/* The quadrant (0..3) of the map's largest value. */
static int hottest_quadrant(const float *map, int grid) {
    int best = 0;
    for (int i = 1; i < grid * grid; i++) best = map[i] > map[best] ? i : best;
    return (best / grid >= grid / 2) * 2 + (best % grid >= grid / 2);
}

static void test_hottest_where_the_evidence_is(void **state) {
    (void)state;
    test_seed(7);
    char data[2048], model_dir[2048];
    snprintf(data, sizeof data, "%s/quadrants", test_tmpdir());
    snprintf(model_dir, sizeof model_dir, "%s/quadrant-vit", test_tmpdir());
    mkdir(data, 0755);
    write_images(data, "plain", 160, 0);
    write_images(data, "square", 160, 1);
    train_options o = train_default_options();
    o.train_path = data;
    o.val_split = 0.0f;
    o.out_dir = model_dir;
    o.image_size = SIDE, o.patch_size = 8, o.channels = 1;
    o.hidden_size = 32, o.num_layers = 2, o.num_heads = 2, o.mlp_size = 64;
    o.epochs = 6, o.batch = 32, o.warmup_epochs = 1;
    o.augment = 0;
    o.threads = 2;
    vit_error err = {0};
    if (train_run(&o, 0, NULL, &err) != 0) fail_msg("%s", err.msg);
    vit_context *ctx = vit_load(model_dir, NULL, &err);
    if (!ctx) fail_msg("%s", err.msg);
    const int square = strcmp(vit_label(ctx, 0), "square") == 0 ? 0 : 1;
    float *pixels = malloc(sizeof(float) * vit_input_floats(ctx));
    int right[2] = {0, 0}, correct = 0, trials = 0;
    for (int i = 0; i < 16; i++) {
        const int q = i % 4;
        image_u8 img;
        synthetic_image(&img, q);
        char path[4096];
        snprintf(path, sizeof path, "%s/probe.png", test_tmpdir());
        assert_int_equal(image_write_png(path, &img, &err), 0);
        image_free(&img);
        assert_int_equal(vit_preprocess_file(ctx, path, pixels, &err), 0);
        const vit_explain_method methods[2] = {VIT_EXPLAIN_GRAD, VIT_EXPLAIN_ROLLOUT};
        for (int m = 0; m < 2; m++) {
            vit_explanation x;
            assert_int_equal(vit_explain(ctx, pixels, methods[m], square, &x, &err), 0);
            right[m] += hottest_quadrant(x.map, x.grid_w) == q;

            if (m == 0) correct += x.prob > 0.5f;
            vit_explanation_free(&x);
        }
        trials++;
    }
    /* The rollout finds the square. The gradient-weighted map of this small model does not: its
     * values are 1e-9..1e-3, the square's logit barely moving with the attention weights (the
     * map equals PyTorch's, above); printed, not asserted. */
    print_message("quadrant model: %d of %d probes classified 'square'; hottest quadrant right: "
                  "rollout %d, grad %d of %d\n",
                  correct, trials, right[1], right[0], trials);
    assert_true(correct >= 14);
    assert_true(right[1] >= 14);
    free(pixels);
    vit_free(ctx);
}

/* At a run size that is not a multiple of the patch (36 with patch 8: 4x4 patches cover 32x32 of
 * the input), the map lies over what the patches cover: vit_preprocess_memory_region's region is
 * that part of the image, and the picture darkens the dropped strip as it darkens what the crop
 * leaves out. Before, the 4x4 map was stretched over the whole 36x36 input. */
static void test_map_covers_the_patches(void **state) {
    (void)state;
    vit_error err = {0};
    vit_params params = vit_default_params();
    params.image_size = 36;
    vit_context *ctx = vit_load("tests/data/vit-base-micro", &params, &err);
    if (!ctx) fail_msg("%s", err.msg);
    const char *photo = "examples/photos/cat.jpg";
    size_t size;
    void *bytes = read_whole_file(photo, &size);
    assert_non_null(bytes);
    float *pixels = malloc(sizeof(float) * vit_input_floats(ctx)), region[4];
    int image_size[2];
    assert_int_equal(
        vit_preprocess_memory_region(ctx, bytes, size, pixels, image_size, region, &err), 0);
    /* a resize to 36x36, no crop: the patches see the first 32/36 of each side */
    const double w = image_size[0], h = image_size[1];
    assert_true(fabs(region[0]) < 1e-3 && fabs(region[1]) < 1e-3);
    if (fabs(region[2] - w * 32 / 36) > 1e-2 || fabs(region[3] - h * 32 / 36) > 1e-2)
        fail_msg("region %g x %g, expected %g x %g", region[2], region[3], w * 32 / 36,
                 h * 32 / 36);
    char png[4096];
    snprintf(png, sizeof png, "%s/covered.png", test_tmpdir());
    vit_explanation x;
    if (vit_explain_file(ctx, photo, VIT_EXPLAIN_ROLLOUT, -1, png, &x, &err) != 0)
        fail_msg("%s", err.msg);
    assert_int_equal(x.grid_w, 4);
    image_u8 orig, pic;
    assert_int_equal(image_decode_file(photo, 3, 0, IMAGE_EXIF_ORIENTATION, &orig, &err), 0);
    assert_int_equal(image_decode_file(png, 3, 0, 0, &pic, &err), 0);
    /* the last column and the last row lie in the dropped strip: a third of the original */
    const int xs[] = {orig.width - 1, orig.width / 2}, ys[] = {orig.height / 2, orig.height - 1};
    for (int k = 0; k < 2; k++) {
        const size_t at = ((size_t)ys[k] * orig.width + xs[k]) * 3;
        for (int c = 0; c < 3; c++) assert_int_equal(pic.pixels[at + c], orig.pixels[at + c] / 3);
    }
    vit_explanation_free(&x);
    image_free(&orig), image_free(&pic);
    free(pixels), free(bytes);
    vit_free(ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_micro_models_match_reference),
        cmocka_unit_test(test_deit_matches_reference),
        cmocka_unit_test(test_picture_has_the_original_size),
        cmocka_unit_test(test_other_sizes),
        cmocka_unit_test(test_map_covers_the_patches),
        cmocka_unit_test(test_hottest_where_the_evidence_is),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
