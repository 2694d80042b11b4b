/* Synthetic printed lines: a text set in a font through FreeType, placed on the canvas so that no
 * glyph is cut, then the scan and photo effects of vit/data/ocr_effects.h. */
#include "vit/data/ocr_render.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "image/encode.h"
#include "vit/base/rng.h"
#include "vit/data/ocr_effects.h"
#include "vit/data/ocr_glyphs.h"

ocr_render_options ocr_render_default_options(void) {
    return (ocr_render_options){.height = 32,
                                .width = 384,
                                .degrade = 0.8,
                                .text = OCR_TEXT_DEFAULTS,
                                .line_min = 16,
                                .line_max = 96,
                                .tight = 0.4,
                                .neighbours = 0.3};
}

void ocr_line_free(ocr_line *line) {
    image_free(&line->image);
    free(line->jpeg);
    line->jpeg = NULL;
}

/* The JPEG compression: the file's bytes kept, and the pixels made what they decode to. */
static int compress_image(image_u8 *image, int quality, uint8_t **jpeg, size_t *size,
                          vit_error *err) {
    if (image_encode_jpeg(image, quality, jpeg, size, err) != 0) return -1;
    image_u8 decoded;
    if (image_decode_memory(*jpeg, *size, "a rendered line", 1, 0, 0, &decoded, err) != 0)
        return -1;
    image_free(image);
    *image = decoded;
    return 0;
}

static int compress_line(ocr_line *out, vit_error *err) {
    return compress_image(&out->image, out->jpeg_quality, &out->jpeg, &out->jpeg_size, err);
}

/* The random streams of line `index`: its text, its layout, its effects and its noise. */
enum { STREAM_TEXT = 1, STREAM_LAYOUT, STREAM_EFFECTS, STREAM_NOISE };

/* Ranges of the draws (heights relative to the canvas's). */
#define CAP_MIN        0.28 /* capital letters' height, share of the canvas height */
#define CAP_MAX        0.48
#define MAX_ANGLE      2.0 /* degrees, before it is reduced to what the canvas holds */
#define MAX_SHEAR      0.2
#define HELD_OUT_TRIES 1000

/* The effects of a degraded line, drawn from *rng (each one present with its own probability),
 * for a canvas of w x h. angle and shear are the geometry's. */
static void draw_effects(uint64_t *rng, int w, int h, ocr_effects *e, float *angle, float *shear,
                         int *jpeg_quality) {
    static const int qualities[] = {15, 25, 35, 50, 70, 90};
    const float u = (float)h / 32; /* sizes in pixels scale with the canvas */
    *e = ocr_effects_none();
    *angle = rng_uniform(rng) < 0.5 ? (float)((2 * rng_uniform(rng) - 1) * MAX_ANGLE) : 0;
    *shear = rng_uniform(rng) < 0.3 ? (float)((2 * rng_uniform(rng) - 1) * MAX_SHEAR) : 0;
    if (rng_uniform(rng) < 0.6) {
        e->paper = (float)(0.6 + 0.4 * rng_uniform(rng));
        const double most = e->paper - 0.35 < 0.4 ? e->paper - 0.35 : 0.4;
        e->ink = (float)(most * rng_uniform(rng));
    }
    if (rng_uniform(rng) < 0.4) {
        e->gradient = (float)(0.8 * rng_uniform(rng) - 0.4);
        e->gradient_angle = (float)(2 * M_PI * rng_uniform(rng));
    }
    if (rng_uniform(rng) < 0.3) {
        e->spots = rng_int(rng, 1, OCR_MAX_SPOTS);
        for (int i = 0; i < e->spots; i++) {
            e->spot_x[i] = (float)(w * rng_uniform(rng));
            e->spot_y[i] = (float)(h * rng_uniform(rng));
            e->spot_r[i] = (float)(h * (0.5 + 3.5 * rng_uniform(rng)));
            e->spot_amp[i] = (float)(0.45 * rng_uniform(rng) - 0.3);
        }
    }
    if (rng_uniform(rng) < 0.4) e->gamma = (float)exp(log(0.5) + log(4.0) * rng_uniform(rng));
    if (rng_uniform(rng) < 0.5) e->blur = (float)(u * (0.3 + 0.8 * rng_uniform(rng)));
    if (rng_uniform(rng) < 0.3) e->scale = (float)(0.55 + 0.35 * rng_uniform(rng));
    if (rng_uniform(rng) < 0.6) e->noise = (float)(0.01 + 0.07 * rng_uniform(rng));
    if (rng_uniform(rng) < 0.1) e->salt = (float)(0.001 + 0.009 * rng_uniform(rng));
    *jpeg_quality = rng_uniform(rng) < 0.5 ? qualities[rng_int(rng, 0, 5)] : 0;
}

