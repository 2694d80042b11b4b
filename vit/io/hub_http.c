#include "vit/io/hub_http.h"

#include <stdio.h>
#include <string.h>

#ifdef VIT_CURL

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include <curl/curl.h>
#include <openssl/evp.h>

int hub_http_built(void) {
    return 1;
}

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static void curl_start(void) {
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* A handle with the settings every request shares: no signals (a library in a threaded program),
 * a connection timeout and a stall limit (30 s below 1 byte/s), the token to the endpoint only
 * (libcurl does not pass a custom Authorization header on to another host when redirected). */
static CURL *handle(const hub_session *s, const char *url, struct curl_slist **headers) {
    pthread_once(&curl_once, curl_start);
    CURL *c = curl_easy_init();
    if (!c) return NULL;
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 10L);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 30L);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "vit (libcurl)");
    *headers = NULL;
    if (s->token && *s->token) {
        char auth[2048];
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", s->token);
        *headers = curl_slist_append(NULL, auth);
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, *headers);
    }
    return c;
}

/* A header's value when line is "name: value" (name case-insensitive), trimmed, into out. */
static int header_value(const char *line, size_t n, const char *name, char *out, size_t size) {
    const size_t k = strlen(name);
    if (n <= k || strncasecmp(line, name, k) != 0 || line[k] != ':') return 0;
    const char *v = line + k + 1, *end = line + n;
    while (v < end && isspace((unsigned char)*v)) v++;
    while (end > v && isspace((unsigned char)end[-1])) end--;
    snprintf(out, size, "%.*s", (int)(end - v), v);
    return 1;
}

/* huggingface_hub's _normalize_etag: a weak validator's W/ and the quotes dropped. */
static void normalize_etag(char *etag) {
    char *p = etag;
    if (strncmp(p, "W/", 2) == 0) p += 2;
    size_t n = strlen(p);
    if (n >= 2 && p[0] == '"' && p[n - 1] == '"') p++, n -= 2;
    memmove(etag, p, n);
    etag[n] = 0;
}

static size_t on_header(char *line, size_t one, size_t n, void *user) {
    hub_meta *m = user;
    char v[160];
    n *= one;
    if (header_value(line, n, "X-Repo-Commit", v, sizeof v))
        snprintf(m->commit, sizeof m->commit, "%.63s", v);
    else if (header_value(line, n, "X-Linked-Etag", v, sizeof v))
        snprintf(m->etag, sizeof m->etag, "%s", v), normalize_etag(m->etag), m->lfs = 1;
    else if (!m->lfs && header_value(line, n, "ETag", v, sizeof v))
        snprintf(m->etag, sizeof m->etag, "%s", v), normalize_etag(m->etag);
    else if (header_value(line, n, "X-Linked-Size", v, sizeof v))
        m->size = strtoll(v, NULL, 10);
    else if (header_value(line, n, "X-Error-Code", v, sizeof v))
        snprintf(m->error_code, sizeof m->error_code, "%.63s", v);
    else if (header_value(line, n, "Location", v, sizeof v))
        m->relative = v[0] == '/';
    return n;
}

static size_t discard(char *p, size_t one, size_t n, void *user) {
    (void)p, (void)user;
    return one * n;
}

int hub_http_head(const hub_session *s, const char *url, hub_meta *m, vit_error *err) {
    memset(m, 0, sizeof *m);
    m->size = -1;
    struct curl_slist *headers;
    CURL *c = handle(s, url, &headers);
    if (!c) return vit_fail(err, "%s: out of memory", url);
    curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, m);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
    const CURLcode rc = curl_easy_perform(c);
    int status = 0;
    if (rc != CURLE_OK) {
        status = vit_fail(err, "cannot reach %s: %s", url, curl_easy_strerror(rc));
    } else {
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &m->status);
        curl_off_t length = -1;
        curl_easy_getinfo(c, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length);
        if (m->size < 0 && m->status == 200) m->size = length;
        char *location = NULL;
        curl_easy_getinfo(c, CURLINFO_REDIRECT_URL, &location);
        if (location) snprintf(m->location, sizeof m->location, "%s", location);
    }
    curl_slist_free_all(headers);
    curl_easy_cleanup(c);
    return status;
}

