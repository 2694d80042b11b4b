/* vit classify: top-k labels of image files. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vit/base/file.h"
#include "vit/base/strlist.h"
#include "vit/cli/cli.h"
#include "vit/cli/json_writer.h"
#include "vit/cli/zero_shot.h"
#include "vit/data/imagefolder.h"
#include "vit/eval/eval_images.h"
#include "vit/vit.h"

enum {
    OPT_TOP = 1,
    OPT_FORMAT,
    OPT_JSON,
    OPT_LOGITS,
    OPT_THRESHOLD,
    OPT_LABELS,
    OPT_STDIN_IMAGE,
};

static const cli_option options[] = {
    CLI_MODEL_OPTION("model directory", CLI_MODEL_DEFAULT),
    {OPT_TOP, "top", 'k', "N", "show the N most likely labels", "5"},
    {OPT_FORMAT, "format", 'f', "F",
     "text, json (one object per line and file), csv or tsv (a row per file and label, with a "
     "header)",
     "text"},
    {OPT_JSON, "json", 0, NULL, "the same as --format json", NULL},
    {OPT_LOGITS, "logits", 0, NULL, "also print every logit (text and json)", NULL},
    {OPT_THRESHOLD, "threshold", 0, "P", "only labels of probability P or more (of the top N)",
     "0"},
    {OPT_LABELS, "labels", 0, "FILE",
     "label names, one per line in class order (for models without id2label, or to rename)",
     "the model's id2label"},
    {OPT_STDIN_IMAGE, "stdin-image", 0, NULL,
     "classify one image whose bytes come on standard input", NULL},
    CLI_EXIF_UPRIGHT,
    CLI_BATCH_OPTION("images per forward pass", "8"),
    CLI_THREADS_OPTION,
    CLI_SIZE_OPTION("run at N x N pixels (position embeddings interpolated as Hugging Face does)"),
    CLI_PIXELS_OPTION,
    CLI_BACKEND_OPTION,
    CLI_PRECISION_OPTION,
    CLI_ZERO_SHOT_OPTIONS,
};

static const cli_command command = {
    "classify",
    "classify image files and folders (top-k labels as text, JSON, CSV or TSV)",
    "[options] FILE|DIR...",
    "Classifies each FILE (its format told by its first bytes) and every image under each DIR\n"
    "(recursively, sorted, the same rules as eval); FILE '-' reads paths from standard input, one\n"
    "per line. A file that cannot be read is reported and the others still run; the exit status\n"
    "is then 1.\n\n"
    "A CLIP or SigLIP model classifies zero-shot: each image against the class names of --classes\n"
    "or --classes-file, each name put into the prompt templates and embedded once by the model's\n"
    "text tower. The probabilities are the softmax over the names (CLIP) or each name's sigmoid\n"
    "(SigLIP); --logits prints the scores they come from (HF's logits_per_image).",
    options,
    sizeof options / sizeof options[0]};

const cli_command *cli_classify_command(void) {
    return &command;
}

typedef enum { FORMAT_TEXT, FORMAT_JSON, FORMAT_CSV, FORMAT_TSV } output_format;

typedef struct {
    int top_k, with_logits, stdin_image;
    output_format format;
    double threshold;
    const char *labels_path;
    strlist labels; /* --labels: names by class index */
    char **files;
    int num_files, next_file;
    int from_stdin;
    imagefolder_walk *walk; /* the folder being listed */
    int failures;
    vit_context *ctx;
    cli_zero_shot zs;     /* zero-shot: zs.classes, else NULL */
    eval_zero_shot joint; /* the image tower and zs.classes, for the pipeline */
    pipeline_model model; /* what runs the images: the classifier, or zero-shot */
    int num_classes;      /* the model's labels, or the class names */
    float *probs;
    vit_prediction *top;
    int shown; /* predictions of the current file at or above the threshold */
} classify_run;

/* ---- inputs: arguments, folders, paths on standard input ---- */

/* The next path of the folder being walked: 1 (an image, or an unreadable entry handed over as
 * failed), 0 when the folder is done. */
