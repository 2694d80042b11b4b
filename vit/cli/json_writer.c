#include "vit/cli/json_writer.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "text/utf8.h"

json_writer json_begin(FILE *out) {
    return (json_writer){.out = out};
}

static void json_string_n(json_writer *w, const char *s, size_t n);

/* The separator before a value, unless it follows its key. */
static void before_value(json_writer *w) {
    if (w->after_key) {
        w->after_key = 0;
        return;
    }
    if (w->depth > 0 && w->depth <= JSON_MAX_DEPTH && w->items[w->depth - 1]++ > 0)
        fputs(", ", w->out);
}

static void open_level(json_writer *w, char open, char close) {
    before_value(w);
    fputc(open, w->out);
    if (w->depth < JSON_MAX_DEPTH) {
        w->items[w->depth] = 0;
        w->close[w->depth] = close;
    }
    w->depth++;
}

void json_object(json_writer *w) {
    open_level(w, '{', '}');
}
void json_array(json_writer *w) {
    open_level(w, '[', ']');
}

void json_end(json_writer *w) {
    if (w->depth <= 0) return;
    w->depth--;
    fputc(w->depth < JSON_MAX_DEPTH ? w->close[w->depth] : '}', w->out);
}

void json_key(json_writer *w, const char *key) {
    before_value(w);
    json_string_n(w, key, strlen(key));
    fputs(": ", w->out);
    w->after_key = 1;
}

static void json_string_n(json_writer *w, const char *s, size_t n) {
    FILE *out = w->out;
    fputc('"', out);
    for (size_t i = 0; i < n;) {
        const size_t at = i;
        const int32_t cp = utf8_decode((const uint8_t *)s, n, &i);
        if (cp < 0)
            fputs("\\ufffd", out);
        else if (cp == '"' || cp == '\\')
            fprintf(out, "\\%c", (char)cp);
        else if (cp == '\n')
            fputs("\\n", out);
        else if (cp == '\t')
            fputs("\\t", out);
        else if (cp == '\r')
            fputs("\\r", out);
        else if (cp < 0x20)
            fprintf(out, "\\u%04x", (unsigned)cp);
        else
            fwrite(s + at, 1, i - at, out);
    }
    fputc('"', out);
}

void json_string(json_writer *w, const char *s) {
    json_value_string(w, s, strlen(s));
}

void json_value_string(json_writer *w, const char *s, size_t n) {
    before_value(w);
    json_string_n(w, s, n);
}

void json_int(json_writer *w, long long v) {
    before_value(w);
    fprintf(w->out, "%lld", v);
}

void json_float(json_writer *w, float v) {
    before_value(w);
    if (isfinite(v))
        fprintf(w->out, "%.9g", (double)v);
    else
        fputs("null", w->out); /* JSON has no NaN or infinity */
}

void json_raw(json_writer *w, const char *s, size_t n) {
    before_value(w);
    fwrite(s, 1, n, w->out);
}

void json_line(json_writer *w) {
    fputc('\n', w->out);
}
