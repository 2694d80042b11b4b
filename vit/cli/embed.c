/* vit embed: one feature vector per image (vit_embed) or per text (vit_text_embed), in input
 * order, written as safetensors, .npy, or text lines, with the list of inputs beside it. A CLIP or
 * SigLIP folder gives both kinds in its joint space (VIT_POOL_JOINT, its default). Texts can be
 * shared among processes under mpirun (embed_inputs). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vit/base/dist.h"
#include "vit/base/file.h"
#include "vit/base/strlist.h"
#include "vit/cli/cli.h"
#include "vit/cli/image_batch.h"
#include "vit/cli/text_lines.h"
#include "vit/data/imagefolder.h"
#include "vit/io/safetensors.h"

enum {
    OPT_OUTPUT = 1,
    OPT_POOL,
    OPT_TEXT,
    OPT_TEXT_FILE,
    OPT_PROMPT,
    OPT_PROMPT_TEXT,
    OPT_DIMENSIONS,
    OPT_COLUMN
};

static const cli_option options[] = {
    CLI_MODEL_OPTION("an image (ViT, DeiT), text (BERT, a sentence-transformers folder) or "
                     "image-text (CLIP, SigLIP) model",
                     CLI_MODEL_DEFAULT),
    {OPT_OUTPUT, "output", 'o', "OUT.safetensors|OUT.npy|-",
     "where the features go (required): an F32 tensor 'embeddings' [n, dim], or a .npy array; "
     "'-': one line per input on stdout, its name, a tab, the numbers",
     NULL},
    {OPT_TEXT, "text", 0, "TEXT",
     "a text to embed (repeatable): with a CLIP or SigLIP model, by its text tower into the "
     "images' joint space",
     NULL},
    {OPT_TEXT_FILE, "text-file", 0, "FILE", "texts to embed, one per line (repeatable)", NULL},
    {OPT_POOL, "pool", 0,
     "cls|mean|max|mean_sqrt_len|weightedmean|lasttoken|pooler|joint|patches|projection|sentence",
     "images: the final LayerNorm at CLS, or the mean of the patch tokens; text: the hidden state "
     "at [CLS], the mean, the largest value, the sum / sqrt(count) or the position-weighted mean "
     "over the tokens, the last token's, or the pooler's output (sentence-transformers' Pooling "
     "modes; the pooling alone: a folder's Dense and Normalize modules are not run); sentence: a "
     "sentence-transformers folder's own pipeline (modules.json: SentenceTransformer.encode's "
     "output); joint: CLIP's and SigLIP's normalised embedding in the joint image-text space "
     "(image_embeds, text_embeds); patches: images' dense features, every patch token after the "
     "final LayerNorm (CLS and DINOv2's registers left out), [n, grid_h, grid_w, dim]; "
     "projection: a CLIP tower's projection of its pooled row, not normalised (image_embeds, "
     "text_embeds of a ...WithProjection tower)",
     "sentence for a sentence-transformers folder, joint for CLIP and SigLIP, projection for a "
     "CLIP tower with its projection alone, pooler for a SigLIP tower alone (SiglipVisionModel, "
     "SiglipTextModel; mean for an image tower without its head), else cls"},
    {OPT_PROMPT, "prompt", 0, "NAME",
     "texts: put the folder's prompt NAME (config_sentence_transformers.json's prompts, e.g. "
     "query) before each text",
     "its default_prompt_name, else none"},
    {OPT_PROMPT_TEXT, "prompt-text", 0, "TEXT",
     "texts: put TEXT before each text (\"query: \"); '' an empty prompt, as "
     "SentenceTransformer.encode's prompt='' (with include_prompt false, [CLS] is left out)",
     NULL},
    {OPT_DIMENSIONS, "dimensions", 0, "N",
     "texts: keep the first N numbers of each embedding (Matryoshka models), normalised again "
     "when the embedding is (a pipeline ending in Normalize, joint)",
     "all"},
    {OPT_COLUMN, "column", 0, "N|NAME",
     "texts: each FILE is a TSV and the text is its column N (from 1, as cut -f counts), or the "
     "column the first line (a header) names NAME; a row is named FILE:LINE as a line is",
     "each whole line, blank lines left out"},
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
    "write feature vectors of images or texts, for retrieval and clustering",
    "[options] FILE|DIR...|--text TEXT... -o OUT.safetensors|OUT.npy|-",
    "Image models: FILE is an image, DIR a folder searched for images (recursively, sorted). Text\n"
    "models: each FILE holds one text per line. --text and --text-file embed texts, in the order\n"
    "given (before a text model's FILEs): with a CLIP or SigLIP folder, by its text tower into\n"
    "the joint space of its images, so an image's row times a text's row is their cosine\n"
    "similarity. The rows follow the inputs' order; the inputs' names (an image's path, "
    "FILE:LINE,\n"
    "or the text itself) go to OUT's name with .txt for its extension (and into the safetensors\n"
    "metadata, 'inputs', as a JSON list). An input that cannot be read is reported and left out\n"
    "(exit 1). A file's texts go through the model in batches of texts of similar token counts\n"
    "(a batch is padded to its longest), their rows still in the file's order. Texts over N\n"
    "processes: mpirun -np N vit embed ... (as root, mpirun also wants --allow-run-as-root) deals\n"
    "the batches out among them; process 0 writes the same file, byte for byte, as one process.",
    options,
    sizeof options / sizeof options[0]};

const cli_command *cli_embed_command(void) {
    return &command;
}

/* The texts of --text and --text-file, in the order given. */
typedef struct {
    const char *value;
    int is_file;
} text_arg;

