#ifndef VIT_GEN_GENERATE_H
#define VIT_GEN_GENERATE_H

/* Text generation as transformers' `generate` does it for encoder-decoder models, greedy and beam
 * search, on next-token logits only: the model is a callback (gen_logits_fn), so this layer knows
 * nothing of decoders, caches or images. It follows generation/utils.py's `_sample` and the
 * vectorised `_beam_search` of transformers 4.5x (after the v4.51 rewrite; commit 000034a4, see
 * tools/generate_reference.py, the float64 reference the tests compare against), with the
 * processors repetition_penalty, no_repeat_ngram_size, min_length, min_new_tokens,
 * forced_bos_token_id, forced_eos_token_id and exponential_decay_length_penalty, in
 * `_get_logits_processor`'s order.
 *
 *   gen_config cfg = gen_config_default();
 *   if (gen_config_read(text_of_generation_config_json, path, &cfg, &err) != 0) ...;
 *   cfg.num_beams = 4;
 *   gen_sequence out[2];
 *   if (gen_run(&cfg, 2, vocab, my_logits, my_model, out, &err) != 0) ...;
 *   ... out[i].ids[0 .. out[i].length), out[i].score ...
 *   gen_sequences_free(out, 2);
 *
 * Exactness. Token choices are HF's when the logits are HF's: beam scores are kept in float and
 * combined as HF combines its float32 tensors (the -1e9 placeholders included); log_softmax is
 * float with a double sum (within ~1e-7 of torch's float32 one); equal values are ordered as
 * torch.topk orders them on a Linux CPU (libstdc++'s partial_sort when k * 64 <= n, else
 * nth_element and sort: not by index; vit/gen/topk.h), and greedy takes the first maximum as
 * torch.argmax does. Exact ties only arise in the placeholders, which never reach a result, or
 * from logits that are exactly equal.
 *
 * Thread safety: gen_run keeps all its state in its own allocations; calls may run at once. */

#include <stdint.h>

#include "vit/base/error.h"

#define GEN_MAX_LENGTH 4096 /* the longest sequence, start token included */
#define GEN_MAX_BEAMS  64
#define GEN_MAX_EOS    4 /* end-of-sequence ids at once (HF accepts a list) */

typedef enum {
    GEN_EARLY_HEURISTIC = 0, /* early_stopping false: stop when a better hypothesis is unlikely */
    GEN_EARLY_TRUE = 1,      /* stop as soon as num_beams hypotheses are finished */
    GEN_EARLY_NEVER = 2      /* "never": stop only when none can be better (canonical) */
} gen_early_stopping;

/* GenerationConfig's fields that generation reads. An id of -1 is "not set" (None). */
typedef struct {
    int max_length;        /* with the start token; 20 (the default) means 21, as HF adds the
                            * one-token prompt to its default: ask max_new_tokens = 19 for 20 */
    int max_new_tokens;    /* -1: unset; else it decides the length: max_length = it + 1 */
    int min_length;        /* eos is masked while the sequence (start included) is shorter */
    int min_new_tokens;    /* -1: unset; else min_length = it + 1, and eos masked before it */
    int num_beams;         /* 1: greedy */
    double length_penalty; /* double as Python's float: HF divides by float32(L ** it), with
                            * the power in double */
    gen_early_stopping early_stopping;
    int no_repeat_ngram_size;  /* 0: off */
    double repetition_penalty; /* 1: off; > 0: a token the row holds (start included) has its
                                * score divided by it, or multiplied when negative */
    int decay_start;           /* exponential_decay_length_penalty [start, factor]; -1: off. */
    double decay_factor;       /* Past `start` new tokens, eos scores gain |score| (f^k - 1) */
    int decoder_start_token_id, bos_token_id; /* the start: the first, else the second */
    int pad_token_id; /* greedy's token for finished rows; -1: the first eos id */
    int forced_bos_token_id, forced_eos_token_id;
    int eos_ids[GEN_MAX_EOS], num_eos; /* none: generation ends at max_length only */
} gen_config;

/* GenerationConfig()'s defaults: max_length 20, min_length 0, one beam, length_penalty 1,
 * early_stopping false, no n-gram ban, no repetition or length penalty, every id unset. */
gen_config gen_config_default(void);

/* Overlays the keys of a generation_config.json text (`source` names it in errors) on *cfg:
 * the keys above (eos_token_id and forced_eos_token_id an id or a list), others ignored. A key
 * of the wrong type or out of range, or a setting that would make HF generate differently and
 * that this layer does not do (do_sample true, num_beam_groups > 1, a repetition penalty,
 * bad_words_ids, suppress_tokens, ...), is an error naming the source and the key; *cfg is then
 * unchanged. Keys absent from the text keep *cfg's values; HF reads generation_config.json
 * alone when a folder has one, else the same keys from config.json (from_model_config). */
int gen_config_read(const char *json, const char *source, gen_config *cfg, vit_error *err);

/* A model folder's settings as GenerationConfig.from_pretrained reads them: its
 * generation_config.json alone when it has one, else config.json's keys (from_model_config), over
 * gen_config_default(). */
int gen_config_load(const char *dir, gen_config *cfg, vit_error *err);

/* The model as generation sees it, called once per step with all `rows` running rows (batch x
 * num_beams; batch for greedy; row r belongs to batch item r / num_beams). On step 0 every row
 * is the start token alone (parent is NULL, tokens[r] the start token). On step s > 0, row r
 * continues the previous step's row parent[r] with tokens[r] appended: the model reorders its
 * caches by parent (greedy: parent[r] == r; a finished greedy row continues with pad_token_id).
 * It fills logits[rows x vocab] for the next token and returns 0, or -1 with err. */
typedef int (*gen_logits_fn)(void *model, int step, const int *parent, const int32_t *tokens,
                             int rows, float *logits, vit_error *err);

/* One batch item's result: ids[0] is the start token, then the generated tokens up to and with
 * the eos id (or to max_length), as a row of HF's `sequences` without the padding HF adds to
 * match the batch's longest row. score: beam search's `sequences_scores` (the log-probability
 * sum / generated length ** length_penalty); greedy: the sum of the log-probabilities beam
 * search would have added for the same tokens (log_softmax, then the processors: a forced token
 * adds 0), no length penalty. */
typedef struct {
    int32_t *ids;
    int length;
    float score;
} gen_sequence;

/* Generates for `batch` items (1..4096) over a vocabulary of `vocab` ids. Checks the config
 * against the vocabulary first (ids in range, lengths, beams <= GEN_MAX_BEAMS, a start token).
 * Everything is allocated before the first step; out[0..batch) gets malloc'ed ids (free with
 * gen_sequences_free). On error nothing is left allocated and out is zeroed. */
int gen_run(const gen_config *cfg, int batch, int vocab, gen_logits_fn fn, void *model,
            gen_sequence *out, vit_error *err);

void gen_sequences_free(gen_sequence *s, int n);

#endif
