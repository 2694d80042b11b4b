#ifndef VIT_TEXT_TJ_H
#define VIT_TEXT_TJ_H

/* The parts of the tokenizer.json kind (text/tokenizer_json.h), shared by its files:
 * text/tj_util.c (code point texts, lists of pieces, a string table, Unicode classes),
 * text/tj_normalizers.c, text/tj_pretokenizers.c, text/tj_models.c and text/tj_post.c
 * (post-processors and decoders). Each component is read from its JSON object once at load
 * (a type vit does not follow is an error naming the file and the type) and is immutable after:
 * encodes of many threads share it. Written from the tokenizers library's Rust sources
 * (huggingface/tokenizers, tokenizers/src), read, not copied. */

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vit/base/error.h"

/* ---- a text as code points, growing ---- */
typedef struct {
    int32_t *c;
    size_t n, cap;
    bool failed; /* an allocation failed: the text is incomplete */
} tj_text;

void tj_text_add(tj_text *t, const int32_t *c, size_t n);
/* t's code points, never NULL (an empty text's point at a static nothing). */
static inline const int32_t *tj_cps(const tj_text *t) {
    static const int32_t none[1] = {0};
    return t->c ? t->c : none;
}
void tj_text_add1(tj_text *t, int32_t c);
void tj_text_free(tj_text *t);
/* UTF-8 s[0..n) (valid) appended as code points. */
void tj_text_add_utf8(tj_text *t, const char *s, size_t n);
/* c[0..n) as UTF-8 into a new NUL-terminated string (*len its length); NULL when out of memory. */
char *tj_utf8(const int32_t *c, size_t n, size_t *len);

/* ---- a list of pieces: spans of one text ---- */
typedef struct {
    size_t start, end;
    bool first; /* the piece begins where the original text begins (Metaspace's "first") */
} tj_span;

typedef struct {
    tj_text text;
    tj_span *span;
    size_t count, cap;
    bool failed;
} tj_pieces;

void tj_pieces_reset(tj_pieces *p);
void tj_pieces_free(tj_pieces *p);
/* Appends c[0..n) as a new piece (nothing when n is 0). */
void tj_pieces_add(tj_pieces *p, const int32_t *c, size_t n, bool first);

/* ---- a string -> id table (open addressing; keys copied) ---- */
typedef struct {
    char **key;    /* [count] by insertion */
    size_t *klen;  /* [count] */
    int32_t *val;  /* [count] */
    int32_t *slot; /* index into key, -1 empty */
    size_t count, cap, mask;
    size_t max_len; /* the longest key in bytes */
} tj_map;

/* Sets key s[0..n) to val (a later set of the same key wins, as Rust's HashMap insert). */
int tj_map_set(tj_map *m, const char *s, size_t n, int32_t val);
/* The value of s[0..n), or -1. */
int32_t tj_map_get(const tj_map *m, const char *s, size_t n);
void tj_map_free(tj_map *m);

/* ---- Unicode classes as Rust's char methods and regex classes answer them ---- */
bool tj_is_whitespace(int32_t c);      /* char::is_whitespace: White_Space */
bool tj_is_alnum(int32_t c);           /* \w of Rust's regex (letters, marks, Nd, Pc, ...) */
bool tj_is_letter(int32_t c);          /* \p{L} */
bool tj_is_number(int32_t c);          /* \p{N}, char::is_numeric */
bool tj_is_punctuation(int32_t c);     /* ASCII punctuation or \p{P} */
bool tj_is_mark_nonspacing(int32_t c); /* Mn */
bool tj_is_mark(int32_t c);            /* M* */
bool tj_is_other(int32_t c);           /* C* */
/* Rust's char::to_lowercase of c into out (room for 3); returns how many. */
int tj_lowercase(int32_t c, int32_t *out);

/* GPT-2's byte symbols: byte -> code point, code point -> byte (-1 when not one). */
int32_t tj_byte_char(uint8_t b);
int tj_char_byte(int32_t c);

