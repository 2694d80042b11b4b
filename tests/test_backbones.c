/* DINOv2 and BEiT (and data2vec-vision) against the float64 goldens of tools/dinov2_reference.py
 * and tools/beit_reference.py (docs/SPEC.md §11, §12): six micro models in exact Hugging Face
 * layout (registers on and off, SwiGLU on and off, a base model saved bare, per-layer and shared
 * relative position biases, absolute positions on and off, mean and CLS pooling), each at its
 * preprocessor's size and at another one (positions and relative-bias tables resized):
 * - the options config.json gives (hand-read from each file) and the errors of bad configs;
 * - the preprocessed pixels, the positions as added and the relative biases as built;
 * - the embeddings of the first image (patches, CLS, registers, positions);
 * - the last layer's output (before the head), logits, last_hidden_state and pooler_output on
 *   the plain fp32 path and on each backend's prepared layers;
 * - bf16 and int8 within stated bounds of fp32.
 *
 * Tolerance 1e-4 on every float: the float32 PyTorch forward of these models is within 2.4e-6 of
 * the float64 one (golden.json), so 1e-4 leaves room for another summation order, while a wrong
 * part (no layer scale, registers in the mean, the legacy +0.1 interpolation, a missing bias)
 * moves them by 1e-2 or more (golden.json's other_interpolations: 0.05 to 0.1). */
#include "tests/testutil.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "image/image.h"
#include "patch/patch.h"
#include "vit/io/model_dir.h"
#include "vit/model/vit_model.h"
#include "vit/vit.h"

#define TOL    1e-4
#define IMAGES 3
#define MODELS 6

static const char *const models[MODELS] = {"dinov2-micro",      "dinov2-micro-swiglu",
                                           "dinov2-reg-micro",  "beit-micro",
                                           "beit-micro-shared", "data2vec-vision-micro"};

/* golden.json: the two runs (size and goldens file) and the images. */
typedef struct {
    char dir[128];
    int sizes[2];
    char files[2][64];
    char images[IMAGES][64];
} golden_info;

static void read_info(const char *name, golden_info *g) {
    snprintf(g->dir, sizeof g->dir, TEST_DATA "/%s", name);
    char path[256];
    snprintf(path, sizeof path, "%s/golden.json", g->dir);
    char *text = (char *)read_whole_file(path, NULL);
    assert_non_null(text);
    cJSON *root = cJSON_Parse(text);
    const cJSON *runs = cJSON_GetObjectItem(root, "runs");
    assert_int_equal(cJSON_GetArraySize(runs), 2);
    for (int r = 0; r < 2; r++) {
        const cJSON *run = cJSON_GetArrayItem(runs, r);
        g->sizes[r] = cJSON_GetObjectItem(run, "size")->valueint;
        snprintf(g->files[r], sizeof g->files[r], "%s",
                 cJSON_GetObjectItem(run, "file")->valuestring);
        const cJSON *images = cJSON_GetObjectItem(run, "images");
        assert_int_equal(cJSON_GetArraySize(images), IMAGES);
        for (int i = 0; i < IMAGES; i++)
            snprintf(g->images[i], sizeof g->images[i], "%s",
                     cJSON_GetObjectItem(cJSON_GetArrayItem(images, i), "image")->valuestring);
    }
    cJSON_Delete(root);
    free(text);
}

/* A tensor of run r's goldens; NULL when absent and optional, else a failure. */
static float *golden(const golden_info *g, int r, const char *name, size_t *n, int optional) {
    char path[256];
    snprintf(path, sizeof path, "%s/%s", g->dir, g->files[r]);
    float *t = test_read_tensor(path, name, n);
    if (!t && !optional) fail_msg("%s: no tensor '%s'", path, name);
    return t;
}

static float *image_golden(const golden_info *g, int r, int i, const char *what, size_t *n) {
    char name[160];
    snprintf(name, sizeof name, "%s/%s", g->images[i], what);
    return golden(g, r, name, n, 0);
}

static double worst_seen;

static void expect_close(const char *what, const float *got, const float *want, size_t n,
                         double tol) {
    double worst = 0;
    for (size_t i = 0; i < n; i++) worst = fmax(worst, fabs((double)got[i] - want[i]));
    if (!(worst <= tol)) fail_msg("%s: max |difference| %.3g, more than %g", what, worst, tol);
    worst_seen = fmax(worst_seen, worst);
}

