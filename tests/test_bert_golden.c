/* BERT on the shared encoder against the float64 PyTorch golden logits of bert-sst2-tiny, using the
 * golden token ids (the tokenizer has its own test): one sentence at a time and all padded in one
 * batch, which must agree (the key-padding mask hides the padding). */
#include "tests/testutil.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vit/model/text_model.h"
#include "vit/io/model_dir.h"
#include "vit/model/params.h"
#include "vit/core/ops.h"
#include "vit/vit.h"

/* float32 vs float64 over 2 post-LN layers: measured ~1e-6; 1e-4 is the project's logit bound. */
#define TOL 1e-4

static void test_golden_logits(void **state) {
    (void)state;
    REQUIRE_SHARED("models/bert-sst2-tiny");
    size_t size;
    char *json = (char *)read_whole_file(shared_path("models/bert-sst2-tiny/golden.json"), &size);
    assert_non_null(json);
    json = realloc(json, size + 1);
    json[size] = 0;
    cJSON *root = cJSON_Parse(json);
    assert_true(cJSON_IsArray(root));
    model m;
    vit_error err = {0};
    if (model_load(&m, shared_path("models/bert-sst2-tiny"), &err) != 0) fail_msg("%s", err.msg);
    ops_init();
    const int n = cJSON_GetArraySize(root), L = m.cfg.num_labels;
    int T = 0;
    const cJSON *item;
    cJSON_ArrayForEach(item, root) {
        int len = cJSON_GetArraySize(cJSON_GetObjectItem(item, "ids"));
        if (len > T) T = len;
    }
    int32_t *ids = calloc((size_t)n * T, sizeof *ids);
    uint8_t *mask = calloc((size_t)n * T, 1);
    float *want = malloc(sizeof(float) * (size_t)n * L),
          *got = malloc(sizeof(float) * (size_t)n * L);
    int i = 0;
    cJSON_ArrayForEach(item, root) {
        const cJSON *id;
        int t = 0;
        cJSON_ArrayForEach(id, cJSON_GetObjectItem(item, "ids")) {
            ids[i * T + t] = id->valueint;
            mask[i * T + t++] = 1;
        }
        const cJSON *lg;
        int j = 0;
        cJSON_ArrayForEach(lg, cJSON_GetObjectItem(item, "logits")) want[i * L + j++] =
            (float)lg->valuedouble;
        i++;
    }
    text_acts a;
    if (text_acts_alloc(&a, &m, n, T, 0, &err) != 0) fail_msg("%s", err.msg);
    double worst_single = 0, worst_batch = 0;
    float single[8];
    for (i = 0; i < n; i++) {
        int len = 0;
        while (len < T && mask[i * T + len]) len++;
        int32_t one[T];
        memcpy(one, ids + i * T, sizeof(int32_t) * (size_t)len);
        assert_int_equal(text_model_forward(&m, &a, one, mask + i * T, 1, len, NULL, single, &err),
                         0);
        for (int j = 0; j < L; j++)
            worst_single = fmax(worst_single, fabs(single[j] - want[i * L + j]));
    }
    assert_int_equal(text_model_forward(&m, &a, ids, mask, n, T, NULL, got, &err), 0);
    for (i = 0; i < n * L; i++) worst_batch = fmax(worst_batch, fabs(got[i] - want[i]));
    print_message("bert-sst2-tiny: %d texts, max |dlogit| one by one %.3g, padded batch %.3g\n", n,
                  worst_single, worst_batch);
    assert_true(worst_single <= TOL);
    assert_true(worst_batch <= TOL);
    text_acts_free(&a);
    free(ids);
    free(mask);
    free(want);
    free(got);
    model_free(&m);
    cJSON_Delete(root);
    free(json);
}

/* The text API on each backend of the build (prepared layers, the texts tokenized by vit): the
 * same golden logits. inference_only: loaded as vit embed loads, the encoder layers' weights
 * released once prepared: the same logits. */
static void check_api_backend(const cJSON *root, vit_backend backend, int inference_only) {
    vit_text_params p = vit_text_default_params();
    p.backend = backend;
    p.inference_only = inference_only;
    vit_error err = {0};
    vit_text_context *ctx = vit_text_load(shared_path("models/bert-sst2-tiny"), &p, &err);
    if (!ctx) {
        print_message("bert-sst2-tiny: backend %d not available (%s)\n", (int)backend, err.msg);
        assert_int_equal(backend, VIT_BACKEND_ONEDNN);
        return;
    }
    const int n = cJSON_GetArraySize(root), L = vit_text_num_labels(ctx);
    const char **texts = malloc(sizeof *texts * (size_t)n);
    size_t *lens = malloc(sizeof *lens * (size_t)n);
    float *got = malloc(sizeof(float) * (size_t)n * L);
    for (int i = 0; i < n; i++) {
        texts[i] = cJSON_GetObjectItem(cJSON_GetArrayItem(root, i), "text")->valuestring;
        lens[i] = strlen(texts[i]);
    }
    double worst = 0;
    for (int i0 = 0; i0 < n; i0 += 8) {
        const int k = n - i0 < 8 ? n - i0 : 8;
        assert_int_equal(vit_text_forward(ctx, texts + i0, lens + i0, k, got + i0 * L, NULL, &err),
                         0);
    }
    for (int i = 0; i < n; i++) {
        const cJSON *lg = cJSON_GetObjectItem(cJSON_GetArrayItem(root, i), "logits");
        for (int j = 0; j < L; j++)
            worst = fmax(worst, fabs(got[i * L + j] - cJSON_GetArrayItem(lg, j)->valuedouble));
    }
    print_message("bert-sst2-tiny, %s%s: %d texts in batches of 8, max |dlogit| %.3g\n",
                  vit_text_compute(ctx), inference_only ? ", inference only" : "", n, worst);
    assert_true(worst <= TOL);
    free(texts), free(lens), free(got);
    vit_text_free(ctx);
}

static void test_api_backends(void **state) {
    (void)state;
    REQUIRE_SHARED("models/bert-sst2-tiny");
    size_t size;
    char *json = (char *)read_whole_file(shared_path("models/bert-sst2-tiny/golden.json"), &size);
    assert_non_null(json);
    cJSON *root = cJSON_Parse(json);
    check_api_backend(root, VIT_BACKEND_OPENBLAS, 0);
    check_api_backend(root, VIT_BACKEND_ONEDNN, 0);
    check_api_backend(root, VIT_BACKEND_ONEDNN, 1);
    cJSON_Delete(root);
    free(json);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_golden_logits),
                                       cmocka_unit_test(test_api_backends)};
    return cmocka_run_group_tests_name("bert golden", tests, NULL, NULL);
}
