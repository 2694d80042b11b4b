/* The BERT forward pass, top to bottom, and its backward: embeddings -> LayerNorm (+dropout) ->
 * shared encoder (post-LN) -> pooler (+dropout) -> classifier; then the same stages backwards. */
#include "vit/model/text_model.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "vit/base/alloc.h"
#include "vit/core/ops.h"

int text_model_check_train(const model *m, vit_error *err) {
    const model_config *c = &m->cfg;
    /* the joint towers' heads have no backward */
    if (c->family != FAMILY_PLAIN && c->family != FAMILY_TEXT)
        return vit_fail(err, "%s: inference only, for now", config_architecture(c));
    /* the encoder's backward has no rotary or ALiBi step: their gradients would be wrong */
    if (c->opt.rotary_dim || c->opt.alibi)
        return vit_fail(err, "%s runs for inference only (%s positions have no backward in vit)",
                        config_architecture(c), c->opt.alibi ? "ALiBi" : "rotary");
    return 0;
}

int text_acts_alloc(text_acts *a, const model *m, int max_batch, int max_tokens, int training,
                    vit_error *err) {
    memset(a, 0, sizeof *a);
    const model_config *c = &m->cfg;
    if (c->kind != MODEL_TEXT) return vit_fail(err, "not a BERT model");
    if (max_batch < 1) return vit_fail(err, "batch size %d is not positive", max_batch);
    if (training && text_model_check_train(m, err) != 0) return -1;
    if (max_tokens < 1 || max_tokens > config_text_max_tokens(c))
        return vit_fail(err, "%d tokens outside 1..%d (max_position_embeddings)", max_tokens,
                        config_text_max_tokens(c));
    a->max_batch = max_batch;
    a->max_tokens = max_tokens;
    a->training = training;
    const size_t B = (size_t)max_batch, T = (size_t)max_tokens, D = (size_t)c->hidden_size;
    const size_t g = training ? 1 : 0; /* gradient buffers only when training */
    const size_t tok = c->opt.pool == POOL_TOKENS ? 1 : 0, H = (size_t)c->num_heads;
    const size_t sizes[] = {B * T * D,
                            B * T,
                            B * T,
                            B * T * D,
                            B * D,
                            B * D,
                            B * D,
                            g * B * D,
                            g * B * T * D,
                            g * B * T * D,
                            g * B * D,
                            g * B * D,
                            g * tok * B * T * D};
    float **fields[] = {&a->emb,    &a->emb_mean, &a->emb_rstd, &a->x,  &a->cls,
                        &a->pooled, &a->head_in,  &a->cls_in,   &a->dx, &a->demb,
                        &a->dhead,  &a->dcls,     &a->tok_in};
    a->block = alloc_float_block(sizeof sizes / sizeof sizes[0], sizes, fields);
    if (training) {
        a->emb_keep = malloc(B * T * D);
        a->head_keep = malloc(tok ? B * T * D : B * D);
        a->cls_keep = malloc(B * D);
    }
    const int biased = c->opt.rel_buckets != 0 || c->opt.alibi;
    const int rel_training = c->opt.rel_buckets != 0 && training;
    if (biased) {
        a->bias = vit_alloc_floats(H * T * T);
        a->run_layers = calloc((size_t)c->num_layers, sizeof *a->run_layers);
    }
    if (rel_training) {
        a->dbias = vit_alloc_floats(H * T * T);
        a->grad_layers = calloc((size_t)c->num_layers, sizeof *a->grad_layers);
    }
    if (!a->block || (training && (!a->emb_keep || !a->head_keep || !a->cls_keep)) ||
        (biased && (!a->bias || !a->run_layers)) ||
        (rel_training && (!a->dbias || !a->grad_layers)) ||
        encoder_scratch_alloc(&a->scratch, &m->enc, max_batch, max_tokens) != 0 ||
        (training && encoder_tape_alloc(&a->tape, &m->enc, max_batch, max_tokens) != 0)) {
        text_acts_free(a);
        return vit_fail(err, "out of memory for %d x %d tokens", max_batch, max_tokens);
    }
    return 0;
}

void text_acts_free(text_acts *a) {
    free(a->block);
    free(a->emb_keep);
    free(a->head_keep);
    free(a->cls_keep);
    free(a->bias);
    free(a->run_layers);
    free(a->dbias);
    free(a->grad_layers);
    encoder_scratch_free(&a->scratch);
    encoder_tape_free(&a->tape);
    memset(a, 0, sizeof *a);
}

