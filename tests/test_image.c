/* image/: decoding (docs/SPEC.md §4), Pillow's resize (§6) and HF preprocessing (§5).
 * PNG variants are written here with libpng's writer from known pixels, so each decoded result is
 * checked against the source array under docs/SPEC.md §4's rules (alpha dropped, grey replicated,
 * high byte kept), not against our own reader. Pillow equivalence is checked on the golden tensors.
 */
#include "tests/testutil.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jpeglib.h>
#include <png.h>

#include "image/image.h"
#include "vit/io/model_dir.h"
#include "vit/io/safetensors.h"

/* ---- writing test files ---- */

typedef struct {
    uint8_t *data;
    size_t size, cap;
} membuf;

static void membuf_write(png_structp png, png_bytep data, png_size_t n) {
    membuf *b = png_get_io_ptr(png);
    if (b->size + n > b->cap) {
        b->cap = (b->size + n) * 2;
        b->data = realloc(b->data, b->cap);
        assert_non_null(b->data);
    }
    memcpy(b->data + b->size, data, n);
    b->size += n;
}

static void membuf_flush(png_structp png) {
    (void)png;
}

typedef struct {
    int width, height, color_type, bit_depth, interlace;
    const png_color *palette;
    int palette_size;
    const uint8_t *trns; /* palette alpha */
    int trns_size;
} png_spec;

/* rows: packed samples as libpng expects them (big-endian for 16 bits). */
static membuf write_png(const png_spec *s, const uint8_t *samples, size_t row_bytes) {
    membuf out = {0};
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png_create_info_struct(png);
    assert_non_null(info);
    if (setjmp(png_jmpbuf(png))) fail_msg("libpng write failed");
    png_set_write_fn(png, &out, membuf_write, membuf_flush);
    png_set_IHDR(png, info, (png_uint_32)s->width, (png_uint_32)s->height, s->bit_depth,
                 s->color_type, s->interlace, PNG_COMPRESSION_TYPE_DEFAULT,
                 PNG_FILTER_TYPE_DEFAULT);
    if (s->palette) png_set_PLTE(png, info, s->palette, s->palette_size);
    if (s->trns) png_set_tRNS(png, info, s->trns, s->trns_size, NULL);
    png_write_info(png, info);
    png_bytep rows[64];
    assert_true(s->height <= 64);
    for (int y = 0; y < s->height; y++) rows[y] = (png_bytep)samples + (size_t)y * row_bytes;
    png_write_image(png, rows);
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    return out;
}

/* A baseline JPEG of a smooth gradient via libjpeg; `space` JCS_RGB, JCS_GRAYSCALE or JCS_CMYK. */
static membuf write_jpeg(int width, int height, J_COLOR_SPACE space, int components) {
    struct jpeg_compress_struct c;
    struct jpeg_error_mgr jerr;
    c.err = jpeg_std_error(&jerr);
    jpeg_create_compress(&c);
    unsigned char *mem = NULL;
    unsigned long size = 0;
    jpeg_mem_dest(&c, &mem, &size);
    c.image_width = (JDIMENSION)width;
    c.image_height = (JDIMENSION)height;
    c.input_components = components;
    c.in_color_space = space;
    jpeg_set_defaults(&c);
    jpeg_set_quality(&c, 90, TRUE);
    jpeg_start_compress(&c, TRUE);
    uint8_t *row = malloc((size_t)width * components);
    while (c.next_scanline < c.image_height) {
        for (int x = 0; x < width * components; x++)
            row[x] = (uint8_t)((x * 7 + c.next_scanline * 5) & 0xff);
        JSAMPROW r = row;
        jpeg_write_scanlines(&c, &r, 1);
    }
    jpeg_finish_compress(&c);
    jpeg_destroy_compress(&c);
    free(row);
    membuf out = {mem, size, size};
    return out;
}

static void decode_ok(const membuf *file, int channels, image_u8 *img) {
    vit_error err = {0};
    if (image_decode_memory(file->data, file->size, "t.png", channels, 0, 0, img, &err) != 0)
        fail_msg("decode failed: %s", err.msg);
}

/* ---- PNG variants against their source pixels ---- */

