/* `vit train` on images with their texts (a folder with labels.tsv) from a VisionEncoderDecoder
 * folder: the three micro models (tests/data/ved-*) learn six rendered lines by heart (the loss
 * falls forty-fold and more), and the folder they are saved to is a Hugging Face one that
 * generation reads back: the same files, tensor names, shapes and dtypes as the model it started
 * from, config.json byte for byte, and greedy generation on each image gives its text. A run of
 * almost no learning rate leaves every tensor where it was (GPT-2's Conv1D weights written back
 * transposed); a run stopped and resumed equals one run through; --freeze-encoder leaves the
 * encoder alone; a new decoder over a ViT classifier's encoder (--tokenizer) is initialised as
 * transformers does, learns the lines too and is saved as a VisionEncoderDecoder folder; bad data
 * and folders are refused with a message naming them. */
#include "tests/testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "image/draw.h"
#include "vit/io/model_dir.h"
#include "vit/model/config.h"
#include "vit/io/safetensors.h"
#include "vit/train/run.h"
#include "vit/vit.h"

#define LINES 6

static const char *const texts[LINES] = {"the cat sat",      "a red dog",        "the mat",
                                         "a cat in the mat", "dog sat on a mat", "red of the dog"};

/* A folder of LINES 64x64 pictures, each its text in the 5x7 font (a word per line) in its own
 * colour over a pale tint of it, with their labels.tsv. */
