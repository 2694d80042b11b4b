/* tokenizer.json's post-processors and decoders (see text/tj.h), as the tokenizers library's
 * processors/ and decoders/: TemplateProcessing, BertProcessing, RobertaProcessing,
 * ByteLevel (nothing to the ids) and Sequence; the decoders WordPiece, ByteLevel, Metaspace,
 * BPEDecoder, ByteFallback, Fuse, Strip, Replace and Sequence. */
#include <stdlib.h>
#include <string.h>

#include "text/decode.h"
#include "text/tj.h"
#include "text/utf8.h"

/* ---- post-processors ---- */

typedef struct {
    tj_template_item *v;
    size_t n;
} items;

static int add_item(items *t, tj_template_item it, const char *src, vit_error *err) {
    tj_template_item *v = realloc(t->v, (t->n + 1) * sizeof *v);
    if (!v) {
        free(it.ids);
        return vit_fail(err, "%s: out of memory", src);
    }
    t->v = v;
    t->v[t->n++] = it;
    return 0;
}

static int add_special(items *t, const int32_t *ids, size_t n, int32_t type, const char *src,
                       vit_error *err) {
    int32_t *copy = malloc((n + 1) * sizeof *copy);
    if (!copy) return vit_fail(err, "%s: out of memory", src);
    if (n) memcpy(copy, ids, n * sizeof *ids);
    return add_item(t, (tj_template_item){.ids = copy, .n = n, .type_id = type}, src, err);
}

static void free_items(tj_template_item *v, size_t n) {
    for (size_t i = 0; i < n; i++) free(v[i].ids);
    free(v);
}

/* A ["token", id] pair of Bert/RobertaProcessing. */
static int token_pair(const cJSON *obj, const char *key, int32_t *id, const char *src,
                      vit_error *err) {
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(obj, key), *v = cJSON_GetArrayItem(p, 1);
    if (!cJSON_IsArray(p) || !cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > 1e9)
        return vit_fail(err, "%s: the post_processor's \"%s\" must be [token, id]", src, key);
    *id = (int32_t)v->valuedouble;
    return 0;
}

/* [cls] A [sep] and [cls] A [sep] B [sep], B and its sep of type 1; Roberta's pair is
 * <s> A </s> </s> B </s>, all of type 0. */
static int bert_like(tj_post *p, const cJSON *obj, bool roberta, const char *src, vit_error *err) {
    int32_t cls, sep;
    if (token_pair(obj, "cls", &cls, src, err) != 0 || token_pair(obj, "sep", &sep, src, err) != 0)
        return -1;
    const int32_t second = roberta ? 0 : 1;
    items s = {0}, q = {0};
    int rc = add_special(&s, &cls, 1, 0, src, err);
    if (rc == 0) rc = add_item(&s, (tj_template_item){.sequence = true}, src, err);
    if (rc == 0) rc = add_special(&s, &sep, 1, 0, src, err);
    if (rc == 0) rc = add_special(&q, &cls, 1, 0, src, err);
    if (rc == 0) rc = add_item(&q, (tj_template_item){.sequence = true}, src, err);
    if (rc == 0) rc = add_special(&q, &sep, 1, 0, src, err);
    if (rc == 0 && roberta) rc = add_special(&q, &sep, 1, 0, src, err);
    if (rc == 0)
        rc = add_item(&q, (tj_template_item){.sequence = true, .second = true, .type_id = second},
                      src, err);
    if (rc == 0) rc = add_special(&q, &sep, 1, second, src, err);
    p->single = s.v, p->nsingle = s.n, p->pair = q.v, p->npair = q.n;
    return rc;
}

/* The ids of a template's SpecialToken, from special_tokens. */
static int special_ids(const cJSON *specials, const char *name, int32_t type, items *t,
                       const char *src, vit_error *err) {
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(specials, name);
    const cJSON *ids = cJSON_GetObjectItemCaseSensitive(s, "ids");
    if (!cJSON_IsArray(ids))
        return vit_fail(err, "%s: TemplateProcessing's special token \"%.40s\" has no ids", src,
                        name);
    const size_t n = (size_t)cJSON_GetArraySize(ids);
    int32_t *v = malloc((n + 1) * sizeof *v);
    if (!v) return vit_fail(err, "%s: out of memory", src);
    size_t k = 0;
    for (const cJSON *e = ids->child; e; e = e->next) {
        if (!cJSON_IsNumber(e) || e->valuedouble < 0 || e->valuedouble > 1e9) {
            free(v);
            return vit_fail(err, "%s: special token \"%.40s\" has an id that is not one", src,
                            name);
        }
        v[k++] = (int32_t)e->valuedouble;
    }
    return add_item(t, (tj_template_item){.ids = v, .n = k, .type_id = type}, src, err);
}

