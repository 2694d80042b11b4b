#include "text/text_tokenizer.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "text/byte_level.h"
#include "text/sentencepiece.h"
#include "text/siglip_text.h"
#include "text/tokenizer.h"
#include "text/xlmr_text.h"
#include "vit/base/json.h"

typedef enum { KIND_WORDPIECE, KIND_BYTE_LEVEL, KIND_SIGLIP, KIND_XLMR, KIND_NONE } tokenizer_kind;

struct text_tokenizer {
    tokenizer_kind kind;
    tokenizer *wordpiece;
    byte_level *byte_level;
    siglip_text *siglip;
    xlmr_text *xlmr;
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

/* The kind tokenizer_config.json's tokenizer_class names; KIND_NONE when the file, the field or
 * a class vit knows is absent. */
static int kind_of_class(const char *dir, tokenizer_kind *kind, vit_error *err) {
    static const struct {
        const char *name;
        tokenizer_kind kind;
    } classes[] = {{"BertTokenizer", KIND_WORDPIECE},  {"CLIPTokenizer", KIND_BYTE_LEVEL},
                   {"GPT2Tokenizer", KIND_BYTE_LEVEL}, {"RobertaTokenizer", KIND_BYTE_LEVEL},
                   {"SiglipTokenizer", KIND_SIGLIP},   {"XLMRobertaTokenizer", KIND_XLMR}};
    *kind = KIND_NONE;
    char path[4096];
    snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
    if (access(path, F_OK) != 0) return 0;
    cJSON *root = json_load_object(path, err);
    if (!root) return -1;
    const cJSON *cls = cJSON_GetObjectItemCaseSensitive(root, "tokenizer_class");
    const char *name = cJSON_IsString(cls) ? cls->valuestring : "";
    for (size_t i = 0; i < sizeof classes / sizeof *classes; i++) {
        const size_t n = strlen(classes[i].name);
        if (strncmp(name, classes[i].name, n) == 0 && (!name[n] || strcmp(name + n, "Fast") == 0))
            *kind = classes[i].kind;
    }
    cJSON_Delete(root);
    return 0;
}

/* The kind the files tell. */
static tokenizer_kind kind_of_files(const char *dir) {
    if (has_file(dir, "vocab.json") && has_file(dir, "merges.txt")) return KIND_BYTE_LEVEL;
    if (has_file(dir, "vocab.txt")) return KIND_WORDPIECE;
    if (has_file(dir, "spiece.model")) return KIND_SIGLIP;
    if (has_file(dir, "sentencepiece.bpe.model")) return KIND_XLMR;
    return KIND_NONE;
}

static int load_kind(text_tokenizer *t, const char *dir, vit_error *err) {
    switch (t->kind) {
    case KIND_WORDPIECE:
        if (tokenizer_load(dir, &t->wordpiece, err) != 0) return -1;
        t->max_len = tokenizer_max_len(t->wordpiece);
        /* padding is masked out, so any valid id will do where there is no [PAD] */
        t->pad_id = tokenizer_pad_id(t->wordpiece) >= 0 ? tokenizer_pad_id(t->wordpiece) : 0;
        return 0;
    case KIND_BYTE_LEVEL:
        if (byte_level_load(dir, &t->byte_level, err) != 0) return -1;
        t->max_len = byte_level_max_len(t->byte_level);
        t->pad_id = byte_level_pad_id(t->byte_level);
        return 0;
    case KIND_SIGLIP:
        if (siglip_text_load(dir, &t->siglip, err) != 0) return -1;
        t->max_len = siglip_text_max_len(t->siglip);
        t->pad_id = siglip_text_pad_id(t->siglip);
        return 0;
    case KIND_XLMR:
        if (xlmr_text_load(dir, &t->xlmr, err) != 0) return -1;
        t->max_len = xlmr_text_max_len(t->xlmr);
        t->pad_id = xlmr_text_pad_id(t->xlmr);
        return 0;
    default:
        return vit_fail(err,
                        "%s: no tokenizer files (vocab.txt: WordPiece; vocab.json and merges.txt: "
                        "byte-level BPE; spiece.model or sentencepiece.bpe.model: SentencePiece)",
                        dir);
    }
}

int text_tokenizer_load(const char *dir, text_tokenizer **out, vit_error *err) {
    *out = NULL;
    text_tokenizer *t = calloc(1, sizeof *t);
    if (!t) return vit_fail(err, "%s: out of memory", dir);
    int rc = kind_of_class(dir, &t->kind, err);
    if (rc == 0 && t->kind == KIND_NONE) t->kind = kind_of_files(dir);
    if (rc == 0) rc = load_kind(t, dir, err);
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
    byte_level_free(t->byte_level);
    siglip_text_free(t->siglip);
    xlmr_text_free(t->xlmr);
    free(t);
}

const char *text_tokenizer_kind(const text_tokenizer *t) {
    return t->kind == KIND_BYTE_LEVEL  ? "byte-level BPE"
           : t->kind == KIND_WORDPIECE ? "WordPiece"
                                       : "SentencePiece";
}

const char *text_tokenizer_class(const text_tokenizer *t) {
    switch (t->kind) {
    case KIND_BYTE_LEVEL:
        return byte_level_class_name(t->byte_level);
    case KIND_SIGLIP:
        return "SiglipTokenizer";
    case KIND_XLMR:
        return "XLMRobertaTokenizer";
    default:
        return "BertTokenizer";
    }
}

int text_tokenizer_vocab_size(const text_tokenizer *t) {
    switch (t->kind) {
    case KIND_BYTE_LEVEL:
        return byte_level_vocab_size(t->byte_level);
    case KIND_SIGLIP:
        return spm_vocab_size(siglip_text_spm(t->siglip));
    case KIND_XLMR:
        return xlmr_text_vocab_size(t->xlmr);
    default:
        return tokenizer_vocab_size(t->wordpiece);
    }
}

int text_tokenizer_max_len(const text_tokenizer *t) {
    return t->max_len;
}

int text_tokenizer_pad_id(const text_tokenizer *t) {
    return t->pad_id;
}

int text_tokenizer_bos_id(const text_tokenizer *t) {
    switch (t->kind) {
    case KIND_BYTE_LEVEL:
        return byte_level_bos_id(t->byte_level);
    case KIND_XLMR:
        return xlmr_text_bos_id(t->xlmr);
    default:
        return -1; /* BertTokenizer and SiglipTokenizer have no bos_token */
    }
}

int text_tokenizer_eos_id(const text_tokenizer *t) {
    switch (t->kind) {
    case KIND_BYTE_LEVEL:
        return byte_level_eos_id(t->byte_level);
    case KIND_SIGLIP:
        return siglip_text_eos_id(t->siglip);
    case KIND_XLMR:
        return xlmr_text_eos_id(t->xlmr);
    default:
        return -1;
    }
}

const char *text_tokenizer_piece(const text_tokenizer *t, int id) {
    switch (t->kind) {
    case KIND_BYTE_LEVEL:
        return byte_level_piece(t->byte_level, id);
    case KIND_SIGLIP:
        return spm_piece(siglip_text_spm(t->siglip), id);
    case KIND_XLMR:
        return xlmr_text_piece(t->xlmr, id);
    default:
        return tokenizer_piece(t->wordpiece, id);
    }
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
    switch (t->kind) {
    case KIND_BYTE_LEVEL:
        return byte_level_encode(t->byte_level, text, len, max_len, ids, err);
    case KIND_SIGLIP: /* its ids end with the end token; padded past what it returns */
        return siglip_text_encode(t->siglip, text, len, max_len, ids, err);
    case KIND_XLMR:
        return xlmr_text_encode(t->xlmr, text, len, max_len, ids, err);
    default:
        return tokenizer_encode_with(t->wordpiece, s->wordpiece, text, len, max_len, ids, NULL,
                                     err);
    }
}

int text_tokenizer_decode(const text_tokenizer *t, const int32_t *ids, int n,
                          bool skip_special_tokens, char *out, size_t size, vit_error *err) {
    switch (t->kind) {
    case KIND_BYTE_LEVEL:
        return byte_level_decode(t->byte_level, ids, n, skip_special_tokens, out, size, err);
    case KIND_SIGLIP:
        return siglip_text_decode(t->siglip, ids, n, skip_special_tokens, out, size, err);
    case KIND_XLMR:
        return xlmr_text_decode(t->xlmr, ids, n, skip_special_tokens, out, size, err);
    default:
        return tokenizer_decode(t->wordpiece, ids, n, skip_special_tokens, out, size, err);
    }
}
