#include "vit/gen/generate.h"

#include <stdlib.h>
#include <string.h>

#include "vit/gen/search.h"

int gen_sequence_set(gen_sequence *out, const int32_t *ids, int length, float score,
                     vit_error *err) {
    out->ids = malloc((size_t)length * sizeof *out->ids);
    if (!out->ids) return vit_fail(err, "generation: out of memory");
    memcpy(out->ids, ids, (size_t)length * sizeof *out->ids);
    out->length = length;
    out->score = score;
    return 0;
}

int gen_run(const gen_config *cfg, int batch, int vocab, gen_logits_fn fn, void *model,
            gen_sequence *out, vit_error *err) {
    if (!cfg || !fn || !out) return vit_fail(err, "generation: no config, model or output");
    gen_plan p;
    if (gen_plan_make(cfg, batch, vocab, &p, err) != 0) return -1;
    memset(out, 0, (size_t)batch * sizeof *out);
    const int rc =
        p.beams == 1 ? gen_greedy(&p, fn, model, out, err) : gen_beam(&p, fn, model, out, err);
    if (rc != 0) gen_sequences_free(out, batch);
    return rc;
}

void gen_sequences_free(gen_sequence *s, int n) {
    if (!s) return;
    for (int i = 0; i < n; i++) {
        free(s[i].ids);
        s[i].ids = NULL;
        s[i].length = 0;
    }
}
