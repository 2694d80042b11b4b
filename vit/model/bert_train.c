/* The BERT training step, top to bottom and back: token ids -> word + position + type embeddings
 * -> LayerNorm (+dropout) -> encoder (post-LN, key padding mask) -> tanh pooler on token 0
 * (+dropout) -> classifier -> cross-entropy, then the same stages backwards.
 *
 * Padding: a padded position is masked as an attention key in every layer, so its hidden states
 * reach [CLS] by no path and every gradient flowing back into its row is exactly zero (the
 * attention backward multiplies by its zero weights). Its embedding rows are still scattered into,
 * as autograd would, adding exact zeros; tests/test_bert_gradcheck.c checks both facts. */
#include "vit/model/bert_train.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "vit/base/alloc.h"
#include "vit/core/encoder.h"
#include "vit/core/ops.h"

struct bert_trainer {
    model *m;
    model g; /* the gradients: m's layout rebased onto grads */
    float *grads;
    int max_batch, max_tokens, freeze;
    float attn_drop, cls_drop; /* cls_drop < 0: the step's p_drop */
    int D, L;                  /* hidden size, labels */
    encoder_acts acts;      /* per layer: the training forward keeps everything for the backward */
    encoder_acts eval_acts; /* one shared set: eval forwards and the frozen encoder */
    float *work;            /* one block for the buffers below */
    float *emb;             /* [B, T, D] summed embeddings: the embedding LayerNorm's input */
    float *emb_mean, *emb_rstd;      /* [B·T] */
    float *x, *dx;                   /* [B, T, D] encoder input/output and its gradient */
    float *demb;                     /* [B, T, D] gradient wrt emb */
    float *cls, *pooled, *head_in;   /* [B, D] token 0, tanh(pooler), pooled after dropout */
    float *dhead, *dcls;             /* [B, D] */
    float *logits, *probs, *dlogits; /* [B, L] */
    uint8_t *emb_keep;               /* [B, T, D] dropout mask after the embedding LayerNorm */
    uint8_t *head_keep;              /* [B, D] classifier dropout mask */
};

static size_t pad16(size_t n) {
    return (n + 15) & ~(size_t)15;
}

static int alloc_work(bert_trainer *t) {
    const size_t B = (size_t)t->max_batch, T = (size_t)t->max_tokens, D = (size_t)t->D;
    const size_t L = (size_t)t->L;
    size_t sizes[] = {B * T * D, B * T, B * T, B * T * D, B * T * D, B * T * D, B * D,
                      B * D,     B * D, B * D, B * D,     B * L,     B * L,     B * L};
    float **fields[] = {&t->emb,  &t->emb_mean, &t->emb_rstd, &t->x,       &t->dx,
                        &t->demb, &t->cls,      &t->pooled,   &t->head_in, &t->dhead,
                        &t->dcls, &t->logits,   &t->probs,    &t->dlogits};
    size_t total = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) total += pad16(sizes[i]);
    t->work = vit_alloc_floats(total);
    t->emb_keep = malloc(B * T * D);
    t->head_keep = malloc(B * D);
    if (!t->work || !t->emb_keep || !t->head_keep) return -1;
    total = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        *fields[i] = t->work + total;
        total += pad16(sizes[i]);
    }
    return 0;
}

