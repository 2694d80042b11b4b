#ifndef VIT_GEN_PLAN_H
#define VIT_GEN_PLAN_H

/* Inside vit/gen: a gen_config checked and resolved the way generate() prepares it, the logits
 * processors, log_softmax, and the one-allocation arena the searches lay their arrays in. */

#include <stddef.h>

#include "vit/gen/generate.h"

typedef struct {
    int batch, vocab, beams;
    int max_length;     /* resolved: max_new_tokens + 1, or 21 for the default 20 */
    int min_length;     /* resolved: min_new_tokens + 1 when that is set */
    int min_new_tokens; /* 0 when unset */
    int ngram;
    float repetition; /* 1: off; as float32, as torch multiplies by a Python float */
    int decay_start;  /* regulation_start: the index + the one-token prompt; -1: off */
    double decay_factor;
    int start, pad; /* pad -1: none (no eos either) */
    int forced_bos, forced_eos;
    double length_penalty;
    gen_early_stopping early;
    int eos[GEN_MAX_EOS], num_eos;
} gen_plan;

/* Checks cfg against batch and vocab, and resolves it into *p. */
int gen_plan_make(const gen_config *cfg, int batch, int vocab, gen_plan *p, vit_error *err);

int gen_is_eos(const gen_plan *p, int token);

/* The processors generate() builds for these keys, in its order, on one row's scores x[vocab]
 * given the row's ids seq[0..len): repetition penalty, no-repeat n-grams, min length, min new
 * tokens, forced BOS, forced EOS, exponential decay length penalty. Returns 1 when a forcing
 * processor set the row (all -inf, the forced id 0). */
int gen_process(const gen_plan *p, float *x, const int32_t *seq, int len);

/* log_softmax of x[0..n) in place, as torch computes it: (x - max) - log(sum(exp(x - max))),
 * here with the sum in double. gen_log_sum gives that log (and max) without changing x. */
void gen_log_softmax(float *x, int n);
float gen_log_sum(const float *x, int n, float *max);

/* One allocation carved into arrays: measure with base NULL (take returns NULL and counts), then
 * allocate `used` bytes and carve the same sequence again. */
typedef struct {
    char *base;
    size_t used;
} gen_arena;

void *gen_take(gen_arena *a, size_t count, size_t size);

#endif
