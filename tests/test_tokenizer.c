/* BERT WordPiece tokenizer (docs/SPEC.md §8): the 30 golden texts of bert-sst2-tiny (ids and
 * pieces), and hand-written cases on small vocabularies written at test time, independent of
 * ../shared. */
#include "tests/testutil.h"

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "text/wordpiece.h"

#define MAX_IDS 256

/* ---- helpers ---- */

/* Writes a model folder test_tmpdir()/name with vocab.txt and, where non-NULL, the JSON files. */
static const char *make_model(const char *name, const char *vocab, const char *tokenizer_config,
                              const char *config) {
    static char dir[4096];
    snprintf(dir, sizeof dir, "%s/%s", test_tmpdir(), name);
    mkdir(dir, 0700);
    char file[4200];
    snprintf(file, sizeof file, "%s/vocab.txt", name);
    write_temp_file(file, vocab, strlen(vocab));
    if (tokenizer_config) {
        snprintf(file, sizeof file, "%s/tokenizer_config.json", name);
        write_temp_file(file, tokenizer_config, strlen(tokenizer_config));
    }
    if (config) {
        snprintf(file, sizeof file, "%s/config.json", name);
        write_temp_file(file, config, strlen(config));
    }
    return dir;
}

static tokenizer *load_or_fail(const char *dir) {
    tokenizer *t = NULL;
    vit_error err = {0};
    if (tokenizer_load(dir, &t, &err) != 0) fail_msg("tokenizer_load(%s): %s", dir, err.msg);
    return t;
}

/* Tokenizes text[0..len) and compares the pieces with want (space-separated), and every id with
 * the piece's own id. */
static void expect_len(const tokenizer *t, const char *text, size_t len, int max_len,
                       const char *want) {
    int32_t ids[MAX_IDS];
    const char *pieces[MAX_IDS];
    vit_error err = {0};
    const int n = tokenizer_encode(t, text, len, max_len, ids, pieces, &err);
    if (n < 0) fail_msg("encode failed: %s", err.msg);
    char got[8192] = "";
    for (int i = 0; i < n; i++) {
        if (strcmp(pieces[i], tokenizer_piece(t, ids[i])) != 0) fail_msg("piece %d mismatch", i);
        strncat(got, pieces[i], sizeof got - strlen(got) - 2);
        if (i + 1 < n) strcat(got, " ");
    }
    if (strcmp(got, want) != 0)
        fail_msg("text '%.*s'\n  got  %s\n  want %s", (int)len, text, got, want);
}

#define EXPECT(t, literal, want) expect_len(t, literal, sizeof(literal) - 1, MAX_IDS, want)

/* Ids: [PAD] 0, [UNK] 1, [CLS] 2, [SEP] 3, [MASK] 4, then one token a line. */
static const char tiny_vocab[] = "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n"
                                 "un\nunaff\n##aff\n##able\n##a\nx\n##x\ncafe\nCafé\nthe\n"
                                 ",\n!\n.\n'\n$\n«\n»\n中\n文\na\nb\nc\n"
                                 "σ\nς\n##σ\n##ς\nο\n##ο\ni\n##stanbul\ne\n##e\n[\n]\n##s\nsep\n"
                                 "##ep\ns\n\xe2\x85\xbb\n\xc2\xaa\n";

static const char *tiny_model(void) {
    return make_model("tiny", tiny_vocab, "{\"do_lower_case\": true}", NULL);
}

/* ---- golden texts from ../shared ---- */

static cJSON *load_golden(void) {
    size_t size;
    char *json = (char *)read_whole_file(shared_path("models/bert-sst2-tiny/golden.json"), &size);
    assert_non_null(json);
    cJSON *root = cJSON_ParseWithLength(json, size);
    free(json);
    assert_true(cJSON_IsArray(root));
    return root;
}

