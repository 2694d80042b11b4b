/* Synthetic OCR lines (vit/data/ocr_text.h, ocr_effects.h, ocr_render.h; image/encode.h): the
 * text cleaning on hand-written cases, the character set, the draws staying inside it, the effects
 * on images whose result is known (constants, an impulse, a ramp), JPEG round trips, and the
 * renderer: deterministic per line, clean and degraded twins, held-out sentences never drawn, and
 * each clean line's ink spanning exactly the width FreeType gives its label (measured here with
 * FreeType directly). The renderer's tests need FreeType in the build and fonts-dejavu-core. */
#include "tests/testutil.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "image/encode.h"
#include "text/utf8.h"
#include "vit/base/rng.h"
#include "vit/data/ocr_effects.h"
#include "vit/data/ocr_render.h"
#include "vit/data/ocr_text.h"

#ifdef VIT_FREETYPE
#include <ft2build.h>
#include FT_FREETYPE_H
#endif

#define DEJAVU "/usr/share/fonts/truetype/dejavu/"

/* ---- text ---- */

static void expect_detokenized(const char *in, const char *want) {
    char out[512];
    const size_t n = ocr_detokenize(in, strlen(in), out);
    out[n] = 0;
    if (strcmp(out, want) != 0) fail_msg("detokenize \"%s\": \"%s\", want \"%s\"", in, out, want);
}

static void test_detokenize(void **state) {
    (void)state;
    expect_detokenized("it 's a `` charming '' film , is n't it ?",
                       "it's a \"charming\" film, isn't it?");
    expect_detokenized("-lrb- see -rrb- the movie ...", "(see) the movie...");
    expect_detokenized("ca n't pay $ 5 for 100 % of ` twist '", "can't pay $5 for 100% of 'twist'");
    expect_detokenized("they 're , we 've ; i 'd : you 'll !", "they're, we've; i'd: you'll!");
    expect_detokenized("'s a charming film", "a charming film"); /* a phrase cut inside */
    expect_detokenized(" , well   done  ", "well done");
    expect_detokenized("", "");
}

static void expect_cased(void (*fn)(char *, size_t), const char *in, const char *want) {
    char buf[256];
    snprintf(buf, sizeof buf, "%s", in);
    fn(buf, strlen(buf));
    if (strcmp(buf, want) != 0) fail_msg("\"%s\" -> \"%s\", want \"%s\"", in, buf, want);
}

static void test_case(void **state) {
    (void)state;
    expect_cased(ocr_sentence_case, "it's a film. and i'm sure i will. (really) is it?",
                 "It's a film. And I'm sure I will. (Really) is it?");
    expect_cased(ocr_sentence_case, "so i.e. this, i think", "So i.e. This, I think"); /* ". " */
    expect_cased(ocr_sentence_case, "éclair! 3 cakes", "Éclair! 3 cakes");
    expect_cased(ocr_upper_case, "café über ÿ ß 1a", "CAFÉ ÜBER ÿ ß 1A");
    expect_cased(ocr_fold_case, "ÀÉÎ Ünd ÷×", "àéî ünd ÷×");
    expect_cased(ocr_title_case, "élan vital of 2 cats", "Élan Vital Of 2 Cats");
}

static void test_charset(void **state) {
    (void)state;
    const uint8_t *s = (const uint8_t *)OCR_CHARSET;
    const size_t n = strlen(OCR_CHARSET);
    int count = 0;
    uint32_t prev = 0;
    for (size_t i = 0; i < n; count++) {
        const int32_t cp = utf8_decode(s, n, &i);
        assert_true(cp > 0 && ocr_charset_has((uint32_t)cp));
        assert_true((uint32_t)cp != prev);
        prev = (uint32_t)cp;
    }
    assert_int_equal(count, OCR_CHARSET_SIZE);
    int members = 0; /* the whole Basic Multilingual Plane: exactly the listed ones are in */
    for (uint32_t cp = 0; cp < 0x10000; cp++) members += ocr_charset_has(cp);
    assert_int_equal(members, OCR_CHARSET_SIZE);
    assert_false(ocr_charset_has('\t') || ocr_charset_has(0xD7) || ocr_charset_has(0x2019));
}

static void test_sentences(void **state) {
    (void)state;
    const char tsv[] =
        "sentence\tlabel\nit 's fine . \t1\r\nsnow \xe2\x98\x83 man\t0\n\nthe END\t1";
    ocr_sentences s;
    vit_error err = {{0}};
    assert_int_equal(ocr_sentences_parse(&s, tsv, sizeof tsv - 1, "t.tsv", 1, &err), 0);
    assert_int_equal(s.count, 2);
    assert_int_equal(s.dropped, 1); /* the snowman is outside the set */
    assert_string_equal(s.text, "It's fine.\nThe END\n");
    assert_true(ocr_sentences_contains(&s, "S FINE", 6));
    assert_true(ocr_sentences_contains(&s, "the end", 7));
    assert_false(ocr_sentences_contains(&s, "fine the", 8));
    ocr_sentences_free(&s);
    const char bad[] = "\xe2\x98\x83\n\t\n";
    assert_int_equal(ocr_sentences_parse(&s, bad, sizeof bad - 1, "bad.txt", 0, &err), -1);
    assert_non_null(strstr(err.msg, "bad.txt: no sentence"));
}

