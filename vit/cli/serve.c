/* vit serve: an HTTP service that keeps the models loaded and batches concurrent requests. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "vit/base/clock.h"
#include "vit/base/threads.h"
#include "vit/cli/cli.h"
#include "vit/cli/serve.h"
#include "vit/gen/generate.h"

enum {
    OPT_TEXT_MODEL = 1,
    OPT_HOST,
    OPT_PORT,
    OPT_WAIT,
    OPT_QUEUE,
    OPT_BODY,
    OPT_CONNECTIONS,
    OPT_TIMEOUT,
    OPT_DECODERS,
    OPT_WORKERS,
    OPT_CLASSES,
    OPT_PROMPTS,
    OPT_CLASS_CACHE,
    OPT_MAX_BEAMS,
    OPT_QUIET,
    OPT_API_KEY,
    OPT_CORS_ORIGIN,
};

static const cli_option options[] = {
    CLI_MODEL_OPTION("the image model: a classifier, a joint model (CLIP, SigLIP) or an "
                     "image-to-text model (VisionEncoderDecoderModel)",
                     CLI_MODEL_DEFAULT),
    {OPT_TEXT_MODEL, "text-model", 0, "DIR|ORG/NAME",
     "a text model for POST /v1/text (without -m and $VIT_MODEL: text only); a joint model (CLIP, "
     "SigLIP) given to -m serves its own text tower",
     NULL},
    {OPT_HOST, "host", 0, "ADDR", "the address to listen on", "127.0.0.1 (this machine only)"},
    {OPT_PORT, "port", 'p', "N", "the port (0: any free port, shown when listening)", "8080"},
    {CLI_OPT_BATCH, "max-batch", 'b', "N", "images (or texts) per forward pass, at most", "8"},
    {OPT_WAIT, "batch-wait-ms", 0, "MS",
     "longest a batch's first image waits for others still being decoded", "10"},
    {OPT_QUEUE, "max-queue", 0, "N",
     "images and texts queued or running, at most; beyond it requests get 503", "64"},
    {OPT_BODY, "max-body-bytes", 0, "N", "largest request body (413 beyond it)", "20000000"},
    {OPT_CONNECTIONS, "max-connections", 0, "N", "clients connected at once", "64"},
    {OPT_TIMEOUT, "timeout", 0, "S",
     "seconds an idle connection is kept, a body may take to arrive, an image may wait in the "
     "queue",
     "30"},
    {OPT_DECODERS, "decode-threads", 0, "N", "threads decoding images (at nice 19)",
     "one per core"},
    {OPT_WORKERS, "workers", 'w', "N",
     "forward passes running at once, each on its own batch with threads/N threads, over one "
     "copy of the weights",
     "1"},
    {OPT_CLASSES, "max-classes", 0, "N", "class names in one zero-shot request (413 beyond it)",
     "1000"},
    {OPT_PROMPTS, "max-prompts", 0, "N",
     "texts a zero-shot request's class set embeds: class names times templates (413 beyond it)",
     "10000"},
    {OPT_CLASS_CACHE, "class-cache", 0, "N",
     "zero-shot class sets kept embedded (those used longest ago make way)", "16"},
    {OPT_MAX_BEAMS, "max-beams", 0, "N",
     "image to text: the most beams a request may ask for (each worker holds max-batch x N "
     "sequences)",
     "8"},
    CLI_THREADS_OPTION,
    CLI_SIZE_OPTION("run at N x N pixels (position embeddings interpolated as Hugging Face does)"),
    CLI_PIXELS_OPTION,
    CLI_EXIF_UPRIGHT,
    CLI_BACKEND_OPTION,
    CLI_PRECISION_OPTION,
    {OPT_QUIET, "quiet", 'q', NULL, "no line per request on standard error", NULL},
    {OPT_API_KEY, "api-key", 0, "KEY",
     "every endpoint but GET /health, the page GET / (it asks for the key and sends it) and CORS "
     "preflights needs Authorization: Bearer KEY, else "
     "401 (repeat for several keys); without it $VIT_API_KEY, which other users cannot read in "
     "the process list",
     "none: no key needed"},
    {OPT_CORS_ORIGIN, "cors-origin", 0, "ORIGIN",
     "web pages from ORIGIN (scheme://host[:port]; several comma-separated or repeated; * for "
     "any) may call the API from a browser (CORS headers, OPTIONS preflights answered)",
     "none: no CORS headers"},
};

static const cli_command command = {
    "serve",
    "an HTTP service: classify, embed, explain, generate and text endpoints with dynamic batching",
    "[options]",
    "Serves the image model (and a text model, with --text-model) over HTTP until SIGTERM or\n"
    "SIGINT, which stop it accepting connections, let the requests under way finish, and exit 0.\n"
    "POST /v1/classify (?k=5&threshold=0&logits=0) and POST /v1/embed (?pool=cls|mean) take an\n"
    "image as the body, or a multipart/form-data form of \"image\" parts; POST /v1/text takes\n"
    "{\"texts\": [...]} (a token classifier: each text's entities, as vit tag --json);\n"
    "POST /v1/rerank takes {\"query\", \"documents\", \"top_n\",\n"
    "\"return_documents\"} (or TEI's \"texts\") for a cross-encoder's scores, best first;\n"
    "GET /health, GET /metrics (Prometheus), GET /v1/model and GET /v1/models (OpenAI's list)\n"
    "describe the service. Each POST but /v1/embeddings and /v1/rerank answers\n"
    "{\"results\": [...]}, one object per input, however they were sent; a JSON body's unknown\n"
    "keys are refused. Errors are OpenAI's {\"error\": {\"message\", \"type\", \"code\"}}.\n"
    "A joint model (CLIP, SigLIP) serves both towers: POST /v1/classify?classes=cat,dog\n"
    "(&template=a photo of a {}.) classifies zero-shot against the names given, POST\n"
    "/v1/embeddings takes OpenAI's {\"input\": [...]} of texts and data:image/...;base64 URLs.\n"
    "An image-to-text model (TrOCR, ViT-GPT2) writes each image's text: POST /v1/generate takes\n"
    "images as /v1/classify does, with generate's options (num_beams, max_new_tokens, min_length,\n"
    "length_penalty, no_repeat_ngram_size, early_stopping) in the query, the form or the JSON\n"
    "body; images asking the same options run together in one vit_generate call.\n"
    "POST /v1/explain (?method=rollout|grad) gives where an image model looked, as vit explain\n"
    "computes it: the class (index, label), the map, one value per patch, and the region of the\n"
    "image it covers.\n"
    "GET / is a web page over the API: images dropped on it get their bars and their map.\n"
    "Concurrent requests are decoded in parallel and run together in one forward pass;\n"
    "with --workers N, N forward passes run at once, each on its share of the threads.\n"
    "Texts are batched by length (a batch runs as passes of near lengths); one longer than\n"
    "the model takes (max_seq_length) is cut, or refused with 413 when the body of\n"
    "/v1/embeddings or TEI's /v1/rerank says \"truncate\": false.\n"
    "The port opens before the models load: meanwhile GET /health answers 503\n"
    "{\"status\": \"loading\"} and the other endpoints 503, and once they are ready /health\n"
    "answers 200. With --api-key (or $VIT_API_KEY) every endpoint but GET /health and the page\n"
    "needs the key (401 without it): the page itself needs none, it asks for the key and sends it\n"
    "with each call; with --cors-origin, pages of the origins listed may call the API.\n"
    "One line per request goes to standard error (--quiet: none); keys are never logged.",
    options,
    sizeof options / sizeof options[0]};

const cli_command *cli_serve_command(void) {
    return &command;
}

typedef struct {
    const char *model_opt, *text_dir;
    vit_params params;
    int batch_wait_ms, decode_threads, workers, class_cache, max_beams;
    serve_access *access; /* --api-key, --cors-origin */
    serve_app app;
} serve_options;

