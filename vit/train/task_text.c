/* Training on text: a sentence<TAB>label (or a<TAB>b<TAB>label) TSV tokenized once into memory, a
 * sequence classifier (BERT, RoBERTa, XLM-R, DistilBERT, MPNet), batches of similar length, word
 * dropout. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/text_tokenizer.h"
#include "text/wordpiece.h"
#include "vit/base/alloc.h"
#include "vit/base/file.h"
#include "vit/base/rng.h"
#include "vit/core/ops.h"
#include "vit/data/text_set.h"
#include "vit/io/model_dir.h"
#include "vit/model/text_model.h"
#include "vit/train/trainer.h"

/* Text batches come from mega-batches of this many batches sorted by length (see
 * group_by_length). */
#define LENGTH_GROUP 50

typedef struct {
    text_tokenizer *tok;
    int unk; /* the unknown token word dropout writes (-1: none) */
    int max_len;
    /* the training file's sentences; validation rows of val_text or, carved out of the training
     * file, of train_text (train_rows and val_rows index them) */
    text_set train_text, val_text;
    const text_set *val_src;
    int *train_rows, *val_rows;
    int *rows;         /* [B] the batch's rows */
    int32_t *ids;      /* [B, max_len] the batch */
    int32_t *types;    /* [B, max_len] its token types (pairs) */
    int *tags;         /* tagged words: [B, max_len] the batch's labels per token (-100: none) */
    float *tag_logits; /* tagged words: [B, max_len, labels] logits, then their gradient */
    int counted;       /* the whole batch's tags that count */
    float *targets;    /* scores: [B] the batch's */
    uint8_t *mask;     /* [B, max_len] */
    int T;             /* the batch's length */
    text_acts acts;
} text_task;

static text_task *task_data(const trainer *t) {
    return t->data;
}

/* The task's state exists from the model's setup on (it holds the tokenizer). */
static text_task *ensure_data(trainer *t) {
    if (!t->data) t->data = calloc(1, sizeof(text_task));
    return t->data;
}

/* ---- classes, model, tokenizer ---- */

static int text_classes(const trainer *t, const model *from, char ***classes, int *n,
                        vit_error *err) {
    /* a base model (RobertaModel, ...) has no classes: the data's, for its new head */
    if (!from || from->cfg.bare)
        return text_tsv_classes(t->o.train_path, t->o.pair, classes, n, err);
    char **out = calloc((size_t)from->cfg.num_labels, sizeof *out);
    int ok = out != NULL;
    for (int i = 0; ok && i < from->cfg.num_labels; i++)
        ok = (out[i] = strdup(from->cfg.labels[i])) != NULL;
    if (!ok) {
        free_strings(out, from->cfg.num_labels);
        return vit_fail(err, "out of memory");
    }
    *classes = out;
    *n = from->cfg.num_labels;
    return 0;
}

/* Tagged words: the model's labels when it is a token classifier, else the file's. */
static int tag_classes(const trainer *t, const model *from, char ***classes, int *n,
                       vit_error *err) {
    if (!from || !from->cfg.token_classifier)
        return tag_file_labels(t->o.train_path, classes, n, err);
    return text_classes(t, from, classes, n, err);
}

/* Scores: one output, the model's label when it has one (LABEL_0, transformers' default). */
static int score_classes(const trainer *t, const model *from, char ***classes, int *n,
                         vit_error *err) {
    if (from && !from->cfg.bare && from->cfg.num_labels == 1)
        return text_classes(t, from, classes, n, err);
    if (!(*classes = calloc(1, sizeof **classes)) || !(**classes = strdup("LABEL_0")))
        return free(*classes), vit_fail(err, "out of memory");
    *n = 1;
    return 0;
}

/* A new model's tokenizer: --vocab with bert-base-uncased's settings, cut at max_len tokens, made
 * in memory by every process; process 0 saves its files into out_dir beside the model. */
