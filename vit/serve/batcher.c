#include "vit/serve/batcher.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vit/base/clock.h"
#include "vit/base/threads.h"

/* Jobs move from `decode` (submitted) through a decode thread to `ready` (decoded), and from there
 * in batches through a worker's forward thread; a job that fails leaves at the step where it
 * failed. The forward threads own the cores (each its model state's OpenMP threads, a team of
 * its own): the decode threads are threads_become_decoder's, as vit/data/pipeline.c's are. */

typedef struct {
    serve_job *head, *tail;
    int count;
} job_list;

struct serve_batcher {
    serve_model model;
    serve_batcher_options opt;
    pthread_mutex_t lock; /* guards everything below */
    pthread_cond_t to_decode, to_forward, idle;
    job_list decode, ready;
    int decoding;           /* jobs a decode thread holds */
    int pending;            /* submitted and not yet done */
    int queued;             /* submitted and not yet answered: what max_queue bounds. It drops
                             * before a job's done call, pending after it, so a client that gets
                             * its answer from done and submits again at once finds the room */
    int closed;             /* draining: submissions refused */
    int quit;               /* the threads are to end */
    struct worker *workers; /* [opt.workers] */
    pthread_t *decode_threads;
    int started_decoders, started_workers;
};

/* A forward thread and its batch. */
typedef struct worker {
    serve_batcher *b;
    int index;
    serve_job **batch; /* [max_batch] */
    pthread_t thread;
} worker;

static void list_push(job_list *l, serve_job *job) {
    job->next = NULL;
    if (l->tail)
        l->tail->next = job;
    else
        l->head = job;
    l->tail = job;
    l->count++;
}

static serve_job *list_pop(job_list *l) {
    serve_job *job = l->head;
    if (!job) return NULL;
    l->head = job->next;
    if (!l->head) l->tail = NULL;
    l->count--;
    return job;
}

/* Whether job may run in first's forward pass: the same task, and the model agrees. */
static int batches_with(const serve_batcher *b, const serve_job *first, const serve_job *job) {
    if (job->task != first->task) return 0;
    return job == first || !b->model.same_batch || b->model.same_batch(b->model.self, first, job);
}

static int count_batch(const serve_batcher *b, const job_list *l, const serve_job *first);

static int chosen(serve_job *const *out, int n, const serve_job *job) {
    for (int i = 0; i < n; i++)
        if (out[i] == job) return 1;
    return 0;
}

/* More jobs may share first's batch than it holds: first and the max - 1 of the nearest lengths
 * (of equal distance, the older), taken out of l. The oldest job always goes, so none waits
 * forever for neighbours of its length. */
static int take_nearest(const serve_batcher *b, job_list *l, serve_job *first, serve_job **out,
                        int max) {
    int n = 0;
    out[n++] = first;
    while (n < max) {
        serve_job *best = NULL;
        int best_d = 0;
        for (serve_job *j = l->head; j; j = j->next) {
            if (!batches_with(b, first, j) || chosen(out, n, j)) continue;
            const int d = abs(j->length - first->length);
            if (!best || d < best_d) best = j, best_d = d;
        }
        out[n++] = best;
    }
    serve_job **link = &l->head;
    while (*link)
        if (chosen(out, n, *link))
            *link = (*link)->next, l->count--;
        else
            link = &(*link)->next;
    l->tail = NULL;
    for (serve_job *j = l->head; j; j = j->next) l->tail = j;
    return n;
}

/* Takes up to max jobs that may share first's batch (first among them) out of l, oldest first
 * (or by length, take_nearest, when there are more of them than max), into out. */
static int list_take_batch(const serve_batcher *b, job_list *l, serve_job *first, serve_job **out,
                           int max) {
    if (first->length > 0 && count_batch(b, l, first) > max)
        return take_nearest(b, l, first, out, max);
    int n = 0;
    serve_job **link = &l->head;
    while (*link && n < max) {
        serve_job *job = *link;
        if (batches_with(b, first, job)) {
            *link = job->next;
            out[n++] = job;
            l->count--;
        } else {
            link = &job->next;
        }
    }
    l->tail = NULL;
    for (serve_job *j = l->head; j; j = j->next) l->tail = j;
    return n;
}

static int count_batch(const serve_batcher *b, const job_list *l, const serve_job *first) {
    int n = 0;
    for (const serve_job *j = l->head; j; j = j->next) n += batches_with(b, first, j);
    return n;
}

/* Hands a job back (without the lock held): its done call may free it. */
static void finish(serve_batcher *b, serve_job *job, serve_status status) {
    free(job->input);
    job->input = NULL;
    job->status = status;
    pthread_mutex_lock(&b->lock);
    b->queued--;
    pthread_mutex_unlock(&b->lock);
    job->done(job);
    pthread_mutex_lock(&b->lock);
    if (--b->pending == 0) pthread_cond_broadcast(&b->idle);
    pthread_mutex_unlock(&b->lock);
}

/* ---- decode threads ---- */

