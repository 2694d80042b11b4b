/* Image-to-text speed of a VisionEncoderDecoderModel folder (tools/ved_bench_models.py writes
 * random-weight ones of the real checkpoints' sizes):
 *   build/bench/generate_bench --model DIR [--backend onednn|openblas] [--precision fp32|bf16|int8]
 *                              [--threads 2] [--tokens 32] [--steps 64] [--recompute N]
 *                              [--repeats 5] [--only generate|steps]
 *
 * 1. vit_generate, greedy and 4 beams, on 1 and 8 random images, with min_length = the start token
 *    + --tokens so that every sequence runs the full length (no end token, no early stop). The
 *    encoder is timed alone (vit_forward on the generator's image context) and the decoder's time
 *    is vit_generate's minus the encoder's (medians of --repeats runs after one warm-up).
 *    tokens/s = tokens per image x images / decoder time (what a caller receives); beam search
 *    also runs beams x images rows a step: rows x steps / decoder time.
 * 2. The decoder's step time as the sequence grows: decoder_forward one token per row after
 *    decoder_set_states, steps 1 .. --steps, for 1 image greedy (1 row), 1 image with 4 beams (4
 *    rows, each step after a decoder_reorder to other parents as beam search does), 8 images
 *    greedy (8 rows, each reading its own image) and 8 images with 4 beams (32 rows), median per
 *    step over --repeats runs (random encoder states); against the first two, the time of a full
 *    recompute of the sequence without the cache (decoder_forward with T = step on freshly set
 *    states) at the powers of two up to --recompute (default --steps). Then the output
 *    projection, decoder_set_states and the reorder alone.
 * Prints markdown tables. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vit/base/clock.h"
#include "vit/base/threads.h"
#include "vit/core/ops.h"
#include "vit/io/model_dir.h"
#include "vit/model/decoder_model.h"
#include "vit/vit.h"
#include "vit/vit_internal.h"

typedef struct {
    const char *model, *only;
    vit_backend backend;
    vit_precision precision;
    int threads, tokens, steps, recompute, repeats;
} options;

static int cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median: other processes on the machine only ever make a run slower. */
static double median(double *t, int n) {
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

static uint64_t seed = 1;
static float uniform(void) { /* xorshift64*, [0, 1) */
    seed ^= seed >> 12, seed ^= seed << 25, seed ^= seed >> 27;
    return (float)((seed * 2685821657736338717ull) >> 40) / 16777216.0f;
}

static int usage(const char *argv0) {
    fprintf(stderr,
            "usage: %s --model DIR [--backend onednn|openblas] [--precision fp32|bf16|int8] "
            "[--threads N] [--tokens N] [--steps N] [--recompute N] [--repeats N] "
            "[--only generate|steps]\n",
            argv0);
    return 2;
}

static int parse_enum(const char *v, const char *const *names, int n) {
    for (int i = 0; i < n; i++)
        if (!strcmp(v, names[i])) return i;
    return -1;
}

static int parse(int argc, char **argv, options *o) {
    static const char *const backends[] = {"default", "openblas", "onednn"};
    static const char *const precisions[] = {"fp32", "bf16", "int8"};
    *o = (options){.threads = 2, .tokens = 32, .steps = 64, .repeats = 5, .only = ""};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[++i] : NULL;
        int e = 0;
        if (!v) return -1;
        if (!strcmp(a, "--model"))
            o->model = v;
        else if (!strcmp(a, "--only"))
            o->only = v;
        else if (!strcmp(a, "--backend") && (e = parse_enum(v, backends, 3)) >= 0)
            o->backend = (vit_backend)e;
        else if (!strcmp(a, "--precision") && (e = parse_enum(v, precisions, 3)) >= 0)
            o->precision = (vit_precision)e;
        else if (!strcmp(a, "--threads"))
            o->threads = atoi(v);
        else if (!strcmp(a, "--tokens"))
            o->tokens = atoi(v);
        else if (!strcmp(a, "--steps"))
            o->steps = atoi(v);
        else if (!strcmp(a, "--recompute"))
            o->recompute = atoi(v);
        else if (!strcmp(a, "--repeats"))
            o->repeats = atoi(v);
        else
            return -1;
    }
    if (!o->recompute) o->recompute = o->steps;
    return o->model && o->threads > 0 && o->tokens > 0 && o->steps > 0 && o->recompute > 0 &&
                   o->recompute <= o->steps && o->repeats > 0
               ? 0
               : -1;
}

