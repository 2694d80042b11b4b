/* vit serve's HTTP layer on libmicrohttpd: routes, request bodies and forms, answers and the
 * request log. The work itself is the batcher's (vit/serve): a request's images or texts become
 * jobs, its connection is suspended while they wait for their batch, each job's answer is written
 * by the batcher thread that finishes it, and the last one assembles the whole answer and resumes
 * the connection, so that libmicrohttpd's thread only queues its bytes. That one thread handles
 * every connection (epoll): connections cost no threads and the cores stay the forward pass's, as
 * long as nothing on it grows with a request's inputs or k. */
#include "vit/cli/serve.h"

#ifdef VIT_MICROHTTPD

#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
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

#include <cjson/cJSON.h>
#include <microhttpd.h>

#include "vit/base/bytes.h"
#include "vit/base/clock.h"
#include "vit/cli/cli.h"

/* The status codes vit serve answers with. */
enum {
    HTTP_OK = 200,
    HTTP_BAD_REQUEST = 400,
    HTTP_NOT_FOUND = 404,
    HTTP_METHOD_NOT_ALLOWED = 405,
    HTTP_TOO_LARGE = 413,
    HTTP_INTERNAL_ERROR = 500,
    HTTP_UNAVAILABLE = 503
};

struct serve_http {
    struct MHD_Daemon *daemon;
    int listen_fd; /* ours until quiesce hands it back */
};

/* ---- routes ---- */

typedef enum { EP_HEALTH, EP_METRICS, EP_MODEL, EP_CLASSIFY, EP_EMBED, EP_TEXT, EP_OTHER } endpoint;

static const struct {
    const char *path;
    int post;           /* POST only; else GET and HEAD */
    const char *params; /* the query parameters it takes */
} routes[] = {
    [EP_HEALTH] = {"/health", 0, ""},
    [EP_METRICS] = {"/metrics", 0, ""},
    [EP_MODEL] = {"/v1/model", 0, ""},
    [EP_CLASSIFY] = {"/v1/classify", 1, "k, threshold, logits"},
    [EP_EMBED] = {"/v1/embed", 1, "pool"},
    [EP_TEXT] = {"/v1/text", 1, "k, threshold, logits"},
    [EP_OTHER] = {"other", 0, ""},
};

static endpoint route(const char *url) {
    for (int e = 0; e < EP_OTHER; e++)
        if (strcmp(url, routes[e].path) == 0) return (endpoint)e;
    return EP_OTHER;
}

/* ---- a request ---- */

/* A JSON document in memory (malloc'ed). */
typedef struct {
    char *text;
    size_t size;
} json_text;

typedef struct {
    char *name;     /* the form part's file name, or NULL */
    byte_buf bytes; /* a form part's own copy, or a view (cap 0) of the body or of a JSON text */
} input;

