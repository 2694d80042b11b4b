/* A TSV of text-line images and their transcripts, read whole and split in place. */
#include "vit/data/line_tsv.h"

#include <stdlib.h>
#include <string.h>

#include "vit/base/file.h"

/* Splits line[0..n) (its ending removed) into entry i. Returns 0, or -1 with err. */
static int parse_line(line_tsv *s, char *line, size_t n, long number, vit_error *err) {
    char *tab = memchr(line, '\t', n);
    if (!tab) return vit_fail(err, "%s:%ld: no tab between file and text", s->path, number);
    if (memchr(tab + 1, '\t', n - (size_t)(tab + 1 - line)))
        return vit_fail(err, "%s:%ld: more than one tab (the text cannot hold one)", s->path,
                        number);
    if (tab == line) return vit_fail(err, "%s:%ld: no file name before the tab", s->path, number);
    *tab = '\0';
    line[n] = '\0';
    s->files[s->count] = line;
    s->texts[s->count] = tab + 1;
    s->lines[s->count++] = number;
    return 0;
}

static int split_lines(line_tsv *s, size_t size, vit_error *err) {
    long number = 0;
    size_t i = size >= 3 && memcmp(s->buf, "\xEF\xBB\xBF", 3) == 0 ? 3 : 0; /* a BOM */
    while (i < size) {
        size_t end = i;
        while (end < size && s->buf[end] != '\n') end++;
        number++;
        size_t n = end - i;
        if (n > 0 && s->buf[i + n - 1] == '\r') n--;
        if (n > 0 && parse_line(s, s->buf + i, n, number, err) != 0) return -1;
        i = end + 1;
    }
    return 0;
}

static int by_file(const void *a, const void *b, void *set) {
    const line_tsv *s = set;
    const int i = *(const int *)a, j = *(const int *)b;
    const int c = strcmp(s->files[i], s->files[j]);
    return c ? c : (i > j) - (i < j);
}

/* The index by name; a name given twice is an error. */
static int sort_names(line_tsv *s, vit_error *err) {
    for (int i = 0; i < s->count; i++) s->by_name[i] = i;
    qsort_r(s->by_name, (size_t)s->count, sizeof *s->by_name, by_file, s);
    for (int k = 1; k < s->count; k++) {
        const int a = s->by_name[k - 1], b = s->by_name[k];
        if (strcmp(s->files[a], s->files[b]) == 0)
            return vit_fail(err, "%s:%ld: %s is named again (first on line %ld)", s->path,
                            s->lines[b], s->files[b], s->lines[a]);
    }
    return 0;
}

static char *folder_of(const char *path) {
    const char *slash = strrchr(path, '/');
    if (!slash) return strdup(".");
    if (slash == path) return strdup("/");
    return strndup(path, (size_t)(slash - path));
}

int line_tsv_read(line_tsv *out, const char *path, vit_error *err) {
    memset(out, 0, sizeof *out);
    size_t size;
    if (!(out->buf = vit_read_file(path, (size_t)1 << 30, &size, err))) return -1;
    size_t lines = 1;
    for (size_t i = 0; i < size; i++) lines += out->buf[i] == '\n';
    out->files = malloc(lines * sizeof *out->files);
    out->texts = malloc(lines * sizeof *out->texts);
    out->lines = malloc(lines * sizeof *out->lines);
    out->by_name = malloc(lines * sizeof *out->by_name);
    out->path = strdup(path);
    out->dir = folder_of(path);
    int rc = !out->files || !out->texts || !out->lines || !out->by_name || !out->path || !out->dir
                 ? vit_fail(err, "%s: out of memory", path)
                 : 0;
    if (rc == 0) rc = split_lines(out, size, err);
    if (rc == 0 && out->count == 0) rc = vit_fail(err, "%s: no `file<TAB>text` line", path);
    if (rc == 0) rc = sort_names(out, err);
    if (rc != 0) line_tsv_free(out);
    return rc;
}

void line_tsv_free(line_tsv *s) {
    free(s->files), free(s->texts), free(s->lines), free(s->by_name);
    free(s->dir), free(s->path), free(s->buf);
    memset(s, 0, sizeof *s);
}

int line_tsv_path(const line_tsv *s, int i, char *buf, size_t size) {
    const char *file = s->files[i];
    const int n = file[0] == '/' ? snprintf(buf, size, "%s", file)
                                 : snprintf(buf, size, "%s/%s", s->dir, file);
    return n < 0 || (size_t)n >= size ? -1 : 0;
}

int line_tsv_find(const line_tsv *s, const char *file) {
    int lo = 0, hi = s->count - 1;
    while (lo <= hi) {
        const int mid = lo + (hi - lo) / 2, i = s->by_name[mid];
        const int c = strcmp(s->files[i], file);
        if (c == 0) return i;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -1;
}
