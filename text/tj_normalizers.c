/* tokenizer.json's normalizers (see text/tj.h), as the tokenizers library's normalizers/
 * and spm_precompiled apply them: BertNormalizer, NFC, NFD, NFKC, NFKD, Lowercase,
 * StripAccents, Strip, Replace, Prepend, Precompiled, Nmt, ByteLevel and Sequence. */
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "text/tj.h"
#include "text/utf8.h"
#include "vit/base/base64.h"

typedef enum {
    N_BERT,
    N_NFC,
    N_NFD,
    N_NFKC,
    N_NFKD,
    N_LOWERCASE,
    N_STRIP_ACCENTS,
    N_STRIP,
    N_REPLACE,
    N_PREPEND,
    N_PRECOMPILED,
    N_NMT,
    N_BYTE_LEVEL,
    N_SEQUENCE
} normalizer_kind;

struct tj_normalizer {
    normalizer_kind kind;
    bool clean_text, chinese, strip_accents, lowercase; /* BertNormalizer */
    bool left, right;                                   /* Strip */
    tj_pattern pattern;                                 /* Replace */
    tj_text content;                                    /* Replace's content, Prepend's text */
    uint32_t *trie;                                     /* Precompiled: the double array */
    size_t ntrie;
    char *normalized; /* and its strings, NUL-separated */
    size_t nnormalized;
    tj_normalizer **seq; /* Sequence */
    size_t nseq;
};

static const struct {
    const char *name;
    normalizer_kind kind;
} kinds[] = {{"BertNormalizer", N_BERT},
             {"NFC", N_NFC},
             {"NFD", N_NFD},
             {"NFKC", N_NFKC},
             {"NFKD", N_NFKD},
             {"Lowercase", N_LOWERCASE},
             {"StripAccents", N_STRIP_ACCENTS},
             {"Strip", N_STRIP},
             {"Replace", N_REPLACE},
             {"Prepend", N_PREPEND},
             {"Precompiled", N_PRECOMPILED},
             {"Nmt", N_NMT},
             {"ByteLevel", N_BYTE_LEVEL},
             {"Sequence", N_SEQUENCE}};

static int read_bert(tj_normalizer *n, const cJSON *obj, const char *src, vit_error *err) {
    n->clean_text = n->chinese = n->lowercase = true;
    if (tj_bool(obj, "clean_text", &n->clean_text, src, err) != 0 ||
        tj_bool(obj, "handle_chinese_chars", &n->chinese, src, err) != 0 ||
        tj_bool(obj, "lowercase", &n->lowercase, src, err) != 0)
        return -1;
    n->strip_accents = n->lowercase; /* null: follow lowercase */
    return tj_bool(obj, "strip_accents", &n->strip_accents, src, err);
}

/* The charsmap: a little-endian u32 byte size of the trie, the trie's u32 units, then the
 * normalized strings. */
static int read_precompiled(tj_normalizer *n, const cJSON *obj, const char *src, vit_error *err) {
    const char *b64 = NULL;
    if (tj_string(obj, "precompiled_charsmap", &b64, src, err) != 0) return -1;
    const size_t len = b64 ? strlen(b64) : 0;
    uint8_t *bytes = b64 ? malloc(len / 4 * 3 + 3) : NULL;
    size_t where;
    const long long decoded = bytes ? base64_decode(b64, len, bytes, &where) : -1;
    if (decoded < 0) {
        free(bytes);
        return vit_fail(err, "%s: Precompiled's precompiled_charsmap is not base64", src);
    }
    const size_t size = (size_t)decoded;
    const uint32_t trie_size = size >= 4 ? (uint32_t)bytes[0] | (uint32_t)bytes[1] << 8 |
                                               (uint32_t)bytes[2] << 16 | (uint32_t)bytes[3] << 24
                                         : 0;
    int rc = 0;
    if (size < 4 || trie_size / 4 == 0 || (size_t)trie_size / 4 * 4 > size - 4)
        rc = vit_fail(err, "%s: Precompiled's precompiled_charsmap is truncated", src);
    if (rc == 0) {
        n->ntrie = trie_size / 4;
        n->nnormalized = size - 4 - n->ntrie * 4;
        n->trie = malloc(n->ntrie * sizeof *n->trie);
        n->normalized = malloc(n->nnormalized + 1);
        if (!n->trie || !n->normalized) rc = vit_fail(err, "%s: out of memory", src);
    }
    for (size_t i = 0; rc == 0 && i < n->ntrie; i++) {
        const uint8_t *u = bytes + 4 + 4 * i;
        n->trie[i] =
            (uint32_t)u[0] | (uint32_t)u[1] << 8 | (uint32_t)u[2] << 16 | (uint32_t)u[3] << 24;
    }
    if (rc == 0) {
        memcpy(n->normalized, bytes + 4 + n->ntrie * 4, n->nnormalized);
        n->normalized[n->nnormalized] = 0;
        for (size_t i = 0; rc == 0 && i < n->nnormalized;) /* the library reads it as a str */
            if (utf8_decode((const uint8_t *)n->normalized, n->nnormalized, &i) < 0)
                rc = vit_fail(err, "%s: Precompiled's normalized strings are not UTF-8", src);
    }
    free(bytes);
    return rc;
}

