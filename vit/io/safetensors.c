#include "vit/io/safetensors.h"

#include "vit/base/alloc.h"
#include "vit/base/file.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ST_MAX_HEADER (100u << 20) /* docs/SPEC.md §3: a sane bound on the JSON header */

static const struct {
    const char *name;
    st_dtype dtype;
    size_t size;
} dtype_table[] = {
    {"F32", ST_F32, 4}, {"F16", ST_F16, 2},   {"BF16", ST_BF16, 2}, {"F64", ST_F64, 8},
    {"I64", ST_I64, 8}, {"I32", ST_I32, 4},   {"I16", ST_I16, 2},   {"I8", ST_I8, 1},
    {"U8", ST_U8, 1},   {"BOOL", ST_BOOL, 1},
};

const char *st_dtype_name(st_dtype dtype) {
    for (size_t i = 0; i < sizeof dtype_table / sizeof dtype_table[0]; i++)
        if (dtype_table[i].dtype == dtype) return dtype_table[i].name;
    return "?";
}

size_t st_dtype_size(st_dtype dtype) {
    for (size_t i = 0; i < sizeof dtype_table / sizeof dtype_table[0]; i++)
        if (dtype_table[i].dtype == dtype) return dtype_table[i].size;
    return 0;
}

static int parse_dtype(const char *s, st_dtype *out) {
    for (size_t i = 0; i < sizeof dtype_table / sizeof dtype_table[0]; i++)
        if (strcmp(dtype_table[i].name, s) == 0) {
            *out = dtype_table[i].dtype;
            return 0;
        }
    return -1;
}

void st_close(st_file *file) {
    if (!file) return;
    for (int i = 0; i < file->count; i++) {
        free(file->tensors[i].name);
        if (file->tensors[i].owned) free((void *)file->tensors[i].data);
    }
    free(file->tensors);
    free(file->map);
    free(file->path);
    if (file->lazy) close(file->fd);
    memset(file, 0, sizeof *file);
}

/* Reads a JSON array of non-negative integers that must each fit below `limit`. */
static int read_u64_array(const cJSON *arr, uint64_t *out, int max, int *n, uint64_t limit) {
    if (!cJSON_IsArray(arr)) return -1;
    int count = cJSON_GetArraySize(arr);
    if (count > max) return -1;
    int i = 0;
    const cJSON *item;
    cJSON_ArrayForEach(item, arr) {
        if (!cJSON_IsNumber(item) || item->valuedouble < 0 || item->valuedouble > (double)limit ||
            item->valuedouble != (double)(uint64_t)item->valuedouble)
            return -1;
        out[i++] = (uint64_t)item->valuedouble;
    }
    *n = count;
    return 0;
}

static int parse_tensor(const st_file *file, const cJSON *entry, const uint8_t *data,
                        size_t data_size, st_tensor *t, uint64_t *begin, vit_error *err) {
    const char *name = entry->string;
    if (!cJSON_IsObject(entry))
        return vit_fail(err, "%s: tensor '%s' is not an object", file->path, name);
    const cJSON *dtype = cJSON_GetObjectItemCaseSensitive(entry, "dtype");
    if (!cJSON_IsString(dtype) || parse_dtype(dtype->valuestring, &t->dtype) != 0)
        return vit_fail(err, "%s: tensor '%s' has an unknown dtype", file->path, name);
    uint64_t shape[ST_MAX_DIMS], offsets[2];
    int ndim, noff;
    if (read_u64_array(cJSON_GetObjectItemCaseSensitive(entry, "shape"), shape, ST_MAX_DIMS, &ndim,
                       UINT32_MAX) != 0)
        return vit_fail(err, "%s: tensor '%s' has an invalid shape", file->path, name);
    if (read_u64_array(cJSON_GetObjectItemCaseSensitive(entry, "data_offsets"), offsets, 2, &noff,
                       data_size) != 0 ||
        noff != 2 || offsets[0] > offsets[1])
        return vit_fail(err, "%s: tensor '%s' has data_offsets outside the file", file->path, name);
    uint64_t numel = 1;
    t->ndim = ndim;
    for (int d = 0; d < ndim; d++) {
        t->shape[d] = (int64_t)shape[d];
        if (shape[d] != 0 && numel > (UINT64_MAX / 16) / shape[d])
            return vit_fail(err, "%s: tensor '%s' shape overflows", file->path, name);
        numel *= shape[d];
    }
    t->numel = (int64_t)numel;
    t->nbytes = (size_t)(offsets[1] - offsets[0]);
    if (numel * st_dtype_size(t->dtype) != offsets[1] - offsets[0])
        return vit_fail(err, "%s: tensor '%s' has %zu bytes but shape and dtype need %llu",
                        file->path, name, t->nbytes,
                        (unsigned long long)(numel * st_dtype_size(t->dtype)));
    t->data = data + offsets[0];
    *begin = offsets[0];
    t->name = strdup(name);
    if (!t->name) return vit_fail(err, "%s: out of memory", file->path);
    return 0;
}

