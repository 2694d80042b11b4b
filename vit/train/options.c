#include "vit/train/options.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define F(field) offsetof(train_options, field)

/* clang-format off */
const train_option train_option_table[] = {
    /* name, key, type, offset, default, lo, hi, arg, help, default as shown, group, flags */
    {"train", "train_path", OPTION_STRING, F(train_path), 0, 0, 0, "DIR|FILE",
     "training data", NULL, GROUP_DATA, 0},
    {"val", "val_path", OPTION_STRING, F(val_path), 0, 0, 0, "DIR|FILE",
     "validation data (same classes)", NULL, GROUP_DATA, 0},
    {"val-split", "val_split", OPTION_FLOAT, F(val_split), 0.1, 0, 0.99, "F",
     "else hold out this fraction of each training class (listed in MODEL_DIR/validation.tsv)",
     NULL, GROUP_DATA, 0},
    {"pair", "pair", OPTION_FLAG, F(pair), 0, 0, 1, NULL,
     "text: the TSV's lines are pairs, `a<TAB>b<TAB>label` (NLI, paraphrase, a cross-encoder), "
     "each joined as the model's tokenizer joins two texts (token types where it has them)",
     NULL, GROUP_DATA, OPTION_ADDED},
    {"tags", "tags", OPTION_FLAG, F(tags), 0, 0, 1, NULL,
     "text: token classification (NER): the file holds tagged words, one token and its label "
     "per line, tab or space separated, a blank line between sentences (CoNLL); each word's "
     "label on its first sub-token (implied by --init a ...ForTokenClassification model)",
     NULL, GROUP_DATA, OPTION_ADDED},
    {"regression", "regression", OPTION_FLAG, F(regression), 0, 0, 1, NULL,
     "text: one score per text or pair (problem_type regression, as STS-B's similarity): the "
     "TSV's label a number, the loss the mean squared error (implied by --init a regression "
     "model or a classifier of one label)",
     NULL, GROUP_DATA, OPTION_ADDED},
    {"loss", "loss", OPTION_STRING, F(loss), 0, 0, 0, "mnrl",
     "text: mnrl trains a sentence-transformers folder (--init) with "
     "MultipleNegativesRankingLoss on rows of anchor<TAB>positive[<TAB>hard negative] after a "
     "header: 20 x the cosine of each anchor with every positive and negative of the batch, "
     "cross-entropy towards its own positive",
     "the classifier's cross-entropy (MSE with --regression)", GROUP_DATA, OPTION_ADDED},
    {"labels", "labels_file", OPTION_STRING, F(labels_file), 0, 0, 0, "FILE",
     "label names, one per line in index order, matched to the folders (or the TSV labels)",
     NULL, GROUP_DATA, 0},
    {"out", NULL, OPTION_STRING, F(out_dir), 0, 0, 0, "MODEL_DIR",
     "where the model, its checkpoint, train_log.jsonl and train_curves.png (the log drawn) go; "
     "MODEL_DIR/best/ holds the model of the epoch of lowest validation loss",
     NULL, GROUP_DATA, OPTION_NOT_SAVED},
    {"overwrite", NULL, OPTION_FLAG, F(overwrite), 0, 0, 1, NULL,
     "replace the model already in --out (else refused: its config, weights and log would be "
     "lost)", NULL, GROUP_DATA, OPTION_NOT_SAVED},
    {"image-size", "image_size", OPTION_INT, F(image_size), 0, 1, 65536, "N",
     "input size of a new ViT",
     "the images' size when they share one square size, else 8 patches", GROUP_NEW,
     OPTION_SHAPE},
    {"patch", "patch_size", OPTION_INT, F(patch_size), 4, 1, 65536, "N",
     "patch size", NULL, GROUP_NEW, OPTION_SHAPE},
    {"channels", "channels", OPTION_INT, F(channels), 0, 1, 3, "1|3",
     "1 (grey) or 3 (RGB)", "3 when an image has colour, else 1", GROUP_NEW, OPTION_SHAPE},
    {"hidden", "hidden_size", OPTION_INT, F(hidden_size), 64, 1, 65536, "N",
     "hidden size (text too)", NULL, GROUP_NEW, OPTION_SHAPE},
    {"layers", "num_layers", OPTION_INT, F(num_layers), 6, 1, 1024, "N",
     "encoder layers (text too)", NULL, GROUP_NEW, OPTION_SHAPE},
    {"heads", "num_heads", OPTION_INT, F(num_heads), 4, 1, 1024, "N",
     "attention heads (text too)", NULL, GROUP_NEW, OPTION_SHAPE},
    {"mlp", "mlp_size", OPTION_INT, F(mlp_size), 128, 1, 65536, "N",
     "MLP size (text too)", NULL, GROUP_NEW, OPTION_SHAPE},
    {"vocab", "vocab_file", OPTION_STRING, F(vocab_file), 0, 0, 0, "FILE",
     "text: the WordPiece vocabulary (vocab.txt; lower-casing tokenizer)", NULL, GROUP_NEW, 0},
    {"max-len", "max_len", OPTION_INT, F(max_len), 0, 2, 65536, "N",
     "text: tokens per sentence (image to text: per label) at most (a new model's position "
     "table too)",
     "new model 128, else the model's limit", GROUP_NEW, 0},
    {"init", "init_dir", OPTION_STRING, F(init_dir), 0, 0, 0, "MODEL_DIR",
     "start from this model (its shape and preprocessing or tokenizer; a folder or a Hub "
     "org/name); a new classifier when its labels are not the data's classes",
     NULL, GROUP_FINE_TUNE, 0},
    {"freeze-encoder", "freeze_encoder", OPTION_FLAG, F(freeze_encoder), 0, 0, 1, NULL,
     "linear probe: train the head only (ViT: final LayerNorm and classifier; BERT: pooler and "
     "classifier)", NULL, GROUP_FINE_TUNE, 0},
    {"tokenizer", "tokenizer_dir", OPTION_STRING, F(tokenizer_dir), 0, 0, 0, "DIR",
     "image to text over a ViT or DeiT folder (--init): the new decoder's tokenizer (a folder "
     "with its files)", NULL, GROUP_FINE_TUNE, OPTION_NOT_SAVED},
    {"decoder-layers", "dec_layers", OPTION_INT, F(dec_layers), 6, 1, 1024, "N",
     "the new decoder's layers", NULL, GROUP_FINE_TUNE, OPTION_NOT_SAVED},
    {"decoder-hidden", "dec_hidden", OPTION_INT, F(dec_hidden), 256, 1, 65536, "N",
     "its width", NULL, GROUP_FINE_TUNE, OPTION_NOT_SAVED},
    {"decoder-heads", "dec_heads", OPTION_INT, F(dec_heads), 8, 1, 1024, "N",
     "its attention heads", NULL, GROUP_FINE_TUNE, OPTION_NOT_SAVED},
    {"decoder-mlp", "dec_mlp", OPTION_INT, F(dec_mlp), 1024, 1, 262144, "N",
     "its feed-forward width", NULL, GROUP_FINE_TUNE, OPTION_NOT_SAVED},
    {"input-height", "enc_height", OPTION_INT, F(enc_height), 0, 0, 65536, "N",
     "image to text: the new model's input height (with --input-width; the ViT's positions "
     "interpolated, bicubic, as transformers' interpolate_pos_encoding)",
     "the ViT's image_size", GROUP_FINE_TUNE, OPTION_NOT_SAVED},
    {"input-width", "enc_width", OPTION_INT, F(enc_width), 0, 0, 65536, "N",
     "its input width (a text line: e.g. 32 x 384)", "the ViT's image_size", GROUP_FINE_TUNE,
     OPTION_NOT_SAVED},
    {"keep-aspect", "keep_aspect", OPTION_FLAG, F(keep_aspect), 0, 0, 1, NULL,
     "image to text, with --input-height/--input-width: each line keeps its shape "
     "(NougatImageProcessor: crop to the ink, short side to min(height, width), shrunk to fit, "
     "padded centred with 0) instead of being stretched to the size",
     NULL, GROUP_FINE_TUNE, OPTION_NOT_SAVED},
    {"resize", "resize", OPTION_INT, F(resize), 0, 0, 65536, "N",
     "images: fine-tune the ViT or DeiT at N x N (its positions interpolated, bicubic, as "
     "transformers' interpolate_pos_encoding; the preprocessing scaled alike)",
     "the model's size", GROUP_FINE_TUNE, OPTION_NOT_SAVED | OPTION_ADDED},
    {"epochs", "epochs", OPTION_INT, F(epochs), 10, 1, 100000, "N",
     "passes over the training data", NULL, GROUP_TRAINING, 0},
    {"batch", "batch", OPTION_INT, F(batch), 128, 1, 65536, "N",
     "examples per step", NULL, GROUP_TRAINING, 0},
    {"lr", "lr", OPTION_FLOAT, F(lr), 1e-3, 1e-12, 10, "F",
     "peak learning rate (AdamW)", NULL, GROUP_TRAINING, 0},
    {"min-lr", "min_lr", OPTION_FLOAT, F(min_lr), 1e-5, 0, 10, "F",
     "learning rate at the end of the cosine decay", NULL, GROUP_TRAINING, 0},
    {"weight-decay", "weight_decay", OPTION_FLOAT, F(weight_decay), 0.05, 0, 10, "F",
     "decoupled weight decay (not on biases, norms, a ViT's embeddings)", NULL, GROUP_TRAINING, 0},
    {"warmup", "warmup_epochs", OPTION_FLOAT, F(warmup_epochs), 1, 0, 1e6, "EPOCHS",
     "linear warm-up, then cosine decay", NULL, GROUP_TRAINING, 0},
    {"label-smoothing", "label_smoothing", OPTION_FLOAT, F(label_smoothing), 0.1, 0, 0.99, "F",
     "label smoothing of the cross-entropy", NULL, GROUP_TRAINING, 0},
    {"adam-beta2", "beta2", OPTION_FLOAT, F(beta2), 0, 0, 0.999999, "F",
     "AdamW's second-moment decay", "0.999", GROUP_TRAINING, 0},
    {"dropout", "dropout", OPTION_FLOAT, F(dropout), 0, 0, 0.99, "F",
     "dropout on embeddings and residual branches", NULL, GROUP_TRAINING, 0},
    {"attention-dropout", "attention_dropout", OPTION_FLOAT, F(attention_dropout), 0, 0, 0.99,
     "F", "dropout on the attention weights", NULL, GROUP_TRAINING, 0},
    {"clip", "clip_norm", OPTION_FLOAT, F(clip_norm), 1, 0, 1e6, "NORM",
     "clip the gradients' global norm (0: off)", NULL, GROUP_TRAINING, 0},
    {NULL, "augment", OPTION_INT, F(augment), 1, 0, 1, NULL, NULL, NULL, GROUP_TRAINING, 0},
    {"crop-pad", "crop_pad", OPTION_INT, F(aug.crop_pad), -1, 0, 4096, "N",
     "images: padding of the random crop", "image size / 14", GROUP_TRAINING, 0},
    {NULL, "resized_crop", OPTION_INT, F(aug.resized_crop), 0, 0, 1, NULL, NULL, NULL,
     GROUP_TRAINING, 0},
    {"rrc-scale", "rrc_min_scale", OPTION_FLOAT, F(aug.rrc_min_scale), 0.35, 0.01, 1, "F",
     "images: smallest area fraction of the random resized crop", NULL, GROUP_TRAINING, 0},
    {NULL, "flip", OPTION_INT, F(aug.flip), 1, 0, 1, NULL, NULL, NULL, GROUP_TRAINING, 0},
    {"mixup", "mixup_alpha", OPTION_FLOAT, F(mix.mixup_alpha), 0, 0, 100, "A",
     "images: Mixup, λ ~ Beta(A, A) (0: off; with --cutmix, each batch one of the two)", NULL,
     GROUP_TRAINING, OPTION_ADDED},
    {"cutmix", "cutmix_alpha", OPTION_FLOAT, F(mix.cutmix_alpha), 0, 0, 100, "A",
     "images: CutMix, λ ~ Beta(A, A) (0: off)", NULL, GROUP_TRAINING, OPTION_ADDED},
    {"layer-decay", "layer_decay", OPTION_FLOAT, F(layer_decay), 1, 0.01, 1, "F",
     "a classifier's learning rate times F for each layer below the head (embeddings lowest; 1: "
     "off)", NULL, GROUP_TRAINING, OPTION_ADDED},
    {"token-dropout", "token_dropout", OPTION_FLOAT, F(token_dropout), 0, 0, 0.99, "F",
     "text: each word piece becomes the unknown token ([UNK], <unk>) with this chance", NULL, GROUP_TRAINING, 0},
    {"no-length-groups", "ungrouped", OPTION_FLAG, F(ungrouped), 0, 0, 1, NULL,
     "text: plain shuffled batches (default: batches of similar length)", NULL, GROUP_TRAINING,
     0},
    {"seed", "seed", OPTION_SEED, F(seed), 1, 0, 4611686018427387904.0, "N",
     "every random draw derives from it", NULL, GROUP_TRAINING, 0},
    {"threads", NULL, OPTION_INT, F(threads), 0, 0, 1024, "N",
     "compute threads", "one per core", GROUP_TRAINING, OPTION_NOT_SAVED},
    {"blas", NULL, OPTION_STRING, F(blas), 0, 0, 0, "LIB",
     "the matrix products' library: onednn (oneDNN's sgemm, its kernels chosen for the CPU) or "
     "openblas (its kernels as OPENBLAS_CORETYPE says)", "onednn where built with it",
     GROUP_TRAINING, OPTION_NOT_SAVED},
    {"precision", NULL, OPTION_STRING, F(precision), 0, 0, 0, "P",
     "fp32, or bf16: the matrix products' operands rounded to bfloat16 and summed in fp32 on "
     "oneDNN's bf16 kernels (weights, gradients, optimiser, norms and softmax stay fp32)", "fp32",
     GROUP_TRAINING, OPTION_NOT_SAVED},
};
/* clang-format on */
const int train_option_count = sizeof train_option_table / sizeof train_option_table[0];

