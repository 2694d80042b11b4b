/* open_clip folders (issue 41: open_clip_config.json + open_clip_model.safetensors) against
 * tools/open_clip_reference.py: its float64 forward written from open_clip's model.py and
 * transformer.py, its tokenizer (SimpleTokenizer's framing: [sot] ids [eot], padded with 0) and
 * its eval transform; the same weights as a transformers CLIPModel folder; what is refused. */
#include "tests/testutil.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "text/canonicalize.h"
#include "vit/vit.h"

/* float32 against float64 through one or two pre-LN blocks of width 16-32: measured below 2e-6
 * (printed); 1e-4 is the project's tolerance against float64 goldens, and a wrong part (GELU for
 * QuickGELU, a missing layer scale or ln_pre, the wrong pooled row, proj not transposed) moves
 * the embeddings by 1e-2 or more. */
#define TOL 1e-4

static const char *const images[] = {
    "examples/photos/cat.jpg",
    "tests/data/golden-images/rgb_64x48.png",
    "tests/data/golden-images/tall_40x400.jpg",
    "tests/data/golden-images/palette_120x90.png",
    "tests/data/golden-images/wide_500x37.png",
    "tests/data/golden-images/rgb_17x23.png" /* 32x43: the crop offset 5.5 rounds to 6 */};
#define IMAGES (int)(sizeof images / sizeof images[0])

/* tools/open_clip_reference.py's TEXTS */
static const char *const texts[] = {"a photo of a cat",
                                    "A Photo of the DOG's photo!",
                                    "",
                                    "cat dog cat dog cat dog cat dog cat dog cat dog cat dog cat "
                                    "dog",
                                    "the photo 12 of a bird \xc3\xa9t\xc3\xa9",
                                    "  a   cat\n\tphoto  "};
#define TEXTS (int)(sizeof texts / sizeof texts[0])

static const char *const folders[] = {
    "tests/data/open-clip-micro",           "tests/data/open-clip-micro-options",
    "tests/data/open-clip-timm-micro",      "tests/data/open-clip-timm-proj-micro",
    "tests/data/open-clip-timm-head-micro", "tests/data/open-clip-last-micro",
    "tests/data/open-clip-siglip-micro",    "tests/data/open-clip-siglip2-micro"};

static double worst_seen;

static void expect_close(const char *dir, const char *what, int i, const float *got,
                         const float *want, int n) {
    for (int k = 0; k < n; k++) {
        const double d = fabs((double)got[k] - want[k]);
        worst_seen = d > worst_seen ? d : worst_seen;
        if (!(d <= TOL))
            fail_msg("%s: %s %d [%d] is %g, the reference %g", dir, what, i, k, got[k], want[k]);
    }
}

static vit_context *load(const char *dir) {
    vit_error err = {0};
    vit_context *ctx = vit_load(dir, NULL, &err);
    if (!ctx) fail_msg("%s: %s", dir, err.msg);
    return ctx;
}

static vit_text_context *load_text(const char *dir) {
    vit_error err = {0};
    vit_text_context *ctx = vit_text_load(dir, NULL, &err);
    if (!ctx) fail_msg("%s: %s", dir, err.msg);
    return ctx;
}

/* Each image preprocessed as open_clip's eval transform: the reference's float32 pixels exactly
 * (PIL's resize, torchvision's center crop offsets, ToTensor, Normalize). */
static void test_preprocessing(void **state) {
    (void)state;
    for (size_t f = 0; f < sizeof folders / sizeof folders[0]; f++) {
        vit_context *ctx = load(folders[f]);
        const size_t n = vit_input_floats(ctx);
        float *px = test_alloc_floats(n), *want = test_golden_tensor(folders[f], "pixels", NULL);
        for (int i = 0; i < IMAGES; i++) {
            vit_error err = {0};
            if (vit_preprocess_file(ctx, images[i], px, &err) != 0)
                fail_msg("%s: %s", images[i], err.msg);
            size_t off = 0;
            for (size_t k = 0; k < n; k++) off += px[k] != want[i * n + k];
            if (off) fail_msg("%s, %s: %zu of %zu pixels differ", folders[f], images[i], off, n);
        }
        free(px), free(want);
        vit_free(ctx);
    }
}

/* The embedding's length (in double) divided out of want [E] into out. */
static void normalised(const float *want, int E, float *out) {
    double sum = 0;
    for (int k = 0; k < E; k++) sum += (double)want[k] * want[k];
    for (int k = 0; k < E; k++) out[k] = (float)(want[k] / sqrt(sum));
}

/* Each image's features on the reference's pixels: the projection of ln_post's class row
 * (VIT_POOL_PROJECTION); a timm tower's with timm_proj 'none', the trunk's attention pool
 * (VIT_POOL_POOLER); with head.proj or the trunk's head (an nn.Linear), the joint embedding
 * against the reference's normalised. */
