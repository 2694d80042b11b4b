/* Generation (vit/gen): greedy and beam search against tools/generate_reference.py, a float64
 * port of transformers' generate, on toy language models whose logits come from tables
 * (tests/data/generate-toy: logits = A[last token] + P[generated length] + C[batch item]); 78
 * configurations (greedy and 1..4 beams, length penalties 1, 0.5, 2, -1 and 0, early stopping
 * true/false/"never", n-gram bans of 2 and 3, min_length, min_new_tokens, max_new_tokens, two eos
 * ids, forced BOS/EOS, no eos, batches of 1..3 ending at different lengths). The reference checked
 * that every choice it made beat the runner-up by more than 1e-4, so float32 against float64
 * cannot flip one: the ids must be identical. Scores within 1e-4: the C sums and divides in
 * float32 as HF does, over at most 20 steps of log-probabilities below 30 in magnitude, which
 * keeps it within about 1e-5 of float64. Also: torch.topk's order of ties, a case worked by hand,
 * generation_config.json's reading, and the refusals. */
#include "tests/testutil.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vit/gen/generate.h"
#include "vit/gen/topk.h"

#define TOY_DIR   TEST_DATA "/generate-toy"
#define MAX_ROWS  64
#define SCORE_TOL 1e-4

/* ---- the toy model: the tests' own row bookkeeping, reordered by parent as a cache would ---- */

typedef struct {
    const float *a, *p, *c; /* [V, V], [positions, V], [items, V] */
    int vocab, positions, beams, batch, start;
    int next_step;
    int32_t last[MAX_ROWS];
    int len[MAX_ROWS];
} toy_model;

/* Checks the callback's contract, then reorders the rows' state by parent. */
static int toy_follow(toy_model *t, int step, const int *parent, const int32_t *tokens, int rows,
                      vit_error *err) {
    if (step != t->next_step++ || rows != t->batch * t->beams || (step == 0) != !parent)
        return vit_fail(err, "toy: step %d with %d rows (parent %s)", step, rows,
                        parent ? "set" : "NULL");
    int32_t last[MAX_ROWS];
    int len[MAX_ROWS];
    for (int r = 0; r < rows; r++) {
        if (step == 0 && tokens[r] != t->start) return vit_fail(err, "toy: step 0 not the start");
        if (parent && (parent[r] < 0 || parent[r] >= rows)) return vit_fail(err, "toy: parent");
        if (parent && parent[r] / t->beams != r / t->beams)
            return vit_fail(err, "toy: row %d continues another item's row %d", r, parent[r]);
        last[r] = tokens[r];
        len[r] = parent ? t->len[parent[r]] + 1 : 1;
    }
    memcpy(t->last, last, sizeof last);
    memcpy(t->len, len, sizeof len);
    return 0;
}

static int toy_logits(void *model, int step, const int *parent, const int32_t *tokens, int rows,
                      float *logits, vit_error *err) {
    toy_model *t = model;
    if (toy_follow(t, step, parent, tokens, rows, err) != 0) return -1;
    const int v = t->vocab;
    for (int r = 0; r < rows; r++) {
        const int pos = t->len[r] - 1 < t->positions - 1 ? t->len[r] - 1 : t->positions - 1;
        const float *a = t->a + (size_t)t->last[r] * v, *p = t->p + (size_t)pos * v,
                    *c = t->c + (size_t)(r / t->beams) * v;
        for (int i = 0; i < v; i++) logits[(size_t)r * v + i] = a[i] + p[i] + c[i];
    }
    return 0;
}

static cJSON *load_cases(void) {
    char *text = (char *)read_whole_file(TOY_DIR "/cases.json", NULL);
    assert_non_null(text);
    cJSON *doc = cJSON_Parse(text);
    free(text);
    assert_non_null(doc);
    return doc;
}

static float *table(int set, const char *name, size_t want) {
    char key[32];
    snprintf(key, sizeof key, "%d/%s", set, name);
    size_t n;
    float *t = test_read_tensor(TOY_DIR "/tables.safetensors", key, &n);
    if (!t || n != want) fail_msg("tables.safetensors: %s missing or of %zu values", key, n);
    return t;
}

/* The case's config as generation_config.json text through gen_config_read. */
static gen_config case_config(const cJSON *c) {
    char *text = cJSON_PrintUnformatted(cJSON_GetObjectItem(c, "config"));
    gen_config cfg = gen_config_default();
    vit_error err = {0};
    if (gen_config_read(text, "case config", &cfg, &err) != 0) fail_msg("%s", err.msg);
    free(text);
    return cfg;
}

