/* Texts for synthetic printed lines: sentences cleaned of their tokenization, and generated
 * numbers, dates, prices and codes. */
#include "vit/data/ocr_text.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/utf8.h"
#include "vit/base/file.h"
#include "vit/base/rng.h"

int ocr_charset_has(uint32_t cp) {
    if (cp >= 0x20 && cp <= 0x7E) return 1;
    if (cp >= 0xC0 && cp <= 0xFF) return cp != 0xD7 && cp != 0xF7;
    return cp == 0xA3 || cp == 0xB0 || cp == 0x20AC;
}

/* ---- case, within the set: ASCII letters, and the Latin-1 letters U+00C0..U+00FF (UTF-8 C3 80
 * .. C3 BF), whose two cases differ by 0x20 in the second byte ---- */

static int is_lower_at(const unsigned char *s, size_t n, size_t i) {
    if (s[i] >= 'a' && s[i] <= 'z') return 1;
    return s[i] == 0xC3 && i + 1 < n && s[i + 1] >= 0xA0 && s[i + 1] <= 0xBE && s[i + 1] != 0xB7;
}

static int is_upper_at(const unsigned char *s, size_t n, size_t i) {
    if (s[i] >= 'A' && s[i] <= 'Z') return 1;
    return s[i] == 0xC3 && i + 1 < n && s[i + 1] >= 0x80 && s[i + 1] <= 0x9E && s[i + 1] != 0x97;
}

static int is_letter_at(const unsigned char *s, size_t n, size_t i) {
    return is_lower_at(s, n, i) || is_upper_at(s, n, i) ||
           (s[i] == 0xC3 && i + 1 < n && (s[i + 1] == 0x9F || s[i + 1] == 0xBF)); /* ß ÿ */
}

/* Upper-cases the letter at s[i] if it is a lower-case one. */
static void upper_at(unsigned char *s, size_t n, size_t i) {
    if (!is_lower_at(s, n, i)) return;
    if (s[i] < 0x80)
        s[i] -= 0x20;
    else
        s[i + 1] -= 0x20;
}

static void lower_at(unsigned char *s, size_t n, size_t i) {
    if (!is_upper_at(s, n, i)) return;
    if (s[i] < 0x80)
        s[i] += 0x20;
    else
        s[i + 1] += 0x20;
}

void ocr_upper_case(char *text, size_t n) {
    for (size_t i = 0; i < n; i++) upper_at((unsigned char *)text, n, i);
}

void ocr_fold_case(char *text, size_t n) {
    for (size_t i = 0; i < n; i++) lower_at((unsigned char *)text, n, i);
}

void ocr_title_case(char *text, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (i == 0 || text[i - 1] == ' ') upper_at((unsigned char *)text, n, i);
}

/* "i" as a word: alone, or before an apostrophe, a space or a comma-like sign (not "i.e."). */
static int lone_i(const char *t, size_t n, size_t i) {
    if (t[i] != 'i') return 0;
    const unsigned char before = i > 0 ? (unsigned char)t[i - 1] : ' ';
    const unsigned char after = i + 1 < n ? (unsigned char)t[i + 1] : ' ';
    return (before == ' ' || before == '"' || before == '(') && strchr(" ',;:!?)\"", after);
}

void ocr_sentence_case(char *text, size_t n) {
    unsigned char *s = (unsigned char *)text;
    int start = 1; /* the next letter starts a sentence */
    for (size_t i = 0; i < n; i++) {
        if (is_letter_at(s, n, i)) {
            if (start) upper_at(s, n, i);
            start = 0;
            if (lone_i(text, n, i)) text[i] = 'I';
        } else if ((text[i] == '.' || text[i] == '!' || text[i] == '?') && i + 1 < n &&
                   text[i + 1] == ' ') {
            start = 1;
        } else if (s[i] >= '0' && s[i] <= '9') {
            start = 0;
        }
        if (s[i] == 0xC3) i++; /* a Latin-1 letter's second byte */
    }
}

/* ---- detokenizing ---- */

static int token_is(const char *t, size_t n, const char *const *list) {
    for (int i = 0; list[i]; i++)
        if (strlen(list[i]) == n && memcmp(t, list[i], n) == 0) return 1;
    return 0;
}

/* Tokens written without a space before them, and those followed by none. */
static const char *const glue_left[] = {",",   ".",   "!",  "?",     ";",     ":",   "%",   ")",
                                        "]",   "...", "'s", "'re",   "'ve",   "'ll", "'d",  "'m",
                                        "n't", "''",  "'",  "-rrb-", "-rsb-", "'S",  "N'T", NULL};
static const char *const glue_right[] = {"(", "[", "$", "#", "``", "`", "-lrb-", "-lsb-", NULL};