bert_trainer *bert_trainer_create(model *m, int max_batch, int max_tokens, vit_error *err) {
    const model_config *c = &m->cfg;
    if (c->kind != MODEL_BERT) return vit_fail(err, "not a BERT model"), NULL;
    if (max_batch < 1) return vit_fail(err, "max_batch %d must be at least 1", max_batch), NULL;
    if (max_tokens < 1 || max_tokens > c->max_position_embeddings)
        return vit_fail(err, "max_tokens %d outside 1..%d (max_position_embeddings)", max_tokens,
                        c->max_position_embeddings),
               NULL;
    bert_trainer *t = calloc(1, sizeof *t);
    if (!t) return vit_fail(err, "out of memory"), NULL;
    t->m = m;
    t->max_batch = max_batch;
    t->max_tokens = max_tokens;
    t->cls_drop = -1.0f;
    t->D = c->hidden_size;
    t->L = c->num_labels;
    t->grads = vit_alloc_floats(m->num_params);
    if (!t->grads || model_bind(&t->g, m, t->grads) != 0 || alloc_work(t) != 0 ||
        encoder_acts_alloc(&t->acts, &m->enc, max_batch, max_tokens, 1) != 0 ||
        encoder_acts_alloc(&t->eval_acts, &m->enc, max_batch, max_tokens, 0) != 0) {
        bert_trainer_free(t);
        return vit_fail(err, "out of memory for training buffers (%d x %d tokens)", max_batch,
                        max_tokens),
               NULL;
    }
    bert_trainer_zero_grads(t);
    vit_threads_init(0);
    return t;
}

void bert_trainer_free(bert_trainer *t) {
    if (!t) return;
    encoder_acts_free(&t->acts);
    encoder_acts_free(&t->eval_acts);
    if (t->g.layers) model_unbind(&t->g);
    free(t->grads);
    free(t->work);
    free(t->emb_keep);
    free(t->head_keep);
    free(t);
}

float *bert_trainer_grads(bert_trainer *t) {
    return t->grads;
}
const model *bert_trainer_grad_model(const bert_trainer *t) {
    return &t->g;
}
const float *bert_trainer_last_logits(const bert_trainer *t) {
    return t->logits;
}
void bert_trainer_zero_grads(bert_trainer *t) {
    memset(t->grads, 0, t->m->num_params * sizeof(float));
}
void bert_trainer_set_attention_dropout(bert_trainer *t, float p) {
    t->attn_drop = p;
}
void bert_trainer_set_classifier_dropout(bert_trainer *t, float p) {
    t->cls_drop = p;
}
void bert_trainer_freeze_encoder(bert_trainer *t, int freeze) {
    t->freeze = freeze;
}

/* ---- embeddings ---- */

/* emb [B, T, D] = word[ids] + position[t] + token type 0, added in bert_forward's order so the
 * eval logits match it bit for bit. */
static void embeddings_forward(float *emb, const model *m, const int32_t *ids, int B, int T) {
    const int D = m->cfg.hidden_size;
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            const float *w = m->word_emb + (size_t)ids[(size_t)b * T + t] * D,
                        *p = m->pos_emb + (size_t)t * D;
            float *row = emb + ((size_t)b * T + t) * D;
            for (int d = 0; d < D; d++) row[d] = w[d] + p[d] + m->type_emb[d];
        }
}

/* Scatter-add of demb [B, T, D] into the rows the forward read (g: the gradient view). Serial:
 * a word repeated in the batch accumulates in one fixed order whatever the thread count. */
static void embeddings_backward(const model *g, const float *demb, const int32_t *ids, int B, int T,
                                int D) {
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            const float *d = demb + ((size_t)b * T + t) * D;
            float *w = g->word_emb + (size_t)ids[(size_t)b * T + t] * D,
                  *p = g->pos_emb + (size_t)t * D;
            for (int k = 0; k < D; k++) {
                w[k] += d[k];
                p[k] += d[k];
                g->type_emb[k] += d[k];
            }
        }
}

/* ids -> x [B, T, D]: the encoder's input (before the embedding dropout). */
static void embed(bert_trainer *t, const int32_t *ids, int B, int T) {
    const model *m = t->m;
    embeddings_forward(t->emb, m, ids, B, T);
    layernorm_forward(t->x, t->emb_mean, t->emb_rstd, t->emb, m->emb_ln_w, m->emb_ln_b, B * T, t->D,
                      m->cfg.layer_norm_eps);
}

/* ---- pooler and classifier ---- */

/* pooled [B, D] = tanh(cls · wᵀ + b): HF BertPooler on token 0 (tanhf, as bert_forward). */
static void pooler_forward(float *pooled, const float *cls, const float *w, const float *b, int B,
                           int D) {
    linear_forward(pooled, cls, w, b, B, D, D);
    for (size_t i = 0; i < (size_t)B * D; i++) pooled[i] = tanhf(pooled[i]);
}

