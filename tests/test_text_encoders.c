/* The text encoders beside BERT (issue 42): RoBERTa, XLM-RoBERTa, DistilBERT and MPNet as base
 * models, sequence classifiers and token classifiers, and BertForTokenClassification, against the
 * float64 forward of tools/text_encoders_reference.py (written from transformers' modeling files)
 * on micro folders in save_pretrained's layout: the ids (the `tokenizers` library's for the
 * byte-level BPE and SentencePiece folders, whole-word vocabularies by hand for WordPiece), the
 * features (CLS, mean, pooler), the logits, the per-token logits, a batch padded to its longest
 * against each text alone, and the refusals of what vit does not run. */
#include "tests/testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "vit/model/config.h"
#include "vit/model/params.h"
#include "vit/model/text_model.h"
#include "vit/vit.h"

/* float32 against float64 through two post-LN layers: the largest difference seen is printed per
 * folder (below 2e-6); 1e-4 is the project's tolerance against float64 references (README). */
#define TOL 1e-4
/* A text alone against the same text in a batch padded to the longest: not bit for bit, as the
 * products of another row count and the attention over another padded length round otherwise
 * (BERT's test_api accepts 1e-6 on probabilities); measured at most 1.4e-6. */
#define BATCH_TOL 5e-6

enum { BASE, SEQ, TOK };

typedef struct {
    const char *dir;
    int head;
    int pooler; /* a base model with a pooler */
    int spm;    /* needs libsentencepiece */
} folder;

static const folder folders[] = {
    {"tests/data/roberta-model-micro", BASE, 1, 0},
    {"tests/data/roberta-seq-micro", SEQ, 0, 0},
    {"tests/data/roberta-tok-micro", TOK, 0, 0},
    /* RobertaModel saved with add_pooling_layer=False: token 0's row is the output */
    {"tests/data/roberta-nopooler-model-micro", BASE, 0, 0},
    {"tests/data/xlmr-model-micro", BASE, 1, 1},
    {"tests/data/xlmr-seq-micro", SEQ, 0, 1},
    {"tests/data/xlmr-tok-micro", TOK, 0, 1},
    {"tests/data/distilbert-model-micro", BASE, 0, 0},
    {"tests/data/distilbert-seq-micro", SEQ, 0, 0},
    {"tests/data/distilbert-tok-micro", TOK, 0, 0},
    {"tests/data/mpnet-model-micro", BASE, 1, 0},
    {"tests/data/mpnet-seq-micro", SEQ, 0, 0},
    {"tests/data/mpnet-tok-micro", TOK, 0, 0},
    {"tests/data/bert-tok-micro", TOK, 0, 0},
};
enum { NUM_FOLDERS = sizeof folders / sizeof folders[0], MAX_TEXTS = 8 };

/* golden.safetensors' metadata: the texts and their ids (tools/text_encoders_reference.py). */
typedef struct {
    int n;
    char *texts[MAX_TEXTS];
    int32_t ids[MAX_TEXTS][128];
    int len[MAX_TEXTS];
    int tmax; /* the golden tensors' padded length */
} cases;

static cJSON *golden_header(const char *dir) {
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
    return header;
}

static void read_cases(const char *dir, cases *c) {
    memset(c, 0, sizeof *c);
    cJSON *header = golden_header(dir);
    const cJSON *meta = cJSON_GetObjectItem(header, "__metadata__");
    cJSON *texts = cJSON_Parse(cJSON_GetObjectItem(meta, "texts")->valuestring);
    cJSON *ids = cJSON_Parse(cJSON_GetObjectItem(meta, "ids")->valuestring);
    c->n = cJSON_GetArraySize(texts);
    assert_true(c->n <= MAX_TEXTS);
    for (int i = 0; i < c->n; i++) {
        c->texts[i] = strdup(cJSON_GetArrayItem(texts, i)->valuestring);
        const cJSON *row = cJSON_GetArrayItem(ids, i);
        c->len[i] = cJSON_GetArraySize(row);
        for (int t = 0; t < c->len[i]; t++) c->ids[i][t] = cJSON_GetArrayItem(row, t)->valueint;
    }
    const cJSON *hidden = cJSON_GetObjectItem(header, "hidden");
    c->tmax = cJSON_GetArrayItem(cJSON_GetObjectItem(hidden, "shape"), 1)->valueint;
    cJSON_Delete(texts);
    cJSON_Delete(ids);
    cJSON_Delete(header);
}

