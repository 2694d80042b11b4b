/* Scoring text recognisers on line images (vit/data/line_tsv.h, vit/eval/ocr_report.h,
 * vit/eval/eval_ocr.h): the transcript TSV's layout and its one-line errors, the report's sums,
 * rates, worst lines and files on hand-computed lines, and another recogniser's output matched to
 * the transcripts by file. */
#include "tests/testutil.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "vit/data/line_tsv.h"
#include "vit/eval/eval_ocr.h"
#include "vit/eval/ocr_report.h"

static const char *write_tsv(const char *name, const char *text) {
    return write_temp_file(name, text, strlen(text));
}

static void test_line_tsv(void **state) {
    (void)state;
    const char *path =
        write_tsv("lines.tsv", "\xef\xbb\xbf" /* a byte-order mark */
                               "a.png\tHello world\r\n\n/abs/b.png\t\nc.png\tcaf\xc3\xa9 12");
    line_tsv s;
    vit_error err = {{0}};
    assert_int_equal(line_tsv_read(&s, path, &err), 0);
    assert_int_equal(s.count, 3);
    assert_string_equal(s.files[0], "a.png");
    assert_string_equal(s.texts[0], "Hello world"); /* "\r\n" taken off */
    assert_string_equal(s.texts[1], "");            /* nothing recognised */
    assert_string_equal(s.texts[2], "café 12");
    assert_true(s.lines[0] == 1 && s.lines[1] == 3 && s.lines[2] == 4);
    assert_int_equal(line_tsv_find(&s, "c.png"), 2);
    assert_int_equal(line_tsv_find(&s, "/abs/b.png"), 1);
    assert_int_equal(line_tsv_find(&s, "b.png"), -1);
    char buf[4096], want[4096];
    assert_int_equal(line_tsv_path(&s, 0, buf, sizeof buf), 0);
    snprintf(want, sizeof want, "%s/a.png", test_tmpdir());
    assert_string_equal(buf, want);
    assert_int_equal(line_tsv_path(&s, 1, buf, sizeof buf), 0);
    assert_string_equal(buf, "/abs/b.png");
    assert_int_equal(line_tsv_path(&s, 0, buf, 8), -1);
    line_tsv_free(&s);
}

static void expect_error(const char *text, const char *want) {
    const char *path = write_tsv("bad.tsv", text);
    line_tsv s;
    vit_error err = {{0}};
    assert_int_equal(line_tsv_read(&s, path, &err), -1);
    if (!strstr(err.msg, want) || !strstr(err.msg, "bad.tsv") || strchr(err.msg, '\n'))
        fail_msg("'%s': error '%s', want '%s' naming bad.tsv on one line", text, err.msg, want);
}

static void test_line_tsv_errors(void **state) {
    (void)state;
    expect_error("a.png\tok\nno tab here\n", "bad.tsv:2: no tab between file and text");
    expect_error("a.png\tx\ty\n", "bad.tsv:1: more than one tab");
    expect_error("\tx\n", "bad.tsv:1: no file name");
    expect_error("a.png\tx\nb.png\ty\na.png\tz\n", "bad.tsv:3: a.png is named again (first on "
                                                   "line 1)");
    expect_error("\n\r\n", "no `file<TAB>text` line");
    line_tsv s;
    vit_error err = {{0}};
    assert_int_equal(line_tsv_read(&s, "/nonexistent/labels.tsv", &err), -1);
    assert_non_null(strstr(err.msg, "/nonexistent/labels.tsv"));
}

/* Three lines: kitten -> sitting (3 of 6 characters, 1 of 1 word), exact (0 of 4), "abc" read as
 * "a b" (2 of 3 characters; 2 of 1 word: one changed, one added); one skipped. Totals 5 / 13
 * characters, 3 / 3 words. */
