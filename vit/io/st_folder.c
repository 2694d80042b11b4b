/* Reading a sentence-transformers folder (st_folder.h), as sentence-transformers' own loaders read
 * it: SentenceTransformer._load_sbert_model, models.Pooling.load, models.Dense.load. */
#include "vit/io/st_folder.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vit/base/file.h"
#include "vit/base/json.h"
#include "vit/io/model_dir.h"
#include "vit/io/weights.h"

#define TYPE_PREFIX "sentence_transformers.models."

/* dir/a/b, the empty parts left out (a path too long for out is cut: it then names no file). */
static void join(char *out, size_t size, const char *dir, const char *a, const char *b) {
    if (snprintf(out, size, "%s%s%s%s%s", dir, a[0] ? "/" : "", a, b[0] ? "/" : "", b) >= (int)size)
        out[0] = '\0';
}

static int exists(const char *path) {
    struct stat s;
    return stat(path, &s) == 0;
}

int st_folder_is(const char *dir) {
    char path[4096];
    join(path, sizeof path, dir, "modules.json", "");
    return exists(path);
}

/* A JSON file that may be absent (NULL and no error then). */
static cJSON *load_optional(const char *path, int *failed, vit_error *err) {
    *failed = 0;
    if (!exists(path)) return NULL;
    cJSON *j = json_load_object(path, err);
    *failed = j == NULL;
    return j;
}

static int read_pooling(st_pipeline *p, const char *dir, const char *sub, vit_error *err) {
    static const char *const keys[POOL_MODE_COUNT] = {
        "pooling_mode_cls_token",           "pooling_mode_max_tokens",
        "pooling_mode_mean_tokens",         "pooling_mode_mean_sqrt_len_tokens",
        "pooling_mode_weightedmean_tokens", "pooling_mode_lasttoken"};
    char path[4096];
    join(path, sizeof path, dir, sub, "config.json");
    cJSON *j = json_load_object(path, err);
    if (!j) return -1;
    int rc = json_get_int(j, "word_embedding_dimension", 1, 1 << 20, &p->word_dim, path, err);
    /* JSON keys are case-sensitive, as Python's dict; null is as absent: Pooling needs it */
    if (rc == 0 && p->word_dim < 1)
        rc = vit_fail(err, "%s: word_embedding_dimension is missing", path);
    p->include_prompt = 1;
    if (rc == 0) rc = json_get_bool(j, "include_prompt", &p->include_prompt, path, err);
    for (int i = 0; rc == 0 && i < POOL_MODE_COUNT; i++) {
        int on = 0;
        rc = json_get_bool(j, keys[i], &on, path, err);
        if (on) p->modes |= 1 << i;
    }
    cJSON_Delete(j);
    if (rc == 0 && !p->modes)
        rc = vit_fail(err, "%s: no pooling mode is true (pooling_mode_*)", path);
    return rc;
}

static int activation_of(const char *name, dense_act *out) {
    static const struct {
        const char *name;
        dense_act act;
    } acts[] = {{"torch.nn.modules.linear.Identity", DENSE_IDENTITY},
                {"torch.nn.modules.activation.Tanh", DENSE_TANH},
                {"torch.nn.modules.activation.ReLU", DENSE_RELU},
                {"torch.nn.modules.activation.Sigmoid", DENSE_SIGMOID},
                {"torch.nn.modules.activation.GELU", DENSE_GELU}};
    for (size_t i = 0; i < sizeof acts / sizeof *acts; i++)
        if (strcmp(name, acts[i].name) == 0) return *out = acts[i].act, 0;
    return -1;
}

static int read_dense_config(st_dense *d, const char *path, vit_error *err) {
    cJSON *j = json_load_object(path, err);
    if (!j) return -1;
    int bias = 1;
    d->act = DENSE_TANH; /* Dense's default activation_function */
    int rc = json_get_int(j, "in_features", 1, 1 << 20, &d->in, path, err);
    if (rc == 0) rc = json_get_int(j, "out_features", 1, 1 << 20, &d->out, path, err);
    if (rc == 0) rc = json_get_bool(j, "bias", &bias, path, err);
    if (rc == 0 && (!d->in || !d->out))
        rc = vit_fail(err, "%s: in_features and out_features are required", path);
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(j, "activation_function");
    if (rc == 0 && a && !cJSON_IsNull(a) &&
        (!cJSON_IsString(a) || activation_of(a->valuestring, &d->act) != 0))
        rc = vit_fail(err,
                      "%s: activation_function %s is not one vit runs (torch.nn.modules.activation."
                      "Tanh, ReLU, Sigmoid, GELU or torch.nn.modules.linear.Identity)",
                      path, cJSON_IsString(a) ? a->valuestring : "(not a string)");
    cJSON_Delete(j);
    d->b = bias ? (float *)1 : NULL; /* a marker until the weights are read */
    return rc;
}

