/* The special tokens of a tokenizer folder and the split of a text at them (see
 * text/added_tokens.h). Written from transformers' PreTrainedTokenizer (__init__, _add_tokens,
 * tokenize) and PreTrainedTokenizerBase.from_pretrained. */
#include "text/added_tokens.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "text/decode.h"
#include "text/utf8.h"
#include "vit/base/json.h"

#define MAX_TOKENS 4096 /* far above any real tokenizer's special tokens */

static const char *const names[TOKEN_NAMES] = {"bos_token", "eos_token", "unk_token", "sep_token",
                                               "pad_token", "cls_token", "mask_token"};

/* A flag of an AddedToken object: false when absent or null. */
static int json_flag(const cJSON *obj, const char *key, bool *out, const char *src,
                     vit_error *err) {
    const cJSON *item = obj ? cJSON_GetObjectItemCaseSensitive(obj, key) : NULL;
    if (!item || cJSON_IsNull(item)) return 0;
    if (!cJSON_IsBool(item)) return vit_fail(err, "%s: '%s' must be true or false", src, key);
    *out = cJSON_IsTrue(item);
    return 0;
}

/* A token's text from a string or an AddedToken object. */
static const char *token_text(const cJSON *item, const char *key, const char *src, vit_error *err) {
    const cJSON *content = json_token_content(item);
    if (!cJSON_IsString(content)) {
        vit_fail(err, "%s: '%s' must be a string or {\"content\": string}", src, key);
        return NULL;
    }
    return content->valuestring;
}

static int find_content(const added_tokens *a, const char *content) {
    for (int i = 0; i < a->count; i++)
        if (strcmp(a->tok[i].content, content) == 0) return i;
    return -1;
}

int added_token_set_content(added_token *t, const char *content, const char *what, const char *src,
                            vit_error *err) {
    const size_t len = strlen(content);
    t->content = strdup(content);
    t->cps = malloc((len + 1) * sizeof *t->cps);
    if (!t->content || !t->cps) return vit_fail(err, "%s: out of memory", src);
    for (size_t k = 0; k < len;) {
        const int32_t c = utf8_decode((const uint8_t *)content, len, &k);
        if (c < 0) return vit_fail(err, "%s: %s \"%.40s\" is not UTF-8", src, what, content);
        t->cps[t->n++] = c;
    }
    if (t->n == 0 || py_isspace(t->cps[0]) || py_isspace(t->cps[t->n - 1]))
        return vit_fail(err, "%s: %s \"%.40s\" is empty or has white space at an end", src, what,
                        content);
    return 0;
}

/* Adds content with its id and strips (unless it is there already: the first comes first);
 * *index gets its place. id -1: from the vocabulary, else the next new id. */
static int add_token(added_tokens *a, const char *content, int id, bool lstrip, bool rstrip,
                     const added_token_defaults *d, const char *src, int *index, vit_error *err) {
    *index = find_content(a, content);
    if (*index >= 0) return 0;
    if (a->count == MAX_TOKENS) return vit_fail(err, "%s: more than %d tokens", src, MAX_TOKENS);
    if (id < 0) id = d->lookup(d->ctx, content);
    if (id < 0) id = a->next_id;
    added_token *t = &a->tok[a->count++];
    *t = (added_token){.id = id, .lstrip = lstrip, .rstrip = rstrip};
    if (added_token_set_content(t, content, "token", src, err) != 0) return -1;
    if (id >= a->next_id) a->next_id = id + 1;
    *index = a->count - 1;
    return 0;
}

/* One entry of added_tokens_decoder: "id": AddedToken. */
static int decoder_entry(added_tokens *a, const cJSON *item, const added_token_defaults *d,
                         const char *src, vit_error *err) {
    char *end;
    errno = 0;
    const long id = strtol(item->string, &end, 10);
    if (end == item->string || *end || errno || id < 0 || id > INT_MAX / 2)
        return vit_fail(err, "%s: added_tokens_decoder key \"%.40s\" is not an id", src,
                        item->string);
    const char *content = token_text(item, "added_tokens_decoder", src, err);
    bool lstrip = false, rstrip = false, single_word = false;
    if (!content || json_flag(item, "lstrip", &lstrip, src, err) != 0 ||
        json_flag(item, "rstrip", &rstrip, src, err) != 0 ||
        json_flag(item, "single_word", &single_word, src, err) != 0)
        return -1;
    if (single_word)
        return vit_fail(err, "%s: single_word token \"%.40s\" is not supported", src, content);
    int index;
    return add_token(a, content, (int)id, lstrip, rstrip, d, src, &index, err);
}

