/* The serving core without HTTP: the dynamic batcher (vit/serve/batcher.h) on a model of the
 * test's own whose forward pass waits at a gate the test opens, so batching, the bounded queue,
 * expiry, draining and two workers' forward passes at once are checked deterministically; then
 * the real tasks (vit/serve/tasks.h), with one worker and with two over one copy of the weights,
 * against vit_forward, vit_embed and vit_text_forward one input at a time; and the Prometheus
 * text of vit/serve/metrics.h. */
#include "tests/testutil.h"

#include <pthread.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "vit/serve/batcher.h"
#include "vit/serve/class_sets.h"
#include "vit/serve/metrics.h"
#include "vit/serve/tasks.h"
#include "vit/vit.h"

/* ---- a model of the test's own: data is a number as text; out[0] = 2 * it ---- */

typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    int gate_open;
    int fail_forward;
    int batches, sizes[64], tasks[64];
    int mixed;            /* a batch held jobs of more than one task */
    int mixed_parity;     /* a batch held odd and even numbers (same_batch keeps them apart) */
    int in_forward;       /* forward passes waiting at the gate */
    int workers[64];      /* of each batch */
    int done;             /* jobs whose done call ran */
    int lengths;          /* decode gives each job its number as its length */
    int decoded;          /* jobs decoded */
    float values[64][16]; /* each batch's numbers */
} fake_model;

static int fake_decode(void *self, serve_job *job, vit_error *err) {
    fake_model *m = self;
    char text[32] = {0};
    memcpy(text, job->data, job->size < 31 ? job->size : 31);
    char *end;
    const long v = strtol(text, &end, 10);
    if (end == text || *end) return vit_fail(err, "'%s' is not a number", text);
    float *input = malloc(sizeof(float));
    if (!input) return vit_fail(err, "out of memory");
    *input = (float)v;
    job->input = input;
    pthread_mutex_lock(&m->lock);
    if (m->lengths) job->length = (int)v;
    m->decoded++;
    pthread_cond_broadcast(&m->changed);
    pthread_mutex_unlock(&m->lock);
    return 0;
}

static int fake_forward(void *self, int worker, serve_job *const *jobs, int n, vit_error *err) {
    fake_model *m = self;
    pthread_mutex_lock(&m->lock);
    if (m->batches < 64) {
        for (int i = 0; i < n && i < 16; i++)
            m->values[m->batches][i] = *(const float *)jobs[i]->input;
        m->sizes[m->batches] = n;
        m->tasks[m->batches] = jobs[0]->task;
        m->workers[m->batches] = worker;
    }
    m->batches++;
    for (int i = 1; i < n; i++) {
        m->mixed |= jobs[i]->task != jobs[0]->task;
        m->mixed_parity |=
            (int)*(const float *)jobs[i]->input % 2 != (int)*(const float *)jobs[0]->input % 2;
    }
    m->in_forward++;
    pthread_cond_broadcast(&m->changed);
    while (!m->gate_open) pthread_cond_wait(&m->changed, &m->lock);
    m->in_forward--;
    const int fail = m->fail_forward;
    pthread_mutex_unlock(&m->lock);
    if (fail) return vit_fail(err, "the forward pass failed");
    for (int i = 0; i < n; i++) jobs[i]->out[0] = 2 * *(const float *)jobs[i]->input;
    return 0;
}

static fake_model *fake_model_new(void) {
    fake_model *m = calloc(1, sizeof *m);
    assert_non_null(m);
    pthread_mutex_init(&m->lock, NULL);
    pthread_cond_init(&m->changed, NULL);
    return m;
}

static void fake_model_free(fake_model *m) {
    pthread_mutex_destroy(&m->lock);
    pthread_cond_destroy(&m->changed);
    free(m);
}

static void open_gate(fake_model *m) {
    pthread_mutex_lock(&m->lock);
    m->gate_open = 1;
    pthread_cond_broadcast(&m->changed);
    pthread_mutex_unlock(&m->lock);
}

/* Waits (at most 10 s) until n forward passes are at the closed gate. */
static void await_forwards(fake_model *m, int n) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 10;
    pthread_mutex_lock(&m->lock);
    while (m->in_forward < n)
        if (pthread_cond_timedwait(&m->changed, &m->lock, &until) != 0) break;
    const int there = m->in_forward;
    pthread_mutex_unlock(&m->lock);
    assert_int_equal(there, n);
}

static void await_forward(fake_model *m) {
    await_forwards(m, 1);
}

static void job_done(serve_job *job) {
    fake_model *m = job->user;
    pthread_mutex_lock(&m->lock);
    m->done++;
    pthread_cond_broadcast(&m->changed);
    pthread_mutex_unlock(&m->lock);
}

typedef struct {
    serve_job jobs[16];
    float out[16];
    char text[16][16];
} job_set;

static void make_jobs(job_set *s, fake_model *m, int first, int n, int task) {
    for (int i = first; i < first + n; i++) {
        snprintf(s->text[i], sizeof s->text[i], "%d", i);
        s->jobs[i] = (serve_job){.task = task,
                                 .data = s->text[i],
                                 .size = strlen(s->text[i]),
                                 .out = &s->out[i],
                                 .done = job_done,
                                 .user = m};
    }
}

static serve_batcher *batcher_with(fake_model *m, int max_batch, int max_queue, int wait_ms,
                                   int timeout_ms, int workers) {
    const serve_model model = {.self = m, .decode = fake_decode, .forward = fake_forward};
    const serve_batcher_options opt = {.max_batch = max_batch,
                                       .batch_wait_ms = wait_ms,
                                       .max_queue = max_queue,
                                       .decode_threads = 2,
                                       .timeout_ms = timeout_ms,
                                       .workers = workers};
    vit_error err = {0};
    serve_batcher *b = serve_batcher_create(&model, &opt, &err);
    if (!b) fail_msg("%s", err.msg);
    return b;
}

static serve_batcher *batcher_for(fake_model *m, int max_batch, int max_queue, int wait_ms,
                                  int timeout_ms) {
    return batcher_with(m, max_batch, max_queue, wait_ms, timeout_ms, 1);
}

/* A client answered from a job's done call that submits a full queue again at once (vit serve
 * writes each answer from done) finds the room: the job it was answered for no longer counts.
 * It once did, until done returned, and such a request got 503. */
typedef struct {
    serve_batcher *b;
    job_set *again;
    _Atomic int result;
} resubmit;

static void done_and_submit(serve_job *job) {
    resubmit *r = job->user;
    r->result = serve_batcher_submit(r->b, r->again->jobs, 2);
}

