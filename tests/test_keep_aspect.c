/* NougatImageProcessor (preprocess_config.keep_aspect): every line shape through vit's
 * preprocessing against tools/keep_aspect_reference.py, which follows transformers' steps with
 * Pillow 9.4 and numpy (tests/data/keep-aspect). */
#include "tests/testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "image/image.h"
#include "vit/base/file.h"
#include "vit/base/json.h"
#include "vit/data/image_set.h"
#include "vit/io/model_dir.h"

#define KA TEST_DATA "/keep-aspect"

static const struct {
    const char *folder;
    int channels;
} cases[] = {{"lines-32x512", 3}, {"nougat-defaults", 3}, {"align-bicubic", 3}, {"grey-32x256", 1}};

static const char *images[] = {
    "one_1x1.png",      "line_300x16.png",  "line_303x45.png",  "tight_249x35.png",
    "line_2000x96.png", "line_3000x16.png", "line_5000x20.png", "short_10x16.png",
    "tall_40x400.png",  "tall_96x2000.png", "square_64x64.png", "white_200x40.png",
    "rgba_180x30.png",  "grey_220x28.png",
};

static void load(const char *folder, int channels, preprocess_config *cfg) {
    char dir[256];
    snprintf(dir, sizeof dir, KA "/%s", folder);
    vit_error err = {0};
    if (preprocess_config_read(dir, 224, channels, cfg, &err) != 0) fail_msg("%s", err.msg);
    assert_int_equal(cfg->keep_aspect, 1);
}

/* Whether the reference found transformers failing on image (failing.json: a thumbnail of 0
 * pixels, where Pillow raises). */
static int reference_fails(const char *folder, const char *image) {
    char path[256];
    snprintf(path, sizeof path, KA "/%s/failing.json", folder);
    size_t size;
    vit_error err = {0};
    char *text = vit_read_file(path, 1 << 20, &size, &err);
    if (!text) fail_msg("%s", err.msg);
    cJSON *list = cJSON_Parse(text);
    int found = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, list) found |= cJSON_IsString(e) && !strcmp(e->valuestring, image);
    cJSON_Delete(list);
    free(text);
    return found;
}

/* The 8-bit stage (rescale and normalise off) equals the reference's PNG byte for byte: the
 * crop, rotation, both resizes (the thumbnail's Pillow reduce included) and the padding. Where
 * transformers fails, vit refuses the image with one line. */
static void test_bytes_equal_reference(void **state) {
    (void)state;
    int compared = 0, refused = 0;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        preprocess_config cfg;
        load(cases[c].folder, cases[c].channels, &cfg);
        cfg.do_rescale = cfg.do_normalize = 0;
        int C, H, W;
        preprocess_output_shape(&cfg, &C, &H, &W);
        float *got = test_alloc_floats((size_t)C * H * W);
        for (size_t i = 0; i < sizeof images / sizeof images[0]; i++) {
            char src[256], want_path[256];
            snprintf(src, sizeof src, KA "/images/%s", images[i]);
            snprintf(want_path, sizeof want_path, KA "/%s/%s", cases[c].folder, images[i]);
            vit_error err = {0};
            const int rc = preprocess_file(&cfg, src, 0, 0, got, &err);
            if (reference_fails(cases[c].folder, images[i])) {
                if (rc == 0)
                    fail_msg("%s %s: transformers fails, vit did not", cases[c].folder, images[i]);
                assert_non_null(strstr(err.msg, images[i])); /* names the file */
                refused++;
                continue;
            }
            if (rc != 0) fail_msg("%s", err.msg);
            image_u8 want;
            if (image_decode_file(want_path, C, 0, 0, &want, &err) != 0) fail_msg("%s", err.msg);
            assert_int_equal(want.width, W);
            assert_int_equal(want.height, H);
            for (int ch = 0; ch < C; ch++)
                for (int y = 0; y < H; y++)
                    for (int x = 0; x < W; x++) {
                        const float g = got[((size_t)ch * H + y) * W + x];
                        const int w = want.pixels[((size_t)y * W + x) * C + ch];
                        if (g != (float)w)
                            fail_msg("%s %s: channel %d (%d, %d) is %g, Pillow's %d",
                                     cases[c].folder, images[i], ch, x, y, g, w);
                    }
            image_free(&want);
            compared++;
        }
        free(got);
    }
    print_message("  %d images equal the reference byte for byte, %d refused as transformers "
                  "fails on them\n",
                  compared, refused);
    assert_int_equal(compared, 51);
    assert_int_equal(refused, 5);
}

/* The float pixels (rescale in float64 rounded to float32, normalise in float32, as HF): within
 * 1e-6 of the reference's (0 measured); one step of a grey level is 0.0078 at std 0.5. */
