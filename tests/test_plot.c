/* The line charts of image/plot.h against hand-computed expectations: the 1-2-5 ticks of chosen
 * ranges and their labels, a point's pixel worked out from the documented margins (its colour
 * there, the background and the grid where nothing is drawn), a series without data left out, a
 * panel without data, errors, and a PNG round trip; then the training curves of vit/train/curves.h
 * drawn from log lines, their points where computed. */
#include "tests/testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "image/draw.h"
#include "image/image.h"
#include "image/plot.h"
#include "vit/train/curves.h"

/* ---- ticks ---- */

static void expect_axis(double lo, double hi, int max_ticks, int integer, double first, double step,
                        int ticks) {
    const plot_axis a = plot_nice_axis(lo, hi, max_ticks, integer);
    print_message("  [%g, %g] at most %d%s: first %g step %g, %d ticks\n", lo, hi, max_ticks,
                  integer ? " (integers)" : "", a.first, a.step, a.ticks);
    if (fabs(a.first - first) > 1e-12 || fabs(a.step - step) > 1e-15)
        fail_msg("expected first %g step %g", first, step);
    assert_int_equal(a.ticks, ticks);
}

/* Each case worked out by hand: the smallest 1-2-5 step of at least (hi - lo) / max_ticks, one
 * step further when that puts more than max_ticks multiples inside. */
static void test_nice_ticks(void **state) {
    (void)state;
    expect_axis(0, 1, 6, 0, 0, 0.2, 6);                 /* 1/6 -> 0.2: 0, 0.2, ..., 1 */
    expect_axis(0.37, 2.9, 6, 0, 0.5, 0.5, 5);          /* 0.42 -> 0.5: 0.5 .. 2.5 */
    expect_axis(0, 10, 5, 0, 0, 5, 3);                  /* 2 puts 6 ticks inside: 5 */
    expect_axis(-3, 47, 5, 0, 0, 10, 5);                /* 10: 0 .. 40 */
    expect_axis(0.0012, 0.0047, 5, 0, 0.002, 0.001, 3); /* 0.0007 -> 0.001 */
    expect_axis(-0.9, -0.1, 4, 0, -0.8, 0.2, 4);        /* 0.2: -0.8 .. -0.2 */
    expect_axis(0.95, 1.05, 5, 1, 1, 1, 1);             /* one epoch: 0.02 -> 1 (integers) */
    expect_axis(0.5, 20.5, 4, 1, 5, 5, 4);              /* 5: 5 .. 20 */
}

static void expect_labels(double lo, double hi, int max_ticks, const char *const *labels, int n) {
    const plot_axis a = plot_nice_axis(lo, hi, max_ticks, 0);
    assert_int_equal(a.ticks, n);
    for (int i = 0; i < n; i++) {
        char buf[32];
        plot_tick_label(&a, i, buf, sizeof buf);
        assert_string_equal(buf, labels[i]);
    }
}

static void test_tick_labels(void **state) {
    (void)state;
    const char *tenths[] = {"0.0", "0.2", "0.4", "0.6", "0.8", "1.0"};
    expect_labels(0, 1, 6, tenths, 6);
    const char *tens[] = {"0", "10", "20", "30", "40"};
    expect_labels(-3, 47, 5, tens, 5);
    const char *thousandths[] = {"0.002", "0.003", "0.004"};
    expect_labels(0.0012, 0.0047, 5, thousandths, 3);
    const char *negative[] = {"-0.4", "-0.2", "0.0", "0.2"}; /* 0, not -0.0 */
    expect_labels(-0.5, 0.3, 4, negative, 4);
}

/* ---- pixels ---- */

static const uint8_t red[3] = {200, 20, 20}, blue[3] = {20, 60, 220};

static const uint8_t *pixel(const image_u8 *img, int x, int y) {
    return img->pixels + ((size_t)y * img->width + x) * 3;
}

static void expect_pixel(const image_u8 *img, int x, int y, const uint8_t rgb[3]) {
    const uint8_t *p = pixel(img, x, y);
    if (memcmp(p, rgb, 3) != 0)
        fail_msg("pixel (%d, %d) is (%d, %d, %d), expected (%d, %d, %d)", x, y, p[0], p[1], p[2],
                 rgb[0], rgb[1], rgb[2]);
}