/* The file and entry a named token comes from: the map when it has the key, else the config. */
static const cJSON *named_entry(const cJSON *config, const cJSON *map, const char *key,
                                const char **src, const char *config_name, const char *map_name) {
    const cJSON *item = map ? cJSON_GetObjectItemCaseSensitive(map, key) : NULL;
    *src = map_name;
    if (item) return item;
    *src = config_name;
    return config ? cJSON_GetObjectItemCaseSensitive(config, key) : NULL;
}

static int named_tokens(added_tokens *a, const cJSON *config, const cJSON *map,
                        const added_token_defaults *d, const char *config_name,
                        const char *map_name, vit_error *err) {
    for (int k = 0; k < TOKEN_NAMES; k++) {
        const char *src;
        const cJSON *item = named_entry(config, map, names[k], &src, config_name, map_name);
        const char *content = item ? NULL : d->content[k];
        if (item && !cJSON_IsNull(item) && !(content = token_text(item, names[k], src, err)))
            return -1;
        if (!content) continue; /* unset */
        /* an AddedToken object brings its strips; a string the class's */
        bool lstrip = cJSON_IsObject(item) ? false : d->lstrip[k],
             rstrip = cJSON_IsObject(item) ? false : d->rstrip[k];
        if (cJSON_IsObject(item) && (json_flag(item, "lstrip", &lstrip, src, err) != 0 ||
                                     json_flag(item, "rstrip", &rstrip, src, err) != 0))
            return -1;
        if (add_token(a, content, -1, lstrip, rstrip, d, src, &a->named[k], err) != 0) return -1;
    }
    return 0;
}

static int additional_list(added_tokens *a, const cJSON *list, const added_token_defaults *d,
                           const char *src, vit_error *err) {
    if (!list || cJSON_IsNull(list)) return 0;
    if (!cJSON_IsArray(list))
        return vit_fail(err, "%s: 'additional_special_tokens' must be a list", src);
    const cJSON *item;
    cJSON_ArrayForEach(item, list) {
        const char *content = token_text(item, "additional_special_tokens", src, err);
        bool lstrip = false, rstrip = false;
        int index;
        if (!content || json_flag(item, "lstrip", &lstrip, src, err) != 0 ||
            json_flag(item, "rstrip", &rstrip, src, err) != 0 ||
            add_token(a, content, -1, lstrip, rstrip, d, src, &index, err) != 0)
            return -1;
        a->tok[index].additional = true;
    }
    return 0;
}

/* Every token must be a named or an additional special token: plain added tokens decode with
 * spaces around them in transformers' slow tokenizers and without in the fast ones. */
static int check_all_special(const added_tokens *a, const char *src, vit_error *err) {
    for (int i = 0; i < a->count; i++) {
        bool named = a->tok[i].additional;
        for (int k = 0; k < TOKEN_NAMES && !named; k++) named = a->named[k] == i;
        if (!named)
            return vit_fail(err,
                            "%s: added token \"%.40s\" is not a special token (added tokens "
                            "that are not special are not supported)",
                            src, a->tok[i].content);
    }
    return 0;
}

int added_tokens_read(added_tokens *a, const cJSON *config, const cJSON *map,
                      const added_token_defaults *d, const char *config_name, const char *map_name,
                      vit_error *err) {
    *a = (added_tokens){.next_id = d->vocab_size};
    for (int k = 0; k < TOKEN_NAMES; k++) a->named[k] = -1;
    if (!(a->tok = calloc(MAX_TOKENS, sizeof *a->tok)))
        return vit_fail(err, "%s: out of memory", config_name);
    const cJSON *decoder =
        config ? cJSON_GetObjectItemCaseSensitive(config, "added_tokens_decoder") : NULL;
    int rc = 0;
    if (decoder && !cJSON_IsNull(decoder) && !cJSON_IsObject(decoder))
        rc = vit_fail(err, "%s: 'added_tokens_decoder' must be an object", config_name);
    for (const cJSON *item = cJSON_IsObject(decoder) ? decoder->child : NULL; item && rc == 0;
         item = item->next)
        rc = decoder_entry(a, item, d, config_name, err);
    if (rc == 0) rc = named_tokens(a, config, map, d, config_name, map_name, err);
    if (rc == 0 && config)
        rc = additional_list(a,
                             cJSON_GetObjectItemCaseSensitive(config, "additional_special_tokens"),
                             d, config_name, err);
    if (rc == 0 && map)
        rc = additional_list(a, cJSON_GetObjectItemCaseSensitive(map, "additional_special_tokens"),
                             d, map_name, err);
    if (rc == 0) rc = check_all_special(a, config_name, err);
    if (rc != 0) added_tokens_free(a);
    return rc;
}

