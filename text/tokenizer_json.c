/* tokenizer.json: loading its parts and running them in the library's order (see
 * text/tokenizer_json.h). Written from the tokenizers library's tokenizer/mod.rs (encode,
 * post_process, decode) and tokenizer/added_vocabulary.rs (the added tokens' split). */
#include "text/tokenizer_json.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/added_tokens.h"
#include "text/decode.h"
#include "text/tj.h"
#include "text/utf8.h"
#include "vit/base/json.h"

typedef struct {
    char *content;
    tj_text cps;   /* content as code points */
    tj_text norm;  /* normalized true: content through the normalizer, what is matched */
    char *decoded; /* what decoding gives it: content, or its normalized form (as the library) */
    int32_t id;
    bool lstrip, rstrip, single_word, normalized, special;
} added;

enum { TRUNC_LONGEST_FIRST, TRUNC_ONLY_FIRST, TRUNC_ONLY_SECOND };

/* The added tokens of one matching set, bucketed by their first code point. */
#define BUCKETS 256
typedef struct {
    int32_t *tok; /* indices into tokens */
    size_t n;
} bucket;

struct tokenizer_json {
    char *name;
    tj_model *model;
    tj_normalizer *normalizer;
    tj_pretokenizer *pre;
    tj_post post;
    tj_decoder *decoder;
    added *tok;
    size_t ntok;
    bucket raw[BUCKETS], normed[BUCKETS];
    tj_map special; /* contents of the special added tokens */
    bool truncate, trunc_left;
    long trunc_max;
    int trunc_strategy;
    bool pad, pad_left;
    long pad_fixed, pad_multiple; /* pad_fixed 0: BatchLongest (nothing for one text) */
    int32_t pad_id, pad_type_id;
    bool clean_up;
    char kind[48];
    text_tokenizer_info info;
    char *class_name;
};

/* ---- loading ---- */

/* An added token's id as the library gives it on load (AddedVocabulary::add_tokens): the
 * model's id of its content, else the next past the vocabulary; the file's "id" is not used. */
static int32_t added_id(const tokenizer_json *t, const char *content, int32_t *next) {
    const int32_t id = tj_model_id(t->model, content, strlen(content));
    return id >= 0 ? id : (*next)++;
}

static int read_added_token(tokenizer_json *t, const cJSON *e, int32_t *next, const char *src,
                            vit_error *err) {
    added a = {.normalized = true}; /* AddedToken's default */
    const char *content = NULL;
    long id = -1;
    if (tj_string(e, "content", &content, src, err) != 0 ||
        tj_int(e, "id", 0, INT_MAX / 2, &id, src, err) != 0 ||
        tj_bool(e, "lstrip", &a.lstrip, src, err) != 0 ||
        tj_bool(e, "rstrip", &a.rstrip, src, err) != 0 ||
        tj_bool(e, "single_word", &a.single_word, src, err) != 0 ||
        tj_bool(e, "normalized", &a.normalized, src, err) != 0 ||
        tj_bool(e, "special", &a.special, src, err) != 0)
        return -1;
    if (!content) return vit_fail(err, "%s: an added token without content", src);
    if (!*content) return 0; /* the library ignores empty ones */
    size_t k = 0;            /* a content given twice: the later flags, the first id */
    while (k < t->ntok && strcmp(t->tok[k].content, content) != 0) k++;
    if (k < t->ntok) {
        a.id = t->tok[k].id;
        free(t->tok[k].content), free(t->tok[k].decoded);
        tj_text_free(&t->tok[k].cps), tj_text_free(&t->tok[k].norm);
    } else {
        a.id = added_id(t, content, next);
        t->ntok++;
    }
    if (!(a.content = strdup(content))) return vit_fail(err, "%s: out of memory", src);
    tj_text_add_utf8(&a.cps, content, strlen(content));
    if (a.normalized) tj_normalize(t->normalizer, a.cps.c, a.cps.n, &a.norm);
    size_t len;
    a.decoded = a.normalized ? tj_utf8(a.norm.c, a.norm.n, &len) : strdup(content);
    t->tok[k] = a;
    if (a.cps.failed || a.norm.failed || !a.decoded) return vit_fail(err, "%s: out of memory", src);
    if (a.special && tj_map_set(&t->special, content, strlen(content), 1) != 0)
        return vit_fail(err, "%s: out of memory", src);
    return 0;
}

static int read_added(tokenizer_json *t, const cJSON *list, const char *src, vit_error *err) {
    if (!list || cJSON_IsNull(list)) return 0;
    if (!cJSON_IsArray(list)) return vit_fail(err, "%s: \"added_tokens\" must be a list", src);
    if (!(t->tok = calloc((size_t)cJSON_GetArraySize(list) + 1, sizeof *t->tok)))
        return vit_fail(err, "%s: out of memory", src);
    int32_t next = tj_model_entries(t->model);
    for (const cJSON *e = list->child; e; e = e->next)
        if (read_added_token(t, e, &next, src, err) != 0) return -1;
    return 0;
}

static const tj_text *match_text(const added *a) {
    return a->normalized ? &a->norm : &a->cps;
}

static int index_added(tokenizer_json *t, const char *src, vit_error *err) {
    for (size_t i = 0; i < t->ntok; i++) {
        const tj_text *m = match_text(&t->tok[i]);
        if (m->n == 0) continue; /* normalized to nothing: never matched */
        bucket *b = &(t->tok[i].normalized ? t->normed : t->raw)[(uint32_t)m->c[0] % BUCKETS];
        int32_t *v = realloc(b->tok, (b->n + 1) * sizeof *v);
        if (!v) return vit_fail(err, "%s: out of memory", src);
        b->tok = v;
        b->tok[b->n++] = (int32_t)i;
    }
    return 0;
}

static int read_truncation(tokenizer_json *t, const cJSON *tr, const char *src, vit_error *err) {
    if (!tr || cJSON_IsNull(tr)) return 0;
    const char *dir = NULL, *strategy = NULL;
    t->truncate = true;
    if (tj_int(tr, "max_length", 0, INT_MAX, &t->trunc_max, src, err) != 0 ||
        tj_string(tr, "direction", &dir, src, err) != 0 ||
        tj_string(tr, "strategy", &strategy, src, err) != 0)
        return -1;
    t->trunc_left = dir && strcmp(dir, "Left") == 0;
    t->trunc_strategy = !strategy || strcmp(strategy, "LongestFirst") == 0 ? TRUNC_LONGEST_FIRST
                        : strcmp(strategy, "OnlyFirst") == 0               ? TRUNC_ONLY_FIRST
                        : strcmp(strategy, "OnlySecond") == 0              ? TRUNC_ONLY_SECOND
                                                                           : -1;
    if (t->trunc_strategy < 0)
        return vit_fail(err, "%s: truncation strategy \"%.40s\" is unknown", src, strategy);
    if ((size_t)t->trunc_max < tj_post_added(&t->post))
        return vit_fail(err,
                        "%s: truncation's max_length %ld is below the %zu tokens the "
                        "post_processor adds",
                        src, t->trunc_max, tj_post_added(&t->post));
    return 0;
}