/* ---- 1. vit_generate ---- */

typedef struct {
    double encoder, decoder; /* medians, seconds */
} gen_times;

/* Every sequence must have run the full length, or the tokens/s would count steps not run. */
static int check_lengths(const vit_generation *out, int batch, int want) {
    for (int i = 0; i < batch; i++)
        if (out[i].num_ids != want) {
            fprintf(stderr, "image %d: %d ids, not %d: an end token came early\n", i,
                    out[i].num_ids, want);
            return -1;
        }
    return 0;
}

static int time_generate(vit_gen_context *g, const float *pixels, int batch,
                         const vit_gen_options *opt, int repeats, gen_times *t, vit_error *err) {
    vit_context *image = vit_gen_image_context(g);
    double enc[64], gen[64];
    vit_generation out[8];
    for (int r = -1; r < repeats; r++) { /* run -1: warm-up (page faults, primitives) */
        const double t0 = clock_seconds();
        if (vit_forward(image, pixels, batch, NULL, err) != 0) return -1;
        const double t1 = clock_seconds();
        if (vit_generate(g, pixels, batch, opt, out, err) != 0) return -1;
        const double t2 = clock_seconds();
        const int bad = check_lengths(out, batch, opt->max_new_tokens + 1);
        vit_generation_free(out, batch);
        if (bad) return -1;
        if (r >= 0) enc[r] = t1 - t0, gen[r] = t2 - t1;
    }
    t->encoder = median(enc, repeats);
    t->decoder = median(gen, repeats) - t->encoder;
    return 0;
}

static void print_generate_row(int beams, int batch, int tokens, const gen_times *t) {
    const double dec = t->decoder, steps = tokens;
    printf("| %s | %d | %.1f | %.1f | %.1f | %.2f | %.1f | %.1f |\n",
           beams == 1 ? "greedy" : "4 beams", batch, t->encoder * 1e3, dec * 1e3,
           (t->encoder + dec) * 1e3, dec / steps * 1e3, tokens * batch / dec,
           beams * batch * steps / dec);
}

static int run_generate(vit_gen_context *g, const options *o, vit_error *err) {
    vit_context *image = vit_gen_image_context(g);
    const size_t n = vit_input_floats(image) * 8;
    float *pixels = malloc(n * sizeof(float));
    if (!pixels) return vit_fail(err, "out of memory");
    for (size_t i = 0; i < n; i++) pixels[i] = uniform() * 2 - 1;
    printf("\nvit_generate, max_new_tokens %d, min_length %d (every sequence runs %d steps), "
           "no_repeat_ngram 0; decoder = vit_generate - encoder (medians of %d)\n\n",
           o->tokens, o->tokens + 1, o->tokens, o->repeats);
    printf("| search | images | encoder ms | decoder ms | total ms | decoder ms/step | tokens/s | "
           "rows x steps/s |\n|---|---|---|---|---|---|---|---|\n");
    int rc = 0;
    for (int beams = 1; beams <= 4 && rc == 0; beams += 3)
        for (int batch = 1; batch <= 8 && rc == 0; batch += 7) {
            vit_gen_options opt = vit_gen_default_options(g);
            opt.num_beams = beams;
            opt.max_new_tokens = o->tokens;
            opt.min_length = o->tokens + 1; /* the start token counts */
            opt.no_repeat_ngram_size = 0;
            gen_times t;
            rc = time_generate(g, pixels, batch, &opt, o->repeats, &t, err);
            if (rc == 0) print_generate_row(beams, batch, o->tokens, &t);
            fflush(stdout);
        }
    free(pixels);
    return rc;
}

