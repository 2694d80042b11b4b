#ifndef VIT_CLI_OCR_EVAL_H
#define VIT_CLI_OCR_EVAL_H

/* vit eval on text-line images (vit/eval/eval_ocr.h): an image-to-text model's character and
 * word error rates on a folder's labels.tsv, or those of another recogniser's output file. */

#include "vit/vit.h"

typedef struct {
    const char *model_dir;  /* a VisionEncoderDecoderModel folder (unused with hypotheses) */
    const char *data;       /* a folder holding labels.tsv, or the TSV itself */
    const char *hypotheses; /* NULL, or a `file<TAB>text` file to score instead of a model */
    const char *json_path, *lines_path; /* --json, --predictions (NULL: none; "-": stdout) */
    int worst;                          /* worst lines listed */
    int beams;                          /* 0: the model's num_beams */
    vit_params params;                  /* threads, batch, backend, precision */
} cli_ocr_eval;

/* Runs the evaluation and prints the report; returns the exit status. */
int cli_eval_ocr(const cli_ocr_eval *a);

#endif
