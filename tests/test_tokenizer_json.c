/* tokenizer.json (text/tokenizer_json.h) against the tokenizers library itself: the ids its
 * encode gives and the texts its decode gives, written by tools/tokenizer_json_reference.mjs for
 * ten fixtures (WordPiece/BERT, byte-level BPE/RoBERTa, Unigram with Precompiled/XLM-R, CLIP's
 * real merges as CLIPTokenizerFast saves them, Metaspace BPE with byte_fallback/Llama-like, a
 * GPT-2 vocabulary behind the Nmt and ByteLevel normalizers and a Split on its space symbol, and
 * four that put every other component type and option on those vocabularies or one trained
 * with a "##" prefix) on
 * 441 texts, 67 pairs (ids and token type ids) and 2,000 generated texts (ids, and FNV-1a hashes
 * of both decodes) each. Equality is exact: ids are integers and texts bytes. */
#include "testutil.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "text/text_tokenizer.h"
#include "text/tokenizer_json.h"
#include "vit/vit.h"
#include "vit/base/base64.h"

#define FIXTURES TEST_DATA "/tokenizer-json"

static cJSON *load_golden(const char *name) {
    char path[512];
    snprintf(path, sizeof path, FIXTURES "/%s/golden.json", name);
    uint8_t *text = read_whole_file(path, NULL);
    assert_non_null(text);
    cJSON *root = cJSON_Parse((const char *)text);
    free(text);
    assert_non_null(root);
    return root;
}

static tokenizer_json *load(const char *name) {
    char dir[512];
    snprintf(dir, sizeof dir, FIXTURES "/%s", name);
    tokenizer_json *t = NULL;
    vit_error err = {0};
    if (tokenizer_json_load(dir, &t, &err) != 0) fail_msg("%s: %s", dir, err.msg);
    return t;
}

/* One case: its ids and both decodes; returns how many of the three differ (printing them). */
static int check_case(const tokenizer_json *t, const cJSON *c, const char *name) {
    const char *b64 = cJSON_GetObjectItem(c, "text")->valuestring;
    const size_t len = strlen(b64);
    char *text = malloc(len / 4 * 3 + 3);
    size_t where;
    const long long n = base64_decode(b64, len, text, &where);
    assert_true(n >= 0);
    int32_t *ids = NULL;
    vit_error err = {0};
    const int count = tokenizer_json_encode(t, text, (size_t)n, 0, TJ_AS_SAVED, &ids, &err);
    if (count < 0) fail_msg("%s: \"%.*s\": %s", name, (int)n, text, err.msg);
    const cJSON *want = cJSON_GetObjectItem(c, "ids");
    int differ = count != cJSON_GetArraySize(want);
    for (int i = 0; !differ && i < count; i++)
        differ = ids[i] != (int32_t)cJSON_GetArrayItem(want, i)->valuedouble;
    if (differ) {
        char *w = cJSON_PrintUnformatted(want);
        print_message("%s: \"%.*s\": %d ids, want %s; got", name, (int)n, text, count, w);
        for (int i = 0; i < count; i++) print_message(" %d", ids[i]);
        print_message("\n");
        free(w);
    }
    static const char *const keys[2] = {"decoded_special", "decoded"};
    for (int skip = 0; skip < 2; skip++) {
        char out[8192];
        const int m = tokenizer_json_decode(t, ids, count, skip, out, sizeof out, &err);
        const char *expect = cJSON_GetObjectItem(c, keys[skip])->valuestring;
        if (m < 0 || strcmp(out, expect) != 0) {
            print_message("%s: decode(skip %d) of \"%.*s\": \"%s\", want \"%s\"\n", name, skip,
                          (int)n, text, m < 0 ? err.msg : out, expect);
            differ++;
        }
    }
    free(ids);
    free(text);
    return differ;
}

static bool same_ids(const int32_t *v, int n, const cJSON *want) {
    if (n != cJSON_GetArraySize(want)) return false;
    for (int i = 0; i < n; i++)
        if (v[i] != (int32_t)cJSON_GetArrayItem(want, i)->valuedouble) return false;
    return true;
}

