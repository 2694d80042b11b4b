/* One training step, the same for images and text: the batch, the forward pass keeping its
 * activations, softmax cross-entropy, the backward pass into the gradient block, clipping and the
 * AdamW update. The task (images or text) supplies the batch and the model's two passes. */
#include <math.h>
#include <string.h>

#include "vit/base/clock.h"
#include "vit/base/dist.h"
#include "vit/core/ops.h"
#include "vit/train/trainer.h"

static int count_correct(const float *logits, const int *labels, int B, int L) {
    int correct = 0;
    for (int b = 0; b < B; b++) {
        const float *z = logits + (size_t)b * L;
        int best = 0;
        for (int j = 1; j < L; j++)
            if (z[j] > z[best]) best = j;
        correct += best == labels[b];
    }
    return correct;
}

/* Gradients of the batch idx[0..B) in t->grads: of this process's part of it, scaled so that the
 * parts' sum (dist_sum_floats) is the whole batch's mean gradient. *loss and *correct: the
 * part's mean loss and top-1 hits. */
static int forward_backward(trainer *t, const int *idx, double *loss, double *correct,
                            vit_error *err) {
    const int B = t->B, L = t->num_classes, first = t->part_first, n = t->part_n;
    const double start = clock_seconds();
    if (t->task->load_batch(t, idx, B, 1, err) != 0) return -1; /* this process's part of it */
    t->batch_seconds += clock_seconds() - start;
    const forward_mode mode = {.train = 1,
                               .freeze_encoder = t->o.freeze_encoder,
                               .dropout = t->o.dropout,
                               .attention_dropout = t->o.attention_dropout,
                               .classifier_dropout = -1.0f,
                               .rng = &t->drop_rng,
                               .batch_first = first,
                               .batch_total = B};
    memset(t->grads, 0, t->m.num_params * sizeof(float));
    if (t->task->loss_pass) return t->task->loss_pass(t, n, &mode, loss, correct, err);
    if (t->task->forward(t, n, &mode, t->logits, err) != 0) return -1; /* the part: n examples */
    const float smoothing = t->o.label_smoothing, lambda = t->mix_lambda;
    const float share = n == B ? 1.0f : (float)n / (float)B;
    if (lambda < 1.0f) { /* a mixed batch: hits count against the larger share's label */
        *loss = crossentropy_mixed_forward(t->probs, t->logits, t->labels, t->partners, lambda, n,
                                           L, smoothing);
        *correct = count_correct(t->logits, lambda >= 0.5f ? t->labels : t->partners, n, L);
        crossentropy_mixed_backward(t->dlogits, t->probs, t->labels, t->partners, lambda, n, L,
                                    smoothing, share);
    } else {
        *loss = crossentropy_forward(t->probs, t->logits, t->labels, n, L, smoothing);
        *correct = count_correct(t->logits, t->labels, n, L);
        crossentropy_backward(t->dlogits, t->probs, t->labels, n, L, smoothing, share);
    }
    t->task->backward(t, t->dlogits);
    return 0;
}

/* The parts' gradients summed into every process's block; the whole batch's mean loss and hits.
 * rc is this process's forward and backward: the processes first sum their failures, so that all
 * stop together when one failed instead of the others waiting for its gradients. */
static int sum_parts(trainer *t, int rc, double *loss, double *correct, vit_error *err) {
    if (t->ranks <= 1) return rc;
    double sums[3] = {rc == 0 ? *loss * t->part_n : 0.0, rc == 0 ? *correct : 0.0, rc != 0};
    if (dist_sum_doubles(sums, 3, err) != 0) return -1;
    if (sums[2] > 0)
        return rc != 0 ? -1
                       : vit_fail(err, "another process failed a training step (see its message)");
    const double start = clock_seconds();
    if (dist_sum_floats(t->grads, t->m.num_params, err) != 0) return -1;
    t->allreduce_seconds += clock_seconds() - start;
    *loss = sums[0] / t->B, *correct = sums[1];
    return 0;
}

int train_step(trainer *t, const int *idx, vit_error *err) {
    double mean = 0.0, correct = 0.0;
    const int rc = forward_backward(t, idx, &mean, &correct, err);
    if (sum_parts(t, rc, &mean, &correct, err) != 0) return -1;
    const float loss = (float)mean;
    if (!isfinite(loss))
        return vit_fail(err, "the loss diverged (%g) at step %lld: try a lower --lr", loss,
                        (long long)t->step + 1);
    grad_clip_global_norm(&t->m, t->grads, &t->opt, t->o.clip_norm);
    adamw_step(&t->opt, &t->m, t->grads, lr_at(&t->sched, t->step));
    t->step++;
    t->epoch_loss_sum += (double)loss * t->B;
    t->epoch_correct += correct;
    t->epoch_seen += t->B;
    return 0;
}

/* The loss and hits of the validation batch loaded, n examples (the loss times n). */
static int evaluate_batch(trainer *t, int n, double *loss, double *correct, vit_error *err) {
    if (t->task->loss_pass) {
        if (t->task->loss_pass(t, n, NULL, loss, correct, err) != 0) return -1;
        *loss *= n;
        return 0;
    }
    if (t->task->forward(t, n, NULL, t->logits, err) != 0) return -1;
    *loss = crossentropy_forward(t->probs, t->logits, t->labels, n, t->num_classes, 0.0f) * n;
    *correct = count_correct(t->logits, t->labels, n, t->num_classes);
    return 0;
}

int train_evaluate(trainer *t, double *loss, double *top1, vit_error *err) {
    double sum = 0.0, correct = 0.0;
    int *idx = t->scratch;
    for (int i0 = 0; i0 < t->n_val; i0 += t->B) {
        const int n = t->n_val - i0 < t->B ? t->n_val - i0 : t->B;
        for (int b = 0; b < n; b++) idx[b] = i0 + b;
        double l, c;
        if (t->task->load_batch(t, idx, n, 0, err) != 0 || evaluate_batch(t, n, &l, &c, err) != 0)
            return -1;
        sum += l, correct += c;
    }
    *loss = sum / t->n_val;
    *top1 = (double)correct / t->n_val;
    return 0;
}
