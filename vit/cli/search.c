/* vit search: a folder's images ranked by their cosine similarity with texts in the joint space
 * of a CLIP or SigLIP model. The images' embeddings are kept in a cache file (vit/data/embed_cache)
 * so that a later search encodes only what was added or changed since. With a text model, a
 * file's texts instead (search_text.c). */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "vit/cli/cli.h"
#include "vit/cli/image_batch.h"
#include "vit/cli/search.h"
#include "vit/data/embed_cache.h"
#include "vit/data/imagefolder.h"
#include "vit/io/weights.h"

enum { OPT_TOP = 1, OPT_TEXT, OPT_JSON, OPT_CACHE, OPT_NO_CACHE, OPT_VERBOSE, OPT_COLUMN };

static const cli_option options[] = {
    CLI_MODEL_OPTION("a CLIP or SigLIP model (its image and text towers), or a text encoder (a "
                     "sentence-transformers folder, a BERT) for a FILE of texts",
                     CLI_MODEL_DEFAULT),
    {OPT_TOP, "top", 'k', "N", "show the N most similar images (or texts) per query; 0: every one",
     "10"},
    {OPT_COLUMN, "column", 0, "N|NAME",
     "texts: FILE is a TSV and a document is its column N (from 1), or the column its first line "
     "(a header) names NAME, as vit embed --column",
     "each line a document, blank lines left out"},
    {OPT_TEXT, "text", 0, "TEXT",
     "a text query (repeatable; before the operands' queries), even one that names a file", NULL},
    {OPT_JSON, "json", 0, NULL,
     "one JSON object per query: {\"query\": ..., \"results\": [{\"rank\": 1, \"score\": ..., "
     "\"file\": ...}, ...]}",
     NULL},
    {OPT_CACHE, "cache", 0, "FILE", "the cache of the folder's image embeddings",
     "$XDG_CACHE_HOME/vit/search/FOLDER-HASH.safetensors, ~/.cache when XDG_CACHE_HOME is unset"},
    {OPT_NO_CACHE, "no-cache", 0, NULL, "encode every image; read and write no cache", NULL},
    {OPT_VERBOSE, "verbose", 'v', NULL,
     "print on stderr how many images were encoded and how many came from the cache, and the "
     "cache's path",
     NULL},
    CLI_EXIF_UPRIGHT,
    CLI_BATCH_OPTION("images per forward pass", "16"),
    CLI_THREADS_OPTION,
    CLI_SIZE_OPTION("run at N x N (position embeddings interpolated)"),
    CLI_PIXELS_OPTION,
    CLI_BACKEND_OPTION,
    CLI_PRECISION_OPTION,
};

static const cli_command command = {
    "search",
    "rank a folder's images (CLIP, SigLIP) or a file's texts (a text encoder) by similarity",
    "[options] QUERY... FOLDER\n       vit search [options] --text TEXT... FOLDER\n"
    "       vit search -m TEXT_MODEL [options] QUERY... FILE",
    "Ranks the images anywhere under FOLDER (recursively, sorted, as vit embed finds them) by\n"
    "their cosine similarity with each QUERY in the joint image-text space of a CLIP or SigLIP\n"
    "model: a score is the image's row of vit embed times the query's. FOLDER is the last\n"
    "operand; a QUERY that names an existing file is an image (images like it), any other is a\n"
    "text; a QUERY that names a folder is refused (one FOLDER per search; --text TEXT for\n"
    "words that name a file or folder). Per query: the\n"
    "query, then one line per image: its rank, its score (-1..1) and its path. The images'\n"
    "embeddings are kept in a cache file, keyed by the model (its folder, its\n"
    "files' sizes and modification times, the settings that change the numbers) and by each\n"
    "image's path, size and modification time: a later search encodes only the images added or\n"
    "changed since, and a different model never reads another's. A cache that cannot be written\n"
    "is a warning; a damaged one is a warning and is rebuilt. An image that cannot be read is\n"
    "reported and left out (exit 1, after the results).\n\n"
    "With a text model (-m a sentence-transformers folder or any text encoder vit embed runs),\n"
    "the last operand is a FILE of documents, one per line (or --column N of a TSV), and every\n"
    "QUERY is a text: a score is the similarity of the query's embedding and the document's\n"
    "(the folder's pipeline, as vit embed gives it) by the folder's similarity_fn_name\n"
    "(config_sentence_transformers.json, as SentenceTransformer.similarity): cosine (also when\n"
    "it names none), dot, or euclidean or manhattan, the negative distance (so always higher is\n"
    "closer); ranked as sentence-transformers' util.semantic_search ranks, best first, equal\n"
    "scores in the file's order (vit info names the function). Queries take the folder's prompt\n"
    "named query and documents the first of document, passage and corpus that it has (as\n"
    "encode_query and encode_document choose; without one, its default prompt). Per query: the\n"
    "query, then its rank, score, line in FILE and text per document. The documents'\n"
    "embeddings are cached as an image folder's are, keyed by the model and FILE, and by each\n"
    "document's text: a later search encodes only the lines added or changed since.",
    options,
    sizeof options / sizeof options[0]};

