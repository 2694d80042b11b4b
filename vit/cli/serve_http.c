/* vit serve's transport on libmicrohttpd: it reads each request whole, its route, query, headers,
 * body and, for a multipart form, its parts (http_request, serve_route.h), and hands it to its
 * endpoint's handler; it answers for the handler, refuses what no handler should see (an unknown
 * path, a wrong method, a missing API key, a body over the limit, any request while the models
 * load or the server drains), answers browsers' preflights, adds CORS headers and writes the
 * request log. A handler that submits jobs suspends the connection, and its last job hands the
 * answer back and resumes it, so that libmicrohttpd's one thread (epoll: connections cost no
 * threads, the cores stay the forward pass's) only queues bytes. */
#include "vit/cli/serve.h"

#ifdef VIT_MICROHTTPD

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "vit/base/clock.h"
#include "vit/cli/serve_route.h"

struct serve_http {
    struct MHD_Daemon *daemon;
    int listen_fd; /* ours until quiesce hands it back */
};

/* ---- a request ---- */

typedef struct {
    http_request req; /* first: the handlers' view of it */
    struct MHD_Connection *conn;
    char method[16];  /* as logged */
    char target[224]; /* "/v1/classify?k=3", as logged */
    double started;
    int begun;         /* the transport has seen it */
    int deferred;      /* a request without a body: routed when it is complete (see has_body) */
    int suspended;     /* waiting for its handler's answer */
    serve_auth auth;   /* refused for want of a key (401): why */
    int too_large;     /* the body over max_body_bytes: the rest is discarded */
    http_answer later; /* the handler's answer, from a batcher thread */
    /* what was answered, for the log */
    int status;
    size_t answer_bytes;
} request;

/* The log's view of what a client sent: printable ASCII, cut short (no line of the log can be
 * forged by a request). */
static void printable(char *out, size_t size, const char *in) {
    size_t n = 0;
    const char *p = in;
    for (; *p && n + 4 < size; p++) out[n++] = *p > 0x20 && *p < 0x7f ? *p : '?';
    if (*p) memcpy(out + n, "...", 3), n += 3;
    out[n] = 0;
}

static void answer_free(http_answer *a) {
    if (!a->persistent) free(a->body);
    *a = (http_answer){0};
}

static void request_free(request *r) {
    if (!r) return;
    http_request *q = &r->req;
    if (q->state) serve_endpoints[q->route].free(q);
    for (int i = 0; i < q->num_query; i++) free(q->query[i].key), free(q->query[i].value);
    free(q->query);
    for (int i = 0; i < q->num_parts; i++) {
        free(q->parts[i].name), free(q->parts[i].filename);
        byte_buf_free(&q->parts[i].bytes);
    }
    free(q->parts);
    byte_buf_free(&q->body);
    answer_free(&r->later);
    free(r);
}

void http_suspend(http_request *req) {
    request *r = (request *)req;
    r->suspended = 1;
    MHD_suspend_connection(r->conn);
}

void http_answer_later(http_request *req, http_answer answer) {
    request *r = (request *)req;
    r->later = answer;
    MHD_resume_connection(r->conn); /* the last touch: the HTTP thread may free r now */
}

static const char *header(const request *r, const char *name) {
    return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}

/* ---- answers ---- */

static int cors_on(const serve_app *app) {
    return serve_access_num_origins(app->access) > 0;
}

/* The methods a path takes (OPTIONS too when it answers browsers' preflights). */
static const char *methods(const request *r) {
    const int post = serve_endpoints[r->req.route].post;
    if (cors_on(r->req.app)) return post ? "POST, OPTIONS" : "GET, HEAD, OPTIONS";
    return post ? "POST" : "GET, HEAD";
}

/* Access-Control-Allow-Origin when the request's Origin is allowed; Vary whenever CORS is on (the
 * answer depends on Origin, which caches must know). */
static void add_cors_headers(const request *r, struct MHD_Response *resp) {
    if (!cors_on(r->req.app)) return;
    const char *allowed =
        serve_access_allow_origin(r->req.app->access, header(r, MHD_HTTP_HEADER_ORIGIN));
    if (allowed)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_ACCESS_CONTROL_ALLOW_ORIGIN, allowed);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_VARY, MHD_HTTP_HEADER_ORIGIN);
}