static void *field(train_options *o, const train_option *opt) {
    return (char *)o + opt->offset;
}

static void set_number(train_options *o, const train_option *opt, double v) {
    switch (opt->type) {
    case OPTION_INT:
    case OPTION_FLAG:
        *(int *)field(o, opt) = (int)v;
        break;
    case OPTION_FLOAT:
        *(float *)field(o, opt) = (float)v;
        break;
    case OPTION_SEED:
        *(uint64_t *)field(o, opt) = (uint64_t)v;
        break;
    case OPTION_STRING:
        break;
    }
}

static double get_number(const train_options *o, const train_option *opt) {
    const void *p = (const char *)o + opt->offset;
    switch (opt->type) {
    case OPTION_INT:
    case OPTION_FLAG:
        return *(const int *)p;
    case OPTION_FLOAT:
        return *(const float *)p;
    case OPTION_SEED:
        return (double)*(const uint64_t *)p;
    case OPTION_STRING:
        break;
    }
    return 0;
}

train_options train_default_options(void) {
    train_options o;
    memset(&o, 0, sizeof o);
    for (int i = 0; i < train_option_count; i++)
        set_number(&o, &train_option_table[i], train_option_table[i].def);
    return o;
}

static int in_range(const train_option *opt, double v) {
    return (v >= opt->lo && v <= opt->hi) || v == opt->def;
}