static void free_cases(cases *c) {
    for (int i = 0; i < c->n; i++) free(c->texts[i]);
}

static double worst_diff(const float *got, const float *want, size_t n, double worst) {
    for (size_t i = 0; i < n; i++) worst = fmax(worst, fabs((double)got[i] - want[i]));
    return worst;
}

/* The expected features of text i: hidden's row 0, or the mean of its rows. */
static void expected_features(const float *hidden, const cases *c, int i, int D, int mean,
                              float *out) {
    const float *h = hidden + (size_t)i * c->tmax * D;
    for (int d = 0; d < D; d++) {
        double s = 0;
        for (int t = 0; t < (mean ? c->len[i] : 1); t++) s += h[(size_t)t * D + d];
        out[d] = (float)(s / (mean ? c->len[i] : 1));
    }
}

/* What one call gives for texts [first, first + n): the head's output, flattened. */
static int run_head(vit_text_context *ctx, const folder *f, const cases *c, int first, int n,
                    float *out, vit_error *err) {
    size_t lengths[MAX_TEXTS];
    for (int i = 0; i < n; i++) lengths[i] = strlen(c->texts[first + i]);
    const char *const *texts = (const char *const *)c->texts + first;
    if (f->head == TOK) return vit_text_token_logits(ctx, texts, lengths, n, out, err);
    return vit_text_forward(ctx, texts, lengths, n, out, NULL, err);
}

static int out_size(vit_text_context *ctx, const folder *f) {
    const int K = vit_text_num_labels(ctx);
    return f->head == TOK ? vit_text_max_tokens(ctx) * K : K;
}

/* The ids vit's tokenizer gives are the reference's. */
static void check_ids(vit_text_context *ctx, const cases *c) {
    vit_error err = {0};
    for (int i = 0; i < c->n; i++) {
        int32_t ids[128];
        const int n = vit_text_tokenize(ctx, c->texts[i], strlen(c->texts[i]), ids, 128, &err);
        if (n != c->len[i]) fail_msg("'%s': %d ids, expected %d", c->texts[i], n, c->len[i]);
        for (int t = 0; t < n; t++) assert_int_equal(ids[t], c->ids[i][t]);
    }
}

/* The head's output of the whole batch against the reference. */
static double check_head(vit_text_context *ctx, const folder *f, const cases *c, const float *out) {
    const int D = vit_text_hidden_size(ctx), K = vit_text_num_labels(ctx), S = out_size(ctx, f);
    double worst = 0;
    const char *name = f->head == SEQ ? "logits" : f->head == TOK ? "token_logits" : "pooled";
    if (f->head == BASE && !f->pooler) name = "hidden"; /* no pooler: token 0's row */
    float *want = test_golden_tensor(f->dir, name, NULL), row[256];
    for (int i = 0; i < c->n; i++) {
        if (f->head == TOK) {
            worst = worst_diff(out + (size_t)i * S, want + (size_t)i * c->tmax * K,
                               (size_t)c->len[i] * K, worst);
            for (int k = c->len[i] * K; k < S; k++) assert_true(out[(size_t)i * S + k] == 0.0f);
        } else if (f->head == BASE && !f->pooler) {
            expected_features(want, c, i, D, 0, row);
            worst = worst_diff(out + (size_t)i * S, row, (size_t)D, worst);
        } else {
            worst = worst_diff(out + (size_t)i * S, want + (size_t)i * S, (size_t)S, worst);
        }
    }
    free(want);
    return worst;
}

