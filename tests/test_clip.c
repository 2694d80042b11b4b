/* CLIP and SigLIP towers against the float64 goldens of tools/clip_reference.py (tests/data:
 * clip-micro, quick_gelu, legacy eos_token_id 2; clip-micro-gelu; siglip-micro, the attention
 * probe and a bidirectional text tower pooled at the last position): image and text embeddings
 * and the scaled (SigLIP: and biased) cosine scores, on the plain fp32 path and on each backend's
 * prepared layers.
 *
 * Tolerance 1e-4 on embeddings and scores: the float32 PyTorch forward of the same models is
 * within 3.1e-6 of the float64 one (golden.json), so 1e-4 leaves room for another summation order
 * while a wrong part (a missing LayerNorm, the wrong pooled row, quick_gelu for gelu) moves them
 * by 1e-2 or more. */
#include "tests/testutil.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vit/core/gemm.h"
#include "vit/io/model_dir.h"
#include "vit/model/text_model.h"
#include "vit/model/vit_model.h"

#define TOL      1e-4
#define IMAGES   3
#define TEXTS    5
#define MAX_TEXT 32

static const char *const image_names[IMAGES] = {"rgb_64x48.png", "tall_40x400.jpg",
                                                "palette_120x90.png"};

typedef struct {
    const char *dir;
    int dim;
    float image[IMAGES][64], text[TEXTS][64];
    int backends; /* how many ways each tower ran */
} run;

static double worst_seen; /* the largest difference of the model under test */

static void expect_close(const char *what, const float *got, const float *want, size_t n) {
    double worst = 0;
    for (size_t i = 0; i < n; i++) worst = fmax(worst, fabs((double)got[i] - want[i]));
    if (!(worst <= TOL)) fail_msg("%s: max |difference| %.3g, more than %g", what, worst, TOL);
    worst_seen = fmax(worst_seen, worst);
}

static void image_tower(run *r) {
    model m;
    vit_error err = {0};
    if (model_load_tower(&m, r->dir, TOWER_IMAGE, &err) != 0) fail_msg("%s", err.msg);
    r->dim = m.cfg.num_labels;
    assert_true(r->dim <= 64);
    vit_acts a;
    if (vit_acts_alloc(&a, &m, IMAGES, 0, VIT_ACTS_INFER, &err) != 0) fail_msg("%s", err.msg);
    const size_t F = (size_t)m.cfg.num_channels * m.cfg.image_size * m.cfg.image_size;
    float *pixels = test_alloc_floats(IMAGES * F), want[IMAGES][64], got[IMAGES * 64];
    for (int i = 0; i < IMAGES; i++) {
        char name[128];
        size_t n;
        snprintf(name, sizeof name, "image/%s/pixels", image_names[i]);
        float *p = test_golden_tensor(r->dir, name, &n);
        assert_int_equal(n, F);
        memcpy(pixels + i * F, p, sizeof(float) * F);
        free(p);
        snprintf(name, sizeof name, "image/%s/embeds", image_names[i]);
        float *e = test_golden_tensor(r->dir, name, &n);
        assert_int_equal(n, (size_t)r->dim);
        memcpy(want[i], e, sizeof(float) * n);
        free(e);
    }
    int list[3];
    for (int k = 0, nb = test_backends(list); k < nb; k++) {
        gemm_state *s = test_prepare(&m, list[k], IMAGES, a.tokens);
        a.gemm = s;
        if (vit_model_forward(&m, &a, pixels, IMAGES, NULL, got, &err) != 0)
            fail_msg("%s", err.msg);
        for (int i = 0; i < IMAGES; i++) {
            char what[256];
            snprintf(what, sizeof what, "%s image %s (backend %d)", r->dir, image_names[i],
                     list[k]);
            expect_close(what, got + (size_t)i * r->dim, want[i], (size_t)r->dim);
        }
        for (int i = 0; i < IMAGES; i++)
            memcpy(r->image[i], got + (size_t)i * r->dim, sizeof(float) * (size_t)r->dim);
        gemm_state_free(s);
        model_unprepare(&m);
    }
    r->backends = test_backends(list);
    free(pixels);
    vit_acts_free(&a);
    model_free(&m);
}

