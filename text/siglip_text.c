/* SigLIP's tokenizer over a SentencePiece model (see text/siglip_text.h). Written from
 * transformers' SiglipTokenizer (tokenization_siglip.py) and the PreTrainedTokenizer code it runs
 * on; tools/spm_reference.py is the same in Python, and tests/data/spm-micro/golden.json holds its
 * answers. The text is handled as code points until each run goes to the model as UTF-8. */
#include "text/siglip_text.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "text/added_tokens.h"
#include "text/decode.h"
#include "text/utf8.h"
#include "vit/base/json.h"

#define DEFAULT_MAX_LEN 64 /* SiglipTokenizer's model_max_length */
#define UNDERLINE       0x2581
#define UNDERLINE_UTF8  "\xe2\x96\x81"

struct siglip_text {
    spm *model;
    /* all_special_tokens: eos, unk, pad (named[TOKEN_EOS], [TOKEN_UNK], [TOKEN_PAD]) and any
     * other the files name, each content once */
    added_tokens special;
    bool lower, clean_up;
    int max_len;
    int unk_length;   /* how many ids the unk token's text encodes to */
    int underline_id; /* the piece "▁" */
};

/* The named token (TOKEN_EOS, TOKEN_UNK, TOKEN_PAD: always set once loaded). */
static const added_token *named(const siglip_text *t, int name) {
    return &t->special.tok[t->special.named[name]];
}

/* Python's string.punctuation: the ASCII punctuation and symbols. */
static bool ascii_punct(int32_t c) {
    return (c >= 0x21 && c <= 0x2F) || (c >= 0x3A && c <= 0x40) || (c >= 0x5B && c <= 0x60) ||
           (c >= 0x7B && c <= 0x7E);
}

/* ---- loading ---- */

static const cJSON *field(const cJSON *root, const char *key) {
    const cJSON *item = root ? cJSON_GetObjectItemCaseSensitive(root, key) : NULL;
    return item && !cJSON_IsNull(item) ? item : NULL;
}

static int json_flag(const cJSON *root, const char *key, bool *out, const char *src,
                     vit_error *err) {
    const cJSON *item = field(root, key);
    if (!item) return 0;
    if (!cJSON_IsBool(item)) return vit_fail(err, "%s: '%s' must be true or false", src, key);
    *out = cJSON_IsTrue(item);
    return 0;
}

/* Settings whose behaviour is not implemented here are refused, never ignored. */
static int check_unsupported(const cJSON *config, const char *src, vit_error *err) {
    const cJSON *cls = field(config, "tokenizer_class");
    if (cls && (!cJSON_IsString(cls) || (strcmp(cls->valuestring, "SiglipTokenizer") != 0 &&
                                         strcmp(cls->valuestring, "SiglipTokenizerFast") != 0)))
        return vit_fail(err, "%s: tokenizer_class %s is not SiglipTokenizer", src,
                        cJSON_IsString(cls) ? cls->valuestring : "(not a string)");
    const cJSON *kwargs = field(config, "sp_model_kwargs");
    if (kwargs && !(cJSON_IsObject(kwargs) && !kwargs->child))
        return vit_fail(err, "%s: sp_model_kwargs (sampling) is not supported", src);
    /* split_special_tokens and truncation_side: added_tokens_settings */
    const cJSON *side = field(config, "padding_side");
    if (side && !(cJSON_IsString(side) && strcmp(side->valuestring, "right") == 0))
        return vit_fail(err, "%s: padding_side other than \"right\" is not supported", src);
    return 0;
}

/* get_vocab()'s id of content: its piece in the model, else -1. */
static int vocab_lookup(const void *ctx, const char *content) {
    return spm_piece_id(((const siglip_text *)ctx)->model, content);
}

/* The special tokens, read as every slow class reads them (text/added_tokens.h) with
 * SiglipTokenizer's defaults: eos "</s>", unk "<unk>", pad "</s>", each stripping on both sides
 * when given as a plain string. Each must be a piece of the model. */
