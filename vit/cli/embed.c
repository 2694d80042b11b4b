/* vit embed: one feature vector per image (vit_embed) or per sentence (vit_text_embed), in input
 * order, written as safetensors, .npy, or text lines, with the list of inputs beside it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vit/base/file.h"
#include "vit/base/strlist.h"
#include "vit/cli/cli.h"
#include "vit/data/imagefolder.h"
#include "vit/io/safetensors.h"
#include "vit/model/config.h"

enum { OPT_OUTPUT = 1, OPT_POOL };

static const cli_option options[] = {
    CLI_MODEL_OPTION("an image (ViT, DeiT) or text (BERT) model", CLI_MODEL_DEFAULT),
    {OPT_OUTPUT, "output", 'o', "OUT.safetensors|OUT.npy|-",
     "where the features go (required): an F32 tensor 'embeddings' [n, hidden], or a .npy array; "
     "'-': one line per input on stdout, its name, a tab, the numbers",
     NULL},
    {OPT_POOL, "pool", 0, "cls|mean|pooler",
     "images: the final LayerNorm at CLS, or the mean of the patch tokens; text: the hidden state "
     "at [CLS], the mean over the tokens, or the pooler's output",
     "cls"},
    CLI_EXIF_UPRIGHT,
    CLI_BATCH_OPTION("inputs per forward pass", "16"),
    CLI_THREADS_OPTION,
    CLI_SIZE_OPTION("run at N x N (position embeddings interpolated)"),
    CLI_PIXELS_OPTION,
    CLI_BACKEND_OPTION,
    CLI_PRECISION_OPTION,
};

static const cli_command command = {
    "embed",
    "write feature vectors of images or sentences, for retrieval and clustering",
    "[options] FILE|DIR... -o OUT.safetensors|OUT.npy|-",
    "Image models: FILE is an image, DIR a folder searched for images (recursively, sorted). Text\n"
    "models: each FILE holds one sentence per line. The rows follow the inputs' order; the "
    "inputs'\n"
    "names go to OUT's name with .txt for its extension (and into the safetensors metadata,\n"
    "'inputs', as a JSON list). An input that cannot be read is reported and left out (exit 1).",
    options,
    sizeof options / sizeof options[0]};

const cli_command *cli_embed_command(void) {
    return &command;
}

typedef struct {
    const char *out;
    vit_pool pool;
    cli_common common;
    char **args;
    int num_args;
} embed_options;

static int parse_pool(const cli_parser *p, vit_pool *pool) {
    static const char *const names[] = {"cls", "mean", "pooler"};
    const int i = cli_choice(p, names, 3);
    if (i >= 0) *pool = (vit_pool)i;
    return i < 0 ? -1 : 0;
}

static int embed_option(const cli_parser *p, int id, void *user) {
    embed_options *o = user;
    if (id == OPT_OUTPUT) o->out = p->value;
    return id == OPT_POOL ? parse_pool(p, &o->pool) : 0;
}

static cli_outcome parse_options(int argc, char **argv, embed_options *o) {
    cli_parser p;
    const cli_outcome parsed = cli_parse(&p, &command, argc, argv, &o->common, embed_option, o);
    if (parsed != CLI_PARSED) return parsed;
    if (p.num_rest < 1 || !o->out)
        return cli_usage_error(&command, "expected FILE|DIR... and -o OUT");
    o->args = p.rest;
    o->num_args = p.num_rest;
    return CLI_PARSED;
}

/* ---- the features, growing as inputs are read ---- */

typedef struct {
    int dim;
    size_t rows, cap;
    float *data;  /* [rows, dim] */
    char **names; /* [rows] */
} feature_table;

static int table_add(feature_table *t, const char *name, const float *row) {
    if (t->rows == t->cap) {
        const size_t cap = t->cap ? t->cap * 2 : 64;
        float *data = realloc(t->data, sizeof(float) * cap * t->dim);
        if (data) t->data = data;
        char **names = realloc(t->names, sizeof(char *) * cap);
        if (names) t->names = names;
        if (!data || !names) return -1;
        t->cap = cap;
    }
    if (!(t->names[t->rows] = strdup(name))) return -1;
    memcpy(t->data + t->rows * t->dim, row, sizeof(float) * t->dim);
    t->rows++;
    return 0;
}

