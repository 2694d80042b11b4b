#ifndef VIT_EVAL_REPORT_H
#define VIT_EVAL_REPORT_H

/* Accuracy bookkeeping for `vit eval` (images and text alike): top-1/top-5, per-class precision
 * and recall, the confusion matrix and the inputs that could not be read. */

#include <stdio.h>

#include "vit/base/error.h"

typedef struct eval_report eval_report;

eval_report *eval_report_create(int num_labels, vit_error *err);
void eval_report_free(eval_report *r);

/* One evaluated input: its true class and the model's probabilities [num_labels].
 * Returns the predicted class. */
int eval_report_add(eval_report *r, int true_label, const float *probs);
/* The same in two steps: the predicted class of probs [labels] and whether the true class is
 * among the 5 best (ties in its favour); then that result into the report. */
void eval_score(const float *probs, int labels, int true_label, int *pred, int *in_top5);
void eval_report_add_result(eval_report *r, int true_label, int pred, int in_top5);
/* One input skipped, with the reason (copied). A reason of the form "INPUT: why" keeps only
 * "why", so messages that already name the input are not repeated. */
int eval_report_skip(eval_report *r, const char *input, const char *reason);

int eval_report_count(const eval_report *r);
int eval_report_skipped(const eval_report *r);
double eval_report_top1(const eval_report *r);
double eval_report_top5(const eval_report *r);

typedef struct {
    const char *model, *data;
    const char *const *labels; /* [num_labels] */
    const char *const
        *folders;     /* [num_labels] folder (or label text) per class; NULL entries allowed */
    const char *unit; /* "images" or "texts" */
    double seconds;
} eval_summary;

/* The human report (stdout). */
void eval_report_print(const eval_report *r, const eval_summary *s, FILE *out);
/* Its list of the inputs skipped and why (nothing when none was). */
void eval_report_print_skipped(const eval_report *r, FILE *out);
/* The confusion matrix as a picture (plot_matrix: the classes that occur, at most
 * PLOT_MAX_MATRIX), written to path as PNG. Returns 0, or -1 with err naming the path. */
int eval_report_write_confusion_png(const eval_report *r, const eval_summary *s, const char *path,
                                    vit_error *err);
/* The --json document. Returns -1 on write failure. */
int eval_report_write_json(const eval_report *r, const eval_summary *s, FILE *out);

#endif