static int read_tokens(siglip_text *t, const cJSON *config, const cJSON *map,
                       const siglip_text_sources *src, vit_error *err) {
    const int vocab = spm_vocab_size(t->model);
    added_token_defaults d = {.lookup = vocab_lookup, .ctx = t, .vocab_size = vocab};
    const int named_tokens[] = {TOKEN_EOS, TOKEN_UNK, TOKEN_PAD};
    const char *const contents[] = {"</s>", "<unk>", "</s>"};
    for (int i = 0; i < 3; i++) {
        const int k = named_tokens[i];
        d.content[k] = contents[i];
        d.lstrip[k] = d.rstrip[k] = true;
    }
    if (added_tokens_read(&t->special, config, map, &d, src->config.name,
                          src->special_tokens_map.name, err) != 0)
        return -1;
    for (int i = 0; i < 3; i++)
        if (t->special.named[named_tokens[i]] < 0)
            return vit_fail(err, "%s: SiglipTokenizer needs an eos_token, unk_token and pad_token",
                            src->config.name);
    for (int i = 0; i < t->special.count; i++)
        if (t->special.tok[i].id >= vocab)
            return vit_fail(err, "%s: special token \"%.40s\" is not a piece of the model",
                            src->model.name, t->special.tok[i].content);
    return 0;
}

static int read_settings(siglip_text *t, const siglip_text_sources *src, vit_error *err) {
    cJSON *config, *map = NULL;
    if (tokenizer_source_json(&src->config, &config, err) != 0) return -1;
    int rc = tokenizer_source_json(&src->special_tokens_map, &map, err);
    const char *name = src->config.name;
    t->lower = true;
    if (rc == 0) rc = check_unsupported(config, name, err);
    if (rc == 0) rc = json_flag(config, "do_lower_case", &t->lower, name, err);
    if (rc == 0) rc = added_tokens_settings(config, name, &t->clean_up, &t->max_len, err);
    if (rc == 0 && !field(config, "model_max_length")) t->max_len = DEFAULT_MAX_LEN;
    if (rc == 0) rc = read_tokens(t, config, map, src, err);
    cJSON_Delete(config);
    cJSON_Delete(map);
    return rc;
}

/* The unk prefix's length, the "▁" piece (U+2581). */
static int resolve(siglip_text *t, const char *model_name, vit_error *err) {
    const char *unk = named(t, TOKEN_UNK)->content;
    t->unk_length = spm_encode(t->model, unk, strlen(unk), NULL, 0, err);
    if (t->unk_length < 0) return -1;
    t->underline_id = spm_piece_id(t->model, UNDERLINE_UTF8);
    if (t->underline_id < 0)
        return vit_fail(err, "%s: the model has no piece \"" UNDERLINE_UTF8 "\" (U+2581)",
                        model_name);
    return 0;
}

int siglip_text_load_memory(const siglip_text_sources *src, siglip_text **out, vit_error *err) {
    *out = NULL;
    if (!src->model.text) return vit_fail(err, "%s: no SentencePiece model", src->model.name);
    siglip_text *t = calloc(1, sizeof *t);
    if (!t) return vit_fail(err, "%s: out of memory", src->model.name);
    if (spm_load_memory(src->model.text, src->model.size, src->model.name, SPM_NO_DUMMY_PREFIX,
                        &t->model, err) != 0 ||
        read_settings(t, src, err) != 0 || resolve(t, src->model.name, err) != 0) {
        siglip_text_free(t);
        return -1;
    }
    *out = t;
    return 0;
}

int siglip_text_load(const char *dir, siglip_text **out, vit_error *err) {
    if (!dir || !out) return vit_fail(err, "siglip_text_load: missing dir or out");
    *out = NULL;
    tokenizer_files f;
    int rc = spm_files_read(&f, dir, "spiece.model", err);
    const spm_sources src = {f.src[0], f.src[1], f.src[2]};
    if (rc == 0) rc = siglip_text_load_memory(&src, out, err);
    tokenizer_files_free(&f);
    return rc;
}

void siglip_text_free(siglip_text *t) {
    if (!t) return;
    spm_free(t->model);
    added_tokens_free(&t->special);
    free(t);
}

int siglip_text_max_len(const siglip_text *t) {
    return t->max_len;
}
int siglip_text_eos_id(const siglip_text *t) {
    return added_tokens_named_id(&t->special, TOKEN_EOS);
}
int siglip_text_pad_id(const siglip_text *t) {
    return added_tokens_named_id(&t->special, TOKEN_PAD);
}
int siglip_text_unk_id(const siglip_text *t) {
    return added_tokens_named_id(&t->special, TOKEN_UNK);
}
const spm *siglip_text_spm(const siglip_text *t) {
    return t->model;
}

