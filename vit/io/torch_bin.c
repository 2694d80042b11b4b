#include "vit/io/torch_bin.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vit/io/torch_pickle.h"

#define MAX_PICKLE  ((uint64_t)256 << 20) /* data.pkl of a model with 100k tensors: ~20 MB */
#define MAX_ENTRIES 1000000
#define MAX_CENTRAL ((uint64_t)256 << 20)

/* Where a storage's bytes are in the file. */
typedef struct {
    char *key;
    uint64_t at, bytes;
    st_dtype dtype;
} stored;

/* A zip entry of the central directory: its name, where its local header is, its sizes. */
typedef struct {
    char *name;
    uint64_t local, size, csize;
    int method;
} zip_entry;

typedef struct {
    st_file *f;
    int fd;
    uint64_t size;
    zip_entry *entries;
    size_t nentries;
    char prefix[512]; /* "archive/": the folder of data.pkl */
    stored *storages;
    size_t nstorages;
    size_t owned_bytes;
    vit_error *err;
} bin;

static uint64_t le(const uint8_t *p, int bytes) {
    uint64_t x = 0;
    for (int i = bytes - 1; i >= 0; i--) x = x << 8 | p[i];
    return x;
}

/* bytes [at, at + n) of the file into buf: the whole of them or an error. */
static int read_exact(bin *b, void *buf, uint64_t n, uint64_t at) {
    if (at > b->size || n > b->size - at)
        return vit_fail(b->err, "%s: truncated (%llu bytes wanted at %llu of %llu)", b->f->path,
                        (unsigned long long)n, (unsigned long long)at, (unsigned long long)b->size);
    uint64_t got = 0;
    while (got < n) {
        const ssize_t r = pread(b->fd, (char *)buf + got, (size_t)(n - got), (off_t)(at + got));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        got += (uint64_t)r;
    }
    if (got != n) return vit_fail(b->err, "%s: the file changed while it was read", b->f->path);
    return 0;
}

static void *read_block(bin *b, uint64_t n, uint64_t at) {
    void *buf = malloc(n ? (size_t)n : 1);
    if (!buf) return vit_fail(b->err, "%s: out of memory", b->f->path), NULL;
    if (read_exact(b, buf, n, at) != 0) return free(buf), NULL;
    return buf;
}

/* ---- zip ---- */

/* The end of central directory record: the directory's entry count, size and offset (the zip64
 * record's when the classic one says 0xffff.../). */
static int zip_directory(bin *b, uint64_t *count, uint64_t *cd_size, uint64_t *cd_at) {
    const uint64_t tail = b->size < 65557 ? b->size : 65557;
    uint8_t *t = read_block(b, tail, b->size - tail);
    if (!t) return -1;
    int64_t e = (int64_t)tail - 22;
    while (e >= 0 && le(t + e, 4) != 0x06054b50) e--;
    if (e < 0) return free(t), vit_fail(b->err, "%s: a zip file without its directory", b->f->path);
    *count = le(t + e + 10, 2), *cd_size = le(t + e + 12, 4), *cd_at = le(t + e + 16, 4);
    const uint64_t eocd = b->size - tail + (uint64_t)e;
    free(t);
    if (*count != 0xffff && *cd_size != 0xffffffff && *cd_at != 0xffffffff) return 0;
    uint8_t loc[20], rec[56];
    if (eocd < 20 || read_exact(b, loc, 20, eocd - 20) != 0 || le(loc, 4) != 0x07064b50 ||
        read_exact(b, rec, 56, le(loc + 8, 8)) != 0 || le(rec, 4) != 0x06064b50)
        return vit_fail(b->err, "%s: a zip64 file without its zip64 directory", b->f->path);
    *count = le(rec + 32, 8), *cd_size = le(rec + 40, 8), *cd_at = le(rec + 48, 8);
    return 0;
}

/* The zip64 extra field's values for the fields the entry marks 0xffffffff. */
static void zip64_extra(const uint8_t *x, size_t n, zip_entry *z) {
    for (size_t i = 0; i + 4 <= n;) {
        const size_t id = le(x + i, 2), len = le(x + i + 2, 2);
        if (i + 4 + len > n) return;
        if (id == 1) {
            size_t k = i + 4;
            uint64_t *fields[3] = {&z->size, &z->csize, &z->local};
            for (int f = 0; f < 3; f++)
                if (*fields[f] == 0xffffffff && k + 8 <= i + 4 + len)
                    *fields[f] = le(x + k, 8), k += 8;
        }
        i += 4 + len;
    }
}