/* Queues resp (size: its body's bytes, for the log) with the headers every answer of its status
 * carries. */
static enum MHD_Result queue(request *r, int status, struct MHD_Response *resp, size_t size) {
    if (status == HTTP_METHOD_NOT_ALLOWED || status == HTTP_NO_CONTENT)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, methods(r));
    if (status == HTTP_UNAVAILABLE) MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, "1");
    if (status == HTTP_UNAUTHORIZED) /* RFC 6750's challenge */
        MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
                                r->auth == SERVE_AUTH_WRONG
                                    ? "Bearer realm=\"vit serve\", error=\"invalid_token\""
                                    : "Bearer realm=\"vit serve\"");
    if (atomic_load(&r->req.app->draining))
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
    add_cors_headers(r, resp);
    r->status = status;
    r->answer_bytes = size;
    const enum MHD_Result rc = MHD_queue_response(r->conn, (unsigned)status, resp);
    MHD_destroy_response(resp);
    return rc;
}

/* Queues a handler's answer (taken; a NULL body: out of memory, the connection is closed). */
static enum MHD_Result answer(request *r, http_answer a) {
    if (!a.body && !a.persistent) return MHD_NO;
    struct MHD_Response *resp = MHD_create_response_from_buffer(
        a.size, a.body, a.persistent ? MHD_RESPMEM_PERSISTENT : MHD_RESPMEM_MUST_FREE);
    if (!resp) return answer_free(&a), MHD_NO;
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
                            a.status < 300 && a.content_type ? a.content_type : "application/json");
    return queue(r, a.status, resp, a.size);
}

static enum MHD_Result answer_error(request *r, int status, serve_error_kind kind, const char *fmt,
                                    ...) __attribute__((format(printf, 4, 5)));
static enum MHD_Result answer_error(request *r, int status, serve_error_kind kind, const char *fmt,
                                    ...) {
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    http_answer a;
    http_error(&r->req, &a, status, kind, "%s", msg);
    return answer(r, a);
}

/* While the models load: /health says so, everything else is refused (503, Retry-After). */
static enum MHD_Result answer_loading(request *r) {
    if (r->req.route != EP_HEALTH)
        return answer_error(r, HTTP_UNAVAILABLE, SERVE_ERR_LOADING,
                            "the model is loading (GET /health answers 200 once it is ready)");
    json_doc d;
    if (serve_doc_open(&d) != 0) return MHD_NO;
    json_key(&d.w, "status");
    json_string(&d.w, "loading");
    return answer(r, http_json_answer(HTTP_UNAVAILABLE, &d));
}

/* A browser's preflight (OPTIONS before a cross-origin request with an Authorization header or a
 * JSON body): 204 with what the path takes and, when the origin is allowed, what it may send. It
 * needs no key (browsers send none with it) and is answered while the models load. */
static enum MHD_Result answer_preflight(request *r) {
    struct MHD_Response *resp = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
    if (!resp) return MHD_NO;
    if (serve_access_allow_origin(r->req.app->access, header(r, MHD_HTTP_HEADER_ORIGIN))) {
        MHD_add_response_header(resp, MHD_HTTP_HEADER_ACCESS_CONTROL_ALLOW_METHODS,
                                serve_endpoints[r->req.route].post ? "POST" : "GET, HEAD");
        MHD_add_response_header(resp, MHD_HTTP_HEADER_ACCESS_CONTROL_ALLOW_HEADERS,
                                "Authorization, Content-Type");
        MHD_add_response_header(resp, MHD_HTTP_HEADER_ACCESS_CONTROL_MAX_AGE,
                                "7200"); /* Chromium's longest */
    }
    return queue(r, HTTP_NO_CONTENT, resp, 0);
}

/* 401 unless the request carries one of the keys (or none is asked for). */
static int refused_key(request *r) {
    r->auth = serve_access_check(r->req.app->access, header(r, MHD_HTTP_HEADER_AUTHORIZATION));
    return r->auth != SERVE_AUTH_OK;
}

static enum MHD_Result refuse_key(request *r) {
    return answer_error(r, HTTP_UNAUTHORIZED, SERVE_ERR_UNAUTHORIZED, "%s",
                        r->auth == SERVE_AUTH_WRONG
                            ? "wrong API key"
                            : "an API key is needed: send the header Authorization: Bearer KEY");
}

