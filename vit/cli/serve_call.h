/* What vit serve's POST handlers share (serve_route.h): a request's inputs (images or texts, from
 * a raw body, a form's parts, JSON's data URLs or texts: serve_inputs.c parses them), one job per
 * input on the batcher, each input's result written as its job finishes (the handler's
 * write_result), and the answer, {"results": [...]} in input order, assembled by the last job and
 * handed to the transport. */
#ifndef VIT_CLI_SERVE_CALL_H
#define VIT_CLI_SERVE_CALL_H

#include <stdatomic.h>

#include <cjson/cJSON.h>

#include "vit/cli/serve_route.h"

/* One image or text of a request. */
typedef struct {
    const char *name; /* a form part's file name (the part's), or NULL */
    byte_buf bytes;   /* its own (owned: a data URL's, decoded), or a view (cap 0) of a part, the
                       * body or a JSON text */
    int owned;
    int task; /* its job's serve_task */
    union {   /* what its job asks and gets, for the tasks whose results are typed */
        serve_gen_request gen;         /* SERVE_GENERATE */
        serve_explain_request explain; /* SERVE_EXPLAIN_* */
        serve_text_request text;       /* SERVE_EMBED_TEXT */
        serve_pair_request pair;       /* SERVE_RERANK: the handler sets the query */
        serve_tag_request tag;         /* SERVE_TAG: the handler gives it its ids' room */
    } job;
} serve_input;

typedef struct serve_call serve_call;

/* What a handler gives its call: how the body's parts and keys are taken, how a result and the
 * answer are written. */
typedef struct {
    /* a form part other than "image": 0 taken, -1 refused with the reason, 1 not one it takes
     * (NULL: none); the form once read (NULL: nothing to check); a key of a JSON body (NULL: JSON
     * is not taken); the options an unexpected form field's error names (NULL: none) */
    int (*form_field)(serve_call *c, const http_part *part);
    int (*form_done)(serve_call *c);
    int (*json_key)(serve_call *c, const cJSON *item);
    const char *form_options;
    /* input i's result (its job done with SERVE_OK) into w, -1 when memory ran out */
    int (*write_result)(json_writer *w, const serve_call *c, int i);
    /* the whole answer (NULL: {"results": [...]}, an error object in each failed input's place) */
    void (*write_answer)(json_writer *w, const serve_call *c, int status);
    /* once the last job is done, before the results are written (NULL: nothing to do): 0 to
     * answer, else 1 with the answer it made */
    int (*finish)(serve_call *c, http_answer *answer);
} serve_call_ops;

struct serve_call {
    http_request *req;
    serve_app *app;
    int task; /* the task of the inputs to come */
    serve_input *inputs;
    int num_inputs;
    cJSON *json;               /* a JSON body, whose strings the inputs may view */
    char error[320];           /* why the request is refused */
    int too_many;              /* a limit exceeded (413): more inputs than the queue holds, ... */
    long long tokens;          /* texts' tokens embedded, tokens generated */
    int no_truncate;           /* "truncate": false: a text too long is refused (413), not cut */
    const serve_call_ops *ops; /* the handler's */
    int results_late;          /* the results are written once every job is done (after finish) */
    serve_job extra; /* a job after the inputs' (its task SERVE_TASKS: none), jobs[num_inputs] */
    const vit_gen_options *gen_options; /* SERVE_GENERATE's inputs' options */
    /* the jobs */
    serve_job *jobs;
    int num_jobs;
    float *outputs;
    size_t width;
    atomic_int remaining;
    json_text *results;
};

/* A call's beginning (task: its inputs', unless each is given its own). */
void serve_call_init(serve_call *c, http_request *req, int task, const serve_call_ops *ops);
void serve_call_free(serve_call *c);

/* The reason a request is refused, into c->error: 413 when a limit is exceeded (limit 1), else
 * 400. Returns -1. */
int serve_call_fail(serve_call *c, int limit, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* A refusal's answer from c->error (kind for a 400: its kind in /metrics). */
int serve_call_refuse(serve_call *c, http_answer *now, serve_error_kind kind);

/* A new input (name: a form part's file name, or NULL) with the call's task; -1 with the reason
 * when there are more than the queue holds, or out of memory (error empty). */
int serve_call_add_input(serve_call *c, const char *name);

/* The query's values. -1 when s is not an integer in lo..hi, a number in lo..hi, a flag (1, true,
 * yes, "", 0, false, no). */
int serve_parse_int(const char *s, int lo, int hi, int *out);
int serve_parse_number(const char *s, double lo, double hi, double *out);
int serve_parse_flag(const char *s, int *out);
/* "unknown query parameter 'key' (PATH takes PARAMS)" into c->error. Returns -1. */
int serve_unknown_param(serve_call *c, const char *key);

/* The inputs become jobs and are submitted (the connection suspended first): 1 when they were, 0
 * with the refusal in *now (a full queue, shutting down, too many inputs; out of memory: a NULL
 * body). */
int serve_call_submit(serve_call *c, http_answer *now);

/* The job's status as HTTP's, its kind for an error. */
int serve_job_status(const serve_job *job, serve_error_kind *kind);

/* Whether the image model is a joint one (CLIP, SigLIP). */
int serve_is_joint(const serve_app *app);

/* A classification's options (/v1/classify, /v1/text): ?k=5&threshold=0&logits=0. */
typedef struct {
    int k, logits;
    double threshold;
} serve_top_options;
/* A query parameter that may be one of them: 0 taken, -1 invalid (the reason in c->error), 1 not
 * one of them. */
int serve_top_param(serve_call *c, serve_top_options *o, const char *key, const char *value);
/* "invalid KEY 'VALUE' (WHAT)" into c->error. Returns -1. */
int serve_invalid_param(serve_call *c, const char *key, const char *value, const char *what);
/* "top" (and "logits") of one input's logits, its model's labels (the text model's for
 * SERVE_TEXT): as `vit classify --json` and `vit text --json` print. -1: out of memory. */
int serve_write_top(json_writer *w, const serve_call *c, const serve_top_options *o,
                    const float *logits);
/* The endpoint needs a model that is not served (text 1: a text model): 404 saying how to serve
 * it. */
int serve_refuse_missing(http_request *req, http_answer *now, int text);

/* ---- serve_inputs.c: the body's inputs ---- */

/* A string that is an image: a data URL of an image type ("data:image/png;base64,..."). */
int serve_is_image_url(const char *s);
/* Input i, a data URL of an image (s), decoded into its own bytes (what names it in errors). */
int serve_decode_data_url(serve_call *c, int i, const char *what, const char *s);
/* Whether the body's Content-Type is want ("application/json"). */
int serve_has_type(const http_request *req, const char *want);
/* The image inputs of a body: a form's "image" parts (others to c->form_field), a JSON object
 * (each key to c->json_key: "images" to serve_json_images) or the body itself as one image. */
int serve_parse_images(serve_call *c);
/* A JSON body's "images": a list of data URLs, each an input. */
int serve_json_images(serve_call *c, const cJSON *item);
/* The body as a JSON object into c->json; -1 with the reason. */
int serve_parse_json_object(serve_call *c);
/* Every key of c->json one of keys[0..n), else -1 with "unknown key ... (a JSON body of
 * `endpoint` has `listed`)": any other key is refused, as everywhere. */
int serve_json_check_keys(serve_call *c, const char *const *keys, size_t n, const char *endpoint,
                          const char *listed);

#endif