/* Every draw: valid UTF-8 of the set, single spaces, not empty, at most OCR_DRAW_BYTES. */
static void check_draw(const char *t, size_t n) {
    assert_true(n > 0 && n <= OCR_DRAW_BYTES && strlen(t) == n);
    assert_true(t[0] != ' ' && t[n - 1] != ' ' && !strstr(t, "  "));
    for (size_t i = 0; i < n;) {
        const int32_t cp = utf8_decode((const uint8_t *)t, n, &i);
        if (cp < 0 || !ocr_charset_has((uint32_t)cp)) fail_msg("outside the set: \"%s\"", t);
    }
}

static void test_draws(void **state) {
    (void)state;
    const char text[] = "alpha beta gamma delta epsilon\nZeta eta theta iota kappa lambda mu\n";
    ocr_sentences s;
    vit_error err = {{0}};
    assert_int_equal(ocr_sentences_parse(&s, text, sizeof text - 1, "g", 0, &err), 0);
    const ocr_text_options mixed = OCR_TEXT_DEFAULTS;
    char a[OCR_DRAW_BYTES + 1], b[OCR_DRAW_BYTES + 1];
    for (int i = 0; i < 3000; i++) {
        uint64_t r1 = rng_derive(3, (uint64_t)i, 1), r2 = r1;
        const size_t n = ocr_text_draw(&s, &mixed, &r1, a, sizeof a);
        check_draw(a, n);
        assert_int_equal(ocr_text_draw(&s, &mixed, &r2, b, sizeof b), n); /* same state, same */
        assert_string_equal(a, b);
        check_draw(a, ocr_text_draw(NULL, &mixed, &r1, a, sizeof a)); /* generated only */
    }
    ocr_sentences_free(&s);
    /* phrases joined: "two," ends in a full stop instead, "four" gets one; nothing else added */
    const char phrases[] = "one two,\nthree four\n";
    assert_int_equal(ocr_sentences_parse(&s, phrases, sizeof phrases - 1, "p", 0, &err), 0);
    const ocr_text_options words = {0};
    for (int i = 0; i < 200; i++) {
        uint64_t r = rng_derive(5, (uint64_t)i, 1);
        const size_t n = ocr_text_draw(&s, &words, &r, a, sizeof a);
        for (const char *p = a; (p = strstr(p, "two")); p += 3)
            assert_true(p[3] == '.' || (p[3] == ',' && p + 4 == a + n));
        for (const char *p = a; (p = strstr(p, "four")); p += 4)
            assert_true(p[4] == '.' || p + 4 == a + n);
        assert_null(strstr(a, ",."));
        assert_true(strspn(a, "OneTwoThreFur onetwhrfu.,") == n); /* only their letters */
    }
    ocr_sentences_free(&s);
}

/* ---- effects ---- */

static void test_effects(void **state) {
    (void)state;
    enum { W = 40, H = 20 };
    float img[W * H], tmp[W * H], out[W * H], cov[W * H] = {0};
    for (int i = 0; i < W * H; i++) img[i] = 0.3f;
    ocr_blur(img, W, H, 1.3f, tmp);
    for (int i = 0; i < W * H; i++) assert_float_equal(img[i], 0.3f, 1e-6);
    memset(img, 0, sizeof img);
    img[10 * W + 20] = 1; /* an impulse away from the edges: its mass stays, spread evenly */
    ocr_blur(img, W, H, 1.0f, tmp);
    double sum = 0;
    for (int i = 0; i < W * H; i++) sum += img[i];
    assert_float_equal(sum, 1.0, 1e-5);
    assert_float_equal(img[10 * W + 19], img[10 * W + 21], 1e-7);
    assert_float_equal(img[9 * W + 20], img[10 * W + 19], 1e-7);
    for (int y = 0; y < H; y++) /* a ramp: pixel x holds its centre's position, x + 1/2 */
        for (int x = 0; x < W; x++) img[y * W + x] = (float)x + 0.5f;
    /* halved, each output pixel's centre 2j + 1 is the mean of its four symmetric inputs */
    ocr_resample(img, W, H, out, W / 2, H / 2, tmp);
    for (int j = 1; j < W / 2 - 1; j++) assert_float_equal(out[5 * (W / 2) + j], 2 * j + 1, 1e-4);
    /* doubled, linear interpolation between the two nearest centres keeps the ramp */
    float big[2 * W * H], tmp2[2 * W * H];
    ocr_resample(img, W, H, big, 2 * W, H, tmp2);
    for (int j = 1; j < 2 * W - 1; j++) assert_float_equal(big[3 * 2 * W + j], (j + 0.5) / 2, 1e-4);
    cov[0] = 1, cov[1] = 0.5f;
    ocr_effects e = ocr_effects_none();
    e.paper = 0.9f, e.ink = 0.1f, e.gamma = 2;
    ocr_compose(cov, W, H, &e, out);
    assert_float_equal(out[0], 0.1f, 1e-6);
    assert_float_equal(out[1], 0.9f * 0.75f + 0.1f * 0.25f, 1e-6); /* c = 0.5^2 */
    assert_float_equal(out[2], 0.9f, 1e-6);
    uint8_t bytes[3];
    uint64_t rng = 1;
    const float levels[3] = {0.0f, 1.0f, 0.2f};
    ocr_finish(levels, 3, 1, 0, 0, &rng, bytes);
    assert_true(bytes[0] == 0 && bytes[1] == 255 && bytes[2] == 51);
}

