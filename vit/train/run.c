/* The training run: set-up (classes, data, model, optimizer, or all of it from a checkpoint), then
 * epochs of steps, a validation pass and a checkpoint after each. Images and text share all of it
 * but the data, the model's forward/backward (vit_train.h, bert_train.h) and its initialisation:
 * those few places branch on run.text. */
#include "vit/train/run.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "text/tokenizer.h"
#include "vit/base/clock.h"
#include "vit/base/rng.h"
#include "vit/base/strlist.h"
#include "vit/model/bert_train.h"
#include "vit/io/model_dir.h"
#include "vit/base/file.h"
#include "vit/data/imagefolder.h"
#include "vit/model/model.h"
#include "vit/core/ops.h"
#include "vit/train/optim.h"
#include "vit/io/safetensors.h"
#include "vit/data/text_set.h"
#include "vit/model/vit_train.h"

/* Streams of the run's generator (rng_derive(seed, stream, n)): one per kind of draw, so adding
 * draws of one kind never shifts another. */
enum { RNG_SHUFFLE = 1, RNG_AUGMENT, RNG_DROPOUT, RNG_INIT, RNG_SPLIT };

#define STATE_FORMAT "vit-train-state-2"

/* Text batches come from mega-batches of this many batches sorted by length (see
 * group_by_length). */
#define LENGTH_GROUP 50

train_options train_default_options(void) {
    return (train_options){
        .val_split = 0.1f,
        .image_size = 28,
        .patch_size = 4,
        .hidden_size = 64,
        .num_layers = 6,
        .num_heads = 4,
        .mlp_size = 128,
        .channels = 1,
        .epochs = 10,
        .batch = 128,
        .lr = 1e-3f,
        .min_lr = 1e-5f,
        .weight_decay = 0.05f,
        .warmup_epochs = 1.0f,
        .label_smoothing = 0.1f,
        .dropout = 0.0f,
        .clip_norm = 1.0f,
        .augment = 1,
        .aug = {.crop_pad = -1, .flip = 1, .rrc_min_scale = 0.35f},
        .seed = 1,
    };
}

typedef struct {
    train_options o;
    char *owned[6]; /* copies of o's strings */
    const train_hooks *hooks;
    char **classes; /* the model's labels, borrowed from m.cfg */
    int num_classes;
    int text; /* a BERT on sentences, else a ViT on images */
    model m;
    int n_train, n_val; /* examples */
    /* images */
    preprocess_config pp;
    image_set train, val;
    float *lut, *pixels;
    vit_trainer *t;
    /* text: the training file's sentences; validation rows of val_text or, carved out of the
     * training file, of train_text (train_rows and val_rows index them) */
    tokenizer *tok;
    int max_len;
    text_set train_text, val_text;
    const text_set *val_src;
    int *train_rows, *val_rows;
    int32_t *ids;
    uint8_t *mask;
    bert_trainer *bt;
    /* optimisation */
    adamw opt;
    lr_schedule sched;
    int B;
    int64_t steps_per_epoch, total_steps;
    float *logits, *probs;
    int *perm, *batch_labels, *eval_idx, *scratch;
    /* the state a checkpoint keeps */
    int64_t step;
    uint64_t drop_rng;
    double epoch_loss_sum, epoch_seconds_before; /* of the epoch in progress */
    int64_t epoch_correct, epoch_seen;
} run;

static void info(const run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void info(const run *r, const char *fmt, ...) {
    if (!r->hooks || !r->hooks->info) return;
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    r->hooks->info(r->hooks->user, buf);
}

static void path_in(char *buf, size_t size, const char *dir, const char *name) {
    snprintf(buf, size, "%s/%s", dir, name);
}

/* ---- options as JSON (kept in the checkpoint so --resume needs nothing else) ---- */

static char *options_json(const train_options *o) {
    cJSON *j = cJSON_CreateObject();
    const struct {
        const char *k;
        const char *v;
    } strs[] = {{"train_path", o->train_path},
                {"val_path", o->val_path},
                {"labels_file", o->labels_file},
                {"init_dir", o->init_dir},
                {"vocab_file", o->vocab_file}};
    for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++)
        if (strs[i].v) cJSON_AddStringToObject(j, strs[i].k, strs[i].v);
    const struct {
        const char *k;
        double v;
    } nums[] = {{"val_split", o->val_split},
                {"image_size", o->image_size},
                {"patch_size", o->patch_size},
                {"hidden_size", o->hidden_size},
                {"num_layers", o->num_layers},
                {"num_heads", o->num_heads},
                {"mlp_size", o->mlp_size},
                {"channels", o->channels},
                {"freeze_encoder", o->freeze_encoder},
                {"epochs", o->epochs},
                {"batch", o->batch},
                {"lr", o->lr},
                {"min_lr", o->min_lr},
                {"weight_decay", o->weight_decay},
                {"warmup_epochs", o->warmup_epochs},
                {"label_smoothing", o->label_smoothing},
                {"dropout", o->dropout},
                {"attention_dropout", o->attention_dropout},
                {"clip_norm", o->clip_norm},
                {"augment", o->augment},
                {"crop_pad", o->aug.crop_pad},
                {"resized_crop", o->aug.resized_crop},
                {"rrc_min_scale", o->aug.rrc_min_scale},
                {"flip", o->aug.flip},
                {"max_len", o->max_len},
                {"ungrouped", o->ungrouped},
                {"token_dropout", o->token_dropout},
                {"beta2", o->beta2}};
    for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++) {
        char buf[40];
        snprintf(buf, sizeof buf, "%.9g", nums[i].v); /* floats round-trip exactly */
        cJSON_AddItemToObject(j, nums[i].k, cJSON_CreateRaw(buf));
    }
    char seed[32];
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)o->seed);
    cJSON_AddStringToObject(j, "seed", seed);
    char *text = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    return text;
}

