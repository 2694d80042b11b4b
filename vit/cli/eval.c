/* vit eval: a model's accuracy on labeled image folders (the ImageFolder layout). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "vit/base/clock.h"
#include "vit/cli/cli.h"
#include "vit/eval/report.h"
#include "vit/data/imagefolder.h"
#include "vit/data/pipeline.h"
#include "vit/eval/eval_text.h"
#include "vit/vit.h"

#define DEFAULT_IMAGE_BATCH 16

static const char usage_text[] =
    "usage: vit eval [-m MODEL_DIR] [--class-map FILE] [--json OUT|-] [--predictions OUT.tsv|-]\n"
    "                [-b BATCH] [-t THREADS] [--size N] [--max-pixels N] DIR\n"
    "DIR holds one folder per class (DIR/<class>/.../*.png|jpg|jpeg). Classes come from\n"
    "--class-map (folder names, one per line, line number = class index) or by matching folder\n"
    "names to the model's labels. DIR may also be a FILE.tsv of `sentence<TAB>label` lines\n"
    "(with a header line) for a BERT text classifier.\n";

typedef struct {
    const char *model_dir, *data_dir, *class_map, *json_path, *pred_path;
    vit_params params;
} eval_options;

typedef struct {
    FILE *json, *predictions;
} outputs;

typedef struct {
    imagefolder folder;
    imagefolder_walk *walk;
    vit_context *ctx;
    eval_report *report;
    float *probs;
    FILE *predictions;
    int progress;         /* stderr is a terminal: keep a progress line there */
    long total, finished; /* inputs to go through (counted only for progress), gone through */
    double start, shown;  /* seconds */
} eval_run;

/* Loader thread: the next image of the walk, its true class as the tag. */
static int next_image(void *user, pipeline_item *item) {
    eval_run *r = user;
    imagefolder_entry e;
    int rc = imagefolder_walk_next(r->walk, &e, &item->err); /* unreadable: err set, not decoded */
    if (rc != 1) return rc;
    item->path = e.path;
    item->tag = e.label;
    return 1;
}

/* A TSV field: the path with tab, newline, carriage return and backslash escaped. */
static void put_field(const char *s, FILE *out) {
    for (; *s; s++) {
        const char *esc = *s == '\t'   ? "\\t"
                          : *s == '\n' ? "\\n"
                          : *s == '\r' ? "\\r"
                          : *s == '\\' ? "\\\\"
                                       : NULL;
        if (esc)
            fputs(esc, out);
        else
            fputc(*s, out);
    }
}

static void clear_progress(const eval_run *r) {
    if (r->progress) fputs("\r\033[K", stderr);
}

static void show_progress(eval_run *r) {
    double t = clock_seconds();
    if (!r->progress || (t - r->shown < 0.25 && r->finished < r->total)) return;
    r->shown = t;
    double rate = r->finished / (t - r->start + 1e-9);
    long left = r->total > r->finished ? r->total - r->finished : 0;
    long eta = rate > 0 ? (long)(left / rate + 0.5) : 0;
    fprintf(stderr, "\r\033[K%ld/%ld  %.1f images/s  ETA %ld:%02ld", r->finished, r->total, rate,
            eta / 60, eta % 60);
}

/* Main thread: one batch, items in input order. */
static void batch_done(void *user, const pipeline_item *items, int count) {
    eval_run *r = user;
    const int L = vit_num_labels(r->ctx);
    for (int i = 0; i < count; i++) {
        const pipeline_item *it = &items[i];
        r->finished++;
        if (!it->ok) {
            clear_progress(r);
            fprintf(stderr, "vit eval: skipped %s\n", it->err.msg);
            if (eval_report_skip(r->report, it->path, it->err.msg) != 0)
                fprintf(stderr, "vit eval: out of memory recording %s\n", it->path);
            continue;
        }
        memcpy(r->probs, it->logits, sizeof(float) * (size_t)L);
        vit_softmax(r->probs, L);
        int pred = eval_report_add(r->report, it->tag, r->probs);
        if (r->predictions) {
            put_field(it->path, r->predictions);
            fprintf(r->predictions, "\t%d\t%d\t%.6f\n", it->tag, pred, r->probs[pred]);
        }
    }
    show_progress(r);
}