static void test_jpeg(void **state) {
    (void)state;
    enum { W = 64, H = 24 };
    uint8_t px[W * H];
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) px[y * W + x] = (uint8_t)(x * 4);
    const image_u8 img = {W, H, 1, px};
    uint8_t *data;
    size_t size;
    vit_error err = {{0}};
    assert_int_equal(image_encode_jpeg(&img, 90, &data, &size, &err), 0);
    image_u8 back;
    assert_int_equal(image_decode_memory(data, size, "mem", 1, 0, 0, &back, &err), 0);
    assert_true(back.width == W && back.height == H);
    for (int i = 0; i < W * H; i++) assert_true(abs(back.pixels[i] - px[i]) <= 6);
    image_free(&back);
    free(data);
    assert_int_equal(image_encode_jpeg(&img, 0, &data, &size, &err), -1);
    assert_non_null(strstr(err.msg, "quality 0"));
    assert_int_equal(image_write_jpeg("/nonexistent/x.jpg", &img, 50, &err), -1);
    assert_non_null(strstr(err.msg, "/nonexistent/x.jpg"));
}

/* ---- the renderer ---- */

static const char *const fonts3[] = {DEJAVU "DejaVuSans.ttf", DEJAVU "DejaVuSerif-Bold.ttf",
                                     DEJAVU "DejaVuSansMono.ttf"};

/* Fonts for the renderer's tests, or a loud skip: they need FreeType and fonts-dejavu-core. */
static ocr_fonts *open_fonts(void) {
    if (!ocr_render_built_in()) {
        print_message("SKIP: this build has no FreeType (libfreetype-dev)\n");
        return NULL;
    }
    for (int i = 0; i < 3; i++)
        if (access(fonts3[i], R_OK) != 0) {
            print_message("SKIP: %s missing (Debian's fonts-dejavu-core)\n", fonts3[i]);
            return NULL;
        }
    vit_error err = {{0}};
    ocr_fonts *f = ocr_fonts_open(fonts3, 3, &err);
    if (!f) fail_msg("%s", err.msg);
    return f;
}
#define OPEN_FONTS(f)                                                                              \
    ocr_fonts *f = open_fonts();                                                                   \
    if (!f) skip()

static ocr_sentences sentences_of(const char *text) {
    ocr_sentences s;
    vit_error err = {{0}};
    if (ocr_sentences_parse(&s, text, strlen(text), "test", 0, &err) != 0) fail_msg("%s", err.msg);
    return s;
}

static const char story[] = "The quick brown fox jumps over the lazy dog near the river bank.\n"
                            "Pack my box with five dozen liquor jugs, said the old sailor.\n"
                            "How vexingly quick daft zebras jump when the night is young!\n";

static void render(ocr_fonts *f, const ocr_sentences *s, const ocr_sentences *held,
                   const ocr_render_options *o, long i, ocr_line *line) {
    vit_error err = {{0}};
    if (ocr_render_line(f, s, held, o, 11, i, line, &err) != 0)
        fail_msg("line %ld: %s", i, err.msg);
}

static void test_render_deterministic(void **state) {
    (void)state;
    OPEN_FONTS(f);
    vit_error err = {{0}};
    ocr_fonts *g = ocr_fonts_open(fonts3, 3, &err);
    ocr_sentences s = sentences_of(story);
    ocr_render_options o = ocr_render_default_options();
    o.degrade = 0.5;
    for (long i = 29; i >= 0; i--) { /* g renders in the other order: no state between lines */
        ocr_line a, b;
        render(f, &s, NULL, &o, 29 - i, &a);
        render(g, &s, NULL, &o, 29 - i, &b);
        ocr_line c;
        render(g, &s, NULL, &o, i, &c);
        ocr_line_free(&c);
        assert_string_equal(a.text, b.text);
        assert_true(a.image.width == 384 && a.image.height == 32 && a.image.channels == 1);
        assert_memory_equal(a.image.pixels, b.image.pixels, 384 * 32);
        assert_int_equal(a.jpeg_quality, b.jpeg_quality);
        ocr_line_free(&a);
        ocr_line_free(&b);
    }
    ocr_sentences_free(&s);
    ocr_fonts_free(g);
    ocr_fonts_free(f);
}

