/* Greedy search, transformers' `_sample` without sampling: the processors on the raw logits, the
 * first maximum, pad_token_id for rows already finished, until every row has finished. */
#include "vit/gen/search.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    float *logits;     /* rows x vocab */
    int32_t *seq;      /* rows x max_length */
    int *parent, *len; /* len: a finished row's length, 0 while it runs */
    int32_t *tokens;   /* the next step's input */
    double *score;
} greedy_state;

static void layout(greedy_state *s, const gen_plan *p, gen_arena *a) {
    const size_t rows = (size_t)p->batch;
    s->logits = gen_take(a, rows * p->vocab, sizeof *s->logits);
    s->seq = gen_take(a, rows * p->max_length, sizeof *s->seq);
    s->parent = gen_take(a, rows, sizeof *s->parent);
    s->len = gen_take(a, rows, sizeof *s->len);
    s->tokens = gen_take(a, rows, sizeof *s->tokens);
    s->score = gen_take(a, rows, sizeof *s->score);
}

/* The row's token (the first maximum of the processed logits) and the log-probability beam
 * search would add for it: log_softmax of the raw logits, 0 for a forced token, -inf for a
 * masked one. */
static int choose(const gen_plan *p, float *x, const int32_t *seq, int len, double *logprob) {
    float max;
    const float log_sum = gen_log_sum(x, p->vocab, &max);
    const int forced = gen_process(p, x, seq, len);
    int best = 0;
    for (int i = 1; i < p->vocab; i++)
        if (x[i] > x[best]) best = i;
    *logprob = forced ? 0.0 : x[best] == -INFINITY ? -INFINITY : (x[best] - max) - log_sum;
    return best;
}

/* One step for every row at length len; returns the number of rows still running. */
static int step(const gen_plan *p, greedy_state *s, int len) {
    int running = 0;
    for (int r = 0; r < p->batch; r++) {
        int32_t *seq = s->seq + (size_t)r * p->max_length;
        int token = p->pad; /* a finished row (only with an eos id) */
        if (!s->len[r]) {
            double logprob;
            token = choose(p, s->logits + (size_t)r * p->vocab, seq, len, &logprob);
            s->score[r] += logprob;
            if (gen_is_eos(p, token) || len + 1 >= p->max_length) s->len[r] = len + 1;
        }
        seq[len] = token;
        s->tokens[r] = token;
        s->parent[r] = r;
        running += !s->len[r];
    }
    return running;
}

int gen_greedy(const gen_plan *p, gen_logits_fn fn, void *model, gen_sequence *out,
               vit_error *err) {
    greedy_state s;
    gen_arena a = {0};
    layout(&s, p, &a);
    a.base = calloc(1, a.used);
    if (!a.base) return vit_fail(err, "generation: out of memory (%zu bytes)", a.used);
    a.used = 0;
    layout(&s, p, &a);
    for (int r = 0; r < p->batch; r++) {
        s.seq[(size_t)r * p->max_length] = p->start;
        s.tokens[r] = p->start;
    }
    for (int len = 1, running = p->batch; running > 0; len++) {
        if (fn(model, len - 1, len > 1 ? s.parent : NULL, s.tokens, p->batch, s.logits, err) != 0) {
            free(a.base);
            return -1;
        }
        running = step(p, &s, len);
    }
    int rc = 0;
    for (int r = 0; r < p->batch && rc == 0; r++)
        rc = gen_sequence_set(&out[r], s.seq + (size_t)r * p->max_length, s.len[r],
                              (float)s.score[r], err);
    free(a.base);
    return rc;
}