static void table_free(feature_table *t) {
    for (size_t i = 0; i < t->rows; i++) free(t->names[i]);
    free(t->names);
    free(t->data);
}

/* ---- images ---- */

typedef struct {
    vit_context *ctx;
    int batch, failed;
    float *pixels, *features; /* [batch, C·H·W], [batch, D] */
    char **paths;             /* [batch] the inputs waiting for the next forward */
    int *ok;                  /* [batch] preprocessed */
    int pending;
} image_batch;

/* Preprocesses the pending images in parallel, runs one forward, adds the rows in order. */
static int flush_images(image_batch *b, vit_pool pool, feature_table *t) {
    const size_t floats = vit_input_floats(b->ctx);
    vit_error *errs = calloc((size_t)b->pending, sizeof *errs);
    if (!errs) return -1;
#pragma omp parallel for schedule(dynamic)
    for (int i = 0; i < b->pending; i++)
        b->ok[i] = vit_preprocess_file(b->ctx, b->paths[i], b->pixels + i * floats, &errs[i]) == 0;
    /* the forward on the readable ones, packed to the front */
    int n = 0;
    for (int i = 0; i < b->pending; i++) {
        if (!b->ok[i]) {
            fprintf(stderr, "vit embed: %s\n", errs[i].msg);
            b->failed++;
            continue;
        }
        if (n != i) memcpy(b->pixels + n * floats, b->pixels + i * floats, sizeof(float) * floats);
        n++;
    }
    free(errs);
    vit_error err = {0};
    int rc = n > 0 ? vit_embed(b->ctx, b->pixels, n, pool, b->features, &err) : 0;
    if (rc != 0) fprintf(stderr, "vit embed: %s\n", err.msg);
    for (int i = 0, row = 0; rc == 0 && i < b->pending; i++)
        if (b->ok[i] && table_add(t, b->paths[i], b->features + (size_t)row++ * t->dim) != 0)
            rc = -1;
    for (int i = 0; i < b->pending; i++) free(b->paths[i]);
    b->pending = 0;
    return rc;
}

static int queue_image(image_batch *b, const char *path, vit_pool pool, feature_table *t) {
    if (!(b->paths[b->pending++] = strdup(path))) return -1;
    return b->pending == b->batch ? flush_images(b, pool, t) : 0;
}

static int embed_dir(image_batch *b, const char *dir, vit_pool pool, feature_table *t) {
    vit_error err = {0};
    imagefolder_walk *w = imagefolder_walk_tree(dir, &err);
    if (!w) {
        fprintf(stderr, "vit embed: %s\n", err.msg);
        b->failed++;
        return 0;
    }
    imagefolder_entry e;
    int rc = 0, more;
    while (rc == 0 && (more = imagefolder_walk_next(w, &e, &err)) == 1) {
        if (e.unreadable) {
            fprintf(stderr, "vit embed: %s\n", err.msg);
            b->failed++;
        } else {
            rc = queue_image(b, e.path, pool, t);
        }
        free(e.path);
    }
    if (rc == 0 && more < 0) rc = -1;
    imagefolder_walk_close(w);
    return rc;
}

