/* NomicBERT and JinaBERT v2 (issue 42), the long-context embedders, as options of the one encoder
 * (rotary positions + SwiGLU or GeGLU; ALiBi + GeGLU), against the float64 forward of
 * tools/nomic_jina_reference.py (written from modeling_hf_nomic_bert.py and TEI's jina.rs) on
 * micro sentence-transformers folders in the Hub's layout: last_hidden_state of every token of six
 * texts of 2 to 64 tokens in one padded batch and each alone, on every backend in fp32; bf16 and
 * int8 within a bound of fp32; the folders' pooled sentence embeddings (mean, Normalize) and the
 * poolers; the parameter counts of the real models; the refusals of the variants vit does not
 * run; vit info and vit embed. */
#include "tests/testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "vit/io/model_dir.h"
#include "vit/model/config.h"
#include "vit/model/params.h"
#include "vit/model/text_model.h"
#include "vit/vit.h"

/* float32 against float64 through two post-LN layers: every op rounds to 2^-24 relative and the
 * LayerNorms keep the states O(1), so a few 1e-6 is float32's own error (the largest seen is
 * printed, about 2e-6); 1e-5 leaves room for the other backends' orders of summation. */
#define TOL 1e-5
/* A text alone against the same text in a padded batch: other row counts and padded lengths sum
 * in other orders (measured up to 1.7e-6). */
#define BATCH_TOL 5e-6
/* Reduced precision against fp32 on these states (O(1) after each LayerNorm): bf16 rounds every
 * product's operands to 8 bits (2^-9 relative), int8 weights per channel and activations per row
 * to 8 bits; about twice the largest error measured (printed). */
#define BF16_BOUND 0.08
#define INT8_BOUND 0.25

static const struct {
    const char *dir;
    int pooler; /* a pooler in the file */
} folders[] = {
    {"tests/data/nomic-micro", 0},
    {"tests/data/nomic-geglu-micro", 1},
    {"tests/data/jina-micro", 1},
};
enum { NUM_FOLDERS = 3, MAX_TEXTS = 8, MAX_T = 64 };

typedef struct {
    int n, tmax;
    char *texts[MAX_TEXTS];
    int32_t ids[MAX_TEXTS][MAX_T];
    int len[MAX_TEXTS];
} cases;

static void read_cases(const char *dir, cases *c) {
    memset(c, 0, sizeof *c);
    char path[4096];
    snprintf(path, sizeof path, "%s/golden.safetensors", dir);
    size_t size;
    uint8_t *bytes = read_whole_file(path, &size);
    assert_non_null(bytes);
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = n << 8 | bytes[i];
    cJSON *header = cJSON_ParseWithLength((const char *)bytes + 8, (size_t)n);
    free(bytes);
    const cJSON *meta = cJSON_GetObjectItem(header, "__metadata__");
    cJSON *texts = cJSON_Parse(cJSON_GetObjectItem(meta, "texts")->valuestring);
    cJSON *ids = cJSON_Parse(cJSON_GetObjectItem(meta, "ids")->valuestring);
    c->n = cJSON_GetArraySize(texts);
    assert_true(c->n <= MAX_TEXTS);
    for (int i = 0; i < c->n; i++) {
        c->texts[i] = strdup(cJSON_GetArrayItem(texts, i)->valuestring);
        const cJSON *row = cJSON_GetArrayItem(ids, i);
        c->len[i] = cJSON_GetArraySize(row);
        assert_true(c->len[i] <= MAX_T);
        for (int t = 0; t < c->len[i]; t++) c->ids[i][t] = cJSON_GetArrayItem(row, t)->valueint;
    }
    const cJSON *shape = cJSON_GetObjectItem(cJSON_GetObjectItem(header, "hidden"), "shape");
    c->tmax = cJSON_GetArrayItem(shape, 1)->valueint;
    cJSON_Delete(texts), cJSON_Delete(ids), cJSON_Delete(header);
}

static void free_cases(cases *c) {
    for (int i = 0; i < c->n; i++) free(c->texts[i]);
}

