/* Training an image-to-text model, a VisionEncoderDecoderModel folder (--init, or the run's own
 * folder when resuming): images with their texts (vit/data/line_set.h) decoded and tokenized once
 * into memory, teacher forcing (the labels shifted right as the decoder's input), the token
 * cross-entropy with label smoothing, and the backward through the decoder and its
 * cross-attention into the encoder. The encoder's and the decoder's tensors share one parameter
 * block (model_join: t->m), so the optimizer, the clipping and the checkpoints see one model
 * under the file's names; the forwards run on views of the two towers. No augmentation: a text's
 * image must stay readable (the data brings its own variety). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/text_tokenizer.h"
#include "vit/base/alloc.h"
#include "vit/base/rng.h"
#include "vit/core/ops.h"
#include "vit/data/image_set.h"
#include "vit/data/line_set.h"
#include "vit/io/model_dir.h"
#include "vit/io/weights.h"
#include "vit/model/decoder_model.h"
#include "vit/model/vit_model.h"
#include "vit/train/trainer.h"
#include "vit/train/ved_val.h"

typedef struct {
    model enc, dec;   /* the towers' layouts (their tensors moved into t->m) */
    model encv, decv; /* views: their tensors in t->m.params */
    model genc, gdec; /* views: their gradients in t->grads */
    size_t offset[2];
    st_entry *extra; /* the checkpoint's tensors the towers do not hold (an encoder's pooler,
                      * TrOCR's _float_tensor buffer): written back as they came */
    int n_extra;
    int fresh; /* a new decoder over an image model's encoder (ved_new.c) */
    text_tokenizer *tok;
    int max_len; /* label ids per text */
    image_set train, val;
    line_labels train_y, val_y;
    char **val_texts;       /* [val.count] the validation lines' texts (their error rates) */
    decoder_acts read_acts; /* greedy reading of validation batches (ved_val.c) */
    float *lut, *pixels;
    vit_acts va;
    decoder_acts da;
    int *labels;    /* [B, max_len] the batch's labels, -100 after each text */
    int32_t *ids;   /* [B, max_len] the decoder's input */
    float *logits;  /* [B, max_len, V], the softmax, then the gradient */
    float *dstates; /* [B, S, encoder width] */
    int T, tokens;  /* the batch's length, the whole batch's label tokens */
} ved_task;

static ved_task *task_data(const trainer *t) {
    return t->data;
}

/* ---- the model ---- */

static void extra_free(ved_task *d) {
    for (int i = 0; i < d->n_extra; i++)
        free((void *)d->extra[i].name), free((void *)d->extra[i].data);
    free(d->extra);
    d->extra = NULL, d->n_extra = 0;
}

/* Copies of the tensors of dir's weights (any layout weights_open reads) that t->m does not
 * hold. */
static int keep_extra(trainer *t, ved_task *d, const char *dir, vit_error *err) {
    weights f;
    if (weights_open(dir, 0, &f, err) != 0) return -1;
    d->extra = calloc((size_t)f.count + 1, sizeof *d->extra);
    int rc = d->extra ? 0 : vit_fail(err, "out of memory");
    for (int i = 0; rc == 0 && i < f.count; i++) {
        const st_tensor *s = weights_tensor(&f, i);
        if (model_find_param(&t->m, s->name)) continue;
        if ((rc = weights_read(&f, s, err)) != 0) break;
        st_entry *e = &d->extra[d->n_extra++];
        e->ndim = s->ndim, e->dtype = s->dtype;
        memcpy(e->shape, s->shape, sizeof e->shape);
        void *bytes = malloc(s->nbytes ? s->nbytes : 1);
        e->name = strdup(s->name);
        if (!bytes || !e->name) rc = vit_fail(err, "out of memory");
        if (bytes) memcpy(bytes, s->data, s->nbytes);
        e->data = bytes;
    }
    weights_close(&f);
    return rc;
}