/* A point's mark centred on (cx, cy): the pixels within 2 of it exactly the colour (a disc of
 * radius 3 covers them fully), those 3 above, below and to the side `away` (-1 left, 1 right,
 * where no line leaves it) not (covered half at most). */
static void expect_mark(const image_u8 *img, int cx, int cy, int away, const uint8_t rgb[3]) {
    for (int dy = -2; dy <= 2; dy++)
        for (int dx = -2; dx <= 2; dx++)
            if (dx * dx + dy * dy <= 4) expect_pixel(img, cx + dx, cy + dy, rgb);
    const int edge[3][2] = {{0, -3}, {0, 3}, {3 * away, 0}};
    for (int i = 0; i < 3; i++)
        if (memcmp(pixel(img, cx + edge[i][0], cy + edge[i][1]), rgb, 3) == 0)
            fail_msg("the mark at (%d, %d) reaches (%d, %d)", cx, cy, cx + edge[i][0],
                     cy + edge[i][1]);
}

static int count_colour(const image_u8 *img, const uint8_t rgb[3]) {
    int n = 0;
    for (int y = 0; y < img->height; y++)
        for (int x = 0; x < img->width; x++) n += memcmp(pixel(img, x, y), rgb, 3) == 0;
    return n;
}

/* One 400x300 panel, x fixed to 0..4 and y to 0..1. Its area spans columns 58..383 (400 - 1 - 16)
 * and rows 48..263 (300 - 1 - 36): (1, 0.25) lands at column 58 + 325/4 = 139.25 -> 139, row
 * 263 - 215/4 = 209.25 -> 209; (3, 0.75) at 58 + 243.75 -> 302, 263 - 161.25 -> 102. */
static const double xs[] = {1, 3}, ys[] = {0.25, 0.75};

static plot_panel fixed_panel(const plot_series *s, int n) {
    return (plot_panel){.title = "fixed",
                        .x_label = "x",
                        .series = s,
                        .n_series = n,
                        .x = {1, 1, 0, 4},
                        .y = {1, 1, 0, 1}};
}

static void test_points_land_where_computed(void **state) {
    (void)state;
    const plot_series s = {.name = "a", .rgb = {200, 20, 20}, .n = 2, .x = xs, .y = ys};
    const plot_panel p = fixed_panel(&s, 1);
    image_u8 img;
    vit_error err = {0};
    if (plot_draw(&p, 1, 400, 300, &img, &err) != 0) fail_msg("%s", err.msg);
    assert_int_equal(img.width, 400);
    assert_int_equal(img.height, 300);
    expect_mark(&img, 139, 209, -1, red);
    expect_mark(&img, 302, 102, 1, red);
    /* the line between them passes (2, 0.5): column 220.5, row 155.5; a 2-pixel line covers the
     * pixels within half a pixel of it fully */
    int on_line = 0;
    for (int y = 154; y <= 157; y++)
        for (int x = 219; x <= 222; x++) on_line += memcmp(pixel(&img, x, y), red, 3) == 0;
    assert_true(on_line >= 2);
    /* (2.5, 0.1): column 261, row 241.5, away from the line and from any grid line (x ticks at
     * 0..4, y ticks at 0, 0.2, ..., 1): background */
    const uint8_t white[3] = {255, 255, 255}, grid[3] = {228, 228, 228};
    expect_pixel(&img, 261, 241, white);
    expect_pixel(&img, 261, 242, white);
    /* y = 0.2's grid line: row 263 - 43 = 220 */
    expect_pixel(&img, 261, 220, grid);
    /* the same input, the same pixels */
    image_u8 again;
    if (plot_draw(&p, 1, 400, 300, &again, &err) != 0) fail_msg("%s", err.msg);
    assert_memory_equal(img.pixels, again.pixels, (size_t)400 * 300 * 3);
    image_free(&img), image_free(&again);
}

