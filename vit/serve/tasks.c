#include "vit/serve/tasks.h"

#include <stdlib.h>
#include <string.h>

struct serve_tasks {
    vit_context *image;
    vit_text_context *text;
    int max_batch;
    float *pixels;  /* [max_batch, C, H, W]: the batch's decoded images side by side */
    float *outputs; /* [max_batch, the widest answer] */
    const char **texts;
    size_t *lengths;
};

size_t serve_task_outputs(const serve_tasks *t, serve_task task) {
    switch (task) {
    case SERVE_CLASSIFY:
        return t->image ? (size_t)vit_num_labels(t->image) : 0;
    case SERVE_EMBED_CLS:
    case SERVE_EMBED_MEAN:
        return t->image ? (size_t)vit_hidden_size(t->image) : 0;
    case SERVE_TEXT:
        return t->text ? (size_t)vit_text_num_labels(t->text) : 0;
    }
    return 0;
}

static size_t widest_output(const serve_tasks *t) {
    size_t w = 0;
    for (int task = SERVE_CLASSIFY; task <= SERVE_TEXT; task++) {
        const size_t n = serve_task_outputs(t, (serve_task)task);
        if (n > w) w = n;
    }
    return w;
}

/* Images are preprocessed on the decode threads; texts are tokenized in the forward call. */
static int decode(void *self, serve_job *job, vit_error *err) {
    serve_tasks *t = self;
    if (job->task == SERVE_TEXT) return 0;
    const size_t floats = vit_input_floats(t->image);
    if (!(job->input = malloc(sizeof(float) * floats))) return vit_fail(err, "out of memory");
    return vit_preprocess_memory(t->image, job->data, job->size, job->input, err);
}

static int forward_images(serve_tasks *t, serve_job *const *jobs, int n, vit_error *err) {
    const size_t floats = vit_input_floats(t->image);
    for (int i = 0; i < n; i++)
        memcpy(t->pixels + (size_t)i * floats, jobs[i]->input, sizeof(float) * floats);
    switch ((serve_task)jobs[0]->task) {
    case SERVE_CLASSIFY:
        return vit_forward(t->image, t->pixels, n, t->outputs, err);
    case SERVE_EMBED_CLS:
        return vit_embed(t->image, t->pixels, n, VIT_POOL_CLS, t->outputs, err);
    default:
        return vit_embed(t->image, t->pixels, n, VIT_POOL_MEAN, t->outputs, err);
    }
}

static int forward_texts(serve_tasks *t, serve_job *const *jobs, int n, vit_error *err) {
    for (int i = 0; i < n; i++) {
        t->texts[i] = jobs[i]->data;
        t->lengths[i] = jobs[i]->size;
    }
    return vit_text_forward(t->text, t->texts, t->lengths, n, t->outputs, NULL, err);
}

static int forward(void *self, serve_job *const *jobs, int n, vit_error *err) {
    serve_tasks *t = self;
    const serve_task task = (serve_task)jobs[0]->task;
    const size_t width = serve_task_outputs(t, task);
    if (width == 0) return vit_fail(err, "no model loaded for task %d", (int)task);
    const int rc =
        task == SERVE_TEXT ? forward_texts(t, jobs, n, err) : forward_images(t, jobs, n, err);
    for (int i = 0; rc == 0 && i < n; i++)
        memcpy(jobs[i]->out, t->outputs + (size_t)i * width, sizeof(float) * width);
    return rc;
}

serve_tasks *serve_tasks_create(vit_context *image, vit_text_context *text, int max_batch,
                                vit_error *err) {
    serve_tasks *t = calloc(1, sizeof *t);
    if (!t) return vit_fail(err, "out of memory"), NULL;
    *t = (serve_tasks){.image = image, .text = text, .max_batch = max_batch < 1 ? 1 : max_batch};
    const size_t B = (size_t)t->max_batch;
    t->outputs = malloc(sizeof(float) * B * widest_output(t));
    t->pixels = image ? malloc(sizeof(float) * B * vit_input_floats(image)) : NULL;
    t->texts = malloc(sizeof *t->texts * B);
    t->lengths = malloc(sizeof *t->lengths * B);
    if ((!image && !text) || !t->outputs || (image && !t->pixels) || !t->texts || !t->lengths) {
        vit_fail(err, image || text ? "out of memory" : "no model to serve");
        serve_tasks_free(t);
        return NULL;
    }
    return t;
}

void serve_tasks_free(serve_tasks *t) {
    if (!t) return;
    free(t->pixels);
    free(t->outputs);
    free(t->texts);
    free(t->lengths);
    free(t);
}

serve_model serve_tasks_model(serve_tasks *t) {
    return (serve_model){.self = t, .decode = decode, .forward = forward};
}
