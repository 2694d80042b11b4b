#ifndef VIT_EVAL_EVAL_IMAGES_H
#define VIT_EVAL_EVAL_IMAGES_H

/* Accuracy of an image classifier on a labelled folder (the ImageFolder layout, see
 * vit/data/imagefolder.h), for `vit eval`:
 *
 *   imagefolder f;                      imagefolder_open(&f, "val", &err);
 *   eval_map_classes(&f, ctx, NULL, 0, NULL, &by_order, &err);     // or a class map file
 *   eval_report *rep = eval_report_create(vit_num_labels(ctx), &err);
 *   eval_images(ctx, &f, &(eval_images_options){.batch = 16}, rep, &err);
 *
 * Images are decoded beside the forward pass (vit/data/pipeline.h); a file that cannot be read is
 * skipped into the report with its reason and the evaluation goes on. */

#include <stdio.h>

#include "vit/data/imagefolder.h"
#include "vit/data/pipeline.h"
#include "vit/eval/report.h"
#include "vit/vit.h"

/* A context as the pipeline's model: files preprocessed as vit_preprocess_file, batches through
 * vit_forward into logits. */
pipeline_model eval_pipeline_model(vit_context *ctx);

/* Zero-shot: a CLIP or SigLIP image tower scored against class names (vit_classes_create) as the
 * pipeline's model. Each input's outputs are its K scores (vit_zero_shot: HF's logits_per_image)
 * followed by their K probabilities (the softmax over the classes, or each one's sigmoid); zs must
 * outlive the run. */
typedef struct {
    vit_context *image;
    const vit_classes *classes;
} eval_zero_shot;
pipeline_model eval_zero_shot_model(const eval_zero_shot *zs);

/* The classes images are scored against: the class names when classes is given (zero-shot), else
 * the context's labels. Their number, and the name of class i. */
int eval_num_classes(const vit_context *ctx, const vit_classes *classes);
const char *eval_class_name(const vit_context *ctx, const vit_classes *classes, int i);

/* Maps f's folders to the classes, names[0..num_names) (zero-shot's class names; names NULL: the
 * context's labels): by class_map (a file of folder names, one per line, line number = class
 * index) when given, else by the ImageFolder matching rules (*by_order set when the folders were
 * taken in sorted order for want of a match). */
int eval_map_classes(imagefolder *f, const vit_context *ctx, const char *const *names,
                     int num_names, const char *class_map, int *by_order, vit_error *err);

/* One input's outcome, for a caller that gathers them (the ranks of a distributed eval). */
typedef struct {
    long index; /* in the folder's walk order, all ranks' inputs counted */
    const char *path;
    int true_label;
    int pred;   /* -1: skipped, reason says why */
    float prob; /* of pred */
    int in_top5;
    const char *reason;
} eval_result;

typedef struct {
    int batch; /* images per forward pass (<= the context's max_batch) */
    /* NULL: the model's own classes; else zero-shot against these (the context is the image tower
     * of the folder their text tower came from) */
    const vit_classes *classes;
    /* this process's share of the folder: the inputs whose index in the walk is rank modulo
     * ranks (0 and 0: all of them) */
    int rank, ranks;
    /* each input's outcome, in order (may be NULL); the report and predictions get them too */
    void (*result)(void *user, const eval_result *r);
    int decode_threads; /* see pipeline_options */
    FILE *predictions;  /* NULL, or one row per image: file, true, predicted, probability */
    void *user;
    /* each skipped input (path, reason), and each batch done (images gone through so far);
     * called on the calling thread; either may be NULL */
    void (*skipped)(void *user, const char *path, const char *reason);
    void (*progress)(void *user, long done);
} eval_images_options;

/* A --predictions row: file, true class, predicted class, its probability. */
void eval_write_prediction(FILE *out, const eval_result *res);
/* The header line of the --predictions file. */
#define EVAL_PREDICTIONS_HEADER "file\ttrue\tpredicted\tprobability\n"

/* Evaluates every image of the mapped folder f into report. Returns 0, or -1 with err when the
 * run itself fails (out of memory, a folder that cannot be listed at the top, a forward pass). */
int eval_images(vit_context *ctx, const imagefolder *f, const eval_images_options *opt,
                eval_report *report, vit_error *err);

#endif
