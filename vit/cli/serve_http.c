/* vit serve's HTTP layer on libmicrohttpd: routes, request bodies and forms, answers and the
 * request log. The work itself is the batcher's (vit/serve): a request's images or texts become
 * jobs, its connection is suspended while they wait for their batch, each job's answer is written
 * by the batcher thread that finishes it, and the last one assembles the whole answer and resumes
 * the connection, so that libmicrohttpd's thread only queues its bytes. That one thread handles
 * every connection (epoll): connections cost no threads and the cores stay the forward pass's, as
 * long as nothing on it grows with a request's inputs or k (beyond reading the body).
 *
 * A joint model (CLIP, SigLIP) classifies zero-shot: the request's images are embedded
 * (SERVE_EMBED_JOINT) beside a job for its class set (SERVE_CLASSES: found in the cache, or
 * embedded by the text tower on a forward thread) unless the set was found cached already; the
 * last of its jobs scores the images against the set. /v1/embeddings embeds texts and images as
 * OpenAI's API does. */
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

#include "vit/base/base64.h"
#include "vit/base/bytes.h"
#include "vit/base/clock.h"
#include "vit/cli/cli.h"
#include "vit/cli/serve_page.h"
#include "vit/cli/serve_results.h"
#include "vit/cli/zero_shot.h"

struct serve_http {
    struct MHD_Daemon *daemon;
    int listen_fd; /* ours until quiesce hands it back */
};

/* ---- routes ---- */

/* /v1/generate's options (gen_keys, below), as vit generate's: transformers' GenerationConfig's
 * names. */
#define GEN_OPTION_NAMES                                                                           \
    "num_beams, max_new_tokens, min_length, length_penalty, no_repeat_ngram_size, early_stopping"

typedef enum {
    EP_PAGE,
    EP_HEALTH,
    EP_METRICS,
    EP_MODEL,
    EP_MODELS,
    EP_CLASSIFY,
    EP_EMBED,
    EP_TEXT,
    EP_EMBEDDINGS,
    EP_GENERATE,
    EP_EXPLAIN,
    EP_OTHER
} endpoint;

static const struct {
    const char *path;
    int post;           /* POST only; else GET and HEAD */
    const char *params; /* the query parameters it takes */
    int open;           /* no API key needed: a load balancer's probe has none, the page asks */
} routes[] = {
    [EP_PAGE] = {"/", 0, "", 1},
    [EP_HEALTH] = {"/health", 0, "", 1},
    [EP_METRICS] = {"/metrics", 0, ""},
    [EP_MODEL] = {"/v1/model", 0, ""},
    [EP_MODELS] = {"/v1/models", 0, ""},
    [EP_CLASSIFY] = {"/v1/classify", 1, "k, threshold, logits; a joint model: classes, template"},
    [EP_EMBED] = {"/v1/embed", 1, "pool"},
    [EP_TEXT] = {"/v1/text", 1, "k, threshold, logits"},
    [EP_EMBEDDINGS] = {"/v1/embeddings", 1, "none"},
    [EP_GENERATE] = {"/v1/generate", 1, GEN_OPTION_NAMES},
    [EP_EXPLAIN] = {"/v1/explain", 1, "method"},
    [EP_OTHER] = {"other", 0, ""},
};

static endpoint route(const char *url) {
    for (int e = 0; e < EP_OTHER; e++)
        if (strcmp(url, routes[e].path) == 0) return (endpoint)e;
    return EP_OTHER;
}

/* ---- a request ---- */

/* The longest class name or template, in bytes. */
#define MAX_CLASS_BYTES 300

/* /v1/generate's options, as vit generate's: the names a request gives them (transformers'
 * GenerationConfig's), and the limits of those that have no other (vit generate's). */
enum { GEN_BEAMS, GEN_MAX_NEW, GEN_MIN_LENGTH, GEN_PENALTY, GEN_NO_REPEAT, GEN_EARLY, GEN_KEYS };
static const char *const gen_keys[GEN_KEYS] = {
    "num_beams",      "max_new_tokens",       "min_length",
    "length_penalty", "no_repeat_ngram_size", "early_stopping"};
#define MAX_MIN_LENGTH  4096
#define MAX_PENALTY     100.0
#define MAX_NO_REPEAT   64
#define GEN_FIELD_BYTES 32 /* a form field's value */

typedef struct {
    char *name;     /* the form part's file name, or NULL */
    byte_buf bytes; /* a form part's own copy, or a view (cap 0) of the body or of a JSON text */
    int owned;      /* bytes are its own: a form part's, a data URL's decoded */
    int task;       /* its job's serve_task */
    union {         /* what its job asks and gets, for the tasks whose results are typed */
        serve_gen_request gen;         /* SERVE_GENERATE */
        serve_explain_request explain; /* SERVE_EXPLAIN_* */
        serve_text_request text;       /* SERVE_EMBED_TEXT */
    } job;
} input;

/* A list of strings, each malloc'ed: class names, templates. */
typedef struct {
    char **items;
    int count;
} string_list;

typedef struct {
    serve_app *app;
    struct MHD_Connection *conn;
    char method[16];  /* as logged */
    char target[224]; /* "/v1/classify?k=3", as logged */
    double started;
    int begun;       /* the handler has seen it */
    serve_auth auth; /* refused for want of a key (401): why */
    int deferred;    /* a request without a body: routed when it is complete (see has_body) */
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
    int num_inputs;
    int too_many; /* a limit exceeded: more inputs than the queue holds, too many classes (413) */
    cJSON *json;  /* a text request, a JSON one's images, /v1/embeddings's inputs */
    char form_error[320];
    /* zero-shot (/v1/classify on a joint model): the class names and templates asked for */
    int zero_shot;
    string_list classes, templates;
    int classes_from_query, templates_from_query;
    string_list form_templates;        /* a form's "template" fields as they came */
    byte_buf classes_field;            /* a form's "classes" fields, joined by commas */
    serve_class_request class_request; /* the class set asked of a forward thread */
    serve_class_set *class_set;        /* the set the answers use (taken; released at the end) */
    /* /v1/embeddings: the floats of each embedding as base64, the texts' tokens (/v1/generate:
     * the tokens generated) */
    int base64;
    long long tokens;
    /* /v1/generate: its options (the model's, with those asked for over them), a bit for each
     * asked for (once only), a form's option fields as they came */
    vit_gen_options gen;
    unsigned gen_given, gen_in_form;
    char gen_field[GEN_KEYS][GEN_FIELD_BYTES];
    /* its jobs: one per input, then the class set's when it is to be embedded */
    serve_job *jobs;
    int num_jobs;
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

static void strings_free(string_list *l) {
    for (int i = 0; i < l->count; i++) free(l->items[i]);
    free(l->items);
    *l = (string_list){0};
}

static void request_free(request *r) {
    if (!r) return;
    for (int i = 0; i < r->num_inputs; i++) {
        free(r->inputs[i].name);
        if (r->inputs[i].owned) byte_buf_free(&r->inputs[i].bytes);
    }
    strings_free(&r->classes);
    strings_free(&r->templates);
    strings_free(&r->form_templates);
    byte_buf_free(&r->classes_field);
    if (r->class_set) serve_class_set_release(r->app->classes, r->class_set);
    free(r->inputs);
    byte_buf_free(&r->body);
    cJSON_Delete(r->json);
    for (int i = 0; r->results && i < r->num_inputs; i++) free(r->results[i].text);
    free(r->results);
    for (int i = 0; i < r->num_inputs; i++)
        if (r->inputs[i].task == SERVE_GENERATE)
            vit_generation_free(&r->inputs[i].job.gen.result, 1);
    free(r->prepared.text);
    free(r->jobs);
    free(r->outputs);
    free(r);
}

/* ---- answers ---- */

static const char *content_type(endpoint ep) {
    switch (ep) {
    case EP_PAGE:
        return "text/html; charset=utf-8";
    case EP_METRICS:
        return "text/plain; version=0.0.4; charset=utf-8";
    default:
        return "application/json";
    }
}

static int cors_on(const serve_app *app) {
    return serve_access_num_origins(app->access) > 0;
}

/* The methods a path takes (OPTIONS too when it answers browsers' preflights). */
static const char *methods(const request *r) {
    if (cors_on(r->app)) return routes[r->ep].post ? "POST, OPTIONS" : "GET, HEAD, OPTIONS";
    return routes[r->ep].post ? "POST" : "GET, HEAD";
}

/* Access-Control-Allow-Origin when the request's Origin is allowed; Vary whenever CORS is on (the
 * answer depends on Origin, which caches must know). */
static void add_cors_headers(const request *r, struct MHD_Response *resp) {
    if (!cors_on(r->app)) return;
    const char *origin =
        MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_ORIGIN);
    const char *allowed = serve_access_allow_origin(r->app->access, origin);
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
    if (atomic_load(&r->app->draining))
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
    add_cors_headers(r, resp);
    r->status = status;
    r->answer_bytes = size;
    const enum MHD_Result rc = MHD_queue_response(r->conn, (unsigned)status, resp);
    MHD_destroy_response(resp);
    return rc;
}