static void check_images(const char *dir, vit_context *ctx, const float *px, const float *want) {
    const vit_pool pool = strstr(dir, "timm-micro") || strstr(dir, "siglip") ? VIT_POOL_POOLER
                          : strstr(dir, "timm")                              ? VIT_POOL_JOINT
                                                                             : VIT_POOL_PROJECTION;
    const int E = vit_joint_dim(ctx);
    const size_t n = vit_input_floats(ctx);
    float *got = test_alloc_floats((size_t)E), *unit = test_alloc_floats((size_t)E);
    for (int i = 0; i < IMAGES; i++) {
        vit_error err = {0};
        if (vit_embed(ctx, px + i * n, 1, pool, got, &err) != 0) fail_msg("%s: %s", dir, err.msg);
        const float *w = want + (size_t)i * E;
        if (pool == VIT_POOL_JOINT) normalised(w, E, unit);
        expect_close(dir, "image embedding", i, got, pool == VIT_POOL_JOINT ? unit : w, E);
    }
    free(got), free(unit);
}

/* Each text's ids (open_clip pads them with 0 to context_length: vit reads them unpadded, which
 * the causal mask makes the same) and features (the projection of ln_final's pooled row). */
static void check_texts(const char *dir, vit_text_context *t, const float *ids, int ctx_len,
                        const float *want, int E) {
    /* the projection: a matrix (text_embeds' VIT_POOL_PROJECTION), or with proj_bias an
     * nn.Linear (a linear head's output, VIT_POOL_POOLER, as SigLIP's) */
    const int hf = strstr(dir, "siglip") != NULL; /* HFTokenizer: padded with <pad>, 1 */
    const vit_pool pool = strstr(dir, "options") || hf ? VIT_POOL_POOLER : VIT_POOL_PROJECTION;
    float *got = test_alloc_floats((size_t)E);
    for (int i = 0; i < TEXTS; i++) {
        int32_t mine[64];
        vit_error err = {0};
        const int n = vit_text_tokenize(t, texts[i], strlen(texts[i]), mine, 64, &err);
        if (n < 2 || n > ctx_len) fail_msg("%s: text %d: %d ids (%s)", dir, i, n, err.msg);
        for (int k = 0; k < ctx_len; k++)
            if ((k < n ? mine[k] : hf) != (int32_t)ids[i * ctx_len + k])
                fail_msg("%s: text %d: id %d is %d, open_clip's %g", dir, i, k,
                         k < n ? mine[k] : hf, ids[i * ctx_len + k]);
        const size_t len = strlen(texts[i]);
        if (vit_text_embed(t, &texts[i], &len, 1, pool, got, &err) != 0)
            fail_msg("%s: %s", dir, err.msg);
        expect_close(dir, "text embedding", i, got, want + (size_t)i * E, E);
    }
    free(got);
}

/* The scores: the texts as class names (no template), each image against them. */
static void check_logits(const char *dir, vit_context *img, vit_text_context *t, const float *px,
                         const float *want) {
    vit_error err = {0};
    vit_classes *c = vit_classes_create(t, texts, TEXTS, NULL, 0, &err);
    if (!c) fail_msg("%s: %s", dir, err.msg);
    float scores[TEXTS], probs[TEXTS];
    const size_t n = vit_input_floats(img);
    for (int i = 0; i < IMAGES; i++) {
        if (vit_zero_shot(img, c, px + i * n, 1, scores, probs, &err) != 0)
            fail_msg("%s: %s", dir, err.msg);
        expect_close(dir, "logits of image", i, scores, want + (size_t)i * TEXTS, TEXTS);
    }
    vit_classes_free(c);
}

/* text_canonicalize against Python's canonicalize_text (open_clip's code run by
 * tools/open_clip_reference.py) on texts that tell its steps apart. Of them, basic_clean
 * (ftfy.fix_text), which vit does not run, would change the curly quotes' text: ftfy makes them
 * straight, which canonicalize then removes; this test checks the canonical step alone. */
static void test_canonicalize(void **state) {
    (void)state;
    size_t size;
    char *json =
        (char *)read_whole_file("tests/data/open-clip-siglip-micro/canonicalize.json", &size);
    assert_non_null(json);
    cJSON *root = cJSON_ParseWithLength(json, size), *pair;
    assert_true(cJSON_IsArray(root) && cJSON_GetArraySize(root) > 5);
    cJSON_ArrayForEach(pair, root) {
        const char *in = cJSON_GetArrayItem(pair, 0)->valuestring;
        const char *want = cJSON_GetArrayItem(pair, 1)->valuestring;
        char *got;
        size_t n;
        assert_int_equal(text_canonicalize(in, strlen(in), &got, &n), 0);
        if (strcmp(got, want) != 0 || n != strlen(want))
            fail_msg("canonicalize '%s': '%s', Python's '%s'", in, got, want);
        free(got);
    }
    cJSON_Delete(root);
    free(json);
}