static ocr_report *three_lines(void) {
    vit_error err = {{0}};
    ocr_report *r = ocr_report_create(&err);
    assert_non_null(r);
    assert_int_equal(ocr_report_add(r, "1.png", "kitten", "sitting", &err), 0);
    assert_int_equal(ocr_report_add(r, "2.png", "same", " same ", &err), 0);
    assert_int_equal(ocr_report_add(r, "3.png", "abc", "a\tb\n", &err), 0);
    assert_int_equal(ocr_report_skip(r, "4.png", "4.png: not an image"), 0);
    return r;
}

static void test_report(void **state) {
    (void)state;
    ocr_report *r = three_lines();
    const text_errors t = ocr_report_totals(r);
    assert_true(t.char_edits == 5 && t.chars == 13 && t.word_edits == 3 && t.words == 3);
    assert_int_equal(ocr_report_count(r), 3);
    assert_int_equal(ocr_report_skipped(r), 1);
    assert_int_equal(ocr_report_exact(r), 1);
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    const ocr_summary s = {.model = "m", .data = "d.tsv", .seconds = 2, .worst = 10};
    ocr_report_print(r, &s, out);
    fclose(out);
    assert_non_null(strstr(text, "CER:   38.46% (5 character edits / 13 characters)"));
    assert_non_null(strstr(text, "WER:   100.00% (3 word edits / 3 words)"));
    assert_non_null(strstr(text, "lines read exactly: 1 / 3 (33.3%)"));
    assert_non_null(strstr(text, "time:  2.00 s, 1.5 lines/s"));
    assert_non_null(strstr(text, "white space collapsed"));
    /* worst first: 3.png (2 of 3 = 66.7%), then 1.png (50%); 2.png is exact */
    const char *w3 = strstr(text, "66.7%  2/3  3.png"), *w1 = strstr(text, "50.0%  3/6  1.png");
    assert_true(w3 && w1 && w3 < w1 && !strstr(text, "2.png\n"));
    assert_non_null(strstr(text, "read: a?b?")); /* control characters shown as '?' */
    assert_non_null(strstr(text, "4.png: 4.png: not an image"));
    free(text);
    ocr_report_free(r);
}

static void test_report_json_and_lines(void **state) {
    (void)state;
    ocr_report *r = three_lines();
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    const ocr_summary s = {.hypotheses = "h.tsv", .data = "d.tsv", .worst = 1};
    assert_int_equal(ocr_report_write_json(r, &s, out), 0);
    fclose(out);
    cJSON *j = cJSON_Parse(text);
    assert_non_null(j);
    assert_string_equal(cJSON_GetObjectItem(j, "hypotheses")->valuestring, "h.tsv");
    assert_null(cJSON_GetObjectItem(j, "seconds")); /* not timed */
    assert_float_equal(cJSON_GetObjectItem(j, "cer")->valuedouble, 5.0 / 13.0, 1e-12);
    assert_float_equal(cJSON_GetObjectItem(j, "wer")->valuedouble, 1.0, 1e-12);
    const cJSON *worst = cJSON_GetObjectItem(j, "worst");
    assert_int_equal(cJSON_GetArraySize(worst), 1);
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(worst, 0), "file")->valuestring,
                        "3.png");
    const cJSON *errors = cJSON_GetObjectItem(j, "errors");
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(errors, 0), "file")->valuestring,
                        "4.png");
    cJSON_Delete(j);
    free(text);
    out = open_memstream(&text, &size);
    assert_int_equal(ocr_report_write_lines(r, out), 0);
    fclose(out);
    assert_string_equal(text, "file\ttrue\tread\tchar_edits\tchars\n"
                              "1.png\tkitten\tsitting\t3\t6\n"
                              "2.png\tsame\t same \t0\t4\n"
                              "3.png\tabc\ta b \t2\t3\n");
    free(text);
    ocr_report_free(r);
}

static line_tsv read_set(const char *name, const char *text) {
    line_tsv s;
    vit_error err = {{0}};
    if (line_tsv_read(&s, write_tsv(name, text), &err) != 0) fail_msg("%s", err.msg);
    return s;
}