typedef struct {
    serve_app *app;
    struct MHD_Connection *conn;
    char method[16];  /* as logged */
    char target[224]; /* "/v1/classify?k=3", as logged */
    double started;
    int begun;    /* the handler has seen it */
    int deferred; /* a request without a body: routed when it is complete (see has_body) */
    int submitted;
    endpoint ep;
    /* the body, until it is all there */
    byte_buf body;
    int too_large; /* over max_body_bytes: the rest is discarded */
    /* what it asks */
    int k, logits;
    double threshold;
    serve_task task;
    input *inputs;
    int num_inputs, multipart;
    int too_many; /* more inputs than the queue holds */
    cJSON *json;  /* a text request */
    char form_error[160];
    /* its jobs */
    serve_job *jobs;
    float *outputs;
    size_t width;
    atomic_int remaining;
    /* its answer: each input's object, then the whole, written on batcher threads */
    json_text *results;
    json_text prepared;
    int prepared_status;
    /* what was answered, for the log */
    int status, images, texts;
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

static void request_free(request *r) {
    if (!r) return;
    for (int i = 0; i < r->num_inputs; i++) {
        free(r->inputs[i].name);
        if (r->multipart) byte_buf_free(&r->inputs[i].bytes);
    }
    free(r->inputs);
    byte_buf_free(&r->body);
    cJSON_Delete(r->json);
    for (int i = 0; r->results && i < r->num_inputs; i++) free(r->results[i].text);
    free(r->results);
    free(r->prepared.text);
    free(r->jobs);
    free(r->outputs);
    free(r);
}

/* ---- answers ---- */

static const char *content_type(endpoint ep) {
    return ep == EP_METRICS ? "text/plain; version=0.0.4; charset=utf-8" : "application/json";
}

/* Queues body (malloc'ed, taken over) as the answer. */
static enum MHD_Result answer(request *r, int status, char *body, size_t size) {
    struct MHD_Response *resp = MHD_create_response_from_buffer(size, body, MHD_RESPMEM_MUST_FREE);
    if (!resp) return free(body), MHD_NO;
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
                            status < 300 ? content_type(r->ep) : "application/json");
    if (status == HTTP_METHOD_NOT_ALLOWED)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW,
                                routes[r->ep].post ? "POST" : "GET, HEAD");
    if (status == HTTP_UNAVAILABLE) MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, "1");
    if (atomic_load(&r->app->draining))
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
    r->status = status;
    r->answer_bytes = size;
    const enum MHD_Result rc = MHD_queue_response(r->conn, (unsigned)status, resp);
    MHD_destroy_response(resp);
    return rc;
}

/* A JSON document written by fill into a fresh buffer. */
typedef struct {
    char *text;
    size_t size;
    FILE *out;
    json_writer w;
} json_doc;

static int doc_begin(json_doc *d) {
    d->text = NULL;
    d->size = 0;
    d->out = open_memstream(&d->text, &d->size);
    if (!d->out) return -1;
    d->w = json_begin(d->out);
    return 0;
}

/* A document that is one object (its keys to come). */
static int doc_open(json_doc *d) {
    if (doc_begin(d) != 0) return -1;
    json_object(&d->w);
    return 0;
}

/* The document written, or {NULL, 0} when memory ran out (ok 0: discarded). */
static json_text doc_close(json_doc *d, int ok) {
    if (fclose(d->out) != 0 || !ok) {
        free(d->text);
        return (json_text){NULL, 0};
    }
    return (json_text){d->text, d->size};
}

static enum MHD_Result doc_answer(request *r, int status, json_doc *d) {
    json_end(&d->w);
    json_line(&d->w);
    fclose(d->out);
    return answer(r, status, d->text, d->size);
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
    serve_metrics_error(r->app->metrics, kind);
    json_doc d;
    if (doc_open(&d) != 0) return MHD_NO;
    json_key(&d.w, "error");
    json_string(&d.w, msg);
    return doc_answer(r, status, &d);
}

/* ---- GET endpoints ---- */

static enum MHD_Result answer_health(request *r) {
    json_doc d;
    if (doc_open(&d) != 0) return MHD_NO;
    json_key(&d.w, "status");
    json_string(&d.w, "ok");
    json_key(&d.w, "queued");
    json_int(&d.w, serve_batcher_pending(r->app->batcher));
    return doc_answer(r, HTTP_OK, &d);
}

static enum MHD_Result answer_metrics(request *r) {
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    if (!out) return MHD_NO;
    const serve_gauges g = {.queued = serve_batcher_pending(r->app->batcher),
                            .in_flight = atomic_load(&r->app->in_flight),
                            .connections = atomic_load(&r->app->connections),
                            .started = r->app->started};
    serve_metrics_write(r->app->metrics, &g, out);
    fclose(out);
    return answer(r, HTTP_OK, text, size);
}

static enum MHD_Result answer_model(request *r) {
    const char *json = r->app->model_json;
    char *copy = strdup(json);
    return copy ? answer(r, HTTP_OK, copy, strlen(copy)) : MHD_NO;
}

/* ---- the query ---- */

static int parse_int(const char *s, int lo, int hi, int *out) {
    char *end;
    errno = 0;
    const long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) return -1;
    *out = (int)v;
    return 0;
}

