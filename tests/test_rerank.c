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
#include <sys/stat.h>
#include <unistd.h>

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

/* ---- vit rerank ---- */

/* The reference's first pairs are (query, text i) for every text, the query text 0 itself. */
static int query_pairs(const pair_cases *c) {
    int n = 0;
    while (n < c->n && strcmp(c->a[n], c->a[0]) == 0 && (n == 0 || strcmp(c->b[n], c->a[0]) != 0))
        n++;
    return n;
}

/* vit rerank's lines: SCORE \t INDEX \t DOCUMENT, into scores and order; returns their number */
static int read_ranked(const char *out, float *scores, int *order, int cap) {
    int n = 0;
    for (const char *line = out; *line && n < cap; n++) {
        char *end;
        scores[n] = strtof(line, &end);
        assert_true(*end == '\t');
        order[n] = (int)strtol(end + 1, &end, 10);
        assert_true(*end == '\t');
        const char *next = strchr(end, '\n');
        assert_non_null(next);
        line = next + 1;
    }
    return n;
}

static double sigmoid(double x) {
    return 1.0 / (1.0 + exp(-x));
}

/* Runs vit rerank -m dir QUERY --doc each document [extra...]; fails on a non-zero exit. */
static test_run_result rerank_docs(const char *dir, const pair_cases *c, int n, const char *extra1,
                                   const char *extra2) {
    const char *args[2 * MAX_PAIRS + 8];
    int k = 0;
    args[k++] = "rerank", args[k++] = "-m", args[k++] = dir;
    if (extra1) args[k++] = extra1;
    if (extra2) args[k++] = extra2;
    args[k++] = c->a[0];
    for (int i = 0; i < n; i++) args[k++] = "--doc", args[k++] = c->b[i];
    args[k] = NULL;
    test_run_result r = test_run_vit(NULL, NULL, args);
    if (r.status != 0) fail_msg("vit rerank: status %d: %s", r.status, r.err);
    return r;
}

/* Sorted best first, each score sigmoid(the float64 logit) of its document (CrossEncoder's
 * default for one label), every document once; --raw the logits, --top-n the first N. */
static void test_rerank_cli(void **state) {
    (void)state;
    REQUIRE_BIN();
    for (size_t f = 0; f < sizeof pair_folders / sizeof *pair_folders; f++) {
        pair_cases c;
        read_pairs(pair_folders[f], &c);
        const int n = query_pairs(&c);
        assert_true(n >= 5);
        for (int raw = 0; raw < 2; raw++) {
            test_run_result r = rerank_docs(pair_folders[f], &c, n, raw ? "--raw" : NULL, NULL);
            float got[MAX_PAIRS];
            int order[MAX_PAIRS], seen[MAX_PAIRS] = {0};
            assert_int_equal(read_ranked(r.out, got, order, MAX_PAIRS), n);
            for (int k = 0; k < n; k++) {
                assert_true(order[k] >= 0 && order[k] < n && !seen[order[k]]);
                seen[order[k]] = 1;
                const double want = raw ? c.logits[order[k]] : sigmoid(c.logits[order[k]]);
                if (fabs(got[k] - want) > TOL)
                    fail_msg("%s: document %d: %g, expected %g", pair_folders[f], order[k], got[k],
                             want);
                /* the reference's order, where its scores are further apart than the tolerance */
                if (k > 0) assert_true(got[k] <= got[k - 1]);
                if (k > 0) assert_true(c.logits[order[k]] <= c.logits[order[k - 1]] + 2 * TOL);
            }
            test_run_free(&r);
        }
        test_run_result r = rerank_docs(pair_folders[f], &c, n, "--top-n", "2");
        float got[MAX_PAIRS];
        int order[MAX_PAIRS];
        assert_int_equal(read_ranked(r.out, got, order, MAX_PAIRS), 2);
        test_run_free(&r);
        free_pairs(&c);
    }
}

/* --json: corpus_id, score and text as CrossEncoder.rank(return_documents=True) names them. */
static void test_rerank_json(void **state) {
    (void)state;
    REQUIRE_BIN();
    pair_cases c;
    read_pairs(pair_folders[0], &c);
    const int n = query_pairs(&c);
    test_run_result r = rerank_docs(pair_folders[0], &c, n, "--json", NULL);
    const char *line = r.out;
    for (int k = 0; k < n; k++) {
        const char *end = strchr(line, '\n');
        assert_non_null(end);
        cJSON *o = cJSON_ParseWithLength(line, (size_t)(end - line));
        assert_non_null(o);
        const int i = cJSON_GetObjectItem(o, "corpus_id")->valueint;
        assert_true(fabs(cJSON_GetObjectItem(o, "score")->valuedouble - sigmoid(c.logits[i])) <
                    TOL);
        assert_string_equal(cJSON_GetObjectItem(o, "text")->valuestring, c.b[i]);
        cJSON_Delete(o);
        line = end + 1;
    }
    assert_string_equal(line, "");
    test_run_free(&r);
    free_pairs(&c);
}

