#include "vit/eval/report.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "image/draw.h"
#include "image/plot.h"

typedef struct {
    char *input, *reason;
} skipped_input;

struct eval_report {
    int labels;
    int count, top1, top5;
    int *confusion; /* [labels, labels]: rows true, columns predicted */
    skipped_input *skipped;
    int num_skipped, cap_skipped;
};

eval_report *eval_report_create(int num_labels, vit_error *err) {
    eval_report *r = calloc(1, sizeof *r);
    if (r) r->confusion = calloc((size_t)num_labels * num_labels, sizeof *r->confusion);
    if (!r || !r->confusion) {
        eval_report_free(r);
        return vit_fail(err, "out of memory for a %d-class report", num_labels), NULL;
    }
    r->labels = num_labels;
    return r;
}

void eval_report_free(eval_report *r) {
    if (!r) return;
    for (int i = 0; i < r->num_skipped; i++) {
        free(r->skipped[i].input);
        free(r->skipped[i].reason);
    }
    free(r->skipped);
    free(r->confusion);
    free(r);
}

void eval_score(const float *probs, int labels, int true_label, int *pred, int *in_top5) {
    int best = 0, above = 0; /* classes scored strictly higher than the true one */
    for (int j = 1; j < labels; j++)
        if (probs[j] > probs[best]) best = j;
    for (int j = 0; j < labels; j++) above += probs[j] > probs[true_label];
    *pred = best;
    *in_top5 = above < 5;
}

void eval_report_add_result(eval_report *r, int true_label, int pred, int in_top5) {
    r->count++;
    r->top1 += pred == true_label;
    r->top5 += in_top5 != 0;
    r->confusion[(size_t)true_label * r->labels + pred]++;
}

int eval_report_add(eval_report *r, int true_label, const float *probs) {
    int pred, in_top5;
    eval_score(probs, r->labels, true_label, &pred, &in_top5);
    eval_report_add_result(r, true_label, pred, in_top5);
    return pred;
}

int eval_report_skip(eval_report *r, const char *input, const char *reason) {
    if (r->num_skipped == r->cap_skipped) {
        int cap = r->cap_skipped ? 2 * r->cap_skipped : 16;
        skipped_input *grown = realloc(r->skipped, sizeof *grown * (size_t)cap);
        if (!grown) return -1;
        r->skipped = grown;
        r->cap_skipped = cap;
    }
    skipped_input *s = &r->skipped[r->num_skipped];
    /* Error messages usually start with the input's name; keep the reason alone. */
    size_t n = strlen(input);
    if (strncmp(reason, input, n) == 0 && reason[n] == ':' && reason[n + 1] == ' ') reason += n + 2;
    s->input = strdup(input);
    s->reason = strdup(reason);
    if (!s->input || !s->reason) {
        free(s->input);
        free(s->reason);
        return -1;
    }
    r->num_skipped++;
    return 0;
}

int eval_report_count(const eval_report *r) {
    return r->count;
}
int eval_report_skipped(const eval_report *r) {
    return r->num_skipped;
}
double eval_report_top1(const eval_report *r) {
    return r->count ? (double)r->top1 / r->count : 0.0;
}
double eval_report_top5(const eval_report *r) {
    return r->count ? (double)r->top5 / r->count : 0.0;
}

typedef struct {
    int index, count, correct, predicted;
    double precision, recall;
} class_stats;

static class_stats stats_of(const eval_report *r, int c) {
    class_stats s = {.index = c};
    for (int j = 0; j < r->labels; j++) {
        s.count += r->confusion[(size_t)c * r->labels + j];
        s.predicted += r->confusion[(size_t)j * r->labels + c];
    }
    s.correct = r->confusion[(size_t)c * r->labels + c];
    s.precision = s.predicted ? (double)s.correct / s.predicted : 0.0;
    s.recall = s.count ? (double)s.correct / s.count : 0.0;
    return s;
}

static int by_recall(const void *a, const void *b) {
    const class_stats *x = a, *y = b;
    if (x->recall != y->recall) return x->recall < y->recall ? -1 : 1;
    if (x->count != y->count)
        return y->count - x->count; /* more inputs at the same recall: worse */
    return x->index - y->index;
}

/* Classes with at least one true input, worst recall first. */
static int present_classes(const eval_report *r, class_stats *out) {
    int n = 0;
    for (int c = 0; c < r->labels; c++) {
        class_stats s = stats_of(r, c);
        if (s.count > 0) out[n++] = s;
    }
    qsort(out, (size_t)n, sizeof *out, by_recall);
    return n;
}

