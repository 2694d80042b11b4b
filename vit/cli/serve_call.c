/* What vit serve's POST handlers share: inputs, their jobs and the answer (serve_call.h). A
 * request's inputs become jobs, the connection waits (suspended) while they wait for their batch,
 * each job's result is written by the batcher thread that finishes it, and the last one assembles
 * the whole answer and hands it to the transport, so that libmicrohttpd's thread only queues its
 * bytes. */
#include "vit/cli/serve_call.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void serve_call_init(serve_call *c, http_request *req, int task, const serve_call_ops *ops) {
    memset(c, 0, sizeof *c);
    c->req = req;
    c->app = req->app;
    c->task = task;
    c->ops = ops;
    c->extra.task = SERVE_TASKS;
}

void serve_call_free(serve_call *c) {
    for (int i = 0; i < c->num_inputs; i++) {
        serve_input *in = &c->inputs[i];
        if (in->owned) byte_buf_free(&in->bytes);
        if (in->task == SERVE_GENERATE) vit_generation_free(&in->job.gen.result, 1);
        if (in->task == SERVE_TAG)
            free(in->job.tag.ids), free(in->job.tag.starts), free(in->job.tag.ends);
    }
    free(c->inputs);
    cJSON_Delete(c->json);
    for (int i = 0; c->results && i < c->num_inputs; i++) free(c->results[i].text);
    free(c->results);
    free(c->jobs);
    free(c->outputs);
}

int serve_call_fail(serve_call *c, int limit, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->error, sizeof c->error, fmt, ap);
    va_end(ap);
    c->too_many = limit;
    return -1;
}

int serve_call_refuse(serve_call *c, http_answer *now, serve_error_kind kind) {
    if (!c->error[0]) return *now = (http_answer){0}, 0; /* out of memory */
    return http_error(c->req, now, c->too_many ? HTTP_TOO_LARGE : HTTP_BAD_REQUEST,
                      c->too_many ? SERVE_ERR_TOO_LARGE : kind, "%s", c->error);
}

int serve_call_add_input(serve_call *c, const char *name) {
    if (c->num_inputs >= c->app->max_inputs) {
        const serve_route route = c->req->route;
        return serve_call_fail(c, 1,
                               "more than %d %s in one request (the queue's size, --max-queue)",
                               c->app->max_inputs,
                               route == EP_TEXT         ? "texts"
                               : route == EP_EMBEDDINGS ? "inputs"
                               : route == EP_RERANK     ? "documents"
                                                        : "images");
    }
    serve_input *grown = realloc(c->inputs, sizeof *grown * (size_t)(c->num_inputs + 1));
    if (!grown) return -1;
    c->inputs = grown;
    c->inputs[c->num_inputs++] = (serve_input){.name = name, .task = c->task};
    return 0;
}

int serve_parse_int(const char *s, int lo, int hi, int *out) {
    char *end;
    errno = 0;
    const long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) return -1;
    *out = (int)v;
    return 0;
}

int serve_parse_number(const char *s, double lo, double hi, double *out) {
    char *end;
    const double v = strtod(s, &end);
    if (end == s || *end || !(v >= lo && v <= hi)) return -1;
    *out = v;
    return 0;
}

int serve_parse_flag(const char *s, int *out) {
    static const char *yes[] = {"1", "true", "yes", ""}, *no[] = {"0", "false", "no"};
    for (int i = 0; i < 4; i++)
        if (strcasecmp(s, yes[i]) == 0) return *out = 1, 0;
    for (int i = 0; i < 3; i++)
        if (strcasecmp(s, no[i]) == 0) return *out = 0, 0;
    return -1;
}

int serve_unknown_param(serve_call *c, const char *key) {
    const serve_endpoint *e = &serve_endpoints[c->req->route];
    return serve_call_fail(c, 0, "unknown query parameter '%.40s' (%s takes %s)", key, e->path,
                           e->params);
}

int serve_is_joint(const serve_app *app) {
    return app->image && vit_joint_dim(app->image) > 0;
}

int serve_job_status(const serve_job *job, serve_error_kind *kind) {
    switch (job->status) {
    case SERVE_OK:
        return HTTP_OK;
    case SERVE_BAD_INPUT:
        return *kind = SERVE_ERR_BAD_INPUT, HTTP_BAD_REQUEST;
    case SERVE_EXPIRED:
        return *kind = SERVE_ERR_TIMEOUT, HTTP_UNAVAILABLE;
    case SERVE_TOO_LONG: /* as TEI answers a text it is told not to truncate */
        return *kind = SERVE_ERR_TOO_LARGE, HTTP_TOO_LARGE;
    default:
        return *kind = SERVE_ERR_INTERNAL, HTTP_INTERNAL_ERROR;
    }
}