/* The pairs: ids and token type ids of encode(a, b); returns how many differ. */
static int check_pairs(const tokenizer_json *t, const cJSON *pairs, const char *name, int *total) {
    int differ = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, pairs) {
        const char *a = cJSON_GetObjectItem(c, "a")->valuestring;
        const char *b = cJSON_GetObjectItem(c, "b")->valuestring;
        int32_t *ids, *types;
        vit_error err = {0};
        const int n = tokenizer_json_encode_pair(t, a, strlen(a), b, strlen(b), 0, TJ_AS_SAVED,
                                                 &ids, &types, &err);
        if (n < 0) fail_msg("%s: pair \"%s\" \"%s\": %s", name, a, b, err.msg);
        if (!same_ids(ids, n, cJSON_GetObjectItem(c, "ids")) ||
            !same_ids(types, n, cJSON_GetObjectItem(c, "type_ids"))) {
            print_message("%s: pair \"%.60s\" \"%.60s\" differs:", name, a, b);
            for (int i = 0; i < n; i++) print_message(" %d/%d", ids[i], types[i]);
            print_message("\n");
            differ++;
        }
        free(ids), free(types);
        (*total)++;
    }
    return differ;
}

static uint32_t fnv(const char *s) {
    uint32_t h = 0x811c9dc5u;
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 0x01000193u;
    return h;
}

/* generated-texts.json's 2,000 texts: ids, and the FNV-1a of both decodes. */
static int check_generated(const tokenizer_json *t, const char *name, int *total) {
    uint8_t *bytes = read_whole_file(FIXTURES "/generated-texts.json", NULL);
    cJSON *texts = cJSON_Parse((const char *)bytes);
    free(bytes);
    char path[512];
    snprintf(path, sizeof path, FIXTURES "/%s/generated.json", name);
    bytes = read_whole_file(path, NULL);
    cJSON *want = cJSON_Parse((const char *)bytes);
    free(bytes);
    assert_non_null(texts);
    assert_non_null(want);
    assert_int_equal(cJSON_GetArraySize(texts), cJSON_GetArraySize(want));
    int differ = 0;
    const cJSON *w = want->child;
    for (const cJSON *c = texts->child; c; c = c->next, w = w->next, (*total)++) {
        const char *text = c->valuestring;
        int32_t *ids;
        vit_error err = {0};
        const int n = tokenizer_json_encode(t, text, strlen(text), 0, TJ_AS_SAVED, &ids, &err);
        if (n < 0) fail_msg("%s: \"%s\": %s", name, text, err.msg);
        bool same = same_ids(ids, n, cJSON_GetArrayItem(w, 0));
        static char out[1 << 16];
        for (int skip = 1; skip >= 0 && same; skip--) {
            tokenizer_json_decode(t, ids, n, skip, out, sizeof out, &err);
            same = fnv(out) == (uint32_t)cJSON_GetArrayItem(w, 2 - skip)->valuedouble;
        }
        if (!same) {
            char *wj = cJSON_PrintUnformatted(w);
            print_message("%s: generated \"%s\" differs: want %s, got", name, text, wj);
            free(wj);
            for (int i = 0; i < n; i++) print_message(" %d", ids[i]);
            print_message("\n");
            differ++;
        }
        free(ids);
    }
    cJSON_Delete(texts), cJSON_Delete(want);
    return differ;
}

static void check_fixture(const char *name) {
    tokenizer_json *t = load(name);
    cJSON *golden = load_golden(name);
    const cJSON *cases = cJSON_GetObjectItem(golden, "cases");
    int differ = 0, total = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, cases) {
        differ += check_case(t, c, name) != 0;
        total++;
    }
    print_message("%s (%s): %d texts, %d differ\n", name, tokenizer_json_model(t), total, differ);
    assert_true(total > 400);
    assert_int_equal(differ, 0);
    int pairs = 0;
    differ = check_pairs(t, cJSON_GetObjectItem(golden, "pairs"), name, &pairs);
    print_message("%s: %d pairs, %d differ\n", name, pairs, differ);
    assert_true(pairs > 60);
    assert_int_equal(differ, 0);
    int generated = 0;
    differ = check_generated(t, name, &generated);
    print_message("%s: %d generated texts, %d differ\n", name, generated, differ);
    assert_int_equal(generated, 2000);
    assert_int_equal(differ, 0);
    cJSON_Delete(golden);
    tokenizer_json_free(t);
}

static void test_bert_wordpiece(void **state) {
    (void)state;
    check_fixture("bert-wordpiece");
}

static void test_roberta_bpe(void **state) {
    (void)state;
    check_fixture("roberta-bpe");
}

static void test_xlmr_unigram(void **state) {
    (void)state;
    check_fixture("xlmr-unigram");
}

static void test_clip_bpe(void **state) {
    (void)state;
    check_fixture("clip-bpe");
}

