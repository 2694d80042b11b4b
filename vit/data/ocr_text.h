#ifndef VIT_DATA_OCR_TEXT_H
#define VIT_DATA_OCR_TEXT_H

/* The texts of synthetic printed lines (vit/data/ocr_render.h renders them): real sentences (SST-2
 * or any text file) and generated numbers, dates, prices, times, units, codes, names with accents,
 * e-mail and web addresses and signs, drawn from a seeded generator. A draw is longer than any
 * line; the renderer keeps the whole words that fit.
 *
 *   ocr_sentences s, dev;
 *   ocr_sentences_read(&s, "sst2/train.tsv", &err);    // detokenized and sentence-cased
 *   ocr_sentences_read(&dev, "sst2/dev.tsv", &err);
 *   uint64_t rng = rng_derive(seed, index, 1);
 *   ocr_text_draw(&s, &opts, &rng, buf, sizeof buf);
 *   if (ocr_sentences_contains(&dev, line, len)) ...    // a held-out sentence: draw again
 *
 * Every text is made of the characters of OCR_CHARSET only: a sentence with any other character
 * is dropped when read (counted in `dropped`). */

#include <stddef.h>
#include <stdint.h>

#include "vit/base/error.h"

/* The character set, UTF-8: printable ASCII (U+0020..U+007E, space included), the Latin-1 letters
 * U+00C0..U+00FF without the signs × and ÷ (so À..ß and à..ÿ), and £ ° €. 160 characters. */
#define OCR_CHARSET                                                                                \
    " !\"#$%&'()*+,-./"                                                                            \
    "0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrstuvwxyz"                 \
    "{|}~ÀÁÂÃÄÅÆÇÈÉÊËÌÍÎÏÐÑÒÓÔÕÖØÙÚÛÜÝÞßàáâãäåæçèéêëìíîïðñòóôõöøùúûüýþÿ£°€"
#define OCR_CHARSET_SIZE 160

/* Whether code point cp is in OCR_CHARSET. */
int ocr_charset_has(uint32_t cp);

/* Sentences read once, each cleaned (ocr_detokenize, then ocr_sentence_case). */
typedef struct {
    char *text;    /* the sentences, each ending in '\n' (and the whole in a NUL) */
    char *folded;  /* the same, lower-cased (ocr_fold_case), for ocr_sentences_contains */
    size_t *start; /* [count + 1]: sentence i is text[start[i] .. start[i + 1] - 1) */
    int count;
    int dropped; /* lines with a character outside the set, or empty once cleaned */
} ocr_sentences;

/* Reads path: a .tsv file is SST-2's layout (a header line, then `sentence<TAB>label`: the first
 * column is taken), any other file holds one sentence per line. Returns 0, or -1 with err naming
 * the file when it cannot be read or holds no usable sentence. */
int ocr_sentences_read(ocr_sentences *out, const char *path, vit_error *err);
/* The same from the bytes of such a file; name is its name in errors, tsv says which layout. */
int ocr_sentences_parse(ocr_sentences *out, const char *bytes, size_t size, const char *name,
                        int tsv, vit_error *err);
void ocr_sentences_free(ocr_sentences *s);

/* Whether text[0..len) occurs inside one of s's sentences, ignoring case (ocr_fold_case). */
int ocr_sentences_contains(const ocr_sentences *s, const char *text, size_t len);

/* SST-2 is Penn-Treebank tokenized and lower-cased: "it 's a `` charming '' film , is n't it ?".
 * ocr_detokenize joins what the tokenizer split: "it's a \"charming\" film, isn't it?" (no space
 * before , . ! ? ; : % ) ] ... 's 're 've 'll 'd 'm n't '' and a lone '; none after ( [ $ # `` `;
 * `` and '' become ", ` becomes '; spaces collapsed); such tokens at the start (a phrase cut from
 * inside a sentence: "'s a charming film") are dropped. out has room for n bytes; returns its
 * length (out is not NUL-terminated). */
size_t ocr_detokenize(const char *in, size_t n, char *out);

/* In place: the first letter of the text and of every sentence inside it (after ". ", "! ",
 * "? ") upper-cased, and the word "i" alone or before an apostrophe ("i'm") made "I". */