static void load(model *m, const char *dir) {
    vit_error err = {0};
    if (model_load(m, dir, &err) != 0) fail_msg("%s", err.msg);
}

/* ---- configs ---- */

static void test_options(void **state) {
    (void)state;
    static const struct {
        const char *name;
        int bare, registers, swiglu, I, abs_pos, antialias, ls, key_bias, rel, shared;
        pool_kind pool;
        const char *arch, *prefix;
    } want[MODELS] = {
        {"dinov2-micro", 0, 0, 0, 128, 1, 0, 1, 1, 0, 0, POOL_CLS_MEAN,
         "Dinov2ForImageClassification", "dinov2."},
        {"dinov2-micro-swiglu", 1, 0, 1, 88, 1, 0, 1, 1, 0, 0, POOL_CLS, "Dinov2Model", "dinov2."},
        {"dinov2-reg-micro", 0, 4, 0, 192, 1, 1, 1, 1, 0, 0, POOL_CLS_MEAN,
         "Dinov2WithRegistersForImageClassification", "dinov2_with_registers."},
        {"beit-micro", 0, 0, 0, 96, 0, 0, 1, 0, 1, 0, POOL_MEAN, "BeitForImageClassification",
         "beit."},
        {"beit-micro-shared", 0, 0, 0, 192, 1, 0, 0, 0, 0, 1, POOL_CLS,
         "BeitForImageClassification", "beit."},
        {"data2vec-vision-micro", 0, 0, 0, 128, 0, 0, 1, 0, 1, 0, POOL_MEAN,
         "Data2VecVisionForImageClassification", "data2vec_vision."},
    };
    for (int i = 0; i < MODELS; i++) {
        char dir[128];
        snprintf(dir, sizeof dir, TEST_DATA "/%s", want[i].name);
        model m;
        load(&m, dir);
        const model_config *c = &m.cfg;
        const tower_options *o = &c->opt;
        print_message("  %s: %s, %d tensors\n", want[i].name, config_architecture(c),
                      m.num_entries);
        assert_int_equal(c->bare, want[i].bare);
        assert_int_equal(o->registers, want[i].registers);
        assert_int_equal(o->swiglu, want[i].swiglu);
        assert_int_equal(c->intermediate_size, want[i].I);
        assert_int_equal(o->abs_pos, want[i].abs_pos);
        assert_int_equal(o->pos_antialias, want[i].antialias);
        assert_int_equal(o->layer_scale, want[i].ls);
        assert_int_equal(o->key_bias, want[i].key_bias);
        assert_int_equal(o->rel_bias, want[i].rel);
        assert_int_equal(o->shared_rel_bias, want[i].shared);
        assert_int_equal(o->pool, want[i].pool);
        assert_int_equal(o->head, want[i].bare ? HEAD_NONE : HEAD_CLASSIFIER);
        assert_string_equal(config_architecture(c), want[i].arch);
        assert_string_equal(model_prefix(&m), want[i].prefix);
        assert_int_equal(config_special_tokens(c), 1 + want[i].registers);
        if (want[i].bare) assert_int_equal(c->num_labels, c->hidden_size); /* pooler_output */
        model_free(&m);
    }
}

static void expect_error(const char *json, const char *needle) {
    model_config cfg;
    vit_error err = {0};
    assert_int_equal(model_config_parse(json, "m/config.json", &cfg, &err), -1);
    print_message("  %s\n", err.msg);
    if (!strstr(err.msg, "m/config.json") || !strstr(err.msg, needle))
        fail_msg("expected '%s' in '%s'", needle, err.msg);
}

