/* Training-step time of a VisionEncoderDecoder folder (teacher forcing, as vit/train/task_ved.c
 * runs a step, without the AdamW update), split into its stages:
 *   build/bench/ved_train_bench MODEL_DIR [--batch 4] [--len 24] [--steps 5] [--threads 2]
 *                                         [--freeze]
 * Random pixels and label ids (every row --len tokens long); the model's own weights. The first
 * step (page faults, BLAS warm-up) is not timed; prints the median of each stage. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vit/base/alloc.h"
#include "vit/base/clock.h"
#include "vit/base/threads.h"
#include "vit/core/ops.h"
#include "vit/io/model_dir.h"
#include "vit/model/decoder_model.h"
#include "vit/model/vit_model.h"

enum { ENC_FWD, DEC_FWD, LOSS, DEC_BWD, ENC_BWD, STAGES };
static const char *const stage_names[STAGES] = {"encoder forward", "decoder forward", "loss",
                                                "decoder backward", "encoder backward"};

typedef struct {
    int batch, len, steps, threads, freeze;
    model enc, dec, genc, gdec;
    float *enc_grads, *dec_grads, *pixels, *logits, *dstates;
    int *labels;
    int32_t *ids;
    vit_acts va;
    decoder_acts da;
} bench;

static int cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static uint64_t seed = 1;
static float uniform(void) { /* xorshift64*, [0, 1) */
    seed ^= seed >> 12, seed ^= seed << 25, seed ^= seed >> 27;
    return (float)((seed * 2685821657736338717ull) >> 40) / 16777216.0f;
}

static int parse(bench *b, int argc, char **argv) {
    *b = (bench){.batch = 4, .len = 24, .steps = 5, .threads = 2};
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--freeze"))
            b->freeze = 1;
        else if (v && !strcmp(a, "--batch"))
            b->batch = atoi(v), i++;
        else if (v && !strcmp(a, "--len"))
            b->len = atoi(v), i++;
        else if (v && !strcmp(a, "--steps"))
            b->steps = atoi(v), i++;
        else if (v && !strcmp(a, "--threads"))
            b->threads = atoi(v), i++;
        else
            return -1;
    }
    return argc >= 2 && b->batch > 0 && b->len > 1 && b->steps > 0 ? 0 : -1;
}

static int setup(bench *b, const char *dir, vit_error *err) {
    if (model_load_tower(&b->enc, dir, TOWER_IMAGE, err) != 0 ||
        model_load_tower(&b->dec, dir, TOWER_TEXT, err) != 0)
        return -1;
    b->enc_grads = vit_alloc_floats(b->enc.num_params);
    b->dec_grads = vit_alloc_floats(b->dec.num_params);
    if (!b->enc_grads || !b->dec_grads || model_bind(&b->genc, &b->enc, b->enc_grads) != 0 ||
        model_bind(&b->gdec, &b->dec, b->dec_grads) != 0)
        return vit_fail(err, "out of memory");
    if (vit_acts_alloc(&b->va, &b->enc, b->batch, 0, VIT_ACTS_TRAIN, err) != 0 ||
        decoder_acts_alloc_train(&b->da, &b->dec, b->batch, b->len, b->va.tokens, err) != 0)
        return -1;
    const int S = b->enc.cfg.image_size, V = b->dec.cfg.vocab_size, n = b->batch * b->len;
    const size_t px = (size_t)b->batch * b->enc.cfg.num_channels * S * S;
    b->pixels = vit_alloc_floats(px);
    b->logits = vit_alloc_floats((size_t)n * V);
    b->dstates = vit_alloc_floats((size_t)b->batch * b->va.tokens * b->enc.cfg.hidden_size);
    b->labels = malloc(sizeof *b->labels * (size_t)n);
    b->ids = malloc(sizeof *b->ids * (size_t)n);
    if (!b->pixels || !b->logits || !b->dstates || !b->labels || !b->ids)
        return vit_fail(err, "out of memory");
    for (size_t i = 0; i < px; i++) b->pixels[i] = uniform() * 2 - 1;
    for (int i = 0; i < n; i++) b->labels[i] = 4 + (int)(uniform() * (V - 5));
    decoder_shift_right(&b->dec.cfg, b->labels, b->batch, b->len, b->ids);
    return 0;
}

/* One step, each stage's seconds into t[STAGES]. */
static int step(bench *b, double *t, vit_error *err) {
    uint64_t rng = 7;
    const forward_mode mode = {.train = 1, .freeze_encoder = b->freeze, .rng = &rng};
    const int n = b->batch * b->len, V = b->dec.cfg.vocab_size;
    double t0 = clock_seconds(), t1;
    if (vit_model_forward(&b->enc, &b->va, b->pixels, b->batch, &mode, NULL, err) != 0) return -1;
    t1 = clock_seconds(), t[ENC_FWD] = t1 - t0, t0 = t1;
    if (decoder_train_forward(&b->dec, &b->da, vit_acts_hidden(&b->va), b->va.tokens, b->ids,
                              b->batch, b->len, &mode, b->logits, err) != 0)
        return -1;
    t1 = clock_seconds(), t[DEC_FWD] = t1 - t0, t0 = t1;
    int counted;
    token_crossentropy_forward(b->logits, b->logits, b->labels, n, V, 0.1f, &counted, NULL);
    token_crossentropy_backward(b->logits, b->logits, b->labels, n, V, 0.1f, 1.0f, counted);
    t1 = clock_seconds(), t[LOSS] = t1 - t0, t0 = t1;
    decoder_train_backward(&b->dec, &b->gdec, &b->da, b->logits, b->freeze ? NULL : b->dstates);
    t1 = clock_seconds(), t[DEC_BWD] = t1 - t0, t0 = t1;
    if (!b->freeze) vit_model_backward(&b->enc, &b->genc, &b->va, b->dstates);
    t[ENC_BWD] = clock_seconds() - t0;
    return 0;
}

int main(int argc, char **argv) {
    bench b;
    if (parse(&b, argc, argv) != 0) {
        fprintf(stderr,
                "usage: %s MODEL_DIR [--batch N] [--len N] [--steps N] [--threads N] [--freeze]\n",
                argv[0]);
        return 2;
    }
    vit_error err = {0};
    ops_init();
    threads_begin(b.threads);
    if (setup(&b, argv[1], &err) != 0) return fprintf(stderr, "%s\n", err.msg), 1;
    double *times = malloc(sizeof *times * (size_t)b.steps * STAGES), total[64];
    for (int s = -1; s < b.steps; s++) {
        double t[STAGES];
        if (step(&b, t, &err) != 0) return fprintf(stderr, "%s\n", err.msg), 1;
        for (int k = 0; s >= 0 && k < STAGES; k++) times[k * b.steps + s] = t[k];
        if (s >= 0 && s < 64) total[s] = t[0] + t[1] + t[2] + t[3] + t[4];
    }
    const int kept = b.steps < 64 ? b.steps : 64;
    qsort(total, (size_t)kept, sizeof *total, cmp_double);
    printf("%s: batch %d, %d tokens, %d states, %d threads%s: median step %.1f ms (%.2f "
           "images/s)\n",
           argv[1], b.batch, b.len, b.va.tokens, b.threads, b.freeze ? ", frozen encoder" : "",
           1e3 * total[kept / 2], b.batch / total[kept / 2]);
    for (int k = 0; k < STAGES; k++) {
        qsort(times + k * b.steps, (size_t)b.steps, sizeof *times, cmp_double);
        printf("  %-17s %8.1f ms\n", stage_names[k], 1e3 * times[k * b.steps + b.steps / 2]);
    }
    return 0;
}
