#include "vit/io/weights.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vit/base/file.h"
#include "vit/io/torch_bin.h"

#define MAX_INDEX (64u << 20) /* an index.json of a million tensors is ~100 MB; ours ~ 40 kB */

/* transformers' order (modeling_utils: safetensors first, then the .bin, each whole then
 * sharded). */
static const char *const layouts[] = {"model.safetensors", "model.safetensors.index.json",
                                      "pytorch_model.bin", "pytorch_model.bin.index.json"};

/* open_clip's folders: its factory's preferred order (_find_checkpoint_in_dir), the files
 * push_to_hf_hub writes. */
static const char *const open_clip_layouts[] = {"open_clip_model.safetensors",
                                                "open_clip_pytorch_model.bin"};

static const char *first_file(const char *dir, const char *const *names, size_t n) {
    char path[4096];
    for (size_t i = 0; i < n; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        if (access(path, F_OK) == 0) return names[i];
    }
    return NULL;
}

const char *weights_file_name(const char *dir) {
    return first_file(dir, layouts, sizeof layouts / sizeof layouts[0]);
}

const char *weights_file_name_open_clip(const char *dir) {
    return first_file(dir, open_clip_layouts, sizeof open_clip_layouts / sizeof *open_clip_layouts);
}

void weights_close(weights *w) {
    for (int i = 0; i < w->nfiles; i++) st_close(&w->files[i]);
    free(w->files);
    free(w->first);
    free(w->path);
    memset(w, 0, sizeof *w);
}

static int open_one(const char *path, int torch, int lazy, st_file *f, vit_error *err) {
    if (torch) return torch_bin_open(path, f, err);
    return (lazy ? st_open_lazy : st_open)(path, f, err);
}

/* A shard's file name as the index gives it: a plain name in the folder, nothing else. */
static int plain_name(const char *s) {
    return *s && *s != '.' && !strchr(s, '/') && !strchr(s, '\\') && strlen(s) < 256;
}

/* The index's shards (each named once, in the order weight_map first names them) into names. */
static int shard_names(const weights *w, const cJSON *map, const char ***names, int *n,
                       vit_error *err) {
    const int cap = cJSON_GetArraySize(map);
    *names = calloc((size_t)cap + 1, sizeof **names);
    if (!*names) return vit_fail(err, "%s: out of memory", w->path);
    *n = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, map) {
        if (!cJSON_IsString(e) || !plain_name(e->valuestring))
            return vit_fail(err,
                            "%s: weight_map gives '%s' a file that is not a name in the folder",
                            w->path, e->string);
        int k = 0;
        while (k < *n && strcmp((*names)[k], e->valuestring) != 0) k++;
        if (k == *n) (*names)[(*n)++] = e->valuestring;
    }
    if (!*n) return vit_fail(err, "%s: weight_map names no file", w->path);
    return 0;
}

/* Every name weight_map places is in the shard it says (transformers loads shards whole, so a
 * tensor elsewhere would be a broken index). */
static int check_map(const weights *w, const cJSON *map, const char *dir, vit_error *err) {
    const cJSON *e;
    cJSON_ArrayForEach(e, map) {
        for (int k = 0; k < w->nfiles; k++) {
            const char *base = w->files[k].path + strlen(dir) + 1;
            if (strcmp(base, e->valuestring) != 0) continue;
            if (!st_find(&w->files[k], e->string))
                return vit_fail(err, "%s: weight_map puts '%s' in %s, which does not hold it",
                                w->path, e->string, e->valuestring);
        }
    }
    return 0;
}

static int open_shards(weights *w, const char *dir, vit_error *err) {
    size_t size;
    char *text = vit_read_file(w->path, MAX_INDEX, &size, err);
    if (!text) return -1;
    cJSON *root = cJSON_ParseWithLength(text, size);
    free(text);
    const cJSON *map = cJSON_GetObjectItemCaseSensitive(root, "weight_map");
    const char **names = NULL;
    int n = 0, rc = cJSON_IsObject(map) ? shard_names(w, map, &names, &n, err)
                                        : vit_fail(err, "%s: no weight_map object", w->path);
    if (rc == 0 && !(w->files = calloc((size_t)n, sizeof *w->files)))
        rc = vit_fail(err, "%s: out of memory", w->path);
    char path[4096];
    for (int k = 0; rc == 0 && k < n; k++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[k]);
        if ((rc = open_one(path, w->torch, 1, &w->files[k], err)) == 0) w->nfiles++;
    }
    if (rc == 0) rc = check_map(w, map, dir, err);
    free(names);
    cJSON_Delete(root);
    return rc;
}

/* name's LayerNorm.gamma / LayerNorm.beta as transformers renames it (_fix_state_dict_key_on_load),
 * in place, unless the file also has the new name. */