/* Every golden text: the same ids and the same pieces, in order. */
static void test_golden(void **state) {
    (void)state;
    REQUIRE_SHARED("models/bert-sst2-tiny");
    tokenizer *t = load_or_fail(shared_path("models/bert-sst2-tiny"));
    cJSON *root = load_golden();
    int total = 0, same = 0;
    const cJSON *item;
    cJSON_ArrayForEach(item, root) {
        const char *text = cJSON_GetObjectItem(item, "text")->valuestring;
        const cJSON *want_ids = cJSON_GetObjectItem(item, "ids");
        const cJSON *want_pieces = cJSON_GetObjectItem(item, "pieces");
        int32_t ids[MAX_IDS];
        const char *pieces[MAX_IDS];
        vit_error err = {0};
        const int n =
            tokenizer_encode(t, text, strlen(text), tokenizer_max_len(t), ids, pieces, &err);
        bool ok = n == cJSON_GetArraySize(want_ids) && n == cJSON_GetArraySize(want_pieces);
        for (int i = 0; ok && i < n; i++) {
            ok = ids[i] == cJSON_GetArrayItem(want_ids, i)->valueint &&
                 strcmp(pieces[i], cJSON_GetArrayItem(want_pieces, i)->valuestring) == 0;
        }
        if (!ok) print_message("golden %d differs: '%s' (%d ids)\n", total, text, n);
        same += ok;
        total++;
    }
    print_message("golden: %d/%d identical\n", same, total);
    assert_int_equal(total, 30);
    assert_int_equal(same, total);
    cJSON_Delete(root);
    tokenizer_free(t);
}

static void test_shared_settings(void **state) {
    (void)state;
    REQUIRE_SHARED("models/bert-sst2-tiny");
    tokenizer *t = load_or_fail(shared_path("models/bert-sst2-tiny"));
    assert_int_equal(tokenizer_vocab_size(t), 30522);
    assert_int_equal(tokenizer_max_len(t), 128);
    assert_int_equal(tokenizer_pad_id(t), 0);
    assert_int_equal(tokenizer_unk_id(t), 100);
    assert_int_equal(tokenizer_cls_id(t), 101);
    assert_int_equal(tokenizer_sep_id(t), 102);
    assert_string_equal(tokenizer_piece(t, 1012), ".");
    assert_int_equal(tokenizer_token_id(t, "##ing"), 2075);
    tokenizer_free(t);
}

/* ---- WordPiece ---- */

static void test_greedy_longest_match(void **state) {
    (void)state;
    tokenizer *t = load_or_fail(tiny_model());
    EXPECT(t, "unaffable", "[CLS] unaff ##able [SEP]"); /* not un ##aff ##able */
    EXPECT(t, "unable", "[CLS] un ##able [SEP]");
    EXPECT(t, "unaffa", "[CLS] unaff ##a [SEP]");
    EXPECT(t, "xxx", "[CLS] x ##x ##x [SEP]");
    tokenizer_free(t);
}

static void test_unmatched_rest_is_unk(void **state) {
    (void)state;
    tokenizer *t = load_or_fail(tiny_model());
    /* "unaff" matches but "z" cannot continue: the whole word is [UNK], its neighbours are not. */
    EXPECT(t, "un unaffz un", "[CLS] un [UNK] un [SEP]");
    EXPECT(t, "zun", "[CLS] [UNK] [SEP]");
    tokenizer_free(t);
}

