#include "text/bpe.h"

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "text/utf8.h"
#include "vit/base/file.h"

#define BPE_MAX_VOCAB (1 << 22)
#define BPE_MAX_FILE  (64u << 20)
#define END_OF_WORD   "</w>"
#define START_OF_TEXT "<|startoftext|>"
#define END_OF_TEXT   "<|endoftext|>"

struct bpe {
    int count;
    char **pieces;    /* [count] into arena; NULL for an id vocab.json does not use */
    char *arena;      /* every piece, NUL-terminated */
    int32_t *slots;   /* piece -> id, open addressing, -1 empty */
    size_t mask;      /* slots - 1 */
    uint64_t *pairs;  /* (left << 32 | right) + 1 of each merge, 0 empty */
    int32_t *rank;    /* its line in merges.txt */
    int32_t *merged;  /* the id of left + right */
    size_t pair_mask; /* pair slots - 1 */
    int32_t byte_id[256], byte_eow_id[256]; /* a byte's symbol, alone and ending a word */
    int32_t symbol_byte[512];               /* GPT-2's byte symbol (a code point) -> its byte */
    int bos, eos;                           /* CLIP's two special tokens, -1 for others */
};

/* ---- GPT-2's bytes_to_unicode: printable bytes stand for themselves, the others for 256 + n ----
 */

static bool printable_byte(int b) {
    return (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
}

static void byte_symbols(int32_t symbol[256]) {
    int n = 0;
    for (int b = 0; b < 256; b++) symbol[b] = printable_byte(b) ? b : 256 + n++;
}

/* ---- the piece -> id table ---- */

static uint64_t hash_bytes(const char *s, size_t n) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)s[i]) * 1099511628211ull;
    return h;
}

static int find_piece(const bpe *b, const char *s, size_t n) {
    for (size_t i = hash_bytes(s, n) & b->mask;; i = (i + 1) & b->mask) {
        const int32_t id = b->slots[i];
        if (id < 0) return -1;
        if (strncmp(b->pieces[id], s, n) == 0 && b->pieces[id][n] == '\0') return id;
    }
}

int bpe_token_id(const bpe *b, const char *piece) {
    return find_piece(b, piece, strlen(piece));
}

static size_t table_size(size_t entries) {
    size_t size = 16;
    while (size < 2 * entries) size *= 2;
    return size;
}

/* ---- vocab.json ---- */

static int vocab_ids(bpe *b, const cJSON *root, const char *name, size_t *bytes, vit_error *err) {
    int max_id = -1;
    const cJSON *item;
    cJSON_ArrayForEach(item, root) {
        const double v = item->valuedouble;
        if (!cJSON_IsNumber(item) || !(v >= 0 && v < BPE_MAX_VOCAB) || v != (int)v)
            return vit_fail(err, "%s: the id of \"%.40s\" is not an integer in 0..%d", name,
                            item->string, BPE_MAX_VOCAB - 1);
        if ((int)v > max_id) max_id = (int)v;
        *bytes += strlen(item->string) + 1;
    }
    if (max_id < 0) return vit_fail(err, "%s: no tokens", name);
    b->count = max_id + 1;
    return 0;
}

static int insert_piece(bpe *b, const char *piece, int id, const char *name, vit_error *err) {
    if (b->pieces[id]) return vit_fail(err, "%s: id %d is given twice", name, id);
    const size_t n = strlen(piece);
    for (size_t i = hash_bytes(piece, n) & b->mask;; i = (i + 1) & b->mask) {
        if (b->slots[i] < 0) {
            b->slots[i] = id;
            return 0;
        }
        if (strcmp(b->pieces[b->slots[i]], piece) == 0)
            return vit_fail(err, "%s: \"%.40s\" is given twice", name, piece);
    }
}

