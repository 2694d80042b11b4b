/* The training stack against independent expectations: AdamW against hand-computed updates, the
 * schedule against its formula at chosen steps, clipping against a known norm, checkpoints by
 * round trip, augmentation against the shift/flip it claims, a run interrupted and resumed against
 * an uninterrupted one (bit for bit), and a smoke test that training learns a tiny synthetic task.
 */
#include "tests/testutil.h"
#include "vit/base/rng.h"

#include <math.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vit/io/model_dir.h"
#include "vit/model/params.h"
#include "vit/core/ops.h"
#include "vit/train/optim.h"
#include "vit/io/safetensors.h"
#include "vit/data/image_set.h"
#include "vit/data/mix.h"
#include "vit/train/curves.h"
#include "vit/train/run.h"
#include "vit/vit.h"

#include <cJSON.h>

static const char *tiny_json =
    "{\"model_type\": \"vit\", \"image_size\": 8, \"patch_size\": 4, \"num_channels\": 1,"
    " \"hidden_size\": 16, \"num_hidden_layers\": 2, \"num_attention_heads\": 2,"
    " \"intermediate_size\": 32, \"num_labels\": 3, \"layer_norm_eps\": 1e-6, \"qkv_bias\": %s,"
    " \"id2label\": {\"0\": \"left/right\", \"1\": \"up down\", \"2\": \"x\"}}";

static void tiny_model(model *m, int qkv_bias) {
    char json[1024];
    snprintf(json, sizeof json, tiny_json, qkv_bias ? "true" : "false");
    model_config cfg;
    vit_error err = {0};
    if (model_config_parse(json, "tiny", &cfg, &err) != 0) fail_msg("%s", err.msg);
    if (model_create(m, &cfg, &err) != 0) fail_msg("%s", err.msg);
}

static uint64_t test_rng = 99;
static float uniform(float lo, float hi) {
    return lo + (hi - lo) * (float)rng_uniform(&test_rng);
}

static const param_entry *find(const model *m, const char *name) {
    const param_entry *e = model_find_param(m, name);
    assert_non_null(e);
    return e;
}

/* ---- AdamW ---- */

/* One decayed weight and one bias element through two steps, against values worked out by hand
 * from the AdamW update (lr 0.1, weight decay 0.1, β 0.9/0.999, eps 1e-8):
 *   step 1, g = 0.5:  m = 0.05, v = 0.00025, m̂ = 0.5, v̂ = 0.25 -> update 0.1·0.5/0.5 = 0.1;
 *                     weight 1·(1 - 0.01) - 0.1 = 0.89, bias 1 - 0.1 = 0.9
 *   step 2, g = -0.25: m = 0.02, v = 0.00031225, m̂ = 0.02/0.19, v̂ = 0.00031225/0.001999
 *                     -> update 0.1·0.1052632/0.3952250 = 0.0266337;
 *                     weight 0.89·0.99 - 0.0266337 = 0.8544663, bias 0.9 - 0.0266337 = 0.8733663 */
static void test_adamw_hand_computed(void **state) {
    (void)state;
    model m;
    tiny_model(&m, 0);
    const param_entry *w = find(&m, "encoder.layer.0.attention.output.dense.weight");
    const param_entry *b = find(&m, "encoder.layer.0.attention.output.dense.bias");
    const param_entry *qb = find(&m, "encoder.layer.0.attention.attention.query.bias");
    assert_true(w->decay && !b->decay && qb->absent);
    float *grads = calloc(m.num_params, sizeof(float));
    for (size_t i = 0; i < m.num_params; i++) m.params[i] = 1.0f;
    vit_error err = {0};
    adamw opt;
    assert_int_equal(adamw_init(&opt, &m, &(adamw_hparams){.lr = 0.1f, .weight_decay = 0.1f}, &err),
                     0);
    grads[w->offset] = grads[b->offset] = 0.5f;
    grads[qb->offset] = 0.5f; /* absent: must stay untouched whatever its gradient */
    adamw_step(&opt, &m, grads, 0.1f);
    assert_float_equal(m.params[w->offset], 0.89f, 1e-6f);
    assert_float_equal(m.params[b->offset], 0.9f, 1e-6f);
    assert_true(m.params[qb->offset] == 1.0f);
    /* other decayed elements had g = 0: decay only (m = v = 0, the update is 0/eps = 0) */
    assert_float_equal(m.params[w->offset + 1], 0.99f, 1e-7f);
    assert_true(m.params[b->offset + 1] == 1.0f);
    grads[w->offset] = grads[b->offset] = -0.25f;
    adamw_step(&opt, &m, grads, 0.1f);
    assert_float_equal(m.params[w->offset], 0.8544663f, 2e-6f);
    assert_float_equal(m.params[b->offset], 0.8733663f, 2e-6f);
    assert_int_equal(opt.step, 2);
    adamw_free(&opt);
    free(grads);
    model_free(&m);
}

/* The linear probe leaves everything but the final LayerNorm and classifier alone. */
static void test_adamw_frozen_encoder(void **state) {
    (void)state;
    model m;
    tiny_model(&m, 1);
    float *grads = malloc(m.num_params * sizeof(float));
    for (size_t i = 0; i < m.num_params; i++) m.params[i] = 1.0f, grads[i] = 0.3f;
    adamw opt;
    vit_error err = {0};
    assert_int_equal(
        adamw_init(&opt, &m, &(adamw_hparams){.lr = 0.01f, .weight_decay = 0.1f}, &err), 0);
    adamw_freeze_encoder(&opt, &m, 1);
    adamw_step(&opt, &m, grads, 0.01f);
    for (int i = 0; i < m.num_entries; i++) {
        const param_entry *e = &m.entries[i];
        const int head =
            !strncmp(e->name, "layernorm.", 10) || !strncmp(e->name, "classifier.", 11);
        for (size_t j = 0; j < e->numel; j++)
            if (head)
                assert_true(m.params[e->offset + j] < 1.0f);
            else
                assert_true(m.params[e->offset + j] == 1.0f);
    }
    adamw_free(&opt);
    free(grads);
    model_free(&m);
}

/* ---- schedule and clipping ---- */

