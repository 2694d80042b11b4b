/* The token-classification pipeline's postprocess (transformers' TokenClassificationPipeline:
 * gather_pre_entities, aggregate, aggregate_words, group_entities, the ignore_labels filter) on a
 * token classifier's logits and its tokenizer's offsets. */
#include <math.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "vit/vit.h"
#include "vit/vit_internal.h"

/* An entity before grouping: a token's ("none", "simple") or a word's. */
typedef struct {
    const char *label;
    float score;
    size_t word; /* its word's place in the arena */
    int32_t bs, be;
    int index, first, last; /* its tokens */
} item;

struct vit_entities {
    item *items, *groups;
    size_t *pieces, *word_of; /* each token's piece, a group's words: places in the arena */
    size_t items_cap, groups_cap, pieces_cap, word_cap, out_cap, toks_cap;
    vit_entity *out;
    char *arena, *tmp; /* words, NUL-terminated; tmp: one join's output */
    size_t len, cap, tmp_cap;
    const char **toks; /* a join's tokens */
    int32_t *cps;      /* code points before each byte of the text */
    size_t cps_cap;
    float *probs, *mean; /* [tokens, K] softmax; [K] */
    size_t probs_cap, mean_cap;
    api_tag_token *tokens;
    size_t tokens_cap;
    char no_offsets[sizeof((vit_error){0}).msg]; /* why the tokens have none, "" when they do */
};

api_tag_state *api_tag_state_create(void) {
    return calloc(1, sizeof(api_tag_state));
}

void api_tag_state_free(api_tag_state *s) {
    if (!s) return;
    free(s->items);
    free(s->groups);
    free(s->word_of);
    free(s->pieces);
    free(s->out);
    free(s->arena);
    free(s->tmp);
    free(s->toks);
    free(s->cps);
    free(s->probs);
    free(s->mean);
    free(s->tokens);
    free(s);
}

/* *p with room for n elements of size bytes (cap counts them); -1 when out of memory. */
static int reserve(void *p, size_t *cap, size_t n, size_t size) {
    if (n <= *cap) return 0;
    void *q = realloc(*(void **)p, size * n);
    if (!q) return -1;
    *(void **)p = q, *cap = n;
    return 0;
}

/* Appends s[0..n) and a NUL to the arena; its place there, or (size_t)-1. */
static size_t arena_add(api_tag_state *s, const char *str, size_t n) {
    const size_t need = s->len + n + 1;
    if (need > s->cap && reserve(&s->arena, &s->cap, need > 2 * s->cap ? need : 2 * s->cap, 1) != 0)
        return (size_t)-1;
    memcpy(s->arena + s->len, str, n);
    s->arena[s->len + n] = '\0';
    const size_t at = s->len;
    s->len += n + 1;
    return at;
}

/* convert_tokens_to_string of the arena strings at[0..n) (tokens first..last) into the arena. */
static size_t join_words(api_tag_state *s, const api_tag_input *in, const size_t *at, int n,
                         int first, int last, vit_error *err) {
    if (reserve(&s->toks, &s->toks_cap, (size_t)n, sizeof *s->toks) != 0) goto oom;
    for (int i = 0; i < n; i++) s->toks[i] = s->arena + at[i];
    int len = in->join(in->user, s->toks, n, first, last, s->tmp, s->tmp_cap, err);
    if (len >= 0 && (size_t)len >= s->tmp_cap) {
        if (reserve(&s->tmp, &s->tmp_cap, (size_t)len + 1, 1) != 0) goto oom;
        len = in->join(in->user, s->toks, n, first, last, s->tmp, s->tmp_cap, err);
    }
    if (len < 0) return (size_t)-1;
    const size_t w = arena_add(s, s->tmp, (size_t)len);
    if (w != (size_t)-1) return w;
oom:
    vit_fail(err, "out of memory");
    return (size_t)-1;
}

static int argmax(const float *p, int K) {
    int best = 0;
    for (int k = 1; k < K; k++) best = p[k] > p[best] ? k : best; /* numpy: the first of ties */
    return best;
}

static size_t utf8_chars(const char *s, size_t n) {
    size_t k = 0;
    for (size_t i = 0; i < n; i++) k += ((unsigned char)s[i] & 0xC0) != 0x80;
    return k;
}