static int read_template(const cJSON *list, const cJSON *specials, items *t, const char *src,
                         vit_error *err) {
    if (!cJSON_IsArray(list))
        return vit_fail(err, "%s: TemplateProcessing's template must be a list", src);
    for (const cJSON *e = list->child; e; e = e->next) {
        const cJSON *seq = cJSON_GetObjectItemCaseSensitive(e, "Sequence");
        const cJSON *tok = cJSON_GetObjectItemCaseSensitive(e, "SpecialToken");
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(seq ? seq : tok, "id");
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(seq ? seq : tok, "type_id");
        if (!cJSON_IsString(id))
            return vit_fail(err,
                            "%s: a TemplateProcessing piece is not a Sequence or a "
                            "SpecialToken with an id",
                            src);
        const int32_t type_id =
            cJSON_IsNumber(type) && type->valuedouble >= 0 && type->valuedouble < 1e6
                ? (int32_t)type->valuedouble
                : 0;
        int rc;
        if (seq && (strcmp(id->valuestring, "A") == 0 || strcmp(id->valuestring, "B") == 0))
            rc = add_item(t,
                          (tj_template_item){.sequence = true,
                                             .second = id->valuestring[0] == 'B',
                                             .type_id = type_id},
                          src, err);
        else if (seq)
            rc = vit_fail(err, "%s: TemplateProcessing's sequence must be A or B", src);
        else
            rc = special_ids(specials, id->valuestring, type_id, t, src, err);
        if (rc != 0) return -1;
    }
    return 0;
}

static int template_processing(tj_post *p, const cJSON *obj, const char *src, vit_error *err) {
    const cJSON *specials = cJSON_GetObjectItemCaseSensitive(obj, "special_tokens");
    items s = {0}, q = {0};
    int rc = read_template(cJSON_GetObjectItemCaseSensitive(obj, "single"), specials, &s, src, err);
    const cJSON *pair = cJSON_GetObjectItemCaseSensitive(obj, "pair");
    if (rc == 0 && pair && !cJSON_IsNull(pair)) rc = read_template(pair, specials, &q, src, err);
    p->single = s.v, p->nsingle = s.n, p->pair = q.v, p->npair = q.n;
    return rc;
}

/* outer around inner: each text of outer's replaced by inner's items (a Sequence of two). */
static int compose(const tj_template_item *outer, size_t no, const tj_template_item *inner,
                   size_t ni, items *t, const char *src, vit_error *err) {
    for (size_t i = 0; i < no; i++) {
        if (!outer[i].sequence) {
            if (add_special(t, outer[i].ids, outer[i].n, outer[i].type_id, src, err) != 0)
                return -1;
            continue;
        }
        for (size_t k = 0; k < ni; k++) {
            int rc = inner[k].sequence
                         ? add_item(t, inner[k], src, err)
                         : add_special(t, inner[k].ids, inner[k].n, inner[k].type_id, src, err);
            if (rc != 0) return -1;
        }
    }
    return 0;
}

static int sequence(tj_post *p, const cJSON *obj, const char *src, vit_error *err) {
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(obj, "processors");
    if (!cJSON_IsArray(list)) return vit_fail(err, "%s: Sequence needs \"processors\"", src);
    bool trim = false, kept = false;
    for (const cJSON *e = list->child; e; e = e->next) {
        tj_post next = {0};
        if (tj_post_read(e, &next, src, err) != 0) return -1;
        trim |= next.trim_offsets, kept |= next.prefix_space_kept;
        p->trim_offsets = trim, p->prefix_space_kept = kept;
        if (!next.single) continue;
        if (!p->single) {
            *p = next;
            p->trim_offsets = trim, p->prefix_space_kept = kept;
            continue;
        }
        items s = {0};
        int rc = compose(next.single, next.nsingle, p->single, p->nsingle, &s, src, err);
        tj_post_free(&next);
        tj_post_free(p);
        p->single = s.v, p->nsingle = s.n;
        p->trim_offsets = trim, p->prefix_space_kept = kept;
        if (rc != 0) return -1;
    }
    return 0;
}

