/* Labelled TSV sentences: the line parser shared with `vit eval`, a whole file tokenized into
 * memory, padded batches. */
#include "vit/data/text_set.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "text/utf8.h"

/* ---- one line ---- */

/* s[0..n) for a message: at most 40 characters, invalid UTF-8 and control characters as '?'
 * (the reason ends up in JSON and on terminals). */
static void printable(const char *s, size_t n, char *out, size_t size) {
    size_t o = 0;
    int chars = 0;
    for (size_t i = 0; i < n && o + 8 < size; chars++) {
        if (chars == 40) {
            memcpy(out + o, "...", 3);
            o += 3;
            break;
        }
        const size_t at = i;
        const int32_t cp = utf8_decode((const uint8_t *)s, n, &i);
        if (cp < 0x20 || cp == 0x7F) {
            out[o++] = '?';
        } else {
            memcpy(out + o, s + at, i - at);
            o += i - at;
        }
    }
    out[o] = '\0';
}

/* Trims ASCII blanks (and the '\r' of a CRLF file) from both ends of s[0..*n). */
static const char *trim(const char *s, size_t *n) {
    while (*n > 0 && (*s == ' ' || *s == '\t' || *s == '\r')) s++, (*n)--;
    while (*n > 0 && (s[*n - 1] == ' ' || s[*n - 1] == '\t' || s[*n - 1] == '\r')) (*n)--;
    return s;
}

/* A decimal class index in range, else a label name (exact, then ignoring case), else -1. */
static int parse_label(const char *const *labels, int L, const char *s, size_t n) {
    size_t digits = 0;
    long long v = 0;
    while (digits < n && s[digits] >= '0' && s[digits] <= '9' && v <= L)
        v = 10 * v + (s[digits++] - '0');
    if (n > 0 && digits == n && v < L) return (int)v;
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < L; i++) {
            if (strlen(labels[i]) != n) continue;
            if (pass == 0 ? memcmp(labels[i], s, n) == 0 : strncasecmp(labels[i], s, n) == 0)
                return i;
        }
    }
    return -1;
}

/* "expected 0..1 or one of: negative, positive" (the names only while the list is short). */
static void expected_labels(const char *const *labels, int L, char *out, size_t size) {
    int o = snprintf(out, size, "expected 0..%d", L - 1);
    for (int i = 0; i < L && L <= 10 && o > 0 && (size_t)o < size; i++)
        o += snprintf(out + o, size - (size_t)o, "%s%s", i ? ", " : " or one of: ", labels[i]);
    if (L > 10 && o > 0 && (size_t)o < size)
        snprintf(out + o, size - (size_t)o, " or a label name");
}

/* Splits line s[0..n) into the sentence (its length *text_len) and the trimmed label field
 * *field[0..*flen). Returns 1, 0 for an empty line, or -1 with the reason in why. */
static int split_line(const char *s, size_t n, size_t *text_len, const char **field, size_t *flen,
                      char *why, size_t why_size) {
    while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r')) n--;
    if (n == 0) return 0;
    const char *tab = memchr(s, '\t', n);
    if (!tab) {
        snprintf(why, why_size, "no tab between sentence and label");
        return -1;
    }
    *flen = n - (size_t)(tab + 1 - s);
    if (memchr(tab + 1, '\t', *flen)) {
        snprintf(why, why_size, "more than one tab (expected sentence<TAB>label)");
        return -1;
    }
    *field = trim(tab + 1, flen);
    *text_len = (size_t)(tab - s);
    return 1;
}

