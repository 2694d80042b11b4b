/* The small parts the tokenizer.json kind shares (see text/tj.h). */
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "text/tj.h"
#include "text/utf8.h"

static bool grow(void **p, size_t *cap, size_t need, size_t size) {
    if (need <= *cap) return true;
    size_t cap2 = *cap ? *cap : 16;
    while (cap2 < need) cap2 *= 2;
    void *q = realloc(*p, cap2 * size);
    if (!q) return false;
    *p = q, *cap = cap2;
    return true;
}

void tj_text_add(tj_text *t, const int32_t *c, size_t n) {
    if (t->failed || n == 0) return;
    if (!grow((void **)&t->c, &t->cap, t->n + n, sizeof *t->c)) {
        t->failed = true;
        return;
    }
    memcpy(t->c + t->n, c, n * sizeof *c);
    t->n += n;
}

void tj_text_add1(tj_text *t, int32_t c) {
    tj_text_add(t, &c, 1);
}

void tj_text_free(tj_text *t) {
    free(t->c);
    memset(t, 0, sizeof *t);
}

void tj_text_add_utf8(tj_text *t, const char *s, size_t n) {
    for (size_t i = 0; i < n;) {
        const int32_t c = utf8_decode_replace((const uint8_t *)s, n, &i);
        tj_text_add1(t, c < 0 ? 0xFFFD : c);
    }
}

char *tj_utf8(const int32_t *c, size_t n, size_t *len) {
    char *s = malloc(4 * n + 1);
    if (!s) return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) k += utf8_encode(c[i], (uint8_t *)s + k);
    s[k] = 0;
    *len = k;
    return s;
}

void tj_pieces_reset(tj_pieces *p) {
    p->text.n = 0, p->count = 0;
}

void tj_pieces_free(tj_pieces *p) {
    tj_text_free(&p->text);
    free(p->span);
    memset(p, 0, sizeof *p);
}

void tj_pieces_add(tj_pieces *p, const int32_t *c, size_t n, bool first) {
    if (n == 0 || p->failed) return;
    if (!grow((void **)&p->span, &p->cap, p->count + 1, sizeof *p->span)) {
        p->failed = true;
        return;
    }
    const size_t start = p->text.n;
    tj_text_add(&p->text, c, n);
    if (p->text.failed) p->failed = true;
    p->span[p->count++] = (tj_span){start, start + n, first};
}

/* FNV-1a */
static size_t hash(const char *s, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)s[i]) * 1099511628211ull;
    return (size_t)h;
}

static int32_t *find_slot(const tj_map *m, const char *s, size_t n) {
    for (size_t i = hash(s, n) & m->mask;; i = (i + 1) & m->mask) {
        const int32_t k = m->slot[i];
        if (k < 0 || (m->klen[k] == n && memcmp(m->key[k], s, n) == 0)) return &m->slot[i];
    }
}

static int rehash(tj_map *m) {
    const size_t size = m->mask ? 2 * (m->mask + 1) : 64;
    int32_t *slot = malloc(size * sizeof *slot);
    if (!slot) return -1;
    memset(slot, 0xff, size * sizeof *slot);
    free(m->slot);
    m->slot = slot, m->mask = size - 1;
    for (size_t k = 0; k < m->count; k++) *find_slot(m, m->key[k], m->klen[k]) = (int32_t)k;
    return 0;
}

int tj_map_set(tj_map *m, const char *s, size_t n, int32_t val) {
    if ((m->count + 1) * 2 > m->mask + 1 && rehash(m) != 0) return -1;
    int32_t *slot = find_slot(m, s, n);
    if (*slot >= 0) {
        m->val[*slot] = val;
        return 0;
    }
    if (m->count == m->cap) {
        const size_t cap = m->cap ? 2 * m->cap : 64;
        char **k = realloc(m->key, cap * sizeof *k);
        if (!k) return -1;
        m->key = k;
        size_t *l = realloc(m->klen, cap * sizeof *l);
        if (!l) return -1;
        m->klen = l;
        int32_t *v = realloc(m->val, cap * sizeof *v);
        if (!v) return -1;
        m->val = v, m->cap = cap;
    }
    char *key = malloc(n + 1);
    if (!key) return -1;
    memcpy(key, s, n);
    key[n] = 0;
    m->key[m->count] = key, m->klen[m->count] = n, m->val[m->count] = val;
    *slot = (int32_t)m->count++;
    if (n > m->max_len) m->max_len = n;
    return 0;
}

int32_t tj_map_get(const tj_map *m, const char *s, size_t n) {
    if (!m->slot) return -1;
    const int32_t k = *find_slot(m, s, n);
    return k < 0 ? -1 : m->val[k];
}

void tj_map_free(tj_map *m) {
    for (size_t k = 0; k < m->count; k++) free(m->key[k]);
    free(m->key), free(m->klen), free(m->val), free(m->slot);
    memset(m, 0, sizeof *m);
}

static utf8proc_propval_t category(int32_t c) {
    return utf8proc_category(c);
}

bool tj_is_whitespace(int32_t c) {
    return (c >= 9 && c <= 13) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
           c == 0x205F || c == 0x3000;
}

bool tj_is_letter(int32_t c) {
    const utf8proc_propval_t k = category(c);
    return k >= UTF8PROC_CATEGORY_LU && k <= UTF8PROC_CATEGORY_LO;
}

bool tj_is_mark(int32_t c) {
    const utf8proc_propval_t k = category(c);
    return k >= UTF8PROC_CATEGORY_MN && k <= UTF8PROC_CATEGORY_ME;
}

bool tj_is_mark_nonspacing(int32_t c) {
    return category(c) == UTF8PROC_CATEGORY_MN;
}