/* ---- encoding ---- */

/* The first of all_special_tokens written at cps[at] (the alternation of
 * PreTrainedTokenizer.tokenize's lower-casing pattern), or -1. The split takes the longest
 * instead (added_tokens_split, as its trie does). */
static int first_token_at(const siglip_text *t, const int32_t *cps, size_t n, size_t at) {
    for (int i = 0; i < t->special.count; i++) {
        const added_token *s = &t->special.tok[i];
        if (n - at >= s->n && memcmp(cps + at, s->cps, s->n * sizeof *cps) == 0) return i;
    }
    return -1;
}

/* in[0..n) lower-cased character by character (Python's str.lower on each), the special tokens
 * kept as written, into out (room for 2n: U+0130 becomes two). Returns the new length. */
static size_t lower_case(const siglip_text *t, const int32_t *in, size_t n, int32_t *out) {
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        const int k = first_token_at(t, in, n, i);
        if (k >= 0) {
            const size_t len = t->special.tok[k].n;
            memcpy(out + o, in + i, len * sizeof *in);
            o += len, i += len;
            continue;
        }
        const int32_t c = in[i++];
        if (c == 0x130) { /* SpecialCasing.txt's one unconditional lower-case expansion */
            out[o++] = 'i', out[o++] = 0x307;
        } else {
            out[o++] = utf8proc_tolower(c);
        }
    }
    return o;
}

/* Canonicalises cps[s.start..s.end) (punctuation out, white space runs to one space, ends
 * stripped) and writes the unk token's text followed by it as UTF-8 into buf. Returns its byte
 * length. */
static size_t canonical_utf8(const siglip_text *t, const int32_t *cps, text_span s, uint8_t *buf) {
    const added_token *unk = named(t, TOKEN_UNK);
    size_t o = strlen(unk->content);
    memcpy(buf, unk->content, o);
    const size_t text_start = o;
    bool pending_space = false;
    for (size_t i = s.start; i < s.end; i++) {
        const int32_t c = cps[i];
        if (ascii_punct(c)) continue;
        if (py_isspace(c)) {
            pending_space = o > text_start; /* leading white space is stripped */
            continue;
        }
        if (pending_space) buf[o++] = ' ';
        pending_space = false;
        o += utf8_encode(c, buf + o);
    }
    return o; /* trailing white space was never written */
}

typedef struct {
    int32_t *ids;
    bool *special; /* the id is a special token written in the text */
    int n, cap;
} collected;

static void push(collected *c, int32_t id, bool special) {
    if (c->n < c->cap) c->ids[c->n] = id, c->special[c->n] = special, c->n++;
}

/* Encodes one text span into c (as many ids as fit). */
static int encode_span(const siglip_text *t, const int32_t *cps, text_span s, uint8_t *buf,
                       int32_t *scratch, collected *c, vit_error *err) {
    const size_t len = canonical_utf8(t, cps, s, buf);
    const int room = c->cap - c->n;
    const int want = t->unk_length + room;
    const int count = spm_encode(t->model, (const char *)buf, len, scratch, want, err);
    if (count < 0) return -1;
    /* the unk token's pieces are dropped, unless the text gave fewer ids than they are */
    const int skip = count >= t->unk_length ? t->unk_length : 0;
    for (int i = skip; i < count && i < want; i++) push(c, scratch[i], false);
    return 0;
}

/* The working memory of one siglip_text_encode call for a text of n_in - 1 bytes, carved from one
 * allocation (block): the code points and their lower case, the spans between special tokens, a
 * span's UTF-8 bytes, encode_span's scratch, and the ids collected with their special flags. */
typedef struct {
    void *block;
    text_span *spans;
    int32_t *cps, *lowered, *scratch, *got;
    bool *special;
    uint8_t *buf;
} encode_work;