int text_tsv_parse_line(const char *s, size_t n, const char *const *labels, int num_labels,
                        text_tsv_line *out, char *why, size_t why_size) {
    size_t text_len, flen;
    const char *field;
    const int split = split_line(s, n, &text_len, &field, &flen, why, why_size);
    if (split <= 0) return split;
    if (!labels) { /* a score */
        char number[64], *end;
        const size_t k = flen < sizeof number - 1 ? flen : sizeof number - 1;
        memcpy(number, field, k);
        number[k] = '\0';
        const double v = k ? strtod(number, &end) : 0.0;
        if (!k || *end || k < flen || !isfinite(v) || fabs(v) > 3e38) {
            char shown[400];
            printable(field, flen, shown, sizeof shown);
            snprintf(why, why_size, "the score '%s' is not a finite number", shown);
            return -1;
        }
        *out = (text_tsv_line){.text = s, .len = text_len, .score = (float)v};
        return 1;
    }
    const int label = parse_label(labels, num_labels, field, flen);
    if (label < 0) {
        char shown[400], expected[400];
        printable(field, flen, shown, sizeof shown);
        expected_labels(labels, num_labels, expected, sizeof expected);
        if (flen)
            snprintf(why, why_size, "unknown label '%s' (%s)", shown, expected);
        else
            snprintf(why, why_size, "empty label");
        return -1;
    }
    *out = (text_tsv_line){.text = s, .len = text_len, .label = label};
    return 1;
}

int text_tsv_parse_pair(const char *s, size_t n, const char *const *labels, int num_labels,
                        text_tsv_line *out, char *why, size_t why_size) {
    size_t end = n, tabs = 0;
    while (end > 0 && (s[end - 1] == '\n' || s[end - 1] == '\r')) end--;
    if (end == 0) return 0;
    for (size_t i = 0; i < end; i++) tabs += s[i] == '\t';
    if (tabs != 2) {
        snprintf(why, why_size, "%s (expected text<TAB>text<TAB>label)",
                 tabs < 2 ? (tabs ? "one tab" : "no tab") : "more than two tabs");
        return -1;
    }
    const char *tab = memchr(s, '\t', end), *rest = tab + 1;
    if (text_tsv_parse_line(rest, n - (size_t)(rest - s), labels, num_labels, out, why, why_size) !=
        1)
        return -1;
    out->text_b = out->text, out->len_b = out->len;
    out->text = s, out->len = (size_t)(tab - s);
    return 1;
}

/* ---- a whole file ---- */

