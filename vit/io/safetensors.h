#ifndef VIT_SAFETENSORS_H
#define VIT_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "vit/base/error.h"

/* safetensors files (docs/SPEC.md §3): read whole and fully validated on open (a file overwritten
 * while it is read is an error, never a signal). */

#define ST_MAX_DIMS 8

typedef enum {
    ST_F32,
    ST_F16,
    ST_BF16,
    ST_F64,
    ST_I64,
    ST_I32,
    ST_I16,
    ST_I8,
    ST_U8,
    ST_BOOL
} st_dtype;

typedef struct {
    char *name;
    st_dtype dtype;
    int ndim;
    int64_t shape[ST_MAX_DIMS];
    int64_t numel;
    size_t nbytes;
    const void *data; /* points into the file's bytes (st_file.map) */
    int owned;        /* data is a copy of its own (a strided .bin tensor), freed by st_close */
} st_tensor;

typedef struct {
    char *path;
    void *map;
    size_t map_size;
    st_tensor *tensors;
    int count;
    int lazy, fd; /* st_open_lazy: the tensors' bytes still in the file, open as fd */
} st_file;

int st_open(const char *path, st_file *file, vit_error *err);
/* The header alone, validated as st_open does; each tensor's bytes are read by st_read when
 * needed, so a model loaded tensor by tensor never holds the whole file (the file stays open
 * until st_close). */
int st_open_lazy(const char *path, st_file *file, vit_error *err);
/* Reads t's bytes (st_open_lazy; nothing to do after st_open): an error, not a signal, when the
 * file has shrunk since it was opened. */
int st_read(st_file *file, const st_tensor *t, vit_error *err);
void st_close(st_file *file);
const st_tensor *st_find(const st_file *file, const char *name);
const char *st_dtype_name(st_dtype dtype);
/* Converts any float dtype to float32 into out (numel floats). */
int st_to_f32(const st_file *file, const st_tensor *t, float *out, vit_error *err);
/* Gives a tensor read for the last time back to the system (vit_zero_lazily: its bytes then read
 * as zeros, t must not be read again), so that loading a model needs the file's size once, not
 * twice. */
void st_release(st_file *file, const st_tensor *t);

/* Writing, to a temporary file renamed into place (never a half-written file). An entry's dtype
 * is ST_F32 unless set; data holds numel elements of it. */
typedef struct {
    const char *name;
    int ndim;
    int64_t shape[ST_MAX_DIMS];
    const void *data;
    st_dtype dtype;
} st_entry;
int st_write_f32(const char *path, const st_entry *entries, int count, vit_error *err);
/* As st_write_f32, with an "__metadata__" object of nmeta string pairs (keys[i]: values[i]), e.g.
 * {"format": "pt"}, which PyTorch/transformers expect of model files. */
int st_write_f32_meta(const char *path, const st_entry *entries, int count, const char *const *keys,
                      const char *const *values, int nmeta, vit_error *err);
/* Bytes of one element of dtype. */
size_t st_dtype_size(st_dtype dtype);
/* n floats of in as float16 / bfloat16 (round to nearest even; NaN kept NaN, overflow to Inf). */
void st_f32_to_f16(uint16_t *out, const float *in, size_t n);
void st_f32_to_bf16(uint16_t *out, const float *in, size_t n);

/* The "__metadata__" value of key in an open file, copied into buf (size bytes). Returns 0, or -1
 * with err when the file has no such string entry or it does not fit. */
int st_metadata(const st_file *file, const char *key, char *buf, size_t size, vit_error *err);

#endif
