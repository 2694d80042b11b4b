/* bin/vit tokenize ($VIT_BIN, set by `make test`) with the GPT-2, RoBERTa and XLM-R tokenizers
 * and --decode: ids as tools/bpe_reference.py's goldens give them (tests/data/gpt2-micro,
 * roberta-micro, xlmr-micro), texts of golden id lists from operands and from standard input (JSON
 * arrays fed back), --json and
 * --keep-special, GPT-2's text back through encode and decode; and the errors: a word that is
 * not an id, an id out of range, --keep-special without --decode. */
#include "tests/testutil.h"

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/sentencepiece.h"

#define GPT2    TEST_DATA "/gpt2-micro"
#define ROBERTA TEST_DATA "/roberta-micro"
#define XLMR    TEST_DATA "/xlmr-micro"

static cJSON *read_json(const char *path) {
    char *text = (char *)read_whole_file(path, NULL);
    if (!text) fail_msg("%s: cannot read", path);
    cJSON *root = cJSON_Parse(text);
    free(text);
    if (!root) fail_msg("%s: not JSON", path);
    return root;
}

/* The JSON objects of out, one per line, in an array. */
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

static void expect_one_line(const test_run_result *r, const char *want) {
    const char *nl = strchr(r->err, '\n');
    if (strncmp(r->err, "vit tokenize: ", 14) != 0 || !strstr(r->err, want) || !nl || nl[1])
        fail_msg("expected one line 'vit tokenize: ...%s' on stderr, got: %s", want, r->err);
}

static const char *hex_text(const char *hex) {
    static char out[4096];
    const size_t n = strlen(hex) / 2;
    assert_true(n < sizeof out);
    for (size_t i = 0; i < n; i++) {
        unsigned b;
        sscanf(hex + 2 * i, "%2x", &b);
        out[i] = (char)b;
    }
    out[n] = '\0';
    return out;
}

static int same_ids(const cJSON *a, const cJSON *b) {
    if (cJSON_GetArraySize(a) != cJSON_GetArraySize(b)) return 0;
    for (int i = 0; i < cJSON_GetArraySize(a); i++)
        if (cJSON_GetArrayItem(a, i)->valueint != cJSON_GetArrayItem(b, i)->valueint) return 0;
    return 1;
}

/* The golden encodings of the folder's own configuration (the first), uncut, of valid UTF-8
 * texts without NUL: `vit tokenize --json` gives the same ids. Returns how many. */
static int expect_encodings(const char *dir, const char *config) {
    char path[256];
    snprintf(path, sizeof path, "%s/golden.json", dir);
    cJSON *golden = read_json(path);
    const char *args[96] = {"tokenize", "-m", dir, "--json", "--"};
    const cJSON *want[96];
    int n = 5, texts = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(golden, "encode")) {
        const char *text = cJSON_GetObjectItem(c, "text")->valuestring;
        if (strcmp(cJSON_GetObjectItem(c, "config")->valuestring, config) ||
            !cJSON_IsNull(cJSON_GetObjectItem(c, "max_length")) || strstr(text, "\xef\xbf\xbd") ||
            strlen(text) * 2 != strlen(cJSON_GetObjectItem(c, "hex")->valuestring) || n == 95)
            continue;
        want[texts++] = cJSON_GetObjectItem(c, "ids");
        args[n++] = text;
    }
    args[n] = NULL;
    test_run_result r = test_run_vit(NULL, NULL, args);
    if (r.status != 0) fail_msg("exit %d: %s", r.status, r.err);
    cJSON *lines = json_lines(r.out);
    assert_int_equal(cJSON_GetArraySize(lines), texts);
    for (int i = 0; i < texts; i++) {
        const cJSON *line = cJSON_GetArrayItem(lines, i);
        assert_string_equal(cJSON_GetObjectItem(line, "text")->valuestring, args[5 + i]);
        if (!same_ids(cJSON_GetObjectItem(line, "ids"), want[i]))
            fail_msg("%s: \"%s\": not the reference's ids", dir, args[5 + i]);
        assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(line, "pieces")),
                         cJSON_GetArraySize(want[i]));
    }
    cJSON_Delete(lines);
    test_run_free(&r);
    cJSON_Delete(golden);
    return texts;
}

static void test_encode(void **state) {
    (void)state;
    REQUIRE_BIN();
    assert_true(expect_encodings(GPT2, "gpt2") > 30);
    assert_true(expect_encodings(ROBERTA, "roberta") > 30);
    if (spm_library()) assert_true(expect_encodings(XLMR, "xlmr") > 30);
}

/* Golden decodings of the folder's own configuration: the ids as operands, and all of them as
 * JSON arrays on standard input. Returns how many. */