static void test_outputs_match_reference(void **state) {
    (void)state;
    for (size_t f = 0; f < sizeof folders / sizeof folders[0]; f++) {
        const char *dir = folders[f];
        worst_seen = 0;
        vit_context *img = load(dir);
        vit_text_context *t = load_text(dir);
        const int E = vit_joint_dim(img);
        size_t numel;
        float *px = test_golden_tensor(dir, "pixels", &numel);
        assert_int_equal(numel, IMAGES * vit_input_floats(img));
        float *ie = test_golden_tensor(dir, "image_embeds", &numel);
        assert_int_equal(numel, (size_t)IMAGES * E);
        float *ids = test_golden_tensor(dir, "ids", &numel);
        const int ctx_len = (int)(numel / TEXTS);
        float *te = test_golden_tensor(dir, "text_embeds", &numel);
        assert_int_equal(numel, (size_t)TEXTS * E);
        float *logits = test_golden_tensor(dir, "logits_per_image", NULL);
        check_images(dir, img, px, ie);
        check_texts(dir, t, ids, ctx_len, te, E);
        check_logits(dir, img, t, px, logits);
        print_message("%s: largest difference %.2g\n", dir, worst_seen);
        free(px), free(ie), free(ids), free(te), free(logits);
        vit_text_free(t);
        vit_free(img);
    }
}

/* open-clip-micro-hf holds open-clip-micro's weights under transformers' CLIPModel names: the
 * same image and text features, bit for bit, on the same pixels and texts. */
static void test_same_weights_as_hf_folder(void **state) {
    (void)state;
    const char *oc = folders[0], *hf = "tests/data/open-clip-micro-hf";
    vit_context *a = load(oc), *b = load(hf);
    vit_text_context *ta = load_text(oc), *tb = load_text(hf);
    const int E = vit_joint_dim(a);
    assert_int_equal(E, vit_joint_dim(b));
    const size_t n = vit_input_floats(a);
    float *px = test_golden_tensor(oc, "pixels", NULL);
    float *x = test_alloc_floats((size_t)E), *y = test_alloc_floats((size_t)E);
    vit_error err = {0};
    for (int i = 0; i < IMAGES; i++) {
        if (vit_embed(a, px + i * n, 1, VIT_POOL_JOINT, x, &err) ||
            vit_embed(b, px + i * n, 1, VIT_POOL_JOINT, y, &err))
            fail_msg("%s", err.msg);
        if (memcmp(x, y, sizeof(float) * (size_t)E) != 0)
            fail_msg("%s: the open_clip and the CLIPModel folder differ", images[i]);
    }
    for (int i = 0; i < TEXTS; i++) {
        const size_t len = strlen(texts[i]);
        if (vit_text_embed(ta, &texts[i], &len, 1, VIT_POOL_JOINT, x, &err) ||
            vit_text_embed(tb, &texts[i], &len, 1, VIT_POOL_JOINT, y, &err))
            fail_msg("%s", err.msg);
        if (memcmp(x, y, sizeof(float) * (size_t)E) != 0)
            fail_msg("text %d: the open_clip and the CLIPModel folder differ", i);
    }
    free(x), free(y), free(px);
    vit_text_free(ta), vit_text_free(tb);
    vit_free(a), vit_free(b);
}

/* open-clip-timm-micro's trunk is timm-siglip-micro's tensors under visual.trunk.: the same
 * image features as that timm folder, bit for bit, on the same pixels (the same blocks, attention
 * pool and no projection: timm_proj 'none'). */
static void test_timm_tower_as_timm_folder(void **state) {
    (void)state;
    const char *oc = folders[2], *timm = "tests/data/timm-siglip-micro";
    vit_context *a = load(oc), *b = load(timm);
    const int E = vit_joint_dim(a);
    assert_int_equal(E, vit_num_labels(b));
    const size_t n = vit_input_floats(a);
    assert_int_equal(n, vit_input_floats(b));
    float *px = test_golden_tensor(oc, "pixels", NULL);
    float *x = test_alloc_floats((size_t)E), *y = test_alloc_floats((size_t)E);
    vit_error err = {0};
    for (int i = 0; i < IMAGES; i++) {
        if (vit_embed(a, px + i * n, 1, VIT_POOL_POOLER, x, &err) ||
            vit_embed(b, px + i * n, 1, VIT_POOL_POOLER, y, &err))
            fail_msg("%s", err.msg);
        if (memcmp(x, y, sizeof(float) * (size_t)E) != 0)
            fail_msg("%s: the open_clip timm tower and the timm folder differ", images[i]);
    }
    free(x), free(y), free(px);
    vit_free(a), vit_free(b);
}

/* open-clip-timm-head-micro is timm-vit-micro whole (timm_proj unset: the trunk's own head of
 * embed_dim 5 is the projection): its joint embedding is that timm classifier's logits,
 * normalised. */
