/* `vit serve` end to end: the binary ($VIT_BIN) on a free loopback port, each endpoint's answers
 * against `vit classify --json`, `vit text --json`, `vit info` and the library for the same
 * inputs, every error path, the queue refusing when full, timeouts, a clean shutdown on SIGTERM
 * with a request under way, and the port in use. Every wait is bounded: sockets time out, servers
 * are killed by alarm() if a test leaves one behind. Skips loudly when bin/vit has no serve. */
#include "tests/testutil.h"

#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/loopback.h"
#include "vit/base/base64.h"
#include "vit/base/bytes.h"
#include "vit/vit.h"

#define IMAGENET "models/vit-tiny-in1k" /* the default model */
#define CLIP     "tests/data/clip-micro"
#define BERT     "models/bert-sst2-tiny"
#define VED      "tests/data/ved-trocr-vit" /* a random micro TrOCR: ViT encoder, TrOCR decoder */
#define MAX_BODY 2000000                    /* the main server's --max-body-bytes */

static const char *const photos[] = {"examples/photos/cat.jpg", "examples/photos/coffee.jpg",
                                     "examples/photos/rocket.jpg"};

/* ---- a server process ---- */

typedef struct {
    pid_t pid;
    int port;
    char log[4200]; /* its standard error */
} server;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* $VIT_API_KEY for the next server started (NULL: none, whatever the tests' own environment). */
static const char *server_api_key_env;

static char *read_log(const server *s) {
    size_t n;
    char *text = (char *)read_whole_file(s->log, &n);
    return text ? text : strdup("");
}

/* Starts `vit serve --port 0 ARGS...` and waits (at most 120 s) for the line that says so: "ready
 * on" (the models loaded), or with loading set "listening on" (the port open, the models perhaps
 * still loading). Returns 0, or -1 when this vit has no serve built in (the test is then
 * skipped). */
static int start_server_until(server *s, const char *const *args, int loading) {
    static int count;
    snprintf(s->log, sizeof s->log, "%s/serve-%d.log", test_tmpdir(), count++);
    const char *argv[64] = {test_vit_bin(), "serve", "--port", "0"};
    int argc = 4;
    while (*args && argc < 63) argv[argc++] = *args++;
    argv[argc] = NULL;
    fflush(NULL);
    s->pid = fork();
    assert_true(s->pid >= 0);
    if (s->pid == 0) {
        const int err = open(s->log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        const int null = open("/dev/null", O_RDWR);
        if (err < 0 || null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(err, 2) < 0)
            _exit(127);
        unsetenv("VIT_MODEL");
        if (server_api_key_env)
            setenv("VIT_API_KEY", server_api_key_env, 1);
        else
            unsetenv("VIT_API_KEY");
        alarm(600); /* a server no test stopped */
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    for (const double until = now() + 120; now() < until; usleep(20 * 1000)) {
        char *log = read_log(s);
        const char *at = strstr(log, "listening on http://127.0.0.1:");
        if (at) s->port = atoi(at + strlen("listening on http://127.0.0.1:"));
        const int ready = strstr(log, "ready on http://127.0.0.1:") != NULL;
        const int absent = strstr(log, "not built in") != NULL;
        free(log);
        if (at && (loading || ready)) return 0;
        int status;
        if (waitpid(s->pid, &status, WNOHANG) == s->pid) {
            if (absent) return -1;
            log = read_log(s);
            fail_msg("vit serve exited at start: %s", log);
        }
    }
    kill(s->pid, SIGKILL);
    fail_msg("vit serve did not start within 120 s");
    return -1;
}

static int start_server(server *s, const char *const *args) {
    return start_server_until(s, args, 0);
}

#define START_OR_SKIP(s, ...)                                                                      \
    do {                                                                                           \
        REQUIRE_BIN();                                                                             \
        const char *args_[] = {__VA_ARGS__, NULL};                                                 \
        if (start_server(s, args_) != 0) {                                                         \
            print_message("SKIP %s: this vit has no serve (built without libmicrohttpd)\n",        \
                          __func__);                                                               \
            skip();                                                                                \
        }                                                                                          \
    } while (0)

/* Sends sig and waits (at most 60 s) for the exit; returns its status (128 + a signal). */
static int stop_server(server *s, int sig) {
    kill(s->pid, sig);
    int status = 0;
    for (const double until = now() + 60; now() < until; usleep(10 * 1000))
        if (waitpid(s->pid, &status, WNOHANG) == s->pid) {
            const int rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
            if (rc != 0) { /* what it said, to see why */
                char *log = read_log(s);
                const size_t n = strlen(log);
                fprintf(stderr, "vit serve exited with %d; the end of its log:\n%s\n", rc,
                        log + (n > 6000 ? n - 6000 : 0));
                free(log);
            }
            return rc;
        }
    kill(s->pid, SIGKILL);
    waitpid(s->pid, &status, 0);
    fail_msg("vit serve did not stop within 60 s of signal %d", sig);
    return -1;
}

/* ---- a small HTTP client ---- */

typedef struct {
    int status;
    char *head; /* the status line and headers */
    char *body;
    size_t size;
    cJSON *json;      /* the body parsed, when it is JSON */
    const cJSON *one; /* the answer's only result, when "results" has one */
} response;

static void response_free(response *r) {
    free(r->head);
    free(r->body);
    cJSON_Delete(r->json);
}

static int connect_to(int port) {
    return connect_loopback(port, 60);
}

/* "METHOD target HTTP/1.1" with a Content-Length when there is a body, extra headers (each ending
 * in \r\n), then the body. */
static void send_request(int fd, const char *method, const char *target, const char *extra,
                         const void *body, size_t size) {
    char head[2048];
    int n = snprintf(head, sizeof head, "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\n%s", method, target,
                     extra ? extra : "");
    if (body) n += snprintf(head + n, sizeof head - (size_t)n, "Content-Length: %zu\r\n", size);
    n += snprintf(head + n, sizeof head - (size_t)n, "\r\n");
    send_all(fd, head, (size_t)n);
    if (body) send_all(fd, body, size);
}

static const char *header(const response *r, const char *name) {
    static char value[256];
    char key[80];
    snprintf(key, sizeof key, "\r\n%s:", name);
    const char *at = strcasestr(r->head, key);
    if (!at) return NULL;
    at += strlen(key);
    while (*at == ' ') at++;
    const size_t n = strcspn(at, "\r\n");
    snprintf(value, sizeof value, "%.*s", (int)n, at);
    return value;
}

/* One response: the head, then Content-Length bytes of body (none for HEAD). status 0: the
 * connection closed (or timed out) without one. */
static response read_response(int fd, int head_only) {
    response r = {0};
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    char *end = NULL;
    while (!end) {
        if (len + 1 >= cap) buf = realloc(buf, cap *= 2);
        const ssize_t n = recv(fd, buf + len, cap - len - 1, 0);
        if (n <= 0) break;
        len += (size_t)n;
        buf[len] = 0;
        end = strstr(buf, "\r\n\r\n");
    }
    if (!end) return free(buf), r;
    r.head = strndup(buf, (size_t)(end - buf) + 2);
    sscanf(r.head, "HTTP/1.%*d %d", &r.status);
    const char *length = header(&r, "Content-Length");
    const size_t want = head_only || !length ? 0 : strtoull(length, NULL, 10);
    size_t have = len - (size_t)(end + 4 - buf);
    r.body = malloc(want + 1);
    memcpy(r.body, end + 4, have < want ? have : want);
    while (have < want) {
        const ssize_t n = recv(fd, r.body + have, want - have, 0);
        if (n <= 0) break;
        have += (size_t)n;
    }
    r.size = have < want ? have : want;
    r.body[r.size] = 0;
    r.json = cJSON_ParseWithLength(r.body, r.size);
    const cJSON *results = cJSON_GetObjectItem(r.json, "results");
    if (cJSON_GetArraySize(results) == 1) r.one = cJSON_GetArrayItem(results, 0);
    free(buf);
    return r;
}

static response request(int port, const char *method, const char *target, const char *extra,
                        const void *body, size_t size) {
    const int fd = connect_to(port);
    assert_true(fd >= 0);
    send_request(fd, method, target, extra, body, size);
    response r = read_response(fd, strcmp(method, "HEAD") == 0);
    close(fd);
    return r;
}

static response post_file(int port, const char *target, const char *path) {
    size_t size;
    uint8_t *bytes = read_whole_file(path, &size);
    assert_non_null(bytes);
    response r = request(port, "POST", target, NULL, bytes, size);
    free(bytes);
    return r;
}

#define BOUNDARY "vit-test-boundary-7MA4YWxkTrZu0gW"

static void put(byte_buf *b, const void *data, size_t n) {
    assert_int_equal(byte_buf_append(b, data, n, SIZE_MAX), 0);
}

static void put_part(byte_buf *b, const char *field, const char *filename, const void *data,
                     size_t size) {
    char head[512];
    const int n = snprintf(head, sizeof head,
                           "--" BOUNDARY "\r\nContent-Disposition: form-data; name=\"%s\"; "
                           "filename=\"%s\"\r\nContent-Type: application/octet-stream\r\n\r\n",
                           field, filename);
    put(b, head, (size_t)n);
    put(b, data, size);
    put(b, "\r\n", 2);
}

static void put_file_part(byte_buf *b, const char *path) {
    size_t size;
    uint8_t *bytes = read_whole_file(path, &size);
    assert_non_null(bytes);
    put_part(b, "image", strrchr(path, '/') + 1, bytes, size);
    free(bytes);
}

static response post_form(int port, const char *target, byte_buf *form) {
    put(form, "--" BOUNDARY "--\r\n", strlen("--" BOUNDARY "--\r\n"));
    response r = request(port, "POST", target,
                         "Content-Type: multipart/form-data; boundary=" BOUNDARY "\r\n", form->data,
                         form->size);
    byte_buf_free(form);
    return r;
}

/* ---- what the CLI says of the same inputs ---- */

/* `vit classify --json ARGS... FILES...`: one object per file. */
static cJSON *classify_json(const char *const *args, const char *const *files, int n) {
    const char *argv[64] = {"classify", "-m", IMAGENET, "--json"};
    int argc = 4;
    while (*args) argv[argc++] = *args++;
    for (int i = 0; i < n; i++) argv[argc++] = files[i];
    argv[argc] = NULL;
    test_run_result run = test_run_vit(NULL, NULL, argv);
    assert_int_equal(run.status, 0);
    cJSON *all = cJSON_CreateArray();
    for (char *line = strtok(run.out, "\n"); line; line = strtok(NULL, "\n"))
        cJSON_AddItemToArray(all, cJSON_Parse(line));
    test_run_free(&run);
    assert_int_equal(cJSON_GetArraySize(all), n);
    return all;
}

/* The same "top" (index and label exactly; probabilities to 1e-5: batches of other sizes may
 * round differently) and, if both have them, the same logits. */
static void assert_same_answer(const cJSON *got, const cJSON *want) {
    const cJSON *gt = cJSON_GetObjectItem(got, "top"), *wt = cJSON_GetObjectItem(want, "top");
    if (!gt || !wt) fail_msg("no top in %s", cJSON_PrintUnformatted(got));
    assert_int_equal(cJSON_GetArraySize(gt), cJSON_GetArraySize(wt));
    for (int i = 0; i < cJSON_GetArraySize(wt); i++) {
        const cJSON *g = cJSON_GetArrayItem(gt, i), *w = cJSON_GetArrayItem(wt, i);
        assert_int_equal(cJSON_GetObjectItem(g, "index")->valueint,
                         cJSON_GetObjectItem(w, "index")->valueint);
        assert_string_equal(cJSON_GetObjectItem(g, "label")->valuestring,
                            cJSON_GetObjectItem(w, "label")->valuestring);
        assert_true(fabs(cJSON_GetObjectItem(g, "prob")->valuedouble -
                         cJSON_GetObjectItem(w, "prob")->valuedouble) < 1e-5);
    }
    const cJSON *gl = cJSON_GetObjectItem(got, "logits"), *wl = cJSON_GetObjectItem(want, "logits");
    assert_true(!gl == !wl);
    for (int i = 0; gl && i < cJSON_GetArraySize(wl); i++)
        assert_true(fabs(cJSON_GetArrayItem(gl, i)->valuedouble -
                         cJSON_GetArrayItem(wl, i)->valuedouble) < 1e-3);
}

/* An error object, OpenAI's {"message", "type", "code"}: its message. */
static const char *message_of(const cJSON *error) {
    const cJSON *m = cJSON_GetObjectItem(error, "message"), *t = cJSON_GetObjectItem(error, "type"),
                *c = cJSON_GetObjectItem(error, "code");
    if (!cJSON_IsString(m) || !cJSON_IsString(t) || !cJSON_IsString(c))
        fail_msg("not an error {message, type, code}: %s", cJSON_PrintUnformatted(error));
    return m->valuestring;
}

static const char *error_of(const response *r) {
    const cJSON *e = cJSON_GetObjectItem(r->json, "error");
    if (!cJSON_IsObject(e))
        fail_msg("status %d without a JSON error: %.*s", r->status, (int)r->size, r->body);
    return message_of(e);
}

/* A refused request: the status and a JSON {"error": ...} mentioning `says`. */
static void assert_refused(response r, int status, const char *says) {
    if (r.status != status)
        fail_msg("status %d, expected %d: %.*s", r.status, status, (int)r.size, r.body);
    assert_non_null(strstr(header(&r, "Content-Type"), "application/json"));
    if (!strstr(error_of(&r), says)) fail_msg("'%s' does not say '%s'", error_of(&r), says);
    response_free(&r);
}

/* ---- the main server, shared by the tests of answers and errors ---- */

static server main_server;
static int have_text;      /* ../shared's BERT is served too */
static server clip_server; /* a joint model: tests/data/clip-micro with its text tower */
static server gen_server;  /* an image-to-text model: VED, two workers */

static int start_main(void **state) {
    (void)state;
    if (!test_vit_bin()) return 0; /* the tests skip */
    char bert[4200];
    snprintf(bert, sizeof bert, "%s", shared_path(BERT));
    const int text = shared_dir() && access(bert, R_OK) == 0;
    const char *args[] = {"-m", IMAGENET, "--max-body-bytes", "2000000", "--max-queue", "16",
                          "-t", "2",      "--text-model",     bert,      NULL};
    if (!text) {
        args[8] = NULL; /* no --text-model */
        print_message("serve: ../shared/" BERT " not found: /v1/text not served, its checks "
                      "skipped (set VIT_SHARED to ../shared's path)\n");
    }
    if (start_server(&main_server, args) != 0) main_server.pid = 0;
    have_text = text && main_server.pid != 0;
    const char *clip[] = {"-m",
                          CLIP,
                          "--max-classes",
                          "400",
                          "--max-prompts",
                          "800",
                          "--max-queue",
                          "16",
                          "--class-cache",
                          "4",
                          "-t",
                          "1",
                          NULL};
    if (main_server.pid != 0 && start_server(&clip_server, clip) != 0) clip_server.pid = 0;
    const char *gen[] = {"-m", VED, "--max-beams", "6", "--max-queue", "32",
                         "-t", "2", "--workers",   "2", NULL};
    if (main_server.pid != 0 && start_server(&gen_server, gen) != 0) gen_server.pid = 0;
    return 0;
}

static int stop_main(void **state) {
    (void)state;
    if (main_server.pid > 0) assert_int_equal(stop_server(&main_server, SIGTERM), 0);
    if (clip_server.pid > 0) assert_int_equal(stop_server(&clip_server, SIGTERM), 0);
    if (gen_server.pid > 0) assert_int_equal(stop_server(&gen_server, SIGTERM), 0);
    return 0;
}

#define REQUIRE_CLIP()                                                                             \
    do {                                                                                           \
        REQUIRE_BIN();                                                                             \
        if (clip_server.pid <= 0) {                                                                \
            print_message("SKIP %s: this vit has no serve (built without libmicrohttpd)\n",        \
                          __func__);                                                               \
            skip();                                                                                \
        }                                                                                          \
    } while (0)

#define REQUIRE_GEN()                                                                              \
    do {                                                                                           \
        REQUIRE_BIN();                                                                             \
        if (gen_server.pid <= 0) {                                                                 \
            print_message("SKIP %s: this vit has no serve (built without libmicrohttpd)\n",        \
                          __func__);                                                               \
            skip();                                                                                \
        }                                                                                          \
    } while (0)

#define REQUIRE_MAIN()                                                                             \
    do {                                                                                           \
        REQUIRE_BIN();                                                                             \
        if (main_server.pid <= 0) {                                                                \
            print_message("SKIP %s: this vit has no serve (built without libmicrohttpd)\n",        \
                          __func__);                                                               \
            skip();                                                                                \
        }                                                                                          \
    } while (0)

/* POST /v1/classify with each photo as the body: classify --json's top for the same file. */
static void test_classify_raw_matches_cli(void **state) {
    (void)state;
    REQUIRE_MAIN();
    const char *args[] = {"-k", "3", NULL};
    cJSON *want = classify_json(args, photos, 3);
    for (int i = 0; i < 3; i++) {
        response r = post_file(main_server.port, "/v1/classify?k=3", photos[i]);
        assert_int_equal(r.status, 200);
        assert_string_equal(header(&r, "Content-Type"), "application/json");
        assert_same_answer(r.one, cJSON_GetArrayItem(want, i));
        assert_null(cJSON_GetObjectItem(r.one, "file"));
        response_free(&r);
    }
    cJSON_Delete(want);
}

/* Ten golden images (PNG and JPEG of every kind) in one form, with threshold and logits. */
static void test_classify_form_matches_cli(void **state) {
    (void)state;
    REQUIRE_MAIN();
    static const char *const files[10] = {
        GOLDEN_IMAGES "/rgb_300x200.png",          GOLDEN_IMAGES "/rgba_alpha_90x70.png",
        GOLDEN_IMAGES "/gray_100x60.png",          GOLDEN_IMAGES "/gray_alpha_50x50.png",
        GOLDEN_IMAGES "/palette_120x90.png",       GOLDEN_IMAGES "/rgb_1x1.png",
        GOLDEN_IMAGES "/baseline_q90_240x180.jpg", GOLDEN_IMAGES "/progressive_200x150.jpg",
        GOLDEN_IMAGES "/gray_160x120.jpg",         GOLDEN_IMAGES "/444_q95_128x96.jpg"};
    byte_buf form = {0};
    for (int i = 0; i < 10; i++) put_file_part(&form, files[i]);
    const char *args[] = {"-k", "4", "--threshold", "0.01", "--logits", NULL};
    cJSON *want = classify_json(args, files, 10);
    response r = post_form(main_server.port, "/v1/classify?k=4&threshold=0.01&logits=1", &form);
    assert_int_equal(r.status, 200);
    const cJSON *results = cJSON_GetObjectItem(r.json, "results");
    assert_int_equal(cJSON_GetArraySize(results), 10);
    for (int i = 0; i < 10; i++) {
        const cJSON *got = cJSON_GetArrayItem(results, i);
        assert_string_equal(cJSON_GetObjectItem(got, "file")->valuestring,
                            strrchr(files[i], '/') + 1);
        assert_same_answer(got, cJSON_GetArrayItem(want, i));
    }
    response_free(&r);
    cJSON_Delete(want);
}

/* One bad part among good ones: an error object in its place, the others answered, 200. Every
 * part bad: 400, with the same results. */
static void test_classify_form_partial_failure(void **state) {
    (void)state;
    REQUIRE_MAIN();
    byte_buf form = {0};
    put_file_part(&form, photos[0]);
    put_part(&form, "image", "notes.txt", "not an image", 12);
    response r = post_form(main_server.port, "/v1/classify?k=1", &form);
    assert_int_equal(r.status, 200);
    const cJSON *results = cJSON_GetObjectItem(r.json, "results");
    assert_int_equal(cJSON_GetArraySize(results), 2);
    assert_non_null(cJSON_GetObjectItem(cJSON_GetArrayItem(results, 0), "top"));
    const cJSON *bad = cJSON_GetArrayItem(results, 1);
    assert_string_equal(cJSON_GetObjectItem(bad, "file")->valuestring, "notes.txt");
    assert_non_null(strstr(message_of(cJSON_GetObjectItem(bad, "error")),
                           "not a PNG, JPEG, WebP, TIFF, GIF or BMP"));
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(bad, "error"), "code")->valuestring,
                        "bad_input");
    response_free(&r);
    put_part(&form, "image", "a.txt", "nope", 4);
    put_part(&form, "image", "b.txt", "nope", 4);
    r = post_form(main_server.port, "/v1/classify", &form);
    assert_int_equal(r.status, 400);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(r.json, "results")), 2);
    assert_refused(r, 400, "not a PNG, JPEG, WebP, TIFF, GIF or BMP");
}

/* A part without a filename: a plain form field. */
static void put_field(byte_buf *b, const char *field, const void *data, size_t size) {
    char head[256];
    const int n =
        snprintf(head, sizeof head,
                 "--" BOUNDARY "\r\nContent-Disposition: form-data; name=\"%s\"\r\n\r\n", field);
    put(b, head, (size_t)n);
    put(b, data, size);
    put(b, "\r\n", 2);
}

/* results[i] of a form's answer is photo `photo` (by its top class), or an error saying "empty",
 * under the file name `file` (NULL: none given). */
static void expect_result(const cJSON *results, int i, const char *file, int photo) {
    static const int top_class[] = {285, 967}; /* Egyptian cat, espresso */
    const cJSON *got = cJSON_GetArrayItem(results, i), *name = cJSON_GetObjectItem(got, "file");
    if (!got) fail_msg("no result %d", i);
    if (file ? !cJSON_IsString(name) || strcmp(name->valuestring, file) != 0 : name != NULL)
        fail_msg("result %d: file %s, expected %s", i, cJSON_PrintUnformatted(got), file);
    const cJSON *error = cJSON_GetObjectItem(got, "error");
    if (photo < 0) {
        if (!cJSON_IsObject(error) || !strstr(message_of(error), "empty"))
            fail_msg("result %d: %s, expected an error saying empty", i,
                     cJSON_PrintUnformatted(got));
        return;
    }
    const cJSON *top = cJSON_GetArrayItem(cJSON_GetObjectItem(got, "top"), 0);
    if (!top || cJSON_GetObjectItem(top, "index")->valueint != top_class[photo])
        fail_msg("result %d: %s, expected class %d", i, cJSON_PrintUnformatted(got),
                 top_class[photo]);
}