/* The token as written: quotes and bracket names replaced. */
static const char *token_text(const char *t, size_t *n) {
    static const char *const from[] = {"``", "''", "`", "-lrb-", "-rrb-", "-lsb-", "-rsb-"};
    static const char *const to[] = {"\"", "\"", "'", "(", ")", "[", "]"};
    for (int i = 0; i < 7; i++)
        if (strlen(from[i]) == *n && memcmp(t, from[i], *n) == 0) {
            *n = strlen(to[i]);
            return to[i];
        }
    return t;
}

size_t ocr_detokenize(const char *in, size_t n, char *out) {
    size_t len = 0, i = 0;
    int glue_next = 1; /* no space before the next token (none at the start) */
    while (i < n) {
        while (i < n && (in[i] == ' ' || in[i] == '\t')) i++;
        const size_t start = i;
        while (i < n && in[i] != ' ' && in[i] != '\t') i++;
        size_t tn = i - start;
        if (tn == 0) break;
        const char *t = in + start;
        if (len == 0 && token_is(t, tn, glue_left)) continue; /* "'s ..." cut from a sentence */
        if (!glue_next && !token_is(t, tn, glue_left)) out[len++] = ' ';
        glue_next = token_is(t, tn, glue_right);
        const char *w = token_text(t, &tn);
        memcpy(out + len, w, tn); /* never longer than the token (quotes shrink) */
        len += tn;
    }
    return len;
}

/* ---- sentences ---- */

/* Whether text[0..n) is valid UTF-8 made of the set's characters only. */
static int in_charset(const char *text, size_t n) {
    size_t i = 0;
    while (i < n) {
        const int32_t cp = utf8_decode((const uint8_t *)text, n, &i);
        if (cp < 0 || !ocr_charset_has((uint32_t)cp)) return 0;
    }
    return 1;
}

/* One line of the file, cleaned, appended to out->text at *len (room for n + 1 more bytes). */
static void add_sentence(ocr_sentences *out, size_t *len, const char *line, size_t n) {
    char *dst = out->text + *len;
    const size_t m = ocr_detokenize(line, n, dst);
    if (m == 0 || !in_charset(dst, m)) {
        out->dropped++;
        return;
    }
    ocr_sentence_case(dst, m);
    dst[m] = '\n';
    out->start[out->count++] = *len;
    *len += m + 1;
}

/* The lines of bytes[0..size) (after the header line for a TSV; its first column) as sentences. */
static void add_lines(ocr_sentences *out, const char *bytes, size_t size, int tsv) {
    size_t len = 0, i = 0;
    if (tsv) { /* the header */
        while (i < size && bytes[i] != '\n') i++;
        i++;
    }
    while (i < size) {
        size_t end = i;
        while (end < size && bytes[end] != '\n') end++;
        size_t n = end - i;
        if (n > 0 && bytes[i + n - 1] == '\r') n--;
        if (tsv) {
            const char *tab = memchr(bytes + i, '\t', n);
            if (tab) n = (size_t)(tab - (bytes + i));
        }
        if (n > 0) add_sentence(out, &len, bytes + i, n);
        i = end + 1;
    }
    out->start[out->count] = len;
    out->text[len] = '\0';
}

int ocr_sentences_parse(ocr_sentences *out, const char *bytes, size_t size, const char *name,
                        int tsv, vit_error *err) {
    memset(out, 0, sizeof *out);
    size_t lines = 1;
    for (size_t i = 0; i < size; i++) lines += bytes[i] == '\n';
    out->text = malloc(size + 2);
    out->folded = malloc(size + 2);
    out->start = malloc((lines + 1) * sizeof *out->start);
    if (!out->text || !out->folded || !out->start) {
        ocr_sentences_free(out);
        return vit_fail(err, "%s: out of memory", name);
    }
    add_lines(out, bytes, size, tsv);
    if (out->count == 0) {
        const int dropped = out->dropped;
        ocr_sentences_free(out);
        return vit_fail(err, "%s: no sentence made of the OCR character set (%d dropped)", name,
                        dropped);
    }
    const size_t len = out->start[out->count];
    memcpy(out->folded, out->text, len + 1);
    ocr_fold_case(out->folded, len);
    return 0;
}

int ocr_sentences_read(ocr_sentences *out, const char *path, vit_error *err) {
    size_t size;
    char *bytes = vit_read_file(path, (size_t)1 << 30, &size, err);
    if (!bytes) return -1;
    const size_t n = strlen(path);
    const int tsv = n > 4 && strcmp(path + n - 4, ".tsv") == 0;
    const int rc = ocr_sentences_parse(out, bytes, size, path, tsv, err);
    free(bytes);
    return rc;
}

void ocr_sentences_free(ocr_sentences *s) {
    free(s->text);
    free(s->folded);
    free(s->start);
    memset(s, 0, sizeof *s);
}

int ocr_sentences_contains(const ocr_sentences *s, const char *text, size_t len) {
    if (!s || s->count == 0) return 0;
    char small[OCR_DRAW_BYTES + 1], *q = len <= OCR_DRAW_BYTES ? small : malloc(len);
    if (!q) return 1; /* cannot tell: treat as held out, so the caller draws again */
    memcpy(q, text, len);
    ocr_fold_case(q, len);
    const int found = memmem(s->folded, s->start[s->count], q, len) != NULL;
    if (q != small) free(q);
    return found;
}

