#include "vit/base/strlist.h"

#include <ctype.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "vit/base/file.h"

/* Line ends: the bound on the number of lines, and a NUL byte's line (0 when there is none). */
static size_t count_breaks(const char *text, size_t size, long *nul_line) {
    size_t breaks = 0;
    *nul_line = 0;
    for (size_t i = 0; i < size; i++) {
        if (text[i] == '\n' || (text[i] == '\r' && !(i + 1 < size && text[i + 1] == '\n')))
            breaks++;
        else if (text[i] == '\0' && !*nul_line)
            *nul_line = (long)breaks + 1;
    }
    return breaks;
}

static void trim(char **s, size_t *n, int first) {
    if (first && *n >= 3 && memcmp(*s, "\xEF\xBB\xBF", 3) == 0) *s += 3, *n -= 3;
    while (*n > 0 && isspace((unsigned char)**s)) (*s)++, (*n)--;
    while (*n > 0 && isspace((unsigned char)(*s)[*n - 1])) (*n)--;
}

/* Splits l->text (size bytes, one more allocated) into lines; name is what errors call it. */
static int split_lines(strlist *l, size_t size, const char *name, int flags, vit_error *err) {
    long nul_line;
    const size_t bound = count_breaks(l->text, size, &nul_line) + 1;
    if (nul_line) return vit_fail(err, "%s: line %ld contains a NUL byte", name, nul_line);
    if (bound > INT_MAX / 2) return vit_fail(err, "%s: too many lines", name);
    l->lines = malloc(sizeof *l->lines * bound);
    l->lengths = malloc(sizeof *l->lengths * bound);
    if (!l->lines || !l->lengths) return vit_fail(err, "%s: out of memory", name);
    for (size_t start = 0, i = 0; start < size; start = i) {
        while (i < size && l->text[i] != '\n' && l->text[i] != '\r') i++;
        char *line = l->text + start;
        size_t n = i - start;
        if (i + 1 < size && l->text[i] == '\r' && l->text[i + 1] == '\n') i++;
        if (i < size) i++;
        if (flags & STRLIST_TRIM) trim(&line, &n, start == 0);
        line[n] = '\0';
        if (n == 0 && (flags & STRLIST_SKIP_BLANK)) continue;
        l->lines[l->count] = line;
        l->lengths[l->count++] = n;
    }
    return 0;
}

int strlist_read(strlist *l, const char *path, size_t max_bytes, int flags, vit_error *err) {
    memset(l, 0, sizeof *l);
    size_t size;
    if (!(l->text = vit_read_file(path, max_bytes, &size, err))) return -1;
    if (split_lines(l, size, path, flags, err) == 0) return 0;
    strlist_free(l);
    return -1;
}

int strlist_from_memory(strlist *l, const char *bytes, size_t size, const char *name, int flags,
                        vit_error *err) {
    memset(l, 0, sizeof *l);
    if (!(l->text = malloc(size + 1))) return vit_fail(err, "%s: out of memory", name);
    if (size) memcpy(l->text, bytes, size);
    l->text[size] = '\0';
    if (split_lines(l, size, name, flags, err) == 0) return 0;
    strlist_free(l);
    return -1;
}

void strlist_free(strlist *l) {
    free(l->text);
    free(l->lines);
    free(l->lengths);
    memset(l, 0, sizeof *l);
}