static void expect_items(const char *name, const gen_sequence *got, const cJSON *items) {
    int b = 0;
    const cJSON *item;
    cJSON_ArrayForEach(item, items) {
        const cJSON *ids = cJSON_GetObjectItem(item, "ids");
        const double score = cJSON_GetObjectItem(item, "score")->valuedouble;
        int same = got[b].length == cJSON_GetArraySize(ids);
        for (int i = 0; same && i < got[b].length; i++)
            same = got[b].ids[i] == cJSON_GetArrayItem(ids, i)->valueint;
        if (!same) {
            char *want = cJSON_PrintUnformatted(ids);
            fail_msg("%s, item %d: %d ids differ from the reference's %s", name, b, got[b].length,
                     want);
        }
        if (fabs(got[b].score - score) > SCORE_TOL)
            fail_msg("%s, item %d: score %.7f, the reference's %.7f", name, b, got[b].score, score);
        b++;
    }
}

static void run_case(const cJSON *doc, const cJSON *c) {
    const char *name = cJSON_GetObjectItem(c, "name")->valuestring;
    const int vocab = cJSON_GetObjectItem(doc, "vocab")->valueint;
    const int positions = cJSON_GetObjectItem(doc, "positions")->valueint;
    const int items = cJSON_GetObjectItem(doc, "items")->valueint;
    const int set = cJSON_GetObjectItem(c, "tables")->valueint;
    const int batch = cJSON_GetObjectItem(c, "batch")->valueint;
    gen_config cfg = case_config(c);
    toy_model t = {.a = table(set, "A", (size_t)vocab * vocab),
                   .p = table(set, "P", (size_t)positions * vocab),
                   .c = table(set, "C", (size_t)items * vocab),
                   .vocab = vocab,
                   .positions = positions,
                   .beams = cfg.num_beams,
                   .batch = batch,
                   .start = cfg.decoder_start_token_id >= 0 ? cfg.decoder_start_token_id
                                                            : cfg.bos_token_id};
    gen_sequence out[3];
    vit_error err = {0};
    if (gen_run(&cfg, batch, vocab, toy_logits, &t, out, &err) != 0)
        fail_msg("%s: %s", name, err.msg);
    expect_items(name, out, cJSON_GetObjectItem(c, "items"));
    if (t.next_step != cJSON_GetObjectItem(c, "steps")->valueint) /* stopped when HF stops */
        fail_msg("%s: %d model calls, the reference makes %d", name, t.next_step,
                 cJSON_GetObjectItem(c, "steps")->valueint);
    gen_sequences_free(out, batch);
    free((void *)t.a), free((void *)t.p), free((void *)t.c);
}

static void test_reference_cases(void **state) {
    (void)state;
    cJSON *doc = load_cases();
    const cJSON *c;
    int n = 0;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(doc, "cases")) run_case(doc, c), n++;
    assert_true(n >= 70);
    cJSON_Delete(doc);
}

/* torch.topk's order of equal values, recorded by the reference from PyTorch itself. */
static void test_topk_ties(void **state) {
    (void)state;
    cJSON *doc = load_cases();
    const cJSON *c;
    int n = 0;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(doc, "topk_ties")) {
        const cJSON *values = cJSON_GetObjectItem(c, "values"), *want;
        const int count = cJSON_GetArraySize(values), k = cJSON_GetObjectItem(c, "k")->valueint;
        gen_pair *pairs = malloc((size_t)count * sizeof *pairs);
        assert_non_null(pairs);
        for (int i = 0; i < count; i++) {
            const cJSON *v = cJSON_GetArrayItem(values, i);
            pairs[i] = (gen_pair){cJSON_IsNumber(v) ? (float)v->valuedouble : -INFINITY, i};
        }
        gen_topk(pairs, count, k);
        int i = 0;
        cJSON_ArrayForEach(want, cJSON_GetObjectItem(c, "indices")) {
            if (pairs[i].index != want->valueint)
                fail_msg("topk case %d (n %d, k %d): position %d is index %d, torch's %d", n, count,
                         k, i, pairs[i].index, want->valueint);
            i++;
        }
        free(pairs);
        n++;
    }
    assert_true(n >= 10);
    cJSON_Delete(doc);
}