int train_option_set(train_options *o, const train_option *opt, const char *text, vit_error *err) {
    if (opt->type == OPTION_STRING) {
        *(const char **)field(o, opt) = text;
        return 0;
    }
    if (opt->type == OPTION_FLAG) {
        set_number(o, opt, 1);
        return 0;
    }
    char *end;
    errno = 0;
    const double v =
        opt->type == OPTION_FLOAT ? strtod(text, &end) : (double)strtoll(text, &end, 10);
    if (errno || end == text || *end || !(v >= opt->lo && v <= opt->hi)) {
        if (opt->type == OPTION_FLOAT)
            return vit_fail(err, "invalid value for --%s: '%s' (expected a number in [%g, %g])",
                            opt->name, text, opt->lo, opt->hi);
        return vit_fail(err, "invalid value for --%s: '%s' (expected an integer in %.0f..%.0f)",
                        opt->name, text, opt->lo, opt->hi);
    }
    if (opt->type == OPTION_SEED)
        *(uint64_t *)field(o, opt) = strtoull(text, NULL, 10);
    else
        set_number(o, opt, v);
    return 0;
}

int train_options_check(const train_options *o, vit_error *err) {
    if (!o->train_path) return vit_fail(err, "no training data");
    if (!o->out_dir) return vit_fail(err, "no output folder");
    if (o->resize > 0 && !o->init_dir)
        return vit_fail(err,
                        "--resize is for fine-tuning (--init): a new model takes --image-size");
    return train_options_check_values(o, err);
}