static void test_lr_schedule(void **state) {
    (void)state;
    const lr_schedule s = {.lr = 1e-3f, .min_lr = 1e-5f, .warmup = 10, .total = 110};
    assert_float_equal(lr_at(&s, 0), 1e-4f, 1e-9f); /* (0 + 1)/10 of the peak */
    assert_float_equal(lr_at(&s, 4), 5e-4f, 1e-9f);
    assert_float_equal(lr_at(&s, 9), 1e-3f, 1e-9f);  /* warm-up ends at the peak */
    assert_float_equal(lr_at(&s, 10), 1e-3f, 1e-9f); /* cosine starts at the peak */
    assert_float_equal(lr_at(&s, 35), 1e-5f + 9.9e-4f * 0.8535534f, 1e-9f); /* (1+cos π/4)/2 */
    assert_float_equal(lr_at(&s, 60), 5.05e-4f, 1e-9f); /* halfway: the mean of peak and floor */
    assert_float_equal(lr_at(&s, 110), 1e-5f, 1e-9f);
    assert_float_equal(lr_at(&s, 500), 1e-5f, 1e-9f); /* past the end: the floor */
    for (int64_t t = 11; t < 110; t++) assert_true(lr_at(&s, t) < lr_at(&s, t - 1));
    const lr_schedule flat = {.lr = 0.5f, .warmup = 0, .total = 0};
    assert_float_equal(lr_at(&flat, 7), 0.5f, 0.0f);
}

static void test_clip_global_norm(void **state) {
    (void)state;
    model m;
    tiny_model(&m, 1);
    float *g = calloc(m.num_params, sizeof(float));
    const param_entry *a = find(&m, "classifier.weight"), *b = find(&m, "embeddings.cls_token");
    g[a->offset] = 3.0f, g[b->offset + 2] = 4.0f; /* norm 5 */
    assert_float_equal(grad_global_norm(&m, g, NULL), 5.0, 1e-12);
    assert_float_equal(grad_clip_global_norm(&m, g, NULL, 10.0f), 5.0, 1e-12); /* below: as is */
    assert_true(g[a->offset] == 3.0f);
    assert_float_equal(grad_clip_global_norm(&m, g, NULL, 1.0f), 5.0, 1e-12);
    assert_float_equal(g[a->offset], 0.6f, 1e-6f);
    assert_float_equal(g[b->offset + 2], 0.8f, 1e-6f);
    assert_float_equal(grad_global_norm(&m, g, NULL), 1.0, 1e-6);
    free(g);
    model_free(&m);
}

/* ---- checkpoints ---- */

/* model_save then model_load and model_dir_load_preprocess: the same tensors bit for bit, the same
 * configuration and labels, a safetensors file PyTorch accepts ({"format": "pt"}). */
static void test_checkpoint_round_trip(void **state) {
    (void)state;
    model m, back;
    tiny_model(&m, 0);
    for (int i = 0; i < m.num_entries; i++)
        if (!m.entries[i].absent)
            for (size_t j = 0; j < m.entries[i].numel; j++)
                m.params[m.entries[i].offset + j] = uniform(-1, 1);
    preprocess_config pp = {.do_resize = 1,
                            .shortest_edge = 10,
                            .resample = RESAMPLE_BICUBIC,
                            .do_center_crop = 1,
                            .crop_height = 8,
                            .crop_width = 8,
                            .do_rescale = 1,
                            .rescale_factor = 1.0 / 255,
                            .do_normalize = 1,
                            .mean = {0.2860f},
                            .std = {0.353f},
                            .channels = 1};
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/ckpt", test_tmpdir());
    vit_error err = {0};
    assert_int_equal(model_save(dir, &m, &pp, 0.1f, 0.0f, &err), 0);
    if (model_load(&back, dir, &err) != 0) fail_msg("%s", err.msg);
    assert_int_equal(back.num_params, m.num_params);
    assert_memory_equal(back.params, m.params, m.num_params * sizeof(float));
    assert_int_equal(back.cfg.hidden_size, 16);
    assert_int_equal(back.cfg.num_channels, 1);
    assert_int_equal(back.cfg.qkv_bias, 0);
    assert_true(back.cfg.layer_norm_eps == 1e-6f);
    assert_int_equal(back.cfg.num_labels, 3);
    assert_string_equal(back.cfg.labels[0], "left/right");
    assert_string_equal(back.cfg.labels[1], "up down");
    preprocess_config pb;
    if (model_dir_load_preprocess(dir, &pb, &err) != 0) fail_msg("%s", err.msg);
    assert_int_equal(pb.shortest_edge, 10);
    assert_int_equal(pb.resample, RESAMPLE_BICUBIC);
    assert_int_equal(pb.do_center_crop, 1);
    assert_int_equal(pb.crop_height, 8);
    assert_true(pb.rescale_factor == 1.0 / 255);
    assert_true(pb.mean[0] == 0.2860f && pb.std[0] == 0.353f);
    char path[4200], fmt[16];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    st_file f;
    assert_int_equal(st_open(path, &f, &err), 0);
    assert_int_equal(st_metadata(&f, "format", fmt, sizeof fmt, &err), 0);
    assert_string_equal(fmt, "pt");
    assert_non_null(st_find(&f, "vit.embeddings.cls_token"));
    assert_non_null(st_find(&f, "classifier.weight"));
    assert_null(st_find(&f, "vit.encoder.layer.0.attention.attention.query.bias")); /* absent */
    assert_int_equal(st_metadata(&f, "nothing", fmt, sizeof fmt, &err), -1);
    st_close(&f);
    model_free(&back);
    model_free(&m);
}

/* ---- augmentation ---- */

/* The byte -> float table is the evaluation transform: (v/255 - mean)/std per channel. */
static void test_pixel_lut(void **state) {
    (void)state;
    preprocess_config pp = {.do_resize = 1,
                            .resize_height = 8,
                            .resize_width = 8,
                            .resample = RESAMPLE_BILINEAR,
                            .do_rescale = 1,
                            .rescale_factor = 1.0 / 255,
                            .do_normalize = 1,
                            .mean = {0.5f, 0.25f, 0.0f},
                            .std = {0.5f, 2.0f, 1.0f},
                            .channels = 3};
    float lut[3 * 256];
    vit_error err = {0};
    if (pixel_lut(&pp, lut, &err) != 0) fail_msg("%s", err.msg);
    for (int c = 0; c < 3; c++)
        for (int v = 0; v < 256; v++)
            assert_float_equal(lut[c * 256 + v], (v / 255.0 - pp.mean[c]) / pp.std[c], 1e-6);
}

