/* The model a training run starts from: new (weights initialised here), fine-tuned from another
 * model directory (a fresh classifier when the classes differ), or as last saved (resume). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "vit/base/rng.h"
#include "vit/base/strlist.h"
#include "vit/data/imagefolder.h"
#include "vit/io/model_dir.h"
#include "vit/io/st_folder.h"
#include "vit/model/text_model.h"
#include "vit/model/vit_model.h"
#include "vit/train/trainer.h"

/* ---- new weights ---- */

/* PyTorch trunc_normal_(std, a = -2std, b = 2std) by rejection. */
static float trunc_normal(uint64_t *st, float std) {
    for (;;) {
        const double z = rng_normal(st);
        if (fabs(z) <= 2.0) return (float)(z * std);
    }
}

/* 2D sine-cosine position embeddings (MAE, "Better plain ViT baselines"): a quarter of the
 * dimensions each for sin/cos of the row and of the column at frequencies 1/10000^(k/(D/4)).
 * The S special tokens' rows (CLS, a DeiT's distillation token) stay zero. Nearby patches start
 * with similar embeddings, so attention can be local from the first step instead of learning
 * positions from noise. D % 4 == 0. */
static void sincos_pos_embed(float *pos, int S, int n, int D) {
    const int q = D / 4;
    memset(pos, 0, sizeof(float) * (size_t)S * D);
    for (int y = 0; y < n; y++)
        for (int x = 0; x < n; x++) {
            float *row = pos + (size_t)(S + y * n + x) * D;
            for (int k = 0; k < q; k++) {
                const double omega = 1.0 / pow(10000.0, (double)k / q);
                row[k] = (float)sin(y * omega);
                row[q + k] = (float)cos(y * omega);
                row[2 * q + k] = (float)sin(x * omega);
                row[3 * q + k] = (float)cos(x * omega);
            }
        }
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
            p[j] = is_bias(e->name) ? 0.0f : norm ? 1.0f : (float)(rng_normal(&st) * 0.02f);
        if (p == m->word_emb && pad >= 0 && pad < m->cfg.vocab_size)
            memset(p + (size_t)pad * D, 0, sizeof(float) * (size_t)D);
    }
}

/* A new ViT's weights. HF's _init_weights (everything truncated normal, std 0.02) learns slowly
 * from scratch on small data; big_vision's plain-ViT recipe starts much faster, so: patch
 * embedding LeCun normal (std 1/sqrt(C·P·P)), other matrices Xavier uniform, position
 * embeddings 2D sine-cosine (learned from there), CLS token and classifier zero, biases 0,
 * LayerNorm weights 1. Only entries whose name starts with prefix (a fresh head: "classifier."). */
