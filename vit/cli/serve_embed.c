/* POST /v1/embed: each image's feature vector, as `vit embed` gives it: by default the model's
 * own pooling (vit_default_pool), or ?pool=cls|mean. */
#include <stdlib.h>
#include <string.h>

#include "vit/cli/serve_call.h"

static int write_result(json_writer *w, const serve_call *c, int i) {
    serve_json_floats(w, "embedding", c->jobs[i].out, c->width);
    return 0;
}

int serve_embed_begin(http_request *req, http_answer *now) {
    if (!req->app->image) return serve_refuse_missing(req, now, 0), 1;
    serve_call *c = calloc(1, sizeof *c);
    if (!c) return *now = (http_answer){0}, 1;
    req->state = c;
    static const serve_call_ops ops = {.write_result = write_result};
    serve_call_init(c, req, SERVE_EMBED_OWN, &ops);
    for (int q = 0; q < req->num_query; q++) {
        const char *key = req->query[q].key, *v = req->query[q].value;
        if (strcmp(key, "pool") != 0)
            serve_unknown_param(c, key);
        else if (strcmp(v, "cls") != 0 && strcmp(v, "mean") != 0)
            serve_invalid_param(c, key, v, "cls or mean");
        else
            c->task = strcmp(v, "mean") == 0 ? SERVE_EMBED_MEAN : SERVE_EMBED_CLS;
        if (c->error[0]) return serve_call_refuse(c, now, SERVE_ERR_BAD_REQUEST), 1;
    }
    return 0;
}

int serve_embed_handle(http_request *req, http_answer *now) {
    serve_call *c = req->state;
    if (serve_parse_images(c) != 0) return serve_call_refuse(c, now, SERVE_ERR_BAD_REQUEST);
    return serve_call_submit(c, now);
}

void serve_embed_free(http_request *req) {
    serve_call_free(req->state);
    free(req->state);
}
