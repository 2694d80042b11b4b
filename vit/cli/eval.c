/* vit eval: a model's accuracy on labeled image folders (the ImageFolder layout). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "vit/base/clock.h"
#include "vit/base/dist.h"
#include "vit/cli/cli.h"
#include "vit/cli/json_writer.h"
#include "vit/cli/ocr_eval.h"
#include "vit/cli/zero_shot.h"
#include "vit/eval/report.h"
#include "vit/data/imagefolder.h"
#include "vit/eval/eval_dist.h"
#include "vit/eval/eval_images.h"
#include "vit/eval/eval_tags.h"
#include "vit/eval/eval_text.h"
#include "vit/vit.h"

#define DEFAULT_IMAGE_BATCH 16

enum {
    OPT_CLASS_MAP = 1,
    OPT_JSON,
    OPT_JSON_FILE,
    OPT_PREDICTIONS,
    OPT_HYPOTHESES,
    OPT_WORST,
    OPT_BEAMS,
    OPT_CONFUSION_PNG,
    OPT_BEAMS_OLD,
    OPT_PAIR,
};

static const cli_option options[] = {
    CLI_MODEL_OPTION("model directory", CLI_MODEL_DEFAULT),
    {OPT_CLASS_MAP, "class-map", 0, "FILE",
     "folder names, one per line, line number = class index (timm's class map)",
     "match folder names to the model's labels"},
    {OPT_JSON, "json", 0, NULL,
     "the whole report as JSON on standard output, instead of the text (a flag, as in every "
     "command)",
     NULL},
    {OPT_JSON_FILE, "json-file", 0, "FILE",
     "also write the whole report as JSON into FILE (the text still on standard output)", NULL},
    {OPT_PREDICTIONS, "predictions", 0, "OUT",
     "one row per input: file, true, predicted, probability (text lines: file, true, read, "
     "character edits, characters; '-': standard output)",
     NULL},
    {OPT_CONFUSION_PNG, "confusion-png", 0, "FILE",
     "draw the confusion matrix (the classes that occur, at most 64) as PNG", NULL},
    {OPT_PAIR, "pair", 0, NULL,
     "FILE.tsv holds pairs of texts, `a<TAB>b<TAB>label` (a cross-encoder, NLI, paraphrase)", NULL},
    CLI_EXIF_RAW,
    CLI_BATCH_OPTION("inputs per forward pass", "16 images, 32 texts"),
    CLI_THREADS_OPTION,
    CLI_SIZE_OPTION("run at N x N pixels"),
    CLI_PIXELS_OPTION,
    CLI_BACKEND_OPTION,
    CLI_PRECISION_OPTION,
    {0, NULL, 0, NULL, "text-line images (an image-to-text model, or another recogniser's output)",
     NULL},
    {OPT_HYPOTHESES, "hypotheses", 0, "FILE",
     "score this recogniser output (`file<TAB>text` lines, e.g. Tesseract's) instead of a model",
     NULL},
    {OPT_WORST, "worst", 0, "N", "list the N lines with the highest character error rate", "10"},
    {OPT_BEAMS, "num-beams", 0, "N", "beam search with N beams (1: greedy)",
     "generation_config.json's num_beams"},
    {OPT_BEAMS_OLD, "beams", 0, "N", "the old name of --num-beams", NULL},
    CLI_ZERO_SHOT_OPTIONS,
};

static const cli_command command = {
    "eval",
    "accuracy on labelled image folders or TSV files; CER and WER on text-line images",
    "[options] DIR|FILE.tsv|FILE.conll",
    "DIR holds one folder per class (DIR/<class>/.../*.png|jpg|jpeg|webp|tif|tiff|gif|bmp).\n"
    "Classes come from --class-map or by matching folder names to the model's labels. FILE.tsv\n"
    "holds `sentence<TAB>label` lines (with a header line) for a BERT text classifier, or with\n"
    "--pair `a<TAB>b<TAB>label` lines for a classifier of pairs. Over N\n"
    "processes: mpirun -np N vit eval ... DIR (as root, mpirun also wants --allow-run-as-root).\n\n"
    "A CLIP or SigLIP model is evaluated zero-shot: the classes are the names of --classes-file\n"
    "(or --classes) in index order, each put into the templates and embedded once; folders are\n"
    "mapped to them as to a model's labels (by name, or by --class-map's line numbers).\n\n"
    "An image-to-text model (VisionEncoderDecoderModel) is evaluated on text-line images: DIR\n"
    "holds labels.tsv (`file<TAB>text` lines, no header: what vit render-lines writes), or\n"
    "FILE.tsv is such a file, its images beside it. The report gives the character and word\n"
    "error rates (Levenshtein distances over Unicode code points and over white-space-separated\n"
    "words, summed over the lines and divided by the true texts' characters or words; white\n"
    "space collapsed, nothing else normalised), the lines read exactly, lines/s and the worst\n"
    "lines. --hypotheses scores another recogniser's output file the same way, without a model.\n\n"
    "A token classifier (NER) reads FILE, whatever its name (.conll, .tsv, ...), as labelled\n"
    "words: CoNLL (a word a\n"
    "line, its label the last field: `word<TAB>label`, `word label`, CoNLL-2003's four columns;\n"
    "a blank line between sentences; -DOCSTART- left out) or JSON lines ({\"tokens\": [...],\n"
    "\"ner_tags\": [...]}, tags by name or id2label index). A word's prediction is its first\n"
    "token's label, as transformers' run_ner.py labels words; the report gives the words'\n"
    "accuracy and seqeval's entity-level precision, recall and F1 per type and micro-averaged\n"
    "(its default chunking: IOB2/IOB1, a chunk ends at O, B- or a new type). --predictions\n"
    "writes `word<TAB>true<TAB>predicted` lines.",
    options,
    sizeof options / sizeof options[0]};

const cli_command *cli_eval_command(void) {
    return &command;
}

typedef struct {
    const char *model_dir, *data_dir, *class_map, *json_path, *pred_path, *hypotheses,
        *confusion_png;
    int worst, beams, ocr_option; /* text lines: --worst, --num-beams; whether either was given */
    int json_flag;                /* --json: the JSON report is json_path "-" */
    int pair;                     /* --pair: FILE.tsv's lines are pairs */
    cli_common common; /* -m; the batch (0: images' or texts' default) and compute options */
    cli_zero_shot zs;  /* zero-shot: the class names and templates; zs.classes once embedded */
} eval_options;

