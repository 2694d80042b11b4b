/* CLIP's byte-level BPE (text/bpe.h): the 26 texts of ../shared/data/clip/tokenizer-golden.json
 * against the ids OpenAI's tokenizer gives them (whole, and cut to CLIP's 77-token context), and
 * hand-worked cases on a vocabulary of a few merges written at test time, independent of
 * ../shared: merge order, normalisation, pieces, special tokens, decoding and bad files. */
#include "tests/testutil.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "text/bpe.h"
#include "text/byte_level.h"

#define MAX_IDS 512

static bpe *load_or_fail(const char *dir) {
    bpe *b = NULL;
    vit_error err = {0};
    if (bpe_load(dir, BPE_CLIP, &b, &err) != 0) fail_msg("bpe_load(%s): %s", dir, err.msg);
    return b;
}

static int encode(const bpe *b, const char *text, int max_len, int32_t *ids) {
    vit_error err = {0};
    const int n = bpe_encode(b, text, strlen(text), max_len, ids, &err);
    if (n < 0) fail_msg("bpe_encode(\"%s\"): %s", text, err.msg);
    return n;
}

static void expect_ids(const char *what, const int32_t *got, int n, const cJSON *want) {
    if (n != cJSON_GetArraySize(want))
        fail_msg("%s: %d ids, OpenAI's tokenizer gives %d", what, n, cJSON_GetArraySize(want));
    for (int i = 0; i < n; i++)
        if (got[i] != cJSON_GetArrayItem(want, i)->valueint)
            fail_msg("%s: id %d is %d, OpenAI's tokenizer gives %d", what, i, got[i],
                     cJSON_GetArrayItem(want, i)->valueint);
}

static void test_clip_golden(void **state) {
    (void)state;
    REQUIRE_SHARED("data/clip/tokenizer-golden.json");
    bpe *b = load_or_fail(shared_path("data/clip"));
    byte_level *clip = NULL;
    vit_error err = {0};
    if (byte_level_load(shared_path("data/clip"), &clip, &err) != 0) fail_msg("%s", err.msg);
    size_t size;
    char *json = (char *)read_whole_file(shared_path("data/clip/tokenizer-golden.json"), &size);
    cJSON *golden = cJSON_Parse(json);
    assert_non_null(golden);
    assert_int_equal(bpe_vocab_size(b), 49408);
    assert_int_equal(bpe_bos_id(b), cJSON_GetObjectItem(golden, "bos")->valueint);
    assert_int_equal(bpe_eos_id(b), cJSON_GetObjectItem(golden, "eos")->valueint);
    const cJSON *c;
    int cases = 0;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(golden, "cases")) {
        const char *text = cJSON_GetObjectItem(c, "text")->valuestring;
        int32_t ids[MAX_IDS];
        int n = encode(b, text, MAX_IDS, ids);
        expect_ids(text, ids, n, cJSON_GetObjectItem(c, "ids"));
        /* each piece as OpenAI's tokenizer spells it */
        const cJSON *tokens = cJSON_GetObjectItem(c, "tokens");
        for (int i = 1; i + 1 < n; i++)
            assert_string_equal(bpe_piece(b, ids[i]),
                                cJSON_GetArrayItem(tokens, i - 1)->valuestring);
        /* decoded: OpenAI's text but for its trailing space, which Hugging Face strips */
        char decoded[4096], want[4096];
        snprintf(want, sizeof want, "%s", cJSON_GetObjectItem(c, "decoded")->valuestring);
        for (size_t k = strlen(want); k > 0 && want[k - 1] == ' '; k--) want[k - 1] = '\0';
        if (!strstr(text, "<|")) { /* decode leaves special tokens out; OpenAI's keeps them */
            assert_true(byte_level_decode(clip, ids, n, true, decoded, sizeof decoded, &err) >= 0);
            assert_string_equal(decoded, want);
        }
        n = encode(b, text, 77, ids);
        expect_ids(text, ids, n, cJSON_GetObjectItem(c, "ids_77"));
        cases++;
    }
    print_message("CLIP tokenizer: %d golden texts give OpenAI's ids, pieces and decoded text\n",
                  cases);
    assert_int_equal(cases, 26);
    cJSON_Delete(golden);
    free(json);
    bpe_free(b);
    byte_level_free(clip);
}

