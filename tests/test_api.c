/* The public API as a user sees it: this file includes vit.h and nothing else of the project.
 * Files, encoded bytes and RGB pixels classify alike; features against the float64 reference's
 * final hidden states; the thread count follows the context to whichever thread calls; the text
 * side against its golden probabilities; errors are messages, never crashes. */
#include "tests/testutil.h"

#include <dirent.h>
#include <math.h>
#include <omp.h>
#include <png.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <vit.h>

#define FASHION "models/fashion-vit" /* the shipped model, from the project root */

static void test_version(void **state) {
    (void)state;
    char want[32];
    snprintf(want, sizeof want, "%d.%d.%d", VIT_VERSION_MAJOR, VIT_VERSION_MINOR,
             VIT_VERSION_PATCH);
    assert_string_equal(vit_version(), want);
}

/* An RGB image as a PNG file (lossless, so the file decodes to exactly these pixels). */
static void write_png(const char *path, const uint8_t *rgb, int w, int h) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png_create_info_struct(png);
    png_init_io(png, f);
    png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, 8, PNG_COLOR_TYPE_RGB,
                 PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    for (int y = 0; y < h; y++) png_write_row(png, (png_bytep)(rgb + (size_t)y * w * 3));
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    fclose(f);
}

static void expect_same_predictions(const vit_prediction *a, const vit_prediction *b, int n) {
    for (int i = 0; i < n; i++) {
        assert_int_equal(a[i].index, b[i].index);
        assert_true(a[i].prob == b[i].prob);
        assert_string_equal(a[i].label, b[i].label);
    }
}

/* The shipped (grey) model: an RGB image given as a file, as its bytes, and as pixels. */
static void test_file_memory_pixels_agree(void **state) {
    (void)state;
    enum { W = 37, H = 29 };
    uint8_t rgb[W * H * 3];
    for (size_t i = 0; i < sizeof rgb; i++) rgb[i] = (uint8_t)(test_uniform(0, 256));
    char path[4096];
    snprintf(path, sizeof path, "%s/api.png", test_tmpdir());
    write_png(path, rgb, W, H);
    vit_error err = {0};
    vit_context *ctx = vit_load(FASHION, NULL, &err);
    if (!ctx) fail_msg("%s", err.msg);
    vit_prediction from_file[3], from_memory[3], from_pixels[3];
    assert_int_equal(vit_classify_file(ctx, path, 3, from_file, &err), 3);
    size_t size;
    uint8_t *bytes = read_whole_file(path, &size);
    assert_int_equal(vit_classify_memory(ctx, bytes, size, 3, from_memory, &err), 3);
    assert_int_equal(vit_classify_image(ctx, rgb, W, H, 3, from_pixels, &err), 3);
    expect_same_predictions(from_file, from_memory, 3);
    expect_same_predictions(from_file, from_pixels, 3);
    assert_true(from_file[0].prob >= from_file[1].prob && from_file[1].prob >= from_file[2].prob);
    /* k beyond the labels is cut to them */
    vit_prediction all[20];
    assert_int_equal(vit_classify_file(ctx, path, 20, all, &err), vit_num_labels(ctx));
    /* with where the input lies: the same pixels; resized whole (no crop), the region is the
     * whole image */
    const size_t n = vit_input_floats(ctx);
    float *plain = test_alloc_floats(n), *located = test_alloc_floats(n), region[4];
    int image_size[2];
    assert_int_equal(vit_preprocess_memory(ctx, bytes, size, plain, &err), 0);
    assert_int_equal(
        vit_preprocess_memory_region(ctx, bytes, size, located, image_size, region, &err), 0);
    assert_memory_equal(plain, located, sizeof(float) * n);
    assert_int_equal(image_size[0], W);
    assert_int_equal(image_size[1], H);
    const float whole[4] = {0, 0, W, H};
    for (int k = 0; k < 4; k++) assert_true(fabsf(region[k] - whole[k]) < 1e-4f);
    assert_int_equal(
        vit_preprocess_memory_region(ctx, "not an image", 12, located, image_size, region, &err),
        -1);
    assert_non_null(strstr(err.msg, "image in memory"));
    assert_int_equal(vit_explain_check(ctx, &err), 0);
    free(plain), free(located);
    free(bytes);
    vit_free(ctx);
}