static int parse_number(const char *s, double lo, double hi, double *out) {
    char *end;
    const double v = strtod(s, &end);
    if (end == s || *end || !(v >= lo && v <= hi)) return -1;
    *out = v;
    return 0;
}

static int parse_flag(const char *s, int *out) {
    static const char *yes[] = {"1", "true", "yes", ""}, *no[] = {"0", "false", "no"};
    for (int i = 0; i < 4; i++)
        if (strcasecmp(s, yes[i]) == 0) return *out = 1, 0;
    for (int i = 0; i < 3; i++)
        if (strcasecmp(s, no[i]) == 0) return *out = 0, 0;
    return -1;
}

/* One query parameter into r; a wrong one leaves its reason in r->form_error. */
static enum MHD_Result query_param(void *cls, enum MHD_ValueKind kind, const char *key,
                                   const char *value) {
    (void)kind;
    request *r = cls;
    const char *v = value ? value : "";
    if (!key) key = "";
    int bad;
    if (strcmp(key, "k") == 0 && r->ep != EP_EMBED)
        bad = parse_int(v, 1, 1 << 20, &r->k);
    else if (strcmp(key, "threshold") == 0 && r->ep != EP_EMBED)
        bad = parse_number(v, 0.0, 1.0, &r->threshold);
    else if (strcmp(key, "logits") == 0 && r->ep != EP_EMBED)
        bad = parse_flag(v, &r->logits);
    else if (strcmp(key, "pool") == 0 && r->ep == EP_EMBED) {
        bad = strcmp(v, "cls") != 0 && strcmp(v, "mean") != 0;
        r->task = strcmp(v, "mean") == 0 ? SERVE_EMBED_MEAN : SERVE_EMBED_CLS;
    } else {
        snprintf(r->form_error, sizeof r->form_error,
                 "unknown query parameter '%.40s' (%s takes %s)", key, routes[r->ep].path,
                 routes[r->ep].params);
        return MHD_NO;
    }
    if (bad)
        snprintf(r->form_error, sizeof r->form_error, "invalid %s '%.40s' (%s)", key, v,
                 strcmp(key, "k") == 0           ? "an integer of 1 or more"
                 : strcmp(key, "threshold") == 0 ? "a probability, 0 to 1"
                 : strcmp(key, "pool") == 0      ? "cls or mean"
                                                 : "1 or 0");
    return bad ? MHD_NO : MHD_YES;
}

/* ---- the first call: route, method, query, declared size ---- */

static int model_missing(const request *r) {
    return r->ep == EP_TEXT ? !r->app->text : !r->app->image;
}

static enum MHD_Result begin_post(request *r) {
    if (model_missing(r))
        return answer_error(r, HTTP_NOT_FOUND, SERVE_ERR_NOT_FOUND,
                            "%s: no %s model is served (start vit serve with %s)",
                            routes[r->ep].path, r->ep == EP_TEXT ? "text" : "image",
                            r->ep == EP_TEXT ? "--text-model DIR" : "-m DIR");
    r->k = 5;
    r->task = r->ep == EP_TEXT ? SERVE_TEXT : r->ep == EP_EMBED ? SERVE_EMBED_CLS : SERVE_CLASSIFY;
    MHD_get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND, query_param, r);
    if (r->form_error[0])
        return answer_error(r, HTTP_BAD_REQUEST, SERVE_ERR_BAD_REQUEST, "%s", r->form_error);
    const char *length =
        MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (length && strtoull(length, NULL, 10) > r->app->max_body_bytes)
        return answer_error(r, HTTP_TOO_LARGE, SERVE_ERR_TOO_LARGE,
                            "body of %s bytes, over the limit of %zu (--max-body-bytes)", length,
                            r->app->max_body_bytes);
    return MHD_YES;
}