/* ---- embeddings ---- */

/* The position row of each token of one sequence: t, or (opt.pos_from_ids, RoBERTa's
 * create_position_ids_from_input_ids) the count of non-padding ids so far after the padding
 * index, which the padding ids themselves keep. */
static int position_of(const tower_options *o, const int32_t *ids, int t, int *seen) {
    if (!o->pos_from_ids) return t;
    if (ids[t] == o->pos_pad) return o->pos_pad;
    return o->pos_pad + ++*seen;
}

/* emb [B, T, D] = word[ids] + position (+ the token type's row, where the model has them: types
 * [B, T], NULL for all 0). */
static void embeddings_forward(float *emb, const model *m, const int32_t *ids, const int32_t *types,
                               int B, int T) {
    const int D = m->cfg.hidden_size;
    for (int b = 0; b < B; b++)
        for (int t = 0, seen = 0; t < T; t++) {
            const int pos = position_of(&m->cfg.opt, ids + (size_t)b * T, t, &seen);
            const float *w = m->word_emb + (size_t)ids[(size_t)b * T + t] * D;
            float *row = emb + ((size_t)b * T + t) * D;
            if (m->pos_emb) /* none with rotary or ALiBi positions */
                for (int d = 0; d < D; d++) row[d] = w[d] + m->pos_emb[(size_t)pos * D + d];
            else
                memcpy(row, w, sizeof *row * (size_t)D);
            const float *type = m->type_emb + (types ? (size_t)types[(size_t)b * T + t] * D : 0);
            if (m->cfg.opt.token_types)
                for (int d = 0; d < D; d++) row[d] += type[d];
        }
}

/* The row each text is read at (joint models' towers): the first end token (CLIP), the largest
 * id (CLIP's old configs: the end token is the largest id), or the last position (SigLIP). */
static int pooled_position(const model_config *c, const int32_t *ids, int T) {
    int at = 0;
    if (c->opt.pool == POOL_LAST) return T - 1;
    for (int t = 0; t < T; t++) {
        if (c->opt.pool == POOL_EOS && ids[t] == c->eos_token_id) return t;
        if (c->opt.pool == POOL_EOS_MAX && ids[t] > ids[at]) at = t;
    }
    return at; /* POOL_EOS without an end token: row 0, as argmax of all zeros in HF */
}

/* A joint model's text tower after the encoder: the pooled rows, the final LayerNorm on them,
 * the projection into the joint space (none: CLIPTextModel's pooler_output is the output). */
static void joint_head_forward(const model *m, text_acts *a, const int32_t *ids, int B, int T,
                               int fast, float *out) {
    const model_config *c = &m->cfg;
    const int D = c->hidden_size;
    for (int b = 0; b < B; b++) {
        const int t = pooled_position(c, ids + (size_t)b * T, T);
        memcpy(a->cls + (size_t)b * D, a->x + ((size_t)b * T + t) * D, sizeof(float) * (size_t)D);
    }
    layernorm_forward(a->pooled, NULL, NULL, a->cls, m->final_ln_w, m->final_ln_b, B, D,
                      c->layer_norm_eps);
    if (c->opt.head == HEAD_NONE)
        memcpy(out, a->pooled, sizeof(float) * (size_t)B * D);
    else if (fast)
        gemm_run(m->head, a->pooled, B, out, a->gemm);
    else
        linear_forward(out, a->pooled, m->head_w, m->head_b, B, D, c->num_labels);
}

/* Scatter-add of demb [B, T, D] into the rows the forward read (g: the gradient view): the
 * word's, the position's (RoBERTa's counted from the ids, as the forward did) and the token
 * type's where the model has them. Serial: a word repeated in the batch accumulates in one fixed
 * order whatever the thread count. */
static void embeddings_backward(const model *m, const model *g, const float *demb,
                                const int32_t *ids, const int32_t *types, int B, int T) {
    const int D = m->cfg.hidden_size;
    for (int b = 0; b < B; b++)
        for (int t = 0, seen = 0; t < T; t++) {
            const size_t bt = (size_t)b * T + t;
            const int pos = position_of(&m->cfg.opt, ids + (size_t)b * T, t, &seen);
            const float *d = demb + bt * D;
            float *w = g->word_emb + (size_t)ids[bt] * D, *p = g->pos_emb + (size_t)pos * D;
            for (int k = 0; k < D; k++) {
                w[k] += d[k];
                p[k] += d[k];
            }
            if (!m->cfg.opt.token_types) continue;
            float *type = g->type_emb + (types ? (size_t)types[bt] * D : 0);
            for (int k = 0; k < D; k++) type[k] += d[k];
        }
}

