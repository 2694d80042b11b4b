/* bin/vit text ($VIT_BIN, set by `make test`): the 30 golden texts of bert-sst2-tiny as
 * arguments (ids, pieces, logits, batched and one by one), lines from a file and from stdin,
 * invalid UTF-8, top-k, and the errors: no model, an image model, a missing file, bad options. */
#include "tests/testutil.h"

#include <cjson/cJSON.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define TOL 1e-4 /* the project's logit bound against the float64 reference */

typedef test_run_result result;

/* Runs VIT_BIN text with args (NULL-terminated) and stdin from the given bytes (NULL: empty);
 * VIT_MODEL is set to model, or unset when model is NULL. */
static result run_text(const char *model, const char *input, const char *const *args) {
    static int calls;
    char in[4200];
    snprintf(in, sizeof in, "%s/in-%d", test_tmpdir(), calls++);
    FILE *f = fopen(in, "wb");
    assert_non_null(f);
    if (input) fputs(input, f);
    fclose(f);
    const char *argv[128] = {"text"};
    int argc = 1;
    while (*args && argc < 127) argv[argc++] = *args++;
    argv[argc] = NULL;
    return test_run_vit(model, in, argv);
}

static void result_free(result *r) {
    test_run_free(r);
}

/* The JSON objects of the output, one per line. */
static cJSON *parse_lines(const char *out, int *count) {
    cJSON *all = cJSON_CreateArray();
    for (const char *p = out; *p;) {
        const char *eol = strchr(p, '\n');
        assert_non_null(eol);
        cJSON *line = cJSON_ParseWithLength(p, (size_t)(eol - p));
        if (!line) fail_msg("output line is not JSON: %.*s", (int)(eol - p), p);
        cJSON_AddItemToArray(all, line);
        p = eol + 1;
    }
    *count = cJSON_GetArraySize(all);
    return all;
}

static const char *model_dir(void) {
    return shared_path("models/bert-sst2-tiny");
}

static cJSON *load_golden(void) {
    size_t size;
    char *json = (char *)read_whole_file(shared_path("models/bert-sst2-tiny/golden.json"), &size);
    assert_non_null(json);
    cJSON *root = cJSON_ParseWithLength(json, size);
    free(json);
    assert_true(cJSON_IsArray(root));
    return root;
}

static int same_int_arrays(const cJSON *a, const cJSON *b) {
    if (cJSON_GetArraySize(a) != cJSON_GetArraySize(b)) return 0;
    for (int i = 0; i < cJSON_GetArraySize(a); i++)
        if (cJSON_GetArrayItem(a, i)->valueint != cJSON_GetArrayItem(b, i)->valueint) return 0;
    return 1;
}

static int same_string_arrays(const cJSON *a, const cJSON *b) {
    if (cJSON_GetArraySize(a) != cJSON_GetArraySize(b)) return 0;
    for (int i = 0; i < cJSON_GetArraySize(a); i++)
        if (strcmp(cJSON_GetArrayItem(a, i)->valuestring, cJSON_GetArrayItem(b, i)->valuestring))
            return 0;
    return 1;
}

/* Golden texts through the CLI at batch size `batch`: returns max |logit - golden|. */
static double golden_run(const cJSON *golden, const char *batch, cJSON **lines) {
    const char *args[64] = {"-m", model_dir(), "--json", "--logits", "--tokens", "-b", batch, "--"};
    int argc = 8;
    const cJSON *item;
    cJSON_ArrayForEach(item, golden) args[argc++] = cJSON_GetObjectItem(item, "text")->valuestring;
    args[argc] = NULL;
    result r = run_text(NULL, NULL, args);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.err, "");
    int n;
    *lines = parse_lines(r.out, &n);
    assert_int_equal(n, cJSON_GetArraySize(golden));
    double worst = 0;
    for (int i = 0; i < n; i++) {
        const cJSON *want = cJSON_GetArrayItem(golden, i), *got = cJSON_GetArrayItem(*lines, i);
        assert_string_equal(cJSON_GetObjectItem(got, "text")->valuestring,
                            cJSON_GetObjectItem(want, "text")->valuestring);
        assert_true(
            same_int_arrays(cJSON_GetObjectItem(got, "ids"), cJSON_GetObjectItem(want, "ids")));
        assert_true(same_string_arrays(cJSON_GetObjectItem(got, "pieces"),
                                       cJSON_GetObjectItem(want, "pieces")));
        const cJSON *gl = cJSON_GetObjectItem(got, "logits"),
                    *wl = cJSON_GetObjectItem(want, "logits");
        assert_int_equal(cJSON_GetArraySize(gl), 2);
        for (int j = 0; j < 2; j++)
            worst = fmax(worst, fabs(cJSON_GetArrayItem(gl, j)->valuedouble -
                                     cJSON_GetArrayItem(wl, j)->valuedouble));
        /* top: both labels, most likely first, probabilities as golden */
        const cJSON *top = cJSON_GetObjectItem(got, "top");
        assert_int_equal(cJSON_GetArraySize(top), 2);
        const cJSON *first = cJSON_GetArrayItem(top, 0);
        const int best = cJSON_GetObjectItem(first, "index")->valueint;
        const double p = cJSON_GetArrayItem(cJSON_GetObjectItem(want, "probs"), best)->valuedouble;
        assert_true(p >= 0.5);
        assert_true(fabs(cJSON_GetObjectItem(first, "prob")->valuedouble - p) < 1e-5);
        assert_string_equal(cJSON_GetObjectItem(first, "label")->valuestring,
                            best ? "positive" : "negative");
    }
    result_free(&r);
    return worst;
}