static void test_config_defaults_and_errors(void **state) {
    (void)state;
    model_config c;
    vit_error err = {0};
    /* transformers' Dinov2Config / BeitConfig defaults; no architectures: the base model */
    assert_int_equal(model_config_parse("{\"model_type\": \"dinov2\"}", "m", &c, &err), 0);
    assert_true(c.bare && c.patch_size == 14 && c.layer_norm_eps == 1e-6f);
    assert_int_equal(c.intermediate_size, 3072);
    assert_true(c.opt.layer_scale && !c.opt.swiglu && c.opt.processor_size);
    model_config_free(&c);
    assert_int_equal(model_config_parse("{\"model_type\": \"dinov2\", \"use_swiglu_ffn\": true, "
                                        "\"hidden_size\": 1536, \"num_attention_heads\": 24}",
                                        "m", &c, &err),
                     0);
    assert_int_equal(c.intermediate_size, 4096); /* dinov2-giant's SwiGLU width */
    model_config_free(&c);
    assert_int_equal(
        model_config_parse("{\"model_type\": \"dinov2_with_registers\"}", "m", &c, &err), 0);
    assert_int_equal(c.opt.registers, 4);
    assert_int_equal(config_special_tokens(&c), 5);
    model_config_free(&c);
    assert_int_equal(model_config_parse("{\"model_type\": \"beit\"}", "m", &c, &err), 0);
    assert_true(c.bare && c.opt.layer_scale && c.opt.pool == POOL_MEAN && !c.opt.abs_pos);
    assert_true(!c.opt.rel_bias && !c.opt.shared_rel_bias && c.patch_size == 16);
    model_config_free(&c);
    assert_int_equal(model_config_parse("{\"model_type\": \"beit\", \"layer_scale_init_value\": 0,"
                                        " \"use_mean_pooling\": false}",
                                        "m", &c, &err),
                     0);
    assert_true(!c.opt.layer_scale && c.opt.pool == POOL_CLS);
    model_config_free(&c);
    expect_error("{\"model_type\": \"beit\", \"architectures\": [\"BeitForMaskedImageModeling\"]}",
                 "BeitForMaskedImageModeling");
    expect_error("{\"model_type\": \"dinov2\", \"architectures\": [\"Dinov2Backbone\"]}",
                 "Dinov2Backbone");
    expect_error("{\"model_type\": \"dinov2\", \"mlp_ratio\": -1}", "mlp_ratio");
    expect_error("{\"model_type\": \"dinov2\", \"mlp_ratio\": 0.001}", "mlp_ratio");
    expect_error("{\"model_type\": \"dinov2_with_registers\", \"num_register_tokens\": -2}",
                 "num_register_tokens");
    expect_error("{\"model_type\": \"beit\", \"use_relative_position_bias\": \"yes\"}",
                 "use_relative_position_bias");
    expect_error("{\"model_type\": \"beit\", \"use_mean_pooling\": 3}", "use_mean_pooling");
    expect_error("{\"model_type\": \"dinov3\"}", "dinov2_with_registers");
}

/* ---- pixels, positions, biases, embeddings ---- */

static void test_pixels(void **state) {
    (void)state;
    for (int k = 0; k < MODELS; k++) {
        golden_info g;
        read_info(models[k], &g);
        for (int r = 0; r < 2; r++) {
            preprocess_config p;
            vit_error err = {0};
            if (model_dir_load_preprocess(g.dir, &p, &err) != 0) fail_msg("%s", err.msg);
            preprocess_config_set_size(&p, g.sizes[r]);
            const size_t F = (size_t)3 * g.sizes[r] * g.sizes[r];
            float *got = test_alloc_floats(F);
            for (int i = 0; i < IMAGES; i++) {
                char path[256], what[256];
                snprintf(path, sizeof path, GOLDEN_IMAGES "/%s", g.images[i]);
                if (preprocess_file(&p, path, 0, 0, got, &err) != 0) fail_msg("%s", err.msg);
                size_t n;
                float *want = image_golden(&g, r, i, "pixels", &n);
                assert_int_equal(n, F);
                snprintf(what, sizeof what, "%s %s pixels at %d", models[k], g.images[i],
                         g.sizes[r]);
                expect_close(what, got, want, F, 1e-6);
                free(want);
            }
            free(got);
        }
    }
}

/* The fields a processor's file leaves out take its class's defaults (transformers'
 * BitImageProcessor and BeitImageProcessor __init__), and Bit reads an integer size as the short
 * side (get_size_dict(default_to_square=False)). */
static void read_processor(const char *json, preprocess_config *p) {
    char dir[4200], name[64];
    static int n;
    snprintf(name, sizeof name, "pp%d", n++);
    snprintf(dir, sizeof dir, "%s/%s", test_tmpdir(), name);
    assert_int_equal(mkdir(dir, 0777), 0);
    snprintf(name + strlen(name), sizeof name - strlen(name), "/preprocessor_config.json");
    write_temp_file(name, json, strlen(json));
    vit_error err = {0};
    if (preprocess_config_read(dir, 99, 3, p, &err) != 0) fail_msg("%s", err.msg);
}

