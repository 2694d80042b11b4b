/* vit render-lines and vit eval on text lines, through bin/vit: rendering is the same for any
 * thread count and --start, its files and labels.tsv agree, training lines never occur in SST-2's
 * held-out sentences (checked on the raw file); vit eval of the micro TrOCR model gives the error
 * counts computed here from `vit generate --json`'s texts with this file's own Levenshtein; another
 * recogniser's output is scored as hand-computed; every bad input is one line. */
#include "tests/testutil.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <ctype.h>
#include <sys/stat.h>

#include "image/image.h"

#define TROCR TEST_DATA "/ved-trocr-vit"

/* Runs vit with args; the result (free with test_run_free). */
static test_run_result run(const char *const *args) {
    return test_run_vit(NULL, NULL, args);
}

/* A failed run: the status, and one line on stderr containing want. */
static void expect_failure(const char *const *args, int status, const char *want) {
    test_run_result r = run(args);
    const char *nl = strchr(r.err, '\n');
    if (r.status != status || !strstr(r.err, want) || !nl || nl[1])
        fail_msg("vit %s: exit %d, stderr '%s'; want exit %d and one line with '%s'", args[0],
                 r.status, r.err, status, want);
    test_run_free(&r);
}

static const char *write_text(const char *name, const char *text) {
    return write_temp_file(name, text, strlen(text));
}

static char *dir_in_tmp(const char *name) {
    static char path[8][PATH_MAX];
    static int slot;
    char *p = path[slot++ % 8];
    snprintf(p, PATH_MAX, "%s/%s", test_tmpdir(), name);
    mkdir(p, 0777);
    return p;
}

static char *read_text(const char *dir, const char *name) {
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    char *t = (char *)read_whole_file(path, NULL);
    if (!t) fail_msg("%s: missing", path);
    return t;
}

/* ---- own Levenshtein over normalised code points and words ---- */

static int is_space(unsigned cp) { /* Unicode's White_Space */
    return cp == ' ' || (cp >= 9 && cp <= 13) || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
           (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F ||
           cp == 0x205F || cp == 0x3000;
}

/* Valid UTF-8 (as cJSON gives it) to code points, white space collapsed; returns the count. */
static int normalise(const char *s, unsigned *out) {
    int n = 0, space = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        unsigned cp = *p, extra = cp >= 0xF0 ? 3 : cp >= 0xE0 ? 2 : cp >= 0xC0 ? 1 : 0;
        if (extra) cp &= 0x3F >> extra;
        for (p++; extra--; p++) cp = cp << 6 | (*p & 0x3F);
        if (is_space(cp)) {
            space = n > 0;
            continue;
        }
        if (space) out[n++] = ' ';
        space = 0;
        out[n++] = cp;
    }
    return n;
}

/* A piece of a code point sequence: one character, or one word. */
typedef struct {
    const unsigned *start;
    int len;
} item;

static int same(item x, item y) {
    return x.len == y.len && memcmp(x.start, y.start, (size_t)x.len * sizeof *x.start) == 0;
}

/* The whole (n+1) x (m+1) table. */
static long levenshtein(const item *a, int n, const item *b, int m) {
    long *d = calloc((size_t)(n + 1) * (size_t)(m + 1), sizeof *d);
    for (int i = 0; i <= n; i++) d[i * (m + 1)] = i;
    for (int j = 0; j <= m; j++) d[j] = j;
    for (int i = 1; i <= n; i++)
        for (int j = 1; j <= m; j++) {
            long v = d[(i - 1) * (m + 1) + j - 1] + !same(a[i - 1], b[j - 1]);
            if (d[(i - 1) * (m + 1) + j] + 1 < v) v = d[(i - 1) * (m + 1) + j] + 1;
            if (d[i * (m + 1) + j - 1] + 1 < v) v = d[i * (m + 1) + j - 1] + 1;
            d[i * (m + 1) + j] = v;
        }
    const long r = d[n * (m + 1) + m];
    free(d);
    return r;
}

