/* SentencePiece through libsentencepiece (text/sentencepiece.h) and SigLIP's tokenizer on it
 * (text/siglip_text.h), on the repository's micro model tests/data/spm-micro (spm_train on SST-2
 * sentences, SigLIP's layout): every golden text of tools/spm_reference.py gives exactly the ids
 * of Debian's python3-sentencepiece (the model's own Encode, with and without the dummy prefix,
 * and Decode) and of the SiglipTokenizer written there from transformers' code, in three
 * configurations and at three lengths; pieces, special ids; one tokenizer used from several
 * threads at once; and files that are missing, corrupt or configured in ways not implemented,
 * each refused in one line naming the file. In a build without libsentencepiece every test that
 * needs it is skipped, saying so, and loading is checked to be refused. */
#include "tests/testutil.h"

#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "text/siglip_text.h"
#include "text/sentencepiece.h"

#define MODEL_DIR TEST_DATA "/spm-micro"
#define MODEL     MODEL_DIR "/spiece.model"
#define MAX_IDS   4096

#define REQUIRE_SENTENCEPIECE()                                                                    \
    do {                                                                                           \
        if (!spm_library()) {                                                                      \
            print_message("SKIP %s: this vit was built without SentencePiece "                     \
                          "(libsentencepiece-dev not installed, or SENTENCEPIECE=0)\n",            \
                          __func__);                                                               \
            skip();                                                                                \
        }                                                                                          \
    } while (0)

static cJSON *golden;

static const cJSON *golden_item(const char *key) {
    if (!golden) {
        char *json = (char *)read_whole_file(MODEL_DIR "/golden.json", NULL);
        if (!json) fail_msg("%s/golden.json: cannot read", MODEL_DIR);
        golden = cJSON_Parse(json);
        free(json);
        if (!golden) fail_msg("%s/golden.json: not JSON", MODEL_DIR);
    }
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(golden, key);
    if (!item) fail_msg("golden.json has no '%s'", key);
    return item;
}

/* Hex digits as the bytes they spell (NUL-terminated, *len without it); the goldens' texts are
 * hex because some are not UTF-8 or hold a NUL. */
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

/* A golden case's text, as its exact bytes. */
static char *case_bytes(const cJSON *c, size_t *len) {
    return hex_bytes(cJSON_GetObjectItemCaseSensitive(c, "hex")->valuestring, len);
}

/* What the case's text looks like in a message: its JSON "text". */
static const char *case_text(const cJSON *c) {
    return cJSON_GetObjectItemCaseSensitive(c, "text")->valuestring;
}

static void expect_ids(const char *what, const cJSON *c, const int32_t *got, int n,
                       const char *key) {
    const cJSON *want = cJSON_GetObjectItemCaseSensitive(c, key);
    if (n != cJSON_GetArraySize(want))
        fail_msg("%s \"%.60s\": %d ids, Python gives %d", what, case_text(c), n,
                 cJSON_GetArraySize(want));
    for (int i = 0; i < n; i++)
        if (got[i] != cJSON_GetArrayItem(want, i)->valueint)
            fail_msg("%s \"%.60s\": id %d is %d, Python gives %d", what, case_text(c), i, got[i],
                     cJSON_GetArrayItem(want, i)->valueint);
}

static void expect_decoded(const char *what, const cJSON *c, const char *got, int n) {
    size_t want_len;
    char *want = hex_bytes(cJSON_GetObjectItemCaseSensitive(c, "decoded")->valuestring, &want_len);
    if ((size_t)n != want_len || memcmp(got, want, want_len) != 0)
        fail_msg("%s \"%.60s\": decoded to \"%.*s\", Python gives \"%s\"", what, case_text(c), n,
                 got, want);
    free(want);
}

static spm *load_spm(const char *path, unsigned flags) {
    spm *m = NULL;
    vit_error err = {0};
    if (spm_load(path, flags, &m, &err) != 0) fail_msg("spm_load(%s): %s", path, err.msg);
    return m;
}

/* ---- the model itself ---- */