static double worst_diff(const float *got, const float *want, size_t n, double worst) {
    for (size_t i = 0; i < n; i++) worst = fmax(worst, fabs((double)got[i] - want[i]));
    return worst;
}

/* last_hidden_state [B, tmax, D] of texts first.. first + B - 1, padded with id 0 and masked,
 * into out (rows past each text zero, as the reference's). */
static void hidden_states(const model *m, gemm_state *gs, const cases *c, int first, int B,
                          float *out) {
    const int D = m->cfg.hidden_size, T = c->tmax;
    int32_t ids[MAX_TEXTS * MAX_T] = {0};
    uint8_t mask[MAX_TEXTS * MAX_T] = {0};
    for (int b = 0; b < B; b++)
        for (int t = 0; t < c->len[first + b]; t++)
            ids[b * T + t] = c->ids[first + b][t], mask[b * T + t] = 1;
    text_acts a;
    vit_error err = {0};
    if (text_acts_alloc(&a, m, B, T, 0, &err) != 0) fail_msg("%s", err.msg);
    a.gemm = gs;
    float *logits = test_alloc_floats((size_t)B * D);
    if (text_model_forward(m, &a, ids, mask, B, T, NULL, logits, &err) != 0)
        fail_msg("%s", err.msg);
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++)
            for (int d = 0; d < D; d++)
                out[((size_t)b * T + t) * D + d] =
                    mask[b * T + t] ? a.x[((size_t)b * T + t) * D + d] : 0.0f;
    free(logits);
    text_acts_free(&a);
}

/* Every token's state of one batch and of each text alone, prepared on backend (-1: plain) in
 * precision; the batch's states into out. Returns the largest batch-against-alone difference. */
static double run_folder(model *m, const cases *c, int backend, gemm_precision precision,
                         float *out) {
    const int D = m->cfg.hidden_size, T = c->tmax;
    vit_error err = {0};
    gemm_state *gs = NULL;
    if (backend >= 0) {
        if (model_prepare(m, (gemm_backend)backend, precision, c->n, T, &err) != 0) return -1;
        if (!(gs = model_gemm_state(m, &err))) fail_msg("%s", err.msg);
    }
    hidden_states(m, gs, c, 0, c->n, out);
    float *one = test_alloc_floats((size_t)T * D);
    double alone = 0;
    for (int i = 0; i < c->n; i++) {
        hidden_states(m, gs, c, i, 1, one);
        alone = worst_diff(one, out + (size_t)i * T * D, (size_t)T * D, alone);
    }
    free(one);
    gemm_state_free(gs);
    model_unprepare(m);
    return alone;
}

/* last_hidden_state against float64 on every backend, fp32; bf16 and int8 against fp32. */
static void test_hidden_states(void **state) {
    (void)state;
    int backends[3];
    const int nb = test_backends(backends);
    double overall = 0;
    for (int f = 0; f < NUM_FOLDERS; f++) {
        cases c;
        read_cases(folders[f].dir, &c);
        model m;
        vit_error err = {0};
        if (model_load(&m, folders[f].dir, &err) != 0) fail_msg("%s", err.msg);
        const size_t n = (size_t)c.n * c.tmax * m.cfg.hidden_size;
        float *want = test_golden_tensor(folders[f].dir, "hidden", NULL);
        float *got = test_alloc_floats(n), *fp32 = test_alloc_floats(n);
        for (int k = 0; k < nb; k++) {
            const char *name = backends[k] < 0 ? "plain" : gemm_backend_name(backends[k]);
            const double alone = run_folder(&m, &c, backends[k], PRECISION_FP32, got);
            const double d = worst_diff(got, want, n, 0);
            print_message("%s %-8s fp32: max |d| %.2g from float64, alone vs batch %.2g\n",
                          folders[f].dir, name, d, alone);
            if (!(d <= TOL)) fail_msg("%s %s: %.3g from float64", folders[f].dir, name, d);
            if (!(alone >= 0 && alone <= BATCH_TOL)) fail_msg("alone vs batch %.3g", alone);
            overall = fmax(overall, d);
            if (backends[k] < 0) continue;
            memcpy(fp32, got, n * sizeof *got);
            const gemm_precision low[] = {PRECISION_BF16, PRECISION_INT8};
            const double bound[] = {BF16_BOUND, INT8_BOUND};
            for (int p = 0; p < 2; p++) {
                if (run_folder(&m, &c, backends[k], low[p], got) < 0) continue; /* int8: oneDNN */
                const double e = worst_diff(got, fp32, n, 0);
                print_message("%s %-8s %s: max |d| %.2g from fp32 (bound %g)\n", folders[f].dir,
                              name, gemm_precision_name(low[p]), e, bound[p]);
                if (!(e <= bound[p]))
                    fail_msg("%s %s %s: %.3g", folders[f].dir, name, gemm_precision_name(low[p]),
                             e);
            }
        }
        free(want), free(got), free(fp32);
        model_free(&m);
        free_cases(&c);
    }
    print_message("largest difference from float64: %.2g\n", overall);
}

