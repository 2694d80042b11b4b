/* image/ beyond PNG and JPEG basics: WebP, TIFF, GIF and BMP decoded to exactly Pillow 9.4's
 * pixels, EXIF orientation as Pillow's ImageOps.exif_transpose, refusals, limits, and truncated or
 * corrupted files. The files and Pillow's pixels for them are in tests/data/formats, made by
 * tools/gen_format_tests.py (pillow.tsv lists them, pillow.rgb and pillow.l hold the pixels).
 * WebP, TIFF and GIF are optional in the build: the files of a format this build is without are
 * checked for the one-line refusal only, and that test is counted as skipped, saying why. */
#include "tests/testutil.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "image/decode_internal.h"
#include "image/image.h"
#include "vit/vit.h"

#define DIR     "tests/data/formats"
#define FASHION "models/fashion-vit"

typedef struct {
    char file[128];
    int exif, width, height;
    long offset;
} expectation;

static expectation rows[256];
static int num_rows;
static uint8_t *pillow_rgb, *pillow_l;

static uint8_t *read_data(const char *name, size_t *size) {
    char path[512];
    snprintf(path, sizeof path, DIR "/%.400s", name);
    uint8_t *data = read_whole_file(path, size);
    if (!data) fail_msg("cannot read %s", path);
    return data;
}

static int setup(void **state) {
    (void)state;
    size_t n, size_rgb, size_l;
    char *text = (char *)read_data("pillow.tsv", &n);
    num_rows = 0;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        if (line[0] == '#') continue;
        expectation *e = &rows[num_rows++];
        assert_true(num_rows <= 256);
        assert_int_equal(sscanf(line, "%127s %d %d %d %ld", e->file, &e->exif, &e->width,
                                &e->height, &e->offset),
                         5);
    }
    free(text);
    pillow_rgb = read_data("pillow.rgb", &size_rgb);
    pillow_l = read_data("pillow.l", &size_l);
    const expectation *last = &rows[num_rows - 1];
    assert_int_equal(size_rgb, last->offset + 3L * last->width * last->height);
    assert_int_equal(size_l * 3, size_rgb);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    free(pillow_rgb);
    free(pillow_l);
    return 0;
}

/* The optional format of a file (by its name) when this build is without it, else NULL. */
static const char *left_out(const char *file) {
    static const char *const optional[][2] = {{".webp", "WebP"}, {".tif", "TIFF"}, {".gif", "GIF"}};
    const char *dot = strrchr(file, '.');
    for (size_t i = 0; dot && i < sizeof optional / sizeof optional[0]; i++) {
        if (strcmp(dot, optional[i][0]) != 0) continue;
        const char *name;
        int built_in;
        for (int f = 0; (name = image_format(f, &built_in)); f++)
            if (strcmp(name, optional[i][1]) == 0) return built_in ? NULL : name;
        fail_msg("image_format does not know %s", optional[i][1]);
    }
    return NULL;
}

/* The row for (file, exif), or NULL. */
static const expectation *find_row(const char *file, int exif) {
    for (int i = 0; i < num_rows; i++)
        if (strcmp(rows[i].file, file) == 0 && rows[i].exif == exif) return &rows[i];
    return NULL;
}

/* Largest |difference| between a decode and Pillow's pixels (-1: the sizes differ). */
static int max_diff(const image_u8 *img, const expectation *e, int channels) {
    if (img->width != e->width || img->height != e->height) return -1;
    const uint8_t *want = channels == 3 ? pillow_rgb + e->offset : pillow_l + e->offset / 3;
    int worst = 0;
    for (size_t i = 0; i < (size_t)e->width * e->height * channels; i++) {
        const int d = abs((int)img->pixels[i] - want[i]);
        if (d > worst) worst = d;
    }
    return worst;
}

static void check_decode(const uint8_t *data, size_t size, const expectation *e, int flags,
                         int channels) {
    image_u8 img;
    vit_error err = {0};
    if (image_decode_memory(data, size, e->file, channels, 0, flags, &img, &err) != 0)
        fail_msg("%s: %s", e->file, err.msg);
    const int d = max_diff(&img, e, channels);
    if (d != 0)
        fail_msg("%s (%s, %s): %s %d", e->file, channels == 3 ? "RGB" : "L",
                 flags ? "EXIF orientation" : "raw", d < 0 ? "size" : "max |diff|", d < 0 ? 0 : d);
    image_free(&img);
}

