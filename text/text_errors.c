/* Character and word error rates: Levenshtein distances over normalised code points and words. */
#include "text/text_errors.h"

#include <stdlib.h>
#include <string.h>

#include "text/utf8.h"

int text_is_space(uint32_t cp) {
    if (cp == ' ' || (cp >= 0x09 && cp <= 0x0D)) return 1;
    if (cp < 0x85) return 0;
    return cp == 0x85 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) ||
           cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

size_t text_normalize_code_points(const char *text, size_t len, uint32_t *cps) {
    const uint8_t *s = (const uint8_t *)text;
    size_t n = 0, i = 0;
    int pending_space = 0; /* a space goes out only once a character follows it */
    while (i < len) {
        const int32_t cp = utf8_decode_replace(s, len, &i);
        const uint32_t c = cp < 0 ? 0xFFFDu : (uint32_t)cp;
        if (text_is_space(c)) {
            pending_space = n > 0;
            continue;
        }
        if (pending_space) cps[n++] = ' ';
        pending_space = 0;
        cps[n++] = c;
    }
    return n;
}

long text_edit_distance(const uint32_t *a, size_t n, const uint32_t *b, size_t m, long *row) {
    /* row[j]: the distance between a[0..i) and b[0..j), one row of the table at a time */
    for (size_t j = 0; j <= m; j++) row[j] = (long)j;
    for (size_t i = 1; i <= n; i++) {
        long diagonal = row[0]; /* the previous row's row[j - 1] */
        row[0] = (long)i;
        for (size_t j = 1; j <= m; j++) {
            const long above = row[j];
            long best = diagonal + (a[i - 1] != b[j - 1]);
            if (above + 1 < best) best = above + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            diagonal = above;
            row[j] = best;
        }
    }
    return row[m];
}

/* ---- words as numbers: equal words get equal ids, so the same distance serves ---- */

typedef struct {
    const uint32_t *start;
    size_t len;
    uint64_t hash;
} word;

/* The words of normalised code points cps[0..n) (single spaces between them) into w. */
static size_t split_words(const uint32_t *cps, size_t n, word *w) {
    size_t count = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        uint64_t h = 1469598103934665603ull; /* FNV-1a over the code points */
        while (j < n && cps[j] != ' ') h = (h ^ cps[j++]) * 1099511628211ull;
        w[count++] = (word){cps + i, j - i, h};
        i = j + 1;
    }
    return count;
}

static int same_word(const word *a, const word *b) {
    return a->hash == b->hash && a->len == b->len &&
           memcmp(a->start, b->start, a->len * sizeof *a->start) == 0;
}

/* ids[i] for words w[0..n): the index of the first word equal to w[i], found through an
 * open-addressing table of `size` slots (a power of two above n) holding word index + 1. */
static void intern_words(const word *w, size_t n, uint32_t *ids, uint32_t *table, size_t size) {
    memset(table, 0, size * sizeof *table);
    for (size_t i = 0; i < n; i++) {
        size_t slot = (size_t)w[i].hash & (size - 1);
        while (table[slot] && !same_word(&w[table[slot] - 1], &w[i]))
            slot = (slot + 1) & (size - 1);
        if (!table[slot]) table[slot] = (uint32_t)i + 1;
        ids[i] = table[slot] - 1;
    }
}

/* Word edits between the normalised texts a[0..n) and b[0..m); *words gets a's word count. The
 * scratch: words and ids for both texts, the table, a row. */
static int count_words(const uint32_t *a, size_t n, const uint32_t *b, size_t m, long *edits,
                       long *words, vit_error *err) {
    const size_t most = (n + 1) / 2 + (m + 1) / 2 + 2, size = 2 * most;
    size_t table_size = 1;
    while (table_size < size) table_size *= 2;
    word *w = malloc(most * sizeof *w);
    uint32_t *ids = malloc(most * sizeof *ids), *table = malloc(table_size * sizeof *table);
    long *row = malloc((most + 1) * sizeof *row);
    int rc = 0;
    if (!w || !ids || !table || !row) {
        rc = vit_fail(err, "out of memory comparing texts");
    } else {
        const size_t na = split_words(a, n, w), nb = split_words(b, m, w + na);
        intern_words(w, na + nb, ids, table, table_size);
        *edits = text_edit_distance(ids, na, ids + na, nb, row);
        *words = (long)na;
    }
    free(w), free(ids), free(table), free(row);
    return rc;
}

int text_errors_count(const char *ref, size_t ref_len, const char *hyp, size_t hyp_len,
                      text_errors *out, vit_error *err) {
    if (ref_len > TEXT_ERRORS_MAX_BYTES || hyp_len > TEXT_ERRORS_MAX_BYTES)
        return vit_fail(err, "a text of %zu bytes is too long to compare (at most %d)",
                        ref_len > hyp_len ? ref_len : hyp_len, TEXT_ERRORS_MAX_BYTES);
    uint32_t *a = malloc((ref_len + 1) * sizeof *a), *b = malloc((hyp_len + 1) * sizeof *b);
    long *row = malloc((hyp_len + 1) * sizeof *row);
    int rc = 0;
    if (!a || !b || !row) {
        rc = vit_fail(err, "out of memory comparing texts");
    } else {
        const size_t n = text_normalize_code_points(ref, ref_len, a);
        const size_t m = text_normalize_code_points(hyp, hyp_len, b);
        out->char_edits = text_edit_distance(a, n, b, m, row);
        out->chars = (long)n;
        rc = count_words(a, n, b, m, &out->word_edits, &out->words, err);
    }
    free(a), free(b), free(row);
    return rc;
}

void text_errors_add(text_errors *a, const text_errors *b) {
    a->char_edits += b->char_edits;
    a->chars += b->chars;
    a->word_edits += b->word_edits;
    a->words += b->words;
}

static double rate(long edits, long length) {
    if (length == 0) return edits > 0 ? 1.0 : 0.0;
    return (double)edits / (double)length;
}

double text_errors_cer(const text_errors *e) {
    return rate(e->char_edits, e->chars);
}

double text_errors_wer(const text_errors *e) {
    return rate(e->word_edits, e->words);
}