/* ---- the first call: route, method, key, query, the handler's checks, the declared size ---- */

static serve_route route(const char *url) {
    for (int e = 0; e < EP_OTHER; e++)
        if (strcmp(url, serve_endpoints[e].path) == 0) return (serve_route)e;
    return EP_OTHER;
}

/* One query parameter, kept in order ("" for a key or value missing). */
static enum MHD_Result query_field(void *cls, enum MHD_ValueKind kind, const char *key,
                                   const char *value) {
    (void)kind;
    http_request *q = cls;
    http_field *grown = realloc(q->query, sizeof *grown * (size_t)(q->num_query + 1));
    if (!grown) return MHD_NO;
    q->query = grown;
    http_field *f = &q->query[q->num_query++];
    f->key = strdup(key ? key : "");
    f->value = strdup(value ? value : "");
    return f->key && f->value ? MHD_YES : MHD_NO;
}

/* A POST: its query for the handler, which may refuse it before the body, then the body's
 * declared size. */
static enum MHD_Result begin_post(request *r) {
    http_request *q = &r->req;
    const int fields = MHD_get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND, NULL, NULL);
    if (MHD_get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND, query_field, q) != fields)
        return MHD_NO; /* out of memory */
    q->content_type = header(r, MHD_HTTP_HEADER_CONTENT_TYPE);
    http_answer now;
    if (serve_endpoints[q->route].begin(q, &now)) return answer(r, now);
    const char *length = header(r, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (length && strtoull(length, NULL, 10) > q->app->max_body_bytes)
        return answer_error(r, HTTP_TOO_LARGE, SERVE_ERR_TOO_LARGE,
                            "body of %s bytes, over the limit of %zu (--max-body-bytes)", length,
                            q->app->max_body_bytes);
    return MHD_YES;
}

static enum MHD_Result begin(request *r, const char *url, const char *method) {
    http_request *q = &r->req;
    const serve_app *app = q->app;
    q->route = route(url);
    if (q->route == EP_OTHER)
        return answer_error(r, HTTP_NOT_FOUND, SERVE_ERR_NOT_FOUND,
                            "no such path (try GET / for the web page, POST /v1/classify, POST "
                            "/v1/embed, POST /v1/text, POST /v1/embeddings, POST /v1/generate, "
                            "POST /v1/explain, GET /health, GET /metrics, GET /v1/model or GET "
                            "/v1/models)");
    const serve_endpoint *e = &serve_endpoints[q->route];
    if (strcmp(method, "OPTIONS") == 0 && cors_on(app)) return answer_preflight(r);
    const int get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
    if (e->post ? strcmp(method, "POST") != 0 : !get)
        return answer_error(r, HTTP_METHOD_NOT_ALLOWED, SERVE_ERR_METHOD, "%s takes %s, not %.20s",
                            e->path, e->post ? "POST" : "GET", method);
    if (atomic_load(&app->draining))
        return answer_error(r, HTTP_UNAVAILABLE, SERVE_ERR_SHUTTING_DOWN, "shutting down");
    if (!e->open && refused_key(r)) return refuse_key(r);
    http_answer now;
    /* the page while loading too: it waits for the model */
    if (q->route == EP_PAGE) return e->handle(q, &now), answer(r, now);
    if (atomic_load(&app->loading)) return answer_loading(r);
    if (!e->post) return e->handle(q, &now), answer(r, now);
    return begin_post(r);
}

/* ---- the body ---- */

/* Keeps a piece of the body, up to the limit; past it the rest is read and dropped (an answer can
 * only be queued once the body is in). Returns MHD_NO to drop a body still coming after the
 * timeout. */
static enum MHD_Result receive(request *r, const char *data, size_t size) {
    const serve_app *app = r->req.app;
    byte_buf *body = &r->req.body;
    if (clock_seconds() - r->started > app->timeout_s) return MHD_NO;
    if (r->too_large || size > app->max_body_bytes - body->size) {
        r->too_large = 1;
        byte_buf_free(body);
        return MHD_YES;
    }
    return byte_buf_append(body, data, size, app->max_body_bytes) == 0 ? MHD_YES : MHD_NO;
}