static void test_word_length_limit(void **state) {
    (void)state;
    tokenizer *t = load_or_fail(tiny_model());
    char text[512], want[2048];
    /* 100 characters still go through WordPiece; 101 are [UNK] outright. */
    memset(text, 'x', 100);
    strcpy(want, "[CLS] x");
    for (int i = 1; i < 100; i++) strcat(want, " ##x");
    strcat(want, " [SEP]");
    expect_len(t, text, 100, MAX_IDS, want);
    memset(text, 'x', 101);
    expect_len(t, text, 101, MAX_IDS, "[CLS] [UNK] [SEP]");
    /* The limit counts code points after normalisation: 60 "é" are 120 bytes but 60 letters. */
    size_t n = 0;
    for (int i = 0; i < 60; i++) n += (size_t)sprintf(text + n, "\xc3\xa9");
    strcpy(want, "[CLS] e");
    for (int i = 1; i < 60; i++) strcat(want, " ##e");
    strcat(want, " [SEP]");
    expect_len(t, text, n, MAX_IDS, want);
    n = 0;
    for (int i = 0; i < 101; i++) n += (size_t)sprintf(text + n, "e\xcc\x81"); /* e + U+0301 */
    expect_len(t, text, n, MAX_IDS, "[CLS] [UNK] [SEP]");
    tokenizer_free(t);
}

/* ---- basic tokenization ---- */

static void test_punctuation_split(void **state) {
    (void)state;
    tokenizer *t = load_or_fail(tiny_model());
    EXPECT(t, "a,b!c.", "[CLS] a , b ! c . [SEP]");
    EXPECT(t,
           "\xc2\xab"
           "a\xc2\xbb",
           "[CLS] \xc2\xab a \xc2\xbb [SEP]"); /* «a» : Pi, Pf */
    EXPECT(t, "a$b", "[CLS] a $ b [SEP]");     /* ASCII symbols count as punctuation */
    EXPECT(t,
           "a\xe2\x82\xac"
           "b",
           "[CLS] [UNK] [SEP]"); /* U+20AC is Sc: not split off */
    EXPECT(t, "it's", "[CLS] [UNK] ' s [SEP]");
    tokenizer_free(t);
}

static void test_lower_case_and_accents(void **state) {
    (void)state;
    tokenizer *t = load_or_fail(tiny_model());
    EXPECT(t, "Caf\xc3\xa9", "[CLS] cafe [SEP]");  /* Café */
    EXPECT(t, "CAFE\xcc\x81", "[CLS] cafe [SEP]"); /* decomposed É */
    EXPECT(t, "THE", "[CLS] the [SEP]");
    EXPECT(t, "\xc4\xb0stanbul", "[CLS] i ##stanbul [SEP]"); /* İ lowers to i + U+0307 */
    tokenizer_free(t);
}

/* Python's str.lower() picks final sigma by context, per whitespace-separated word and before
 * punctuation is split off; "'" and "." are case-ignorable, "," is not. */
static void test_final_sigma(void **state) {
    (void)state;
    tokenizer *t = load_or_fail(tiny_model());
    EXPECT(t, "\xce\x9f\xce\xa3", "[CLS] \xce\xbf ##\xcf\x82 [SEP]"); /* ΟΣ -> ος */
    EXPECT(t, "\xce\xa3\xce\x9f", "[CLS] \xcf\x83 ##\xce\xbf [SEP]"); /* ΣΟ -> σο */
    EXPECT(t, "\xce\xa3", "[CLS] \xcf\x83 [SEP]");                    /* Σ -> σ */
    EXPECT(t, "\xce\x9f\xce\xa3'\xce\x9f", "[CLS] \xce\xbf ##\xcf\x83 ' \xce\xbf [SEP]");
    EXPECT(t, "\xce\x9f\xce\xa3.", "[CLS] \xce\xbf ##\xcf\x82 . [SEP]");
    EXPECT(t, "\xce\x9f\xce\xa3,\xce\x9f", "[CLS] \xce\xbf ##\xcf\x82 , \xce\xbf [SEP]");
    /* Cased without being a letter of Lu/Ll/Lt: Ⅻ (it has a lower-case mapping) and ª. */
    EXPECT(t, "\xe2\x85\xab\xce\xa3", "[CLS] \xe2\x85\xbb ##\xcf\x82 [SEP]");
    EXPECT(t, "\xc2\xaa\xce\xa3", "[CLS] \xc2\xaa ##\xcf\x82 [SEP]");
    tokenizer_free(t);
}