static void test_render_twins(void **state) {
    (void)state;
    OPEN_FONTS(f);
    ocr_sentences s = sentences_of(story);
    ocr_render_options clean = ocr_render_default_options(), degraded = clean;
    clean.degrade = 0, degraded.degrade = 1;
    int differ = 0, jpegs = 0;
    for (long i = 0; i < 30; i++) {
        ocr_line a, b;
        render(f, &s, NULL, &clean, i, &a);
        render(f, &s, NULL, &degraded, i, &b);
        assert_string_equal(a.text, b.text);
        assert_int_equal(a.font, b.font);
        assert_true(!a.degraded && b.degraded && a.jpeg_quality == 0);
        assert_true(a.angle == 0 && a.shear == 0 && a.blur == 0 && a.noise == 0);
        differ += memcmp(a.image.pixels, b.image.pixels, 384 * 32) != 0;
        if (b.jpeg_quality) { /* the pixels are what the JPEG file decodes to */
            image_u8 d;
            vit_error err = {{0}};
            assert_int_equal(image_decode_memory(b.jpeg, b.jpeg_size, "b", 1, 0, 0, &d, &err), 0);
            assert_memory_equal(d.pixels, b.image.pixels, 384 * 32);
            image_free(&d);
            jpegs++;
        }
        assert_true((b.jpeg != NULL) == (b.jpeg_quality > 0) && !a.jpeg);
        ocr_line_free(&a);
        ocr_line_free(&b);
    }
    assert_int_equal(differ, 30);
    assert_true(jpegs > 5);
    ocr_sentences_free(&s);
    ocr_fonts_free(f);
}

static void test_render_held_out(void **state) {
    (void)state;
    OPEN_FONTS(f);
    const char held[] = "xx One two three four five six seven eight yy";
    ocr_sentences s = sentences_of("alpha beta gamma delta epsilon\none two three four five six "
                                   "seven eight\n"),
                  h = sentences_of(held);
    ocr_render_options o = ocr_render_default_options();
    o.text.generated = o.text.upper_case = o.text.title_case = 0;
    for (long i = 0; i < 60; i++) {
        ocr_line line;
        render(f, &s, &h, &o, i, &line);
        if (strcasestr(held, line.text)) fail_msg("line %ld '%s' is held out", i, line.text);
        ocr_line_free(&line);
    }
    /* every line drawn from "aa aa aa aa" (sentences joined by ". ") is inside this one */
    char all[1200] = "";
    for (int k = 0; k < 60; k++) strcat(all, "aa aa aa aa. ");
    ocr_sentences aa = sentences_of("aa aa aa aa\n"), held_aa = sentences_of(all);
    ocr_line line;
    vit_error err = {{0}};
    assert_int_equal(ocr_render_line(f, &aa, &held_aa, &o, 1, 0, &line, &err), -1);
    assert_non_null(strstr(err.msg, "held-out"));
    ocr_sentences_free(&aa);
    ocr_sentences_free(&held_aa);
    ocr_sentences_free(&s);
    ocr_sentences_free(&h);
    ocr_fonts_free(f);
}

static void test_font_errors(void **state) {
    (void)state;
    if (!ocr_render_built_in()) {
        vit_error err = {{0}};
        assert_null(ocr_fonts_open(fonts3, 1, &err));
        assert_non_null(strstr(err.msg, "without FreeType"));
        return;
    }
    vit_error err = {{0}};
    const char *missing[] = {"/nonexistent/font.ttf"}, *png[] = {TEST_DATA "/pullover.png"};
    assert_null(ocr_fonts_open(missing, 1, &err));
    assert_non_null(strstr(err.msg, "/nonexistent/font.ttf: No such file"));
    assert_null(ocr_fonts_open(png, 1, &err));
    assert_non_null(strstr(err.msg, "pullover.png: not a font"));
    assert_null(ocr_fonts_open(png, 0, &err));
    assert_non_null(strstr(err.msg, "no font"));
}

#ifdef VIT_FREETYPE
/* The ink span [*left, *right) of text in font path at the size giving capitals cap pixels high:
 * FreeType's unhinted outline boxes placed by linear advances and 'kern' pairs. */