/* One piece of a form's part. libmicrohttpd calls at least once per part, first at offset 0 (an
 * empty part: once, with size 0). Given the whole body at once it has a part's first bytes in that
 * first call unless the body ends before the part does (a truncated form, refused), so offset 0
 * is a new part. A part without a name ends the form there (the handler refuses it). */
static enum MHD_Result form_part(void *cls, enum MHD_ValueKind kind, const char *key,
                                 const char *filename, const char *type, const char *encoding,
                                 const char *data, uint64_t off, size_t size) {
    (void)kind, (void)type, (void)encoding;
    http_request *q = cls;
    if (!key || off == 0 || q->num_parts == 0) {
        http_part *grown = realloc(q->parts, sizeof *grown * (size_t)(q->num_parts + 1));
        if (!grown) return MHD_NO;
        q->parts = grown;
        http_part *p = &q->parts[q->num_parts++];
        *p = (http_part){.name = key ? strdup(key) : NULL,
                         .filename = filename ? strdup(filename) : NULL};
        if (!key) return MHD_NO;
        if (!p->name || (filename && !p->filename)) return MHD_NO;
    }
    http_part *last = &q->parts[q->num_parts - 1];
    return byte_buf_append(&last->bytes, data, size, SIZE_MAX) == 0 ? MHD_YES : MHD_NO;
}

/* A multipart/form-data body into parts; why it could not be read whole into form_error. */
static void read_form(request *r) {
    http_request *q = &r->req;
    q->form = 1;
    struct MHD_PostProcessor *pp = MHD_create_post_processor(r->conn, 64 << 10, form_part, q);
    if (!pp) {
        snprintf(q->form_error, sizeof q->form_error,
                 "a multipart/form-data body needs a boundary in its Content-Type");
        return;
    }
    const enum MHD_Result rc = MHD_post_process(pp, q->body.data, q->body.size);
    const enum MHD_Result complete = MHD_destroy_post_processor(pp);
    if (rc != MHD_YES || complete != MHD_YES)
        snprintf(q->form_error, sizeof q->form_error, "malformed or truncated multipart form");
}

/* The body is in: the request, whole, to its handler, which answers now or later (after
 * suspending the connection: an answer now is then queued before it resumes). */
static enum MHD_Result complete(request *r) {
    http_request *q = &r->req;
    if (r->too_large)
        return answer_error(r, HTTP_TOO_LARGE, SERVE_ERR_TOO_LARGE,
                            "body of more than %zu bytes (--max-body-bytes)",
                            q->app->max_body_bytes);
    if (q->content_type && strncasecmp(q->content_type, "multipart/form-data", 19) == 0)
        read_form(r);
    http_answer now;
    if (serve_endpoints[q->route].handle(q, &now)) return MHD_YES;
    const enum MHD_Result queued = answer(r, now);
    if (r->suspended) MHD_resume_connection(r->conn);
    return queued;
}

/* ---- libmicrohttpd's callbacks ---- */

/* libmicrohttpd closes the connection after an answer queued before the body (it will not read
 * the body): right for refusing a body, wasteful for a request that has none. */
static int has_body(struct MHD_Connection *conn) {
    const char *length =
        MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    return MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING) ||
           (length && strtoull(length, NULL, 10) > 0);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **req_cls) {
    (void)cls, (void)version;
    request *r = *req_cls;
    if (!r) return MHD_NO; /* out of memory when it began */
    r->conn = conn;
    if (!r->begun) {
        r->begun = 1;
        printable(r->method, sizeof r->method, method);
        if (has_body(conn)) return begin(r, url, method);
        r->deferred = 1;
        return MHD_YES;
    }
    if (*upload_size > 0) {
        const enum MHD_Result rc = receive(r, upload, *upload_size);
        *upload_size = 0;
        return rc;
    }
    if (r->deferred) {
        r->deferred = 0;
        const enum MHD_Result rc = begin(r, url, method);
        if (rc != MHD_YES || r->status) return rc;
    }
    if (!r->suspended) return complete(r);
    const http_answer later = r->later; /* resumed: the handler's answer is in */
    r->later = (http_answer){0};
    return answer(r, later);
}

