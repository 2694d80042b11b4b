/* vit rerank: documents scored against a query by a cross-encoder, best first, as
 * sentence-transformers' CrossEncoder.rank gives them. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vit/cli/cli.h"
#include "vit/vit.h"

#define DEFAULT_BATCH 32

enum { OPT_DOC = 1, OPT_TOP_N, OPT_RAW, OPT_JSON };

static const cli_option options[] = {
    CLI_MODEL_OPTION("a cross-encoder: a ForSequenceClassification folder with one label",
                     "$VIT_MODEL"),
    {OPT_DOC, "doc", 'd', "TEXT", "a document (repeatable; before the FILEs' lines)", NULL},
    {OPT_TOP_N, "top-n", 'n', "N", "print the N best documents only", "all"},
    {OPT_RAW, "raw", 0, NULL, "scores are the logits (no activation)", NULL},
    {OPT_JSON, "json", 0, NULL, "one JSON object per document: corpus_id, score, text", NULL},
    CLI_BATCH_OPTION("pairs per forward pass", "32"),
    CLI_THREADS_OPTION,
    CLI_BACKEND_OPTION,
    CLI_PRECISION_OPTION,
};

static const cli_command command = {
    "rerank",
    "score documents against a query with a cross-encoder, best first",
    "[options] [--] QUERY [FILE...]",
    "Each line of each FILE ('-': standard input) is a document, after the --doc texts. Each\n"
    "(QUERY, document) pair runs through the model as tokenizer(query, document) joins and cuts\n"
    "it; the score is the model's activation_fn of its logit (config.json's\n"
    "sentence_transformers.activation_fn, else the sigmoid: CrossEncoder.predict's default for\n"
    "one label). Documents print best first, as CrossEncoder.rank: SCORE, the document's index\n"
    "(0: the first --doc, else the first line) and the document.",
    options,
    sizeof options / sizeof options[0]};

const cli_command *cli_rerank_command(void) {
    return &command;
}

typedef struct {
    char **text;
    size_t *len;
    int n, cap;
} documents;

typedef struct {
    cli_common common;
    documents docs;
    int top_n, raw, json;
    char **rest; /* QUERY FILE... */
    int num_rest;
} options_t;

static int add_doc(documents *d, const char *text, size_t len) {
    if (d->n == d->cap) {
        const int cap = d->cap ? 2 * d->cap : 64;
        char **t = realloc(d->text, sizeof *t * (size_t)cap);
        if (t) d->text = t;
        size_t *l = realloc(d->len, sizeof *l * (size_t)cap);
        if (l) d->len = l;
        if (!t || !l) return -1;
        d->cap = cap;
    }
    if (!(d->text[d->n] = malloc(len + 1))) return -1;
    memcpy(d->text[d->n], text, len);
    d->text[d->n][len] = 0;
    d->len[d->n++] = len;
    return 0;
}

static void free_docs(documents *d) {
    for (int i = 0; i < d->n; i++) free(d->text[i]);
    free(d->text);
    free(d->len);
}

static int rerank_option(const cli_parser *p, int id, void *user) {
    options_t *o = user;
    switch (id) {
    case OPT_DOC:
        if (add_doc(&o->docs, p->value, strlen(p->value)) == 0) return 0;
        fprintf(stderr, "vit rerank: out of memory\n");
        return -1;
    case OPT_TOP_N:
        return cli_int(p, 1, 1 << 30, &o->top_n);
    case OPT_RAW:
        return o->raw = 1, 0;
    case OPT_JSON:
        return o->json = 1, 0;
    }
    return 0;
}

