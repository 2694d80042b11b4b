#include "vit/train/optim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "vit/base/alloc.h"

int adamw_init(adamw *opt, const model *m, const adamw_hparams *hp, vit_error *err) {
    memset(opt, 0, sizeof *opt);
    opt->hp = *hp;
    if (opt->hp.beta1 == 0.0f) opt->hp.beta1 = 0.9f;
    if (opt->hp.beta2 == 0.0f) opt->hp.beta2 = 0.999f;
    if (opt->hp.eps == 0.0f) opt->hp.eps = 1e-8f;
    if (!(opt->hp.lr >= 0.0f) || !(opt->hp.weight_decay >= 0.0f) || !(opt->hp.beta1 < 1.0f) ||
        !(opt->hp.beta2 < 1.0f))
        return vit_fail(err, "AdamW: invalid hyper-parameters (lr %g, weight decay %g)", opt->hp.lr,
                        opt->hp.weight_decay);
    opt->num_params = m->num_params;
    opt->num_entries = m->num_entries;
    opt->m = vit_alloc_floats(m->num_params);
    opt->v = vit_alloc_floats(m->num_params);
    opt->frozen = calloc((size_t)m->num_entries, 1);
    if (!opt->m || !opt->v || !opt->frozen) {
        adamw_free(opt);
        return vit_fail(err, "out of memory for the optimizer state (%zu parameters)",
                        m->num_params);
    }
    memset(opt->m, 0, m->num_params * sizeof(float));
    memset(opt->v, 0, m->num_params * sizeof(float));
    for (int i = 0; i < m->num_entries; i++) opt->frozen[i] = (uint8_t)m->entries[i].absent;
    return 0;
}

void adamw_free(adamw *opt) {
    free(opt->m);
    free(opt->v);
    free(opt->frozen);
    free(opt->lr_scale);
    memset(opt, 0, sizeof *opt);
}

/* The linear probe's trainable head: a ViT's final LayerNorm, a BERT's pooler, the classifier. */
static int is_head(const char *name) {
    return strncmp(name, "layernorm.", 10) == 0 || strncmp(name, "pooler.", 7) == 0 ||
           strncmp(name, "classifier.", 11) == 0;
}

void adamw_freeze_encoder(adamw *opt, const model *m, int freeze) {
    for (int i = 0; i < m->num_entries; i++)
        opt->frozen[i] =
            (uint8_t)(m->entries[i].absent || (freeze && !is_head(m->entries[i].name)));
}

void adamw_freeze_prefix(adamw *opt, const model *m, const char *prefix, int freeze) {
    const size_t n = strlen(prefix);
    for (int i = 0; i < m->num_entries; i++)
        opt->frozen[i] = (uint8_t)(m->entries[i].absent ||
                                   (freeze && strncmp(m->entries[i].name, prefix, n) == 0));
}

int layer_depth(const char *name, int num_layers) {
    const char *layer = strstr(name, "encoder.layer.");
    if (layer) {
        char *end;
        const long n = strtol(layer + 14, &end, 10);
        if (end != layer + 14 && *end == '.' && n >= 0 && n < num_layers)
            return num_layers - (int)n;
    }
    return strstr(name, "embeddings.") ? num_layers + 1 : 0;
}

int adamw_layer_decay(adamw *opt, const model *m, float decay, vit_error *err) {
    if (!(decay > 0.0f && decay <= 1.0f))
        return vit_fail(err, "layer decay %g: expected a number in (0, 1]", decay);
    free(opt->lr_scale);
    opt->lr_scale = malloc((size_t)m->num_entries * sizeof *opt->lr_scale);
    if (!opt->lr_scale) return vit_fail(err, "out of memory");
    for (int i = 0; i < m->num_entries; i++)
        opt->lr_scale[i] = (float)pow(decay, layer_depth(m->entries[i].name, m->cfg.num_layers));
    return 0;
}

void adamw_step(adamw *opt, const model *m, const float *grads, float lr) {
    opt->step++;
    const float b1 = opt->hp.beta1, b2 = opt->hp.beta2, eps = opt->hp.eps;
    /* PyTorch computes the corrections in double and rounds them to float32 */
    const double bc1 = 1.0 - pow(b1, (double)opt->step), bc2 = 1.0 - pow(b2, (double)opt->step);
    const float bc2_sqrt = (float)sqrt(bc2);
    for (int i = 0; i < m->num_entries; i++) {
        if (opt->frozen[i]) continue;
        const param_entry *e = &m->entries[i];
        const float lr_e = opt->lr_scale ? lr * opt->lr_scale[i] : lr;
        const float step_size = (float)(lr_e / bc1);
        float *p = m->params + e->offset, *mo = opt->m + e->offset, *vo = opt->v + e->offset;
        const float *g = grads + e->offset;
        const float decay = e->decay ? (float)(1.0 - (double)lr_e * opt->hp.weight_decay) : 1.0f;
        const long n = (long)e->numel;
#pragma omp parallel for simd if (n >= 65536) schedule(static)
        for (long j = 0; j < n; j++) {
            const float pj = p[j] * decay;
            const float mj = b1 * mo[j] + (1.0f - b1) * g[j];
            const float vj = b2 * vo[j] + (1.0f - b2) * g[j] * g[j];
            mo[j] = mj;
            vo[j] = vj;
            p[j] = pj - step_size * (mj / (sqrtf(vj) / bc2_sqrt + eps));
        }
    }
}

double grad_global_norm(const model *m, const float *grads, const adamw *opt) {
    double sum = 0.0;
    for (int i = 0; i < m->num_entries; i++) {
        if (opt ? opt->frozen[i] : m->entries[i].absent) continue;
        const float *g = grads + m->entries[i].offset;
        double s = 0.0;
        for (size_t j = 0; j < m->entries[i].numel; j++) s += (double)g[j] * g[j];
        sum += s;
    }
    return sqrt(sum);
}

double grad_clip_global_norm(const model *m, float *grads, const adamw *opt, float max_norm) {
    const double norm = grad_global_norm(m, grads, opt);
    if (max_norm > 0.0f && norm > max_norm) {
        const float scale = (float)(max_norm / (norm + 1e-6));
        for (int i = 0; i < m->num_entries; i++) {
            float *g = grads + m->entries[i].offset;
            for (size_t j = 0; j < m->entries[i].numel; j++) g[j] *= scale;
        }
    }
    return norm;
}

float lr_at(const lr_schedule *s, int64_t step) {
    if (step < s->warmup) return s->lr * (float)(step + 1) / (float)s->warmup;
    const int64_t decay_steps = s->total - s->warmup;
    if (decay_steps <= 0) return s->lr;
    double progress = (double)(step - s->warmup) / (double)decay_steps;
    if (progress > 1.0) progress = 1.0;
    return (float)(s->min_lr + 0.5 * (s->lr - s->min_lr) * (1.0 + cos(M_PI * progress)));
}