/* Images (and unreadable entries) the walk will produce: a names-only pass for the progress line.
 */
static long count_inputs(const imagefolder *f) {
    vit_error err;
    imagefolder_walk *w = imagefolder_walk_open(f, &err);
    imagefolder_entry e;
    long n = 0;
    while (w && imagefolder_walk_next(w, &e, &err) == 1) {
        free(e.path);
        n++;
    }
    imagefolder_walk_close(w);
    return n;
}

/* Output file "-" is stdout. */
static FILE *open_output(const char *path) {
    if (strcmp(path, "-") == 0) return stdout;
    FILE *f = fopen(path, "w");
    if (!f) fprintf(stderr, "vit eval: %s: %s\n", path, strerror(errno));
    return f;
}

static int close_output(FILE *f, const char *path) {
    if (!f) return 0;
    int bad = ferror(f);
    if (f == stdout)
        bad |= fflush(f) != 0;
    else
        bad |= fclose(f) != 0;
    if (bad) fprintf(stderr, "vit eval: %s: write error\n", path);
    return bad ? -1 : 0;
}

/* --json and --predictions, opened before the work so a bad path fails at once. */
static int open_outputs(const eval_options *o, outputs *out) {
    out->json = o->json_path ? open_output(o->json_path) : NULL;
    out->predictions = o->pred_path ? open_output(o->pred_path) : NULL;
    if ((!o->json_path || out->json) && (!o->pred_path || out->predictions)) return 0;
    if (out->json && out->json != stdout) fclose(out->json);
    if (out->predictions && out->predictions != stdout) fclose(out->predictions);
    return -1;
}

/* Closes the outputs; status 1 on a write error, else the given status. */
static int close_outputs(const eval_options *o, const outputs *out, int status) {
    int bad = close_output(out->json, o->json_path) != 0;
    bad |= close_output(out->predictions, o->pred_path) != 0;
    return bad && status == 0 ? 1 : status;
}

/* The report on stdout (unless an output claimed it) and the JSON document. Returns the exit
 * status: 0, 1 when writing fails, 2 when nothing was evaluated. */
static int finish(const eval_report *rep, const eval_summary *s, const outputs *out) {
    if (out->json != stdout && out->predictions != stdout) eval_report_print(rep, s, stdout);
    if (out->json && eval_report_write_json(rep, s, out->json) != 0) return 1;
    if (eval_report_count(rep) > 0) return 0;
    fprintf(stderr, "vit eval: %s: no %s could be evaluated (%d skipped)\n", s->data,
            strcmp(s->unit, "texts") == 0 ? "text" : "image", eval_report_skipped(rep));
    return 2;
}

static int map_classes(eval_run *r, const eval_options *o) {
    vit_error err = {{0}};
    const int L = vit_num_labels(r->ctx);
    if (o->class_map) {
        if (imagefolder_map_file(&r->folder, o->class_map, L, &err) == 0) return 0;
        fprintf(stderr, "vit eval: %s\n", err.msg);
        return -1;
    }
    const char **labels = malloc(sizeof *labels * (size_t)L);
    if (!labels) return fputs("vit eval: out of memory\n", stderr), -1;
    for (int i = 0; i < L; i++) labels[i] = vit_label(r->ctx, i);
    int by_order = 0, rc = imagefolder_map_labels(&r->folder, labels, L, &by_order, &err);
    free(labels);
    if (rc != 0)
        fprintf(stderr, "vit eval: %s\n", err.msg);
    else if (by_order)
        fprintf(stderr,
                "vit eval: warning: %s: no folder name matches a label of the model; taking the %d "
                "folders in sorted order as classes 0..%d (give --class-map to be sure)\n",
                o->data_dir, L, L - 1);
    return rc;
}