/* name's tensor of w into a new float array of n floats, its shape checked. */
static float *read_tensor(const weights *w, const char *name, int rows, int cols, const char *dir,
                          vit_error *err) {
    const st_tensor *t = weights_find(w, name);
    const int64_t n = (int64_t)rows * (cols ? cols : 1);
    const int ndim = cols ? 2 : 1;
    if (!t) return vit_fail(err, "%s: %s has no tensor %s", dir, w->path, name), NULL;
    if (t->ndim != ndim || t->shape[0] != rows || (cols && t->shape[1] != cols))
        return vit_fail(err, "%s: %s has the wrong shape for the config's %d x %d", dir, name, rows,
                        cols),
               NULL;
    float *out = malloc(sizeof *out * (size_t)n);
    if (!out) return vit_fail(err, "%s: out of memory", dir), NULL;
    const int rc = weights_read(w, t, err) == 0 ? weights_to_f32(w, t, out, err) : -1;
    weights_release(w, t);
    if (rc != 0) return free(out), NULL;
    return out;
}

static int read_dense(st_dense *d, const char *dir, const char *sub, vit_error *err) {
    char path[4096], folder[4096];
    join(path, sizeof path, dir, sub, "config.json");
    join(folder, sizeof folder, dir, sub, "");
    if (read_dense_config(d, path, err) != 0) return -1;
    const int bias = d->b != NULL;
    d->b = NULL;
    weights w;
    if (weights_open(folder, 1, &w, err) != 0) return -1;
    d->w = read_tensor(&w, "linear.weight", d->out, d->in, folder, err);
    if (d->w && bias) d->b = read_tensor(&w, "linear.bias", d->out, 0, folder, err);
    weights_close(&w);
    return d->w && (!bias || d->b) ? 0 : -1;
}

static int add_step(st_pipeline *p, st_step_kind kind, vit_error *err) {
    st_step *s = realloc(p->steps, sizeof *s * (size_t)(p->nsteps + 1));
    if (!s) return vit_fail(err, "out of memory");
    p->steps = s;
    s[p->nsteps++] = (st_step){.kind = kind, .dense = p->ndense};
    return 0;
}

static int add_dense(st_pipeline *p, const char *dir, const char *sub, vit_error *err) {
    st_dense *d = realloc(p->dense, sizeof *d * (size_t)(p->ndense + 1));
    if (!d) return vit_fail(err, "out of memory");
    p->dense = d;
    memset(&d[p->ndense], 0, sizeof *d);
    const int in = st_output_dim(p);
    if (add_step(p, ST_STEP_DENSE, err) != 0) return -1;
    if (read_dense(&d[p->ndense], dir, sub, err) != 0) {
        free(d[p->ndense].w);
        p->nsteps--;
        return -1;
    }
    snprintf(d[p->ndense].module, sizeof d->module, "%s", sub);
    p->ndense++;
    if (d[p->ndense - 1].in != in)
        return vit_fail(err, "%s/%s/config.json: in_features %d, but the module before gives %d",
                        dir, sub, d[p->ndense - 1].in, in);
    return 0;
}

/* Module i of modules.json: its type's last part and path, checked. */
static int module_fields(const cJSON *m, const char *src, int i, const char **type,
                         const char **path, vit_error *err) {
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(m, "type"),
                *pa = cJSON_GetObjectItemCaseSensitive(m, "path");
    if (!cJSON_IsObject(m) || !cJSON_IsString(t) || !cJSON_IsString(pa))
        return vit_fail(err, "%s: module %d is not an object with a string type and path", src, i);
    if (strncmp(t->valuestring, TYPE_PREFIX, strlen(TYPE_PREFIX)) != 0 ||
        strstr(pa->valuestring, "..") || pa->valuestring[0] == '/')
        return vit_fail(err,
                        "%s: module %d (%s at '%s') is not a sentence_transformers.models one "
                        "in the folder",
                        src, i, t->valuestring, pa->valuestring);
    *type = t->valuestring + strlen(TYPE_PREFIX);
    *path = pa->valuestring;
    return 0;
}