/* The two towers of dir in one parameter block (t->m), and views of them on it. */
static int join_towers(trainer *t, ved_task *d, vit_error *err) {
    const model *parts[2] = {&d->enc, &d->dec};
    if (model_join(&t->m, parts, 2, d->offset, err) != 0) return -1;
    if (model_bind(&d->encv, &d->enc, t->m.params + d->offset[0]) != 0 ||
        model_bind(&d->decv, &d->dec, t->m.params + d->offset[1]) != 0)
        return vit_fail(err, "out of memory");
    free(d->enc.params), free(d->dec.params); /* moved into t->m */
    d->enc.params = d->dec.params = NULL;
    return 0;
}

/* dir's two towers, and the tensors of its file they do not hold. */
static int load_towers(trainer *t, ved_task *d, const char *dir, vit_error *err) {
    if (t->o.tokenizer_dir)
        return vit_fail(err, "--tokenizer is for a new decoder: %s has its own", dir);
    if (model_load_tower(&d->dec, dir, TOWER_TEXT, err) != 0 ||
        model_load_tower(&d->enc, dir, TOWER_IMAGE, err) != 0 || join_towers(t, d, err) != 0)
        return -1;
    return keep_extra(t, d, dir, err);
}

/* A new decoder over the image model in dir, for the tokenizer of --tokenizer. */
static int new_towers(trainer *t, ved_task *d, const char *dir, vit_error *err) {
    if (!t->o.tokenizer_dir)
        return vit_fail(err,
                        "%s: not a VisionEncoderDecoder folder (a new decoder over its encoder "
                        "needs --tokenizer DIR)",
                        dir);
    d->fresh = 1;
    if (text_tokenizer_load(t->o.tokenizer_dir, &d->tok, err) != 0 ||
        ved_new_towers(t, dir, d->tok, &d->enc, &d->dec, err) != 0)
        return -1;
    return join_towers(t, d, err);
}

static int ved_setup_model(trainer *t, const char *dir, vit_error *err) {
    ved_task *d = calloc(1, sizeof *d);
    if (!(t->data = d)) return vit_fail(err, "out of memory");
    if (t->o.attention_dropout > 0)
        return vit_fail(err, "--attention-dropout: an image-to-text model's decoder has none");
    model_config c;
    if (model_config_load(dir, &c, err) != 0) return -1;
    const int ved = c.family == FAMILY_VED;
    model_config_free(&c);
    if ((ved ? load_towers : new_towers)(t, d, dir, err) != 0) return -1;
    trainer_info(t, "%s: %s encoder (%zu parameters) + %s decoder (%zu)", dir,
                 config_model_type(&d->enc.cfg), model_live_params(&d->enc),
                 config_model_type(&d->dec.cfg), model_live_params(&d->dec));
    return 0;
}

/* The folder's preprocessing and tokenizer (process 0 copies its files into out_dir when
 * fine-tuning; a new model's were written by ved_new_towers), the text length, the ids
 * shift_tokens_right needs. */
static int ved_companion(trainer *t, const char *dir, vit_error *err) {
    ved_task *d = task_data(t);
    const model_config *c = &d->dec.cfg;
    if (t->rank == 0 && !d->fresh && strcmp(dir, t->o.out_dir) != 0 &&
        model_dir_copy_files(dir, t->o.out_dir, err) != 0)
        return -1;
    if (!d->fresh && t->o.keep_aspect)
        return vit_fail(err,
                        "--keep-aspect: %s is an image-to-text model already, whose "
                        "preprocessor_config.json says what is done to a line (it is kept)",
                        dir);
    if (model_dir_load_preprocess(dir, &t->pp, err) != 0) return -1;
    if (d->fresh && t->o.enc_height > 0) /* the new input size, as ved_new.c wrote it */
        resize_preprocess_config(&t->pp, t->o.enc_height, t->o.enc_width, t->o.keep_aspect);
    if (!d->fresh && text_tokenizer_load(dir, &d->tok, err) != 0) return -1;
    if (c->start_token_id < 0 || c->shift_pad_id < 0)
        return vit_fail(err,
                        "%s/config.json: training needs decoder_start_token_id and "
                        "pad_token_id (the decoder's input is the labels shifted right)",
                        dir);
    if (text_tokenizer_vocab_size(d->tok) > c->vocab_size)
        return vit_fail(err,
                        "%s: the tokenizer's vocabulary (%d) is larger than the decoder's (%d)",
                        dir, text_tokenizer_vocab_size(d->tok), c->vocab_size);
    const int limit = text_tokenizer_max_len(d->tok);
    d->max_len = t->o.max_len ? t->o.max_len : limit > 0 ? limit : c->max_position_embeddings;
    if (!t->o.max_len && d->max_len > c->max_position_embeddings)
        d->max_len = c->max_position_embeddings;
    if (d->max_len > c->max_position_embeddings)
        return vit_fail(err, "--max-len %d: more than the decoder's %d positions", d->max_len,
                        c->max_position_embeddings);
    return 0;
}