static void test_room_once_answered(void **state) {
    (void)state;
    fake_model *m = fake_model_new();
    open_gate(m);
    serve_batcher *b = batcher_for(m, 8, 2, 0, 0);
    job_set first, again;
    make_jobs(&first, m, 0, 1, 0);
    make_jobs(&again, m, 0, 2, 0);
    resubmit r = {.b = b, .again = &again, .result = -1};
    first.jobs[0].done = done_and_submit;
    first.jobs[0].user = &r;
    assert_int_equal(serve_batcher_submit(b, first.jobs, 1), SERVE_SUBMITTED);
    for (int waited = 0; r.result == -1 && waited < 10000; waited++) usleep(1000);
    serve_batcher_drain(b); /* refuses submissions from now on: only once done has run */
    assert_int_equal(r.result, SERVE_SUBMITTED);
    assert_int_equal(m->done, 2); /* the two submitted from done ran too */
    serve_batcher_free(b);
    fake_model_free(m);
}

/* While one batch runs, jobs arriving meanwhile gather into the next one: one forward pass. */
static void test_concurrent_jobs_share_a_batch(void **state) {
    (void)state;
    fake_model *m = fake_model_new();
    serve_batcher *b = batcher_for(m, 8, 64, 5000, 0);
    job_set s;
    make_jobs(&s, m, 0, 6, 0);
    assert_int_equal(serve_batcher_submit(b, &s.jobs[0], 1), SERVE_SUBMITTED);
    await_forward(m);
    assert_int_equal(serve_batcher_submit(b, &s.jobs[1], 5), SERVE_SUBMITTED);
    open_gate(m);
    serve_batcher_drain(b);
    assert_int_equal(m->batches, 2);
    assert_int_equal(m->sizes[0], 1);
    assert_int_equal(m->sizes[1], 5);
    for (int i = 0; i < 6; i++) {
        assert_int_equal(s.jobs[i].status, SERVE_OK);
        assert_true(s.out[i] == 2.0f * i);
        assert_int_equal(s.jobs[i].batch_size, i == 0 ? 1 : 5);
    }
    assert_int_equal(m->done, 6);
    serve_batcher_free(b);
    fake_model_free(m);
}

/* max_batch bounds every batch; jobs of different tasks never share one. */
static void test_max_batch_and_tasks(void **state) {
    (void)state;
    fake_model *m = fake_model_new();
    serve_batcher *b = batcher_for(m, 3, 64, 5000, 0);
    job_set s;
    make_jobs(&s, m, 0, 1, 0);
    make_jobs(&s, m, 1, 7, 0);
    make_jobs(&s, m, 8, 4, 1);
    assert_int_equal(serve_batcher_submit(b, &s.jobs[0], 1), SERVE_SUBMITTED);
    await_forward(m);
    assert_int_equal(serve_batcher_submit(b, &s.jobs[1], 11), SERVE_SUBMITTED);
    open_gate(m);
    serve_batcher_drain(b);
    int total = 0;
    for (int i = 0; i < m->batches; i++) {
        assert_in_range(m->sizes[i], 1, 3);
        total += m->sizes[i];
    }
    assert_int_equal(total, 12);
    for (int i = 0; i < 12; i++) {
        assert_int_equal(s.jobs[i].status, SERVE_OK);
        assert_true(s.out[i] == 2.0f * i);
    }
    assert_false(m->mixed);
    int batches_of_task1 = 0, task1_jobs = 0;
    for (int i = 0; i < m->batches; i++)
        if (m->tasks[i] == 1) batches_of_task1++, task1_jobs += m->sizes[i];
    assert_int_equal(task1_jobs, 4);
    assert_int_equal(batches_of_task1, 2);
    serve_batcher_free(b);
    fake_model_free(m);
}

/* Jobs with lengths (texts' tokens): with more of them ready than a batch holds, the oldest goes
 * with those nearest its length, so 8 jobs of lengths 10-13 and 100-103, interleaved, go in two
 * batches of near lengths, not in their order (which pads each to 100 or more); with no more
 * than a batch, in their order as before. */
static void test_batches_by_length(void **state) {
    (void)state;
    fake_model *m = fake_model_new();
    m->lengths = 1;
    serve_batcher *b = batcher_for(m, 4, 64, 5000, 0);
    job_set s;
    make_jobs(&s, m, 0, 9, 0);
    static const int lengths[9] = {1, 10, 100, 11, 101, 12, 102, 13, 103};
    for (int i = 0; i < 9; i++) {
        snprintf(s.text[i], sizeof s.text[i], "%d", lengths[i]);
        s.jobs[i].size = strlen(s.text[i]);
    }
    assert_int_equal(serve_batcher_submit(b, &s.jobs[0], 1), SERVE_SUBMITTED);
    await_forward(m); /* the worker held at the gate while the others are decoded */
    assert_int_equal(serve_batcher_submit(b, &s.jobs[1], 8), SERVE_SUBMITTED);
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 10;
    pthread_mutex_lock(&m->lock);
    while (m->decoded < 9)
        if (pthread_cond_timedwait(&m->changed, &m->lock, &until) != 0) break;
    pthread_mutex_unlock(&m->lock);
    assert_int_equal(m->decoded, 9);
    for (int i = 0; i < 1000 && serve_batcher_ready(b) < 8; i++) usleep(10 * 1000);
    assert_int_equal(serve_batcher_ready(b), 8); /* decoded is counted before the job is ready */
    open_gate(m);
    serve_batcher_drain(b);
    assert_int_equal(m->batches, 3);
    long long padded = 0, ordered = 0; /* token places: each batch padded to its longest */
    for (int k = 1; k < 3; k++) {
        assert_int_equal(m->sizes[k], 4);
        float lo = 1e9f, hi = 0;
        for (int i = 0; i < 4; i++) {
            lo = fminf(lo, m->values[k][i]);
            hi = fmaxf(hi, m->values[k][i]);
        }
        assert_true(hi - lo <= 3); /* 10..13 or 100..103 */
        padded += 4 * (long long)hi;
    }
    for (int k = 0; k < 2; k++) { /* in their order: 10,100,11,101 then 12,102,13,103 */
        int hi = 0;
        for (int i = 1 + 4 * k; i < 5 + 4 * k; i++) hi = lengths[i] > hi ? lengths[i] : hi;
        ordered += 4LL * hi;
    }
    long long tokens = 0;
    for (int i = 1; i < 9; i++) tokens += lengths[i];
    print_message("8 jobs of lengths 10-13 and 100-103: %lld places padded by length (%.0f%% "
                  "padding), %lld in their order (%.0f%%)\n",
                  padded, 100.0 * (padded - tokens) / padded, ordered,
                  100.0 * (ordered - tokens) / ordered);
    for (int i = 0; i < 9; i++) {
        assert_int_equal(s.jobs[i].status, SERVE_OK);
        assert_true(s.out[i] == 2.0f * lengths[i]);
    }
    serve_batcher_free(b);
    fake_model_free(m);
}

