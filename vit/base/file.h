#ifndef VIT_FILE_H
#define VIT_FILE_H

#include <stddef.h>

#include "vit/base/error.h"

/* Reads a whole regular file of at most max_bytes into a buffer the caller frees, with a NUL after
 * the last byte so text parsers can use it directly; *size (may be NULL) gets the length without
 * it. Directories, unreadable and oversized files are errors naming the path. */
char *vit_read_file(const char *path, size_t max_bytes, size_t *size, vit_error *err);

#endif
