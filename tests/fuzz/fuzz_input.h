#ifndef VIT_FUZZ_INPUT_H
#define VIT_FUZZ_INPUT_H

/* What the harnesses share. Most parsers read files by path, so an input is handed to them as a
 * file in memory (memfd_create, named /proc/self/fd/N): the same code path as a file on disk,
 * without touching the disk. */

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Replaces the contents of the memory file `slot` (0..3) with data; returns its path. */
static inline const char *fuzz_file(int slot, const uint8_t *data, size_t size) {
    static int fds[4] = {-1, -1, -1, -1};
    static char paths[4][64];
    if (fds[slot] < 0) {
        fds[slot] = memfd_create("vit-fuzz", 0);
        if (fds[slot] < 0) abort();
        snprintf(paths[slot], sizeof paths[slot], "/proc/self/fd/%d", fds[slot]);
    }
    if (ftruncate(fds[slot], 0) != 0 || pwrite(fds[slot], data, size, 0) != (ssize_t)size) abort();
    return paths[slot];
}

/* A directory of the harness's own (created once) for parsers that read a folder of files. */
static inline const char *fuzz_dir(void) {
    static char dir[64];
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "/dev/shm/vit-fuzz-XXXXXX");
        if (!mkdtemp(dir)) abort();
    }
    return dir;
}

/* Writes data to fuzz_dir()/name. */
static inline void fuzz_write(const char *name, const uint8_t *data, size_t size) {
    char path[256];
    snprintf(path, sizeof path, "%s/%s", fuzz_dir(), name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0) abort();
}

/* Writes data to fuzz_dir()/sub/name (sub must exist). */
static inline void fuzz_write_in(const char *sub, const char *name, const uint8_t *data,
                                 size_t size) {
    char path[256];
    snprintf(path, sizeof path, "%s/%s", sub, name);
    fuzz_write(path, data, size);
}

/* Splits data at the first occurrence of the byte sep: the part before in *a (na bytes), after
 * in *b; with no sep, all of it is *a. Lets one input feed two files. */
static inline void fuzz_split(const uint8_t *data, size_t size, uint8_t sep, const uint8_t **a,
                              size_t *na, const uint8_t **b, size_t *nb) {
    size_t i = 0;
    while (i < size && data[i] != sep) i++;
    *a = data, *na = i;
    *b = i < size ? data + i + 1 : data + size, *nb = i < size ? size - i - 1 : 0;
}

#endif