static void freetype_span(const char *path, double cap, const char *text, double *left,
                          double *right) {
    FT_Library lib;
    FT_Face face;
    assert_int_equal(FT_Init_FreeType(&lib), 0);
    assert_int_equal(FT_New_Face(lib, path, 0, &face), 0);
    assert_int_equal(FT_Load_Char(face, 'H', FT_LOAD_NO_SCALE), 0);
    const double em = cap * face->units_per_EM / face->glyph->metrics.height;
    FT_Set_Char_Size(face, 0, (FT_F26Dot6)lround(em * 64), 72, 72);
    double pen = 0;
    *left = INFINITY, *right = -INFINITY;
    FT_UInt prev = 0;
    for (size_t i = 0, n = strlen(text); i < n;) {
        const FT_UInt gi =
            FT_Get_Char_Index(face, (FT_ULong)utf8_decode((const uint8_t *)text, n, &i));
        FT_Vector k = {0, 0};
        if (prev && FT_HAS_KERNING(face)) FT_Get_Kerning(face, prev, gi, FT_KERNING_UNFITTED, &k);
        pen += k.x / 64.0;
        FT_Load_Glyph(face, gi, FT_LOAD_NO_HINTING);
        const FT_Glyph_Metrics *m = &face->glyph->metrics;
        if (m->width > 0) {
            *left = fmin(*left, pen + m->horiBearingX / 64.0);
            *right = fmax(*right, pen + (m->horiBearingX + m->width) / 64.0);
        }
        pen += face->glyph->linearHoriAdvance / 65536.0;
        prev = gi;
    }
    FT_Done_Face(face);
    FT_Done_FreeType(lib);
}
#endif

/* Clean lines: ink inside the canvas (its border rows and columns blank), and as wide as FreeType
 * makes the label in that font and size: a character more or less would show. */
static void test_render_labels(void **state) {
    (void)state;
    OPEN_FONTS(f);
#ifdef VIT_FREETYPE
    ocr_sentences s = sentences_of(story);
    ocr_render_options o = ocr_render_default_options();
    o.degrade = 0;
    for (long i = 0; i < 40; i++) {
        ocr_line l;
        render(f, &s, NULL, &o, i, &l);
        const uint8_t *p = l.image.pixels;
        int lo = 384, hi = -1;
        for (int y = 0; y < 32; y++)
            for (int x = 0; x < 384; x++)
                if (p[y * 384 + x] < 250) {
                    lo = x < lo ? x : lo, hi = x > hi ? x : hi;
                    assert_true(y > 0 && y < 31 && x > 0 && x < 383);
                }
        assert_true(hi > lo); /* not blank */
        assert_true(lo >= l.ink_left && hi < l.ink_right);
        double left, right;
        freetype_span(fonts3[l.font], l.cap_height, l.text, &left, &right);
        if (fabs((hi + 1 - lo) - (right - left)) > 2.0)
            fail_msg("line %ld '%s': ink %d px wide, FreeType's %.1f", i, l.text, hi + 1 - lo,
                     right - left);
        ocr_line_free(&l);
    }
    ocr_sentences_free(&s);
#endif
    ocr_fonts_free(f);
}

/* ---- page-like texts and crops ---- */

/* A sentence pool long enough for lines of any length. */
static const char pool[] =
    "the film is a charming and often affecting journey into the lives of two friends\n"
    "it is a smart, funny and touching look at how people behave when nobody watches\n"
    "an uneven but engaging drama that never quite finds its feet, although it tries\n"
    "few movies this year have been as bold or as moving as this quiet little story\n";

static void test_page_texts(void **state) {
    (void)state;
    ocr_sentences s = sentences_of(pool);
    static const double shares[OCR_TEXT_KINDS] = {0.45, 0.08, 0.10, 0.12, 0.08, 0.17};
    enum { N = 4000 };
    int kinds[OCR_TEXT_KINDS] = {0}, prose = 0, short_prose = 0, long_prose = 0, longest = 0;
    char t[OCR_DRAW_BYTES + 1], u[OCR_DRAW_BYTES + 1];
    for (int i = 0; i < N; i++) {
        uint64_t r1 = rng_derive(9, (uint64_t)i, 1), r2 = r1;
        int kind, kind2;
        const size_t n = ocr_text_draw_page(&s, &r1, t, sizeof t, &kind);
        check_draw(t, n);
        assert_int_equal(ocr_text_draw_page(&s, &r2, u, sizeof u, &kind2), n); /* same state */
        assert_string_equal(t, u);
        const size_t chars = ocr_text_chars(t, n);
        if (chars < 1 || chars > OCR_PAGE_CHARS) fail_msg("%zu characters: '%s'", chars, t);
        assert_true(kind >= 0 && kind < OCR_TEXT_KINDS);
        kinds[kind]++;
        longest = (int)chars > longest ? (int)chars : longest;
        if (kind == OCR_TEXT_PROSE) {
            prose++, short_prose += chars <= 8, long_prose += chars >= 60;
            assert_true(strspn(t, "abcdefghijklmnopqrstuvwxyzIFTAN ,.'") == n); /* the pool's */
        }
        if (kind == OCR_TEXT_LIST) /* a marker, a space, then words */
            assert_true(strchr("-*(", t[0]) || isalnum((unsigned char)t[0]));
        if (kind == OCR_TEXT_LIST) assert_non_null(strchr(t, ' '));
        if (kind == OCR_TEXT_CODE) assert_true(strpbrk(t, "(){}[]=;:'\"/<#.") != NULL);
    }
    for (int k = 0; k < OCR_TEXT_KINDS; k++)
        if (fabs((double)kinds[k] / N - shares[k]) > 0.03)
            fail_msg("%s: %.3f of the texts, want %.2f", ocr_text_kind_names[k],
                     (double)kinds[k] / N, shares[k]);
    /* prose lengths: 15% drawn from 1..8 characters, else 8..80 uniformly (cut at word ends, so
     * shorter): both ends well represented */
    assert_true(short_prose > 0.10 * prose && short_prose < 0.30 * prose);
    assert_true(long_prose > 0.12 * prose);
    assert_true(longest >= 75);
    /* without sentences: no prose, heading or list */
    for (int i = 0; i < 500; i++) {
        uint64_t r = rng_derive(4, (uint64_t)i, 1);
        int kind;
        const size_t n = ocr_text_draw_page(NULL, &r, t, sizeof t, &kind);
        check_draw(t, n);
        assert_true(kind >= OCR_TEXT_CELL);
    }
    /* cut at words: "ab cd" to 3 characters is "ab"; a word longer than the length stays whole */
    assert_int_equal(ocr_text_chars("añb", 4), 3);
    ocr_sentences_free(&s);
}

