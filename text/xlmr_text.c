/* XLMRobertaTokenizer over a SentencePiece model (see text/xlmr_text.h). Written from
 * transformers' tokenization_xlm_roberta.py and the slow PreTrainedTokenizer it runs on. */
#include "text/xlmr_text.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "text/added_tokens.h"
#include "text/decode.h"
#include "text/sentencepiece.h"
#include "text/utf8.h"
#include "vit/base/base64.h"

#define UNDERLINE "\xe2\x96\x81" /* U+2581, SentencePiece's word start */

/* fairseq's first four ids, ahead of the model's pieces */
static const char *const fairseq[4] = {"<s>", "<pad>", "</s>", "<unk>"};

struct xlmr_text {
    spm *model;
    int pieces; /* the model's size: <mask> is pieces + 1 */
    added_tokens added;
    bool clean_up;
    int max_len;
    char *name;     /* what errors call it: the model's name */
    uint8_t *proto; /* the model file's bytes, for the fast tokenizer's conversion */
    size_t proto_size;
};

/* ---- ids ---- */

/* get_vocab()'s id of content: fairseq's four, <mask>, a piece shifted by one; else -1. */
static int vocab_lookup(const void *ctx, const char *content) {
    const xlmr_text *t = ctx;
    for (int i = 0; i < 4; i++)
        if (strcmp(content, fairseq[i]) == 0) return i;
    if (strcmp(content, "<mask>") == 0) return t->pieces + 1;
    const int id = spm_piece_id(t->model, content);
    return id >= 3 ? id + 1 : -1; /* the model's 0..2 are behind fairseq's */
}

const char *xlmr_text_piece(const xlmr_text *t, int id) {
    const int k = added_tokens_find_id(&t->added, id);
    if (k >= 0) return t->added.tok[k].content;
    if (id >= 0 && id < 4) return fairseq[id];
    if (id == t->pieces + 1) return "<mask>";
    return id > 0 && id <= t->pieces ? spm_piece(t->model, id - 1) : NULL;
}

/* ---- loading ---- */

static int check_settings(const cJSON *config, const char *src, vit_error *err) {
    const cJSON *cls = config ? cJSON_GetObjectItemCaseSensitive(config, "tokenizer_class") : NULL;
    if (cls && !cJSON_IsNull(cls) &&
        !(cJSON_IsString(cls) && (strcmp(cls->valuestring, "XLMRobertaTokenizer") == 0 ||
                                  strcmp(cls->valuestring, "XLMRobertaTokenizerFast") == 0)))
        return vit_fail(err, "%s: tokenizer_class %s is not XLMRobertaTokenizer", src,
                        cJSON_IsString(cls) ? cls->valuestring : "(not a string)");
    const cJSON *kwargs =
        config ? cJSON_GetObjectItemCaseSensitive(config, "sp_model_kwargs") : NULL;
    if (kwargs && !cJSON_IsNull(kwargs) && !(cJSON_IsObject(kwargs) && !kwargs->child))
        return vit_fail(err, "%s: sp_model_kwargs (sampling) is not supported", src);
    return 0;
}

/* The tokens around a text must exist. */
static int check_tokens(const xlmr_text *t, const char *src, vit_error *err) {
    const added_tokens *a = &t->added;
    if (a->named[TOKEN_CLS] < 0 || a->named[TOKEN_SEP] < 0 || a->named[TOKEN_UNK] < 0)
        return vit_fail(err, "%s: XLMRobertaTokenizer needs a cls_token, sep_token and unk_token",
                        src);
    return 0;
}

/* The tokens and settings of the files (the model loaded). */
static int read_files(xlmr_text *t, const xlmr_text_sources *src, vit_error *err) {
    static const char *const roberta[TOKEN_NAMES] = {"<s>",   "</s>", "<unk>", "</s>",
                                                     "<pad>", "<s>",  "<mask>"};
    added_token_defaults d = {.lookup = vocab_lookup, .ctx = t, .vocab_size = t->pieces + 2};
    memcpy(d.content, roberta, sizeof roberta);
    d.lstrip[TOKEN_MASK] = true; /* "Mask token behave like a normal word" */
    cJSON *config = NULL, *map = NULL;
    int rc = tokenizer_source_json(&src->config, &config, err);
    if (rc == 0) rc = tokenizer_source_json(&src->special_tokens_map, &map, err);
    if (rc == 0) rc = check_settings(config, src->config.name, err);
    if (rc == 0)
        rc = added_tokens_settings(config, src->config.name, &t->clean_up, &t->max_len, err);
    if (rc == 0)
        rc = added_tokens_read(&t->added, config, map, &d, src->config.name,
                               src->special_tokens_map.name, err);
    if (rc == 0) rc = check_tokens(t, src->config.name, err);
    cJSON_Delete(config);
    cJSON_Delete(map);
    return rc;
}

