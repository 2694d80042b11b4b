/* A VisionEncoderDecoder's decoder, top to bottom: embeddings -> the shared encoder block with
 * cross-attention and a key/value cache -> output projection. */
#include "vit/model/decoder_model.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "vit/base/alloc.h"
#include "vit/core/ops.h"
#include "vit/model/mode.h"

int decoder_acts_alloc(decoder_acts *a, const model *m, int max_rows, int max_len, int max_images,
                       int cross_tokens, vit_error *err) {
    memset(a, 0, sizeof *a);
    const model_config *c = &m->cfg;
    if (c->kind != MODEL_DECODER) return vit_fail(err, "not a decoder");
    if (max_rows < 1 || max_len < 1 || max_images < 1 || cross_tokens < 1)
        return vit_fail(err, "decoder buffers: sizes must be positive");
    if (max_len > c->max_position_embeddings)
        return vit_fail(err, "%d positions: more than the decoder's %d", max_len,
                        c->max_position_embeddings);
    const size_t D = (size_t)c->hidden_size, R = (size_t)max_rows;
    const size_t sizes[] = {R * max_len * D, (size_t)max_images * cross_tokens * D, R * D};
    float **fields[] = {&a->x, &a->states, &a->last};
    a->block = alloc_float_block(3, sizes, fields);
    if (!a->block || encoder_scratch_alloc(&a->scratch, &m->enc, max_rows, max_len) != 0 ||
        encoder_kv_cache_alloc(&a->cache, &m->enc, max_rows, max_len, max_images, cross_tokens) !=
            0) {
        decoder_acts_free(a);
        return vit_fail(err, "out of memory for %d sequences of %d positions", max_rows, max_len);
    }
    a->max_rows = max_rows;
    a->max_len = max_len;
    a->max_images = max_images;
    a->cross_tokens = cross_tokens;
    return 0;
}

void decoder_acts_free(decoder_acts *a) {
    free(a->block);
    free(a->ids);
    free(a->emb_keep);
    encoder_scratch_free(&a->scratch);
    encoder_kv_cache_free(&a->cache);
    encoder_tape_free(&a->tape);
    memset(a, 0, sizeof *a);
}

int decoder_set_states(const model *m, decoder_acts *a, const float *states, int images, int S,
                       int rows_per_image, vit_error *err) {
    const model_config *c = &m->cfg;
    if (images < 1 || images > a->max_images || S < 1 || S > a->cross_tokens || rows_per_image < 1)
        return vit_fail(err, "%d images of %d states: outside the decoder's buffers (%d x %d)",
                        images, S, a->max_images, a->cross_tokens);
    const float *cross = states;
    if (c->opt.enc_proj) { /* enc_to_dec_proj: the encoder's width to the decoder's */
        if (m->enc_proj && a->gemm)
            gemm_run(m->enc_proj, states, images * S, a->states, a->gemm);
        else
            linear_forward(a->states, states, m->enc_proj_w, m->enc_proj_b, images * S,
                           c->encoder_hidden, c->hidden_size);
        cross = a->states;
    }
    encoder_kv_cache_states(&a->cache, &m->enc, m->layers, a->gemm, cross, images, S,
                            rows_per_image);
    return 0;
}

/* Position of new token t of a row: learned positions count from the cache (+ TrOCR's offset of
 * 2); TrOCR's sinusoids count the non-padding tokens among the new ones after the cache, and a
 * padding token takes the padding row (create_position_ids_from_input_ids). */
static int position(const model_config *c, int past, const int32_t *row, int t) {
    if (!c->opt.sinusoidal) return past + t + c->opt.pos_offset;
    if (row[t] == c->pad_token_id) return c->pad_token_id;
    int count = 0;
    for (int i = 0; i <= t; i++) count += row[i] != c->pad_token_id;
    return past + count + c->pad_token_id;
}

static float embed_scale(const model_config *c) {
    return c->opt.scale_embedding ? sqrtf((float)c->hidden_size) : 1.0f;
}

/* x [rows, T, D] = token embeddings x scale + positions, the rows after `past` cached ones. */
static void embed_sum(const model *m, int past, const int32_t *ids, int rows, int T, float *x) {
    const model_config *c = &m->cfg;
    const int D = c->hidden_size;
    const float scale = embed_scale(c);
    const float *table = c->opt.sinusoidal ? m->pos_table : m->pos_emb;
    for (int r = 0; r < rows; r++)
        for (int t = 0; t < T; t++) {
            const int32_t *row = ids + (size_t)r * T;
            float *out = x + ((size_t)r * T + t) * D;
            const float *tok = m->word_emb + (size_t)row[t] * D;
            const float *pos = table + (size_t)position(c, past, row, t) * D;
            for (int d = 0; d < D; d++) out[d] = tok[d] * scale + pos[d];
        }
}