static void test_spm_golden(void **state) {
    (void)state;
    REQUIRE_SENTENCEPIECE();
    spm *plain = load_spm(MODEL, 0), *no_dummy = load_spm(MODEL, SPM_NO_DUMMY_PREFIX);
    assert_int_equal(spm_vocab_size(plain), golden_item("vocab_size")->valueint);
    assert_int_equal(spm_unk_id(plain), golden_item("unk_id")->valueint);
    assert_int_equal(spm_bos_id(plain), golden_item("bos_id")->valueint);
    assert_int_equal(spm_eos_id(plain), golden_item("eos_id")->valueint);
    assert_int_equal(spm_pad_id(plain), golden_item("pad_id")->valueint);
    /* SigLIP's layout: <pad> 0, </s> 1, <unk> 2, no start token */
    assert_int_equal(spm_pad_id(plain), 0);
    assert_int_equal(spm_eos_id(plain), 1);
    assert_int_equal(spm_unk_id(plain), 2);
    assert_int_equal(spm_bos_id(plain), -1);
    const cJSON *pieces = golden_item("pieces");
    for (int i = 0; i < spm_vocab_size(plain); i++) {
        const char *want = cJSON_GetArrayItem(pieces, i)->valuestring;
        assert_string_equal(spm_piece(plain, i), want);
        assert_int_equal(spm_piece_id(plain, want), i);
    }
    assert_null(spm_piece(plain, -1));
    assert_null(spm_piece(plain, spm_vocab_size(plain)));
    assert_int_equal(spm_piece_id(plain, "no such piece"), -1);

    int32_t ids[MAX_IDS];
    char decoded[MAX_IDS];
    int cases = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, golden_item("spm")) {
        size_t len;
        char *text = case_bytes(c, &len);
        vit_error err = {0};
        int n = spm_encode(plain, text, len, ids, MAX_IDS, &err);
        assert_true(n >= 0 && n <= MAX_IDS);
        expect_ids("spm_encode", c, ids, n, "ids");
        const int d = spm_decode(plain, ids, n, decoded, sizeof decoded, &err);
        assert_true(d >= 0 && d < (int)sizeof decoded);
        expect_decoded("spm_decode", c, decoded, d);
        n = spm_encode(no_dummy, text, len, ids, MAX_IDS, &err);
        expect_ids("spm_encode (no dummy prefix)", c, ids, n, "ids_no_dummy");
        /* a smaller cap: the first ids, and the count of all of them */
        if (n > 2) {
            int32_t few[2] = {-7, -7};
            assert_int_equal(spm_encode(no_dummy, text, len, few, 1, &err), n);
            assert_int_equal(few[0], ids[0]);
            assert_int_equal(few[1], -7);
        }
        free(text);
        cases++;
    }
    print_message("spm: %d texts give python3-sentencepiece's ids (with and without the dummy "
                  "prefix) and decoded text\n",
                  cases);
    assert_true(cases >= 90);
    spm_free(plain);
    spm_free(no_dummy);
}

static void test_spm_decode(void **state) {
    (void)state;
    REQUIRE_SENTENCEPIECE();
    spm *m = load_spm(MODEL, 0);
    vit_error err = {0};
    const int32_t bad[] = {5, spm_vocab_size(m)};
    assert_int_equal(spm_decode(m, bad, 2, NULL, 0, &err), -1);
    assert_non_null(strstr(err.msg, "out of range"));
    assert_non_null(strstr(err.msg, MODEL));
    const int32_t negative[] = {-1};
    assert_int_equal(spm_decode(m, negative, 1, NULL, 0, &err), -1);
    /* snprintf's contract: the whole length, a cut and terminated text */
    int32_t ids[64];
    const char *text = "the film is a hit";
    const int n = spm_encode(m, text, strlen(text), ids, 64, &err);
    char small[5];
    assert_int_equal(spm_decode(m, ids, n, small, sizeof small, &err), (int)strlen(text));
    assert_string_equal(small, "the ");
    assert_int_equal(spm_decode(m, ids, 0, small, sizeof small, &err), 0);
    assert_string_equal(small, "");
    spm_free(m);
}