/* An --api-key or --cors-origin value, or $VIT_API_KEY (named by what). */
static int add_access(serve_options *o, int id, const char *value, const char *what) {
    vit_error err = {0};
    const int rc = id == OPT_API_KEY ? serve_access_add_key(o->access, value, &err)
                                     : serve_access_add_origins(o->access, value, &err);
    if (rc != 0) cli_usage_error(&command, "%s: %s", what, err.msg);
    return rc;
}

static int serve_option(const cli_parser *p, int id, void *user) {
    serve_options *o = user;
    int64_t bytes;
    switch (id) {
    case OPT_API_KEY:
    case OPT_CORS_ORIGIN:
        return add_access(o, id, p->value, p->option);
    case OPT_TEXT_MODEL:
        return o->text_dir = p->value, 0;
    case OPT_HOST:
        return o->app.host = p->value, 0;
    case OPT_PORT:
        return cli_int(p, 0, 65535, &o->app.port);
    case OPT_WAIT:
        return cli_int(p, 0, 60000, &o->batch_wait_ms);
    case OPT_QUEUE:
        return cli_int(p, 1, 1 << 20, &o->app.max_inputs);
    case OPT_BODY:
        if (cli_int64(p, 1, (long long)1 << 40, &bytes) != 0) return -1;
        return o->app.max_body_bytes = (size_t)bytes, 0;
    case OPT_CONNECTIONS:
        return cli_int(p, 1, 100000, &o->app.max_connections);
    case OPT_TIMEOUT:
        return cli_int(p, 1, 86400, &o->app.timeout_s);
    case OPT_DECODERS:
        return cli_int(p, 1, 256, &o->decode_threads);
    case OPT_WORKERS:
        return cli_int(p, 1, 256, &o->workers);
    case OPT_CLASSES:
        return cli_int(p, 1, 1 << 20, &o->app.max_classes);
    case OPT_PROMPTS:
        return cli_int(p, 1, 1 << 24, &o->app.max_prompts);
    case OPT_CLASS_CACHE:
        return cli_int(p, 1, 4096, &o->class_cache);
    case OPT_MAX_BEAMS:
        return cli_int(p, 1, 64, &o->max_beams);
    case OPT_QUIET:
        return o->app.quiet = 1, 0;
    }
    return 0;
}

