/* vit serve's HTTP request handling: the input is sent as it is, as one client's bytes, to a
 * server running in this process (libmicrohttpd, vit/cli/serve_http.c, the batcher and the models
 * behind it), on a loopback port. The server must answer or close within a few seconds, never
 * with a 500 (an internal error is a bug), and keep running: a crash in any of its threads ends
 * this process, and the sanitizers watch every thread.
 *
 * Models: models/fashion-vit (shipped, small: fast forward passes) for the image endpoints, and
 * ../shared/models/bert-sst2-tiny for /v1/text when it is there. Not a joint model: zero-shot's
 * class names, templates and JSON images are parsed (and refused) and /v1/embeddings's texts and
 * data URLs answered, but the class-set cache and the scores are not reached. CORS is on for one
 * origin (its headers and OPTIONS preflights are reached); no API key is asked for, or nearly
 * every input would stop at the 401. */
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/loopback.h"
#include "vit/cli/serve.h"

#define IMAGE_MODEL "models/fashion-vit"
#define TEXT_MODEL  "../shared/models/bert-sst2-tiny"
#define ANSWER_SECONDS                                                                             \
    8 /* the server's timeout is 1 s: an answer or a close long before this, even on a loaded      \
         machine */

static serve_app app;
static serve_http *server; /* runs until the process ends */
static int port;

static void on_batch(void *user, int task, int size, double seconds) {
    serve_metrics_batch(user, serve_task_name((serve_task)task), size, seconds);
}

static void fail(const char *what, const char *detail) {
    fprintf(stderr, "fuzz_http: %s: %s\n", what, detail);
    abort();
}

/* The service as `vit serve -m models/fashion-vit [--text-model ...] -t 1 --max-batch 4
 * --timeout 1 --max-body-bytes 1000000 --max-queue 16 --max-classes 64 --max-prompts 256
 * --cors-origin http://localhost:8080 --quiet`. */
static void start_server(void) {
    signal(SIGPIPE, SIG_IGN);
    vit_error err = {0};
    vit_params params = vit_default_params();
    params.threads = 1;
    params.max_batch = 4;
    app.image = vit_load(IMAGE_MODEL, &params, &err);
    if (!app.image) fail(IMAGE_MODEL, err.msg);
    if (access(TEXT_MODEL "/config.json", R_OK) == 0) {
        vit_text_params tp = vit_text_default_params();
        tp.threads = 1;
        tp.max_batch = 4;
        app.text = vit_text_load(TEXT_MODEL, &tp, &err);
        if (!app.text) fail(TEXT_MODEL, err.msg);
    } else {
        fprintf(stderr, "fuzz_http: %s not found: POST /v1/text is fuzzed without a text model\n",
                TEXT_MODEL);
    }
    app.host = "127.0.0.1";
    app.port = 0;
    app.max_connections = 16;
    app.timeout_s = 1;
    app.max_body_bytes = 1000000;
    app.max_inputs = 16;
    app.max_classes = 64;
    app.max_prompts = 256;
    app.model_name = "fashion-vit";
    app.quiet = 1;
    serve_access *access = serve_access_create();
    if (!access || serve_access_add_origins(access, "http://localhost:8080", &err) != 0)
        fail("access", err.msg);
    app.access = access;
    app.metrics = serve_metrics_create(4);
    app.model_json =
        serve_model_json(IMAGE_MODEL, app.image, NULL, app.text ? TEXT_MODEL : NULL, app.text);
    app.tasks = serve_tasks_create(app.image, app.text, 4, 1, &err);
    if (!app.metrics || !app.model_json || !app.tasks) fail("set-up", err.msg);
    const serve_batcher_options bo = {.max_batch = 4,
                                      .batch_wait_ms = 1,
                                      .max_queue = 16,
                                      .decode_threads = 1,
                                      .timeout_ms = 1000,
                                      .on_batch = on_batch,
                                      .user = app.metrics};
    const serve_model model = serve_tasks_model(app.tasks);
    app.batcher = serve_batcher_create(&model, &bo, &err);
    if (!app.batcher) fail("batcher", err.msg);
    char bound[128];
    if (!(server = serve_http_start(&app, bound, sizeof bound, &err))) fail("listen", err.msg);
    const char *colon = strrchr(bound, ':');
    port = colon ? atoi(colon + 1) : 0;
    if (port <= 0) fail("listen", bound);
}

