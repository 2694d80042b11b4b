/* vit generate on the VisionEncoderDecoder micro models: the ids of image files read and
 * preprocessed by vit equal those tools/ved_reference.py's float64 forward generates from Pillow's
 * preprocessing (golden.json's greedy ids; generate.json's beam search), the plain output is the
 * JSON's text, a batch gives what one image at a time gives, and the errors are one line. */
#include "tests/testutil.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TROCR TEST_DATA "/ved-trocr-vit"
#define GPT2  TEST_DATA "/ved-gpt2-vit"

static const char *const images[] = {GOLDEN_IMAGES "/rgb_64x48.png",
                                     GOLDEN_IMAGES "/tall_40x400.jpg",
                                     GOLDEN_IMAGES "/palette_120x90.png"};

static cJSON *read_json(const char *path) {
    char *text = (char *)read_whole_file(path, NULL);
    cJSON *root = text ? cJSON_Parse(text) : NULL;
    free(text);
    if (!root) fail_msg("%s: missing or not JSON", path);
    return root;
}

/* The ids of a JSON line against a JSON array of ids. */
static void expect_ids(const cJSON *line, const cJSON *want, const char *what) {
    const cJSON *ids = cJSON_GetObjectItem(line, "ids");
    int same = cJSON_GetArraySize(ids) == cJSON_GetArraySize(want);
    for (int i = 0; same && i < cJSON_GetArraySize(want); i++)
        same = cJSON_GetArrayItem(ids, i)->valueint == cJSON_GetArrayItem(want, i)->valueint;
    if (!same) fail_msg("%s: ids differ from the reference's", what);
}

/* Runs vit generate with args, expecting exit 0 and one JSON line per image: lines[i]. */
static int run_json(const char *const *args, cJSON **lines, int max) {
    test_run_result r = test_run_vit(NULL, NULL, args);
    if (r.status != 0) fail_msg("vit generate: exit %d: %s", r.status, r.err);
    int n = 0;
    for (char *line = strtok(r.out, "\n"); line && n < max; line = strtok(NULL, "\n"))
        if (!(lines[n++] = cJSON_Parse(line))) fail_msg("not a JSON line: %s", line);
    test_run_free(&r);
    return n;
}

/* Greedy with the folder's settings on each image file: golden.json's greedy ids (max_length 20,
 * the folder's default), one file at a time and three in a batch. */
static void test_greedy_files(void **state) {
    (void)state;
    REQUIRE_BIN();
    cJSON *golden = read_json(TROCR "/golden.json");
    const cJSON *greedy = cJSON_GetObjectItem(golden, "greedy_max_length_20");
    cJSON *lines[3];
    const char *const batch[] = {"generate", "-m",      TROCR,     "--json",  "-b",
                                 "3",        images[0], images[1], images[2], NULL};
    assert_int_equal(run_json(batch, lines, 3), 3);
    for (int i = 0; i < 3; i++) {
        const char *name = strrchr(images[i], '/') + 1;
        expect_ids(lines[i], cJSON_GetObjectItem(greedy, name), name);
        cJSON *one[1];
        const char *const single[] = {"generate", "-m", TROCR, "--json", images[i], NULL};
        assert_int_equal(run_json(single, one, 1), 1);
        expect_ids(one[0], cJSON_GetObjectItem(greedy, name), "one image at a time");
        assert_string_equal(cJSON_GetObjectItem(one[0], "text")->valuestring,
                            cJSON_GetObjectItem(lines[i], "text")->valuestring);
        cJSON_Delete(one[0]);
        cJSON_Delete(lines[i]);
    }
    cJSON_Delete(golden);
}

/* --num-beams 3 and --num-beams 2 --length-penalty 0.5 --no-repeat-ngram-size 2 on GPT-2
 * (transformers' names, as the server's and Python's), and the same under the old names (--beams,
 * --no-repeat-ngram, still accepted): generate.json's ids and scores for those options (image 0
 * alone). */
static void test_beam_options(void **state) {
    (void)state;
    REQUIRE_BIN();
    cJSON *cases = read_json(GPT2 "/generate.json");
    static const struct {
        const char *name, *args[6];
    } runs[] = {{"beams-3", {"--num-beams", "3", NULL}},
                {"beams-2-lp0.5-ng2",
                 {"--num-beams", "2", "--length-penalty", "0.5", "--no-repeat-ngram-size", "2"}},
                {"beams-3", {"--beams", "3", NULL}},
                {"beams-2-lp0.5-ng2",
                 {"--beams", "2", "--length-penalty", "0.5", "--no-repeat-ngram", "2"}}};
    for (size_t k = 0; k < sizeof runs / sizeof runs[0]; k++) {
        const cJSON *want = NULL, *c;
        cJSON_ArrayForEach(c, cJSON_GetObjectItem(cases, "cases")) {
            if (strcmp(cJSON_GetObjectItem(c, "name")->valuestring, runs[k].name) == 0 &&
                cJSON_GetArraySize(cJSON_GetObjectItem(c, "batch")) == 1 &&
                cJSON_GetArrayItem(cJSON_GetObjectItem(c, "batch"), 0)->valueint == 0)
                want = cJSON_GetArrayItem(cJSON_GetObjectItem(c, "results"), 0);
        }
        assert_non_null(want);
        const char *args[16] = {"generate", "-m", GPT2, "--json"};
        int n = 4;
        for (int i = 0; i < 6 && runs[k].args[i]; i++) args[n++] = runs[k].args[i];
        args[n++] = images[0];
        cJSON *line[1];
        assert_int_equal(run_json(args, line, 1), 1);
        expect_ids(line[0], cJSON_GetObjectItem(want, "ids"), runs[k].name);
        const double score = cJSON_GetObjectItem(line[0], "score")->valuedouble;
        assert_true(fabs(score - cJSON_GetObjectItem(want, "score")->valuedouble) <= 1e-4);
        cJSON_Delete(line[0]);
    }
    cJSON_Delete(cases);
}