/* ---- patterns: String or Regex, as Split, Replace and their decoders hold them ---- */
typedef enum {
    TJ_PAT_STRING,
    TJ_PAT_GPT2,
    TJ_PAT_CLIP,
    TJ_PAT_SPACES2,
    TJ_PAT_WS_RUN,
    TJ_PAT_WORDS
} tj_pat_kind;

typedef struct {
    tj_pat_kind kind;
    int32_t *lit; /* TJ_PAT_STRING */
    size_t nlit;
} tj_pattern;

/* obj {"String": s} or {"Regex": r}; a regex vit has no matcher for is an error naming it. */
int tj_pattern_read(tj_pattern *p, const cJSON *obj, const char *what, const char *src,
                    vit_error *err);
void tj_pattern_free(tj_pattern *p);
/* The next match in c[from..n): *ms, *me; false when none. */
bool tj_pattern_find(const tj_pattern *p, const int32_t *c, size_t n, size_t from, size_t *ms,
                     size_t *me);

/* ---- one JSON component: its "type" and typed fields ---- */
/* obj's "type" string, or NULL (err set) when absent; what names the component in errors. */
const char *tj_type(const cJSON *obj, const char *what, const char *src, vit_error *err);
/* A field: absent or null leaves *out; another type is an error. */
int tj_bool(const cJSON *obj, const char *key, bool *out, const char *src, vit_error *err);
int tj_string(const cJSON *obj, const char *key, const char **out, const char *src, vit_error *err);
int tj_int(const cJSON *obj, const char *key, long lo, long hi, long *out, const char *src,
           vit_error *err);
/* A one-character string field (Metaspace's replacement, Strip's content). */
int tj_char(const cJSON *obj, const char *key, int32_t *out, const char *src, vit_error *err);

/* ---- normalizers ---- */
typedef struct tj_normalizer tj_normalizer;
/* NULL obj (or JSON null): *out NULL, no normalizer. */
int tj_normalizer_read(const cJSON *obj, tj_normalizer **out, const char *src, vit_error *err);
void tj_normalizer_free(tj_normalizer *n);
/* Whether each normalized character comes from one character of the input, so that normalizing a
 * text a character at a time gives its normalization (none, BertNormalizer): what offsets need. */
bool tj_normalizer_per_char(const tj_normalizer *n);
/* in[0..n) normalized into out (emptied first). */
void tj_normalize(const tj_normalizer *nz, const int32_t *in, size_t n, tj_text *out);

/* ---- pre-tokenizers ---- */
typedef struct tj_pretokenizer tj_pretokenizer;
int tj_pretokenizer_read(const cJSON *obj, tj_pretokenizer **out, const char *src, vit_error *err);
void tj_pretokenizer_free(tj_pretokenizer *p);
/* Whether it is BertPreTokenizer (pieces are the text's, white space between them left out). */
bool tj_pretokenizer_is_bert(const tj_pretokenizer *p);
/* Whether it is ByteLevel (its pieces the text's bytes in order, after add_prefix_space's). */
bool tj_pretokenizer_is_byte_level(const tj_pretokenizer *p);
/* Whether it is Metaspace (its pieces the text's characters in order, spaces its replacement,
 * after the one it may prepend). */
bool tj_pretokenizer_is_metaspace(const tj_pretokenizer *p);
/* in's pieces split (and transformed) into out (emptied first); tmp is working space. */
void tj_pretokenize(const tj_pretokenizer *p, const tj_pieces *in, tj_pieces *out, tj_pieces *tmp);