/* Loads the folder for 8 images and 4 beams; *states: the encoder's output rows per image. */
static int bench_generate(const options *o, int *states, vit_error *err) {
    vit_gen_params p = vit_gen_default_params();
    p.image.threads = o->threads;
    p.image.max_batch = 8;
    p.image.backend = o->backend;
    p.image.precision = o->precision;
    p.max_beams = 4;
    const double t0 = clock_seconds();
    vit_gen_context *g = vit_gen_load(o->model, &p, err);
    if (!g) return -1;
    vit_context *image = vit_gen_image_context(g);
    *states = vit_tokens(image);
    printf("%s: loaded in %.2f s; encoder %s, %d states; decoder %s, vocabulary %d\n", o->model,
           clock_seconds() - t0, vit_compute(image), *states, vit_gen_compute(g),
           vit_gen_vocab_size(g));
    const int rc = strcmp(o->only, "steps") ? run_generate(g, o, err) : 0;
    vit_gen_free(g);
    return rc;
}

/* ---- 2. the step time as the sequence grows ---- */

#define MAX_IMAGES 8
#define MAX_ROWS   32 /* 8 images x 4 beams */

typedef struct {
    model m;
    gemm_state *gemm;
    float *states, *logits; /* states: MAX_IMAGES x S random encoder outputs */
    int32_t *ids;           /* [MAX_ROWS, steps] random ids, never a special one */
    int S;
} step_bench;

static int step_bench_init(step_bench *b, const options *o, int S, vit_error *err) {
    memset(b, 0, sizeof *b);
    b->S = S;
    char compute[128];
    /* room for the largest product: the cross-attention's keys of 8 images, or a recompute's
     * 4 x steps rows */
    const int tokens = S > o->steps ? S : o->steps;
    if (model_load_tower(&b->m, o->model, TOWER_TEXT, err) != 0 ||
        api_prepare(&b->m, o->backend, o->precision, MAX_IMAGES, tokens, o->threads, 0, compute,
                    sizeof compute, err) != 0 ||
        !(b->gemm = model_gemm_state(&b->m, err)))
        return -1;
    const model_config *c = &b->m.cfg;
    const size_t ns = (size_t)MAX_IMAGES * S * c->encoder_hidden;
    b->states = malloc(ns * sizeof(float));
    b->logits = malloc((size_t)MAX_ROWS * c->vocab_size * sizeof(float));
    b->ids = malloc((size_t)MAX_ROWS * o->steps * sizeof(int32_t));
    if (!b->states || !b->logits || !b->ids) return vit_fail(err, "out of memory");
    for (size_t i = 0; i < ns; i++) b->states[i] = uniform() * 2 - 1;
    for (int i = 0; i < MAX_ROWS * o->steps; i++) /* above the special ids (TrOCR's pad is 1) */
        b->ids[i] = 4 + (int32_t)(uniform() * (float)(c->vocab_size - 5));
    printf("\ndecoder steps: %s, %d layers, width %d, vocabulary %d, %d cross states\n", compute,
           c->num_layers, c->hidden_size, c->vocab_size, S);
    return 0;
}

static void step_bench_free(step_bench *b) {
    gemm_state_free(b->gemm);
    free(b->states), free(b->logits), free(b->ids);
    model_free(&b->m);
}

/* Buffers and cross states for rows sequences over `images` images (rows / images beams each). */
static int acts_for(step_bench *b, decoder_acts *a, int rows, int len, int images, vit_error *err) {
    if (decoder_acts_alloc(a, &b->m, rows, len, images, b->S, err) != 0) return -1;
    a->gemm = b->gemm;
    return 0;
}

/* cached[s]: the median time of step s+1 (one new token per row after s cached positions) of
 * rows sequences over `images` images; with several beams an image, each step after a
 * decoder_reorder that swaps pairs of beams, as a beam search step does. */