/* An empty "image" part, first, in the middle or last, with or without a file name: an error in
 * its own place (the others answered, 200), never merged into the next part; every part empty:
 * 400. Empty texts are texts: each answered in its place. */
static void test_form_empty_parts(void **state) {
    (void)state;
    REQUIRE_MAIN();
    const int cat = 0, coffee = 1, empty = -1;
    const int layouts[3][3] = {{empty, cat, coffee}, {cat, empty, coffee}, {cat, coffee, empty}};
    for (int l = 0; l < 3; l++) {
        byte_buf form = {0};
        for (int i = 0; i < 3; i++)
            if (layouts[l][i] == empty)
                put_part(&form, "image", "empty.jpg", "", 0);
            else
                put_file_part(&form, photos[layouts[l][i]]);
        response r = post_form(main_server.port, "/v1/classify?k=1", &form);
        if (r.status != 200) fail_msg("layout %d: status %d: %s", l, r.status, r.body);
        const cJSON *results = cJSON_GetObjectItem(r.json, "results");
        assert_int_equal(cJSON_GetArraySize(results), 3);
        for (int i = 0; i < 3; i++) {
            const int p = layouts[l][i];
            expect_result(results, i,
                          p == empty ? "empty.jpg"
                          : p == cat ? "cat.jpg"
                                     : "coffee.jpg",
                          p);
        }
        response_free(&r);
    }
    byte_buf form = {0}; /* fields without a file name: empty, a photo, empty, empty, a photo */
    put_field(&form, "image", "", 0);
    put_file_part(&form, photos[cat]);
    put_field(&form, "image", "", 0);
    put_field(&form, "image", "", 0);
    put_file_part(&form, photos[coffee]);
    response r = post_form(main_server.port, "/v1/classify?k=1", &form);
    assert_int_equal(r.status, 200);
    const cJSON *results = cJSON_GetObjectItem(r.json, "results");
    assert_int_equal(cJSON_GetArraySize(results), 5);
    const int want[] = {empty, cat, empty, empty, coffee};
    for (int i = 0; i < 5; i++)
        expect_result(results, i,
                      want[i] == empty ? NULL
                      : want[i] == cat ? "cat.jpg"
                                       : "coffee.jpg",
                      want[i]);
    response_free(&r);
    put_part(&form, "image", "a.jpg", "", 0);
    put_field(&form, "image", "", 0);
    r = post_form(main_server.port, "/v1/classify", &form);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(r.json, "results")), 2);
    assert_refused(r, 400, "empty");
    if (!have_text) return;
    const char *body = "{\"texts\": [\"\", \"a gorgeous, witty, seductive movie.\", \"\"]}";
    r = request(main_server.port, "POST", "/v1/text?k=1", "Content-Type: application/json\r\n",
                body, strlen(body));
    assert_int_equal(r.status, 200);
    results = cJSON_GetObjectItem(r.json, "results");
    assert_int_equal(cJSON_GetArraySize(results), 3);
    for (int i = 0; i < 3; i++) {
        const cJSON *got = cJSON_GetArrayItem(results, i);
        assert_string_equal(cJSON_GetObjectItem(got, "text")->valuestring,
                            i == 1 ? "a gorgeous, witty, seductive movie." : "");
        assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(got, "top")), 1);
    }
    response_free(&r);
}

/* Every label of 16 images (?k=1000): each answer whole and in vit_top_k's order; while it is
 * under way another connection's GET /health is answered at once. The answers were once built
 * on libmicrohttpd's one thread, at O(k²·n) a label list: 3 s for these during which no
 * connection was served. */
static void test_k1000_keeps_server_responsive(void **state) {
    (void)state;
    REQUIRE_MAIN();
    enum { N = 16 };
    byte_buf form = {0};
    for (int i = 0; i < N; i++) put_file_part(&form, photos[i % 2]);
    put(&form, "--" BOUNDARY "--\r\n", strlen("--" BOUNDARY "--\r\n"));
    const int fd = connect_to(main_server.port);
    assert_true(fd >= 0);
    send_request(fd, "POST", "/v1/classify?k=1000",
                 "Content-Type: multipart/form-data; boundary=" BOUNDARY "\r\n", form.data,
                 form.size);
    byte_buf_free(&form);
    double slowest = 0;
    int probes = 0;
    struct pollfd answered = {.fd = fd, .events = POLLIN};
    for (const double until = now() + 300; now() < until && poll(&answered, 1, 0) == 0;) {
        const double t0 = now();
        response h = request(main_server.port, "GET", "/health", NULL, NULL, 0);
        assert_int_equal(h.status, 200);
        response_free(&h);
        slowest = fmax(slowest, now() - t0);
        probes++;
        usleep(5000);
    }
    response r = read_response(fd, 0);
    close(fd);
    print_message("    %d GET /health during the request, the slowest %.1f ms\n", probes,
                  slowest * 1e3);
    assert_int_equal(r.status, 200);
    const cJSON *results = cJSON_GetObjectItem(r.json, "results");
    assert_int_equal(cJSON_GetArraySize(results), N);
    for (int i = 0; i < N; i++) {
        const cJSON *top = cJSON_GetObjectItem(cJSON_GetArrayItem(results, i), "top");
        assert_int_equal(cJSON_GetArraySize(top), 1000);
        char seen[1000] = {0};
        double sum = 0;
        for (int j = 0; j < 1000; j++) {
            const cJSON *p = cJSON_GetArrayItem(top, j);
            const int index = cJSON_GetObjectItem(p, "index")->valueint;
            const double prob = cJSON_GetObjectItem(p, "prob")->valuedouble;
            assert_true(index >= 0 && index < 1000 && !seen[index]);
            seen[index] = 1;
            sum += prob;
            if (j == 0) assert_int_equal(index, i % 2 ? 967 : 285);
            if (j == 0) continue;
            const cJSON *q = cJSON_GetArrayItem(top, j - 1); /* %.9g: equal text, equal floats */
            const double before = cJSON_GetObjectItem(q, "prob")->valuedouble;
            assert_true(before > prob ||
                        (before == prob && cJSON_GetObjectItem(q, "index")->valueint < index));
        }
        assert_true(fabs(sum - 1) < 1e-3);
    }
    response_free(&r);
    if (slowest > 1.0) fail_msg("GET /health waited %.2f s behind the answer", slowest);
}

/* /v1/embed: the library's vit_embed of the same image, both poolings, raw and in a form. */
static void test_embed_matches_library(void **state) {
    (void)state;
    REQUIRE_MAIN();
    vit_error err = {0};
    vit_context *ctx = vit_load(IMAGENET, NULL, &err);
    assert_non_null(ctx);
    const int D = vit_hidden_size(ctx);
    float *pixels = test_alloc_floats(vit_input_floats(ctx)), *want = test_alloc_floats(D);
    assert_int_equal(vit_preprocess_file(ctx, photos[1], pixels, &err), 0);
    for (int pool = 0; pool < 2; pool++) {
        assert_int_equal(vit_embed(ctx, pixels, 1, pool ? VIT_POOL_MEAN : VIT_POOL_CLS, want, &err),
                         0);
        response r =
            post_file(main_server.port, pool ? "/v1/embed?pool=mean" : "/v1/embed", photos[1]);
        assert_int_equal(r.status, 200);
        const cJSON *e = cJSON_GetObjectItem(r.one, "embedding");
        assert_int_equal(cJSON_GetArraySize(e), D);
        for (int d = 0; d < D; d++)
            assert_true(fabs(cJSON_GetArrayItem(e, d)->valuedouble - want[d]) < 1e-3);
        response_free(&r);
    }
    byte_buf form = {0};
    put_file_part(&form, photos[1]);
    put_file_part(&form, photos[2]);
    response r = post_form(main_server.port, "/v1/embed?pool=mean", &form);
    assert_int_equal(r.status, 200);
    const cJSON *first = cJSON_GetArrayItem(cJSON_GetObjectItem(r.json, "results"), 0);
    assert_string_equal(cJSON_GetObjectItem(first, "file")->valuestring, "coffee.jpg");
    const cJSON *e = cJSON_GetObjectItem(first, "embedding");
    for (int d = 0; d < D; d++)
        assert_true(fabs(cJSON_GetArrayItem(e, d)->valuedouble - want[d]) < 1e-3);
    response_free(&r);
    free(pixels), free(want);
    vit_free(ctx);
}

/* One /v1/explain answer against the library's explanation of the same file: the class, the map
 * (the library's, scaled to 0..1 as the server sends it) and the grid. */
static void assert_explanation(const cJSON *got, vit_context *ctx, const float *pixels,
                               vit_explain_method method) {
    vit_error err = {0};
    vit_explanation want;
    assert_int_equal(vit_explain(ctx, pixels, method, -1, &want, &err), 0);
    assert_int_equal(cJSON_GetObjectItem(got, "index")->valueint, want.label);
    assert_string_equal(cJSON_GetObjectItem(got, "label")->valuestring, vit_label(ctx, want.label));
    assert_true(fabs(cJSON_GetObjectItem(got, "prob")->valuedouble - want.prob) < 1e-5);
    assert_string_equal(cJSON_GetObjectItem(got, "method")->valuestring,
                        method == VIT_EXPLAIN_GRAD ? "grad" : "rollout");
    const cJSON *grid = cJSON_GetObjectItem(got, "grid");
    assert_int_equal(cJSON_GetArrayItem(grid, 0)->valueint, want.grid_h);
    assert_int_equal(cJSON_GetArrayItem(grid, 1)->valueint, want.grid_w);
    const int n = want.grid_h * want.grid_w;
    float lo = want.map[0], hi = want.map[0];
    for (int c = 1; c < n; c++) lo = fminf(lo, want.map[c]), hi = fmaxf(hi, want.map[c]);
    const cJSON *map = cJSON_GetObjectItem(got, "map");
    assert_int_equal(cJSON_GetArraySize(map), n);
    for (int c = 0; c < n; c++)
        assert_true(fabs(cJSON_GetArrayItem(map, c)->valuedouble - (want.map[c] - lo) / (hi - lo)) <
                    1e-5);
    vit_explanation_free(&want);
}

/* /v1/explain: the library's explanation (rollout by default, grad asked for) with where it lies
 * in the photo: cat.jpg is 451x300, resized to 372x248 (shortest edge 248) and cropped 224x224 at
 * (74, 12): in the photo's pixels the crop starts at (74*451/372, 12*300/248) and is 224*451/372
 * wide, 224*300/248 high. A form explains each image; /v1/model says it explains. */
static void test_explain_matches_library(void **state) {
    (void)state;
    REQUIRE_MAIN();
    vit_error err = {0};
    vit_context *ctx = vit_load(IMAGENET, NULL, &err);
    assert_non_null(ctx);
    float *pixels = test_alloc_floats(vit_input_floats(ctx));
    assert_int_equal(vit_preprocess_file(ctx, photos[0], pixels, &err), 0);
    for (int grad = 0; grad < 2; grad++) {
        response r = post_file(main_server.port, grad ? "/v1/explain?method=grad" : "/v1/explain",
                               photos[0]);
        assert_int_equal(r.status, 200);
        assert_explanation(r.one, ctx, pixels, grad ? VIT_EXPLAIN_GRAD : VIT_EXPLAIN_ROLLOUT);
        assert_string_equal(cJSON_GetObjectItem(r.one, "label")->valuestring, "Egyptian cat");
        const cJSON *image = cJSON_GetObjectItem(r.one, "image");
        assert_int_equal(cJSON_GetObjectItem(image, "width")->valueint, 451);
        assert_int_equal(cJSON_GetObjectItem(image, "height")->valueint, 300);
        const cJSON *region = cJSON_GetObjectItem(r.one, "region");
        const double want[4] = {74.0 * 451 / 372, 12.0 * 300 / 248, 224.0 * 451 / 372,
                                224.0 * 300 / 248};
        const char *keys[4] = {"x", "y", "width", "height"};
        for (int k = 0; k < 4; k++)
            assert_true(fabs(cJSON_GetObjectItem(region, keys[k])->valuedouble - want[k]) < 1e-4);
        response_free(&r);
    }
    byte_buf form = {0};
    put_file_part(&form, photos[0]);
    put_file_part(&form, photos[1]);
    response r = post_form(main_server.port, "/v1/explain", &form);
    assert_int_equal(r.status, 200);
    const cJSON *second = cJSON_GetArrayItem(cJSON_GetObjectItem(r.json, "results"), 1);
    assert_string_equal(cJSON_GetObjectItem(second, "file")->valuestring, "coffee.jpg");
    assert_int_equal(vit_preprocess_file(ctx, photos[1], pixels, &err), 0);
    assert_explanation(second, ctx, pixels, VIT_EXPLAIN_ROLLOUT);
    response_free(&r);
    r = request(main_server.port, "GET", "/v1/model", NULL, NULL, 0);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "image"), "explain")));
    response_free(&r);
    free(pixels);
    vit_free(ctx);
}

/* /v1/explain refuses what it cannot explain, in one line each, and a bad query or image. */
static void test_explain_refusals(void **state) {
    (void)state;
    REQUIRE_MAIN();
    assert_refused(post_file(main_server.port, "/v1/explain?method=last", photos[0]), 400,
                   "invalid method 'last' (rollout or grad)");
    assert_refused(post_file(main_server.port, "/v1/explain?k=3", photos[0]), 400,
                   "unknown query parameter 'k' (/v1/explain takes method)");
    assert_refused(post_file(main_server.port, "/v1/explain", "README.md"), 400, "not a PNG, JPEG");
    if (gen_server.pid > 0)
        assert_refused(post_file(gen_server.port, "/v1/explain", photos[0]), 400,
                       "/v1/explain: ved-trocr-vit is an image-to-text model");
    if (clip_server.pid > 0) {
        assert_refused(post_file(clip_server.port, "/v1/explain", photos[0]), 400,
                       "CLIPModel (vision tower): no explanations for this family yet");
        response r = request(clip_server.port, "GET", "/v1/model", NULL, NULL, 0);
        assert_true(
            cJSON_IsFalse(cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "image"), "explain")));
        response_free(&r);
    }
}

/* /v1/text: `vit text --json` of the same sentences, results in order. */
static void test_text_matches_cli(void **state) {
    (void)state;
    REQUIRE_MAIN();
    REQUIRE_SHARED(BERT);
    const char *args[] = {"text",
                          "-m",
                          shared_path(BERT),
                          "--json",
                          "-k",
                          "2",
                          "--logits",
                          "a gorgeous, witty, seductive movie.",
                          "the plot is nothing but boilerplate clichés",
                          NULL};
    test_run_result run = test_run_vit(NULL, NULL, args);
    assert_int_equal(run.status, 0);
    const char *body = "{\"texts\": [\"a gorgeous, witty, seductive movie.\", \"the plot is "
                       "nothing but boilerplate clich\\u00e9s\"]}";
    response r = request(main_server.port, "POST", "/v1/text?k=2&logits=1",
                         "Content-Type: application/json\r\n", body, strlen(body));
    assert_int_equal(r.status, 200);
    const cJSON *results = cJSON_GetObjectItem(r.json, "results");
    assert_int_equal(cJSON_GetArraySize(results), 2);
    char *line = strtok(run.out, "\n");
    for (int i = 0; i < 2; i++, line = strtok(NULL, "\n")) {
        cJSON *want = cJSON_Parse(line);
        const cJSON *got = cJSON_GetArrayItem(results, i);
        assert_string_equal(cJSON_GetObjectItem(got, "text")->valuestring,
                            cJSON_GetObjectItem(want, "text")->valuestring);
        assert_same_answer(got, want);
        cJSON_Delete(want);
    }
    response_free(&r);
    test_run_free(&run);
}

static long long info_parameters(void) {
    const char *args[] = {"info", "-m", IMAGENET, NULL};
    test_run_result run = test_run_vit(NULL, NULL, args);
    assert_int_equal(run.status, 0);
    const char *at = strstr(run.out, "parameters:");
    assert_non_null(at);
    const long long n = atoll(at + strlen("parameters:"));
    test_run_free(&run);
    return n;
}

/* GET /health, /v1/model (what vit info says), /metrics (Prometheus text, counting what was
 * served), HEAD. */
static void test_health_model_metrics(void **state) {
    (void)state;
    REQUIRE_MAIN();
    response r = request(main_server.port, "GET", "/health", NULL, NULL, 0);
    assert_int_equal(r.status, 200);
    assert_string_equal(cJSON_GetObjectItem(r.json, "status")->valuestring, "ok");
    response_free(&r);
    r = request(main_server.port, "HEAD", "/health", NULL, NULL, 0);
    assert_int_equal(r.status, 200);
    response_free(&r);
    r = request(main_server.port, "GET", "/v1/model", NULL, NULL, 0);
    assert_int_equal(r.status, 200);
    const cJSON *image = cJSON_GetObjectItem(r.json, "image");
    assert_string_equal(cJSON_GetObjectItem(image, "architecture")->valuestring,
                        "ViTForImageClassification");
    assert_int_equal((long long)cJSON_GetObjectItem(image, "parameters")->valuedouble,
                     info_parameters());
    const cJSON *labels = cJSON_GetObjectItem(image, "labels");
    assert_int_equal(cJSON_GetArraySize(labels), 1000);
    assert_string_equal(cJSON_GetArrayItem(labels, 285)->valuestring, "Egyptian cat");
    assert_int_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(image, "input"), "tokens")->valueint,
                     197);
    if (have_text)
        assert_string_equal(
            cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "text"), "architecture")->valuestring,
            "BertForSequenceClassification");
    response_free(&r);
    response c = post_file(main_server.port, "/v1/classify", photos[0]);
    assert_int_equal(c.status, 200);
    response_free(&c);
    r = request(main_server.port, "GET", "/metrics", NULL, NULL, 0);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(header(&r, "Content-Type"), "text/plain; version=0.0.4"));
    static const char *lines[] = {
        "vit_serve_requests_total{endpoint=\"/v1/classify\",code=\"200\"}",
        "vit_serve_errors_total{kind=\"queue_full\"}",
        "vit_serve_inputs_total{kind=\"image\"}",
        "vit_serve_batch_size_bucket{le=\"1\"}",
        "vit_serve_queue_wait_seconds_count",
        "vit_serve_forward_seconds_bucket{le=\"+Inf\"}",
        "process_resident_memory_bytes"};
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
        if (!strstr(r.body, lines[i])) fail_msg("no %s in /metrics", lines[i]);
    response_free(&r);
}

/* Every bad request: a 4xx with a JSON error, and the server goes on. */
static void test_bad_requests(void **state) {
    (void)state;
    REQUIRE_MAIN();
    const int port = main_server.port;
    assert_refused(request(port, "POST", "/v1/classify", NULL, "hello", 5), 400,
                   "not a PNG, JPEG, WebP, TIFF, GIF or BMP");
    size_t size;
    uint8_t *jpeg = read_whole_file(photos[0], &size);
    assert_refused(request(port, "POST", "/v1/classify", NULL, jpeg, size / 2), 400, "");
    uint8_t *big = calloc(MAX_BODY + 1, 1);
    memcpy(big, jpeg, size);
    assert_refused(request(port, "POST", "/v1/classify", NULL, big, MAX_BODY + 1), 413,
                   "--max-body-bytes");
    free(big);
    assert_refused(request(port, "POST", "/v1/classify", NULL, "", 0), 400, "empty body");
    assert_refused(request(port, "GET", "/v1/classify", NULL, NULL, 0), 405, "takes POST");
    response r = request(port, "DELETE", "/health", NULL, NULL, 0);
    assert_string_equal(header(&r, "Allow"), "GET, HEAD");
    assert_refused(r, 405, "takes GET");
    assert_refused(request(port, "GET", "/nowhere", NULL, NULL, 0), 404, "no such path");
    assert_refused(request(port, "POST", "/v1/classify?top=3", NULL, jpeg, size), 400,
                   "unknown query parameter 'top'");
    assert_refused(request(port, "POST", "/v1/classify?k=0", NULL, jpeg, size), 400, "invalid k");
    assert_refused(request(port, "POST", "/v1/classify?threshold=2", NULL, jpeg, size), 400,
                   "invalid threshold");
    assert_refused(request(port, "POST", "/v1/embed?pool=max", NULL, jpeg, size), 400,
                   "cls or mean");
    free(jpeg);
    const char *form = "--" BOUNDARY "\r\nContent-Disposition: form-data; name=\"image\"; "
                       "filename=\"x.jpg\"\r\n\r\nabc";
    assert_refused(request(port, "POST", "/v1/classify",
                           "Content-Type: multipart/form-data; boundary=" BOUNDARY "\r\n", form,
                           strlen(form)),
                   400, "truncated multipart");
    /* found by tests/fuzz/fuzz_http: a part without a name reached strcmp(NULL) */
    const char *nameless = "--" BOUNDARY "\r\nContent-Disposition: form-data; "
                           "filename=\"x.jpg\"\r\n\r\nabc\r\n--" BOUNDARY "--\r\n";
    assert_refused(request(port, "POST", "/v1/classify",
                           "Content-Type: multipart/form-data; boundary=" BOUNDARY "\r\n", nameless,
                           strlen(nameless)),
                   400, "a form part without a name");
    byte_buf b = {0};
    put_part(&b, "file", "cat.jpg", "x", 1);
    assert_refused(post_form(port, "/v1/classify", &b), 400, "unexpected form field 'file'");
    put(&b, "", 0);
    assert_refused(post_form(port, "/v1/classify", &b), 400, "no \"image\" part");
    for (int i = 0; i < 17; i++) put_part(&b, "image", "tiny.jpg", "x", 1);
    assert_refused(post_form(port, "/v1/classify", &b), 413, "more than 16 images");
    if (have_text) {
        static const char *bodies[] = {"{\"texts\": [\"a\", ", "[1, 2]", "{\"text\": \"a\"}",
                                       "{\"texts\": []}", "{\"texts\": [\"a\", 3]}"};
        static const char *says[] = {"not valid JSON", "not a JSON object", "no \"texts\" array",
                                     "empty", "non-string"};
        for (int i = 0; i < 5; i++)
            assert_refused(request(port, "POST", "/v1/text", NULL, bodies[i], strlen(bodies[i])),
                           400, says[i]);
    }
    r = request(port, "GET", "/health", NULL, NULL, 0);
    assert_int_equal(r.status, 200);
    response_free(&r);
}

