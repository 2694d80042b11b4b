/* vit serve's answers as JSON, one writer per result type (as llama.cpp's task results each have
 * their to_json): the error object, a classification's top-k, an embedding, a generation, an
 * explanation and the list of models. Nothing here knows HTTP beyond the status an error's type
 * is named by; serve_http.c assembles a request's results into its answer. */
#ifndef VIT_CLI_SERVE_RESULTS_H
#define VIT_CLI_SERVE_RESULTS_H

#include <stddef.h>
#include <stdio.h>

#include "vit/cli/json_writer.h"
#include "vit/serve/metrics.h"
#include "vit/serve/tasks.h"
#include "vit/vit.h"

/* The status codes vit serve answers with. */
enum {
    HTTP_OK = 200,
    HTTP_NO_CONTENT = 204,
    HTTP_BAD_REQUEST = 400,
    HTTP_UNAUTHORIZED = 401,
    HTTP_NOT_FOUND = 404,
    HTTP_METHOD_NOT_ALLOWED = 405,
    HTTP_TOO_LARGE = 413,
    HTTP_INTERNAL_ERROR = 500,
    HTTP_UNAVAILABLE = 503
};

/* A JSON document in memory (malloc'ed). */
typedef struct {
    char *text;
    size_t size;
} json_text;

/* A JSON document being written into a fresh buffer. */
typedef struct {
    char *text;
    size_t size;
    FILE *out;
    json_writer w;
} json_doc;

/* Begins a document; serve_doc_open: one that is an object (its keys to come). -1: no memory. */
int serve_doc_begin(json_doc *d);
int serve_doc_open(json_doc *d);
/* The document written, or {NULL, 0} when memory ran out (ok 0: discarded). */
json_text serve_doc_close(json_doc *d, int ok);

/* "error": OpenAI's {"message", "type" (by the status, as OpenAI and llama.cpp name them),
 * "code" (the kind /metrics counts it by)}: every error vit serve writes has this shape. */
void serve_json_error(json_writer *w, int status, serve_error_kind kind, const char *msg);

/* key: [x[0], ..., x[n-1]]. */
void serve_json_floats(json_writer *w, const char *key, const float *x, size_t n);

/* A classification's "top" (the first shown of top's predictions) and, when logits is not NULL,
 * its "logits" (n_logits of them): as `vit classify --json` prints. */
void serve_json_top(json_writer *w, const vit_prediction *top, int shown, const float *logits,
                    size_t n_logits);

/* One of /v1/embeddings's "data": the embedding (n floats) as numbers or as base64 of their
 * little-endian bytes (what OpenAI's clients decode), and its index. -1: no memory. */
int serve_json_embedding(json_writer *w, const float *x, size_t n, int base64, int index);

/* One image's text: as `vit generate --json` prints it, and the options it ran with (the model's,
 * with the request's over them). */
void serve_json_generation(json_writer *w, const vit_generation *g, const vit_gen_options *o);

/* Where the model looked in one image: the class explained ("index", and its name as "label", as
 * "top" has them; name NULL: a model without classes, no label nor probability), the method, the
 * map (grid_h x grid_w, one value per patch, scaled here to 0..1) and where it lies in the image
 * (the image's size as decoded, upright, and the region of it the input is: the page draws the
 * map there). */
void serve_json_explanation(json_writer *w, const serve_explain_request *x, const char *name,
                            const char *method, int grid_h, int grid_w, const float *map);

/* One of GET /v1/models's "data": a model served, by its folder's name. */
void serve_json_model_entry(json_writer *w, const char *name, double created);

#endif
