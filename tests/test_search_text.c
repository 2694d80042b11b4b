/* `vit search -m TEXT_MODEL QUERY... FILE` end to end: the ranking against the documents' and
 * queries' rows from `vit embed` (with the prompts encode_document and encode_query choose) and
 * the folder's similarity function (similarity_fn_name: cosine, dot, euclidean, manhattan)
 * computed here in float64, ranked as sentence-transformers' util.semantic_search does (top_k =
 * min(k, documents), best first; equal scores, which it leaves to torch.topk, here in the file's
 * order); a TSV column; the cache (a second run encodes nothing, an added line
 * is the only one encoded, a repeated line once, the results those of a run without cache); the
 * errors. Runs the binary named by $VIT_BIN. */
#include "tests/testutil.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* its prompts: query "my old ", passage "the "; default_prompt_name query */
#define PROMPTED "tests/data/st-prompt-micro"
#define PLAIN    "tests/data/st-mean-micro" /* no prompts */

#define DOCS 7
static const char *const docs[DOCS] = {
    "the cat sat on the mat",    "a dog ran", "birds fly south in winter", "a dog ran",
    "stock prices fell sharply", "the cat",   "rain is expected tomorrow"};
static const char *const queries[2] = {"a small cat", "weather forecast"};

static const char *tmp(const char *name) {
    static char paths[16][4200];
    static int next;
    char *p = paths[next++ % 16];
    snprintf(p, sizeof paths[0], "%s/%s", test_tmpdir(), name);
    return p;
}

/* The documents, one a line, with a blank line after the second (left out: it is no document). */
static const char *write_docs(const char *name, int extra) {
    char text[1024] = "";
    for (int i = 0; i < DOCS; i++) {
        strcat(text, docs[i]);
        strcat(text, i == 1 ? "\n\n" : "\n");
    }
    if (extra) strcat(text, "an added line about cats\n");
    return write_temp_file(name, text, strlen(text));
}

/* vit embed's rows of ARGS into [*n, dim]. */
static float *embed(const char *const *args, const char *out, size_t *n, int *dim) {
    const char *argv[16] = {"embed"};
    int k = 1;
    while (*args) argv[k++] = *args++;
    argv[k++] = "-o", argv[k++] = out, argv[k] = NULL;
    test_run_result r = test_run_vit(NULL, NULL, argv);
    if (r.status != 0) fail_msg("vit embed: %s", r.err);
    test_run_free(&r);
    size_t numel;
    float *rows = test_read_tensor(out, "embeddings", &numel);
    assert_non_null(rows);
    char list[4200];
    snprintf(list, sizeof list, "%.*s.txt", (int)(strrchr(out, '.') - out), out);
    char *names = (char *)read_whole_file(list, NULL);
    *n = 0;
    for (char *c = names; *c; c++) *n += *c == '\n';
    free(names);
    *dim = (int)(numel / *n);
    return rows;
}

typedef struct {
    int rank, corpus_id, line;
    double score;
    char text[256];
} result;

/* The results of query q (the q-th JSON line of out); their number. */
static int json_results(const char *out, int q, result *r, int cap) {
    const char *line = out;
    for (int i = 0; i < q; i++) line = strchr(line, '\n') + 1;
    const char *end = strchr(line, '\n');
    cJSON *doc = cJSON_ParseWithLength(line, end ? (size_t)(end - line) : strlen(line));
    assert_non_null(doc);
    assert_string_equal(cJSON_GetObjectItem(doc, "query")->valuestring, queries[q]);
    const cJSON *item;
    int n = 0;
    cJSON_ArrayForEach(item, cJSON_GetObjectItem(doc, "results")) {
        assert_true(n < cap);
        r[n].rank = cJSON_GetObjectItem(item, "rank")->valueint;
        r[n].score = cJSON_GetObjectItem(item, "score")->valuedouble;
        r[n].corpus_id = cJSON_GetObjectItem(item, "corpus_id")->valueint;
        r[n].line = cJSON_GetObjectItem(item, "line")->valueint;
        snprintf(r[n].text, sizeof r[n].text, "%s", cJSON_GetObjectItem(item, "text")->valuestring);
        n++;
    }
    cJSON_Delete(doc);
    return n;
}