typedef struct {
    int truth, pred, count;
} confusion_cell;

static int by_count(const void *a, const void *b) {
    const confusion_cell *x = a, *y = b;
    if (x->count != y->count) return y->count - x->count;
    return x->truth != y->truth ? x->truth - y->truth : x->pred - y->pred;
}

static const char *name_of(const eval_summary *s, int c) {
    return s->labels ? s->labels[c] : "?";
}

static void print_confusions(const eval_report *r, const eval_summary *s, FILE *out) {
    int n = 0, shown = 0;
    for (size_t i = 0; i < (size_t)r->labels * r->labels; i++)
        n += r->confusion[i] > 0 && i % (size_t)(r->labels + 1) != 0;
    if (n == 0) return;
    confusion_cell *cells = malloc(sizeof *cells * (size_t)n);
    if (!cells) return;
    n = 0;
    for (int t = 0; t < r->labels; t++)
        for (int p = 0; p < r->labels; p++)
            if (t != p && r->confusion[(size_t)t * r->labels + p] > 0)
                cells[n++] = (confusion_cell){t, p, r->confusion[(size_t)t * r->labels + p]};
    qsort(cells, (size_t)n, sizeof *cells, by_count);
    fprintf(out, "\nmost frequent confusions (true -> predicted):\n");
    for (int i = 0; i < n && shown < 10; i++, shown++)
        fprintf(out, "  %5d  %s -> %s\n", cells[i].count, name_of(s, cells[i].truth),
                name_of(s, cells[i].pred));
    free(cells);
}

void eval_report_print(const eval_report *r, const eval_summary *s, FILE *out) {
    fprintf(out, "model:     %s\ndata:      %s\n", s->model, s->data);
    fprintf(out, "%-10s %d evaluated, %d skipped\n", s->unit, r->count, r->num_skipped);
    fprintf(out, "top-1:     %.4f (%d/%d)\n", eval_report_top1(r), r->top1, r->count);
    if (r->labels > 5) /* with 5 classes or fewer every answer is in the top 5 */
        fprintf(out, "top-5:     %.4f (%d/%d)\n", eval_report_top5(r), r->top5, r->count);
    fprintf(out, "time:      %.2f s, %.1f %s/s\n", s->seconds,
            s->seconds > 0 ? r->count / s->seconds : 0.0, s->unit);
    class_stats *classes = malloc(sizeof *classes * (size_t)r->labels);
    if (classes && r->count > 0) {
        int n = present_classes(r, classes);
        fprintf(out,
                "\nper class, worst first (recall = the class's accuracy, correct / count):\n");
        fprintf(out, "  %5s %6s %7s %9s %9s  %s\n", "index", "count", "correct", "precision",
                "recall", "label");
        for (int i = 0; i < n; i++) {
            int c = classes[i].index;
            fprintf(out, "  %5d %6d %7d %9.4f %9.4f  %s", c, classes[i].count, classes[i].correct,
                    classes[i].precision, classes[i].recall, name_of(s, c));
            if (s->folders && s->folders[c] && strcmp(s->folders[c], name_of(s, c)) != 0)
                fprintf(out, "  [%s]", s->folders[c]);
            fputc('\n', out);
        }
    }
    free(classes);
    print_confusions(r, s, out);
    eval_report_print_skipped(r, out);
}

void eval_report_print_skipped(const eval_report *r, FILE *out) {
    if (r->num_skipped) {
        fprintf(out, "\nskipped:\n");
        for (int i = 0; i < r->num_skipped; i++) {
            const skipped_input *k = &r->skipped[i];
            if (strncmp(k->reason, k->input, strlen(k->input)) == 0) /* the reason names it */
                fprintf(out, "  %s\n", k->reason);
            else
                fprintf(out, "  %s: %s\n", k->input, k->reason);
        }
    }
}

/* Classes that occur as truth or prediction, in index order: the confusion matrix's axes. */
static int matrix_axes(const eval_report *r, int *axes) {
    int n = 0;
    for (int c = 0; c < r->labels; c++) {
        class_stats s = stats_of(r, c);
        if (s.count > 0 || s.predicted > 0) axes[n++] = c;
    }
    return n;
}