static int embed_images(const embed_options *o, feature_table *t) {
    image_batch b = {0};
    char model_dir[4096];
    if (!(b.ctx = cli_load_image_model(&command, &o->common, model_dir, sizeof model_dir)))
        return 1;
    if (o->pool == VIT_POOL_POOLER) {
        fprintf(stderr, "vit embed: --pool pooler is for text models (images: cls or mean)\n");
        vit_free(b.ctx);
        return 2;
    }
    b.batch = o->common.params.max_batch;
    t->dim = vit_hidden_size(b.ctx);
    b.pixels = malloc(sizeof(float) * vit_input_floats(b.ctx) * b.batch);
    b.features = malloc(sizeof(float) * t->dim * b.batch);
    b.paths = calloc((size_t)b.batch, sizeof *b.paths);
    b.ok = calloc((size_t)b.batch, sizeof *b.ok);
    int rc = b.pixels && b.features && b.paths && b.ok ? 0 : -1;
    for (int i = 0; rc == 0 && i < o->num_args; i++)
        rc = cli_is_dir(o->args[i]) ? embed_dir(&b, o->args[i], o->pool, t)
                                    : queue_image(&b, o->args[i], o->pool, t);
    if (rc == 0 && b.pending > 0) rc = flush_images(&b, o->pool, t);
    if (rc != 0) fprintf(stderr, "vit embed: out of memory, or the forward failed\n");
    free(b.pixels);
    free(b.features);
    free(b.paths);
    free(b.ok);
    vit_free(b.ctx);
    return rc != 0 ? 1 : b.failed ? 3 : 0;
}

/* ---- text ---- */

static int embed_lines(vit_text_context *ctx, const strlist *lines, const char *file, int batch,
                       vit_pool pool, feature_table *t) {
    float *features = malloc(sizeof(float) * t->dim * batch);
    if (!features) return -1;
    int rc = 0;
    for (int start = 0; rc == 0 && start < lines->count; start += batch) {
        const int n = lines->count - start < batch ? lines->count - start : batch;
        vit_error err = {0};
        if (vit_text_embed(ctx, (const char *const *)lines->lines + start, lines->lengths + start,
                           n, pool, features, &err) != 0) {
            fprintf(stderr, "vit embed: %s: %s\n", file, err.msg);
            rc = -1;
        }
        for (int i = 0; rc == 0 && i < n; i++) {
            char name[4200];
            snprintf(name, sizeof name, "%s:%d", file, start + i + 1);
            if (table_add(t, name, features + (size_t)i * t->dim) != 0) rc = -1;
        }
    }
    free(features);
    return rc;
}

static int embed_texts(const embed_options *o, const char *model_dir, feature_table *t) {
    const vit_text_params tp = cli_text_params(&o->common.params);
    vit_error err = {0};
    vit_text_context *ctx = vit_text_load(model_dir, &tp, &err);
    if (!ctx) {
        fprintf(stderr, "vit embed: %s\n", err.msg);
        return 1;
    }
    t->dim = vit_text_hidden_size(ctx);
    int rc = 0, failed = 0;
    for (int i = 0; rc == 0 && i < o->num_args; i++) {
        strlist lines;
        if (strlist_read(&lines, o->args[i], 1 << 30, STRLIST_SKIP_BLANK, &err) != 0) {
            fprintf(stderr, "vit embed: %s\n", err.msg);
            failed++;
            continue;
        }
        rc = embed_lines(ctx, &lines, o->args[i], tp.max_batch, o->pool, t);
        strlist_free(&lines);
    }
    vit_text_free(ctx);
    return rc != 0 ? 1 : failed ? 3 : 0;
}

/* ---- output ---- */

/* OUT with its extension replaced by .txt */
static void list_path(const char *out, char *buf, size_t size) {
    const char *slash = strrchr(out, '/'), *dot = strrchr(out, '.');
    const int len = dot && (!slash || dot > slash) ? (int)(dot - out) : (int)strlen(out);
    snprintf(buf, size, "%.*s.txt", len, out);
}

static int write_list(const char *out, const feature_table *t, vit_error *err) {
    char path[4200];
    list_path(out, path, sizeof path);
    FILE *f = fopen(path, "w");
    if (!f) return vit_fail(err, "%s: %s", path, strerror(errno));
    for (size_t i = 0; i < t->rows; i++) fprintf(f, "%s\n", t->names[i]);
    return fclose(f) == 0 ? 0 : vit_fail(err, "%s: %s", path, strerror(errno));
}