static void test_augment_is_shift_and_flip(void **state) {
    (void)state;
    enum { S = 6, N = 4 };
    image_set s = {.count = N, .C = 1, .H = S, .W = S, .S = S};
    s.pixels = malloc(N * S * S);
    s.labels = calloc(N, sizeof(int));
    for (int i = 0; i < N * S * S; i++) s.pixels[i] = (uint8_t)(1 + (i * 37) % 250);
    float lut[256];
    for (int v = 0; v < 256; v++) lut[v] = (float)v; /* identity: outputs are the bytes */
    const int idx[N] = {3, 1, 0, 2};
    float plain[N * S * S], aug[N * S * S], again[N * S * S];
    image_set_batch(&s, idx, N, lut, NULL, 0, plain);
    for (int i = 0; i < N; i++)
        for (int j = 0; j < S * S; j++)
            assert_true(plain[i * S * S + j] == s.pixels[idx[i] * S * S + j]);
    const augment_options opt = {.crop_pad = 1, .flip = 1};
    int flips = 0;
    for (uint64_t seed = 1; seed <= 8; seed++) {
        image_set_batch(&s, idx, N, lut, &opt, seed, aug);
        image_set_batch(&s, idx, N, lut, &opt, seed, again);
        assert_memory_equal(aug, again, sizeof aug); /* same seed, same batch */
        for (int i = 0; i < N; i++) { /* some shift in [-1, 1]² and flip explains each image */
            const uint8_t *src = s.pixels + idx[i] * S * S;
            int found = 0;
            for (int flip = 0; flip < 2 && !found; flip++)
                for (int dy = -1; dy <= 1 && !found; dy++)
                    for (int dx = -1; dx <= 1 && !found; dx++) {
                        int ok = 1;
                        for (int y = 0; y < S && ok; y++)
                            for (int x = 0; x < S && ok; x++) {
                                const int xs = (flip ? S - 1 - x : x) + dx, ys = y + dy;
                                const float want = xs >= 0 && xs < S && ys >= 0 && ys < S
                                                       ? src[ys * S + xs]
                                                       : 0.0f;
                                ok = aug[i * S * S + y * S + x] == want;
                            }
                        found = ok;
                        flips += ok && flip && (dx || dy || 1);
                    }
            assert_true(found);
        }
    }
    assert_true(flips > 4 && flips < 28); /* about half of the 32 images flipped */
    image_set_free(&s);
}

/* ---- Mixup, CutMix ---- */

/* Beta(a, a) draws against the distribution's mean 1/2 and variance 1/(4(2a + 1)), at a < 1
 * (Gamma through the shape + 1 route) and a > 1; 40,000 draws: the mean's standard error is
 * below 0.0025, the variance's about 1.5 % of it. */
static void test_beta_draws(void **state) {
    (void)state;
    const double alphas[] = {0.2, 0.8, 2.5};
    for (int k = 0; k < 3; k++) {
        uint64_t st = 3 + k;
        enum { N = 40000 };
        double sum = 0, sq = 0;
        for (int i = 0; i < N; i++) {
            const double x = rng_beta(&st, alphas[k], alphas[k]);
            assert_true(x >= 0.0 && x <= 1.0);
            sum += x, sq += x * x;
        }
        const double mean = sum / N, var = sq / N - mean * mean;
        const double want = 1.0 / (4.0 * (2.0 * alphas[k] + 1.0));
        assert_true(fabs(mean - 0.5) < 0.01);
        assert_true(fabs(var / want - 1.0) < 0.08);
    }
    uint64_t st = 9; /* Gamma(3.5)'s mean is its shape */
    double sum = 0;
    for (int i = 0; i < 20000; i++) sum += rng_gamma(&st, 3.5);
    assert_true(fabs(sum / 20000 - 3.5) < 0.08);
}

/* Mixup blends every pixel by λ; CutMix copies exactly its box from the partner and its λ is the
 * share of the area left; both kinds on: both happen; neither: nothing. */
static void test_mix_draws(void **state) {
    (void)state;
    enum { C = 2, S = 10, P = C * S * S };
    float own[P], partner[P], img[P];
    for (int i = 0; i < P; i++) own[i] = (float)i, partner[i] = (float)(-1 - i);
    uint64_t st = 1;
    mix_draw d;
    mix_draw_batch(&(mix_options){0}, S, &st, &d);
    assert_true(!d.active && d.lambda == 1.0f);
    memcpy(img, own, sizeof img);
    mix_apply(img, partner, C, S, &d);
    assert_memory_equal(img, own, sizeof img);
    int cuts = 0, blends = 0;
    for (int k = 0; k < 200; k++) {
        mix_draw_batch(&(mix_options){.mixup_alpha = 0.8f, .cutmix_alpha = 1.0f}, S, &st, &d);
        assert_true(d.active && d.lambda >= 0.0f && d.lambda <= 1.0f);
        memcpy(img, own, sizeof img);
        mix_apply(img, partner, C, S, &d);
        if (!d.cut) {
            blends++;
            for (int i = 0; i < P; i++)
                assert_float_equal(img[i], d.lambda * own[i] + (1 - d.lambda) * partner[i], 1e-4);
            continue;
        }
        cuts++;
        int from_partner = 0;
        for (int c = 0; c < C; c++)
            for (int y = 0; y < S; y++)
                for (int x = 0; x < S; x++) {
                    const int i = (c * S + y) * S + x;
                    const int inside = y >= d.y0 && y < d.y1 && x >= d.x0 && x < d.x1;
                    assert_true(img[i] == (inside ? partner[i] : own[i]));
                    from_partner += inside;
                }
        assert_float_equal(d.lambda, 1.0 - from_partner / (double)P, 1e-6);
    }
    assert_true(cuts > 60 && blends > 60); /* chance 1/2 each */
}

/* Layer-wise decay: the depths of a 2-layer ViT's entries, and one AdamW step (no weight decay)
 * moving each trainable element by lr·decay^depth (a first Adam step is lr·g/(|g| + eps)). */
static void test_layer_decay(void **state) {
    (void)state;
    assert_int_equal(layer_depth("classifier.weight", 12), 0);
    assert_int_equal(layer_depth("layernorm.bias", 12), 0);
    assert_int_equal(layer_depth("encoder.layer.11.output.dense.weight", 12), 1);
    assert_int_equal(layer_depth("encoder.layer.0.attention.attention.query.weight", 12), 12);
    assert_int_equal(layer_depth("embeddings.patch_embeddings.projection.weight", 12), 13);
    assert_int_equal(layer_depth("deit.embeddings.cls_token", 12), 13);
    assert_int_equal(layer_depth("bert.encoder.layer.3.output.LayerNorm.weight", 4), 1);
    model m;
    tiny_model(&m, 1);
    float *grads = malloc(m.num_params * sizeof(float));
    for (size_t i = 0; i < m.num_params; i++) m.params[i] = 1.0f, grads[i] = 0.5f;
    adamw opt;
    vit_error err = {0};
    assert_int_equal(adamw_init(&opt, &m, &(adamw_hparams){.lr = 0.01f}, &err), 0);
    assert_int_equal(adamw_layer_decay(&opt, &m, 0.5f, &err), 0);
    assert_int_equal(adamw_layer_decay(&opt, &m, 0.0f, &err), -1);
    assert_non_null(strstr(err.msg, "layer decay"));
    adamw_step(&opt, &m, grads, 0.01f);
    const double want[] = {0.01, 0.005, 0.0025, 0.00125}; /* depths 0 (head) to 3 (embeddings) */
    int seen[4] = {0};
    for (int i = 0; i < m.num_entries; i++) {
        const param_entry *e = &m.entries[i];
        const int depth = layer_depth(e->name, 2);
        seen[depth] = 1;
        for (size_t j = 0; j < e->numel; j++)
            assert_float_equal(1.0f - m.params[e->offset + j], want[depth], 1e-6);
    }
    assert_true(seen[0] && seen[1] && seen[2] && seen[3]);
    adamw_free(&opt);
    free(grads);
    model_free(&m);
}

