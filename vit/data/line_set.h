#ifndef VIT_DATA_LINE_SET_H
#define VIT_DATA_LINE_SET_H

/* Images with their texts, for training an image-to-text model (vit/train's image-to-text task):
 * a folder holding the images and a `labels.tsv`, one `file<TAB>text` per line, read by the
 * reader `vit eval` scores with (vit/data/line_tsv.h: the same rules and messages), every image
 * required to exist.
 * The texts are tokenized once into label ids as Hugging Face's TrOCR fine-tuning makes them:
 * tokenizer(text).input_ids (RoBERTa's <s> ... </s>), cut to max_len, ending with the end token
 * (added when the tokenizer puts none there, as GPT-2's: generation stops only at it).
 *
 *   line_list l;
 *   line_list_read("data/train", &l, &err);            // l.paths[i], l.texts[i]
 *   line_labels y;
 *   line_labels_encode(&l, tok, 64, &y, &err);         // y.ids[y.offset[i] .. y.offset[i + 1])
 *   int T = line_labels_batch(&y, idx, n, T_max, labels);   // [n, T], -100 after each text
 */

#include <stddef.h>
#include <stdint.h>

#include "text/text_tokenizer.h"
#include "vit/base/error.h"

#define LINE_LABELS_FILE "labels.tsv"
#define LINE_IGNORED     (-100) /* a label position that does not count (HF's ignore_index) */

typedef struct {
    int count;
    char **paths; /* [count] the images' full paths */
    char **texts; /* [count] their texts */
} line_list;

/* dir/labels.tsv. Errors name the file and line: line_tsv_read's, and an image that does not
 * exist. */
int line_list_read(const char *dir, line_list *out, vit_error *err);
void line_list_free(line_list *l);

typedef struct {
    int count, longest; /* texts, the most ids of one */
    int32_t *ids;       /* every text's ids back to back */
    size_t *offset;     /* [count + 1] */
} line_labels;

/* Label ids of every text of l, at most max_len (>= 2) each. Errors: the tokenizer's, naming the
 * text's line. */
int line_labels_encode(const line_list *l, const text_tokenizer *tok, int max_len, line_labels *out,
                       vit_error *err);
void line_labels_free(line_labels *y);

/* The labels of texts idx[0..n) as rows of T (the longest of them; at least 1), LINE_IGNORED
 * after each text's ids, into labels [n, T]. Returns T. *tokens (may be NULL): the ids counted. */
int line_labels_batch(const line_labels *y, const int *idx, int n, int *labels, int *tokens);

#endif