static cJSON *classes_json(const eval_report *r, const eval_summary *s) {
    cJSON *arr = cJSON_CreateArray();
    for (int c = 0; c < r->labels; c++) {
        class_stats st = stats_of(r, c);
        if (st.count == 0) continue;
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "index", c);
        cJSON_AddStringToObject(o, "label", name_of(s, c));
        if (s->folders && s->folders[c])
            cJSON_AddStringToObject(o, "folder", s->folders[c]);
        else
            cJSON_AddNullToObject(o, "folder");
        cJSON_AddNumberToObject(o, "count", st.count);
        cJSON_AddNumberToObject(o, "correct", st.correct);
        cJSON_AddNumberToObject(o, "precision", st.precision);
        cJSON_AddNumberToObject(o, "recall", st.recall);
        cJSON_AddItemToArray(arr, o);
    }
    return arr;
}

static cJSON *confusion_json(const eval_report *r, const eval_summary *s) {
    int *axes = malloc(sizeof *axes * (size_t)r->labels);
    cJSON *o = cJSON_CreateObject(), *labels = cJSON_AddArrayToObject(o, "labels");
    cJSON *matrix = cJSON_AddArrayToObject(o, "matrix");
    int n = axes ? matrix_axes(r, axes) : 0;
    for (int i = 0; i < n; i++)
        cJSON_AddItemToArray(labels, cJSON_CreateString(name_of(s, axes[i])));
    for (int i = 0; i < n; i++) {
        cJSON *row = cJSON_CreateArray();
        for (int j = 0; j < n; j++)
            cJSON_AddItemToArray(
                row, cJSON_CreateNumber(r->confusion[(size_t)axes[i] * r->labels + axes[j]]));
        cJSON_AddItemToArray(matrix, row);
    }
    free(axes);
    return o;
}

int eval_report_write_confusion_png(const eval_report *r, const eval_summary *s, const char *path,
                                    vit_error *err) {
    int *axes = malloc(sizeof *axes * (size_t)r->labels);
    if (!axes) return vit_fail(err, "out of memory");
    const int n = matrix_axes(r, axes);
    if (n < 1 || n > PLOT_MAX_MATRIX) {
        free(axes);
        return vit_fail(err, "%s: %d classes occur; the confusion picture shows 1 to %d", path, n,
                        PLOT_MAX_MATRIX);
    }
    int *counts = malloc(sizeof *counts * (size_t)n * n);
    const char **names = malloc(sizeof *names * (size_t)n);
    if (!counts || !names) {
        free(axes), free(counts), free(names);
        return vit_fail(err, "out of memory");
    }
    for (int i = 0; i < n; i++) {
        names[i] = name_of(s, axes[i]);
        for (int j = 0; j < n; j++)
            counts[(size_t)i * n + j] = r->confusion[(size_t)axes[i] * r->labels + axes[j]];
    }
    char title[160];
    snprintf(title, sizeof title, "%d %s, top-1 %.2f%%; rows true, columns predicted",
             eval_report_count(r), s->unit, 100.0 * eval_report_top1(r));
    image_u8 img;
    int rc = plot_matrix(counts, n, names, title, &img, err);
    if (rc == 0) rc = image_write_png(path, &img, err);
    if (img.pixels) image_free(&img);
    free(axes), free(counts), free(names);
    return rc;
}

int eval_report_write_json(const eval_report *r, const eval_summary *s, FILE *out) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "model", s->model);
    cJSON_AddStringToObject(o, "data", s->data);
    cJSON_AddNumberToObject(o, s->unit, r->count);
    cJSON_AddNumberToObject(o, "skipped", r->num_skipped);
    cJSON_AddNumberToObject(o, "top1", eval_report_top1(r));
    cJSON_AddNumberToObject(o, "top5", eval_report_top5(r));
    cJSON_AddNumberToObject(o, "seconds", s->seconds);
    char key[64];
    snprintf(key, sizeof key, "%s_per_second", s->unit);
    cJSON_AddNumberToObject(o, key, s->seconds > 0 ? r->count / s->seconds : 0.0);
    cJSON_AddItemToObject(o, "classes", classes_json(r, s));
    cJSON_AddItemToObject(o, "confusion", confusion_json(r, s));
    cJSON *errors = cJSON_AddArrayToObject(o, "errors");
    for (int i = 0; i < r->num_skipped; i++) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "file", r->skipped[i].input);
        cJSON_AddStringToObject(e, "error", r->skipped[i].reason);
        cJSON_AddItemToArray(errors, e);
    }
    char *text = cJSON_Print(o);
    cJSON_Delete(o);
    int rc = text && fprintf(out, "%s\n", text) >= 0 ? 0 : -1;
    free(text);
    return rc;
}
