/* POST /v1/classify: each image's top-k of the model's labels, or, on a joint model (CLIP,
 * SigLIP), zero-shot against the class names (and templates) the request gives: the images are
 * embedded (SERVE_EMBED_JOINT) beside a job for the class set (SERVE_CLASSES: found in the cache,
 * or embedded by the text tower on a forward thread) unless the set was found cached already; the
 * last of the jobs scores the images against the set. */
#include <stdlib.h>
#include <string.h>

#include "vit/cli/cli.h"
#include "vit/cli/serve_call.h"
#include "vit/cli/zero_shot.h"

/* The longest class name or template, in bytes. */
#define MAX_CLASS_BYTES 300

/* A list of strings, each malloc'ed: class names, templates. */
typedef struct {
    char **items;
    int count;
} string_list;

typedef struct {
    serve_call call; /* first: the call's callbacks find the state */
    serve_top_options top;
    int zero_shot;
    string_list classes, templates;
    int classes_from_query, templates_from_query;
    serve_class_request class_request; /* the class set asked of a forward thread */
    serve_class_set *class_set;        /* the set the answers use (taken; released at the end) */
} classify_state;

static void strings_free(string_list *l) {
    for (int i = 0; i < l->count; i++) free(l->items[i]);
    free(l->items);
    *l = (string_list){0};
}

/* A copy of s[0..n) at the end of l. -1 when out of memory. */
static int strings_add(string_list *l, const char *s, size_t n) {
    char **grown = realloc(l->items, sizeof *grown * (size_t)(l->count + 1));
    if (!grown) return -1;
    l->items = grown;
    if (!(l->items[l->count] = strndup(s, n))) return -1;
    l->count++;
    return 0;
}

/* A class name (s[0..n)) within the limits: not empty, at most MAX_CLASS_BYTES, at most
 * --max-classes of them. */
static int add_class(classify_state *s, const char *name, size_t n) {
    serve_call *c = &s->call;
    if (n == 0) return serve_call_fail(c, 0, "an empty class name (classes are comma-separated)");
    if (memchr(name, 0, n)) return serve_call_fail(c, 0, "a class name holds a NUL byte");
    if (n > MAX_CLASS_BYTES)
        return serve_call_fail(c, 1, "a class name of %zu bytes, over the limit of %d ('%.40s...')",
                               n, MAX_CLASS_BYTES, name);
    if (s->classes.count >= c->app->max_classes)
        return serve_call_fail(c, 1, "more than %d class names in one request (--max-classes)",
                               c->app->max_classes);
    return strings_add(&s->classes, name, n) == 0 ? 0 : serve_call_fail(c, 0, "out of memory");
}

static int is_blank(char ch) {
    return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n';
}

/* "cat, dog,a red car": each name trimmed of the white space around it. */
static int add_class_list(classify_state *s, const char *list, size_t n) {
    const char *end = list + n;
    for (const char *p = list;; p++) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        const char *stop = comma ? comma : end;
        while (p < stop && is_blank(*p)) p++;
        const char *last = stop;
        while (last > p && is_blank(last[-1])) last--;
        if (add_class(s, p, (size_t)(last - p)) != 0) return -1;
        if (!comma) return 0;
        p = comma;
    }
}

/* A template: "{}" where the class name goes (one without is used as it is, as vit classify
 * --template does), at most MAX_CLASS_BYTES. */
static int add_template(classify_state *s, const char *t, size_t n) {
    serve_call *c = &s->call;
    if (n > MAX_CLASS_BYTES)
        return serve_call_fail(c, 1, "a template of %zu bytes, over the limit of %d", n,
                               MAX_CLASS_BYTES);
    if (memchr(t, 0, n)) return serve_call_fail(c, 0, "a template holds a NUL byte");
    if (s->templates.count >= c->app->max_prompts)
        return serve_call_fail(c, 1, "more than %d templates (--max-prompts)", c->app->max_prompts);
    return strings_add(&s->templates, t, n) == 0 ? 0 : serve_call_fail(c, 0, "out of memory");
}

/* Once the body is read: whether this request is zero-shot, and its names and templates within
 * the limits. */