typedef struct {
    uint64_t begin, end;
    int index;
} span;

static int compare_span(const void *a, const void *b) {
    const span *x = a, *y = b;
    return x->begin < y->begin ? -1 : x->begin > y->begin;
}

static int check_overlaps(const st_file *file, const uint64_t *begins, vit_error *err) {
    span *spans = malloc(sizeof *spans * (size_t)(file->count ? file->count : 1));
    if (!spans) return vit_fail(err, "%s: out of memory", file->path);
    for (int i = 0; i < file->count; i++)
        spans[i] = (span){begins[i], begins[i] + file->tensors[i].nbytes, i};
    qsort(spans, (size_t)file->count, sizeof *spans, compare_span);
    int rc = 0;
    for (int i = 1; i < file->count; i++)
        if (spans[i].begin < spans[i - 1].end) {
            rc = vit_fail(err, "%s: tensors '%s' and '%s' overlap", file->path,
                          file->tensors[spans[i - 1].index].name,
                          file->tensors[spans[i].index].name);
            break;
        }
    free(spans);
    return rc;
}

static int parse_header(st_file *file, const char *json, size_t json_len, const uint8_t *data,
                        size_t data_size, vit_error *err) {
    cJSON *root = cJSON_ParseWithLength(json, json_len);
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return vit_fail(err, "%s: header is not valid JSON", file->path);
    }
    int n = 0;
    const cJSON *entry;
    cJSON_ArrayForEach(entry, root) n += strcmp(entry->string, "__metadata__") != 0;
    file->tensors = calloc((size_t)(n ? n : 1), sizeof *file->tensors);
    uint64_t *begins = calloc((size_t)(n ? n : 1), sizeof *begins);
    int rc = (file->tensors && begins) ? 0 : vit_fail(err, "%s: out of memory", file->path);
    cJSON_ArrayForEach(entry, root) {
        if (rc != 0) break;
        if (strcmp(entry->string, "__metadata__") == 0) continue;
        rc = parse_tensor(file, entry, data, data_size, &file->tensors[file->count],
                          &begins[file->count], err);
        if (rc == 0) file->count++;
    }
    if (rc == 0) rc = check_overlaps(file, begins, err);
    free(begins);
    cJSON_Delete(root);
    return rc;
}

/* Opens path as a regular file of at least 8 bytes: its descriptor, or -1 (err set, file closed).
 */
static int open_file(const char *path, st_file *file, vit_error *err) {
    memset(file, 0, sizeof *file);
    file->path = strdup(path);
    if (!file->path) return vit_fail(err, "%s: out of memory", path);
    int fd = open(path, O_RDONLY);
    if (fd < 0) return st_close(file), vit_fail(err, "%s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        st_close(file);
        return vit_fail(err, "%s: not a regular file", path);
    }
    if (st.st_size < 8) {
        close(fd);
        st_close(file);
        return vit_fail(err, "%s: truncated safetensors file (%lld bytes)", path,
                        (long long)st.st_size);
    }
    file->map_size = (size_t)st.st_size;
    return fd;
}

/* bytes [from, from + size) of the file into the same place in file->map; a short read (the file
 * shrank) is an error. */
static int read_at(int fd, st_file *file, size_t from, size_t size, vit_error *err) {
    size_t got = 0;
    while (got < size) {
        const ssize_t n =
            pread(fd, (char *)file->map + from + got, size - got, (off_t)(from + got));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got += (size_t)n;
    }
    if (got != size)
        return vit_fail(err, "%s: the file changed while it was read (%zu of %zu bytes)",
                        file->path, from + got, from + size);
    return 0;
}

/* The header (read from the file's start, which map holds) into the tensor table. */
static int read_header(int fd, st_file *file, int lazy, vit_error *err) {
    const uint8_t *bytes = file->map;
    uint64_t header_len = 0;
    for (int i = 7; i >= 0; i--) header_len = header_len << 8 | bytes[i];
    if (header_len > ST_MAX_HEADER || header_len > file->map_size - 8)
        return vit_fail(err, "%s: header length %llu is beyond the file (%zu bytes)", file->path,
                        (unsigned long long)header_len, file->map_size);
    if (lazy && read_at(fd, file, 8, (size_t)header_len, err) != 0) return -1;
    return parse_header(file, (const char *)bytes + 8, (size_t)header_len, bytes + 8 + header_len,
                        file->map_size - 8 - (size_t)header_len, err);
}