static int read_module(st_pipeline *p, const char *dir, const cJSON *m, const char *src, int i,
                       vit_error *err) {
    const char *type = NULL, *path = NULL;
    if (module_fields(m, src, i, &type, &path, err) != 0) return -1;
    const int pooled = p->modes != 0;
    if (i == 0 && strcmp(type, "Transformer") != 0)
        return vit_fail(err, "%s: the first module is %s; vit reads a Transformer first", src,
                        type);
    if (i == 0) return join(p->transformer_dir, sizeof p->transformer_dir, dir, path, ""), 0;
    if (strcmp(type, "Pooling") == 0 && !pooled) return read_pooling(p, dir, path, err);
    if (!pooled)
        return vit_fail(err, "%s: module %d is %s; vit needs a Pooling after the Transformer", src,
                        i, type);
    if (strcmp(type, "Dense") == 0) return add_dense(p, dir, path, err);
    if (strcmp(type, "Normalize") == 0) return add_step(p, ST_STEP_NORMALIZE, err);
    return vit_fail(err,
                    "%s: module %d is %s, which vit does not run (it runs Transformer, "
                    "Pooling, Dense and Normalize)",
                    src, i, type);
}

static int read_modules(st_pipeline *p, const char *dir, vit_error *err) {
    char src[4096];
    join(src, sizeof src, dir, "modules.json", "");
    size_t size;
    char *text = vit_read_file(src, 1 << 20, &size, err);
    if (!text) return -1;
    cJSON *list = cJSON_ParseWithOpts(text, NULL, 1);
    free(text);
    int rc = 0;
    if (!cJSON_IsArray(list) || cJSON_GetArraySize(list) == 0)
        rc = vit_fail(err, "%s: not a JSON list of modules", src);
    for (int i = 0; rc == 0 && i < cJSON_GetArraySize(list); i++)
        rc = read_module(p, dir, cJSON_GetArrayItem(list, i), src, i, err);
    cJSON_Delete(list);
    if (rc == 0 && !p->modes) rc = vit_fail(err, "%s: no Pooling module", src);
    return rc;
}

static int read_bert_config(st_pipeline *p, vit_error *err) {
    char path[4096];
    join(path, sizeof path, p->transformer_dir, "sentence_bert_config.json", "");
    int failed;
    cJSON *j = load_optional(path, &failed, err);
    if (!j) return failed ? -1 : 0;
    int rc = json_get_int(j, "max_seq_length", 1, 1 << 20, &p->max_seq_length, path, err);
    if (rc == 0) rc = json_get_bool(j, "do_lower_case", &p->do_lower_case, path, err);
    cJSON_Delete(j);
    return rc;
}

static int add_prompt(st_pipeline *p, const cJSON *item, const char *path, vit_error *err) {
    if (!cJSON_IsString(item))
        return vit_fail(err, "%s: prompt %s is not a string", path, item->string);
    const size_t n = (size_t)p->nprompts + 1;
    char **names = realloc(p->prompt_names, sizeof *names * n);
    if (names) p->prompt_names = names;
    char **texts = names ? realloc(p->prompt_texts, sizeof *texts * n) : NULL;
    if (texts) p->prompt_texts = texts;
    char *name = texts ? strdup(item->string) : NULL,
         *text = name ? strdup(item->valuestring) : NULL;
    if (!text) return free(name), vit_fail(err, "out of memory");
    p->prompt_names[p->nprompts] = name;
    p->prompt_texts[p->nprompts++] = text;
    return 0;
}