/* The characters (words 0) or the space-separated words (words 1) of cp[0..n). */
static int split(const unsigned *cp, int n, int words, item *out) {
    int k = 0;
    for (int i = 0; i < n;) {
        int j = i + 1;
        if (words)
            while (j < n && cp[j] != ' ') j++;
        out[k++] = (item){cp + i, j - i};
        i = words ? j + 1 : j;
    }
    return k;
}

typedef struct {
    long ce, c, we, w; /* character edits, characters, word edits, words */
} counts;

static counts own_counts(const char *truth, const char *read) {
    static unsigned a[4096], b[4096];
    static item ia[4096], ib[4096];
    const int n = normalise(truth, a), m = normalise(read, b);
    counts c = {.c = n};
    int ni = split(a, n, 0, ia), mi = split(b, m, 0, ib);
    c.ce = levenshtein(ia, ni, ib, mi);
    ni = split(a, n, 1, ia), mi = split(b, m, 1, ib);
    c.we = levenshtein(ia, ni, ib, mi), c.w = ni;
    return c;
}

/* ---- vit eval on text lines ---- */

static const char *const images[] = {"rgb_64x48.png", "tall_40x400.jpg", "palette_120x90.png",
                                     "wide_500x37.png"};
static const char *const truths[] = {"Hello world", "café 12,50 €", "", "The quick  brown fox"};

/* A folder whose labels.tsv names the golden images by absolute path, and those paths. */
static const char *line_folder(char paths[4][2 * PATH_MAX]) {
    const char *dir = dir_in_tmp("lines");
    char tsv[16384] = "", root[PATH_MAX];
    if (!realpath(GOLDEN_IMAGES, root)) fail_msg("%s: not found", GOLDEN_IMAGES);
    for (int i = 0; i < 4; i++) {
        snprintf(paths[i], sizeof paths[i], "%s/%s", root, images[i]);
        snprintf(tsv + strlen(tsv), sizeof tsv - strlen(tsv), "%s\t%s\n", paths[i], truths[i]);
    }
    write_text("lines/labels.tsv", tsv);
    return dir;
}

static cJSON *run_json(const char *const *args) {
    test_run_result r = run(args);
    if (r.status != 0) fail_msg("vit %s: exit %d: %s", args[0], r.status, r.err);
    cJSON *j = cJSON_Parse(r.out);
    if (!j) fail_msg("vit %s: not JSON: %s", args[0], r.out);
    test_run_free(&r);
    return j;
}

static long number(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItem(o, key);
    if (!cJSON_IsNumber(v)) fail_msg("no number '%s'", key);
    return (long)v->valuedouble;
}

/* The model's texts by `vit generate --json`, then vit eval's counts against this file's. */
static void test_eval_model(void **state) {
    (void)state;
    REQUIRE_BIN();
    char paths[4][2 * PATH_MAX];
    const char *dir = line_folder(paths);
    const char *const gen[] = {"generate", "-m",     TROCR,    "--json", paths[0],
                               paths[1],   paths[2], paths[3], NULL};
    test_run_result g = run(gen);
    assert_int_equal(g.status, 0);
    counts want[4], total = {0};
    char *line = strtok(g.out, "\n");
    for (int i = 0; i < 4; i++, line = strtok(NULL, "\n")) {
        cJSON *j = cJSON_Parse(line);
        assert_string_equal(cJSON_GetObjectItem(j, "file")->valuestring, paths[i]);
        want[i] = own_counts(truths[i], cJSON_GetObjectItem(j, "text")->valuestring);
        total.ce += want[i].ce, total.c += want[i].c, total.we += want[i].we, total.w += want[i].w;
        cJSON_Delete(j);
    }
    test_run_free(&g);
    const char *const eval[] = {"eval", "-m", TROCR, "--json", "--worst", "10", dir, NULL};
    cJSON *rep = run_json(eval);
    assert_int_equal(number(rep, "lines"), 4);
    assert_true(number(rep, "char_edits") == total.ce && number(rep, "chars") == total.c);
    assert_true(number(rep, "word_edits") == total.we && number(rep, "words") == total.w);
    const cJSON *worst = cJSON_GetObjectItem(rep, "worst"), *w;
    cJSON_ArrayForEach(w, worst) {
        int i = 0;
        while (i < 4 && strcmp(paths[i], cJSON_GetObjectItem(w, "file")->valuestring)) i++;
        assert_true(i < 4);
        assert_true(number(w, "char_edits") == want[i].ce && number(w, "chars") == want[i].c);
        assert_true(number(w, "word_edits") == want[i].we && number(w, "words") == want[i].w);
    }
    const char *const one[] = {"eval", "-m", TROCR, "-b", "1", "--json", dir, NULL};
    cJSON *rep1 = run_json(one); /* one image a call: the same texts */
    assert_true(number(rep1, "char_edits") == total.ce && number(rep1, "word_edits") == total.we);
    cJSON_Delete(rep1);
    cJSON_Delete(rep);
}

