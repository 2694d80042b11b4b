/* MultipleNegativesRankingLoss through a sentence-transformers pipeline (st_loss.h): forward,
 * loss, and the backward stage by stage in reverse. */
#include "vit/train/st_loss.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "vit/base/alloc.h"
#include "vit/model/pooling.h"

int st_train_alloc(st_train *s, const model *m, const st_pipeline *p, int max_texts, int max_tokens,
                   vit_error *err) {
    memset(s, 0, sizeof *s);
    s->max_texts = max_texts, s->max_tokens = max_tokens;
    s->widest = st_pooled_dim(p);
    for (int i = 0; i < p->ndense; i++)
        if (p->dense[i].out > s->widest) s->widest = p->dense[i].out;
    const size_t N = (size_t)max_texts, W = (size_t)s->widest, D = (size_t)m->cfg.hidden_size;
    const size_t sizes[] = {N * D, (size_t)(p->nsteps + 1) * N * W, N * W, N * W, N * W, N * W,
                            N * N, N * (size_t)max_tokens * D};
    float **fields[] = {&s->feat, &s->stages, &s->norm,   &s->dnorm,
                        &s->da,   &s->db,     &s->scores, &s->dhidden};
    s->block = alloc_float_block(sizeof sizes / sizeof *sizes, sizes, fields);
    if (!s->block) return vit_fail(err, "out of memory for %d texts", max_texts);
    return text_acts_alloc(&s->acts, m, max_texts, max_tokens, 1, err);
}

void st_train_free(st_train *s) {
    text_acts_free(&s->acts);
    free(s->block);
    memset(s, 0, sizeof *s);
}

/* Row b of stage i (0: the pooled rows). */
static float *stage(const st_train *s, int i, int b) {
    return s->stages + ((size_t)i * s->max_texts + b) * s->widest;
}

/* Each text's hidden states pooled, then the Dense and Normalize steps, every stage kept. */
static void pipeline_forward(st_train *s, const model *m, const st_pipeline *p, const uint8_t *mask,
                             int N, int T) {
    const int D = m->cfg.hidden_size;
    for (int b = 0; b < N; b++) {
        pool_tokens(s->acts.x + (size_t)b * T * D, mask + (size_t)b * T, T, D, p->modes, 0,
                    stage(s, 0, b));
        int n = st_pooled_dim(p);
        for (int i = 0; i < p->nsteps; i++) {
            float *in = stage(s, i, b), *out = stage(s, i + 1, b);
            if (p->steps[i].kind == ST_STEP_NORMALIZE) {
                memcpy(out, in, sizeof *out * (size_t)n);
                l2_normalize(out, n);
                continue;
            }
            const st_dense *d = &p->dense[p->steps[i].dense];
            dense_forward(d->w, d->b, d->in, d->out, d->act, in, out);
            n = d->out;
        }
    }
}

/* The loss of the scores of n anchors against M candidates; with dscores (may be NULL) its
 * gradient, the mean's: (softmax - onehot) / n. */
static double ranking_loss(const float *scores, int n, int M, float *dscores, int *hits) {
    double total = 0.0;
    *hits = 0;
    for (int i = 0; i < n; i++) {
        const float *z = scores + (size_t)i * M;
        double max = z[0], sum = 0.0;
        int best = 0;
        for (int j = 1; j < M; j++)
            if (z[j] > z[best]) best = j;
        max = z[best];
        for (int j = 0; j < M; j++) sum += exp(z[j] - max);
        total += log(sum) + max - z[i];
        *hits += best == i;
        for (int j = 0; dscores && j < M; j++)
            dscores[(size_t)i * M + j] = (float)((exp(z[j] - max) / sum - (j == i)) / n);
    }
    return total / n;
}

int st_train_pass(st_train *s, const model *m, const model *grads, const st_pipeline *p,
                  const st_dense *dense_grads, const int32_t *ids, const uint8_t *mask, int k,
                  int n, int T, const forward_mode *mode, float scale, double *loss, int *hits,
                  vit_error *err) {
    const int N = k * n, M = N - n, E = st_output_dim(p), D = m->cfg.hidden_size;
    if (k < 2 || n < 1 || N > s->max_texts || T > s->max_tokens)
        return vit_fail(err, "%d columns of %d texts of %d tokens outside the buffers", k, n, T);
    if (text_model_forward_typed(m, &s->acts, ids, NULL, mask, N, T, mode, s->feat, err) != 0)
        return -1;
    pipeline_forward(s, m, p, mask, N, T);
    /* util.cos_sim: each embedding normalised, then the dot products, times scale */
    const size_t W = (size_t)s->widest;
    for (int b = 0; b < N; b++) {
        memcpy(s->norm + b * W, stage(s, p->nsteps, b), sizeof(float) * (size_t)E);
        l2_normalize(s->norm + b * W, E);
    }
    for (int i = 0; i < n; i++)
        for (int j = 0; j < M; j++) {
            double dot = 0.0;
            for (int e = 0; e < E; e++)
                dot += (double)s->norm[i * W + e] * s->norm[(size_t)(n + j) * W + e];
            s->scores[(size_t)i * M + j] = (float)(scale * dot);
        }
    const int train = mode && mode->train;
    *loss = ranking_loss(s->scores, n, M, train ? s->scores : NULL, hits);
    if (!train) return 0;
    /* dscores (in s->scores) -> the normalised embeddings' gradients -> the embeddings' */
    memset(s->dnorm, 0, sizeof(float) * (size_t)N * W);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < M; j++) {
            const float g = scale * s->scores[(size_t)i * M + j];
            float *da = s->dnorm + i * W, *db = s->dnorm + (size_t)(n + j) * W;
            const float *a = s->norm + i * W, *b = s->norm + (size_t)(n + j) * W;
            for (int e = 0; e < E; e++) da[e] += g * b[e], db[e] += g * a[e];
        }
    memset(s->dhidden, 0, sizeof(float) * (size_t)N * T * D);
    for (int b = 0; b < N; b++) {
        float *d = s->da, *prev = s->db;
        l2_normalize_backward(stage(s, p->nsteps, b), E, s->dnorm + b * W, d);
        for (int i = p->nsteps - 1; i >= 0; i--) { /* the steps in reverse, d their output's */
            const float *in = stage(s, i, b), *out = stage(s, i + 1, b);
            int n_in = st_pooled_dim(p);
            for (int j = 0; j < i; j++)
                if (p->steps[j].kind == ST_STEP_DENSE) n_in = p->dense[p->steps[j].dense].out;
            if (p->steps[i].kind == ST_STEP_NORMALIZE) {
                l2_normalize_backward(in, n_in, d, prev);
            } else {
                const st_dense *dn = &p->dense[p->steps[i].dense],
                               *dg = dense_grads ? &dense_grads[p->steps[i].dense] : NULL;
                dense_backward(dn->w, dn->b, dn->in, dn->out, dn->act, in, out, d, prev,
                               dg ? dg->w : NULL, dg && dn->b ? dg->b : NULL);
            }
            float *t = d;
            d = prev, prev = t;
        }
        pool_tokens_backward(s->acts.x + (size_t)b * T * D, mask + (size_t)b * T, T, D, p->modes, 0,
                             d, s->dhidden + (size_t)b * T * D);
    }
    text_model_backward_hidden(m, grads, &s->acts, s->dhidden);
    return 0;
}
