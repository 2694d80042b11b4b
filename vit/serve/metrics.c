#include "vit/serve/metrics.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_BUCKETS 24
#define MAX_SERIES  128

typedef struct {
    int n;
    double bounds[MAX_BUCKETS];             /* upper bounds, increasing */
    unsigned long long counts[MAX_BUCKETS]; /* observations <= bounds[i] (not yet cumulative) */
    unsigned long long count;
    double sum;
} histogram;

typedef struct {
    const char *family; /* one of the counter families below */
    char labels[96];
    unsigned long long value;
} series;

struct serve_metrics {
    pthread_mutex_t lock;
    series counters[MAX_SERIES];
    int num_counters;
    histogram request_seconds, queue_wait, forward_seconds, batch_size;
};

enum { REQUESTS, ERRORS, INPUTS, BATCHES, GENERATED };
static const struct {
    const char *name, *help;
} counter_families[] = {
    {"vit_serve_requests_total", "Requests answered, by endpoint and status code."},
    {"vit_serve_errors_total", "Requests refused, by kind."},
    {"vit_serve_inputs_total", "Images and texts answered."},
    {"vit_serve_batches_total", "Forward passes, by task."},
    {"vit_serve_generated_tokens_total",
     "Tokens generated for the images answered by /v1/generate (each start token not counted)."},
};

static const char *const error_kinds[SERVE_ERR_KINDS] = {
    "bad_request",        "bad_input",    "too_large", "not_found",
    "method_not_allowed", "queue_full",   "timeout",   "shutting_down",
    "internal",           "unauthorized", "loading",
};

const char *serve_error_kind_name(serve_error_kind kind) {
    return kind >= 0 && kind < SERVE_ERR_KINDS ? error_kinds[kind] : "unknown";
}

/* Seconds: 1 ms to 30 s, about three steps per decade. */
static const double second_bounds[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                       0.25,  0.5,    1,     2.5,  5,     10,   30};
#define NUM_SECOND_BOUNDS ((int)(sizeof second_bounds / sizeof second_bounds[0]))

static void histogram_init(histogram *h, const double *bounds, int n) {
    memset(h, 0, sizeof *h);
    h->n = n < MAX_BUCKETS ? n : MAX_BUCKETS;
    memcpy(h->bounds, bounds, sizeof(double) * (size_t)h->n);
}

static void histogram_observe(histogram *h, double v) {
    int i = 0;
    while (i < h->n && v > h->bounds[i]) i++;
    if (i < h->n) h->counts[i]++;
    h->count++;
    h->sum += v;
}

/* Powers of two below max_batch, then max_batch. */
static int batch_bounds(int max_batch, double *bounds) {
    int n = 0;
    for (int b = 1; b < max_batch && n < MAX_BUCKETS - 1; b *= 2) bounds[n++] = b;
    bounds[n++] = max_batch;
    return n;
}

/* The counter of family+labels, created at 0 if new; NULL when the table is full. */
static series *counter(serve_metrics *m, const char *family, const char *labels) {
    for (int i = 0; i < m->num_counters; i++)
        if (m->counters[i].family == family && strcmp(m->counters[i].labels, labels) == 0)
            return &m->counters[i];
    if (m->num_counters == MAX_SERIES) return NULL;
    series *s = &m->counters[m->num_counters++];
    s->family = family;
    snprintf(s->labels, sizeof s->labels, "%s", labels);
    s->value = 0;
    return s;
}

static void count(serve_metrics *m, int family, const char *labels, unsigned long long n) {
    pthread_mutex_lock(&m->lock);
    series *s = counter(m, counter_families[family].name, labels);
    if (s) s->value += n;
    pthread_mutex_unlock(&m->lock);
}

serve_metrics *serve_metrics_create(int max_batch) {
    serve_metrics *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    pthread_mutex_init(&m->lock, NULL);
    histogram_init(&m->request_seconds, second_bounds, NUM_SECOND_BOUNDS);
    histogram_init(&m->queue_wait, second_bounds, NUM_SECOND_BOUNDS);
    histogram_init(&m->forward_seconds, second_bounds, NUM_SECOND_BOUNDS);
    double bounds[MAX_BUCKETS];
    histogram_init(&m->batch_size, bounds, batch_bounds(max_batch < 1 ? 1 : max_batch, bounds));
    char labels[96];
    for (int k = 0; k < SERVE_ERR_KINDS; k++) {
        snprintf(labels, sizeof labels, "kind=\"%s\"", error_kinds[k]);
        count(m, ERRORS, labels, 0); /* every kind shown, from 0 */
    }
    count(m, GENERATED, "", 0);
    return m;
}

void serve_metrics_free(serve_metrics *m) {
    if (!m) return;
    pthread_mutex_destroy(&m->lock);
    free(m);
}

void serve_metrics_request(serve_metrics *m, const char *endpoint, int code, double seconds) {
    char labels[96];
    snprintf(labels, sizeof labels, "endpoint=\"%s\",code=\"%d\"", endpoint, code);
    count(m, REQUESTS, labels, 1);
    pthread_mutex_lock(&m->lock);
    histogram_observe(&m->request_seconds, seconds);
    pthread_mutex_unlock(&m->lock);
}

void serve_metrics_error(serve_metrics *m, serve_error_kind kind) {
    char labels[96];
    snprintf(labels, sizeof labels, "kind=\"%s\"", serve_error_kind_name(kind));
    count(m, ERRORS, labels, 1);
}