static void test_eval_model_outputs(void **state) {
    (void)state;
    REQUIRE_BIN();
    char paths[4][2 * PATH_MAX], pred[2 * PATH_MAX];
    const char *dir = line_folder(paths);
    snprintf(pred, sizeof pred, "%s/pred.tsv", test_tmpdir());
    const char *const args[] = {"eval", "-m", TROCR, "--predictions", pred, dir, NULL};
    test_run_result r = run(args);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "CER: "));
    assert_non_null(strstr(r.out, "lines/s"));
    assert_non_null(strstr(r.out, "worst lines"));
    test_run_free(&r);
    char *rows = (char *)read_whole_file(pred, NULL);
    int n = 0;
    for (char *p = rows; (p = strchr(p, '\n')); p++) n++;
    assert_int_equal(n, 5); /* a header and the four lines */
    assert_true(strncmp(rows, "file\ttrue\tread\tchar_edits\tchars\n", 31) == 0);
    free(rows);
}

static void test_eval_skips(void **state) {
    (void)state;
    REQUIRE_BIN();
    char root[PATH_MAX], tsv[2 * PATH_MAX];
    if (!realpath(GOLDEN_IMAGES, root)) fail_msg("no %s", GOLDEN_IMAGES);
    snprintf(tsv, sizeof tsv, "%s/rgb_64x48.png\tok\nmissing.png\tgone\n", root);
    dir_in_tmp("skips");
    write_temp_file("skips/labels.tsv", tsv, strlen(tsv));
    const char *const args[] = {"eval", "-m", TROCR, dir_in_tmp("skips"), NULL};
    test_run_result r = run(args);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "1 line scored, 1 skipped"));
    assert_non_null(strstr(r.out, "missing.png: "));
    test_run_free(&r);
    dir_in_tmp("none");
    write_text("none/labels.tsv", "missing.png\tgone\n");
    const char *const none[] = {"eval", "-m", TROCR, dir_in_tmp("none"), NULL};
    expect_failure(none, 2, "no line could be read (1 skipped)");
}

/* Another recogniser's output, hand-computed: "Hello world" read "Hello  world!" (1 of 11
 * characters, 1 of 2 words), "café 12" read "cafe 12" (1 of 7, 1 of 2). */