static void test_top_k(void **state) {
    (void)state;
    vit_error err = {0};
    vit_context *ctx = vit_load(FASHION, NULL, &err);
    if (!ctx) fail_msg("%s", err.msg);
    const float probs[10] = {0.1f, 0.3f, 0.05f, 0.3f, 0.0f, 0.05f, 0.2f, 0.0f, 0.0f, 0.0f};
    vit_prediction top[4];
    assert_int_equal(vit_top_k(ctx, probs, 4, top, &err), 4);
    const int want[] = {1, 3, 6, 0}; /* ties: the lower index first */
    for (int i = 0; i < 4; i++) {
        assert_int_equal(top[i].index, want[i]);
        assert_true(top[i].prob == probs[want[i]]);
        assert_string_equal(top[i].label, vit_label(ctx, want[i]));
    }
    assert_int_equal(vit_top_k(ctx, probs, 0, top, &err), 0);
    assert_int_equal(vit_top_k(ctx, probs, -3, top, &err), -1);
    assert_string_equal(err.msg, "top-k: k -3 is negative");
    assert_int_equal(vit_top_k(ctx, probs, -1, top, NULL), -1); /* err may be NULL */
    vit_free(ctx);
}

static const char *letter(const void *labels, int index) {
    return ((const char *const *)labels)[index];
}

/* vit_rank on a hand-computed case: logits 0, ln 3, ln 3, ln 2, 0 are e^x 1, 3, 3, 2, 1 of 10,
 * so probabilities 0.1, 0.3, 0.3, 0.2, 0.1; ranked 1, 2 (a tie: the lower index first), 3, then
 * 0 before 4; 2 of them reach 0.25, 3 reach 0.15. */
static void test_rank(void **state) {
    (void)state;
    const float logits[5] = {0.0f, logf(3.0f), logf(3.0f), logf(2.0f), 0.0f};
    const double want_p[5] = {0.1, 0.3, 0.3, 0.2, 0.1};
    const int want[5] = {1, 2, 3, 0, 4};
    const char *const names[5] = {"a", "b", "c", "d", "e"};
    const vit_labeler labeler = {letter, names};
    float probs[5];
    vit_prediction top[5];
    int shown = -1;
    vit_error err = {0};
    assert_int_equal(vit_rank(logits, 5, 1, probs, 4, 0.25, &labeler, top, &shown, &err), 4);
    assert_int_equal(shown, 2);
    for (int i = 0; i < 5; i++) assert_float_equal(probs[i], want_p[i], 1e-6);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(top[i].index, want[i]);
        assert_true(top[i].prob == probs[want[i]]);
        assert_string_equal(top[i].label, names[want[i]]);
    }
    /* probabilities already (values read as they are), k past n, no labeler */
    assert_int_equal(vit_rank(probs, 5, 0, NULL, 9, 0.15, NULL, top, &shown, &err), 5);
    assert_int_equal(shown, 3);
    for (int i = 0; i < 5; i++) assert_int_equal(top[i].index, want[i]);
    assert_null(top[0].label);
    /* in place, as vit_softmax */
    float inplace[5];
    memcpy(inplace, logits, sizeof inplace);
    assert_int_equal(vit_rank(inplace, 5, 1, inplace, 0, 0.0, NULL, NULL, NULL, &err), 0);
    assert_memory_equal(inplace, probs, sizeof probs);
    assert_int_equal(vit_rank(logits, 5, 1, probs, -2, 0.0, NULL, top, NULL, &err), -1);
    assert_string_equal(err.msg, "top-k: k -2 is negative");
}

/* Features: the CLS row and the mean of the patch rows of the reference's final LayerNorm output
 * (float64 PyTorch), within the micro models' logit tolerance. */
