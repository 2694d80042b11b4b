#ifndef VIT_DATA_TEXT_SET_H
#define VIT_DATA_TEXT_SET_H

/* Labelled sentences (or pairs of them) for training a text classifier: a `sentence<TAB>label`
 * (`a<TAB>b<TAB>label`) TSV read whole and tokenized once into memory by the model's tokenizer,
 * then padded batches of token ids for the trainer (vit/train).
 *
 *   text_set s;
 *   text_set_load(&s, "train.tsv", tok, 128, 0, labels, num_labels, &err);
 *   int T = text_set_batch(&s, idx, B, ids, NULL, mask, labels_out); // ids, mask: B·s.max_len
 *   ...
 *   text_set_free(&s);
 *
 * The file format and the label rules are those of `vit eval` on text (vit/eval/eval_text.h), and
 * text_tsv_parse_line is the parser both use: a header line (skipped, whatever it says), then one
 * `sentence<TAB>label` per line; "\r\n" endings accepted, empty lines ignored; the label a class
 * index (decimal, in 0..labels-1) or else a label name, compared exactly, then ignoring case.
 * Evaluation skips a bad line into its report; training data with a bad line is an error, named
 * the same way ("FILE:N (data line M): what is wrong", N counting the file's lines from 1). */

#include <stddef.h>
#include <stdint.h>

#include "text/text_tokenizer.h"
#include "vit/base/error.h"

/* ---- one line ---- */

typedef struct {
    const char *text; /* the sentence: the start of the line, len bytes (not NUL-terminated) */
    size_t len;
    int label;          /* 0..num_labels-1 */
    float score;        /* parsed without labels: the label field as a number (regression) */
    const char *text_b; /* a pair's second text (text_tsv_parse_pair), else NULL */
    size_t len_b;
} text_tsv_line;

/* Parses one data line line[0..n) (its "\n" or "\r\n" included or not) against the class names
 * labels[0..num_labels) (labels NULL: the label is a score, a finite decimal number, as STS-B's
 * similarity, into out->score). Returns 1 and fills *out (pointing into line), 0 for an empty line,
 * or -1 for a bad line with the reason in why[0..why_size) ("no tab between sentence and label",
 * "unknown label 'x' (expected 0..1 or one of: negative, positive)", ...; printable: invalid
 * UTF-8 and control characters of the line shown as '?'). */
int text_tsv_parse_line(const char *line, size_t n, const char *const *labels, int num_labels,
                        text_tsv_line *out, char *why, size_t why_size);

/* The same for a pair's line, `a<TAB>b<TAB>label`: text and text_b the two texts. */
int text_tsv_parse_pair(const char *line, size_t n, const char *const *labels, int num_labels,
                        text_tsv_line *out, char *why, size_t why_size);

/* ---- a whole file ---- */

/* The classes of a training file without a label list (pairs: its lines are pairs): when every
 * label is a decimal index,
 * "LABEL_0" .. "LABEL_max" (Hugging Face's default names); otherwise the distinct label names in
 * byte order. *names (caller frees each and the array) gets *count strings. Returns 0, or -1 with
 * err when the file cannot be read, a data line has no tab, or it has no data line. */
int text_tsv_classes(const char *path, int pairs, char ***names, int *count, vit_error *err);

typedef struct {
    int count;       /* sentences */
    int max_len;     /* ids per sentence at most ([CLS] and [SEP] included) */
    int longest;     /* the longest sentence's ids */
    int pad_id;      /* the id padding positions get: [PAD], or 0 without one (masked anyway) */
    int32_t *ids;    /* every sentence's ids back to back: [CLS] pieces [SEP] */
    int32_t *types;  /* pairs: every id's token type (BERT's 0 for a, 1 for b), else NULL */
    int *tags;       /* tagged words (text_set_load_tags): every id's label, -100 where none */
    size_t *offset;  /* [count + 1]: sentence i is ids[offset[i] .. offset[i + 1]) */
    int *labels;     /* [count] */
    float *scores;   /* [count] loaded without labels: each sentence's score, else NULL */
    long *data_line; /* [count]: the sentence's data line (the file's line - 1) */
} text_set;

/* Reads path, tokenizing every sentence with tok to at most max_len ids (2..; HF truncation:
 * pieces dropped from the end, the end token kept), or with pairs every `a<TAB>b<TAB>label` line
 * as tokenizer(a, b) joins and cuts them (text_tokenizer_encode_pair, with token types); labels
 * NULL: the labels are scores (scores, labels all 0). Returns
 * 0, or -1 with err when the file cannot be read, a line is bad (the first one is named), it has
 * no sentence, or memory runs out. */
int text_set_load(text_set *out, const char *path, const text_tokenizer *tok, int max_len,
                  int pairs, const char *const *labels, int num_labels, vit_error *err);
void text_set_free(text_set *s);

/* A padded batch of sentences idx[0..n) (each in 0..count-1): ids [n, T] and mask [n, T]
 * (1 = token, 0 = padding, which gets pad_id), T the longest of the n sentences (at most max_len,
 * so buffers of n·max_len always suffice); types [n, T] (may be NULL; 0 for padding and for a
 * set without pairs) their token types, labels [n] (may be NULL) their classes. Returns T. */
int text_set_batch(const text_set *s, const int *idx, int n, int32_t *ids, int32_t *types,
                   uint8_t *mask, int *labels);

/* ---- columns of texts: (anchor, positive[, negative]) rows ---- */

/* A TSV of texts, a header line then the same number of tab-separated texts (2..max_columns, at
 * most 8) on every data line, as `vit train --loss mnrl` reads them: column c's texts into
 * cols[c] (cols holds max_columns sets; labels 0, data_line each row's), each cut to max_len ids
 * as text_set_load cuts them. Returns the number of columns, or -1 with err naming the file and
 * line (another count than the first line's, one text only). */
int text_set_load_columns(text_set *cols, int max_columns, const char *path,
                          const text_tokenizer *tok, int max_len, vit_error *err);

/* ---- tagged words: token classification ---- */

/* A CoNLL-style file, as `vit eval` of tags reads it: one token and its label per line, tab or
 * space separated (the first field the token, the last its label: CoNLL-2003's four columns
 * read as token and NER tag), a blank line between sentences; -DOCSTART- lines separate
 * documents and are skipped; "\r\n" endings accepted. A line with one field is an error
 * ("FILE:N: ..."). */

/* The distinct labels of such a file, sorted (HF's run_ner get_label_list); *names (caller frees
 * each and the array) gets *count strings. */
int tag_file_labels(const char *path, char ***names, int *count, vit_error *err);

/* Reads such a file into out, each sentence as HF's token-classification example tokenizes it
 * (is_split_into_words): every word on its own (after a space, as add_prefix_space gives each
 * word of a byte-level BPE its "Ġ"), its pieces between the start and end tokens, cut to max_len
 * keeping the end token; tags: the word's label (an exact name of labels[0..num_labels)) on its
 * first piece, -100 on its other pieces and the special tokens (label_all_tokens False). Sentence
 * labels are 0; data_line holds the file's line (from 1) of each sentence's first word. Errors as
 * text_set_load's, and an unknown label names it and its line. */
int text_set_load_tags(text_set *out, const char *path, const text_tokenizer *tok, int max_len,
                       const char *const *labels, int num_labels, vit_error *err);

/* The tags of text_set_batch's batch idx[0..n) of T ids: tags [n, T], -100 on the padding.
 * Returns the number of tags that count (not -100). */
int text_set_batch_tags(const text_set *s, const int *idx, int n, int T, int *tags);

#endif
