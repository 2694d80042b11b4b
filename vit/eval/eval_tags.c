/* vit eval of a token classifier: labelled words (CoNLL or JSON lines) -> per-word predictions
 * -> seqeval's entity-level scores and the words' accuracy. */
#include "vit/eval/eval_tags.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "vit/base/clock.h"
#include "vit/base/json.h"

#define DEFAULT_BATCH 32

/* ---- seqeval's get_entities ---- */

/* A label's tag (its first character) and type (what follows its first '-' after that, "_" when
 * empty), as seqeval splits chunk[0] and chunk[1:].split('-', maxsplit=1)[-1]. */
static char tag_of(const char *label, const char **type, size_t *len) {
    const char *rest = label[0] ? label + 1 : label, *dash = strchr(rest, '-');
    *type = dash ? dash + 1 : rest;
    *len = strlen(*type);
    if (*len == 0) *type = "_", *len = 1;
    return label[0];
}

static bool same_type(const char *a, size_t an, const char *b, size_t bn) {
    return an == bn && memcmp(a, b, an) == 0;
}

/* end_of_chunk and start_of_chunk, rule for rule */
static bool chunk_ends(char prev, char tag, bool type_differs) {
    return prev == 'E' || prev == 'S' ||
           (prev == 'B' && (tag == 'B' || tag == 'S' || tag == 'O')) ||
           (prev == 'I' && (tag == 'B' || tag == 'S' || tag == 'O')) ||
           (prev != 'O' && prev != '.' && type_differs);
}

static bool chunk_starts(char prev, char tag, bool type_differs) {
    return tag == 'B' || tag == 'S' || (prev == 'E' && (tag == 'E' || tag == 'I')) ||
           (prev == 'S' && (tag == 'E' || tag == 'I')) ||
           (prev == 'O' && (tag == 'E' || tag == 'I')) ||
           (tag != 'O' && tag != '.' && type_differs);
}

int tag_entities(const char *const *labels, int n, tag_entity *out) {
    char prev = 'O';
    const char *prev_type = "";
    size_t prev_len = 0;
    int begin = 0, m = 0;
    for (int i = 0; i <= n; i++) { /* and a final O */
        const char *type;
        size_t len;
        const char tag = tag_of(i < n ? labels[i] : "O", &type, &len);
        const bool differs = !same_type(prev_type, prev_len, type, len);
        if (chunk_ends(prev, tag, differs))
            out[m++] = (tag_entity){prev_type, prev_len, begin, i - 1};
        if (chunk_starts(prev, tag, differs)) begin = i;
        prev = tag, prev_type = type, prev_len = len;
    }
    return m;
}

/* ---- counts ---- */

/* The file's sentences flattened as seqeval flattens them, an O after each. */
struct tag_counts {
    const char **truth, **pred;
    size_t n, cap;
    long words, correct, sentences;
};

tag_counts *tag_counts_create(void) {
    return calloc(1, sizeof(tag_counts));
}

void tag_counts_free(tag_counts *c) {
    if (!c) return;
    free(c->truth);
    free(c->pred);
    free(c);
}

int tag_counts_add(tag_counts *c, const char *const *truth, const char *const *pred, int n) {
    if (c->n + (size_t)n + 1 > c->cap) {
        const size_t cap = 2 * (c->n + (size_t)n + 1);
        const char **t = realloc(c->truth, sizeof *t * cap);
        if (t) c->truth = t;
        const char **p = realloc(c->pred, sizeof *p * cap);
        if (p) c->pred = p;
        if (!t || !p) return -1;
        c->cap = cap;
    }
    for (int i = 0; i < n; i++) {
        c->truth[c->n] = truth[i], c->pred[c->n++] = pred[i];
        c->correct += strcmp(truth[i], pred[i]) == 0;
    }
    c->truth[c->n] = c->pred[c->n] = "O";
    c->n++;
    c->words += n;
    c->sentences++;
    return 0;
}

static void score(tag_eval_type *t) {
    t->precision = t->pred_count ? (double)t->correct / t->pred_count : 0;
    t->recall = t->true_count ? (double)t->correct / t->true_count : 0;
    const double s = t->precision + t->recall;
    t->f1 = s > 0 ? 2 * t->precision * t->recall / s : 0;
}

