/* generation_config.json: GenerationConfig's keys that greedy and beam search read, and a refusal
 * for the settings that would make transformers generate otherwise than this layer does. */
#include <cjson/cJSON.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vit/base/file.h"
#include "vit/base/json.h"
#include "vit/gen/generate.h"

gen_config gen_config_default(void) {
    return (gen_config){.max_length = 20,
                        .max_new_tokens = -1,
                        .min_length = 0,
                        .min_new_tokens = -1,
                        .num_beams = 1,
                        .length_penalty = 1.0,
                        .early_stopping = GEN_EARLY_HEURISTIC,
                        .no_repeat_ngram_size = 0,
                        .repetition_penalty = 1.0,
                        .decay_start = -1,
                        .decay_factor = 1.0,
                        .decoder_start_token_id = -1,
                        .bos_token_id = -1,
                        .pad_token_id = -1,
                        .forced_bos_token_id = -1,
                        .forced_eos_token_id = -1,
                        .num_eos = 0};
}

/* An optional count or id: null makes it unset (-1), as None does in Python. */
static int get_optional(const cJSON *root, const char *key, int lo, int hi, int *out,
                        const char *src, vit_error *err) {
    if (cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(root, key))) {
        *out = -1;
        return 0;
    }
    return json_get_int(root, key, lo, hi, out, src, err);
}

static int read_lengths(const cJSON *root, const char *src, gen_config *c, vit_error *err) {
    double lp = c->length_penalty;
    if (json_get_int(root, "max_length", 1, GEN_MAX_LENGTH, &c->max_length, src, err) != 0 ||
        get_optional(root, "max_new_tokens", 1, GEN_MAX_LENGTH - 1, &c->max_new_tokens, src, err) !=
            0 ||
        json_get_int(root, "min_length", 0, GEN_MAX_LENGTH, &c->min_length, src, err) != 0 ||
        get_optional(root, "min_new_tokens", 0, GEN_MAX_LENGTH, &c->min_new_tokens, src, err) !=
            0 ||
        json_get_int(root, "num_beams", 1, GEN_MAX_BEAMS, &c->num_beams, src, err) != 0 ||
        json_get_int(root, "no_repeat_ngram_size", 0, GEN_MAX_LENGTH, &c->no_repeat_ngram_size, src,
                     err) != 0 ||
        json_get_number(root, "length_penalty", -1e6, 1e6, &lp, src, err) != 0)
        return -1;
    c->length_penalty = lp;
    return 0;
}

/* repetition_penalty (HF: a strictly positive float; null is no penalty) and
 * exponential_decay_length_penalty [start_index, decay_factor] (null: none). */
static int read_penalties(const cJSON *root, const char *src, gen_config *c, vit_error *err) {
    const cJSON *rp = cJSON_GetObjectItemCaseSensitive(root, "repetition_penalty");
    if (rp && !cJSON_IsNull(rp)) {
        if (!cJSON_IsNumber(rp) || !(rp->valuedouble > 0 && rp->valuedouble < 1e30))
            return vit_fail(err, "%s: field 'repetition_penalty' must be a positive number", src);
        c->repetition_penalty = rp->valuedouble;
    } else if (cJSON_IsNull(rp)) {
        c->repetition_penalty = 1.0;
    }
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(root, "exponential_decay_length_penalty");
    if (cJSON_IsNull(d)) {
        c->decay_start = -1, c->decay_factor = 1.0;
    } else if (d) {
        const cJSON *start = cJSON_GetArrayItem(d, 0), *factor = cJSON_GetArrayItem(d, 1);
        if (!cJSON_IsArray(d) || cJSON_GetArraySize(d) != 2 || !cJSON_IsNumber(start) ||
            !cJSON_IsNumber(factor) || start->valuedouble != floor(start->valuedouble) ||
            !(start->valuedouble >= 0 && start->valuedouble <= GEN_MAX_LENGTH) ||
            !(factor->valuedouble > -1e30 && factor->valuedouble < 1e30))
            return vit_fail(err,
                            "%s: field 'exponential_decay_length_penalty' must be [start_index, "
                            "decay_factor]: an integer in 0..%d and a number",
                            src, GEN_MAX_LENGTH);
        c->decay_start = start->valueint, c->decay_factor = factor->valuedouble;
    }
    return 0;
}

/* early_stopping: true, false or "never" (HF refuses anything else). */
static int read_early(const cJSON *root, const char *src, gen_config *c, vit_error *err) {
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(root, "early_stopping");
    if (!item || cJSON_IsNull(item)) return 0;
    if (cJSON_IsBool(item))
        c->early_stopping = cJSON_IsTrue(item) ? GEN_EARLY_TRUE : GEN_EARLY_HEURISTIC;
    else if (cJSON_IsString(item) && strcmp(item->valuestring, "never") == 0)
        c->early_stopping = GEN_EARLY_NEVER;
    else
        return vit_fail(err, "%s: field 'early_stopping' must be true, false or \"never\"", src);
    return 0;
}

/* An id or a list of 1..max ids into ids[], *n; null: none. */
static int read_id_list(const cJSON *root, const char *key, int max, int *ids, int *n,
                        const char *src, vit_error *err) {
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!item) return 0;
    if (cJSON_IsNull(item)) return *n = 0, 0;
    if (!cJSON_IsArray(item)) {
        if (json_get_int(root, key, 0, INT_MAX - 1, &ids[0], src, err) != 0) return -1;
        return *n = 1, 0;
    }
    const int count = cJSON_GetArraySize(item);
    if (count < 1 || count > max)
        return vit_fail(err, "%s: field '%s' lists %d ids, not 1..%d", src, key, count, max);
    const cJSON *id;
    int i = 0;
    cJSON_ArrayForEach(id, item) {
        if (!cJSON_IsNumber(id) || !(id->valuedouble >= 0 && id->valuedouble < INT_MAX) ||
            id->valuedouble != floor(id->valuedouble))
            return vit_fail(err, "%s: field '%s' must list token ids (integers >= 0)", src, key);
        ids[i++] = id->valueint;
    }
    return *n = count, 0;
}