static int compare_entry(const void *a, const void *b) {
    return strcmp(((const zip_entry *)a)->name, ((const zip_entry *)b)->name);
}

static int zip_entries(bin *b) {
    uint64_t count = 0, cd_size = 0, cd_at = 0;
    if (zip_directory(b, &count, &cd_size, &cd_at) != 0) return -1;
    if (count > MAX_ENTRIES || cd_size > MAX_CENTRAL)
        return vit_fail(b->err, "%s: a zip directory of %llu entries is too large", b->f->path,
                        (unsigned long long)count);
    uint8_t *cd = read_block(b, cd_size, cd_at);
    if (!cd) return -1;
    b->entries = calloc(count ? (size_t)count : 1, sizeof *b->entries);
    int rc = b->entries ? 0 : vit_fail(b->err, "%s: out of memory", b->f->path);
    for (uint64_t i = 0, p = 0; rc == 0 && i < count; i++) {
        if (p + 46 > cd_size || le(cd + p, 4) != 0x02014b50) {
            rc = vit_fail(b->err, "%s: the zip directory is corrupt", b->f->path);
            break;
        }
        const size_t nlen = le(cd + p + 28, 2), elen = le(cd + p + 30, 2),
                     clen = le(cd + p + 32, 2);
        if (p + 46 + nlen + elen + clen > cd_size) {
            rc = vit_fail(b->err, "%s: the zip directory is corrupt", b->f->path);
            break;
        }
        zip_entry *z = &b->entries[b->nentries];
        *z = (zip_entry){.method = (int)le(cd + p + 10, 2),
                         .csize = le(cd + p + 20, 4),
                         .size = le(cd + p + 24, 4),
                         .local = le(cd + p + 42, 4)};
        zip64_extra(cd + p + 46 + nlen, elen, z);
        if (!(z->name = strndup((const char *)cd + p + 46, nlen)))
            rc = vit_fail(b->err, "%s: out of memory", b->f->path);
        else
            b->nentries++;
        p += 46 + nlen + elen + clen;
    }
    free(cd);
    if (rc == 0) qsort(b->entries, b->nentries, sizeof *b->entries, compare_entry);
    return rc;
}

static const zip_entry *zip_find(const bin *b, const char *name) {
    const zip_entry key = {.name = (char *)name};
    return bsearch(&key, b->entries, b->nentries, sizeof *b->entries, compare_entry);
}

/* Where entry z's bytes start in the file (after its local header); stored entries only. */
static int zip_data(bin *b, const zip_entry *z, uint64_t *at) {
    uint8_t h[30];
    if (z->method != 0 || z->csize != z->size)
        return vit_fail(b->err, "%s: entry %s is compressed (method %d): torch.save stores them",
                        b->f->path, z->name, z->method);
    if (read_exact(b, h, 30, z->local) != 0) return -1;
    if (le(h, 4) != 0x04034b50)
        return vit_fail(b->err, "%s: entry %s has no local header", b->f->path, z->name);
    *at = z->local + 30 + le(h + 26, 2) + le(h + 28, 2);
    if (*at > b->size || z->size > b->size - *at)
        return vit_fail(b->err, "%s: entry %s runs past the end of the file", b->f->path, z->name);
    return 0;
}

/* The one ".../data.pkl" at the top of an archive folder: its folder name goes to b->prefix. */
static const zip_entry *zip_pickle(bin *b) {
    const zip_entry *found = NULL;
    for (size_t i = 0; i < b->nentries; i++) {
        const char *name = b->entries[i].name, *slash = strchr(name, '/');
        if (!slash || strcmp(slash, "/data.pkl") != 0) continue;
        if (found)
            return vit_fail(b->err, "%s: two data.pkl (%s, %s)", b->f->path, found->name, name),
                   NULL;
        found = &b->entries[i];
    }
    if (!found) return vit_fail(b->err, "%s: a zip file without data.pkl", b->f->path), NULL;
    const size_t n = strlen(found->name) - strlen("data.pkl");
    if (n >= sizeof b->prefix)
        return vit_fail(b->err, "%s: a folder name too long", b->f->path), NULL;
    memcpy(b->prefix, found->name, n);
    b->prefix[n] = 0;
    return found;
}

