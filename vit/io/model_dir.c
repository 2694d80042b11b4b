#include "vit/io/model_dir.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vit/base/alloc.h"
#include "vit/base/file.h"
#include "vit/base/json.h"
#include "vit/io/model_class.h"
#include "vit/io/st_folder.h"
#include "vit/io/weights.h"

static cJSON *size_object(int height, int width) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "height", height);
    cJSON_AddNumberToObject(o, "width", width);
    return o;
}

static void add_labels(cJSON *root, const model_config *c) {
    cJSON *id2label = cJSON_AddObjectToObject(root, "id2label");
    cJSON *label2id = cJSON_AddObjectToObject(root, "label2id");
    for (int i = 0; i < c->num_labels; i++) {
        char key[16];
        snprintf(key, sizeof key, "%d", i);
        cJSON_AddStringToObject(id2label, key, c->labels[i]);
        cJSON_AddNumberToObject(label2id, c->labels[i], i);
    }
}

/* The fields of a text classifier's configuration class: BertConfig's (those
 * BertForSequenceClassification reads), or its family's (config_text_write); then the labels. */
static char *text_config_json(const model_config *c, float hidden_dropout,
                              float attention_dropout) {
    cJSON *root = cJSON_CreateObject();
    cJSON *arch = cJSON_AddArrayToObject(root, "architectures");
    cJSON_AddItemToArray(arch, cJSON_CreateString(config_architecture(c)));
    cJSON_AddStringToObject(root, "model_type", config_model_type(c));
    if (c->family == FAMILY_TEXT) {
        config_text_write(root, c, hidden_dropout, attention_dropout);
    } else {
        cJSON_AddNumberToObject(root, "vocab_size", c->vocab_size);
        cJSON_AddNumberToObject(root, "hidden_size", c->hidden_size);
        cJSON_AddNumberToObject(root, "num_hidden_layers", c->num_layers);
        cJSON_AddNumberToObject(root, "num_attention_heads", c->num_heads);
        cJSON_AddNumberToObject(root, "intermediate_size", c->intermediate_size);
        cJSON_AddStringToObject(root, "hidden_act", activation_name(c->act));
        cJSON_AddItemToObject(root, "hidden_dropout_prob", json_shortest_float(hidden_dropout));
        cJSON_AddItemToObject(root, "attention_probs_dropout_prob",
                              json_shortest_float(attention_dropout));
        cJSON_AddNumberToObject(root, "max_position_embeddings", c->max_position_embeddings);
        cJSON_AddNumberToObject(root, "type_vocab_size", c->type_vocab_size);
        cJSON_AddItemToObject(root, "initializer_range", json_shortest_float(0.02f));
        cJSON_AddItemToObject(root, "layer_norm_eps", json_shortest_float(c->layer_norm_eps));
        cJSON_AddNumberToObject(root, "pad_token_id", c->pad_token_id);
        cJSON_AddStringToObject(root, "position_embedding_type", "absolute");
        cJSON_AddNullToObject(root, "classifier_dropout");
    }
    if (c->bare) { /* a base model (a sentence-transformers Transformer): no classes */
        cJSON_AddStringToObject(root, "torch_dtype", "float32");
        char *text = cJSON_Print(root);
        cJSON_Delete(root);
        return text;
    }
    cJSON_AddNumberToObject(root, "num_labels", c->num_labels);
    add_labels(root, c);
    /* transformers sets problem_type for sequence classifiers only */
    if (!c->token_classifier)
        cJSON_AddStringToObject(root, "problem_type",
                                c->regression ? "regression" : "single_label_classification");
    cJSON_AddStringToObject(root, "torch_dtype", "float32");
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    return text;
}

/* ViTConfig's fields, which are also DeiTConfig's. */
static char *vit_config_json(const model_config *c, float hidden_dropout, float attention_dropout) {
    cJSON *root = cJSON_CreateObject();
    cJSON *arch = cJSON_AddArrayToObject(root, "architectures");
    cJSON_AddItemToArray(arch, cJSON_CreateString(config_architecture(c)));
    cJSON_AddStringToObject(root, "model_type", config_model_type(c));
    if (c->image_width == c->image_size || c->image_width <= 0) { /* 0: not set, square */
        cJSON_AddNumberToObject(root, "image_size", c->image_size);
    } else {
        const int hw[2] = {c->image_size, c->image_width};
        cJSON_AddItemToObject(root, "image_size", cJSON_CreateIntArray(hw, 2));
    }
    cJSON_AddNumberToObject(root, "patch_size", c->patch_size);
    cJSON_AddNumberToObject(root, "num_channels", c->num_channels);
    cJSON_AddNumberToObject(root, "hidden_size", c->hidden_size);
    cJSON_AddNumberToObject(root, "num_hidden_layers", c->num_layers);
    cJSON_AddNumberToObject(root, "num_attention_heads", c->num_heads);
    cJSON_AddNumberToObject(root, "intermediate_size", c->intermediate_size);
    cJSON_AddStringToObject(root, "hidden_act", activation_name(c->act));
    cJSON_AddItemToObject(root, "layer_norm_eps", json_shortest_float(c->layer_norm_eps));
    cJSON_AddBoolToObject(root, "qkv_bias", c->qkv_bias);
    cJSON_AddItemToObject(root, "hidden_dropout_prob", json_shortest_float(hidden_dropout));
    cJSON_AddItemToObject(root, "attention_probs_dropout_prob",
                          json_shortest_float(attention_dropout));
    cJSON_AddItemToObject(root, "initializer_range", json_shortest_float(0.02f));
    cJSON_AddNumberToObject(root, "encoder_stride", c->patch_size);
    if (config_is_backbone(c)) config_backbone_write(root, c);
    add_labels(root, c);
    cJSON_AddStringToObject(root, "torch_dtype", "float32");
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    return text;
}

char *model_config_json(const model_config *c, float hidden_dropout, float attention_dropout) {
    return c->kind == MODEL_TEXT ? text_config_json(c, hidden_dropout, attention_dropout)
                                 : vit_config_json(c, hidden_dropout, attention_dropout);
}

