/* Training a VisionEncoderDecoder (teacher forcing): the token cross-entropy against a hand
 * computation, HF's shift_tokens_right by hand, and the whole backward (output projection, tied or
 * not, GPT-2's ln_f, the decoder's layers with cross-attention, TrOCR's layernorm_embedding and
 * embedding scale, learned positions, the token embeddings, enc_to_dec_proj, the encoder's final
 * LayerNorm on every row, its layers and the patch embedding) of the three micro models
 * (tests/data/ved-*: tools/ved_reference.py):
 *
 *   - every parameter tensor of encoder and decoder against five-point finite differences of the
 *     loss (testutil.h: gradcheck_tensor, GRADCHECK_TOL; test_gradcheck.c explains the stencil,
 *     the steps and the error measure): the whole tensor up to 64 elements, else 48 elements
 *     spread over it, plus the rows of the token and position tables the batch reads; one model
 *     with dropout 0.1 (masks drawn from a fixed state at every evaluation), with label smoothing;
 *   - the loss (plain and smoothed) and sampled gradients of every tensor against a float64
 *     PyTorch autograd run of tools/ved_reference.py's forward (tools/ved_train_reference.py:
 *     train-golden.safetensors: up to 24 elements of every tensor, and the rows of the tables
 *     the batch reads). Tolerance: the loss to 1e-5 relative; a gradient element to 4e-5 of the
 *     largest sampled gradient of its tensor + 4e-4 of its own size + 1e-6 (float32 against
 *     float64: the worst we measure is 0.04 of that; a wrong part is off by far more, e.g. the
 *     embedding scale left out of the token rows' gradient: 0.0006 for 0.032);
 *   - the training forwards (keeping everything, and in eval mode) against the float64 goldens of
 *     tools/ved_reference.py: encoder states and logits within 1e-4, as test_ved. */
#include "tests/testutil.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vit/core/ops.h"
#include "vit/io/model_dir.h"
#include "vit/model/decoder_model.h"
#include "vit/model/vit_model.h"

#define B         3 /* sequences, one image each */
#define T         7 /* decoder positions */
#define SMOOTHING 0.1f

static const char *const models[] = {TEST_DATA "/ved-trocr-vit", TEST_DATA "/ved-trocr-sin-deit",
                                     TEST_DATA "/ved-gpt2-vit"};

/* ---- the loss ---- */

static double plain_xent(const float *z, int y, int V, double eps) {
    double max = z[0], sum = 0.0, mean = 0.0;
    for (int j = 1; j < V; j++) max = fmax(max, z[j]);
    for (int j = 0; j < V; j++) sum += exp(z[j] - max), mean += z[j] / (double)V;
    const double lse = max + log(sum);
    return (1 - eps) * (lse - z[y]) + eps * (lse - mean);
}

typedef struct {
    float logits[4 * 5], probs[4 * 5];
    int labels[4];
    float eps;
} xent_case;

static double xent_loss(void *p) {
    xent_case *c = p;
    int counted;
    return token_crossentropy_forward(c->probs, c->logits, c->labels, 4, 5, c->eps, &counted, NULL);
}

/* Rows 1 and 3 ignored: the mean over rows 0 and 2 by hand; the gradient by finite differences,
 * zero on the ignored rows; the hits. */