/* A chunked body that grows past the limit is read to its end and refused with 413; HTTP that is
 * not HTTP gets libmicrohttpd's own 400; a keep-alive connection serves several requests. */
static void test_chunked_garbage_keepalive(void **state) {
    (void)state;
    REQUIRE_MAIN();
    int fd = connect_to(main_server.port);
    send_request(fd, "POST", "/v1/classify", "Transfer-Encoding: chunked\r\n", NULL, 0);
    char chunk[70000 + 16];
    const int n = snprintf(chunk, sizeof chunk, "%x\r\n", 70000);
    memset(chunk + n, 'x', 70000);
    memcpy(chunk + n + 70000, "\r\n", 2);
    for (int i = 0; i * 70000 <= MAX_BODY; i++) send_all(fd, chunk, (size_t)n + 70002);
    send_all(fd, "0\r\n\r\n", 5);
    assert_refused(read_response(fd, 0), 413, "--max-body-bytes");
    close(fd);
    fd = connect_to(main_server.port);
    send_all(fd, "\x01\x02 garbage\r\n\r\n", 14);
    response r = read_response(fd, 0);
    assert_true(r.status == 400 || r.status == 0);
    response_free(&r);
    close(fd);
    fd = connect_to(main_server.port);
    for (int i = 0; i < 3; i++) {
        send_request(fd, "GET", "/health", NULL, NULL, 0);
        r = read_response(fd, 0);
        assert_int_equal(r.status, 200);
        response_free(&r);
    }
    close(fd);
}

/* ---- a joint model (CLIP): zero-shot classification and /v1/embeddings ---- */

static const char *const zero_shot_images[] = {"examples/photos/cat.jpg",
                                               GOLDEN_IMAGES "/rgb_300x200.png",
                                               GOLDEN_IMAGES "/palette_120x90.png"};

/* The library's zero-shot of the same images against the same names and templates: its scores
 * [3, n] and probabilities. */
typedef struct {
    int n;
    float scores[3 * 16], probs[3 * 16];
} zero_shot_want;

static zero_shot_want library_zero_shot(const char *const *names, int n,
                                        const char *const *templates, int n_templates) {
    zero_shot_want want = {.n = n};
    assert_true(n <= 16);
    vit_error err = {0};
    vit_context *image = vit_load(CLIP, NULL, &err);
    vit_text_context *text = vit_text_load(CLIP, NULL, &err);
    if (!image || !text) fail_msg("%s", err.msg);
    vit_classes *classes = vit_classes_create(text, names, n, templates, n_templates, &err);
    assert_non_null(classes);
    float *pixels = test_alloc_floats(vit_input_floats(image));
    for (int i = 0; i < 3; i++) {
        assert_int_equal(vit_preprocess_file(image, zero_shot_images[i], pixels, &err), 0);
        assert_int_equal(
            vit_zero_shot(image, classes, pixels, 1, want.scores + i * n, want.probs + i * n, &err),
            0);
    }
    free(pixels);
    vit_classes_free(classes);
    vit_text_free(text);
    vit_free(image);
    return want;
}

/* A zero-shot answer object: every class (k >= n) in vit_classes_top_k's order, named, with the
 * library's probabilities and, if asked, its scores as "logits". */
static void assert_zero_shot(const cJSON *got, const zero_shot_want *want, int image,
                             const char *const *names) {
    const int n = want->n;
    const float *probs = want->probs + image * n, *scores = want->scores + image * n;
    const cJSON *top = cJSON_GetObjectItem(got, "top");
    if (cJSON_GetArraySize(top) != n) fail_msg("not %d classes: %s", n, cJSON_Print(got));
    for (int j = 0; j < n; j++) {
        const cJSON *p = cJSON_GetArrayItem(top, j);
        const int index = cJSON_GetObjectItem(p, "index")->valueint;
        assert_true(index >= 0 && index < n);
        assert_string_equal(cJSON_GetObjectItem(p, "label")->valuestring, names[index]);
        const double prob = cJSON_GetObjectItem(p, "prob")->valuedouble;
        if (fabs(prob - probs[index]) > 1e-5)
            fail_msg("image %d, %s: prob %.7g, the library's %.7g", image, names[index], prob,
                     probs[index]);
        if (j > 0)
            assert_true(cJSON_GetObjectItem(cJSON_GetArrayItem(top, j - 1), "prob")->valuedouble >=
                        prob);
    }
    const cJSON *logits = cJSON_GetObjectItem(got, "logits");
    for (int k = 0; logits && k < n; k++)
        assert_true(fabs(cJSON_GetArrayItem(logits, k)->valuedouble - scores[k]) < 1e-4);
}

/* "data:image/...;base64,..." of a file. */
static char *data_url(const char *path) {
    size_t size;
    uint8_t *bytes = read_whole_file(path, &size);
    assert_non_null(bytes);
    const char *type = strstr(path, ".png") ? "image/png" : "image/jpeg";
    char *url = malloc(strlen(type) + 16 + base64_encoded_size(size));
    const int n = sprintf(url, "data:%s;base64,", type);
    base64_encode(bytes, size, url + n);
    free(bytes);
    return url;
}

static response post_json(int port, const char *target, const cJSON *body) {
    char *text = cJSON_PrintUnformatted(body);
    response r =
        request(port, "POST", target, "Content-Type: application/json\r\n", text, strlen(text));
    free(text);
    return r;
}

/* POST /v1/classify?classes=... on a joint model: the library's vit_zero_shot (softmax over the
 * names), the same names and templates given in the query, in a form and in a JSON body (where a
 * name may hold a comma); without a template vit classify's default, "a photo of a {}."; one
 * without {} used as it is; k and threshold as classify's. */
static void test_zero_shot_matches_library(void **state) {
    (void)state;
    REQUIRE_CLIP();
    const int port = clip_server.port;
    const char *names[] = {"cat", "dog", "a red car"}, *photo_of[] = {"a photo of a {}."};
    zero_shot_want want = library_zero_shot(names, 3, photo_of, 1); /* vit classify's default */
    for (int i = 0; i < 3; i++) {
        response r = post_file(port, "/v1/classify?classes=cat,dog,a%20red%20car&logits=1",
                               zero_shot_images[i]);
        if (r.status != 200) fail_msg("status %d: %s", r.status, r.body);
        assert_zero_shot(r.one, &want, i, names);
        response_free(&r);
    }
    response r = post_file(port, "/v1/classify?classes=%20cat%20,dog,a%20red%20car&k=1",
                           zero_shot_images[0]); /* names trimmed; k */
    assert_int_equal(r.status, 200);
    const cJSON *top = cJSON_GetObjectItem(r.one, "top");
    assert_int_equal(cJSON_GetArraySize(top), 1);
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(top, 0), "label")->valuestring,
                        "cat");
    response_free(&r);
    r = post_file(port, "/v1/classify?classes=cat,dog,a%20red%20car&threshold=0.5",
                  zero_shot_images[0]);
    int above = 0;
    for (int k = 0; k < 3; k++) above += want.probs[k] >= 0.5;
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(r.one, "top")), above);
    response_free(&r);
    /* two templates, averaged (CLIP's prompt ensembling): in a form, then in JSON */
    const char *templates[] = {"a photo of a {}.", "a blurry photo of the {}"};
    want = library_zero_shot(names, 3, templates, 2);
    byte_buf form = {0};
    for (int i = 0; i < 3; i++) put_file_part(&form, zero_shot_images[i]);
    put_field(&form, "classes", "cat, dog", 8);
    put_field(&form, "classes", "a red car", 9); /* a second field: more names */
    put_field(&form, "template", templates[0], strlen(templates[0]));
    put_field(&form, "template", templates[1], strlen(templates[1]));
    r = post_form(port, "/v1/classify?logits=1", &form);
    if (r.status != 200) fail_msg("status %d: %s", r.status, r.body);
    const cJSON *results = cJSON_GetObjectItem(r.json, "results");
    assert_int_equal(cJSON_GetArraySize(results), 3);
    for (int i = 0; i < 3; i++) {
        const cJSON *got = cJSON_GetArrayItem(results, i);
        assert_string_equal(cJSON_GetObjectItem(got, "file")->valuestring,
                            strrchr(zero_shot_images[i], '/') + 1);
        assert_zero_shot(got, &want, i, names);
    }
    response_free(&r);
    const char *plain[] = {"a photo"}; /* no {}: the same prompt for every name */
    want = library_zero_shot(names, 3, plain, 1);
    r = post_file(port, "/v1/classify?classes=cat,dog,a%20red%20car&template=a%20photo",
                  zero_shot_images[1]);
    assert_int_equal(r.status, 200);
    assert_zero_shot(r.one, &want, 1, names);
    response_free(&r);
    const char *odd[] = {"a car, red", "dog", "cat"};
    want = library_zero_shot(odd, 3, templates, 1);
    cJSON *body = cJSON_CreateObject(), *images = cJSON_AddArrayToObject(body, "images");
    for (int i = 0; i < 3; i++) {
        char *url = data_url(zero_shot_images[i]);
        cJSON_AddItemToArray(images, cJSON_CreateString(url));
        free(url);
    }
    cJSON_AddItemToObject(body, "classes", cJSON_CreateStringArray(odd, 3));
    cJSON_AddItemToObject(body, "templates", cJSON_CreateStringArray(templates, 1));
    r = post_json(port, "/v1/classify?logits=1", body);
    cJSON_Delete(body);
    if (r.status != 200) fail_msg("status %d: %s", r.status, r.body);
    results = cJSON_GetObjectItem(r.json, "results");
    assert_int_equal(cJSON_GetArraySize(results), 3);
    for (int i = 0; i < 3; i++) assert_zero_shot(cJSON_GetArrayItem(results, i), &want, i, odd);
    response_free(&r);
}

/* A number of /metrics. */
static double metric_or(int port, const char *name, double absent) {
    response r = request(port, "GET", "/metrics", NULL, NULL, 0);
    assert_int_equal(r.status, 200);
    char key[128];
    snprintf(key, sizeof key, "\n%s ", name);
    const char *at = strstr(r.body, key);
    const double v = at ? strtod(at + strlen(key), NULL) : absent;
    response_free(&r);
    return v;
}

static double metric(int port, const char *name) {
    const double v = metric_or(port, name, NAN);
    if (isnan(v)) fail_msg("no %s in /metrics", name);
    return v;
}

#define EMBEDDED "vit_serve_zero_shot_class_sets_embedded_total"
#define HITS     "vit_serve_zero_shot_class_set_hits_total"

/* A class set is embedded once: the same names again are found in the cache (the same answer),
 * the same names in another order or with a template are other sets; 6 requests at once for a new
 * set of 300 names embed it once. */
static void test_zero_shot_cache(void **state) {
    (void)state;
    REQUIRE_CLIP();
    const int port = clip_server.port;
    const double embedded = metric(port, EMBEDDED), hits = metric(port, HITS);
    const char *target = "/v1/classify?classes=tabby,tiger,lynx&logits=1";
    response first = post_file(port, target, zero_shot_images[0]);
    assert_int_equal(first.status, 200);
    assert_true(metric(port, EMBEDDED) == embedded + 1);
    response again = post_file(port, target, zero_shot_images[0]);
    assert_int_equal(again.status, 200);
    assert_string_equal(again.body, first.body);
    assert_true(metric(port, EMBEDDED) == embedded + 1);
    assert_true(metric(port, HITS) == hits + 1);
    response_free(&first), response_free(&again);
    response r = post_file(port, "/v1/classify?classes=lynx,tiger,tabby", zero_shot_images[0]);
    assert_int_equal(r.status, 200);
    response_free(&r);
    r = post_file(port, "/v1/classify?classes=tabby,tiger,lynx&template=the%20%7B%7D",
                  zero_shot_images[0]);
    assert_int_equal(r.status, 200);
    response_free(&r);
    assert_true(metric(port, EMBEDDED) == embedded + 3);
    assert_true(metric(port, "vit_serve_zero_shot_class_sets_cached") <= 4); /* --class-cache */
    /* at once */
    byte_buf names = {0};
    put(&names, "/v1/classify?k=1&classes=", 25);
    for (int i = 0; i < 300; i++) {
        char name[32];
        put(&names, name, (size_t)snprintf(name, sizeof name, "%st%d", i ? "," : "", i));
    }
    put(&names, "", 1);
    enum { N = 6 };
    int fds[N];
    size_t size;
    uint8_t *jpeg = read_whole_file(zero_shot_images[0], &size);
    const double before = metric(port, EMBEDDED), hits_before = metric(port, HITS);
    for (int i = 0; i < N; i++) {
        assert_true((fds[i] = connect_to(port)) >= 0);
        send_request(fds[i], "POST", names.data, NULL, jpeg, size);
    }
    response first_answer = {0};
    for (int i = 0; i < N; i++) { /* one answer (to the rounding of batches of other sizes) */
        r = read_response(fds[i], 0);
        close(fds[i]);
        if (r.status != 200) fail_msg("status %d: %s", r.status, r.body);
        if (i == 0) {
            first_answer = r;
            continue;
        }
        const cJSON *a = cJSON_GetArrayItem(cJSON_GetObjectItem(r.one, "top"), 0),
                    *b = cJSON_GetArrayItem(cJSON_GetObjectItem(first_answer.one, "top"), 0);
        assert_string_equal(cJSON_GetObjectItem(a, "label")->valuestring,
                            cJSON_GetObjectItem(b, "label")->valuestring);
        assert_true(fabs(cJSON_GetObjectItem(a, "prob")->valuedouble -
                         cJSON_GetObjectItem(b, "prob")->valuedouble) < 1e-6);
        response_free(&r);
    }
    assert_true(metric(port, EMBEDDED) == before + 1);
    assert_true(metric(port, HITS) == hits_before + N - 1);
    response_free(&first_answer);
    free(jpeg);
    byte_buf_free(&names);
}

/* The library's embeddings of texts and images (VIT_POOL_JOINT, normalised) and the texts' tokens,
 * for /v1/embeddings. */
static void library_embeddings(const char *const *texts, int n_texts, const char *const *images,
                               int n_images, float *embeds, long long *tokens) {
    vit_error err = {0};
    vit_context *image = vit_load(CLIP, NULL, &err);
    vit_text_context *text = vit_text_load(CLIP, NULL, &err);
    if (!image || !text) fail_msg("%s", err.msg);
    *tokens = 0;
    for (int i = 0; i < n_texts; i++) {
        const size_t n = strlen(texts[i]);
        assert_int_equal(
            vit_text_embed(text, &texts[i], &n, 1, VIT_POOL_JOINT, embeds + 20 * i, &err), 0);
        int count = 0;
        vit_text_ids(text, 0, &count);
        *tokens += count;
    }
    float *pixels = test_alloc_floats(vit_input_floats(image));
    for (int i = 0; i < n_images; i++) {
        assert_int_equal(vit_preprocess_file(image, images[i], pixels, &err), 0);
        assert_int_equal(
            vit_embed(image, pixels, 1, VIT_POOL_JOINT, embeds + 20 * (n_texts + i), &err), 0);
    }
    free(pixels);
    vit_text_free(text);
    vit_free(image);
}

/* POST /v1/embeddings (OpenAI's shape): texts and images (data URLs) in one request, each the
 * library's joint embedding in input order; usage counts the texts' tokens; encoding_format base64
 * carries the floats' bytes; a single string is one text. */
static void test_embeddings_match_library(void **state) {
    (void)state;
    REQUIRE_CLIP();
    const char *texts[] = {"a photo of a cat", "", "a dog on a beach"};
    const char *images[] = {zero_shot_images[0], zero_shot_images[1]};
    float want[5 * 20];
    long long tokens;
    library_embeddings(texts, 3, images, 2, want, &tokens);
    cJSON *body = cJSON_CreateObject(), *input = cJSON_AddArrayToObject(body, "input");
    cJSON_AddItemToArray(input, cJSON_CreateString(texts[0]));
    char *url = data_url(images[0]);
    cJSON_AddItemToArray(input, cJSON_CreateString(url));
    free(url);
    cJSON_AddItemToArray(input, cJSON_CreateString(texts[1]));
    url = data_url(images[1]);
    cJSON_AddItemToArray(input, cJSON_CreateString(url));
    free(url);
    cJSON_AddItemToArray(input, cJSON_CreateString(texts[2]));
    cJSON_AddStringToObject(body, "model", "anything");
    const int order[] = {0, 3, 1, 4, 2}; /* input i is want's row order[i] */
    response as_floats = post_json(clip_server.port, "/v1/embeddings", body);
    cJSON_AddStringToObject(body, "encoding_format", "base64");
    cJSON_AddNumberToObject(body, "dimensions", 20);
    response as_base64 = post_json(clip_server.port, "/v1/embeddings", body);
    cJSON_Delete(body);
    if (as_floats.status != 200) fail_msg("status %d: %s", as_floats.status, as_floats.body);
    assert_int_equal(as_base64.status, 200);
    const cJSON *got = as_floats.json;
    assert_string_equal(cJSON_GetObjectItem(got, "object")->valuestring, "list");
    assert_string_equal(cJSON_GetObjectItem(got, "model")->valuestring, "clip-micro");
    const cJSON *usage = cJSON_GetObjectItem(got, "usage");
    assert_int_equal(cJSON_GetObjectItem(usage, "prompt_tokens")->valueint, tokens);
    assert_int_equal(cJSON_GetObjectItem(usage, "total_tokens")->valueint, tokens);
    const cJSON *data = cJSON_GetObjectItem(got, "data"),
                *data64 = cJSON_GetObjectItem(as_base64.json, "data");
    assert_int_equal(cJSON_GetArraySize(data), 5);
    for (int i = 0; i < 5; i++) {
        const cJSON *item = cJSON_GetArrayItem(data, i);
        assert_string_equal(cJSON_GetObjectItem(item, "object")->valuestring, "embedding");
        assert_int_equal(cJSON_GetObjectItem(item, "index")->valueint, i);
        const cJSON *e = cJSON_GetObjectItem(item, "embedding");
        assert_int_equal(cJSON_GetArraySize(e), 20);
        double norm = 0;
        for (int d = 0; d < 20; d++) {
            const double v = cJSON_GetArrayItem(e, d)->valuedouble;
            if (fabs(v - want[order[i] * 20 + d]) > 1e-5)
                fail_msg("input %d [%d]: %.7g, the library's %.7g", i, d, v,
                         want[order[i] * 20 + d]);
            norm += v * v;
        }
        assert_true(fabs(norm - 1) < 1e-5);
        const char *b64 =
            cJSON_GetObjectItem(cJSON_GetArrayItem(data64, i), "embedding")->valuestring;
        float floats[21];
        size_t where;
        assert_int_equal(base64_decode(b64, strlen(b64), floats, &where), 80);
        for (int d = 0; d < 20; d++) /* another request: batched as it came */
            assert_true(fabs(floats[d] - want[order[i] * 20 + d]) < 1e-5);
    }
    response_free(&as_floats), response_free(&as_base64);
    const char *one = "{\"input\": \"a dog on a beach\"}";
    response r = request(clip_server.port, "POST", "/v1/embeddings", NULL, one, strlen(one));
    assert_int_equal(r.status, 200);
    data = cJSON_GetObjectItem(r.json, "data");
    assert_int_equal(cJSON_GetArraySize(data), 1);
    const cJSON *e = cJSON_GetObjectItem(cJSON_GetArrayItem(data, 0), "embedding");
    for (int d = 0; d < 20; d++)
        assert_true(fabs(cJSON_GetArrayItem(e, d)->valuedouble - want[2 * 20 + d]) < 1e-5);
    response_free(&r);
}

/* A ViT and a BERT (the main server): /v1/embeddings gives what `vit embed` gives by default
 * (the CLS features), images or texts in a request, not both (unrelated spaces). */