const cli_command *cli_search_command(void) {
    return &command;
}

static int search_option(const cli_parser *p, int id, void *user) {
    search_options *o = user;
    switch (id) {
    case OPT_TOP:
        return cli_int(p, 0, INT_MAX, &o->top);
    case OPT_TEXT:
        o->queries[o->num_queries++] = (search_query){p->value, 0};
        return 0;
    case OPT_JSON:
        return o->json = 1, 0;
    case OPT_CACHE:
        return o->cache = p->value, 0;
    case OPT_NO_CACHE:
        return o->no_cache = 1, 0;
    case OPT_VERBOSE:
        return o->verbose = 1, 0;
    case OPT_COLUMN:
        return text_column_parse(p, &o->column);
    }
    return 0;
}

/* An operand before FOLDER: an existing file is an image query, a folder is refused (a second
 * FOLDER, or a query that would silently be searched for as words), anything else is a text. */
static cli_outcome operand_query(const char *operand, search_query *q) {
    struct stat st;
    if (stat(operand, &st) != 0) return *q = (search_query){operand, 0}, CLI_PARSED;
    if (S_ISDIR(st.st_mode))
        return cli_usage_error(&command,
                               "%s is a folder: a search has one FOLDER, the last operand (--text "
                               "'%s' searches for the words)",
                               operand, operand);
    return *q = (search_query){operand, 1}, CLI_PARSED;
}

static cli_outcome parse_options(int argc, char **argv, search_options *o) {
    o->queries = malloc(sizeof *o->queries * (size_t)(argc > 0 ? argc : 1));
    if (!o->queries) return fprintf(stderr, "vit search: out of memory\n"), CLI_USAGE_ERROR;
    cli_parser p;
    const cli_outcome parsed = cli_parse(&p, &command, argc, argv, &o->common, search_option, o);
    if (parsed != CLI_PARSED) return parsed;
    if (p.num_rest < 1 || (p.num_rest < 2 && o->num_queries == 0))
        return cli_usage_error(&command, "expected QUERY... FOLDER");
    if (o->cache && o->no_cache)
        return cli_usage_error(&command, "--cache and --no-cache together");
    for (int i = 0; i < p.num_rest - 1; i++) {
        const cli_outcome kind = operand_query(p.rest[i], &o->queries[o->num_queries++]);
        if (kind != CLI_PARSED) return kind;
    }
    for (int i = 0; i < o->num_queries; i++) o->num_texts += !o->queries[i].image;
    o->folder = p.rest[p.num_rest - 1];
    return CLI_PARSED;
}

/* ---- the queries ---- */

/* The text queries' joint embeddings, in their order, into rows [num_texts, dim]: 0, or -1
 * after saying why. */
