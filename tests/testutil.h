#ifndef VIT_TESTUTIL_H
#define VIT_TESTUTIL_H

/* Shared helpers for the cmocka tests; include after <cmocka.h>'s prerequisites. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

/* The reference data folder: $VIT_SHARED, else ../shared from the project root. NULL when absent. */
const char *shared_dir(void);

/* Path inside shared/ (static buffer, overwritten by the next call). */
const char *shared_path(const char *relative);

/* Skips the current test with a loud message when ../shared is missing. */
#define REQUIRE_SHARED()                                                                           \
    do {                                                                                           \
        if (!shared_dir()) {                                                                       \
            print_message("SKIP %s: ../shared not found (set VIT_SHARED to its path)\n", __func__); \
            skip();                                                                                \
        }                                                                                          \
    } while (0)

/* A fresh private temporary directory for this process (created once, removed at exit). */
const char *test_tmpdir(void);
/* Writes bytes to test_tmpdir()/name and returns the full path (static buffer per call slot). */
const char *write_temp_file(const char *name, const void *data, size_t size);
/* Reads a whole file, NUL-terminated (not counted in *size); caller frees. NULL on failure. */
uint8_t *read_whole_file(const char *path, size_t *size);

#endif