typedef struct {
    const char *out;
    int pool; /* a vit_pool, or -1: the model's default */
    const char *prompt, *prompt_text;
    int dimensions;
    text_column column;
    cli_common common;
    text_arg *texts;
    int num_texts;
    char **args;
    int num_args;
} embed_options;

static int parse_pool(const cli_parser *p, int *pool) {
    static const char *const names[] = {"cls",          "mean",       "max",     "mean_sqrt_len",
                                        "weightedmean", "lasttoken",  "pooler",  "joint",
                                        "patches",      "projection", "sentence"};
    static const vit_pool pools[] = {
        VIT_POOL_CLS,           VIT_POOL_MEAN,       VIT_POOL_MAX,     VIT_POOL_MEAN_SQRT_LEN,
        VIT_POOL_WEIGHTED_MEAN, VIT_POOL_LAST_TOKEN, VIT_POOL_POOLER,  VIT_POOL_JOINT,
        VIT_POOL_PATCHES,       VIT_POOL_PROJECTION, VIT_POOL_SENTENCE};
    const int i = cli_choice(p, names, 11);
    if (i >= 0) *pool = (int)pools[i];
    return i < 0 ? -1 : 0;
}

static int embed_option(const cli_parser *p, int id, void *user) {
    embed_options *o = user;
    if (id == OPT_OUTPUT) o->out = p->value;
    if (id == OPT_PROMPT) o->prompt = p->value;
    if (id == OPT_PROMPT_TEXT) o->prompt_text = p->value;
    if (id == OPT_DIMENSIONS) return cli_int(p, 1, 1 << 20, &o->dimensions);
    if (id == OPT_COLUMN) return text_column_parse(p, &o->column);
    if (id == OPT_TEXT || id == OPT_TEXT_FILE)
        o->texts[o->num_texts++] = (text_arg){p->value, id == OPT_TEXT_FILE};
    return id == OPT_POOL ? parse_pool(p, &o->pool) : 0;
}

static cli_outcome parse_options(int argc, char **argv, embed_options *o) {
    cli_parser p;
    const cli_outcome parsed = cli_parse(&p, &command, argc, argv, &o->common, embed_option, o);
    if (parsed != CLI_PARSED) return parsed;
    if ((p.num_rest < 1 && o->num_texts == 0) || !o->out)
        return cli_usage_error(&command, "expected FILE|DIR... or --text, and -o OUT");
    if (o->prompt && o->prompt_text)
        return cli_usage_error(&command, "--prompt and --prompt-text in one run (give one)");
    o->args = p.rest;
    o->num_args = p.num_rest;
    return CLI_PARSED;
}

