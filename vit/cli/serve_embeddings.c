/* POST /v1/embeddings: OpenAI's {"input": "..." or ["...", ...], ...}, each string a text or a
 * data URL of an image, answered in OpenAI's shape: {"object": "list", "data": [...], "model":
 * ..., "usage": the texts' tokens}; a request with any input that fails gets that error alone. */
#include <stdlib.h>
#include <string.h>

#include "vit/cli/serve_call.h"
#include "vit/model/pooling.h"

typedef struct {
    serve_call call; /* first: the call's callbacks find the state */
    int base64;      /* the embeddings as base64 of their float32 bytes */
    int dimensions;  /* "dimensions" of a text model's: the first N, 0 all */
    int renormalize; /* the cut rows normalised again (the model's are) */
} embeddings_state;

/* The length of the embeddings given for an image (text 0) or a text (1): the model's own
 * pooling, as `vit embed` gives by default. */
static int embedding_size(const serve_app *app, int text) {
    return text ? vit_text_embed_size(app->text, vit_text_default_pool(app->text))
                : vit_embed_size(app->image, vit_default_pool(app->image));
}

/* Input i: s an image (a data URL) or a text, with a model for it. */
static int add_embedding_input(serve_call *c, int i, const char *s) {
    const serve_app *app = c->app;
    char what[32];
    snprintf(what, sizeof what, "input[%d]", i);
    const int image = serve_is_image_url(s);
    if (image && !app->image)
        return serve_call_fail(c, 0, "%s is an image, and no image model is served", what);
    if (!image && !app->text)
        return serve_call_fail(c, 0, "%s is a text, and %s", what,
                               serve_is_joint(app) ? "this joint model's text tower is not served"
                                                   : "no text model is served (--text-model DIR)");
    c->task = image ? SERVE_EMBED_OWN : SERVE_EMBED_TEXT;
    if (serve_call_add_input(c, NULL) != 0) return -1;
    if (image) return serve_decode_data_url(c, c->num_inputs - 1, what, s);
    c->inputs[c->num_inputs - 1].bytes = (byte_buf){(char *)s, strlen(s), 0}; /* c->json's */
    return 0;
}

/* The keys of an OpenAI embeddings request. */
static const char *const embedding_keys[] = {"input",      "model", "encoding_format",
                                             "dimensions", "user",  "truncate"};

static int check_keys(serve_call *c) {
    return serve_json_check_keys(
        c, embedding_keys, sizeof embedding_keys / sizeof *embedding_keys, "/v1/embeddings",
        "\"input\", \"model\", \"encoding_format\", \"dimensions\", \"user\", \"truncate\"");
}

/* "dimensions": a text model's embeddings are cut to the first N (Matryoshka models, as `vit embed
 * --dimensions`), normalised again when the model's are; an image's are not shortened. */
static int parse_dimensions(embeddings_state *s, const cJSON *dims, int texts, int images) {
    serve_call *c = &s->call;
    const int size = embedding_size(c->app, texts > 0);
    const int n = cJSON_IsNumber(dims) ? (int)dims->valuedouble : -1;
    if (!cJSON_IsNumber(dims) || dims->valuedouble != n || n < 1)
        return serve_call_fail(c, 0, "\"dimensions\" is not a positive integer");
    if (images && n != size)
        return serve_call_fail(c, 0,
                               "\"dimensions\": this model's image embeddings have %d, and are "
                               "not shortened",
                               size);
    if (n > size)
        return serve_call_fail(c, 0, "\"dimensions\" %d: this model's embeddings have %d", n, size);
    s->dimensions = n < size ? n : 0;
    s->renormalize = s->dimensions &&
                     vit_text_embed_normalized(c->app->text, vit_text_default_pool(c->app->text));
    return 0;
}

/* The request's options beside "input": "model" (any name: one model is served),
 * "encoding_format" ("float" or "base64"), "dimensions" (the model's, if given), "truncate" (TEI's:
 * absent or true, a text longer than the model takes is cut, as sentence-transformers cuts it at
 * max_seq_length; false, refused with 413 naming its length); "user" (OpenAI's end-user id) is
 * taken and unused. */
static int parse_options(embeddings_state *s, int texts, int images) {
    serve_call *c = &s->call;
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(c->json, "model"),
                *format = cJSON_GetObjectItemCaseSensitive(c->json, "encoding_format"),
                *dims = cJSON_GetObjectItemCaseSensitive(c->json, "dimensions"),
                *truncate = cJSON_GetObjectItemCaseSensitive(c->json, "truncate");
    if (model && !cJSON_IsString(model) && !cJSON_IsNull(model))
        return serve_call_fail(c, 0, "\"model\" is not a string");
    if (truncate && !cJSON_IsNull(truncate) && !cJSON_IsBool(truncate))
        return serve_call_fail(c, 0, "\"truncate\" is not true or false");
    c->no_truncate = cJSON_IsFalse(truncate);
    if (format && !cJSON_IsNull(format)) {
        if (!cJSON_IsString(format) || (strcmp(format->valuestring, "float") != 0 &&
                                        strcmp(format->valuestring, "base64") != 0))
            return serve_call_fail(c, 0, "\"encoding_format\" is \"float\" or \"base64\"");
        s->base64 = strcmp(format->valuestring, "base64") == 0;
    }
    if (dims && !cJSON_IsNull(dims) && parse_dimensions(s, dims, texts, images) != 0) return -1;
    if (texts && images && !(serve_is_joint(c->app) && c->app->text))
        return serve_call_fail(c, 0,
                               "texts and images in one request need a joint image-text model "
                               "(CLIP, SigLIP): the image and text models served embed into "
                               "unrelated spaces");
    return 0;
}