/* A series of NaNs is drawn nowhere (not even in the legend); a single point still shows. */
static void test_missing_and_single_points(void **state) {
    (void)state;
    const double nan2[] = {NAN, NAN}, one_x[] = {1}, one_y[] = {0.5};
    const plot_series s[2] = {
        {.name = "missing", .rgb = {20, 60, 220}, .n = 2, .x = xs, .y = nan2},
        {.name = "one", .rgb = {200, 20, 20}, .n = 1, .x = one_x, .y = one_y}};
    const plot_panel p = {
        .title = "single", .x_label = "epoch", .series = s, .n_series = 2, .x_integer = 1};
    image_u8 img;
    vit_error err = {0};
    if (plot_draw(&p, 1, 400, 300, &img, &err) != 0) fail_msg("%s", err.msg);
    assert_int_equal(count_colour(&img, blue), 0);
    /* the point sits in the middle of the area (its x and y padded alike on both sides): column
     * (58 + 383) / 2 = 220.5, row (48 + 263) / 2 = 155.5; its mark and the legend's are red */
    int near = 0, far = 0;
    for (int y = 0; y < img.height; y++)
        for (int x = 0; x < img.width; x++) {
            if (memcmp(pixel(&img, x, y), red, 3) != 0) continue;
            if (fabs(x - 220.5) <= 4 && fabs(y - 155.5) <= 4)
                near++;
            else if (y >= PLOT_MARGIN_TOP - 1)
                far++;
        }
    assert_true(near >= 9);
    assert_int_equal(far, 0);
    image_free(&img);
}

/* A panel without a single point says so; the panel beside it is drawn as usual. */
static void test_no_data_panel(void **state) {
    (void)state;
    const double nan2[] = {NAN, NAN};
    const plot_series empty = {.name = "e", .rgb = {20, 60, 220}, .n = 2, .x = xs, .y = nan2};
    const plot_series full = {.name = "a", .rgb = {200, 20, 20}, .n = 2, .x = xs, .y = ys};
    const plot_panel p[2] = {{.title = "empty", .series = &empty, .n_series = 1},
                             fixed_panel(&full, 1)};
    image_u8 img;
    vit_error err = {0};
    if (plot_draw(p, 2, 400, 300, &img, &err) != 0) fail_msg("%s", err.msg);
    assert_int_equal(img.width, 800);
    /* "no data" in ink at the middle of the first area, nothing red or blue in it */
    int ink = 0;
    const uint8_t dark[3] = {40, 40, 40};
    for (int y = 150; y < 162; y++)
        for (int x = 190; x < 252; x++) ink += memcmp(pixel(&img, x, y), dark, 3) == 0;
    assert_true(ink > 20);
    assert_int_equal(count_colour(&img, blue), 0);
    /* the second panel's points, 400 columns further */
    expect_mark(&img, 400 + 139, 209, -1, red);
    expect_mark(&img, 400 + 302, 102, 1, red);
    image_free(&img);
}

static void expect_error(const plot_panel *p, int n, int w, int h, const char *words) {
    image_u8 img;
    vit_error err = {0};
    assert_int_equal(plot_draw(p, n, w, h, &img, &err), -1);
    print_message("  %s\n", err.msg);
    assert_non_null(strstr(err.msg, words));
    assert_null(img.pixels);
}

static void test_errors(void **state) {
    (void)state;
    const plot_series s = {.name = "a", .rgb = {200, 20, 20}, .n = 2, .x = xs, .y = ys};
    plot_panel p = fixed_panel(&s, 1);
    expect_error(&p, 1, 100, 300, "100x300");
    expect_error(&p, 1, 400, 5000, "400x5000");
    expect_error(&p, 0, 400, 300, "not 0");
    p.y = (plot_range){1, 1, 1, 1};
    expect_error(&p, 1, 400, 300, "fixed y range is empty");
    const plot_series no_values = {.name = "b", .n = 3};
    p = fixed_panel(&no_values, 1);
    expect_error(&p, 1, 400, 300, "3 points");
}

