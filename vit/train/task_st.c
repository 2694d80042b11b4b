/* Training a sentence-transformers folder with MultipleNegativesRankingLoss (--loss mnrl): rows of
 * (anchor, positive[, hard negative]) texts, in-batch negatives (vit/train/st_loss.h), the folder
 * saved as it came (modules.json, 1_Pooling/, its Dense and Normalize modules) with the trained
 * Transformer where it was (the root, or its module's folder: 0_Transformer/) and the trained
 * Dense weights in their modules' folders. The Dense modules' tensors and the Transformer's share
 * one parameter block (model_join: t->m), so the optimizer, the clipping and the checkpoints see
 * both; the forward runs on a view of the Transformer and on the Dense weights in the block. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/text_tokenizer.h"
#include "vit/base/alloc.h"
#include "vit/base/rng.h"
#include "vit/data/text_set.h"
#include "vit/io/model_dir.h"
#include "vit/io/st_folder.h"
#include "vit/train/st_loss.h"
#include "vit/train/trainer.h"

#define MAX_COLUMNS 3
/* MultipleNegativesRankingLoss's default scale (cos_sim times 20) */
#define MNRL_SCALE 20.0f

typedef struct {
    st_pipeline p;      /* its Dense weights point into t->m.params (dense_in_block) */
    model tm;           /* the Transformer's layout (its tensors moved into t->m) */
    model tv, tg;       /* views: its tensors in t->m.params, its gradients in t->grads */
    model dm;           /* the Dense modules' tensors: entries and a block, no layers */
    st_dense *dgrad;    /* [p.ndense] their gradients in t->grads */
    size_t offset[2];   /* of dm and tm in t->m.params */
    int dense_in_block; /* p.dense[i].w and .b point into t->m.params (not to be freed) */
    char sub[4096]; /* the Transformer's folder in the sentence-transformers one ("": its root) */
    text_tokenizer *tok;
    int max_len, k;
    text_set train[MAX_COLUMNS], val[MAX_COLUMNS];
    int *train_rows, *val_rows, *rows;
    int32_t *ids; /* [k·B, max_len] the batch: anchors, positives, negatives */
    uint8_t *mask;
    int T;
    st_train s;
} st_task;

static st_task *task_data(const trainer *t) {
    return t->data;
}

/* 1 when a and b name one folder. */
static int same_dir(const char *a, const char *b) {
    char ra[PATH_MAX], rb[PATH_MAX];
    return realpath(a, ra) && realpath(b, rb) && strcmp(ra, rb) == 0;
}

/* Where out_dir holds the trained Transformer: its root, or the module's folder. */
static void transformer_out(const trainer *t, char *buf, size_t size) {
    const st_task *d = task_data(t);
    snprintf(buf, size, "%s%s%s", t->o.out_dir, d->sub[0] ? "/" : "", d->sub);
}

/* The Dense modules' tensors as a layout of entries (named <module>/linear.weight, the weight
 * decayed, the bias not: transformers' Trainer decays no bias or norm) over a copy of them. */
static int dense_layout(st_task *d, vit_error *err) {
    const st_pipeline *p = &d->p;
    model *dm = &d->dm;
    dm->entries = calloc((size_t)(2 * p->ndense + 1), sizeof *dm->entries);
    if (!dm->entries) return vit_fail(err, "out of memory");
    for (int i = 0; i < p->ndense; i++)
        for (int k = 0; k < (p->dense[i].b ? 2 : 1); k++) {
            param_entry *e = &dm->entries[dm->num_entries++];
            const int len = snprintf(e->name, sizeof e->name, "%s/linear.%s", p->dense[i].module,
                                     k ? "bias" : "weight");
            if (len < 0 || (size_t)len >= sizeof e->name)
                return vit_fail(err, "%s: a module path of over 80 bytes", p->dense[i].module);
            e->ndim = k ? 1 : 2;
            e->shape[0] = p->dense[i].out, e->shape[1] = k ? 0 : p->dense[i].in;
            e->numel = (size_t)p->dense[i].out * (k ? 1 : (size_t)p->dense[i].in);
            e->offset = dm->num_params;
            e->decay = !k;
            dm->num_params += alloc_pad16(e->numel);
        }
    dm->cfg.kind = MODEL_TEXT;
    dm->params = vit_alloc_floats(dm->num_params ? dm->num_params : 1);
    if (!dm->params) return vit_fail(err, "out of memory");
    memset(dm->params, 0, sizeof(float) * dm->num_params);
    for (int i = 0, e = 0; i < p->ndense; i++) {
        memcpy(dm->params + dm->entries[e++].offset, p->dense[i].w,
               sizeof(float) * (size_t)p->dense[i].out * p->dense[i].in);
        if (p->dense[i].b)
            memcpy(dm->params + dm->entries[e++].offset, p->dense[i].b,
                   sizeof(float) * (size_t)p->dense[i].out);
    }
    return 0;
}

