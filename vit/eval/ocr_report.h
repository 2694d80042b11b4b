#ifndef VIT_EVAL_OCR_REPORT_H
#define VIT_EVAL_OCR_REPORT_H

/* Character and word error rates of a text recogniser over a set of lines (text/text_errors.h:
 * Levenshtein distances over code points and words, white space collapsed and nothing else),
 * the lines read exactly, the worst lines and those that could not be read, for `vit eval` on
 * text-line images:
 *
 *   ocr_report *r = ocr_report_create(&err);
 *   ocr_report_add(r, "0001.png", "true text", "recognised text", &err);   // each line
 *   ocr_report_print(r, &(ocr_summary){.model = dir, .data = tsv, .worst = 10}, stdout);
 *   ocr_report_free(r);
 *
 * The rates are the corpus's: all lines' edits over all lines' true characters (or words). */

#include <stdio.h>

#include "text/text_errors.h"
#include "vit/base/error.h"

typedef struct ocr_report ocr_report;

ocr_report *ocr_report_create(vit_error *err);
void ocr_report_free(ocr_report *r);

/* One line: its file, true text and recognised text (NUL-terminated, copied). Returns 0, or -1
 * with err (out of memory, a text too long to compare). */
int ocr_report_add(ocr_report *r, const char *file, const char *truth, const char *recognised,
                   vit_error *err);
/* One line that could not be read, and why (copied). Returns 0, or -1 when out of memory. */
int ocr_report_skip(ocr_report *r, const char *file, const char *reason);

int ocr_report_count(const ocr_report *r);   /* lines scored */
int ocr_report_skipped(const ocr_report *r); /* lines skipped */
int ocr_report_exact(const ocr_report *r);   /* lines without a character error */
text_errors ocr_report_totals(const ocr_report *r);

typedef struct {
    const char *model;      /* the recogniser's model folder (NULL with hypotheses) */
    const char *hypotheses; /* else the file of its output */
    const char *data;       /* the labels TSV */
    double seconds;         /* recognising the lines, <= 0: not timed (a file of output) */
    int worst;              /* lines listed as the worst */
} ocr_summary;

/* The human report: rates, counts, speed, the worst lines (highest line CER, then most edits,
 * then file order; control characters shown as '?'), the skipped lines and the normalisation. */
void ocr_report_print(const ocr_report *r, const ocr_summary *s, FILE *out);
/* The same as one JSON document. Returns -1 on a write error. */
int ocr_report_write_json(const ocr_report *r, const ocr_summary *s, FILE *out);
/* One row per scored line, in the order added, after a header: file, true text, recognised text
 * (tabs and line breaks as spaces), character edits, true characters. Returns -1 on a write
 * error. */
int ocr_report_write_lines(const ocr_report *r, FILE *out);

#endif