/* Queues body (malloc'ed, taken over) as the answer. */
static enum MHD_Result answer(request *r, int status, char *body, size_t size) {
    struct MHD_Response *resp = MHD_create_response_from_buffer(size, body, MHD_RESPMEM_MUST_FREE);
    if (!resp) return free(body), MHD_NO;
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
                            status < 300 ? content_type(r->ep) : "application/json");
    return queue(r, status, resp, size);
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
    if (serve_doc_open(&d) != 0) return MHD_NO;
    serve_json_error(&d.w, status, kind, msg);
    return doc_answer(r, status, &d);
}

/* ---- GET endpoints ---- */

/* The page built into the binary (static bytes: nothing to free). */
static enum MHD_Result answer_page(request *r) {
    struct MHD_Response *resp = MHD_create_response_from_buffer(
        serve_page_html_size, (void *)serve_page_html, MHD_RESPMEM_PERSISTENT);
    if (!resp) return MHD_NO;
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, content_type(EP_PAGE));
    return queue(r, HTTP_OK, resp, serve_page_html_size);
}

static enum MHD_Result answer_health(request *r) {
    json_doc d;
    if (serve_doc_open(&d) != 0) return MHD_NO;
    json_key(&d.w, "status");
    json_string(&d.w, "ok");
    json_key(&d.w, "queued");
    json_int(&d.w, serve_batcher_pending(r->app->batcher));
    return doc_answer(r, HTTP_OK, &d);
}

/* While the models load: /health says so, everything else is refused (503, Retry-After). */
static enum MHD_Result answer_loading(request *r) {
    if (r->ep != EP_HEALTH)
        return answer_error(r, HTTP_UNAVAILABLE, SERVE_ERR_LOADING,
                            "the model is loading (GET /health answers 200 once it is ready)");
    json_doc d;
    if (serve_doc_open(&d) != 0) return MHD_NO;
    json_key(&d.w, "status");
    json_string(&d.w, "loading");
    return doc_answer(r, HTTP_UNAVAILABLE, &d);
}

/* A browser's preflight (OPTIONS before a cross-origin request with an Authorization header or a
 * JSON body): 204 with what the path takes and, when the origin is allowed, what it may send. It
 * needs no key (browsers send none with it) and is answered while the models load. */
static enum MHD_Result answer_preflight(request *r) {
    struct MHD_Response *resp = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
    if (!resp) return MHD_NO;
    if (serve_access_allow_origin(
            r->app->access,
            MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_ORIGIN))) {
        MHD_add_response_header(resp, MHD_HTTP_HEADER_ACCESS_CONTROL_ALLOW_METHODS,
                                routes[r->ep].post ? "POST" : "GET, HEAD");
        MHD_add_response_header(resp, MHD_HTTP_HEADER_ACCESS_CONTROL_ALLOW_HEADERS,
                                "Authorization, Content-Type");
        MHD_add_response_header(resp, MHD_HTTP_HEADER_ACCESS_CONTROL_MAX_AGE,
                                "7200"); /* Chromium's longest */
    }
    return queue(r, HTTP_NO_CONTENT, resp, 0);
}

/* 401 unless the request carries one of the keys (or none is asked for). */
static int refused_key(request *r) {
    r->auth = serve_access_check(
        r->app->access,
        MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION));
    return r->auth != SERVE_AUTH_OK;
}

static enum MHD_Result refuse_key(request *r) {
    return answer_error(r, HTTP_UNAUTHORIZED, SERVE_ERR_UNAUTHORIZED, "%s",
                        r->auth == SERVE_AUTH_WRONG
                            ? "wrong API key"
                            : "an API key is needed: send the header Authorization: Bearer KEY");
}

static enum MHD_Result answer_metrics(request *r) {
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    if (!out) return MHD_NO;
    serve_gauges g = {.queued = serve_batcher_pending(r->app->batcher),
                      .in_flight = atomic_load(&r->app->in_flight),
                      .connections = atomic_load(&r->app->connections),
                      .started = r->app->started};
    serve_class_stats classes;
    if (r->app->classes) {
        classes = serve_class_cache_stats(r->app->classes);
        g.classes = &classes;
    }
    serve_metrics_write(r->app->metrics, &g, out);
    fclose(out);
    return answer(r, HTTP_OK, text, size);
}

static enum MHD_Result answer_model(request *r) {
    const char *json = r->app->model_json;
    char *copy = strdup(json);
    return copy ? answer(r, HTTP_OK, copy, strlen(copy)) : MHD_NO;
}

/* OpenAI's list of models: the image model's folder, and a text model's served beside it (a
 * joint model's text tower is the same folder: one entry). GET /v1/model describes them. */
