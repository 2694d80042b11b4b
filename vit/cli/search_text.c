/* vit search with a text encoder: the documents of a file (its lines, or a TSV's column) ranked
 * by the similarity of their embeddings with each query's, as sentence-transformers'
 * util.semantic_search ranks encode_document's rows against encode_query's with the model's
 * similarity function (SentenceTransformer.similarity: the folder's similarity_fn_name, cosine
 * when it names none). The documents'
 * embeddings are kept in the cache file image searches use (vit/data/embed_cache), one row per
 * distinct text, so that a later search encodes only the lines added or changed since. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vit/cli/search.h"
#include "vit/data/embed_cache.h"
#include "vit/io/weights.h"

/* ---- the prompts ---- */

/* The prompt encode_query uses: the folder's "query", else NULL (its default prompt, if any). */
static const char *query_prompt(const vit_text_context *ctx) {
    return vit_text_prompt(ctx, "query");
}

/* encode_document's: the first of "document", "passage" and "corpus" the folder has, else
 * NULL. */
static const char *document_prompt(const vit_text_context *ctx) {
    static const char *const names[] = {"document", "passage", "corpus"};
    for (int i = 0; i < 3; i++)
        if (vit_text_prompt(ctx, names[i])) return vit_text_prompt(ctx, names[i]);
    return NULL;
}

/* ---- the documents and their cache names ---- */

typedef struct {
    text_lines lines;
    char (*names)[40]; /* [count] the text's cache name: two hashes of it */
    long *row;         /* [count] its row in the new cache, -1 until found or encoded */
    int failed;        /* rows without the column (reported) */
} corpus;

/* A document's name in the cache: 64-bit FNV-1a and a 64-bit polynomial hash of its bytes (its
 * length is the entry's size), so an identical text finds its row wherever it moved, and two
 * texts share one only if both hashes and the length agree. */
static void text_name(const char *text, size_t length, char *name) {
    uint64_t a = 1469598103934665603ull, b = 0;
    for (size_t i = 0; i < length; i++) {
        a = (a ^ (unsigned char)text[i]) * 1099511628211ull;
        b = b * 1000003ull + (unsigned char)text[i] + 1;
    }
    snprintf(name, 40, "%016llx%016llx", (unsigned long long)a, (unsigned long long)b);
}

static int read_corpus(const search_options *o, corpus *c) {
    vit_error err = {0};
    if (text_lines_read(&c->lines, o->folder, o->column, "vit search", stderr, &c->failed, &err)) {
        fprintf(stderr, "vit search: %s\n", err.msg);
        return -1;
    }
    const int n = c->lines.count;
    c->names = malloc(sizeof *c->names * (size_t)(n ? n : 1));
    c->row = malloc(sizeof *c->row * (size_t)(n ? n : 1));
    if (!c->names || !c->row) return fprintf(stderr, "vit search: out of memory\n"), -1;
    for (int i = 0; i < n; i++) {
        text_name(c->lines.texts[i], c->lines.lengths[i], c->names[i]);
        c->row[i] = -1;
    }
    return 0;
}

static void corpus_free(corpus *c) {
    text_lines_free(&c->lines);
    free(c->names);
    free(c->row);
}

/* ---- the cache's key ---- */

/* What the documents' rows depend on besides their texts: the file, how it is read, the model
 * (where, what computes, its pooling and the documents' prompt) in *identity, which names the
 * default cache file; and the model's files' sizes and times in *key too. -1 when out of
 * memory. */
