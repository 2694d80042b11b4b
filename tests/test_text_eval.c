/* text_eval_tsv: SST-2 dev with bert-sst2-tiny against the reference's accuracy and its every
 * prediction, at two batch sizes; bad lines of a hand-written file skipped with their line
 * numbers; errors for a missing file and an image model. */
#include "tests/testutil.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vit/eval/eval_text.h"

#define DEV_SENTENCES 872
#define DEV_CORRECT   706 /* 0.8096, the PyTorch reference (models/bert-sst2-tiny/README.md) */

static const char *model_dir(void) {
    return shared_path("models/bert-sst2-tiny");
}

/* Lines of a file without their "\n"; *count receives how many. Caller frees both levels. */
static char **read_lines(const char *path, int *count) {
    size_t size;
    char *text = (char *)read_whole_file(path, &size);
    assert_non_null(text);
    int n = 0, cap = 1024;
    char **lines = malloc(sizeof *lines * (size_t)cap);
    for (char *p = text; p < text + size;) {
        char *eol = memchr(p, '\n', (size_t)(text + size - p));
        const size_t len = eol ? (size_t)(eol - p) : (size_t)(text + size - p);
        if (n == cap) lines = realloc(lines, sizeof *lines * (size_t)(cap *= 2));
        lines[n] = malloc(len + 1);
        memcpy(lines[n], p, len);
        lines[n++][len] = '\0';
        p += len + 1;
    }
    free(text);
    *count = n;
    return lines;
}

static void free_lines(char **lines, int n) {
    for (int i = 0; i < n; i++) free(lines[i]);
    free(lines);
}

/* Runs the evaluation with predictions into a temporary file; returns its lines. */
static char **evaluate(const char *tsv, int batch, int threads, text_eval_result *res, int *rows) {
    char path[4200];
    snprintf(path, sizeof path, "%s/predictions-%d.tsv", test_tmpdir(), batch);
    FILE *pred = fopen(path, "w");
    assert_non_null(pred);
    vit_error err = {0};
    const text_eval_options opt = {.batch = batch, .threads = threads};
    if (text_eval_tsv(model_dir(), tsv, &opt, pred, res, &err) != 0) fail_msg("%s", err.msg);
    fclose(pred);
    return read_lines(path, rows);
}

/* Every row: data line i, the true label of dev.tsv's line i, the reference's prediction. */
static void check_dev(int batch, int threads) {
    REQUIRE_SHARED("data/sst2/dev.tsv");
    REQUIRE_SHARED("models/bert-sst2-tiny/dev_predictions.txt");
    int ndev, nref, nrows;
    char **dev = read_lines(shared_path("data/sst2/dev.tsv"), &ndev);
    char **ref = read_lines(shared_path("models/bert-sst2-tiny/dev_predictions.txt"), &nref);
    assert_int_equal(ndev, DEV_SENTENCES + 1);
    assert_int_equal(nref, DEV_SENTENCES);
    text_eval_result res;
    char **rows = evaluate(shared_path("data/sst2/dev.tsv"), batch, threads, &res, &nrows);
    assert_int_equal(eval_report_count(res.report), DEV_SENTENCES);
    assert_int_equal(eval_report_skipped(res.report), 0);
    assert_int_equal(res.num_labels, 2);
    assert_string_equal(res.labels[1], "positive");
    assert_int_equal(nrows, DEV_SENTENCES + 1);
    assert_string_equal(rows[0], "line\ttrue\tpredicted\tprobability");
    int differ = 0, correct = 0;
    for (int i = 1; i <= DEV_SENTENCES; i++) {
        int line, truth, pred;
        double prob;
        if (sscanf(rows[i], "%d\t%d\t%d\t%lf", &line, &truth, &pred, &prob) != 4)
            fail_msg("bad prediction row '%s'", rows[i]);
        assert_int_equal(line, i);
        assert_int_equal(truth, atoi(strrchr(dev[i], '\t') + 1));
        assert_true(prob >= 0.5 && prob <= 1.0); /* the larger of two probabilities */
        if (pred != atoi(ref[i - 1])) {
            print_message("data line %d: predicted %d, reference %s\n", i, pred, ref[i - 1]);
            differ++;
        }
        correct += pred == truth;
    }
    print_message("SST-2 dev, batch %d: accuracy %.4f (%d/%d), %d predictions differ from the "
                  "reference, %.0f sentences/s\n",
                  batch, eval_report_top1(res.report), correct, DEV_SENTENCES, differ,
                  DEV_SENTENCES / res.seconds);
    assert_int_equal(differ, 0);
    assert_int_equal(correct, DEV_CORRECT);
    assert_true(eval_report_top1(res.report) == (double)DEV_CORRECT / DEV_SENTENCES);
    text_eval_result_free(&res);
    free_lines(rows, nrows);
    free_lines(dev, ndev);
    free_lines(ref, nref);
}

static void test_sst2_dev_batched(void **state) {
    (void)state;
    check_dev(32, 0);
}

static void test_sst2_dev_one_by_one(void **state) {
    (void)state;
    check_dev(1,
              1); /* one thread: tiny batches gain nothing from two, and lose on a busy machine */
}

/* The golden probability of a golden text (looked up by its exact text). */
static double golden_prob(const cJSON *golden, const char *text, int label) {
    const cJSON *item;
    cJSON_ArrayForEach(item, golden) {
        if (strcmp(cJSON_GetObjectItem(item, "text")->valuestring, text) == 0)
            return cJSON_GetArrayItem(cJSON_GetObjectItem(item, "probs"), label)->valuedouble;
    }
    fail_msg("'%s' is not a golden text", text);
    return 0;
}