static void test_processor_defaults(void **state) {
    (void)state;
    preprocess_config p;
    read_processor("{\"image_processor_type\": \"BitImageProcessor\", \"size\": 256}", &p);
    assert_int_equal(p.shortest_edge, 256);
    assert_true(p.do_center_crop && p.crop_height == 224 && p.crop_width == 224);
    assert_int_equal(p.resample, RESAMPLE_BICUBIC);
    assert_true(p.mean[0] == 0.48145466f && p.std[2] == 0.27577711f); /* OPENAI_CLIP_MEAN/STD */
    read_processor("{\"image_processor_type\": \"BitImageProcessor\"}", &p);
    assert_int_equal(p.shortest_edge, 224);
    read_processor("{\"feature_extractor_type\": \"BeitFeatureExtractor\", \"size\": 300, "
                   "\"reduce_labels\": true}",
                   &p);
    assert_true(p.shortest_edge == 0 && p.resize_height == 300 && p.resize_width == 300);
    assert_true(p.do_center_crop && p.crop_height == 224 && p.resample == RESAMPLE_BICUBIC);
    assert_true(p.mean[1] == 0.5f && p.std[1] == 0.5f);
    read_processor("{\"image_processor_type\": \"BeitImageProcessor\", \"do_center_crop\": false,"
                   " \"crop_size\": 32}",
                   &p);
    assert_true(p.resize_height == 256 && p.resize_width == 256 && !p.do_center_crop);
    int c, h, w;
    preprocess_output_shape(&p, &c, &h, &w);
    assert_true(h == 256 && w == 256);
    read_processor("{\"size\": 256}", &p); /* ViTImageProcessor: square */
    assert_true(p.shortest_edge == 0 && p.resize_height == 256 && !p.do_center_crop);
}

/* The first image's embeddings (tokens before the first layer) of run r, from its golden pixels:
 * the patch projection, then CLS, the registers and the positions (resized at another size) as the
 * forward places them. */
static void check_embeddings(const model *m, const vit_acts *a, const golden_info *g, int r) {
    const model_config *c = &m->cfg;
    const int D = c->hidden_size, N = a->grid_h * a->grid_w, T = a->tokens, P = c->patch_size;
    float *pixels = image_golden(g, r, 0, "pixels", NULL);
    float *patches = test_alloc_floats((size_t)N * a->patch_dim),
          *embed = test_alloc_floats((size_t)N * D);
    float *x = test_alloc_floats((size_t)T * D);
    patch_extract(patches, pixels, 1, c->num_channels, a->height, a->width, P);
    linear_forward(embed, patches, m->patch_w, m->patch_b, N, a->patch_dim, D);
    patch_tokens_place(x, embed, m->cls_token, c->opt.special, m->register_tokens, c->opt.registers,
                       a->pos, 1, N, D);
    size_t n;
    char name[160], what[256];
    snprintf(name, sizeof name, "%s/embeddings", g->images[0]);
    float *want = golden(g, r, name, &n, 0);
    assert_int_equal(n, (size_t)T * D);
    snprintf(what, sizeof what, "%s embeddings at %d", g->dir, a->height);
    expect_close(what, x, want, n, TOL);
    free(want), free(pixels), free(patches), free(embed), free(x);
}

/* The positions as added ([1 + m², D]) and the biases as built ([H, T, T] per layer, or the shared
 * one), at run r's size. */
static void check_positions_and_biases(const model *m, vit_acts *a, const golden_info *g, int r) {
    const int D = m->cfg.hidden_size, T = a->tokens, H = m->cfg.num_heads;
    size_t n;
    char what[256];
    float *pos = golden(g, r, "position_embeddings", &n, 1);
    assert_true((pos != NULL) == (m->cfg.opt.abs_pos != 0));
    if (pos) {
        assert_int_equal(n, (size_t)(1 + a->grid_h * a->grid_w) * D);
        snprintf(what, sizeof what, "%s positions at %d", g->dir, a->height);
        expect_close(what, a->pos, pos, n, TOL);
        free(pos);
    }
    for (int b = 0; b < a->nbias; b++) {
        char name[64];
        if (m->cfg.opt.rel_bias)
            snprintf(name, sizeof name, "relative_position_bias.%d", b);
        else
            snprintf(name, sizeof name, "relative_position_bias.shared");
        float *want = golden(g, r, name, &n, 0);
        assert_int_equal(n, (size_t)H * T * T);
        snprintf(what, sizeof what, "%s %s at %d", g->dir, name, a->height);
        expect_close(what, a->bias + b * n, want, n, TOL);
        free(want);
    }
}