static void test_png_rgb_rgba_interlaced(void **state) {
    (void)state;
    enum { W = 13, H = 7 };
    uint8_t rgba[H][W][4];
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            for (int c = 0; c < 4; c++) rgba[y][x][c] = (uint8_t)(x * 19 + y * 31 + c * 67);
    for (int interlace = 0; interlace < 2; interlace++) {
        png_spec s = {
            W,    H, PNG_COLOR_TYPE_RGB_ALPHA, 8, interlace ? PNG_INTERLACE_ADAM7 : 0, NULL, 0,
            NULL, 0};
        membuf f = write_png(&s, &rgba[0][0][0], W * 4);
        image_u8 img;
        decode_ok(&f, 3, &img);
        assert_int_equal(img.width, W);
        assert_int_equal(img.height, H);
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++)
                for (int c = 0; c < 3; c++) /* alpha dropped, not composited */
                    assert_int_equal(img.pixels[(y * W + x) * 3 + c], rgba[y][x][c]);
        image_free(&img);
        free(f.data);
    }
}

static void test_png_grey_depths_and_alpha(void **state) {
    (void)state;
    enum { W = 9, H = 3 };
    /* 1, 2, 4-bit grey: libpng and Pillow both scale v to v * 255 / (2^d - 1) */
    for (int depth = 1; depth <= 4; depth *= 2) {
        const int maxv = (1 << depth) - 1;
        uint8_t packed[H][W];
        memset(packed, 0, sizeof packed);
        int v[H][W];
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++) {
                v[y][x] = (x + y) % (maxv + 1);
                const int bit = x * depth;
                packed[y][bit / 8] |= (uint8_t)(v[y][x] << (8 - depth - bit % 8));
            }
        png_spec s = {W, H, PNG_COLOR_TYPE_GRAY, depth, 0, NULL, 0, NULL, 0};
        membuf f = write_png(&s, &packed[0][0], W);
        image_u8 img;
        decode_ok(&f, 3, &img);
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++)
                for (int c = 0; c < 3; c++)
                    assert_int_equal(img.pixels[(y * W + x) * 3 + c], v[y][x] * 255 / maxv);
        image_free(&img);
        free(f.data);
    }
    /* grey + alpha: the grey value, replicated */
    uint8_t ga[H][W][2];
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) ga[y][x][0] = (uint8_t)(x * 29 + y), ga[y][x][1] = (uint8_t)x;
    png_spec s = {W, H, PNG_COLOR_TYPE_GRAY_ALPHA, 8, 0, NULL, 0, NULL, 0};
    membuf f = write_png(&s, &ga[0][0][0], W * 2);
    image_u8 img;
    decode_ok(&f, 3, &img);
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            for (int c = 0; c < 3; c++)
                assert_int_equal(img.pixels[(y * W + x) * 3 + c], ga[y][x][0]);
    image_free(&img);
    free(f.data);
}

static void test_png_16bit_keeps_high_byte(void **state) {
    (void)state;
    enum { W = 5, H = 4 };
    uint8_t be[H][W][3][2]; /* big-endian 16-bit RGB */
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            for (int c = 0; c < 3; c++) {
                const unsigned v = (unsigned)(x * 9001 + y * 3001 + c * 17 + 255) & 0xffff;
                be[y][x][c][0] = (uint8_t)(v >> 8), be[y][x][c][1] = (uint8_t)v;
            }
    png_spec s = {W, H, PNG_COLOR_TYPE_RGB, 16, 0, NULL, 0, NULL, 0};
    membuf f = write_png(&s, &be[0][0][0][0], W * 6);
    image_u8 img;
    decode_ok(&f, 3, &img);
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            for (int c = 0; c < 3; c++)
                assert_int_equal(img.pixels[(y * W + x) * 3 + c], be[y][x][c][0]);
    image_free(&img);
    free(f.data);
}