static void test_embed_matches_reference(void **state) {
    (void)state;
    vit_error err = {0};
    vit_context *ctx = vit_load(MICRO_A, NULL, &err);
    if (!ctx) fail_msg("%s", err.msg);
    const int D = vit_hidden_size(ctx), T = vit_tokens(ctx);
    size_t n;
    float *want = test_read_tensor(MICRO_A "/golden.safetensors", "rgb_64x48.png/layernorm", &n);
    assert_non_null(want);
    assert_int_equal(n, (size_t)T * D);
    float *pixels = malloc(sizeof(float) * vit_input_floats(ctx)), cls[64], mean[64];
    assert_true(D <= 64);
    if (vit_preprocess_file(ctx, GOLDEN_IMAGES "/rgb_64x48.png", pixels, &err) != 0)
        fail_msg("%s", err.msg);
    assert_int_equal(vit_embed(ctx, pixels, 1, VIT_POOL_CLS, cls, &err), 0);
    assert_int_equal(vit_embed(ctx, pixels, 1, VIT_POOL_MEAN, mean, &err), 0);
    double worst_cls = 0, worst_mean = 0;
    for (int d = 0; d < D; d++) {
        double m = 0;
        for (int t = 1; t < T; t++) m += want[(size_t)t * D + d];
        m /= T - 1;
        worst_cls = fmax(worst_cls, fabs(cls[d] - want[d]));
        worst_mean = fmax(worst_mean, fabs(mean[d] - m));
    }
    print_message("micro-a features: CLS max |d| %.2g, mean of patches %.2g\n", worst_cls,
                  worst_mean);
    assert_true(worst_cls <= 1e-5 && worst_mean <= 1e-5);
    free(pixels);
    free(want);
    vit_free(ctx);
}

/* ---- threads ---- */

static int count_threads(void) {
    DIR *d = opendir("/proc/self/task");
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));) n += e->d_name[0] != '.';
    if (d) closedir(d);
    return n;
}

typedef struct {
    vit_context *ctx;
    const float *pixels;
    float logits[10];
    int added, after;
} thread_run;

/* On a thread of its own whose OpenMP default is one thread, as any thread of a program that
 * set OMP_NUM_THREADS=1 would be: the forward must still use the context's two. libgomp starts
 * the helper threads of a team on demand and keeps them while the calling thread lives, so the
 * count of the process's threads shows the team size. */
static void *forward_elsewhere(void *arg) {
    thread_run *r = arg;
    omp_set_num_threads(1);
    const int before = count_threads();
    vit_error err = {0};
    if (vit_forward(r->ctx, r->pixels, 1, r->logits, &err) != 0) return NULL;
    r->added = count_threads() - before;
    r->after = omp_get_max_threads();
    return r;
}

static void test_threads_follow_the_context(void **state) {
    (void)state;
    vit_params params = vit_default_params();
    params.threads = 2;
    vit_error err = {0};
    vit_context *ctx = vit_load(FASHION, &params, &err);
    if (!ctx) fail_msg("%s", err.msg);
    float *pixels = malloc(sizeof(float) * vit_input_floats(ctx) * 1), here[10];
    for (size_t i = 0; i < vit_input_floats(ctx); i++) pixels[i] = test_uniform(-1, 1);
    assert_int_equal(vit_forward(ctx, pixels, 1, here, &err), 0);
    thread_run r = {.ctx = ctx, .pixels = pixels};
    pthread_t t;
    void *ok = NULL;
    assert_int_equal(pthread_create(&t, NULL, forward_elsewhere, &r), 0);
    pthread_join(t, &ok);
    assert_non_null(ok);
    print_message("a forward on another thread (its OpenMP default: 1) started %d helper "
                  "thread(s); that thread's default afterwards: %d\n",
                  r.added, r.after);
    assert_int_equal(r.added, 1); /* a team of two */
    assert_int_equal(r.after, 1); /* the caller's own setting is left as it was */
    assert_memory_equal(r.logits, here, sizeof here);
    free(pixels);
    vit_free(ctx);
}

/* ---- text ---- */