#ifdef VIT_FREETYPE /* its callers draw lines */
/* The extents of the pixels darker than 250 inside rows [y0, y1) x columns [x0, x1) of l's image:
 * lo[0], lo[1] the first column and row, hi[0], hi[1] one past the last (hi <= lo: none). */
static void ink_extent(const ocr_line *l, int x0, int y0, int x1, int y1, int lo[2], int hi[2]) {
    lo[0] = x1, lo[1] = y1, hi[0] = x0, hi[1] = y0;
    for (int y = y0; y < y1; y++)
        for (int x = x0; x < x1; x++)
            if (l->image.pixels[(size_t)y * (size_t)l->image.width + (size_t)x] < 250) {
                lo[0] = x < lo[0] ? x : lo[0], lo[1] = y < lo[1] ? y : lo[1];
                hi[0] = x + 1 > hi[0] ? x + 1 : hi[0], hi[1] = y + 1 > hi[1] ? y + 1 : hi[1];
            }
}
#endif

static ocr_render_options crop_options(void) {
    ocr_render_options o = ocr_render_default_options();
    o.crop = 1;
    return o;
}

/* Clean crops: each at a line height in range; all the ink inside the label's box (unless the
 * neighbours were drawn) and the box inside the image, the ink reaching each side of the box;
 * tight crops have at most 2 px (+1 for rounding) beyond the box; the ink as wide as FreeType
 * makes the label at that size. Degraded crops: sizes in range, the box inside. */
static void test_crop_lines(void **state) {
    (void)state;
    OPEN_FONTS(f);
#ifdef VIT_FREETYPE
    ocr_sentences s = sentences_of(pool);
    ocr_render_options o = crop_options();
    o.degrade = 0;
    int tight = 0, loose = 0, neighbours = 0, small = 0, large = 0;
    for (long i = 0; i < 120; i++) {
        ocr_line l;
        render(f, &s, NULL, &o, i, &l);
        const int w = l.image.width, h = l.image.height;
        if (!(l.line_size >= 16 - 1e-3 && l.line_size <= 96 + 1e-3))
            fail_msg("line %ld: line height %.2f", i, l.line_size);
        small += l.line_size<30, large += l.line_size> 60;
        assert_true(l.box[0] >= 0 && l.box[1] >= 0 && l.box[2] <= w && l.box[3] <= h);
        assert_true(l.box[2] > l.box[0] && l.box[3] > l.box[1]);
        int lo[2], hi[2];
        if (!l.neighbours) { /* nothing outside the box */
            ink_extent(&l, 0, 0, w, h, lo, hi);
            if (lo[0] < l.box[0] || lo[1] < l.box[1] || hi[0] > l.box[2] || hi[1] > l.box[3])
                fail_msg("line %ld '%s': ink [%d,%d)x[%d,%d) outside its box [%d,%d)x[%d,%d)", i,
                         l.text, lo[0], hi[0], lo[1], hi[1], l.box[0], l.box[2], l.box[1],
                         l.box[3]);
        }
        ink_extent(&l, l.box[0], l.box[1], l.box[2], l.box[3], lo, hi);
        /* the box is the ink's: faint antialiased edges may leave 2 px short of it */
        if (lo[0] - l.box[0] > 2 || lo[1] - l.box[1] > 2 || l.box[2] - hi[0] > 2 ||
            l.box[3] - hi[1] > 2)
            fail_msg("line %ld '%s': ink [%d,%d)x[%d,%d) short of its box [%d,%d)x[%d,%d)", i,
                     l.text, lo[0], hi[0], lo[1], hi[1], l.box[0], l.box[2], l.box[1], l.box[3]);
        if (l.tight) {
            tight++;
            if (l.box[0] > 3 || l.box[1] > 3 || w - l.box[2] > 3 || h - l.box[3] > 3)
                fail_msg("line %ld: a tight crop %dx%d with the box [%d,%d)x[%d,%d)", i, w, h,
                         l.box[0], l.box[2], l.box[1], l.box[3]);
        } else {
            loose++;
            neighbours += l.neighbours;
        }
        double left, right;
        freetype_span(fonts3[l.font], l.cap_height, l.text, &left, &right);
        if (fabs((hi[0] - lo[0]) - (right - left)) > 2.0)
            fail_msg("line %ld '%s': ink %d px wide, FreeType's %.1f", i, l.text, hi[0] - lo[0],
                     right - left);
        ocr_line_free(&l);
    }
    assert_true(tight > 30 && loose > 50 && neighbours > 5); /* 40%, 60% and 30% of those */
    assert_true(small > 20 && large > 20);                   /* log-uniform over 16..96 */
    o.degrade = 1;
    o.line_min = 20, o.line_max = 24;
    for (long i = 0; i < 40; i++) {
        ocr_line l;
        render(f, &s, NULL, &o, i, &l);
        assert_true(l.degraded && l.line_size >= 20 - 1e-3 && l.line_size <= 24 + 1e-3);
        assert_true(l.box[0] >= 0 && l.box[1] >= 0 && l.box[2] <= l.image.width &&
                    l.box[3] <= l.image.height && l.box[2] > l.box[0]);
        ocr_line_free(&l);
    }
    ocr_sentences_free(&s);
#endif
    ocr_fonts_free(f);
}