/* The print through the effects: coverage [h, w] to out->image. */
static int apply_effects_to(const float *coverage, int w, int h, const ocr_effects *e,
                            uint64_t noise_rng, image_u8 *image, vit_error *err) {
    const size_t n = (size_t)w * (size_t)h;
    float *page = malloc(n * sizeof *page), *tmp = malloc(n * sizeof *tmp);
    float *small = malloc(n * sizeof *small);
    *image = (image_u8){w, h, 1, malloc(n)};
    int rc = 0;
    if (!page || !tmp || !small || !image->pixels) {
        rc = vit_fail(err, "out of memory rendering a %dx%d line", w, h);
    } else {
        ocr_compose(coverage, w, h, e, page);
        ocr_blur(page, w, h, e->blur, tmp);
        if (e->scale < 1) { /* lost resolution: down to the scale and back up */
            const int sw = (int)lrintf((float)w * e->scale), sh = (int)lrintf((float)h * e->scale);
            ocr_resample(page, w, h, small, sw > 0 ? sw : 1, sh > 0 ? sh : 1, tmp);
            ocr_resample(small, sw > 0 ? sw : 1, sh > 0 ? sh : 1, page, w, h, tmp);
        }
        ocr_finish(page, w, h, e->noise, e->salt, &noise_rng, image->pixels);
    }
    free(page), free(tmp), free(small);
    if (rc != 0) image_free(image);
    return rc;
}

static int apply_effects(const float *coverage, int w, int h, const ocr_effects *e,
                         uint64_t noise_rng, ocr_line *out, vit_error *err) {
    return apply_effects_to(coverage, w, h, e, noise_rng, &out->image, err);
}

/* ---- layout: the text, its size and place ---- */

/* The layout's draws: font, capital height, left margin, how much of the width the text may
 * take, where in the free height it sits. */
typedef struct {
    int font;
    double cap, margin, fill, v;
} layout_draw;

static layout_draw draw_layout(uint64_t *rng, int fonts, int h) {
    layout_draw d;
    d.font = rng_int(rng, 0, fonts - 1);
    d.cap = h * (CAP_MIN + (CAP_MAX - CAP_MIN) * rng_uniform(rng));
    d.margin = 1 + 0.4 * h * rng_uniform(rng);
    d.fill = rng_uniform(rng) < 0.6 ? 1.0 : 0.25 + 0.75 * rng_uniform(rng);
    d.v = rng_uniform(rng);
    return d;
}

/* A text that fits and is not held out, laid out in *g at em; its label into out->text. The
 * width left for it allows for the largest shear and rotation, so that the text does not depend
 * on the effects. */
/* Given text index % count into buf (room for OCR_DRAW_BYTES + 1); its length. */
static size_t given_text(const ocr_render_options *o, long index, char *buf) {
    snprintf(buf, OCR_DRAW_BYTES + 1, "%s", o->texts[index % o->text_count]);
    return strlen(buf);
}

static int choose_text(ocr_fonts *f, const ocr_sentences *s, const ocr_sentences *held_out,
                       const ocr_render_options *o, const layout_draw *d, double em, uint64_t *rng,
                       long index, glyph_run *g, ocr_line *out, vit_error *err) {
    const double slant = MAX_SHEAR + sin(MAX_ANGLE * M_PI / 180);
    const double budget =
        d->fill * (o->width - d->margin - 2) - slant * ocr_glyphs_extent(f, d->font) * em;
    for (int tries = 0; tries < HELD_OUT_TRIES; tries++) {
        char text[OCR_DRAW_BYTES + 1];
        const size_t len = o->texts ? given_text(o, index, text)
                                    : ocr_text_draw(s, &o->text, rng, text, sizeof text);
        if (len == 0) continue;
        if (ocr_glyphs_layout(f, d->font, em, text, len, budget, g, err) != 0) return -1;
        if (ocr_sentences_contains(held_out, text, g->bytes)) continue;
        memcpy(out->text, text, g->bytes);
        out->text[g->bytes] = '\0';
        return 0;
    }
    return vit_fail(err,
                    "%d texts in a row occur in the held-out sentences (are they the "
                    "sentences the lines are drawn from?)",
                    HELD_OUT_TRIES);
}

