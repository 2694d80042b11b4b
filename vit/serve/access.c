#include "vit/serve/access.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "vit/base/error.h"

/* A key or a token, zero-padded to the bound, so that comparing two is the same loop whatever
 * they hold. */
typedef struct {
    unsigned char bytes[SERVE_MAX_KEY_BYTES];
    size_t size; /* the real length (a token's may exceed the bound: it then matches no key) */
} padded;

struct serve_access {
    padded *keys;
    int num_keys;
    char **origins; /* those listed, "*" not among them */
    int num_origins;
    int any_origin; /* "*" */
};

serve_access *serve_access_create(void) {
    return calloc(1, sizeof(serve_access));
}

void serve_access_free(serve_access *a) {
    if (!a) return;
    for (int i = 0; i < a->num_origins; i++) free(a->origins[i]);
    free(a->origins);
    free(a->keys);
    free(a);
}

static int visible_ascii(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] <= 0x20 || (unsigned char)s[i] >= 0x7f) return 0;
    return 1;
}

int serve_access_add_key(serve_access *a, const char *key, vit_error *err) {
    const size_t n = strlen(key);
    if (n == 0) return vit_fail(err, "an empty API key");
    if (n > SERVE_MAX_KEY_BYTES)
        return vit_fail(err, "an API key of %zu bytes, over the limit of %d", n,
                        SERVE_MAX_KEY_BYTES);
    if (!visible_ascii(key, n))
        return vit_fail(err, "an API key holds a space, a control character or a non-ASCII byte "
                             "(a header cannot carry it)");
    padded *grown = realloc(a->keys, sizeof *grown * (size_t)(a->num_keys + 1));
    if (!grown) return vit_fail(err, "out of memory");
    a->keys = grown;
    padded *p = &a->keys[a->num_keys++];
    memset(p->bytes, 0, sizeof p->bytes);
    memcpy(p->bytes, key, n);
    p->size = n;
    return 0;
}

/* "scheme://host[:port]": a scheme of letters, digits, '+', '-', '.' (a letter first), then a
 * host part without '/' (a path never appears in Origin). */
static int is_origin(const char *s, size_t n) {
    const char *sep = memmem(s, n, "://", 3);
    if (!sep || sep == s || !visible_ascii(s, n)) return 0;
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z'))) return 0;
    for (const char *c = s; c < sep; c++)
        if (!(strchr("+-.", *c) || (*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'z') ||
              (*c >= 'A' && *c <= 'Z')))
            return 0;
    const char *host = sep + 3, *end = s + n;
    return host < end && !memchr(host, '/', (size_t)(end - host));
}

static int add_origin(serve_access *a, const char *s, size_t n, vit_error *err) {
    if (n == 1 && *s == '*') return a->any_origin = 1, 0;
    if (!(n == 4 && memcmp(s, "null", 4) == 0) && !is_origin(s, n))
        return vit_fail(err,
                        "'%.*s' is not an origin: scheme://host[:port] as a browser sends it, "
                        "without a path (http://localhost:3000), or * for any",
                        (int)(n < 200 ? n : 200), s);
    char **grown = realloc(a->origins, sizeof *grown * (size_t)(a->num_origins + 1));
    if (!grown) return vit_fail(err, "out of memory");
    a->origins = grown;
    if (!(a->origins[a->num_origins] = strndup(s, n))) return vit_fail(err, "out of memory");
    a->num_origins++;
    return 0;
}

int serve_access_add_origins(serve_access *a, const char *list, vit_error *err) {
    const char *s = list;
    for (;;) {
        const size_t n = strcspn(s, ",");
        if (n == 0) return vit_fail(err, "an empty origin in '%.200s'", list);
        if (add_origin(a, s, n, err) != 0) return -1;
        if (!s[n]) return 0;
        s += n + 1;
    }
}

int serve_access_num_keys(const serve_access *a) {
    return a ? a->num_keys : 0;
}

int serve_access_num_origins(const serve_access *a) {
    return a ? a->num_origins + a->any_origin : 0;
}

/* 0 when token is key. Every byte up to the bound is compared (those past either end as the
 * padding's zeros, and the lengths as numbers, so that a prefix of the key does not match), with
 * no branch on what they hold: the time says nothing of where they first differ, nor of the key's
 * length. */
static unsigned differs(const padded *token, const padded *key) {
    unsigned diff = token->size != key->size;
    for (size_t i = 0; i < SERVE_MAX_KEY_BYTES; i++) diff |= token->bytes[i] ^ key->bytes[i];
    return diff;
}

serve_auth serve_access_check(const serve_access *a, const char *authorization) {
    if (!a || a->num_keys == 0) return SERVE_AUTH_OK;
    if (!authorization || strncasecmp(authorization, "Bearer", 6) != 0 ||
        (authorization[6] != ' ' && authorization[6] != '\t'))
        return SERVE_AUTH_MISSING;
    const char *t = authorization + 6;
    while (*t == ' ' || *t == '\t') t++;
    size_t n = strlen(t);
    while (n > 0 && (t[n - 1] == ' ' || t[n - 1] == '\t')) n--;
    if (n == 0) return SERVE_AUTH_MISSING;
    padded token = {.size = n};
    memcpy(token.bytes, t, n < SERVE_MAX_KEY_BYTES ? n : SERVE_MAX_KEY_BYTES);
    unsigned matched = 0;
    for (int k = 0; k < a->num_keys; k++) matched |= differs(&token, &a->keys[k]) == 0;
    return matched ? SERVE_AUTH_OK : SERVE_AUTH_WRONG;
}

const char *serve_access_allow_origin(const serve_access *a, const char *origin) {
    if (!a) return NULL;
    if (a->any_origin) return "*";
    if (!origin) return NULL;
    for (int i = 0; i < a->num_origins; i++)
        if (strcasecmp(origin, a->origins[i]) == 0) return origin;
    return NULL;
}