char *preprocess_config_json(const preprocess_config *pp) {
    cJSON *root = cJSON_CreateObject();
    if (pp->keep_aspect) cJSON_AddBoolToObject(root, "do_crop_margin", pp->do_crop_margin);
    cJSON_AddBoolToObject(root, "do_resize", pp->do_resize);
    if (pp->keep_aspect) {
        cJSON_AddItemToObject(root, "size", size_object(pp->resize_height, pp->resize_width));
    } else if (pp->shortest_edge > 0) {
        cJSON *size = cJSON_AddObjectToObject(root, "size");
        cJSON_AddNumberToObject(size, "shortest_edge", pp->shortest_edge);
    } else {
        cJSON_AddItemToObject(root, "size", size_object(pp->resize_height, pp->resize_width));
    }
    cJSON_AddNumberToObject(root, "resample", pp->resample);
    if (pp->keep_aspect) {
        cJSON_AddBoolToObject(root, "do_thumbnail", pp->do_thumbnail);
        cJSON_AddBoolToObject(root, "do_align_long_axis", pp->do_align_long_axis);
        cJSON_AddBoolToObject(root, "do_pad", pp->do_pad);
    } else {
        cJSON_AddBoolToObject(root, "do_center_crop", pp->do_center_crop);
    }
    if (!pp->keep_aspect && pp->do_center_crop)
        cJSON_AddItemToObject(root, "crop_size", size_object(pp->crop_height, pp->crop_width));
    cJSON_AddBoolToObject(root, "do_rescale", pp->do_rescale);
    char factor[32];
    snprintf(factor, sizeof factor, "%.17g", pp->rescale_factor);
    cJSON_AddItemToObject(root, "rescale_factor", cJSON_CreateRaw(factor));
    cJSON_AddBoolToObject(root, "do_normalize", pp->do_normalize);
    const int C = pp->channels == 1 ? 1 : 3;
    cJSON *mean = cJSON_AddArrayToObject(root, "image_mean");
    cJSON *std = cJSON_AddArrayToObject(root, "image_std");
    for (int ch = 0; ch < C; ch++) {
        cJSON_AddItemToArray(mean, json_shortest_float(pp->mean[ch]));
        cJSON_AddItemToArray(std, json_shortest_float(pp->std[ch]));
    }
    cJSON_AddStringToObject(root, "image_processor_type",
                            pp->keep_aspect ? "NougatImageProcessor" : "ViTImageProcessor");
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    return text;
}

int model_st_entries(const model *m, const float *block, st_entry *entries, char (*names)[128]) {
    int n = 0;
    for (int i = 0; i < m->num_entries; i++) {
        const param_entry *e = &m->entries[i];
        if (e->absent) continue;
        snprintf(names[n], 128, "%s%s", e->prefixed ? model_prefix(m) : "", e->name);
        st_entry *s = &entries[n++];
        memset(s, 0, sizeof *s);
        s->name = names[n - 1];
        s->ndim = e->ndim;
        memcpy(s->shape, e->shape, sizeof(int64_t) * (size_t)e->ndim);
        s->data = block + e->offset;
    }
    return n;
}

static int make_dir(const char *dir, vit_error *err) {
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return vit_fail(err, "%s: cannot create directory: %s", dir, strerror(errno));
    return 0;
}

/* An open_clip folder: open_clip_config.json and no config.json (as model_config_load reads it);
 * its weights and config keep open_clip's file names when converted or averaged. */
static int is_open_clip_dir(const char *dir) {
    char path[4096];
    snprintf(path, sizeof path, "%s/config.json", dir);
    if (access(path, F_OK) == 0) return 0;
    snprintf(path, sizeof path, "%s/%s", dir, OPEN_CLIP_CONFIG);
    return access(path, F_OK) == 0;
}

static const char *config_name(const char *dir) {
    return is_open_clip_dir(dir) ? OPEN_CLIP_CONFIG : "config.json";
}

static const char *weights_name(const char *dir) {
    return is_open_clip_dir(dir) ? OPEN_CLIP_WEIGHTS : "model.safetensors";
}

static int open_dir_weights(const char *dir, int lazy, weights *w, vit_error *err) {
    return (is_open_clip_dir(dir) ? weights_open_open_clip : weights_open)(dir, lazy, w, err);
}

/* A model folder out_dir made from in_dir is written weights first (whole or not at all), then
 * the config and tokenizer files, so a refused model leaves nothing behind. Opening it: in_dir's
 * config.json (an open_clip folder's open_clip_config.json) checked before anything is written,
 * out_dir made (*made: by this call). */
static int open_model_dir(const char *in_dir, const char *out_dir, int *made, vit_error *err) {
    char config[4096];
    snprintf(config, sizeof config, "%s/%s", in_dir, config_name(in_dir));
    if (access(config, R_OK) != 0) return vit_fail(err, "%s: %s", config, strerror(errno));
    *made = mkdir(out_dir, 0777) == 0;
    return *made ? 0 : make_dir(out_dir, err);
}

/* Closing it after the weights (weights_rc): the other files copied, or, the weights refused, a
 * folder made by open_model_dir removed again. */
static int close_model_dir(const char *in_dir, const char *out_dir, int made, int weights_rc,
                           vit_error *err) {
    if (weights_rc == 0) return model_dir_copy_files(in_dir, out_dir, err);
    if (made) rmdir(out_dir);
    return -1;
}

static int save_text(const char *dir, const char *name, char *text, vit_error *err) {
    if (!text) return vit_fail(err, "%s/%s: out of memory", dir, name);
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    const int rc = write_file_atomic(path, text, strlen(text), err);
    free(text);
    return rc;
}

/* The transposed entries of s[0..n) (m's entries, in model_st_entries' order) as the file stores
 * them, [in, out]: a copy each in copies[i] (NULL for the others), shapes reversed. */
static int transpose_back(const model *m, st_entry *s, float **copies, vit_error *err) {
    for (int i = 0, k = 0; i < m->num_entries; i++) {
        const param_entry *e = &m->entries[i];
        if (e->absent) continue;
        st_entry *out = &s[k++];
        if (!e->transposed) continue;
        const size_t rows = (size_t)e->shape[0], cols = (size_t)e->shape[1]; /* ours: [out, in] */
        float *t = copies[k - 1] = vit_alloc_floats(e->numel);
        if (!t) return vit_fail(err, "out of memory");
        const float *from = m->params + e->offset;
        for (size_t o = 0; o < rows; o++)
            for (size_t c = 0; c < cols; c++) t[c * rows + o] = from[o * cols + c];
        out->data = t;
        out->shape[0] = (int64_t)cols, out->shape[1] = (int64_t)rows;
    }
    return 0;
}