static void test_embeddings_without_joint_model(void **state) {
    (void)state;
    REQUIRE_MAIN();
    vit_error err = {0};
    vit_context *ctx = vit_load(IMAGENET, NULL, &err);
    assert_non_null(ctx);
    const int D = vit_hidden_size(ctx);
    float *pixels = test_alloc_floats(vit_input_floats(ctx)), *want = test_alloc_floats(D);
    assert_int_equal(vit_preprocess_file(ctx, photos[1], pixels, &err), 0);
    assert_int_equal(vit_embed(ctx, pixels, 1, VIT_POOL_CLS, want, &err), 0);
    cJSON *body = cJSON_CreateObject(), *input = cJSON_AddArrayToObject(body, "input");
    char *url = data_url(photos[1]);
    cJSON_AddItemToArray(input, cJSON_CreateString(url));
    free(url);
    response r = post_json(main_server.port, "/v1/embeddings", body);
    if (r.status != 200) fail_msg("status %d: %s", r.status, r.body);
    const cJSON *e = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(r.json, "data"), 0),
                                         "embedding");
    assert_int_equal(cJSON_GetArraySize(e), D);
    for (int d = 0; d < D; d++)
        assert_true(fabs(cJSON_GetArrayItem(e, d)->valuedouble - want[d]) < 1e-3);
    assert_int_equal(
        cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "usage"), "prompt_tokens")->valueint, 0);
    response_free(&r);
    free(pixels), free(want);
    vit_free(ctx);
    if (have_text) {
        cJSON_AddItemToArray(input, cJSON_CreateString("a gorgeous, witty, seductive movie."));
        assert_refused(post_json(main_server.port, "/v1/embeddings", body), 400,
                       "need a joint image-text model");
        vit_text_context *bert = vit_text_load(shared_path(BERT), NULL, &err);
        assert_non_null(bert);
        const char *text = "a gorgeous, witty, seductive movie.";
        const size_t n = strlen(text);
        float cls[1024];
        assert_true(vit_text_hidden_size(bert) <= 1024);
        assert_int_equal(vit_text_embed(bert, &text, &n, 1, VIT_POOL_CLS, cls, &err), 0);
        int tokens = 0;
        vit_text_ids(bert, 0, &tokens);
        const char *texts = "{\"input\": [\"a gorgeous, witty, seductive movie.\"]}";
        r = request(main_server.port, "POST", "/v1/embeddings", NULL, texts, strlen(texts));
        assert_int_equal(r.status, 200);
        e = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(r.json, "data"), 0),
                                "embedding");
        assert_int_equal(cJSON_GetArraySize(e), vit_text_hidden_size(bert));
        for (int d = 0; d < vit_text_hidden_size(bert); d++)
            assert_true(fabs(cJSON_GetArrayItem(e, d)->valuedouble - cls[d]) < 1e-3);
        assert_int_equal(
            cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "usage"), "prompt_tokens")->valueint,
            tokens);
        response_free(&r);
        vit_text_free(bert);
    }
    cJSON_Delete(body);
}

/* Every bad zero-shot or /v1/embeddings request: 4xx with a JSON error, and the server goes on. */
static void test_joint_bad_requests(void **state) {
    (void)state;
    REQUIRE_CLIP();
    REQUIRE_MAIN();
    const int port = clip_server.port;
    size_t size;
    uint8_t *jpeg = read_whole_file(photos[0], &size);
    static const struct {
        const char *target;
        int status;
        const char *says;
    } queries[] = {
        {"/v1/classify", 400, "classes are needed"},
        {"/v1/classify?template=a%20%7B%7D", 400, "classes are needed"},
        {"/v1/classify?classes=", 400, "an empty class name"},
        {"/v1/classify?classes=cat,,dog", 400, "an empty class name"},
        {"/v1/classify?classes=cat,dog,", 400, "an empty class name"},
        {"/v1/classify?classes=cat&k=0", 400, "invalid k"},
        {"/v1/classify?classes=cat&pool=cls", 400, "unknown query parameter 'pool'"},
        {"/v1/embeddings?k=3", 400, "unknown query parameter 'k'"},
    };
    for (size_t i = 0; i < sizeof queries / sizeof queries[0]; i++)
        assert_refused(request(port, "POST", queries[i].target, NULL, jpeg, size),
                       queries[i].status, queries[i].says);
    /* the limits: 400 names, 800 prompts, 300 bytes a name */
    byte_buf target = {0};
    put(&target, "/v1/classify?classes=", 21);
    for (int i = 0; i < 401; i++) put(&target, i ? ",c" : "c", i ? 2 : 1);
    put(&target, "", 1);
    assert_refused(request(port, "POST", target.data, NULL, jpeg, size), 413,
                   "more than 400 class names in one request (--max-classes)");
    byte_buf_free(&target);
    put(&target, "/v1/classify?template=a%7B%7D&template=b%7B%7D&template=c%7B%7D&classes=", 72);
    for (int i = 0; i < 300; i++) put(&target, i ? ",c" : "c", i ? 2 : 1);
    put(&target, "", 1);
    assert_refused(request(port, "POST", target.data, NULL, jpeg, size), 413,
                   "300 class names times 3 templates: 900 texts to embed, over the limit of 800 "
                   "(--max-prompts)");
    byte_buf_free(&target);
    put(&target, "/v1/classify?classes=cat,", 25);
    for (int i = 0; i < 301; i++) put(&target, "x", 1);
    put(&target, "", 1);
    assert_refused(request(port, "POST", target.data, NULL, jpeg, size), 413,
                   "a class name of 301 bytes, over the limit of 300");
    byte_buf_free(&target);
    /* forms and JSON bodies */
    byte_buf form = {0};
    put_file_part(&form, photos[0]);
    put_field(&form, "classes", "cat", 3);
    assert_refused(post_form(port, "/v1/classify?classes=dog", &form), 400,
                   "classes given both in the query and in the form");
    static const struct {
        const char *body;
        const char *says;
    } classify_bodies[] = {
        {"{\"images\": [", "not valid JSON"},
        {"[]", "not a JSON object"},
        {"{\"classes\": [\"cat\"]}", "no \"images\""},
        {"{\"images\": \"data:image/png;base64,AA==\"}", "\"images\" is not a list"},
        {"{\"images\": [\"cat.jpg\"], \"classes\": [\"cat\"]}",
         "images[0] is not a data URL of an image"},
        {"{\"images\": [\"data:image/png;base64,A\"], \"classes\": [\"cat\"]}",
         "images[0]: the data URL's base64 is malformed at byte 0"},
        {"{\"images\": [\"data:image/png,abc\"], \"classes\": [\"cat\"]}", "must be base64"},
        {"{\"images\": [\"data:image/png;base64,AA==\"], \"classes\": [3]}",
         "classes[0] is not a string"},
        {"{\"images\": [\"data:image/png;base64,AA==\"], \"classes\": [\"\"]}",
         "an empty class name"},
        {"{\"images\": [\"data:image/png;base64,AA==\"], \"labels\": [\"cat\"]}",
         "unknown key \"labels\""},
    };
    for (size_t i = 0; i < sizeof classify_bodies / sizeof classify_bodies[0]; i++)
        assert_refused(request(port, "POST", "/v1/classify", "Content-Type: application/json\r\n",
                               classify_bodies[i].body, strlen(classify_bodies[i].body)),
                       400, classify_bodies[i].says);
    /* the image is no image: every image failed, 400 */
    const char *not_png = "{\"images\": [\"data:image/png;base64,aGVsbG8=\"], \"classes\": "
                          "[\"cat\", \"dog\"]}";
    assert_refused(request(port, "POST", "/v1/classify", "Content-Type: application/json\r\n",
                           not_png, strlen(not_png)),
                   400, "not a PNG, JPEG");
    static const struct {
        const char *body;
        int status;
        const char *says;
    } embeddings[] = {
        {"{\"input\": [\"a\"", 400, "not valid JSON"},
        {"\"a cat\"", 400, "not a JSON object"},
        {"{\"inputs\": [\"a\"]}", 400,
         "unknown key \"inputs\" (a JSON body of /v1/embeddings has \"input\", \"model\""},
        {"{\"user\": \"u\"}", 400, "no \"input\""},
        {"{\"input\": [\"a\"], \"user\": \"u\", \"k\": 3}", 400, "unknown key \"k\""},
        {"{\"input\": []}", 400, "\"input\" is empty"},
        {"{\"input\": 7}", 400, "neither a string nor a list"},
        {"{\"input\": [\"a\", [1, 2]]}", 400, "input[1] is not a string"},
        {"{\"input\": [\"a\", \"data:image/png;base64,@@\"]}", 400,
         "input[1]: the data URL's base64 is malformed at byte 0"},
        {"{\"input\": [\"data:image/jpeg;charset=x,abc\"]}", 400, "must be base64"},
        {"{\"input\": [\"a\", \"data:image/png;base64,aGVsbG8=\"]}", 400,
         "input[1]: image in memory: not a PNG, JPEG"},
        {"{\"input\": [\"a\"], \"encoding_format\": \"hex\"}", 400, "\"float\" or \"base64\""},
        {"{\"input\": [\"a\"], \"dimensions\": 21}", 400, "embeddings have 20"},
        {"{\"input\": [\"a\"], \"model\": 3}", 400, "\"model\" is not a string"},
        {"{\"input\": [\"1\",\"2\",\"3\",\"4\",\"5\",\"6\",\"7\",\"8\",\"9\",\"10\",\"11\",\"12\","
         "\"13\",\"14\",\"15\",\"16\",\"17\"]}",
         413, "more than 16 inputs in one request"},
    };
    for (size_t i = 0; i < sizeof embeddings / sizeof embeddings[0]; i++)
        assert_refused(request(port, "POST", "/v1/embeddings", NULL, embeddings[i].body,
                               strlen(embeddings[i].body)),
                       embeddings[i].status, embeddings[i].says);
    const char *texts = "{\"texts\": [\"a\"]}";
    assert_refused(request(port, "POST", "/v1/text", NULL, texts, strlen(texts)), 404,
                   "the text tower of a joint image-text model classifies nothing");
    /* classes on a model with labels of its own */
    assert_refused(
        request(main_server.port, "POST", "/v1/classify?classes=cat,dog", NULL, jpeg, size), 400,
        "classes and templates are for a joint image-text model");
    byte_buf vit_form = {0};
    put_file_part(&vit_form, photos[0]);
    put_field(&vit_form, "template", "a {}", 4);
    assert_refused(post_form(main_server.port, "/v1/classify", &vit_form), 400,
                   "classes and templates are for a joint image-text model");
    free(jpeg);
    response r = request(port, "GET", "/health", NULL, NULL, 0);
    assert_int_equal(r.status, 200);
    response_free(&r);
    r = request(port, "GET", "/metrics", NULL, NULL, 0);
    assert_null(strstr(r.body, "code=\"500\""));
    response_free(&r);
}

/* GET /v1/model of a joint model: both towers, their joint dim, CLIP's softmax. */
static void test_joint_model_description(void **state) {
    (void)state;
    REQUIRE_CLIP();
    response r = request(clip_server.port, "GET", "/v1/model", NULL, NULL, 0);
    assert_int_equal(r.status, 200);
    const cJSON *image = cJSON_GetObjectItem(r.json, "image"),
                *text = cJSON_GetObjectItem(r.json, "text"),
                *joint = cJSON_GetObjectItem(r.json, "joint");
    assert_string_equal(cJSON_GetObjectItem(image, "architecture")->valuestring,
                        "CLIPModel (vision tower)");
    assert_string_equal(cJSON_GetObjectItem(text, "architecture")->valuestring,
                        "CLIPModel (text tower)");
    assert_int_equal(cJSON_GetObjectItem(image, "joint_dim")->valueint, 20);
    assert_int_equal(cJSON_GetObjectItem(text, "joint_dim")->valueint, 20);
    assert_int_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(text, "encoder"), "hidden")->valueint,
                     24);
    assert_string_equal(
        cJSON_GetObjectItem(cJSON_GetObjectItem(text, "encoder"), "norm")->valuestring, "pre-LN");
    assert_null(cJSON_GetObjectItem(image, "labels"));
    assert_string_equal(cJSON_GetObjectItem(joint, "family")->valuestring, "CLIP");
    assert_int_equal(cJSON_GetObjectItem(joint, "dim")->valueint, 20);
    assert_string_equal(cJSON_GetObjectItem(joint, "probabilities")->valuestring, "softmax");
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(joint, "text_tower")));
    response_free(&r);
    char *log = read_log(&clip_server);
    assert_non_null(strstr(log, "image model " CLIP " ("));
    assert_non_null(strstr(log, "its text tower ("));
    assert_non_null(strstr(log, "joint dim 20"));
    free(log);
}

/* ---- image to text: POST /v1/generate on a VisionEncoderDecoderModel folder ---- */

/* The images the generator tests send: PNG and JPEG, resized every way. */
static const char *const ved_images[] = {GOLDEN_IMAGES "/rgb_64x48.png",
                                         GOLDEN_IMAGES "/tall_40x400.jpg",
                                         GOLDEN_IMAGES "/palette_120x90.png"};
#define VED_IMAGES 3

/* One of a request's options, by its name in the request, and vit generate's flag for it. */
typedef struct {
    const char *key, *value;
} gen_option;

static const struct {
    const char *key, *flag;
} gen_flags[] = {{"num_beams", "--beams"},
                 {"max_new_tokens", "--max-tokens"},
                 {"min_length", "--min-length"},
                 {"length_penalty", "--length-penalty"},
                 {"no_repeat_ngram_size", "--no-repeat-ngram"},
                 {"early_stopping", "--early-stopping"}};

/* Option sets (each ends at a NULL key): the model's own settings, greedy and beam search with
 * every option. */
#define GEN_CASES 6
static const gen_option gen_cases[GEN_CASES][5] = {
    {{NULL, NULL}},
    {{"num_beams", "3"}, {"max_new_tokens", "10"}, {NULL, NULL}},
    {{"num_beams", "2"},
     {"early_stopping", "never"},
     {"length_penalty", "0.5"},
     {"no_repeat_ngram_size", "2"},
     {NULL, NULL}},
    {{"min_length", "12"}, {"max_new_tokens", "16"}, {NULL, NULL}},
    {{"num_beams", "4"}, {"early_stopping", "true"}, {"min_length", "5"}, {NULL, NULL}},
    {{"no_repeat_ngram_size", "1"}, {"length_penalty", "-1.5"}, {NULL, NULL}},
};

static const char *gen_flag(const char *key) {
    for (size_t i = 0; i < sizeof gen_flags / sizeof gen_flags[0]; i++)
        if (strcmp(key, gen_flags[i].key) == 0) return gen_flags[i].flag;
    fail_msg("no flag for %s", key);
    return NULL;
}

/* `vit generate -m model --json` with the options, for files: one object per file. */
static cJSON *generate_json(const char *model, const gen_option *opts, const char *const *files,
                            int n) {
    const char *argv[64] = {"generate", "-m", model, "--json"};
    int argc = 4;
    for (; opts->key; opts++) argv[argc++] = gen_flag(opts->key), argv[argc++] = opts->value;
    for (int i = 0; i < n; i++) argv[argc++] = files[i];
    argv[argc] = NULL;
    test_run_result run = test_run_vit(NULL, NULL, argv);
    if (run.status != 0) fail_msg("vit generate: %s", run.err);
    cJSON *all = cJSON_CreateArray();
    for (char *line = strtok(run.out, "\n"); line; line = strtok(NULL, "\n"))
        cJSON_AddItemToArray(all, cJSON_Parse(line));
    test_run_free(&run);
    assert_int_equal(cJSON_GetArraySize(all), n);
    return all;
}

/* "num_beams=3&max_new_tokens=10" */
static void gen_query(const gen_option *opts, char *out, size_t size) {
    size_t n = 0;
    out[0] = 0;
    for (; opts->key && n < size; opts++)
        n += (size_t)snprintf(out + n, size - n, "%s%s=%s", n ? "&" : "", opts->key, opts->value);
}

/* What the answer's "options" should say of key: the value asked for, else the model's setting,
 * read here from its generation_config.json over GenerationConfig's defaults (with max_length
 * standing for max_new_tokens when neither was asked). */
static void assert_gen_option(const cJSON *options, const char *key, const gen_option *opts,
                              const cJSON *model_cfg) {
    static const gen_option defaults[] = {
        {"num_beams", "1"},      {"max_length", "20"},          {"min_length", "0"},
        {"length_penalty", "1"}, {"no_repeat_ngram_size", "0"}, {"early_stopping", "false"}};
    const char *want = NULL;
    for (const gen_option *o = opts; o->key && !want; o++)
        if (strcmp(o->key, key) == 0) want = o->value;
    const cJSON *own = cJSON_GetObjectItem(model_cfg, key),
                *got = cJSON_GetObjectItem(options, key);
    char text[64];
    if (!want && cJSON_IsNumber(own))
        snprintf(text, sizeof text, "%g", own->valuedouble), want = text;
    if (!want && cJSON_IsBool(own)) want = cJSON_IsTrue(own) ? "true" : "false";
    for (size_t i = 0; !want && i < sizeof defaults / sizeof defaults[0]; i++)
        if (strcmp(defaults[i].key, key) == 0) want = defaults[i].value;
    if (!got) fail_msg("no %s in %s", key, cJSON_PrintUnformatted(options));
    if (cJSON_IsNumber(got))
        assert_true(got->valuedouble == atof(want));
    else if (cJSON_IsBool(got))
        assert_string_equal(cJSON_IsTrue(got) ? "true" : "false", want);
    else
        assert_string_equal(got->valuestring, want);
}

static cJSON *read_json_file(const char *path) {
    char *text = (char *)read_whole_file(path, NULL);
    assert_non_null(text);
    cJSON *json = cJSON_Parse(text);
    free(text);
    assert_non_null(json);
    return json;
}

/* got (one image's answer) is vit generate's want: the same text and ids, the score to 1e-4
 * (batches of other sizes and thread counts may round the logits differently), and the options
 * it ran with. */
static void assert_same_generation(const cJSON *got, const cJSON *want, const gen_option *opts,
                                   const char *model) {
    const cJSON *text = cJSON_GetObjectItem(got, "text"), *ids = cJSON_GetObjectItem(got, "ids");
    if (!cJSON_IsString(text) || !cJSON_IsArray(ids))
        fail_msg("no text and ids in %s", cJSON_PrintUnformatted(got));
    assert_string_equal(text->valuestring, cJSON_GetObjectItem(want, "text")->valuestring);
    const cJSON *want_ids = cJSON_GetObjectItem(want, "ids");
    assert_int_equal(cJSON_GetArraySize(ids), cJSON_GetArraySize(want_ids));
    for (int t = 0; t < cJSON_GetArraySize(ids); t++)
        assert_int_equal(cJSON_GetArrayItem(ids, t)->valueint,
                         cJSON_GetArrayItem(want_ids, t)->valueint);
    assert_true(fabs(cJSON_GetObjectItem(got, "score")->valuedouble -
                     cJSON_GetObjectItem(want, "score")->valuedouble) <= 1e-4);
    char path[4200];
    snprintf(path, sizeof path, "%s/generation_config.json", model);
    cJSON *model_cfg = read_json_file(path);
    const cJSON *options = cJSON_GetObjectItem(got, "options");
    const int new_tokens = cJSON_GetObjectItem(options, "max_new_tokens") != NULL;
    const char *keys[] = {"num_beams",
                          new_tokens ? "max_new_tokens" : "max_length",
                          "min_length",
                          "length_penalty",
                          "no_repeat_ngram_size",
                          "early_stopping"};
    for (int k = 0; k < 6; k++) assert_gen_option(options, keys[k], opts, model_cfg);
    cJSON_Delete(model_cfg);
}

/* Each option set for the three images: a form with the options as fields, and a JSON body of
 * data URLs with the options as numbers (early_stopping: true, false or "never"), each answer
 * vit generate's. */
static void test_generate_matches_cli(void **state) {
    (void)state;
    REQUIRE_GEN();
    for (int c = 0; c < GEN_CASES; c++) {
        cJSON *want = generate_json(VED, gen_cases[c], ved_images, VED_IMAGES);
        byte_buf form = {0};
        cJSON *body = cJSON_CreateObject(), *urls = cJSON_AddArrayToObject(body, "images");
        for (int i = 0; i < VED_IMAGES; i++) {
            put_file_part(&form, ved_images[i]);
            char *url = data_url(ved_images[i]);
            cJSON_AddItemToArray(urls, cJSON_CreateString(url));
            free(url);
        }
        for (const gen_option *o = gen_cases[c]; o->key; o++) {
            put_field(&form, o->key, o->value, strlen(o->value));
            cJSON_AddItemToObject(body, o->key,
                                  strcmp(o->value, "never") == 0  ? cJSON_CreateString("never")
                                  : strcmp(o->value, "true") == 0 ? cJSON_CreateTrue()
                                  : strcmp(o->value, "false") == 0
                                      ? cJSON_CreateFalse()
                                      : cJSON_CreateNumber(atof(o->value)));
        }
        response r[2] = {post_form(gen_server.port, "/v1/generate", &form),
                         post_json(gen_server.port, "/v1/generate", body)};
        for (int k = 0; k < 2; k++) {
            if (r[k].status != 200) fail_msg("case %d: %d %s", c, r[k].status, r[k].body);
            const cJSON *results = cJSON_GetObjectItem(r[k].json, "results");
            assert_int_equal(cJSON_GetArraySize(results), VED_IMAGES);
            for (int i = 0; i < VED_IMAGES; i++) {
                const cJSON *got = cJSON_GetArrayItem(results, i),
                            *file = cJSON_GetObjectItem(got, "file");
                if (k == 0) assert_string_equal(file->valuestring, strrchr(ved_images[i], '/') + 1);
                assert_same_generation(got, cJSON_GetArrayItem(want, i), gen_cases[c], VED);
            }
            response_free(&r[k]);
        }
        cJSON_Delete(body);
        cJSON_Delete(want);
    }
}

/* Every option set for every image at once, each image a request of its own on its own
 * connection, all sent before any answer is read: the batcher runs those asking the same options
 * together and the others apart, and each answer is vit generate's. */
static void concurrent_requests_match_cli(int port, const char *model) {
    enum { N = GEN_CASES * VED_IMAGES };
    cJSON *want[GEN_CASES];
    for (int c = 0; c < GEN_CASES; c++)
        want[c] = generate_json(model, gen_cases[c], ved_images, VED_IMAGES);
    const char *batches = "vit_serve_batches_total{task=\"generate\"}";
    const double batches_before = metric_or(port, batches, 0); /* none yet: absent */
    int fds[N];
    for (int j = 0; j < N; j++) {
        char target[256] = "/v1/generate?", query[200];
        gen_query(gen_cases[j / VED_IMAGES], query, sizeof query);
        strcat(target, query);
        size_t size;
        uint8_t *bytes = read_whole_file(ved_images[j % VED_IMAGES], &size);
        assert_true((fds[j] = connect_to(port)) >= 0);
        send_request(fds[j], "POST", target, NULL, bytes, size);
        free(bytes);
    }
    for (int j = 0; j < N; j++) {
        response r = read_response(fds[j], 0);
        close(fds[j]);
        if (r.status != 200) fail_msg("request %d: %d %s", j, r.status, r.body);
        const int c = j / VED_IMAGES;
        assert_same_generation(r.one, cJSON_GetArrayItem(want[c], j % VED_IMAGES), gen_cases[c],
                               model);
        response_free(&r);
    }
    print_message("    %s: %d images with %d option sets in %.0f forward passes\n", model, N,
                  GEN_CASES, metric(port, batches) - batches_before);
    for (int c = 0; c < GEN_CASES; c++) cJSON_Delete(want[c]);
}