/* ---- data ---- */

static void load_progress(void *user, size_t done, size_t total) {
    const trainer *t = user;
    if (t->rank == 0 && t->hooks && t->hooks->load_progress)
        t->hooks->load_progress(t->hooks->user, done, total);
}

/* l's images decoded and its texts tokenized. */
static int load_lines(trainer *t, const line_list *l, image_set *s, line_labels *y,
                      vit_error *err) {
    ved_task *d = task_data(t);
    int *index = malloc(sizeof *index * (size_t)(l->count ? l->count : 1));
    if (!index) return vit_fail(err, "out of memory");
    for (int i = 0; i < l->count; i++) index[i] = i;
    int rc = line_labels_encode(l, d->tok, d->max_len, y, err);
    if (rc == 0 && l->count)
        rc = image_set_load_lines(s, &t->pp, l->paths, index, (size_t)l->count, load_progress, t,
                                  err);
    free(index);
    return rc;
}

/* Moves round(val_split · n) lines of all, chosen by the seed, into val; the rest into train. */
static int split_lines(const trainer *t, line_list *all, line_list *train, line_list *val,
                       vit_error *err) {
    const int n = all->count, hold = (int)(t->o.val_split * n + 0.5);
    int *order = malloc(sizeof *order * (size_t)n);
    line_list *to[2] = {train, val};
    for (int k = 0; k < 2; k++) {
        to[k]->paths = calloc((size_t)n, sizeof(char *));
        to[k]->texts = calloc((size_t)n, sizeof(char *));
    }
    if (!order || !train->paths || !train->texts || !val->paths || !val->texts)
        return free(order), vit_fail(err, "out of memory");
    for (int i = 0; i < n; i++) order[i] = i;
    uint64_t st = rng_derive(t->o.seed, RNG_SPLIT, 0);
    rng_shuffle(order, n, &st);
    uint8_t *held = calloc((size_t)n, 1); /* the first `hold` of the order, kept in file order */
    if (!held) return free(order), vit_fail(err, "out of memory");
    for (int k = 0; k < hold; k++) held[order[k]] = 1;
    for (int i = 0; i < n; i++) {
        line_list *dst = to[held[i]];
        dst->paths[dst->count] = all->paths[i], dst->texts[dst->count++] = all->texts[i];
        all->paths[i] = all->texts[i] = NULL;
    }
    free(order), free(held);
    return 0;
}

static int ved_load_data(trainer *t, vit_error *err) {
    ved_task *d = task_data(t);
    line_list all = {0}, train = {0}, val = {0};
    int rc = line_list_read(t->o.train_path, &all, err);
    if (rc == 0 && t->o.val_path) {
        train = all;
        memset(&all, 0, sizeof all);
        rc = line_list_read(t->o.val_path, &val, err);
    } else if (rc == 0) {
        rc = split_lines(t, &all, &train, &val, err);
    }
    if (rc == 0 && train.count == 0) rc = vit_fail(err, "%s: no training lines", t->o.train_path);
    if (rc == 0)
        trainer_info(t, "decoding %d training and %d validation images, texts of at most %d tokens",
                     train.count, val.count, d->max_len);
    if (rc == 0) rc = load_lines(t, &train, &d->train, &d->train_y, err);
    if (rc == 0 && val.count) rc = load_lines(t, &val, &d->val, &d->val_y, err);
    if (rc == 0 && val.count) { /* taken over: the error rates compare with them */
        d->val_texts = val.texts;
        val.texts = calloc((size_t)val.count, sizeof *val.texts);
        if (!val.texts) rc = vit_fail(err, "out of memory");
    }
    line_list_free(&all), line_list_free(&train), line_list_free(&val);
    t->n_train = d->train.count;
    t->n_val = d->val.count;
    if (rc == 0) trainer_info(t, "the longest text: %d tokens", d->train_y.longest);
    return rc;
}