static int read_padding(tokenizer_json *t, const cJSON *p, const char *src, vit_error *err) {
    if (!p || cJSON_IsNull(p)) return 0;
    const char *dir = NULL;
    long id = 0, type = 0;
    t->pad = true;
    const cJSON *strategy = cJSON_GetObjectItemCaseSensitive(p, "strategy");
    const cJSON *fixed = cJSON_GetObjectItemCaseSensitive(strategy, "Fixed");
    if (fixed && !(cJSON_IsNumber(fixed) && fixed->valuedouble >= 0 && fixed->valuedouble < 1e7))
        return vit_fail(err, "%s: padding's Fixed length is not a length", src);
    t->pad_fixed = fixed ? (long)fixed->valuedouble : 0;
    if (tj_int(p, "pad_to_multiple_of", 0, 1 << 20, &t->pad_multiple, src, err) != 0 ||
        tj_int(p, "pad_id", 0, INT_MAX / 2, &id, src, err) != 0 ||
        tj_int(p, "pad_type_id", 0, INT_MAX / 2, &type, src, err) != 0 ||
        tj_string(p, "direction", &dir, src, err) != 0)
        return -1;
    t->pad_id = (int32_t)id, t->pad_type_id = (int32_t)type;
    t->pad_left = dir && strcmp(dir, "Left") == 0;
    return 0;
}

static int read_json(tokenizer_json *t, const cJSON *root, const char *src, vit_error *err) {
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
    if (!model) return vit_fail(err, "%s: no \"model\"", src);
    if (tj_model_read(model, &t->model, src, err) != 0 ||
        tj_normalizer_read(cJSON_GetObjectItemCaseSensitive(root, "normalizer"), &t->normalizer,
                           src, err) != 0 ||
        tj_pretokenizer_read(cJSON_GetObjectItemCaseSensitive(root, "pre_tokenizer"), &t->pre, src,
                             err) != 0 ||
        tj_post_read(cJSON_GetObjectItemCaseSensitive(root, "post_processor"), &t->post, src,
                     err) != 0 ||
        tj_decoder_read(cJSON_GetObjectItemCaseSensitive(root, "decoder"), &t->decoder, src, err) !=
            0 ||
        read_added(t, cJSON_GetObjectItemCaseSensitive(root, "added_tokens"), src, err) != 0 ||
        index_added(t, src, err) != 0 ||
        read_truncation(t, cJSON_GetObjectItemCaseSensitive(root, "truncation"), src, err) != 0 ||
        read_padding(t, cJSON_GetObjectItemCaseSensitive(root, "padding"), src, err) != 0)
        return -1;
    return 0;
}

/* The id of a token string: an added token's, else the model's; -1. */
static int32_t token_id(const tokenizer_json *t, const char *s) {
    for (size_t i = 0; i < t->ntok; i++)
        if (strcmp(t->tok[i].content, s) == 0) return t->tok[i].id;
    return tj_model_id(t->model, s, strlen(s));
}

static int32_t named_id(const tokenizer_json *t, const cJSON *config, const char *key) {
    const cJSON *c = json_token_content(cJSON_GetObjectItemCaseSensitive(config, key));
    return cJSON_IsString(c) ? token_id(t, c->valuestring) : -1;
}

/* What tokenizer_config.json adds: the class, the named tokens, clean-up and the length. */
static int read_config(tokenizer_json *t, const tokenizer_source *src, vit_error *err) {
    cJSON *config = NULL;
    if (tokenizer_source_json(src, &config, err) != 0) return -1;
    int rc = added_tokens_settings(config, src->name, &t->clean_up, &t->info.max_len, err);
    const cJSON *cls = cJSON_GetObjectItemCaseSensitive(config, "tokenizer_class");
    if (rc == 0 && !(t->class_name = strdup(cJSON_IsString(cls) ? cls->valuestring
                                                                : "PreTrainedTokenizerFast")))
        rc = vit_fail(err, "%s: out of memory", t->name);
    t->info.bos_id = config ? named_id(t, config, "bos_token") : -1;
    t->info.eos_id = config ? named_id(t, config, "eos_token") : -1;
    t->info.pad_id = config ? named_id(t, config, "pad_token") : -1;
    cJSON_Delete(config);
    return rc;
}

static void fill_info(tokenizer_json *t) {
    int size = tj_model_size(t->model);
    for (size_t i = 0; i < t->ntok; i++)
        if (t->tok[i].id >= size) size = t->tok[i].id + 1;
    snprintf(t->kind, sizeof t->kind, "tokenizer.json (%s)", tj_model_name(t->model));
    if (t->info.pad_id < 0 && t->pad) t->info.pad_id = t->pad_id;
    if (t->info.pad_id < 0) t->info.pad_id = t->info.eos_id;
    if (t->info.pad_id < 0) t->info.pad_id = 0;
    if (!t->info.max_len && t->truncate) t->info.max_len = (int)t->trunc_max;
    t->info.kind = t->kind, t->info.class_name = t->class_name, t->info.vocab_size = size;
}

int tokenizer_json_load_memory(const tokenizer_json_sources *src, tokenizer_json **out,
                               vit_error *err) {
    *out = NULL;
    tokenizer_json *t = calloc(1, sizeof *t);
    const char *name = src->json.name ? src->json.name : "tokenizer.json";
    if (!t || !(t->name = strdup(name))) {
        free(t);
        return vit_fail(err, "%s: out of memory", name);
    }
    cJSON *root = NULL;
    int rc = src->json.text ? tokenizer_source_json(&src->json, &root, err)
                            : vit_fail(err, "%s: missing", name);
    if (rc == 0) rc = read_json(t, root, name, err);
    cJSON_Delete(root);
    if (rc == 0) rc = read_config(t, &src->config, err);
    if (rc != 0) {
        tokenizer_json_free(t);
        return -1;
    }
    fill_info(t);
    *out = t;
    return 0;
}

int tokenizer_json_load(const char *dir, tokenizer_json **out, vit_error *err) {
    static const char *const names[] = {"tokenizer.json", "tokenizer_config.json"};
    tokenizer_files f;
    int rc = tokenizer_files_read(&f, dir, names, 2, 1, err);
    if (rc == 0) {
        const tokenizer_json_sources src = {f.src[0], f.src[1]};
        rc = tokenizer_json_load_memory(&src, out, err);
    }
    tokenizer_files_free(&f);
    return rc;
}