static cli_outcome parse_options(int argc, char **argv, serve_options *o) {
    cli_common c = {.params = o->params};
    cli_parser p;
    const cli_outcome parsed = cli_parse(&p, &command, argc, argv, &c, serve_option, o);
    o->model_opt = c.model, o->params = c.params;
    if (parsed == CLI_PARSED && p.num_rest)
        return cli_usage_error(&command, "unexpected argument '%s'", p.rest[0]);
    const char *key = getenv("VIT_API_KEY"); /* the option wins */
    if (parsed == CLI_PARSED && serve_access_num_keys(o->access) == 0 && key && *key &&
        add_access(o, OPT_API_KEY, key, "$VIT_API_KEY") != 0)
        return CLI_USAGE_ERROR;
    return parsed;
}

#ifdef VIT_MICROHTTPD

/* ---- models ---- */

typedef struct {
    char image_dir[4096];
    const char *text_dir;             /* --text-model's folder, or a joint model's */
    char text_model_dir[4096];        /* --text-model resolved (vit_resolve_model) */
    const char *image_ref, *text_ref; /* org/name references the folders came from, or NULL */
    char model_name[256];
    char text_model_name[256]; /* a --text-model beside an image model: its folder's name */
    vit_gen_context *gen;      /* an image-to-text model: image is its encoder */
    vit_context *image;
    vit_text_context *text;
    serve_class_cache *classes;
    serve_tasks *tasks;
    serve_batcher *batcher;
    serve_metrics *metrics;
    char *model_json;
} service;