/* ---- whole runs on a synthetic image folder ---- */

/* 3 classes of 8x8 grey images with noise: dark, a checkerboard, bright; 16 images per class.
 * (Classes told apart by position alone, like a bright top or bottom half, keep a tiny ViT at
 * 2/3 for many steps: its position embeddings start near zero.) */
static const char *make_folder(void) {
    static char root[4096];
    if (root[0]) return root;
    snprintf(root, sizeof root, "%s/textures", test_tmpdir());
    mkdir(root, 0777);
    const char *classes[] = {"left_right", "up-down", "x"};
    uint64_t st = 7;
    for (int c = 0; c < 3; c++) {
        char dir[4200];
        snprintf(dir, sizeof dir, "%s/%s", root, classes[c]);
        mkdir(dir, 0777);
        for (int i = 0; i < 16; i++) {
            uint8_t px[64];
            for (int j = 0; j < 64; j++) {
                const int base = c == 0 ? 0 : c == 2 ? 150 : ((j / 8 + j) % 2) * 150;
                px[j] = (uint8_t)(base + rng_uniform(&st) * 100);
            }
            char path[4300];
            snprintf(path, sizeof path, "%s/%02d.png", dir, i);
            png_image img = {
                .version = PNG_IMAGE_VERSION, .width = 8, .height = 8, .format = PNG_FORMAT_GRAY};
            assert_true(png_image_write_to_file(&img, path, 0, px, 0, NULL));
        }
    }
    return root;
}

static train_options tiny_run(const char *out) {
    train_options o = train_default_options();
    o.train_path = make_folder();
    o.out_dir = out;
    o.val_split = 0.25f;
    o.image_size = 8, o.patch_size = 4, o.hidden_size = 16, o.num_layers = 2, o.num_heads = 2;
    o.mlp_size = 32, o.channels = 1;
    o.epochs = 3, o.batch = 8;
    o.lr = 3e-3f, o.warmup_epochs = 0.5f;
    o.dropout = 0.1f, o.attention_dropout = 0.1f; /* every generator stream in use */
    o.aug.crop_pad = 1;
    o.seed = 5;
    o.threads = 1; /* tiny matrices: threads would only wait on each other */
    return o;
}

static void out_dir(char *buf, size_t size, const char *name) {
    snprintf(buf, size, "%s/%s", test_tmpdir(), name);
}

static void load_params(const char *dir, model *m) {
    vit_error err = {0};
    if (model_load(m, dir, &err) != 0) fail_msg("%s", err.msg);
}

/* Lines of train_log.jsonl without their timing fields (which differ between runs). */
static char *log_without_times(const char *dir) {
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, TRAIN_LOG_FILE);
    size_t n;
    uint8_t *bytes = read_whole_file(path, &n);
    assert_non_null(bytes);
    char *text = calloc(n + 1, 1); /* read_whole_file does not terminate the text */
    memcpy(text, bytes, n);
    free(bytes);
    char *out = calloc(n + 1, 1), *o = out;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        char *cut = strstr(line, ", \"seconds\"");
        assert_non_null(cut);
        o += sprintf(o, "%.*s\n", (int)(cut - line), line);
    }
    free(text);
    return out;
}

/* train_curves.png decodes to its 800x300 (two panels: loss and top-1, no error rates). */
static void expect_curves(const char *dir) {
    char path[4300];
    snprintf(path, sizeof path, "%s/%s", dir, TRAIN_CURVES_FILE);
    image_u8 img;
    vit_error err = {0};
    if (image_decode_file(path, 3, 0, 0, &img, &err) != 0) fail_msg("%s", err.msg);
    assert_int_equal(img.width, 2 * TRAIN_CURVES_WIDTH);
    assert_int_equal(img.height, TRAIN_CURVES_HEIGHT);
    image_free(&img);
}

/* The same bytes in dir a and dir b. */
static void expect_same_file(const char *a, const char *b, const char *name) {
    char pa[4300], pb[4300];
    snprintf(pa, sizeof pa, "%s/%s", a, name);
    snprintf(pb, sizeof pb, "%s/%s", b, name);
    size_t na, nb;
    uint8_t *ba = read_whole_file(pa, &na), *bb = read_whole_file(pb, &nb);
    assert_non_null(ba);
    assert_non_null(bb);
    if (na != nb || memcmp(ba, bb, na) != 0) fail_msg("%s and %s differ", pa, pb);
    free(ba), free(bb);
}

/* validation.tsv lists tiny_run's held-out images: a quarter of each class's 16, each under its
 * class's folder. */
static void expect_held_out(const char *dir) {
    char path[4300];
    snprintf(path, sizeof path, "%s/%s", dir, TRAIN_VAL_FILE);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[8400];
    int per_class[3] = {0, 0, 0}, lines = 0;
    const char *classes[] = {"left_right", "up-down", "x"};
    while (fgets(line, sizeof line, f)) {
        lines++;
        char *tab = strchr(line, '\t');
        assert_non_null(tab);
        *tab = 0;
        tab[strcspn(tab + 1, "\n") + 1] = 0;
        char folder[600];
        for (int c = 0; c < 3; c++) {
            snprintf(folder, sizeof folder, "/%s/", classes[c]);
            if (strcmp(tab + 1, classes[c]) == 0 && strstr(line, folder)) per_class[c]++;
        }
        assert_int_equal(access(line, F_OK), 0);
    }
    fclose(f);
    assert_int_equal(lines, 12);
    for (int c = 0; c < 3; c++) assert_int_equal(per_class[c], 4);
}

