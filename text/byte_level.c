/* CLIPTokenizer, GPT2Tokenizer and RobertaTokenizer over a byte-level BPE vocabulary (see
 * text/byte_level.h). Written from transformers' tokenization_gpt2.py, tokenization_roberta.py,
 * tokenization_clip.py and the slow PreTrainedTokenizer they run on. */
#include "text/byte_level.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "text/added_tokens.h"
#include "text/bpe.h"
#include "text/decode.h"
#include "text/utf8.h"
#include "vit/base/json.h"

typedef enum { CLASS_CLIP, CLASS_GPT2, CLASS_ROBERTA, CLASS_UNKNOWN } tokenizer_class;

static const char *const class_names[] = {"CLIPTokenizer", "GPT2Tokenizer", "RobertaTokenizer"};

struct byte_level {
    tokenizer_class cls;
    bpe *model;
    added_tokens added;
    bool add_prefix_space, add_bos_token, clean_up;
    int max_len;
    char *name; /* what errors call it: vocab.json's name */
};

/* ---- settings ---- */

/* tokenizer_class, with or without "Fast"; CLASS_UNKNOWN when absent. */
static int read_class(const cJSON *config, const char *src, tokenizer_class *cls, vit_error *err) {
    const cJSON *item = config ? cJSON_GetObjectItemCaseSensitive(config, "tokenizer_class") : NULL;
    *cls = CLASS_UNKNOWN;
    if (!item || cJSON_IsNull(item)) return 0;
    const char *name = cJSON_IsString(item) ? item->valuestring : "";
    const size_t n = strlen(name);
    const size_t base = n > 4 && strcmp(name + n - 4, "Fast") == 0 ? n - 4 : n;
    for (int k = 0; k < 3; k++)
        if (strlen(class_names[k]) == base && strncmp(name, class_names[k], base) == 0) {
            *cls = (tokenizer_class)k;
            return 0;
        }
    return vit_fail(err,
                    "%s: tokenizer_class %s is not CLIPTokenizer, GPT2Tokenizer or "
                    "RobertaTokenizer (with vocab.json and merges.txt)",
                    src, cJSON_IsString(item) ? name : "(not a string)");
}

static int read_flag(const cJSON *config, const char *key, bool *out, const char *src,
                     vit_error *err) {
    int v = *out;
    if (config && json_get_bool(config, key, &v, src, err) != 0) return -1;
    *out = v != 0;
    return 0;
}

/* What the classes read besides their tokens, and what they have that is not implemented. */
static int read_settings(byte_level *t, const cJSON *config, const char *src, vit_error *err) {
    if (added_tokens_settings(config, src, &t->clean_up, &t->max_len, err) != 0 ||
        read_flag(config, "add_prefix_space", &t->add_prefix_space, src, err) != 0 ||
        read_flag(config, "add_bos_token", &t->add_bos_token, src, err) != 0)
        return -1;
    if (t->cls == CLASS_CLIP) t->add_prefix_space = t->add_bos_token = false; /* not CLIP's */
    if (t->cls == CLASS_ROBERTA) t->add_bos_token = false; /* RobertaTokenizer has no such option */
    const cJSON *errors = config ? cJSON_GetObjectItemCaseSensitive(config, "errors") : NULL;
    if (errors && !cJSON_IsNull(errors) &&
        !(cJSON_IsString(errors) && strcmp(errors->valuestring, "replace") == 0))
        return vit_fail(err, "%s: errors other than \"replace\" is not supported", src);
    return 0;
}

/* ---- loading ---- */

static int vocab_lookup(const void *ctx, const char *content) {
    return bpe_token_id(ctx, content);
}

/* The class's special tokens' defaults. */
static added_token_defaults class_defaults(const byte_level *t) {
    added_token_defaults d = {
        .lookup = vocab_lookup, .ctx = t->model, .vocab_size = bpe_vocab_size(t->model)};
    if (t->cls == CLASS_ROBERTA) {
        const char *roberta[TOKEN_NAMES] = {"<s>",   "</s>", "<unk>", "</s>",
                                            "<pad>", "<s>",  "<mask>"};
        memcpy(d.content, roberta, sizeof roberta);
        d.lstrip[TOKEN_MASK] = true; /* "Mask token behave like a normal word" */
    } else {
        const char *eot = "<|endoftext|>";
        d.content[TOKEN_BOS] = t->cls == CLASS_CLIP ? "<|startoftext|>" : eot;
        d.content[TOKEN_EOS] = d.content[TOKEN_UNK] = eot;
        d.content[TOKEN_PAD] = t->cls == CLASS_CLIP ? eot : NULL;
    }
    return d;
}

