/* Decoding ids to text for the tokenizers not covered by test_bpe_gpt2 (text_tokenizer_decode
 * over each kind): CLIPTokenizer.decode on clip-micro's vocabulary and SiglipTokenizer.decode
 * on spm-micro's model, the special tokens kept and left out, against tools/bpe_reference.py's
 * goldens (tests/data/clip-micro/decode.json, tests/data/spm-micro/decode.json); and
 * BertTokenizer.decode on a vocabulary written here, worked by hand from
 * convert_tokens_to_string (" ".join(tokens).replace(" ##", "").strip()) and
 * clean_up_tokenization. */
#include "tests/testutil.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "text/sentencepiece.h"
#include "text/text_tokenizer.h"

#define MAX_TEXT 4096

static cJSON *read_json(const char *path) {
    char *text = (char *)read_whole_file(path, NULL);
    if (!text) fail_msg("%s: cannot read", path);
    cJSON *root = cJSON_Parse(text);
    free(text);
    if (!root) fail_msg("%s: not JSON", path);
    return root;
}

static text_tokenizer *load_or_fail(const char *dir) {
    text_tokenizer *t = NULL;
    vit_error err = {0};
    if (text_tokenizer_load(dir, &t, &err) != 0) fail_msg("%s: %s", dir, err.msg);
    return t;
}

/* Decodes the case's ids and compares with its hex text. */
static void expect_case(const text_tokenizer *t, const cJSON *c) {
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(c, "ids");
    const int n = cJSON_GetArraySize(list);
    int32_t ids[256];
    assert_true(n <= 256);
    for (int i = 0; i < n; i++) ids[i] = cJSON_GetArrayItem(list, i)->valueint;
    const bool skip = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c, "skip_special_tokens"));
    const char *hex = cJSON_GetObjectItemCaseSensitive(c, "hex")->valuestring;
    char want[MAX_TEXT], got[MAX_TEXT];
    const size_t want_len = strlen(hex) / 2;
    for (size_t i = 0; i < want_len; i++) {
        unsigned b;
        sscanf(hex + 2 * i, "%2x", &b);
        want[i] = (char)b;
    }
    want[want_len] = '\0';
    vit_error err = {0};
    const int len = text_tokenizer_decode(t, ids, n, skip, got, sizeof got, &err);
    if (len < 0) fail_msg("%s", err.msg);
    if ((size_t)len != want_len || memcmp(got, want, want_len) != 0)
        fail_msg("%d ids (skip %d): \"%s\", the reference gives \"%s\"", n, skip, got, want);
}

static void test_clip_decode(void **state) {
    (void)state;
    text_tokenizer *t = load_or_fail(TEST_DATA "/clip-micro");
    cJSON *golden = read_json(TEST_DATA "/clip-micro/decode.json");
    int cases = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(golden, "cases")) {
        expect_case(t, c);
        cases++;
    }
    assert_int_equal(cases, 12);
    cJSON_Delete(golden);
    text_tokenizer_free(t);
}

/* spm-micro's model with one of golden.json's configurations, in a folder of test_tmpdir(). */
static const char *siglip_folder(const char *name, const cJSON *config) {
    static char dir[4200];
    snprintf(dir, sizeof dir, "%s/siglip-%s", test_tmpdir(), name);
    mkdir(dir, 0700);
    size_t size;
    uint8_t *model = read_whole_file(TEST_DATA "/spm-micro/spiece.model", &size);
    assert_non_null(model);
    char file[4300];
    snprintf(file, sizeof file, "siglip-%s/spiece.model", name);
    write_temp_file(file, model, size);
    free(model);
    static const char *const files[] = {"tokenizer_config", "special_tokens_map"};
    for (int i = 0; i < 2; i++) {
        char *text = cJSON_Print(cJSON_GetObjectItemCaseSensitive(config, files[i]));
        snprintf(file, sizeof file, "siglip-%s/%s.json", name, files[i]);
        write_temp_file(file, text, strlen(text));
        free(text);
    }
    return dir;
}