/* The type named type[0..len) in r, added (sorted) when new; NULL when out of memory. */
static tag_eval_type *type_in(tag_eval_result *r, const char *type, size_t len) {
    int k = 0;
    while (k < r->num_types) {
        const int c = strncmp(r->types[k].type, type, len);
        if (c == 0 && r->types[k].type[len] == '\0') return &r->types[k];
        if (c > 0 || (c == 0 && r->types[k].type[len] != '\0')) break;
        k++;
    }
    tag_eval_type *t = realloc(r->types, sizeof *t * (size_t)(r->num_types + 1));
    if (!t) return NULL;
    r->types = t;
    memmove(t + k + 1, t + k, sizeof *t * (size_t)(r->num_types - k));
    t[k] = (tag_eval_type){.type = strndup(type, len)};
    r->num_types++;
    return t[k].type ? &t[k] : NULL;
}

int tag_counts_result(const tag_counts *c, tag_eval_result *out) {
    *out = (tag_eval_result){
        .sentences = c->sentences, .words = c->words, .correct_words = c->correct};
    out->accuracy = c->words ? (double)c->correct / c->words : 0;
    tag_entity *t = malloc(sizeof *t * (c->n + 1)), *p = malloc(sizeof *p * (c->n + 1));
    int rc = t && p ? 0 : -1;
    const int nt = rc ? 0 : tag_entities(c->truth, (int)c->n, t);
    const int np = rc ? 0 : tag_entities(c->pred, (int)c->n, p);
    for (int i = 0; rc == 0 && i < nt; i++) {
        tag_eval_type *ty = type_in(out, t[i].type, t[i].type_len);
        if (!ty)
            rc = -1;
        else
            ty->true_count++;
    }
    for (int i = 0, j = 0; rc == 0 && i < np; i++) {
        tag_eval_type *ty = type_in(out, p[i].type, p[i].type_len);
        if (!ty) {
            rc = -1;
            break;
        }
        ty->pred_count++;
        /* both lists go by position: a true entity at the same words and of the same type */
        while (j < nt &&
               (t[j].first < p[i].first || (t[j].first == p[i].first && t[j].last < p[i].last)))
            j++;
        if (j < nt && t[j].first == p[i].first && t[j].last == p[i].last &&
            same_type(t[j].type, t[j].type_len, p[i].type, p[i].type_len))
            ty->correct++;
    }
    out->overall = (tag_eval_type){.type = strdup("micro")};
    for (int k = 0; rc == 0 && k < out->num_types; k++) {
        score(&out->types[k]);
        out->overall.true_count += out->types[k].true_count;
        out->overall.pred_count += out->types[k].pred_count;
        out->overall.correct += out->types[k].correct;
    }
    score(&out->overall);
    free(t);
    free(p);
    if (!out->overall.type) rc = -1;
    return rc;
}

void tag_eval_result_free(tag_eval_result *r) {
    for (int k = 0; k < r->num_types; k++) free(r->types[k].type);
    free(r->types);
    free(r->overall.type);
    *r = (tag_eval_result){0};
}

/* ---- the file ---- */

typedef struct {
    char **words, **labels; /* owned */
    int n;
} sentence;

typedef struct {
    sentence *s;
    int n, cap;
} sentences;

static void sentences_free(sentences *ss) {
    for (int i = 0; i < ss->n; i++) {
        for (int k = 0; k < ss->s[i].n; k++) free(ss->s[i].words[k]), free(ss->s[i].labels[k]);
        free(ss->s[i].words);
        free(ss->s[i].labels);
    }
    free(ss->s);
}

static sentence *new_sentence(sentences *ss) {
    if (ss->n == ss->cap) {
        const int cap = ss->cap ? 2 * ss->cap : 64;
        sentence *s = realloc(ss->s, sizeof *s * (size_t)cap);
        if (!s) return NULL;
        ss->s = s, ss->cap = cap;
    }
    ss->s[ss->n] = (sentence){0};
    return &ss->s[ss->n++];
}

static int add_word(sentence *s, const char *w, size_t wn, const char *l, size_t ln) {
    char **words = realloc(s->words, sizeof *words * (size_t)(s->n + 1));
    if (words) s->words = words;
    char **labels = realloc(s->labels, sizeof *labels * (size_t)(s->n + 1));
    if (labels) s->labels = labels;
    if (!words || !labels) return -1;
    s->words[s->n] = strndup(w, wn), s->labels[s->n] = strndup(l, ln);
    return s->words[s->n++] && s->labels[s->n - 1] ? 0 : -1;
}

