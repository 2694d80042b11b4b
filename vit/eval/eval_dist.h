#ifndef VIT_EVAL_EVAL_DIST_H
#define VIT_EVAL_EVAL_DIST_H

/* `vit eval` over several processes (mpirun, vit/base/dist.h): each evaluates its share of the
 * folder (every size-th input of the walk) and records every input's outcome; process 0 gathers
 * the records and replays them in the walk's order into its report and predictions, so both are
 * what one process would have written.
 *
 *   eval_report *rep = eval_report_create(vit_num_labels(ctx), &err);    // on every process
 *   if (eval_images_dist(ctx, &folder, &opt, rep, &err) != 0) ...       // collective
 *   if (dist_get().rank == 0) eval_report_print(rep, &summary, stdout);
 *
 * Alone (no mpirun), it is eval_images. */

#include "vit/eval/eval_images.h"
#include "vit/eval/report.h"

/* Evaluates this process's share of the mapped folder f. On process 0, report (fresh) and
 * opt->predictions (its header written here) receive every process's outcomes in walk order; on
 * the others report stays empty and opt->predictions must be NULL. opt->skipped and
 * opt->progress see this process's own inputs; opt->rank, ranks and result are set here.
 * Collective: every process returns 0, or every process returns -1 with err (its own reason, or
 * that another process failed). Like eval_images, a run that fails midway leaves in process 0's
 * report what was evaluated. */
int eval_images_dist(vit_context *ctx, const imagefolder *f, const eval_images_options *opt,
                     eval_report *report, vit_error *err);

#endif
