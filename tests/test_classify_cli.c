/* `vit classify` end to end: folders, output formats, threshold, label files, an image on
 * standard input, and the shipped default model. Runs the binary named by $VIT_BIN (set by
 * `make test`); each form is checked against classifying the same files one by one. */
#include "tests/testutil.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vit/vit.h"

#define FASHION  "models/fashion-vit"
#define IMAGENET "models/vit-tiny-in1k" /* the default model */

static void copy_file(const char *from, const char *to) {
    size_t n;
    uint8_t *data = read_whole_file(from, &n);
    assert_non_null(data);
    FILE *f = fopen(to, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, n, f), n);
    fclose(f);
    free(data);
}

static const char *tmp(const char *name) {
    static char paths[8][4200];
    static int next;
    char *p = paths[next++ % 8];
    snprintf(p, sizeof paths[0], "%s/%s", test_tmpdir(), name);
    return p;
}

/* A folder of images nested two deep, with files and hidden entries that are not images:
 * tree/b.png, tree/sub/a.png, tree/sub/c.PNG; returns the folder. */
static const char *make_tree(void) {
    mkdir(tmp("tree"), 0755);
    mkdir(tmp("tree/sub"), 0755);
    mkdir(tmp("tree/.hidden"), 0755);
    copy_file("tests/data/pullover.png", tmp("tree/b.png"));
    copy_file("tests/data/pullover.png", tmp("tree/sub/a.png"));
    copy_file("examples/photos/cat.jpg", tmp("tree/sub/c.PNG")); /* told by its bytes */
    copy_file("tests/data/pullover.png", tmp("tree/.hidden/x.png"));
    copy_file("tests/data/pullover.png", tmp("tree/.y.png"));
    FILE *f = fopen(tmp("tree/notes.txt"), "w");
    assert_non_null(f);
    fputs("not an image\n", f);
    fclose(f);
    return tmp("tree");
}

/* The JSON lines of out, in an array. */
static cJSON *json_lines(const char *out) {
    cJSON *all = cJSON_CreateArray();
    for (const char *p = out; *p;) {
        const char *eol = strchr(p, '\n');
        assert_non_null(eol);
        cJSON *o = cJSON_ParseWithLength(p, (size_t)(eol - p));
        if (!o) fail_msg("not JSON: %.*s", (int)(eol - p), p);
        cJSON_AddItemToArray(all, o);
        p = eol + 1;
    }
    return all;
}

static test_run_result classify(const char *model, const char *stdin_path, const char *a1,
                                const char *a2, const char *a3, const char *a4, const char *a5) {
    const char *args[] = {"classify", "-m", model, a1, a2, a3, a4, a5, NULL};
    return test_run_vit(NULL, stdin_path, args);
}

static const cJSON *top_item(const cJSON *line, int i, const char *key) {
    return cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(line, "top"), i), key);
}

static int top_index(const cJSON *line, int i) {
    return top_item(line, i, "index")->valueint;
}

static double top_prob(const cJSON *line, int i) {
    return top_item(line, i, "prob")->valuedouble;
}

static void test_folder_recursive_sorted(void **state) {
    (void)state;
    REQUIRE_BIN();
    const char *tree = make_tree();
    test_run_result r = classify(FASHION, NULL, "--json", "-k", "3", tree, NULL);
    assert_int_equal(r.status, 0);
    cJSON *lines = json_lines(r.out);
    const char *want[] = {"tree/b.png", "tree/sub/a.png", "tree/sub/c.PNG"};
    assert_int_equal(cJSON_GetArraySize(lines), 3);
    for (int i = 0; i < 3; i++) {
        const char *file = cJSON_GetObjectItem(cJSON_GetArrayItem(lines, i), "file")->valuestring;
        assert_non_null(strstr(file, want[i]));
        assert_null(strstr(file, "//"));
        /* the same answer as the file given alone: the same classes, and probabilities within
         * 1e-5 (alone, its rows meet other GEMM kernel tiles than in a batch of three; where the
         * kernels' rounding depends on that, as OpenBLAS's and oneDNN's AVX2 ones, they differ
         * by ~1e-7) */
        test_run_result one = classify(FASHION, NULL, "--json", "-k", "3", file, NULL);
        cJSON *alone = json_lines(one.out);
        for (int k = 0; k < 3; k++) {
            assert_int_equal(top_index(cJSON_GetArrayItem(alone, 0), k),
                             top_index(cJSON_GetArrayItem(lines, i), k));
            assert_float_equal(top_prob(cJSON_GetArrayItem(alone, 0), k),
                               top_prob(cJSON_GetArrayItem(lines, i), k), 1e-5);
        }
        cJSON_Delete(alone);
        test_run_free(&one);
    }
    cJSON_Delete(lines);
    test_run_free(&r);
}

