#ifndef VIT_BASE_BASE64_H
#define VIT_BASE_BASE64_H

/* Base64, RFC 4648's standard alphabet: the images of data URLs in vit serve's requests, and the
 * embeddings it answers with encoding_format "base64". */

#include <stddef.h>

/* The encoded length of n bytes (padded with '='), without the terminating NUL. */
size_t base64_encoded_size(size_t n);
/* in[0..n) -> out[0..base64_encoded_size(n)], then a NUL. */
void base64_encode(const void *in, size_t n, char *out);

/* in[0..n) -> out, which holds at least n / 4 * 3 + 2 bytes. ASCII whitespace is skipped and the
 * final '=' padding may be left out; anything else outside the alphabet, '=' before the end, or a
 * lone last character (6 bits: no byte) makes it -1 (*where: the offending offset in in).
 * Returns the number of bytes decoded. */
long long base64_decode(const char *in, size_t n, void *out, size_t *where);

#endif
