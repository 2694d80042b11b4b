/* vit eval on text: stream a sentence<TAB>label file through the BERT classifier in batches.
 * A batch is padded to its longest sentence, so lines are read in chunks of LENGTH_GROUP batches
 * and each chunk is classified in batches of similar length (by bytes, a close proxy for
 * tokens); results are reported in file order. On SST-2 dev this halves the padded work. */
#include "vit/eval/eval_text.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vit/base/clock.h"

#include "vit/data/text_set.h"
#include "vit/vit.h"

#define DEFAULT_BATCH 32
#define LENGTH_GROUP  8

/* One chunk of parsed lines. Each slot keeps its getline buffer from batch to batch, so reading
 * allocates only while lines keep getting longer. */
typedef struct {
    char **buf;
    size_t *cap;
    const char **text; /* sentence: the start of buf[i] */
    size_t *len;
    const char **text_b; /* a pair's second text (within buf[i]) */
    size_t *len_b;
    int *label;
    float *score; /* regression: each line's score */
    long *data_line;
    float *logits, *probs; /* [chunk, labels], in length order: slot i's row is rank[i] */
    int count;
    int *order, *rank; /* length order: the slots shortest first; its inverse */
    const char **sorted_text, **sorted_text_b; /* one batch's texts and lengths in length order */
    size_t *sorted_len, *sorted_len_b;
} batch;

/* Everything one evaluation works with. */
typedef struct {
    const char *path;
    FILE *in;
    long line; /* number of the line last read, from 1 */
    vit_text_context *clf;
    const char *const *labels;
    int num_labels;
    eval_report *report;
    FILE *predictions;
    batch b;
    int batch_size, chunk_size;
    int pairs; /* a<TAB>b<TAB>label lines */
    /* a regression model: every line's true and predicted score, for the correlations */
    int regression;
    double *truth, *predicted;
    int scored, cap;
} run;

static int batch_alloc(batch *b, int size, int batch_size, int labels) {
    memset(b, 0, sizeof *b);
    b->order = calloc((size_t)size, sizeof *b->order);
    b->rank = calloc((size_t)size, sizeof *b->rank);
    b->sorted_text = calloc((size_t)batch_size, sizeof *b->sorted_text);
    b->sorted_len = calloc((size_t)batch_size, sizeof *b->sorted_len);
    b->sorted_text_b = calloc((size_t)batch_size, sizeof *b->sorted_text_b);
    b->sorted_len_b = calloc((size_t)batch_size, sizeof *b->sorted_len_b);
    if (!b->order || !b->rank || !b->sorted_text || !b->sorted_len || !b->sorted_text_b ||
        !b->sorted_len_b)
        return -1;
    b->buf = calloc((size_t)size, sizeof *b->buf);
    b->cap = calloc((size_t)size, sizeof *b->cap);
    b->text = calloc((size_t)size, sizeof *b->text);
    b->len = calloc((size_t)size, sizeof *b->len);
    b->text_b = calloc((size_t)size, sizeof *b->text_b);
    b->len_b = calloc((size_t)size, sizeof *b->len_b);
    b->label = calloc((size_t)size, sizeof *b->label);
    b->score = calloc((size_t)size, sizeof *b->score);
    b->data_line = calloc((size_t)size, sizeof *b->data_line);
    b->logits = calloc((size_t)size * (size_t)labels, sizeof *b->logits);
    b->probs = calloc((size_t)size * (size_t)labels, sizeof *b->probs);
    return b->buf && b->cap && b->text && b->len && b->text_b && b->len_b && b->label && b->score &&
                   b->data_line && b->logits && b->probs
               ? 0
               : -1;
}

static void batch_free(batch *b, int size) {
    for (int i = 0; b->buf && i < size; i++) free(b->buf[i]);
    free(b->buf);
    free(b->cap);
    free(b->text);
    free(b->len);
    free(b->text_b);
    free(b->len_b);
    free(b->label);
    free(b->score);
    free(b->data_line);
    free(b->logits);
    free(b->probs);
    free(b->order);
    free(b->rank);
    free(b->sorted_text);
    free(b->sorted_len);
    free(b->sorted_text_b);
    free(b->sorted_len_b);
}