static int work_alloc(encode_work *w, const siglip_text *t, size_t n_in, int max_len) {
    const size_t n_spans = 2 * n_in + 1, n_scratch = (size_t)t->unk_length + (size_t)max_len + 2;
    const size_t n_got = (size_t)max_len + 1;
    const size_t ints = n_in + 2 * n_in + n_scratch + n_got;
    const size_t bytes = strlen(named(t, TOKEN_UNK)->content) + 4 * 2 * n_in;
    /* widest alignment first: text_span, then int32_t, then bool and bytes */
    w->block =
        malloc(n_spans * sizeof(text_span) + ints * sizeof(int32_t) + n_got * sizeof(bool) + bytes);
    if (!w->block) return -1;
    w->spans = w->block;
    w->cps = (int32_t *)(w->spans + n_spans);
    w->lowered = w->cps + n_in;
    w->scratch = w->lowered + 2 * n_in;
    w->got = w->scratch + n_scratch;
    w->special = (bool *)(w->got + n_got);
    w->buf = (uint8_t *)(w->special + n_got);
    return 0;
}

/* SiglipTokenizer.tokenize's code points: "▁" in front, each "▁" in the text a space, lower-cased
 * when the tokenizer says (into w->lowered); *n: how many. */
static const int32_t *code_points(const siglip_text *t, const char *text, size_t len,
                                  encode_work *w, size_t *n) {
    size_t k = 0;
    w->cps[k++] = UNDERLINE;
    for (size_t i = 0; i < len;) {
        const int32_t c = utf8_decode_replace((const uint8_t *)text, len, &i);
        w->cps[k++] = c < 0 ? 0xFFFD : c == UNDERLINE ? ' ' : c;
    }
    *n = k;
    if (!t->lower) return w->cps;
    *n = lower_case(t, w->cps, k, w->lowered);
    return w->lowered;
}

/* ids: the collected ids (without a lone leading "▁" before a special token), cut to leave room
 * for the end token, the end token, then padding to max_len; returns how many are not padding. */
static int finish_ids(const siglip_text *t, const collected *c, int max_len, int32_t *ids) {
    int first = 0;
    if (c->n > 1 && !c->special[0] && c->ids[0] == t->underline_id && c->special[1]) first = 1;
    int count = c->n - first;
    if (count + 1 > max_len) count = max_len - 1; /* the end token is the one special to add */
    memcpy(ids, c->ids + first, (size_t)count * sizeof *ids);
    const int32_t eos = named(t, TOKEN_EOS)->id;
    if (count == 0 || ids[count - 1] != eos) ids[count++] = eos;
    for (int i = count; i < max_len; i++) ids[i] = named(t, TOKEN_PAD)->id;
    return count;
}

int siglip_text_encode(const siglip_text *t, const char *text, size_t len, int max_len,
                       int32_t *ids, vit_error *err) {
    if (!t || !ids || (!text && len) || max_len < 1)
        return vit_fail(err, "siglip_text_encode: bad arguments");
    if (len > (size_t)INT_MAX / 16) return vit_fail(err, "siglip_text_encode: text too long");
    encode_work w; /* at most one code point a byte, and the "▁" in front */
    if (work_alloc(&w, t, len + 1, max_len) != 0)
        return vit_fail(err, "siglip_text_encode: out of memory");
    size_t n;
    const int32_t *s = code_points(t, text, len, &w, &n);
    /* the split at the special tokens, leftmost first, longest first, with their strips */
    const size_t n_spans = added_tokens_split(&t->special, s, n, w.spans);
    /* max_len + 1 ids tell all that is needed: whether the text fits with the end token, even
     * after the leading "▁" rule drops one */
    collected c = {w.got, w.special, 0, max_len + 1};
    int rc = 0;
    for (size_t i = 0; i < n_spans && c.n < c.cap && rc == 0; i++) {
        if (w.spans[i].tok >= 0)
            push(&c, t->special.tok[w.spans[i].tok].id, true);
        else
            rc = encode_span(t, s, w.spans[i], w.buf, w.scratch, &c, err);
    }
    if (rc == 0) rc = finish_ids(t, &c, max_len, ids);
    free(w.block);
    return rc;
}

/* ---- decoding ---- */

static bool is_special_id(const siglip_text *t, int32_t id) {
    return added_tokens_find_id(&t->special, id) >= 0;
}