/* A harder set than OpenAI's 26 (NFC, Unicode white space, per-character lower case, scripts,
 * numbers, special tokens in capitals, long texts cut to 77) against tools/clip_reference.py's
 * Python tokenizer written from CLIPTokenizerFast's normaliser and pattern, on CLIP's real
 * vocabulary (../shared). */
static void test_clip_hard_texts(void **state) {
    (void)state;
    REQUIRE_SHARED("data/clip/vocab.json");
    bpe *b = load_or_fail(shared_path("data/clip"));
    char *json = (char *)read_whole_file("tests/data/clip-tokenizer-hard.json", NULL);
    assert_non_null(json);
    cJSON *golden = cJSON_Parse(json);
    const cJSON *c;
    int cases = 0;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(golden, "cases")) {
        const char *text = cJSON_GetObjectItem(c, "text")->valuestring;
        int32_t ids[MAX_IDS];
        const int n = encode(b, text, 77, ids);
        expect_ids(text, ids, n, cJSON_GetObjectItem(c, "ids_77"));
        cases++;
    }
    print_message("CLIP tokenizer: %d harder texts give the reference's ids\n", cases);
    assert_true(cases >= 17);
    cJSON_Delete(golden);
    free(json);
    bpe_free(b);
}

/* The micro CLIP models' own vocabularies (tests/data, written by tools/clip_reference.py) give
 * the ids its Python tokenizer gave the golden texts, cut to the models' 16 and 20 positions. */
static void test_micro_vocabularies(void **state) {
    (void)state;
    const char *models[] = {"tests/data/clip-micro", "tests/data/clip-micro-gelu"};
    const int positions[] = {16, 20};
    for (int m = 0; m < 2; m++) {
        bpe *b = load_or_fail(models[m]);
        char path[256];
        snprintf(path, sizeof path, "%s/golden.json", models[m]);
        char *json = (char *)read_whole_file(path, NULL);
        assert_non_null(json);
        cJSON *golden = cJSON_Parse(json);
        const cJSON *texts = cJSON_GetObjectItem(golden, "texts");
        const cJSON *ids = cJSON_GetObjectItem(golden, "ids");
        assert_true(cJSON_GetArraySize(texts) >= 5);
        for (int i = 0; i < cJSON_GetArraySize(texts); i++) {
            int32_t got[MAX_IDS];
            const char *text = cJSON_GetArrayItem(texts, i)->valuestring;
            const int n = encode(b, text, positions[m], got);
            expect_ids(text, got, n, cJSON_GetArrayItem(ids, i));
        }
        cJSON_Delete(golden);
        free(json);
        bpe_free(b);
    }
}

/* ---- a tiny vocabulary: every byte symbol, with and without </w>, and a few merges ---- */

static void append(char **s, size_t *len, size_t *cap, const char *text) {
    const size_t n = strlen(text);
    if (*len + n + 1 > *cap) {
        *cap = (*len + n + 1) * 2;
        *s = realloc(*s, *cap);
    }
    memcpy(*s + *len, text, n + 1);
    *len += n;
}

/* A JSON string literal of GPT-2's symbol of byte c (+ suffix). */
static void symbol_literal(int c, const char *suffix, char *out) {
    int n = 0, cp = c;
    if (!((c >= 33 && c <= 126) || (c >= 161 && c <= 172) || (c >= 174 && c <= 255))) {
        for (int d = 0; d < c; d++)
            n += !((d >= 33 && d <= 126) || (d >= 161 && d <= 172) || (d >= 174 && d <= 255));
        cp = 256 + n;
    }
    if (cp == '"' || cp == '\\')
        sprintf(out, "\"\\%c%s\"", cp, suffix);
    else
        sprintf(out, "\"\\u%04x%s\"", cp, suffix);
}

static const char *const tiny_merges[] = {"h e", "l l",  "he ll", "hell o</w>",
                                          "a b", "ab a", "c a",   "ca t</w>"};
static const char *const tiny_merged[] = {"he", "ll",  "hell", "hello</w>",
                                          "ab", "aba", "ca",   "cat</w>"};

