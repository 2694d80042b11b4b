/* vit convert and vit average of sentence-transformers folders (tests/data/st-*-micro): the
 * result keeps the folder's modules (modules.json, its Pooling, Dense and Normalize folders, the
 * prompts and similarity of config_sentence_transformers.json, sentence_bert_config.json), so it
 * embeds as the original: bit for bit in F32, within F16's rounding of the weights in F16, a
 * Dense's weights converted with the model's; averaging averages a Dense's weights too. */
#include "tests/testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "vit/io/safetensors.h"
#include "vit/vit.h"

static const char *const texts[] = {"the cat sat on the mat", "a dog ran",
                                    "it was very good and then my old dog slept in the sun"};
enum { N = 3, MAX_DIM = 32 };

static const struct {
    const char *name, *dense; /* its Dense module's folder, or NULL */
    int dim;
} folders[] = {{"st-mean-micro", NULL, 32},
               {"st-cls-dense-micro", "2_Dense", 16},
               {"st-multi-micro", "2_Dense", 24},
               {"st-prompt-micro", NULL, 32}};
enum { FOLDERS = sizeof folders / sizeof *folders };

/* `vit embed -m dir --text ... -o -`: its rows ("text\tnumbers", %.9g: the floats written). */
static char *embed_cli(const char *dir) {
    const char *argv[16] = {"embed", "-m", dir, "--threads", "1"};
    int k = 5;
    for (int i = 0; i < N; i++) argv[k++] = "--text", argv[k++] = texts[i];
    argv[k++] = "-o", argv[k++] = "-", argv[k] = NULL;
    test_run_result r = test_run_vit(NULL, NULL, argv);
    if (r.status != 0) fail_msg("vit embed -m %s: exit %d: %s", dir, r.status, r.err);
    char *out = r.out;
    r.out = NULL;
    test_run_free(&r);
    return out;
}

/* The rows of embed_cli's output as floats, dim each. */
static void parse_rows(const char *text, float *out, int dim) {
    const char *line = text;
    for (int i = 0; i < N; i++) {
        const char *tab = strchr(line, '\t');
        assert_non_null(tab);
        char *end = (char *)tab + 1;
        for (int d = 0; d < dim; d++) out[i * dim + d] = strtof(end, &end);
        assert_int_equal(*end, '\n');
        line = end + 1;
    }
    assert_int_equal(*line, 0);
}

static void run_ok(const char *const *argv) {
    test_run_result r = test_run_vit(NULL, NULL, argv);
    if (r.status != 0) fail_msg("vit %s: exit %d: %s", argv[0], r.status, r.err);
    test_run_free(&r);
}

/* The library's view of dir: the folder's pipeline, prompts and similarity. */
static void expect_same_settings(const char *a, const char *b) {
    vit_error err = {0};
    vit_text_context *x = vit_text_load(a, NULL, &err), *y = vit_text_load(b, NULL, &err);
    if (!x || !y) fail_msg("%s", err.msg);
    assert_int_equal(vit_text_default_pool(y), VIT_POOL_SENTENCE);
    assert_int_equal(vit_text_embed_size(x, VIT_POOL_SENTENCE),
                     vit_text_embed_size(y, VIT_POOL_SENTENCE));
    assert_int_equal(vit_text_max_tokens(x), vit_text_max_tokens(y));
    assert_int_equal(vit_text_prompt_count(x), vit_text_prompt_count(y));
    const char *dx = vit_text_default_prompt(x), *dy = vit_text_default_prompt(y);
    assert_true((dx == NULL) == (dy == NULL));
    if (dx) assert_string_equal(dx, dy);
    assert_string_equal(vit_text_similarity(x), vit_text_similarity(y));
    vit_text_free(x);
    vit_text_free(y);
}

/* Every float tensor of dir/file is stored as dtype. */
static void expect_dtype(const char *dir, const char *file, st_dtype dtype) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    st_file f;
    vit_error err = {0};
    if (st_open(path, &f, &err) != 0) fail_msg("%s", err.msg);
    assert_true(f.count > 0);
    for (int i = 0; i < f.count; i++)
        if (f.tensors[i].dtype != dtype)
            fail_msg("%s: %s is %s", path, f.tensors[i].name, st_dtype_name(f.tensors[i].dtype));
    st_close(&f);
}