static int embed_texts(const search_options *o, const char *model_dir, int dim, float *rows) {
    const vit_text_params tp = cli_text_params(&o->common.params);
    vit_error err = {0};
    vit_text_context *ctx = vit_text_load(model_dir, &tp, &err);
    if (!ctx) {
        fprintf(stderr, "vit search: %s\n", err.msg);
        return -1;
    }
    const int n = o->num_texts, batch = vit_text_max_batch(ctx);
    const char **texts = malloc(sizeof *texts * n);
    size_t *lengths = malloc(sizeof *lengths * n);
    int rc = texts && lengths ? 0 : -1;
    if (rc != 0) fprintf(stderr, "vit search: out of memory\n");
    if (rc == 0 && vit_text_joint_dim(ctx) != dim) {
        fprintf(stderr,
                "vit search: %s: the text tower's joint space has %d dimensions, the "
                "image tower's %d\n",
                model_dir, vit_text_joint_dim(ctx), dim);
        rc = -1;
    }
    for (int i = 0, t = 0; rc == 0 && i < o->num_queries; i++)
        if (!o->queries[i].image) {
            texts[t] = o->queries[i].text;
            lengths[t] = strlen(texts[t]);
            t++;
        }
    for (int start = 0; rc == 0 && start < n; start += batch) {
        const int count = n - start < batch ? n - start : batch;
        rc = vit_text_embed(ctx, texts + start, lengths + start, count, VIT_POOL_JOINT,
                            rows + (size_t)start * dim, &err);
        if (rc != 0) fprintf(stderr, "vit search: %s\n", err.msg);
    }
    free(texts);
    free(lengths);
    vit_text_free(ctx);
    return rc;
}

/* An image query's joint embedding (normalised, as the folder's) into row: 0, or -1 after
 * saying why. */
static int embed_image(vit_context *ctx, const char *path, float *row) {
    float *pixels = malloc(sizeof(float) * vit_input_floats(ctx));
    vit_error err = {0};
    int rc = pixels ? 0 : vit_fail(&err, "out of memory");
    if (rc == 0) rc = vit_preprocess_file(ctx, path, pixels, &err);
    if (rc == 0) rc = vit_embed(ctx, pixels, 1, VIT_POOL_JOINT, row, &err);
    if (rc != 0)
        fprintf(stderr,
                "vit search: %s (a query that names a file is an image; --text '%s' searches for "
                "the words)\n",
                err.msg, path);
    free(pixels);
    return rc;
}

/* The queries' joint embeddings [n, dim] in their order (texts by the text tower, images by the
 * image tower), or NULL after saying why. */
static float *embed_queries(const search_options *o, vit_context *ctx, const char *model_dir,
                            int dim) {
    float *rows = malloc(sizeof(float) * (size_t)o->num_queries * dim),
          *texts = malloc(sizeof(float) * (size_t)(o->num_texts ? o->num_texts : 1) * dim);
    int rc = rows && texts ? 0 : -1;
    if (rc != 0) fprintf(stderr, "vit search: out of memory\n");
    if (rc == 0 && o->num_texts) rc = embed_texts(o, model_dir, dim, texts);
    for (int i = 0, t = 0; rc == 0 && i < o->num_queries; i++) {
        float *row = rows + (size_t)i * dim;
        if (o->queries[i].image)
            rc = embed_image(ctx, o->queries[i].text, row);
        else
            memcpy(row, texts + (size_t)t++ * dim, sizeof(float) * dim);
    }
    free(texts);
    if (rc != 0) free(rows);
    return rc == 0 ? rows : NULL;
}

/* ---- the folder's images ---- */

typedef struct {
    char *path;      /* as the walk gives it: FOLDER/... */
    const char *rel; /* inside path: relative to FOLDER, the cache's name for it */
    int64_t size, mtime;
    long row; /* in the new cache, -1 until encoded or found (and if unreadable) */
} image_entry;

typedef struct {
    image_entry *items;
    size_t count, cap;
    int failed; /* entries that could not be listed or stat'ed (reported) */
} image_list;