typedef struct {
    FILE *json, *predictions;
    const char *confusion_png; /* NULL: no picture */
} outputs;

typedef struct {
    imagefolder folder;
    vit_context *ctx;
    outputs out;         /* process 0's */
    eval_report *report; /* every process's; process 0's gets the whole folder */
    int progress;        /* stderr is a terminal: keep a progress line there */
    long total;          /* inputs to go through (counted only for progress) */
    double start, shown; /* seconds */
} eval_run;

static void clear_progress(const eval_run *r) {
    if (r->progress) fputs("\r\033[K", stderr);
}

static void show_progress(void *user, long finished) {
    eval_run *r = user;
    double t = clock_seconds();
    if (!r->progress || (t - r->shown < 0.25 && finished < r->total)) return;
    r->shown = t;
    double rate = finished / (t - r->start + 1e-9);
    long left = r->total > finished ? r->total - finished : 0;
    long eta = rate > 0 ? (long)(left / rate + 0.5) : 0;
    fprintf(stderr, "\r\033[K%ld/%ld  %.1f images/s  ETA %ld:%02ld", finished, r->total, rate,
            eta / 60, eta % 60);
}

static void report_skip(void *user, const char *path, const char *reason) {
    (void)path;
    clear_progress(user);
    fprintf(stderr, "vit eval: skipped %s\n", reason);
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
    out->confusion_png = o->confusion_png;
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
    vit_error err = {{0}};
    if (out->confusion_png && eval_report_count(rep) > 0 &&
        eval_report_write_confusion_png(rep, s, out->confusion_png, &err) != 0) {
        fprintf(stderr, "vit eval: %s\n", err.msg);
        return 1;
    }
    if (eval_report_count(rep) > 0) return 0;
    fprintf(stderr, "vit eval: %s: no %s could be evaluated (%d skipped)\n", s->data,
            strcmp(s->unit, "texts") == 0 ? "text" : "image", eval_report_skipped(rep));
    return 2;
}

