/* Malformed requests for `vit serve`, loopback only: each on a new connection, of assorted kinds
 * (garbage, broken request lines and headers, images truncated or with bytes flipped, broken
 * multipart forms, bad JSON, bad queries, wrong methods and paths, lying Content-Lengths, bad
 * chunking, bodies over the limit, clients that hang up), from a seeded generator so a run can be
 * repeated. Every 100 requests, and at the end, GET /health must answer 200.
 *
 *   build/bench/serve/fuzz -p PORT [-n 1000] [-s SEED] [--pid SERVER_PID] IMAGE...
 *
 * prints the answers by status, the connections closed without one, and whether the server is
 * alive; exit status 0 when /health always answered and no answer was a 5xx other than 503 (queue
 * full) and 505 (libmicrohttpd's answer to an HTTP version it does not speak). */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/loopback.h"
#include "vit/base/bytes.h"

static uint64_t rng_state = 1;

static uint64_t next_random(void) {
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static size_t below(size_t n) {
    return n ? (size_t)(next_random() % n) : 0;
}

static void put(byte_buf *b, const void *data, size_t n) {
    if (byte_buf_append(b, data, n, SIZE_MAX) != 0) abort();
}

static void puts_(byte_buf *b, const char *s) {
    put(b, s, strlen(s));
}

static void put_random(byte_buf *b, size_t n) {
    for (size_t i = 0; i < n; i++) {
        const char c = (char)next_random();
        put(b, &c, 1);
    }
}

typedef struct {
    byte_buf *images;
    int num_images;
} corpus;

/* A sample image, mutated: cut short, bytes flipped, or a slice dropped. */
static void put_mutated_image(byte_buf *b, const corpus *c, int how) {
    const byte_buf *img = &c->images[below((size_t)c->num_images)];
    byte_buf m = {0};
    put(&m, img->data, img->size);
    if (how == 0) {
        m.size = below(m.size);
    } else if (how == 1) {
        for (size_t k = 1 + below(20); k > 0; k--) m.data[below(m.size)] ^= (char)(1 + below(255));
    } else {
        const size_t at = below(m.size), n = below(m.size - at);
        memmove(m.data + at, m.data + at + n, m.size - at - n);
        m.size -= n;
    }
    put(b, m.data, m.size);
    byte_buf_free(&m);
}

static void put_request(byte_buf *b, const char *method, const char *target, const char *headers,
                        const byte_buf *body) {
    char head[1024];
    snprintf(head, sizeof head, "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\n%s", method, target,
             headers ? headers : "");
    puts_(b, head);
    if (body) {
        snprintf(head, sizeof head, "Content-Length: %zu\r\n", body->size);
        puts_(b, head);
    }
    puts_(b, "Connection: close\r\n\r\n");
    if (body) put(b, body->data, body->size);
}

#define BOUNDARY "fuzzboundaryXYZ"
#define FORM     "Content-Type: multipart/form-data; boundary=" BOUNDARY "\r\n"

static void put_form(byte_buf *body, const corpus *c, int parts) {
    for (int i = 0; i < parts; i++) {
        puts_(body, "--" BOUNDARY "\r\nContent-Disposition: form-data; name=\"");
        puts_(body, below(8) ? "image" : "other");
        puts_(body, "\"; filename=\"");
        put_random(body, below(4) ? below(20) : 3000);
        puts_(body, "\"\r\n\r\n");
        put_mutated_image(body, c, (int)below(3));
        puts_(body, "\r\n");
    }
    puts_(body, "--" BOUNDARY "--\r\n");
}

/* A slightly wrong JSON body for /v1/text. */
static void put_bad_json(byte_buf *body) {
    static const char *bodies[] = {
        "{\"texts\": [\"ok\", \"fine\"]}", "{\"texts\": \"x\"}",
        "{\"texts\": [1, {\"a\": []}]}",   "null",
        "{\"texts\": [\"\\ud800\"]}",      "{\"texts\": [\"a\\u0000b\"]}"};
    puts_(body, bodies[below(6)]);
    if (below(2)) body->size = below(body->size + 1);
    if (below(2) && body->size) body->data[below(body->size)] = (char)next_random();
}

static const char *const paths[] = {
    "/v1/classify",   "/v1/embed", "/v1/text",      "/health",       "/metrics",
    "/v1/model",      "/",         "//v1/classify", "/v1/classify/", "/V1/CLASSIFY",
    "/../etc/passwd", "*"};
static const char *const methods[] = {"GET",   "POST",    "PUT",   "DELETE", "HEAD", "OPTIONS",
                                      "PATCH", "CONNECT", "TRACE", "G\001T", ""};
static const char *const queries[] = {"?k=-1",          "?k=abc",         "?k=99999999999999",
                                      "?threshold=nan", "?threshold=-0",  "?logits=maybe",
                                      "?pool=",         "?%00=%ff",       "?k=3&k=4",
                                      "?&&&",           "?pool=mean&k=2", "?threshold=1e309"};

/* The kind-th malformed request into b; returns 1 when the client hangs up without reading. */
static int make_request(byte_buf *b, int kind, const corpus *c) {
    byte_buf body = {0};
    char target[4096];
    int hang_up = 0;
    switch (kind) {
    case 0: /* garbage */
        put_random(b, 1 + below(2000));
        break;
    case 1: /* a request line, then garbage headers */
        puts_(b, "POST /v1/classify HTTP/1.1\r\n");
        put_random(b, below(3000));
        puts_(b, "\r\n\r\n");
        break;
    case 2: /* a random body */
        put_random(&body, below(5000));
        put_request(b, "POST", "/v1/classify", NULL, &body);
        break;
    case 3: /* images truncated, flipped, sliced */
    case 4:
    case 5:
        put_mutated_image(&body, c, kind - 3);
        put_request(b, "POST", below(4) ? "/v1/classify?k=3" : "/v1/embed?pool=mean", NULL, &body);
        break;
    case 6: /* a form cut short or with a byte changed */
        put_form(&body, c, 1 + (int)below(3));
        if (below(2))
            body.size = below(body.size);
        else
            body.data[below(body.size)] = (char)next_random();
        put_request(b, "POST", "/v1/classify", FORM, &body);
        break;
    case 7: /* a form with another boundary, or many parts */
        put_form(&body, c, below(2) ? 1 : 1 + (int)below(80));
        put_request(b, "POST", "/v1/classify",
                    below(2) ? "Content-Type: multipart/form-data; boundary=other\r\n"
                             : "Content-Type: multipart/form-data\r\n",
                    &body);
        break;
    case 8: /* bad JSON for texts */
        put_bad_json(&body);
        put_request(b, "POST", "/v1/text", NULL, &body);
        break;
    case 9: /* JSON nested deeper than any parser goes */
        for (int i = 0; i < 20000; i++) puts_(&body, "[");
        put_request(b, "POST", "/v1/text", NULL, &body);
        break;
    case 10: /* methods and paths */
        snprintf(target, sizeof target, "%s", paths[below(12)]);
        put_request(b, methods[below(11)], target, NULL, below(2) ? &body : NULL);
        break;
    case 11: /* queries */
        put_mutated_image(&body, c, 1);
        snprintf(target, sizeof target, "%s%s", below(2) ? "/v1/classify" : "/v1/embed",
                 queries[below(12)]);
        put_request(b, "POST", target, NULL, &body);
        break;
    case 12: /* a long target */
        puts_(b, "GET /health?");
        for (size_t i = 0, n = 1000 + below(200000); i < n; i++) puts_(b, "a");
        puts_(b, " HTTP/1.1\r\nHost: x\r\n\r\n");
        break;
    case 13: /* a Content-Length longer than the body, and a client that hangs up */
        puts_(b, "POST /v1/classify HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n");
        put_mutated_image(b, c, 0);
        hang_up = 1;
        break;
    case 14: /* bad chunking */
        puts_(b, "POST /v1/classify HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n");
        puts_(b, below(2) ? "zz\r\n" : "fffffffffffffffffff\r\n");
        put_random(b, below(100));
        puts_(b, "\r\n0\r\n\r\n");
        break;
    case 15: /* a body declared over the limit */
        puts_(b, "POST /v1/classify HTTP/1.1\r\nHost: x\r\nContent-Length: 999999999999\r\n\r\n");
        put_random(b, below(1000));
        break;
    case 16: /* other versions, no Host, many headers */
        puts_(b, below(2) ? "GET /health HTTP/1.0\r\n" : "GET /health HTTP/9.9\r\n");
        for (size_t i = 0, n = below(3000); i < n; i++) puts_(b, "X-A: b\r\n");
        puts_(b, "\r\n");
        break;
    default: /* a form of good images with a hang-up before the answer */
        put_form(&body, c, 1);
        put_request(b, "POST", "/v1/classify", FORM, &body);
        hang_up = 1;
        break;
    }
    byte_buf_free(&body);
    return hang_up;
}
#define KINDS 18

/* Sends req and reads the status of the answer: -1 no connection, 0 closed without an answer. */
static int exchange(int port, const byte_buf *req, int hang_up) {
    const int fd = connect_loopback(port, 40);
    if (fd < 0) return -1;
    send_all(fd, req->data, req->size); /* a server that stops reading may still answer */
    int status = 0;
    if (!hang_up) {
        char buf[256];
        const ssize_t n = recv(fd, buf, sizeof buf - 1, 0);
        if (n > 0) {
            buf[n] = 0;
            sscanf(buf, "HTTP/1.%*d %d", &status);
        }
    }
    close(fd);
    return status;
}

static int health(int port) {
    static char text[] = "GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    const byte_buf req = {.data = text, .size = sizeof text - 1};
    return exchange(port, &req, 0);
}

static int load_images(corpus *c, char **paths, int n) {
    c->images = calloc((size_t)n, sizeof *c->images);
    c->num_images = n;
    for (int i = 0; i < n; i++) {
        FILE *f = fopen(paths[i], "rb");
        if (!f) return fprintf(stderr, "fuzz: cannot read %s\n", paths[i]), -1;
        char chunk[65536];
        size_t k;
        while ((k = fread(chunk, 1, sizeof chunk, f)) > 0) put(&c->images[i], chunk, k);
        fclose(f);
        if (c->images[i].size == 0) return fprintf(stderr, "fuzz: %s is empty\n", paths[i]), -1;
    }
    return 0;
}

int main(int argc, char **argv) {
    int port = 0, total = 1000, i = 1;
    long pid = 0;
    for (; i + 1 < argc && argv[i][0] == '-'; i += 2) {
        if (strcmp(argv[i], "-p") == 0) port = atoi(argv[i + 1]);
        if (strcmp(argv[i], "-n") == 0) total = atoi(argv[i + 1]);
        if (strcmp(argv[i], "-s") == 0) rng_state = strtoull(argv[i + 1], NULL, 10);
        if (strcmp(argv[i], "--pid") == 0) pid = atol(argv[i + 1]);
    }
    corpus c = {0};
    if (port <= 0 || i >= argc) {
        fprintf(stderr, "usage: fuzz -p PORT [-n N] [-s SEED] [--pid PID] IMAGE...\n");
        return 2;
    }
    if (load_images(&c, argv + i, argc - i) != 0) return 2;
    int by_class[6] = {0}, closed = 0, hung_up = 0, health_failures = 0, server_errors = 0;
    for (int r = 0; r < total; r++) {
        byte_buf req = {0};
        const int hang_up = make_request(&req, r % KINDS, &c);
        const int status = exchange(port, &req, hang_up);
        byte_buf_free(&req);
        if (status > 0) by_class[status / 100 % 6]++;
        if (status == 0 && !hang_up) closed++;
        hung_up += hang_up;
        if (status >= 500 && status != 503 && status != 505) {
            server_errors++;
            fprintf(stderr, "fuzz: request %d (kind %d): status %d\n", r, r % KINDS, status);
        }
        if ((r + 1) % 100 == 0 && health(port) != 200) {
            health_failures++;
            fprintf(stderr, "fuzz: /health did not answer after request %d\n", r);
        }
    }
    const int alive = pid <= 0 || kill((pid_t)pid, 0) == 0;
    const int last_health = health(port);
    printf("%d malformed requests: %d 2xx, %d 4xx, %d 5xx (%d other than 503 and 505), %d closed "
           "without "
           "an answer, %d hung up by the client; /health after every 100: %d failures; at the end: "
           "%d; server %s\n",
           total, by_class[2], by_class[4], by_class[5], server_errors, closed, hung_up,
           health_failures, last_health,
           pid <= 0 ? "(no pid given)"
           : alive  ? "alive"
                    : "GONE");
    return health_failures || server_errors || last_health != 200 || !alive;
}
