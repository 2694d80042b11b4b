#ifndef VIT_TEXT_BERT_BASIC_H
#define VIT_TEXT_BERT_BASIC_H

/* BERT's BasicTokenizer (Hugging Face transformers, Python): text -> words ready for WordPiece.
 *   1. decode UTF-8, dropping invalid bytes, U+0000, U+FFFD and every category C* character except
 *      tab, newline and carriage return; those and category Zs become a space;
 *   2. spaces around CJK ideographs;
 *   3. NFC;
 *   4. split on whitespace (space, U+2028, U+2029: what Python's str.split() still sees);
 *   5. per word: Python's str.lower() (U+0130 -> "i" U+0307, final sigma by context within the
 *      word, as BasicTokenizer and the golden ids have it; transformers' tokenize() wrapper lowers
 *      character by character beforehand, which always gives a medial sigma), then NFD with
 *      category Mn removed;
 *   6. every punctuation character (ASCII 33-47, 58-64, 91-96, 123-126 or category P*) becomes a
 *      word of its own.
 * A word equal to a never_split string after step 4 is passed on whole, skipping steps 5 and 6.
 * Unicode data comes from utf8proc (Unicode 15; Python 3.11 has 14, so only characters new in 15
 * can differ: Python drops them as unassigned). */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vit/base/error.h"

typedef struct {
    bool lower_case;    /* step 5's lower-casing */
    bool strip_accents; /* step 5's NFD and Mn removal */
    bool chinese_chars; /* step 2 */
    bool split_punct;   /* step 6 */
    /* Words (after steps 1-4) equal to one of these code point strings skip steps 5 and 6, as
     * BasicTokenizer's never_split does (BertTokenizer passes its special tokens) */
    const int32_t *const *never_split;
    const size_t *never_split_len;
    int num_never_split;
} bert_basic_options;

/* Code point buffers that grow as needed and are reused from word to word and call to call. */
typedef struct {
    uint8_t *bytes; /* cleaned text, and each word re-encoded for utf8proc */
    size_t bytes_cap;
    int32_t *text; /* NFC text */
    size_t text_cap;
    int32_t *word; /* lower-cased word */
    size_t word_cap;
    int32_t *nfd; /* decomposed word */
    size_t nfd_cap;
} bert_scratch;

void bert_scratch_free(bert_scratch *s);

/* Receives each word in order; returning nonzero stops the tokenization (the caller is full). */
typedef int (*bert_word_fn)(const int32_t *cp, size_t n, void *ctx);

/* Runs the steps above over text[0..len). Returns 0 when done, 1 when fn stopped it, -1 (with err)
 * when memory ran out. */
int bert_basic_tokenize(const bert_basic_options *o, const char *text, size_t len, bert_scratch *s,
                        bert_word_fn fn, void *ctx, vit_error *err);

#endif