static void test_generate_concurrent_options(void **state) {
    (void)state;
    REQUIRE_GEN();
    concurrent_requests_match_cli(gen_server.port, VED);
}

/* An option at its limits is served (the server goes on after any refusal). */
static void expect_generate_served(int port) {
    size_t size;
    uint8_t *png = read_whole_file(ved_images[0], &size);
    response r =
        request(port, "POST", "/v1/generate?num_beams=6&max_new_tokens=32", NULL, png, size);
    assert_int_equal(r.status, 200);
    assert_int_equal(
        cJSON_GetObjectItem(cJSON_GetObjectItem(r.one, "options"), "num_beams")->valueint, 6);
    response_free(&r);
    free(png);
}

/* Each bad option in the query: 400 naming it and what it takes; the server goes on. */
static void test_generate_bad_query(void **state) {
    (void)state;
    REQUIRE_GEN();
    const int port = gen_server.port;
    size_t size;
    uint8_t *png = read_whole_file(ved_images[0], &size);
    static const struct {
        const char *query, *says;
    } queries[] = {
        {"num_beams=0", "invalid num_beams '0' (an integer from 1 to 6, the server's --max-beams)"},
        {"num_beams=7", "invalid num_beams '7'"},
        {"num_beams=two", "invalid num_beams 'two'"},
        {"max_new_tokens=0", "invalid max_new_tokens '0'"},
        {"max_new_tokens=33", "(an integer from 1 to 32, the decoder's positions)"},
        {"min_length=-1", "invalid min_length '-1'"},
        {"length_penalty=nan", "invalid length_penalty 'nan' (a number from -100 to 100)"},
        {"length_penalty=1e9", "invalid length_penalty"},
        {"no_repeat_ngram_size=65", "invalid no_repeat_ngram_size '65'"},
        {"early_stopping=maybe", "invalid early_stopping 'maybe' (true, false or never)"},
        {"num_beams=2&num_beams=3", "num_beams given more than once"},
        {"k=3", "unknown query parameter 'k' (/v1/generate takes num_beams, max_new_tokens"},
    };
    for (size_t i = 0; i < sizeof queries / sizeof queries[0]; i++) {
        char target[128];
        snprintf(target, sizeof target, "/v1/generate?%s", queries[i].query);
        assert_refused(request(port, "POST", target, NULL, png, size), 400, queries[i].says);
    }
    free(png);
    expect_generate_served(port);
}

/* Bad options in a form and in a JSON body: 400 naming them; the server goes on. */
static void test_generate_bad_form_json(void **state) {
    (void)state;
    REQUIRE_GEN();
    const int port = gen_server.port;
    byte_buf form = {0};
    put_file_part(&form, ved_images[0]);
    put_field(&form, "max_new_tokens", "ten", 3);
    assert_refused(post_form(port, "/v1/generate", &form), 400, "invalid max_new_tokens 'ten'");
    put_file_part(&form, ved_images[0]);
    put_field(&form, "num_beams", "2", 1);
    assert_refused(post_form(port, "/v1/generate?num_beams=2", &form), 400,
                   "num_beams given more than once");
    put_file_part(&form, ved_images[0]);
    put_field(&form, "beams", "2", 1);
    assert_refused(post_form(port, "/v1/generate", &form), 400,
                   "unexpected form field 'beams' (send each image as a part named \"image\"; "
                   "options: num_beams");
    char *url = data_url(ved_images[0]);
    static const struct {
        const char *options, *says;
    } bodies[] = {
        {"\"num_beams\": \"3\"", "\"num_beams\" is not a number"},
        {"\"num_beams\": 2.5", "invalid num_beams '2.5'"},
        {"\"early_stopping\": 1", "\"early_stopping\" is not true, false or \"never\""},
        {"\"early_stopping\": \"sometimes\"", "invalid early_stopping 'sometimes'"},
        {"\"temperature\": 0.7", "unknown key \"temperature\" (a JSON body of /v1/generate has "
                                 "\"images\" and the options num_beams"},
        {"\"classes\": [\"cat\"]", "unknown key \"classes\""},
        {"\"min_length\": 1, \"min_length\": 2", "min_length given more than once"},
    };
    for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++) {
        char *body = malloc(strlen(url) + 256);
        sprintf(body, "{\"images\": [\"%s\"], %s}", url, bodies[i].options);
        assert_refused(request(port, "POST", "/v1/generate", "Content-Type: application/json\r\n",
                               body, strlen(body)),
                       400, bodies[i].says);
        free(body);
    }
    free(url);
    expect_generate_served(port);
}

/* /v1/classify on the generator and /v1/generate on a classifier and a joint model: 400 saying
 * why. /v1/embed on the generator: its encoder's CLS feature, as vit embed gives it (which
 * test_ved_commands checks against the goldens). */
static void test_generate_model_kinds(void **state) {
    (void)state;
    REQUIRE_GEN();
    assert_refused(post_file(gen_server.port, "/v1/classify", ved_images[0]), 400,
                   "ved-trocr-vit is an image-to-text model (VisionEncoderDecoderModel), without "
                   "labels: POST /v1/generate");
    assert_refused(post_file(main_server.port, "/v1/generate", photos[0]), 400,
                   "vit-tiny-in1k is not an image-to-text model");
    if (clip_server.pid > 0)
        assert_refused(post_file(clip_server.port, "/v1/generate", photos[0]), 400,
                       "POST /v1/classify?classes=");
    response r = post_file(gen_server.port, "/v1/embed", ved_images[1]);
    assert_int_equal(r.status, 200);
    const char *args[] = {"embed", "-m", VED, "-o", "-", ved_images[1], NULL};
    test_run_result run = test_run_vit(NULL, NULL, args);
    assert_int_equal(run.status, 0);
    const cJSON *embedding = cJSON_GetObjectItem(r.one, "embedding");
    assert_int_equal(cJSON_GetArraySize(embedding), 32); /* the encoder's hidden_size */
    char *p = strchr(run.out, '\t');
    for (int d = 0; d < 32; d++) {
        const double x = strtod(p + 1, &p);
        assert_true(fabs(cJSON_GetArrayItem(embedding, d)->valuedouble - x) <= 1e-5);
    }
    test_run_free(&run);
    response_free(&r);
}

/* /v1/model says image to text, with the decoder and the limits; /metrics counts generate's
 * requests and the tokens generated; the log names the model. */
static void test_generate_description_metrics(void **state) {
    (void)state;
    REQUIRE_GEN();
    response r = request(gen_server.port, "GET", "/v1/model", NULL, NULL, 0);
    const cJSON *image = cJSON_GetObjectItem(r.json, "image");
    assert_string_equal(cJSON_GetObjectItem(image, "task")->valuestring, "image-to-text");
    assert_string_equal(cJSON_GetObjectItem(image, "architecture")->valuestring,
                        "VisionEncoderDecoderModel");
    assert_string_equal(cJSON_GetObjectItem(image, "weights")->valuestring,
                        "model.safetensors (96 tensors: F32)");
    const cJSON *decoder = cJSON_GetObjectItem(image, "decoder");
    assert_string_equal(cJSON_GetObjectItem(decoder, "architecture")->valuestring,
                        "TrOCRForCausalLM");
    assert_int_equal(cJSON_GetObjectItem(decoder, "vocabulary")->valueint, 300);
    assert_null(cJSON_GetObjectItem(image, "labels"));
    assert_int_equal(
        cJSON_GetObjectItem(cJSON_GetObjectItem(image, "generation"), "max_new_tokens_limit")
            ->valueint,
        32);
    response_free(&r);
    r = request(main_server.port, "GET", "/v1/model", NULL, NULL, 0);
    assert_string_equal(
        cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "image"), "task")->valuestring,
        "image-classification");
    response_free(&r);
    const char *ok = "vit_serve_requests_total{endpoint=\"/v1/generate\",code=\"200\"}",
               *tokens = "vit_serve_generated_tokens_total";
    const double ok_before = metric(gen_server.port, ok),
                 tokens_before = metric(gen_server.port, tokens);
    byte_buf form = {0};
    for (int i = 0; i < VED_IMAGES; i++) put_file_part(&form, ved_images[i]);
    r = post_form(gen_server.port, "/v1/generate?num_beams=2", &form);
    assert_int_equal(r.status, 200);
    int generated = 0;
    for (int i = 0; i < VED_IMAGES; i++)
        generated += cJSON_GetArraySize(cJSON_GetObjectItem(
                         cJSON_GetArrayItem(cJSON_GetObjectItem(r.json, "results"), i), "ids")) -
                     1; /* the start token */
    response_free(&r);
    assert_true(metric(gen_server.port, ok) == ok_before + 1);
    assert_true(metric(gen_server.port, tokens) == tokens_before + generated);
    response after = request(gen_server.port, "GET", "/metrics", NULL, NULL, 0);
    assert_non_null(strstr(after.body, "vit_serve_batches_total{task=\"generate\"}"));
    response_free(&after);
    char *log = read_log(&gen_server);
    assert_non_null(strstr(log, "image-to-text model " VED " ("));
    assert_non_null(strstr(log, "2 workers x 1 thread"));
    free(log);
}

/* ---- servers of their own ---- */

/* The other micro models, a GPT-2 decoder (through enc_to_dec_proj) and TrOCR's sinusoidal
 * positions over a DeiT, each served by two workers over one copy of the weights: concurrent
 * requests as above. */
static void test_generate_other_models(void **state) {
    (void)state;
    static const char *const models[] = {"tests/data/ved-gpt2-vit",
                                         "tests/data/ved-trocr-sin-deit"};
    for (int m = 0; m < 2; m++) {
        server s;
        START_OR_SKIP(&s, "-m", models[m], "-t", "2", "--workers", "2", "--quiet");
        concurrent_requests_match_cli(s.port, models[m]);
        assert_int_equal(stop_server(&s, SIGTERM), 0);
    }
}

/* SigLIP's image tower without its text tower (the folder has no tokenizer here): served for
 * image embeddings (its joint ones: no CLS token), zero-shot and texts refused saying why. */
static void test_siglip_without_text_tower(void **state) {
    (void)state;
    server s;
    START_OR_SKIP(&s, "-m", test_joint_without_tokenizer(), "-t", "1", "--quiet");
    char *log = read_log(&s);
    assert_non_null(strstr(log, "the text tower is not served"));
    assert_non_null(strstr(log, "no tokenizer files"));
    free(log);
    response r = request(s.port, "GET", "/v1/model", NULL, NULL, 0);
    const cJSON *joint = cJSON_GetObjectItem(r.json, "joint");
    assert_string_equal(cJSON_GetObjectItem(joint, "family")->valuestring, "SigLIP");
    assert_string_equal(cJSON_GetObjectItem(joint, "probabilities")->valuestring, "sigmoid");
    assert_true(cJSON_IsFalse(cJSON_GetObjectItem(joint, "text_tower")));
    assert_null(cJSON_GetObjectItem(r.json, "text"));
    response_free(&r);
    assert_refused(post_file(s.port, "/v1/classify?classes=cat,dog", photos[0]), 404,
                   "zero-shot needs the joint model's text tower, which is not served");
    const char *text = "{\"input\": \"a cat\"}";
    assert_refused(request(s.port, "POST", "/v1/embeddings", NULL, text, strlen(text)), 400,
                   "input[0] is a text, and this joint model's text tower is not served");
    vit_error err = {0};
    vit_context *ctx = vit_load("tests/data/siglip-micro", NULL, &err);
    assert_non_null(ctx);
    float *pixels = test_alloc_floats(vit_input_floats(ctx)), want[32];
    assert_int_equal(vit_preprocess_file(ctx, photos[2], pixels, &err), 0);
    assert_int_equal(vit_embed(ctx, pixels, 1, VIT_POOL_JOINT, want, &err), 0);
    cJSON *body = cJSON_CreateObject(), *input = cJSON_AddArrayToObject(body, "input");
    char *url = data_url(photos[2]);
    cJSON_AddItemToArray(input, cJSON_CreateString(url));
    free(url);
    r = post_json(s.port, "/v1/embeddings", body);
    cJSON_Delete(body);
    assert_int_equal(r.status, 200);
    const cJSON *e = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(r.json, "data"), 0),
                                         "embedding");
    assert_int_equal(cJSON_GetArraySize(e), 32);
    for (int d = 0; d < 32; d++)
        assert_true(fabs(cJSON_GetArrayItem(e, d)->valuedouble - want[d]) < 1e-5);
    response_free(&r);
    free(pixels);
    vit_free(ctx);
    assert_int_equal(stop_server(&s, SIGTERM), 0);
}

/* The numbers `vit embed -m DIR -o -` prints for one image (or, with --text, one text): its own
 * pooling, vit_default_pool / vit_text_default_pool. Their count into *n. */
static double *cli_embedding(const char *dir, const char *input, int text, int *n) {
    const char *image_args[] = {"embed", "-m", dir, input, "-o", "-", NULL};
    const char *text_args[] = {"embed", "-m", dir, "--text", input, "-o", "-", NULL};
    test_run_result run = test_run_vit(NULL, NULL, text ? text_args : image_args);
    if (run.status != 0) fail_msg("vit embed -m %s: %s", dir, run.err);
    double *values = malloc(sizeof(double) * 4096);
    assert_non_null(values);
    *n = 0;
    for (char *p = strchr(run.out, '\t'), *end; p && *p && *p != '\n' && *n < 4096; p = end) {
        values[*n] = strtod(p, &end);
        if (end == p) break;
        (*n)++;
    }
    test_run_free(&run);
    return values;
}

/* POST /v1/embeddings on folders whose own pooling is not the CLS row, or whose output is not the
 * hidden state: each answer is what `vit embed` prints by default for the same image or text
 * (printed to 9 digits, computed at other thread counts: within 1e-5 of each value's size). */
/* POST /v1/embed without ?pool gives the same vector as /v1/embeddings and vit embed, and GET
 * /v1/model's embedding_size is its length (before: the CLS row and the hidden size, whatever
 * the model's own pooling). */
static void expect_embed_and_model_agree(const server *s, const char *dir, const double *want,
                                         int n) {
    response r = post_file(s->port, "/v1/embed", photos[0]);
    if (r.status != 200) fail_msg("%s: /v1/embed status %d: %s", dir, r.status, r.body);
    const cJSON *e = cJSON_GetObjectItem(r.one, "embedding");
    if (cJSON_GetArraySize(e) != n)
        fail_msg("%s: /v1/embed gave %d numbers, vit embed's %d", dir, cJSON_GetArraySize(e), n);
    for (int d = 0; d < n; d++) {
        const double v = cJSON_GetArrayItem(e, d)->valuedouble;
        if (fabs(v - want[d]) > 1e-5 * (1 + fabs(want[d])))
            fail_msg("%s: /v1/embed [%d]: %.9g, vit embed's %.9g", dir, d, v, want[d]);
    }
    response_free(&r);
    r = request(s->port, "GET", "/v1/model", NULL, NULL, 0);
    assert_int_equal(r.status, 200);
    const cJSON *image = cJSON_GetObjectItem(r.json, "image"),
                *size = cJSON_GetObjectItem(image, "embedding_size");
    /* the one-tower CLIP has no classifier: no DIM_ labels, as for a base model */
    if (strstr(dir, "proj")) {
        assert_null(cJSON_GetObjectItem(image, "labels"));
        assert_string_equal(cJSON_GetObjectItem(image, "task")->valuestring,
                            "image-feature-extraction");
    }
    if (!cJSON_IsNumber(size) || size->valueint != n)
        fail_msg("%s: GET /v1/model's embedding_size %d, vit embed's %d", dir,
                 cJSON_IsNumber(size) ? size->valueint : -1, n);
    response_free(&r);
}

static void test_embeddings_own_pooling(void **state) {
    (void)state;
    static const struct {
        const char *flag, *dir;
    } folders[] = {
        {"-m", "tests/data/clip-vision-proj-micro"},         /* projection (image_embeds) */
        {"-m", "tests/data/dinov2-micro"},                   /* cls */
        {"-m", "tests/data/beit-micro"},                     /* mean: its pooler_output */
        {"-m", CLIP},                                        /* joint */
        {"-m", "tests/data/timm-gap-reg-micro"},             /* mean: no class token */
        {"-m", "tests/data/siglip-vision-micro"},            /* pooler: its attention pool */
        {"-m", "tests/data/siglip-vision-nohead-micro"},     /* mean: no head */
        {"--text-model", "tests/data/clip-text-proj-micro"}, /* projection (text_embeds) */
        {"--text-model", "tests/data/siglip-text-micro"},    /* pooler (pooler_output) */
        {"--text-model", "tests/data/bert-base-micro"},      /* cls */
        {"--text-model", "tests/data/st-cls-dense-micro"},   /* sentence: cls, Dense, Normalize */
        {"--text-model", "tests/data/st-multi-micro"},       /* sentence: six modes, Dense */
        {"--text-model", "tests/data/st-prompt-micro"},      /* sentence: its default prompt */
        {"--text-model", "tests/data/mpnet-model-micro"},    /* cls (issue 42) */
        {"--text-model", "tests/data/distilbert-model-micro"},
    };
    const char *text = "a photo of a cat";
    for (size_t f = 0; f < sizeof folders / sizeof *folders; f++) {
        server s;
        START_OR_SKIP(&s, folders[f].flag, folders[f].dir, "-t", "1", "--quiet");
        const int is_text = folders[f].flag[1] == '-';
        int n = 0;
        double *want = cli_embedding(folders[f].dir, is_text ? text : photos[0], is_text, &n);
        cJSON *body = cJSON_CreateObject(), *input = cJSON_AddArrayToObject(body, "input");
        char *url = is_text ? strdup(text) : data_url(photos[0]);
        cJSON_AddItemToArray(input, cJSON_CreateString(url));
        free(url);
        response r = post_json(s.port, "/v1/embeddings", body);
        cJSON_Delete(body);
        if (r.status != 200) fail_msg("%s: status %d: %s", folders[f].dir, r.status, r.body);
        const cJSON *e = cJSON_GetObjectItem(
            cJSON_GetArrayItem(cJSON_GetObjectItem(r.json, "data"), 0), "embedding");
        if (cJSON_GetArraySize(e) != n)
            fail_msg("%s: %d numbers, vit embed's %d", folders[f].dir, cJSON_GetArraySize(e), n);
        for (int d = 0; d < n; d++) {
            const double v = cJSON_GetArrayItem(e, d)->valuedouble;
            if (fabs(v - want[d]) > 1e-5 * (1 + fabs(want[d])))
                fail_msg("%s [%d]: %.9g, vit embed's %.9g", folders[f].dir, d, v, want[d]);
        }
        response_free(&r);
        if (!is_text) expect_embed_and_model_agree(&s, folders[f].dir, want, n);
        free(want);
        assert_int_equal(stop_server(&s, SIGTERM), 0);
    }
}

/* A sentence-transformers folder's "dimensions": the first N of its pipeline's embedding,
 * normalised again (it ends in Normalize), as vit embed --dimensions gives them; wider than the
 * embedding or not a positive integer: 400. */
static void test_embeddings_dimensions(void **state) {
    (void)state;
    server s;
    START_OR_SKIP(&s, "--text-model", "tests/data/st-prompt-micro", "-t", "1", "--quiet");
    const char *text = "the cat sat on the mat";
    const char *args[] = {
        "embed", "-m", "tests/data/st-prompt-micro", "--dimensions", "8", "--text", text, "-o",
        "-",     NULL};
    test_run_result run = test_run_vit(NULL, NULL, args);
    assert_int_equal(run.status, 0);
    double want[8];
    char *p = strchr(run.out, '\t');
    for (int d = 0; d < 8; d++) want[d] = strtod(p, &p);
    test_run_free(&run);
    const char *bodies[] = {"{\"input\": \"the cat sat on the mat\", \"dimensions\": 8}",
                            "{\"input\": \"the cat sat on the mat\", \"dimensions\": 33}",
                            "{\"input\": \"the cat sat on the mat\", \"dimensions\": 2.5}"};
    for (int b = 0; b < 3; b++) {
        cJSON *body = cJSON_Parse(bodies[b]);
        response r = post_json(s.port, "/v1/embeddings", body);
        cJSON_Delete(body);
        if (b == 0) {
            if (r.status != 200) fail_msg("status %d: %s", r.status, r.body);
            const cJSON *e = cJSON_GetObjectItem(
                cJSON_GetArrayItem(cJSON_GetObjectItem(r.json, "data"), 0), "embedding");
            assert_int_equal(cJSON_GetArraySize(e), 8);
            double norm = 0;
            for (int d = 0; d < 8; d++) {
                const double v = cJSON_GetArrayItem(e, d)->valuedouble;
                norm += v * v;
                if (fabs(v - want[d]) > 1e-5 * (1 + fabs(want[d])))
                    fail_msg("[%d]: %.9g, vit embed's %.9g", d, v, want[d]);
            }
            assert_true(fabs(norm - 1) < 1e-5);
        } else {
            assert_int_equal(r.status, 400);
            assert_non_null(strstr(r.body, b == 1 ? "33: this model's embeddings have 32"
                                                  : "is not a positive integer"));
        }
        response_free(&r);
    }
    /* a text of over 1 MiB (beyond what tokens are counted in): cut to the model's 40 tokens, or
     * refused whole with "truncate": false */
    const size_t n = (1 << 20) + 64;
    char *big = malloc(n + 64);
    assert_non_null(big);
    strcpy(big, "{\"input\": \"");
    size_t at = strlen(big);
    for (; at < n; at += 4) memcpy(big + at, "cat ", 4);
    strcpy(big + at, "\"}");
    response cut = request(s.port, "POST", "/v1/embeddings", "Content-Type: application/json\r\n",
                           big, strlen(big));
    if (cut.status != 200) fail_msg("status %d: %.200s", cut.status, cut.body);
    assert_int_equal(
        cJSON_GetObjectItem(cJSON_GetObjectItem(cut.json, "usage"), "prompt_tokens")->valueint, 40);
    response_free(&cut);
    strcpy(big + at, "\", \"truncate\": false}");
    assert_refused(request(s.port, "POST", "/v1/embeddings", "Content-Type: application/json\r\n",
                           big, strlen(big)),
                   413, "too long to count its tokens (over 1 MiB), and the model takes 40");
    free(big);
    assert_int_equal(stop_server(&s, SIGTERM), 0);
}