int xlmr_text_load_memory(const xlmr_text_sources *src, xlmr_text **out, vit_error *err) {
    *out = NULL;
    if (!src->model.text) return vit_fail(err, "%s: no SentencePiece model", src->model.name);
    xlmr_text *t = calloc(1, sizeof *t);
    if (!t || !(t->name = strdup(src->model.name))) {
        free(t);
        return vit_fail(err, "%s: out of memory", src->model.name);
    }
    int rc = spm_load_memory(src->model.text, src->model.size, src->model.name, 0, &t->model, err);
    if (rc == 0 && !(t->proto = malloc(src->model.size ? src->model.size : 1)))
        rc = vit_fail(err, "%s: out of memory", src->model.name);
    if (rc == 0) memcpy(t->proto, src->model.text, t->proto_size = src->model.size);
    if (rc == 0) {
        t->pieces = spm_vocab_size(t->model);
        rc = read_files(t, src, err);
    }
    if (rc != 0) {
        xlmr_text_free(t);
        return -1;
    }
    *out = t;
    return 0;
}

int xlmr_text_load(const char *dir, xlmr_text **out, vit_error *err) {
    if (!dir || !out) return vit_fail(err, "xlmr_text_load: missing dir or out");
    *out = NULL;
    tokenizer_files f;
    int rc = spm_files_read(&f, dir, "sentencepiece.bpe.model", err);
    const spm_sources src = {f.src[0], f.src[1], f.src[2]};
    if (rc == 0) rc = xlmr_text_load_memory(&src, out, err);
    tokenizer_files_free(&f);
    return rc;
}

void xlmr_text_free(xlmr_text *t) {
    if (!t) return;
    spm_free(t->model);
    added_tokens_free(&t->added);
    free(t->name);
    free(t->proto);
    free(t);
}

/* ---- encoding ---- */

/* The ids of one stretch of text cps[s.start..s.end), appended to ids[*count..cap). */
static int encode_span(const xlmr_text *t, const int32_t *cps, text_span s, uint8_t *buf,
                       int32_t *scratch, int32_t *ids, int *count, int cap, vit_error *err) {
    size_t len = 0;
    for (size_t i = s.start; i < s.end; i++) len += utf8_encode(cps[i], buf + len);
    const int room = cap - *count;
    const int got = spm_encode(t->model, (const char *)buf, len, scratch, room, err);
    if (got < 0) return -1;
    const int unk = added_tokens_named_id(&t->added, TOKEN_UNK);
    for (int i = 0; i < got && i < room; i++) ids[(*count)++] = scratch[i] ? scratch[i] + 1 : unk;
    return 0;
}

/* The text's code points (each invalid UTF-8 run one U+FFFD); returns their count. */
static size_t code_points(const char *text, size_t len, int32_t *cps) {
    size_t n = 0;
    for (size_t i = 0; i < len;) {
        const int32_t c = utf8_decode_replace((const uint8_t *)text, len, &i);
        cps[n++] = c < 0 ? 0xFFFD : c;
    }
    return n;
}

int xlmr_text_encode(const xlmr_text *t, const char *text, size_t len, int max_len, int32_t *ids,
                     vit_error *err) {
    if (!t || !ids || (!text && len)) return vit_fail(err, "xlmr_text_encode: bad arguments");
    if (max_len < 2)
        return vit_fail(err, "%s: max_len %d leaves no room for <s> and </s>", t->name, max_len);
    if (len > (size_t)INT_MAX / 16) return vit_fail(err, "%s: text too long", t->name);
    int32_t *cps = malloc((len + 1) * sizeof *cps),
            *scratch = malloc((size_t)max_len * sizeof *scratch);
    text_span *spans = malloc((len + 1) * sizeof *spans);
    uint8_t *buf = malloc(4 * len + 4);
    int count = -1;
    if (!cps || !scratch || !spans || !buf) {
        vit_fail(err, "%s: out of memory for a text of %zu bytes", t->name, len);
    } else {
        const size_t n = code_points(text ? text : "", len, cps);
        const size_t n_spans = added_tokens_split(&t->added, cps, n, spans);
        const int cap = max_len - 1; /* </s> goes last */
        count = 0;
        ids[count++] = added_tokens_named_id(&t->added, TOKEN_CLS);
        for (size_t i = 0; i < n_spans && count >= 0 && count < cap; i++) {
            if (spans[i].tok >= 0)
                ids[count++] = t->added.tok[spans[i].tok].id;
            else if (encode_span(t, cps, spans[i], buf, scratch, ids, &count, cap, err) != 0)
                count = -1;
        }
        if (count >= 0) ids[count++] = added_tokens_named_id(&t->added, TOKEN_SEP);
    }
    free(cps), free(scratch), free(spans), free(buf);
    return count;
}