/* ---- the whole forward ---- */

typedef struct {
    float *pixels, *logits, *pooled, *hidden; /* [IMAGES, ...] goldens (logits NULL: bare) */
    size_t F, K, D, TD;
} goldens;

static void goldens_load(goldens *w, const model *m, const golden_info *g, int r,
                         const vit_acts *a) {
    memset(w, 0, sizeof *w);
    w->F = (size_t)m->cfg.num_channels * a->height * a->width;
    w->K = (size_t)m->cfg.num_labels, w->D = (size_t)m->cfg.hidden_size;
    w->TD = (size_t)a->tokens * w->D;
    w->pixels = test_alloc_floats(IMAGES * w->F);
    w->pooled = test_alloc_floats(IMAGES * w->D);
    w->hidden = test_alloc_floats(IMAGES * w->TD);
    if (!m->cfg.bare) w->logits = test_alloc_floats(IMAGES * w->K);
    for (int i = 0; i < IMAGES; i++) {
        const char *what[] = {"pixels", "pooler_output", "last_hidden_state", "logits"};
        float *to[] = {w->pixels + i * w->F, w->pooled + i * w->D, w->hidden + i * w->TD,
                       w->logits ? w->logits + i * w->K : NULL};
        const size_t sizes[] = {w->F, w->D, w->TD, w->K};
        for (int t = 0; t < 4 && to[t]; t++) {
            size_t n;
            float *v = image_golden(g, r, i, what[t], &n);
            assert_int_equal(n, sizes[t]);
            memcpy(to[t], v, sizeof(float) * n);
            free(v);
        }
    }
}

static void goldens_free(goldens *w) {
    free(w->pixels), free(w->logits), free(w->pooled), free(w->hidden);
}

/* The last forward's outputs against the goldens. */
static void check_outputs(const model *m, const vit_acts *a, const goldens *w, const float *logits,
                          const char *label) {
    float *hidden = test_alloc_floats(w->TD);
    char what[300];
    for (int i = 0; i < IMAGES; i++) {
        if (w->logits) {
            snprintf(what, sizeof what, "%s logits %d", label, i);
            expect_close(what, logits + i * w->K, w->logits + i * w->K, w->K, TOL);
        } else { /* a base model's output is its pooler_output */
            snprintf(what, sizeof what, "%s output %d", label, i);
            expect_close(what, logits + i * w->K, w->pooled + i * w->D, w->D, TOL);
        }
        snprintf(what, sizeof what, "%s pooler_output %d", label, i);
        expect_close(what, vit_acts_cls(a) + i * w->D, w->pooled + i * w->D, w->D, TOL);
        vit_model_last_hidden(m, a, i, hidden);
        snprintf(what, sizeof what, "%s last_hidden_state %d", label, i);
        expect_close(what, hidden, w->hidden + i * w->TD, w->TD, TOL);
    }
    free(hidden);
}

/* The first image's last layer output, before the head (where a mismatch starts: the encoder or
 * the pooling). */
static void check_last_layer(const model *m, const vit_acts *a, const golden_info *g, int r,
                             int backend) {
    char name[160], what[300];
    snprintf(name, sizeof name, "%s/layer.%d", g->images[0], m->cfg.num_layers - 1);
    size_t n;
    float *want = golden(g, r, name, &n, 0);
    assert_int_equal(n, (size_t)a->tokens * m->cfg.hidden_size);
    snprintf(what, sizeof what, "%s layer %d at %d (backend %d)", g->dir, m->cfg.num_layers - 1,
             a->height, backend);
    expect_close(what, vit_acts_hidden(a), want, n, TOL);
    free(want);
}