int tj_post_read(const cJSON *obj, tj_post *out, const char *src, vit_error *err) {
    memset(out, 0, sizeof *out);
    if (!obj || cJSON_IsNull(obj)) return 0;
    const char *type = tj_type(obj, "post_processor", src, err);
    int rc;
    if (!type)
        rc = -1;
    else if (strcmp(type, "TemplateProcessing") == 0)
        rc = template_processing(out, obj, src, err);
    else if (strcmp(type, "BertProcessing") == 0)
        rc = bert_like(out, obj, false, src, err);
    else if (strcmp(type, "RobertaProcessing") == 0)
        rc = bert_like(out, obj, true, src, err);
    else if (strcmp(type, "ByteLevel") == 0)
        rc = 0; /* offsets only */
    else if (strcmp(type, "Sequence") == 0)
        rc = sequence(out, obj, src, err);
    else
        rc = vit_fail(err, "%s: post_processor %.60s is not one vit follows", src, type);
    if (rc == 0 && (strcmp(type, "RobertaProcessing") == 0 || strcmp(type, "ByteLevel") == 0)) {
        bool trim = true, prefix = true; /* the library's defaults */
        rc = tj_bool(obj, "trim_offsets", &trim, src, err) != 0 ||
                     tj_bool(obj, "add_prefix_space", &prefix, src, err) != 0
                 ? -1
                 : 0;
        out->trim_offsets = trim, out->prefix_space_kept = prefix;
    }
    if (rc != 0) tj_post_free(out);
    return rc;
}

void tj_post_free(tj_post *p) {
    free_items(p->single, p->nsingle);
    free_items(p->pair, p->npair);
    memset(p, 0, sizeof *p);
}

static size_t added(const tj_template_item *v, size_t n) {
    size_t k = 0;
    for (size_t i = 0; i < n; i++) k += v[i].sequence ? 0 : v[i].n;
    return k;
}

size_t tj_post_added(const tj_post *p) {
    return added(p->single, p->nsingle);
}

size_t tj_post_added_pair(const tj_post *p) {
    return added(p->pair, p->npair);
}

/* ---- decoders ---- */

typedef enum {
    D_WORDPIECE,
    D_BYTE_LEVEL,
    D_METASPACE,
    D_BPE,
    D_BYTE_FALLBACK,
    D_FUSE,
    D_STRIP,
    D_REPLACE,
    D_SEQUENCE
} decoder_kind;

struct tj_decoder {
    decoder_kind kind;
    char *prefix; /* WordPiece's, BPEDecoder's suffix */
    bool cleanup;
    int32_t replacement; /* Metaspace's; Strip's content */
    bool prepend;        /* Metaspace: prepend_scheme other than never */
    long start, stop;    /* Strip */
    tj_pattern pattern;  /* Replace */
    char *content;
    tj_decoder **seq;
    size_t nseq;
};

static const struct {
    const char *name;
    decoder_kind kind;
} kinds[] = {{"WordPiece", D_WORDPIECE},
             {"ByteLevel", D_BYTE_LEVEL},
             {"Metaspace", D_METASPACE},
             {"BPEDecoder", D_BPE},
             {"ByteFallback", D_BYTE_FALLBACK},
             {"Fuse", D_FUSE},
             {"Strip", D_STRIP},
             {"Replace", D_REPLACE},
             {"Sequence", D_SEQUENCE}};

static int dup_field(const cJSON *obj, const char *key, const char *def, char **out,
                     const char *src, vit_error *err) {
    const char *s = def;
    if (tj_string(obj, key, &s, src, err) != 0) return -1;
    if (!(*out = strdup(s ? s : ""))) return vit_fail(err, "%s: out of memory", src);
    return 0;
}

static int read_decoder_metaspace(tj_decoder *d, const cJSON *obj, const char *src,
                                  vit_error *err) {
    const char *scheme = NULL;
    bool add_prefix_space = true;
    d->replacement = 0x2581;
    if (tj_char(obj, "replacement", &d->replacement, src, err) != 0 ||
        tj_bool(obj, "add_prefix_space", &add_prefix_space, src, err) != 0 ||
        tj_string(obj, "prepend_scheme", &scheme, src, err) != 0)
        return -1;
    d->prepend = scheme ? strcmp(scheme, "never") != 0 : add_prefix_space;
    return 0;
}