int model_save_weights(const char *path, const model *m, const st_entry *extra, int n_extra,
                       vit_error *err) {
    const size_t cap = (size_t)m->num_entries + (size_t)n_extra;
    st_entry *entries = calloc(cap ? cap : 1, sizeof *entries);
    char(*names)[128] = calloc(m->num_entries ? (size_t)m->num_entries : 1, sizeof *names);
    float **copies = calloc(m->num_entries ? (size_t)m->num_entries : 1, sizeof *copies);
    int rc = entries && names && copies ? 0 : vit_fail(err, "%s: out of memory", path);
    int n = 0;
    if (rc == 0) {
        n = model_st_entries(m, m->params, entries, names);
        rc = transpose_back(m, entries, copies, err);
    }
    for (int i = 0; rc == 0 && i < n_extra; i++) entries[n++] = extra[i];
    static const char *const keys[] = {"format"}, *const values[] = {"pt"};
    if (rc == 0) rc = st_write_f32_meta(path, entries, n, keys, values, 1, err);
    for (int i = 0; copies && i < m->num_entries; i++) free(copies[i]);
    free(copies), free(entries), free(names);
    return rc;
}

int model_save(const char *dir, const model *m, const preprocess_config *pp, float hidden_dropout,
               float attention_dropout, vit_error *err) {
    if (make_dir(dir, err) != 0) return -1;
    char path[4096];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    int rc = model_save_weights(path, m, NULL, 0, err);
    if (rc == 0)
        rc = save_text(dir, "config.json",
                       model_config_json(&m->cfg, hidden_dropout, attention_dropout), err);
    if (rc == 0 && m->cfg.kind == MODEL_VIT)
        rc = save_text(dir, "preprocessor_config.json", preprocess_config_json(pp), err);
    return rc;
}

/* Copies from to dir/name (atomically), byte for byte (a SentencePiece model is binary); a
 * missing source is an error only when required. */
static int copy_file(const char *from, const char *dir, const char *name, int required,
                     vit_error *err) {
    if (!required && access(from, F_OK) != 0) return 0;
    size_t size;
    char *bytes = vit_read_file(from, 64 << 20, &size, err);
    if (!bytes) return -1;
    char path[8192];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    const int rc = write_file_atomic(path, bytes, size, err);
    free(bytes);
    return rc;
}

char *tokenizer_default_config(int max_len) {
    cJSON *root = cJSON_CreateObject();
    cJSON_AddBoolToObject(root, "do_lower_case", 1);
    cJSON_AddBoolToObject(root, "do_basic_tokenize", 1);
    cJSON_AddBoolToObject(root, "tokenize_chinese_chars", 1);
    cJSON_AddNullToObject(root, "strip_accents");
    cJSON_AddNumberToObject(root, "model_max_length", max_len);
    cJSON_AddStringToObject(root, "tokenizer_class", "BertTokenizer");
    const char *special[][2] = {{"unk_token", "[UNK]"},
                                {"sep_token", "[SEP]"},
                                {"pad_token", "[PAD]"},
                                {"cls_token", "[CLS]"},
                                {"mask_token", "[MASK]"}};
    for (size_t i = 0; i < sizeof special / sizeof special[0]; i++)
        cJSON_AddStringToObject(root, special[i][0], special[i][1]);
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    return text;
}

int tokenizer_files_save(const char *dir, const char *from_dir, const char *vocab_file, int max_len,
                         vit_error *err) {
    if (make_dir(dir, err) != 0) return -1;
    if (from_dir) return tokenizer_files_copy(from_dir, dir, err); /* whichever kind it has */
    if (copy_file(vocab_file, dir, "vocab.txt", 1, err) != 0) return -1;
    return save_text(dir, "tokenizer_config.json", tokenizer_default_config(max_len), err);
}

int model_dir_load_preprocess(const char *dir, preprocess_config *cfg, vit_error *err) {
    model_config model;
    if (model_config_load(dir, &model, err) != 0) return -1;
    const int image_size = model.image_size, channels = model.num_channels;
    model_config_free(&model);
    return preprocess_config_read(dir, image_size, channels, cfg, err);
}

/* ---- loading ---- */

static void format_shape(char *buf, size_t size, int ndim, const int64_t *shape) {
    size_t used = (size_t)snprintf(buf, size, "[");
    for (int d = 0; d < ndim && used < size; d++)
        used +=
            (size_t)snprintf(buf + used, size - used, d ? ", %lld" : "%lld", (long long)shape[d]);
    if (used < size) snprintf(buf + used, size - used, "]");
}

/* A base model's (ViTModel's, BertModel's, a text family's) tensor under its task class's
 * prefix, as a ViTForImageClassification saved with num_labels 0 (no classifier) or a
 * JinaBertForMaskedLM holds it: transformers' base model strips base_model_prefix on load. */
static const st_tensor *under_task_prefix(const model *m, const weights *w, const char *name) {
    if ((m->cfg.family != FAMILY_PLAIN && m->cfg.family != FAMILY_TEXT) || !m->cfg.bare)
        return NULL;
    model task = *m; /* the prefix the task class gives the same config */
    task.cfg.bare = 0;
    char full[160];
    snprintf(full, sizeof full, "%s%s", model_prefix(&task), name);
    return weights_find(w, full);
}

