/* Beam search, transformers' vectorised `_beam_search` (v4.51 on) item by item: the same
 * candidates, the same float arithmetic on the scores (the -1e9 placeholders included) and
 * torch.topk's order, so the same hypotheses win. Per batch item each step: the top K =
 * max(2, 1 + eos ids) x beams of beams x vocab accumulated log-probabilities; the best beams
 * among those not finishing run on; finishing ones among the first `beams` enter the item's
 * finished list (beams slots) by score / length ** length_penalty. */
#include "vit/gen/search.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "vit/gen/topk.h"

#define NEG 1.0e9f /* HF's "very large negative value", subtracted in float32 */

typedef struct {
    const gen_plan *p;
    int nb, keep, rows, vocab, max_length;
    float *logits;           /* rows x vocab: log-probs + running score */
    gen_pair *pairs;         /* one item's beams x vocab (or fewer) pairs */
    int32_t *run, *run_next; /* running beams, rows x max_length */
    float *run_score;        /* rows */
    int *parent;             /* the next step's input: parent row, token */
    int32_t *tokens;
    int *cand_beam;      /* one item's K candidates: source beam, token, score, */
    int32_t *cand_token; /* and whether they hit a stopping criterion */
    float *cand_score;
    uint8_t *cand_hit;
    int32_t *fin, *fin_next;           /* finished slots, rows x max_length, with their */
    int *fin_len, *fin_len_next;       /* lengths, scores and whether they hold a finished */
    float *fin_score, *fin_score_next; /* hypothesis (placeholders do not) */
    uint8_t *fin_done, *fin_done_next;
    uint8_t *unsatisfied; /* batch: the early-stop heuristic still expects better */
} beam_state;

static void layout(beam_state *s, gen_arena *a) {
    const size_t rows = (size_t)s->rows, ml = (size_t)s->max_length, k = (size_t)s->keep;
    const size_t npairs =
        (size_t)s->nb * s->vocab > (size_t)s->nb + k ? (size_t)s->nb * s->vocab : (size_t)s->nb + k;
    s->logits = gen_take(a, rows * s->vocab, sizeof *s->logits);
    s->pairs = gen_take(a, npairs, sizeof *s->pairs);
    s->run = gen_take(a, rows * ml, sizeof *s->run);
    s->run_next = gen_take(a, rows * ml, sizeof *s->run_next);
    s->run_score = gen_take(a, rows, sizeof *s->run_score);
    s->parent = gen_take(a, rows, sizeof *s->parent);
    s->tokens = gen_take(a, rows, sizeof *s->tokens);
    s->cand_beam = gen_take(a, k, sizeof *s->cand_beam);
    s->cand_token = gen_take(a, k, sizeof *s->cand_token);
    s->cand_score = gen_take(a, k, sizeof *s->cand_score);
    s->cand_hit = gen_take(a, k, sizeof *s->cand_hit);
    s->fin = gen_take(a, rows * ml, sizeof *s->fin);
    s->fin_next = gen_take(a, rows * ml, sizeof *s->fin_next);
    s->fin_len = gen_take(a, rows, sizeof *s->fin_len);
    s->fin_len_next = gen_take(a, rows, sizeof *s->fin_len_next);
    s->fin_score = gen_take(a, rows, sizeof *s->fin_score);
    s->fin_score_next = gen_take(a, rows, sizeof *s->fin_score_next);
    s->fin_done = gen_take(a, rows, sizeof *s->fin_done);
    s->fin_done_next = gen_take(a, rows, sizeof *s->fin_done_next);
    s->unsatisfied = gen_take(a, (size_t)s->p->batch, sizeof *s->unsatisfied);
}

/* Beam 0 of each item starts at 0 and the others at -1e9 (so the first step's candidates come
 * from beam 0); the finished slots hold placeholders scored -1e9. */
static void start(beam_state *s) {
    for (int r = 0; r < s->rows; r++) {
        s->run[(size_t)r * s->max_length] = s->p->start;
        s->fin[(size_t)r * s->max_length] = s->p->start;
        s->tokens[r] = s->p->start;
        s->run_score[r] = r % s->nb == 0 ? 0.0f : -NEG;
        s->fin_len[r] = 1;
        s->fin_score[r] = -NEG;
        s->fin_done[r] = 0;
    }
    for (int b = 0; b < s->p->batch; b++) s->unsatisfied[b] = 1;
}