/* CSV and TSV rows carry what the JSON says; a label with a comma is quoted in CSV. */
static void test_csv_tsv_threshold_labels(void **state) {
    (void)state;
    REQUIRE_BIN();
    const char *labels = tmp("labels.txt");
    FILE *f = fopen(labels, "w");
    assert_non_null(f);
    for (int i = 0; i < 10; i++) fprintf(f, "class %d, \"quoted\"\n", i);
    fclose(f);
    const char *image = "tests/data/pullover.png";
    test_run_result j = classify(FASHION, NULL, "--json", "-k", "10", image, NULL);
    cJSON *ref_lines = json_lines(j.out), *ref = cJSON_GetArrayItem(ref_lines, 0);
    int above = 0; /* probabilities of 0.01 or more */
    while (above < 10 && top_prob(ref, above) >= 0.01) above++;
    assert_true(above >= 1 && above < 10);

    test_run_result csv =
        classify(FASHION, NULL, "--format=csv", "--threshold=0.01", "--labels", labels, image);
    assert_int_equal(csv.status, 0);
    char *line = strtok(csv.out, "\n");
    assert_string_equal(line, "file,rank,index,label,prob");
    for (int i = 0; i < above; i++) {
        line = strtok(NULL, "\n");
        assert_non_null(line);
        const cJSON *t = cJSON_GetArrayItem(cJSON_GetObjectItem(ref, "top"), i);
        char want[256];
        snprintf(want, sizeof want, "%s,%d,%d,\"class %d, \"\"quoted\"\"\",", image, i + 1,
                 cJSON_GetObjectItem(t, "index")->valueint,
                 cJSON_GetObjectItem(t, "index")->valueint);
        assert_memory_equal(line, want, strlen(want));
        assert_true(fabs(atof(strrchr(line, ',') + 1) - top_prob(ref, i)) <= 5e-7);
    }
    assert_null(strtok(NULL, "\n")); /* nothing below the threshold */

    test_run_result tsv = classify(FASHION, NULL, "--format", "tsv", "-k", "2", image);
    assert_int_equal(tsv.status, 0);
    int rows = 0, tabs = 0;
    for (const char *p = tsv.out; *p; p++) rows += *p == '\n', tabs += *p == '\t';
    assert_int_equal(rows, 3);
    assert_int_equal(tabs, 12);

    test_run_result bad =
        classify(FASHION, NULL, "--labels", "tests/data/micro-a-size48.json", image, NULL, NULL);
    assert_int_equal(bad.status, 1);
    assert_non_null(strstr(bad.err, "micro-a-size48.json"));
    assert_non_null(strstr(bad.err, "the model has 10"));
    test_run_result bad2 = classify(FASHION, NULL, "--format", "xml", image, NULL, NULL);
    assert_int_equal(bad2.status, 2);
    test_run_result bad3 = classify(FASHION, NULL, "--threshold", "1.5", image, NULL, NULL);
    assert_int_equal(bad3.status, 2);
    cJSON_Delete(ref_lines);
    test_run_free(&j), test_run_free(&csv), test_run_free(&tsv);
    test_run_free(&bad), test_run_free(&bad2), test_run_free(&bad3);
}

/* An image's bytes on standard input, and paths on standard input, answer as the file does. */
static void test_stdin(void **state) {
    (void)state;
    REQUIRE_BIN();
    const char *image = "examples/photos/cat.jpg";
    test_run_result file = classify(IMAGENET, NULL, "-k", "3", image, NULL, NULL);
    test_run_result bytes = classify(IMAGENET, image, "-k", "3", "--stdin-image", NULL, NULL);
    const char *paths = tmp("paths.txt");
    FILE *f = fopen(paths, "w");
    assert_non_null(f);
    fprintf(f, "%s\n\n", image);
    fclose(f);
    test_run_result listed = classify(IMAGENET, paths, "-k", "3", "-", NULL, NULL);
    assert_int_equal(file.status, 0);
    assert_int_equal(bytes.status, 0);
    assert_int_equal(listed.status, 0);
    assert_string_equal(listed.out, file.out);
    /* the same lines but the first, which names the input ("-") */
    assert_string_equal(strchr(bytes.out, '\n'), strchr(file.out, '\n'));
    assert_memory_equal(bytes.out, "-\n", 2);
    test_run_result junk = classify(IMAGENET, "tests/data/micro-a-size48.json", "--stdin-image",
                                    NULL, NULL, NULL, NULL);
    assert_int_equal(junk.status, 1);
    assert_non_null(strstr(junk.err, "vit classify: "));
    test_run_free(&file), test_run_free(&bytes), test_run_free(&listed), test_run_free(&junk);
}