/* vit_text_embed's CLS and mean against the hidden states; the pooler where there is one. */
static double check_features(vit_text_context *ctx, const folder *f, const cases *c) {
    const int D = vit_text_hidden_size(ctx);
    size_t lengths[MAX_TEXTS];
    for (int i = 0; i < c->n; i++) lengths[i] = strlen(c->texts[i]);
    float *hidden = test_golden_tensor(f->dir, "hidden", NULL),
          *got = test_alloc_floats((size_t)c->n * D), want[256];
    vit_error err = {0};
    double worst = 0;
    for (int mean = 0; mean < 2; mean++) {
        const vit_pool pool = mean ? VIT_POOL_MEAN : VIT_POOL_CLS;
        if (vit_text_embed(ctx, (const char *const *)c->texts, lengths, c->n, pool, got, &err))
            fail_msg("%s: %s", f->dir, err.msg);
        for (int i = 0; i < c->n; i++) {
            expected_features(hidden, c, i, D, mean, want);
            worst = worst_diff(got + (size_t)i * D, want, (size_t)D, worst);
        }
    }
    const int rc = vit_text_embed(ctx, (const char *const *)c->texts, lengths, c->n,
                                  VIT_POOL_POOLER, got, &err);
    if (f->head == BASE && f->pooler) {
        float *pooled = test_golden_tensor(f->dir, "pooled", NULL);
        assert_int_equal(rc, 0);
        worst = worst_diff(got, pooled, (size_t)c->n * D, worst);
        free(pooled);
    } else if (f->head != SEQ) { /* a sequence classifier's dense layer is its pooler */
        assert_int_equal(rc, -1);
        assert_non_null(strstr(err.msg, "no pooler"));
    }
    free(hidden);
    free(got);
    return worst;
}

/* One folder on one backend: ids, the head's output in one padded batch, the same texts one by
 * one, and the features; returns the largest difference from float64. inference_only: the
 * encoder layers' weights released once prepared (vit embed's load), the pooler and the head
 * still read. */
static double check_folder(const folder *f, vit_backend backend, int inference_only) {
    cases c;
    read_cases(f->dir, &c);
    vit_error err = {0};
    vit_text_params p = vit_text_default_params();
    p.max_batch = MAX_TEXTS;
    p.backend = backend;
    p.inference_only = inference_only;
    vit_text_context *ctx = vit_text_load(f->dir, &p, &err);
    if (!ctx) fail_msg("%s: %s", f->dir, err.msg);
    check_ids(ctx, &c);
    const int S = out_size(ctx, f);
    float *batch = test_alloc_floats((size_t)c.n * S), *one = test_alloc_floats((size_t)S);
    if (run_head(ctx, f, &c, 0, c.n, batch, &err) != 0) fail_msg("%s: %s", f->dir, err.msg);
    double worst = check_head(ctx, f, &c, batch), alone = 0;
    for (int i = 0; i < c.n; i++) {
        assert_int_equal(run_head(ctx, f, &c, i, 1, one, &err), 0);
        alone = worst_diff(one, batch + (size_t)i * S, (size_t)S, alone);
    }
    worst = fmax(worst, check_features(ctx, f, &c));
    print_message("%s (%s%s): max |d| %.2g from float64, alone vs batch %.2g\n", f->dir,
                  vit_text_compute(ctx), inference_only ? ", inference only" : "", worst, alone);
    assert_true(alone <= BATCH_TOL);
    assert_true(worst <= TOL);
    free(batch);
    free(one);
    vit_text_free(ctx);
    free_cases(&c);
    return worst;
}

/* Every folder on each backend built (OpenBLAS, and oneDNN where there is one), and loaded for
 * inference only (the weights released as prepared) on the default one. */