/* Each row's logits become its accumulated scores: log_softmax, the processors, + its score. */
static void score_rows(beam_state *s, int len) {
    for (int r = 0; r < s->rows; r++) {
        float *x = s->logits + (size_t)r * s->vocab;
        gen_log_softmax(x, s->vocab);
        gen_process(s->p, x, s->run + (size_t)r * s->max_length, len);
        for (int i = 0; i < s->vocab; i++) x[i] += s->run_score[r];
    }
}

/* Item b's top K continuations; returns 1 when every one of them hits. */
static int candidates(beam_state *s, int b, int len) {
    const int n = s->nb * s->vocab;
    const float *x = s->logits + (size_t)b * n;
    for (int j = 0; j < n; j++) s->pairs[j] = (gen_pair){x[j], j};
    gen_topk(s->pairs, n, s->keep);
    int all_hit = 1;
    for (int k = 0; k < s->keep; k++) {
        const int j = s->pairs[k].index;
        s->cand_beam[k] = j / s->vocab;
        s->cand_token[k] = j % s->vocab;
        s->cand_score[k] = s->pairs[k].value;
        s->cand_hit[k] = gen_is_eos(s->p, j % s->vocab) || len + 1 >= s->max_length;
        all_hit &= s->cand_hit[k];
    }
    return all_hit;
}

/* Candidate k of item b appended to its source beam, into dst (a row of max_length ids). */
static void extend(const beam_state *s, int b, int k, int len, int32_t *dst) {
    const int src = b * s->nb + s->cand_beam[k];
    memcpy(dst, s->run + (size_t)src * s->max_length, (size_t)len * sizeof *dst);
    dst[len] = s->cand_token[k];
}

/* The next running beams of item b: the best `beams` candidates once hitting ones lose 1e9. */
static void select_running(beam_state *s, int b, int len) {
    for (int k = 0; k < s->keep; k++)
        s->pairs[k] = (gen_pair){s->cand_score[k] + (s->cand_hit[k] ? -NEG : -0.0f), k};
    gen_topk(s->pairs, s->keep, s->nb);
    for (int i = 0; i < s->nb; i++) {
        const int r = b * s->nb + i, k = s->pairs[i].index;
        extend(s, b, k, len, s->run_next + (size_t)r * s->max_length);
        s->run_score[r] = s->pairs[i].value;
        s->parent[r] = b * s->nb + s->cand_beam[k];
        s->tokens[r] = s->cand_token[k];
    }
}

/* HF's _update_finished_beams' scores for item b: old slots first, then each candidate's
 * length-penalised score, pushed down by 1e9 when the item is full (early_stopping true), when
 * the heuristic said no improvement is possible, and unless it just finished among the first
 * `beams` (three float32 additions, as HF makes them). */
static void finished_scores(beam_state *s, int b, int len) {
    const int base = b * s->nb;
    int full = s->p->early == GEN_EARLY_TRUE;
    for (int i = 0; i < s->nb; i++) {
        s->pairs[i] = (gen_pair){s->fin_score[base + i], i};
        full &= s->fin_done[base + i];
    }
    const float denom = (float)pow((double)len, s->p->length_penalty);
    for (int k = 0; k < s->keep; k++) {
        float f = s->cand_score[k] / denom;
        f += full ? -NEG : -0.0f;
        f += s->unsatisfied[b] ? -0.0f : -NEG;
        f += s->cand_hit[k] && k < s->nb ? -0.0f : -NEG;
        s->pairs[s->nb + k] = (gen_pair){f, s->nb + k};
    }
}