static void test_golden_texts(void **state) {
    (void)state;
    REQUIRE_BIN();
    REQUIRE_SHARED("models/bert-sst2-tiny");
    cJSON *golden = load_golden(), *batched, *single;
    const double worst_batched = golden_run(golden, "7", &batched);
    const double worst_single = golden_run(golden, "1", &single);
    double between = 0;
    for (int i = 0; i < cJSON_GetArraySize(golden); i++)
        for (int j = 0; j < 2; j++) {
            const cJSON *a = cJSON_GetObjectItem(cJSON_GetArrayItem(batched, i), "logits");
            const cJSON *b = cJSON_GetObjectItem(cJSON_GetArrayItem(single, i), "logits");
            between = fmax(between, fabs(cJSON_GetArrayItem(a, j)->valuedouble -
                                         cJSON_GetArrayItem(b, j)->valuedouble));
        }
    print_message("vit text, 30 golden texts: ids and pieces identical; max |dlogit| %.3g "
                  "(batch 7), %.3g (batch 1); batch 7 vs 1 %.3g\n",
                  worst_batched, worst_single, between);
    assert_true(worst_batched <= TOL && worst_single <= TOL);
    assert_true(between <= 1e-5); /* padding is masked: only summation order differs */
    cJSON_Delete(batched);
    cJSON_Delete(single);
    cJSON_Delete(golden);
}

/* Lines of a file (CRLF and an empty line included) and of stdin: one result per line, in order,
 * the text without its line ending; -f - reads stdin after the TEXT arguments. */
static void test_lines(void **state) {
    (void)state;
    REQUIRE_BIN();
    REQUIRE_SHARED("models/bert-sst2-tiny");
    static const char lines[] = "a sometimes tedious film .\r\n\nit 's a charming journey .\n";
    const char *path = write_temp_file("lines.txt", lines, sizeof lines - 1);
    const char *from_file[] = {"--json", "-f", path, NULL};
    const char *from_stdin[] = {"--json", NULL};
    const char *both[] = {"--json", "-f", "-", "first", NULL};
    const char *const *runs[] = {from_file, from_stdin, both};
    const char *want[] = {"first", "a sometimes tedious film .", "", "it 's a charming journey ."};
    for (int k = 0; k < 3; k++) {
        result r = run_text(model_dir(), lines, runs[k]);
        assert_int_equal(r.status, 0);
        int n;
        cJSON *out = parse_lines(r.out, &n);
        const int skip = k == 2 ? 0 : 1; /* only the third run has the argument "first" */
        assert_int_equal(n, 4 - skip);
        for (int i = 0; i < n; i++) {
            const cJSON *o = cJSON_GetArrayItem(out, i);
            assert_string_equal(cJSON_GetObjectItem(o, "text")->valuestring, want[i + skip]);
            assert_null(cJSON_GetObjectItem(o, "ids"));
            assert_null(cJSON_GetObjectItem(o, "logits"));
        }
        cJSON_Delete(out);
        result_free(&r);
    }
}

/* Plain output: the text, then "  prob  label" lines, most likely first; -k limits them. */
static void test_plain_output(void **state) {
    (void)state;
    REQUIRE_BIN();
    REQUIRE_SHARED("models/bert-sst2-tiny");
    const char *args[] = {
        "-m", model_dir(), "-k", "1", "--tokens", "--", "-- a sometimes tedious film .", NULL};
    result r = run_text(NULL, NULL, args);
    assert_int_equal(r.status, 0);
    static const char want[] = "-- a sometimes tedious film .\n  0.";
    assert_memory_equal(r.out, want, sizeof want - 1);
    assert_non_null(strstr(r.out,
                           "  negative\n  pieces: [CLS] - - a sometimes ted ##ious film . [SEP]\n"
                           "  ids: 101 1011 1011 1037 2823 6945 6313 2143 1012 102\n"));
    assert_null(strstr(r.out, "positive"));
    result_free(&r);
}

