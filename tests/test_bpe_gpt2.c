/* GPT2Tokenizer, RobertaTokenizer (text/byte_level.h) and XLMRobertaTokenizer (text/xlmr_text.h)
 * through the one interface (text/text_tokenizer.h), against tools/bpe_reference.py's goldens
 * (tests/data/gpt2-micro, roberta-micro, xlmr-micro: the slow classes written there from
 * transformers' code): every encoding (hard texts, invalid UTF-8, special tokens written in the
 * text, three lengths) and every decoding (with and without the special tokens, bytes split
 * mid-character, the clean-up, ids past the vocabulary) of each configuration, exactly; GPT-2's
 * decode(encode(text)) giving the text back; the classes chosen by tokenizer_class and by the
 * files; and bad files, each refused in one line naming the file. XLM-R needs a build with
 * libsentencepiece: without one its tests check that loading is refused in one line. */
#include "tests/testutil.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "text/byte_level.h"
#include "text/sentencepiece.h"
#include "text/text_tokenizer.h"

#define MAX_IDS  4096
#define MAX_TEXT 65536

static cJSON *read_json(const char *path) {
    char *text = (char *)read_whole_file(path, NULL);
    if (!text) fail_msg("%s: cannot read", path);
    cJSON *root = cJSON_Parse(text);
    free(text);
    if (!root) fail_msg("%s: not JSON", path);
    return root;
}

static const cJSON *item(const cJSON *obj, const char *key) {
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!it) fail_msg("golden has no '%s'", key);
    return it;
}

/* Hex digits as the bytes they spell (NUL-terminated; *len without it). */
static char *hex_bytes(const char *hex, size_t *len) {
    const size_t n = strlen(hex) / 2;
    char *out = malloc(n + 1);
    assert_non_null(out);
    for (size_t i = 0; i < n; i++) {
        unsigned b;
        sscanf(hex + 2 * i, "%2x", &b);
        out[i] = (char)b;
    }
    out[n] = '\0';
    *len = n;
    return out;
}

static void copy_file(const char *from, const char *to_name) {
    size_t size;
    uint8_t *bytes = read_whole_file(from, &size);
    if (!bytes) fail_msg("%s: cannot read", from);
    write_temp_file(to_name, bytes, size);
    free(bytes);
}

static void write_json_file(const char *name, const cJSON *value) {
    char *text = cJSON_Print(value);
    write_temp_file(name, text, strlen(text));
    free(text);
}

/* A folder test_tmpdir()/name with the fixture's model files and one configuration's JSON
 * files; returns its path. */
static const char *config_folder(const char *fixture, const char *const *model_files,
                                 const char *name, const cJSON *config) {
    static char dir[4200];
    snprintf(dir, sizeof dir, "%s/%s", test_tmpdir(), name);
    mkdir(dir, 0700);
    char from[4200], to[4200];
    for (const char *const *f = model_files; *f; f++) {
        snprintf(from, sizeof from, "%s/%s", fixture, *f);
        snprintf(to, sizeof to, "%s/%s", name, *f);
        copy_file(from, to);
    }
    snprintf(to, sizeof to, "%s/tokenizer_config.json", name);
    write_json_file(to, item(config, "tokenizer_config"));
    snprintf(to, sizeof to, "%s/special_tokens_map.json", name);
    write_json_file(to, item(config, "special_tokens_map"));
    return dir;
}

static text_tokenizer *load_or_fail(const char *dir) {
    text_tokenizer *t = NULL;
    vit_error err = {0};
    if (text_tokenizer_load(dir, &t, &err) != 0)
        fail_msg("text_tokenizer_load(%s): %s", dir, err.msg);
    return t;
}