static int read_sequence(tj_normalizer *n, const cJSON *obj, const char *src, vit_error *err) {
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(obj, "normalizers");
    if (!cJSON_IsArray(list)) return vit_fail(err, "%s: Sequence needs \"normalizers\"", src);
    n->seq = calloc((size_t)cJSON_GetArraySize(list) + 1, sizeof *n->seq);
    if (!n->seq) return vit_fail(err, "%s: out of memory", src);
    const cJSON *item;
    cJSON_ArrayForEach(item, list) {
        if (tj_normalizer_read(item, &n->seq[n->nseq], src, err) != 0) return -1;
        if (n->seq[n->nseq]) n->nseq++;
    }
    return 0;
}

static int read_text(tj_text *t, const cJSON *obj, const char *key, const char *type,
                     const char *src, vit_error *err) {
    const char *s = NULL;
    if (tj_string(obj, key, &s, src, err) != 0) return -1;
    if (!s) return vit_fail(err, "%s: %s needs \"%s\"", src, type, key);
    tj_text_add_utf8(t, s, strlen(s));
    return t->failed ? vit_fail(err, "%s: out of memory", src) : 0;
}

static int read_fields(tj_normalizer *n, const cJSON *obj, const char *src, vit_error *err) {
    switch (n->kind) {
    case N_BERT:
        return read_bert(n, obj, src, err);
    case N_STRIP:
        n->left = n->right = true;
        return tj_bool(obj, "strip_left", &n->left, src, err) != 0 ||
                       tj_bool(obj, "strip_right", &n->right, src, err) != 0
                   ? -1
                   : 0;
    case N_REPLACE:
        if (tj_pattern_read(&n->pattern, cJSON_GetObjectItemCaseSensitive(obj, "pattern"),
                            "Replace", src, err) != 0)
            return -1;
        return read_text(&n->content, obj, "content", "Replace", src, err);
    case N_PREPEND:
        return read_text(&n->content, obj, "prepend", "Prepend", src, err);
    case N_PRECOMPILED:
        return read_precompiled(n, obj, src, err);
    case N_SEQUENCE:
        return read_sequence(n, obj, src, err);
    default:
        return 0;
    }
}

int tj_normalizer_read(const cJSON *obj, tj_normalizer **out, const char *src, vit_error *err) {
    *out = NULL;
    if (!obj || cJSON_IsNull(obj)) return 0;
    const char *type = tj_type(obj, "normalizer", src, err);
    if (!type) return -1;
    size_t k = 0;
    while (k < sizeof kinds / sizeof *kinds && strcmp(kinds[k].name, type) != 0) k++;
    if (k == sizeof kinds / sizeof *kinds)
        return vit_fail(err, "%s: normalizer %.60s is not one vit follows", src, type);
    tj_normalizer *n = calloc(1, sizeof *n);
    if (!n) return vit_fail(err, "%s: out of memory", src);
    n->kind = kinds[k].kind;
    if (read_fields(n, obj, src, err) != 0) {
        tj_normalizer_free(n);
        return -1;
    }
    *out = n;
    return 0;
}