static int read_decoder_sequence(tj_decoder *d, const cJSON *obj, const char *src, vit_error *err) {
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(obj, "decoders");
    if (!cJSON_IsArray(list)) return vit_fail(err, "%s: Sequence needs \"decoders\"", src);
    d->seq = calloc((size_t)cJSON_GetArraySize(list) + 1, sizeof *d->seq);
    if (!d->seq) return vit_fail(err, "%s: out of memory", src);
    for (const cJSON *e = list->child; e; e = e->next) {
        if (tj_decoder_read(e, &d->seq[d->nseq], src, err) != 0) return -1;
        if (d->seq[d->nseq]) d->nseq++;
    }
    return 0;
}

static int read_decoder_fields(tj_decoder *d, const cJSON *obj, const char *src, vit_error *err) {
    switch (d->kind) {
    case D_WORDPIECE:
        d->cleanup = true;
        return dup_field(obj, "prefix", "##", &d->prefix, src, err) != 0 ||
                       tj_bool(obj, "cleanup", &d->cleanup, src, err) != 0
                   ? -1
                   : 0;
    case D_METASPACE:
        return read_decoder_metaspace(d, obj, src, err);
    case D_BPE:
        return dup_field(obj, "suffix", "</w>", &d->prefix, src, err);
    case D_STRIP:
        return tj_char(obj, "content", &d->replacement, src, err) != 0 ||
                       tj_int(obj, "start", 0, 1L << 30, &d->start, src, err) != 0 ||
                       tj_int(obj, "stop", 0, 1L << 30, &d->stop, src, err) != 0
                   ? -1
                   : 0;
    case D_REPLACE:
        return tj_pattern_read(&d->pattern, cJSON_GetObjectItemCaseSensitive(obj, "pattern"),
                               "Replace", src, err) != 0 ||
                       dup_field(obj, "content", "", &d->content, src, err) != 0
                   ? -1
                   : 0;
    case D_SEQUENCE:
        return read_decoder_sequence(d, obj, src, err);
    default:
        return 0;
    }
}

int tj_decoder_read(const cJSON *obj, tj_decoder **out, const char *src, vit_error *err) {
    *out = NULL;
    if (!obj || cJSON_IsNull(obj)) return 0;
    const char *type = tj_type(obj, "decoder", src, err);
    if (!type) return -1;
    size_t k = 0;
    while (k < sizeof kinds / sizeof *kinds && strcmp(kinds[k].name, type) != 0) k++;
    if (k == sizeof kinds / sizeof *kinds)
        return vit_fail(err, "%s: decoder %.60s is not one vit follows", src, type);
    tj_decoder *d = calloc(1, sizeof *d);
    if (!d) return vit_fail(err, "%s: out of memory", src);
    d->kind = kinds[k].kind;
    if (read_decoder_fields(d, obj, src, err) != 0) {
        tj_decoder_free(d);
        return -1;
    }
    *out = d;
    return 0;
}

void tj_decoder_free(tj_decoder *d) {
    if (!d) return;
    for (size_t i = 0; i < d->nseq; i++) tj_decoder_free(d->seq[i]);
    free(d->seq), free(d->prefix), free(d->content);
    tj_pattern_free(&d->pattern);
    free(d);
}

/* s with every `from` replaced by `to`, into b. */
static void replace_all(const char *s, const char *from, const char *to, text_buf *b) {
    const size_t lf = strlen(from);
    for (const char *hit; lf && (hit = strstr(s, from)); s = hit + lf) {
        text_buf_add(b, s, (size_t)(hit - s));
        text_buf_add(b, to, strlen(to));
    }
    text_buf_add(b, s, strlen(s));
}

/* Replaces v->s[i] by b's text (consumed). */
static void set_token(tj_strs *v, size_t i, text_buf *b) {
    text_buf_add(b, "", 1);
    if (b->failed) {
        v->failed = true;
        text_buf_free(b);
        return;
    }
    free(v->s[i]);
    v->s[i] = b->s;
    *b = (text_buf){0};
}