/* The queue is bounded: a submission that does not fit is refused whole, and one larger than the
 * queue can never fit. */
static void test_queue_full(void **state) {
    (void)state;
    fake_model *m = fake_model_new();
    serve_batcher *b = batcher_for(m, 8, 4, 0, 0);
    job_set s;
    make_jobs(&s, m, 0, 10, 0);
    assert_int_equal(serve_batcher_submit(b, &s.jobs[0], 1), SERVE_SUBMITTED);
    await_forward(m);
    assert_int_equal(serve_batcher_submit(b, &s.jobs[1], 3), SERVE_SUBMITTED);
    assert_int_equal(serve_batcher_pending(b), 4);
    assert_int_equal(serve_batcher_submit(b, &s.jobs[4], 1), SERVE_QUEUE_FULL);
    assert_int_equal(serve_batcher_submit(b, &s.jobs[4], 5), SERVE_TOO_MANY);
    open_gate(m);
    serve_batcher_drain(b);
    assert_int_equal(m->done, 4);
    assert_int_equal(serve_batcher_pending(b), 0);
    assert_int_equal(serve_batcher_submit(b, &s.jobs[4], 1), SERVE_CLOSED);
    serve_batcher_free(b);
    fake_model_free(m);
}

/* A job that cannot be decoded fails alone; a failed forward pass fails its batch. */
static void test_failures(void **state) {
    (void)state;
    fake_model *m = fake_model_new();
    serve_batcher *b = batcher_for(m, 8, 16, 0, 0);
    job_set s;
    make_jobs(&s, m, 0, 3, 0);
    s.jobs[1].data = "not a number";
    s.jobs[1].size = strlen("not a number");
    open_gate(m);
    assert_int_equal(serve_batcher_submit(b, s.jobs, 3), SERVE_SUBMITTED);
    serve_batcher_drain(b);
    assert_int_equal(s.jobs[0].status, SERVE_OK);
    assert_int_equal(s.jobs[1].status, SERVE_BAD_INPUT);
    assert_non_null(strstr(s.jobs[1].err.msg, "not a number"));
    assert_int_equal(s.jobs[1].batch_size, 0);
    assert_int_equal(s.jobs[2].status, SERVE_OK);
    serve_batcher_free(b);

    m->fail_forward = 1;
    b = batcher_for(m, 8, 16, 0, 0);
    make_jobs(&s, m, 0, 2, 0);
    assert_int_equal(serve_batcher_submit(b, s.jobs, 2), SERVE_SUBMITTED);
    serve_batcher_free(b); /* drains first */
    for (int i = 0; i < 2; i++) {
        assert_int_equal(s.jobs[i].status, SERVE_FAILED);
        assert_string_equal(s.jobs[i].err.msg, "the forward pass failed");
    }
    fake_model_free(m);
}

/* A job whose batch has not started within timeout_ms expires. */
static void test_expiry(void **state) {
    (void)state;
    fake_model *m = fake_model_new();
    serve_batcher *b = batcher_for(m, 1, 16, 0, 50);
    job_set s;
    make_jobs(&s, m, 0, 2, 0);
    assert_int_equal(serve_batcher_submit(b, &s.jobs[0], 1), SERVE_SUBMITTED);
    await_forward(m);
    assert_int_equal(serve_batcher_submit(b, &s.jobs[1], 1), SERVE_SUBMITTED);
    usleep(150 * 1000);
    open_gate(m);
    serve_batcher_drain(b);
    assert_int_equal(s.jobs[0].status, SERVE_OK);
    assert_int_equal(s.jobs[1].status, SERVE_EXPIRED);
    assert_true(s.jobs[1].wait_seconds >= 0.05);
    assert_non_null(strstr(s.jobs[1].err.msg, "queue"));
    serve_batcher_free(b);
    fake_model_free(m);
}

/* Two workers: while one batch waits at the gate, the next goes to the other worker at once, and
 * a third waits for either; batching and max_batch as with one. */
static void test_two_workers(void **state) {
    (void)state;
    fake_model *m = fake_model_new();
    serve_batcher *b = batcher_with(m, 2, 64, 0, 0, 2);
    job_set s;
    make_jobs(&s, m, 0, 7, 0);
    assert_int_equal(serve_batcher_submit(b, &s.jobs[0], 1), SERVE_SUBMITTED);
    await_forwards(m, 1);
    assert_int_equal(serve_batcher_submit(b, &s.jobs[1], 1), SERVE_SUBMITTED);
    await_forwards(m, 2); /* both workers at the gate */
    assert_int_equal(serve_batcher_submit(b, &s.jobs[2], 5), SERVE_SUBMITTED);
    usleep(50 * 1000);
    pthread_mutex_lock(&m->lock);
    assert_int_equal(m->batches, 2); /* no third worker */
    assert_true(m->workers[0] != m->workers[1]);
    pthread_mutex_unlock(&m->lock);
    open_gate(m);
    serve_batcher_drain(b);
    int total = 0;
    for (int i = 0; i < m->batches; i++) {
        assert_in_range(m->sizes[i], 1, 2);
        assert_in_range(m->workers[i], 0, 1);
        total += m->sizes[i];
    }
    assert_int_equal(total, 7);
    for (int i = 0; i < 7; i++) {
        assert_int_equal(s.jobs[i].status, SERVE_OK);
        assert_true(s.out[i] == 2.0f * i);
    }
    serve_batcher_free(b);
    fake_model_free(m);
}

/* The model's same_batch: numbers of one parity only (as generation's options). */
static int same_parity(void *self, const serve_job *a, const serve_job *b) {
    (void)self;
    return (int)*(const float *)a->input % 2 == (int)*(const float *)b->input % 2;
}

/* Jobs of one task that the model's same_batch keeps apart run in batches of their own, each as
 * large as it can be; without same_batch (above) they share one. */