/* F32: vit embed prints the same bytes for the converted folder as for the original. */
static void test_convert_f32_same_bits(void **state) {
    (void)state;
    REQUIRE_BIN();
    for (int f = 0; f < FOLDERS; f++) {
        char src[256], out[4096];
        snprintf(src, sizeof src, TEST_DATA "/%s", folders[f].name);
        snprintf(out, sizeof out, "%s/f32-%s", test_tmpdir(), folders[f].name);
        run_ok((const char *const[]){"convert", "--dtype", "f32", src, out, NULL});
        char *want = embed_cli(src), *got = embed_cli(out);
        assert_string_equal(got, want);
        expect_same_settings(src, out);
        free(want), free(got);
    }
}

/* F16: the Transformer's and the Dense's weights stored as F16; the embeddings within F16's
 * rounding of the weights (11 significant bits), the bound test_ved puts on an F16 model's logits:
 * 1% of the largest value (these reach 0.6 normalised, 19 through st-multi-micro's Dense without
 * a Normalize). Measured: 0.07% to 0.26%; a lost module moves them far more (another pooling, no
 * Dense, no Normalize). */
#define F16_BOUND 0.01
static void test_convert_f16_within_rounding(void **state) {
    (void)state;
    REQUIRE_BIN();
    double worst = 0;
    for (int f = 0; f < FOLDERS; f++) {
        char src[256], out[4096], transformer[4200];
        snprintf(src, sizeof src, TEST_DATA "/%s", folders[f].name);
        snprintf(out, sizeof out, "%s/f16-%s", test_tmpdir(), folders[f].name);
        run_ok((const char *const[]){"convert", src, out, NULL}); /* f16: the default */
        const int nested = strcmp(folders[f].name, "st-cls-dense-micro") == 0;
        snprintf(transformer, sizeof transformer, "%s%s", out, nested ? "/0_Transformer" : "");
        expect_dtype(transformer, "model.safetensors", ST_F16);
        if (folders[f].dense) {
            char dense[300];
            snprintf(dense, sizeof dense, "%s/model.safetensors", folders[f].dense);
            expect_dtype(out, dense, ST_F16);
        }
        char *want_text = embed_cli(src), *got_text = embed_cli(out);
        float want[N * MAX_DIM], got[N * MAX_DIM];
        const int dim = folders[f].dim;
        parse_rows(want_text, want, dim);
        parse_rows(got_text, got, dim);
        double d = 0, largest = 0;
        for (int i = 0; i < N * dim; i++) {
            d = fmax(d, fabs((double)got[i] - want[i]));
            largest = fmax(largest, fabs(want[i]));
        }
        print_message("  %-20s F16: max |d| %.3g of max |value| %.3g: %.2g\n", folders[f].name, d,
                      largest, d / largest);
        assert_true(d > 0 && d <= F16_BOUND * largest);
        worst = fmax(worst, d / largest);
        expect_same_settings(src, out);
        free(want_text), free(got_text);
    }
    print_message("  worst %.2g of the largest value (bound %g)\n", worst, F16_BOUND);
}

/* dir/name -> target (absolute), a link. */
static void link_to(const char *dir, const char *name, const char *target) {
    char cwd[4096], from[8300], to[8300];
    assert_non_null(getcwd(cwd, sizeof cwd));
    snprintf(from, sizeof from, "%s/%s", cwd, target);
    snprintf(to, sizeof to, "%s/%s", dir, name);
    if (symlink(from, to) != 0) fail_msg("%s: cannot link", to);
}

/* st-cls-dense-micro with its Dense's weight and bias times `scale` (in float: correctly
 * rounded), in a folder of test_tmpdir(). */