/* Written as PNG, decoded back: the same size and pixels. */
static void test_png_round_trip(void **state) {
    (void)state;
    const plot_series s = {.name = "a", .rgb = {200, 20, 20}, .n = 2, .x = xs, .y = ys};
    const plot_panel p[2] = {fixed_panel(&s, 1), fixed_panel(&s, 1)};
    image_u8 img, back;
    vit_error err = {0};
    if (plot_draw(p, 2, 320, 240, &img, &err) != 0) fail_msg("%s", err.msg);
    char path[4200];
    snprintf(path, sizeof path, "%s/chart.png", test_tmpdir());
    if (image_write_png(path, &img, &err) != 0) fail_msg("%s", err.msg);
    if (image_decode_file(path, 3, 0, 0, &back, &err) != 0) fail_msg("%s", err.msg);
    assert_int_equal(back.width, 640);
    assert_int_equal(back.height, 240);
    assert_memory_equal(back.pixels, img.pixels, (size_t)640 * 240 * 3);
    image_free(&img), image_free(&back);
}

/* ---- a count matrix ---- */

/* [[3, 1], [0, 0]]: row 0's shares 3/4 and 1/4, row 1 empty (white). Blues from (247, 251, 255)
 * to (8, 48, 107): 3/4 gives 247 + 0.75·(8 - 247) = 67.75 -> 68, 251 - 0.75·203 = 98.75 -> 99,
 * 255 - 0.75·148 = 144; 1/4 gives 187.25 -> 187, 200.25 -> 200, 218. Sampled 3 pixels inside each
 * cell's top-left corner (clear of the grid and the centred counts). The rows' names "0 cat" and
 * "1 dog" are 5 characters of 6 font pixels less the last one's gap, (6·5 - 1)·2 = 58 pixels, so
 * the cells start at 12 + 58 + 12 = 82; the picture is 82 + 2·56 + 12 + "100.0%" ((6·6 - 1)·2 =
 * 70) + 12 = 288 wide, 64 + 2·36 + 12 = 148 high. */
static void test_count_matrix(void **state) {
    (void)state;
    const int counts[] = {3, 1, 0, 0};
    const char *names[] = {"cat", "dog"};
    image_u8 img;
    vit_error err = {0};
    if (plot_matrix(counts, 2, names, "title", &img, &err) != 0) fail_msg("%s", err.msg);
    assert_int_equal(plot_matrix_left(names, 2), 82);
    assert_int_equal(img.width, 288);
    assert_int_equal(img.height, 148);
    expect_pixel(&img, 82 + 3, 64 + 3, (const uint8_t[3]){68, 99, 144});
    expect_pixel(&img, 82 + 56 + 3, 64 + 3, (const uint8_t[3]){187, 200, 218});
    expect_pixel(&img, 82 + 3, 64 + 36 + 3, (const uint8_t[3]){247, 251, 255});
    expect_pixel(&img, 82 + 56 + 3, 64 + 36 + 3, (const uint8_t[3]){247, 251, 255});
    image_free(&img);
    const int negative[] = {1, -1, 0, 0};
    assert_int_equal(plot_matrix(negative, 2, names, NULL, &img, &err), -1);
    assert_non_null(strstr(err.msg, "negative"));
    assert_int_equal(plot_matrix(counts, 0, names, NULL, &img, &err), -1);
    assert_int_equal(plot_matrix(counts, PLOT_MAX_MATRIX + 1, names, NULL, &img, &err), -1);
}

/* The title vit eval --confusion-png writes, over 2 classes: the picture is as wide as the title
 * (12 + (6·54 - 1)·2 + 12 = 670; the cells alone need 288), and the title's pixels are those the
 * same title has over 12 classes, whose cells are wider than it (82 + 12·56 + 12 + 70 + 12 =
 * 848): whole, not cut to the cells' width. */
static void test_count_matrix_title_fits(void **state) {
    (void)state;
    const char *title = "100 images, top-1 83.00%; rows true, columns predicted";
    assert_int_equal(strlen(title), 54);
    int counts[12 * 12] = {3, 1, 0, 0};
    const char *names[12] = {"cat", "dog", "a", "b", "c", "d", "e", "f", "g", "h", "i", "j"};
    image_u8 few, many;
    vit_error err = {0};
    if (plot_matrix(counts, 2, names, title, &few, &err) != 0) fail_msg("%s", err.msg);
    if (plot_matrix(counts, 12, names, title, &many, &err) != 0) fail_msg("%s", err.msg);
    assert_int_equal(few.width, 670);
    assert_int_equal(few.height, 148);
    assert_int_equal(many.width, 848);
    for (int y = 12; y < 12 + 14; y++) /* the title's band: 7 font rows of 2 pixels */
        assert_memory_equal(few.pixels + (size_t)y * few.width * 3,
                            many.pixels + (size_t)y * many.width * 3, (size_t)few.width * 3);
    image_free(&few), image_free(&many);
}

