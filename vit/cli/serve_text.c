/* POST /v1/text: {"texts": [...]}, each text's top-k of the text model's labels, as `vit text
 * --json` prints them; a token classifier's entities, as `vit tag --json` (the pipeline's
 * aggregation_strategy a query parameter or a key of the body). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vit/cli/cli.h"
#include "vit/cli/serve_call.h"

typedef struct {
    serve_call call; /* first: the call's callbacks find the state */
    serve_top_options top;
    vit_aggregation aggregation; /* a token classifier's */
    vit_entities *entities;      /* its results, one text at a time */
} text_state;

static int write_result(json_writer *w, const serve_call *c, int i) {
    return serve_write_top(w, c, &((const text_state *)c)->top, c->jobs[i].out);
}

/* "entities": the text's, as the token-classification pipeline gives them (vit tag's). */
static int write_tags(json_writer *w, const serve_call *c, int i) {
    text_state *s = (text_state *)c;
    const serve_tag_request *req = &c->inputs[i].job.tag;
    const vit_entity *e;
    vit_error err = {0};
    if (!req->offsets && s->aggregation >= VIT_AGGREGATE_FIRST) { /* say why, as vit tag does */
        json_key(w, "entities");
        json_array(w);
        json_end(w);
        json_key(w, "error");
        char why[768];
        snprintf(why, sizeof why,
                 "aggregation_strategy \"%s\" needs word boundaries, from the tokens' offsets, "
                 "which this text has none of (%s): \"simple\" does without",
                 vit_aggregation_name(s->aggregation), req->no_offsets);
        json_string(w, why);
        return 0;
    }
    const int n =
        vit_text_entities_of(c->app->text, req->text, req->size, req->ids,
                             req->offsets ? req->starts : NULL, req->offsets ? req->ends : NULL,
                             req->tokens, c->jobs[i].out, s->aggregation, 0, s->entities, &e, &err);
    json_key(w, "entities");
    json_array(w);
    for (int k = 0; k < n; k++) cli_json_entity(w, &e[k], s->aggregation != VIT_AGGREGATE_NONE);
    json_end(w);
    if (n < 0) {
        json_key(w, "error");
        json_string(w, err.msg);
    }
    return 0;
}

/* aggregation_strategy's value, or -1 after refusing it */
static int aggregation_of(serve_call *c, const char *value) {
    const int a = vit_aggregation_from_name(value);
    if (a < 0)
        serve_call_fail(c, 0,
                        "aggregation_strategy \"%.40s\" is not none, simple, first, average or max",
                        value);
    return a;
}

/* {"texts": ["...", ...]} and no other key: each text an input (its bytes stay in c->json). */
static int parse_texts(serve_call *c) {
    const byte_buf *body = &c->req->body;
    c->json = cJSON_ParseWithLength(body->data ? body->data : "", body->size);
    const cJSON *texts = cJSON_GetObjectItemCaseSensitive(c->json, "texts");
    const char *why = !c->json                         ? "the body is not valid JSON"
                      : !cJSON_IsObject(c->json)       ? "the body is not a JSON object"
                      : !cJSON_IsArray(texts)          ? "no \"texts\" array in the body"
                      : cJSON_GetArraySize(texts) == 0 ? "\"texts\" is empty"
                                                       : NULL;
    if (why) return serve_call_fail(c, 0, "%s", why);
    text_state *s = (text_state *)c;
    const cJSON *agg = cJSON_GetObjectItemCaseSensitive(c->json, "aggregation_strategy");
    if (agg && c->task != SERVE_TAG)
        return serve_call_fail(c, 0, "aggregation_strategy is a token classifier's");
    if (agg && !cJSON_IsString(agg))
        return serve_call_fail(c, 0, "aggregation_strategy must be a string");
    if (agg && (int)(s->aggregation = aggregation_of(c, agg->valuestring)) < 0) return -1;
    for (const cJSON *item = c->json->child; item; item = item->next)
        if (strcmp(item->string, "texts") != 0 && (c->task != SERVE_TAG || item != agg))
            return serve_call_fail(c, 0,
                                   "unknown key \"%.40s\" (a JSON body of /v1/text has \"texts\"; "
                                   "k, threshold and logits are query parameters)",
                                   item->string);
    const cJSON *t;
    cJSON_ArrayForEach(t, texts) {
        if (!cJSON_IsString(t)) return serve_call_fail(c, 0, "\"texts\" holds a non-string");
        if (serve_call_add_input(c, NULL) != 0) return -1;
        serve_input *in = &c->inputs[c->num_inputs - 1];
        in->bytes = (byte_buf){t->valuestring, strlen(t->valuestring), 0}; /* c->json's */
        const size_t room = sizeof(int32_t) * (size_t)vit_text_max_tokens(c->app->text);
        if (c->task == SERVE_TAG &&
            (!(in->job.tag.ids = malloc(room)) || !(in->job.tag.starts = malloc(room)) ||
             !(in->job.tag.ends = malloc(room))))
            return -1;
    }
    return 0;
}