void tj_normalizer_free(tj_normalizer *n) {
    if (!n) return;
    for (size_t i = 0; i < n->nseq; i++) tj_normalizer_free(n->seq[i]);
    free(n->seq);
    tj_pattern_free(&n->pattern);
    tj_text_free(&n->content);
    free(n->trie), free(n->normalized);
    free(n);
}

static bool is_chinese(int32_t c) {
    return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
           (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
           (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
           (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

static void unicode_form(const int32_t *in, size_t n, utf8proc_option_t opt, tj_text *out) {
    size_t len;
    char *s = tj_utf8(in, n, &len);
    utf8proc_uint8_t *dst = NULL;
    const utf8proc_ssize_t m = s ? utf8proc_map((const utf8proc_uint8_t *)s, (utf8proc_ssize_t)len,
                                                &dst, opt | UTF8PROC_STABLE)
                                 : -1;
    if (m >= 0)
        tj_text_add_utf8(out, (const char *)dst, (size_t)m);
    else
        out->failed = true;
    free(s), free(dst);
}

static void lowercase(const int32_t *in, size_t n, tj_text *out) {
    for (size_t i = 0; i < n; i++) {
        int32_t l[3];
        tj_text_add(out, l, (size_t)tj_lowercase(in[i], l));
    }
}

/* BertNormalizer: clean the text, space the CJK ideographs, strip accents (NFD, then no Mn),
 * lower-case, in that order. */
static void bert(const tj_normalizer *nz, const int32_t *in, size_t n, tj_text *out) {
    tj_text a = {0}, b = {0};
    for (size_t i = 0; i < n; i++) {
        int32_t c = in[i];
        const bool ws = c == '\t' || c == '\n' || c == '\r' || tj_is_whitespace(c);
        if (nz->clean_text && (c == 0 || c == 0xFFFD || (!ws && tj_is_other(c)))) continue;
        if (nz->clean_text && ws) c = ' ';
        if (nz->chinese && is_chinese(c)) {
            const int32_t three[3] = {' ', c, ' '};
            tj_text_add(&a, three, 3);
        } else {
            tj_text_add1(&a, c);
        }
    }
    if (nz->strip_accents) {
        unicode_form(tj_cps(&a), a.n, UTF8PROC_DECOMPOSE, &b);
        a.n = 0;
        for (size_t i = 0; i < b.n; i++)
            if (!tj_is_mark_nonspacing(b.c[i])) tj_text_add1(&a, b.c[i]);
    }
    if (nz->lowercase)
        lowercase(tj_cps(&a), a.n, out);
    else
        tj_text_add(out, tj_cps(&a), a.n);
    if (a.failed || b.failed) out->failed = true;
    tj_text_free(&a), tj_text_free(&b);
}

static void replace(const tj_normalizer *nz, const int32_t *in, size_t n, tj_text *out) {
    size_t at = 0, ms, me;
    while (tj_pattern_find(&nz->pattern, in, n, at, &ms, &me)) {
        tj_text_add(out, in + at, ms - at);
        tj_text_add(out, nz->content.c, nz->content.n);
        at = me;
    }
    tj_text_add(out, in + at, n - at);
}

/* The normalized string of the trie's first (shortest) match of key[0..n), as spm_precompiled's
 * transform takes it; NULL when none. */
static const char *charsmap_first(const tj_normalizer *nz, const uint8_t *key, size_t n,
                                  size_t *len) {
    const uint32_t *a = nz->trie;
    size_t pos = 0;
#define UNIT_OFFSET(u) (((u) >> 10) << (((u) & (1u << 9)) >> 6))
    pos ^= UNIT_OFFSET(a[0]);
    for (size_t i = 0; i < n && key[i]; i++) {
        pos ^= key[i];
        if (pos >= nz->ntrie) return NULL;
        const uint32_t unit = a[pos];
        if ((unit & ((1u << 31) | 0xFF)) != key[i]) return NULL;
        pos ^= UNIT_OFFSET(unit);
        if (pos >= nz->ntrie) return NULL;
        if ((unit >> 8) & 1) {
            const size_t index = a[pos] & ((1u << 31) - 1);
            if (index > nz->nnormalized) return NULL;
            *len = strlen(nz->normalized + index);
            return nz->normalized + index;
        }
    }
#undef UNIT_OFFSET
    return NULL;
}

static void precompiled_chunk(const tj_normalizer *nz, const int32_t *c, size_t n, tj_text *out) {
    uint8_t bytes[4 * 8] = {0}; /* zeroed: the aarch64 gcc warns it may be read unset */
    size_t len = 0, nlen;
    for (size_t i = 0; i < n; i++) len += utf8_encode(c[i], bytes + len);
    const char *norm = len < 6 ? charsmap_first(nz, bytes, len, &nlen) : NULL;
    if (norm) {
        tj_text_add_utf8(out, norm, nlen);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        const size_t k = utf8_encode(c[i], bytes);
        if ((norm = charsmap_first(nz, bytes, k, &nlen)))
            tj_text_add_utf8(out, norm, nlen);
        else
            tj_text_add1(out, c[i]);
    }
}

/* Precompiled: grapheme by grapheme (one under 6 bytes looked up whole), else each character. */
static void precompiled(const tj_normalizer *nz, const int32_t *in, size_t n, tj_text *out) {
    for (size_t start = 0; start < n;) {
        size_t end = start + 1;
        utf8proc_int32_t state = 0;
        while (end < n && !utf8proc_grapheme_break_stateful(in[end - 1], in[end], &state)) end++;
        if (end - start <= 8) {
            precompiled_chunk(nz, in + start, end - start, out);
        } else {
            for (size_t i = start; i < end; i++) precompiled_chunk(nz, in + i, 1, out);
        }
        start = end;
    }
}

/* Nmt: ASCII control characters dropped, other white space (and U+2581, U+FEFF, U+FFFD)
 * made spaces. */
static void nmt(const int32_t *in, size_t n, tj_text *out) {
    for (size_t i = 0; i < n; i++) {
        const int32_t c = in[i];
        if ((c >= 1 && c <= 8) || c == 0xB || (c >= 0xE && c <= 0x1F) || c == 0x7F || c == 0x8F ||
            c == 0x9F)
            continue;
        const bool space = c == 9 || c == 0xA || c == 0xC || c == 0xD || c == 0x1680 ||
                           (c >= 0x200B && c <= 0x200F) || c == 0x2028 || c == 0x2029 ||
                           c == 0x2581 || c == 0xFEFF || c == 0xFFFD;
        tj_text_add1(out, space ? ' ' : c);
    }
}

/* ByteLevel: each UTF-8 byte as GPT-2's byte symbol. */
static void byte_level(const int32_t *in, size_t n, tj_text *out) {
    for (size_t i = 0; i < n; i++) {
        uint8_t b[4];
        const size_t k = utf8_encode(in[i], b);
        for (size_t j = 0; j < k; j++) tj_text_add1(out, tj_byte_char(b[j]));
    }
}

static void apply(const tj_normalizer *nz, const int32_t *in, size_t n, tj_text *out);

static void sequence(const tj_normalizer *nz, const int32_t *in, size_t n, tj_text *out) {
    tj_text a = {0}, b = {0};
    tj_text_add(&a, in, n);
    for (size_t i = 0; i < nz->nseq; i++) {
        b.n = 0;
        apply(nz->seq[i], tj_cps(&a), a.n, &b);
        const tj_text t = a;
        a = b, b = t;
    }
    tj_text_add(out, a.c, a.n);
    if (a.failed || b.failed) out->failed = true;
    tj_text_free(&a), tj_text_free(&b);
}

static void apply(const tj_normalizer *nz, const int32_t *in, size_t n, tj_text *out) {
    size_t s = 0, e = n;
    switch (nz->kind) {
    case N_BERT:
        bert(nz, in, n, out);
        return;
    case N_NFC:
        unicode_form(in, n, UTF8PROC_COMPOSE, out);
        return;
    case N_NFD:
        unicode_form(in, n, UTF8PROC_DECOMPOSE, out);
        return;
    case N_NFKC:
        unicode_form(in, n, UTF8PROC_COMPOSE | UTF8PROC_COMPAT, out);
        return;
    case N_NFKD:
        unicode_form(in, n, UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT, out);
        return;
    case N_LOWERCASE:
        lowercase(in, n, out);
        return;
    case N_STRIP_ACCENTS:
        for (size_t i = 0; i < n; i++)
            if (!tj_is_mark(in[i])) tj_text_add1(out, in[i]);
        return;
    case N_STRIP:
        while (nz->left && s < e && tj_is_whitespace(in[s])) s++;
        while (nz->right && e > s && tj_is_whitespace(in[e - 1])) e--;
        tj_text_add(out, in + s, e - s);
        return;
    case N_REPLACE:
        replace(nz, in, n, out);
        return;
    case N_PREPEND:
        if (n) tj_text_add(out, nz->content.c, nz->content.n);
        tj_text_add(out, in, n);
        return;
    case N_PRECOMPILED:
        precompiled(nz, in, n, out);
        return;
    case N_NMT:
        nmt(in, n, out);
        return;
    case N_BYTE_LEVEL:
        byte_level(in, n, out);
        return;
    case N_SEQUENCE:
        sequence(nz, in, n, out);
        return;
    }
}

void tj_normalize(const tj_normalizer *nz, const int32_t *in, size_t n, tj_text *out) {
    static const int32_t none[1] = {0};
    if (!in) in = none;
    out->n = 0;
    if (nz)
        apply(nz, in, n, out);
    else
        tj_text_add(out, in, n);
}

bool tj_normalizer_per_char(const tj_normalizer *n) {
    return !n || n->kind == N_BERT;
}

/* ---- with each normalized character's origin ---- */

/* out gets c[0..n) of origin o */
static void add_aligned(tj_text *out, tj_ids *origin, const int32_t *c, size_t n, int32_t o) {
    tj_text_add(out, c, n);
    for (size_t i = 0; i < n; i++) tj_ids_add(origin, o);
}

static bool aligned(const tj_normalizer *nz, const int32_t *in, const int32_t *org, size_t n,
                    tj_text *out, tj_ids *origin);

/* A kind that maps each character on its own: its output stands for that character. */
static void per_char(const tj_normalizer *nz, const int32_t *in, const int32_t *org, size_t n,
                     tj_text *out, tj_ids *origin) {
    tj_text one = {0};
    for (size_t i = 0; i < n; i++) {
        one.n = 0;
        apply(nz, in + i, 1, &one);
        add_aligned(out, origin, tj_cps(&one), one.n, org[i]);
    }
    if (one.failed) out->failed = true;
    tj_text_free(&one);
}

/* Replace: a match's content stands for the match's last character (the library removes the
 * matched characters, then inserts the content after the last one). */
static void replace_aligned(const tj_normalizer *nz, const int32_t *in, const int32_t *org,
                            size_t n, tj_text *out, tj_ids *origin) {
    size_t at = 0, ms, me;
    while (tj_pattern_find(&nz->pattern, in, n, at, &ms, &me)) {
        for (size_t i = at; i < ms; i++) add_aligned(out, origin, in + i, 1, org[i]);
        if (me > ms) add_aligned(out, origin, nz->content.c, nz->content.n, org[me - 1]);
        at = me;
    }
    for (size_t i = at; i < n; i++) add_aligned(out, origin, in + i, 1, org[i]);
}

/* Precompiled as precompiled() runs: a grapheme looked up whole stands for its first
 * character, else each character for itself. */
static void precompiled_aligned(const tj_normalizer *nz, const int32_t *in, const int32_t *org,
                                size_t n, tj_text *out, tj_ids *origin) {
    tj_text tmp = {0};
    for (size_t start = 0; start < n;) {
        size_t end = start + 1;
        utf8proc_int32_t state = 0;
        while (end < n && !utf8proc_grapheme_break_stateful(in[end - 1], in[end], &state)) end++;
        uint8_t bytes[4 * 8] = {0};
        size_t len = 0, nlen;
        for (size_t i = start; end - start <= 8 && i < end; i++)
            len += utf8_encode(in[i], bytes + len);
        const char *norm =
            end - start <= 8 && len < 6 ? charsmap_first(nz, bytes, len, &nlen) : NULL;
        if (norm) {
            tmp.n = 0;
            tj_text_add_utf8(&tmp, norm, nlen);
            add_aligned(out, origin, tj_cps(&tmp), tmp.n, org[start]);
        } else {
            for (size_t i = start; i < end; i++) {
                tmp.n = 0;
                precompiled_chunk(nz, in + i, 1, &tmp);
                add_aligned(out, origin, tj_cps(&tmp), tmp.n, org[i]);
            }
        }
        start = end;
    }
    if (tmp.failed) out->failed = true;
    tj_text_free(&tmp);
}

static bool sequence_aligned(const tj_normalizer *nz, const int32_t *in, const int32_t *org,
                             size_t n, tj_text *out, tj_ids *origin) {
    tj_text a = {0}, b = {0};
    tj_ids oa = {0}, ob = {0};
    tj_text_add(&a, in, n);
    for (size_t i = 0; i < n; i++) tj_ids_add(&oa, org[i]);
    bool ok = true;
    for (size_t i = 0; ok && i < nz->nseq; i++) {
        b.n = 0, ob.n = 0;
        ok = aligned(nz->seq[i], tj_cps(&a), oa.id, a.n, &b, &ob);
        const tj_text t = a;
        a = b, b = t;
        const tj_ids u = oa;
        oa = ob, ob = u;
    }
    if (ok) tj_text_add(out, a.c, a.n);
    for (size_t i = 0; ok && i < a.n; i++) tj_ids_add(origin, oa.id[i]);
    if (a.failed || b.failed || oa.failed || ob.failed) out->failed = true;
    tj_text_free(&a), tj_text_free(&b), tj_ids_free(&oa), tj_ids_free(&ob);
    return ok;
}

static bool aligned(const tj_normalizer *nz, const int32_t *in, const int32_t *org, size_t n,
                    tj_text *out, tj_ids *origin) {
    size_t s = 0, e = n;
    switch (nz->kind) {
    case N_BERT:
    case N_LOWERCASE:
    case N_STRIP_ACCENTS:
    case N_NMT:
        per_char(nz, in, org, n, out, origin);
        return true;
    case N_STRIP:
        while (nz->left && s < e && tj_is_whitespace(in[s])) s++;
        while (nz->right && e > s && tj_is_whitespace(in[e - 1])) e--;
        for (size_t i = s; i < e; i++) add_aligned(out, origin, in + i, 1, org[i]);
        return true;
    case N_REPLACE:
        replace_aligned(nz, in, org, n, out, origin);
        return true;
    case N_PREPEND: /* the library aligns what it prepends with the first character */
        if (n) add_aligned(out, origin, nz->content.c, nz->content.n, org[0]);
        for (size_t i = 0; i < n; i++) add_aligned(out, origin, in + i, 1, org[i]);
        return true;
    case N_PRECOMPILED:
        precompiled_aligned(nz, in, org, n, out, origin);
        return true;
    case N_SEQUENCE:
        return sequence_aligned(nz, in, org, n, out, origin);
    default: /* the Unicode forms compose across characters; ByteLevel's symbols are bytes */
        return false;
    }
}

bool tj_normalize_aligned(const tj_normalizer *nz, const int32_t *in, const int32_t *origin,
                          size_t n, tj_text *out, tj_ids *out_origin) {
    out->n = 0, out_origin->n = 0;
    if (!nz) {
        for (size_t i = 0; i < n; i++) add_aligned(out, out_origin, in + i, 1, origin[i]);
        return true;
    }
    return aligned(nz, in, origin, n, out, out_origin);
}

bool tj_normalizer_alignable(const tj_normalizer *n) {
    if (!n) return true;
    if (n->kind == N_SEQUENCE) {
        for (size_t i = 0; i < n->nseq; i++)
            if (!tj_normalizer_alignable(n->seq[i])) return false;
        return true;
    }
    return n->kind != N_NFC && n->kind != N_NFD && n->kind != N_NFKC && n->kind != N_NFKD &&
           n->kind != N_BYTE_LEVEL;
}
