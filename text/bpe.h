#ifndef VIT_TEXT_BPE_H
#define VIT_TEXT_BPE_H

/* Byte-level BPE: a model folder's vocab.json (token -> id) and merges.txt (one merge "a b" a
 * line, best first, after an optional "#version" line) over GPT-2's byte symbols (each byte a
 * printable character: bytes_to_unicode). The pieces shared by the tokenizers built on it
 * (text/byte_level.h: CLIP, GPT-2, RoBERTa): merging a piece's bytes by rank, GPT-2's pattern,
 * a token's bytes; and CLIP's own encoding.
 *
 * CLIP (Hugging Face's CLIPTokenizerFast; OpenAI's simple_tokenizer gives the same ids for text
 * that ftfy.fix_text leaves unchanged), bpe_encode:
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
 * A vocabulary is immutable once loaded: any number of threads may use one. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vit/base/error.h"

typedef struct bpe bpe;

/* Flags of bpe_load: BPE_CLIP, CLIP's vocabulary (the byte symbols with "</w>" and its two
 * special tokens required too, bpe_encode usable); 0, GPT-2's (the plain byte symbols). */
enum { BPE_CLIP = 1 };

/* Loads dir/vocab.json and dir/merges.txt. Errors name the file and the problem: not JSON, an id
 * out of range or given twice, a merge whose parts or result are not in the vocabulary, a byte
 * symbol (or with BPE_CLIP a special token) missing. */
int bpe_load(const char *dir, unsigned flags, bpe **out, vit_error *err);
/* The same from the two files' contents (names: for messages). */
int bpe_load_memory(const char *vocab_json, size_t vocab_size, const char *merges,
                    size_t merges_size, const char *names, unsigned flags, bpe **out,
                    vit_error *err);
void bpe_free(bpe *b);

/* CLIP (a BPE_CLIP vocabulary): text[0..len) -> ids (room for max_len >= 2): the start token,
 * the pieces' ids (as many as fit), the end token. Returns the number of ids written, or -1 with
 * err when memory runs out. */
int bpe_encode(const bpe *b, const char *text, size_t len, int max_len, int32_t *ids,
               vit_error *err);

/* merges.txt's merges in rank order, each (left id, right id) into *pairs (malloc'd, 2 per
 * merge): what transformers' converters hand the fast BPE model. Returns their number, or -1
 * when out of memory. */
int bpe_merges(const bpe *b, int32_t **pairs);

/* ---- the parts the tokenizers share ---- */

/* Working memory of bpe_merge_piece for pieces of up to max_bytes bytes (one per thread). */
typedef struct bpe_work bpe_work;
bpe_work *bpe_work_create(size_t max_bytes);
void bpe_work_free(bpe_work *w);

/* The ids of one piece's bytes[0..n) (n <= the work's max_bytes), each byte its symbol (the last
 * with "</w>" when end_of_word, a BPE_CLIP vocabulary only) merged lowest rank first, leftmost
 * first among equals: appended to ids[*count..cap) as far as they fit. */
void bpe_merge_piece(const bpe *b, bpe_work *w, const uint8_t *bytes, int32_t n, bool end_of_word,
                     int32_t *ids, int *count, int cap);

/* The length of the match of GPT-2's pattern
 *   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 * at t[i] (i < n), as Python's regex module's findall takes it: the first alternative that
 * matches, \s being Unicode's White_Space, \p{L} and \p{N} utf8proc's categories. */
size_t bpe_gpt2_piece(const int32_t *t, size_t n, size_t i);

/* The bytes a token stands for, each of its characters a byte symbol, written to out (room for
 * strlen(token) bytes); returns their count, or -1 when a character is not a byte symbol. */
int bpe_token_bytes(const bpe *b, const char *token, uint8_t *out);

/* The vocabulary string of id (owned by b), or NULL when out of range or unused. */
const char *bpe_piece(const bpe *b, int id);
/* The id of a vocabulary string, or -1. */
int bpe_token_id(const bpe *b, const char *piece);
/* One past the largest id of vocab.json. */
int bpe_vocab_size(const bpe *b);
/* CLIP's start and end tokens (a BPE_CLIP vocabulary), else -1. */
int bpe_bos_id(const bpe *b);
int bpe_eos_id(const bpe *b);

#endif
