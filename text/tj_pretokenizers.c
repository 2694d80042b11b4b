/* tokenizer.json's pre-tokenizers and the patterns Split and Replace hold (see text/tj.h), as
 * the tokenizers library's pre_tokenizers/ and NormalizedString::split apply them:
 * BertPreTokenizer, ByteLevel, Whitespace, WhitespaceSplit, Metaspace, Split, Punctuation,
 * Digits and Sequence. */
#include <stdlib.h>
#include <string.h>

#include "text/bpe.h"
#include "text/tj.h"

/* ---- patterns ---- */

/* The regular expressions real files hold, each with a matcher of its own: GPT-2's (ByteLevel's
 * and many a Split's), CLIP's (CLIPTokenizerFast's Split), runs of two spaces or more (Replace,
 * T5/XLM-R exports), runs of white space (CLIP's Replace), and Whitespace's words. */
static const struct {
    const char *regex;
    tj_pat_kind kind;
} regexes[] = {
    {"'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+",
     TJ_PAT_GPT2},
    {"'s|'t|'re|'ve|'m|'ll|'d|[\\p{L}]+|[\\p{N}]|[^\\s\\p{L}\\p{N}]+", TJ_PAT_CLIP},
    {" {2,}", TJ_PAT_SPACES2},
    {"\\s+", TJ_PAT_WS_RUN},
    {"\\w+|[^\\w\\s]+", TJ_PAT_WORDS},
};

int tj_pattern_read(tj_pattern *p, const cJSON *obj, const char *what, const char *src,
                    vit_error *err) {
    memset(p, 0, sizeof *p);
    const cJSON *s = cJSON_IsObject(obj) ? cJSON_GetObjectItemCaseSensitive(obj, "String") : NULL;
    const cJSON *r = cJSON_IsObject(obj) ? cJSON_GetObjectItemCaseSensitive(obj, "Regex") : NULL;
    if (cJSON_IsString(s)) {
        tj_text t = {0};
        tj_text_add_utf8(&t, s->valuestring, strlen(s->valuestring));
        if (t.failed) return vit_fail(err, "%s: out of memory", src);
        p->kind = TJ_PAT_STRING, p->lit = t.c, p->nlit = t.n;
        return 0;
    }
    if (!cJSON_IsString(r))
        return vit_fail(err, "%s: %s's pattern must be {\"String\": ...} or {\"Regex\": ...}", src,
                        what);
    for (size_t k = 0; k < sizeof regexes / sizeof *regexes; k++)
        if (strcmp(regexes[k].regex, r->valuestring) == 0) {
            p->kind = regexes[k].kind;
            return 0;
        }
    return vit_fail(err, "%s: %s's regex \"%.80s\" is not one vit follows", src, what,
                    r->valuestring);
}

void tj_pattern_free(tj_pattern *p) {
    free(p->lit);
    memset(p, 0, sizeof *p);
}

static size_t run(const int32_t *c, size_t n, size_t i, bool (*pred)(int32_t)) {
    while (i < n && pred(c[i])) i++;
    return i;
}

static bool not_word_or_space(int32_t c) {
    return !tj_is_alnum(c) && !tj_is_whitespace(c);
}

static bool other(int32_t c) {
    return !tj_is_letter(c) && !tj_is_number(c) && !tj_is_whitespace(c);
}

/* CLIP's 's|'t|'re|'ve|'m|'ll|'d|[\p{L}]+|[\p{N}]|[^\s\p{L}\p{N}]+ at c[i]: the length of the
 * first alternative that matches, 0 for none (white space). */
static size_t clip_at(const int32_t *c, size_t n, size_t i) {
    static const char *const tails[] = {"s", "t", "re", "ve", "m", "ll", "d"};
    if (c[i] == '\'')
        for (int k = 0; k < 7; k++) {
            const size_t len = strlen(tails[k]);
            size_t j = 0;
            while (j < len && i + 1 + j < n && c[i + 1 + j] == tails[k][j]) j++;
            if (j == len) return len + 1;
        }
    if (tj_is_letter(c[i])) return run(c, n, i, tj_is_letter) - i;
    if (tj_is_number(c[i])) return 1;
    return other(c[i]) ? run(c, n, i, other) - i : 0;
}