static void test_gpt2_split(void **state) {
    (void)state;
    check_fixture("gpt2-split");
}

static void test_mixed_wordpiece(void **state) {
    (void)state;
    check_fixture("mixed-wordpiece");
}

static void test_unigram_first(void **state) {
    (void)state;
    check_fixture("unigram-first");
}

static void test_clip_variants(void **state) {
    (void)state;
    check_fixture("clip-variants");
}

static void test_bpe_prefix(void **state) {
    (void)state;
    check_fixture("bpe-prefix");
}

static void test_llama_bpe(void **state) {
    (void)state;
    check_fixture("llama-bpe");
}

/* BPE merges by a heap: a 100,000-character piece (one word, nothing to split it) well under
 * a second (a quadratic merge loop takes minutes). */
static void test_long_text_is_fast(void **state) {
    (void)state;
    static const char *const names[] = {"roberta-bpe", "llama-bpe", "xlmr-unigram"};
    const size_t n = 100000;
    char *text = malloc(n);
    for (size_t i = 0; i < n; i++) text[i] = "thequickbrownfox"[i % 16];
    for (int k = 0; k < 3; k++) {
        tokenizer_json *t = load(names[k]);
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        int32_t *ids;
        vit_error err = {0};
        const int count = tokenizer_json_encode(t, text, n, 0, 0, &ids, &err);
        clock_gettime(CLOCK_MONOTONIC, &b);
        const double s = (double)(b.tv_sec - a.tv_sec) + 1e-9 * (double)(b.tv_nsec - a.tv_nsec);
        print_message("%s: 100,000 characters, %d ids in %.3f s\n", names[k], count, s);
        assert_true(count > 0);
        assert_true(s < 1.0);
        free(ids);
        tokenizer_json_free(t);
    }
    free(text);
}

static int load_bytes(const char *json, vit_error *err) {
    const tokenizer_json_sources src = {.json = {json, strlen(json), "x/tokenizer.json"}};
    tokenizer_json *t = NULL;
    const int rc = tokenizer_json_load_memory(&src, &t, err);
    tokenizer_json_free(t);
    return rc;
}