static void test_same_batch_keeps_jobs_apart(void **state) {
    (void)state;
    fake_model *m = fake_model_new();
    const serve_model model = {
        .self = m, .decode = fake_decode, .forward = fake_forward, .same_batch = same_parity};
    const serve_batcher_options opt = {
        .max_batch = 8, .batch_wait_ms = 5000, .max_queue = 64, .decode_threads = 2, .workers = 1};
    vit_error err = {0};
    serve_batcher *b = serve_batcher_create(&model, &opt, &err);
    assert_non_null(b);
    job_set s;
    make_jobs(&s, m, 0, 7, 0);
    assert_int_equal(serve_batcher_submit(b, &s.jobs[0], 1), SERVE_SUBMITTED);
    await_forward(m);
    assert_int_equal(serve_batcher_submit(b, &s.jobs[1], 6), SERVE_SUBMITTED); /* 1..6 */
    open_gate(m);
    serve_batcher_drain(b);
    assert_int_equal(m->batches, 3);
    assert_int_equal(m->sizes[0], 1);
    assert_int_equal(m->sizes[1], 3); /* 1, 3, 5 or 2, 4, 6 */
    assert_int_equal(m->sizes[2], 3);
    assert_false(m->mixed_parity);
    for (int i = 0; i < 7; i++) assert_true(s.out[i] == 2.0f * i);
    serve_batcher_free(b);
    fake_model_free(m);
}

/* ---- the real tasks, against the API one input at a time ---- */

#define IMAGENET "models/vit-tiny-in1k"
static const char *const photos[] = {"examples/photos/cat.jpg", "examples/photos/coffee.jpg",
                                     "examples/photos/rocket.jpg"};

static void count_done(serve_job *job) {
    (void)job;
}

static void assert_close(const float *a, const float *b, size_t n, double tol) {
    double worst = 0;
    for (size_t i = 0; i < n; i++) worst = fmax(worst, fabs((double)a[i] - b[i]));
    if (worst > tol) fail_msg("differs by %g (tolerance %g)", worst, tol);
}

/* Six photos (three classified, three embedded) through the batcher with `workers` workers. */
static void image_tasks_match_the_api(int workers) {
    vit_params params = vit_default_params();
    params.max_batch = 4;
    vit_error err = {0};
    vit_context *ctx = vit_load(IMAGENET, &params, &err);
    if (!ctx) fail_msg("%s", err.msg);
    serve_tasks *tasks = serve_tasks_create(ctx, NULL, 4, workers, &err);
    assert_non_null(tasks);
    const size_t L = serve_task_outputs(tasks, SERVE_CLASSIFY), D = vit_hidden_size(ctx);
    assert_int_equal(L, 1000);
    assert_int_equal(serve_task_outputs(tasks, SERVE_TEXT), 0);
    const serve_model model = serve_tasks_model(tasks);
    const serve_batcher_options opt = {.max_batch = 4,
                                       .batch_wait_ms = 50,
                                       .max_queue = 16,
                                       .decode_threads = 2,
                                       .workers = workers};
    serve_batcher *b = serve_batcher_create(&model, &opt, &err);
    assert_non_null(b);
    serve_job jobs[6];
    float *out = test_alloc_floats(6 * L);
    uint8_t *bytes[3];
    size_t sizes[3];
    for (int i = 0; i < 6; i++) {
        const int p = i % 3;
        if (i < 3) assert_non_null(bytes[p] = read_whole_file(photos[p], &sizes[p]));
        jobs[i] = (serve_job){.task = i < 3 ? SERVE_CLASSIFY : SERVE_EMBED_MEAN,
                              .data = bytes[p],
                              .size = sizes[p],
                              .out = out + (size_t)i * L,
                              .done = count_done};
    }
    assert_int_equal(serve_batcher_submit(b, jobs, 6), SERVE_SUBMITTED);
    serve_batcher_drain(b);
    float *pixels = test_alloc_floats(vit_input_floats(ctx)), *want = test_alloc_floats(L);
    for (int i = 0; i < 6; i++) {
        assert_int_equal(jobs[i].status, SERVE_OK);
        assert_int_equal(vit_preprocess_file(ctx, photos[i % 3], pixels, &err), 0);
        if (i < 3)
            assert_int_equal(vit_forward(ctx, pixels, 1, want, &err), 0);
        else
            assert_int_equal(vit_embed(ctx, pixels, 1, VIT_POOL_MEAN, want, &err), 0);
        assert_close(jobs[i].out, want, i < 3 ? L : D, 1e-4);
    }
    serve_batcher_free(b);
    serve_tasks_free(tasks);
    for (int i = 0; i < 3; i++) free(bytes[i]);
    free(out), free(pixels), free(want);
    vit_free(ctx);
}

static void test_image_tasks_match_the_api(void **state) {
    (void)state;
    image_tasks_match_the_api(1);
}

/* Two workers, the second on a vit_share of the context: the same answers. */
static void test_image_tasks_two_workers(void **state) {
    (void)state;
    image_tasks_match_the_api(2);
}

static void text_task_matches_the_api(int workers) {
    REQUIRE_SHARED("models/bert-sst2-tiny");
    vit_text_params params = vit_text_default_params();
    params.max_batch = 4;
    vit_error err = {0};
    vit_text_context *ctx = vit_text_load(shared_path("models/bert-sst2-tiny"), &params, &err);
    if (!ctx) fail_msg("%s", err.msg);
    serve_tasks *tasks = serve_tasks_create(NULL, ctx, 4, workers, &err);
    assert_non_null(tasks);
    const serve_model model = serve_tasks_model(tasks);
    const serve_batcher_options opt = {.max_batch = 4,
                                       .batch_wait_ms = 50,
                                       .max_queue = 16,
                                       .decode_threads = 1,
                                       .workers = workers};
    serve_batcher *b = serve_batcher_create(&model, &opt, &err);
    static const char *texts[] = {"a gorgeous, witty, seductive movie.",
                                  "the plot is nothing but boilerplate clichés", "fine"};
    serve_job jobs[3];
    float out[3][2], want[2];
    for (int i = 0; i < 3; i++)
        jobs[i] = (serve_job){.task = SERVE_TEXT,
                              .data = texts[i],
                              .size = strlen(texts[i]),
                              .out = out[i],
                              .done = count_done};
    assert_int_equal(serve_batcher_submit(b, jobs, 3), SERVE_SUBMITTED);
    serve_batcher_drain(b);
    for (int i = 0; i < 3; i++) {
        const size_t n = strlen(texts[i]);
        assert_int_equal(vit_text_forward(ctx, &texts[i], &n, 1, want, NULL, &err), 0);
        assert_int_equal(jobs[i].status, SERVE_OK);
        assert_close(out[i], want, 2, 1e-4);
    }
    serve_batcher_free(b);
    serve_tasks_free(tasks);
    vit_text_free(ctx);
}

/* A batch of texts of mixed lengths (SST-2's first 16 dev sentences, 4 to 50 tokens) runs as
 * passes of near lengths: each embedding still vit_text_embed's of the text alone (1e-5), and the
 * padding measured before (one pass padded to the longest) and after. */