static int new_tokenizer(const trainer *t, text_task *d, int max_len, vit_error *err) {
    const char *vocab_file = t->o.vocab_file;
    if (t->rank == 0 && tokenizer_files_save(t->o.out_dir, NULL, vocab_file, max_len, err) != 0)
        return -1;
    size_t size;
    char *vocab = vit_read_file(vocab_file, 256 << 20, &size, err);
    if (!vocab) return -1;
    char *config = tokenizer_default_config(max_len);
    int rc = config ? 0 : vit_fail(err, "out of memory");
    tokenizer *wp = NULL;
    if (rc == 0) {
        const tokenizer_sources src = {
            .vocab = {vocab, size, vocab_file},
            .config = {config, strlen(config), "the new model's tokenizer_config.json"}};
        rc = tokenizer_load_memory(&src, &wp, err);
    }
    if (rc == 0) rc = text_tokenizer_from_wordpiece(wp, &d->tok, err);
    free(vocab);
    free(config);
    return rc;
}

/* A new BERT: the vocabulary sizes its embeddings. */
static int new_bert(trainer *t, char **classes, int n, vit_error *err) {
    const train_options *o = &t->o;
    text_task *d = ensure_data(t);
    const int max_pos = o->max_len ? o->max_len : 128;
    if (!d || new_tokenizer(t, d, max_pos, err) != 0) {
        free_strings(classes, n);
        return d ? -1 : vit_fail(err, "out of memory");
    }
    model_config cfg = {.kind = MODEL_TEXT,
                        .hidden_size = o->hidden_size,
                        .num_layers = o->num_layers,
                        .num_heads = o->num_heads,
                        .intermediate_size = o->mlp_size,
                        .act = ACT_GELU,
                        .layer_norm_eps = 1e-12f, /* BertConfig's */
                        .vocab_size = text_tokenizer_vocab_size(d->tok),
                        .max_position_embeddings = max_pos,
                        .type_vocab_size = 2,
                        .pad_token_id = text_tokenizer_pad_id(d->tok),
                        .num_labels = n,
                        .labels = classes,
                        .token_classifier = t->task->tokens,
                        .regression = t->task->regression};
    return trainer_create_model(t, &cfg, classes, n, err);
}

/* The tokenizer of the model taken from dir (process 0 copies its files, whichever kind, into
 * out_dir when fine-tuning), then the sentence length. */
static int text_companion(trainer *t, const char *dir, vit_error *err) {
    text_task *d = ensure_data(t);
    if (!d) return vit_fail(err, "out of memory");
    const int copy = dir && t->rank == 0 && strcmp(dir, t->o.out_dir) != 0;
    if (copy && tokenizer_files_save(t->o.out_dir, dir, NULL, 0, err) != 0) return -1;
    if (dir && text_tokenizer_load(dir, &d->tok, err) != 0) return -1;
    const int tok_limit = text_tokenizer_max_len(d->tok),
              positions = config_text_max_tokens(&t->m.cfg);
    int limit = t->o.max_len ? t->o.max_len : tok_limit > 0 ? tok_limit : positions;
    d->max_len = limit < positions ? limit : positions;
    if (d->max_len < 2)
        return vit_fail(err, "--max-len %d: a sentence needs at least 2 tokens", d->max_len);
    if (text_tokenizer_vocab_size(d->tok) > t->m.cfg.vocab_size)
        return vit_fail(err, "%s: the vocabulary (%d) is larger than the model's (%d)",
                        t->o.out_dir, text_tokenizer_vocab_size(d->tok), t->m.cfg.vocab_size);
    d->unk = text_tokenizer_find(d->tok, "[UNK]");
    if (d->unk < 0) d->unk = text_tokenizer_find(d->tok, "<unk>");
    if (t->o.token_dropout > 0 && d->unk < 0)
        return vit_fail(err, "--token-dropout: the %s tokenizer has no [UNK] nor <unk> token",
                        text_tokenizer_kind(d->tok));
    return 0;
}

/* ---- data ---- */

