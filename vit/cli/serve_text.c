/* POST /v1/text: {"texts": [...]}, each text's top-k of the text model's labels, as `vit text
 * --json` prints them. */
#include <stdlib.h>
#include <string.h>

#include "vit/cli/serve_call.h"

typedef struct {
    serve_call call; /* first: the call's callbacks find the state */
    serve_top_options top;
} text_state;

static int write_result(json_writer *w, const serve_call *c, int i) {
    return serve_write_top(w, c, &((const text_state *)c)->top, c->jobs[i].out);
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
    for (const cJSON *item = c->json->child; item; item = item->next)
        if (strcmp(item->string, "texts") != 0)
            return serve_call_fail(c, 0,
                                   "unknown key \"%.40s\" (a JSON body of /v1/text has \"texts\"; "
                                   "k, threshold and logits are query parameters)",
                                   item->string);
    const cJSON *t;
    cJSON_ArrayForEach(t, texts) {
        if (!cJSON_IsString(t)) return serve_call_fail(c, 0, "\"texts\" holds a non-string");
        if (serve_call_add_input(c, NULL) != 0) return -1;
        c->inputs[c->num_inputs - 1].bytes =
            (byte_buf){t->valuestring, strlen(t->valuestring), 0}; /* c->json's */
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
    if (!(info.capabilities & VIT_CAN_CLASSIFY)) /* its outputs are features or per token */
        return http_error(req, now, HTTP_NOT_FOUND, SERVE_ERR_NOT_FOUND,
                          "/v1/text: %s has no sequence classifier (%s)", info.architecture,
                          info.capabilities & VIT_CAN_TAG
                              ? "it classifies every token, which is not served yet"
                              : "its outputs are features: POST /v1/embeddings"),
               1;
    text_state *s = calloc(1, sizeof *s);
    if (!s) return *now = (http_answer){0}, 1;
    req->state = s;
    static const serve_call_ops ops = {.write_result = write_result};
    serve_call_init(&s->call, req, SERVE_TEXT, &ops);
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
    free(s);
}