static void test_eval_hypotheses(void **state) {
    (void)state;
    REQUIRE_BIN();
    const char *dir = dir_in_tmp("hyp");
    write_text("hyp/labels.tsv", "a.png\tHello world\nb.png\tcafé 12\n");
    const char *hyp = write_text("h.tsv", "b.png\tcafe 12\na.png\tHello  world!\n");
    const char *const args[] = {"eval", "--hypotheses", hyp, dir, NULL};
    test_run_result r = run(args);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "CER:   11.11% (2 character edits / 18 characters)"));
    assert_non_null(strstr(r.out, "WER:   50.00% (2 word edits / 4 words)"));
    assert_non_null(strstr(r.out, "hypotheses: "));
    assert_null(strstr(r.out, "lines/s")); /* not timed: the recogniser ran elsewhere */
    test_run_free(&r);
    const char *part = write_text("part.tsv", "a.png\tHello world\n");
    const char *const missing[] = {"eval", "--hypotheses", part, dir, NULL};
    expect_failure(missing, 2, "part.tsv: no line for b.png");
    write_text("hyp/bad.tsv", "a.png\tx\nno tab\n");
    char bad[PATH_MAX];
    snprintf(bad, sizeof bad, "%s/bad.tsv", dir);
    const char *const bad_labels[] = {"eval", "--hypotheses", hyp, bad, NULL};
    expect_failure(bad_labels, 2, "bad.tsv:2: no tab between file and text");
    const char *const no_labels[] = {"eval", "--hypotheses", hyp, "/nonexistent", NULL};
    expect_failure(no_labels, 2, "/nonexistent");
    const char *const empty[] = {"eval", "--hypotheses", hyp, dir_in_tmp("empty"), NULL};
    expect_failure(empty, 2, "empty has no labels.tsv");
}

/* ---- vit render-lines ---- */

#define DEJAVU "/usr/share/fonts/truetype/dejavu/"

/* A font list of DejaVu core fonts, or NULL after a loud skip (no FreeType in vit, no fonts). */
static const char *font_list(void) {
    static const char *const fonts[] = {DEJAVU "DejaVuSans.ttf", DEJAVU "DejaVuSerif.ttf",
                                        DEJAVU "DejaVuSansMono-Bold.ttf"};
    char list[1024] = "# test fonts\n";
    for (int i = 0; i < 3; i++) {
        if (access(fonts[i], R_OK) != 0) {
            print_message("SKIP: %s missing (Debian's fonts-dejavu-core)\n", fonts[i]);
            return NULL;
        }
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s fonts-dejavu-core\n",
                 fonts[i]);
    }
    const char *path = write_text("fonts.txt", list);
    const char *const probe[] = {"render-lines",      "--fonts", path, "--out",
                                 dir_in_tmp("probe"), "-n",      "1",  NULL};
    test_run_result r = run(probe);
    const int built = !strstr(r.err, "not built in");
    test_run_free(&r);
    if (!built) print_message("SKIP: this vit was built without FreeType\n");
    return built ? path : NULL;
}

#define REQUIRE_FONTS(list)                                                                        \
    REQUIRE_BIN();                                                                                 \
    const char *list = font_list();                                                                \
    if (!list) skip()

static void render_into(const char *fonts, const char *dir, const char *threads, const char *start,
                        const char *count) {
    const char *const args[] = {"render-lines", "--fonts",   fonts,     "--out", dir,
                                "-t",           threads,     "--start", start,   "-n",
                                count,          "--degrade", "0.6",     NULL};
    test_run_result r = run(args);
    if (r.status != 0) fail_msg("vit render-lines: exit %d: %s", r.status, r.err);
    test_run_free(&r);
}

/* Whether dir_a/name and dir_b/name hold the same bytes. */
static int same_file(const char *a, const char *b, const char *name) {
    char pa[PATH_MAX], pb[PATH_MAX];
    snprintf(pa, sizeof pa, "%s/%s", a, name);
    snprintf(pb, sizeof pb, "%s/%s", b, name);
    size_t na, nb;
    uint8_t *x = read_whole_file(pa, &na), *y = read_whole_file(pb, &nb);
    const int same = x && y && na == nb && memcmp(x, y, na) == 0;
    free(x), free(y);
    return same;
}

