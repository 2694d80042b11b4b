/* Weights shared, state per context: a model loaded once, a second context over the same
 * weights (vit_share, vit_text_share), and the two computing at the same time on two threads,
 * many times, over different inputs and batch sizes. Every answer must equal, bit for bit, the
 * one the first context gave alone on one thread before: the weights (and their prepared
 * layers) are only read while they run, and nothing a computation writes is shared.
 *
 * Each context runs with one thread, so the two threads' answers can be compared with the
 * single-thread ones exactly (OpenBLAS splits rows among threads, which changes nothing here,
 * but oneDNN's kernels may sum in another order on another thread count). Batches of several
 * sizes reach the primitives oneDNN makes at run time for row counts other than the largest
 * (made per context). Every backend and precision the build and CPU run: OpenBLAS fp32 and bf16
 * (computed in fp32 with rounded operands), oneDNN fp32, bf16 and int8. */
#include "tests/testutil.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vit/vit.h"

#define FASHION   "models/fashion-vit"   /* the shipped model, from the project root */
#define VIT_TINY  "models/vit-tiny-in1k" /* ImageNet ViT-Tiny, shipped too */
#define MAX_BATCH 4
#define ROUNDS    25 /* passes over every batch, per thread, for the small models */

typedef struct {
    vit_backend backend;
    vit_precision precision;
    const char *name;
} setting;

static const setting settings[] = {
    {VIT_BACKEND_OPENBLAS, VIT_FP32, "openblas fp32"},
    {VIT_BACKEND_OPENBLAS, VIT_BF16, "openblas bf16"},
    {VIT_BACKEND_ONEDNN, VIT_FP32, "onednn fp32"},
    {VIT_BACKEND_ONEDNN, VIT_BF16, "onednn bf16"},
    {VIT_BACKEND_ONEDNN, VIT_INT8, "onednn int8"},
};
#define NUM_SETTINGS (int)(sizeof settings / sizeof settings[0])

/* ---- the work: batches of inputs, and their answers ---- */

/* Batch b holds sizes[b] inputs; every batch has its own inputs and its own answers. */
static const int sizes[] = {1, 2, 4, 3, 1, 4, 3, 2};
#define NUM_BATCHES (int)(sizeof sizes / sizeof sizes[0])

typedef struct {
    int (*run)(void *ctx, int b, float *out, vit_error *err); /* batch b's answers into out */
    size_t out_floats;                                        /* per batch, at most */
    float *want;                                              /* [batches, out_floats] */
    int batches, rounds; /* batches 0..batches-1, rounds times over */
} workload;

typedef struct {
    const workload *w;
    void *ctx;
    int reverse; /* the batches in reverse order: the two threads never run in step */
    int runs, failed, differ;
    char why[512];
} worker;

static void *work(void *arg) {
    worker *k = arg;
    float *got = test_alloc_floats(k->w->out_floats);
    for (int r = 0; r < k->w->rounds; r++)
        for (int i = 0; i < k->w->batches; i++) {
            const int b = k->reverse ? k->w->batches - 1 - i : i;
            vit_error err = {0};
            memset(got, 0xff, sizeof(float) * k->w->out_floats); /* NaN: nothing left over */
            if (k->w->run(k->ctx, b, got, &err) != 0) {
                k->failed++;
                snprintf(k->why, sizeof k->why, "%s", err.msg);
                continue;
            }
            k->runs++;
            k->differ += memcmp(got, k->w->want + (size_t)b * k->w->out_floats,
                                sizeof(float) * k->w->out_floats) != 0;
        }
    free(got);
    return NULL;
}

/* The answers of ctx alone, then ctx and its share on two threads at once; then ctx is freed
 * first and the share alone must still answer the same. */