static void test_hypotheses(void **state) {
    (void)state;
    line_tsv truth = read_set("truth.tsv", "a.png\tx y\nb.png\tz\n");
    line_tsv hyp = read_set("hyp.tsv", "b.png\tz\na.png\tx\n"), missing, extra;
    vit_error err = {{0}};
    ocr_report *r = ocr_report_create(&err);
    assert_int_equal(eval_ocr_hypotheses(&truth, &hyp, r, &err), 0);
    const text_errors t = ocr_report_totals(r);
    assert_true(t.char_edits == 2 && t.chars == 4 && t.word_edits == 1 && t.words == 3);
    ocr_report_free(r);
    missing = read_set("missing.tsv", "a.png\tx y\n");
    r = ocr_report_create(&err);
    assert_int_equal(eval_ocr_hypotheses(&truth, &missing, r, &err), -1);
    assert_non_null(strstr(err.msg, "missing.tsv: no line for b.png (")); /* and truth.tsv:2 */
    assert_non_null(strstr(err.msg, "truth.tsv:2)"));
    ocr_report_free(r);
    extra = read_set("extra.tsv", "a.png\tx y\nb.png\tz\nc.png\tw\n");
    r = ocr_report_create(&err);
    assert_int_equal(eval_ocr_hypotheses(&truth, &extra, r, &err), -1);
    assert_non_null(strstr(err.msg, "extra.tsv:3: c.png is not in "));
    ocr_report_free(r);
    line_tsv_free(&truth), line_tsv_free(&hyp), line_tsv_free(&missing), line_tsv_free(&extra);
}

/* tools/tesseract_eval with a stand-in tesseract on PATH (it "reads" every image as "hello"):
 * the hypotheses file vit eval's "hypotheses:" line names exists after the script exits, and
 * holds one line per image. (The script wrote it into a temporary folder it removed at exit.) */
static void test_tesseract_eval_keeps_hypotheses(void **state) {
    (void)state;
    REQUIRE_BIN();
    char dir[4200], cmd[9000];
    snprintf(dir, sizeof dir, "%s/fake-tesseract", test_tmpdir());
    assert_int_equal(mkdir(dir, 0700), 0);
    /* as tesseract 5 writes a list's pages: the separator between pages, not after the last */
    static const char fake[] =
        "#!/bin/sh\n"
        "[ \"$1\" = --version ] && { echo 'tesseract 0.0 (a stand-in)'; exit 0; }\n"
        "sep=$(printf '%s' \"$8\" | sed -n 2p)\n"
        "i=0\n"
        "while read -r image; do\n"
        "    [ $i -gt 0 ] && printf '\\n%s\\n' \"$sep\"\n"
        "    printf 'hello\\n'; i=$((i + 1))\n"
        "done <\"$1\" >\"$2.txt\"\n";
    const char *script = write_temp_file("fake-tesseract/tesseract", fake, sizeof fake - 1);
    assert_int_equal(chmod(script, 0700), 0);
    write_temp_file("fake-tesseract/labels.tsv", "a.png\thello\nb.png\thello world\n", 30);
    snprintf(cmd, sizeof cmd, "PATH=%s:$PATH VIT=%s tools/tesseract_eval --jobs 1 %s 2>&1", dir,
             test_vit_bin(), dir);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    char out[8192];
    const size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = 0;
    const int status = pclose(p);
    if (status != 0) fail_msg("tools/tesseract_eval: status %d: %s", status, out);
    const char *at = strstr(out, "hypotheses: ");
    if (!at) fail_msg("no hypotheses line in: %s", out);
    char path[4200];
    assert_int_equal(sscanf(at, "hypotheses: %4199s", path), 1);
    char *hyp = (char *)read_whole_file(path, NULL);
    if (!hyp) fail_msg("tools/tesseract_eval named %s, which is gone: %s", path, out);
    assert_string_equal(hyp, "a.png\thello\nb.png\thello\n");
    free(hyp);
    unlink(path);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_line_tsv),   cmocka_unit_test(test_line_tsv_errors),
        cmocka_unit_test(test_report),     cmocka_unit_test(test_report_json_and_lines),
        cmocka_unit_test(test_hypotheses), cmocka_unit_test(test_tesseract_eval_keeps_hypotheses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