static void test_text_batch_runs_by_length(void **state) {
    (void)state;
    REQUIRE_SHARED("models/bert-sst2-tiny");
    enum { N = 16 };
    vit_text_params params = vit_text_default_params();
    params.max_batch = N;
    params.threads = 1;
    vit_error err = {0};
    vit_text_context *ctx = vit_text_load(shared_path("models/bert-sst2-tiny"), &params, &err);
    if (!ctx) fail_msg("%s", err.msg);
    serve_tasks *tasks = serve_tasks_create(NULL, ctx, N, 1, &err);
    assert_non_null(tasks);
    const serve_model model = serve_tasks_model(tasks);
    const serve_batcher_options opt = {
        .max_batch = N, .batch_wait_ms = 5000, .max_queue = N, .decode_threads = 1, .workers = 1};
    serve_batcher *b = serve_batcher_create(&model, &opt, &err);
    char *tsv = (char *)read_whole_file(shared_path("data/sst2/dev.tsv"), NULL);
    assert_non_null(tsv);
    char *texts[N], *save = NULL;
    strtok_r(tsv, "\n", &save); /* the header */
    for (int i = 0; i < N; i++) {
        texts[i] = strtok_r(NULL, "\n", &save);
        *strchr(texts[i], '\t') = 0;
    }
    const int D = vit_text_embed_size(ctx, vit_text_default_pool(ctx));
    float *out = test_alloc_floats((size_t)N * D), *want = test_alloc_floats(D);
    serve_job jobs[N];
    serve_text_request req[N];
    for (int i = 0; i < N; i++) {
        req[i] = (serve_text_request){.text = texts[i], .size = strlen(texts[i])};
        jobs[i] = (serve_job){.task = SERVE_EMBED_TEXT,
                              .data = &req[i],
                              .out = out + (size_t)i * D,
                              .done = count_done};
    }
    assert_int_equal(serve_batcher_submit(b, jobs, N), SERVE_SUBMITTED);
    serve_batcher_drain(b);
    int shortest = 1 << 30, longest = 0;
    for (int i = 0; i < N; i++) {
        assert_int_equal(jobs[i].status, SERVE_OK);
        assert_int_equal(jobs[i].batch_size, N); /* one batch, split into passes inside */
        const size_t n = strlen(texts[i]);
        assert_int_equal(vit_text_embed(ctx, (const char *const *)&texts[i], &n, 1,
                                        vit_text_default_pool(ctx), want, &err),
                         0);
        int count;
        vit_text_ids(ctx, 0, &count);
        assert_int_equal(req[i].tokens, count);
        shortest = count < shortest ? count : shortest;
        longest = count > longest ? count : longest;
        assert_close(out + (size_t)i * D, want, D, 1e-5);
    }
    long long tokens, padded, one_pass;
    serve_tasks_padding(tasks, &tokens, &padded, &one_pass);
    print_message("%d texts of %d to %d tokens: %lld tokens; one pass pads to %lld places "
                  "(%.0f%% padding), passes by length to %lld (%.0f%%)\n",
                  N, shortest, longest, tokens, one_pass, 100.0 * (one_pass - tokens) / one_pass,
                  padded, 100.0 * (padded - tokens) / padded);
    assert_int_equal(one_pass, (long long)N * longest);
    assert_true(padded < one_pass && padded >= tokens);
    serve_batcher_free(b);
    serve_tasks_free(tasks);
    free(out);
    free(want);
    free(tsv);
    vit_text_free(ctx);
}

/* A SigLIP text tower reads every text padded to its max_tokens: a mixed batch is one pass (no
 * cut would save a place), each embedding vit_text_embed's of the text alone. */
static void test_siglip_batch_is_one_pass(void **state) {
    (void)state;
#ifdef VIT_SENTENCEPIECE
    vit_text_params params = vit_text_default_params();
    params.max_batch = 4;
    vit_error err = {0};
    vit_text_context *ctx = vit_text_load("tests/data/siglip-text-micro", &params, &err);
    if (!ctx) fail_msg("%s", err.msg);
    assert_int_equal(vit_text_padded_length(ctx, 3), vit_text_max_tokens(ctx));
    serve_tasks *tasks = serve_tasks_create(NULL, ctx, 4, 1, &err);
    assert_non_null(tasks);
    const serve_model model = serve_tasks_model(tasks);
    const serve_batcher_options opt = {
        .max_batch = 4, .batch_wait_ms = 5000, .max_queue = 4, .decode_threads = 1, .workers = 1};
    serve_batcher *b = serve_batcher_create(&model, &opt, &err);
    static const char *texts[4] = {"a", "a photo of a cat on a mat in the sun", "two dogs", "x y"};
    const int D = vit_text_embed_size(ctx, vit_text_default_pool(ctx));
    float *out = test_alloc_floats(4 * (size_t)D), *want = test_alloc_floats(D);
    serve_job jobs[4];
    serve_text_request req[4];
    for (int i = 0; i < 4; i++) {
        req[i] = (serve_text_request){.text = texts[i], .size = strlen(texts[i])};
        jobs[i] = (serve_job){.task = SERVE_EMBED_TEXT,
                              .data = &req[i],
                              .out = out + (size_t)i * D,
                              .done = count_done};
    }
    assert_int_equal(serve_batcher_submit(b, jobs, 4), SERVE_SUBMITTED);
    serve_batcher_drain(b);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(jobs[i].status, SERVE_OK);
        const size_t n = strlen(texts[i]);
        assert_int_equal(
            vit_text_embed(ctx, &texts[i], &n, 1, vit_text_default_pool(ctx), want, &err), 0);
        assert_close(out + (size_t)i * D, want, D, 1e-5);
    }
    long long tokens, padded, one_pass;
    serve_tasks_padding(tasks, &tokens, &padded, &one_pass);
    assert_int_equal(padded, 4LL * vit_text_max_tokens(ctx));
    assert_int_equal(one_pass, padded);
    serve_batcher_free(b);
    serve_tasks_free(tasks);
    free(out);
    free(want);
    vit_text_free(ctx);
#else
    print_message("SKIP %s: this build has no SentencePiece\n", __func__);
    skip();
#endif
}

static void test_text_task_matches_the_api(void **state) {
    (void)state;
    text_task_matches_the_api(1);
}

static void test_text_task_two_workers(void **state) {
    (void)state;
    text_task_matches_the_api(2);
}

/* ---- a joint model: its tasks and the class sets ---- */

#define CLIP "tests/data/clip-micro"

static vit_text_context *clip_text(int max_batch) {
    vit_text_params params = vit_text_default_params();
    params.max_batch = max_batch;
    vit_error err = {0};
    vit_text_context *text = vit_text_load(CLIP, &params, &err);
    if (!text) fail_msg("%s", err.msg);
    return text;
}