/* ---- pooler and classifier ---- */

/* The pooler's activation in place: tanh (BertPooler, RobertaClassificationHead) or ReLU
 * (DistilBERT's pre_classifier). */
static void pooler_activation(const model *m, float *pooled, size_t n) {
    if (m->cfg.opt.pooler_relu)
        for (size_t i = 0; i < n; i++) pooled[i] = pooled[i] > 0.0f ? pooled[i] : 0.0f;
    else
        for (size_t i = 0; i < n; i++) pooled[i] = tanhf(pooled[i]);
}

/* From the forward's input cls and activated output pooled: dcls [B, D] (overwritten), dw, db
 * accumulated. dpooled is overwritten with the gradient wrt the pre-activation (tanh' = 1 - tanh²;
 * ReLU's: 1 where the output is positive). */
static void pooler_backward(const model *m, float *dcls, float *dw, float *db, float *dpooled,
                            const float *pooled, const float *cls, int B, int D) {
    const size_t n = (size_t)B * D;
    if (m->cfg.opt.pooler_relu)
        for (size_t i = 0; i < n; i++) dpooled[i] = pooled[i] > 0.0f ? dpooled[i] : 0.0f;
    else
        for (size_t i = 0; i < n; i++) dpooled[i] *= 1.0f - pooled[i] * pooled[i];
    linear_backward(dcls, dw, db, dpooled, cls, m->pooler_w, B, D, D);
}

/* ---- MPNet's relative position bias ---- */

int text_relative_bucket(int rel, int buckets, int max_distance) {
    const int half = buckets / 2, exact = half / 2, n = rel > 0 ? rel : -rel;
    const int ret = rel > 0 ? half : 0; /* keys after the query */
    if (n < exact) return ret + n;
    /* float32 throughout and truncated, as the tensors of relative_position_bucket: at n = 64
     * the exact value is 6 and float32 must give what PyTorch's does */
    const float scaled = logf((float)n / (float)exact) / (float)log((double)max_distance / exact) *
                         (float)(half - exact);
    const int large = exact + (int)scaled;
    return ret + (large < half - 1 ? large : half - 1);
}

/* The layers this forward runs: the model's, or (MPNet) with the bias for T tokens, bias[h, i, j]
 * = table[bucket(j - i), h], one for every layer (MPNetEncoder.compute_position_bias), or
 * (JinaBERT) ALiBi's -slope_h·|i - j|. Built when T changes, and at every training forward:
 * training changes the table. */
static const encoder_layer *layers_with_bias(const model *m, text_acts *a, int T) {
    const tower_options *o = &m->cfg.opt;
    if (!o->rel_buckets && !o->alibi) return m->layers;
    const int H = m->cfg.num_heads, L = m->cfg.num_layers;
    if (a->training) a->bias_tokens = 0;
    if (o->alibi && a->bias_tokens != T) alibi_bias(a->bias, H, T);
    for (int i = 0; o->rel_buckets && a->bias_tokens != T && i < T; i++)
        for (int j = 0; j < T; j++) {
            const int bucket = text_relative_bucket(j - i, o->rel_buckets, 128);
            const float *row = m->shared_rel_table + (size_t)bucket * H;
            for (int h = 0; h < H; h++) a->bias[((size_t)h * T + i) * T + j] = row[h];
        }
    a->bias_tokens = T;
    memcpy(a->run_layers, m->layers, sizeof *a->run_layers * (size_t)L);
    for (int l = 0; l < L; l++) a->run_layers[l].attn_bias = a->bias;
    return a->run_layers;
}

/* ---- the passes ---- */

static int check_args(const model *m, const text_acts *a, const int32_t *ids, int B, int T,
                      const forward_mode *mode, vit_error *err) {
    if (B < 1 || B > a->max_batch || T < 1 || T > a->max_tokens)
        return vit_fail(err, "batch %dx%d outside %dx%d", B, T, a->max_batch, a->max_tokens);
    for (size_t i = 0; i < (size_t)B * T; i++)
        if (ids[i] < 0 || ids[i] >= m->cfg.vocab_size)
            return vit_fail(err, "token id %d of sequence %zu outside the vocabulary (%d)", ids[i],
                            i / (size_t)T, m->cfg.vocab_size);
    return forward_mode_check(mode, a->training, err);
}