static int time_cached(step_bench *b, int rows, int images, const options *o, double *cached,
                       vit_error *err) {
    decoder_acts a;
    if (acts_for(b, &a, rows, o->steps, images, err) != 0) return -1;
    double *t = malloc(sizeof(double) * (size_t)o->steps * o->repeats);
    int parent[MAX_ROWS], rc = t ? 0 : vit_fail(err, "out of memory");
    int32_t step_ids[MAX_ROWS];
    for (int r = 0; r < rows; r++) parent[r] = r ^ 1; /* within an image's beams */
    for (int r = -1; r < o->repeats && rc == 0; r++) {
        rc = decoder_set_states(&b->m, &a, b->states, images, b->S, rows / images, err);
        for (int s = 0; s < o->steps && rc == 0; s++) {
            for (int i = 0; i < rows; i++) step_ids[i] = b->ids[i * o->steps + s];
            const double t0 = clock_seconds();
            if (rows > images && s > 0) decoder_reorder(&a, parent, rows);
            rc = decoder_forward(&b->m, &a, step_ids, rows, 1, 0, b->logits, err);
            if (r >= 0) t[(size_t)s * o->repeats + r] = clock_seconds() - t0;
        }
    }
    for (int s = 0; s < o->steps && rc == 0; s++)
        cached[s] = median(t + (size_t)s * o->repeats, o->repeats);
    free(t);
    decoder_acts_free(&a);
    return rc;
}

/* The median time of decoder_forward over the whole sequence of T ids per row (rows beams of one
 * image), no cache. */
static int time_recompute(step_bench *b, int rows, int T, const options *o, double *out,
                          vit_error *err) {
    decoder_acts a;
    if (acts_for(b, &a, rows, T, 1, err) != 0) return -1;
    int32_t *ids = malloc(sizeof(int32_t) * (size_t)rows * T);
    double t[64];
    int rc = ids ? 0 : vit_fail(err, "out of memory");
    for (int i = 0; i < rows * T && rc == 0; i++) ids[i] = b->ids[(i / T) * o->steps + i % T];
    for (int r = -1; r < o->repeats && rc == 0; r++) {
        rc = decoder_set_states(&b->m, &a, b->states, 1, b->S, rows, err);
        const double t0 = clock_seconds();
        if (rc == 0) rc = decoder_forward(&b->m, &a, ids, rows, T, 0, b->logits, err);
        if (r >= 0) t[r] = clock_seconds() - t0;
    }
    if (rc == 0) *out = median(t, o->repeats);
    free(ids);
    decoder_acts_free(&a);
    return rc;
}

static double mean(const double *x, int n) {
    double s = 0;
    for (int i = 0; i < n; i++) s += x[i];
    return s / n;
}

/* The four cached runs (rows, images) and the two recomputes (rows of one image). */
static const int RUN_ROWS[4] = {1, 4, 8, 32}, RUN_IMAGES[4] = {1, 1, 8, 8};

typedef struct {
    double *cached[4];
    double re[2][32]; /* at steps 1, 2, 4, ... */
} step_times;

/* Row of step `step`; k: its index among the powers of two (-1: not one). */
static void print_step_row(int step, const options *o, const step_times *t, int k) {
    char re[2][32] = {"", ""};
    for (int i = 0; i < 2; i++)
        if (k >= 0 && step <= o->recompute)
            snprintf(re[i], sizeof re[i], "%.2f", t->re[i][k] * 1e3);
    printf("| %d | %.2f | %s | %.2f | %s | %.2f | %.2f |\n", step, t->cached[0][step - 1] * 1e3,
           re[0], t->cached[1][step - 1] * 1e3, re[1], t->cached[2][step - 1] * 1e3,
           t->cached[3][step - 1] * 1e3);
}

static void print_step_table(const options *o, const step_times *t) {
    printf("\nms per decoder step (medians of %d): cached, step n runs 1 new position per row over "
           "n-1 cached ones (beams: after a decoder_reorder); recompute runs all n positions "
           "without a cache\n\n",
           o->repeats);
    printf("| step n | 1 image, greedy: cached | recompute | 1 image, 4 beams: cached | recompute "
           "| 8 images, greedy: cached | 8 images, 4 beams: cached |\n"
           "|---|---|---|---|---|---|---|\n");
    int k = 0;
    for (int step = 1; step <= o->steps; step *= 2, k++) print_step_row(step, o, t, k);
    if (o->steps & (o->steps - 1)) print_step_row(o->steps, o, t, -1);
    printf("| mean of steps 1..%d | %.2f | | %.2f | | %.2f | %.2f |\n", o->steps,
           mean(t->cached[0], o->steps) * 1e3, mean(t->cached[1], o->steps) * 1e3,
           mean(t->cached[2], o->steps) * 1e3, mean(t->cached[3], o->steps) * 1e3);
}