/* What vit does not follow is one line naming the file and the component. */
static void test_refusals(void **state) {
    (void)state;
    static const struct {
        const char *json, *want;
    } cases[] = {
        {"{\"model\":{\"type\":\"WordLevel\",\"vocab\":{}}}", "x/tokenizer.json: model WordLevel"},
        {"{\"model\":{\"type\":\"WordPiece\",\"vocab\":{\"a\":0}},\"normalizer\":{\"type\":"
         "\"Future\"}}",
         "x/tokenizer.json: normalizer Future is not one vit follows"},
        {"{\"model\":{\"type\":\"WordPiece\",\"vocab\":{\"a\":0}},\"pre_tokenizer\":{\"type\":"
         "\"CharDelimiterSplit\",\"delimiter\":\"x\"}}",
         "x/tokenizer.json: pre_tokenizer CharDelimiterSplit is not one vit follows"},
        {"{\"model\":{\"type\":\"WordPiece\",\"vocab\":{\"a\":0}},\"pre_tokenizer\":{\"type\":"
         "\"Split\",\"pattern\":{\"Regex\":\"[a-z]+\"},\"behavior\":\"Isolated\"}}",
         "x/tokenizer.json: Split's regex \"[a-z]+\" is not one vit follows"},
        {"{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[],\"dropout\":0.1}}",
         "x/tokenizer.json: BPE with dropout"},
        {"{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[\"a b\"]}}",
         "x/tokenizer.json: merge 1"},
        {"{\"model\":{\"type\":\"WordPiece\",\"vocab\":{\"a\":0}},\"decoder\":{\"type\":\"CTC\"}}",
         "x/tokenizer.json: decoder CTC is not one vit follows"},
        {"[1, 2]", "x/tokenizer.json: not a JSON object"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        vit_error err = {0};
        assert_int_equal(load_bytes(cases[i].json, &err), -1);
        if (!strstr(err.msg, cases[i].want))
            fail_msg("case %zu: \"%s\" does not say \"%s\"", i, err.msg, cases[i].want);
    }
}

static void copy_to_temp(const char *from, const char *name) {
    size_t size;
    uint8_t *bytes = read_whole_file(from, &size);
    assert_non_null(bytes);
    write_temp_file(name, bytes, size);
    free(bytes);
}

/* text_tokenizer_load prefers tokenizer.json (the class from tokenizer_config.json), and falls
 * back to the older files when tokenizer.json holds a part vit does not follow. */
static void test_folder_loader(void **state) {
    (void)state;
    char dir[600];
    snprintf(dir, sizeof dir, "%s/both", test_tmpdir());
    mkdir(dir, 0700);
    copy_to_temp(FIXTURES "/bert-wordpiece/tokenizer.json", "both/tokenizer.json");
    copy_to_temp(TEST_DATA "/bert-base-micro/vocab.txt", "both/vocab.txt");
    static const char config[] = "{\"tokenizer_class\": \"BertTokenizerFast\"}";
    write_temp_file("both/tokenizer_config.json", config, strlen(config));
    text_tokenizer *t;
    vit_error err = {0};
    if (text_tokenizer_load(dir, &t, &err) != 0) fail_msg("%s", err.msg);
    assert_string_equal(text_tokenizer_kind(t), "tokenizer.json (WordPiece)");
    assert_string_equal(text_tokenizer_class(t), "BertTokenizerFast");
    int32_t ids[16], *want;
    const int n = text_tokenizer_encode(t, NULL, "Hello world", 11, 16, ids, &err);
    tokenizer_json *j = load("bert-wordpiece");
    assert_int_equal(tokenizer_json_encode(j, "Hello world", 11, 16, 0, &want, &err), n);
    assert_memory_equal(ids, want, (size_t)n * sizeof *ids);
    free(want);
    int32_t types[16], *want_types;
    const int np =
        text_tokenizer_encode_pair(t, NULL, "Hello", 5, "world", 5, 16, ids, types, &err);
    assert_int_equal(
        tokenizer_json_encode_pair(j, "Hello", 5, "world", 5, 16, 0, &want, &want_types, &err), np);
    assert_memory_equal(ids, want, (size_t)np * sizeof *ids);
    assert_memory_equal(types, want_types, (size_t)np * sizeof *types);
    assert_int_equal(types[np - 1], 1); /* BERT's second text and its [SEP] */
    free(want), free(want_types);
    tokenizer_json_free(j);
    text_tokenizer_free(t);

    static const char refused[] = "{\"model\": {\"type\": \"WordLevel\", \"vocab\": {}}}";
    write_temp_file("both/tokenizer.json", refused, strlen(refused));
    if (text_tokenizer_load(dir, &t, &err) != 0) fail_msg("%s", err.msg);
    assert_string_equal(text_tokenizer_kind(t), "WordPiece");
    /* the older files' pairs are BertTokenizer's [CLS] a [SEP] b [SEP] (test_rerank checks more) */
    text_tokenizer_scratch *s = text_tokenizer_scratch_create(t);
    int32_t one[16];
    assert_int_equal(text_tokenizer_encode(t, s, "cat", 3, 16, one, &err), 3);
    assert_int_equal(text_tokenizer_encode_pair(t, s, "cat", 3, "cat", 3, 16, ids, types, &err), 5);
    const int32_t pair[] = {one[0], one[1], one[2], one[1], one[2]}, pair_types[] = {0, 0, 0, 1, 1};
    assert_memory_equal(ids, pair, sizeof pair);
    assert_memory_equal(types, pair_types, sizeof pair_types);
    text_tokenizer_scratch_free(s);
    text_tokenizer_free(t);
    unlink(write_temp_file("both/vocab.txt", "", 0));
    unlink(write_temp_file("both/tokenizer_config.json", "", 0));
    assert_int_equal(text_tokenizer_load(dir, &t, &err), -1);
    assert_non_null(strstr(err.msg, "model WordLevel is not one vit follows"));
}

/* tokenizer.json of bert-base-micro's own vocab.txt as BertTokenizerFast saves one. */
static char *bert_micro_json(void) {
    uint8_t *vocab = read_whole_file(TEST_DATA "/bert-base-micro/vocab.txt", NULL);
    assert_non_null(vocab);
    cJSON *v = cJSON_CreateObject();
    int id = 0;
    for (char *line = strtok((char *)vocab, "\n"); line; line = strtok(NULL, "\n"))
        cJSON_AddNumberToObject(v, line, id++);
    free(vocab);
    cJSON *root = cJSON_Parse(
        "{\"normalizer\": {\"type\": \"BertNormalizer\", \"lowercase\": true},"
        "\"pre_tokenizer\": {\"type\": \"BertPreTokenizer\"},"
        "\"post_processor\": {\"type\": \"BertProcessing\", \"sep\": [\"[SEP]\", 3], "
        "\"cls\": [\"[CLS]\", 2]}, \"decoder\": {\"type\": \"WordPiece\"},"
        "\"added_tokens\": [{\"id\": 0, \"content\": \"[PAD]\", \"special\": true, "
        "\"normalized\": false}, {\"id\": 2, \"content\": \"[CLS]\", \"special\": true, "
        "\"normalized\": false}, {\"id\": 3, \"content\": \"[SEP]\", \"special\": true, "
        "\"normalized\": false}],"
        "\"model\": {\"type\": \"WordPiece\", \"unk_token\": \"[UNK]\"}}");
    assert_non_null(root);
    cJSON_AddItemToObject(cJSON_GetObjectItem(root, "model"), "vocab", v);
    char *json = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    return json;
}

/* A BERT folder whose tokenizer is a tokenizer.json: vit_text_load reads it, vit info names it,
 * and its ids are those of the same folder with vocab.txt (BertTokenizer and its fast twin agree
 * on these texts); vit convert keeps it. */
static void test_model_folder(void **state) {
    (void)state;
    char dir[600];
    snprintf(dir, sizeof dir, "%s/bert-json", test_tmpdir());
    mkdir(dir, 0700);
    copy_to_temp(TEST_DATA "/bert-base-micro/config.json", "bert-json/config.json");
    copy_to_temp(TEST_DATA "/bert-base-micro/model.safetensors", "bert-json/model.safetensors");
    char *json = bert_micro_json();
    write_temp_file("bert-json/tokenizer.json", json, strlen(json));
    free(json);
    vit_error err = {0};
    vit_text_context *a = vit_text_load(dir, NULL, &err), *b;
    if (!a) fail_msg("%s", err.msg);
    if (!(b = vit_text_load(TEST_DATA "/bert-base-micro", NULL, &err))) fail_msg("%s", err.msg);
    vit_model_info info;
    vit_text_model_info(a, &info);
    assert_string_equal(info.tokenizer_kind, "tokenizer.json (WordPiece)");
    assert_string_equal(info.tokenizer, "PreTrainedTokenizerFast");
    static const char *const texts[] = {"the cat sat on the mat", "A DOG ran far, away!",
                                        "my old home was very good", "unknownword the",
                                        "the cat sat on the mat and then slept in the sun a dog"};
    for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
        int32_t x[64], y[64];
        const int n = vit_text_tokenize(a, texts[i], strlen(texts[i]), x, 64, &err);
        assert_int_equal(vit_text_tokenize(b, texts[i], strlen(texts[i]), y, 64, &err), n);
        assert_memory_equal(x, y, (size_t)n * sizeof *x);
    }
    vit_text_free(a), vit_text_free(b);
    if (!test_vit_bin()) return;
    const char *args[] = {"info", "-m", dir, NULL};
    test_run_result r = test_run_vit(NULL, NULL, args);
    assert_int_equal(r.status, 0);
    if (!strstr(r.out,
                "tokenizer:      PreTrainedTokenizerFast (tokenizer.json (WordPiece)), 29 ids"))
        fail_msg("vit info does not name the tokenizer.json:\n%s", r.out);
    test_run_free(&r);
    /* vit convert copies the tokenizer.json (before, the copy had no tokenizer) */
    char copy[700];
    snprintf(copy, sizeof copy, "%s/bert-json-f16", test_tmpdir());
    const char *convert[] = {"convert", dir, copy, NULL};
    r = test_run_vit(NULL, NULL, convert);
    if (r.status != 0) fail_msg("vit convert: exit %d: %s", r.status, r.err);
    test_run_free(&r);
    if (!(a = vit_text_load(copy, NULL, &err))) fail_msg("%s", err.msg);
    vit_text_model_info(a, &info);
    assert_string_equal(info.tokenizer_kind, "tokenizer.json (WordPiece)");
    vit_text_free(a);
}

