/* POST /v1/explain: where the model looked in each image (?method=rollout|grad), as `vit explain`
 * computes it: the class explained, the map, one value per patch, and where it lies in the image.
 */
#include <stdlib.h>
#include <string.h>

#include "vit/cli/serve_call.h"

static int write_result(json_writer *w, const serve_call *c, int i) {
    const serve_explain_request *x = &c->inputs[i].job.explain;
    const vit_context *image = c->app->image;
    int gh = 0, gw = 0;
    vit_patch_grid(image, &gh, &gw);
    serve_json_explanation(w, x, x->label >= 0 ? vit_label(image, x->label) : NULL,
                           c->task == SERVE_EXPLAIN_GRAD ? "grad" : "rollout", gh, gw,
                           c->jobs[i].out);
    return 0;
}

/* What cannot be explained: an image-to-text model's text, a model its family does not explain
 * yet, the gradient of a model without classes. */
static int refuse_model(http_request *req, http_answer *now, int grad) {
    const serve_app *app = req->app;
    vit_error why = {0};
    if (vit_explain_check(app->image, &why) != 0)
        return http_error(req, now, HTTP_BAD_REQUEST, SERVE_ERR_BAD_REQUEST, "/v1/explain: %s",
                          why.msg);
    if (grad && !vit_has_classifier(app->image))
        return http_error(req, now, HTTP_BAD_REQUEST, SERVE_ERR_BAD_REQUEST,
                          "/v1/explain?method=grad: %s has no classes for the gradient to "
                          "explain (method=rollout explains it)",
                          app->model_name);
    return -1;
}

int serve_explain_begin(http_request *req, http_answer *now) {
    const serve_app *app = req->app;
    if (app->gen)
        return http_error(req, now, HTTP_BAD_REQUEST, SERVE_ERR_BAD_REQUEST,
                          "/v1/explain: %s is an image-to-text model (VisionEncoderDecoderModel): "
                          "its text has no attention map over the image to give",
                          app->model_name),
               1;
    if (!app->image) return serve_refuse_missing(req, now, 0), 1;
    serve_call *c = calloc(1, sizeof *c);
    if (!c) return *now = (http_answer){0}, 1;
    req->state = c;
    static const serve_call_ops ops = {.write_result = write_result};
    serve_call_init(c, req, SERVE_EXPLAIN_ROLLOUT, &ops);
    for (int q = 0; q < req->num_query; q++) {
        const char *key = req->query[q].key, *v = req->query[q].value;
        if (strcmp(key, "method") != 0)
            serve_unknown_param(c, key);
        else if (strcmp(v, "rollout") != 0 && strcmp(v, "grad") != 0)
            serve_invalid_param(c, key, v, "rollout or grad");
        else
            c->task = strcmp(v, "grad") == 0 ? SERVE_EXPLAIN_GRAD : SERVE_EXPLAIN_ROLLOUT;
        if (c->error[0]) return serve_call_refuse(c, now, SERVE_ERR_BAD_REQUEST), 1;
    }
    return refuse_model(req, now, c->task == SERVE_EXPLAIN_GRAD) == 0;
}

int serve_explain_handle(http_request *req, http_answer *now) {
    serve_call *c = req->state;
    if (serve_parse_images(c) != 0) return serve_call_refuse(c, now, SERVE_ERR_BAD_REQUEST);
    return serve_call_submit(c, now);
}

void serve_explain_free(http_request *req) {
    serve_call_free(req->state);
    free(req->state);
}
