/* `vit eval` end to end: junk-filled folders, the ImageNet sample against its reference, class
 * mapping and exit statuses. Runs the binary named by $VIT_BIN (set by `make test`). */
#include "tests/testutil.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "image/image.h"
#include "image/plot.h"

#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

static const char *vit_bin(void) {
    const char *bin = getenv("VIT_BIN");
    if (bin && *bin) return bin;
    if (access("bin/vit", X_OK) == 0) return "bin/vit";
    fail_msg("VIT_BIN is not set and bin/vit does not exist (run through `make test`)");
    return NULL;
}

static char out_path[4096], err_path[4096];

/* Runs `vit eval ARGS...` (NULL-terminated) with stdout and stderr in files; returns its exit
 * status, or 128 + signal. A run longer than two minutes is killed: a hang fails the test. */
static int run_eval(const char *const *args) {
    snprintf(out_path, sizeof out_path, "%s/stdout.txt", test_tmpdir());
    snprintf(err_path, sizeof err_path, "%s/stderr.txt", test_tmpdir());
    const char *argv[32] = {vit_bin(), "eval"};
    int n = 2;
    for (; args[n - 2]; n++) argv[n] = args[n - 2];
    argv[n] = NULL;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int out = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int err = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (out < 0 || err < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0) _exit(127);
        alarm(120);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static char *read_text(const char *path) {
    size_t n;
    char *text = (char *)read_whole_file(path, &n);
    assert_non_null(text);
    text[n] = 0;
    return text;
}

static cJSON *read_json(const char *path) {
    char *text = read_text(path);
    cJSON *o = cJSON_Parse(text);
    if (!o) fail_msg("%s is not JSON: %.200s", path, text);
    free(text);
    return o;
}

static void copy_file(const char *from, const char *to) {
    size_t n;
    uint8_t *data = read_whole_file(from, &n);
    assert_non_null(data);
    FILE *f = fopen(to, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, n, f), n);
    fclose(f);
    free(data);
}

static void write_bytes(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, n, f), n);
    fclose(f);
}

/* A fresh directory under the test's temporary folder; returns its path (static, per slot). */
static const char *new_dir(const char *rel) {
    static char path[8][4096];
    static int slot;
    slot = (slot + 1) % 8;
    snprintf(path[slot], sizeof path[slot], "%s/%s", test_tmpdir(), rel);
    assert_int_equal(mkdir(path[slot], 0755), 0);
    return path[slot];
}

static const char *join(const char *dir, const char *name) {
    static char path[8][4096];
    static int slot;
    slot = (slot + 1) % 8;
    snprintf(path[slot], sizeof path[slot], "%s/%s", dir, name);
    return path[slot];
}

static const char *golden(const char *name) {
    return join(GOLDEN_IMAGES, name);
}

/* ---- bad files ---- */

static uint32_t crc32_of(const uint8_t *p, size_t n) {
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++) c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    }
    return c ^ 0xFFFFFFFFu;
}

static size_t put_be32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8),
    p[3] = (uint8_t)v;
    return 4;
}

static size_t put_chunk(uint8_t *p, const char *type, const uint8_t *data, uint32_t n) {
    size_t k = put_be32(p, n);
    memcpy(p + k, type, 4);
    if (n) memcpy(p + k + 4, data, n);
    return k + 4 + n + put_be32(p + k + 4 + n, crc32_of(p + k, 4 + n));
}

/* A valid PNG header for a 60000x60000 RGB image (correct CRCs), a tiny IDAT, IEND. */
static void write_png_bomb(const char *path) {
    uint8_t png[256], ihdr[13] = {0};
    static const uint8_t idat[] = {0x78, 0x01, 0x01, 0x00, 0x00, 0xFF, 0xFF, 0, 0, 0, 1};
    memcpy(png, "\x89PNG\r\n\x1a\n", 8);
    put_be32(ihdr, 60000), put_be32(ihdr + 4, 60000);
    ihdr[8] = 8, ihdr[9] = 2; /* 8-bit RGB */
    size_t n = 8 + put_chunk(png + 8, "IHDR", ihdr, 13);
    n += put_chunk(png + n, "IDAT", idat, sizeof idat);
    n += put_chunk(png + n, "IEND", NULL, 0);
    write_bytes(path, png, n);
}