/* vit embed's row of one text by model (its own pooling, as /v1/embeddings gives). */
static void embed_row(const char *model, const char *text, double *row, int dim) {
    const char *args[] = {"embed", "-m", model, "--text", text, "-o", "-", NULL};
    test_run_result run = test_run_vit(NULL, NULL, args);
    assert_int_equal(run.status, 0);
    char *p = strchr(run.out, '\t');
    assert_non_null(p);
    for (int d = 0; d < dim; d++) row[d] = strtod(p, &p);
    test_run_free(&run);
}

static void expect_row(const cJSON *embedding, const double *want, int dim) {
    assert_int_equal(cJSON_GetArraySize(embedding), dim);
    for (int d = 0; d < dim; d++) {
        const double v = cJSON_GetArrayItem(embedding, d)->valuedouble;
        if (fabs(v - want[d]) > 1e-5 * (1 + fabs(want[d])))
            fail_msg("[%d]: %.9g, vit embed's %.9g", d, v, want[d]);
    }
}

/* The server still answers: a short text's embedding. */
static void still_serving(int port) {
    const char *ok = "{\"input\": \"a dog\"}";
    response r = request(port, "POST", "/v1/embeddings", "Content-Type: application/json\r\n", ok,
                         strlen(ok));
    assert_int_equal(r.status, 200);
    response_free(&r);
}

/* Texts on /v1/embeddings (issue 42), on a folder whose max_seq_length is 12: a longer text is
 * cut as sentence-transformers cuts it (no "truncate", or true: vit embed's row, 12 tokens in
 * usage), and with TEI's "truncate": false refused with 413 naming its length; token ids
 * (OpenAI's other input) 400; more texts than --max-queue and a body over --max-body-bytes 413;
 * texts of mixed lengths in one request (run in passes of near lengths) each vit embed's row.
 * After every refusal the server answers the next request. */
static void test_embeddings_text_limits(void **state) {
    (void)state;
    server s;
    const char *model = "tests/data/st-mean-micro";
    START_OR_SKIP(&s, "--text-model", model, "-t", "1", "--quiet", "--max-queue", "8",
                  "--max-body-bytes", "4000");
    const char *long_text = "the cat sat on the mat and then slept in the sun very far away from "
                            "home"; /* 17 words, all in its vocabulary: 19 tokens */
    const char *texts[] = {"a dog", long_text, "the cat sat", "it was very good and then bad",
                           "my old dog ran away from home and slept in the sun"};
    enum { D = 32, N = 5 };
    double want[N][D];
    for (int i = 0; i < N; i++) embed_row(model, texts[i], want[i], D);
    const char *cut[] = {"", ", \"truncate\": true"};
    for (int k = 0; k < 2; k++) {
        char body[512];
        snprintf(body, sizeof body, "{\"input\": \"%s\"%s}", long_text, cut[k]);
        response r = request(s.port, "POST", "/v1/embeddings", "Content-Type: application/json\r\n",
                             body, strlen(body));
        if (r.status != 200) fail_msg("status %d: %s", r.status, r.body);
        expect_row(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(r.json, "data"), 0),
                                       "embedding"),
                   want[1], D);
        assert_int_equal(
            cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "usage"), "prompt_tokens")->valueint,
            12);
        response_free(&r);
    }
    /* the mixed list, in one request */
    cJSON *list = cJSON_CreateObject(), *input = cJSON_AddArrayToObject(list, "input");
    for (int i = 0; i < N; i++) cJSON_AddItemToArray(input, cJSON_CreateString(texts[i]));
    response r = post_json(s.port, "/v1/embeddings", list);
    cJSON_Delete(list);
    if (r.status != 200) fail_msg("status %d: %s", r.status, r.body);
    for (int i = 0; i < N; i++)
        expect_row(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(r.json, "data"), i),
                                       "embedding"),
                   want[i], D);
    response_free(&r);

    char refuse_long[512], too_many[512], big[5000];
    snprintf(refuse_long, sizeof refuse_long,
             "{\"input\": [\"a dog\", \"%s\"], \"truncate\": false}", long_text);
    snprintf(too_many, sizeof too_many,
             "{\"input\": [\"a\", \"b\", \"c\", \"d\", \"e\", \"f\", "
             "\"g\", \"h\", \"i\"]}");
    memset(big, 0, sizeof big);
    strcpy(big, "{\"input\": \"");
    for (size_t i = strlen(big); i < sizeof big - 8; i += 4) memcpy(big + i, "the ", 4);
    strcat(big, "\"}");
    const struct {
        const char *body;
        int status;
        const char *says;
    } refused[] = {
        {refuse_long, 413, "input[1]: 19 tokens, more than the model's 12"},
        {"{\"input\": [[5, 6, 7]]}", 400, "input[0] is not a string"},
        {"{\"input\": [5, 6, 7]}", 400, "not token ids"},
        {"{\"input\": \"a dog\", \"truncate\": \"no\"}", 400, "\"truncate\" is not true or false"},
        {too_many, 413, "more than 8"},
        {big, 413, "--max-body-bytes"},
    };
    for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
        assert_refused(request(s.port, "POST", "/v1/embeddings",
                               "Content-Type: application/json\r\n", refused[i].body,
                               strlen(refused[i].body)),
                       refused[i].status, refused[i].says);
        still_serving(s.port);
    }
    /* /metrics: the texts' tokens, their padded places, and one pass per batch's */
    r = request(s.port, "GET", "/metrics", NULL, NULL, 0);
    assert_int_equal(r.status, 200);
    long long counts[3] = {-1, -1, -1};
    const char *names[3] = {"\nvit_serve_text_tokens_total ",
                            "\nvit_serve_text_padded_tokens_total ",
                            "\nvit_serve_text_one_pass_tokens_total "};
    for (int k = 0; k < 3; k++) {
        const char *at = strstr(r.body, names[k]);
        if (!at) fail_msg("no %s in /metrics", names[k] + 1);
        counts[k] = atoll(at + strlen(names[k]));
    }
    assert_true(counts[0] > 0 && counts[1] >= counts[0] && counts[2] >= counts[1]);
    response_free(&r);
    /* a short text with "truncate": false is answered */
    const char *fits = "{\"input\": \"the cat sat\", \"truncate\": false}";
    r = request(s.port, "POST", "/v1/embeddings", "Content-Type: application/json\r\n", fits,
                strlen(fits));
    assert_int_equal(r.status, 200);
    expect_row(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(r.json, "data"), 0),
                                   "embedding"),
               want[2], D);
    response_free(&r);
    assert_int_equal(stop_server(&s, SIGTERM), 0);
}

/* POST /v1/text answers with a sequence classifier only (issue 42): a base model (BertModel,
 * MPNetModel) gave a softmax over its features as if they were classes ('DIM_24' at 0.058), and a
 * token classifier a 500; both are 404 naming the class and what to use. A sequence classifier
 * of another family (RoBERTa) answers as a BERT's does: vit text's labels and probabilities. */
static void test_text_needs_a_sequence_classifier(void **state) {
    (void)state;
    static const struct {
        const char *dir, *says;
    } refused[] = {
        {"tests/data/bert-base-micro", "BertModel has no sequence classifier (its outputs are "
                                       "features: POST /v1/embeddings)"},
        {"tests/data/mpnet-model-micro", "MPNetModel has no sequence classifier"},
    };
    const char *texts = "{\"texts\": [\"Hello world\"]}";
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        server s;
        START_OR_SKIP(&s, "--text-model", refused[i].dir, "-t", "1", "--quiet");
        assert_refused(request(s.port, "POST", "/v1/text", NULL, texts, strlen(texts)), 404,
                       refused[i].says);
        assert_int_equal(stop_server(&s, SIGTERM), 0);
    }
    server s;
    START_OR_SKIP(&s, "--text-model", "tests/data/roberta-seq-micro", "-t", "1", "--quiet");
    response r = request(s.port, "POST", "/v1/text", NULL, texts, strlen(texts));
    if (r.status != 200) fail_msg("status %d: %.*s", r.status, (int)r.size, r.body);
    const cJSON *top =
        cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(r.json, "results"), 0), "top");
    assert_int_equal(cJSON_GetArraySize(top), 3);
    /* the float64 reference's logits (tools/text_encoders_reference.py) through a softmax */
    float *logits = test_golden_tensor("tests/data/roberta-seq-micro", "logits", NULL);
    double sum = 0, p[3];
    for (int k = 0; k < 3; k++) sum += exp(logits[k]);
    for (int k = 0; k < 3; k++) p[k] = exp(logits[k]) / sum;
    free(logits);
    for (int i = 0; i < 3; i++) {
        const cJSON *t = cJSON_GetArrayItem(top, i);
        const int k = cJSON_GetObjectItem(t, "index")->valueint;
        assert_true(fabs(cJSON_GetObjectItem(t, "prob")->valuedouble - p[k]) < 1e-5);
        if (i > 0)
            assert_true(p[k] <=
                        p[cJSON_GetObjectItem(cJSON_GetArrayItem(top, i - 1), "index")->valueint]);
    }
    response_free(&r);
    assert_int_equal(stop_server(&s, SIGTERM), 0);
}

/* A token classifier on /v1/text: each text's entities, the objects `vit tag --json` gives
 * (test_text_encoders checks those against the float64 token logits); query parameters refused. */
static void test_text_token_classifier(void **state) {
    (void)state;
    const char *dir = "tests/data/bert-tok-micro";
    server s;
    START_OR_SKIP(&s, "--text-model", dir, "-t", "1", "--quiet");
    static const char *const texts[] = {"the cat sat on the mat", "it was very good",
                                        "a dog ran far away from home"};
    const char *body = "{\"texts\": [\"the cat sat on the mat\", \"it was very good\", \"a dog "
                       "ran far away from home\"]}";
    response r = request(s.port, "POST", "/v1/text", NULL, body, strlen(body));
    if (r.status != 200) fail_msg("status %d: %.*s", r.status, (int)r.size, r.body);
    const char *args[] = {"tag", "--json", "-m", dir, texts[0], texts[1], texts[2], NULL};
    test_run_result cli = test_run_vit(NULL, NULL, args);
    assert_int_equal(cli.status, 0);
    const char *line = cli.out;
    const cJSON *results = cJSON_GetObjectItem(r.json, "results");
    assert_int_equal(cJSON_GetArraySize(results), 3);
    for (int i = 0; i < 3; i++) {
        const char *end = strchr(line, '\n');
        assert_non_null(end);
        cJSON *want = cJSON_ParseWithLength(line, (size_t)(end - line));
        const cJSON *got = cJSON_GetArrayItem(results, i);
        assert_string_equal(cJSON_GetObjectItem(got, "text")->valuestring, texts[i]);
        const cJSON *ge = cJSON_GetObjectItem(got, "entities"),
                    *we = cJSON_GetObjectItem(want, "entities");
        assert_int_equal(cJSON_GetArraySize(ge), cJSON_GetArraySize(we));
        for (int k = 0; k < cJSON_GetArraySize(we); k++) {
            const cJSON *g = cJSON_GetArrayItem(ge, k), *w = cJSON_GetArrayItem(we, k);
            assert_int_equal(cJSON_GetObjectItem(g, "index")->valueint,
                             cJSON_GetObjectItem(w, "index")->valueint);
            assert_string_equal(cJSON_GetObjectItem(g, "entity")->valuestring,
                                cJSON_GetObjectItem(w, "entity")->valuestring);
            assert_string_equal(cJSON_GetObjectItem(g, "word")->valuestring,
                                cJSON_GetObjectItem(w, "word")->valuestring);
            assert_true(fabs(cJSON_GetObjectItem(g, "score")->valuedouble -
                             cJSON_GetObjectItem(w, "score")->valuedouble) < 1e-5);
        }
        cJSON_Delete(want);
        line = end + 1;
    }
    test_run_free(&cli);
    response_free(&r);
    assert_refused(request(s.port, "POST", "/v1/text?k=1", NULL, body, strlen(body)), 400,
                   "BertForTokenClassification classifies every token");
    assert_int_equal(stop_server(&s, SIGTERM), 0);
}

/* A token classifier's aggregation_strategy on /v1/text, as a query parameter and as a key of the
 * body: each strategy's entities those of `vit tag -a STRATEGY --json` (test_tag checks those
 * against the pipeline's rules), field by field with start and end; a bad strategy refused. */
static void test_text_aggregation(void **state) {
    (void)state;
    const char *dir = "tests/data/bert-ner-micro";
    server s;
    START_OR_SKIP(&s, "--text-model", dir, "-t", "1", "--quiet");
    static const char *const texts[] = {"John Smith works at Microsoft in Seattle.",
                                        "Angela Merkel met Emmanuel Macron in Z\xc3\xbcrich"};
    static const char *const strategies[] = {"none", "simple", "first", "average", "max"};
    for (int a = 0; a < 5; a++)
        for (int in_body = 0; in_body < 2; in_body++) {
            char body[512], path[128];
            snprintf(body, sizeof body, "{\"texts\": [\"%s\", \"%s\"]%s%s%s}", texts[0], texts[1],
                     in_body ? ", \"aggregation_strategy\": \"" : "", in_body ? strategies[a] : "",
                     in_body ? "\"" : "");
            snprintf(path, sizeof path, "/v1/text%s%s",
                     in_body ? "" : "?aggregation_strategy=", in_body ? "" : strategies[a]);
            response r = request(s.port, "POST", path, NULL, body, strlen(body));
            if (r.status != 200)
                fail_msg("%s: status %d: %.*s", path, r.status, (int)r.size, r.body);
            const char *args[] = {"tag",         "--json", "-m",     dir,      "-a",
                                  strategies[a], "--",     texts[0], texts[1], NULL};
            test_run_result cli = test_run_vit(NULL, NULL, args);
            assert_int_equal(cli.status, 0);
            const char *line = cli.out;
            const cJSON *results = cJSON_GetObjectItem(r.json, "results");
            int seen = 0;
            for (int i = 0; i < 2; i++) {
                const char *end = strchr(line, '\n');
                assert_non_null(end);
                cJSON *want = cJSON_ParseWithLength(line, (size_t)(end - line));
                const cJSON *ge = cJSON_GetObjectItem(cJSON_GetArrayItem(results, i), "entities"),
                            *we = cJSON_GetObjectItem(want, "entities");
                assert_int_equal(cJSON_GetArraySize(ge), cJSON_GetArraySize(we));
                for (int k = 0; k < cJSON_GetArraySize(we); k++, seen++) {
                    const cJSON *g = cJSON_GetArrayItem(ge, k), *w = cJSON_GetArrayItem(we, k);
                    const char *label = a ? "entity_group" : "entity";
                    assert_string_equal(cJSON_GetObjectItem(g, label)->valuestring,
                                        cJSON_GetObjectItem(w, label)->valuestring);
                    assert_string_equal(cJSON_GetObjectItem(g, "word")->valuestring,
                                        cJSON_GetObjectItem(w, "word")->valuestring);
                    assert_int_equal(cJSON_GetObjectItem(g, "start")->valueint,
                                     cJSON_GetObjectItem(w, "start")->valueint);
                    assert_int_equal(cJSON_GetObjectItem(g, "end")->valueint,
                                     cJSON_GetObjectItem(w, "end")->valueint);
                    assert_true(cJSON_IsNumber(cJSON_GetObjectItem(g, "start")));
                    assert_true(fabs(cJSON_GetObjectItem(g, "score")->valuedouble -
                                     cJSON_GetObjectItem(w, "score")->valuedouble) < 1e-6);
                    assert_true((cJSON_GetObjectItem(g, "index") != NULL) == (a == 0));
                }
                cJSON_Delete(want);
                line = end + 1;
            }
            assert_true(seen > 0);
            test_run_free(&cli);
            response_free(&r);
        }
    const char *body = "{\"texts\": [\"x\"]}";
    assert_refused(
        request(s.port, "POST", "/v1/text?aggregation_strategy=mean", NULL, body, strlen(body)),
        400, "aggregation_strategy \"mean\" is not none, simple, first");
    assert_int_equal(stop_server(&s, SIGTERM), 0);
}

/* Without offsets (xlmr-tok-micro's BPE SentencePiece model gives none) "first" answers each
 * text with no entities and an error saying why, as vit tag refuses it; "simple" answers
 * entities without start and end (null). */
static void test_text_aggregation_without_offsets(void **state) {
    (void)state;
    server s;
    START_OR_SKIP(&s, "--text-model", "tests/data/xlmr-tok-micro", "-t", "1", "--quiet");
    const char *body = "{\"texts\": [\"Hello New York\"]}";
    response r =
        request(s.port, "POST", "/v1/text?aggregation_strategy=first", NULL, body, strlen(body));
    assert_int_equal(r.status, 200);
    const cJSON *first = cJSON_GetArrayItem(cJSON_GetObjectItem(r.json, "results"), 0);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(first, "entities")), 0);
    const char *why = cJSON_GetObjectItem(first, "error")->valuestring;
    assert_non_null(strstr(why, "needs word boundaries"));
    assert_non_null(strstr(why, "not for this BPE one"));
    response_free(&r);
    r = request(s.port, "POST", "/v1/text?aggregation_strategy=simple", NULL, body, strlen(body));
    assert_int_equal(r.status, 200);
    const cJSON *e = cJSON_GetArrayItem(
        cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(r.json, "results"), 0),
                            "entities"),
        0);
    assert_non_null(e);
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(e, "start")));
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(e, "end")));
    response_free(&r);
    assert_int_equal(stop_server(&s, SIGTERM), 0);
}

/* ---- POST /v1/rerank ---- */

#define PAIRS "tests/data/bert-pair-micro" /* a one-label cross-encoder (test_rerank.c) */

/* The reference's pairs (tools/text_encoders_reference.py): its first are (query, text i), the
 * query text 0 itself; n of them into docs, their token counts into tokens. */
static int reference_pairs(const char **query, char **docs, int *tokens, int cap) {
    size_t size;
    uint8_t *bytes = read_whole_file(PAIRS "/golden.safetensors", &size);
    assert_non_null(bytes);
    uint64_t len = 0;
    for (int i = 7; i >= 0; i--) len = len << 8 | bytes[i];
    cJSON *header = cJSON_ParseWithLength((const char *)bytes + 8, (size_t)len);
    free(bytes);
    const cJSON *meta = cJSON_GetObjectItem(header, "__metadata__");
    cJSON *pairs = cJSON_Parse(cJSON_GetObjectItem(meta, "pairs")->valuestring),
          *ids = cJSON_Parse(cJSON_GetObjectItem(meta, "ids")->valuestring);
    static char q[256];
    snprintf(q, sizeof q, "%s", cJSON_GetArrayItem(cJSON_GetArrayItem(pairs, 0), 0)->valuestring);
    *query = q;
    int n = 0;
    for (; n < cap && n < cJSON_GetArraySize(pairs); n++) {
        const cJSON *p = cJSON_GetArrayItem(pairs, n);
        const char *a = cJSON_GetArrayItem(p, 0)->valuestring,
                   *b = cJSON_GetArrayItem(p, 1)->valuestring;
        if (strcmp(a, q) != 0 || (n > 0 && strcmp(b, q) == 0)) break;
        docs[n] = strdup(b);
        tokens[n] = cJSON_GetArraySize(cJSON_GetArrayItem(ids, n));
    }
    cJSON_Delete(pairs);
    cJSON_Delete(ids);
    cJSON_Delete(header);
    return n;
}

static double sigmoid(double x) {
    return 1.0 / (1.0 + exp(-x));
}

/* {"query": q, KEY: [docs...]} and the rest of the body (extra: ", ..." or ""). */
static char *rerank_body(const char *query, const char *key, char **docs, int n,
                         const char *extra) {
    cJSON *o = cJSON_CreateObject(), *list = cJSON_AddArrayToObject(o, key);
    cJSON_AddStringToObject(o, "query", query);
    for (int i = 0; i < n; i++) cJSON_AddItemToArray(list, cJSON_CreateString(docs[i]));
    char *json = cJSON_PrintUnformatted(o), *body = malloc(strlen(json) + strlen(extra) + 1);
    cJSON_Delete(o);
    const size_t k = strlen(json) - 1; /* before the closing brace */
    memcpy(body, json, k);
    strcpy(body + k, extra);
    strcat(body, "}");
    free(json);
    return body;
}

/* results [{index, SCORE_KEY, ...}] best first, each score the reference's (sigmoid or raw). */
static void check_ranked(const cJSON *results, const char *score_key, const float *logits, int raw,
                         int n) {
    assert_int_equal(cJSON_GetArraySize(results), n);
    double last = INFINITY;
    for (int k = 0; k < n; k++) {
        const cJSON *r = cJSON_GetArrayItem(results, k);
        const int i = cJSON_GetObjectItem(r, "index")->valueint;
        const double got = cJSON_GetObjectItem(r, score_key)->valuedouble,
                     want = raw ? logits[i] : sigmoid(logits[i]);
        if (fabs(got - want) > 1e-4) fail_msg("document %d: %g, expected %g", i, got, want);
        assert_true(got <= last);
        last = got;
    }
}

