/* POST /v1/rerank: documents scored against a query by a cross-encoder (the --text-model), best
 * first. Jina's and llama.cpp's shape, {"query", "documents", "top_n", "return_documents",
 * "model"} -> {"model", "object": "list", "usage", "results": [{"index", "relevance_score",
 * "document": {"text"}}]}; and TEI's, {"query", "texts", "return_text", "raw_scores",
 * "truncate"} -> [{"index", "score", "text"}]. Scores are the model's activation of its logit, as
 * CrossEncoder.predict gives them (TEI's raw_scores: the logits). A pair longer than the model
 * takes is cut, unless "truncate" is false: then refused with 413 naming its length. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vit/cli/serve_call.h"

typedef struct {
    serve_call call; /* first: the call's callbacks find the state */
    int tei;         /* TEI's shape: "texts" in, a bare list out */
    int top_n;       /* 0: every document */
    int with_text, raw;
    const char *query; /* c->json's */
} rerank_state;

static const char *const jina_keys[] = {"query", "documents", "top_n", "return_documents", "model"};
static const char *const tei_keys[] = {"query", "texts", "return_text", "raw_scores", "truncate"};

static int check_keys(rerank_state *s) {
    if (s->tei)
        return serve_json_check_keys(&s->call, tei_keys, sizeof tei_keys / sizeof *tei_keys,
                                     "/v1/rerank",
                                     "TEI's \"query\", \"texts\", \"return_text\", "
                                     "\"raw_scores\", \"truncate\"");
    return serve_json_check_keys(&s->call, jina_keys, sizeof jina_keys / sizeof *jina_keys,
                                 "/v1/rerank",
                                 "\"query\", \"documents\", \"top_n\", \"return_documents\", "
                                 "\"model\" (or TEI's \"texts\")");
}

/* A boolean key (absent or null: 0). */
static int get_flag(serve_call *c, const char *key, int *out) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(c->json, key);
    if (!v || cJSON_IsNull(v)) return *out = 0, 0;
    if (!cJSON_IsBool(v)) return serve_call_fail(c, 0, "\"%s\" is not true or false", key);
    return *out = cJSON_IsTrue(v), 0;
}

static int parse_options(rerank_state *s) {
    serve_call *c = &s->call;
    const cJSON *top = cJSON_GetObjectItemCaseSensitive(c->json, "top_n"),
                *model = cJSON_GetObjectItemCaseSensitive(c->json, "model");
    if (model && !cJSON_IsString(model) && !cJSON_IsNull(model))
        return serve_call_fail(c, 0, "\"model\" is not a string");
    if (top && !cJSON_IsNull(top)) {
        if (!cJSON_IsNumber(top) || top->valuedouble < 1 || top->valuedouble > 1 << 30 ||
            top->valuedouble != (int)top->valuedouble)
            return serve_call_fail(c, 0, "\"top_n\" is not a whole number of at least 1");
        s->top_n = (int)top->valuedouble;
    }
    if (get_flag(c, s->tei ? "return_text" : "return_documents", &s->with_text) != 0 ||
        get_flag(c, "raw_scores", &s->raw) != 0)
        return -1;
    /* TEI's "truncate": absent or true, a pair too long is cut as CrossEncoder.predict cuts it;
     * false, refused (413) naming its length */
    const cJSON *truncate = cJSON_GetObjectItemCaseSensitive(c->json, "truncate");
    if (truncate && !cJSON_IsNull(truncate) && !cJSON_IsBool(truncate))
        return serve_call_fail(c, 0, "\"truncate\" is not true or false");
    c->no_truncate = cJSON_IsFalse(truncate);
    return 0;
}

/* The body: the query, and each document an input of its own. */
static int parse_rerank(rerank_state *s) {
    serve_call *c = &s->call;
    if (serve_parse_json_object(c) != 0) return -1;
    s->tei = cJSON_HasObjectItem(c->json, "texts");
    if (check_keys(s) != 0 || parse_options(s) != 0) return -1;
    const cJSON *query = cJSON_GetObjectItemCaseSensitive(c->json, "query"),
                *docs = cJSON_GetObjectItemCaseSensitive(c->json, s->tei ? "texts" : "documents");
    const char *name = s->tei ? "texts" : "documents";
    if (!cJSON_IsString(query)) return serve_call_fail(c, 0, "no \"query\" string in the body");
    if (!cJSON_IsArray(docs)) return serve_call_fail(c, 0, "no \"%s\" list in the body", name);
    if (cJSON_GetArraySize(docs) == 0) return serve_call_fail(c, 0, "\"%s\" is empty", name);
    s->query = query->valuestring;
    int i = 0;
    for (const cJSON *d = docs->child; d; d = d->next, i++) {
        if (!cJSON_IsString(d)) return serve_call_fail(c, 0, "%s[%d] is not a string", name, i);
        if (serve_call_add_input(c, NULL) != 0) return -1;
        serve_input *in = &c->inputs[c->num_inputs - 1];
        in->bytes = (byte_buf){d->valuestring, strlen(d->valuestring), 0}; /* c->json's */
        in->job.pair = (serve_pair_request){.query = s->query, .query_size = strlen(s->query)};
    }
    return 0;
}