/* CLIP's real vocabulary (../shared/data/clip: 49,408 tokens, 48,894 merges) as transformers'
 * CLIPConverter writes its tokenizer.json, built here from vocab.json and merges.txt. */
static char *real_clip_json(void) {
    uint8_t *vocab = read_whole_file(shared_path("data/clip/vocab.json"), NULL);
    uint8_t *merges = read_whole_file(shared_path("data/clip/merges.txt"), NULL);
    assert_non_null(vocab);
    assert_non_null(merges);
    cJSON *root = cJSON_Parse(
        "{\"added_tokens\": [{\"id\": 49406, \"content\": \"<|startoftext|>\", \"normalized\": "
        "true, \"special\": true}, {\"id\": 49407, \"content\": \"<|endoftext|>\", "
        "\"normalized\": true, \"special\": true}],"
        "\"normalizer\": {\"type\": \"Sequence\", \"normalizers\": [{\"type\": \"NFC\"}, "
        "{\"type\": \"Replace\", \"pattern\": {\"Regex\": \"\\\\s+\"}, \"content\": \" \"}, "
        "{\"type\": \"Lowercase\"}]},"
        "\"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Split\", "
        "\"pattern\": {\"Regex\": \"'s|'t|'re|'ve|'m|'ll|'d|[\\\\p{L}]+|[\\\\p{N}]|"
        "[^\\\\s\\\\p{L}\\\\p{N}]+\"}, \"behavior\": \"Removed\", \"invert\": true}, "
        "{\"type\": \"ByteLevel\", \"add_prefix_space\": false}]},"
        "\"post_processor\": {\"type\": \"RobertaProcessing\", \"sep\": [\"<|endoftext|>\", "
        "49407], \"cls\": [\"<|startoftext|>\", 49406]},"
        "\"decoder\": {\"type\": \"ByteLevel\"},"
        "\"model\": {\"type\": \"BPE\", \"unk_token\": \"<|endoftext|>\", "
        "\"continuing_subword_prefix\": \"\", \"end_of_word_suffix\": \"</w>\"}}");
    assert_non_null(root);
    cJSON *model = cJSON_GetObjectItem(root, "model"), *list = cJSON_CreateArray();
    cJSON_AddItemToObject(model, "vocab", cJSON_Parse((const char *)vocab));
    for (char *line = strtok((char *)merges, "\n"); line; line = strtok(NULL, "\n"))
        if (strncmp(line, "#version", 8) != 0) cJSON_AddItemToArray(list, cJSON_CreateString(line));
    cJSON_AddItemToObject(model, "merges", list);
    char *json = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    free(vocab), free(merges);
    return json;
}