static int compare_strings(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Adds label s[0..n) to the distinct set names[0..*count) unless present. */
static int add_distinct(char ***names, int *count, int *cap, const char *s, size_t n) {
    for (int i = 0; i < *count; i++)
        if (strlen((*names)[i]) == n && memcmp((*names)[i], s, n) == 0) return 0;
    if (*count == *cap) {
        *cap = *cap ? 2 * *cap : 8;
        char **grown = realloc(*names, sizeof *grown * (size_t)*cap);
        if (!grown) return -1;
        *names = grown;
    }
    (*names)[*count] = strndup(s, n);
    return (*names)[(*count)++] ? 0 : -1;
}

static void free_names(char **names, int n) {
    for (int i = 0; i < n; i++) free(names[i]);
    free(names);
}

/* Distinct names become LABEL_i names when all are indices (the largest index sets the count).
 * Returns 1 when they did, 0 when they are names, -1 when out of memory. */
static int index_names(char ***names, int *count) {
    long max = -1;
    for (int i = 0; i < *count; i++) {
        const char *s = (*names)[i];
        if (!*s || strspn(s, "0123456789") != strlen(s) || strlen(s) > 6) return 0;
        const long v = strtol(s, NULL, 10);
        max = v > max ? v : max;
    }
    char **out = calloc((size_t)max + 1, sizeof *out);
    for (long i = 0; out && i <= max; i++) {
        char buf[32];
        snprintf(buf, sizeof buf, "LABEL_%ld", i);
        if (!(out[i] = strdup(buf))) {
            free_names(out, (int)i);
            out = NULL;
        }
    }
    if (!out) return -1;
    free_names(*names, *count);
    *names = out;
    *count = (int)max + 1;
    return 1;
}

int text_tsv_classes(const char *path, int pairs, char ***names, int *count, vit_error *err) {
    FILE *in = fopen(path, "r");
    if (!in) return vit_fail(err, "%s: %s", path, strerror(errno));
    char *buf = NULL, **out = NULL;
    size_t bufcap = 0;
    int n = 0, cap = 0, rc = 0;
    long line = 0;
    ssize_t len;
    while (rc == 0 && (len = getline(&buf, &bufcap, in)) >= 0) {
        if (++line == 1) continue; /* the header */
        size_t text_len, flen;
        const char *field, *tab = pairs ? memchr(buf, '\t', (size_t)len) : NULL;
        char why[200];
        /* a pair's second text and label are split as a sentence and its label */
        const char *from = tab ? tab + 1 : buf;
        const int split = split_line(from, (size_t)len - (size_t)(from - buf), &text_len, &field,
                                     &flen, why, sizeof why);
        if (split < 0)
            rc = vit_fail(err, "%s:%ld (data line %ld): %s", path, line, line - 1, why);
        else if (split > 0 && add_distinct(&out, &n, &cap, field, flen) != 0)
            rc = vit_fail(err, "out of memory");
    }
    free(buf);
    fclose(in);
    if (rc == 0 && n == 0) rc = vit_fail(err, "%s: no labelled sentence", path);
    const int indices = rc == 0 ? index_names(&out, &n) : 0;
    if (indices < 0) rc = vit_fail(err, "out of memory");
    if (rc != 0) {
        free_names(out, n);
        return -1;
    }
    if (!indices) qsort(out, (size_t)n, sizeof *out, compare_strings);
    *names = out;
    *count = n;
    return 0;
}

/* Room for one more sentence of up to max_len ids; *cap_rows and *cap_ids grow by doubling. */
static int reserve(text_set *s, size_t *cap_rows, size_t *cap_ids) {
    if ((size_t)s->count + 2 > *cap_rows) {
        const size_t cap = *cap_rows ? 2 * *cap_rows : 1024;
        size_t *offset = realloc(s->offset, cap * sizeof *offset);
        if (offset) s->offset = offset;
        int *labels = realloc(s->labels, cap * sizeof *labels);
        if (labels) s->labels = labels;
        long *lines = realloc(s->data_line, cap * sizeof *lines);
        if (lines) s->data_line = lines;
        float *scores = s->scores ? realloc(s->scores, cap * sizeof *scores) : NULL;
        if (scores) s->scores = scores;
        if (!offset || !labels || !lines || (s->scores && !scores)) return -1;
        if (!*cap_rows) s->offset[0] = 0;
        *cap_rows = cap;
    }
    const size_t need_ids = s->offset[s->count] + (size_t)s->max_len;
    if (need_ids > *cap_ids) {
        size_t cap = *cap_ids ? *cap_ids : 4096;
        while (cap < need_ids) cap *= 2;
        int32_t *ids = realloc(s->ids, cap * sizeof *ids);
        if (ids) s->ids = ids;
        int32_t *types = s->types ? realloc(s->types, cap * sizeof *types) : NULL;
        if (types) s->types = types;
        int *tags = s->tags ? realloc(s->tags, cap * sizeof *tags) : NULL;
        if (tags) s->tags = tags;
        if (!ids || (s->types && !types) || (s->tags && !tags)) return -1;
        *cap_ids = cap;
    }
    return 0;
}

/* Reads, parses and tokenizes every data line of in. */
static int load_lines(text_set *s, FILE *in, const char *path, const text_tokenizer *tok,
                      text_tokenizer_scratch *scratch, const char *const *labels, int num_labels,
                      vit_error *err) {
    char *buf = NULL;
    size_t bufcap = 0, cap_rows = 0, cap_ids = 0;
    long line = 0;
    ssize_t n;
    int rc = 0;
    if (reserve(s, &cap_rows, &cap_ids) != 0) return vit_fail(err, "%s: out of memory", path);
    errno = 0;
    while (rc == 0 && (n = getline(&buf, &bufcap, in)) >= 0) {
        if (++line == 1) continue; /* the header */
        text_tsv_line l;
        char why[1000];
        const int got = (s->types ? text_tsv_parse_pair : text_tsv_parse_line)(
            buf, (size_t)n, labels, num_labels, &l, why, sizeof why);
        if (got < 0) {
            rc = vit_fail(err, "%s:%ld (data line %ld): %s", path, line, line - 1, why);
        } else if (got > 0) {
            if (reserve(s, &cap_rows, &cap_ids) != 0) {
                rc = vit_fail(err, "%s: out of memory at line %ld", path, line);
                break;
            }
            int32_t *ids = s->ids + s->offset[s->count];
            const int len =
                s->types ? text_tokenizer_encode_pair(tok, scratch, l.text, l.len, l.text_b,
                                                      l.len_b, s->max_len, ids,
                                                      s->types + s->offset[s->count], err)
                         : text_tokenizer_encode(tok, scratch, l.text, l.len, s->max_len, ids, err);
            if (len < 0) {
                rc = -1;
                break;
            }
            s->labels[s->count] = l.label;
            if (s->scores) s->scores[s->count] = l.score;
            s->data_line[s->count] = line - 1;
            s->offset[s->count + 1] = s->offset[s->count] + (size_t)len;
            s->longest = len > s->longest ? len : s->longest;
            s->count++;
        }
        errno = 0;
    }
    if (rc == 0 && (ferror(in) || errno == ENOMEM))
        rc = vit_fail(err, "%s: %s", path, strerror(errno ? errno : EIO));
    free(buf);
    return rc;
}

int text_set_load(text_set *out, const char *path, const text_tokenizer *tok, int max_len,
                  int pairs, const char *const *labels, int num_labels, vit_error *err) {
    memset(out, 0, sizeof *out);
    if (max_len < 2) return vit_fail(err, "max_len %d: sentences need at least 2 ids", max_len);
    if (labels && num_labels < 1) return vit_fail(err, "no labels");
    FILE *in = fopen(path, "r");
    if (!in) return vit_fail(err, "%s: %s", path, strerror(errno));
    text_tokenizer_scratch *scratch = text_tokenizer_scratch_create(tok);
    out->max_len = max_len;
    /* padding is masked out, so any valid id will do where the vocabulary has no [PAD] */
    out->pad_id = text_tokenizer_pad_id(tok) >= 0 ? text_tokenizer_pad_id(tok) : 0;
    /* reserve grows types beside ids once it exists */
    if (pairs) out->types = malloc(sizeof *out->types);
    if (!labels) out->scores = malloc(sizeof *out->scores); /* reserve grows them */
    int rc = scratch && (!pairs || out->types) && (labels || out->scores)
                 ? load_lines(out, in, path, tok, scratch, labels, num_labels, err)
                 : vit_fail(err, "out of memory");
    if (rc == 0 && out->count == 0) rc = vit_fail(err, "%s: no labelled sentence", path);
    text_tokenizer_scratch_free(scratch);
    fclose(in);
    if (rc != 0) text_set_free(out);
    return rc;
}

void text_set_free(text_set *s) {
    free(s->ids);
    free(s->scores);
    free(s->types);
    free(s->tags);
    free(s->offset);
    free(s->labels);
    free(s->data_line);
    memset(s, 0, sizeof *s);
}

int text_set_batch(const text_set *s, const int *idx, int n, int32_t *ids, int32_t *types,
                   uint8_t *mask, int *labels) {
    int T = 1;
    for (int b = 0; b < n; b++) {
        const int len = (int)(s->offset[idx[b] + 1] - s->offset[idx[b]]);
        T = len > T ? len : T;
    }
    for (int b = 0; b < n; b++) {
        const size_t at = s->offset[idx[b]];
        const int len = (int)(s->offset[idx[b] + 1] - at);
        int32_t *row = ids + (size_t)b * T;
        memcpy(row, s->ids + at, sizeof *row * (size_t)len);
        for (int t = len; t < T; t++) row[t] = s->pad_id;
        int32_t *type = types ? types + (size_t)b * T : NULL;
        for (int t = 0; type && t < T; t++) type[t] = s->types && t < len ? s->types[at + t] : 0;
        memset(mask + (size_t)b * T, 1, (size_t)len);
        memset(mask + (size_t)b * T + len, 0, (size_t)(T - len));
        if (labels) labels[b] = s->labels[idx[b]];
    }
    return T;
}

/* ---- tagged words ---- */

/* A CoNLL line's token and label fields (the first and the last of its tab- or space-separated
 * fields). Returns 1, 0 for a sentence break (a blank or -DOCSTART- line), -1 for a line of one
 * field. */
static int split_tag_line(const char *s, size_t n, const char **word, size_t *wlen,
                          const char **label, size_t *llen) {
    while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r')) n--;
    s = trim(s, &n);
    if (n == 0) return 0;
    const size_t first = strcspn(s, " \t");
    if (first >= n) return -1;
    *word = s, *wlen = first;
    size_t last = n;
    while (last > 0 && s[last - 1] != ' ' && s[last - 1] != '\t') last--;
    *label = s + last, *llen = n - last;
    return !(first == 10 && memcmp(s, "-DOCSTART-", 10) == 0);
}

int tag_file_labels(const char *path, char ***names, int *count, vit_error *err) {
    FILE *in = fopen(path, "r");
    if (!in) return vit_fail(err, "%s: %s", path, strerror(errno));
    char *buf = NULL, **out = NULL;
    size_t bufcap = 0;
    int n = 0, cap = 0, rc = 0;
    long line = 0;
    ssize_t len;
    while (rc == 0 && (len = getline(&buf, &bufcap, in)) >= 0) {
        line++;
        const char *word, *label;
        size_t wlen, llen;
        const int got = split_tag_line(buf, (size_t)len, &word, &wlen, &label, &llen);
        if (got < 0)
            rc = vit_fail(err, "%s:%ld: expected a token and its label (tab or space separated)",
                          path, line);
        else if (got > 0 && add_distinct(&out, &n, &cap, label, llen) != 0)
            rc = vit_fail(err, "out of memory");
    }
    free(buf);
    fclose(in);
    if (rc == 0 && n == 0) rc = vit_fail(err, "%s: no tagged token", path);
    if (rc != 0) {
        free_names(out, n);
        return -1;
    }
    qsort(out, (size_t)n, sizeof *out, compare_strings);
    *names = out;
    *count = n;
    return 0;
}

typedef struct {
    text_set *s;
    const text_tokenizer *tok;
    text_tokenizer_scratch *scratch;
    int32_t *pieces; /* [max_len] one word's encoding */
    char *spaced;    /* " " + the word */
    size_t spaced_cap;
    int32_t start, end; /* the tokens around a sentence */
    int len;            /* ids of the sentence being built, its start token included */
    long first_line;
} tag_reader;

/* The sentence being built closed with the end token and counted (an empty one is dropped). */
static void close_sentence(tag_reader *r) {
    text_set *s = r->s;
    if (r->len <= 1) {
        r->len = 0;
        return;
    }
    const size_t at = s->offset[s->count] + (size_t)r->len;
    s->ids[at] = r->end, s->tags[at] = -100;
    r->len++;
    s->labels[s->count] = 0;
    s->data_line[s->count] = r->first_line;
    s->offset[s->count + 1] = s->offset[s->count] + (size_t)r->len;
    s->longest = r->len > s->longest ? r->len : s->longest;
    s->count++;
    r->len = 0;
}

/* One word's pieces appended (its label on the first), while they fit before the end token. */
static int add_word(tag_reader *r, const char *word, size_t wlen, int label, vit_error *err) {
    text_set *s = r->s;
    if (wlen + 2 > r->spaced_cap) {
        char *grown = realloc(r->spaced, wlen + 2);
        if (!grown) return vit_fail(err, "out of memory");
        r->spaced = grown, r->spaced_cap = wlen + 2;
    }
    r->spaced[0] = ' ';
    memcpy(r->spaced + 1, word, wlen);
    const int n =
        text_tokenizer_encode(r->tok, r->scratch, r->spaced, wlen + 1, s->max_len, r->pieces, err);
    if (n < 0) return -1;
    const size_t base = s->offset[s->count];
    if (r->len == 0) s->ids[base] = r->start, s->tags[base] = -100, r->len = 1;
    for (int k = 1; k < n - 1 && r->len < s->max_len - 1; k++, r->len++) {
        s->ids[base + (size_t)r->len] = r->pieces[k];
        s->tags[base + (size_t)r->len] = k == 1 ? label : -100;
    }
    return 0;
}

static int read_tags(tag_reader *r, FILE *in, const char *path, const char *const *labels,
                     int num_labels, vit_error *err) {
    text_set *s = r->s;
    size_t bufcap = 0, cap_rows = 0, cap_ids = 0;
    char *buf = NULL;
    long line = 0;
    ssize_t n;
    int rc = reserve(s, &cap_rows, &cap_ids) == 0 ? 0 : vit_fail(err, "out of memory");
    while (rc == 0 && (n = getline(&buf, &bufcap, in)) >= 0) {
        line++;
        const char *word, *label;
        size_t wlen, llen;
        const int got = split_tag_line(buf, (size_t)n, &word, &wlen, &label, &llen);
        if (got < 0) {
            rc = vit_fail(err, "%s:%ld: expected a token and its label (tab or space separated)",
                          path, line);
            break;
        }
        if (got == 0) {
            close_sentence(r);
            continue;
        }
        int k = 0;
        while (k < num_labels &&
               !(strlen(labels[k]) == llen && memcmp(labels[k], label, llen) == 0))
            k++;
        if (k == num_labels) {
            char shown[400];
            printable(label, llen, shown, sizeof shown);
            rc = vit_fail(err, "%s:%ld: unknown label '%s' (not one of the model's %d)", path, line,
                          shown, num_labels);
            break;
        }
        if (r->len == 0) {
            if (reserve(s, &cap_rows, &cap_ids) != 0) {
                rc = vit_fail(err, "%s: out of memory at line %ld", path, line);
                break;
            }
            r->first_line = line;
        }
        rc = add_word(r, word, wlen, k, err);
    }
    if (rc == 0) close_sentence(r);
    free(buf);
    return rc;
}

int text_set_load_tags(text_set *out, const char *path, const text_tokenizer *tok, int max_len,
                       const char *const *labels, int num_labels, vit_error *err) {
    memset(out, 0, sizeof *out);
    if (max_len < 3) return vit_fail(err, "max_len %d: a tagged sentence needs 3 ids", max_len);
    FILE *in = fopen(path, "r");
    if (!in) return vit_fail(err, "%s: %s", path, strerror(errno));
    tag_reader r = {.s = out, .tok = tok, .scratch = text_tokenizer_scratch_create(tok)};
    out->max_len = max_len;
    out->pad_id = text_tokenizer_pad_id(tok) >= 0 ? text_tokenizer_pad_id(tok) : 0;
    out->tags = malloc(sizeof *out->tags); /* reserve grows it beside ids */
    r.pieces = malloc(sizeof *r.pieces * (size_t)max_len);
    int rc = r.scratch && out->tags && r.pieces ? 0 : vit_fail(err, "out of memory");
    /* the tokens a sentence starts and ends with: those of an empty text */
    const int n =
        rc == 0 ? text_tokenizer_encode(tok, r.scratch, "", 0, max_len, r.pieces, err) : -1;
    if (rc == 0 && n < 2)
        rc = n < 0 ? -1
                   : vit_fail(err, "the %s tokenizer puts no start and end tokens around a text",
                              text_tokenizer_kind(tok));
    if (rc == 0) {
        r.start = r.pieces[0], r.end = r.pieces[n - 1];
        rc = read_tags(&r, in, path, labels, num_labels, err);
    }
    if (rc == 0 && out->count == 0) rc = vit_fail(err, "%s: no tagged sentence", path);
    text_tokenizer_scratch_free(r.scratch);
    free(r.pieces);
    free(r.spaced);
    fclose(in);
    if (rc != 0) text_set_free(out);
    return rc;
}

int text_set_batch_tags(const text_set *s, const int *idx, int n, int T, int *tags) {
    int counted = 0;
    for (int b = 0; b < n; b++) {
        const size_t at = s->offset[idx[b]];
        const int len = (int)(s->offset[idx[b] + 1] - at);
        for (int t = 0; t < T; t++) {
            const int tag = t < len ? s->tags[at + t] : -100;
            tags[(size_t)b * T + t] = tag;
            counted += tag != -100;
        }
    }
    return counted;
}

/* ---- columns of texts ---- */

/* One text into s (its ids after the others), from data line `line`. */
static int add_text(text_set *s, size_t *cap_rows, size_t *cap_ids, const text_tokenizer *tok,
                    text_tokenizer_scratch *scratch, const char *text, size_t len, long line,
                    vit_error *err) {
    if (reserve(s, cap_rows, cap_ids) != 0) return vit_fail(err, "out of memory");
    int32_t *ids = s->ids + s->offset[s->count];
    const int n = text_tokenizer_encode(tok, scratch, text, len, s->max_len, ids, err);
    if (n < 0) return -1;
    s->labels[s->count] = 0;
    s->data_line[s->count] = line;
    s->offset[s->count + 1] = s->offset[s->count] + (size_t)n;
    s->longest = n > s->longest ? n : s->longest;
    s->count++;
    return 0;
}

int text_set_load_columns(text_set *cols, int max_columns, const char *path,
                          const text_tokenizer *tok, int max_len, vit_error *err) {
    memset(cols, 0, sizeof *cols * (size_t)max_columns);
    if (max_len < 2) return vit_fail(err, "max_len %d: texts need at least 2 ids", max_len);
    FILE *in = fopen(path, "r");
    if (!in) return vit_fail(err, "%s: %s", path, strerror(errno));
    text_tokenizer_scratch *scratch = text_tokenizer_scratch_create(tok);
    size_t cap_rows[8] = {0}, cap_ids[8] = {0}, bufcap = 0;
    char *buf = NULL;
    long line = 0;
    ssize_t n;
    int k = 0, rc = scratch && max_columns <= 8 ? 0 : vit_fail(err, "out of memory");
    for (int c = 0; c < max_columns; c++) {
        cols[c].max_len = max_len;
        cols[c].pad_id = text_tokenizer_pad_id(tok) >= 0 ? text_tokenizer_pad_id(tok) : 0;
    }
    while (rc == 0 && (n = getline(&buf, &bufcap, in)) >= 0) {
        if (++line == 1) continue; /* the header */
        size_t end = (size_t)n;
        while (end > 0 && (buf[end - 1] == '\n' || buf[end - 1] == '\r')) end--;
        if (end == 0) continue;
        int fields = 1;
        for (size_t i = 0; i < end; i++) fields += buf[i] == '\t';
        if (k == 0) k = fields;
        if (fields != k || k < 2 || k > max_columns) {
            rc = vit_fail(err, "%s:%ld (data line %ld): %d texts; expected %s", path, line,
                          line - 1, fields,
                          k >= 2 && k <= max_columns ? "as many as the first line's"
                                                     : "2 or 3, tab separated");
            break;
        }
        const char *at = buf;
        for (int c = 0; rc == 0 && c < k; c++) {
            const char *tab = memchr(at, '\t', end - (size_t)(at - buf));
            const size_t len = tab ? (size_t)(tab - at) : end - (size_t)(at - buf);
            rc =
                add_text(&cols[c], &cap_rows[c], &cap_ids[c], tok, scratch, at, len, line - 1, err);
            at += len + 1;
        }
    }
    free(buf);
    text_tokenizer_scratch_free(scratch);
    fclose(in);
    if (rc == 0 && k == 0) rc = vit_fail(err, "%s: no texts after the header", path);
    if (rc != 0) {
        for (int c = 0; c < max_columns; c++) text_set_free(&cols[c]);
        return -1;
    }
    return k;
}