/* gather_pre_entities' is_subword: with a continuing_subword_prefix, whether the piece is not as
 * long as the text it stands for ("##ing" for "ing"); else its fallback, neither the character
 * before the token nor its first one is a space; an unk token never is. */
static bool is_subword(const api_tag_input *in, const api_tag_token *t) {
    if (t->bs < 0 || t->unk) return false;
    if (in->word_aware)
        return utf8_chars(t->piece, strlen(t->piece)) !=
               utf8_chars(in->text + t->bs, (size_t)(t->be - t->bs));
    return t->bs > 0 && in->text[t->bs - 1] != ' ' &&
           ((size_t)t->bs >= in->len || in->text[t->bs] != ' ');
}

/* aggregate_word: a word's label and score from its tokens first..last ("first", "max",
 * "average"), its word their pieces joined. */
static int aggregate_word(api_tag_state *s, const api_tag_input *in, const size_t *pieces,
                          int first, int last, item *out, vit_error *err) {
    const api_tag_token *t = in->tokens;
    const int K = in->K;
    int from = first; /* the token whose probabilities decide */
    const float *p = t[first].probs;
    if (in->aggregation == VIT_AGGREGATE_MAX) {
        for (int i = first + 1; i <= last; i++) /* max(): the first of equal maxima */
            if (t[i].probs[argmax(t[i].probs, K)] > t[from].probs[argmax(t[from].probs, K)])
                from = i;
        p = t[from].probs;
    } else if (in->aggregation == VIT_AGGREGATE_AVERAGE) {
        for (int k = 0; k < K; k++) {
            double sum = 0;
            for (int i = first; i <= last; i++) sum += t[i].probs[k];
            s->mean[k] = (float)(sum / (last - first + 1));
        }
        p = s->mean;
    }
    const int k = argmax(p, K);
    *out = (item){.label = in->labels[k],
                  .score = p[k],
                  .bs = t[first].bs,
                  .be = t[last].be,
                  .index = -1,
                  .first = first,
                  .last = last};
    out->word = join_words(s, in, pieces + first, last - first + 1, first, last, err);
    return out->word == (size_t)-1 ? -1 : 0;
}

/* get_tag: B- or I- and the rest; a label without either continues (I). */
static const char *tag_of(const char *label, bool *begins) {
    *begins = strncmp(label, "B-", 2) == 0;
    return *begins || strncmp(label, "I-", 2) == 0 ? label + 2 : label;
}

/* group_sub_entities of items[first..last]: the first's label after its last '-', the mean
 * score, the words joined. */
static int group(api_tag_state *s, const api_tag_input *in, const item *it, int n, item *out,
                 vit_error *err) {
    const char *dash = strrchr(it[0].label, '-');
    double sum = 0;
    for (int i = 0; i < n; i++) sum += it[i].score;
    *out = (item){.label = dash ? dash + 1 : it[0].label,
                  .score = (float)(sum / n),
                  .bs = it[0].bs,
                  .be = it[n - 1].be,
                  .index = -1,
                  .first = it[0].first,
                  .last = it[n - 1].last};
    for (int i = 0; i < n; i++) s->word_of[i] = it[i].word;
    out->word = join_words(s, in, s->word_of, n, out->first, out->last, err);
    return out->word == (size_t)-1 ? -1 : 0;
}

/* group_entities: adjacent items of one tag grouped, a B- starting a new group. */
static int group_entities(api_tag_state *s, const api_tag_input *in, int n, int *groups,
                          vit_error *err) {
    int g = 0;
    for (int start = 0, i = 1; i <= n; i++) {
        bool b, last_b;
        if (i < n) {
            const char *tag = tag_of(s->items[i].label, &b),
                       *last = tag_of(s->items[i - 1].label, &last_b);
            if (strcmp(tag, last) == 0 && !b) continue;
        }
        if (group(s, in, s->items + start, i - start, &s->groups[g++], err) != 0) return -1;
        start = i;
    }
    *groups = g;
    return 0;
}

static bool ignored(const api_tag_input *in, const char *label) {
    return !in->keep_all && strcmp(label, "O") == 0;
}