/* The public API on the folders: the tokenizer's ids are the reference's; VIT_POOL_SENTENCE (the
 * folder's pipeline: mean, and nomic-micro's Normalize), the pooler where the file has one. */
static void test_embeddings(void **state) {
    (void)state;
    for (int f = 0; f < NUM_FOLDERS; f++) {
        cases c;
        read_cases(folders[f].dir, &c);
        vit_error err = {0};
        vit_text_params p = vit_text_default_params();
        p.max_batch = MAX_TEXTS;
        vit_text_context *ctx = vit_text_load(folders[f].dir, &p, &err);
        if (!ctx) fail_msg("%s: %s", folders[f].dir, err.msg);
        for (int i = 0; i < c.n; i++) {
            int32_t ids[128];
            const int n = vit_text_tokenize(ctx, c.texts[i], strlen(c.texts[i]), ids, 128, &err);
            assert_int_equal(n, c.len[i]);
            for (int t = 0; t < n; t++) assert_int_equal(ids[t], c.ids[i][t]);
        }
        const int D = vit_text_hidden_size(ctx);
        size_t lengths[MAX_TEXTS];
        for (int i = 0; i < c.n; i++) lengths[i] = strlen(c.texts[i]);
        float *got = test_alloc_floats((size_t)c.n * D);
        float *want = test_golden_tensor(folders[f].dir, "sentence", NULL);
        if (vit_text_embed(ctx, (const char *const *)c.texts, lengths, c.n, VIT_POOL_SENTENCE, got,
                           &err))
            fail_msg("%s: %s", folders[f].dir, err.msg);
        double worst = worst_diff(got, want, (size_t)c.n * D, 0);
        free(want);
        const int rc = vit_text_embed(ctx, (const char *const *)c.texts, lengths, c.n,
                                      VIT_POOL_POOLER, got, &err);
        if (folders[f].pooler) {
            assert_int_equal(rc, 0);
            want = test_golden_tensor(folders[f].dir, "pooled", NULL);
            worst = worst_diff(got, want, (size_t)c.n * D, worst);
            free(want);
        } else { /* nomic-embed's files have no pooler: refused, not made up */
            assert_int_equal(rc, -1);
            assert_non_null(strstr(err.msg, "no pooler"));
        }
        print_message("%s: sentence embeddings and pooler max |d| %.2g from float64\n",
                      folders[f].dir, worst);
        assert_true(worst <= TOL);
        free(got);
        vit_text_free(ctx);
        free_cases(&c);
    }
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
    assert_null(strchr(err.msg, '\n'));
}

#define NOMIC                                                                                      \
    "{\"model_type\": \"nomic_bert\", \"activation_function\": \"swiglu\", "                       \
    "\"rotary_emb_fraction\": 1.0, "
#define JINA                                                                                       \
    "{\"model_type\": \"bert\", \"architectures\": [\"JinaBertForMaskedLM\"], "                    \
    "\"position_embedding_type\": \"alibi\", "