static void test_timm_head_as_timm_folder(void **state) {
    (void)state;
    const char *oc = folders[4], *timm = "tests/data/timm-vit-micro";
    vit_context *a = load(oc), *b = load(timm);
    const int E = vit_joint_dim(a);
    assert_int_equal(E, vit_num_labels(b));
    const size_t n = vit_input_floats(a);
    float *px = test_golden_tensor(oc, "pixels", NULL);
    float *x = test_alloc_floats((size_t)E), *y = test_alloc_floats((size_t)E);
    vit_error err = {0};
    for (int i = 0; i < IMAGES; i++) {
        if (vit_embed(a, px + i * n, 1, VIT_POOL_JOINT, x, &err) ||
            vit_forward(b, px + i * n, 1, y, &err))
            fail_msg("%s", err.msg);
        double sum = 0, worst = 0;
        for (int k = 0; k < E; k++) sum += (double)y[k] * y[k];
        for (int k = 0; k < E; k++) worst = fmax(worst, fabs(x[k] - y[k] / sqrt(sum)));
        /* the same float32 logits, normalised in float32 by vit and in double here */
        if (!(worst <= 1e-6)) fail_msg("%s: %g from timm-vit-micro's logits", images[i], worst);
    }
    free(x), free(y), free(px);
    vit_free(a), vit_free(b);
}

/* open-clip-micro's files with its weights as open_clip_pytorch_model.bin (torch.save's zip,
 * tests/data/torch-bin/open-clip-micro) instead of open_clip_model.safetensors: the same
 * features, bit for bit. */
static const char *bin_folder(void) {
    static const char *const files[] = {
        "tests/data/open-clip-micro/open_clip_config.json", "tests/data/open-clip-micro/vocab.json",
        "tests/data/open-clip-micro/merges.txt", "tests/data/open-clip-micro/tokenizer_config.json",
        "tests/data/torch-bin/open-clip-micro/open_clip_pytorch_model.bin"};
    static char dir[4096];
    snprintf(dir, sizeof dir, "%s/open-clip-bin", test_tmpdir());
    mkdir(dir, 0755);
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char link[4096 + 64], target[4096];
        snprintf(link, sizeof link, "%s/%s", dir, strrchr(files[i], '/') + 1);
        assert_non_null(realpath(files[i], target));
        unlink(link);
        assert_int_equal(symlink(target, link), 0);
    }
    return dir;
}

/* Folder `dir` gives open-clip-micro's features, bit for bit (its image features on the
 * reference's pixels, a text's). */
static void expect_same_model(const char *dir, const char *what) {
    vit_context *a = load(folders[0]), *b = load(dir);
    vit_text_context *ta = load_text(folders[0]), *tb = load_text(dir);
    const int E = vit_joint_dim(a);
    const size_t n = vit_input_floats(a);
    float *px = test_golden_tensor(folders[0], "pixels", NULL);
    float *x = test_alloc_floats((size_t)E), *y = test_alloc_floats((size_t)E);
    vit_error err = {0};
    for (int i = 0; i < IMAGES; i++) {
        if (vit_embed(a, px + i * n, 1, VIT_POOL_JOINT, x, &err) ||
            vit_embed(b, px + i * n, 1, VIT_POOL_JOINT, y, &err))
            fail_msg("%s", err.msg);
        if (memcmp(x, y, sizeof(float) * (size_t)E) != 0)
            fail_msg("%s: %s differs", images[i], what);
    }
    const size_t len = strlen(texts[0]);
    if (vit_text_embed(ta, &texts[0], &len, 1, VIT_POOL_JOINT, x, &err) ||
        vit_text_embed(tb, &texts[0], &len, 1, VIT_POOL_JOINT, y, &err))
        fail_msg("%s", err.msg);
    assert_memory_equal(x, y, sizeof(float) * (size_t)E);
    free(x), free(y), free(px);
    vit_text_free(ta), vit_text_free(tb);
    vit_free(a), vit_free(b);
}

static void test_pytorch_bin(void **state) {
    (void)state;
    expect_same_model(bin_folder(), "open_clip_pytorch_model.bin");
}

/* vit convert of the .bin folder: OUT_DIR holds open_clip_model.safetensors and
 * open_clip_config.json (no config.json, no model.safetensors) and the same model; a second run
 * keeps it unless --overwrite. */
static void test_convert(void **state) {
    (void)state;
    REQUIRE_BIN();
    char out[4096], path[4096 + 64];
    snprintf(out, sizeof out, "%s/open-clip-converted", test_tmpdir());
    const char *args[] = {"convert", "--dtype", "f32", bin_folder(), out, NULL};
    test_run_result r = test_run_vit(NULL, NULL, args);
    if (r.status != 0) fail_msg("vit convert: exit %d: %s", r.status, r.err);
    test_run_free(&r);
    static const char *const present[] = {"open_clip_model.safetensors", "open_clip_config.json",
                                          "vocab.json", "merges.txt"};
    for (size_t i = 0; i < sizeof present / sizeof present[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", out, present[i]);
        if (access(path, F_OK) != 0) fail_msg("vit convert wrote no %s", present[i]);
    }
    snprintf(path, sizeof path, "%s/config.json", out);
    assert_int_not_equal(access(path, F_OK), 0);
    snprintf(path, sizeof path, "%s/model.safetensors", out);
    assert_int_not_equal(access(path, F_OK), 0);
    expect_same_model(out, "the converted folder");
    r = test_run_vit(NULL, NULL, args);
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.err, "open_clip_config.json exists (--overwrite replaces it)"));
    test_run_free(&r);
}

/* A folder in the temporary directory: open_clip_config.json `json`, open-clip-micro's weights
 * and tokenizer files linked. */