static void test_against_reference(void **state) {
    (void)state;
    const vit_backend backends[] = {VIT_BACKEND_OPENBLAS,
#ifdef VIT_ONEDNN
                                    VIT_BACKEND_ONEDNN
#endif
    };
    double overall = 0;
    for (size_t b = 0; b < sizeof backends / sizeof backends[0]; b++)
        for (int k = 0; k < NUM_FOLDERS; k++) {
#ifndef VIT_SENTENCEPIECE
            if (folders[k].spm) continue;
#endif
            overall = fmax(overall, check_folder(&folders[k], backends[b], 0));
            if (b == 0) overall = fmax(overall, check_folder(&folders[k], VIT_BACKEND_DEFAULT, 1));
        }
    print_message("largest difference from float64: %.2g\n", overall);
}

/* A token classifier is refused by vit_text_forward, whose [n, labels] its logits do not fit; a
 * sequence classifier by vit_text_token_logits. */
static void test_heads_refused_where_they_do_not_fit(void **state) {
    (void)state;
    vit_error err = {0};
    vit_text_context *tok = vit_text_load("tests/data/roberta-tok-micro", NULL, &err);
    vit_text_context *seq = vit_text_load("tests/data/distilbert-seq-micro", NULL, &err);
    assert_non_null(tok);
    assert_non_null(seq);
    const char *text = "Hello";
    const size_t len = 5;
    float out[64 * 5];
    assert_int_equal(vit_text_forward(tok, &text, &len, 1, out, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "RobertaForTokenClassification classifies every token"));
    assert_int_equal(vit_text_token_logits(seq, &text, &len, 1, out, &err), -1);
    assert_non_null(strstr(err.msg, "DistilBertForSequenceClassification has no token classifier"));
    vit_model_info info;
    vit_text_model_info(tok, &info);
    assert_string_equal(info.architecture, "RobertaForTokenClassification");
    assert_string_equal(info.family, "RoBERTa");
    assert_string_equal(info.pooling, "tokens");
    assert_true(info.capabilities & VIT_CAN_TAG);
    assert_false(info.capabilities & VIT_CAN_CLASSIFY);
    vit_text_model_info(seq, &info);
    assert_string_equal(info.model_type, "distilbert");
    assert_true(info.capabilities & VIT_CAN_CLASSIFY);
    vit_text_free(tok);
    vit_text_free(seq);
}

/* MPNet's buckets against PyTorch's relative_position_bucket for -600..600 (its float32
 * logarithm included: the boundaries at 16, 32, 64 are exact only in real arithmetic). */
static void test_mpnet_buckets(void **state) {
    (void)state;
    size_t n;
    float *want = test_golden_tensor("tests/data/mpnet-model-micro", "buckets", &n);
    assert_int_equal(n, 1201);
    for (int r = -600; r <= 600; r++)
        if (text_relative_bucket(r, 32, 128) != (int)want[r + 600])
            fail_msg("bucket of %d: %d, PyTorch %d", r, text_relative_bucket(r, 32, 128),
                     (int)want[r + 600]);
    free(want);
}

static void expect_refused(const char *json, const char *needle) {
    model_config cfg;
    vit_error err = {0};
    if (model_config_parse(json, "m/config.json", &cfg, &err) == 0) {
        model_config_free(&cfg);
        fail_msg("accepted: %s", json);
    }
    if (!strstr(err.msg, needle)) fail_msg("'%s' does not say '%s'", err.msg, needle);
    assert_non_null(strstr(err.msg, "m/config.json"));
}

