/* Byte-level BPE (text/bpe.h, text/byte_level.h). The first byte picks what the rest is:
 *   0: a text (any bytes: invalid UTF-8 included) through a small CLIP vocabulary built here
 *      (every byte symbol, a few words' merges, the special tokens), then decoded;
 *   1: vocab.json and merges.txt themselves (split at the first 0xff byte), loaded as CLIP's and
 *      as GPT-2's, then a fixed text through whatever loads;
 *   2: a text through GPT-2's pattern with a small GPT-2 vocabulary (merges across "Ġ", special
 *      tokens written in the text) that must decode back to the text exactly (byte-level BPE
 *      loses nothing), and through a RoBERTa one (<mask> with lstrip, prefix space, clean-up);
 *   3: arbitrary ids (two bytes each, a few past either end of the vocabulary) decoded by all
 *      three, with and without the special tokens: an error exactly when an id is out of range,
 *      the same length whatever the buffer. */
#include <string.h>

#include "tests/fuzz/fuzz_input.h"
#include "text/bpe.h"
#include "text/byte_level.h"
#include "text/utf8.h"

static int printable(int c) {
    return (c >= 33 && c <= 126) || (c >= 161 && c <= 172) || c >= 174;
}

/* GPT-2's symbol of byte c as a code point. */
static int symbol(int c) {
    int n = 0;
    if (printable(c)) return c;
    for (int d = 0; d < c; d++) n += !printable(d);
    return 256 + n;
}

/* Appends the symbols of text's bytes as UTF-8 to out; returns the bytes written. */
static int symbols(const char *text, size_t n, char *out) {
    int o = 0;
    for (size_t i = 0; i < n; i++)
        o += (int)utf8_encode(symbol((uint8_t)text[i]), (uint8_t *)out + o);
    return o;
}

/* Every byte symbol (alone, and with </w> for CLIP), then each word's merges left to right, then
 * the special tokens (a JSON object's members). */
static void write_vocabulary(int clip, const char *const *words, int n_words, const char *specials,
                             char *vocab, char *merges) {
    int id = 0, v = sprintf(vocab, "{"), m = sprintf(merges, "#version: 0.2\n");
    for (int pass = 0; pass < 1 + clip; pass++)
        for (int c = 0; c < 256; c++)
            v += sprintf(vocab + v, "\"\\u%04x%s\": %d, ", symbol(c), pass ? "</w>" : "", id++);
    for (int w = 0; w < n_words; w++) {
        const size_t n = strlen(words[w]);
        for (size_t k = 1; k < n; k++) {
            const char *end = clip && k + 1 == n ? "</w>" : "";
            char left[64], right[16], joined[80];
            left[symbols(words[w], k, left)] = '\0';
            right[symbols(words[w] + k, 1, right)] = '\0';
            m += sprintf(merges + m, "%s %s%s\n", left, right, end);
            joined[symbols(words[w], k + 1, joined)] = '\0';
            v += sprintf(vocab + v, "\"%s%s\": %d, ", joined, end, id++);
        }
    }
    sprintf(vocab + v, specials, id, id + 1, id + 2, id + 3, id + 4);
}

/* The byte-level tokenizer of the given files (names "vocab.json", "merges.txt"). */
static byte_level *load_byte_level(const char *vocab, const char *merges, const char *config) {
    const byte_level_sources src = {
        {vocab, strlen(vocab), "vocab.json"},
        {merges, strlen(merges), "merges.txt"},
        {config, strlen(config), "tokenizer_config.json"},
        {NULL, 0, "special_tokens_map.json"},
    };
    byte_level *t;
    vit_error err;
    if (byte_level_load_memory(&src, &t, &err) != 0) {
        fprintf(stderr, "fuzz_bpe: the built-in tokenizer does not load: %s\n", err.msg);
        abort();
    }
    return t;
}

/* CLIP's vocabulary, as text/bpe.h's vocabulary and as CLIPTokenizer. */
static bpe *clip_vocabulary(byte_level **clip) {
    static const char *const words[] = {"the", "cat", "photo", "dog", "of", "a", "'s", "ing"};
    static char vocab[32768], merges[4096];
    write_vocabulary(1, words, 8, "\"<|startoftext|>\": %d, \"<|endoftext|>\": %d}", vocab, merges);
    bpe *b;
    vit_error err;
    if (bpe_load_memory(vocab, strlen(vocab), merges, strlen(merges), "fuzz", BPE_CLIP, &b, &err) !=
        0) {
        fprintf(stderr, "fuzz_bpe: the built-in vocabulary does not load: %s\n", err.msg);
        abort();
    }
    *clip = load_byte_level(vocab, merges, "{\"tokenizer_class\": \"CLIPTokenizer\"}");
    return b;
}

/* A byte-level tokenizer of class config over a GPT-2-style vocabulary. */
static byte_level *byte_level_vocabulary(const char *config) {
    static const char *const words[] = {" the", " cat", "the", " photo", " dog", " of",
                                        "'s",   "ing",  "  ",  " 1",     "00",   "\xc3\xa9"};
    static char vocab[32768], merges[4096];
    write_vocabulary(0, words, 12,
                     "\"<s>\": %d, \"</s>\": %d, \"<pad>\": %d, \"<mask>\": %d, "
                     "\"<|endoftext|>\": %d}",
                     vocab, merges);
    return load_byte_level(vocab, merges, config);
}

