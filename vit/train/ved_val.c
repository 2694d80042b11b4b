/* The image-to-text validation that says what a user sees: the validation lines read by greedy
 * generation with the weights of the moment (vit/gen on the decoder's logits, its cache), scored
 * against their texts as `vit eval` scores them (text/text_errors: character and word error
 * rates). Token accuracy under teacher forcing flatters a model that cannot yet read a line
 * through: one early slip derails the rest. */
#include "vit/train/ved_val.h"

#include <stdlib.h>
#include <string.h>

#include "text/text_errors.h"
#include "vit/gen/generate.h"

typedef struct {
    const model *dec;
    decoder_acts *acts;
} val_decoder;

/* gen_logits_fn: greedy rows never change parents, so the cache needs no reordering. */
static int val_step(void *ctx, int step, const int *parent, const int32_t *tokens, int rows,
                    float *logits, vit_error *err) {
    const val_decoder *v = ctx;
    (void)step, (void)parent;
    return decoder_forward(v->dec, v->acts, tokens, rows, 1, 0, logits, err);
}

/* Greedy settings of the decoder's config: its start and end ids, at most max_len ids. */
static gen_config greedy_config(const model_config *c, int max_len) {
    gen_config g = gen_config_default();
    g.max_length = max_len;
    g.decoder_start_token_id = c->start_token_id;
    g.pad_token_id = c->shift_pad_id;
    g.eos_ids[0] = c->eos_token_id;
    g.num_eos = c->eos_token_id >= 0;
    return g;
}

/* Adds the errors of n generated sequences against refs[0..n). */
static int score(const text_tokenizer *tok, gen_sequence *seqs, char *const *refs, int n,
                 text_errors *sum, vit_error *err) {
    char text[4096];
    for (int i = 0; i < n; i++) {
        if (text_tokenizer_decode(tok, seqs[i].ids, seqs[i].length, 1, text, sizeof text, err) < 0)
            return -1;
        text_errors e;
        if (text_errors_count(refs[i], strlen(refs[i]), text, strlen(text), &e, err) != 0)
            return -1;
        text_errors_add(sum, &e);
    }
    return 0;
}

int ved_val_read(const model *dec, decoder_acts *acts, const float *states, int n, int S,
                 int max_len, const text_tokenizer *tok, char *const *refs, text_errors *sum,
                 vit_error *err) {
    if (decoder_set_states(dec, acts, states, n, S, 1, err) != 0) return -1;
    gen_sequence *seqs = calloc((size_t)n, sizeof *seqs);
    if (!seqs) return vit_fail(err, "out of memory");
    const gen_config g = greedy_config(&dec->cfg, max_len);
    val_decoder v = {.dec = dec, .acts = acts};
    int rc = gen_run(&g, n, dec->cfg.vocab_size, val_step, &v, seqs, err);
    if (rc == 0) rc = score(tok, seqs, refs, n, sum, err);
    gen_sequences_free(seqs, n);
    free(seqs);
    return rc;
}