static void expect_encoding(text_tokenizer *t, const cJSON *c) {
    size_t len;
    char *text = hex_bytes(item(c, "hex")->valuestring, &len);
    const cJSON *max = item(c, "max_length"), *want = item(c, "ids");
    const int max_len = cJSON_IsNumber(max) ? max->valueint : MAX_IDS;
    int32_t ids[MAX_IDS];
    vit_error err = {0};
    text_tokenizer_scratch *s = text_tokenizer_scratch_create(t);
    const int n = text_tokenizer_encode(t, s, text, len, max_len, ids, &err);
    text_tokenizer_scratch_free(s);
    const char *shown = item(c, "text")->valuestring;
    if (n < 0) fail_msg("\"%s\": %s", shown, err.msg);
    if (n != cJSON_GetArraySize(want))
        fail_msg("\"%s\" (max_length %d): %d ids, the reference gives %d", shown, max_len, n,
                 cJSON_GetArraySize(want));
    for (int i = 0; i < n; i++)
        if (ids[i] != cJSON_GetArrayItem(want, i)->valueint)
            fail_msg("\"%s\" (max_length %d): id %d is %d, the reference gives %d", shown, max_len,
                     i, ids[i], cJSON_GetArrayItem(want, i)->valueint);
    free(text);
}

static void expect_decoding(text_tokenizer *t, const cJSON *c) {
    const cJSON *list = item(c, "ids");
    const int n = cJSON_GetArraySize(list);
    int32_t *ids = malloc(((size_t)n + 1) * sizeof *ids);
    assert_non_null(ids);
    for (int i = 0; i < n; i++) ids[i] = cJSON_GetArrayItem(list, i)->valueint;
    const bool skip = cJSON_IsTrue(item(c, "skip_special_tokens"));
    size_t want_len;
    char *want = hex_bytes(item(c, "hex")->valuestring, &want_len);
    static char got[MAX_TEXT];
    vit_error err = {0};
    const int len = text_tokenizer_decode(t, ids, n, skip, got, sizeof got, &err);
    if (len < 0) fail_msg("decode of %d ids: %s", n, err.msg);
    if ((size_t)len != want_len || memcmp(got, want, want_len) != 0)
        fail_msg("decode of %d ids (first %d, skip %d): \"%s\", the reference gives \"%s\"", n,
                 n ? ids[0] : -1, skip, got, want);
    free(want), free(ids);
}

/* Every configuration of fixture/golden.json; returns the number of cases checked. */
static int run_golden(const char *fixture, const char *const *model_files, const char *kind) {
    char path[4200];
    snprintf(path, sizeof path, "%s/golden.json", fixture);
    cJSON *golden = read_json(path);
    int cases = 0;
    const cJSON *config;
    cJSON_ArrayForEach(config, item(golden, "configs")) {
        text_tokenizer *t =
            load_or_fail(config_folder(fixture, model_files, config->string, config));
        assert_string_equal(text_tokenizer_kind(t), kind);
        const cJSON *c;
        cJSON_ArrayForEach(c, item(golden, "encode")) {
            if (strcmp(item(c, "config")->valuestring, config->string) != 0) continue;
            expect_encoding(t, c);
            cases++;
        }
        cJSON_ArrayForEach(c, item(golden, "decode")) {
            if (strcmp(item(c, "config")->valuestring, config->string) != 0) continue;
            expect_decoding(t, c);
            cases++;
        }
        text_tokenizer_free(t);
    }
    cJSON_Delete(golden);
    return cases;
}

static const char *const byte_level_files[] = {"vocab.json", "merges.txt", NULL};

static void test_gpt2_golden(void **state) {
    (void)state;
    const int cases = run_golden(TEST_DATA "/gpt2-micro", byte_level_files, "byte-level BPE");
    print_message("GPT2Tokenizer: %d encodings and decodings as the reference\n", cases);
    assert_true(cases > 800);
}

static void test_roberta_golden(void **state) {
    (void)state;
    const int cases = run_golden(TEST_DATA "/roberta-micro", byte_level_files, "byte-level BPE");
    print_message("RobertaTokenizer: %d encodings and decodings as the reference\n", cases);
    assert_true(cases > 800);
}

#define REQUIRE_SENTENCEPIECE()                                                                    \
    do {                                                                                           \
        if (!spm_library()) {                                                                      \
            print_message("SKIP %s: this vit was built without SentencePiece\n", __func__);        \
            skip();                                                                                \
        }                                                                                          \
    } while (0)