int http_error(http_request *req, http_answer *now, int status, serve_error_kind kind,
               const char *fmt, ...) {
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    serve_metrics_error(req->app->metrics, kind);
    json_doc d;
    if (serve_doc_open(&d) != 0) return *now = (http_answer){0}, 0;
    serve_json_error(&d.w, status, kind, msg);
    *now = http_json_answer(status, &d);
    return 0;
}

http_answer http_json_answer(int status, json_doc *d) {
    json_end(&d->w);
    json_line(&d->w);
    const json_text t = serve_doc_close(d, 1);
    return (http_answer){.status = status, .body = t.text, .size = t.size};
}

int serve_invalid_param(serve_call *c, const char *key, const char *value, const char *what) {
    return serve_call_fail(c, 0, "invalid %s '%.40s' (%s)", key, value, what);
}

int serve_top_param(serve_call *c, serve_top_options *o, const char *key, const char *value) {
    if (strcmp(key, "k") == 0)
        return serve_parse_int(value, 1, 1 << 20, &o->k) == 0
                   ? 0
                   : serve_invalid_param(c, key, value, "an integer of 1 or more");
    if (strcmp(key, "threshold") == 0)
        return serve_parse_number(value, 0.0, 1.0, &o->threshold) == 0
                   ? 0
                   : serve_invalid_param(c, key, value, "a probability, 0 to 1");
    if (strcmp(key, "logits") == 0)
        return serve_parse_flag(value, &o->logits) == 0
                   ? 0
                   : serve_invalid_param(c, key, value, "1 or 0");
    return 1;
}

static const char *image_label(const void *ctx, int index) {
    return vit_label(ctx, index);
}
static const char *text_label(const void *ctx, int index) {
    return vit_text_label(ctx, index);
}

int serve_write_top(json_writer *w, const serve_call *c, const serve_top_options *o,
                    const float *logits) {
    const int L = (int)c->width;
    const vit_labeler labeler = c->task == SERVE_TEXT ? (vit_labeler){text_label, c->app->text}
                                                      : (vit_labeler){image_label, c->app->image};
    float *probs = malloc(sizeof(float) * (size_t)L);
    vit_prediction *top = malloc(sizeof *top * (size_t)(o->k < L ? o->k : L));
    int n = -1, shown = 0;
    if (probs && top && c->task == SERVE_TEXT && L == 1) { /* vit_text_forward's sigmoid */
        probs[0] = 1.0f / (1.0f + expf(-logits[0]));
        n = vit_rank(probs, L, 0, NULL, o->k, o->threshold, &labeler, top, &shown, NULL);
    } else if (probs && top) {
        n = vit_rank(logits, L, 1, probs, o->k, o->threshold, &labeler, top, &shown, NULL);
    }
    if (n >= 0) serve_json_top(w, top, shown, o->logits ? logits : NULL, (size_t)L);
    free(probs);
    free(top);
    return n < 0 ? -1 : 0;
}

int serve_refuse_missing(http_request *req, http_answer *now, int text) {
    return http_error(req, now, HTTP_NOT_FOUND, SERVE_ERR_NOT_FOUND,
                      "%s: no %s model is served (start vit serve with %s)",
                      serve_endpoints[req->route].path, text ? "text" : "image",
                      text ? "--text-model DIR" : "-m DIR");
}

/* ---- the answer, written on the batcher's threads ---- */

/* Input i's object: a text's "text", a form part's "file", then its error or its result (the
 * handler's); of an OpenAI list (write_answer), the result alone. */
static int write_input(json_writer *w, const serve_call *c, int i) {
    const serve_input *in = &c->inputs[i];
    const serve_job *job = &c->jobs[i];
    if (c->ops->write_answer) return job->status == SERVE_OK ? c->ops->write_result(w, c, i) : 0;
    if (in->task == SERVE_TEXT || in->task == SERVE_TAG) {
        json_key(w, "text");
        json_value_string(w, in->bytes.data, in->bytes.size);
    } else if (in->name) {
        json_key(w, "file");
        json_string(w, in->name);
    }
    if (job->status == SERVE_OK) return c->ops->write_result(w, c, i);
    serve_error_kind kind = SERVE_ERR_INTERNAL;
    const int status = serve_job_status(job, &kind);
    serve_json_error(w, status, kind, job->err.msg);
    return 0;
}

