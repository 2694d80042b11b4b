/* tokenizer.json's models (see text/tj.h), as the tokenizers library's models/ tokenize a
 * pre-tokenized piece: WordPiece (greedy longest match), BPE (merges by rank through a heap, so
 * a long piece costs n log n, not n^2) and Unigram (Viterbi over the pieces' scores). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/tj.h"
#include "text/utf8.h"

typedef enum { M_WORDPIECE, M_BPE, M_UNIGRAM } model_kind;

typedef struct {
    uint64_t key; /* a << 32 | b, UINT64_MAX for an empty slot */
    int32_t rank, new_id;
} merge_slot;

struct tj_model {
    model_kind kind;
    tj_map vocab;
    const char **token; /* [size] by id (into vocab's keys), NULL where none */
    int size;
    int32_t unk_id; /* -1: none */
    char *prefix, *suffix;
    long max_chars; /* WordPiece */
    bool fuse_unk, byte_fallback, ignore_merges;
    merge_slot *merges; /* BPE */
    size_t merge_mask;
    double *score, min_score; /* Unigram */
};

static const char *const names[] = {"WordPiece", "BPE", "Unigram"};

const char *tj_model_name(const tj_model *m) {
    return names[m->kind];
}

int32_t tj_model_id(const tj_model *m, const char *s, size_t n) {
    return tj_map_get(&m->vocab, s, n);
}

const char *tj_model_token(const tj_model *m, int32_t id) {
    return id >= 0 && id < m->size ? m->token[id] : NULL;
}

int tj_model_size(const tj_model *m) {
    return m->size;
}

int tj_model_entries(const tj_model *m) {
    return m->kind == M_UNIGRAM ? m->size : (int)m->vocab.count;
}

/* {"token": id, ...} */
static int read_vocab_object(tj_model *m, const cJSON *vocab, const char *src, vit_error *err) {
    if (!cJSON_IsObject(vocab))
        return vit_fail(err, "%s: %s's vocab must be an object", src, names[m->kind]);
    for (const cJSON *e = vocab->child; e; e = e->next) {
        if (!cJSON_IsNumber(e) || e->valuedouble < 0 || e->valuedouble > (1 << 24) ||
            e->valuedouble != (int)e->valuedouble)
            return vit_fail(err, "%s: vocab entry \"%.40s\" has no id in [0, 2^24]", src,
                            e->string);
        if (tj_map_set(&m->vocab, e->string, strlen(e->string), (int32_t)e->valuedouble) != 0)
            return vit_fail(err, "%s: out of memory", src);
        if ((int)e->valuedouble >= m->size) m->size = (int)e->valuedouble + 1;
    }
    return 0;
}

/* [["piece", score], ...] */
static int read_vocab_scores(tj_model *m, const cJSON *vocab, const char *src, vit_error *err) {
    if (!cJSON_IsArray(vocab) || cJSON_GetArraySize(vocab) == 0)
        return vit_fail(err, "%s: Unigram's vocab must be a list of [piece, score]", src);
    m->size = cJSON_GetArraySize(vocab);
    if (!(m->score = malloc((size_t)m->size * sizeof *m->score)))
        return vit_fail(err, "%s: out of memory", src);
    m->min_score = 1e300;
    int id = 0;
    for (const cJSON *e = vocab->child; e; e = e->next, id++) {
        const cJSON *piece = cJSON_GetArrayItem(e, 0), *score = cJSON_GetArrayItem(e, 1);
        if (!cJSON_IsArray(e) || !cJSON_IsString(piece) || !cJSON_IsNumber(score))
            return vit_fail(err, "%s: Unigram vocab entry %d is not [piece, score]", src, id);
        if (tj_map_set(&m->vocab, piece->valuestring, strlen(piece->valuestring), id) != 0)
            return vit_fail(err, "%s: out of memory", src);
        m->score[id] = score->valuedouble;
        if (score->valuedouble < m->min_score) m->min_score = score->valuedouble;
    }
    return 0;
}