static int map_classes(eval_run *r, const eval_options *o) {
    vit_error err = {{0}};
    int by_order = 0;
    const int zero_shot = cli_zero_shot_given(&o->zs);
    const int L = zero_shot ? o->zs.num_names : vit_num_labels(r->ctx);
    if (eval_map_classes(&r->folder, r->ctx, zero_shot ? o->zs.names : NULL, o->zs.num_names,
                         o->class_map, &by_order, &err) != 0) {
        fprintf(stderr, "vit eval: %s\n", err.msg);
        return -1;
    }
    if (by_order)
        fprintf(stderr,
                "vit eval: warning: %s: no folder name matches a label of the model; taking the %d "
                "folders in sorted order as classes 0..%d (give --class-map to be sure)\n",
                o->data_dir, L, L - 1);
    return 0;
}

/* The report's view of the classes: label names and the folder of each class (NULL if none). */
static int report_and_finish(const eval_run *r, const eval_options *o, double seconds) {
    const int L = eval_num_classes(r->ctx, o->zs.classes);
    const char **labels = malloc(sizeof *labels * (size_t)L);
    const char **folders = calloc((size_t)L, sizeof *folders);
    int status = 1;
    if (labels && folders) {
        for (int i = 0; i < L; i++) labels[i] = eval_class_name(r->ctx, o->zs.classes, i);
        for (int i = 0; i < r->folder.num_folders; i++)
            folders[r->folder.label_of[i]] = r->folder.folders[i];
        eval_summary s = {.model = o->model_dir,
                          .data = o->data_dir,
                          .labels = labels,
                          .folders = folders,
                          .unit = "images",
                          .seconds = seconds};
        status = finish(r->report, &s, &r->out);
    } else {
        fputs("vit eval: out of memory\n", stderr);
    }
    free(labels);
    free(folders);
    return status;
}

/* Zero-shot: the class names read (the folders are mapped to them before they are embedded).
 * Returns 0, or the exit status after reporting what failed. */
static int read_class_names(eval_run *r, eval_options *o, const char *dir) {
    const cli_outcome fits = cli_zero_shot_check_model(&command, &o->zs, r->ctx, dir);
    if (fits != CLI_PARSED) return cli_exit_status(fits);
    vit_error err = {{0}};
    if (cli_zero_shot_given(&o->zs) && cli_zero_shot_read(&o->zs, &err) != 0) {
        fprintf(stderr, "vit eval: %s\n", err.msg);
        return 1;
    }
    return 0;
}

/* Then their prompts embedded with the folder's text tower (every process embeds them all). */
static int embed_class_names(eval_options *o, const char *dir) {
    if (!cli_zero_shot_given(&o->zs)) return 0;
    vit_error err = {{0}};
    if (cli_zero_shot_embed(&o->zs, dir, &o->common.params, &err) != 0) {
        fprintf(stderr, "vit eval: %s\n", err.msg);
        return 1;
    }
    if (dist_get().rank == 0)
        fprintf(stderr, "vit eval: %d class names x %d template%s embedded in %.2f s\n",
                o->zs.num_names, o->zs.num_prompts, o->zs.num_prompts == 1 ? "" : "s",
                o->zs.seconds);
    return 0;
}

/* The folder, the model, its classes, the outputs (process 0's) and the report. Returns 0, or the
 * exit status after reporting what failed. */
static int start_folder(eval_run *r, eval_options *o) {
    vit_error err = {{0}};
    if (imagefolder_open(&r->folder, o->data_dir, &err) != 0) {
        fprintf(stderr, "vit eval: %s\n", err.msg);
        return 2;
    }
    char dir[4096];
    if (!(r->ctx = cli_load_labelled(&command, &o->common, dir, sizeof dir))) return 1;
    int status = read_class_names(r, o, dir);
    if (status != 0) return status;
    if (map_classes(r, o) != 0) return 2;
    if ((status = embed_class_names(o, dir)) != 0) return status;
    if (dist_get().rank == 0 && open_outputs(o, &r->out) != 0) return 1;
    if (!(r->report = eval_report_create(eval_num_classes(r->ctx, o->zs.classes), &err))) {
        fprintf(stderr, "vit eval: %s\n", err.msg);
        return 1;
    }
    return 0;
}

/* Walks and classifies the image folder (under mpirun, this process's share of it); process 0
 * reports the whole. Returns the exit status. */