static void test_png_palette_with_transparency(void **state) {
    (void)state;
    enum { W = 6, H = 2 };
    const png_color palette[4] = {{255, 0, 0}, {0, 128, 0}, {10, 20, 30}, {200, 201, 202}};
    const uint8_t trns[4] = {0, 128, 255, 7};
    uint8_t index[H][W];
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) index[y][x] = (uint8_t)((x + 3 * y) % 4);
    png_spec s = {W, H, PNG_COLOR_TYPE_PALETTE, 8, 0, palette, 4, trns, 4};
    membuf f = write_png(&s, &index[0][0], W);
    image_u8 rgb, l;
    decode_ok(&f, 3, &rgb);
    decode_ok(&f, 1, &l);
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            const png_color p = palette[index[y][x]];
            const uint8_t *o = rgb.pixels + (y * W + x) * 3;
            assert_int_equal(o[0], p.red);
            assert_int_equal(o[1], p.green);
            assert_int_equal(o[2], p.blue);
            /* Pillow's L: (19595 R + 38470 G + 7471 B + 0x8000) >> 16 */
            const unsigned L = (19595u * p.red + 38470u * p.green + 7471u * p.blue + 0x8000u) >> 16;
            assert_int_equal(l.pixels[y * W + x], L);
        }
    assert_int_equal(l.channels, 1);
    /* hand-computed: pure red -> 76, (0,128,0) -> 75 */
    assert_int_equal(l.pixels[0], 76);
    assert_int_equal(l.pixels[1], 75);
    image_free(&rgb);
    image_free(&l);
    free(f.data);
}

/* ---- errors: every bad file gives a message naming it, never a crash or a huge allocation ---- */

static uint32_t crc32_of(const uint8_t *p, size_t n) {
    uint32_t crc = 0xffffffffu;
    for (size_t i = 0; i < n; i++) {
        crc ^= p[i];
        for (int k = 0; k < 8; k++) crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1)));
    }
    return ~crc;
}

static void put_be32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8),
    p[3] = (uint8_t)v;
}

static void expect_file_error(const void *data, size_t size, const char *name, const char *needle) {
    const char *path = write_temp_file(name, data, size);
    image_u8 img;
    vit_error err = {0};
    assert_int_equal(image_decode_file(path, 3, 0, 0, &img, &err), -1);
    assert_null(img.pixels);
    print_message("  %s\n", err.msg);
    if (!strstr(err.msg, name) || !strstr(err.msg, needle))
        fail_msg("expected '%s' and '%s' in '%s'", name, needle, err.msg);
}

static membuf small_png(void) {
    enum { W = 40, H = 30 };
    static uint8_t rgb[H][W][3];
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            for (int c = 0; c < 3; c++) rgb[y][x][c] = (uint8_t)(x * 37 ^ y * 11 ^ c * 101);
    png_spec s = {W, H, PNG_COLOR_TYPE_RGB, 8, 0, NULL, 0, NULL, 0};
    return write_png(&s, &rgb[0][0][0], W * 3);
}

static void test_bad_files(void **state) {
    (void)state;
    expect_file_error("", 0, "empty.png", "empty file");
    uint8_t noise[512];
    uint32_t r = 12345;
    for (size_t i = 0; i < sizeof noise; i++)
        noise[i] = (uint8_t)((r = r * 1103515245u + 12345u) >> 16);
    noise[0] = 0x43; /* no image signature starts with 'C' */
    expect_file_error(noise, sizeof noise, "noise.jpg", "not a PNG, JPEG, WebP, TIFF, GIF or BMP");
    const char text[] = "this is not an image\n";
    expect_file_error(text, sizeof text - 1, "text.png", "not a PNG, JPEG, WebP, TIFF, GIF or BMP");

    membuf png = small_png();
    expect_file_error(png.data, png.size / 2, "truncated.png", "truncated PNG data");
    /* intact data, one bit of the IDAT chunk's CRC flipped */
    uint8_t *bad = malloc(png.size);
    memcpy(bad, png.data, png.size);
    size_t idat = 8, length;
    for (;;) {
        length = (size_t)bad[idat] << 24 | bad[idat + 1] << 16 | bad[idat + 2] << 8 | bad[idat + 3];
        if (memcmp(bad + idat + 4, "IDAT", 4) == 0) break;
        idat += 12 + length;
    }
    bad[idat + 8 + length] ^= 0x01;
    expect_file_error(bad, png.size, "badcrc.png", "CRC error");
    /* header bomb: IHDR claims 60000x60000 (valid CRC) */
    memcpy(bad, png.data, png.size);
    put_be32(bad + 16, 60000);
    put_be32(bad + 20, 60000);
    put_be32(bad + 29, crc32_of(bad + 12, 17));
    expect_file_error(bad, png.size, "bomb.png", "exceeds the limit");
    put_be32(bad + 16, 0);
    put_be32(bad + 29, crc32_of(bad + 12, 17));
    expect_file_error(bad, png.size, "zero.png", "invalid PNG");
    free(bad);
    free(png.data);

    membuf jpg = write_jpeg(64, 48, JCS_RGB, 3);
    expect_file_error(jpg.data, jpg.size * 2 / 3, "truncated.jpg", "truncated JPEG data");
    expect_file_error(jpg.data, 200, "header-only.jpg", "JPEG");
    bad = malloc(jpg.size);
    memcpy(bad, jpg.data, jpg.size);
    size_t sof = 2;
    while (!(bad[sof] == 0xff && bad[sof + 1] == 0xc0)) sof++;
    bad[sof + 5] = 60000 >> 8, bad[sof + 6] = 60000 & 0xff; /* height */
    bad[sof + 7] = 60000 >> 8, bad[sof + 8] = 60000 & 0xff; /* width */
    expect_file_error(bad, jpg.size, "bomb.jpg", "exceeds the limit");
    free(bad);
    free(jpg.data);

    membuf cmyk = write_jpeg(16, 16, JCS_CMYK, 4);
    expect_file_error(cmyk.data, cmyk.size, "cmyk.jpg", "CMYK JPEG is not supported");
    free(cmyk.data);

    image_u8 img;
    vit_error err = {0};
    assert_int_equal(image_decode_file("/nonexistent/x.png", 3, 0, 0, &img, &err), -1);
    assert_non_null(strstr(err.msg, "/nonexistent/x.png"));
    assert_int_equal(image_decode_file(test_tmpdir(), 3, 0, 0, &img, &err), -1);
    assert_non_null(strstr(err.msg, "is a directory"));
}

