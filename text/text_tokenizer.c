#include "text/text_tokenizer.h"

#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "text/byte_level.h"
#include "text/siglip_text.h"
#include "text/tokenizer_json.h"
#include "text/wordpiece.h"
#include "text/xlmr_text.h"
#include "vit/base/json.h"

struct text_tokenizer {
    const text_tokenizer_ops *ops;
    void *impl;
    text_tokenizer_info info;
    const char *config_class; /* tokenizer_config.json's class where vit knows it, else NULL */
    /* For a kind without offsets of its own: its Fast class's tokenizer.json (ops->fast_json),
     * or why there is none; built at the first call that wants offsets (converting 30k entries
     * of vocab.txt takes 20 ms, which every other load would pay), under fast_lock */
    tokenizer_json *fast;
    vit_error fast_error;
    bool fast_tried;
    pthread_mutex_t fast_lock;
};

struct text_tokenizer_scratch {
    const text_tokenizer_ops *ops;
    void *impl; /* NULL for the kinds that need none */
};

static int has_file(const char *dir, const char *name) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return access(path, R_OK) == 0;
}

/* The kind tokenizer_config.json's tokenizer_class names; NULL when the file, the field or a
 * class vit knows is absent. */
static int kind_of_class(const char *dir, const text_tokenizer_ops **kind, const char **class_name,
                         vit_error *err) {
    static const struct {
        const char *name;
        const text_tokenizer_ops *kind;
    } classes[] = {{"BertTokenizer", &wordpiece_ops},
                   {"CLIPTokenizer", &byte_level_ops},
                   {"GPT2Tokenizer", &byte_level_ops},
                   {"RobertaTokenizer", &byte_level_ops},
                   {"SiglipTokenizer", &siglip_text_ops},
                   {"XLMRobertaTokenizer", &xlmr_text_ops},
                   /* BERT's WordPiece with their own special tokens from tokenizer_config.json
                    * (MPNet's <s> </s> <pad> <mask>) */
                   {"DistilBertTokenizer", &wordpiece_ops},
                   {"MPNetTokenizer", &wordpiece_ops}};
    *kind = NULL;
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
            *kind = classes[i].kind, *class_name = classes[i].name;
    }
    cJSON_Delete(root);
    return 0;
}

/* The kind the files tell, or NULL. */
static const text_tokenizer_ops *kind_of_files(const char *dir) {
    if (has_file(dir, "vocab.json") && has_file(dir, "merges.txt")) return &byte_level_ops;
    if (has_file(dir, "vocab.txt")) return &wordpiece_ops;
    if (has_file(dir, "spiece.model")) return &siglip_text_ops;
    if (has_file(dir, "sentencepiece.bpe.model")) return &xlmr_text_ops;
    return NULL;
}

/* The kind of the older files: tokenizer_config.json's class, else the files. */
static int older_kind(const char *dir, const text_tokenizer_ops **kind, const char **class_name,
                      vit_error *err) {
    if (kind_of_class(dir, kind, class_name, err) != 0) return -1;
    if (!*kind) *kind = kind_of_files(dir);
    if (*kind) return 0;
    return vit_fail(err,
                    "%s: no tokenizer files (tokenizer.json; vocab.txt: WordPiece; vocab.json and "
                    "merges.txt: byte-level BPE; spiece.model or sentencepiece.bpe.model: "
                    "SentencePiece)",
                    dir);
}

/* The kind's Fast tokenizer.json for its offsets; when it has none, why not into fast_error. */
static void load_fast(text_tokenizer *t) {
    vit_error err = {0};
    char *json = NULL;
    if (!t->ops->fast_json) {
        vit_fail(&err, "offsets are not computed for the %s tokenizer (%s)", t->info.kind,
                 t->info.class_name);
    } else if (t->ops->fast_json(t->impl, &json, &err) == 0) {
        const tokenizer_json_sources src = {
            .json = {json, strlen(json), "the converted tokenizer.json"}};
        tokenizer_json *tj = NULL;
        if (tokenizer_json_load_memory(&src, &tj, &err) == 0) t->fast = tj;
    }
    free(json);
    if (!t->fast) t->fast_error = err;
}

/* tokenizer.json first, as transformers prefers the fast tokenizer; when it holds a part vit
 * does not follow, the older files of the same tokenizer where the folder has them. */
int text_tokenizer_load(const char *dir, text_tokenizer **out, vit_error *err) {
    *out = NULL;
    text_tokenizer *t = calloc(1, sizeof *t);
    if (!t) return vit_fail(err, "%s: out of memory", dir);
    pthread_mutex_init(&t->fast_lock, NULL);
    int rc = -1;
    if (has_file(dir, "tokenizer.json")) {
        t->ops = &tokenizer_json_ops;
        rc = t->ops->load(dir, &t->impl, &t->info, err);
        vit_error older = {0};
        const text_tokenizer_ops *kind = NULL;
        if (rc != 0 && (kind_of_class(dir, &kind, &t->config_class, &older) != 0 || !kind))
            kind = kind_of_files(dir);
        if (rc != 0 && kind) {
            t->impl = NULL, t->ops = kind;
            rc = t->ops->load(dir, &t->impl, &t->info, err);
        }
    } else if (older_kind(dir, &t->ops, &t->config_class, err) == 0) {
        rc = t->ops->load(dir, &t->impl, &t->info, err);
    }
    if (rc != 0) {
        text_tokenizer_free(t);
        return -1;
    }
    *out = t;
    return 0;
}