static int load_vocab(bpe *b, const char *json, size_t size, const char *name, vit_error *err) {
    cJSON *root = cJSON_ParseWithLength(json, size);
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return vit_fail(err, "%s: not a JSON object of token ids", name);
    }
    size_t bytes = 0;
    int rc = vocab_ids(b, root, name, &bytes, err);
    if (rc == 0) {
        b->mask = table_size((size_t)b->count) - 1;
        b->pieces = calloc((size_t)b->count, sizeof *b->pieces);
        b->arena = malloc(bytes);
        b->slots = malloc((b->mask + 1) * sizeof *b->slots);
        if (!b->pieces || !b->arena || !b->slots) rc = vit_fail(err, "%s: out of memory", name);
    }
    if (rc == 0) memset(b->slots, 0xff, (b->mask + 1) * sizeof *b->slots);
    char *at = b->arena;
    const cJSON *item;
    cJSON_ArrayForEach(item, root) {
        if (rc != 0) break;
        const int id = (int)item->valuedouble;
        const size_t n = strlen(item->string) + 1;
        if (b->pieces[id]) {
            rc = vit_fail(err, "%s: id %d is given twice", name, id);
            break;
        }
        memcpy(at, item->string, n);
        rc = insert_piece(b, at, id, name, err);
        b->pieces[id] = at;
        at += n;
    }
    cJSON_Delete(root);
    return rc;
}

/* ---- merges.txt ---- */

static size_t pair_slot(const bpe *b, int32_t left, int32_t right) {
    const uint64_t key = ((uint64_t)(uint32_t)left << 32 | (uint32_t)right) + 1;
    size_t i = (size_t)((key * 0x9E3779B97F4A7C15ull) >> 20) & b->pair_mask;
    while (b->pairs[i] != 0 && b->pairs[i] != key) i = (i + 1) & b->pair_mask;
    return i;
}

/* The rank of merging left and right (and its result in *merged), or -1 when they do not merge. */
static int32_t pair_rank(const bpe *b, int32_t left, int32_t right, int32_t *merged) {
    const size_t i = pair_slot(b, left, right);
    if (b->pairs[i] == 0) return -1;
    *merged = b->merged[i];
    return b->rank[i];
}

static int merge_line(bpe *b, char *line, int32_t rank, const char *name, int number,
                      vit_error *err) {
    char *space = strchr(line, ' ');
    if (!space || strchr(space + 1, ' ') || space == line || space[1] == '\0')
        return vit_fail(err, "%s: line %d is not two symbols and a space between", name, number);
    *space = '\0';
    const int left = bpe_token_id(b, line), right = bpe_token_id(b, space + 1);
    *space = ' ';
    const size_t n = strlen(line);
    char joined[512];
    if (n >= sizeof joined) return vit_fail(err, "%s: line %d is too long", name, number);
    memcpy(joined, line, (size_t)(space - line));
    memcpy(joined + (space - line), space + 1, n - (size_t)(space - line));
    const int merged = find_piece(b, joined, n - 1);
    if (left < 0 || right < 0 || merged < 0)
        return vit_fail(err, "%s: line %d: \"%.60s\" merges symbols not in vocab.json", name,
                        number, line);
    const size_t i = pair_slot(b, left, right);
    if (b->pairs[i] != 0) return 0; /* a pair given again keeps its first (best) rank */
    b->pairs[i] = ((uint64_t)(uint32_t)left << 32 | (uint32_t)right) + 1;
    b->rank[i] = rank;
    b->merged[i] = merged;
    return 0;
}

static int load_merges(bpe *b, char *text, const char *name, vit_error *err) {
    size_t lines = 1;
    for (const char *c = text; *c; c++) lines += *c == '\n';
    b->pair_mask = table_size(lines) - 1;
    b->pairs = calloc(b->pair_mask + 1, sizeof *b->pairs);
    b->rank = malloc((b->pair_mask + 1) * sizeof *b->rank);
    b->merged = malloc((b->pair_mask + 1) * sizeof *b->merged);
    if (!b->pairs || !b->rank || !b->merged) return vit_fail(err, "%s: out of memory", name);
    int32_t rank = 0;
    int number = 0;
    for (char *line = text, *end; line; line = end ? end + 1 : NULL) {
        end = strchr(line, '\n');
        if (end) *end = '\0';
        number++;
        const size_t n = strlen(line);
        if (n > 0 && line[n - 1] == '\r') line[n - 1] = '\0';
        if (line[0] == '\0' || (number == 1 && strncmp(line, "#version", 8) == 0)) continue;
        if (merge_line(b, line, rank++, name, number, err) != 0) return -1;
    }
    return 0;
}

/* ---- the symbols every text needs ---- */