/* ---- generated items: numbers, dates, prices, times, units, codes ---- */

static const char *pick(uint64_t *rng, const char *const *list, int n) {
    return list[rng_int(rng, 0, n - 1)];
}
#define PICK(rng, list) pick(rng, list, (int)(sizeof list / sizeof list[0]))

/* digits of v (>= 0) with sep between groups of three (sep NULL: none). */
static int group_digits(char *out, size_t cap, long long v, const char *sep) {
    char plain[32];
    const int n = snprintf(plain, sizeof plain, "%lld", v);
    int len = 0;
    for (int i = 0; i < n && (size_t)len + 4 < cap; i++) {
        if (sep && i > 0 && (n - i) % 3 == 0)
            len += snprintf(out + len, cap - (size_t)len, "%s", sep);
        out[len++] = plain[i];
    }
    out[len] = '\0';
    return len;
}

/* A whole number of 1..7 digits, sometimes negative, sometimes with thousands separators. */
static void gen_integer(uint64_t *rng, char *out, size_t cap) {
    const int digits = rng_int(rng, 1, 7);
    long long v = 0;
    for (int i = 0; i < digits; i++) v = v * 10 + rng_int(rng, i == 0 ? 1 : 0, 9);
    const char *sep = rng_uniform(rng) < 0.5 ? "," : rng_uniform(rng) < 0.2 ? " " : NULL;
    const int neg = rng_uniform(rng) < 0.1;
    if (neg) *out++ = '-', cap--;
    group_digits(out, cap, v, sep);
}

/* An amount with two decimals: "$1,299.99", "£4.50", "1.299,00 €", "12.50 EUR". */
static void gen_price(uint64_t *rng, char *out, size_t cap) {
    static const char *const before[] = {"$", "£", "€", "€ ", "USD ", "EUR "};
    static const char *const after[] = {" €", " EUR", " USD", " GBP", " CHF"};
    const long long cents = (long long)(rng_uniform(rng) * rng_uniform(rng) * 1e7);
    char whole[32];
    const int european = rng_uniform(rng) < 0.2;
    group_digits(whole, sizeof whole, cents / 100,
                 rng_uniform(rng) < 0.7 ? (european ? "." : ",") : NULL);
    const char dot = european ? ',' : '.';
    if (rng_uniform(rng) < 0.7)
        snprintf(out, cap, "%s%s%c%02lld", PICK(rng, before), whole, dot, cents % 100);
    else
        snprintf(out, cap, "%s%c%02lld%s", whole, dot, cents % 100, PICK(rng, after));
}

static const char *const month_names[] = {"January",   "February", "March",    "April",
                                          "May",       "June",     "July",     "August",
                                          "September", "October",  "November", "December"};
static const char *const day_names[] = {"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"};

/* A date in one of eight common layouts, on a day that exists. */
static void gen_date(uint64_t *rng, char *out, size_t cap) {
    static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    const int y = rng_int(rng, 1950, 2035), m = rng_int(rng, 1, 12);
    const int leap = m == 2 && y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
    const int d = rng_int(rng, 1, days[m - 1] + leap);
    const char *month = month_names[m - 1];
    switch (rng_int(rng, 0, 7)) {
    case 0:
        snprintf(out, cap, "%04d-%02d-%02d", y, m, d);
        break;
    case 1:
        snprintf(out, cap, "%02d/%02d/%04d", d, m, y);
        break;
    case 2:
        snprintf(out, cap, "%02d/%02d/%02d", m, d, y % 100);
        break;
    case 3:
        snprintf(out, cap, "%02d.%02d.%04d", d, m, y);
        break;
    case 4:
        snprintf(out, cap, "%d %.3s %d", d, month, y);
        break;
    case 5:
        snprintf(out, cap, "%s %d, %d", month, d, y);
        break;
    case 6:
        snprintf(out, cap, "%02d-%.3s-%02d", d, month, y % 100);
        break;
    default:
        snprintf(out, cap, "%s, %d %.3s %d", PICK(rng, day_names), d, month, y);
        break;
    }
}

static void gen_time(uint64_t *rng, char *out, size_t cap) {
    const int h = rng_int(rng, 0, 23), m = rng_int(rng, 0, 59);
    switch (rng_int(rng, 0, 3)) {
    case 0:
        snprintf(out, cap, "%02d:%02d", h, m);
        break;
    case 1:
        snprintf(out, cap, "%02d:%02d:%02d", h, m, rng_int(rng, 0, 59));
        break;
    case 2:
        snprintf(out, cap, "%d:%02d %s", h % 12 + 1, m, h < 12 ? "am" : "pm");
        break;
    default:
        snprintf(out, cap, "%d.%02d %s", h % 12 + 1, m, h < 12 ? "a.m." : "p.m.");
        break;
    }
}