static void embed(const model *m, decoder_acts *a, const int32_t *ids, int rows, int T) {
    const model_config *c = &m->cfg;
    embed_sum(m, a->cache.past, ids, rows, T, a->x);
    if (c->opt.embed_norm)
        layernorm_forward(a->x, NULL, NULL, a->x, m->emb_ln_w, m->emb_ln_b, rows * T,
                          c->hidden_size, c->layer_norm_eps);
}

static int check_ids(const model_config *c, const decoder_acts *a, const int32_t *ids, int rows,
                     int T, vit_error *err) {
    if (rows < 1 || rows > a->max_rows || T < 1)
        return vit_fail(err, "%d rows of %d tokens: outside 1..%d rows", rows, T, a->max_rows);
    const encoder_kv_cache *kv = &a->cache;
    if (kv->past + T > a->max_len)
        return vit_fail(err, "%d positions: more than the %d the decoder was given", kv->past + T,
                        a->max_len);
    if (kv->images < 1 || (rows + kv->rows_per_image - 1) / kv->rows_per_image > kv->images)
        return vit_fail(err, "%d rows read more images than the %d set", rows, kv->images);
    for (size_t i = 0; i < (size_t)rows * T; i++)
        if (ids[i] < 0 || ids[i] >= c->vocab_size)
            return vit_fail(err, "token id %d outside the vocabulary (0..%d)", (int)ids[i],
                            c->vocab_size - 1);
    return 0;
}

/* logits of the rows in `in` ([n, D]), through GPT-2's final LayerNorm first. */
static void output_projection(const model *m, decoder_acts *a, float *in, int n, float *logits) {
    const model_config *c = &m->cfg;
    if (c->opt.final_norm)
        layernorm_forward(in, NULL, NULL, in, m->final_ln_w, m->final_ln_b, n, c->hidden_size,
                          c->layer_norm_eps);
    if (m->head && a->gemm)
        gemm_run(m->head, in, n, logits, a->gemm);
    else
        linear_forward(logits, in, m->head_w, NULL, n, c->hidden_size, c->vocab_size);
}

int decoder_forward(const model *m, decoder_acts *a, const int32_t *ids, int rows, int T,
                    int all_positions, float *logits, vit_error *err) {
    const model_config *c = &m->cfg;
    const int D = c->hidden_size;
    if (check_ids(c, a, ids, rows, T, err) != 0) return -1;
    if (m->head && !a->gemm) return vit_fail(err, "prepared layers run without a gemm_state");
    embed(m, a, ids, rows, T);
    const encoder_run run = {.mode = ENCODER_INFER, .gemm = a->gemm};
    encoder_forward_cached(&m->enc, m->layers, &run, &a->scratch, &a->cache, a->x, rows, T);
    if (all_positions) {
        output_projection(m, a, a->x, rows * T, logits);
        return forward_logits_check(forward_mode_or_inference(NULL), logits,
                                    (size_t)rows * T * c->vocab_size, err);
    }
    for (int r = 0; r < rows; r++)
        memcpy(a->last + (size_t)r * D, a->x + ((size_t)r * T + T - 1) * D, sizeof(float) * D);
    output_projection(m, a, a->last, rows, logits);
    return forward_logits_check(forward_mode_or_inference(NULL), logits,
                                (size_t)rows * c->vocab_size, err);
}

void decoder_reorder(decoder_acts *a, const int *parent, int rows) {
    encoder_kv_cache_reorder(&a->cache, parent, rows);
}

int decoder_past(const decoder_acts *a) {
    return a->cache.past;
}

/* ---- training: teacher forcing over whole sequences ---- */

