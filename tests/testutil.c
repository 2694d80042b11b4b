#include "tests/testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *shared_dir(void) {
    static char dir[4096];
    const char *env = getenv("VIT_SHARED");
    snprintf(dir, sizeof dir, "%s", env && *env ? env : "../shared");
    struct stat st;
    char probe[4200];
    snprintf(probe, sizeof probe, "%s/SPEC.md", dir);
    return stat(probe, &st) == 0 ? dir : NULL;
}

const char *shared_path(const char *relative) {
    static char path[4][4096];
    static int slot;
    slot = (slot + 1) % 4;
    snprintf(path[slot], sizeof path[slot], "%s/%s", shared_dir() ? shared_dir() : "../shared", relative);
    return path[slot];
}

static char tmpdir[256];

static void remove_tmpdir(void) {
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
}

const char *test_tmpdir(void) {
    if (!tmpdir[0]) {
        snprintf(tmpdir, sizeof tmpdir, "/tmp/vit-test-XXXXXX");
        if (!mkdtemp(tmpdir)) {
            perror("mkdtemp");
            abort();
        }
        atexit(remove_tmpdir);
    }
    return tmpdir;
}

const char *write_temp_file(const char *name, const void *data, size_t size) {
    static char path[8][4096];
    static int slot;
    slot = (slot + 1) % 8;
    snprintf(path[slot], sizeof path[slot], "%s/%s", test_tmpdir(), name);
    FILE *f = fopen(path[slot], "wb");
    if (!f || fwrite(data, 1, size, f) != size) abort();
    fclose(f);
    return path[slot];
}

uint8_t *read_whole_file(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = malloc((size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    if (buf) {
        buf[n] = 0; /* text files can go straight to parsers */
        *size = (size_t)n;
    }
    return buf;
}