/* A decimal with a unit, a percentage or a ratio: "12.5 kg", "21°C", "-3.5%", "1:250". */
static void gen_measure(uint64_t *rng, char *out, size_t cap) {
    static const char *const units[] = {"kg", "g",    "mg",  "km",  "m",  "cm", "mm", "ml",
                                        "l",  "km/h", "mph", "kWh", "MB", "GB", "Hz", "V",
                                        "W",  "h",    "min", "s",   "in", "ft", "lb", "oz"};
    const int decimals = rng_int(rng, 0, 2);
    const double v = rng_uniform(rng) * rng_uniform(rng) * 2000.0;
    switch (rng_int(rng, 0, 4)) {
    case 0:
    case 1:
        snprintf(out, cap, "%.*f %s", decimals, v, PICK(rng, units));
        break;
    case 2:
        snprintf(out, cap, "%+.*f%%", decimals, v / 20.0 - 25.0);
        break;
    case 3:
        snprintf(out, cap, "%d°%c", rng_int(rng, -30, 45), rng_uniform(rng) < 0.8 ? 'C' : 'F');
        break;
    default:
        snprintf(out, cap, "%d:%d", rng_int(rng, 1, 9), rng_int(rng, 2, 500));
        break;
    }
}

/* A code from a pattern: L an upper-case letter, D a digit, X either, others as written. */
static void gen_code(uint64_t *rng, char *out, size_t cap) {
    static const char *const patterns[] = {"LL-DDDD",
                                           "LLL-DDDD-LL",
                                           "DDDD-DDDD-DDDD-DDDD",
                                           "#DDDDD",
                                           "LDDD-XXXX",
                                           "XXXXXXXX",
                                           "LLDD DLL",
                                           "ISBN 978-D-DDD-DDDDD-D",
                                           "DD-DDDDDDD",
                                           "+44 DD DDDD DDDD",
                                           "(DDD) DDD-DDDD",
                                           "+1 DDD-DDD-DDDD",
                                           "DDDDD DDDDDD",
                                           "No. DDD",
                                           "INV-DDDD-DDDD",
                                           "LLLDDDDDDL",
                                           "DD/LL/DDDD",
                                           "v.D.DD",
                                           "XXX-XXX",
                                           "DDDDDD"};
    const char *p = PICK(rng, patterns);
    size_t n = 0;
    for (; *p && n + 1 < cap; p++) {
        const int kind = *p == 'X' ? rng_int(rng, 0, 1) : *p == 'L' ? 0 : *p == 'D' ? 1 : -1;
        out[n++] = kind == 0   ? (char)('A' + rng_int(rng, 0, 25))
                   : kind == 1 ? (char)('0' + rng_int(rng, 0, 9))
                               : *p;
    }
    out[n] = '\0';
}

/* A place or a name with the Latin-1 letters English sentences lack. */
static void gen_name(uint64_t *rng, char *out, size_t cap) {
    static const char *const names[] = {
        "Zürich",          "Málaga",   "São Paulo",   "Genève",         "Bogotá",   "Île-de-France",
        "Crème brûlée",    "Façade",   "Ærøskøbing",  "Þingvellir",     "Øresund",  "Åland",
        "Jalapeño",        "Gödel",    "Señor Muñoz", "Müller & Söhne", "Straße",   "Curaçao",
        "Reykjavík",       "Besançon", "Citroën",     "Håkon",          "Björk",    "Mälaren",
        "Château d'Yquem", "Ça va",    "Pérez",       "Dürer",          "Ñandú",    "Noël",
        "Ýdalir",          "Ðakovo",   "Aïda",        "Niño",           "Göteborg", "Ørsted",
        "ÉCOLE",           "Úbeda",    "Òrrius",      "Ìsola",          "Fußball",  "Õismäe"};
    snprintf(out, cap, "%s", PICK(rng, names));
}

/* An e-mail or web address. */
static void gen_address(uint64_t *rng, char *out, size_t cap) {
    static const char *const parts[] = {"info",  "sales", "mail",  "shop",  "news",    "office",
                                        "data",  "team",  "north", "blue",  "star",    "city",
                                        "green", "home",  "media", "books", "j.smith", "anna"};
    static const char *const tlds[] = {"com", "org", "net", "co.uk", "de", "fr", "io"};
    const int n = rng_int(rng, 1, 99);
    switch (rng_int(rng, 0, 2)) {
    case 0:
        snprintf(out, cap, "%s%d@%s-%s.%s", PICK(rng, parts), n, PICK(rng, parts), PICK(rng, parts),
                 PICK(rng, tlds));
        break;
    case 1:
        snprintf(out, cap, "www.%s%s.%s/%s_%d", PICK(rng, parts), PICK(rng, parts), PICK(rng, tlds),
                 PICK(rng, parts), n);
        break;
    default:
        snprintf(out, cap, "https://%s.%s/~%s/?id=%d&p=%d", PICK(rng, parts), PICK(rng, tlds),
                 PICK(rng, parts), n, rng_int(rng, 1, 9));
        break;
    }
}

