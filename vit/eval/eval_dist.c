#include "vit/eval/eval_dist.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "vit/base/bytes.h"
#include "vit/base/dist.h"

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

void eval_records_add(void *user, const eval_result *r) {
    eval_records *rec = user;
    const int64_t index = r->index;
    const int32_t ints[3] = {r->true_label, r->pred, r->in_top5};
    put(rec, &index, sizeof index);
    put(rec, ints, sizeof ints);
    put(rec, &r->prob, sizeof r->prob);
    put_string(rec, r->path);
    put_string(rec, r->reason);
}

void eval_records_free(eval_records *rec) {
    byte_buf_free(&rec->bytes);
    rec->failed = 0;
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

/* Rank 0: the gathered bytes into records sorted by index, replayed. */
static int replay(const char *data, size_t size, eval_report *report, FILE *predictions,
                  vit_error *err) {
    size_t n = 0, cap = 1024;
    parsed_record *recs = malloc(sizeof *recs * cap);
    int rc = recs ? 0 : vit_fail(err, "out of memory");
    for (const char *at = data, *end = data + size; rc == 0 && at < end; n++) {
        if (n == cap) {
            parsed_record *grown = realloc(recs, sizeof *recs * (cap *= 2));
            if (!grown) {
                rc = vit_fail(err, "out of memory");
                break;
            }
            recs = grown;
        }
        parsed_record *r = &recs[n];
        memset(r, 0, sizeof *r);
        int32_t ints[3];
        if (take(&at, end, &r->index, sizeof r->index) || take(&at, end, ints, sizeof ints) ||
            take(&at, end, &r->prob, sizeof r->prob) || take_string(&at, end, &r->path) ||
            take_string(&at, end, &r->reason)) {
            rc = vit_fail(err, "the ranks' results are unreadable");
            n++;
            break;
        }
        r->true_label = ints[0], r->pred = ints[1], r->in_top5 = ints[2];
    }
    if (rc == 0) qsort(recs, n, sizeof *recs, by_index);
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
    for (size_t i = 0; recs && i < n; i++) {
        free(recs[i].path);
        free(recs[i].reason);
    }
    free(recs);
    return rc;
}

int eval_records_merge(eval_records *rec, eval_report *report, FILE *predictions, vit_error *err) {
    if (!dist_all_ok(!rec->failed))
        return vit_fail(err, "out of memory recording results (on some rank)");
    char *all = NULL;
    size_t total = 0;
    if (dist_gather(rec->bytes.data, rec->bytes.size, &all, &total, err) != 0) return -1;
    int rc = 0;
    if (dist_get().rank == 0) rc = replay(all, total, report, predictions, err);
    free(all);
    return rc;
}
