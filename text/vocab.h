#ifndef VIT_TEXT_VOCAB_H
#define VIT_TEXT_VOCAB_H

/* WordPiece vocabulary: vocab.txt (one token per line, the line number is the id) with an
 * open-addressing hash table built once at load, so lookups never allocate. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vit/base/error.h"
#include "vit/base/strlist.h"

typedef struct {
    strlist lines;     /* vocab.txt, line id = token id */
    int count;         /* number of lines = number of ids */
    int32_t *slots;    /* hash table of ids, -1 when empty */
    size_t mask;       /* table size - 1 (a power of two) */
    size_t max_length; /* longest token in bytes, bounds the WordPiece search */
} vocab;

/* vocab.txt's bytes[0..size) (copied), read as Python's load_vocab reads the file: lines end at
 * "\n", "\r\n" or "\r"; a token seen twice keeps the later id for lookup. Fails on invalid UTF-8, a
 * NUL byte or an empty vocabulary, with err naming name (the file's path). */
int vocab_from_memory(vocab *v, const char *bytes, size_t size, const char *name, vit_error *err);
void vocab_free(vocab *v);

/* Id of the token s[0..n), or of "##" + s when continuation is set; -1 when absent. */
int vocab_find(const vocab *v, const char *s, size_t n, bool continuation);

/* The token of id (NUL-terminated, owned by v), or NULL when id is out of range. */
const char *vocab_token(const vocab *v, int id);

#endif