/* PyTorch writes ARCHIVE/byteorder ("little" or "big") since 2.1; files before are little. */
static int zip_byteorder(bin *b) {
    char name[600], order[8] = {0};
    snprintf(name, sizeof name, "%sbyteorder", b->prefix);
    const zip_entry *z = zip_find(b, name);
    uint64_t at;
    if (!z) return 0;
    if (zip_data(b, z, &at) != 0) return -1;
    if (z->size < sizeof order && read_exact(b, order, z->size, at) != 0) return -1;
    if (strcmp(order, "little") != 0)
        return vit_fail(b->err, "%s: byte order '%.7s': only little-endian files are read",
                        b->f->path, order);
    return 0;
}

/* ---- tensors ---- */

static int contiguous(const tp_tensor *t) {
    int64_t expect = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
        if (t->shape[d] != 1 && t->stride[d] != expect) return 0;
        expect *= t->shape[d];
    }
    return 1;
}

/* The storage of tensor t: its bytes' place in the file (b->storages, filled by the format). */
static const stored *storage_of(bin *b, const tp_tensor *t) {
    const tp_storage *s = t->storage->storage;
    for (size_t i = 0; i < b->nstorages; i++)
        if (strcmp(b->storages[i].key, s->key) == 0) return &b->storages[i];
    return vit_fail(b->err, "%s: storage '%s' is not in the file", b->f->path, s->key), NULL;
}

/* Element index of the last element t reaches (t has elements). */
static int64_t last_element(const tp_tensor *t) {
    int64_t last = t->offset;
    for (int d = 0; d < t->ndim; d++) last += (t->shape[d] - 1) * t->stride[d];
    return last;
}

/* t's elements gathered, in row-major order, from the storage bytes at src into out. */
static void gather(const tp_tensor *t, const uint8_t *src, size_t es, uint8_t *out, int64_t numel) {
    int64_t idx[ST_MAX_DIMS] = {0};
    for (int64_t k = 0; k < numel; k++) {
        int64_t at = 0;
        for (int d = 0; d < t->ndim; d++) at += idx[d] * t->stride[d];
        memcpy(out + (size_t)k * es, src + (size_t)at * es, es);
        for (int d = t->ndim - 1; d >= 0 && ++idx[d] == t->shape[d]; d--) idx[d] = 0;
    }
}

/* A contiguous copy of tensor t (storage s) read now: a strided view, or bytes shared. */
static int copy_tensor(bin *b, st_tensor *out, const tp_tensor *t, const stored *s) {
    const size_t es = st_dtype_size(out->dtype);
    if (b->owned_bytes + out->nbytes > (b->size > (64u << 20) ? b->size : (64u << 20)))
        return vit_fail(b->err,
                        "%s: tensor '%s': its strided or shared copies would exceed the "
                        "file's size",
                        b->f->path, out->name);
    uint8_t *dst = malloc(out->nbytes ? out->nbytes : 1);
    if (!dst) return vit_fail(b->err, "%s: out of memory", b->f->path);
    if (out->numel) {
        const uint64_t lo = s->at + (uint64_t)t->offset * es;
        uint8_t *src =
            read_block(b, ((uint64_t)last_element(t) - (uint64_t)t->offset + 1) * es, lo);
        if (!src) return free(dst), -1;
        tp_tensor rel = *t;
        rel.offset = 0;
        gather(&rel, src, es, dst, out->numel);
        free(src);
    }
    out->data = dst;
    out->owned = 1;
    b->owned_bytes += out->nbytes;
    return 0;
}

/* The st_tensor for name: t, checked against its storage's extent; its data where the file
 * holds it (read by st_read), or copied (see copy_tensor). */
static int make_tensor(bin *b, st_tensor *out, const tp_obj *name, const tp_tensor *t, int copy) {
    const stored *s = storage_of(b, t);
    if (!s) return -1;
    const size_t es = st_dtype_size(s->dtype);
    int64_t numel = 1;
    for (int d = 0; d < t->ndim; d++) {
        if (t->shape[d] && numel > (INT64_MAX / 16) / t->shape[d])
            return vit_fail(b->err, "%s: tensor '%s' is too large", b->f->path, name->s);
        numel *= t->shape[d];
        out->shape[d] = t->shape[d];
    }
    out->dtype = s->dtype, out->ndim = t->ndim, out->numel = numel;
    out->nbytes = (size_t)numel * es;
    if (numel && ((uint64_t)last_element(t) + 1 > s->bytes / es || out->nbytes > b->size))
        return vit_fail(b->err, "%s: tensor '%s' reaches past its storage '%s'", b->f->path,
                        name->s, s->key);
    if (!(out->name = strdup(name->s))) return vit_fail(b->err, "%s: out of memory", b->f->path);
    if (copy || !contiguous(t)) return copy_tensor(b, out, t, s);
    out->data = (const uint8_t *)b->f->map + s->at + (uint64_t)t->offset * es;
    return 0;
}