bool tj_pattern_find(const tj_pattern *p, const int32_t *c, size_t n, size_t from, size_t *ms,
                     size_t *me) {
    for (size_t i = from; i < n; i++) {
        switch (p->kind) {
        case TJ_PAT_STRING:
            if (p->nlit && n - i >= p->nlit && memcmp(c + i, p->lit, p->nlit * sizeof *c) == 0) {
                *ms = i, *me = i + p->nlit;
                return true;
            }
            break;
        case TJ_PAT_GPT2:
            *ms = i, *me = i + bpe_gpt2_piece(c, n, i);
            return true;
        case TJ_PAT_CLIP:
            if (clip_at(c, n, i)) {
                *ms = i, *me = i + clip_at(c, n, i);
                return true;
            }
            break;
        case TJ_PAT_SPACES2:
            if (c[i] == ' ' && i + 1 < n && c[i + 1] == ' ') {
                *me = i;
                while (*me < n && c[*me] == ' ') (*me)++;
                *ms = i;
                return true;
            }
            break;
        case TJ_PAT_WS_RUN:
            if (tj_is_whitespace(c[i])) {
                *ms = i, *me = run(c, n, i, tj_is_whitespace);
                return true;
            }
            break;
        case TJ_PAT_WORDS:
            if (tj_is_alnum(c[i])) {
                *ms = i, *me = run(c, n, i, tj_is_alnum);
                return true;
            }
            if (!tj_is_whitespace(c[i])) {
                *ms = i, *me = run(c, n, i, not_word_or_space);
                return true;
            }
            break;
        }
    }
    return false;
}

/* ---- splitting a piece: matches, then a behaviour (SplitDelimiterBehavior) ---- */

typedef enum { B_REMOVED, B_ISOLATED, B_MERGED_PREV, B_MERGED_NEXT, B_CONTIGUOUS } behavior;

typedef struct {
    size_t s, e;
    bool m;
} event;

typedef struct {
    event *v;
    size_t n, cap;
    bool failed;
} events;

static void event_add(events *ev, size_t s, size_t e, bool m) {
    if (ev->failed) return;
    if (ev->n == ev->cap) {
        const size_t cap = ev->cap ? 2 * ev->cap : 32;
        event *v = realloc(ev->v, cap * sizeof *v);
        if (!v) {
            ev->failed = true;
            return;
        }
        ev->v = v, ev->cap = cap;
    }
    ev->v[ev->n++] = (event){s, e, m};
}

/* Each character pred holds for is a match of its own (the library's Pattern for a char fn). */
static void char_matches(const int32_t *c, size_t n, bool (*pred)(int32_t, int32_t), int32_t arg,
                         events *ev) {
    size_t last = 0;
    for (size_t i = 0; i < n; i++)
        if (pred(c[i], arg)) {
            if (last < i) event_add(ev, last, i, false);
            event_add(ev, i, i + 1, true);
            last = i + 1;
        }
    if (last < n) event_add(ev, last, n, false);
}

static void pattern_matches(const tj_pattern *p, const int32_t *c, size_t n, events *ev) {
    size_t prev = 0, ms, me;
    while (tj_pattern_find(p, c, n, prev, &ms, &me) && me > ms) {
        if (prev != ms) event_add(ev, prev, ms, false);
        event_add(ev, ms, me, true);
        prev = me;
    }
    if (prev != n) event_add(ev, prev, n, false);
}

/* The events merged as the behaviour says; returns how many are left (Removed drops the
 * matches). */
static size_t behave(event *v, size_t n, behavior b) {
    size_t k = 0;
    bool prev = false;
    if (b == B_MERGED_NEXT) { /* the library folds from the end */
        size_t top = n;       /* v[top..n) holds the result, reversed order kept by writing back */
        for (size_t i = n; i-- > 0;) {
            const event e = v[i];
            if (e.m && !prev && top < n)
                v[top].s = e.s;
            else
                v[--top] = e;
            prev = e.m;
        }
        memmove(v, v + top, (n - top) * sizeof *v);
        return n - top;
    }
    for (size_t i = 0; i < n; i++) {
        const event e = v[i];
        if (b == B_REMOVED) {
            if (!e.m) v[k++] = e;
        } else if (b == B_ISOLATED) {
            v[k++] = e;
        } else if (b == B_CONTIGUOUS) {
            if (k && e.m == prev)
                v[k - 1].e = e.e;
            else
                v[k++] = e;
        } else if (e.m && !prev && k) { /* merged with previous */
            v[k - 1].e = e.e;
        } else {
            v[k++] = e;
        }
        prev = e.m;
    }
    return k;
}