void added_tokens_free(added_tokens *a) {
    for (int i = 0; a->tok && i < a->count; i++) free(a->tok[i].content), free(a->tok[i].cps);
    free(a->tok);
    a->tok = NULL, a->count = 0;
}

int added_tokens_find_id(const added_tokens *a, int id) {
    for (int i = 0; i < a->count; i++)
        if (a->tok[i].id == id) return i;
    return -1;
}

int added_tokens_named_id(const added_tokens *a, int name) {
    return a->named[name] >= 0 ? a->tok[a->named[name]].id : -1;
}

void added_tokens_special_ids(const added_tokens *a, int *bos, int *eos, int *pad) {
    *bos = added_tokens_named_id(a, TOKEN_BOS);
    *eos = added_tokens_named_id(a, TOKEN_EOS);
    *pad = added_tokens_named_id(a, TOKEN_PAD);
    if (*pad < 0) *pad = *eos;
}

int added_tokens_settings(const cJSON *config, const char *src, bool *clean_up, int *max_len,
                          vit_error *err) {
    int clean = 0, split = 0;
    double length = 0;
    if (config && (json_get_bool(config, "clean_up_tokenization_spaces", &clean, src, err) != 0 ||
                   json_get_bool(config, "split_special_tokens", &split, src, err) != 0 ||
                   json_get_number(config, "model_max_length", 1, 1e300, &length, src, err) != 0))
        return -1;
    if (split) return vit_fail(err, "%s: split_special_tokens true is not supported", src);
    const cJSON *side = config ? cJSON_GetObjectItemCaseSensitive(config, "truncation_side") : NULL;
    if (side && !cJSON_IsNull(side) &&
        !(cJSON_IsString(side) && strcmp(side->valuestring, "right") == 0))
        return vit_fail(err, "%s: truncation_side other than \"right\" is not supported", src);
    *clean_up = clean != 0;
    *max_len = length < INT_MAX ? (int)length : 0;
    return 0;
}

/* The longest token written at cps[at], or -1. */
static int token_at(const added_tokens *a, const int32_t *cps, size_t n, size_t at) {
    int best = -1;
    for (int i = 0; i < a->count; i++) {
        const added_token *t = &a->tok[i];
        if (n - at >= t->n && memcmp(cps + at, t->cps, t->n * sizeof *cps) == 0 &&
            (best < 0 || t->n > a->tok[best].n))
            best = i;
    }
    return best;
}

size_t added_tokens_split(const added_tokens *a, const int32_t *cps, size_t n, text_span *spans) {
    size_t count = 0, start = 0;
    for (size_t i = 0; i < n;) {
        const int k = token_at(a, cps, n, i);
        if (k < 0) {
            i++;
            continue;
        }
        if (i > start) spans[count++] = (text_span){start, i, -1};
        spans[count++] = (text_span){i, i + a->tok[k].n, k};
        start = i += a->tok[k].n;
    }
    if (start < n) spans[count++] = (text_span){start, n, -1};
    /* a token's rstrip takes the white space after it away, its lstrip that before it */
    for (size_t i = 0; i < count; i++) {
        if (spans[i].tok < 0) continue;
        const added_token *t = &a->tok[spans[i].tok];
        text_span *right = i + 1 < count ? &spans[i + 1] : NULL, *left = i ? &spans[i - 1] : NULL;
        if (t->rstrip && right && right->tok < 0)
            while (right->start < right->end && py_isspace(cps[right->start])) right->start++;
        if (t->lstrip && left && left->tok < 0)
            while (left->end > left->start && py_isspace(cps[left->end - 1])) left->end--;
    }
    size_t kept = 0;
    for (size_t i = 0; i < count; i++)
        if (spans[i].tok >= 0 || spans[i].start < spans[i].end) spans[kept++] = spans[i];
    return kept;
}