/* A number with a sign or bracket: comparisons, footnotes, powers, ranges. */
static void gen_mark(uint64_t *rng, char *out, size_t cap) {
    static const char *const before[] = {"<",  ">", "~", "[",  "(", "",  "{",
                                         "x^", "#", "=", "A_", "",  "+", ""};
    static const char *const after[] = {"", "", "", "]", ")",  "*", "}",
                                        "", "", "", "",  "\\", "",  "'"};
    const int k = rng_int(rng, 0, (int)(sizeof before / sizeof before[0]) - 1);
    snprintf(out, cap, "%s%d%s", before[k], rng_int(rng, 0, 999), after[k]);
}

/* One item, sometimes after a label word. */
static void gen_item(uint64_t *rng, char *out, size_t cap) {
    static const char *const labels[] = {
        "Total:",    "Subtotal:", "Date:",   "Due",     "Invoice", "Order",    "Ref.",
        "Tel.",      "Qty",       "Price",   "Amount:", "Balance", "VAT",      "Page",
        "Item",      "Code:",     "Account", "Room",    "Flight",  "Seat",     "Lot",
        "Serial:",   "Model",     "ID",      "Paid",    "Change",  "Discount", "Ticket",
        "Order No.", "Customer",  "Phone:",  "Time:",   "Weight:", "Size:",    "Temp."};
    size_t n = 0;
    if (rng_uniform(rng) < 0.3) n = (size_t)snprintf(out, cap, "%s ", PICK(rng, labels));
    void (*const makers[])(uint64_t *, char *, size_t) = {
        gen_integer, gen_integer, gen_price, gen_price, gen_date, gen_date,    gen_time,
        gen_measure, gen_measure, gen_code,  gen_code,  gen_name, gen_address, gen_mark};
    makers[rng_int(rng, 0, 13)](rng, out + n, cap - n);
}

size_t ocr_text_generate(uint64_t *rng, char *buf, size_t cap) {
    static const char *const separators[] = {" ", " ", " ", " ", " - ", " | ", ", ", " / ", "; "};
    const size_t limit = cap - 1 < OCR_DRAW_BYTES ? cap - 1 : OCR_DRAW_BYTES;
    size_t len = 0;
    for (;;) {
        char item[96];
        gen_item(rng, item, sizeof item);
        const char *sep = len ? PICK(rng, separators) : "";
        const size_t sn = strlen(sep), in = strlen(item);
        if (len + sn + in > limit) break;
        memcpy(buf + len, sep, sn);
        memcpy(buf + len + sn, item, in);
        len += sn + in;
    }
    buf[len] = '\0';
    return len;
}

/* ---- drawing a line's text ---- */

/* Appends the words of sentence text[0..n) from word `first` on to buf[*len..), while they fit in
 * limit bytes. Returns 0 once a word did not fit (the text is full). */
static int append_words(const char *text, size_t n, int first, char *buf, size_t *len,
                        size_t limit) {
    size_t i = 0;
    for (int w = 0; w < first && i < n; w++) { /* skip to word `first` */
        while (i < n && text[i] != ' ') i++;
        i++;
    }
    while (i < n) {
        size_t end = i;
        while (end < n && text[end] != ' ') end++;
        const size_t wn = end - i, sep = *len > 0;
        if (*len + sep + wn > limit) return 0;
        if (sep) buf[(*len)++] = ' ';
        memcpy(buf + *len, text + i, wn);
        *len += wn;
        i = end + 1;
    }
    return 1;
}

static int count_words(const char *text, size_t n) {
    int words = 1;
    for (size_t i = 0; i < n; i++) words += text[i] == ' ';
    return words;
}

/* A phrase (SST-2's have no final stop) ends before the next sentence starts: a full stop after
 * a letter or a digit, or instead of a comma, semicolon or colon. */
static void end_sentence(char *buf, size_t *len, size_t limit) {
    const unsigned char last = (unsigned char)buf[*len - 1];
    if (strchr(",;:", last))
        buf[*len - 1] = '.';
    else if ((isalnum(last) || last >= 0x80) && *len < limit)
        buf[(*len)++] = '.';
}

/* Sentences from a random one on (from its first word half the time, else a random word),
 * continued with further random sentences, each ended by a full stop if it has none, until the
 * text is full. */
