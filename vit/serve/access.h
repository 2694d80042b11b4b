#ifndef VIT_SERVE_ACCESS_H
#define VIT_SERVE_ACCESS_H

/* Who may call `vit serve`'s API: the API keys it accepts (a request's "Authorization: Bearer
 * KEY", compared in constant time) and the web origins whose pages may call it from a browser
 * (CORS). Set up before serving, then only read: any thread may check. */

#include "vit/vit.h"

/* The longest key: every comparison runs over this many bytes, whatever the lengths. */
#define SERVE_MAX_KEY_BYTES 256

typedef struct serve_access serve_access;

/* No keys (every request is let in) and no origins (no CORS headers). NULL when out of memory. */
serve_access *serve_access_create(void);
void serve_access_free(serve_access *a);

/* A key accepted: 1 to SERVE_MAX_KEY_BYTES visible ASCII characters (what a header carries). -1
 * with err saying why it cannot be one (the key itself is never in the message). */
int serve_access_add_key(serve_access *a, const char *key, vit_error *err);
/* Origins allowed, a comma-separated list: "*" (any), "null" (a sandboxed page, a file://), or
 * scheme://host[:port] as browsers send it in Origin (no path, no trailing slash). -1 with err. */
int serve_access_add_origins(serve_access *a, const char *list, vit_error *err);

int serve_access_num_keys(const serve_access *a);
int serve_access_num_origins(const serve_access *a); /* "*" counts as one */

typedef enum {
    SERVE_AUTH_OK,      /* a key matched, or none is needed */
    SERVE_AUTH_MISSING, /* no Authorization header, or not a Bearer one */
    SERVE_AUTH_WRONG    /* a Bearer token that is no key */
} serve_auth;

/* A request's Authorization header (its value; NULL: none) against the keys. Every key is
 * compared in full: the time depends on the number of keys and the header's length only. */
serve_auth serve_access_check(const serve_access *a, const char *authorization);

/* What Access-Control-Allow-Origin answers a request whose Origin header is origin (NULL: none):
 * "*" when any origin is allowed, origin itself when it is listed, else NULL (no header). */
const char *serve_access_allow_origin(const serve_access *a, const char *origin);

#endif