void tokenizer_json_free(tokenizer_json *t) {
    if (!t) return;
    tj_model_free(t->model);
    tj_normalizer_free(t->normalizer);
    tj_pretokenizer_free(t->pre);
    tj_post_free(&t->post);
    tj_decoder_free(t->decoder);
    for (size_t i = 0; i < t->ntok; i++) {
        free(t->tok[i].content), free(t->tok[i].decoded);
        tj_text_free(&t->tok[i].cps), tj_text_free(&t->tok[i].norm);
    }
    free(t->tok);
    for (int b = 0; b < BUCKETS; b++) free(t->raw[b].tok), free(t->normed[b].tok);
    tj_map_free(&t->special);
    free(t->name), free(t->class_name);
    free(t);
}

const char *tokenizer_json_model(const tokenizer_json *t) {
    return tj_model_name(t->model);
}

/* ---- the added tokens' split (AddedVocabulary::find_matches) ---- */

typedef struct {
    size_t start, end;
    int32_t tok; /* index into t->tok, -1 for text */
} part;

typedef struct {
    part *v;
    size_t n, cap;
    bool failed;
} parts;

static void part_add(parts *p, size_t start, size_t end, int32_t tok) {
    if (p->failed) return;
    if (p->n == p->cap) {
        const size_t cap = p->cap ? 2 * p->cap : 16;
        part *v = realloc(p->v, cap * sizeof *v);
        if (!v) {
            p->failed = true;
            return;
        }
        p->v = v, p->cap = cap;
    }
    p->v[p->n++] = (part){start, end, tok};
}

/* The longest token of the set written at c[i], or -1. */
static int32_t longest_at(const tokenizer_json *t, const bucket *set, const int32_t *c, size_t n,
                          size_t i) {
    const bucket *b = &set[(uint32_t)c[i] % BUCKETS];
    int32_t best = -1;
    size_t best_n = 0;
    for (size_t k = 0; k < b->n; k++) {
        const tj_text *m = match_text(&t->tok[b->tok[k]]);
        if (m->n > best_n && n - i >= m->n && memcmp(c + i, m->c, m->n * sizeof *c) == 0)
            best = b->tok[k], best_n = m->n;
    }
    return best;
}

/* c[0..n) cut at the set's tokens, with their single_word, lstrip and rstrip. */
static void find_matches(const tokenizer_json *t, const bucket *set, const int32_t *c, size_t n,
                         parts *out) {
    size_t from = 0; /* where the last match ended (its stripped white space included) */
    for (size_t i = 0; i < n;) {
        const int32_t k = longest_at(t, set, c, n, i);
        if (k < 0) {
            i++;
            continue;
        }
        const added *a = &t->tok[k];
        size_t start = i, stop = i + match_text(a)->n;
        i = stop; /* the search goes on after the match, whether it is kept or not */
        if (a->single_word &&
            ((start > 0 && tj_is_alnum(c[start - 1])) || (stop < n && tj_is_alnum(c[stop]))))
            continue;
        if (a->lstrip) {
            while (start > from && tj_is_whitespace(c[start - 1])) start--;
        }
        if (a->rstrip)
            while (stop < n && tj_is_whitespace(c[stop])) stop++;
        if (from < start) part_add(out, from, start, -1);
        part_add(out, start, stop, k);
        from = stop;
        if (i < from) i = from;
    }
    if (from < n) part_add(out, from, n, -1);
}

/* ---- encoding ---- */

typedef struct {
    tj_text norm;
    tj_pieces in, pieces, tmp;
    parts raw, normed;
} work;

static void work_free(work *w) {
    tj_text_free(&w->norm);
    tj_pieces_free(&w->in), tj_pieces_free(&w->pieces), tj_pieces_free(&w->tmp);
    free(w->raw.v), free(w->normed.v);
}

/* One stretch of normalized text c[0..n): pre-tokenized, each piece through the model. */
static int encode_piece(const tokenizer_json *t, work *w, const int32_t *c, size_t n, bool first,
                        tj_ids *ids, vit_error *err) {
    tj_pieces_reset(&w->in);
    tj_pieces_add(&w->in, c, n, first);
    tj_pretokenize(t->pre, &w->in, &w->pieces, &w->tmp);
    if (w->pieces.failed) return vit_fail(err, "%s: out of memory", t->name);
    for (size_t i = 0; i < w->pieces.count; i++) {
        const tj_span s = w->pieces.span[i];
        size_t len;
        char *u = tj_utf8(w->pieces.text.c + s.start, s.end - s.start, &len);
        if (!u) return vit_fail(err, "%s: out of memory", t->name);
        const int rc = tj_model_tokenize(t->model, u, len, ids, t->name, err);
        free(u);
        if (rc != 0) return -1;
    }
    return 0;
}

/* A stretch of raw text between non-normalized tokens: normalized, cut at the normalized
 * tokens, the rest encoded. */
static int encode_stretch(const tokenizer_json *t, work *w, const int32_t *c, size_t n, bool first,
                          tj_ids *ids, vit_error *err) {
    tj_normalize(t->normalizer, c, n, &w->norm);
    w->normed.n = 0;
    find_matches(t, t->normed, tj_cps(&w->norm), w->norm.n, &w->normed);
    if (w->norm.failed || w->normed.failed) return vit_fail(err, "%s: out of memory", t->name);
    const parts p = w->normed;
    for (size_t i = 0; i < p.n; i++) {
        if (p.v[i].tok >= 0) {
            tj_ids_add(ids, t->tok[p.v[i].tok].id);
            continue;
        }
        /* the normalized text is changed by the pieces' encoding: copy the stretch */
        tj_text piece = {0};
        tj_text_add(&piece, w->norm.c + p.v[i].start, p.v[i].end - p.v[i].start);
        const int rc = piece.failed ? vit_fail(err, "%s: out of memory", t->name)
                                    : encode_piece(t, w, piece.c, piece.n,
                                                   first && p.v[i].start == 0, ids, err);
        tj_text_free(&piece);
        if (rc != 0) return -1;
    }
    return 0;
}

/* The text's ids before the post-processor. */
static int encode_text(const tokenizer_json *t, const char *text, size_t len, tj_ids *ids,
                       vit_error *err) {
    tj_text cps = {0};
    tj_text_add_utf8(&cps, text, len);
    work w = {0};
    int rc = cps.failed ? vit_fail(err, "%s: out of memory", t->name) : 0;
    if (rc == 0) find_matches(t, t->raw, tj_cps(&cps), cps.n, &w.raw);
    if (rc == 0 && w.raw.failed) rc = vit_fail(err, "%s: out of memory", t->name);
    for (size_t i = 0; rc == 0 && i < w.raw.n; i++) {
        const part p = w.raw.v[i];
        if (p.tok >= 0)
            tj_ids_add(ids, t->tok[p.tok].id);
        else
            rc = encode_stretch(t, &w, cps.c + p.start, p.end - p.start, p.start == 0, ids, err);
    }
    if (rc == 0 && ids->failed) rc = vit_fail(err, "%s: out of memory", t->name);
    work_free(&w);
    tj_text_free(&cps);
    return rc;
}