typedef struct {
    CURL *c;
    FILE *f;
    int64_t offset, total;
    const hub_session *s;
    const char *file;
    int checked; /* the answer's status seen (a 200 to a Range request: start again) */
} get_state;

static size_t on_body(char *p, size_t one, size_t n, void *user) {
    get_state *g = user;
    if (!g->checked) {
        long status = 0;
        curl_easy_getinfo(g->c, CURLINFO_RESPONSE_CODE, &status);
        if (g->offset > 0 && status == 200) { /* the whole file, not the rest: from the start */
            if (fflush(g->f) != 0 || ftruncate(fileno(g->f), 0) != 0) return 0;
            rewind(g->f);
            g->offset = 0;
        }
        g->checked = 1;
    }
    return fwrite(p, one, n, g->f);
}

static int on_progress(void *user, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                       curl_off_t ulnow) {
    (void)dltotal, (void)ultotal, (void)ulnow;
    const get_state *g = user;
    if (g->s->progress) g->s->progress(g->s->user, g->file, g->offset + dlnow, g->total);
    return 0;
}

int hub_http_get(const hub_session *s, const char *url, const char *path, int64_t offset,
                 int64_t total, const char *file, vit_error *err) {
    FILE *f = fopen(path, offset > 0 ? "ab" : "wb");
    if (!f) return vit_fail(err, "%s: %s", path, strerror(errno));
    struct curl_slist *headers;
    CURL *c = handle(s, url, &headers);
    if (!c) return fclose(f), vit_fail(err, "%s: out of memory", url);
    get_state g = {.c = c, .f = f, .offset = offset, .total = total, .s = s, .file = file};
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(c, CURLOPT_MAXREDIRS, 10L);
    curl_easy_setopt(c, CURLOPT_FAILONERROR, 1L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &g);
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, &g);
    if (offset > 0) curl_easy_setopt(c, CURLOPT_RESUME_FROM_LARGE, (curl_off_t)offset);
    const CURLcode rc = curl_easy_perform(c);
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(headers);
    curl_easy_cleanup(c);
    const int closed = fclose(f);
    if (rc == CURLE_HTTP_RETURNED_ERROR)
        return vit_fail(err, "%s: HTTP %ld from %s", file, status, url);
    if (closed != 0) return vit_fail(err, "%s: %s", path, strerror(errno));
    if (rc != CURLE_OK) return vit_fail(err, "%s: %s", file, curl_easy_strerror(rc)), -2;
    return 0;
}

int hub_sha256_file(const char *path, char hex[65], vit_error *err) {
    FILE *f = fopen(path, "rb");
    if (!f) return vit_fail(err, "%s: %s", path, strerror(errno));
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    int ok = ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) == 1;
    static __thread unsigned char buf[1 << 16];
    for (size_t n; ok && (n = fread(buf, 1, sizeof buf, f)) > 0;)
        ok = EVP_DigestUpdate(ctx, buf, n) == 1;
    unsigned char digest[32];
    unsigned int len = 0;
    ok = ok && !ferror(f) && EVP_DigestFinal_ex(ctx, digest, &len) == 1 && len == 32;
    EVP_MD_CTX_free(ctx);
    fclose(f);
    if (!ok) return vit_fail(err, "%s: cannot compute its sha256", path);
    for (int i = 0; i < 32; i++) snprintf(hex + 2 * i, 3, "%02x", digest[i]);
    return 0;
}

#else /* built without libcurl */

#define NO_CURL                                                                                    \
    "this vit is built without libcurl (make deps-optional installs libcurl4-openssl-dev)"

int hub_http_built(void) {
    return 0;
}
int hub_http_head(const hub_session *s, const char *url, hub_meta *m, vit_error *err) {
    (void)s, (void)url;
    memset(m, 0, sizeof *m);
    return vit_fail(err, "%s: nothing is downloaded", NO_CURL);
}
int hub_http_get(const hub_session *s, const char *url, const char *path, int64_t offset,
                 int64_t total, const char *file, vit_error *err) {
    (void)s, (void)url, (void)path, (void)offset, (void)total, (void)file;
    return vit_fail(err, "%s: nothing is downloaded", NO_CURL);
}
int hub_sha256_file(const char *path, char hex[65], vit_error *err) {
    (void)hex;
    return vit_fail(err, "%s: %s: no sha256", path, NO_CURL);
}

#endif
