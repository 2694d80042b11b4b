/* vit bench: forward passes on synthetic input, after a warm-up. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <omp.h>

#include "vit/base/clock.h"
#include "vit/cli/cli.h"
#include "vit/vit.h"

static const char usage_text[] = "usage: vit bench [-m MODEL_DIR] [-b BATCH] [-n RUNS] [-t THREADS] [--size N] [--json]\n";

static int compare_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int cli_bench(int argc, char **argv) {
    static const struct option longopts[] = {
        {"model", required_argument, 0, 'm'}, {"batch", required_argument, 0, 'b'},
        {"runs", required_argument, 0, 'n'},  {"threads", required_argument, 0, 't'},
        {"size", required_argument, 0, 's'},  {"json", no_argument, 0, 'j'},
        {"help", no_argument, 0, 'h'},        {0, 0, 0, 0}};
    const char *model_opt = NULL;
    vit_params params = vit_default_params();
    int runs = 20, json = 0, c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "m:b:n:t:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'm': model_opt = optarg; break;
        case 'b': params.max_batch = (int)cli_parse_int(optarg, 1, 4096, "-b"); break;
        case 'n': runs = (int)cli_parse_int(optarg, 1, 1000000, "-n"); break;
        case 't': params.threads = (int)cli_parse_int(optarg, 1, 1024, "-t"); break;
        case 's': params.image_size = (int)cli_parse_int(optarg, 1, 8192, "--size"); break;
        case 'j': json = 1; break;
        case 'h': fputs(usage_text, stdout); return 0;
        default: fputs(usage_text, stderr); return 2;
        }
        if (params.max_batch < 0 || runs < 0 || params.threads < 0 || params.image_size < 0)
            return fputs(usage_text, stderr), 2;
    }
    if (optind != argc) return fputs(usage_text, stderr), 2;
    char dir[4096];
    vit_error err = {0};
    vit_context *ctx = vit_load(cli_model_dir(model_opt, dir, sizeof dir), &params, &err);
    if (!ctx) {
        fprintf(stderr, "vit bench: %s\n", err.msg);
        return 1;
    }
    const int B = params.max_batch;
    const size_t F = vit_input_floats(ctx);
    float *pixels = malloc(sizeof(float) * F * (size_t)B);
    float *logits = malloc(sizeof(float) * (size_t)B * vit_num_labels(ctx));
    double *ms = malloc(sizeof(double) * (size_t)runs);
    if (!pixels || !logits || !ms) {
        fprintf(stderr, "vit bench: out of memory\n");
        return 1;
    }
    unsigned seed = 1;
    for (size_t i = 0; i < F * (size_t)B; i++) pixels[i] = (float)rand_r(&seed) / RAND_MAX * 2.0f - 1.0f;
    for (int i = 0; i < 3; i++) vit_forward(ctx, pixels, B, logits, &err); /* warm-up: caches, threads */
    for (int i = 0; i < runs; i++) {
        double t0 = (1e3 * clock_seconds());
        vit_forward(ctx, pixels, B, logits, &err);
        ms[i] = (1e3 * clock_seconds()) - t0;
    }
    qsort(ms, (size_t)runs, sizeof *ms, compare_double);
    double median = runs % 2 ? ms[runs / 2] : 0.5 * (ms[runs / 2 - 1] + ms[runs / 2]);
    double ips = B * 1000.0 / median, gflops = vit_flops_per_image(ctx) * B / (median * 1e6);
    int threads = params.threads > 0 ? params.threads : omp_get_max_threads();
    const char *wait = getenv("OMP_WAIT_POLICY"); /* figures depend on it: see main.c */
    if (json)
        printf("{\"batch\": %d, \"threads\": %d, \"ms_per_batch\": %.3f, \"images_per_second\": %.2f, "
               "\"gflops\": %.2f, \"blas_core\": \"%s\", \"omp_wait_policy\": \"%s\"}\n",
               B, threads, median, ips, gflops, cli_blas_core(), wait ? wait : "default");
    else
        printf("%s: batch %d, %d thread%s (OpenMP wait policy %s), OpenBLAS %s\n"
               "  %.3f ms per batch (median of %d), %.1f images/s, %.1f GFLOP/s\n",
               dir, B, threads, threads == 1 ? "" : "s", wait ? wait : "default", cli_blas_core(),
               median, runs, ips, gflops);
    free(pixels);
    free(logits);
    free(ms);
    vit_free(ctx);
    return 0;
}
