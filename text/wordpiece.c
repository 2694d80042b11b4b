#include "text/wordpiece.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "text/bert_basic.h"
#include "text/decode.h"
#include "vit/base/json.h"
#include "text/utf8.h"
#include "text/vocab.h"

#define MAX_WORD_CHARS  100 /* WordpieceTokenizer.max_input_chars_per_word */
#define DEFAULT_MAX_LEN 512

enum { SP_UNK, SP_SEP, SP_PAD, SP_CLS, SP_MASK, SP_COUNT };
static const char *const special_key[SP_COUNT] = {"unk_token", "sep_token", "pad_token",
                                                  "cls_token", "mask_token"};
static const char *const special_default[SP_COUNT] = {"[UNK]", "[SEP]", "[PAD]", "[CLS]", "[MASK]"};

struct tokenizer {
    vocab vocab;
    bert_basic_options opt;
    char *special[SP_COUNT];  /* names; NULL when the config sets none */
    int special_id[SP_COUNT]; /* -1 when not in the vocabulary */
    int match[SP_COUNT];      /* the specials recognised in text, longest name first */
    size_t match_len[SP_COUNT];
    int n_match;
    bool starts_special[256];       /* first bytes of those names, a cheap pre-test */
    int32_t *never_split[SP_COUNT]; /* every configured name as code points, for opt */
    size_t never_split_len[SP_COUNT];
    int max_len;
    bool clean_up; /* clean_up_tokenization_spaces: BertTokenizer's default is true */
};

struct tokenizer_scratch {
    bert_scratch basic;
};

/* ---- loading ---- */

static int json_bool(const cJSON *root, const char *key, bool *out, const char *src,
                     vit_error *err) {
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!item || cJSON_IsNull(item)) return 0;
    if (!cJSON_IsBool(item)) return vit_fail(err, "%s: '%s' must be true or false", src, key);
    *out = cJSON_IsTrue(item);
    return 0;
}

/* A special token is a string or a serialised AddedToken {"content": ...}; null unsets it. */
static int json_special(const cJSON *root, const char *key, char **out, const char *src,
                        vit_error *err) {
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!item) return 0;
    item = json_token_content(item);
    if (!cJSON_IsNull(item) && !cJSON_IsString(item))
        return vit_fail(err, "%s: '%s' must be a string or {\"content\": string}", src, key);
    char *name = cJSON_IsString(item) ? strdup(item->valuestring) : NULL;
    if (cJSON_IsString(item) && !name) return vit_fail(err, "%s: out of memory", src);
    free(*out);
    *out = name;
    return 0;
}

/* Lowers *max_len to a length field when it is given; transformers writes 1e30 for "no limit". */
static int json_length(const cJSON *root, const char *key, int *max_len, const char *src,
                       vit_error *err) {
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!item || cJSON_IsNull(item)) return 0;
    if (!cJSON_IsNumber(item) || item->valuedouble < 2)
        return vit_fail(err, "%s: '%s' must be a number of at least 2", src, key);
    if (item->valuedouble < INT_MAX && (*max_len <= 0 || item->valuedouble < *max_len))
        *max_len = (int)item->valuedouble;
    return 0;
}

/* Settings whose behaviour this tokenizer does not implement must not be ignored silently. */
static int check_unsupported(const cJSON *root, const char *src, vit_error *err) {
    bool basic = true;
    if (json_bool(root, "do_basic_tokenize", &basic, src, err) != 0) return -1;
    if (!basic) return vit_fail(err, "%s: do_basic_tokenize false is not supported", src);
    const cJSON *never = cJSON_GetObjectItemCaseSensitive(root, "never_split");
    if (never && !cJSON_IsNull(never) && !(cJSON_IsArray(never) && cJSON_GetArraySize(never) == 0))
        return vit_fail(err, "%s: never_split is not supported", src);
    return 0;
}

