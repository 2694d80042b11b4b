#ifndef VIT_DATA_OCR_RENDER_H
#define VIT_DATA_OCR_RENDER_H

/* Synthetic printed text lines for training and testing OCR: a text (vit/data/ocr_text.h) set in
 * a real font through FreeType, on a canvas of fixed height and width, then, for a "degraded"
 * line, what scans and photos do to print: uneven paper and lighting, low contrast, thicker or
 * thinner strokes, slight rotation and shear, blur, lost resolution, noise and JPEG compression.
 *
 *   ocr_fonts *fonts = ocr_fonts_open(paths, n, &err);
 *   ocr_render_options o = ocr_render_default_options();
 *   ocr_line line;
 *   for (long i = 0; i < count; i++) {
 *       ocr_render_line(fonts, &sentences, &held_out, &o, seed, i, &line, &err);
 *       ... line.image (grey), line.text (its label), line.jpeg (the file, when compressed) ...
 *       ocr_line_free(&line);
 *   }
 *   ocr_fonts_free(fonts);
 *
 * Line i of a seed depends on (seed, i) only: the same whatever the thread count or the first
 * line of a run. Its text and layout (font, size, margins) come from streams of their own and the
 * effects from another, so the same seed rendered clean (degrade 0) and degraded (degrade 1)
 * shows the same texts in the same fonts: pairs that differ by the effects alone.
 *
 * The text is never cut: the label is exactly the characters drawn, every glyph inside the
 * canvas. Glyphs are placed at sub-pixel positions with the fonts' 'kern' table (no shaping: no
 * ligatures, no GPOS kerning), without hinting, antialiased.
 *
 * A context is used by one thread at a time (FreeType faces are not shared between threads):
 * open one per thread. Built without FreeType, ocr_fonts_open fails saying so. */

#include <stdint.h>

#include "image/image.h"
#include "vit/base/error.h"
#include "vit/data/ocr_text.h"

typedef struct ocr_fonts ocr_fonts;

/* Whether this build renders text (it has FreeType), and what with: "FreeType 2.12.1" (NULL
 * without). */
int ocr_render_built_in(void);
const char *ocr_render_library(void);

/* Opens the font files paths[0..n) (TrueType or OpenType), each of which must have a glyph for
 * every character of OCR_CHARSET. NULL with err naming the file and the problem (not found, not a
 * font, a character missing). */
ocr_fonts *ocr_fonts_open(const char *const *paths, int n, vit_error *err);
void ocr_fonts_free(ocr_fonts *f);
int ocr_fonts_count(const ocr_fonts *f);
const char *ocr_fonts_path(const ocr_fonts *f, int i);

typedef struct {
    int height, width; /* the canvas, pixels (height 16..512, width >= 4·height) */
    double degrade;    /* probability that a line gets the effects (0: all clean, 1: all not) */
    ocr_text_options text;
    /* Lines as people crop them (crop 1; height, width and text are then unused): each line at
     * its own size, its line height (the font's ascender - descender) drawn log-uniformly in
     * line_min..line_max pixels, its text page-like (ocr_text_draw_page), and the image cut
     * around its ink: with probability `tight` 0-2 px on each side, else each side's margin
     * drawn on its own up to the line height; a loose crop shows, with probability
     * `neighbours`, the lines above and below it, whose ascenders and descenders peek in. */
    int crop;
    int line_min, line_max; /* 8..512 */
    double tight, neighbours;
    /* Given texts instead of drawn ones (crop or not): line i shows texts[i % text_count]. */
    const char *const *texts;
    int text_count;
} ocr_render_options;

/* 32 x 384, degrade 0.8, OCR_TEXT_DEFAULTS; not cropped (line heights 16..96, tight 0.4,
 * neighbours 0.3 when crop is set). */
ocr_render_options ocr_render_default_options(void);