/* The texts' golden ids, padded to the longest with the last id of the shortest (the end token,
 * which is also CLIP's pad token; SigLIP's texts come padded to max_length). */
static int text_ids(const run *r, int32_t ids[TEXTS][MAX_TEXT]) {
    int T = 0, len[TEXTS];
    for (int i = 0; i < TEXTS; i++) {
        char name[64];
        size_t n;
        snprintf(name, sizeof name, "text/%d/ids", i);
        float *f = test_golden_tensor(r->dir, name, &n);
        assert_true(n <= MAX_TEXT);
        for (size_t t = 0; t < n; t++) ids[i][t] = (int32_t)f[t];
        len[i] = (int)n;
        T = len[i] > T ? len[i] : T;
        free(f);
    }
    for (int i = 0; i < TEXTS; i++)
        for (int t = len[i]; t < T; t++) ids[i][t] = ids[i][len[i] - 1];
    return T;
}

static void text_tower(run *r) {
    model m;
    vit_error err = {0};
    if (model_load_tower(&m, r->dir, TOWER_TEXT, &err) != 0) fail_msg("%s", err.msg);
    assert_int_equal(m.cfg.num_labels, r->dim);
    int32_t ids[TEXTS][MAX_TEXT], packed[TEXTS * MAX_TEXT];
    const int T = text_ids(r, ids);
    for (int i = 0; i < TEXTS; i++) memcpy(packed + i * T, ids[i], sizeof(int32_t) * (size_t)T);
    text_acts a;
    if (text_acts_alloc(&a, &m, TEXTS, T, 0, &err) != 0) fail_msg("%s", err.msg);
    float got[TEXTS * 64];
    int list[3];
    for (int k = 0, nb = test_backends(list); k < nb; k++) {
        gemm_state *s = test_prepare(&m, list[k], TEXTS, T);
        a.gemm = s;
        if (text_model_forward(&m, &a, packed, NULL, TEXTS, T, NULL, got, &err) != 0)
            fail_msg("%s", err.msg);
        for (int i = 0; i < TEXTS; i++) {
            char name[64], what[256];
            size_t n;
            snprintf(name, sizeof name, "text/%d/embeds", i);
            float *want = test_golden_tensor(r->dir, name, &n);
            snprintf(what, sizeof what, "%s text %d (backend %d)", r->dir, i, list[k]);
            expect_close(what, got + (size_t)i * r->dim, want, n);
            free(want);
        }
        for (int i = 0; i < TEXTS; i++)
            memcpy(r->text[i], got + (size_t)i * r->dim, sizeof(float) * (size_t)r->dim);
        gemm_state_free(s);
        model_unprepare(&m);
    }
    /* the scores: cosine similarities times exp(logit_scale) (+ logit_bias) */
    float scores[IMAGES * TEXTS];
    for (int i = 0; i < IMAGES; i++)
        for (int t = 0; t < TEXTS; t++) {
            double dot = 0, ni = 0, nt = 0;
            for (int d = 0; d < r->dim; d++) {
                dot += (double)r->image[i][d] * r->text[t][d];
                ni += (double)r->image[i][d] * r->image[i][d];
                nt += (double)r->text[t][d] * r->text[t][d];
            }
            scores[i * TEXTS + t] = (float)(dot / sqrt(ni * nt) * exp(m.logit_scale[0]) +
                                            (m.logit_bias ? m.logit_bias[0] : 0.0));
        }
    size_t n;
    float *want = test_golden_tensor(r->dir, "logits_per_image", &n);
    assert_int_equal(n, IMAGES * TEXTS);
    char what[256];
    snprintf(what, sizeof what, "%s logits_per_image", r->dir);
    expect_close(what, scores, want, n);
    free(want);
    text_acts_free(&a);
    model_free(&m);
}

static void check_model(const char *dir) {
    run r = {.dir = dir};
    worst_seen = 0;
    image_tower(&r);
    text_tower(&r);
    print_message("%s: %d images and %d texts, embeddings (%d) and scores within %.2g of float64 "
                  "on %d paths (plain fp32, OpenBLAS, oneDNN where built)\n",
                  dir, IMAGES, TEXTS, r.dim, worst_seen, r.backends);
}