/* The report's view of the classes: label names and the folder of each class (NULL if none). */
static int report_and_finish(eval_run *r, const eval_options *o, const outputs *out,
                             double seconds) {
    const int L = vit_num_labels(r->ctx);
    const char **labels = malloc(sizeof *labels * (size_t)L);
    const char **folders = calloc((size_t)L, sizeof *folders);
    int status = 1;
    if (labels && folders) {
        for (int i = 0; i < L; i++) labels[i] = vit_label(r->ctx, i);
        for (int i = 0; i < r->folder.num_folders; i++)
            folders[r->folder.label_of[i]] = r->folder.folders[i];
        eval_summary s = {.model = o->model_dir,
                          .data = o->data_dir,
                          .labels = labels,
                          .folders = folders,
                          .unit = "images",
                          .seconds = seconds};
        status = finish(r->report, &s, out);
    } else {
        fputs("vit eval: out of memory\n", stderr);
    }
    free(labels);
    free(folders);
    return status;
}

/* Walks, classifies and reports the image folder. Returns the exit status. */
static int evaluate_images(eval_run *r, const eval_options *o) {
    vit_error err = {{0}};
    outputs out;
    if (open_outputs(o, &out) != 0) return 1;
    r->predictions = out.predictions;
    if (r->predictions) fputs("file\ttrue\tpredicted\tprobability\n", r->predictions);
    const int L = vit_num_labels(r->ctx);
    r->report = eval_report_create(L, &err);
    r->probs = malloc(sizeof(float) * (size_t)L);
    r->walk = r->report && r->probs ? imagefolder_walk_open(&r->folder, &err) : NULL;
    int status = 0;
    if (!r->walk) {
        fprintf(stderr, "vit eval: %s\n", r->report ? err.msg : "out of memory");
        status = 1;
    } else {
        r->progress = isatty(STDERR_FILENO);
        if (r->progress) r->total = count_inputs(&r->folder);
        r->start = clock_seconds();
        pipeline_options opt = {.batch = o->params.max_batch,
                                .decode_threads = cli_decode_threads(o->params.threads)};
        int rc = pipeline_run_source(r->ctx, &opt, next_image, batch_done, r, &err);
        double seconds = clock_seconds() - r->start;
        clear_progress(r);
        if (rc != 0) fprintf(stderr, "vit eval: %s\n", err.msg);
        status = report_and_finish(r, o, &out, seconds);
        if (rc != 0) status = 1;
    }
    status = close_outputs(o, &out, status);
    imagefolder_walk_close(r->walk);
    eval_report_free(r->report);
    free(r->probs);
    return status;
}

static int evaluate_folder(eval_options *o) {
    eval_run r = {0};
    vit_error err = {{0}};
    if (imagefolder_open(&r.folder, o->data_dir, &err) != 0) {
        fprintf(stderr, "vit eval: %s\n", err.msg);
        return 2;
    }
    if (o->params.max_batch == 0) o->params.max_batch = DEFAULT_IMAGE_BATCH;
    r.ctx = vit_load(o->model_dir, &o->params, &err);
    int status;
    if (!r.ctx) {
        fprintf(stderr, "vit eval: %s\n", err.msg);
        status = 1;
    } else if (map_classes(&r, o) != 0) {
        status = 2;
    } else {
        status = evaluate_images(&r, o);
    }
    vit_free(r.ctx);
    imagefolder_close(&r.folder);
    return status;
}