static void test_pixel_limit(void **state) {
    (void)state;
    membuf png = small_png(); /* 40 x 30 = 1200 pixels */
    image_u8 img;
    vit_error err = {0};
    assert_int_equal(image_decode_memory(png.data, png.size, "p.png", 3, 1199, 0, &img, &err), -1);
    assert_non_null(strstr(err.msg, "exceeds the limit of 1199"));
    assert_int_equal(image_decode_memory(png.data, png.size, "p.png", 3, 1200, 0, &img, &err), 0);
    image_free(&img);
    free(png.data);
}

static void test_jpeg_grey_replicated(void **state) {
    (void)state;
    membuf jpg = write_jpeg(24, 16, JCS_GRAYSCALE, 1);
    image_u8 rgb, l;
    decode_ok(&jpg, 3, &rgb);
    decode_ok(&jpg, 1, &l);
    for (int i = 0; i < 24 * 16; i++) {
        assert_int_equal(rgb.pixels[3 * i], l.pixels[i]);
        assert_int_equal(rgb.pixels[3 * i + 1], l.pixels[i]);
        assert_int_equal(rgb.pixels[3 * i + 2], l.pixels[i]);
    }
    image_free(&rgb);
    image_free(&l);
    free(jpg.data);
}

/* ---- resize: hand-computed cases (docs/SPEC.md §6 arithmetic, checked against Pillow 9.4) ---- */

static void expect_resize_row(const uint8_t *in, int n_in, int n_out, int resample,
                              const uint8_t *expected) {
    image_u8 src = {n_in, 1, 1, (uint8_t *)in}, dst;
    vit_error err = {0};
    assert_int_equal(image_resize(&src, n_out, 1, resample, &dst, &err), 0);
    assert_memory_equal(dst.pixels, expected, (size_t)n_out);
    /* the same row as a column goes through the vertical pass */
    image_u8 col = {1, n_in, 1, (uint8_t *)in}, dcol;
    assert_int_equal(image_resize(&col, 1, n_out, resample, &dcol, &err), 0);
    assert_memory_equal(dcol.pixels, expected, (size_t)n_out);
    image_free(&dst);
    image_free(&dcol);
}