int text_tokenizer_from_wordpiece(tokenizer *wp, text_tokenizer **out, vit_error *err) {
    text_tokenizer *t = calloc(1, sizeof *t);
    *out = t;
    if (!t) {
        tokenizer_free(wp);
        return vit_fail(err, "out of memory");
    }
    t->ops = &wordpiece_ops;
    t->impl = wp;
    wordpiece_info(wp, &t->info);
    return 0;
}

int text_tokenizer_find(const text_tokenizer *t, const char *piece) {
    for (int id = 0; id < t->info.vocab_size; id++) {
        const char *p = text_tokenizer_piece(t, id);
        if (p && strcmp(p, piece) == 0) return id;
    }
    return -1;
}

void text_tokenizer_free(text_tokenizer *t) {
    if (!t) return;
    if (t->impl && t->ops) t->ops->free(t->impl);
    tokenizer_json_free(t->fast);
    pthread_mutex_destroy(&t->fast_lock);
    free(t);
}

const char *text_tokenizer_kind(const text_tokenizer *t) {
    return t->info.kind;
}

const char *text_tokenizer_class(const text_tokenizer *t) {
    return t->info.class_name;
}

int text_tokenizer_vocab_size(const text_tokenizer *t) {
    return t->info.vocab_size;
}

int text_tokenizer_max_len(const text_tokenizer *t) {
    return t->info.max_len;
}

int text_tokenizer_pad_id(const text_tokenizer *t) {
    return t->info.pad_id;
}

int text_tokenizer_bos_id(const text_tokenizer *t) {
    return t->info.bos_id;
}

int text_tokenizer_eos_id(const text_tokenizer *t) {
    return t->info.eos_id;
}

const char *text_tokenizer_piece(const text_tokenizer *t, int id) {
    return t->ops->piece(t->impl, id);
}

text_tokenizer_scratch *text_tokenizer_scratch_create(const text_tokenizer *t) {
    text_tokenizer_scratch *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->ops = t->ops;
    if (t->ops->scratch_create && !(s->impl = t->ops->scratch_create())) {
        free(s);
        return NULL;
    }
    return s;
}

void text_tokenizer_scratch_free(text_tokenizer_scratch *s) {
    if (!s) return;
    if (s->impl) s->ops->scratch_free(s->impl);
    free(s);
}

int text_tokenizer_encode(const text_tokenizer *t, text_tokenizer_scratch *s, const char *text,
                          size_t len, int max_len, int32_t *ids, vit_error *err) {
    return t->ops->encode(t->impl, s ? s->impl : NULL, text, len, max_len, ids, err);
}

/* ---- pairs for the kinds without a template of their own: the slow tokenizers' rules ---- */

/* How a slow tokenizer joins a pair (build_inputs_with_special_tokens): BERT's [CLS] A [SEP] B
 * [SEP] with B and its [SEP] of type 1; RoBERTa's <s> A </s> </s> B </s>, all of type 0. */
typedef enum { PAIR_NONE, PAIR_BERT, PAIR_ROBERTA } pair_style;

static pair_style pair_style_of(const text_tokenizer *t) {
    static const struct {
        const char *name;
        pair_style style;
    } styles[] = {{"BertTokenizer", PAIR_BERT},
                  {"DistilBertTokenizer", PAIR_BERT},
                  {"RobertaTokenizer", PAIR_ROBERTA},
                  {"XLMRobertaTokenizer", PAIR_ROBERTA},
                  {"MPNetTokenizer", PAIR_ROBERTA}};
    const char *name = t->config_class ? t->config_class : t->info.class_name;
    for (size_t i = 0; i < sizeof styles / sizeof *styles; i++)
        if (strcmp(name, styles[i].name) == 0) return styles[i].style;
    return PAIR_NONE;
}

/* text -> its tokens without the start and end tokens encode adds, at most room of them, into
 * out[1..]; out[0] and the end token into *end. Returns their number or -1. */
static int encode_inner(const text_tokenizer *t, text_tokenizer_scratch *s, const char *text,
                        size_t len, int room, int32_t *out, int32_t *end, vit_error *err) {
    const int n = text_tokenizer_encode(t, s, text, len, room + 2, out, err);
    if (n < 0) return -1;
    if (n < 2) return vit_fail(err, "the %s tokenizer gave a text no start and end", t->info.kind);
    *end = out[n - 1];
    return n - 2;
}