/* ---- truncation, the template, padding (TokenizerImpl::post_process) ---- */

/* A text's ids kept: body->id[start .. start + n). */
typedef struct {
    const int32_t *id;
    size_t n;
} kept;

static kept keep(const tj_ids *body, size_t n, bool left) {
    return (kept){n ? body->id + (left ? body->n - n : 0) : NULL, n};
}

/* truncate_encodings: the lengths *n1 (and *n2 of a pair) cut so that they fit max. */
static int fit(const tokenizer_json *t, size_t *n1, size_t *n2, bool pair, size_t max, int strategy,
               vit_error *err) {
    const size_t total = *n1 + (pair ? *n2 : 0);
    if (total <= max) return 0;
    const size_t remove = total - max;
    if (strategy == TRUNC_LONGEST_FIRST && !pair) {
        *n1 = max;
    } else if (strategy == TRUNC_LONGEST_FIRST) { /* the shorter kept whole if it can be */
        size_t a = *n1 < *n2 ? *n1 : *n2, b;
        b = a > max ? a : (a > max - a ? a : max - a);
        if (a + b > max) a = max / 2, b = a + max % 2;
        if (*n1 <= *n2)
            *n1 = a, *n2 = b;
        else
            *n2 = a, *n1 = b;
    } else {
        size_t *n = strategy == TRUNC_ONLY_FIRST ? n1 : pair ? n2 : NULL;
        if (!n || *n <= remove)
            return vit_fail(err, "%s: the truncation (%s) cannot make the text fit %zu ids",
                            t->name, strategy == TRUNC_ONLY_FIRST ? "OnlyFirst" : "OnlySecond",
                            max);
        *n -= remove;
    }
    return 0;
}

static void emit_ids(tj_ids *ids, tj_ids *types, const int32_t *v, size_t n, int32_t type) {
    for (size_t k = 0; k < n; k++) tj_ids_add(ids, v[k]), tj_ids_add(types, type);
}

/* The texts inside the template (or one after the other without one). */
static void apply_template(const tokenizer_json *t, kept a, const kept *b, unsigned flags,
                           tj_ids *ids, tj_ids *types) {
    const tj_template_item *items = b ? t->post.pair : t->post.single;
    const size_t n = b ? t->post.npair : t->post.nsingle;
    if (flags & TJ_NO_SPECIAL || !items) {
        emit_ids(ids, types, a.id, a.n, 0);
        if (b) emit_ids(ids, types, b->id, b->n, 1);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        const tj_template_item *it = &items[i];
        const kept *text = it->second ? b : &a;
        if (it->sequence)
            emit_ids(ids, types, text ? text->id : NULL, text ? text->n : 0, it->type_id);
        else
            emit_ids(ids, types, it->ids, it->n, it->type_id);
    }
}

/* The saved padding: to its fixed length (else as long as it is), up to its multiple; never
 * past the caller's max_len (0: none). */
static void pad(const tokenizer_json *t, int max_len, tj_ids *ids, tj_ids *types) {
    size_t target = t->pad_fixed ? (size_t)t->pad_fixed : ids->n;
    if (t->pad_multiple && target % (size_t)t->pad_multiple)
        target += (size_t)t->pad_multiple - target % (size_t)t->pad_multiple;
    if (max_len > 0 && target > (size_t)max_len) target = (size_t)max_len;
    const size_t n0 = ids->n;
    while (ids->n < target) tj_ids_add(ids, t->pad_id), tj_ids_add(types, t->pad_type_id);
    if (t->pad_left && !ids->failed && !types->failed && target > n0) {
        memmove(ids->id + (target - n0), ids->id, n0 * sizeof *ids->id);
        memmove(types->id + (target - n0), types->id, n0 * sizeof *types->id);
        for (size_t k = 0; k < target - n0; k++)
            ids->id[k] = t->pad_id, types->id[k] = t->pad_type_id;
    }
}

static size_t added_count(const tokenizer_json *t, bool pair, unsigned flags) {
    if (flags & TJ_NO_SPECIAL) return 0;
    return pair ? tj_post_added_pair(&t->post) : tj_post_added(&t->post);
}

/* The saved truncation (TJ_AS_SAVED), then the caller's max_len (longest first, right). */
static int truncate_bodies(const tokenizer_json *t, const tj_ids *a, const tj_ids *b, int max_len,
                           unsigned flags, kept *ka, kept *kb, vit_error *err) {
    const size_t added = added_count(t, b != NULL, flags);
    size_t n1 = a->n, n2 = b ? b->n : 0;
    bool left = false;
    if (flags & TJ_AS_SAVED && t->truncate) {
        if ((size_t)t->trunc_max < added)
            return vit_fail(err, "%s: truncation's max_length %ld is below the %zu ids added",
                            t->name, t->trunc_max, added);
        if (fit(t, &n1, &n2, b != NULL, (size_t)t->trunc_max - added, t->trunc_strategy, err))
            return -1;
        left = t->trunc_left;
    }
    if (max_len > 0 && (size_t)max_len < added + 1)
        return vit_fail(err, "%s: a length of %d leaves no room beside the %zu ids added", t->name,
                        max_len, added);
    if (max_len > 0 &&
        fit(t, &n1, &n2, b != NULL, (size_t)max_len - added, TRUNC_LONGEST_FIRST, err) != 0)
        return -1;
    *ka = keep(a, n1, left);
    if (b) *kb = keep(b, n2, left);
    return 0;
}

/* One text or a pair: ids and type ids. */
static int encode_full(const tokenizer_json *t, const char *a, size_t alen, const char *b,
                       size_t blen, int max_len, unsigned flags, int32_t **ids, int32_t **types,
                       vit_error *err) {
    *ids = NULL;
    if (types) *types = NULL;
    tj_ids ba = {0}, bb = {0}, out = {0}, out_types = {0};
    kept ka, kb;
    int rc = encode_text(t, a ? a : "", alen, &ba, err);
    if (rc == 0 && b) rc = encode_text(t, b, blen, &bb, err);
    if (rc == 0) rc = truncate_bodies(t, &ba, b ? &bb : NULL, max_len, flags, &ka, &kb, err);
    if (rc == 0) {
        apply_template(t, ka, b ? &kb : NULL, flags, &out, &out_types);
        if (flags & TJ_AS_SAVED && t->pad) pad(t, max_len, &out, &out_types);
        tj_ids_add(&out, 0), tj_ids_add(&out_types, 0); /* room, so that none is NULL */
        out.n--, out_types.n--;
        if (out.failed || out_types.failed || out.n > INT_MAX)
            rc = vit_fail(err, "%s: out of memory", t->name);
    }
    tj_ids_free(&ba), tj_ids_free(&bb);
    if (rc != 0) {
        tj_ids_free(&out), tj_ids_free(&out_types);
        return -1;
    }
    *ids = out.id;
    if (types)
        *types = out_types.id;
    else
        free(out_types.id);
    return (int)out.n;
}

