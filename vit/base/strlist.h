#ifndef VIT_BASE_STRLIST_H
#define VIT_BASE_STRLIST_H

/* A text file of one name per line (labels, class maps, vocabularies), read whole and split in
 * place: one allocation for the text, one for the line table. Lines end at "\n", "\r\n" or "\r";
 * a last line without an ending counts, an ending at the end of the file adds no empty line.
 * A NUL byte anywhere is an error naming the line (it would silently cut a name short). */

#include <stddef.h>

#include "vit/base/error.h"

enum {
    STRLIST_TRIM = 1,      /* strip surrounding white space and a leading UTF-8 byte-order mark */
    STRLIST_SKIP_BLANK = 2 /* drop lines that are empty (after trimming) */
};

typedef struct {
    char *text;      /* the file, each line NUL-terminated in place */
    char **lines;    /* [count] pointers into text */
    size_t *lengths; /* [count] bytes of each line */
    int count;
} strlist;

/* Reads path (at most max_bytes). Returns 0, or -1 with err naming the file. */
int strlist_read(strlist *out, const char *path, size_t max_bytes, int flags, vit_error *err);
/* The same from a copy of bytes[0..size), called name in errors. */
int strlist_from_memory(strlist *out, const char *bytes, size_t size, const char *name, int flags,
                        vit_error *err);
void strlist_free(strlist *l);

#endif
