#ifndef VIT_BASE_FILE_H
#define VIT_BASE_FILE_H

#include <stddef.h>
#include <stdio.h>

#include "vit/base/error.h"

/* Reads a whole regular file of at most max_bytes into a buffer the caller frees, with a NUL after
 * the last byte so text parsers can use it directly; *size (may be NULL) gets the length without
 * it. Directories, unreadable and oversized files are errors naming the path. */
char *vit_read_file(const char *path, size_t max_bytes, size_t *size, vit_error *err);
/* The same for a stream read to its end (a pipe: standard input), named name in errors. */
char *vit_read_stream(FILE *f, const char *name, size_t max_bytes, size_t *size, vit_error *err);

/* Writing without ever leaving a half-written file: the data goes to PATH.tmp, which is renamed
 * over PATH only once every byte is written and closed; on any failure PATH.tmp is removed and
 * PATH is untouched.
 *
 *   atomic_file a;
 *   if (atomic_file_open(&a, path, err) != 0) return -1;
 *   fwrite(..., a.f);
 *   return atomic_file_commit(&a, err);
 */
typedef struct {
    FILE *f;
    char path[4096], tmp[4100];
} atomic_file;

int atomic_file_open(atomic_file *a, const char *path, vit_error *err);
/* Closes, checks for write errors and renames into place (or removes the temporary file). */
int atomic_file_commit(atomic_file *a, vit_error *err);
/* Gives up: closes and removes the temporary file. */
void atomic_file_abort(atomic_file *a);

/* Files replaced together (a training checkpoint: weights, config, optimizer state, log): while
 * a group is open on this thread, atomic_file_commit writes and closes a file but leaves its rename
 * to atomic_group_commit, which renames them all; a failure before that (a full disk) removes every
 * temporary and leaves every old file as it was, so the files never disagree.
 *
 *   atomic_group g;
 *   atomic_group_begin(&g);
 *   if (write_a(err) != 0 || write_b(err) != 0) return atomic_group_abort(&g), -1;
 *   return atomic_group_commit(&g, err);
 */
#define ATOMIC_GROUP_MAX 16
typedef struct {
    char path[ATOMIC_GROUP_MAX][4096], tmp[ATOMIC_GROUP_MAX][4100];
    int count, overflow;
} atomic_group;

void atomic_group_begin(atomic_group *g);
int atomic_group_commit(atomic_group *g, vit_error *err);
void atomic_group_abort(atomic_group *g);

/* data[0..size) to path, atomically as above. */
int write_file_atomic(const char *path, const void *data, size_t size, vit_error *err);

#endif
