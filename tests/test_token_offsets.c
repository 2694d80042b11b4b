/* Token offsets (text_tokenizer_encode_offsets) against the tokenizers library's own
 * encoding.offsets: tools/tokenizer_json_reference.mjs writes them for the bert-wordpiece and
 * roberta-bpe fixtures' valid UTF-8 texts (437 of its 441: SST-2 sentences, accents, CJK, emoji,
 * control characters, white-space runs, special tokens glued to words) in code points, as the npm
 * binding gives them; vit's are bytes, converted here by counting the code points before each.
 * The same for vocab.txt WordPiece (cased and uncased) against the library running the
 * tokenizer.json transformers' BertConverter makes of it (tools/wordpiece_offsets_reference.mjs).
 * Equality is exact. */
#include "testutil.h"

#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/text_tokenizer.h"
#include "vit/base/base64.h"

#define FIXTURES TEST_DATA "/tokenizer-json"
#define ROOM     4096

static text_tokenizer *load(const char *dir) {
    text_tokenizer *t = NULL;
    vit_error err = {0};
    if (text_tokenizer_load(dir, &t, &err) != 0) fail_msg("%s: %s", dir, err.msg);
    return t;
}

/* A byte offset as the bindings convert the library's own (bytes) to characters
 * (BytesToCharOffsetConverter): the character the byte is in, the end of the text past the
 * last; SIZE_MAX outside the text. A byte inside a character is legitimate: trim_offsets takes
 * a prepended space's one byte off a first token's multi-byte character. */
static size_t chars_before(const char *s, size_t n, int32_t byte) {
    if (byte < 0 || (size_t)byte > n) return SIZE_MAX;
    size_t k = 0;
    for (int32_t i = 0; i <= byte && (size_t)i < n; i++) k += ((uint8_t)s[i] & 0xC0) != 0x80;
    return (size_t)byte == n ? k : k - 1;
}

static char *case_text(const cJSON *c, size_t *n) {
    const char *b64 = cJSON_GetObjectItem(c, "text")->valuestring;
    const size_t len = strlen(b64);
    char *text = malloc(len / 4 * 3 + 3);
    size_t where;
    const long long m = base64_decode(b64, len, text, &where);
    assert_true(m >= 0);
    *n = (size_t)m;
    return text;
}

/* One case encoded with room for max_len ids: ids and offsets equal the golden's first ones
 * (its last, [SEP], at the end); returns whether they do (printing the first difference). */
static bool check_case(const text_tokenizer *t, const cJSON *c, int max_len) {
    size_t n;
    char *text = case_text(c, &n);
    int32_t ids[ROOM], starts[ROOM], ends[ROOM];
    vit_error err = {0};
    const int count =
        text_tokenizer_encode_offsets(t, NULL, text, n, max_len, ids, starts, ends, &err);
    if (count < 0) fail_msg("\"%.*s\": %s", (int)n, text, err.msg);
    const cJSON *want_ids = cJSON_GetObjectItem(c, "ids"),
                *want = cJSON_GetObjectItem(c, "offsets");
    const int total = cJSON_GetArraySize(want_ids);
    bool same = count == (total < max_len ? total : max_len);
    for (int i = 0; same && i < count; i++) {
        const int g = i == count - 1 ? total - 1 : i; /* the template's [SEP] stays last */
        const cJSON *o = cJSON_GetArrayItem(want, g);
        same = ids[i] == (int32_t)cJSON_GetArrayItem(want_ids, g)->valuedouble &&
               chars_before(text, n, starts[i]) == (size_t)cJSON_GetArrayItem(o, 0)->valuedouble &&
               chars_before(text, n, ends[i]) == (size_t)cJSON_GetArrayItem(o, 1)->valuedouble;
        if (!same)
            print_message("\"%.*s\" token %d: id %d bytes [%d, %d), want id %d chars %s\n", (int)n,
                          text, i, ids[i], starts[i], ends[i],
                          (int)cJSON_GetArrayItem(want_ids, g)->valuedouble,
                          cJSON_PrintUnformatted(o));
    }
    if (count != (total < max_len ? total : max_len))
        print_message("\"%.*s\": %d ids, want %d\n", (int)n, text, count, total);
    free(text);
    return same;
}

static cJSON *load_offsets_file(const char *path) {
    uint8_t *text = read_whole_file(path, NULL);
    assert_non_null(text);
    cJSON *root = cJSON_Parse((const char *)text);
    free(text);
    assert_non_null(root);
    return root;
}

static cJSON *load_offsets(const char *name) {
    char path[512];
    snprintf(path, sizeof path, FIXTURES "/%s/offsets.json", name);
    return load_offsets_file(path);
}

/* Every case of golden's offsets whole, then cut to 8 ids (the template's first token, the first
 * six with their offsets, its last at (0, 0)), through dir's tokenizer. */