/* ---- the features, growing as inputs are read ---- */

typedef struct {
    int dim;
    int row_ndim;        /* a row's shape: [dim], or [grid_h, grid_w, hidden] (patches) */
    int64_t row_dims[3]; /* their product is dim */
    size_t rows, cap;
    float *data;  /* [rows, dim] */
    char **names; /* [rows] */
} feature_table;

/* A row named name: row's numbers, or (row NULL) numbers written later in place. */
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
    if (row) memcpy(t->data + t->rows * t->dim, row, sizeof(float) * t->dim);
    t->rows++;
    return 0;
}

static void table_free(feature_table *t) {
    for (size_t i = 0; i < t->rows; i++) free(t->names[i]);
    free(t->names);
    free(t->data);
}

/* ---- images ---- */

static int add_row(void *user, const char *path, size_t tag, const float *row) {
    (void)tag;
    if (table_add(user, path, row) == 0) return 0;
    fprintf(stderr, "vit embed: out of memory\n");
    return -1;
}

static int embed_dir(image_batch *b, const char *dir, int *failed) {
    vit_error err = {0};
    imagefolder_walk *w = imagefolder_walk_tree(dir, &err);
    if (!w) {
        fprintf(stderr, "vit embed: %s\n", err.msg);
        ++*failed;
        return 0;
    }
    imagefolder_entry e;
    int rc = 0, more;
    while (rc == 0 && (more = imagefolder_walk_next(w, &e, &err)) == 1) {
        if (e.unreadable) {
            fprintf(stderr, "vit embed: %s\n", err.msg);
            ++*failed;
        } else {
            rc = image_batch_add(b, e.path, 0);
        }
        free(e.path);
    }
    if (rc == 0 && more < 0) {
        fprintf(stderr, "vit embed: %s\n", err.msg);
        rc = -1;
    }
    imagefolder_walk_close(w);
    return rc;
}

static int embed_images(const embed_options *o, feature_table *t) {
    char model_dir[4096];
    vit_context *ctx = cli_load_image_model(&command, &o->common, model_dir, sizeof model_dir);
    if (!ctx) return 1;
    const int joint_dim = vit_joint_dim(ctx);
    const vit_pool pool = o->pool >= 0 ? (vit_pool)o->pool : vit_default_pool(ctx);
    const char *refused = pool == VIT_POOL_POOLER && vit_default_pool(ctx) != VIT_POOL_POOLER
                              ? "--pool pooler is for text models and a SigLIP image tower alone"
                          : pool == VIT_POOL_JOINT && !joint_dim
                              ? "--pool joint is for CLIP and SigLIP models"
                              : NULL;
    if (refused) {
        fprintf(stderr, "vit embed: %s (%s: images take cls, mean or patches)\n", refused,
                model_dir);
        vit_free(ctx);
        return 2;
    }
    t->dim = vit_embed_size(ctx, pool);
    t->row_ndim = 1;
    t->row_dims[0] = t->dim;
    if (pool == VIT_POOL_PATCHES) { /* [grid_h, grid_w, hidden] per image */
        int gh, gw;
        vit_patch_grid(ctx, &gh, &gw);
        t->row_ndim = 3;
        t->row_dims[0] = gh, t->row_dims[1] = gw, t->row_dims[2] = vit_hidden_size(ctx);
    }
    image_batch *b =
        image_batch_create(ctx, "embed", o->common.params.max_batch, pool, t->dim, add_row, t);
    int rc = b ? 0 : -1, failed = 0;
    if (!b)
        fprintf(stderr, "vit embed: out of memory for batches of %d images\n",
                o->common.params.max_batch);
    for (int i = 0; rc == 0 && i < o->num_args; i++)
        rc = cli_is_dir(o->args[i]) ? embed_dir(b, o->args[i], &failed)
                                    : image_batch_add(b, o->args[i], 0);
    if (rc == 0) rc = image_batch_flush(b);
    if (b) failed += image_batch_failed(b);
    image_batch_free(b);
    vit_free(ctx);
    return rc != 0 ? 1 : failed ? 3 : 0;
}