static const char *decode_token(const void *ctx, int32_t id) {
    return spm_piece(((const siglip_text *)ctx)->model, id);
}

static bool decode_special(const void *ctx, int32_t id) {
    return is_special_id(ctx, id);
}

/* The model's Decode of ids[0..n), appended to out. */
static void model_decode(const siglip_text *t, const int32_t *ids, int n, text_buf *out) {
    vit_error err = {0};
    const int len = spm_decode(t->model, ids, n, NULL, 0, &err);
    char *text = len >= 0 ? malloc((size_t)len + 1) : NULL;
    if (!text || spm_decode(t->model, ids, n, text, (size_t)len + 1, &err) != len)
        out->failed = true;
    else
        text_buf_add(out, text, (size_t)len);
    free(text);
}

/* SiglipTokenizer.convert_tokens_to_string (T5Tokenizer's): the runs of ordinary pieces through
 * the model's Decode, each special token written as it is, a space before the first of a row of
 * them; the ends stripped. */
static void decode_join(const void *ctx, const int32_t *ids, const char *const *tokens, int n,
                        text_buf *out) {
    const siglip_text *t = ctx;
    text_buf text = {0};
    bool prev_special = false;
    int start = 0; /* the run of ordinary pieces */
    for (int i = 0; i <= n; i++) {
        const bool special = i < n && is_special_id(t, ids[i]);
        if (i < n && !special) {
            prev_special = false;
            continue;
        }
        if (special && !prev_special) text_buf_add(&text, " ", 1);
        model_decode(t, ids + start, i - start, &text);
        if (special) text_buf_add(&text, tokens[i], strlen(tokens[i]));
        prev_special = special;
        start = i + 1;
    }
    size_t a = 0, b = text.len;
    py_strip(text.s ? text.s : "", &a, &b);
    text_buf_add(out, text.s ? text.s + a : "", b - a);
    if (text.failed) out->failed = true;
    text_buf_free(&text);
}

int siglip_text_decode(const siglip_text *t, const int32_t *ids, int n, bool skip_special_tokens,
                       char *out, size_t size, vit_error *err) {
    if (!t) return vit_fail(err, "siglip_text_decode: bad arguments");
    const text_decoder d = {.ctx = t,
                            .name = "SiglipTokenizer",
                            .token = decode_token,
                            .special = decode_special,
                            .join = decode_join,
                            .clean_up = t->clean_up};
    return text_decode(&d, ids, n, skip_special_tokens, out, size, err);
}

/* ---- behind text/text_tokenizer.h ---- */

static void siglip_text_ops_free(void *impl) {
    siglip_text_free(impl);
}

static const char *siglip_text_ops_piece(const void *impl, int id) {
    return spm_piece(((const siglip_text *)impl)->model, id);
}

static int siglip_text_ops_encode(const void *impl, void *scratch, const char *text, size_t len,
                                  int max_len, int32_t *ids, vit_error *err) {
    (void)scratch; /* its ids end with the end token; padded past what it returns */
    return siglip_text_encode(impl, text, len, max_len, ids, err);
}

static int siglip_text_ops_decode(const void *impl, const int32_t *ids, int n,
                                  bool skip_special_tokens, char *out, size_t size,
                                  vit_error *err) {
    return siglip_text_decode(impl, ids, n, skip_special_tokens, out, size, err);
}

static int siglip_text_ops_load(const char *dir, void **impl, text_tokenizer_info *info,
                                vit_error *err) {
    siglip_text *t;
    if (siglip_text_load(dir, &t, err) != 0) return -1;
    *impl = t;
    *info = (text_tokenizer_info){.kind = "SentencePiece",
                                  .class_name = "SiglipTokenizer",
                                  .vocab_size = spm_vocab_size(t->model),
                                  .max_len = t->max_len,
                                  .pad_id = siglip_text_pad_id(t),
                                  .bos_id = -1, /* SiglipTokenizer has no bos_token */
                                  .eos_id = siglip_text_eos_id(t)};
    return 0;
}

const text_tokenizer_ops siglip_text_ops = {.load = siglip_text_ops_load,
                                            .free = siglip_text_ops_free,
                                            .piece = siglip_text_ops_piece,
                                            .encode = siglip_text_ops_encode,
                                            .decode = siglip_text_ops_decode};