static int skip_line(run *r, const char *why) {
    char where[4200], reason[5000];
    snprintf(where, sizeof where, "%s:%ld", r->path, r->line);
    snprintf(reason, sizeof reason, "%s (data line %ld): %s", where, r->line - 1, why);
    return eval_report_skip(r->report, where, reason);
}

/* Parses the line in slot i (n bytes) with the parser training shares (vit/data/text_set.h).
 * Returns 1 when it joins the batch, 0 when it is empty or skipped, -1 when out of memory. */
static int parse_line(run *r, int i, size_t n) {
    text_tsv_line l;
    char why[600]; /* fits skip_line's reason after the location */
    const int rc = (r->pairs ? text_tsv_parse_pair : text_tsv_parse_line)(
        r->b.buf[i], n, r->regression ? NULL : r->labels, r->num_labels, &l, why, sizeof why);
    if (rc < 0) return skip_line(r, why) < 0 ? -1 : 0;
    if (rc == 0) return 0;
    r->b.text[i] = l.text;
    r->b.len[i] = l.len;
    r->b.text_b[i] = l.text_b;
    r->b.len_b[i] = l.len_b;
    r->b.label[i] = l.label;
    r->b.score[i] = l.score;
    r->b.data_line[i] = r->line - 1;
    return 1;
}

/* Fills the chunk from the file. Returns the count (0 at the end) or -1 with err. */
static int read_chunk(run *r, vit_error *err) {
    batch *b = &r->b;
    b->count = 0;
    while (b->count < r->chunk_size) {
        const int i = b->count;
        errno = 0;
        const ssize_t n = getline(&b->buf[i], &b->cap[i], r->in);
        if (n < 0) {
            if (ferror(r->in) || errno == ENOMEM)
                return vit_fail(err, "%s: %s", r->path, strerror(errno ? errno : EIO));
            break;
        }
        if (++r->line == 1) continue; /* the header */
        const int rc = parse_line(r, i, (size_t)n);
        if (rc < 0) return vit_fail(err, "%s: out of memory", r->path);
        b->count += rc;
    }
    return b->count;
}

/* Shortest first, ties in slot order (qsort_r comparator; context: the chunk). */
static int by_length(const void *x, const void *y, void *context) {
    const batch *c = context;
    const int i = *(const int *)x, j = *(const int *)y;
    const size_t li = c->len[i] + c->len_b[i], lj = c->len[j] + c->len_b[j];
    return li != lj ? (li < lj ? -1 : 1) : i - j;
}

/* Classifies the chunk in batches of similar length; outputs stay in length order (rank). */
static int classify_sorted(run *r, vit_error *err) {
    batch *b = &r->b;
    const size_t L = (size_t)r->num_labels;
    for (int i = 0; i < b->count; i++) b->order[i] = i;
    qsort_r(b->order, (size_t)b->count, sizeof *b->order, by_length, b);
    for (int k = 0; k < b->count; k++) b->rank[b->order[k]] = k;
    for (int k = 0; k < b->count; k += r->batch_size) {
        const int n = b->count - k < r->batch_size ? b->count - k : r->batch_size;
        for (int j = 0; j < n; j++) {
            const int at = b->order[k + j];
            b->sorted_text[j] = b->text[at], b->sorted_len[j] = b->len[at];
            b->sorted_text_b[j] = b->text_b[at], b->sorted_len_b[j] = b->len_b[at];
        }
        const vit_text_pairs pairs = {b->sorted_text, b->sorted_text_b, b->sorted_len,
                                      b->sorted_len_b};
        if ((r->pairs ? vit_text_forward_pairs(r->clf, &pairs, n, b->logits + k * L,
                                               b->probs + k * L, err)
                      : vit_text_forward(r->clf, b->sorted_text, b->sorted_len, n,
                                         b->logits + k * L, b->probs + k * L, err)) != 0)
            return -1;
    }
    return 0;
}