static void expect_same_run(const char *a, const char *b) {
    expect_held_out(a);
    expect_same_file(a, b, TRAIN_VAL_FILE);
    model ma, mb;
    load_params(a, &ma);
    load_params(b, &mb);
    assert_int_equal(ma.num_params, mb.num_params);
    assert_memory_equal(ma.params, mb.params, ma.num_params * sizeof(float));
    char *la = log_without_times(a), *lb = log_without_times(b);
    assert_string_equal(la, lb);
    free(la), free(lb);
    /* the resumed run's picture has the epochs before the stop too: the uninterrupted run's */
    expect_curves(a);
    expect_same_file(a, b, TRAIN_CURVES_FILE);
    model_free(&ma), model_free(&mb);
}

/* Mixup and CutMix on, layers decaying: every stream and scale a resumed run must restore. */
static void mixed(train_options *o) {
    o->mix = (mix_options){.mixup_alpha = 0.8f, .cutmix_alpha = 1.0f};
    o->layer_decay = 0.75f;
}

/* init: NULL (a new ViT), or a model directory to fine-tune; tweak: options changed (or NULL) */
static void resume_tweaked(const char *name, int64_t stop_at, const char *init,
                           void (*tweak)(train_options *)) {
    char whole[4200], split[4200], state_path[4300];
    out_dir(whole, sizeof whole, tweak ? "whole-tweaked" : init ? "whole-fine-tuned" : "whole");
    out_dir(split, sizeof split, name);
    vit_error err = {0};
    train_options o = tiny_run(whole);
    o.init_dir = init;
    if (tweak) tweak(&o);
    static int whole_done[3];
    const int which = tweak ? 2 : init != NULL;
    if (!whole_done[which]) {
        if (train_run(&o, 0, NULL, &err) != 0) fail_msg("%s", err.msg);
        whole_done[which] = 1;
    }
    snprintf(state_path, sizeof state_path, "%s/%s", whole, TRAIN_STATE_FILE);
    assert_int_equal(access(state_path, F_OK), -1); /* a finished run leaves no state */
    o = tiny_run(split);
    o.init_dir = init;
    o.overwrite = 1; /* test_resume_mixed runs a case of another test again */
    if (tweak) tweak(&o);
    const train_hooks stop = {.stop_at_step = stop_at};
    assert_int_equal(train_run(&o, 0, &stop, &err), 1);
    snprintf(state_path, sizeof state_path, "%s/%s", split, TRAIN_STATE_FILE);
    assert_int_equal(access(state_path, F_OK), 0);
    /* a fresh start on top of an unfinished run is refused */
    assert_int_equal(train_run(&o, 0, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "--resume"));
    /* resume knows everything from the checkpoint: only the folder is given */
    const train_options r = {.out_dir = split, .threads = 1};
    if (train_run(&r, 1, NULL, &err) != 0) fail_msg("%s", err.msg);
    expect_same_run(whole, split);
}

static void resume_case(const char *name, int64_t stop_at, const char *init) {
    resume_tweaked(name, stop_at, init, NULL);
}

/* 36 training images in batches of 8: 4 steps an epoch, 12 in all. */
static void test_resume_mid_epoch(void **state) {
    (void)state;
    resume_case("stopped-mid-epoch", 6, NULL);
}

/* A DeiTForImageClassification resumes as exactly (its "deit." names in the state). */
static void test_resume_deit(void **state) {
    (void)state;
    resume_case("stopped-deit", 6, "tests/data/deit-micro");
}

static void test_resume_mixed(void **state) {
    (void)state;
    resume_tweaked("stopped-mixed", 6, NULL, mixed);
    resume_case("stopped-mid-epoch", 6, NULL);
    char plain[4200], tweaked[4200];
    out_dir(plain, sizeof plain, "whole");
    out_dir(tweaked, sizeof tweaked, "whole-tweaked");
    char *a = log_without_times(plain), *b = log_without_times(tweaked);
    assert_string_not_equal(a, b); /* the options took effect */
    free(a), free(b);
}

static void test_resume_at_epoch_end(void **state) {
    (void)state;
    resume_case("stopped-at-epoch", 4, NULL);
}

static void test_resume_errors(void **state) {
    (void)state;
    char dir[4200];
    out_dir(dir, sizeof dir, "never-trained");
    mkdir(dir, 0777);
    const train_options r = {.out_dir = dir};
    vit_error err = {0};
    assert_int_equal(train_run(&r, 1, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "no training state"));
    train_options o = tiny_run(dir);
    o.train_path = "/nonexistent/folder";
    assert_int_equal(train_run(&o, 0, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "/nonexistent/folder"));
}

/* The files of a checkpoint at an epoch's end. */
static const char *const checkpoint_files[] = {"model.safetensors", "config.json", TRAIN_STATE_FILE,
                                               TRAIN_LOG_FILE, TRAIN_CURVES_FILE};
enum { N_CHECKPOINT_FILES = 5 };

/* Resumes dir with a directory standing where trap_name's temporary file goes (as a full disk
 * would fail writing it): the run fails naming the file, every file of the checkpoint keeps the
 * bytes in before and no temporary is left. */
static void resume_into_trap(const char *dir, const char *trap_name,
                             uint8_t *const before[N_CHECKPOINT_FILES],
                             const size_t size[N_CHECKPOINT_FILES]) {
    char path[4300], trap[4300];
    snprintf(trap, sizeof trap, "%s/%s.tmp", dir, trap_name);
    assert_int_equal(mkdir(trap, 0777), 0);
    vit_error err = {0};
    const train_options r = {.out_dir = dir, .threads = 1};
    assert_int_equal(train_run(&r, 1, NULL, &err), -1);
    print_message("  %s\n", err.msg);
    assert_non_null(strstr(err.msg, trap_name));
    for (int i = 0; i < N_CHECKPOINT_FILES; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, checkpoint_files[i]);
        size_t n;
        uint8_t *after = read_whole_file(path, &n);
        assert_non_null(after);
        if (n != size[i] || memcmp(after, before[i], n) != 0)
            fail_msg("%s changed", checkpoint_files[i]);
        free(after);
        snprintf(path, sizeof path, "%s/%s.tmp", dir, checkpoint_files[i]);
        if (strcmp(checkpoint_files[i], trap_name) != 0) assert_int_equal(access(path, F_OK), -1);
    }
    rmdir(trap);
}

/* A checkpoint is replaced whole or not at all: when writing its optimizer state or its picture
 * fails, the weights, config, log and picture stay those of the previous checkpoint and no
 * temporary is left; a temporary that a killed run left behind is removed when a run starts. */