int serve_text_begin(http_request *req, http_answer *now) {
    const serve_app *app = req->app;
    if (app->text && vit_text_joint_dim(app->text) > 0)
        return http_error(req, now, HTTP_NOT_FOUND, SERVE_ERR_NOT_FOUND,
                          "/v1/text: the text tower of a joint image-text model classifies "
                          "nothing (POST /v1/embeddings embeds texts; POST "
                          "/v1/classify?classes=... classifies images zero-shot)"),
               1;
    if (!app->text) return serve_refuse_missing(req, now, 1), 1;
    vit_model_info info;
    vit_text_model_info(app->text, &info);
    const int tags = (info.capabilities & VIT_CAN_TAG) != 0;
    if (!(info.capabilities & VIT_CAN_CLASSIFY) && !tags) /* its outputs are features */
        return http_error(req, now, HTTP_NOT_FOUND, SERVE_ERR_NOT_FOUND,
                          "/v1/text: %s has no sequence classifier (its outputs are features: "
                          "POST /v1/embeddings)",
                          info.architecture),
               1;
    text_state *s = calloc(1, sizeof *s);
    if (!s) return *now = (http_answer){0}, 1;
    req->state = s;
    static const serve_call_ops ops = {.write_result = write_result},
                                tag_ops = {.write_result = write_tags};
    serve_call_init(&s->call, req, tags ? SERVE_TAG : SERVE_TEXT, tags ? &tag_ops : &ops);
    if (tags && !(s->entities = vit_entities_create())) return *now = (http_answer){0}, 1;
    for (int q = 0; tags && q < req->num_query; q++) {
        if (strcmp(req->query[q].key, "aggregation_strategy") == 0) {
            const int a = aggregation_of(&s->call, req->query[q].value);
            if (a < 0) return serve_call_refuse(&s->call, now, SERVE_ERR_BAD_REQUEST), 1;
            s->aggregation = (vit_aggregation)a;
            continue;
        }
        /* k, threshold and logits are a sequence classifier's */
        serve_call_fail(&s->call, 0,
                        "query parameter '%.40s': %s classifies every token, and /v1/text takes "
                        "aggregation_strategy for it (k, threshold and logits are a sequence "
                        "classifier's)",
                        req->query[q].key, info.architecture);
        return serve_call_refuse(&s->call, now, SERVE_ERR_BAD_REQUEST), 1;
    }
    if (tags) return 0;
    s->top.k = 5;
    for (int q = 0; q < req->num_query; q++) {
        const int rc = serve_top_param(&s->call, &s->top, req->query[q].key, req->query[q].value);
        if (rc > 0) serve_unknown_param(&s->call, req->query[q].key);
        if (rc != 0) return serve_call_refuse(&s->call, now, SERVE_ERR_BAD_REQUEST), 1;
    }
    return 0;
}

int serve_text_handle(http_request *req, http_answer *now) {
    serve_call *c = &((text_state *)req->state)->call;
    if (parse_texts(c) != 0) return serve_call_refuse(c, now, SERVE_ERR_BAD_INPUT);
    return serve_call_submit(c, now);
}

void serve_text_free(http_request *req) {
    text_state *s = req->state;
    serve_call_free(&s->call);
    vit_entities_free(s->entities);
    free(s);
}