/* The encoder's run for a forward in mode (and the backward that follows it): inference unless it
 * trains, HF's dropout when training. */
static encoder_run encoder_run_of(const text_acts *a, const forward_mode *mode) {
    if (!mode->train || mode->freeze_encoder) return (encoder_run){.gemm = a->gemm};
    return (encoder_run){.mode = ENCODER_TRAIN,
                         .hidden_drop = mode->dropout,
                         .attn_drop = mode->attention_dropout,
                         .rng = mode->rng,
                         .batch_first = mode->batch_first,
                         .batch_total = mode->batch_total};
}

/* Embeddings, their LayerNorm (BERT) and (HF BertEmbeddings) dropout into a->x. */
static void input_forward(const model *m, text_acts *a, const int32_t *ids, const int32_t *types,
                          int B, int T, const forward_mode *mode, float p_drop) {
    const int D = m->cfg.hidden_size;
    const size_t n = (size_t)B * T * D;
    embeddings_forward(a->emb, m, ids, types, B, T);
    if (m->cfg.opt.embed_norm)
        layernorm_forward(a->x, a->emb_mean, a->emb_rstd, a->emb, m->emb_ln_w, m->emb_ln_b, B * T,
                          D, m->cfg.layer_norm_eps);
    else
        memcpy(a->x, a->emb, sizeof(float) * n);
    if (p_drop > 0.0f) {
        const size_t per = n / (size_t)B;
        dropout_mask_part(a->emb_keep, n, p_drop, mode->rng, (size_t)mode->batch_first * per,
                          (size_t)(mode->batch_total > 0 ? mode->batch_total : B) * per);
        dropout_forward(a->x, a->x, a->emb_keep, n, p_drop);
    }
}

/* Dropout in training on x [B, per] into out with mask keep, drawn as this process's part of the
 * whole batch's masks. */
static void batch_dropout(float *out, const float *x, uint8_t *keep, int B, size_t per, float p,
                          const forward_mode *mode) {
    const size_t n = (size_t)B * per;
    dropout_mask_part(keep, n, p, mode->rng, (size_t)mode->batch_first * per,
                      (size_t)(mode->batch_total > 0 ? mode->batch_total : B) * per);
    dropout_forward(out, x, keep, n, p);
}

/* A token classifier: logits [B, T, labels], (training: dropout, as BertForTokenClassification)
 * the classifier on every row. */
static int token_head_forward(const model *m, text_acts *a, int B, int T, const forward_mode *mode,
                              int fast, float *logits, vit_error *err) {
    const int D = m->cfg.hidden_size, K = m->cfg.num_labels;
    const float p_cls = forward_mode_classifier_dropout(mode);
    const float *h = a->x;
    if (p_cls > 0.0f) {
        batch_dropout(a->tok_in, a->x, a->head_keep, B, (size_t)T * D, p_cls, mode);
        h = a->tok_in;
    }
    if (fast)
        gemm_run(m->head, h, B * T, logits, a->gemm);
    else
        linear_forward(logits, h, m->head_w, m->head_b, B * T, D, K);
    return forward_logits_check(mode, logits, (size_t)B * T * K, err);
}

/* BERT's output: token 0 -> (RoBERTa's, MPNet's head: dropout) -> pooler (tanh, or DistilBERT's
 * ReLU; none: token 0 itself) -> (a base model: that is the output) dropout -> classifier. A
 * token classifier: every row. */