/* config.json's sentence_transformers.activation_fn: Identity gives the logits. */
static void test_rerank_activation_fn(void **state) {
    (void)state;
    REQUIRE_BIN();
    char dir[600], path[700];
    snprintf(dir, sizeof dir, "%s/identity", test_tmpdir());
    mkdir(dir, 0700);
    static const char *const links[] = {"model.safetensors", "vocab.txt", "tokenizer_config.json"};
    for (size_t i = 0; i < 3; i++) {
        char target[700];
        snprintf(target, sizeof target, "%s/%s/%s", getcwd(path, 300), pair_folders[0], links[i]);
        snprintf(path, sizeof path, "%s/%s", dir, links[i]);
        assert_int_equal(symlink(target, path), 0);
    }
    snprintf(path, sizeof path, "%s/config.json", pair_folders[0]);
    cJSON *cfg = cJSON_Parse((char *)read_whole_file(path, NULL));
    cJSON *st = cJSON_AddObjectToObject(cfg, "sentence_transformers");
    cJSON_AddStringToObject(st, "activation_fn", "torch.nn.modules.linear.Identity");
    char *text = cJSON_Print(cfg);
    write_temp_file("identity/config.json", text, strlen(text));
    pair_cases c;
    read_pairs(pair_folders[0], &c);
    test_run_result r = rerank_docs(dir, &c, 3, NULL, NULL);
    float got[MAX_PAIRS];
    int order[MAX_PAIRS];
    assert_int_equal(read_ranked(r.out, got, order, MAX_PAIRS), 3);
    for (int k = 0; k < 3; k++) assert_true(fabs(got[k] - c.logits[order[k]]) < TOL);
    test_run_free(&r);
    cJSON_ReplaceItemInObject(st, "activation_fn", cJSON_CreateString("my.module.Softplus"));
    free(text), text = cJSON_Print(cfg);
    write_temp_file("identity/config.json", text, strlen(text));
    const char *args[] = {"rerank", "-m", dir, "q", "--doc", "x", NULL};
    r = test_run_vit(NULL, NULL, args);
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.err, "activation_fn my.module.Softplus is not one vit follows"));
    test_run_free(&r);
    free(text);
    cJSON_Delete(cfg);
    free_pairs(&c);
}

/* One line and a non-zero exit for what is not a reranking. */
static void test_rerank_refusals(void **state) {
    (void)state;
    REQUIRE_BIN();
    static const struct {
        const char *args[10];
        int status;
        const char *says;
    } cases[] = {
        {{"rerank", "-m", "tests/data/roberta-seq-micro", "q", "--doc", "x", NULL},
         1,
         "RobertaForSequenceClassification is not a cross-encoder"},
        {{"rerank", "-m", "tests/data/roberta-model-micro", "q", "--doc", "x", NULL},
         1,
         "RobertaModel is not a cross-encoder"},
        {{"rerank", "-m", "tests/data/bert-pair-micro", "q", NULL}, 2, "no documents"},
        {{"rerank", "-m", "tests/data/bert-pair-micro", NULL}, 2, "no QUERY"},
        {{"rerank", "-m", "tests/data/bert-pair-micro", "q", "/nonexistent/docs", NULL},
         1,
         "/nonexistent/docs: No such file"},
        {{"rerank", "-m", "tests/data/bert-pair-micro", "--top-n", "0", "q", "--doc", "x", NULL},
         2,
         "top-n"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        test_run_result r = test_run_vit(NULL, NULL, cases[i].args);
        if (r.status != cases[i].status || !strstr(r.err, cases[i].says))
            fail_msg("case %zu: status %d, stderr '%s'", i, r.status, r.err);
        assert_non_null(strchr(r.err, '\n'));
        assert_true(strchr(r.err, '\n')[1] == 0); /* one line */
        test_run_free(&r);
    }
}

/* vit text --pair on A<TAB>B lines: each pair's logits are the float64 reference's, in order; a
 * line without a tab is reported and skipped (exit 1), an odd count of arguments refused. */
static void test_text_pair_cli(void **state) {
    (void)state;
    REQUIRE_BIN();
    for (size_t f = 0; f < sizeof pair_folders / sizeof *pair_folders; f++) {
        pair_cases c;
        read_pairs(pair_folders[f], &c);
        char name[64], *tsv = NULL;
        size_t size = 0;
        FILE *m = open_memstream(&tsv, &size);
        int rows[MAX_PAIRS], nrows = 0; /* the pairs a TSV line holds: no tab or newline */
        for (int i = 0; i < c.n; i++)
            if (!strpbrk(c.a[i], "\t\n\r") && !strpbrk(c.b[i], "\t\n\r")) {
                fprintf(m, "%s\t%s\n", c.a[i], c.b[i]);
                rows[nrows++] = i;
            }
        assert_true(nrows >= c.n - 3);
        fputs("no tab\n", m);
        fclose(m);
        snprintf(name, sizeof name, "pairs-%zu.tsv", f);
        const char *path = write_temp_file(name, tsv, size);
        const char *const args[] = {"text", "--pair", "--json", "--logits", "-m", pair_folders[f],
                                    "-b",   "5",      "-f",     path,       NULL};
        test_run_result r = test_run_vit(NULL, NULL, args);
        assert_int_equal(r.status, 1);
        char says[128];
        snprintf(says, sizeof says, ":%d: no tab between the pair's two texts", nrows + 1);
        if (!strstr(r.err, says)) fail_msg("stderr '%s' does not say '%s'", r.err, says);
        const char *line = r.out;
        for (int k = 0; k < nrows; k++) {
            const int i = rows[k];
            const char *end = strchr(line, '\n');
            assert_non_null(end);
            cJSON *o = cJSON_ParseWithLength(line, (size_t)(end - line));
            assert_string_equal(cJSON_GetObjectItem(o, "text")->valuestring, c.a[i]);
            assert_string_equal(cJSON_GetObjectItem(o, "text_pair")->valuestring, c.b[i]);
            const double got = cJSON_GetArrayItem(cJSON_GetObjectItem(o, "logits"), 0)->valuedouble;
            if (fabs(got - c.logits[i]) > TOL)
                fail_msg("%s pair %d: %g, expected %g", pair_folders[f], i, got, c.logits[i]);
            cJSON_Delete(o);
            line = end + 1;
        }
        assert_string_equal(line, "");
        test_run_free(&r);
        free(tsv);
        free_pairs(&c);
    }
    const char *odd[] = {"text", "--pair", "-m", pair_folders[0], "a", "b", "c", NULL};
    test_run_result r = test_run_vit(NULL, NULL, odd);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "--pair takes TEXT arguments two at a time (3 given)"));
    test_run_free(&r);
}

