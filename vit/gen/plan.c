#include "vit/gen/plan.h"

#include <math.h>

#define HF_DEFAULT_MAX_LENGTH 20 /* GenerationConfig().max_length */
#define MAX_BATCH             4096
#define MAX_LOGITS            ((int64_t)1 << 31) /* rows x vocab, so indices stay in int */

static int check_id(int id, int vocab, const char *key, vit_error *err) {
    if (id < -1 || id >= vocab)
        return vit_fail(err, "generation config: %s %d is outside the vocabulary (0..%d)", key, id,
                        vocab - 1);
    return 0;
}

static int check_ids(const gen_config *c, int vocab, vit_error *err) {
    if (c->num_eos < 0 || c->num_eos > GEN_MAX_EOS)
        return vit_fail(err, "generation config: %d eos ids, at most %d", c->num_eos, GEN_MAX_EOS);
    for (int i = 0; i < c->num_eos; i++)
        if (c->eos_ids[i] < 0 || c->eos_ids[i] >= vocab)
            return vit_fail(err,
                            "generation config: eos_token_id %d is outside the vocabulary "
                            "(0..%d)",
                            c->eos_ids[i], vocab - 1);
    if (check_id(c->decoder_start_token_id, vocab, "decoder_start_token_id", err) != 0 ||
        check_id(c->bos_token_id, vocab, "bos_token_id", err) != 0 ||
        check_id(c->pad_token_id, vocab, "pad_token_id", err) != 0 ||
        check_id(c->forced_bos_token_id, vocab, "forced_bos_token_id", err) != 0 ||
        check_id(c->forced_eos_token_id, vocab, "forced_eos_token_id", err) != 0)
        return -1;
    if (c->decoder_start_token_id < 0 && c->bos_token_id < 0)
        return vit_fail(err, "generation config: decoder_start_token_id or bos_token_id has to "
                             "be set for encoder-decoder generation");
    return 0;
}

/* max_length and min_length as _prepare_generated_length resolves them for a one-token
 * prompt. */
static int resolve_lengths(const gen_config *c, gen_plan *p, vit_error *err) {
    if (c->max_new_tokens == 0 || c->max_new_tokens < -1)
        return vit_fail(err, "generation config: max_new_tokens must be greater than 0, not %d",
                        c->max_new_tokens);
    if (c->max_new_tokens > 0)
        p->max_length = c->max_new_tokens + 1;
    else if (c->max_length == HF_DEFAULT_MAX_LENGTH)
        p->max_length = HF_DEFAULT_MAX_LENGTH + 1;
    else
        p->max_length = c->max_length;
    if (p->max_length < 2 || p->max_length > GEN_MAX_LENGTH)
        return vit_fail(err,
                        "generation config: max_length %d (start token included) is "
                        "outside 2..%d",
                        p->max_length, GEN_MAX_LENGTH);
    if (!(c->repetition_penalty > 0) || !isfinite(c->repetition_penalty) ||
        !isfinite(c->decay_factor))
        return vit_fail(err,
                        "generation config: repetition_penalty %g must be positive and "
                        "exponential_decay_length_penalty's factor %g finite",
                        c->repetition_penalty, c->decay_factor);
    if (c->min_length < 0 || c->min_new_tokens < -1 || c->no_repeat_ngram_size < 0)
        return vit_fail(err,
                        "generation config: min_length %d, min_new_tokens %d and "
                        "no_repeat_ngram_size %d must not be negative",
                        c->min_length, c->min_new_tokens, c->no_repeat_ngram_size);
    p->min_new_tokens = c->min_new_tokens > 0 ? c->min_new_tokens : 0;
    p->min_length = c->min_new_tokens >= 0 ? c->min_new_tokens + 1 : c->min_length;
    return 0;
}

static int check_search(const gen_config *c, int batch, int vocab, vit_error *err) {
    if (batch < 1 || batch > MAX_BATCH)
        return vit_fail(err, "generation: batch %d is outside 1..%d", batch, MAX_BATCH);
    if (vocab < 1) return vit_fail(err, "generation: vocabulary size %d", vocab);
    if (c->num_beams < 1 || c->num_beams > GEN_MAX_BEAMS)
        return vit_fail(err, "generation config: num_beams %d is outside 1..%d", c->num_beams,
                        GEN_MAX_BEAMS);
    if ((int64_t)batch * c->num_beams * vocab >= MAX_LOGITS)
        return vit_fail(err, "generation: %d x %d beams x %d logits is too many", batch,
                        c->num_beams, vocab);
    if (!isfinite(c->length_penalty))
        return vit_fail(err, "generation config: length_penalty is not finite");
    if (c->early_stopping < GEN_EARLY_HEURISTIC || c->early_stopping > GEN_EARLY_NEVER)
        return vit_fail(err,
                        "generation config: early_stopping %d is not one of false, true, "
                        "\"never\"",
                        (int)c->early_stopping);
    /* beam search keeps max(2, 1 + eos ids) x num_beams candidates of num_beams x vocab */
    const int keep = c->num_eos + 1 > 2 ? c->num_eos + 1 : 2;
    if (c->num_beams > 1 && vocab < keep)
        return vit_fail(err,
                        "generation: beam search needs at least %d tokens in the "
                        "vocabulary, not %d",
                        keep, vocab);
    return 0;
}