/* A regression model's chunk: each line's true and predicted scores kept (and written). */
static int score_chunk(run *r, vit_error *err) {
    batch *b = &r->b;
    if (r->scored + b->count > r->cap) {
        const int cap = 2 * (r->scored + b->count);
        double *t = realloc(r->truth, sizeof *t * (size_t)cap);
        if (t) r->truth = t;
        double *p = realloc(r->predicted, sizeof *p * (size_t)cap);
        if (p) r->predicted = p;
        if (!t || !p) return vit_fail(err, "out of memory");
        r->cap = cap;
    }
    for (int i = 0; i < b->count; i++) {
        const double pred = b->probs[b->rank[i]]; /* one output: the score itself */
        r->truth[r->scored] = b->score[i], r->predicted[r->scored++] = pred;
        if (r->predictions && fprintf(r->predictions, "%ld\t%.9g\t%.6f\n", b->data_line[i],
                                      (double)b->score[i], pred) < 0)
            return vit_fail(err, "writing the predictions: %s", strerror(errno));
    }
    return 0;
}

static int classify_chunk(run *r, vit_error *err) {
    batch *b = &r->b;
    const int L = r->num_labels;
    if (classify_sorted(r, err) != 0) return -1;
    if (r->regression) return score_chunk(r, err);
    for (int i = 0; i < b->count; i++) {
        const float *p = b->probs + (size_t)b->rank[i] * L;
        const int pred = eval_report_add(r->report, b->label[i], p);
        if (r->predictions && fprintf(r->predictions, "%ld\t%d\t%d\t%.6f\n", b->data_line[i],
                                      b->label[i], pred, (double)p[pred]) < 0)
            return vit_fail(err, "writing the predictions: %s", strerror(errno));
    }
    return 0;
}

static int copy_labels(text_eval_result *out, const vit_text_context *clf, vit_error *err) {
    const int L = vit_text_num_labels(clf);
    char **labels = calloc((size_t)L, sizeof *labels);
    out->labels = (const char *const *)labels;
    out->num_labels = L;
    for (int i = 0; labels && i < L; i++) {
        if (!(labels[i] = strdup(vit_text_label(clf, i)))) return vit_fail(err, "out of memory");
    }
    return labels ? 0 : vit_fail(err, "out of memory");
}

static int evaluate(run *r, vit_error *err) {
    const char *header =
        r->regression ? "line\ttrue\tpredicted\n" : "line\ttrue\tpredicted\tprobability\n";
    if (r->predictions && fputs(header, r->predictions) < 0)
        return vit_fail(err, "writing the predictions: %s", strerror(errno));
    int n;
    while ((n = read_chunk(r, err)) > 0) {
        if (classify_chunk(r, err) != 0) return -1;
    }
    if (n < 0) return -1;
    if (r->predictions && fflush(r->predictions) != 0)
        return vit_fail(err, "writing the predictions: %s", strerror(errno));
    return 0;
}