/* ---- text ---- */

/* Every text of a run in order, with its name: the --text values and the lines (or one column)
 * of the files, whose contents texts point into. */
typedef struct {
    const char **texts;
    size_t *lengths;
    char **names;
    int n, cap;
    text_lines *files;
    int num_files;
} text_inputs;

static int inputs_add(text_inputs *in, const char *text, size_t length, char *name) {
    if (!name) return -1;
    if (in->n == in->cap) {
        const int cap = in->cap ? in->cap * 2 : 256;
        const char **texts = realloc(in->texts, sizeof *texts * (size_t)cap);
        if (texts) in->texts = texts;
        size_t *lengths = realloc(in->lengths, sizeof *lengths * (size_t)cap);
        if (lengths) in->lengths = lengths;
        char **names = realloc(in->names, sizeof *names * (size_t)cap);
        if (names) in->names = names;
        if (!texts || !lengths || !names) return free(name), -1;
        in->cap = cap;
    }
    in->texts[in->n] = text, in->lengths[in->n] = length, in->names[in->n++] = name;
    return 0;
}

static void inputs_free(text_inputs *in) {
    for (int i = 0; i < in->n; i++) free(in->names[i]);
    for (int i = 0; i < in->num_files; i++) text_lines_free(&in->files[i]);
    free(in->files);
    free(in->texts);
    free(in->lengths);
    free(in->names);
}

/* The lines of a file (blank ones left out), or with --column one column of each, each named
 * FILE:LINE (its line in the file). Only process 0 reports what cannot be read: every process
 * reads the same files. */
static int read_file_texts(const embed_options *o, const char *file, text_inputs *in, int *failed) {
    FILE *say = dist_get().rank == 0 ? stderr : NULL;
    text_lines *t = &in->files[in->num_files];
    vit_error err = {0};
    if (text_lines_read(t, file, o->column, "vit embed", say, failed, &err) != 0) {
        if (say) fprintf(say, "vit embed: %s\n", err.msg);
        ++*failed;
        return 0;
    }
    in->num_files++;
    for (int i = 0; i < t->count; i++) {
        char *name;
        if (asprintf(&name, "%s:%d", file, t->lines[i]) < 0) name = NULL;
        if (inputs_add(in, t->texts[i], t->lengths[i], name) != 0)
            return fprintf(stderr, "vit embed: out of memory\n"), -1;
    }
    return 0;
}

/* One --text, named by itself with its tabs and line breaks as spaces (a name is one line). */
static int add_text(const char *text, text_inputs *in) {
    char *name = strdup(text);
    for (char *c = name; c && *c; c++)
        if (*c == '\t' || *c == '\n' || *c == '\r') *c = ' ';
    if (inputs_add(in, text, strlen(text), name) == 0) return 0;
    return fprintf(stderr, "vit embed: out of memory\n"), -1;
}

/* The run's texts: --text and --text-file in the order given, then the operands (a text model's
 * are files of texts). */
static int read_texts(const embed_options *o, text_inputs *in, int *failed) {
    if (!(in->files = calloc((size_t)o->num_texts + (size_t)o->num_args + 1, sizeof *in->files)))
        return fprintf(stderr, "vit embed: out of memory\n"), -1;
    int rc = 0;
    for (int i = 0; rc == 0 && i < o->num_texts; i++)
        rc = o->texts[i].is_file ? read_file_texts(o, o->texts[i].value, in, failed)
                                 : add_text(o->texts[i].value, in);
    for (int i = 0; rc == 0 && i < o->num_args; i++)
        rc = read_file_texts(o, o->args[i], in, failed);
    return rc;
}

/* n rows named names[0..n) in t, their numbers to be written in place: the rows of texts run
 * out of order. */
static int table_name_rows(feature_table *t, char *const *names, int n) {
    for (int i = 0; i < n; i++)
        if (table_add(t, names[i], NULL) != 0) return -1;
    return 0;
}

