#ifndef VIT_EVAL_EVAL_OCR_H
#define VIT_EVAL_EVAL_OCR_H

/* A text recogniser scored on text-line images with their transcripts (vit/data/line_tsv.h): a
 * VisionEncoderDecoderModel run here, or any recogniser's output read from a file of the same
 * layout (Tesseract's, through tools/tesseract_eval), so both go through the same metric code.
 *
 *   line_tsv truth;
 *   line_tsv_read(&truth, "data/ocr/test-clean/labels.tsv", &err);
 *   ocr_report *r = ocr_report_create(&err);
 *   eval_ocr_model(gen, &truth, &(eval_ocr_options){.batch = 16}, r, &err);
 *   ocr_report_print(r, &summary, stdout);
 */

#include "vit/data/line_tsv.h"
#include "vit/eval/ocr_report.h"
#include "vit/vit.h"

typedef struct {
    int batch;                  /* images per vit_generate call (<= the context's max_batch) */
    const vit_gen_options *gen; /* NULL: the model's own settings */
    void *user;
    void (*progress)(void *user, long done, long total); /* after each batch; may be NULL */
} eval_ocr_options;

/* Reads every line image of set through g (preprocessed as vit_preprocess_file, generated in
 * batches) and scores the text against the transcript. An image that cannot be read is skipped
 * into the report with the reason. Returns 0, or -1 with err when generation itself fails or
 * memory runs out. */
int eval_ocr_model(vit_gen_context *g, const line_tsv *set, const eval_ocr_options *o,
                   ocr_report *r, vit_error *err);

/* Scores the texts of hyp against those of truth, matched by file name. Every file of truth must
 * have a line in hyp and hyp may name no other: either is an error naming the file and line.
 * Returns 0, or -1 with err. */
int eval_ocr_hypotheses(const line_tsv *truth, const line_tsv *hyp, ocr_report *r, vit_error *err);

#endif