static bool blank(char c) {
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* One CoNLL line (without its newline) into the current sentence; a blank line ends it. */
static int conll_line(sentences *ss, bool *open, const char *line, size_t n, const char *path,
                      long no, vit_error *err) {
    size_t a = 0, e = n;
    while (a < e && blank(line[a])) a++;
    while (e > a && blank(line[e - 1])) e--;
    if (a == e) return *open = false, 0;
    size_t w = a;
    while (w < e && !blank(line[w])) w++;
    size_t l = e;
    while (l > a && !blank(line[l - 1])) l--;
    if (w - a == 10 && memcmp(line + a, "-DOCSTART-", 10) == 0) return 0;
    if (w == e)
        return vit_fail(err, "%s:%ld: a word without a label (want `word<TAB>label`)", path, no);
    sentence *s = *open ? &ss->s[ss->n - 1] : new_sentence(ss);
    if (!s || add_word(s, line + a, w - a, line + l, e - l) != 0)
        return vit_fail(err, "%s: out of memory", path);
    *open = true;
    return 0;
}

/* {"tokens": [...], "ner_tags": [...]}: tags by name, or by index into the model's labels. */
static int json_line(sentences *ss, const char *line, size_t n, vit_text_context *ctx,
                     const char *path, long no, vit_error *err) {
    cJSON *o = cJSON_ParseWithLength(line, n);
    const cJSON *tokens = cJSON_GetObjectItemCaseSensitive(o, "tokens"),
                *tags = cJSON_GetObjectItemCaseSensitive(o, "ner_tags");
    if (!tags) tags = cJSON_GetObjectItemCaseSensitive(o, "tags");
    int rc = 0;
    if (!cJSON_IsObject(o))
        rc = vit_fail(err, "%s:%ld: not a JSON object", path, no);
    else if (!cJSON_IsArray(tokens) || !cJSON_IsArray(tags) ||
             cJSON_GetArraySize(tokens) != cJSON_GetArraySize(tags))
        rc = vit_fail(err, "%s:%ld: want \"tokens\" and \"ner_tags\", lists of one length", path,
                      no);
    sentence *s = rc ? NULL : new_sentence(ss);
    if (!rc && !s) rc = vit_fail(err, "%s: out of memory", path);
    for (int i = 0; rc == 0 && i < cJSON_GetArraySize(tokens); i++) {
        const cJSON *w = cJSON_GetArrayItem(tokens, i), *t = cJSON_GetArrayItem(tags, i);
        const char *label = cJSON_IsString(t) ? t->valuestring : NULL;
        if (cJSON_IsNumber(t) && t->valuedouble == (int)t->valuedouble)
            label = vit_text_label(ctx, (int)t->valuedouble);
        if (!cJSON_IsString(w))
            rc = vit_fail(err, "%s:%ld: token %d is not a string", path, no, i + 1);
        else if (!label)
            rc = vit_fail(err, "%s:%ld: tag %d is neither a label name nor an index below %d", path,
                          no, i + 1, vit_text_num_labels(ctx));
        else if (add_word(s, w->valuestring, strlen(w->valuestring), label, strlen(label)) != 0)
            rc = vit_fail(err, "%s: out of memory", path);
    }
    cJSON_Delete(o);
    return rc;
}

static int read_file(const char *path, vit_text_context *ctx, sentences *ss, vit_error *err) {
    FILE *f = fopen(path, "r");
    if (!f) return vit_fail(err, "%s: %s", path, strerror(errno));
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    long no = 0;
    int rc = 0, json = -1; /* decided by the first character that is not blank */
    bool open = false;
    while (rc == 0 && (n = getline(&line, &cap, f)) >= 0) {
        no++;
        size_t len = (size_t)n;
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) len--;
        size_t a = 0;
        while (a < len && blank(line[a])) a++;
        if (json < 0 && a < len) json = line[a] == '{';
        if (json == 1 && a < len) rc = json_line(ss, line, len, ctx, path, no, err);
        if (json != 1) rc = conll_line(ss, &open, line, len, path, no, err);
    }
    if (rc == 0 && ferror(f)) rc = vit_fail(err, "%s: %s", path, strerror(EIO));
    free(line);
    fclose(f);
    if (rc == 0 && ss->n == 0) rc = vit_fail(err, "%s: no labelled words", path);
    return rc;
}

/* ---- the model ---- */

