#include "vit/model/mode.h"

#include <math.h>

const forward_mode *forward_mode_or_inference(const forward_mode *mode) {
    static const forward_mode inference = {0};
    return mode ? mode : &inference;
}

float forward_mode_classifier_dropout(const forward_mode *mode) {
    if (!mode->train) return 0.0f;
    return mode->classifier_dropout < 0.0f ? mode->dropout : mode->classifier_dropout;
}

int forward_mode_check(const forward_mode *mode, int training_buffers, vit_error *err) {
    if (!mode->train) return 0;
    if (!training_buffers) return vit_fail(err, "training forward on inference buffers");
    const float probs[] = {mode->dropout, mode->attention_dropout,
                           forward_mode_classifier_dropout(mode)};
    const char *names[] = {"dropout", "attention dropout", "classifier dropout"};
    for (int i = 0; i < 3; i++)
        if (!(probs[i] >= 0.0f && probs[i] < 1.0f))
            return vit_fail(err, "%s %g outside [0, 1)", names[i], probs[i]);
    const int encoder_drop = !mode->freeze_encoder && (probs[0] > 0.0f || probs[1] > 0.0f);
    if ((encoder_drop || probs[2] > 0.0f) && !mode->rng)
        return vit_fail(err, "dropout needs an rng state");
    return 0;
}

int forward_logits_check(const forward_mode *mode, const float *logits, size_t n, vit_error *err) {
    if (mode->train) return 0;
    for (size_t i = 0; i < n; i++)
        if (!isfinite(logits[i]))
            return vit_fail(err, "the forward pass gave a non-finite logit (NaN or Inf in the "
                                 "weights, or a matrix product that could not run)");
    return 0;
}