/* Item b's finished slots: the best `beams` of the old slots and the candidates. */
static void update_finished(beam_state *s, int b, int len) {
    finished_scores(s, b, len);
    gen_topk(s->pairs, s->nb + s->keep, s->nb);
    for (int i = 0; i < s->nb; i++) {
        const int dst = b * s->nb + i, j = s->pairs[i].index;
        int32_t *seq = s->fin_next + (size_t)dst * s->max_length;
        if (j < s->nb) {
            const int src = b * s->nb + j;
            memcpy(seq, s->fin + (size_t)src * s->max_length, (size_t)s->fin_len[src] * 4);
            s->fin_len_next[dst] = s->fin_len[src];
            s->fin_done_next[dst] = s->fin_done[src];
        } else {
            extend(s, b, j - s->nb, len, seq);
            s->fin_len_next[dst] = len + 1;
            s->fin_done_next[dst] = s->cand_hit[j - s->nb] && j - s->nb < s->nb;
        }
        s->fin_score_next[dst] = s->pairs[i].value;
    }
}

#define SWAP(type, a, b)                                                                           \
    do {                                                                                           \
        type *t_ = (a);                                                                            \
        (a) = (b);                                                                                 \
        (b) = t_;                                                                                  \
    } while (0)

static void swap_buffers(beam_state *s) {
    SWAP(int32_t, s->run, s->run_next);
    SWAP(int32_t, s->fin, s->fin_next);
    SWAP(int, s->fin_len, s->fin_len_next);
    SWAP(float, s->fin_score, s->fin_score_next);
    SWAP(uint8_t, s->fin_done, s->fin_done_next);
}

/* _check_early_stop_heuristic for item b, the sequences now len long: can the best running beam
 * (its score over the best length it could reach, ** length_penalty) still beat the worst
 * finished slot (-1e9 while one is empty)? */
static void check_improvement(beam_state *s, int b, int len) {
    const int base = b * s->nb;
    const int best_len =
        s->p->early == GEN_EARLY_NEVER && s->p->length_penalty > 0.0 ? s->max_length - 1 : len - 1;
    const float best = s->run_score[base] / (float)pow((double)best_len, s->p->length_penalty);
    float worst = s->fin_score[base];
    for (int i = 1; i < s->nb; i++)
        if (s->fin_score[base + i] < worst) worst = s->fin_score[base + i];
    int improvable = 0;
    for (int i = 0; i < s->nb; i++) improvable |= best > (s->fin_done[base + i] ? worst : -NEG);
    s->unsatisfied[b] &= (uint8_t)improvable;
}

/* One step on the logits of sequences len long; returns 1 when the search is over. */
static int step(beam_state *s, int len) {
    score_rows(s, len);
    int all_hit = 1;
    for (int b = 0; b < s->p->batch; b++) {
        all_hit &= candidates(s, b, len);
        select_running(s, b, len);
        update_finished(s, b, len);
    }
    swap_buffers(s);
    int improvable = 0, all_done = 1;
    for (int b = 0; b < s->p->batch; b++) {
        check_improvement(s, b, len + 1);
        improvable |= s->unsatisfied[b];
    }
    for (int r = 0; r < s->rows; r++) all_done &= s->fin_done[r];
    return !improvable || (s->p->early == GEN_EARLY_TRUE && all_done) || all_hit;
}

int gen_beam(const gen_plan *p, gen_logits_fn fn, void *model, gen_sequence *out, vit_error *err) {
    beam_state s = {.p = p,
                    .nb = p->beams,
                    .rows = p->batch * p->beams,
                    .vocab = p->vocab,
                    .max_length = p->max_length};
    s.keep = (p->num_eos + 1 > 2 ? p->num_eos + 1 : 2) * p->beams;
    gen_arena a = {0};
    layout(&s, &a);
    a.base = calloc(1, a.used);
    if (!a.base) return vit_fail(err, "generation: out of memory (%zu bytes)", a.used);
    a.used = 0;
    layout(&s, &a);
    start(&s);
    int done = 0, rc = 0;
    for (int len = 1; !done && rc == 0; len++) {
        rc = fn(model, len - 1, len > 1 ? s.parent : NULL, s.tokens, s.rows, s.logits, err);
        if (rc == 0) done = step(&s, len);
    }
    for (int b = 0; b < p->batch && rc == 0; b++) {
        const int r = b * s.nb; /* slot 0 holds the best */
        rc = gen_sequence_set(&out[b], s.fin + (size_t)r * s.max_length, s.fin_len[r],
                              s.fin_score[r], err);
    }
    free(a.base);
    return rc;
}
