/* open_clip's canonicalize_text (canonicalize.h). */
#include "text/canonicalize.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "text/decode.h"
#include "text/utf8.h"

static int ascii_punctuation(int32_t c) {
    return c > 0 && c < 0x80 && strchr("!\"#$%&'()*+,-./:;<=>?@[\\]^`{|}~", (int)c) != NULL;
}

int text_canonicalize(const char *s, size_t n, char **out, size_t *out_len) {
    /* each character gives at most its own bytes plus one (U+0130's 2 -> 3) and a space */
    uint8_t *o = malloc(2 * n + 1);
    if (!o) return -1;
    size_t len = 0, i = 0;
    int gap = 0; /* white space seen since the last character written */
    while (i < n) {
        const size_t at = i;
        const int32_t c = utf8_decode((const uint8_t *)s, n, &i);
        if (c == '_' || (c >= 0 && py_isspace(c))) {
            gap = 1;
            continue;
        }
        if (c >= 0 && ascii_punctuation(c)) continue; /* removed: the neighbours join */
        if (gap && len > 0) o[len++] = ' ';
        gap = 0;
        if (c < 0) {
            memcpy(o + len, s + at, i - at);
            len += i - at;
        } else if (c == 0x130) {
            len += utf8_encode('i', o + len);
            len += utf8_encode(0x307, o + len);
        } else {
            len += utf8_encode(utf8proc_tolower(c), o + len);
        }
    }
    o[len] = 0;
    *out = (char *)o, *out_len = len;
    return 0;
}
