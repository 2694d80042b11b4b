/* The training run: set-up (the model, the data, the optimizer, or all of it from a checkpoint),
 * then epochs of steps, a validation pass and a checkpoint after each. Images and text differ only
 * behind the task table (trainer.h). */
#include <errno.h>
#include <math.h>
#include <omp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vit/base/alloc.h"
#include "vit/base/clock.h"
#include "vit/base/dist.h"
#include "vit/base/file.h"
#include "vit/base/rng.h"
#include "vit/base/threads.h"
#include "vit/core/gemm.h"
#include "vit/core/ops.h"
#include "vit/data/line_set.h"
#include "vit/io/model_dir.h"
#include "vit/io/safetensors.h"
#include "vit/io/st_folder.h"
#include "vit/train/curves.h"
#include "vit/train/trainer.h"

/* The hooks speak for the run: on process 0 only, under mpirun. */
static const train_hooks *speaking_hooks(const trainer *t) {
    return t->rank == 0 ? t->hooks : NULL;
}

void trainer_info(const trainer *t, const char *fmt, ...) {
    if (!speaking_hooks(t) || !t->hooks->info) return;
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    t->hooks->info(t->hooks->user, buf);
}

void trainer_path(const trainer *t, char *buf, size_t size, const char *name) {
    snprintf(buf, size, "%s/%s", t->o.out_dir, name);
}

int trainer_hold_out(const trainer *t, const int *labels, size_t n, int *is_val, vit_error *err) {
    int *order = malloc((n ? n : 1) * sizeof *order);
    if (!order) return vit_fail(err, "out of memory");
    memset(is_val, 0, n * sizeof *is_val);
    for (int c = 0; c < t->num_classes; c++) {
        int k = 0;
        for (size_t i = 0; i < n; i++)
            if (labels[i] == c) order[k++] = (int)i;
        uint64_t st = rng_derive(t->o.seed, RNG_SPLIT, (uint64_t)c);
        rng_shuffle(order, k, &st);
        const int hold = (int)lround(t->o.val_split * k);
        for (int i = 0; i < hold; i++) is_val[order[i]] = 1;
    }
    free(order);
    return 0;
}

/* ---- set-up ---- */

/* Batch size, schedule, buffers, the gradient block, the optimizer. */
static int setup_training(trainer *t, vit_error *err) {
    const train_options *o = &t->o;
    if ((o->mix.mixup_alpha > 0.0f || o->mix.cutmix_alpha > 0.0f) && t->task != &task_image)
        return vit_fail(err, "--mixup and --cutmix are for image classifiers");
    if (o->layer_decay < 1.0f && t->task->setup_model)
        return vit_fail(err, "--layer-decay is for classifiers (images or text)");
    t->B = o->batch < t->n_train ? o->batch : t->n_train;
    /* under mpirun each process takes a contiguous part of every batch */
    if (t->ranks > t->B)
        return vit_fail(err, "a batch of %d cannot be split among %d processes", t->B, t->ranks);
    t->part_first = (int)((int64_t)t->B * t->rank / t->ranks);
    t->part_n = (int)((int64_t)t->B * (t->rank + 1) / t->ranks) - t->part_first;
    t->steps_per_epoch = t->n_train / t->B;
    t->total_steps = t->steps_per_epoch * o->epochs;
    t->sched = (lr_schedule){.lr = o->lr,
                             .min_lr = o->min_lr,
                             .warmup = (int64_t)lround(o->warmup_epochs * t->steps_per_epoch),
                             .total = t->total_steps};
    const size_t BL = (size_t)t->B * (t->num_classes > 0 ? t->num_classes : 1);
    t->logits = malloc(BL * sizeof(float));
    t->probs = malloc(BL * sizeof(float));
    t->dlogits = malloc(BL * sizeof(float));
    t->perm = malloc((size_t)t->n_train * sizeof(int));
    t->scratch = malloc((size_t)(t->n_train + t->steps_per_epoch) * sizeof(int));
    t->labels = malloc((size_t)t->B * sizeof(int));
    t->partners = malloc((size_t)t->B * sizeof(int));
    t->mix_lambda = 1.0f;
    t->grads = vit_alloc_floats(t->m.num_params);
    if (!t->logits || !t->probs || !t->dlogits || !t->perm || !t->scratch || !t->labels ||
        !t->partners || !t->grads || model_bind(&t->g, &t->m, t->grads) != 0)
        return vit_fail(err, "out of memory");
    if (t->task->prepare(t, err) != 0) return -1;
    const adamw_hparams hp = {.lr = o->lr, .weight_decay = o->weight_decay, .beta2 = o->beta2};
    if (adamw_init(&t->opt, &t->m, &hp, err) != 0) return -1;
    if (t->task->encoder_prefix)
        adamw_freeze_prefix(&t->opt, &t->m, t->task->encoder_prefix, o->freeze_encoder);
    else
        adamw_freeze_encoder(&t->opt, &t->m, o->freeze_encoder);
    if (o->layer_decay < 1.0f && adamw_layer_decay(&t->opt, &t->m, o->layer_decay, err) != 0)
        return -1;
    t->drop_rng = rng_derive(o->seed, RNG_DROPOUT, 0);
    return 0;
}