/* The token limit: --max-new-tokens N (and its old name --max-tokens) keeps N tokens after the
 * start token, --max-length N the whole sequence to N; both together are refused. */
static void test_token_limits(void **state) {
    (void)state;
    REQUIRE_BIN();
    const char *const limits[][2] = {
        {"--max-new-tokens", "3"}, {"--max-tokens", "3"}, {"--max-length", "4"}};
    for (int i = 0; i < 3; i++) {
        const char *args[] = {"generate", "-m",         GPT2,         "--json",  "--min-length",
                              "4",        limits[i][0], limits[i][1], images[0], NULL};
        cJSON *line[1];
        assert_int_equal(run_json(args, line, 1), 1);
        const int n = cJSON_GetArraySize(cJSON_GetObjectItem(line[0], "ids"));
        if (n != 4)
            fail_msg("%s %s: %d ids, not the start token and 3", limits[i][0], limits[i][1], n);
        cJSON_Delete(line[0]);
    }
    const char *both[] = {"generate", "-m",      GPT2, "--max-new-tokens", "3", "--max-length",
                          "4",        images[0], NULL};
    test_run_result r = test_run_vit(NULL, NULL, both);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "--max-new-tokens and --max-length together"));
    test_run_free(&r);
}

/* The plain output: the text alone for one image, "FILE: text" for several. */
static void test_plain_output(void **state) {
    (void)state;
    REQUIRE_BIN();
    cJSON *line[1];
    const char *const json[] = {"generate", "-m", TROCR, "--json", images[2], NULL};
    assert_int_equal(run_json(json, line, 1), 1);
    const char *text = cJSON_GetObjectItem(line[0], "text")->valuestring;
    test_run_result r =
        test_run_vit(NULL, NULL, (const char *const[]){"generate", "-m", TROCR, images[2], NULL});
    assert_int_equal(r.status, 0);
    char want[512];
    snprintf(want, sizeof want, "%s\n", text);
    assert_string_equal(r.out, want);
    test_run_free(&r);
    r = test_run_vit(NULL, NULL,
                     (const char *const[]){"generate", "-m", TROCR, images[2], images[2], NULL});
    snprintf(want, sizeof want, "%s: %s\n%s: %s\n", images[2], text, images[2], text);
    assert_string_equal(r.out, want);
    test_run_free(&r);
    cJSON_Delete(line[0]);
}

/* On a terminal (script(1) gives vit a pseudo-terminal) the text's control bytes are escaped,
 * \xHH, a backslash doubled; into a pipe (test_plain_output) the bytes are the JSON's text. The
 * GPT-2 micro model writes control bytes for this image (its JSON text has \u0010). */
static void test_terminal_escapes(void **state) {
    (void)state;
    REQUIRE_BIN();
    if (system("script --version >/dev/null 2>&1") != 0) {
        print_message("SKIP %s: needs script(1) (util-linux) for a terminal\n", __func__);
        skip();
    }
    cJSON *line[1];
    const char *const json[] = {"generate", "-m", GPT2, "--json", images[0], NULL};
    assert_int_equal(run_json(json, line, 1), 1);
    const unsigned char *text =
        (const unsigned char *)cJSON_GetObjectItem(line[0], "text")->valuestring;
    char want[2048] = "";
    int controls = 0;
    for (const unsigned char *c = text; *c; c++) {
        char piece[8] = {(char)*c, 0};
        if (*c < 0x20 || *c == 0x7f) snprintf(piece, sizeof piece, "\\x%02x", *c), controls++;
        if (*c == '\\') snprintf(piece, sizeof piece, "\\\\");
        strncat(want, piece, sizeof want - strlen(want) - 1);
    }
    assert_true(controls > 0);                             /* else this image tests nothing */
    strncat(want, "\r\n", sizeof want - strlen(want) - 1); /* the terminal's line end */
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "script -qec '%s generate -m %s %s' /dev/null", test_vit_bin(), GPT2,
             images[0]);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    char out[2048];
    const size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = 0;
    assert_int_equal(pclose(p), 0);
    if (strcmp(out, want) != 0) fail_msg("on a terminal: '%s', not '%s'", out, want);
    cJSON_Delete(line[0]);
}

/* A classifier folder, an unreadable image among good ones, a bad option value. */
static void test_errors(void **state) {
    (void)state;
    REQUIRE_BIN();
    test_run_result r =
        test_run_vit(NULL, NULL, (const char *const[]){"generate", "-m", MICRO_A, images[0], NULL});
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.err, "not an image-to-text model"));
    assert_ptr_equal(strchr(r.err, '\n'), r.err + strlen(r.err) - 1); /* one line */
    test_run_free(&r);
    const char *bad = write_temp_file("not-an-image.png", "nope", 4);
    r = test_run_vit(NULL, NULL,
                     (const char *const[]){"generate", "-m", TROCR, bad, images[0], NULL});
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.err, "not-an-image.png"));
    assert_non_null(strstr(r.out, images[0])); /* the good image is still read */
    test_run_free(&r);
    r = test_run_vit(NULL, NULL,
                     (const char *const[]){"generate", "-m", TROCR, "--early-stopping", "maybe",
                                           images[0], NULL});
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "--early-stopping"));
    test_run_free(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_greedy_files), cmocka_unit_test(test_beam_options),
        cmocka_unit_test(test_plain_output), cmocka_unit_test(test_terminal_escapes),
        cmocka_unit_test(test_errors),       cmocka_unit_test(test_token_limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