static int pooler_head_forward(const model *m, text_acts *a, int B, int T, const forward_mode *mode,
                               int fast, float *logits, vit_error *err) {
    const int D = m->cfg.hidden_size;
    const float p_cls = forward_mode_classifier_dropout(mode);
    for (int b = 0; b < B; b++)
        memcpy(a->cls + (size_t)b * D, a->x + (size_t)b * T * D, sizeof(float) * (size_t)D);
    if (m->cfg.opt.pool == POOL_TOKENS)
        return token_head_forward(m, a, B, T, mode, fast, logits, err);
    if (!m->cfg.opt.pooler) { /* DistilBertModel: token 0's final state is the output */
        memcpy(logits, a->cls, sizeof(float) * (size_t)B * D);
        return forward_logits_check(mode, logits, (size_t)B * D, err);
    }
    const float *in = a->cls;
    if (p_cls > 0.0f && m->cfg.opt.drop_first) {
        batch_dropout(a->cls_in, a->cls, a->cls_keep, B, (size_t)D, p_cls, mode);
        in = a->cls_in;
    }
    if (fast)
        gemm_run(m->pooler, in, B, a->pooled, a->gemm);
    else
        linear_forward(a->pooled, in, m->pooler_w, m->pooler_b, B, D, D);
    pooler_activation(m, a->pooled, (size_t)B * D);
    const float *h = a->pooled;
    if (m->cfg.opt.head == HEAD_NONE) { /* BertModel: the pooler's output is the output */
        memcpy(logits, h, sizeof(float) * (size_t)B * D);
        return forward_logits_check(mode, logits, (size_t)B * D, err);
    }
    if (p_cls > 0.0f) {
        batch_dropout(a->head_in, a->pooled, a->head_keep, B, (size_t)D, p_cls, mode);
        h = a->head_in;
    }
    if (fast)
        gemm_run(m->head, h, B, logits, a->gemm);
    else
        linear_forward(logits, h, m->head_w, m->head_b, B, D, m->cfg.num_labels);
    return forward_logits_check(mode, logits, (size_t)B * m->cfg.num_labels, err);
}

int text_model_forward(const model *m, text_acts *a, const int32_t *ids, const uint8_t *mask, int B,
                       int T, const forward_mode *mode, float *logits, vit_error *err) {
    return text_model_forward_typed(m, a, ids, NULL, mask, B, T, mode, logits, err);
}

/* types [B, T] each below type_vocab_size (a model without token types ignores them) */
static int check_types(const model *m, const int32_t *types, int B, int T, vit_error *err) {
    if (!types) return 0;
    const int n = m->cfg.opt.token_types ? m->cfg.type_vocab_size : INT32_MAX;
    for (size_t i = 0; i < (size_t)B * T; i++)
        if (types[i] < 0 || types[i] >= n)
            return vit_fail(err, "token type %d outside 0..%d (type_vocab_size %d)", types[i],
                            n - 1, n);
    return 0;
}

int text_model_forward_typed(const model *m, text_acts *a, const int32_t *ids, const int32_t *types,
                             const uint8_t *mask, int B, int T, const forward_mode *mode,
                             float *logits, vit_error *err) {
    mode = forward_mode_or_inference(mode);
    if (check_args(m, a, ids, B, T, mode, err) != 0 || check_types(m, types, B, T, err) != 0)
        return -1;
    const int encoder_trains = mode->train && !mode->freeze_encoder;
    a->mode = *mode;
    a->ids = ids;
    a->types = types;
    a->last_batch = B;
    a->last_tokens = T;
    /* prepared layers run inference (a BertModel has a pooler and no classifier) */
    const int fast = (m->head || m->pooler) && !mode->train;
    if (fast && !a->gemm) return vit_fail(err, "prepared layers run without a gemm_state");
    input_forward(m, a, ids, types, B, T, mode, encoder_trains ? mode->dropout : 0.0f);
    /* the shared encoder, post-LN, padding masked */
    const encoder_run run = encoder_run_of(a, mode);
    if (encoder_forward(&m->enc, layers_with_bias(m, a, T), &run, &a->scratch, &a->tape, a->x, mask,
                        B, T) != 0)
        return vit_fail(err, "the encoder's buffers cannot run this mode");
    if (m->cfg.opt.pool != POOL_BERT && m->cfg.opt.pool != POOL_TOKENS) { /* a joint tower */
        joint_head_forward(m, a, ids, B, T, fast, logits);
        return forward_logits_check(mode, logits, (size_t)B * m->cfg.num_labels, err);
    }
    return pooler_head_forward(m, a, B, T, mode, fast, logits, err);
}

/* The head's backward from dlogits into a->dx, the gradient wrt the encoder output (token 0's
 * row, or every row for a token classifier). */
