/* The BERT forward pass, top to bottom: embeddings -> shared encoder (post-LN) -> pooler -> head;
 * then the text classifier that feeds it tokenized batches. */
#include "vit/model/bert.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "vit/model/config.h"
#include "vit/core/encoder.h"
#include "vit/core/ops.h"

struct bert_runner {
    const model *m;
    int max_batch, max_tokens;
    float *x, *cls, *pooled; /* [B, T, D], [B, D], [B, D] */
    encoder_acts acts;
};

bert_runner *bert_runner_create(const model *m, int max_batch, int max_tokens, vit_error *err) {
    if (m->cfg.kind != MODEL_BERT) return vit_fail(err, "not a BERT model"), NULL;
    if (max_tokens > m->cfg.max_position_embeddings)
        return vit_fail(err, "%d tokens exceed max_position_embeddings %d", max_tokens,
                        m->cfg.max_position_embeddings),
               NULL;
    bert_runner *r = calloc(1, sizeof *r);
    const size_t D = (size_t)m->cfg.hidden_size;
    if (r) {
        r->m = m;
        r->max_batch = max_batch;
        r->max_tokens = max_tokens;
        r->x = malloc(sizeof(float) * D * (size_t)max_batch * ((size_t)max_tokens + 2));
        r->cls = r->x + D * (size_t)max_batch * max_tokens;
        r->pooled = r->cls + D * (size_t)max_batch;
    }
    if (!r || !r->x || encoder_acts_alloc(&r->acts, &m->enc, max_batch, max_tokens, 0) != 0) {
        bert_runner_free(r);
        return vit_fail(err, "out of memory for %d x %d tokens", max_batch, max_tokens), NULL;
    }
    return r;
}

void bert_runner_free(bert_runner *r) {
    if (!r) return;
    free(r->x);
    encoder_acts_free(&r->acts);
    free(r);
}

static void embed_tokens(const model *m, float *x, const int32_t *ids, int B, int T) {
    const int D = m->cfg.hidden_size;
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            const float *w = m->word_emb + (size_t)ids[b * T + t] * D,
                        *p = m->pos_emb + (size_t)t * D;
            float *row = x + ((size_t)b * T + t) * D;
            for (int d = 0; d < D; d++) row[d] = w[d] + p[d] + m->type_emb[d];
        }
    layernorm_forward(x, NULL, NULL, x, m->emb_ln_w, m->emb_ln_b, B * T, D, m->cfg.layer_norm_eps);
}

int bert_forward(bert_runner *r, const int32_t *ids, const uint8_t *mask, int B, int T,
                 float *logits, vit_error *err) {
    const model *m = r->m;
    const int D = m->cfg.hidden_size;
    if (B < 1 || B > r->max_batch || T < 1 || T > r->max_tokens)
        return vit_fail(err, "batch %dx%d outside %dx%d", B, T, r->max_batch, r->max_tokens);
    for (int i = 0; i < B * T; i++)
        if (ids[i] < 0 || ids[i] >= m->cfg.vocab_size)
            return vit_fail(err, "token id %d outside the vocabulary (%d)", ids[i],
                            m->cfg.vocab_size);
    embed_tokens(m, r->x, ids, B, T);
    encoder_forward(&m->enc, m->layers, &r->acts, r->x, mask, B, T);
    for (int b = 0; b < B; b++)
        memcpy(r->cls + (size_t)b * D, r->x + (size_t)b * T * D, sizeof(float) * (size_t)D);
    linear_forward(r->pooled, r->cls, m->pooler_w, m->pooler_b, B, D, D);
    for (int i = 0; i < B * D; i++) r->pooled[i] = tanhf(r->pooled[i]);
    linear_forward(logits, r->pooled, m->head_w, m->head_b, B, D, m->cfg.num_labels);
    return 0;
}

/* ---- text classification ---- */

struct bert_classifier {
    model m;
    tokenizer *tok;
    tokenizer_scratch *scratch;
    bert_runner *runner;
    int max_batch, max_tokens, pad_id;
    int32_t *rows; /* [max_batch, max_tokens]: each text's ids, rows of the last run */
    int *lengths;  /* [max_batch] */
    int32_t *ids;  /* [max_batch * max_tokens]: the last batch packed as [B, T] */
    uint8_t *mask; /* same layout: 1 = token, 0 = padding */
};

/* Refuses image models before their weights are read. */
static int require_bert(const char *dir, vit_error *err) {
    model_config cfg;
    if (model_config_load(dir, &cfg, err) != 0) return -1;
    const model_kind kind = cfg.kind;
    model_config_free(&cfg);
    if (kind != MODEL_BERT)
        return vit_fail(err,
                        "%s: not a text model (config.json model_type is not \"bert\"); text needs "
                        "a BertForSequenceClassification folder",
                        dir);
    return 0;
}

static int check_vocab(const bert_classifier *c, const char *dir, vit_error *err) {
    const int n = tokenizer_vocab_size(c->tok), limit = c->m.cfg.vocab_size;
    if (n > limit)
        return vit_fail(err, "%s: vocab.txt has %d tokens but config.json vocab_size is %d", dir, n,
                        limit);
    return 0;
}