/* st_open (lazy 0) reads the whole file, not maps it: a mapped file that shrinks under us
 * (overwritten in place while loading) would end the process with SIGBUS; a short read is an error
 * instead. The tensors are converted into the model's own block at load, so the copy lives only
 * that long. st_open_lazy reads the header alone into a calloc'ed block: untouched, a large block
 * costs no memory (fresh zero pages), each tensor's pages come when st_read fills them, and what
 * is not read yet reads as zeros. */
static int open_st(const char *path, st_file *file, int lazy, vit_error *err) {
    const int fd = open_file(path, file, err);
    if (fd < 0) return -1;
    file->map = lazy ? calloc(1, file->map_size) : malloc(file->map_size);
    const int rc = file->map
                       ? read_at(fd, file, 0, lazy ? 8 : file->map_size, err)
                       : vit_fail(err, "%s: out of memory for %zu bytes", path, file->map_size);
    if (rc != 0 || read_header(fd, file, lazy, err) != 0) {
        close(fd);
        st_close(file);
        return -1;
    }
    if (!lazy) return close(fd), 0;
    file->lazy = 1;
    file->fd = fd;
    return 0;
}

int st_open(const char *path, st_file *file, vit_error *err) {
    return open_st(path, file, 0, err);
}

int st_open_lazy(const char *path, st_file *file, vit_error *err) {
    return open_st(path, file, 1, err);
}

int st_read(st_file *file, const st_tensor *t, vit_error *err) {
    if (!file->lazy || t->owned) return 0;
    return read_at(file->fd, file, (size_t)((const char *)t->data - (const char *)file->map),
                   t->nbytes, err);
}

const st_tensor *st_find(const st_file *file, const char *name) {
    for (int i = 0; i < file->count; i++)
        if (strcmp(file->tensors[i].name, name) == 0) return &file->tensors[i];
    return NULL;
}

static float half_to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1f, mant = h & 0x3ff, bits;
    if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (mant << 13);
    } else if (exp != 0) {
        bits = sign | ((exp + 112) << 23) | (mant << 13);
    } else if (mant == 0) {
        bits = sign;
    } else { /* subnormal: normalise the mantissa */
        int e = -1;
        do {
            mant <<= 1;
            e++;
        } while (!(mant & 0x400));
        bits = sign | ((uint32_t)(112 - e) << 23) | ((mant & 0x3ff) << 13);
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

void st_release(st_file *file, const st_tensor *t) {
    (void)file;           /* the bytes are its own copy: read, not mapped */
    if (t->owned) return; /* nothing to read them again from: kept until st_close */
    vit_zero_lazily((void *)t->data, t->nbytes); /* the pages inside them go back */
}

int st_to_f32(const st_file *file, const st_tensor *t, float *out, vit_error *err) {
    const uint8_t *src = t->data;
    switch (t->dtype) {
    case ST_F32:
        memcpy(out, src, t->nbytes);
        return 0;
    case ST_F64:
        for (int64_t i = 0; i < t->numel; i++) {
            double d;
            memcpy(&d, src + 8 * i, 8);
            out[i] = (float)d;
        }
        return 0;
    case ST_F16:
        for (int64_t i = 0; i < t->numel; i++)
            out[i] = half_to_float((uint16_t)(src[2 * i] | src[2 * i + 1] << 8));
        return 0;
    case ST_BF16:
        for (int64_t i = 0; i < t->numel; i++) {
            uint32_t bits = (uint32_t)(src[2 * i] | src[2 * i + 1] << 8) << 16;
            memcpy(&out[i], &bits, 4);
        }
        return 0;
    default:
        return vit_fail(err, "%s: tensor '%s' has dtype %s, expected a float type", file->path,
                        t->name, st_dtype_name(t->dtype));
    }
}

int st_write_f32(const char *path, const st_entry *entries, int count, vit_error *err) {
    return st_write_f32_meta(path, entries, count, NULL, NULL, 0, err);
}

int st_write_f32_meta(const char *path, const st_entry *entries, int count, const char *const *keys,
                      const char *const *values, int nmeta, vit_error *err) {
    cJSON *root = cJSON_CreateObject();
    if (!root) return vit_fail(err, "%s: out of memory", path);
    if (nmeta > 0) {
        cJSON *meta = cJSON_AddObjectToObject(root, "__metadata__");
        for (int i = 0; i < nmeta; i++) cJSON_AddStringToObject(meta, keys[i], values[i]);
    }
    uint64_t offset = 0;
    for (int i = 0; i < count; i++) {
        int64_t numel = 1;
        for (int d = 0; d < entries[i].ndim; d++) numel *= entries[i].shape[d];
        cJSON *t = cJSON_AddObjectToObject(root, entries[i].name);
        cJSON_AddStringToObject(t, "dtype", st_dtype_name(entries[i].dtype));
        cJSON *shape = cJSON_AddArrayToObject(t, "shape");
        for (int d = 0; d < entries[i].ndim; d++)
            cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)entries[i].shape[d]));
        cJSON *offs = cJSON_AddArrayToObject(t, "data_offsets");
        cJSON_AddItemToArray(offs, cJSON_CreateNumber((double)offset));
        offset += (uint64_t)numel * st_dtype_size(entries[i].dtype);
        cJSON_AddItemToArray(offs, cJSON_CreateNumber((double)offset));
    }
    char *json = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    if (!json) return vit_fail(err, "%s: out of memory", path);
    size_t json_len = strlen(json), padded = (json_len + 7) & ~(size_t)7; /* keeps data 8-aligned */
    atomic_file a;
    if (atomic_file_open(&a, path, err) != 0) {
        free(json);
        return -1;
    }
    uint8_t len_bytes[8];
    for (int i = 0; i < 8; i++) len_bytes[i] = (uint8_t)((uint64_t)padded >> (8 * i));
    fwrite(len_bytes, 1, 8, a.f);
    fwrite(json, 1, json_len, a.f);
    for (size_t i = json_len; i < padded; i++) fputc(' ', a.f);
    free(json);
    for (int i = 0; i < count && !ferror(a.f); i++) {
        size_t numel = 1;
        for (int d = 0; d < entries[i].ndim; d++) numel *= (size_t)entries[i].shape[d];
        fwrite(entries[i].data, st_dtype_size(entries[i].dtype), numel, a.f);
    }
    return atomic_file_commit(&a, err);
}