/* Rotation by angle degrees after a shear: x' = x + shear · y, then rotated (y up). */
static void transform(double angle, double shear, double m[4]) {
    const double c = cos(angle * M_PI / 180), s = sin(angle * M_PI / 180);
    m[0] = c, m[1] = shear * c - s;
    m[2] = s, m[3] = shear * s + c;
}

/* The box [x0, x1] x [y0, y1] (y up) holding every glyph outline of g once transformed by m. */
static void run_box(const glyph_run *g, const double m[4], double box[4]) {
    box[0] = box[2] = INFINITY, box[1] = box[3] = -INFINITY;
    for (int k = 0; k < g->n; k++) {
        if (g->x0[k] > g->x1[k]) continue;
        for (int corner = 0; corner < 4; corner++) {
            const double x = g->pen[k] + (corner & 1 ? g->x1[k] : g->x0[k]);
            const double y = corner & 2 ? g->y1[k] : g->y0[k];
            const double tx = m[0] * x + m[1] * y, ty = m[2] * x + m[3] * y;
            box[0] = fmin(box[0], tx), box[1] = fmax(box[1], tx);
            box[2] = fmin(box[2], ty), box[3] = fmax(box[3], ty);
        }
    }
    if (box[0] > box[1]) box[0] = box[1] = box[2] = box[3] = 0; /* nothing but blanks */
}

/* Where the run goes: its transform m and the canvas point (ox, oy) of its origin, keeping every
 * outline a pixel inside the canvas. What does not fit is given up in this order: the rotation
 * (halved until it fits, since it raises a long line most), the shear, then the size (the same
 * label laid out smaller). */
typedef struct {
    double em, m[4], ox, oy;
    float angle, shear;
} placement;

static int place_run(ocr_fonts *f, const layout_draw *d, int w, int h, const ocr_line *line,
                     glyph_run *g, placement *p, vit_error *err) {
    for (int attempt = 0; attempt < 40; attempt++) {
        double box[4];
        transform(p->angle, p->shear, p->m);
        run_box(g, p->m, box);
        const double width = box[1] - box[0], height = box[3] - box[2];
        if (d->margin + width <= w - 1 && height <= h - 2) {
            p->ox = d->margin - box[0];
            p->oy = 1 + box[3] + d->v * (h - 2 - height);
            return 0;
        }
        if (p->angle != 0) {
            p->angle = fabsf(p->angle) < 0.05f ? 0 : p->angle / 2;
        } else if (p->shear != 0) {
            p->shear = 0;
        } else {
            p->em *= 0.92;
            if (ocr_glyphs_layout(f, d->font, p->em, line->text, strlen(line->text), INFINITY, g,
                                  err) != 0)
                return -1;
        }
    }
    return vit_fail(err, "cannot fit '%s' on a %dx%d canvas", line->text, w, h);
}

static int check_options(const ocr_render_options *o, vit_error *err) {
    if (o->height < 16 || o->height > 512)
        return vit_fail(err, "a line height of %d pixels is outside 16..512", o->height);
    if (o->width < 4 * o->height || o->width > 16384)
        return vit_fail(err, "a line width of %d pixels is outside 4 x the height (%d)..16384",
                        o->width, 4 * o->height);
    if (o->crop && (o->line_min < 8 || o->line_max > 512 || o->line_min > o->line_max))
        return vit_fail(err, "line heights %d..%d pixels are not a range inside 8..512",
                        o->line_min, o->line_max);
    if (o->texts && o->text_count < 1) return vit_fail(err, "no text given");
    if (!(o->degrade >= 0 && o->degrade <= 1))
        return vit_fail(err, "the share of degraded lines %g is outside 0..1", o->degrade);
    return 0;
}