static void test_render_threads_and_start(void **state) {
    (void)state;
    REQUIRE_FONTS(fonts);
    const char *one = dir_in_tmp("one"), *two = dir_in_tmp("two"), *part = dir_in_tmp("part");
    render_into(fonts, one, "1", "0", "12");
    render_into(fonts, two, "2", "0", "12");
    render_into(fonts, part, "2", "5", "4");
    assert_true(same_file(one, two, "labels.tsv") && same_file(one, two, "render.tsv"));
    char *labels = read_text(one, "labels.tsv"), *sub = read_text(part, "labels.tsv");
    int rows = 0;
    for (char *line = strtok(labels, "\n"); line; line = strtok(NULL, "\n"), rows++) {
        char *tab = strchr(line, '\t');
        assert_non_null(tab);
        *tab = 0;
        assert_true(strlen(tab + 1) > 0);
        assert_true(same_file(one, two, line));
        if (rows >= 5 && rows < 9) {
            assert_true(same_file(one, part, line));
            assert_non_null(strstr(sub, line)); /* and its label row, the same text */
            assert_non_null(strstr(sub, tab + 1));
        }
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/%s", one, line);
        image_u8 img;
        vit_error err = {{0}};
        assert_int_equal(image_decode_file(path, 1, 0, 0, &img, &err), 0);
        assert_true(img.width == 384 && img.height == 32);
        uint8_t darkest = 255;
        for (int i = 0; i < 384 * 32; i++)
            darkest = img.pixels[i] < darkest ? img.pixels[i] : darkest;
        assert_true(darkest < 160); /* there is ink */
        image_free(&img);
    }
    assert_int_equal(rows, 12);
    free(labels), free(sub);
}

static void test_render_clean(void **state) {
    (void)state;
    REQUIRE_FONTS(fonts);
    const char *dir = dir_in_tmp("clean");
    const char *const args[] = {"render-lines", "--fonts", fonts,       "--out", dir,
                                "-n",           "20",      "--degrade", "0",     "--height",
                                "48",           "--width", "256",       NULL};
    test_run_result r = run(args);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "20 lines (0 degraded, 0 as JPEG)"));
    test_run_free(&r);
    char *info = read_text(dir, "render.tsv");
    assert_true(strncmp(info, "file\tfont\tcap_height\tdegraded", 29) == 0);
    assert_null(strstr(info, ".jpg"));
    free(info);
}

static void test_render_errors(void **state) {
    (void)state;
    REQUIRE_BIN();
    const char *out = dir_in_tmp("errors");
    const char *const no_fonts[] = {"render-lines", "--out", out, NULL};
    expect_failure(no_fonts, 2, "no --fonts FILE given");
    const char *list = write_text("missing-fonts.txt", "# x\n\n/nonexistent/x.ttf fonts-x\n");
    const char *const missing[] = {"render-lines", "--fonts", list, "--out", out, NULL};
    expect_failure(missing, 1,
                   "missing-fonts.txt:3: /nonexistent/x.ttf: No such file or "
                   "directory (Debian package fonts-x; make deps-ocr installs it)");
    const char *const narrow[] = {"render-lines", "--fonts", list, "--out", out,
                                  "--width",      "100",     NULL};
    expect_failure(narrow, 2, "--width 100 is less than 4 x --height (128)");
    const char *const held[] = {"render-lines", "--fonts", list, "--out", out,
                                "--held-out",   list,      NULL};
    expect_failure(held, 2, "--held-out without --sentences");
    const char *const share[] = {"render-lines", "--fonts", list, "--out", out,
                                 "--degrade",    "1.5",     NULL};
    expect_failure(share, 2, "--degrade");
}

static void test_render_sentences(void **state) {
    (void)state;
    REQUIRE_FONTS(fonts);
    const char *const bad[] = {
        "render-lines",       "--fonts", fonts, "--out", dir_in_tmp("s"), "--sentences",
        "/nonexistent/s.tsv", NULL};
    expect_failure(bad, 1, "/nonexistent/s.tsv");
}

