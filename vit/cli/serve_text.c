/* POST /v1/text: {"texts": [...]}, each text's top-k of the text model's labels, as `vit text
 * --json` prints them; a token classifier's tokens and their labels, as `vit tag --json`. */
#include <math.h>
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

/* "entities": each token but the start and end tokens not labelled O, as the token-classification
 * pipeline's aggregation "none" gives them (vit tag's). */
static int write_tags(json_writer *w, const serve_call *c, int i) {
    const vit_text_context *text = c->app->text;
    const serve_tag_request *req = &c->inputs[i].job.tag;
    const int K = vit_text_num_labels(text);
    json_key(w, "entities");
    json_array(w);
    for (int t = 1; t < req->tokens - 1; t++) {
        const float *l = c->jobs[i].out + (size_t)t * K;
        int best = 0;
        for (int k = 1; k < K; k++) best = l[k] > l[best] ? k : best;
        double sum = 0;
        for (int k = 0; k < K; k++) sum += exp((double)l[k] - l[best]);
        const char *label = vit_text_label(text, best);
        if (strcmp(label, "O") == 0) continue;
        json_object(w);
        json_key(w, "entity");
        json_string(w, label);
        json_key(w, "score");
        json_float(w, (float)(1.0 / sum));
        json_key(w, "index");
        json_int(w, t);
        json_key(w, "word");
        json_string(w, vit_text_piece(text, req->ids[t]));
        json_end(w);
    }
    json_end(w);
    return 0;
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
        serve_input *in = &c->inputs[c->num_inputs - 1];
        in->bytes = (byte_buf){t->valuestring, strlen(t->valuestring), 0}; /* c->json's */
        if (c->task == SERVE_TAG &&
            !(in->job.tag.ids = malloc(sizeof(int32_t) * vit_text_max_tokens(c->app->text))))
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
    if (tags && req->num_query > 0) { /* k, threshold and logits are a sequence classifier's */
        serve_call_fail(&s->call, 0,
                        "query parameter '%.40s': %s classifies every token, and /v1/text takes "
                        "no parameter for it (k, threshold and logits are a sequence "
                        "classifier's)",
                        req->query[0].key, info.architecture);
        return serve_call_refuse(&s->call, now, SERVE_ERR_BAD_REQUEST), 1;
    }
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