int api_tag_aggregate(api_tag_state *s, const api_tag_input *in, const vit_entity **out,
                      vit_error *err) {
    const int n = in->n, words = in->aggregation >= VIT_AGGREGATE_FIRST;
    if (words && n > 0 && in->tokens[0].bs < 0)
        return vit_fail(err,
                        "aggregation \"%s\" needs word boundaries, from the tokens' offsets, "
                        "which this text has none of (%s): \"simple\" does without",
                        vit_aggregation_name(in->aggregation),
                        in->no_offsets ? in->no_offsets : "none");
    const size_t room = (size_t)n + 1;
    if (reserve(&s->items, &s->items_cap, room, sizeof *s->items) != 0 ||
        reserve(&s->groups, &s->groups_cap, room, sizeof *s->groups) != 0 ||
        reserve(&s->pieces, &s->pieces_cap, room, sizeof *s->pieces) != 0 ||
        reserve(&s->word_of, &s->word_cap, room, sizeof *s->word_of) != 0 ||
        reserve(&s->out, &s->out_cap, room, sizeof *s->out) != 0 ||
        reserve(&s->mean, &s->mean_cap, (size_t)in->K, sizeof *s->mean) != 0 ||
        reserve(&s->cps, &s->cps_cap, in->len + 1, sizeof *s->cps) != 0)
        return vit_fail(err, "out of memory");
    s->len = 0;
    size_t *pieces = s->pieces; /* each token's word: its piece, or an unk's text */
    for (int i = 0; i < n; i++) {
        const api_tag_token *t = &in->tokens[i];
        pieces[i] = t->unk && t->bs >= 0 ? arena_add(s, in->text + t->bs, (size_t)(t->be - t->bs))
                                         : arena_add(s, t->piece, strlen(t->piece));
        if (pieces[i] == (size_t)-1) return vit_fail(err, "out of memory");
    }
    /* aggregate: the tokens ("none", "simple") or the words they make */
    int m = 0;
    for (int i = 0; i < n; i++) {
        const api_tag_token *t = &in->tokens[i];
        if (!words) {
            const int k = argmax(t->probs, in->K);
            s->items[m++] =
                (item){in->labels[k], t->probs[k], pieces[i], t->bs, t->be, t->index, i, i};
            continue;
        }
        int last = i;
        while (last + 1 < n && is_subword(in, &in->tokens[last + 1])) last++;
        if (aggregate_word(s, in, pieces, i, last, &s->items[m++], err) != 0) return -1;
        i = last;
    }
    const item *result = s->items;
    int count = m;
    if (in->aggregation != VIT_AGGREGATE_NONE) {
        if (group_entities(s, in, m, &count, err) != 0) return -1;
        result = s->groups;
    }
    /* characters as the bindings convert the library's byte offsets: the one a byte is in (a
     * trimmed prepended space can leave an offset inside a character), the end past the last */
    for (size_t b = 0, k = 0; b <= in->len; b++) {
        if (b < in->len) k += ((unsigned char)in->text[b] & 0xC0) != 0x80;
        s->cps[b] = (int32_t)(b < in->len ? k - 1 : k);
    }
    int kept = 0;
    for (int i = 0; i < count; i++) {
        const item *e = &result[i];
        if (ignored(in, e->label)) continue;
        const bool has = e->bs >= 0;
        s->out[kept++] = (vit_entity){.label = e->label,
                                      .score = e->score,
                                      .word = s->arena + e->word,
                                      .start = has ? s->cps[e->bs] : -1,
                                      .end = has ? s->cps[e->be] : -1,
                                      .byte_start = has ? e->bs : -1,
                                      .byte_end = has ? e->be : -1,
                                      .index = e->index};
    }
    *out = s->out;
    return kept;
}

/* ---- on a text context ---- */

static const char *const aggregation_names[] = {"none", "simple", "first", "average", "max"};

int vit_aggregation_from_name(const char *name) {
    for (int i = 0; name && i < 5; i++)
        if (strcmp(name, aggregation_names[i]) == 0) return i;
    return -1;
}

const char *vit_aggregation_name(vit_aggregation a) {
    return (unsigned)a < 5 ? aggregation_names[a] : "?";
}

typedef struct {
    const text_tokenizer *tok;
    const int32_t *ids;
    int fast; /* the tokenizer has a fast twin (convert_tokens_to_string on strings) */
} join_ctx;

/* convert_tokens_to_string: the fast tokenizer's decoder; without one (a slow tokenizer, whose
 * tokens are then always a stretch of ids) the decode of those ids. */
static int join_tokens(void *user, const char *const *tokens, int n, int first, int last, char *out,
                       size_t size, vit_error *err) {
    const join_ctx *j = user;
    if (j->fast) return text_tokenizer_tokens_to_string(j->tok, tokens, n, out, size, err);
    return text_tokenizer_decode(j->tok, j->ids + first, last - first + 1, false, out, size, err);
}

