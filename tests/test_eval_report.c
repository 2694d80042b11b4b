/* Accuracy bookkeeping on a hand-worked case. */
#include "tests/testutil.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vit/eval/report.h"

/* 7 classes; four inputs:
 *   true 0, probs peak at 0           -> correct
 *   true 0, predicted 1, 0 ranked 2nd -> wrong, in top-5
 *   true 1, predicted 1               -> correct
 *   true 2, ranked 7th (last)         -> wrong, not in top-5, predicted 1
 * top-1 = 2/4, top-5 = 3/4; class 1: predicted 3 times, correct once -> precision 1/3, recall 1. */
static eval_report *worked_case(void) {
    eval_report *r = eval_report_create(7, NULL);
    const float a[7] = {.9f, .1f, 0, 0, 0, 0, 0}, b[7] = {.3f, .6f, .1f, 0, 0, 0, 0};
    const float c[7] = {0, 1, 0, 0, 0, 0, 0}, d[7] = {.2f, .3f, .01f, .1f, .1f, .1f, .1f};
    assert_int_equal(eval_report_add(r, 0, a), 0);
    assert_int_equal(eval_report_add(r, 0, b), 1);
    assert_int_equal(eval_report_add(r, 1, c), 1);
    assert_int_equal(eval_report_add(r, 2, d), 1);
    assert_int_equal(eval_report_skip(r, "bad.png", "bad.png: not a PNG or JPEG file"), 0);
    return r;
}

static void test_accuracy(void **state) {
    (void)state;
    eval_report *r = worked_case();
    assert_int_equal(eval_report_count(r), 4);
    assert_int_equal(eval_report_skipped(r), 1);
    assert_float_equal(eval_report_top1(r), 0.5, 1e-12);
    assert_float_equal(eval_report_top5(r), 0.75, 1e-12);
    eval_report_free(r);
}

static void test_json(void **state) {
    (void)state;
    eval_report *r = worked_case();
    const char *labels[7] = {"a", "b", "c", "d", "e", "f", "g"};
    eval_summary s = {
        .model = "m", .data = "dir", .labels = labels, .unit = "images", .seconds = 2.0};
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_int_equal(eval_report_write_json(r, &s, f), 0);
    fclose(f);
    cJSON *o = cJSON_Parse(buf);
    assert_non_null(o);
    assert_int_equal(cJSON_GetObjectItem(o, "images")->valueint, 4);
    assert_float_equal(cJSON_GetObjectItem(o, "images_per_second")->valuedouble, 2.0, 1e-12);
    const cJSON *classes = cJSON_GetObjectItem(o, "classes");
    assert_int_equal(cJSON_GetArraySize(classes), 3); /* classes with true inputs: 0, 1, 2 */
    const cJSON *c1 = cJSON_GetArrayItem(classes, 1);
    assert_int_equal(cJSON_GetObjectItem(c1, "index")->valueint, 1);
    assert_float_equal(cJSON_GetObjectItem(c1, "precision")->valuedouble, 1.0 / 3, 1e-12);
    assert_float_equal(cJSON_GetObjectItem(c1, "recall")->valuedouble, 1.0, 1e-12);
    const cJSON *m = cJSON_GetObjectItem(cJSON_GetObjectItem(o, "confusion"), "matrix");
    /* axes 0, 1, 2; row 0 = {1, 1, 0}, row 2 = {0, 1, 0} */
    assert_int_equal(cJSON_GetArrayItem(cJSON_GetArrayItem(m, 0), 1)->valueint, 1);
    assert_int_equal(cJSON_GetArrayItem(cJSON_GetArrayItem(m, 2), 1)->valueint, 1);
    assert_int_equal(cJSON_GetArrayItem(cJSON_GetArrayItem(m, 2), 2)->valueint, 0);
    const cJSON *e = cJSON_GetArrayItem(cJSON_GetObjectItem(o, "errors"), 0);
    assert_string_equal(cJSON_GetObjectItem(e, "file")->valuestring, "bad.png");
    /* the reason without the repeated file name */
    assert_string_equal(cJSON_GetObjectItem(e, "error")->valuestring, "not a PNG or JPEG file");
    cJSON_Delete(o);
    free(buf);
    eval_report_free(r);
}

/* The human report: figures, classes worst recall first, confusions, skipped inputs once named. */
static void test_print(void **state) {
    (void)state;
    eval_report *r = worked_case();
    assert_int_equal(eval_report_skip(r, "t.tsv:3", "t.tsv:3 (data line 2): no tab"), 0);
    assert_int_equal(eval_report_skip(r, "x.jpg", "unreadable"), 0);
    const char *labels[7] = {"a", "b", "c", "d", "e", "f", "g"};
    const char *folders[7] = {"a", "dir_b", NULL, NULL, NULL, NULL, NULL};
    eval_summary s = {.model = "m",
                      .data = "dir",
                      .labels = labels,
                      .folders = folders,
                      .unit = "images",
                      .seconds = 2.0};
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    eval_report_print(r, &s, f);
    fclose(f);
    assert_non_null(strstr(buf, "images     4 evaluated, 3 skipped"));
    assert_non_null(strstr(buf, "top-1:     0.5000 (2/4)"));
    assert_non_null(strstr(buf, "top-5:     0.7500 (3/4)"));
    assert_non_null(strstr(buf, "2.0 images/s"));
    /* index count correct precision recall label [folder when it differs] */
    const char *c2 = strstr(buf, "      2      1       0    0.0000    0.0000  c\n");
    const char *c0 = strstr(buf, "      0      2       1    1.0000    0.5000  a\n");
    const char *c1 = strstr(buf, "      1      1       1    0.3333    1.0000  b  [dir_b]\n");
    assert_non_null(c2);
    assert_non_null(c0);
    assert_non_null(c1);
    assert_true(c2 < c0 && c0 < c1);
    assert_non_null(strstr(buf, "      1  a -> b\n"));
    assert_non_null(strstr(buf, "      1  c -> b\n"));
    assert_non_null(strstr(buf, "\n  bad.png: not a PNG or JPEG file\n"));
    assert_non_null(strstr(buf, "\n  t.tsv:3 (data line 2): no tab\n"));
    assert_non_null(strstr(buf, "\n  x.jpg: unreadable\n"));
    free(buf);
    eval_report_free(r);
}

/* Two classes: every answer is in the top 5, so the report leaves that line out. */
static void test_print_two_classes(void **state) {
    (void)state;
    eval_report *r = eval_report_create(2, NULL);
    assert_non_null(r);
    const float right[2] = {0.9f, 0.1f}, wrong[2] = {0.2f, 0.8f};
    eval_report_add(r, 0, right);
    eval_report_add(r, 0, wrong);
    const char *labels[2] = {"negative", "positive"};
    eval_summary s = {.model = "m", .data = "d.tsv", .labels = labels, .unit = "texts"};
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    eval_report_print(r, &s, f);
    fclose(f);
    assert_non_null(strstr(buf, "top-1:     0.5000 (1/2)\n"));
    assert_null(strstr(buf, "top-5"));
    free(buf);
    eval_report_free(r);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_accuracy), cmocka_unit_test(test_json),
                                       cmocka_unit_test(test_print),
                                       cmocka_unit_test(test_print_two_classes)};
    return cmocka_run_group_tests_name("eval report", tests, NULL, NULL);
}
