#ifndef VIT_TEXT_TEXT_TOKENIZER_H
#define VIT_TEXT_TEXT_TOKENIZER_H

/* The tokenizers of the text models behind one interface, chosen by the files a model folder has:
 * vocab.txt, BERT's WordPiece (text/tokenizer.h); vocab.json and merges.txt, CLIP's byte-level BPE
 * (text/bpe.h); spiece.model, SigLIP's SentencePiece (text/siglip_text.h). Every kind gives a
 * sequence ending with its end token ([CLS] ... [SEP], <|startoftext|> ... <|endoftext|>, ...
 * </s>), cut to max_len keeping the end token. A loaded tokenizer is
 * immutable: threads encode with one at once, each with its own scratch. */

#include <stddef.h>
#include <stdint.h>

#include "vit/base/error.h"

typedef struct text_tokenizer text_tokenizer;
typedef struct text_tokenizer_scratch text_tokenizer_scratch;

/* dir's tokenizer; an error naming the folder when it has none vit reads. */
int text_tokenizer_load(const char *dir, text_tokenizer **out, vit_error *err);
void text_tokenizer_free(text_tokenizer *t);

/* "WordPiece", "byte-level BPE" or "SentencePiece". */
const char *text_tokenizer_kind(const text_tokenizer *t);
int text_tokenizer_vocab_size(const text_tokenizer *t);
/* The longest sequence the tokenizer's settings allow (model_max_length), 0 when they say none. */
int text_tokenizer_max_len(const text_tokenizer *t);
/* The id padding is written with: the pad token where the tokenizer has one, else the end token. */
int text_tokenizer_pad_id(const text_tokenizer *t);
/* The vocabulary string of id (owned by t), or NULL when out of range. */
const char *text_tokenizer_piece(const text_tokenizer *t, int id);

/* Working memory of one thread's encodes (NULL when out of memory). */
text_tokenizer_scratch *text_tokenizer_scratch_create(const text_tokenizer *t);
void text_tokenizer_scratch_free(text_tokenizer_scratch *s);

/* text[0..len) -> ids (room for max_len >= 2). Returns their number or -1 with err. */
int text_tokenizer_encode(const text_tokenizer *t, text_tokenizer_scratch *s, const char *text,
                          size_t len, int max_len, int32_t *ids, vit_error *err);

#endif