typedef struct {
    vit_text_context *ctx;
    tag_counts *counts;
    FILE *predictions;
    long without;
    float *logits;
    char **text;
    size_t *len;
    size_t **at; /* each sentence's words' byte starts in its text, and the text's length */
    const char **pred;
} run;

/* A sentence's words joined by spaces, where each begins in it (and the end) into *at. */
static char *join_words(const sentence *s, size_t *len, size_t **at) {
    size_t n = 0;
    for (int i = 0; i < s->n; i++) n += strlen(s->words[i]) + 1;
    char *text = malloc(n + 1);
    *at = malloc(sizeof **at * (size_t)(s->n + 1));
    if (!text || !*at) return free(text), free(*at), *at = NULL, NULL;
    size_t k = 0;
    for (int i = 0; i < s->n; i++) {
        if (i) text[k++] = ' ';
        (*at)[i] = k;
        const size_t w = strlen(s->words[i]);
        memcpy(text + k, s->words[i], w), k += w;
    }
    (*at)[s->n] = k;
    text[k] = '\0';
    *len = k;
    return text;
}

static int argmax(const float *l, int K) {
    int best = 0;
    for (int k = 1; k < K; k++) best = l[k] > l[best] ? k : best;
    return best;
}

/* Sentence b of the batch: each word's first token's label, words without one left out. */
static int score_sentence(run *r, const sentence *s, int b, const size_t *at, vit_error *err) {
    const int K = vit_text_num_labels(r->ctx), T = vit_text_max_tokens(r->ctx);
    const int32_t *starts, *ends;
    const int n = vit_text_token_offsets(r->ctx, b, &starts, &ends, err);
    if (n < 0) return -1;
    const char **truth = (const char **)r->pred + s->n;
    int kept = 0, t = 1;
    for (int w = 0; w < s->n; w++) {
        /* the first token reaching into word w (a token may start at the space before it) */
        const size_t end = at[w] + strlen(s->words[w]);
        while (t < n - 1 && (size_t)ends[t] <= at[w]) t++;
        const bool has = t < n - 1 && (size_t)starts[t] < end;
        const char *label =
            has ? vit_text_label(r->ctx, argmax(r->logits + ((size_t)b * T + t) * K, K)) : NULL;
        if (r->predictions)
            fprintf(r->predictions, "%s\t%s\t%s\n", s->words[w], s->labels[w], label ? label : "-");
        if (!has) {
            r->without++;
            continue;
        }
        truth[kept] = s->labels[w], r->pred[kept++] = label;
    }
    if (r->predictions) fputc('\n', r->predictions);
    return tag_counts_add(r->counts, truth, r->pred, kept) == 0 ? 0
                                                                : vit_fail(err, "out of memory");
}

int tag_eval_file(const char *model_dir, const char *path, const tag_eval_options *o,
                  FILE *predictions, tag_eval_result *out, vit_error *err) {
    *out = (tag_eval_result){0};
    vit_text_params params = vit_text_default_params();
    params.max_batch = o->batch > 0 ? o->batch : DEFAULT_BATCH;
    params.threads = o->threads;
    params.backend = o->backend;
    params.precision = o->precision;
    run r = {.predictions = predictions};
    if (!(r.ctx = vit_text_load(model_dir, &params, err))) return -1;
    vit_model_info info;
    vit_text_model_info(r.ctx, &info);
    sentences ss = {0};
    const double t0 = clock_seconds();
    int rc = !(info.capabilities & VIT_CAN_TAG)
                 ? vit_fail(err, "%s: %s has no token classifier", model_dir, info.architecture)
                 : read_file(path, r.ctx, &ss, err);
    const int B = params.max_batch, K = vit_text_num_labels(r.ctx);
    int longest = 1;
    for (int i = 0; i < ss.n; i++) longest = ss.s[i].n > longest ? ss.s[i].n : longest;
    r.counts = tag_counts_create();
    r.logits =
        malloc(sizeof *r.logits * (size_t)B * (size_t)vit_text_max_tokens(r.ctx) * (size_t)K);
    r.text = calloc((size_t)B, sizeof *r.text);
    r.len = calloc((size_t)B, sizeof *r.len);
    r.at = calloc((size_t)B, sizeof *r.at);
    r.pred = malloc(sizeof *r.pred * 2 * (size_t)longest);
    if (rc == 0 && (!r.counts || !r.logits || !r.text || !r.len || !r.at || !r.pred))
        rc = vit_fail(err, "out of memory");
    for (int first = 0; rc == 0 && first < ss.n; first += B) {
        const int n = ss.n - first < B ? ss.n - first : B;
        for (int b = 0; rc == 0 && b < n; b++) {
            free(r.text[b]), free(r.at[b]);
            if (!(r.text[b] = join_words(&ss.s[first + b], &r.len[b], &r.at[b])))
                rc = vit_fail(err, "out of memory");
        }
        if (rc == 0)
            rc = vit_text_token_logits(r.ctx, (const char *const *)r.text, r.len, n, r.logits, err);
        for (int b = 0; rc == 0 && b < n; b++)
            if (score_sentence(&r, &ss.s[first + b], b, r.at[b], err) != 0)
                rc = vit_fail(err, "%s: sentence %d: %s", path, first + b + 1, err->msg);
    }
    if (rc == 0 && tag_counts_result(r.counts, out) != 0) rc = vit_fail(err, "out of memory");
    out->words_without_token = r.without;
    out->seconds = clock_seconds() - t0;
    for (int b = 0; r.text && b < B; b++) free(r.text[b]), free(r.at[b]);
    free(r.text), free(r.len), free(r.at), free(r.pred), free(r.logits);
    tag_counts_free(r.counts);
    sentences_free(&ss);
    vit_text_free(r.ctx);
    if (rc != 0) tag_eval_result_free(out);
    return rc;
}