static void run_goldens(const char *name, int r) {
    golden_info g;
    read_info(name, &g);
    model m;
    load(&m, g.dir);
    vit_acts a;
    vit_error err = {0};
    if (vit_acts_alloc(&a, &m, IMAGES, g.sizes[r], VIT_ACTS_INFER, &err) != 0)
        fail_msg("%s", err.msg);
    goldens w;
    goldens_load(&w, &m, &g, r, &a);
    check_embeddings(&m, &a, &g, r);
    float *logits = test_alloc_floats(IMAGES * w.K);
    int list[3];
    worst_seen = 0;
    for (int k = 0, nb = test_backends(list); k < nb; k++) {
        gemm_state *s = test_prepare(&m, list[k], IMAGES, a.tokens);
        a.gemm = s;
        if (vit_model_forward(&m, &a, w.pixels, IMAGES, NULL, logits, &err) != 0)
            fail_msg("%s", err.msg);
        if (k == 0) check_positions_and_biases(&m, &a, &g, r);
        check_last_layer(&m, &a, &g, r, list[k]);
        char label[200];
        snprintf(label, sizeof label, "%s at %d (backend %d)", name, g.sizes[r], list[k]);
        check_outputs(&m, &a, &w, logits, label);
        gemm_state_free(s);
        model_unprepare(&m);
    }
    print_message("  %-22s at %2d: max |difference| %.2g on %d ways\n", name, g.sizes[r],
                  worst_seen, test_backends(list));
    free(logits);
    goldens_free(&w);
    vit_acts_free(&a);
    model_free(&m);
}

static void test_forward_goldens(void **state) {
    (void)state;
    for (int k = 0; k < MODELS; k++)
        for (int r = 0; r < 2; r++) run_goldens(models[k], r);
}

/* ---- reduced precision ---- */

/* bf16 and int8 (oneDNN) logits, or a base model's pooled features, against the fp32 goldens at
 * the processor's size. These random-weight models' logits reach 3 to 9; bf16 keeps 8 bits of
 * mantissa per operand, int8 7 to 8 bits of weight per channel and 8 of activation per token.
 * Measured worst over the six models: bf16 0.036, int8 0.31 (the ViT micro models of tests/data
 * give 0.16 and 0.22 under int8 on logits of 3 and 6); the bounds are about twice that. They
 * catch a broken reduced-precision path (a layer scale lost or folded twice, a bias table not
 * added: errors of the order of the logits), not a subtle part: test_forward_goldens does that. */
#define BF16_BOUND 0.08
#define INT8_BOUND 0.6

static void test_precisions(void **state) {
    (void)state;
    if (!gemm_backend_available(GEMM_ONEDNN)) {
        print_message("SKIP int8: no oneDNN in this build; bf16 on OpenBLAS is fp32's numbers\n");
        skip();
    }
    const gemm_precision low[] = {PRECISION_BF16, PRECISION_INT8};
    const double bound[] = {BF16_BOUND, INT8_BOUND};
    double worst[2] = {0, 0};
    for (int k = 0; k < MODELS; k++) {
        golden_info g;
        read_info(models[k], &g);
        model m;
        load(&m, g.dir);
        vit_acts a;
        vit_error err = {0};
        if (vit_acts_alloc(&a, &m, IMAGES, g.sizes[0], VIT_ACTS_INFER, &err) != 0)
            fail_msg("%s", err.msg);
        goldens w;
        goldens_load(&w, &m, &g, 0, &a);
        const float *want = w.logits ? w.logits : w.pooled;
        float *got = test_alloc_floats(IMAGES * w.K);
        for (int p = 0; p < 2; p++) {
            if (model_prepare(&m, GEMM_ONEDNN, low[p], IMAGES, a.tokens, &err) != 0)
                fail_msg("%s", err.msg);
            gemm_state *s = model_gemm_state(&m, &err);
            a.gemm = s;
            if (vit_model_forward(&m, &a, w.pixels, IMAGES, NULL, got, &err) != 0)
                fail_msg("%s", err.msg);
            double d = 0;
            for (size_t i = 0; i < IMAGES * w.K; i++) d = fmax(d, fabs((double)got[i] - want[i]));
            print_message("  %-22s %s: max |difference| %.3g\n", models[k], p ? "int8" : "bf16", d);
            if (!(d <= bound[p]))
                fail_msg("%s %s: %.3g above %g", models[k], p ? "int8" : "bf16", d, bound[p]);
            worst[p] = fmax(worst[p], d);
            gemm_state_free(s);
            model_unprepare(&m);
        }
        free(got);
        goldens_free(&w);
        vit_acts_free(&a);
        model_free(&m);
    }
    print_message("  worst: bf16 %.3g, int8 %.3g\n", worst[0], worst[1]);
}

/* ---- a rectangle of as many patches as the table (tools/dinov2_reference.py --rect) ---- */

#define RECT_GOLDEN TEST_DATA "/dinov2-micro/golden-28x112.safetensors"