static void on_batch(void *user, int task, int size, double seconds) {
    serve_metrics_batch(user, serve_task_name((serve_task)task), size, seconds);
}

/* --max-beams, or more when the model's own settings ask for more (its requests without options
 * run with them). */
static int model_beams(const char *dir, int max_beams) {
    gen_config g;
    vit_error err = {0};
    if (gen_config_load(dir, &g, &err) != 0) return max_beams; /* loading says why */
    return g.num_beams > max_beams ? g.num_beams : max_beams;
}

/* Whether dir, which did not load as an image model, is a text model (a BERT folder given to -m):
 * only after a failed load, so the second load costs nothing to a server that starts. */
static int is_text_model(const char *dir, const serve_options *o) {
    const vit_text_params tp = cli_text_params(&o->params);
    vit_error err = {0};
    vit_text_context *text = vit_text_load(dir, &tp, &err);
    const int is_text = text && vit_text_joint_dim(text) == 0;
    vit_text_free(text);
    return is_text;
}

/* The image model: -m, else $VIT_MODEL, else the shipped one unless a text model alone was asked
 * for. */
static int load_image_model(service *s, serve_options *o) {
    const char *env = getenv("VIT_MODEL");
    if (!o->model_opt && !(env && *env) && o->text_dir) return 0;
    vit_error err = {0};
    const char *dir = cli_model_dir("serve", o->model_opt, s->image_dir, sizeof s->image_dir);
    if (!dir) return -1;
    const char *ref = o->model_opt ? o->model_opt : env;
    if (ref && strcmp(ref, dir) != 0 && !cli_is_dir(ref)) s->image_ref = ref;
    if (cli_is_image_to_text(dir)) {
        vit_gen_params gp = vit_gen_default_params();
        gp.image = o->params;
        gp.max_beams = o->max_beams = model_beams(dir, o->max_beams);
        if ((s->gen = vit_gen_load(dir, &gp, &err))) s->image = vit_gen_image_context(s->gen);
    } else {
        s->image = vit_load(dir, &o->params, &err);
    }
    if (s->image) {
        if (vit_preprocess_defaults(s->image))
            fprintf(stderr, "vit serve: %s: %s\n", s->image_dir, vit_preprocess_defaults(s->image));
        return 0;
    }
    if (is_text_model(dir, o))
        fprintf(stderr,
                "vit serve: %s is a text model, not an image model: serve it with --text-model "
                "%s (POST /v1/text)\n",
                dir, dir);
    else
        cli_print_load_error("serve", o->model_opt, s->image_dir, &err);
    return -1;
}

/* A joint image model's text tower, from its folder: without it (SigLIP's tokenizer not built in,
 * a CLIPVisionModelWithProjection folder) the images are still served, and zero-shot and texts
 * are refused saying why. */
static int load_text_tower(service *s, const serve_options *o) {
    if (o->text_dir) {
        fprintf(stderr,
                "vit serve: --text-model: %s is a joint image-text model, whose own text tower is "
                "served (vit serve --help)\n",
                s->image_dir);
        return -1;
    }
    const vit_text_params tp = cli_text_params(&o->params);
    vit_error err = {0};
    if (!(s->text = vit_text_load(s->image_dir, &tp, &err))) {
        fprintf(stderr,
                "vit serve: %s: the text tower is not served (%s): no zero-shot classification, "
                "images only on /v1/embeddings\n",
                s->image_dir, err.msg);
        return 0;
    }
    s->text_dir = s->image_dir;
    if (vit_text_joint_dim(s->text) != vit_joint_dim(s->image)) {
        fprintf(stderr,
                "vit serve: %s: the text tower's joint dim %d is not the image tower's %d\n",
                s->image_dir, vit_text_joint_dim(s->text), vit_joint_dim(s->image));
        return -1;
    }
    s->classes = serve_class_cache_create(o->class_cache);
    return s->classes ? 0 : (fprintf(stderr, "vit serve: out of memory\n"), -1);
}