/* Where entry e of dm (or, from NULL, of a gradient's view) is in block. */
static float *dense_tensor(const st_task *d, float *block, int e) {
    return block + d->offset[0] + d->dm.entries[e].offset;
}

/* The Dense tensors and the Transformer's in one block (t->m), the pipeline's Dense weights and
 * the Transformer's view on it. */
static int join_parts(trainer *t, st_task *d, vit_error *err) {
    if (dense_layout(d, err) != 0) return -1;
    const model *parts[2] = {&d->dm, &d->tm}; /* the Transformer last: the joint's kind is its */
    if (model_join(&t->m, parts, 2, d->offset, err) != 0) return -1;
    if (model_bind(&d->tv, &d->tm, t->m.params + d->offset[1]) != 0)
        return vit_fail(err, "out of memory");
    free(d->tm.params), free(d->dm.params); /* moved into t->m */
    d->tm.params = d->dm.params = NULL;
    for (int i = 0, e = 0; i < d->p.ndense; i++) {
        st_dense *dn = &d->p.dense[i];
        free(dn->w), free(dn->b);
        dn->w = dense_tensor(d, t->m.params, e++);
        dn->b = dn->b ? dense_tensor(d, t->m.params, e++) : NULL;
    }
    d->dense_in_block = 1;
    return 0;
}

/* The folder's pipeline and its Transformer (at the folder's root or in its module's folder), a
 * base text model. */
static int st_setup_model(trainer *t, const char *dir, vit_error *err) {
    st_task *d = calloc(1, sizeof *d);
    if (!(t->data = d)) return vit_fail(err, "out of memory");
    if (t->ranks > 1)
        return vit_fail(err, "--loss mnrl runs in one process: its negatives are the whole "
                             "batch's");
    if (t->o.freeze_encoder)
        return vit_fail(err, "--freeze-encoder: a sentence-transformers folder has no head");
    if (!st_folder_is(dir))
        return vit_fail(err, "%s: --loss mnrl trains a sentence-transformers folder (modules.json)",
                        dir);
    if (st_pipeline_load(dir, &d->p, err) != 0 ||
        st_folder_transformer(dir, d->sub, sizeof d->sub, err) != 0 ||
        model_load(&d->tm, d->p.transformer_dir, err) != 0)
        return -1;
    const model_config *c = &d->tm.cfg;
    if (c->kind != MODEL_TEXT || c->opt.head != HEAD_NONE ||
        text_model_check_train(&d->tm, NULL) != 0) /* a joint tower, rotary, ALiBi */
        return vit_fail(err,
                        "%s: the Transformer is %s; vit trains BERT, RoBERTa, XLM-R, "
                        "DistilBERT and MPNet base models",
                        dir, config_architecture(c));
    if (d->p.word_dim != c->hidden_size)
        return vit_fail(err, "%s: the Pooling's word_embedding_dimension %d is not hidden_size %d",
                        dir, d->p.word_dim, c->hidden_size);
    /* the pooler is not in the sentence embedding: without decay its zero gradient leaves it as
     * it is (PyTorch skips a parameter without a gradient) */
    for (int i = 0; i < d->tm.num_entries; i++)
        if (strncmp(d->tm.entries[i].name, "pooler.", 7) == 0) d->tm.entries[i].decay = 0;
    if (join_parts(t, d, err) != 0) return -1;
    trainer_info(t,
                 "%s: %s, pooling then %d modules (%d Dense trained); "
                 "MultipleNegativesRankingLoss, scale %g",
                 dir, config_architecture(c), d->p.nsteps, d->p.ndense, (double)MNRL_SCALE);
    return 0;
}

