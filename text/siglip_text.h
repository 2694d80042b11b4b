#ifndef VIT_TEXT_SIGLIP_TEXT_H
#define VIT_TEXT_SIGLIP_TEXT_H

/* SigLIP's tokenizer: a SentencePiece model (text/sentencepiece.h, so only in a build with
 * libsentencepiece) under the text handling of transformers' SiglipTokenizer, as
 * tokenizer(text, padding="max_length", truncation=True, max_length=L) gives the ids:
 *   - the text is read as UTF-8 (each invalid run one U+FFFD, as errors="replace"), every "▁"
 *     (U+2581) in it becomes a space and one "▁" goes in front;
 *   - with do_lower_case, each character is lower-cased on its own (Python's str.lower of one
 *     character: U+0130 becomes "i" and U+0307), the special tokens written in it excepted;
 *   - the special tokens (eos, unk, pad, additional_special_tokens) written in the text are those
 *     tokens, found leftmost first, longest first; one with lstrip (rstrip) takes the white space
 *     before (after) it away;
 *   - each run of text between them is canonicalised as big_vision's prompt engineering does:
 *     ASCII punctuation (Python's string.punctuation) removed, each run of white space (Python's
 *     str.isspace) one space, the ends stripped; then encoded by the model, loaded with
 *     add_dummy_prefix false, with the unk token's text in front whose pieces are dropped again
 *     (SiglipTokenizer's way of getting the model's word-start piece without a dummy prefix);
 *   - a lone leading "▁" piece directly before a special token is dropped;
 *   - the ids are cut to max_len - 1 when they do not fit with the end token, the end token is
 *     appended unless the last id already is it, and the rest up to max_len is the pad token.
 * A tokenizer is immutable once loaded: any number of threads may encode with one. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "text/sentencepiece.h"
#include "text/text_tokenizer.h"
#include "vit/base/error.h"

typedef struct siglip_text siglip_text;

/* Loads dir/spiece.model (required) and, when present, dir/tokenizer_config.json (do_lower_case,
 * default true; model_max_length, default 64; clean_up_tokenization_spaces, default false; the
 * special tokens, as strings or AddedToken objects; added_tokens_decoder, whose lstrip, rstrip and
 * ids win) and dir/special_tokens_map.json (overrides the special tokens and adds to the additional
 * ones, as from_pretrained merges them; text/added_tokens.h reads both as for every slow class).
 * Errors name the file: the model's (including a build without libsentencepiece), JSON that is
 * not an object or has a field of the wrong type, a special token that is not a piece of the
 * model, and settings this tokenizer does not implement (a tokenizer_class other than
 * SiglipTokenizer, sp_model_kwargs, split_special_tokens, left padding or truncation, single_word
 * tokens, added tokens that are not special tokens). */
int siglip_text_load(const char *dir, siglip_text **out, vit_error *err);

/* Its files' bytes: the model file is spiece.model. */
typedef spm_sources siglip_text_sources;

/* The same from those files' bytes (copied: src may be freed afterwards). */
int siglip_text_load_memory(const siglip_text_sources *src, siglip_text **out, vit_error *err);
void siglip_text_free(siglip_text *t);

/* text[0..len) (text may be NULL when len is 0) to ids as above; ids needs room for max_len >= 1
 * entries and is filled to max_len with the pad id. Returns the number of ids before the padding
 * (at least 1: the end token), or -1 with err (a bad argument, out of memory). */
int siglip_text_encode(const siglip_text *t, const char *text, size_t len, int max_len,
                       int32_t *ids, vit_error *err);

/* ids[0..n) back to text as SiglipTokenizer.decode(ids, skip_special_tokens): the special
 * tokens left out when asked (else each written as it is, a space before the first of a row of
 * them), the runs of pieces through the model's Decode, white space stripped from both ends,
 * and, when clean_up_tokenization_spaces, transformers' clean-up (" ." to "." and the like).
 * Writes at most size - 1 bytes and a NUL; returns the length the whole text needs (as
 * snprintf), or -1 with err for an id out of range. */
int siglip_text_decode(const siglip_text *t, const int32_t *ids, int n, bool skip_special_tokens,
                       char *out, size_t size, vit_error *err);

/* model_max_length: 64 unless tokenizer_config.json says otherwise; 0 when it says there is no
 * limit (transformers' 1e30). */
int siglip_text_max_len(const siglip_text *t);
int siglip_text_eos_id(const siglip_text *t);
int siglip_text_pad_id(const siglip_text *t);
int siglip_text_unk_id(const siglip_text *t);
/* The SentencePiece model (owned by t): pieces, vocabulary size. */
const spm *siglip_text_spm(const siglip_text *t);

/* This tokenizer behind text/text_tokenizer.h's interface. */
extern const text_tokenizer_ops siglip_text_ops;

#endif
