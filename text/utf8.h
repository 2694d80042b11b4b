#ifndef VIT_TEXT_UTF8_H
#define VIT_TEXT_UTF8_H

/* Strict UTF-8 decoding and encoding, shared by the vocabulary loader and the tokenizer. */

#include <stddef.h>
#include <stdint.h>

/* Decodes the character at s[*i] (s holds n bytes) and moves *i past it. Anything Python's strict
 * decoder rejects (stray continuation byte, truncated sequence, overlong form, surrogate, above
 * U+10FFFF) returns -1 and moves *i by one byte only, so decoding resumes at the next byte that can
 * start a character: skipping those bytes is exactly what decoding with errors="replace" and then
 * dropping U+FFFD (as BertTokenizer does) yields. */
static inline int32_t utf8_decode(const uint8_t *s, size_t n, size_t *i) {
    const uint8_t b = s[*i];
    if (b < 0x80) {
        (*i)++;
        return b;
    }
    int need;
    int32_t cp, min;
    if (b >= 0xC2 && b <= 0xDF) {
        need = 1, cp = b & 0x1F, min = 0x80;
    } else if (b >= 0xE0 && b <= 0xEF) {
        need = 2, cp = b & 0x0F, min = 0x800;
    } else if (b >= 0xF0 && b <= 0xF4) {
        need = 3, cp = b & 0x07, min = 0x10000;
    } else {
        (*i)++;
        return -1;
    }
    if (n - *i <= (size_t)need) {
        (*i)++;
        return -1;
    }
    for (int k = 1; k <= need; k++) {
        const uint8_t c = s[*i + (size_t)k];
        if ((c & 0xC0) != 0x80) {
            (*i)++;
            return -1;
        }
        cp = (cp << 6) | (c & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
        (*i)++;
        return -1;
    }
    *i += (size_t)need + 1;
    return cp;
}

/* Like utf8_decode, but an invalid sequence is consumed as Python's decoder with
 * errors="replace" consumes it, each consumed run standing for one U+FFFD: the longest start of a
 * well-formed sequence (its "maximal subpart": "\xe2\x82" before "A" is one run, "\xe0\x80" two,
 * since no well-formed sequence starts E0 80), or else the one byte. Returns -1 for such a run. */
static inline int32_t utf8_decode_replace(const uint8_t *s, size_t n, size_t *i) {
    const size_t start = *i;
    const int32_t cp = utf8_decode(s, n, i);
    if (cp >= 0) return cp;
    const uint8_t b = s[start];
    int need = 0;
    uint8_t lo = 0x80, hi = 0xBF; /* the second byte's range (Unicode's table 3-7) */
    if (b >= 0xC2 && b <= 0xDF) {
        need = 1;
    } else if (b >= 0xE0 && b <= 0xEF) {
        need = 2, lo = b == 0xE0 ? 0xA0 : 0x80, hi = b == 0xED ? 0x9F : 0xBF;
    } else if (b >= 0xF0 && b <= 0xF4) {
        need = 3, lo = b == 0xF0 ? 0x90 : 0x80, hi = b == 0xF4 ? 0x8F : 0xBF;
    }
    *i = start + 1;
    for (int k = 1; k <= need && start + (size_t)k < n; k++) {
        const uint8_t c = s[start + (size_t)k];
        if (k == 1 ? c < lo || c > hi : (c & 0xC0) != 0x80) break;
        *i = start + (size_t)k + 1;
    }
    return -1;
}

/* Writes cp (a valid scalar value) as UTF-8 to out (room for 4 bytes); returns the byte count. */
static inline size_t utf8_encode(int32_t cp, uint8_t *out) {
    if (cp < 0x80) {
        out[0] = (uint8_t)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (uint8_t)(0xC0 | (cp >> 6));
        out[1] = (uint8_t)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (uint8_t)(0xE0 | (cp >> 12));
        out[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (uint8_t)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (uint8_t)(0xF0 | (cp >> 18));
    out[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (uint8_t)(0x80 | (cp & 0x3F));
    return 4;
}

#endif