/* ---- a case worked by hand: vocabulary {0: "a", 1: eos}, start "a", two beams ----
 *
 * p(next) by sequence length: after [a] a 0.55 / eos 0.45; after [a a] a 0.2 / eos 0.8; after
 * [a a a] a 0.9 / eos 0.1. Beam search, step 1: candidates a (ln .55) and eos (ln .45, finished:
 * [a eos] scores ln .45 / 1 ** lp). Step 2 from [a a]: eos gives [a a eos], ln(.55 x .8) / 2 ** lp,
 * and a running [a a a] at ln(.55 x .2) = -2.207. With length_penalty 1: -0.4105 beats -0.7985;
 * the best running beam can reach -2.207 / 2 at best, below the worst finished (-0.7985): the
 * heuristic stops there, after 2 model calls, with [a a eos]. With length_penalty 0 the scores
 * are the plain sums, -0.7985 beats -0.821, and [a eos] wins, also after 2 calls. Greedy: a, eos,
 * score ln .55 + ln .8. */

static const double HAND_P[3][2] = {{0.55, 0.45}, {0.2, 0.8}, {0.9, 0.1}};

static int hand_logits(void *model, int step, const int *parent, const int32_t *tokens, int rows,
                       float *logits, vit_error *err) {
    (void)parent, (void)tokens;
    int *calls = model;
    if (step != (*calls)++ || step > 2) return vit_fail(err, "hand: step %d", step);
    for (int r = 0; r < rows; r++)
        for (int v = 0; v < 2; v++) logits[r * 2 + v] = (float)log(HAND_P[step][v]);
    return 0;
}

static void hand_run(gen_config cfg, int want_len, const int32_t *want, double want_score,
                     int want_calls) {
    gen_sequence out[1];
    vit_error err = {0};
    int calls = 0;
    if (gen_run(&cfg, 1, 2, hand_logits, &calls, out, &err) != 0) fail_msg("%s", err.msg);
    assert_int_equal(out[0].length, want_len);
    for (int i = 0; i < want_len; i++) assert_int_equal(out[0].ids[i], want[i]);
    assert_true(fabs(out[0].score - want_score) < 1e-6);
    assert_int_equal(calls, want_calls);
    gen_sequences_free(out, 1);
}

static void test_hand_case(void **state) {
    (void)state;
    gen_config cfg = gen_config_default();
    cfg.decoder_start_token_id = 0, cfg.eos_ids[0] = 1, cfg.num_eos = 1, cfg.max_new_tokens = 3;
    const int32_t a_a_eos[] = {0, 0, 1}, a_eos[] = {0, 1};
    hand_run(cfg, 3, a_a_eos, log(0.55) + log(0.8), 2); /* greedy */
    cfg.num_beams = 2;
    hand_run(cfg, 3, a_a_eos, (log(0.55) + log(0.8)) / 2, 2);
    cfg.length_penalty = 0.0;
    hand_run(cfg, 2, a_eos, log(0.45), 2);
    /* "never" with length_penalty 1: the running beam could reach -2.207 / 3 at max_length,
     * above -0.7985, so step 3 runs; [a a a] (-2.312 / 3) and [a a eos] (-4.510 / 3) do not beat
     * -0.4105 */
    cfg.length_penalty = 1.0, cfg.early_stopping = GEN_EARLY_NEVER;
    hand_run(cfg, 3, a_a_eos, (log(0.55) + log(0.8)) / 2, 3);
}

/* The default max_length 20 is 21 with the start token, as HF adds the prompt to its default;
 * max_new_tokens 19 gives 20. Without an eos id every row runs to the end. */
static void test_default_length(void **state) {
    (void)state;
    cJSON *doc = load_cases();
    const int vocab = cJSON_GetObjectItem(doc, "vocab")->valueint;
    const int positions = cJSON_GetObjectItem(doc, "positions")->valueint;
    toy_model t = {.a = table(0, "A", (size_t)vocab * vocab),
                   .p = table(0, "P", (size_t)positions * vocab),
                   .c = table(0, "C", 3 * vocab),
                   .vocab = vocab,
                   .positions = positions,
                   .beams = 1,
                   .batch = 2,
                   .start = 0};
    gen_config cfg = gen_config_default();
    cfg.decoder_start_token_id = 0;
    for (int beams = 1; beams <= 2; beams++) {
        for (int mnt = -1; mnt <= 19; mnt += 20) {
            cfg.num_beams = t.beams = beams, cfg.max_new_tokens = mnt, t.next_step = 0;
            gen_sequence out[2];
            vit_error err = {0};
            if (gen_run(&cfg, 2, vocab, toy_logits, &t, out, &err) != 0) fail_msg("%s", err.msg);
            assert_int_equal(out[0].length, mnt < 0 ? 21 : 20);
            assert_int_equal(out[1].length, mnt < 0 ? 21 : 20);
            gen_sequences_free(out, 2);
        }
    }
    free((void *)t.a), free((void *)t.p), free((void *)t.c);
    cJSON_Delete(doc);
}

