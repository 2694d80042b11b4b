/* repetition_penalty and exponential_decay_length_penalty (transformers' RepetitionPenalty-
 * LogitsProcessor and ExponentialDecayLengthPenalty, in _get_logits_processor's order) on
 * hand-computed logits, the odd float32 roundings against torch's own results, and generation
 * stopping where the hand computation says. */
#include "tests/testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vit/gen/generate.h"
#include "vit/gen/plan.h"

static gen_plan plan_of(const char *json, int vocab) {
    gen_config c = gen_config_default();
    vit_error err = {0};
    if (gen_config_read(json, "generation_config.json", &c, &err) != 0) fail_msg("%s", err.msg);
    gen_plan p;
    if (gen_plan_make(&c, 1, vocab, &p, &err) != 0) fail_msg("%s", err.msg);
    return p;
}

/* Each id the row holds, once however often it occurs, divided by the penalty, or multiplied
 * when negative; the start token counts (it is in input_ids). */
static void test_repetition_hand_computed(void **state) {
    (void)state;
    gen_plan p = plan_of("{\"decoder_start_token_id\": 0, \"eos_token_id\": 4, "
                         "\"repetition_penalty\": 2.0}",
                         5);
    float x[5] = {2.0f, -1.0f, 0.5f, 3.0f, -0.25f};
    const int32_t seq[4] = {0, 1, 1, 3};
    assert_int_equal(gen_process(&p, x, seq, 4), 0);
    const float want[5] = {1.0f, -2.0f, 0.5f, 1.5f, -0.25f}; /* 1 seen twice: -1 * 2 once */
    for (int i = 0; i < 5; i++) assert_true(x[i] == want[i]);
    /* 1.1: torch computes float32(0.7) / float32(1.1) and float32(-0.3) * float32(1.1) */
    p = plan_of("{\"decoder_start_token_id\": 0, \"repetition_penalty\": 1.1}", 2);
    float y[2] = {0.7f, -0.3f};
    const int32_t both[2] = {0, 1};
    gen_process(&p, y, both, 2);
    assert_true(y[0] == (float)0x1.45d174p-1);  /* torch.tensor([0.7]) / 1.1 */
    assert_true(y[1] == (float)-0x1.51eb86p-2); /* torch.tensor([-0.3]) * 1.1 */
}

/* Past start_index + 1 (the one-token prompt) ids, each eos score + |score| (f^k - 1). */
static void test_decay_hand_computed(void **state) {
    (void)state;
    gen_plan p = plan_of("{\"decoder_start_token_id\": 0, \"eos_token_id\": 1, "
                         "\"exponential_decay_length_penalty\": [2, 1.5]}",
                         3);
    const int32_t seq[6] = {0, 2, 2, 2, 2, 2};
    float x[3] = {0.5f, -2.0f, 1.0f};
    gen_process(&p, x, seq, 3); /* len 3 is the start (2 + 1): nothing yet */
    assert_true(x[1] == -2.0f);
    gen_process(&p, x, seq, 5); /* k = 2: 1.5^2 - 1 = 1.25; -2 + 2 * 1.25 */
    assert_true(x[1] == 0.5f);
    assert_true(x[0] == 0.5f && x[2] == 1.0f);
    float y[3] = {0.0f, 4.0f, 0.0f};
    gen_process(&p, y, seq, 5); /* 4 + 4 * 1.25 */
    assert_true(y[1] == 9.0f);
    /* torch: s = tensor([-2.5]); s + abs(s) * (pow(1.3, 3) - 1) */
    p = plan_of("{\"decoder_start_token_id\": 0, \"eos_token_id\": 1, "
                "\"exponential_decay_length_penalty\": [0, 1.3]}",
                3);
    float z[3] = {0.0f, -2.5f, 0.0f};
    gen_process(&p, z, seq, 4);
    assert_true(z[1] == (float)0x1.f851fp-2);
    /* both, in transformers' order: the repetition penalty first, the decay last */
    p = plan_of("{\"decoder_start_token_id\": 0, \"eos_token_id\": 1, \"repetition_penalty\": 2, "
                "\"exponential_decay_length_penalty\": [2, 1.5]}",
                3);
    const int32_t with_eos[5] = {0, 1, 2, 2, 2};
    float w[3] = {0.0f, -1.0f, 0.0f};
    gen_process(&p, w, with_eos, 5); /* -1 * 2 = -2, then -2 + 2 * 1.25 */
    assert_true(w[1] == 0.5f);
}

