#ifndef VIT_TEXT_CANONICALIZE_H
#define VIT_TEXT_CANONICALIZE_H

/* open_clip's canonicalize_text (tokenizer.py, big_vision's prompt cleaning), which its
 * HFTokenizer runs with tokenizer_kwargs {"clean": "canonicalize"} before the tokenizer:
 *   '_' -> ' ', ASCII punctuation (Python's string.punctuation) removed, str.lower(), runs of
 *   Python's white space (str.split()) to one space, stripped.
 * Lower-casing is Unicode's simple mapping (utf8proc) and U+0130 -> "i" U+0307 as str.lower has
 * it; a final capital sigma becomes U+03C3, where str.lower gives U+03C2 at a word's end. Bytes
 * that are not UTF-8 are copied (the tokenizer reports them). basic_clean (ftfy.fix_text, then
 * html.unescape twice), which open_clip runs first, is not followed. */

#include <stddef.h>

/* The canonical text of s[0..n) into a new NUL-terminated buffer (*out, length *out_len);
 * -1 when out of memory. */
int text_canonicalize(const char *s, size_t n, char **out, size_t *out_len);

#endif
