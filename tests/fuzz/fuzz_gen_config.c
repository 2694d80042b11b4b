/* generation_config.json (gen_config_read), then a short generation with what it read on a model
 * whose logits come from the input's bytes (full of ties): whatever the config, gen_run either
 * refuses it or returns sequences that start with the start token, stay in the vocabulary and
 * within max_length, and (greedy) end at their first eos id. (Beam search can, like HF, carry
 * an eos inside a -1e9 placeholder beam when a processor leaves nothing else finite.) */
#include "tests/fuzz/fuzz_input.h"
#include "vit/gen/generate.h"

typedef struct {
    const uint8_t *bytes;
    size_t size;
} byte_model;

static int byte_logits(void *model, int step, const int *parent, const int32_t *tokens, int rows,
                       float *logits, vit_error *err) {
    (void)parent, (void)err;
    const byte_model *m = model;
    const int vocab = 2 + (m->size ? m->bytes[0] % 30 : 0);
    for (int r = 0; r < rows; r++)
        for (int v = 0; v < vocab; v++) {
            const size_t at = ((size_t)step * 131 + (size_t)r * 17 + (size_t)v * 7 + tokens[r]) %
                              (m->size ? m->size : 1);
            logits[r * vocab + v] = m->size ? (float)(m->bytes[at] % 16) / 4.0f : 0.0f;
        }
    return 0;
}

static int is_eos(const gen_config *c, int id) {
    for (int i = 0; i < c->num_eos; i++)
        if (c->eos_ids[i] == id) return 1;
    return 0;
}

static void check(const gen_config *c, const gen_sequence *s, int vocab) {
    const int start = c->decoder_start_token_id >= 0 ? c->decoder_start_token_id : c->bos_token_id;
    if (s->length < 1 || s->length > c->max_new_tokens + 1 || s->ids[0] != start) abort();
    for (int i = 1; i < s->length; i++)
        if (s->ids[i] < 0 || s->ids[i] >= vocab ||
            (c->num_beams == 1 && i + 1 < s->length && is_eos(c, s->ids[i])))
            abort(); /* out of the vocabulary, or running on past an eos */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *json = malloc(size + 1);
    if (!json) return 0;
    memcpy(json, data, size);
    json[size] = 0;
    gen_config cfg = gen_config_default();
    vit_error err;
    const int rc = gen_config_read(json, "generation_config.json", &cfg, &err);
    free(json);
    if (rc != 0) return 0;
    /* a short run: at most 24 new tokens, 8 beams, 3 items */
    if (cfg.max_new_tokens < 0 || cfg.max_new_tokens > 24) cfg.max_new_tokens = 1 + size % 24;
    if (cfg.num_beams > 8) cfg.num_beams = 1 + cfg.num_beams % 8;
    byte_model m = {data, size};
    const int vocab = 2 + (size ? data[0] % 30 : 0), batch = 1 + (int)(size % 3);
    gen_sequence out[3];
    if (gen_run(&cfg, batch, vocab, byte_logits, &m, out, &err) != 0) return 0;
    for (int b = 0; b < batch; b++) check(&cfg, &out[b], vocab);
    gen_sequences_free(out, batch);
    return 0;
}