int st_metadata(const st_file *file, const char *key, char *buf, size_t size, vit_error *err) {
    /* st_open validated the header: 8-byte length, then that much JSON */
    const uint8_t *map = file->map;
    uint64_t len = 0;
    for (int i = 0; i < 8; i++) len |= (uint64_t)map[i] << (8 * i);
    cJSON *root = cJSON_ParseWithLength((const char *)map + 8, (size_t)len);
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(root, "__metadata__");
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(meta, key);
    int rc = 0;
    if (!cJSON_IsString(item))
        rc = vit_fail(err, "%s: no metadata entry '%s'", file->path, key);
    else if (strlen(item->valuestring) >= size)
        rc = vit_fail(err, "%s: metadata entry '%s' too long", file->path, key);
    else
        memcpy(buf, item->valuestring, strlen(item->valuestring) + 1);
    cJSON_Delete(root);
    return rc;
}

void st_f32_to_f16(uint16_t *out, const float *in, size_t n) {
    for (size_t i = 0; i < n; i++) {
        uint32_t x;
        memcpy(&x, &in[i], 4);
        const uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
        const uint32_t abs = x & 0x7fffffffu;
        if (abs > 0x7f800000u) { /* NaN stays a (quiet) NaN */
            out[i] = sign | 0x7e00u;
        } else if (abs >= 0x477ff000u) { /* 65520 and above round to infinity */
            out[i] = sign | 0x7c00u;
        } else if (abs >= 0x38800000u) { /* a normal half: rebias, round the 13 bits dropped */
            out[i] = sign | (uint16_t)((abs - 0x38000000u + 0xfffu + ((abs >> 13) & 1u)) >> 13);
        } else { /* a subnormal half (or zero): whole units of 2^-24, ties to even */
            float a;
            memcpy(&a, &abs, 4);
            out[i] = sign | (uint16_t)lrintf(a * 16777216.0f);
        }
    }
}

void st_f32_to_bf16(uint16_t *out, const float *in, size_t n) {
    for (size_t i = 0; i < n; i++) {
        uint32_t x;
        memcpy(&x, &in[i], 4);
        if ((x & 0x7fffffffu) > 0x7f800000u)
            out[i] = (uint16_t)((x >> 16) | 0x40u); /* NaN stays a (quiet) NaN */
        else
            out[i] = (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
    }
}
