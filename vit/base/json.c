#include "vit/base/json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vit/base/file.h"

#define MAX_JSON_BYTES (16 << 20)

int json_get_int(const cJSON *obj, const char *key, int lo, int hi, int *out, const char *src,
                 vit_error *err) {
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!item || cJSON_IsNull(item)) return 0;
    if (cJSON_IsBool(item)) { /* true/false as 1/0, within the field's range like any number
                               * (fuzzing found "patch_size": false dividing by zero) */
        const int v = cJSON_IsTrue(item);
        if (v < lo || v > hi)
            return vit_fail(err, "%s: field '%s' is %s, outside %d..%d", src, key,
                            v ? "true" : "false", lo, hi);
        *out = v;
        return 0;
    }
    if (!cJSON_IsNumber(item) || item->valuedouble != floor(item->valuedouble))
        return vit_fail(err, "%s: field '%s' must be an integer", src, key);
    if (item->valuedouble < lo || item->valuedouble > hi)
        return vit_fail(err, "%s: field '%s' is %g, outside %d..%d", src, key, item->valuedouble,
                        lo, hi);
    *out = (int)item->valuedouble;
    return 0;
}

int json_get_bool(const cJSON *obj, const char *key, int *out, const char *src, vit_error *err) {
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!item || cJSON_IsNull(item)) return 0;
    if (!cJSON_IsBool(item)) return vit_fail(err, "%s: field '%s' must be true or false", src, key);
    *out = cJSON_IsTrue(item);
    return 0;
}

int json_get_number(const cJSON *obj, const char *key, double lo, double hi, double *out,
                    const char *src, vit_error *err) {
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!item || cJSON_IsNull(item)) return 0;
    if (!cJSON_IsNumber(item)) return vit_fail(err, "%s: field '%s' must be a number", src, key);
    if (!(item->valuedouble >= lo && item->valuedouble <= hi))
        return vit_fail(err, "%s: field '%s' is %g, outside %g..%g", src, key, item->valuedouble,
                        lo, hi);
    *out = item->valuedouble;
    return 0;
}

static size_t key_hash(const char *k) {
    size_t h = 1469598103934665603u; /* FNV-1a */
    for (; *k; k++) h = (h ^ (unsigned char)*k) * 1099511628211u;
    return h;
}

/* Python's dict: a key given twice keeps the first one's place and the last one's value. One
 * pass with a hash table of the keys seen (vocabularies hold 250,000 keys). -1: out of memory. */
static int keep_last_values(cJSON *obj) {
    size_t n = 0, cap = 8;
    for (const cJSON *c = obj->child; c; c = c->next) n++;
    while (cap < 2 * n) cap *= 2;
    cJSON **seen = n > 1 ? calloc(cap, sizeof *seen) : NULL;
    if (n > 1 && !seen) return -1;
    for (cJSON *c = obj->child, *next; n > 1 && c; c = next) {
        next = c->next;
        size_t at = key_hash(c->string) & (cap - 1);
        while (seen[at] && strcmp(seen[at]->string, c->string) != 0) at = (at + 1) & (cap - 1);
        if (seen[at]) { /* the later value takes the earlier one's place */
            cJSON_DetachItemViaPointer(obj, c);
            cJSON_ReplaceItemViaPointer(obj, seen[at], c);
        }
        seen[at] = c;
    }
    free(seen);
    return 0;
}

/* Objects anywhere in the tree, nested at most as deep as cJSON parses (CJSON_NESTING_LIMIT). */
static int keep_last_everywhere(cJSON *node) {
    if (cJSON_IsObject(node) && keep_last_values(node) != 0) return -1;
    for (cJSON *c = node->child; c; c = c->next)
        if ((cJSON_IsObject(c) || cJSON_IsArray(c)) && keep_last_everywhere(c) != 0) return -1;
    return 0;
}

/* Where cJSON stopped, as a line and column. */
static void syntax_error(const char *text, const char *at, char *why, size_t why_size) {
    int line = 1, column = 1;
    for (const char *p = text; at && p < at && *p; p++) {
        column = *p == '\n' ? 1 : column + 1;
        line += *p == '\n';
    }
    snprintf(why, why_size, "a syntax error at line %d, column %d", line, column);
}

cJSON *json_parse_object(const char *text, size_t size, char *why, size_t why_size) {
    if (size >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0) {
        snprintf(why, why_size,
                 "starts with a UTF-8 byte order mark, which Python's json.loads (transformers) "
                 "refuses: save it without");
        return NULL;
    }
    if (memchr(text, 0, size)) {
        snprintf(why, why_size, "holds a NUL byte");
        return NULL;
    }
    /* text[0..size) need not end in a NUL (the tokenizers' and fuzzers' bytes do not): parsed by
     * its length, then only JSON's white space may follow, as json.loads allows */
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, size, &end, 0);
    while (root && end < text + size &&
           (*end == ' ' || *end == '\t' || *end == '\n' || *end == '\r'))
        end++;
    if (root && end < text + size) {
        cJSON_Delete(root);
        root = NULL;
    }
    if (!root) {
        syntax_error(text, end, why, why_size);
        return NULL;
    }
    if (!cJSON_IsObject(root)) {
        snprintf(why, why_size, "its value is not an object");
    } else if (keep_last_everywhere(root) != 0) {
        snprintf(why, why_size, "out of memory");
    } else {
        return root;
    }
    cJSON_Delete(root);
    return NULL;
}

cJSON *json_load_object(const char *path, vit_error *err) {
    size_t size = 0;
    char *text = vit_read_file(path, MAX_JSON_BYTES, &size, err);
    if (!text) return NULL;
    char why[160];
    cJSON *root = json_parse_object(text, size, why, sizeof why);
    free(text);
    if (!root) return vit_fail(err, "%s: not a valid JSON object: %s", path, why), NULL;
    return root;
}

const cJSON *json_token_content(const cJSON *item) {
    return cJSON_IsObject(item) ? cJSON_GetObjectItemCaseSensitive(item, "content") : item;
}

cJSON *json_shortest_float(float x) {
    char buf[32];
    for (int digits = 6; digits <= 9; digits++) {
        snprintf(buf, sizeof buf, "%.*g", digits, (double)x);
        if ((float)strtod(buf, NULL) == x) break;
    }
    /* %g always writes a digit before any exponent, as JSON needs */
    return cJSON_CreateRaw(buf);
}