static int index_tokens(tj_model *m, const char *src, vit_error *err) {
    if (!(m->token = calloc((size_t)m->size + 1, sizeof *m->token)))
        return vit_fail(err, "%s: out of memory", src);
    for (size_t k = 0; k < m->vocab.count; k++)
        if (m->vocab.val[k] >= 0 && m->vocab.val[k] < m->size) {
            /* a token given twice: the id of the later entry maps back to it */
            m->token[m->vocab.val[k]] = m->vocab.key[k];
        }
    return 0;
}

static size_t merge_hash(uint64_t key) {
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdull;
    key ^= key >> 33;
    return (size_t)key;
}

static merge_slot *merge_find(const tj_model *m, uint64_t key) {
    for (size_t i = merge_hash(key) & m->merge_mask;; i = (i + 1) & m->merge_mask)
        if (m->merges[i].key == key || m->merges[i].key == UINT64_MAX) return &m->merges[i];
}

/* One merge "a b" (or ["a", "b"]) as its two parts. */
static int merge_parts(const cJSON *e, int rank, char *buf, size_t size, const char **a,
                       const char **b, const char *src, vit_error *err) {
    if (cJSON_IsArray(e) && cJSON_GetArraySize(e) == 2 &&
        cJSON_IsString(cJSON_GetArrayItem(e, 0)) && cJSON_IsString(cJSON_GetArrayItem(e, 1))) {
        *a = cJSON_GetArrayItem(e, 0)->valuestring, *b = cJSON_GetArrayItem(e, 1)->valuestring;
        return 0;
    }
    const char *space = cJSON_IsString(e) ? strchr(e->valuestring, ' ') : NULL;
    if (!space || strchr(space + 1, ' ') || strlen(e->valuestring) >= size)
        return vit_fail(err, "%s: merge %d is not \"a b\" or [a, b]", src, rank + 1);
    memcpy(buf, e->valuestring, strlen(e->valuestring) + 1);
    buf[space - e->valuestring] = 0;
    *a = buf, *b = buf + (space - e->valuestring) + 1;
    return 0;
}

static int add_merge(tj_model *m, const char *a, const char *b, int rank, const char *src,
                     vit_error *err) {
    const size_t la = strlen(a), lb = strlen(b), lp = m->prefix ? strlen(m->prefix) : 0;
    const int32_t ia = tj_map_get(&m->vocab, a, la), ib = tj_map_get(&m->vocab, b, lb);
    if (ia < 0 || ib < 0 || lb < lp)
        return vit_fail(err, "%s: merge %d (\"%.40s %.40s\") has a part not in the vocab", src,
                        rank + 1, a, b);
    char *joined = malloc(la + lb + 1);
    if (!joined) return vit_fail(err, "%s: out of memory", src);
    memcpy(joined, a, la);
    memcpy(joined + la, b + lp, lb - lp);
    const int32_t id = tj_map_get(&m->vocab, joined, la + lb - lp);
    free(joined);
    if (id < 0)
        return vit_fail(err, "%s: merge %d (\"%.40s %.40s\") makes a token not in the vocab", src,
                        rank + 1, a, b);
    merge_slot *s = merge_find(m, (uint64_t)(uint32_t)ia << 32 | (uint32_t)ib);
    /* a pair merged twice keeps its later rank, as the library's map collects them */
    *s = (merge_slot){(uint64_t)(uint32_t)ia << 32 | (uint32_t)ib, rank, id};
    return 0;
}

static int read_merges(tj_model *m, const cJSON *merges, const char *src, vit_error *err) {
    if (!cJSON_IsArray(merges)) return vit_fail(err, "%s: BPE needs a list of merges", src);
    const size_t n = (size_t)cJSON_GetArraySize(merges);
    size_t size = 16;
    while (size < 2 * n + 2) size *= 2;
    if (!(m->merges = malloc(size * sizeof *m->merges)))
        return vit_fail(err, "%s: out of memory", src);
    memset(m->merges, 0xff, size * sizeof *m->merges);
    m->merge_mask = size - 1;
    char buf[1024];
    int rank = 0;
    for (const cJSON *e = merges->child; e; e = e->next, rank++) {
        const char *a = NULL, *b = NULL;
        if (merge_parts(e, rank, buf, sizeof buf, &a, &b, src, err) != 0 ||
            add_merge(m, a, b, rank, src, err) != 0)
            return -1;
    }
    return 0;
}