/* The vocabulary, and the class where tokenizer_config.json did not name one. */
static int load_model(byte_level *t, const byte_level_sources *src, vit_error *err) {
    const unsigned flags = t->cls == CLASS_CLIP ? BPE_CLIP : 0;
    if (bpe_load_memory(src->vocab.text, src->vocab.size, src->merges.text, src->merges.size,
                        t->name, flags, &t->model, err) != 0)
        return -1;
    if (t->cls != CLASS_UNKNOWN) return 0;
    if (bpe_token_id(t->model, "<|startoftext|>") >= 0) { /* CLIP's: loaded again, as CLIP's */
        bpe_free(t->model);
        t->cls = CLASS_CLIP;
        return load_model(t, src, err);
    }
    const bool roberta = bpe_token_id(t->model, "<s>") >= 0 && bpe_token_id(t->model, "</s>") >= 0;
    t->cls = roberta ? CLASS_ROBERTA : CLASS_GPT2;
    return 0;
}

/* The tokens each class puts around a text must exist. */
static int check_tokens(const byte_level *t, const char *src, vit_error *err) {
    const added_tokens *a = &t->added;
    if (t->cls == CLASS_ROBERTA && (a->named[TOKEN_CLS] < 0 || a->named[TOKEN_SEP] < 0))
        return vit_fail(err, "%s: RobertaTokenizer needs a cls_token and a sep_token", src);
    if (t->cls == CLASS_GPT2 && t->add_bos_token && a->named[TOKEN_BOS] < 0)
        return vit_fail(err, "%s: add_bos_token without a bos_token", src);
    return 0;
}

int byte_level_load_memory(const byte_level_sources *src, byte_level **out, vit_error *err) {
    *out = NULL;
    if (!src->vocab.text || !src->merges.text)
        return vit_fail(err, "%s: no vocab.json or merges.txt", src->vocab.name);
    byte_level *t = calloc(1, sizeof *t);
    if (!t || !(t->name = strdup(src->vocab.name))) {
        free(t);
        return vit_fail(err, "%s: out of memory", src->vocab.name);
    }
    cJSON *config = NULL, *map = NULL;
    int rc = tokenizer_source_json(&src->config, &config, err);
    if (rc == 0) rc = tokenizer_source_json(&src->special_tokens_map, &map, err);
    if (rc == 0) rc = read_class(config, src->config.name, &t->cls, err);
    if (rc == 0) rc = load_model(t, src, err);
    if (rc == 0) rc = read_settings(t, config, src->config.name, err);
    const added_token_defaults d = rc == 0 ? class_defaults(t) : (added_token_defaults){0};
    if (rc == 0)
        rc = added_tokens_read(&t->added, config, map, &d, src->config.name,
                               src->special_tokens_map.name, err);
    if (rc == 0) rc = check_tokens(t, src->config.name, err);
    cJSON_Delete(config);
    cJSON_Delete(map);
    if (rc != 0) {
        byte_level_free(t);
        return -1;
    }
    *out = t;
    return 0;
}

int byte_level_load(const char *dir, byte_level **out, vit_error *err) {
    if (!dir || !out) return vit_fail(err, "byte_level_load: missing dir or out");
    *out = NULL;
    static const char *const names[] = {"vocab.json", "merges.txt", "tokenizer_config.json",
                                        "special_tokens_map.json"};
    tokenizer_files f;
    int rc = tokenizer_files_read(&f, dir, names, 4, 2, err);
    const byte_level_sources src = {f.src[0], f.src[1], f.src[2], f.src[3]};
    if (rc == 0) rc = byte_level_load_memory(&src, out, err);
    tokenizer_files_free(&f);
    return rc;
}

void byte_level_free(byte_level *t) {
    if (!t) return;
    bpe_free(t->model);
    added_tokens_free(&t->added);
    free(t->name);
    free(t);
}

const char *byte_level_class_name(const byte_level *t) {
    return class_names[t->cls];
}

