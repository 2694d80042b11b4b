/* vit serve's answers as JSON, one writer per result type (serve_results.h). */
#include "vit/cli/serve_results.h"

#include <stdlib.h>
#include <string.h>

#include "vit/base/base64.h"
#include "vit/cli/cli.h"

int serve_doc_begin(json_doc *d) {
    d->text = NULL;
    d->size = 0;
    d->out = open_memstream(&d->text, &d->size);
    if (!d->out) return -1;
    d->w = json_begin(d->out);
    return 0;
}

int serve_doc_open(json_doc *d) {
    if (serve_doc_begin(d) != 0) return -1;
    json_object(&d->w);
    return 0;
}

json_text serve_doc_close(json_doc *d, int ok) {
    if (fclose(d->out) != 0 || !ok) {
        free(d->text);
        return (json_text){NULL, 0};
    }
    return (json_text){d->text, d->size};
}

static const char *error_type(int status) {
    switch (status) {
    case HTTP_UNAUTHORIZED:
        return "authentication_error";
    case HTTP_NOT_FOUND:
        return "not_found_error";
    case HTTP_INTERNAL_ERROR:
        return "server_error";
    case HTTP_UNAVAILABLE:
        return "unavailable_error";
    default:
        return "invalid_request_error";
    }
}

void serve_json_error(json_writer *w, int status, serve_error_kind kind, const char *msg) {
    json_key(w, "error");
    json_object(w);
    json_key(w, "message");
    json_string(w, msg);
    json_key(w, "type");
    json_string(w, error_type(status));
    json_key(w, "code");
    json_string(w, serve_error_kind_name(kind));
    json_end(w);
}

void serve_json_floats(json_writer *w, const char *key, const float *x, size_t n) {
    json_key(w, key);
    json_array(w);
    for (size_t i = 0; i < n; i++) json_float(w, x[i]);
    json_end(w);
}

void serve_json_top(json_writer *w, const vit_prediction *top, int shown, const float *logits,
                    size_t n_logits) {
    cli_json_top(w, top, shown);
    if (logits) serve_json_floats(w, "logits", logits, n_logits);
}

int serve_json_embedding(json_writer *w, const float *x, size_t n, int base64, int index) {
    json_key(w, "object");
    json_string(w, "embedding");
    if (base64) {
        char *text = malloc(base64_encoded_size(sizeof(float) * n) + 1);
        if (!text) return -1;
        base64_encode(x, sizeof(float) * n, text); /* x86-64, aarch64: little-endian */
        json_key(w, "embedding");
        json_string(w, text);
        free(text);
    } else {
        serve_json_floats(w, "embedding", x, n);
    }
    json_key(w, "index");
    json_int(w, index);
    return 0;
}

static void write_gen_options(json_writer *w, const vit_gen_options *o) {
    static const char *const early[] = {"false", "true", "\"never\""}; /* GEN_EARLY_* */
    json_key(w, "options");
    json_object(w);
    json_key(w, "num_beams");
    json_int(w, o->num_beams);
    json_key(w, o->max_new_tokens > 0 ? "max_new_tokens" : "max_length");
    json_int(w, o->max_new_tokens > 0 ? o->max_new_tokens : o->max_length);
    json_key(w, "min_length");
    json_int(w, o->min_length);
    json_key(w, "length_penalty");
    json_float(w, o->length_penalty);
    json_key(w, "no_repeat_ngram_size");
    json_int(w, o->no_repeat_ngram_size);
    json_key(w, "early_stopping");
    json_raw(w, early[o->early_stopping], strlen(early[o->early_stopping]));
    json_end(w);
}

void serve_json_generation(json_writer *w, const vit_generation *g, const vit_gen_options *o) {
    json_key(w, "text");
    json_string(w, g->text);
    json_key(w, "ids");
    json_array(w);
    for (int t = 0; t < g->num_ids; t++) json_int(w, g->ids[t]);
    json_end(w);
    json_key(w, "score");
    json_float(w, g->score);
    write_gen_options(w, o);
}

/* The image's size and the region of it the input is. */
static void write_where(json_writer *w, const serve_explain_request *x) {
    json_key(w, "image");
    json_object(w);
    json_key(w, "width");
    json_int(w, x->width);
    json_key(w, "height");
    json_int(w, x->height);
    json_end(w);
    json_key(w, "region");
    json_object(w);
    static const char *const keys[] = {"x", "y", "width", "height"};
    for (int k = 0; k < 4; k++) {
        json_key(w, keys[k]);
        json_float(w, x->region[k]);
    }
    json_end(w);
}

void serve_json_explanation(json_writer *w, const serve_explain_request *x, const char *name,
                            const char *method, int grid_h, int grid_w, const float *map) {
    json_key(w, "index");
    json_int(w, x->label);
    if (name) {
        json_key(w, "label");
        json_string(w, name);
        json_key(w, "prob");
        json_float(w, x->prob);
    }
    json_key(w, "method");
    json_string(w, method);
    write_where(w, x);
    json_key(w, "grid");
    json_array(w);
    json_int(w, grid_h);
    json_int(w, grid_w);
    json_end(w);
    const size_t n = (size_t)grid_h * grid_w;
    float lo = map[0], hi = map[0];
    for (size_t c = 1; c < n; c++) lo = map[c] < lo ? map[c] : lo, hi = map[c] > hi ? map[c] : hi;
    json_key(w, "map");
    json_array(w);
    for (size_t c = 0; c < n; c++) json_float(w, hi > lo ? (map[c] - lo) / (hi - lo) : 0.0f);
    json_end(w);
}

void serve_json_model_entry(json_writer *w, const char *name, double created) {
    json_object(w);
    json_key(w, "id");
    json_string(w, name);
    json_key(w, "object");
    json_string(w, "model");
    json_key(w, "created");
    json_int(w, (long long)created);
    json_key(w, "owned_by");
    json_string(w, "vit");
    json_end(w);
}