static test_run_result search(const char *model, const char *file, const char *const *extra) {
    const char *argv[24] = {"search", "-m", model, "--json"};
    int k = 4;
    while (extra && *extra) argv[k++] = *extra++;
    argv[k++] = queries[0], argv[k++] = queries[1], argv[k++] = file, argv[k] = NULL;
    return test_run_vit(NULL, NULL, argv);
}

/* SentenceTransformer.similarity of two rows, by its similarity_fn_name, in float64: cos_sim
 * (each norm at least 1e-12), dot_score, and euclidean_sim and manhattan_sim, the negative
 * distances (-torch.cdist with p 2 and 1). *scale: the size of the terms summed (the rows' norms'
 * product, or their norms' sum), which the floats' rounding in the rows is relative to. */
static double similarity(const char *fn, const float *a, const float *b, int dim, double *scale) {
    double dot = 0, an = 0, bn = 0, l2 = 0, l1 = 0, a1 = 0, b1 = 0;
    for (int d = 0; d < dim; d++) {
        const double x = a[d], y = b[d];
        dot += x * y, an += x * x, bn += y * y;
        l2 += (x - y) * (x - y), l1 += fabs(x - y);
        a1 += fabs(x), b1 += fabs(y);
    }
    an = sqrt(an), bn = sqrt(bn);
    if (strcmp(fn, "dot") == 0) return *scale = an * bn, dot;
    if (strcmp(fn, "euclidean") == 0) return *scale = an + bn, -sqrt(l2);
    if (strcmp(fn, "manhattan") == 0) return *scale = a1 + b1, -l1;
    assert_string_equal(fn, "cosine");
    *scale = 1;
    return dot / (fmax(an, 1e-12) * fmax(bn, 1e-12));
}

/* The expected ranking of query q: util.semantic_search's of the rows with similarity fn, best
 * first, equal scores in the documents' order; the first k (0: all). */
static void expect_ranking(const char *out, int q, const float *qrow, const float *drows, int dim,
                           int k, const char *fn) {
    double score[DOCS], scale[DOCS];
    int order[DOCS];
    for (int i = 0; i < DOCS; i++) {
        score[i] = similarity(fn, qrow, drows + i * dim, dim, &scale[i]);
        order[i] = i;
    }
    for (int i = 1; i < DOCS; i++) /* a stable insertion sort: ties keep the documents' order */
        for (int j = i; j > 0 && score[order[j]] > score[order[j - 1]] + 1e-6; j--) {
            const int t = order[j];
            order[j] = order[j - 1], order[j - 1] = t;
        }
    const int want = k > 0 && k < DOCS ? k : DOCS;
    result got[DOCS + 1];
    assert_int_equal(json_results(out, q, got, DOCS + 1), want);
    for (int i = 0; i < want; i++) {
        const int d = order[i];
        assert_int_equal(got[i].rank, i + 1);
        assert_int_equal(got[i].corpus_id, d);
        assert_int_equal(got[i].line, d < 2 ? d + 1 : d + 2); /* the blank line after the 2nd */
        assert_string_equal(got[i].text, docs[d]);
        assert_float_equal(got[i].score, score[d], 1e-6 * fmax(1, scale[d]));
    }
    assert_true(score[order[0]] > score[order[DOCS - 1]] + 1e-3); /* a ranking, not a constant */
}

/* The prompted folder: documents take "passage" (no "document"), queries "query"; the rows are
 * vit embed's with those prompts. Then -k 3, -k 0 and a k past the corpus, and the text form. */
