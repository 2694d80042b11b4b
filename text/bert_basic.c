#include "text/bert_basic.h"

#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "text/utf8.h"

static bool reserve_cps(int32_t **buf, size_t *cap, size_t need) {
    if (need <= *cap) return true;
    size_t n = *cap ? *cap : 64;
    while (n < need) n *= 2;
    int32_t *p = realloc(*buf, n * sizeof *p);
    if (!p) return false;
    *buf = p;
    *cap = n;
    return true;
}

static bool reserve_bytes(uint8_t **buf, size_t *cap, size_t need) {
    if (need <= *cap) return true;
    size_t n = *cap ? *cap : 256;
    while (n < need) n *= 2;
    uint8_t *p = realloc(*buf, n);
    if (!p) return false;
    *buf = p;
    *cap = n;
    return true;
}

void bert_scratch_free(bert_scratch *s) {
    free(s->bytes);
    free(s->text);
    free(s->word);
    free(s->nfd);
    memset(s, 0, sizeof *s);
}

static int out_of_memory(vit_error *err, size_t n) {
    return vit_fail(err, "tokenizer: out of memory normalising %zu characters", n);
}

/* BasicTokenizer._is_chinese_char: the CJK Unified Ideographs blocks, not Hangul or kana. */
static bool is_cjk(int32_t cp) {
    return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
           (cp >= 0x20000 && cp <= 0x2A6DF) || (cp >= 0x2A700 && cp <= 0x2CEAF) ||
           (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

/* _clean_text for one character: -1 drops it, ' ' for whitespace, else the character itself.
 * _is_control tests the category prefix "C", so unassigned and private-use characters go too. */
static int32_t clean_char(int32_t cp) {
    if (cp == ' ' || cp == '\t' || cp == '\n' || cp == '\r') return ' ';
    if (cp < 0x20 || cp == 0x7F) return -1;
    if (cp < 0x7F) return cp;
    if (cp == 0xFFFD) return -1;
    switch (utf8proc_category(cp)) {
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO:
    case UTF8PROC_CATEGORY_CN:
        return -1;
    case UTF8PROC_CATEGORY_ZS:
        return ' ';
    default:
        return cp;
    }
}

/* Steps 1 and 2 into s->bytes as UTF-8 (the form utf8proc reads). Returns the byte count or -1;
 * *ascii tells whether normalisation can be skipped. */
static ptrdiff_t clean(const bert_basic_options *o, const uint8_t *in, size_t len, bert_scratch *s,
                       bool *ascii) {
    /* A 3-byte ideograph grows to 5 bytes with its spaces; nothing grows more. */
    if (!reserve_bytes(&s->bytes, &s->bytes_cap, 2 * len + 1)) return -1;
    uint8_t *out = s->bytes;
    size_t n = 0;
    bool only_ascii = true;
    for (size_t i = 0; i < len;) {
        const int32_t cp = utf8_decode(in, len, &i);
        const int32_t c = cp < 0 ? -1 : clean_char(cp);
        if (c < 0) continue;
        if (c >= 0x80) only_ascii = false;
        if (o->chinese_chars && is_cjk(c)) {
            out[n++] = ' ';
            n += utf8_encode(c, out + n);
            out[n++] = ' ';
        } else {
            n += utf8_encode(c, out + n);
        }
    }
    *ascii = only_ascii;
    return (ptrdiff_t)n;
}

/* Canonical decomposition of UTF-8 in[0..n) into *out (composed again for UTF8PROC_COMPOSE).
 * Returns the code point count or -1. */
static ptrdiff_t normalize(const uint8_t *in, size_t n, int32_t **out, size_t *cap,
                           utf8proc_option_t options, vit_error *err) {
    if (!reserve_cps(out, cap, n + 1)) return out_of_memory(err, n);
    utf8proc_ssize_t k =
        utf8proc_decompose(in, (utf8proc_ssize_t)n, *out, (utf8proc_ssize_t)*cap, options);
    if (k > (utf8proc_ssize_t)*cap) {
        if (!reserve_cps(out, cap, (size_t)k)) return out_of_memory(err, (size_t)k);
        k = utf8proc_decompose(in, (utf8proc_ssize_t)n, *out, (utf8proc_ssize_t)*cap, options);
    }
    if (k >= 0 && (options & UTF8PROC_COMPOSE)) k = utf8proc_normalize_utf32(*out, k, options);
    if (k < 0) return vit_fail(err, "tokenizer: utf8proc: %s", utf8proc_errmsg(k));
    return (ptrdiff_t)k;
}

/* Step 3: NFC of the cleaned text into s->text. */
static ptrdiff_t nfc(bert_scratch *s, size_t nbytes, bool ascii, vit_error *err) {
    if (!ascii)
        return normalize(s->bytes, nbytes, &s->text, &s->text_cap,
                         UTF8PROC_STABLE | UTF8PROC_COMPOSE, err);
    if (!reserve_cps(&s->text, &s->text_cap, nbytes + 1)) return out_of_memory(err, nbytes);
    for (size_t i = 0; i < nbytes; i++) s->text[i] = s->bytes[i];
    return (ptrdiff_t)nbytes;
}

/* Python's str.split() separators that survive cleaning: space, LINE and PARAGRAPH SEPARATOR. */
static bool is_separator(int32_t cp) {
    return cp == ' ' || cp == 0x2028 || cp == 0x2029;
}

/* Unicode Case_Ignorable: Mn, Me, Cf, Lm, Sk and the Word_Break classes MidLetter, MidNumLet and
 * Single_Quote, whose few members utf8proc does not record. */
static bool is_case_ignorable(int32_t cp) {
    static const int32_t word_break_mid[] = {0x27,   0x2E,   0x3A,   0xB7,   0x387,  0x55F,
                                             0x5F4,  0x2018, 0x2019, 0x2024, 0x2027, 0xFE13,
                                             0xFE52, 0xFE55, 0xFF07, 0xFF0E, 0xFF1A};
    for (size_t i = 0; i < sizeof word_break_mid / sizeof *word_break_mid; i++) {
        if (cp == word_break_mid[i]) return true;
    }
    switch (utf8proc_category(cp)) {
    case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_ME:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_SK:
        return true;
    default:
        return false;
    }
}

/* Unicode Cased: Lu, Ll, Lt, anything with a case mapping, and the Other_Lowercase and
 * Other_Uppercase letters that have no mapping (utf8proc does not record those properties). */
static bool is_cased(int32_t cp) {
    switch (utf8proc_category(cp)) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
        return true;
    default:
        break;
    }
    if (utf8proc_tolower(cp) != cp || utf8proc_toupper(cp) != cp) return true;
    return cp == 0xAA || cp == 0xBA || (cp >= 0x1F130 && cp <= 0x1F149) ||
           (cp >= 0x1F150 && cp <= 0x1F169) || (cp >= 0x1F170 && cp <= 0x1F189);
}

/* Python's Final_Sigma test for w[i] == U+03A3: a cased letter before it and none after it,
 * skipping case-ignorable characters both ways (unicodeobject.c, handle_capital_sigma). */
static bool final_sigma(const int32_t *w, size_t n, size_t i) {
    size_t j = i;
    while (j > 0 && is_case_ignorable(w[j - 1])) j--;
    if (j == 0 || !is_cased(w[j - 1])) return false;
    j = i + 1;
    while (j < n && is_case_ignorable(w[j])) j++;
    return j == n || !is_cased(w[j]);
}

/* Python's str.lower() of one whitespace-separated word into s->word: the simple lower-case
 * mapping, except U+0130 (its full mapping has two code points) and the context-dependent sigma. */
static ptrdiff_t lower_word(const int32_t *w, size_t n, bert_scratch *s, vit_error *err) {
    if (!reserve_cps(&s->word, &s->word_cap, 2 * n)) return out_of_memory(err, n);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        const int32_t c = w[i];
        if (c < 0x80) {
            s->word[m++] = c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c;
        } else if (c == 0x130) {
            s->word[m++] = 'i';
            s->word[m++] = 0x307;
        } else if (c == 0x3A3) {
            s->word[m++] = final_sigma(w, n, i) ? 0x3C2 : 0x3C3;
        } else {
            s->word[m++] = utf8proc_tolower(c);
        }
    }
    return (ptrdiff_t)m;
}