/* ---- batches and passes ---- */

static int ved_prepare(trainer *t, vit_error *err) {
    ved_task *d = task_data(t);
    const size_t B = (size_t)t->B, per = (size_t)d->train.C * d->train.H * d->train.W;
    /* rebased from the views (the layouts' own tensors were released into t->m) */
    if (model_bind(&d->genc, &d->encv, t->grads + d->offset[0]) != 0 ||
        model_bind(&d->gdec, &d->decv, t->grads + d->offset[1]) != 0)
        return vit_fail(err, "out of memory");
    const model_config *e = &d->encv.cfg;
    if (d->train.H != e->image_size || d->train.W != e->image_width)
        return vit_fail(err,
                        "the preprocessing makes %dx%d images; the encoder takes %dx%d "
                        "(width x height)",
                        d->train.W, d->train.H, e->image_width, e->image_size);
    if (vit_acts_alloc(&d->va, &d->encv, t->B, 0, VIT_ACTS_TRAIN, err) != 0 ||
        decoder_acts_alloc_train(&d->da, &d->decv, t->B, d->max_len, d->va.tokens, err) != 0 ||
        (d->val.count && decoder_acts_alloc(&d->read_acts, &d->decv, t->B, d->max_len, t->B,
                                            d->va.tokens, err) != 0))
        return -1;
    const size_t BT = B * (size_t)d->max_len, V = (size_t)d->dec.cfg.vocab_size;
    d->pixels = malloc(B * per * sizeof(float));
    d->lut = malloc((size_t)d->train.C * 256 * sizeof(float));
    d->labels = malloc(BT * sizeof *d->labels);
    d->ids = malloc(BT * sizeof *d->ids);
    d->logits = vit_alloc_floats(BT * V);
    d->dstates = vit_alloc_floats(B * (size_t)d->va.tokens * d->enc.cfg.hidden_size);
    if (!d->pixels || !d->lut || !d->labels || !d->ids || !d->logits || !d->dstates)
        return vit_fail(err, "out of memory for batches of %d texts of %d tokens", t->B,
                        d->max_len);
    return pixel_lut(&t->pp, d->lut, err);
}

static int ved_batch(trainer *t, const int *idx, int n, int train, vit_error *err) {
    (void)err;
    ved_task *d = task_data(t);
    const image_set *s = train ? &d->train : &d->val;
    /* the whole batch's length, so each process's part has the shape it has in the whole */
    d->T = line_labels_batch(train ? &d->train_y : &d->val_y, idx, n, d->labels, &d->tokens);
    if (train && t->part_n < n) {
        const size_t T = (size_t)d->T;
        memmove(d->labels, d->labels + (size_t)t->part_first * T,
                (size_t)t->part_n * T * sizeof *d->labels);
        idx += t->part_first, n = t->part_n;
    }
    decoder_shift_right(&d->decv.cfg, d->labels, n, d->T, d->ids);
    image_set_batch_part(s, idx, n, d->lut, NULL, 0, train ? t->part_first : 0, d->pixels);
    return 0;
}

/* dlogits of the batch's loss (in place of the softmax), then the decoder's and the encoder's
 * backward. */
static void ved_backward(trainer *t, int n, float eps, int tokens) {
    ved_task *d = task_data(t);
    const int frozen = t->o.freeze_encoder;
    token_crossentropy_backward(d->logits, d->logits, d->labels, n * d->T, d->dec.cfg.vocab_size,
                                eps, 1.0f, tokens);
    decoder_train_backward(&d->decv, &d->gdec, &d->da, d->logits, frozen ? NULL : d->dstates);
    if (!frozen) vit_model_backward(&d->encv, &d->genc, &d->va, d->dstates);
}