/* A request line has arrived: its state begins here (so that it is logged however it ends). */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *conn) {
    serve_app *app = cls;
    request *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    r->req.app = app;
    r->req.route = EP_OTHER;
    r->req.method = r->method;
    r->conn = conn;
    r->started = clock_seconds();
    printable(r->target, sizeof r->target, uri);
    atomic_fetch_add(&app->in_flight, 1);
    return r;
}

static void client_address(struct MHD_Connection *conn, char *buf, size_t size) {
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    snprintf(buf, size, "-");
    if (!info || !info->client_addr) return;
    const struct sockaddr *sa = info->client_addr;
    if (sa->sa_family == AF_INET)
        inet_ntop(AF_INET, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, buf,
                  (socklen_t)size);
    else if (sa->sa_family == AF_INET6)
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, buf,
                  (socklen_t)size);
}

/* One line per request: when, who, what, the status (or why there was none), size, time, inputs. */
static void log_request(const request *r, enum MHD_RequestTerminationCode toe, double seconds) {
    char when[40], who[64], status[32], inputs[48] = "";
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    struct tm tm;
    gmtime_r(&now.tv_sec, &tm);
    const size_t n = strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(when + n, sizeof when - n, ".%03ldZ", now.tv_nsec / 1000000);
    client_address(r->conn, who, sizeof who);
    if (r->status)
        snprintf(status, sizeof status, "%d", r->status);
    else
        snprintf(status, sizeof status, "%s",
                 toe == MHD_REQUEST_TERMINATED_TIMEOUT_REACHED ? "timeout" : "closed");
    int at = 0;
    const int images = r->req.images, texts = r->req.texts;
    if (images) at = snprintf(inputs, sizeof inputs, " %d image%s", images, images > 1 ? "s" : "");
    if (texts)
        snprintf(inputs + at, sizeof inputs - (size_t)at, "%s %d text%s", at ? "," : "", texts,
                 texts > 1 ? "s" : "");
    char bytes[32] = "-";
    if (r->answer_bytes != (size_t)-1) snprintf(bytes, sizeof bytes, "%zu", r->answer_bytes);
    fprintf(stderr, "%s %s %s %s %s %s B %.1f ms%s\n", when, who, r->method[0] ? r->method : "-",
            r->target, status, bytes, seconds * 1e3, inputs);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **req_cls,
                         enum MHD_RequestTerminationCode toe) {
    serve_app *app = cls;
    request *r = *req_cls;
    *req_cls = NULL;
    if (!r) return;
    r->conn = conn;
    const double seconds = clock_seconds() - r->started;
    const union MHD_ConnectionInfo *answered =
        r->status ? NULL : MHD_get_connection_info(conn, MHD_CONNECTION_INFO_HTTP_STATUS);
    if (answered) { /* libmicrohttpd's own answer to a request it could not parse */
        r->status = (int)answered->http_status;
        r->answer_bytes = (size_t)-1; /* not known */
        serve_metrics_error(app->metrics, SERVE_ERR_BAD_REQUEST);
    }
    if (r->status)
        serve_metrics_request(app->metrics, serve_endpoints[r->req.route].path, r->status, seconds);
    if (!app->quiet) log_request(r, toe, seconds);
    request_free(r);
    atomic_fetch_sub(&app->in_flight, 1);
}

static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode what) {
    (void)conn, (void)socket_context;
    serve_app *app = cls;
    atomic_fetch_add(&app->connections, what == MHD_CONNECTION_NOTIFY_STARTED ? 1 : -1);
}

/* libmicrohttpd's own messages, less those about a client's bad request (its log line has the
 * status libmicrohttpd answered with). */
static void on_mhd_log(void *cls, const char *fmt, va_list ap) {
    static const char *const clients_fault[] = {"Error processing request",
                                                "Connection was closed by remote side",
                                                "Not enough memory in pool"};
    const serve_app *app = cls;
    if (app->quiet) return;
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    for (size_t i = 0; i < sizeof clients_fault / sizeof clients_fault[0]; i++)
        if (strncmp(msg, clients_fault[i], strlen(clients_fault[i])) == 0) return;
    const size_t n = strlen(msg);
    fprintf(stderr, "vit serve: libmicrohttpd: %s%s", msg, n && msg[n - 1] == '\n' ? "" : "\n");
}