static size_t draw_sentences(const ocr_sentences *s, uint64_t *rng, char *buf, size_t limit) {
    size_t len = 0;
    for (int k = 0;; k++) {
        if (len > 0) end_sentence(buf, &len, limit);
        const int i = rng_int(rng, 0, s->count - 1);
        const char *t = s->text + s->start[i];
        const size_t n = s->start[i + 1] - s->start[i] - 1;
        const int words = count_words(t, n);
        const int first = k == 0 && rng_uniform(rng) >= 0.5 ? rng_int(rng, 0, words - 1) : 0;
        const size_t before = len;
        if (!append_words(t, n, first, buf, &len, limit)) {
            if (len == 0) { /* one word longer than a whole draw: its start */
                len = n < limit ? n : limit;
                while (len > 0 && (t[len] & 0xC0) == 0x80) len--; /* not inside a character */
                memcpy(buf, t, len);
            }
            break;
        }
        if (len == before) break; /* nothing more fits */
    }
    return len;
}

size_t ocr_text_draw(const ocr_sentences *s, const ocr_text_options *o, uint64_t *rng, char *buf,
                     size_t cap) {
    const size_t limit = cap - 1 < OCR_DRAW_BYTES ? cap - 1 : OCR_DRAW_BYTES;
    const int generated = !s || s->count == 0 || rng_uniform(rng) < o->generated;
    size_t len =
        generated ? ocr_text_generate(rng, buf, limit + 1) : draw_sentences(s, rng, buf, limit);
    buf[len] = '\0';
    const double c = rng_uniform(rng);
    if (c < o->upper_case)
        ocr_upper_case(buf, len);
    else if (c < o->upper_case + o->title_case)
        ocr_title_case(buf, len);
    return len;
}

/* ---- page-like texts ---- */

const char *const ocr_text_kind_names[OCR_TEXT_KINDS] = {"prose", "heading", "list",
                                                         "cell",  "code",    "generated"};

size_t ocr_text_chars(const char *text, size_t n) {
    size_t chars = 0;
    for (size_t i = 0; i < n; i++) chars += ((unsigned char)text[i] & 0xC0) != 0x80;
    return chars;
}

/* The bytes of text[0..n) that hold its first `chars` code points. */
static size_t bytes_of_chars(const char *text, size_t n, size_t chars) {
    size_t i = 0;
    for (size_t c = 0; i < n; i++)
        if (((unsigned char)text[i] & 0xC0) != 0x80 && c++ == chars) break;
    return i;
}

/* Cuts buf[0..len) to at most `chars` code points at a word's end; a first word longer than that
 * is kept whole while it has at most OCR_PAGE_CHARS (else cut inside). Returns the new length. */
static size_t cut_words(char *buf, size_t len, size_t chars) {
    size_t keep = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i < len && buf[i] != ' ') continue;
        if (ocr_text_chars(buf, i) > chars) break;
        keep = i;
    }
    if (keep == 0) { /* the first word alone is too long */
        size_t end = 0;
        while (end < len && buf[end] != ' ') end++;
        keep = ocr_text_chars(buf, end) <= OCR_PAGE_CHARS
                   ? end
                   : bytes_of_chars(buf, len, OCR_PAGE_CHARS);
    }
    while (keep > 0 && buf[keep - 1] == ' ') keep--;
    buf[keep] = '\0';
    return keep;
}

/* A page line's length: short ones (single words) and full lines both common. */
static size_t draw_chars(uint64_t *rng) {
    return (size_t)(rng_uniform(rng) < 0.15 ? rng_int(rng, 1, 8) : rng_int(rng, 8, OCR_PAGE_CHARS));
}

/* Prose of at most `chars` code points. */
static size_t page_prose(const ocr_sentences *s, uint64_t *rng, char *buf, size_t chars) {
    const size_t len = draw_sentences(s, rng, buf, OCR_DRAW_BYTES);
    return cut_words(buf, len, chars);
}

static size_t page_heading(const ocr_sentences *s, uint64_t *rng, char *buf) {
    static const char *const prefixes[] = {
        "Chapter %d ", "%d. ", "%d.%d ", "Section %d: ", "Part %d - ", "%d ", "Appendix %c. "};
    size_t len = 0;
    if (rng_uniform(rng) < 0.3) {
        const int k = rng_int(rng, 0, 6), a = rng_int(rng, 1, 12), b = rng_int(rng, 1, 9);
        len = k == 6   ? (size_t)snprintf(buf, 32, prefixes[k], 'A' + a)
              : k == 2 ? (size_t)snprintf(buf, 32, prefixes[k], a, b)
                       : (size_t)snprintf(buf, 32, prefixes[k], a);
    }
    char words[OCR_DRAW_BYTES + 1];
    const size_t n = draw_sentences(s, rng, words, OCR_DRAW_BYTES);
    size_t end = 0;
    for (int keep = rng_int(rng, 1, 7); end < n; end++) /* the first `keep` words */
        if (words[end] == ' ' && --keep == 0) break;
    while (end > 0 && strchr(".,;:!?\"' -", words[end - 1])) end--; /* no final sign */
    if (end == 0) end = n;
    const double c = rng_uniform(rng);
    if (c < 0.5)
        ocr_title_case(words, end);
    else if (c < 0.85)
        ocr_upper_case(words, end);
    if (len + end > OCR_DRAW_BYTES) end = OCR_DRAW_BYTES - len;
    memcpy(buf + len, words, end);
    len = cut_words(buf, len + end, OCR_PAGE_CHARS);
    return len > 0 ? len : page_prose(s, rng, buf, OCR_PAGE_CHARS);
}