/* A folder with a labels.tsv: images with their texts, for an image-to-text model (--init a
 * VisionEncoderDecoder folder). */
static int choose_ved(trainer *t, vit_error *err) {
    if (!t->o.init_dir)
        return vit_fail(err,
                        "%s holds %s: an image-to-text model is trained from a "
                        "VisionEncoderDecoder folder (--init)",
                        t->o.train_path, LINE_LABELS_FILE);
    if (t->o.vocab_file)
        return vit_fail(err, "--vocab is for new text models: --init %s has its tokenizer",
                        t->o.init_dir);
    t->task = &task_ved;
    return 0;
}

/* The text task of the model in dir (--init; NULL: none): tagged words for a token classifier,
 * scores for a regression model or a classifier of one label (transformers' problem_type for
 * num_labels 1), else sentences and their classes. */
static const train_task *init_text_task(const char *dir) {
    model_config c;
    vit_error ignored;
    if (!dir || model_config_load(dir, &c, &ignored) != 0) return &task_text;
    const train_task *task = c.kind != MODEL_TEXT || c.bare      ? &task_text
                             : c.token_classifier                ? &task_tags
                             : c.regression || c.num_labels == 1 ? &task_scores
                                                                 : &task_text;
    model_config_free(&c);
    return task;
}

/* Text when the training data is a file (a TSV, or tagged words), images when it is a folder,
 * images with their texts when the folder has a labels.tsv. */
static int choose_task(trainer *t, vit_error *err) {
    struct stat st;
    if (stat(t->o.train_path, &st) != 0)
        return vit_fail(err, "%s: %s", t->o.train_path, strerror(errno));
    char tsv[4096];
    snprintf(tsv, sizeof tsv, "%s/%s", t->o.train_path, LINE_LABELS_FILE);
    if (S_ISDIR(st.st_mode) && access(tsv, F_OK) == 0) return choose_ved(t, err);
    const int text = S_ISREG(st.st_mode);
    if (!text && !S_ISDIR(st.st_mode))
        return vit_fail(err, "%s: neither a folder of images nor a TSV file", t->o.train_path);
    if (text && !t->o.vocab_file && !t->o.init_dir)
        return vit_fail(err,
                        "%s: a new text model needs a vocabulary (--vocab vocab.txt) or a "
                        "model to fine-tune (--init)",
                        t->o.train_path);
    if (text && t->o.vocab_file && t->o.init_dir)
        return vit_fail(err, "--vocab is for new models: --init %s has its own", t->o.init_dir);
    if (!text && t->o.vocab_file)
        return vit_fail(err, "--vocab is for text: %s is a folder of images", t->o.train_path);
    if (t->o.loss && strcmp(t->o.loss, "mnrl") != 0)
        return vit_fail(err, "--loss %s: the one loss to choose is mnrl", t->o.loss);
    if (t->o.loss && (!text || !t->o.init_dir || t->o.tags || t->o.regression || t->o.pair))
        return vit_fail(err, "--loss mnrl: a file of texts and --init a sentence-transformers "
                             "folder, without --tags, --regression or --pair");
    if (t->o.loss) {
        t->task = &task_st;
        return 0;
    }
    if (t->o.tags && t->o.regression)
        return vit_fail(err, "--tags and --regression: tagged words have classes, not scores");
    t->task = !text             ? &task_image
              : t->o.tags       ? &task_tags
              : t->o.regression ? &task_scores
                                : init_text_task(t->o.init_dir);
    if (t->task == &task_tags && t->o.pair)
        return vit_fail(err, "--pair is for sequence classifiers, not for tagged words");
    return 0;
}