static void test_token_crossentropy(void **state) {
    (void)state;
    xent_case c = {.labels = {3, -100, 0, -100}, .eps = SMOOTHING};
    test_fill(c.logits, 20, -3, 3);
    c.logits[10 + 4] = 5; /* row 2's largest is 4, not its label: a miss; row 0 by chance */
    int counted, hits, best0 = 0;
    for (int j = 1; j < 5; j++) best0 = c.logits[j] > c.logits[best0] ? j : best0;
    const double want =
        (plain_xent(c.logits, 3, 5, c.eps) + plain_xent(c.logits + 10, 0, 5, c.eps)) / 2;
    const double got =
        token_crossentropy_forward(c.probs, c.logits, c.labels, 4, 5, c.eps, &counted, &hits);
    assert_int_equal(counted, 2);
    assert_int_equal(hits, best0 == 3);
    assert_true(fabs(got - want) < 1e-6);
    float grad[20];
    token_crossentropy_backward(grad, c.probs, c.labels, 4, 5, c.eps, 1.0f, counted);
    for (int j = 0; j < 5; j++) assert_true(grad[5 + j] == 0.0f && grad[15 + j] == 0.0f);
    double max_grad;
    assert_true(gradcheck_tensor(c.logits, grad, 20, xent_loss, &c, &max_grad) <= GRADCHECK_TOL);
    /* in place: the softmax over the logits, the gradient over the softmax */
    float z[20];
    memcpy(z, c.logits, sizeof z);
    token_crossentropy_forward(z, z, c.labels, 4, 5, c.eps, &counted, NULL);
    token_crossentropy_backward(z, z, c.labels, 4, 5, c.eps, 1.0f, counted);
    for (int i = 0; i < 20; i++) assert_true(fabs(z[i] - grad[i]) < 1e-7);
    int none[4] = {-100, -100, -100, -100};
    assert_true(token_crossentropy_forward(c.probs, c.logits, none, 4, 5, 0, &counted, NULL) == 0);
    assert_int_equal(counted, 0);
}

/* shift_tokens_right: start, the labels one place on, -100 -> pad. */
static void test_shift_right(void **state) {
    (void)state;
    model_config c = {.start_token_id = 2, .shift_pad_id = 1};
    const int labels[2 * 4] = {7, 8, 9, 2, 5, 2, -100, -100};
    int32_t ids[8];
    decoder_shift_right(&c, labels, 2, 4, ids);
    const int32_t want[8] = {2, 7, 8, 9, 2, 5, 2, 1};
    assert_memory_equal(ids, want, sizeof want);
}

/* ---- one micro model in training ---- */

typedef struct {
    model enc, dec, genc, gdec; /* the towers and their gradient views */
    float *enc_grads, *dec_grads;
    vit_acts va;
    decoder_acts da;
    int S, V, De;
    float *pixels, *logits, *dstates;
    int labels[B * T];
    int32_t ids[B * T];
    float dropout;
    uint64_t rng;
} ved_case;

static void load(const char *dir, config_tower tower, model *m) {
    vit_error err = {0};
    if (model_load_tower(m, dir, tower, &err) != 0) fail_msg("%s", err.msg);
}

static void bind_grads(model *view, const model *m, float **block) {
    *block = test_alloc_floats(m->num_params);
    assert_int_equal(model_bind(view, m, *block), 0);
}

