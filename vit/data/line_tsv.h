#ifndef VIT_DATA_LINE_TSV_H
#define VIT_DATA_LINE_TSV_H

/* Text-line images and their transcripts, for scoring OCR: a TSV of one `file<TAB>text` a line
 * (UTF-8, no header, "\r\n" and a byte-order mark accepted, empty lines ignored), the files
 * relative to the TSV's folder (absolute paths kept as they are). This is the labels.tsv `vit
 * render-lines` writes, and the layout of a recogniser's output that `vit eval --hypotheses`
 * scores (an empty text is written `file<TAB>`). The trainer reads it through line_list_read
 * (vit/data/line_set.h), which builds on this reader and also needs every image; this reader
 * keeps each entry's line number and an index by file, does not look at the images (an
 * evaluation skips those it cannot read) and takes the texts as they are (not trimmed).
 *
 *   line_tsv s;
 *   if (line_tsv_read(&s, "data/ocr/test/labels.tsv", &err) != 0) ... err.msg ...
 *   for (int i = 0; i < s.count; i++) line_tsv_path(&s, i, path, sizeof path), s.texts[i] ...
 *   line_tsv_free(&s);
 *
 * A line without a tab, with a second tab, with an empty file name or naming a file an earlier
 * line named is an error naming the TSV and the line. */

#include <stddef.h>

#include "vit/base/error.h"

typedef struct {
    int count;
    char **files; /* [count] as written (pointers into buf) */
    char **texts; /* [count] */
    long *lines;  /* [count] each one's line in the TSV (from 1) */
    int *by_name; /* [count] the entries in byte order of their files */
    char *dir;    /* the TSV's folder */
    char *path;   /* the TSV */
    char *buf;    /* the file's text, split in place */
} line_tsv;

/* Reads path (at most 1 GiB). Returns 0, or -1 with err. */
int line_tsv_read(line_tsv *out, const char *path, vit_error *err);
void line_tsv_free(line_tsv *s);

/* The image of entry i: the TSV's folder / its file (an absolute file as it is). Returns 0, or -1
 * when it does not fit in size bytes. */
int line_tsv_path(const line_tsv *s, int i, char *buf, size_t size);

/* The entry naming file (a binary search of by_name), or -1. */
int line_tsv_find(const line_tsv *s, const char *file);

#endif