/* What vit does not run is refused in one line naming the file, not run as something else. */
static void test_refusals(void **state) {
    (void)state;
    expect_refused("{\"model_type\": \"distilbert\", \"sinusoidal_pos_embds\": true}",
                   "sinusoidal_pos_embds true is not one vit runs");
    expect_refused("{\"model_type\": \"mpnet\", \"relative_attention_num_buckets\": 64}",
                   "relative_attention_num_buckets 64: MPNet's encoder buckets positions into 32");
    expect_refused("{\"model_type\": \"roberta\", \"position_embedding_type\": \"relative_key\"}",
                   "position_embedding_type relative_key is not one vit runs");
    expect_refused(
        "{\"model_type\": \"xlm-roberta\", \"architectures\": [\"XLMRobertaForMaskedLM\"]}",
        "architectures names XLMRobertaForMaskedLM; supported for model_type "
        "xlm-roberta: XLMRobertaModel, XLMRobertaForSequenceClassification, "
        "XLMRobertaForTokenClassification");
    expect_refused("{\"model_type\": \"distilbert\", \"activation\": \"swish\"}",
                   "field 'activation' must be gelu or relu");
    expect_refused("{\"model_type\": \"roberta\", \"pad_token_id\": 600}",
                   "pad_token_id 600 leaves no positions");
}

/* The Hub's configurations laid out (no weights): the parameter counts transformers'
 * num_parameters() gives for these base models, so every tensor of theirs has its shape here
 * (RoBERTa's 514 positions and one token type, MPNet's bucket table, DistilBERT's six layers
 * without token types or pooler). */
static void test_real_shapes(void **state) {
    (void)state;
    static const struct {
        const char *name, *json;
        size_t params;
    } models[] = {
        {"roberta-base",
         "{\"model_type\": \"roberta\", \"architectures\": [\"RobertaModel\"], \"vocab_size\": "
         "50265, \"max_position_embeddings\": 514, \"type_vocab_size\": 1, \"pad_token_id\": 1}",
         124645632},
        {"xlm-roberta-base",
         "{\"model_type\": \"xlm-roberta\", \"architectures\": [\"XLMRobertaModel\"], "
         "\"vocab_size\": 250002, \"max_position_embeddings\": 514, \"type_vocab_size\": 1, "
         "\"pad_token_id\": 1}",
         278043648},
        {"distilbert-base-uncased",
         "{\"model_type\": \"distilbert\", \"architectures\": [\"DistilBertModel\"], \"dim\": "
         "768, \"n_layers\": 6, \"n_heads\": 12, \"hidden_dim\": 3072}",
         66362880},
        {"all-mpnet-base-v2",
         "{\"model_type\": \"mpnet\", \"architectures\": [\"MPNetModel\"], \"vocab_size\": 30527, "
         "\"max_position_embeddings\": 514, \"relative_attention_num_buckets\": 32}",
         109486464},
    };
    for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) {
        model_config cfg;
        model m;
        vit_error err = {0};
        if (model_config_parse(models[i].json, models[i].name, &cfg, &err) != 0 ||
            model_layout(&m, &cfg, &err) != 0)
            fail_msg("%s: %s", models[i].name, err.msg);
        if (model_live_params(&m) != models[i].params)
            fail_msg("%s: %zu parameters, transformers counts %zu", models[i].name,
                     model_live_params(&m), models[i].params);
        model_free(&m);
    }
}

/* The CLI on these folders as on a BERT: vit info names the class, positions and head; vit text
 * gives the reference's logits; vit embed --text (mean pooling) the reference's features. */