/* ---- training curves (vit/train/curves.h) ---- */

/* Two epochs without validation, and a line that is not JSON (skipped): the panels loss and
 * top-1, 800x300. In top-1 (the second panel, 400 columns in; y fixed to 0..1) the epochs 1 and 2
 * are padded to 0.95..2.05: epoch 1 at column 58 + 0.05/1.1 * 325 = 72.8 -> 73, train_top1 0.4
 * at row 263 - 0.4 * 215 = 177; epoch 2 at 58 + 1.05/1.1 * 325 = 368.2 -> 368, 0.8 at row 91.
 * No validation colour anywhere (its series is left out of the legends too). */
static const char *log_without_validation =
    "{\"epoch\": 1, \"train_loss\": 1.5, \"train_top1\": 0.4, \"val_loss\": null, "
    "\"val_top1\": null}\n"
    "not json\n"
    "{\"epoch\": 2, \"train_loss\": 0.9, \"train_top1\": 0.8, \"val_loss\": null, "
    "\"val_top1\": null}\n";

static const uint8_t train_blue[3] = {31, 119, 180}, val_orange[3] = {255, 127, 14},
                     cer_green[3] = {44, 160, 44};

static void test_curves_from_a_log(void **state) {
    (void)state;
    image_u8 img;
    vit_error err = {0};
    if (train_curves_draw(log_without_validation, &img, &err) != 0) fail_msg("%s", err.msg);
    assert_int_equal(img.width, 2 * TRAIN_CURVES_WIDTH);
    assert_int_equal(img.height, TRAIN_CURVES_HEIGHT);
    expect_mark(&img, 400 + 73, 177, -1, train_blue);
    expect_mark(&img, 400 + 368, 91, 1, train_blue);
    assert_int_equal(count_colour(&img, val_orange), 0);
    image_free(&img);
}

/* A line with val_cer adds the third panel, "error rate"; its series is drawn. */
static void test_curves_with_error_rates(void **state) {
    (void)state;
    const char *log = "{\"epoch\": 1, \"train_loss\": 2.5, \"train_top1\": 0.3, \"val_loss\": 2.4, "
                      "\"val_top1\": 0.35, \"val_cer\": 0.4, \"val_wer\": 0.9}\n"
                      "{\"epoch\": 2, \"train_loss\": 1.5, \"train_top1\": 0.5, \"val_loss\": 1.6, "
                      "\"val_top1\": 0.45, \"val_cer\": 0.2, \"val_wer\": 0.6}\n";
    image_u8 img;
    vit_error err = {0};
    if (train_curves_draw(log, &img, &err) != 0) fail_msg("%s", err.msg);
    assert_int_equal(img.width, 3 * TRAIN_CURVES_WIDTH);
    assert_true(count_colour(&img, val_orange) > 0);
    int green_left = 0, green_right = 0;
    for (int y = 0; y < img.height; y++)
        for (int x = 0; x < img.width; x++)
            if (memcmp(pixel(&img, x, y), cer_green, 3) == 0)
                ++*(x < 800 ? &green_left : &green_right);
    assert_int_equal(green_left, 0);
    assert_true(green_right > 0);
    image_free(&img);
    /* an empty log: both panels say "no data" (a picture all the same) */
    if (train_curves_draw("", &img, &err) != 0) fail_msg("%s", err.msg);
    assert_int_equal(img.width, 2 * TRAIN_CURVES_WIDTH);
    image_free(&img);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nice_ticks),
        cmocka_unit_test(test_tick_labels),
        cmocka_unit_test(test_points_land_where_computed),
        cmocka_unit_test(test_missing_and_single_points),
        cmocka_unit_test(test_no_data_panel),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_png_round_trip),
        cmocka_unit_test(test_count_matrix),
        cmocka_unit_test(test_count_matrix_title_fits),
        cmocka_unit_test(test_curves_from_a_log),
        cmocka_unit_test(test_curves_with_error_rates),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