/* ---- models ---- */
typedef struct tj_model tj_model;
int tj_model_read(const cJSON *obj, tj_model **out, const char *src, vit_error *err);
void tj_model_free(tj_model *m);
/* The id of a token string s[0..n) in the model's vocabulary, or -1. */
int32_t tj_model_id(const tj_model *m, const char *s, size_t n);
/* The token of id, or NULL. */
const char *tj_model_token(const tj_model *m, int32_t id);
/* One past the largest id. */
int tj_model_size(const tj_model *m);
/* How many entries its vocabulary has (the library's get_vocab_size). */
int tj_model_entries(const tj_model *m);
/* WordPiece's continuing_subword_prefix ("" for the others) and the unk token's id (-1: none). */
const char *tj_model_prefix(const tj_model *m);
int32_t tj_model_unk(const tj_model *m);
/* "WordPiece", "BPE" or "Unigram". */
const char *tj_model_name(const tj_model *m);

/* A growing list of ids. */
typedef struct {
    int32_t *id;
    size_t n, cap;
    bool failed;
} tj_ids;
void tj_ids_add(tj_ids *v, int32_t id);
void tj_ids_free(tj_ids *v);

/* tj_normalize with each normalized character's origin: in[i] stands for original character
 * origin[i], and out's k-th character for out_origin->id[k], as the library's alignments have
 * it (a character's own output its own; a Replace match's content the match's last character; a
 * Precompiled grapheme's and Prepend's text the first). False for a normalizer that composes
 * across characters (NFC, NFD, NFKC, NFKD) or makes bytes (ByteLevel): tj_normalizer_alignable. */
bool tj_normalize_aligned(const tj_normalizer *nz, const int32_t *in, const int32_t *origin,
                          size_t n, tj_text *out, tj_ids *out_origin);
bool tj_normalizer_alignable(const tj_normalizer *n);

/* The ids of one pre-tokenized piece's UTF-8 s[0..n), appended to out; -1 with err when the
 * model cannot tokenize it (Unigram without an unk token where one is needed, out of memory). */
int tj_model_tokenize(const tj_model *m, const char *s, size_t n, tj_ids *out, const char *src,
                      vit_error *err);
/* A Unigram model's: the same with where each token ends in s (bytes) into ends, which an unk
 * token's string does not tell. */
int tj_model_tokenize_unigram(const tj_model *m, const char *s, size_t n, tj_ids *out, tj_ids *ends,
                              const char *src, vit_error *err);

/* ---- post-processors: a template of special tokens around the sequence ---- */
typedef struct {
    bool sequence; /* a text ($A, or $B when second) when true, else ids[0..n) */
    bool second;
    int32_t type_id; /* the token type of its ids */
    int32_t *ids;
    size_t n;
} tj_template_item;

typedef struct {
    tj_template_item *single, *pair;
    size_t nsingle, npair;
    bool trim_offsets;      /* RobertaProcessing's or ByteLevel's: offsets without the spaces */
    bool prefix_space_kept; /* their add_prefix_space (a first token's one space is not trimmed) */
} tj_post;

/* NULL obj: no post-processor (nothing added). Bert's and Roberta's name their tokens with ids,
 * TemplateProcessing's special_tokens list gives each its ids. */
int tj_post_read(const cJSON *obj, tj_post *out, const char *src, vit_error *err);
void tj_post_free(tj_post *p);
/* How many ids the single template adds around a text, and the pair template around two. */
size_t tj_post_added(const tj_post *p);
size_t tj_post_added_pair(const tj_post *p);

/* ---- decoders ---- */
typedef struct tj_decoder tj_decoder;
int tj_decoder_read(const cJSON *obj, tj_decoder **out, const char *src, vit_error *err);
void tj_decoder_free(tj_decoder *d);

/* A list of token strings, each owned. */
typedef struct {
    char **s;
    size_t n, cap;
    bool failed;
} tj_strs;
void tj_strs_add(tj_strs *v, const char *s, size_t n);
void tj_strs_free(tj_strs *v);

/* The decoder's decode_chain over tokens (replaced by its result); NULL d joins with spaces as
 * the library does without a decoder. The text is then the concatenation. */
void tj_decode_chain(const tj_decoder *d, tj_strs *tokens);

#endif