static void test_cjk_spacing(void **state) {
    (void)state;
    tokenizer *t = load_or_fail(tiny_model());
    EXPECT(t, "x\xe4\xb8\xad\xe6\x96\x87x",
           "[CLS] x \xe4\xb8\xad \xe6\x96\x87 x [SEP]"); /* x中文x */
    tokenizer_free(t);
    t = load_or_fail(make_model("nocjk", tiny_vocab, "{\"tokenize_chinese_chars\": false}", NULL));
    EXPECT(t, "x\xe4\xb8\xad\xe6\x96\x87x", "[CLS] [UNK] [SEP]");
    tokenizer_free(t);
}

static void test_control_and_whitespace(void **state) {
    (void)state;
    tokenizer *t = load_or_fail(tiny_model());
    /* Cc and Cf characters vanish without splitting the word (BEL, NUL, ZWSP, soft hyphen, and
     * vertical tab, which is Cc before it is whitespace). */
    EXPECT(t,
           "un\x07"
           "able x\0x x\xe2\x80\x8bx x\xc2\xadx x\vx",
           "[CLS] un ##able x ##x x ##x x ##x x ##x [SEP]");
    /* Tab, newline, CR, Zs (no-break space, ideographic space) and U+2028 separate words. */
    EXPECT(t, "a\tb\nc\rx\xc2\xa0x\xe3\x80\x80x\xe2\x80\xa8x", "[CLS] a b c x x x x [SEP]");
    EXPECT(t, "x\xef\xbf\xbdx", "[CLS] x ##x [SEP]"); /* U+FFFD is dropped */
    tokenizer_free(t);
}

static void test_invalid_utf8(void **state) {
    (void)state;
    tokenizer *t = load_or_fail(tiny_model());
    EXPECT(t,
           "un\xff"
           "able",
           "[CLS] un ##able [SEP]");
    EXPECT(t, "x\xc0\xafx", "[CLS] x ##x [SEP]");     /* overlong "/" is not a slash */
    EXPECT(t, "x\xe0\x80\xafx", "[CLS] x ##x [SEP]"); /* nor is this one */
    EXPECT(t, "x\xed\xa0\x80x", "[CLS] x ##x [SEP]"); /* UTF-8 encoded surrogate */
    EXPECT(t, "x\xe4\xb8x", "[CLS] x ##x [SEP]");     /* truncated sequence before ASCII */
    EXPECT(t, "x \xe4\xb8", "[CLS] x [SEP]");         /* truncated at the end */
    EXPECT(t, "\xf4\x90\x80\x80x", "[CLS] x [SEP]");  /* above U+10FFFF */
    EXPECT(t, "\x80\xbf", "[CLS] [SEP]");
    tokenizer_free(t);
}

static void test_special_tokens_in_text(void **state) {
    (void)state;
    tokenizer *t = load_or_fail(tiny_model());
    EXPECT(t, "a[SEP]b [MASK]", "[CLS] a [SEP] b [MASK] [SEP]");
    EXPECT(t, "[sep]", "[CLS] [ sep ] [SEP]"); /* case-sensitive */
    EXPECT(t, "[SEP", "[CLS] [ sep [SEP]");
    /* BasicTokenizer's never_split: a whole word that spells a special token once the control
     * character is removed stays one piece; inside a longer word it is ordinary text. */
    EXPECT(t, "x [SE\aP] x", "[CLS] x [SEP] x [SEP]");
    EXPECT(t, "x[SE\aP]", "[CLS] x [ sep ] [SEP]");
    EXPECT(t, "[se\aP]", "[CLS] [ sep ] [SEP]");
    tokenizer_free(t);
}