int tokenizer_json_encode(const tokenizer_json *t, const char *text, size_t len, int max_len,
                          unsigned flags, int32_t **ids, vit_error *err) {
    return encode_full(t, text, len, NULL, 0, max_len, flags, ids, NULL, err);
}

int tokenizer_json_encode_pair(const tokenizer_json *t, const char *a, size_t alen, const char *b,
                               size_t blen, int max_len, unsigned flags, int32_t **ids,
                               int32_t **type_ids, vit_error *err) {
    if (!t->post.pair && t->post.single && !(flags & TJ_NO_SPECIAL))
        return vit_fail(err, "%s: its post_processor has no template for pairs", t->name);
    return encode_full(t, a, alen, b ? b : "", blen, max_len, flags, ids, type_ids, err);
}

/* ---- decoding ---- */

/* The token of id: an added token's (decoded: its normalized form where it has one), else the
 * model's. */
static const char *id_token(const tokenizer_json *t, int32_t id, bool decoded) {
    for (size_t i = 0; i < t->ntok; i++)
        if (t->tok[i].id == id) return decoded ? t->tok[i].decoded : t->tok[i].content;
    return tj_model_token(t->model, id);
}

static int decode_text(const tokenizer_json *t, const int32_t *ids, int n, bool skip,
                       tj_strs *tokens, vit_error *err) {
    for (int i = 0; i < n; i++) {
        const char *s = id_token(t, ids[i], true);
        if (!s) return vit_fail(err, "%s: no token has id %d", t->name, (int)ids[i]);
        if (skip && tj_map_get(&t->special, s, strlen(s)) >= 0) continue;
        tj_strs_add(tokens, s, strlen(s));
    }
    tj_decode_chain(t->decoder, tokens);
    return tokens->failed ? vit_fail(err, "%s: out of memory", t->name) : 0;
}

static int decode(const tokenizer_json *t, const int32_t *ids, int n, bool skip, bool clean_up,
                  char *out, size_t size, vit_error *err) {
    tj_strs tokens = {0};
    text_buf b = {0};
    int rc = decode_text(t, ids, n, skip, &tokens, err);
    for (size_t i = 0; rc == 0 && i < tokens.n; i++)
        text_buf_add(&b, tokens.s[i], strlen(tokens.s[i]));
    if (rc == 0 && b.failed) rc = vit_fail(err, "%s: out of memory", t->name);
    size_t len = b.len;
    if (rc == 0 && clean_up && len) len = clean_up_tokenization(b.s, len);
    if (rc == 0) rc = text_copy_out(b.s ? b.s : "", len, out, size, err);
    tj_strs_free(&tokens);
    text_buf_free(&b);
    return rc;
}

int tokenizer_json_decode(const tokenizer_json *t, const int32_t *ids, int n,
                          bool skip_special_tokens, char *out, size_t size, vit_error *err) {
    return decode(t, ids, n, skip_special_tokens, false, out, size, err);
}

int tokenizer_json_tokens_to_string(const tokenizer_json *t, const char *const *tokens, int n,
                                    char *out, size_t size, vit_error *err) {
    tj_strs list = {0};
    text_buf b = {0};
    for (int i = 0; i < n; i++) tj_strs_add(&list, tokens[i], strlen(tokens[i]));
    tj_decode_chain(t->decoder, &list);
    for (size_t i = 0; i < list.n; i++) text_buf_add(&b, list.s[i], strlen(list.s[i]));
    int rc = list.failed || b.failed ? vit_fail(err, "%s: out of memory", t->name) : 0;
    if (rc == 0) rc = text_copy_out(b.s ? b.s : "", b.len, out, size, err);
    tj_strs_free(&list);
    text_buf_free(&b);
    return rc;
}

const char *tokenizer_json_subword_prefix(const tokenizer_json *t) {
    return tj_model_prefix(t->model);
}

int32_t tokenizer_json_unk_id(const tokenizer_json *t) {
    return tj_model_unk(t->model);
}

/* ---- offsets (BERT's path: a per-character normalizer, BertPreTokenizer, WordPiece) ---- */

/* Tokens with the byte offsets of what they stand for in the original text. */
typedef struct {
    tj_ids ids, start, end;
} spans;

static void span_add(spans *s, int32_t id, size_t start, size_t end) {
    tj_ids_add(&s->ids, id);
    tj_ids_add(&s->start, (int32_t)start), tj_ids_add(&s->end, (int32_t)end);
}

static void spans_free(spans *s) {
    tj_ids_free(&s->ids), tj_ids_free(&s->start), tj_ids_free(&s->end);
}

static bool spans_failed(const spans *s) {
    return s->ids.failed || s->start.failed || s->end.failed;
}

/* Where the normalized text's characters come from: origin[k] the original character of
 * normalized character k, byte[i] where original character i begins (byte[count] the end). */
typedef struct {
    const int32_t *origin;
    const size_t *byte;
} align;

static size_t byte_start(align a, size_t k) {
    return a.byte[a.origin[k]];
}

static size_t byte_end(align a, size_t k) {
    return a.byte[a.origin[k] + 1];
}

static size_t cp_count(const char *s, size_t n) {
    size_t k = 0;
    for (size_t i = 0; i < n; i++) k += ((uint8_t)s[i] & 0xC0) != 0x80;
    return k;
}

/* The piece norm[at .. at + n) through WordPiece: each token covers its characters (those of its
 * string after the prefix), a lone token (the unk token too) the whole piece. */
static int piece_offsets(const tokenizer_json *t, const int32_t *norm, size_t at, size_t n, align a,
                         spans *out, vit_error *err) {
    size_t len;
    char *u = tj_utf8(norm + at, n, &len);
    if (!u) return vit_fail(err, "%s: out of memory", t->name);
    tj_ids ids = {0};
    int rc = tj_model_tokenize(t->model, u, len, &ids, t->name, err);
    free(u);
    const size_t lp = strlen(tj_model_prefix(t->model));
    size_t pos = 0;
    for (size_t k = 0; rc == 0 && k < ids.n; k++) {
        const char *tok = tj_model_token(t->model, ids.id[k]);
        const size_t skip = k > 0 ? lp : 0;
        const size_t m = ids.n == 1 ? n : tok ? cp_count(tok + skip, strlen(tok) - skip) : 0;
        if (m == 0 || pos + m > n) {
            rc = vit_fail(err, "%s: a token (id %d) does not lie over its piece", t->name,
                          (int)ids.id[k]);
            break;
        }
        span_add(out, ids.id[k], byte_start(a, at + pos), byte_end(a, at + pos + m - 1));
        pos += m;
    }
    if (rc == 0 && pos != n) rc = vit_fail(err, "%s: a piece's tokens do not cover it", t->name);
    tj_ids_free(&ids);
    return rc;
}