/* The text laid out and placed, drawn as ink coverage into *coverage (allocated). */
static int draw_text(ocr_fonts *f, const ocr_sentences *s, const ocr_sentences *held_out,
                     const ocr_render_options *o, uint64_t seed, long index, placement *p,
                     ocr_line *out, float **coverage, vit_error *err) {
    uint64_t text_rng = rng_derive(seed, (uint64_t)index, STREAM_TEXT);
    uint64_t layout_rng = rng_derive(seed, (uint64_t)index, STREAM_LAYOUT);
    const layout_draw d = draw_layout(&layout_rng, ocr_fonts_count(f), o->height);
    glyph_run *g = malloc(sizeof *g);
    *coverage = calloc((size_t)o->width * (size_t)o->height, sizeof **coverage);
    p->em = d.cap / ocr_glyphs_cap(f, d.font);
    int rc = !g || !*coverage ? vit_fail(err, "out of memory rendering a line") : 0;
    if (rc == 0) rc = choose_text(f, s, held_out, o, &d, p->em, &text_rng, index, g, out, err);
    if (rc == 0) rc = place_run(f, &d, o->width, o->height, out, g, p, err);
    if (rc == 0)
        rc = ocr_glyphs_draw(f, d.font, p->em, g, p->m, p->ox, p->oy, *coverage, o->width,
                             o->height, 0, err);
    if (rc == 0) {
        double box[4];
        run_box(g, p->m, box);
        out->ink_left = (int)floor(p->ox + box[0]);
        out->ink_right = (int)ceil(p->ox + box[1]);
        out->box[0] = out->ink_left, out->box[2] = out->ink_right;
        out->box[1] = (int)floor(p->oy - box[3]), out->box[3] = (int)ceil(p->oy - box[2]);
    }
    out->font = d.font;
    out->cap_height = (float)(p->em * ocr_glyphs_cap(f, d.font));
    out->line_size = (float)(p->em * ocr_glyphs_extent(f, d.font));
    out->kind = -1;
    free(g);
    return rc;
}

/* ---- lines as people crop them: each at its own size, the image cut around its ink ---- */

/* The most a rotation may lift a crop's last glyph above its first, x the line height: a person
 * crops a line along its slope no further than that. */
#define CROP_RISE 0.3
#define CROP_MAX  16384 /* pixels, either side */

typedef struct {
    int font, tight, neighbours;
    double size;      /* the line height: the font's ascender - descender, pixels */
    double margin[4]; /* left, top, right, bottom, pixels */
    double pitch;     /* baseline to baseline of the neighbouring lines */
    double shift[2];  /* where the lines above and below start, relative to this one's start */
} crop_draw;

static crop_draw draw_crop(uint64_t *rng, const ocr_render_options *o, int fonts) {
    crop_draw d;
    d.font = rng_int(rng, 0, fonts - 1);
    d.size = exp(log(o->line_min) + (log(o->line_max) - log(o->line_min)) * rng_uniform(rng));
    d.tight = rng_uniform(rng) < o->tight;
    for (int k = 0; k < 4; k++) /* each side on its own: crops are rarely symmetric */
        d.margin[k] = d.tight ? rng_int(rng, 0, 2)
                              : d.size * rng_uniform(rng) * (rng_uniform(rng) < 0.3 ? 0.15 : 1);
    d.neighbours = !d.tight && rng_uniform(rng) < o->neighbours;
    if (d.neighbours) /* a crop between the lines: their descenders and ascenders peek in */
        d.margin[1] *= 0.6, d.margin[3] *= 0.6;
    d.pitch = d.size * (1.0 + 0.35 * rng_uniform(rng));
    d.shift[0] = -3 * d.size * rng_uniform(rng), d.shift[1] = -3 * d.size * rng_uniform(rng);
    return d;
}

/* The crop's text, laid out whole in *g; its label into out->text. */
static int crop_text(ocr_fonts *f, const ocr_sentences *s, const ocr_sentences *held_out,
                     const ocr_render_options *o, const crop_draw *d, double em, uint64_t *rng,
                     long index, glyph_run *g, ocr_line *out, vit_error *err) {
    for (int tries = 0; tries < HELD_OUT_TRIES; tries++) {
        char text[OCR_DRAW_BYTES + 1];
        int kind = -1;
        const size_t len = o->texts ? given_text(o, index, text)
                                    : ocr_text_draw_page(s, rng, text, sizeof text, &kind);
        if (len == 0) return vit_fail(err, "text %ld is empty", index % o->text_count);
        if (!o->texts && ocr_sentences_contains(held_out, text, len)) continue;
        if (ocr_glyphs_layout(f, d->font, em, text, len, INFINITY, g, err) != 0) return -1;
        if (g->bytes != len)
            return vit_fail(err, "'%.40s...' has more than %d characters", text, OCR_DRAW_BYTES);
        memcpy(out->text, text, len + 1);
        out->kind = kind;
        return 0;
    }
    return vit_fail(err, "%d texts in a row occur in the held-out sentences", HELD_OUT_TRIES);
}