/* The report's JSON (errors are only visible there). */
static cJSON *report_json(const text_eval_result *res) {
    char *buf = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&buf, &size);
    const eval_summary s = {.model = "m", .data = "d", .labels = res->labels, .unit = "texts"};
    assert_int_equal(eval_report_write_json(res->report, &s, f), 0);
    fclose(f);
    cJSON *root = cJSON_Parse(buf);
    free(buf);
    assert_non_null(root);
    return root;
}

static void test_bad_lines(void **state) {
    (void)state;
    REQUIRE_SHARED("models/bert-sst2-tiny");
    static const char tsv[] = "sentence\tlabel\n"                                    /* 1 */
                              "it 's a charming and often affecting journey . \t1\n" /* 2 */
                              "no tab here\n"                                        /* 3 */
                              "\n"                                                   /* 4 */
                              "a sometimes tedious film . \tnegative\n"              /* 5 */
                              "x\ty\tz\n"                                            /* 6 */
                              "fine\tneutral\n"                                      /* 7 */
                              "fine\t2\n"                                            /* 8 */
                              "unflinchingly bleak and desperate \t POSITIVE \r\n"   /* 9 */
                              "fine\t\n"                                             /* 10 */
                              "fine\tbad\x01\xff\n";                                 /* 11 */
    const char *path = write_temp_file("bad.tsv", tsv, sizeof tsv - 1);
    text_eval_result res;
    int nrows;
    char **rows = evaluate(path, 2, 0, &res, &nrows);
    assert_int_equal(eval_report_count(res.report), 3);
    assert_int_equal(eval_report_skipped(res.report), 6);

    size_t size;
    char *json = (char *)read_whole_file(shared_path("models/bert-sst2-tiny/golden.json"), &size);
    cJSON *golden = cJSON_ParseWithLength(json, size);
    free(json);
    assert_int_equal(nrows, 4);
    const struct {
        int line, truth, pred;
        const char *text;
    } want[] = {{1, 1, 1, "it 's a charming and often affecting journey . "},
                {4, 0, 0, "a sometimes tedious film . "},
                {8, 1, 0, "unflinchingly bleak and desperate "}};
    for (int i = 0; i < 3; i++) {
        int line, truth, pred;
        double prob;
        assert_int_equal(sscanf(rows[i + 1], "%d\t%d\t%d\t%lf", &line, &truth, &pred, &prob), 4);
        assert_int_equal(line, want[i].line);
        assert_int_equal(truth, want[i].truth);
        assert_int_equal(pred, want[i].pred);
        assert_true(fabs(prob - golden_prob(golden, want[i].text, pred)) < 1e-5);
    }

    cJSON *report = report_json(&res);
    const cJSON *errors = cJSON_GetObjectItem(report, "errors");
    const char *reasons[][2] = {
        {"bad.tsv:3", "bad.tsv:3 (data line 2): no tab between sentence and label"},
        {"bad.tsv:6", "bad.tsv:6 (data line 5): more than one tab"},
        {"bad.tsv:7", "bad.tsv:7 (data line 6): unknown label 'neutral' (expected 0..1 or one "
                      "of: negative, positive)"},
        {"bad.tsv:8", "bad.tsv:8 (data line 7): unknown label '2'"},
        {"bad.tsv:10", "bad.tsv:10 (data line 9): empty label"},
        {"bad.tsv:11", "bad.tsv:11 (data line 10): unknown label 'bad?"
                       "?'"},
    };
    assert_int_equal(cJSON_GetArraySize(errors), 6);
    for (int i = 0; i < 6; i++) {
        const cJSON *e = cJSON_GetArrayItem(errors, i);
        const char *file = cJSON_GetObjectItem(e, "file")->valuestring;
        const char *error = cJSON_GetObjectItem(e, "error")->valuestring;
        print_message("  %s\n", error);
        if (!strstr(file, reasons[i][0]) || !strstr(error, reasons[i][1]))
            fail_msg("skip %d: '%s' / '%s', expected '%s'", i, file, error, reasons[i][1]);
    }
    cJSON_Delete(report);
    cJSON_Delete(golden);
    text_eval_result_free(&res);
    free_lines(rows, nrows);
}

static void expect_error(const char *model, const char *tsv, const char *needle) {
    text_eval_result res;
    vit_error err = {0};
    assert_int_equal(text_eval_tsv(model, tsv, NULL, NULL, &res, &err), -1);
    assert_null(res.report);
    print_message("  %s\n", err.msg);
    if (!strstr(err.msg, needle)) fail_msg("expected '%s' in '%s'", needle, err.msg);
}

static void test_errors(void **state) {
    (void)state;
    REQUIRE_SHARED("models/bert-sst2-tiny");
    char missing[4200];
    snprintf(missing, sizeof missing, "%s/missing.tsv", test_tmpdir());
    expect_error(model_dir(), missing, "missing.tsv: No such file or directory");
    expect_error(model_dir(), test_tmpdir(), "Is a directory");
    /* Only the header: nothing evaluated, which is not an error here (the caller decides). */
    const char *empty = write_temp_file("header.tsv", "sentence\tlabel\n", 15);
    expect_error(MICRO_A, empty, "not a text model");
    text_eval_result res;
    vit_error err = {0};
    assert_int_equal(text_eval_tsv(model_dir(), empty, NULL, NULL, &res, &err), 0);
    assert_int_equal(eval_report_count(res.report), 0);
    text_eval_result_free(&res);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sst2_dev_batched),
        cmocka_unit_test(test_sst2_dev_one_by_one),
        cmocka_unit_test(test_bad_lines),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests_name("text eval", tests, NULL, NULL);
}