vit_entities *vit_entities_create(void) {
    return api_tag_state_create();
}

void vit_entities_free(vit_entities *e) {
    api_tag_state_free(e);
}

int vit_text_entities_of(const vit_text_context *ctx, const char *text, size_t len,
                         const int32_t *ids, const int32_t *starts, const int32_t *ends, int n,
                         const float *logits, vit_aggregation aggregation, int keep_all,
                         vit_entities *s, const vit_entity **entities, vit_error *err) {
    if ((unsigned)aggregation > VIT_AGGREGATE_MAX)
        return vit_fail(err, "aggregation %d is not one of none, simple, first, average, max",
                        (int)aggregation);
    vit_model_info info;
    vit_text_model_info(ctx, &info);
    if (!(info.capabilities & VIT_CAN_TAG))
        return vit_fail(err, "%s has no token classifier", info.architecture);
    const int K = vit_text_num_labels(ctx), body = n > 2 ? n - 2 : 0;
    const text_tokenizer *tok = api_text_tokenizer(ctx);
    bool word_aware = false;
    int32_t unk = -1;
    vit_error no_fast = {0};
    const int fast = text_tokenizer_word_facts(tok, &word_aware, &unk, &no_fast) == 0;
    if (reserve(&s->probs, &s->probs_cap, (size_t)(body ? body : 1) * (size_t)K,
                sizeof *s->probs) != 0 ||
        reserve(&s->tokens, &s->tokens_cap, (size_t)(body ? body : 1), sizeof *s->tokens) != 0)
        return vit_fail(err, "out of memory");
    for (int t = 0; t < body; t++) { /* the start and end tokens are special: left out */
        const float *row = logits + (size_t)(t + 1) * K;
        float *p = s->probs + (size_t)t * K;
        float top = row[0];
        for (int k = 1; k < K; k++) top = row[k] > top ? row[k] : top;
        double sum = 0;
        for (int k = 0; k < K; k++) sum += exp((double)row[k] - top);
        for (int k = 0; k < K; k++) p[k] = (float)(exp((double)row[k] - top) / sum);
        const char *piece = vit_text_piece(ctx, ids[t + 1]);
        s->tokens[t] = (api_tag_token){.probs = p,
                                       .piece = piece ? piece : "",
                                       .unk = ids[t + 1] == unk,
                                       .index = t + 1,
                                       .bs = starts ? starts[t + 1] : -1,
                                       .be = starts ? ends[t + 1] : -1};
    }
    const char *labels[K > 0 ? K : 1];
    for (int k = 0; k < K; k++) labels[k] = vit_text_label(ctx, k);
    join_ctx j = {tok, ids + 1, fast};
    const api_tag_input in = {.text = text,
                              .len = len,
                              .tokens = s->tokens,
                              .n = body,
                              .K = K,
                              .labels = labels,
                              .word_aware = word_aware,
                              .keep_all = keep_all,
                              .aggregation = aggregation,
                              .join = join_tokens,
                              .user = &j,
                              .no_offsets = s->no_offsets[0] ? s->no_offsets : NULL};
    return api_tag_aggregate(s, &in, entities, err);
}

int vit_text_entities(vit_text_context *ctx, int i, const char *text, size_t len,
                      const float *logits, vit_aggregation aggregation, int keep_all,
                      const vit_entity **entities, vit_error *err) {
    if (i < 0 || i >= vit_text_max_batch(ctx))
        return vit_fail(err, "no text %d in a batch of at most %d", i, vit_text_max_batch(ctx));
    api_tag_state **state = api_text_tag_state(ctx);
    if (!*state && !(*state = api_tag_state_create())) return vit_fail(err, "out of memory");
    vit_error why = {0};
    const int32_t *starts = NULL, *ends = NULL;
    if (vit_text_token_offsets(ctx, i, &starts, &ends, &why) < 0) starts = ends = NULL;
    snprintf((*state)->no_offsets, sizeof(*state)->no_offsets, "%s", why.msg);
    int n;
    const int32_t *ids = vit_text_ids(ctx, i, &n);
    return vit_text_entities_of(ctx, text, len, ids, starts, ends, n, logits, aggregation, keep_all,
                                *state, entities, err);
}