/* ---- decoding ---- */

static const char *decode_token(const void *ctx, int32_t id) {
    return xlmr_text_piece(ctx, id);
}

static bool decode_special(const void *ctx, int32_t id) {
    return added_tokens_find_id(&((const xlmr_text *)ctx)->added, id) >= 0;
}

/* transformers' legacy added tokens: additional special tokens past the vocabulary. */
static bool decode_standalone(const void *ctx, int32_t id) {
    const xlmr_text *t = ctx;
    const int k = added_tokens_find_id(&t->added, id);
    return k >= 0 && t->added.tok[k].additional && id >= t->pieces + 2;
}

/* convert_tokens_to_string: joined, each "\u2581" a space, the ends stripped. */
static void decode_join(const void *ctx, const int32_t *ids, const char *const *tokens, int n,
                        text_buf *out) {
    (void)ctx, (void)ids;
    text_buf text = {0};
    for (int i = 0; i < n; i++)
        for (const char *p = tokens[i]; *p;) {
            const bool underline = strncmp(p, UNDERLINE, 3) == 0;
            text_buf_add(&text, underline ? " " : p, 1);
            p += underline ? 3 : 1;
        }
    size_t a = 0, b = text.len;
    py_strip(text.s ? text.s : "", &a, &b);
    text_buf_add(out, text.s ? text.s + a : "", b - a);
    if (text.failed) out->failed = true;
    text_buf_free(&text);
}

int xlmr_text_decode(const xlmr_text *t, const int32_t *ids, int n, bool skip_special_tokens,
                     char *out, size_t size, vit_error *err) {
    const text_decoder d = {.ctx = t,
                            .name = t->name,
                            .token = decode_token,
                            .special = decode_special,
                            .standalone = decode_standalone,
                            .join = decode_join,
                            .clean_up = t->clean_up};
    return text_decode(&d, ids, n, skip_special_tokens, out, size, err);
}

/* ---- behind text/text_tokenizer.h ---- */

static void xlmr_text_ops_free(void *impl) {
    xlmr_text_free(impl);
}

static const char *xlmr_text_ops_piece(const void *impl, int id) {
    return xlmr_text_piece(impl, id);
}

static int xlmr_text_ops_encode(const void *impl, void *scratch, const char *text, size_t len,
                                int max_len, int32_t *ids, vit_error *err) {
    (void)scratch;
    return xlmr_text_encode(impl, text, len, max_len, ids, err);
}

static int xlmr_text_ops_decode(const void *impl, const int32_t *ids, int n,
                                bool skip_special_tokens, char *out, size_t size, vit_error *err) {
    return xlmr_text_decode(impl, ids, n, skip_special_tokens, out, size, err);
}

/* ---- the fast tokenizer's conversion: protobuf's wire format, the fields it reads ---- */

typedef struct {
    const uint8_t *p, *end;
} wire;

static bool varint(wire *w, uint64_t *v) {
    *v = 0;
    for (int shift = 0; w->p < w->end && shift < 64; shift += 7) {
        const uint8_t b = *w->p++;
        *v |= (uint64_t)(b & 127) << shift;
        if (!(b & 128)) return true;
    }
    return false;
}

/* The next field: its number, wire type and, length-delimited, its bytes in *sub (a fixed32 its
 * four bytes); false at the end or on bytes that are not protobuf. */
static bool next_field(wire *w, int *field, int *type, wire *sub, uint64_t *value) {
    uint64_t key;
    if (w->p >= w->end || !varint(w, &key)) return false;
    *field = (int)(key >> 3), *type = (int)(key & 7);
    const size_t left = (size_t)(w->end - w->p);
    uint64_t n = 0;
    switch (*type) {
    case 0:
        return varint(w, value);
    case 1:
        n = 8;
        break;
    case 2:
        if (!varint(w, &n)) return false;
        break;
    case 5:
        n = 4;
        break;
    default:
        return false;
    }
    if (n > (uint64_t)(w->end - w->p) || n > left) return false;
    *sub = (wire){w->p, w->p + n};
    w->p += n;
    return true;
}

