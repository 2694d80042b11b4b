/* POST /v1/generate: an image-to-text model's text for each image, with vit generate's options
 * under transformers' GenerationConfig's names, in the query, as form fields or JSON values (what
 * a request leaves out is the model's generation_config.json); images asking the same options run
 * together in one vit_generate call. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vit/cli/serve_call.h"

/* The options: the names a request gives them, and the limits of those that have no other (vit
 * generate's). */
enum { GEN_BEAMS, GEN_MAX_NEW, GEN_MIN_LENGTH, GEN_PENALTY, GEN_NO_REPEAT, GEN_EARLY, GEN_KEYS };
static const char *const gen_keys[GEN_KEYS] = {
    "num_beams",      "max_new_tokens",       "min_length",
    "length_penalty", "no_repeat_ngram_size", "early_stopping"};
#define MAX_MIN_LENGTH  4096
#define MAX_PENALTY     100.0
#define MAX_NO_REPEAT   64
#define GEN_FIELD_BYTES 32 /* a form field's value */

typedef struct {
    serve_call call;                       /* first: the call's callbacks find the state */
    vit_gen_options gen;                   /* the model's, with those asked for over them */
    unsigned given;                        /* a bit for each asked for (once only) */
    unsigned in_form;                      /* a bit for each a form field gives */
    char field[GEN_KEYS][GEN_FIELD_BYTES]; /* the form's fields, set once the form is read */
} generate_state;

static int gen_key(const char *key) {
    for (int k = 0; k < GEN_KEYS; k++)
        if (strcmp(key, gen_keys[k]) == 0) return k;
    return -1;
}

static int parse_early(const char *s, int *out) {
    static const char *const names[] = {"false", "true", "never"}; /* GEN_EARLY_* */
    for (int i = 0; i < 3; i++)
        if (strcmp(s, names[i]) == 0) return *out = i, 0;
    return -1;
}

/* What option k takes, for its error. */
static void gen_limits(const serve_app *app, int k, char *out, size_t size) {
    switch (k) {
    case GEN_BEAMS:
        snprintf(out, size, "an integer from 1 to %d, the server's --max-beams", app->max_beams);
        return;
    case GEN_MAX_NEW:
        snprintf(out, size, "an integer from 1 to %d, the decoder's positions",
                 vit_gen_max_new_tokens(app->gen));
        return;
    case GEN_MIN_LENGTH:
        snprintf(out, size, "an integer from 0 to %d", MAX_MIN_LENGTH);
        return;
    case GEN_PENALTY:
        snprintf(out, size, "a number from %g to %g", -MAX_PENALTY, MAX_PENALTY);
        return;
    case GEN_NO_REPEAT:
        snprintf(out, size, "an integer from 0 to %d", MAX_NO_REPEAT);
        return;
    default:
        snprintf(out, size, "true, false or never");
    }
}

/* Option k from its text (a query's, a form field's, a JSON value's), within its limits and given
 * once; else -1 with the reason, naming it. */
static int set_option(generate_state *s, int k, const char *v) {
    serve_call *c = &s->call;
    if (s->given & (1u << k)) return serve_call_fail(c, 0, "%s given more than once", gen_keys[k]);
    s->given |= 1u << k;
    const serve_app *app = c->app;
    vit_gen_options *o = &s->gen;
    double penalty;
    int bad;
    switch (k) {
    case GEN_BEAMS:
        bad = serve_parse_int(v, 1, app->max_beams, &o->num_beams);
        break;
    case GEN_MAX_NEW:
        bad = serve_parse_int(v, 1, vit_gen_max_new_tokens(app->gen), &o->max_new_tokens);
        break;
    case GEN_MIN_LENGTH:
        bad = serve_parse_int(v, 0, MAX_MIN_LENGTH, &o->min_length);
        break;
    case GEN_PENALTY:
        bad = serve_parse_number(v, -MAX_PENALTY, MAX_PENALTY, &penalty);
        if (!bad) o->length_penalty = (float)penalty;
        break;
    case GEN_NO_REPEAT:
        bad = serve_parse_int(v, 0, MAX_NO_REPEAT, &o->no_repeat_ngram_size);
        break;
    default:
        bad = parse_early(v, &o->early_stopping);
    }
    if (!bad) return 0;
    char limits[96];
    gen_limits(app, k, limits, sizeof limits);
    return serve_call_fail(c, 0, "invalid %s '%.40s' (%s)", gen_keys[k], v, limits);
}