/* The variants vit does not run: one line naming the file, the field and its value. */
static void test_refusals(void **state) {
    (void)state;
    expect_refused(NOMIC "\"prenorm\": true}", "prenorm true: a pre-LN NomicBERT is not done");
    expect_refused(NOMIC "\"rotary_scaling_factor\": 2}",
                   "rotary_scaling_factor 2: dynamic NTK scaling of the rotary base is not done");
    expect_refused(NOMIC "\"num_experts\": 8, \"moe_every_n_layers\": 2}",
                   "num_experts 8: a mixture of experts");
    expect_refused(NOMIC "\"use_rms_norm\": true}", "use_rms_norm true: RMSNorm is not done");
    expect_refused("{\"model_type\": \"nomic_bert\", \"activation_function\": \"glu\", "
                   "\"rotary_emb_fraction\": 1.0}",
                   "activation_function glu: vit runs NomicBERT's gated MLPs (swiglu, geglu)");
    expect_refused("{\"model_type\": \"nomic_bert\", \"activation_function\": \"swiglu\"}",
                   "rotary_emb_fraction 0 gives 0 rotary columns");
    expect_refused(NOMIC "\"rotary_emb_fraction\": 0.3}", "rotary_emb_fraction 0.3 gives 19.2");
    expect_refused(NOMIC "\"architectures\": [\"NomicBertForPreTraining\"]}",
                   "architectures names NomicBertForPreTraining; supported for model_type "
                   "nomic_bert: NomicBertModel");
    expect_refused(JINA "\"auto_map\": {\"AutoModel\": "
                        "\"jinaai/jina-bert-v2-qk-post-norm--modeling_bert.JinaBertModel\"}}",
                   "JinaBERT v2 with LayerNorms on the queries and keys (the code models) is not "
                   "done");
    expect_refused("{\"model_type\": \"bert\", \"architectures\": [\"JinaBertModel\"]}",
                   "position_embedding_type (absent): vit runs JinaBERT v2 with alibi");
    expect_refused(JINA "\"feed_forward_type\": \"reglu\"}",
                   "feed_forward_type reglu: vit runs JinaBERT v2's geglu");
    expect_refused(JINA "\"hidden_act\": \"relu\"}",
                   "hidden_act relu: vit runs JinaBERT v2's GeGLU with the erf gelu");
    expect_refused("{\"model_type\": \"bert\", \"architectures\": "
                   "[\"JinaBertForTokenClassification\"], \"position_embedding_type\": "
                   "\"alibi\"}",
                   "architectures names JinaBertForTokenClassification; supported for model_type "
                   "bert: JinaBertModel, JinaBertForMaskedLM, JinaBertForSequenceClassification");
}

/* The Hub's configurations laid out (no weights): every tensor of the real checkpoints has its
 * shape, counted by hand from their configs: nomic-embed-text-v1.5 (30528 x 768 words, 2 types,
 * emb_ln, 12 x (Wqkv 3·768², out_proj 768², fc11 + fc12 2·3072·768, fc2 3072·768, two norms), no
 * bias: 136731648, its model.safetensors' 547 MB), jina-embeddings-v2-base-en (BERT's layers with
 * gated_layers [6144, 768] without bias and wo, and a pooler) and -small-en (512 wide, 4 layers, 8
 * heads, 2048). */