static int copy_string(const cJSON *obj, const char *key, char **out, const char *src,
                       vit_error *err) {
    const char *s = NULL;
    if (tj_string(obj, key, &s, src, err) != 0) return -1;
    if (s && !(*out = strdup(s))) return vit_fail(err, "%s: out of memory", src);
    return 0;
}

/* unk_token's id (absent, null or not in the vocab: none). */
static int read_unk_token(tj_model *m, const cJSON *obj, const char *src, vit_error *err) {
    const char *unk = NULL;
    if (tj_string(obj, "unk_token", &unk, src, err) != 0) return -1;
    m->unk_id = unk ? tj_map_get(&m->vocab, unk, strlen(unk)) : -1;
    return 0;
}

static int read_bpe(tj_model *m, const cJSON *obj, const char *src, vit_error *err) {
    const cJSON *dropout = cJSON_GetObjectItemCaseSensitive(obj, "dropout");
    if (dropout && !cJSON_IsNull(dropout) &&
        !(cJSON_IsNumber(dropout) && dropout->valuedouble == 0))
        return vit_fail(err, "%s: BPE with dropout is not one vit follows (it is random)", src);
    if (read_vocab_object(m, cJSON_GetObjectItemCaseSensitive(obj, "vocab"), src, err) != 0 ||
        copy_string(obj, "continuing_subword_prefix", &m->prefix, src, err) != 0 ||
        copy_string(obj, "end_of_word_suffix", &m->suffix, src, err) != 0 ||
        tj_bool(obj, "fuse_unk", &m->fuse_unk, src, err) != 0 ||
        tj_bool(obj, "byte_fallback", &m->byte_fallback, src, err) != 0 ||
        tj_bool(obj, "ignore_merges", &m->ignore_merges, src, err) != 0 ||
        read_unk_token(m, obj, src, err) != 0)
        return -1;
    return read_merges(m, cJSON_GetObjectItemCaseSensitive(obj, "merges"), src, err);
}

static int read_wordpiece(tj_model *m, const cJSON *obj, const char *src, vit_error *err) {
    m->max_chars = 100;
    if (read_vocab_object(m, cJSON_GetObjectItemCaseSensitive(obj, "vocab"), src, err) != 0 ||
        copy_string(obj, "continuing_subword_prefix", &m->prefix, src, err) != 0 ||
        tj_int(obj, "max_input_chars_per_word", 0, 1L << 30, &m->max_chars, src, err) != 0 ||
        read_unk_token(m, obj, src, err) != 0)
        return -1;
    if (!m->prefix && !(m->prefix = strdup("##"))) return vit_fail(err, "%s: out of memory", src);
    return 0;
}

static int read_unigram(tj_model *m, const cJSON *obj, const char *src, vit_error *err) {
    long unk = -1;
    if (read_vocab_scores(m, cJSON_GetObjectItemCaseSensitive(obj, "vocab"), src, err) != 0 ||
        tj_int(obj, "unk_id", 0, m->size - 1, &unk, src, err) != 0 ||
        tj_bool(obj, "byte_fallback", &m->byte_fallback, src, err) != 0)
        return -1;
    m->unk_id = (int32_t)unk;
    m->fuse_unk = true; /* always, in the library */
    return 0;
}

int tj_model_read(const cJSON *obj, tj_model **out, const char *src, vit_error *err) {
    *out = NULL;
    const char *type = tj_type(obj, "model", src, err);
    if (!type) return -1;
    int k = 0;
    while (k < 3 && strcmp(names[k], type) != 0) k++;
    if (k == 3) return vit_fail(err, "%s: model %.60s is not one vit follows", src, type);
    tj_model *m = calloc(1, sizeof *m);
    if (!m) return vit_fail(err, "%s: out of memory", src);
    m->kind = (model_kind)k, m->unk_id = -1;
    int rc = m->kind == M_BPE         ? read_bpe(m, obj, src, err)
             : m->kind == M_WORDPIECE ? read_wordpiece(m, obj, src, err)
                                      : read_unigram(m, obj, src, err);
    if (rc == 0) rc = index_tokens(m, src, err);
    if (rc != 0) {
        tj_model_free(m);
        return -1;
    }
    *out = m;
    return 0;
}