/* A form's option field: kept (a number or a word, given once), set once the form is read. */
static int form_field(serve_call *c, const http_part *part) {
    generate_state *s = (generate_state *)c;
    const int k = gen_key(part->name);
    if (k < 0) return 1;
    if (s->in_form & (1u << k))
        return serve_call_fail(c, 0, "%s given more than once", gen_keys[k]);
    s->in_form |= 1u << k;
    if (part->bytes.size >= GEN_FIELD_BYTES || memchr(part->bytes.data, 0, part->bytes.size))
        return serve_call_fail(c, 0, "invalid %s: not a number nor a word", gen_keys[k]);
    memcpy(s->field[k], part->bytes.data ? part->bytes.data : "", part->bytes.size);
    s->field[k][part->bytes.size] = 0;
    return 0;
}

static int form_done(serve_call *c) {
    generate_state *s = (generate_state *)c;
    for (int k = 0; k < GEN_KEYS; k++) /* now whole: within the limits? */
        if ((s->in_form & (1u << k)) && set_option(s, k, s->field[k]) != 0) return -1;
    return 0;
}

/* A JSON body: {"images": [...]} and options, a number each, or for early_stopping true, false
 * or "never" (as generation_config.json has them), checked as its text. */
static int body_key(serve_call *c, const cJSON *item) {
    generate_state *s = (generate_state *)c;
    const int k = gen_key(item->string);
    if (k < 0 && strcmp(item->string, "images") == 0) return serve_json_images(c, item);
    if (k < 0)
        return serve_call_fail(c, 0,
                               "unknown key \"%.40s\" (a JSON body of /v1/generate has \"images\" "
                               "and the options " GEN_OPTION_NAMES ")",
                               item->string);
    char text[64];
    if (cJSON_IsNumber(item) && k != GEN_EARLY)
        snprintf(text, sizeof text, "%.17g", item->valuedouble);
    else if (cJSON_IsBool(item) && k == GEN_EARLY)
        snprintf(text, sizeof text, "%s", cJSON_IsTrue(item) ? "true" : "false");
    else if (cJSON_IsString(item) && k == GEN_EARLY)
        snprintf(text, sizeof text, "%.40s", item->valuestring);
    else
        return serve_call_fail(c, 0, "\"%s\" is not %s", gen_keys[k],
                               k == GEN_EARLY ? "true, false or \"never\"" : "a number");
    return set_option(s, k, text);
}

static int write_result(json_writer *w, const serve_call *c, int i) {
    serve_json_generation(w, &c->inputs[i].job.gen.result, &((const generate_state *)c)->gen);
    return 0;
}

int serve_generate_begin(http_request *req, http_answer *now) {
    const serve_app *app = req->app;
    if (!app->gen)
        return http_error(req, now, HTTP_BAD_REQUEST, SERVE_ERR_BAD_REQUEST,
                          "/v1/generate: %s is not an image-to-text model (a "
                          "VisionEncoderDecoderModel folder, as TrOCR's): %s",
                          app->model_name,
                          serve_is_joint(app)
                              ? "POST /v1/classify?classes=... classifies its images"
                          : app->image ? "POST /v1/classify classifies its images"
                                       : "only a text model is served (POST /v1/text)"),
               1;
    generate_state *s = calloc(1, sizeof *s);
    if (!s) return *now = (http_answer){0}, 1;
    req->state = s;
    static const serve_call_ops ops = {.form_field = form_field,
                                       .form_done = form_done,
                                       .json_key = body_key,
                                       .form_options = GEN_OPTION_NAMES,
                                       .write_result = write_result};
    serve_call_init(&s->call, req, SERVE_GENERATE, &ops);
    s->gen = app->gen_defaults;
    for (int q = 0; q < req->num_query; q++) {
        const int k = gen_key(req->query[q].key);
        if (k < 0) serve_unknown_param(&s->call, req->query[q].key);
        if (k < 0 || set_option(s, k, req->query[q].value) != 0)
            return serve_call_refuse(&s->call, now, SERVE_ERR_BAD_REQUEST), 1;
    }
    return 0;
}

int serve_generate_handle(http_request *req, http_answer *now) {
    generate_state *s = req->state;
    serve_call *c = &s->call;
    c->gen_options = &s->gen;
    if (serve_parse_images(c) != 0) return serve_call_refuse(c, now, SERVE_ERR_BAD_REQUEST);
    return serve_call_submit(c, now);
}

void serve_generate_free(http_request *req) {
    generate_state *s = req->state;
    serve_call_free(&s->call);
    free(s);
}