/* Absolute paths, so a resumed run finds the folders from any working directory. */
static void own_paths(trainer *t) {
    const char **strs[] = {&t->o.train_path, &t->o.val_path,   &t->o.labels_file,
                           &t->o.init_dir,   &t->o.vocab_file, &t->o.tokenizer_dir};
    for (int i = 0; i < 6; i++) {
        if (!*strs[i]) continue;
        char *abs = realpath(*strs[i], NULL);
        t->owned[i] = abs ? abs : strdup(*strs[i]);
        *strs[i] = t->owned[i];
    }
}

/* The files of out_dir/best (a model folder's, nothing below it), then the folder: a new run's
 * best is its own. */
static int remove_best(const trainer *t, vit_error *err) {
    char dir[4096], path[4400];
    trainer_path(t, dir, sizeof dir, TRAIN_BEST_DIR);
    DIR *d = opendir(dir);
    if (!d) return errno == ENOENT ? 0 : vit_fail(err, "%s: %s", dir, strerror(errno));
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.') {
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            unlink(path);
        }
    closedir(d);
    if (rmdir(dir) != 0) return vit_fail(err, "%s: cannot remove: %s", dir, strerror(errno));
    return 0;
}

/* A model already in out_dir (HF's Trainer refuses an output_dir with files alike unless told
 * overwrite_output_dir): refused unless --overwrite. */
static int check_overwrite(const trainer *t, vit_error *err) {
    const char *names[] = {"config.json", "model.safetensors", TRAIN_LOG_FILE};
    char path[4096];
    for (int i = 0; i < 3; i++) {
        trainer_path(t, path, sizeof path, names[i]);
        if (access(path, F_OK) == 0 && !t->o.overwrite)
            return vit_fail(err,
                            "%s already holds a model (%s): --overwrite replaces it, or give "
                            "another --out",
                            t->o.out_dir, names[i]);
    }
    return 0;
}

/* What out_dir held before a new run's set-up, so that a refused set-up (a model that does not
 * train, data that does not fit it) takes away what it wrote there (validation.tsv, tokenizer
 * files) and leaves the folder as it was, or not at all when the run made it. */
typedef struct {
    char **names;
    size_t n;
    int made;   /* out_dir created by this run */
    int listed; /* names is complete: undo_set_up may remove what is not in it */
} out_dir_before;

static void out_dir_before_free(out_dir_before *b) {
    for (size_t i = 0; i < b->n; i++) free(b->names[i]);
    free(b->names);
    memset(b, 0, sizeof *b);
}

static int list_out_dir(const char *dir, out_dir_before *b, vit_error *err) {
    DIR *d = opendir(dir);
    if (!d) return vit_fail(err, "%s: %s", dir, strerror(errno));
    struct dirent *e;
    while ((e = readdir(d))) {
        char **grown = realloc(b->names, (b->n + 1) * sizeof *grown);
        if (grown) b->names = grown;
        if (!grown || !(b->names[b->n] = strdup(e->d_name))) {
            closedir(d);
            return vit_fail(err, "out of memory");
        }
        b->n++;
    }
    closedir(d);
    b->listed = 1;
    return 0;
}