static void init_vit_params(model *m, const char *prefix, uint64_t seed) {
    uint64_t st = rng_derive(seed, RNG_INIT, 0);
    const int D = m->cfg.hidden_size, n = m->cfg.image_size / m->cfg.patch_size;
    for (int i = 0; i < m->num_entries; i++) {
        const param_entry *e = &m->entries[i];
        if (e->absent || strncmp(e->name, prefix, strlen(prefix)) != 0) continue;
        float *p = m->params + e->offset;
        const int bias = is_bias(e->name);
        if (strstr(e->name, "position_embeddings") && D % 4 == 0) {
            sincos_pos_embed(p, config_special_tokens(&m->cfg), n, D);
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

static void init_params(model *m, const char *prefix, uint64_t seed) {
    if (m->cfg.kind == MODEL_TEXT)
        init_bert_params(m, prefix, seed);
    else
        init_vit_params(m, prefix, seed);
}

/* ---- class lists ---- */

void free_strings(char **s, int n) {
    for (int i = 0; s && i < n; i++) free(s[i]);
    free(s);
}

int read_labels_file(const char *path, char ***labels, int *count, vit_error *err) {
    strlist l;
    if (strlist_read(&l, path, 16 << 20, STRLIST_TRIM | STRLIST_SKIP_BLANK, err) != 0) return -1;
    if (l.count == 0) {
        strlist_free(&l);
        return vit_fail(err, "%s: no labels in the file", path);
    }
    char **out = calloc((size_t)l.count, sizeof *out);
    int ok = out != NULL;
    for (int i = 0; ok && i < l.count; i++) ok = (out[i] = strdup(l.lines[i])) != NULL;
    const int n = l.count;
    strlist_free(&l);
    if (!ok) {
        free_strings(out, n);
        return vit_fail(err, "%s: out of memory", path);
    }
    *labels = out;
    *count = n;
    return 0;
}

/* The classes of a new run: labels_file's lines, else what the data (or the model) says. */
static int run_classes(const trainer *t, const model *from, char ***classes, int *n,
                       vit_error *err) {
    if (t->o.labels_file) return read_labels_file(t->o.labels_file, classes, n, err);
    return t->task->data_classes(t, from, classes, n, err);
}

/* ---- the three starts ---- */

int trainer_create_model(trainer *t, model_config *cfg, char **classes, int n, vit_error *err) {
    char *json = model_config_json(cfg, 0, 0);
    free_strings(classes, n); /* the parsed config has its own copies */
    if (!json) return vit_fail(err, "out of memory");
    model_config parsed;
    int rc = model_config_parse(json, "the model options", &parsed, err);
    free(json);
    if (rc == 0) rc = model_create(&t->m, &parsed, err);
    if (rc != 0) return -1;
    init_params(&t->m, "", t->o.seed);
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

/* A copy of `from` with, where asked, a classifier for `classes` (new_head: initialised as a new
 * one; else from's own, `classes` then freed) and another input size (size > 0: positions
 * resized as transformers' interpolate_pos_encoding). A DeiT with teacher becomes a
 * DeiTForImageClassification (its encoder and both special tokens; a classifier on CLS), as HF's
 * DeiTForImageClassification.from_pretrained makes of one; a base model its
 * ForImageClassification class (Dinov2ForImageClassification, ...). */
static int rebuild(trainer *t, model *from, char **classes, int n, int new_head, int size,
                   vit_error *err) {
    model_config cfg = from->cfg;
    if (new_head) {
        if (cfg.arch == ARCH_DEIT_TEACHER) cfg.arch = ARCH_DEIT;
    } else { /* the model's own label strings, copied (model_create takes what it is given) */
        free_strings(classes, n);
        n = from->cfg.num_labels;
        if (!(classes = calloc((size_t)n, sizeof *classes))) return vit_fail(err, "out of memory");
        for (int i = 0; i < n; i++)
            if (!(classes[i] = strdup(from->cfg.labels[i])))
                return free_strings(classes, n), vit_fail(err, "out of memory");
    }
    cfg.labels = classes;
    cfg.num_labels = n;
    cfg.bare = 0; /* a base model (Dinov2Model, BeitModel) gets its ForImageClassification head */
    if (cfg.kind == MODEL_TEXT) {
        cfg.token_classifier = t->task->tokens;
        cfg.regression = t->task->regression;
    }
    if (size > 0) cfg.image_size = cfg.image_width = size;
    if (model_create(&t->m, &cfg, err) != 0) return -1; /* the labels are the model's now */
    int rc = 0;
    for (int i = 0; i < t->m.num_entries && rc == 0; i++) {
        const param_entry *e = &t->m.entries[i];
        const param_entry *src = model_find_param(from, e->name);
        const int fresh = new_head && strncmp(e->name, "classifier.", 11) == 0;
        /* a text head the model did not have (a base model's DistilBERT pre_classifier, RoBERTa's
         * classifier.dense): new, as from_pretrained initialises missing weights */
        if (!fresh && (!src || src->absent) && t->m.cfg.kind == MODEL_TEXT)
            init_bert_params(&t->m, e->name, t->o.seed + (uint64_t)i);
        if (fresh || !src || src->absent) continue;
        float *to = t->m.params + e->offset;
        if (to == t->m.pos_embed && src->numel != e->numel)
            rc = trainer_resize_positions(&t->m, from, e, src, err);
        else if (src->numel == e->numel)
            memcpy(to, from->params + src->offset, e->numel * sizeof(float));
    }
    if (new_head) init_params(&t->m, "classifier.", t->o.seed);
    return rc;
}

/* --resize: a ViT or DeiT on a square grid of learned positions (not BEiT's relative ones, not
 * DINOv2's own interpolation). */
static int check_resize(const trainer *t, const model *from, vit_error *err) {
    const model_config *c = &from->cfg;
    if (t->o.resize <= 0) return 0;
    if (c->kind != MODEL_VIT || c->family != FAMILY_PLAIN || !from->pos_embed ||
        c->image_width != c->image_size)
        return vit_fail(err, "--resize: %s is not a ViT or DeiT with square learned positions (%s)",
                        t->o.init_dir, config_architecture(c));
    if (t->o.resize % c->patch_size != 0)
        return vit_fail(err, "--resize %d is not a multiple of the patch size %d", t->o.resize,
                        c->patch_size);
    return 0;
}

/* Fine-tuning: init_dir's model, with its own classifier when the classes are the same. */
static int fine_tune_model(trainer *t, vit_error *err) {
    model from;
    if (model_load(&from, t->o.init_dir, err) != 0) return -1;
    const int text = t->task->kind == MODEL_TEXT;
    if (from.cfg.kind != t->task->kind) {
        model_free(&from);
        return vit_fail(err, "%s: not a %s model (the training data is %s)", t->o.init_dir,
                        text ? "BERT" : "ViT", text ? "text" : "images");
    }
    if (text && text_model_check_train(&from, NULL) != 0) { /* a joint tower, rotary, ALiBi */
        const char *cls = config_architecture(&from.cfg);   /* a static name */
        model_free(&from);
        return vit_fail(err,
                        "%s: %s runs for inference only; vit train fine-tunes the classifiers "
                        "of BERT, RoBERTa, XLM-R, DistilBERT and MPNet",
                        t->o.init_dir, cls);
    }
    if (text && from.cfg.token_classifier && !t->task->tokens) {
        const char *cls = config_architecture(&from.cfg);
        model_free(&from);
        return vit_fail(err,
                        "%s: %s classifies tokens: train it on tagged words (--tags, a file of "
                        "one token and its label per line), not on %s",
                        t->o.init_dir, cls, t->o.train_path);
    }
    char **classes = NULL;
    int n = 0;
    if (run_classes(t, &from, &classes, &n, err) != 0) return model_free(&from), -1;
    const int teacher = config_classifier_heads(&from.cfg) > 1; /* inference-only heads */
    if (check_resize(t, &from, err) != 0) return free_strings(classes, n), model_free(&from), -1;
    const int size = t->o.resize != from.cfg.image_size ? t->o.resize : 0;
    if (size > 0)
        trainer_info(t, "fine-tuning at %dx%d (the model's %dx%d positions interpolated)", size,
                     size, from.cfg.image_size, from.cfg.image_size);
    /* one label trains as regression (as transformers sets problem_type for num_labels 1) */
    if (text && t->task->regression && from.cfg.num_labels == 1 && !from.cfg.bare)
        from.cfg.regression = 1;
    /* a sequence classifier (or a base model) fine-tuned on tags gets a token classifier; a
     * classifier of classes fine-tuned on scores, a regression head */
    const int other_head = text && !from.cfg.bare &&
                           (from.cfg.token_classifier != t->task->tokens ||
                            from.cfg.regression != t->task->regression);
    if (other_head) {
        trainer_info(t, "fine-tuning %s with a new %s (%d labels)", t->o.init_dir,
                     t->task->tokens       ? "classifier on every token"
                     : t->task->regression ? "regression head (one score, MSE)"
                                           : "classifier",
                     n);
        const int rc = rebuild(t, &from, classes, n, 1, 0, err); /* takes classes */
        model_free(&from);
        return rc;
    }
    if (same_labels(&from, classes, n) && !teacher && size > 0) {
        trainer_info(t, "fine-tuning %s with its classifier (%d labels)", t->o.init_dir, n);
        const int rc = rebuild(t, &from, classes, n, 0, size, err); /* takes classes */
        model_free(&from);
        return rc;
    }
    if (same_labels(&from, classes, n) && !teacher) {
        t->m = from; /* the head fits: keep it, and the model's label strings */
        free_strings(classes, n);
        trainer_info(t, "fine-tuning %s with its classifier (%d labels)", t->o.init_dir, n);
        return 0;
    }
    if (teacher)
        trainer_info(t,
                     "fine-tuning %s as a DeiTForImageClassification: a new classifier on the "
                     "CLS token (%d labels); the distillation head is inference-only",
                     t->o.init_dir, n);
    else
        trainer_info(t, "fine-tuning %s with a new classifier: %d labels (it had %d)",
                     t->o.init_dir, n, from.cfg.num_labels);
    const int rc = rebuild(t, &from, classes, n, 1, size, err); /* takes classes */
    model_free(&from);
    return rc;
}

/* The task of the model a resumed run continues: image to text for a VisionEncoderDecoder
 * folder, else the model's kind says. */
static const train_task *resumed_task(const char *dir, vit_error *err) {
    if (st_folder_is(dir)) return &task_st; /* only --loss mnrl writes one */
    model_config c;
    if (model_config_load(dir, &c, err) != 0) return NULL;
    const train_task *task = c.family == FAMILY_VED ? &task_ved
                             : c.kind == MODEL_TEXT ? (c.token_classifier ? &task_tags
                                                       : c.regression     ? &task_scores
                                                                          : &task_text)
                                                    : &task_image;
    model_config_free(&c);
    return task;
}

int trainer_setup_model(trainer *t, int resume, vit_error *err) {
    const char *companion_dir = NULL;
    if (resume && !(t->task = resumed_task(t->o.out_dir, err))) return -1;
    if (t->task->setup_model) { /* a sequence model: no classes */
        const char *dir = resume ? t->o.out_dir : t->o.init_dir;
        if (t->task->setup_model(t, dir, err) != 0) return -1;
        return t->task->companion(t, dir, err);
    }
    if (resume) {
        if (model_load(&t->m, t->o.out_dir, err) != 0) return -1;
        companion_dir = t->o.out_dir;
    } else if (t->o.init_dir) {
        if (fine_tune_model(t, err) != 0) return -1;
        companion_dir = t->o.init_dir;
    } else {
        char **classes = NULL;
        int n = 0;
        if (run_classes(t, NULL, &classes, &n, err) != 0 ||
            t->task->new_model(t, classes, n, err) != 0)
            return -1;
    }
    /* a family without a training forward is refused before the data is read */
    if (t->m.cfg.kind == MODEL_VIT && vit_model_check_train(&t->m, err) != 0) return -1;
    t->classes = t->m.cfg.labels;
    t->num_classes = t->m.cfg.num_labels;
    return t->task->companion(t, companion_dir, err);
}