static int cache_key(const search_options *o, const char *model_dir, vit_text_context *ctx,
                     const char *prompt, char **identity, char **key) {
    char real_file[PATH_MAX], real_model[PATH_MAX];
    if (!realpath(o->folder, real_file)) snprintf(real_file, sizeof real_file, "%s", o->folder);
    if (!realpath(model_dir, real_model)) snprintf(real_model, sizeof real_model, "%s", model_dir);
    const char *weights = weights_file_name(model_dir);
    static const char *const files[] = {"config.json",
                                        "tokenizer.json",
                                        "vocab.txt",
                                        "merges.txt",
                                        "vocab.json",
                                        "sentencepiece.bpe.model",
                                        "modules.json",
                                        "1_Pooling/config.json",
                                        "config_sentence_transformers.json",
                                        "sentence_bert_config.json",
                                        "2_Dense/config.json",
                                        "2_Dense/model.safetensors"};
    const int nfiles = sizeof files / sizeof *files;
    char stamps[16][PATH_MAX / 16];
    search_file_stamp(stamps[0], sizeof stamps[0], model_dir,
                      weights ? weights : "model.safetensors");
    for (int i = 0; i < nfiles; i++)
        search_file_stamp(stamps[i + 1], sizeof stamps[i + 1], model_dir, files[i]);
    char column[64];
    if (o->column.name)
        snprintf(column, sizeof column, "name %.40s", o->column.name);
    else
        snprintf(column, sizeof column, "%d", o->column.index);
    const char *pipeline = vit_text_pipeline(ctx);
    *key = NULL;
    if (asprintf(identity, "texts %s\ncolumn %s\nmodel %s\ncompute %s\npipeline %s\nprompt %s\n",
                 real_file, column, real_model, vit_text_compute(ctx), pipeline ? pipeline : "-",
                 prompt ? prompt : "(default)") < 0)
        return *identity = NULL, -1;
    size_t size = strlen(*identity) + 1;
    for (int i = 0; i <= nfiles; i++) size += strlen(stamps[i]);
    if (!(*key = malloc(size))) return -1;
    strcpy(*key, *identity);
    for (int i = 0; i <= nfiles; i++) strcat(*key, stamps[i]);
    return 0;
}

/* ---- encoding what the cache lacks ---- */

typedef struct {
    vit_text_context *ctx;
    vit_text_embed_opts how;
    const char *file; /* the documents' */
    int batch, dim;
    const char **texts;
    size_t *lengths;
    int *docs; /* the batch's documents */
    int n;
    float *rows;
} encoder;

/* Embeds the pending batch and adds its rows to the cache. */
static int flush(encoder *e, corpus *c, embed_cache *cache) {
    if (e->n == 0) return 0;
    vit_error err = {0};
    if (vit_text_embed_with(e->ctx, e->texts, e->lengths, e->n, &e->how, e->rows, &err) != 0) {
        fprintf(stderr, "vit search: %s:%d: %s\n", e->file, c->lines.lines[e->docs[0]], err.msg);
        return -1;
    }
    for (int i = 0; i < e->n; i++) {
        const int d = e->docs[i];
        if (embed_cache_add(cache, c->names[d], (int64_t)c->lines.lengths[d], 0,
                            e->rows + (size_t)i * e->dim, &err) != 0) {
            fprintf(stderr, "vit search: %s\n", err.msg);
            return -1;
        }
        c->row[d] = (long)cache->count - 1;
    }
    e->n = 0;
    return 0;
}

/* Documents ordered by name, then position: equal texts side by side, the first one first. */
static int by_name(const void *pa, const void *pb, void *user) {
    const corpus *c = user;
    const int a = *(const int *)pa, b = *(const int *)pb;
    const int byname = strcmp(c->names[a], c->names[b]);
    if (byname) return byname;
    const size_t la = c->lines.lengths[a], lb = c->lines.lengths[b];
    if (la != lb) return la < lb ? -1 : 1;
    return a < b ? -1 : a > b;
}

/* Every document's row in *cache: the old file's for the texts it has, the others encoded, each
 * distinct text once (a repeated line shares its first's row). *hits and *encoded count rows. */