/* The folder's tensor for entry e, of e's shape; NULL (err set) when missing or misshapen. */
static const st_tensor *entry_tensor(const model *m, const weights *w, const param_entry *e,
                                     vit_error *err) {
    char full[128];
    snprintf(full, sizeof full, "%s%s", e->prefixed ? model_prefix(m) : "", e->name);
    const st_tensor *t = weights_find(w, full);
    if (!t) t = weights_find(w, e->name); /* bare ViTModel / BertModel checkpoints have no prefix */
    if (!t && e->prefixed) t = under_task_prefix(m, w, e->name);
    if (!t) return vit_fail(err, "%s: missing tensor '%s'", w->path, full), NULL;
    int64_t shape[4]; /* as the file stores it */
    for (int d = 0; d < e->ndim; d++) shape[d] = e->shape[e->transposed ? e->ndim - 1 - d : d];
    int same = t->ndim == e->ndim;
    for (int d = 0; same && d < e->ndim; d++) same = t->shape[d] == shape[d];
    if (!same) {
        char want[64], got[64];
        format_shape(want, sizeof want, e->ndim, shape);
        format_shape(got, sizeof got, t->ndim, t->shape);
        vit_fail(err, "%s: tensor '%s' has shape %s, expected %s", weights_file(w, t)->path,
                 t->name, got, want);
        return NULL;
    }
    return t;
}

/* Every tensor the layout needs is in the folder, of its shape (before anything is allocated). */
static int check_tensors(const model *m, const weights *w, vit_error *err) {
    for (int i = 0; i < m->num_entries; i++)
        if (!m->entries[i].absent && !entry_tensor(m, w, &m->entries[i], err)) return -1;
    return 0;
}

/* Entry e from its tensor t (entry_tensor's) into the parameter block, transposed to [out, in]
 * where the file holds [in, out]. */
static int load_entry(float *params, const weights *w, const param_entry *e, const st_tensor *t,
                      vit_error *err) {
    float *to = params + e->offset;
    if (!e->transposed) return weights_to_f32(w, t, to, err);
    float *tmp = vit_alloc_floats(e->numel);
    if (!tmp) return vit_fail(err, "%s: out of memory", w->path);
    const int rc = weights_to_f32(w, t, tmp, err);
    const int64_t rows = e->shape[0], cols = e->shape[1]; /* ours: [out, in] */
    for (int64_t i = 0; rc == 0 && i < cols; i++)
        for (int64_t o = 0; o < rows; o++) to[o * cols + i] = tmp[i * rows + o];
    free(tmp);
    return rc;
}

/* A model's tensors on their way from its file: which file tensor each entry takes, how many
 * entries still want each file tensor (tied weights: several), which entries are in. */
typedef struct {
    weights w;
    const param_entry *entries;
    int num_entries;
    const st_tensor **of; /* per entry; NULL: absent */
    int *uses;            /* per file tensor */
    unsigned char *read;  /* per entry, and per file tensor after them */
} tensor_source;

static void source_free(void *ctx) {
    tensor_source *s = ctx;
    if (!s) return;
    weights_close(&s->w);
    free(s->of);
    free(s->uses);
    free(s->read);
    free(s);
}

/* Every entry overlapping params[offset, offset + count) not read yet, from the file; each file
 * tensor's bytes go back once its last entry has them. */
static int source_read(void *ctx, float *params, size_t offset, size_t count, vit_error *err) {
    tensor_source *s = ctx;
    unsigned char *file_read = s->read + s->num_entries;
    for (int i = 0; i < s->num_entries; i++) {
        const param_entry *e = &s->entries[i];
        if (!s->of[i] || s->read[i] || e->offset >= offset + count ||
            e->offset + e->numel <= offset)
            continue;
        const int t = weights_index(&s->w, s->of[i]);
        if (!file_read[t] && weights_read(&s->w, s->of[i], err) != 0) return -1;
        file_read[t] = 1;
        if (load_entry(params, &s->w, e, s->of[i], err) != 0) return -1;
        s->read[i] = 1;
        if (--s->uses[t] == 0) weights_release(&s->w, s->of[i]);
    }
    return 0;
}

/* The source of m's tensors in the opened weights w (taken over, closed on failure). */
static tensor_source *source_create(const model *m, weights *w, vit_error *err) {
    tensor_source *s = calloc(1, sizeof *s);
    if (!s) {
        vit_fail(err, "%s: out of memory", w->path);
        weights_close(w);
        return NULL;
    }
    s->w = *w;
    s->entries = m->entries;
    s->num_entries = m->num_entries;
    s->of = calloc((size_t)m->num_entries + 1, sizeof *s->of);
    s->uses = calloc((size_t)w->count + 1, sizeof *s->uses);
    s->read = calloc((size_t)(m->num_entries + w->count) + 1, 1);
    if (!s->of || !s->uses || !s->read) {
        vit_fail(err, "%s: out of memory", w->path);
        source_free(s);
        return NULL;
    }
    for (int i = 0; i < m->num_entries; i++) {
        if (m->entries[i].absent) continue;
        if (!(s->of[i] = entry_tensor(m, &s->w, &m->entries[i], err))) {
            source_free(s);
            return NULL;
        }
        s->uses[weights_index(&s->w, s->of[i])]++;
    }
    return s;
}

/* A base text model saved without its pooler (transformers' add_pooling_layer=False) is laid out
 * again without one: its output is then token 0's final state, as the model has no other. */
static int drop_missing_pooler(model *m, const weights *f, vit_error *err) {
    const param_entry *e = model_find_param(m, "pooler.dense.weight");
    if (!e || m->cfg.kind != MODEL_TEXT || m->cfg.opt.head != HEAD_NONE) return 0;
    char full[128];
    snprintf(full, sizeof full, "%s%s", e->prefixed ? model_prefix(m) : "", e->name);
    if (weights_find(f, full) || weights_find(f, e->name) || under_task_prefix(m, f, e->name))
        return 0;
    model_config cfg = m->cfg;
    m->cfg.labels = NULL; /* they move to the new layout */
    m->cfg.num_labels = 0;
    model_free(m);
    cfg.no_pooler = 1;
    return model_layout(m, &cfg, err);
}