static void emit(events *ev, bool invert, behavior b, const int32_t *c, bool first,
                 tj_pieces *out) {
    if (ev->failed) {
        out->failed = true;
        return;
    }
    for (size_t i = 0; invert && i < ev->n; i++) ev->v[i].m = !ev->v[i].m;
    const size_t k = behave(ev->v, ev->n, b);
    for (size_t i = 0; i < k; i++)
        tj_pieces_add(out, c + ev->v[i].s, ev->v[i].e - ev->v[i].s, first && ev->v[i].s == 0);
    ev->n = 0;
}

/* ---- the pre-tokenizers ---- */

typedef enum {
    P_BERT,
    P_BYTE_LEVEL,
    P_WHITESPACE,
    P_WHITESPACE_SPLIT,
    P_METASPACE,
    P_SPLIT,
    P_PUNCTUATION,
    P_DIGITS,
    P_SEQUENCE
} pretokenizer_kind;

typedef enum { PREPEND_ALWAYS, PREPEND_FIRST, PREPEND_NEVER } prepend_scheme;

struct tj_pretokenizer {
    pretokenizer_kind kind;
    bool add_prefix_space, use_regex; /* ByteLevel */
    int32_t replacement;              /* Metaspace */
    prepend_scheme prepend;           /* Metaspace */
    bool split;                       /* Metaspace */
    tj_pattern pattern;               /* Split */
    behavior behavior;                /* Split, Punctuation */
    bool invert;                      /* Split */
    bool individual;                  /* Digits */
    tj_pretokenizer **seq;
    size_t nseq;
};

static const struct {
    const char *name;
    pretokenizer_kind kind;
} kinds[] = {{"BertPreTokenizer", P_BERT},   {"ByteLevel", P_BYTE_LEVEL},
             {"Whitespace", P_WHITESPACE},   {"WhitespaceSplit", P_WHITESPACE_SPLIT},
             {"Metaspace", P_METASPACE},     {"Split", P_SPLIT},
             {"Punctuation", P_PUNCTUATION}, {"Digits", P_DIGITS},
             {"Sequence", P_SEQUENCE}};

static int read_behavior(const cJSON *obj, behavior *b, const char *src, vit_error *err) {
    static const char *const names[] = {"Removed", "Isolated", "MergedWithPrevious",
                                        "MergedWithNext", "Contiguous"};
    const char *name = NULL;
    if (tj_string(obj, "behavior", &name, src, err) != 0) return -1;
    if (!name) return 0;
    for (int k = 0; k < 5; k++)
        if (strcmp(name, names[k]) == 0) {
            *b = (behavior)k;
            return 0;
        }
    return vit_fail(err, "%s: split behavior \"%.40s\" is not one vit follows", src, name);
}

static int read_metaspace(tj_pretokenizer *p, const cJSON *obj, const char *src, vit_error *err) {
    bool add_prefix_space = true; /* the older files' field */
    const char *scheme = NULL;
    p->replacement = 0x2581, p->split = true;
    if (tj_char(obj, "replacement", &p->replacement, src, err) != 0 ||
        tj_bool(obj, "split", &p->split, src, err) != 0 ||
        tj_bool(obj, "add_prefix_space", &add_prefix_space, src, err) != 0 ||
        tj_string(obj, "prepend_scheme", &scheme, src, err) != 0)
        return -1;
    p->prepend = add_prefix_space ? PREPEND_ALWAYS : PREPEND_NEVER;
    if (!scheme) return 0;
    if (strcmp(scheme, "always") == 0)
        p->prepend = PREPEND_ALWAYS;
    else if (strcmp(scheme, "first") == 0)
        p->prepend = PREPEND_FIRST;
    else if (strcmp(scheme, "never") == 0)
        p->prepend = PREPEND_NEVER;
    else
        return vit_fail(err, "%s: Metaspace's prepend_scheme \"%.40s\" is unknown", src, scheme);
    return 0;
}

static int read_sequence(tj_pretokenizer *p, const cJSON *obj, const char *src, vit_error *err) {
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(obj, "pretokenizers");
    if (!cJSON_IsArray(list)) return vit_fail(err, "%s: Sequence needs \"pretokenizers\"", src);
    p->seq = calloc((size_t)cJSON_GetArraySize(list) + 1, sizeof *p->seq);
    if (!p->seq) return vit_fail(err, "%s: out of memory", src);
    const cJSON *item;
    cJSON_ArrayForEach(item, list) {
        if (tj_pretokenizer_read(item, &p->seq[p->nseq], src, err) != 0) return -1;
        if (p->seq[p->nseq]) p->nseq++;
    }
    return 0;
}

