/* A load generator for `vit serve`, loopback only: C client threads, each on its own keep-alive
 * connection, POST one image file after another (round robin over the files given) until N
 * requests are done or the time limit passes, and the latencies are summed up:
 *
 *   build/bench/serve/load -p PORT -c 32 -n 2000 [-t 120] [--path /v1/classify?k=5] FILE...
 *
 * prints one line: requests, errors (any answer but 200, or a connection lost), seconds,
 * requests/s, and latency p50/p90/p99/max in ms. Exit status 0 when no request failed. With
 * --path given more than once (at most 4), each request is a visit that posts its image to each
 * path in turn (the web page's: --path '/v1/classify?k=5' --path /v1/explain), its latency the
 * whole visit's. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/loopback.h"

typedef struct {
    char *data;
    size_t size;
} file;

typedef struct {
    int port, concurrency, total;
    double limit_s;
    const char *paths[4];
    int num_paths;
    file *files;
    int num_files;
    atomic_int next;     /* requests handed out */
    atomic_int errors;   /* answers other than 200, connections lost */
    double *latency_ms;  /* [finished], in the order they finished */
    atomic_int finished; /* requests done (answered or failed) */
    double deadline;
} load;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Reads one response; returns its status (0: none), *keep whether the connection stays open. */
static int read_response(int fd, char *buf, size_t cap, int *keep) {
    size_t len = 0;
    char *end = NULL;
    while (!end && len + 1 < cap) {
        const ssize_t n = recv(fd, buf + len, cap - len - 1, 0);
        if (n <= 0) return 0;
        len += (size_t)n;
        buf[len] = 0;
        end = strstr(buf, "\r\n\r\n");
    }
    if (!end) return 0;
    int status = 0;
    sscanf(buf, "HTTP/1.%*d %d", &status);
    const char *cl = strcasestr(buf, "\r\nContent-Length:");
    size_t want = cl ? strtoull(cl + 17, NULL, 10) : 0, have = len - (size_t)(end + 4 - buf);
    *keep = !strcasestr(buf, "\r\nConnection: close");
    while (have < want) {
        const ssize_t n = recv(fd, buf, cap, 0);
        if (n <= 0) return 0;
        have += (size_t)n;
    }
    return status;
}

static void *client(void *arg) {
    load *l = arg;
    char head[512], *buf = malloc(1 << 16);
    int fd = -1;
    for (int i; buf && (i = atomic_fetch_add(&l->next, 1)) < l->total && now() < l->deadline;) {
        const file *f = &l->files[i % l->num_files];
        const double t0 = now();
        int status = 200;
        for (int p = 0; p < l->num_paths && status == 200; p++) {
            const int n = snprintf(head, sizeof head,
                                   "POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                                   "application/octet-stream\r\nContent-Length: %zu\r\n\r\n",
                                   l->paths[p], f->size);
            int keep = 0;
            status = 0;
            if (fd < 0) fd = connect_loopback(l->port, 30);
            if (fd >= 0 && send_all(fd, head, (size_t)n) == 0 &&
                send_all(fd, f->data, f->size) == 0)
                status = read_response(fd, buf, 1 << 16, &keep);
            if (!keep || status == 0) {
                if (fd >= 0) close(fd);
                fd = -1;
            }
        }
        l->latency_ms[atomic_fetch_add(&l->finished, 1)] = 1e3 * (now() - t0);
        if (status != 200) atomic_fetch_add(&l->errors, 1);
    }
    if (fd >= 0) close(fd);
    free(buf);
    return NULL;
}

static int compare(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int read_file(const char *path, file *f) {
    FILE *in = fopen(path, "rb");
    if (!in) return -1;
    fseek(in, 0, SEEK_END);
    f->size = (size_t)ftell(in);
    fseek(in, 0, SEEK_SET);
    f->data = malloc(f->size ? f->size : 1);
    const int ok = f->data && fread(f->data, 1, f->size, in) == f->size;
    fclose(in);
    return ok ? 0 : -1;
}

static void usage(void) {
    fprintf(stderr, "usage: load -p PORT [-c CONCURRENCY] [-n REQUESTS] [-t SECONDS] "
                    "[--path TARGET] FILE...\n");
    exit(2);
}

static void report(load *l, double seconds) {
    const int done = atomic_load(&l->finished);
    qsort(l->latency_ms, (size_t)done, sizeof(double), compare);
    const double *ms = l->latency_ms;
#define PCT(p) (done ? ms[(int)((done - 1) * (p))] : 0.0)
    char what[320] = "requests";
    if (l->num_paths > 1) { /* visits: name their paths */
        int n = snprintf(what, sizeof what, "visits (%s", l->paths[0]);
        for (int p = 1; p < l->num_paths && n > 0 && (size_t)n < sizeof what; p++)
            n += snprintf(what + n, sizeof what - (size_t)n, " + %s", l->paths[p]);
        if (n > 0 && (size_t)n < sizeof what) snprintf(what + n, sizeof what - (size_t)n, ")");
    }
    printf("concurrency %d: %d %s, %d errors, %.1f s, %.1f %s/s, latency ms p50 %.1f p90 %.1f "
           "p99 %.1f max %.1f\n",
           l->concurrency, done, what, atomic_load(&l->errors), seconds, done / seconds,
           l->num_paths > 1 ? "visits" : "requests", PCT(0.5), PCT(0.9), PCT(0.99),
           done ? ms[done - 1] : 0.0);
#undef PCT
}

int main(int argc, char **argv) {
    load l = {.concurrency = 1, .total = 100, .limit_s = 120};
    int i = 1;
    for (; i < argc && argv[i][0] == '-'; i += 2) {
        if (i + 1 >= argc) usage();
        if (strcmp(argv[i], "-p") == 0)
            l.port = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "-c") == 0)
            l.concurrency = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "-n") == 0)
            l.total = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "-t") == 0)
            l.limit_s = atof(argv[i + 1]);
        else if (strcmp(argv[i], "--path") == 0 && l.num_paths < 4)
            l.paths[l.num_paths++] = argv[i + 1];
        else
            usage();
    }
    if (l.num_paths == 0) l.paths[l.num_paths++] = "/v1/classify";
    if (l.port <= 0 || l.concurrency < 1 || l.concurrency > 1024 || l.total < 1 || i >= argc)
        usage();
    l.num_files = argc - i;
    l.files = calloc((size_t)l.num_files, sizeof *l.files);
    l.latency_ms = calloc((size_t)l.total, sizeof(double));
    for (int f = 0; f < l.num_files; f++)
        if (read_file(argv[i + f], &l.files[f]) != 0) {
            fprintf(stderr, "load: cannot read %s\n", argv[i + f]);
            return 2;
        }
    pthread_t threads[1024];
    const double t0 = now();
    l.deadline = t0 + l.limit_s;
    for (int c = 0; c < l.concurrency; c++) pthread_create(&threads[c], NULL, client, &l);
    for (int c = 0; c < l.concurrency; c++) pthread_join(threads[c], NULL);
    report(&l, now() - t0);
    return atomic_load(&l.errors) > 0;
}
