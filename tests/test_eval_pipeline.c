/* The batch pipeline under vit eval: order, tags, failures at the source and in decoding, a
 * source that stops the run, and logits equal to one-image forwards, for several batch sizes and
 * decode-thread counts; the same for batches the caller gathers (pipeline_run_batch). */
#include "tests/testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vit/data/pipeline.h"
#include "vit/eval/eval_images.h"
#include "vit/vit.h"

#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))
#define N_INPUTS 37

static const char *const images[] = {
    "rgb_64x48.png",    "rgb_300x200.png",         "rgb_17x23.png",      "rgba_80x80.png",
    "gray_100x60.png",  "palette_120x90.png",      "rgb_1x1.png",        "baseline_q90_240x180.jpg",
    "gray_160x120.jpg", "progressive_200x150.jpg", "444_q95_128x96.jpg", "tall_40x400.jpg",
    "wide_500x37.png"};

/* Input i: a golden image, except every 7th fails at the source and every 5th does not exist. */
static int fails_at_source(int i) {
    return i % 7 == 3;
}
static int missing(int i) {
    return i % 5 == 4 && !fails_at_source(i);
}

typedef struct {
    int next, stop_at; /* stop_at >= 0: the source fails there */
    int seen, batches, max_batch;
    int labels;
    float *expected; /* [COUNT(images), labels] one-image logits */
} run_state;

static char *image_path(const char *name) {
    char buf[4096];
    snprintf(buf, sizeof buf, "%s/%s", GOLDEN_IMAGES, name);
    return strdup(buf);
}

static char *input_path(int i) {
    char name[64];
    snprintf(name, sizeof name, "no-such-%d.png", i);
    return image_path(missing(i) ? name : images[i % COUNT(images)]);
}

static int source(void *user, pipeline_item *item) {
    run_state *s = user;
    if (s->next == s->stop_at) {
        vit_fail(&item->err, "the source broke at %d", s->next);
        return -1;
    }
    if (s->next == N_INPUTS) return 0;
    int i = s->next++;
    item->path = input_path(i);
    item->tag = 1000 + i;
    if (fails_at_source(i)) vit_fail(&item->err, "%s: listed but unreadable", item->path);
    return 1;
}

static void done(void *user, const pipeline_item *items, int count) {
    run_state *s = user;
    assert_true(count >= 1 && count <= s->max_batch);
    s->batches++;
    for (int k = 0; k < count; k++) {
        const pipeline_item *it = &items[k];
        int i = s->seen++;
        assert_int_equal(it->tag, 1000 + i); /* input order */
        if (fails_at_source(i)) {
            assert_false(it->ok);
            assert_non_null(strstr(it->err.msg, "listed but unreadable"));
        } else if (missing(i)) {
            assert_false(it->ok);
            assert_non_null(strstr(it->err.msg, "no-such-"));
        } else {
            assert_true(it->ok);
            assert_non_null(strstr(it->path, images[i % COUNT(images)]));
            const float *want = s->expected + (size_t)(i % COUNT(images)) * s->labels;
            for (int j = 0; j < s->labels; j++) assert_float_equal(it->logits[j], want[j], 1e-4);
        }
    }
}

static vit_context *load(int max_batch) {
    vit_params p = vit_default_params();
    p.max_batch = max_batch;
    vit_error err = {{0}};
    vit_context *ctx = vit_load(MICRO_A, &p, &err);
    if (!ctx) fail_msg("%s", err.msg);
    return ctx;
}

/* Logits of each image through a batch-of-one forward: the independent expectation. */
static float *one_by_one(void) {
    vit_context *ctx = load(1);
    int L = vit_num_labels(ctx);
    float *logits = malloc(sizeof(float) * (size_t)L * COUNT(images));
    float *pixels = malloc(sizeof(float) * vit_input_floats(ctx));
    vit_error err;
    for (int i = 0; i < COUNT(images); i++) {
        char *path = image_path(images[i]);
        assert_int_equal(vit_preprocess_file(ctx, path, pixels, &err), 0);
        assert_int_equal(vit_forward(ctx, pixels, 1, logits + (size_t)i * L, &err), 0);
        free(path);
    }
    free(pixels);
    vit_free(ctx);
    return logits;
}