/* The tokenizer.json transformers' XLMRobertaConverter writes of a Unigram model (what
 * XLMRobertaTokenizerFast runs, so what its offsets come from): Unigram over fairseq's <s> <pad>
 * </s> <unk>, the model's pieces after its first three (with their scores) and <mask>; the
 * normalizers Replace `` and '' by ", Precompiled (the model's charsmap), Replace " {2,}" by " ";
 * Metaspace (prepending "always"); <s> $A </s>; the special tokens as added tokens with their
 * strips (<mask>'s lstrip). */
static int xlmr_fast_json(const void *impl, char **json, vit_error *err) {
    const xlmr_text *t = impl;
    cJSON *root = cJSON_CreateObject(), *added = cJSON_AddArrayToObject(root, "added_tokens");
    cJSON *model = cJSON_AddObjectToObject(root, "model");
    cJSON_AddStringToObject(model, "type", "Unigram");
    cJSON_AddNumberToObject(model, "unk_id", added_tokens_named_id(&t->added, TOKEN_UNK));
    cJSON_AddBoolToObject(model, "byte_fallback", false);
    cJSON *vocab = cJSON_AddArrayToObject(model, "vocab");
    for (int i = 0; i < 4; i++) {
        cJSON *e = cJSON_CreateArray();
        cJSON_AddItemToArray(e, cJSON_CreateString(fairseq[i]));
        cJSON_AddItemToArray(e, cJSON_CreateNumber(0));
        cJSON_AddItemToArray(vocab, e);
    }
    wire w = {t->proto, t->proto + t->proto_size}, sub, f;
    int field, type, pieces = 0, bad = 0;
    uint64_t v;
    char *charsmap = NULL;
    int model_type = 1; /* trainer_spec's: UNIGRAM unless it says otherwise */
    while (!bad && next_field(&w, &field, &type, &sub, &v)) {
        if (field == 2 && type == 2) /* trainer_spec: its model_type */
            while (next_field(&sub, &field, &type, &f, &v))
                if (field == 3 && type == 0) model_type = (int)v;
        if (field == 1 && type == 2) { /* a SentencePiece {piece, score} */
            const char *piece = NULL;
            size_t len = 0;
            float score = 0;
            while (next_field(&sub, &field, &type, &f, &v)) {
                if (field == 1 && type == 2) piece = (const char *)f.p, len = (size_t)(f.end - f.p);
                if (field == 2 && type == 5) { /* a little-endian float, whatever the host's */
                    const uint32_t u = (uint32_t)f.p[0] | (uint32_t)f.p[1] << 8 |
                                       (uint32_t)f.p[2] << 16 | (uint32_t)f.p[3] << 24;
                    memcpy(&score, &u, 4);
                }
            }
            if (!piece) bad = 1;
            if (!bad && pieces++ >= 3) { /* the model's <unk> <s> </s> are fairseq's above */
                char *s = strndup(piece, len);
                cJSON *e = cJSON_CreateArray();
                cJSON_AddItemToArray(e, cJSON_CreateString(s ? s : ""));
                cJSON_AddItemToArray(e, cJSON_CreateNumber(score));
                cJSON_AddItemToArray(vocab, e);
                free(s);
            }
        } else if (field == 3 && type == 2) { /* normalizer_spec: its precompiled_charsmap */
            while (next_field(&sub, &field, &type, &f, &v))
                if (field == 2 && type == 2 && f.end > f.p && !charsmap &&
                    (charsmap = malloc(base64_encoded_size((size_t)(f.end - f.p)) + 1)))
                    base64_encode(f.p, (size_t)(f.end - f.p), charsmap);
        }
    }
    cJSON *mask = cJSON_CreateArray();
    cJSON_AddItemToArray(mask, cJSON_CreateString("<mask>"));
    cJSON_AddItemToArray(mask, cJSON_CreateNumber(0));
    cJSON_AddItemToArray(vocab, mask);
    for (int i = 0; i < t->added.count; i++) {
        const added_token *a = &t->added.tok[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "id", a->id);
        cJSON_AddStringToObject(o, "content", a->content);
        cJSON_AddBoolToObject(o, "single_word", false);
        cJSON_AddBoolToObject(o, "lstrip", a->lstrip);
        cJSON_AddBoolToObject(o, "rstrip", a->rstrip);
        cJSON_AddBoolToObject(o, "normalized", false);
        cJSON_AddBoolToObject(o, "special", true);
        cJSON_AddItemToArray(added, o);
    }
    cJSON *norm = cJSON_AddObjectToObject(root, "normalizer"),
          *list = cJSON_AddArrayToObject(norm, "normalizers");
    cJSON_AddStringToObject(norm, "type", "Sequence");
    static const char *const quotes[2][2] = {{"``", "\""}, {"''", "\""}};
    for (int i = 0; i < 3; i++) {
        cJSON *r = cJSON_CreateObject();
        cJSON_AddStringToObject(r, "type", "Replace");
        cJSON_AddStringToObject(cJSON_AddObjectToObject(r, "pattern"), i < 2 ? "String" : "Regex",
                                i < 2 ? quotes[i][0] : " {2,}");
        cJSON_AddStringToObject(r, "content", i < 2 ? quotes[i][1] : " ");
        if (i == 2 && charsmap) {
            cJSON *pc = cJSON_CreateObject();
            cJSON_AddStringToObject(pc, "type", "Precompiled");
            cJSON_AddStringToObject(pc, "precompiled_charsmap", charsmap);
            cJSON_AddItemToArray(list, pc);
        }
        cJSON_AddItemToArray(list, r);
    }
    free(charsmap);
    for (int k = 0; k < 2; k++) {
        cJSON *m = cJSON_AddObjectToObject(root, k ? "decoder" : "pre_tokenizer");
        cJSON_AddStringToObject(m, "type", "Metaspace");
        cJSON_AddStringToObject(m, "replacement", UNDERLINE);
        cJSON_AddStringToObject(m, "prepend_scheme", "always");
        cJSON_AddBoolToObject(m, "split", true);
    }
    cJSON *post = cJSON_AddObjectToObject(root, "post_processor");
    cJSON_AddStringToObject(post, "type", "RobertaProcessing");
    const int ends[2] = {added_tokens_named_id(&t->added, TOKEN_SEP),
                         added_tokens_named_id(&t->added, TOKEN_CLS)};
    for (int k = 0; k < 2; k++) {
        cJSON *pair = cJSON_AddArrayToObject(post, k ? "cls" : "sep");
        cJSON_AddItemToArray(
            pair,
            cJSON_CreateString(t->added.tok[added_tokens_find_id(&t->added, ends[k])].content));
        cJSON_AddItemToArray(pair, cJSON_CreateNumber(ends[k]));
    }
    cJSON_AddBoolToObject(post, "trim_offsets", false);
    cJSON_AddBoolToObject(post, "add_prefix_space", false);
    /* a BPE model converts to BPE with merges extracted from the vocabulary (transformers'
     * SentencePieceExtractor), which is not done here; XLM-R's own model is Unigram */
    *json = bad || model_type != 1 ? NULL : cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    if (bad) return vit_fail(err, "%s: a SentencePiece piece without its string", t->name);
    if (model_type != 1)
        return vit_fail(err,
                        "offsets are computed for a Unigram SentencePiece model (XLM-R's), "
                        "not for this %s one (%s)",
                        model_type == 2 ? "BPE" : "word or character", t->name);
    return *json ? 0 : vit_fail(err, "out of memory");
}

static int xlmr_text_ops_load(const char *dir, void **impl, text_tokenizer_info *info,
                              vit_error *err) {
    xlmr_text *t;
    if (xlmr_text_load(dir, &t, err) != 0) return -1;
    *impl = t;
    /* one past the largest id: <mask>'s, or an added token's */
    const int vocab = t->added.next_id > t->pieces + 2 ? t->added.next_id : t->pieces + 2;
    *info = (text_tokenizer_info){.kind = "SentencePiece",
                                  .class_name = "XLMRobertaTokenizer",
                                  .vocab_size = vocab,
                                  .max_len = t->max_len};
    added_tokens_special_ids(&t->added, &info->bos_id, &info->eos_id, &info->pad_id);
    return 0;
}

const text_tokenizer_ops xlmr_text_ops = {.load = xlmr_text_ops_load,
                                          .free = xlmr_text_ops_free,
                                          .piece = xlmr_text_ops_piece,
                                          .encode = xlmr_text_ops_encode,
                                          .decode = xlmr_text_ops_decode,
                                          .fast_json = xlmr_fast_json};