static size_t page_list(const ocr_sentences *s, uint64_t *rng, char *buf) {
    static const char *const romans[] = {"i", "ii", "iii", "iv", "v", "vi", "vii", "viii", "ix"};
    const int n = rng_int(rng, 1, 12);
    size_t len;
    switch (rng_int(rng, 0, 7)) {
    case 0:
    case 1:
        len = (size_t)snprintf(buf, 16, "%d.", n);
        break;
    case 2:
        len = (size_t)snprintf(buf, 16, "%c)", 'a' + n - 1);
        break;
    case 3:
        len = (size_t)snprintf(buf, 16, "(%s)", romans[n % 9]);
        break;
    case 4:
        len = (size_t)snprintf(buf, 16, "%c.", 'A' + n - 1);
        break;
    case 5:
        len = (size_t)snprintf(buf, 16, "-");
        break;
    case 6:
        len = (size_t)snprintf(buf, 16, "*");
        break;
    default:
        len = (size_t)snprintf(buf, 16, "%d)", n);
        break;
    }
    buf[len++] = ' ';
    const size_t room = OCR_PAGE_CHARS - len, chars = draw_chars(rng);
    char prose[OCR_DRAW_BYTES + 1];
    const size_t words = page_prose(s, rng, prose, chars < room ? chars : room);
    memcpy(buf + len, prose, words + 1);
    return len + words;
}

static size_t page_cell(const ocr_sentences *s, uint64_t *rng, char *buf) {
    static const char *const plain[] = {"n/a", "-", "Yes", "No", "TBD", "N/A",  "Total", "OK",
                                        "0",   "%", "x",   "--", "Nil", "Mean", "Max",   "Min"};
    const int k = rng_int(rng, 0, 9);
    if (k <= 1) gen_integer(rng, buf, OCR_DRAW_BYTES);
    if (k == 2) gen_price(rng, buf, OCR_DRAW_BYTES);
    if (k == 3) gen_date(rng, buf, OCR_DRAW_BYTES);
    if (k == 4) gen_measure(rng, buf, OCR_DRAW_BYTES);
    if (k == 5) snprintf(buf, OCR_DRAW_BYTES, "%.*f", rng_int(rng, 1, 3), rng_uniform(rng) * 100);
    if (k == 6) snprintf(buf, OCR_DRAW_BYTES, "%s", PICK(rng, plain));
    if (k >= 7 && s && s->count > 0) { /* a word or three of a sentence, often capitalised */
        size_t n = draw_sentences(s, rng, buf, OCR_DRAW_BYTES);
        n = cut_words(buf, n, (size_t)rng_int(rng, 1, 20));
        while (n > 1 && strchr(".,;:!?", buf[n - 1])) buf[--n] = '\0';
        if (rng_uniform(rng) < 0.5) upper_at((unsigned char *)buf, n, 0);
    } else if (k >= 7) {
        gen_code(rng, buf, OCR_DRAW_BYTES);
    }
    return strlen(buf);
}

/* An identifier: a word, or two in snake_case or camelCase. */
static void identifier(uint64_t *rng, char *out, size_t cap) {
    static const char *const words[] = {
        "count", "total", "index",  "name",  "value", "buf",    "len",  "result", "items",
        "data",  "node",  "key",    "user",  "size",  "tmp",    "i",    "j",      "x",
        "y",     "err",   "config", "path",  "line",  "offset", "max",  "min",    "input",
        "out",   "row",   "col",    "parse", "read",  "write",  "get",  "set",    "list",
        "map",   "str",   "id",     "next",  "prev",  "head",   "tail", "width",  "height"};
    const char *a = PICK(rng, words), *b = PICK(rng, words);
    switch (rng_int(rng, 0, 2)) {
    case 0:
        snprintf(out, cap, "%s", a);
        break;
    case 1:
        snprintf(out, cap, "%s_%s", a, b);
        break;
    default:
        snprintf(out, cap, "%s%c%s", a, toupper((unsigned char)b[0]), b + 1);
        break;
    }
}

