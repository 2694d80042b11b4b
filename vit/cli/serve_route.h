/* Between vit serve's transport and its handlers, as llama.cpp's tools/server/server-http.h
 * separates them: the transport (serve_http.c, libmicrohttpd) reads a request whole, its route,
 * query, headers, body and, for a multipart form, its parts, and hands it to its endpoint's
 * handler, one per endpoint, each in its own file with its own state (serve_info.c: the GET
 * endpoints; serve_classify.c, serve_embed.c, serve_text.c, serve_embeddings.c,
 * serve_generate.c, serve_explain.c, serve_rerank.c). A handler answers at once, or submits jobs
 * and answers from the batcher thread that finishes the last of them (serve_call.h). Nothing here
 * includes libmicrohttpd. */
#ifndef VIT_CLI_SERVE_ROUTE_H
#define VIT_CLI_SERVE_ROUTE_H

#include <stddef.h>

#include "vit/base/bytes.h"
#include "vit/cli/serve.h"
#include "vit/cli/serve_results.h"

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
    EP_RERANK,
    EP_OTHER
} serve_route;

/* A query parameter (a key without a value has ""). */
typedef struct {
    char *key, *value;
} http_field;

/* A part of a multipart/form-data body: its field's name (NULL: its Content-Disposition had
 * none), its file name (NULL: none) and its bytes. */
typedef struct {
    char *name, *filename;
    byte_buf bytes;
} http_part;

/* An answer: its status and body (malloc'ed, taken by the transport; static when persistent; NULL:
 * out of memory, the connection is closed). content_type NULL: application/json. */
typedef struct {
    int status;
    const char *content_type;
    char *body;
    size_t size;
    int persistent;
} http_answer;

typedef struct http_request http_request;
struct http_request {
    serve_app *app;
    serve_route route;
    const char *method;
    http_field *query; /* in the order given */
    int num_query;
    const char *content_type; /* the header's value (NULL: none) */
    byte_buf body;
    int form;             /* a multipart/form-data body, read into parts */
    http_part *parts;     /* in the order they came */
    int num_parts;        /* the last may be cut short when form_error says why */
    char form_error[160]; /* why the form could not be read whole ("": it was) */
    int images, texts;    /* the inputs answered, for the request log */
    void *state;          /* the handler's, freed by its free */
};

typedef struct {
    const char *path;
    int post;           /* POST only; else GET and HEAD */
    const char *params; /* the query parameters it takes, for its errors */
    int open;           /* no API key needed: a load balancer's probe has none, the page asks */
    /* Before the body is read (the query and headers only): 0 to go on, else 1 with a refusal in
     * *now, answered before the body. NULL: nothing to check. */
    int (*begin)(http_request *req, http_answer *now);
    /* The whole request: 0 with its answer in *now, or 1 when the answer comes later, by
     * http_answer_later after http_suspend. */
    int (*handle)(http_request *req, http_answer *now);
    void (*free)(http_request *req); /* its state (NULL: none) */
} serve_endpoint;

/* /v1/generate's options, as vit generate's: transformers' GenerationConfig's names. */
#define GEN_OPTION_NAMES                                                                           \
    "num_beams, max_new_tokens, min_length, length_penalty, no_repeat_ngram_size, early_stopping"

/* The handlers, each endpoint's in its own file (serve_info.c: the GET endpoints'). */
int serve_info_handle(http_request *req, http_answer *now);
#define SERVE_HANDLER(name)                                                                        \
    int serve_##name##_begin(http_request *req, http_answer *now);                                 \
    int serve_##name##_handle(http_request *req, http_answer *now);                                \
    void serve_##name##_free(http_request *req)
SERVE_HANDLER(classify);
SERVE_HANDLER(embed);
SERVE_HANDLER(text);
SERVE_HANDLER(embeddings);
SERVE_HANDLER(generate);
SERVE_HANDLER(explain);
SERVE_HANDLER(rerank);
#undef SERVE_HANDLER

/* Indexed by serve_route (serve_info.c); EP_OTHER's is only a name for the metrics. */
extern const serve_endpoint serve_endpoints[EP_OTHER + 1];

/* The transport's, for handlers. Before submitting jobs that answer: the connection waits for the
 * answer (no job can finish before it waits). */
void http_suspend(http_request *req);
/* Once, from any thread, after http_suspend: the answer (taken). Nothing of req may be touched
 * after it: the transport may free it at once. */
void http_answer_later(http_request *req, http_answer answer);

/* A JSON error answer (OpenAI's shape), counted in /metrics by kind. Returns 0 (for handle). */
int http_error(http_request *req, http_answer *now, int status, serve_error_kind kind,
               const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* A document's answer: d's object closed and a newline (body NULL when memory ran out). */
http_answer http_json_answer(int status, json_doc *d);

#endif
