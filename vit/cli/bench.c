/* vit bench: forward passes on synthetic input, after a warm-up. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <omp.h>

#include "vit/base/clock.h"
#include "vit/cli/cli.h"
#include "vit/vit.h"

enum {
    OPT_RUNS = 1,
    OPT_JSON,
};

static const cli_option options[] = {
    CLI_MODEL_OPTION("model directory", CLI_MODEL_DEFAULT),
    CLI_BATCH_OPTION("images per forward pass", "1"),
    {OPT_RUNS, "runs", 'n', "N", "timed forward passes (after 3 warm-up passes)", "20"},
    CLI_THREADS_OPTION,
    CLI_SIZE_OPTION("run at N x N pixels"),
    {OPT_JSON, "json", 0, NULL, "one JSON line instead of text", NULL},
    CLI_BACKEND_OPTION,
    CLI_PRECISION_OPTION,
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

typedef struct {
    cli_common common;
    int runs, json;
} bench_options;

static int bench_option(const cli_parser *p, int id, void *user) {
    bench_options *o = user;
    if (id == OPT_RUNS) return cli_int(p, 1, 1000000, &o->runs);
    if (id == OPT_JSON) o->json = 1;
    return 0;
}

static cli_outcome parse_options(int argc, char **argv, bench_options *o) {
    cli_parser p;
    const cli_outcome parsed = cli_parse(&p, &command, argc, argv, &o->common, bench_option, o);
    if (parsed == CLI_PARSED && p.num_rest)
        return cli_usage_error(&command, "unexpected argument '%s'", p.rest[0]);
    return parsed;
}

/* The median milliseconds of `runs` forward passes of batch B on random pixels, after three
 * passes of warm-up (caches, threads); -1 when out of memory. */
static double median_ms(vit_context *ctx, int B, int runs) {
    const size_t F = vit_input_floats(ctx);
    float *pixels = malloc(sizeof(float) * F * (size_t)B);
    float *logits = malloc(sizeof(float) * (size_t)B * vit_num_labels(ctx));
    double *ms = malloc(sizeof(double) * (size_t)runs), median = -1;
    vit_error err;
    if (pixels && logits && ms) {
        unsigned seed = 1;
        for (size_t i = 0; i < F * (size_t)B; i++)
            pixels[i] = (float)((double)rand_r(&seed) / RAND_MAX * 2.0 - 1.0);
        for (int i = 0; i < 3; i++) vit_forward(ctx, pixels, B, logits, &err);
        for (int i = 0; i < runs; i++) {
            const double t0 = clock_seconds();
            vit_forward(ctx, pixels, B, logits, &err);
            ms[i] = 1e3 * (clock_seconds() - t0);
        }
        qsort(ms, (size_t)runs, sizeof *ms, compare_double);
        median = runs % 2 ? ms[runs / 2] : 0.5 * (ms[runs / 2 - 1] + ms[runs / 2]);
    }
    free(pixels);
    free(logits);
    free(ms);
    return median;
}

static void print_result(const bench_options *o, const vit_context *ctx, const char *dir,
                         double median) {
    const int B = o->common.params.max_batch, runs = o->runs;
    const double ips = B * 1000.0 / median, gflops = vit_flops_per_image(ctx) * B / (median * 1e6);
    const int threads =
        o->common.params.threads > 0 ? o->common.params.threads : omp_get_max_threads();
    const char *wait = getenv("OMP_WAIT_POLICY"); /* figures depend on it: see main.c */
    int channels, height, width;
    vit_input_shape(ctx, &channels, &height, &width);
    if (!o->json) {
        printf("%s: %dx%d (%d tokens), batch %d, %d thread%s (OpenMP wait policy %s), %s; "
               "OpenBLAS %s\n"
               "  %.3f ms per batch (median of %d), %.1f images/s, %.1f GFLOP/s\n",
               dir, width, height, vit_tokens(ctx), B, threads, threads == 1 ? "" : "s",
               wait ? wait : "default", vit_compute(ctx), cli_blas_core(), median, runs, ips,
               gflops);
        return;
    }
    json_writer w = json_begin(stdout);
    json_object(&w);
    json_key(&w, "size");
    json_int(&w, width);
    json_key(&w, "tokens");
    json_int(&w, vit_tokens(ctx));
    json_key(&w, "batch");
    json_int(&w, B);
    json_key(&w, "threads");
    json_int(&w, threads);
    json_key(&w, "ms_per_batch");
    json_float(&w, (float)median);
    json_key(&w, "images_per_second");
    json_float(&w, (float)ips);
    json_key(&w, "gflops");
    json_float(&w, (float)gflops);
    json_key(&w, "blas_core");
    json_string(&w, cli_blas_core());
    json_key(&w, "compute");
    json_string(&w, vit_compute(ctx));
    json_key(&w, "omp_wait_policy");
    json_string(&w, wait ? wait : "default");
    json_end(&w);
    json_line(&w);
}

int cli_bench(int argc, char **argv) {
    bench_options o = {.common.params = vit_default_params(), .runs = 20};
    o.common.params.inference_only = 1; /* as classify and eval run */
    const cli_outcome parsed = parse_options(argc, argv, &o);
    if (parsed != CLI_PARSED) return cli_exit_status(parsed);
    char dir[4096];
    vit_context *ctx = cli_load_image_model(&command, &o.common, dir, sizeof dir);
    if (!ctx) return 1;
    const double median = median_ms(ctx, o.common.params.max_batch, o.runs);
    if (median < 0)
        fprintf(stderr, "vit bench: out of memory\n");
    else
        print_result(&o, ctx, dir, median);
    vit_free(ctx);
    return median < 0;
}