int byte_level_vocab_size(const byte_level *t) {
    const int n = bpe_vocab_size(t->model);
    return t->added.next_id > n ? t->added.next_id : n;
}

int byte_level_bos_id(const byte_level *t) {
    return added_tokens_named_id(&t->added, TOKEN_BOS);
}

const char *byte_level_piece(const byte_level *t, int id) {
    const int k = added_tokens_find_id(&t->added, id);
    return k >= 0 ? t->added.tok[k].content : bpe_piece(t->model, id);
}

/* ---- encoding ---- */

/* The special tokens each class puts before and after a text (-1: none). */
static void around(const byte_level *t, int32_t *front, int32_t *back) {
    *front = *back = -1;
    if (t->cls == CLASS_ROBERTA) {
        *front = added_tokens_named_id(&t->added, TOKEN_CLS);
        *back = added_tokens_named_id(&t->added, TOKEN_SEP);
    } else if (t->add_bos_token) {
        *front = byte_level_bos_id(t);
    }
}

/* The text as code points (each invalid UTF-8 run one U+FFFD), with the class's prefix space. */
static size_t text_code_points(const byte_level *t, const char *text, size_t len, int32_t *cps) {
    size_t n = 0;
    for (size_t i = 0; i < len;) {
        const int32_t c = utf8_decode_replace((const uint8_t *)text, len, &i);
        cps[n++] = c < 0 ? 0xFFFD : c;
    }
    const bool prefix =
        t->add_prefix_space && (t->cls == CLASS_GPT2 || (n > 0 && !py_isspace(cps[0])));
    if (prefix) {
        memmove(cps + 1, cps, n * sizeof *cps);
        cps[0] = ' ';
        n++;
    }
    return n;
}

/* The ids of cps[s.start..s.end), split by GPT-2's pattern, appended to ids[*count..cap). */
static void encode_span(const byte_level *t, bpe_work *w, const int32_t *cps, text_span s,
                        uint8_t *bytes, int32_t *ids, int *count, int cap) {
    for (size_t i = s.start; i < s.end && *count < cap;) {
        const size_t len = bpe_gpt2_piece(cps, s.end, i);
        int32_t n = 0;
        for (size_t k = i; k < i + len; k++) n += (int32_t)utf8_encode(cps[k], bytes + n);
        bpe_merge_piece(t->model, w, bytes, n, false, ids, count, cap);
        i += len;
    }
}

/* The ids of GPT-2 and RoBERTa. */
static int encode_text(const byte_level *t, const char *text, size_t len, int max_len, int32_t *ids,
                       vit_error *err) {
    int32_t front, back;
    around(t, &front, &back);
    const int cap = max_len - (back >= 0); /* the text's ids end here */
    if (max_len - (front >= 0) - (back >= 0) < 0 || max_len < 1)
        return vit_fail(err, "%s: max_len %d leaves no room for the special tokens", t->name,
                        max_len);
    int32_t *cps = malloc((len + 2) * sizeof *cps);
    text_span *spans = malloc((len + 2) * sizeof *spans);
    uint8_t *bytes = malloc(4 * len + 8);
    bpe_work *w = bpe_work_create(4 * len + 8);
    int count = 0;
    if (!cps || !spans || !bytes || !w) {
        count = vit_fail(err, "%s: out of memory for a text of %zu bytes", t->name, len);
    } else {
        const size_t n = text_code_points(t, text, len, cps);
        const size_t n_spans = added_tokens_split(&t->added, cps, n, spans);
        if (front >= 0) ids[count++] = front;
        for (size_t i = 0; i < n_spans && count < cap; i++) {
            if (spans[i].tok >= 0)
                ids[count++] = t->added.tok[spans[i].tok].id;
            else
                encode_span(t, w, cps, spans[i], bytes, ids, &count, cap);
        }
        if (back >= 0) ids[count++] = back;
    }
    free(cps), free(spans), free(bytes), bpe_work_free(w);
    return count;
}

int byte_level_encode(const byte_level *t, const char *text, size_t len, int max_len, int32_t *ids,
                      vit_error *err) {
    if (!t || !ids || (!text && len)) return vit_fail(err, "byte_level_encode: bad arguments");
    if (len > (size_t)INT_MAX / 16) return vit_fail(err, "%s: text too long", t->name);
    if (t->cls == CLASS_CLIP) return bpe_encode(t->model, text, len, max_len, ids, err);
    return encode_text(t, text ? text : "", len, max_len, ids, err);
}