/* NumPy's format 1.0: magic, version, a header dict padded to 64 bytes, then the data. */
static int write_npy(const char *path, const feature_table *t, vit_error *err) {
    char dict[128];
    int n =
        snprintf(dict, sizeof dict,
                 "{'descr': '<f4', 'fortran_order': False, 'shape': (%zu, %d), }", t->rows, t->dim);
    const int total = (10 + n + 1 + 63) / 64 * 64;
    char header[256];
    memcpy(header, "\x93NUMPY\x01\x00", 8);
    header[8] = (char)((total - 10) & 0xff), header[9] = (char)((total - 10) >> 8);
    memcpy(header + 10, dict, (size_t)n);
    memset(header + 10 + n, ' ', (size_t)(total - 10 - n - 1));
    header[total - 1] = '\n';
    FILE *f = fopen(path, "wb");
    if (!f) return vit_fail(err, "%s: %s", path, strerror(errno));
    const size_t count = t->rows * t->dim;
    const int ok = fwrite(header, 1, (size_t)total, f) == (size_t)total &&
                   fwrite(t->data, sizeof(float), count, f) == count;
    return fclose(f) == 0 && ok ? 0 : vit_fail(err, "%s: %s", path, strerror(errno));
}

static int write_safetensors(const char *path, const feature_table *t, vit_error *err) {
    /* the inputs' names as a JSON list, in the metadata */
    char *names = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&names, &size);
    if (!f) return vit_fail(err, "out of memory");
    json_writer w = json_begin(f);
    json_array(&w);
    for (size_t i = 0; i < t->rows; i++) json_string(&w, t->names[i]);
    json_end(&w);
    if (fclose(f) != 0 || !names) return free(names), vit_fail(err, "out of memory");
    const st_entry e = {
        .name = "embeddings", .ndim = 2, .shape = {(int64_t)t->rows, t->dim}, .data = t->data};
    const char *keys[] = {"inputs"}, *values[] = {names};
    const int rc = st_write_f32_meta(path, &e, 1, keys, values, 1, err);
    free(names);
    return rc;
}

static int write_output(const char *out, const feature_table *t) {
    vit_error err = {0};
    int rc = 0;
    if (strcmp(out, "-") == 0) {
        for (size_t i = 0; i < t->rows; i++) {
            printf("%s\t", t->names[i]);
            for (int d = 0; d < t->dim; d++)
                printf("%s%.9g", d ? " " : "", t->data[i * t->dim + d]);
            printf("\n");
        }
        return 0;
    }
    const size_t len = strlen(out);
    if (len > 4 && strcmp(out + len - 4, ".npy") == 0)
        rc = write_npy(out, t, &err);
    else
        rc = write_safetensors(out, t, &err);
    if (rc == 0) rc = write_list(out, t, &err);
    if (rc != 0) fprintf(stderr, "vit embed: %s\n", err.msg);
    return rc;
}

/* Whether model_dir holds a BERT (text) model; -1 when its config cannot be read. */
static int is_text_model(const char *model_dir) {
    char path[4200];
    snprintf(path, sizeof path, "%s/config.json", model_dir);
    vit_error err = {0};
    char *json = vit_read_file(path, 1 << 24, NULL, &err);
    if (!json) return 0; /* vit_load says what is wrong */
    model_config cfg;
    const int ok = model_config_parse(json, path, &cfg, &err) == 0;
    free(json);
    const int text = ok && cfg.kind == MODEL_BERT;
    if (ok) model_config_free(&cfg);
    return text;
}

int cli_embed(int argc, char **argv) {
    embed_options o = {.common.params = vit_default_params()};
    o.common.params.max_batch = 16;
    const cli_outcome parsed = parse_options(argc, argv, &o);
    if (parsed != CLI_PARSED) return cli_exit_status(parsed);
    char model_dir[4096];
    cli_model_dir(o.common.model, model_dir, sizeof model_dir);
    feature_table t = {0};
    int rc = is_text_model(model_dir) ? embed_texts(&o, model_dir, &t) : embed_images(&o, &t);
    if ((rc == 0 || rc == 3) && write_output(o.out, &t) != 0) rc = 1;
    table_free(&t);
    return rc == 3 ? 1 : rc;
}