/* _run_strip_accents: NFD of w into s->nfd, dropping category Mn. */
static ptrdiff_t strip_accents(const int32_t *w, size_t n, bert_scratch *s, vit_error *err) {
    if (!reserve_bytes(&s->bytes, &s->bytes_cap, 4 * n + 1)) return out_of_memory(err, n);
    size_t nb = 0;
    for (size_t i = 0; i < n; i++) nb += utf8_encode(w[i], s->bytes + nb);
    const ptrdiff_t k =
        normalize(s->bytes, nb, &s->nfd, &s->nfd_cap, UTF8PROC_STABLE | UTF8PROC_DECOMPOSE, err);
    if (k < 0) return -1;
    size_t m = 0;
    for (ptrdiff_t i = 0; i < k; i++) {
        if (utf8proc_category(s->nfd[i]) != UTF8PROC_CATEGORY_MN) s->nfd[m++] = s->nfd[i];
    }
    return (ptrdiff_t)m;
}

/* BERT's _is_punctuation: the four ASCII symbol ranges count even where Unicode says S*. */
static bool is_punct(int32_t cp) {
    if ((cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) || (cp >= 91 && cp <= 96) ||
        (cp >= 123 && cp <= 126))
        return true;
    if (cp < 0x80) return false;
    switch (utf8proc_category(cp)) {
    case UTF8PROC_CATEGORY_PC:
    case UTF8PROC_CATEGORY_PD:
    case UTF8PROC_CATEGORY_PS:
    case UTF8PROC_CATEGORY_PE:
    case UTF8PROC_CATEGORY_PI:
    case UTF8PROC_CATEGORY_PF:
    case UTF8PROC_CATEGORY_PO:
        return true;
    default:
        return false;
    }
}