static int was_there(const out_dir_before *b, const char *name) {
    for (size_t i = 0; i < b->n; i++)
        if (!strcmp(b->names[i], name)) return 1;
    return 0;
}

/* A refused set-up's files removed (a new file is one out_dir did not hold), then out_dir when
 * this run made it. */
static void undo_set_up(const char *out_dir, const out_dir_before *b) {
    DIR *d = b->listed ? opendir(out_dir) : NULL;
    if (!d) return;
    char path[4400];
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && !was_there(b, e->d_name)) {
            snprintf(path, sizeof path, "%s/%s", out_dir, e->d_name);
            unlink(path);
        }
    closedir(d);
    if (b->made) rmdir(out_dir);
}

/* The refusals (an unfinished run, a model without --overwrite) before anything is written; then
 * out_dir made if it is not there, and what it holds noted in before. */
static int prepare_out_dir(const trainer *t, out_dir_before *before, vit_error *err) {
    char path[4096];
    trainer_path(t, path, sizeof path, TRAIN_STATE_FILE);
    if (access(path, F_OK) == 0)
        return vit_fail(err, "%s holds an unfinished run: continue it with --resume, or delete %s",
                        t->o.out_dir, path);
    if (check_overwrite(t, err) != 0) return -1;
    if (mkdir(t->o.out_dir, 0777) == 0)
        before->made = 1;
    else if (errno != EEXIST)
        return vit_fail(err, "%s: cannot create: %s", t->o.out_dir, strerror(errno));
    return list_out_dir(t->o.out_dir, before, err);
}

/* Once the set-up succeeded: the earlier run's best (--overwrite), log and picture removed, so
 * that a new run's log and picture start empty. */
static int clear_earlier_run(const trainer *t, vit_error *err) {
    if (t->o.overwrite && remove_best(t, err) != 0) return -1;
    char path[4096];
    const char *old[] = {TRAIN_LOG_FILE, TRAIN_CURVES_FILE};
    for (int i = 0; i < 2; i++) {
        trainer_path(t, path, sizeof path, old[i]);
        if (unlink(path) != 0 && errno != ENOENT)
            return vit_fail(err, "%s: %s", path, strerror(errno));
    }
    return 0;
}

static void trainer_free(trainer *t) {
    if (t->task) t->task->free(t);
    adamw_free(&t->opt);
    if (t->g.layers) model_unbind(&t->g);
    free(t->grads), free(t->logits), free(t->probs), free(t->dlogits), free(t->perm);
    free(t->scratch), free(t->labels), free(t->partners);
    if (t->m.params) model_free(&t->m);
    for (int i = 0; i < 6; i++) free(t->owned[i]);
}

/* ---- the loop ---- */

/* train_log.jsonl with e's line added, rewritten whole, and train_curves.png drawn from all its
 * lines (a resumed run's earlier epochs too), so that both join the checkpoint's atomic group (a
 * log that says an epoch ended only when its checkpoint exists). */
static int append_log(const trainer *t, const train_epoch *e, vit_error *err) {
    char path[4096];
    trainer_path(t, path, sizeof path, TRAIN_LOG_FILE);
    size_t old_size = 0;
    char *old = access(path, F_OK) == 0 ? vit_read_file(path, 256 << 20, &old_size, err) : NULL;
    if (!old && access(path, F_OK) == 0) return -1;
    char *text = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);
    if (!f) return free(old), vit_fail(err, "out of memory");
    if (old) fwrite(old, 1, old_size, f);
    free(old);
    fprintf(f,
            "{\"epoch\": %d, \"step\": %lld, \"lr\": %.6g, \"train_loss\": %.6f, \"train_top1\": "
            "%.6f, ",
            e->epoch, (long long)e->step, e->lr, e->train_loss, e->train_top1);
    if (e->val_top1 >= 0)
        fprintf(f, "\"val_loss\": %.6f, \"val_top1\": %.6f, ", e->val_loss, e->val_top1);
    else
        fprintf(f, "\"val_loss\": null, \"val_top1\": null, ");
    if (e->val_cer >= 0)
        fprintf(f, "\"val_cer\": %.6f, \"val_wer\": %.6f, ", e->val_cer, e->val_wer);
    fprintf(f, "\"seconds\": %.3f, \"%s_per_s\": %.1f}\n", e->seconds, e->unit, e->images_per_s);
    if (fclose(f) != 0 || !text) return free(text), vit_fail(err, "out of memory");
    int rc = write_file_atomic(path, text, size, err);
    trainer_path(t, path, sizeof path, TRAIN_CURVES_FILE);
    if (rc == 0) rc = train_curves_write(text, path, err);
    free(text);
    return rc;
}