static const char *folder_with_config(const char *name, const char *json) {
    static char dir[4096];
    static const char *const files[] = {"open_clip_model.safetensors", "vocab.json", "merges.txt",
                                        "tokenizer_config.json"};
    snprintf(dir, sizeof dir, "%s/%s", test_tmpdir(), name);
    mkdir(dir, 0755);
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char link[4096 + 64], from[256], target[4096];
        snprintf(link, sizeof link, "%s/%s", dir, files[i]);
        snprintf(from, sizeof from, "tests/data/open-clip-micro/%s", files[i]);
        assert_non_null(realpath(from, target));
        unlink(link);
        assert_int_equal(symlink(target, link), 0);
    }
    char file[4096 + 32];
    snprintf(file, sizeof file, "%s/open_clip_config.json", name);
    write_temp_file(file, json, strlen(json));
    return dir;
}

/* Keys that change nothing vit computes (training-only, what else a forward returns, positions
 * that are a parameter either way, the default cleaning, a square image_size pair, the pooled
 * row's norm placed after the pool): open-clip-micro's features, bit for bit. */
static void test_keys_without_effect(void **state) {
    (void)state;
    static const char *const json =
        "{\"model_cfg\": {\"embed_dim\": 20, \"quick_gelu\": true, \"cast_dtype\": null, "
        "\"vision_cfg\": {\"image_size\": [32, 32], \"layers\": 2, \"width\": 32, "
        "\"patch_size\": 8, \"head_width\": 8, \"mlp_ratio\": 2.0, \"patch_dropout\": 0.5, "
        "\"pos_embed_type\": \"sin_cos_2d\", \"final_ln_after_pool\": true, "
        "\"output_tokens\": true, \"ls_init_value\": null, \"timm_pool\": \"map\"}, "
        "\"text_cfg\": {\"context_length\": 16, \"vocab_size\": 532, \"width\": 24, "
        "\"heads\": 2, \"layers\": 2, \"mlp_ratio\": 2.0, \"tokenizer_kwargs\": {\"clean\": "
        "\"lower\"}, \"pad_id\": 0, \"final_ln_after_pool\": true, \"embed_cls\": false, "
        "\"proj_type\": \"linear\", \"pool_type\": \"argmax\"}}, \"preprocess_cfg\": "
        "{\"mean\": [0.48145466, 0.4578275, 0.40821073], \"std\": [0.26862954, 0.26130258, "
        "0.27577711], \"interpolation\": \"bicubic\", \"resize_mode\": \"shortest\", "
        "\"fill_color\": 0, \"mode\": \"RGB\"}}";
    expect_same_model(folder_with_config("no-effect", json), "a folder with keys without effect");
}

/* What vit does not run, or what the weights do not hold: refused in one line naming the file and
 * the field (or the tensor), by both towers' loaders. */