static void test_text(void **state) {
    (void)state;
    REQUIRE_SHARED("models/bert-sst2-tiny");
    vit_error err = {0};
    vit_text_context *ctx = vit_text_load(shared_path("models/bert-sst2-tiny"), NULL, &err);
    if (!ctx) fail_msg("%s", err.msg);
    /* the reference's probabilities of a sentence of golden.json */
    vit_prediction top[2];
    assert_int_equal(vit_text_classify(ctx, "a gorgeous, witty, seductive movie.", 5, top, &err),
                     2);
    assert_string_equal(top[0].label, "positive");
    assert_true(top[0].prob > 0.99f && fabsf(top[0].prob + top[1].prob - 1.0f) < 1e-6f);
    /* one text alone and in a padded batch agree */
    const char *texts[] = {"a gorgeous, witty, seductive movie.",
                           "the plot is nothing but boilerplate"};
    const size_t lens[] = {strlen(texts[0]), strlen(texts[1])};
    float logits[4], probs[4];
    assert_int_equal(vit_text_forward(ctx, texts, lens, 2, logits, probs, &err), 0);
    assert_true(fabsf(probs[top[0].index] - top[0].prob) < 1e-6f);
    int n;
    const int32_t *ids = vit_text_ids(ctx, 0, &n);
    assert_true(n > 2);
    assert_string_equal(vit_text_piece(ctx, ids[0]), "[CLS]");
    assert_string_equal(vit_text_piece(ctx, ids[n - 1]), "[SEP]");
    /* vit_text_tokenize: the ids the forward read, without a forward and without disturbing
     * them; a short buffer gets its first ids and the whole count */
    int32_t alone[64];
    assert_int_equal(vit_text_tokenize(ctx, texts[0], lens[0], alone, 64, &err), n);
    assert_memory_equal(alone, ids, sizeof *ids * (size_t)n);
    int32_t two[3] = {-1, -1, -1};
    assert_int_equal(vit_text_tokenize(ctx, texts[0], lens[0], two, 2, &err), n);
    assert_int_equal(two[0], ids[0]);
    assert_int_equal(two[1], ids[1]);
    assert_int_equal(two[2], -1);
    assert_int_equal(vit_text_tokenize(ctx, "", 0, two, 3, &err), 2); /* [CLS] [SEP] */
    int again;
    const int32_t *after = vit_text_ids(ctx, 0, &again);
    assert_int_equal(again, n);
    assert_memory_equal(after, alone, sizeof *ids * (size_t)n);
    /* vit_text_top_k: vit_top_k's order (a tie: the lower index first), k cut to the labels */
    const float tie[2] = {0.5f, 0.5f};
    assert_int_equal(vit_text_top_k(ctx, tie, 5, top, &err), 2);
    assert_int_equal(top[0].index, 0);
    assert_string_equal(top[1].label, vit_text_label(ctx, 1));
    assert_int_equal(vit_text_top_k(ctx, probs + 2, 1, top, &err), 1);
    assert_int_equal(top[0].index, probs[3] > probs[2] ? 1 : 0);
    assert_int_equal(vit_text_top_k(ctx, tie, -1, top, &err), -1);
    assert_string_equal(err.msg, "top-k: k -1 is negative");
    vit_text_free(ctx);
}

/* ---- errors ---- */

static void test_errors(void **state) {
    (void)state;
    vit_error err = {0};
    assert_null(vit_load("/nonexistent-model", NULL, &err));
    assert_non_null(strstr(err.msg, "/nonexistent-model"));
    assert_null(vit_load("/nonexistent-model", NULL, NULL)); /* err may be NULL */
    assert_null(vit_text_load(FASHION, NULL, &err));
    assert_non_null(strstr(err.msg, "not a text model"));
    vit_context *ctx = vit_load(FASHION, NULL, &err);
    if (!ctx) fail_msg("%s", err.msg);
    vit_prediction top[1];
    assert_int_equal(vit_classify_file(ctx, "/nonexistent.png", 1, top, &err), -1);
    assert_non_null(strstr(err.msg, "/nonexistent.png"));
    assert_int_equal(vit_classify_memory(ctx, "not an image", 12, 1, top, &err), -1);
    assert_int_equal(vit_classify_image(ctx, NULL, 4, 4, 1, top, &err), -1);
    const uint8_t px[3] = {1, 2, 3};
    assert_int_equal(vit_classify_image(ctx, px, 0, 1, 1, top, &err), -1);
    assert_int_equal(vit_classify_image(ctx, px, 1, 1, 0, top, &err), -1);
    float logits[10];
    assert_int_equal(vit_forward(ctx, NULL, 2, logits, &err), -1); /* above max_batch */
    vit_free(ctx);
    vit_free(NULL);
    vit_text_free(NULL);
}

/* Resident memory now, in bytes (/proc/self/statm's second field, in pages). */
static long resident_bytes(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    long size = 0, resident = 0;
    if (f && fscanf(f, "%ld %ld", &size, &resident) != 2) resident = 0;
    if (f) fclose(f);
    return resident * 4096;
}

/* params.inference_only: the same logits bit for bit in every precision and at another size (a
 * weight released while still read, or one not yet read from the file, would read as zeros),
 * explanations refused with a message, and (outside the
 * sanitizers, whose allocator keeps its own books) an int8 ViT-Tiny holding about its 5.5 MB of
 * int8 weights rather than those and its 22 MB of floats. */