static void head_backward(const model *m, const model *g, text_acts *a, const float *dlogits) {
    const int B = a->last_batch, T = a->last_tokens, D = m->cfg.hidden_size, K = m->cfg.num_labels;
    const float p_cls = forward_mode_classifier_dropout(&a->mode);
    if (m->cfg.opt.pool == POOL_TOKENS) {
        const size_t n = (size_t)B * T * D;
        linear_backward(a->dx, g->head_w, g->head_b, dlogits, p_cls > 0.0f ? a->tok_in : a->x,
                        m->head_w, B * T, D, K);
        if (p_cls > 0.0f) dropout_backward(a->dx, a->dx, a->head_keep, n, p_cls);
        return;
    }
    /* classifier, dropout, pooler (its dropout first): dcls, the gradient wrt token 0 */
    const int first = p_cls > 0.0f && m->cfg.opt.drop_first;
    const float *h = p_cls > 0.0f ? a->head_in : a->pooled;
    linear_backward(a->dhead, g->head_w, g->head_b, dlogits, h, m->head_w, B, D, K);
    if (p_cls > 0.0f) dropout_backward(a->dhead, a->dhead, a->head_keep, (size_t)B * D, p_cls);
    pooler_backward(m, a->dcls, g->pooler_w, g->pooler_b, a->dhead, a->pooled,
                    first ? a->cls_in : a->cls, B, D);
    if (first) dropout_backward(a->dcls, a->dcls, a->cls_keep, (size_t)B * D, p_cls);
    memset(a->dx, 0, (size_t)B * T * D * sizeof(float));
    for (int b = 0; b < B; b++)
        memcpy(a->dx + (size_t)b * T * D, a->dcls + (size_t)b * D, sizeof(float) * (size_t)D);
}

/* MPNet: the gradient layers with every layer's bias gradient in a->dbias (zeroed), which
 * relative_bias_backward then gathers into the table; others: g's layers. */
static const encoder_layer *grad_layers_with_bias(const model *m, const model *g, text_acts *a,
                                                  int T) {
    if (!m->cfg.opt.rel_buckets) return g->layers;
    const int L = m->cfg.num_layers;
    memset(a->dbias, 0, sizeof(float) * (size_t)m->cfg.num_heads * T * T);
    memcpy(a->grad_layers, g->layers, sizeof *a->grad_layers * (size_t)L);
    for (int l = 0; l < L; l++) a->grad_layers[l].attn_bias = a->dbias;
    return a->grad_layers;
}

/* bias[h, i, j] = table[bucket(j - i), h]: each table entry sums the bias gradient of its pairs. */
static void relative_bias_backward(const model *m, const model *g, const text_acts *a, int T) {
    const int H = m->cfg.num_heads, buckets = m->cfg.opt.rel_buckets;
    for (int i = 0; i < T; i++)
        for (int j = 0; j < T; j++) {
            float *row =
                g->shared_rel_table + (size_t)text_relative_bucket(j - i, buckets, 128) * H;
            for (int h = 0; h < H; h++) row[h] += a->dbias[((size_t)h * T + i) * T + j];
        }
}

/* From a->dx, the gradient wrt the encoder's output, down to the embeddings. */
static void encoder_part_backward(const model *m, const model *g, text_acts *a) {
    const int B = a->last_batch, T = a->last_tokens, D = m->cfg.hidden_size;
    const size_t n = (size_t)B * T * D;
    const encoder_run run = encoder_run_of(a, &a->mode);
    encoder_backward(&m->enc, m->layers, grad_layers_with_bias(m, g, a, T), &run, &a->tape, a->dx,
                     B, T);
    if (m->cfg.opt.rel_buckets) relative_bias_backward(m, g, a, T);
    if (a->mode.dropout > 0.0f) dropout_backward(a->dx, a->dx, a->emb_keep, n, a->mode.dropout);
    memset(a->demb, 0, n * sizeof(float)); /* layernorm_backward accumulates into it */
    layernorm_backward(a->demb, g->emb_ln_w, g->emb_ln_b, a->dx, a->emb, a->emb_mean, a->emb_rstd,
                       m->emb_ln_w, B * T, D);
    embeddings_backward(m, g, a->demb, a->ids, a->types, B, T);
}

void text_model_backward(const model *m, const model *grads, text_acts *a, const float *dlogits) {
    if (m->cfg.opt.head == HEAD_NONE) return; /* no head: text_model_backward_hidden */
    head_backward(m, grads, a, dlogits);
    if (!a->mode.freeze_encoder) encoder_part_backward(m, grads, a);
    model_clear_absent(m, grads->params);
}

void text_model_backward_hidden(const model *m, const model *grads, text_acts *a,
                                const float *dhidden) {
    const size_t n = (size_t)a->last_batch * a->last_tokens * m->cfg.hidden_size;
    memcpy(a->dx, dhidden, n * sizeof(float));
    encoder_part_backward(m, grads, a);
    model_clear_absent(m, grads->params);
}