/* ---- SigLIP ---- */

static siglip_text *load_siglip(const char *dir) {
    siglip_text *t = NULL;
    vit_error err = {0};
    if (siglip_text_load(dir, &t, &err) != 0) fail_msg("siglip_text_load(%s): %s", dir, err.msg);
    return t;
}

/* A folder holding the model and the JSON files given (NULL: left out). */
static const char *make_folder(const char *name, const char *config, const char *special_map) {
    static char dir[4096];
    snprintf(dir, sizeof dir, "%s/%s", test_tmpdir(), name);
    mkdir(dir, 0700);
    size_t size;
    uint8_t *model = read_whole_file(MODEL, &size);
    assert_non_null(model);
    char file[4200];
    snprintf(file, sizeof file, "%s/spiece.model", name);
    write_temp_file(file, model, size);
    free(model);
    snprintf(file, sizeof file, "%s/tokenizer_config.json", name);
    if (config) write_temp_file(file, config, strlen(config));
    snprintf(file, sizeof file, "%s/special_tokens_map.json", name);
    if (special_map) write_temp_file(file, special_map, strlen(special_map));
    return dir;
}

/* The folder of one of golden.json's configurations. */
static const char *config_folder(const char *config) {
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(golden_item("configs"), config);
    if (!c) fail_msg("golden.json has no configuration %s", config);
    char *tc = cJSON_Print(cJSON_GetObjectItemCaseSensitive(c, "tokenizer_config"));
    char *sm = cJSON_Print(cJSON_GetObjectItemCaseSensitive(c, "special_tokens_map"));
    const char *dir = make_folder(config, tc, sm);
    free(tc);
    free(sm);
    return dir;
}

/* A golden case of decoding only: ids that are not the tokenizer's own (the model's Encode of
 * text with punctuation), decoded as SiglipTokenizer.decode does. */
static void decode_case(const siglip_text *t, const char *config, const cJSON *c) {
    const cJSON *list = cJSON_GetObjectItem(c, "ids");
    int32_t ids[MAX_IDS];
    const int n = cJSON_GetArraySize(list);
    assert_true(n <= MAX_IDS);
    for (int i = 0; i < n; i++) ids[i] = cJSON_GetArrayItem(list, i)->valueint;
    char decoded[MAX_IDS];
    vit_error err = {0};
    const int d = siglip_text_decode(t, ids, n, true, decoded, sizeof decoded, &err);
    assert_true(d >= 0 && d < (int)sizeof decoded);
    expect_decoded(config, c, decoded, d);
}

static void test_siglip_golden(void **state) {
    (void)state;
    REQUIRE_SENTENCEPIECE();
    const char *configs[] = {"siglip", "cased", "extra"};
    int total = 0;
    for (int k = 0; k < 3; k++) {
        siglip_text *t = load_siglip(config_folder(configs[k]));
        int cases = 0, cut = 0, decoded_only = 0;
        const cJSON *c;
        cJSON_ArrayForEach(c, golden_item("siglip")) {
            if (strcmp(cJSON_GetObjectItem(c, "config")->valuestring, configs[k]) != 0) continue;
            if (cJSON_GetObjectItem(c, "decode_only")) {
                decode_case(t, configs[k], c);
                decoded_only++;
                continue;
            }
            size_t len;
            char *text = case_bytes(c, &len);
            const int max_len = cJSON_GetObjectItem(c, "max_length")->valueint;
            int32_t ids[MAX_IDS];
            vit_error err = {0};
            const int n = siglip_text_encode(t, text, len, max_len, ids, &err);
            if (n < 0) fail_msg("siglip_text_encode(\"%s\"): %s", case_text(c), err.msg);
            expect_ids(configs[k], c, ids, max_len, "ids");
            assert_int_equal(n, cJSON_GetObjectItem(c, "length")->valueint);
            char decoded[MAX_IDS];
            const int d = siglip_text_decode(t, ids, max_len, true, decoded, sizeof decoded, &err);
            assert_true(d >= 0 && d < (int)sizeof decoded);
            expect_decoded(configs[k], c, decoded, d);
            cut += n == max_len && max_len > 1;
            free(text);
            cases++;
        }
        print_message("SigLIP (%s): %d texts give the ids and decoded text of the Python "
                      "SiglipTokenizer, %d of them cut at their max_length; %d other id lists "
                      "decode as it decodes them\n",
                      configs[k], cases, cut, decoded_only);
        assert_true(cases >= 90 && cut >= 5);
        total += cases;
        siglip_text_free(t);
    }
    assert_true(total >= 450);
}