/* Sorting texts by their token count before batching: a batch is padded to its longest text, so
 * files of mixed lengths in file order spend about half their products on padding (SST-2 dev in
 * batches of 32: 1.95 tokens run per token read; 16-128-token passages: 1.68). */
typedef struct {
    int tokens, index;
} text_order;

static int by_tokens(const void *a, const void *b) {
    const text_order *x = a, *y = b;
    return x->tokens != y->tokens ? (x->tokens > y->tokens) - (x->tokens < y->tokens)
                                  : (x->index > y->index) - (x->index < y->index); /* stable */
}

/* The order the texts run in: by token count when there are more than one batch's (every
 * process computes the same), else as given. */
static text_order *run_order(vit_text_context *ctx, const text_inputs *in, int batch) {
    text_order *order = malloc(sizeof *order * (size_t)(in->n > 0 ? in->n : 1));
    if (!order) return NULL;
    const int sorted = in->n > batch;
    for (int i = 0; i < in->n; i++) {
        vit_error err = {0};
        /* a text the tokenizer refuses sorts first; its batch's forward pass reports it */
        const int count =
            sorted ? vit_text_tokenize(ctx, in->texts[i], in->lengths[i], NULL, 0, &err) : 0;
        order[i] = (text_order){count, i};
    }
    if (sorted) qsort(order, (size_t)in->n, sizeof *order, by_tokens);
    return order;
}

/* The texts embedded in batches of vit_text_max_batch, in run_order. Under mpirun the batches are
 * dealt out in turn, batch b to process b % size, and each round's rows are gathered on process 0
 * in rank order, which is the batches' order: every batch holds the texts one process would put
 * in it, so each row comes out of the same computation, bit for bit, and process 0's table is the
 * one-process run's. Process 0 alone fills t, in the texts' order. */
static int embed_inputs(vit_text_context *ctx, const text_inputs *in,
                        const vit_text_embed_opts *how, feature_table *t) {
    const dist_world w = dist_get();
    const int batch = vit_text_max_batch(ctx), num_batches = (in->n + batch - 1) / batch;
    float *features = malloc(sizeof(float) * t->dim * batch);
    const char **texts = malloc(sizeof *texts * (size_t)batch);
    size_t *lengths = malloc(sizeof *lengths * (size_t)batch);
    text_order *order = run_order(ctx, in, batch);
    vit_error err = {0};
    int rc = features && texts && lengths && order ? 0 : vit_fail(&err, "out of memory");
    if (rc == 0 && w.rank == 0 && table_name_rows(t, in->names, in->n) != 0)
        rc = vit_fail(&err, "out of memory");
    if (rc) fprintf(stderr, "vit embed: %s\n", err.msg);
    for (int round = 0; round * w.size < num_batches; round++) {
        const int b = round * w.size + w.rank, start = b * batch;
        const int count = b < num_batches ? (in->n - start < batch ? in->n - start : batch) : 0;
        for (int i = 0; rc == 0 && i < count; i++) {
            texts[i] = in->texts[order[start + i].index];
            lengths[i] = in->lengths[order[start + i].index];
        }
        if (rc == 0 && count &&
            vit_text_embed_with(ctx, texts, lengths, count, how, features, &err) != 0) {
            fprintf(stderr, "vit embed: %s: %s\n", in->names[order[start].index], err.msg);
            rc = -1;
        }
        if (dist_all_succeeded(rc, "to embed its texts", &err) != 0) {
            if (rc == 0) fprintf(stderr, "vit embed: %s\n", err.msg);
            rc = -1;
            break;
        }
        char *rows;
        size_t bytes;
        if (dist_gather(features, sizeof(float) * t->dim * (size_t)count, &rows, &bytes, &err)) {
            fprintf(stderr, "vit embed: %s\n", err.msg);
            rc = -1;
            break;
        }
        const size_t first = (size_t)round * w.size * batch, got = bytes / sizeof(float) / t->dim;
        for (size_t i = 0; i < got; i++)
            memcpy(t->data + (size_t)order[first + i].index * t->dim,
                   (const float *)rows + i * t->dim, sizeof(float) * t->dim);
        free(rows);
    }
    free(features), free(texts), free(lengths), free(order);
    return rc;
}

