/* CLIP's byte-level BPE (text/bpe.h). The first byte picks what the rest is: even, a text to
 * encode (any bytes: invalid UTF-8 included) with a small vocabulary built here (every byte
 * symbol, a few words' merges, the special tokens), then decoded; odd, vocab.json and merges.txt
 * themselves (split at the first 0xff byte), then a fixed text through whatever loads. */
#include <string.h>

#include "tests/fuzz/fuzz_input.h"
#include "text/bpe.h"
#include "text/utf8.h"

/* GPT-2's symbol of byte c as a JSON string's contents (\uXXXX). */
static int symbol_json(int c, char *out) {
    int n = 0, printable = (c >= 33 && c <= 126) || (c >= 161 && c <= 172) || c >= 174;
    if (!printable)
        for (int d = 0; d < c; d++)
            n += !((d >= 33 && d <= 126) || (d >= 161 && d <= 172) || d >= 174);
    return sprintf(out, "\\u%04x", printable ? c : 256 + n);
}

/* Every byte symbol (alone, and with </w>), then each word's merges left to right: "t h",
 * "th e</w>", ... and the special tokens. */
static bpe *small_vocabulary(void) {
    static const char *const words[] = {"the", "cat", "photo", "dog", "of", "a", "'s", "ing"};
    static char vocab[32768], merges[4096];
    int id = 0, v = sprintf(vocab, "{"), m = sprintf(merges, "#version: 0.2\n");
    for (int pass = 0; pass < 2; pass++)
        for (int c = 0; c < 256; c++) {
            v += sprintf(vocab + v, "\"");
            v += symbol_json(c, vocab + v);
            v += sprintf(vocab + v, "%s\": %d, ", pass ? "</w>" : "", id++);
        }
    for (size_t w = 0; w < sizeof words / sizeof *words; w++) {
        const size_t n = strlen(words[w]);
        for (size_t k = 1; k < n; k++) {
            const char *end = k + 1 == n ? "</w>" : "";
            m += sprintf(merges + m, "%.*s %c%s\n", (int)k, words[w], words[w][k], end);
            v += sprintf(vocab + v, "\"%.*s%s\": %d, ", (int)(k + 1), words[w], end, id++);
        }
    }
    sprintf(vocab + v, "\"<|startoftext|>\": %d, \"<|endoftext|>\": %d}", id, id + 1);
    bpe *b;
    vit_error err;
    if (bpe_load_memory(vocab, strlen(vocab), merges, strlen(merges), "fuzz", &b, &err) != 0) {
        fprintf(stderr, "fuzz_bpe: the built-in vocabulary does not load: %s\n", err.msg);
        abort();
    }
    return b;
}

static void encode_decode(const bpe *b, const uint8_t *text, size_t n) {
    int32_t ids[80];
    vit_error err;
    const int count = bpe_encode(b, (const char *)text, n, 80, ids, &err);
    if (count < 2 || count > 80 || ids[0] != bpe_bos_id(b) || ids[count - 1] != bpe_eos_id(b))
        abort();
    for (int i = 0; i < count; i++)
        if (!bpe_piece(b, ids[i])) abort(); /* an id out of range */
    char out[1024];
    if (bpe_decode(b, ids, count, out, sizeof out) < 0) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static bpe *fixed;
    if (!fixed) fixed = small_vocabulary();
    if (size == 0) return 0;
    if ((data[0] & 1) == 0) {
        encode_decode(fixed, data + 1, size - 1);
        return 0;
    }
    const uint8_t *vocab, *merges;
    size_t nvocab, nmerges;
    fuzz_split(data + 1, size - 1, 0xff, &vocab, &nvocab, &merges, &nmerges);
    bpe *b;
    vit_error err;
    if (bpe_load_memory((const char *)vocab, nvocab, (const char *)merges, nmerges, "fuzz", &b,
                        &err) != 0)
        return 0;
    static const char text[] = "A photo of the cat's <|endoftext|> 12 caf\xc3\xa9!";
    encode_decode(b, (const uint8_t *)text, sizeof text - 1);
    bpe_free(b);
    return 0;
}