static void check_ranking(const char *model, const char *doc_prompt, const char *query_prompt,
                          const char *fn) {
    const char *file = write_docs("docs.txt", 0);
    size_t n;
    int dim, qdim;
    const char *doc_args[8] = {"-m", model, file},
               *query_args[10] = {"-m", model, "--text", queries[0], "--text", queries[1]};
    if (doc_prompt) doc_args[3] = "--prompt", doc_args[4] = doc_prompt;
    if (query_prompt) query_args[6] = "--prompt", query_args[7] = query_prompt;
    float *drows = embed(doc_args, tmp("doc-rows.safetensors"), &n, &dim);
    assert_int_equal(n, DOCS);
    float *qrows = embed(query_args, tmp("query-rows.safetensors"), &n, &qdim);
    assert_int_equal(n, 2);
    assert_int_equal(qdim, dim);
    const char *no_cache[] = {"--no-cache", NULL};
    test_run_result r = search(model, file, no_cache);
    if (r.status != 0) fail_msg("vit search: %s", r.err);
    for (int q = 0; q < 2; q++) expect_ranking(r.out, q, qrows + q * dim, drows, dim, 10, fn);
    /* the repeated line scores as its first, and follows it */
    result got[DOCS + 1];
    json_results(r.out, 0, got, DOCS + 1);
    for (int i = 0; i < DOCS; i++)
        if (got[i].corpus_id == 1) {
            assert_int_equal(got[i + 1].corpus_id, 3);
            assert_true(got[i + 1].score == got[i].score);
        }
    test_run_free(&r);
    const char *top[][3] = {
        {"-k", "3", "--no-cache"}, {"-k", "0", "--no-cache"}, {"-k", "100", "--no-cache"}};
    const int ks[] = {3, 0, 100};
    for (int t = 0; t < 3; t++) {
        const char *extra[] = {top[t][0], top[t][1], top[t][2], NULL};
        r = search(model, file, extra);
        assert_int_equal(r.status, 0);
        for (int q = 0; q < 2; q++)
            expect_ranking(r.out, q, qrows + q * dim, drows, dim, ks[t], fn);
        test_run_free(&r);
    }
    free(drows);
    free(qrows);
}

static void test_ranking_is_embed_cosines(void **state) {
    (void)state;
    REQUIRE_BIN();
    check_ranking(PROMPTED, "passage", "query", "cosine");
    check_ranking(PLAIN, NULL, NULL, "cosine");
}

/* tests/data/st-multi-micro (a Dense without Normalize: rows of norm ~40, so each function ranks
 * its own way) with config_sentence_transformers.json naming similarity_fn_name fn; "-" leaves
 * the key out. */
static const char *with_similarity(const char *fn) {
    static char dirs[8][4096];
    static int next;
    char *dir = dirs[next++ % 8], cwd[4096], from[8300], to[8300];
    assert_non_null(getcwd(cwd, sizeof cwd));
    snprintf(dir, sizeof dirs[0], "%s/sim-%s", test_tmpdir(), fn);
    assert_int_equal(mkdir(dir, 0755), 0);
    const char *files[] = {
        "config.json",  "model.safetensors", "vocab.txt", "tokenizer_config.json",
        "modules.json", "1_Pooling",         "2_Dense",   "sentence_bert_config.json"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        snprintf(from, sizeof from, "%s/tests/data/st-multi-micro/%s", cwd, files[i]);
        snprintf(to, sizeof to, "%s/%s", dir, files[i]);
        assert_int_equal(symlink(from, to), 0);
    }
    char json[256], name[300];
    if (strcmp(fn, "-") == 0)
        snprintf(json, sizeof json, "{\"prompts\": {}, \"default_prompt_name\": null}");
    else
        snprintf(json, sizeof json, "{\"prompts\": {}, \"similarity_fn_name\": \"%s\"}", fn);
    snprintf(name, sizeof name, "sim-%s/config_sentence_transformers.json", fn);
    write_temp_file(name, json, strlen(json));
    return dir;
}

/* The folder's similarity_fn_name scores: each of SentenceTransformer.similarity's four against
 * its float64 computation from vit embed's rows (cosine also when the key is absent); vit info
 * names it. The four rank these documents differently (checked: not one order for all). */