static int load(model *m, const char *model_dir, config_tower tower, int lazy, vit_error *err) {
    model_config cfg;
    if (model_config_load_tower(model_dir, tower, &cfg, err) != 0) return -1;
    const int open_clip = cfg.open_clip; /* open_clip's files: its config, its weights' names */
    model_config_free(&cfg);             /* its errors first, then the weights' */
    weights f;
    if ((open_clip ? weights_open_open_clip : weights_open)(model_dir, lazy, &f, err) != 0)
        return -1;
    if (model_config_for_weights(model_dir, tower, &f, &cfg, err) != 0) {
        weights_close(&f);
        return -1;
    }
    /* the file against the config before the parameters are allocated: a config that asks for
     * what the file does not hold fails now, not after gigabytes were zeroed */
    int rc = model_layout(m, &cfg, err);
    model_config_free(&cfg);
    if (rc == 0) rc = drop_missing_pooler(m, &f, err);
    if (rc != 0) {
        weights_close(&f);
        if (err) { /* name the file that asked */
            char why[sizeof err->msg];
            snprintf(why, sizeof why, "%s", err->msg);
            vit_fail(err, "%s/%s: %s", model_dir, open_clip ? OPEN_CLIP_CONFIG : "config.json",
                     why);
        }
        return -1;
    }
    if (check_tensors(m, &f, err) != 0 || model_alloc(m, err) != 0) {
        weights_close(&f);
        if (m->entries) model_free(m);
        return -1;
    }
    weights_describe(&f, m->weights_from, sizeof m->weights_from);
    tensor_source *s = source_create(m, &f, err);
    if (!s) {
        model_free(m);
        return -1;
    }
    m->source = (model_source){.ctx = s, .read = source_read, .close = source_free};
    /* lazily, only the matrices (the tensors weight decay applies to) wait for model_prepare:
     * whatever else reads parameters before it (position embeddings interpolated to the run's
     * size) finds them */
    for (int i = 0; lazy && rc == 0 && i < m->num_entries; i++)
        if (!m->entries[i].decay)
            rc = source_read(s, m->params, m->entries[i].offset, m->entries[i].numel, err);
    if (rc == 0 && !lazy) rc = model_read_rest(m, err); /* every tensor, in one pass */
    if (rc != 0) model_free(m);
    return rc;
}

int model_load(model *m, const char *model_dir, vit_error *err) {
    return load(m, model_dir, TOWER_DEFAULT, 0, err);
}

int model_load_tower(model *m, const char *model_dir, config_tower tower, vit_error *err) {
    return load(m, model_dir, tower, 0, err);
}

int model_load_lazy(model *m, const char *model_dir, vit_error *err) {
    return load(m, model_dir, TOWER_DEFAULT, 1, err);
}

int model_load_tower_lazy(model *m, const char *model_dir, config_tower tower, vit_error *err) {
    return load(m, model_dir, tower, 1, err);
}

static int is_float(st_dtype dtype) {
    return dtype == ST_F32 || dtype == ST_F16 || dtype == ST_BF16 || dtype == ST_F64;
}

/* numel floats (a buffer this takes over) stored as dtype (F32: the buffer itself; F16, BF16: a
 * new one, rounded to nearest even), or NULL (err set, naming path) when out of memory. */
static void *floats_as(float *f32, int64_t numel, st_dtype dtype, const char *path,
                       vit_error *err) {
    if (dtype == ST_F32) return f32;
    uint16_t *half = malloc(sizeof(uint16_t) * (size_t)(numel ? numel : 1));
    if (half) (dtype == ST_F16 ? st_f32_to_f16 : st_f32_to_bf16)(half, f32, (size_t)numel);
    free(f32);
    if (!half) vit_fail(err, "%s: out of memory", path);
    return half;
}

/* Tensor t as dtype into a new buffer (a float tensor), or NULL (err set). */
static void *converted(const weights *w, const st_tensor *t, st_dtype dtype, vit_error *err) {
    float *f32 = malloc(sizeof(float) * (size_t)(t->numel ? t->numel : 1));
    if (!f32) return vit_fail(err, "%s: out of memory", w->path), NULL;
    if (weights_to_f32(w, t, f32, err) != 0) return free(f32), NULL;
    return floats_as(f32, t->numel, dtype, w->path, err);
}

/* in_dir's weights (any layout weights_open reads) as one model.safetensors in out_dir (an
 * open_clip folder's as open_clip_model.safetensors). */
static int convert_weights(const char *in_dir, const char *out_dir, st_dtype dtype,
                           vit_error *err) {
    weights w;
    if (open_dir_weights(in_dir, 0, &w, err) != 0) return -1;
    st_entry *entries = calloc((size_t)w.count + 1, sizeof *entries);
    void **owned = calloc((size_t)w.count + 1, sizeof *owned);
    int rc = entries && owned ? 0 : vit_fail(err, "%s: out of memory", w.path);
    for (int i = 0; rc == 0 && i < w.count; i++) {
        const st_tensor *t = weights_tensor(&w, i);
        if ((rc = weights_read(&w, t, err)) != 0) break;
        entries[i] =
            (st_entry){.name = t->name, .ndim = t->ndim, .data = t->data, .dtype = t->dtype};
        memcpy(entries[i].shape, t->shape, sizeof(int64_t) * (size_t)t->ndim);
        if (!is_float(t->dtype) || t->dtype == dtype) continue;
        if (!(owned[i] = converted(&w, t, dtype, err))) rc = -1;
        entries[i].data = owned[i];
        entries[i].dtype = dtype;
        weights_release(&w, t); /* its bytes are in owned[i] now */
    }
    if (rc == 0) {
        char format[64], path[4096];
        weights_format(&w, format, sizeof format);
        const char *const keys[] = {"format"}, *const values[] = {format};
        snprintf(path, sizeof path, "%s/%s", out_dir, weights_name(in_dir));
        rc = st_write_f32_meta(path, entries, w.count, keys, values, 1, err);
    }
    for (int i = 0; owned && i < w.count; i++) free(owned[i]);
    free(owned), free(entries);
    weights_close(&w);
    return rc;
}

static int convert_dir(const char *in_dir, const char *out_dir, st_dtype dtype, vit_error *err) {
    int made;
    if (open_model_dir(in_dir, out_dir, &made, err) != 0) return -1;
    return close_model_dir(in_dir, out_dir, made, convert_weights(in_dir, out_dir, dtype, err),
                           err);
}

/* in_dirs[k]/sub for each of the n folders, or NULL (err set); free_dirs frees them. */
static char **sub_dirs(const char *const *in_dirs, int n, const char *sub, vit_error *err) {
    char **dirs = calloc((size_t)n, sizeof *dirs);
    if (!dirs) return vit_fail(err, "out of memory"), NULL;
    for (int k = 0; k < n; k++) {
        const size_t size = strlen(in_dirs[k]) + strlen(sub) + 2;
        if (!(dirs[k] = malloc(size))) {
            for (int j = 0; j < k; j++) free(dirs[j]);
            free(dirs);
            return vit_fail(err, "out of memory"), NULL;
        }
        snprintf(dirs[k], size, "%s/%s", in_dirs[k], sub);
    }
    return dirs;
}