static void test_clip_quick_gelu(void **state) {
    (void)state;
    check_model("tests/data/clip-micro");
}

static void test_clip_gelu(void **state) {
    (void)state;
    check_model("tests/data/clip-micro-gelu");
}

static void test_siglip(void **state) {
    (void)state;
    check_model("tests/data/siglip-micro");
}

/* CLIPConfig's sub-config fields as their CLIPTextConfig() / CLIPVisionConfig() defaults, the form
 * openai/clip-vit-large-patch14's text_config has beside its text_config_dict. */
static cJSON *default_tower(int text) {
    cJSON *t = cJSON_CreateObject();
    cJSON_AddNumberToObject(t, "hidden_size", text ? 512 : 768);
    cJSON_AddNumberToObject(t, "intermediate_size", text ? 2048 : 3072);
    cJSON_AddNumberToObject(t, "num_attention_heads", text ? 8 : 12);
    cJSON_AddNumberToObject(t, "num_hidden_layers", 12);
    cJSON_AddNumberToObject(t, "projection_dim", 512);
    cJSON_AddStringToObject(t, "hidden_act", "quick_gelu");
    if (text) {
        cJSON_AddNumberToObject(t, "vocab_size", 49408);
        cJSON_AddNumberToObject(t, "max_position_embeddings", 77);
        cJSON_AddNumberToObject(t, "eos_token_id", 49407);
    } else {
        cJSON_AddNumberToObject(t, "image_size", 224);
        cJSON_AddNumberToObject(t, "patch_size", 32);
    }
    return t;
}

/* clip-micro's config.json rewritten as the old CLIP files have it (openai/clip-vit-large-patch14):
 * each tower's values in text_config_dict / vision_config_dict and text_config / vision_config at
 * CLIPTextConfig's and CLIPVisionConfig's defaults; transformers' CLIPConfig lets the dicts win,
 * so the folder must load as clip-micro and give its goldens. The weights and goldens are links
 * to clip-micro's. */
static void test_clip_config_dicts(void **state) {
    (void)state;
    char dir[4096], cwd[2048], from[4096], to[8192];
    snprintf(dir, sizeof dir, "%s/clip-config-dicts", test_tmpdir());
    assert_true(mkdir(dir, 0700) == 0 || errno == EEXIST);
    assert_non_null(getcwd(cwd, sizeof cwd));
    static const char *const links[] = {"model.safetensors", "golden.safetensors"};
    for (int i = 0; i < 2; i++) {
        snprintf(from, sizeof from, "%s/tests/data/clip-micro/%s", cwd, links[i]);
        snprintf(to, sizeof to, "%s/%s", dir, links[i]);
        assert_true(symlink(from, to) == 0 || errno == EEXIST);
    }
    size_t n;
    char *text = (char *)read_whole_file("tests/data/clip-micro/config.json", &n);
    cJSON *root = cJSON_Parse(text);
    free(text);
    assert_non_null(root);
    static const char *const towers[] = {"text_config", "vision_config"};
    for (int t = 0; t < 2; t++) {
        char dict[32];
        snprintf(dict, sizeof dict, "%s_dict", towers[t]);
        cJSON *values = cJSON_DetachItemFromObjectCaseSensitive(root, towers[t]);
        assert_non_null(values);
        cJSON_AddItemToObject(root, dict, values);
        cJSON_AddItemToObject(root, towers[t], default_tower(t == 0));
    }
    cJSON_ReplaceItemInObjectCaseSensitive(root, "transformers_version", cJSON_CreateNull());
    char *json = cJSON_Print(root);
    snprintf(to, sizeof to, "%s/config.json", dir);
    FILE *f = fopen(to, "w");
    assert_non_null(f);
    fputs(json, f);
    fclose(f);
    free(json);
    cJSON_Delete(root);
    check_model(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_clip_quick_gelu),
        cmocka_unit_test(test_clip_gelu),
        cmocka_unit_test(test_siglip),
        cmocka_unit_test(test_clip_config_dicts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