static int next_in_folder(classify_run *r, pipeline_item *item) {
    imagefolder_entry e;
    const int rc = imagefolder_walk_next(r->walk, &e, &item->err);
    if (rc == 1) {
        item->path = e.path;
        if (!e.unreadable) item->err.msg[0] = 0;
        return 1;
    }
    imagefolder_walk_close(r->walk);
    r->walk = NULL;
    return rc; /* 0, or -1: out of memory */
}

static int next_stdin_line(classify_run *r, pipeline_item *item) {
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, stdin)) >= 0) {
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = 0;
        if (n > 0) {
            item->path = line;
            return 1;
        }
    }
    free(line);
    r->from_stdin = 0;
    return 0;
}

static int next_input(void *user, pipeline_item *item) {
    classify_run *r = user;
    for (;;) {
        int rc = 0;
        if (r->walk)
            rc = next_in_folder(r, item);
        else if (r->from_stdin)
            rc = next_stdin_line(r, item);
        if (rc != 0) return rc;
        if (r->walk || r->from_stdin) continue;
        if (r->next_file >= r->num_files) return 0;
        const char *f = r->files[r->next_file++];
        if (strcmp(f, "-") == 0) {
            r->from_stdin = 1;
        } else if (cli_is_dir(f)) {
            if (!(r->walk = imagefolder_walk_tree(f, &item->err))) return -1;
        } else {
            item->path = strdup(f);
            return item->path ? 1 : -1;
        }
    }
}

/* ---- output ---- */

static void print_json(const classify_run *r, const pipeline_item *it) {
    json_writer w = json_begin(stdout);
    json_object(&w);
    json_key(&w, "file");
    json_string(&w, it->path);
    if (!it->ok) {
        json_key(&w, "error");
        json_string(&w, it->err.msg);
    } else {
        cli_json_top(&w, r->top, r->shown);
        if (r->with_logits) {
            json_key(&w, "logits");
            json_array(&w);
            for (int i = 0; i < r->num_classes; i++) json_float(&w, it->logits[i]);
            json_end(&w);
        }
    }
    json_end(&w);
    json_line(&w);
}

static void print_text(const classify_run *r, const pipeline_item *it) {
    printf("%s\n", it->path);
    for (int i = 0; i < r->shown; i++) printf("  %.4f  %s\n", r->top[i].prob, r->top[i].label);
    if (r->with_logits) {
        printf("  logits:");
        for (int i = 0; i < r->num_classes; i++) printf(" %.6g", it->logits[i]);
        printf("\n");
    }
}

/* A CSV field, quoted when it must be (RFC 4180); a TSV field with tabs and line breaks as
 * spaces (TSV has no quoting). */
static void print_field(const char *s, output_format format) {
    if (format == FORMAT_TSV) {
        for (; *s; s++) putchar(*s == '\t' || *s == '\n' || *s == '\r' ? ' ' : *s);
        return;
    }
    if (!strpbrk(s, ",\"\n\r")) {
        fputs(s, stdout);
        return;
    }
    putchar('"');
    for (; *s; s++) {
        if (*s == '"') putchar('"');
        putchar(*s);
    }
    putchar('"');
}

static void print_rows(const classify_run *r, const pipeline_item *it) {
    const char sep = r->format == FORMAT_CSV ? ',' : '\t';
    for (int i = 0; i < r->shown; i++) {
        print_field(it->path, r->format);
        printf("%c%d%c%d%c", sep, i + 1, sep, r->top[i].index, sep);
        print_field(r->top[i].label, r->format);
        printf("%c%.6f\n", sep, r->top[i].prob);
    }
}

static void print_header(const classify_run *r) {
    if (r->format == FORMAT_CSV) printf("file,rank,index,label,prob\n");
    if (r->format == FORMAT_TSV) printf("file\trank\tindex\tlabel\tprob\n");
}

/* Class i's label: --labels' line, else the class name or the model's label. */
static const char *class_label(const void *run, int i) {
    const classify_run *r = run;
    return r->labels.count ? r->labels.lines[i] : eval_class_name(r->ctx, r->zs.classes, i);
}

