/* vit bench: forward passes on synthetic input, after a warm-up. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <omp.h>

#include "vit/base/clock.h"
#include "vit/cli/cli.h"
#include "vit/vit.h"

enum { OPT_MODEL = 1, OPT_BATCH, OPT_RUNS, OPT_THREADS, OPT_SIZE, OPT_JSON };

static const cli_option options[] = {
    {OPT_MODEL, "model", 'm', "DIR", "model directory", "$VIT_MODEL, else the shipped model"},
    {OPT_BATCH, "batch", 'b', "N", "images per forward pass", "1"},
    {OPT_RUNS, "runs", 'n', "N", "timed forward passes (after 3 warm-up passes)", "20"},
    {OPT_THREADS, "threads", 't', "N", "compute threads", "OMP_NUM_THREADS, else one per core"},
    {OPT_SIZE, "size", 0, "N", "run at N x N pixels", "the model's image_size"},
    {OPT_JSON, "json", 0, NULL, "one JSON line instead of text", NULL},
};

static const cli_command command = {
    "bench",
    "time forward passes on synthetic input",
    "[options]",
    "Times forward passes of random pixels and prints the median time per batch, images per\n"
    "second and GFLOP/s, with the settings the figures depend on.",
    options,
    sizeof options / sizeof options[0]};

const cli_command *cli_bench_command(void) {
    return &command;
}

static int compare_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int cli_bench(int argc, char **argv) {
    const char *model_opt = NULL;
    vit_params params = vit_default_params();
    int runs = 20, json = 0, id, bad = 0;
    cli_parser p;
    cli_parse_begin(&p, &command, argc, argv);
    while (!bad && (id = cli_parse_next(&p)) > 0) {
        switch (id) {
        case OPT_MODEL:
            model_opt = p.value;
            break;
        case OPT_BATCH:
            bad = cli_int(&p, 1, 4096, &params.max_batch);
            break;
        case OPT_RUNS:
            bad = cli_int(&p, 1, 1000000, &runs);
            break;
        case OPT_THREADS:
            bad = cli_int(&p, 1, 1024, &params.threads);
            break;
        case OPT_SIZE:
            bad = cli_int(&p, 1, 8192, &params.image_size);
            break;
        case OPT_JSON:
            json = 1;
            break;
        }
    }
    if (bad || id == CLI_ERROR) return 2;
    if (id == CLI_HELP) return 0;
    if (p.num_rest) {
        fprintf(stderr, "vit bench: unexpected argument '%s' (vit bench --help)\n", p.rest[0]);
        return 2;
    }
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
    for (size_t i = 0; i < F * (size_t)B; i++)
        pixels[i] = (float)rand_r(&seed) / RAND_MAX * 2.0f - 1.0f;
    for (int i = 0; i < 3; i++)
        vit_forward(ctx, pixels, B, logits, &err); /* warm-up: caches, threads */
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
        printf(
            "{\"batch\": %d, \"threads\": %d, \"ms_per_batch\": %.3f, \"images_per_second\": %.2f, "
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