/* truncate_sequences' 'longest_first': one token at a time off the longer, off b when as long */
static void longest_first(int *na, int *nb, int budget) {
    while (*na + *nb > budget) {
        if (*na > *nb)
            --*na;
        else
            --*nb;
    }
}

static int classic_pair(const text_tokenizer *t, text_tokenizer_scratch *s, pair_style style,
                        const char *a, size_t alen, const char *b, size_t blen, int max_len,
                        int32_t *ids, int32_t *type_ids, vit_error *err) {
    const int specials = style == PAIR_BERT ? 3 : 4, budget = max_len - specials;
    if (budget < 0) return vit_fail(err, "a pair needs room for %d ids, not %d", specials, max_len);
    int32_t *buf = malloc(sizeof *buf * 2 * (size_t)(budget + 2)), *bb = buf + budget + 2, end = 0;
    if (!buf) return vit_fail(err, "out of memory");
    int na = encode_inner(t, s, a, alen, budget, buf, &end, err);
    int nb = na < 0 ? -1 : encode_inner(t, s, b, blen, budget, bb, &end, err);
    if (nb < 0) {
        free(buf);
        return -1;
    }
    longest_first(&na, &nb, budget);
    int n = 0;
    ids[n++] = buf[0];
    memcpy(ids + n, buf + 1, sizeof *ids * (size_t)na), n += na;
    ids[n++] = end;
    if (style == PAIR_ROBERTA) ids[n++] = end;
    const int first = n; /* where b's type begins */
    memcpy(ids + n, bb + 1, sizeof *ids * (size_t)nb), n += nb;
    ids[n++] = end;
    free(buf);
    for (int i = 0; type_ids && i < n; i++) type_ids[i] = style == PAIR_BERT && i >= first;
    return n;
}

/* The tokenizer.json behind t's offsets: its own, or its Fast class's (built at the first call);
 * NULL with err when it has none. */
static const tokenizer_json *fast_of(const text_tokenizer *t, vit_error *err) {
    if (t->ops == &tokenizer_json_ops) return t->impl;
    text_tokenizer *mut = (text_tokenizer *)t; /* the lazily built cache; t is otherwise const */
    pthread_mutex_lock(&mut->fast_lock);
    if (!mut->fast_tried) load_fast(mut), mut->fast_tried = true;
    pthread_mutex_unlock(&mut->fast_lock);
    if (!t->fast) vit_fail(err, "%s", t->fast_error.msg);
    return t->fast;
}

int text_tokenizer_tokens_to_string(const text_tokenizer *t, const char *const *tokens, int n,
                                    char *out, size_t size, vit_error *err) {
    const tokenizer_json *tj = fast_of(t, err);
    return tj ? tokenizer_json_tokens_to_string(tj, tokens, n, out, size, err) : -1;
}

int text_tokenizer_word_facts(const text_tokenizer *t, bool *word_aware, int32_t *unk_id,
                              vit_error *err) {
    const tokenizer_json *tj = fast_of(t, err);
    if (!tj) return -1;
    *word_aware = tokenizer_json_subword_prefix(tj)[0] != '\0';
    *unk_id = tokenizer_json_unk_id(tj);
    return 0;
}

int text_tokenizer_encode_offsets(const text_tokenizer *t, text_tokenizer_scratch *s,
                                  const char *text, size_t len, int max_len, int32_t *ids,
                                  int32_t *starts, int32_t *ends, vit_error *err) {
    (void)s;
    if (max_len < 2)
        return vit_fail(err, "offsets need room for at least two ids, not %d", max_len);
    if (t->ops->encode_offsets)
        return t->ops->encode_offsets(t->impl, text, len, max_len, ids, starts, ends, err);
    const tokenizer_json *fast = fast_of(t, err);
    if (!fast) return -1;
    return tokenizer_json_ops.encode_offsets(fast, text, len, max_len, ids, starts, ends, err);
}

int text_tokenizer_encode_pair(const text_tokenizer *t, text_tokenizer_scratch *s, const char *a,
                               size_t alen, const char *b, size_t blen, int max_len, int32_t *ids,
                               int32_t *type_ids, vit_error *err) {
    if (max_len < 1) return vit_fail(err, "a pair needs room for at least one id, not %d", max_len);
    if (t->ops->encode_pair)
        return t->ops->encode_pair(t->impl, s ? s->impl : NULL, a, alen, b, blen, max_len, ids,
                                   type_ids, err);
    const pair_style style = pair_style_of(t);
    if (style == PAIR_NONE)
        return vit_fail(err, "pairs of texts are not implemented for the %s tokenizer (%s)",
                        t->info.kind, t->config_class ? t->config_class : t->info.class_name);
    return classic_pair(t, s, style, a, alen, b, blen, max_len, ids, type_ids, err);
}

int text_tokenizer_decode(const text_tokenizer *t, const int32_t *ids, int n,
                          bool skip_special_tokens, char *out, size_t size, vit_error *err) {
    return t->ops->decode(t->impl, ids, n, skip_special_tokens, out, size, err);
}
