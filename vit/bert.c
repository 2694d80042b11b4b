/* The BERT forward pass, top to bottom: embeddings -> shared encoder (post-LN) -> pooler -> head. */
#include "vit/bert.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "vit/encoder.h"
#include "vit/ops.h"

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
            const float *w = m->word_emb + (size_t)ids[b * T + t] * D, *p = m->pos_emb + (size_t)t * D;
            float *row = x + ((size_t)b * T + t) * D;
            for (int d = 0; d < D; d++) row[d] = w[d] + p[d] + m->type_emb[d];
        }
    layernorm_forward(x, NULL, NULL, x, m->emb_ln_w, m->emb_ln_b, B * T, D, m->cfg.layer_norm_eps);
}

int bert_forward(bert_runner *r, const int32_t *ids, const uint8_t *mask, int B, int T, float *logits,
                 vit_error *err) {
    const model *m = r->m;
    const int D = m->cfg.hidden_size;
    if (B < 1 || B > r->max_batch || T < 1 || T > r->max_tokens)
        return vit_fail(err, "batch %dx%d outside %dx%d", B, T, r->max_batch, r->max_tokens);
    for (int i = 0; i < B * T; i++)
        if (ids[i] < 0 || ids[i] >= m->cfg.vocab_size)
            return vit_fail(err, "token id %d outside the vocabulary (%d)", ids[i], m->cfg.vocab_size);
    embed_tokens(m, r->x, ids, B, T);
    encoder_forward(&m->enc, m->layers, &r->acts, r->x, mask, B, T);
    for (int b = 0; b < B; b++) memcpy(r->cls + (size_t)b * D, r->x + (size_t)b * T * D, sizeof(float) * (size_t)D);
    linear_forward(r->pooled, r->cls, m->pooler_w, m->pooler_b, B, D, D);
    for (int i = 0; i < B * D; i++) r->pooled[i] = tanhf(r->pooled[i]);
    linear_forward(logits, r->pooled, m->head_w, m->head_b, B, D, m->cfg.num_labels);
    return 0;
}