static void test_cli(void **state) {
    (void)state;
    REQUIRE_BIN();
    const char *info[] = {"info", "-m", "tests/data/mpnet-model-micro", NULL};
    test_run_result r = test_run_vit(NULL, NULL, info);
    assert_int_equal(r.status, 0);
    const char *says[] = {"architecture:   MPNetModel (post-LN encoder)", "up to 78 tokens",
                          "counted from padding_idx + 1; relative position buckets"};
    for (int i = 0; i < 3; i++)
        if (!strstr(r.out, says[i])) fail_msg("vit info does not say '%s':\n%s", says[i], r.out);
    test_run_free(&r);

    cases c;
    read_cases("tests/data/roberta-seq-micro", &c);
    const char *text[] = {"text",     "-m", "tests/data/roberta-seq-micro", "--json", "--logits",
                          c.texts[1], NULL};
    r = test_run_vit(NULL, NULL, text);
    assert_int_equal(r.status, 0);
    cJSON *line = cJSON_Parse(r.out);
    const cJSON *logits = cJSON_GetObjectItem(line, "logits");
    float *want = test_golden_tensor("tests/data/roberta-seq-micro", "logits", NULL);
    assert_int_equal(cJSON_GetArraySize(logits), 3);
    for (int k = 0; k < 3; k++)
        assert_true(fabs(cJSON_GetArrayItem(logits, k)->valuedouble - want[3 + k]) <= TOL);
    cJSON_Delete(line);
    free(want);
    test_run_free(&r);
    free_cases(&c);

    read_cases("tests/data/distilbert-model-micro", &c);
    char out[4200];
    snprintf(out, sizeof out, "%s/distilbert.safetensors", test_tmpdir());
    const char *embed[] = {"embed",    "-m",     "tests/data/distilbert-model-micro",
                           "--pool",   "mean",   "--text",
                           c.texts[0], "--text", c.texts[5],
                           "-o",       out,      NULL};
    r = test_run_vit(NULL, NULL, embed);
    if (r.status != 0) fail_msg("vit embed exited %d: %s", r.status, r.err);
    test_run_free(&r);
    size_t n;
    float *got = test_read_tensor(out, "embeddings", &n), *hidden, row[32];
    assert_int_equal(n, 2 * 32);
    hidden = test_golden_tensor("tests/data/distilbert-model-micro", "hidden", NULL);
    for (int i = 0; i < 2; i++) {
        expected_features(hidden, &c, i ? 5 : 0, 32, 1, row);
        assert_true(worst_diff(got + i * 32, row, 32, 0) <= TOL);
    }
    free(got);
    free(hidden);
    free_cases(&c);
}

/* vit embed --text-file batches texts of similar token counts together (a batch is padded to its
 * longest) and writes the rows in the file's order: every text of distilbert-model-micro, twice,
 * with the file's lengths mixed (short, long, short, ...; the empty one left out, as a file's
 * blank lines are), in batches of 3, row i against the
 * reference's features of the text on line i, and the names file FILE:1, FILE:2, ... in turn. */
static void test_cli_text_file_order(void **state) {
    (void)state;
    REQUIRE_BIN();
    cases c;
    read_cases("tests/data/distilbert-model-micro", &c);
    int order[2 * MAX_TEXTS], n = 0, by_len[MAX_TEXTS] = {0}, texts = 0;
    for (int i = 0; i < c.n; i++)
        if (c.texts[i][0]) by_len[texts++] = i;
    for (int i = 0; i < texts; i++) /* the texts by token count, longest first */
        for (int j = i + 1; j < texts; j++)
            if (c.len[by_len[j]] > c.len[by_len[i]]) {
                const int t = by_len[i];
                by_len[i] = by_len[j], by_len[j] = t;
            }
    for (int r = 0; r < 2; r++) /* alternately from the short and the long end */
        for (int lo = 0, hi = texts - 1; lo <= hi; lo++, hi--) {
            order[n++] = by_len[(r ? lo : hi)];
            if (lo != hi) order[n++] = by_len[(r ? hi : lo)];
        }
    assert_true(texts > 3 && c.len[by_len[0]] > c.len[by_len[texts - 1]]); /* lengths differ */
    char file[4096] = "", out[4200], names[4200];
    for (int i = 0; i < n; i++) {
        strcat(file, c.texts[order[i]]);
        strcat(file, "\n");
    }
    const char *path = write_temp_file("order.txt", file, strlen(file));
    snprintf(out, sizeof out, "%s/order.safetensors", test_tmpdir());
    snprintf(names, sizeof names, "%s/order.txt", test_tmpdir());
    const char *embed[] = {"embed",  "-m",          "tests/data/distilbert-model-micro",
                           "--pool", "mean",        "-b",
                           "3",      "--text-file", path,
                           "-o",     out,           NULL};
    test_run_result r = test_run_vit(NULL, NULL, embed);
    if (r.status != 0) fail_msg("vit embed exited %d: %s", r.status, r.err);
    test_run_free(&r);
    size_t got_n;
    float *got = test_read_tensor(out, "embeddings", &got_n), row[32];
    assert_int_equal(got_n, (size_t)n * 32);
    float *hidden = test_golden_tensor("tests/data/distilbert-model-micro", "hidden", NULL);
    for (int i = 0; i < n; i++) {
        expected_features(hidden, &c, order[i], 32, 1, row);
        const double worst = worst_diff(got + (size_t)i * 32, row, 32, 0);
        if (worst > TOL) fail_msg("row %d (text %d): off by %g", i, order[i], worst);
    }
    char *listed = (char *)read_whole_file(names, NULL), *at = listed;
    assert_non_null(listed);
    for (int i = 0; i < n; i++) {
        char want[4200];
        snprintf(want, sizeof want, "%s:%d\n", path, i + 1);
        if (strncmp(at, want, strlen(want)) != 0) fail_msg("name %d is not %s", i, want);
        at += strlen(want);
    }
    free(listed);
    free(got);
    free(hidden);
    free_cases(&c);
}

