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
    if (!a->block || encoder_acts_alloc(&a->enc, &m->enc, max_rows, max_len, 0) != 0 ||
        encoder_acts_alloc_cache(&a->enc, &m->enc, max_len, max_images, cross_tokens) != 0) {
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
    encoder_acts_free(&a->enc);
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
        if (m->enc_proj && a->enc.gemm)
            gemm_run(m->enc_proj, states, images * S, a->states, a->enc.gemm);
        else
            linear_forward(a->states, states, m->enc_proj_w, m->enc_proj_b, images * S,
                           c->encoder_hidden, c->hidden_size);
        cross = a->states;
    }
    encoder_cross_states(&m->enc, m->layers, &a->enc, cross, images, S, rows_per_image);
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

static void embed(const model *m, decoder_acts *a, const int32_t *ids, int rows, int T) {
    const model_config *c = &m->cfg;
    const int D = c->hidden_size, past = a->enc.past;
    const float scale = c->opt.scale_embedding ? sqrtf((float)D) : 1.0f;
    const float *table = c->opt.sinusoidal ? m->pos_table : m->pos_emb;
    for (int r = 0; r < rows; r++)
        for (int t = 0; t < T; t++) {
            const int32_t *row = ids + (size_t)r * T;
            float *x = a->x + ((size_t)r * T + t) * D;
            const float *tok = m->word_emb + (size_t)row[t] * D;
            const float *pos = table + (size_t)position(c, past, row, t) * D;
            for (int d = 0; d < D; d++) x[d] = tok[d] * scale + pos[d];
        }
    if (c->opt.embed_norm)
        layernorm_forward(a->x, NULL, NULL, a->x, m->emb_ln_w, m->emb_ln_b, rows * T, D,
                          c->layer_norm_eps);
}

static int check_ids(const model_config *c, const decoder_acts *a, const int32_t *ids, int rows,
                     int T, vit_error *err) {
    if (rows < 1 || rows > a->max_rows || T < 1)
        return vit_fail(err, "%d rows of %d tokens: outside 1..%d rows", rows, T, a->max_rows);
    if (a->enc.past + T > a->max_len)
        return vit_fail(err, "%d positions: more than the %d the decoder was given",
                        a->enc.past + T, a->max_len);
    if (a->enc.images < 1 ||
        (rows + a->enc.rows_per_image - 1) / a->enc.rows_per_image > a->enc.images)
        return vit_fail(err, "%d rows read more images than the %d set", rows, a->enc.images);
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
    if (m->head && a->enc.gemm)
        gemm_run(m->head, in, n, logits, a->enc.gemm);
    else
        linear_forward(logits, in, m->head_w, NULL, n, c->hidden_size, c->vocab_size);
}

int decoder_forward(const model *m, decoder_acts *a, const int32_t *ids, int rows, int T,
                    int all_positions, float *logits, vit_error *err) {
    const model_config *c = &m->cfg;
    const int D = c->hidden_size;
    if (check_ids(c, a, ids, rows, T, err) != 0) return -1;
    if (m->head && !a->enc.gemm) return vit_fail(err, "prepared layers run without a gemm_state");
    embed(m, a, ids, rows, T);
    encoder_forward(&m->enc, m->layers, &a->enc, a->x, NULL, rows, T);
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
    encoder_cache_reorder(&a->enc, parent, rows);
}

int decoder_past(const decoder_acts *a) {
    return a->enc.past;
}