/* One scratch reused over texts of growing and shrinking size gives what fresh ones give. */
static void test_scratch_reuse(void **state) {
    (void)state;
    tokenizer *t = load_or_fail(tiny_model());
    tokenizer_scratch *s = tokenizer_scratch_create();
    assert_non_null(s);
    const char *texts[] = {"a", "Caf\xc3\xa9 \xce\x9f\xce\xa3 x\xe4\xb8\xad\xe6\x96\x87x unaffable",
                           "",
                           "\xc4\xb0stanbul un\x07"
                           "able",
                           "b"};
    for (int round = 0; round < 2; round++) {
        for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
            int32_t a[MAX_IDS], b[MAX_IDS];
            vit_error err = {0};
            const size_t len = strlen(texts[i]);
            const int n = tokenizer_encode_with(t, s, texts[i], len, MAX_IDS, a, NULL, &err);
            assert_int_equal(n, tokenizer_encode(t, texts[i], len, MAX_IDS, b, NULL, &err));
            assert_memory_equal(a, b, sizeof *a * (size_t)n);
        }
    }
    tokenizer_scratch_free(s);
    tokenizer_free(t);
}

/* ---- sequence ---- */

static void test_truncation(void **state) {
    (void)state;
    tokenizer *t = load_or_fail(tiny_model());
    const char text[] = "a b c unaffable x";
    expect_len(t, text, sizeof text - 1, 5, "[CLS] a b c [SEP]");
    expect_len(t, text, sizeof text - 1, 6, "[CLS] a b c unaff [SEP]"); /* mid-word */
    expect_len(t, text, sizeof text - 1, 2, "[CLS] [SEP]");
    expect_len(t, text, sizeof text - 1, 8, "[CLS] a b c unaff ##able x [SEP]");
    expect_len(t, "a[SEP]b", 7, 3, "[CLS] a [SEP]");
    int32_t ids[4];
    vit_error err = {0};
    assert_int_equal(tokenizer_encode(t, text, sizeof text - 1, 1, ids, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "max_len"));
    /* Only max_len entries are written. */
    ids[3] = -7;
    assert_int_equal(tokenizer_encode(t, text, sizeof text - 1, 3, ids, NULL, &err), 3);
    assert_int_equal(ids[3], -7);
    tokenizer_free(t);
}

static void test_empty_text(void **state) {
    (void)state;
    tokenizer *t = load_or_fail(tiny_model());
    EXPECT(t, "", "[CLS] [SEP]");
    EXPECT(t, " \t\n\xe2\x80\x8b ", "[CLS] [SEP]");
    int32_t ids[2];
    vit_error err = {0};
    assert_int_equal(tokenizer_encode(t, NULL, 0, 2, ids, NULL, &err), 2);
    assert_int_equal(ids[0], 2);
    assert_int_equal(ids[1], 3);
    tokenizer_free(t);
}

/* ---- configuration and vocabulary files ---- */

static void test_cased_config(void **state) {
    (void)state;
    /* No lower-casing and no accent stripping, but NFC still composes e + U+0301. */
    tokenizer *t =
        load_or_fail(make_model("cased", tiny_vocab, "{\"do_lower_case\": false}", NULL));
    EXPECT(t, "Cafe\xcc\x81 the THE", "[CLS] Caf\xc3\xa9 the [UNK] [SEP]");
    tokenizer_free(t);
    /* Lower-casing without stripping keeps the U+0307 that Python's lower() gives İ. */
    t = load_or_fail(make_model("nostrip", tiny_vocab, "{\"strip_accents\": false}", NULL));
    EXPECT(t, "\xc4\xb0stanbul Istanbul", "[CLS] [UNK] i ##stanbul [SEP]");
    EXPECT(t, "caf\xc3\xa9", "[CLS] [UNK] [SEP]");
    tokenizer_free(t);
    t = load_or_fail(make_model("strip", tiny_vocab,
                                "{\"do_lower_case\": false, \"strip_accents\": true}", NULL));
    EXPECT(t, "caf\xc3\xa9", "[CLS] cafe [SEP]");
    tokenizer_free(t);
}