static void test_refusals(void **state) {
    (void)state;
    /* open-clip-micro's model_cfg; a case's keys come last (the last of two equal keys is read,
     * as Python's json.loads reads them) */
    static const char *const vision = "\"image_size\": 32, \"layers\": 2, \"width\": 32, "
                                      "\"patch_size\": 8, \"head_width\": 8, \"mlp_ratio\": 2.0";
    static const char *const text = "\"context_length\": 16, \"vocab_size\": 532, \"width\": 24, "
                                    "\"heads\": 2, \"layers\": 2, \"mlp_ratio\": 2.0";
    static const struct {
        const char *name, *model, *vision, *text, *why;
    } cases[] = {
        {"timm", "", ", \"timm_model_name\": \"vit_base_patch16_siglip_224\"", "",
         "missing tensor 'visual.trunk.pos_embed'"},
        {"timm_mlp", "", ", \"timm_model_name\": \"vit_base_patch16_224\", \"timm_proj\": \"mlp\"",
         "", "timm_proj 'mlp' is not one vit runs (linear, none, unset)"},
        {"timm_rot", "",
         ", \"timm_model_name\": \"vit_base_patch16_224\", \"timm_pool\": "
         "\"rot_attn\"",
         "", "timm_pool 'rot_attn' (open_clip's own attention pool) is not one"},
        {"timm_name", "", ", \"timm_model_name\": \"resnet50\"", "",
         "architecture 'resnet50' is not a timm VisionTransformer vit knows"},
        {"timm_kwargs", "",
         ", \"timm_model_name\": \"vit_base_patch16_224\", "
         "\"timm_model_kwargs\": {\"rope\": 1}",
         "", "field 'model_args.rope' is not one vit reads"},
        {"timm_none", "",
         ", \"timm_model_name\": \"vit_base_patch16_224\", \"timm_proj\": \"none\"", "",
         "timm_proj 'none': the trunk's 768 features are not embed_dim 20"},
        {"hf_text", "", "", ", \"hf_model_name\": \"xlm-roberta-base\"",
         "a Hugging Face text tower (hf_model_name 'xlm-roberta-base') is not one vit runs"},
        {"resnet", "", ", \"layers\": [3, 4, 6, 3]", "", "a ModifiedResNet image tower"},
        {"avg", "", ", \"pool_type\": \"avg\"", "", "field 'pool_type' is 'avg'; vit runs 'tok'"},
        {"attn_pool", "", ", \"attentional_pool\": true", "",
         "field 'attentional_pool' asks for what vit does not run"},
        {"qk_norm", "", ", \"qk_norm\": true", "", "field 'qk_norm' asks for what vit does not"},
        {"bidirectional", "", "", ", \"no_causal_mask\": true",
         "text pool_type 'argmax' with no_causal_mask true is not one vit runs"},
        {"last", "", "", ", \"pool_type\": \"last\"",
         "text pool_type 'last' with no_causal_mask false is not one vit runs"},
        {"first", "", "", ", \"pool_type\": \"first\"",
         "text pool_type 'first' is not one vit runs (argmax, eos, last)"},
        {"eos_no_id", "", "", ", \"pool_type\": \"eos\"", "pool_type 'eos' without eos_id"},
        {"unknown", "", ", \"rope\": 1", "", "field 'rope' is not one vit reads"},
        {"coca", ", \"multimodal_cfg\": {}", "", "", "field 'model_cfg.multimodal_cfg' is not one"},
        {"act_kwargs", "", ", \"act_kwargs\": {\"approximate\": \"tanh\"}", "",
         "field 'act_kwargs': vit runs QuickGELU without arguments"},
        {"act_inplace", ", \"quick_gelu\": false", "",
         ", \"act_kwargs\": {\"approximate\": \"tanh\", \"inplace\": true}",
         "field 'act_kwargs.inplace' is not one vit reads (approximate is)"},
        {"act_erf", ", \"quick_gelu\": false", "", ", \"act_kwargs\": {\"approximate\": \"erf\"}",
         "field 'approximate' is 'erf'; vit runs 'none' and 'tanh'"},
        {"tokenizer", "", "", ", \"tokenizer_kwargs\": {\"clean\": \"canonicalize\"}",
         "field 'tokenizer_kwargs.clean' is not one vit follows"},
        {"hf_tokenizer", "", "", ", \"hf_tokenizer_name\": \"bert-base-uncased\"",
         "hf_tokenizer_name without tokenizer_kwargs {\"clean\": \"canonicalize\"}: "
         "HFTokenizer's 'whitespace' cleaning is not one vit follows"},
        {"hf_lower", "", "",
         ", \"hf_tokenizer_name\": \"x\", \"tokenizer_kwargs\": {\"clean\": \"lower\"}",
         "field 'tokenizer_kwargs.clean' is not one vit follows (with hf_tokenizer_name vit "
         "cleans as 'canonicalize')"},
        {"hf_strip_sep", "", "",
         ", \"hf_tokenizer_name\": \"x\", \"tokenizer_kwargs\": {\"clean\": "
         "\"canonicalize\", \"strip_sep_token\": true}",
         "field 'tokenizer_kwargs.strip_sep_token' is not one vit follows"},
        {"clips_mode", "", "", ", \"tokenizer_mode\": \"clips\"",
         "field 'tokenizer_mode' is 'clips'; vit runs ''"},
        {"wider", "", ", \"width\": 48", "",
         "tensor 'visual.class_embedding' has shape [32], expected [48]"},
        {"deeper", "", "", ", \"layers\": 3",
         "missing tensor 'transformer.resblocks.2.ln_1.weight'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char json[2048];
        snprintf(json, sizeof json,
                 "{\"model_cfg\": {\"embed_dim\": 20, \"quick_gelu\": true, \"vision_cfg\": "
                 "{%s%s}, \"text_cfg\": {%s%s}%s}}",
                 vision, cases[i].vision, text, cases[i].text, cases[i].model);
        const char *dir = folder_with_config(cases[i].name, json);
        const int text_case = *cases[i].text != 0;
        vit_error err = {0};
        void *ctx =
            text_case ? (void *)vit_text_load(dir, NULL, &err) : (void *)vit_load(dir, NULL, &err);
        if (ctx) fail_msg("%s: loaded", cases[i].name);
        if (!strstr(err.msg, cases[i].why) || !strstr(err.msg, dir) || strchr(err.msg, '\n'))
            fail_msg("%s: '%s' does not say '%s'", cases[i].name, err.msg, cases[i].why);
    }
    const char *dir = folder_with_config(
        "longest", "{\"model_cfg\": {\"embed_dim\": 20, \"vision_cfg\": {\"image_size\": 32, "
                   "\"layers\": 2, \"width\": 32, \"patch_size\": 8, \"head_width\": 8, "
                   "\"mlp_ratio\": 2.0}}, \"preprocess_cfg\": {\"resize_mode\": \"longest\"}}");
    vit_error why = {0};
    assert_null(vit_load(dir, NULL, &why));
    if (!strstr(why.msg, "preprocess_cfg.resize_mode 'longest' is not one vit follows"))
        fail_msg("longest: '%s'", why.msg);
    dir = folder_with_config("no_model_cfg", "{\"embed_dim\": 20}");
    vit_error err = {0};
    assert_null(vit_load(dir, NULL, &err));
    assert_non_null(strstr(err.msg, "no 'model_cfg' object"));
}

/* `out`'s "embeddings" [1, n] against want, within 1e-6 (the CLI writes the library's floats). */
static void expect_file(const char *out, const float *want, int n) {
    size_t numel;
    float *got = test_read_tensor(out, "embeddings", &numel);
    assert_non_null(got);
    assert_int_equal(numel, (size_t)n);
    for (int i = 0; i < n; i++)
        if (!(fabs(got[i] - want[i]) <= 1e-6))
            fail_msg("%s [%d]: %g, not %g", out, i, got[i], want[i]);
    free(got);
}

static test_run_result run_ok(const char *const *args) {
    test_run_result r = test_run_vit(NULL, NULL, args);
    if (r.status != 0) fail_msg("vit %s: exit %d: %s", args[0], r.status, r.err);
    return r;
}

/* vit info names open_clip's class and parts, a count of one in the singular. */
static void test_cli_info(void **state) {
    (void)state;
    REQUIRE_BIN();
    const char *info[] = {"info", "-m", folders[1], NULL};
    test_run_result r = run_ok(info);
    static const char *const says[] = {
        "architecture:   open_clip CustomTextCLIP: an image and a text tower, embeddings of 12",
        "                1 layer pre-LN, hidden 32, 2 heads, mlp 80, gelu, layer scale; final "
        "LayerNorm, pooled by the CLS row",
        "                1 layer pre-LN causal, hidden 16, 2 heads,",
        "preprocessing:  resize 32x32 bilinear, mean [0.5 0.5 0.5] std [0.5 0.5 0.5]",
        "pooled by the first end token, then a linear head",
        "plus logit_bias; a sigmoid"};
    for (size_t i = 0; i < sizeof says / sizeof says[0]; i++)
        if (!strstr(r.out, says[i])) fail_msg("vit info does not say '%s':\n%s", says[i], r.out);
    test_run_free(&r);
    const char *info0[] = {"info", "-m", folders[0], NULL};
    r = run_ok(info0);
    assert_non_null(strstr(r.out, "pooled by the largest id (open_clip's argmax)"));
    assert_non_null(strstr(r.out, "shortest edge 32 bicubic, center crop 32x32"));
    test_run_free(&r);
}

/* vit classify --classes gives the library's zero-shot probabilities; vit embed (an image, a
 * text) writes the library's joint embeddings. */
static void test_cli_classify_embed(void **state) {
    (void)state;
    REQUIRE_BIN();
    vit_context *img = load(folders[0]);
    vit_text_context *t = load_text(folders[0]);
    const int E = vit_joint_dim(img);
    float *px = test_alloc_floats(vit_input_floats(img)), *want = test_alloc_floats((size_t)E);
    vit_error err = {0};
    const char *names[] = {"cat", "dog", "bird"};
    const char *const templates[] = {"a photo of a {}."}; /* vit classify's default */
    vit_classes *c = vit_classes_create(t, names, 3, templates, 1, &err);
    float scores[3], probs[3];
    assert_non_null(c);
    assert_int_equal(vit_preprocess_file(img, images[0], px, &err), 0);
    assert_int_equal(vit_zero_shot(img, c, px, 1, scores, probs, &err), 0);
    const char *classify[] = {"classify",     "-m",      folders[0], "--classes",
                              "cat,dog,bird", images[0], NULL};
    test_run_result r = run_ok(classify);
    for (int k = 0; k < 3; k++) {
        char line[64];
        snprintf(line, sizeof line, "%.4f  %s", probs[k], names[k]);
        if (!strstr(r.out, line)) fail_msg("vit classify does not say '%s':\n%s", line, r.out);
    }
    test_run_free(&r);
    char out[4096];
    snprintf(out, sizeof out, "%s/open-clip-image.safetensors", test_tmpdir());
    const char *embed[] = {"embed", "-m", folders[0], images[0], "-o", out, NULL};
    test_run_free((r = run_ok(embed), &r));
    assert_int_equal(vit_embed(img, px, 1, VIT_POOL_JOINT, want, &err), 0);
    expect_file(out, want, E);
    snprintf(out, sizeof out, "%s/open-clip-text.safetensors", test_tmpdir());
    const char *embed_text[] = {"embed", "-m", folders[0], "--text", texts[0], "-o", out, NULL};
    test_run_free((r = run_ok(embed_text), &r));
    const size_t len = strlen(texts[0]);
    assert_int_equal(vit_text_embed(t, &texts[0], &len, 1, VIT_POOL_JOINT, want, &err), 0);
    expect_file(out, want, E);
    vit_classes_free(c);
    free(px), free(want);
    vit_text_free(t);
    vit_free(img);
}

/* vit search ranks a folder's images for a text: rgb_17x23.png's score is the cosine of the
 * library's joint embeddings, as printed (4 places). */
static void test_cli_search(void **state) {
    (void)state;
    REQUIRE_BIN();
    char cache[4096];
    snprintf(cache, sizeof cache, "%s/open-clip-search.cache", test_tmpdir());
    const char *query = "a photo of a cat";
    const char *search[] = {
        "search", "-m", folders[0], "--cache", cache, query, "tests/data/golden-images", NULL};
    test_run_result r = run_ok(search);
    const char *line = strstr(r.out, "tests/data/golden-images/rgb_17x23.png");
    assert_non_null(line);
    while (line > r.out && line[-1] != '\n') line--;
    int rank = 0;
    double score = 0, dot = 0;
    assert_int_equal(sscanf(line, "%d %lf", &rank, &score), 2);
    vit_context *img = load(folders[0]);
    vit_text_context *t = load_text(folders[0]);
    const int E = vit_joint_dim(img);
    float *px = test_alloc_floats(vit_input_floats(img)), *x = test_alloc_floats((size_t)E);
    float *q = test_alloc_floats((size_t)E);
    vit_error err = {0};
    const size_t qlen = strlen(query);
    assert_int_equal(vit_text_embed(t, &query, &qlen, 1, VIT_POOL_JOINT, q, &err), 0);
    assert_int_equal(vit_preprocess_file(img, images[IMAGES - 1], px, &err), 0);
    assert_int_equal(vit_embed(img, px, 1, VIT_POOL_JOINT, x, &err), 0);
    for (int i = 0; i < E; i++) dot += (double)q[i] * x[i];
    if (!(fabs(dot - score) <= 5e-5))
        fail_msg("vit search scores %g, the cosine is %g", score, dot);
    free(q), free(x), free(px);
    test_run_free(&r);
    vit_text_free(t);
    vit_free(img);
}

/* Copies examples/photos/NAME.jpg to the test folder's RELATIVE path. */
static void copy_photo(const char *name, const char *relative) {
    char path[4200];
    snprintf(path, sizeof path, "examples/photos/%s.jpg", name);
    size_t size = 0;
    uint8_t *bytes = read_whole_file(path, &size);
    assert_non_null(bytes);
    write_temp_file(relative, bytes, size);
    free(bytes);
}

/* The names dir holds besides . and .., comma-separated into out (in readdir's order). */
static void list_names(const char *dir, char *out, size_t size) {
    DIR *d = opendir(dir);
    assert_non_null(d);
    out[0] = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            snprintf(out + strlen(out), size - strlen(out), "%s%s", out[0] ? "," : "", e->d_name);
    closedir(d);
}

/* vit train --init on an open_clip folder (no training forward for the family) refuses in one
 * line and leaves nothing behind: no new --out folder, and an existing one as it was (before,
 * the image task's validation.tsv was written before the refusal). */
static void test_train_refused(void **state) {
    (void)state;
    REQUIRE_BIN();
    char data[4200], out[4200], kept[4200], names[512];
    snprintf(data, sizeof data, "%s/oc-train", test_tmpdir());
    snprintf(out, sizeof out, "%s/oc-train-out", test_tmpdir());
    snprintf(kept, sizeof kept, "%s/oc-train-kept", test_tmpdir());
    char class_dir[4300];
    assert_int_equal(mkdir(data, 0700), 0);
    snprintf(class_dir, sizeof class_dir, "%s/cat", data);
    assert_int_equal(mkdir(class_dir, 0700), 0);
    snprintf(class_dir, sizeof class_dir, "%s/cup", data);
    assert_int_equal(mkdir(class_dir, 0700), 0);
    copy_photo("cat", "oc-train/cat/1.jpg"), copy_photo("cat", "oc-train/cat/2.jpg");
    copy_photo("coffee", "oc-train/cup/1.jpg"), copy_photo("coffee", "oc-train/cup/2.jpg");
    assert_int_equal(mkdir(kept, 0700), 0);
    write_temp_file("oc-train-kept/notes.txt", "mine", 4);
    const char *const outs[] = {out, kept};
    for (int i = 0; i < 2; i++) {
        const char *args[] = {"train", "--train",  data, "--init", folders[0], "--out",
                              outs[i], "--epochs", "1",  "-t",     "1",        NULL};
        test_run_result r = test_run_vit(NULL, NULL, args);
        assert_int_equal(r.status, 1);
        if (!strstr(r.err, "vit train: open_clip CLIP (vision tower): inference only") ||
            strstr(r.err, "decoding")) /* refused before the images are read */
            fail_msg("vit train says:\n%s", r.err);
        test_run_free(&r);
    }
    struct stat st;
    if (stat(out, &st) == 0) fail_msg("the refused run left %s behind", out);
    list_names(kept, names, sizeof names);
    assert_string_equal(names, "notes.txt");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_preprocessing),
        cmocka_unit_test(test_canonicalize),
        cmocka_unit_test(test_outputs_match_reference),
        cmocka_unit_test(test_same_weights_as_hf_folder),
        cmocka_unit_test(test_timm_tower_as_timm_folder),
        cmocka_unit_test(test_timm_head_as_timm_folder),
        cmocka_unit_test(test_pytorch_bin),
        cmocka_unit_test(test_convert),
        cmocka_unit_test(test_keys_without_effect),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_cli_info),
        cmocka_unit_test(test_cli_classify_embed),
        cmocka_unit_test(test_cli_search),
        cmocka_unit_test(test_train_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