/* Every file, RGB and L, raw and turned upright, is Pillow's pixels exactly. */
static void test_pillow_pixels(void **state) {
    (void)state;
    int files = 0;
    for (int i = 0; i < num_rows; i++) {
        const expectation *e = &rows[i];
        if (left_out(e->file)) continue;
        size_t size;
        uint8_t *data = read_data(e->file, &size);
        for (int channels = 1; channels <= 3; channels += 2) {
            if (e->exif) {
                check_decode(data, size, e, IMAGE_EXIF_ORIENTATION, channels);
                continue;
            }
            check_decode(data, size, e, 0, channels);
            /* no exif_transpose row: turning it upright changes nothing */
            if (!find_row(e->file, 1))
                check_decode(data, size, e, IMAGE_EXIF_ORIENTATION, channels);
        }
        files += !e->exif;
        free(data);
    }
    print_message("  %d files, %d expectations: every pixel equal to Pillow's\n", files, num_rows);
}

static void expect_error(const char *msg, const char *file, const char *needle) {
    if (!strstr(msg, file) || (needle && !strstr(msg, needle)) || strchr(msg, '\n'))
        fail_msg("expected one line naming '%s'%s%s, got '%s'", file, needle ? " and " : "",
                 needle ? needle : "", msg);
}

/* Layouts refused on purpose, each with a clear reason. */
static void test_refused(void **state) {
    (void)state;
    size_t n;
    char *text = (char *)read_data("refused.tsv", &n);
    int count = 0, lines = 0;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        if (line[0] == '#') continue;
        lines++;
        char *tab = strchr(line, '\t');
        assert_non_null(tab);
        *tab = 0;
        char path[512];
        snprintf(path, sizeof path, DIR "/%.400s", line);
        if (left_out(line)) continue;
        image_u8 img;
        vit_error err = {0};
        assert_int_equal(image_decode_file(path, 3, 0, 0, &img, &err), -1);
        assert_null(img.pixels);
        expect_error(err.msg, path, tab + 1);
        print_message("  %s\n", err.msg);
        count++;
    }
    free(text);
    assert_true(lines >= 5 && count >= 1);
}

/* The pixel limit applies to each format before anything is allocated (GIF: to the canvas). */
static void test_pixel_limit(void **state) {
    (void)state;
    for (int i = 0; i < num_rows; i++) {
        const expectation *e = &rows[i];
        if (e->exif || left_out(e->file)) continue;
        size_t size;
        uint8_t *data = read_data(e->file, &size);
        const int64_t pixels = (int64_t)e->width * e->height;
        image_u8 img;
        vit_error err = {0};
        if (pixels > 1) {
            assert_int_equal(image_decode_memory(data, size, e->file, 3, pixels - 1, 0, &img, &err),
                             -1);
            expect_error(err.msg, e->file, "exceeds the limit");
        }
        if (image_decode_memory(data, size, e->file, 3, pixels, 0, &img, &err) != 0)
            fail_msg("%s at its own size: %s", e->file, err.msg);
        image_free(&img);
        free(data);
    }
}

/* A file above IMAGE_MAX_FILE_BYTES is refused unread (a sparse file: no disk used). */
static void test_file_size_limit(void **state) {
    (void)state;
    char path[4096];
    snprintf(path, sizeof path, "%s/huge.gif", test_tmpdir());
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "GIF89a", 6), 6);
    assert_int_equal(ftruncate(fd, IMAGE_MAX_FILE_BYTES + 1), 0);
    close(fd);
    image_u8 img;
    vit_error err = {0};
    assert_int_equal(image_decode_file(path, 3, 0, 0, &img, &err), -1);
    expect_error(err.msg, path, "larger than the limit");
    unlink(path);
}

/* Decodes a damaged copy: success, or one line naming the file; never a crash (ASan). A cut copy
 * (whole != NULL) that decodes must give the whole file's pixels: only bytes the image does not
 * need were cut (the later frames of an animated GIF, say). */
static int decode_damaged(const uint8_t *data, size_t size, const expectation *whole,
                          const char *name) {
    image_u8 img;
    vit_error err = {0};
    const int rc = image_decode_memory(data, size, name, 3, 1 << 16, 0, &img, &err);
    if (rc == 0) {
        assert_non_null(img.pixels);
        assert_true(img.width > 0 && img.height > 0);
        if (whole && max_diff(&img, whole, 3) != 0)
            fail_msg("%s cut to %zu bytes decodes to other pixels", name, size);
        image_free(&img);
    } else {
        assert_null(img.pixels);
        expect_error(err.msg, name, NULL);
    }
    return rc;
}