/* No -m: the shipped ImageNet model answers. */
static void test_default_model(void **state) {
    (void)state;
    REQUIRE_BIN();
    const char *args[] = {"classify", "-k", "3", "examples/photos/coffee.jpg", NULL};
    test_run_result dflt = test_run_vit(NULL, NULL, args);
    test_run_result named =
        classify(IMAGENET, NULL, "-k", "3", "examples/photos/coffee.jpg", NULL, NULL);
    assert_int_equal(dflt.status, 0);
    assert_string_equal(dflt.out, named.out);
    const char *info_args[] = {"info", NULL};
    test_run_result info = test_run_vit(NULL, NULL, info_args);
    assert_non_null(strstr(info.out, "1000:"));
    test_run_free(&dflt), test_run_free(&named), test_run_free(&info);
}

/* Loaded for inference, a model never holds its float weights and their prepared copies at once:
 * each weight is read from the file as it is prepared, then released. An int8 ViT-Tiny (5.5 MB of
 * int8 weights) then peaks below the same classification on OpenBLAS, which reads its 22 MB of
 * float weights as they are, by more than 8 MB (both ~20 MB of libraries; outside the sanitizers,
 * whose allocator keeps its own books). */
static void test_peak_memory(void **state) {
    (void)state;
    REQUIRE_BIN();
#if defined(__SANITIZE_ADDRESS__)
    print_message("SKIP %s: resident memory under the sanitizers is theirs\n", __func__);
    skip();
#endif
    const char *floats[] = {"classify", "-m", IMAGENET, "--backend",
                            "openblas", "-t", "1",      "examples/photos/cat.jpg",
                            NULL};
    const char *int8[] = {"classify", "-m", IMAGENET, "--precision",
                          "int8",     "-t", "1",      "examples/photos/cat.jpg",
                          NULL};
    test_run_result a = test_run_vit(NULL, NULL, floats), b = test_run_vit(NULL, NULL, int8);
    assert_int_equal(a.status, 0);
    if (b.status != 0 && strstr(b.err, "oneDNN")) {
        print_message("SKIP %s: %s", __func__, b.err);
        test_run_free(&a), test_run_free(&b);
        skip();
    }
    assert_int_equal(b.status, 0);
    print_message("  peak resident memory: %.1f MB fp32 on OpenBLAS, %.1f MB int8\n",
                  a.peak_kb / 1e3, b.peak_kb / 1e3);
    assert_true(b.peak_kb < a.peak_kb - 8000);
    test_run_free(&a);
    test_run_free(&b);
}

/* A folder without preprocessor_config.json is preprocessed with ViTImageProcessor's defaults at
 * its image_size, which may not be its processor's: vit_preprocess_defaults says which, and the CLI
 * says it on stderr. micro-a's own file holds exactly those defaults, so its answers stay the same;
 * with the file, nothing is said. */
static void test_defaults_said(void **state) {
    (void)state;
    REQUIRE_BIN();
    const char *dir = tmp("no-processor");
    mkdir(dir, 0755);
    char to[4300];
    snprintf(to, sizeof to, "%s/config.json", dir);
    copy_file("tests/data/micro-a/config.json", to);
    snprintf(to, sizeof to, "%s/model.safetensors", dir);
    copy_file("tests/data/micro-a/model.safetensors", to);
    static const char *line = "no preprocessor_config.json: ViTImageProcessor's defaults at 32x32 "
                              "(resize 32x32 bilinear, mean [0.5 0.5 0.5] std [0.5 0.5 0.5])";
    vit_error err = {0};
    vit_context *ctx = vit_load(dir, NULL, &err);
    if (!ctx) fail_msg("%s", err.msg);
    assert_string_equal(vit_preprocess_defaults(ctx), line);
    vit_free(ctx);
    ctx = vit_load("tests/data/micro-a", NULL, &err);
    if (!ctx) fail_msg("%s", err.msg);
    assert_null(vit_preprocess_defaults(ctx));
    vit_free(ctx);

    test_run_result bare = classify(dir, NULL, "examples/photos/cat.jpg", NULL, NULL, NULL, NULL);
    test_run_result with =
        classify("tests/data/micro-a", NULL, "examples/photos/cat.jpg", NULL, NULL, NULL, NULL);
    assert_int_equal(bare.status, 0);
    assert_int_equal(with.status, 0);
    char want[4600];
    snprintf(want, sizeof want, "vit classify: %s: %s\n", dir, line);
    assert_string_equal(bare.err, want);
    assert_string_equal(with.err, "");
    assert_string_equal(bare.out, with.out);
    test_run_free(&bare), test_run_free(&with);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_folder_recursive_sorted),
        cmocka_unit_test(test_csv_tsv_threshold_labels),
        cmocka_unit_test(test_stdin),
        cmocka_unit_test(test_default_model),
        cmocka_unit_test(test_peak_memory),
        cmocka_unit_test(test_defaults_said),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