static size_t page_code(uint64_t *rng, char *buf) {
    static const char *const ops[] = {"==", "!=", "<=", ">=", "<", ">", "&&", "||"};
    static const char *const words[] = {"hello", "utf-8", "%d items", "a,b", "ok", "\\n", "/tmp"};
    char a[40], b[40], c[40];
    identifier(rng, a, sizeof a);
    identifier(rng, b, sizeof b);
    identifier(rng, c, sizeof c);
    const int n = rng_int(rng, 0, 99), m = rng_int(rng, 1, 9);
    const char *op = PICK(rng, ops), *w = PICK(rng, words);
    char *o = buf;
    const size_t cap = OCR_DRAW_BYTES;
    switch (rng_int(rng, 0, 14)) {
    case 0:
        snprintf(o, cap, "%s = %s(%s, %d);", a, b, c, n);
        break;
    case 1:
        snprintf(o, cap, "if (%s %s %d) {", a, op, n);
        break;
    case 2:
        snprintf(o, cap, "return %s[%s] + %d;", a, b, n);
        break;
    case 3:
        snprintf(o, cap, "for (int %s = 0; %s < %s; %s++) {", a, a, b, a);
        break;
    case 4:
        snprintf(o, cap, "def %s(%s, %s=None):", a, b, c);
        break;
    case 5:
        snprintf(o, cap, "%s.%s(\"%s\")", a, b, w);
        break;
    case 6:
        snprintf(o, cap, "const char *%s = \"%s\";", a, w);
        break;
    case 7:
        snprintf(o, cap, "#include <%s.h>", a);
        break;
    case 8:
        snprintf(o, cap, "%s += %s * %d;", a, b, m);
        break;
    case 9:
        snprintf(o, cap, "} else if (!%s) {", a);
        break;
    case 10:
        snprintf(o, cap, "print(f\"{%s}: %s\")", a, w);
        break;
    case 11:
        snprintf(o, cap, "let %s = %s.map(|x| x * %d);", a, b, m);
        break;
    case 12:
        snprintf(o, cap, "%s: %s = '%s'", a, b, w);
        break;
    case 13:
        snprintf(o, cap, "// %s the %s of %s", a, b, c);
        break;
    default:
        snprintf(o, cap, "%s = {'%s': %d, '%s': [%d, %d]}", a, b, n, c, m, n + m);
        break;
    }
    return cut_words(buf, strlen(buf), OCR_PAGE_CHARS);
}

size_t ocr_text_draw_page(const ocr_sentences *s, uint64_t *rng, char *buf, size_t cap, int *kind) {
    static const double shares[OCR_TEXT_KINDS] = {0.45, 0.08, 0.10, 0.12, 0.08, 0.17};
    (void)cap; /* at least OCR_DRAW_BYTES + 1: every maker stays below */
    const double u = rng_uniform(rng);
    int k = 0;
    for (double acc = shares[0]; k < OCR_TEXT_KINDS - 1 && u >= acc; acc += shares[++k]) {
    }
    if (!(s && s->count > 0) && k <= OCR_TEXT_LIST) k = OCR_TEXT_GENERATED;
    *kind = k;
    return ocr_text_draw_kind(s, k, rng, buf, cap);
}

size_t ocr_text_draw_kind(const ocr_sentences *s, int k, uint64_t *rng, char *buf, size_t cap) {
    (void)cap;
    const int words = s && s->count > 0;
    if (!words && k <= OCR_TEXT_LIST) k = OCR_TEXT_GENERATED;
    size_t len = 0;
    switch (k) {
    case OCR_TEXT_PROSE:
        len = page_prose(s, rng, buf, draw_chars(rng));
        break;
    case OCR_TEXT_HEADING:
        len = page_heading(s, rng, buf);
        break;
    case OCR_TEXT_LIST:
        len = page_list(s, rng, buf);
        break;
    case OCR_TEXT_CELL:
        len = page_cell(s, rng, buf);
        break;
    case OCR_TEXT_CODE:
        len = page_code(rng, buf);
        break;
    default:
        len = ocr_text_generate(rng, buf, OCR_DRAW_BYTES + 1);
        len = cut_words(buf, len, draw_chars(rng));
        break;
    }
    if (len == 0) { /* a maker that came out empty (it cannot, but a line is never blank) */
        len = (size_t)snprintf(buf, OCR_DRAW_BYTES, "%d", rng_int(rng, 0, 9));
    }
    buf[len] = '\0';
    return len;
}

size_t ocr_text_paragraph(const ocr_sentences *s, uint64_t *rng, size_t bytes, char *buf,
                          size_t cap) {
    size_t len = 0;
    if (bytes >= cap) bytes = cap - 1;
    for (int tries = 0; len < bytes && tries < 1000; tries++) {
        char one[OCR_DRAW_BYTES + 1];
        size_t n;
        if (s && s->count > 0) { /* a whole sentence, ended */
            const int i = rng_int(rng, 0, s->count - 1);
            const char *t = s->text + s->start[i];
            n = 0;
            /* a sentence longer than a draw keeps the words that fit */
            append_words(t, s->start[i + 1] - s->start[i] - 1, 0, one, &n, OCR_DRAW_BYTES);
            if (n == 0) continue;
            end_sentence(one, &n, OCR_DRAW_BYTES);
        } else {
            n = ocr_text_generate(rng, one, sizeof one);
        }
        if (len > 0 && len + 1 + n > bytes) break;
        if (len > 0) buf[len++] = ' ';
        if (len + n > cap - 1) n = cap - 1 - len;
        memcpy(buf + len, one, n);
        len += n;
    }
    buf[len] = '\0';
    return len;
}