static int find_symbols(bpe *b, unsigned flags, const char *name, vit_error *err) {
    int32_t symbol[256];
    byte_symbols(symbol);
    for (int i = 0; i < 512; i++) b->symbol_byte[i] = -1;
    for (int c = 0; c < 256; c++) {
        char s[16];
        const size_t n = utf8_encode(symbol[c], (uint8_t *)s);
        memcpy(s + n, END_OF_WORD, sizeof END_OF_WORD);
        b->byte_eow_id[c] = flags & BPE_CLIP ? bpe_token_id(b, s) : -1;
        s[n] = '\0';
        b->byte_id[c] = bpe_token_id(b, s);
        b->symbol_byte[symbol[c]] = c;
        if (b->byte_id[c] < 0 || ((flags & BPE_CLIP) && b->byte_eow_id[c] < 0))
            return vit_fail(err, "%s: the symbol of byte 0x%02x is not in the vocabulary", name, c);
    }
    b->bos = b->eos = -1;
    if (!(flags & BPE_CLIP)) return 0;
    b->bos = bpe_token_id(b, START_OF_TEXT);
    b->eos = bpe_token_id(b, END_OF_TEXT);
    if (b->bos < 0 || b->eos < 0)
        return vit_fail(err, "%s: %s or %s is not in the vocabulary", name, START_OF_TEXT,
                        END_OF_TEXT);
    return 0;
}

int bpe_load_memory(const char *vocab_json, size_t vocab_size, const char *merges,
                    size_t merges_size, const char *names, unsigned flags, bpe **out,
                    vit_error *err) {
    *out = NULL;
    bpe *b = calloc(1, sizeof *b);
    char *text = malloc(merges_size + 1);
    if (!b || !text) {
        free(b), free(text);
        return vit_fail(err, "%s: out of memory", names);
    }
    memcpy(text, merges, merges_size);
    text[merges_size] = '\0';
    int rc = load_vocab(b, vocab_json, vocab_size, names, err);
    if (rc == 0) rc = load_merges(b, text, names, err);
    if (rc == 0) rc = find_symbols(b, flags, names, err);
    free(text);
    if (rc != 0) {
        bpe_free(b);
        return -1;
    }
    *out = b;
    return 0;
}

int bpe_load(const char *dir, unsigned flags, bpe **out, vit_error *err) {
    char vocab_path[4096], merges_path[4096], names[8300];
    snprintf(vocab_path, sizeof vocab_path, "%s/vocab.json", dir);
    snprintf(merges_path, sizeof merges_path, "%s/merges.txt", dir);
    size_t vocab_size, merges_size;
    char *vocab = vit_read_file(vocab_path, BPE_MAX_FILE, &vocab_size, err);
    if (!vocab) return -1;
    char *merges = vit_read_file(merges_path, BPE_MAX_FILE, &merges_size, err);
    if (!merges) {
        free(vocab);
        return -1;
    }
    snprintf(names, sizeof names, "%s (with merges.txt)", vocab_path);
    const int rc = bpe_load_memory(vocab, vocab_size, merges, merges_size, names, flags, out, err);
    free(vocab), free(merges);
    return rc;
}

void bpe_free(bpe *b) {
    if (!b) return;
    free(b->pieces), free(b->arena), free(b->slots);
    free(b->pairs), free(b->rank), free(b->merged);
    free(b);
}

const char *bpe_piece(const bpe *b, int id) {
    return id >= 0 && id < b->count ? b->pieces[id] : NULL;
}
int bpe_vocab_size(const bpe *b) {
    return b->count;
}
int bpe_bos_id(const bpe *b) {
    return b->bos;
}
int bpe_eos_id(const bpe *b) {
    return b->eos;
}

/* ---- normalisation: NFC, white space runs to one space, each character lower-cased ---- */

/* Python's and Rust's \s: Unicode's White_Space property. */
static bool is_space(int32_t c) {
    return (c >= 9 && c <= 13) || c == ' ' || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
           c == 0x205F || c == 0x3000;
}

static bool is_letter(int32_t c) {
    const utf8proc_category_t k = utf8proc_category(c);
    return k >= UTF8PROC_CATEGORY_LU && k <= UTF8PROC_CATEGORY_LO;
}