/* The fixture folder as committed (tokenizer_config.json and special_tokens_map.json as
 * save_pretrained writes them) is the "siglip" configuration. */
static void test_siglip_fixture(void **state) {
    (void)state;
    REQUIRE_SENTENCEPIECE();
    siglip_text *t = load_siglip(MODEL_DIR);
    assert_int_equal(siglip_text_max_len(t), 64);
    assert_int_equal(siglip_text_eos_id(t), 1);
    assert_int_equal(siglip_text_pad_id(t), 1);
    assert_int_equal(siglip_text_unk_id(t), 2);
    assert_int_equal(spm_vocab_size(siglip_text_spm(t)), 512);
    int cases = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, golden_item("siglip")) {
        if (strcmp(cJSON_GetObjectItem(c, "config")->valuestring, "siglip") != 0 ||
            cJSON_GetObjectItem(c, "decode_only"))
            continue;
        size_t len;
        char *text = case_bytes(c, &len);
        const int max_len = cJSON_GetObjectItem(c, "max_length")->valueint;
        int32_t ids[MAX_IDS];
        vit_error err = {0};
        assert_int_equal(siglip_text_encode(t, text, len, max_len, ids, &err),
                         cJSON_GetObjectItem(c, "length")->valueint);
        expect_ids("spm-micro", c, ids, max_len, "ids");
        free(text);
        cases++;
    }
    assert_true(cases >= 90);
    /* a NULL text of length 0 is the empty text: the end token, then padding */
    int32_t ids[4];
    vit_error err = {0};
    assert_int_equal(siglip_text_encode(t, NULL, 0, 4, ids, &err), 1);
    for (int i = 0; i < 4; i++) assert_int_equal(ids[i], 1);
    assert_int_equal(siglip_text_encode(t, "x", 1, 0, ids, &err), -1);
    assert_non_null(strstr(err.msg, "bad arguments"));
    siglip_text_free(t);
}

/* Without a tokenizer_config.json or special_tokens_map.json SiglipTokenizer's defaults apply:
 * lower case, 64, </s> and <unk> stripping the white space beside them; the ids are those of the
 * saved configuration. */
static void test_siglip_defaults(void **state) {
    (void)state;
    REQUIRE_SENTENCEPIECE();
    siglip_text *bare = load_siglip(make_folder("bare", NULL, NULL));
    siglip_text *saved = load_siglip(MODEL_DIR);
    assert_int_equal(siglip_text_max_len(bare), 64);
    const char *texts[] = {"A Photo of THE Cat!", "  x </s>   y  ", "", "<unk> \u0130stanbul"};
    for (int i = 0; i < 4; i++) {
        int32_t a[64], b[64];
        vit_error err = {0};
        assert_int_equal(siglip_text_encode(bare, texts[i], strlen(texts[i]), 64, a, &err),
                         siglip_text_encode(saved, texts[i], strlen(texts[i]), 64, b, &err));
        assert_memory_equal(a, b, sizeof a);
    }
    siglip_text_free(bare);
    siglip_text_free(saved);
}

/* additional_special_tokens in both files: tokenizer_config.json's list, then
 * special_tokens_map.json's entries not in it, as from_pretrained merges them (before, only the
 * map's list was read: "<pad>" below was split into pieces). The same ids as the "extra"
 * configuration, which lists both tokens in both files. */