static int read_fields(tj_pretokenizer *p, const cJSON *obj, const char *src, vit_error *err) {
    switch (p->kind) {
    case P_BYTE_LEVEL:
        p->add_prefix_space = p->use_regex = true;
        return tj_bool(obj, "add_prefix_space", &p->add_prefix_space, src, err) != 0 ||
                       tj_bool(obj, "use_regex", &p->use_regex, src, err) != 0
                   ? -1
                   : 0;
    case P_METASPACE:
        return read_metaspace(p, obj, src, err);
    case P_SPLIT:
        p->behavior = B_ISOLATED;
        if (tj_pattern_read(&p->pattern, cJSON_GetObjectItemCaseSensitive(obj, "pattern"), "Split",
                            src, err) != 0)
            return -1;
        return read_behavior(obj, &p->behavior, src, err) != 0 ||
                       tj_bool(obj, "invert", &p->invert, src, err) != 0
                   ? -1
                   : 0;
    case P_PUNCTUATION:
        p->behavior = B_ISOLATED;
        return read_behavior(obj, &p->behavior, src, err);
    case P_DIGITS:
        return tj_bool(obj, "individual_digits", &p->individual, src, err);
    case P_SEQUENCE:
        return read_sequence(p, obj, src, err);
    default:
        return 0;
    }
}

int tj_pretokenizer_read(const cJSON *obj, tj_pretokenizer **out, const char *src, vit_error *err) {
    *out = NULL;
    if (!obj || cJSON_IsNull(obj)) return 0;
    const char *type = tj_type(obj, "pre_tokenizer", src, err);
    if (!type) return -1;
    size_t k = 0;
    while (k < sizeof kinds / sizeof *kinds && strcmp(kinds[k].name, type) != 0) k++;
    if (k == sizeof kinds / sizeof *kinds)
        return vit_fail(err, "%s: pre_tokenizer %.60s is not one vit follows", src, type);
    tj_pretokenizer *p = calloc(1, sizeof *p);
    if (!p) return vit_fail(err, "%s: out of memory", src);
    p->kind = kinds[k].kind;
    if (read_fields(p, obj, src, err) != 0) {
        tj_pretokenizer_free(p);
        return -1;
    }
    *out = p;
    return 0;
}

void tj_pretokenizer_free(tj_pretokenizer *p) {
    if (!p) return;
    for (size_t i = 0; i < p->nseq; i++) tj_pretokenizer_free(p->seq[i]);
    free(p->seq);
    tj_pattern_free(&p->pattern);
    free(p);
}

static bool is_space(int32_t c, int32_t arg) {
    (void)arg;
    return tj_is_whitespace(c);
}

static bool is_punct(int32_t c, int32_t arg) {
    (void)arg;
    return tj_is_punctuation(c);
}

static bool is_numeric(int32_t c, int32_t arg) {
    (void)arg;
    return tj_is_number(c);
}

static bool is_char(int32_t c, int32_t arg) {
    return c == arg;
}

/* ByteLevel: a space in front, GPT-2's pieces, each piece's UTF-8 bytes as byte symbols. */
static void byte_level(const tj_pretokenizer *p, const int32_t *c, size_t n, bool first,
                       tj_pieces *out, events *ev, tj_text *buf) {
    buf->n = 0;
    if (p->add_prefix_space && (n == 0 || c[0] != ' ')) tj_text_add1(buf, ' ');
    tj_text_add(buf, c, n);
    if (p->use_regex)
        pattern_matches(&(tj_pattern){.kind = TJ_PAT_GPT2}, buf->c, buf->n, ev);
    else
        event_add(ev, 0, buf->n, false);
    if (ev->failed || buf->failed) {
        out->failed = true;
        return;
    }
    tj_text sym = {0};
    for (size_t i = 0; i < ev->n; i++) {
        size_t len;
        char *s = tj_utf8(buf->c + ev->v[i].s, ev->v[i].e - ev->v[i].s, &len);
        if (!s) {
            out->failed = true;
            break;
        }
        sym.n = 0;
        for (size_t k = 0; k < len; k++) tj_text_add1(&sym, tj_byte_char((uint8_t)s[k]));
        free(s);
        if (sym.failed) out->failed = true;
        tj_pieces_add(out, sym.c, sym.n, first && ev->v[i].s == 0);
    }
    tj_text_free(&sym);
    ev->n = 0;
}