/* `sentence<TAB>label` lines through a BERT classifier (vit/text_eval.h). */
static int evaluate_text(const eval_options *o) {
    if (o->class_map)
        fprintf(stderr, "vit eval: warning: --class-map applies to image folders; ignored\n");
    outputs out;
    if (open_outputs(o, &out) != 0) return 1;
    text_eval_options topt = {.batch = o->params.max_batch, .threads = o->params.threads};
    text_eval_result res;
    vit_error err = {{0}};
    int status;
    if (text_eval_tsv(o->model_dir, o->data_dir, &topt, out.predictions, &res, &err) != 0) {
        fprintf(stderr, "vit eval: %s\n", err.msg);
        status = 1;
    } else {
        eval_summary s = {.model = o->model_dir,
                          .data = o->data_dir,
                          .labels = res.labels,
                          .unit = "texts",
                          .seconds = res.seconds};
        status = finish(res.report, &s, &out);
        text_eval_result_free(&res);
    }
    return close_outputs(o, &out, status);
}

/* DIR may instead be a .tsv file of labeled sentences. */
static int is_text_file(const char *path) {
    struct stat st;
    size_t n = strlen(path);
    return n > 4 && strcasecmp(path + n - 4, ".tsv") == 0 && stat(path, &st) == 0 &&
           S_ISREG(st.st_mode);
}

/* Options into o; returns -1 after printing usage on a bad one, 1 for --help, else 0. */
static int parse_options(int argc, char **argv, eval_options *o) {
    static const struct option longopts[] = {
        {"model", required_argument, 0, 'm'}, {"class-map", required_argument, 0, 'c'},
        {"json", required_argument, 0, 'j'},  {"predictions", required_argument, 0, 'p'},
        {"batch", required_argument, 0, 'b'}, {"threads", required_argument, 0, 't'},
        {"size", required_argument, 0, 's'},  {"max-pixels", required_argument, 0, 'x'},
        {"help", no_argument, 0, 'h'},        {0, 0, 0, 0}};
    o->params = vit_default_params();
    o->params.max_batch = 0; /* the default depends on images or texts */
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "m:b:t:h", longopts, NULL)) != -1) {
        long long v = 0;
        switch (c) {
        case 'm':
            o->model_dir = optarg;
            break;
        case 'c':
            o->class_map = optarg;
            break;
        case 'j':
            o->json_path = optarg;
            break;
        case 'p':
            o->pred_path = optarg;
            break;
        case 'b':
            v = o->params.max_batch = (int)cli_parse_int(optarg, 1, 4096, "-b");
            break;
        case 't':
            v = o->params.threads = (int)cli_parse_int(optarg, 1, 1024, "-t");
            break;
        case 's':
            v = o->params.image_size = (int)cli_parse_int(optarg, 1, 8192, "--size");
            break;
        case 'x':
            v = o->params.max_pixels = cli_parse_int(optarg, 1, 2000000000, "--max-pixels");
            break;
        case 'h':
            fputs(usage_text, stdout);
            return 1;
        default:
            fputs(usage_text, stderr);
            return -1;
        }
        if (v < 0) return fputs(usage_text, stderr), -1;
    }
    if (argc - optind != 1) {
        fprintf(stderr, "vit eval: %s\n%s", optind < argc ? "one DIR expected" : "no DIR given",
                usage_text);
        return -1;
    }
    if (o->json_path && o->pred_path && strcmp(o->json_path, "-") == 0 &&
        strcmp(o->pred_path, "-") == 0) {
        fprintf(stderr, "vit eval: --json and --predictions cannot both go to stdout\n");
        return -1;
    }
    o->data_dir = argv[optind];
    return 0;
}

int cli_eval(int argc, char **argv) {
    eval_options o = {0};
    int rc = parse_options(argc, argv, &o);
    if (rc != 0) return rc > 0 ? 0 : 2;
    char model_dir[4096];
    o.model_dir = cli_model_dir(o.model_dir, model_dir, sizeof model_dir);
    return is_text_file(o.data_dir) ? evaluate_text(&o) : evaluate_folder(&o);
}