static int check_zero_shot(classify_state *s) {
    serve_call *c = &s->call;
    const serve_app *app = c->app;
    if (!serve_is_joint(app)) {
        if (s->classes.count || s->templates.count)
            return serve_call_fail(c, 0,
                                   "classes and templates are for a joint image-text model (CLIP, "
                                   "SigLIP); this model classifies into its own %d labels",
                                   vit_num_labels(app->image));
        return 0;
    }
    if (s->classes.count == 0)
        return serve_call_fail(c, 0,
                               "classes are needed: this is a joint image-text model, which "
                               "classifies zero-shot against the names given (?classes=cat,dog or "
                               "a \"classes\" form field or JSON list)");
    if (s->templates.count == 0 && /* vit classify's default */
        strings_add(&s->templates, CLI_DEFAULT_TEMPLATE, strlen(CLI_DEFAULT_TEMPLATE)) != 0)
        return serve_call_fail(c, 0, "out of memory");
    const long long prompts = (long long)s->classes.count * s->templates.count;
    if (prompts > app->max_prompts)
        return serve_call_fail(c, 1,
                               "%d class names times %d templates: %lld texts to embed, over the "
                               "limit of %d (--max-prompts)",
                               s->classes.count, s->templates.count, prompts, app->max_prompts);
    s->zero_shot = 1;
    c->task = SERVE_EMBED_JOINT;
    for (int i = 0; i < c->num_inputs; i++) c->inputs[i].task = SERVE_EMBED_JOINT;
    return 0;
}

/* ---- the query and the body ---- */

static int query_param(classify_state *s, const char *key, const char *v) {
    const int top = serve_top_param(&s->call, &s->top, key, v);
    if (top <= 0) return top;
    if (strcmp(key, "classes") == 0) {
        s->classes_from_query = 1;
        return add_class_list(s, v, strlen(v));
    }
    if (strcmp(key, "template") == 0) {
        s->templates_from_query = 1;
        return add_template(s, v, strlen(v));
    }
    return serve_unknown_param(&s->call, key);
}

/* A form's "classes" fields (comma-separated names) and "template" fields (one each): checked as
 * they come, taken once the form is read (form_done). */
static int form_field(serve_call *c, const http_part *part) {
    const classify_state *s = (const classify_state *)c;
    const int classes = strcmp(part->name, "classes") == 0;
    if (!classes && strcmp(part->name, "template") != 0) return 1;
    if (classes ? s->classes_from_query : s->templates_from_query)
        return serve_call_fail(c, 0, "%s given both in the query and in the form", part->name);
    if (!classes && memchr(part->bytes.data, 0, part->bytes.size))
        return serve_call_fail(c, 0, "a template holds a NUL byte");
    return 0;
}

/* The form's templates, then its class names (several "classes" fields: one list). */
static int form_done(serve_call *c) {
    classify_state *s = (classify_state *)c;
    const http_request *req = c->req;
    for (int p = 0; p < req->num_parts; p++)
        if (strcmp(req->parts[p].name, "template") == 0 &&
            add_template(s, req->parts[p].bytes.data ? req->parts[p].bytes.data : "",
                         req->parts[p].bytes.size) != 0)
            return -1;
    for (int p = 0; p < req->num_parts; p++)
        if (strcmp(req->parts[p].name, "classes") == 0 &&
            add_class_list(s, req->parts[p].bytes.data ? req->parts[p].bytes.data : "",
                           req->parts[p].bytes.size) != 0)
            return -1;
    return 0;
}

/* A JSON body: {"images": [data URLs], "classes": [...], "templates": [...]}, the last two for a
 * joint model. */
static int body_key(serve_call *c, const cJSON *item) {
    classify_state *s = (classify_state *)c;
    const char *key = item->string;
    if (strcmp(key, "images") == 0) return serve_json_images(c, item);
    const int classes = strcmp(key, "classes") == 0;
    if (!classes && strcmp(key, "templates") != 0)
        return serve_call_fail(c, 0,
                               "unknown key \"%.40s\" (a JSON body of /v1/classify has \"images\", "
                               "\"classes\" and \"templates\")",
                               key);
    if (!cJSON_IsArray(item)) return serve_call_fail(c, 0, "\"%s\" is not a list", key);
    if (classes ? s->classes_from_query : s->templates_from_query)
        return serve_call_fail(c, 0, "%s given both in the query and in the body", key);
    int i = 0;
    const cJSON *v;
    cJSON_ArrayForEach(v, item) {
        if (!cJSON_IsString(v)) return serve_call_fail(c, 0, "%s[%d] is not a string", key, i);
        i++;
        const char *t = v->valuestring;
        if ((classes ? add_class(s, t, strlen(t)) : add_template(s, t, strlen(t))) != 0) return -1;
    }
    return 0;
}

/* ---- the answer ---- */

static const char *class_name(const void *classes, int index) {
    return vit_classes_name(classes, index);
}

/* Zero-shot's "top" (and "logits": the scores, HF's logits_per_image) of one image's joint
 * embedding against the request's class set, as classify's with the class names for labels. -1:
 * out of memory. */
