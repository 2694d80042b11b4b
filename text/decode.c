/* Decoding ids back to text, shared by the tokenizers (see text/decode.h). */
#include "text/decode.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "text/utf8.h"

void text_buf_add(text_buf *b, const void *data, size_t n) {
    if (b->failed || n == 0) return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->len + n + 1) cap *= 2;
        char *grown = realloc(b->s, cap);
        if (!grown) {
            b->failed = true;
            return;
        }
        b->s = grown, b->cap = cap;
    }
    memcpy(b->s + b->len, data, n);
    b->len += n;
    b->s[b->len] = '\0';
}

void text_buf_free(text_buf *b) {
    free(b->s);
    *b = (text_buf){0};
}

bool py_isspace(int32_t c) {
    return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 ||
           c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
           c == 0x202F || c == 0x205F || c == 0x3000;
}

void py_strip(const char *s, size_t *start, size_t *end) {
    const uint8_t *u = (const uint8_t *)s;
    while (*start < *end) {
        size_t i = *start;
        const int32_t c = utf8_decode(u, *end, &i);
        if (c < 0 || !py_isspace(c)) break;
        *start = i;
    }
    while (*end > *start) {
        size_t j = *end - 1;
        while (j > *start && (u[j] & 0xC0) == 0x80) j--;
        size_t i = j;
        const int32_t c = utf8_decode(u, *end, &i);
        if (c < 0 || i != *end || !py_isspace(c)) break;
        *end = j;
    }
}

void utf8_append_replaced(text_buf *out, const uint8_t *s, size_t n) {
    static const char replacement[] = "\xef\xbf\xbd"; /* U+FFFD */
    for (size_t i = 0; i < n;) {
        const size_t start = i;
        if (utf8_decode_replace(s, n, &i) < 0)
            text_buf_add(out, replacement, 3);
        else
            text_buf_add(out, s + start, i - start);
    }
}

size_t clean_up_tokenization(char *s, size_t n) {
    /* each replacement over the whole text, in transformers' order */
    static const char *const from[] = {" .",   " ?",  " !",  " ,",   " ' ",
                                       " n't", " 'm", " 's", " 've", " 're"};
    static const char *const to[] = {".", "?", "!", ",", "'", "n't", "'m", "'s", "'ve", "'re"};
    for (size_t r = 0; r < sizeof from / sizeof *from; r++) {
        const size_t a = strlen(from[r]), b = strlen(to[r]);
        size_t o = 0;
        for (size_t i = 0; i < n;) {
            if (n - i >= a && memcmp(s + i, from[r], a) == 0) {
                memcpy(s + o, to[r], b), o += b, i += a;
            } else {
                s[o++] = s[i++];
            }
        }
        n = o; /* each replacement is shorter than what it replaces: in place is safe */
    }
    return n;
}

int text_copy_out(const char *text, size_t n, char *out, size_t size, vit_error *err) {
    if (n > INT_MAX) return vit_fail(err, "decode: a text of more than %d bytes", INT_MAX);
    if (size > 0) {
        const size_t k = n < size - 1 ? n : size - 1;
        if (k) memcpy(out, text, k);
        out[k] = '\0';
    }
    return (int)n;
}

/* Appends one piece of text (transformers' sub_texts), a space before all but the first. */
static void add_piece(text_buf *text, int *pieces, const char *s, size_t n) {
    if ((*pieces)++ > 0) text_buf_add(text, " ", 1);
    text_buf_add(text, s, n);
}

/* The run of tokens collected so far, joined, as a piece (when non-empty, unless last). */
static void flush_run(const text_decoder *d, const int32_t *ids, const char *const *tokens,
                      int *run, bool last, text_buf *text, int *pieces) {
    if (*run == 0) return;
    text_buf joined = {0};
    d->join(d->ctx, ids, tokens, *run, &joined);
    if (joined.failed) text->failed = true;
    if (last || joined.len > 0) add_piece(text, pieces, joined.s ? joined.s : "", joined.len);
    text_buf_free(&joined);
    *run = 0;
}

int text_decode(const text_decoder *d, const int32_t *ids, int n, bool skip_special_tokens,
                char *out, size_t size, vit_error *err) {
    if (n < 0 || (!ids && n > 0) || (!out && size > 0))
        return vit_fail(err, "%s: decode: bad arguments", d->name);
    const char **tokens = malloc(((size_t)n + 1) * sizeof *tokens);
    int32_t *run_ids = malloc(((size_t)n + 1) * sizeof *run_ids);
    text_buf text = {0};
    int run = 0, pieces = 0, rc = 0;
    if (!tokens || !run_ids) rc = vit_fail(err, "%s: decode: out of memory", d->name);
    for (int i = 0; rc == 0 && i < n; i++) {
        const char *token = d->token(d->ctx, ids[i]);
        if (!token) {
            rc = vit_fail(err, "%s: token id %d is out of range", d->name, ids[i]);
        } else if (skip_special_tokens && d->special(d->ctx, ids[i])) {
            continue;
        } else if (d->standalone && d->standalone(d->ctx, ids[i])) {
            flush_run(d, run_ids, tokens, &run, false, &text, &pieces);
            add_piece(&text, &pieces, token, strlen(token));
        } else {
            tokens[run] = token, run_ids[run++] = ids[i];
        }
    }
    if (rc == 0) flush_run(d, run_ids, tokens, &run, true, &text, &pieces);
    if (rc == 0 && text.failed) rc = vit_fail(err, "%s: decode: out of memory", d->name);
    if (rc == 0) {
        size_t len = text.len;
        if (d->clean_up && len) len = clean_up_tokenization(text.s, len);
        rc = text_copy_out(text.s ? text.s : "", len, out, size, err);
    }
    free(tokens), free(run_ids);
    text_buf_free(&text);
    return rc;
}
