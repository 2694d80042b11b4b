#ifndef VIT_DATA_OCR_GLYPHS_H
#define VIT_DATA_OCR_GLYPHS_H

/* The FreeType half of vit/data/ocr_render.h: fonts (ocr_fonts_open there), a text laid out as a
 * run of glyphs, the run drawn as ink coverage through an affine transform. Coordinates are
 * pixels, y up from the baseline, x from the first glyph's origin. Without FreeType in the build
 * no font opens, so none of the rest is reached. */

#include <stddef.h>

#include "vit/base/error.h"
#include "vit/data/ocr_render.h"

typedef struct {
    int n;        /* glyphs */
    size_t bytes; /* the text they show: text[0..bytes) */
    unsigned glyph[OCR_DRAW_BYTES];
    double pen[OCR_DRAW_BYTES]; /* each glyph's origin on the baseline */
    /* each glyph's outline box relative to its origin; x0 > x1 for a blank glyph (a space) */
    double x0[OCR_DRAW_BYTES], x1[OCR_DRAW_BYTES], y0[OCR_DRAW_BYTES], y1[OCR_DRAW_BYTES];
} glyph_run;

/* Font i's capital height ('H') and its ascender - descender, per em. */
double ocr_glyphs_cap(const ocr_fonts *f, int i);
double ocr_glyphs_extent(const ocr_fonts *f, int i);

/* Lays out text[0..len) (UTF-8 of OCR_CHARSET) in font i at em pixels per em: advances from the
 * unhinted outlines plus the font's 'kern' pairs. Keeps the longest run of whole words whose
 * outlines span at most budget pixels (the first word's characters that fit when even it does
 * not; at least one character). Returns 0, or -1 with err. */
int ocr_glyphs_layout(ocr_fonts *f, int i, double em, const char *text, size_t len, double budget,
                      glyph_run *g, vit_error *err);

/* Adds the run's ink coverage (clamped at 1) to coverage [h, w]: each glyph's outline transformed
 * by m (x' = m[0]·x + m[1]·y, y' = m[2]·x + m[3]·y, y up) about the run's origin, which sits at
 * canvas point (ox, oy) (x right, y down, pixel (c, r) covering [c, c+1) x [r, r+1)), rendered
 * antialiased. Returns 0, or -1 with err when FreeType fails or more than `tolerance` of a glyph's
 * coverage falls outside the canvas (0 for a placed label: the caller placed it to fit, so that
 * is a bug, never a cut label; INFINITY for neighbouring lines a crop cuts). */
int ocr_glyphs_draw(ocr_fonts *f, int i, double em, const glyph_run *g, const double m[4],
                    double ox, double oy, float *coverage, int w, int h, double tolerance,
                    vit_error *err);

#endif
