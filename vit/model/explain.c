#include "vit/model/explain.h"

#include <stdlib.h>
#include <string.h>

#include "vit/model/config.h"

int explainer_init(explainer *e, const model *m, int height, int width, vit_error *err) {
    memset(e, 0, sizeof *e);
    if (vit_acts_alloc_rect(&e->acts, m, 1, height, width, VIT_ACTS_EXPLAIN, err) != 0) return -1;
    const size_t T = (size_t)e->acts.tokens, H = (size_t)m->enc.heads, L = (size_t)m->enc.layers;
    e->grads = calloc(m->num_params, sizeof(float));
    e->probs_grad = malloc(sizeof(float) * L * H * T * T);
    e->rollout = malloc(sizeof(double) * 3 * T * T);
    e->logits = malloc(sizeof(float) * (size_t)m->cfg.num_labels);
    if (!e->grads || !e->probs_grad || !e->rollout || !e->logits ||
        model_bind(&e->g, m, e->grads) != 0) {
        explainer_free(e);
        return vit_fail(err, "out of memory for the explanation's buffers");
    }
    e->step = e->rollout + T * T;
    e->scratch = e->step + T * T;
    return 0;
}

void explainer_free(explainer *e) {
    vit_acts_free(&e->acts);
    if (e->g.layers) model_unbind(&e->g);
    free(e->grads);
    free(e->probs_grad);
    free(e->rollout);
    free(e->logits);
    memset(e, 0, sizeof *e);
}

int explain_maps(const model *m, explain_method method) {
    return method == EXPLAIN_LAST ? m->enc.heads : 1;
}

/* out = a · b, all [T, T]. */
static void matmul(double *out, const double *a, const double *b, int T) {
    for (int i = 0; i < T; i++) {
        double *row = out + (size_t)i * T;
        memset(row, 0, sizeof(double) * T);
        for (int k = 0; k < T; k++) {
            const double aik = a[(size_t)i * T + k];
            if (aik == 0.0) continue;
            const double *bk = b + (size_t)k * T;
            for (int j = 0; j < T; j++) row[j] += aik * bk[j];
        }
    }
}

static void identity(double *r, int T) {
    memset(r, 0, sizeof(double) * T * T);
    for (int i = 0; i < T; i++) r[(size_t)i * T + i] = 1.0;
}

/* step = the mean over heads of layer l's weights, or, with grad, of max(0, grad ∘ weights). */
static void head_mean(double *step, const float *probs, const float *grad, int H, int T) {
    const size_t TT = (size_t)T * T;
    memset(step, 0, sizeof(double) * TT);
    for (int h = 0; h < H; h++)
        for (size_t i = 0; i < TT; i++) {
            const double a = probs[h * TT + i];
            const double v = grad ? a * grad[h * TT + i] : a;
            step[i] += grad && v < 0.0 ? 0.0 : v;
        }
    for (size_t i = 0; i < TT; i++) step[i] /= H;
}

static void rollout(explainer *e, const model *m, int grad_weighted) {
    const int T = e->acts.tokens, H = m->enc.heads, L = m->enc.layers;
    const size_t TT = (size_t)T * T;
    identity(e->rollout, T);
    for (int l = 0; l < L; l++) {
        const float *probs = encoder_tape_layer(&e->acts.tape, e->acts.tape.set.probs, l);
        head_mean(e->step, probs, grad_weighted ? e->probs_grad + l * H * TT : NULL, H, T);
        if (grad_weighted) { /* R += Ā·R */
            matmul(e->scratch, e->step, e->rollout, T);
            for (size_t i = 0; i < TT; i++) e->rollout[i] += e->scratch[i];
        } else { /* R = norm(Ā + I)·R */
            for (int i = 0; i < T; i++) {
                double *row = e->step + (size_t)i * T, sum = 0.0;
                row[i] += 1.0;
                for (int j = 0; j < T; j++) sum += row[j];
                for (int j = 0; j < T; j++) row[j] /= sum;
            }
            matmul(e->scratch, e->step, e->rollout, T);
            memcpy(e->rollout, e->scratch, sizeof(double) * TT);
        }
    }
}

/* dy/dA of every layer for y = logits[label]: the backward of a one-hot. */
static void attention_gradients(explainer *e, const model *m, int label) {
    const int L_out = m->cfg.num_labels;
    float dlogits[L_out];
    memset(dlogits, 0, sizeof dlogits);
    dlogits[label] = 1.0f;
    memset(e->grads, 0, sizeof(float) * m->num_params);
    e->acts.probs_grad = e->probs_grad;
    vit_model_backward(m, &e->g, &e->acts, dlogits);
    e->acts.probs_grad = NULL;
}

int explainer_run(explainer *e, const model *m, const float *pixels, explain_method method,
                  int *label_io, float *logits, float *map, vit_error *err) {
    if (method != EXPLAIN_ROLLOUT && method != EXPLAIN_LAST && method != EXPLAIN_GRAD)
        return vit_fail(err, "unknown explanation method %d", (int)method);
    const forward_mode mode = {.train = 1};
    if (vit_model_forward(m, &e->acts, pixels, 1, &mode, logits, err) != 0) return -1;
    const int L_out = m->cfg.num_labels;
    int label = *label_io;
    if (label < 0)
        for (int j = label = 0; j < L_out; j++) label = logits[j] > logits[label] ? j : label;
    if (label >= L_out)
        return vit_fail(err, "label %d outside the model's %d classes", label, L_out);
    *label_io = label;
    const int T = e->acts.tokens, S = e->acts.special, N = T - S, H = m->enc.heads;
    if (method == EXPLAIN_LAST) {
        const float *probs =
            encoder_tape_layer(&e->acts.tape, e->acts.tape.set.probs, m->enc.layers - 1);
        for (int h = 0; h < H; h++)
            memcpy(map + (size_t)h * N, probs + (size_t)h * T * T + S, sizeof(float) * N);
        return 0;
    }
    if (method == EXPLAIN_GRAD) attention_gradients(e, m, label);
    rollout(e, m, method == EXPLAIN_GRAD);
    for (int i = 0; i < N; i++) map[i] = (float)e->rollout[S + i];
    return 0;
}