static int alloc_batch(bert_classifier *c, const char *dir, vit_error *err) {
    const size_t cells = (size_t)c->max_batch * (size_t)c->max_tokens;
    c->rows = malloc(sizeof *c->rows * cells);
    c->ids = malloc(sizeof *c->ids * cells);
    c->mask = malloc(cells);
    c->lengths = calloc((size_t)c->max_batch, sizeof *c->lengths);
    c->scratch = tokenizer_scratch_create();
    if (!c->rows || !c->ids || !c->mask || !c->lengths || !c->scratch)
        return vit_fail(err, "%s: out of memory for batches of %d texts", dir, c->max_batch);
    return 0;
}

bert_classifier *bert_classifier_load(const char *model_dir, int max_batch, int threads,
                                      vit_error *err) {
    if (max_batch < 1) return vit_fail(err, "batch size %d is not positive", max_batch), NULL;
    if (require_bert(model_dir, err) != 0) return NULL;
    bert_classifier *c = calloc(1, sizeof *c);
    if (!c) return vit_fail(err, "%s: out of memory", model_dir), NULL;
    if (model_load(&c->m, model_dir, err) != 0) {
        free(c);
        return NULL;
    }
    c->max_batch = max_batch;
    if (tokenizer_load(model_dir, &c->tok, err) != 0 || check_vocab(c, model_dir, err) != 0) {
        bert_classifier_free(c);
        return NULL;
    }
    c->max_tokens = tokenizer_max_len(c->tok);
    if (c->max_tokens > c->m.cfg.max_position_embeddings)
        c->max_tokens = c->m.cfg.max_position_embeddings;
    /* Padding is masked out, so any valid id will do where the vocabulary has no [PAD]. */
    c->pad_id = tokenizer_pad_id(c->tok) >= 0 ? tokenizer_pad_id(c->tok) : 0;
    if (alloc_batch(c, model_dir, err) != 0 ||
        !(c->runner = bert_runner_create(&c->m, max_batch, c->max_tokens, err))) {
        bert_classifier_free(c);
        return NULL;
    }
    vit_threads_init(threads);
    return c;
}

void bert_classifier_free(bert_classifier *c) {
    if (!c) return;
    bert_runner_free(c->runner);
    tokenizer_scratch_free(c->scratch);
    tokenizer_free(c->tok);
    free(c->rows);
    free(c->lengths);
    free(c->ids);
    free(c->mask);
    model_free(&c->m);
    free(c);
}

int bert_classifier_num_labels(const bert_classifier *c) {
    return c->m.cfg.num_labels;
}
const char *bert_classifier_label(const bert_classifier *c, int index) {
    return index >= 0 && index < c->m.cfg.num_labels ? c->m.cfg.labels[index] : NULL;
}
const char *const *bert_classifier_labels(const bert_classifier *c) {
    return (const char *const *)c->m.cfg.labels;
}
const tokenizer *bert_classifier_tokenizer(const bert_classifier *c) {
    return c->tok;
}
const model *bert_classifier_model(const bert_classifier *c) {
    return &c->m;
}
int bert_classifier_max_tokens(const bert_classifier *c) {
    return c->max_tokens;
}

const int32_t *bert_classifier_ids(const bert_classifier *c, int i, int *n) {
    *n = c->lengths[i];
    return c->rows + (size_t)i * c->max_tokens;
}

/* Softmax of each row in double, so probabilities near 0 or 1 keep their digits. */
static void softmax_rows(float *probs, const float *logits, int B, int L) {
    for (int b = 0; b < B; b++) {
        const float *x = logits + (size_t)b * L;
        float *p = probs + (size_t)b * L;
        double max = x[0], sum = 0.0;
        for (int j = 1; j < L; j++) max = x[j] > max ? x[j] : max;
        for (int j = 0; j < L; j++) sum += exp(x[j] - max);
        for (int j = 0; j < L; j++) p[j] = (float)(exp(x[j] - max) / sum);
    }
}

/* Copies the B rows into [B, T] with T the longest, padding and masking the rest. */
static int pack_batch(bert_classifier *c, int B) {
    int T = 1;
    for (int b = 0; b < B; b++) T = c->lengths[b] > T ? c->lengths[b] : T;
    for (int b = 0; b < B; b++) {
        const int n = c->lengths[b];
        int32_t *ids = c->ids + (size_t)b * T;
        uint8_t *mask = c->mask + (size_t)b * T;
        memcpy(ids, c->rows + (size_t)b * c->max_tokens, sizeof *ids * (size_t)n);
        memset(mask, 1, (size_t)n);
        for (int t = n; t < T; t++) ids[t] = c->pad_id;
        memset(mask + n, 0, (size_t)(T - n));
    }
    return T;
}

int bert_classifier_run(bert_classifier *c, const char *const *texts, const size_t *lengths, int B,
                        float *logits, float *probs, vit_error *err) {
    if (B < 1 || B > c->max_batch)
        return vit_fail(err, "batch of %d texts outside 1..%d", B, c->max_batch);
    for (int b = 0; b < B; b++) {
        c->lengths[b] =
            tokenizer_encode_with(c->tok, c->scratch, texts[b], lengths[b], c->max_tokens,
                                  c->rows + (size_t)b * c->max_tokens, NULL, err);
        if (c->lengths[b] < 0) {
            for (int k = b; k < B; k++) c->lengths[k] = 0;
            return -1;
        }
    }
    const int T = pack_batch(c, B);
    if (bert_forward(c->runner, c->ids, c->mask, B, T, logits, err) != 0) return -1;
    if (probs) softmax_rows(probs, logits, B, c->m.cfg.num_labels);
    return 0;
}
