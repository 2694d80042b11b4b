#ifndef VIT_TEXT_TOKENIZER_FILES_H
#define VIT_TEXT_TOKENIZER_FILES_H

/* A tokenizer folder's files as bytes, the one way every kind (text/wordpiece.h,
 * text/byte_level.h, text/siglip_text.h, text/xlmr_text.h) reads them: each kind loads from
 * bytes (so the fuzzers and tests need no folder), and its folder loader reads the files here. */

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "vit/base/error.h"

/* One of those files as bytes in memory: text[0..size), or text NULL when the file is absent;
 * name is what errors call it (its path, or where its bytes came from). */
typedef struct {
    const char *text;
    size_t size;
    const char *name;
} tokenizer_source;

/* dir/name's bytes into *src (src->text NULL when an optional file does not exist; the caller
 * frees it); path[0..size) holds the name. A required file may reach 256 MiB (a vocabulary or a
 * model), an optional one (a JSON file) 16 MiB. */
int tokenizer_source_read(const char *dir, const char *name, bool required, char *path, size_t size,
                          tokenizer_source *src, vit_error *err);
/* A source's JSON object into *root (cJSON_Delete it), which stays NULL when the source is absent;
 * an error naming the source when it is not a JSON object. */
int tokenizer_source_json(const tokenizer_source *src, cJSON **root, vit_error *err);

#define TOKENIZER_FILES_MAX 4

/* The files a folder loader reads, with the paths their names point into. */
typedef struct {
    tokenizer_source src[TOKENIZER_FILES_MAX];
    char path[TOKENIZER_FILES_MAX][4096];
} tokenizer_files;

/* dir's files names[0..n) into f->src[0..n), in order, the first `required` of them required;
 * stops at the first error. f is always set up for tokenizer_files_free. */
int tokenizer_files_read(tokenizer_files *f, const char *dir, const char *const *names, int n,
                         int required, vit_error *err);
void tokenizer_files_free(tokenizer_files *f);

#endif