static int read_ids(const cJSON *root, const char *src, gen_config *c, vit_error *err) {
    int forced_eos[1] = {c->forced_eos_token_id}, n_forced = c->forced_eos_token_id >= 0;
    if (get_optional(root, "decoder_start_token_id", 0, INT_MAX - 1, &c->decoder_start_token_id,
                     src, err) != 0 ||
        get_optional(root, "bos_token_id", 0, INT_MAX - 1, &c->bos_token_id, src, err) != 0 ||
        get_optional(root, "pad_token_id", 0, INT_MAX - 1, &c->pad_token_id, src, err) != 0 ||
        get_optional(root, "forced_bos_token_id", 0, INT_MAX - 1, &c->forced_bos_token_id, src,
                     err) != 0 ||
        read_id_list(root, "eos_token_id", GEN_MAX_EOS, c->eos_ids, &c->num_eos, src, err) != 0 ||
        read_id_list(root, "forced_eos_token_id", 1, forced_eos, &n_forced, src, err) != 0)
        return -1;
    c->forced_eos_token_id = n_forced ? forced_eos[0] : -1;
    return 0;
}

/* How a key that this layer cannot follow shows it is in use. */
typedef enum { WHEN_TRUE, WHEN_SET, WHEN_NOT_ONE, WHEN_ABOVE_ONE, WHEN_POSITIVE } when_active;

static const struct {
    const char *key;
    when_active when;
} UNSUPPORTED[] = {
    {"do_sample", WHEN_TRUE},          {"num_beam_groups", WHEN_ABOVE_ONE},
    {"penalty_alpha", WHEN_POSITIVE},  {"guidance_scale", WHEN_NOT_ONE},
    {"renormalize_logits", WHEN_TRUE}, {"remove_invalid_values", WHEN_TRUE},
    {"low_memory", WHEN_TRUE},         {"bad_words_ids", WHEN_SET},
    {"force_words_ids", WHEN_SET},     {"constraints", WHEN_SET},
    {"suppress_tokens", WHEN_SET},     {"begin_suppress_tokens", WHEN_SET},
    {"forced_decoder_ids", WHEN_SET},  {"sequence_bias", WHEN_SET},
    {"stop_strings", WHEN_SET},        {"watermarking_config", WHEN_SET},
    {"dola_layers", WHEN_SET},
};

static int is_active(const cJSON *item, when_active when) {
    if (!item || cJSON_IsNull(item)) return 0;
    const double v = cJSON_IsBool(item) ? cJSON_IsTrue(item) : item->valuedouble;
    const int number = cJSON_IsBool(item) || cJSON_IsNumber(item);
    switch (when) {
    case WHEN_TRUE:
        return number ? v != 0 : 1;
    case WHEN_SET:
        return !(cJSON_IsArray(item) && cJSON_GetArraySize(item) == 0);
    case WHEN_NOT_ONE:
        return number ? v != 1.0 : 1;
    case WHEN_ABOVE_ONE:
        return number ? v > 1.0 : 1;
    case WHEN_POSITIVE:
        return number ? v > 0.0 : 1;
    }
    return 1;
}

static int refuse_unsupported(const cJSON *root, const char *src, vit_error *err) {
    for (size_t i = 0; i < sizeof UNSUPPORTED / sizeof UNSUPPORTED[0]; i++)
        if (is_active(cJSON_GetObjectItemCaseSensitive(root, UNSUPPORTED[i].key),
                      UNSUPPORTED[i].when))
            return vit_fail(err,
                            "%s: '%s' is set, which this generation does not support "
                            "(greedy and beam search with min_length, no_repeat_ngram_size, "
                            "repetition_penalty, exponential_decay_length_penalty and forced "
                            "tokens only)",
                            src, UNSUPPORTED[i].key);
    return 0;
}

int gen_config_read(const char *json, const char *source, gen_config *cfg, vit_error *err) {
    char why[160];
    cJSON *root = json_parse_object(json, strlen(json), why, sizeof why);
    if (!root) return vit_fail(err, "%s: not a valid JSON object: %s", source, why);
    gen_config c = *cfg;
    const int rc =
        refuse_unsupported(root, source, err) != 0 || read_lengths(root, source, &c, err) != 0 ||
                read_penalties(root, source, &c, err) != 0 ||
                read_early(root, source, &c, err) != 0 || read_ids(root, source, &c, err) != 0
            ? -1
            : 0;
    cJSON_Delete(root);
    if (rc == 0) *cfg = c;
    return rc;
}

int gen_config_load(const char *dir, gen_config *cfg, vit_error *err) {
    char path[4096];
    snprintf(path, sizeof path, "%s/generation_config.json", dir);
    if (access(path, F_OK) != 0) snprintf(path, sizeof path, "%s/config.json", dir);
    char *json = vit_read_file(path, 16 << 20, NULL, err);
    if (!json) return -1;
    *cfg = gen_config_default();
    const int rc = gen_config_read(json, path, cfg, err);
    free(json);
    return rc;
}
