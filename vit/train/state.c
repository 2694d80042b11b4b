/* Checkpoints: the model directory plus train_state.safetensors, all a resumed run needs
 * (weights, AdamW moments, step, generator state, the options), so it continues exactly as if
 * never stopped. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vit/io/model_dir.h"
#include "vit/io/safetensors.h"
#include "vit/train/trainer.h"

#define STATE_FORMAT "vit-train-state-2"

typedef struct {
    st_entry *entries;
    char (*names)[128];
    int count;
} state_tensors;

/* param.NAME, adam_m.NAME, adam_v.NAME for every live tensor. */
static int state_tensors_make(const trainer *t, state_tensors *s, vit_error *err) {
    const int k = t->m.num_entries;
    s->entries = calloc((size_t)3 * k, sizeof *s->entries);
    s->names = calloc((size_t)3 * k, sizeof *s->names);
    if (!s->entries || !s->names) return vit_fail(err, "out of memory");
    const float *blocks[] = {t->m.params, t->opt.m, t->opt.v};
    const char *prefixes[] = {"param.", "adam_m.", "adam_v."};
    s->count = 0;
    for (int b = 0; b < 3; b++) {
        const int n =
            model_st_entries(&t->m, blocks[b], s->entries + s->count, s->names + s->count);
        for (int i = s->count; i < s->count + n; i++) {
            /* model_st_entries wrote the file names; prefix them with the block's */
            char name[128];
            snprintf(name, sizeof name, "%s%s", prefixes[b], s->names[i]);
            memcpy(s->names[i], name, sizeof name);
            s->entries[i].name = s->names[i];
        }
        s->count += n;
    }
    return 0;
}

static void state_tensors_free(state_tensors *s) {
    free(s->entries);
    free(s->names);
}

static int save_state(const trainer *t, double epoch_seconds, vit_error *err) {
    state_tensors s = {0};
    if (state_tensors_make(t, &s, err) != 0) return state_tensors_free(&s), -1;
    char *opts = train_options_to_json(&t->o);
    char step[32], adam_step[32], rng[32], loss[40], correct[40], seen[32], secs[40];
    snprintf(step, sizeof step, "%lld", (long long)t->step);
    snprintf(adam_step, sizeof adam_step, "%lld", (long long)t->opt.step);
    snprintf(rng, sizeof rng, "%llu", (unsigned long long)t->drop_rng);
    snprintf(loss, sizeof loss, "%.17g", t->epoch_loss_sum);
    snprintf(correct, sizeof correct, "%.17g", t->epoch_correct);
    snprintf(seen, sizeof seen, "%lld", (long long)t->epoch_seen);
    snprintf(secs, sizeof secs, "%.17g", epoch_seconds);
    const char *keys[] = {"format",        "options",     "step",
                          "adam_step",     "dropout_rng", "epoch_loss_sum",
                          "epoch_correct", "epoch_seen",  "epoch_seconds"};
    const char *values[] = {STATE_FORMAT, opts ? opts : "", step, adam_step, rng,
                            loss,         correct,          seen, secs};
    char path[4096];
    trainer_path(t, path, sizeof path, TRAIN_STATE_FILE);
    const int rc = opts ? st_write_f32_meta(path, s.entries, s.count, keys, values, 9, err)
                        : vit_fail(err, "out of memory");
    free(opts);
    state_tensors_free(&s);
    return rc;
}

int trainer_save_checkpoint(const trainer *t, double epoch_seconds, vit_error *err) {
    const int rc = t->task->save ? t->task->save(t, err)
                                 : model_save(t->o.out_dir, &t->m, &t->pp, t->o.dropout,
                                              t->o.attention_dropout, err);
    if (rc != 0) return -1;
    return save_state(t, epoch_seconds, err);
}

static int meta_i64(const st_file *f, const char *key, int64_t *out, vit_error *err) {
    char buf[64];
    if (st_metadata(f, key, buf, sizeof buf, err) != 0) return -1;
    *out = strtoll(buf, NULL, 10);
    return 0;
}

int trainer_open_state(trainer *t, st_file *f, vit_error *err) {
    char path[4096];
    trainer_path(t, path, sizeof path, TRAIN_STATE_FILE);
    if (access(path, F_OK) != 0)
        return vit_fail(err, "%s: no training state to resume (the run finished, or never began)",
                        path);
    if (st_open(path, f, err) != 0) return -1;
    char format[64];
    if (st_metadata(f, "format", format, sizeof format, err) != 0 ||
        strcmp(format, STATE_FORMAT) != 0) {
        st_close(f);
        return vit_fail(err, "%s: not a vit training state", path);
    }
    size_t cap = 1 << 16;
    char *opts = malloc(cap);
    int rc = opts ? st_metadata(f, "options", opts, cap, err) : vit_fail(err, "out of memory");
    if (rc == 0) rc = train_options_from_json(&t->o, t->owned, opts, path, err);
    free(opts);
    /* the same ranges as on the command line: a state file is input like any other */
    if (rc == 0 && train_options_check_values(&t->o, err) != 0) {
        vit_error inner = *err;
        rc = vit_fail(err, "%s: %s", path, inner.msg);
    }
    if (rc != 0) st_close(f);
    return rc;
}

int trainer_load_state(trainer *t, const st_file *f, vit_error *err) {
    float *blocks[] = {t->m.params, t->opt.m, t->opt.v};
    const char *prefixes[] = {"param.", "adam_m.", "adam_v."};
    for (int b = 0; b < 3; b++)
        for (int i = 0; i < t->m.num_entries; i++) {
            const param_entry *e = &t->m.entries[i];
            if (e->absent) continue;
            char name[160];
            snprintf(name, sizeof name, "%s%s%s", prefixes[b],
                     e->prefixed ? model_prefix(&t->m) : "", e->name);
            const st_tensor *t = st_find(f, name);
            if (!t || (size_t)t->numel != e->numel)
                return vit_fail(err, "%s: tensor '%s' missing or of the wrong size", f->path, name);
            if (st_to_f32(f, t, blocks[b] + e->offset, err) != 0) return -1;
        }
    int64_t seen;
    char buf[64];
    if (meta_i64(f, "step", &t->step, err) || meta_i64(f, "adam_step", &t->opt.step, err) ||
        meta_i64(f, "epoch_seen", &seen, err) ||
        st_metadata(f, "dropout_rng", buf, sizeof buf, err))
        return -1;
    t->drop_rng = strtoull(buf, NULL, 10);
    t->epoch_seen = seen;
    if (st_metadata(f, "epoch_correct", buf, sizeof buf, err) != 0) return -1;
    t->epoch_correct = strtod(buf, NULL);
    if (st_metadata(f, "epoch_loss_sum", buf, sizeof buf, err) != 0) return -1;
    t->epoch_loss_sum = strtod(buf, NULL);
    if (st_metadata(f, "epoch_seconds", buf, sizeof buf, err) != 0) return -1;
    t->epoch_seconds_before = strtod(buf, NULL);
    if (t->step > t->total_steps)
        return vit_fail(err, "%s: step %lld beyond the run's %lld", f->path, (long long)t->step,
                        (long long)t->total_steps);
    return 0;
}