static void wordpiece_cleanup(tj_strs *v, size_t i) {
    static const char *const pairs[][2] = {{" .", "."},     {" ?", "?"},           {" !", "!"},
                                           {" ,", ","},     {" ' ", "'"},          {" n't", "n't"},
                                           {" 'm", "'m"},   {" do not", " don't"}, {" 's", "'s"},
                                           {" 've", "'ve"}, {" 're", "'re"}};
    for (size_t k = 0; k < sizeof pairs / sizeof *pairs; k++) {
        text_buf b = {0};
        replace_all(v->s[i], pairs[k][0], pairs[k][1], &b);
        set_token(v, i, &b);
        if (v->failed) return;
    }
}

static void wordpiece(const tj_decoder *d, tj_strs *v) {
    const size_t lp = strlen(d->prefix);
    for (size_t i = 0; i < v->n && !v->failed; i++) {
        if (i) {
            text_buf b = {0};
            if (strncmp(v->s[i], d->prefix, lp) == 0) {
                text_buf_add(&b, v->s[i] + lp, strlen(v->s[i] + lp));
            } else {
                text_buf_add(&b, " ", 1);
                text_buf_add(&b, v->s[i], strlen(v->s[i]));
            }
            set_token(v, i, &b);
        }
        if (d->cleanup && !v->failed) wordpiece_cleanup(v, i);
    }
}

/* Each token's characters as GPT-2's bytes (a token with another character: its own UTF-8),
 * all read as UTF-8 with U+FFFD for what is not: one text. */
static void byte_level(tj_strs *v) {
    text_buf raw = {0}, out = {0};
    for (size_t i = 0; i < v->n; i++) {
        const char *s = v->s[i];
        const size_t n = strlen(s), mark = raw.len;
        bool all = true;
        for (size_t k = 0; k < n && all;) {
            const int32_t c = utf8_decode((const uint8_t *)s, n, &k);
            const int b = c < 0 ? -1 : tj_char_byte(c);
            if (b < 0)
                all = false;
            else
                text_buf_add(&raw, &(uint8_t){(uint8_t)b}, 1);
        }
        if (!all) {
            raw.len = mark;
            text_buf_add(&raw, s, n);
        }
    }
    utf8_append_replaced(&out, (const uint8_t *)raw.s, raw.len);
    text_buf_free(&raw);
    tj_strs_free(v);
    tj_strs_add(v, out.s ? out.s : "", out.len);
    if (out.failed) v->failed = true;
    text_buf_free(&out);
}

static void metaspace(const tj_decoder *d, tj_strs *v) {
    uint8_t rep[4];
    const size_t lr = utf8_encode(d->replacement, rep);
    for (size_t i = 0; i < v->n && !v->failed; i++) {
        text_buf b = {0};
        for (const char *s = v->s[i]; *s;) {
            if (strncmp(s, (const char *)rep, lr) == 0) {
                if (!(i == 0 && d->prepend)) text_buf_add(&b, " ", 1);
                s += lr;
            } else {
                text_buf_add(&b, s++, 1);
            }
        }
        set_token(v, i, &b);
    }
}

static int byte_token(const char *s) {
    static const char hex[] = "0123456789ABCDEFabcdef";
    if (strlen(s) != 6 || strncmp(s, "<0x", 3) != 0 || s[5] != '>' || !strchr(hex, s[3]) ||
        !strchr(hex, s[4]) || !s[3] || !s[4])
        return -1;
    return (int)strtol((char[3]){s[3], s[4], 0}, NULL, 16);
}

static void flush_bytes(text_buf *bytes, tj_strs *out) {
    if (!bytes->len) return;
    size_t i = 0;
    bool valid = true;
    while (i < bytes->len && valid)
        valid = utf8_decode((const uint8_t *)bytes->s, bytes->len, &i) >= 0;
    if (valid)
        tj_strs_add(out, bytes->s, bytes->len);
    else
        for (size_t k = 0; k < bytes->len; k++) tj_strs_add(out, "\xEF\xBF\xBD", 3);
    bytes->len = 0;
}