/* What a line shows and how it was made. */
typedef struct {
    char text[OCR_DRAW_BYTES + 1]; /* the label: the characters drawn, UTF-8 */
    image_u8
        image; /* grey, height x width (a compressed line's: what its JPEG decodes to); owned */
    int font;  /* index among the fonts */
    float cap_height; /* pixels */
    int degraded;     /* whether the effects below were drawn */
    /* the effects (0, or 1 for gamma and scale, when off): rotation in degrees, shear (x += shear
     * · height above the baseline), stroke gamma (> 1 thinner), paper and ink grey levels in
     * 0..1, blur sigma in pixels, scale the resolution was lost to, noise sigma in 0..1 */
    float angle, shear, gamma, paper, ink, blur, scale, noise;
    int jpeg_quality; /* 0: none; else the line was compressed to JPEG at this quality: */
    uint8_t *jpeg;    /* the JPEG file's bytes (jpeg_size of them; owned), else NULL */
    size_t jpeg_size;
    int ink_left, ink_right; /* the columns the glyphs' outlines span (before the effects) */
    /* the label's ink box in the image, pixels [box[0], box[2]) x [box[1], box[3]) (x0 y0 x1 y1,
     * the outlines' box after rotation and shear, rounded outwards) */
    int box[4];
    int kind;        /* the text's ocr_text_kind (-1: given or drawn by ocr_text_draw) */
    float line_size; /* the font's ascender - descender, pixels */
    int tight;       /* a crop: whether it is tight */
    int neighbours;  /* a crop: whether the lines above and below were drawn */
} ocr_line;

/* Renders line `index` of the set `seed` (see above) into *out. Its text is drawn from sentences
 * (NULL: generated items only) and is never one that occurs inside a sentence of held_out (may be
 * NULL), ignoring case; a draw that does is redrawn. Returns 0, or -1 with err (out of memory;
 * 1000 draws in a row held out). */
int ocr_render_line(ocr_fonts *f, const ocr_sentences *sentences, const ocr_sentences *held_out,
                    const ocr_render_options *o, uint64_t seed, long index, ocr_line *out,
                    vit_error *err);
void ocr_line_free(ocr_line *line);

/* ---- pages: paragraphs of several lines, for held-out sets of lines cut from pages ----
 *
 * A page in one font: maybe a heading (Title Case or capitals, up to 1.5 x the body's size, across
 * the columns), then 1-3 paragraphs (whole sentences; 15% generated items: numbers, dates, prices,
 * codes) in one column or two, left-aligned, wrapped at word ends, at
 * a line height (the font's ascender - descender) drawn log-uniformly in line_min..line_max and a
 * pitch of 1-1.3 line heights; paragraphs indented or spaced. Degraded (probability degrade), the
 * whole page gets the line effects: a slight skew (rotation up to 2 degrees about its centre),
 * paper and lighting, stroke weight, blur, lost resolution, noise, JPEG. Each line's true box is
 * the box of its glyph outlines after the skew, rounded outwards. Page i depends on (seed, i)
 * only. */

#define OCR_PAGE_LINES 64

typedef struct {
    int line_min, line_max; /* 8..512 */
    double degrade;
} ocr_page_options;

typedef struct {
    char text[OCR_DRAW_BYTES + 1];
    int box[4]; /* x0 y0 x1 y1, pixels, [x0, x1) x [y0, y1) */
    int column; /* 0 or 1; -1 for the heading */
} ocr_page_line;

typedef struct {
    image_u8 image; /* grey; a compressed page's: what its JPEG decodes to; owned */
    int jpeg_quality;
    uint8_t *jpeg; /* the JPEG file's bytes (owned), else NULL */
    size_t jpeg_size;
    int font, columns, degraded;
    float line_size, pitch; /* the body's line height and baseline-to-baseline distance */
    float angle, blur, scale, noise;
    int lines; /* in reading order: the heading, then each column top to bottom */
    ocr_page_line line[OCR_PAGE_LINES];
} ocr_page;

/* Renders page `index` of the set `seed` into *out (free with ocr_page_free), its texts from
 * sentences (NULL: generated items). Returns 0, or -1 with err. */
int ocr_render_page(ocr_fonts *f, const ocr_sentences *sentences, const ocr_page_options *o,
                    uint64_t seed, long index, ocr_page *out, vit_error *err);
void ocr_page_free(ocr_page *page);

#endif
