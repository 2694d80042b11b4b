/* vit serve's inputs from a request's body: a raw image, a multipart form's "image" parts (read
 * into parts by the transport), a JSON object's lists of data URLs (serve_call.h). */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "vit/base/base64.h"
#include "vit/cli/serve_call.h"

int serve_is_image_url(const char *s) {
    return strncasecmp(s, "data:image/", 11) == 0;
}

int serve_has_type(const http_request *req, const char *want) {
    const char *type = req->content_type;
    return type && strncasecmp(type, want, strlen(want)) == 0;
}

int serve_decode_data_url(serve_call *c, int i, const char *what, const char *s) {
    const char *comma = strchr(s, ',');
    const size_t head = comma ? (size_t)(comma - s) : strlen(s);
    if (!comma || head < 7 || strncasecmp(comma - 7, ";base64", 7) != 0)
        return serve_call_fail(c, 0,
                               "%s: a data URL of an image must be base64, as "
                               "data:image/png;base64,iVBORw0KGgo...",
                               what);
    const char *data = comma + 1;
    const size_t n = strlen(data);
    serve_input *in = &c->inputs[i];
    if (!(in->bytes.data = malloc(n / 4 * 3 + 3))) return serve_call_fail(c, 0, "out of memory");
    in->owned = 1;
    size_t where = 0;
    const long long size = base64_decode(data, n, in->bytes.data, &where);
    if (size < 0)
        return serve_call_fail(
            c, 0, "%s: the data URL's base64 is malformed at byte %zu of its data", what, where);
    in->bytes.size = (size_t)size;
    in->bytes.cap = n / 4 * 3 + 3;
    return 0;
}

int serve_parse_json_object(serve_call *c) {
    const byte_buf *body = &c->req->body;
    c->json = cJSON_ParseWithLength(body->data ? body->data : "", body->size);
    if (!c->json) return serve_call_fail(c, 0, "the body is not valid JSON");
    if (!cJSON_IsObject(c->json)) return serve_call_fail(c, 0, "the body is not a JSON object");
    return 0;
}

int serve_json_check_keys(serve_call *c, const char *const *keys, size_t n, const char *endpoint,
                          const char *listed) {
    for (const cJSON *item = c->json->child; item; item = item->next) {
        size_t k = 0;
        while (k < n && strcmp(item->string, keys[k]) != 0) k++;
        if (k == n)
            return serve_call_fail(c, 0, "unknown key \"%.40s\" (a JSON body of %s has %s)",
                                   item->string, endpoint, listed);
    }
    return 0;
}

int serve_json_images(serve_call *c, const cJSON *item) {
    if (!cJSON_IsArray(item)) return serve_call_fail(c, 0, "\"%s\" is not a list", item->string);
    int i = 0;
    const cJSON *v;
    cJSON_ArrayForEach(v, item) {
        char what[48];
        snprintf(what, sizeof what, "images[%d]", i++);
        if (!cJSON_IsString(v)) return serve_call_fail(c, 0, "%s is not a string", what);
        if (!serve_is_image_url(v->valuestring))
            return serve_call_fail(c, 0, "%s is not a data URL of an image (data:image/...)", what);
        if (serve_call_add_input(c, NULL) != 0 ||
            serve_decode_data_url(c, c->num_inputs - 1, what, v->valuestring) != 0)
            return -1;
    }
    return 0;
}

/* The form's parts in order: "image" ones are inputs (views of the parts), the others the
 * handler's (form_field); then why the form could not be read whole, if it could not. */
static int parse_form(serve_call *c) {
    const http_request *req = c->req;
    for (int p = 0; p < req->num_parts; p++) {
        const http_part *part = &req->parts[p];
        if (!part->name)
            return serve_call_fail(
                c, 0, "a form part without a name (send each image as a part named \"image\")");
        if (strcmp(part->name, "image") == 0) {
            if (serve_call_add_input(c, part->filename) != 0) return -1;
            c->inputs[c->num_inputs - 1].bytes = (byte_buf){part->bytes.data, part->bytes.size, 0};
            continue;
        }
        const int taken = c->ops->form_field ? c->ops->form_field(c, part) : 1;
        if (taken < 0) return -1;
        if (taken > 0)
            return serve_call_fail(
                c, 0,
                "unexpected form field '%.40s' (send each image as a part named \"image\"%s%s)",
                part->name, c->ops->form_options ? "; options: " : "",
                c->ops->form_options ? c->ops->form_options : "");
    }
    if (req->form_error[0]) return serve_call_fail(c, 0, "%s", req->form_error);
    if (c->num_inputs == 0) return serve_call_fail(c, 0, "the form has no \"image\" part");
    return c->ops->form_done ? c->ops->form_done(c) : 0;
}

/* A JSON body: each of its keys the handler's (json_key), images among them. */
static int parse_json_body(serve_call *c) {
    if (serve_parse_json_object(c) != 0) return -1;
    const cJSON *item;
    cJSON_ArrayForEach(item, c->json) {
        if (c->ops->json_key(c, item) != 0) return -1;
    }
    if (c->num_inputs == 0) return serve_call_fail(c, 0, "no \"images\" in the body");
    return 0;
}

int serve_parse_images(serve_call *c) {
    const http_request *req = c->req;
    if (req->form) return parse_form(c);
    if (c->ops->json_key && serve_has_type(req, "application/json")) return parse_json_body(c);
    if (req->body.size == 0)
        return serve_call_fail(c, 0,
                               "empty body: send an image's bytes, or a multipart/form-data form "
                               "of \"image\" parts");
    if (serve_call_add_input(c, NULL) != 0) return -1;
    c->inputs[0].bytes = (byte_buf){req->body.data, req->body.size, 0}; /* the body's */
    return 0;
}