static void test_xlmr_golden(void **state) {
    (void)state;
    REQUIRE_SENTENCEPIECE();
    static const char *const files[] = {"sentencepiece.bpe.model", NULL};
    const int cases = run_golden(TEST_DATA "/xlmr-micro", files, "SentencePiece");
    print_message("XLMRobertaTokenizer: %d encodings and decodings as the reference\n", cases);
    assert_true(cases > 500);
}

/* Without libsentencepiece, an XLM-R folder is refused in one line naming its model. */
static void test_xlmr_without_library(void **state) {
    (void)state;
    if (spm_library()) skip();
    text_tokenizer *t = NULL;
    vit_error err = {0};
    assert_int_equal(text_tokenizer_load(TEST_DATA "/xlmr-micro", &t, &err), -1);
    assert_non_null(strstr(err.msg, "sentencepiece.bpe.model"));
    assert_non_null(strstr(err.msg, "without SentencePiece"));
    assert_null(strchr(err.msg, '\n'));
}

/* Byte-level BPE loses nothing: GPT-2 (no prefix space, no clean-up) decodes its own ids back to
 * the very text, special tokens written in it included, for every golden text. */
static void test_gpt2_round_trip(void **state) {
    (void)state;
    text_tokenizer *t = load_or_fail(TEST_DATA "/gpt2-micro");
    assert_string_equal(text_tokenizer_class(t), "GPT2Tokenizer");
    cJSON *golden = read_json(TEST_DATA "/gpt2-micro/golden.json");
    int texts = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, item(golden, "encode")) {
        if (strcmp(item(c, "config")->valuestring, "gpt2") || !cJSON_IsNull(item(c, "max_length")))
            continue;
        const char *text = item(c, "text")->valuestring; /* invalid UTF-8 already replaced */
        int32_t ids[MAX_IDS];
        vit_error err = {0};
        const int n = text_tokenizer_encode(t, NULL, text, strlen(text), MAX_IDS, ids, &err);
        assert_true(n >= 0);
        static char back[MAX_TEXT];
        assert_int_equal(text_tokenizer_decode(t, ids, n, false, back, sizeof back, &err),
                         (int)strlen(text));
        assert_string_equal(back, text);
        texts++;
    }
    assert_true(texts > 40);
    cJSON_Delete(golden);
    text_tokenizer_free(t);
}

/* What the interface says of each fixture: class, special ids, lengths, pieces; decode cut to a
 * small buffer returns the whole length; an id out of range is an error. */