static int evaluate_images(eval_run *r, const eval_options *o) {
    const dist_world w = dist_get();
    r->progress = w.rank == 0 && isatty(STDERR_FILENO); /* process 0's share, as a share of all */
    if (r->progress) r->total = (count_inputs(&r->folder) + w.size - 1) / w.size;
    r->start = clock_seconds();
    const eval_images_options opt = {.batch = o->common.params.max_batch,
                                     .classes = o->zs.classes,
                                     .decode_threads = cli_decode_threads(o->common.params.threads),
                                     .predictions = r->out.predictions,
                                     .user = r,
                                     .skipped = report_skip,
                                     .progress = show_progress};
    vit_error err = {{0}};
    const int rc = eval_images_dist(r->ctx, &r->folder, &opt, r->report, &err);
    const double seconds = clock_seconds() - r->start;
    clear_progress(r);
    if (rc != 0) fprintf(stderr, "vit eval: %s\n", err.msg);
    if (w.rank != 0) return rc != 0;
    const int status = report_and_finish(r, o, seconds);
    return rc != 0 ? 1 : status;
}

static int evaluate_folder(eval_options *o) {
    if (o->common.params.max_batch == 0) o->common.params.max_batch = DEFAULT_IMAGE_BATCH;
    eval_run r = {0};
    int status = start_folder(&r, o);
    vit_error err = {{0}};
    if (dist_all_succeeded(status, "to start", &err) == 0) { /* under mpirun: all, or none */
        status = evaluate_images(&r, o);
    } else if (status == 0) {
        fprintf(stderr, "vit eval: %s\n", err.msg);
        status = 1;
    }
    status = close_outputs(o, &r.out, status);
    eval_report_free(r.report);
    cli_zero_shot_free(&o->zs);
    vit_free(r.ctx);
    imagefolder_close(&r.folder);
    return status;
}

/* `sentence<TAB>label` lines through a BERT classifier (vit/eval/eval_text.h). */

/* A regression model's report: how its scores agree with the file's, as STS-B is scored. */
static int finish_scores(const eval_options *o, const text_eval_result *res, const outputs *out) {
    const int skipped = eval_report_skipped(res->report);
    const char *unit = o->pair ? "pairs" : "texts";
    if (out->json != stdout && out->predictions != stdout)
        printf("model:     %s\ndata:      %s\n%s:%*s%d scored, %d skipped (%.1f s)\n"
               "Pearson:   %.4f\nSpearman:  %.4f\nMSE:       %.4f\n",
               o->model_dir, o->data_dir, unit, (int)(11 - strlen(unit) - 1), "", res->scored,
               skipped, res->seconds, res->pearson, res->spearman, res->mse);
    if (out->json != stdout && out->predictions != stdout)
        eval_report_print_skipped(res->report, stdout);
    if (out->json) {
        json_writer w = json_begin(out->json);
        json_object(&w);
        json_key(&w, "model"), json_string(&w, o->model_dir);
        json_key(&w, "data"), json_string(&w, o->data_dir);
        json_key(&w, unit), json_int(&w, res->scored);
        json_key(&w, "skipped"), json_int(&w, skipped);
        json_key(&w, "pearson"), json_float(&w, (float)res->pearson); /* NaN: null */
        json_key(&w, "spearman"), json_float(&w, (float)res->spearman);
        json_key(&w, "mse"), json_float(&w, (float)res->mse);
        json_end(&w);
        json_line(&w);
        if (ferror(out->json)) return 1;
    }
    if (res->scored > 0) return 0;
    fprintf(stderr, "vit eval: %s: no text could be scored (%d skipped)\n", o->data_dir, skipped);
    return 2;
}

static int evaluate_text(const eval_options *o) {
    if (o->class_map)
        fprintf(stderr, "vit eval: warning: --class-map applies to image folders; ignored\n");
    outputs out;
    if (open_outputs(o, &out) != 0) return 1;
    text_eval_options topt = {.batch = o->common.params.max_batch,
                              .threads = o->common.params.threads,
                              .backend = o->common.params.backend,
                              .precision = o->common.params.precision,
                              .pairs = o->pair};
    text_eval_result res;
    vit_error err = {{0}};
    int status;
    if (text_eval_tsv(o->model_dir, o->data_dir, &topt, out.predictions, &res, &err) != 0) {
        fprintf(stderr, "vit eval: %s\n", err.msg);
        status = 1;
    } else if (res.regression) {
        status = finish_scores(o, &res, &out);
        text_eval_result_free(&res);
    } else {
        eval_summary s = {.model = o->model_dir,
                          .data = o->data_dir,
                          .labels = res.labels,
                          .unit = o->pair ? "pairs" : "texts",
                          .seconds = res.seconds};
        status = finish(res.report, &s, &out);
        text_eval_result_free(&res);
    }
    return close_outputs(o, &out, status);
}