static int fill(encoder *e, corpus *c, const embed_cache *old, embed_cache *cache, size_t *hits,
                size_t *encoded) {
    const int n = c->lines.count;
    int *order = malloc(sizeof *order * (size_t)(n ? n : 1)),
        *first = malloc(sizeof *first * (size_t)(n ? n : 1)); /* each one's first equal text */
    if (!order || !first) {
        free(order), free(first);
        return fprintf(stderr, "vit search: out of memory\n"), -1;
    }
    for (int i = 0; i < n; i++) order[i] = i;
    qsort_r(order, (size_t)n, sizeof *order, by_name, c);
    for (int k = 0; k < n; k++) {
        const int i = order[k], prev = k ? order[k - 1] : -1;
        first[i] = prev >= 0 && strcmp(c->names[i], c->names[prev]) == 0 &&
                           c->lines.lengths[i] == c->lines.lengths[prev]
                       ? first[prev]
                       : i;
    }
    int rc = 0;
    for (int i = 0; rc == 0 && i < n; i++) {
        if (first[i] != i) continue;
        const long at =
            old ? embed_cache_find(old, c->names[i], (int64_t)c->lines.lengths[i], 0) : -1;
        if (at >= 0) {
            vit_error err = {0};
            rc = embed_cache_add(cache, c->names[i], (int64_t)c->lines.lengths[i], 0,
                                 old->rows + (size_t)at * old->dim, &err);
            if (rc != 0) fprintf(stderr, "vit search: %s\n", err.msg);
            c->row[i] = (long)cache->count - 1;
            ++*hits;
            continue;
        }
        e->texts[e->n] = c->lines.texts[i], e->lengths[e->n] = c->lines.lengths[i];
        e->docs[e->n++] = i;
        ++*encoded;
        if (e->n == e->batch) rc = flush(e, c, cache);
    }
    if (rc == 0) rc = flush(e, c, cache);
    for (int i = 0; rc == 0 && i < n; i++) c->row[i] = c->row[first[i]];
    free(order);
    free(first);
    return rc;
}

/* ---- the queries, and the ranking ---- */

/* The queries' embeddings [num_queries, dim] with the query prompt, or NULL after saying why. */
static float *embed_queries(const search_options *o, encoder *e) {
    float *rows = malloc(sizeof(float) * (size_t)o->num_queries * e->dim);
    if (!rows) return fprintf(stderr, "vit search: out of memory\n"), NULL;
    for (int start = 0; start < o->num_queries; start += e->batch) {
        const int count = o->num_queries - start < e->batch ? o->num_queries - start : e->batch;
        for (int i = 0; i < count; i++) {
            e->texts[i] = o->queries[start + i].text;
            e->lengths[i] = strlen(e->texts[i]);
        }
        vit_error err = {0};
        if (vit_text_embed_with(e->ctx, e->texts, e->lengths, count, &e->how,
                                rows + (size_t)start * e->dim, &err) != 0) {
            fprintf(stderr, "vit search: %s\n", err.msg);
            free(rows);
            return NULL;
        }
    }
    return rows;
}

typedef struct {
    double score;
    int doc;
} ranked;

/* Highest score first; equal scores in the file's order; NaN last. */
static int by_score(const void *pa, const void *pb) {
    const ranked *a = pa, *b = pb;
    if (a->score > b->score || (isnan(b->score) && !isnan(a->score))) return -1;
    if (a->score < b->score || (isnan(a->score) && !isnan(b->score))) return 1;
    return a->doc < b->doc ? -1 : a->doc > b->doc;
}

/* x's norm; cos_sim divides by it, or by 1e-12 at least (torch's normalize), so a zero row
 * scores 0. */
static double norm(const float *x, int dim) {
    double s = 0;
    for (int d = 0; d < dim; d++) s += (double)x[d] * x[d];
    return fmax(sqrt(s), 1e-12);
}

/* sentence-transformers' similarity functions, each higher for closer rows: cos_sim, dot_score,
 * and euclidean_sim and manhattan_sim, the negative distances (-torch.cdist, p 2 and 1). */
typedef enum { SIM_COSINE, SIM_DOT, SIM_EUCLIDEAN, SIM_MANHATTAN } similarity;

static similarity similarity_of(const char *name) {
    if (strcmp(name, "dot") == 0) return SIM_DOT;
    if (strcmp(name, "euclidean") == 0) return SIM_EUCLIDEAN;
    return strcmp(name, "manhattan") == 0 ? SIM_MANHATTAN : SIM_COSINE;
}

