#ifndef VIT_TRAIN_TRAINER_H
#define VIT_TRAIN_TRAINER_H

/* Inside a training run (not for use outside vit/train/): the state every part shares, and the
 * table of functions behind which images, text and image-to-text differ (task_image.c,
 * task_text.c, task_ved.c). */

#include <stdint.h>

#include "image/image.h"
#include "text/text_tokenizer.h"
#include "vit/io/safetensors.h"
#include "vit/model/mode.h"
#include "vit/model/params.h"
#include "vit/train/optim.h"
#include "vit/train/run.h"

/* Streams of the run's generator (rng_derive(seed, stream, n)): one per kind of draw, so adding
 * draws of one kind never shifts another. */
enum { RNG_SHUFFLE = 1, RNG_AUGMENT, RNG_DROPOUT, RNG_INIT, RNG_SPLIT, RNG_MIX };

typedef struct trainer trainer;

/* What a modality supplies. Examples are numbered 0..n_train-1 (training) and 0..n_val-1
 * (validation) in the order load_data gave them. A classifier (images, text) supplies forward
 * and backward on logits over its classes, and the trainer computes the loss; a sequence model
 * (image to text) has no classes and supplies setup_model, loss_pass and save instead. */
typedef struct {
    const char *unit; /* "images" or "sentences" */
    model_kind kind;
    int tokens;     /* text: a classifier of every token (tagged words), not of the sequence */
    int regression; /* text: one score per text (problem_type regression), not classes */
    /* The model as dir holds it (resuming: out_dir; else --init), instead of the classifier's
     * set-up; then companion(t, dir). NULL: a classifier. */
    int (*setup_model)(trainer *t, const char *dir, vit_error *err);
    /* The batch loaded (n examples): its forward, the loss and hits (the model's own: a sequence
     * model's over its tokens), and with mode->train the backward into t->grads, this process's
     * part weighted as its share of the whole batch. mode NULL: evaluation, *loss the batch's
     * mean and *correct its hit rate times n. Training: *loss such that the parts' Σ loss·part_n
     * / B is the whole batch's mean loss, *correct such that their Σ is its hit rate times B (one
     * process: the mean loss, the hit rate times B). NULL: the trainer's cross-entropy over
     * forward's logits. */
    int (*loss_pass)(trainer *t, int n, const forward_mode *mode, double *loss, double *correct,
                     vit_error *err);
    /* An image-to-text model's validation as users see it: the validation texts generated
     * (greedy) and their character and word error rates; NULL: none. */
    int (*read_val)(trainer *t, double *cer, double *wer, vit_error *err);
    /* Writes the model into out_dir (checkpoints); NULL: model_save. */
    int (*save)(const trainer *t, vit_error *err);
    /* --freeze-encoder freezes the entries whose names start with it; NULL: the classifier's
     * rule (adamw_freeze_encoder). */
    const char *encoder_prefix;
    /* The classes of a new run without a labels file (from: the model fine-tuned, or NULL). */
    int (*data_classes)(const trainer *t, const model *from, char ***classes, int *n,
                        vit_error *err);
    /* A new model (t->m) for the classes (taken over), with what it needs beside it. */
    int (*new_model)(trainer *t, char **classes, int n, vit_error *err);
    /* The files that go with a model taken from dir (fine-tuning or resuming): its preprocessing
     * or its tokenizer; then the checks of model and data settings that need both. */
    int (*companion)(trainer *t, const char *dir, vit_error *err);
    int (*load_data)(trainer *t, vit_error *err);
    /* Batch buffers and activations for batches of t->B. */
    int (*prepare)(trainer *t, vit_error *err);
    /* The epoch's order of t->perm after the shuffle (text: batches of similar length); NULL:
     * none. */
    void (*order)(trainer *t, uint64_t *state);
    /* Examples idx[0..n) of the validation set, or (train) this process's part of the training
     * batch idx[0..n) (examples part_first..part_first+part_n-1, augmented with the step's draws
     * as the whole batch would be), as the next forward's input; their classes into t->labels
     * (and t->mix_lambda, t->partners when it mixes them). */
    int (*load_batch)(trainer *t, const int *idx, int n, int train, vit_error *err);
    int (*forward)(trainer *t, int n, const forward_mode *mode, float *logits, vit_error *err);
    void (*backward)(trainer *t, const float *dlogits);
    void (*free)(trainer *t);
} train_task;

