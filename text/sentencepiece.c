/* The C half of text/sentencepiece.h: reading a model file (the C++ shim,
 * text/sentencepiece_shim.cc, only ever sees bytes), and, in a build without libsentencepiece,
 * the one-line refusal in place of the shim. */
#include "text/sentencepiece.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vit/base/file.h"

/* Real models are far below this (SigLIP's spiece.model is under 1 MB, multilingual ones of 250k
 * pieces a few MB); the limit only keeps a wrong path from being read whole. */
#define SPM_MAX_FILE (256u << 20)

int spm_files_read(tokenizer_files *f, const char *dir, const char *model_file, vit_error *err) {
    memset(f, 0, sizeof *f);
    /* the build's refusal first: without the library the folder's files do not matter */
    if (!spm_library()) {
        snprintf(f->path[0], sizeof f->path[0], "%s/%s", dir, model_file);
        spm *none;
        return spm_load(f->path[0], 0, &none, err);
    }
    const char *const names[] = {model_file, "tokenizer_config.json", "special_tokens_map.json"};
    return tokenizer_files_read(f, dir, names, 3, 1, err);
}

#ifdef VIT_SENTENCEPIECE

int spm_load(const char *path, unsigned flags, spm **out, vit_error *err) {
    *out = NULL;
    size_t size;
    char *data = vit_read_file(path, SPM_MAX_FILE, &size, err);
    if (!data) return -1;
    const int rc = spm_load_memory(data, size, path, flags, out, err);
    free(data);
    return rc;
}

#else /* built without libsentencepiece: no model can be loaded, so no spm ever exists */

static int refuse(const char *name, vit_error *err) {
    return vit_fail(err,
                    "%s: a SentencePiece model, and this vit was built without SentencePiece "
                    "support (rebuild it with libsentencepiece-dev installed)",
                    name);
}

const char *spm_library(void) {
    return NULL;
}

int spm_load(const char *path, unsigned flags, spm **out, vit_error *err) {
    (void)flags;
    *out = NULL;
    return refuse(path, err);
}

int spm_load_memory(const void *data, size_t size, const char *name, unsigned flags, spm **out,
                    vit_error *err) {
    (void)data, (void)size, (void)flags;
    *out = NULL;
    return refuse(name, err);
}

void spm_free(spm *m) {
    (void)m;
}

/* What follows takes a model, and none can exist in this build. */
int spm_encode(const spm *m, const char *text, size_t len, int32_t *ids, int cap, vit_error *err) {
    (void)m, (void)text, (void)len, (void)ids, (void)cap;
    return refuse("spm_encode", err);
}

int spm_decode(const spm *m, const int32_t *ids, int n, char *out, size_t size, vit_error *err) {
    (void)m, (void)ids, (void)n, (void)out, (void)size;
    return refuse("spm_decode", err);
}

const char *spm_piece(const spm *m, int id) {
    (void)m, (void)id;
    return NULL;
}

int spm_piece_id(const spm *m, const char *piece) {
    (void)m, (void)piece;
    return -1;
}

int spm_vocab_size(const spm *m) {
    (void)m;
    return 0;
}

int spm_unk_id(const spm *m) {
    (void)m;
    return -1;
}

int spm_bos_id(const spm *m) {
    (void)m;
    return -1;
}

int spm_eos_id(const spm *m) {
    (void)m;
    return -1;
}

int spm_pad_id(const spm *m) {
    (void)m;
    return -1;
}

#endif