static void check_dir(const char *dir, const char *golden, const char *name) {
    text_tokenizer *t = load(dir);
    cJSON *root = load_offsets(golden);
    int differ = 0, cut = 0, cases = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(root, "cases")) {
        differ += !check_case(t, c, ROOM), cut += !check_case(t, c, 8);
        cases++;
    }
    print_message("%s: %d of %d texts' offsets differ (%d cut to 8)\n", name, differ, cases, cut);
    assert_int_equal(cases, 437);
    assert_int_equal(differ, 0);
    assert_int_equal(cut, 0);
    cJSON_Delete(root);
    text_tokenizer_free(t);
}

static void check_fixture(const char *name) {
    char dir[512];
    snprintf(dir, sizeof dir, FIXTURES "/%s", name);
    check_dir(dir, name, name);
}

static void test_bert_offsets(void **state) {
    (void)state;
    check_fixture("bert-wordpiece");
}

/* Byte-level BPE with RobertaProcessing's trim_offsets (spaces left out of a token's offsets),
 * <mask> with lstrip. */
static void test_roberta_offsets(void **state) {
    (void)state;
    check_fixture("roberta-bpe");
}

/* vocab.txt, through the tokenizer.json BertConverter makes of it (BertTokenizerFast's): against
 * tools/wordpiece_offsets_reference.mjs's, which builds that file in the library itself. */
static void test_vocab_txt_offsets(void **state) {
    (void)state;
    check_fixture("vocab-uncased");
    check_fixture("vocab-cased");
}

/* ByteLevel with add_prefix_space (the space it puts in front aligned with the first character)
 * with and without trim_offsets (which keeps that one space of the first token), against
 * tools/byte_level_offsets_reference.mjs's. */
static void test_prefix_space_offsets(void **state) {
    (void)state;
    check_fixture("roberta-prefix");
    check_fixture("roberta-prefix-untrimmed");
}

/* RobertaTokenizer's vocab.json and merges.txt, through the tokenizer.json RobertaConverter makes
 * of them (RobertaTokenizerFast's), with and without add_prefix_space: against
 * tools/vocab_json_offsets_reference.mjs's, which builds that file in the library itself. */
static void test_vocab_json_offsets(void **state) {
    (void)state;
    check_fixture("vocab-json-roberta");
    check_fixture("vocab-json-roberta-prefix");
}

/* XLM-R's tokenizer.json (Replace, Precompiled and Replace normalizers followed character by
 * character, Metaspace prepending, Unigram): against tools/unigram_offsets_reference.mjs's. */
static void test_unigram_offsets(void **state) {
    (void)state;
    check_fixture("xlmr-unigram");
}

/* An XLMRobertaTokenizer folder's Unigram sentencepiece.bpe.model through the tokenizer.json
 * XLMRobertaConverter makes of it (XLMRobertaTokenizerFast's): against
 * tools/spm_offsets_reference.mjs's, which builds that file in the library itself. */
static void test_sentencepiece_model_offsets(void **state) {
    (void)state;
    check_fixture("xlmr-unigram-model");
}

static void expect_refusal(const char *dir, const char *text, size_t n, const char *says) {
    text_tokenizer *t = load(dir);
    int32_t ids[64], starts[64], ends[64];
    vit_error err = {0};
    assert_int_equal(text_tokenizer_encode_offsets(t, NULL, text, n, 64, ids, starts, ends, &err),
                     -1);
    if (!strstr(err.msg, says)) fail_msg("%s: \"%s\" does not say \"%s\"", dir, err.msg, says);
    text_tokenizer_free(t);
}

static void test_refusals(void **state) {
    (void)state;
    expect_refusal(FIXTURES "/unigram-first", "hello", 5,
                   "offsets are computed for BERT's tokenizer.json (BertNormalizer");
    expect_refusal(FIXTURES "/bert-wordpiece",
                   "a\xff"
                   "b",
                   3, "offsets need valid UTF-8 (byte 1");
    expect_refusal(TEST_DATA "/spm-micro", "hello", 5,
                   "offsets are not computed for the SentencePiece tokenizer (SiglipTokenizer)");
    /* a BPE SentencePiece model converts to BPE with extracted merges, not done */
    expect_refusal(TEST_DATA "/xlmr-micro", "hello", 5,
                   "offsets are computed for a Unigram SentencePiece model (XLM-R's), not for "
                   "this BPE one");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bert_offsets),
        cmocka_unit_test(test_roberta_offsets),
        cmocka_unit_test(test_vocab_txt_offsets),
        cmocka_unit_test(test_prefix_space_offsets),
        cmocka_unit_test(test_vocab_json_offsets),
        cmocka_unit_test(test_unigram_offsets),
        cmocka_unit_test(test_sentencepiece_model_offsets),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