static const char *scaled_dense(const char *name, float scale) {
    static char dir[8][4096];
    static int next;
    char *d = dir[next++ % 8], sub[4200];
    snprintf(d, 4096, "%s/%s", test_tmpdir(), name);
    assert_int_equal(mkdir(d, 0755), 0);
    const char *src = TEST_DATA "/st-cls-dense-micro";
    const char *files[] = {"modules.json", "config_sentence_transformers.json", "0_Transformer",
                           "1_Pooling"};
    char target[512];
    for (int i = 0; i < 4; i++) {
        snprintf(target, sizeof target, "%s/%s", src, files[i]);
        link_to(d, files[i], target);
    }
    snprintf(sub, sizeof sub, "%s/2_Dense", d);
    assert_int_equal(mkdir(sub, 0755), 0);
    snprintf(target, sizeof target, "%s/2_Dense/config.json", src);
    link_to(sub, "config.json", target);
    size_t nw, nb;
    float *w = test_read_tensor(TEST_DATA "/st-cls-dense-micro/2_Dense/model.safetensors",
                                "linear.weight", &nw);
    float *b = test_read_tensor(TEST_DATA "/st-cls-dense-micro/2_Dense/model.safetensors",
                                "linear.bias", &nb);
    assert_non_null(w);
    assert_non_null(b);
    assert_int_equal(nw, 16 * 32);
    assert_int_equal(nb, 16);
    for (size_t i = 0; i < nw; i++) w[i] *= scale;
    for (size_t i = 0; i < nb; i++) b[i] *= scale;
    const st_entry e[] = {{.name = "linear.weight", .ndim = 2, .shape = {16, 32}, .data = w},
                          {.name = "linear.bias", .ndim = 1, .shape = {16}, .data = b}};
    char path[4300];
    snprintf(path, sizeof path, "%s/model.safetensors", sub);
    vit_error err = {0};
    if (st_write_f32(path, e, 2, &err) != 0) fail_msg("%s", err.msg);
    free(w), free(b);
    return d;
}

/* vit average of st-cls-dense-micro (Transformer in 0_Transformer/) and the same with its Dense
 * doubled: the Transformer is the same, the Dense the mean of w and 2w, summed exactly in double
 * and rounded once to float as 1.5f * w is; so the result embeds bit for bit as the folder with
 * the Dense times 1.5 written here, and as neither input. st-multi-micro (Transformer at the root)
 * averaged with itself embeds as st-multi-micro. */
static void test_average_modules(void **state) {
    (void)state;
    REQUIRE_BIN();
    const char *doubled = scaled_dense("dense-x2", 2), *mean = scaled_dense("dense-x1.5", 1.5f);
    char out[4096];
    snprintf(out, sizeof out, "%s/averaged", test_tmpdir());
    run_ok((const char *const[]){"average", "-o", out, TEST_DATA "/st-cls-dense-micro", doubled,
                                 NULL});
    char *got = embed_cli(out), *want = embed_cli(mean),
         *one = embed_cli(TEST_DATA "/st-cls-dense-micro"), *two = embed_cli(doubled);
    assert_string_equal(got, want);
    assert_string_not_equal(got, one);
    assert_string_not_equal(got, two);
    expect_same_settings(TEST_DATA "/st-cls-dense-micro", out);
    free(got), free(want), free(one), free(two);

    snprintf(out, sizeof out, "%s/averaged-root", test_tmpdir());
    run_ok((const char *const[]){"average", "-o", out, TEST_DATA "/st-multi-micro",
                                 TEST_DATA "/st-multi-micro", NULL});
    got = embed_cli(out), want = embed_cli(TEST_DATA "/st-multi-micro");
    assert_string_equal(got, want);
    free(got), free(want);
}

/* A Dense saved as pytorch_model.bin (tests/data/st-dense-bin: torch.save of st-cls-dense-micro's
 * Dense) is converted to model.safetensors, the .bin not copied: the F32 result embeds bit for bit
 * as st-cls-dense-micro. */
static void test_convert_dense_from_bin(void **state) {
    (void)state;
    REQUIRE_BIN();
    char dir[4096], sub[4200], out[4096], path[4300];
    snprintf(dir, sizeof dir, "%s/dense-bin", test_tmpdir());
    assert_int_equal(mkdir(dir, 0755), 0);
    const char *files[] = {"modules.json", "config_sentence_transformers.json", "0_Transformer",
                           "1_Pooling"};
    char target[512];
    for (int i = 0; i < 4; i++) {
        snprintf(target, sizeof target, TEST_DATA "/st-cls-dense-micro/%s", files[i]);
        link_to(dir, files[i], target);
    }
    snprintf(sub, sizeof sub, "%s/2_Dense", dir);
    assert_int_equal(mkdir(sub, 0755), 0);
    link_to(sub, "config.json", TEST_DATA "/st-cls-dense-micro/2_Dense/config.json");
    link_to(sub, "pytorch_model.bin", TEST_DATA "/st-dense-bin/pytorch_model.bin");
    snprintf(out, sizeof out, "%s/dense-bin-f32", test_tmpdir());
    run_ok((const char *const[]){"convert", "--dtype", "f32", dir, out, NULL});
    expect_dtype(out, "2_Dense/model.safetensors", ST_F32);
    snprintf(path, sizeof path, "%s/2_Dense/pytorch_model.bin", out);
    assert_int_equal(access(path, F_OK), -1);
    char *got = embed_cli(out), *want = embed_cli(TEST_DATA "/st-cls-dense-micro");
    assert_string_equal(got, want);
    free(got), free(want);
}