static void test_inference_only(void **state) {
    (void)state;
    const char *dir = "models/vit-tiny-in1k";
    const vit_precision precisions[] = {VIT_FP32, VIT_BF16, VIT_INT8, VIT_FP32};
    long grew[2] = {0, 0};
    for (int k = 0; k < 4; k++) {
        vit_params params = vit_default_params();
        params.precision = precisions[k];
        if (k == 3) params.image_size = 160; /* positions interpolated from the file's at load */
        params.threads = 2;
        vit_error err = {0};
        const long before = resident_bytes();
        vit_context *kept = vit_load(dir, &params, &err);
        if (!kept && strstr(err.msg, "oneDNN")) { /* int8 without oneDNN, say */
            print_message("  skipped precision %d: %s\n", k, err.msg);
            continue;
        }
        if (!kept) fail_msg("%s", err.msg);
        const long middle = resident_bytes();
        params.inference_only = 1;
        vit_context *lean = vit_load(dir, &params, &err);
        if (!lean) fail_msg("%s", err.msg);
        const long after = resident_bytes();
        if (k == 2) grew[0] = middle - before, grew[1] = after - middle;
        const size_t n = vit_input_floats(kept);
        float *pixels = malloc(sizeof(float) * n), a[1000], b[1000];
        for (size_t i = 0; i < n; i++) pixels[i] = test_uniform(-1, 1);
        assert_int_equal(vit_forward(kept, pixels, 1, a, &err), 0);
        assert_int_equal(vit_forward(lean, pixels, 1, b, &err), 0);
        assert_memory_equal(a, b, sizeof a);
        assert_int_equal(vit_explain_check(kept, &err), 0);
        assert_int_equal(vit_explain_check(lean, &err), -1);
        assert_non_null(strstr(err.msg, "loaded for inference only"));
        free(pixels);
        vit_free(lean);
        vit_free(kept);
    }
    print_message("  int8 ViT-Tiny loaded: resident memory +%.1f MB with its float weights, +%.1f "
                  "MB for inference only\n",
                  grew[0] / 1e6, grew[1] / 1e6);
#if !defined(__SANITIZE_ADDRESS__)
    if (grew[0] > 0) assert_true(grew[1] < grew[0] - 12000000);
#endif
}

/* A copy of the shipped model whose classifier bias is NaN: every forward must fail with a
 * message, on every backend, rather than give probabilities computed from NaN. */
static void poison_classifier_bias(const char *dir /* < 1024 bytes */) {
    char path[1100];
    const char *files[] = {"config.json", "preprocessor_config.json", "model.safetensors"};
    size_t size = 0;
    uint8_t *bytes = NULL;
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s", FASHION, files[i]);
        free(bytes);
        bytes = read_whole_file(path, &size);
        assert_non_null(bytes);
        if (i < 2) {
            snprintf(path, sizeof path, "%.1024s/%s", dir, files[i]);
            FILE *f = fopen(path, "wb");
            assert_non_null(f);
            assert_int_equal(fwrite(bytes, 1, size, f), size);
            fclose(f);
        }
    }
    uint64_t header = 0;
    for (int i = 7; i >= 0; i--) header = header << 8 | bytes[i];
    char *json = strndup((const char *)bytes + 8, (size_t)header);
    const char *entry = strstr(json, "\"classifier.bias\"");
    assert_non_null(entry);
    unsigned long begin, end;
    assert_int_equal(sscanf(strstr(entry, "data_offsets") + 14, " [%lu , %lu]", &begin, &end), 2);
    const float nan = NAN;
    for (unsigned long at = begin; at + 4 <= end; at += 4) memcpy(bytes + 8 + header + at, &nan, 4);
    snprintf(path, sizeof path, "%.1024s/model.safetensors", dir);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(bytes, 1, size, f), size);
    fclose(f);
    free(json);
    free(bytes);
}

static void test_nan_weights_fail(void **state) {
    (void)state;
    char dir[1024];
    snprintf(dir, sizeof dir, "%.1000s/nan-model", test_tmpdir());
    mkdir(dir, 0755);
    poison_classifier_bias(dir);
    const vit_backend backends[] = {VIT_BACKEND_OPENBLAS, VIT_BACKEND_DEFAULT};
    for (int i = 0; i < 2; i++) {
        vit_params params = vit_default_params();
        params.backend = backends[i];
        vit_error err = {0};
        vit_context *ctx = vit_load(dir, &params, &err);
        if (!ctx) fail_msg("%s", err.msg);
        const uint8_t px[3 * 4 * 4] = {0};
        vit_prediction top[1];
        assert_int_equal(vit_classify_image(ctx, px, 4, 4, 1, top, &err), -1);
        assert_non_null(strstr(err.msg, "non-finite"));
        vit_free(ctx);
    }
}