static void clip_encode_decode(const bpe *b, byte_level *clip, const uint8_t *text, size_t n) {
    int32_t ids[80];
    vit_error err;
    const int count = bpe_encode(b, (const char *)text, n, 80, ids, &err);
    if (count < 2 || count > 80 || ids[0] != bpe_bos_id(b) || ids[count - 1] != bpe_eos_id(b))
        abort();
    for (int i = 0; i < count; i++)
        if (!bpe_piece(b, ids[i])) abort(); /* an id out of range */
    char out[1024];
    if (byte_level_decode(clip, ids, count, true, out, sizeof out, &err) < 0) abort();
}

/* text as Python reads it with errors="replace" (out has room for 3 bytes per input byte). */
static size_t replaced(const uint8_t *text, size_t n, char *out) {
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        const int32_t c = utf8_decode_replace(text, n, &i);
        o += utf8_encode(c < 0 ? 0xFFFD : c, (uint8_t *)out + o);
    }
    return o;
}

static void round_trip(const byte_level *gpt2, const byte_level *roberta, const uint8_t *text,
                       size_t n) {
    /* an invalid byte is U+FFFD's three bytes, each at most an id */
    static int32_t ids[3 * 4096 + 2];
    static char out[3 * 4096 + 64], want[3 * 4096 + 64];
    if (n > 4096) return;
    vit_error err;
    int count = byte_level_encode(gpt2, (const char *)text, n, 3 * 4096 + 2, ids, &err);
    if (count < 0) abort();
    const int len = byte_level_decode(gpt2, ids, count, false, out, sizeof out, &err);
    const size_t want_len = replaced(text, n, want);
    if (len < 0 || (size_t)len != want_len || memcmp(out, want, want_len) != 0) abort();
    count = byte_level_encode(roberta, (const char *)text, n, 64, ids, &err);
    if (count < 2 || count > 64 || ids[0] != byte_level_bos_id(roberta)) abort();
    for (int i = 0; i < count; i++)
        if (!byte_level_piece(roberta, ids[i])) abort();
    if (byte_level_decode(roberta, ids, count, true, out, sizeof out, &err) < 0) abort();
}

/* Arbitrary ids: an error exactly when one is out of range; the length never depends on the
 * room given. */
static void decode_ids(const byte_level *t, const uint8_t *data, size_t size) {
    int32_t ids[512];
    int n = 0, bad = 0;
    const int vocab = byte_level_vocab_size(t);
    for (size_t i = 0; i + 1 < size && n < 512; i += 2) {
        ids[n] = (int32_t)((data[i] | data[i + 1] << 8) % (vocab + 4)) - 2;
        bad |= !byte_level_piece(t, ids[n++]);
    }
    static char out[512 * 64];
    char small[7];
    for (int skip = 0; skip < 2; skip++) {
        vit_error err;
        const int len = byte_level_decode(t, ids, n, skip, out, sizeof out, &err);
        if ((len < 0) != bad) abort();
        if (len >= 0 && byte_level_decode(t, ids, n, skip, small, sizeof small, &err) != len)
            abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static bpe *fixed;
    static byte_level *clip, *gpt2, *roberta;
    if (!fixed) {
        fixed = clip_vocabulary(&clip);
        gpt2 = byte_level_vocabulary("{\"tokenizer_class\": \"GPT2Tokenizer\"}");
        roberta = byte_level_vocabulary(
            "{\"tokenizer_class\": \"RobertaTokenizer\", \"add_prefix_space\": true, "
            "\"clean_up_tokenization_spaces\": true, \"unk_token\": \"<|endoftext|>\"}");
    }
    if (size == 0) return 0;
    switch (data[0] & 3) {
    case 0:
        clip_encode_decode(fixed, clip, data + 1, size - 1);
        return 0;
    case 2:
        round_trip(gpt2, roberta, data + 1, size - 1);
        return 0;
    case 3:
        decode_ids(gpt2, data + 1, size - 1);
        decode_ids(roberta, data + 1, size - 1);
        decode_ids(clip, data + 1, size - 1);
        return 0;
    }
    const uint8_t *vocab, *merges;
    size_t nvocab, nmerges;
    fuzz_split(data + 1, size - 1, 0xff, &vocab, &nvocab, &merges, &nmerges);
    for (unsigned flags = 0; flags <= BPE_CLIP; flags++) {
        bpe *b;
        vit_error err;
        if (bpe_load_memory((const char *)vocab, nvocab, (const char *)merges, nmerges, "fuzz",
                            flags, &b, &err) != 0)
            continue;
        static const char text[] = "A photo of the cat's <|endoftext|> 12 caf\xc3\xa9!";
        if (flags == BPE_CLIP) {
            int32_t ids[80];
            if (bpe_encode(b, text, sizeof text - 1, 80, ids, &err) < 2) abort();
        }
        bpe_free(b);
    }
    return 0;
}
