#ifndef VIT_TEXT_TEXTFILE_H
#define VIT_TEXT_TEXTFILE_H

#include <stddef.h>

#include "vit/error.h"

/* Reads a whole file into a NUL-terminated buffer the caller frees; *size gets its length without
 * the terminator. NULL (with err naming the file and the reason) on failure. */
char *text_read_file(const char *path, size_t *size, vit_error *err);

#endif