int64_t search_mtime_ns(const struct stat *st) {
    return (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
}

/* One image found by the walk: its size and time, or a report when it cannot be stat'ed. */
static int list_add(image_list *l, char *path, const char *folder) {
    struct stat st;
    if (stat(path, &st) != 0) {
        fprintf(stderr, "vit search: %s: %s\n", path, strerror(errno));
        l->failed++;
        free(path);
        return 0;
    }
    if (l->count == l->cap) {
        const size_t cap = l->cap ? l->cap * 2 : 256;
        image_entry *items = realloc(l->items, sizeof *items * cap);
        if (!items) return free(path), -1;
        l->items = items, l->cap = cap;
    }
    const size_t len = strlen(folder);
    const char *rel = strncmp(path, folder, len) == 0 ? path + len : path;
    while (*rel == '/') rel++;
    l->items[l->count++] = (image_entry){path, rel, (int64_t)st.st_size, search_mtime_ns(&st), -1};
    return 0;
}

static void list_free(image_list *l) {
    for (size_t i = 0; i < l->count; i++) free(l->items[i].path);
    free(l->items);
}

/* Every image under folder, in the walk's order; 0, or -1 after saying why. */
static int list_images(const char *folder, image_list *l) {
    vit_error err = {0};
    imagefolder_walk *w = imagefolder_walk_tree(folder, &err);
    if (!w) {
        fprintf(stderr, "vit search: %s\n", err.msg);
        return -1;
    }
    imagefolder_entry e;
    int rc = 0, more;
    while (rc == 0 && (more = imagefolder_walk_next(w, &e, &err)) == 1) {
        if (e.unreadable) {
            fprintf(stderr, "vit search: %s\n", err.msg);
            l->failed++;
            free(e.path);
        } else {
            rc = list_add(l, e.path, folder);
        }
    }
    if (rc == 0 && more < 0) rc = -1;
    if (rc != 0) fprintf(stderr, "vit search: out of memory listing %s\n", folder);
    imagefolder_walk_close(w);
    return rc;
}

/* ---- the cache: where, and what it is keyed by ---- */

uint64_t search_fnv1a(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* "name size mtime_ns" of a file of the model's folder ("name -" when absent). */
void search_file_stamp(char *buf, size_t size, const char *dir, const char *name) {
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    struct stat st;
    if (stat(path, &st) == 0)
        snprintf(buf, size, "%s %lld %lld\n", name, (long long)st.st_size,
                 (long long)search_mtime_ns(&st));
    else
        snprintf(buf, size, "%s -\n", name);
}

/* What the images' rows depend on besides the images: which folder, which model (where, what
 * computes, at which size, EXIF or not) in *identity, which names the default cache file; and the
 * model's files' sizes and times too in *key, which the cache file records. Both malloc'ed; -1
 * when out of memory. */
static int cache_key(const char *folder, const char *model_dir, vit_context *ctx,
                     const vit_params *params, char **identity, char **key) {
    char real_folder[PATH_MAX], real_model[PATH_MAX];
    if (!realpath(folder, real_folder)) snprintf(real_folder, sizeof real_folder, "%s", folder);
    if (!realpath(model_dir, real_model)) snprintf(real_model, sizeof real_model, "%s", model_dir);
    int c, h, w;
    vit_input_shape(ctx, &c, &h, &w);
    char stamps[5][64];
    search_file_stamp(stamps[0], sizeof stamps[0], model_dir, "config.json");
    const char *weights = weights_file_name(model_dir); /* the file a model's weights are by */
    search_file_stamp(stamps[1], sizeof stamps[1], model_dir,
                      weights ? weights : "model.safetensors");
    search_file_stamp(stamps[2], sizeof stamps[2], model_dir, "preprocessor_config.json");
    /* an open_clip folder's config and weights (absent: nothing, so other keys stay as they
     * were) */
    search_file_stamp(stamps[3], sizeof stamps[3], model_dir, "open_clip_config.json");
    const char *oc = weights_file_name_open_clip(model_dir);
    search_file_stamp(stamps[4], sizeof stamps[4], model_dir,
                      oc ? oc : "open_clip_model.safetensors");
    for (int i = 3; i < 5; i++)
        if (strstr(stamps[i], " -\n")) stamps[i][0] = 0;
    *key = NULL;
    if (asprintf(identity, "folder %s\nmodel %s\ncompute %s\ninput %dx%dx%d\nexif %d\n",
                 real_folder, real_model, vit_compute(ctx), c, h, w, params->exif_orientation) < 0)
        return *identity = NULL, -1;
    if (asprintf(key, "%s%s%s%s%s%s", *identity, stamps[0], stamps[1], stamps[2], stamps[3],
                 stamps[4]) < 0)
        return *key = NULL, -1;
    return 0;
}

/* mkdir -p of path's folder (mode 0700, as XDG asks of cache folders). */
int search_make_parents(const char *path) {
    char dir[PATH_MAX + 128];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir) return 0;
    *slash = 0;
    for (char *p = dir + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            if (mkdir(dir, 0700) != 0 && errno != EEXIST) return -1;
            *p = '/';
        }
    return mkdir(dir, 0700) != 0 && errno != EEXIST ? -1 : 0;
}

/* The default cache file: $XDG_CACHE_HOME (else ~/.cache) /vit/search/NAME-HASH.safetensors,
 * NAME the folder's own name, HASH that of the identity. 0, or -1 when neither is set. */
int search_default_cache(const char *folder, const char *identity, char *buf, size_t size) {
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    char base[PATH_MAX];
    if (xdg && xdg[0] == '/')
        snprintf(base, sizeof base, "%s", xdg);
    else if (home && *home)
        snprintf(base, sizeof base, "%s/.cache", home);
    else
        return -1;
    char real[PATH_MAX];
    if (!realpath(folder, real)) snprintf(real, sizeof real, "%s", folder);
    while (strlen(real) > 1 && real[strlen(real) - 1] == '/') real[strlen(real) - 1] = 0;
    const char *name = strrchr(real, '/') ? strrchr(real, '/') + 1 : real;
    snprintf(buf, size, "%s/vit/search/%.64s-%016llx.safetensors", base, *name ? name : "root",
             (unsigned long long)search_fnv1a(identity));
    return 0;
}

/* ---- encoding what the cache lacks ---- */

typedef struct {
    image_list *images;
    embed_cache *cache;
    size_t encoded;
} encode_state;

static int add_encoded(void *user, const char *path, size_t tag, const float *row) {
    (void)path;
    encode_state *s = user;
    image_entry *e = &s->images->items[tag];
    vit_error err = {0};
    if (embed_cache_add(s->cache, e->rel, e->size, e->mtime, row, &err) != 0) {
        fprintf(stderr, "vit search: %s\n", err.msg);
        return -1;
    }
    e->row = (long)s->cache->count - 1;
    s->encoded++;
    return 0;
}

/* The old cache file's rows for the images it has unchanged, the others encoded: every readable
 * image's row in *cache (e->row). *hits and *encoded count them. 0, or -1 after saying why. */
static int fill(const search_options *o, vit_context *ctx, image_list *images,
                const embed_cache *old, embed_cache *cache, size_t *hits, size_t *encoded,
                int *failed) {
    encode_state s = {images, cache, 0};
    image_batch *b = image_batch_create(ctx, "search", o->common.params.max_batch, VIT_POOL_JOINT,
                                        cache->dim, add_encoded, &s);
    if (!b) {
        fprintf(stderr, "vit search: out of memory for batches of %d images\n",
                o->common.params.max_batch);
        return -1;
    }
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < images->count; i++) {
        image_entry *e = &images->items[i];
        const long at = old ? embed_cache_find(old, e->rel, e->size, e->mtime) : -1;
        if (at < 0) {
            rc = image_batch_add(b, e->path, i);
            continue;
        }
        vit_error err = {0};
        rc = embed_cache_add(cache, e->rel, e->size, e->mtime, old->rows + at * (size_t)old->dim,
                             &err);
        if (rc != 0) fprintf(stderr, "vit search: %s\n", err.msg);
        e->row = (long)cache->count - 1;
        ++*hits;
    }
    if (rc == 0) rc = image_batch_flush(b);
    *failed += image_batch_failed(b);
    *encoded = s.encoded;
    image_batch_free(b);
    return rc;
}