static int read_prompts(st_pipeline *p, const char *dir, vit_error *err) {
    char path[4096];
    join(path, sizeof path, dir, "config_sentence_transformers.json", "");
    int failed, rc = 0;
    cJSON *j = load_optional(path, &failed, err);
    if (!j) return failed ? -1 : 0;
    const cJSON *prompts = cJSON_GetObjectItemCaseSensitive(j, "prompts"), *item;
    if (prompts && !cJSON_IsNull(prompts) && !cJSON_IsObject(prompts))
        rc = vit_fail(err, "%s: prompts is not an object", path);
    const cJSON *list = cJSON_IsObject(prompts) ? prompts : NULL;
    cJSON_ArrayForEach(item, list) {
        if (rc == 0) rc = add_prompt(p, item, path, err);
    }
    const cJSON *def = cJSON_GetObjectItemCaseSensitive(j, "default_prompt_name");
    const cJSON *sim = cJSON_GetObjectItemCaseSensitive(j, "similarity_fn_name");
    if (rc == 0 && cJSON_IsString(def)) {
        if (!st_prompt(p, def->valuestring))
            rc = vit_fail(err, "%s: default_prompt_name '%s' is not one of its prompts", path,
                          def->valuestring);
        else if (!(p->default_prompt = strdup(def->valuestring)))
            rc = vit_fail(err, "out of memory");
    }
    /* SentenceTransformer refuses other names when it loads the folder (SimilarityFunction) */
    static const char *const functions[] = {"cosine", "dot", "euclidean", "manhattan"};
    int known = !sim || cJSON_IsNull(sim);
    for (int i = 0; !known && cJSON_IsString(sim) && i < 4; i++)
        known = strcmp(sim->valuestring, functions[i]) == 0;
    if (rc == 0 && !known)
        rc = vit_fail(err,
                      "%s: similarity_fn_name %s%s%s is not \"cosine\", \"dot\", \"euclidean\" "
                      "or \"manhattan\"",
                      path, cJSON_IsString(sim) ? "'" : "",
                      cJSON_IsString(sim) ? sim->valuestring : "(not a string)",
                      cJSON_IsString(sim) ? "'" : "");
    if (rc == 0 && cJSON_IsString(sim))
        snprintf(p->similarity, sizeof p->similarity, "%s", sim->valuestring);
    cJSON_Delete(j);
    return rc;
}

int st_pipeline_load(const char *dir, st_pipeline *p, vit_error *err) {
    memset(p, 0, sizeof *p);
    if (read_modules(p, dir, err) != 0 || read_bert_config(p, err) != 0 ||
        read_prompts(p, dir, err) != 0) {
        st_pipeline_free(p);
        return -1;
    }
    return 0;
}

void st_pipeline_free(st_pipeline *p) {
    for (int i = 0; i < p->ndense; i++) {
        free(p->dense[i].w);
        free(p->dense[i].b);
    }
    for (int i = 0; i < p->nprompts; i++) {
        free(p->prompt_names[i]);
        free(p->prompt_texts[i]);
    }
    free(p->dense);
    free(p->steps);
    free(p->prompt_names);
    free(p->prompt_texts);
    free(p->default_prompt);
    memset(p, 0, sizeof *p);
}

int st_pooled_dim(const st_pipeline *p) {
    int n = 0;
    for (int i = 0; i < POOL_MODE_COUNT; i++) n += (p->modes >> i) & 1;
    return n * p->word_dim;
}

int st_output_dim(const st_pipeline *p) {
    for (int i = p->nsteps - 1; i >= 0; i--)
        if (p->steps[i].kind == ST_STEP_DENSE) return p->dense[p->steps[i].dense].out;
    return st_pooled_dim(p);
}

const char *st_prompt(const st_pipeline *p, const char *name) {
    for (int i = 0; i < p->nprompts; i++)
        if (strcmp(p->prompt_names[i], name) == 0) return p->prompt_texts[i];
    return NULL;
}

int st_normalizes(const st_pipeline *p) {
    return p->nsteps > 0 && p->steps[p->nsteps - 1].kind == ST_STEP_NORMALIZE;
}

/* A module's weights as Dense.load finds them: model.safetensors, else pytorch_model.bin. */
static int is_weights_file(const char *name) {
    return strcmp(name, "model.safetensors") == 0 || strcmp(name, "pytorch_model.bin") == 0;
}

/* Every file of in_dir/sub into out_dir/sub (created); its weights through write when given. */
static int copy_module(const char *in_dir, const char *out_dir, const char *sub,
                       st_module_weights write, void *user, vit_error *err) {
    char from[4096], to[4096];
    join(from, sizeof from, in_dir, sub, "");
    join(to, sizeof to, out_dir, sub, "");
    if (mkdir(to, 0777) != 0 && errno != EEXIST)
        return vit_fail(err, "%s: cannot create: %s", to, strerror(errno));
    DIR *d = opendir(from);
    /* a module without files (Normalize) may have no folder; SentenceTransformer.save makes one */
    if (!d) return errno == ENOENT ? 0 : vit_fail(err, "%s: %s", from, strerror(errno));
    int rc = 0, weights = 0;
    struct dirent *e;
    while (rc == 0 && (e = readdir(d))) {
        char path[4400];
        snprintf(path, sizeof path, "%s/%s", from, e->d_name);
        struct stat st;
        if (e->d_name[0] == '.' || stat(path, &st) != 0 || !S_ISREG(st.st_mode)) continue;
        if (write && is_weights_file(e->d_name))
            weights = 1;
        else
            rc = model_dir_copy_file(from, to, e->d_name, 1, err);
    }
    closedir(d);
    return rc == 0 && weights ? write(in_dir, out_dir, sub, user, err) : rc;
}