static int parse_embeddings(embeddings_state *s) {
    serve_call *c = &s->call;
    if (serve_parse_json_object(c) != 0 || check_keys(c) != 0) return -1;
    const cJSON *input = cJSON_GetObjectItemCaseSensitive(c->json, "input");
    if (!input) return serve_call_fail(c, 0, "no \"input\" in the body");
    if (!cJSON_IsString(input) && !cJSON_IsArray(input))
        return serve_call_fail(c, 0, "\"input\" is neither a string nor a list of strings");
    if (cJSON_IsArray(input) && cJSON_GetArraySize(input) == 0)
        return serve_call_fail(c, 0, "\"input\" is empty");
    int texts = 0, images = 0, i = 0;
    const cJSON *item = cJSON_IsString(input) ? input : input->child;
    for (; item; item = cJSON_IsString(input) ? NULL : item->next, i++) {
        if (!cJSON_IsString(item))
            return serve_call_fail(c, 0,
                                   "input[%d] is not a string (texts, and images as data URLs; "
                                   "not token ids)",
                                   i);
        if (add_embedding_input(c, i, item->valuestring) != 0) return -1;
        *(serve_is_image_url(item->valuestring) ? &images : &texts) += 1;
    }
    return parse_options(s, texts, images);
}

static int write_result(json_writer *w, const serve_call *c, int i) {
    const serve_job *job = &c->jobs[i];
    const embeddings_state *s = (const embeddings_state *)c;
    const size_t n = serve_task_outputs(c->app->tasks, (serve_task)job->task);
    if (!s->dimensions) return serve_json_embedding(w, job->out, n, s->base64, i);
    /* the first N, normalised again where the whole row was (vit_text_embed_with's cut) */
    float *cut = malloc(sizeof *cut * (size_t)s->dimensions);
    if (!cut) return -1;
    memcpy(cut, job->out, sizeof *cut * (size_t)s->dimensions);
    if (s->renormalize) l2_normalize(cut, s->dimensions);
    const int rc = serve_json_embedding(w, cut, (size_t)s->dimensions, s->base64, i);
    free(cut);
    return rc;
}

/* OpenAI's list; or, when an input failed, {"error": ...} alone, naming it. */
static void write_answer(json_writer *w, const serve_call *c, int status) {
    json_object(w);
    if (status != HTTP_OK) {
        int i = 0;
        while (c->jobs[i].status == SERVE_OK) i++;
        char msg[sizeof c->jobs[i].err.msg + 32];
        snprintf(msg, sizeof msg, "input[%d]: %s", i, c->jobs[i].err.msg);
        serve_error_kind kind = SERVE_ERR_INTERNAL;
        const int failed = serve_job_status(&c->jobs[i], &kind);
        serve_json_error(w, failed, kind, msg);
        json_end(w);
        return;
    }
    json_key(w, "object");
    json_string(w, "list");
    json_key(w, "data");
    json_array(w);
    for (int i = 0; i < c->num_inputs; i++) json_raw(w, c->results[i].text, c->results[i].size);
    json_end(w);
    json_key(w, "model");
    json_string(w, c->app->model_name ? c->app->model_name : "");
    json_key(w, "usage");
    json_object(w);
    json_key(w, "prompt_tokens");
    json_int(w, c->tokens);
    json_key(w, "total_tokens");
    json_int(w, c->tokens);
    json_end(w);
    json_end(w);
}

int serve_embeddings_begin(http_request *req, http_answer *now) {
    if (!req->app->image && !req->app->text) return serve_refuse_missing(req, now, 0), 1;
    embeddings_state *s = calloc(1, sizeof *s);
    if (!s) return *now = (http_answer){0}, 1;
    req->state = s;
    static const serve_call_ops ops = {.write_result = write_result, .write_answer = write_answer};
    serve_call_init(&s->call, req, SERVE_EMBED_OWN, &ops);
    if (req->num_query > 0) {
        serve_unknown_param(&s->call, req->query[0].key);
        return serve_call_refuse(&s->call, now, SERVE_ERR_BAD_REQUEST), 1;
    }
    return 0;
}

int serve_embeddings_handle(http_request *req, http_answer *now) {
    embeddings_state *s = req->state;
    if (parse_embeddings(s) != 0) return serve_call_refuse(&s->call, now, SERVE_ERR_BAD_REQUEST);
    return serve_call_submit(&s->call, now);
}

void serve_embeddings_free(http_request *req) {
    embeddings_state *s = req->state;
    serve_call_free(&s->call);
    free(s);
}
