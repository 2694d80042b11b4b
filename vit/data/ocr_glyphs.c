/* Fonts and glyphs through FreeType: opening and checking fonts, laying out a line, drawing its
 * glyphs transformed and antialiased. */
#include "vit/data/ocr_glyphs.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "text/utf8.h"

#ifdef VIT_FREETYPE
#include <ft2build.h>
#include FT_FREETYPE_H

struct ocr_fonts {
    FT_Library lib;
    int count;
    FT_Face *faces;
    char **paths;
    double *cap, *extent; /* per em */
};

int ocr_render_built_in(void) {
    return 1;
}

const char *ocr_render_library(void) {
    static char name[64];
    FT_Library lib;
    if (!name[0] && FT_Init_FreeType(&lib) == 0) { /* the library's version, not the headers' */
        FT_Int major, minor, patch;
        FT_Library_Version(lib, &major, &minor, &patch);
        snprintf(name, sizeof name, "FreeType %d.%d.%d", major, minor, patch);
        FT_Done_FreeType(lib);
    }
    return name[0] ? name : "FreeType";
}

/* A character of the set the face has no glyph for (0: none missing). */
static uint32_t missing_char(FT_Face face) {
    const uint8_t *s = (const uint8_t *)OCR_CHARSET;
    const size_t n = strlen(OCR_CHARSET);
    for (size_t i = 0; i < n;) {
        const int32_t cp = utf8_decode(s, n, &i);
        if (FT_Get_Char_Index(face, (FT_ULong)cp) == 0) return (uint32_t)cp;
    }
    return 0;
}

/* Opens font i and measures it. */
static int open_face(ocr_fonts *f, int i, const char *path, vit_error *err) {
    if (access(path, R_OK) != 0) return vit_fail(err, "%s: %s", path, strerror(errno));
    if (!(f->paths[i] = strdup(path))) return vit_fail(err, "out of memory");
    FT_Face face;
    if (FT_New_Face(f->lib, path, 0, &face) != 0)
        return vit_fail(err, "%s: not a font FreeType can read", path);
    f->faces[i] = face;
    if (FT_Select_Charmap(face, FT_ENCODING_UNICODE) != 0 || !FT_IS_SCALABLE(face))
        return vit_fail(err, "%s: not a scalable font with a Unicode character map", path);
    const uint32_t cp = missing_char(face);
    if (cp) {
        char ch[5] = {0};
        utf8_encode((int32_t)cp, (uint8_t *)ch);
        return vit_fail(err, "%s: has no glyph for '%s' (U+%04X), a character of the OCR set", path,
                        ch, cp);
    }
    if (FT_Load_Char(face, 'H', FT_LOAD_NO_SCALE) != 0)
        return vit_fail(err, "%s: cannot load the glyph of 'H'", path);
    f->cap[i] = (double)face->glyph->metrics.height / face->units_per_EM;
    f->extent[i] = (double)(face->ascender - face->descender) / face->units_per_EM;
    if (f->cap[i] <= 0 || f->extent[i] <= f->cap[i])
        return vit_fail(err,
                        "%s: implausible metrics (capital height %.3f, ascender - descender "
                        "%.3f em)",
                        path, f->cap[i], f->extent[i]);
    return 0;
}

ocr_fonts *ocr_fonts_open(const char *const *paths, int n, vit_error *err) {
    if (n < 1) return vit_fail(err, "no font given"), NULL;
    ocr_fonts *f = calloc(1, sizeof *f);
    if (f) {
        f->faces = calloc((size_t)n, sizeof *f->faces);
        f->paths = calloc((size_t)n, sizeof *f->paths);
        f->cap = calloc((size_t)n, sizeof *f->cap);
        f->extent = calloc((size_t)n, sizeof *f->extent);
    }
    if (!f || !f->faces || !f->paths || !f->cap || !f->extent) {
        vit_fail(err, "out of memory");
        ocr_fonts_free(f);
        return NULL;
    }
    f->count = n;
    if (FT_Init_FreeType(&f->lib) != 0) {
        vit_fail(err, "FreeType failed to start");
        ocr_fonts_free(f);
        return NULL;
    }
    for (int i = 0; i < n; i++)
        if (open_face(f, i, paths[i], err) != 0) {
            ocr_fonts_free(f);
            return NULL;
        }
    return f;
}

void ocr_fonts_free(ocr_fonts *f) {
    if (!f) return;
    for (int i = 0; i < f->count; i++) {
        if (f->faces && f->faces[i]) FT_Done_Face(f->faces[i]);
        if (f->paths) free(f->paths[i]);
    }
    if (f->lib) FT_Done_FreeType(f->lib);
    free(f->faces), free(f->paths), free(f->cap), free(f->extent);
    free(f);
}