static void test_real_shapes(void **state) {
    (void)state;
    static const struct {
        const char *name, *json;
        size_t params;
    } models[] = {
        {"nomic-embed-text-v1.5",
         "{\"model_type\": \"nomic_bert\", \"architectures\": [\"NomicBertModel\"], "
         "\"activation_function\": \"swiglu\", \"n_embd\": 768, \"n_head\": 12, \"n_inner\": "
         "3072, \"n_layer\": 12, \"n_positions\": 8192, \"pad_vocab_size_multiple\": 64, "
         "\"qkv_proj_bias\": false, \"mlp_fc1_bias\": false, \"mlp_fc2_bias\": false, "
         "\"rotary_emb_base\": 1000, \"rotary_emb_fraction\": 1.0, \"rotary_emb_interleaved\": "
         "false, \"rotary_scaling_factor\": null, \"prenorm\": false, \"type_vocab_size\": 2, "
         "\"vocab_size\": 30528, \"layer_norm_epsilon\": 1e-12, \"use_rms_norm\": false}",
         /* and the pooler NomicBertModel lays out, dropped at load when the file has none (as
          * nomic-embed-text's has not) */
         23445504 + 1536 + 1536 + 12 * (1769472 + 589824 + 4718592 + 2359296 + 2 * 1536) +
             768 * 768 + 768},
        {"jina-embeddings-v2-base-en",
         "{\"model_type\": \"bert\", \"architectures\": [\"JinaBertForMaskedLM\"], "
         "\"feed_forward_type\": \"geglu\", \"hidden_act\": \"gelu\", \"hidden_size\": 768, "
         "\"intermediate_size\": 3072, \"max_position_embeddings\": 8192, "
         "\"num_attention_heads\": 12, \"num_hidden_layers\": 12, \"position_embedding_type\": "
         "\"alibi\", \"type_vocab_size\": 2, \"vocab_size\": 30528}",
         137368320},
        {"jina-embeddings-v2-small-en",
         "{\"model_type\": \"bert\", \"architectures\": [\"JinaBertForMaskedLM\"], "
         "\"feed_forward_type\": \"geglu\", \"hidden_act\": \"gelu\", \"hidden_size\": 512, "
         "\"intermediate_size\": 2048, \"max_position_embeddings\": 8192, "
         "\"num_attention_heads\": 8, \"num_hidden_layers\": 4, \"position_embedding_type\": "
         "\"alibi\", \"type_vocab_size\": 2, \"vocab_size\": 30528}",
         /* words, types, LN; 4 x (qkv, out, LN, gated, wo, LN); pooler */
         30528 * 512 + 2 * 512 + 1024 +
             4 * (3 * (512 * 512 + 512) + 512 * 512 + 512 + 1024 + 4096 * 512 + 2048 * 512 + 512 +
                  1024) +
             512 * 512 + 512},
    };
    for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) {
        model_config cfg;
        model m;
        vit_error err = {0};
        if (model_config_parse(models[i].json, models[i].name, &cfg, &err) != 0 ||
            model_layout(&m, &cfg, &err) != 0)
            fail_msg("%s: %s", models[i].name, err.msg);
        if (model_live_params(&m) != models[i].params)
            fail_msg("%s: %zu parameters, counted by hand %zu", models[i].name,
                     model_live_params(&m), models[i].params);
        model_free(&m);
    }
}

/* vit info names the class and the position scheme; vit embed (the folder's pipeline by
 * default) writes the reference's sentence embeddings. */
static void test_cli(void **state) {
    (void)state;
    REQUIRE_BIN();
    static const struct {
        const char *dir, *says[2];
    } infos[] = {
        {"tests/data/nomic-micro",
         {"architecture:   NomicBertModel (post-LN encoder)", "rotary positions"}},
        {"tests/data/jina-micro",
         {"architecture:   JinaBertModel (post-LN encoder)", "ALiBi positions"}},
    };
    for (int k = 0; k < 2; k++) {
        const char *info[] = {"info", "-m", infos[k].dir, NULL};
        test_run_result r = test_run_vit(NULL, NULL, info);
        assert_int_equal(r.status, 0);
        for (int i = 0; i < 2; i++)
            if (!strstr(r.out, infos[k].says[i]))
                fail_msg("vit info does not say '%s':\n%s", infos[k].says[i], r.out);
        test_run_free(&r);
    }
    for (int f = 0; f < NUM_FOLDERS; f += 2) {
        cases c;
        read_cases(folders[f].dir, &c);
        char out[4200];
        snprintf(out, sizeof out, "%s/embed.safetensors", test_tmpdir());
        const char *embed[] = {"embed",  "-m",       folders[f].dir, "--text", c.texts[0],
                               "--text", c.texts[5], "-o",           out,      NULL};
        test_run_result r = test_run_vit(NULL, NULL, embed);
        if (r.status != 0) fail_msg("vit embed exited %d: %s", r.status, r.err);
        test_run_free(&r);
        size_t n;
        const int D = f ? 48 : 32;
        float *got = test_read_tensor(out, "embeddings", &n);
        float *want = test_golden_tensor(folders[f].dir, "sentence", NULL);
        assert_int_equal(n, 2 * D);
        assert_true(worst_diff(got, want, (size_t)D, 0) <= TOL);
        assert_true(worst_diff(got + D, want + 5 * D, (size_t)D, 0) <= TOL);
        free(got), free(want);
        free_cases(&c);
    }
}

