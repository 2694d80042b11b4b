#ifndef VIT_TEXT_BYTE_LEVEL_H
#define VIT_TEXT_BYTE_LEVEL_H

/* The byte-level BPE tokenizers of transformers over one vocabulary (text/bpe.h): CLIPTokenizer,
 * GPT2Tokenizer and RobertaTokenizer (and their Fast twins), as the slow classes encode and
 * decode (tools/bpe_reference.py is the same in Python):
 *   - CLIP: text/bpe.h's bpe_encode (its normalisation, pattern and "</w>");
 *   - GPT-2 and RoBERTa: the text read as UTF-8 (each invalid run one U+FFFD, as
 *     errors="replace"); with add_prefix_space a space in front (RoBERTa: unless the text starts
 *     with white space); the special tokens written in it found (text/added_tokens.h, with their
 *     lstrip and rstrip: RoBERTa's <mask> takes the white space before it); the text between
 *     them split by GPT-2's pattern (bpe_gpt2_piece), each piece's bytes GPT-2's byte symbols
 *     merged by rank (no "</w>"); RoBERTa puts <s> ... </s> around the ids, GPT-2 nothing (bos in
 *     front with add_bos_token); the ids cut to max_len keeping those;
 *   - decode (text/decode.h): each token's byte symbols back to bytes (a token whose characters
 *     are not byte symbols, a special token such as "<\u2713>", gives its own UTF-8, as the fast
 *     ByteLevel decoder does where the slow class would raise), decoded with errors="replace";
 *     CLIP then reads "</w>" as a space and strips the ends; clean_up_tokenization_spaces as
 *     tokenizer_config.json says (transformers' default: false).
 * The class is tokenizer_config.json's tokenizer_class; without one, the vocabulary tells:
 * "<|startoftext|>" is CLIP's, "<s>" and "</s>" RoBERTa's, else GPT-2's. Settings these classes
 * have that are not implemented are errors naming the file (errors other than "replace",
 * split_special_tokens, left truncation), as are those of text/added_tokens.h.
 * A tokenizer is immutable once loaded: any number of threads may encode and decode with one. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "text/tokenizer_files.h"
#include "text/text_tokenizer.h"
#include "vit/base/error.h"

typedef struct byte_level byte_level;

typedef struct {
    tokenizer_source vocab;              /* vocab.json (required) */
    tokenizer_source merges;             /* merges.txt (required) */
    tokenizer_source config;             /* tokenizer_config.json */
    tokenizer_source special_tokens_map; /* special_tokens_map.json */
} byte_level_sources;

/* Loads those files from dir. */
int byte_level_load(const char *dir, byte_level **out, vit_error *err);
/* The same from their bytes (copied: src may be freed afterwards). */
int byte_level_load_memory(const byte_level_sources *src, byte_level **out, vit_error *err);
void byte_level_free(byte_level *t);

/* "CLIPTokenizer", "GPT2Tokenizer" or "RobertaTokenizer". */
const char *byte_level_class_name(const byte_level *t);

/* text[0..len) (text may be NULL when len is 0) to ids (room for max_len, at least the number
 * of special tokens put around a text, and 1). Returns their number, or -1 with err. */
int byte_level_encode(const byte_level *t, const char *text, size_t len, int max_len, int32_t *ids,
                      vit_error *err);

/* ids[0..n) to text as the class's decode(ids, skip_special_tokens): at most size - 1 bytes
 * and a NUL; returns the whole text's length (as snprintf), or -1 with err (an id out of range,
 * out of memory). */
int byte_level_decode(const byte_level *t, const int32_t *ids, int n, bool skip_special_tokens,
                      char *out, size_t size, vit_error *err);

/* One past the largest id (vocab.json's and the added tokens'). */
int byte_level_vocab_size(const byte_level *t);
/* The start token's id (-1 when unset). Its model_max_length (0: none, absent or transformers'
 * 1e30), end and pad ids are what byte_level_ops' load tells text/text_tokenizer.h. */
int byte_level_bos_id(const byte_level *t);
/* The token of id (owned by t), or NULL when there is none. */
const char *byte_level_piece(const byte_level *t, int id);

/* These tokenizers behind text/text_tokenizer.h's interface. */
extern const text_tokenizer_ops byte_level_ops;

#endif
