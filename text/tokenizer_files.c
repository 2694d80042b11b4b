/* A tokenizer folder's files as bytes (see text/tokenizer_files.h). */
#include "text/tokenizer_files.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "vit/base/file.h"
#include "vit/base/json.h"

int tokenizer_source_json(const tokenizer_source *src, cJSON **root, vit_error *err) {
    *root = NULL;
    if (!src->text) return 0;
    char why[160];
    *root = json_parse_object(src->text, src->size, why, sizeof why);
    return *root ? 0 : vit_fail(err, "%s: not a JSON object: %s", src->name, why);
}

int tokenizer_source_read(const char *model_dir, const char *name, bool required, char *path,
                          size_t size, tokenizer_source *src, vit_error *err) {
    *src = (tokenizer_source){.name = path};
    const int n = snprintf(path, size, "%s/%s", model_dir, name);
    if (n < 0 || (size_t)n >= size) return vit_fail(err, "%s/%s: path too long", model_dir, name);
    struct stat st;
    if (!required && stat(path, &st) != 0 && errno == ENOENT) return 0;
    char *text = vit_read_file(path, required ? 256 << 20 : 16 << 20, &src->size, err);
    src->text = text;
    return text ? 0 : -1;
}

int tokenizer_files_read(tokenizer_files *f, const char *dir, const char *const *names, int n,
                         int required, vit_error *err) {
    memset(f, 0, sizeof *f);
    if (n > TOKENIZER_FILES_MAX)
        return vit_fail(err, "%s: more than %d tokenizer files", dir, TOKENIZER_FILES_MAX);
    int rc = 0;
    for (int i = 0; rc == 0 && i < n; i++)
        rc = tokenizer_source_read(dir, names[i], i < required, f->path[i], sizeof f->path[i],
                                   &f->src[i], err);
    return rc;
}

void tokenizer_files_free(tokenizer_files *f) {
    for (int i = 0; i < TOKENIZER_FILES_MAX; i++) free((char *)f->src[i].text);
    memset(f, 0, sizeof *f);
}