static int write_zero_shot(json_writer *w, const classify_state *s, const float *embedding) {
    const vit_classes *classes = serve_class_set_classes(s->class_set);
    const int L = vit_classes_count(classes);
    const vit_labeler labeler = {class_name, classes};
    float *scores = malloc(sizeof(float) * (size_t)L), *probs = malloc(sizeof(float) * (size_t)L);
    vit_prediction *top = malloc(sizeof *top * (size_t)(s->top.k < L ? s->top.k : L));
    int n = -1, shown = 0;
    if (scores && probs && top &&
        vit_classes_score(classes, embedding, 1, scores, probs, NULL) == 0)
        n = vit_rank(probs, L, 0, NULL, s->top.k, s->top.threshold, &labeler, top, &shown, NULL);
    if (n >= 0) serve_json_top(w, top, shown, s->top.logits ? scores : NULL, (size_t)L);
    free(scores);
    free(probs);
    free(top);
    return n < 0 ? -1 : 0;
}

static int write_result(json_writer *w, const serve_call *c, int i) {
    const classify_state *s = (const classify_state *)c;
    return s->zero_shot ? write_zero_shot(w, s, c->jobs[i].out)
                        : serve_write_top(w, c, &s->top, c->jobs[i].out);
}

/* A zero-shot request whose class set could not be had (embedding failed, or its job waited too
 * long): an error for the whole request; else its results are written now, against the set. */
static int finish(serve_call *c, http_answer *answer) {
    classify_state *s = (classify_state *)c;
    if (!s->zero_shot) return 0;
    if (!s->class_set) s->class_set = s->class_request.set;
    if (s->class_set) return 0;
    const serve_job *job = &c->jobs[c->num_inputs];
    serve_error_kind kind = SERVE_ERR_INTERNAL;
    const int status = job->status == SERVE_OK ? HTTP_INTERNAL_ERROR : serve_job_status(job, &kind);
    http_error(c->req, answer, status, kind, "the class names could not be embedded: %s",
               job->status == SERVE_OK ? s->class_request.err.msg : job->err.msg);
    return 1;
}

/* ---- the handler ---- */

static const serve_call_ops ops = {.form_field = form_field,
                                   .form_done = form_done,
                                   .json_key = body_key,
                                   .write_result = write_result,
                                   .finish = finish};

static int refuse_model(http_request *req, http_answer *now) {
    const serve_app *app = req->app;
    if (app->gen)
        return http_error(req, now, HTTP_BAD_REQUEST, SERVE_ERR_BAD_REQUEST,
                          "/v1/classify: %s is an image-to-text model (VisionEncoderDecoderModel), "
                          "without labels: POST /v1/generate writes each image's text",
                          app->model_name);
    if (!app->image) return serve_refuse_missing(req, now, 0);
    if (!serve_is_joint(app) && !vit_has_classifier(app->image))
        return http_error(req, now, HTTP_BAD_REQUEST, SERVE_ERR_BAD_REQUEST,
                          "/v1/classify: %s is a base model without a classifier (Dinov2Model, "
                          "BeitModel): POST /v1/embed gives its features",
                          app->model_name);
    return http_error(req, now, HTTP_NOT_FOUND, SERVE_ERR_NOT_FOUND,
                      "/v1/classify: zero-shot needs the joint model's text tower, which is not "
                      "served (vit serve said why when it started)");
}

int serve_classify_begin(http_request *req, http_answer *now) {
    const serve_app *app = req->app;
    if (app->gen || !app->image || (!serve_is_joint(app) && !vit_has_classifier(app->image)) ||
        (serve_is_joint(app) && !app->classes))
        return refuse_model(req, now), 1;
    classify_state *s = calloc(1, sizeof *s);
    if (!s) return *now = (http_answer){0}, 1;
    req->state = s;
    serve_call_init(&s->call, req, SERVE_CLASSIFY, &ops);
    s->top.k = 5;
    for (int q = 0; q < req->num_query; q++)
        if (query_param(s, req->query[q].key, req->query[q].value) != 0)
            return serve_call_refuse(&s->call, now, SERVE_ERR_BAD_REQUEST), 1;
    return 0;
}

int serve_classify_handle(http_request *req, http_answer *now) {
    classify_state *s = req->state;
    serve_call *c = &s->call;
    if (serve_parse_images(c) != 0 || check_zero_shot(s) != 0)
        return serve_call_refuse(c, now, SERVE_ERR_BAD_REQUEST);
    if (s->zero_shot) {
        const serve_class_query q = {(const char *const *)s->classes.items, s->classes.count,
                                     (const char *const *)s->templates.items, s->templates.count};
        c->results_late = 1;
        if (!(s->class_set = serve_class_cache_find(c->app->classes, &q))) { /* its own job */
            s->class_request = (serve_class_request){.cache = c->app->classes, .query = q};
            c->extra = (serve_job){.task = SERVE_CLASSES, .data = &s->class_request};
        }
    }
    return serve_call_submit(c, now);
}

void serve_classify_free(http_request *req) {
    classify_state *s = req->state;
    serve_call_free(&s->call);
    strings_free(&s->classes);
    strings_free(&s->templates);
    if (s->class_set) serve_class_set_release(req->app->classes, s->class_set);
    free(s);
}
