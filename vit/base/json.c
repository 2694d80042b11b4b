#include "vit/base/json.h"

#include <math.h>
#include <stdlib.h>

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

cJSON *json_load_object(const char *path, vit_error *err) {
    char *text = vit_read_file(path, MAX_JSON_BYTES, NULL, err);
    if (!text) return NULL;
    cJSON *root = cJSON_Parse(text);
    free(text);
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return vit_fail(err, "%s: not a valid JSON object", path), NULL;
    }
    return root;
}

const cJSON *json_token_content(const cJSON *item) {
    return cJSON_IsObject(item) ? cJSON_GetObjectItemCaseSensitive(item, "content") : item;
}