int text_eval_tsv(const char *model_dir, const char *tsv_path, const text_eval_options *options,
                  FILE *predictions, text_eval_result *out, vit_error *err) {
    memset(out, 0, sizeof *out);
    run r = {.path = tsv_path, .predictions = predictions, .pairs = options && options->pairs};
    r.batch_size = options && options->batch > 0 ? options->batch : DEFAULT_BATCH;
    /* LENGTH_GROUP batches, but no more than 1024 lines unless a batch alone is larger */
    r.chunk_size = r.batch_size * LENGTH_GROUP;
    if (r.chunk_size > 1024) r.chunk_size = r.batch_size > 1024 ? r.batch_size : 1024;
    const vit_text_params params = {.threads = options ? options->threads : 0,
                                    .max_batch = r.batch_size,
                                    .backend = options ? options->backend : VIT_BACKEND_DEFAULT,
                                    .precision = options ? options->precision : VIT_FP32};
    r.clf = vit_text_load(model_dir, &params, err);
    if (!r.clf) return -1;
    int rc = -1;
    const int L = vit_text_num_labels(r.clf);
    r.regression = out->regression = vit_text_regression(r.clf);
    if (!(r.in = fopen(tsv_path, "r"))) {
        vit_fail(err, "%s: %s", tsv_path, strerror(errno));
    } else if (batch_alloc(&r.b, r.chunk_size, r.batch_size, L) != 0 ||
               !(r.report = eval_report_create(L, err))) {
        vit_fail(err, "out of memory for batches of %d texts", r.batch_size);
    } else if (copy_labels(out, r.clf, err) == 0) {
        r.labels = out->labels;
        r.num_labels = L;
        const double t0 = clock_seconds();
        rc = evaluate(&r, err);
        out->seconds = clock_seconds() - t0;
        out->scored = r.scored;
        if (r.regression)
            text_eval_agreement(r.truth, r.predicted, r.scored, &out->pearson, &out->spearman,
                                &out->mse);
    }
    if (r.in) fclose(r.in);
    batch_free(&r.b, r.chunk_size);
    vit_text_free(r.clf);
    free(r.truth), free(r.predicted);
    out->report = r.report;
    if (rc != 0) text_eval_result_free(out);
    return rc;
}

void text_eval_result_free(text_eval_result *r) {
    eval_report_free(r->report);
    for (int i = 0; r->labels && i < r->num_labels; i++) free((char *)r->labels[i]);
    free((char **)r->labels);
    memset(r, 0, sizeof *r);
}

static double pearson_of(const double *x, const double *y, int n) {
    if (n < 2) return NAN;
    double mx = 0.0, my = 0.0;
    for (int i = 0; i < n; i++) mx += x[i], my += y[i];
    mx /= n, my /= n;
    double sxy = 0.0, sxx = 0.0, syy = 0.0;
    for (int i = 0; i < n; i++) {
        sxy += (x[i] - mx) * (y[i] - my);
        sxx += (x[i] - mx) * (x[i] - mx);
        syy += (y[i] - my) * (y[i] - my);
    }
    return sxx > 0.0 && syy > 0.0 ? sxy / sqrt(sxx * syy) : NAN;
}

/* qsort_r comparator of indices by their values (context: the values) */
static int by_value(const void *a, const void *b, void *context) {
    const double *v = context, x = v[*(const int *)a], y = v[*(const int *)b];
    return x < y ? -1 : x > y;
}

/* ranks[i] of v[i] from 1, ties their mean rank (scipy.stats.rankdata's "average") */
static int ranks_of(const double *v, int n, double *ranks) {
    int *order = malloc(sizeof *order * (size_t)n);
    if (!order) return -1;
    for (int i = 0; i < n; i++) order[i] = i;
    qsort_r(order, (size_t)n, sizeof *order, by_value, (void *)v);
    for (int i = 0; i < n;) {
        int j = i;
        while (j + 1 < n && v[order[j + 1]] == v[order[i]]) j++;
        for (int k = i; k <= j; k++) ranks[order[k]] = (i + j) / 2.0 + 1.0;
        i = j + 1;
    }
    free(order);
    return 0;
}

void text_eval_agreement(const double *x, const double *y, int n, double *pearson, double *spearman,
                         double *mse) {
    double sum = 0.0;
    for (int i = 0; i < n; i++) sum += (x[i] - y[i]) * (x[i] - y[i]);
    *mse = n > 0 ? sum / n : NAN;
    *pearson = pearson_of(x, y, n);
    *spearman = NAN;
    double *rx = malloc(sizeof *rx * (size_t)(n > 0 ? n : 1)),
           *ry = malloc(sizeof *ry * (size_t)(n > 0 ? n : 1));
    if (rx && ry && ranks_of(x, n, rx) == 0 && ranks_of(y, n, ry) == 0)
        *spearman = pearson_of(rx, ry, n);
    free(rx), free(ry);
}