/* A NaN or Inf among the pixels is named as the input's, not blamed on the weights: for
 * vit_forward (hence vit_embed) and vit_explain, on each backend. */
static void test_nan_input_named(void **state) {
    (void)state;
    const vit_backend backends[] = {VIT_BACKEND_OPENBLAS, VIT_BACKEND_DEFAULT};
    for (int i = 0; i < 2; i++) {
        vit_params params = vit_default_params();
        params.backend = backends[i];
        vit_error err = {0};
        vit_context *ctx = vit_load(MICRO_A, &params, &err);
        if (!ctx) fail_msg("%s", err.msg);
        const size_t n = vit_input_floats(ctx);
        float *pixels = test_alloc_floats(n), logits[64];
        assert_true(vit_num_labels(ctx) <= 64);
        pixels[n / 2] = NAN;
        assert_int_equal(vit_forward(ctx, pixels, 1, logits, &err), -1);
        char want[96];
        snprintf(want, sizeof want, "the input has NaN at image 0, value %zu", n / 2);
        if (!strstr(err.msg, want)) fail_msg("vit_forward: '%s', not '%s'", err.msg, want);
        pixels[n / 2] = 0.0f, pixels[n - 1] = -INFINITY;
        vit_explanation x;
        assert_int_equal(vit_explain(ctx, pixels, VIT_EXPLAIN_ROLLOUT, -1, &x, &err), -1);
        snprintf(want, sizeof want, "the input has Inf at image 0, value %zu", n - 1);
        if (!strstr(err.msg, want)) fail_msg("vit_explain: '%s', not '%s'", err.msg, want);
        free(pixels);
        vit_free(ctx);
    }
}

/* vit_model_info: what vit info and GET /v1/model say, from the library, for a classifier, a
 * joint model's two towers, a BERT and an image-to-text model; vit_folder_kind without weights. */