/* ---- ranking ---- */

typedef struct {
    double score;
    size_t image;
} ranked;

/* Highest score first; equal scores in the walk's order; NaN last. */
static int by_score(const void *pa, const void *pb) {
    const ranked *a = pa, *b = pb;
    if (a->score > b->score || (isnan(b->score) && !isnan(a->score))) return -1;
    if (a->score < b->score || (isnan(a->score) && !isnan(b->score))) return 1;
    return a->image < b->image ? -1 : a->image > b->image;
}

static void print_results(const search_options *o, const char *query, const image_list *images,
                          const ranked *r, size_t n) {
    if (o->json) {
        json_writer w = json_begin(stdout);
        json_object(&w);
        json_key(&w, "query");
        json_string(&w, query);
        json_key(&w, "results");
        json_array(&w);
        for (size_t i = 0; i < n; i++) {
            json_object(&w);
            json_key(&w, "rank");
            json_int(&w, (long long)i + 1);
            json_key(&w, "score");
            json_float(&w, (float)r[i].score);
            json_key(&w, "file");
            json_string(&w, images->items[r[i].image].path);
            json_end(&w);
        }
        json_end(&w);
        json_end(&w);
        json_line(&w);
        return;
    }
    const int width = snprintf(NULL, 0, "%zu", n);
    printf("%s\n", query);
    for (size_t i = 0; i < n; i++)
        printf("  %*zu  %7.4f  %s\n", width, i + 1, r[i].score, images->items[r[i].image].path);
}