static bool is_number(int32_t c) {
    const utf8proc_category_t k = utf8proc_category(c);
    return k >= UTF8PROC_CATEGORY_ND && k <= UTF8PROC_CATEGORY_NO;
}

/* text as valid UTF-8, each invalid run replaced by one U+FFFD as Python's errors="replace"
 * decoding does (malloc'ed, length in *n). */
static uint8_t *valid_utf8(const char *text, size_t len, size_t *n) {
    uint8_t *out = malloc(3 * len + 1);
    if (!out) return NULL;
    size_t o = 0;
    for (size_t i = 0; i < len;) {
        int32_t c = utf8_decode_replace((const uint8_t *)text, len, &i);
        o += utf8_encode(c < 0 ? 0xFFFD : c, out + o);
    }
    *n = o;
    return out;
}

/* The normalised text as code points (malloc'ed, count in *n); NULL when out of memory. */
static int32_t *normalise(const char *text, size_t len, size_t *n) {
    size_t valid_len;
    uint8_t *valid = valid_utf8(text, len, &valid_len);
    if (!valid) return NULL;
    const utf8proc_option_t nfc = UTF8PROC_STABLE | UTF8PROC_COMPOSE;
    utf8proc_ssize_t cap = (utf8proc_ssize_t)valid_len + 8, k = -1;
    int32_t *cps = NULL;
    for (;;) { /* decomposition may grow the text: ask again with the size it needs */
        int32_t *grown = realloc(cps, (size_t)cap * sizeof *cps);
        if (!grown) break;
        cps = grown;
        k = utf8proc_decompose(valid, (utf8proc_ssize_t)valid_len, cps, cap, nfc);
        if (k <= cap) break;
        cap = k;
    }
    free(valid);
    if (!cps || k < 0) return free(cps), NULL;
    k = utf8proc_normalize_utf32(cps, k, nfc);
    /* lower-cased (U+0130 becomes two characters), white space runs to one space */
    int32_t *out = malloc(((size_t)k * 2 + 1) * sizeof *out);
    size_t o = 0;
    for (utf8proc_ssize_t i = 0; out && i < k; i++) {
        if (is_space(cps[i])) {
            if (o == 0 || out[o - 1] != ' ') out[o++] = ' ';
        } else if (cps[i] == 0x130) { /* İ: "i" and a combining dot above, as Unicode says */
            out[o++] = 'i', out[o++] = 0x307;
        } else {
            out[o++] = utf8proc_tolower(cps[i]);
        }
    }
    free(cps);
    *n = o;
    return out;
}

/* ---- pieces ---- */

/* Length of the piece of CLIP's pattern at t[i] (t[i] not white space). */
static size_t piece_length(const int32_t *t, size_t n, size_t i) {
    if (t[i] == '\'' && i + 1 < n) {
        const int32_t a = t[i + 1], b = i + 2 < n ? t[i + 2] : 0;
        if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
        if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
    }
    size_t j = i + 1;
    if (is_letter(t[i])) {
        while (j < n && is_letter(t[j])) j++;
    } else if (!is_number(t[i])) {
        while (j < n && !is_space(t[j]) && !is_letter(t[j]) && !is_number(t[j])) j++;
    }
    return j - i;
}

/* Length of the special token spelled at t[i], and its id, or 0. */
static size_t special_at(const bpe *b, const int32_t *t, size_t n, size_t i, int32_t *id) {
    const char *names[2] = {START_OF_TEXT, END_OF_TEXT};
    const int32_t ids[2] = {b->bos, b->eos};
    for (int s = 0; s < 2; s++) {
        const size_t len = strlen(names[s]);
        size_t k = 0;
        while (k < len && i + k < n && t[i + k] == names[s][k]) k++;
        if (k == len) {
            *id = ids[s];
            return len;
        }
    }
    return 0;
}

/* ---- byte-pair merging of one piece, lowest rank first, leftmost first among equals ---- */

typedef struct {
    int32_t rank, left, right;
} candidate;

struct bpe_work {
    int32_t *sym, *prev, *next; /* the piece's symbols as a linked list */
    candidate *heap;            /* at most the n - 1 first pairs and two per merge */
    int heap_len;
    size_t max_bytes;
};