/* jina-rerank-micro (JinaBertForSequenceClassification, one label: jina-reranker-v1's class):
 * the pairs' ids and token types as tokenizer(a, b) gives them (cut to 40), their logits in one
 * padded batch and each alone against float64, and vit rerank's order and sigmoid scores. */
static void test_reranker(void **state) {
    (void)state;
    const char *dir = "tests/data/jina-rerank-micro";
    char path[4096];
    snprintf(path, sizeof path, "%s/golden.safetensors", dir);
    size_t size;
    uint8_t *bytes = read_whole_file(path, &size);
    uint64_t hn = 0;
    for (int i = 7; i >= 0; i--) hn = hn << 8 | bytes[i];
    cJSON *header = cJSON_ParseWithLength((const char *)bytes + 8, (size_t)hn);
    free(bytes);
    const cJSON *meta = cJSON_GetObjectItem(header, "__metadata__");
    cJSON *pairs = cJSON_Parse(cJSON_GetObjectItem(meta, "pairs")->valuestring);
    cJSON *ids = cJSON_Parse(cJSON_GetObjectItem(meta, "ids")->valuestring);
    const int n = cJSON_GetArraySize(pairs);
    assert_true(n <= 16);
    const char *a[16], *b[16];
    size_t al[16], bl[16];
    for (int i = 0; i < n; i++) {
        a[i] = cJSON_GetArrayItem(cJSON_GetArrayItem(pairs, i), 0)->valuestring;
        b[i] = cJSON_GetArrayItem(cJSON_GetArrayItem(pairs, i), 1)->valuestring;
        al[i] = strlen(a[i]), bl[i] = strlen(b[i]);
    }
    vit_error err = {0};
    vit_text_params p = vit_text_default_params();
    p.max_batch = 16;
    vit_text_context *ctx = vit_text_load(dir, &p, &err);
    if (!ctx) fail_msg("%s", err.msg);
    assert_int_equal(vit_text_num_labels(ctx), 1);
    float logits[16], one;
    const vit_text_pairs all = {a, b, al, bl};
    if (vit_text_forward_pairs(ctx, &all, n, logits, NULL, &err)) fail_msg("%s", err.msg);
    float *want = test_golden_tensor(dir, "logits", NULL);
    double worst = 0, alone = 0;
    for (int i = 0; i < n; i++) {
        int count;
        const int32_t *got_ids = vit_text_ids(ctx, i, &count);
        const cJSON *row = cJSON_GetArrayItem(ids, i);
        assert_int_equal(count, cJSON_GetArraySize(row));
        for (int t = 0; t < count; t++)
            assert_int_equal(got_ids[t], cJSON_GetArrayItem(row, t)->valueint);
        worst = fmax(worst, fabs((double)logits[i] - want[i]));
    }
    for (int i = 0; i < n; i++) {
        const vit_text_pairs just = {a + i, b + i, al + i, bl + i};
        assert_int_equal(vit_text_forward_pairs(ctx, &just, 1, &one, NULL, &err), 0);
        alone = fmax(alone, fabs((double)one - logits[i]));
    }
    print_message("%s: logits max |d| %.2g from float64, alone vs batch %.2g\n", dir, worst, alone);
    assert_true(worst <= TOL);
    assert_true(alone <= BATCH_TOL);
    /* vit rerank: pairs 0..5 are (text 0, text i); the best first, the logit's sigmoid */
    int best = 0;
    for (int i = 1; i < 6; i++) best = want[i] > want[best] ? i : best;
    const char *args[] = {"rerank", "-m", dir, "--json", "--", a[0], "-", NULL};
    char docs[2048] = "";
    for (int i = 0; i < 6; i++)
        if (*b[i]) snprintf(docs + strlen(docs), sizeof docs - strlen(docs), "%s\n", b[i]);
    const char *file = write_temp_file("docs.txt", docs, strlen(docs));
    if (*b[best]) {
        test_run_result r = test_run_vit(NULL, file, args);
        if (r.status != 0) fail_msg("vit rerank: %d: %s", r.status, r.err);
        cJSON *line = cJSON_Parse(r.out);
        assert_non_null(line);
        const cJSON *score = cJSON_GetObjectItem(line, "score");
        const cJSON *text = cJSON_GetObjectItem(line, "text");
        assert_non_null(score);
        assert_string_equal(text->valuestring, b[best]);
        assert_true(fabs(score->valuedouble - 1 / (1 + exp(-(double)want[best]))) <= TOL);
        cJSON_Delete(line);
        test_run_free(&r);
    }
    free(want);
    vit_text_free(ctx);
    cJSON_Delete(pairs), cJSON_Delete(ids), cJSON_Delete(header);
}