void tj_model_free(tj_model *m) {
    if (!m) return;
    tj_map_free(&m->vocab);
    free(m->token), free(m->prefix), free(m->suffix), free(m->merges), free(m->score);
    free(m);
}

/* ---- WordPiece ---- */

static int wordpiece(const tj_model *m, const char *s, size_t n, tj_ids *out, const char *src,
                     vit_error *err) {
    size_t chars = 0;
    for (size_t i = 0; i < n; i++) chars += ((uint8_t)s[i] & 0xC0) != 0x80;
    const size_t lp = strlen(m->prefix), mark = out->n;
    char *buf = malloc(lp + n + 1);
    if (!buf) return vit_fail(err, "%s: out of memory", src);
    bool bad = chars > (size_t)m->max_chars;
    for (size_t start = 0; !bad && start < n;) {
        size_t end = n;
        int32_t id = -1;
        while (start < end) {
            const size_t off = start > 0 ? lp : 0;
            memcpy(buf, m->prefix, off);
            memcpy(buf + off, s + start, end - start);
            if ((id = tj_map_get(&m->vocab, buf, off + end - start)) >= 0) break;
            do end--; /* back one character */
            while (end > start && ((uint8_t)s[end] & 0xC0) == 0x80);
        }
        if (id < 0)
            bad = true;
        else
            tj_ids_add(out, id), start = end;
    }
    free(buf);
    if (!bad) return 0;
    out->n = mark;
    if (m->unk_id < 0) return vit_fail(err, "%s: WordPiece needs its unk_token, absent", src);
    tj_ids_add(out, m->unk_id);
    return 0;
}

/* ---- BPE ---- */

typedef struct {
    int32_t id, prev, next, len;
} symbol;

typedef struct {
    int32_t rank, pos, new_id;
} merge;

static bool merge_before(merge a, merge b) {
    return a.rank != b.rank ? a.rank < b.rank : a.pos < b.pos;
}

static void heap_push(merge *h, size_t *n, merge x) {
    size_t i = (*n)++;
    while (i > 0 && merge_before(x, h[(i - 1) / 2])) h[i] = h[(i - 1) / 2], i = (i - 1) / 2;
    h[i] = x;
}

static merge heap_pop(merge *h, size_t *n) {
    const merge top = h[0], x = h[--*n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= *n) break;
        if (c + 1 < *n && merge_before(h[c + 1], h[c])) c++;
        if (!merge_before(h[c], x)) break;
        h[i] = h[c], i = c;
    }
    if (*n) h[i] = x;
    return top;
}

static const merge_slot *pair_merge(const tj_model *m, int32_t a, int32_t b) {
    const merge_slot *s = merge_find(m, (uint64_t)(uint32_t)a << 32 | (uint32_t)b);
    return s->key == UINT64_MAX ? NULL : s;
}

/* The characters' symbols (with prefix and suffix, byte fallback, unk), as merge_word. */
static size_t bpe_symbols(const tj_model *m, const char *s, size_t n, symbol *sym, char *buf) {
    size_t count = 0;
    int32_t unk = -1, unk_len = 0;
    const size_t lp = m->prefix ? strlen(m->prefix) : 0, ls = m->suffix ? strlen(m->suffix) : 0;
    for (size_t i = 0; i < n;) {
        size_t end = i + 1;
        while (end < n && ((uint8_t)s[end] & 0xC0) == 0x80) end++;
        size_t k = 0;
        if (i > 0 && lp) memcpy(buf, m->prefix, lp), k = lp;
        memcpy(buf + k, s + i, end - i), k += end - i;
        if (end == n && ls) memcpy(buf + k, m->suffix, ls), k += ls;
        const int32_t len = (int32_t)(end - i), id = tj_map_get(&m->vocab, buf, k);
        i = end;
        if (id >= 0) {
            if (unk >= 0) sym[count++] = (symbol){unk, 0, 0, unk_len}, unk = -1;
            sym[count++] = (symbol){id, 0, 0, len};
            continue;
        }
        if (m->byte_fallback) {
            int32_t bytes[64];
            size_t nb = 0;
            for (size_t b = 0; b < k && nb < 64; b++) {
                char code[8];
                snprintf(code, sizeof code, "<0x%02X>", (uint8_t)buf[b]);
                if ((bytes[nb] = tj_map_get(&m->vocab, code, 6)) < 0) break;
                nb++;
            }
            if (nb == k) {
                for (size_t b = 0; b < nb; b++) sym[count++] = (symbol){bytes[b], 0, 0, 1};
                continue;
            }
        }
        if (m->unk_id < 0) continue; /* dropped, as the library drops it */
        if (unk >= 0 && m->fuse_unk) {
            unk_len += len;
            continue;
        }
        if (unk >= 0) sym[count++] = (symbol){unk, 0, 0, unk_len};
        unk = m->unk_id, unk_len = len;
    }
    if (unk >= 0) sym[count++] = (symbol){unk, 0, 0, unk_len};
    return count;
}

