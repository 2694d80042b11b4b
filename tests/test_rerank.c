/* Pairs of texts and cross-encoders (issue 42): the pair's ids and token types as the slow
 * tokenizers join them (BertTokenizer [CLS] a [SEP] b [SEP], types 0 then 1; RobertaTokenizer
 * <s> a </s></s> b </s>, all 0; 'longest_first' truncation) and a one-label
 * BertForSequenceClassification / RobertaForSequenceClassification's logits on them, against
 * tools/text_encoders_reference.py's float64 forward (bert-pair-micro, roberta-pair-micro; their
 * per-text ids are bert-tok-micro's by hand and roberta-micro's from the `tokenizers` library). */
#include "tests/testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "text/text_tokenizer.h"
#include "vit/vit.h"

/* float32 against float64 through two post-LN layers: the project's tolerance against float64
 * references (README); the largest difference seen is printed. */
#define TOL 1e-4

enum { MAX_PAIRS = 16, MAX_IDS = 64 };

typedef struct {
    int n;
    char *a[MAX_PAIRS], *b[MAX_PAIRS];
    size_t alen[MAX_PAIRS], blen[MAX_PAIRS];
    int32_t ids[MAX_PAIRS][MAX_IDS], types[MAX_PAIRS][MAX_IDS];
    int len[MAX_PAIRS];
    float *logits; /* [n] */
} pair_cases;

static const char *const pair_folders[] = {"tests/data/bert-pair-micro",
                                           "tests/data/roberta-pair-micro"};

static cJSON *golden_meta(const char *dir, const char *key) {
    char path[4096];
    snprintf(path, sizeof path, "%s/golden.safetensors", dir);
    size_t size;
    uint8_t *bytes = read_whole_file(path, &size);
    assert_non_null(bytes);
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = n << 8 | bytes[i];
    cJSON *header = cJSON_ParseWithLength((const char *)bytes + 8, (size_t)n);
    free(bytes);
    assert_non_null(header);
    const cJSON *meta = cJSON_GetObjectItem(header, "__metadata__");
    cJSON *value = cJSON_Parse(cJSON_GetObjectItem(meta, key)->valuestring);
    cJSON_Delete(header);
    assert_non_null(value);
    return value;
}

static void read_rows(const cJSON *rows, int32_t out[][MAX_IDS], int *len) {
    for (int i = 0; i < cJSON_GetArraySize(rows); i++) {
        const cJSON *row = cJSON_GetArrayItem(rows, i);
        len[i] = cJSON_GetArraySize(row);
        assert_true(len[i] <= MAX_IDS);
        for (int t = 0; t < len[i]; t++) out[i][t] = cJSON_GetArrayItem(row, t)->valueint;
    }
}

static void read_pairs(const char *dir, pair_cases *c) {
    memset(c, 0, sizeof *c);
    cJSON *pairs = golden_meta(dir, "pairs"), *ids = golden_meta(dir, "ids"),
          *types = golden_meta(dir, "types");
    c->n = cJSON_GetArraySize(pairs);
    assert_true(c->n <= MAX_PAIRS);
    for (int i = 0; i < c->n; i++) {
        const cJSON *p = cJSON_GetArrayItem(pairs, i);
        c->a[i] = strdup(cJSON_GetArrayItem(p, 0)->valuestring);
        c->b[i] = strdup(cJSON_GetArrayItem(p, 1)->valuestring);
        c->alen[i] = strlen(c->a[i]), c->blen[i] = strlen(c->b[i]);
    }
    int lens[MAX_PAIRS];
    read_rows(ids, c->ids, c->len);
    read_rows(types, c->types, lens);
    c->logits = test_golden_tensor(dir, "logits", NULL);
    cJSON_Delete(pairs);
    cJSON_Delete(ids);
    cJSON_Delete(types);
}

static void free_pairs(pair_cases *c) {
    for (int i = 0; i < c->n; i++) free(c->a[i]), free(c->b[i]);
    free(c->logits);
}