static enum MHD_Result begin(request *r, const char *url, const char *method) {
    r->ep = route(url);
    if (r->ep == EP_OTHER)
        return answer_error(r, HTTP_NOT_FOUND, SERVE_ERR_NOT_FOUND,
                            "no such path (try POST /v1/classify, POST /v1/embed, POST /v1/text, "
                            "GET /health, GET /metrics or GET /v1/model)");
    const int get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
    if (routes[r->ep].post ? strcmp(method, "POST") != 0 : !get)
        return answer_error(r, HTTP_METHOD_NOT_ALLOWED, SERVE_ERR_METHOD, "%s takes %s, not %.20s",
                            routes[r->ep].path, routes[r->ep].post ? "POST" : "GET", method);
    if (atomic_load(&r->app->draining))
        return answer_error(r, HTTP_UNAVAILABLE, SERVE_ERR_SHUTTING_DOWN, "shutting down");
    switch (r->ep) {
    case EP_HEALTH:
        return answer_health(r);
    case EP_METRICS:
        return answer_metrics(r);
    case EP_MODEL:
        return answer_model(r);
    default:
        return begin_post(r);
    }
}

/* ---- the body ---- */

/* Keeps a piece of the body, up to the limit; past it the rest is read and dropped (an answer can
 * only be queued once the body is in). Returns MHD_NO to drop a body still coming after the
 * timeout. */
static enum MHD_Result receive(request *r, const char *data, size_t size) {
    const serve_app *app = r->app;
    if (clock_seconds() - r->started > app->timeout_s) return MHD_NO;
    if (r->too_large || size > app->max_body_bytes - r->body.size) {
        r->too_large = 1;
        byte_buf_free(&r->body);
        return MHD_YES;
    }
    return byte_buf_append(&r->body, data, size, app->max_body_bytes) == 0 ? MHD_YES : MHD_NO;
}

/* ---- inputs: a raw body, a multipart form, a JSON list of texts ---- */

static int add_input(request *r, const char *name) {
    if (r->num_inputs >= r->app->max_inputs) {
        r->too_many = 1;
        snprintf(r->form_error, sizeof r->form_error,
                 "more than %d %s in one request (the queue's size, --max-queue)",
                 r->app->max_inputs, r->ep == EP_TEXT ? "texts" : "images");
        return -1;
    }
    input *grown = realloc(r->inputs, sizeof *grown * (size_t)(r->num_inputs + 1));
    if (!grown) return -1;
    r->inputs = grown;
    r->inputs[r->num_inputs++] = (input){.name = name ? strdup(name) : NULL};
    return name && !r->inputs[r->num_inputs - 1].name ? -1 : 0;
}

/* The form's "image" parts, each an input; any other field is an error. */
static enum MHD_Result form_part(void *cls, enum MHD_ValueKind kind, const char *key,
                                 const char *filename, const char *type, const char *encoding,
                                 const char *data, uint64_t off, size_t size) {
    (void)kind, (void)type, (void)encoding;
    request *r = cls;
    if (!key) { /* a part whose Content-Disposition has no name */
        snprintf(r->form_error, sizeof r->form_error,
                 "a form part without a name (send each image as a part named \"image\")");
        return MHD_NO;
    }
    if (strcmp(key, "image") != 0) {
        snprintf(r->form_error, sizeof r->form_error,
                 "unexpected form field '%.40s' (send each image as a part named \"image\")", key);
        return MHD_NO;
    }
    /* libmicrohttpd calls at least once per part, first at offset 0 (an empty part: once, with
     * size 0). Given the whole body at once it has a part's first bytes in that first call unless
     * the body ends before the part does (a truncated form, refused), so offset 0 is a new part. */
    if ((off == 0 || r->num_inputs == 0) && add_input(r, filename) != 0) return MHD_NO;
    input *last = &r->inputs[r->num_inputs - 1];
    return byte_buf_append(&last->bytes, data, size, SIZE_MAX) == 0 ? MHD_YES : MHD_NO;
}