bpe_work *bpe_work_create(size_t max_bytes) {
    bpe_work *w = calloc(1, sizeof *w);
    if (!w) return NULL;
    w->max_bytes = max_bytes;
    w->sym = malloc((max_bytes + 1) * 3 * sizeof *w->sym);
    w->heap = malloc((3 * max_bytes + 4) * sizeof *w->heap);
    if (!w->sym || !w->heap) {
        bpe_work_free(w);
        return NULL;
    }
    w->prev = w->sym + max_bytes + 1;
    w->next = w->prev + max_bytes + 1;
    return w;
}

void bpe_work_free(bpe_work *w) {
    if (!w) return;
    free(w->sym), free(w->heap), free(w);
}

static bool before(candidate a, candidate b) {
    return a.rank < b.rank || (a.rank == b.rank && a.left < b.left);
}

static void heap_push(bpe_work *w, candidate c) {
    int i = w->heap_len++;
    while (i > 0 && before(c, w->heap[(i - 1) / 2])) {
        w->heap[i] = w->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    w->heap[i] = c;
}

static candidate heap_pop(bpe_work *w) {
    const candidate top = w->heap[0], last = w->heap[--w->heap_len];
    int i = 0;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= w->heap_len) break;
        if (c + 1 < w->heap_len && before(w->heap[c + 1], w->heap[c])) c++;
        if (!before(w->heap[c], last)) break;
        w->heap[i] = w->heap[c];
        i = c;
    }
    if (w->heap_len > 0) w->heap[i] = last;
    return top;
}

static void consider(const bpe *b, bpe_work *w, int32_t left) {
    const int32_t right = left >= 0 ? w->next[left] : -1;
    int32_t merged = -1;
    if (left < 0 || right < 0) return;
    const int32_t rank = pair_rank(b, w->sym[left], w->sym[right], &merged);
    if (rank >= 0) heap_push(w, (candidate){rank, left, right});
}

void bpe_merge_piece(const bpe *b, bpe_work *w, const uint8_t *bytes, int32_t n, bool end_of_word,
                     int32_t *ids, int *count, int cap) {
    if (n <= 0 || (size_t)n > w->max_bytes) return;
    for (int32_t i = 0; i < n; i++) {
        w->sym[i] = end_of_word && i == n - 1 ? b->byte_eow_id[bytes[i]] : b->byte_id[bytes[i]];
        w->prev[i] = i - 1;
        w->next[i] = i + 1 < n ? i + 1 : -1;
    }
    w->heap_len = 0;
    for (int32_t i = 0; i + 1 < n; i++) consider(b, w, i);
    while (w->heap_len > 0) {
        const candidate c = heap_pop(w);
        int32_t merged = -1;
        if (w->sym[c.left] < 0 || w->next[c.left] != c.right ||
            pair_rank(b, w->sym[c.left], w->sym[c.right], &merged) != c.rank)
            continue; /* stale: one of its symbols has merged since */
        w->sym[c.left] = merged;
        w->sym[c.right] = -1;
        w->next[c.left] = w->next[c.right];
        if (w->next[c.left] >= 0) w->prev[w->next[c.left]] = c.left;
        consider(b, w, w->prev[c.left]);
        consider(b, w, c.left);
    }
    for (int32_t i = 0; i >= 0 && *count < cap; i = w->next[i]) ids[(*count)++] = w->sym[i];
}

static int encode_text(const bpe *b, const int32_t *t, size_t n, int32_t *ids, int cap,
                       vit_error *err) {
    uint8_t *bytes = malloc(4 * n + 1);
    bpe_work *w = bpe_work_create(4 * n + 1);
    if (!bytes || !w) {
        free(bytes), bpe_work_free(w);
        return vit_fail(err, "tokenizer: out of memory for a text of %zu characters", n);
    }
    int count = 1; /* ids[0] is the start token */
    for (size_t i = 0; i < n && count < cap;) {
        int32_t special;
        size_t len = special_at(b, t, n, i, &special);
        if (t[i] == ' ') {
            i++;
        } else if (len > 0) {
            ids[count++] = special;
            i += len;
        } else {
            len = piece_length(t, n, i);
            int32_t nbytes = 0;
            for (size_t k = i; k < i + len; k++)
                nbytes += (int32_t)utf8_encode(t[k], bytes + nbytes);
            bpe_merge_piece(b, w, bytes, nbytes, true, ids, &count, cap);
            i += len;
        }
    }
    free(bytes), bpe_work_free(w);
    return count;
}