/* Invalid bytes are skipped with a warning naming the line; the JSON stays valid. */
static void test_invalid_utf8(void **state) {
    (void)state;
    REQUIRE_BIN();
    REQUIRE_SHARED("models/bert-sst2-tiny");
    static const char lines[] = "fine\nbad\xff\xfe film\n";
    const char *path = write_temp_file("bad-utf8.txt", lines, sizeof lines - 1);
    const char *args[] = {"--json", "--tokens", "-f", path, NULL};
    result r = run_text(model_dir(), NULL, args);
    assert_int_equal(r.status, 0);
    char want[4300];
    snprintf(want, sizeof want, "vit text: %s:2: invalid UTF-8 (2 bytes skipped)\n", path);
    assert_string_equal(r.err, want);
    int n;
    cJSON *out = parse_lines(r.out, &n);
    assert_int_equal(n, 2);
    const cJSON *o = cJSON_GetArrayItem(out, 1);
    assert_string_equal(cJSON_GetObjectItem(o, "text")->valuestring,
                        "bad\xef\xbf\xbd\xef\xbf\xbd film");
    const cJSON *pieces = cJSON_GetObjectItem(o, "pieces");
    assert_int_equal(cJSON_GetArraySize(pieces), 4);
    assert_string_equal(cJSON_GetArrayItem(pieces, 1)->valuestring, "bad");
    assert_string_equal(cJSON_GetArrayItem(pieces, 2)->valuestring, "film");
    cJSON_Delete(out);
    result_free(&r);
}

static void expect_failure(const char *model, const char *const *args, int status,
                           const char *needle) {
    result r = run_text(model, "text\n", args);
    print_message("  exit %d: %s", r.status, r.err);
    assert_int_equal(r.status, status);
    assert_string_equal(r.out, "");
    if (!strstr(r.err, needle)) fail_msg("expected '%s' in '%s'", needle, r.err);
    assert_ptr_equal(strchr(r.err, '\n'), r.err + strlen(r.err) - 1); /* one line */
    result_free(&r);
}

static void test_errors(void **state) {
    (void)state;
    REQUIRE_BIN();
    REQUIRE_SHARED("models/bert-sst2-tiny");
    const char *none[] = {"hello", NULL};
    expect_failure(NULL, none, 2, "vit text: no model: give -m MODEL_DIR");
    const char *image[] = {"-m", MICRO_A, "hello", NULL};
    expect_failure(NULL, image, 1, "not a text model");
    const char *missing_dir[] = {"-m", "/nonexistent-model", "hello", NULL};
    expect_failure(NULL, missing_dir, 1, "vit text: /nonexistent-model");
    const char *missing_file[] = {"-f", "/nonexistent.txt", NULL};
    expect_failure(model_dir(), missing_file, 1, "vit text: /nonexistent.txt: No such file");
    const char *directory[] = {"-f", test_tmpdir(), NULL};
    expect_failure(model_dir(), directory, 1, "Is a directory");
    const char *bad_k[] = {"-k", "0", "hello", NULL};
    expect_failure(model_dir(), bad_k, 2, "invalid value for -k");
    const char *bad_b[] = {"-b", "x", "hello", NULL};
    expect_failure(model_dir(), bad_b, 2, "invalid value for -b");
    const char *bad_option[] = {"--bogus", "hello", NULL};
    expect_failure(model_dir(), bad_option, 2, "vit text: unknown option '--bogus'");
    const char *no_value[] = {"hello", "-f", NULL};
    expect_failure(model_dir(), no_value, 2, "vit text: option '-f' needs a value");
}

/* A CLIP or SigLIP folder loads as a text tower, whose outputs are embedding dimensions: vit
 * text refuses it in one line pointing to vit embed and zero-shot, rather than printing
 * dimensions (DIM_6, DIM_9) as if they were classes. */
static void test_joint_model_refused(void **state) {
    (void)state;
    REQUIRE_BIN();
    const char *models[] = {TEST_DATA "/clip-micro", TEST_DATA "/siglip-micro"};
    for (int i = 0; i < 2; i++) {
        const char *args[] = {"-m", models[i], "a cat", NULL};
        char want[256];
        snprintf(want, sizeof want, "vit text: %s is a CLIP or SigLIP model", models[i]);
        expect_failure(NULL, args, 1, want);
        expect_failure(NULL, args, 1, "no classifier head: 'vit embed -m ");
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden_texts), cmocka_unit_test(test_lines),
        cmocka_unit_test(test_plain_output), cmocka_unit_test(test_invalid_utf8),
        cmocka_unit_test(test_errors),       cmocka_unit_test(test_joint_model_refused),
    };
    return cmocka_run_group_tests_name("vit text", tests, NULL, NULL);
}