static enum MHD_Result answer_models(request *r) {
    const serve_app *app = r->app;
    json_doc d;
    if (serve_doc_open(&d) != 0) return MHD_NO;
    json_key(&d.w, "object");
    json_string(&d.w, "list");
    json_key(&d.w, "data");
    json_array(&d.w);
    if (app->model_name) serve_json_model_entry(&d.w, app->model_name, app->started);
    if (app->text_model_name) serve_json_model_entry(&d.w, app->text_model_name, app->started);
    json_end(&d.w);
    return doc_answer(r, HTTP_OK, &d);
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

/* ---- zero-shot's class names and templates ---- */

static int is_joint(const serve_app *app) {
    return app->image && vit_joint_dim(app->image) > 0;
}

static int fail_request(request *r, int limit, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The reason a request is refused, into r->form_error: 413 when a limit is exceeded (limit 1),
 * else 400. Returns -1. */
static int fail_request(request *r, int limit, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->form_error, sizeof r->form_error, fmt, ap);
    va_end(ap);
    r->too_many = limit;
    return -1;
}

/* A copy of s[0..n) at the end of l. -1 when out of memory. */
static int strings_add(string_list *l, const char *s, size_t n) {
    char **grown = realloc(l->items, sizeof *grown * (size_t)(l->count + 1));
    if (!grown) return -1;
    l->items = grown;
    if (!(l->items[l->count] = strndup(s, n))) return -1;
    l->count++;
    return 0;
}

/* A class name (s[0..n)) within the limits: not empty, at most MAX_CLASS_BYTES, at most
 * --max-classes of them. */
static int add_class(request *r, const char *s, size_t n) {
    if (n == 0) return fail_request(r, 0, "an empty class name (classes are comma-separated)");
    if (memchr(s, 0, n)) return fail_request(r, 0, "a class name holds a NUL byte");
    if (n > MAX_CLASS_BYTES)
        return fail_request(r, 1, "a class name of %zu bytes, over the limit of %d ('%.40s...')", n,
                            MAX_CLASS_BYTES, s);
    if (r->classes.count >= r->app->max_classes)
        return fail_request(r, 1, "more than %d class names in one request (--max-classes)",
                            r->app->max_classes);
    return strings_add(&r->classes, s, n) == 0 ? 0 : fail_request(r, 0, "out of memory");
}

static int is_blank(char c) {
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* "cat, dog,a red car": each name trimmed of the white space around it. */
static int add_class_list(request *r, const char *list, size_t n) {
    const char *end = list + n;
    for (const char *p = list;; p++) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        const char *stop = comma ? comma : end;
        while (p < stop && is_blank(*p)) p++;
        const char *last = stop;
        while (last > p && is_blank(last[-1])) last--;
        if (add_class(r, p, (size_t)(last - p)) != 0) return -1;
        if (!comma) return 0;
        p = comma;
    }
}

/* A template: "{}" where the class name goes (one without is used as it is, as vit classify
 * --template does), at most MAX_CLASS_BYTES. */
static int add_template(request *r, const char *s, size_t n) {
    if (n > MAX_CLASS_BYTES)
        return fail_request(r, 1, "a template of %zu bytes, over the limit of %d", n,
                            MAX_CLASS_BYTES);
    if (memchr(s, 0, n)) return fail_request(r, 0, "a template holds a NUL byte");
    if (r->templates.count >= r->app->max_prompts)
        return fail_request(r, 1, "more than %d templates (--max-prompts)", r->app->max_prompts);
    return strings_add(&r->templates, s, n) == 0 ? 0 : fail_request(r, 0, "out of memory");
}

/* Once the body is read: whether this /v1/classify is zero-shot, and its names and templates
 * within the limits. */
static int check_zero_shot(request *r) {
    const serve_app *app = r->app;
    if (!is_joint(app)) {
        if (r->classes.count || r->templates.count)
            return fail_request(r, 0,
                                "classes and templates are for a joint image-text model (CLIP, "
                                "SigLIP); this model classifies into its own %d labels",
                                vit_num_labels(app->image));
        return 0;
    }
    if (r->classes.count == 0)
        return fail_request(r, 0,
                            "classes are needed: this is a joint image-text model, which "
                            "classifies zero-shot against the names given (?classes=cat,dog or a "
                            "\"classes\" form field or JSON list)");
    if (r->templates.count == 0 && /* vit classify's default */
        strings_add(&r->templates, CLI_DEFAULT_TEMPLATE, strlen(CLI_DEFAULT_TEMPLATE)) != 0)
        return fail_request(r, 0, "out of memory");
    const long long prompts = (long long)r->classes.count * r->templates.count;
    if (prompts > app->max_prompts)
        return fail_request(r, 1,
                            "%d class names times %d templates: %lld texts to embed, over the "
                            "limit of %d (--max-prompts)",
                            r->classes.count, r->templates.count, prompts, app->max_prompts);
    r->zero_shot = 1;
    r->task = SERVE_EMBED_JOINT;
    for (int i = 0; i < r->num_inputs; i++) r->inputs[i].task = SERVE_EMBED_JOINT;
    return 0;
}

/* ---- /v1/generate's options ---- */

static int gen_key(const char *key) {
    for (int k = 0; k < GEN_KEYS; k++)
        if (strcmp(key, gen_keys[k]) == 0) return k;
    return -1;
}

static int parse_early(const char *s, int *out) {
    static const char *const names[] = {"false", "true", "never"}; /* GEN_EARLY_* */
    for (int i = 0; i < 3; i++)
        if (strcmp(s, names[i]) == 0) return *out = i, 0;
    return -1;
}

/* What option k takes, for its error. */
static void gen_limits(const serve_app *app, int k, char *out, size_t size) {
    switch (k) {
    case GEN_BEAMS:
        snprintf(out, size, "an integer from 1 to %d, the server's --max-beams", app->max_beams);
        return;
    case GEN_MAX_NEW:
        snprintf(out, size, "an integer from 1 to %d, the decoder's positions",
                 vit_gen_max_new_tokens(app->gen));
        return;
    case GEN_MIN_LENGTH:
        snprintf(out, size, "an integer from 0 to %d", MAX_MIN_LENGTH);
        return;
    case GEN_PENALTY:
        snprintf(out, size, "a number from %g to %g", -MAX_PENALTY, MAX_PENALTY);
        return;
    case GEN_NO_REPEAT:
        snprintf(out, size, "an integer from 0 to %d", MAX_NO_REPEAT);
        return;
    default:
        snprintf(out, size, "true, false or never");
    }
}

/* Option k from its text (a query's, a form field's, a JSON value's) into r->gen, within its
 * limits and given once; else -1 with the reason, naming it, in r->form_error. */
static int set_gen_option(request *r, int k, const char *v) {
    if (r->gen_given & (1u << k)) return fail_request(r, 0, "%s given more than once", gen_keys[k]);
    r->gen_given |= 1u << k;
    const serve_app *app = r->app;
    vit_gen_options *o = &r->gen;
    double penalty;
    int bad;
    switch (k) {
    case GEN_BEAMS:
        bad = parse_int(v, 1, app->max_beams, &o->num_beams);
        break;
    case GEN_MAX_NEW:
        bad = parse_int(v, 1, vit_gen_max_new_tokens(app->gen), &o->max_new_tokens);
        break;
    case GEN_MIN_LENGTH:
        bad = parse_int(v, 0, MAX_MIN_LENGTH, &o->min_length);
        break;
    case GEN_PENALTY:
        bad = parse_number(v, -MAX_PENALTY, MAX_PENALTY, &penalty);
        if (!bad) o->length_penalty = (float)penalty;
        break;
    case GEN_NO_REPEAT:
        bad = parse_int(v, 0, MAX_NO_REPEAT, &o->no_repeat_ngram_size);
        break;
    default:
        bad = parse_early(v, &o->early_stopping);
    }
    if (!bad) return 0;
    char limits[96];
    gen_limits(app, k, limits, sizeof limits);
    return fail_request(r, 0, "invalid %s '%.40s' (%s)", gen_keys[k], v, limits);
}

/* A JSON body's option k: a number, or for early_stopping true, false or "never" (as
 * generation_config.json has them), checked as its text. */
static int json_gen_option(request *r, int k, const cJSON *v) {
    char text[64];
    if (cJSON_IsNumber(v) && k != GEN_EARLY)
        snprintf(text, sizeof text, "%.17g", v->valuedouble);
    else if (cJSON_IsBool(v) && k == GEN_EARLY)
        snprintf(text, sizeof text, "%s", cJSON_IsTrue(v) ? "true" : "false");
    else if (cJSON_IsString(v) && k == GEN_EARLY)
        snprintf(text, sizeof text, "%.40s", v->valuestring);
    else
        return fail_request(r, 0, "\"%s\" is not %s", gen_keys[k],
                            k == GEN_EARLY ? "true, false or \"never\"" : "a number");
    return set_gen_option(r, k, text);
}

/* A form's option field k, gathered piece by piece (set once the form is read). */
static enum MHD_Result form_gen_field(request *r, int k, const char *data, uint64_t off,
                                      size_t size) {
    char *field = r->gen_field[k];
    const size_t have = strlen(field);
    if (off == 0 && (r->gen_in_form & (1u << k))) {
        snprintf(r->form_error, sizeof r->form_error, "%s given more than once", gen_keys[k]);
        return MHD_NO;
    }
    r->gen_in_form |= 1u << k;
    if (have + size >= GEN_FIELD_BYTES || memchr(data, 0, size)) {
        snprintf(r->form_error, sizeof r->form_error, "invalid %s: not a number nor a word",
                 gen_keys[k]);
        return MHD_NO;
    }
    memcpy(field + have, data, size);
    field[have + size] = 0;
    return MHD_YES;
}

/* One query parameter into r; a wrong one leaves its reason in r->form_error. */
static enum MHD_Result query_param(void *cls, enum MHD_ValueKind kind, const char *key,
                                   const char *value) {
    (void)kind;
    request *r = cls;
    const char *v = value ? value : "";
    if (!key) key = "";
    const int scored = r->ep == EP_CLASSIFY || r->ep == EP_TEXT;
    int bad;
    if (strcmp(key, "k") == 0 && scored)
        bad = parse_int(v, 1, 1 << 20, &r->k);
    else if (strcmp(key, "threshold") == 0 && scored)
        bad = parse_number(v, 0.0, 1.0, &r->threshold);
    else if (strcmp(key, "logits") == 0 && scored)
        bad = parse_flag(v, &r->logits);
    else if (strcmp(key, "classes") == 0 && r->ep == EP_CLASSIFY) {
        r->classes_from_query = 1;
        return add_class_list(r, v, strlen(v)) == 0 ? MHD_YES : MHD_NO;
    } else if (strcmp(key, "template") == 0 && r->ep == EP_CLASSIFY) {
        r->templates_from_query = 1;
        return add_template(r, v, strlen(v)) == 0 ? MHD_YES : MHD_NO;
    } else if (r->ep == EP_GENERATE && gen_key(key) >= 0) {
        return set_gen_option(r, gen_key(key), v) == 0 ? MHD_YES : MHD_NO;
    } else if (strcmp(key, "method") == 0 && r->ep == EP_EXPLAIN) {
        bad = strcmp(v, "rollout") != 0 && strcmp(v, "grad") != 0;
        r->task = strcmp(v, "grad") == 0 ? SERVE_EXPLAIN_GRAD : SERVE_EXPLAIN_ROLLOUT;
    } else if (strcmp(key, "pool") == 0 && r->ep == EP_EMBED) {
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
                 : strcmp(key, "method") == 0    ? "rollout or grad"
                                                 : "1 or 0");
    return bad ? MHD_NO : MHD_YES;
}

/* ---- the first call: route, method, query, declared size ---- */

static int model_missing(const request *r) {
    switch (r->ep) {
    case EP_TEXT:
        return !r->app->text || vit_text_joint_dim(r->app->text) > 0;
    case EP_EMBEDDINGS:
        return !r->app->image && !r->app->text;
    default:
        return !r->app->image;
    }
}

/* /v1/generate needs an image-to-text model, /v1/classify one with labels: 400 otherwise (the
 * request is wrong for this model, which is there). */
static enum MHD_Result refuse_kind(request *r) {
    const serve_app *app = r->app;
    if (r->ep == EP_CLASSIFY)
        return answer_error(
            r, HTTP_BAD_REQUEST, SERVE_ERR_BAD_REQUEST,
            "/v1/classify: %s is an image-to-text model (VisionEncoderDecoderModel), "
            "without labels: POST /v1/generate writes each image's text",
            app->model_name);
    return answer_error(r, HTTP_BAD_REQUEST, SERVE_ERR_BAD_REQUEST,
                        "/v1/generate: %s is not an image-to-text model (a "
                        "VisionEncoderDecoderModel folder, as TrOCR's): %s",
                        app->model_name,
                        is_joint(app) ? "POST /v1/classify?classes=... classifies its images"
                        : app->image  ? "POST /v1/classify classifies its images"
                                      : "only a text model is served (POST /v1/text)");
}

static enum MHD_Result begin_post(request *r) {
    const serve_app *app = r->app;
    if ((r->ep == EP_CLASSIFY && app->gen) || (r->ep == EP_GENERATE && !app->gen))
        return refuse_kind(r);
    if (r->ep == EP_EXPLAIN && app->gen)
        return answer_error(
            r, HTTP_BAD_REQUEST, SERVE_ERR_BAD_REQUEST,
            "/v1/explain: %s is an image-to-text model (VisionEncoderDecoderModel): "
            "its text has no attention map over the image to give",
            app->model_name);
    if (model_missing(r) && r->ep == EP_TEXT && app->text)
        return answer_error(r, HTTP_NOT_FOUND, SERVE_ERR_NOT_FOUND,
                            "/v1/text: the text tower of a joint image-text model classifies "
                            "nothing (POST /v1/embeddings embeds texts; POST "
                            "/v1/classify?classes=... classifies images zero-shot)");
    if (model_missing(r))
        return answer_error(r, HTTP_NOT_FOUND, SERVE_ERR_NOT_FOUND,
                            "%s: no %s model is served (start vit serve with %s)",
                            routes[r->ep].path, r->ep == EP_TEXT ? "text" : "image",
                            r->ep == EP_TEXT ? "--text-model DIR" : "-m DIR");
    if (r->ep == EP_CLASSIFY && app->image && !is_joint(app) && !vit_has_classifier(app->image))
        return answer_error(r, HTTP_BAD_REQUEST, SERVE_ERR_BAD_REQUEST,
                            "/v1/classify: %s is a base model without a classifier (Dinov2Model, "
                            "BeitModel): POST /v1/embed gives its features",
                            app->model_name);
    if (r->ep == EP_CLASSIFY && is_joint(app) && !app->classes)
        return answer_error(r, HTTP_NOT_FOUND, SERVE_ERR_NOT_FOUND,
                            "/v1/classify: zero-shot needs the joint model's text tower, which is "
                            "not served (vit serve said why when it started)");
    r->k = 5;
    r->task = r->ep == EP_TEXT       ? SERVE_TEXT
              : r->ep == EP_EMBED    ? SERVE_EMBED_CLS
              : r->ep == EP_GENERATE ? SERVE_GENERATE
              : r->ep == EP_EXPLAIN  ? SERVE_EXPLAIN_ROLLOUT
                                     : SERVE_CLASSIFY;
    r->gen = app->gen_defaults;
    MHD_get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND, query_param, r);
    if (r->form_error[0])
        return answer_error(r, r->too_many ? HTTP_TOO_LARGE : HTTP_BAD_REQUEST,
                            r->too_many ? SERVE_ERR_TOO_LARGE : SERVE_ERR_BAD_REQUEST, "%s",
                            r->form_error);
    vit_error why = {0};
    if (r->ep == EP_EXPLAIN && vit_explain_check(app->image, &why) != 0)
        return answer_error(r, HTTP_BAD_REQUEST, SERVE_ERR_BAD_REQUEST, "/v1/explain: %s", why.msg);
    if (r->task == SERVE_EXPLAIN_GRAD && !vit_has_classifier(app->image))
        return answer_error(r, HTTP_BAD_REQUEST, SERVE_ERR_BAD_REQUEST,
                            "/v1/explain?method=grad: %s has no classes for the gradient to "
                            "explain (method=rollout explains it)",
                            app->model_name);
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
                            "no such path (try GET / for the web page, POST /v1/classify, POST "
                            "/v1/embed, POST /v1/text, "
                            "POST /v1/embeddings, POST /v1/generate, POST /v1/explain, GET "
                            "/health, GET /metrics, "
                            "GET /v1/model or GET /v1/models)");
    if (strcmp(method, "OPTIONS") == 0 && cors_on(r->app)) return answer_preflight(r);
    const int get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
    if (routes[r->ep].post ? strcmp(method, "POST") != 0 : !get)
        return answer_error(r, HTTP_METHOD_NOT_ALLOWED, SERVE_ERR_METHOD, "%s takes %s, not %.20s",
                            routes[r->ep].path, routes[r->ep].post ? "POST" : "GET", method);
    if (atomic_load(&r->app->draining))
        return answer_error(r, HTTP_UNAVAILABLE, SERVE_ERR_SHUTTING_DOWN, "shutting down");
    if (!routes[r->ep].open && refused_key(r)) return refuse_key(r);
    if (r->ep == EP_PAGE) return answer_page(r); /* while loading too: it waits for the model */
    if (atomic_load(&r->app->loading)) return answer_loading(r);
    switch (r->ep) {
    case EP_HEALTH:
        return answer_health(r);
    case EP_METRICS:
        return answer_metrics(r);
    case EP_MODEL:
        return answer_model(r);
    case EP_MODELS:
        return answer_models(r);
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

/* ---- inputs: a raw body, a multipart form, a JSON list of texts or of data URLs ---- */

static int add_input(request *r, const char *name) {
    if (r->num_inputs >= r->app->max_inputs) {
        r->too_many = 1;
        snprintf(r->form_error, sizeof r->form_error,
                 "more than %d %s in one request (the queue's size, --max-queue)",
                 r->app->max_inputs,
                 r->ep == EP_TEXT         ? "texts"
                 : r->ep == EP_EMBEDDINGS ? "inputs"
                                          : "images");
        return -1;
    }
    input *grown = realloc(r->inputs, sizeof *grown * (size_t)(r->num_inputs + 1));
    if (!grown) return -1;
    r->inputs = grown;
    r->inputs[r->num_inputs++] = (input){.name = name ? strdup(name) : NULL, .task = r->task};
    return name && !r->inputs[r->num_inputs - 1].name ? -1 : 0;
}

/* A form's "classes" field (comma-separated names; several are joined) and "template" fields
 * (one each), on /v1/classify: gathered piece by piece, read when the form is. */
static enum MHD_Result form_class_field(request *r, const char *key, const char *data, uint64_t off,
                                        size_t size) {
    if (strcmp(key, "classes") == 0) {
        const int more = off == 0 && r->classes_field.size > 0;
        if ((more && byte_buf_append(&r->classes_field, ",", 1, SIZE_MAX) != 0) ||
            byte_buf_append(&r->classes_field, data, size, SIZE_MAX) != 0)
            return MHD_NO;
        return MHD_YES;
    }
    string_list *t = &r->form_templates;
    if (memchr(data, 0, size)) {
        snprintf(r->form_error, sizeof r->form_error, "a template holds a NUL byte");
        return MHD_NO;
    }
    if (off == 0 || t->count == 0) return strings_add(t, data, size) == 0 ? MHD_YES : MHD_NO;
    char **last = &t->items[t->count - 1];
    const size_t n = strlen(*last);
    char *grown = realloc(*last, n + size + 1);
    if (!grown) return MHD_NO;
    memcpy(grown + n, data, size);
    grown[n + size] = 0;
    *last = grown;
    return MHD_YES;
}

/* The form's "image" parts, each an input; on /v1/classify its class names and templates too; any
 * other field is an error. */
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
    if (r->ep == EP_GENERATE && gen_key(key) >= 0)
        return form_gen_field(r, gen_key(key), data, off, size);
    if (r->ep == EP_CLASSIFY && (strcmp(key, "classes") == 0 || strcmp(key, "template") == 0)) {
        if (strcmp(key, "classes") == 0 ? r->classes_from_query : r->templates_from_query) {
            snprintf(r->form_error, sizeof r->form_error,
                     "%s given both in the query and in the form", key);
            return MHD_NO;
        }
        return form_class_field(r, key, data, off, size);
    }
    if (strcmp(key, "image") != 0) {
        snprintf(r->form_error, sizeof r->form_error,
                 "unexpected form field '%.40s' (send each image as a part named \"image\"%s%s)",
                 key, r->ep == EP_GENERATE ? "; options: " : "",
                 r->ep == EP_GENERATE ? routes[EP_GENERATE].params : "");
        return MHD_NO;
    }
    /* libmicrohttpd calls at least once per part, first at offset 0 (an empty part: once, with
     * size 0). Given the whole body at once it has a part's first bytes in that first call unless
     * the body ends before the part does (a truncated form, refused), so offset 0 is a new part. */
    if ((off == 0 || r->num_inputs == 0) && add_input(r, filename) != 0) return MHD_NO;
    input *last = &r->inputs[r->num_inputs - 1];
    last->owned = 1;
    return byte_buf_append(&last->bytes, data, size, SIZE_MAX) == 0 ? MHD_YES : MHD_NO;
}