bool tj_is_number(int32_t c) {
    const utf8proc_propval_t k = category(c);
    return k >= UTF8PROC_CATEGORY_ND && k <= UTF8PROC_CATEGORY_NO;
}

bool tj_is_other(int32_t c) {
    const utf8proc_propval_t k = category(c);
    return k == UTF8PROC_CATEGORY_CN || (k >= UTF8PROC_CATEGORY_CC && k <= UTF8PROC_CATEGORY_CO);
}

bool tj_is_punctuation(int32_t c) {
    if (c < 0x80)
        return (c >= 0x21 && c <= 0x2F) || (c >= 0x3A && c <= 0x40) || (c >= 0x5B && c <= 0x60) ||
               (c >= 0x7B && c <= 0x7E);
    const utf8proc_propval_t k = category(c);
    return k >= UTF8PROC_CATEGORY_PC && k <= UTF8PROC_CATEGORY_PO;
}

/* Rust regex's \w is Alphabetic, marks, Nd, Pc and Join_Control; Alphabetic beyond the letters
 * and Nl is Other_Alphabetic, which utf8proc lacks: the marks cover most of it, the enclosed
 * letters (So) are listed. */
bool tj_is_alnum(int32_t c) {
    const utf8proc_propval_t k = category(c);
    return tj_is_letter(c) || tj_is_mark(c) || k == UTF8PROC_CATEGORY_ND ||
           k == UTF8PROC_CATEGORY_NL || k == UTF8PROC_CATEGORY_PC || c == 0x200C || c == 0x200D ||
           (c >= 0x24B6 && c <= 0x24E9) || (c >= 0x1F130 && c <= 0x1F149) ||
           (c >= 0x1F150 && c <= 0x1F169) || (c >= 0x1F170 && c <= 0x1F189);
}

int tj_lowercase(int32_t c, int32_t *out) {
    if (c == 0x130) { /* the one unconditional multi-character lower case: i + combining dot */
        out[0] = 'i', out[1] = 0x307;
        return 2;
    }
    out[0] = utf8proc_tolower(c);
    return 1;
}

static bool printable_byte(int b) {
    return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

int32_t tj_byte_char(uint8_t b) {
    if (printable_byte(b)) return b;
    int n = 0;
    for (int k = 0; k < b; k++) n += !printable_byte(k);
    return 256 + n;
}

int tj_char_byte(int32_t c) {
    if (c < 256) return printable_byte(c) ? c : -1;
    if (c >= 256 + 68) return -1;
    for (int b = 0, n = 0; b < 256; b++)
        if (!printable_byte(b) && 256 + n++ == c) return b;
    return -1;
}

const char *tj_type(const cJSON *obj, const char *what, const char *src, vit_error *err) {
    const cJSON *t = cJSON_IsObject(obj) ? cJSON_GetObjectItemCaseSensitive(obj, "type") : NULL;
    if (cJSON_IsString(t)) return t->valuestring;
    vit_fail(err, "%s: a %s without a \"type\"", src, what);
    return NULL;
}

int tj_bool(const cJSON *obj, const char *key, bool *out, const char *src, vit_error *err) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v || cJSON_IsNull(v)) return 0;
    if (!cJSON_IsBool(v)) return vit_fail(err, "%s: \"%s\" must be true or false", src, key);
    *out = cJSON_IsTrue(v);
    return 0;
}

int tj_string(const cJSON *obj, const char *key, const char **out, const char *src,
              vit_error *err) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v || cJSON_IsNull(v)) return 0;
    if (!cJSON_IsString(v)) return vit_fail(err, "%s: \"%s\" must be a string", src, key);
    *out = v->valuestring;
    return 0;
}

int tj_int(const cJSON *obj, const char *key, long lo, long hi, long *out, const char *src,
           vit_error *err) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v || cJSON_IsNull(v)) return 0;
    if (!cJSON_IsNumber(v) || v->valuedouble != (double)(long)v->valuedouble ||
        v->valuedouble < (double)lo || v->valuedouble > (double)hi)
        return vit_fail(err, "%s: \"%s\" must be a whole number in [%ld, %ld]", src, key, lo, hi);
    *out = (long)v->valuedouble;
    return 0;
}

int tj_char(const cJSON *obj, const char *key, int32_t *out, const char *src, vit_error *err) {
    const char *s = NULL;
    if (tj_string(obj, key, &s, src, err) != 0) return -1;
    if (!s) return 0;
    size_t i = 0, n = strlen(s);
    const int32_t c = n ? utf8_decode((const uint8_t *)s, n, &i) : -1;
    if (c < 0 || i != n) return vit_fail(err, "%s: \"%s\" must be one character", src, key);
    *out = c;
    return 0;
}

void tj_ids_add(tj_ids *v, int32_t id) {
    if (v->failed) return;
    if (!grow((void **)&v->id, &v->cap, v->n + 1, sizeof *v->id)) {
        v->failed = true;
        return;
    }
    v->id[v->n++] = id;
}

void tj_ids_free(tj_ids *v) {
    free(v->id);
    memset(v, 0, sizeof *v);
}

void tj_strs_add(tj_strs *v, const char *s, size_t n) {
    if (v->failed) return;
    char *copy = malloc(n + 1);
    if (!copy || !grow((void **)&v->s, &v->cap, v->n + 1, sizeof *v->s)) {
        free(copy);
        v->failed = true;
        return;
    }
    memcpy(copy, s, n);
    copy[n] = 0;
    v->s[v->n++] = copy;
}

void tj_strs_free(tj_strs *v) {
    for (size_t i = 0; i < v->n; i++) free(v->s[i]);
    free(v->s);
    memset(v, 0, sizeof *v);
}