typedef struct {
    uint64_t lo, hi;
    size_t index;
} extent;

static int compare_extent(const void *a, const void *b) {
    const extent *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Per tensor of the dict, 1 when its bytes overlap another's (tied weights, views of one
 * storage): those are copied, so releasing one never zeroes another's. */
static unsigned char *overlapping(bin *b, const tp_obj *dict) {
    const size_t n = dict->n / 2;
    extent *e = calloc(n + 1, sizeof *e);
    unsigned char *shared = calloc(n + 1, 1);
    if (!e || !shared) {
        free(e), free(shared);
        return vit_fail(b->err, "%s: out of memory", b->f->path), NULL;
    }
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        const tp_tensor *t = dict->items[2 * i + 1]->tensor;
        const stored *s = storage_of(b, t);
        if (!s) return free(e), free(shared), NULL;
        int empty = 0;
        for (int d = 0; d < t->ndim; d++) empty |= t->shape[d] == 0;
        if (empty) continue;
        const size_t es = st_dtype_size(s->dtype);
        e[m++] = (extent){s->at + (uint64_t)t->offset * es,
                          s->at + ((uint64_t)last_element(t) + 1) * es, i};
    }
    qsort(e, m, sizeof *e, compare_extent);
    uint64_t reach = 0;
    size_t reach_of = 0;
    for (size_t k = 0; k < m; k++) {
        if (k && e[k].lo < reach) shared[e[k].index] = shared[reach_of] = 1;
        if (!k || e[k].hi > reach) reach = e[k].hi, reach_of = e[k].index;
    }
    free(e);
    return shared;
}

/* Every entry of the state dict as a tensor of b->f. */
static int add_tensors(bin *b, const tp_obj *dict) {
    if (!dict || dict->kind != TP_DICT)
        return vit_fail(b->err, "%s: the pickle is not a state dict (a dict of tensors)",
                        b->f->path);
    for (size_t i = 0; i < dict->n; i += 2) {
        const tp_obj *k = dict->items[i], *v = dict->items[i + 1];
        if (k->kind != TP_STR || strlen(k->s) != k->len || !k->len)
            return vit_fail(b->err, "%s: a state dict key that is not a name", b->f->path);
        if (v->kind != TP_TENSOR)
            return vit_fail(b->err, "%s: '%s' is not a tensor", b->f->path, k->s);
        for (size_t j = 0; j < i; j += 2)
            if (strcmp(dict->items[j]->s, k->s) == 0)
                return vit_fail(b->err, "%s: tensor '%s' twice", b->f->path, k->s);
    }
    unsigned char *shared = overlapping(b, dict);
    if (!shared) return -1;
    b->f->tensors = calloc(dict->n / 2 + 1, sizeof *b->f->tensors);
    int rc = b->f->tensors ? 0 : vit_fail(b->err, "%s: out of memory", b->f->path);
    for (size_t i = 0; rc == 0 && i < dict->n / 2; i++) {
        rc = make_tensor(b, &b->f->tensors[i], dict->items[2 * i], dict->items[2 * i + 1]->tensor,
                         shared[i]);
        b->f->count = (int)i + 1; /* st_close frees what make_tensor made, even on failure */
    }
    free(shared);
    return rc;
}

/* Each storage a tensor of the dict names, once (key, dtype, numel), into b->storages with at
 * and bytes zero for the format to fill. */
static int collect_storages(bin *b, const tp_obj *dict) {
    if (!dict || dict->kind != TP_DICT) return add_tensors(b, dict);
    b->storages = calloc(dict->n / 2 + 1, sizeof *b->storages);
    if (!b->storages) return vit_fail(b->err, "%s: out of memory", b->f->path);
    for (size_t i = 1; i < dict->n; i += 2) {
        const tp_obj *v = dict->items[i];
        if (v->kind != TP_TENSOR) return add_tensors(b, dict); /* names the key */
        const tp_storage *s = v->tensor->storage->storage;
        size_t k = 0;
        while (k < b->nstorages && strcmp(b->storages[k].key, s->key) != 0) k++;
        if (k < b->nstorages) {
            if (b->storages[k].dtype != s->dtype)
                return vit_fail(b->err, "%s: storage '%s' with two dtypes", b->f->path, s->key);
            continue;
        }
        b->storages[b->nstorages++] = (stored){(char *)s->key, 0, 0, s->dtype};
        if ((uint64_t)s->numel > b->size / st_dtype_size(s->dtype))
            return vit_fail(b->err, "%s: storage '%s' is larger than the file", b->f->path, s->key);
        b->storages[b->nstorages - 1].bytes = (uint64_t)s->numel * st_dtype_size(s->dtype);
    }
    return 0;
}