static void test_siglip_additional_from_both_files(void **state) {
    (void)state;
    REQUIRE_SENTENCEPIECE();
    siglip_text *both = load_siglip(config_folder("extra"));
    siglip_text *merged = load_siglip(make_folder(
        "merged", "{\"additional_special_tokens\": [\"<pad>\"], \"model_max_length\": 16}",
        "{\"eos_token\": {\"content\": \"</s>\", \"lstrip\": false, \"rstrip\": false}, "
        "\"additional_special_tokens\": [\"<0xAB>\"]}"));
    const char *texts[] = {"a <pad> b <0xAB> c", "<pad><pad>x", "the<0xAB>film </s> ok"};
    for (int i = 0; i < 3; i++) {
        int32_t a[16], b[16];
        vit_error err = {0};
        const int n = siglip_text_encode(both, texts[i], strlen(texts[i]), 16, a, &err);
        assert_int_equal(siglip_text_encode(merged, texts[i], strlen(texts[i]), 16, b, &err), n);
        assert_memory_equal(a, b, sizeof a);
        int pads = 0;
        for (int k = 0; k < n; k++) pads += a[k] == 0;
        if (strstr(texts[i], "<pad>")) assert_true(pads >= 1); /* "<pad>" is one id, 0 */
    }
    siglip_text_free(both);
    siglip_text_free(merged);
}

/* ---- one tokenizer, several threads ---- */

typedef struct {
    const siglip_text *t;
    int rounds, mismatches;
    const int32_t *want; /* [texts][64] */
} thread_job;

static const char *const thread_texts[] = {
    "a photo of a cat",
    "Zürich and the Alps, seen from the lake.",
    "",
    "</s> hi </s>",
    "I was born in 92000, and this is falsé.",
    "\xff\xfe broken \xe2\x82 bytes",
    "a very long text that goes on and on, past the end of the context, "
    "a very long text that goes on and on, past the end of the context, "
    "a very long text that goes on and on, past the end of the context."};
enum { N_THREAD_TEXTS = sizeof thread_texts / sizeof *thread_texts };

static void *encode_many(void *arg) {
    thread_job *job = arg;
    for (int r = 0; r < job->rounds; r++)
        for (int i = 0; i < N_THREAD_TEXTS; i++) {
            int32_t ids[64];
            vit_error err;
            const int n =
                siglip_text_encode(job->t, thread_texts[i], strlen(thread_texts[i]), 64, ids, &err);
            job->mismatches += n < 0 || memcmp(ids, job->want + 64 * i, sizeof ids) != 0;
        }
    return NULL;
}

static void test_threads(void **state) {
    (void)state;
    REQUIRE_SENTENCEPIECE();
    siglip_text *t = load_siglip(MODEL_DIR);
    int32_t want[N_THREAD_TEXTS][64];
    for (int i = 0; i < N_THREAD_TEXTS; i++) {
        vit_error err = {0};
        assert_true(
            siglip_text_encode(t, thread_texts[i], strlen(thread_texts[i]), 64, want[i], &err) > 0);
    }
    enum { THREADS = 4 };
    pthread_t th[THREADS];
    thread_job jobs[THREADS];
    for (int k = 0; k < THREADS; k++) {
        jobs[k] = (thread_job){t, 200, 0, &want[0][0]};
        assert_int_equal(pthread_create(&th[k], NULL, encode_many, &jobs[k]), 0);
    }
    int mismatches = 0;
    for (int k = 0; k < THREADS; k++) {
        pthread_join(th[k], NULL);
        mismatches += jobs[k].mismatches;
    }
    print_message("threads: %d threads x %d texts x 200 rounds on one tokenizer, %d differ from "
                  "the texts' ids alone\n",
                  THREADS, N_THREAD_TEXTS, mismatches);
    assert_int_equal(mismatches, 0);
    siglip_text_free(t);
}

/* ---- refusals: one line, naming the file ---- */