/* The checkpoint (weights, config, optimizer state) and, at an epoch's end, its log line and the
 * curves, all replaced together: a full disk or a kill leaves the previous checkpoint whole. */
static int checkpoint(const trainer *t, double epoch_seconds, const train_epoch *e,
                      vit_error *err) {
    atomic_group g;
    atomic_group_begin(&g);
    if (trainer_save_checkpoint(t, epoch_seconds, err) != 0 || (e && append_log(t, e, err) != 0)) {
        atomic_group_abort(&g);
        return -1;
    }
    return atomic_group_commit(&g, err);
}

/* out_dir's model (just committed) copied into out_dir/best, all its files renamed together. A
 * kill between the two leaves best/ one improvement behind. */
static int save_best(const trainer *t, vit_error *err) {
    char best[4096];
    trainer_path(t, best, sizeof best, TRAIN_BEST_DIR);
    if (mkdir(best, 0777) != 0 && errno != EEXIST)
        return vit_fail(err, "%s: cannot create: %s", best, strerror(errno));
    atomic_group g;
    atomic_group_begin(&g);
    /* a sentence-transformers folder: its modules, the Transformer's among them unless it is at
     * the root */
    const int st = st_folder_is(t->o.out_dir);
    char sub[4096] = "";
    if ((st && (st_folder_transformer(t->o.out_dir, sub, sizeof sub, err) != 0 ||
                st_folder_copy_modules(t->o.out_dir, best, err) != 0)) ||
        (!sub[0] && (model_dir_copy_files(t->o.out_dir, best, err) != 0 ||
                     model_dir_copy_file(t->o.out_dir, best, "model.safetensors", 1, err) != 0))) {
        atomic_group_abort(&g);
        return -1;
    }
    return atomic_group_commit(&g, err);
}

/* The lowest val_loss of out_dir's log (a resumed run's best so far), HUGE_VAL when none. */
static double best_in_log(const trainer *t) {
    char path[4096];
    trainer_path(t, path, sizeof path, TRAIN_LOG_FILE);
    vit_error ignored;
    char *log = vit_read_file(path, 256 << 20, NULL, &ignored);
    double best = HUGE_VAL;
    for (const char *at = log; at && (at = strstr(at, "\"val_loss\": ")); at++) {
        char *end;
        const double v = strtod(at + strlen("\"val_loss\": "), &end);
        if (end != at + strlen("\"val_loss\": ") && v < best) best = v;
    }
    free(log);
    return best;
}

