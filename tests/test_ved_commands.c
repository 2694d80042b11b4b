/* The commands other than `vit generate` on a VisionEncoderDecoderModel folder (the random micro
 * models of tests/data/ved-*): `vit info` describes the encoder, the decoder and the generation
 * settings as the folder's own JSON files say (read here with cJSON); `vit classify` and `vit
 * explain` refuse in one line pointing to `vit generate`, `vit eval` on a class folder in one line
 * pointing to text-line images (labels.tsv, tests/test_ocr_cli); the encoder's features (vit_embed,
 * `vit embed`) are the Hugging Face encoder's last_hidden_state in the goldens (CLS row, mean of
 * the patch rows). */
#include "tests/testutil.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "vit/vit.h"

static const char *const models[] = {TEST_DATA "/ved-trocr-vit", TEST_DATA "/ved-trocr-sin-deit",
                                     TEST_DATA "/ved-gpt2-vit"};
#define MODELS 3

/* float32 against the float64 goldens through two layers: the project's tolerance (README). */
#define TOL 1e-4

static cJSON *read_json(const char *dir, const char *name) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    char *text = (char *)read_whole_file(path, NULL);
    if (!text) fail_msg("cannot read %s", path);
    cJSON *json = cJSON_Parse(text);
    free(text);
    if (!json) fail_msg("%s is not JSON", path);
    return json;
}

/* key's integer, or fallback when absent or null. */
static int int_of(const cJSON *o, const char *key, int fallback) {
    const cJSON *v = cJSON_GetObjectItem(o, key);
    return cJSON_IsNumber(v) ? v->valueint : fallback;
}

static int true_of(const cJSON *o, const char *key, int fallback) {
    const cJSON *v = cJSON_GetObjectItem(o, key);
    return cJSON_IsBool(v) ? cJSON_IsTrue(v) : fallback;
}

static void expect_line(const char *out, const char *want) {
    if (!strstr(out, want)) fail_msg("vit info says:\n%s\nwithout: %s", out, want);
}

/* The encoder's line, from config.json's "encoder". */
static void expect_encoder(const char *out, const cJSON *enc) {
    const int deit = strcmp(cJSON_GetObjectItem(enc, "model_type")->valuestring, "deit") == 0;
    char want[256];
    snprintf(want, sizeof want,
             "encoder:        %s (pre-LN%s), %d layers, hidden %d, %d heads, mlp %d, %s,",
             deit ? "DeiTModel" : "ViTModel", deit ? ", distillation token" : "",
             int_of(enc, "num_hidden_layers", 0), int_of(enc, "hidden_size", 0),
             int_of(enc, "num_attention_heads", 0), int_of(enc, "intermediate_size", 0),
             cJSON_GetObjectItem(enc, "hidden_act")->valuestring);
    expect_line(out, want);
}

/* The decoder's lines, from config.json's "decoder" (TrOCRConfig's or GPT2Config's names). */
static void expect_decoder(const char *out, const cJSON *dec, int encoder_hidden) {
    const int gpt2 = strcmp(cJSON_GetObjectItem(dec, "model_type")->valuestring, "gpt2") == 0;
    const int hidden = int_of(dec, gpt2 ? "n_embd" : "d_model", 0);
    const int positions = int_of(dec, gpt2 ? "n_positions" : "max_position_embeddings", 0);
    const int learned = gpt2 || true_of(dec, "use_learned_position_embeddings", 1);
    char want[256];
    snprintf(want, sizeof want,
             "decoder:        %s, %d layers %s, hidden %d, %d heads, ffn %d, %s\n",
             gpt2 ? "GPT2LMHeadModel" : "TrOCRForCausalLM",
             int_of(dec, gpt2 ? "n_layer" : "decoder_layers", 0), gpt2 ? "pre-LN" : "post-LN",
             hidden, int_of(dec, gpt2 ? "n_head" : "decoder_attention_heads", 0),
             gpt2 ? int_of(dec, "n_inner", 4 * hidden) : int_of(dec, "decoder_ffn_dim", 0),
             cJSON_GetObjectItem(dec, "activation_function")->valuestring);
    expect_line(out, want);
    snprintf(want, sizeof want, "positions %s, %d%s", learned ? "learned" : "sinusoidal", positions,
             learned && !gpt2 ? " (offset 2)" : "");
    expect_line(out, want);
    const int cross = int_of(dec, "cross_attention_hidden_size", 0);
    if (cross)
        snprintf(want, sizeof want, "keys and values at cross_attention_hidden_size %d", cross);
    else if (encoder_hidden != hidden)
        snprintf(want, sizeof want, "through enc_to_dec_proj (%d -> %d)", encoder_hidden, hidden);
    else
        snprintf(want, sizeof want, "as wide as the decoder (%d)", hidden);
    expect_line(out, want);
    snprintf(want, sizeof want, "output head %s, vocabulary %d",
             true_of(dec, "tie_word_embeddings", 1) ? "tied to the token embeddings" : "of its own",
             int_of(dec, "vocab_size", 0));
    expect_line(out, want);
}

