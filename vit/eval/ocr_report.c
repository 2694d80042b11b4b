/* Error rates of a text recogniser: per-line counts kept, summed, sorted for the worst lines. */
#include "vit/eval/ocr_report.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char *file, *truth, *recognised;
    text_errors e;
} scored_line;

typedef struct {
    char *file, *reason;
} skipped_line;

struct ocr_report {
    scored_line *lines;
    int count, cap;
    skipped_line *skipped;
    int num_skipped, skipped_cap;
    text_errors totals;
    int exact;
};

ocr_report *ocr_report_create(vit_error *err) {
    ocr_report *r = calloc(1, sizeof *r);
    if (!r) vit_fail(err, "out of memory");
    return r;
}

void ocr_report_free(ocr_report *r) {
    if (!r) return;
    for (int i = 0; i < r->count; i++)
        free(r->lines[i].file), free(r->lines[i].truth), free(r->lines[i].recognised);
    for (int i = 0; i < r->num_skipped; i++) free(r->skipped[i].file), free(r->skipped[i].reason);
    free(r->lines);
    free(r->skipped);
    free(r);
}

/* Room for one more element in *items (count used of *cap). */
static int grow(void **items, int count, int *cap, size_t size) {
    if (count < *cap) return 0;
    const int n = *cap ? 2 * *cap : 64;
    void *more = realloc(*items, (size_t)n * size);
    if (!more) return -1;
    *items = more, *cap = n;
    return 0;
}

int ocr_report_add(ocr_report *r, const char *file, const char *truth, const char *recognised,
                   vit_error *err) {
    text_errors e;
    if (text_errors_count(truth, strlen(truth), recognised, strlen(recognised), &e, err) != 0)
        return -1;
    if (grow((void **)&r->lines, r->count, &r->cap, sizeof *r->lines) != 0)
        return vit_fail(err, "out of memory");
    scored_line *l = &r->lines[r->count];
    l->file = strdup(file), l->truth = strdup(truth), l->recognised = strdup(recognised);
    l->e = e;
    if (!l->file || !l->truth || !l->recognised) {
        free(l->file), free(l->truth), free(l->recognised);
        return vit_fail(err, "out of memory");
    }
    r->count++;
    text_errors_add(&r->totals, &e);
    r->exact += e.char_edits == 0;
    return 0;
}

int ocr_report_skip(ocr_report *r, const char *file, const char *reason) {
    if (grow((void **)&r->skipped, r->num_skipped, &r->skipped_cap, sizeof *r->skipped) != 0)
        return -1;
    skipped_line *s = &r->skipped[r->num_skipped];
    s->file = strdup(file), s->reason = strdup(reason);
    if (!s->file || !s->reason) {
        free(s->file), free(s->reason);
        return -1;
    }
    r->num_skipped++;
    return 0;
}

int ocr_report_count(const ocr_report *r) {
    return r->count;
}

int ocr_report_skipped(const ocr_report *r) {
    return r->num_skipped;
}

int ocr_report_exact(const ocr_report *r) {
    return r->exact;
}

text_errors ocr_report_totals(const ocr_report *r) {
    return r->totals;
}

/* ---- the worst lines ---- */

static int worse(const void *a, const void *b, void *report) {
    const ocr_report *r = report;
    const int i = *(const int *)a, j = *(const int *)b;
    const double ci = text_errors_cer(&r->lines[i].e), cj = text_errors_cer(&r->lines[j].e);
    if (ci != cj) return ci < cj ? 1 : -1;
    const long ei = r->lines[i].e.char_edits, ej = r->lines[j].e.char_edits;
    if (ei != ej) return ei < ej ? 1 : -1;
    return (i > j) - (i < j);
}

/* The indices of the lines with errors, worst first, at most `most`; *n gets their number. NULL
 * when there is none (or no memory). */
static int *worst_lines(const ocr_report *r, int most, int *n) {
    int *order = malloc(sizeof *order * (size_t)(r->count ? r->count : 1));
    *n = 0;
    if (!order) return NULL;
    for (int i = 0; i < r->count; i++)
        if (r->lines[i].e.char_edits > 0) order[(*n)++] = i;
    qsort_r(order, (size_t)*n, sizeof *order, worse, (void *)r);
    if (*n > most) *n = most;
    return order;
}

/* ---- output ---- */

#define NORMALISATION                                                                              \
    "white space collapsed, nothing else (case, accents, quotes and Unicode forms compared as "    \
    "they are)"

static double percent(double rate) {
    return 100.0 * rate;
}

/* text on one line of the terminal: control characters as '?'. */
static void put_printable(const char *text, FILE *out) {
    for (const unsigned char *p = (const unsigned char *)text; *p; p++)
        fputc(*p < 0x20 || *p == 0x7F ? '?' : *p, out);
}

static void print_worst(const ocr_report *r, int most, FILE *out) {
    int n;
    int *order = worst_lines(r, most, &n);
    if (n > 0) fprintf(out, "\nworst lines (line CER, character edits / characters, file):\n");
    for (int k = 0; k < n; k++) {
        const scored_line *l = &r->lines[order[k]];
        fprintf(out, "  %6.1f%%  %ld/%ld  %s\n      true: ", percent(text_errors_cer(&l->e)),
                l->e.char_edits, l->e.chars, l->file);
        put_printable(l->truth, out);
        fputs("\n      read: ", out);
        put_printable(l->recognised, out);
        fputc('\n', out);
    }
    free(order);
}