void ocr_sentence_case(char *text, size_t n);

/* Case mapping within OCR_CHARSET (ASCII and Latin-1 letters; ß and ÿ unchanged by upper, which
 * would leave the set), in place; the byte length never changes. */
void ocr_upper_case(char *text, size_t n);
void ocr_fold_case(char *text, size_t n);  /* lower case */
void ocr_title_case(char *text, size_t n); /* each word's first letter upper-cased */

typedef struct {
    double generated;  /* share of lines of generated numbers, dates, prices, codes */
    double upper_case; /* share of lines in capitals */
    double title_case; /* share of lines with each word capitalised */
} ocr_text_options;

#define OCR_TEXT_DEFAULTS                                                                          \
    { .generated = 0.25, .upper_case = 0.05, .title_case = 0.05 }

/* Longest text a draw makes, in bytes. */
#define OCR_DRAW_BYTES 240

/* One candidate text into buf (cap >= OCR_DRAW_BYTES + 1, NUL-terminated), drawn with *rng: with
 * probability generated (always when s is NULL or empty) generated items, else the words of a
 * sentence from the first or from a random word on, continued by further random sentences (a
 * full stop after one that ends in a letter or a digit, or for its final , ; :); then in capitals
 * or title case with those probabilities. Words are separated by single spaces and the text is cut
 * at a word's end before OCR_DRAW_BYTES. Returns its length in bytes. */
size_t ocr_text_draw(const ocr_sentences *s, const ocr_text_options *o, uint64_t *rng, char *buf,
                     size_t cap);

/* Only the generated items (the part of ocr_text_draw that makes numbers, dates, ...). */
size_t ocr_text_generate(uint64_t *rng, char *buf, size_t cap);

/* ---- page-like texts: what one line of a page holds ---- */

/* The kinds of page line, with their shares in ocr_text_draw_page (docs/OCR_DATA.md). */
typedef enum {
    OCR_TEXT_PROSE,     /* 45%: a sentence's words cut at a word's end, 1..80 characters */
    OCR_TEXT_HEADING,   /* 8%: 1-7 words in Title Case or capitals, sometimes numbered */
    OCR_TEXT_LIST,      /* 10%: "1.", "a)", "(iv)", "-", "*" ... then prose */
    OCR_TEXT_CELL,      /* 12%: a table cell: a number, an amount, a date, a word or two */
    OCR_TEXT_CODE,      /* 8%: a line of code: identifiers, operators, brackets, quotes */
    OCR_TEXT_GENERATED, /* 17%: numbers, dates, prices, codes, as ocr_text_generate */
    OCR_TEXT_KINDS
} ocr_text_kind;

/* Their names ("prose", "heading", ...), for render.tsv. */
extern const char *const ocr_text_kind_names[OCR_TEXT_KINDS];

/* The most characters (code points) of a page-like text. */
#define OCR_PAGE_CHARS 80

/* One page-like text into buf (cap >= OCR_DRAW_BYTES + 1), drawn with *rng: its kind by the shares
 * above (prose, headings and lists need sentences: without s those draws become generated
 * items), its length 1..OCR_PAGE_CHARS code points (prose: 15% 1..8, else uniform 8..80, cut at a
 * word's end; a single word longer than the length is kept whole up to 80). Sets *kind. Returns
 * the length in bytes (> 0). */
size_t ocr_text_draw_page(const ocr_sentences *s, uint64_t *rng, char *buf, size_t cap, int *kind);

/* A text of the given kind, drawn as ocr_text_draw_page draws that kind (s needed for prose,
 * headings and lists; without it those become generated items). Returns its length (> 0). */
size_t ocr_text_draw_kind(const ocr_sentences *s, int kind, uint64_t *rng, char *buf, size_t cap);

/* A paragraph for a page: whole sentences of s from their first word, each ended by a full stop,
 * or (without s) generated items, into buf until about `bytes` (< cap) are filled; at least one
 * sentence. Returns the length (buf NUL-terminated). */
size_t ocr_text_paragraph(const ocr_sentences *s, uint64_t *rng, size_t bytes, char *buf,
                          size_t cap);

/* The number of code points of the UTF-8 text[0..n). */
size_t ocr_text_chars(const char *text, size_t n);

#endif
