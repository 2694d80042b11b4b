#ifndef VIT_TRAINER_H
#define VIT_TRAINER_H

/* The training run behind `vit train`: ImageFolder data decoded into memory (or, for text, a
 * `sentence<TAB>label` TSV tokenized into memory), a new ViT (BERT) or one fine-tuned from a
 * model directory, AdamW with warm-up + cosine schedule, gradient clipping, dropout, label
 * smoothing, augmentation (images), one validation pass per epoch, checkpoints.
 *
 * Output, all in out_dir: the model (config.json, model.safetensors, and preprocessor_config.json
 * for a ViT or vocab.txt + tokenizer_config.json for a BERT) after every epoch; train_log.jsonl,
 * one JSON line per epoch; train_state.safetensors, all a resumed run needs (weights, AdamW
 * moments, step, generator state, the options), written at the end of every epoch and when stopped,
 * and removed once the run completes.
 *
 * Reproducible: every random draw derives from `seed` (weights, validation split, shuffling per
 * epoch, augmentation per step, dropout), so a run repeats bit for bit at the same thread count,
 * and a resumed run continues exactly as if never stopped. */

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "vit/base/error.h"
#include "vit/data/image_set.h"

typedef struct {
    /* data: images when train_path is a folder, text when it is a TSV file (vit/text_data.h).
     * Classes: labels_file (one label per line, in index order; folders matched to them by the
     * ImageFolder rules, TSV labels by index or name), else the folder names, the fine-tuned
     * model's labels, or the TSV's labels (text_tsv_classes) */
    const char *train_path, *val_path, *labels_file;
    float val_split; /* without val_path: this fraction of each class held out (0: no validation) */
    /* text: a new model's vocabulary (vocab.txt format); sentences cut to max_len ids (0: 128
     * for a new model, which also sizes its position table; else the model's tokenizer limit) */
    const char *vocab_file;
    int max_len;
    int ungrouped;       /* text: plain shuffled batches, not grouped by length */
    float token_dropout; /* text augmentation: each word piece becomes [UNK] with this chance */
    /* model: new with this shape (image_size, patch_size and channels for images only), or
     * fine-tuned from init_dir (its shape and preprocessing or tokenizer; a fresh classifier when
     * its labels differ from the data's) */
    const char *init_dir;
    int image_size, patch_size, hidden_size, num_layers, num_heads, mlp_size, channels;
    int freeze_encoder; /* linear probe: only the head learns (ViT: final LayerNorm and
                         * classifier; BERT: pooler and classifier) */
    /* optimisation */
    int epochs, batch;
    float lr, min_lr, weight_decay, warmup_epochs, label_smoothing, dropout, attention_dropout;
    float clip_norm; /* 0: no clipping */
    float beta2;     /* AdamW's second-moment decay; 0: PyTorch's 0.999 */
    int augment;     /* 0: none; else aug (images only) */
    augment_options aug;
    uint64_t seed;
    int threads; /* 0: one per core */
    const char *out_dir;
} train_options;

/* The defaults of `vit train` (a small ViT for 28x28 grey images). */
train_options train_default_options(void);

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
    double seconds, images_per_s;  /* the epoch's wall time (validation included), throughput */
    const char *unit;              /* of the throughput: "images" or "sentences" */
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
#define TRAIN_STATE_FILE "train_state.safetensors"
#define TRAIN_LOG_FILE   "train_log.jsonl"

#endif