void ocr_report_print(const ocr_report *r, const ocr_summary *s, FILE *out) {
    const text_errors t = r->totals;
    if (s->model)
        fprintf(out, "model: %s\n", s->model);
    else
        fprintf(out, "hypotheses: %s\n", s->hypotheses);
    fprintf(out, "data:  %s: %d line%s scored, %d skipped\n", s->data, r->count,
            r->count == 1 ? "" : "s", r->num_skipped);
    fprintf(out, "CER:   %.2f%% (%ld character edits / %ld characters)\n",
            percent(text_errors_cer(&t)), t.char_edits, t.chars);
    fprintf(out, "WER:   %.2f%% (%ld word edits / %ld words)\n", percent(text_errors_wer(&t)),
            t.word_edits, t.words);
    fprintf(out, "lines read exactly: %d / %d (%.1f%%)\n", r->exact, r->count,
            r->count ? 100.0 * r->exact / r->count : 0.0);
    if (s->seconds > 0)
        fprintf(out, "time:  %.2f s, %.1f lines/s\n", s->seconds, r->count / s->seconds);
    fprintf(out, "normalisation: " NORMALISATION "\n");
    print_worst(r, s->worst, out);
    if (r->num_skipped) fprintf(out, "\nskipped:\n");
    for (int i = 0; i < r->num_skipped; i++)
        fprintf(out, "  %s: %s\n", r->skipped[i].file, r->skipped[i].reason);
}

static cJSON *line_json(const scored_line *l) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "file", l->file);
    cJSON_AddStringToObject(o, "true", l->truth);
    cJSON_AddStringToObject(o, "read", l->recognised);
    cJSON_AddNumberToObject(o, "cer", text_errors_cer(&l->e));
    cJSON_AddNumberToObject(o, "char_edits", (double)l->e.char_edits);
    cJSON_AddNumberToObject(o, "chars", (double)l->e.chars);
    cJSON_AddNumberToObject(o, "word_edits", (double)l->e.word_edits);
    cJSON_AddNumberToObject(o, "words", (double)l->e.words);
    return o;
}

static void add_counts(cJSON *o, const ocr_report *r, const ocr_summary *s) {
    const text_errors t = r->totals;
    cJSON_AddNumberToObject(o, "lines", r->count);
    cJSON_AddNumberToObject(o, "skipped", r->num_skipped);
    cJSON_AddNumberToObject(o, "cer", text_errors_cer(&t));
    cJSON_AddNumberToObject(o, "wer", text_errors_wer(&t));
    cJSON_AddNumberToObject(o, "char_edits", (double)t.char_edits);
    cJSON_AddNumberToObject(o, "chars", (double)t.chars);
    cJSON_AddNumberToObject(o, "word_edits", (double)t.word_edits);
    cJSON_AddNumberToObject(o, "words", (double)t.words);
    cJSON_AddNumberToObject(o, "exact", r->exact);
    if (s->seconds > 0) {
        cJSON_AddNumberToObject(o, "seconds", s->seconds);
        cJSON_AddNumberToObject(o, "lines_per_second", r->count / s->seconds);
    }
    cJSON_AddStringToObject(o, "normalisation", NORMALISATION);
}

int ocr_report_write_json(const ocr_report *r, const ocr_summary *s, FILE *out) {
    cJSON *o = cJSON_CreateObject();
    if (s->model)
        cJSON_AddStringToObject(o, "model", s->model);
    else
        cJSON_AddStringToObject(o, "hypotheses", s->hypotheses);
    cJSON_AddStringToObject(o, "data", s->data);
    add_counts(o, r, s);
    cJSON *worst = cJSON_AddArrayToObject(o, "worst");
    int n;
    int *order = worst_lines(r, s->worst, &n);
    for (int k = 0; k < n; k++) cJSON_AddItemToArray(worst, line_json(&r->lines[order[k]]));
    free(order);
    cJSON *errors = cJSON_AddArrayToObject(o, "errors");
    for (int i = 0; i < r->num_skipped; i++) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "file", r->skipped[i].file);
        cJSON_AddStringToObject(e, "error", r->skipped[i].reason);
        cJSON_AddItemToArray(errors, e);
    }
    char *text = cJSON_Print(o);
    cJSON_Delete(o);
    const int rc = text && fprintf(out, "%s\n", text) >= 0 ? 0 : -1;
    free(text);
    return rc;
}

/* text with tabs and line breaks written as spaces (a TSV field). */
static void put_field(const char *text, FILE *out) {
    for (const char *p = text; *p; p++)
        fputc(*p == '\t' || *p == '\n' || *p == '\r' ? ' ' : *p, out);
}

int ocr_report_write_lines(const ocr_report *r, FILE *out) {
    fputs("file\ttrue\tread\tchar_edits\tchars\n", out);
    for (int i = 0; i < r->count; i++) {
        const scored_line *l = &r->lines[i];
        put_field(l->file, out);
        fputc('\t', out);
        put_field(l->truth, out);
        fputc('\t', out);
        put_field(l->recognised, out);
        fprintf(out, "\t%ld\t%ld\n", l->e.char_edits, l->e.chars);
    }
    return ferror(out) ? -1 : 0;
}