static int parse_form(request *r) {
    r->multipart = 1;
    struct MHD_PostProcessor *pp = MHD_create_post_processor(r->conn, 64 << 10, form_part, r);
    if (!pp) {
        snprintf(r->form_error, sizeof r->form_error,
                 "a multipart/form-data body needs a boundary in its Content-Type");
        return -1;
    }
    const enum MHD_Result rc = MHD_post_process(pp, r->body.data, r->body.size);
    const enum MHD_Result complete = MHD_destroy_post_processor(pp);
    if (!r->form_error[0] && (rc != MHD_YES || complete != MHD_YES))
        snprintf(r->form_error, sizeof r->form_error, "malformed or truncated multipart form");
    if (!r->form_error[0] && r->num_inputs == 0)
        snprintf(r->form_error, sizeof r->form_error, "the form has no \"image\" part");
    return r->form_error[0] ? -1 : 0;
}

static int is_form(const request *r) {
    const char *type =
        MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
    return type && strncasecmp(type, "multipart/form-data", 19) == 0;
}

static int parse_images(request *r) {
    if (is_form(r)) return parse_form(r);
    if (r->body.size == 0) {
        snprintf(r->form_error, sizeof r->form_error,
                 "empty body: send an image's bytes, or a multipart/form-data form of \"image\" "
                 "parts");
        return -1;
    }
    if (add_input(r, NULL) != 0) return -1;
    r->inputs[0].bytes = (byte_buf){r->body.data, r->body.size, 0}; /* owned by the body */
    return 0;
}

/* {"texts": ["...", ...]}: each text an input (its bytes stay in r->json). */
static int parse_texts(request *r) {
    r->json = cJSON_ParseWithLength(r->body.data ? r->body.data : "", r->body.size);
    const cJSON *texts = cJSON_GetObjectItemCaseSensitive(r->json, "texts");
    const char *why = !r->json                         ? "the body is not valid JSON"
                      : !cJSON_IsObject(r->json)       ? "the body is not a JSON object"
                      : !cJSON_IsArray(texts)          ? "no \"texts\" array in the body"
                      : cJSON_GetArraySize(texts) == 0 ? "\"texts\" is empty"
                                                       : NULL;
    if (why) return snprintf(r->form_error, sizeof r->form_error, "%s", why), -1;
    const cJSON *t;
    cJSON_ArrayForEach(t, texts) {
        if (!cJSON_IsString(t)) {
            snprintf(r->form_error, sizeof r->form_error, "\"texts\" holds a non-string");
            return -1;
        }
        if (add_input(r, NULL) != 0) return -1;
        r->inputs[r->num_inputs - 1].bytes =
            (byte_buf){t->valuestring, strlen(t->valuestring), 0}; /* owned by r->json */
    }
    return 0;
}

/* ---- the answer of jobs done, written on the batcher's threads ---- */

static int job_status(const serve_job *job, serve_error_kind *kind) {
    switch (job->status) {
    case SERVE_OK:
        return HTTP_OK;
    case SERVE_BAD_INPUT:
        return *kind = SERVE_ERR_BAD_INPUT, HTTP_BAD_REQUEST;
    case SERVE_EXPIRED:
        return *kind = SERVE_ERR_TIMEOUT, HTTP_UNAVAILABLE;
    default:
        return *kind = SERVE_ERR_INTERNAL, HTTP_INTERNAL_ERROR;
    }
}

static void write_floats(json_writer *w, const char *key, const float *x, size_t n) {
    json_key(w, key);
    json_array(w);
    for (size_t i = 0; i < n; i++) json_float(w, x[i]);
    json_end(w);
}

/* "top" (and "logits") of one answer: as `vit classify --json` and `vit text --json` print.
 * -1: out of memory. */
static int write_top(json_writer *w, const request *r, const float *logits) {
    const int L = (int)r->width, k = r->k < L ? r->k : L;
    float *probs = malloc(sizeof(float) * (size_t)L);
    vit_prediction *top = malloc(sizeof *top * (size_t)k);
    int n = -1, shown = 0;
    if (probs && top) {
        memcpy(probs, logits, sizeof(float) * (size_t)L);
        vit_softmax(probs, L);
        n = r->task == SERVE_TEXT ? vit_text_top_k(r->app->text, probs, k, top, NULL)
                                  : vit_top_k(r->app->image, probs, k, top, NULL);
    }
    while (shown < n && top[shown].prob >= r->threshold) shown++;
    if (n >= 0) {
        cli_json_top(w, top, shown);
        if (r->logits) write_floats(w, "logits", logits, (size_t)L);
    }
    free(probs);
    free(top);
    return n < 0 ? -1 : 0;
}

