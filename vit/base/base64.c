#include "vit/base/base64.h"

#include <stdint.h>

static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t base64_encoded_size(size_t n) {
    return (n + 2) / 3 * 4;
}

void base64_encode(const void *in, size_t n, char *out) {
    const uint8_t *p = in;
    size_t i = 0;
    for (; i + 3 <= n; i += 3) {
        const uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
        *out++ = alphabet[v >> 18];
        *out++ = alphabet[v >> 12 & 63];
        *out++ = alphabet[v >> 6 & 63];
        *out++ = alphabet[v & 63];
    }
    if (i < n) {
        const uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0);
        *out++ = alphabet[v >> 18];
        *out++ = alphabet[v >> 12 & 63];
        *out++ = i + 1 < n ? alphabet[v >> 6 & 63] : '=';
        *out++ = '=';
    }
    *out = 0;
}

/* A character's 6 bits; -1 outside the alphabet. */
static int sextet(unsigned char c) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    return c == '+' ? 62 : c == '/' ? 63 : -1;
}

static int is_space(unsigned char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

long long base64_decode(const char *in, size_t n, void *out, size_t *where) {
    uint8_t *o = out;
    uint32_t bits = 0;
    int have = 0; /* characters in bits (0..3) */
    size_t i = 0, written = 0, last = 0;
    for (; i < n && in[i] != '='; i++) {
        if (is_space((unsigned char)in[i])) continue;
        const int v = sextet((unsigned char)in[i]);
        if (v < 0) return *where = i, -1;
        last = i;
        bits = bits << 6 | (uint32_t)v;
        if (++have == 4) {
            o[written++] = (uint8_t)(bits >> 16);
            o[written++] = (uint8_t)(bits >> 8);
            o[written++] = (uint8_t)bits;
            bits = 0, have = 0;
        }
    }
    int pad = 0; /* what follows the data: '=' (at most what the last group lacks), whitespace */
    for (size_t j = i; j < n; j++) {
        if (is_space((unsigned char)in[j])) continue;
        if (in[j] != '=' || have < 2 || ++pad > 4 - have) return *where = j, -1;
    }
    if (have == 1) return *where = last, -1;
    if (have >= 2) o[written++] = (uint8_t)(bits >> (have == 2 ? 4 : 10));
    if (have == 3) o[written++] = (uint8_t)(bits >> 2);
    return (long long)written;
}