/* The tokenizer, the sentence length, and (process 0, fine-tuning) the folder's files copied:
 * its modules (a Transformer in its own folder with them), a root Transformer's tokenizer. */
static int st_companion(trainer *t, const char *dir, vit_error *err) {
    st_task *d = task_data(t);
    if (t->rank == 0 && !same_dir(dir, t->o.out_dir) &&
        ((!d->sub[0] && tokenizer_files_save(t->o.out_dir, dir, NULL, 0, err) != 0) ||
         st_folder_copy_modules(dir, t->o.out_dir, err) != 0))
        return -1;
    if (text_tokenizer_load(d->p.transformer_dir, &d->tok, err) != 0) return -1;
    int limit = t->o.max_len ? t->o.max_len : d->p.max_seq_length;
    if (!limit) limit = text_tokenizer_max_len(d->tok);
    const int positions = config_text_max_tokens(&d->tm.cfg);
    d->max_len = limit > 0 && limit < positions ? limit : positions;
    if (d->max_len < 2)
        return vit_fail(err, "--max-len %d: a text needs at least 2 tokens", d->max_len);
    return 0;
}

/* round(val_split · n) rows held out, chosen by the seed (trainer_hold_out's draw for one class:
 * the rows have no classes). */
static void hold_out(const trainer *t, int n, int *is_val) {
    int *order = malloc(sizeof *order * (size_t)(n > 0 ? n : 1)), k = 0;
    if (!order) return; /* no validation rather than a failed run */
    for (int i = 0; i < n; i++) order[k++] = i;
    uint64_t st = rng_derive(t->o.seed, RNG_SPLIT, 0);
    rng_shuffle(order, k, &st);
    const int hold = (int)lround(t->o.val_split * k);
    for (int i = 0; i < hold && i < n - 2; i++) is_val[order[i]] = 1; /* 2 rows stay to train */
    free(order);
}

static int st_load_data(trainer *t, vit_error *err) {
    st_task *d = task_data(t);
    d->k = text_set_load_columns(d->train, MAX_COLUMNS, t->o.train_path, d->tok, d->max_len, err);
    if (d->k < 0) return -1;
    const int n = d->train[0].count;
    int nv = 0;
    if (t->o.val_path) {
        const int kv =
            text_set_load_columns(d->val, MAX_COLUMNS, t->o.val_path, d->tok, d->max_len, err);
        if (kv < 0) return -1;
        if (kv != d->k)
            return vit_fail(err, "%s has %d texts a line, %s %d", t->o.val_path, kv,
                            t->o.train_path, d->k);
        nv = d->val[0].count;
    }
    int *is_val = calloc((size_t)n, sizeof *is_val);
    d->train_rows = malloc(sizeof(int) * (size_t)n);
    d->val_rows = malloc(sizeof(int) * (size_t)(n + nv));
    int rc = is_val && d->train_rows && d->val_rows ? 0 : vit_fail(err, "out of memory");
    if (rc == 0 && !t->o.val_path) hold_out(t, n, is_val);
    for (int i = 0; rc == 0 && i < n; i++) {
        if (is_val[i])
            d->val_rows[t->n_val++] = i;
        else
            d->train_rows[t->n_train++] = i;
    }
    for (int i = 0; rc == 0 && i < nv; i++) d->val_rows[t->n_val++] = i;
    free(is_val);
    if (rc == 0 && t->n_train < 2)
        rc = vit_fail(err, "%s: in-batch negatives need at least 2 training rows", t->o.train_path);
    if (rc == 0)
        trainer_info(t,
                     "%d training and %d validation rows of %d texts (anchor, positive%s), at "
                     "most %d tokens",
                     t->n_train, t->n_val, d->k, d->k == 3 ? ", negative" : "", d->max_len);
    return rc;
}

static int st_prepare(trainer *t, vit_error *err) {
    st_task *d = task_data(t);
    const size_t texts = (size_t)d->k * t->B;
    d->rows = malloc(sizeof *d->rows * (size_t)t->B);
    d->ids = malloc(sizeof *d->ids * texts * d->max_len);
    d->mask = malloc(texts * d->max_len);
    d->dgrad = calloc((size_t)d->p.ndense + 1, sizeof *d->dgrad);
    if (!d->rows || !d->ids || !d->mask || !d->dgrad ||
        model_bind(&d->tg, &d->tv, t->grads + d->offset[1]) != 0)
        return vit_fail(err, "out of memory");
    for (int i = 0, e = 0; i < d->p.ndense; i++) {
        d->dgrad[i].w = dense_tensor(d, t->grads, e++);
        d->dgrad[i].b = d->p.dense[i].b ? dense_tensor(d, t->grads, e++) : NULL;
    }
    return st_train_alloc(&d->s, &d->tv, &d->p, (int)texts, d->max_len, err);
}