static int load_text_model(service *s, const serve_options *o) {
    if (s->image && vit_joint_dim(s->image) > 0) return load_text_tower(s, o);
    if (!o->text_dir) return 0;
    const vit_text_params tp = cli_text_params(&o->params);
    vit_error err = {0};
    if (vit_resolve_model(o->text_dir, s->text_model_dir, sizeof s->text_model_dir, &err) == 0)
        s->text = vit_text_load(s->text_model_dir, &tp, &err);
    if (!s->text) fprintf(stderr, "vit serve: %s\n", err.msg);
    s->text_dir = s->text_model_dir;
    if (strcmp(o->text_dir, s->text_dir) != 0 && !cli_is_dir(o->text_dir))
        s->text_ref = o->text_dir;
    return s->text ? 0 : -1;
}

/* dir's last name ("models/vit-tiny-in1k/" -> "vit-tiny-in1k") into out. */
static void folder_name(const char *dir, char *out, size_t size) {
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/') n--;
    size_t start = n;
    while (start > 0 && dir[start - 1] != '/') start--;
    snprintf(out, size, "%.*s", (int)(n - start), dir + start);
}

/* A model's name: the org/name it was asked for by (not its snapshot's commit), else its folder's
 * last name. */
static void model_name(const char *ref, const char *dir, char *out, size_t size) {
    if (ref)
        snprintf(out, size, "%s", ref);
    else
        folder_name(dir, out, size);
}

/* The name of the model served (the image model's, else the text model's): "model" in the
 * answers of /v1/embeddings; and a text model's beside an image model's (GET /v1/models). */
static void name_model(service *s) {
    if (s->image)
        model_name(s->image_ref, s->image_dir, s->model_name, sizeof s->model_name);
    else
        model_name(s->text_ref, s->text_dir, s->model_name, sizeof s->model_name);
    if (s->image && s->text && s->text_dir != s->image_dir)
        model_name(s->text_ref, s->text_dir, s->text_model_name, sizeof s->text_model_name);
}

/* The cores split between the workers: each loads (and shares) with threads / workers, at least
 * one. */
static void split_threads(serve_options *o) {
    const int threads = threads_resolve(o->params.threads) / o->workers;
    o->params.threads = threads > 0 ? threads : 1;
}

/* The models loaded and the batcher started (s->metrics, already there, counts its batches). */
static int start_service(service *s, serve_options *o) {
    split_threads(o);
    if (load_image_model(s, o) != 0 || load_text_model(s, o) != 0) return -1;
    vit_error err = {0};
    name_model(s);
    s->model_json = serve_model_json(s->image_dir, s->image, s->gen, s->text_dir, s->text);
    s->tasks = s->gen
                   ? serve_tasks_create_gen(s->gen, s->text, o->params.max_batch, o->workers, &err)
                   : serve_tasks_create(s->image, s->text, o->params.max_batch, o->workers, &err);
    if (!s->model_json || !s->tasks) {
        fprintf(stderr, "vit serve: %s\n", err.msg[0] ? err.msg : "out of memory");
        return -1;
    }
    const serve_batcher_options bo = {.max_batch = o->params.max_batch,
                                      .batch_wait_ms = o->batch_wait_ms,
                                      .max_queue = o->app.max_inputs,
                                      .decode_threads = o->decode_threads,
                                      .timeout_ms = o->app.timeout_s * 1000,
                                      .workers = o->workers,
                                      .on_batch = on_batch,
                                      .user = s->metrics};
    const serve_model model = serve_tasks_model(s->tasks);
    if (!(s->batcher = serve_batcher_create(&model, &bo, &err))) {
        fprintf(stderr, "vit serve: %s\n", err.msg);
        return -1;
    }
    return 0;
}