static int read_tokenizer_config(tokenizer *t, const tokenizer_source *src, vit_error *err) {
    const char *path = src->name;
    cJSON *root;
    if (tokenizer_source_json(src, &root, err) != 0) return -1;
    bool lower = true, strip = true;
    const cJSON *strip_item = root ? cJSON_GetObjectItemCaseSensitive(root, "strip_accents") : NULL;
    const bool strip_given = strip_item && !cJSON_IsNull(strip_item);
    int rc = 0;
    if (root) {
        rc = check_unsupported(root, path, err);
        if (rc == 0) rc = json_bool(root, "do_lower_case", &lower, path, err);
        if (rc == 0) rc = json_bool(root, "strip_accents", &strip, path, err);
        if (rc == 0)
            rc = json_bool(root, "tokenize_chinese_chars", &t->opt.chinese_chars, path, err);
        if (rc == 0) rc = json_bool(root, "do_split_on_punc", &t->opt.split_punct, path, err);
        if (rc == 0) rc = json_bool(root, "clean_up_tokenization_spaces", &t->clean_up, path, err);
        for (int i = 0; i < SP_COUNT && rc == 0; i++)
            rc = json_special(root, special_key[i], &t->special[i], path, err);
        if (rc == 0) rc = json_length(root, "model_max_length", &t->max_len, path, err);
    }
    /* strip_accents null follows do_lower_case, as in the original BERT. */
    t->opt.lower_case = lower;
    t->opt.strip_accents = strip_given ? strip : lower;
    cJSON_Delete(root);
    return rc;
}

/* transformers lets special_tokens_map.json override the names in tokenizer_config.json. */
static int read_special_tokens_map(tokenizer *t, const tokenizer_source *src, vit_error *err) {
    cJSON *root;
    if (tokenizer_source_json(src, &root, err) != 0) return -1;
    int rc = 0;
    for (int i = 0; i < SP_COUNT && root && rc == 0; i++)
        rc = json_special(root, special_key[i], &t->special[i], src->name, err);
    cJSON_Delete(root);
    return rc;
}

static int read_model_config(tokenizer *t, const tokenizer_source *src, vit_error *err) {
    cJSON *root;
    if (tokenizer_source_json(src, &root, err) != 0) return -1;
    const int rc =
        root ? json_length(root, "max_position_embeddings", &t->max_len, src->name, err) : 0;
    cJSON_Delete(root);
    return rc;
}

/* Looks the special tokens up and orders the ones to recognise in text, longest first, so that
 * the longest name wins where one is a prefix of another (as transformers' trie does). */
static int resolve_specials(tokenizer *t, const char *vocab_name, vit_error *err) {
    for (int i = 0; i < SP_COUNT; i++) {
        const char *s = t->special[i];
        t->special_id[i] = s ? vocab_find(&t->vocab, s, strlen(s), false) : -1;
        if (t->special_id[i] < 0 && (i == SP_UNK || i == SP_CLS || i == SP_SEP))
            return vit_fail(err, "%s: no %s %s%s%s", vocab_name, special_key[i], s ? "'" : "",
                            s ? s : "(unset)", s ? "'" : "");
        if (t->special_id[i] < 0 || !s[0]) continue;
        size_t len = strlen(s);
        int k = t->n_match++;
        for (; k > 0 && t->match_len[k - 1] < len; k--) {
            t->match[k] = t->match[k - 1];
            t->match_len[k] = t->match_len[k - 1];
        }
        t->match[k] = i;
        t->match_len[k] = len;
        t->starts_special[(unsigned char)s[0]] = true;
    }
    return 0;
}

/* s as code points into out (room for strlen(s) of them); false when s is not valid UTF-8. */
static bool decode_all(const char *s, int32_t *out, size_t *n) {
    const size_t len = strlen(s);
    *n = 0;
    for (size_t i = 0; i < len;) {
        const int32_t cp = utf8_decode((const uint8_t *)s, len, &i);
        if (cp < 0) return false;
        out[(*n)++] = cp;
    }
    return true;
}

/* Every configured special name as code points, for opt.never_split. BasicTokenizer compares
 * decoded words, so a name that is not valid UTF-8 can never match and is left out. */
static int set_never_split(tokenizer *t, vit_error *err) {
    for (int i = 0; i < SP_COUNT; i++) {
        const char *name = t->special[i];
        if (!name || !name[0]) continue;
        int32_t *cps = malloc(sizeof *cps * strlen(name));
        size_t n;
        if (!cps) return vit_fail(err, "tokenizer: out of memory");
        if (!decode_all(name, cps, &n)) {
            free(cps);
            continue;
        }
        t->never_split[t->opt.num_never_split] = cps;
        t->never_split_len[t->opt.num_never_split++] = n;
    }
    t->opt.never_split = (const int32_t *const *)t->never_split;
    t->opt.never_split_len = t->never_split_len;
    return 0;
}

