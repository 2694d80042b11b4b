/* The public API for joint image-text models (vit.h): class names embedded once, images scored
 * against them (zero-shot classification), as CLIPModel and SiglipModel compute logits_per_image.
 */
#include "vit/vit.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vit/core/ops.h"
#include "vit/vit_internal.h"

struct vit_classes {
    int count, dim;
    api_joint joint;
    float *embeds; /* [count, dim], normalised */
    char **names;
};

int api_joint_of(const model *m, api_joint *out, vit_error *err) {
    const model_config *c = &m->cfg;
    if (!c->opt.joint) /* a classifier, an encoder */
        return vit_fail(err, "%s is not a joint image-text model (CLIP, SigLIP)",
                        config_architecture(c));
    if (!m->logit_scale) /* SiglipVisionModel alone */
        return vit_fail(err,
                        "%s is one tower alone: no joint image-text space (no text tower, no "
                        "logit_scale)",
                        config_architecture(c));
    *out = (api_joint){.dim = c->num_labels,
                       .sigmoid = c->opt.joint_sigmoid,
                       .scale = exp((double)m->logit_scale[0]),
                       .bias = m->logit_bias ? m->logit_bias[0] : 0.0};
    return 0;
}

void api_normalize_rows(float *x, int n, int dim) {
    for (int i = 0; i < n; i++) {
        float *row = x + (size_t)i * dim;
        double sum = 0.0;
        for (int d = 0; d < dim; d++) sum += (double)row[d] * row[d];
        const double inv = sum > 0.0 ? 1.0 / sqrt(sum) : 0.0;
        for (int d = 0; d < dim; d++) row[d] = (float)(row[d] * inv);
    }
}

/* template with each "{}" replaced by name (malloc'ed; NULL when out of memory). */
static char *fill_template(const char *template, const char *name) {
    size_t holes = 0;
    for (const char *p = strstr(template, "{}"); p; p = strstr(p + 2, "{}")) holes++;
    const size_t len = strlen(template) + holes * strlen(name) + 1;
    char *out = malloc(len), *o = out;
    if (!out) return NULL;
    for (const char *p = template; *p;) {
        if (p[0] == '{' && p[1] == '}') {
            o += sprintf(o, "%s", name);
            p += 2;
        } else {
            *o++ = *p++;
        }
    }
    *o = '\0';
    return out;
}

/* Every class's embedding: the mean of its prompts' normalised embeddings, normalised. The
 * prompts (class k, template t at k·T + t) run in full batches of the text context's size,
 * across class boundaries, so one template over a thousand names is a few dozen forward passes. */
static int embed_classes(vit_text_context *text, vit_classes *c, const char *const *templates,
                         int n_templates, float *work, int batch, vit_error *err) {
    const int T = n_templates > 0 ? n_templates : 1;
    const long total = (long)c->count * T;
    memset(c->embeds, 0, sizeof(float) * (size_t)c->count * c->dim);
    for (long first = 0; first < total; first += batch) {
        const int n = total - first < batch ? (int)(total - first) : batch;
        char *texts[64];
        size_t lengths[64];
        int rc = 0;
        for (int i = 0; i < n; i++) {
            const char *name = c->names[(first + i) / T];
            texts[i] =
                n_templates > 0 ? fill_template(templates[(first + i) % T], name) : strdup(name);
            if (!texts[i]) rc = vit_fail(err, "out of memory");
            lengths[i] = texts[i] ? strlen(texts[i]) : 0;
        }
        if (rc == 0)
            rc = vit_text_embed(text, (const char *const *)texts, lengths, n, VIT_POOL_JOINT, work,
                                err);
        for (int i = 0; i < n; i++) free(texts[i]);
        if (rc != 0) return -1;
        for (int i = 0; i < n; i++) {
            float *sum = c->embeds + (size_t)((first + i) / T) * c->dim;
            for (int d = 0; d < c->dim; d++) sum[d] += work[(size_t)i * c->dim + d];
        }
    }
    api_normalize_rows(c->embeds, c->count, c->dim);
    return 0;
}

