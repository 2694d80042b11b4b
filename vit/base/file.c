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

static _Thread_local atomic_group *open_group;

void atomic_group_begin(atomic_group *g) {
    g->count = g->overflow = 0;
    open_group = g;
}

void atomic_group_abort(atomic_group *g) {
    for (int i = 0; i < g->count; i++) unlink(g->tmp[i]);
    g->count = 0;
    open_group = NULL;
}

int atomic_group_commit(atomic_group *g, vit_error *err) {
    open_group = NULL;
    if (g->overflow) {
        atomic_group_abort(g);
        return vit_fail(err, "more than %d files in one atomic group", ATOMIC_GROUP_MAX);
    }
    for (int i = 0; i < g->count; i++)
        if (rename(g->tmp[i], g->path[i]) != 0) {
            vit_fail(err, "%s: %s", g->path[i], strerror(errno));
            for (int j = i; j < g->count; j++) unlink(g->tmp[j]);
            return -1;
        }
    g->count = 0;
    return 0;
}

/* Written and closed: into the open group, or renamed now. */
static int finish(const atomic_file *a) {
    atomic_group *g = open_group;
    if (!g) return rename(a->tmp, a->path);
    if (g->count == ATOMIC_GROUP_MAX) {
        g->overflow = 1;
        return 0;
    }
    memcpy(g->path[g->count], a->path, sizeof a->path);
    memcpy(g->tmp[g->count++], a->tmp, sizeof a->tmp);
    return 0;
}

int atomic_file_commit(atomic_file *a, vit_error *err) {
    int ok = !ferror(a->f);
    ok &= fclose(a->f) == 0;
    a->f = NULL;
    if (!ok || finish(a) != 0) {
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