/* Truncated and corrupted copies of every file, made from the good bytes. */
static void test_truncated_and_corrupt(void **state) {
    (void)state;
    int decodes = 0, failed = 0;
    for (int i = 0; i < num_rows; i++) {
        const expectation *e = &rows[i];
        if (e->exif || left_out(e->file)) continue;
        size_t size;
        uint8_t *data = read_data(e->file, &size);
        uint8_t *copy = malloc(size);
        assert_non_null(copy);
        const size_t step = size / 97 + 1;
        for (size_t cut = 0; cut < size; cut += step, decodes++)
            failed += decode_damaged(data, cut, e, e->file) != 0;
        for (size_t cut = size > 3 ? size - 3 : 0; cut < size; cut++, decodes++)
            failed += decode_damaged(data, cut, e, e->file) != 0;
        for (size_t at = 0; at < size; at += step) {
            static const uint8_t values[] = {0x00, 0xff, 0x80};
            for (int v = 0; v < 4; v++, decodes++) {
                memcpy(copy, data, size);
                copy[at] = v < 3 ? values[v] : (uint8_t)(copy[at] ^ 0x01);
                failed += decode_damaged(copy, size, NULL, e->file) != 0;
            }
        }
        free(copy);
        free(data);
    }
    print_message("  %d damaged copies: %d refused with one line, the others decoded\n", decodes,
                  failed);
}

/* A file cut in half says so; damaged headers say what is wrong. */
static void test_clear_messages(void **state) {
    (void)state;
    /* a GIF without its trailer, or also its last block terminator, decodes as in Pillow */
    const expectation *gif = find_row("gif_palette.gif", 0);
    if (!left_out(gif->file)) {
        size_t gif_size;
        uint8_t *gif_data = read_data(gif->file, &gif_size);
        assert_int_equal(decode_damaged(gif_data, gif_size - 1, gif, gif->file), 0);
        assert_int_equal(decode_damaged(gif_data, gif_size - 2, gif, gif->file), 0);
        free(gif_data);
    }
    static const char *const halves[] = {"webp_lossy.webp", "tiff_rgb8_lzw.tif", "tiff_rgb8.tif",
                                         "gif_palette.gif", "bmp_rgb24.bmp",     "bmp_pal4.bmp"};
    for (size_t i = 0; i < sizeof halves / sizeof halves[0]; i++) {
        if (left_out(halves[i])) continue;
        size_t size;
        uint8_t *data = read_data(halves[i], &size);
        image_u8 img;
        vit_error err = {0};
        assert_int_equal(image_decode_memory(data, size / 2, halves[i], 3, 0, 0, &img, &err), -1);
        expect_error(err.msg, halves[i], "truncated");
        print_message("  %s\n", err.msg);
        free(data);
    }
    struct {
        const char *file;
        size_t at;
        uint8_t value;
        const char *needle;
    } damaged[] = {
        {"bmp_rgb24.bmp", 28, 7, "unsupported BMP bit depth 7"},
        {"bmp_rgb24.bmp", 14, 99, "unsupported BMP header size 99"},
        {"bmp_rgb24.bmp", 30, 4, "unsupported BMP compression 4"},
        {"tiff_rgb8.tif", 5, 0x70, "beyond the end of the file"},
        {"webp_lossy.webp", 23, 0x70, "invalid WebP"},
        {"gif_palette.gif", 10, 0x00, "invalid GIF"},
    };
    for (size_t i = 0; i < sizeof damaged / sizeof damaged[0]; i++) {
        if (left_out(damaged[i].file)) continue;
        size_t size;
        uint8_t *data = read_data(damaged[i].file, &size);
        data[damaged[i].at] = damaged[i].value;
        image_u8 img;
        vit_error err = {0};
        assert_int_equal(image_decode_memory(data, size, damaged[i].file, 3, 0, 0, &img, &err), -1);
        expect_error(err.msg, damaged[i].file, damaged[i].needle);
        print_message("  %s\n", err.msg);
        free(data);
    }
}

/* A file of a format this build is without is refused in one line naming the file and the
 * format, whole or cut short; with any such format the test counts as skipped and says which. */