static int write_result(json_writer *w, const request *r, int i) {
    const serve_job *job = &r->jobs[i];
    if (r->ep == EP_TEXT) {
        json_key(w, "text");
        json_value_string(w, r->inputs[i].bytes.data, r->inputs[i].bytes.size);
    } else if (r->inputs[i].name) {
        json_key(w, "file");
        json_string(w, r->inputs[i].name);
    }
    if (job->status != SERVE_OK) {
        json_key(w, "error");
        json_string(w, job->err.msg);
    } else if (r->ep == EP_EMBED) {
        write_floats(w, "embedding", job->out, r->width);
    } else {
        return write_top(w, r, job->out);
    }
    return 0;
}

/* Input i's answer object into r->results[i] ({NULL, 0} when memory ran out). */
static void format_result(request *r, int i) {
    json_doc d;
    if (doc_open(&d) != 0) return;
    const int rc = write_result(&d.w, r, i);
    json_end(&d.w);
    r->results[i] = doc_close(&d, rc == 0);
}

/* {"results": [...]} in input order, an error object for each input that failed, and the first
 * error when no input succeeded. */
static void write_results(json_writer *w, const request *r, int status) {
    json_object(w);
    if (status != HTTP_OK) {
        int first = 0;
        while (r->jobs[first].status == SERVE_OK) first++;
        json_key(w, "error");
        json_string(w, r->jobs[first].err.msg);
    }
    json_key(w, "results");
    json_array(w);
    for (int i = 0; i < r->num_inputs; i++) json_raw(w, r->results[i].text, r->results[i].size);
    json_end(w);
    json_end(w);
}

/* One raw image: its answer alone. A form or a list of texts: the list of results. */
static json_text join_results(const request *r, int status) {
    for (int i = 0; i < r->num_inputs; i++)
        if (!r->results[i].text) return (json_text){NULL, 0}; /* out of memory */
    json_doc d;
    if (doc_begin(&d) != 0) return (json_text){NULL, 0};
    if (!r->multipart && r->ep != EP_TEXT)
        json_raw(&d.w, r->results[0].text, r->results[0].size);
    else
        write_results(&d.w, r, status);
    json_line(&d.w);
    return doc_close(&d, 1);
}

/* After the last job: the status (the request fails only when every input did), the metrics and
 * the answer's bytes. */
static void prepare_answer(request *r) {
    int status = 0, ok = 0;
    serve_error_kind kind = SERVE_ERR_INTERNAL;
    for (int i = 0; i < r->num_inputs; i++) {
        const int s = job_status(&r->jobs[i], &kind);
        ok += s == HTTP_OK;
        if (!status || (status != HTTP_OK && s == HTTP_OK)) status = s;
    }
    *(r->ep == EP_TEXT ? &r->texts : &r->images) = ok;
    serve_metrics_inputs(r->app->metrics, r->ep == EP_TEXT ? "text" : "image", ok);
    if (status != HTTP_OK) serve_metrics_error(r->app->metrics, kind);
    r->prepared_status = status;
    r->prepared = join_results(r, status);
}

/* ---- jobs ---- */

/* On a batcher thread: the job's answer is written here; the last of the request's jobs writes
 * the whole and hands the connection back to the HTTP thread (which may free the request at once:
 * nothing of it is touched after the resume). */
static void job_done(serve_job *job) {
    request *r = job->user;
    if (job->status != SERVE_BAD_INPUT) /* it waited for a batch */
        serve_metrics_queue_wait(r->app->metrics, job->wait_seconds);
    format_result(r, (int)(job - r->jobs));
    if (atomic_fetch_sub(&r->remaining, 1) != 1) return;
    prepare_answer(r);
    MHD_resume_connection(r->conn);
}