static int end_epoch(trainer *t, double epoch_seconds, vit_error *err) {
    train_epoch e = {.epoch = (int)(t->step / t->steps_per_epoch),
                     .epochs = t->o.epochs,
                     .step = t->step,
                     .lr = lr_at(&t->sched, t->step - 1),
                     .train_loss = t->epoch_loss_sum / (double)t->epoch_seen,
                     .train_top1 = (double)t->epoch_correct / (double)t->epoch_seen,
                     .scores = t->task->regression,
                     .val_loss = -1,
                     .val_top1 = -1,
                     .val_cer = -1,
                     .val_wer = -1,
                     .images_per_s = epoch_seconds > 0 ? t->epoch_seen / epoch_seconds : 0,
                     .unit = t->task->unit};
    const double t0 = clock_seconds();
    /* validation, checkpoint and log: process 0's (the others wait at the next step) */
    int rc = 0;
    if (t->rank == 0 && t->n_val) rc = train_evaluate(t, &e.val_loss, &e.val_top1, err);
    if (rc == 0 && t->rank == 0 && t->n_val && t->task->read_val)
        rc = t->task->read_val(t, &e.val_cer, &e.val_wer, err);
    e.seconds = epoch_seconds + (clock_seconds() - t0);
    t->epoch_loss_sum = 0, t->epoch_correct = t->epoch_seen = 0, t->epoch_seconds_before = 0;
    if (rc == 0 && t->rank == 0) rc = checkpoint(t, 0.0, &e, err);
    e.best = t->rank == 0 && t->n_val > 0 && e.val_loss < t->best_val_loss;
    if (e.best) t->best_val_loss = e.val_loss;
    if (rc == 0 && t->rank == 0 && e.best) rc = save_best(t, err);
    if (dist_all_succeeded(rc, "to validate or checkpoint", err) != 0) return -1;
    const train_hooks *h = speaking_hooks(t);
    if (h && h->epoch_done) h->epoch_done(h->user, &e);
    return 0;
}

static void epoch_order(trainer *t, int64_t epoch) {
    for (int i = 0; i < t->n_train; i++) t->perm[i] = i;
    uint64_t st = rng_derive(t->o.seed, RNG_SHUFFLE, (uint64_t)epoch);
    rng_shuffle(t->perm, t->n_train, &st);
    if (t->task->order) t->task->order(t, &st);
}

static void report_progress(const trainer *t, int64_t epoch, int64_t first, double start) {
    if (!speaking_hooks(t) || !t->hooks->progress) return;
    const double spent = clock_seconds() - start;
    const double per_step = spent / (double)(t->step - first);
    const train_progress p = {.epoch = (int)epoch + 1,
                              .epochs = t->o.epochs,
                              .step = t->step,
                              .steps_per_epoch = t->steps_per_epoch,
                              .total_steps = t->total_steps,
                              .lr = lr_at(&t->sched, t->step - 1),
                              .loss = t->epoch_loss_sum / (double)t->epoch_seen,
                              .images_per_s = (double)(t->step - first) * t->B / spent,
                              .eta_s = per_step * (double)(t->total_steps - t->step),
                              .unit = t->task->unit};
    t->hooks->progress(t->hooks->user, &p);
}

/* Whether to stop now: asked of any process, all stop together. */
static int stop_requested(const trainer *t) {
    const train_hooks *h = t->hooks;
    const int stop =
        h && ((h->stop && *h->stop) || (h->stop_at_step > 0 && t->step >= h->stop_at_step));
    return t->ranks > 1 ? !dist_all_ok(!stop) : stop;
}

static int loop(trainer *t, vit_error *err) {
    const double start = clock_seconds();
    const int64_t first = t->step;
    double epoch_start = start - t->epoch_seconds_before;
    while (t->step < t->total_steps) {
        const int64_t epoch = t->step / t->steps_per_epoch;
        if (t->step % t->steps_per_epoch == 0 || t->step == first) epoch_order(t, epoch);
        const int64_t k = t->step % t->steps_per_epoch;
        if (train_step(t, t->perm + k * t->B, err) != 0) return -1;
        report_progress(t, epoch, first, start);
        if (t->step % t->steps_per_epoch == 0) {
            if (end_epoch(t, clock_seconds() - epoch_start, err) != 0) return -1;
            epoch_start = clock_seconds();
        }
        if (t->step < t->total_steps && stop_requested(t)) {
            const int rc =
                t->rank == 0 ? checkpoint(t, clock_seconds() - epoch_start, NULL, err) : 0;
            if (dist_all_succeeded(rc, "to checkpoint", err) != 0) return -1;
            return 1;
        }
    }
    return 0;
}

/* Temporaries a killed run left in out_dir (a checkpoint is only ever whole under its own names).
 */