/* Lowered, without spaces, SST-2's quotes as the renderer writes them: "it 's `` good ''" and
 * "it's \"good\"" become the same. */
static void squeeze(const char *in, char *out) {
    for (; *in; in++) {
        if (*in == ' ' || *in == '\t') continue;
        if (*in == '`' && in[1] == '`')
            *out++ = '"', in++;
        else if (*in == '\'' && in[1] == '\'')
            *out++ = '"', in++;
        else
            *out++ = *in == '`' ? '\'' : (char)tolower((unsigned char)*in);
    }
    *out = 0;
}

/* Training lines from train.tsv never occur in dev.tsv's sentences (the raw file, checked here). */
static void test_render_held_out_sst2(void **state) {
    (void)state;
    REQUIRE_SHARED("data/sst2/train.tsv");
    REQUIRE_SHARED("data/sst2/dev.tsv");
    REQUIRE_FONTS(fonts);
    char train[PATH_MAX], dev[PATH_MAX];
    snprintf(train, sizeof train, "%s", shared_path("data/sst2/train.tsv"));
    snprintf(dev, sizeof dev, "%s", shared_path("data/sst2/dev.tsv"));
    const char *dir = dir_in_tmp("sst2");
    const char *const args[] = {"render-lines",
                                "--fonts",
                                fonts,
                                "--out",
                                dir,
                                "-n",
                                "300",
                                "--sentences",
                                train,
                                "--held-out",
                                dev,
                                "--generated",
                                "0",
                                "--upper",
                                "0",
                                "--title",
                                "0",
                                NULL};
    test_run_result r = run(args);
    assert_int_equal(r.status, 0);
    test_run_free(&r);
    char *raw = (char *)read_whole_file(dev, NULL), *held = malloc(strlen(raw) + 1);
    squeeze(raw, held);
    char *labels = read_text(dir, "labels.tsv"), text[1024];
    int checked = 0;
    for (char *line = strtok(labels, "\n"); line; line = strtok(NULL, "\n")) {
        squeeze(strchr(line, '\t') + 1, text);
        if (strlen(text) < 12) continue; /* short pieces may join across words by chance */
        if (strstr(held, text)) fail_msg("'%s' occurs in dev.tsv", line);
        checked++;
    }
    assert_true(checked > 250);
    free(raw), free(held), free(labels);
}

/* --crop: the same files for 1 and 2 threads; each image's size and the label's box in
 * render.tsv agree with the file; given texts are drawn as written; bad texts and heights are one
 * line each. */
