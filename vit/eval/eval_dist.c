#include "vit/eval/eval_dist.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "vit/base/bytes.h"
#include "vit/base/dist.h"

typedef struct {
    byte_buf bytes;
    int failed; /* out of memory while recording (the records are then incomplete) */
} eval_records;

/* A record: index (int64), true class, predicted class (-1: skipped), top-5 flag (int32 each),
 * probability (float), then the path and the reason, each a uint32 length and its bytes. Native
 * byte order: every rank runs the same binary on the same kind of machine. */

static void put(eval_records *rec, const void *p, size_t n) {
    if (!rec->failed && byte_buf_append(&rec->bytes, p, n, SIZE_MAX) != 0) rec->failed = 1;
}

static void put_string(eval_records *rec, const char *s) {
    const uint32_t n = s ? (uint32_t)strlen(s) : 0;
    put(rec, &n, sizeof n);
    if (n) put(rec, s, n);
}

static void add_record(eval_records *rec, const eval_result *r) {
    const int64_t index = r->index;
    const int32_t ints[3] = {r->true_label, r->pred, r->in_top5};
    put(rec, &index, sizeof index);
    put(rec, ints, sizeof ints);
    put(rec, &r->prob, sizeof r->prob);
    put_string(rec, r->path);
    put_string(rec, r->reason);
}

typedef struct {
    int64_t index;
    int32_t true_label, pred, in_top5;
    float prob;
    char *path, *reason; /* NUL-terminated copies */
} parsed_record;

static int take(const char **at, const char *end, void *out, size_t n) {
    if ((size_t)(end - *at) < n) return -1;
    memcpy(out, *at, n);
    *at += n;
    return 0;
}

static int take_string(const char **at, const char *end, char **out) {
    uint32_t n;
    if (take(at, end, &n, sizeof n) != 0 || (size_t)(end - *at) < n) return -1;
    if (!(*out = malloc((size_t)n + 1))) return -1;
    memcpy(*out, *at, n);
    (*out)[n] = 0;
    *at += n;
    return 0;
}

static int by_index(const void *a, const void *b) {
    const int64_t x = ((const parsed_record *)a)->index, y = ((const parsed_record *)b)->index;
    return (x > y) - (x < y);
}

static int take_record(const char **at, const char *end, parsed_record *r) {
    int32_t ints[3];
    memset(r, 0, sizeof *r);
    if (take(at, end, &r->index, sizeof r->index) || take(at, end, ints, sizeof ints) ||
        take(at, end, &r->prob, sizeof r->prob) || take_string(at, end, &r->path) ||
        take_string(at, end, &r->reason))
        return -1;
    r->true_label = ints[0], r->pred = ints[1], r->in_top5 = ints[2];
    return 0;
}

static void free_records(parsed_record *recs, size_t n) {
    for (size_t i = 0; recs && i < n; i++) {
        free(recs[i].path);
        free(recs[i].reason);
    }
    free(recs);
}

static int grow(parsed_record **recs, size_t *cap) {
    parsed_record *grown = realloc(*recs, sizeof *grown * *cap * 2);
    if (!grown) return -1;
    *recs = grown;
    *cap *= 2;
    return 0;
}

/* The gathered bytes as records sorted by index (*n of them); NULL with err when unreadable. */
static parsed_record *parse_records(const char *data, size_t size, size_t *n, vit_error *err) {
    size_t cap = 1024;
    parsed_record *recs = malloc(sizeof *recs * cap);
    int rc = recs ? 0 : vit_fail(err, "out of memory");
    *n = 0;
    for (const char *at = data, *end = data + size; rc == 0 && at < end;) {
        if (*n == cap && grow(&recs, &cap) != 0)
            rc = vit_fail(err, "out of memory");
        else if (take_record(&at, end, &recs[(*n)++]) != 0)
            rc = vit_fail(err, "the processes' results are unreadable");
    }
    if (rc != 0) {
        free_records(recs, *n);
        return NULL;
    }
    qsort(recs, *n, sizeof *recs, by_index);
    return recs;
}

/* Process 0: the records, in walk order, into the report and the predictions. */
static int replay(const char *data, size_t size, eval_report *report, FILE *predictions,
                  vit_error *err) {
    size_t n;
    parsed_record *recs = parse_records(data, size, &n, err);
    int rc = recs ? 0 : -1;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        const parsed_record *r = &recs[i];
        if (r->pred < 0) {
            if (eval_report_skip(report, r->path, r->reason) != 0)
                rc = vit_fail(err, "out of memory");
            continue;
        }
        eval_report_add_result(report, r->true_label, r->pred, r->in_top5);
        if (predictions) {
            const eval_result res = {
                .path = r->path, .true_label = r->true_label, .pred = r->pred, .prob = r->prob};
            eval_write_prediction(predictions, &res);
        }
    }
    free_records(recs, n);
    return rc;
}

/* Every process's records into process 0's report and predictions (collective). */
static int merge_records(const eval_records *rec, eval_report *report, FILE *predictions,
                         vit_error *err) {
    if (!dist_all_ok(!rec->failed))
        return vit_fail(err, "out of memory recording results (on some process)");
    char *all = NULL;
    size_t total = 0;
    if (dist_gather(rec->bytes.data, rec->bytes.size, &all, &total, err) != 0) return -1;
    int rc = 0;
    if (dist_get().rank == 0) rc = replay(all, total, report, predictions, err);
    free(all);
    return rc;
}

/* The caller's options, seen through this process's share. */
typedef struct {
    const eval_images_options *opt;
    eval_records records;
} share;

static void share_result(void *user, const eval_result *r) {
    add_record(&((share *)user)->records, r);
}

static void share_skipped(void *user, const char *path, const char *reason) {
    const eval_images_options *opt = ((share *)user)->opt;
    if (opt->skipped) opt->skipped(opt->user, path, reason);
}

static void share_progress(void *user, long done) {
    const eval_images_options *opt = ((share *)user)->opt;
    if (opt->progress) opt->progress(opt->user, done);
}

int eval_images_dist(vit_context *ctx, const imagefolder *f, const eval_images_options *opt,
                     eval_report *report, vit_error *err) {
    const dist_world w = dist_get();
    if (w.size == 1) return eval_images(ctx, f, opt, report, err);
    share s = {.opt = opt};
    eval_images_options mine = *opt;
    mine.rank = w.rank, mine.ranks = w.size, mine.predictions = NULL, mine.user = &s;
    mine.result = share_result, mine.skipped = share_skipped, mine.progress = share_progress;
    /* this process's share counts into a report of its own; process 0's gets the replay */
    eval_report *own = eval_report_create(eval_num_classes(ctx, opt->classes), err);
    int rc = own ? eval_images(ctx, f, &mine, own, err) : -1;
    eval_report_free(own);
    /* every process reaches the gather, whatever happened to it */
    if (w.rank == 0 && opt->predictions) fputs(EVAL_PREDICTIONS_HEADER, opt->predictions);
    vit_error merge_err = {{0}};
    if (merge_records(&s.records, report, opt->predictions, &merge_err) != 0 && rc == 0) {
        *err = merge_err;
        rc = -1;
    }
    byte_buf_free(&s.records.bytes);
    return dist_all_succeeded(rc, "to evaluate its share", err);
}