static void test_model_info(void **state) {
    (void)state;
    vit_error err = {0};
    vit_model_info i;
    vit_context *ctx = vit_load(FASHION, NULL, &err);
    assert_non_null(ctx);
    vit_model_info_get(ctx, &i);
    assert_int_equal(i.kind, VIT_KIND_IMAGE);
    assert_int_equal(i.tower, VIT_TOWER_IMAGE);
    assert_string_equal(i.family, "ViT");
    assert_string_equal(i.model_type, "vit");
    assert_string_equal(i.architecture, "ViTForImageClassification");
    assert_int_equal(i.num_labels, vit_num_labels(ctx));
    assert_int_equal(i.hidden, vit_hidden_size(ctx));
    assert_int_equal(i.tokens, vit_tokens(ctx));
    assert_int_equal(i.joint_dim, 0);
    assert_int_equal(i.capabilities, VIT_CAN_CLASSIFY | VIT_CAN_EMBED | VIT_CAN_EXPLAIN);
    /* how it is built, what vit info prints (its whole output: the lead's before/after check) */
    assert_int_equal(i.parameters, vit_num_parameters(ctx));
    assert_true(i.flops == vit_flops_per_image(ctx) && i.size_tokens == vit_tokens(ctx));
    assert_string_equal(i.folder_class, "ViTForImageClassification");
    assert_int_equal(i.special_tokens, 1);
    assert_string_equal(i.pooling, "cls");
    assert_string_equal(i.head, "classifier");
    assert_int_equal(i.pool, VIT_POOL_CLS);
    assert_true(i.preprocessing && strstr(i.preprocessing, "mean ["));
    assert_true(i.score_scale == 0 && !i.tower_alone);
    vit_free(ctx);

    ctx = vit_load("tests/data/clip-micro", NULL, &err);
    assert_non_null(ctx);
    vit_model_info_get(ctx, &i);
    assert_int_equal(i.kind, VIT_KIND_JOINT);
    assert_string_equal(i.family, "CLIP");
    assert_string_equal(i.architecture, "CLIPModel (vision tower)");
    assert_int_equal(i.joint_dim, vit_joint_dim(ctx));
    assert_true(i.joint_dim > 0 && !i.sigmoid);
    assert_int_equal(i.capabilities & (VIT_CAN_CLASSIFY | VIT_CAN_ZERO_SHOT), VIT_CAN_ZERO_SHOT);
    assert_int_equal(i.patch_size, 8);
    assert_string_equal(i.folder_class, "CLIPModel");
    assert_string_equal(i.head, "projection");
    assert_int_equal(i.pool, VIT_POOL_JOINT);
    assert_true(i.score_scale > 1 && !i.score_bias);
    vit_free(ctx);
    vit_text_context *text = vit_text_load("tests/data/siglip-micro", NULL, &err);
    assert_non_null(text);
    vit_text_model_info(text, &i);
    assert_int_equal(i.kind, VIT_KIND_JOINT);
    assert_int_equal(i.tower, VIT_TOWER_TEXT);
    assert_string_equal(i.family, "SigLIP");
    assert_true(i.sigmoid && i.joint_dim == vit_text_joint_dim(text));
    assert_string_equal(i.pooling, "last");
    assert_int_equal(i.pool, VIT_POOL_JOINT);
    vit_text_free(text);
    text = vit_text_load("tests/data/clip-text-proj-micro", NULL, &err);
    assert_non_null(text);
    vit_text_model_info(text, &i);
    assert_true(i.tower_alone && i.causal && i.score_scale == 0);
    assert_string_equal(i.pooling, "eos_max"); /* CLIP's argmax of the ids (eos_token_id 2) */
    assert_int_equal(i.pool, VIT_POOL_PROJECTION);
    vit_text_free(text);
    text = vit_text_load("tests/data/bert-base-micro", NULL, &err);
    assert_non_null(text);
    vit_text_model_info(text, &i);
    assert_int_equal(i.kind, VIT_KIND_TEXT);
    assert_string_equal(i.architecture, "BertModel");
    assert_true(i.post_norm);
    assert_int_equal(i.capabilities, VIT_CAN_EMBED); /* a base model: no classifier */
    assert_string_equal(i.pooling, "bert");
    assert_int_equal(i.pool, VIT_POOL_CLS);
    vit_text_free(text);

    vit_gen_context *gen = vit_gen_load("tests/data/ved-trocr-vit", NULL, &err);
    assert_non_null(gen);
    vit_model_info_get(vit_gen_image_context(gen), &i);
    assert_int_equal(i.kind, VIT_KIND_IMAGE_TO_TEXT);
    assert_false(i.capabilities & VIT_CAN_EXPLAIN);
    vit_gen_decoder_info(gen, &i);
    assert_int_equal(i.tower, VIT_TOWER_DECODER);
    assert_string_equal(i.architecture, "TrOCRForCausalLM");
    assert_int_equal(i.vocab_size, vit_gen_vocab_size(gen));
    assert_non_null(i.tokenizer);
    assert_string_equal(i.tokenizer_kind, "byte-level BPE");
    assert_true(i.num_eos == 1 && i.eos_ids[0] == 2 && i.pad_id == 1 && i.pos_offset == 2);
    vit_gen_free(gen);

    vit_model_kind kind;
    assert_int_equal(vit_folder_kind("tests/data/ved-gpt2-vit", &kind, &err), 0);
    assert_int_equal(kind, VIT_KIND_IMAGE_TO_TEXT);
    assert_int_equal(vit_folder_kind("tests/data/siglip-vision-micro", &kind, &err), 0);
    assert_int_equal(kind, VIT_KIND_IMAGE); /* one tower alone */
    assert_int_equal(vit_folder_kind("tests/data/no-such-model", &kind, &err), -1);
    assert_non_null(strstr(err.msg, "tests/data/no-such-model"));
}

/* params.tokenizer_optional: a text folder without its tokenizer files loads for describing
 * (vit info), says why it has no tokenizer, and refuses texts with that reason; without the
 * flag it is refused, and a folder with its tokenizer has no reason. */
