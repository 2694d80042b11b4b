#ifndef VIT_TEXT_TEXT_ERRORS_H
#define VIT_TEXT_TEXT_ERRORS_H

/* How far a recognised text is from the true one: the character and word error rates of OCR and
 * speech recognition (CER, WER), as jiwer and the ICDAR tools count them.
 *
 *   text_errors e;
 *   if (text_errors_count("a cat sat", 9, "a bat sat", 9, &e, &err) == 0)
 *       // e.char_edits 1 of e.chars 9; e.word_edits 1 of e.words 3
 *
 * Normalisation: white space is collapsed, nothing else. Both texts are decoded as UTF-8 (each
 * invalid run counting as one U+FFFD, as Python's errors="replace"), runs of Unicode White_Space
 * characters (tab, line feed, form feed, space, no-break space, U+2000..U+200A, ...) become one
 * space and those at the ends go. Case, accents, quotes and Unicode normal forms are compared as
 * they are: 'A' vs 'a', '\'' vs U+2019 and a precomposed vs a combining 'é' are all errors.
 * Characters are Unicode code points; words are the white-space-separated pieces, equal when their
 * bytes are. The edit distance is Levenshtein's: insertions, deletions and substitutions, each
 * costing 1. A corpus's rates are sums: CER = sum of char_edits / sum of chars (so a line's weight
 * is its length), WER likewise; they can exceed 1 when the recognised texts are longer. */

#include <stddef.h>
#include <stdint.h>

#include "vit/base/error.h"

typedef struct {
    long char_edits; /* code-point edit distance, after normalisation */
    long chars;      /* code points of the true text, after normalisation */
    long word_edits; /* word edit distance */
    long words;      /* words of the true text */
} text_errors;

/* Longest text compared, in bytes (a line of OCR or a sentence: far below it). The distance takes
 * time n·m and memory n + m. */
#define TEXT_ERRORS_MAX_BYTES 65536

/* Counts the edits turning the true text ref[0..ref_len) into the recognised hyp[0..hyp_len).
 * Returns 0, or -1 with err when a text is longer than TEXT_ERRORS_MAX_BYTES or memory runs out. */
int text_errors_count(const char *ref, size_t ref_len, const char *hyp, size_t hyp_len,
                      text_errors *out, vit_error *err);

/* Adds b's counts to a's (a corpus's sums). */
void text_errors_add(text_errors *a, const text_errors *b);

/* The rates of counts e: char_edits / chars and word_edits / words. An empty true text has rate 0
 * when nothing was recognised and 1 otherwise (an error, without a length to weigh it by). */
double text_errors_cer(const text_errors *e);
double text_errors_wer(const text_errors *e);

/* The normalisation above, exposed: text[0..len) decoded (invalid runs as U+FFFD), white space
 * collapsed, into cps (room for len code points). Returns the code points written. */
size_t text_normalize_code_points(const char *text, size_t len, uint32_t *cps);

/* Whether cp has Unicode's White_Space property. */
int text_is_space(uint32_t cp);

/* Levenshtein distance between a[0..n) and b[0..m); row holds m + 1 longs of scratch. */
long text_edit_distance(const uint32_t *a, size_t n, const uint32_t *b, size_t m, long *row);

#endif