/* The tokenizer's class and the generation settings, from tokenizer_config.json and
 * generation_config.json (GenerationConfig's defaults for what it leaves out). */
static void expect_tokenizer_generation(const char *out, const char *dir) {
    cJSON *tok = read_json(dir, "tokenizer_config.json"),
          *gen = read_json(dir, "generation_config.json");
    char want[256];
    snprintf(want, sizeof want, "tokenizer:      %s (byte-level BPE)",
             cJSON_GetObjectItem(tok, "tokenizer_class")->valuestring);
    expect_line(out, want);
    const int beams = int_of(gen, "num_beams", 1);
    snprintf(want, sizeof want,
             "generation:     num_beams %d (%s search), max_length %d, min_length %d", beams,
             beams > 1 ? "beam" : "greedy", int_of(gen, "max_length", 20),
             int_of(gen, "min_length", 0));
    expect_line(out, want);
    snprintf(want, sizeof want, "; eos %d, pad %d, decoder_start %d",
             int_of(gen, "eos_token_id", -1), int_of(gen, "pad_token_id", -1),
             int_of(gen, "decoder_start_token_id", -1));
    expect_line(out, want);
    cJSON_Delete(tok);
    cJSON_Delete(gen);
}

static void test_info_describes_encoder_decoder(void **state) {
    (void)state;
    REQUIRE_BIN();
    for (int m = 0; m < MODELS; m++) {
        const char *args[] = {"info", "-m", models[m], NULL};
        test_run_result run = test_run_vit(NULL, NULL, args);
        if (run.status != 0) fail_msg("vit info -m %s: %s", models[m], run.err);
        cJSON *cfg = read_json(models[m], "config.json");
        const cJSON *enc = cJSON_GetObjectItem(cfg, "encoder");
        expect_line(run.out,
                    "architecture:   VisionEncoderDecoderModel, image to text (vit generate)");
        expect_encoder(run.out, enc);
        expect_decoder(run.out, cJSON_GetObjectItem(cfg, "decoder"), int_of(enc, "hidden_size", 0));
        expect_tokenizer_generation(run.out, models[m]);
        long long all, encoder, decoder;
        const char *at = strstr(run.out, "parameters:");
        assert_non_null(at);
        assert_int_equal(
            sscanf(at, "parameters: %lld (encoder %lld, decoder %lld)", &all, &encoder, &decoder),
            3);
        assert_true(all == encoder + decoder && encoder > 0 && decoder > 0);
        assert_null(strstr(run.out, "labels:"));
        cJSON_Delete(cfg);
        test_run_free(&run);
    }
}

/* stderr is one line saying what the folder is and what to run instead; nothing on stdout. */
static void expect_refusal(const char *const *args, const char *command) {
    test_run_result run = test_run_vit(NULL, NULL, args);
    assert_int_equal(run.status, 1);
    assert_string_equal(run.out, "");
    char want[512];
    snprintf(want, sizeof want,
             "vit %s: %s is an image-to-text model (VisionEncoderDecoderModel), without labels: "
             "vit generate -m %s IMAGE... writes each image's text\n",
             command, models[0], models[0]);
    assert_string_equal(run.err, want);
    test_run_free(&run);
}

/* classify and explain need labels: each refuses a VisionEncoderDecoder folder (once they
 * classified nothing, or crashed reading a joint model's scale it does not have); eval scores such
 * a model on text-line images, and says so for a class folder. */