static void bpe_merge_all(const tj_model *m, symbol *sym, size_t count, merge *heap) {
    size_t nh = 0;
    for (size_t i = 0; i < count; i++) {
        sym[i].prev = (int32_t)i - 1, sym[i].next = i + 1 < count ? (int32_t)i + 1 : -1;
        const merge_slot *p = i + 1 < count ? pair_merge(m, sym[i].id, sym[i + 1].id) : NULL;
        if (p) heap_push(heap, &nh, (merge){p->rank, (int32_t)i, p->new_id});
    }
    while (nh) {
        const merge top = heap_pop(heap, &nh);
        symbol *cur = &sym[top.pos];
        if (cur->len == 0 || cur->next < 0) continue;
        symbol *right = &sym[cur->next];
        const merge_slot *p = pair_merge(m, cur->id, right->id);
        if (!p || p->new_id != top.new_id) continue;
        cur->id = top.new_id, cur->len += right->len, cur->next = right->next;
        right->len = 0;
        if (cur->next >= 0) sym[cur->next].prev = top.pos;
        if (cur->prev >= 0 && (p = pair_merge(m, sym[cur->prev].id, cur->id)))
            heap_push(heap, &nh, (merge){p->rank, cur->prev, p->new_id});
        if (cur->next >= 0 && (p = pair_merge(m, cur->id, sym[cur->next].id)))
            heap_push(heap, &nh, (merge){p->rank, top.pos, p->new_id});
    }
}

static int bpe(const tj_model *m, const char *s, size_t n, tj_ids *out, const char *src,
               vit_error *err) {
    int32_t whole;
    if (m->ignore_merges && (whole = tj_map_get(&m->vocab, s, n)) >= 0) {
        tj_ids_add(out, whole);
        return 0;
    }
    const size_t lp = m->prefix ? strlen(m->prefix) : 0, ls = m->suffix ? strlen(m->suffix) : 0;
    /* at most one symbol per byte of a character with its prefix and suffix */
    const size_t cap = n * (lp + ls + 4) + 1;
    symbol *sym = malloc(cap * sizeof *sym);
    merge *heap = malloc(2 * cap * sizeof *heap); /* each merge pushes at most two */
    char *buf = malloc(lp + ls + 8);
    if (!sym || !heap || !buf) {
        free(sym), free(heap), free(buf);
        return vit_fail(err, "%s: out of memory", src);
    }
    const size_t count = bpe_symbols(m, s, n, sym, buf);
    bpe_merge_all(m, sym, count, heap);
    for (size_t i = 0; i < count; i++)
        if (sym[i].len) tj_ids_add(out, sym[i].id);
    free(sym), free(heap), free(buf);
    return 0;
}

/* ---- Unigram ---- */

typedef struct {
    double score;
    int64_t start; /* -1: not reached */
    int32_t id;
} node;

/* The best path's pieces (unknown runs fused) as byte ranges, from the end. */
static int unigram_path(const tj_model *m, const char *s, size_t n, node *best, const char *src,
                        vit_error *err) {
    const double unk_score = m->min_score - 10.0;
    for (size_t i = 0; i <= n; i++) best[i] = (node){0, -1, 0};
    for (size_t at = 0; at < n;) {
        size_t mb = at + 1;
        while (mb < n && ((uint8_t)s[mb] & 0xC0) == 0x80) mb++;
        mb -= at;
        const double here = best[at].score;
        bool single = false;
        for (size_t len = 1; len <= m->vocab.max_len && at + len <= n; len++) {
            const int32_t id = tj_map_get(&m->vocab, s + at, len);
            if (id < 0) continue;
            node *t = &best[at + len];
            if (t->start < 0 || m->score[id] + here > t->score)
                *t = (node){m->score[id] + here, (int64_t)at, id};
            single |= len == mb;
        }
        node *t = &best[at + mb];
        if (!single && (t->start < 0 || unk_score + here > t->score)) {
            if (m->unk_id < 0) return vit_fail(err, "%s: Unigram needs an unk_id, absent", src);
            *t = (node){unk_score + here, (int64_t)at, m->unk_id};
        }
        at += mb;
    }
    return 0;
}

