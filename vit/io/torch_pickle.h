#ifndef VIT_TORCH_PICKLE_H
#define VIT_TORCH_PICKLE_H

/* A restricted unpickler for what torch.save(state_dict) writes (pickle protocols 2 to 5): it
 * builds plain values (None, bools, ints, floats, strings, tuples, lists, dicts), the storages
 * named by persistent ids and the tensors torch._utils._rebuild_tensor_v2 describes, and nothing
 * else. Like torch.load(weights_only=True) it runs no code: a global other than the few a state
 * dict names (collections.OrderedDict, the tensor rebuilders, the storage classes, dtypes) is
 * refused by name, and so is every opcode it does not know. Sizes are bounded (objects, stack,
 * memo, string lengths), so a hostile file costs at most memory in proportion to its size. */

#include <stddef.h>
#include <stdint.h>

#include "vit/base/error.h"
#include "vit/io/safetensors.h"

typedef enum {
    TP_NONE,
    TP_BOOL,
    TP_INT,
    TP_LONG, /* LONG1 beyond 64 bits: its little-endian bytes in s, len */
    TP_FLOAT,
    TP_STR,
    TP_TUPLE,
    TP_LIST,
    TP_DICT, /* items: key, value, key, value, ... */
    TP_GLOBAL,
    TP_STORAGE, /* a persistent id ('storage', type, key, location, numel[, view]) */
    TP_TENSOR,
    TP_MARK
} tp_kind;

typedef struct {
    st_dtype dtype;
    const char *key;
    int64_t numel;
} tp_storage;

typedef struct {
    const struct tp_obj *storage; /* a TP_STORAGE */
    int64_t offset;               /* in elements */
    int ndim;
    int64_t shape[ST_MAX_DIMS], stride[ST_MAX_DIMS];
} tp_tensor;

typedef struct tp_obj {
    tp_kind kind;
    int64_t i; /* BOOL, INT; GLOBAL: which one (tp_global) */
    double f;
    const char *s; /* STR (NUL-terminated copy), LONG */
    size_t len;
    struct tp_obj **items; /* TUPLE, LIST, DICT */
    size_t n, cap;
    tp_storage *storage; /* STORAGE */
    tp_tensor *tensor;   /* TENSOR */
} tp_obj;

/* Everything one run allocated, freed at once by tp_free. */
typedef struct {
    void **blocks;
    size_t nblocks, cap, objects, bytes;
} tp_arena;

/* Runs the pickle at data[0..size) up to its STOP: *result is its value, *end the offset after
 * STOP. Returns 0; -1 with err naming path (refused global or opcode, malformed, too large); -2
 * (err set) when the data ends before STOP, so a caller reading a file in parts may read more. */
int tp_load(const uint8_t *data, size_t size, const char *path, tp_arena *arena, tp_obj **result,
            size_t *end, vit_error *err);
void tp_free(tp_arena *arena);

/* The value of key (a string) in dict d, or NULL. */
const tp_obj *tp_dict_get(const tp_obj *d, const char *key);

#endif