/* A real JPEG whose frame header (SOF) claims 60000x60000. */
static void write_jpeg_bomb(const char *from, const char *path) {
    size_t n, i = 2;
    uint8_t *j = read_whole_file(from, &n);
    assert_non_null(j);
    while (i + 9 < n && !(j[i] == 0xFF && j[i + 1] >= 0xC0 && j[i + 1] <= 0xC2))
        i += 2 + ((size_t)j[i + 2] << 8 | j[i + 3]);
    assert_true(i + 9 < n);
    j[i + 5] = j[i + 7] = 60000 >> 8;
    j[i + 6] = j[i + 8] = 60000 & 0xFF;
    write_bytes(path, j, n);
    free(j);
}

static void write_truncated(const char *from, const char *path) {
    size_t n;
    uint8_t *data = read_whole_file(from, &n);
    assert_non_null(data);
    write_bytes(path, data, n / 2);
    free(data);
}

/* A PNG whose first IDAT chunk keeps its data but carries a wrong CRC. */
static void write_bad_crc(const char *from, const char *path) {
    size_t n, i = 8, len = 0;
    uint8_t *p = read_whole_file(from, &n);
    assert_non_null(p);
    for (; i + 8 < n; i += 12 + len) {
        len = (size_t)p[i] << 24 | (size_t)p[i + 1] << 16 | (size_t)p[i + 2] << 8 | p[i + 3];
        if (memcmp(p + i + 4, "IDAT", 4) == 0) break;
    }
    assert_true(i + 12 + len <= n);
    p[i + 8 + len] ^= 0x55;
    write_bytes(path, p, n);
    free(p);
}

/* ---- the predictions file ---- */

typedef struct {
    char file[4096];
    int truth, pred;
    double prob;
} prediction;

/* Rows of a --predictions file after checking its header; returns the count. */
static int read_predictions(const char *path, prediction *rows, int max) {
    char *text = read_text(path), *save = NULL;
    char *line = strtok_r(text, "\n", &save);
    assert_non_null(line);
    assert_string_equal(line, "file\ttrue\tpredicted\tprobability");
    int n = 0;
    while ((line = strtok_r(NULL, "\n", &save)) != NULL) {
        assert_true(n < max);
        char *tab = strchr(line, '\t');
        assert_non_null(tab);
        *tab = 0;
        snprintf(rows[n].file, sizeof rows[n].file, "%s", line);
        assert_int_equal(
            sscanf(tab + 1, "%d\t%d\t%lf", &rows[n].truth, &rows[n].pred, &rows[n].prob), 3);
        n++;
    }
    free(text);
    return n;
}

static const prediction *find_prediction(const prediction *rows, int n, const char *file) {
    for (int i = 0; i < n; i++)
        if (strcmp(rows[i].file, file) == 0) return &rows[i];
    return NULL;
}

/* micro-a's golden top-1 class and probability for a golden image. */
static void golden_top1(const cJSON *golden_json, const char *image, int *cls, double *prob) {
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(golden_json, "images")) {
        if (strcmp(cJSON_GetObjectItem(e, "image")->valuestring, image) != 0) continue;
        *cls = cJSON_GetArrayItem(cJSON_GetObjectItem(e, "top5"), 0)->valueint;
        *prob = cJSON_GetArrayItem(cJSON_GetObjectItem(e, "top5_probs"), 0)->valuedouble;
        return;
    }
    fail_msg("%s not in micro-a's golden.json", image);
}

/* ---- tests ---- */

/* Good images (every golden image, some nested, in folders matched by name), and junk beside
 * them. Every good image is evaluated with micro-a's golden prediction; every bad one is skipped
 * and named with its reason; files that are not images are ignored. */
