#include "text/text_tokenizer.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "text/bpe.h"
#include "text/sentencepiece.h"
#include "text/siglip_text.h"
#include "text/tokenizer.h"
#include "vit/base/json.h"

typedef enum { KIND_WORDPIECE, KIND_BPE, KIND_SIGLIP } tokenizer_kind;

struct text_tokenizer {
    tokenizer_kind kind;
    tokenizer *wordpiece;
    bpe *bpe;
    siglip_text *siglip;
    int max_len, pad_id;
};

struct text_tokenizer_scratch {
    tokenizer_scratch *wordpiece; /* NULL for the kinds that need none */
};

static int has_file(const char *dir, const char *name) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return access(path, R_OK) == 0;
}

/* CLIPTokenizer's settings: model_max_length (absent or huge: none) and pad_token (absent or not
 * in the vocabulary: the end token, as CLIP's own configs name it). */
static int read_bpe_settings(text_tokenizer *t, const char *dir, vit_error *err) {
    t->pad_id = bpe_eos_id(t->bpe);
    char path[4096];
    snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
    if (access(path, F_OK) != 0) return 0;
    cJSON *root = json_load_object(path, err);
    if (!root) return -1;
    const cJSON *max = cJSON_GetObjectItemCaseSensitive(root, "model_max_length");
    if (cJSON_IsNumber(max) && max->valuedouble >= 2 && max->valuedouble <= 1 << 20)
        t->max_len = (int)max->valuedouble;
    const cJSON *pad_item = json_token_content(cJSON_GetObjectItemCaseSensitive(root, "pad_token"));
    const char *pad = cJSON_IsString(pad_item) ? pad_item->valuestring : NULL;
    if (pad && bpe_token_id(t->bpe, pad) >= 0) t->pad_id = bpe_token_id(t->bpe, pad);
    cJSON_Delete(root);
    return 0;
}

int text_tokenizer_load(const char *dir, text_tokenizer **out, vit_error *err) {
    *out = NULL;
    text_tokenizer *t = calloc(1, sizeof *t);
    if (!t) return vit_fail(err, "%s: out of memory", dir);
    int rc;
    if (has_file(dir, "vocab.json") && has_file(dir, "merges.txt")) {
        t->kind = KIND_BPE;
        rc = bpe_load(dir, &t->bpe, err);
        if (rc == 0) rc = read_bpe_settings(t, dir, err);
    } else if (has_file(dir, "vocab.txt")) {
        t->kind = KIND_WORDPIECE;
        rc = tokenizer_load(dir, &t->wordpiece, err);
        if (rc == 0) {
            t->max_len = tokenizer_max_len(t->wordpiece);
            /* padding is masked out, so any valid id will do where there is no [PAD] */
            t->pad_id = tokenizer_pad_id(t->wordpiece) >= 0 ? tokenizer_pad_id(t->wordpiece) : 0;
        }
    } else if (has_file(dir, "spiece.model")) {
        t->kind = KIND_SIGLIP;
        rc = siglip_text_load(dir, &t->siglip, err);
        if (rc == 0) {
            t->max_len = siglip_text_max_len(t->siglip);
            t->pad_id = siglip_text_pad_id(t->siglip);
        }
    } else {
        rc = vit_fail(err,
                      "%s: no tokenizer files (vocab.txt: WordPiece; vocab.json and merges.txt: "
                      "byte-level BPE; spiece.model: SentencePiece)",
                      dir);
    }
    if (rc != 0) {
        text_tokenizer_free(t);
        return -1;
    }
    *out = t;
    return 0;
}

void text_tokenizer_free(text_tokenizer *t) {
    if (!t) return;
    tokenizer_free(t->wordpiece);
    bpe_free(t->bpe);
    siglip_text_free(t->siglip);
    free(t);
}

const char *text_tokenizer_kind(const text_tokenizer *t) {
    return t->kind == KIND_BPE      ? "byte-level BPE"
           : t->kind == KIND_SIGLIP ? "SentencePiece"
                                    : "WordPiece";
}

int text_tokenizer_vocab_size(const text_tokenizer *t) {
    if (t->kind == KIND_SIGLIP) return spm_vocab_size(siglip_text_spm(t->siglip));
    return t->kind == KIND_BPE ? bpe_vocab_size(t->bpe) : tokenizer_vocab_size(t->wordpiece);
}

int text_tokenizer_max_len(const text_tokenizer *t) {
    return t->max_len;
}

int text_tokenizer_pad_id(const text_tokenizer *t) {
    return t->pad_id;
}

const char *text_tokenizer_piece(const text_tokenizer *t, int id) {
    if (t->kind == KIND_SIGLIP) return spm_piece(siglip_text_spm(t->siglip), id);
    return t->kind == KIND_BPE ? bpe_piece(t->bpe, id) : tokenizer_piece(t->wordpiece, id);
}

text_tokenizer_scratch *text_tokenizer_scratch_create(const text_tokenizer *t) {
    text_tokenizer_scratch *s = calloc(1, sizeof *s);
    if (s && t->kind == KIND_WORDPIECE && !(s->wordpiece = tokenizer_scratch_create())) {
        free(s);
        return NULL;
    }
    return s;
}

void text_tokenizer_scratch_free(text_tokenizer_scratch *s) {
    if (!s) return;
    tokenizer_scratch_free(s->wordpiece);
    free(s);
}

int text_tokenizer_encode(const text_tokenizer *t, text_tokenizer_scratch *s, const char *text,
                          size_t len, int max_len, int32_t *ids, vit_error *err) {
    if (t->kind == KIND_BPE) return bpe_encode(t->bpe, text, len, max_len, ids, err);
    if (t->kind == KIND_SIGLIP) /* its ids end with the end token; padded past what it returns */
        return siglip_text_encode(t->siglip, text, len, max_len, ids, err);
    return tokenizer_encode_with(t->wordpiece, s->wordpiece, text, len, max_len, ids, NULL, err);
}