/* text_tokenizer_encode_pair's ids and token types are the reference's, truncation included. */
static void test_pair_ids_and_types(void **state) {
    (void)state;
    for (size_t f = 0; f < sizeof pair_folders / sizeof *pair_folders; f++) {
        pair_cases c;
        read_pairs(pair_folders[f], &c);
        text_tokenizer *tok;
        vit_error err = {0};
        if (text_tokenizer_load(pair_folders[f], &tok, &err) != 0) fail_msg("%s", err.msg);
        text_tokenizer_scratch *s = text_tokenizer_scratch_create(tok);
        const int max_len = f == 0 ? 40 : 62; /* model_max_length 40; 64 positions - 2 */
        int cut = 0;
        for (int i = 0; i < c.n; i++) {
            int32_t ids[MAX_IDS], types[MAX_IDS];
            const int n = text_tokenizer_encode_pair(tok, s, c.a[i], c.alen[i], c.b[i], c.blen[i],
                                                     max_len, ids, types, &err);
            if (n != c.len[i])
                fail_msg("%s pair %d: %d ids, expected %d (%s)", pair_folders[f], i, n, c.len[i],
                         n < 0 ? err.msg : "");
            for (int t = 0; t < n; t++) {
                assert_int_equal(ids[t], c.ids[i][t]);
                assert_int_equal(types[t], c.types[i][t]);
            }
            cut += n == max_len;
        }
        if (f == 0) assert_true(cut >= 3); /* the long text with the query, either way, twice */
        text_tokenizer_scratch_free(s);
        text_tokenizer_free(tok);
        free_pairs(&c);
    }
}

/* vit_text_forward_pairs' logits of one batch against the float64 logits, and each pair alone. */
static void test_cross_encoder_logits(void **state) {
    (void)state;
    for (size_t f = 0; f < sizeof pair_folders / sizeof *pair_folders; f++) {
        pair_cases c;
        read_pairs(pair_folders[f], &c);
        vit_error err = {0};
        vit_text_context *ctx = vit_text_load(pair_folders[f], NULL, &err);
        if (!ctx) fail_msg("%s", err.msg);
        assert_int_equal(vit_text_num_labels(ctx), 1);
        const vit_text_pairs p = {(const char *const *)c.a, (const char *const *)c.b, c.alen,
                                  c.blen};
        float got[MAX_PAIRS], one;
        if (vit_text_forward_pairs(ctx, &p, c.n, got, NULL, &err) != 0) fail_msg("%s", err.msg);
        double worst = 0;
        for (int i = 0; i < c.n; i++) {
            worst = fmax(worst, fabs((double)got[i] - c.logits[i]));
            int n;
            const int32_t *ids = vit_text_ids(ctx, i, &n);
            assert_int_equal(n, c.len[i]);
            for (int t = 0; t < n; t++) assert_int_equal(ids[t], c.ids[i][t]);
        }
        for (int i = 0; i < c.n; i++) {
            const vit_text_pairs alone = {(const char *const *)c.a + i,
                                          (const char *const *)c.b + i, c.alen + i, c.blen + i};
            assert_int_equal(vit_text_forward_pairs(ctx, &alone, 1, &one, NULL, &err), 0);
            worst = fmax(worst, fabs((double)one - c.logits[i]));
        }
        print_message("%s: %d pairs, largest difference from float64 %.2g\n", pair_folders[f], c.n,
                      worst);
        assert_true(worst < TOL);
        vit_text_free(ctx);
        free_pairs(&c);
    }
}

/* Pairs need a sequence classifier and a tokenizer that joins pairs. */
static void test_pair_refusals(void **state) {
    (void)state;
    vit_error err = {0};
    const char *a = "the cat", *b = "the dog";
    const size_t la = 7, lb = 7;
    const vit_text_pairs p = {&a, &b, &la, &lb};
    float out[8];
    vit_text_context *ctx = vit_text_load("tests/data/roberta-model-micro", NULL, &err);
    assert_non_null(ctx);
    assert_int_equal(vit_text_forward_pairs(ctx, &p, 1, out, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "RobertaModel is not a sequence classifier"));
    vit_text_free(ctx);
    text_tokenizer *tok;
    assert_int_equal(text_tokenizer_load("tests/data/clip-micro", &tok, &err), 0);
    int32_t ids[16];
    assert_int_equal(text_tokenizer_encode_pair(tok, NULL, a, la, b, lb, 16, ids, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "pairs of texts are not implemented"));
    assert_non_null(strstr(err.msg, "CLIPTokenizer"));
    text_tokenizer_free(tok);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pair_ids_and_types),
        cmocka_unit_test(test_cross_encoder_logits),
        cmocka_unit_test(test_pair_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