static void stop_service(service *s) {
    serve_batcher_free(s->batcher);
    serve_tasks_free(s->tasks);
    serve_class_cache_free(s->classes);
    serve_metrics_free(s->metrics);
    free(s->model_json);
    if (s->gen)
        vit_gen_free(s->gen); /* and its encoder, s->image */
    else
        vit_free(s->image);
    vit_text_free(s->text);
}

/* ---- lifecycle ---- */

/* SIGINT and SIGTERM reach a handler that writes the signal's number to a pipe the main thread
 * reads. Blocking them and calling sigwait is not enough: OpenBLAS starts its threads before main
 * runs, with the signals unblocked, and a signal the kernel hands to one of those would kill the
 * process with its default action (seen: a second SIGTERM during shutdown, exit 143). A client gone
 * away must not kill the process either: SIGPIPE ignored. */
static int stop_pipe[2] = {-1, -1};

static void on_stop_signal(int sig) {
    const int saved = errno;
    const unsigned char byte = (unsigned char)sig;
    if (write(stop_pipe[1], &byte, 1) < 0) { /* the pipe is full: a signal is pending anyway */
    }
    errno = saved;
}

static int catch_stop_signals(void) {
    if (pipe2(stop_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
        fprintf(stderr, "vit serve: cannot create a pipe for signals: %s\n", strerror(errno));
        return -1;
    }
    struct sigaction action = {.sa_handler = on_stop_signal, .sa_flags = SA_RESTART};
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, NULL);
    sigaction(SIGTERM, &action, NULL);
    signal(SIGPIPE, SIG_IGN);
    return 0;
}

/* The next stop signal's number, or 0 when none came within timeout_ms (-1: wait for ever). */
static int wait_stop_signal(int timeout_ms) {
    struct pollfd in = {.fd = stop_pipe[0], .events = POLLIN};
    const int ready = poll(&in, 1, timeout_ms);
    unsigned char byte = 0;
    if (ready > 0 && read(stop_pipe[0], &byte, 1) == 1) return byte;
    return 0;
}

/* What a client must send, in the ready line (the keys themselves never). */
static void announce_access(const serve_access *a) {
    const int keys = serve_access_num_keys(a), origins = serve_access_num_origins(a);
    if (keys) fprintf(stderr, "; API key needed (%d key%s)", keys, keys == 1 ? "" : "s");
    if (origins) fprintf(stderr, "; CORS for %d origin%s", origins, origins == 1 ? "" : "s");
}

static void announce(const serve_options *o, const service *s, const char *bound) {
    fprintf(stderr, "vit serve: ready on http://%s", bound);
    if (s->gen)
        fprintf(stderr, "; image-to-text model %s (%s; decoder %s)", s->image_dir,
                vit_compute(s->image), vit_gen_compute(s->gen));
    else if (s->image)
        fprintf(stderr, "; image model %s (%s)", s->image_dir, vit_compute(s->image));
    if (s->text && s->text_dir == s->image_dir)
        fprintf(stderr, "; its text tower (%s), joint dim %d", vit_text_compute(s->text),
                vit_text_joint_dim(s->text));
    else if (s->text)
        fprintf(stderr, "; text model %s (%s)", s->text_dir, vit_text_compute(s->text));
    fprintf(stderr, "; max batch %d, queue %d; %d worker%s x %d thread%s", o->params.max_batch,
            o->app.max_inputs, o->workers, o->workers == 1 ? "" : "s", o->params.threads,
            o->params.threads == 1 ? "" : "s");
    announce_access(o->access);
    fputc('\n', stderr);
}

/* After the first signal: no new connections, the requests under way finish (at most the timeout,
 * or until a second signal), then everything stops. */