/* dinov2-micro (56x56, patch 14: a 4x4 table) behind a BitImageProcessor resizing to 28x112
 * without a crop: a 2x8 grid, 16 patches as the table has, but not square, so transformers
 * resizes the table to 2x8 (bicubic) rather than add it as it is (golden-28x112.json: that would
 * move the logits by 0.30). The positions as added, then the processor's pixels and the logits
 * through the library, from a folder with that processor. */
static void test_rectangle_resizes_positions(void **state) {
    (void)state;
    model m;
    load(&m, TEST_DATA "/dinov2-micro");
    vit_acts a;
    vit_error err = {0};
    if (vit_acts_alloc_rect(&a, &m, 1, 28, 112, VIT_ACTS_INFER, &err) != 0) fail_msg("%s", err.msg);
    assert_true(a.grid_h == 2 && a.grid_w == 8 && a.tokens == 17);
    size_t n;
    float *pos = test_read_tensor(RECT_GOLDEN, "position_embeddings", &n);
    assert_non_null(pos);
    assert_int_equal(n, (size_t)17 * m.cfg.hidden_size);
    expect_close("positions at 28x112", a.pos, pos, n, 1e-6);
    free(pos);
    vit_acts_free(&a);
    model_free(&m);

    char dir[4200], path[4300];
    snprintf(dir, sizeof dir, "%s/dinov2-rect", test_tmpdir());
    assert_int_equal(mkdir(dir, 0777), 0);
    static const char *files[] = {"config.json", "model.safetensors"};
    for (int i = 0; i < 2; i++) {
        size_t size;
        snprintf(path, sizeof path, TEST_DATA "/dinov2-micro/%s", files[i]);
        uint8_t *bytes = read_whole_file(path, &size);
        assert_non_null(bytes);
        snprintf(path, sizeof path, "dinov2-rect/%s", files[i]);
        write_temp_file(path, bytes, size);
        free(bytes);
    }
    static const char *pp =
        "{\"do_center_crop\": false, \"do_convert_rgb\": true, \"do_normalize\": true, "
        "\"do_rescale\": true, \"do_resize\": true, \"image_mean\": [0.485, 0.456, 0.406], "
        "\"image_processor_type\": \"BitImageProcessor\", \"image_std\": [0.229, 0.224, 0.225], "
        "\"resample\": 3, \"rescale_factor\": 0.00392156862745098, "
        "\"size\": {\"height\": 28, \"width\": 112}}";
    write_temp_file("dinov2-rect/preprocessor_config.json", pp, strlen(pp));
    vit_context *ctx = vit_load(dir, NULL, &err);
    if (!ctx) fail_msg("%s", err.msg);
    int c, h, w;
    vit_input_shape(ctx, &c, &h, &w);
    assert_true(c == 3 && h == 28 && w == 112);
    static const char *const images[IMAGES] = {"rgb_64x48.png", "tall_40x400.jpg",
                                               "palette_120x90.png"};
    float *pixels = test_alloc_floats(vit_input_floats(ctx)), logits[5];
    for (int i = 0; i < IMAGES; i++) {
        char name[160];
        snprintf(path, sizeof path, "%s/%s", GOLDEN_IMAGES, images[i]);
        if (vit_preprocess_file(ctx, path, pixels, &err) != 0) fail_msg("%s", err.msg);
        snprintf(name, sizeof name, "%s/pixels", images[i]);
        float *want = test_read_tensor(RECT_GOLDEN, name, &n);
        assert_int_equal(n, vit_input_floats(ctx));
        expect_close(name, pixels, want, n, 1e-6);
        free(want);
        if (vit_forward(ctx, pixels, 1, logits, &err) != 0) fail_msg("%s", err.msg);
        snprintf(name, sizeof name, "%s/logits", images[i]);
        want = test_read_tensor(RECT_GOLDEN, name, &n);
        assert_int_equal(n, 5);
        expect_close(name, logits, want, n, TOL);
        free(want);
    }
    free(pixels);
    vit_free(ctx);
}

/* BEiT's relative position bias is resized for a square grid only: a rectangle is refused, in
 * words, rather than run with a wrong bias. */
static void test_beit_rectangle_refused(void **state) {
    (void)state;
    model m;
    load(&m, TEST_DATA "/beit-micro");
    vit_acts a;
    vit_error err = {0};
    assert_int_equal(vit_acts_alloc_rect(&a, &m, 1, 16, 64, VIT_ACTS_INFER, &err), -1);
    print_message("  %s\n", err.msg);
    assert_non_null(strstr(err.msg, "relative position bias runs on a square patch grid only"));
    model_free(&m);
}

