/* Decode + preprocess time of one image file with a model's preprocessing, single thread:
 *   build/bench/preprocess_bench MODEL_DIR FILE [RUNS]
 * prints the median and the fastest of RUNS timed runs after one warm-up. The process keeps freed
 * memory as bin/vit does (VIT_FRESH_MEMORY=1: glibc's defaults, fresh pages for every image). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "image/image.h"
#include "vit/io/model_dir.h"
#include "vit/base/alloc.h"

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int compare_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s MODEL_DIR FILE [RUNS]\n", argv[0]);
        return 2;
    }
    const int runs = argc > 3 ? atoi(argv[3]) : 50;
    if (!getenv("VIT_FRESH_MEMORY")) vit_keep_freed_memory(); /* as bin/vit does */
    vit_error err = {0};
    preprocess_config cfg;
    if (model_dir_load_preprocess(argv[1], &cfg, &err) != 0) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    int C, H, W;
    preprocess_output_shape(&cfg, &C, &H, &W);
    float *out = malloc(sizeof(float) * (size_t)C * H * W);
    double *ms = malloc(sizeof(double) * (size_t)(runs > 0 ? runs : 1));
    if (!out || !ms || runs < 1) return 1;
    for (int i = -1; i < runs; i++) {
        const double t0 = now_ms();
        if (preprocess_file(&cfg, argv[2], 0, 0, out, &err) != 0) {
            fprintf(stderr, "%s\n", err.msg);
            return 1;
        }
        if (i >= 0) ms[i] = now_ms() - t0;
    }
    qsort(ms, (size_t)runs, sizeof *ms, compare_double);
    printf("%s -> [%d, %d, %d]: median %.3f ms, fastest %.3f ms over %d runs\n", argv[2], C, H, W,
           ms[runs / 2], ms[0], runs);
    free(out);
    free(ms);
    return 0;
}
