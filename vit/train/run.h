#ifndef VIT_TRAIN_RUN_H
#define VIT_TRAIN_RUN_H

/* The training run behind `vit train`: ImageFolder data decoded into memory (or, for text, a
 * `sentence<TAB>label` TSV tokenized into memory), a new ViT (BERT) or one fine-tuned from a
 * model directory, AdamW with warm-up + cosine schedule, gradient clipping, dropout, label
 * smoothing, augmentation (images), one validation pass per epoch, checkpoints. Images with
 * their texts (a folder with a labels.tsv) fine-tune a VisionEncoderDecoder folder (--init) by
 * teacher forcing; its folder is written as it came (the copied config, generation config,
 * preprocessing and tokenizer; the weights under their own names), the top-1 it reports is the
 * token accuracy.
 *
 * Output, all in out_dir: the model (config.json, model.safetensors, and preprocessor_config.json
 * for a ViT or vocab.txt + tokenizer_config.json for a BERT) after every epoch; train_log.jsonl,
 * one JSON line per epoch, and train_curves.png, its losses and top-1s drawn (vit/train/curves.h);
 * train_state.safetensors, all a resumed run needs (weights, AdamW moments, step, generator state,
 * the options), written at the end of every epoch and when stopped, and removed once the run
 * completes.
 *
 * Reproducible: every random draw derives from `seed` (weights, validation split, shuffling per
 * epoch, augmentation per step, dropout), so a run repeats bit for bit at the same thread count,
 * and a resumed run continues exactly as if never stopped. */

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "vit/base/error.h"
#include "vit/train/options.h"

typedef struct {
    int epoch, epochs;                          /* 1-based epoch in progress */
    int64_t step, steps_per_epoch, total_steps; /* global step done (1-based) */
    float lr;
    double loss;         /* mean training loss of this epoch so far */
    double images_per_s; /* training throughput of this session (sentences/s for text) */
    const char *unit;    /* "images" or "sentences" */
    double eta_s;        /* estimated seconds to the end of the run */
} train_progress;

typedef struct {
    int epoch, epochs;
    int64_t step;
    float lr;                      /* at the epoch's last step */
    double train_loss, train_top1; /* means over the epoch's (augmented) batches */
    double val_loss, val_top1;     /* -1 without validation images */
    double val_cer, val_wer;       /* image to text: the validation lines read; else -1 */
    int best;                      /* the lowest validation loss yet: saved in TRAIN_BEST_DIR */
    int scores; /* a regression model: no hits (top-1 0 in the log, and not to be shown) */
    double seconds, images_per_s; /* the epoch's wall time (validation included), throughput */
    const char *unit;             /* of the throughput: "images" or "sentences" */
} train_epoch;

typedef struct {
    void *user;
    void (*info)(void *user, const char *message); /* setup facts: classes, image counts, shape */
    void (*load_progress)(void *user, size_t done, size_t total);
    void (*progress)(void *user, const train_progress *p); /* after every step */
    void (*epoch_done)(void *user, const train_epoch *e);
    volatile sig_atomic_t *stop; /* nonzero: checkpoint after the current step and return 1 */
    int64_t stop_at_step;        /* > 0: also stop once this many steps are done (tests) */
} train_hooks;

/* Runs (resume = 0) or continues (resume = 1: opt supplies out_dir and threads only, the rest
 * comes from out_dir/train_state.safetensors) a training run. Returns 0 when all epochs are done,
 * 1 when stopped through hooks (a checkpoint was written), -1 with err on failure. */
int train_run(const train_options *opt, int resume, const train_hooks *hooks, vit_error *err);

/* Names of the files train_run writes into out_dir. */
#define TRAIN_STATE_FILE  "train_state.safetensors"
#define TRAIN_LOG_FILE    "train_log.jsonl"
#define TRAIN_VAL_FILE    "validation.tsv" /* the images held out (--val-split) */
#define TRAIN_CURVES_FILE "train_curves.png"
#define TRAIN_BEST_DIR    "best" /* the model of the epoch of lowest validation loss */

#endif