static void test_text_without_tokenizer(void **state) {
    (void)state;
    vit_error err = {0};
    const char *dir = test_joint_without_tokenizer();
    assert_null(vit_text_load(dir, NULL, &err));
    assert_non_null(strstr(err.msg, "no tokenizer files"));
    vit_text_params tp = vit_text_default_params();
    tp.tokenizer_optional = 1;
    vit_text_context *text = vit_text_load(dir, &tp, &err);
    if (!text) fail_msg("%s", err.msg);
    assert_non_null(vit_text_tokenizer_error(text));
    assert_non_null(strstr(vit_text_tokenizer_error(text), "no tokenizer files"));
    vit_model_info i, whole;
    vit_text_model_info(text, &i);
    vit_text_context *full = vit_text_load("tests/data/siglip-micro", &tp, &err);
    assert_non_null(full);
    assert_null(vit_text_tokenizer_error(full));
    vit_text_model_info(full, &whole); /* the same folder with its tokenizer */
    assert_string_equal(i.family, "SigLIP");
    assert_true(i.parameters == whole.parameters && i.vocab_size == whole.vocab_size);
    assert_true(i.max_positions == whole.max_positions && i.pool == whole.pool);
    vit_text_free(full);
    const char *t = "a cat";
    const size_t n = strlen(t);
    float out[64];
    int32_t ids[8];
    err = (vit_error){0};
    assert_int_equal(vit_text_embed(text, &t, &n, 1, VIT_POOL_JOINT, out, &err), -1);
    assert_string_equal(err.msg, vit_text_tokenizer_error(text));
    err = (vit_error){0};
    assert_int_equal(vit_text_tokenize(text, t, n, ids, 8, &err), -1);
    assert_string_equal(err.msg, vit_text_tokenizer_error(text));
    assert_null(vit_text_piece(text, 0));
    vit_text_free(text);
}

/* The same for an image-to-text folder (tests/data/ved-trocr-vit's config, weights and settings
 * linked without its tokenizer files): vit_gen_params.tokenizer_optional loads it, the decoder is
 * described as with its tokenizer (but for the tokenizer's fields), and vit_generate refuses with
 * the reason. */
static void test_generator_without_tokenizer(void **state) {
    (void)state;
    char dir[4096], cwd[2048];
    snprintf(dir, sizeof dir, "%s/ved-no-tokenizer", test_tmpdir());
    mkdir(dir, 0700);
    assert_non_null(getcwd(cwd, sizeof cwd));
    const char *files[] = {"config.json", "model.safetensors", "generation_config.json",
                           "preprocessor_config.json"};
    for (int i = 0; i < 4; i++) {
        char from[4096], to[8192];
        snprintf(from, sizeof from, "%s/tests/data/ved-trocr-vit/%s", cwd, files[i]);
        snprintf(to, sizeof to, "%s/%s", dir, files[i]);
        assert_int_equal(symlink(from, to), 0);
    }
    vit_error err = {0};
    assert_null(vit_gen_load(dir, NULL, &err));
    assert_non_null(strstr(err.msg, "no tokenizer files"));
    vit_gen_params gp = vit_gen_default_params();
    gp.tokenizer_optional = 1;
    vit_gen_context *bare = vit_gen_load(dir, &gp, &err), *full;
    if (!bare) fail_msg("%s", err.msg);
    assert_non_null(full = vit_gen_load("tests/data/ved-trocr-vit", &gp, &err));
    assert_null(vit_gen_tokenizer_error(full));
    assert_non_null(strstr(vit_gen_tokenizer_error(bare), "no tokenizer files"));
    vit_model_info a, b;
    vit_gen_decoder_info(bare, &a);
    vit_gen_decoder_info(full, &b);
    assert_true(a.parameters == b.parameters && a.vocab_size == b.vocab_size &&
                a.decoder_start_id == b.decoder_start_id && a.num_eos == b.num_eos);
    assert_true(a.tokenizer == NULL && a.tokenizer_ids == 0 && b.tokenizer != NULL);
    vit_context *enc = vit_gen_image_context(bare);
    float *pixels = test_alloc_floats(vit_input_floats(enc));
    vit_generation out = {0};
    err = (vit_error){0};
    assert_int_equal(vit_generate(bare, pixels, 1, NULL, &out, &err), -1);
    assert_string_equal(err.msg, vit_gen_tokenizer_error(bare));
    free(pixels);
    vit_gen_free(bare);
    vit_gen_free(full);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_version),
        cmocka_unit_test(test_file_memory_pixels_agree),
        cmocka_unit_test(test_top_k),
        cmocka_unit_test(test_rank),
        cmocka_unit_test(test_embed_matches_reference),
        cmocka_unit_test(test_threads_follow_the_context),
        cmocka_unit_test(test_text),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_inference_only),
        cmocka_unit_test(test_nan_weights_fail),
        cmocka_unit_test(test_nan_input_named),
        cmocka_unit_test(test_model_info),
        cmocka_unit_test(test_text_without_tokenizer),
        cmocka_unit_test(test_generator_without_tokenizer),
    };
    return cmocka_run_group_tests_name("api", tests, NULL, NULL);
}
