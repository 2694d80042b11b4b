#ifndef VIT_CLI_SEARCH_H
#define VIT_CLI_SEARCH_H

/* vit search's two halves: a folder's images by a CLIP or SigLIP model (search.c), and the lines
 * of a text file by a text encoder (search_text.c), with the options and the cache's helpers they
 * share. */

#include <stdint.h>
#include <sys/stat.h>

#include "vit/cli/cli.h"
#include "vit/cli/text_lines.h"
#include "vit/data/embed_cache.h"

typedef struct {
    const char *text; /* the words, or the image's path */
    int image;        /* an image query: the operand named an existing file */
} search_query;

typedef struct {
    cli_common common;
    int top, json, no_cache, verbose;
    const char *cache;
    search_query *queries; /* the --text values, then the operands but the last */
    int num_queries, num_texts;
    const char *folder; /* the last operand: a folder of images, or a file of texts */
    text_column column; /* texts: --column */
} search_options;

/* The lines of o->folder ranked for each query by model_dir's text encoder; the exit status. */
int search_texts(const search_options *o, const char *model_dir);

/* The cache's helpers: FNV-1a of s; "name size mtime_ns\n" of dir/name ("name -\n" when absent);
 * mkdir -p of path's folder; the default cache file for what (a folder or file) and identity
 * ($XDG_CACHE_HOME, else ~/.cache, /vit/search/NAME-HASH.safetensors: 0, or -1 when neither is
 * set); a file's modification time in nanoseconds. */
uint64_t search_fnv1a(const char *s);
void search_file_stamp(char *buf, size_t size, const char *dir, const char *name);
int search_make_parents(const char *path);
int search_default_cache(const char *what, const char *identity, char *buf, size_t size);
int64_t search_mtime_ns(const struct stat *st);
/* The cache file to use (in buf; NULL: none), and the old one's rows in *old when it was made
 * with the same key and width (*have_old); items names what is encoded without one. */
const char *search_open_cache(const search_options *o, const char *identity, const char *key,
                              int dim, const char *items, char *buf, size_t size, embed_cache *old,
                              int *have_old);

#endif