static void test_float_pixels(void **state) {
    (void)state;
    static const struct {
        int c;
        const char *image;
    } goldens[] = {{0, "line_303x45.png"}, {0, "line_3000x16.png"}, {3, "line_303x45.png"}};
    for (size_t i = 0; i < sizeof goldens / sizeof goldens[0]; i++) {
        const int c = goldens[i].c;
        preprocess_config cfg;
        load(cases[c].folder, cases[c].channels, &cfg);
        char dir[256], name[256], src[256];
        snprintf(dir, sizeof dir, KA "/%s", cases[c].folder);
        snprintf(name, sizeof name, "%s/pixels", goldens[i].image);
        snprintf(src, sizeof src, KA "/images/%s", goldens[i].image);
        size_t n;
        float *want = test_golden_tensor(dir, name, &n);
        float *got = test_alloc_floats(n);
        vit_error err = {0};
        if (preprocess_file(&cfg, src, 0, 0, got, &err) != 0) fail_msg("%s", err.msg);
        double worst = 0;
        for (size_t k = 0; k < n; k++) worst = fmax(worst, fabs((double)got[k] - want[k]));
        print_message("  %s %s: worst |diff| %.3g over %zu floats\n", cases[c].folder,
                      goldens[i].image, worst, n);
        assert_true(worst <= 1e-6);
        free(want), free(got);
    }
}

/* The file vit writes for a new model (preprocess_config_json) reads back as the same transform
 * and names transformers' class; without do_pad the output has no one size: refused. */
static void test_config_round_trip_and_errors(void **state) {
    (void)state;
    preprocess_config cfg;
    load("lines-32x512", 3, &cfg);
    char dir[] = "/tmp/vit_keep_aspect_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[512];
    snprintf(path, sizeof path, "%s/preprocessor_config.json", dir);
    char *text = preprocess_config_json(&cfg);
    assert_non_null(strstr(text, "\"NougatImageProcessor\""));
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
    free(text);
    preprocess_config back;
    vit_error err = {0};
    if (preprocess_config_read(dir, 224, 3, &back, &err) != 0) fail_msg("%s", err.msg);
    assert_int_equal(back.keep_aspect, 1);
    assert_int_equal(back.resize_height, 32);
    assert_int_equal(back.resize_width, 512);
    assert_int_equal(back.do_crop_margin, 1);
    assert_int_equal(back.do_thumbnail, 1);
    assert_int_equal(back.do_pad, 1);
    assert_int_equal(back.do_align_long_axis, 0);
    assert_int_equal(back.resample, 2);
    assert_true(back.mean[0] == 0.5f && back.std[2] == 0.5f);
    /* resize_preprocess_config(keep_aspect) makes the same transform from a ViT's */
    preprocess_config made;
    if (preprocess_config_read("/nonexistent", 224, 3, &made, &err) != 0) fail_msg("%s", err.msg);
    resize_preprocess_config(&made, 32, 512, 1);
    assert_int_equal(made.keep_aspect, 1);
    assert_int_equal(made.do_crop_margin + made.do_thumbnail + made.do_pad, 3);
    assert_int_equal(made.do_align_long_axis + made.do_center_crop, 0);

    f = fopen(path, "w");
    fputs("{\"image_processor_type\": \"NougatImageProcessor\", \"do_pad\": false}", f);
    fclose(f);
    assert_int_not_equal(preprocess_config_read(dir, 224, 3, &back, &err), 0);
    assert_non_null(strstr(err.msg, "do_pad"));
    assert_non_null(strstr(err.msg, "preprocessor_config.json"));
    f = fopen(path, "w");
    fputs("{\"image_processor_type\": \"NougatImageProcessor\", \"size\": {\"shortest_edge\": 32}}",
          f);
    fclose(f);
    assert_int_not_equal(preprocess_config_read(dir, 224, 3, &back, &err), 0);
    /* an int size is a square (get_size_dict), the class's defaults elsewhere */
    f = fopen(path, "w");
    fputs("{\"image_processor_type\": \"NougatImageProcessor\", \"size\": 40}", f);
    fclose(f);
    if (preprocess_config_read(dir, 224, 3, &back, &err) != 0) fail_msg("%s", err.msg);
    assert_int_equal(back.resize_height, 40);
    assert_int_equal(back.resize_width, 40);
    assert_true(back.mean[0] == 0.485f && back.std[0] == 0.229f);
    assert_int_equal(back.resample, RESAMPLE_BILINEAR);
    /* where an input comes from depends on the pixels: geometry is refused, not guessed */
    preprocess_geometry g;
    assert_int_not_equal(preprocess_geometry_of(&back, 100, 20, &g, &err), 0);
    remove(path);
    rmdir(dir);
}