/* Query t (of norm tn) against document x (of norm xn; both used by the cosine only). */
static double score(similarity f, const float *t, double tn, const float *x, double xn, int dim) {
    double s = 0;
    switch (f) {
    case SIM_COSINE:
    case SIM_DOT:
        for (int d = 0; d < dim; d++) s += (double)x[d] * t[d];
        return f == SIM_DOT ? s : s / (tn * xn);
    case SIM_EUCLIDEAN:
        for (int d = 0; d < dim; d++) s += ((double)x[d] - t[d]) * ((double)x[d] - t[d]);
        return -sqrt(s);
    case SIM_MANHATTAN:
        for (int d = 0; d < dim; d++) s += fabs((double)x[d] - t[d]);
        return -s;
    }
    return 0;
}

static void print_results(const search_options *o, const char *query, const corpus *c,
                          const ranked *r, int n) {
    if (o->json) {
        json_writer w = json_begin(stdout);
        json_object(&w);
        json_key(&w, "query");
        json_string(&w, query);
        json_key(&w, "results");
        json_array(&w);
        for (int i = 0; i < n; i++) {
            const int d = r[i].doc;
            json_object(&w);
            json_key(&w, "rank");
            json_int(&w, i + 1);
            json_key(&w, "score");
            json_float(&w, (float)r[i].score);
            json_key(&w, "corpus_id");
            json_int(&w, d);
            json_key(&w, "line");
            json_int(&w, c->lines.lines[d]);
            json_key(&w, "text");
            json_string(&w, c->lines.texts[d]);
            json_end(&w);
        }
        json_end(&w);
        json_end(&w);
        json_line(&w);
        return;
    }
    const int width = snprintf(NULL, 0, "%d", n);
    printf("%s\n", query);
    for (int i = 0; i < n; i++) {
        const int d = r[i].doc;
        printf("  %*d  %7.4f  %d  ", width, i + 1, r[i].score, c->lines.lines[d]);
        /* a document is one line: a TSV column's tabs never reach it, a line's own do */
        for (size_t k = 0; k < c->lines.lengths[d]; k++)
            putchar(c->lines.texts[d][k] == '\t' ? ' ' : c->lines.texts[d][k]);
        putchar('\n');
    }
}

static int rank(const search_options *o, similarity f, const float *queries, int dim,
                const corpus *c, const embed_cache *cache) {
    const int n = c->lines.count;
    ranked *r = malloc(sizeof *r * (size_t)(n ? n : 1));
    double *norms = malloc(sizeof *norms * (cache->count ? cache->count : 1));
    if (!r || !norms) {
        free(r), free(norms);
        return fprintf(stderr, "vit search: out of memory\n"), -1;
    }
    for (size_t i = 0; i < cache->count; i++) norms[i] = norm(cache->rows + i * dim, dim);
    for (int q = 0; q < o->num_queries; q++) {
        const float *t = queries + (size_t)q * dim;
        const double tn = norm(t, dim);
        for (int i = 0; i < n; i++) {
            const float *x = cache->rows + (size_t)c->row[i] * dim;
            r[i] = (ranked){score(f, t, tn, x, norms[c->row[i]], dim), i};
        }
        qsort(r, (size_t)n, sizeof *r, by_score);
        print_results(o, o->queries[q].text, c, r, o->top > 0 && o->top < n ? o->top : n);
    }
    free(r);
    free(norms);
    return 0;
}

/* ---- the command ---- */

/* Writes the new cache when it differs from the old one; an unwritable one is a warning. */
static const char *save_cache(const search_options *o, const char *file, const embed_cache *cache,
                              int have_old, size_t old_count, size_t hits, size_t encoded) {
    if (!file || cache->count == 0 || (have_old && encoded == 0 && hits == old_count))
        return "unchanged";
    vit_error err = {0};
    if (!o->cache && search_make_parents(file) != 0)
        snprintf(err.msg, sizeof err.msg, "%.400s: cannot make its folder: %s", file,
                 strerror(errno));
    else if (embed_cache_write(file, cache, &err) == 0)
        return "written";
    fprintf(stderr,
            "vit search: warning: the cache cannot be written (%s): the documents will be "
            "encoded again next time\n",
            err.msg);
    return "not written";
}