static void test_interface(void **state) {
    (void)state;
    text_tokenizer *t = load_or_fail(TEST_DATA "/roberta-micro");
    assert_string_equal(text_tokenizer_class(t), "RobertaTokenizer");
    assert_int_equal(text_tokenizer_bos_id(t), 0);
    assert_int_equal(text_tokenizer_pad_id(t), 1);
    assert_int_equal(text_tokenizer_eos_id(t), 2);
    assert_int_equal(text_tokenizer_max_len(t), 512);
    const int vocab = text_tokenizer_vocab_size(t);
    assert_string_equal(text_tokenizer_piece(t, vocab - 1), "<mask>");
    assert_null(text_tokenizer_piece(t, vocab));
    int32_t ids[64];
    vit_error err = {0};
    const int n = text_tokenizer_encode(t, NULL, "Hello world", 11, 64, ids, &err);
    char small[6];
    assert_int_equal(text_tokenizer_decode(t, ids, n, true, small, sizeof small, &err), 11);
    assert_string_equal(small, "Hello");
    assert_int_equal(text_tokenizer_decode(t, ids, n, true, NULL, 0, &err), 11);
    ids[1] = vocab;
    assert_int_equal(text_tokenizer_decode(t, ids, n, true, small, sizeof small, &err), -1);
    assert_non_null(strstr(err.msg, "out of range"));
    assert_non_null(strstr(err.msg, "vocab.json"));
    ids[1] = -1;
    assert_int_equal(text_tokenizer_decode(t, ids, n, true, small, sizeof small, &err), -1);
    /* max_len 2 leaves <s> and </s> */
    assert_int_equal(text_tokenizer_encode(t, NULL, "Hello world", 11, 2, ids, &err), 2);
    assert_int_equal(ids[0], 0);
    assert_int_equal(ids[1], 2);
    text_tokenizer_free(t);
    t = load_or_fail(TEST_DATA "/gpt2-micro");
    assert_int_equal(text_tokenizer_bos_id(t), text_tokenizer_eos_id(t));
    assert_int_equal(text_tokenizer_pad_id(t), text_tokenizer_eos_id(t)); /* no pad token */
    assert_string_equal(text_tokenizer_piece(t, text_tokenizer_eos_id(t)), "<|endoftext|>");
    text_tokenizer_free(t);
    t = load_or_fail(TEST_DATA "/clip-micro");
    assert_string_equal(text_tokenizer_kind(t), "byte-level BPE");
    assert_string_equal(text_tokenizer_class(t), "CLIPTokenizer");
    assert_string_equal(text_tokenizer_piece(t, text_tokenizer_bos_id(t)), "<|startoftext|>");
    text_tokenizer_free(t);
    t = load_or_fail(shared_path("models/bert-sst2-tiny"));
    assert_string_equal(text_tokenizer_kind(t), "WordPiece");
    assert_string_equal(text_tokenizer_class(t), "BertTokenizer");
    assert_int_equal(text_tokenizer_bos_id(t), -1); /* BertTokenizer has neither */
    assert_int_equal(text_tokenizer_eos_id(t), -1);
    assert_string_equal(text_tokenizer_piece(t, text_tokenizer_pad_id(t)), "[PAD]");
    assert_int_equal(text_tokenizer_max_len(t), 128);
    assert_null(text_tokenizer_piece(t, text_tokenizer_vocab_size(t)));
    text_tokenizer_free(t);
    if (!spm_library()) return;
    t = load_or_fail(TEST_DATA "/xlmr-micro");
    assert_string_equal(text_tokenizer_kind(t), "SentencePiece");
    assert_string_equal(text_tokenizer_class(t), "XLMRobertaTokenizer");
    assert_int_equal(text_tokenizer_bos_id(t), 0); /* fairseq's ids */
    assert_int_equal(text_tokenizer_pad_id(t), 1);
    assert_int_equal(text_tokenizer_eos_id(t), 2);
    assert_string_equal(text_tokenizer_piece(t, text_tokenizer_vocab_size(t) - 1), "<mask>");
    assert_null(text_tokenizer_piece(t, text_tokenizer_vocab_size(t)));
    text_tokenizer_free(t);
    t = load_or_fail(TEST_DATA "/siglip-micro");
    assert_string_equal(text_tokenizer_class(t), "SiglipTokenizer");
    assert_int_equal(text_tokenizer_bos_id(t), -1); /* SiglipTokenizer has none */
    assert_string_equal(text_tokenizer_piece(t, text_tokenizer_eos_id(t)), "</s>");
    assert_int_equal(text_tokenizer_pad_id(t), text_tokenizer_eos_id(t)); /* pad_token "</s>" */
    assert_int_equal(text_tokenizer_max_len(t), 16);
    assert_null(text_tokenizer_piece(t, text_tokenizer_vocab_size(t)));
    text_tokenizer_free(t);
}

/* A folder of gpt2-micro's vocabulary with the given tokenizer_config.json (NULL: none). */
static const char *gpt2_folder(const char *name, const char *config) {
    static char dir[4200];
    snprintf(dir, sizeof dir, "%s/%s", test_tmpdir(), name);
    mkdir(dir, 0700);
    char to[4200];
    for (const char *const *f = byte_level_files; *f; f++) {
        char from[4200];
        snprintf(from, sizeof from, TEST_DATA "/gpt2-micro/%s", *f);
        snprintf(to, sizeof to, "%s/%s", name, *f);
        copy_file(from, to);
    }
    snprintf(to, sizeof to, "%s/tokenizer_config.json", name);
    if (config) write_temp_file(to, config, strlen(config));
    return dir;
}

static void expect_load_error(const char *dir, const char *file, const char *want) {
    text_tokenizer *t = NULL;
    vit_error err = {0};
    assert_int_equal(text_tokenizer_load(dir, &t, &err), -1);
    assert_null(t);
    if (!strstr(err.msg, want) || !strstr(err.msg, file) || strchr(err.msg, '\n'))
        fail_msg("error \"%s\" does not say \"%s\" on one line naming %s", err.msg, want, file);
}