/* Input i's answer object into c->results[i] ({NULL, 0} when memory ran out). */
static void format_result(serve_call *c, int i) {
    json_doc d;
    if (serve_doc_open(&d) != 0) return;
    const int rc = write_input(&d.w, c, i);
    json_end(&d.w);
    c->results[i] = serve_doc_close(&d, rc == 0);
}

static int first_failed(const serve_call *c) {
    int i = 0;
    while (i < c->num_inputs && c->jobs[i].status == SERVE_OK) i++;
    return i;
}

/* {"results": [...]} in input order, an error object for each input that failed, and the first
 * error when no input succeeded. */
static void write_results(json_writer *w, const serve_call *c, int status) {
    json_object(w);
    if (status != HTTP_OK) {
        const serve_job *job = &c->jobs[first_failed(c)];
        serve_error_kind kind = SERVE_ERR_INTERNAL;
        const int failed = serve_job_status(job, &kind);
        serve_json_error(w, failed, kind, job->err.msg);
    }
    json_key(w, "results");
    json_array(w);
    for (int i = 0; i < c->num_inputs; i++) json_raw(w, c->results[i].text, c->results[i].size);
    json_end(w);
    json_end(w);
}

static http_answer join_results(const serve_call *c, int status) {
    for (int i = 0; i < c->num_inputs; i++)
        if (!c->results[i].text) return (http_answer){0}; /* out of memory */
    json_doc d;
    if (serve_doc_begin(&d) != 0) return (http_answer){0};
    (c->ops->write_answer ? c->ops->write_answer : write_results)(&d.w, c, status);
    json_line(&d.w);
    const json_text t = serve_doc_close(&d, 1);
    return (http_answer){.status = status, .body = t.text, .size = t.size};
}

/* The status (the request fails only when every input did; an OpenAI list's when any did), the
 * counts and metrics, and the answer. */
static http_answer prepare_answer(serve_call *c) {
    const serve_app *app = c->app;
    int status = 0, images = 0, texts = 0;
    serve_error_kind kind = SERVE_ERR_INTERNAL;
    for (int i = 0; i < c->num_inputs; i++) {
        const serve_job *job = &c->jobs[i];
        const int s = serve_job_status(job, &kind);
        const int text = job->task == SERVE_TEXT || job->task == SERVE_EMBED_TEXT ||
                         job->task == SERVE_RERANK || job->task == SERVE_TAG;
        *(text ? &texts : &images) += s == HTTP_OK;
        if (s == HTTP_OK && job->task == SERVE_EMBED_TEXT)
            c->tokens += c->inputs[i].job.text.tokens;
        if (s == HTTP_OK && job->task == SERVE_RERANK) c->tokens += c->inputs[i].job.pair.tokens;
        if (s == HTTP_OK && job->task == SERVE_TAG) c->tokens += c->inputs[i].job.tag.tokens;
        if (s == HTTP_OK && job->task == SERVE_GENERATE) /* after the start token */
            c->tokens += c->inputs[i].job.gen.result.num_ids - 1;
        if (!status || (status != HTTP_OK && s == HTTP_OK)) status = s;
    }
    if (c->ops->write_answer && first_failed(c) < c->num_inputs) { /* none is answered */
        status = serve_job_status(&c->jobs[first_failed(c)], &kind);
        images = texts = 0;
    }
    c->req->images = images, c->req->texts = texts;
    if (images) serve_metrics_inputs(app->metrics, "image", images);
    if (texts) serve_metrics_inputs(app->metrics, "text", texts);
    if (c->task == SERVE_GENERATE && c->tokens) serve_metrics_generated(app->metrics, c->tokens);
    if (status != HTTP_OK) serve_metrics_error(app->metrics, kind);
    return join_results(c, status);
}

/* On a batcher thread: the job's result is written here (unless results_late: by the last job);
 * the last of the call's jobs writes the whole and hands it to the transport (which may free the
 * request at once: nothing of it is touched after). */
static void job_done(serve_job *job) {
    serve_call *c = job->user;
    if (job->status != SERVE_BAD_INPUT) /* it waited for a batch */
        serve_metrics_queue_wait(c->app->metrics, job->wait_seconds);
    const int i = (int)(job - c->jobs);
    if (!c->results_late && i < c->num_inputs) format_result(c, i);
    if (atomic_fetch_sub(&c->remaining, 1) != 1) return;
    http_answer answer;
    if (!c->ops->finish || c->ops->finish(c, &answer) == 0) {
        for (int i = 0; c->results_late && i < c->num_inputs; i++) format_result(c, i);
        answer = prepare_answer(c);
    }
    http_answer_later(c->req, answer);
}

