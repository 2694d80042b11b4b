#ifndef VIT_CLI_JSON_WRITER_H
#define VIT_CLI_JSON_WRITER_H

/* The CLI's one way of printing JSON: streamed to a FILE, one document per line, ", " between
 * items and ": " after keys, floats with the 9 significant digits that read back as the same
 * float32, strings as valid JSON whatever their bytes (invalid UTF-8 becomes U+FFFD).
 *
 *   json_writer w = json_begin(stdout);
 *   json_object(&w);  json_key(&w, "file");  json_string(&w, path);
 *   json_key(&w, "top");  json_array(&w);  ...  json_end(&w);
 *   json_end(&w);  json_line(&w);
 */

#include <stddef.h>
#include <stdio.h>

#define JSON_MAX_DEPTH 16

typedef struct {
    FILE *out;
    int depth;
    int items[JSON_MAX_DEPTH];  /* items written so far at each open level */
    char close[JSON_MAX_DEPTH]; /* '}' or ']' */
    int after_key;
} json_writer;

json_writer json_begin(FILE *out);
void json_object(json_writer *w);
void json_array(json_writer *w);
void json_end(json_writer *w); /* closes the innermost object or array */
void json_key(json_writer *w, const char *key);
void json_string(json_writer *w, const char *s);
void json_value_string(json_writer *w, const char *s, size_t n); /* s[0..n) */
void json_int(json_writer *w, long long v);
void json_float(json_writer *w, float v);
/* A value another writer already wrote, s[0..n), as it is. */
void json_raw(json_writer *w, const char *s, size_t n);
void json_line(json_writer *w); /* ends the document with a newline */

#endif