static void test_max_len_defaults(void **state) {
    (void)state;
    tokenizer *t = load_or_fail(make_model("len0", tiny_vocab, NULL, NULL));
    assert_int_equal(tokenizer_max_len(t), 512);
    tokenizer_free(t);
    t = load_or_fail(make_model("len1", tiny_vocab, "{\"model_max_length\": 1e30}",
                                "{\"max_position_embeddings\": 64}"));
    assert_int_equal(tokenizer_max_len(t), 64);
    tokenizer_free(t);
    t = load_or_fail(make_model("len2", tiny_vocab, "{\"model_max_length\": 32}",
                                "{\"max_position_embeddings\": 64}"));
    assert_int_equal(tokenizer_max_len(t), 32);
    tokenizer_free(t);
}

static void test_special_tokens_map(void **state) {
    (void)state;
    const char *dir = make_model("map", tiny_vocab, "{\"cls_token\": \"[CLS]\"}", NULL);
    {
        const char *map = "{\"cls_token\": {\"content\": \"[MASK]\"}}";
        write_temp_file("map/special_tokens_map.json", map, strlen(map));
    }
    tokenizer *t = load_or_fail(dir);
    assert_int_equal(tokenizer_cls_id(t), 4);
    EXPECT(t, "a", "[MASK] a [SEP]");
    tokenizer_free(t);
}

/* Lines end at \n, \r\n or \r as Python's readlines sees them; a repeated token keeps its later
 * id for lookup while both ids still name it. */
static void test_vocab_lines(void **state) {
    (void)state;
    tokenizer *t =
        load_or_fail(make_model("crlf", "[UNK]\r\n[CLS]\r[SEP]\nab\r\nab\n\ncd", NULL, NULL));
    assert_int_equal(tokenizer_vocab_size(t), 7);
    assert_int_equal(tokenizer_token_id(t, "ab"), 4);
    assert_string_equal(tokenizer_piece(t, 3), "ab");
    assert_string_equal(tokenizer_piece(t, 5), "");
    assert_string_equal(tokenizer_piece(t, 6), "cd");
    assert_null(tokenizer_piece(t, 7));
    assert_null(tokenizer_piece(t, -1));
    assert_int_equal(tokenizer_pad_id(t), -1);
    int32_t ids[8];
    vit_error err = {0};
    assert_int_equal(tokenizer_encode(t, "ab cd", 5, 8, ids, NULL, &err), 4);
    assert_int_equal(ids[1], 4);
    assert_int_equal(ids[2], 6);
    tokenizer_free(t);
}

/* ---- from memory ---- */

/* dir's tokenizer files as bytes (tokenizer_load_memory's input), read with the tests' own reader;
 * paths[i] names source i. Free each text afterwards. */
static tokenizer_sources read_sources(const char *dir, char (*paths)[4200]) {
    static const char *const names[] = {"vocab.txt", "tokenizer_config.json",
                                        "special_tokens_map.json", "config.json"};
    tokenizer_sources src;
    tokenizer_source *all[] = {&src.vocab, &src.config, &src.special_tokens_map, &src.model_config};
    for (int i = 0; i < 4; i++) {
        snprintf(paths[i], 4200, "%s/%s", dir, names[i]);
        all[i]->name = paths[i];
        all[i]->text = (const char *)read_whole_file(paths[i], &all[i]->size);
    }
    assert_non_null(src.vocab.text);
    return src;
}

static void free_sources(tokenizer_sources *src) {
    free((char *)src->vocab.text);
    free((char *)src->config.text);
    free((char *)src->special_tokens_map.text);
    free((char *)src->model_config.text);
}