/* The lines above (side 0) and below (side 1), drawn where the crop cuts them. */
static int draw_neighbours(ocr_fonts *f, const ocr_sentences *s, const crop_draw *d, double em,
                           const double m[4], double ox, double oy, uint64_t *rng, float *coverage,
                           int w, int h, vit_error *err) {
    glyph_run *g = malloc(sizeof *g);
    if (!g) return vit_fail(err, "out of memory rendering a line");
    int rc = 0;
    for (int side = 0; rc == 0 && side < 2; side++) {
        char text[OCR_DRAW_BYTES + 1];
        int kind;
        const size_t len = ocr_text_draw_page(s, rng, text, sizeof text, &kind);
        rc = ocr_glyphs_layout(f, d->font, em, text, len, w + 4 * d->size, g, err);
        const double dy = side == 0 ? -d->pitch : d->pitch; /* canvas y runs down */
        if (rc == 0)
            rc = ocr_glyphs_draw(f, d->font, em, g, m, ox + d->shift[side] - m[1] * dy,
                                 oy + dy * m[3], coverage, w, h, INFINITY, err);
    }
    free(g);
    return rc;
}

static int render_crop(ocr_fonts *f, const ocr_sentences *s, const ocr_sentences *held_out,
                       const ocr_render_options *o, uint64_t seed, long index, ocr_line *out,
                       vit_error *err) {
    uint64_t effects_rng = rng_derive(seed, (uint64_t)index, STREAM_EFFECTS);
    uint64_t text_rng = rng_derive(seed, (uint64_t)index, STREAM_TEXT);
    uint64_t layout_rng = rng_derive(seed, (uint64_t)index, STREAM_LAYOUT);
    ocr_effects e = ocr_effects_none();
    float angle = 0, shear = 0;
    out->degraded = rng_uniform(&effects_rng) < o->degrade;
    /* drawn for a unit canvas, then sized to this line (spots' places, radii and the blur) */
    if (out->degraded) draw_effects(&effects_rng, 1, 1, &e, &angle, &shear, &out->jpeg_quality);
    const crop_draw d = draw_crop(&layout_rng, o, ocr_fonts_count(f));
    const double em = d.size / ocr_glyphs_extent(f, d.font);
    glyph_run *g = malloc(sizeof *g);
    if (!g) return vit_fail(err, "out of memory rendering a line");
    int rc = crop_text(f, s, held_out, o, &d, em, &text_rng, index, g, out, err);
    double m[4] = {1, 0, 0, 1}, box[4] = {0, 0, 0, 0};
    for (int k = 0; rc == 0; k++) { /* a long line's rotation lessened until the rise is small */
        transform(angle, shear, m);
        run_box(g, m, box);
        if (angle == 0 || fabs(sin(angle * M_PI / 180)) * (box[1] - box[0]) <= CROP_RISE * d.size)
            break;
        angle = k > 8 ? 0 : angle / 2;
    }
    const int w = (int)ceil(d.margin[0] + box[1] - box[0] + d.margin[2]);
    const int h = (int)ceil(d.margin[1] + box[3] - box[2] + d.margin[3]);
    if (rc == 0 && (w > CROP_MAX || h > CROP_MAX))
        rc =
            vit_fail(err, "'%.40s' would be %dx%d pixels, more than %d", out->text, w, h, CROP_MAX);
    const double ox = d.margin[0] - box[0], oy = d.margin[1] + box[3];
    float *coverage = rc == 0 ? calloc((size_t)w * (size_t)h, sizeof *coverage) : NULL;
    if (rc == 0 && !coverage) rc = vit_fail(err, "out of memory rendering a %dx%d line", w, h);
    /* the label's glyphs lie inside by construction; FreeType's 1/64 px rounding may graze the
     * edge of a tight crop by a hair */
    if (rc == 0) rc = ocr_glyphs_draw(f, d.font, em, g, m, ox, oy, coverage, w, h, 1.0, err);
    if (rc == 0 && d.neighbours && s)
        rc = draw_neighbours(f, s, &d, em, m, ox, oy, &text_rng, coverage, w, h, err);
    free(g);
    if (rc == 0) {
        const float unit = (float)(d.size / 20); /* the fixed canvas's lines are ~20 px high */
        for (int k = 0; k < e.spots; k++)
            e.spot_x[k] *= (float)w, e.spot_y[k] *= (float)h, e.spot_r[k] *= (float)(1.6 * d.size);
        e.blur *= 32 * unit;
        rc = apply_effects(coverage, w, h, &e, rng_derive(seed, (uint64_t)index, STREAM_NOISE), out,
                           err);
    }
    free(coverage);
    if (rc == 0 && out->jpeg_quality > 0) rc = compress_line(out, err);
    if (rc != 0) return ocr_line_free(out), -1;
    out->box[0] = (int)floor(ox + box[0]), out->box[2] = (int)ceil(ox + box[1]);
    out->box[1] = (int)floor(oy - box[3]), out->box[3] = (int)ceil(oy - box[2]);
    out->box[0] = out->box[0] < 0 ? 0 : out->box[0],
    out->box[1] = out->box[1] < 0 ? 0 : out->box[1];
    out->box[2] = out->box[2] > w ? w : out->box[2],
    out->box[3] = out->box[3] > h ? h : out->box[3];
    out->ink_left = out->box[0], out->ink_right = out->box[2];
    out->font = d.font;
    out->cap_height = (float)(em * ocr_glyphs_cap(f, d.font));
    out->line_size = (float)d.size;
    out->tight = d.tight, out->neighbours = d.neighbours && s;
    out->angle = angle, out->shear = shear;
    out->gamma = e.gamma, out->paper = e.paper, out->ink = e.ink, out->blur = e.blur;
    out->scale = e.scale, out->noise = e.noise;
    return 0;
}

