/* vit eval on images: walk the folder, decode beside the forward pass, score each image. */
#include "vit/eval/eval_images.h"

#include <stdlib.h>
#include <string.h>

static int preprocess_file(void *self, const char *path, float *pixels, vit_error *err) {
    return vit_preprocess_file(self, path, pixels, err);
}

static int forward(void *self, const float *pixels, int n, float *logits, vit_error *err) {
    return vit_forward(self, pixels, n, logits, err);
}

pipeline_model eval_pipeline_model(vit_context *ctx) {
    return (pipeline_model){.self = ctx,
                            .input_floats = vit_input_floats(ctx),
                            .outputs = vit_num_labels(ctx),
                            .preprocess = preprocess_file,
                            .forward = forward};
}

int eval_map_classes(imagefolder *f, const vit_context *ctx, const char *class_map, int *by_order,
                     vit_error *err) {
    const int L = vit_num_labels(ctx);
    *by_order = 0;
    if (class_map) return imagefolder_map_file(f, class_map, L, err);
    const char **labels = malloc(sizeof *labels * (size_t)L);
    if (!labels) return vit_fail(err, "out of memory");
    for (int i = 0; i < L; i++) labels[i] = vit_label(ctx, i);
    const int rc = imagefolder_map_labels(f, labels, L, by_order, err);
    free(labels);
    return rc;
}

typedef struct {
    const eval_images_options *opt;
    imagefolder_walk *walk;
    eval_report *report;
    float *probs;
    int labels;
    long done;
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

/* Main thread: one batch, items in input order. */
static void batch_done(void *user, const pipeline_item *items, int count) {
    eval_run *r = user;
    const eval_images_options *o = r->opt;
    for (int i = 0; i < count; i++) {
        const pipeline_item *it = &items[i];
        r->done++;
        if (!it->ok) {
            if (o->skipped) o->skipped(o->user, it->path, it->err.msg);
            eval_report_skip(r->report, it->path, it->err.msg);
            continue;
        }
        memcpy(r->probs, it->logits, sizeof(float) * (size_t)r->labels);
        vit_softmax(r->probs, r->labels);
        const int pred = eval_report_add(r->report, it->tag, r->probs);
        if (o->predictions) {
            put_field(it->path, o->predictions);
            fprintf(o->predictions, "\t%d\t%d\t%.6f\n", it->tag, pred, r->probs[pred]);
        }
    }
    if (o->progress) o->progress(o->user, r->done);
}

int eval_images(vit_context *ctx, const imagefolder *f, const eval_images_options *opt,
                eval_report *report, vit_error *err) {
    eval_run r = {.opt = opt, .report = report, .labels = vit_num_labels(ctx)};
    if (opt->predictions) fputs("file\ttrue\tpredicted\tprobability\n", opt->predictions);
    r.probs = malloc(sizeof(float) * (size_t)r.labels);
    if (!r.probs) return vit_fail(err, "out of memory");
    r.walk = imagefolder_walk_open(f, err);
    int rc = -1;
    if (r.walk) {
        const pipeline_model model = eval_pipeline_model(ctx);
        const pipeline_options popt = {.batch = opt->batch, .decode_threads = opt->decode_threads};
        rc = pipeline_run_source(&model, &popt, next_image, batch_done, &r, err);
    }
    imagefolder_walk_close(r.walk);
    free(r.probs);
    return rc;
}