static int make_jobs(request *r) {
    r->width = serve_task_outputs(r->app->tasks, r->task);
    r->jobs = calloc((size_t)r->num_inputs, sizeof *r->jobs);
    r->results = calloc((size_t)r->num_inputs, sizeof *r->results);
    r->outputs = malloc(sizeof(float) * r->width * (size_t)r->num_inputs);
    if (!r->jobs || !r->results || !r->outputs) return -1;
    for (int i = 0; i < r->num_inputs; i++)
        r->jobs[i] = (serve_job){.task = r->task,
                                 .data = r->inputs[i].bytes.data,
                                 .size = r->inputs[i].bytes.size,
                                 .out = r->outputs + r->width * (size_t)i,
                                 .done = job_done,
                                 .user = r};
    atomic_store(&r->remaining, r->num_inputs);
    return 0;
}

static enum MHD_Result refuse(request *r, serve_submit_result why) {
    if (why == SERVE_CLOSED)
        return answer_error(r, HTTP_UNAVAILABLE, SERVE_ERR_SHUTTING_DOWN, "shutting down");
    if (why == SERVE_TOO_MANY)
        return answer_error(r, HTTP_TOO_LARGE, SERVE_ERR_TOO_LARGE,
                            "%d inputs in one request, more than the queue holds (%d)",
                            r->num_inputs, r->app->max_inputs);
    return answer_error(r, HTTP_UNAVAILABLE, SERVE_ERR_QUEUE_FULL,
                        "the queue is full (%d inputs waiting); retry shortly",
                        serve_batcher_pending(r->app->batcher));
}

/* The body is in: its inputs become jobs. The connection is suspended before they are submitted,
 * so that no job can finish (and resume it) before it is suspended. */
static enum MHD_Result submit(request *r) {
    if (r->too_large)
        return answer_error(r, HTTP_TOO_LARGE, SERVE_ERR_TOO_LARGE,
                            "body of more than %zu bytes (--max-body-bytes)",
                            r->app->max_body_bytes);
    const int parsed = r->ep == EP_TEXT ? parse_texts(r) : parse_images(r);
    if (parsed != 0 && !r->form_error[0]) return MHD_NO; /* out of memory */
    if (parsed != 0)
        return answer_error(r, r->too_many ? HTTP_TOO_LARGE : HTTP_BAD_REQUEST,
                            r->too_many        ? SERVE_ERR_TOO_LARGE
                            : r->ep == EP_TEXT ? SERVE_ERR_BAD_INPUT
                                               : SERVE_ERR_BAD_REQUEST,
                            "%s", r->form_error);
    if (make_jobs(r) != 0) return MHD_NO;
    r->submitted = 1;
    MHD_suspend_connection(r->conn);
    const serve_submit_result rc = serve_batcher_submit(r->app->batcher, r->jobs, r->num_inputs);
    if (rc == SERVE_SUBMITTED) return MHD_YES;
    const enum MHD_Result queued = refuse(r, rc);
    MHD_resume_connection(r->conn);
    return queued;
}

/* The answer the last job prepared, handed to libmicrohttpd as it is. */
static enum MHD_Result answer_jobs(request *r) {
    char *text = r->prepared.text;
    if (!text) return MHD_NO; /* out of memory */
    r->prepared.text = NULL;
    return answer(r, r->prepared_status, text, r->prepared.size);
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
    return r->submitted ? answer_jobs(r) : submit(r);
}

/* A request line has arrived: its state begins here (so that it is logged however it ends). */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *conn) {
    serve_app *app = cls;
    request *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    r->app = app;
    r->conn = conn;
    r->started = clock_seconds();
    r->ep = EP_OTHER;
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
    char when[40], who[64], status[32], inputs[32] = "";
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
    if (r->images || r->texts)
        snprintf(inputs, sizeof inputs, " %d %s%s", r->images ? r->images : r->texts,
                 r->images ? "image" : "text", (r->images ? r->images : r->texts) > 1 ? "s" : "");
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
    if (r->status) serve_metrics_request(app->metrics, routes[r->ep].path, r->status, seconds);
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