/* Rows idx[0..n): column c's texts at rows c·n.., all padded to the longest. */
static int st_batch(trainer *t, const int *idx, int n, int train, vit_error *err) {
    (void)err;
    st_task *d = task_data(t);
    const text_set *cols = train ? d->train : t->o.val_path ? d->val : d->train;
    const int *rows = train ? d->train_rows : d->val_rows;
    int T = 1;
    for (int b = 0; b < n; b++) d->rows[b] = rows[idx[b]];
    for (int c = 0; c < d->k; c++)
        for (int b = 0; b < n; b++) {
            const int len = (int)(cols[c].offset[d->rows[b] + 1] - cols[c].offset[d->rows[b]]);
            T = len > T ? len : T;
        }
    for (int c = 0; c < d->k; c++)
        for (int b = 0; b < n; b++) {
            const size_t at = cols[c].offset[d->rows[b]], row = (size_t)c * n + b;
            const int len = (int)(cols[c].offset[d->rows[b] + 1] - at);
            int32_t *ids = d->ids + row * T;
            memcpy(ids, cols[c].ids + at, sizeof *ids * (size_t)len);
            for (int k = len; k < T; k++) ids[k] = cols[c].pad_id;
            memset(d->mask + row * T, 1, (size_t)len);
            memset(d->mask + row * T + len, 0, (size_t)(T - len));
        }
    d->T = T;
    return 0;
}

/* The loss of the batch and its in-batch retrieval hits (the anchors whose own positive scores
 * highest). */
static int st_pass(trainer *t, int n, const forward_mode *mode, double *loss, double *correct,
                   vit_error *err) {
    st_task *d = task_data(t);
    int hits;
    if (st_train_pass(&d->s, &d->tv, &d->tg, &d->p, d->dgrad, d->ids, d->mask, d->k, n, d->T, mode,
                      MNRL_SCALE, loss, &hits, err) != 0)
        return -1;
    *correct = hits;
    return 0;
}

/* The Transformer where the folder keeps it and each Dense in its module's folder (a
 * checkpoint's model). */
static int st_save(const trainer *t, vit_error *err) {
    const st_task *d = task_data(t);
    char dir[4200];
    transformer_out(t, dir, sizeof dir);
    if (model_save(dir, &d->tv, &t->pp, t->o.dropout, t->o.attention_dropout, err) != 0) return -1;
    for (int i = 0; i < d->p.ndense; i++)
        if (st_dense_save(t->o.out_dir, &d->p.dense[i], err) != 0) return -1;
    return 0;
}

static void st_free(trainer *t) {
    st_task *d = task_data(t);
    if (!d) return;
    st_train_free(&d->s);
    for (int i = 0; d->dense_in_block && i < d->p.ndense; i++) /* t->m's */
        d->p.dense[i].w = d->p.dense[i].b = NULL;
    st_pipeline_free(&d->p);
    model *views[2] = {&d->tv, &d->tg};
    for (int i = 0; i < 2; i++)
        if (views[i]->entries) model_unbind(views[i]);
    if (d->tm.entries) model_free(&d->tm);
    free(d->dm.params), free(d->dm.entries), free(d->dgrad);
    text_tokenizer_free(d->tok);
    for (int c = 0; c < MAX_COLUMNS; c++) text_set_free(&d->train[c]), text_set_free(&d->val[c]);
    free(d->train_rows), free(d->val_rows), free(d->rows), free(d->ids), free(d->mask);
    free(d);
    t->data = NULL;
}

const train_task task_st = {.unit = "rows",
                            .kind = MODEL_TEXT,
                            .setup_model = st_setup_model,
                            .companion = st_companion,
                            .load_data = st_load_data,
                            .prepare = st_prepare,
                            .load_batch = st_batch,
                            .loss_pass = st_pass,
                            .save = st_save,
                            .free = st_free};