/* Labelled words (CoNLL, JSON lines) through a token classifier (vit/eval/eval_tags.h). */
static int evaluate_tags(const eval_options *o) {
    if (o->class_map || cli_zero_shot_given(&o->zs) || o->confusion_png || o->pair)
        fprintf(stderr, "vit eval: warning: --class-map, --classes, --confusion-png and --pair "
                        "do not apply to tagged words; ignored\n");
    outputs out;
    if (open_outputs(o, &out) != 0) return 1;
    const tag_eval_options topt = {.batch = o->common.params.max_batch,
                                   .threads = o->common.params.threads,
                                   .backend = o->common.params.backend,
                                   .precision = o->common.params.precision};
    tag_eval_result res;
    vit_error err = {{0}};
    int status = 0;
    if (tag_eval_file(o->model_dir, o->data_dir, &topt, out.predictions, &res, &err) != 0) {
        fprintf(stderr, "vit eval: %s\n", err.msg);
        status = 1;
    } else {
        if (out.json != stdout && out.predictions != stdout)
            tag_eval_print(&res, o->model_dir, o->data_dir, stdout);
        if (out.json) tag_eval_write_json(&res, o->model_dir, o->data_dir, out.json);
        tag_eval_result_free(&res);
    }
    return close_outputs(o, &out, status);
}