/* --prompt NAME's text (listing the folder's names when it has none of that name) and
 * --dimensions (no wider than the embedding) into how; 0, or -1 after saying why. */
static int text_settings(const embed_options *o, vit_text_context *ctx, const char *model_dir,
                         vit_text_embed_opts *how) {
    if (o->prompt && !(how->prompt = vit_text_prompt(ctx, o->prompt))) {
        fprintf(stderr, "vit embed: %s has no prompt '%s' (", model_dir, o->prompt);
        const int n = vit_text_prompt_count(ctx);
        if (!n) fprintf(stderr, "no config_sentence_transformers.json prompts");
        for (int i = 0; i < n; i++)
            fprintf(stderr, "%s%s", i ? ", " : "its prompts: ", vit_text_prompt_name(ctx, i));
        fprintf(stderr, ")\n");
        return -1;
    }
    const int width = vit_text_embed_size(ctx, how->pool);
    if (o->dimensions > width) {
        fprintf(stderr, "vit embed: --dimensions %d: %s's embedding has %d\n", o->dimensions,
                model_dir, width);
        return -1;
    }
    how->dimensions = o->dimensions;
    return 0;
}

/* The text model with its pooling, prompt and width checked (how, t's shape), or NULL after
 * saying why with the exit status in *status. */
static vit_text_context *open_text_model(const embed_options *o, const char *model_dir,
                                         vit_text_embed_opts *how, feature_table *t, int *status) {
    vit_text_params tp = cli_text_params(&o->common.params);
    tp.inference_only = 1; /* one copy of the weights in memory */
    vit_error err = {0};
    vit_text_context *ctx = vit_text_load(model_dir, &tp, &err);
    if (!ctx) {
        fprintf(stderr, "vit embed: %s\n", err.msg);
        return *status = 1, NULL;
    }
    const int joint_dim = vit_text_joint_dim(ctx);
    const vit_pool pool = o->pool >= 0 ? (vit_pool)o->pool : vit_text_default_pool(ctx);
    *status = 2;
    if (pool == VIT_POOL_SENTENCE && vit_text_default_pool(ctx) != VIT_POOL_SENTENCE) {
        fprintf(stderr,
                "vit embed: --pool sentence is for sentence-transformers folders (%s has "
                "no modules.json)\n",
                model_dir);
        return vit_text_free(ctx), NULL;
    }
    if ((pool == VIT_POOL_JOINT && !joint_dim) || pool == VIT_POOL_PATCHES) {
        fprintf(stderr, "vit embed: --pool %s is for %s (%s: texts take cls, mean or pooler)\n",
                pool == VIT_POOL_PATCHES ? "patches" : "joint",
                pool == VIT_POOL_PATCHES ? "image models" : "CLIP and SigLIP models", model_dir);
        return vit_text_free(ctx), NULL;
    }
    *how = (vit_text_embed_opts){.pool = pool, .prompt = o->prompt_text};
    if (text_settings(o, ctx, model_dir, how) != 0) return vit_text_free(ctx), NULL;
    t->dim = how->dimensions ? how->dimensions : vit_text_embed_size(ctx, pool);
    t->row_ndim = 1;
    t->row_dims[0] = t->dim;
    *status = 0;
    return ctx;
}