static void expect_refusal(const char *const *argv, const char *says) {
    test_run_result r = test_run_vit(NULL, NULL, argv);
    print_message("  %s", r.err);
    assert_int_equal(r.status, 1);
    if (!strstr(r.err, says)) fail_msg("expected '%s' in: %s", says, r.err);
    assert_string_equal(strchr(r.err, '\n'), "\n"); /* one line */
    test_run_free(&r);
}

/* Refusals in one line: an ST folder averaged with a plain one; an ST folder whose Transformer is
 * elsewhere; a folder that holds a converted ST folder (only modules.json at its top) is not
 * overwritten without --overwrite. */
static void test_refusals(void **state) {
    (void)state;
    REQUIRE_BIN();
    char out[4096];
    snprintf(out, sizeof out, "%s/refused", test_tmpdir());
    expect_refusal((const char *const[]){"average", "-o", out, TEST_DATA "/st-mean-micro",
                                         TEST_DATA "/bert-base-micro", NULL},
                   "tests/data/bert-base-micro: no modules.json, where tests/data/st-mean-micro "
                   "is a sentence-transformers folder");
    expect_refusal((const char *const[]){"average", "-o", out, TEST_DATA "/st-mean-micro",
                                         TEST_DATA "/st-cls-dense-micro", NULL},
                   "tests/data/st-cls-dense-micro/modules.json: the Transformer is at "
                   "'0_Transformer', in tests/data/st-mean-micro at ''");
    snprintf(out, sizeof out, "%s/twice", test_tmpdir());
    run_ok((const char *const[]){"convert", TEST_DATA "/st-cls-dense-micro", out, NULL});
    char says[4200];
    snprintf(says, sizeof says, "vit convert: %s/modules.json exists (--overwrite replaces it)",
             out);
    expect_refusal((const char *const[]){"convert", TEST_DATA "/st-cls-dense-micro", out, NULL},
                   says);
    run_ok((const char *const[]){"convert", "--overwrite", "--dtype", "f32",
                                 TEST_DATA "/st-cls-dense-micro", out, NULL});
    expect_dtype(out, "2_Dense/model.safetensors", ST_F32);
    /* a module vit cannot copy is refused before anything is written */
    char bad[4096], file[4200];
    snprintf(bad, sizeof bad, "%s/bad-module", test_tmpdir());
    assert_int_equal(mkdir(bad, 0755), 0);
    const char *files[] = {"config.json", "model.safetensors", "vocab.txt", "tokenizer_config.json",
                           "1_Pooling"};
    for (int i = 0; i < 5; i++) {
        snprintf(file, sizeof file, TEST_DATA "/st-mean-micro/%s", files[i]);
        link_to(bad, files[i], file);
    }
    const char *modules =
        "[{\"idx\": 0, \"name\": \"0\", \"path\": \"\", \"type\": "
        "\"sentence_transformers.models.Transformer\"}, {\"idx\": 1, \"name\": \"1\", \"path\": "
        "\"../1_Pooling\", \"type\": \"sentence_transformers.models.Pooling\"}]";
    write_temp_file("bad-module/modules.json", modules, strlen(modules));
    snprintf(out, sizeof out, "%s/bad-out", test_tmpdir());
    expect_refusal(
        (const char *const[]){"convert", bad, out, NULL},
        "modules.json: module 1 (sentence_transformers.models.Pooling at '../1_Pooling') "
        "is not a sentence_transformers.models one in the folder");
    assert_int_equal(access(out, F_OK), -1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_convert_f32_same_bits),
        cmocka_unit_test(test_convert_f16_within_rounding),
        cmocka_unit_test(test_convert_dense_from_bin),
        cmocka_unit_test(test_average_modules),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
