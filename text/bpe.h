#ifndef VIT_TEXT_BPE_H
#define VIT_TEXT_BPE_H

/* Byte-level BPE as CLIP tokenizes (Hugging Face's CLIPTokenizerFast; OpenAI's simple_tokenizer
 * gives the same ids for text that ftfy.fix_text leaves unchanged), from a model folder's
 * vocab.json (token -> id) and merges.txt (one merge "a b" a line, best first, after an optional
 * "#version" line):
 *   - the text is NFC-normalised, each run of white space becomes one space, and every character
 *     is lower-cased on its own (Rust's char::to_lowercase, as the tokenizers library does: no
 *     final-sigma rule); invalid UTF-8 becomes U+FFFD, one for each run Python's errors="replace"
 * decoding replaces;
 *   - "<|startoftext|>" and "<|endoftext|>" written in the (normalised) text are those tokens;
 *   - the rest splits as CLIP's pattern 's|'t|'re|'ve|'m|'ll|'d|\p{L}+|\p{N}|[^\s\p{L}\p{N}]+
 *     (white space between pieces dropped);
 *   - each piece's UTF-8 bytes become GPT-2's byte symbols, the last with "</w>", and merge
 *     lowest rank first (leftmost first among equals) while a merge applies;
 *   - the ids are <|startoftext|> pieces <|endoftext|>, cut to max_len keeping the end token last.
 * A tokenizer is immutable once loaded: any number of threads may encode with one. */

#include <stddef.h>
#include <stdint.h>

#include "vit/base/error.h"

typedef struct bpe bpe;

/* Loads dir/vocab.json and dir/merges.txt. Errors name the file and the problem: not JSON, an id
 * out of range or given twice, a merge whose parts or result are not in the vocabulary, a byte
 * symbol or a special token missing. */
int bpe_load(const char *dir, bpe **out, vit_error *err);
/* The same from the two files' contents (names: for messages). */
int bpe_load_memory(const char *vocab_json, size_t vocab_size, const char *merges,
                    size_t merges_size, const char *names, bpe **out, vit_error *err);
void bpe_free(bpe *b);

/* text[0..len) -> ids (room for max_len >= 2): the start token, the pieces' ids (as many as fit),
 * the end token. Returns the number of ids written, or -1 with err when memory runs out. */
int bpe_encode(const bpe *b, const char *text, size_t len, int max_len, int32_t *ids,
               vit_error *err);

/* ids[0..n) back to text, as CLIPTokenizer.decode with skip_special_tokens: the special tokens
 * left out, "</w>" read as a space, the bytes put back, the end trimmed of spaces. Writes at most
 * size - 1 bytes and a NUL; returns the length the whole text needs (as snprintf), or -1 for an
 * id out of range. */
int bpe_decode(const bpe *b, const int32_t *ids, int n, char *out, size_t size);

/* The vocabulary string of id (owned by b), or NULL when out of range. */
const char *bpe_piece(const bpe *b, int id);
/* The id of a vocabulary string, or -1. */
int bpe_token_id(const bpe *b, const char *piece);
int bpe_vocab_size(const bpe *b);
int bpe_bos_id(const bpe *b);
int bpe_eos_id(const bpe *b);

#endif