/* One piece of the path s[a..b) as ids: its own, its bytes (byte_fallback), or unk. */
static int unigram_piece(const tj_model *m, const char *s, size_t a, size_t b, tj_ids *out,
                         tj_ids *ends, const char *src, vit_error *err) {
    const int32_t id = tj_map_get(&m->vocab, s + a, b - a);
    if (id >= 0) {
        tj_ids_add(out, id);
        if (ends) tj_ids_add(ends, (int32_t)b);
        return 0;
    }
    if (m->byte_fallback) {
        const size_t mark = out->n;
        size_t k = a;
        for (; k < b; k++) {
            char code[8];
            snprintf(code, sizeof code, "<0x%02X>", (uint8_t)s[k]);
            const int32_t byte = tj_map_get(&m->vocab, code, 6);
            if (byte < 0) break;
            tj_ids_add(out, byte);
            if (ends) tj_ids_add(ends, (int32_t)k + 1);
        }
        if (k == b) return 0;
        if (ends) ends->n -= out->n - mark;
        out->n = mark;
    }
    if (m->unk_id < 0) return vit_fail(err, "%s: Unigram needs an unk_id, absent", src);
    tj_ids_add(out, m->unk_id);
    if (ends) tj_ids_add(ends, (int32_t)b);
    return 0;
}

static int unigram(const tj_model *m, const char *s, size_t n, tj_ids *out, tj_ids *ends,
                   const char *src, vit_error *err) {
    node *best = malloc((n + 1) * sizeof *best);
    size_t *cut = malloc((n + 1) * sizeof *cut);
    int rc = best && cut ? unigram_path(m, s, n, best, src, err)
                         : vit_fail(err, "%s: out of memory", src);
    /* back from the end; a run of unk pieces is one piece (fuse_unk) */
    size_t nc = 0;
    for (size_t end = n; rc == 0 && end > 0;) {
        size_t start = (size_t)best[end].start;
        if (best[end].id == m->unk_id)
            while (start > 0 && best[start].id == m->unk_id) start = (size_t)best[start].start;
        cut[nc++] = end;
        end = start;
    }
    if (rc == 0) {
        size_t start = 0;
        for (size_t i = nc; rc == 0 && i-- > 0;) {
            rc = unigram_piece(m, s, start, cut[i], out, ends, src, err);
            start = cut[i];
        }
    }
    free(best), free(cut);
    return rc;
}

int tj_model_tokenize(const tj_model *m, const char *s, size_t n, tj_ids *out, const char *src,
                      vit_error *err) {
    if (n == 0) return 0;
    const int rc = m->kind == M_WORDPIECE ? wordpiece(m, s, n, out, src, err)
                   : m->kind == M_BPE     ? bpe(m, s, n, out, src, err)
                                          : unigram(m, s, n, out, NULL, src, err);
    if (rc == 0 && out->failed) return vit_fail(err, "%s: out of memory", src);
    return rc;
}

int tj_model_tokenize_unigram(const tj_model *m, const char *s, size_t n, tj_ids *out, tj_ids *ends,
                              const char *src, vit_error *err) {
    if (m->kind != M_UNIGRAM) return vit_fail(err, "%s: the model is not Unigram", src);
    if (n == 0) return 0;
    const int rc = unigram(m, s, n, out, ends, src, err);
    if (rc == 0 && (out->failed || ends->failed)) return vit_fail(err, "%s: out of memory", src);
    return rc;
}

const char *tj_model_prefix(const tj_model *m) {
    return m->kind == M_WORDPIECE && m->prefix ? m->prefix : "";
}

int32_t tj_model_unk(const tj_model *m) {
    return m->unk_id;
}
