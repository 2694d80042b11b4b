#include "vit/encoder.h"

#include <stdlib.h>
#include <string.h>

#include "vit/ops.h"

int encoder_acts_alloc(encoder_acts *acts, const encoder_shape *s, int max_batch, int tokens,
                       int per_layer) {
    memset(acts, 0, sizeof *acts);
    size_t BT = (size_t)max_batch * tokens, D = (size_t)s->dim, I = (size_t)s->mlp_dim;
    size_t sizes[] = {
        BT * D,                                   /* layer_in */
        BT * D, BT, BT,                           /* ln1 */
        BT * 3 * D,                               /* qkv */
        (size_t)max_batch * s->heads * tokens * tokens, /* probs */
        BT * D, BT * D,                           /* ctx, mid */
        BT * D, BT, BT,                           /* ln2 */
        BT * I, BT * I,                           /* fc1_out, act_out */
        BT * D, BT * D,                           /* sum2, scratch */
    };
    float **fields[] = {&acts->layer_in, &acts->ln1_out, &acts->ln1_mean, &acts->ln1_rstd, &acts->qkv,
                        &acts->probs, &acts->ctx, &acts->mid, &acts->ln2_out, &acts->ln2_mean,
                        &acts->ln2_rstd, &acts->fc1_out, &acts->act_out, &acts->sum2, &acts->scratch};
    size_t total = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) total += (sizes[i] + 15) & ~(size_t)15;
    int sets = per_layer ? s->layers : 1;
    acts->block = aligned_alloc(64, total * sets * sizeof(float));
    if (!acts->block) return -1;
    size_t off = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        *fields[i] = acts->block + off;
        off += (sizes[i] + 15) & ~(size_t)15;
    }
    acts->per_layer = per_layer;
    acts->max_batch = max_batch;
    acts->tokens = tokens;
    acts->layers = s->layers;
    acts->layer_floats = total;
    return 0;
}

void encoder_acts_free(encoder_acts *acts) {
    free(acts->block);
    memset(acts, 0, sizeof *acts);
}

float *encoder_acts_layer(const encoder_acts *acts, float *field, int layer) {
    return acts->per_layer ? field + (size_t)layer * acts->layer_floats : field;
}

static void add_inplace(float *x, const float *y, size_t n) {
    const long long count = (long long)n;
#pragma omp parallel for simd if (count >= 32768) schedule(static)
    for (long long i = 0; i < count; i++) x[i] += y[i];
}

static void attention_block(const encoder_shape *s, const encoder_layer *w, encoder_acts *a, int l,
                            const float *inp, const uint8_t *mask, int B, int T) {
    const int D = s->dim, BT = B * T;
    float *qkv = encoder_acts_layer(a, a->qkv, l), *ctx = encoder_acts_layer(a, a->ctx, l);
    linear_forward(qkv, inp, w->qkv_w, w->qkv_b, BT, D, 3 * D);
    attention_forward(ctx, encoder_acts_layer(a, a->probs, l), qkv, mask, s->causal, B, T, D, s->heads);
    linear_forward(a->scratch, ctx, w->proj_w, w->proj_b, BT, D, D);
}

static void mlp_block(const encoder_shape *s, const encoder_layer *w, encoder_acts *a, int l,
                      const float *inp, int BT) {
    const int D = s->dim, I = s->mlp_dim;
    float *fc1 = encoder_acts_layer(a, a->fc1_out, l), *act = encoder_acts_layer(a, a->act_out, l);
    linear_forward(fc1, inp, w->fc1_w, w->fc1_b, BT, D, I);
    activation_forward(act, fc1, (size_t)BT * I, s->act);
    linear_forward(a->scratch, act, w->fc2_w, w->fc2_b, BT, I, D);
}

static void pre_norm_layer(const encoder_shape *s, const encoder_layer *w, encoder_acts *a, int l,
                           float *x, const uint8_t *mask, int B, int T) {
    const int D = s->dim, BT = B * T;
    const size_t n = (size_t)BT * D;
    float *ln1 = encoder_acts_layer(a, a->ln1_out, l), *ln2 = encoder_acts_layer(a, a->ln2_out, l);
    if (a->per_layer) memcpy(encoder_acts_layer(a, a->layer_in, l), x, n * sizeof *x);
    layernorm_forward(ln1, encoder_acts_layer(a, a->ln1_mean, l), encoder_acts_layer(a, a->ln1_rstd, l),
                      x, w->ln1_w, w->ln1_b, BT, D, s->eps);
    attention_block(s, w, a, l, ln1, mask, B, T);
    add_inplace(x, a->scratch, n);
    if (a->per_layer) memcpy(encoder_acts_layer(a, a->mid, l), x, n * sizeof *x);
    layernorm_forward(ln2, encoder_acts_layer(a, a->ln2_mean, l), encoder_acts_layer(a, a->ln2_rstd, l),
                      x, w->ln2_w, w->ln2_b, BT, D, s->eps);
    mlp_block(s, w, a, l, ln2, BT);
    add_inplace(x, a->scratch, n);
}

static void post_norm_layer(const encoder_shape *s, const encoder_layer *w, encoder_acts *a, int l,
                            float *x, const uint8_t *mask, int B, int T) {
    const int D = s->dim, BT = B * T;
    const size_t n = (size_t)BT * D;
    float *mid = encoder_acts_layer(a, a->mid, l), *sum2 = encoder_acts_layer(a, a->sum2, l);
    if (a->per_layer) memcpy(encoder_acts_layer(a, a->layer_in, l), x, n * sizeof *x);
    attention_block(s, w, a, l, x, mask, B, T);
    for (size_t i = 0; i < n; i++) mid[i] = x[i] + a->scratch[i];
    layernorm_forward(x, encoder_acts_layer(a, a->ln1_mean, l), encoder_acts_layer(a, a->ln1_rstd, l),
                      mid, w->ln1_w, w->ln1_b, BT, D, s->eps);
    if (a->per_layer) memcpy(encoder_acts_layer(a, a->ln1_out, l), x, n * sizeof *x);
    mlp_block(s, w, a, l, x, BT);
    for (size_t i = 0; i < n; i++) sum2[i] = x[i] + a->scratch[i];
    layernorm_forward(x, encoder_acts_layer(a, a->ln2_mean, l), encoder_acts_layer(a, a->ln2_rstd, l),
                      sum2, w->ln2_w, w->ln2_b, BT, D, s->eps);
}

void encoder_forward(const encoder_shape *s, const encoder_layer *layers, encoder_acts *a, float *x,
                     const uint8_t *key_mask, int B, int T) {
    for (int l = 0; l < s->layers; l++) {
        if (s->post_norm) post_norm_layer(s, &layers[l], a, l, x, key_mask, B, T);
        else pre_norm_layer(s, &layers[l], a, l, x, key_mask, B, T);
    }
}