/* From the forward's cls and tanh output pooled: dcls [B, D] (overwritten), dw, db accumulated.
 * dpooled is overwritten with the gradient wrt the pre-activation (tanh' = 1 - tanh²). */
static void pooler_backward(float *dcls, float *dw, float *db, float *dpooled, const float *pooled,
                            const float *cls, const float *w, int B, int D) {
    for (size_t i = 0; i < (size_t)B * D; i++) dpooled[i] *= 1.0f - pooled[i] * pooled[i];
    linear_backward(dcls, dw, db, dpooled, cls, w, B, D, D);
}

/* Encoder output x [B, T, D] -> logits [B, L] through token 0, the pooler, dropout p (0: none)
 * and the classifier. */
static void head_forward(bert_trainer *t, int B, int T, float p, uint64_t *rng, float *logits) {
    const model *m = t->m;
    const int D = t->D;
    for (int b = 0; b < B; b++)
        memcpy(t->cls + (size_t)b * D, t->x + (size_t)b * T * D, sizeof(float) * (size_t)D);
    pooler_forward(t->pooled, t->cls, m->pooler_w, m->pooler_b, B, D);
    const float *h = t->pooled;
    if (p > 0.0f) {
        dropout_mask(t->head_keep, (size_t)B * D, p, rng);
        dropout_forward(t->head_in, t->pooled, t->head_keep, (size_t)B * D, p);
        h = t->head_in;
    }
    linear_forward(logits, h, m->head_w, m->head_b, B, D, t->L);
}

/* dlogits -> dcls [B, D], the gradient wrt token 0 of the encoder output. */
static void head_backward(bert_trainer *t, int B, float p) {
    const model *m = t->m;
    const int D = t->D;
    const float *h = p > 0.0f ? t->head_in : t->pooled;
    linear_backward(t->dhead, t->g.head_w, t->g.head_b, t->dlogits, h, m->head_w, B, D, t->L);
    if (p > 0.0f) dropout_backward(t->dhead, t->dhead, t->head_keep, (size_t)B * D, p);
    pooler_backward(t->dcls, t->g.pooler_w, t->g.pooler_b, t->dhead, t->pooled, t->cls, m->pooler_w,
                    B, D);
}

/* ---- the step ---- */

static int check_batch(const bert_trainer *t, const int32_t *ids, int B, int T, vit_error *err) {
    if (B < 1 || B > t->max_batch) return vit_fail(err, "batch %d outside 1..%d", B, t->max_batch);
    if (T < 1 || T > t->max_tokens)
        return vit_fail(err, "%d tokens outside 1..%d", T, t->max_tokens);
    if (!ids) return vit_fail(err, "no token ids");
    const int V = t->m->cfg.vocab_size;
    for (size_t i = 0; i < (size_t)B * T; i++)
        if (ids[i] < 0 || ids[i] >= V)
            return vit_fail(err, "token id %d of sequence %zu outside the vocabulary (%d)", ids[i],
                            i / (size_t)T, V);
    return 0;
}

static int check_step_args(const bert_trainer *t, const int *labels, int B, float smoothing,
                           float p_drop, float p_cls, const uint64_t *rng, vit_error *err) {
    if (!labels) return vit_fail(err, "no labels");
    for (int b = 0; b < B; b++)
        if (labels[b] < 0 || labels[b] >= t->L)
            return vit_fail(err, "label %d of sequence %d outside 0..%d", labels[b], b, t->L - 1);
    if (!(smoothing >= 0.0f && smoothing <= 1.0f))
        return vit_fail(err, "label smoothing %g outside [0, 1]", smoothing);
    const float probs[] = {p_drop, t->attn_drop, p_cls};
    const char *names[] = {"dropout", "attention dropout", "classifier dropout"};
    for (int i = 0; i < 3; i++)
        if (!(probs[i] >= 0.0f && probs[i] < 1.0f))
            return vit_fail(err, "%s %g outside [0, 1)", names[i], probs[i]);
    const int encoder_drop = !t->freeze && (p_drop > 0.0f || t->attn_drop > 0.0f);
    if ((encoder_drop || p_cls > 0.0f) && !rng) return vit_fail(err, "dropout needs an rng state");
    return 0;
}

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