/* The training TSV tokenized, and the validation rows: all of val_path, or held out of it. */
static int load_texts(trainer *t, vit_error *err) {
    text_task *d = task_data(t);
    /* scores: no class names, the label field is read as a number */
    const char *const *labels = t->task->regression ? NULL : (const char *const *)t->classes;
    const int pairs = t->o.pair, L = t->num_classes;
    if (t->task->tokens ? text_set_load_tags(&d->train_text, t->o.train_path, d->tok, d->max_len,
                                             labels, L, err)
                        : text_set_load(&d->train_text, t->o.train_path, d->tok, d->max_len, pairs,
                                        labels, L, err))
        return -1;
    if (t->o.val_path && (t->task->tokens ? text_set_load_tags(&d->val_text, t->o.val_path, d->tok,
                                                               d->max_len, labels, L, err)
                                          : text_set_load(&d->val_text, t->o.val_path, d->tok,
                                                          d->max_len, pairs, labels, L, err)))
        return -1;
    /* without a validation file, the rows trainer_hold_out picks are rows of train_text */
    d->val_src = t->o.val_path ? &d->val_text : &d->train_text;
    const int n = d->train_text.count, nv = t->o.val_path ? d->val_text.count : 0;
    int *is_val = calloc((size_t)n, sizeof *is_val);
    d->train_rows = malloc((size_t)n * sizeof(int));
    d->val_rows = malloc((size_t)(n + nv) * sizeof(int));
    int rc = is_val && d->train_rows && d->val_rows ? 0 : vit_fail(err, "out of memory");
    if (rc == 0 && !t->o.val_path)
        rc = trainer_hold_out(t, d->train_text.labels, (size_t)n, is_val, err);
    for (int i = 0; rc == 0 && i < n; i++) {
        if (is_val[i])
            d->val_rows[t->n_val++] = i;
        else
            d->train_rows[t->n_train++] = i;
    }
    for (int i = 0; rc == 0 && i < nv; i++) d->val_rows[t->n_val++] = i;
    free(is_val);
    if (rc == 0 && t->n_train == 0)
        rc = vit_fail(err, "%s: no training sentences", t->o.train_path);
    if (rc == 0)
        trainer_info(t, "%d training and %d validation sentences, at most %d tokens (longest %d)",
                     t->n_train, t->n_val, d->max_len, d->train_text.longest);
    return rc;
}

static int text_length(const trainer *t, int k) {
    const text_task *d = task_data(t);
    const int row = d->train_rows[k];
    return (int)(d->train_text.offset[row + 1] - d->train_text.offset[row]);
}

/* Longest first, ties in index order (qsort_r comparator; context: the trainer). */
static int by_length(const void *a, const void *b, void *context) {
    const trainer *t = context;
    const int la = text_length(t, *(const int *)a), lb = text_length(t, *(const int *)b);
    return la != lb ? lb - la : *(const int *)a - *(const int *)b;
}

/* HF's group_by_length: batches padded to their longest sentence waste most of their work on
 * padding when lengths are mixed, so the shuffled order is cut into mega-batches of LENGTH_GROUP
 * batches, each sorted by length, and the epoch's batches are then shuffled (a batch holds
 * sentences of similar length, yet which batch comes when stays random). */
static void group_by_length(trainer *t, uint64_t *st) {
    if (t->o.ungrouped) return;
    const int B = t->B, group = LENGTH_GROUP * B, used = (int)t->steps_per_epoch * B;
    for (int g = 0; g < used; g += group)
        qsort_r(t->perm + g, (size_t)((used - g < group) ? used - g : group), sizeof(int),
                by_length, t);
    int *order = t->scratch; /* batch order, then the reordered perm behind it */
    const int nb = (int)t->steps_per_epoch;
    for (int k = 0; k < nb; k++) order[k] = k;
    rng_shuffle(order, nb, st);
    int *out = t->scratch + nb;
    for (int k = 0; k < nb; k++)
        memcpy(out + (size_t)k * B, t->perm + (size_t)order[k] * B, sizeof(int) * (size_t)B);
    memcpy(t->perm, out, sizeof(int) * (size_t)used);
}

/* ---- batches and passes ---- */