/* Input i's job's data when its result is typed: a request with its input (and, to generate,
 * the options), where the model writes what it finds. */
static void set_job_request(serve_call *c, int i) {
    serve_input *in = &c->inputs[i];
    const byte_buf *b = &in->bytes;
    switch (in->task) {
    case SERVE_GENERATE:
        in->job.gen =
            (serve_gen_request){.image = b->data, .size = b->size, .options = *c->gen_options};
        c->jobs[i].data = &in->job.gen;
        return;
    case SERVE_EXPLAIN_ROLLOUT:
    case SERVE_EXPLAIN_GRAD:
        in->job.explain = (serve_explain_request){.image = b->data, .size = b->size};
        c->jobs[i].data = &in->job.explain;
        return;
    case SERVE_EMBED_TEXT:
        in->job.text =
            (serve_text_request){.text = b->data, .size = b->size, .no_truncate = c->no_truncate};
        c->jobs[i].data = &in->job.text;
        return;
    case SERVE_TAG: /* the ids' room is the handler's */
        in->job.tag.text = b->data, in->job.tag.size = b->size;
        c->jobs[i].data = &in->job.tag;
        return;
    case SERVE_RERANK: /* the query is the handler's */
        in->job.pair.text = b->data, in->job.pair.size = b->size;
        in->job.pair.no_truncate = c->no_truncate;
        c->jobs[i].data = &in->job.pair;
        return;
    default:
        return; /* the bytes themselves */
    }
}

/* A job per input, each writing its floats at its own place in c->outputs; then the extra job
 * (zero-shot's class set to embed), when there is one: the jobs are one array for the batcher. */
static int make_jobs(serve_call *c) {
    c->width = 0;
    for (int i = 0; i < c->num_inputs; i++) {
        const size_t n = serve_task_outputs(c->app->tasks, (serve_task)c->inputs[i].task);
        if (n > c->width) c->width = n;
    }
    const int extra = c->extra.task != SERVE_TASKS;
    c->num_jobs = c->num_inputs + extra;
    c->jobs = calloc((size_t)c->num_jobs, sizeof *c->jobs);
    c->results = calloc((size_t)c->num_inputs, sizeof *c->results);
    c->outputs = malloc(sizeof(float) * (c->width ? c->width : 1) * (size_t)c->num_inputs);
    if (!c->jobs || !c->results || !c->outputs) return -1;
    for (int i = 0; i < c->num_inputs; i++) {
        c->jobs[i] = (serve_job){.task = c->inputs[i].task,
                                 .data = c->inputs[i].bytes.data,
                                 .size = c->inputs[i].bytes.size,
                                 .out = c->outputs + c->width * (size_t)i,
                                 .done = job_done,
                                 .user = c};
        set_job_request(c, i);
    }
    if (extra) {
        c->jobs[c->num_inputs] = c->extra;
        c->jobs[c->num_inputs].done = job_done;
        c->jobs[c->num_inputs].user = c;
    }
    atomic_store(&c->remaining, c->num_jobs);
    return 0;
}

static int refuse_submit(serve_call *c, http_answer *now, serve_submit_result why) {
    if (why == SERVE_CLOSED)
        return http_error(c->req, now, HTTP_UNAVAILABLE, SERVE_ERR_SHUTTING_DOWN, "shutting down");
    if (why == SERVE_TOO_MANY)
        return http_error(c->req, now, HTTP_TOO_LARGE, SERVE_ERR_TOO_LARGE,
                          "%d inputs in one request%s, more than the queue holds (%d)", c->num_jobs,
                          c->num_jobs > c->num_inputs ? " (its class set to embed is one)" : "",
                          c->app->max_inputs);
    return http_error(c->req, now, HTTP_UNAVAILABLE, SERVE_ERR_QUEUE_FULL,
                      "the queue is full (%d inputs waiting); retry shortly",
                      serve_batcher_pending(c->app->batcher));
}

int serve_call_submit(serve_call *c, http_answer *now) {
    if (make_jobs(c) != 0) return *now = (http_answer){0}, 0;
    http_suspend(c->req);
    const serve_submit_result rc = serve_batcher_submit(c->app->batcher, c->jobs, c->num_jobs);
    if (rc == SERVE_SUBMITTED) return 1;
    return refuse_submit(c, now, rc);
}
