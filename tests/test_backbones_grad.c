/* The backward of the DINOv2 and BEiT parts against finite differences: tiny random models of each
 * kind through a training step (forward in training mode, cross-entropy, backward), every element
 * of every parameter tensor, as test_gradcheck does for ViT. What this adds to the encoder's own
 * checks (layer scale, SwiGLU, the attention bias: test_gradcheck): the register tokens (reached
 * through attention only), Dinov2ForImageClassification's head on [CLS, mean of the patches]
 * (registers left out of the mean), BEiT's mean pooling through pooler.layernorm, and the relative
 * position bias tables (per layer, and shared by every layer: the gradient of one bias gathered
 * back into the table entries it was read from). Tolerance GRADCHECK_TOL (testutil.h); the worst
 * measured is 2.5e-3. Also: a base model (no classifier) is refused for training. */
#include "tests/testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vit/core/ops.h"
#include "vit/model/vit_model.h"

enum { B = 3, K = 3, S = 8 }; /* batch, labels, image side */

typedef struct {
    model m;
    vit_acts a;
    model g;
    float *grads;
    float logits[B * K], probs[B * K], dlogits[B * K];
    float pixels[B * 3 * S * S];
    int labels[B];
} grad_case;

static void case_init(grad_case *c, const char *json) {
    model_config cfg;
    vit_error err = {0};
    if (model_config_parse(json, "tiny", &cfg, &err) != 0) fail_msg("%s", err.msg);
    if (model_create(&c->m, &cfg, &err) != 0) fail_msg("%s", err.msg);
    test_seed(7);
    for (int i = 0; i < c->m.num_entries; i++) {
        const param_entry *e = &c->m.entries[i];
        if (e->absent) continue;
        /* norm weights and layer scales near 1, everything else O(0.5) */
        const int near_one =
            (strstr(e->name, "norm") && strstr(e->name, "weight")) || strstr(e->name, "lambda");
        test_fill(c->m.params + e->offset, e->numel, near_one ? 0.7f : -0.5f,
                  near_one ? 1.3f : 0.5f);
    }
    test_fill(c->pixels, sizeof c->pixels / sizeof *c->pixels, -1, 1);
    for (int b = 0; b < B; b++) c->labels[b] = (b * 2 + 1) % K;
    c->grads = test_alloc_floats(c->m.num_params);
    if (model_bind(&c->g, &c->m, c->grads) != 0 ||
        vit_acts_alloc(&c->a, &c->m, B, 0, VIT_ACTS_TRAIN, &err) != 0)
        fail_msg("%s", err.msg);
}

static void case_free(grad_case *c) {
    vit_acts_free(&c->a);
    model_unbind(&c->g);
    free(c->grads);
    model_free(&c->m);
}

/* The training forward's loss, in double (what the differences take). */
static double forward_loss(void *p) {
    grad_case *c = p;
    vit_error err = {0};
    const forward_mode mode = {.train = 1};
    if (vit_model_forward(&c->m, &c->a, c->pixels, B, &mode, c->logits, &err) != 0)
        fail_msg("%s", err.msg);
    return crossentropy_forward(c->probs, c->logits, c->labels, B, K, 0.0f);
}

/* One training step without the update: the forward, cross-entropy, the backward (gradients
 * accumulate into c->grads). */
static void step(grad_case *c) {
    forward_loss(c);
    crossentropy_backward(c->dlogits, c->probs, c->labels, B, K, 0.0f, 1.0f);
    vit_model_backward(&c->m, &c->g, &c->a, c->dlogits);
}

/* Every live tensor: non-zero analytic gradient, and within GRADCHECK_TOL of the differences. */
static void check_all(grad_case *c, const char *what, const char *const *must_have) {
    const model *m = &c->m;
    float *analytic = test_alloc_floats(m->num_params);
    memset(c->grads, 0, m->num_params * sizeof(float));
    step(c);
    memcpy(analytic, c->grads, m->num_params * sizeof(float));
    print_message(" %s\n", what);
    for (const char *const *name = must_have; *name; name++)
        if (!model_find_param(m, *name)) fail_msg("%s: no tensor %s", what, *name);
    for (int i = 0; i < m->num_entries; i++) {
        const param_entry *e = &m->entries[i];
        if (e->absent) continue;
        double norm = 0.0, max_grad;
        for (size_t j = 0; j < e->numel; j++) norm += fabs(analytic[e->offset + j]);
        if (!(norm > 0.0)) fail_msg("%s: zero gradient", e->name);
        const double err = gradcheck_tensor(m->params + e->offset, analytic + e->offset, e->numel,
                                            forward_loss, c, &max_grad);
        print_message("  %-66s %.2e\n", e->name, err);
        if (!(err <= GRADCHECK_TOL))
            fail_msg("%s: max relative error %.3g above %g", e->name, err, GRADCHECK_TOL);
    }
    free(analytic);
}