static void expect_one_line(const char *msg, const char *names) {
    if (strchr(msg, '\n')) fail_msg("more than one line: %s", msg);
    if (!strstr(msg, names)) fail_msg("\"%s\" does not name %s", msg, names);
}

static void expect_spm_refused(const char *path, const char *says) {
    spm *m = (spm *)1;
    vit_error err = {0};
    assert_int_equal(spm_load(path, 0, &m, &err), -1);
    assert_null(m);
    expect_one_line(err.msg, path);
    if (!strstr(err.msg, says)) fail_msg("%s: \"%s\" does not say \"%s\"", path, err.msg, says);
}

static void test_spm_bad_files(void **state) {
    (void)state;
    REQUIRE_SENTENCEPIECE();
    char missing[4200];
    snprintf(missing, sizeof missing, "%s/no-such.model", test_tmpdir());
    expect_spm_refused(missing, "No such file");
    expect_spm_refused(test_tmpdir(), "is a directory");
    expect_spm_refused(write_temp_file("empty.model", "", 0), "not a SentencePiece model");
    const char *text = "this is a text file, not a model\n";
    expect_spm_refused(write_temp_file("text.model", text, strlen(text)),
                       "not a SentencePiece model");
    size_t size;
    uint8_t *model = read_whole_file(MODEL, &size);
    assert_non_null(model);
    /* cut anywhere (a download broken off): every cut tried in coarse steps, none accepted */
    int cuts = 0;
    for (size_t cut = 1; cut < size; cut += size / 97 + 1, cuts++)
        expect_spm_refused(write_temp_file("cut.model", model, cut), "not a SentencePiece model");
    /* bytes flipped in the pieces' table: refused, or a model that still loads; never a crash */
    for (size_t at = 16; at < 4096; at += 61) {
        uint8_t *bad = malloc(size);
        memcpy(bad, model, size);
        bad[at] ^= 0xA5;
        spm *m = NULL;
        vit_error err = {0};
        if (spm_load_memory(bad, size, "flipped.model", 0, &m, &err) == 0) {
            int32_t ids[64];
            assert_true(spm_encode(m, "a test", 6, ids, 64, &err) >= 0);
            spm_free(m);
        } else {
            expect_one_line(err.msg, "flipped.model");
        }
        free(bad);
    }
    print_message(
        "bad model files: missing, a folder, empty, text and %d cuts refused in one line; "
        "flipped bytes never crash\n",
        cuts);
    free(model);
}

static void expect_siglip_refused(const char *name, const char *config, const char *special_map,
                                  const char *file, const char *says) {
    const char *dir = make_folder(name, config, special_map);
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    siglip_text *t = (siglip_text *)1;
    vit_error err = {0};
    assert_int_equal(siglip_text_load(dir, &t, &err), -1);
    assert_null(t);
    expect_one_line(err.msg, path);
    if (!strstr(err.msg, says)) fail_msg("%s: \"%s\" does not say \"%s\"", name, err.msg, says);
}