static void free_dirs(char **dirs, int n) {
    for (int k = 0; dirs && k < n; k++) free(dirs[k]);
    free(dirs);
}

/* How a model folder is written from n others (converted: n is 1; averaged). */
typedef int (*dir_writer)(const char *const *in_dirs, int n, const char *out_dir, void *user,
                          vit_error *err);

/* A sentence-transformers folder's Transformer module: at in_dirs[k]/sub (sub its path in the
 * first folder's modules.json, "" for the root; the others must have theirs at the same path),
 * into out_dir/sub, made by `write` (first: a model whose weights are refused leaves nothing
 * behind); then sentence_bert_config.json beside it, the module's own file. */
static int st_transformer(const char *const *in_dirs, int n, const char *out_dir, char *sub,
                          size_t size, dir_writer write, void *user, vit_error *err) {
    char other[4096];
    if (st_folder_transformer(in_dirs[0], sub, size, err) != 0) return -1;
    for (int k = 1; k < n; k++) {
        if (!st_folder_is(in_dirs[k]))
            return vit_fail(err, "%s: no modules.json, where %s is a sentence-transformers folder",
                            in_dirs[k], in_dirs[0]);
        if (st_folder_transformer(in_dirs[k], other, sizeof other, err) != 0) return -1;
        if (strcmp(other, sub) != 0)
            return vit_fail(err, "%s/modules.json: the Transformer is at '%s', in %s at '%s'",
                            in_dirs[k], other, in_dirs[0], sub);
    }
    if (!sub[0]) return write(in_dirs, n, out_dir, user, err);
    const int made = mkdir(out_dir, 0777) == 0;
    if (!made && make_dir(out_dir, err) != 0) return -1;
    char **dirs = sub_dirs(in_dirs, n, sub, err), to[4096];
    int rc = dirs ? 0 : -1;
    if (rc == 0 && snprintf(to, sizeof to, "%s/%s", out_dir, sub) >= (int)sizeof to)
        rc = vit_fail(err, "%s/%s: path too long", out_dir, sub);
    if (rc == 0) rc = write((const char *const *)dirs, n, to, user, err);
    if (rc == 0)
        rc = model_dir_copy_file(dirs[0], to, "sentence_bert_config.json", 0, err);
    else if (made)
        rmdir(out_dir);
    free_dirs(dirs, n);
    return rc;
}

static int convert_transformer(const char *const *in_dirs, int n, const char *out_dir, void *user,
                               vit_error *err) {
    (void)n;
    return convert_dir(in_dirs[0], out_dir, *(const st_dtype *)user, err);
}

/* A module's weights (a Dense's) converted as the model's. */
static int convert_module(const char *in_dir, const char *out_dir, const char *sub, void *user,
                          vit_error *err) {
    char from[4096], to[4096];
    snprintf(from, sizeof from, "%s/%s", in_dir, sub);
    snprintf(to, sizeof to, "%s/%s", out_dir, sub);
    return convert_weights(from, to, *(const st_dtype *)user, err);
}