static int step_table(step_bench *b, const options *o, vit_error *err) {
    step_times t = {0};
    int rc = 0;
    for (int i = 0; i < 4 && rc == 0; i++) {
        t.cached[i] = malloc(sizeof(double) * o->steps);
        rc = t.cached[i] ? time_cached(b, RUN_ROWS[i], RUN_IMAGES[i], o, t.cached[i], err)
                         : vit_fail(err, "out of memory");
    }
    int k = 0;
    for (int T = 1; T <= o->recompute && rc == 0; T *= 2, k++) {
        rc = time_recompute(b, 1, T, o, &t.re[0][k], err);
        if (rc == 0) rc = time_recompute(b, 4, T, o, &t.re[1][k], err);
    }
    if (rc == 0) print_step_table(o, &t);
    for (int i = 0; i < 4; i++) free(t.cached[i]);
    return rc;
}

/* The output projection alone ([rows, D] x [D, vocab], as decoder_forward runs it) and one
 * decoder_reorder of a full cache: the parts of a step that do not depend on the layers. */
static int parts(step_bench *b, const options *o, vit_error *err) {
    const model_config *c = &b->m.cfg;
    float *x = malloc(sizeof(float) * MAX_ROWS * c->hidden_size);
    if (!x) return vit_fail(err, "out of memory");
    for (int i = 0; i < MAX_ROWS * c->hidden_size; i++) x[i] = uniform() - 0.5f;
    printf("\n");
    for (int i = 0; i < 4; i++) {
        const int rows = RUN_ROWS[i];
        double t[64];
        for (int r = -1; r < o->repeats; r++) {
            const double t0 = clock_seconds();
            gemm_run(b->m.head, x, rows, b->logits, b->gemm);
            if (r >= 0) t[r] = clock_seconds() - t0;
        }
        printf("output projection alone, %d row%s x %d x %d: %.2f ms\n", rows, rows > 1 ? "s" : "",
               c->hidden_size, c->vocab_size, median(t, o->repeats) * 1e3);
    }
    free(x);
    decoder_acts a;
    if (acts_for(b, &a, 4, o->steps, 1, err) != 0) return -1;
    int parent[4] = {1, 0, 3, 2}, rc = 0;
    double t[64], u[64];
    for (int r = -1; r < o->repeats && rc == 0; r++) {
        const double t0 = clock_seconds();
        rc = decoder_set_states(&b->m, &a, b->states, 1, b->S, 4, err);
        const double t1 = clock_seconds();
        a.cache.past =
            o->steps; /* a full cache: the reorder copies every layer's keys and values */
        decoder_reorder(&a, parent, 4);
        if (r >= 0) t[r] = t1 - t0, u[r] = clock_seconds() - t1;
    }
    if (rc == 0)
        printf(
            "decoder_set_states alone (the cross-attention's keys and values of %d states, once "
            "per image): %.2f ms\ndecoder_reorder alone, 4 rows of %d cached positions: %.3f ms\n",
            b->S, median(t, o->repeats) * 1e3, o->steps, median(u, o->repeats) * 1e3);
    decoder_acts_free(&a);
    return rc;
}

static int bench_steps(const options *o, int S, vit_error *err) {
    step_bench b;
    const threads_scope scope = threads_begin(o->threads);
    int rc = step_bench_init(&b, o, S, err);
    if (rc == 0) rc = step_table(&b, o, err);
    if (rc == 0) rc = parts(&b, o, err);
    threads_end(scope);
    step_bench_free(&b);
    return rc;
}

int main(int argc, char **argv) {
    options o;
    if (parse(argc, argv, &o) != 0 || o.repeats > 64 || o.recompute >= 1 << 30)
        return usage(argv[0]);
    ops_init();
    vit_error err = {0};
    int S = 0;
    int rc = bench_generate(&o, &S, &err);
    if (rc == 0 && strcmp(o.only, "generate")) rc = bench_steps(&o, S, &err);
    if (rc != 0) fprintf(stderr, "generate_bench: %s\n", err.msg);
    return rc ? 1 : 0;
}
