#ifndef VIT_SERVE_BATCHER_H
#define VIT_SERVE_BATCHER_H

/* A dynamic batcher: jobs submitted from any thread (an image each, or a text) are decoded in
 * parallel by decode threads, then run together, up to max_batch at a time, in one forward pass on
 * one of the batcher's forward threads (workers), each of which alone touches its own model state.
 * Nothing here knows HTTP: `vit serve` is a thin layer over it, and a program can run it directly:
 *
 *   serve_batcher *b = serve_batcher_create(&model, &(serve_batcher_options){.max_batch = 8,
 *                                           .batch_wait_ms = 10, .max_queue = 64}, &err);
 *   serve_job job = {.task = TASK, .data = bytes, .size = n, .out = logits, .done = on_done};
 *   if (serve_batcher_submit(b, &job, 1) != SERVE_SUBMITTED) ... // full: try later
 *   ...on_done(&job) runs once, on a batcher thread, when the job has its answer...
 *   serve_batcher_free(b);  // finishes every submitted job first
 *
 * A batch goes as soon as it is full, or when no other job is being decoded (nothing more is
 * coming soon: waiting would only add latency), or once its first job has waited batch_wait_ms.
 * With more jobs ready than a batch holds, the oldest takes those nearest its length along.
 * The queue is bounded: max_queue jobs between submission and their done call, beyond which a
 * submission is refused whole rather than the queue growing. */

#include <stddef.h>

#include "vit/base/error.h"

typedef enum {
    SERVE_OK,        /* job->out holds the answer */
    SERVE_BAD_INPUT, /* the model could not decode job->data (err says why) */
    SERVE_EXPIRED,   /* waited more than timeout_ms before its batch started */
    SERVE_FAILED,    /* the forward pass failed (err says why) */
    SERVE_TOO_LONG   /* longer than the model takes, and not to be cut (err says how long) */
} serve_status;

typedef struct serve_job serve_job;
struct serve_job {
    /* Set by the submitter, untouched by the batcher until done is called. */
    int task;         /* the model's kind of work (jobs of one task share a batch, as the
                       * model's same_batch allows) */
    const void *data; /* the input (an encoded image, a text), alive until done */
    size_t size;
    float *out;                   /* where the model writes the job's answer */
    void (*done)(serve_job *job); /* once, on a batcher thread; may free the job */
    void *user;
    /* Set before done is called. */
    serve_status status;
    vit_error err;
    double wait_seconds; /* from submission to the start of its batch */
    int batch_size;      /* jobs in its forward pass (0 if it never reached one) */
    /* The model's: what decode produced for forward (freed by the batcher with free()), and
     * the job's length in the forward pass (a text's tokens; 0: not told). When more jobs are
     * ready than a batch holds, the oldest goes with those of the nearest lengths, so that a
     * batch padded to its longest pads little. */
    void *input;
    int length;
    /* The batcher's. */
    double submitted_at, ready_at;
    serve_job *next;
};

/* What the batcher runs. */
typedef struct {
    void *self;
    /* job->data -> job->input (and job->length), on a decode thread, concurrently with
     * anything. -1 with err: the job fails as SERVE_BAD_INPUT; -2: as SERVE_TOO_LONG. */
    int (*decode)(void *self, serve_job *job, vit_error *err);
    /* jobs[0..n) of one task (n <= max_batch) in one pass, each answer into its job->out; on the
     * forward thread of worker (0..workers-1), which alone calls it with that number: forward
     * passes of different workers run at the same time. -1 with err: every one of them fails as
     * SERVE_FAILED. */
    int (*forward)(void *self, int worker, serve_job *const *jobs, int n, vit_error *err);
    /* Whether two decoded jobs of one task may share a forward pass (generation's: only with the
     * same options); NULL: any two may. Called with the batcher's lock held: it only compares. */
    int (*same_batch)(void *self, const serve_job *a, const serve_job *b);
} serve_model;

typedef struct {
    int max_batch;      /* jobs per forward pass (>= 1) */
    int batch_wait_ms;  /* longest a batch's first job waits for others being decoded */
    int max_queue;      /* jobs submitted and not yet done, at most (>= 1) */
    int decode_threads; /* threads decoding beside the forward pass (>= 1; they run at nice 19) */
    int timeout_ms;     /* a job whose batch has not started after this expires; 0: never */
    int workers;        /* forward threads, each taking batches as above (>= 1) */
    /* Called on a forward thread after each forward pass (may be NULL; workers > 1: on several
     * threads at once). */
    void (*on_batch)(void *user, int task, int size, double forward_seconds);
    void *user;
} serve_batcher_options;

typedef struct serve_batcher serve_batcher;

serve_batcher *serve_batcher_create(const serve_model *model, const serve_batcher_options *opt,
                                    vit_error *err);

typedef enum {
    SERVE_SUBMITTED,  /* every job will have its done call */
    SERVE_QUEUE_FULL, /* no room for them now (none was taken) */
    SERVE_TOO_MANY,   /* more jobs than the queue can ever hold */
    SERVE_CLOSED      /* the batcher is draining */
} serve_submit_result;

/* Submits jobs[0..n) all together or none of them. */
serve_submit_result serve_batcher_submit(serve_batcher *b, serve_job *jobs, int n);

/* Jobs submitted and not yet done; and of them, those decoded and waiting for a batch. */
int serve_batcher_pending(serve_batcher *b);
int serve_batcher_ready(serve_batcher *b);
/* Refuses new jobs from now on and waits until every submitted job is done. */
void serve_batcher_drain(serve_batcher *b);
/* Drains, then stops the threads. */
void serve_batcher_free(serve_batcher *b);

#endif