/* Two tokenizers agree: the settings, every id's piece, and every text's ids. */
static void expect_same(const tokenizer *a, const tokenizer *b, const char *const *texts, int n) {
    assert_int_equal(tokenizer_vocab_size(a), tokenizer_vocab_size(b));
    assert_int_equal(tokenizer_max_len(a), tokenizer_max_len(b));
    assert_int_equal(tokenizer_cls_id(a), tokenizer_cls_id(b));
    assert_int_equal(tokenizer_sep_id(a), tokenizer_sep_id(b));
    assert_int_equal(tokenizer_pad_id(a), tokenizer_pad_id(b));
    assert_int_equal(tokenizer_unk_id(a), tokenizer_unk_id(b));
    for (int id = 0; id < tokenizer_vocab_size(a); id++)
        assert_string_equal(tokenizer_piece(a, id), tokenizer_piece(b, id));
    for (int i = 0; i < n; i++) {
        int32_t ids_a[MAX_IDS], ids_b[MAX_IDS];
        vit_error err = {0};
        const int len = (int)strlen(texts[i]);
        const int na = tokenizer_encode(a, texts[i], (size_t)len, MAX_IDS, ids_a, NULL, &err);
        const int nb = tokenizer_encode(b, texts[i], (size_t)len, MAX_IDS, ids_b, NULL, &err);
        assert_true(na > 0);
        assert_int_equal(na, nb);
        assert_memory_equal(ids_a, ids_b, sizeof(int32_t) * (size_t)na);
    }
}

/* The tokenizer made from a folder's bytes is the one tokenizer_load makes of the folder. */
static void expect_memory_equals_files(const char *dir, const char *const *texts, int n) {
    char paths[4][4200];
    tokenizer_sources src = read_sources(dir, paths);
    tokenizer *from_memory = NULL;
    vit_error err = {0};
    if (tokenizer_load_memory(&src, &from_memory, &err) != 0) fail_msg("%s", err.msg);
    free_sources(&src); /* the tokenizer keeps copies */
    tokenizer *from_files = load_or_fail(dir);
    expect_same(from_memory, from_files, texts, n);
    tokenizer_free(from_memory);
    tokenizer_free(from_files);
}

/* Every setting the files can carry (cased, a renamed special, a shorter max_len) reaches the
 * tokenizer made from memory. */
static void test_memory_equals_files(void **state) {
    (void)state;
    const char *dir =
        make_model("memory", tiny_vocab, "{\"do_lower_case\": false, \"model_max_length\": 100}",
                   "{\"max_position_embeddings\": 40}");
    const char *map = "{\"cls_token\": \"[MASK]\"}";
    write_temp_file("memory/special_tokens_map.json", map, strlen(map));
    static const char *const texts[] = {"Cafe\xcc\x81 the THE", "unaffable [MASK] x!",
                                        "\xe4\xb8\xad\xe6\x96\x87 \xc2\xabsep\xc2\xbb"};
    expect_memory_equals_files(dir, texts, 3);
    tokenizer *t = load_or_fail(dir); /* the settings were not the defaults */
    assert_int_equal(tokenizer_max_len(t), 40);
    assert_int_equal(tokenizer_cls_id(t), 4);
    EXPECT(t, "THE", "[MASK] [UNK] [SEP]");
    tokenizer_free(t);
}

/* The same for bert-sst2-tiny on its 30 golden texts. */
static void test_memory_equals_files_golden(void **state) {
    (void)state;
    REQUIRE_SHARED("models/bert-sst2-tiny");
    cJSON *root = load_golden();
    const char *texts[64];
    int n = 0;
    const cJSON *item;
    cJSON_ArrayForEach(item, root) {
        if (n < 64) texts[n++] = cJSON_GetObjectItem(item, "text")->valuestring;
    }
    expect_memory_equals_files(shared_path("models/bert-sst2-tiny"), texts, n);
    cJSON_Delete(root);
}