static int options_parse(run *r, const char *text, const char *src, vit_error *err) {
    cJSON *j = cJSON_Parse(text);
    if (!cJSON_IsObject(j)) {
        cJSON_Delete(j);
        return vit_fail(err, "%s: unreadable training options", src);
    }
    train_options *o = &r->o;
    const char **strs[] = {&o->train_path, &o->val_path, &o->labels_file, &o->init_dir,
                           &o->vocab_file};
    const char *skeys[] = {"train_path", "val_path", "labels_file", "init_dir", "vocab_file"};
    for (int i = 0; i < 5; i++) {
        const cJSON *it = cJSON_GetObjectItemCaseSensitive(j, skeys[i]);
        *strs[i] = NULL;
        if (cJSON_IsString(it)) *strs[i] = r->owned[i] = strdup(it->valuestring);
    }
    float *fl[] = {&o->val_split,     &o->lr,
                   &o->min_lr,        &o->weight_decay,
                   &o->warmup_epochs, &o->label_smoothing,
                   &o->dropout,       &o->attention_dropout,
                   &o->clip_norm,     &o->aug.rrc_min_scale,
                   &o->token_dropout, &o->beta2};
    const char *fkeys[] = {"val_split",     "lr",
                           "min_lr",        "weight_decay",
                           "warmup_epochs", "label_smoothing",
                           "dropout",       "attention_dropout",
                           "clip_norm",     "rrc_min_scale",
                           "token_dropout", "beta2"};
    int *in[] = {&o->image_size,       &o->patch_size, &o->hidden_size, &o->num_layers,
                 &o->num_heads,        &o->mlp_size,   &o->channels,    &o->freeze_encoder,
                 &o->epochs,           &o->batch,      &o->augment,     &o->aug.crop_pad,
                 &o->aug.resized_crop, &o->aug.flip,   &o->max_len,     &o->ungrouped};
    const char *ikeys[] = {"image_size",   "patch_size", "hidden_size", "num_layers",
                           "num_heads",    "mlp_size",   "channels",    "freeze_encoder",
                           "epochs",       "batch",      "augment",     "crop_pad",
                           "resized_crop", "flip",       "max_len",     "ungrouped"};
    int rc = 0;
    for (size_t i = 0; i < sizeof fl / sizeof fl[0] && rc == 0; i++) {
        const cJSON *it = cJSON_GetObjectItemCaseSensitive(j, fkeys[i]);
        if (!cJSON_IsNumber(it))
            rc = vit_fail(err, "%s: training option '%s' missing", src, fkeys[i]);
        else
            *fl[i] = (float)it->valuedouble;
    }
    for (size_t i = 0; i < sizeof in / sizeof in[0] && rc == 0; i++) {
        const cJSON *it = cJSON_GetObjectItemCaseSensitive(j, ikeys[i]);
        if (!cJSON_IsNumber(it))
            rc = vit_fail(err, "%s: training option '%s' missing", src, ikeys[i]);
        else
            *in[i] = it->valueint;
    }
    const cJSON *seed = cJSON_GetObjectItemCaseSensitive(j, "seed");
    if (rc == 0 && !cJSON_IsString(seed))
        rc = vit_fail(err, "%s: training option 'seed' missing", src);
    if (rc == 0) o->seed = strtoull(seed->valuestring, NULL, 10);
    if (rc == 0 && !o->train_path)
        rc = vit_fail(err, "%s: training option 'train_path' missing", src);
    cJSON_Delete(j);
    return rc;
}

/* ---- classes and data ---- */

/* One label per line, surrounding white space dropped, blank lines skipped. */
static int read_labels_file(const char *path, char ***labels, int *count, vit_error *err) {
    strlist l;
    if (strlist_read(&l, path, 16 << 20, STRLIST_TRIM | STRLIST_SKIP_BLANK, err) != 0) return -1;
    if (l.count == 0) {
        strlist_free(&l);
        return vit_fail(err, "%s: no labels in the file", path);
    }
    char **out = calloc((size_t)l.count, sizeof *out);
    for (int i = 0; out && i < l.count; i++)
        if (!(out[i] = strdup(l.lines[i]))) {
            for (int j = 0; j < i; j++) free(out[j]);
            free(out);
            out = NULL;
        }
    const int n = l.count;
    strlist_free(&l);
    if (!out) return vit_fail(err, "%s: out of memory", path);
    *labels = out;
    *count = n;
    return 0;
}

static void free_strings(char **s, int n) {
    for (int i = 0; s && i < n; i++) free(s[i]);
    free(s);
}

static char **copy_strings(char *const *s, int n) {
    char **out = calloc((size_t)n, sizeof *out);
    for (int i = 0; out && i < n; i++) out[i] = strdup(s[i]);
    return out;
}

static void problem(void *user, const char *message) {
    info(user, "skipped: %s", message);
}

typedef struct {
    char **paths;
    int *labels;
    size_t n;
} file_list;

static void file_list_free(file_list *l) {
    for (size_t i = 0; i < l->n; i++) free(l->paths[i]);
    free(l->paths);
    free(l->labels);
    memset(l, 0, sizeof *l);
}