/* The scores of a fixed unit vector against a set's classes: equal scores, equal embeddings. */
static void class_scores(const vit_classes *classes, float *scores) {
    float x[20];
    for (int d = 0; d < 20; d++) x[d] = (float)((d % 3) - 1) / sqrtf(13.0f);
    vit_error err = {0};
    assert_int_equal(vit_classes_score(classes, x, 1, scores, NULL, &err), 0);
}

static void assert_same_classes(const vit_classes *got, const vit_classes *want) {
    const int n = vit_classes_count(want);
    assert_int_equal(vit_classes_count(got), n);
    float a[64], b[64];
    class_scores(got, a);
    class_scores(want, b);
    assert_memory_equal(a, b, sizeof(float) * (size_t)n);
    for (int i = 0; i < n; i++)
        assert_string_equal(vit_classes_name(got, i), vit_classes_name(want, i));
}

/* A set is embedded once and found after; its classes are vit_classes_create's; other lists,
 * templates or a different split of the same characters are other sets; the set used longest ago
 * is evicted beyond the capacity, and one still held stays usable until released; a set that
 * cannot be embedded is an error and is not cached. */
static void test_class_cache(void **state) {
    (void)state;
    vit_text_context *text = clip_text(8);
    serve_class_cache *c = serve_class_cache_create(2);
    assert_non_null(c);
    const char *animals[] = {"cat", "dog", "a red car"}, *photo[] = {"a photo of a {}."};
    const char *split1[] = {"a", "bc"}, *split2[] = {"ab", "c"};
    const serve_class_query q1 = {animals, 3, NULL, 0}, q2 = {animals, 3, photo, 1},
                            q3 = {split1, 2, NULL, 0}, q4 = {split2, 2, NULL, 0};
    vit_error err = {0};
    assert_null(serve_class_cache_find(c, &q1));
    serve_class_set *a = serve_class_cache_get(c, &q1, text, &err);
    if (!a) fail_msg("%s", err.msg);
    vit_classes *want = vit_classes_create(text, animals, 3, NULL, 0, &err);
    assert_same_classes(serve_class_set_classes(a), want);
    vit_classes_free(want);
    serve_class_set *again = serve_class_cache_get(c, &q1, text, &err);
    serve_class_set *found = serve_class_cache_find(c, &q1);
    assert_ptr_equal(again, a);
    assert_ptr_equal(found, a);
    serve_class_stats st = serve_class_cache_stats(c);
    assert_int_equal(st.embedded, 1);
    assert_int_equal(st.classes_embedded, 3);
    assert_int_equal(st.hits, 2);
    assert_int_equal(st.cached, 1);
    serve_class_set_release(c, again);
    serve_class_set_release(c, found);
    serve_class_set *b = serve_class_cache_get(c, &q2, text, &err); /* with a template */
    assert_ptr_not_equal(b, a);
    want = vit_classes_create(text, animals, 3, photo, 1, &err);
    assert_same_classes(serve_class_set_classes(b), want);
    vit_classes_free(want);
    serve_class_set_release(c, b);
    serve_class_set *x = serve_class_cache_find(c, &q1); /* q1 is now used last: q2 goes next */
    serve_class_set_release(c, x);
    serve_class_set *d = serve_class_cache_get(c, &q3, text, &err);
    st = serve_class_cache_stats(c);
    assert_int_equal(st.embedded, 3);
    assert_int_equal(st.cached, 2);
    assert_int_equal(st.evicted, 1);
    assert_null(serve_class_cache_find(c, &q2));
    serve_class_set *e = serve_class_cache_get(c, &q4, text, &err); /* evicts q1, held by a */
    assert_ptr_not_equal(e, d);
    assert_int_equal(serve_class_cache_stats(c).evicted, 2);
    assert_null(serve_class_cache_find(c, &q1));
    want = vit_classes_create(text, animals, 3, NULL, 0, &err);
    assert_same_classes(serve_class_set_classes(a), want); /* still whole */
    vit_classes_free(want);
    serve_class_set_release(c, a);
    serve_class_set_release(c, d);
    serve_class_set_release(c, e);
    const serve_class_query none = {animals, 0, NULL, 0};
    for (int i = 0; i < 2; i++) {
        assert_null(serve_class_cache_get(c, &none, text, &err));
        assert_non_null(strstr(err.msg, "no class names"));
    }
    assert_int_equal(serve_class_cache_stats(c).embedded, 4);
    assert_int_equal(serve_class_cache_stats(c).cached, 2);
    serve_class_cache_free(c);
    vit_text_free(text);
}

typedef struct {
    serve_class_cache *cache;
    const serve_class_query *query;
    vit_text_context *text;
    serve_class_set *got;
} class_getter;

static void *get_classes(void *arg) {
    class_getter *g = arg;
    vit_error err = {0};
    g->got = serve_class_cache_get(g->cache, g->query, g->text, &err);
    return NULL;
}

/* Two threads asking for one set at once (300 names, two templates each: the second asks while
 * the first embeds): it is embedded once, both get it. */
static void test_class_cache_two_threads(void **state) {
    (void)state;
    enum { N = 300 };
    char names[N][24];
    const char *list[N], *templates[] = {"a photo of a {}.", "the {}"};
    for (int i = 0; i < N; i++) {
        snprintf(names[i], sizeof names[i], "thing %d", i);
        list[i] = names[i];
    }
    const serve_class_query q = {list, N, templates, 2};
    serve_class_cache *c = serve_class_cache_create(4);
    class_getter g[2];
    pthread_t threads[2];
    for (int i = 0; i < 2; i++) {
        g[i] = (class_getter){c, &q, clip_text(8), NULL};
        assert_int_equal(pthread_create(&threads[i], NULL, get_classes, &g[i]), 0);
    }
    for (int i = 0; i < 2; i++) pthread_join(threads[i], NULL);
    assert_non_null(g[0].got);
    assert_ptr_equal(g[0].got, g[1].got);
    const serve_class_stats st = serve_class_cache_stats(c);
    assert_int_equal(st.embedded, 1);
    assert_int_equal(st.hits, 1);
    for (int i = 0; i < 2; i++) {
        serve_class_set_release(c, g[i].got);
        vit_text_free(g[i].text);
    }
    serve_class_cache_free(c);
}

/* A joint model's tasks through the batcher, against the library one input at a time: an image's
 * joint embedding, a text's with its token count, and a class set (embedded by a forward thread,
 * then found in the cache). */
