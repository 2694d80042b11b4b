#ifndef VIT_JSON_H
#define VIT_JSON_H

/* Typed reads of Hugging Face JSON config fields. A missing or null field leaves *out alone (it
 * holds the HF default); a field of the wrong type or out of range is an error naming `src` (the
 * file) and the field. */

#include <cjson/cJSON.h>
#include <stddef.h>

#include "vit/base/error.h"

/* Also maps true/false to 1/0 (some configs write booleans as 0/1 and vice versa). */
int json_get_int(const cJSON *obj, const char *key, int lo, int hi, int *out, const char *src,
                 vit_error *err);
int json_get_bool(const cJSON *obj, const char *key, int *out, const char *src, vit_error *err);
int json_get_number(const cJSON *obj, const char *key, double lo, double hi, double *out,
                    const char *src, vit_error *err);
/* A special token as tokenizer files write it, a string or a serialised AddedToken
 * {"content": ...}: the node holding its text (the item itself, or its "content"; NULL when
 * item is NULL or the object has none). */
const cJSON *json_token_content(const cJSON *item);
/* Parses text (size bytes, NUL-terminated) as Python's json.loads reads the files transformers
 * opens: a UTF-8 byte order mark, anything after the value or a NUL byte is refused, and a key
 * given twice in one object keeps its last value (at its first place, as a dict). NULL when it
 * is not a JSON object, with the reason in why ("starts with a UTF-8 byte order mark ...",
 * "a syntax error at line L, column C", ...). The caller cJSON_Deletes the result. */
cJSON *json_parse_object(const char *text, size_t size, char *why, size_t why_size);
/* Reads a whole JSON file (at most 16 MiB) and parses it so; NULL with err when unreadable or not
 * a JSON object. The caller cJSON_Deletes it. */
cJSON *json_load_object(const char *path, vit_error *err);
/* x as the shortest decimal that reads back as the same float (1e-12, not
 * 9.9999999600419720e-13), as Python writes a config's float; NULL when out of memory. */
cJSON *json_shortest_float(float x);

#endif