/* Crops are deterministic per line whatever the order and the context, and the same seed clean
 * and degraded gives the same texts, fonts and sizes. */
static void test_crop_deterministic(void **state) {
    (void)state;
    OPEN_FONTS(f);
    vit_error err = {{0}};
    ocr_fonts *g = ocr_fonts_open(fonts3, 3, &err);
    ocr_sentences s = sentences_of(pool);
    ocr_render_options o = crop_options(), clean = crop_options();
    o.degrade = 1, clean.degrade = 0;
    for (long i = 19; i >= 0; i--) {
        ocr_line a, b, c;
        render(f, &s, NULL, &o, 19 - i, &a);
        render(g, &s, NULL, &o, i, &c); /* another line between, in the other context */
        ocr_line_free(&c);
        render(g, &s, NULL, &o, 19 - i, &b);
        assert_string_equal(a.text, b.text);
        assert_true(a.image.width == b.image.width && a.image.height == b.image.height);
        assert_memory_equal(a.image.pixels, b.image.pixels,
                            (size_t)a.image.width * (size_t)a.image.height);
        render(f, &s, NULL, &clean, 19 - i, &c);
        assert_string_equal(a.text, c.text);
        assert_true(a.font == c.font && a.line_size == c.line_size && a.kind == c.kind);
        ocr_line_free(&a), ocr_line_free(&b), ocr_line_free(&c);
    }
    ocr_sentences_free(&s);
    ocr_fonts_free(g);
    ocr_fonts_free(f);
}

/* Given texts, drawn whole as tight crops: the examples among them. */
static void test_crop_given(void **state) {
    (void)state;
    OPEN_FONTS(f);
    static const char *const texts[] = {"The last step of the", "input array accordingly",
                                        "and uses that representation to generate the", "x",
                                        "Zürich 1.299,00 €"};
    ocr_render_options o = crop_options();
    o.degrade = 0, o.tight = 1, o.texts = texts, o.text_count = 5;
    o.line_min = o.line_max = 40;
    for (long i = 0; i < 10; i++) {
        ocr_line l;
        render(f, NULL, NULL, &o, i, &l);
        assert_string_equal(l.text, texts[i % 5]);
        assert_true(l.tight && l.kind == -1);
        /* a tight crop of a 40 px line with ascenders and descenders: 30..44 px high */
        if (i % 5 < 3 && (l.image.height < 30 || l.image.height > 44))
            fail_msg("'%s': %dx%d", l.text, l.image.width, l.image.height);
        ocr_line_free(&l);
    }
    ocr_fonts_free(f);
}

#ifdef VIT_FREETYPE
/* The em (pixels) at which path's ascender - descender is `size` pixels, by FreeType directly. */
static double freetype_em(const char *path, double size) {
    FT_Library lib;
    FT_Face face;
    assert_int_equal(FT_Init_FreeType(&lib), 0);
    assert_int_equal(FT_New_Face(lib, path, 0, &face), 0);
    const double em = size * face->units_per_EM / (face->ascender - face->descender);
    FT_Done_Face(face);
    FT_Done_FreeType(lib);
    return em;
}

/* path's capital height per em ('H'), by FreeType directly. */
static double freetype_cap(const char *path) {
    FT_Library lib;
    FT_Face face;
    assert_int_equal(FT_Init_FreeType(&lib), 0);
    assert_int_equal(FT_New_Face(lib, path, 0, &face), 0);
    assert_int_equal(FT_Load_Char(face, 'H', FT_LOAD_NO_SCALE), 0);
    const double cap = (double)face->glyph->metrics.height / face->units_per_EM;
    FT_Done_Face(face);
    FT_Done_FreeType(lib);
    return cap;
}
#endif