static void test_resize_hand_computed(void **state) {
    (void)state;
    /* bilinear 4 -> 2: scale 2, support 2; taps (3,3,1)/7 and (1,3,3)/7:
     * (30+60+30)/7 = 17.1 -> 17, (20+90+120)/7 = 32.9 -> 33 */
    expect_resize_row((const uint8_t[]){10, 20, 30, 40}, 4, 2, RESAMPLE_BILINEAR,
                      (const uint8_t[]){17, 33});
    /* bicubic 4 -> 2: weights k(.25)=.8671875, k(.75)=.2265625, k(1.25)=-.0703125 over their
     * sum 1.890625: 15.87 -> 16 and 34.13 -> 34 */
    expect_resize_row((const uint8_t[]){10, 20, 30, 40}, 4, 2, RESAMPLE_BICUBIC,
                      (const uint8_t[]){16, 34});
    /* bilinear 3 -> 5: centres .3 .9 1.5 2.1 2.7 -> p0, .6p0+.4p1, p1, .4p1+.6p2, p2 */
    expect_resize_row((const uint8_t[]){0, 100, 200}, 3, 5, RESAMPLE_BILINEAR,
                      (const uint8_t[]){0, 40, 100, 160, 200});
    /* bicubic 3 -> 5: e.g. output 1 = (.696·50 + .424·100 − .048·200) / 1.072 = 63.06 -> 63 */
    expect_resize_row((const uint8_t[]){50, 100, 200}, 3, 5, RESAMPLE_BICUBIC,
                      (const uint8_t[]){46, 63, 100, 167, 208});
    /* nearest: source index floor((i + .5) · in/out) */
    expect_resize_row((const uint8_t[]){50, 100, 200}, 3, 5, RESAMPLE_NEAREST,
                      (const uint8_t[]){50, 50, 100, 200, 200});
    expect_resize_row((const uint8_t[]){1, 2, 3, 4, 5, 6, 7}, 7, 3, RESAMPLE_NEAREST,
                      (const uint8_t[]){2, 4, 6});
    /* same size: a copy */
    expect_resize_row((const uint8_t[]){9, 8, 7}, 3, 3, RESAMPLE_BICUBIC,
                      (const uint8_t[]){9, 8, 7});
    image_u8 src = {1, 1, 1, (uint8_t[]){5}}, dst;
    vit_error err = {0};
    assert_int_equal(image_resize(&src, 0, 4, RESAMPLE_BILINEAR, &dst, &err), -1);
    assert_int_equal(image_resize(&src, 4, 4, 9, &dst, &err), -1);
    assert_non_null(strstr(err.msg, "unknown resample filter 9"));
}

/* ---- preprocessing ---- */

static const char *write_model_dir(const char *name, const char *config, const char *prep) {
    static char dir[4096];
    snprintf(dir, sizeof dir, "%s/%s", test_tmpdir(), name);
    char path[4200];
    snprintf(path, sizeof path, "mkdir -p '%s'", dir);
    assert_int_equal(system(path), 0);
    snprintf(path, sizeof path, "%s/config.json", name);
    write_temp_file(path, config, strlen(config));
    if (prep) {
        snprintf(path, sizeof path, "%s/preprocessor_config.json", name);
        write_temp_file(path, prep, strlen(prep));
    }
    return dir;
}

static void test_center_crop_pads_with_zero(void **state) {
    (void)state;
    /* 3x2 grey image, no resize, crop 4x5: top = (2-4) div 2 = -1, left = (3-5) div 2 = -1 */
    const char *dir =
        write_model_dir("crop", "{\"image_size\": 4, \"patch_size\": 1, \"num_channels\": 1}",
                        "{\"do_resize\": false, \"do_center_crop\": true,"
                        " \"crop_size\": {\"height\": 4, \"width\": 5}, \"rescale_factor\": 0.1,"
                        " \"image_mean\": [1.0], \"image_std\": [2.0]}");
    preprocess_config cfg;
    vit_error err = {0};
    assert_int_equal(model_dir_load_preprocess(dir, &cfg, &err), 0);
    int c, h, w;
    preprocess_output_shape(&cfg, &c, &h, &w);
    assert_int_equal(c, 1);
    assert_int_equal(h, 4);
    assert_int_equal(w, 5);
    uint8_t px[6] = {10, 20, 30, 40, 50, 60};
    image_u8 img = {3, 2, 1, px};
    float out[20];
    assert_int_equal(preprocess_image(&cfg, &img, out, &err), 0);
    const float pad = (0.0f - 1.0f) / 2.0f;
    for (int y = 0; y < 4; y++)
        for (int x = 0; x < 5; x++) {
            const int sy = y - 1, sx = x - 1;
            const int inside = sy >= 0 && sy < 2 && sx >= 0 && sx < 3;
            const float want = inside ? ((float)(px[sy * 3 + sx] * 0.1) - 1.0f) / 2.0f : pad;
            assert_float_equal(out[y * 5 + x], want, 0);
        }
}