static int parse_form(request *r) {
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
    if (r->form_error[0]) return -1;
    for (int i = 0; i < r->form_templates.count; i++) /* now whole: within the limits? */
        if (add_template(r, r->form_templates.items[i], strlen(r->form_templates.items[i])) != 0)
            return -1;
    if (r->classes_field.size > 0 &&
        add_class_list(r, r->classes_field.data, r->classes_field.size) != 0)
        return -1;
    for (int k = 0; k < GEN_KEYS; k++) /* now whole: within the limits? */
        if ((r->gen_in_form & (1u << k)) && set_gen_option(r, k, r->gen_field[k]) != 0) return -1;
    return 0;
}

static int has_type(const request *r, const char *want) {
    const char *type =
        MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
    return type && strncasecmp(type, want, strlen(want)) == 0;
}

/* A string that is an image: a data URL of an image type ("data:image/png;base64,..."). */
static int is_image_url(const char *s) {
    return strncasecmp(s, "data:image/", 11) == 0;
}

/* Input i, a data URL of an image (s, NUL-terminated), decoded into its own bytes. */
static int decode_data_url(request *r, int i, const char *what, const char *s) {
    const char *comma = strchr(s, ',');
    const size_t head = comma ? (size_t)(comma - s) : strlen(s);
    if (!comma || head < 7 || strncasecmp(comma - 7, ";base64", 7) != 0)
        return fail_request(r, 0,
                            "%s: a data URL of an image must be base64, as "
                            "data:image/png;base64,iVBORw0KGgo...",
                            what);
    const char *data = comma + 1;
    const size_t n = strlen(data);
    input *in = &r->inputs[i];
    if (!(in->bytes.data = malloc(n / 4 * 3 + 3))) return fail_request(r, 0, "out of memory");
    in->owned = 1;
    size_t where = 0;
    const long long size = base64_decode(data, n, in->bytes.data, &where);
    if (size < 0)
        return fail_request(r, 0, "%s: the data URL's base64 is malformed at byte %zu of its data",
                            what, where);
    in->bytes.size = (size_t)size;
    in->bytes.cap = n / 4 * 3 + 3;
    return 0;
}

