/* vocab.txt + tokenizer: the input's bytes up to the first 0xff byte are the vocabulary (made to
 * hold the special tokens, so that most inputs load), the rest a text to encode (any bytes:
 * invalid UTF-8 included). */
#include <string.h>

#include "tests/fuzz/fuzz_input.h"
#include "text/wordpiece.h"

static const char specials[] = "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const uint8_t *vocab, *text;
    size_t nvocab, ntext;
    fuzz_split(data, size, 0xff, &vocab, &nvocab, &text, &ntext);
    uint8_t *file = malloc(sizeof specials - 1 + nvocab);
    if (!file) return 0;
    memcpy(file, specials, sizeof specials - 1);
    memcpy(file + sizeof specials - 1, vocab, nvocab);
    fuzz_write("vocab.txt", file, sizeof specials - 1 + nvocab);
    free(file);
    tokenizer *tok;
    vit_error err;
    if (tokenizer_load(fuzz_dir(), &tok, &err) != 0) return 0;
    char *s = malloc(ntext + 1);
    int32_t ids[64];
    const char *pieces[64];
    if (s) {
        memcpy(s, text, ntext);
        s[ntext] = 0;
        const int n = tokenizer_encode(tok, s, ntext, 64, ids, pieces, &err);
        for (int i = 0; i < n; i++)
            if (ids[i] < 0 || ids[i] >= tokenizer_vocab_size(tok)) abort(); /* an id out of range */
    }
    free(s);
    tokenizer_free(tok);
    return 0;
}