static void test_preprocess_config_errors(void **state) {
    (void)state;
    const char *cfg = "{\"image_size\": 32, \"patch_size\": 8}";
    const struct {
        const char *prep, *needle;
    } cases[] = {
        {"{\"size\": \"big\"}", "field 'size'"},
        {"{\"size\": {\"height\": 32}}", "field 'size': 'width' must be an integer in 1..16384"},
        /* keys are exact and null is no size (fuzzing found both giving a crop width of 0) */
        {"{\"crop_size\": {\"height\": 40, \"Width\": 40}}",
         "field 'crop_size' has an unsupported key 'Width'"},
        {"{\"crop_size\": {\"height\": 40, \"width\": null}}",
         "field 'crop_size': 'width' must be an integer"},
        {"{\"size\": {\"Shortest_Edge\": 40}}", "unsupported key 'Shortest_Edge'"},
        {"{\"size\": {\"shortest_edge\": 40, \"longest_edge\": 60}}",
         "unsupported key 'longest_edge'"},
        {"{\"size\": {\"height\": 2.5, \"width\": 3}}", "'height' must be an integer"},
        {"{\"resample\": 7}", "field 'resample'"},
        {"{\"image_std\": [0.5, 0, 0.5]}", "field 'image_std'"},
        {"{\"image_mean\": [0.5, 0.5]}", "field 'image_mean' must be a number or a list of 3"},
        {"{\"do_resize\": \"yes\"}", "field 'do_resize'"},
        {"{\"crop_size\": {\"shortest_edge\": 3}, \"do_center_crop\": true}", "field 'crop_size'"},
        {"[1, 2]", "not a valid JSON object"},
        /* Python's json.loads refuses a byte order mark and anything after the value */
        {"\xef\xbb\xbf{\"size\": 224}", "starts with a UTF-8 byte order mark"},
        {"{\"size\": 224} {}", "a syntax error at line 1, column 15"},
        /* SigLIP's int size is {"shortest_edge": N} to transformers, which its preprocess fails on
         */
        {"{\"image_processor_type\": \"SiglipImageProcessor\", \"size\": 224}",
         "field 'size' is an integer, which SiglipImageProcessor does not take"},
        {"{\"image_processor_type\": \"SiglipImageProcessor\", \"size\": {\"shortest_edge\": 9}}",
         "unsupported key 'shortest_edge' (expected height and width)"},
        {"{\"image_processor_type\": \"ConvNextImageProcessor\", \"size\": 224}",
         "image processor 'ConvNextImageProcessor' is not one vit reads"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *dir = write_model_dir("bad", cfg, cases[i].prep);
        preprocess_config p;
        vit_error err = {0};
        assert_int_equal(model_dir_load_preprocess(dir, &p, &err), -1);
        print_message("  %s\n", err.msg);
        if (!strstr(err.msg, "preprocessor_config.json") || !strstr(err.msg, cases[i].needle))
            fail_msg("expected '%s' in '%s'", cases[i].needle, err.msg);
    }
}

/* A long thin image under a big shortest_edge: the long side would pass INT_MAX (it was cast to
 * -2147483648): an error naming the sizes instead. */
static void test_shortest_edge_extreme_aspect(void **state) {
    (void)state;
    preprocess_config cfg = {.do_resize = 1,
                             .shortest_edge = 16384,
                             .resample = RESAMPLE_BILINEAR,
                             .do_center_crop = 1,
                             .crop_height = 8,
                             .crop_width = 8,
                             .channels = 1};
    uint8_t px[4000] = {0};
    const image_u8 img = {4000, 1, 1, px};
    float out[64];
    vit_error err = {0};
    assert_int_equal(preprocess_image(&cfg, &img, out, &err), -1);
    print_message("  %s\n", err.msg);
    assert_non_null(strstr(err.msg, "a 4000x1 image with its short side at 16384 would be"));
}

/* A PNG cut short decodes as Pillow 9.4 decodes it: tests/data/pullover.png (595 bytes) opens
 * in Pillow with its last 1..21 bytes missing (IEND, the last IDAT's CRC, the zlib checksum and
 * the final deflate bits) and fails from 22 on (checked with python3-pil); the pixels of every cut
 * that decodes are the whole file's. */
static void test_png_cut_short_as_pillow(void **state) {
    (void)state;
    size_t size;
    uint8_t *whole = read_whole_file("tests/data/pullover.png", &size);
    assert_non_null(whole);
    assert_int_equal(size, 595);
    vit_error err = {0};
    image_u8 ref, img;
    assert_int_equal(image_decode_memory(whole, size, "whole.png", 3, 0, 0, &ref, &err), 0);
    for (size_t cut = 1; cut <= 40; cut++) {
        const int rc = image_decode_memory(whole, size - cut, "cut.png", 3, 0, 0, &img, &err);
        if (cut <= 21) {
            if (rc != 0) fail_msg("cut by %zu: %s", cut, err.msg);
            assert_memory_equal(img.pixels, ref.pixels, (size_t)ref.width * ref.height * 3);
            image_free(&img);
        } else {
            if (rc == 0) fail_msg("cut by %zu decodes; Pillow refuses it", cut);
            assert_non_null(strstr(err.msg, "cut.png: invalid PNG"));
        }
    }
    image_free(&ref);
    free(whole);
}

static void test_defaults_without_preprocessor_config(void **state) {
    (void)state;
    const char *dir = write_model_dir("plain", "{\"image_size\": 48, \"patch_size\": 8}", NULL);
    preprocess_config cfg;
    vit_error err = {0};
    assert_int_equal(model_dir_load_preprocess(dir, &cfg, &err), 0);
    /* ViTImageProcessor defaults at the model's image_size */
    assert_int_equal(cfg.do_resize, 1);
    assert_int_equal(cfg.resize_height, 48);
    assert_int_equal(cfg.resize_width, 48);
    assert_int_equal(cfg.resample, RESAMPLE_BILINEAR);
    assert_int_equal(cfg.do_center_crop, 0);
    assert_true(cfg.mean[0] == 0.5f && cfg.std[2] == 0.5f);
    assert_true(fabs(cfg.rescale_factor - 1.0 / 255) < 1e-15);
}

/* ---- Pillow / Hugging Face equivalence on the golden tensors (docs/SPEC.md §9) ---- */

/* Every golden image through the model's preprocessing against the reference's pixels. 1e-6: the
 * uint8 pixels must be Pillow's exactly (one step of 1/255 / std is 0.017 or more); what is left is
 * the rounding of the rescale and normalisation, which the reference does as HF does (float64
 * product rounded to float32, then float32), as vit does: 0 measured. */
static void check_golden_pixels(const char *dir, int expected) {
    char golden[4200];
    snprintf(golden, sizeof golden, "%s/golden.safetensors", dir);
    preprocess_config cfg;
    vit_error err = {0};
    /* the processor folders have no config.json: 224 is not used, they all name a size */
    if ((expected == 15 ? model_dir_load_preprocess(dir, &cfg, &err)
                        : preprocess_config_read(dir, 224, 3, &cfg, &err)) != 0)
        fail_msg("%s", err.msg);
    st_file st;
    if (st_open(golden, &st, &err) != 0) fail_msg("%s", err.msg);
    int compared = 0;
    double worst = 0;
    for (int i = 0; i < st.count; i++) {
        const char *name = st.tensors[i].name, *slash = strrchr(name, '/');
        if (!slash || strcmp(slash, "/pixels") != 0) continue;
        char image[512], path[4096];
        snprintf(image, sizeof image, "%.*s", (int)(slash - name), name);
        snprintf(path, sizeof path, "%s/%s", GOLDEN_IMAGES, image);
        const st_tensor *t = &st.tensors[i];
        float *want = malloc(sizeof(float) * (size_t)t->numel);
        float *got = malloc(sizeof(float) * (size_t)t->numel);
        assert_int_equal(st_to_f32(&st, t, want, &err), 0);
        if (preprocess_file(&cfg, path, 0, 0, got, &err) != 0) fail_msg("%s", err.msg);
        for (int64_t k = 0; k < t->numel; k++) {
            const double d = fabs((double)got[k] - want[k]);
            if (d > worst) worst = d;
            if (d > 1e-6)
                fail_msg("%s %s: element %lld differs by %g", dir, image, (long long)k, d);
        }
        free(want);
        free(got);
        compared++;
    }
    print_message("  %s: %d golden tensors, worst |diff| %.3g\n", dir, compared, worst);
    assert_int_equal(compared, expected);
    st_close(&st);
}

static void test_golden_micro_a(void **state) {
    (void)state;
    check_golden_pixels(MICRO_A, 15); /* 32x32 bilinear squash */
}

static void test_golden_micro_b(void **state) {
    (void)state;
    check_golden_pixels(MICRO_B, 15); /* shortest edge 46 bicubic, crop 40, ImageNet stats */
}

/* Every image processor class vit reads, with its file as the Hub has it (an int size and
 * crop_size: CLIP's and Bit's int size is the short side, then the crop; ViT's, DeiT's and BEiT's a
 * square) and with only the fields that pick the class's own defaults (resample, crop, mean and
 * std), against tools/processor_reference.py's Pillow pixels (tests/data/processors). */
static void test_processor_classes(void **state) {
    (void)state;
    static const char *cases[] = {"clip-hub", "clip-defaults", "bit-hub",    "bit-defaults",
                                  "vit-hub",  "vit-defaults",  "deit-hub",   "deit-defaults",
                                  "beit-hub", "beit-defaults", "siglip-hub", "siglip-defaults"};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char dir[256];
        snprintf(dir, sizeof dir, TEST_DATA "/processors/%s", cases[i]);
        check_golden_pixels(dir, 3);
    }
}