/* A JSON body's list `item`: "images" (data URLs), or /v1/classify's "classes" and "templates"
 * for a joint model. */
static int json_list(request *r, const cJSON *item) {
    const char *key = item->string;
    const int images = strcmp(key, "images") == 0, classes = strcmp(key, "classes") == 0;
    if (!images && (r->ep != EP_CLASSIFY || (!classes && strcmp(key, "templates") != 0)))
        return fail_request(r, 0, "unknown key \"%.40s\" (a JSON body of %s has %s)", key,
                            routes[r->ep].path,
                            r->ep == EP_CLASSIFY ? "\"images\", \"classes\" and \"templates\""
                                                 : "\"images\" and the options " GEN_OPTION_NAMES);
    if (!cJSON_IsArray(item)) return fail_request(r, 0, "\"%s\" is not a list", key);
    if ((classes && r->classes_from_query) || (!images && !classes && r->templates_from_query))
        return fail_request(r, 0, "%s given both in the query and in the body", key);
    int i = 0;
    const cJSON *v;
    cJSON_ArrayForEach(v, item) {
        char what[48];
        snprintf(what, sizeof what, "%s[%d]", key, i++);
        if (!cJSON_IsString(v)) return fail_request(r, 0, "%s is not a string", what);
        const char *s = v->valuestring;
        if (images && !is_image_url(s))
            return fail_request(r, 0, "%s is not a data URL of an image (data:image/...)", what);
        const int rc = images ? add_input(r, NULL) || decode_data_url(r, r->num_inputs - 1, what, s)
                       : classes ? add_class(r, s, strlen(s))
                                 : add_template(r, s, strlen(s));
        if (rc != 0) return -1;
    }
    return 0;
}