static void test_render_crop(void **state) {
    (void)state;
    REQUIRE_FONTS(fonts);
    const char *dirs[2] = {dir_in_tmp("crop1"), dir_in_tmp("crop2")};
    for (int t = 0; t < 2; t++) {
        const char *const args[] = {"render-lines", "--fonts",     fonts, "--out", dirs[t],
                                    "-t",           t ? "2" : "1", "-n",  "24",    "--crop",
                                    "--degrade",    "0.5",         NULL};
        test_run_result r = run(args);
        if (r.status != 0) fail_msg("vit render-lines --crop: exit %d: %s", r.status, r.err);
        test_run_free(&r);
    }
    assert_true(same_file(dirs[0], dirs[1], "labels.tsv") &&
                same_file(dirs[0], dirs[1], "render.tsv"));
    char *info = read_text(dirs[0], "render.tsv");
    assert_non_null(strstr(info, "\tline_height\twidth\theight\tbox_x0\tbox_y0\tbox_x1\tbox_y1\t"
                                 "tight\tneighbours\tkind\n"));
    int rows = 0;
    for (char *line = strtok(strchr(info, '\n') + 1, "\n"); line; line = strtok(NULL, "\n")) {
        char name[64], font[256];
        float f[12], size;
        int jpeg, w, h, box[4], tight, neighbours;
        char kind[32];
        const int n = sscanf(line,
                             "%63s %255s %f %f %f %f %f %f %f %f %f %f %d %f %d %d %d %d %d %d %d "
                             "%d %31s",
                             name, font, &f[0], &f[1], &f[2], &f[3], &f[4], &f[5], &f[6], &f[7],
                             &f[8], &f[9], &jpeg, &size, &w, &h, &box[0], &box[1], &box[2], &box[3],
                             &tight, &neighbours, kind);
        if (n != 23) fail_msg("render.tsv row '%s': %d fields", line, n);
        assert_true(same_file(dirs[0], dirs[1], name));
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/%s", dirs[0], name);
        image_u8 img;
        vit_error err = {{0}};
        assert_int_equal(image_decode_file(path, 1, 0, 0, &img, &err), 0);
        assert_true(img.width == w && img.height == h && size >= 16 && size <= 96);
        assert_true(box[0] >= 0 && box[1] >= 0 && box[2] <= w && box[3] <= h);
        assert_true((strstr(name, ".jpg") != NULL) == (jpeg > 0));
        image_free(&img);
        rows++;
    }
    assert_int_equal(rows, 24);
    free(info);
    const char *texts =
        write_text("texts.txt", "The last step of the\n\ninput array accordingly\n");
    const char *dir = dir_in_tmp("given");
    const char *const given[] = {
        "render-lines", "--fonts", fonts, "--out",         dir,  "-n",        "3", "--texts", texts,
        "--crop",       "--tight", "1",   "--line-height", "40", "--degrade", "0", NULL};
    test_run_result r = run(given);
    assert_int_equal(r.status, 0);
    test_run_free(&r);
    char *labels = read_text(dir, "labels.tsv");
    assert_string_equal(labels, "0000000.png\tThe last step of the\n0000001.png\tinput array "
                                "accordingly\n0000002.png\tThe last step of the\n");
    free(labels);
    const char *bad = write_text("bad-texts.txt", "fine\nsnow \xe2\x98\x83 man\n");
    const char *const bad_text[] = {"render-lines", "--fonts", fonts, "--out", dir,
                                    "--texts",      bad,       NULL};
    expect_failure(bad_text, 1, "bad-texts.txt:2: a character outside the OCR set");
    const char *const bad_height[] = {"render-lines", "--fonts",       fonts,   "--out", dir,
                                      "--crop",       "--line-height", "40-20", NULL};
    expect_failure(bad_height, 2, "--line-height '40-20' is not MIN-MAX");
}

/* The page's .txt (pages/N.png's pages/N.txt) holds text. */
static void check_page_text(const char *dir, const char *page, const char *text) {
    char txt[80];
    snprintf(txt, sizeof txt, "%.*s.txt", (int)strlen(page) - 4, page);
    char *got = read_text(dir, txt);
    assert_string_equal(got, text);
    free(got);
}

/* --pages: the same files for 1 and 2 threads; boxes.tsv's rows are labels.tsv's, each line's
 * image is its box's size and holds the page's pixels there; each page's .txt is its lines in
 * order; vit eval reads the line set (its own labels as hypotheses: no edits). */