static void test_similarity_functions(void **state) {
    (void)state;
    REQUIRE_BIN();
    const char *fns[] = {"cosine", "dot", "euclidean", "manhattan", "-"};
    char orders[5][64];
    for (int f = 0; f < 5; f++) {
        const char *dir = with_similarity(fns[f]);
        check_ranking(dir, NULL, NULL, f == 4 ? "cosine" : fns[f]);
        test_run_result info =
            test_run_vit(NULL, NULL, (const char *const[]){"info", "-m", dir, NULL});
        char says[64];
        snprintf(says, sizeof says, "; similarity %s;", f == 4 ? "cosine" : fns[f]);
        if (info.status != 0 || !strstr(info.out, says))
            fail_msg("vit info -m %s: no '%s' in: %s", dir, says, info.out);
        test_run_free(&info);
        test_run_result r =
            search(dir, write_docs("docs-sim.txt", 0), (const char *const[]){"--no-cache", NULL});
        result got[DOCS + 1];
        assert_int_equal(json_results(r.out, 0, got, DOCS + 1), DOCS);
        for (int i = 0; i < DOCS; i++) orders[f][i] = (char)('0' + got[i].corpus_id);
        orders[f][DOCS] = 0;
        print_message("  %-9s %s\n", fns[f], orders[f]);
        test_run_free(&r);
    }
    assert_string_equal(orders[4], orders[0]);
    assert_string_not_equal(orders[1], orders[0]);
    assert_true(strcmp(orders[2], orders[0]) != 0 || strcmp(orders[3], orders[0]) != 0);
    /* a name SentenceTransformer does not know is refused when the folder loads */
    const char *bad = with_similarity("cos");
    test_run_result r = search(bad, write_docs("docs-bad.txt", 0), NULL);
    assert_int_equal(r.status, 1);
    if (!strstr(r.err, "config_sentence_transformers.json: similarity_fn_name 'cos' is not "
                       "\"cosine\", \"dot\", \"euclidean\" or \"manhattan\""))
        fail_msg("%s", r.err);
    assert_int_equal((int)(strchr(r.err, '\n') - r.err), (int)strlen(r.err) - 1);
    test_run_free(&r);
}

/* The text form: the query, then rank, score, line and text per document, as the JSON's. */
static void test_text_output(void **state) {
    (void)state;
    REQUIRE_BIN();
    const char *file = write_docs("docs-text.txt", 0);
    test_run_result j =
        search(PROMPTED, file, (const char *const[]){"--no-cache", "-k", "2", NULL});
    assert_int_equal(j.status, 0);
    result want[3];
    assert_int_equal(json_results(j.out, 1, want, 3), 2);
    const char *argv[] = {"search", "-m",       PROMPTED, "--no-cache", "-k",
                          "2",      queries[1], file,     NULL};
    test_run_result t = test_run_vit(NULL, NULL, argv);
    assert_int_equal(t.status, 0);
    assert_string_equal(t.err, "");
    char expected[1024];
    snprintf(expected, sizeof expected, "%s\n  1  %7.4f  %d  %s\n  2  %7.4f  %d  %s\n", queries[1],
             want[0].score, want[0].line, want[0].text, want[1].score, want[1].line, want[1].text);
    assert_string_equal(t.out, expected);
    test_run_free(&t);
    test_run_free(&j);
}

/* A TSV's column, by its header's name and by number: the same documents, named by their lines
 * (the header is line 1). */
static void test_tsv_column(void **state) {
    (void)state;
    REQUIRE_BIN();
    char text[1024] = "id\ttext\tlabel\n";
    for (int i = 0; i < DOCS; i++) {
        char row[128];
        snprintf(row, sizeof row, "%d\t%s\t%d\n", i, docs[i], i % 2);
        strcat(text, row);
    }
    const char *tsv = write_temp_file("docs.tsv", text, strlen(text));
    test_run_result lines =
        search(PROMPTED, write_docs("docs-col.txt", 0), (const char *const[]){"--no-cache", NULL});
    test_run_result by_name =
        search(PROMPTED, tsv, (const char *const[]){"--no-cache", "--column", "text", NULL});
    assert_int_equal(lines.status, 0);
    if (by_name.status != 0) fail_msg("%s", by_name.err);
    for (int q = 0; q < 2; q++) {
        result a[DOCS + 1], b[DOCS + 1];
        assert_int_equal(json_results(lines.out, q, a, DOCS + 1), DOCS);
        assert_int_equal(json_results(by_name.out, q, b, DOCS + 1), DOCS);
        for (int i = 0; i < DOCS; i++) {
            assert_int_equal(a[i].corpus_id, b[i].corpus_id);
            assert_string_equal(a[i].text, b[i].text);
            assert_int_equal(b[i].line, b[i].corpus_id + 2);
            assert_float_equal(a[i].score, b[i].score, 1e-6);
        }
    }
    /* by number, the header's "text" is a document too */
    test_run_result by_number =
        search(PROMPTED, tsv, (const char *const[]){"--no-cache", "--column", "2", NULL});
    assert_int_equal(by_number.status, 0);
    result c[DOCS + 2];
    assert_int_equal(json_results(by_number.out, 0, c, DOCS + 2), DOCS + 1);
    test_run_free(&lines);
    test_run_free(&by_name);
    test_run_free(&by_number);
}