/* Absent parameters are frozen at zero: drop what they received (BERT checkpoints have none
 * today; kept so the contract matches vit_trainer's). */
static void zero_absent_grads(bert_trainer *t) {
    for (int i = 0; i < t->m->num_entries; i++) {
        const param_entry *e = &t->m->entries[i];
        if (e->absent) memset(t->grads + e->offset, 0, e->numel * sizeof(float));
    }
}

int bert_train_step(bert_trainer *t, const int32_t *ids, const uint8_t *mask, const int *labels,
                    int B, int T, float label_smoothing, float p_drop, uint64_t *rng_state,
                    float *loss, int *correct, vit_error *err) {
    const float p_cls = t->cls_drop < 0.0f ? p_drop : t->cls_drop;
    if (check_batch(t, ids, B, T, err) != 0 ||
        check_step_args(t, labels, B, label_smoothing, p_drop, p_cls, rng_state, err) != 0)
        return -1;
    const model *m = t->m;
    const int D = t->D;
    const size_t n = (size_t)B * T * D;
    embed(t, ids, B, T);
    if (t->freeze) {
        encoder_forward(&m->enc, m->layers, &t->eval_acts, t->x, mask, B, T);
    } else {
        if (p_drop > 0.0f) { /* HF BertEmbeddings ends with LayerNorm, then dropout */
            dropout_mask(t->emb_keep, n, p_drop, rng_state);
            dropout_forward(t->x, t->x, t->emb_keep, n, p_drop);
        }
        encoder_set_dropout(&t->acts, p_drop, t->attn_drop, rng_state);
        encoder_forward(&m->enc, m->layers, &t->acts, t->x, mask, B, T);
    }
    head_forward(t, B, T, p_cls, rng_state, t->logits);
    const double mean_loss =
        crossentropy_forward(t->probs, t->logits, labels, B, t->L, label_smoothing);
    if (loss) *loss = (float)mean_loss;
    if (correct) *correct = count_correct(t->logits, labels, B, t->L);

    crossentropy_backward(t->dlogits, t->probs, labels, B, t->L, label_smoothing, 1.0f);
    head_backward(t, B, p_cls);
    if (!t->freeze) {
        memset(t->dx, 0, n * sizeof(float));
        for (int b = 0; b < B; b++)
            memcpy(t->dx + (size_t)b * T * D, t->dcls + (size_t)b * D, sizeof(float) * (size_t)D);
        encoder_backward(&m->enc, m->layers, t->g.layers, &t->acts, t->dx, B, T);
        if (p_drop > 0.0f) dropout_backward(t->dx, t->dx, t->emb_keep, n, p_drop);
        memset(t->demb, 0, n * sizeof(float)); /* layernorm_backward accumulates into it */
        layernorm_backward(t->demb, t->g.emb_ln_w, t->g.emb_ln_b, t->dx, t->emb, t->emb_mean,
                           t->emb_rstd, m->emb_ln_w, B * T, D);
        embeddings_backward(&t->g, t->demb, ids, B, T, D);
    }
    zero_absent_grads(t);
    return 0;
}

int bert_train_logits(bert_trainer *t, const int32_t *ids, const uint8_t *mask, int B, int T,
                      float *logits, vit_error *err) {
    if (check_batch(t, ids, B, T, err) != 0) return -1;
    if (!logits) return vit_fail(err, "no logits buffer");
    embed(t, ids, B, T);
    encoder_forward(&t->m->enc, t->m->layers, &t->eval_acts, t->x, mask, B, T);
    head_forward(t, B, T, 0.0f, NULL, logits);
    return 0;
}