/* vit eval: the reference's argmax as the labels of mpnet-seq-micro's texts, so every prediction
 * must be right; vit train reads a token classifier's data as tagged words, its refusal of a TSV
 * one line naming the line, not a missing vocab.txt (tests/test_text_encoders_train.c trains). */
static void test_cli_eval_and_train(void **state) {
    (void)state;
    REQUIRE_BIN();
    cases c;
    test_run_result r;
    char out[4200];
    read_cases("tests/data/mpnet-seq-micro", &c);
    float *seq = test_golden_tensor("tests/data/mpnet-seq-micro", "logits", NULL);
    static const char *const names[] = {"negative", "neutral", "positive"};
    char tsv_eval[4096] = "sentence\tlabel\n";
    int evaluated = 0;
    for (int i = 0; i < c.n; i++) {
        if (!c.texts[i][0]) continue; /* an empty sentence is not a TSV row */
        int best = 0;
        for (int k = 1; k < 3; k++) best = seq[i * 3 + k] > seq[i * 3 + best] ? k : best;
        snprintf(tsv_eval + strlen(tsv_eval), sizeof tsv_eval - strlen(tsv_eval), "%s\t%s\n",
                 c.texts[i], names[best]);
        evaluated++;
    }
    const char *eval_file = write_temp_file("mpnet.tsv", tsv_eval, strlen(tsv_eval));
    const char *eval[] = {"eval", "-m", "tests/data/mpnet-seq-micro", eval_file, NULL};
    r = test_run_vit(NULL, NULL, eval);
    assert_int_equal(r.status, 0);
    char top1[64];
    snprintf(top1, sizeof top1, "top-1:     1.0000 (%d/%d)", evaluated, evaluated);
    if (!strstr(r.out, top1)) fail_msg("vit eval does not say '%s':\n%s", top1, r.out);
    test_run_free(&r);
    free(seq);
    free_cases(&c);

    const char tsv[] = "sentence\tlabel\nthe cat sat\tO\n";
    const char *data = write_temp_file("tags.tsv", tsv, sizeof tsv - 1);
    snprintf(out, sizeof out, "%s/trained", test_tmpdir());
    const char *train[] = {
        "train", "--init", "tests/data/roberta-tok-micro", "--train", data, "--out", out, NULL};
    r = test_run_vit(NULL, NULL, train);
    assert_int_equal(r.status, 1);
    /* a token classifier trains on tagged words: the TSV's header is a word tagged 'label' */
    if (!strstr(r.err, "tags.tsv:1: unknown label 'label'")) fail_msg("%s", r.err);
    test_run_free(&r);
}

/* vit tag --all --json: every token but the start and end tokens, in order, its label the float64
 * logits' argmax and its score their softmax at it (the pipeline's aggregation "none"), its word
 * the token's piece (an unk token's the text it stands for, as the pipeline has it); without
 * --all the O tokens are left out. */