static void test_order_and_failures(void **state) {
    (void)state;
    float *expected = one_by_one();
    const int batches[] = {1, 4, 64}, threads[] = {1, 3};
    for (int b = 0; b < COUNT(batches); b++)
        for (int t = 0; t < COUNT(threads); t++) {
            vit_context *ctx = load(batches[b]);
            run_state s = {.stop_at = -1,
                           .max_batch = batches[b],
                           .labels = vit_num_labels(ctx),
                           .expected = expected};
            pipeline_options opt = {.batch = batches[b], .decode_threads = threads[t]};
            vit_error err = {{0}};
            const pipeline_model model = eval_pipeline_model(ctx);
            assert_int_equal(pipeline_run_source(&model, &opt, source, done, &s, &err), 0);
            assert_int_equal(s.seen, N_INPUTS);
            assert_int_equal(s.batches, (N_INPUTS + batches[b] - 1) / batches[b]);
            vit_free(ctx);
        }
    free(expected);
}

static void test_source_error_stops(void **state) {
    (void)state;
    float *expected = one_by_one();
    vit_context *ctx = load(4);
    run_state s = {
        .stop_at = 10, .max_batch = 4, .labels = vit_num_labels(ctx), .expected = expected};
    pipeline_options opt = {.batch = 4, .decode_threads = 2};
    vit_error err = {{0}};
    const pipeline_model model = eval_pipeline_model(ctx);
    assert_int_equal(pipeline_run_source(&model, &opt, source, done, &s, &err), -1);
    assert_string_equal(err.msg, "the source broke at 10");
    assert_int_equal(s.seen, 10); /* everything listed before the failure was still reported */
    vit_free(ctx);
    free(expected);
}

/* The source's next inputs into items[0..max), as a caller gathering its own batch would. */
static int gather(run_state *s, pipeline_item *items, int max) {
    int n = 0;
    for (; n < max; n++) {
        memset(&items[n], 0, sizeof items[n]);
        if (source(s, &items[n]) != 1) break;
    }
    return n;
}

/* pipeline_run_batch, the batches vit embed and vit search gather themselves: the same inputs
 * in the caller's batches give the same order, failures and logits as the pipeline's. */
static void test_run_batch(void **state) {
    (void)state;
    float *expected = one_by_one();
    const int batches[] = {1, 5, 16}, threads[] = {1, 3};
    for (int b = 0; b < COUNT(batches); b++)
        for (int t = 0; t < COUNT(threads); t++) {
            vit_context *ctx = load(batches[b]);
            const pipeline_model model = eval_pipeline_model(ctx);
            run_state s = {.stop_at = -1,
                           .max_batch = batches[b],
                           .labels = vit_num_labels(ctx),
                           .expected = expected};
            pipeline_item *items = calloc((size_t)batches[b], sizeof *items);
            float *pixels = malloc(sizeof(float) * model.input_floats * (size_t)batches[b]);
            float *logits = malloc(sizeof(float) * (size_t)s.labels * (size_t)batches[b]);
            for (int n; (n = gather(&s, items, batches[b])) > 0;) {
                vit_error err = {{0}};
                assert_int_equal(
                    pipeline_run_batch(&model, threads[t], items, n, pixels, logits, &err), 0);
                done(&s, items, n);
                for (int i = 0; i < n; i++) free(items[i].path);
            }
            assert_int_equal(s.seen, N_INPUTS);
            free(items);
            free(pixels);
            free(logits);
            vit_free(ctx);
        }
    free(expected);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_order_and_failures),
        cmocka_unit_test(test_source_error_stops),
        cmocka_unit_test(test_run_batch),
    };
    return cmocka_run_group_tests_name("pipeline", tests, NULL, NULL);
}