/* Each line of path ('-': standard input) a document. */
static int read_docs(const char *path, documents *d) {
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
    if (!f) {
        fprintf(stderr, "vit rerank: %s: %s\n", path, strerror(errno));
        return -1;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    int rc = 0;
    errno = 0;
    while (rc == 0 && (n = getline(&line, &cap, f)) >= 0) {
        if (n > 0 && line[n - 1] == '\n') n--;
        if (n > 0 && line[n - 1] == '\r') n--;
        if (add_doc(d, line, (size_t)n) != 0)
            rc = -1, fprintf(stderr, "vit rerank: %s: out of memory\n", path);
    }
    if (rc == 0 && ferror(f))
        rc = -1, fprintf(stderr, "vit rerank: %s: %s\n", path, strerror(errno ? errno : EIO));
    free(line);
    if (f != stdin) fclose(f);
    return rc;
}

/* The scores of every document against the query, in batches of at most batch pairs. */
static int score_all(vit_text_context *ctx, const options_t *o, float *scores, int batch) {
    const char *query = o->rest[0];
    const size_t qlen = strlen(query);
    const char **queries = malloc(sizeof *queries * (size_t)batch);
    size_t *qlens = malloc(sizeof *qlens * (size_t)batch);
    int rc = queries && qlens ? 0 : -1;
    if (rc) fprintf(stderr, "vit rerank: out of memory\n");
    for (int i = 0; i < batch && rc == 0; i++) queries[i] = query, qlens[i] = qlen;
    for (int first = 0; rc == 0 && first < o->docs.n; first += batch) {
        const int n = o->docs.n - first < batch ? o->docs.n - first : batch;
        const vit_text_pairs p = {queries, (const char *const *)o->docs.text + first, qlens,
                                  o->docs.len + first};
        vit_error err = {0};
        rc = o->raw ? vit_text_forward_pairs(ctx, &p, n, scores + first, NULL, &err)
                    : vit_text_pair_scores(ctx, &p, n, scores + first, &err);
        if (rc) fprintf(stderr, "vit rerank: document %d: %s\n", first, err.msg);
    }
    free(queries);
    free(qlens);
    return rc;
}

/* best first; equal scores in the documents' order (Python's sorted is stable) */
static int by_score(const void *a, const void *b, void *scores) {
    const int i = *(const int *)a, j = *(const int *)b;
    const float *s = scores;
    if (s[i] != s[j]) return s[i] > s[j] ? -1 : 1;
    return (i > j) - (i < j);
}

static void print_ranked(const options_t *o, const float *scores) {
    int *order = malloc(sizeof *order * (size_t)o->docs.n);
    if (!order) return (void)fprintf(stderr, "vit rerank: out of memory\n");
    for (int i = 0; i < o->docs.n; i++) order[i] = i;
    qsort_r(order, (size_t)o->docs.n, sizeof *order, by_score, (void *)scores);
    const int shown = o->top_n > 0 && o->top_n < o->docs.n ? o->top_n : o->docs.n;
    for (int k = 0; k < shown; k++) {
        const int i = order[k];
        if (o->json) {
            json_writer w = json_begin(stdout);
            json_object(&w);
            json_key(&w, "corpus_id");
            json_int(&w, i);
            json_key(&w, "score");
            json_float(&w, scores[i]);
            json_key(&w, "text");
            json_value_string(&w, o->docs.text[i], o->docs.len[i]);
            json_end(&w);
            json_line(&w);
        } else {
            printf("%.6f\t%d\t", (double)scores[i], i);
            fwrite(o->docs.text[i], 1, o->docs.len[i], stdout);
            putchar('\n');
        }
    }
    free(order);
}

/* A cross-encoder scores one number per pair. */
static vit_text_context *load_cross_encoder(const char *dir, const vit_params *c) {
    vit_error err = {0};
    const vit_text_params params = cli_text_params(c);
    vit_text_context *ctx = vit_text_load(dir, &params, &err);
    if (!ctx) {
        fprintf(stderr, "vit rerank: %s\n", err.msg);
        return NULL;
    }
    vit_model_info info;
    vit_text_model_info(ctx, &info);
    if (!(info.capabilities & VIT_CAN_CLASSIFY) || vit_text_num_labels(ctx) != 1) {
        fprintf(stderr,
                "vit rerank: %s: %s is not a cross-encoder (a sequence classifier with one "
                "label; this one gives %d outputs)\n",
                dir, info.architecture, vit_text_num_labels(ctx));
        vit_text_free(ctx);
        return NULL;
    }
    return ctx;
}

static int run(options_t *o, const char *dir) {
    for (int i = 1; i < o->num_rest; i++)
        if (read_docs(o->rest[i], &o->docs) != 0) return 1;
    if (o->docs.n == 0) {
        fprintf(stderr, "vit rerank: no documents (give FILEs or --doc TEXT)\n");
        return 2;
    }
    vit_params *c = &o->common.params;
    if (c->max_batch == 0) c->max_batch = DEFAULT_BATCH;
    vit_text_context *ctx = load_cross_encoder(dir, c);
    if (!ctx) return 1;
    float *scores = malloc(sizeof *scores * (size_t)o->docs.n);
    int rc = 1;
    if (!scores)
        fprintf(stderr, "vit rerank: out of memory\n");
    else if (score_all(ctx, o, scores, vit_text_max_batch(ctx)) == 0)
        print_ranked(o, scores), rc = fflush(stdout) != 0;
    free(scores);
    vit_text_free(ctx);
    return rc;
}

int cli_rerank(int argc, char **argv) {
    options_t o = {0};
    cli_parser p;
    const cli_outcome parsed = cli_parse(&p, &command, argc, argv, &o.common, rerank_option, &o);
    o.rest = p.rest, o.num_rest = p.num_rest;
    int rc;
    const char *env = getenv("VIT_MODEL");
    const char *dir = o.common.model ? o.common.model : env && *env ? env : NULL;
    if (parsed != CLI_PARSED)
        rc = cli_exit_status(parsed);
    else if (o.num_rest < 1)
        rc = cli_exit_status(cli_usage_error(&command, "no QUERY"));
    else if (!dir)
        rc = cli_exit_status(cli_usage_error(&command, "no model: give -m CROSS_ENCODER"));
    else
        rc = run(&o, dir);
    free_docs(&o.docs);
    return rc;
}