static void test_label_commands_refuse(void **state) {
    (void)state;
    REQUIRE_BIN();
    const char *image = GOLDEN_IMAGES "/rgb_64x48.png";
    const char *classify[] = {"classify", "-m", models[0], image, NULL};
    expect_refusal(classify, "classify");
    char out[512], folder[512];
    snprintf(out, sizeof out, "%s/explained", test_tmpdir());
    const char *explain[] = {"explain", "-m", models[0], "-o", out, image, NULL};
    expect_refusal(explain, "explain");
    snprintf(folder, sizeof folder, "%s/two-classes", test_tmpdir());
    mkdir(folder, 0700);
    const char *classes[] = {"a", "b"};
    for (int c = 0; c < 2; c++) {
        char path[600];
        snprintf(path, sizeof path, "two-classes/%s", classes[c]);
        char dir[700];
        snprintf(dir, sizeof dir, "%s/%s", test_tmpdir(), path);
        mkdir(dir, 0700);
        size_t size;
        uint8_t *png = read_whole_file(image, &size);
        strcat(path, "/x.png");
        write_temp_file(path, png, size);
        free(png);
    }
    const char *eval[] = {"eval", "-m", models[0], folder, NULL};
    test_run_result run = test_run_vit(NULL, NULL, eval);
    assert_int_equal(run.status, 2);
    char want[1536];
    snprintf(want, sizeof want,
             "vit eval: %s is an image-to-text model (VisionEncoderDecoderModel): it is evaluated "
             "on text-line images listed in DIR/labels.tsv (`file<TAB>text`, what vit render-lines "
             "writes), and %s has none\n",
             models[0], folder);
    assert_string_equal(run.err, want);
    test_run_free(&run);
}

/* A golden tensor of DIR's golden.safetensors. */
static float *golden(const char *dir, const char *image, const char *what, size_t *n) {
    char name[128];
    snprintf(name, sizeof name, "image/%s/%s", image, what);
    return test_golden_tensor(dir, name, n);
}

/* The encoder's features: the CLS row and the mean of the patch rows (after the special tokens)
 * of Hugging Face's last_hidden_state, for the goldens' pixels; and `vit embed` gives the library's
 * for the image file. */
static void test_encoder_features(void **state) {
    (void)state;
    static const char *const images[] = {"rgb_64x48.png", "tall_40x400.jpg", "palette_120x90.png"};
    for (int m = 0; m < MODELS; m++) {
        vit_error err = {0};
        vit_context *ctx = vit_load(models[m], NULL, &err);
        if (!ctx) fail_msg("%s", err.msg);
        assert_int_equal(vit_num_labels(ctx), 0);
        assert_int_equal(vit_joint_dim(ctx), 0);
        const int D = vit_hidden_size(ctx), T = vit_tokens(ctx);
        const int special = strstr(models[m], "deit") ? 2 : 1;
        float *got = test_alloc_floats((size_t)D);
        for (int i = 0; i < 3; i++) {
            size_t n;
            float *pixels = golden(models[m], images[i], "pixels", &n);
            float *states = golden(models[m], images[i], "encoder", &n);
            assert_int_equal(n, (size_t)T * D);
            assert_int_equal(vit_embed(ctx, pixels, 1, VIT_POOL_CLS, got, &err), 0);
            for (int d = 0; d < D; d++) assert_true(fabs(got[d] - states[d]) <= TOL);
            assert_int_equal(vit_embed(ctx, pixels, 1, VIT_POOL_MEAN, got, &err), 0);
            for (int d = 0; d < D; d++) {
                double mean = 0;
                for (int t = special; t < T; t++) mean += states[(size_t)t * D + d];
                assert_true(fabs(got[d] - mean / (T - special)) <= TOL);
            }
            free(pixels);
            free(states);
        }
        if (test_vit_bin()) { /* the command, on a file, against the library on its pixels */
            char path[256];
            snprintf(path, sizeof path, GOLDEN_IMAGES "/%s", images[1]);
            float *pixels = test_alloc_floats(vit_input_floats(ctx));
            assert_int_equal(vit_preprocess_file(ctx, path, pixels, &err), 0);
            assert_int_equal(vit_embed(ctx, pixels, 1, VIT_POOL_MEAN, got, &err), 0);
            const char *args[] = {"embed", "-m", models[m], "--pool", "mean",
                                  "-o",    "-",  path,      NULL};
            test_run_result run = test_run_vit(NULL, NULL, args);
            assert_int_equal(run.status, 0);
            char *p = strchr(run.out, '\t');
            assert_non_null(p);
            for (int d = 0; d < D; d++) assert_true(fabs(strtod(p + 1, &p) - got[d]) <= 1e-5);
            test_run_free(&run);
            free(pixels);
        }
        free(got);
        vit_free(ctx);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_info_describes_encoder_decoder),
        cmocka_unit_test(test_label_commands_refuse),
        cmocka_unit_test(test_encoder_features),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