/* Jina's and llama.cpp's shape and TEI's, against the float64 logits of test_rerank's folder. */
static void test_rerank_endpoint(void **state) {
    (void)state;
    server s;
    START_OR_SKIP(&s, "--text-model", PAIRS, "-t", "1", "--quiet", "--max-queue", "8");
    const char *query;
    char *docs[16];
    int tokens[16];
    const int n = reference_pairs(&query, docs, tokens, 16);
    assert_true(n >= 5 && n <= 8);
    float *logits = test_golden_tensor(PAIRS, "logits", NULL);
    char *body =
        rerank_body(query, "documents", docs, n, ", \"top_n\": 3, \"return_documents\": true");
    response r = request(s.port, "POST", "/v1/rerank", NULL, body, strlen(body));
    if (r.status != 200) fail_msg("status %d: %.*s", r.status, (int)r.size, r.body);
    const cJSON *results = cJSON_GetObjectItem(r.json, "results");
    check_ranked(results, "relevance_score", logits, 0, 3);
    for (int k = 0; k < 3; k++) {
        const cJSON *item = cJSON_GetArrayItem(results, k);
        const int i = cJSON_GetObjectItem(item, "index")->valueint;
        assert_string_equal(
            cJSON_GetObjectItem(cJSON_GetObjectItem(item, "document"), "text")->valuestring,
            docs[i]);
    }
    int all = 0;
    for (int i = 0; i < n; i++) all += tokens[i];
    assert_int_equal(
        cJSON_GetObjectItem(cJSON_GetObjectItem(r.json, "usage"), "prompt_tokens")->valueint, all);
    assert_string_equal(cJSON_GetObjectItem(r.json, "object")->valuestring, "list");
    response_free(&r);
    free(body);
    for (int raw = 0; raw < 2; raw++) { /* TEI's: a bare list, every document */
        body = rerank_body(query, "texts", docs, n, raw ? ", \"raw_scores\": true" : "");
        r = request(s.port, "POST", "/v1/rerank", NULL, body, strlen(body));
        assert_int_equal(r.status, 200);
        assert_true(cJSON_IsArray(r.json));
        check_ranked(r.json, "score", logits, raw, n);
        assert_null(cJSON_GetObjectItem(cJSON_GetArrayItem(r.json, 0), "text"));
        response_free(&r);
        free(body);
    }
    free(logits);
    static const struct {
        const char *body;
        int status;
        const char *says;
    } refused[] = {
        {"{\"query\": \"q\", \"documents\": [\"a\"], \"texts\": [\"b\"]}", 400,
         "unknown key \"documents\""},
        {"{\"query\": \"q\", \"documents\": [\"a\"], \"return_text\": true}", 400,
         "unknown key \"return_text\""},
        {"{\"query\": \"q\", \"documents\": []}", 400, "\"documents\" is empty"},
        {"{\"query\": \"q\", \"documents\": [\"a\", 3]}", 400, "documents[1] is not a string"},
        {"{\"documents\": [\"a\"]}", 400, "no \"query\" string"},
        {"{\"query\": \"q\"}", 400, "no \"documents\" list"},
        {"{\"query\": \"q\", \"documents\": [\"a\"], \"top_n\": 0}", 400, "\"top_n\" is not"},
        {"{\"query\": \"q\", \"documents\": [\"a\"], \"return_documents\": 1}", 400,
         "\"return_documents\" is not true or false"},
        {"[\"q\"]", 400, "not a JSON object"},
        {"{\"query\": \"q\", \"documents\": [\"1\", \"2\", \"3\", \"4\", \"5\", \"6\", \"7\", "
         "\"8\", \"9\"]}",
         413, "more than 8 documents"},
        /* TEI's "truncate": false on a pair longer than the model's 40 tokens: 413 naming it */
        {"{\"query\": \"q q q q q q q q q q\", \"texts\": [\"a\", \"d d d d d d d d d d d d d d d "
         "d d "
         "d d d d d d d d d d d d d d d d d d d d d d d\"], \"truncate\": false}",
         413, "53 tokens, more than the model's 40"},
        {"{\"query\": \"q\", \"texts\": [\"a\"], \"truncate\": 0}", 400,
         "\"truncate\" is not true or false"},
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
        assert_refused(
            request(s.port, "POST", "/v1/rerank", NULL, refused[i].body, strlen(refused[i].body)),
            refused[i].status, refused[i].says);
    /* /v1/text on the one-label model: the pipeline's sigmoid of its logit, not a softmax of one */
    const char *texts = "{\"texts\": [\"the dog\"]}";
    r = request(s.port, "POST", "/v1/text?logits=1", NULL, texts, strlen(texts));
    assert_int_equal(r.status, 200);
    const double logit = cJSON_GetArrayItem(cJSON_GetObjectItem(r.one, "logits"), 0)->valuedouble,
                 prob = cJSON_GetObjectItem(
                            cJSON_GetArrayItem(cJSON_GetObjectItem(r.one, "top"), 0), "prob")
                            ->valuedouble;
    assert_true(fabs(prob - sigmoid(logit)) < 1e-6);
    response_free(&r);
    const char *one = "{\"query\": \"q\", \"documents\": [\"a\"]}";
    assert_refused(request(s.port, "POST", "/v1/rerank?top_n=1", NULL, one, strlen(one)), 400,
                   "unknown query parameter");
    for (int i = 0; i < n; i++) free(docs[i]);
    assert_int_equal(stop_server(&s, SIGTERM), 0);
    /* a classifier of three labels is no cross-encoder */
    START_OR_SKIP(&s, "--text-model", "tests/data/roberta-seq-micro", "-t", "1", "--quiet");
    assert_refused(request(s.port, "POST", "/v1/rerank", NULL, one, strlen(one)), 404,
                   "RobertaForSequenceClassification is not a cross-encoder");
    assert_int_equal(stop_server(&s, SIGTERM), 0);
}

/* A joint model serves its own text tower: --text-model beside it is refused at start. */
static void test_joint_model_with_text_model(void **state) {
    (void)state;
    REQUIRE_BIN();
    const char *args[] = {"serve", "-m", CLIP, "--text-model", CLIP, "--port", "0", NULL};
    test_run_result run = test_run_vit(NULL, NULL, args);
    if (strstr(run.err, "not built in")) {
        test_run_free(&run);
        print_message("SKIP %s: this vit has no serve\n", __func__);
        skip();
    }
    assert_int_equal(run.status, 1);
    assert_non_null(strstr(run.err, "--text-model: " CLIP " is a joint image-text model, whose "
                                    "own text tower is served"));
    test_run_free(&run);
}

/* One image at a time in the queue: of many requests sent at once, some are refused with 503 (and
 * Retry-After), the others answered; none is lost or hangs. */
static void test_queue_full_gives_503(void **state) {
    (void)state;
    server s;
    START_OR_SKIP(&s, "-m", IMAGENET, "--max-queue", "1", "--max-batch", "1", "--quiet");
    size_t size;
    uint8_t *jpeg = read_whole_file(photos[0], &size);
    enum { N = 12 };
    int fds[N], ok = 0, full = 0;
    for (int i = 0; i < N; i++) {
        assert_true((fds[i] = connect_to(s.port)) >= 0);
        send_request(fds[i], "POST", "/v1/classify", NULL, jpeg, size);
    }
    for (int i = 0; i < N; i++) {
        response r = read_response(fds[i], 0);
        close(fds[i]);
        if (r.status == 503) {
            assert_string_equal(header(&r, "Retry-After"), "1");
            assert_non_null(strstr(error_of(&r), "queue is full"));
            full++;
        } else {
            assert_int_equal(r.status, 200);
            ok++;
        }
        response_free(&r);
    }
    free(jpeg);
    print_message("    %d answered, %d refused with 503\n", ok, full);
    assert_true(ok >= 1 && full >= 1);
    assert_int_equal(stop_server(&s, SIGTERM), 0);
}

/* The logits of a classify answer, exactly the same in both. */
static void assert_same_logits(const cJSON *got, const cJSON *want) {
    const cJSON *g = cJSON_GetObjectItem(got, "logits"), *w = cJSON_GetObjectItem(want, "logits");
    assert_int_equal(cJSON_GetArraySize(g), cJSON_GetArraySize(w));
    for (int i = 0; i < cJSON_GetArraySize(w); i++)
        assert_true(cJSON_GetArrayItem(g, i)->valuedouble == cJSON_GetArrayItem(w, i)->valuedouble);
}

/* --workers 2: two forward passes at once over one copy of the weights. A photo alone (a batch of
 * one) gets the very logits --workers 1 gives it, both servers running one thread per worker;
 * photos sent all at once, batched as they come, the same answers to assert_same_answer's
 * tolerance (batches of other sizes may round differently). */
static void test_two_workers_answer_alike(void **state) {
    (void)state;
    server one, two;
    START_OR_SKIP(&one, "-m", IMAGENET, "-t", "1", "--quiet");
    START_OR_SKIP(&two, "-m", IMAGENET, "-t", "2", "--workers", "2", "--quiet");
    char *log = read_log(&two);
    assert_non_null(strstr(log, "2 workers x 1 thread"));
    free(log);
    const char *target = "/v1/classify?k=3&logits=1";
    response want[3];
    for (int i = 0; i < 3; i++) {
        want[i] = post_file(one.port, target, photos[i]);
        response got = post_file(two.port, target, photos[i]);
        assert_int_equal(want[i].status, 200);
        assert_int_equal(got.status, 200);
        assert_same_logits(got.one, want[i].one);
        response_free(&got);
    }
    enum { N = 9 };
    int fds[N];
    for (int i = 0; i < N; i++) {
        size_t size;
        uint8_t *jpeg = read_whole_file(photos[i % 3], &size);
        assert_true((fds[i] = connect_to(two.port)) >= 0);
        send_request(fds[i], "POST", target, NULL, jpeg, size);
        free(jpeg);
    }
    for (int i = 0; i < N; i++) {
        response r = read_response(fds[i], 0);
        close(fds[i]);
        assert_int_equal(r.status, 200);
        assert_same_answer(r.one, want[i % 3].one);
        response_free(&r);
    }
    for (int i = 0; i < 3; i++) response_free(&want[i]);
    assert_int_equal(stop_server(&one, SIGTERM), 0);
    assert_int_equal(stop_server(&two, SIGTERM), 0);
}

/* A body that stops coming is dropped after --timeout; the server goes on. */
static void test_slow_body_times_out(void **state) {
    (void)state;
    server s;
    START_OR_SKIP(&s, "-m", IMAGENET, "--timeout", "1");
    const int fd = connect_to(s.port);
    send_all(fd, "POST /v1/classify HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\nabc", 63);
    const double t0 = now();
    response r = read_response(fd, 0);
    assert_int_equal(r.status, 0); /* closed without an answer */
    assert_true(now() - t0 < 10);
    response_free(&r);
    close(fd);
    r = request(s.port, "GET", "/health", NULL, NULL, 0);
    assert_int_equal(r.status, 200);
    response_free(&r);
    assert_int_equal(stop_server(&s, SIGTERM), 0);
    char *log = read_log(&s);
    assert_non_null(strstr(log, "POST /v1/classify timeout"));
    free(log);
}

/* SIGTERM with a request under way: it is answered in full, then the process exits 0 and the port
 * no longer accepts connections. */
static void test_sigterm_finishes_requests(void **state) {
    (void)state;
    server s;
    START_OR_SKIP(&s, "-m", IMAGENET, "-t", "1", "--max-batch", "2");
    const int fd = connect_to(s.port);
    send_request(fd, "GET", "/health", NULL, NULL, 0); /* the connection is surely accepted */
    response r = read_response(fd, 0);
    assert_int_equal(r.status, 200);
    response_free(&r);
    byte_buf form = {0};
    for (int i = 0; i < 12; i++) put_file_part(&form, photos[i % 3]);
    put(&form, "--" BOUNDARY "--\r\n", strlen("--" BOUNDARY "--\r\n"));
    send_request(fd, "POST", "/v1/classify?k=1",
                 "Content-Type: multipart/form-data; boundary=" BOUNDARY "\r\n", form.data,
                 form.size);
    byte_buf_free(&form);
    usleep(50 * 1000);
    kill(s.pid, SIGTERM);
    r = read_response(fd, 0);
    assert_int_equal(r.status, 200);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(r.json, "results")), 12);
    assert_string_equal(header(&r, "Connection"), "close");
    response_free(&r);
    close(fd);
    assert_int_equal(stop_server(&s, SIGTERM), 0);
    assert_true(connect_to(s.port) < 0);
    char *log = read_log(&s);
    assert_non_null(strstr(log, "finishing 1 request under way"));
    assert_non_null(strstr(log, "POST /v1/classify?k=1 200"));
    assert_non_null(strstr(log, "12 images"));
    assert_non_null(strstr(log, "vit serve: stopped"));
    free(log);
}

/* A stop signal the kernel hands to a thread other than the main one (OpenBLAS starts its threads
 * before main, with signals unblocked) still stops the server cleanly: every thread is signalled
 * in turn, the first signal drains, the rest arrive during shutdown; exit 0 either way. */
static void test_signal_to_any_thread(void **state) {
    (void)state;
    server s;
    START_OR_SKIP(&s, "-m", IMAGENET, "-t", "2");
    response r = request(s.port, "GET", "/health", NULL, NULL, 0);
    assert_int_equal(r.status, 200);
    response_free(&r);
    char dir[64];
    snprintf(dir, sizeof dir, "/proc/%d/task", (int)s.pid);
    DIR *tasks = opendir(dir);
    assert_non_null(tasks);
    int signalled = 0;
    for (struct dirent *e; (e = readdir(tasks)) != NULL;) {
        const int tid = atoi(e->d_name);
        if (tid <= 0 || tid == (int)s.pid) continue;
        syscall(SYS_tgkill, (int)s.pid, tid, SIGTERM);
        signalled++;
    }
    closedir(tasks);
    assert_true(signalled > 0);
    int status = 0;
    for (const double until = now() + 60; now() < until; usleep(10 * 1000))
        if (waitpid(s.pid, &status, WNOHANG) == s.pid) break;
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    char *log = read_log(&s);
    assert_non_null(strstr(log, "vit serve: stopped"));
    free(log);
}

/* The port in use: one line saying so, exit status 1. */
static void test_port_in_use(void **state) {
    (void)state;
    REQUIRE_BIN();
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in addr = {.sin_family = AF_INET};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(fd, (struct sockaddr *)&addr, sizeof addr), 0);
    assert_int_equal(listen(fd, 1), 0);
    socklen_t len = sizeof addr;
    getsockname(fd, (struct sockaddr *)&addr, &len);
    char port[16];
    snprintf(port, sizeof port, "%d", ntohs(addr.sin_port));
    const char *args[] = {"serve", "-m", IMAGENET, "--port", port, NULL};
    test_run_result run = test_run_vit(NULL, NULL, args);
    close(fd);
    if (strstr(run.err, "not built in")) {
        test_run_free(&run);
        print_message("SKIP %s: this vit has no serve\n", __func__);
        skip();
    }
    assert_int_equal(run.status, 1);
    char want[128];
    snprintf(want, sizeof want,
             "vit serve: cannot listen on 127.0.0.1:%s: Address already in use\n", port);
    assert_string_equal(run.err, want);
    test_run_free(&run);
}

/* ---- access: API keys, CORS; /health while loading ---- */

#define KEY       "vit-test-key-0123456789abcdef"
#define OTHER_KEY "a-second-key"
#define WITH_KEY  "Authorization: Bearer " KEY "\r\n"

static response get(int port, const char *target, const char *headers) {
    return request(port, "GET", target, headers, NULL, 0);
}

/* A request refused for want of the key: 401, RFC 6750's challenge (invalid_token when a token
 * was sent), a JSON error. */
static void assert_unauthorized(response r, const char *says, int wrong_token) {
    if (r.status != 401) fail_msg("status %d, expected 401: %.*s", r.status, (int)r.size, r.body);
    const char *challenge = header(&r, "WWW-Authenticate");
    if (!challenge) fail_msg("401 without WWW-Authenticate:\n%s", r.head);
    assert_true(strncmp(challenge, "Bearer realm=", 13) == 0);
    assert_true(!strstr(challenge, "error=\"invalid_token\"") == !wrong_token);
    assert_refused(r, 401, says);
}

/* POST /v1/classify?k=1 of the cat photo with the headers given. */
static response classify_cat(int port, const char *headers) {
    size_t size;
    uint8_t *jpeg = read_whole_file(photos[0], &size);
    assert_non_null(jpeg);
    response r = request(port, "POST", "/v1/classify?k=1", headers, jpeg, size);
    free(jpeg);
    return r;
}

static void assert_cat(response r) {
    if (r.status != 200) fail_msg("status %d: %.*s", r.status, (int)r.size, r.body);
    const cJSON *top = cJSON_GetArrayItem(cJSON_GetObjectItem(r.one, "top"), 0);
    assert_string_equal(cJSON_GetObjectItem(top, "label")->valuestring, "Egyptian cat");
    response_free(&r);
}

/* GET / (HEAD too) without a key: the page's file byte for byte, as HTML; it takes GET only. */
static void assert_page(int port) {
    size_t size;
    char *page = (char *)read_whole_file("vit/cli/page/index.html", &size);
    assert_non_null(page);
    response r = get(port, "/", NULL);
    if (r.status != 200) fail_msg("GET /: status %d: %.*s", r.status, (int)r.size, r.body);
    assert_string_equal(header(&r, "Content-Type"), "text/html; charset=utf-8");
    assert_int_equal(r.size, size);
    assert_memory_equal(r.body, page, size);
    response_free(&r);
    free(page);
    r = request(port, "HEAD", "/", NULL, NULL, 0);
    assert_int_equal(r.status, 200);
    response_free(&r);
    assert_refused(request(port, "POST", "/", NULL, "x", 1), 405, "/ takes GET, not POST");
}

/* --api-key twice (and a $VIT_API_KEY, which the option overrides): the /v1/ paths and /metrics
 * need one of the keys; no header, another scheme, a key one byte off, a prefix of it, the key and
 * more, one of another length are refused with 401; either key is let in; /health is open. The log
 * never holds a key. */
static void test_api_key(void **state) {
    (void)state;
    server s;
    server_api_key_env = "from-the-environment";
    START_OR_SKIP(&s, "-m", IMAGENET, "-t", "1", "--api-key", KEY, "--api-key", OTHER_KEY);
    server_api_key_env = NULL;
    const int port = s.port;
    int refused = 0;
    assert_unauthorized(get(port, "/v1/model", NULL), "an API key is needed", 0), refused++;
    assert_unauthorized(get(port, "/v1/model", "Authorization: Basic dml0OnZpdA==\r\n"),
                        "Authorization: Bearer KEY", 0),
        refused++;
    static const char *const wrong[] = {"vit-test-key-0123456789abcdeF", /* the last byte */
                                        "Vit-test-key-0123456789abcdef", /* the first */
                                        "vit-test-key-0123456789abcde",  /* a prefix */
                                        KEY "0",                         /* the key and more */
                                        "k",                             /* another length */
                                        "from-the-environment"};
    for (size_t i = 0; i < sizeof wrong / sizeof wrong[0]; i++) {
        char headers[256];
        snprintf(headers, sizeof headers, "Authorization: Bearer %s\r\n", wrong[i]);
        assert_unauthorized(get(port, "/v1/model", headers), "wrong API key", 1), refused++;
    }
    assert_unauthorized(classify_cat(port, NULL), "an API key is needed", 0), refused++;
    assert_unauthorized(get(port, "/metrics", NULL), "an API key is needed", 0), refused++;
    assert_page(port); /* open: the page asks for the key */
    response r = get(port, "/health", NULL);
    assert_int_equal(r.status, 200);
    assert_null(header(&r, "WWW-Authenticate"));
    response_free(&r);
    r = get(port, "/v1/model", WITH_KEY);
    assert_int_equal(r.status, 200);
    assert_non_null(cJSON_GetObjectItem(r.json, "image"));
    response_free(&r);
    r = get(port, "/v1/model", "authorization: bearer  " OTHER_KEY "\r\n"); /* any case, spaces */
    assert_int_equal(r.status, 200);
    response_free(&r);
    assert_cat(classify_cat(port, WITH_KEY));
    r = get(port, "/metrics", WITH_KEY);
    assert_int_equal(r.status, 200);
    char line[96];
    snprintf(line, sizeof line, "vit_serve_errors_total{kind=\"unauthorized\"} %d\n", refused);
    if (!strstr(r.body, line)) fail_msg("no %s in /metrics", line);
    response_free(&r);
    assert_int_equal(stop_server(&s, SIGTERM), 0);
    char *log = read_log(&s);
    assert_non_null(strstr(log, "API key needed (2 keys)"));
    assert_non_null(strstr(log, "GET /v1/model 401"));
    assert_non_null(strstr(log, "POST /v1/classify?k=1 200"));
    assert_null(strstr(log, KEY));
    assert_null(strstr(log, OTHER_KEY));
    free(log);
}

/* $VIT_API_KEY alone sets the key. */
static void test_api_key_from_environment(void **state) {
    (void)state;
    server s;
    server_api_key_env = KEY;
    START_OR_SKIP(&s, "-m", IMAGENET, "-t", "1", "--quiet");
    server_api_key_env = NULL;
    assert_unauthorized(get(s.port, "/v1/model", NULL), "an API key is needed", 0);
    response r = get(s.port, "/v1/model", WITH_KEY);
    assert_int_equal(r.status, 200);
    response_free(&r);
    assert_int_equal(stop_server(&s, SIGTERM), 0);
}

/* Keys a header cannot carry and origins a browser never sends are usage errors (exit 2, one
 * line naming the option, never the key), found before the port opens. */
