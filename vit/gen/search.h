#ifndef VIT_GEN_SEARCH_H
#define VIT_GEN_SEARCH_H

/* Inside vit/gen: the two searches gen_run dispatches to, on a resolved plan. */

#include "vit/gen/plan.h"

int gen_greedy(const gen_plan *p, gen_logits_fn fn, void *model, gen_sequence *out, vit_error *err);
int gen_beam(const gen_plan *p, gen_logits_fn fn, void *model, gen_sequence *out, vit_error *err);

/* out gets a malloc'ed copy of ids[0..length) and the score. */
int gen_sequence_set(gen_sequence *out, const int32_t *ids, int length, float score,
                     vit_error *err);

#endif