static void metaspace(const tj_pretokenizer *p, const int32_t *c, size_t n, bool first,
                      tj_pieces *out, events *ev, tj_text *buf) {
    buf->n = 0;
    const bool starts = n && (c[0] == ' ' || c[0] == p->replacement);
    if (!starts && (p->prepend == PREPEND_ALWAYS || (p->prepend == PREPEND_FIRST && first)))
        tj_text_add1(buf, p->replacement);
    for (size_t i = 0; i < n; i++) tj_text_add1(buf, c[i] == ' ' ? p->replacement : c[i]);
    if (buf->failed) {
        out->failed = true;
        return;
    }
    if (!p->split) {
        tj_pieces_add(out, buf->c, buf->n, first);
        return;
    }
    char_matches(buf->c, buf->n, is_char, p->replacement, ev);
    emit(ev, false, B_MERGED_NEXT, buf->c, first, out);
}

static void bert(const int32_t *c, size_t n, bool first, tj_pieces *out, events *ev) {
    tj_pieces words = {0};
    char_matches(c, n, is_space, 0, ev);
    emit(ev, false, B_REMOVED, c, first, &words);
    for (size_t i = 0; i < words.count; i++) {
        const tj_span s = words.span[i];
        char_matches(words.text.c + s.start, s.end - s.start, is_punct, 0, ev);
        emit(ev, false, B_ISOLATED, words.text.c + s.start, s.first, out);
    }
    if (words.failed) out->failed = true;
    tj_pieces_free(&words);
}

static void pretokenize_piece(const tj_pretokenizer *p, const int32_t *c, size_t n, bool first,
                              tj_pieces *out, events *ev, tj_text *buf) {
    switch (p->kind) {
    case P_BERT:
        bert(c, n, first, out, ev);
        return;
    case P_BYTE_LEVEL:
        byte_level(p, c, n, first, out, ev, buf);
        return;
    case P_WHITESPACE:
        pattern_matches(&(tj_pattern){.kind = TJ_PAT_WORDS}, c, n, ev);
        emit(ev, true, B_REMOVED, c, first, out);
        return;
    case P_WHITESPACE_SPLIT:
        char_matches(c, n, is_space, 0, ev);
        emit(ev, false, B_REMOVED, c, first, out);
        return;
    case P_METASPACE:
        metaspace(p, c, n, first, out, ev, buf);
        return;
    case P_SPLIT:
        pattern_matches(&p->pattern, c, n, ev);
        emit(ev, p->invert, p->behavior, c, first, out);
        return;
    case P_PUNCTUATION:
        char_matches(c, n, is_punct, 0, ev);
        emit(ev, false, p->behavior, c, first, out);
        return;
    case P_DIGITS:
        char_matches(c, n, is_numeric, 0, ev);
        emit(ev, false, p->individual ? B_ISOLATED : B_CONTIGUOUS, c, first, out);
        return;
    case P_SEQUENCE:
        return; /* handled by tj_pretokenize */
    }
}

static void pretokenize_one(const tj_pretokenizer *p, const tj_pieces *in, tj_pieces *out) {
    events ev = {0};
    tj_text buf = {0};
    tj_pieces_reset(out);
    for (size_t i = 0; i < in->count; i++) {
        const tj_span s = in->span[i];
        pretokenize_piece(p, in->text.c + s.start, s.end - s.start, s.first, out, &ev, &buf);
    }
    if (ev.failed || buf.failed || in->failed) out->failed = true;
    free(ev.v);
    tj_text_free(&buf);
}

static void copy_pieces(const tj_pieces *in, tj_pieces *out) {
    tj_pieces_reset(out);
    for (size_t i = 0; i < in->count; i++)
        tj_pieces_add(out, in->text.c + in->span[i].start, in->span[i].end - in->span[i].start,
                      in->span[i].first);
    if (in->failed) out->failed = true;
}

void tj_pretokenize(const tj_pretokenizer *p, const tj_pieces *in, tj_pieces *out, tj_pieces *tmp) {
    if (!p) {
        copy_pieces(in, out);
        return;
    }
    if (p->kind != P_SEQUENCE) {
        pretokenize_one(p, in, out);
        return;
    }
    copy_pieces(in, out);
    for (size_t i = 0; i < p->nseq; i++) {
        tj_pieces scratch = {0};
        tj_pretokenize(p->seq[i], out, tmp, &scratch);
        tj_pieces_free(&scratch);
        const tj_pieces t = *out;
        *out = *tmp, *tmp = t;
    }
}

bool tj_pretokenizer_is_bert(const tj_pretokenizer *p) {
    return p && p->kind == P_BERT;
}

bool tj_pretokenizer_is_metaspace(const tj_pretokenizer *p) {
    return p && p->kind == P_METASPACE;
}

bool tj_pretokenizer_is_byte_level(const tj_pretokenizer *p) {
    return p && p->kind == P_BYTE_LEVEL;
}