void serve_metrics_inputs(serve_metrics *m, const char *kind, int n) {
    char labels[96];
    snprintf(labels, sizeof labels, "kind=\"%s\"", kind);
    count(m, INPUTS, labels, (unsigned long long)n);
}

void serve_metrics_generated(serve_metrics *m, long long tokens) {
    count(m, GENERATED, "", (unsigned long long)tokens);
}

void serve_metrics_queue_wait(serve_metrics *m, double seconds) {
    pthread_mutex_lock(&m->lock);
    histogram_observe(&m->queue_wait, seconds);
    pthread_mutex_unlock(&m->lock);
}

void serve_metrics_batch(serve_metrics *m, const char *task, int size, double seconds) {
    char labels[96];
    snprintf(labels, sizeof labels, "task=\"%s\"", task);
    count(m, BATCHES, labels, 1);
    pthread_mutex_lock(&m->lock);
    histogram_observe(&m->batch_size, size);
    histogram_observe(&m->forward_seconds, seconds);
    pthread_mutex_unlock(&m->lock);
}

/* ---- the text format ---- */

static void write_header(FILE *out, const char *name, const char *type, const char *help) {
    fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void write_histogram(FILE *out, const char *name, const char *help, const histogram *h) {
    write_header(out, name, "histogram", help);
    unsigned long long cumulative = 0;
    for (int i = 0; i < h->n; i++) {
        cumulative += h->counts[i];
        fprintf(out, "%s_bucket{le=\"%g\"} %llu\n", name, h->bounds[i], cumulative);
    }
    fprintf(out, "%s_bucket{le=\"+Inf\"} %llu\n%s_sum %.9g\n%s_count %llu\n", name, h->count, name,
            h->sum, name, h->count);
}

static void write_gauge(FILE *out, const char *name, const char *help, double value) {
    write_header(out, name, "gauge", help);
    fprintf(out, "%s %.17g\n", name, value);
}

static void write_counter(FILE *out, const char *name, const char *help, unsigned long long value) {
    write_header(out, name, "counter", help);
    fprintf(out, "%s %llu\n", name, value);
}

static void write_class_sets(FILE *out, const serve_class_stats *c) {
    write_gauge(out, "vit_serve_zero_shot_class_sets_cached", "Zero-shot class sets held embedded.",
                c->cached);
    write_counter(out, "vit_serve_zero_shot_class_sets_embedded_total",
                  "Zero-shot class sets embedded (not found cached).", c->embedded);
    write_counter(out, "vit_serve_zero_shot_classes_embedded_total",
                  "Class names embedded, over those sets.", c->classes_embedded);
    write_counter(out, "vit_serve_zero_shot_class_set_hits_total",
                  "Zero-shot requests whose class set was cached (or being embedded).", c->hits);
    write_counter(out, "vit_serve_zero_shot_class_sets_evicted_total",
                  "Class sets dropped from the cache for newer ones.", c->evicted);
}

static double resident_bytes(void) {
    long pages = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
        fclose(f);
    }
    return (double)resident * (double)sysconf(_SC_PAGESIZE);
}

void serve_metrics_write(serve_metrics *m, const serve_gauges *g, FILE *out) {
    pthread_mutex_lock(&m->lock);
    for (size_t f = 0; f < sizeof counter_families / sizeof counter_families[0]; f++) {
        write_header(out, counter_families[f].name, "counter", counter_families[f].help);
        for (int i = 0; i < m->num_counters; i++) {
            const series *s = &m->counters[i];
            if (strcmp(s->family, counter_families[f].name) == 0 && s->labels[0])
                fprintf(out, "%s{%s} %llu\n", s->family, s->labels, s->value);
            else if (strcmp(s->family, counter_families[f].name) == 0) /* a family of one */
                fprintf(out, "%s %llu\n", s->family, s->value);
        }
    }
    write_histogram(out, "vit_serve_request_duration_seconds",
                    "Time from a request's arrival to its answer.", &m->request_seconds);
    write_histogram(out, "vit_serve_queue_wait_seconds",
                    "Time from an input's submission to the start of its forward pass.",
                    &m->queue_wait);
    write_histogram(out, "vit_serve_forward_seconds", "Duration of a forward pass.",
                    &m->forward_seconds);
    write_histogram(out, "vit_serve_batch_size", "Inputs per forward pass.", &m->batch_size);
    pthread_mutex_unlock(&m->lock);
    write_gauge(out, "vit_serve_queued_inputs", "Inputs submitted and not yet answered.",
                g->queued);
    write_gauge(out, "vit_serve_requests_in_flight", "Requests being received or answered.",
                g->in_flight);
    write_gauge(out, "vit_serve_connections", "Open client connections.", g->connections);
    if (g->classes) write_class_sets(out, g->classes);
    if (g->text_tokens) {
        write_counter(out, "vit_serve_text_tokens_total", "Tokens of the texts run.",
                      (unsigned long long)g->text_tokens[0]);
        write_counter(out, "vit_serve_text_padded_tokens_total",
                      "Places those tokens took in their forward passes, padding included "
                      "(texts run in passes of near lengths).",
                      (unsigned long long)g->text_tokens[1]);
        write_counter(out, "vit_serve_text_one_pass_tokens_total",
                      "Places one pass per batch, padded to its longest text, would have taken.",
                      (unsigned long long)g->text_tokens[2]);
    }
    write_gauge(out, "process_resident_memory_bytes", "Resident memory size in bytes.",
                resident_bytes());
    write_gauge(out, "process_start_time_seconds", "Start time of the process since the epoch.",
                g->started);
}