static void test_siglip_decode(void **state) {
    (void)state;
    if (!spm_library()) {
        print_message("SKIP %s: this vit was built without SentencePiece\n", __func__);
        skip();
    }
    cJSON *golden = read_json(TEST_DATA "/spm-micro/golden.json");
    cJSON *cases = read_json(TEST_DATA "/spm-micro/decode.json");
    int checked = 0;
    const cJSON *config;
    cJSON_ArrayForEach(config, cJSON_GetObjectItemCaseSensitive(golden, "configs")) {
        text_tokenizer *t = load_or_fail(siglip_folder(config->string, config));
        assert_string_equal(text_tokenizer_class(t), "SiglipTokenizer");
        const cJSON *c;
        cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(cases, "cases")) {
            if (strcmp(cJSON_GetObjectItemCaseSensitive(c, "config")->valuestring,
                       config->string) != 0)
                continue;
            expect_case(t, c);
            checked++;
        }
        text_tokenizer_free(t);
    }
    print_message("SiglipTokenizer: %d decodings as the reference\n", checked);
    assert_int_equal(checked, 48);
    cJSON_Delete(cases);
    cJSON_Delete(golden);
}

/* A WordPiece folder: [PAD] 0, [UNK] 1, [CLS] 2, [SEP] 3, [MASK] 4, then the words. */
static const char *wordpiece_folder(const char *name, const char *config) {
    static const char vocab[] = "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n"
                                "hello\nworld\n##s\n,\nit\n'\ns\n.\nn\n##'t\n!\n";
    static char dir[4200];
    snprintf(dir, sizeof dir, "%s/%s", test_tmpdir(), name);
    mkdir(dir, 0700);
    char file[4300];
    snprintf(file, sizeof file, "%s/vocab.txt", name);
    write_temp_file(file, vocab, sizeof vocab - 1);
    snprintf(file, sizeof file, "%s/tokenizer_config.json", name);
    write_temp_file(file, config, strlen(config));
    return dir;
}

static void expect_decoded(const text_tokenizer *t, const int32_t *ids, int n, bool skip,
                           const char *want) {
    char got[MAX_TEXT];
    vit_error err = {0};
    const int len = text_tokenizer_decode(t, ids, n, skip, got, sizeof got, &err);
    if (len < 0) fail_msg("%s", err.msg);
    assert_int_equal(len, (int)strlen(want));
    assert_string_equal(got, want);
}

static void test_wordpiece_decode(void **state) {
    (void)state;
    /* [CLS] hello world ##s , it ' s . [SEP] [PAD] */
    const int32_t ids[] = {2, 5, 6, 7, 8, 9, 10, 11, 12, 3, 0};
    const int n = sizeof ids / sizeof *ids;
    /* BertTokenizer's own default: the clean-up on */
    text_tokenizer *t = load_or_fail(wordpiece_folder("wp", "{\"do_lower_case\": true}"));
    assert_string_equal(text_tokenizer_class(t), "BertTokenizer");
    /* "hello world ##s , it ' s ." -> "hello worlds , it ' s ." -> " ." " ," " ' " cleaned */
    expect_decoded(t, ids, n, true, "hello worlds, it's.");
    expect_decoded(t, ids, n, false, "[CLS] hello worlds, it's. [SEP] [PAD]");
    /* " n't" and " !" cleaned; a leading "##s" keeps its "##" */
    const int32_t nt[] = {7, 13, 14, 15};
    expect_decoded(t, nt, 4, true, "##sn't!");
    const int32_t bad[] = {5, 16};
    vit_error err = {0};
    assert_int_equal(text_tokenizer_decode(t, bad, 2, true, NULL, 0, &err), -1);
    assert_non_null(strstr(err.msg, "16 is out of range"));
    text_tokenizer_free(t);
    t = load_or_fail(wordpiece_folder("wp-raw", "{\"clean_up_tokenization_spaces\": false}"));
    expect_decoded(t, ids, n, true, "hello worlds , it ' s .");
    expect_decoded(t, nt, 4, true, "##s n't !");
    expect_decoded(t, ids, 0, true, "");
    text_tokenizer_free(t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_clip_decode),
        cmocka_unit_test(test_siglip_decode),
        cmocka_unit_test(test_wordpiece_decode),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