/* The item's top-k into r->top, those at or above the threshold counted in r->shown; an item that
 * fails here (out of memory) is reported as failed. */
static pipeline_item rank(classify_run *r, const pipeline_item *it) {
    pipeline_item ranked = *it;
    const int L = r->num_classes, zero_shot = r->zs.classes != NULL;
    const vit_labeler labeler = {class_label, r};
    /* zero-shot: the probabilities follow the scores (eval_zero_shot_model); else the logits */
    ranked.ok = vit_rank(zero_shot ? it->logits + L : it->logits, L, !zero_shot, r->probs, r->top_k,
                         r->threshold, &labeler, r->top, &r->shown, &ranked.err) >= 0;
    return ranked;
}

static void report(classify_run *r, const pipeline_item *item) {
    r->shown = 0;
    const pipeline_item ranked = item->ok ? rank(r, item) : *item, *it = &ranked;
    if (!it->ok) {
        r->failures++;
        fprintf(stderr, "vit classify: %s\n", it->err.msg);
    }
    if (r->format == FORMAT_JSON)
        print_json(r, it);
    else if (!it->ok)
        return;
    else if (r->format == FORMAT_TEXT)
        print_text(r, it);
    else
        print_rows(r, it);
}

static void batch_done(void *user, const pipeline_item *items, int count) {
    for (int i = 0; i < count; i++) report(user, &items[i]);
    fflush(stdout);
}

/* --stdin-image: the one image on standard input (at most 1 GiB, the decoder's file limit). */
static int classify_stdin_image(classify_run *r, vit_error *err) {
    size_t size = 0;
    char *bytes = vit_read_stream(stdin, "standard input", (size_t)1 << 30, &size, err);
    if (!bytes) return -1;
    float *pixels = malloc(sizeof(float) * vit_input_floats(r->ctx));
    float *logits = malloc(sizeof(float) * (size_t)r->model.outputs);
    pipeline_item it = {.path = "-", .logits = logits};
    int rc = pixels && logits ? 0 : vit_fail(err, "out of memory");
    if (rc == 0 && vit_preprocess_memory(r->ctx, bytes, size, pixels, &it.err) == 0 &&
        r->model.forward(r->model.self, pixels, 1, logits, &it.err) == 0)
        it.ok = 1;
    if (rc == 0) report(r, &it);
    free(bytes), free(pixels), free(logits);
    return rc;
}

/* ---- options ---- */

static int parse_format(const cli_parser *p, output_format *out) {
    static const char *const names[] = {"text", "json", "csv", "tsv"};
    const int i = cli_choice(p, names, 4);
    if (i >= 0) *out = (output_format)i;
    return i < 0 ? -1 : 0;
}

static int classify_option(const cli_parser *p, int id, void *user) {
    classify_run *r = user;
    if (CLI_IS_ZERO_SHOT_OPTION(id)) return cli_zero_shot_option(p, id, &r->zs);
    switch (id) {
    case OPT_TOP:
        return cli_int(p, 1, 1 << 20, &r->top_k);
    case OPT_FORMAT:
        return parse_format(p, &r->format);
    case OPT_JSON:
        return r->format = FORMAT_JSON, 0;
    case OPT_THRESHOLD:
        return cli_number(p, 0.0, 1.0, &r->threshold);
    case OPT_LABELS:
        return r->labels_path = p->value, 0;
    case OPT_STDIN_IMAGE:
        return r->stdin_image = 1, 0;
    case OPT_LOGITS:
        return r->with_logits = 1, 0;
    }
    return 0;
}

/* Options into r and c; the files to classify into r. */
static cli_outcome parse_options(int argc, char **argv, classify_run *r, cli_common *c) {
    cli_parser p;
    const cli_outcome parsed = cli_parse(&p, &command, argc, argv, c, classify_option, r);
    if (parsed != CLI_PARSED) return parsed;
    if (p.num_rest == 0 && !r->stdin_image) return cli_usage_error(&command, "no input files");
    if (p.num_rest > 0 && r->stdin_image)
        return cli_usage_error(&command, "--stdin-image takes no FILE arguments");
    if (r->labels_path && cli_zero_shot_given(&r->zs))
        return cli_usage_error(&command, "--labels renames a model's own classes; with --classes "
                                         "or --classes-file the names are the classes");
    const cli_outcome zs = cli_zero_shot_check(&command, &r->zs);
    if (zs != CLI_PARSED) return zs;
    r->files = p.rest;
    r->num_files = p.num_rest;
    return CLI_PARSED;
}