static void run_shared(const workload *w, void *ctx, void *shared, void (*free_ctx)(void *),
                       const char *what) {
    for (int b = 0; b < w->batches; b++) {
        vit_error err = {0};
        if (w->run(ctx, b, w->want + (size_t)b * w->out_floats, &err) != 0)
            fail_msg("%s: %s", what, err.msg);
    }
    worker k[2] = {{.w = w, .ctx = ctx}, {.w = w, .ctx = shared, .reverse = 1}};
    pthread_t t[2];
    for (int i = 0; i < 2; i++) assert_int_equal(pthread_create(&t[i], NULL, work, &k[i]), 0);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    print_message("%s: %d + %d batches on two threads, %d + %d differ from one thread's\n", what,
                  k[0].runs, k[1].runs, k[0].differ, k[1].differ);
    for (int i = 0; i < 2; i++) {
        if (k[i].failed) fail_msg("%s: thread %d: %s", what, i, k[i].why);
        assert_int_equal(k[i].differ, 0);
    }
    free_ctx(ctx);
    workload once = *w;
    once.rounds = 1;
    worker alone = {.w = &once, .ctx = shared};
    work(&alone);
    assert_int_equal(alone.failed + alone.differ, 0);
    free_ctx(shared);
}

/* ---- images ---- */

static float *image_inputs; /* [NUM_BATCHES, MAX_BATCH, floats] */
static size_t image_floats;
static int image_labels;

static int run_images(void *ctx, int b, float *out, vit_error *err) {
    const float *pixels = image_inputs + (size_t)b * MAX_BATCH * image_floats;
    memset(out, 0, sizeof(float) * (size_t)MAX_BATCH * image_labels);
    return vit_forward(ctx, pixels, sizes[b], out, err);
}

static void free_image(void *ctx) {
    vit_free(ctx);
}

/* A context of dir on setting s with one thread for batches up to max_batch, or NULL (said)
 * when the build or CPU has none. */
static vit_context *load_image(const char *dir, const setting *s, int max_batch) {
    vit_params p = vit_default_params();
    p.threads = 1;
    p.max_batch = max_batch;
    p.backend = s->backend;
    p.precision = s->precision;
    vit_error err = {0};
    vit_context *ctx = vit_load(dir, &p, &err);
    if (!ctx) print_message("%s %s: not here (%s)\n", dir, s->name, err.msg);
    return ctx;
}

/* The first `batches` batches (the largest of which is max_batch), rounds times over. */
static void images_on(const char *dir, const setting *s, int max_batch, int batches, int rounds) {
    vit_context *ctx = load_image(dir, s, max_batch);
    if (!ctx) return;
    vit_error err = {0};
    vit_context *shared = vit_share(ctx, &err);
    if (!shared) fail_msg("%s", err.msg);
    /* one copy of the weights: the labels are the same strings */
    assert_ptr_equal(vit_label(ctx, 0), vit_label(shared, 0));
    assert_string_equal(vit_compute(ctx), vit_compute(shared));
    image_floats = vit_input_floats(ctx);
    image_labels = vit_num_labels(ctx);
    test_seed(42);
    image_inputs = test_alloc_floats((size_t)NUM_BATCHES * MAX_BATCH * image_floats);
    test_fill(image_inputs, (size_t)NUM_BATCHES * MAX_BATCH * image_floats, -2.0f, 2.0f);
    const size_t out = (size_t)MAX_BATCH * image_labels;
    const workload w = {.run = run_images,
                        .out_floats = out,
                        .want = test_alloc_floats(NUM_BATCHES * out),
                        .batches = batches,
                        .rounds = rounds};
    char what[256];
    snprintf(what, sizeof what, "%s %s", dir, s->name);
    run_shared(&w, ctx, shared, free_image, what);
    free(w.want);
    free(image_inputs);
}

static void test_images_every_setting(void **state) {
    (void)state;
    for (int i = 0; i < NUM_SETTINGS; i++)
        images_on(FASHION, &settings[i], MAX_BATCH, NUM_BATCHES, ROUNDS);
}

/* A real model: ViT-Tiny, 23 MB of weights, 197 tokens. Batches of 1 and 2 images, once through
 * (a forward costs 600 times the shipped model's). */
static void test_vit_tiny(void **state) {
    (void)state;
    images_on(VIT_TINY, &settings[2], 2, 2, 1); /* onednn fp32 (the default) */
    images_on(VIT_TINY, &settings[0], 2, 2, 1); /* openblas fp32 */
}

/* ---- texts ---- */