static void test_access_usage_errors(void **state) {
    (void)state;
    REQUIRE_BIN();
    char over[300];
    memset(over, 'z', 257);
    over[257] = 0;
    static const char *const says[] = {"--api-key: an empty API key",
                                       "--api-key: an API key holds a space",
                                       "--api-key: an API key of 257 bytes, over the limit of 256",
                                       "--cors-origin: 'http://localhost:3000/' is not an origin",
                                       "--cors-origin: 'localhost:3000' is not an origin",
                                       "--cors-origin: an empty origin",
                                       "$VIT_API_KEY: an API key holds a space"};
    const char *const cases[][4] = {{"--api-key", "", NULL},
                                    {"--api-key", "two words", NULL},
                                    {"--api-key", over, NULL},
                                    {"--cors-origin", "http://localhost:3000/", NULL},
                                    {"--cors-origin", "localhost:3000", NULL},
                                    {"--cors-origin", "http://a.example,,http://b.example", NULL},
                                    {NULL}};
    for (size_t i = 0; i < sizeof says / sizeof says[0]; i++) {
        const char *args[8] = {"serve", "-m", IMAGENET, "--port", "0"};
        int n = 5;
        for (int k = 0; k < 2 && cases[i][k]; k++) args[n++] = cases[i][k];
        if (!cases[i][0]) setenv("VIT_API_KEY", "a key with spaces", 1);
        test_run_result run = test_run_vit(NULL, NULL, args);
        unsetenv("VIT_API_KEY");
        if (run.status != 2 || !strstr(run.err, says[i]) ||
            strchr(run.err, '\n') != run.err + strlen(run.err) - 1)
            fail_msg("case %zu: exit %d: %s", i, run.status, run.err);
        assert_null(strstr(run.err, "listening"));
        assert_null(strstr(run.err, "zzzzzzzz"));
        assert_null(strstr(run.err, "with spaces"));
        assert_null(strstr(run.err, "two words"));
        test_run_free(&run);
    }
}

/* --cors-origin: a listed origin is named in Access-Control-Allow-Origin (refusals included, so
 * that a page can show why), others get no such header; preflights are answered 204 without a
 * key, with the methods and headers a request may use. Without --cors-origin (the main server):
 * no CORS header, OPTIONS is not a method any path takes. --cors-origin '*': every origin. */
static void test_cors(void **state) {
    (void)state;
    server s;
    START_OR_SKIP(&s, "-m", IMAGENET, "-t", "1", "--api-key", KEY, "--cors-origin",
                  "http://localhost:3000,https://app.example", "--cors-origin",
                  "http://127.0.0.1:8000");
    const int port = s.port;
    static const char *const allowed[] = {"http://localhost:3000", "https://app.example",
                                          "http://127.0.0.1:8000"};
    for (int i = 0; i < 3; i++) {
        char headers[256];
        snprintf(headers, sizeof headers, "Origin: %s\r\n" WITH_KEY, allowed[i]);
        response r = classify_cat(port, headers);
        assert_string_equal(header(&r, "Access-Control-Allow-Origin"), allowed[i]);
        assert_string_equal(header(&r, "Vary"), "Origin");
        assert_cat(r);
    }
    static const char *const others[] = {"http://evil.example",
                                         "http://localhost:3000.evil.example",
                                         "http://localhost:3001", "null"};
    for (int i = 0; i < 4; i++) {
        char headers[256];
        snprintf(headers, sizeof headers, "Origin: %s\r\n" WITH_KEY, others[i]);
        response r = classify_cat(port, headers);
        assert_null(header(&r, "Access-Control-Allow-Origin"));
        assert_string_equal(header(&r, "Vary"), "Origin");
        assert_cat(r);
    }
    response r = get(port, "/v1/model", "Origin: http://localhost:3000\r\n"); /* no key */
    assert_string_equal(header(&r, "Access-Control-Allow-Origin"), "http://localhost:3000");
    assert_unauthorized(r, "an API key is needed", 0);
    /* preflights, without the key as browsers send them */
    r = request(port, "OPTIONS", "/v1/classify",
                "Origin: https://app.example\r\nAccess-Control-Request-Method: POST\r\n"
                "Access-Control-Request-Headers: authorization, content-type\r\n",
                NULL, 0);
    assert_int_equal(r.status, 204);
    assert_int_equal(r.size, 0);
    assert_string_equal(header(&r, "Access-Control-Allow-Origin"), "https://app.example");
    assert_string_equal(header(&r, "Access-Control-Allow-Methods"), "POST");
    assert_string_equal(header(&r, "Access-Control-Allow-Headers"), "Authorization, Content-Type");
    assert_string_equal(header(&r, "Access-Control-Max-Age"), "7200");
    assert_string_equal(header(&r, "Vary"), "Origin");
    assert_string_equal(header(&r, "Allow"), "POST, OPTIONS");
    response_free(&r);
    r = request(port, "OPTIONS", "/v1/model",
                "Origin: http://localhost:3000\r\nAccess-Control-Request-Method: GET\r\n", NULL, 0);
    assert_int_equal(r.status, 204);
    assert_string_equal(header(&r, "Access-Control-Allow-Methods"), "GET, HEAD");
    response_free(&r);
    r = request(port, "OPTIONS", "/v1/classify",
                "Origin: http://evil.example\r\nAccess-Control-Request-Method: POST\r\n", NULL, 0);
    assert_int_equal(r.status, 204);
    assert_null(header(&r, "Access-Control-Allow-Origin"));
    assert_null(header(&r, "Access-Control-Allow-Methods"));
    response_free(&r);
    assert_refused(
        request(port, "OPTIONS", "/nowhere", "Origin: http://localhost:3000\r\n", NULL, 0), 404,
        "no such path");
    assert_int_equal(stop_server(&s, SIGTERM), 0);
    if (main_server.pid > 0) {
        r = get(main_server.port, "/health", "Origin: http://localhost:3000\r\n");
        assert_int_equal(r.status, 200);
        assert_null(header(&r, "Access-Control-Allow-Origin"));
        assert_null(header(&r, "Vary"));
        response_free(&r);
        r = request(main_server.port, "OPTIONS", "/v1/classify",
                    "Origin: http://localhost:3000\r\nAccess-Control-Request-Method: POST\r\n",
                    NULL, 0);
        assert_string_equal(header(&r, "Allow"), "POST");
        assert_refused(r, 405, "takes POST");
    }
    START_OR_SKIP(&s, "-m", IMAGENET, "-t", "1", "--cors-origin", "*", "--quiet");
    r = get(s.port, "/health", "Origin: http://anywhere.example\r\n");
    assert_int_equal(r.status, 200);
    assert_string_equal(header(&r, "Access-Control-Allow-Origin"), "*");
    response_free(&r);
    assert_cat(classify_cat(s.port, "Origin: http://anywhere.example\r\n")); /* no key asked */
    assert_int_equal(stop_server(&s, SIGTERM), 0);
}

/* A copy of the default model whose config.json (the first file a load opens) the test holds a
 * write lease on: the server's open() of it waits in the kernel until the lease is let go (or
 * /proc/sys/fs/lease-break-time, 45 s by default, runs out), and F_GETLEASE shows when the server
 * has come to it. The load is the real one, held up at its first read, with no hook in vit. The
 * lease's fd, or -1 when leases cannot be taken here (a file system without them). */
static int leased_model(char *dir, size_t size) {
    snprintf(dir, size, "%s/leased-model", test_tmpdir());
    assert_int_equal(mkdir(dir, 0700), 0);
    static const char *const linked[] = {"model.safetensors", "preprocessor_config.json"};
    for (int i = 0; i < 2; i++) {
        char from[4200], to[8500];
        snprintf(from, sizeof from, IMAGENET "/%s", linked[i]);
        char *target = realpath(from, NULL);
        assert_non_null(target);
        snprintf(to, sizeof to, "%s/%s", dir, linked[i]);
        assert_int_equal(symlink(target, to), 0);
        free(target);
    }
    size_t n;
    uint8_t *config = read_whole_file(IMAGENET "/config.json", &n);
    assert_non_null(config);
    write_temp_file("leased-model/config.json", config, n);
    free(config);
    char path[4300];
    snprintf(path, sizeof path, "%s/config.json", dir);
    signal(SIGIO, SIG_IGN); /* a lease break's notice: not needed, F_GETLEASE is polled */
    const int fd = open(path, O_RDWR | O_CLOEXEC);
    assert_true(fd >= 0);
    if (fcntl(fd, F_SETLEASE, F_WRLCK) != 0) {
        print_message("    no write lease on %s (%s)\n", path, strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

/* The port opens before the model loads: until it is ready GET /health answers 503 {"status":
 * "loading"} (without the key), the API 503 "the model is loading" (with the key; 401 still
 * without), unknown paths 404; then 200 and answers as usual. */
static void test_health_while_loading(void **state) {
    (void)state;
    REQUIRE_BIN();
    char dir[4200];
    const int lease = leased_model(dir, sizeof dir);
    if (lease < 0) {
        print_message("SKIP %s: file leases are not available in %s\n", __func__, test_tmpdir());
        skip();
    }
    server s;
    const char *args[] = {"-m", dir, "-t", "1", "--api-key", KEY, NULL};
    if (start_server_until(&s, args, 1) != 0) {
        close(lease);
        print_message("SKIP %s: this vit has no serve (built without libmicrohttpd)\n", __func__);
        skip();
    }
    const double until = now() + 60;
    while (fcntl(lease, F_GETLEASE) == F_WRLCK && now() < until) usleep(10 * 1000);
    if (fcntl(lease, F_GETLEASE) == F_WRLCK) fail_msg("the server did not open config.json");
    /* the server is inside its load, waiting on config.json */
    for (int i = 0; i < 2; i++) {
        response r = request(s.port, i ? "HEAD" : "GET", "/health", NULL, NULL, 0);
        assert_int_equal(r.status, 503);
        assert_string_equal(header(&r, "Retry-After"), "1");
        if (!i) assert_string_equal(r.body, "{\"status\": \"loading\"}\n");
        response_free(&r);
    }
    assert_unauthorized(get(s.port, "/v1/model", NULL), "an API key is needed", 0);
    assert_refused(get(s.port, "/v1/model", WITH_KEY), 503, "the model is loading");
    assert_refused(get(s.port, "/metrics", WITH_KEY), 503, "the model is loading");
    response r = classify_cat(s.port, WITH_KEY);
    assert_string_equal(header(&r, "Retry-After"), "1");
    assert_refused(r, 503, "the model is loading");
    assert_refused(get(s.port, "/nowhere", NULL), 404, "no such path");
    assert_page(s.port); /* the page is there at once, and waits for the model itself */
    char *log = read_log(&s);
    assert_null(strstr(log, "ready on"));
    free(log);
    /* let the load go on */
    assert_int_equal(fcntl(lease, F_SETLEASE, F_UNLCK), 0);
    close(lease);
    signal(SIGIO, SIG_DFL);
    int status = 0;
    for (const double deadline = now() + 60; status != 200 && now() < deadline;) {
        r = get(s.port, "/health", NULL);
        status = r.status;
        if (status != 200) {
            assert_int_equal(status, 503);
            usleep(20 * 1000);
        }
        response_free(&r);
    }
    assert_int_equal(status, 200);
    assert_cat(classify_cat(s.port, WITH_KEY));
    assert_int_equal(stop_server(&s, SIGTERM), 0);
    log = read_log(&s);
    assert_non_null(strstr(log, "loading the model"));
    assert_non_null(strstr(log, "GET /health 503"));
    assert_non_null(strstr(log, "POST /v1/classify?k=1 503"));
    assert_non_null(strstr(strstr(log, "GET /health 503"), "ready on http://127.0.0.1:"));
    free(log);
}

/* A model that fails to load after the port has opened: exit 1, the listening line and the one
 * line saying why. */
static void test_load_failure_exits(void **state) {
    (void)state;
    REQUIRE_BIN();
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/broken-model", test_tmpdir());
    assert_int_equal(mkdir(dir, 0700), 0);
    write_temp_file("broken-model/config.json", "{\"model_type\": ", 15);
    const char *args[] = {"serve", "-m", dir, "--port", "0", NULL};
    test_run_result run = test_run_vit(NULL, NULL, args);
    if (strstr(run.err, "not built in")) {
        test_run_free(&run);
        print_message("SKIP %s: this vit has no serve\n", __func__);
        skip();
    }
    assert_int_equal(run.status, 1);
    const char *second = strchr(run.err, '\n');
    assert_non_null(second);
    assert_true(strncmp(run.err, "vit serve: listening on http://127.0.0.1:", 41) == 0);
    char want[4300];
    snprintf(want, sizeof want, "\nvit serve: %s/config.json: ", dir);
    assert_ptr_equal(strstr(run.err, want), second);
    assert_ptr_equal(strchr(second + 1, '\n'), run.err + strlen(run.err) - 1); /* one line */
    test_run_free(&run);
}

/* The keys of a result's "top" (index, label, prob), its "file", then the rest: what a client
 * reads, to compare how the ways of sending answer. */
static void assert_same_shape(const cJSON *got, const cJSON *want) {
    if (!cJSON_IsObject(got)) fail_msg("no result");
    const cJSON *a = got->child, *b = want->child;
    for (; a && b; a = a->next, b = b->next)
        if (strcmp(a->string, b->string) != 0 || a->type != b->type)
            fail_msg("%s against %s", cJSON_PrintUnformatted(got), cJSON_PrintUnformatted(want));
    if (a || b)
        fail_msg("%s against %s", cJSON_PrintUnformatted(got), cJSON_PrintUnformatted(want));
}

/* One shape for each answer (issue 40): {"results": [...]} however the image came (raw, a form,
 * a JSON data URL); "index" the class's number and "label" its name in /v1/explain as in
 * /v1/classify; unknown JSON keys refused on /v1/text as on /v1/classify; errors as OpenAI's
 * {"error": {"message", "type", "code"}}, a whole request's and one input's; GET /v1/models as
 * OpenAI's list. */
static void test_http_shapes(void **state) {
    (void)state;
    REQUIRE_MAIN();
    const int port = main_server.port;
    response raw = post_file(port, "/v1/classify?k=2", photos[0]);
    byte_buf form = {0};
    put_file_part(&form, photos[0]);
    response formed = post_form(port, "/v1/classify?k=2", &form);
    cJSON *body = cJSON_CreateObject(), *images = cJSON_AddArrayToObject(body, "images");
    char *url = data_url(photos[0]);
    cJSON_AddItemToArray(images, cJSON_CreateString(url));
    free(url);
    response json = post_json(port, "/v1/classify?k=2", body);
    cJSON_Delete(body);
    assert_int_equal(raw.status, 200);
    assert_non_null(raw.one);
    assert_same_shape(json.one, raw.one);
    cJSON *named = cJSON_Duplicate(raw.one, 1); /* a form's part has its file name first */
    cJSON_AddItemToObject(named, "file", cJSON_CreateString("cat.jpg"));
    cJSON_AddItemToObject(named, "top", cJSON_DetachItemFromObject(named, "top"));
    assert_same_shape(formed.one, named);
    cJSON_Delete(named);
    assert_same_answer(formed.one, raw.one);
    assert_same_answer(json.one, raw.one);
    response x = post_file(port, "/v1/explain", photos[0]);
    assert_int_equal(x.status, 200);
    const cJSON *best = cJSON_GetArrayItem(cJSON_GetObjectItem(raw.one, "top"), 0);
    assert_int_equal(cJSON_GetObjectItem(x.one, "index")->valueint,
                     cJSON_GetObjectItem(best, "index")->valueint);
    assert_string_equal(cJSON_GetObjectItem(x.one, "label")->valuestring,
                        cJSON_GetObjectItem(best, "label")->valuestring);
    assert_null(cJSON_GetObjectItem(x.one, "name"));
    response_free(&raw), response_free(&formed), response_free(&json), response_free(&x);
    static const struct {
        const char *method, *target, *body, *type, *code;
        int status;
    } errors[] = {
        {"GET", "/nowhere", NULL, "not_found_error", "not_found", 404},
        {"GET", "/v1/classify", NULL, "invalid_request_error", "method_not_allowed", 405},
        {"POST", "/v1/classify?k=0", "x", "invalid_request_error", "bad_request", 400},
        {"POST", "/v1/classify", "not an image", "invalid_request_error", "bad_input", 400},
    };
    for (size_t i = 0; i < sizeof errors / sizeof *errors; i++) {
        const char *b = errors[i].body;
        response r = request(port, errors[i].method, errors[i].target, NULL, b, b ? strlen(b) : 0);
        assert_int_equal(r.status, errors[i].status);
        const cJSON *e = cJSON_GetObjectItem(r.json, "error");
        message_of(e);
        assert_string_equal(cJSON_GetObjectItem(e, "type")->valuestring, errors[i].type);
        assert_string_equal(cJSON_GetObjectItem(e, "code")->valuestring, errors[i].code);
        response_free(&r);
    }
    response m = request(port, "GET", "/v1/models", NULL, NULL, 0);
    assert_int_equal(m.status, 200);
    assert_string_equal(cJSON_GetObjectItem(m.json, "object")->valuestring, "list");
    const cJSON *data = cJSON_GetObjectItem(m.json, "data");
    assert_int_equal(cJSON_GetArraySize(data), have_text ? 2 : 1);
    const cJSON *first = cJSON_GetArrayItem(data, 0);
    assert_string_equal(cJSON_GetObjectItem(first, "id")->valuestring, "vit-tiny-in1k");
    assert_string_equal(cJSON_GetObjectItem(first, "object")->valuestring, "model");
    assert_true(cJSON_IsNumber(cJSON_GetObjectItem(first, "created")));
    if (have_text)
        assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(data, 1), "id")->valuestring,
                            "bert-sst2-tiny");
    response_free(&m);
    if (have_text) {
        const char *texts = "{\"texts\": [\"a fine film\"], \"k\": 1}";
        assert_refused(request(port, "POST", "/v1/text", NULL, texts, strlen(texts)), 400,
                       "unknown key \"k\" (a JSON body of /v1/text has \"texts\"; k, threshold "
                       "and logits are query parameters)");
    }
}

/* vit serve -m with a text model's folder: the fix named, --text-model, in one line. */
static void test_text_model_given_to_m(void **state) {
    (void)state;
    REQUIRE_SHARED(BERT);
    const char *args[] = {"serve", "-m", shared_path(BERT), "--port", "0", NULL};
    test_run_result run = test_run_vit(NULL, NULL, args);
    if (strstr(run.err, "not built in")) {
        test_run_free(&run);
        print_message("SKIP %s: this vit has no serve\n", __func__);
        skip();
    }
    assert_int_equal(run.status, 1);
    const char *second = strchr(run.err, '\n');
    assert_non_null(second);
    if (!strstr(second, "is a text model, not an image model: serve it with --text-model"))
        fail_msg("vit serve said: %s", run.err);
    assert_null(strstr(run.err, "vit text"));
    assert_ptr_equal(strchr(second + 1, '\n'), run.err + strlen(run.err) - 1); /* one line */
    test_run_free(&run);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_classify_raw_matches_cli),
        cmocka_unit_test(test_classify_form_matches_cli),
        cmocka_unit_test(test_classify_form_partial_failure),
        cmocka_unit_test(test_form_empty_parts),
        cmocka_unit_test(test_k1000_keeps_server_responsive),
        cmocka_unit_test(test_embed_matches_library),
        cmocka_unit_test(test_explain_matches_library),
        cmocka_unit_test(test_explain_refusals),
        cmocka_unit_test(test_text_matches_cli),
        cmocka_unit_test(test_health_model_metrics),
        cmocka_unit_test(test_bad_requests),
        cmocka_unit_test(test_chunked_garbage_keepalive),
        cmocka_unit_test(test_zero_shot_matches_library),
        cmocka_unit_test(test_zero_shot_cache),
        cmocka_unit_test(test_embeddings_match_library),
        cmocka_unit_test(test_embeddings_without_joint_model),
        cmocka_unit_test(test_joint_bad_requests),
        cmocka_unit_test(test_joint_model_description),
        cmocka_unit_test(test_generate_matches_cli),
        cmocka_unit_test(test_generate_concurrent_options),
        cmocka_unit_test(test_generate_bad_query),
        cmocka_unit_test(test_generate_bad_form_json),
        cmocka_unit_test(test_generate_model_kinds),
        cmocka_unit_test(test_generate_description_metrics),
        /* servers of their own */
        cmocka_unit_test(test_generate_other_models),
        cmocka_unit_test(test_siglip_without_text_tower),
        cmocka_unit_test(test_embeddings_own_pooling),
        cmocka_unit_test(test_embeddings_dimensions),
        cmocka_unit_test(test_embeddings_text_limits),
        cmocka_unit_test(test_text_needs_a_sequence_classifier),
        cmocka_unit_test(test_rerank_endpoint),
        cmocka_unit_test(test_text_token_classifier),
        cmocka_unit_test(test_text_aggregation),
        cmocka_unit_test(test_text_aggregation_without_offsets),
        cmocka_unit_test(test_joint_model_with_text_model),
        cmocka_unit_test(test_queue_full_gives_503),
        cmocka_unit_test(test_two_workers_answer_alike),
        cmocka_unit_test(test_slow_body_times_out),
        cmocka_unit_test(test_sigterm_finishes_requests),
        cmocka_unit_test(test_signal_to_any_thread),
        cmocka_unit_test(test_port_in_use),
        cmocka_unit_test(test_api_key),
        cmocka_unit_test(test_api_key_from_environment),
        cmocka_unit_test(test_access_usage_errors),
        cmocka_unit_test(test_cors),
        cmocka_unit_test(test_health_while_loading),
        cmocka_unit_test(test_load_failure_exits),
        cmocka_unit_test(test_http_shapes),
        cmocka_unit_test(test_text_model_given_to_m),
    };
    signal(SIGPIPE, SIG_IGN);
    return cmocka_run_group_tests(tests, start_main, stop_main);
}