/* `vit preprocess` writes the same tensor (the model folder: a config.json and the case's file). */
static void test_cli_preprocess_equal(void **state) {
    (void)state;
    REQUIRE_BIN();
    char dir[] = "/tmp/vit_keep_aspect_cli_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[512], from[4400], cwd[4096], out[512];
    snprintf(path, sizeof path, "%s/config.json", dir);
    FILE *f = fopen(path, "w");
    fputs("{\"model_type\": \"vit\", \"image_size\": 32, \"num_channels\": 3}", f);
    fclose(f);
    assert_non_null(getcwd(cwd, sizeof cwd));
    snprintf(from, sizeof from, "%s/" KA "/lines-32x512/preprocessor_config.json", cwd);
    snprintf(path, sizeof path, "%s/preprocessor_config.json", dir);
    assert_int_equal(symlink(from, path), 0);
    snprintf(out, sizeof out, "%s/out.safetensors", dir);
    const char *args[] = {"preprocess", "-m", dir, KA "/images/line_3000x16.png", "-o", out, NULL};
    test_run_result r = test_run_vit(NULL, NULL, args);
    if (r.status != 0) fail_msg("vit preprocess: %s", r.err);
    assert_non_null(strstr(r.out, "[3, 32, 512]"));
    test_run_free(&r);
    size_t n, m;
    float *got = test_read_tensor(out, "pixels", &n);
    float *want = test_golden_tensor(KA "/lines-32x512", "line_3000x16.png/pixels", &m);
    assert_non_null(got);
    assert_int_equal(n, m);
    for (size_t k = 0; k < n; k++) assert_true(fabsf(got[k] - want[k]) <= 1e-6f);
    free(got), free(want);
    remove(out), remove(path);
    snprintf(path, sizeof path, "%s/config.json", dir);
    remove(path);
    rmdir(dir);
}

/* image_resize_reducing on a hand-computed case: 8 -> 2 pixels with reducing_gap 2 reduces by 2
 * (block means, rounded half up: (a + b + 1) / 2), then bicubic 4 -> 2 from the reduced image. */
static void test_reduce_hand_computed(void **state) {
    (void)state;
    uint8_t px[8] = {10, 11, 20, 20, 200, 201, 0, 3};
    image_u8 src = {8, 1, 1, px}, dst;
    vit_error err = {0};
    /* height 1 -> 1: only x reduces: int(8 / 2 / 2) = 2 */
    assert_int_equal(image_resize_reducing(&src, 2, 1, RESAMPLE_BOX, 2.0, &dst, &err), 0);
    /* reduced: 11 (10.5 up), 20, 201 (200.5 up), 2 (1.5 up); box 4 -> 2: means of pairs */
    assert_int_equal(dst.pixels[0], (11 + 20 + 1) / 2);
    assert_int_equal(dst.pixels[1], (201 + 2 + 1) / 2);
    image_free(&dst);
}

/* Training lines held once per grey image (image_set_load_lines): a grey line takes H·W bytes,
 * a coloured one keeps its channels, and the batches are the floats the full-colour set gives. */
static void test_lines_held_grey(void **state) {
    (void)state;
    preprocess_config cfg;
    load("lines-32x512", 3, &cfg);
    char *paths[3] = {KA "/images/line_303x45.png", KA "/images/rgba_180x30.png",
                      KA "/images/tall_40x400.png"};
    const int labels[3] = {0, 1, 2}, idx[4] = {2, 0, 1, 0};
    image_set full, lines;
    vit_error err = {0};
    if (image_set_load(&full, &cfg, paths, labels, 3, NULL, NULL, &err) != 0 ||
        image_set_load_lines(&lines, &cfg, paths, labels, 3, NULL, NULL, &err) != 0)
        fail_msg("%s", err.msg);
    assert_int_equal(lines.grey, 1);
    /* these lines' strokes are tinted (green above red and blue): held in colour, each checked
     * against the full set's own bytes; the grey ones come below */
    const size_t plane = (size_t)32 * 512;
    for (int i = 0; i < 3; i++) {
        const uint8_t *p = full.pixels + (size_t)i * 3 * plane;
        const int grey = !memcmp(p, p + plane, plane) && !memcmp(p, p + 2 * plane, plane);
        assert_int_equal(lines.colour[i] == NULL, grey);
        assert_false(grey);
        if (grey) assert_memory_equal(lines.pixels + i * plane, p, plane);
    }
    float lut[3 * 256];
    if (pixel_lut(&cfg, lut, &err) != 0) fail_msg("%s", err.msg);
    float *a = test_alloc_floats(4 * 3 * plane), *b = test_alloc_floats(4 * 3 * plane);
    image_set_batch(&full, idx, 4, lut, NULL, 0, a);
    image_set_batch(&lines, idx, 4, lut, NULL, 0, b);
    assert_memory_equal(a, b, sizeof(float) * 4 * 3 * plane);
    free(a), free(b);
    image_set_free(&full), image_set_free(&lines);
    /* a grey image in an RGB model: the white line and a grey PNG are held as one plane */
    char *grey_paths[2] = {KA "/images/white_200x40.png", KA "/images/grey_220x28.png"};
    if (image_set_load_lines(&lines, &cfg, grey_paths, labels, 2, NULL, NULL, &err) != 0)
        fail_msg("%s", err.msg);
    assert_null(lines.colour[0]), assert_null(lines.colour[1]);
    image_set_free(&lines);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bytes_equal_reference),
        cmocka_unit_test(test_float_pixels),
        cmocka_unit_test(test_config_round_trip_and_errors),
        cmocka_unit_test(test_cli_preprocess_equal),
        cmocka_unit_test(test_reduce_hand_computed),
        cmocka_unit_test(test_lines_held_grey),
    };
    return cmocka_run_group_tests_name("keep_aspect", tests, NULL, NULL);
}