/* ---- decoding ---- */

static const char *decode_token(const void *ctx, int32_t id) {
    return byte_level_piece(ctx, id);
}

static bool decode_special(const void *ctx, int32_t id) {
    return added_tokens_find_id(&((const byte_level *)ctx)->added, id) >= 0;
}

/* transformers' legacy added tokens: additional special tokens past the vocabulary. */
static bool decode_standalone(const void *ctx, int32_t id) {
    const byte_level *t = ctx;
    const int k = added_tokens_find_id(&t->added, id);
    return k >= 0 && t->added.tok[k].additional && id >= bpe_vocab_size(t->model);
}

/* The bytes of tokens[0..n): each token's byte symbols, or its own UTF-8 where it has characters
 * that are not. */
static void token_bytes(const bpe *model, const char *const *tokens, int n, text_buf *raw) {
    for (int i = 0; i < n; i++) {
        const size_t len = strlen(tokens[i]);
        uint8_t stack[256], *bytes = len <= sizeof stack ? stack : malloc(len);
        const int k = bytes ? bpe_token_bytes(model, tokens[i], bytes) : -1;
        text_buf_add(raw, k >= 0 ? (const void *)bytes : tokens[i], k >= 0 ? (size_t)k : len);
        if (!bytes) raw->failed = true;
        if (bytes != stack) free(bytes);
    }
}

/* CLIP's words: each "</w>" a space, the ends stripped. */
static void clip_words(const text_buf *text, text_buf *out) {
    text_buf spaced = {0};
    for (size_t i = 0; i < text->len;) {
        const bool eow = text->len - i >= 4 && memcmp(text->s + i, "</w>", 4) == 0;
        text_buf_add(&spaced, eow ? " " : text->s + i, 1);
        i += eow ? 4 : 1;
    }
    size_t a = 0, b = spaced.len;
    py_strip(spaced.s ? spaced.s : "", &a, &b);
    text_buf_add(out, spaced.s ? spaced.s + a : "", b - a);
    if (spaced.failed) out->failed = true;
    text_buf_free(&spaced);
}

/* convert_tokens_to_string: the tokens' bytes decoded with errors="replace" (CLIP's then read
 * as words). */
static void decode_join(const void *ctx, const int32_t *ids, const char *const *tokens, int n,
                        text_buf *out) {
    (void)ids;
    const byte_level *t = ctx;
    text_buf raw = {0}, text = {0};
    token_bytes(t->model, tokens, n, &raw);
    utf8_append_replaced(&text, (const uint8_t *)(raw.s ? raw.s : ""), raw.len);
    if (t->cls == CLASS_CLIP)
        clip_words(&text, out);
    else
        text_buf_add(out, text.s, text.len);
    if (raw.failed || text.failed) out->failed = true;
    text_buf_free(&raw), text_buf_free(&text);
}