static int ved_pass(trainer *t, int n, const forward_mode *mode, double *loss, double *correct,
                    vit_error *err) {
    ved_task *d = task_data(t);
    const int train = mode && mode->train, V = d->dec.cfg.vocab_size;
    if (vit_model_forward(&d->encv, &d->va, d->pixels, n, mode, NULL, err) != 0 ||
        decoder_train_forward(&d->decv, &d->da, vit_acts_hidden(&d->va), d->va.tokens, d->ids, n,
                              d->T, mode, d->logits, err) != 0)
        return -1;
    const float eps = train ? t->o.label_smoothing : 0.0f;
    int counted, hits;
    const double mean = token_crossentropy_forward(d->logits, d->logits, d->labels, n * d->T, V,
                                                   eps, &counted, &hits);
    /* a part's share of the whole batch: its tokens over the batch's */
    const int total = train ? d->tokens : counted;
    const double share = total > 0 ? (double)counted / total : 0.0;
    *loss = train ? mean * share * t->B / n : mean;
    *correct = total > 0 ? (double)hits / total * (train ? t->B : n) : 0.0;
    if (train) ved_backward(t, n, eps, total);
    return 0;
}

static int ved_save(const trainer *t, vit_error *err) {
    const ved_task *d = task_data(t);
    char path[4096];
    trainer_path(t, path, sizeof path, "model.safetensors");
    return model_save_weights(path, &t->m, d->extra, d->n_extra, err);
}

static void ved_free(trainer *t) {
    ved_task *d = task_data(t);
    if (!d) return;
    vit_acts_free(&d->va);
    decoder_acts_free(&d->da);
    decoder_acts_free(&d->read_acts);
    for (int i = 0; d->val_texts && i < d->val.count; i++) free(d->val_texts[i]);
    free(d->val_texts);
    model *views[4] = {&d->encv, &d->decv, &d->genc, &d->gdec};
    for (int i = 0; i < 4; i++)
        if (views[i]->entries) model_unbind(views[i]);
    if (d->enc.entries) model_free(&d->enc);
    if (d->dec.entries) model_free(&d->dec);
    extra_free(d);
    text_tokenizer_free(d->tok);
    image_set_free(&d->train), image_set_free(&d->val);
    line_labels_free(&d->train_y), line_labels_free(&d->val_y);
    free(d->lut), free(d->pixels), free(d->labels), free(d->ids), free(d->logits), free(d->dstates);
    free(d);
    t->data = NULL;
}

/* The validation lines read greedily, batch by batch, and scored as vit eval scores them. */
static int ved_read_val(trainer *t, double *cer, double *wer, vit_error *err) {
    ved_task *d = task_data(t);
    text_errors sum = {0};
    int *idx = malloc(sizeof *idx * (size_t)t->B);
    if (!idx) return vit_fail(err, "out of memory");
    int rc = 0;
    for (int first = 0; rc == 0 && first < d->val.count; first += t->B) {
        const int n = d->val.count - first < t->B ? d->val.count - first : t->B;
        for (int i = 0; i < n; i++) idx[i] = first + i;
        rc = ved_batch(t, idx, n, 0, err);
        if (rc == 0) rc = vit_model_forward(&d->encv, &d->va, d->pixels, n, NULL, NULL, err);
        if (rc == 0)
            rc = ved_val_read(&d->decv, &d->read_acts, vit_acts_hidden(&d->va), n, d->va.tokens,
                              d->max_len, d->tok, d->val_texts + first, &sum, err);
    }
    free(idx);
    *cer = text_errors_cer(&sum), *wer = text_errors_wer(&sum);
    return rc;
}

const train_task task_ved = {.unit = "images",
                             .kind = MODEL_DECODER,
                             .setup_model = ved_setup_model,
                             .companion = ved_companion,
                             .load_data = ved_load_data,
                             .prepare = ved_prepare,
                             .load_batch = ved_batch,
                             .loss_pass = ved_pass,
                             .read_val = ved_read_val,
                             .save = ved_save,
                             .encoder_prefix = "encoder.",
                             .free = ved_free};