static void test_tag_cli(void **state) {
    (void)state;
    REQUIRE_BIN();
    static const char *const dirs[] = {"tests/data/bert-tok-micro", "tests/data/roberta-tok-micro"};
    for (size_t f = 0; f < 2; f++) {
        cases c;
        read_cases(dirs[f], &c);
        vit_error err = {0};
        vit_text_context *ctx = vit_text_load(dirs[f], NULL, &err);
        assert_non_null(ctx);
        const int K = vit_text_num_labels(ctx);
        float *want = test_golden_tensor(dirs[f], "token_logits", NULL);
        for (int all = 0; all < 2; all++) {
            const char *args[MAX_TEXTS + 8] = {"tag", "-m", dirs[f], "--json"};
            int n = 4;
            if (all) args[n++] = "--all";
            args[n++] = "--";
            for (int i = 0; i < c.n; i++) args[n++] = c.texts[i];
            args[n] = NULL;
            test_run_result r = test_run_vit(NULL, NULL, args);
            if (r.status != 0) fail_msg("vit tag: %d: %s", r.status, r.err);
            const char *line = r.out;
            for (int i = 0; i < c.n; i++) {
                const char *end = strchr(line, '\n');
                assert_non_null(end);
                cJSON *o = cJSON_ParseWithLength(line, (size_t)(end - line));
                const cJSON *ents = cJSON_GetObjectItem(o, "entities"), *e = ents->child;
                for (int t = 1; t < c.len[i] - 1; t++) {
                    const float *l = want + ((size_t)i * c.tmax + t) * K;
                    int best = 0;
                    for (int k = 1; k < K; k++) best = l[k] > l[best] ? k : best;
                    double sum = 0;
                    for (int k = 0; k < K; k++) sum += exp((double)l[k] - l[best]);
                    if (!all && best == 0) continue; /* O */
                    assert_non_null(e);
                    assert_int_equal(cJSON_GetObjectItem(e, "index")->valueint, t);
                    assert_string_equal(cJSON_GetObjectItem(e, "entity")->valuestring,
                                        vit_text_label(ctx, best));
                    const char *piece = vit_text_piece(ctx, c.ids[i][t]), *word = piece;
                    /* an unk token's word: the (ASCII) text it stands for, where offsets tell */
                    char ref[64] = "";
                    if (cJSON_IsNumber(cJSON_GetObjectItem(e, "start")) &&
                        (strcmp(piece, "[UNK]") == 0 || strcmp(piece, "<unk>") == 0)) {
                        const int s = cJSON_GetObjectItem(e, "start")->valueint,
                                  n = cJSON_GetObjectItem(e, "end")->valueint - s;
                        snprintf(ref, sizeof ref, "%.*s", n, c.texts[i] + s);
                        word = ref;
                    }
                    assert_string_equal(cJSON_GetObjectItem(e, "word")->valuestring, word);
                    assert_true(fabs(cJSON_GetObjectItem(e, "score")->valuedouble - 1 / sum) < TOL);
                    e = e->next;
                }
                assert_null(e);
                cJSON_Delete(o);
                line = end + 1;
            }
            assert_string_equal(line, "");
            test_run_free(&r);
        }
        free(want);
        vit_text_free(ctx);
        free_cases(&c);
    }
    const char *seq[] = {"tag", "-m", "tests/data/roberta-seq-micro", "x", NULL};
    test_run_result r = test_run_vit(NULL, NULL, seq);
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.err, "RobertaForSequenceClassification has no token classifier"));
    test_run_free(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_against_reference),
        cmocka_unit_test(test_heads_refused_where_they_do_not_fit),
        cmocka_unit_test(test_mpnet_buckets),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_real_shapes),
        cmocka_unit_test(test_cli),
        cmocka_unit_test(test_cli_text_file_order),
        cmocka_unit_test(test_cli_eval_and_train),
        cmocka_unit_test(test_tag_cli),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