/* norm[s..e) between normalized added tokens: BertPreTokenizer's pieces, found in it in order
 * (only white space lies between them), each through the model. */
static int bert_stretch_offsets(const tokenizer_json *t, work *w, const int32_t *norm, size_t s,
                                size_t e, bool first, align a, spans *out, vit_error *err) {
    tj_pieces_reset(&w->in);
    tj_pieces_add(&w->in, norm + s, e - s, first);
    tj_pretokenize(t->pre, &w->in, &w->pieces, &w->tmp);
    if (w->pieces.failed) return vit_fail(err, "%s: out of memory", t->name);
    size_t at = s;
    for (size_t i = 0; i < w->pieces.count; i++) {
        const tj_span p = w->pieces.span[i];
        const size_t n = p.end - p.start;
        while (at < e && tj_is_whitespace(norm[at])) at++;
        if (at + n > e || memcmp(norm + at, w->pieces.text.c + p.start, n * sizeof *norm) != 0)
            return vit_fail(err, "%s: a pre-tokenized piece is not where its text is", t->name);
        if (piece_offsets(t, norm, at, n, a, out, err) != 0) return -1;
        at += n;
    }
    return 0;
}

/* How many of tok's first (or last) characters are spaces (GPT-2's symbol for one, or white
 * space), which trim_offsets leaves out of its offsets. */
static size_t spaces_at(const char *tok, bool last) {
    tj_text c = {0};
    tj_text_add_utf8(&c, tok, strlen(tok));
    size_t k = 0;
    while (k < c.n) {
        const int32_t ch = c.c[last ? c.n - 1 - k : k];
        if (ch != tj_byte_char(' ') && !tj_is_whitespace(ch)) break;
        k++;
    }
    tj_text_free(&c);
    return k;
}

/* A byte-level token's offsets: its bytes' characters, trimmed of its spaces when asked. */
static void byte_token(const tokenizer_json *t, const char *tok, size_t start, size_t end,
                       spans *out, int32_t id) {
    if (t->post.trim_offsets) {
        size_t lead = spaces_at(tok, false);
        const size_t trail = spaces_at(tok, true);
        /* the library keeps the one space add_prefix_space may have put before the first token
         * (the first of the text, or one starting at its beginning) */
        if (lead == 1 && t->post.prefix_space_kept && (out->ids.n == 0 || start == 0)) lead = 0;
        start = start + lead < end ? start + lead : end;
        if (end >= trail) end = end - trail > start ? end - trail : start;
    }
    span_add(out, id, start, end);
}

/* The piece of bytes [at, at + n) of a stretch (owner[b] the normalized character byte b is
 * of) through byte-level BPE: each token covers as many bytes as it has symbols. */
static int byte_piece_offsets(const tokenizer_json *t, const tj_pieces *pc, tj_span p,
                              const int32_t *owner, size_t at, align a, spans *out,
                              vit_error *err) {
    const size_t n = p.end - p.start;
    size_t len;
    char *u = tj_utf8(pc->text.c + p.start, n, &len);
    if (!u) return vit_fail(err, "%s: out of memory", t->name);
    tj_ids ids = {0};
    int rc = tj_model_tokenize(t->model, u, len, &ids, t->name, err);
    free(u);
    size_t pos = 0;
    for (size_t k = 0; rc == 0 && k < ids.n; k++) {
        const char *tok = tj_model_token(t->model, ids.id[k]);
        const size_t m = tok ? cp_count(tok, strlen(tok)) : 0;
        if (m == 0 || pos + m > n) {
            rc = vit_fail(err, "%s: a token (id %d) does not lie over its piece", t->name,
                          (int)ids.id[k]);
            break;
        }
        byte_token(t, tok, byte_start(a, (size_t)owner[at + pos]),
                   byte_end(a, (size_t)owner[at + pos + m - 1]), out, ids.id[k]);
        pos += m;
    }
    if (rc == 0 && pos != n) rc = vit_fail(err, "%s: a piece's tokens do not cover it", t->name);
    tj_ids_free(&ids);
    return rc;
}

/* norm[s..e) through ByteLevel: its pieces are its bytes in order, after the space
 * add_prefix_space puts in front of a stretch not starting with one (standing for the stretch's
 * first character, as the library aligns what it prepends). */
static int byte_stretch_offsets(const tokenizer_json *t, work *w, const int32_t *norm, size_t s,
                                size_t e, bool first, align a, spans *out, vit_error *err) {
    tj_pieces_reset(&w->in);
    tj_pieces_add(&w->in, norm + s, e - s, first);
    tj_pretokenize(t->pre, &w->in, &w->pieces, &w->tmp);
    tj_ids owner = {0};
    for (size_t k = s; k < e; k++) {
        uint8_t b[4];
        const size_t nb = utf8_encode(norm[k], b);
        for (size_t i = 0; i < nb; i++) tj_ids_add(&owner, (int32_t)k);
    }
    int rc = w->pieces.failed || owner.failed ? vit_fail(err, "%s: out of memory", t->name) : 0;
    size_t total = 0;
    for (size_t i = 0; i < w->pieces.count; i++)
        total += w->pieces.span[i].end - w->pieces.span[i].start;
    if (rc == 0 && total == owner.n + 1 && s < e) { /* the prefix space */
        tj_ids_add(&owner, 0);
        memmove(owner.id + 1, owner.id, (owner.n - 1) * sizeof *owner.id);
        owner.id[0] = (int32_t)s;
        if (owner.failed) rc = vit_fail(err, "%s: out of memory", t->name);
    }
    size_t at = 0;
    for (size_t i = 0; rc == 0 && i < w->pieces.count; i++) {
        const tj_span p = w->pieces.span[i];
        if (at + (p.end - p.start) > owner.n)
            rc = vit_fail(err, "%s: a pre-tokenized piece is not where its text is", t->name);
        else
            rc = byte_piece_offsets(t, &w->pieces, p, owner.id, at, a, out, err);
        at += p.end - p.start;
    }
    if (rc == 0 && at != owner.n)
        rc = vit_fail(err, "%s: the pre-tokenized pieces do not cover the text", t->name);
    tj_ids_free(&owner);
    return rc;
}

/* One Metaspace piece (its characters those of owner[at ..], normalized characters) through the
 * model: each token covers the characters it ends at (Unigram says where; a BPE token as many
 * as its string has). */
