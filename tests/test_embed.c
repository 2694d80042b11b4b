/* Features: vit_text_embed against a float64 PyTorch reference (tools/embed_reference.py), and
 * `vit embed` (safetensors, .npy, text lines, the list of inputs) against the library's vit_embed.
 * (vit_embed itself is checked against the goldens' hidden states in test_api and test_deit.) */
#include "tests/testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vit/vit.h"

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
    assert_int_equal(vit_text_embed(ctx, texts, lengths, n, (vit_pool)7, got, &err), -1);
    free(got);
    vit_text_free(ctx);
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

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_text_features_match_reference),
        cmocka_unit_test(test_cli_matches_library),
        cmocka_unit_test(test_cli_unreadable_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