/* Storage s's entry ARCHIVE/data/KEY: where its bytes are, and that it holds them all. */
static int zip_storage(bin *b, stored *s) {
    char name[1200];
    snprintf(name, sizeof name, "%sdata/%s", b->prefix, s->key);
    const zip_entry *z = zip_find(b, name);
    if (!z) return vit_fail(b->err, "%s: storage '%s' has no entry %s", b->f->path, s->key, name);
    if (zip_data(b, z, &s->at) != 0) return -1;
    if (z->size < s->bytes)
        return vit_fail(b->err, "%s: entry %s holds %llu bytes, its storage %llu", b->f->path, name,
                        (unsigned long long)z->size, (unsigned long long)s->bytes);
    s->bytes = z->size;
    return 0;
}

static int read_zip(bin *b) {
    tp_arena arena = {0};
    tp_obj *dict = NULL;
    uint64_t at;
    size_t end;
    const zip_entry *pkl;
    uint8_t *bytes = NULL;
    int rc = zip_entries(b);
    if (rc == 0) rc = (pkl = zip_pickle(b)) ? zip_data(b, pkl, &at) : -1;
    if (rc == 0 && pkl->size > MAX_PICKLE)
        rc = vit_fail(b->err, "%s: data.pkl is too large", b->f->path);
    if (rc == 0) rc = (bytes = read_block(b, pkl->size, at)) ? 0 : -1;
    if (rc == 0) rc = zip_byteorder(b);
    if (rc == 0) rc = tp_load(bytes, pkl->size, b->f->path, &arena, &dict, &end, b->err) ? -1 : 0;
    if (rc == 0) rc = collect_storages(b, dict);
    for (size_t i = 0; rc == 0 && i < b->nstorages; i++) rc = zip_storage(b, &b->storages[i]);
    if (rc == 0) rc = add_tensors(b, dict);
    free(bytes);
    tp_free(&arena);
    return rc;
}

/* ---- the legacy format ---- */

/* The next pickle from *pos, the file read into *buf as far as it needs (doubling). */
static int next_pickle(bin *b, uint8_t **buf, uint64_t *have, uint64_t *pos, tp_arena *a,
                       tp_obj **out) {
    for (;;) {
        size_t end;
        const int rc =
            tp_load(*buf + *pos, (size_t)(*have - *pos), b->f->path, a, out, &end, b->err);
        if (rc == 0) return *pos += end, 0;
        if (rc == -1 || *have == b->size || *have >= MAX_PICKLE) return -1;
        uint64_t more = *have * 2 < b->size ? *have * 2 : b->size;
        uint8_t *grown = realloc(*buf, (size_t)more);
        if (!grown) return vit_fail(b->err, "%s: out of memory", b->f->path);
        *buf = grown;
        if (read_exact(b, grown + *have, more - *have, *have) != 0) return -1;
        *have = more;
    }
}

static const uint8_t legacy_magic[10] = {0x6c, 0xfc, 0x9c, 0x46, 0xf9,
                                         0x20, 0x6a, 0xa8, 0x50, 0x19};

static int legacy_header(bin *b, const tp_obj *magic, const tp_obj *proto, const tp_obj *info) {
    if (magic->kind != TP_LONG || magic->len != 10 || memcmp(magic->s, legacy_magic, 10) != 0)
        return vit_fail(b->err, "%s: not a torch.save file (no magic number)", b->f->path);
    if (proto->kind != TP_INT || proto->i != 1001)
        return vit_fail(b->err, "%s: legacy protocol %lld (1001 is read)", b->f->path,
                        (long long)proto->i);
    const tp_obj *little = tp_dict_get(info, "little_endian");
    if (!little || little->kind != TP_BOOL || !little->i)
        return vit_fail(b->err, "%s: only little-endian files are read", b->f->path);
    return 0;
}