int gen_plan_make(const gen_config *c, int batch, int vocab, gen_plan *p, vit_error *err) {
    if (check_search(c, batch, vocab, err) != 0 || check_ids(c, vocab, err) != 0 ||
        resolve_lengths(c, p, err) != 0)
        return -1;
    p->batch = batch, p->vocab = vocab, p->beams = c->num_beams;
    p->ngram = c->no_repeat_ngram_size;
    p->repetition = (float)c->repetition_penalty;
    /* ExponentialDecayLengthPenalty's regulation_start: the index + input_ids_seq_length, 1 (the
     * start token) for an encoder-decoder's decoder */
    p->decay_start = c->decay_start >= 0 ? c->decay_start + 1 : -1;
    p->decay_factor = c->decay_factor;
    p->start = c->decoder_start_token_id >= 0 ? c->decoder_start_token_id : c->bos_token_id;
    p->num_eos = c->num_eos;
    for (int i = 0; i < c->num_eos; i++) p->eos[i] = c->eos_ids[i];
    p->pad = c->pad_token_id >= 0 ? c->pad_token_id : (c->num_eos > 0 ? c->eos_ids[0] : -1);
    p->forced_bos = c->forced_bos_token_id, p->forced_eos = c->forced_eos_token_id;
    p->length_penalty = c->length_penalty, p->early = c->early_stopping;
    return 0;
}

int gen_is_eos(const gen_plan *p, int token) {
    for (int i = 0; i < p->num_eos; i++)
        if (p->eos[i] == token) return 1;
    return 0;
}

/* Bans each token that would complete an n-gram the row already holds: every window whose first
 * n - 1 ids equal the row's last n - 1 bans its last id. */
static void ban_ngrams(int n, float *x, const int32_t *seq, int len) {
    if (len < n) return;
    const int32_t *prefix = seq + len + 1 - n;
    for (int i = 0; i + n <= len; i++) {
        int same = 1;
        for (int j = 0; j < n - 1 && same; j++) same = seq[i + j] == prefix[j];
        if (same) x[seq[i + n - 1]] = -INFINITY;
    }
}

/* RepetitionPenaltyLogitsProcessor: every id the row holds, once however often (torch gathers the
 * scores, then scatters), divided by the penalty, or multiplied when negative, in float32. */
static void penalise_repeats(float penalty, float *x, const int32_t *seq, int len) {
    for (int i = 0; i < len; i++) {
        int seen = 0; /* rows are short (a line's tokens): a quadratic look back is cheap */
        for (int j = 0; j < i && !seen; j++) seen = seq[j] == seq[i];
        if (seen) continue;
        const float v = x[seq[i]];
        x[seq[i]] = v < 0 ? v * penalty : v / penalty;
    }
}

/* ExponentialDecayLengthPenalty at length len (> start): each eos score + |score| (f^k - 1), k the
 * tokens past the start, the factor in double as Python's pow, then float32 as torch. An eos
 * already at -inf stays there (torch makes it NaN: -inf + inf; only when min_length reaches past
 * the start, a configuration with no sense). */
static void decay_length(const gen_plan *p, float *x, int len) {
    const float f = (float)(pow(p->decay_factor, len - p->decay_start) - 1.0);
    for (int i = 0; i < p->num_eos; i++) {
        float *e = &x[p->eos[i]];
        int dup = 0; /* one id listed twice gets one penalty: penalties[:, ids] = ... is a set */
        for (int j = 0; j < i; j++) dup |= p->eos[j] == p->eos[i];
        if (!dup && isfinite(*e)) *e = *e + fabsf(*e) * f;
    }
}

static void force(float *x, int vocab, int id) {
    for (int i = 0; i < vocab; i++) x[i] = -INFINITY;
    x[id] = 0.0f;
}

int gen_process(const gen_plan *p, float *x, const int32_t *seq, int len) {
    if (p->repetition != 1.0f) penalise_repeats(p->repetition, x, seq, len);
    if (p->ngram > 0) ban_ngrams(p->ngram, x, seq, len);
    if ((p->min_length > 0 && len < p->min_length) ||
        (p->min_new_tokens > 0 && len - 1 < p->min_new_tokens))
        for (int i = 0; i < p->num_eos; i++) x[p->eos[i]] = -INFINITY;
    int forced = 0;
    if (p->forced_bos >= 0 && len == 1) force(x, p->vocab, p->forced_bos), forced = 1;
    if (p->forced_eos >= 0 && len == p->max_length - 1)
        force(x, p->vocab, p->forced_eos), forced = 1;
    if (p->decay_start >= 0 && len > p->decay_start) decay_length(p, x, len);
    return forced;
}

float gen_log_sum(const float *x, int n, float *max) {
    float m = -INFINITY;
    for (int i = 0; i < n; i++)
        if (x[i] > m) m = x[i];
    double sum = 0.0;
    for (int i = 0; i < n; i++) sum += expf(x[i] - m); /* float exp as torch, double sum */
    *max = m;
    return (float)log(sum);
}

void gen_log_softmax(float *x, int n) {
    float max;
    const float log_sum = gen_log_sum(x, n, &max);
    for (int i = 0; i < n; i++) x[i] = (x[i] - max) - log_sum;
}

void *gen_take(gen_arena *a, size_t count, size_t size) {
    const size_t at = (a->used + 63) & ~(size_t)63;
    a->used = at + count * size;
    return a->base ? a->base + at : NULL;
}