extern const train_task task_image, task_text, task_tags, task_scores, task_st, task_ved;

struct trainer {
    train_options o;
    char *owned[6]; /* copies of o's strings */
    const train_hooks *hooks;
    const train_task *task;
    void *data; /* the task's own state */
    model m;
    preprocess_config pp; /* images: the model's preprocessing (saved with it) */
    char **classes;       /* the model's labels, borrowed from m.cfg */
    int num_classes;
    int n_train, n_val; /* examples */
    /* optimisation */
    adamw opt;
    lr_schedule sched;
    int B;
    int64_t steps_per_epoch, total_steps;
    model g;      /* the gradients: m's layout rebased onto grads */
    float *grads; /* one block, m.num_params floats */
    float *logits, *probs, *dlogits;
    int *perm, *labels, *scratch;
    /* the batch loaded mixed (Mixup, CutMix; load_batch sets them): its targets mix_lambda of
     * labels and 1 - mix_lambda of partners (mix_lambda 1: not mixed) */
    float mix_lambda;
    int *partners;
    /* the processes of a distributed run (vit/base/dist.h): each step's batch of B is split, this
     * one computing examples part_first..part_first+part_n-1 */
    int rank, ranks;
    int part_first, part_n;
    double allreduce_seconds; /* spent summing the gradients, this session */
    double batch_seconds;     /* spent assembling training batches (load_batch), this session */
    /* the state a checkpoint keeps */
    int64_t step;
    uint64_t drop_rng;
    double epoch_loss_sum, epoch_seconds_before; /* of the epoch in progress */
    double epoch_correct; /* hits (a sequence model's: its token hit rate times the examples) */
    int64_t epoch_seen;
    double best_val_loss; /* the lowest of the log's epochs (HUGE_VAL before any validation) */
};

/* A setup fact for the hooks' info line. */
void trainer_info(const trainer *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A path inside out_dir. */
void trainer_path(const trainer *t, char *buf, size_t size, const char *name);
/* is_val[i] = 1 for round(val_split · n_c) examples of each class c, chosen by the seed. */
int trainer_hold_out(const trainer *t, const int *labels, size_t n, int *is_val, vit_error *err);

/* ---- the model a run starts from (init.c) ---- */

/* New, fine-tuned (init_dir), or, resuming, as last saved in out_dir; with its companion files. */
int trainer_setup_model(trainer *t, int resume, vit_error *err);
/* cfg checked through config.json's parser, then a model with new weights. Takes classes. */
int trainer_create_model(trainer *t, model_config *cfg, char **classes, int n, vit_error *err);
/* The labels in a --labels file (one per line, blank lines skipped). */
int read_labels_file(const char *path, char ***labels, int *count, vit_error *err);
void free_strings(char **s, int n);

/* The position table e of enc: from's square grid of positions (its entry src) resized to enc's
 * input size, as transformers' interpolate_pos_encoding would at that size (bicubic, the special
 * rows kept). */
int trainer_resize_positions(model *enc, const model *from, const param_entry *e,
                             const param_entry *src, vit_error *err);

/* ---- image to text (ved_new.c) ---- */

/* A new image-to-text model over the ViT or DeiT folder dir: its encoder (weights copied) and a
 * fresh TrOCR decoder of o's shape for tok, initialised as transformers does, in enc and dec;
 * process 0 writes the folder's config.json, generation_config.json, preprocessing and
 * tokenizer files (from o.tokenizer_dir) into out_dir. */
int ved_new_towers(trainer *t, const char *dir, const text_tokenizer *tok, model *enc, model *dec,
                   vit_error *err);

/* ---- one step (step.c) ---- */

/* Forward and backward of training examples idx[0..B), then the clipped AdamW update. */
int train_step(trainer *t, const int *idx, vit_error *err);
/* Mean cross-entropy (no smoothing) and top-1 of the validation examples, eval mode. */
int train_evaluate(trainer *t, double *loss, double *top1, vit_error *err);

/* ---- checkpoints (state.c) ---- */

/* The model, then the state that refers to it. */
int trainer_save_checkpoint(const trainer *t, double epoch_seconds, vit_error *err);
/* out_dir's state: its options, before anything else is set up. */
int trainer_open_state(trainer *t, st_file *f, vit_error *err);
/* Weights, moments and counters (the model and optimizer exist by now). */
int trainer_load_state(trainer *t, const st_file *f, vit_error *err);

#endif