/* After the keys' pickle at pos: per key, its element count (8 bytes) and its bytes. */
static int legacy_storages(bin *b, const tp_obj *keys, uint64_t pos) {
    if (keys->kind != TP_LIST)
        return vit_fail(b->err, "%s: the storage keys are not a list", b->f->path);
    for (size_t i = 0; i < keys->n; i++) {
        uint8_t n8[8];
        if (keys->items[i]->kind != TP_STR)
            return vit_fail(b->err, "%s: a storage key that is not a string", b->f->path);
        if (read_exact(b, n8, 8, pos) != 0) return -1;
        size_t k = 0;
        while (k < b->nstorages && strcmp(b->storages[k].key, keys->items[i]->s) != 0) k++;
        if (k == b->nstorages)
            return vit_fail(b->err, "%s: storage '%s' belongs to no tensor", b->f->path,
                            keys->items[i]->s);
        const uint64_t count = le(n8, 8), es = st_dtype_size(b->storages[k].dtype);
        if (count > b->size / es || count * es != b->storages[k].bytes || b->storages[k].at)
            return vit_fail(b->err, "%s: storage '%s' holds %llu elements, not its tensor's",
                            b->f->path, keys->items[i]->s, (unsigned long long)count);
        b->storages[k].at = pos + 8;
        if (read_exact(b, n8, 0, pos + 8 + count * es) != 0) return -1; /* within the file */
        pos += 8 + count * es;
    }
    for (size_t k = 0; k < b->nstorages; k++)
        if (!b->storages[k].at)
            return vit_fail(b->err, "%s: storage '%s' is missing", b->f->path, b->storages[k].key);
    return 0;
}

static int read_legacy(bin *b) {
    uint64_t have = b->size < 65536 ? b->size : 65536, pos = 0;
    uint8_t *buf = read_block(b, have, 0);
    tp_arena arena = {0};
    tp_obj *magic, *proto, *info, *dict = NULL, *keys;
    int rc = buf ? 0 : -1;
    if (rc == 0) rc = next_pickle(b, &buf, &have, &pos, &arena, &magic);
    if (rc == 0) rc = next_pickle(b, &buf, &have, &pos, &arena, &proto);
    if (rc == 0) rc = next_pickle(b, &buf, &have, &pos, &arena, &info);
    if (rc == 0) rc = legacy_header(b, magic, proto, info);
    if (rc == 0) rc = next_pickle(b, &buf, &have, &pos, &arena, &dict);
    if (rc == 0) rc = collect_storages(b, dict);
    if (rc == 0) rc = next_pickle(b, &buf, &have, &pos, &arena, &keys);
    if (rc == 0) rc = legacy_storages(b, keys, pos);
    if (rc == 0) rc = add_tensors(b, dict);
    free(buf);
    tp_free(&arena);
    return rc;
}

static void bin_free(bin *b) {
    for (size_t i = 0; i < b->nentries; i++) free(b->entries[i].name);
    free(b->entries);
    free(b->storages);
}

int torch_bin_open(const char *path, st_file *file, vit_error *err) {
    memset(file, 0, sizeof *file);
    bin b = {.f = file, .err = err, .fd = -1};
    if (!(file->path = strdup(path))) return vit_fail(err, "%s: out of memory", path);
    struct stat st;
    b.fd = open(path, O_RDONLY);
    int rc = b.fd >= 0 ? 0 : vit_fail(err, "%s: %s", path, strerror(errno));
    if (rc == 0 && (fstat(b.fd, &st) != 0 || !S_ISREG(st.st_mode)))
        rc = vit_fail(err, "%s: not a regular file", path);
    uint8_t head[4] = {0};
    if (rc == 0) {
        b.size = (uint64_t)st.st_size;
        rc = b.size >= 4
                 ? read_exact(&b, head, 4, 0)
                 : vit_fail(err, "%s: truncated (%llu bytes)", path, (unsigned long long)b.size);
    }
    /* as st_open_lazy: a calloc'ed block the file's size, pages filled as tensors are read */
    if (rc == 0 && !(file->map = calloc(1, (size_t)b.size)))
        rc = vit_fail(err, "%s: out of memory for %llu bytes", path, (unsigned long long)b.size);
    file->map_size = (size_t)b.size;
    if (rc == 0) {
        if (le(head, 4) == 0x04034b50)
            rc = read_zip(&b);
        else if (head[0] == 0x80)
            rc = read_legacy(&b);
        else
            rc = vit_fail(err, "%s: not a PyTorch file (neither its zip nor its legacy format)",
                          path);
    }
    bin_free(&b);
    if (rc != 0) {
        if (b.fd >= 0) close(b.fd);
        st_close(file);
        return -1;
    }
    file->lazy = 1;
    file->fd = b.fd;
    return 0;
}