static void test_junk_folder(void **state) {
    (void)state;
    const char *root = new_dir("junk");
    /* class_0 exact; "Class-1" and "CLASS 2" by the normalised-name rule */
    const char *dirs[] = {new_dir("junk/class_0"), new_dir("junk/Class-1"), new_dir("junk/CLASS 2"),
                          new_dir("junk/CLASS 2/nested"), new_dir("junk/CLASS 2/nested/deeper")};
    static const struct {
        const char *image;
        int dir, cls;
    } good[] = {
        {"rgb_64x48.png", 0, 0},
        {"rgb_300x200.png", 0, 0},
        {"rgb_17x23.png", 0, 0},
        {"rgba_80x80.png", 0, 0},
        {"rgba_alpha_90x70.png", 1, 1},
        {"gray_100x60.png", 1, 1},
        {"gray_alpha_50x50.png", 1, 1},
        {"palette_120x90.png", 1, 1},
        {"rgb_1x1.png", 2, 2},
        {"baseline_q90_240x180.jpg", 2, 2},
        {"progressive_200x150.jpg", 3, 2},
        {"gray_160x120.jpg", 3, 2},
        {"444_q95_128x96.jpg", 4, 2},
        {"tall_40x400.jpg", 4, 2},
        {"wide_500x37.png", 4, 2},
    };
    for (int i = 0; i < COUNT(good); i++)
        copy_file(golden(good[i].image), join(dirs[good[i].dir], good[i].image));
    /* upper-case extensions are images too */
    copy_file(golden("rgb_17x23.png"), join(dirs[1], "UPPER.PNG"));
    copy_file(golden("gray_160x120.jpg"), join(dirs[2], "upper.JPEG"));

    static const struct {
        const char *name;
        int dir;
        const char *reason; /* a word the reason must contain, or NULL for any */
    } bad[] = {
        {"empty.png", 0, "empty"},
        {"random.jpg", 0, NULL},
        {"text.png", 1, NULL},
        {"truncated.png", 1, "truncated"},
        {"truncated.jpg", 2, "truncated"},
        {"bad-crc.png", 3, "CRC"},
        {"bomb.png", 4, "60000"},
        {"bomb.jpeg", 4, "60000"},
    };
    write_bytes(join(dirs[0], "empty.png"), "", 0);
    uint8_t noise[4096];
    unsigned seed = 12345;
    for (size_t i = 0; i < sizeof noise; i++) noise[i] = (uint8_t)(rand_r(&seed) >> 7);
    noise[0] = 0x42; /* not the first byte of any image signature */
    write_bytes(join(dirs[0], "random.jpg"), noise, sizeof noise);
    const char text[] = "This is a text file with a .png name.\n";
    write_bytes(join(dirs[1], "text.png"), text, sizeof text - 1);
    write_truncated(golden("rgb_300x200.png"), join(dirs[1], "truncated.png"));
    write_truncated(golden("baseline_q90_240x180.jpg"), join(dirs[2], "truncated.jpg"));
    write_bad_crc(golden("rgb_64x48.png"), join(dirs[3], "bad-crc.png"));
    write_png_bomb(join(dirs[4], "bomb.png"));
    write_jpeg_bomb(golden("baseline_q90_240x180.jpg"), join(dirs[4], "bomb.jpeg"));
    /* not images: ignored, not reported */
    write_bytes(join(dirs[0], "notes.txt"), text, sizeof text - 1);
    write_bytes(join(dirs[1], "._rgb_64x48.png"), noise, 100); /* macOS metadata */
    write_bytes(join(root, "README.md"), text, sizeof text - 1);

    char json[4096], preds[4096];
    snprintf(json, sizeof json, "%s/junk.json", test_tmpdir());
    snprintf(preds, sizeof preds, "%s/junk.tsv", test_tmpdir());
    const char *args[] = {"-m",  MICRO_A, "--json-file", json, "--predictions",
                          preds, "-b",    "4",           root, NULL};
    int status = run_eval(args);
    char *err_text = read_text(err_path);
    if (status != 0) fail_msg("exit %d; stderr: %.2000s", status, err_text);

    const int num_good = COUNT(good) + 2, num_bad = COUNT(bad);
    cJSON *o = read_json(json);
    assert_int_equal(cJSON_GetObjectItem(o, "images")->valueint, num_good);
    assert_int_equal(cJSON_GetObjectItem(o, "skipped")->valueint, num_bad);
    const cJSON *errors = cJSON_GetObjectItem(o, "errors");
    assert_int_equal(cJSON_GetArraySize(errors), num_bad);
    for (int i = 0; i < num_bad; i++) {
        const char *path = join(dirs[bad[i].dir], bad[i].name);
        const cJSON *e, *found = NULL;
        cJSON_ArrayForEach(e, errors) if (strcmp(cJSON_GetObjectItem(e, "file")->valuestring,
                                                 path) == 0) found = e;
        if (!found) fail_msg("%s is not among the errors", path);
        const char *reason = cJSON_GetObjectItem(found, "error")->valuestring;
        assert_true(strlen(reason) > 5);
        if (bad[i].reason && !strcasestr(reason, bad[i].reason))
            fail_msg("%s: reason '%s' does not mention '%s'", path, reason, bad[i].reason);
        if (!strstr(err_text, path))
            fail_msg("%s is not named on stderr", path); /* as it happens */
    }
    cJSON_Delete(o);
    free(err_text);

    /* The human report lists every skipped file too. */
    char *report = read_text(out_path);
    for (int i = 0; i < num_bad; i++)
        assert_non_null(strstr(report, join(dirs[bad[i].dir], bad[i].name)));
    assert_null(strstr(report, "notes.txt"));
    assert_null(strstr(report, "._rgb"));
    free(report);

    static prediction rows[64];
    int n = read_predictions(preds, rows, 64);
    assert_int_equal(n, num_good);
    cJSON *gold = read_json(MICRO_A "/golden.json");
    for (int i = 0; i < COUNT(good); i++) {
        const prediction *p = find_prediction(rows, n, join(dirs[good[i].dir], good[i].image));
        if (!p) fail_msg("%s was not evaluated", good[i].image);
        int cls;
        double prob;
        golden_top1(gold, good[i].image, &cls, &prob);
        assert_int_equal(p->truth, good[i].cls);
        assert_int_equal(p->pred, cls);
        assert_float_equal(p->prob, prob, 2e-4);
    }
    assert_non_null(find_prediction(rows, n, join(dirs[1], "UPPER.PNG")));
    assert_non_null(find_prediction(rows, n, join(dirs[2], "upper.JPEG")));
    cJSON_Delete(gold);
}

