/* Training-step throughput on a Fashion-MNIST-sized ViT (28x28x1, patch 4, 10 labels; the
 * defaults are the shape of models/fashion-vit):
 *   build/bench/train_bench [--hidden 64] [--layers 6] [--batch 128] [--steps 20] [--threads 2]
 *                           [--dropout 0] [--freeze]
 * Random weights, pixels and labels; the first two steps (page faults, BLAS warm-up) are not timed;
 * prints the median and the best step time. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vit/base/alloc.h"
#include "vit/base/clock.h"
#include "vit/model/params.h"
#include "vit/core/ops.h"
#include "vit/base/threads.h"
#include "vit/model/vit_model.h"

static int cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static uint64_t seed = 1;
static float uniform(void) { /* xorshift64*, [0, 1) */
    seed ^= seed >> 12, seed ^= seed << 25, seed ^= seed >> 27;
    return (float)((seed * 2685821657736338717ull) >> 40) / 16777216.0f;
}

int main(int argc, char **argv) {
    int hidden = 64, layers = 6, batch = 128, steps = 20, threads = 2, freeze = 0;
    float dropout = 0.0f;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--freeze"))
            freeze = 1;
        else if (v && !strcmp(a, "--hidden"))
            hidden = atoi(v), i++;
        else if (v && !strcmp(a, "--layers"))
            layers = atoi(v), i++;
        else if (v && !strcmp(a, "--batch"))
            batch = atoi(v), i++;
        else if (v && !strcmp(a, "--steps"))
            steps = atoi(v), i++;
        else if (v && !strcmp(a, "--threads"))
            threads = atoi(v), i++;
        else if (v && !strcmp(a, "--dropout"))
            dropout = (float)atof(v), i++;
        else {
            fprintf(stderr,
                    "usage: %s [--hidden N] [--layers N] [--batch N] [--steps N] [--threads N] "
                    "[--dropout P] [--freeze]\n",
                    argv[0]);
            return 2;
        }
    }
    char json[512];
    snprintf(json, sizeof json,
             "{\"model_type\": \"vit\", \"image_size\": 28, \"patch_size\": 4, \"num_channels\": 1,"
             " \"hidden_size\": %d, \"num_hidden_layers\": %d, \"num_attention_heads\": 4,"
             " \"intermediate_size\": %d, \"num_labels\": 10, \"layer_norm_eps\": 1e-12}",
             hidden, layers, 2 * hidden);
    vit_error err = {0};
    model_config cfg;
    model m;
    if (model_config_parse(json, "bench", &cfg, &err) != 0 || model_create(&m, &cfg, &err) != 0) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    for (size_t i = 0; i < m.num_params; i++) m.params[i] = (uniform() - 0.5f) * 0.1f;
    for (int l = 0; l < layers; l++)
        for (int d = 0; d < hidden; d++) m.layers[l].ln1_w[d] = m.layers[l].ln2_w[d] = 1.0f;
    for (int d = 0; d < hidden; d++) m.final_ln_w[d] = 1.0f;
    vit_acts a;
    model g;
    float *grads = vit_alloc_floats(m.num_params);
    if (vit_acts_alloc(&a, &m, batch, 0, 1, &err) != 0 || !grads ||
        model_bind(&g, &m, grads) != 0) {
        fprintf(stderr, "%s\n", err.msg[0] ? err.msg : "out of memory");
        return 1;
    }
    ops_init();
    threads_begin(threads);
    const size_t px = (size_t)batch * 28 * 28;
    float *pixels = malloc(px * sizeof(float));
    int *labels = malloc((size_t)batch * sizeof(int));
    for (size_t i = 0; i < px; i++) pixels[i] = uniform() * 2 - 1;
    for (int b = 0; b < batch; b++) labels[b] = b % 10;
    uint64_t rng = 42;
    const forward_mode mode = {.train = 1,
                               .freeze_encoder = freeze,
                               .dropout = dropout,
                               .classifier_dropout = -1,
                               .rng = &rng};
    float *logits = malloc((size_t)batch * 10 * sizeof(float));
    float *probs = malloc((size_t)batch * 10 * sizeof(float));
    float *dlogits = malloc((size_t)batch * 10 * sizeof(float));
    float loss = 0;
    double *times = malloc((size_t)steps * sizeof(double));
    for (int s = -2; s < steps; s++) {
        const double t0 = clock_seconds();
        /* a training step as vit/train/step.c runs it, without the update */
        memset(grads, 0, m.num_params * sizeof(float));
        if (vit_model_forward(&m, &a, pixels, batch, &mode, logits, &err) != 0) {
            fprintf(stderr, "%s\n", err.msg);
            return 1;
        }
        loss = (float)crossentropy_forward(probs, logits, labels, batch, 10, 0.1f);
        crossentropy_backward(dlogits, probs, labels, batch, 10, 0.1f, 1.0f);
        vit_model_backward(&m, &g, &a, dlogits);
        if (s >= 0) times[s] = clock_seconds() - t0;
    }
    /* the median step: other processes on the machine only ever make steps slower */
    qsort(times, (size_t)steps, sizeof *times, cmp_double);
    const double dt = times[steps / 2], best = times[0];
    /* forward + backward = 3x the forward's multiply-adds (frozen: about the forward alone) */
    const double gflop =
        (freeze ? 1.0 : 3.0) * model_flops(&m, model_vit_tokens(&m, 28)) * batch / 1e9;
    printf("hidden %d, layers %d, batch %d, threads %d, dropout %g%s: median %.1f ms/step = %.0f "
           "images/s "
           "(%.1f GFLOP/s); best %.1f ms = %.0f images/s; loss %.4f\n",
           hidden, layers, batch, threads, dropout, freeze ? ", frozen encoder" : "", dt * 1e3,
           batch / dt, gflop / dt, best * 1e3, batch / best, loss);
    free(times);
    free(pixels);
    free(labels);
    free(logits), free(probs), free(dlogits), free(grads);
    model_unbind(&g);
    vit_acts_free(&a);
    model_free(&m);
    return 0;
}