/* A model whose logits are the same at every step. */
static int constant_logits(void *model, int step, const int *parent, const int32_t *tokens,
                           int rows, float *logits, vit_error *err) {
    (void)step, (void)parent, (void)tokens, (void)err;
    const float *row = model;
    for (int r = 0; r < rows; r++) memcpy(logits + (size_t)r * 5, row, 5 * sizeof(float));
    return 0;
}

static void generate(const char *json, int beams, const int32_t *want, int n) {
    gen_config c = gen_config_default();
    vit_error err = {0};
    if (gen_config_read(json, "generation_config.json", &c, &err) != 0) fail_msg("%s", err.msg);
    c.num_beams = beams;
    float logits[5] = {0.5f, 1.0f, 3.0f, 2.9f, -2.0f};
    gen_sequence out;
    if (gen_run(&c, 1, 5, constant_logits, logits, &out, &err) != 0) fail_msg("%s", err.msg);
    char got[128] = "";
    for (int i = 0; i < out.length; i++)
        snprintf(got + strlen(got), sizeof got - strlen(got), " %d", out.ids[i]);
    print_message("  %s, %d beam(s):%s\n", json, beams, got);
    assert_int_equal(out.length, n);
    for (int i = 0; i < n; i++) assert_int_equal(out.ids[i], want[i]);
    gen_sequences_free(&out, 1);
}

/* Greedy on logits [0.5, 1, 3, 2.9, -2] (eos 1): without penalties 2 forever; with
 * repetition_penalty 1.5 the held 2 drops to 2 and 3 wins once, then 2 (2.0 > 2.9 / 1.5); with
 * exponential_decay_length_penalty [1, 2] eos gains 1 · (2^k - 1): 2 at length 3, 4 > 3 at length
 * 4, where it stops. */
static void test_generation_stops(void **state) {
    (void)state;
    static const int32_t plain[6] = {0, 2, 2, 2, 2, 2}, rep[6] = {0, 2, 3, 2, 2, 2},
                         decay[5] = {0, 2, 2, 2, 1};
    const char *base = "{\"decoder_start_token_id\": 0, \"eos_token_id\": 1, \"max_length\": 6";
    char json[256];
    snprintf(json, sizeof json, "%s}", base);
    generate(json, 1, plain, 6);
    snprintf(json, sizeof json, "%s, \"repetition_penalty\": 1.5}", base);
    generate(json, 1, rep, 6);
    snprintf(json, sizeof json, "%s, \"exponential_decay_length_penalty\": [1, 2.0]}", base);
    generate(json, 1, decay, 5);
}

static void expect_refused(const char *json, const char *what) {
    gen_config c = gen_config_default(), before = c;
    vit_error err = {0};
    assert_int_equal(gen_config_read(json, "m/generation_config.json", &c, &err), -1);
    print_message("  %s\n", err.msg);
    assert_non_null(strstr(err.msg, "m/generation_config.json"));
    if (!strstr(err.msg, what)) fail_msg("'%s' does not say '%s'", err.msg, what);
    assert_memory_equal(&c, &before, sizeof c);
}

static void test_config(void **state) {
    (void)state;
    gen_config c = gen_config_default();
    vit_error err = {0};
    assert_true(c.repetition_penalty == 1.0 && c.decay_start == -1);
    assert_int_equal(gen_config_read("{\"repetition_penalty\": 1.3, "
                                     "\"exponential_decay_length_penalty\": [12, 1.05]}",
                                     "g", &c, &err),
                     0);
    assert_true(c.repetition_penalty == 1.3 && c.decay_start == 12 && c.decay_factor == 1.05);
    assert_int_equal(gen_config_read("{\"repetition_penalty\": null, "
                                     "\"exponential_decay_length_penalty\": null}",
                                     "g", &c, &err),
                     0);
    assert_true(c.repetition_penalty == 1.0 && c.decay_start == -1);
    expect_refused("{\"repetition_penalty\": 0}", "'repetition_penalty' must be a positive");
    expect_refused("{\"repetition_penalty\": -1.2}", "'repetition_penalty'");
    expect_refused("{\"repetition_penalty\": \"1.2\"}", "'repetition_penalty'");
    expect_refused("{\"exponential_decay_length_penalty\": [3]}",
                   "'exponential_decay_length_penalty' must be [start_index, decay_factor]");
    expect_refused("{\"exponential_decay_length_penalty\": [1.5, 2]}",
                   "'exponential_decay_length_penalty'");
    expect_refused("{\"exponential_decay_length_penalty\": 3}",
                   "'exponential_decay_length_penalty'");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_repetition_hand_computed),
        cmocka_unit_test(test_decay_hand_computed),
        cmocka_unit_test(test_generation_stops),
        cmocka_unit_test(test_config),
    };
    return cmocka_run_group_tests_name("gen_penalties", tests, NULL, NULL);
}