/* Whether buf holds whole responses only (each a head and Content-Length bytes of body). */
static int responses_complete(const char *buf, size_t n) {
    size_t at = 0;
    while (at < n) {
        const char *end = memmem(buf + at, n - at, "\r\n\r\n", 4);
        if (!end) return 0;
        size_t body = 0;
        for (const char *h = buf + at; h < end; h++)
            if ((h == buf + at || h[-1] == '\n') && strncasecmp(h, "Content-Length:", 15) == 0)
                body = strtoul(h + 15, NULL, 10);
        at = (size_t)(end - buf) + 4 + body;
    }
    return at == n;
}

static int connect_server(void) {
    const int fd = connect_loopback(port, ANSWER_SECONDS);
    if (fd < 0) fail("connect", "refused");
    return fd;
}

/* Reads from fd into got (at most size - 1 bytes kept): until the server closes; once whole
 * responses are in, until it stays quiet for QUIET_MS; with half a response or none, until it
 * stays quiet for wait_ms. Returns 1 when it closed or answered in full, 0 when it went quiet
 * first. */
#define QUIET_MS 30
static int read_answers(int fd, char *got, size_t size, size_t *n_got, int wait_ms) {
    *n_got = 0;
    for (;;) {
        const int complete = *n_got > 0 && responses_complete(got, *n_got);
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, complete ? QUIET_MS : wait_ms) <= 0) return complete;
        const ssize_t n = recv(fd, got + *n_got, size - 1 - *n_got, 0);
        if (n <= 0) return 1;
        *n_got += (size_t)n;
        if (*n_got == size - 1) fail("answer", "more than 1 MB");
    }
}

/* Sends the bytes and closes the sending side, then reads the answers. A request the server is
 * still waiting on the rest of (a body shorter than announced, a chunk cut short) gets no answer
 * until its --timeout, and libmicrohttpd does not notice the closed sending side: rather than wait
 * a second per input, after SILENT_MS of silence the connection is dropped and the server must
 * answer GET /health on a new one within ANSWER_SECONDS (a hung or dead server cannot). */
#define SILENT_MS 200
static int server_answers_health(void);
static void exchange(const uint8_t *data, size_t size, char *head, size_t head_size) {
    static char got[1 << 20];
    const int fd = connect_server();
    send_all(fd, data, size);
    shutdown(fd, SHUT_WR);
    size_t n_got;
    const int answered = read_answers(fd, got, sizeof got, &n_got, SILENT_MS);
    if (!answered) { /* a reset, which libmicrohttpd notices at once (not a plain close) */
        const struct linger reset = {.l_onoff = 1, .l_linger = 0};
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
    }
    close(fd);
    const size_t keep = n_got < head_size - 1 ? n_got : head_size - 1;
    memcpy(head, got, keep);
    head[keep] = 0;
    if (answered) return;
    if (!server_answers_health())
        fail("hang", "an unfinished request left the server unable to answer GET /health");
}

/* GET /health answered within ANSWER_SECONDS. Connections dropped mid-request hold their slots
 * (--max-connections) until libmicrohttpd's timeout frees them, so a probe turned away for want of
 * a slot is repeated until the time is up. */
static int server_answers_health(void) {
    static const char health[] = "GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    for (int tries = 0; tries < ANSWER_SECONDS * 10; tries++) {
        const int probe = connect_server();
        send_all(probe, health, sizeof health - 1);
        char reply[256];
        size_t n;
        const int ok = read_answers(probe, reply, sizeof reply, &n, 1000);
        close(probe);
        reply[n] = 0;
        if (ok && strncmp(reply, "HTTP/1.1 200", 12) == 0) return 1;
        if (n > 0) { /* an answer, not the one expected */
            fprintf(stderr, "fuzz_http: GET /health got: %.200s\n", reply);
            return 0;
        }
        usleep(100 * 1000);
    }
    fprintf(stderr, "fuzz_http: %d connections open, %d requests under way\n",
            atomic_load(&app.connections), atomic_load(&app.in_flight));
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (port == 0) start_server();
    char head[256];
    exchange(data, size, head, sizeof head);
    /* Every answer to a bad request is a 4xx (503 when busy); a 500 is an internal error. */
    if (strncmp(head, "HTTP/1.1 500", 12) == 0 || strncmp(head, "HTTP/1.0 500", 12) == 0)
        fail("500 answer", head);
    return 0;
}