int model_dir_convert(const char *in_dir, const char *out_dir, st_dtype dtype, vit_error *err) {
    if (dtype != ST_F32 && dtype != ST_F16 && dtype != ST_BF16)
        return vit_fail(err, "convert: the dtype must be F32, F16 or BF16");
    struct stat a, b;
    if (stat(in_dir, &a) != 0) return vit_fail(err, "%s: %s", in_dir, strerror(errno));
    if (stat(out_dir, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino)
        return vit_fail(err, "%s: the output directory is the input directory", out_dir);
    if (!st_folder_is(in_dir)) return convert_dir(in_dir, out_dir, dtype, err);
    /* a sentence-transformers folder: its pooling, Dense and prompts are part of the model */
    char sub[4096];
    if (st_transformer(&in_dir, 1, out_dir, sub, sizeof sub, convert_transformer, &dtype, err) != 0)
        return -1;
    return st_folder_write_modules(in_dir, out_dir, convert_module, &dtype, err);
}

/* "[3, 224, 224]" into buf. */
static const char *shape_text(const st_tensor *t, char *buf, size_t size) {
    size_t used = (size_t)snprintf(buf, size, "[");
    for (int d = 0; d < t->ndim && used < size; d++)
        used += (size_t)snprintf(buf + used, size - used, d ? ", %lld" : "%lld",
                                 (long long)t->shape[d]);
    if (used < size) snprintf(buf + used, size - used, "]");
    return buf;
}

/* The tensor of f named as t, with t's shape and kind (float, or else t's dtype), read; NULL with
 * err naming both files otherwise. */
static const st_tensor *matching(weights *f, const weights *first, const st_tensor *t,
                                 vit_error *err) {
    const st_tensor *u = weights_find(f, t->name);
    char a[160], b[160];
    if (!u)
        return vit_fail(err, "%s has no tensor '%s' (%s has)", f->path, t->name, first->path), NULL;
    if (u->ndim != t->ndim || memcmp(u->shape, t->shape, sizeof(int64_t) * (size_t)t->ndim) != 0)
        return vit_fail(err, "%s: tensor '%s' is %s, in %s %s", f->path, t->name,
                        shape_text(u, a, sizeof a), first->path, shape_text(t, b, sizeof b)),
               NULL;
    if (is_float(u->dtype) != is_float(t->dtype) || (!is_float(t->dtype) && u->dtype != t->dtype))
        return vit_fail(err, "%s: tensor '%s' is %s, in %s %s", f->path, t->name,
                        st_dtype_name(u->dtype), first->path, st_dtype_name(t->dtype)),
               NULL;
    return weights_read(f, u, err) == 0 ? u : NULL;
}

/* Tensor t of the first of n files: the mean of the n files' (float tensors, summed in double),
 * as dtype, in a new buffer; the other tensors must be the same bytes in every file (a copy of
 * the first's). NULL with err. */
static void *averaged(weights *f, int n, const st_tensor *t, st_dtype dtype, vit_error *err) {
    const size_t numel = (size_t)(t->numel ? t->numel : 1);
    if (!is_float(t->dtype)) {
        for (int k = 1; k < n; k++) {
            const st_tensor *u = matching(&f[k], &f[0], t, err);
            if (!u) return NULL;
            if (memcmp(u->data, t->data, t->nbytes) != 0)
                return vit_fail(err, "%s: tensor '%s' (%s, not averaged) differs from %s's",
                                f[k].path, t->name, st_dtype_name(t->dtype), f[0].path),
                       NULL;
        }
        void *copy = malloc(t->nbytes ? t->nbytes : 1);
        if (!copy) return vit_fail(err, "%s: out of memory", f[0].path), NULL;
        return memcpy(copy, t->data, t->nbytes);
    }
    double *sum = calloc(numel, sizeof *sum);
    float *one = malloc(numel * sizeof *one);
    void *out = NULL;
    int rc = sum && one ? 0 : vit_fail(err, "%s: out of memory", f[0].path);
    for (int k = 0; rc == 0 && k < n; k++) {
        const st_tensor *u = k ? matching(&f[k], &f[0], t, err) : t;
        rc = u ? weights_to_f32(&f[k], u, one, err) : -1;
        for (size_t i = 0; rc == 0 && i < (size_t)t->numel; i++) sum[i] += one[i];
        if (u) weights_release(&f[k], u);
    }
    if (rc == 0) {
        for (size_t i = 0; i < (size_t)t->numel; i++) one[i] = (float)(sum[i] / n);
        out = floats_as(one, t->numel, dtype, f[0].path, err);
        one = NULL;
    }
    free(sum), free(one);
    return out;
}

static int average_weights(const char *const *in_dirs, int n, const char *out_dir, st_dtype dtype,
                           vit_error *err) {
    weights *f = calloc((size_t)n, sizeof *f);
    char path[4096];
    int opened = 0, rc = f ? 0 : vit_fail(err, "out of memory");
    for (; rc == 0 && opened < n; opened++) {
        if (open_dir_weights(in_dirs[opened], 1, &f[opened], err) != 0)
            rc = -1;
        else if (f[opened].count != f[0].count)
            rc = vit_fail(err, "%s has %d tensors, %s %d", f[opened].path, f[opened].count,
                          f[0].path, f[0].count);
    }
    const int count = f ? f[0].count : 0;
    st_entry *entries = calloc((size_t)count + 1, sizeof *entries);
    void **owned = calloc((size_t)count + 1, sizeof *owned);
    if (rc == 0 && (!entries || !owned)) rc = vit_fail(err, "out of memory");
    for (int i = 0; rc == 0 && i < count; i++) {
        const st_tensor *t = weights_tensor(&f[0], i);
        if (weights_read(&f[0], t, err) != 0 || !(owned[i] = averaged(f, n, t, dtype, err))) {
            rc = -1;
            break;
        }
        entries[i] = (st_entry){.name = t->name,
                                .ndim = t->ndim,
                                .data = owned[i],
                                .dtype = is_float(t->dtype) ? dtype : t->dtype};
        memcpy(entries[i].shape, t->shape, sizeof(int64_t) * (size_t)t->ndim);
    }
    if (rc == 0) {
        const char *const keys[] = {"format"}, *const values[] = {"pt"};
        snprintf(path, sizeof path, "%s/%s", out_dir, weights_name(in_dirs[0]));
        rc = st_write_f32_meta(path, entries, count, keys, values, 1, err);
    }
    for (int i = 0; owned && i < count; i++) free(owned[i]);
    free(owned), free(entries);
    for (int k = 0; k < opened && f; k++) weights_close(&f[k]);
    free(f);
    return rc;
}

static int average_dir(const char *const *in_dirs, int n, const char *out_dir, void *user,
                       vit_error *err) {
    int made;
    if (open_model_dir(in_dirs[0], out_dir, &made, err) != 0) return -1;
    return close_model_dir(in_dirs[0], out_dir, made,
                           average_weights(in_dirs, n, out_dir, *(const st_dtype *)user, err), err);
}

typedef struct {
    const char *const *in_dirs;
    int n;
    st_dtype dtype;
} average_modules;

/* A module's weights (a Dense's): the mean of the same module's in every folder. */
static int average_module(const char *in_dir, const char *out_dir, const char *sub, void *user,
                          vit_error *err) {
    (void)in_dir;
    const average_modules *m = user;
    char **dirs = sub_dirs(m->in_dirs, m->n, sub, err), to[4096];
    snprintf(to, sizeof to, "%s/%s", out_dir, sub);
    const int rc = dirs ? average_weights((const char *const *)dirs, m->n, to, m->dtype, err) : -1;
    free_dirs(dirs, m->n);
    return rc;
}

int model_dir_average(const char *const *in_dirs, int n, const char *out_dir, st_dtype dtype,
                      vit_error *err) {
    if (dtype != ST_F32 && dtype != ST_F16 && dtype != ST_BF16)
        return vit_fail(err, "average: the dtype must be F32, F16 or BF16");
    if (n < 2) return vit_fail(err, "average: at least two models are needed");
    struct stat a, b;
    for (int k = 0; k < n; k++) {
        if (stat(in_dirs[k], &a) != 0) return vit_fail(err, "%s: %s", in_dirs[k], strerror(errno));
        if (stat(out_dir, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino)
            return vit_fail(err, "%s: the output directory is one of the inputs", out_dir);
    }
    if (!st_folder_is(in_dirs[0])) return average_dir(in_dirs, n, out_dir, &dtype, err);
    /* a sentence-transformers folder: its modules too, a Dense's weights averaged as the model's */
    char sub[4096];
    if (st_transformer(in_dirs, n, out_dir, sub, sizeof sub, average_dir, &dtype, err) != 0)
        return -1;
    const average_modules m = {in_dirs, n, dtype};
    return st_folder_write_modules(in_dirs[0], out_dir, average_module, (void *)&m, err);
}

int model_dir_copy_file(const char *in_dir, const char *out_dir, const char *name, int required,
                        vit_error *err) {
    char from[4096];
    snprintf(from, sizeof from, "%s/%s", in_dir, name);
    return copy_file(from, out_dir, name, required, err);
}

int tokenizer_files_copy(const char *in_dir, const char *out_dir, vit_error *err) {
    static const char *const files[] = {"tokenizer.json",
                                        "vocab.txt",
                                        "vocab.json",
                                        "merges.txt",
                                        "spiece.model",
                                        "sentencepiece.bpe.model",
                                        "added_tokens.json",
                                        "tokenizer_config.json",
                                        "special_tokens_map.json"};
    char from[4096];
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(from, sizeof from, "%s/%s", in_dir, files[i]);
        if (copy_file(from, out_dir, files[i], 0, err) != 0) return -1;
    }
    return 0;
}

int model_dir_copy_files(const char *in_dir, const char *out_dir, vit_error *err) {
    static const struct {
        const char *name;
        int required;
    } files[] = {
        {"config.json", 1}, {"preprocessor_config.json", 0}, {"generation_config.json", 0}};
    char from[4096];
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        const char *name = i == 0 ? config_name(in_dir) : files[i].name;
        snprintf(from, sizeof from, "%s/%s", in_dir, name);
        if (copy_file(from, out_dir, name, files[i].required, err) != 0) return -1;
    }
    return tokenizer_files_copy(in_dir, out_dir, err);
}