static void *decode_main(void *arg) {
    serve_batcher *b = arg;
    threads_become_decoder("vit-decode");
    pthread_mutex_lock(&b->lock);
    for (;;) {
        while (!b->decode.head && !b->quit) pthread_cond_wait(&b->to_decode, &b->lock);
        if (b->quit) break;
        serve_job *job = list_pop(&b->decode);
        b->decoding++;
        pthread_mutex_unlock(&b->lock);
        const int rc = b->model.decode(b->model.self, job, &job->err);
        pthread_mutex_lock(&b->lock);
        b->decoding--;
        if (rc == 0) {
            job->ready_at = clock_seconds();
            list_push(&b->ready, job);
        }
        pthread_cond_signal(&b->to_forward); /* a job ready, or one fewer being decoded */
        if (rc != 0) {
            pthread_mutex_unlock(&b->lock);
            finish(b, job, rc == -2 ? SERVE_TOO_LONG : SERVE_BAD_INPUT);
            pthread_mutex_lock(&b->lock);
        }
    }
    pthread_mutex_unlock(&b->lock);
    return NULL;
}

/* ---- the forward threads ---- */

static struct timespec deadline_after(double seconds_from_now) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    const double t = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9 + seconds_from_now;
    ts.tv_sec = (time_t)t;
    ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
    return ts;
}

/* The batch of first, ready until `until`, goes now. */
static int batch_due(serve_batcher *b, const serve_job *first, double until) {
    const int coming = b->decode.count + b->decoding > 0;
    return count_batch(b, &b->ready, first) >= b->opt.max_batch || !coming ||
           until - clock_seconds() <= 0 || b->quit;
}

/* With the lock held: waits for a first ready job, then for its batch to fill while others are
 * still being decoded, at most batch_wait_ms; takes the batch and wakes another worker for what
 * is left. Returns its size (0: quit). When another worker takes the first job meanwhile, it
 * starts over. */
static int await_batch(serve_batcher *b, serve_job **batch) {
    for (;;) {
        while (!b->ready.head && !b->quit) pthread_cond_wait(&b->to_forward, &b->lock);
        if (!b->ready.head) return 0;
        serve_job *first = b->ready.head;
        const double until = first->ready_at + b->opt.batch_wait_ms * 1e-3;
        while (b->ready.head == first && !batch_due(b, first, until)) {
            const struct timespec ts = deadline_after(until - clock_seconds());
            pthread_cond_timedwait(&b->to_forward, &b->lock, &ts);
        }
        if (b->ready.head != first) continue;
        const int n = list_take_batch(b, &b->ready, first, batch, b->opt.max_batch);
        if (b->ready.head) pthread_cond_signal(&b->to_forward);
        return n;
    }
}

/* Fails the jobs that waited too long; returns how many are left, packed at the front. */
static int drop_expired(serve_batcher *b, serve_job **batch, int n, double now) {
    int kept = 0;
    for (int i = 0; i < n; i++) {
        serve_job *job = batch[i];
        job->wait_seconds = now - job->submitted_at;
        if (b->opt.timeout_ms > 0 && job->wait_seconds * 1e3 > b->opt.timeout_ms) {
            vit_fail(&job->err, "waited %.1f s in the queue (timeout %.1f s)", job->wait_seconds,
                     b->opt.timeout_ms * 1e-3);
            finish(b, job, SERVE_EXPIRED);
        } else {
            batch[kept++] = job;
        }
    }
    return kept;
}

static void run_batch(serve_batcher *b, int worker, serve_job **batch, int n) {
    const double start = clock_seconds();
    n = drop_expired(b, batch, n, start);
    if (n == 0) return;
    vit_error err = {0};
    const int rc = b->model.forward(b->model.self, worker, batch, n, &err);
    if (b->opt.on_batch) b->opt.on_batch(b->opt.user, batch[0]->task, n, clock_seconds() - start);
    for (int i = 0; i < n; i++) {
        batch[i]->batch_size = n;
        if (rc != 0) batch[i]->err = err;
        finish(b, batch[i], rc == 0 ? SERVE_OK : SERVE_FAILED);
    }
}

static void *forward_main(void *arg) {
    worker *w = arg;
    serve_batcher *b = w->b;
    pthread_setname_np(pthread_self(), "vit-forward");
    pthread_mutex_lock(&b->lock);
    for (int n; (n = await_batch(b, w->batch)) > 0;) {
        pthread_mutex_unlock(&b->lock);
        run_batch(b, w->index, w->batch, n);
        pthread_mutex_lock(&b->lock);
    }
    pthread_mutex_unlock(&b->lock);
    return NULL;
}

/* ---- the public side ---- */