/* A processor that makes a rectangle for a model that runs at its square (a ViT, a BEiT):
 * refused in one line naming the file, as transformers' forward refuses such pixels; a run size
 * (vit_params.image_size, --size) preprocesses to that square. Before, the processor's size was
 * replaced by the model's square without a word. */
static void test_rectangle_processor_for_square_model(void **state) {
    (void)state;
    const char *models[] = {"vit-base-micro", "beit-micro"};
    for (int k = 0; k < 2; k++) {
        char dir[1024], rel[256], from[4096], to[2048];
        snprintf(dir, sizeof dir, "%s/rect-%s", test_tmpdir(), models[k]);
        mkdir(dir, 0700);
        const char *files[] = {"config.json", "model.safetensors"};
        for (int f = 0; f < 2; f++) {
            snprintf(rel, sizeof rel, TEST_DATA "/%s/%s", models[k], files[f]);
            assert_non_null(realpath(rel, from));
            snprintf(to, sizeof to, "%s/%s", dir, files[f]);
            unlink(to);
            assert_int_equal(symlink(from, to), 0);
        }
        char name[4200];
        snprintf(name, sizeof name, "rect-%s/preprocessor_config.json", models[k]);
        const char *json = "{\"image_processor_type\": \"ViTImageProcessor\", \"do_resize\": true, "
                           "\"size\": {\"height\": 32, \"width\": 48}, \"resample\": 2}";
        write_temp_file(name, json, strlen(json));
        vit_error err = {0};
        vit_context *ctx = vit_load(dir, NULL, &err);
        assert_null(ctx);
        print_message("  %s\n", err.msg);
        assert_non_null(strstr(err.msg, "preprocessor_config.json: makes 32x48 images"));
        assert_null(strchr(err.msg, '\n'));
        vit_params params = vit_default_params();
        params.image_size = 32;
        ctx = vit_load(dir, &params, &err);
        if (!ctx) fail_msg("%s", err.msg);
        vit_free(ctx);
    }
}

/* vit embed's default pooling gives what transformers' class outputs as its pooled features:
 * pooler_output (DINOv2's normalised CLS; BEiT's mean of the patch tokens through
 * pooler.layernorm when use_mean_pooling, else its CLS). Before, BEiT and data2vec-vision with
 * mean pooling defaulted to the CLS row as the last layer left it. */
static void test_default_embedding_is_pooler_output(void **state) {
    (void)state;
    for (int k = 0; k < MODELS; k++) {
        golden_info g;
        read_info(models[k], &g);
        vit_error err = {0};
        vit_params params = vit_default_params();
        params.max_batch = 1;
        vit_context *ctx = vit_load(g.dir, &params, &err);
        if (!ctx) fail_msg("%s", err.msg);
        int channels, height, width, r = 0;
        vit_input_shape(ctx, &channels, &height, &width);
        while (r < 2 && g.sizes[r] != height) r++;
        assert_true(r < 2);
        const int D = vit_hidden_size(ctx);
        float *got = test_alloc_floats((size_t)D);
        for (int i = 0; i < IMAGES; i++) {
            size_t n, m;
            float *pixels = image_golden(&g, r, i, "pixels", &n);
            float *want = image_golden(&g, r, i, "pooler_output", &m);
            assert_int_equal(m, (size_t)D);
            if (vit_embed(ctx, pixels, 1, vit_default_pool(ctx), got, &err) != 0)
                fail_msg("%s", err.msg);
            char what[200];
            snprintf(what, sizeof what, "%s: vit embed's default against pooler_output %d",
                     models[k], i);
            expect_close(what, got, want, m, TOL);
            free(pixels), free(want);
        }
        free(got);
        vit_free(ctx);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_options),
        cmocka_unit_test(test_config_defaults_and_errors),
        cmocka_unit_test(test_processor_defaults),
        cmocka_unit_test(test_pixels),
        cmocka_unit_test(test_forward_goldens),
        cmocka_unit_test(test_precisions),
        cmocka_unit_test(test_rectangle_resizes_positions),
        cmocka_unit_test(test_beit_rectangle_refused),
        cmocka_unit_test(test_rectangle_processor_for_square_model),
        cmocka_unit_test(test_default_embedding_is_pooler_output),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