static const char *make_tiny(const char *name, const char *merges_override) {
    static char dir[4096];
    snprintf(dir, sizeof dir, "%s/%s", test_tmpdir(), name);
    mkdir(dir, 0700);
    char *vocab = NULL, item[64];
    size_t len = 0, cap = 0;
    int id = 0;
    append(&vocab, &len, &cap, "{");
    for (int pass = 0; pass < 2; pass++)
        for (int c = 0; c < 256; c++) {
            symbol_literal(c, pass ? "</w>" : "", item);
            append(&vocab, &len, &cap, item);
            sprintf(item, ": %d, ", id++);
            append(&vocab, &len, &cap, item);
        }
    for (size_t m = 0; m < sizeof tiny_merged / sizeof *tiny_merged; m++) {
        sprintf(item, "\"%s\": %d, ", tiny_merged[m], id++);
        append(&vocab, &len, &cap, item);
    }
    sprintf(item, "\"<|startoftext|>\": %d, \"<|endoftext|>\": %d}", id, id + 1);
    append(&vocab, &len, &cap, item);
    char file[4200];
    snprintf(file, sizeof file, "%s/vocab.json", name);
    write_temp_file(file, vocab, len);
    free(vocab);
    char merges[1024] = "#version: 0.2\n";
    for (size_t m = 0; m < sizeof tiny_merges / sizeof *tiny_merges; m++)
        strcat(strcat(merges, tiny_merges[m]), "\n");
    const char *text = merges_override ? merges_override : merges;
    snprintf(file, sizeof file, "%s/merges.txt", name);
    write_temp_file(file, text, strlen(text));
    return dir;
}

/* The pieces of text's ids, space-separated, without the start and end tokens. */
static void expect_pieces(const bpe *b, const char *text, const char *want) {
    int32_t ids[MAX_IDS];
    const int n = encode(b, text, MAX_IDS, ids);
    assert_int_equal(ids[0], bpe_bos_id(b));
    assert_int_equal(ids[n - 1], bpe_eos_id(b));
    char got[4096] = "";
    for (int i = 1; i + 1 < n; i++) {
        if (i > 1) strcat(got, " ");
        strcat(got, bpe_piece(b, ids[i]));
    }
    if (strcmp(got, want) != 0) fail_msg("\"%s\": pieces [%s], want [%s]", text, got, want);
}

static void test_merges_and_pieces(void **state) {
    (void)state;
    bpe *b = load_or_fail(make_tiny("tiny", NULL));
    /* hello: h e l l o</w> -> he ll -> hell -> hello</w> (rank order, not left to right) */
    expect_pieces(b, "hello", "hello</w>");
    expect_pieces(b, "HeLLo", "hello</w>");
    /* "ababa": a b a b a</w>: every "a b" merges before "ab a" is looked at, which then finds
     * no plain "a" left ("a</w>" is another symbol) */
    expect_pieces(b, "ababa", "ab ab a</w>");
    expect_pieces(b, "cat", "cat</w>");
    expect_pieces(b, "cats", "ca t s</w>");
    /* pieces (each ends in </w>): letters, one digit each, runs of the rest, contractions;
     * white space dropped */
    expect_pieces(b, "  cat\t\n12 !?cat's ", "cat</w> 1</w> 2</w> ! ?</w> cat</w> ' s</w>");
    expect_pieces(b, "x'd 'LL y''s", "x</w> ' d</w> ' l l</w> y</w> ' '</w> s</w>");
    /* special tokens in the text, also in capitals (they are matched after lower-casing) */
    expect_pieces(b, "cat<|endoftext|>cat <|StartOfText|>",
                  "cat</w> <|endoftext|> cat</w> <|startoftext|>");
    /* é as e + combining acute is NFC-composed to one letter: two bytes, one piece */
    expect_pieces(b, "e\xcc\x81", "\xc3\x83 \xc2\xa9</w>");
    /* invalid UTF-8 becomes U+FFFD (EF BF BD as byte symbols), one for each run Python's
     * errors="replace" replaces: "\xe2\x82" (a cut-off character) is one, "\xe0\x80" two */
    expect_pieces(b, "\xff", "\xc3\xaf \xc2\xbf \xc2\xbd</w>");
    expect_pieces(b, "\xe2\x82", "\xc3\xaf \xc2\xbf \xc2\xbd</w>");
    expect_pieces(b, "\xe0\x80", "\xc3\xaf \xc2\xbf \xc2\xbd \xc3\xaf \xc2\xbf \xc2\xbd</w>");
    /* the 77-token cut keeps the end token; max_len 2 holds the start and end tokens only */
    int32_t ids[8];
    assert_int_equal(encode(b, "cat cat cat cat", 4, ids), 4);
    assert_int_equal(ids[3], bpe_eos_id(b));
    assert_int_equal(encode(b, "cat", 2, ids), 2);
    vit_error err = {0};
    assert_int_equal(bpe_encode(b, "cat", 3, 1, ids, &err), -1);
    assert_non_null(strstr(err.msg, "max_len"));
    bpe_free(b);
}