/* Pages: every line's box inside the image and its ink reaching each side of the box; on clean
 * pages all the ink inside the boxes, and (unskewed) each body line's box as wide as FreeType
 * makes its text; lines in reading order (down each column); deterministic per page. */
static void test_pages(void **state) {
    (void)state;
    OPEN_FONTS(f);
#ifdef VIT_FREETYPE
    ocr_sentences s = sentences_of(pool);
    ocr_page_options o = {.line_min = 20, .line_max = 64, .degrade = 0};
    int two = 0, skewed = 0, lines = 0;
    for (long i = 0; i < 24; i++) {
        o.degrade = i % 2; /* odd pages degraded */
        ocr_page p;
        vit_error err = {{0}};
        if (ocr_render_page(f, &s, &o, 5, i, &p, &err) != 0) fail_msg("page %ld: %s", i, err.msg);
        const int w = p.image.width, h = p.image.height;
        assert_true(p.lines > 0 && p.line_size >= 20 - 1e-3 && p.line_size <= 64 + 1e-3);
        two += p.columns == 2, skewed += p.angle != 0, lines += p.lines;
        ocr_line view = {.image = p.image}; /* for ink_extent */
        for (int k = 0; k < p.lines; k++) {
            const ocr_page_line *l = &p.line[k];
            const int *b = l->box;
            assert_true(b[0] >= 0 && b[1] >= 0 && b[2] <= w && b[3] <= h && b[2] > b[0]);
            assert_true(strlen(l->text) > 0 && l->text[0] != ' ');
            if (k > 0 && l->column == p.line[k - 1].column && p.angle == 0)
                assert_true(b[1] > p.line[k - 1].box[1]); /* down the column */
            if (k > 0) assert_true(l->column >= p.line[k - 1].column);
            if (p.degraded) continue;
            int lo[2], hi[2];
            ink_extent(&view, b[0], b[1], b[2], b[3], lo, hi);
            if (lo[0] - b[0] > 2 || lo[1] - b[1] > 2 || b[2] - hi[0] > 2 || b[3] - hi[1] > 2)
                fail_msg("page %ld line %d '%s': ink [%d,%d)x[%d,%d), box [%d,%d)x[%d,%d)", i, k,
                         l->text, lo[0], hi[0], lo[1], hi[1], b[0], b[2], b[1], b[3]);
            if (l->column >= 0 && p.angle == 0) {
                double left, right;
                const double em = freetype_em(fonts3[p.font], p.line_size);
                const double cap = em * freetype_cap(fonts3[p.font]);
                freetype_span(fonts3[p.font], cap, l->text, &left, &right);
                if (fabs((b[2] - b[0]) - (right - left)) > 2.0)
                    fail_msg("page %ld line %d '%s': box %d px wide, FreeType's %.1f", i, k,
                             l->text, b[2] - b[0], right - left);
            }
        }
        if (!p.degraded) { /* no ink outside every box */
            for (int y = 0; y < h; y++)
                for (int x = 0; x < w; x++) {
                    if (p.image.pixels[(size_t)y * (size_t)w + (size_t)x] >= 250) continue;
                    int inside = 0;
                    for (int k = 0; k < p.lines && !inside; k++) {
                        const int *b = p.line[k].box;
                        inside = x >= b[0] && x < b[2] && y >= b[1] && y < b[3];
                    }
                    if (!inside) fail_msg("page %ld: ink at (%d, %d) outside every box", i, x, y);
                }
        }
        ocr_page q; /* the same page again: the same bytes */
        assert_int_equal(ocr_render_page(f, &s, &o, 5, i, &q, &err), 0);
        assert_true(q.image.width == w && q.image.height == h && q.lines == p.lines);
        assert_memory_equal(q.image.pixels, p.image.pixels, (size_t)w * (size_t)h);
        ocr_page_free(&q);
        ocr_page_free(&p);
    }
    assert_true(two > 2 && skewed > 2 && lines > 150);
    ocr_sentences_free(&s);
#endif
    ocr_fonts_free(f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_detokenize),
        cmocka_unit_test(test_case),
        cmocka_unit_test(test_charset),
        cmocka_unit_test(test_sentences),
        cmocka_unit_test(test_draws),
        cmocka_unit_test(test_effects),
        cmocka_unit_test(test_jpeg),
        cmocka_unit_test(test_render_deterministic),
        cmocka_unit_test(test_render_twins),
        cmocka_unit_test(test_render_held_out),
        cmocka_unit_test(test_font_errors),
        cmocka_unit_test(test_render_labels),
        cmocka_unit_test(test_page_texts),
        cmocka_unit_test(test_crop_lines),
        cmocka_unit_test(test_crop_deterministic),
        cmocka_unit_test(test_crop_given),
        cmocka_unit_test(test_pages),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