static void test_left_out_formats(void **state) {
    (void)state;
    char formats[64] = "";
    int files = 0;
    for (int i = 0; i < num_rows; i++) {
        const char *format = left_out(rows[i].file);
        if (!format || rows[i].exif) continue;
        if (!strstr(formats, format))
            snprintf(formats + strlen(formats), sizeof formats - strlen(formats), "%s%s",
                     formats[0] ? ", " : "", format);
        char needle[64];
        snprintf(needle, sizeof needle, "built without %s support", format);
        size_t size;
        uint8_t *data = read_data(rows[i].file, &size);
        const size_t cuts[2] = {size, size / 2};
        for (int c = 0; c < 2; c++) {
            image_u8 img;
            vit_error err = {0};
            assert_int_equal(image_decode_memory(data, cuts[c], rows[i].file, 3, 0, 0, &img, &err),
                             -1);
            assert_null(img.pixels);
            expect_error(err.msg, rows[i].file, needle);
            if (files == 0 && c == 0) print_message("  %s\n", err.msg);
        }
        free(data);
        files++;
    }
    if (files) {
        print_message("SKIP %s: this build is without %s (vit info says so): their %d files "
                      "checked for the refusal only\n",
                      __func__, formats, files);
        skip();
    }
}

/* The EXIF reader on hand-made blocks, where Pillow's reading is known (comments say why); 0 means
 * no readable tag, 1 a tag Pillow does not act on. */
static void test_exif_reader(void **state) {
    (void)state;
    /* II header, IFD at 8, one entry (274, type, count, value), next-IFD 0 */
    uint8_t b[64] = {'I', 'I', 42, 0, 8, 0, 0, 0, 1, 0, 0x12, 0x01, 3, 0, 1, 0, 0, 0, 6, 0, 0, 0};
    assert_int_equal(exif_orientation(b, 26), 6);
    uint8_t prefixed[70] = "Exif\0\0";
    memcpy(prefixed + 6, b, 26);
    assert_int_equal(exif_orientation(prefixed, 32), 6);
    assert_int_equal(exif_orientation(b, 21), 0); /* the entry cut short */
    b[18] = 9;                                    /* not an orientation */
    assert_int_equal(exif_orientation(b, 26), 1);
    b[18] = 1;
    assert_int_equal(exif_orientation(b, 26), 1);
    b[12] = 8, b[18] = 0xfa, b[19] = 0xff; /* SSHORT -6 */
    assert_int_equal(exif_orientation(b, 26), 1);
    const float f = 7.0f; /* FLOAT 7.0 matches 7 in Pillow's dict lookup */
    b[12] = 11;
    memcpy(b + 18, &f, 4);
    assert_int_equal(exif_orientation(b, 26), 7);
    /* SRATIONAL -12/-2 = 6, stored after the IFD */
    b[12] = 10, b[18] = 26, b[19] = b[20] = b[21] = 0;
    const int32_t rational[2] = {-12, -2};
    memcpy(b + 26, rational, 8);
    assert_int_equal(exif_orientation(b, 34), 6);
    assert_int_equal(exif_orientation(b, 33), 0); /* its value beyond the block */
    b[4] = 200;                                   /* IFD beyond the block */
    assert_int_equal(exif_orientation(b, 34), 0);
    /* BigTIFF headers make Pillow's Exif fail: no orientation */
    const uint8_t bigtiff[] = {'I', 'I', 43, 0, 8, 0, 0, 0, 16, 0, 0, 0, 0, 0, 0, 0};
    assert_int_equal(exif_orientation(bigtiff, sizeof bigtiff), 0);
    const uint8_t garbage[] = "not an EXIF block at all";
    assert_int_equal(exif_orientation(garbage, sizeof garbage), 0);
    assert_int_equal(exif_orientation(garbage, 0), 0);
    /* MM, byte-swapped header Pillow also accepts ("MM*\0"), SHORT 3 */
    const uint8_t mm[] = {'M',  'M', 42, 0, 0, 0, 0, 8, 0, 1, 0x01,
                          0x12, 0,   3,  0, 0, 0, 1, 0, 3, 0, 0};
    assert_int_equal(exif_orientation(mm, sizeof mm), 3);
}