int byte_level_decode(const byte_level *t, const int32_t *ids, int n, bool skip_special_tokens,
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

static void byte_level_ops_free(void *impl) {
    byte_level_free(impl);
}

static const char *byte_level_ops_piece(const void *impl, int id) {
    return byte_level_piece(impl, id);
}

static int byte_level_ops_encode(const void *impl, void *scratch, const char *text, size_t len,
                                 int max_len, int32_t *ids, vit_error *err) {
    (void)scratch;
    return byte_level_encode(impl, text, len, max_len, ids, err);
}

static int byte_level_ops_decode(const void *impl, const int32_t *ids, int n,
                                 bool skip_special_tokens, char *out, size_t size, vit_error *err) {
    return byte_level_decode(impl, ids, n, skip_special_tokens, out, size, err);
}

/* The tokenizer.json transformers' RobertaConverter writes of RobertaTokenizer's files (what
 * RobertaTokenizerFast runs, so what its offsets come from): BPE over vocab.json and merges.txt
 * (no prefix or suffix), ByteLevel with the config's add_prefix_space, RobertaProcessing with
 * cls and sep, add_prefix_space and trim_offsets, the ByteLevel decoder, the special tokens as
 * added tokens with their lstrip and rstrip (<mask>'s lstrip). GPT-2's and CLIP's are not
 * converted: no token classifier uses them. */
static int byte_level_fast_json(const void *impl, char **json, vit_error *err) {
    const byte_level *t = impl;
    const int cls = added_tokens_named_id(&t->added, TOKEN_CLS),
              sep = added_tokens_named_id(&t->added, TOKEN_SEP);
    if (t->cls != CLASS_ROBERTA || cls < 0 || sep < 0)
        return vit_fail(err, "offsets are computed for RobertaTokenizer's vocab.json, not for %s's",
                        class_names[t->cls < CLASS_UNKNOWN ? t->cls : CLASS_GPT2]);
    int32_t *pairs = NULL;
    const int merges = bpe_merges(t->model, &pairs);
    if (merges < 0) return vit_fail(err, "out of memory");
    cJSON *root = cJSON_CreateObject(), *added = cJSON_AddArrayToObject(root, "added_tokens");
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
    for (int k = 0; k < 2; k++) {
        cJSON *o = cJSON_AddObjectToObject(root, k ? "decoder" : "pre_tokenizer");
        cJSON_AddStringToObject(o, "type", "ByteLevel");
        cJSON_AddBoolToObject(o, "add_prefix_space", t->add_prefix_space);
        cJSON_AddBoolToObject(o, "trim_offsets", true);
        cJSON_AddBoolToObject(o, "use_regex", true);
    }
    cJSON *post = cJSON_AddObjectToObject(root, "post_processor");
    cJSON_AddStringToObject(post, "type", "RobertaProcessing");
    const int ends[2] = {sep, cls};
    for (int k = 0; k < 2; k++) {
        cJSON *pair = cJSON_AddArrayToObject(post, k ? "cls" : "sep");
        const added_token *a = &t->added.tok[added_tokens_find_id(&t->added, ends[k])];
        cJSON_AddItemToArray(pair, cJSON_CreateString(a->content));
        cJSON_AddItemToArray(pair, cJSON_CreateNumber(ends[k]));
    }
    cJSON_AddBoolToObject(post, "trim_offsets", true);
    cJSON_AddBoolToObject(post, "add_prefix_space", t->add_prefix_space);
    cJSON *model = cJSON_AddObjectToObject(root, "model");
    cJSON_AddStringToObject(model, "type", "BPE");
    cJSON_AddStringToObject(model, "continuing_subword_prefix", "");
    cJSON_AddStringToObject(model, "end_of_word_suffix", "");
    cJSON_AddBoolToObject(model, "fuse_unk", false);
    cJSON *vocab = cJSON_AddObjectToObject(model, "vocab"),
          *list = cJSON_AddArrayToObject(model, "merges");
    for (int id = 0; vocab && id < bpe_vocab_size(t->model); id++) {
        const char *piece = bpe_piece(t->model, id);
        if (piece) cJSON_AddItemToObject(vocab, piece, cJSON_CreateNumber(id));
    }
    for (int i = 0; list && i < merges; i++) {
        cJSON *pair = cJSON_CreateArray();
        cJSON_AddItemToArray(pair, cJSON_CreateString(bpe_piece(t->model, pairs[2 * i])));
        cJSON_AddItemToArray(pair, cJSON_CreateString(bpe_piece(t->model, pairs[2 * i + 1])));
        cJSON_AddItemToArray(list, pair);
    }
    free(pairs);
    *json = vocab && list ? cJSON_PrintUnformatted(root) : NULL;
    cJSON_Delete(root);
    return *json ? 0 : vit_fail(err, "out of memory");
}

static int byte_level_ops_load(const char *dir, void **impl, text_tokenizer_info *info,
                               vit_error *err) {
    byte_level *t;
    if (byte_level_load(dir, &t, err) != 0) return -1;
    *impl = t;
    *info = (text_tokenizer_info){.kind = "byte-level BPE",
                                  .class_name = byte_level_class_name(t),
                                  .vocab_size = byte_level_vocab_size(t),
                                  .max_len = t->max_len};
    added_tokens_special_ids(&t->added, &info->bos_id, &info->eos_id, &info->pad_id);
    return 0;
}

const text_tokenizer_ops byte_level_ops = {.load = byte_level_ops_load,
                                           .free = byte_level_ops_free,
                                           .piece = byte_level_ops_piece,
                                           .encode = byte_level_ops_encode,
                                           .decode = byte_level_ops_decode,
                                           .fast_json = byte_level_fast_json};