/* Every image of dir, its folder mapped to r's classes. */
static int list_folder(run *r, const char *dir, file_list *out, vit_error *err) {
    imagefolder f;
    if (imagefolder_open(&f, dir, err) != 0) return -1;
    int by_order = 0;
    if (imagefolder_map_labels(&f, (const char *const *)r->classes, r->num_classes, &by_order,
                               err) != 0) {
        imagefolder_close(&f);
        return -1;
    }
    if (by_order)
        info(r, "%s: no folder name matches a label; folders taken in sorted order as labels 0..%d",
             dir, r->num_classes - 1);
    imagefolder_entry *s = NULL;
    size_t n = 0;
    const int rc = imagefolder_list(&f, &s, &n, problem, r, err);
    imagefolder_close(&f);
    if (rc != 0) return -1;
    if (n == 0)
        return vit_fail(err, "%s: no images (*.png, *.jpg, *.jpeg) in the class folders", dir);
    out->paths = malloc(n * sizeof *out->paths);
    out->labels = malloc(n * sizeof *out->labels);
    if (!out->paths || !out->labels) {
        imagefolder_list_free(s, n);
        return vit_fail(err, "out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        out->paths[i] = s[i].path; /* taken over */
        out->labels[i] = s[i].label;
    }
    free(s);
    out->n = n;
    return 0;
}

/* is_val[i] = 1 for round(val_split · n_c) examples of each class c, chosen by the seed. */
static int hold_out(const run *r, const int *labels, size_t n, int *is_val, vit_error *err) {
    int *order = malloc((n ? n : 1) * sizeof *order);
    if (!order) return vit_fail(err, "out of memory");
    memset(is_val, 0, n * sizeof *is_val);
    for (int c = 0; c < r->num_classes; c++) {
        int k = 0;
        for (size_t i = 0; i < n; i++)
            if (labels[i] == c) order[k++] = (int)i;
        uint64_t st = rng_derive(r->o.seed, RNG_SPLIT, (uint64_t)c);
        rng_shuffle(order, k, &st);
        const int hold = (int)lround(r->o.val_split * k);
        for (int i = 0; i < hold; i++) is_val[order[i]] = 1;
    }
    free(order);
    return 0;
}

/* Moves every image of all into train or val (hold_out's choice). */
static int split_val(const run *r, file_list *all, file_list *train, file_list *val,
                     vit_error *err) {
    const size_t n = all->n;
    int *is_val = malloc(n * sizeof *is_val);
    train->paths = malloc(n * sizeof(char *)), val->paths = malloc(n * sizeof(char *));
    train->labels = malloc(n * sizeof(int)), val->labels = malloc(n * sizeof(int));
    if (!is_val || !train->paths || !val->paths || !train->labels || !val->labels) {
        free(is_val);
        return vit_fail(err, "out of memory");
    }
    if (hold_out(r, all->labels, n, is_val, err) != 0) return free(is_val), -1;
    for (size_t i = 0; i < n; i++) {
        file_list *to = is_val[i] ? val : train;
        to->paths[to->n] = all->paths[i];
        to->labels[to->n++] = all->labels[i];
    }
    free(all->paths), free(all->labels), free(is_val);
    memset(all, 0, sizeof *all);
    return 0;
}

static void load_progress(void *user, size_t done, size_t total) {
    const run *r = user;
    if (r->hooks && r->hooks->load_progress) r->hooks->load_progress(r->hooks->user, done, total);
}

static int load_images(run *r, vit_error *err) {
    file_list all = {0}, train = {0}, val = {0};
    int rc = list_folder(r, r->o.train_path, &all, err);
    if (rc == 0 && r->o.val_path) {
        train = all;
        memset(&all, 0, sizeof all);
        rc = list_folder(r, r->o.val_path, &val, err);
    } else if (rc == 0) {
        rc = split_val(r, &all, &train, &val, err);
    }
    if (rc == 0 && train.n == 0) rc = vit_fail(err, "%s: no training images", r->o.train_path);
    if (rc == 0) {
        info(r, "decoding %zu training and %zu validation images", train.n, val.n);
        rc = image_set_load(&r->train, &r->pp, train.paths, train.labels, train.n, load_progress, r,
                            err);
    }
    if (rc == 0 && val.n)
        rc = image_set_load(&r->val, &r->pp, val.paths, val.labels, val.n, load_progress, r, err);
    file_list_free(&all), file_list_free(&train), file_list_free(&val);
    r->n_train = r->train.count;
    r->n_val = r->val.count;
    return rc;
}

/* The training TSV tokenized, and the validation rows: all of val_path, or held out of it. */
static int load_texts(run *r, vit_error *err) {
    const char *const *labels = (const char *const *)r->classes;
    if (text_set_load(&r->train_text, r->o.train_path, r->tok, r->max_len, labels, r->num_classes,
                      err) != 0)
        return -1;
    if (r->o.val_path && text_set_load(&r->val_text, r->o.val_path, r->tok, r->max_len, labels,
                                       r->num_classes, err) != 0)
        return -1;
    /* without a validation file, the rows hold_out picks are validation rows of train_text */
    r->val_src = r->o.val_path ? &r->val_text : &r->train_text;
    const int n = r->train_text.count, nv = r->o.val_path ? r->val_text.count : 0;
    int *is_val = calloc((size_t)n, sizeof *is_val);
    r->train_rows = malloc((size_t)n * sizeof(int));
    r->val_rows = malloc((size_t)(n + nv) * sizeof(int));
    int rc = is_val && r->train_rows && r->val_rows ? 0 : vit_fail(err, "out of memory");
    if (rc == 0 && !r->o.val_path) rc = hold_out(r, r->train_text.labels, (size_t)n, is_val, err);
    for (int i = 0; rc == 0 && i < n; i++) {
        if (is_val[i])
            r->val_rows[r->n_val++] = i;
        else
            r->train_rows[r->n_train++] = i;
    }
    for (int i = 0; rc == 0 && i < nv; i++) r->val_rows[r->n_val++] = i;
    free(is_val);
    if (rc == 0 && r->n_train == 0)
        rc = vit_fail(err, "%s: no training sentences", r->o.train_path);
    if (rc == 0)
        info(r, "%d training and %d validation sentences, at most %d tokens (longest %d)",
             r->n_train, r->n_val, r->max_len, r->train_text.longest);
    return rc;
}

/* ---- the model ---- */

/* PyTorch trunc_normal_(std, a = -2std, b = 2std) by rejection. */
static float trunc_normal(uint64_t *st, float std) {
    for (;;) {
        const double z = rng_normal(st);
        if (fabs(z) <= 2.0) return (float)(z * std);
    }
}

/* 2D sine-cosine position embeddings (MAE, "Better plain ViT baselines"): a quarter of the
 * dimensions each for sin/cos of the row and of the column at frequencies 1/10000^(k/(D/4)).
 * Row 0 (CLS) stays zero. Nearby patches start with similar embeddings, so attention can be
 * local from the first step instead of learning positions from noise. D % 4 == 0. */
static void sincos_pos_embed(float *pos, int n, int D) {
    const int q = D / 4;
    memset(pos, 0, sizeof(float) * (size_t)D);
    for (int y = 0; y < n; y++)
        for (int x = 0; x < n; x++) {
            float *row = pos + (size_t)(1 + y * n + x) * D;
            for (int k = 0; k < q; k++) {
                const double omega = 1.0 / pow(10000.0, (double)k / q);
                row[k] = (float)sin(y * omega);
                row[q + k] = (float)cos(y * omega);
                row[2 * q + k] = (float)sin(x * omega);
                row[3 * q + k] = (float)cos(x * omega);
            }
        }
}

/* Normal(0, std). */
static float normal(uint64_t *st, float std) {
    return (float)(rng_normal(st) * std);
}

static int is_bias(const char *name) {
    const size_t len = strlen(name);
    return len >= 4 && strcmp(name + len - 4, "bias") == 0;
}

/* A new BERT's weights as HF's BertPreTrainedModel._init_weights: matrices and embedding tables
 * normal(0, 0.02) with the padding row zero, biases 0, LayerNorm weights 1. Only entries whose
 * name starts with prefix. */
static void init_bert_params(model *m, const char *prefix, uint64_t seed) {
    uint64_t st = rng_derive(seed, RNG_INIT, 0);
    const int D = m->cfg.hidden_size, pad = m->cfg.pad_token_id;
    for (int i = 0; i < m->num_entries; i++) {
        const param_entry *e = &m->entries[i];
        if (strncmp(e->name, prefix, strlen(prefix)) != 0) continue;
        float *p = m->params + e->offset;
        const int norm = strstr(e->name, "LayerNorm") != NULL;
        for (size_t j = 0; j < e->numel; j++)
            p[j] = is_bias(e->name) ? 0.0f : norm ? 1.0f : normal(&st, 0.02f);
        if (p == m->word_emb && pad >= 0 && pad < m->cfg.vocab_size)
            memset(p + (size_t)pad * D, 0, sizeof(float) * (size_t)D);
    }
}

/* A new ViT's weights. HF's _init_weights (everything truncated normal, std 0.02) learns slowly
 * from scratch on small data; big_vision's plain-ViT recipe starts much faster, so: patch
 * embedding LeCun normal (std 1/sqrt(C·P·P)), other matrices Xavier uniform, position
 * embeddings 2D sine-cosine (learned from there), CLS token and classifier zero, biases 0,
 * LayerNorm weights 1. Only entries whose name starts with prefix (a fresh head: "classifier."). */
static void init_params(model *m, const char *prefix, uint64_t seed) {
    if (m->cfg.kind == MODEL_BERT) {
        init_bert_params(m, prefix, seed);
        return;
    }
    uint64_t st = rng_derive(seed, RNG_INIT, 0);
    const int D = m->cfg.hidden_size, n = m->cfg.image_size / m->cfg.patch_size;
    for (int i = 0; i < m->num_entries; i++) {
        const param_entry *e = &m->entries[i];
        if (e->absent || strncmp(e->name, prefix, strlen(prefix)) != 0) continue;
        float *p = m->params + e->offset;
        const int bias = is_bias(e->name);
        if (strstr(e->name, "position_embeddings") && D % 4 == 0) {
            sincos_pos_embed(p, n, D);
        } else if (strstr(e->name, "patch_embeddings") && !bias) {
            const int fan_in = (int)(e->numel / (size_t)D);
            for (size_t j = 0; j < e->numel; j++) p[j] = trunc_normal(&st, 1.0f / sqrtf(fan_in));
        } else if (e->ndim == 2 && strncmp(e->name, "classifier.", 11) != 0) {
            const double bound = sqrt(6.0 / (double)(e->shape[0] + e->shape[1]));
            for (size_t j = 0; j < e->numel; j++)
                p[j] = (float)((2.0 * rng_uniform(&st) - 1.0) * bound);
        } else if (strstr(e->name, "position_embeddings")) {
            for (size_t j = 0; j < e->numel; j++) p[j] = trunc_normal(&st, 0.02f);
        } else {
            const int norm = strstr(e->name, "layernorm") != NULL && !bias;
            for (size_t j = 0; j < e->numel; j++) p[j] = norm ? 1.0f : 0.0f;
        }
    }
}

/* cfg through config.json's parser (it checks the shape and names a bad field), then a model
 * with new weights. Takes classes. */
static int create_new(run *r, model_config *cfg, char **classes, int n, vit_error *err) {
    char *json = model_config_json(cfg, 0, 0);
    free_strings(classes, n); /* the parsed config has its own copies */
    if (!json) return vit_fail(err, "out of memory");
    model_config parsed;
    int rc = model_config_parse(json, "the model options", &parsed, err);
    free(json);
    if (rc == 0) rc = model_create(&r->m, &parsed, err);
    if (rc != 0) return -1;
    init_params(&r->m, "", r->o.seed);
    return 0;
}

/* A new BERT: the vocabulary (copied into out_dir with a tokenizer config) sizes its embeddings. */
static int new_text_model(run *r, char **classes, int n, vit_error *err) {
    const train_options *o = &r->o;
    const int max_pos = o->max_len ? o->max_len : 128;
    if (tokenizer_files_save(o->out_dir, NULL, o->vocab_file, max_pos, err) != 0 ||
        tokenizer_load(o->out_dir, &r->tok, err) != 0)
        return free_strings(classes, n), -1;
    model_config cfg = {.kind = MODEL_BERT,
                        .hidden_size = o->hidden_size,
                        .num_layers = o->num_layers,
                        .num_heads = o->num_heads,
                        .intermediate_size = o->mlp_size,
                        .act = ACT_GELU,
                        .layer_norm_eps = 1e-12f, /* BertConfig's */
                        .vocab_size = tokenizer_vocab_size(r->tok),
                        .max_position_embeddings = max_pos,
                        .type_vocab_size = 2,
                        .pad_token_id =
                            tokenizer_pad_id(r->tok) >= 0 ? tokenizer_pad_id(r->tok) : 0,
                        .num_labels = n,
                        .labels = classes};
    return create_new(r, &cfg, classes, n, err);
}

static int new_model(run *r, char **classes, int n, vit_error *err) {
    const train_options *o = &r->o;
    model_config cfg = {.kind = MODEL_VIT,
                        .hidden_size = o->hidden_size,
                        .num_layers = o->num_layers,
                        .num_heads = o->num_heads,
                        .intermediate_size = o->mlp_size,
                        .act = ACT_GELU,
                        .layer_norm_eps = 1e-6f, /* timm's ViT value: safe for near-flat rows */
                        .image_size = o->image_size,
                        .patch_size = o->patch_size,
                        .num_channels = o->channels,
                        .qkv_bias = 1,
                        .num_labels = n,
                        .labels = classes};
    if (create_new(r, &cfg, classes, n, err) != 0) return -1;
    r->pp = (preprocess_config){.do_resize = 1,
                                .resize_height = o->image_size,
                                .resize_width = o->image_size,
                                .resample = RESAMPLE_BILINEAR,
                                .do_rescale = 1,
                                .rescale_factor = 1.0 / 255.0,
                                .do_normalize = 1,
                                .mean = {0.5f, 0.5f, 0.5f},
                                .std = {0.5f, 0.5f, 0.5f},
                                .channels = o->channels};
    return 0;
}

/* 1 when the data's classes are the model's labels, in order (ImageFolder matching rules). */
static int same_labels(const model *m, char *const *classes, int n) {
    if (m->cfg.num_labels != n) return 0;
    int *label_of = malloc(sizeof(int) * (size_t)n), by_order = 0;
    vit_error ignored;
    int same = label_of && imagefolder_match_labels((const char *const *)classes, n,
                                                    (const char *const *)m->cfg.labels, n, label_of,
                                                    &by_order, &ignored) == 0;
    for (int i = 0; same && i < n; i++) same = label_of[i] == i && !by_order;
    free(label_of);
    return same;
}

/* A copy of `from` with a classifier for `classes` (initialised as a new one). */
static int replace_head(run *r, model *from, char **classes, int n, vit_error *err) {
    model_config cfg = from->cfg;
    cfg.labels = classes;
    cfg.num_labels = n;
    if (model_create(&r->m, &cfg, err) != 0) return -1;
    for (int i = 0; i < r->m.num_entries; i++) {
        const param_entry *e = &r->m.entries[i];
        const param_entry *src = model_find_param(from, e->name);
        if (strncmp(e->name, "classifier.", 11) != 0 && src && src->numel == e->numel)
            memcpy(r->m.params + e->offset, from->params + src->offset, e->numel * sizeof(float));
    }
    init_params(&r->m, "classifier.", r->o.seed);
    return 0;
}

/* The classes of a new run: labels_file's lines; else for images the train folders' names, for
 * text the labels of the model fine-tuned (from, may be NULL) or of the TSV. */
static int data_classes(const run *r, const model *from, char ***classes, int *n, vit_error *err) {
    if (r->o.labels_file) return read_labels_file(r->o.labels_file, classes, n, err);
    if (r->text && from) {
        *classes = copy_strings(from->cfg.labels, from->cfg.num_labels);
        *n = from->cfg.num_labels;
        return *classes ? 0 : vit_fail(err, "out of memory");
    }
    if (r->text) return text_tsv_classes(r->o.train_path, classes, n, err);
    imagefolder tf;
    if (imagefolder_open(&tf, r->o.train_path, err) != 0) return -1;
    *classes = copy_strings(tf.folders, tf.num_folders);
    *n = tf.num_folders;
    imagefolder_close(&tf);
    return *classes ? 0 : vit_fail(err, "out of memory");
}

/* Fine-tuning: init_dir's model, its preprocessing or tokenizer (copied into out_dir). */
static int init_model(run *r, vit_error *err) {
    model from;
    if (model_load(&from, r->o.init_dir, err) != 0) return -1;
    if (from.cfg.kind != (r->text ? MODEL_BERT : MODEL_VIT)) {
        model_free(&from);
        return vit_fail(err, "%s: not a %s model (the training data is %s)", r->o.init_dir,
                        r->text ? "BERT" : "ViT", r->text ? "text" : "images");
    }
    char **classes = NULL;
    int n = 0;
    if (data_classes(r, &from, &classes, &n, err) != 0) return model_free(&from), -1;
    int rc;
    if (same_labels(&from, classes, n)) {
        r->m = from; /* the head fits: keep it, and the model's label strings */
        free_strings(classes, n);
        info(r, "fine-tuning %s with its classifier (%d labels)", r->o.init_dir, n);
        rc = 0;
    } else {
        info(r, "fine-tuning %s with a new classifier: %d labels (it had %d)", r->o.init_dir, n,
             from.cfg.num_labels);
        rc = replace_head(r, &from, classes, n, err); /* takes classes */
        model_free(&from);
    }
    if (rc != 0) return -1;
    if (!r->text) return preprocess_config_load(r->o.init_dir, &r->pp, err);
    if (tokenizer_files_save(r->o.out_dir, r->o.init_dir, NULL, 0, err) != 0) return -1;
    return tokenizer_load(r->o.out_dir, &r->tok, err);
}

/* The model and its preprocessing: new, fine-tuned, or (resume) as last saved in out_dir. */
static int setup_model(run *r, int resume, vit_error *err) {
    if (resume) {
        if (model_load(&r->m, r->o.out_dir, err) != 0) return -1;
        r->text = r->m.cfg.kind == MODEL_BERT;
        if (r->text ? tokenizer_load(r->o.out_dir, &r->tok, err)
                    : preprocess_config_load(r->o.out_dir, &r->pp, err))
            return -1;
    } else if (r->o.init_dir) {
        if (init_model(r, err) != 0) return -1;
    } else {
        char **classes = NULL;
        int n = 0;
        if (data_classes(r, NULL, &classes, &n, err) != 0) return -1;
        if ((r->text ? new_text_model(r, classes, n, err) : new_model(r, classes, n, err)) != 0)
            return -1;
    }
    r->classes = r->m.cfg.labels;
    r->num_classes = r->m.cfg.num_labels;
    if (r->text) {
        const int limit = r->o.max_len ? r->o.max_len : tokenizer_max_len(r->tok);
        r->max_len =
            limit < r->m.cfg.max_position_embeddings ? limit : r->m.cfg.max_position_embeddings;
        if (r->max_len < 2)
            return vit_fail(err, "--max-len %d: a sentence needs at least 2 tokens", r->max_len);
        if (tokenizer_vocab_size(r->tok) > r->m.cfg.vocab_size)
            return vit_fail(err, "%s: the vocabulary (%d) is larger than the model's (%d)",
                            r->o.out_dir, tokenizer_vocab_size(r->tok), r->m.cfg.vocab_size);
    }
    return 0;
}

/* ---- checkpoints ---- */

typedef struct {
    st_entry *entries;
    char (*names)[128];
    int count;
} state_tensors;

/* param.NAME, adam_m.NAME, adam_v.NAME for every live tensor. */
static int state_tensors_make(const run *r, state_tensors *s, vit_error *err) {
    const int k = r->m.num_entries;
    s->entries = calloc((size_t)3 * k, sizeof *s->entries);
    s->names = calloc((size_t)3 * k, sizeof *s->names);
    if (!s->entries || !s->names) return vit_fail(err, "out of memory");
    const float *blocks[] = {r->m.params, r->opt.m, r->opt.v};
    const char *prefixes[] = {"param.", "adam_m.", "adam_v."};
    s->count = 0;
    for (int b = 0; b < 3; b++) {
        const int n =
            model_st_entries(&r->m, blocks[b], s->entries + s->count, s->names + s->count);
        for (int i = s->count; i < s->count + n; i++) {
            /* model_st_entries wrote the file names; prefix them with the block's */
            char name[128];
            snprintf(name, sizeof name, "%s%s", prefixes[b], s->names[i]);
            memcpy(s->names[i], name, sizeof name);
            s->entries[i].name = s->names[i];
        }
        s->count += n;
    }
    return 0;
}

static void state_tensors_free(state_tensors *s) {
    free(s->entries);
    free(s->names);
}

static int save_state(const run *r, double epoch_seconds, vit_error *err) {
    state_tensors s = {0};
    if (state_tensors_make(r, &s, err) != 0) return state_tensors_free(&s), -1;
    char *opts = options_json(&r->o);
    char step[32], adam_step[32], rng[32], loss[40], correct[32], seen[32], secs[40];
    snprintf(step, sizeof step, "%lld", (long long)r->step);
    snprintf(adam_step, sizeof adam_step, "%lld", (long long)r->opt.step);
    snprintf(rng, sizeof rng, "%llu", (unsigned long long)r->drop_rng);
    snprintf(loss, sizeof loss, "%.17g", r->epoch_loss_sum);
    snprintf(correct, sizeof correct, "%lld", (long long)r->epoch_correct);
    snprintf(seen, sizeof seen, "%lld", (long long)r->epoch_seen);
    snprintf(secs, sizeof secs, "%.17g", epoch_seconds);
    const char *keys[] = {"format",        "options",     "step",
                          "adam_step",     "dropout_rng", "epoch_loss_sum",
                          "epoch_correct", "epoch_seen",  "epoch_seconds"};
    const char *values[] = {STATE_FORMAT, opts ? opts : "", step, adam_step, rng,
                            loss,         correct,          seen, secs};
    char path[4096];
    path_in(path, sizeof path, r->o.out_dir, TRAIN_STATE_FILE);
    const int rc = opts ? st_write_f32_meta(path, s.entries, s.count, keys, values, 9, err)
                        : vit_fail(err, "out of memory");
    free(opts);
    state_tensors_free(&s);
    return rc;
}

/* Every file of the checkpoint: the model first, then the state that refers to it. */
static int save_checkpoint(const run *r, double epoch_seconds, vit_error *err) {
    if (model_save(r->o.out_dir, &r->m, &r->pp, r->o.dropout, r->o.attention_dropout, err) != 0)
        return -1;
    return save_state(r, epoch_seconds, err);
}

static int meta_i64(const st_file *f, const char *key, int64_t *out, vit_error *err) {
    char buf[64];
    if (st_metadata(f, key, buf, sizeof buf, err) != 0) return -1;
    *out = strtoll(buf, NULL, 10);
    return 0;
}

/* Opens out_dir's state and reads its options (before anything else is set up). */
static int open_state(run *r, st_file *f, vit_error *err) {
    char path[4096];
    path_in(path, sizeof path, r->o.out_dir, TRAIN_STATE_FILE);
    if (access(path, F_OK) != 0)
        return vit_fail(err, "%s: no training state to resume (the run finished, or never began)",
                        path);
    if (st_open(path, f, err) != 0) return -1;
    char format[64];
    if (st_metadata(f, "format", format, sizeof format, err) != 0 ||
        strcmp(format, STATE_FORMAT) != 0) {
        st_close(f);
        return vit_fail(err, "%s: not a vit training state", path);
    }
    size_t cap = 1 << 16;
    char *opts = malloc(cap);
    int rc = opts ? st_metadata(f, "options", opts, cap, err) : vit_fail(err, "out of memory");
    if (rc == 0) rc = options_parse(r, opts, path, err);
    free(opts);
    if (rc != 0) st_close(f);
    return rc;
}

/* Weights, moments and counters from the state (the model and optimizer exist by now). */
static int load_state(run *r, const st_file *f, vit_error *err) {
    float *blocks[] = {r->m.params, r->opt.m, r->opt.v};
    const char *prefixes[] = {"param.", "adam_m.", "adam_v."};
    for (int b = 0; b < 3; b++)
        for (int i = 0; i < r->m.num_entries; i++) {
            const param_entry *e = &r->m.entries[i];
            if (e->absent) continue;
            char name[160];
            snprintf(name, sizeof name, "%s%s%s", prefixes[b],
                     e->prefixed ? model_prefix(&r->m) : "", e->name);
            const st_tensor *t = st_find(f, name);
            if (!t || (size_t)t->numel != e->numel)
                return vit_fail(err, "%s: tensor '%s' missing or of the wrong size", f->path, name);
            if (st_to_f32(f, t, blocks[b] + e->offset, err) != 0) return -1;
        }
    int64_t correct, seen;
    char buf[64];
    if (meta_i64(f, "step", &r->step, err) || meta_i64(f, "adam_step", &r->opt.step, err) ||
        meta_i64(f, "epoch_correct", &correct, err) || meta_i64(f, "epoch_seen", &seen, err) ||
        st_metadata(f, "dropout_rng", buf, sizeof buf, err))
        return -1;
    r->drop_rng = strtoull(buf, NULL, 10);
    r->epoch_correct = correct;
    r->epoch_seen = seen;
    if (st_metadata(f, "epoch_loss_sum", buf, sizeof buf, err) != 0) return -1;
    r->epoch_loss_sum = strtod(buf, NULL);
    if (st_metadata(f, "epoch_seconds", buf, sizeof buf, err) != 0) return -1;
    r->epoch_seconds_before = strtod(buf, NULL);
    if (r->step > r->total_steps)
        return vit_fail(err, "%s: step %lld beyond the run's %lld", f->path, (long long)r->step,
                        (long long)r->total_steps);
    return 0;
}

/* ---- the loop ---- */

/* The forward/backward machinery and its batch buffers: a vit_trainer on pixels or a
 * bert_trainer on token ids. */
static int setup_model_trainer(run *r, vit_error *err) {
    const train_options *o = &r->o;
    if (r->text) {
        r->ids = malloc((size_t)r->B * r->max_len * sizeof *r->ids);
        r->mask = malloc((size_t)r->B * r->max_len);
        if (!r->ids || !r->mask) return vit_fail(err, "out of memory");
        r->bt = bert_trainer_create(&r->m, r->B, r->max_len, err);
        if (!r->bt) return -1;
        bert_trainer_freeze_encoder(r->bt, o->freeze_encoder);
        bert_trainer_set_attention_dropout(r->bt, o->attention_dropout);
        return 0;
    }
    const size_t per = (size_t)r->train.C * r->train.S * r->train.S;
    r->pixels = malloc((size_t)r->B * per * sizeof(float));
    r->lut = malloc((size_t)r->train.C * 256 * sizeof(float));
    if (!r->pixels || !r->lut) return vit_fail(err, "out of memory");
    if (pixel_lut(&r->pp, r->lut, err) != 0) return -1;
    r->t = vit_trainer_create(&r->m, r->B, err);
    if (!r->t) return -1;
    vit_trainer_freeze_encoder(r->t, o->freeze_encoder);
    vit_trainer_set_attention_dropout(r->t, o->attention_dropout);
    return 0;
}

static int setup_training(run *r, vit_error *err) {
    const train_options *o = &r->o;
    r->B = o->batch < r->n_train ? o->batch : r->n_train;
    r->steps_per_epoch = r->n_train / r->B;
    r->total_steps = r->steps_per_epoch * o->epochs;
    r->sched = (lr_schedule){.lr = o->lr,
                             .min_lr = o->min_lr,
                             .warmup = (int64_t)lround(o->warmup_epochs * r->steps_per_epoch),
                             .total = r->total_steps};
    r->logits = malloc((size_t)r->B * r->num_classes * sizeof(float));
    r->probs = malloc((size_t)r->B * r->num_classes * sizeof(float));
    r->perm = malloc((size_t)r->n_train * sizeof(int));
    r->scratch = malloc((size_t)(r->n_train + r->steps_per_epoch) * sizeof(int));
    r->batch_labels = malloc((size_t)r->B * sizeof(int));
    r->eval_idx = malloc((size_t)r->B * sizeof(int));
    if (!r->logits || !r->probs || !r->perm || !r->scratch || !r->batch_labels || !r->eval_idx)
        return vit_fail(err, "out of memory");
    if (setup_model_trainer(r, err) != 0) return -1;
    vit_threads_init(o->threads); /* the trainers' create picked the default */
    const adamw_hparams hp = {.lr = o->lr, .weight_decay = o->weight_decay, .beta2 = o->beta2};
    if (adamw_init(&r->opt, &r->m, &hp, err) != 0) return -1;
    adamw_freeze_encoder(&r->opt, &r->m, o->freeze_encoder);
    r->drop_rng = rng_derive(o->seed, RNG_DROPOUT, 0);
    return 0;
}

/* Eval-mode logits of validation examples i0 .. i0+n-1 into r->logits, their classes into
 * r->batch_labels. */
static int val_logits(run *r, int i0, int n, vit_error *err) {
    if (r->text) {
        const int T =
            text_set_batch(r->val_src, r->val_rows + i0, n, r->ids, r->mask, r->batch_labels);
        return bert_train_logits(r->bt, r->ids, r->mask, n, T, r->logits, err);
    }
    for (int b = 0; b < n; b++) r->eval_idx[b] = i0 + b;
    memcpy(r->batch_labels, r->val.labels + i0, sizeof(int) * (size_t)n);
    image_set_batch(&r->val, r->eval_idx, n, r->lut, NULL, 0, r->pixels);
    return vit_train_logits(r->t, r->pixels, n, r->logits, err);
}

/* Mean cross-entropy (no smoothing) and top-1 of the validation examples, eval mode. */
static int evaluate(run *r, double *loss, double *top1, vit_error *err) {
    double sum = 0.0;
    int64_t correct = 0;
    for (int i0 = 0; i0 < r->n_val; i0 += r->B) {
        const int n = r->n_val - i0 < r->B ? r->n_val - i0 : r->B;
        if (val_logits(r, i0, n, err) != 0) return -1;
        sum +=
            crossentropy_forward(r->probs, r->logits, r->batch_labels, n, r->num_classes, 0.0f) * n;
        for (int b = 0; b < n; b++) {
            const float *z = r->logits + (size_t)b * r->num_classes;
            int best = 0;
            for (int j = 1; j < r->num_classes; j++)
                if (z[j] > z[best]) best = j;
            correct += best == r->batch_labels[b];
        }
    }
    *loss = sum / r->n_val;
    *top1 = (double)correct / r->n_val;
    return 0;
}

static int text_length(const run *r, int k) {
    const int row = r->train_rows[k];
    return (int)(r->train_text.offset[row + 1] - r->train_text.offset[row]);
}

/* Longest first, ties in index order (qsort_r comparator; context: the run). */
static int by_length(const void *a, const void *b, void *context) {
    const run *r = context;
    const int la = text_length(r, *(const int *)a), lb = text_length(r, *(const int *)b);
    return la != lb ? lb - la : *(const int *)a - *(const int *)b;
}

/* HF's group_by_length: batches padded to their longest sentence waste most of their work on
 * padding when lengths are mixed, so the shuffled order is cut into mega-batches of LENGTH_GROUP
 * batches, each sorted by length, and the epoch's batches are then shuffled (a batch holds
 * sentences of similar length, yet which batch comes when stays random). */
static void group_by_length(run *r, uint64_t *st) {
    const int B = r->B, group = LENGTH_GROUP * B, used = (int)r->steps_per_epoch * B;
    for (int g = 0; g < used; g += group)
        qsort_r(r->perm + g, (size_t)((used - g < group) ? used - g : group), sizeof(int),
                by_length, r);
    int *order = r->scratch; /* batch order, then the reordered perm behind it */
    const int nb = (int)r->steps_per_epoch;
    for (int k = 0; k < nb; k++) order[k] = k;
    rng_shuffle(order, nb, st);
    int *out = r->scratch + nb;
    for (int k = 0; k < nb; k++)
        memcpy(out + (size_t)k * B, r->perm + (size_t)order[k] * B, sizeof(int) * (size_t)B);
    memcpy(r->perm, out, sizeof(int) * (size_t)used);
}

static void epoch_perm(run *r, int64_t epoch) {
    for (int i = 0; i < r->n_train; i++) r->perm[i] = i;
    uint64_t st = rng_derive(r->o.seed, RNG_SHUFFLE, (uint64_t)epoch);
    rng_shuffle(r->perm, r->n_train, &st);
    if (r->text && !r->o.ungrouped) group_by_length(r, &st);
}

/* Word dropout: each word piece of the batch ids [B, T] (not [CLS], [SEP] or padding) becomes
 * [UNK] with probability token_dropout, drawn from the step's augmentation stream. The model
 * learns not to lean on any single word, and [UNK] is what it meets for unknown words later. */
static void drop_tokens(run *r, int T) {
    uint64_t st = rng_derive(r->o.seed, RNG_AUGMENT, (uint64_t)r->step);
    const int unk = tokenizer_unk_id(r->tok);
    for (int b = 0; b < r->B; b++) {
        int len = 0;
        while (len < T && r->mask[(size_t)b * T + len]) len++;
        for (int t = 1; t < len - 1; t++)
            if (rng_uniform(&st) < r->o.token_dropout) r->ids[(size_t)b * T + t] = unk;
    }
}

/* Forward and backward of training batch idx[0..B) (indices into the training examples):
 * gradients in the trainer's block. */
static int forward_backward(run *r, const int *idx, float *loss, int *correct, vit_error *err) {
    const train_options *o = &r->o;
    if (r->text) {
        for (int b = 0; b < r->B; b++) r->eval_idx[b] = r->train_rows[idx[b]];
        const int T =
            text_set_batch(&r->train_text, r->eval_idx, r->B, r->ids, r->mask, r->batch_labels);
        if (o->token_dropout > 0) drop_tokens(r, T);
        bert_trainer_zero_grads(r->bt);
        return bert_train_step(r->bt, r->ids, r->mask, r->batch_labels, r->B, T, o->label_smoothing,
                               o->dropout, &r->drop_rng, loss, correct, err);
    }
    for (int b = 0; b < r->B; b++) r->batch_labels[b] = r->train.labels[idx[b]];
    image_set_batch(&r->train, idx, r->B, r->lut, o->augment ? &o->aug : NULL,
                    rng_derive(o->seed, RNG_AUGMENT, (uint64_t)r->step), r->pixels);
    vit_trainer_zero_grads(r->t);
    return vit_train_step(r->t, r->pixels, r->batch_labels, r->B, o->label_smoothing, o->dropout,
                          &r->drop_rng, loss, correct, err);
}

static int train_step(run *r, vit_error *err) {
    const int64_t k = r->step % r->steps_per_epoch;
    float loss;
    int correct;
    if (forward_backward(r, r->perm + k * r->B, &loss, &correct, err) != 0) return -1;
    if (!isfinite(loss))
        return vit_fail(err, "the loss diverged (%g) at step %lld: try a lower --lr", loss,
                        (long long)r->step + 1);
    float *grads = r->text ? bert_trainer_grads(r->bt) : vit_trainer_grads(r->t);
    grad_clip_global_norm(&r->m, grads, &r->opt, r->o.clip_norm);
    adamw_step(&r->opt, &r->m, grads, lr_at(&r->sched, r->step));
    r->step++;
    r->epoch_loss_sum += (double)loss * r->B;
    r->epoch_correct += correct;
    r->epoch_seen += r->B;
    return 0;
}

static int append_log(const run *r, const train_epoch *e, vit_error *err) {
    char path[4096];
    path_in(path, sizeof path, r->o.out_dir, TRAIN_LOG_FILE);
    FILE *f = fopen(path, "a");
    if (!f) return vit_fail(err, "%s: %s", path, strerror(errno));
    fprintf(f,
            "{\"epoch\": %d, \"step\": %lld, \"lr\": %.6g, \"train_loss\": %.6f, \"train_top1\": "
            "%.6f, ",
            e->epoch, (long long)e->step, e->lr, e->train_loss, e->train_top1);
    if (e->val_top1 >= 0)
        fprintf(f, "\"val_loss\": %.6f, \"val_top1\": %.6f, ", e->val_loss, e->val_top1);
    else
        fprintf(f, "\"val_loss\": null, \"val_top1\": null, ");
    fprintf(f, "\"seconds\": %.3f, \"%s_per_s\": %.1f}\n", e->seconds, e->unit, e->images_per_s);
    if (fclose(f) != 0) return vit_fail(err, "%s: write failed", path);
    return 0;
}

static int end_epoch(run *r, double epoch_seconds, vit_error *err) {
    train_epoch e = {.epoch = (int)(r->step / r->steps_per_epoch),
                     .epochs = r->o.epochs,
                     .step = r->step,
                     .lr = lr_at(&r->sched, r->step - 1),
                     .train_loss = r->epoch_loss_sum / (double)r->epoch_seen,
                     .train_top1 = (double)r->epoch_correct / (double)r->epoch_seen,
                     .val_loss = -1,
                     .val_top1 = -1,
                     .images_per_s = epoch_seconds > 0 ? r->epoch_seen / epoch_seconds : 0,
                     .unit = r->text ? "sentences" : "images"};
    const double t0 = clock_seconds();
    if (r->n_val && evaluate(r, &e.val_loss, &e.val_top1, err) != 0) return -1;
    e.seconds = epoch_seconds + (clock_seconds() - t0);
    r->epoch_loss_sum = 0, r->epoch_correct = r->epoch_seen = 0, r->epoch_seconds_before = 0;
    if (save_checkpoint(r, 0.0, err) != 0 || append_log(r, &e, err) != 0) return -1;
    if (r->hooks && r->hooks->epoch_done) r->hooks->epoch_done(r->hooks->user, &e);
    return 0;
}

static int stop_requested(const run *r) {
    const train_hooks *h = r->hooks;
    return h && ((h->stop && *h->stop) || (h->stop_at_step > 0 && r->step >= h->stop_at_step));
}

static int loop(run *r, vit_error *err) {
    const double start = clock_seconds();
    const int64_t first = r->step;
    double epoch_start = start - r->epoch_seconds_before;
    while (r->step < r->total_steps) {
        const int64_t epoch = r->step / r->steps_per_epoch;
        if (r->step % r->steps_per_epoch == 0 || r->step == first) epoch_perm(r, epoch);
        if (train_step(r, err) != 0) return -1;
        if (r->hooks && r->hooks->progress) {
            const double spent = clock_seconds() - start;
            const double per_step = spent / (double)(r->step - first);
            train_progress p = {.epoch = (int)epoch + 1,
                                .epochs = r->o.epochs,
                                .step = r->step,
                                .steps_per_epoch = r->steps_per_epoch,
                                .total_steps = r->total_steps,
                                .lr = lr_at(&r->sched, r->step - 1),
                                .loss = r->epoch_loss_sum / (double)r->epoch_seen,
                                .images_per_s = (double)(r->step - first) * r->B / spent,
                                .eta_s = per_step * (double)(r->total_steps - r->step),
                                .unit = r->text ? "sentences" : "images"};
            r->hooks->progress(r->hooks->user, &p);
        }
        if (r->step % r->steps_per_epoch == 0) {
            if (end_epoch(r, clock_seconds() - epoch_start, err) != 0) return -1;
            epoch_start = clock_seconds();
        }
        if (r->step < r->total_steps && stop_requested(r)) {
            if (save_checkpoint(r, clock_seconds() - epoch_start, err) != 0) return -1;
            return 1;
        }
    }
    return 0;
}

static size_t live_params(const model *m) {
    size_t n = 0;
    for (int i = 0; i < m->num_entries; i++) n += m->entries[i].absent ? 0 : m->entries[i].numel;
    return n;
}

static int check_options(const train_options *o, vit_error *err) {
    if (!o->train_path) return vit_fail(err, "no training data");
    if (!o->out_dir) return vit_fail(err, "no output folder");
    if (o->epochs < 1 || o->batch < 1) return vit_fail(err, "epochs and batch must be at least 1");
    if (!(o->val_split >= 0 && o->val_split < 1))
        return vit_fail(err, "validation split %g outside [0, 1)", o->val_split);
    if (!(o->lr > 0) || !(o->min_lr >= 0) || !(o->weight_decay >= 0) || !(o->warmup_epochs >= 0) ||
        !(o->clip_norm >= 0))
        return vit_fail(err, "learning rate, weight decay, warm-up and clipping must be >= 0");
    if (!(o->label_smoothing >= 0 && o->label_smoothing < 1))
        return vit_fail(err, "label smoothing %g outside [0, 1)", o->label_smoothing);
    if (!(o->dropout >= 0 && o->dropout < 1) ||
        !(o->attention_dropout >= 0 && o->attention_dropout < 1))
        return vit_fail(err, "dropout outside [0, 1)");
    if (!(o->token_dropout >= 0 && o->token_dropout < 1))
        return vit_fail(err, "token dropout %g outside [0, 1)", o->token_dropout);
    if (!(o->beta2 >= 0 && o->beta2 < 1)) return vit_fail(err, "beta2 %g outside [0, 1)", o->beta2);
    if (o->max_len < 0 || o->max_len == 1) return vit_fail(err, "max_len %d below 2", o->max_len);
    if (!(o->aug.rrc_min_scale > 0 && o->aug.rrc_min_scale <= 1))
        return vit_fail(err, "random resized crop scale %g outside (0, 1]", o->aug.rrc_min_scale);
    return 0;
}

/* Absolute paths, so a resumed run finds the folders from any working directory. */
static void own_paths(run *r) {
    const char **strs[] = {&r->o.train_path, &r->o.val_path, &r->o.labels_file, &r->o.init_dir,
                           &r->o.vocab_file};
    for (int i = 0; i < 5; i++) {
        if (!*strs[i]) continue;
        char *abs = realpath(*strs[i], NULL);
        r->owned[i] = abs ? abs : strdup(*strs[i]);
        *strs[i] = r->owned[i];
    }
}

static void run_free(run *r) {
    vit_trainer_free(r->t);
    bert_trainer_free(r->bt);
    tokenizer_free(r->tok);
    text_set_free(&r->train_text);
    text_set_free(&r->val_text);
    free(r->train_rows), free(r->val_rows), free(r->ids), free(r->mask), free(r->scratch);
    adamw_free(&r->opt);
    image_set_free(&r->train);
    image_set_free(&r->val);
    free(r->pixels), free(r->logits), free(r->probs), free(r->perm), free(r->batch_labels);
    free(r->eval_idx);
    free(r->lut);
    if (r->m.params) model_free(&r->m);
    for (int i = 0; i < 6; i++) free(r->owned[i]);
}

/* Text when the training data is a file (a TSV), images when it is a folder. */
static int detect_text(run *r, vit_error *err) {
    struct stat st;
    if (stat(r->o.train_path, &st) != 0)
        return vit_fail(err, "%s: %s", r->o.train_path, strerror(errno));
    r->text = S_ISREG(st.st_mode);
    if (!r->text && !S_ISDIR(st.st_mode))
        return vit_fail(err, "%s: neither a folder of images nor a TSV file", r->o.train_path);
    if (r->text && !r->o.vocab_file && !r->o.init_dir)
        return vit_fail(err,
                        "%s: a new text model needs a vocabulary (--vocab vocab.txt) or a "
                        "model to fine-tune (--init)",
                        r->o.train_path);
    if (r->text && r->o.vocab_file && r->o.init_dir)
        return vit_fail(err, "--vocab is for new models: --init %s has its own", r->o.init_dir);
    if (!r->text && r->o.vocab_file)
        return vit_fail(err, "--vocab is for text: %s is a folder of images", r->o.train_path);
    return 0;
}

static int load_data(run *r, vit_error *err) {
    return r->text ? load_texts(r, err) : load_images(r, err);
}

static int prepare_out_dir(const run *r, vit_error *err) {
    if (mkdir(r->o.out_dir, 0777) != 0 && errno != EEXIST)
        return vit_fail(err, "%s: cannot create: %s", r->o.out_dir, strerror(errno));
    char path[4096];
    path_in(path, sizeof path, r->o.out_dir, TRAIN_STATE_FILE);
    if (access(path, F_OK) == 0)
        return vit_fail(err, "%s holds an unfinished run: continue it with --resume, or delete %s",
                        r->o.out_dir, path);
    path_in(path, sizeof path, r->o.out_dir, TRAIN_LOG_FILE);
    if (unlink(path) != 0 && errno != ENOENT) return vit_fail(err, "%s: %s", path, strerror(errno));
    return 0;
}

int train_run(const train_options *opt, int resume, const train_hooks *hooks, vit_error *err) {
    run r = {.o = *opt, .hooks = hooks};
    st_file state = {0};
    int rc = 0;
    if (resume) {
        if (!opt->out_dir) return vit_fail(err, "no output folder to resume");
        rc = open_state(&r, &state, err);
        if (rc != 0) return -1;
        r.o.out_dir = opt->out_dir;
        r.o.threads = opt->threads;
    } else {
        if (check_options(&r.o, err) != 0 || detect_text(&r, err) != 0) return -1;
        own_paths(&r);
        if (prepare_out_dir(&r, err) != 0) return run_free(&r), -1;
    }
    vit_threads_init(r.o.threads); /* before decoding: it runs on the OpenMP threads too */
    if (setup_model(&r, resume, err) != 0 || load_data(&r, err) != 0) rc = -1;
    /* default crop padding: 1/14 of the side (2 pixels at 28, 16 at 224) */
    if (rc == 0 && !r.text && r.o.aug.crop_pad < 0) r.o.aug.crop_pad = (r.train.S + 7) / 14;
    if (rc == 0 && (setup_training(&r, err) != 0 || (resume && load_state(&r, &state, err) != 0)))
        rc = -1;
    if (resume) st_close(&state);
    if (rc == 0) {
        info(&r,
             "%d classes; %d training %s (%lld steps of %d per epoch), %d validation; "
             "%zu parameters",
             r.num_classes, r.n_train, r.text ? "sentences" : "images",
             (long long)r.steps_per_epoch, r.B, r.n_val, live_params(&r.m));
        rc = loop(&r, err);
    }
    if (rc == 0) { /* done: the state has served its purpose */
        char path[4096];
        path_in(path, sizeof path, r.o.out_dir, TRAIN_STATE_FILE);
        unlink(path);
    }
    run_free(&r);
    return rc;
}
