/* vit search's cache of a folder's image embeddings (embed_cache.h). */
#include "vit/data/embed_cache.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vit/io/safetensors.h"

#define FORMAT "1"

int embed_cache_init(embed_cache *c, const char *key, int dim, vit_error *err) {
    memset(c, 0, sizeof *c);
    if (dim < 1 || dim > EMBED_CACHE_MAX_DIM)
        return vit_fail(err, "embedding cache: rows of %d floats", dim);
    c->dim = dim;
    if (!(c->key = strdup(key))) return vit_fail(err, "embedding cache: out of memory");
    return 0;
}

static int grow(embed_cache *c, size_t cap) {
    char **paths = realloc(c->paths, sizeof *paths * cap);
    if (paths) c->paths = paths;
    int64_t *sizes = realloc(c->sizes, sizeof *sizes * cap);
    if (sizes) c->sizes = sizes;
    int64_t *mtimes = realloc(c->mtimes, sizeof *mtimes * cap);
    if (mtimes) c->mtimes = mtimes;
    float *rows = realloc(c->rows, sizeof *rows * (size_t)c->dim * cap);
    if (rows) c->rows = rows;
    if (!paths || !sizes || !mtimes || !rows) return -1;
    c->cap = cap;
    return 0;
}

int embed_cache_add(embed_cache *c, const char *path, int64_t size, int64_t mtime, const float *row,
                    vit_error *err) {
    if (c->count == c->cap && grow(c, c->cap ? c->cap * 2 : 256) != 0)
        return vit_fail(err, "embedding cache: out of memory");
    if (!(c->paths[c->count] = strdup(path)))
        return vit_fail(err, "embedding cache: out of memory");
    c->sizes[c->count] = size;
    c->mtimes[c->count] = mtime;
    memcpy(c->rows + c->count * (size_t)c->dim, row, sizeof(float) * (size_t)c->dim);
    c->count++;
    return 0;
}

void embed_cache_free(embed_cache *c) {
    for (size_t i = 0; c->paths && i < c->count; i++) free(c->paths[i]);
    free(c->paths);
    free(c->sizes);
    free(c->mtimes);
    free(c->rows);
    free(c->order);
    free(c->key);
    memset(c, 0, sizeof *c);
}

/* ---- reading ---- */

/* A metadata string of f, malloc'ed (a value is shorter than the file). */
static char *metadata(const st_file *f, const char *key, vit_error *err) {
    char *buf = malloc(f->map_size + 1);
    if (!buf) return vit_fail(err, "%s: out of memory", f->path), NULL;
    if (st_metadata(f, key, buf, f->map_size + 1, err) != 0) return free(buf), NULL;
    return buf;
}

/* The tensor name of f: dtype, ndim dimensions, the first rows long. */
static const st_tensor *tensor(const st_file *f, const char *name, st_dtype dtype, int ndim,
                               vit_error *err) {
    const st_tensor *t = st_find(f, name);
    if (!t) return vit_fail(err, "%s: no tensor '%s'", f->path, name), NULL;
    if (t->dtype != dtype || t->ndim != ndim)
        return vit_fail(err, "%s: tensor '%s' is %s with %d dimensions, expected %s with %d",
                        f->path, name, st_dtype_name(t->dtype), t->ndim, st_dtype_name(dtype),
                        ndim),
               NULL;
    return t;
}

static int by_path(const void *a, const void *b, void *cache) {
    char *const *paths = ((const embed_cache *)cache)->paths;
    return strcmp(paths[*(const size_t *)a], paths[*(const size_t *)b]);
}

/* c->order: the rows sorted by path; two equal paths are an error. */
static int index_paths(embed_cache *c, const char *file, vit_error *err) {
    if (!(c->order = malloc(sizeof *c->order * (c->count ? c->count : 1))))
        return vit_fail(err, "%s: out of memory", file);
    for (size_t i = 0; i < c->count; i++) c->order[i] = i;
    qsort_r(c->order, c->count, sizeof *c->order, by_path, c);
    for (size_t i = 1; i < c->count; i++)
        if (strcmp(c->paths[c->order[i - 1]], c->paths[c->order[i]]) == 0)
            return vit_fail(err, "%s: 'paths' lists '%s' twice", file, c->paths[c->order[i]]);
    return 0;
}

/* The "paths" list: n distinct non-empty strings. */
static int read_paths(const st_file *f, embed_cache *c, size_t n, vit_error *err) {
    char *json = metadata(f, "paths", err);
    if (!json) return -1;
    cJSON *list = cJSON_Parse(json);
    free(json);
    int rc = 0;
    if (!cJSON_IsArray(list))
        rc = vit_fail(err, "%s: metadata 'paths' is not a JSON list", f->path);
    else if ((size_t)cJSON_GetArraySize(list) != n)
        rc = vit_fail(err, "%s: 'paths' lists %d images for %zu rows", f->path,
                      cJSON_GetArraySize(list), n);
    if (rc == 0 && !(c->paths = calloc(n ? n : 1, sizeof *c->paths)))
        rc = vit_fail(err, "%s: out of memory", f->path);
    const cJSON *item = list ? list->child : NULL;
    for (size_t i = 0; rc == 0 && i < n; i++, item = item->next) {
        const size_t len = cJSON_IsString(item) ? strlen(item->valuestring) : 0;
        if (len == 0 || len >= EMBED_CACHE_MAX_PATH)
            rc = vit_fail(err, "%s: 'paths' entry %zu is not a path (a string of 1..%d bytes)",
                          f->path, i, EMBED_CACHE_MAX_PATH - 1);
        else if (!(c->paths[i] = strdup(item->valuestring)))
            rc = vit_fail(err, "%s: out of memory", f->path);
        else
            c->count = i + 1;
    }
    cJSON_Delete(list);
    return rc;
}