int ocr_fonts_count(const ocr_fonts *f) {
    return f->count;
}

const char *ocr_fonts_path(const ocr_fonts *f, int i) {
    return f->paths[i];
}

double ocr_glyphs_cap(const ocr_fonts *f, int i) {
    return f->cap[i];
}

double ocr_glyphs_extent(const ocr_fonts *f, int i) {
    return f->extent[i];
}

static int set_size(FT_Face face, double em, vit_error *err) {
    FT_Set_Transform(face, NULL, NULL);
    if (FT_Set_Char_Size(face, 0, (FT_F26Dot6)lround(em * 64), 72, 72) != 0)
        return vit_fail(err, "%s: cannot set a size of %.2f pixels", face->family_name, em);
    return 0;
}

/* Glyph k of the run: its index, origin (pen + kerning after prev) and outline box; the pen moves
 * on by its advance. */
static int place_glyph(FT_Face face, uint32_t cp, FT_UInt prev, double *pen, glyph_run *g, int k,
                       vit_error *err) {
    const FT_UInt gi = FT_Get_Char_Index(face, cp);
    if (prev && gi && FT_HAS_KERNING(face)) {
        FT_Vector kern;
        if (FT_Get_Kerning(face, prev, gi, FT_KERNING_UNFITTED, &kern) == 0) *pen += kern.x / 64.0;
    }
    if (FT_Load_Glyph(face, gi, FT_LOAD_NO_HINTING | FT_LOAD_NO_BITMAP) != 0)
        return vit_fail(err, "%s: cannot load the glyph of U+%04X", face->family_name, cp);
    const FT_Glyph_Metrics *m = &face->glyph->metrics;
    g->glyph[k] = gi;
    g->pen[k] = *pen;
    const int blank = m->width == 0 || m->height == 0;
    g->x0[k] = blank ? 1 : m->horiBearingX / 64.0;
    g->x1[k] = blank ? 0 : (m->horiBearingX + m->width) / 64.0;
    g->y1[k] = m->horiBearingY / 64.0;
    g->y0[k] = (m->horiBearingY - m->height) / 64.0;
    *pen += face->glyph->linearHoriAdvance / 65536.0;
    return 0;
}

/* Extends [*lo, *hi] by glyph k's ink; returns the new width. */
static double span_with(const glyph_run *g, int k, double *lo, double *hi) {
    if (g->x0[k] <= g->x1[k]) {
        if (g->pen[k] + g->x0[k] < *lo) *lo = g->pen[k] + g->x0[k];
        if (g->pen[k] + g->x1[k] > *hi) *hi = g->pen[k] + g->x1[k];
    }
    return *hi > *lo ? *hi - *lo : 0;
}

int ocr_glyphs_layout(ocr_fonts *f, int i, double em, const char *text, size_t len, double budget,
                      glyph_run *g, vit_error *err) {
    FT_Face face = f->faces[i];
    if (set_size(face, em, err) != 0) return -1;
    double pen = 0, lo = INFINITY, hi = -INFINITY;
    int words_end = 0, fits = 0; /* glyphs up to the last word's end that fits; all that fit */
    size_t words_bytes = 0, fits_bytes = 0, at = 0;
    FT_UInt prev = 0;
    for (int k = 0; at < len && k < OCR_DRAW_BYTES; k++) {
        const int32_t cp = utf8_decode((const uint8_t *)text, len, &at);
        if (cp < 0) return vit_fail(err, "a line's text is not valid UTF-8");
        if (place_glyph(face, (uint32_t)cp, prev, &pen, g, k, err) != 0) return -1;
        prev = g->glyph[k];
        if (span_with(g, k, &lo, &hi) > budget) break;
        fits = k + 1, fits_bytes = at;
        if (at == len || text[at] == ' ') words_end = k + 1, words_bytes = at;
    }
    g->n = words_end ? words_end : fits ? fits : 1;
    g->bytes = words_end ? words_bytes : fits ? fits_bytes : 0;
    if (g->bytes == 0) { /* not even one character fits: it is drawn anyway, the caller shrinks */
        size_t first = 0;
        utf8_decode((const uint8_t *)text, len, &first);
        g->bytes = first;
    }
    return 0;
}

/* Adds a rendered glyph bitmap at canvas column x, row y; returns the coverage that fell outside.
 */