static int embed_texts(const embed_options *o, const char *model_dir, feature_table *t) {
    vit_text_embed_opts how;
    int status, failed = 0;
    vit_text_context *ctx = open_text_model(o, model_dir, &how, t, &status);
    text_inputs in = {0};
    if (ctx && read_texts(o, &in, &failed) != 0) status = 1;
    /* under mpirun: every process starts, or none goes on (each says why it stops) */
    vit_error err = {0};
    if (dist_all_succeeded(status, "to start", &err) != 0 && status == 0) {
        fprintf(stderr, "vit embed: %s\n", err.msg);
        status = 1;
    }
    if (status == 0 && embed_inputs(ctx, &in, &how, t) != 0) status = 1;
    inputs_free(&in);
    vit_text_free(ctx);
    return status ? status : failed ? 3 : 0;
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
    char shape[96], dict[160];
    int used = snprintf(shape, sizeof shape, "%zu", t->rows);
    for (int d = 0; d < t->row_ndim; d++)
        used += snprintf(shape + used, sizeof shape - (size_t)used, ", %lld",
                         (long long)t->row_dims[d]);
    int n = snprintf(dict, sizeof dict, "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }",
                     shape);
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
    st_entry e = {.name = "embeddings", .ndim = 1 + t->row_ndim, .data = t->data};
    e.shape[0] = (int64_t)t->rows;
    memcpy(e.shape + 1, t->row_dims, sizeof(int64_t) * (size_t)t->row_ndim);
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

/* What the run embeds: texts (1: a text model's, or --text by a CLIP or SigLIP text tower) or
 * images (0); -1 with the exit status in *status after saying why it cannot. Under mpirun only
 * texts are shared among the processes. */
static int run_kind(const embed_options *o, const char *model_dir, int *status) {
    if (cli_is_text_model(model_dir)) return 1;
    if (o->num_texts > 0 && o->num_args > 0) {
        /* an image model's operands are images: one kind of input per run */
        *status = cli_exit_status(cli_usage_error(
            &command, "images and --text/--text-file in one run (embed them in two)"));
        return -1;
    }
    if (o->num_texts == 0 &&
        (o->prompt || o->prompt_text || o->dimensions || o->column.index >= 0 || o->column.name)) {
        *status = cli_exit_status(cli_usage_error(
            &command, "--prompt, --prompt-text, --dimensions and --column are for texts"));
        return -1;
    }
    if (o->num_texts > 0 || dist_get().size == 1) return o->num_texts > 0;
    vit_model_kind kind;
    vit_error why = {0};
    if (vit_folder_kind(model_dir, &kind, &why) != 0) {
        fprintf(stderr, "vit embed: %s\n", why.msg);
        return *status = 1, -1;
    }
    if (dist_get().rank == 0) /* every process with this model decides alike; one says it */
        fprintf(stderr, "vit embed: under mpirun the processes share texts; images are embedded "
                        "by one process (run it without mpirun)\n");
    return *status = 2, -1;
}

int cli_embed(int argc, char **argv) {
    embed_options o = {
        .common.params = vit_default_params(), .pool = -1, .column = TEXT_COLUMN_LINES};
    o.common.params.max_batch = 16;
    if (!(o.texts = calloc((size_t)argc + 1, sizeof *o.texts))) {
        fprintf(stderr, "vit embed: out of memory\n");
        return 1;
    }
    const cli_outcome parsed = parse_options(argc, argv, &o);
    if (parsed != CLI_PARSED) return free(o.texts), cli_exit_status(parsed);
    char model_dir[4096];
    if (!cli_model_dir("embed", o.common.model, model_dir, sizeof model_dir))
        return free(o.texts), 1;
    feature_table t = {0};
    int rc = 0;
    const int kind = run_kind(&o, model_dir, &rc);
    vit_error err = {0};
    /* under mpirun: every process embeds texts, or none starts (a process that cannot says why) */
    if (dist_get().size > 1 && dist_all_succeeded(kind < 0 ? -1 : 0, "to start", &err) != 0) {
        if (kind >= 0) fprintf(stderr, "vit embed: %s\n", err.msg), rc = 1;
    } else if (kind >= 0) {
        rc = kind ? embed_texts(&o, model_dir, &t) : embed_images(&o, &t);
    }
    /* process 0 holds every row (embed_inputs) and writes; the others learn how it went */
    const int embedded = rc == 0 || rc == 3; /* on every process, or on none */
    if (embedded && dist_get().rank == 0 && write_output(o.out, &t) != 0) rc = 1;
    if (embedded && dist_get().size > 1 &&
        dist_all_succeeded(rc == 1 ? -1 : 0, "to write the output", &err) != 0 && rc != 1) {
        fprintf(stderr, "vit embed: %s\n", err.msg);
        rc = 1;
    }
    table_free(&t);
    free(o.texts);
    return rc == 3 ? 1 : rc;
}
