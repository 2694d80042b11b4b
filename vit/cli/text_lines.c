#include "vit/cli/text_lines.h"

#include <stdlib.h>
#include <string.h>

int text_column_parse(const cli_parser *p, text_column *column) {
    const char *v = p->value;
    if (*v && strspn(v, "0123456789") == strlen(v)) {
        if (cli_int(p, 1, 1 << 20, &column->index) != 0) return -1;
        column->index--;
        column->name = NULL;
        return 0;
    }
    *column = (text_column){-1, v};
    return 0;
}

/* Column `column` (from 0) of a tab-separated line: its start and length, or -1 when the line
 * has fewer columns. */
static int tsv_field(const char *line, size_t length, int column, const char **field,
                     size_t *field_length) {
    const char *at = line, *end = line + length;
    for (int c = 0; c < column; c++) {
        const char *tab = memchr(at, '\t', (size_t)(end - at));
        if (!tab) return -1;
        at = tab + 1;
    }
    const char *tab = memchr(at, '\t', (size_t)(end - at));
    *field = at;
    *field_length = (size_t)((tab ? tab : end) - at);
    return 0;
}

/* The index of the header's column called name, or -1. */
static int header_column(const char *line, size_t length, const char *name) {
    const char *field;
    size_t len;
    for (int c = 0; tsv_field(line, length, c, &field, &len) == 0; c++)
        if (len == strlen(name) && memcmp(field, name, len) == 0) return c;
    return -1;
}

int text_lines_read(text_lines *out, const char *path, text_column column, const char *command,
                    FILE *say, int *bad, vit_error *err) {
    memset(out, 0, sizeof *out);
    if (strlist_read(&out->file, path, (size_t)1 << 30, 0, err) != 0) return -1;
    const strlist *l = &out->file;
    int first = 0, index = column.index;
    if (column.name) {
        index = l->count ? header_column(l->lines[0], l->lengths[0], column.name) : -1;
        if (index < 0) {
            text_lines_free(out);
            return vit_fail(err, "%s: no column '%s' in its first line (the header)", path,
                            column.name);
        }
        first = 1;
    }
    const size_t n = l->count ? (size_t)l->count : 1;
    out->texts = malloc(sizeof *out->texts * n);
    out->lengths = malloc(sizeof *out->lengths * n);
    out->lines = malloc(sizeof *out->lines * n);
    if (!out->texts || !out->lengths || !out->lines) {
        text_lines_free(out);
        return vit_fail(err, "%s: out of memory", path);
    }
    for (int i = first; i < l->count; i++) {
        const char *text = l->lines[i];
        size_t length = l->lengths[i];
        if (index < 0 && strspn(text, " \t\v\f") == length) continue; /* a blank line */
        if (index >= 0 && tsv_field(l->lines[i], l->lengths[i], index, &text, &length) != 0) {
            if (say)
                fprintf(say, "%s: %s:%d: no column %d (the line has fewer)\n", command, path, i + 1,
                        index + 1);
            ++*bad;
            continue;
        }
        ((char *)text)[length] = 0; /* the tab after the column: one column is read a line */
        out->texts[out->count] = text;
        out->lengths[out->count] = length;
        out->lines[out->count++] = i + 1;
    }
    return 0;
}

void text_lines_free(text_lines *t) {
    strlist_free(&t->file);
    free(t->texts);
    free(t->lengths);
    free(t->lines);
    memset(t, 0, sizeof *t);
}