static void test_render_pages(void **state) {
    (void)state;
    REQUIRE_FONTS(fonts);
    const char *dirs[2] = {dir_in_tmp("pages1"), dir_in_tmp("pages2")};
    for (int t = 0; t < 2; t++) {
        const char *const args[] = {
            "render-lines", "--fonts", fonts, "--out",   dirs[t],         "-t",
            t ? "2" : "1",  "-n",      "4",   "--pages", "--line-height", "24-40",
            "--degrade",    "0.5",     NULL};
        test_run_result r = run(args);
        if (r.status != 0) fail_msg("vit render-lines --pages: exit %d: %s", r.status, r.err);
        assert_non_null(strstr(r.out, ": 4 pages of "));
        test_run_free(&r);
    }
    assert_true(same_file(dirs[0], dirs[1], "labels.tsv") &&
                same_file(dirs[0], dirs[1], "boxes.tsv") &&
                same_file(dirs[0], dirs[1], "render.tsv"));
    char *boxes = read_text(dirs[0], "boxes.tsv"), *labels = read_text(dirs[0], "labels.tsv");
    static const char header[] = "file\tpage\tline\tcolumn\tx0\ty0\tx1\ty1\ttext\n";
    assert_true(strncmp(boxes, header, sizeof header - 1) == 0);
    char expect_labels[65536] = "", page_text[8192] = "", last_page[64] = "";
    int rows = 0;
    image_u8 page = {0};
    for (char *line = strtok(strchr(boxes, '\n') + 1, "\n"); line; line = strtok(NULL, "\n")) {
        char file[64], page_name[64];
        int k, column, b[4], at = 0;
        assert_int_equal(sscanf(line, "%63s %63s %d %d %d %d %d %d %n", file, page_name, &k,
                                &column, &b[0], &b[1], &b[2], &b[3], &at),
                         8);
        const char *text = line + at;
        snprintf(expect_labels + strlen(expect_labels),
                 sizeof expect_labels - strlen(expect_labels), "%s\t%s\n", file, text);
        char path[PATH_MAX];
        vit_error err = {{0}};
        if (strcmp(page_name, last_page) != 0) { /* a new page: the last one's text checked */
            if (last_page[0]) check_page_text(dirs[0], last_page, page_text);
            page_text[0] = 0;
            snprintf(last_page, sizeof last_page, "%s", page_name);
            image_free(&page);
            snprintf(path, sizeof path, "%s/%s", dirs[0], page_name);
            assert_int_equal(image_decode_file(path, 1, 0, 0, &page, &err), 0);
        }
        snprintf(page_text + strlen(page_text), sizeof page_text - strlen(page_text), "%s\n", text);
        snprintf(path, sizeof path, "%s/%s", dirs[0], file);
        image_u8 cut;
        assert_int_equal(image_decode_file(path, 1, 0, 0, &cut, &err), 0);
        assert_true(cut.width == b[2] - b[0] && cut.height == b[3] - b[1]);
        assert_true(b[2] <= page.width && b[3] <= page.height && b[0] >= 0 && b[1] >= 0);
        for (int y = 0; y < cut.height; y++)
            assert_memory_equal(cut.pixels + (size_t)y * (size_t)cut.width,
                                page.pixels + (size_t)(b[1] + y) * (size_t)page.width +
                                    (size_t)b[0],
                                (size_t)cut.width);
        assert_true(same_file(dirs[0], dirs[1], file) && same_file(dirs[0], dirs[1], page_name));
        image_free(&cut);
        rows++;
    }
    image_free(&page);
    check_page_text(dirs[0], last_page, page_text);
    assert_true(rows >= 8);
    assert_string_equal(labels, expect_labels);
    char hyp[PATH_MAX];
    snprintf(hyp, sizeof hyp, "%s/labels.tsv", dirs[1]);
    const char *const eval[] = {"eval", "--hypotheses", hyp, dirs[0], NULL};
    test_run_result r = run(eval);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "CER:   0.00% (0 character edits"));
    test_run_free(&r);
    free(boxes), free(labels);
    const char *const crop[] = {"render-lines", "--fonts", fonts,    "--out",
                                dirs[0],        "--pages", "--crop", NULL};
    expect_failure(crop, 2, "--pages draws its own paragraphs");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_eval_model),
        cmocka_unit_test(test_eval_model_outputs),
        cmocka_unit_test(test_eval_skips),
        cmocka_unit_test(test_eval_hypotheses),
        cmocka_unit_test(test_render_threads_and_start),
        cmocka_unit_test(test_render_clean),
        cmocka_unit_test(test_render_errors),
        cmocka_unit_test(test_render_sentences),
        cmocka_unit_test(test_render_held_out_sst2),
        cmocka_unit_test(test_render_crop),
        cmocka_unit_test(test_render_pages),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