static int set_defaults(tokenizer *t, vit_error *err) {
    t->opt = (bert_basic_options){
        .lower_case = true, .strip_accents = true, .chinese_chars = true, .split_punct = true};
    t->clean_up = true;
    for (int i = 0; i < SP_COUNT; i++) {
        t->special[i] = strdup(special_default[i]);
        if (!t->special[i]) return vit_fail(err, "tokenizer: out of memory");
    }
    return 0;
}

int tokenizer_load_memory(const tokenizer_sources *src, tokenizer **out, vit_error *err) {
    *out = NULL;
    if (!src->vocab.text) return vit_fail(err, "%s: no vocabulary", src->vocab.name);
    tokenizer *t = calloc(1, sizeof *t);
    if (!t) return vit_fail(err, "%s: out of memory", src->vocab.name);
    if (set_defaults(t, err) != 0 ||
        vocab_from_memory(&t->vocab, src->vocab.text, src->vocab.size, src->vocab.name, err) != 0 ||
        read_tokenizer_config(t, &src->config, err) != 0 ||
        read_special_tokens_map(t, &src->special_tokens_map, err) != 0 ||
        read_model_config(t, &src->model_config, err) != 0 ||
        resolve_specials(t, src->vocab.name, err) != 0 || set_never_split(t, err) != 0) {
        tokenizer_free(t);
        return -1;
    }
    if (t->max_len <= 0) t->max_len = DEFAULT_MAX_LEN;
    *out = t;
    return 0;
}

int tokenizer_load(const char *model_dir, tokenizer **out, vit_error *err) {
    if (!model_dir || !out) return vit_fail(err, "tokenizer_load: missing model_dir or out");
    *out = NULL;
    static const char *const names[] = {"vocab.txt", "tokenizer_config.json",
                                        "special_tokens_map.json", "config.json"};
    tokenizer_files f;
    int rc = tokenizer_files_read(&f, model_dir, names, 4, 1, err);
    const tokenizer_sources src = {f.src[0], f.src[1], f.src[2], f.src[3]};
    if (rc == 0) rc = tokenizer_load_memory(&src, out, err);
    tokenizer_files_free(&f);
    return rc;
}

void tokenizer_free(tokenizer *t) {
    if (!t) return;
    vocab_free(&t->vocab);
    for (int i = 0; i < SP_COUNT; i++) {
        free(t->special[i]);
        free(t->never_split[i]);
    }
    free(t);
}

/* ---- encoding ---- */

/* The ids produced so far; cap keeps one slot free for the final [SEP]. */
typedef struct {
    const tokenizer *tok;
    int32_t *ids;
    const char **pieces;
    int n, cap;
} output;

/* Appends id; returns nonzero once the output is full, which stops the tokenization early. */
static int push(output *o, int id) {
    if (o->n >= o->cap) return 1;
    o->ids[o->n] = id;
    if (o->pieces) o->pieces[o->n] = vocab_token(&o->tok->vocab, id);
    o->n++;
    return o->n >= o->cap;
}

/* Longest vocabulary entry word[off[start]..off[end]) over end, "##"-prefixed after the first
 * piece. Returns its id and sets *end, or -1. */
static int longest_piece(const vocab *v, const char *word, const size_t *off, size_t start,
                         size_t n, size_t *end) {
    const bool continuation = start > 0;
    const size_t prefix = continuation ? 2 : 0;
    for (size_t e = n; e > start; e--) {
        const size_t len = off[e] - off[start];
        if (len + prefix > v->max_length) continue; /* cannot be in the vocabulary */
        const int id = vocab_find(v, word + off[start], len, continuation);
        if (id >= 0) {
            *end = e;
            return id;
        }
    }
    return -1;
}

