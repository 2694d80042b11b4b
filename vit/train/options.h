#ifndef VIT_TRAIN_OPTIONS_H
#define VIT_TRAIN_OPTIONS_H

/* The options of a training run, described once: train_option_table drives the defaults, the
 * checkpoint's JSON (so --resume needs nothing else), `vit train`'s command line and --help, and
 * the range checks. A new option is one field here and one row in the table. */

#include <stddef.h>
#include <stdint.h>

#include "vit/base/error.h"
#include "vit/data/image_set.h"
#include "vit/data/mix.h"

typedef struct {
    /* data: images when train_path is a folder, text when it is a TSV file (vit/data/text_set.h),
     * images with their texts when the folder has a labels.tsv (vit/data/line_set.h; an
     * image-to-text model, --init a VisionEncoderDecoder folder).
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
    int pair;            /* text: the TSV's lines are pairs, a<TAB>b<TAB>label */
    int tags;            /* text: token classification on tagged words (vit/data/text_set.h) */
    int regression;      /* text: one score per text (MSE), the TSV's label a number */
    const char *loss;    /* text: "mnrl" (a sentence-transformers folder's rows of texts), or
                          * NULL: the task's own (cross-entropy, MSE) */
    float token_dropout; /* text augmentation: each word piece becomes [UNK] with this chance */
    /* model: new with this shape (image_size, patch_size and channels for images only), or
     * fine-tuned from init_dir (its shape and preprocessing or tokenizer; a fresh classifier when
     * its labels differ from the data's) */
    const char *init_dir;
    int image_size, patch_size, hidden_size, num_layers, num_heads, mlp_size, channels;
    int freeze_encoder; /* linear probe: only the head learns (ViT: final LayerNorm and
                         * classifier; BERT: pooler and classifier) */
    /* image to text over a ViT or DeiT folder (init_dir): a new TrOCR decoder of this shape for
     * the tokenizer in tokenizer_dir (a folder with tokenizer files); not in the checkpoint (a
     * resumed run reads the model it saved) */
    const char *tokenizer_dir;
    int dec_layers, dec_hidden, dec_heads, dec_mlp;
    int enc_height, enc_width; /* a new image-to-text model's input size (0: the encoder's) */
    int keep_aspect;           /* ... through NougatImageProcessor's steps, not a stretch */
    int resize; /* images, with init_dir (a ViT or DeiT): fine-tune at resize x resize, the
                 * positions interpolated; 0: the model's size */
    /* optimisation */
    int epochs, batch;
    float lr, min_lr, weight_decay, warmup_epochs, label_smoothing, dropout, attention_dropout;
    float clip_norm; /* 0: no clipping */
    float beta2;     /* AdamW's second-moment decay; 0: PyTorch's 0.999 */
    int augment;     /* 0: none; else aug (images only) */
    augment_options aug;
    mix_options mix;   /* images: Mixup, CutMix */
    float layer_decay; /* a classifier's learning rate times layer_decay^(depth from the top); 1:
                          off */
    uint64_t seed;
    int threads;      /* 0: one per core */
    const char *blas; /* "onednn" or "openblas" (ops_set_blas); NULL: the build's default */
    const char
        *precision; /* "fp32" or "bf16" (the products on oneDNN's bf16 kernels); NULL: fp32 */
    const char *out_dir;
    int overwrite; /* a new run into an out_dir that holds a model replaces it (else refused) */
} train_options;

typedef enum {
    OPTION_STRING, /* const char * */
    OPTION_INT,
    OPTION_FLOAT,
    OPTION_FLAG, /* int 0/1; on the command line, present or not */
    OPTION_SEED  /* uint64_t; a decimal string in the checkpoint (JSON numbers are doubles) */
} option_type;

enum {
    OPTION_SHAPE = 1,     /* a new model's shape: not with --init */
    OPTION_NOT_SAVED = 2, /* not in the checkpoint: a resumed run takes it from its command line */
    OPTION_ADDED = 4 /* newer than some checkpoints: one without it resumes with the default (the
                      * run it was saved from had no such option) */
};

typedef enum { GROUP_DATA, GROUP_NEW, GROUP_FINE_TUNE, GROUP_TRAINING } option_group;

typedef struct {
    const char *name; /* command line --name; NULL: checkpoint only (set through another option) */
    const char *key;  /* checkpoint JSON key */
    option_type type;
    size_t offset;   /* into train_options */
    double def;      /* default */
    double lo, hi;   /* accepted range (numbers); the default is accepted too */
    const char *arg; /* command line value: "N", "F", "DIR", ... */
    const char *help;
    const char *def_text; /* the default as --help shows it, when not the number itself */
    option_group group;
    unsigned flags;
} train_option;

extern const train_option train_option_table[];
extern const int train_option_count;

/* The defaults of `vit train` (a small ViT; image_size and channels 0: taken from the images). */
train_options train_default_options(void);

/* Sets one option from text (the command line's value; NULL for a flag). Returns 0, or -1 with
 * err ("invalid value for --lr: 'x' (expected a number in [0, 10])"). */
int train_option_set(train_options *o, const train_option *opt, const char *text, vit_error *err);
/* Every option within its range, and the combinations that make sense. */
int train_options_check(const train_options *o, vit_error *err);
/* The range checks alone (a resumed run's options, read from its checkpoint). */
int train_options_check_values(const train_options *o, vit_error *err);

/* The saved options as one JSON object (caller frees), and back. Strings read back are strdup'ed
 * into owned[0..4] (the caller frees them). */
char *train_options_to_json(const train_options *o);
int train_options_from_json(train_options *o, char **owned, const char *json, const char *src,
                            vit_error *err);

#endif
