/* vit eval on text-line images: CER and WER of a VisionEncoderDecoderModel, or of a file of
 * another recogniser's output (Tesseract's), through the same metric code. */
#include "vit/cli/ocr_eval.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "vit/base/clock.h"
#include "vit/cli/cli.h"
#include "vit/eval/eval_ocr.h"

/* The labels: DIR/labels.tsv for a folder, else the file named. */
static const char *labels_path(const char *data, char *buf, size_t size) {
    if (cli_is_dir(data))
        snprintf(buf, size, "%s/labels.tsv", data);
    else
        snprintf(buf, size, "%s", data);
    return buf;
}

static FILE *open_output(const char *path) {
    if (!path) return NULL;
    if (strcmp(path, "-") == 0) return stdout;
    FILE *f = fopen(path, "w");
    if (!f) fprintf(stderr, "vit eval: %s: %s\n", path, strerror(errno));
    return f;
}

/* Closes f (not stdout): 0, or -1 after reporting a write error. */
static int close_output(FILE *f, const char *path) {
    if (!f) return 0;
    int bad = ferror(f);
    bad |= f == stdout ? fflush(f) != 0 : fclose(f) != 0;
    if (bad) fprintf(stderr, "vit eval: %s: write error\n", path);
    return bad ? -1 : 0;
}

/* The report on stdout (unless --json or --predictions took it), the JSON and the lines. */
static int write_report(const cli_ocr_eval *a, const ocr_report *r, const ocr_summary *s) {
    FILE *json = open_output(a->json_path), *lines = open_output(a->lines_path);
    int status = (a->json_path && !json) || (a->lines_path && !lines) ? 1 : 0;
    if (status == 0) {
        if (json != stdout && lines != stdout) ocr_report_print(r, s, stdout);
        if (json && ocr_report_write_json(r, s, json) != 0) status = 1;
        if (lines && ocr_report_write_lines(r, lines) != 0) status = 1;
    }
    if (close_output(json, a->json_path) != 0 || close_output(lines, a->lines_path) != 0)
        status = 1;
    if (status == 0 && ocr_report_count(r) == 0) {
        fprintf(stderr, "vit eval: %s: no line could be read (%d skipped)\n", s->data,
                ocr_report_skipped(r));
        status = 2;
    }
    return status;
}

static void show_progress(void *user, long done, long total) {
    const double *start = user;
    if (!isatty(STDERR_FILENO)) return;
    const double rate = done / (clock_seconds() - *start + 1e-9);
    fprintf(stderr, "\r\033[K%ld/%ld lines  %.1f lines/s", done, total, rate);
    if (done == total) fputs("\r\033[K", stderr);
}

/* The model over the lines; *seconds gets the time spent reading them. */
static int run_model(const cli_ocr_eval *a, const line_tsv *truth, ocr_report *r, double *seconds) {
    vit_gen_params gp = vit_gen_default_params();
    gp.image = a->params;
    if (a->beams > gp.max_beams) gp.max_beams = a->beams;
    vit_error err = {{0}};
    vit_gen_context *g = vit_gen_load(a->model_dir, &gp, &err);
    if (!g) {
        fprintf(stderr, "vit eval: %s\n", err.msg);
        return 1;
    }
    vit_gen_options gen = vit_gen_default_options(g);
    if (a->beams > 0) gen.num_beams = a->beams;
    double start = clock_seconds();
    const eval_ocr_options o = {
        .batch = a->params.max_batch, .gen = &gen, .user = &start, .progress = show_progress};
    const int rc = eval_ocr_model(g, truth, &o, r, &err);
    *seconds = clock_seconds() - start;
    if (rc != 0) fprintf(stderr, "vit eval: %s\n", err.msg);
    vit_gen_free(g);
    return rc != 0;
}

static int run_hypotheses(const cli_ocr_eval *a, const line_tsv *truth, ocr_report *r) {
    line_tsv hyp;
    vit_error err = {{0}};
    if (line_tsv_read(&hyp, a->hypotheses, &err) != 0) {
        fprintf(stderr, "vit eval: %s\n", err.msg);
        return 2;
    }
    const int rc = eval_ocr_hypotheses(truth, &hyp, r, &err);
    if (rc != 0) fprintf(stderr, "vit eval: %s\n", err.msg);
    line_tsv_free(&hyp);
    return rc != 0 ? 2 : 0;
}

/* A folder without labels.tsv: most likely an image folder given to a text-line model. */
static int no_labels(const cli_ocr_eval *a, const char *tsv) {
    if (!cli_is_dir(a->data) || access(tsv, F_OK) == 0) return 0;
    if (a->hypotheses)
        fprintf(stderr, "vit eval: %s has no labels.tsv (`file<TAB>text` lines: the true texts)\n",
                a->data);
    else
        fprintf(stderr,
                "vit eval: %s is an image-to-text model (VisionEncoderDecoderModel): it is "
                "evaluated on text-line images listed in DIR/labels.tsv (`file<TAB>text`, what vit "
                "render-lines writes), and %s has none\n",
                a->model_dir, a->data);
    return 1;
}

int cli_eval_ocr(const cli_ocr_eval *a) {
    char tsv[PATH_MAX];
    line_tsv truth;
    vit_error err = {{0}};
    if (no_labels(a, labels_path(a->data, tsv, sizeof tsv))) return 2;
    if (line_tsv_read(&truth, tsv, &err) != 0) {
        fprintf(stderr, "vit eval: %s\n", err.msg);
        return 2;
    }
    ocr_report *r = ocr_report_create(&err);
    double seconds = 0;
    int status = !r              ? 1
                 : a->hypotheses ? run_hypotheses(a, &truth, r)
                                 : run_model(a, &truth, r, &seconds);
    if (status == 0) {
        const ocr_summary s = {.model = a->hypotheses ? NULL : a->model_dir,
                               .hypotheses = a->hypotheses,
                               .data = tsv,
                               .seconds = seconds,
                               .worst = a->worst};
        status = write_report(a, r, &s);
    }
    ocr_report_free(r);
    line_tsv_free(&truth);
    return status;
}