static int meta_piece_offsets(const tokenizer_json *t, const tj_pieces *pc, tj_span p,
                              const int32_t *owner, size_t at, align a, spans *out,
                              vit_error *err) {
    const size_t n = p.end - p.start;
    size_t len;
    char *u = tj_utf8(pc->text.c + p.start, n, &len);
    if (!u) return vit_fail(err, "%s: out of memory", t->name);
    tj_ids ids = {0}, ends = {0};
    const bool unigram = strcmp(tj_model_name(t->model), "Unigram") == 0;
    int rc = unigram ? tj_model_tokenize_unigram(t->model, u, len, &ids, &ends, t->name, err)
                     : tj_model_tokenize(t->model, u, len, &ids, t->name, err);
    size_t pos = 0, bytes = 0; /* characters and bytes of the piece covered so far */
    for (size_t k = 0; rc == 0 && k < ids.n; k++) {
        const char *tok = tj_model_token(t->model, ids.id[k]);
        const size_t end = unigram ? (size_t)ends.id[k] : bytes + (tok ? strlen(tok) : 0);
        const size_t m = end > bytes && end <= len ? cp_count(u + bytes, end - bytes) : 0;
        if (m == 0 || pos + m > n || (!unigram && (!tok || memcmp(tok, u + bytes, end - bytes)))) {
            /* a byte-fallback token ends inside a character: the library's offsets then too */
            rc = vit_fail(err, "%s: a token (id %d) does not lie over its piece", t->name,
                          (int)ids.id[k]);
            break;
        }
        span_add(out, ids.id[k], byte_start(a, (size_t)owner[at + pos]),
                 byte_end(a, (size_t)owner[at + pos + m - 1]));
        pos += m, bytes = end;
    }
    if (rc == 0 && pos != n) rc = vit_fail(err, "%s: a piece's tokens do not cover it", t->name);
    free(u);
    tj_ids_free(&ids), tj_ids_free(&ends);
    return rc;
}

/* norm[s..e) through Metaspace: its pieces are its characters in order (spaces the
 * replacement), after the one it prepends, which stands for the stretch's first character. */
static int meta_stretch_offsets(const tokenizer_json *t, work *w, const int32_t *norm, size_t s,
                                size_t e, bool first, align a, spans *out, vit_error *err) {
    tj_pieces_reset(&w->in);
    tj_pieces_add(&w->in, norm + s, e - s, first);
    tj_pretokenize(t->pre, &w->in, &w->pieces, &w->tmp);
    size_t total = 0;
    for (size_t i = 0; i < w->pieces.count; i++)
        total += w->pieces.span[i].end - w->pieces.span[i].start;
    tj_ids owner = {0};
    if (total == e - s + 1 && s < e) tj_ids_add(&owner, (int32_t)s);
    for (size_t k = s; k < e; k++) tj_ids_add(&owner, (int32_t)k);
    int rc = w->pieces.failed || owner.failed ? vit_fail(err, "%s: out of memory", t->name) : 0;
    if (rc == 0 && total != owner.n)
        rc = vit_fail(err, "%s: the pre-tokenized pieces do not cover the text", t->name);
    for (size_t i = 0, at = 0; rc == 0 && i < w->pieces.count; i++) {
        const tj_span p = w->pieces.span[i];
        rc = meta_piece_offsets(t, &w->pieces, p, owner.id, at, a, out, err);
        at += p.end - p.start;
    }
    tj_ids_free(&owner);
    return rc;
}

/* norm[s..e) between normalized added tokens, by the pre-tokenizer's path. */
static int stretch_offsets(const tokenizer_json *t, work *w, const int32_t *norm, size_t s,
                           size_t e, bool first, align a, spans *out, vit_error *err) {
    if (tj_pretokenizer_is_bert(t->pre))
        return bert_stretch_offsets(t, w, norm, s, e, first, a, out, err);
    if (tj_pretokenizer_is_metaspace(t->pre))
        return meta_stretch_offsets(t, w, norm, s, e, first, a, out, err);
    return byte_stretch_offsets(t, w, norm, s, e, first, a, out, err);
}

/* c[s..e), a stretch between raw added tokens: normalized a character at a time (so each
 * normalized character's origin is known), cut at the normalized added tokens, the rest
 * pre-tokenized. */
static int raw_offsets(const tokenizer_json *t, work *w, const int32_t *c, size_t s, size_t e,
                       const size_t *byte, spans *out, vit_error *err) {
    tj_text norm = {0};
    tj_ids origin = {0};
    if (tj_normalizer_per_char(t->normalizer)) {
        for (size_t i = s; i < e; i++) {
            tj_normalize(t->normalizer, c + i, 1, &w->norm);
            tj_text_add(&norm, tj_cps(&w->norm), w->norm.n);
            for (size_t k = 0; k < w->norm.n; k++) tj_ids_add(&origin, (int32_t)i);
        }
    } else { /* the whole stretch, each character's origin followed through the normalizers */
        tj_ids from = {0};
        for (size_t i = s; i < e; i++) tj_ids_add(&from, (int32_t)i);
        tj_normalize_aligned(t->normalizer, c + s, from.id, e - s, &norm, &origin);
        if (from.failed) norm.failed = true;
        tj_ids_free(&from);
    }
    w->normed.n = 0;
    find_matches(t, t->normed, tj_cps(&norm), norm.n, &w->normed);
    int rc = 0;
    if (norm.failed || origin.failed || w->norm.failed || w->normed.failed)
        rc = vit_fail(err, "%s: out of memory", t->name);
    const align a = {origin.id, byte};
    for (size_t i = 0; rc == 0 && i < w->normed.n; i++) {
        const part p = w->normed.v[i];
        if (p.tok >= 0)
            span_add(out, t->tok[p.tok].id, byte_start(a, p.start), byte_end(a, p.end - 1));
        else
            rc = stretch_offsets(t, w, tj_cps(&norm), p.start, p.end, s == 0 && p.start == 0, a,
                                 out, err);
    }
    tj_text_free(&norm), tj_ids_free(&origin);
    return rc;
}

static bool offsets_followed(const tokenizer_json *t) {
    const char *model = tj_model_name(t->model);
    if (tj_pretokenizer_is_metaspace(t->pre))
        return tj_normalizer_alignable(t->normalizer) && strcmp(model, "WordPiece") != 0;
    if (!tj_normalizer_per_char(t->normalizer)) return false;
    if (tj_pretokenizer_is_bert(t->pre)) return strcmp(model, "WordPiece") == 0;
    return tj_pretokenizer_is_byte_level(t->pre) && strcmp(model, "BPE") == 0;
}

/* text (valid UTF-8) as code points in *cps, where each begins in byte (room for len + 1). */
static int decode_offsets(const tokenizer_json *t, const char *text, size_t len, tj_text *cps,
                          size_t *byte, vit_error *err) {
    for (size_t i = 0; i < len;) {
        byte[cps->n] = i;
        const int32_t c = utf8_decode((const uint8_t *)text, len, &i);
        if (c < 0)
            return vit_fail(err, "%s: offsets need valid UTF-8 (byte %zu is not)", t->name,
                            byte[cps->n]);
        tj_text_add1(cps, c);
    }
    byte[cps->n] = len;
    return cps->failed ? vit_fail(err, "%s: out of memory", t->name) : 0;
}

