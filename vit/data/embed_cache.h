#ifndef VIT_DATA_EMBED_CACHE_H
#define VIT_DATA_EMBED_CACHE_H

/* A folder's image embeddings kept between runs (vit search), so that only the images added or
 * changed since are encoded again; or a file's texts' (a "path" is then a name made from the
 * text, its "size" the text's length, its "mtime" 0). One safetensors file:
 *
 *   embeddings  F32 [n, dim]   one row per image
 *   sizes       I64 [n]        each image file's size in bytes
 *   mtimes      I64 [n]        its modification time, in nanoseconds since the epoch
 *   __metadata__ "vit_embed_cache": "1" (the format), "key": what made the rows (the caller's
 *                string: the model, its files' sizes and times, the settings), "paths": the
 *                images' paths relative to the folder, a JSON list of n distinct non-empty
 *                strings, in row order
 *
 * A row is reused for an image whose path, size and mtime are the ones recorded; the key is the
 * caller's to compare. Reading checks all of the above (beyond what st_open checks): a file that
 * fails is an error naming it and the problem, never a partial cache. Written atomically. */

#include <stddef.h>
#include <stdint.h>

#include "vit/base/error.h"

#define EMBED_CACHE_MAX_DIM  65536
#define EMBED_CACHE_MAX_PATH 4096

typedef struct {
    char *key;
    int dim;
    size_t count, cap;
    char **paths;            /* [count] */
    int64_t *sizes, *mtimes; /* [count] */
    float *rows;             /* [count, dim] */
    size_t *order;           /* [count] rows by path (embed_cache_read sets it) */
} embed_cache;

/* An empty cache for rows of dim floats made as key says. */
int embed_cache_init(embed_cache *c, const char *key, int dim, vit_error *err);
/* Appends one image's row (dim floats). Not for lookups afterwards (the order is not updated). */
int embed_cache_add(embed_cache *c, const char *path, int64_t size, int64_t mtime, const float *row,
                    vit_error *err);
/* Reads and checks a cache file into *c (empty on failure). */
int embed_cache_read(const char *file, embed_cache *c, vit_error *err);
/* The row of path when its size and mtime are the ones recorded, else -1 (c from
 * embed_cache_read). */
long embed_cache_find(const embed_cache *c, const char *path, int64_t size, int64_t mtime);
/* Writes c to file, atomically (the old file stays whole until the new one is). */
int embed_cache_write(const char *file, const embed_cache *c, vit_error *err);
void embed_cache_free(embed_cache *c);

#endif