/* The acceptance figures: top-1 0.86, top-5 0.99, every prediction as the reference's. */
static void test_imagenet_sample(void **state) {
    (void)state;
    REQUIRE_SHARED("data/imagenet-sample-100");
    char json[4096], preds[4096];
    snprintf(json, sizeof json, "%s/in.json", test_tmpdir());
    snprintf(preds, sizeof preds, "%s/in.tsv", test_tmpdir());
    const char *args[] = {"-m",
                          shared_path("models/vit-tiny-in1k"),
                          "--class-map",
                          shared_path("data/imagenet-wnids.txt"),
                          "--json-file",
                          json,
                          "--predictions",
                          preds,
                          shared_path("data/imagenet-sample-100"),
                          NULL};
    int status = run_eval(args);
    if (status != 0) fail_msg("exit %d; stderr: %.2000s", status, read_text(err_path));
    cJSON *o = read_json(json);
    assert_int_equal(cJSON_GetObjectItem(o, "images")->valueint, 100);
    assert_int_equal(cJSON_GetObjectItem(o, "skipped")->valueint, 0);
    assert_float_equal(cJSON_GetObjectItem(o, "top1")->valuedouble, 0.86, 1e-12);
    assert_float_equal(cJSON_GetObjectItem(o, "top5")->valuedouble, 0.99, 1e-12);
    cJSON_Delete(o);

    static prediction rows[128];
    int n = read_predictions(preds, rows, 128);
    assert_int_equal(n, 100);
    char *ref = read_text(shared_path("data/imagenet-sample-100.reference.tsv")), *save = NULL;
    int checked = 0;
    for (char *line = strtok_r(ref, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char name[256];
        int truth, pred;
        assert_int_equal(sscanf(line, "%255[^\t]\t%d\t%d", name, &truth, &pred), 3);
        const prediction *p = NULL;
        for (int i = 0; i < n && !p; i++) {
            const char *base = strrchr(rows[i].file, '/');
            if (base && strcmp(base + 1, name) == 0) p = &rows[i];
        }
        if (!p) fail_msg("%s: not evaluated", name);
        if (p->truth != truth || p->pred != pred)
            fail_msg("%s: true %d predicted %d, reference %d %d", name, p->truth, p->pred, truth,
                     pred);
        checked++;
    }
    assert_int_equal(checked, 100);
    free(ref);
}

/* Folders under root holding a copy of rgb_64x48.png each. */
static const char *folders_with_an_image(const char *root_rel, const char *const *names, int n) {
    const char *root = new_dir(root_rel);
    for (int i = 0; i < n; i++) {
        char rel[512];
        snprintf(rel, sizeof rel, "%s/%s", root_rel, names[i]);
        copy_file(golden("rgb_64x48.png"), join(new_dir(rel), "img.png"));
    }
    return root;
}

static void test_unmatched_folder_is_an_error(void **state) {
    (void)state;
    const char *names[] = {"class_0", "dogs", "class_1"};
    const char *root = folders_with_an_image("unmatched", names, 3);
    const char *args[] = {"-m", MICRO_A, root, NULL};
    assert_int_equal(run_eval(args), 2);
    char *err = read_text(err_path);
    assert_non_null(strstr(err, "'dogs'"));
    int lines = 0;
    for (const char *c = err; *c; c++) lines += *c == '\n';
    assert_int_equal(lines, 1); /* one line */
    free(err);
}

/* No folder name matches, as many folders as labels: sorted order, with a warning. */
static void test_sorted_order_fallback(void **state) {
    (void)state;
    const char *names[] = {"e", "c", "a", "d", "b"};
    const char *root = folders_with_an_image("ordered", names, 5);
    char preds[4096];
    snprintf(preds, sizeof preds, "%s/ordered.tsv", test_tmpdir());
    const char *args[] = {"-m", MICRO_A, "--predictions", preds, root, NULL};
    assert_int_equal(run_eval(args), 0);
    char *err = read_text(err_path);
    assert_non_null(strstr(err, "warning"));
    free(err);
    prediction rows[8];
    assert_int_equal(read_predictions(preds, rows, 8), 5);
    for (int i = 0; i < 5; i++) {
        const char *folder = rows[i].file + strlen(root) + 1;
        assert_int_equal(rows[i].truth, folder[0] - 'a');
    }
    /* four folders for five labels: an error instead */
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "rm -r '%s'", join(root, "e"));
    assert_int_equal(system(cmd), 0);
    assert_int_equal(run_eval(args), 2);
}