static int read_file(const st_file *f, embed_cache *c, vit_error *err) {
    char *format = metadata(f, "vit_embed_cache", err);
    if (!format)
        return vit_fail(err, "%s: not an embedding cache (no metadata 'vit_embed_cache')", f->path);
    const int known = strcmp(format, FORMAT) == 0;
    if (!known)
        vit_fail(err, "%s: embedding cache format '%.32s', this vit reads '" FORMAT "'", f->path,
                 format);
    free(format);
    if (!known) return -1;
    if (!(c->key = metadata(f, "key", err))) return -1;
    const st_tensor *rows = tensor(f, "embeddings", ST_F32, 2, err),
                    *sizes = tensor(f, "sizes", ST_I64, 1, err),
                    *mtimes = tensor(f, "mtimes", ST_I64, 1, err);
    if (!rows || !sizes || !mtimes) return -1;
    const int64_t n = rows->shape[0], dim = rows->shape[1];
    if (dim < 1 || dim > EMBED_CACHE_MAX_DIM)
        return vit_fail(err, "%s: rows of %lld floats (1..%d)", f->path, (long long)dim,
                        EMBED_CACHE_MAX_DIM);
    if (sizes->shape[0] != n || mtimes->shape[0] != n)
        return vit_fail(err, "%s: %lld rows but %lld sizes and %lld mtimes", f->path, (long long)n,
                        (long long)sizes->shape[0], (long long)mtimes->shape[0]);
    c->dim = (int)dim;
    if (read_paths(f, c, (size_t)n, err) != 0) return -1;
    c->cap = c->count;
    c->sizes = malloc(sizeof *c->sizes * (n ? n : 1));
    c->mtimes = malloc(sizeof *c->mtimes * (n ? n : 1));
    c->rows = malloc(sizeof *c->rows * (size_t)(n ? n * dim : 1));
    if (!c->sizes || !c->mtimes || !c->rows) return vit_fail(err, "%s: out of memory", f->path);
    memcpy(c->sizes, sizes->data, sizes->nbytes);
    memcpy(c->mtimes, mtimes->data, mtimes->nbytes);
    memcpy(c->rows, rows->data, rows->nbytes);
    return index_paths(c, f->path, err);
}

int embed_cache_read(const char *file, embed_cache *c, vit_error *err) {
    memset(c, 0, sizeof *c);
    st_file f;
    if (st_open(file, &f, err) != 0) return -1;
    const int rc = read_file(&f, c, err);
    st_close(&f);
    if (rc != 0) embed_cache_free(c);
    return rc;
}

long embed_cache_find(const embed_cache *c, const char *path, int64_t size, int64_t mtime) {
    size_t lo = 0, hi = c->order ? c->count : 0;
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        const int cmp = strcmp(c->paths[c->order[mid]], path);
        if (cmp == 0) {
            const size_t i = c->order[mid];
            return c->sizes[i] == size && c->mtimes[i] == mtime ? (long)i : -1;
        }
        if (cmp < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

/* ---- writing ---- */

int embed_cache_write(const char *file, const embed_cache *c, vit_error *err) {
    cJSON *list = cJSON_CreateArray();
    for (size_t i = 0; list && i < c->count; i++) {
        cJSON *s = cJSON_CreateString(c->paths[i]);
        if (!s || !cJSON_AddItemToArray(list, s)) {
            cJSON_Delete(s);
            cJSON_Delete(list);
            list = NULL;
        }
    }
    char *paths = list ? cJSON_PrintUnformatted(list) : NULL;
    cJSON_Delete(list);
    if (!paths) return vit_fail(err, "%s: out of memory", file);
    const int64_t n = (int64_t)c->count;
    const st_entry entries[] = {
        {.name = "embeddings", .ndim = 2, .shape = {n, c->dim}, .data = c->rows},
        {.name = "sizes", .ndim = 1, .shape = {n}, .data = c->sizes, .dtype = ST_I64},
        {.name = "mtimes", .ndim = 1, .shape = {n}, .data = c->mtimes, .dtype = ST_I64},
    };
    const char *keys[] = {"vit_embed_cache", "key", "paths"}, *values[] = {FORMAT, c->key, paths};
    /* written under a name of this process's own, then renamed: two searches of one folder at
     * once each replace the file whole (st_write_f32_meta's own temporary is FILE.tmp) */
    char tmp[EMBED_CACHE_MAX_PATH + 32];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.%ld", file, (long)getpid()) >= sizeof tmp) {
        free(paths);
        return vit_fail(err, "%s: path too long", file);
    }
    int rc = st_write_f32_meta(tmp, entries, 3, keys, values, 3, err);
    free(paths);
    if (rc == 0 && rename(tmp, file) != 0) {
        rc = vit_fail(err, "%s: %s", file, strerror(errno));
        unlink(tmp);
    }
    return rc;
}