/* the answer is written whole, sorted (write_answer) */
static int write_result(json_writer *w, const serve_call *c, int i) {
    (void)w, (void)c, (void)i;
    return 0;
}

/* best first; equal scores in the documents' order, as a stable sort leaves them. outs: the
 * documents' [logit, score] pairs, offset to the one sorted by (qsort_r: answers are written on
 * several batcher threads at once) */
static int by_score(const void *a, const void *b, void *outs) {
    const int i = *(const int *)a, j = *(const int *)b;
    const float *o = outs, si = o[2 * i], sj = o[2 * j];
    if (si != sj) return si > sj ? -1 : 1;
    return (i > j) - (i < j);
}

static void write_ranked(json_writer *w, const rerank_state *s, const int *order, int n) {
    const serve_call *c = &s->call;
    json_array(w);
    for (int k = 0; k < n; k++) {
        const int i = order[k];
        const float *out = c->jobs[i].out;
        json_object(w);
        json_key(w, "index");
        json_int(w, i);
        json_key(w, s->tei ? "score" : "relevance_score");
        json_float(w, out[s->raw ? 0 : 1]);
        if (s->with_text) {
            const byte_buf *b = &c->inputs[i].bytes;
            json_key(w, s->tei ? "text" : "document");
            if (!s->tei) json_object(w), json_key(w, "text");
            json_value_string(w, b->data, b->size);
            if (!s->tei) json_end(w);
        }
        json_end(w);
    }
    json_end(w);
}

static void write_error(json_writer *w, const serve_call *c) {
    int i = 0;
    while (c->jobs[i].status == SERVE_OK) i++;
    char msg[sizeof c->jobs[i].err.msg + 32];
    snprintf(msg, sizeof msg, "document %d: %s", i, c->jobs[i].err.msg);
    serve_error_kind kind = SERVE_ERR_INTERNAL;
    const int failed = serve_job_status(&c->jobs[i], &kind);
    json_object(w);
    serve_json_error(w, failed, kind, msg);
    json_end(w);
}

/* Jina's object, or TEI's list; or, when a document failed, that error alone. */
static void write_answer(json_writer *w, const serve_call *c, int status) {
    const rerank_state *s = (const rerank_state *)c;
    if (status != HTTP_OK) return write_error(w, c);
    int *order = malloc(sizeof *order * (size_t)c->num_inputs);
    if (!order) return write_error(w, c); /* out of memory: the first job's (none) */
    for (int i = 0; i < c->num_inputs; i++) order[i] = i;
    qsort_r(order, (size_t)c->num_inputs, sizeof *order, by_score, c->outputs + (s->raw ? 0 : 1));
    const int n = s->top_n > 0 && s->top_n < c->num_inputs ? s->top_n : c->num_inputs;
    if (!s->tei) {
        json_object(w);
        json_key(w, "model");
        json_string(w, c->app->model_name ? c->app->model_name : "");
        json_key(w, "object");
        json_string(w, "list");
        json_key(w, "usage");
        json_object(w);
        json_key(w, "prompt_tokens");
        json_int(w, c->tokens);
        json_key(w, "total_tokens");
        json_int(w, c->tokens);
        json_end(w);
        json_key(w, "results");
    }
    write_ranked(w, s, order, n);
    if (!s->tei) json_end(w);
    free(order);
}

int serve_rerank_begin(http_request *req, http_answer *now) {
    const serve_app *app = req->app;
    if (!app->text) return serve_refuse_missing(req, now, 1), 1;
    vit_model_info info;
    vit_text_model_info(app->text, &info);
    if (!(info.capabilities & VIT_CAN_CLASSIFY) || vit_text_num_labels(app->text) != 1)
        return http_error(req, now, HTTP_NOT_FOUND, SERVE_ERR_NOT_FOUND,
                          "/v1/rerank: %s is not a cross-encoder (a sequence classifier with one "
                          "label; this one gives %d outputs)",
                          info.architecture, vit_text_num_labels(app->text)),
               1;
    rerank_state *s = calloc(1, sizeof *s);
    if (!s) return *now = (http_answer){0}, 1;
    req->state = s;
    static const serve_call_ops ops = {.write_result = write_result, .write_answer = write_answer};
    serve_call_init(&s->call, req, SERVE_RERANK, &ops);
    if (req->num_query > 0) {
        serve_unknown_param(&s->call, req->query[0].key);
        return serve_call_refuse(&s->call, now, SERVE_ERR_BAD_REQUEST), 1;
    }
    return 0;
}

int serve_rerank_handle(http_request *req, http_answer *now) {
    rerank_state *s = req->state;
    if (parse_rerank(s) != 0) return serve_call_refuse(&s->call, now, SERVE_ERR_BAD_REQUEST);
    return serve_call_submit(&s->call, now);
}

void serve_rerank_free(http_request *req) {
    rerank_state *s = req->state;
    serve_call_free(&s->call);
    free(s);
}