/* The text's tokens before the post-processor, with their offsets. */
static int body_offsets(const tokenizer_json *t, const char *text, size_t len, spans *out,
                        vit_error *err) {
    if (!offsets_followed(t))
        return vit_fail(err,
                        "%s: offsets are computed for BERT's tokenizer.json (BertNormalizer, "
                        "BertPreTokenizer, WordPiece), RoBERTa's (ByteLevel, BPE) and XLM-R's "
                        "(Metaspace, Unigram or BPE, normalizers but the Unicode forms) only, "
                        "not for this one",
                        t->name);
    if (len >= INT32_MAX) return vit_fail(err, "%s: a text too long for offsets", t->name);
    tj_text cps = {0};
    size_t *byte = malloc((len + 1) * sizeof *byte);
    work w = {0};
    int rc = byte ? decode_offsets(t, text, len, &cps, byte, err)
                  : vit_fail(err, "%s: out of memory", t->name);
    if (rc == 0) find_matches(t, t->raw, tj_cps(&cps), cps.n, &w.raw);
    if (rc == 0 && w.raw.failed) rc = vit_fail(err, "%s: out of memory", t->name);
    for (size_t i = 0; rc == 0 && i < w.raw.n; i++) {
        const part p = w.raw.v[i];
        if (p.tok >= 0)
            span_add(out, t->tok[p.tok].id, byte[p.start], byte[p.end]);
        else
            rc = raw_offsets(t, &w, tj_cps(&cps), p.start, p.end, byte, out, err);
    }
    if (rc == 0 && spans_failed(out)) rc = vit_fail(err, "%s: out of memory", t->name);
    work_free(&w);
    tj_text_free(&cps);
    free(byte);
    return rc;
}

/* The single template around the first n of the body's tokens; its own tokens at (0, 0). */
static void template_offsets(const tokenizer_json *t, const spans *b, size_t n, spans *out) {
    const bool none = !t->post.single;
    for (size_t i = 0; i < (none ? 1 : t->post.nsingle); i++) {
        const tj_template_item *it = none ? NULL : &t->post.single[i];
        if (!it || it->sequence) {
            for (size_t k = 0; k < n; k++)
                span_add(out, b->ids.id[k], (size_t)b->start.id[k], (size_t)b->end.id[k]);
        } else {
            for (size_t k = 0; k < it->n; k++) span_add(out, it->ids[k], 0, 0);
        }
    }
}

int tokenizer_json_encode_offsets(const tokenizer_json *t, const char *text, size_t len,
                                  int max_len, int32_t **ids, int32_t **starts, int32_t **ends,
                                  vit_error *err) {
    *ids = *starts = *ends = NULL;
    spans body = {0}, out = {0};
    tj_ids plain = {0};
    kept ka, kb;
    int rc = body_offsets(t, text, len, &body, err);
    /* the offsets' walk must have found the encoding's own tokens */
    if (rc == 0) rc = encode_text(t, text, len, &plain, err);
    if (rc == 0 && (plain.n != body.ids.n ||
                    (plain.n && memcmp(plain.id, body.ids.id, plain.n * sizeof *plain.id) != 0)))
        rc = vit_fail(err, "%s: the offsets' tokens are not the encoding's", t->name);
    if (rc == 0) rc = truncate_bodies(t, &body.ids, NULL, max_len, 0, &ka, &kb, err);
    if (rc == 0) {
        template_offsets(t, &body, ka.n, &out);
        span_add(&out, 0, 0, 0); /* room, so that none is NULL */
        out.ids.n--, out.start.n--, out.end.n--;
        if (spans_failed(&out) || out.ids.n > INT_MAX)
            rc = vit_fail(err, "%s: out of memory", t->name);
    }
    spans_free(&body), tj_ids_free(&plain);
    if (rc != 0) {
        spans_free(&out);
        return -1;
    }
    *ids = out.ids.id, *starts = out.start.id, *ends = out.end.id;
    return (int)out.ids.n;
}

/* ---- behind text/text_tokenizer.h ---- */

static void ops_free(void *impl) {
    tokenizer_json_free(impl);
}

static const char *ops_piece(const void *impl, int id) {
    return id_token(impl, id, false);
}

static int ops_encode(const void *impl, void *scratch, const char *text, size_t len, int max_len,
                      int32_t *ids, vit_error *err) {
    (void)scratch;
    int32_t *v;
    const int n = tokenizer_json_encode(impl, text, len, max_len, 0, &v, err);
    if (n < 0) return -1;
    memcpy(ids, v, (size_t)n * sizeof *ids);
    free(v);
    return n;
}

static int ops_encode_pair(const void *impl, void *scratch, const char *a, size_t alen,
                           const char *b, size_t blen, int max_len, int32_t *ids, int32_t *type_ids,
                           vit_error *err) {
    (void)scratch;
    int32_t *v, *types;
    const int n = tokenizer_json_encode_pair(impl, a, alen, b, blen, max_len, 0, &v, &types, err);
    if (n < 0) return -1;
    memcpy(ids, v, (size_t)n * sizeof *ids);
    if (type_ids) memcpy(type_ids, types, (size_t)n * sizeof *type_ids);
    free(v), free(types);
    return n;
}

static int ops_encode_offsets(const void *impl, const char *text, size_t len, int max_len,
                              int32_t *ids, int32_t *starts, int32_t *ends, vit_error *err) {
    int32_t *v, *s, *e;
    const int n = tokenizer_json_encode_offsets(impl, text, len, max_len, &v, &s, &e, err);
    if (n < 0) return -1;
    memcpy(ids, v, (size_t)n * sizeof *ids);
    memcpy(starts, s, (size_t)n * sizeof *starts);
    memcpy(ends, e, (size_t)n * sizeof *ends);
    free(v), free(s), free(e);
    return n;
}

static int ops_decode(const void *impl, const int32_t *ids, int n, bool skip_special_tokens,
                      char *out, size_t size, vit_error *err) {
    const tokenizer_json *t = impl;
    return decode(t, ids, n, skip_special_tokens, t->clean_up, out, size, err);
}

static int ops_load(const char *dir, void **impl, text_tokenizer_info *info, vit_error *err) {
    tokenizer_json *t;
    if (tokenizer_json_load(dir, &t, err) != 0) return -1;
    *impl = t;
    *info = t->info;
    return 0;
}

const text_tokenizer_ops tokenizer_json_ops = {.load = ops_load,
                                               .free = ops_free,
                                               .piece = ops_piece,
                                               .encode = ops_encode,
                                               .decode = ops_decode,
                                               .encode_pair = ops_encode_pair,
                                               .encode_offsets = ops_encode_offsets};