static void drain(serve_app *app, serve_http *http, int sig) {
    fprintf(stderr, "vit serve: %s: finishing %d request%s under way\n", strsignal(sig),
            atomic_load(&app->in_flight), atomic_load(&app->in_flight) == 1 ? "" : "s");
    serve_http_quiesce(http);
    atomic_store(&app->draining, 1);
    const double until = clock_seconds() + app->timeout_s;
    while (atomic_load(&app->in_flight) > 0 && clock_seconds() < until)
        if (wait_stop_signal(10) > 0) {
            fprintf(stderr, "vit serve: second signal: stopping now\n");
            break;
        }
    serve_batcher_drain(app->batcher); /* no connection may stay suspended */
}

/* The models loaded while the port is open (/health answers 503 meanwhile): the listener first,
 * so that a port in use fails at once and an orchestrator sees the server loading. */
static int serve_until_stopped(serve_options *o) {
    service s = {0};
    serve_app *app = &o->app;
    app->access = o->access;
    app->started = (double)time(NULL);
    if (!(app->metrics = s.metrics = serve_metrics_create(o->params.max_batch))) {
        fprintf(stderr, "vit serve: out of memory\n");
        return 1;
    }
    atomic_store(&app->loading, 1);
    char bound[128];
    vit_error err = {0};
    serve_http *http = serve_http_start(app, bound, sizeof bound, &err);
    if (!http) {
        fprintf(stderr, "vit serve: %s\n", err.msg);
        stop_service(&s);
        return 1;
    }
    fprintf(stderr,
            "vit serve: listening on http://%s; loading the model (GET /health answers 503 until "
            "it is ready)\n",
            bound);
    if (start_service(&s, o) != 0) {
        serve_http_stop(http); /* before what its threads read is freed */
        stop_service(&s);
        return 1;
    }
    app->gen = s.gen;
    if (s.gen) app->gen_defaults = vit_gen_default_options(s.gen);
    app->max_beams = o->max_beams;
    app->image = s.image;
    app->text = s.text;
    app->model_name = s.model_name;
    app->text_model_name = s.text_model_name[0] ? s.text_model_name : NULL;
    app->model_json = s.model_json;
    app->classes = s.classes;
    app->tasks = s.tasks;
    app->batcher = s.batcher;
    atomic_store(&app->loading, 0); /* after the rest: the HTTP threads read it first */
    announce(o, &s, bound);
    int sig = 0;
    while (sig == 0) sig = wait_stop_signal(-1);
    drain(app, http, sig);
    serve_http_stop(http);
    stop_service(&s);
    fprintf(stderr, "vit serve: stopped\n");
    return 0;
}

#endif

int cli_serve(int argc, char **argv) {
    const long cores = sysconf(_SC_NPROCESSORS_ONLN);
    serve_options o = {.params = vit_default_params(),
                       .batch_wait_ms = 10,
                       .decode_threads = cores > 0 ? (int)cores : 1,
                       .workers = 1,
                       .class_cache = 16,
                       .max_beams = 8,
                       .app = {.host = "127.0.0.1",
                               .port = 8080,
                               .max_connections = 64,
                               .timeout_s = 30,
                               .max_body_bytes = 20000000,
                               .max_inputs = 64,
                               .max_classes = 1000,
                               .max_prompts = 10000}};
    o.params.max_batch = 8;
    if (!(o.access = serve_access_create()))
        return fprintf(stderr, "vit serve: out of memory\n"), 1;
    const cli_outcome parsed = parse_options(argc, argv, &o);
    int status = cli_exit_status(parsed);
#ifdef VIT_MICROHTTPD
    if (parsed == CLI_PARSED) status = catch_stop_signals() != 0 ? 1 : serve_until_stopped(&o);
#else
    if (parsed == CLI_PARSED) {
        fprintf(stderr, "vit serve: not built in (this vit was built without libmicrohttpd: "
                        "install libmicrohttpd-dev and rebuild)\n");
        status = 1;
    }
#endif
    serve_access_free(o.access);
    return status;
}