static int prepare_texts(trainer *t, vit_error *err) {
    text_task *d = task_data(t);
    d->rows = malloc((size_t)t->B * sizeof *d->rows);
    d->ids = malloc((size_t)t->B * d->max_len * sizeof *d->ids);
    d->types = malloc((size_t)t->B * d->max_len * sizeof *d->types);
    d->mask = malloc((size_t)t->B * d->max_len);
    if (!d->rows || !d->ids || !d->types || !d->mask) return vit_fail(err, "out of memory");
    if (t->task->regression && !(d->targets = malloc((size_t)t->B * sizeof *d->targets)))
        return vit_fail(err, "out of memory");
    if (t->task->tokens) {
        const size_t rows = (size_t)t->B * d->max_len;
        d->tags = malloc(rows * sizeof *d->tags);
        d->tag_logits = vit_alloc_floats(rows * (size_t)t->num_classes);
        if (!d->tags || !d->tag_logits) return vit_fail(err, "out of memory");
    }
    return text_acts_alloc(&d->acts, &t->m, t->B, d->max_len, 1, err);
}

/* Word dropout: each word piece of the batch ids [B, T] (not the first and last tokens or
 * padding) becomes the unknown token with probability token_dropout, drawn from the step's
 * augmentation stream. The model learns not to lean on any single word, and the unknown token is
 * what it meets for unknown words later. */
static void drop_tokens(trainer *t, int n) {
    text_task *d = task_data(t);
    uint64_t st = rng_derive(t->o.seed, RNG_AUGMENT, (uint64_t)t->step);
    const int unk = d->unk, T = d->T;
    for (int b = 0; b < n; b++) {
        int len = 0;
        while (len < T && d->mask[(size_t)b * T + len]) len++;
        for (int i = 1; i < len - 1; i++)
            if (rng_uniform(&st) < t->o.token_dropout) d->ids[(size_t)b * T + i] = unk;
    }
}

static int text_batch(trainer *t, const int *idx, int n, int train, vit_error *err) {
    (void)err;
    text_task *d = task_data(t);
    const int *rows = train ? d->train_rows : d->val_rows;
    for (int b = 0; b < n; b++) d->rows[b] = rows[idx[b]];
    d->T = text_set_batch(train ? &d->train_text : d->val_src, d->rows, n, d->ids, d->types,
                          d->mask, t->labels);
    const text_set *from = train ? &d->train_text : d->val_src;
    for (int b = 0; d->targets && b < n; b++) d->targets[b] = from->scores[d->rows[b]];
    if (d->tags)
        d->counted =
            text_set_batch_tags(train ? &d->train_text : d->val_src, d->rows, n, d->T, d->tags);
    if (train && t->o.token_dropout > 0) drop_tokens(t, n);
    if (train && t->part_n < n) { /* this process's rows, padded to the whole batch's length */
        const size_t T = (size_t)d->T, first = (size_t)t->part_first, part = (size_t)t->part_n;
        if (d->tags) memmove(d->tags, d->tags + first * T, part * T * sizeof *d->tags);
        if (d->targets) memmove(d->targets, d->targets + first, part * sizeof *d->targets);
        memmove(d->ids, d->ids + first * T, part * T * sizeof *d->ids);
        memmove(d->types, d->types + first * T, part * T * sizeof *d->types);
        memmove(d->mask, d->mask + first * T, part * T * sizeof *d->mask);
        memmove(t->labels, t->labels + first, part * sizeof *t->labels);
    }
    return 0;
}

static int text_forward(trainer *t, int n, const forward_mode *mode, float *logits,
                        vit_error *err) {
    text_task *d = task_data(t);
    return text_model_forward_typed(&t->m, &d->acts, d->ids, t->o.pair ? d->types : NULL, d->mask,
                                    n, d->T, mode, logits, err);
}

static void text_backward(trainer *t, const float *dlogits) {
    text_model_backward(&t->m, &t->g, &task_data(t)->acts, dlogits);
}

/* Tagged words: the loss of every token that has a tag, as BertForTokenClassification's
 * CrossEntropyLoss (ignore_index -100, the mean over them), hits per token; each process's part
 * counts as its tags' share of the whole batch's. */