static void test_checkpoint_all_or_nothing(void **state) {
    (void)state;
    char dir[4200], path[4300], stale[4300];
    out_dir(dir, sizeof dir, "all-or-nothing");
    vit_error err = {0};
    train_options o = tiny_run(dir);
    const train_hooks stop = {.stop_at_step = 4}; /* the end of the first epoch */
    assert_int_equal(train_run(&o, 0, &stop, &err), 1);
    uint8_t *before[N_CHECKPOINT_FILES];
    size_t size[N_CHECKPOINT_FILES];
    for (int i = 0; i < N_CHECKPOINT_FILES; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, checkpoint_files[i]);
        before[i] = read_whole_file(path, &size[i]);
        assert_non_null(before[i]);
    }
    snprintf(stale, sizeof stale, "%s/model.safetensors.tmp", dir);
    FILE *f = fopen(stale, "w");
    assert_non_null(f);
    fputs("left by a killed run", f);
    fclose(f);
    resume_into_trap(dir, TRAIN_STATE_FILE, before, size);
    assert_int_equal(access(stale, F_OK), -1);
    /* the picture is written last: everything else was written when it failed */
    resume_into_trap(dir, TRAIN_CURVES_FILE, before, size);
    for (int i = 0; i < N_CHECKPOINT_FILES; i++) free(before[i]);
}

/* Training learns: the loss falls and the held-out images are classified far above chance. */
static void test_training_learns(void **state) {
    (void)state;
    char dir[4200];
    out_dir(dir, sizeof dir, "learns");
    train_options o = tiny_run(dir);
    o.epochs = 20;
    o.dropout = o.attention_dropout = 0;
    vit_error err = {0};
    if (train_run(&o, 0, NULL, &err) != 0) fail_msg("%s", err.msg);
    char *log = log_without_times(dir);
    double first = -1, last = -1, val = -1;
    for (char *line = strtok(log, "\n"); line; line = strtok(NULL, "\n")) {
        double loss = atof(strstr(line, "\"train_loss\": ") + 14);
        if (first < 0) first = loss;
        last = loss;
        val = atof(strstr(line, "\"val_top1\": ") + 12);
    }
    free(log);
    print_message("  train loss %.4f -> %.4f, validation top-1 %.3f\n", first, last, val);
    assert_true(last < 0.6 * first);
    assert_true(val >= 0.75); /* chance is 1/3 */
}

/* Fine-tuning a DeiT with teacher (HF's is inference-only): a DeiTForImageClassification comes
 * out, with a new classifier on CLS and the teacher's encoder and special tokens to start from;
 * every tensor trains, the distillation token too (it reaches the loss through attention). */
static void test_fine_tune_deit_teacher(void **state) {
    (void)state;
    char dir[4200], path[4300];
    out_dir(dir, sizeof dir, "deit-from-teacher");
    train_options o = tiny_run(dir);
    o.init_dir = "tests/data/deit-micro-teacher";
    o.epochs = 1;
    vit_error err = {0};
    if (train_run(&o, 0, NULL, &err) != 0) fail_msg("%s", err.msg);
    model from, m;
    load_params(o.init_dir, &from);
    load_params(dir, &m);
    assert_int_equal(m.cfg.arch, ARCH_DEIT);
    assert_int_equal(m.cfg.num_labels, 3);
    assert_int_equal(m.cfg.hidden_size, from.cfg.hidden_size);
    const char *moved[] = {"embeddings.distillation_token", "embeddings.cls_token",
                           "encoder.layer.1.output.dense.weight"};
    for (int i = 0; i < 3; i++) {
        const param_entry *a = find(&from, moved[i]), *b = find(&m, moved[i]);
        double change = 0;
        for (size_t j = 0; j < a->numel; j++)
            change = fmax(change, fabs(from.params[a->offset + j] - m.params[b->offset + j]));
        print_message("  %s moved by up to %.3g\n", moved[i], change);
        assert_true(change > 0 && change < 0.1); /* trained, from the teacher's values */
    }
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    st_file f;
    assert_int_equal(st_open(path, &f, &err), 0);
    assert_non_null(st_find(&f, "deit.embeddings.distillation_token"));
    assert_non_null(st_find(&f, "classifier.weight"));
    assert_null(st_find(&f, "cls_classifier.weight"));
    assert_null(st_find(&f, "distillation_classifier.weight"));
    st_close(&f);
    snprintf(path, sizeof path, "%s/config.json", dir);
    size_t n;
    char *config = (char *)read_whole_file(path, &n);
    assert_non_null(strstr(config, "\"DeiTForImageClassification\""));
    assert_non_null(strstr(config, "\"deit\"")); /* model_type */
    free(config);
    model_free(&from), model_free(&m);
}

/* found by tests/fuzz/fuzz_checkpoint: a checkpoint's options were not range-checked on --resume,
 * and val_split 5 held out more images than a class has (out of bounds in trainer_hold_out). */
static void test_resume_checks_option_ranges(void **state) {
    (void)state;
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/resume-ranges", test_tmpdir());
    mkdir(dir, 0755);
    const char *files[] = {"config.json", "model.safetensors", "preprocessor_config.json"};
    for (int i = 0; i < 3; i++) {
        char from[4200], to[4200];
        snprintf(from, sizeof from, "tests/fuzz/checkpoint/%s", files[i]);
        snprintf(to, sizeof to, "%s/%s", dir, files[i]);
        size_t size;
        uint8_t *data = read_whole_file(from, &size);
        assert_non_null(data);
        FILE *f = fopen(to, "wb");
        assert_int_equal(fwrite(data, 1, size, f), size);
        fclose(f);
        free(data);
    }
    size_t size;
    uint8_t *state_file = read_whole_file("tests/fuzz/corpus/fuzz_checkpoint/state", &size);
    assert_non_null(state_file);
    const char *key = "\\\"val_split\\\":0"; /* inside the metadata's JSON string */
    uint8_t *at = memmem(state_file, size, key, strlen(key));
    assert_non_null(at);
    at[strlen(key) - 1] = '5'; /* same length: the header stays valid */
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, TRAIN_STATE_FILE);
    FILE *f = fopen(path, "wb");
    assert_int_equal(fwrite(state_file, 1, size, f), size);
    fclose(f);
    free(state_file);
    train_options opt = train_default_options();
    opt.out_dir = dir;
    opt.threads = 1;
    vit_error err = {0};
    assert_int_equal(train_run(&opt, 1, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "train_state.safetensors: option val-split is 5, outside"));
}

/* ---- --resize ---- */