int train_options_check_values(const train_options *o, vit_error *err) {
    for (int i = 0; i < train_option_count; i++) {
        const train_option *opt = &train_option_table[i];
        if (opt->type == OPTION_STRING || opt->type == OPTION_SEED) continue;
        const double v = get_number(o, opt);
        if (!in_range(opt, v))
            return vit_fail(err, "option %s is %g, outside [%g, %g]",
                            opt->name ? opt->name : opt->key, v, opt->lo, opt->hi);
    }
    if (o->channels == 2) return vit_fail(err, "channels must be 1 (grey) or 3 (RGB)");
    return 0;
}

/* ---- the checkpoint's copy ---- */

char *train_options_to_json(const train_options *o) {
    cJSON *j = cJSON_CreateObject();
    for (int i = 0; j && i < train_option_count; i++) {
        const train_option *opt = &train_option_table[i];
        if (opt->flags & OPTION_NOT_SAVED) continue;
        const void *p = (const char *)o + opt->offset;
        char buf[40];
        switch (opt->type) {
        case OPTION_STRING:
            if (*(const char *const *)p)
                cJSON_AddStringToObject(j, opt->key, *(const char *const *)p);
            break;
        case OPTION_SEED: /* JSON numbers are doubles: the seed's 64 bits go as a string */
            snprintf(buf, sizeof buf, "%llu", (unsigned long long)*(const uint64_t *)p);
            cJSON_AddStringToObject(j, opt->key, buf);
            break;
        default:
            snprintf(buf, sizeof buf, "%.9g", get_number(o, opt)); /* floats round-trip exactly */
            cJSON_AddItemToObject(j, opt->key, cJSON_CreateRaw(buf));
        }
    }
    char *text = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    return text;
}

