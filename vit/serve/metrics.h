#ifndef VIT_SERVE_METRICS_H
#define VIT_SERVE_METRICS_H

/* What `vit serve` counts, written in Prometheus's text exposition format (0.0.4): counters, and
 * histograms as cumulative _bucket{le="..."} lines with _sum and _count. Every function may be
 * called from any thread. Label values come from fixed sets chosen by the caller (endpoints,
 * status codes, error kinds), so the series stay few whatever clients send. */

#include <stdio.h>

#include "vit/serve/class_sets.h"

typedef struct serve_metrics serve_metrics;

/* max_batch sets the batch-size histogram's buckets (powers of two up to it, and it). NULL when
 * out of memory. */
serve_metrics *serve_metrics_create(int max_batch);
void serve_metrics_free(serve_metrics *m);

/* A request answered: by endpoint ("/v1/classify", ..., "other") and status code. */
void serve_metrics_request(serve_metrics *m, const char *endpoint, int code, double seconds);
/* Why a request was refused (each kind is a series of vit_serve_errors_total, shown from 0). */
typedef enum {
    SERVE_ERR_BAD_REQUEST, /* a malformed query, form or request */
    SERVE_ERR_BAD_INPUT,   /* an image that cannot be decoded, a text request's bad JSON */
    SERVE_ERR_TOO_LARGE,   /* a body over --max-body-bytes, too many images or texts */
    SERVE_ERR_NOT_FOUND,   /* an unknown path, or a model not loaded */
    SERVE_ERR_METHOD,      /* a method the path does not take */
    SERVE_ERR_QUEUE_FULL,  /* refused for want of room in the queue */
    SERVE_ERR_TIMEOUT,     /* waited too long in the queue, or a body too slow to arrive */
    SERVE_ERR_SHUTTING_DOWN,
    SERVE_ERR_INTERNAL,     /* a forward pass that failed, out of memory */
    SERVE_ERR_UNAUTHORIZED, /* no API key, or a wrong one (--api-key) */
    SERVE_ERR_LOADING,      /* the models were still loading */
    SERVE_ERR_KINDS
} serve_error_kind;
const char *serve_error_kind_name(serve_error_kind kind);
void serve_metrics_error(serve_metrics *m, serve_error_kind kind);
/* Inputs answered successfully, by kind ("image", "text"). */
void serve_metrics_inputs(serve_metrics *m, const char *kind, int n);
/* Tokens generated for images answered (the start tokens not counted). */
void serve_metrics_generated(serve_metrics *m, long long tokens);
/* One job's time from submission to the start of its forward pass. */
void serve_metrics_queue_wait(serve_metrics *m, double seconds);
/* One forward pass: its task ("classify", "embed", "text", "generate"), size and duration. */
void serve_metrics_batch(serve_metrics *m, const char *task, int size, double seconds);

/* Values read at the time of writing. */
typedef struct {
    int queued;                       /* jobs in the batcher */
    int in_flight;                    /* requests being received or answered */
    int connections;                  /* open client connections */
    double started;                   /* the process's start, seconds since the epoch */
    const serve_class_stats *classes; /* zero-shot's class sets (NULL: no zero-shot served) */
    /* texts' tokens run, the places they took padded, and what one pass per batch would have
     * taken (serve_tasks_padding); NULL: no text model served */
    const long long *text_tokens; /* [3] */
} serve_gauges;

/* Every metric, zero-shot's class sets when served, then the process's resident memory and start
 * time. */
void serve_metrics_write(serve_metrics *m, const serve_gauges *g, FILE *out);

#endif