/* micro-a (32x32, patch 8, classes class_0..class_4) fine-tuned with --resize 48 at a learning rate
 * of 1e-10 (the weights stay as they were to ~1e-10): the folder it writes runs at 48x48 and gives
 * tools/gen_size_golden.py's float64 logits of micro-a at 48 (transformers'
 * interpolate_pos_encoding, the preprocessing scaled alike) within 1e-4. So the positions were
 * resized as transformers resizes them, and config.json and preprocessor_config.json say the new
 * size. */
/* The info lines of a run, one after another. */
static void keep_info(void *user, const char *message) {
    char *buf = user;
    snprintf(buf + strlen(buf), 4096 - strlen(buf), "%s\n", message);
}

/* What an epoch_done hook checks of best/ after every epoch, whatever the validation losses do:
 * it holds (byte for byte) the model of the epoch of lowest validation loss so far, and e->best
 * says whether this epoch was that one. */
typedef struct {
    char dir[4200];
    uint8_t *lowest_model; /* the model of the lowest validation loss so far */
    size_t lowest_size;
    double lowest;
    int epochs, improved;
    char failure[512]; /* the first broken check */
} best_watch;

static uint8_t *read_in(const char *dir, const char *name, size_t *size) {
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return read_whole_file(path, size);
}

static void check_best(void *user, const train_epoch *e) {
    best_watch *w = user;
    w->epochs++;
    const int lower = e->val_loss < w->lowest;
    if (lower) {
        free(w->lowest_model);
        w->lowest_model = read_in(w->dir, "model.safetensors", &w->lowest_size);
        w->lowest = e->val_loss;
        w->improved++;
    }
    size_t n = 0;
    uint8_t *best = read_in(w->dir, TRAIN_BEST_DIR "/model.safetensors", &n);
    if (!w->failure[0] && e->best != lower)
        snprintf(w->failure, sizeof w->failure, "epoch %d (val loss %.6g, lowest %.6g): best %d",
                 e->epoch, e->val_loss, w->lowest, e->best);
    if (!w->failure[0] &&
        (!best || !w->lowest_model || n != w->lowest_size || memcmp(best, w->lowest_model, n) != 0))
        snprintf(w->failure, sizeof w->failure,
                 "epoch %d: best/ does not hold the model of the lowest validation loss (%.6g)",
                 e->epoch, w->lowest);
    free(best);
}

/* Every val_loss of dir's train_log.jsonl made 0: the record then says an earlier epoch was lower
 * than any a resumed run can reach. */
static void zero_logged_val_losses(const char *dir) {
    size_t n;
    char *log = (char *)read_in(dir, TRAIN_LOG_FILE, &n), *out = calloc(n + 1, 1), *o = out;
    assert_non_null(log), assert_non_null(out);
    const char *key = "\"val_loss\": ";
    for (const char *at = log, *k; *at; at = strpbrk(k + strlen(key), ",}")) {
        if (!(k = strstr(at, key))) {
            o += sprintf(o, "%s", at);
            break;
        }
        o += sprintf(o, "%.*s%s0", (int)(k - at), at, key);
    }
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", dir, TRAIN_LOG_FILE);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(out, f);
    fclose(f);
    free(log), free(out);
}

/* best/ after every epoch holds the model of the lowest validation loss so far, however the losses
 * go (checked by check_best against each epoch's model.safetensors); it is kept when later epochs
 * are worse: two epochs, the log's losses then made 0, two more epochs resumed, which must leave
 * best/ as it was and not be called best. A model already in out_dir is refused (nothing in it
 * changes) unless overwrite, which also drops the old best/. Nothing here depends on the losses
 * falling or on timing. */
static void test_overwrite_and_best(void **state) {
    (void)state;
    best_watch w = {.lowest = HUGE_VAL};
    out_dir(w.dir, sizeof w.dir, "overwrite");
    train_options o = tiny_run(w.dir);
    o.epochs = 4;
    train_hooks hooks = {.user = &w, .epoch_done = check_best, .stop_at_step = 8};
    vit_error err = {0};
    assert_int_equal(train_run(&o, 0, &hooks, &err), 1); /* after the second epoch (4 steps each) */
    if (w.failure[0]) fail_msg("%s", w.failure);
    assert_true(w.epochs == 2 && w.improved >= 1);
    zero_logged_val_losses(w.dir);
    w.lowest = 0; /* what the log now says */
    const int improved = w.improved;
    hooks.stop_at_step = 0;
    train_options r = {.out_dir = w.dir, .threads = 1};
    if (train_run(&r, 1, &hooks, &err) != 0) fail_msg("%s", err.msg);
    if (w.failure[0]) fail_msg("%s", w.failure);
    assert_true(w.epochs == 4 && w.improved == improved); /* no epoch since was the best */
    size_t n_last, n_best, n_after;
    uint8_t *last = read_in(w.dir, "model.safetensors", &n_last),
            *best = read_in(w.dir, TRAIN_BEST_DIR "/model.safetensors", &n_best);
    assert_non_null(last), assert_non_null(best);
    assert_false(n_last == n_best && memcmp(last, best, n_last) == 0); /* epoch 4 is not kept */
    free(best);
    model m;
    char best_dir[4300];
    snprintf(best_dir, sizeof best_dir, "%s/" TRAIN_BEST_DIR, w.dir);
    load_params(best_dir, &m); /* a model folder of its own */
    model_free(&m);
    free(w.lowest_model);

    o = tiny_run(w.dir);
    assert_int_equal(train_run(&o, 0, NULL, &err), -1);
    if (!strstr(err.msg, "already holds a model (config.json): --overwrite replaces it"))
        fail_msg("%s", err.msg);
    uint8_t *after = read_in(w.dir, "model.safetensors", &n_after);
    assert_true(n_after == n_last && memcmp(after, last, n_last) == 0);
    free(after), free(last);
    o.overwrite = 1, o.val_split = 0, o.epochs = 1; /* no validation: no best/ */
    if (train_run(&o, 0, NULL, &err) != 0) fail_msg("%s", err.msg);
    snprintf(best_dir, sizeof best_dir, "%s/" TRAIN_BEST_DIR "/model.safetensors", w.dir);
    assert_int_equal(access(best_dir, F_OK), -1);
}

/* 12x12 RGB images, noise, 8 each in two classes. */
static const char *make_rgb_folder(void) {
    static char root[4096];
    if (root[0]) return root;
    snprintf(root, sizeof root, "%s/rgb12", test_tmpdir());
    mkdir(root, 0777);
    uint64_t st = 3;
    for (int c = 0; c < 2; c++)
        for (int i = 0; i < 8; i++) {
            char path[4300];
            snprintf(path, sizeof path, "%s/%c", root, 'a' + c);
            mkdir(path, 0777);
            snprintf(path, sizeof path, "%s/%c/%d.png", root, 'a' + c, i);
            uint8_t px[12 * 12 * 3];
            for (int j = 0; j < 12 * 12 * 3; j++) px[j] = (uint8_t)(rng_uniform(&st) * 255);
            png_image img = {
                .version = PNG_IMAGE_VERSION, .width = 12, .height = 12, .format = PNG_FORMAT_RGB};
            assert_true(png_image_write_to_file(&img, path, 0, px, 0, NULL));
        }
    return root;
}

