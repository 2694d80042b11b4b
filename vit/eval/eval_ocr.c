/* Text-line recognition scored against transcripts: a model run in batches, or a file of another
 * recogniser's output. */
#include "vit/eval/eval_ocr.h"

#include <limits.h>
#include <stdlib.h>

/* Images first .. first + *n - 1 preprocessed into pixels; those that fail are skipped into the
 * report. names[k] gets the entry of each image kept, *n their number. */
static int preprocess_batch(vit_context *img, const line_tsv *set, int first, int *n, float *pixels,
                            int *names, ocr_report *r, vit_error *err) {
    const size_t per = vit_input_floats(img);
    int kept = 0;
    for (int i = first; i < first + *n; i++) {
        char path[PATH_MAX];
        vit_error why = {{0}};
        if (line_tsv_path(set, i, path, sizeof path) != 0) {
            snprintf(why.msg, sizeof why.msg, "%s: path too long", set->files[i]);
        } else if (vit_preprocess_file(img, path, pixels + per * (size_t)kept, &why) == 0) {
            names[kept++] = i;
            continue;
        }
        if (ocr_report_skip(r, set->files[i], why.msg) != 0) return vit_fail(err, "out of memory");
    }
    *n = kept;
    return 0;
}

/* Generates the kept images' texts and scores them. */
static int score_batch(vit_gen_context *g, const line_tsv *set, const eval_ocr_options *o,
                       const float *pixels, const int *names, int n, vit_generation *out,
                       ocr_report *r, vit_error *err) {
    if (n == 0) return 0;
    if (vit_generate(g, pixels, n, o->gen, out, err) != 0) return -1;
    int rc = 0;
    for (int k = 0; rc == 0 && k < n; k++)
        rc = ocr_report_add(r, set->files[names[k]], set->texts[names[k]], out[k].text, err);
    vit_generation_free(out, n);
    return rc;
}

int eval_ocr_model(vit_gen_context *g, const line_tsv *set, const eval_ocr_options *o,
                   ocr_report *r, vit_error *err) {
    vit_context *img = vit_gen_image_context(g);
    const int batch = o->batch > 0 ? o->batch : 1;
    float *pixels = malloc(sizeof *pixels * vit_input_floats(img) * (size_t)batch);
    int *names = malloc(sizeof *names * (size_t)batch);
    vit_generation *out = calloc((size_t)batch, sizeof *out);
    int rc = !pixels || !names || !out ? vit_fail(err, "out of memory") : 0;
    for (int first = 0; rc == 0 && first < set->count; first += batch) {
        int n = set->count - first < batch ? set->count - first : batch;
        rc = preprocess_batch(img, set, first, &n, pixels, names, r, err);
        if (rc == 0) rc = score_batch(g, set, o, pixels, names, n, out, r, err);
        if (rc == 0 && o->progress) {
            const long done = first + batch < set->count ? first + batch : set->count;
            o->progress(o->user, done, set->count);
        }
    }
    free(pixels), free(names), free(out);
    return rc;
}

int eval_ocr_hypotheses(const line_tsv *truth, const line_tsv *hyp, ocr_report *r, vit_error *err) {
    for (int j = 0; j < hyp->count; j++)
        if (line_tsv_find(truth, hyp->files[j]) < 0)
            return vit_fail(err, "%s:%ld: %s is not in %s", hyp->path, hyp->lines[j], hyp->files[j],
                            truth->path);
    for (int i = 0; i < truth->count; i++) {
        const int j = line_tsv_find(hyp, truth->files[i]);
        if (j < 0)
            return vit_fail(err, "%s: no line for %s (%s:%ld)", hyp->path, truth->files[i],
                            truth->path, truth->lines[i]);
        if (ocr_report_add(r, truth->files[i], truth->texts[i], hyp->texts[j], err) != 0) return -1;
    }
    return 0;
}