/* The token ids at a config's top level (VisionEncoderDecoderConfig's, TrOCRConfig's). */
static void add_token_ids(cJSON *o, const ved_decoder_spec *d) {
    cJSON_AddNumberToObject(o, "decoder_start_token_id", d->eos_id);
    cJSON_AddNumberToObject(o, "pad_token_id", d->pad_id);
    cJSON_AddNumberToObject(o, "eos_token_id", d->eos_id);
    if (d->bos_id >= 0) cJSON_AddNumberToObject(o, "bos_token_id", d->bos_id);
}

/* TrOCRConfig's fields for d (dropout at TrOCR's 0.1: a training-time setting of HF's). */
static cJSON *trocr_config(const ved_decoder_spec *d) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "model_type", "trocr");
    cJSON_AddNumberToObject(o, "vocab_size", d->vocab);
    cJSON_AddNumberToObject(o, "d_model", d->hidden);
    cJSON_AddNumberToObject(o, "decoder_layers", d->layers);
    cJSON_AddNumberToObject(o, "decoder_attention_heads", d->heads);
    cJSON_AddNumberToObject(o, "decoder_ffn_dim", d->ffn);
    cJSON_AddStringToObject(o, "activation_function", "gelu");
    cJSON_AddNumberToObject(o, "max_position_embeddings", d->positions);
    cJSON_AddItemToObject(o, "dropout", json_shortest_float(0.1f));
    cJSON_AddItemToObject(o, "attention_dropout", json_shortest_float(0.0f));
    cJSON_AddItemToObject(o, "activation_dropout", json_shortest_float(0.0f));
    cJSON_AddItemToObject(o, "init_std", json_shortest_float(0.02f));
    cJSON_AddItemToObject(o, "decoder_layerdrop", json_shortest_float(0.0f));
    cJSON_AddBoolToObject(o, "use_cache", 0);
    cJSON_AddBoolToObject(o, "scale_embedding", 0);
    cJSON_AddBoolToObject(o, "use_learned_position_embeddings", 1);
    cJSON_AddBoolToObject(o, "layernorm_embedding", 1);
    cJSON_AddBoolToObject(o, "tie_word_embeddings", 1);
    if (d->encoder_hidden != d->hidden)
        cJSON_AddNumberToObject(o, "cross_attention_hidden_size", d->encoder_hidden);
    else
        cJSON_AddNullToObject(o, "cross_attention_hidden_size");
    cJSON_AddBoolToObject(o, "is_decoder", 1);
    cJSON_AddBoolToObject(o, "add_cross_attention", 1);
    add_token_ids(o, d);
    return o;
}

char *ved_config_json(const char *encoder_json, const ved_decoder_spec *d) {
    cJSON *encoder = cJSON_Parse(encoder_json);
    if (!cJSON_IsObject(encoder)) return cJSON_Delete(encoder), NULL;
    cJSON *root = cJSON_CreateObject();
    cJSON *arch = cJSON_AddArrayToObject(root, "architectures");
    cJSON_AddItemToArray(arch, cJSON_CreateString("VisionEncoderDecoderModel"));
    cJSON_AddStringToObject(root, "model_type", "vision-encoder-decoder");
    if (d->image_height > 0 && d->image_width > 0) {
        const int hw[2] = {d->image_height, d->image_width};
        cJSON_DeleteItemFromObjectCaseSensitive(encoder, "image_size");
        cJSON_AddItemToObject(encoder, "image_size", cJSON_CreateIntArray(hw, 2));
    }
    cJSON_AddItemToObject(root, "encoder", encoder);
    cJSON_AddItemToObject(root, "decoder", trocr_config(d));
    cJSON_AddBoolToObject(root, "is_encoder_decoder", 1);
    cJSON_AddBoolToObject(root, "tie_word_embeddings", 0);
    add_token_ids(root, d);
    cJSON_AddStringToObject(root, "torch_dtype", "float32");
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    return text;
}

void resize_preprocess_config(preprocess_config *pp, int height, int width, int keep_aspect) {
    /* NougatImageProcessor's defaults but the size (and the model's mean and std, kept) */
    pp->keep_aspect = keep_aspect;
    pp->do_crop_margin = pp->do_thumbnail = pp->do_pad = keep_aspect;
    pp->do_align_long_axis = 0;
    pp->do_resize = 1;
    pp->shortest_edge = 0;
    pp->resize_height = height, pp->resize_width = width;
    pp->resample = 2;
    pp->do_center_crop = 0;
    pp->do_rescale = 1;
    pp->rescale_factor = 1.0 / 255.0;
    pp->do_normalize = 1;
}

char *ved_generation_config_json(const ved_decoder_spec *d) {
    cJSON *root = cJSON_CreateObject();
    add_token_ids(root, d);
    cJSON_AddNumberToObject(root, "max_length", d->positions);
    cJSON_AddBoolToObject(root, "use_cache", 0);
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    return text;
}