int ocr_render_line(ocr_fonts *f, const ocr_sentences *sentences, const ocr_sentences *held_out,
                    const ocr_render_options *o, uint64_t seed, long index, ocr_line *out,
                    vit_error *err) {
    memset(out, 0, sizeof *out);
    if (check_options(o, err) != 0) return -1;
    if (o->crop) return render_crop(f, sentences, held_out, o, seed, index, out, err);
    uint64_t effects_rng = rng_derive(seed, (uint64_t)index, STREAM_EFFECTS);
    ocr_effects e = ocr_effects_none();
    placement p = {0};
    out->degraded = rng_uniform(&effects_rng) < o->degrade;
    if (out->degraded)
        draw_effects(&effects_rng, o->width, o->height, &e, &p.angle, &p.shear, &out->jpeg_quality);
    float *coverage = NULL;
    int rc = draw_text(f, sentences, held_out, o, seed, index, &p, out, &coverage, err);
    if (rc == 0)
        rc = apply_effects(coverage, o->width, o->height, &e,
                           rng_derive(seed, (uint64_t)index, STREAM_NOISE), out, err);
    free(coverage);
    if (rc == 0 && out->jpeg_quality > 0) rc = compress_line(out, err);
    out->angle = p.angle, out->shear = p.shear;
    out->gamma = e.gamma, out->paper = e.paper, out->ink = e.ink, out->blur = e.blur;
    out->scale = e.scale, out->noise = e.noise;
    if (rc != 0) ocr_line_free(out);
    return rc;
}

/* ---- pages ---- */

void ocr_page_free(ocr_page *page) {
    image_free(&page->image);
    free(page->jpeg);
    page->jpeg = NULL;
}

/* A page's lines before the skew: each one's run, size and origin (x right, y down). */
typedef struct {
    int n;
    glyph_run run[OCR_PAGE_LINES];
    double em[OCR_PAGE_LINES], x[OCR_PAGE_LINES], y[OCR_PAGE_LINES];
} page_runs;

/* Lays the words of text[0..len) out in lines of at most `width` pixels into r and out (as column
 * `column`), the first baseline at *y and then one pitch apart; the first line indented by
 * indent. Stops at OCR_PAGE_LINES lines or after max_lines. */
