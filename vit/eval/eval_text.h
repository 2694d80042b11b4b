#ifndef VIT_TEXT_EVAL_H
#define VIT_TEXT_EVAL_H

/* Accuracy of a BERT text classifier on a labelled TSV file, for `vit eval` on text:
 *
 *   text_eval_result res;
 *   if (text_eval_tsv(model_dir, "dev.tsv", &(text_eval_options){.batch = 32}, pred, &res, &err))
 *       ... err.msg ...
 *   eval_summary s = {.model = model_dir, .data = "dev.tsv", .labels = res.labels,
 *                     .unit = "texts", .seconds = res.seconds};
 *   eval_report_print(res.report, &s, stdout);
 *   text_eval_result_free(&res);
 *
 * The file: a header line (skipped, whatever it says), then one `sentence<TAB>label` per line;
 * "\r\n" endings are accepted and empty lines ignored. The label is a class index (decimal, in
 * 0..labels-1) or else a name of config.json's id2label, compared exactly, then ignoring case.
 * A line without a tab, with more than one tab, or with a label that is neither is skipped into
 * the report (eval_report_skip) and evaluation goes on: input "FILE:N", reason "FILE:N (data line
 * M): what is wrong", where N counts the file's lines from 1 (the header is line 1) and the data
 * line M = N - 1 counts the lines after the header.
 * Sentences are UTF-8; invalid bytes are skipped, as the tokenizer documents. The file is read as
 * a stream: memory holds one chunk of lines (8 batches, at most 1024 lines unless a batch is
 * larger), whatever the file's size; each chunk runs in batches of similar length. */

#include <stdio.h>

#include "vit/base/error.h"
#include "vit/eval/report.h"
#include "vit/vit.h"

typedef struct {
    int batch;   /* sentences per forward pass; 0 = 32 */
    int threads; /* forward-pass threads; 0 = one per core */
    vit_backend backend;
    vit_precision precision;
    int pairs; /* lines `a<TAB>b<TAB>label`: pairs through vit_text_forward_pairs */
} text_eval_options;

typedef struct {
    eval_report *report; /* owned: texts evaluated (classes), skipped lines, confusion */
    /* a regression model (problem_type regression; the file's labels are scores, as STS-B's):
     * the texts scored and how the scores agree with the file's, as STS-B is reported */
    int regression, scored;
    double pearson, spearman, mse;
    int num_labels;
    const char *const *labels; /* owned: id2label, num_labels names */
    double seconds;            /* reading, tokenizing and classifying, model loading excluded */
} text_eval_result;

/* Evaluates model_dir (a BertForSequenceClassification folder) on tsv_path. When predictions is
 * non-NULL it receives a header `line\ttrue\tpredicted\tprobability` and one row per evaluated
 * sentence: its data line M, the true and predicted class indices and the predicted class's
 * probability (so row M of a file without empty lines is its M-th sentence); a regression model's
 * `line\ttrue\tpredicted`, the true and predicted scores. Returns 0 and fills
 * *out (free it with text_eval_result_free) or -1 with err when the model or the file cannot be
 * read, or writing the predictions fails; bad lines are not errors. */
int text_eval_tsv(const char *model_dir, const char *tsv_path, const text_eval_options *options,
                  FILE *predictions, text_eval_result *out, vit_error *err);
void text_eval_result_free(text_eval_result *r);

/* Pearson's and Spearman's correlations of x and y [n] (scipy.stats' pearsonr and spearmanr:
 * Spearman's is Pearson's of the ranks, ties given their mean rank; NaN when either is constant
 * or n < 2) and the mean squared difference. */
void text_eval_agreement(const double *x, const double *y, int n, double *pearson, double *spearman,
                         double *mse);

#endif