static void joint_tasks_match_the_api(int workers) {
    vit_params params = vit_default_params();
    params.max_batch = 4;
    vit_error err = {0};
    vit_context *image = vit_load(CLIP, &params, &err);
    if (!image) fail_msg("%s", err.msg);
    vit_text_context *text = clip_text(4);
    serve_tasks *tasks = serve_tasks_create(image, text, 4, workers, &err);
    assert_non_null(tasks);
    const size_t D = 20;
    assert_int_equal(serve_task_outputs(tasks, SERVE_EMBED_JOINT), D);
    assert_int_equal(serve_task_outputs(tasks, SERVE_EMBED_TEXT), D);
    assert_int_equal(serve_task_outputs(tasks, SERVE_CLASSES), 0);
    const serve_model model = serve_tasks_model(tasks);
    const serve_batcher_options opt = {.max_batch = 4,
                                       .batch_wait_ms = 50,
                                       .max_queue = 16,
                                       .decode_threads = 2,
                                       .workers = workers};
    serve_batcher *b = serve_batcher_create(&model, &opt, &err);
    assert_non_null(b);
    serve_class_cache *cache = serve_class_cache_create(4);
    const char *names[] = {"cat", "dog"}, *texts[] = {"a photo of a cat", "dog", ""};
    serve_class_request req[2] = {{.cache = cache, .query = {names, 2, NULL, 0}},
                                  {.cache = cache, .query = {names, 2, NULL, 0}}};
    serve_job jobs[8];
    serve_text_request text_req[3];
    float out[8][20];
    uint8_t *bytes[3];
    size_t sizes[3];
    for (int i = 0; i < 3; i++) {
        assert_non_null(bytes[i] = read_whole_file(photos[i], &sizes[i]));
        jobs[i] = (serve_job){.task = SERVE_EMBED_JOINT,
                              .data = bytes[i],
                              .size = sizes[i],
                              .out = out[i],
                              .done = count_done};
        text_req[i] = (serve_text_request){.text = texts[i], .size = strlen(texts[i])};
        jobs[3 + i] = (serve_job){
            .task = SERVE_EMBED_TEXT, .data = &text_req[i], .out = out[3 + i], .done = count_done};
    }
    for (int i = 0; i < 2; i++)
        jobs[6 + i] = (serve_job){.task = SERVE_CLASSES, .data = &req[i], .done = count_done};
    assert_int_equal(serve_batcher_submit(b, jobs, 8), SERVE_SUBMITTED);
    serve_batcher_drain(b);
    float *pixels = test_alloc_floats(vit_input_floats(image)), want[20];
    for (int i = 0; i < 3; i++) {
        assert_int_equal(jobs[i].status, SERVE_OK);
        assert_int_equal(vit_preprocess_file(image, photos[i], pixels, &err), 0);
        assert_int_equal(vit_embed(image, pixels, 1, VIT_POOL_JOINT, want, &err), 0);
        assert_close(out[i], want, D, 1e-5);
        const size_t n = strlen(texts[i]);
        assert_int_equal(jobs[3 + i].status, SERVE_OK);
        assert_int_equal(vit_text_embed(text, &texts[i], &n, 1, VIT_POOL_JOINT, want, &err), 0);
        assert_close(out[3 + i], want, D, 1e-5);
        int tokens = 0;
        vit_text_ids(text, 0, &tokens);
        assert_true(tokens >= 2); /* the start and end tokens at least */
        assert_int_equal(text_req[i].tokens, tokens);
    }
    vit_classes *classes = vit_classes_create(text, names, 2, NULL, 0, &err);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(jobs[6 + i].status, SERVE_OK);
        if (!req[i].set) fail_msg("class set %d: %s", i, req[i].err.msg);
        assert_same_classes(serve_class_set_classes(req[i].set), classes);
    }
    assert_ptr_equal(req[0].set, req[1].set);
    assert_int_equal(serve_class_cache_stats(cache).embedded, 1);
    assert_int_equal(serve_class_cache_stats(cache).hits, 1);
    for (int i = 0; i < 2; i++) serve_class_set_release(cache, req[i].set);
    vit_classes_free(classes);
    serve_batcher_free(b);
    serve_tasks_free(tasks);
    serve_class_cache_free(cache);
    for (int i = 0; i < 3; i++) free(bytes[i]);
    free(pixels);
    vit_text_free(text);
    vit_free(image);
}

static void test_joint_tasks_match_the_api(void **state) {
    (void)state;
    joint_tasks_match_the_api(1);
}

static void test_joint_tasks_two_workers(void **state) {
    (void)state;
    joint_tasks_match_the_api(2);
}

/* ---- metrics ---- */