static void test_class_map(void **state) {
    (void)state;
    const char *names[] = {"four", "two"};
    const char *root = folders_with_an_image("mapped", names, 2);
    const char map[] = "zero\none\ntwo\nthree\nfour\n";
    const char *map_path = write_temp_file("map.txt", map, sizeof map - 1);
    char preds[4096];
    snprintf(preds, sizeof preds, "%s/mapped.tsv", test_tmpdir());
    const char *args[] = {"-m",  MICRO_A, "--class-map", map_path, "--predictions",
                          preds, root,    NULL};
    assert_int_equal(run_eval(args), 0);
    prediction rows[4];
    assert_int_equal(read_predictions(preds, rows, 4), 2);
    assert_int_equal(rows[0].truth, 4); /* "four" sorts first */
    assert_int_equal(rows[1].truth, 2);
    /* a folder the map does not list */
    new_dir("mapped/seven");
    assert_int_equal(run_eval(args), 2);
    char *err = read_text(err_path);
    assert_non_null(strstr(err, "'seven'"));
    free(err);
}

static void test_json_on_stdout(void **state) {
    (void)state;
    const char *names[] = {"class_3"};
    const char *root = folders_with_an_image("json", names, 1);
    const char *args[] = {"-m", MICRO_A, "--json", root, NULL};
    assert_int_equal(run_eval(args), 0);
    cJSON *o = read_json(out_path); /* nothing but the document */
    static const char *keys[] = {"model",   "data",      "images",  "skipped",
                                 "top1",    "top5",      "seconds", "images_per_second",
                                 "classes", "confusion", "errors"};
    for (int i = 0; i < COUNT(keys); i++)
        if (!cJSON_GetObjectItem(o, keys[i])) fail_msg("no \"%s\"", keys[i]);
    const cJSON *c = cJSON_GetArrayItem(cJSON_GetObjectItem(o, "classes"), 0);
    static const char *class_keys[] = {"index",   "label",     "folder", "count",
                                       "correct", "precision", "recall"};
    for (int i = 0; i < COUNT(class_keys); i++)
        if (!cJSON_GetObjectItem(c, class_keys[i])) fail_msg("no classes[0].\"%s\"", class_keys[i]);
    assert_string_equal(cJSON_GetObjectItem(c, "folder")->valuestring, "class_3");
    assert_int_equal(cJSON_GetObjectItem(c, "index")->valueint, 3);
    cJSON_Delete(o);
}