static const char *make_lines(void) {
    static char dir[4096];
    if (dir[0]) return dir;
    snprintf(dir, sizeof dir, "%s/lines", test_tmpdir());
    assert_int_equal(mkdir(dir, 0777), 0);
    static const uint8_t colours[LINES][3] = {{200, 20, 20}, {20, 150, 30},  {30, 40, 200},
                                              {160, 120, 0}, {150, 20, 160}, {0, 130, 140}};
    char tsv[4096 * 2] = "", path[4200];
    for (int i = 0; i < LINES; i++) {
        image_u8 img = {.width = 64, .height = 64, .channels = 3, .pixels = malloc(64 * 64 * 3)};
        for (int p = 0; p < 64 * 64 * 3; p++) img.pixels[p] = 255 - (255 - colours[i][p % 3]) / 3;
        char words[64];
        snprintf(words, sizeof words, "%s", texts[i]);
        int y = 4;
        for (char *w = strtok(words, " "); w; w = strtok(NULL, " "), y += 10)
            draw_text(&img, 4 + 3 * i, y, 1, w, colours[i]);
        snprintf(path, sizeof path, "%s/line%d.png", dir, i);
        vit_error err = {0};
        if (image_write_png(path, &img, &err) != 0) fail_msg("%s", err.msg);
        image_free(&img);
        snprintf(tsv + strlen(tsv), sizeof tsv - strlen(tsv), "line%d.png\t%s\n", i, texts[i]);
    }
    snprintf(path, sizeof path, "%s/labels.tsv", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(tsv, f);
    assert_int_equal(fclose(f), 0);
    return dir;
}

/* The lines of make_lines at mixed sizes: line i at scale 1 + i % 2 on a canvas of its own
 * (40 + 23 i) x (36 + 11 i), the text at an offset growing with i: tight and loose crops. */
static const char *make_mixed_lines(void) {
    static char dir[4096];
    if (dir[0]) return dir;
    snprintf(dir, sizeof dir, "%s/mixed-lines", test_tmpdir());
    assert_int_equal(mkdir(dir, 0777), 0);
    char tsv[4096 * 2] = "", path[4200];
    for (int i = 0; i < LINES; i++) {
        const int scale = 1 + i % 2, w = 40 + 23 * i + 40 * (scale - 1),
                  h = 36 + 11 * i + 40 * (scale - 1);
        image_u8 img = {
            .width = w, .height = h, .channels = 3, .pixels = malloc((size_t)w * h * 3)};
        memset(img.pixels, 250, (size_t)w * h * 3);
        char words[64];
        snprintf(words, sizeof words, "%s", texts[i]);
        int y = 1 + 2 * i;
        static const uint8_t ink[3] = {20, 20, 30};
        for (char *t = strtok(words, " "); t; t = strtok(NULL, " "), y += 10 * scale)
            draw_text(&img, 1 + 3 * i, y, scale, t, ink);
        snprintf(path, sizeof path, "%s/line%d.png", dir, i);
        vit_error err = {0};
        if (image_write_png(path, &img, &err) != 0) fail_msg("%s", err.msg);
        image_free(&img);
        snprintf(tsv + strlen(tsv), sizeof tsv - strlen(tsv), "line%d.png\t%s\n", i, texts[i]);
    }
    snprintf(path, sizeof path, "%s/labels.tsv", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(tsv, f);
    assert_int_equal(fclose(f), 0);
    return dir;
}

static train_options tiny_run(const char *model, const char *out) {
    train_options o = train_default_options();
    o.train_path = make_lines();
    o.init_dir = model;
    o.out_dir = out;
    o.val_split = 0;
    o.epochs = 100, o.batch = LINES;
    o.lr = 3e-3f, o.warmup_epochs = 2;
    o.label_smoothing = 0;
    o.seed = 5;
    o.threads = 1;
    return o;
}

static void out_dir(char *buf, size_t size, const char *name) {
    snprintf(buf, size, "%s/%s", test_tmpdir(), name);
}

/* The value of "key" in line `line` (1-based; 0: the last) of train_log.jsonl. */
static double logged(const char *dir, const char *key, int line) {
    char path[4300], pattern[64];
    snprintf(path, sizeof path, "%s/%s", dir, TRAIN_LOG_FILE);
    char *log = (char *)read_whole_file(path, NULL), *at = NULL;
    assert_non_null(log);
    snprintf(pattern, sizeof pattern, "\"%s\": ", key);
    int k = 0;
    for (char *p = strstr(log, pattern); p; p = strstr(p + 1, pattern))
        if (++k == line || line == 0) at = p;
    assert_non_null(at);
    const double v = atof(at + strlen(pattern));
    free(log);
    return v;
}

/* Every tensor of a's model.safetensors is in b's, of the same dtype and shape, and the other way
 * round. */
static void expect_same_layout(const char *a, const char *b) {
    char pa[4300], pb[4300];
    snprintf(pa, sizeof pa, "%s/model.safetensors", a);
    snprintf(pb, sizeof pb, "%s/model.safetensors", b);
    st_file fa, fb;
    vit_error err = {0};
    if (st_open(pa, &fa, &err) != 0 || st_open(pb, &fb, &err) != 0) fail_msg("%s", err.msg);
    assert_int_equal(fa.count, fb.count);
    for (int i = 0; i < fa.count; i++) {
        const st_tensor *x = &fa.tensors[i], *y = st_find(&fb, x->name);
        if (!y) fail_msg("%s: no tensor %s", pb, x->name);
        assert_int_equal(x->dtype, y->dtype);
        assert_int_equal(x->ndim, y->ndim);
        assert_memory_equal(x->shape, y->shape, sizeof(int64_t) * (size_t)x->ndim);
    }
    st_close(&fa), st_close(&fb);
}

static void expect_same_file(const char *a, const char *b, const char *name) {
    char pa[4300], pb[4300];
    snprintf(pa, sizeof pa, "%s/%s", a, name);
    snprintf(pb, sizeof pb, "%s/%s", b, name);
    size_t na, nb;
    uint8_t *x = read_whole_file(pa, &na), *y = read_whole_file(pb, &nb);
    if (!x || !y) fail_msg("%s or %s missing", pa, pb);
    assert_int_equal(na, nb);
    assert_memory_equal(x, y, na);
    free(x), free(y);
}

/* Greedy generation on every training image gives its text. */
static void expect_texts(const char *model) {
    vit_error err = {0};
    vit_gen_context *g = vit_gen_load(model, NULL, &err);
    if (!g) fail_msg("%s", err.msg);
    for (int i = 0; i < LINES; i++) {
        char path[4300];
        snprintf(path, sizeof path, "%s/line%d.png", make_lines(), i);
        vit_generation out;
        if (vit_generate_file(g, path, NULL, &out, &err) != 0) fail_msg("%s", err.msg);
        print_message("    line%d.png: \"%s\"\n", i, out.text);
        assert_string_equal(out.text, texts[i]);
        vit_generation_free(&out, 1);
    }
    vit_gen_free(g);
}

static void learns(const char *model, const char *name) {
    char dir[4200];
    out_dir(dir, sizeof dir, name);
    train_options o = tiny_run(model, dir);
    o.val_path = o.train_path; /* read back after every epoch: the error rates */
    vit_error err = {0};
    if (train_run(&o, 0, NULL, &err) != 0) fail_msg("%s", err.msg);
    const double first = logged(dir, "train_loss", 1), last = logged(dir, "train_loss", 0);
    print_message("  %s: loss %.4f -> %.4f, token accuracy %.3f, CER %.3f -> %.3f\n", model, first,
                  last, logged(dir, "train_top1", 0), logged(dir, "val_cer", 1),
                  logged(dir, "val_cer", 0));
    assert_true(last < first / 40);
    /* expect_texts below reads every line right: so must the last validation; the first cannot */
    assert_true(logged(dir, "val_cer", 0) == 0 && logged(dir, "val_wer", 0) == 0);
    assert_true(logged(dir, "val_cer", 1) > 0.3);
    static const char *const files[] = {
        "config.json", "generation_config.json", "preprocessor_config.json", "vocab.json",
        "merges.txt",  "tokenizer_config.json",  "special_tokens_map.json"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
        expect_same_file(model, dir, files[i]);
    expect_same_layout(model, dir);
    expect_texts(dir);
}

static void test_learns_trocr(void **state) {
    (void)state;
    learns(TEST_DATA "/ved-trocr-vit", "trocr");
}
static void test_learns_trocr_sinusoidal_deit(void **state) {
    (void)state;
    learns(TEST_DATA "/ved-trocr-sin-deit", "trocr-sin");
}
static void test_learns_gpt2(void **state) {
    (void)state;
    learns(TEST_DATA "/ved-gpt2-vit", "gpt2");
}

/* One step of a learning rate too small to move a float32 weight: every tensor of the saved file
 * is the one it came from (a Conv1D weight saved untransposed, or a pooler dropped, would show). */
static void saved_as_loaded(const char *model, const char *same_as, const char *tag) {
    char dir[4200], pa[4300], pb[4300];
    out_dir(dir, sizeof dir, tag);
    train_options o = tiny_run(model, dir);
    o.epochs = 1, o.lr = 1e-11f, o.min_lr = 0, o.weight_decay = 0;
    vit_error err = {0};
    if (train_run(&o, 0, NULL, &err) != 0) fail_msg("%s", err.msg);
    snprintf(pa, sizeof pa, "%s/model.safetensors", same_as);
    snprintf(pb, sizeof pb, "%s/model.safetensors", dir);
    st_file fa, fb;
    if (st_open(pa, &fa, &err) != 0 || st_open(pb, &fb, &err) != 0) fail_msg("%s", err.msg);
    double worst = 0;
    for (int i = 0; i < fa.count; i++) {
        const st_tensor *x = &fa.tensors[i], *y = st_find(&fb, x->name);
        assert_non_null(y);
        assert_int_equal(x->numel, y->numel);
        const float *u = x->data, *v = y->data;
        for (int64_t k = 0; k < x->numel; k++) worst = fmax(worst, fabs((double)u[k] - v[k]));
    }
    st_close(&fa), st_close(&fb);
    print_message("  largest change of a weight: %.3g\n", worst);
    assert_true(worst < 1e-6);
}

static void test_saved_as_loaded(void **state) {
    (void)state;
    saved_as_loaded(TEST_DATA "/ved-gpt2-vit", TEST_DATA "/ved-gpt2-vit", "gpt2-still");
}

/* The same from ved-trocr-vit's tensors in a pytorch_model.bin (tools/torch_bin_fixtures.py):
 * its encoder's pooler, which the model does not hold, is in the saved model.safetensors too. */
static void test_saved_as_loaded_from_bin(void **state) {
    (void)state;
    saved_as_loaded(TEST_DATA "/torch-bin/ved-trocr-zip", TEST_DATA "/ved-trocr-vit",
                    "trocr-bin-still");
}

static void expect_same_weights(const char *a, const char *b) {
    char pa[4300], pb[4300];
    snprintf(pa, sizeof pa, "%s/model.safetensors", a);
    snprintf(pb, sizeof pb, "%s/model.safetensors", b);
    size_t na, nb;
    uint8_t *x = read_whole_file(pa, &na), *y = read_whole_file(pb, &nb);
    assert_non_null(x), assert_non_null(y);
    assert_int_equal(na, nb);
    assert_memory_equal(x, y, na);
    free(x), free(y);
    assert_true(logged(a, "train_loss", 0) == logged(b, "train_loss", 0));
}

/* Dropout on (every generator stream in use), stopped at step 13 of 20, resumed: the same bytes as
 * the run through. */
static void test_resume(void **state) {
    (void)state;
    char whole[4200], split[4200];
    out_dir(whole, sizeof whole, "resume-whole");
    out_dir(split, sizeof split, "resume-split");
    const char *model = TEST_DATA "/ved-trocr-vit";
    train_options o = tiny_run(model, whole);
    o.epochs = 20, o.dropout = 0.1f;
    vit_error err = {0};
    if (train_run(&o, 0, NULL, &err) != 0) fail_msg("%s", err.msg);
    o.out_dir = split;
    const train_hooks stop = {.stop_at_step = 13};
    assert_int_equal(train_run(&o, 0, &stop, &err), 1);
    const train_options r = {.out_dir = split, .threads = 1};
    if (train_run(&r, 1, NULL, &err) != 0) fail_msg("%s", err.msg);
    expect_same_weights(whole, split);
}

/* --freeze-encoder: the encoder's tensors stay as they were, the decoder's move. */
static void test_freeze_encoder(void **state) {
    (void)state;
    char dir[4200], pa[4300], pb[4300];
    out_dir(dir, sizeof dir, "frozen");
    const char *model = TEST_DATA "/ved-trocr-vit";
    train_options o = tiny_run(model, dir);
    o.epochs = 3, o.freeze_encoder = 1;
    vit_error err = {0};
    if (train_run(&o, 0, NULL, &err) != 0) fail_msg("%s", err.msg);
    snprintf(pa, sizeof pa, "%s/model.safetensors", model);
    snprintf(pb, sizeof pb, "%s/model.safetensors", dir);
    st_file fa, fb;
    if (st_open(pa, &fa, &err) != 0 || st_open(pb, &fb, &err) != 0) fail_msg("%s", err.msg);
    int moved = 0;
    for (int i = 0; i < fa.count; i++) {
        const st_tensor *x = &fa.tensors[i], *y = st_find(&fb, x->name);
        const int same = memcmp(x->data, y->data, x->nbytes) == 0;
        if (!strncmp(x->name, "encoder.", 8) && !same) fail_msg("%s changed", x->name);
        moved += strncmp(x->name, "encoder.", 8) != 0 && !same;
    }
    st_close(&fa), st_close(&fb);
    assert_true(moved > 10);
}

/* A new decoder over a ViT classifier's encoder (micro-a), for the micro TrOCR's tokenizer. */
static train_options new_decoder_run(const char *out) {
    train_options o = tiny_run(MICRO_A, out);
    o.tokenizer_dir = TEST_DATA "/ved-trocr-vit";
    o.dec_layers = 2, o.dec_hidden = 32, o.dec_heads = 2, o.dec_mlp = 64;
    o.max_len = 24;
    o.epochs = 150, o.lr = 1e-2f, o.warmup_epochs = 5;
    return o;
}

/* It learns the lines, and its folder is a VisionEncoderDecoder one: a TrOCR decoder of the shape
 * asked for, reading the encoder's width through cross_attention_hidden_size, tied, with the
 * tokenizer's ids; the tokenizer and the image model's preprocessing beside it. */
static void test_new_decoder(void **state) {
    (void)state;
    char dir[4200];
    out_dir(dir, sizeof dir, "new-decoder");
    train_options o = new_decoder_run(dir);
    vit_error err = {0};
    if (train_run(&o, 0, NULL, &err) != 0) fail_msg("%s", err.msg);
    print_message("  loss %.4f -> %.4f\n", logged(dir, "train_loss", 1),
                  logged(dir, "train_loss", 0));
    model_config c;
    if (model_config_load_tower(dir, TOWER_TEXT, &c, &err) != 0) fail_msg("%s", err.msg);
    assert_int_equal(c.kind, MODEL_DECODER);
    assert_int_equal(c.dec_arch, DECODER_TROCR);
    assert_int_equal(c.num_layers, 2), assert_int_equal(c.hidden_size, 32);
    assert_int_equal(c.num_heads, 2), assert_int_equal(c.intermediate_size, 64);
    assert_int_equal(c.cross_dim, 48), assert_int_equal(c.max_position_embeddings, 24);
    assert_int_equal(c.vocab_size, 300), assert_true(c.opt.tied_head && !c.opt.enc_proj);
    assert_int_equal(c.start_token_id, 2), assert_int_equal(c.shift_pad_id, 1);
    model_config_free(&c);
    expect_same_file(MICRO_A, dir, "preprocessor_config.json");
    expect_same_file(TEST_DATA "/ved-trocr-vit", dir, "vocab.json");
    expect_same_file(TEST_DATA "/ved-trocr-vit", dir, "merges.txt");
    expect_texts(dir);
}

/* Before any learning: the encoder's tensors are micro-a's (under "encoder." for "vit."), the
 * decoder is initialised as transformers' TrOCR: weights normal(0, 0.02), the padding token's
 * row, every bias and LayerNorm bias 0, LayerNorm weights 1. */
static void test_new_decoder_init(void **state) {
    (void)state;
    char dir[4200], path[4300], name[300];
    out_dir(dir, sizeof dir, "new-decoder-init");
    train_options o = new_decoder_run(dir);
    o.epochs = 1, o.lr = 1e-11f, o.min_lr = 0, o.weight_decay = 0;
    vit_error err = {0};
    if (train_run(&o, 0, NULL, &err) != 0) fail_msg("%s", err.msg);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    st_file f, a;
    if (st_open(path, &f, &err) != 0 || st_open(MICRO_A "/model.safetensors", &a, &err) != 0)
        fail_msg("%s", err.msg);
    for (int i = 0; i < f.count; i++) {
        const st_tensor *t = &f.tensors[i];
        const float *v = t->data;
        if (!strncmp(t->name, "encoder.", 8)) {
            snprintf(name, sizeof name, "vit.%s", t->name + 8);
            const st_tensor *s = st_find(&a, name);
            if (!s) fail_msg("micro-a has no %s", name);
            for (int64_t k = 0; k < t->numel; k++)
                assert_true(fabsf(v[k] - ((const float *)s->data)[k]) < 1e-6f);
            continue;
        }
        const int norm = strstr(t->name, "layer_norm") || strstr(t->name, "layernorm");
        const int bias = strstr(t->name, ".bias") != NULL;
        double sum = 0, sq = 0;
        for (int64_t k = 0; k < t->numel; k++) sum += v[k], sq += (double)v[k] * v[k];
        const double mean = sum / t->numel, std = sqrt(sq / t->numel - mean * mean);
        if (bias || norm)
            assert_true(fabs(mean - (norm && !bias ? 1.0 : 0.0)) < 1e-6 && std < 1e-6);
        else if (t->numel >= 1000 && !(std > 0.018 && std < 0.022))
            fail_msg("%s: std %.4f, expected 0.02", t->name, std);
    }
    const st_tensor *emb = st_find(&f, "decoder.model.decoder.embed_tokens.weight");
    assert_non_null(emb);
    for (int k = 0; k < 32; k++) /* row 1, <pad>: zero, but for one step of 1e-11 */
        assert_true(fabsf(((const float *)emb->data)[32 + k]) < 1e-9f);
    st_close(&f), st_close(&a);
}

static void expect_refused(train_options o, const char *what);

/* --input-height 16 --input-width 48 over micro-a (a 32x32 ViT): config.json says image_size
 * [16, 48], the encoder's positions are micro-a's 4x4 grid resized to 2x6 as transformers'
 * interpolate_pos_encoding resizes them (tools/wide_reference.py's, by F.interpolate), the
 * preprocessing resizes to 16x48 with micro-a's normalisation, and training reads the images at
 * that size too (not micro-a's 32x32): it learns the lines by heart and reads them back. */
static void test_new_decoder_wide(void **state) {
    (void)state;
    char dir[4200], path[4300];
    out_dir(dir, sizeof dir, "new-decoder-wide");
    train_options o = new_decoder_run(dir);
    o.enc_height = 16, o.enc_width = 48;
    vit_error err = {0};
    if (train_run(&o, 0, NULL, &err) != 0) fail_msg("%s", err.msg);
    const double first = logged(dir, "train_loss", 1), last = logged(dir, "train_loss", 0);
    print_message("  16x48: loss %.4f -> %.4f\n", first, last);
    assert_true(last < first / 40);
    expect_texts(dir); /* it reads the lines squeezed to 16x48: their pixels reach the encoder */
    model_config c;
    if (model_config_load_tower(dir, TOWER_IMAGE, &c, &err) != 0) fail_msg("%s", err.msg);
    assert_int_equal(c.image_size, 16), assert_int_equal(c.image_width, 48);
    model_config_free(&c);
    preprocess_config pp;
    if (model_dir_load_preprocess(dir, &pp, &err) != 0) fail_msg("%s", err.msg);
    int pc, ph, pw;
    preprocess_output_shape(&pp, &pc, &ph, &pw);
    assert_int_equal(ph, 16), assert_int_equal(pw, 48), assert_false(pp.do_center_crop);
    assert_true(pp.mean[0] == 0.5f && pp.std[2] == 0.5f);
    /* the positions at the start (one step of nothing) */
    out_dir(dir, sizeof dir, "new-decoder-wide-init");
    o = new_decoder_run(dir);
    o.enc_height = 16, o.enc_width = 48;
    o.epochs = 1, o.lr = 1e-11f, o.min_lr = 0, o.weight_decay = 0;
    if (train_run(&o, 0, NULL, &err) != 0) fail_msg("%s", err.msg);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    size_t n, m;
    float *got = test_read_tensor(path, "encoder.embeddings.position_embeddings", &n);
    float *want = test_golden_tensor(TEST_DATA "/vit-wide-micro", "positions", &m);
    assert_non_null(got);
    assert_int_equal(n, m), assert_int_equal(n, (1 + 2 * 6) * 48);
    double worst = 0;
    for (size_t k = 0; k < n; k++) worst = fmax(worst, fabs((double)got[k] - want[k]));
    print_message("  positions resized to 2x6: max |d| %.3g from F.interpolate's\n", worst);
    assert_true(worst < 1e-6);
    free(got), free(want);
    o.enc_width = 0;
    expect_refused(o, "--input-height and --input-width go together");
    /* a folder whose preprocessing does not make the encoder's size: refused, not misread */
    char copy[4300], from[4300];
    snprintf(copy, sizeof copy, "%s/preprocessor_config.json", dir);
    snprintf(from, sizeof from, "%s/preprocessor_config.json", MICRO_A);
    size_t n32;
    uint8_t *square = read_whole_file(from, &n32);
    FILE *f = fopen(copy, "w");
    assert_non_null(square), assert_non_null(f);
    fwrite(square, 1, n32, f);
    fclose(f), free(square);
    char again[4200];
    out_dir(again, sizeof again, "new-decoder-wide-again");
    o = tiny_run(dir, again);
    expect_refused(o, "the preprocessing makes 32x32 images; the encoder takes 48x16");
}

static void expect_refused(train_options o, const char *what) {
    o.overwrite = 1; /* refused for its own reason, though the folder holds an earlier model */
    vit_error err = {0};
    assert_int_equal(train_run(&o, 0, NULL, &err), -1);
    print_message("  %s\n", err.msg);
    if (!strstr(err.msg, what)) fail_msg("'%s' does not say '%s'", err.msg, what);
}

/* --keep-aspect: the new model's preprocessor_config.json is NougatImageProcessor's at the input
 * size (transformers reads the same transform from it), the training lines of six sizes and
 * scales are read at their own size and fitted (no canvas assumed), and the model reads them all
 * back. With --init of an image-to-text folder, or without an input size, it is refused. */
static void test_new_decoder_keep_aspect(void **state) {
    (void)state;
    char dir[4200];
    out_dir(dir, sizeof dir, "new-decoder-keep-aspect");
    train_options o = new_decoder_run(dir);
    o.train_path = make_mixed_lines();
    o.enc_height = 32, o.enc_width = 32;
    o.keep_aspect = 1;
    vit_error err = {0};
    if (train_run(&o, 0, NULL, &err) != 0) fail_msg("%s", err.msg);
    const double first = logged(dir, "train_loss", 1), last = logged(dir, "train_loss", 0);
    print_message("  keep aspect: loss %.4f -> %.4f\n", first, last);
    assert_true(last < first / 40);
    preprocess_config pp;
    if (model_dir_load_preprocess(dir, &pp, &err) != 0) fail_msg("%s", err.msg);
    assert_int_equal(pp.keep_aspect, 1);
    assert_int_equal(pp.do_crop_margin + pp.do_thumbnail + pp.do_pad, 3);
    assert_int_equal(pp.resize_height, 32), assert_int_equal(pp.resize_width, 32);
    char path[4300];
    snprintf(path, sizeof path, "%s/preprocessor_config.json", dir);
    size_t n;
    char *text = (char *)read_whole_file(path, &n);
    assert_non_null(strstr(text, "\"NougatImageProcessor\""));
    free(text);
    vit_gen_context *g = vit_gen_load(dir, NULL, &err);
    if (!g) fail_msg("%s", err.msg);
    for (int i = 0; i < LINES; i++) {
        snprintf(path, sizeof path, "%s/line%d.png", make_mixed_lines(), i);
        vit_generation out;
        if (vit_generate_file(g, path, NULL, &out, &err) != 0) fail_msg("%s", err.msg);
        print_message("    line%d.png: \"%s\"\n", i, out.text);
        assert_string_equal(out.text, texts[i]);
        vit_generation_free(&out, 1);
    }
    vit_gen_free(g);
    o.enc_height = o.enc_width = 0;
    expect_refused(o, "--keep-aspect needs --input-height and --input-width");
    o = tiny_run(TEST_DATA "/ved-trocr-vit", dir);
    o.keep_aspect = 1;
    expect_refused(o, "preprocessor_config.json says what is done to a line");
}

static void test_errors(void **state) {
    (void)state;
    char dir[4200], bad[4200];
    out_dir(dir, sizeof dir, "refused");
    train_options o = tiny_run(TEST_DATA "/ved-trocr-vit", dir);
    o.init_dir = NULL;
    expect_refused(o, "(--init)");
    o = tiny_run(MICRO_A, dir);
    expect_refused(o, "needs --tokenizer DIR");
    o = tiny_run(TEST_DATA "/ved-trocr-vit", dir);
    o.tokenizer_dir = TEST_DATA "/ved-gpt2-vit";
    expect_refused(o, "--tokenizer is for a new decoder");
    o = new_decoder_run(dir);
    o.dec_heads = 3;
    expect_refused(o, "not divisible by --decoder-heads 3");
    o = tiny_run(TEST_DATA "/ved-trocr-vit", dir);
    o.attention_dropout = 0.1f;
    expect_refused(o, "--attention-dropout");
    o = tiny_run(TEST_DATA "/ved-trocr-vit", dir);
    o.mix.cutmix_alpha = 1.0f;
    expect_refused(o, "--mixup and --cutmix are for image classifiers");
    o = tiny_run(TEST_DATA "/ved-trocr-vit", dir);
    o.layer_decay = 0.8f;
    expect_refused(o, "--layer-decay is for classifiers");
    o = tiny_run(TEST_DATA "/ved-trocr-vit", dir);
    o.max_len = 33;
    expect_refused(o, "more than the decoder's 32 positions");
    out_dir(bad, sizeof bad, "bad-lines");
    assert_int_equal(mkdir(bad, 0777), 0);
    char path[4300];
    snprintf(path, sizeof path, "%s/labels.tsv", bad);
    FILE *f = fopen(path, "w");
    fputs("missing.png\tthe cat\n", f);
    fclose(f);
    o = tiny_run(TEST_DATA "/ved-trocr-vit", dir);
    o.train_path = bad;
    expect_refused(o, "labels.tsv:1: ");
    f = fopen(path, "w");
    fputs("no tab here\n", f);
    fclose(f);
    expect_refused(o, "labels.tsv:1: no tab");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_learns_trocr),
        cmocka_unit_test(test_learns_trocr_sinusoidal_deit),
        cmocka_unit_test(test_learns_gpt2),
        cmocka_unit_test(test_saved_as_loaded),
        cmocka_unit_test(test_saved_as_loaded_from_bin),
        cmocka_unit_test(test_resume),
        cmocka_unit_test(test_freeze_encoder),
        cmocka_unit_test(test_new_decoder),
        cmocka_unit_test(test_new_decoder_init),
        cmocka_unit_test(test_new_decoder_wide),
        cmocka_unit_test(test_new_decoder_keep_aspect),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests_name("ved_train_run", tests, NULL, NULL);
}