/* Each query against every encoded image: the top o->top by score. */
static int rank(const search_options *o, const float *queries, const image_list *images,
                const embed_cache *cache) {
    ranked *r = malloc(sizeof *r * (images->count ? images->count : 1));
    if (!r) return fprintf(stderr, "vit search: out of memory\n"), -1;
    const int D = cache->dim;
    for (int q = 0; q < o->num_queries; q++) {
        size_t n = 0;
        for (size_t i = 0; i < images->count; i++) {
            if (images->items[i].row < 0) continue;
            const float *x = cache->rows + (size_t)images->items[i].row * D,
                        *t = queries + (size_t)q * D;
            double dot = 0;
            for (int d = 0; d < D; d++) dot += (double)x[d] * t[d];
            r[n++] = (ranked){dot, i};
        }
        qsort(r, n, sizeof *r, by_score);
        print_results(o, o->queries[q].text, images, r,
                      o->top > 0 && (size_t)o->top < n ? (size_t)o->top : n);
    }
    free(r);
    return 0;
}

/* ---- the command ---- */

const char *search_open_cache(const search_options *o, const char *identity, const char *key,
                              int dim, const char *items, char *buf, size_t size, embed_cache *old,
                              int *have_old) {
    *have_old = 0;
    if (o->no_cache) return NULL;
    if (o->cache) {
        snprintf(buf, size, "%s", o->cache);
    } else if (search_default_cache(o->folder, identity, buf, size) != 0) {
        fprintf(stderr,
                "vit search: warning: no cache (neither XDG_CACHE_HOME nor HOME is set; "
                "--cache FILE names one): every %s is encoded\n",
                items);
        return NULL;
    }
    struct stat st;
    if (stat(buf, &st) != 0) return buf; /* none yet (or unreachable: writing it will say) */
    vit_error err = {0};
    if (embed_cache_read(buf, old, &err) != 0) {
        fprintf(stderr, "vit search: warning: %s; the cache is ignored and rebuilt\n", err.msg);
        return buf;
    }
    if (strcmp(old->key, key) != 0 || old->dim != dim) {
        if (o->verbose)
            fprintf(stderr,
                    "vit search: %s was made by another model or with other settings; "
                    "rebuilt\n",
                    buf);
        embed_cache_free(old);
        return buf;
    }
    *have_old = 1;
    return buf;
}

/* Writes the new cache when it differs from the old; an unwritable one is a warning. */
static void save_cache(const char *file, const embed_cache *cache, int have_old, size_t old_count,
                       size_t hits, size_t encoded, const search_options *o, char *note,
                       size_t note_size) {
    snprintf(note, note_size, "unchanged");
    if (!file || cache->count == 0 || (have_old && encoded == 0 && hits == old_count)) return;
    vit_error err = {0};
    if (!o->cache && search_make_parents(file) != 0)
        snprintf(err.msg, sizeof err.msg, "%.400s: cannot make its folder: %s", file,
                 strerror(errno));
    else if (embed_cache_write(file, cache, &err) == 0)
        return (void)snprintf(note, note_size, "written");
    fprintf(stderr,
            "vit search: warning: the cache cannot be written (%s): the images will be "
            "encoded again next time\n",
            err.msg);
    snprintf(note, note_size, "not written");
}