vit_classes *vit_classes_create(vit_text_context *text, const char *const *names, int n,
                                const char *const *templates, int n_templates, vit_error *err) {
    if (n < 1) return vit_fail(err, "zero-shot: no class names"), NULL;
    vit_classes *c = calloc(1, sizeof *c);
    if (!c) return vit_fail(err, "out of memory"), NULL;
    if (api_joint_of(api_text_model(text), &c->joint, err) != 0) {
        free(c);
        return NULL;
    }
    c->dim = c->joint.dim;
    const int batch = vit_text_max_batch(text) < 64 ? vit_text_max_batch(text) : 64;
    c->embeds = malloc(sizeof(float) * (size_t)n * c->dim);
    c->names = calloc((size_t)n, sizeof *c->names);
    float *work = malloc(sizeof(float) * (size_t)batch * c->dim);
    int rc = c->embeds && c->names && work ? 0 : vit_fail(err, "out of memory");
    for (int k = 0; rc == 0 && k < n; k++) {
        c->count = k + 1;
        if (!(c->names[k] = strdup(names[k]))) rc = vit_fail(err, "out of memory");
    }
    if (rc == 0) rc = embed_classes(text, c, templates, n_templates, work, batch, err);
    free(work);
    if (rc != 0) {
        vit_classes_free(c);
        return NULL;
    }
    return c;
}

void vit_classes_free(vit_classes *c) {
    if (!c) return;
    for (int k = 0; c->names && k < c->count; k++) free(c->names[k]);
    free(c->names);
    free(c->embeds);
    free(c);
}

int vit_classes_count(const vit_classes *c) {
    return c->count;
}

const char *vit_classes_name(const vit_classes *c, int index) {
    return index >= 0 && index < c->count ? c->names[index] : NULL;
}

int vit_classes_sigmoid(const vit_classes *c) {
    return c->joint.sigmoid;
}

/* scores -> probabilities: a softmax over each image's classes (CLIP), or each score's sigmoid
 * (SigLIP). */
static void score_probs(const vit_classes *c, const float *scores, int B, float *probs) {
    const size_t n = (size_t)B * c->count;
    if (!c->joint.sigmoid) {
        softmax_probs(probs, scores, B, c->count);
        return;
    }
    for (size_t i = 0; i < n; i++) probs[i] = (float)(1.0 / (1.0 + exp(-(double)scores[i])));
}

int vit_classes_score(const vit_classes *c, const float *embeds, int B, float *scores, float *probs,
                      vit_error *err) {
    if (B < 1) return vit_fail(err, "zero-shot: a batch of %d images", B);
    const int dim = c->dim;
    for (int b = 0; b < B; b++)
        for (int k = 0; k < c->count; k++) {
            const float *x = embeds + (size_t)b * dim, *e = c->embeds + (size_t)k * dim;
            double dot = 0.0;
            for (int d = 0; d < dim; d++) dot += (double)x[d] * e[d];
            scores[(size_t)b * c->count + k] = (float)(dot * c->joint.scale + c->joint.bias);
        }
    if (probs) score_probs(c, scores, B, probs);
    return 0;
}

int vit_zero_shot(vit_context *image, const vit_classes *c, const float *pixels, int B,
                  float *scores, float *probs, vit_error *err) {
    const int dim = vit_joint_dim(image);
    if (dim != c->dim)
        return vit_fail(err,
                        "zero-shot: the image model's joint dim %d is not the classes' %d (both "
                        "towers must come from one CLIP or SigLIP folder)",
                        dim, c->dim);
    float *features = malloc(sizeof(float) * (size_t)(B > 0 ? B : 1) * dim);
    if (!features) return vit_fail(err, "out of memory");
    int rc = vit_embed(image, pixels, B, VIT_POOL_JOINT, features, err);
    if (rc == 0) rc = vit_classes_score(c, features, B, scores, probs, err);
    free(features);
    return rc;
}

int vit_classes_top_k(const vit_classes *c, const float *probs, int k, vit_prediction *top,
                      vit_error *err) {
    return api_top_k(c->names, c->count, probs, k, top, err);
}