/* CLIPTokenizer.decode with skip_special_tokens (text/byte_level.h over the same vocabulary):
 * the special tokens left out, "</w>" read as a space, the bytes put back, the ends stripped. */
static void test_decode(void **state) {
    (void)state;
    const char *dir = make_tiny("tiny-decode", NULL);
    bpe *b = load_or_fail(dir);
    byte_level *clip = NULL;
    vit_error err = {0};
    if (byte_level_load(dir, &clip, &err) != 0) fail_msg("%s", err.msg);
    assert_string_equal(byte_level_class_name(clip), "CLIPTokenizer");
    const char *text = "Hello, cat! caf\xc3\xa9";
    int32_t ids[MAX_IDS];
    const int n = encode(b, text, MAX_IDS, ids);
    char out[256];
    const int want = (int)strlen("hello , cat ! caf\xc3\xa9");
    assert_int_equal(byte_level_decode(clip, ids, n, true, out, sizeof out, &err), want);
    assert_string_equal(out, "hello , cat ! caf\xc3\xa9");
    /* too small a buffer: cut, NUL-terminated, the whole length returned */
    assert_int_equal(byte_level_decode(clip, ids, n, true, out, 6, &err), want);
    assert_string_equal(out, "hello");
    /* the special tokens kept when asked */
    assert_int_equal(byte_level_decode(clip, ids, 2, false, out, sizeof out, &err),
                     (int)strlen("<|startoftext|>hello"));
    assert_string_equal(out, "<|startoftext|>hello");
    const int32_t bad[1] = {bpe_vocab_size(b)};
    assert_int_equal(byte_level_decode(clip, bad, 1, true, out, sizeof out, &err), -1);
    assert_non_null(strstr(err.msg, "out of range"));
    byte_level_free(clip);
    bpe_free(b);
}

static void expect_load_error(const char *dir, const char *want) {
    bpe *b = NULL;
    vit_error err = {0};
    assert_int_equal(bpe_load(dir, BPE_CLIP, &b, &err), -1);
    assert_null(b);
    if (!strstr(err.msg, want)) fail_msg("error \"%s\" does not say \"%s\"", err.msg, want);
}

static void test_bad_files(void **state) {
    (void)state;
    expect_load_error(make_tiny("bad-merge", "#version: 0.2\nh q\n"), "not in vocab.json");
    expect_load_error(make_tiny("bad-line", "h e l\n"), "line 1 is not two symbols");
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/nothing-here", test_tmpdir());
    expect_load_error(dir, "vocab.json");
    const char *tiny = make_tiny("bad-vocab", NULL);
    write_temp_file("bad-vocab/vocab.json", "[1, 2]", 6);
    expect_load_error(tiny, "not a JSON object");
    write_temp_file("bad-vocab/vocab.json", "{\"a\": 0, \"b\": 0}", 16);
    expect_load_error(tiny, "given twice");
    write_temp_file("bad-vocab/vocab.json", "{\"a\": 0.5}", 10);
    expect_load_error(tiny, "not an integer");
    write_temp_file("bad-vocab/vocab.json", "{\"a\": 1e300}", 12); /* found by fuzz_bpe (UBSan) */
    expect_load_error(tiny, "not an integer");
    write_temp_file("bad-vocab/vocab.json", "{\"a\": 0}", 8);
    expect_load_error(tiny, "symbols not in vocab.json");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_clip_golden),
        cmocka_unit_test(test_clip_hard_texts),
        cmocka_unit_test(test_micro_vocabularies),
        cmocka_unit_test(test_merges_and_pieces),
        cmocka_unit_test(test_decode),
        cmocka_unit_test(test_bad_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
