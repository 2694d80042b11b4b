#ifndef VIT_CLI_SERVE_H
#define VIT_CLI_SERVE_H

/* `vit serve`: the HTTP layer (libmicrohttpd) over the batcher of vit/serve. serve.c reads the
 * options, loads the models and runs the lifecycle; serve_http.c, the transport, hands each
 * request whole to its endpoint's handler (serve_route.h: serve_classify.c, serve_embed.c, ...);
 * serve_model.c describes the models (GET /v1/model). */

#include <stdatomic.h>
#include <stddef.h>

#include "vit/serve/access.h"
#include "vit/serve/batcher.h"
#include "vit/serve/class_sets.h"
#include "vit/serve/metrics.h"
#include "vit/serve/tasks.h"
#include "vit/vit.h"

typedef struct {
    /* options */
    const char *host;
    int port;                   /* 0: any free port */
    int max_connections;        /* clients connected at once */
    int timeout_s;              /* idle connections, a body's upload, a job's wait in the queue */
    size_t max_body_bytes;      /* a request's body */
    int max_inputs;             /* images or texts in one request (the queue's size) */
    int quiet;                  /* no request log */
    int max_classes;            /* class names in one zero-shot request */
    int max_prompts;            /* class names times templates in one zero-shot request */
    const serve_access *access; /* API keys and CORS origins (NULL: open to all, no CORS) */
    /* what serves */
    vit_gen_context *gen;         /* an image-to-text model (image is then its encoder), or NULL */
    vit_gen_options gen_defaults; /* its generation settings, which a request's options change */
    int max_beams;                /* the most beams a request may ask for (--max-beams) */
    vit_context *image;           /* NULL: no image model */
    vit_text_context *text;       /* NULL: no text model; a joint image model's: its text tower */
    const char *model_name;       /* "model" in /v1/embeddings answers: the model folder's name */
    const char *text_model_name;  /* a text model's folder's name, served beside an image model
                                   * (NULL: none, or the joint model's own tower) */
    const char *model_json;       /* the GET /v1/model answer */
    serve_class_cache *classes;   /* zero-shot class sets (a joint model with its text tower) */
    serve_tasks *tasks;
    serve_batcher *batcher;
    serve_metrics *metrics;
    double started; /* seconds since the epoch */
    /* state, shared by the HTTP threads, the batcher's and the main thread */
    atomic_int in_flight;   /* requests begun and not yet completed */
    atomic_int connections; /* open client connections */
    atomic_int draining;    /* shutting down: new requests get 503 */
    atomic_int loading;     /* the models are loading: /health says so, the rest get 503; what
                             * serves (above) is read only once this is 0 */
} serve_app;

typedef struct serve_http serve_http;

/* Listens on app->host:app->port and serves from its own threads; app->metrics must be there
 * already, what serves only once app->loading is 0. Writes the address it listens on
 * ("127.0.0.1:8080", "[::1]:8080") into bound. NULL with err (a one-line reason: the port in use,
 * an unknown host) when it cannot. */
serve_http *serve_http_start(serve_app *app, char *bound, size_t size, vit_error *err);
/* Stops accepting connections (the listening socket is closed); requests under way go on. */
void serve_http_quiesce(serve_http *h);
/* Closes every connection and stops the threads (the batcher must have no job left). */
void serve_http_stop(serve_http *h);

/* GET /v1/model's answer: what `vit info` says of the models, as one JSON object (malloc'ed).
 * gen: image is its encoder, and the decoder and the generation settings are described too. */
char *serve_model_json(const char *image_dir, const vit_context *image, const vit_gen_context *gen,
                       const char *text_dir, const vit_text_context *text);

#endif