static void remove_stale_temporaries(const char *out_dir) {
    static const char *const names[] = {"model.safetensors",
                                        "config.json",
                                        "preprocessor_config.json",
                                        TRAIN_STATE_FILE,
                                        TRAIN_LOG_FILE,
                                        TRAIN_CURVES_FILE,
                                        "vocab.txt",
                                        "tokenizer_config.json",
                                        "special_tokens_map.json",
                                        "generation_config.json",
                                        "vocab.json",
                                        "merges.txt",
                                        "spiece.model",
                                        "sentencepiece.bpe.model",
                                        "added_tokens.json"};
    char path[4200];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(path, sizeof path, "%s/%s.tmp", out_dir, names[i]);
        unlink(path);
    }
}

/* The run's options: a resumed run's from out_dir's state (left open in *state for
 * trainer_load_state; the options the command line still decides taken from opt), a new run's
 * checked, its task chosen and out_dir prepared. Every process agrees on the outcome. */
static int set_up_options(trainer *t, const train_options *opt, int resume, st_file *state,
                          out_dir_before *before, vit_error *err) {
    int rc = 0;
    if (resume) {
        t->o = train_default_options(); /* what the checkpoint does not hold */
        t->o.out_dir = opt->out_dir;
        if (!opt->out_dir) rc = vit_fail(err, "no output folder to resume");
        if (rc == 0) rc = trainer_open_state(t, state, err);
        t->o.out_dir = opt->out_dir;
        t->o.threads = opt->threads;
        t->o.blas = opt->blas;
        t->o.precision = opt->precision;
    } else {
        rc = train_options_check(&t->o, err) != 0 || choose_task(t, err) != 0 ? -1 : 0;
        if (rc == 0) own_paths(t);
        if (rc == 0 && t->rank == 0) rc = prepare_out_dir(t, before, err);
    }
    if (dist_all_succeeded(rc, "to set up", err) != 0) {
        if (resume && rc == 0) st_close(state);
        return -1;
    }
    return 0;
}

/* The model, the data, the optimizer and (resume) the saved state; closes state. */
static int set_up_model_and_data(trainer *t, int resume, st_file *state, vit_error *err) {
    int rc = 0;
    if (trainer_setup_model(t, resume, err) != 0 || t->task->load_data(t, err) != 0 ||
        setup_training(t, err) != 0 || (resume && trainer_load_state(t, state, err) != 0))
        rc = -1;
    if (resume) st_close(state);
    if (rc == 0 && !resume && t->rank == 0) rc = clear_earlier_run(t, err);
    return dist_all_succeeded(rc, "to set up", err);
}

/* What the run computes with and on: the products' library, the classes, the data's size. */
static void describe_run(const trainer *t) {
    char blas[96];
    const ops_blas ops = ops_get_blas();
    const gemm_backend library = ops == OPS_BLAS_OPENBLAS ? GEMM_OPENBLAS : GEMM_ONEDNN;
    trainer_info(t, "matrix products on %s%s, %d threads",
                 gemm_backend_describe(library, blas, sizeof blas),
                 ops == OPS_BLAS_ONEDNN_BF16 ? " bf16 matmul (operands rounded to bfloat16)"
                 : ops == OPS_BLAS_ONEDNN    ? " sgemm"
                                             : "",
                 omp_get_max_threads());
    char classes[32] = "image to text";
    if (t->task == &task_st) snprintf(classes, sizeof classes, "sentence embeddings");
    if (!t->task->setup_model) snprintf(classes, sizeof classes, "%d classes", t->num_classes);
    trainer_info(t,
                 "%s; %d training %s (%lld steps of %d per epoch), %d validation; %zu parameters",
                 classes, t->n_train, t->task->unit, (long long)t->steps_per_epoch, t->B, t->n_val,
                 model_live_params(&t->m));
}

