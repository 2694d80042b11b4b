#ifndef VIT_CLI_TEXT_LINES_H
#define VIT_CLI_TEXT_LINES_H

/* The texts of a file for the commands that embed them (vit embed, vit search): one per line
 * (blank lines left out), or with --column one column of a TSV, by number or by the name its
 * first line (a header) gives it. Each text keeps its line in the file, for naming it. */

#include <stdio.h>

#include "vit/base/strlist.h"
#include "vit/cli/opts.h"

typedef struct {
    int index;        /* from 0; -1 with name NULL: whole lines */
    const char *name; /* a header's column name */
} text_column;

#define TEXT_COLUMN_LINES ((text_column){-1, NULL})

typedef struct {
    strlist file;       /* the texts point into it */
    const char **texts; /* [count], texts[i][0..lengths[i]), NUL-terminated */
    size_t *lengths;
    int *lines; /* [count] each one's line in the file, from 1 */
    int count;
} text_lines;

/* --column's value: digits are a number from 1 (as cut -f counts), anything else a name. 0, or
 * -1 after cli_int's error. */
int text_column_parse(const cli_parser *p, text_column *column);

/* Reads path's texts into *out. 0, or -1 with err naming the file (unreadable, no column of that
 * name in its header). A line without the column is left out, counted in *bad and, when say is
 * not NULL, reported there as "COMMAND: FILE:LINE: no column N (the line has fewer)". */
int text_lines_read(text_lines *out, const char *path, text_column column, const char *command,
                    FILE *say, int *bad, vit_error *err);
void text_lines_free(text_lines *t);

#endif