/* A preprocessor_config.json that names no class (hand-written, or saved without the type): as
 * AutoImageProcessor, the class of config.json's model_type (IMAGE_PROCESSOR_MAPPING: dinov2 and
 * dinov2_with_registers Bit, clip CLIP, deit DeiT, beit and data2vec-vision BEiT, siglip SigLIP),
 * whose defaults then apply: each *-defaults file of tests/data/processors without its
 * image_processor_type, beside a config.json of that model_type, gives that class's goldens. */
static void test_processor_class_from_model_type(void **state) {
    (void)state;
    static const struct {
        const char *folder, *model_type, *file;
    } cases[] = {
        {"bit-defaults", "dinov2", "{\"size\": 20, \"crop_size\": 16}"},
        {"bit-defaults", "dinov2_with_registers", "{\"size\": 20, \"crop_size\": 16}"},
        {"clip-defaults", "clip", "{\"size\": 20, \"crop_size\": 16}"},
        {"deit-defaults", "deit", "{\"size\": 20, \"crop_size\": 16}"},
        {"beit-defaults", "data2vec-vision", "{\"size\": 20, \"crop_size\": 16}"},
        {"siglip-defaults", "siglip", "{\"size\": {\"height\": 20, \"width\": 16}}"},
        {"vit-defaults", "vit", "{\"size\": 20}"},
    };
    char cwd[2048];
    assert_non_null(getcwd(cwd, sizeof cwd));
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char name[128], config[128], from[4096], to[8192];
        snprintf(name, sizeof name, "untyped-%s-%zu", cases[i].folder, i);
        snprintf(config, sizeof config, "{\"model_type\": \"%s\"}", cases[i].model_type);
        const char *dir = write_model_dir(name, config, cases[i].file);
        snprintf(from, sizeof from, "%s/" TEST_DATA "/processors/%s/golden.safetensors", cwd,
                 cases[i].folder);
        snprintf(to, sizeof to, "%s/golden.safetensors", dir);
        assert_true(symlink(from, to) == 0 || errno == EEXIST);
        print_message("  model_type %s:\n", cases[i].model_type);
        check_golden_pixels(dir, 3);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_png_rgb_rgba_interlaced),
        cmocka_unit_test(test_png_grey_depths_and_alpha),
        cmocka_unit_test(test_png_16bit_keeps_high_byte),
        cmocka_unit_test(test_png_palette_with_transparency),
        cmocka_unit_test(test_bad_files),
        cmocka_unit_test(test_pixel_limit),
        cmocka_unit_test(test_jpeg_grey_replicated),
        cmocka_unit_test(test_resize_hand_computed),
        cmocka_unit_test(test_center_crop_pads_with_zero),
        cmocka_unit_test(test_preprocess_config_errors),
        cmocka_unit_test(test_shortest_edge_extreme_aspect),
        cmocka_unit_test(test_png_cut_short_as_pillow),
        cmocka_unit_test(test_defaults_without_preprocessor_config),
        cmocka_unit_test(test_golden_micro_a),
        cmocka_unit_test(test_golden_micro_b),
        cmocka_unit_test(test_processor_classes),
        cmocka_unit_test(test_processor_class_from_model_type),
    };
    return cmocka_run_group_tests_name("image", tests, NULL, NULL);
}
