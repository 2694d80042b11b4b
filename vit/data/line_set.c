/* A folder of images with a labels.tsv of their texts, and the texts as label ids. */
#include "vit/data/line_set.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vit/data/line_tsv.h"

void line_list_free(line_list *l) {
    for (int i = 0; l->paths && i < l->count; i++) free(l->paths[i]);
    for (int i = 0; l->texts && i < l->count; i++) free(l->texts[i]);
    free(l->paths), free(l->texts);
    memset(l, 0, sizeof *l);
}

/* Entry k of the TSV into l's entry k: its image, which must exist, and its text. */
static int add_entry(line_list *l, const line_tsv *tsv, int k, vit_error *err) {
    char path[4096];
    if (line_tsv_path(tsv, k, path, sizeof path) != 0)
        return vit_fail(err, "%s:%ld: the file's path is too long", tsv->path, tsv->lines[k]);
    if (access(path, R_OK) != 0)
        return vit_fail(err, "%s:%ld: %s: no such file", tsv->path, tsv->lines[k], path);
    l->paths[k] = strdup(path);
    l->texts[k] = strdup(tsv->texts[k]);
    return l->paths[k] && l->texts[k] ? 0 : vit_fail(err, "out of memory");
}

int line_list_read(const char *dir, line_list *out, vit_error *err) {
    memset(out, 0, sizeof *out);
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, LINE_LABELS_FILE);
    line_tsv tsv;
    if (line_tsv_read(&tsv, path, err) != 0) return -1;
    out->paths = calloc((size_t)tsv.count + 1, sizeof *out->paths);
    out->texts = calloc((size_t)tsv.count + 1, sizeof *out->texts);
    int rc = out->paths && out->texts ? 0 : vit_fail(err, "out of memory");
    out->count = tsv.count;
    for (int k = 0; rc == 0 && k < tsv.count; k++) rc = add_entry(out, &tsv, k, err);
    line_tsv_free(&tsv);
    if (rc != 0) line_list_free(out);
    return rc;
}

void line_labels_free(line_labels *y) {
    free(y->ids), free(y->offset);
    memset(y, 0, sizeof *y);
}

/* One text's ids into ids (room for max_len), ending with the end token. Returns their number. */
static int encode_one(const text_tokenizer *tok, text_tokenizer_scratch *s, const char *text,
                      int max_len, int32_t *ids, vit_error *err) {
    int n = text_tokenizer_encode(tok, s, text, strlen(text), max_len, ids, err);
    const int eos = text_tokenizer_eos_id(tok);
    if (n < 0 || eos < 0 || (n > 0 && ids[n - 1] == eos)) return n;
    if (n == max_len) n--; /* the end token replaces the last piece */
    ids[n++] = eos;
    return n;
}

int line_labels_encode(const line_list *l, const text_tokenizer *tok, int max_len, line_labels *out,
                       vit_error *err) {
    memset(out, 0, sizeof *out);
    if (max_len < 2) return vit_fail(err, "texts of %d tokens: at least 2 are needed", max_len);
    text_tokenizer_scratch *s = text_tokenizer_scratch_create(tok);
    out->ids = malloc(sizeof *out->ids * (size_t)l->count * max_len);
    out->offset = calloc((size_t)l->count + 1, sizeof *out->offset);
    int rc = s && out->ids && out->offset ? 0 : vit_fail(err, "out of memory");
    for (int i = 0; rc == 0 && i < l->count; i++) {
        vit_error inner = {0};
        const int n = encode_one(tok, s, l->texts[i], max_len, out->ids + out->offset[i], &inner);
        if (n < 0) rc = vit_fail(err, "%s, text %d: %s", l->paths[i], i + 1, inner.msg);
        if (n > out->longest) out->longest = n;
        out->offset[i + 1] = out->offset[i] + (size_t)(n > 0 ? n : 0);
    }
    text_tokenizer_scratch_free(s);
    out->count = l->count;
    if (rc != 0) line_labels_free(out);
    return rc;
}

int line_labels_batch(const line_labels *y, const int *idx, int n, int *labels, int *tokens) {
    int T = 1, count = 0;
    for (int b = 0; b < n; b++) {
        const int len = (int)(y->offset[idx[b] + 1] - y->offset[idx[b]]);
        if (len > T) T = len;
    }
    for (int b = 0; b < n; b++) {
        const int32_t *ids = y->ids + y->offset[idx[b]];
        const int len = (int)(y->offset[idx[b] + 1] - y->offset[idx[b]]);
        for (int t = 0; t < T; t++) labels[(size_t)b * T + t] = t < len ? ids[t] : LINE_IGNORED;
        count += len;
    }
    if (tokens) *tokens = count;
    return T;
}