/* The folders' 8192 tokens: inference keeps no [B, H, T, T] attention weights where the fast
 * attention runs (a head of 16: here 16 x 12 x 8192² floats would be 51 GB, and vit embed's batch
 * of 16 failed "out of memory"); the general attention (a head of 8) still has them. */
static void test_long_context_scratch(void **state) {
    (void)state;
    encoder_shape s = {.layers = 1, .dim = 192, .heads = 12, .mlp_dim = 512, .act = ACT_SWIGLU};
    encoder_scratch sc;
    assert_int_equal(encoder_scratch_alloc(&sc, &s, 16, 8192), 0);
    assert_null(sc.set.probs);
    assert_non_null(sc.attn_scratch);
    encoder_scratch_free(&sc);
    s.dim = 96; /* heads of 8 */
    assert_int_equal(encoder_scratch_alloc(&sc, &s, 2, 64), 0);
    assert_non_null(sc.set.probs);
    encoder_scratch_free(&sc);
}

/* Training is refused in one line naming the class, before any data is read: the encoder's
 * backward has no rotary or ALiBi step (a gradient without them would be silently wrong; a
 * JinaBERT run crashed). text_acts_alloc for training says so too. */
static void test_train_refused(void **state) {
    (void)state;
    static const char *const dirs[] = {"tests/data/nomic-micro", "tests/data/nomic-geglu-micro",
                                       "tests/data/jina-micro"};
    for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++) {
        model m;
        vit_error err = {0};
        if (model_load(&m, dirs[i], &err) != 0) fail_msg("%s: %s", dirs[i], err.msg);
        text_acts a;
        assert_int_equal(text_acts_alloc(&a, &m, 2, 8, 1, &err), -1);
        if (!strstr(err.msg, "runs for inference only")) fail_msg("%s: %s", dirs[i], err.msg);
        model_free(&m);
    }
    REQUIRE_BIN();
    static const char rows[] = "anchor\tpositive\nthe cat sat\ta cat\nthe dog ran\ta dog\n";
    const char *data = write_temp_file("rows.tsv", rows, sizeof rows - 1);
    char out[4200];
    snprintf(out, sizeof out, "%s/refused", test_tmpdir());
    for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++)
        for (int mnrl = 0; mnrl < 2; mnrl++) {
            const char *train[] = {"train",   "--init",      dirs[i],
                                   "--train", data,          "--out",
                                   out,       "--overwrite", mnrl ? "--loss" : NULL,
                                   "mnrl",    NULL};
            test_run_result r = test_run_vit(NULL, NULL, train);
            const char *says = mnrl ? "vit trains BERT, RoBERTa" : "runs for inference only";
            const char *nl = strchr(r.err, '\n');
            if (r.status != 1 || !strstr(r.err, says) || !strstr(r.err, "Bert") || (nl && nl[1]))
                fail_msg("%s%s: exit %d, expected one line with '%s': %s", dirs[i],
                         mnrl ? " --loss mnrl" : "", r.status, says, r.err);
            test_run_free(&r);
        }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hidden_states), cmocka_unit_test(test_embeddings),
        cmocka_unit_test(test_refusals),      cmocka_unit_test(test_real_shapes),
        cmocka_unit_test(test_cli),           cmocka_unit_test(test_long_context_scratch),
        cmocka_unit_test(test_reranker),      cmocka_unit_test(test_train_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