/* WordPiece of one word from the basic tokenizer (the bert_word_fn callback). */
static int wordpiece(const int32_t *cp, size_t n, void *ctx) {
    output *o = ctx;
    const tokenizer *t = o->tok;
    if (n > MAX_WORD_CHARS) return push(o, t->special_id[SP_UNK]);
    char word[4 * MAX_WORD_CHARS];
    size_t off[MAX_WORD_CHARS + 1];
    off[0] = 0;
    for (size_t i = 0; i < n; i++)
        off[i + 1] = off[i] + utf8_encode(cp[i], (uint8_t *)word + off[i]);
    int32_t found[MAX_WORD_CHARS];
    size_t k = 0;
    for (size_t start = 0, end; start < n; start = end) {
        const int id = longest_piece(&t->vocab, word, off, start, n, &end);
        if (id < 0) return push(o, t->special_id[SP_UNK]); /* the whole word, not just the rest */
        found[k++] = id;
    }
    for (size_t i = 0; i < k; i++) {
        if (push(o, found[i])) return 1;
    }
    return 0;
}

/* The id of a special token written at s[0..n), setting *len, or -1. */
static int match_special(const tokenizer *t, const char *s, size_t n, size_t *len) {
    if (!t->starts_special[(unsigned char)s[0]]) return -1;
    for (int k = 0; k < t->n_match; k++) {
        if (t->match_len[k] <= n && memcmp(s, t->special[t->match[k]], t->match_len[k]) == 0) {
            *len = t->match_len[k];
            return t->special_id[t->match[k]];
        }
    }
    return -1;
}

/* Splits text at special tokens written in it and tokenizes the stretches between them. */
static int encode_text(const tokenizer *t, const char *text, size_t len, output *o, bert_scratch *s,
                       vit_error *err) {
    size_t from = 0;
    for (size_t i = 0; i < len;) {
        size_t n;
        const int id = match_special(t, text + i, len - i, &n);
        if (id < 0) {
            i++;
            continue;
        }
        int rc = bert_basic_tokenize(&t->opt, text + from, i - from, s, wordpiece, o, err);
        if (rc == 0) rc = push(o, id);
        if (rc != 0) return rc < 0 ? -1 : 0;
        i += n;
        from = i;
    }
    return bert_basic_tokenize(&t->opt, text + from, len - from, s, wordpiece, o, err) < 0 ? -1 : 0;
}

tokenizer_scratch *tokenizer_scratch_create(void) {
    return calloc(1, sizeof(tokenizer_scratch));
}

void tokenizer_scratch_free(tokenizer_scratch *s) {
    if (!s) return;
    bert_scratch_free(&s->basic);
    free(s);
}

int tokenizer_encode_with(const tokenizer *tok, tokenizer_scratch *scratch, const char *text,
                          size_t len, int max_len, int32_t *ids, const char **pieces,
                          vit_error *err) {
    if (!tok || !scratch || !ids || (!text && len > 0))
        return vit_fail(err, "tokenizer_encode: missing tokenizer, scratch, text or output array");
    if (max_len < 2)
        return vit_fail(err, "tokenizer_encode: max_len %d leaves no room for [CLS] and [SEP]",
                        max_len);
    output o = {tok, ids, pieces, 0, max_len - 1};
    push(&o, tok->special_id[SP_CLS]);
    if (o.n < o.cap && encode_text(tok, text ? text : "", len, &o, &scratch->basic, err) < 0)
        return -1;
    o.cap++;
    push(&o, tok->special_id[SP_SEP]);
    return o.n;
}

int tokenizer_encode(const tokenizer *tok, const char *text, size_t len, int max_len, int32_t *ids,
                     const char **pieces, vit_error *err) {
    tokenizer_scratch s = {{0}};
    const int n = tokenizer_encode_with(tok, &s, text, len, max_len, ids, pieces, err);
    bert_scratch_free(&s.basic);
    return n;
}

const char *tokenizer_piece(const tokenizer *tok, int id) {
    return vocab_token(&tok->vocab, id);
}

int tokenizer_token_id(const tokenizer *tok, const char *piece) {
    return vocab_find(&tok->vocab, piece, strlen(piece), false);
}

int tokenizer_vocab_size(const tokenizer *tok) {
    return tok->vocab.count;
}
int tokenizer_max_len(const tokenizer *tok) {
    return tok->max_len;
}
int tokenizer_cls_id(const tokenizer *tok) {
    return tok->special_id[SP_CLS];
}
int tokenizer_sep_id(const tokenizer *tok) {
    return tok->special_id[SP_SEP];
}
int tokenizer_pad_id(const tokenizer *tok) {
    return tok->special_id[SP_PAD];
}
int tokenizer_unk_id(const tokenizer *tok) {
    return tok->special_id[SP_UNK];
}