/* Where the steps since first_step, begun at started, spent their time. */
static void describe_timing(const trainer *t, int64_t first_step, double started) {
    if (t->step <= first_step) return;
    const double steps = (double)(t->step - first_step), spent = clock_seconds() - started;
    trainer_info(t,
                 "training batches assembled (augmented, normalised) in %.1f ms a step, %.1f "
                 "%% of the %.1f ms a step took",
                 1e3 * t->batch_seconds / steps, 100.0 * t->batch_seconds / spent,
                 1e3 * spent / steps);
    if (t->ranks > 1)
        trainer_info(t,
                     "%d processes: %.2f MB of gradients summed per step in %.2f ms, %.1f %% of "
                     "the %.1f ms a step took",
                     t->ranks, t->m.num_params * 4.0 / 1e6, 1e3 * t->allreduce_seconds / steps,
                     100.0 * t->allreduce_seconds / spent, 1e3 * spent / steps);
}

/* Set-up from scratch, or (resume) from out_dir's state; then the epochs. */
static int set_up_and_train(trainer *t, const train_options *opt, int resume, vit_error *err) {
    st_file state = {0};
    const dist_world w = dist_get();
    t->rank = w.rank, t->ranks = w.size;
    /* out_dir is process 0's to write; the others only read a checkpoint from it */
    if (opt->out_dir && t->rank == 0) remove_stale_temporaries(opt->out_dir);
    out_dir_before before = {0};
    int rc = set_up_options(t, opt, resume, &state, &before, err);
    if (rc == 0) rc = set_up_model_and_data(t, resume, &state, err);
    if (rc != 0 && !resume && t->rank == 0) undo_set_up(t->o.out_dir, &before);
    out_dir_before_free(&before);
    if (rc != 0) return -1;
    describe_run(t);
    t->best_val_loss = resume ? best_in_log(t) : HUGE_VAL;
    const double started = clock_seconds();
    const int64_t first_step = t->step;
    rc = loop(t, err);
    describe_timing(t, first_step, started);
    if (rc == 0 && t->rank == 0) { /* done: the state has served its purpose */
        char path[4096];
        trainer_path(t, path, sizeof path, TRAIN_STATE_FILE);
        unlink(path);
    }
    return rc;
}

/* The products' library and precision the options ask for (the build's default library, fp32,
 * when they ask none). */
static int choose_blas(const char *name, const char *precision, vit_error *err) {
    const int bf16 = precision && strcmp(precision, "bf16") == 0;
    if (precision && !bf16 && strcmp(precision, "fp32") != 0)
        return vit_fail(err, "--precision: '%.40s' is neither fp32 nor bf16", precision);
    const int onednn = name ? strcmp(name, "onednn") == 0 : ops_get_blas() != OPS_BLAS_OPENBLAS;
    if (name && !onednn && strcmp(name, "openblas") != 0)
        return vit_fail(err, "--blas: '%.40s' is neither onednn nor openblas", name);
    if (bf16 && !onednn)
        return vit_fail(err, "--precision bf16 runs on oneDNN's kernels, not with --blas openblas");
    const ops_blas want = bf16     ? OPS_BLAS_ONEDNN_BF16
                          : onednn ? OPS_BLAS_ONEDNN
                                   : OPS_BLAS_OPENBLAS;
    if (ops_set_blas(want) != 0)
        return vit_fail(err, bf16 ? "--precision bf16: this CPU (or this vit's oneDNN) has no bf16 "
                                    "kernels"
                                  : "--blas onednn: this vit is built without oneDNN");
    return 0;
}

int train_run(const train_options *opt, int resume, const train_hooks *hooks, vit_error *err) {
    trainer t = {.o = *opt, .hooks = hooks};
    ops_init();
    if (choose_blas(opt->blas, opt->precision, err) != 0) return -1;
    /* the whole run on this thread's count; decoding the data runs on the OpenMP threads too */
    const threads_scope scope = threads_begin(threads_resolve(opt->threads));
    const int rc = set_up_and_train(&t, opt, resume, err);
    ops_release_buffers();
    threads_end(scope);
    trainer_free(&t);
    return rc;
}