static void test_metrics_text_format(void **state) {
    (void)state;
    serve_metrics *m = serve_metrics_create(8);
    assert_non_null(m);
    serve_metrics_request(m, "/v1/classify", 200, 0.02);
    serve_metrics_request(m, "/v1/classify", 200, 0.2);
    serve_metrics_request(m, "/health", 200, 0.0001);
    serve_metrics_error(m, SERVE_ERR_QUEUE_FULL);
    serve_metrics_inputs(m, "image", 3);
    serve_metrics_batch(m, "classify", 3, 0.04);
    serve_metrics_batch(m, "classify", 8, 0.12);
    serve_metrics_queue_wait(m, 0.003);
    serve_metrics_generated(m, 17);
    serve_metrics_generated(m, 5);
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    const serve_gauges g = {.queued = 2, .in_flight = 1, .connections = 3, .started = 1e9};
    serve_metrics_write(m, &g, out);
    fclose(out);
    static const char *want[] = {
        "# TYPE vit_serve_requests_total counter\n",
        "vit_serve_requests_total{endpoint=\"/v1/classify\",code=\"200\"} 2\n",
        "vit_serve_requests_total{endpoint=\"/health\",code=\"200\"} 1\n",
        "vit_serve_errors_total{kind=\"queue_full\"} 1\n",
        "vit_serve_errors_total{kind=\"bad_input\"} 0\n",
        "vit_serve_inputs_total{kind=\"image\"} 3\n",
        "vit_serve_batches_total{task=\"classify\"} 2\n",
        "# TYPE vit_serve_generated_tokens_total counter\n",
        "\nvit_serve_generated_tokens_total 22\n", /* a family of one series: no labels */
        "# TYPE vit_serve_batch_size histogram\n",
        "vit_serve_batch_size_bucket{le=\"2\"} 0\n",
        "vit_serve_batch_size_bucket{le=\"4\"} 1\n",
        "vit_serve_batch_size_bucket{le=\"8\"} 2\n",
        "vit_serve_batch_size_bucket{le=\"+Inf\"} 2\n",
        "vit_serve_batch_size_sum 11\n",
        "vit_serve_batch_size_count 2\n",
        "vit_serve_request_duration_seconds_bucket{le=\"0.025\"} 2\n",
        "vit_serve_request_duration_seconds_bucket{le=\"0.25\"} 3\n",
        "vit_serve_request_duration_seconds_count 3\n",
        "vit_serve_queue_wait_seconds_bucket{le=\"0.005\"} 1\n",
        "vit_serve_forward_seconds_count 2\n",
        "vit_serve_queued_inputs 2\n",
        "vit_serve_requests_in_flight 1\n",
        "vit_serve_connections 3\n",
        "process_start_time_seconds 1000000000\n",
        "# TYPE process_resident_memory_bytes gauge\n",
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        if (!strstr(text, want[i])) fail_msg("no line %s in:\n%s", want[i], text);
    free(text);
    serve_metrics_free(m);
}

/* ---- image to text ---- */

#define VED TEST_DATA "/ved-trocr-vit" /* a random micro TrOCR */

typedef struct {
    pthread_mutex_t lock;
    int batches, sizes[8], tasks[8];
} batch_log;

static void log_batch(void *user, int task, int size, double seconds) {
    (void)seconds;
    batch_log *l = user;
    pthread_mutex_lock(&l->lock);
    if (l->batches < 8) l->sizes[l->batches] = size, l->tasks[l->batches] = task;
    l->batches++;
    pthread_mutex_unlock(&l->lock);
}

/* got is what vit_generate_file gives for the image alone with the options. */
static void assert_generated_alone(const vit_generation *got, const char *image,
                                   const vit_gen_options *options) {
    vit_error err = {0};
    vit_gen_context *alone = vit_gen_load(VED, NULL, &err);
    if (!alone) fail_msg("%s", err.msg);
    vit_generation want;
    assert_int_equal(vit_generate_file(alone, image, options, &want, &err), 0);
    assert_string_equal(got->text, want.text);
    assert_int_equal(got->num_ids, want.num_ids);
    for (int t = 0; t < want.num_ids; t++) assert_int_equal(got->ids[t], want.ids[t]);
    assert_true(fabs(got->score - want.score) <= 1e-4);
    vit_generation_free(&want, 1);
    vit_gen_free(alone);
}

/* Three images, each asked with two option sets, all submitted at once to two workers (the second
 * on a vit_gen_share): two forward passes of three images (one vit_generate each), and each
 * image's text, ids and score those of vit_generate_file alone with its options (score to 1e-4:
 * a batch of three may round the logits otherwise). */
static void test_generate_tasks_match_the_api(void **state) {
    (void)state;
    static const char *const images[] = {GOLDEN_IMAGES "/rgb_64x48.png",
                                         GOLDEN_IMAGES "/tall_40x400.jpg",
                                         GOLDEN_IMAGES "/palette_120x90.png"};
    vit_gen_params params = vit_gen_default_params();
    params.image.max_batch = 4;
    params.max_beams = 4;
    vit_error err = {0};
    vit_gen_context *gen = vit_gen_load(VED, &params, &err);
    if (!gen) fail_msg("%s", err.msg);
    serve_tasks *tasks = serve_tasks_create_gen(gen, NULL, 4, 2, &err);
    if (!tasks) fail_msg("%s", err.msg);
    assert_int_equal(serve_task_outputs(tasks, SERVE_GENERATE), 0);
    assert_string_equal(serve_task_name(SERVE_GENERATE), "generate");
    batch_log log = {.batches = 0};
    pthread_mutex_init(&log.lock, NULL);
    const serve_model model = serve_tasks_model(tasks);
    const serve_batcher_options opt = {.max_batch = 4,
                                       .batch_wait_ms = 5000,
                                       .max_queue = 16,
                                       .decode_threads = 2,
                                       .workers = 2,
                                       .on_batch = log_batch,
                                       .user = &log};
    serve_batcher *b = serve_batcher_create(&model, &opt, &err);
    assert_non_null(b);
    vit_gen_options options[2] = {vit_gen_default_options(gen), vit_gen_default_options(gen)};
    options[1].num_beams = 3, options[1].max_new_tokens = 8, options[1].no_repeat_ngram_size = 2;
    serve_gen_request req[6];
    serve_job jobs[6];
    uint8_t *bytes[3];
    for (int i = 0; i < 6; i++) {
        size_t size = 0;
        if (i < 3) assert_non_null(bytes[i] = read_whole_file(images[i], &size));
        req[i] = (serve_gen_request){.image = bytes[i % 3],
                                     .size = i < 3 ? size : req[i - 3].size,
                                     .options = options[i % 2]};
        jobs[i] = (serve_job){.task = SERVE_GENERATE, .data = &req[i], .done = count_done};
    }
    assert_int_equal(serve_batcher_submit(b, jobs, 6), SERVE_SUBMITTED);
    serve_batcher_drain(b);
    assert_int_equal(log.batches, 2);
    assert_int_equal(log.sizes[0], 3);
    assert_int_equal(log.sizes[1], 3);
    for (int i = 0; i < 6; i++) {
        assert_int_equal(jobs[i].status, SERVE_OK);
        assert_generated_alone(&req[i].result, images[i % 3], &options[i % 2]);
        vit_generation_free(&req[i].result, 1);
    }
    serve_batcher_free(b);
    serve_tasks_free(tasks);
    for (int i = 0; i < 3; i++) free(bytes[i]);
    pthread_mutex_destroy(&log.lock);
    vit_gen_free(gen);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_concurrent_jobs_share_a_batch),
        cmocka_unit_test(test_max_batch_and_tasks),
        cmocka_unit_test(test_batches_by_length),
        cmocka_unit_test(test_same_batch_keeps_jobs_apart),
        cmocka_unit_test(test_queue_full),
        cmocka_unit_test(test_room_once_answered),
        cmocka_unit_test(test_failures),
        cmocka_unit_test(test_expiry),
        cmocka_unit_test(test_two_workers),
        cmocka_unit_test(test_image_tasks_match_the_api),
        cmocka_unit_test(test_image_tasks_two_workers),
        cmocka_unit_test(test_text_task_matches_the_api),
        cmocka_unit_test(test_text_task_two_workers),
        cmocka_unit_test(test_text_batch_runs_by_length),
        cmocka_unit_test(test_siglip_batch_is_one_pass),
        cmocka_unit_test(test_class_cache),
        cmocka_unit_test(test_class_cache_two_threads),
        cmocka_unit_test(test_joint_tasks_match_the_api),
        cmocka_unit_test(test_joint_tasks_two_workers),
        cmocka_unit_test(test_generate_tasks_match_the_api),
        cmocka_unit_test(test_metrics_text_format),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