/* ---- generation_config.json ---- */

static void test_config_read(void **state) {
    (void)state;
    gen_config d = gen_config_default();
    assert_int_equal(d.max_length, 20), assert_int_equal(d.max_new_tokens, -1);
    assert_int_equal(d.num_beams, 1), assert_true(d.length_penalty == 1.0);
    assert_int_equal(d.early_stopping, GEN_EARLY_HEURISTIC), assert_int_equal(d.num_eos, 0);
    assert_int_equal(d.decoder_start_token_id, -1), assert_int_equal(d.pad_token_id, -1);
    /* a TrOCR-like generation_config.json, with keys this layer ignores */
    const char *json = "{\"decoder_start_token_id\": 2, \"eos_token_id\": 2, \"pad_token_id\": 1,"
                       " \"bos_token_id\": 0, \"max_length\": 64, \"num_beams\": 4,"
                       " \"early_stopping\": \"never\", \"length_penalty\": 2.0,"
                       " \"no_repeat_ngram_size\": 3, \"temperature\": 0.7, \"top_k\": 5,"
                       " \"do_sample\": false, \"transformers_version\": \"4.57.0\","
                       " \"forced_eos_token_id\": [2], \"min_new_tokens\": 4}";
    vit_error err = {0};
    assert_int_equal(gen_config_read(json, "g.json", &d, &err), 0);
    assert_int_equal(d.decoder_start_token_id, 2), assert_int_equal(d.num_eos, 1);
    assert_int_equal(d.eos_ids[0], 2), assert_int_equal(d.pad_token_id, 1);
    assert_int_equal(d.max_length, 64), assert_int_equal(d.num_beams, 4);
    assert_int_equal(d.early_stopping, GEN_EARLY_NEVER), assert_true(d.length_penalty == 2.0);
    assert_int_equal(d.no_repeat_ngram_size, 3), assert_int_equal(d.forced_eos_token_id, 2);
    assert_int_equal(d.min_new_tokens, 4);
    /* a second file overlays: absent keys stay, null unsets an id, lists of eos ids */
    assert_int_equal(gen_config_read("{\"pad_token_id\": null, \"eos_token_id\": [2, 7],"
                                     " \"early_stopping\": true}",
                                     "g2.json", &d, &err),
                     0);
    assert_int_equal(d.pad_token_id, -1), assert_int_equal(d.num_eos, 2);
    assert_int_equal(d.eos_ids[1], 7), assert_int_equal(d.early_stopping, GEN_EARLY_TRUE);
    assert_int_equal(d.num_beams, 4);
}

static void expect_read_error(const char *json, const char *words) {
    gen_config cfg = gen_config_default(), before = cfg;
    vit_error err = {0};
    assert_int_equal(gen_config_read(json, "bad.json", &cfg, &err), -1);
    if (!strstr(err.msg, "bad.json") || !strstr(err.msg, words))
        fail_msg("%s: '%s' should name the file and say '%s'", json, err.msg, words);
    assert_memory_equal(&cfg, &before, sizeof cfg); /* left as it was */
}

static void test_config_errors(void **state) {
    (void)state;
    expect_read_error("{\"num_beams\": 4,", "not a valid JSON object");
    expect_read_error("[1, 2]", "not a valid JSON object");
    expect_read_error("{\"num_beams\": 0}", "num_beams");
    expect_read_error("{\"num_beams\": 65}", "num_beams");
    expect_read_error("{\"num_beams\": \"4\"}", "must be an integer");
    expect_read_error("{\"max_length\": 2.5}", "max_length");
    expect_read_error("{\"max_length\": 5000}", "outside");
    expect_read_error("{\"max_new_tokens\": 0}", "max_new_tokens");
    expect_read_error("{\"length_penalty\": \"1\"}", "length_penalty");
    expect_read_error("{\"early_stopping\": 1}", "early_stopping");
    expect_read_error("{\"early_stopping\": \"always\"}", "early_stopping");
    expect_read_error("{\"eos_token_id\": [1, 2, 3, 4, 5]}", "eos_token_id");
    expect_read_error("{\"eos_token_id\": []}", "eos_token_id");
    expect_read_error("{\"eos_token_id\": [1, -2]}", "eos_token_id");
    expect_read_error("{\"eos_token_id\": \"</s>\"}", "eos_token_id");
    expect_read_error("{\"pad_token_id\": -1}", "pad_token_id");
    expect_read_error("{\"forced_eos_token_id\": [1, 2]}", "forced_eos_token_id");
    expect_read_error("{\"num_beams\": 4, \"do_sample\": true}", "do_sample");
    expect_read_error("{\"num_beam_groups\": 2}", "num_beam_groups");
    expect_read_error("{\"repetition_penalty\": 0}", "repetition_penalty"); /* must be > 0 */
    expect_read_error("{\"guidance_scale\": 1.5}", "guidance_scale");
    expect_read_error("{\"bad_words_ids\": [[5]]}", "bad_words_ids");
    expect_read_error("{\"suppress_tokens\": [3]}", "suppress_tokens");
    /* inactive settings of those keys are fine */
    gen_config cfg = gen_config_default();
    vit_error err = {0};
    assert_int_equal(gen_config_read("{\"do_sample\": false, \"repetition_penalty\": 1.0,"
                                     " \"num_beam_groups\": 1, \"bad_words_ids\": null,"
                                     " \"suppress_tokens\": []}",
                                     "ok.json", &cfg, &err),
                     0);
}

