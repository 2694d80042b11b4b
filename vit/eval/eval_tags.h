#ifndef VIT_EVAL_TAGS_H
#define VIT_EVAL_TAGS_H

/* A token classifier (NER, POS) on a file of labelled words, for `vit eval`, as transformers'
 * token-classification example evaluates one (run_ner.py with the seqeval metric):
 *
 *   tag_eval_result res;
 *   if (tag_eval_file(model_dir, "dev.conll", &(tag_eval_options){0}, NULL, &res, &err)) ...
 *   tag_eval_print(&res, model_dir, "dev.conll", stdout);
 *   tag_eval_result_free(&res);
 *
 * The file, either of:
 *   - CoNLL: one word a line, its label the line's last white-space-separated field, the word
 *     its first (so `word<TAB>label`, `word label` and CoNLL-2003's `word POS chunk label`); a
 *     blank line between sentences; -DOCSTART- lines left out;
 *   - JSON lines (a first character '{'): {"tokens": [...], "ner_tags": [...]} per sentence, the
 *     tags label names or indices into the model's id2label (what datasets' conll2003 holds).
 * Each sentence is its words joined by spaces, encoded with offsets (as is_split_into_words
 * gives for WordPiece and SentencePiece; byte-level BPE without add_prefix_space differs on the
 * first word), cut to the model's length; a word's prediction is its first token's most probable
 * label, as the example labels only a word's first sub-token. Words without a token (cut off, or
 * made of characters the tokenizer drops) count in neither sequence.
 * Metrics as seqeval's defaults (mode None, the conlleval-like chunking of get_entities: IOB2 or
 * IOB1, a chunk ends at O, at a B-, or where the type changes; a label's first character is its
 * tag and the rest after the first '-' its type): for each type of the true or predicted
 * entities, precision, recall, F1 and the true entities' number; micro-averaged over all; and
 * the words' accuracy. */

#include <stdio.h>

#include "vit/base/error.h"
#include "vit/vit.h"

typedef struct {
    int batch;   /* sentences per forward pass; 0 = 32 */
    int threads; /* 0 = one per core */
    vit_backend backend;
    vit_precision precision;
} tag_eval_options;

typedef struct {
    char *type;
    long true_count, pred_count, correct;
    double precision, recall, f1;
} tag_eval_type;

typedef struct {
    long sentences, words, words_without_token, correct_words;
    double accuracy;
    tag_eval_type *types; /* sorted by name */
    int num_types;
    tag_eval_type overall; /* micro average; type "micro" */
    double seconds;
} tag_eval_result;

/* Entities of labels[0..n) as seqeval's get_entities finds them: for each, its type into
 * types[k] (a pointer into its label), its first and last word. Returns their number (at most
 * n). */
typedef struct {
    const char *type;
    size_t type_len;
    int first, last;
} tag_entity;
int tag_entities(const char *const *labels, int n, tag_entity *out);

/* Counts of true and predicted entities (n words of sentence order) into types: what
 * tag_eval_file does with each sentence's labels; and the scores from the counts. */
typedef struct tag_counts tag_counts;
tag_counts *tag_counts_create(void);
int tag_counts_add(tag_counts *c, const char *const *truth, const char *const *pred, int n);
int tag_counts_result(const tag_counts *c, tag_eval_result *out);
void tag_counts_free(tag_counts *c);

/* Evaluates model_dir on path. predictions (may be NULL) gets the file back in CoNLL form,
 * `word<TAB>true<TAB>predicted` a line, a blank line after each sentence. 0 and *out (free it
 * with tag_eval_result_free), or -1 with err naming the file and line of what is wrong. */
int tag_eval_file(const char *model_dir, const char *path, const tag_eval_options *options,
                  FILE *predictions, tag_eval_result *out, vit_error *err);
void tag_eval_print(const tag_eval_result *r, const char *model, const char *data, FILE *out);
/* The report as the evaluate library's seqeval metric names it: types {TYPE: {precision, recall,
 * f1, number, found, correct}}, overall_precision, overall_recall, overall_f1, overall_accuracy,
 * plus the counts. */
void tag_eval_write_json(const tag_eval_result *r, const char *model, const char *data, FILE *out);
void tag_eval_result_free(tag_eval_result *r);

#endif