/* ---- decoding ---- */

static const char *decode_token(const void *ctx, int32_t id) {
    return tokenizer_piece(ctx, id);
}

static bool decode_special(const void *ctx, int32_t id) {
    const tokenizer *t = ctx;
    for (int i = 0; i < SP_COUNT; i++)
        if (t->special_id[i] >= 0 && t->special_id[i] == id) return true;
    return false;
}

/* BertTokenizer.convert_tokens_to_string: " ".join(tokens).replace(" ##", "").strip() */
static void decode_join(const void *ctx, const int32_t *ids, const char *const *tokens, int n,
                        text_buf *out) {
    (void)ctx, (void)ids;
    text_buf text = {0};
    for (int i = 0; i < n; i++) {
        const bool continuation = i > 0 && strncmp(tokens[i], "##", 2) == 0;
        if (i > 0 && !continuation) text_buf_add(&text, " ", 1);
        text_buf_add(&text, tokens[i] + (continuation ? 2 : 0),
                     strlen(tokens[i]) - (continuation ? 2 : 0));
    }
    size_t a = 0, b = text.len;
    py_strip(text.s ? text.s : "", &a, &b);
    text_buf_add(out, text.s ? text.s + a : "", b - a);
    if (text.failed) out->failed = true;
    text_buf_free(&text);
}

int tokenizer_decode(const tokenizer *tok, const int32_t *ids, int n, bool skip_special_tokens,
                     char *out, size_t size, vit_error *err) {
    const text_decoder d = {.ctx = tok,
                            .name = "WordPiece tokenizer",
                            .token = decode_token,
                            .special = decode_special,
                            .join = decode_join,
                            .clean_up = tok->clean_up};
    return text_decode(&d, ids, n, skip_special_tokens, out, size, err);
}

/* ---- behind text/text_tokenizer.h ---- */

static void wordpiece_ops_free(void *impl) {
    tokenizer_free(impl);
}

static const char *wordpiece_ops_piece(const void *impl, int id) {
    return tokenizer_piece(impl, id);
}

static int wordpiece_ops_encode(const void *impl, void *scratch, const char *text, size_t len,
                                int max_len, int32_t *ids, vit_error *err) {
    return tokenizer_encode_with(impl, scratch, text, len, max_len, ids, NULL, err);
}

static int wordpiece_ops_decode(const void *impl, const int32_t *ids, int n,
                                bool skip_special_tokens, char *out, size_t size, vit_error *err) {
    return tokenizer_decode(impl, ids, n, skip_special_tokens, out, size, err);
}

static void *wordpiece_ops_scratch(void) {
    return tokenizer_scratch_create();
}

static void wordpiece_ops_scratch_free(void *scratch) {
    tokenizer_scratch_free(scratch);
}

/* The tokenizer.json transformers' BertConverter writes of this tokenizer (what BertTokenizerFast
 * runs, and so what its offsets come from): BertNormalizer with these settings, BertPreTokenizer,
 * WordPiece over vocab.txt (a token written twice at its later id, as the vocab dict has it), the
 * special tokens as added tokens, [CLS] $A [SEP], the WordPiece decoder with its clean-up. The fast
 * tokenizer splits every punctuation character and never NFC-composes, so do_split_on_punc false
 * has no fast equivalent. */