/* image_orient against a hand-made 3x2 image, all eight cases (Pillow's transpose methods). */
static void test_orient_cases(void **state) {
    (void)state;
    /* 1 2 3      expected outputs, row-major */
    /* 4 5 6 */
    static const uint8_t want[9][6] = {{0},
                                       {1, 2, 3, 4, 5, 6},
                                       {3, 2, 1, 6, 5, 4},  /* FLIP_LEFT_RIGHT */
                                       {6, 5, 4, 3, 2, 1},  /* ROTATE_180 */
                                       {4, 5, 6, 1, 2, 3},  /* FLIP_TOP_BOTTOM */
                                       {1, 4, 2, 5, 3, 6},  /* TRANSPOSE */
                                       {4, 1, 5, 2, 6, 3},  /* ROTATE_270 (clockwise) */
                                       {6, 3, 5, 2, 4, 1},  /* TRANSVERSE */
                                       {3, 6, 2, 5, 1, 4}}; /* ROTATE_90 */
    for (int o = 1; o <= 8; o++) {
        for (int channels = 1; channels <= 3; channels += 2) {
            uint8_t *p = malloc(6 * channels);
            for (int i = 0; i < 6; i++)
                for (int c = 0; c < channels; c++) p[i * channels + c] = (uint8_t)(i + 1 + 10 * c);
            image_u8 img = {3, 2, channels, p};
            vit_error err = {0};
            assert_int_equal(image_orient(&img, o, "t", &err), 0);
            assert_int_equal(img.width, o >= 5 ? 2 : 3);
            assert_int_equal(img.height, o >= 5 ? 3 : 2);
            for (int i = 0; i < 6; i++)
                for (int c = 0; c < channels; c++)
                    assert_int_equal(img.pixels[i * channels + c], want[o][i] + 10 * c);
            image_free(&img);
        }
    }
}

/* "A JPEG with each of the 8 orientations classifies like the upright image": the upright image
 * is the Fashion-MNIST pullover, stored turned by the inverse of each orientation. */
static void test_orientations_classify_like_upright(void **state) {
    (void)state;
    vit_error err = {0};
    vit_context *ctx = vit_load(FASHION, NULL, &err); /* defaults: EXIF orientation applied */
    if (!ctx) fail_msg("%s", err.msg);
    vit_params raw_params = vit_default_params();
    raw_params.exif_orientation = 0;
    vit_context *raw = vit_load(FASHION, &raw_params, &err);
    if (!raw) fail_msg("%s", err.msg);
    vit_prediction upright, top;
    assert_int_equal(vit_classify_file(ctx, "tests/data/pullover.png", 1, &upright, &err), 1);
    assert_string_equal(upright.label, "Pullover");
    const size_t n = vit_input_floats(ctx);
    float *a = malloc(sizeof(float) * n), *b = malloc(sizeof(float) * n);
    for (int o = 1; o <= 8; o++) {
        char path[256];
        snprintf(path, sizeof path, DIR "/orient_%d.jpg", o);
        if (vit_classify_file(ctx, path, 1, &top, &err) != 1) fail_msg("%s", err.msg);
        print_message("  orientation %d: %s %.4f (upright: %s %.4f)\n", o, top.label, top.prob,
                      upright.label, upright.prob);
        assert_int_equal(top.index, upright.index);
        /* without EXIF orientation the model sees the stored, turned pixels */
        assert_int_equal(vit_preprocess_file(ctx, path, a, &err), 0);
        assert_int_equal(vit_preprocess_file(raw, path, b, &err), 0);
        assert_int_equal(memcmp(a, b, sizeof(float) * n) == 0, o == 1);
    }
    free(a);
    free(b);
    vit_free(ctx);
    vit_free(raw);
}

/* ---- the command line: classify applies EXIF orientation unless --no-exif; preprocess and eval
 * only with --exif ---- */

static const char *vit_bin(void) {
    const char *bin = getenv("VIT_BIN");
    return bin && *bin ? bin : "bin/vit";
}