int decoder_acts_alloc_train(decoder_acts *a, const model *m, int max_rows, int max_len,
                             int cross_tokens, vit_error *err) {
    memset(a, 0, sizeof *a);
    const model_config *c = &m->cfg;
    if (c->kind != MODEL_DECODER) return vit_fail(err, "not a decoder");
    if (max_rows < 1 || max_len < 1 || cross_tokens < 1)
        return vit_fail(err, "decoder buffers: sizes must be positive");
    if (max_len > c->max_position_embeddings)
        return vit_fail(err, "%d positions: more than the decoder's %d", max_len,
                        c->max_position_embeddings);
    const size_t D = (size_t)c->hidden_size, RT = (size_t)max_rows * max_len;
    const size_t RS = (size_t)max_rows * cross_tokens, proj = c->opt.enc_proj ? 1 : 0;
    const size_t emb = c->opt.embed_norm ? 1 : 0, out = c->opt.final_norm ? 1 : 0;
    const size_t sizes[] = {RT * D,   proj * RS * D, emb * RT * D, emb * RT,
                            emb * RT, out * RT * D,  out * RT,     out * RT,
                            RT * D,   RT * D,        proj * RS * D};
    float **fields[] = {&a->x,        &a->states, &a->emb_in,   &a->emb_mean,
                        &a->emb_rstd, &a->out_in, &a->out_mean, &a->out_rstd,
                        &a->dx,       &a->dtmp,   &a->dstates};
    a->block = alloc_float_block(sizeof sizes / sizeof sizes[0], sizes, fields);
    a->ids = malloc(RT * sizeof *a->ids);
    a->emb_keep = malloc(RT * D);
    if (!a->block || !a->ids || !a->emb_keep ||
        encoder_scratch_alloc(&a->scratch, &m->enc, max_rows, max_len) != 0 ||
        encoder_tape_alloc(&a->tape, &m->enc, max_rows, max_len) != 0 ||
        encoder_tape_alloc_cross(&a->tape, &m->enc, cross_tokens) != 0) {
        decoder_acts_free(a);
        return vit_fail(err, "out of memory for training %d sequences of %d positions", max_rows,
                        max_len);
    }
    a->training = 1;
    a->max_rows = a->max_images = max_rows;
    a->max_len = max_len;
    a->cross_tokens = cross_tokens;
    return 0;
}

void decoder_shift_right(const model_config *c, const int *labels, int rows, int T, int32_t *ids) {
    for (int r = 0; r < rows; r++) {
        const int *in = labels + (size_t)r * T;
        int32_t *out = ids + (size_t)r * T;
        out[0] = c->start_token_id;
        for (int t = 1; t < T; t++) out[t] = in[t - 1] == -100 ? c->shift_pad_id : in[t - 1];
    }
}

static int check_train(const model_config *c, const decoder_acts *a, const int32_t *ids, int rows,
                       int T, int S, const forward_mode *mode, vit_error *err) {
    if (!a->training) return vit_fail(err, "decoder buffers not allocated for training");
    if (rows < 1 || rows > a->max_rows || T < 1 || T > a->max_len || S < 1 || S > a->cross_tokens)
        return vit_fail(err,
                        "%d sequences of %d tokens over %d states: outside the decoder's "
                        "training buffers (%d x %d over %d)",
                        rows, T, S, a->max_rows, a->max_len, a->cross_tokens);
    if (mode->attention_dropout > 0.0f)
        return vit_fail(err, "the decoder has no attention dropout (its cross-attention weights "
                             "would go without it)");
    if (forward_mode_check(mode, 1, err) != 0) return -1;
    for (size_t i = 0; i < (size_t)rows * T; i++)
        if (ids[i] < 0 || ids[i] >= c->vocab_size)
            return vit_fail(err, "token id %d outside the vocabulary (0..%d)", (int)ids[i],
                            c->vocab_size - 1);
    return 0;
}

/* The embeddings of the whole sequences into a->x, through layernorm_embedding and dropout,
 * keeping what the backward needs. */
static void embed_train(const model *m, decoder_acts *a, const int32_t *ids, int rows, int T,
                        const forward_mode *mode) {
    const model_config *c = &m->cfg;
    const int D = c->hidden_size, keep = mode->train;
    const size_t n = (size_t)rows * T * D, per = (size_t)T * D;
    if (c->opt.embed_norm) {
        float *sum = keep ? a->emb_in : a->x;
        embed_sum(m, 0, ids, rows, T, sum);
        layernorm_forward(a->x, keep ? a->emb_mean : NULL, keep ? a->emb_rstd : NULL, sum,
                          m->emb_ln_w, m->emb_ln_b, rows * T, D, c->layer_norm_eps);
    } else {
        embed_sum(m, 0, ids, rows, T, a->x);
    }
    if (a->drop <= 0.0f) return;
    const size_t total = (size_t)(mode->batch_total > 0 ? mode->batch_total : rows) * per;
    dropout_mask_part(a->emb_keep, n, a->drop, mode->rng, (size_t)mode->batch_first * per, total);
    dropout_forward(a->x, a->x, a->emb_keep, n, a->drop);
}

/* GPT-2's ln_f (kept for the backward when training), then the output projection. */
static void train_logits(const model *m, decoder_acts *a, int n, int keep, float *logits) {
    const model_config *c = &m->cfg;
    const int D = c->hidden_size;
    if (c->opt.final_norm) {
        if (keep) memcpy(a->out_in, a->x, sizeof(float) * (size_t)n * D);
        layernorm_forward(a->x, keep ? a->out_mean : NULL, keep ? a->out_rstd : NULL,
                          keep ? a->out_in : a->x, m->final_ln_w, m->final_ln_b, n, D,
                          c->layer_norm_eps);
    }
    linear_forward(logits, a->x, m->head_w, NULL, n, D, c->vocab_size);
}

