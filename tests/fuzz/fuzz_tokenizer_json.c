/* tokenizer.json (text/tokenizer_json.h). The first byte picks what the rest is:
 *   0: a tokenizer.json itself, loaded from bytes; when it loads, a few fixed texts encoded (as
 *      saved and not, with and without the template) and their ids decoded both ways;
 *   1: a text (any bytes, its first 8 KiB) through the ten fixtures of tests/data/tokenizer-json
 *      (the first byte also picks the flags), its ids decoded, and cut to a short max_len: never
 *      more ids than asked; then its two halves as a pair, the same; and its offsets (BERT's and
 *      RoBERTa's fixtures), each within the text;
 *   2: arbitrary ids (two bytes each, some past the vocabulary) decoded by the ten: an error or a
 *      text, the same length whatever the buffer. */
#include "tests/fuzz/fuzz_input.h"
#include "text/tokenizer_json.h"

static const char *const fixtures[] = {
    "bert-wordpiece", "roberta-bpe",     "xlmr-unigram",  "clip-bpe",      "llama-bpe",
    "gpt2-split",     "mixed-wordpiece", "unigram-first", "clip-variants", "bpe-prefix"};
#define NFIX 10

static tokenizer_json *fixture(int k) {
    static tokenizer_json *loaded[NFIX];
    if (!loaded[k]) {
        char dir[256];
        snprintf(dir, sizeof dir, "tests/data/tokenizer-json/%s", fixtures[k]);
        vit_error err = {0};
        if (tokenizer_json_load(dir, &loaded[k], &err) != 0) {
            fprintf(stderr, "%s (run from the project root)\n", err.msg);
            abort();
        }
    }
    return loaded[k];
}

/* The same length whatever the buffer, and a whole text in one that fits. */
static void decode(const tokenizer_json *t, const int32_t *ids, int n, int skip) {
    vit_error err = {0};
    char small[8], *big;
    const int len = tokenizer_json_decode(t, ids, n, skip, small, sizeof small, &err);
    if (len < 0) return;
    if (!(big = malloc((size_t)len + 1))) abort();
    if (tokenizer_json_decode(t, ids, n, skip, big, (size_t)len + 1, &err) != len) abort();
    free(big);
}

static void decode_both(const tokenizer_json *t, const int32_t *ids, int n) {
    decode(t, ids, n, 0);
    decode(t, ids, n, 1);
}

/* One encode with the flags given, its decode, and a cut one. */
static void encode(const tokenizer_json *t, const char *text, size_t len, unsigned flags,
                   int skip) {
    int32_t *ids;
    vit_error err = {0};
    const int n = tokenizer_json_encode(t, text, len, 0, flags, &ids, &err);
    if (n < 0) return;
    decode(t, ids, n, skip);
    free(ids);
    const int cut = tokenizer_json_encode(t, text, len, 5, flags & TJ_NO_SPECIAL, &ids, &err);
    if (cut > 5) abort();
    if (cut >= 0) free(ids);
}

/* The text's halves as a pair, cut or not: never more ids than asked, as many type ids. */
static void encode_pair(const tokenizer_json *t, const char *text, size_t len, unsigned flags) {
    for (int max_len = 0; max_len <= 7; max_len += 7) {
        int32_t *ids, *types;
        vit_error err = {0};
        const int n = tokenizer_json_encode_pair(t, text, len / 2, text + len / 2, len - len / 2,
                                                 max_len, flags, &ids, &types, &err);
        if (n < 0) continue;
        if (max_len && n > max_len) abort();
        free(ids), free(types);
    }
}

/* Its offsets, whole and cut (when the tokenizer has them): each within the text, its start
 * not past its end, never more than asked. */
static void offsets(const tokenizer_json *t, const char *text, size_t len) {
    for (int max_len = 0; max_len <= 5; max_len += 5) {
        int32_t *ids, *starts, *ends;
        vit_error err = {0};
        const int n =
            tokenizer_json_encode_offsets(t, text, len, max_len, &ids, &starts, &ends, &err);
        if (n < 0) continue;
        if (max_len && n > max_len) abort();
        for (int i = 0; i < n; i++)
            if (starts[i] < 0 || starts[i] > ends[i] || (size_t)ends[i] > len) abort();
        free(ids), free(starts), free(ends);
    }
}

static void encode_all(const tokenizer_json *t, const char *text, size_t len) {
    for (unsigned flags = 0; flags < 4; flags++) encode(t, text, len, flags, flags & 1);
    offsets(t, text, len);
}

static void from_json(const uint8_t *data, size_t size) {
    const tokenizer_json_sources src = {.json = {(const char *)data, size, "fuzz/tokenizer.json"}};
    tokenizer_json *t;
    vit_error err = {0};
    if (tokenizer_json_load_memory(&src, &t, &err) != 0) return;
    static const char *const texts[] = {"", "Hello, world!", "  a  b  ", "caf\xc3\xa9 \xff",
                                        "\xe6\x97\xa5\xe6\x9c\xac <s> [MASK]"};
    for (int i = 0; i < 5; i++) encode_all(t, texts[i], strlen(texts[i]));
    encode_pair(t, texts[4], strlen(texts[4]), 0);
    encode_pair(t, texts[4], strlen(texts[4]), TJ_AS_SAVED);
    int32_t ids[8] = {0, 1, 2, 3, 4, 5, 100, 1000};
    decode_both(t, ids, 8);
    tokenizer_json_free(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    const int mode = data[0] % 3;
    const unsigned flags = data[0] / 3 % 4; /* mode 1: the encode's flags */
    data++, size--;
    if (mode == 0) {
        from_json(data, size);
    } else if (mode == 1) {
        /* a text past 8 KiB finds nothing more than its first 8 KiB would, and takes time */
        const size_t n = size < 8192 ? size : 8192;
        for (int k = 0; k < NFIX; k++) {
            encode(fixture(k), (const char *)data, n, flags, flags & 1);
            encode_pair(fixture(k), (const char *)data, n, flags);
            offsets(fixture(k), (const char *)data, n);
        }
    } else {
        int32_t ids[256];
        int n = 0;
        for (size_t i = 0; i + 1 < size && n < 256; i += 2) ids[n++] = data[i] | data[i + 1] << 8;
        for (int k = 0; k < NFIX; k++) decode_both(fixture(k), ids, n);
    }
    return 0;
}