static int is_regular_file(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* DIR may instead be a .tsv file of labeled sentences. */
static int is_text_file(const char *path) {
    struct stat st;
    size_t n = strlen(path);
    return n > 4 && strcasecmp(path + n - 4, ".tsv") == 0 && stat(path, &st) == 0 &&
           S_ISREG(st.st_mode);
}

static int eval_option(const cli_parser *p, int id, void *user) {
    eval_options *o = user;
    if (CLI_IS_ZERO_SHOT_OPTION(id)) return cli_zero_shot_option(p, id, &o->zs);
    switch (id) {
    case OPT_CLASS_MAP:
        return o->class_map = p->value, 0;
    case OPT_JSON:
        return o->json_flag = 1, 0;
    case OPT_PAIR:
        return o->pair = 1, 0;
    case OPT_JSON_FILE:
        return o->json_path = p->value, 0;
    case OPT_PREDICTIONS:
        return o->pred_path = p->value, 0;
    case OPT_HYPOTHESES:
        return o->hypotheses = p->value, 0;
    case OPT_CONFUSION_PNG:
        return o->confusion_png = p->value, 0;
    case OPT_WORST:
        return o->ocr_option = 1, cli_int(p, 0, 1000000, &o->worst);
    case OPT_BEAMS:
    case OPT_BEAMS_OLD:
        return o->ocr_option = 1, cli_int(p, 1, 64, &o->beams);
    }
    return 0;
}

static cli_outcome parse_options(int argc, char **argv, eval_options *o) {
    o->common.params = vit_default_params();
    o->common.params.max_batch = 0;        /* the default depends on images or texts */
    o->common.params.exif_orientation = 0; /* dataset parity with timm unless --exif */
    o->common.params.inference_only = 1;   /* one copy of the weights in memory */
    cli_parser p;
    const cli_outcome parsed = cli_parse(&p, &command, argc, argv, &o->common, eval_option, o);
    if (parsed != CLI_PARSED) return parsed;
    if (o->json_flag && p.num_rest == 2) /* --json FILE DIR: the old form, --json took a file */
        return cli_usage_error(&command,
                               "one DIR expected; --json is a flag (the report as JSON on standard "
                               "output), --json-file FILE writes it into a file");
    if (p.num_rest != 1)
        return cli_usage_error(&command, p.num_rest ? "one DIR expected" : "no DIR given");
    if (o->json_flag && o->json_path)
        return cli_usage_error(&command, "--json and --json-file together");
    if (o->json_flag) o->json_path = "-";
    const int both_stdout = o->json_path && o->pred_path && strcmp(o->json_path, "-") == 0 &&
                            strcmp(o->pred_path, "-") == 0;
    if (both_stdout)
        return cli_usage_error(&command, "--json and --predictions cannot both go to stdout");
    o->data_dir = p.rest[0];
    if (o->pair && !is_text_file(o->data_dir))
        return cli_usage_error(&command, "%s: --pair is for a FILE.tsv of pairs", o->data_dir);
    if (is_text_file(o->data_dir) && cli_zero_shot_given(&o->zs))
        return cli_usage_error(&command, "%s: --classes and --classes-file are for image folders",
                               o->data_dir);
    return cli_zero_shot_check(&command, &o->zs);
}

/* Text-line images: an image-to-text model, or --hypotheses (vit/cli/ocr_eval.h). */
static int evaluate_lines(const eval_options *o) {
    if (dist_get().size > 1) {
        if (dist_get().rank == 0)
            fprintf(stderr, "vit eval: text lines are evaluated by one process; run it without "
                            "mpirun\n");
        return 2;
    }
    if (o->class_map || cli_zero_shot_given(&o->zs) || o->confusion_png)
        fprintf(stderr, "vit eval: warning: --class-map, --classes, --classes-file and "
                        "--confusion-png apply to classes; ignored for text lines\n");
    cli_ocr_eval a = {.model_dir = o->model_dir,
                      .data = o->data_dir,
                      .hypotheses = o->hypotheses,
                      .json_path = o->json_path,
                      .lines_path = o->pred_path,
                      .worst = o->worst,
                      .beams = o->beams,
                      .params = o->common.params};
    if (a.params.max_batch == 0) a.params.max_batch = DEFAULT_IMAGE_BATCH;
    return cli_eval_ocr(&a);
}

/* A file of labelled text, read as its model reads: a token classifier's as labelled words
 * (CoNLL or JSON lines, whatever its name: CoNLL files are often named .tsv), a sequence
 * classifier's as a FILE.tsv of texts; a model and a file that do not go together refused. */
static int evaluate_file(const eval_options *o) {
    vit_model_kind kind;
    int tags;
    vit_error err = {{0}};
    if (vit_folder_kind(o->model_dir, &kind, &err) != 0 ||
        vit_folder_tags(o->model_dir, &tags, &err) != 0) {
        fprintf(stderr, "vit eval: %s\n", err.msg);
        return 1;
    }
    if (tags && o->pair) {
        fprintf(stderr,
                "vit eval: %s is a token classifier: it reads %s as labelled words, not pairs "
                "(--pair is for a classifier of pairs)\n",
                o->model_dir, o->data_dir);
        return 1;
    }
    if (tags) return evaluate_tags(o);
    if (kind == VIT_KIND_TEXT && !is_text_file(o->data_dir)) {
        fprintf(stderr,
                "vit eval: %s is no token classifier: it reads a FILE.tsv of labelled texts, "
                "and %s is not one (labelled words are for a token classifier)\n",
                o->model_dir, o->data_dir);
        return 1;
    }
    return is_text_file(o->data_dir) ? evaluate_text(o) : evaluate_tags(o);
}

int cli_eval(int argc, char **argv) {
    eval_options o = {.worst = 10};
    const cli_outcome parsed = parse_options(argc, argv, &o);
    if (parsed != CLI_PARSED) {
        cli_zero_shot_free(&o.zs);
        return cli_exit_status(parsed);
    }
    char model_dir[4096];
    o.model_dir = cli_model_dir("eval", o.common.model, model_dir, sizeof model_dir);
    if (!o.model_dir) {
        cli_zero_shot_free(&o.zs);
        return 1;
    }
    if (o.hypotheses || cli_is_image_to_text(o.model_dir)) {
        const int status = evaluate_lines(&o);
        cli_zero_shot_free(&o.zs);
        return status;
    }
    if (o.ocr_option)
        fprintf(stderr,
                "vit eval: warning: --worst and --num-beams apply to text lines; ignored\n");
    if (!is_regular_file(o.data_dir)) return evaluate_folder(&o);
    if (dist_get().size > 1) {
        if (dist_get().rank == 0)
            fprintf(stderr,
                    "vit eval: %s: a TSV file is evaluated by one process; run it without "
                    "mpirun\n",
                    o.data_dir);
        return 2;
    }
    return evaluate_file(&o);
}