static int tags_pass(trainer *t, int n, const forward_mode *mode, double *loss, double *correct,
                     vit_error *err) {
    text_task *d = task_data(t);
    const int train = mode && mode->train, L = t->num_classes, rows = n * d->T;
    if (text_model_forward_typed(&t->m, &d->acts, d->ids, NULL, d->mask, n, d->T, mode,
                                 d->tag_logits, err) != 0)
        return -1;
    const float eps = train ? t->o.label_smoothing : 0.0f;
    int counted, hits;
    const double mean = token_crossentropy_forward(d->tag_logits, d->tag_logits, d->tags, rows, L,
                                                   eps, &counted, &hits);
    const int total = train ? d->counted : counted;
    const double share = total > 0 ? (double)counted / total : 0.0;
    *loss = train ? mean * share * t->B / n : mean;
    *correct = total > 0 ? (double)hits / total * (train ? t->B : n) : 0.0;
    if (!train) return 0;
    token_crossentropy_backward(d->tag_logits, d->tag_logits, d->tags, rows, L, eps, 1.0f, total);
    text_model_backward(&t->m, &t->g, &d->acts, d->tag_logits);
    return 0;
}

/* Scores: the mean squared error of the one output against each text's score, as
 * ...ForSequenceClassification's MSELoss for problem_type regression; no hits (*correct 0). */
static int scores_pass(trainer *t, int n, const forward_mode *mode, double *loss, double *correct,
                       vit_error *err) {
    text_task *d = task_data(t);
    const int train = mode && mode->train;
    if (text_model_forward_typed(&t->m, &d->acts, d->ids, t->o.pair ? d->types : NULL, d->mask, n,
                                 d->T, mode, t->logits, err) != 0)
        return -1;
    double sum = 0.0;
    for (int b = 0; b < n; b++) {
        const double e = (double)t->logits[b] - d->targets[b];
        sum += e * e;
        /* of the whole batch's mean: each process's part adds its rows' share */
        t->dlogits[b] = (float)(2.0 * e / t->B);
    }
    *loss = sum / n;
    *correct = 0.0;
    if (train) text_model_backward(&t->m, &t->g, &d->acts, t->dlogits);
    return 0;
}

static void free_texts(trainer *t) {
    text_task *d = task_data(t);
    if (!d) return;
    text_acts_free(&d->acts);
    text_tokenizer_free(d->tok);
    text_set_free(&d->train_text);
    text_set_free(&d->val_text);
    free(d->train_rows), free(d->val_rows), free(d->rows), free(d->ids), free(d->types),
        free(d->mask);
    free(d->tags), free(d->tag_logits), free(d->targets);
    free(d);
    t->data = NULL;
}

const train_task task_text = {.unit = "sentences",
                              .kind = MODEL_TEXT,
                              .data_classes = text_classes,
                              .new_model = new_bert,
                              .companion = text_companion,
                              .load_data = load_texts,
                              .prepare = prepare_texts,
                              .order = group_by_length,
                              .load_batch = text_batch,
                              .forward = text_forward,
                              .backward = text_backward,
                              .free = free_texts};

/* Token classification: the same model, tokenizer and batches, tagged words for data, and the
 * loss over every token. */
const train_task task_tags = {.unit = "sentences",
                              .kind = MODEL_TEXT,
                              .tokens = 1,
                              .data_classes = tag_classes,
                              .new_model = new_bert,
                              .companion = text_companion,
                              .load_data = load_texts,
                              .prepare = prepare_texts,
                              .order = group_by_length,
                              .load_batch = text_batch,
                              .loss_pass = tags_pass,
                              .free = free_texts};

/* Regression: the same model, tokenizer and batches, a score per text, the squared error. */
const train_task task_scores = {.unit = "sentences",
                                .kind = MODEL_TEXT,
                                .regression = 1,
                                .data_classes = score_classes,
                                .new_model = new_bert,
                                .companion = text_companion,
                                .load_data = load_texts,
                                .prepare = prepare_texts,
                                .order = group_by_length,
                                .load_batch = text_batch,
                                .loss_pass = scores_pass,
                                .free = free_texts};