static int search_corpus(const search_options *o, const char *model_dir, encoder *e, corpus *c) {
    char *identity = NULL, *key = NULL, file[PATH_MAX + 128];
    const char *doc_prompt = document_prompt(e->ctx);
    if (cache_key(o, model_dir, e->ctx, doc_prompt, &identity, &key) != 0) {
        free(identity), free(key);
        return fprintf(stderr, "vit search: out of memory\n"), 1;
    }
    embed_cache old = {0}, cache = {0};
    int have_old;
    const char *cache_file =
        search_open_cache(o, identity, key, e->dim, "document", file, sizeof file, &old, &have_old);
    vit_error err = {0};
    int rc = embed_cache_init(&cache, key, e->dim, &err);
    free(identity), free(key);
    if (rc != 0) fprintf(stderr, "vit search: %s\n", err.msg);
    size_t hits = 0, encoded = 0;
    e->how.prompt = doc_prompt;
    if (rc == 0) rc = fill(e, c, have_old ? &old : NULL, &cache, &hits, &encoded);
    const char *note =
        rc == 0 ? save_cache(o, cache_file, &cache, have_old, old.count, hits, encoded) : "";
    if (rc == 0 && o->verbose) {
        fprintf(stderr, "vit search: %d documents (%zu distinct): %zu encoded, %zu from the cache",
                c->lines.count, cache.count, encoded, hits);
        if (have_old && old.count > hits)
            fprintf(stderr, ", %zu dropped from it (changed or gone)", old.count - hits);
        if (c->failed) fprintf(stderr, ", %d without the column", c->failed);
        if (cache_file)
            fprintf(stderr, "; cache %s (%s)\n", cache_file, note);
        else
            fprintf(stderr, "; no cache\n");
    }
    if (rc == 0 && c->lines.count == 0) {
        fprintf(stderr, "vit search: %s: no documents%s\n", o->folder,
                c->failed ? " with that column" : " (every line is blank)");
        rc = -1;
    }
    e->how.prompt = query_prompt(e->ctx);
    float *queries = rc == 0 ? embed_queries(o, e) : NULL;
    if (rc == 0 && !queries) rc = -1;
    if (rc == 0)
        rc = rank(o, similarity_of(vit_text_similarity(e->ctx)), queries, e->dim, c, &cache);
    free(queries);
    embed_cache_free(&cache);
    embed_cache_free(&old);
    return rc != 0 ? 1 : c->failed ? 1 : 0;
}

int search_texts(const search_options *o, const char *model_dir) {
    const vit_text_params tp = cli_text_params(&o->common.params);
    vit_error err = {0};
    vit_text_context *ctx = vit_text_load(model_dir, &tp, &err);
    if (!ctx) return fprintf(stderr, "vit search: %s\n", err.msg), 1;
    const vit_pool pool = vit_text_default_pool(ctx);
    encoder e = {.ctx = ctx,
                 .how = {.pool = pool},
                 .file = o->folder,
                 .batch = vit_text_max_batch(ctx),
                 .dim = vit_text_embed_size(ctx, pool)};
    e.texts = malloc(sizeof *e.texts * (size_t)e.batch);
    e.lengths = malloc(sizeof *e.lengths * (size_t)e.batch);
    e.docs = malloc(sizeof *e.docs * (size_t)e.batch);
    e.rows = malloc(sizeof *e.rows * (size_t)e.batch * e.dim);
    corpus c = {0};
    int rc = 1;
    if (!e.texts || !e.lengths || !e.docs || !e.rows)
        fprintf(stderr, "vit search: out of memory\n");
    else if (read_corpus(o, &c) == 0)
        rc = search_corpus(o, model_dir, &e, &c);
    corpus_free(&c);
    free(e.texts), free(e.lengths), free(e.docs), free(e.rows);
    vit_text_free(ctx);
    return rc;
}