/* ---- the listening socket ---- */

static void describe_address(const struct sockaddr *sa, char *buf, size_t size) {
    char host[INET6_ADDRSTRLEN] = "?";
    int port = 0;
    if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const void *)sa;
        inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
        port = ntohs(a->sin6_port);
        snprintf(buf, size, "[%s]:%d", host, port);
    } else {
        const struct sockaddr_in *a = (const void *)sa;
        inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
        port = ntohs(a->sin_port);
        snprintf(buf, size, "%s:%d", host, port);
    }
}

static int try_listen(const struct addrinfo *ai, vit_error *err) {
    const int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) return vit_fail(err, "cannot open a socket: %s", strerror(errno));
    const int on = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, 128) == 0) return fd;
    const int e = errno;
    close(fd);
    char where[96];
    describe_address(ai->ai_addr, where, sizeof where);
    return vit_fail(err, "cannot listen on %s: %s", where, strerror(e));
}

/* The first address of host:port that can be bound; its description into bound. */
static int open_listener(const serve_app *app, int *family, char *bound, size_t size,
                         vit_error *err) {
    char port[16];
    snprintf(port, sizeof port, "%d", app->port);
    const struct addrinfo hints = {.ai_family = AF_UNSPEC,
                                   .ai_socktype = SOCK_STREAM,
                                   .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    struct addrinfo *list = NULL;
    const int gai = getaddrinfo(app->host, port, &hints, &list);
    if (gai != 0) return vit_fail(err, "cannot listen on %s: %s", app->host, gai_strerror(gai));
    int fd = -1;
    for (const struct addrinfo *ai = list; ai && fd < 0; ai = ai->ai_next)
        if ((fd = try_listen(ai, err)) >= 0) *family = ai->ai_family;
    freeaddrinfo(list);
    if (fd < 0) return -1;
    struct sockaddr_storage addr;
    socklen_t len = sizeof addr;
    getsockname(fd, (struct sockaddr *)&addr, &len);
    describe_address((const struct sockaddr *)&addr, bound, size);
    return fd;
}

serve_http *serve_http_start(serve_app *app, char *bound, size_t size, vit_error *err) {
    serve_http *h = calloc(1, sizeof *h);
    if (!h) return vit_fail(err, "out of memory"), NULL;
    int family = AF_INET;
    if ((h->listen_fd = open_listener(app, &family, bound, size, err)) < 0) {
        free(h);
        return NULL;
    }
    const unsigned flags = MHD_USE_AUTO_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME |
                           MHD_USE_ERROR_LOG | (family == AF_INET6 ? MHD_USE_IPv6 : 0);
    h->daemon = MHD_start_daemon(
        flags, 0, NULL, NULL, on_request, app, MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, app,
        MHD_OPTION_LISTEN_SOCKET, h->listen_fd, MHD_OPTION_CONNECTION_LIMIT,
        (unsigned)app->max_connections, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)app->timeout_s,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, app, MHD_OPTION_NOTIFY_CONNECTION, on_connection,
        app, MHD_OPTION_URI_LOG_CALLBACK, on_uri, app, MHD_OPTION_END);
    if (!h->daemon) {
        vit_fail(err, "cannot start the HTTP server on %s", bound);
        close(h->listen_fd);
        free(h);
        return NULL;
    }
    return h;
}

void serve_http_quiesce(serve_http *h) {
    if (h->listen_fd < 0) return;
    const MHD_socket fd = MHD_quiesce_daemon(h->daemon);
    if (fd != MHD_INVALID_SOCKET) close(fd);
    h->listen_fd = -1;
}

void serve_http_stop(serve_http *h) {
    if (!h) return;
    MHD_stop_daemon(h->daemon);
    if (h->listen_fd >= 0) close(h->listen_fd);
    free(h);
}

#else /* no libmicrohttpd: serve.c says so and never calls these */

serve_http *serve_http_start(serve_app *app, char *bound, size_t size, vit_error *err) {
    (void)app, (void)bound, (void)size;
    return vit_fail(err, "built without libmicrohttpd"), NULL;
}
void serve_http_quiesce(serve_http *h) {
    (void)h;
}
void serve_http_stop(serve_http *h) {
    (void)h;
}

#endif
