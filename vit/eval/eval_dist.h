#ifndef VIT_EVAL_EVAL_DIST_H
#define VIT_EVAL_EVAL_DIST_H

/* `vit eval` over several processes (mpirun, vit/base/dist.h): each rank evaluates its share of
 * the folder (eval_images_options.rank/ranks) and records every input's outcome; rank 0 gathers
 * the records and replays them in the folder's walk order into the report and the predictions,
 * so both are what one process would have written.
 *
 *   eval_records rec = {0};
 *   opt.result = eval_records_add; opt.user = &rec;           // (or call it from your callback)
 *   eval_images(ctx, &folder, &opt, scratch_report, &err);
 *   eval_records_merge(&rec, report, predictions, &err);     // collective; rank 0 fills report */

#include <stdio.h>

#include "vit/base/bytes.h"
#include "vit/eval/eval_images.h"
#include "vit/eval/report.h"

typedef struct {
    byte_buf bytes;
    int failed; /* out of memory while recording (the records are then incomplete) */
} eval_records;

/* Appends one outcome (user: the eval_records). */
void eval_records_add(void *user, const eval_result *r);
void eval_records_free(eval_records *rec);

/* Collective: every rank calls it once with its records. On rank 0, report (fresh) and
 * predictions (may be NULL; its header already written) receive every rank's outcomes in walk
 * order. Returns -1 with err on any rank that failed to record, or on rank 0 when the gathered
 * records are unreadable. */
int eval_records_merge(eval_records *rec, eval_report *report, FILE *predictions, vit_error *err);

#endif