static int expect_decodings(const char *dir, const char *config) {
    char path[256];
    snprintf(path, sizeof path, "%s/golden.json", dir);
    cJSON *golden = read_json(path);
    char *input = NULL;
    size_t input_len = 0;
    FILE *in = open_memstream(&input, &input_len);
    cJSON *wants = cJSON_CreateArray();
    int cases = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(golden, "decode")) {
        const char *want = hex_text(cJSON_GetObjectItem(c, "hex")->valuestring);
        if (strcmp(cJSON_GetObjectItem(c, "config")->valuestring, config) || strchr(want, '\n') ||
            strlen(want) * 2 != strlen(cJSON_GetObjectItem(c, "hex")->valuestring))
            continue;
        const bool skip = cJSON_IsTrue(cJSON_GetObjectItem(c, "skip_special_tokens"));
        const cJSON *ids = cJSON_GetObjectItem(c, "ids");
        if (!skip || cJSON_GetArraySize(ids) > 100) continue;
        char *list = cJSON_PrintUnformatted(ids);
        fprintf(in, "%s\n", list);
        free(list);
        cJSON_AddItemToArray(wants, cJSON_CreateString(want));
        cases++;
    }
    fclose(in);
    const char *stdin_path = write_temp_file("decode-in.txt", input, input_len);
    test_run_result r = test_run_vit(
        NULL, stdin_path, (const char *const[]){"tokenize", "-m", dir, "--decode", "--json", NULL});
    if (r.status != 0) fail_msg("exit %d: %s", r.status, r.err);
    cJSON *lines = json_lines(r.out);
    assert_int_equal(cJSON_GetArraySize(lines), cases);
    for (int i = 0; i < cases; i++)
        assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(lines, i), "text")->valuestring,
                            cJSON_GetArrayItem(wants, i)->valuestring);
    cJSON_Delete(lines);
    test_run_free(&r);
    free(input);
    cJSON_Delete(wants);
    cJSON_Delete(golden);
    return cases;
}

static void test_decode(void **state) {
    (void)state;
    REQUIRE_BIN();
    assert_true(expect_decodings(GPT2, "gpt2") > 30);
    assert_true(expect_decodings(ROBERTA, "roberta") > 30);
    if (spm_library()) assert_true(expect_decodings(XLMR, "xlmr") > 30);
    /* operands, one list across them; brackets and commas separate too */
    test_run_result r = test_run_vit(NULL, NULL,
                                     (const char *const[]){"tokenize", "-m", ROBERTA, "--decode",
                                                           "[0,", "43 72", "79,79,82]", "2", NULL});
    assert_int_equal(r.status, 0);
    assert_string_equal(r.out, "Hello\n");
    test_run_free(&r);
    r = test_run_vit(NULL, NULL,
                     (const char *const[]){"tokenize", "-m", ROBERTA, "--decode", "--keep-special",
                                           "0", "43", "72", "2", "1", "1", NULL});
    assert_int_equal(r.status, 0);
    assert_string_equal(r.out, "<s>He</s><pad><pad>\n");
    test_run_free(&r);
}

/* GPT-2's ids of a text, fed back to --decode, give the text. */
static void test_round_trip(void **state) {
    (void)state;
    REQUIRE_BIN();
    const char *text = "It's  a\ttest<|endoftext|> of caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac 12!";
    test_run_result r = test_run_vit(
        NULL, NULL, (const char *const[]){"tokenize", "-m", GPT2, "--json", "--", text, NULL});
    assert_int_equal(r.status, 0);
    cJSON *lines = json_lines(r.out);
    char *ids = cJSON_PrintUnformatted(cJSON_GetObjectItem(cJSON_GetArrayItem(lines, 0), "ids"));
    test_run_free(&r);
    const char *in = write_temp_file("round-trip.txt", ids, strlen(ids));
    r = test_run_vit(
        NULL, in,
        (const char *const[]){"tokenize", "-m", GPT2, "--decode", "--keep-special", NULL});
    assert_int_equal(r.status, 0);
    char want[256];
    snprintf(want, sizeof want, "%s\n", text);
    assert_string_equal(r.out, want);
    test_run_free(&r);
    free(ids);
    cJSON_Delete(lines);
}

static void test_errors(void **state) {
    (void)state;
    REQUIRE_BIN();
    test_run_result r = test_run_vit(
        NULL, NULL, (const char *const[]){"tokenize", "-m", GPT2, "--decode", "12", "x1", NULL});
    assert_int_equal(r.status, 1);
    expect_one_line(&r, "argument 2: 'x1' is not a token id");
    test_run_free(&r);
    r = test_run_vit(
        NULL, NULL,
        (const char *const[]){"tokenize", "-m", GPT2, "--decode", "12", "100000", NULL});
    assert_int_equal(r.status, 1);
    expect_one_line(&r, "vocab.json: token id 100000 is out of range");
    test_run_free(&r);
    const char *in = write_temp_file("bad-lines.txt", "12 13\n-1\n14\n", 12);
    r = test_run_vit(NULL, in, (const char *const[]){"tokenize", "-m", GPT2, "--decode", NULL});
    assert_int_equal(r.status, 1); /* the good lines decoded, the bad one named */
    expect_one_line(&r, "stdin:2: ");
    int lines = 0;
    for (const char *p = r.out; *p; p++) lines += *p == '\n';
    assert_int_equal(lines, 2);
    test_run_free(&r);
    r = test_run_vit(NULL, NULL,
                     (const char *const[]){"tokenize", "-m", GPT2, "--keep-special", "x", NULL});
    assert_int_equal(r.status, 2);
    test_run_free(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_encode),
        cmocka_unit_test(test_decode),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