/* Runs bin/vit with args (NULL-terminated), stdout into the file `out`; returns the exit status. */
static int run_vit(const char *const *args, const char *out) {
    const char *argv[24] = {vit_bin()};
    int n = 1;
    for (; args[n - 1]; n++) argv[n] = args[n - 1];
    argv[n] = NULL;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int null = open("/dev/null", O_WRONLY);
        if (fd < 0 || null < 0 || dup2(fd, 1) < 0 || dup2(null, 2) < 0) _exit(127);
        alarm(120);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static char *run_text(const char *const *args) {
    char out[4096];
    snprintf(out, sizeof out, "%s/vit.out", test_tmpdir());
    assert_int_equal(run_vit(args, out), 0);
    size_t n;
    char *text = (char *)read_whole_file(out, &n);
    assert_non_null(text);
    return text;
}

static void test_cli_flags(void **state) {
    (void)state;
    if (access(vit_bin(), X_OK) != 0) {
        print_message("SKIP %s: %s not built\n", __func__, vit_bin());
        skip();
    }
    const char *jpg = DIR "/orient_6.jpg";
    /* classify: upright by default, stored pixels with --no-exif */
    const char *on[] = {"classify", "-m", FASHION, "--json", "--logits", "-k", "1", jpg, NULL};
    const char *off[] = {"classify", "-m", FASHION,     "--json", "--logits",
                         "-k",       "1",  "--no-exif", jpg,      NULL};
    char *a = run_text(on), *b = run_text(off);
    assert_non_null(strstr(a, "\"label\": \"Pullover\""));
    assert_true(strcmp(a, b) != 0);
    free(a);
    free(b);
    /* preprocess: raw by default, upright with --exif; the same tensors as the library's */
    char t_raw[4096], t_exif[4096], out[4096];
    snprintf(t_raw, sizeof t_raw, "%s/raw.safetensors", test_tmpdir());
    snprintf(t_exif, sizeof t_exif, "%s/exif.safetensors", test_tmpdir());
    snprintf(out, sizeof out, "%s/vit.out", test_tmpdir());
    const char *p_raw[] = {"preprocess", "-m", FASHION, jpg, "-o", t_raw, NULL};
    const char *p_exif[] = {"preprocess", "-m", FASHION, "--exif", jpg, "-o", t_exif, NULL};
    assert_int_equal(run_vit(p_raw, out), 0);
    assert_int_equal(run_vit(p_exif, out), 0);
    vit_error err = {0};
    for (int exif = 0; exif <= 1; exif++) {
        vit_params params = vit_default_params();
        params.exif_orientation = exif;
        vit_context *ctx = vit_load(FASHION, &params, &err);
        assert_non_null(ctx);
        const size_t n = vit_input_floats(ctx);
        float *want = malloc(sizeof(float) * n);
        assert_int_equal(vit_preprocess_file(ctx, jpg, want, &err), 0);
        size_t numel = 0;
        float *got = test_read_tensor(exif ? t_exif : t_raw, "pixels", &numel);
        assert_non_null(got);
        assert_int_equal(numel, n);
        assert_memory_equal(got, want, sizeof(float) * n);
        free(got);
        free(want);
        vit_free(ctx);
    }
    /* eval: a class folder of the eight turned pullovers is all correct with --exif */
    char root[4096], cls[4200];
    snprintf(root, sizeof root, "%s/turned", test_tmpdir());
    snprintf(cls, sizeof cls, "%s/Pullover", root);
    assert_int_equal(mkdir(root, 0755) == 0 && mkdir(cls, 0755) == 0, 1);
    for (int o = 1; o <= 8; o++) {
        char from[256], name[32];
        snprintf(from, sizeof from, DIR "/orient_%d.jpg", o);
        snprintf(name, sizeof name, "Pullover/%d.jpg", o);
        size_t n;
        uint8_t *data = read_whole_file(from, &n);
        assert_non_null(data);
        char path[4400];
        snprintf(path, sizeof path, "%s/%s", root, name);
        FILE *f = fopen(path, "wb");
        assert_non_null(f);
        assert_int_equal(fwrite(data, 1, n, f), n);
        fclose(f);
        free(data);
    }
    const char *e_exif[] = {"eval", "-m", FASHION, "--exif", root, NULL};
    char *text = run_text(e_exif);
    assert_non_null(strstr(text, "top-1:     1.0000 (8/8)"));
    free(text);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pillow_pixels),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_pixel_limit),
        cmocka_unit_test(test_file_size_limit),
        cmocka_unit_test(test_truncated_and_corrupt),
        cmocka_unit_test(test_clear_messages),
        cmocka_unit_test(test_left_out_formats),
        cmocka_unit_test(test_exif_reader),
        cmocka_unit_test(test_orient_cases),
        cmocka_unit_test(test_orientations_classify_like_upright),
        cmocka_unit_test(test_cli_flags),
    };
    return cmocka_run_group_tests_name("formats", tests, setup, teardown);
}