/* The golden images' pixels and tools/ved_train_reference.py's labels. */
static void case_data(ved_case *c, const char *dir) {
    static const char *const images[B] = {"rgb_64x48.png", "tall_40x400.jpg", "palette_120x90.png"};
    const size_t F = (size_t)3 * c->enc.cfg.image_size * c->enc.cfg.image_size;
    c->pixels = test_alloc_floats(B * F);
    for (int i = 0; i < B; i++) {
        char name[96];
        snprintf(name, sizeof name, "image/%s/pixels", images[i]);
        float *p = test_golden_tensor(dir, name, NULL);
        memcpy(c->pixels + i * F, p, F * sizeof *p);
        free(p);
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/train-golden.safetensors", dir);
    size_t n;
    float *labels = test_read_tensor(path, "labels", &n);
    assert_non_null(labels);
    assert_int_equal(n, B * T);
    for (int i = 0; i < B * T; i++) c->labels[i] = (int)labels[i];
    free(labels);
    decoder_shift_right(&c->dec.cfg, c->labels, B, T, c->ids);
}

static void case_open(ved_case *c, const char *dir, float dropout) {
    memset(c, 0, sizeof *c);
    load(dir, TOWER_IMAGE, &c->enc);
    load(dir, TOWER_TEXT, &c->dec);
    bind_grads(&c->genc, &c->enc, &c->enc_grads);
    bind_grads(&c->gdec, &c->dec, &c->dec_grads);
    vit_error err = {0};
    if (vit_acts_alloc(&c->va, &c->enc, B, 0, VIT_ACTS_TRAIN, &err) != 0) fail_msg("%s", err.msg);
    c->S = c->va.tokens;
    c->V = c->dec.cfg.vocab_size;
    c->De = c->enc.cfg.hidden_size;
    if (decoder_acts_alloc_train(&c->da, &c->dec, B, T, c->S, &err) != 0) fail_msg("%s", err.msg);
    c->logits = test_alloc_floats((size_t)B * T * c->V);
    c->dstates = test_alloc_floats((size_t)B * c->S * c->De);
    c->dropout = dropout;
    case_data(c, dir);
}

static void case_close(ved_case *c) {
    vit_acts_free(&c->va);
    decoder_acts_free(&c->da);
    model_unbind(&c->genc), model_unbind(&c->gdec);
    free(c->enc_grads), free(c->dec_grads), free(c->pixels), free(c->logits), free(c->dstates);
    model_free(&c->enc), model_free(&c->dec);
}

/* The token loss of the batch with label smoothing eps, every activation kept; the same dropout
 * masks at every call (the generator restarts). The logits become probabilities. */
static double case_loss_eps(ved_case *c, float eps) {
    c->rng = 99;
    const forward_mode mode = {.train = 1, .dropout = c->dropout, .rng = &c->rng};
    vit_error err = {0};
    if (vit_model_forward(&c->enc, &c->va, c->pixels, B, &mode, NULL, &err) != 0 ||
        decoder_train_forward(&c->dec, &c->da, vit_acts_hidden(&c->va), c->S, c->ids, B, T, &mode,
                              c->logits, &err) != 0)
        fail_msg("%s", err.msg);
    int counted;
    return token_crossentropy_forward(c->logits, c->logits, c->labels, B * T, c->V, eps, &counted,
                                      NULL);
}

static double case_loss(void *p) {
    return case_loss_eps(p, SMOOTHING);
}

/* The analytic gradients of case_loss into the gradient blocks. */
static void case_backward(ved_case *c) {
    memset(c->enc_grads, 0, c->enc.num_params * sizeof(float));
    memset(c->dec_grads, 0, c->dec.num_params * sizeof(float));
    case_loss(c);
    int counted = 0;
    for (int i = 0; i < B * T; i++) counted += c->labels[i] >= 0;
    token_crossentropy_backward(c->logits, c->logits, c->labels, B * T, c->V, SMOOTHING, 1.0f,
                                counted);
    decoder_train_backward(&c->dec, &c->gdec, &c->da, c->logits, c->dstates);
    vit_model_backward(&c->enc, &c->genc, &c->va, c->dstates);
}

/* ---- finite differences ---- */

/* Whether element i of entry e is checked: all of a small tensor, 48 spread over a large one,
 * and the token and position table rows the batch reads (ids[0][0], ids[0][1]; positions 0 and
 * T - 1 after the model's offset). */
static int sampled(const ved_case *c, const model *m, const param_entry *e, size_t i) {
    if (e->numel <= 64 || i % (e->numel / 48) == (e->numel / 48) / 3) return 1;
    const size_t D = (size_t)m->cfg.hidden_size, row = i / D;
    const float *at = m->params + e->offset;
    if (m->cfg.kind != MODEL_DECODER) return 0;
    if (at == m->word_emb) return row == (size_t)c->ids[0] || row == (size_t)c->ids[1];
    if (at == m->pos_emb)
        return row == (size_t)m->cfg.opt.pos_offset ||
               row == (size_t)(m->cfg.opt.pos_offset + T - 1);
    return 0;
}

static double check_entry(ved_case *c, const model *m, const float *grads, const param_entry *e,
                          double *max_grad) {
    double worst = 0.0, mg;
    *max_grad = 0.0;
    for (size_t i = 0; i < e->numel; i++) {
        if (!sampled(c, m, e, i)) continue;
        const double err = gradcheck_tensor(m->params + e->offset + i, grads + e->offset + i, 1,
                                            case_loss, c, &mg);
        worst = fmax(worst, err), *max_grad = fmax(*max_grad, mg);
    }
    return worst;
}

static void check_model(ved_case *c, const model *m, const float *grads) {
    for (int k = 0; k < m->num_entries; k++) {
        const param_entry *e = &m->entries[k];
        if (e->absent) continue;
        double max_grad;
        const double err = check_entry(c, m, grads, e, &max_grad);
        const char *prefix = e->prefixed ? model_prefix(m) : "";
        print_message("  %s%-*s max rel err %.2e  (max |g| %.2e)\n", prefix,
                      60 - (int)strlen(prefix), e->name, err, max_grad);
        if (!(err <= GRADCHECK_TOL))
            fail_msg("%s%s: max relative error %.3g above %g", prefix, e->name, err, GRADCHECK_TOL);
        if (!(max_grad > 0)) fail_msg("%s%s: no gradient at all", prefix, e->name);
    }
}

/* A ReLU decoder runs with GELU here: the stencil's steps cross ReLU kinks (every decoder row
 * depends on an encoder weight), which makes the numeric derivative meaningless at any step; ReLU's
 * own backward is checked by test_gradcheck and, in this model, against PyTorch below. */
static void gradcheck_model(const char *dir, float dropout) {
    ved_case c;
    case_open(&c, dir, dropout);
    const int relu = c.dec.enc.act == ACT_RELU;
    if (relu) c.dec.enc.act = ACT_GELU;
    case_backward(&c);
    print_message(" %s, dropout %g, label smoothing %g%s\n", dir, dropout, SMOOTHING,
                  relu ? ", the decoder's ReLU as GELU" : "");
    check_model(&c, &c.enc, c.enc_grads);
    check_model(&c, &c.dec, c.dec_grads);
    case_close(&c);
}

static void test_gradcheck_trocr_vit(void **state) {
    (void)state;
    gradcheck_model(models[0], 0.0f);
}
static void test_gradcheck_trocr_sin_deit(void **state) {
    (void)state;
    gradcheck_model(models[1], 0.0f);
}
static void test_gradcheck_gpt2_vit_dropout(void **state) {
    (void)state;
    gradcheck_model(models[2], 0.1f);
}

/* ---- against PyTorch autograd in float64 ---- */

/* Our element of file index i: GPT-2's Conv1D weights are stored [in, out], ours [out, in]. */
static size_t our_index(const param_entry *e, size_t i) {
    if (!e->transposed) return i;
    const size_t out = (size_t)e->shape[0], in = (size_t)e->shape[1];
    return (i % out) * in + i / out;
}

static void compare_entry(const char *path, const model *m, const float *grads,
                          const param_entry *e, double *worst) {
    char name[300];
    snprintf(name, sizeof name, "%s%s", e->prefixed ? model_prefix(m) : "", e->name);
    char key[320];
    size_t n, k;
    snprintf(key, sizeof key, "index/%s", name);
    float *index = test_read_tensor(path, key, &n);
    snprintf(key, sizeof key, "grad/%s", name);
    float *want = test_read_tensor(path, key, &k);
    if (!index || !want || n != k) fail_msg("%s: no gradient sample of %s", path, name);
    double scale = 0.0;
    for (size_t j = 0; j < n; j++) scale = fmax(scale, fabs(want[j]));
    for (size_t j = 0; j < n; j++) {
        const double got = grads[e->offset + our_index(e, (size_t)index[j])];
        const double err = fabs(got - want[j]) / (4e-5 * scale + 4e-4 * fabs(want[j]) + 1e-6);
        *worst = fmax(*worst, err);
        if (!(err <= 1.0))
            fail_msg("%s[%zu]: %.8g, PyTorch %.8g (largest sampled |g| %.3g)", name,
                     (size_t)index[j], got, want[j], scale);
    }
    free(index), free(want);
}

static void against_torch(const char *dir) {
    ved_case c;
    case_open(&c, dir, 0.0f);
    char path[4096];
    snprintf(path, sizeof path, "%s/train-golden.safetensors", dir);
    float *loss = test_read_tensor(path, "loss_smooth", NULL),
          *plain = test_read_tensor(path, "loss", NULL);
    assert_non_null(loss), assert_non_null(plain);
    const double got = case_loss_eps(&c, SMOOTHING), got_plain = case_loss_eps(&c, 0.0f);
    print_message(" %s: loss %.7f, smoothed %.7f (PyTorch %.7f, %.7f)\n", dir, got_plain, got,
                  plain[0], loss[0]);
    assert_true(fabs(got - loss[0]) <= 1e-5 * fabs(loss[0]));
    assert_true(fabs(got_plain - plain[0]) <= 1e-5 * fabs(plain[0]));
    case_backward(&c);
    double worst = 0.0;
    const model *towers[2] = {&c.enc, &c.dec};
    const float *blocks[2] = {c.enc_grads, c.dec_grads};
    for (int t = 0; t < 2; t++)
        for (int k = 0; k < towers[t]->num_entries; k++)
            if (!towers[t]->entries[k].absent)
                compare_entry(path, towers[t], blocks[t], &towers[t]->entries[k], &worst);
    print_message("   gradients: worst error %.3f of the tolerance\n", worst);
    free(loss), free(plain);
    case_close(&c);
}

static void test_against_torch(void **state) {
    (void)state;
    for (size_t k = 0; k < sizeof models / sizeof models[0]; k++) against_torch(models[k]);
}

/* ---- the training forward against the float64 goldens ---- */

static void expect_near(const char *what, const float *got, const float *want, size_t n) {
    double worst = 0;
    for (size_t i = 0; i < n; i++) worst = fmax(worst, fabs((double)got[i] - want[i]));
    if (!(worst <= 1e-4)) fail_msg("%s: max |difference| %.3g, more than 1e-4", what, worst);
}

/* The golden decoder input on the three golden images through the training forwards (keeping
 * everything, and in eval mode): the encoder's states and the logits of tools/ved_reference.py. */
static void forward_goldens(const char *dir, const forward_mode *mode) {
    static const char *const images[B] = {"rgb_64x48.png", "tall_40x400.jpg", "palette_120x90.png"};
    ved_case c;
    case_open(&c, dir, 0.0f);
    float *ids = test_golden_tensor(dir, "decoder_input_ids", NULL);
    int32_t rows[B * (T + 1)];
    for (int i = 0; i < B * (T + 1); i++) rows[i] = (int32_t)ids[i % (T + 1)];
    free(ids);
    decoder_acts da;
    vit_error err = {0};
    float *logits = test_alloc_floats((size_t)B * (T + 1) * c.V);
    if (decoder_acts_alloc_train(&da, &c.dec, B, T + 1, c.S, &err) != 0 ||
        vit_model_forward(&c.enc, &c.va, c.pixels, B, mode, NULL, &err) != 0 ||
        decoder_train_forward(&c.dec, &da, vit_acts_hidden(&c.va), c.S, rows, B, T + 1, mode,
                              logits, &err) != 0)
        fail_msg("%s", err.msg);
    const size_t SD = (size_t)c.S * c.De, TV = (size_t)(T + 1) * c.V;
    for (int i = 0; i < B; i++) {
        char name[96];
        snprintf(name, sizeof name, "image/%s/encoder", images[i]);
        float *want = test_golden_tensor(dir, name, NULL);
        expect_near("encoder states", vit_acts_hidden(&c.va) + i * SD, want, SD);
        free(want);
        snprintf(name, sizeof name, "image/%s/logits", images[i]);
        want = test_golden_tensor(dir, name, NULL);
        expect_near("logits", logits + i * TV, want, TV);
        free(want);
    }
    free(logits);
    decoder_acts_free(&da);
    case_close(&c);
}

static void test_forward_goldens(void **state) {
    (void)state;
    uint64_t rng = 1;
    const forward_mode keep = {.train = 1, .rng = &rng};
    for (size_t k = 0; k < sizeof models / sizeof models[0]; k++) {
        forward_goldens(models[k], &keep);
        forward_goldens(models[k], NULL);
    }
}

int main(void) {
    /* micro models: on one thread the thousands of forwards are fastest, and undisturbed by the
     * other processes on the machine (a team's barriers wait on them) */
    omp_set_num_threads(1);
    ops_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_token_crossentropy),
        cmocka_unit_test(test_shift_right),
        cmocka_unit_test(test_forward_goldens),
        cmocka_unit_test(test_against_torch),
        cmocka_unit_test(test_gradcheck_trocr_vit),
        cmocka_unit_test(test_gradcheck_trocr_sin_deit),
        cmocka_unit_test(test_gradcheck_gpt2_vit_dropout),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
