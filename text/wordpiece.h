#ifndef VIT_TEXT_WORDPIECE_H
#define VIT_TEXT_WORDPIECE_H

/* BERT WordPiece tokenizer, matching Hugging Face's Python BertTokenizer (see text/bert_basic.h for
 * the normalisation steps):
 *   - special tokens ([CLS], [SEP], [PAD], [MASK], [UNK] or whatever the config names, if in the
 *     vocabulary) written literally in the text are recognised as themselves, case-sensitively,
 *     before any normalisation, as tokenizer(text) does; the text between them is tokenized
 *     independently; a word that spells a special token only once control characters are gone
 *     ("[CLS\u200b]") is kept whole too, as BasicTokenizer's never_split does;
 *   - words (after punctuation splitting) longer than 100 code points become [UNK]; otherwise
 *     WordPiece takes the longest vocabulary prefix, then the longest "##" continuation, and so on,
 *     and any rest that matches nothing turns the whole word into [UNK];
 *   - the result is [CLS] pieces [SEP], cut to max_len by dropping pieces from the end.
 * Input must be UTF-8. Invalid bytes are not an error: each is skipped, which is what decoding with
 * errors="replace" and then BertTokenizer's removal of U+FFFD gives. A tokenizer is immutable after
 * loading, so any number of threads may encode with one, each with its own tokenizer_scratch. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "text/tokenizer_files.h"
#include "text/text_tokenizer.h"
#include "vit/base/error.h"

typedef struct tokenizer tokenizer;

/* Loads model_dir/vocab.txt (required) and, when present, tokenizer_config.json (do_lower_case,
 * default true; strip_accents, null = follow do_lower_case; tokenize_chinese_chars, default true;
 * do_split_on_punc, default true; special token names; model_max_length),
 * special_tokens_map.json (overrides the special token names, as in transformers) and config.json
 * (max_position_embeddings). [CLS], [SEP] and [UNK] must be in the vocabulary. Settings this
 * tokenizer does not implement (do_basic_tokenize false, a non-empty never_split) are errors. */
int tokenizer_load(const char *model_dir, tokenizer **out, vit_error *err);
void tokenizer_free(tokenizer *tok);

typedef struct {
    tokenizer_source vocab;              /* vocab.txt (required) */
    tokenizer_source config;             /* tokenizer_config.json */
    tokenizer_source special_tokens_map; /* special_tokens_map.json */
    tokenizer_source model_config;       /* config.json */
} tokenizer_sources;

/* The tokenizer tokenizer_load makes of a folder holding those files, made from their bytes: no
 * file is read (the bytes are copied; src may be freed afterwards). */
int tokenizer_load_memory(const tokenizer_sources *src, tokenizer **out, vit_error *err);

/* Working memory of tokenizer_encode_with, grown as texts need and kept for the next call, so a
 * loop over many texts allocates nothing once warm. One per thread. NULL when out of memory. */
typedef struct tokenizer_scratch tokenizer_scratch;
tokenizer_scratch *tokenizer_scratch_create(void);
void tokenizer_scratch_free(tokenizer_scratch *s);

/* Tokenizes text[0..len) (text may be NULL when len is 0) into ids: [CLS], at most max_len - 2
 * pieces, [SEP]. ids needs room for max_len entries; max_len must be at least 2. pieces may be
 * NULL; otherwise it needs room for max_len pointers and receives each id's vocabulary string,
 * owned by tok and valid until tokenizer_free. Returns the number of ids, or -1 (with err) on bad
 * arguments or when memory runs out. */
int tokenizer_encode_with(const tokenizer *tok, tokenizer_scratch *scratch, const char *text,
                          size_t len, int max_len, int32_t *ids, const char **pieces,
                          vit_error *err);
/* The same with a scratch of its own (a few allocations per call). */
int tokenizer_encode(const tokenizer *tok, const char *text, size_t len, int max_len, int32_t *ids,
                     const char **pieces, vit_error *err);

/* ids[0..n) back to text as BertTokenizer.decode(ids, skip_special_tokens): the special tokens
 * ([CLS], [SEP], [PAD], [MASK], [UNK]) left out when asked, the tokens joined with spaces but
 * "##" continuations glued on, the ends stripped, and transformers' clean_up_tokenization unless
 * tokenizer_config.json sets clean_up_tokenization_spaces false (BertTokenizer's default is
 * true). An id out of range is an error (BertTokenizer would read it as [UNK]). Writes at most
 * size - 1 bytes and a NUL; returns the whole text's length (as snprintf), or -1 with err. */
int tokenizer_decode(const tokenizer *tok, const int32_t *ids, int n, bool skip_special_tokens,
                     char *out, size_t size, vit_error *err);

/* The vocabulary string of id (owned by tok), or NULL when id is out of range. */
const char *tokenizer_piece(const tokenizer *tok, int id);

/* The id of a vocabulary string (exact match, no normalisation), or -1 when absent. */
int tokenizer_token_id(const tokenizer *tok, const char *piece);

/* Number of ids: the lines of vocab.txt. */
int tokenizer_vocab_size(const tokenizer *tok);

/* Default max_len: the smaller of model_max_length and max_position_embeddings where given, else
 * 512 (BERT's usual position table). */
int tokenizer_max_len(const tokenizer *tok);

/* Ids of the special tokens ([PAD] is -1 when the vocabulary lacks it). */
int tokenizer_cls_id(const tokenizer *tok);
int tokenizer_sep_id(const tokenizer *tok);
int tokenizer_pad_id(const tokenizer *tok);
int tokenizer_unk_id(const tokenizer *tok);

/* This tokenizer behind text/text_tokenizer.h's interface, and what it tells of itself there. */
extern const text_tokenizer_ops wordpiece_ops;
void wordpiece_info(const tokenizer *t, text_tokenizer_info *info);

#endif