static int wordpiece_ops_fast_json(const void *impl, char **json, vit_error *err) {
    const tokenizer *t = impl;
    if (!t->opt.split_punct)
        return vit_fail(err, "do_split_on_punc false has no fast tokenizer (BertPreTokenizer)");
    cJSON *root = cJSON_CreateObject(), *added = cJSON_AddArrayToObject(root, "added_tokens");
    for (int i = 0; i < SP_COUNT; i++) {
        const int id = t->special_id[i];
        bool seen = false; /* one added token per id, as the added vocabulary keeps them */
        for (int k = 0; k < i; k++) seen |= t->special_id[k] == id;
        if (id < 0 || seen) continue;
        cJSON *a = cJSON_CreateObject();
        cJSON_AddNumberToObject(a, "id", id);
        cJSON_AddStringToObject(a, "content", t->special[i]);
        cJSON_AddBoolToObject(a, "single_word", false);
        cJSON_AddBoolToObject(a, "lstrip", false);
        cJSON_AddBoolToObject(a, "rstrip", false);
        cJSON_AddBoolToObject(a, "normalized", false);
        cJSON_AddBoolToObject(a, "special", true);
        cJSON_AddItemToArray(added, a);
    }
    cJSON *norm = cJSON_AddObjectToObject(root, "normalizer");
    cJSON_AddStringToObject(norm, "type", "BertNormalizer");
    cJSON_AddBoolToObject(norm, "clean_text", true);
    cJSON_AddBoolToObject(norm, "handle_chinese_chars", t->opt.chinese_chars);
    cJSON_AddBoolToObject(norm, "strip_accents", t->opt.strip_accents);
    cJSON_AddBoolToObject(norm, "lowercase", t->opt.lower_case);
    cJSON_AddStringToObject(cJSON_AddObjectToObject(root, "pre_tokenizer"), "type",
                            "BertPreTokenizer");
    cJSON *post = cJSON_AddObjectToObject(root, "post_processor");
    cJSON_AddStringToObject(post, "type", "BertProcessing");
    const int ends[2] = {SP_SEP, SP_CLS};
    for (int k = 0; k < 2; k++) {
        cJSON *pair = cJSON_AddArrayToObject(post, k == 0 ? "sep" : "cls");
        cJSON_AddItemToArray(pair, cJSON_CreateString(t->special[ends[k]]));
        cJSON_AddItemToArray(pair, cJSON_CreateNumber(t->special_id[ends[k]]));
    }
    cJSON *dec = cJSON_AddObjectToObject(root, "decoder");
    cJSON_AddStringToObject(dec, "type", "WordPiece");
    cJSON_AddStringToObject(dec, "prefix", "##");
    cJSON_AddBoolToObject(dec, "cleanup", true);
    cJSON *model = cJSON_AddObjectToObject(root, "model");
    cJSON_AddStringToObject(model, "type", "WordPiece");
    cJSON_AddStringToObject(model, "unk_token", t->special[SP_UNK]);
    cJSON_AddStringToObject(model, "continuing_subword_prefix", "##");
    cJSON_AddNumberToObject(model, "max_input_chars_per_word", MAX_WORD_CHARS);
    cJSON *vocab = cJSON_AddObjectToObject(model, "vocab");
    for (int id = 0; vocab && id < t->vocab.count; id++) {
        const char *tok = vocab_token(&t->vocab, id);
        if (vocab_find(&t->vocab, tok, strlen(tok), false) == id)
            cJSON_AddItemToObject(vocab, tok, cJSON_CreateNumber(id));
    }
    *json = vocab ? cJSON_PrintUnformatted(root) : NULL;
    cJSON_Delete(root);
    return *json ? 0 : vit_fail(err, "out of memory");
}

static int wordpiece_ops_load(const char *dir, void **impl, text_tokenizer_info *info,
                              vit_error *err) {
    tokenizer *t;
    if (tokenizer_load(dir, &t, err) != 0) return -1;
    *impl = t;
    wordpiece_info(t, info);
    return 0;
}

void wordpiece_info(const tokenizer *t, text_tokenizer_info *info) {
    /* padding is masked out, so any valid id will do where there is no [PAD] */
    const int pad = tokenizer_pad_id(t);
    *info = (text_tokenizer_info){.kind = "WordPiece",
                                  .class_name = "BertTokenizer",
                                  .vocab_size = tokenizer_vocab_size(t),
                                  .max_len = tokenizer_max_len(t),
                                  .pad_id = pad >= 0 ? pad : 0,
                                  .bos_id = -1, /* BertTokenizer has no bos_token nor eos_token */
                                  .eos_id = -1};
}

const text_tokenizer_ops wordpiece_ops = {.load = wordpiece_ops_load,
                                          .free = wordpiece_ops_free,
                                          .piece = wordpiece_ops_piece,
                                          .scratch_create = wordpiece_ops_scratch,
                                          .scratch_free = wordpiece_ops_scratch_free,
                                          .encode = wordpiece_ops_encode,
                                          .decode = wordpiece_ops_decode,
                                          .fast_json = wordpiece_ops_fast_json};