static int read_option(train_options *o, char **owned, int *n_owned, const cJSON *j,
                       const train_option *opt, const char *src, vit_error *err) {
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(j, opt->key);
    void *p = field(o, opt);
    if (opt->type == OPTION_STRING) {
        *(const char **)p = NULL;
        if (!cJSON_IsString(it)) return 0;
        if (!(owned[*n_owned] = strdup(it->valuestring))) return vit_fail(err, "out of memory");
        *(const char **)p = owned[(*n_owned)++];
        return 0;
    }
    if (opt->type == OPTION_SEED) {
        if (!cJSON_IsString(it))
            return vit_fail(err, "%s: training option '%s' missing", src, opt->key);
        *(uint64_t *)p = strtoull(it->valuestring, NULL, 10);
        return 0;
    }
    if (!it && (opt->flags & OPTION_ADDED)) {
        set_number(o, opt, opt->def);
        return 0;
    }
    if (!cJSON_IsNumber(it))
        return vit_fail(err, "%s: training option '%s' missing", src, opt->key);
    if (opt->type == OPTION_FLOAT)
        set_number(o, opt, it->valuedouble);
    else
        set_number(o, opt, it->valueint);
    return 0;
}

int train_options_from_json(train_options *o, char **owned, const char *json, const char *src,
                            vit_error *err) {
    cJSON *j = cJSON_Parse(json);
    if (!cJSON_IsObject(j)) {
        cJSON_Delete(j);
        return vit_fail(err, "%s: unreadable training options", src);
    }
    int rc = 0, n_owned = 0;
    for (int i = 0; i < train_option_count && rc == 0; i++) {
        const train_option *opt = &train_option_table[i];
        if (!(opt->flags & OPTION_NOT_SAVED))
            rc = read_option(o, owned, &n_owned, j, opt, src, err);
    }
    if (rc == 0 && !o->train_path)
        rc = vit_fail(err, "%s: training option 'train_path' missing", src);
    cJSON_Delete(j);
    return rc;
}
