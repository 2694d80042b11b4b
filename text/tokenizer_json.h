#ifndef VIT_TEXT_TOKENIZER_JSON_H
#define VIT_TEXT_TOKENIZER_JSON_H

/* tokenizer.json, the tokenizers library's one file (what transformers' fast tokenizers save),
 * read as the library reads it and encoded as Tokenizer.encode(text) encodes (its parts in
 * text/tj.h):
 *   - the added tokens (lstrip, rstrip, single_word, normalized, special) found first in the
 *     raw text (those with normalized false), then in each normalized stretch between them
 *     (normalized true, matched in their normalized form), leftmost longest;
 *   - the normalizer (BertNormalizer, NFC/NFD/NFKC/NFKD, Lowercase, StripAccents, Strip,
 *     Replace, Prepend, Precompiled: SentencePiece's charsmap, Nmt, ByteLevel, Sequence) on each
 *     stretch;
 *   - the pre-tokenizer (BertPreTokenizer, ByteLevel, Whitespace, WhitespaceSplit, Metaspace,
 *     Split, Punctuation, Digits, Sequence) on each, then the model (WordPiece, BPE with or
 *     without byte-level symbols, prefixes, suffixes and byte_fallback, Unigram) on each piece;
 *   - the post-processor's template (TemplateProcessing, BertProcessing, RobertaProcessing;
 *     ByteLevel's changes offsets only) around the ids, cut to the length first.
 * Regexes: those real files hold (GPT-2's, " {2,}", "\s+", Whitespace's); another is refused.
 * Any other component type is refused in one line naming the file and the type.
 * As text_tokenizer_encode (what a model is fed), the saved truncation and padding are not
 * applied, as transformers' tokenizer(text) switches them off: the ids are cut to max_len on
 * the right keeping the template's tokens. tokenizer_json_encode with TJ_AS_SAVED applies them
 * as the library's encode does.
 * Decoding: each id's token (an added token's content), the special ones left out when asked,
 * through the decoder (WordPiece, ByteLevel, Metaspace, BPEDecoder, ByteFallback, Fuse, Strip,
 * Replace, Sequence; none: joined with spaces), then transformers' clean-up when
 * tokenizer_config.json sets clean_up_tokenization_spaces.
 * The class is tokenizer_config.json's tokenizer_class (else PreTrainedTokenizerFast); its
 * bos_token, eos_token and pad_token name those ids (else the saved padding's pad id).
 * A loaded tokenizer is immutable: any number of threads may encode and decode with one. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "text/text_tokenizer.h"
#include "text/tokenizer_files.h"
#include "vit/base/error.h"

typedef struct tokenizer_json tokenizer_json;

typedef struct {
    tokenizer_source json;   /* tokenizer.json (required) */
    tokenizer_source config; /* tokenizer_config.json */
} tokenizer_json_sources;

int tokenizer_json_load(const char *dir, tokenizer_json **out, vit_error *err);
/* The same from the files' bytes (copied as needed: src may be freed afterwards). */
int tokenizer_json_load_memory(const tokenizer_json_sources *src, tokenizer_json **out,
                               vit_error *err);
void tokenizer_json_free(tokenizer_json *t);

enum {
    TJ_AS_SAVED = 1,   /* the file's truncation and padding, as the library's encode */
    TJ_NO_SPECIAL = 2, /* no post-processor template (add_special_tokens false) */
};

/* text[0..len) (invalid UTF-8 read as U+FFFD, Python's errors="replace") to ids in *ids
 * (malloc'd; the caller frees it): its count, or -1 with err. max_len > 0 cuts them to it on the
 * right keeping the template's tokens (below TJ_AS_SAVED's truncation, and TJ_AS_SAVED's padding
 * stops at it); 0 does not. */
int tokenizer_json_encode(const tokenizer_json *t, const char *text, size_t len, int max_len,
                          unsigned flags, int32_t **ids, vit_error *err);

/* A pair of texts a, b (the library's encode(a, b)): ids through the pair template, and their
 * token type ids in *type_ids (malloc'd; NULL type_ids: not wanted); the cut as above, longest
 * text first (the saved strategy with TJ_AS_SAVED). A post-processor without a pair template is
 * an error. */
int tokenizer_json_encode_pair(const tokenizer_json *t, const char *a, size_t alen, const char *b,
                               size_t blen, int max_len, unsigned flags, int32_t **ids,
                               int32_t **type_ids, vit_error *err);

/* One text's ids, as tokenizer_json_encode without flags gives them, and each one's byte offsets
 * into text: [*starts[k], *ends[k]) what token k stands for (the library's encoding.offsets, which
 * its Rust code keeps in bytes; the Python and npm bindings give characters), the template's
 * tokens (0, 0). Each token's offsets are those of the original characters its normalized ones
 * come from. For BERT's path (a BertNormalizer or none, BertPreTokenizer, WordPiece) and
 * RoBERTa's (no normalizer, ByteLevel without add_prefix_space, BPE; a token covers its bytes'
 * characters, without its spaces under the post-processor's trim_offsets): another tokenizer.json
 * is an error saying so, as is invalid UTF-8. All three malloc'd. */
int tokenizer_json_encode_offsets(const tokenizer_json *t, const char *text, size_t len,
                                  int max_len, int32_t **ids, int32_t **starts, int32_t **ends,
                                  vit_error *err);

/* The library's decode(ids, skip_special_tokens) (no clean-up), as text_tokenizer_decode says. */
int tokenizer_json_decode(const tokenizer_json *t, const int32_t *ids, int n,
                          bool skip_special_tokens, char *out, size_t size, vit_error *err);

/* Token strings through the decoder, concatenated (the library's decoder.decode(tokens), which is
 * what transformers' fast convert_tokens_to_string gives): as tokenizer_json_decode writes. */
int tokenizer_json_tokens_to_string(const tokenizer_json *t, const char *const *tokens, int n,
                                    char *out, size_t size, vit_error *err);
/* The model's continuing_subword_prefix ("" when it has none) and unk token's id (-1: none). */
const char *tokenizer_json_subword_prefix(const tokenizer_json *t);
int32_t tokenizer_json_unk_id(const tokenizer_json *t);

/* "WordPiece", "BPE" or "Unigram". */
const char *tokenizer_json_model(const tokenizer_json *t);

/* This kind behind text/text_tokenizer.h's interface. */
extern const text_tokenizer_ops tokenizer_json_ops;

#endif
