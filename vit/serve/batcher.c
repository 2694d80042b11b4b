#include "vit/serve/batcher.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "vit/base/clock.h"

/* Jobs move from `decode` (submitted) through a decode thread to `ready` (decoded), and from there
 * in batches through the forward thread; a job that fails leaves at the step where it failed.
 * The forward thread owns the cores (the model's OpenMP threads): the decode threads run at nice
 * 19, on the time the forward pass leaves idle, as vit/data/pipeline.c's do. They are plain
 * threads, not OpenMP: an OpenMP region started off the forward thread would make libgomp slow
 * down the forward pass's own team. */

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
    int decoding;      /* jobs a decode thread holds */
    int pending;       /* submitted and not yet done */
    int closed;        /* draining: submissions refused */
    int quit;          /* the threads are to end */
    serve_job **batch; /* the forward thread's [max_batch] */
    pthread_t forward_thread, *decode_threads;
    int started_decoders, forward_started;
};

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

/* Takes up to max jobs of the given task out of l, oldest first, into out. */
static int list_take_task(job_list *l, int task, serve_job **out, int max) {
    int n = 0;
    serve_job **link = &l->head;
    while (*link && n < max) {
        serve_job *job = *link;
        if (job->task == task) {
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

static int count_task(const job_list *l, int task) {
    int n = 0;
    for (const serve_job *j = l->head; j; j = j->next) n += j->task == task;
    return n;
}

/* Hands a job back (without the lock held): its done call may free it. */
static void finish(serve_batcher *b, serve_job *job, serve_status status) {
    free(job->input);
    job->input = NULL;
    job->status = status;
    job->done(job);
    pthread_mutex_lock(&b->lock);
    if (--b->pending == 0) pthread_cond_broadcast(&b->idle);
    pthread_mutex_unlock(&b->lock);
}

/* ---- decode threads ---- */

static void *decode_main(void *arg) {
    serve_batcher *b = arg;
    pthread_setname_np(pthread_self(), "vit-decode");    /* as top -H and debuggers show it */
    (void)setpriority(PRIO_PROCESS, (id_t)gettid(), 19); /* per thread on Linux */
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
            finish(b, job, SERVE_BAD_INPUT);
            pthread_mutex_lock(&b->lock);
        }
    }
    pthread_mutex_unlock(&b->lock);
    return NULL;
}

/* ---- the forward thread ---- */

static struct timespec deadline_after(double seconds_from_now) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    const double t = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9 + seconds_from_now;
    ts.tv_sec = (time_t)t;
    ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
    return ts;
}

/* With the lock held: waits for a first ready job, then for its batch to fill while others are
 * still being decoded, at most batch_wait_ms; takes the batch. Returns its size (0: quit). */
static int await_batch(serve_batcher *b, serve_job **batch) {
    while (!b->ready.head && !b->quit) pthread_cond_wait(&b->to_forward, &b->lock);
    if (!b->ready.head) return 0;
    const int task = b->ready.head->task;
    const double until = b->ready.head->ready_at + b->opt.batch_wait_ms * 1e-3;
    for (;;) {
        const double left = until - clock_seconds();
        const int coming = b->decode.count + b->decoding > 0;
        if (count_task(&b->ready, task) >= b->opt.max_batch || !coming || left <= 0 || b->quit)
            break;
        const struct timespec ts = deadline_after(left);
        pthread_cond_timedwait(&b->to_forward, &b->lock, &ts);
    }
    return list_take_task(&b->ready, task, batch, b->opt.max_batch);
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

static void run_batch(serve_batcher *b, serve_job **batch, int n) {
    const double start = clock_seconds();
    n = drop_expired(b, batch, n, start);
    if (n == 0) return;
    vit_error err = {0};
    const int rc = b->model.forward(b->model.self, batch, n, &err);
    if (b->opt.on_batch) b->opt.on_batch(b->opt.user, batch[0]->task, n, clock_seconds() - start);
    for (int i = 0; i < n; i++) {
        batch[i]->batch_size = n;
        if (rc != 0) batch[i]->err = err;
        finish(b, batch[i], rc == 0 ? SERVE_OK : SERVE_FAILED);
    }
}

static void *forward_main(void *arg) {
    serve_batcher *b = arg;
    pthread_setname_np(pthread_self(), "vit-forward");
    pthread_mutex_lock(&b->lock);
    for (int n; (n = await_batch(b, b->batch)) > 0;) {
        pthread_mutex_unlock(&b->lock);
        run_batch(b, b->batch, n);
        pthread_mutex_lock(&b->lock);
    }
    pthread_mutex_unlock(&b->lock);
    return NULL;
}

/* ---- the public side ---- */

static int start_threads(serve_batcher *b, vit_error *err) {
    b->decode_threads = calloc((size_t)b->opt.decode_threads, sizeof(pthread_t));
    b->batch = malloc(sizeof *b->batch * (size_t)b->opt.max_batch);
    if (!b->decode_threads || !b->batch) return vit_fail(err, "out of memory");
    if (pthread_create(&b->forward_thread, NULL, forward_main, b) != 0)
        return vit_fail(err, "cannot start the forward thread: %s", strerror(errno));
    b->forward_started = 1;
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
    else if (b->pending + n > b->opt.max_queue)
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
        pthread_cond_broadcast(&b->to_decode);
    }
    pthread_mutex_unlock(&b->lock);
    return result;
}

int serve_batcher_pending(serve_batcher *b) {
    pthread_mutex_lock(&b->lock);
    const int n = b->pending;
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
    if (b->forward_started) pthread_join(b->forward_thread, NULL);
    for (int i = 0; i < b->started_decoders; i++) pthread_join(b->decode_threads[i], NULL);
    free(b->decode_threads);
    free(b->batch);
    pthread_mutex_destroy(&b->lock);
    pthread_cond_destroy(&b->to_decode);
    pthread_cond_destroy(&b->to_forward);
    pthread_cond_destroy(&b->idle);
    free(b);
}