static void test_siglip_bad_settings(void **state) {
    (void)state;
    REQUIRE_SENTENCEPIECE();
    const char *tc = "tokenizer_config.json", *sm = "special_tokens_map.json";
    expect_siglip_refused("not-json", "{\"do_lower_case\": tru", NULL, tc, "not a JSON object");
    expect_siglip_refused("not-object", "[1, 2]", NULL, tc, "not a JSON object");
    expect_siglip_refused("bad-bool", "{\"do_lower_case\": \"yes\"}", NULL, tc,
                          "'do_lower_case' must be true or false");
    expect_siglip_refused("t5", "{\"tokenizer_class\": \"T5Tokenizer\"}", NULL, tc,
                          "tokenizer_class T5Tokenizer is not SiglipTokenizer");
    expect_siglip_refused("sampling", "{\"sp_model_kwargs\": {\"enable_sampling\": true}}", NULL,
                          tc, "sp_model_kwargs");
    expect_siglip_refused("split", "{\"split_special_tokens\": true}", NULL, tc,
                          "split_special_tokens");
    expect_siglip_refused("left", "{\"padding_side\": \"left\"}", NULL, tc, "padding_side");
    expect_siglip_refused("max-len", "{\"model_max_length\": 0}", NULL, tc, "model_max_length");
    expect_siglip_refused("single-word",
                          "{\"added_tokens_decoder\": {\"1\": {\"content\": \"</s>\", "
                          "\"single_word\": true}}}",
                          NULL, tc, "single_word");
    expect_siglip_refused("added",
                          "{\"added_tokens_decoder\": {\"400\": {\"content\": \"<new>\"}}}", NULL,
                          tc, "not a special token");
    expect_siglip_refused("bad-id", "{\"added_tokens_decoder\": {\"x\": {\"content\": \"</s>\"}}}",
                          NULL, tc, "is not an id");
    expect_siglip_refused("bad-token", NULL, "{\"eos_token\": 5}", sm, "'eos_token' must be");
    expect_siglip_refused("spaced", NULL, "{\"additional_special_tokens\": [\" <x>\"]}", sm,
                          "white space");
    /* a special token the model does not have: named with the model */
    expect_siglip_refused("not-a-piece", NULL, "{\"additional_special_tokens\": [\"<mask>\"]}",
                          "spiece.model", "\"<mask>\" is not a piece of the model");
    /* the model itself missing */
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/empty-folder", test_tmpdir());
    mkdir(dir, 0700);
    siglip_text *t;
    vit_error err = {0};
    assert_int_equal(siglip_text_load(dir, &t, &err), -1);
    expect_one_line(err.msg, "empty-folder/spiece.model");
    assert_non_null(strstr(err.msg, "No such file"));
}

static void test_siglip_corrupt_model(void **state) {
    (void)state;
    REQUIRE_SENTENCEPIECE();
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/corrupt", test_tmpdir());
    mkdir(dir, 0700);
    write_temp_file("corrupt/spiece.model", "junk", 4);
    siglip_text *t = (siglip_text *)1;
    vit_error err = {0};
    assert_int_equal(siglip_text_load(dir, &t, &err), -1);
    assert_null(t);
    expect_one_line(err.msg, "corrupt/spiece.model");
    assert_non_null(strstr(err.msg, "not a SentencePiece model"));
}

#ifndef VIT_SENTENCEPIECE
/* A build without the library refuses the model in one line that says why, before reading it. */
static void test_refused_without_sentencepiece(void **state) {
    (void)state;
    assert_null(spm_library());
    spm *m = (spm *)1;
    vit_error err = {0};
    assert_int_equal(spm_load(MODEL, 0, &m, &err), -1);
    assert_null(m);
    expect_one_line(err.msg, MODEL);
    assert_non_null(strstr(err.msg, "built without SentencePiece support"));
    assert_non_null(strstr(err.msg, "libsentencepiece-dev"));
    siglip_text *t = (siglip_text *)1;
    assert_int_equal(siglip_text_load(MODEL_DIR, &t, &err), -1);
    assert_null(t);
    expect_one_line(err.msg, MODEL);
    assert_non_null(strstr(err.msg, "built without SentencePiece support"));
    print_message("without libsentencepiece: %s\n", err.msg);
}
#endif

int main(void) {
    const struct CMUnitTest tests[] = {
#ifndef VIT_SENTENCEPIECE
        cmocka_unit_test(test_refused_without_sentencepiece),
#endif
        cmocka_unit_test(test_spm_golden),
        cmocka_unit_test(test_spm_decode),
        cmocka_unit_test(test_siglip_golden),
        cmocka_unit_test(test_siglip_fixture),
        cmocka_unit_test(test_siglip_defaults),
        cmocka_unit_test(test_siglip_additional_from_both_files),
        cmocka_unit_test(test_threads),
        cmocka_unit_test(test_spm_bad_files),
        cmocka_unit_test(test_siglip_bad_settings),
        cmocka_unit_test(test_siglip_corrupt_model),
    };
    const int rc = cmocka_run_group_tests(tests, NULL, NULL);
    cJSON_Delete(golden);
    return rc;
}