int st_folder_transformer(const char *dir, char *sub, size_t size, vit_error *err) {
    char src[4096];
    join(src, sizeof src, dir, "modules.json", "");
    size_t bytes;
    char *text = vit_read_file(src, 1 << 20, &bytes, err);
    if (!text) return -1;
    cJSON *list = cJSON_ParseWithOpts(text, NULL, 1);
    free(text);
    int rc = cJSON_IsArray(list) && cJSON_GetArraySize(list) > 0
                 ? 0
                 : vit_fail(err, "%s: not a JSON list of modules", src);
    /* every module checked now, before a caller writes anything from the folder */
    for (int i = 0; rc == 0 && i < cJSON_GetArraySize(list); i++) {
        const char *type = NULL, *path = NULL;
        rc = module_fields(cJSON_GetArrayItem(list, i), src, i, &type, &path, err);
        if (rc == 0 && i == 0 && strcmp(type, "Transformer") != 0)
            rc = vit_fail(err, "%s: the first module is %s; vit reads a Transformer first", src,
                          type);
        if (rc == 0 && i == 0 && (size_t)snprintf(sub, size, "%s", path) >= size)
            rc = vit_fail(err, "%s: the Transformer's path is too long", src);
    }
    cJSON_Delete(list);
    return rc;
}

int st_folder_write_modules(const char *in_dir, const char *out_dir, st_module_weights write,
                            void *user, vit_error *err) {
    static const char *const top[] = {"modules.json", "sentence_bert_config.json",
                                      "config_sentence_transformers.json"};
    for (size_t i = 0; i < sizeof top / sizeof *top; i++)
        if (model_dir_copy_file(in_dir, out_dir, top[i], i == 0, err) != 0) return -1;
    char src[4096];
    join(src, sizeof src, in_dir, "modules.json", "");
    size_t size;
    char *text = vit_read_file(src, 1 << 20, &size, err);
    if (!text) return -1;
    cJSON *list = cJSON_ParseWithOpts(text, NULL, 1);
    free(text);
    int rc = cJSON_IsArray(list) ? 0 : vit_fail(err, "%s: not a JSON list of modules", src);
    /* a writer of weights (convert, average) writes the Transformer's folder itself */
    for (int i = write ? 1 : 0; rc == 0 && i < cJSON_GetArraySize(list); i++) {
        const char *type, *path;
        rc = module_fields(cJSON_GetArrayItem(list, i), src, i, &type, &path, err);
        if (rc == 0 && path[0]) rc = copy_module(in_dir, out_dir, path, write, user, err);
    }
    cJSON_Delete(list);
    return rc;
}

int st_folder_copy_modules(const char *in_dir, const char *out_dir, vit_error *err) {
    return st_folder_write_modules(in_dir, out_dir, NULL, NULL, err);
}

int st_dense_save(const char *out_dir, const st_dense *d, vit_error *err) {
    char path[4096];
    join(path, sizeof path, out_dir, d->module, "model.safetensors");
    if (!path[0]) return vit_fail(err, "%s/%s: path too long", out_dir, d->module);
    const st_entry entries[2] = {
        {.name = "linear.weight", .ndim = 2, .shape = {d->out, d->in}, .data = d->w},
        {.name = "linear.bias", .ndim = 1, .shape = {d->out}, .data = d->b}};
    static const char *const keys[] = {"format"}, *const values[] = {"pt"};
    if (st_write_f32_meta(path, entries, d->b ? 2 : 1, keys, values, 1, err) != 0) return -1;
    /* a folder that came with pytorch_model.bin keeps one copy of the weights, the new one */
    join(path, sizeof path, out_dir, d->module, "pytorch_model.bin");
    if (path[0] && unlink(path) != 0 && errno != ENOENT)
        return vit_fail(err, "%s: cannot remove the weights replaced: %s", path, strerror(errno));
    return 0;
}