static const char *const texts[] = {
    "a gripping, beautifully made film",
    "the plot is thin and the jokes fall flat",
    "",
    "an unexpectedly moving story about two brothers and the farm they could not save",
    "bad",
    "it is neither as clever nor as funny as it thinks it is, but the cast is charming",
    "i have seen better, and i have seen much worse",
    "ZZZ ??? 123 ünïcödé",
    "the best thing about this movie is the soundtrack",
    "two hours i will never get back",
    "smart, warm and very funny",
    "dull",
};
static size_t text_lengths[sizeof texts / sizeof texts[0]];
static int text_labels;

/* Batch b: sizes[b] texts from text 3·b on (wrapping round). */
static int run_texts(void *ctx, int b, float *out, vit_error *err) {
    const int n = (int)(sizeof texts / sizeof texts[0]);
    const char *batch[MAX_BATCH];
    size_t lengths[MAX_BATCH];
    for (int i = 0; i < sizes[b]; i++) {
        batch[i] = texts[(3 * b + i) % n];
        lengths[i] = text_lengths[(3 * b + i) % n];
    }
    memset(out, 0, sizeof(float) * (size_t)MAX_BATCH * text_labels);
    return vit_text_forward(ctx, batch, lengths, sizes[b], out, NULL, err);
}

static void free_text(void *ctx) {
    vit_text_free(ctx);
}

static void texts_on(const setting *s) {
    vit_text_params p = vit_text_default_params();
    p.threads = 1;
    p.max_batch = MAX_BATCH;
    p.backend = s->backend;
    p.precision = s->precision;
    vit_error err = {0};
    vit_text_context *ctx = vit_text_load(shared_path("models/bert-sst2-tiny"), &p, &err);
    if (!ctx) {
        print_message("bert-sst2-tiny %s: not here (%s)\n", s->name, err.msg);
        return;
    }
    vit_text_context *shared = vit_text_share(ctx, &err);
    if (!shared) fail_msg("%s", err.msg);
    assert_ptr_equal(vit_text_label(ctx, 0), vit_text_label(shared, 0));
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) text_lengths[i] = strlen(texts[i]);
    text_labels = vit_text_num_labels(ctx);
    const size_t out = (size_t)MAX_BATCH * text_labels;
    const workload w = {.run = run_texts,
                        .out_floats = out,
                        .want = test_alloc_floats(NUM_BATCHES * out),
                        .batches = NUM_BATCHES,
                        .rounds = ROUNDS};
    char what[256];
    snprintf(what, sizeof what, "bert-sst2-tiny %s", s->name);
    run_shared(&w, ctx, shared, free_text, what);
    free(w.want);
}

static void test_texts_every_setting(void **state) {
    (void)state;
    REQUIRE_SHARED("models/bert-sst2-tiny");
    for (int i = 0; i < NUM_SETTINGS; i++) texts_on(&settings[i]);
}

/* A share of a share, freed in any order; the first context freed while the others work on. */
static void test_free_in_any_order(void **state) {
    (void)state;
    vit_error err = {0};
    vit_context *a = load_image(FASHION, &settings[0], 1);
    if (!a) fail_msg("cannot load %s", FASHION);
    vit_context *b = vit_share(a, &err), *c = b ? vit_share(b, &err) : NULL;
    if (!c) fail_msg("%s", err.msg);
    const size_t floats = vit_input_floats(a);
    float *pixels = test_alloc_floats(floats), want[10], got[10];
    test_fill(pixels, floats, -1.0f, 1.0f);
    assert_int_equal(vit_forward(a, pixels, 1, want, &err), 0);
    vit_free(b);
    vit_free(a);
    assert_int_equal(vit_forward(c, pixels, 1, got, &err), 0);
    assert_memory_equal(got, want, sizeof want);
    vit_free(c);
    free(pixels);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_images_every_setting),
        cmocka_unit_test(test_vit_tiny),
        cmocka_unit_test(test_texts_every_setting),
        cmocka_unit_test(test_free_in_any_order),
    };
    return cmocka_run_group_tests_name("shared_weights", tests, NULL, NULL);
}