/* Step 6: hands w to fn as punctuation characters and the runs between them. */
static int split_punct(const bert_basic_options *o, const int32_t *w, size_t n, bert_word_fn fn,
                       void *ctx) {
    if (!o->split_punct) return n > 0 && fn(w, n, ctx) ? 1 : 0;
    size_t start = 0;
    for (size_t i = 0; i < n; i++) {
        if (!is_punct(w[i])) continue;
        if (i > start && fn(w + start, i - start, ctx)) return 1;
        if (fn(w + i, 1, ctx)) return 1;
        start = i + 1;
    }
    return n > start && fn(w + start, n - start, ctx) ? 1 : 0;
}

static bool never_split(const bert_basic_options *o, const int32_t *w, size_t n) {
    for (int i = 0; i < o->num_never_split; i++) {
        if (o->never_split_len[i] == n && memcmp(o->never_split[i], w, n * sizeof *w) == 0)
            return true;
    }
    return false;
}

/* Steps 5 and 6 for one whitespace-separated word. */
static int process_word(const bert_basic_options *o, const int32_t *w, size_t n, bert_scratch *s,
                        bert_word_fn fn, void *ctx, vit_error *err) {
    if (never_split(o, w, n)) return fn(w, n, ctx) ? 1 : 0;
    bool ascii = true;
    for (size_t i = 0; i < n && ascii; i++) ascii = w[i] < 0x80;
    if (o->lower_case) {
        const ptrdiff_t m = lower_word(w, n, s, err);
        if (m < 0) return -1;
        w = s->word;
        n = (size_t)m;
    }
    /* ASCII has no decomposition and no marks. */
    if (o->strip_accents && !ascii) {
        const ptrdiff_t m = strip_accents(w, n, s, err);
        if (m < 0) return -1;
        w = s->nfd;
        n = (size_t)m;
    }
    return split_punct(o, w, n, fn, ctx);
}

int bert_basic_tokenize(const bert_basic_options *o, const char *text, size_t len, bert_scratch *s,
                        bert_word_fn fn, void *ctx, vit_error *err) {
    bool ascii;
    const ptrdiff_t nb = clean(o, (const uint8_t *)text, len, s, &ascii);
    if (nb < 0) return out_of_memory(err, len);
    const ptrdiff_t n = nfc(s, (size_t)nb, ascii, err);
    if (n < 0) return -1;
    size_t start = 0;
    for (size_t i = 0; i <= (size_t)n; i++) {
        if (i < (size_t)n && !is_separator(s->text[i])) continue;
        if (i > start) {
            const int rc = process_word(o, s->text + start, i - start, s, fn, ctx, err);
            if (rc != 0) return rc;
        }
        start = i + 1;
    }
    return 0;
}