/* The workers' forward threads, each with its batch; then the decode threads. */
static int start_threads(serve_batcher *b, vit_error *err) {
    const int n = b->opt.workers;
    b->decode_threads = calloc((size_t)b->opt.decode_threads, sizeof(pthread_t));
    b->workers = calloc((size_t)n, sizeof *b->workers);
    if (!b->decode_threads || !b->workers) return vit_fail(err, "out of memory");
    for (int i = 0; i < n; i++) {
        b->workers[i] = (worker){.b = b, .index = i};
        b->workers[i].batch = malloc(sizeof(serve_job *) * (size_t)b->opt.max_batch);
        if (!b->workers[i].batch) return vit_fail(err, "out of memory");
    }
    for (; b->started_workers < n; b->started_workers++)
        if (pthread_create(&b->workers[b->started_workers].thread, NULL, forward_main,
                           &b->workers[b->started_workers]) != 0)
            return vit_fail(err, "cannot start a forward thread: %s", strerror(errno));
    while (b->started_decoders < b->opt.decode_threads &&
           pthread_create(&b->decode_threads[b->started_decoders], NULL, decode_main, b) == 0)
        b->started_decoders++;
    return b->started_decoders > 0 ? 0 : vit_fail(err, "cannot start a decode thread");
}

serve_batcher *serve_batcher_create(const serve_model *model, const serve_batcher_options *opt,
                                    vit_error *err) {
    serve_batcher *b = calloc(1, sizeof *b);
    if (!b) return vit_fail(err, "out of memory"), NULL;
    b->model = *model;
    b->opt = *opt;
    if (b->opt.max_batch < 1) b->opt.max_batch = 1;
    if (b->opt.max_queue < 1) b->opt.max_queue = 1;
    if (b->opt.decode_threads < 1) b->opt.decode_threads = 1;
    if (b->opt.workers < 1) b->opt.workers = 1;
    if (b->opt.batch_wait_ms < 0) b->opt.batch_wait_ms = 0;
    pthread_mutex_init(&b->lock, NULL);
    pthread_condattr_t monotonic;
    pthread_condattr_init(&monotonic);
    pthread_condattr_setclock(&monotonic, CLOCK_MONOTONIC);
    pthread_cond_init(&b->to_decode, NULL);
    pthread_cond_init(&b->to_forward, &monotonic);
    pthread_cond_init(&b->idle, NULL);
    pthread_condattr_destroy(&monotonic);
    if (start_threads(b, err) != 0) {
        serve_batcher_free(b);
        return NULL;
    }
    return b;
}

serve_submit_result serve_batcher_submit(serve_batcher *b, serve_job *jobs, int n) {
    if (n > b->opt.max_queue) return SERVE_TOO_MANY;
    const double now = clock_seconds();
    pthread_mutex_lock(&b->lock);
    serve_submit_result result = SERVE_SUBMITTED;
    if (b->closed)
        result = SERVE_CLOSED;
    else if (b->queued + n > b->opt.max_queue)
        result = SERVE_QUEUE_FULL;
    for (int i = 0; result == SERVE_SUBMITTED && i < n; i++) {
        jobs[i].submitted_at = now;
        jobs[i].status = SERVE_OK;
        jobs[i].err.msg[0] = 0;
        jobs[i].wait_seconds = 0;
        jobs[i].batch_size = 0;
        jobs[i].input = NULL;
        list_push(&b->decode, &jobs[i]);
    }
    if (result == SERVE_SUBMITTED) {
        b->pending += n;
        b->queued += n;
        pthread_cond_broadcast(&b->to_decode);
    }
    pthread_mutex_unlock(&b->lock);
    return result;
}

int serve_batcher_pending(serve_batcher *b) {
    pthread_mutex_lock(&b->lock);
    const int n = b->queued;
    pthread_mutex_unlock(&b->lock);
    return n;
}

int serve_batcher_ready(serve_batcher *b) {
    pthread_mutex_lock(&b->lock);
    const int n = b->ready.count;
    pthread_mutex_unlock(&b->lock);
    return n;
}

void serve_batcher_drain(serve_batcher *b) {
    pthread_mutex_lock(&b->lock);
    b->closed = 1;
    while (b->pending > 0) pthread_cond_wait(&b->idle, &b->lock);
    pthread_mutex_unlock(&b->lock);
}

void serve_batcher_free(serve_batcher *b) {
    if (!b) return;
    serve_batcher_drain(b); /* nothing pending unless both kinds of thread started */
    pthread_mutex_lock(&b->lock);
    b->quit = 1;
    pthread_cond_broadcast(&b->to_decode);
    pthread_cond_broadcast(&b->to_forward);
    pthread_mutex_unlock(&b->lock);
    for (int i = 0; i < b->started_workers; i++) pthread_join(b->workers[i].thread, NULL);
    for (int i = 0; i < b->started_decoders; i++) pthread_join(b->decode_threads[i], NULL);
    free(b->decode_threads);
    for (int i = 0; b->workers && i < b->opt.workers; i++) free(b->workers[i].batch);
    free(b->workers);
    pthread_mutex_destroy(&b->lock);
    pthread_cond_destroy(&b->to_decode);
    pthread_cond_destroy(&b->to_forward);
    pthread_cond_destroy(&b->idle);
    free(b);
}