/* A new ViT takes channels and size from the images when the options leave them (0), and says
 * so: grey 8x8 textures give a grey 8x8 model, RGB 12x12 noise an RGB 12x12 one; options given
 * win. */
static void test_input_from_the_data(void **state) {
    (void)state;
    const struct {
        const char *folder;
        int channels, size, want_channels, want_size;
        const char *says;
    } cases[] = {
        {make_folder(), 0, 0, 1, 8, "grey input (the images are grey), 8x8 (the images' size)"},
        {make_rgb_folder(), 0, 0, 3, 12,
         "RGB input (the images have colour), 12x12 (the images' size), patch 4"},
        {make_rgb_folder(), 1, 16, 1, 16, "grey input (--channels), 16x16 (--image-size)"},
    };
    for (int i = 0; i < 3; i++) {
        char dir[4200], info[4096] = "";
        snprintf(dir, sizeof dir, "%s/from-data-%d", test_tmpdir(), i);
        train_options o = tiny_run(dir);
        o.train_path = cases[i].folder, o.epochs = 1, o.val_split = 0;
        o.channels = cases[i].channels, o.image_size = cases[i].size;
        const train_hooks hooks = {.user = info, .info = keep_info};
        vit_error err = {0};
        if (train_run(&o, 0, &hooks, &err) != 0) fail_msg("%s", err.msg);
        if (!strstr(info, cases[i].says)) fail_msg("expected '%s' in: %s", cases[i].says, info);
        model m;
        load_params(dir, &m);
        assert_int_equal(m.cfg.num_channels, cases[i].want_channels);
        assert_int_equal(m.cfg.image_size, cases[i].want_size);
        model_free(&m);
    }
}

static void test_fine_tune_resized(void **state) {
    (void)state;
    char root[4200], out[4200];
    out_dir(root, sizeof root, "five-classes");
    out_dir(out, sizeof out, "micro-a-at-48");
    mkdir(root, 0777);
    size_t size;
    uint8_t *png = read_whole_file(GOLDEN_IMAGES "/rgb_64x48.png", &size);
    assert_non_null(png);
    for (int c = 0; c < 5; c++)
        for (int i = 0; i < 2; i++) {
            char path[4400];
            snprintf(path, sizeof path, "%s/class_%d", root, c);
            mkdir(path, 0777);
            snprintf(path, sizeof path, "%s/class_%d/%d.png", root, c, i);
            FILE *f = fopen(path, "wb");
            assert_int_equal(fwrite(png, 1, size, f), size);
            fclose(f);
        }
    free(png);
    train_options o = train_default_options();
    o.train_path = root, o.out_dir = out, o.init_dir = MICRO_A;
    o.resize = 48, o.val_split = 0, o.epochs = 1, o.batch = 10;
    o.lr = 1e-10f, o.min_lr = 0, o.weight_decay = 0, o.threads = 1;
    vit_error err = {0};
    if (train_run(&o, 0, NULL, &err) != 0) fail_msg("%s", err.msg);
    char *json = (char *)read_whole_file(TEST_DATA "/micro-a-size48.json", &size);
    assert_non_null(json);
    cJSON *golden = cJSON_Parse(json);
    vit_context *ctx = vit_load(out, NULL, &err);
    if (!ctx) fail_msg("%s", err.msg);
    assert_int_equal(vit_tokens(ctx), 6 * 6 + 1);
    float *pixels = malloc(sizeof(float) * vit_input_floats(ctx)), logits[5];
    double worst = 0;
    const cJSON *item;
    cJSON_ArrayForEach(item, cJSON_GetObjectItem(golden, "logits")) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", GOLDEN_IMAGES, item->string);
        if (vit_preprocess_file(ctx, path, pixels, &err) != 0) fail_msg("%s", err.msg);
        assert_int_equal(vit_forward(ctx, pixels, 1, logits, &err), 0);
        for (int i = 0; i < 5; i++)
            worst = fmax(worst, fabs(logits[i] - cJSON_GetArrayItem(item, i)->valuedouble));
    }
    print_message("  micro-a fine-tuned at 48: max |dlogit| %.3g from transformers' at 48\n",
                  worst);
    assert_true(worst <= 1e-4);
    free(pixels), free(json);
    cJSON_Delete(golden);
    vit_free(ctx);
    /* refused: another size than a multiple of the patch, a new model, relative positions */
    o.overwrite = 1; /* out holds the model just trained: these runs are refused for their own */
    o.resize = 50;
    assert_int_equal(train_run(&o, 0, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "not a multiple of the patch size 8"));
    o.resize = 48, o.init_dir = NULL;
    assert_int_equal(train_run(&o, 0, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "--resize is for fine-tuning"));
    o.init_dir = TEST_DATA "/beit-micro";
    assert_int_equal(train_run(&o, 0, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "not a ViT or DeiT with square learned positions"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_adamw_hand_computed),
        cmocka_unit_test(test_adamw_frozen_encoder),
        cmocka_unit_test(test_lr_schedule),
        cmocka_unit_test(test_clip_global_norm),
        cmocka_unit_test(test_checkpoint_round_trip),
        cmocka_unit_test(test_pixel_lut),
        cmocka_unit_test(test_augment_is_shift_and_flip),
        cmocka_unit_test(test_beta_draws),
        cmocka_unit_test(test_mix_draws),
        cmocka_unit_test(test_layer_decay),
        cmocka_unit_test(test_resume_mid_epoch),
        cmocka_unit_test(test_resume_mixed),
        cmocka_unit_test(test_resume_at_epoch_end),
        cmocka_unit_test(test_resume_deit),
        cmocka_unit_test(test_resume_errors),
        cmocka_unit_test(test_checkpoint_all_or_nothing),
        cmocka_unit_test(test_resume_checks_option_ranges),
        cmocka_unit_test(test_training_learns),
        cmocka_unit_test(test_fine_tune_deit_teacher),
        cmocka_unit_test(test_fine_tune_resized),
        cmocka_unit_test(test_overwrite_and_best),
        cmocka_unit_test(test_input_from_the_data),
    };
    return cmocka_run_group_tests_name("train", tests, NULL, NULL);
}