int bpe_encode(const bpe *b, const char *text, size_t len, int max_len, int32_t *ids,
               vit_error *err) {
    if (max_len < 2)
        return vit_fail(err, "tokenizer: max_len %d leaves no room for the start and end tokens",
                        max_len);
    size_t n = 0;
    int32_t *t = normalise(text ? text : "", text ? len : 0, &n);
    if (!t) return vit_fail(err, "tokenizer: out of memory for a text of %zu bytes", len);
    ids[0] = b->bos;
    const int count = encode_text(b, t, n, ids, max_len - 1, err);
    free(t);
    if (count < 0) return -1;
    ids[count] = b->eos;
    return count + 1;
}

/* ---- GPT-2's pattern ---- */

/* The run of characters from t[i] that the class test accepts. */
static size_t run_of(const int32_t *t, size_t n, size_t i, bool (*in_class)(int32_t)) {
    size_t j = i;
    while (j < n && in_class(t[j])) j++;
    return j - i;
}

static bool is_other(int32_t c) {
    return !is_space(c) && !is_letter(c) && !is_number(c);
}

/* 's|'t|'re|'ve|'m|'ll|'d: the contraction's length at t[i], or 0. */
static size_t contraction(const int32_t *t, size_t n, size_t i) {
    if (t[i] != '\'' || i + 1 >= n) return 0;
    const int32_t a = t[i + 1], b = i + 2 < n ? t[i + 2] : 0;
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
    return 0;
}

size_t bpe_gpt2_piece(const int32_t *t, size_t n, size_t i) {
    size_t len = contraction(t, n, i);
    if (len) return len;
    /* ` ?\p{L}+`, ` ?\p{N}+`, ` ?[^\s\p{L}\p{N}]+`: a space may lead the run (a space is in
     * none of the classes, so without a run after it none of these matches) */
    bool (*const classes[3])(int32_t) = {is_letter, is_number, is_other};
    const size_t lead = t[i] == ' ' && i + 1 < n ? 1 : 0;
    for (int k = 0; k < 3; k++)
        if ((len = run_of(t, n, i + lead, classes[k])) > 0) return lead + len;
    /* `\s+(?!\S)`: a run of white space but its last character when text follows it; `\s+`
     * when that leaves nothing */
    len = run_of(t, n, i, is_space);
    if (i + len < n && len > 1) len--;
    return len > 0 ? len : 1;
}

/* ---- a token's bytes ---- */

int bpe_token_bytes(const bpe *b, const char *token, uint8_t *out) {
    const size_t n = strlen(token);
    int count = 0;
    for (size_t i = 0; i < n;) {
        const int32_t c = utf8_decode((const uint8_t *)token, n, &i);
        const int32_t byte = c >= 0 && c < 512 ? b->symbol_byte[c] : -1;
        if (byte < 0) return -1;
        out[count++] = (uint8_t)byte;
    }
    return count;
}

static int by_rank(const void *a, const void *b) {
    const int32_t x = ((const int32_t *)a)[0], y = ((const int32_t *)b)[0];
    return (x > y) - (x < y);
}

int bpe_merges(const bpe *b, int32_t **pairs) {
    size_t n = 0;
    for (size_t i = 0; i <= b->pair_mask; i++) n += b->pairs[i] != 0;
    int32_t *v = malloc(sizeof *v * 3 * (n ? n : 1));
    if (!v) return -1;
    size_t k = 0;
    for (size_t i = 0; i <= b->pair_mask; i++) {
        if (!b->pairs[i]) continue;
        const uint64_t key = b->pairs[i] - 1;
        v[3 * k] = b->rank[i], v[3 * k + 1] = (int32_t)(key >> 32);
        v[3 * k + 2] = (int32_t)(uint32_t)key;
        k++;
    }
    qsort(v, n, 3 * sizeof *v, by_rank);
    for (size_t i = 0; i < n; i++) v[2 * i] = v[3 * i + 1], v[2 * i + 1] = v[3 * i + 2];
    *pairs = v;
    return (int)n;
}
