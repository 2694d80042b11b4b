#ifndef VIT_TEXT_ADDED_TOKENS_H
#define VIT_TEXT_ADDED_TOKENS_H

/* The special tokens of a Hugging Face tokenizer folder as transformers' slow PreTrainedTokenizer
 * sets them up (tokenizer_config.json and special_tokens_map.json, as from_pretrained merges
 * them), and the split of a text at them (PreTrainedTokenizer.tokenize):
 *   - the named ones, bos, eos, unk, sep, pad, cls, mask: special_tokens_map.json's entry when it
 *     has the key, else tokenizer_config.json's, else the class's default; null unsets one;
 *     a string or an AddedToken object {"content", "lstrip", "rstrip", ...};
 *   - additional_special_tokens: tokenizer_config.json's list, then special_tokens_map.json's
 *     entries not in it;
 *   - added_tokens_decoder {"id": AddedToken}: its ids and strips win over the rest (transformers
 *     loads it first, and a token already added keeps them);
 *   - a token that is none of these gets its id from the model's vocabulary, else the next id
 *     past the vocabulary and the tokens added so far (transformers' _add_tokens).
 * Every token here is special: skipped by decode(skip_special_tokens=True). Settings whose
 * behaviour is not implemented are errors naming the file: single_word tokens, added tokens
 * that are not special tokens, a token that is empty, not UTF-8 or has white space at an end. */

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vit/base/error.h"

enum { TOKEN_BOS, TOKEN_EOS, TOKEN_UNK, TOKEN_SEP, TOKEN_PAD, TOKEN_CLS, TOKEN_MASK, TOKEN_NAMES };

typedef struct {
    char *content;   /* UTF-8 */
    int32_t *cps;    /* the same as code points */
    size_t n;        /* how many */
    int id;          /* its id */
    bool lstrip;     /* takes the white space before it in a text away */
    bool rstrip;     /* and after it */
    bool additional; /* listed in additional_special_tokens */
} added_token;

/* What a tokenizer class brings: its defaults and its vocabulary. */
typedef struct {
    const char *content[TOKEN_NAMES]; /* the default of each named token, NULL for none */
    bool lstrip[TOKEN_NAMES];         /* a token given as a plain string strips before it */
    bool rstrip[TOKEN_NAMES];         /* and after it (SiglipTokenizer's eos, unk, pad) */
    /* The id of content in the model's vocabulary, or -1. */
    int (*lookup)(const void *ctx, const char *content);
    const void *ctx;
    int vocab_size; /* the model's ids are 0..vocab_size-1 */
} added_token_defaults;

typedef struct {
    added_token *tok;
    int count;
    int named[TOKEN_NAMES]; /* index into tok, -1 when unset */
    int next_id;            /* one past the largest id of the vocabulary and the tokens */
} added_tokens;

/* content (UTF-8) as t's content and code points; what names such a token in errors ("token").
 * The strips beside a token work on the text around it, so a token with white space at an end
 * (or none at all) is refused. */
int added_token_set_content(added_token *t, const char *content, const char *what, const char *src,
                            vit_error *err);

/* Reads the tokens from the parsed files (either may be NULL: absent); names are what errors
 * call them. On failure *a is freed. */
int added_tokens_read(added_tokens *a, const cJSON *config, const cJSON *map,
                      const added_token_defaults *d, const char *config_name, const char *map_name,
                      vit_error *err);
void added_tokens_free(added_tokens *a);

/* The index of the token with id, or -1. */
int added_tokens_find_id(const added_tokens *a, int id);
/* The id of a named token (TOKEN_BOS ...), or -1 when unset. */
int added_tokens_named_id(const added_tokens *a, int name);

/* The start, end and pad tokens' ids a tokenizer with these tokens has (-1 when unset; the pad
 * token's, else the end token's, which padding is then written with). */
void added_tokens_special_ids(const added_tokens *a, int *bos, int *eos, int *pad);

/* The settings every slow class reads from tokenizer_config.json (config may be NULL):
 * clean_up_tokenization_spaces (*clean_up, default false: transformers' default since 4.45, and
 * none of these classes sets its own) and model_max_length (*max_len, 0 when absent or
 * transformers' 1e30 for none); split_special_tokens true and truncation_side other than
 * "right" are refused. */
int added_tokens_settings(const cJSON *config, const char *src, bool *clean_up, int *max_len,
                          vit_error *err);

/* A stretch of a text: an added token (tok >= 0) or the text between them. */
typedef struct {
    size_t start, end;
    int tok;
} text_span;

/* cps[0..n) cut at the added tokens written in it (at each place the longest; leftmost first),
 * each token's lstrip and rstrip applied to the text beside it (Python's str.isspace white
 * space) in the order transformers applies them, and text left empty dropped. spans needs room
 * for n + 1 entries (not more than one per code point, and the end). Returns their count. */
size_t added_tokens_split(const added_tokens *a, const int32_t *cps, size_t n, text_span *spans);

#endif