/* "N documents (D distinct): E encoded, H from the cache" of --verbose. */
static void expect_counts(const test_run_result *r, int n, int distinct, int encoded, int hits) {
    char want[128];
    snprintf(want, sizeof want,
             "vit search: %d documents (%d distinct): %d encoded, %d from the cache", n, distinct,
             encoded, hits);
    if (!strstr(r->err, want)) fail_msg("expected '%s' in:\n%s", want, r->err);
}

/* The cache: a first run encodes each distinct line once (the repeated one once), a second
 * encodes nothing and gives the same results, an added line is the only one encoded, another
 * model never reads it; each time the results of a run without cache. */
static void test_cache(void **state) {
    (void)state;
    REQUIRE_BIN();
    const char *cache = tmp("texts.cache");
    remove(cache);
    const char *file = write_docs("cached.txt", 0);
    const char *extra[] = {"-v", "--cache", cache, NULL};
    test_run_result first = search(PROMPTED, file, extra);
    if (first.status != 0) fail_msg("%s", first.err);
    expect_counts(&first, DOCS, DOCS - 1, DOCS - 1, 0);
    test_run_result second = search(PROMPTED, file, extra);
    expect_counts(&second, DOCS, DOCS - 1, 0, DOCS - 1);
    assert_non_null(strstr(second.err, "(unchanged)"));
    assert_string_equal(first.out, second.out);
    test_run_result none = search(PROMPTED, file, (const char *const[]){"--no-cache", NULL});
    assert_string_equal(first.out, none.out);
    /* one line added at the end */
    write_docs("cached.txt", 1);
    test_run_result third = search(PROMPTED, file, extra);
    expect_counts(&third, DOCS + 1, DOCS, 1, DOCS - 1);
    test_run_result none2 = search(PROMPTED, file, (const char *const[]){"--no-cache", NULL});
    assert_string_equal(third.out, none2.out);
    assert_string_not_equal(third.out, first.out);
    /* another model: rebuilt, not read */
    test_run_result other = search(PLAIN, file, extra);
    assert_int_equal(other.status, 0);
    expect_counts(&other, DOCS + 1, DOCS, DOCS, 0);
    test_run_free(&first);
    test_run_free(&second);
    test_run_free(&none);
    test_run_free(&third);
    test_run_free(&none2);
    test_run_free(&other);
}

static void test_errors(void **state) {
    (void)state;
    REQUIRE_BIN();
    const struct {
        const char *args[10];
        int status;
        const char *says;
    } cases[] = {
        {{"search", "-m", PROMPTED, "a query", "/nonexistent/docs.txt", NULL},
         1,
         "vit search: /nonexistent/docs.txt: "},
        {{"search", "-m", PROMPTED, "--column", "title", "a query",
          "tests/data/st-mean-micro/vocab.txt", NULL},
         1,
         "no column 'title' in its first line (the header)"},
        {{"search", "--column", "2", "a query", "examples/photos", NULL},
         2,
         "--column is for a FILE of texts"},
        {{"search", "-m", "tests/data/clip-micro", "a query", "tests/data/st-mean-micro/vocab.txt",
          NULL},
         1,
         "vocab.txt: not a folder (a file of texts is searched with a text model"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        test_run_result r = test_run_vit(NULL, NULL, cases[i].args);
        if (r.status != cases[i].status || !strstr(r.err, cases[i].says))
            fail_msg("case %zu: exit %d, '%s'", i, r.status, r.err);
        assert_int_equal((int)(strchr(r.err, '\n') - r.err), (int)strlen(r.err) - 1); /* one line */
        test_run_free(&r);
    }
    /* a blank file: no documents */
    const char *blank = write_temp_file("blank.txt", "\n \n", 3);
    const char *argv[] = {"search", "-m", PROMPTED, "--no-cache", "q", blank, NULL};
    test_run_result r = test_run_vit(NULL, NULL, argv);
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.err, "no documents (every line is blank)"));
    test_run_free(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ranking_is_embed_cosines),
        cmocka_unit_test(test_similarity_functions),
        cmocka_unit_test(test_text_output),
        cmocka_unit_test(test_tsv_column),
        cmocka_unit_test(test_cache),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
