#include "vit/base/file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

char *vit_read_file(const char *path, size_t max_bytes, size_t *size, vit_error *err) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return vit_fail(err, "%s: %s", path, strerror(errno)), NULL;
    struct stat st;
    char *buf = NULL;
    if (fstat(fd, &st) != 0) {
        vit_fail(err, "%s: %s", path, strerror(errno));
    } else if (S_ISDIR(st.st_mode)) {
        vit_fail(err, "%s: is a directory", path);
    } else if (!S_ISREG(st.st_mode)) {
        vit_fail(err, "%s: not a regular file", path);
    } else if ((unsigned long long)st.st_size > max_bytes) {
        vit_fail(err, "%s: %lld bytes, larger than the limit of %zu", path, (long long)st.st_size,
                 max_bytes);
    } else if (!(buf = malloc((size_t)st.st_size + 1))) {
        vit_fail(err, "%s: out of memory", path);
    } else {
        size_t got = 0, want = (size_t)st.st_size;
        while (got < want) {
            ssize_t n = read(fd, buf + got, want - got);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) break;
            got += (size_t)n;
        }
        if (got != want) {
            vit_fail(err, "%s: read error (%zu of %zu bytes)", path, got, want);
            free(buf);
            buf = NULL;
        } else {
            buf[got] = 0;
            if (size) *size = got;
        }
    }
    close(fd);
    return buf;
}

char *vit_read_stream(FILE *f, const char *name, size_t max_bytes, size_t *size, vit_error *err) {
    size_t cap = 1 << 16, got = 0;
    char *buf = malloc(cap + 1);
    while (buf) {
        got += fread(buf + got, 1, cap - got, f);
        if (got < cap) break; /* the end, or an error */
        if (cap > max_bytes) {
            vit_fail(err, "%s: more than the limit of %zu bytes", name, max_bytes);
            free(buf);
            return NULL;
        }
        char *more = realloc(buf, 2 * cap + 1);
        if (!more) free(buf);
        buf = more;
        cap *= 2;
    }
    if (!buf) return vit_fail(err, "%s: out of memory", name), NULL;
    if (ferror(f) || got > max_bytes) {
        vit_fail(err, ferror(f) ? "%s: read error" : "%s: more than the limit of %zu bytes", name,
                 max_bytes);
        free(buf);
        return NULL;
    }
    buf[got] = 0;
    if (size) *size = got;
    return buf;
}

int atomic_file_open(atomic_file *a, const char *path, vit_error *err) {
    if ((size_t)snprintf(a->path, sizeof a->path, "%s", path) >= sizeof a->path)
        return vit_fail(err, "%s: path too long", path);
    snprintf(a->tmp, sizeof a->tmp, "%s.tmp", path);
    a->f = fopen(a->tmp, "wb");
    if (!a->f) return vit_fail(err, "%s: %s", a->tmp, strerror(errno));
    return 0;
}

int atomic_file_commit(atomic_file *a, vit_error *err) {
    int ok = !ferror(a->f);
    ok &= fclose(a->f) == 0;
    a->f = NULL;
    if (!ok || rename(a->tmp, a->path) != 0) {
        const int e = errno;
        unlink(a->tmp);
        return vit_fail(err, "%s: write failed: %s", a->path, strerror(e));
    }
    return 0;
}

void atomic_file_abort(atomic_file *a) {
    if (a->f) fclose(a->f);
    a->f = NULL;
    unlink(a->tmp);
}

int write_file_atomic(const char *path, const void *data, size_t size, vit_error *err) {
    atomic_file a;
    if (atomic_file_open(&a, path, err) != 0) return -1;
    if (size) fwrite(data, 1, size, a.f);
    return atomic_file_commit(&a, err);
}
