/* SentencePiece through libsentencepiece (text/sentencepiece.h) and SigLIP's tokenizer on it
 * (text/siglip_text.h), with the repository's model tests/data/spm-micro fixed (the harness runs
 * from the project root, as tools/fuzz does) and the input as the text: any bytes, invalid UTF-8
 * included. SigLIP's ids at 64 and at 8 (each the end token then padding, in the vocabulary, the
 * shorter the longer's start), decoded; the model's own Encode of the raw bytes and its Decode.
 * Built only when the build has libsentencepiece. */
#include <string.h>

#include "tests/fuzz/fuzz_input.h"
#include "text/siglip_text.h"

#define MODEL_DIR "tests/data/spm-micro"

static void check_siglip(const siglip_text *t, const uint8_t *text, size_t n) {
    const int vocab = spm_vocab_size(siglip_text_spm(t));
    const int32_t eos = siglip_text_eos_id(t), pad = siglip_text_pad_id(t);
    int32_t ids64[64], ids8[8];
    vit_error err;
    const int n64 = siglip_text_encode(t, (const char *)text, n, 64, ids64, &err);
    const int n8 = siglip_text_encode(t, (const char *)text, n, 8, ids8, &err);
    if (n64 < 1 || n64 > 64 || n8 < 1 || n8 > 8) abort();
    if (ids64[n64 - 1] != eos || ids8[n8 - 1] != eos) abort();
    for (int i = 0; i < 64; i++)
        if (ids64[i] < 0 || ids64[i] >= vocab || (i >= n64 && ids64[i] != pad)) abort();
    for (int i = 0; i < 8; i++)
        if (ids8[i] < 0 || ids8[i] >= vocab || (i >= n8 && ids8[i] != pad)) abort();
    /* both are the start of one sequence of pieces, before the end token */
    for (int i = 0; i + 1 < n8 && i + 1 < n64; i++)
        if (ids8[i] != ids64[i]) abort();
    char out[1024];
    if (siglip_text_decode(t, ids64, 64, true, out, sizeof out, &err) < 0) abort();
}

static void check_spm(const spm *m, const uint8_t *text, size_t n) {
    int32_t ids[256];
    vit_error err;
    const int count = spm_encode(m, (const char *)text, n, ids, 256, &err);
    if (count < 0) abort();
    const int k = count < 256 ? count : 256;
    for (int i = 0; i < k; i++)
        if (!spm_piece(m, ids[i])) abort(); /* an id out of range */
    char out[1024];
    if (spm_decode(m, ids, k, out, sizeof out, &err) < 0) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static siglip_text *siglip;
    static spm *plain;
    if (!siglip) {
        vit_error err;
        if (siglip_text_load(MODEL_DIR, &siglip, &err) != 0 ||
            spm_load(MODEL_DIR "/spiece.model", 0, &plain, &err) != 0) {
            fprintf(stderr, "fuzz_sentencepiece: %s (run from the project root)\n", err.msg);
            abort();
        }
    }
    check_siglip(siglip, data, size);
    check_spm(plain, data, size);
    return 0;
}
