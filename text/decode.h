#ifndef VIT_TEXT_DECODE_H
#define VIT_TEXT_DECODE_H

/* What decoding ids back to text shares across the tokenizers, written from transformers' slow
 * PreTrainedTokenizer._decode and tokenization_utils_base.py (decode, clean_up_tokenization):
 *   - each id becomes its token (an id the tokenizer does not have is an error), the special
 *     ones left out when skip_special_tokens;
 *   - runs of tokens are joined into text by the tokenizer class's convert_tokens_to_string (the
 *     `join` below); a "standalone" token (an additional special token whose id lies past the
 *     vocabulary: transformers' legacy added tokens) is its own piece of text, and the pieces are
 *     joined with single spaces (spaces_between_special_tokens);
 *   - with clean_up, transformers' clean_up_tokenization (" ." to "." and the like).
 * Also the small text helpers the tokenizers need for it (Python's str.isspace and strip, UTF-8
 * decoding with errors="replace"). */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vit/base/error.h"

/* A growing text; `failed` once an allocation failed (what follows is then dropped). */
typedef struct {
    char *s;
    size_t len, cap;
    bool failed;
} text_buf;

void text_buf_add(text_buf *b, const void *data, size_t n);
void text_buf_free(text_buf *b);

/* Python's str.isspace: Unicode's White_Space and the separators U+001C..U+001F. */
bool py_isspace(int32_t c);

/* Python's str.strip() of the UTF-8 text s[*start..*end): moves the bounds past white space. */
void py_strip(const char *s, size_t *start, size_t *end);

/* The bytes s[0..n) decoded as Python's bytes.decode("utf-8", errors="replace") decodes them
 * (each invalid run one U+FFFD, text/utf8.h's utf8_decode_replace), appended to out as UTF-8. */
void utf8_append_replaced(text_buf *out, const uint8_t *s, size_t n);

/* transformers' clean_up_tokenization over s[0..n) in place; returns the new length. */
size_t clean_up_tokenization(char *s, size_t n);

/* Copies text[0..n) to out (at most size - 1 bytes and a NUL; out may be NULL when size is 0)
 * and returns n as an int, or -1 with err when n does not fit one. */
int text_copy_out(const char *text, size_t n, char *out, size_t size, vit_error *err);

/* One tokenizer's decode: its vocabulary and its convert_tokens_to_string. */
typedef struct {
    const void *ctx;
    const char *name; /* what errors call the tokenizer (its folder or file) */
    /* The token of id (owned by ctx), or NULL when the tokenizer has no such id. */
    const char *(*token)(const void *ctx, int32_t id);
    bool (*special)(const void *ctx, int32_t id);
    /* NULL when the tokenizer has no standalone tokens */
    bool (*standalone)(const void *ctx, int32_t id);
    /* Appends the text of tokens[0..n) (ids[0..n) their ids) to out. */
    void (*join)(const void *ctx, const int32_t *ids, const char *const *tokens, int n,
                 text_buf *out);
    bool clean_up;
} text_decoder;

/* ids[0..n) to text as above. Writes at most size - 1 bytes and a NUL (out may be NULL when size
 * is 0); returns the length of the whole text (as snprintf), or -1 with err: an id out of range
 * (named in the message), out of memory. */
int text_decode(const text_decoder *d, const int32_t *ids, int n, bool skip_special_tokens,
                char *out, size_t size, vit_error *err);

#endif