static double blit(const FT_Bitmap *b, int x, int y, float *coverage, int w, int h) {
    double outside = 0;
    for (unsigned r = 0; r < b->rows; r++) {
        const unsigned char *row =
            b->pitch > 0 ? b->buffer + (size_t)r * (size_t)b->pitch
                         : b->buffer + (size_t)(b->rows - 1 - r) * (size_t)(-b->pitch);
        for (unsigned c = 0; c < b->width; c++) {
            if (!row[c]) continue;
            const int cx = x + (int)c, cy = y + (int)r;
            const float a = row[c] / 255.0f;
            if (cx < 0 || cy < 0 || cx >= w || cy >= h) {
                outside += a;
                continue;
            }
            float *p = &coverage[(size_t)cy * (size_t)w + (size_t)cx];
            *p = *p + a > 1 ? 1 : *p + a;
        }
    }
    return outside;
}

int ocr_glyphs_draw(ocr_fonts *f, int i, double em, const glyph_run *g, const double m[4],
                    double ox, double oy, float *coverage, int w, int h, double tolerance,
                    vit_error *err) {
    FT_Face face = f->faces[i];
    if (set_size(face, em, err) != 0) return -1;
    FT_Matrix matrix = {(FT_Fixed)lround(m[0] * 65536), (FT_Fixed)lround(m[1] * 65536),
                        (FT_Fixed)lround(m[2] * 65536), (FT_Fixed)lround(m[3] * 65536)};
    for (int k = 0; k < g->n; k++) {
        if (g->x0[k] > g->x1[k]) continue; /* blank */
        /* the glyph's origin on the canvas: its integer pixel, and the fraction FreeType shifts
         * the outline by (y up) */
        const double px = ox + m[0] * g->pen[k], py = oy - m[2] * g->pen[k];
        const double ix = floor(px), iy = floor(py);
        FT_Vector delta = {(FT_Pos)lround((px - ix) * 64), (FT_Pos)lround(-(py - iy) * 64)};
        FT_Set_Transform(face, &matrix, &delta);
        if (FT_Load_Glyph(face, g->glyph[k],
                          FT_LOAD_NO_HINTING | FT_LOAD_NO_BITMAP | FT_LOAD_RENDER) != 0)
            return vit_fail(err, "%s: cannot render glyph %u", face->family_name, g->glyph[k]);
        const FT_GlyphSlot s = face->glyph;
        if (s->bitmap.pixel_mode != FT_PIXEL_MODE_GRAY)
            return vit_fail(err, "%s: FreeType gave a bitmap that is not 8-bit grey",
                            face->family_name);
        if (blit(&s->bitmap, (int)ix + s->bitmap_left, (int)iy - s->bitmap_top, coverage, w, h) >
            tolerance)
            return vit_fail(err, "internal error: a glyph of '%s' fell outside the %dx%d canvas",
                            face->family_name, w, h);
    }
    FT_Set_Transform(face, NULL, NULL);
    return 0;
}

#else /* built without FreeType: no font opens, and each entry point says why */

#define NO_FREETYPE                                                                                \
    "this vit was built without FreeType, which renders text: install libfreetype-dev (make "      \
    "deps-optional) and rebuild"

int ocr_render_built_in(void) {
    return 0;
}

const char *ocr_render_library(void) {
    return NULL;
}

ocr_fonts *ocr_fonts_open(const char *const *paths, int n, vit_error *err) {
    (void)paths, (void)n;
    vit_fail(err, NO_FREETYPE);
    return NULL;
}

void ocr_fonts_free(ocr_fonts *f) {
    (void)f;
}

int ocr_fonts_count(const ocr_fonts *f) {
    (void)f;
    return 0;
}

const char *ocr_fonts_path(const ocr_fonts *f, int i) {
    (void)f, (void)i;
    return NULL;
}

double ocr_glyphs_cap(const ocr_fonts *f, int i) {
    (void)f, (void)i;
    return 0;
}

double ocr_glyphs_extent(const ocr_fonts *f, int i) {
    (void)f, (void)i;
    return 0;
}

int ocr_glyphs_layout(ocr_fonts *f, int i, double em, const char *text, size_t len, double budget,
                      glyph_run *g, vit_error *err) {
    (void)f, (void)i, (void)em, (void)text, (void)len, (void)budget, (void)g;
    return vit_fail(err, NO_FREETYPE);
}

int ocr_glyphs_draw(ocr_fonts *f, int i, double em, const glyph_run *g, const double m[4],
                    double ox, double oy, float *coverage, int w, int h, double tolerance,
                    vit_error *err) {
    (void)f, (void)i, (void)em, (void)g, (void)m, (void)ox, (void)oy, (void)coverage, (void)w,
        (void)h, (void)tolerance;
    return vit_fail(err, NO_FREETYPE);
}
#endif