/* ---- the report ---- */

void tag_eval_print(const tag_eval_result *r, const char *model, const char *data, FILE *out) {
    fprintf(out, "model  %s\ndata   %s: %ld sentences, %ld words", model, data, r->sentences,
            r->words + r->words_without_token);
    if (r->words_without_token)
        fprintf(out, " (%ld without a token: cut off, or dropped by the tokenizer)",
                r->words_without_token);
    fprintf(out, "\naccuracy  %.4f  (%ld of %ld words)\n", r->accuracy, r->correct_words, r->words);
    fprintf(out, "entities (seqeval)\n  %-12s %9s %9s %9s %7s %7s\n", "type", "precision", "recall",
            "f1", "number", "found");
    for (int k = 0; k <= r->num_types; k++) {
        const tag_eval_type *t = k < r->num_types ? &r->types[k] : &r->overall;
        fprintf(out, "  %-12s %9.4f %9.4f %9.4f %7ld %7ld\n", t->type, t->precision, t->recall,
                t->f1, t->true_count, t->pred_count);
    }
    fprintf(out, "%.1f s\n", r->seconds);
}

static void json_type(cJSON *o, const tag_eval_type *t) {
    cJSON_AddNumberToObject(o, "precision", t->precision);
    cJSON_AddNumberToObject(o, "recall", t->recall);
    cJSON_AddNumberToObject(o, "f1", t->f1);
    cJSON_AddNumberToObject(o, "number", (double)t->true_count);
    cJSON_AddNumberToObject(o, "found", (double)t->pred_count);
    cJSON_AddNumberToObject(o, "correct", (double)t->correct);
}

void tag_eval_write_json(const tag_eval_result *r, const char *model, const char *data, FILE *out) {
    cJSON *o = cJSON_CreateObject(), *types = cJSON_AddObjectToObject(o, "types");
    cJSON_AddStringToObject(o, "model", model);
    cJSON_AddStringToObject(o, "data", data);
    for (int k = 0; k < r->num_types; k++)
        json_type(cJSON_AddObjectToObject(types, r->types[k].type), &r->types[k]);
    cJSON_AddNumberToObject(o, "overall_precision", r->overall.precision);
    cJSON_AddNumberToObject(o, "overall_recall", r->overall.recall);
    cJSON_AddNumberToObject(o, "overall_f1", r->overall.f1);
    cJSON_AddNumberToObject(o, "overall_accuracy", r->accuracy);
    cJSON_AddNumberToObject(o, "sentences", (double)r->sentences);
    cJSON_AddNumberToObject(o, "words", (double)r->words);
    cJSON_AddNumberToObject(o, "words_without_token", (double)r->words_without_token);
    cJSON_AddNumberToObject(o, "seconds", r->seconds);
    char *s = cJSON_PrintUnformatted(o);
    if (s) fprintf(out, "%s\n", s);
    free(s);
    cJSON_Delete(o);
}