static int rename_legacy(st_file *f, st_tensor *t, vit_error *err) {
    static const char *const from[] = {"LayerNorm.gamma", "LayerNorm.beta"};
    static const char *const to[] = {"LayerNorm.weight", "LayerNorm.bias"};
    const size_t len = strlen(t->name);
    for (int k = 0; k < 2; k++) {
        const size_t n = strlen(from[k]);
        if (len < n || strcmp(t->name + len - n, from[k]) != 0) continue;
        char *renamed = malloc(len - n + strlen(to[k]) + 1);
        if (!renamed) return vit_fail(err, "%s: out of memory", f->path);
        memcpy(renamed, t->name, len - n);
        strcpy(renamed + len - n, to[k]);
        if (st_find(f, renamed)) return free(renamed), 0;
        free(t->name);
        t->name = renamed;
    }
    return 0;
}

/* Tensors numbered across files; renamed; each name in one file only. */
static int index_tensors(weights *w, vit_error *err) {
    if (!(w->first = calloc((size_t)w->nfiles + 1, sizeof *w->first)))
        return vit_fail(err, "%s: out of memory", w->path);
    for (int k = 0; k < w->nfiles; k++) {
        w->first[k] = w->count;
        w->count += w->files[k].count;
        for (int i = 0; i < w->files[k].count; i++)
            if (rename_legacy(&w->files[k], &w->files[k].tensors[i], err) != 0) return -1;
    }
    for (int k = 1; k < w->nfiles; k++)
        for (int i = 0; i < w->files[k].count; i++)
            for (int j = 0; j < k; j++)
                if (st_find(&w->files[j], w->files[k].tensors[i].name))
                    return vit_fail(err, "%s: tensor '%s' is in both %s and %s", w->path,
                                    w->files[k].tensors[i].name, w->files[j].path,
                                    w->files[k].path);
    return 0;
}

/* The folder's weights by the first of names[0..n) it has (none: the error of the first). */
static int open_first(const char *dir, const char *const *names, size_t n, int lazy, weights *w,
                      vit_error *err) {
    memset(w, 0, sizeof *w);
    const char *name = first_file(dir, names, n);
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name ? name : names[0]);
    if (!(w->path = strdup(path))) return vit_fail(err, "%s: out of memory", path);
    w->torch = name && strstr(name, "pytorch_model") != NULL;
    w->sharded = name && strstr(name, ".index.json") != NULL;
    int rc;
    if (w->sharded) {
        rc = open_shards(w, dir, err);
    } else if (!(w->files = calloc(1, sizeof *w->files))) {
        rc = vit_fail(err, "%s: out of memory", path);
    } else {
        rc = open_one(path, w->torch, lazy, &w->files[0], err);
        w->nfiles = rc == 0;
    }
    if (rc == 0) rc = index_tensors(w, err);
    if (rc != 0) weights_close(w);
    return rc;
}

int weights_open(const char *dir, int lazy, weights *w, vit_error *err) {
    return open_first(dir, layouts, sizeof layouts / sizeof layouts[0], lazy, w, err);
}

int weights_open_open_clip(const char *dir, int lazy, weights *w, vit_error *err) {
    return open_first(dir, open_clip_layouts, sizeof open_clip_layouts / sizeof *open_clip_layouts,
                      lazy, w, err);
}

const st_tensor *weights_find(const weights *w, const char *name) {
    for (int k = 0; k < w->nfiles; k++) {
        const st_tensor *t = st_find(&w->files[k], name);
        if (t) return t;
    }
    return NULL;
}

const st_tensor *weights_tensor(const weights *w, int i) {
    int k = w->nfiles - 1;
    while (k > 0 && w->first[k] > i) k--;
    return &w->files[k].tensors[i - w->first[k]];
}

static int file_of(const weights *w, const st_tensor *t) {
    for (int k = 0; k < w->nfiles; k++)
        if (t >= w->files[k].tensors && t < w->files[k].tensors + w->files[k].count) return k;
    return -1; /* not ours: a caller's bug */
}

int weights_index(const weights *w, const st_tensor *t) {
    const int k = file_of(w, t);
    return w->first[k] + (int)(t - w->files[k].tensors);
}

st_file *weights_file(const weights *w, const st_tensor *t) {
    return &w->files[file_of(w, t)];
}

int weights_read(const weights *w, const st_tensor *t, vit_error *err) {
    return st_read(weights_file(w, t), t, err);
}

void weights_release(const weights *w, const st_tensor *t) {
    st_release(weights_file(w, t), t);
}

int weights_to_f32(const weights *w, const st_tensor *t, float *out, vit_error *err) {
    return st_to_f32(weights_file(w, t), t, out, err);
}

void weights_format(const weights *w, char *buf, size_t size) {
    snprintf(buf, size, "pt");
    if (!w->torch && w->nfiles) st_metadata(&w->files[0], "format", buf, size, NULL);
}