/* vit eval --pair on a{TAB}b{TAB}label lines: bert-nli-micro's pairs labelled with the float64
 * argmax, three of them with another class, give (n - 3) / n; a line of one tab is skipped. */
static void test_eval_pairs(void **state) {
    (void)state;
    REQUIRE_BIN();
    static const char *const nli[] = {"contradiction", "entailment", "neutral"};
    const char *dir = "tests/data/bert-nli-micro";
    pair_cases c;
    read_pairs(dir, &c);
    char *tsv = NULL;
    size_t size = 0;
    FILE *m = open_memstream(&tsv, &size);
    fputs("premise\thypothesis\tlabel\n", m);
    for (int i = 0; i < c.n; i++) {
        int best = 0;
        for (int k = 1; k < 3; k++) best = c.logits[3 * i + k] > c.logits[3 * i + best] ? k : best;
        if (i % 4 == 1) best = (best + 1) % 3; /* pairs 1, 5, 9: wrong */
        fprintf(m, "%s\t%s\t%s\n", c.a[i], c.b[i], i % 2 ? nli[best] : (char[]){'0' + best, 0});
    }
    fputs("one tab\tentailment\n", m);
    fclose(m);
    const char *path = write_temp_file("nli.tsv", tsv, size);
    const char *args[] = {"eval", "--pair", "-m", dir, "-b", "4", path, NULL};
    test_run_result r = test_run_vit(NULL, NULL, args);
    if (r.status != 0) fail_msg("vit eval --pair: %d: %s", r.status, r.err);
    char want[128];
    snprintf(want, sizeof want, "top-1:     %.4f (%d/%d)", (double)(c.n - 3) / c.n, c.n - 3, c.n);
    if (!strstr(r.out, want)) fail_msg("no '%s' in:\n%s", want, r.out);
    snprintf(want, sizeof want, ":%d (data line %d): one tab (expected text<TAB>text<TAB>label)",
             c.n + 2, c.n + 1);
    if (!strstr(r.out, want)) fail_msg("no '%s' in:\n%s", want, r.out);
    test_run_free(&r);
    const char *folder[] = {"eval", "--pair", "-m", dir, "tests/data", NULL};
    r = test_run_vit(NULL, NULL, folder);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "--pair is for a FILE.tsv of pairs"));
    test_run_free(&r);
    free(tsv);
    free_pairs(&c);
}

/* README's example, as README shows its output. */
static void test_readme_rerank(void **state) {
    (void)state;
    REQUIRE_BIN();
    const char *args[] = {"rerank",
                          "-m",
                          "tests/data/bert-pair-micro",
                          "the cat sat on the mat",
                          "--doc",
                          "the dog",
                          "--doc",
                          "it was very good",
                          "--doc",
                          "the cat sat on the mat",
                          NULL};
    test_run_result r = test_run_vit(NULL, NULL, args);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.out, "0.565852\t2\tthe cat sat on the mat\n"
                               "0.503174\t0\tthe dog\n"
                               "0.382485\t1\tit was very good\n");
    test_run_free(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pair_ids_and_types), cmocka_unit_test(test_cross_encoder_logits),
        cmocka_unit_test(test_pair_refusals),      cmocka_unit_test(test_rerank_cli),
        cmocka_unit_test(test_rerank_json),        cmocka_unit_test(test_rerank_activation_fn),
        cmocka_unit_test(test_rerank_refusals),    cmocka_unit_test(test_readme_rerank),
        cmocka_unit_test(test_text_pair_cli),      cmocka_unit_test(test_eval_pairs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