/* --confusion-png: the picture of the JSON's confusion matrix, as tall as its rows (plot_matrix's
 * layout), the diagonal cell of a class all of whose images were predicted right darkest blue;
 * a path that cannot be written: exit 1 naming it. */
static void test_confusion_picture(void **state) {
    (void)state;
    const char *names[] = {"class_1", "class_3"};
    const char *root = folders_with_an_image("confusion", names, 2);
    const char *png = join(test_tmpdir(), "confusion.png"), *json = join(test_tmpdir(), "c.json");
    const char *args[] = {"-m", MICRO_A, "--json-file", json, "--confusion-png", png, root, NULL};
    assert_int_equal(run_eval(args), 0);
    cJSON *o = read_json(json);
    const cJSON *c = cJSON_GetObjectItem(o, "confusion");
    const cJSON *matrix = cJSON_GetObjectItem(c, "matrix");
    const int n = cJSON_GetArraySize(matrix);
    image_u8 img;
    vit_error err = {0};
    if (image_decode_file(png, 3, 0, 0, &img, &err) != 0) fail_msg("%s", err.msg);
    assert_int_equal(img.height, PLOT_MATRIX_TOP + n * PLOT_CELL_H + 12);
    const char *labels[PLOT_MAX_MATRIX];
    for (int i = 0; i < n; i++)
        labels[i] = cJSON_GetArrayItem(cJSON_GetObjectItem(c, "labels"), i)->valuestring;
    const int left = plot_matrix_left(labels, n);
    for (int i = 0; i < n; i++) {
        const cJSON *row = cJSON_GetArrayItem(matrix, i);
        int total = 0;
        for (int j = 0; j < n; j++) total += cJSON_GetArrayItem(row, j)->valueint;
        if (total == 0 || cJSON_GetArrayItem(row, i)->valueint != total) continue;
        const uint8_t *p =
            img.pixels + ((size_t)(PLOT_MATRIX_TOP + i * PLOT_CELL_H + 3) * img.width + left +
                          i * PLOT_CELL_W + 3) *
                             3;
        if (p[0] != 8 || p[1] != 48 || p[2] != 107)
            fail_msg("row %d all right, its diagonal cell is %d,%d,%d", i, p[0], p[1], p[2]);
    }
    image_free(&img);
    cJSON_Delete(o);
    const char *bad[] = {"-m", MICRO_A, "--confusion-png", "/nonexistent/dir/c.png", root, NULL};
    assert_int_equal(run_eval(bad), 1);
    char *e = read_text(err_path);
    assert_non_null(strstr(e, "/nonexistent/dir/c.png"));
    free(e);
}

/* The shipped CIFAR-10 model (models/vit-tiny-cifar10, F16) on the first 100 test images of each
 * class, against the float64 reference of tools/cifar10_reference.py (Pillow's preprocessing, the
 * model's own weights): every prediction the same (the reference's smallest lead of the top
 * logit is far above fp32's error), each probability within 1e-4, hence the same top-1. */
