/* The ceiling for `vit bench`: OpenBLAS sgemm alone on the matrix products of one ViT forward pass
 * (per layer: qkv, attention output, MLP up and down, each [B·T, in] x [in, out]), with OpenBLAS
 * owning the threads itself.
 *   build/bench/sgemm_bench [-b B] [-t T] [-T TOKENS] [-D HIDDEN] [-I MLP] [-n RUNS]
 * Defaults: ViT-Tiny/16 at 224 (T 197, D 192, I 768). Prints GFLOP/s (median run). */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int compare_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    int B = 8, T = 197, D = 192, mlp = 768, threads = 2, runs = 20, opt;
    while ((opt = getopt(argc, argv, "b:t:T:D:I:n:")) != -1) {
        const int v = atoi(optarg);
        if (v < 1) return fprintf(stderr, "-%c needs a positive integer\n", opt), 2;
        switch (opt) {
        case 'b':
            B = v;
            break;
        case 't':
            threads = v;
            break;
        case 'T':
            T = v;
            break;
        case 'D':
            D = v;
            break;
        case 'I':
            mlp = v;
            break;
        case 'n':
            runs = v;
            break;
        default:
            return 2;
        }
    }
    openblas_set_num_threads(threads);
    const int M = B * T;
    const int shapes[4][2] = {{D, 3 * D}, {D, D}, {D, mlp}, {mlp, D}}; /* {in, out} */
    const size_t big = (size_t)M * (mlp > 3 * D ? mlp : 3 * D);
    float *x = malloc(sizeof(float) * big), *w = malloc(sizeof(float) * (size_t)mlp * 3 * D);
    float *y = malloc(sizeof(float) * big);
    double *t = malloc(sizeof(double) * (size_t)runs);
    if (!x || !w || !y || !t) return 1;
    for (size_t i = 0; i < big; i++) x[i] = (float)(i % 17) * 0.01f;
    for (size_t i = 0; i < (size_t)mlp * 3 * D; i++) w[i] = (float)(i % 13) * 0.01f;
    double flops = 0;
    for (int s = 0; s < 4; s++) flops += 2.0 * M * shapes[s][0] * shapes[s][1];
    for (int r = -2; r < runs; r++) {
        const double t0 = now_s();
        for (int s = 0; s < 4; s++)
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, shapes[s][1], shapes[s][0],
                        1.0f, x, shapes[s][0], w, shapes[s][0], 0.0f, y, shapes[s][1]);
        if (r >= 0) t[r] = now_s() - t0;
    }
    qsort(t, (size_t)runs, sizeof *t, compare_double);
    printf("sgemm (OpenBLAS %s, %d threads): batch %d, %d tokens, D %d, I %d: %.1f GFLOP/s\n",
           openblas_get_corename(), threads, B, T, D, mlp, flops / t[runs / 2] * 1e-9);
    free(x);
    free(w);
    free(y);
    free(t);
    return 0;
}