/* ---- gen_run's refusals ---- */

static int never_called(void *model, int step, const int *parent, const int32_t *tokens, int rows,
                        float *logits, vit_error *err) {
    (void)model, (void)step, (void)parent, (void)tokens, (void)rows, (void)logits;
    return vit_fail(err, "the model was called");
}

static void expect_run_error(gen_config cfg, int batch, int vocab, const char *words) {
    gen_sequence out[2] = {{(int32_t *)1, 5, 1.0f}, {(int32_t *)1, 5, 1.0f}};
    vit_error err = {0};
    assert_int_equal(gen_run(&cfg, batch, vocab, never_called, NULL, out, &err), -1);
    if (!strstr(err.msg, words)) fail_msg("'%s' should say '%s'", err.msg, words);
}

static int fail_at_step_2(void *model, int step, const int *parent, const int32_t *tokens, int rows,
                          float *logits, vit_error *err) {
    (void)model, (void)parent, (void)tokens;
    if (step == 2) return vit_fail(err, "decoder: out of cache");
    for (int i = 0; i < rows * 4; i++) logits[i] = (float)(i % 4);
    return 0;
}

static void test_run_errors(void **state) {
    (void)state;
    gen_config cfg = gen_config_default();
    cfg.decoder_start_token_id = 0, cfg.eos_ids[0] = 3, cfg.num_eos = 1;
    gen_config c = cfg;
    c.num_beams = 0;
    expect_run_error(c, 1, 10, "num_beams 0");
    c = cfg, c.num_beams = 65;
    expect_run_error(c, 1, 10, "num_beams 65");
    c = cfg, c.decoder_start_token_id = -1;
    expect_run_error(c, 1, 10, "decoder_start_token_id or bos_token_id");
    c = cfg, c.eos_ids[0] = 10;
    expect_run_error(c, 1, 10, "eos_token_id 10");
    c = cfg, c.forced_bos_token_id = 12;
    expect_run_error(c, 1, 10, "forced_bos_token_id 12");
    c = cfg, c.max_new_tokens = 0;
    expect_run_error(c, 1, 10, "max_new_tokens");
    c = cfg, c.max_length = 1;
    expect_run_error(c, 1, 10, "max_length 1");
    c = cfg, c.max_length = GEN_MAX_LENGTH + 1;
    expect_run_error(c, 1, 10, "max_length");
    c = cfg, c.num_beams = 2;
    expect_run_error(c, 1, 1, "at least 2 tokens");
    expect_run_error(cfg, 0, 10, "batch 0");
    c = cfg, c.length_penalty = NAN;
    expect_run_error(c, 1, 10, "length_penalty");
    /* the model's error comes back, nothing is left allocated, out is cleared */
    for (int beams = 1; beams <= 2; beams++) {
        gen_sequence out[2];
        vit_error err = {0};
        c = cfg, c.num_beams = beams, c.eos_ids[0] = 0;
        assert_int_equal(gen_run(&c, 2, 4, fail_at_step_2, NULL, out, &err), -1);
        assert_string_equal(err.msg, "decoder: out of cache");
        assert_null(out[0].ids), assert_null(out[1].ids);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reference_cases), cmocka_unit_test(test_topk_ties),
        cmocka_unit_test(test_hand_case),       cmocka_unit_test(test_default_length),
        cmocka_unit_test(test_config_read),     cmocka_unit_test(test_config_errors),
        cmocka_unit_test(test_run_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
