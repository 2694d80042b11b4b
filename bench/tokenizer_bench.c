/* Tokenizer throughput on a TSV of sentences (first column, header skipped):
 *   build/bench/tokenizer_bench [MODEL_DIR] [TSV] [PASSES]
 * defaults ../shared/models/bert-sst2-tiny, ../shared/data/sst2/dev.tsv, 20. Prints the best pass.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vit/base/file.h"
#include "text/wordpiece.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* One pass over every row; returns the number of ids produced, or -1. */
static long encode_all(const tokenizer *t, tokenizer_scratch *scratch, const char *tsv, size_t size,
                       int32_t *ids, int *rows, vit_error *err) {
    long total = 0;
    *rows = 0;
    const char *p = memchr(tsv, '\n', size); /* skip the header */
    const char *end = tsv + size;
    for (p = p ? p + 1 : end; p < end;) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol) eol = end;
        const char *tab = memchr(p, '\t', (size_t)(eol - p));
        const int n = tokenizer_encode_with(t, scratch, p, (size_t)((tab ? tab : eol) - p),
                                            tokenizer_max_len(t), ids, NULL, err);
        if (n < 0) return -1;
        total += n;
        (*rows)++;
        p = eol + 1;
    }
    return total;
}

int main(int argc, char **argv) {
    const char *dir = argc > 1 ? argv[1] : "../shared/models/bert-sst2-tiny";
    const char *path = argc > 2 ? argv[2] : "../shared/data/sst2/dev.tsv";
    const int passes = argc > 3 ? atoi(argv[3]) : 20;
    vit_error err = {{0}};
    tokenizer *t;
    double t0 = now();
    if (tokenizer_load(dir, &t, &err) != 0) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    const double load_ms = 1e3 * (now() - t0);
    size_t size;
    char *tsv = vit_read_file(path, (size_t)1 << 30, &size, &err);
    int32_t *ids = malloc(sizeof *ids * (size_t)tokenizer_max_len(t));
    tokenizer_scratch *scratch = tokenizer_scratch_create();
    if (!tsv || !ids || !scratch) {
        fprintf(stderr, "%s\n", tsv ? "out of memory" : err.msg);
        return 1;
    }
    double best = 1e30;
    long total = 0;
    int rows = 0;
    for (int i = 0; i < passes; i++) {
        t0 = now();
        total = encode_all(t, scratch, tsv, size, ids, &rows, &err);
        if (total < 0) {
            fprintf(stderr, "%s\n", err.msg);
            return 1;
        }
        const double dt = now() - t0;
        if (dt < best) best = dt;
    }
    printf("load %.1f ms (vocab %d); %d sentences, %ld ids: best of %d passes %.3f ms "
           "(%.2f us/sentence)\n",
           load_ms, tokenizer_vocab_size(t), rows, total, passes, 1e3 * best, 1e6 * best / rows);
    tokenizer_scratch_free(scratch);
    free(ids);
    free(tsv);
    tokenizer_free(t);
    return 0;
}