static int search(const search_options *o, vit_context *ctx, const char *model_dir,
                  const float *queries, int dim) {
    image_list images = {0};
    if (list_images(o->folder, &images) != 0) return list_free(&images), 1;
    char *identity, *key, file[PATH_MAX + 128];
    if (cache_key(o->folder, model_dir, ctx, &o->common.params, &identity, &key) != 0) {
        fprintf(stderr, "vit search: out of memory\n");
        free(identity);
        list_free(&images);
        return 1;
    }
    embed_cache old = {0}, cache;
    int have_old;
    const char *cache_file =
        search_open_cache(o, identity, key, dim, "image", file, sizeof file, &old, &have_old);
    vit_error err = {0};
    const int made = embed_cache_init(&cache, key, dim, &err);
    free(identity);
    free(key);
    if (made != 0) {
        fprintf(stderr, "vit search: %s\n", err.msg);
        embed_cache_free(&old);
        list_free(&images);
        return 1;
    }
    size_t hits = 0, encoded = 0;
    int failed = images.failed;
    int rc = fill(o, ctx, &images, have_old ? &old : NULL, &cache, &hits, &encoded, &failed);
    char note[32] = "";
    if (rc == 0)
        save_cache(cache_file, &cache, have_old, old.count, hits, encoded, o, note, sizeof note);
    if (rc == 0 && o->verbose) {
        fprintf(stderr, "vit search: %zu images: %zu encoded, %zu from the cache", cache.count,
                encoded, hits);
        if (have_old && old.count > hits)
            fprintf(stderr, ", %zu dropped from it (changed or gone)", old.count - hits);
        if (failed) fprintf(stderr, ", %d unreadable", failed);
        if (cache_file)
            fprintf(stderr, "; cache %s (%s)\n", cache_file, note);
        else
            fprintf(stderr, "; no cache\n");
    }
    if (rc == 0 && cache.count == 0) {
        fprintf(stderr, "vit search: %s: no image%s\n", o->folder,
                failed ? " that could be read" : "s under it");
        rc = -1;
    }
    if (rc == 0) rc = rank(o, queries, &images, &cache);
    embed_cache_free(&cache);
    embed_cache_free(&old);
    list_free(&images);
    return rc != 0 ? 1 : failed ? 1 : 0;
}

int cli_search(int argc, char **argv) {
    search_options o = {
        .common.params = vit_default_params(), .top = 10, .column = TEXT_COLUMN_LINES};
    o.common.params.max_batch = 16;
    const cli_outcome parsed = parse_options(argc, argv, &o);
    if (parsed != CLI_PARSED) return free(o.queries), cli_exit_status(parsed);
    char text_dir[4096];
    if (!cli_model_dir("search", o.common.model, text_dir, sizeof text_dir))
        return free(o.queries), 1;
    if (cli_is_text_model(text_dir)) {
        const int rc = search_texts(&o, text_dir);
        free(o.queries);
        return rc;
    }
    if (o.column.index >= 0 || o.column.name) {
        free(o.queries);
        return cli_exit_status(
            cli_usage_error(&command, "--column is for a FILE of texts, searched by a text model"));
    }
    if (!cli_is_dir(o.folder)) {
        struct stat st;
        fprintf(stderr, "vit search: %s: %s\n", o.folder,
                stat(o.folder, &st) != 0
                    ? strerror(errno)
                    : "not a folder (a file of texts is searched with a text model: -m a "
                      "sentence-transformers folder or another text encoder)");
        free(o.queries);
        return 1;
    }
    char model_dir[4096];
    vit_context *ctx = cli_load_image_model(&command, &o.common, model_dir, sizeof model_dir);
    if (!ctx) return free(o.queries), 1;
    const int dim = vit_joint_dim(ctx);
    if (!dim) {
        fprintf(stderr,
                "vit search: %s: not a CLIP or SigLIP model (search needs an image and a text "
                "tower in one space)\n",
                model_dir);
        vit_free(ctx);
        free(o.queries);
        return 1;
    }
    float *queries = embed_queries(&o, ctx, model_dir, dim);
    const int rc = queries ? search(&o, ctx, model_dir, queries, dim) : 1;
    free(queries);
    free(o.queries);
    vit_free(ctx);
    return rc;
}