#define TINY                                                                                       \
    "\"image_size\": 8, \"patch_size\": 4, \"hidden_size\": 8, \"num_hidden_layers\": 2, "         \
    "\"num_attention_heads\": 2, \"num_labels\": 3"

static void test_dinov2_registers(void **state) {
    (void)state;
    grad_case c = {0};
    case_init(&c, "{\"model_type\": \"dinov2_with_registers\", " TINY
                  ", \"num_register_tokens\": 2, \"mlp_ratio\": 2,"
                  " \"architectures\": [\"Dinov2WithRegistersForImageClassification\"]}");
    const char *const want[] = {"embeddings.register_tokens",
                                "encoder.layer.0.layer_scale1.lambda1", NULL};
    assert_int_equal(c.a.tokens, 1 + 2 + 4);
    check_all(&c, "Dinov2WithRegisters, 2 registers, CLS + patch-mean classifier", want);
    case_free(&c);
}

static void test_dinov2_swiglu(void **state) {
    (void)state;
    grad_case c = {0};
    case_init(&c, "{\"model_type\": \"dinov2\", " TINY ", \"use_swiglu_ffn\": true,"
                  " \"architectures\": [\"Dinov2ForImageClassification\"]}");
    const char *const want[] = {"encoder.layer.1.mlp.weights_in.weight", NULL};
    check_all(&c, "Dinov2 with SwiGLU (weights_in [48, 8])", want);
    case_free(&c);
}

static void test_beit_layer_bias_mean_pooling(void **state) {
    (void)state;
    grad_case c = {0};
    case_init(&c, "{\"model_type\": \"beit\", " TINY ", \"intermediate_size\": 16,"
                  " \"use_relative_position_bias\": true, \"use_absolute_position_embeddings\":"
                  " true, \"architectures\": [\"BeitForImageClassification\"]}");
    const char *const want[] = {
        "encoder.layer.1.attention.attention.relative_position_bias.relative_position_bias_table",
        "pooler.layernorm.weight", "encoder.layer.0.lambda_2", NULL};
    check_all(&c, "BEiT, a relative bias per layer, layer scale, mean pooling", want);
    case_free(&c);
}

static void test_beit_shared_bias_cls(void **state) {
    (void)state;
    grad_case c = {0};
    case_init(&c, "{\"model_type\": \"data2vec-vision\", " TINY ", \"intermediate_size\": 16,"
                  " \"use_shared_relative_position_bias\": true, \"use_relative_position_bias\":"
                  " true, \"use_mean_pooling\": false, \"layer_scale_init_value\": 0,"
                  " \"architectures\": [\"Data2VecVisionForImageClassification\"]}");
    const char *const want[] = {"encoder.relative_position_bias.relative_position_bias_table",
                                "layernorm.weight", NULL};
    check_all(&c, "data2vec-vision, shared and per-layer biases, CLS pooling, no layer scale",
              want);
    case_free(&c);
}

/* A base model has no classifier to train; its inference runs. */
static void test_base_model_not_trained(void **state) {
    (void)state;
    model_config cfg;
    model m;
    vit_acts a;
    vit_error err = {0};
    if (model_config_parse("{\"model_type\": \"dinov2\", " TINY "}", "tiny", &cfg, &err) != 0 ||
        model_create(&m, &cfg, &err) != 0)
        fail_msg("%s", err.msg);
    assert_int_equal(vit_acts_alloc(&a, &m, 2, 0, VIT_ACTS_TRAIN, &err), -1);
    print_message("  %s\n", err.msg);
    assert_non_null(strstr(err.msg, "Dinov2Model has no classifier"));
    assert_int_equal(vit_acts_alloc(&a, &m, 2, 0, VIT_ACTS_INFER, &err), 0);
    vit_acts_free(&a);
    model_free(&m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dinov2_registers),
        cmocka_unit_test(test_dinov2_swiglu),
        cmocka_unit_test(test_beit_layer_bias_mean_pooling),
        cmocka_unit_test(test_beit_shared_bias_cls),
        cmocka_unit_test(test_base_model_not_trained),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