static int wrap_text(ocr_fonts *f, int font, double em, const char *text, size_t len, double x,
                     double width, double indent, double pitch, int max_lines, int column,
                     double *y, page_runs *r, ocr_page *out, vit_error *err) {
    size_t at = 0;
    for (int k = 0; at < len && k < max_lines && r->n < OCR_PAGE_LINES; k++) {
        const double in = k == 0 ? indent : 0;
        glyph_run *g = &r->run[r->n];
        if (ocr_glyphs_layout(f, font, em, text + at, len - at, width - in, g, err) != 0) return -1;
        ocr_page_line *l = &out->line[r->n];
        memcpy(l->text, text + at, g->bytes);
        l->text[g->bytes] = '\0';
        l->column = column;
        r->em[r->n] = em, r->x[r->n] = x + in, r->y[r->n] = *y;
        r->n++;
        *y += pitch;
        at += g->bytes;
        while (at < len && text[at] == ' ') at++;
    }
    return 0;
}

/* The page's text laid out: heading, then the paragraphs of each column. */
static int layout_page(ocr_fonts *f, const ocr_sentences *s, int font, double em, double pitch,
                       uint64_t *layout_rng, uint64_t *text_rng, page_runs *r, ocr_page *out,
                       vit_error *err) {
    const int columns = rng_uniform(layout_rng) < 0.3 ? 2 : 1;
    const double width =
        0.5 * em * (columns == 2 ? rng_int(layout_rng, 26, 40) : rng_int(layout_rng, 40, 75));
    const double gutter = em * (1.5 + 1.5 * rng_uniform(layout_rng));
    const int indent = rng_uniform(layout_rng) < 0.5; /* else paragraphs are spaced */
    double y = 0;
    char text[4096];
    if (rng_uniform(layout_rng) < 0.4) { /* a heading across the columns */
        const double hem = em * (1 + 0.5 * rng_uniform(layout_rng));
        const size_t n = ocr_text_draw_kind(s, OCR_TEXT_HEADING, text_rng, text, sizeof text);
        y = hem * ocr_glyphs_cap(f, font);
        if (wrap_text(f, font, hem, text, n, 0, columns * width + gutter, 0, 0, 1, -1, &y, r, out,
                      err) != 0)
            return -1;
        y += pitch * (1.0 + rng_uniform(layout_rng)) + (hem - em) * ocr_glyphs_cap(f, font);
    } else {
        y = em * ocr_glyphs_cap(f, font);
    }
    const double top = y;
    for (int c = 0; c < columns; c++) {
        y = top;
        const int paragraphs = rng_int(layout_rng, 1, 3);
        for (int p = 0; p < paragraphs; p++) {
            /* about that many lines of text (characters average ~0.5 em), wrapped whole */
            const int lines = rng_int(layout_rng, 2, columns == 2 ? 8 : 6);
            const ocr_sentences *from = rng_uniform(layout_rng) < 0.15 ? NULL : s; /* items */
            const size_t n = ocr_text_paragraph(
                from, text_rng, (size_t)(lines * width / (0.5 * em)), text, sizeof text);
            if (wrap_text(f, font, em, text, n, c * (width + gutter), width, indent ? 2 * em : 0,
                          pitch, OCR_PAGE_LINES, c, &y, r, out, err) != 0)
                return -1;
            if (!indent) y += 0.5 * pitch;
        }
    }
    out->columns = columns;
    return 0;
}

