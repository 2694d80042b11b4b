#ifndef VIT_TEXT_XLMR_TEXT_H
#define VIT_TEXT_XLMR_TEXT_H

/* transformers' XLMRobertaTokenizer (TrOCR's small models use it): a SentencePiece model
 * (sentencepiece.bpe.model, through text/sentencepiece.h: only in a build with libsentencepiece)
 * with fairseq's ids, as the slow class encodes and decodes (tools/bpe_reference.py is the same
 * in Python):
 *   - ids: <s> 0, <pad> 1, </s> 2, <unk> 3, then the model's pieces shifted by one (its own
 *     <unk>, <s>, </s>, ids 0..2, are fairseq's), <mask> the last;
 *   - encode: the text read as UTF-8 (each invalid run one U+FFFD); the special tokens written in
 *     it found (text/added_tokens.h; <mask> takes the white space before it); each stretch
 *     between them encoded by the model (its normaliser, its dummy prefix), an id 0 (the model's
 *     unknown) becoming the unk token's; <s> ... </s> around; cut to max_len keeping those;
 *   - decode (text/decode.h): each id's piece, joined, every "\u2581" a space, the ends stripped
 *     (convert_tokens_to_string: no byte fallback, which XLM-R's models do not have); special
 *     tokens left out when asked; clean_up_tokenization_spaces as tokenizer_config.json says
 *     (transformers' default: false).
 * Settings not implemented are errors naming the file (a tokenizer_class other than
 * XLMRobertaTokenizer, sp_model_kwargs, those of text/added_tokens.h). A tokenizer is immutable
 * once loaded: any number of threads may encode and decode with one. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "text/sentencepiece.h"
#include "text/text_tokenizer.h"
#include "vit/base/error.h"

typedef struct xlmr_text xlmr_text;

/* Its files' bytes: the model file is sentencepiece.bpe.model. */
typedef spm_sources xlmr_text_sources;

/* Loads those files from dir; without libsentencepiece, one line saying so. */
int xlmr_text_load(const char *dir, xlmr_text **out, vit_error *err);
/* The same from their bytes (copied: src may be freed afterwards). */
int xlmr_text_load_memory(const xlmr_text_sources *src, xlmr_text **out, vit_error *err);
void xlmr_text_free(xlmr_text *t);

/* text[0..len) (text may be NULL when len is 0) to ids (room for max_len >= 2). Returns their
 * number, or -1 with err. */
int xlmr_text_encode(const xlmr_text *t, const char *text, size_t len, int max_len, int32_t *ids,
                     vit_error *err);

/* ids[0..n) to text as decode(ids, skip_special_tokens): at most size - 1 bytes and a NUL;
 * returns the whole text's length (as snprintf), or -1 with err (an id out of range, out of
 * memory). */
int xlmr_text_decode(const xlmr_text *t, const int32_t *ids, int n, bool skip_special_tokens,
                     char *out, size_t size, vit_error *err);

/* Its vocabulary size (one past <mask>'s or an added token's id), model_max_length (0: none) and
 * special ids are what xlmr_text_ops' load tells text/text_tokenizer.h. */
/* The token of id (owned by t), or NULL when there is none. */
const char *xlmr_text_piece(const xlmr_text *t, int id);

/* This tokenizer behind text/text_tokenizer.h's interface. */
extern const text_tokenizer_ops xlmr_text_ops;

#endif