/* The real CLIP tokenizer.json gives OpenAI's own ids (tokenizer-golden.json's 26 texts, cut to
 * CLIP's 77 tokens): an expectation independent of the tokenizers library. */
static void test_real_clip(void **state) {
    (void)state;
    REQUIRE_SHARED("data/clip/tokenizer-golden.json");
    char *json = real_clip_json();
    const tokenizer_json_sources src = {.json = {json, strlen(json), "clip/tokenizer.json"}};
    tokenizer_json *t;
    vit_error err = {0};
    if (tokenizer_json_load_memory(&src, &t, &err) != 0) fail_msg("%s", err.msg);
    free(json);
    uint8_t *bytes = read_whole_file(shared_path("data/clip/tokenizer-golden.json"), NULL);
    cJSON *golden = cJSON_Parse((const char *)bytes);
    free(bytes);
    int n = 0, differ = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(golden, "cases")) {
        const char *text = cJSON_GetObjectItem(c, "text")->valuestring;
        int32_t *ids;
        const int count = tokenizer_json_encode(t, text, strlen(text), 77, 0, &ids, &err);
        if (count < 0) fail_msg("%s", err.msg);
        if (!same_ids(ids, count, cJSON_GetObjectItem(c, "ids_77"))) {
            print_message("real CLIP: \"%s\" differs\n", text);
            differ++;
        }
        free(ids);
        n++;
    }
    print_message("real CLIP tokenizer.json: %d texts, %d differ from OpenAI's ids\n", n, differ);
    assert_int_equal(n, 26);
    assert_int_equal(differ, 0);
    cJSON_Delete(golden);
    tokenizer_json_free(t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bert_wordpiece),    cmocka_unit_test(test_roberta_bpe),
        cmocka_unit_test(test_xlmr_unigram),      cmocka_unit_test(test_clip_bpe),
        cmocka_unit_test(test_gpt2_split),        cmocka_unit_test(test_mixed_wordpiece),
        cmocka_unit_test(test_unigram_first),     cmocka_unit_test(test_clip_variants),
        cmocka_unit_test(test_bpe_prefix),        cmocka_unit_test(test_llama_bpe),
        cmocka_unit_test(test_long_text_is_fast), cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_folder_loader),     cmocka_unit_test(test_model_folder),
        cmocka_unit_test(test_real_clip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