static void test_shipped_cifar10(void **state) {
    (void)state;
    REQUIRE_SHARED("data/cifar10/cifar10-test.tar.gz");
    const char *dir = new_dir("cifar10");
    char cmd[8400];
    snprintf(cmd, sizeof cmd, "tar -xzf '%s' -C '%s' --wildcards 'test/*/00[0-9][0-9].jpg'",
             shared_path("data/cifar10/cifar10-test.tar.gz"), dir);
    assert_int_equal(system(cmd), 0);
    char data[4200], preds[4200], json[4200], file[4500];
    snprintf(data, sizeof data, "%s/test", dir);
    snprintf(preds, sizeof preds, "%s/preds.tsv", dir);
    snprintf(json, sizeof json, "%s/eval.json", dir);
    const char *args[] = {
        "-m", "models/vit-tiny-cifar10", "--predictions", preds, "--json-file", json, data, NULL};
    const int status = run_eval(args);
    if (status != 0) fail_msg("exit %d; stderr: %.2000s", status, read_text(err_path));
    static prediction rows[1100];
    const int n = read_predictions(preds, rows, 1100);
    assert_int_equal(n, 1000);
    char *ref = read_text(TEST_DATA "/cifar10-test-1000.reference.tsv"), *save = NULL;
    int checked = 0, right = 0;
    for (char *line = strtok_r(ref, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char name[256];
        int truth, pred;
        double prob, gap;
        assert_int_equal(
            sscanf(line, "%255[^\t]\t%d\t%d\t%lf\t%lf", name, &truth, &pred, &prob, &gap), 5);
        snprintf(file, sizeof file, "%s/%s", data, name);
        const prediction *p = find_prediction(rows, n, file);
        if (!p) fail_msg("%s: not evaluated", name);
        if (p->truth != truth || p->pred != pred)
            fail_msg("%s: vit says true %d predicted %d, the reference %d and %d (lead %g)", name,
                     p->truth, p->pred, truth, pred, gap);
        if (fabs(p->prob - prob) > 1e-4)
            fail_msg("%s: probability %.6f, the reference %.6f", name, p->prob, prob);
        right += pred == truth;
        checked++;
    }
    assert_int_equal(checked, 1000);
    cJSON *o = read_json(json);
    assert_float_equal(cJSON_GetObjectItem(o, "top1")->valuedouble, right / 1000.0, 1e-12);
    print_message("  shipped vit-tiny-cifar10 on 1000 test images: top-1 %.3f, as the reference\n",
                  right / 1000.0);
    cJSON_Delete(o);
    free(ref);
}

static void test_exit_statuses(void **state) {
    (void)state;
    const char *model = MICRO_A;
    /* only undecodable files: nothing evaluated */
    const char *root = new_dir("allbad");
    write_bytes(join(new_dir("allbad/class_0"), "x.png"), "junk", 4);
    const char *all_bad[] = {"-m", model, root, NULL};
    assert_int_equal(run_eval(all_bad), 2);
    /* class folders without any image */
    const char *no_images[] = {"-m", model, new_dir("noimages"), NULL};
    new_dir("noimages/class_0");
    assert_int_equal(run_eval(no_images), 2);
    /* no class folder at all; a missing directory */
    const char *empty[] = {"-m", model, new_dir("emptydir"), NULL};
    assert_int_equal(run_eval(empty), 2);
    const char *missing[] = {"-m", model, "/nonexistent/folder", NULL};
    assert_int_equal(run_eval(missing), 2);
    char *err = read_text(err_path);
    assert_non_null(strstr(err, "/nonexistent/folder"));
    free(err);
    /* usage errors */
    const char *none[] = {"-m", model, NULL};
    assert_int_equal(run_eval(none), 2);
    const char *bad_batch[] = {"-m", model, "-b", "0", root, NULL};
    assert_int_equal(run_eval(bad_batch), 2);
    /* an output that cannot be written: a failed run */
    const char *names[] = {"class_1"};
    const char *ok = folders_with_an_image("okdir", names, 1);
    const char *bad_out[] = {"-m", model, "--json-file", "/nonexistent/out.json", ok, NULL};
    assert_int_equal(run_eval(bad_out), 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_junk_folder),
        cmocka_unit_test(test_imagenet_sample),
        cmocka_unit_test(test_unmatched_folder_is_an_error),
        cmocka_unit_test(test_sorted_order_fallback),
        cmocka_unit_test(test_class_map),
        cmocka_unit_test(test_json_on_stdout),
        cmocka_unit_test(test_exit_statuses),
        cmocka_unit_test(test_confusion_picture),
        cmocka_unit_test(test_shipped_cifar10),
    };
    return cmocka_run_group_tests_name("vit eval", tests, NULL, NULL);
}