static void test_bad_files(void **state) {
    (void)state;
    const char *dir = gpt2_folder("bad-vocab", NULL);
    write_temp_file("bad-vocab/vocab.json", "[1, 2]", 6);
    expect_load_error(dir, "vocab.json", "not a JSON object");
    dir = gpt2_folder("bad-merges", NULL);
    write_temp_file("bad-merges/merges.txt", "#version: 0.2\nq \xe2\x98\x83\n", 20);
    expect_load_error(dir, "vocab.json", "merges symbols not in vocab.json");
    dir = gpt2_folder("no-byte", NULL);
    write_temp_file("no-byte/vocab.json", "{\"a\": 0}", 8);
    write_temp_file("no-byte/merges.txt", "#version: 0.2\n", 14);
    expect_load_error(dir, "vocab.json", "symbol of byte");
    expect_load_error(gpt2_folder("bad-class", "{\"tokenizer_class\": \"LlamaTokenizer\"}"),
                      "tokenizer_config.json", "LlamaTokenizer");
    expect_load_error(gpt2_folder("bad-errors", "{\"errors\": \"strict\"}"),
                      "tokenizer_config.json", "errors");
    expect_load_error(gpt2_folder("bad-json", "{\"tokenizer_class\": "), "tokenizer_config.json",
                      "JSON object");
    expect_load_error(gpt2_folder("single-word",
                                  "{\"added_tokens_decoder\": {\"300\": {\"content\": \"<x>\", "
                                  "\"single_word\": true, \"special\": true}}}"),
                      "tokenizer_config.json", "single_word");
    expect_load_error(gpt2_folder("plain-added", "{\"added_tokens_decoder\": {\"300\": "
                                                 "{\"content\": \"<x>\", \"special\": false}}}"),
                      "tokenizer_config.json", "not a special token");
    expect_load_error(gpt2_folder("split", "{\"split_special_tokens\": true}"),
                      "tokenizer_config.json", "split_special_tokens");
    expect_load_error(gpt2_folder("left", "{\"truncation_side\": \"left\"}"),
                      "tokenizer_config.json", "truncation_side");
    expect_load_error(gpt2_folder("space-token", "{\"pad_token\": \" <p>\"}"),
                      "tokenizer_config.json", "white space");
    expect_load_error(gpt2_folder("no-bos", "{\"add_bos_token\": true, \"bos_token\": null}"),
                      "tokenizer_config.json", "bos_token");
    dir = gpt2_folder("no-merges", NULL);
    char path[4200];
    snprintf(path, sizeof path, "%s/merges.txt", dir);
    remove(path);
    expect_load_error(dir, dir, "no tokenizer files");
}

/* Without tokenizer_class the vocabulary tells the class; a "Fast" class is its slow twin. */
static void test_class_choice(void **state) {
    (void)state;
    text_tokenizer *t = load_or_fail(gpt2_folder("no-config", NULL));
    assert_string_equal(text_tokenizer_class(t), "GPT2Tokenizer");
    text_tokenizer_free(t);
    t = load_or_fail(gpt2_folder("fast", "{\"tokenizer_class\": \"RobertaTokenizerFast\", "
                                         "\"cls_token\": \"<|endoftext|>\", \"sep_token\": "
                                         "\"<|endoftext|>\"}"));
    assert_string_equal(text_tokenizer_class(t), "RobertaTokenizer");
    text_tokenizer_free(t);
    t = load_or_fail(TEST_DATA "/clip-micro");
    assert_string_equal(text_tokenizer_class(t), "CLIPTokenizer");
    text_tokenizer_free(t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gpt2_golden),     cmocka_unit_test(test_roberta_golden),
        cmocka_unit_test(test_xlmr_golden),     cmocka_unit_test(test_xlmr_without_library),
        cmocka_unit_test(test_gpt2_round_trip), cmocka_unit_test(test_interface),
        cmocka_unit_test(test_bad_files),       cmocka_unit_test(test_class_choice),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