int decoder_train_forward(const model *m, decoder_acts *a, const float *states, int S,
                          const int32_t *ids, int rows, int T, const forward_mode *mode,
                          float *logits, vit_error *err) {
    const model_config *c = &m->cfg;
    mode = forward_mode_or_inference(mode);
    if (check_train(c, a, ids, rows, T, S, mode, err) != 0) return -1;
    a->drop = mode->train ? mode->dropout : 0.0f;
    const encoder_run run = {.mode = mode->train ? ENCODER_TRAIN : ENCODER_INFER,
                             .gemm = a->gemm,
                             .hidden_drop = a->drop,
                             .rng = mode->rng,
                             .batch_first = mode->batch_first,
                             .batch_total = mode->batch_total};
    if (encoder_run_check(&m->enc, &run, &a->scratch, &a->tape) != 0)
        return vit_fail(err, "decoder buffers cannot run this mode");
    const float *cross = states;
    if (c->opt.enc_proj) { /* enc_to_dec_proj: the encoder's width to the decoder's */
        linear_forward(a->states, states, m->enc_proj_w, m->enc_proj_b, rows * S, c->encoder_hidden,
                       c->hidden_size);
        cross = a->states;
    }
    encoder_tape_cross_states(&a->tape, &m->enc, m->layers, cross, rows, S, 1);
    a->enc_states = states;
    a->rows = rows, a->T = T, a->S = S;
    memcpy(a->ids, ids, sizeof *ids * (size_t)rows * T);
    embed_train(m, a, ids, rows, T, mode);
    encoder_forward(&m->enc, m->layers, &run, &a->scratch, &a->tape, a->x, NULL, rows, T);
    train_logits(m, a, rows * T, mode->train, logits);
    return forward_logits_check(mode, logits, (size_t)rows * T * c->vocab_size, err);
}

/* d [rows, T, D], the gradient wrt the layers' input, back through dropout and
 * layernorm_embedding (scratch: the other gradient buffer), scattered into the token rows (x the
 * embedding scale) and the learned position rows (sinusoids have no gradient). */
static void embed_backward(const model *m, const model *g, decoder_acts *a, float *d,
                           float *scratch) {
    const model_config *c = &m->cfg;
    const int D = c->hidden_size, rows = a->rows, T = a->T;
    const size_t n = (size_t)rows * T * D;
    if (a->drop > 0.0f) dropout_backward(d, d, a->emb_keep, n, a->drop);
    if (c->opt.embed_norm) {
        memset(scratch, 0, n * sizeof *scratch);
        layernorm_backward(scratch, g->emb_ln_w, g->emb_ln_b, d, a->emb_in, a->emb_mean,
                           a->emb_rstd, m->emb_ln_w, rows * T, D);
        d = scratch;
    }
    const float scale = embed_scale(c);
    for (int r = 0; r < rows; r++)
        for (int t = 0; t < T; t++) {
            const int32_t *row = a->ids + (size_t)r * T;
            const float *dr = d + ((size_t)r * T + t) * D;
            float *tok = g->word_emb + (size_t)row[t] * D;
            for (int k = 0; k < D; k++) tok[k] += scale * dr[k];
            if (c->opt.sinusoidal) continue;
            float *pos = g->pos_emb + (size_t)position(c, 0, row, t) * D;
            for (int k = 0; k < D; k++) pos[k] += dr[k];
        }
}

void decoder_train_backward(const model *m, const model *g, decoder_acts *a, const float *dlogits,
                            float *dstates) {
    const model_config *c = &m->cfg;
    const int D = c->hidden_size, n = a->rows * a->T;
    float *d = a->dx, *other = a->dtmp;
    linear_backward(d, g->head_w, NULL, dlogits, a->x, m->head_w, n, D, c->vocab_size);
    if (c->opt.final_norm) {
        memset(other, 0, sizeof(float) * (size_t)n * D);
        layernorm_backward(other, g->final_ln_w, g->final_ln_b, d, a->out_in, a->out_mean,
                           a->out_rstd, m->final_ln_w, n, D);
        other = d, d = a->dtmp;
    }
    const encoder_run run = {.mode = ENCODER_TRAIN,
                             .hidden_drop = a->drop,
                             .d_cross_states = c->opt.enc_proj ? a->dstates : dstates};
    encoder_backward(&m->enc, m->layers, g->layers, &run, &a->tape, d, a->rows, a->T);
    if (c->opt.enc_proj)
        linear_backward(dstates, g->enc_proj_w, g->enc_proj_b, a->dstates, a->enc_states,
                        m->enc_proj_w, a->rows * a->S, c->encoder_hidden, D);
    embed_backward(m, g, a, d, other);
}