/* A JSON body of /v1/classify: {"images": [data URLs], "classes": [...], "templates": [...]}, the
 * last two for a joint model; of /v1/generate: {"images": [...]} and options ("num_beams": 4). */
static int parse_json_images(request *r) {
    r->json = cJSON_ParseWithLength(r->body.data ? r->body.data : "", r->body.size);
    if (!r->json) return fail_request(r, 0, "the body is not valid JSON");
    if (!cJSON_IsObject(r->json)) return fail_request(r, 0, "the body is not a JSON object");
    const cJSON *item;
    cJSON_ArrayForEach(item, r->json) {
        const int k = r->ep == EP_GENERATE ? gen_key(item->string) : -1;
        if ((k >= 0 ? json_gen_option(r, k, item) : json_list(r, item)) != 0) return -1;
    }
    if (r->num_inputs == 0) return fail_request(r, 0, "no \"images\" in the body");
    return 0;
}

static int parse_images(request *r) {
    if (has_type(r, "multipart/form-data")) return parse_form(r);
    if ((r->ep == EP_CLASSIFY || r->ep == EP_GENERATE) && has_type(r, "application/json"))
        return parse_json_images(r);
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
    for (const cJSON *item = r->json->child; item; item = item->next)
        if (strcmp(item->string, "texts") != 0)
            return fail_request(r, 0,
                                "unknown key \"%.40s\" (a JSON body of /v1/text has \"texts\"; "
                                "k, threshold and logits are query parameters)",
                                item->string);
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

/* The length of the embeddings /v1/embeddings gives for an image (text 0) or a text (1). */
static int embedding_size(const serve_app *app, int text) {
    if (text) {
        const int joint = vit_text_joint_dim(app->text);
        return joint > 0 ? joint : vit_text_hidden_size(app->text);
    }
    return is_joint(app) ? vit_joint_dim(app->image) : vit_hidden_size(app->image);
}

/* Input i of /v1/embeddings: s an image (a data URL) or a text, with a model for it. */
static int add_embedding_input(request *r, int i, const char *s) {
    const serve_app *app = r->app;
    char what[32];
    snprintf(what, sizeof what, "input[%d]", i);
    const int image = is_image_url(s);
    if (image && !app->image)
        return fail_request(r, 0, "%s is an image, and no image model is served", what);
    if (!image && !app->text)
        return fail_request(r, 0, "%s is a text, and %s", what,
                            is_joint(app) ? "this joint model's text tower is not served"
                                          : "no text model is served (--text-model DIR)");
    r->task = image ? (is_joint(app) ? SERVE_EMBED_JOINT : SERVE_EMBED_CLS) : SERVE_EMBED_TEXT;
    if (add_input(r, NULL) != 0) return -1;
    if (image) return decode_data_url(r, r->num_inputs - 1, what, s);
    r->inputs[r->num_inputs - 1].bytes = (byte_buf){(char *)s, strlen(s), 0}; /* in r->json */
    return 0;
}

/* The keys of an OpenAI embeddings request: any other is refused, as everywhere. */
static const char *const embedding_keys[] = {"input", "model", "encoding_format", "dimensions",
                                             "user"};
#define EMBEDDING_KEY_NAMES "\"input\", \"model\", \"encoding_format\", \"dimensions\", \"user\""

static int check_embedding_keys(request *r) {
    for (const cJSON *item = r->json->child; item; item = item->next) {
        size_t k = 0;
        while (k < sizeof embedding_keys / sizeof *embedding_keys &&
               strcmp(item->string, embedding_keys[k]) != 0)
            k++;
        if (k == sizeof embedding_keys / sizeof *embedding_keys)
            return fail_request(
                r, 0,
                "unknown key \"%.40s\" (a JSON body of /v1/embeddings has " EMBEDDING_KEY_NAMES ")",
                item->string);
    }
    return 0;
}

/* The request's options beside "input": "model" (any name: one model is served),
 * "encoding_format" ("float" or "base64"), "dimensions" (the model's, if given); "user" (OpenAI's
 * end-user id) is taken and unused. */
static int parse_embedding_options(request *r, int texts, int images) {
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(r->json, "model"),
                *format = cJSON_GetObjectItemCaseSensitive(r->json, "encoding_format"),
                *dims = cJSON_GetObjectItemCaseSensitive(r->json, "dimensions");
    if (model && !cJSON_IsString(model) && !cJSON_IsNull(model))
        return fail_request(r, 0, "\"model\" is not a string");
    if (format && !cJSON_IsNull(format)) {
        if (!cJSON_IsString(format) || (strcmp(format->valuestring, "float") != 0 &&
                                        strcmp(format->valuestring, "base64") != 0))
            return fail_request(r, 0, "\"encoding_format\" is \"float\" or \"base64\"");
        r->base64 = strcmp(format->valuestring, "base64") == 0;
    }
    if (dims && !cJSON_IsNull(dims)) {
        const int size = embedding_size(r->app, texts > 0);
        if (!cJSON_IsNumber(dims) || dims->valuedouble != size)
            return fail_request(r, 0,
                                "\"dimensions\": this model's embeddings have %d, and are not "
                                "shortened",
                                size);
    }
    if (texts && images && !(is_joint(r->app) && r->app->text))
        return fail_request(r, 0,
                            "texts and images in one request need a joint image-text model (CLIP, "
                            "SigLIP): the image and text models served embed into unrelated "
                            "spaces");
    return 0;
}

/* /v1/embeddings: OpenAI's {"input": "..." or ["...", ...], ...}, each string a text or a data URL
 * of an image. */
static int parse_embeddings(request *r) {
    r->json = cJSON_ParseWithLength(r->body.data ? r->body.data : "", r->body.size);
    if (!r->json) return fail_request(r, 0, "the body is not valid JSON");
    if (!cJSON_IsObject(r->json)) return fail_request(r, 0, "the body is not a JSON object");
    if (check_embedding_keys(r) != 0) return -1;
    const cJSON *input = cJSON_GetObjectItemCaseSensitive(r->json, "input");
    if (!input) return fail_request(r, 0, "no \"input\" in the body");
    if (!cJSON_IsString(input) && !cJSON_IsArray(input))
        return fail_request(r, 0, "\"input\" is neither a string nor a list of strings");
    if (cJSON_IsArray(input) && cJSON_GetArraySize(input) == 0)
        return fail_request(r, 0, "\"input\" is empty");
    int texts = 0, images = 0, i = 0;
    const cJSON *item = cJSON_IsString(input) ? input : input->child;
    for (; item; item = cJSON_IsString(input) ? NULL : item->next, i++) {
        if (!cJSON_IsString(item))
            return fail_request(r, 0,
                                "input[%d] is not a string (texts, and images as data URLs; not "
                                "token ids)",
                                i);
        if (add_embedding_input(r, i, item->valuestring) != 0) return -1;
        *(is_image_url(item->valuestring) ? &images : &texts) += 1;
    }
    return parse_embedding_options(r, texts, images);
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
    if (n >= 0) serve_json_top(w, top, shown, r->logits ? logits : NULL, (size_t)L);
    free(probs);
    free(top);
    return n < 0 ? -1 : 0;
}

/* Zero-shot's "top" (and "logits": the scores, HF's logits_per_image) of one image's joint
 * embedding against the request's class set, as classify's with the class names for labels. -1:
 * out of memory. */
static int write_zero_shot(json_writer *w, const request *r, const float *embedding) {
    const vit_classes *classes = serve_class_set_classes(r->class_set);
    const int L = vit_classes_count(classes), k = r->k < L ? r->k : L;
    float *scores = malloc(sizeof(float) * (size_t)L), *probs = malloc(sizeof(float) * (size_t)L);
    vit_prediction *top = malloc(sizeof *top * (size_t)k);
    int n = -1, shown = 0;
    if (scores && probs && top &&
        vit_classes_score(classes, embedding, 1, scores, probs, NULL) == 0)
        n = vit_classes_top_k(classes, probs, k, top, NULL);
    while (shown < n && top[shown].prob >= r->threshold) shown++;
    if (n >= 0) serve_json_top(w, top, shown, r->logits ? scores : NULL, (size_t)L);
    free(scores);
    free(probs);
    free(top);
    return n < 0 ? -1 : 0;
}

/* Input i's explanation: its typed result, its map, the model's grid and class names. */
static void write_explanation(json_writer *w, const request *r, int i) {
    const serve_explain_request *x = &r->inputs[i].job.explain;
    int gh = 0, gw = 0;
    vit_patch_grid(r->app->image, &gh, &gw);
    serve_json_explanation(w, x, x->label >= 0 ? vit_label(r->app->image, x->label) : NULL,
                           r->task == SERVE_EXPLAIN_GRAD ? "grad" : "rollout", gh, gw,
                           r->jobs[i].out);
}

static int write_result(json_writer *w, const request *r, int i) {
    const serve_job *job = &r->jobs[i];
    if (r->ep == EP_EMBEDDINGS)
        return job->status == SERVE_OK
                   ? serve_json_embedding(w, job->out,
                                          serve_task_outputs(r->app->tasks, (serve_task)job->task),
                                          r->base64, i)
                   : 0;
    if (r->ep == EP_TEXT) {
        json_key(w, "text");
        json_value_string(w, r->inputs[i].bytes.data, r->inputs[i].bytes.size);
    } else if (r->inputs[i].name) {
        json_key(w, "file");
        json_string(w, r->inputs[i].name);
    }
    if (job->status != SERVE_OK) {
        serve_error_kind kind = SERVE_ERR_INTERNAL;
        const int status = job_status(job, &kind);
        serve_json_error(w, status, kind, job->err.msg);
    } else if (r->ep == EP_EMBED) {
        serve_json_floats(w, "embedding", job->out, r->width);
    } else if (r->ep == EP_EXPLAIN) {
        write_explanation(w, r, i);
    } else if (r->ep == EP_GENERATE) {
        serve_json_generation(w, &r->inputs[i].job.gen.result, &r->gen);
    } else if (r->zero_shot) {
        return write_zero_shot(w, r, job->out);
    } else {
        return write_top(w, r, job->out);
    }
    return 0;
}

/* Input i's answer object into r->results[i] ({NULL, 0} when memory ran out). */
static void format_result(request *r, int i) {
    json_doc d;
    if (serve_doc_open(&d) != 0) return;
    const int rc = write_result(&d.w, r, i);
    json_end(&d.w);
    r->results[i] = serve_doc_close(&d, rc == 0);
}

/* The first input that failed (r->num_inputs: none). */
static int first_failed(const request *r) {
    int i = 0;
    while (i < r->num_inputs && r->jobs[i].status == SERVE_OK) i++;
    return i;
}

/* {"results": [...]} in input order, an error object for each input that failed, and the first
 * error when no input succeeded. */
static void write_results(json_writer *w, const request *r, int status) {
    json_object(w);
    if (status != HTTP_OK) {
        const serve_job *job = &r->jobs[first_failed(r)];
        serve_error_kind kind = SERVE_ERR_INTERNAL;
        const int failed = job_status(job, &kind);
        serve_json_error(w, failed, kind, job->err.msg);
    }
    json_key(w, "results");
    json_array(w);
    for (int i = 0; i < r->num_inputs; i++) json_raw(w, r->results[i].text, r->results[i].size);
    json_end(w);
    json_end(w);
}

/* /v1/embeddings's answer, OpenAI's: {"object": "list", "data": [...], "model": ..., "usage": the
 * texts' tokens}; or, when an input failed, {"error": "input[i]: why"} alone. */
static void write_embeddings(json_writer *w, const request *r, int status) {
    json_object(w);
    if (status != HTTP_OK) {
        const int i = first_failed(r);
        char msg[sizeof r->jobs[i].err.msg + 32];
        snprintf(msg, sizeof msg, "input[%d]: %s", i, r->jobs[i].err.msg);
        serve_error_kind kind = SERVE_ERR_INTERNAL;
        const int failed = job_status(&r->jobs[i], &kind);
        serve_json_error(w, failed, kind, msg);
        json_end(w);
        return;
    }
    json_key(w, "object");
    json_string(w, "list");
    json_key(w, "data");
    json_array(w);
    for (int i = 0; i < r->num_inputs; i++) json_raw(w, r->results[i].text, r->results[i].size);
    json_end(w);
    json_key(w, "model");
    json_string(w, r->app->model_name ? r->app->model_name : "");
    json_key(w, "usage");
    json_object(w);
    json_key(w, "prompt_tokens");
    json_int(w, r->tokens);
    json_key(w, "total_tokens");
    json_int(w, r->tokens);
    json_end(w);
    json_end(w);
}

/* {"results": [...]} however the inputs came (one raw image, a form, JSON images, texts): one
 * shape for every way of sending; /v1/embeddings's is OpenAI's list. */
static json_text join_results(const request *r, int status) {
    for (int i = 0; i < r->num_inputs; i++)
        if (!r->results[i].text) return (json_text){NULL, 0}; /* out of memory */
    json_doc d;
    if (serve_doc_begin(&d) != 0) return (json_text){NULL, 0};
    if (r->ep == EP_EMBEDDINGS)
        write_embeddings(&d.w, r, status);
    else
        write_results(&d.w, r, status);
    json_line(&d.w);
    return serve_doc_close(&d, 1);
}

/* A zero-shot request whose class set could not be had (embedding failed, or its job waited too
 * long): an error for the whole request. */
static json_text class_set_error(request *r, int *status) {
    const serve_job *job = &r->jobs[r->num_inputs];
    serve_error_kind kind = SERVE_ERR_INTERNAL;
    *status = job->status == SERVE_OK ? HTTP_INTERNAL_ERROR : job_status(job, &kind);
    serve_metrics_error(r->app->metrics, kind);
    json_doc d;
    if (serve_doc_open(&d) != 0) return (json_text){NULL, 0};
    char msg[sizeof job->err.msg + 64];
    snprintf(msg, sizeof msg, "the class names could not be embedded: %s",
             job->status == SERVE_OK ? r->class_request.err.msg : job->err.msg);
    serve_json_error(&d.w, *status, kind, msg);
    json_end(&d.w);
    json_line(&d.w);
    return serve_doc_close(&d, 1);
}

/* After the last job: the status (the request fails only when every input did; /v1/embeddings's
 * when any did), the metrics and the answer's bytes. */
static void prepare_answer(request *r) {
    if (r->zero_shot && !r->class_set) {
        r->prepared = class_set_error(r, &r->prepared_status);
        return;
    }
    int status = 0, images = 0, texts = 0;
    serve_error_kind kind = SERVE_ERR_INTERNAL;
    for (int i = 0; i < r->num_inputs; i++) {
        const serve_job *job = &r->jobs[i];
        const int s = job_status(job, &kind);
        const int text = job->task == SERVE_TEXT || job->task == SERVE_EMBED_TEXT;
        *(text ? &texts : &images) += s == HTTP_OK;
        if (s == HTTP_OK && job->task == SERVE_EMBED_TEXT)
            r->tokens += r->inputs[i].job.text.tokens;
        if (s == HTTP_OK && job->task == SERVE_GENERATE) /* after the start token */
            r->tokens += r->inputs[i].job.gen.result.num_ids - 1;
        if (!status || (status != HTTP_OK && s == HTTP_OK)) status = s;
    }
    if (r->ep == EP_EMBEDDINGS && first_failed(r) < r->num_inputs) { /* none is answered */
        status = job_status(&r->jobs[first_failed(r)], &kind);
        images = texts = 0;
    }
    r->images = images, r->texts = texts;
    if (images) serve_metrics_inputs(r->app->metrics, "image", images);
    if (texts) serve_metrics_inputs(r->app->metrics, "text", texts);
    if (r->ep == EP_GENERATE && r->tokens) serve_metrics_generated(r->app->metrics, r->tokens);
    if (status != HTTP_OK) serve_metrics_error(r->app->metrics, kind);
    r->prepared_status = status;
    r->prepared = join_results(r, status);
}

/* ---- jobs ---- */

/* On a batcher thread: the job's answer is written here (a zero-shot request's, once its class
 * set is there too: by the last job); the last of the request's jobs writes the whole and hands
 * the connection back to the HTTP thread (which may free the request at once: nothing of it is
 * touched after the resume). */
static void job_done(serve_job *job) {
    request *r = job->user;
    const int i = (int)(job - r->jobs);
    if (job->status != SERVE_BAD_INPUT) /* it waited for a batch */
        serve_metrics_queue_wait(r->app->metrics, job->wait_seconds);
    if (!r->zero_shot) format_result(r, i);
    if (atomic_fetch_sub(&r->remaining, 1) != 1) return;
    if (r->zero_shot && !r->class_set) r->class_set = r->class_request.set;
    for (int k = 0; r->zero_shot && r->class_set && k < r->num_inputs; k++) format_result(r, k);
    prepare_answer(r);
    MHD_resume_connection(r->conn);
}

/* Input i's job's data when its result is typed: a request with its input (and, to generate,
 * the options), where the model writes what it finds. */
static void set_job_request(request *r, int i) {
    input *in = &r->inputs[i];
    const byte_buf *b = &in->bytes;
    switch (in->task) {
    case SERVE_GENERATE:
        in->job.gen = (serve_gen_request){.image = b->data, .size = b->size, .options = r->gen};
        r->jobs[i].data = &in->job.gen;
        return;
    case SERVE_EXPLAIN_ROLLOUT:
    case SERVE_EXPLAIN_GRAD:
        in->job.explain = (serve_explain_request){.image = b->data, .size = b->size};
        r->jobs[i].data = &in->job.explain;
        return;
    case SERVE_EMBED_TEXT:
        in->job.text = (serve_text_request){.text = b->data, .size = b->size};
        r->jobs[i].data = &in->job.text;
        return;
    default:
        return; /* the bytes themselves */
    }
}

/* A job per input, each writing its floats at its own place in r->outputs; then, for a zero-shot
 * request whose class set is not cached, the set's job. */
static int make_jobs(request *r) {
    r->width = 0;
    for (int i = 0; i < r->num_inputs; i++) {
        const size_t n = serve_task_outputs(r->app->tasks, (serve_task)r->inputs[i].task);
        if (n > r->width) r->width = n;
    }
    r->num_jobs = r->num_inputs + (r->zero_shot && !r->class_set);
    r->jobs = calloc((size_t)r->num_jobs, sizeof *r->jobs);
    r->results = calloc((size_t)r->num_inputs, sizeof *r->results);
    r->outputs = malloc(sizeof(float) * (r->width ? r->width : 1) * (size_t)r->num_inputs);
    if (!r->jobs || !r->results || !r->outputs) return -1;
    for (int i = 0; i < r->num_inputs; i++) {
        r->jobs[i] = (serve_job){.task = r->inputs[i].task,
                                 .data = r->inputs[i].bytes.data,
                                 .size = r->inputs[i].bytes.size,
                                 .out = r->outputs + r->width * (size_t)i,
                                 .done = job_done,
                                 .user = r};
        set_job_request(r, i);
    }
    if (r->num_jobs > r->num_inputs) {
        r->class_request = (serve_class_request){
            .cache = r->app->classes,
            .query = {(const char *const *)r->classes.items, r->classes.count,
                      (const char *const *)r->templates.items, r->templates.count}};
        r->jobs[r->num_inputs] = (serve_job){
            .task = SERVE_CLASSES, .data = &r->class_request, .done = job_done, .user = r};
    }
    atomic_store(&r->remaining, r->num_jobs);
    return 0;
}

static enum MHD_Result refuse(request *r, serve_submit_result why) {
    if (why == SERVE_CLOSED)
        return answer_error(r, HTTP_UNAVAILABLE, SERVE_ERR_SHUTTING_DOWN, "shutting down");
    if (why == SERVE_TOO_MANY)
        return answer_error(r, HTTP_TOO_LARGE, SERVE_ERR_TOO_LARGE,
                            "%d inputs in one request%s, more than the queue holds (%d)",
                            r->num_jobs,
                            r->num_jobs > r->num_inputs ? " (its class set to embed is one)" : "",
                            r->app->max_inputs);
    return answer_error(r, HTTP_UNAVAILABLE, SERVE_ERR_QUEUE_FULL,
                        "the queue is full (%d inputs waiting); retry shortly",
                        serve_batcher_pending(r->app->batcher));
}

static int parse_body(request *r) {
    switch (r->ep) {
    case EP_TEXT:
        return parse_texts(r);
    case EP_EMBEDDINGS:
        return parse_embeddings(r);
    case EP_CLASSIFY:
        return parse_images(r) != 0 ? -1 : check_zero_shot(r);
    default:
        return parse_images(r);
    }
}

/* The body is in: its inputs become jobs (a zero-shot request's class set found in the cache, or
 * a job of its own). The connection is suspended before they are submitted, so that no job can
 * finish (and resume it) before it is suspended. */
static enum MHD_Result submit(request *r) {
    if (r->too_large)
        return answer_error(r, HTTP_TOO_LARGE, SERVE_ERR_TOO_LARGE,
                            "body of more than %zu bytes (--max-body-bytes)",
                            r->app->max_body_bytes);
    const int parsed = parse_body(r);
    if (parsed != 0 && !r->form_error[0]) return MHD_NO; /* out of memory */
    if (parsed != 0)
        return answer_error(r, r->too_many ? HTTP_TOO_LARGE : HTTP_BAD_REQUEST,
                            r->too_many        ? SERVE_ERR_TOO_LARGE
                            : r->ep == EP_TEXT ? SERVE_ERR_BAD_INPUT
                                               : SERVE_ERR_BAD_REQUEST,
                            "%s", r->form_error);
    if (r->zero_shot) {
        const serve_class_query q = {(const char *const *)r->classes.items, r->classes.count,
                                     (const char *const *)r->templates.items, r->templates.count};
        r->class_set = serve_class_cache_find(r->app->classes, &q);
    }
    if (make_jobs(r) != 0) return MHD_NO;
    r->submitted = 1;
    MHD_suspend_connection(r->conn);
    const serve_submit_result rc = serve_batcher_submit(r->app->batcher, r->jobs, r->num_jobs);
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
    if (r->images)
        at = snprintf(inputs, sizeof inputs, " %d image%s", r->images, r->images > 1 ? "s" : "");
    if (r->texts)
        snprintf(inputs + at, sizeof inputs - (size_t)at, "%s %d text%s", at ? "," : "", r->texts,
                 r->texts > 1 ? "s" : "");
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