static void byte_fallback(tj_strs *v) {
    tj_strs out = {0};
    text_buf bytes = {0};
    for (size_t i = 0; i < v->n; i++) {
        const int b = byte_token(v->s[i]);
        if (b >= 0) {
            text_buf_add(&bytes, &(uint8_t){(uint8_t)b}, 1);
            continue;
        }
        flush_bytes(&bytes, &out);
        tj_strs_add(&out, v->s[i], strlen(v->s[i]));
    }
    flush_bytes(&bytes, &out);
    if (bytes.failed) out.failed = true;
    text_buf_free(&bytes);
    tj_strs_free(v);
    *v = out;
}

static void fuse(tj_strs *v) {
    text_buf b = {0};
    for (size_t i = 0; i < v->n; i++) text_buf_add(&b, v->s[i], strlen(v->s[i]));
    const bool failed = b.failed;
    tj_strs_free(v);
    tj_strs_add(v, b.s ? b.s : "", b.len);
    if (failed) v->failed = true;
    text_buf_free(&b);
}

static void strip(const tj_decoder *d, tj_strs *v) {
    for (size_t i = 0; i < v->n && !v->failed; i++) {
        tj_text t = {0};
        tj_text_add_utf8(&t, v->s[i], strlen(v->s[i]));
        size_t s = 0, e = t.n;
        while (s < e && (long)s < d->start && t.c[s] == d->replacement) s++;
        for (long k = 0; k < d->stop && e > s && t.c[e - 1] == d->replacement; k++) e--;
        size_t len;
        char *u = tj_utf8(tj_cps(&t) + s, e - s, &len);
        tj_text_free(&t);
        if (!u) {
            v->failed = true;
            return;
        }
        free(v->s[i]);
        v->s[i] = u;
    }
}

static void replace(const tj_decoder *d, tj_strs *v) {
    tj_text content = {0};
    tj_text_add_utf8(&content, d->content, strlen(d->content));
    for (size_t i = 0; i < v->n && !v->failed; i++) {
        tj_text t = {0}, r = {0};
        tj_text_add_utf8(&t, v->s[i], strlen(v->s[i]));
        size_t at = 0, ms, me;
        while (tj_pattern_find(&d->pattern, tj_cps(&t), t.n, at, &ms, &me) && me > ms) {
            tj_text_add(&r, tj_cps(&t) + at, ms - at);
            tj_text_add(&r, content.c, content.n);
            at = me;
        }
        tj_text_add(&r, tj_cps(&t) + at, t.n - at);
        size_t len;
        char *u = r.failed ? NULL : tj_utf8(r.c, r.n, &len);
        tj_text_free(&t), tj_text_free(&r);
        if (!u) {
            v->failed = true;
            break;
        }
        free(v->s[i]);
        v->s[i] = u;
    }
    tj_text_free(&content);
}

static void bpe_suffix(const tj_decoder *d, tj_strs *v) {
    for (size_t i = 0; i < v->n && !v->failed; i++) {
        text_buf b = {0};
        replace_all(v->s[i], d->prefix, i + 1 == v->n ? "" : " ", &b);
        set_token(v, i, &b);
    }
}

static void spaces_between(tj_strs *v) {
    text_buf b = {0};
    for (size_t i = 0; i < v->n; i++) {
        if (i) text_buf_add(&b, " ", 1);
        text_buf_add(&b, v->s[i], strlen(v->s[i]));
    }
    const bool failed = b.failed;
    tj_strs_free(v);
    tj_strs_add(v, b.s ? b.s : "", b.len);
    if (failed) v->failed = true;
    text_buf_free(&b);
}

void tj_decode_chain(const tj_decoder *d, tj_strs *v) {
    if (!d) {
        spaces_between(v);
        return;
    }
    switch (d->kind) {
    case D_WORDPIECE:
        wordpiece(d, v);
        return;
    case D_BYTE_LEVEL:
        byte_level(v);
        return;
    case D_METASPACE:
        metaspace(d, v);
        return;
    case D_BPE:
        bpe_suffix(d, v);
        return;
    case D_BYTE_FALLBACK:
        byte_fallback(v);
        return;
    case D_FUSE:
        fuse(v);
        return;
    case D_STRIP:
        strip(d, v);
        return;
    case D_REPLACE:
        replace(d, v);
        return;
    case D_SEQUENCE:
        for (size_t i = 0; i < d->nseq && !v->failed; i++) tj_decode_chain(d->seq[i], v);
        return;
    }
}