/* Errors name each source by its name. */
static void test_memory_errors(void **state) {
    (void)state;
    const char *vocab = "[UNK]\n[CLS]\n[SEP]\n";
    tokenizer_sources src = {
        .vocab = {vocab, strlen(vocab), "given vocab"},
        .config = {"{\"do_lower_case\": 1}", 20, "given config"},
        .special_tokens_map = {NULL, 0, "no map"},
        .model_config = {NULL, 0, "no config"},
    };
    tokenizer *t = NULL;
    vit_error err = {0};
    assert_int_equal(tokenizer_load_memory(&src, &t, &err), -1);
    assert_null(t);
    assert_non_null(strstr(err.msg, "given config: 'do_lower_case' must be true or false"));
    src.config.text = NULL;
    src.vocab = (tokenizer_source){"[CLS]\n[SEP]\n", 12, "given vocab"};
    assert_int_equal(tokenizer_load_memory(&src, &t, &err), -1);
    assert_non_null(strstr(err.msg, "given vocab: no unk_token '[UNK]'"));
}

static void expect_load_error(const char *dir, const char *needle) {
    tokenizer *t = (tokenizer *)1;
    vit_error err = {0};
    assert_int_equal(tokenizer_load(dir, &t, &err), -1);
    assert_null(t);
    print_message("  %s\n", err.msg);
    if (!strstr(err.msg, needle)) fail_msg("expected '%s' in '%s'", needle, err.msg);
}

static void test_load_errors(void **state) {
    (void)state;
    expect_load_error("/nonexistent-vit-model", "/nonexistent-vit-model/vocab.txt");
    expect_load_error(make_model("nounk", "[CLS]\n[SEP]\na\n", NULL, NULL), "unk_token '[UNK]'");
    expect_load_error(make_model("badutf", "[UNK]\n[CLS]\n[SEP]\na\xff\n", NULL, NULL),
                      "line 4 is not valid UTF-8");
    expect_load_error(make_model("surrogate", "[UNK]\n[CLS]\n[SEP]\n\xed\xa0\x80\n", NULL, NULL),
                      "line 4 is not valid UTF-8");
    expect_load_error(make_model("empty", "", NULL, NULL), "empty vocabulary");
    expect_load_error(make_model("badjson", tiny_vocab, "{\"do_lower_case\": tru", NULL),
                      "badjson/tokenizer_config.json: not a JSON object");
    expect_load_error(make_model("badbool", tiny_vocab, "{\"do_lower_case\": 1}", NULL),
                      "'do_lower_case' must be true or false");
    expect_load_error(make_model("never", tiny_vocab, "{\"never_split\": [\"x\"]}", NULL),
                      "never_split is not supported");
    expect_load_error(make_model("nobasic", tiny_vocab, "{\"do_basic_tokenize\": false}", NULL),
                      "do_basic_tokenize false is not supported");
    expect_load_error(make_model("badlen", tiny_vocab, NULL, "{\"max_position_embeddings\": 1}"),
                      "'max_position_embeddings' must be a number of at least 2");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden),
        cmocka_unit_test(test_shared_settings),
        cmocka_unit_test(test_greedy_longest_match),
        cmocka_unit_test(test_unmatched_rest_is_unk),
        cmocka_unit_test(test_word_length_limit),
        cmocka_unit_test(test_punctuation_split),
        cmocka_unit_test(test_lower_case_and_accents),
        cmocka_unit_test(test_final_sigma),
        cmocka_unit_test(test_cjk_spacing),
        cmocka_unit_test(test_control_and_whitespace),
        cmocka_unit_test(test_invalid_utf8),
        cmocka_unit_test(test_special_tokens_in_text),
        cmocka_unit_test(test_scratch_reuse),
        cmocka_unit_test(test_truncation),
        cmocka_unit_test(test_empty_text),
        cmocka_unit_test(test_cased_config),
        cmocka_unit_test(test_max_len_defaults),
        cmocka_unit_test(test_special_tokens_map),
        cmocka_unit_test(test_vocab_lines),
        cmocka_unit_test(test_load_errors),
        cmocka_unit_test(test_memory_equals_files),
        cmocka_unit_test(test_memory_equals_files_golden),
        cmocka_unit_test(test_memory_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
