/* vit serve's routes (serve_route.h) and its GET endpoints: the web page, /health, /metrics,
 * /v1/model (what `vit info` says of the models) and /v1/models (OpenAI's list). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vit/cli/serve_page.h"
#include "vit/cli/serve_route.h"

#define POST_HANDLER(name)                                                                         \
    .begin = serve_##name##_begin, .handle = serve_##name##_handle, .free = serve_##name##_free

const serve_endpoint serve_endpoints[EP_OTHER + 1] = {
    [EP_PAGE] = {"/", 0, "", 1, .handle = serve_info_handle},
    [EP_HEALTH] = {"/health", 0, "", 1, .handle = serve_info_handle},
    [EP_METRICS] = {"/metrics", 0, "", .handle = serve_info_handle},
    [EP_MODEL] = {"/v1/model", 0, "", .handle = serve_info_handle},
    [EP_MODELS] = {"/v1/models", 0, "", .handle = serve_info_handle},
    [EP_CLASSIFY] = {"/v1/classify", 1, "k, threshold, logits; a joint model: classes, template",
                     POST_HANDLER(classify)},
    [EP_EMBED] = {"/v1/embed", 1, "pool", POST_HANDLER(embed)},
    [EP_TEXT] = {"/v1/text", 1, "k, threshold, logits", POST_HANDLER(text)},
    [EP_EMBEDDINGS] = {"/v1/embeddings", 1, "none", POST_HANDLER(embeddings)},
    [EP_GENERATE] = {"/v1/generate", 1, GEN_OPTION_NAMES, POST_HANDLER(generate)},
    [EP_EXPLAIN] = {"/v1/explain", 1, "method", POST_HANDLER(explain)},
    [EP_RERANK] = {"/v1/rerank", 1, "none", POST_HANDLER(rerank)},
    [EP_OTHER] = {"other", 0, ""},
};

/* The page built into the binary (static bytes: nothing to free). */
static http_answer page(void) {
    return (http_answer){.status = HTTP_OK,
                         .content_type = "text/html; charset=utf-8",
                         .body = (char *)serve_page_html,
                         .size = serve_page_html_size,
                         .persistent = 1};
}

static http_answer health(const serve_app *app) {
    json_doc d;
    if (serve_doc_open(&d) != 0) return (http_answer){0};
    json_key(&d.w, "status");
    json_string(&d.w, "ok");
    json_key(&d.w, "queued");
    json_int(&d.w, serve_batcher_pending(app->batcher));
    return http_json_answer(HTTP_OK, &d);
}

static http_answer metrics(serve_app *app) {
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    if (!out) return (http_answer){0};
    serve_gauges g = {.queued = serve_batcher_pending(app->batcher),
                      .in_flight = atomic_load(&app->in_flight),
                      .connections = atomic_load(&app->connections),
                      .started = app->started};
    serve_class_stats classes;
    if (app->classes) {
        classes = serve_class_cache_stats(app->classes);
        g.classes = &classes;
    }
    long long tokens[3];
    if (app->text && app->tasks) {
        serve_tasks_padding(app->tasks, &tokens[0], &tokens[1], &tokens[2]);
        g.text_tokens = tokens;
    }
    serve_metrics_write(app->metrics, &g, out);
    fclose(out);
    return (http_answer){.status = HTTP_OK,
                         .content_type = "text/plain; version=0.0.4; charset=utf-8",
                         .body = text,
                         .size = size};
}

static http_answer model(const serve_app *app) {
    char *copy = strdup(app->model_json);
    return (http_answer){.status = HTTP_OK, .body = copy, .size = copy ? strlen(copy) : 0};
}

/* OpenAI's list of models: the image model's folder, and a text model's served beside it (a
 * joint model's text tower is the same folder: one entry). GET /v1/model describes them. */
static http_answer models(const serve_app *app) {
    json_doc d;
    if (serve_doc_open(&d) != 0) return (http_answer){0};
    json_key(&d.w, "object");
    json_string(&d.w, "list");
    json_key(&d.w, "data");
    json_array(&d.w);
    if (app->model_name) serve_json_model_entry(&d.w, app->model_name, app->started);
    if (app->text_model_name) serve_json_model_entry(&d.w, app->text_model_name, app->started);
    json_end(&d.w);
    return http_json_answer(HTTP_OK, &d);
}

int serve_info_handle(http_request *req, http_answer *now) {
    switch (req->route) {
    case EP_PAGE:
        *now = page();
        break;
    case EP_HEALTH:
        *now = health(req->app);
        break;
    case EP_METRICS:
        *now = metrics(req->app);
        break;
    case EP_MODEL:
        *now = model(req->app);
        break;
    default:
        *now = models(req->app);
    }
    return 0;
}