int ocr_render_page(ocr_fonts *f, const ocr_sentences *s, const ocr_page_options *o, uint64_t seed,
                    long index, ocr_page *out, vit_error *err) {
    memset(out, 0, sizeof *out);
    if (o->line_min < 8 || o->line_max > 512 || o->line_min > o->line_max)
        return vit_fail(err, "line heights %d..%d pixels are not a range inside 8..512",
                        o->line_min, o->line_max);
    if (!(o->degrade >= 0 && o->degrade <= 1))
        return vit_fail(err, "the share of degraded pages %g is outside 0..1", o->degrade);
    uint64_t effects_rng = rng_derive(seed, (uint64_t)index, STREAM_EFFECTS);
    uint64_t text_rng = rng_derive(seed, (uint64_t)index, STREAM_TEXT);
    uint64_t layout_rng = rng_derive(seed, (uint64_t)index, STREAM_LAYOUT);
    ocr_effects e = ocr_effects_none();
    float angle = 0, shear = 0;
    out->degraded = rng_uniform(&effects_rng) < o->degrade;
    if (out->degraded) draw_effects(&effects_rng, 1, 1, &e, &angle, &shear, &out->jpeg_quality);
    const int font = rng_int(&layout_rng, 0, ocr_fonts_count(f) - 1);
    const double size =
        exp(log(o->line_min) + (log(o->line_max) - log(o->line_min)) * rng_uniform(&layout_rng));
    const double em = size / ocr_glyphs_extent(f, font);
    const double pitch = size * (1.0 + 0.3 * rng_uniform(&layout_rng));
    page_runs *r = calloc(1, sizeof *r);
    if (!r) return vit_fail(err, "out of memory rendering a page");
    int rc = layout_page(f, s, font, em, pitch, &layout_rng, &text_rng, r, out, err);
    /* the skew: each line's origin turned about the text's centre, its glyphs with it */
    double m[4], lo[2] = {INFINITY, INFINITY}, hi[2] = {-INFINITY, -INFINITY};
    transform(angle, 0, m);
    double cx = 0, cy = 0;
    for (int k = 0; k < r->n; k++) cx += r->x[k] / r->n, cy += r->y[k] / r->n;
    double box[OCR_PAGE_LINES][4];
    for (int k = 0; rc == 0 && k < r->n; k++) {
        const double dx = r->x[k] - cx, dy = -(r->y[k] - cy); /* y up */
        r->x[k] = cx + m[0] * dx + m[1] * dy, r->y[k] = cy - (m[2] * dx + m[3] * dy);
        double b[4];
        run_box(&r->run[k], m, b);
        box[k][0] = r->x[k] + b[0], box[k][2] = r->x[k] + b[1];
        box[k][1] = r->y[k] - b[3], box[k][3] = r->y[k] - b[2];
        lo[0] = fmin(lo[0], box[k][0]), lo[1] = fmin(lo[1], box[k][1]);
        hi[0] = fmax(hi[0], box[k][2]), hi[1] = fmax(hi[1], box[k][3]);
    }
    double margin[4];
    for (int k = 0; k < 4; k++) margin[k] = em * (0.5 + 2 * rng_uniform(&layout_rng));
    if (rc == 0 && r->n == 0) rc = vit_fail(err, "a page without a line");
    const int w = rc == 0 ? (int)fmin(ceil(margin[0] + hi[0] - lo[0] + margin[2]), INT_MAX / 2) : 0;
    const int h = rc == 0 ? (int)fmin(ceil(margin[1] + hi[1] - lo[1] + margin[3]), INT_MAX / 2) : 0;
    if (rc == 0 && (w > CROP_MAX || h > CROP_MAX))
        rc = vit_fail(err, "a page of %d lines would be %dx%d pixels", r->n, w, h);
    float *coverage = rc == 0 ? calloc((size_t)w * (size_t)h, sizeof *coverage) : NULL;
    if (rc == 0 && !coverage) rc = vit_fail(err, "out of memory rendering a %dx%d page", w, h);
    const double sx = margin[0] - lo[0], sy = margin[1] - lo[1];
    for (int k = 0; rc == 0 && k < r->n; k++) {
        rc = ocr_glyphs_draw(f, font, r->em[k], &r->run[k], m, r->x[k] + sx, r->y[k] + sy, coverage,
                             w, h, 0, err);
        int *b = out->line[k].box;
        b[0] = (int)floor(box[k][0] + sx), b[1] = (int)floor(box[k][1] + sy);
        b[2] = (int)ceil(box[k][2] + sx), b[3] = (int)ceil(box[k][3] + sy);
        b[0] = b[0] < 0 ? 0 : b[0], b[1] = b[1] < 0 ? 0 : b[1];
        b[2] = b[2] > w ? w : b[2], b[3] = b[3] > h ? h : b[3];
    }
    out->lines = r->n;
    free(r);
    if (rc == 0) {
        const float unit = (float)(size / 20); /* as for crops */
        for (int k = 0; k < e.spots; k++)
            e.spot_x[k] *= (float)w, e.spot_y[k] *= (float)h, e.spot_r[k] *= (float)(1.6 * size);
        e.blur *= 32 * unit;
        rc = apply_effects_to(coverage, w, h, &e, rng_derive(seed, (uint64_t)index, STREAM_NOISE),
                              &out->image, err);
    }
    free(coverage);
    if (rc == 0 && out->jpeg_quality > 0)
        rc = compress_image(&out->image, out->jpeg_quality, &out->jpeg, &out->jpeg_size, err);
    if (rc != 0) return ocr_page_free(out), -1;
    out->font = font, out->line_size = (float)size, out->pitch = (float)pitch;
    out->angle = angle, out->blur = e.blur, out->scale = e.scale, out->noise = e.noise;
    return 0;
}