/* --labels: one name per class of the model. */
static int load_labels(classify_run *r, vit_error *err) {
    if (!r->labels_path) return 0;
    if (strlist_read(&r->labels, r->labels_path, 64 << 20, STRLIST_TRIM, err) != 0) return -1;
    if (r->labels.count != r->num_classes)
        return vit_fail(err, "%s: %d labels, the model has %d", r->labels_path, r->labels.count,
                        r->num_classes);
    return 0;
}

/* Classifies every input and prints each one's labels. Returns -1 (err) when the run itself
 * fails; a file that cannot be read is reported and counted in r->failures. */
static int classify_inputs(classify_run *r, const vit_params *params, vit_error *err) {
    if (load_labels(r, err) != 0) return -1;
    if (r->top_k > r->num_classes) r->top_k = r->num_classes;
    r->probs = malloc(sizeof(float) * (size_t)r->num_classes);
    r->top = malloc(sizeof *r->top * (size_t)r->top_k);
    if (!r->probs || !r->top) return vit_fail(err, "out of memory");
    print_header(r);
    if (r->stdin_image) return classify_stdin_image(r, err);
    const pipeline_options opt = {.batch = params->max_batch,
                                  .decode_threads = cli_decode_threads(params->threads)};
    return pipeline_run_source(&r->model, &opt, next_input, batch_done, r, err);
}

/* What runs the images: the model's own classifier, or (class names given) zero-shot against the
 * names, embedded here with the folder's text tower. */
static int start_model(classify_run *r, const char *model_dir, const vit_params *params,
                       vit_error *err) {
    if (!cli_zero_shot_given(&r->zs)) {
        r->model = eval_pipeline_model(r->ctx);
        r->num_classes = vit_num_labels(r->ctx);
        return 0;
    }
    if (cli_zero_shot_read(&r->zs, err) != 0 ||
        cli_zero_shot_embed(&r->zs, model_dir, params, err) != 0)
        return -1;
    r->joint = (eval_zero_shot){.image = r->ctx, .classes = r->zs.classes};
    r->model = eval_zero_shot_model(&r->joint);
    r->num_classes = vit_classes_count(r->zs.classes);
    return 0;
}

int cli_classify(int argc, char **argv) {
    classify_run r = {.top_k = 5};
    cli_common c = {.params = vit_default_params()};
    c.params.max_batch = 8;
    c.params.inference_only = 1; /* one copy of the weights in memory */
    const cli_outcome parsed = parse_options(argc, argv, &r, &c);
    char model_dir[4096];
    if (parsed != CLI_PARSED ||
        !(r.ctx = cli_load_labelled(&command, &c, model_dir, sizeof model_dir))) {
        cli_zero_shot_free(&r.zs);
        return parsed != CLI_PARSED ? cli_exit_status(parsed) : 1;
    }
    const cli_outcome fits = cli_zero_shot_check_model(&command, &r.zs, r.ctx, model_dir);
    vit_error err = {0};
    int rc = fits == CLI_PARSED ? start_model(&r, model_dir, &c.params, &err) : 0;
    if (fits == CLI_PARSED && rc == 0) rc = classify_inputs(&r, &c.params, &err);
    if (rc != 0) fprintf(stderr, "vit classify: %s\n", err.msg);
    imagefolder_walk_close(r.walk);
    strlist_free(&r.labels);
    free(r.probs);
    free(r.top);
    cli_zero_shot_free(&r.zs);
    vit_free(r.ctx);
    if (fits != CLI_PARSED) return cli_exit_status(fits);
    return rc != 0 || r.failures ? 1 : 0;
}
