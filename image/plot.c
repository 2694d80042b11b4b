#include "image/plot.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "image/draw.h"

static const uint8_t background[3] = {255, 255, 255}, grid[3] = {228, 228, 228},
                     frame[3] = {110, 110, 110}, ink[3] = {40, 40, 40};

/* ---- ticks ---- */

/* 1, 2 or 5 times 10^exponent. */
typedef struct {
    int mantissa, exponent;
} nice_step;

static double step_value(nice_step s) {
    /* a division for negative exponents: 2 / 10 is the double nearest 0.2, 2 * 0.1 is not */
    return s.exponent >= 0 ? s.mantissa * pow(10.0, s.exponent)
                           : s.mantissa / pow(10.0, -s.exponent);
}

static nice_step next_step(nice_step s) {
    if (s.mantissa == 5) return (nice_step){1, s.exponent + 1};
    return (nice_step){s.mantissa == 1 ? 2 : 5, s.exponent};
}

/* The smallest 1-2-5 step not below want (> 0). */
static nice_step step_at_least(double want) {
    nice_step s = {1, (int)floor(log10(want))};
    while (step_value(s) < want * (1 - 1e-9)) s = next_step(s);
    return s;
}

/* Multiples of step in [lo, hi], as the first and the count; the tolerance keeps an end that is a
 * multiple but divides a hair off (1 / 0.2) inside. */
static long first_multiple(double lo, double step) {
    return (long)ceil(lo / step - 1e-9);
}

static int multiples_inside(double lo, double hi, double step) {
    return (int)((long)floor(hi / step + 1e-9) - first_multiple(lo, step) + 1);
}

plot_axis plot_nice_axis(double lo, double hi, int max_ticks, int integer) {
    if (max_ticks < 2) max_ticks = 2;
    nice_step s = step_at_least((hi - lo) / max_ticks);
    if (integer && s.exponent < 0) s = (nice_step){1, 0};
    /* (hi - lo) / step <= max_ticks, so one step up always suffices */
    if (multiples_inside(lo, hi, step_value(s)) > max_ticks) s = next_step(s);
    const double step = step_value(s);
    return (plot_axis){.lo = lo,
                       .hi = hi,
                       .first = (double)first_multiple(lo, step) * step,
                       .step = step,
                       .exponent = s.exponent,
                       .ticks = multiples_inside(lo, hi, step)};
}

void plot_tick_label(const plot_axis *a, int i, char *buf, size_t size) {
    double v = a->first + i * a->step;
    if (fabs(v) < 0.5 * a->step) v = 0.0; /* no "-0.0" */
    const int decimals = a->exponent < 0 ? -a->exponent : 0;
    if (decimals > 6 || fabs(v) >= 1e7)
        snprintf(buf, size, "%.3g", v);
    else
        snprintf(buf, size, "%.*f", decimals, v);
}

/* ---- pixels ---- */

/* Inclusive pixel bounds. */
typedef struct {
    int x0, y0, x1, y1;
} rect;

static void blend(image_u8 *img, const rect *clip, int x, int y, const uint8_t rgb[3], float a) {
    if (x < clip->x0 || x > clip->x1 || y < clip->y0 || y > clip->y1 || a <= 0.0f) return;
    if (a > 1.0f) a = 1.0f;
    uint8_t *p = img->pixels + ((size_t)y * img->width + x) * 3;
    for (int c = 0; c < 3; c++) p[c] = (uint8_t)lrintf((1.0f - a) * p[c] + a * rgb[c]);
}

static void fill(image_u8 *img, rect r, const uint8_t rgb[3]) {
    const rect all = {0, 0, img->width - 1, img->height - 1};
    for (int y = r.y0; y <= r.y1; y++)
        for (int x = r.x0; x <= r.x1; x++) blend(img, &all, x, y, rgb, 1.0f);
}

/* Distance from (px, py) to the segment a-b. */
static float segment_distance(float px, float py, float ax, float ay, float bx, float by) {
    const float dx = bx - ax, dy = by - ay, len2 = dx * dx + dy * dy;
    float t = len2 > 0.0f ? ((px - ax) * dx + (py - ay) * dy) / len2 : 0.0f;
    t = t < 0.0f ? 0.0f : t > 1.0f ? 1.0f : t;
    const float ex = ax + t * dx - px, ey = ay + t * dy - py;
    return sqrtf(ex * ex + ey * ey);
}

/* An antialiased line `width` pixels wide: each pixel covered as far as it lies inside. */
static void draw_segment(image_u8 *img, const rect *clip, float ax, float ay, float bx, float by,
                         float width, const uint8_t rgb[3]) {
    const float reach = width / 2.0f + 1.0f;
    const int x0 = (int)floorf(fminf(ax, bx) - reach), x1 = (int)ceilf(fmaxf(ax, bx) + reach);
    const int y0 = (int)floorf(fminf(ay, by) - reach), y1 = (int)ceilf(fmaxf(ay, by) + reach);
    for (int y = y0 > clip->y0 ? y0 : clip->y0; y <= y1 && y <= clip->y1; y++)
        for (int x = x0 > clip->x0 ? x0 : clip->x0; x <= x1 && x <= clip->x1; x++) {
            const float d = segment_distance((float)x, (float)y, ax, ay, bx, by);
            blend(img, clip, x, y, rgb, width / 2.0f + 0.5f - d);
        }
}

/* An antialiased disc: a point's mark (its centre pixel exactly the colour). */
static void draw_dot(image_u8 *img, const rect *clip, float cx, float cy, float radius,
                     const uint8_t rgb[3]) {
    const int x = (int)lrintf(cx), y = (int)lrintf(cy), r = (int)ceilf(radius) + 1;
    for (int dy = -r; dy <= r; dy++)
        for (int dx = -r; dx <= r; dx++)
            blend(img, clip, x + dx, y + dy, rgb,
                  radius + 0.5f - sqrtf((float)(dx * dx + dy * dy)));
}

/* ---- text ---- */

static int text_width(const char *s, int scale) {
    const int n = (int)strlen(s);
    return n ? (6 * n - 1) * scale : 0;
}

/* Text from x (never left of min_x) on, cut to fit before max_x. */
static void put_text(image_u8 *img, int x, int y, int scale, int min_x, int max_x, const char *s,
                     const uint8_t rgb[3]) {
    char buf[128];
    if (x < min_x) x = min_x;
    const int room = (max_x - x + scale) / (6 * scale);
    if (room <= 0) return;
    snprintf(buf, sizeof buf, "%.*s", room, s);
    draw_text(img, x, y, scale, buf, rgb);
}

/* ---- one panel ---- */

typedef struct {
    image_u8 *img;
    const plot_panel *p;
    rect panel, area;
    plot_axis x, y;
} panel_view;

static float column(const panel_view *v, double x) {
    return (float)(v->area.x0 + (x - v->x.lo) / (v->x.hi - v->x.lo) * (v->area.x1 - v->area.x0));
}

static float row(const panel_view *v, double y) {
    return (float)(v->area.y1 - (y - v->y.lo) / (v->y.hi - v->y.lo) * (v->area.y1 - v->area.y0));
}

static int finite_point(const plot_series *s, int i) {
    return isfinite(s->x[i]) && isfinite(s->y[i]);
}

static int series_has_data(const plot_series *s) {
    for (int i = 0; i < s->n; i++)
        if (finite_point(s, i)) return 1;
    return 0;
}

/* The smallest and largest finite x (which = 0) or y (1) of the panel's points; 0 if none. */
static int data_extent(const plot_panel *p, int which, double *lo, double *hi) {
    int any = 0;
    for (int k = 0; k < p->n_series; k++)
        for (int i = 0; i < p->series[k].n; i++) {
            if (!finite_point(&p->series[k], i)) continue;
            const double v = which ? p->series[k].y[i] : p->series[k].x[i];
            if (!any || v < *lo) *lo = v;
            if (!any || v > *hi) *hi = v;
            any = 1;
        }
    return any;
}

/* The axis's ends: the data's padded by 5 % of their span (of the value when they are one), or
 * the fixed ones. */
static void axis_ends(const plot_range *r, double lo, double hi, double *out_lo, double *out_hi) {
    const double span = hi - lo;
    const double pad = span > 0 ? 0.05 * span : lo != 0 ? 0.05 * fabs(lo) : 0.5;
    *out_lo = r->lo_fixed ? r->lo : lo - pad;
    *out_hi = r->hi_fixed ? r->hi : hi + pad;
    if (*out_lo >= *out_hi && r->hi_fixed)
        *out_lo = *out_hi - (fabs(*out_hi) > 0 ? fabs(*out_hi) : 1);
    if (*out_lo >= *out_hi) *out_hi = *out_lo + (fabs(*out_lo) > 0 ? fabs(*out_lo) : 1);
}

static void make_axes(panel_view *v) {
    double lo = 0, hi = 0, xlo, xhi, ylo, yhi;
    data_extent(v->p, 0, &lo, &hi);
    axis_ends(&v->p->x, lo, hi, &xlo, &xhi);
    data_extent(v->p, 1, &lo, &hi);
    axis_ends(&v->p->y, lo, hi, &ylo, &yhi);
    const int w = v->area.x1 - v->area.x0 + 1, h = v->area.y1 - v->area.y0 + 1;
    v->x = plot_nice_axis(xlo, xhi, w / 45, v->p->x_integer);
    v->y = plot_nice_axis(ylo, yhi, h / 36, 0);
}

static void draw_frame(const panel_view *v) {
    const rect a = v->area;
    fill(v->img, (rect){a.x0 - 1, a.y0 - 1, a.x1 + 1, a.y0 - 1}, frame);
    fill(v->img, (rect){a.x0 - 1, a.y1 + 1, a.x1 + 1, a.y1 + 1}, frame);
    fill(v->img, (rect){a.x0 - 1, a.y0, a.x0 - 1, a.y1}, frame);
    fill(v->img, (rect){a.x1 + 1, a.y0, a.x1 + 1, a.y1}, frame);
}

/* Grid lines across the area, tick marks outside the frame, labels beside them. */
static void draw_ticks(const panel_view *v) {
    const rect a = v->area;
    char label[32];
    for (int i = 0; i < v->x.ticks; i++) {
        const int x = (int)lrintf(column(v, v->x.first + i * v->x.step));
        fill(v->img, (rect){x, a.y0, x, a.y1}, grid);
        fill(v->img, (rect){x, a.y1 + 2, x, a.y1 + 4}, frame);
        plot_tick_label(&v->x, i, label, sizeof label);
        put_text(v->img, x - text_width(label, 1) / 2, a.y1 + 7, 1, v->panel.x0, v->panel.x1 + 1,
                 label, ink);
    }
    for (int i = 0; i < v->y.ticks; i++) {
        const int y = (int)lrintf(row(v, v->y.first + i * v->y.step));
        fill(v->img, (rect){a.x0, y, a.x1, y}, grid);
        fill(v->img, (rect){a.x0 - 4, y, a.x0 - 2, y}, frame);
        plot_tick_label(&v->y, i, label, sizeof label);
        put_text(v->img, a.x0 - 7 - text_width(label, 1), y - 3, 1, v->panel.x0, a.x0 - 6, label,
                 ink);
    }
}

/* A mark at every point (smaller when the points crowd), lines between neighbours that both
 * exist. The clip reaches past the area by a mark's radius, so marks at its edge stay whole. */
static void draw_series(const panel_view *v, const plot_series *s) {
    const float radius =
        (float)(v->area.x1 - v->area.x0) / (s->n > 1 ? s->n : 1) >= 12 ? 3.0f : 1.5f;
    const rect clip = {v->area.x0 - 3, v->area.y0 - 3, v->area.x1 + 3, v->area.y1 + 3};
    for (int i = 0; i + 1 < s->n; i++)
        if (finite_point(s, i) && finite_point(s, i + 1))
            draw_segment(v->img, &clip, column(v, s->x[i]), row(v, s->y[i]), column(v, s->x[i + 1]),
                         row(v, s->y[i + 1]), 2.0f, s->rgb);
    for (int i = 0; i < s->n; i++)
        if (finite_point(s, i))
            draw_dot(v->img, &clip, column(v, s->x[i]), row(v, s->y[i]), radius, s->rgb);
}

/* Under the title, left to right: a piece of line with its mark, then the name. */
static void draw_legend(const panel_view *v) {
    int x = v->area.x0;
    const int y = PLOT_MARGIN_TOP - 17;
    for (int k = 0; k < v->p->n_series; k++) {
        const plot_series *s = &v->p->series[k];
        if (!series_has_data(s) || x + 20 > v->panel.x1) continue;
        draw_segment(v->img, &v->panel, (float)x, (float)(y + 3), (float)(x + 14), (float)(y + 3),
                     2.0f, s->rgb);
        draw_dot(v->img, &v->panel, (float)(x + 7), (float)(y + 3), 3.0f, s->rgb);
        put_text(v->img, x + 19, y, 1, v->panel.x0, v->panel.x1 + 1, s->name ? s->name : "", ink);
        x += 19 + text_width(s->name ? s->name : "", 1) + 14;
    }
}

static void draw_labels(const panel_view *v) {
    const rect a = v->area, pn = v->panel;
    const int centre = (a.x0 + a.x1) / 2;
    const char *title = v->p->title ? v->p->title : "";
    const char *x_label = v->p->x_label ? v->p->x_label : "";
    put_text(v->img, centre - text_width(title, 2) / 2, 6, 2, pn.x0, pn.x1 + 1, title, ink);
    put_text(v->img, centre - text_width(x_label, 1) / 2, pn.y1 - 12, 1, pn.x0, pn.x1 + 1, x_label,
             ink);
}

static void draw_panel(image_u8 *img, const plot_panel *p, int left, int width, int height) {
    panel_view v = {.img = img, .p = p, .panel = {left, 0, left + width - 1, height - 1}};
    v.area = (rect){left + PLOT_MARGIN_LEFT, PLOT_MARGIN_TOP, left + width - 1 - PLOT_MARGIN_RIGHT,
                    height - 1 - PLOT_MARGIN_BOTTOM};
    double lo, hi;
    const int any = data_extent(p, 0, &lo, &hi);
    draw_labels(&v);
    if (!any) {
        const char *none = "no data";
        draw_frame(&v);
        put_text(img, (v.area.x0 + v.area.x1 - text_width(none, 1)) / 2,
                 (v.area.y0 + v.area.y1) / 2 - 3, 1, v.panel.x0, v.panel.x1 + 1, none, ink);
        return;
    }
    make_axes(&v);
    draw_ticks(&v);
    draw_frame(&v);
    for (int k = 0; k < p->n_series; k++) draw_series(&v, &p->series[k]);
    draw_legend(&v);
}

/* ---- the chart ---- */

static int check_panel(const plot_panel *p, int index, vit_error *err) {
    const char *name = p->title ? p->title : "";
    const plot_range *r[2] = {&p->x, &p->y};
    for (int i = 0; i < 2; i++)
        if (r[i]->lo_fixed && r[i]->hi_fixed && !(r[i]->lo < r[i]->hi))
            return vit_fail(err, "plot panel %d (%s): the fixed %c range is empty", index, name,
                            "xy"[i]);
    if (p->n_series < 0 || (p->n_series > 0 && !p->series))
        return vit_fail(err, "plot panel %d (%s): no series", index, name);
    for (int k = 0; k < p->n_series; k++) {
        const plot_series *s = &p->series[k];
        if (s->n < 0 || (s->n > 0 && (!s->x || !s->y)))
            return vit_fail(err, "plot panel %d (%s): series %d has %d points and no values", index,
                            name, k, s->n);
    }
    return 0;
}

int plot_draw(const plot_panel *panels, int n_panels, int panel_width, int panel_height,
              image_u8 *out, vit_error *err) {
    memset(out, 0, sizeof *out);
    if (n_panels < 1 || n_panels > PLOT_MAX_PANELS || !panels)
        return vit_fail(err, "a chart has 1 to %d panels, not %d", PLOT_MAX_PANELS, n_panels);
    if (panel_width < PLOT_MIN_WIDTH || panel_height < PLOT_MIN_HEIGHT ||
        panel_width > PLOT_MAX_SIDE || panel_height > PLOT_MAX_SIDE)
        return vit_fail(err, "a chart's panel is %dx%d to %dx%d pixels, not %dx%d", PLOT_MIN_WIDTH,
                        PLOT_MIN_HEIGHT, PLOT_MAX_SIDE, PLOT_MAX_SIDE, panel_width, panel_height);
    for (int i = 0; i < n_panels; i++)
        if (check_panel(&panels[i], i, err) != 0) return -1;
    const size_t bytes = (size_t)panel_width * n_panels * panel_height * 3;
    out->pixels = malloc(bytes);
    if (!out->pixels)
        return vit_fail(err, "out of memory for a %dx%d chart", panel_width * n_panels,
                        panel_height);
    out->width = panel_width * n_panels, out->height = panel_height, out->channels = 3;
    memset(out->pixels, background[0], bytes);
    for (int i = 0; i < n_panels; i++)
        draw_panel(out, &panels[i], i * panel_width, panel_width, panel_height);
    return 0;
}

/* ---- a count matrix ---- */

#define MATRIX_MARGIN 12
#define MATRIX_SCALE  2  /* of the 5x7 font: 12 pixels a character */
#define MATRIX_NAME   24 /* characters of a row's name shown at most */

static void row_name(char *buf, size_t size, const char *const *names, int i) {
    snprintf(buf, size, "%d %.*s", i, MATRIX_NAME, names && names[i] ? names[i] : "");
}

int plot_matrix_left(const char *const *names, int n) {
    int widest = 0;
    for (int i = 0; i < n; i++) {
        char buf[64];
        row_name(buf, sizeof buf, names, i);
        const int w = text_width(buf, MATRIX_SCALE);
        if (w > widest) widest = w;
    }
    return MATRIX_MARGIN + widest + MATRIX_MARGIN;
}

/* White to dark blue (matplotlib's "Blues" ends) by share in [0, 1]. */
static void blues(double share, uint8_t rgb[3]) {
    static const double light[3] = {247, 251, 255}, dark[3] = {8, 48, 107};
    for (int c = 0; c < 3; c++) rgb[c] = (uint8_t)lrint(light[c] + share * (dark[c] - light[c]));
}

static void put_centred(image_u8 *img, int cx, int cy, const char *s, const uint8_t rgb[3]) {
    draw_text(img, cx - text_width(s, MATRIX_SCALE) / 2, cy - 7 * MATRIX_SCALE / 2, MATRIX_SCALE, s,
              rgb);
}

static void draw_cells(image_u8 *img, const int *counts, int n, int left) {
    static const uint8_t white[3] = {255, 255, 255};
    for (int i = 0; i < n; i++) {
        long total = 0;
        for (int j = 0; j < n; j++) total += counts[(size_t)i * n + j];
        for (int j = 0; j < n; j++) {
            const int c = counts[(size_t)i * n + j];
            const double share = total ? (double)c / (double)total : 0.0;
            uint8_t rgb[3];
            blues(share, rgb);
            const int x = left + j * PLOT_CELL_W, y = PLOT_MATRIX_TOP + i * PLOT_CELL_H;
            fill(img, (rect){x, y, x + PLOT_CELL_W - 1, y + PLOT_CELL_H - 1}, rgb);
            if (c == 0) continue;
            char buf[16];
            snprintf(buf, sizeof buf, "%d", c);
            put_centred(img, x + PLOT_CELL_W / 2, y + PLOT_CELL_H / 2, buf,
                        share > 0.5 ? white : ink);
        }
        char buf[32] = "-";
        if (total)
            snprintf(buf, sizeof buf, "%.1f%%", 100.0 * counts[(size_t)i * n + i] / (double)total);
        draw_text(img, left + n * PLOT_CELL_W + MATRIX_MARGIN,
                  PLOT_MATRIX_TOP + i * PLOT_CELL_H + (PLOT_CELL_H - 7 * MATRIX_SCALE) / 2,
                  MATRIX_SCALE, buf, ink);
    }
}

static void draw_matrix_grid(image_u8 *img, int n, int left) {
    const int right = left + n * PLOT_CELL_W, bottom = PLOT_MATRIX_TOP + n * PLOT_CELL_H;
    for (int k = 0; k <= n; k++) {
        const int x = left + k * PLOT_CELL_W - (k == n),
                  y = PLOT_MATRIX_TOP + k * PLOT_CELL_H - (k == n);
        fill(img, (rect){x, PLOT_MATRIX_TOP, x, bottom - 1}, grid);
        fill(img, (rect){left, y, right - 1, y}, grid);
    }
}

int plot_matrix(const int *counts, int n, const char *const *names, const char *title,
                image_u8 *out, vit_error *err) {
    memset(out, 0, sizeof *out);
    if (n < 1 || n > PLOT_MAX_MATRIX || !counts)
        return vit_fail(err, "a matrix chart has 1 to %d rows, not %d", PLOT_MAX_MATRIX, n);
    for (size_t i = 0; i < (size_t)n * n; i++)
        if (counts[i] < 0)
            return vit_fail(err, "a matrix chart's count is negative: %d", counts[i]);
    const int left = plot_matrix_left(names, n);
    const int cells =
        left + n * PLOT_CELL_W + MATRIX_MARGIN + text_width("100.0%", MATRIX_SCALE) + MATRIX_MARGIN;
    /* as wide as the title too: with few classes the cells alone left it cut short */
    const int titled = title ? MATRIX_MARGIN + text_width(title, MATRIX_SCALE) + MATRIX_MARGIN : 0;
    const int width = cells > titled ? cells : titled;
    const int height = PLOT_MATRIX_TOP + n * PLOT_CELL_H + MATRIX_MARGIN;
    const size_t bytes = (size_t)width * height * 3;
    if (!(out->pixels = malloc(bytes)))
        return vit_fail(err, "out of memory for a %dx%d chart", width, height);
    out->width = width, out->height = height, out->channels = 3;
    memset(out->pixels, background[0], bytes);
    if (title)
        put_text(out, MATRIX_MARGIN, MATRIX_MARGIN, MATRIX_SCALE, 0, width - MATRIX_MARGIN, title,
                 ink);
    for (int i = 0; i < n; i++) {
        char buf[64];
        row_name(buf, sizeof buf, names, i);
        draw_text(out, MATRIX_MARGIN,
                  PLOT_MATRIX_TOP + i * PLOT_CELL_H + (PLOT_CELL_H - 7 * MATRIX_SCALE) / 2,
                  MATRIX_SCALE, buf, ink);
        snprintf(buf, sizeof buf, "%d", i);
        put_centred(out, left + i * PLOT_CELL_W + PLOT_CELL_W / 2,
                    PLOT_MATRIX_TOP - 4 - 7 * MATRIX_SCALE / 2, buf, ink);
    }
    draw_cells(out, counts, n, left);
    draw_matrix_grid(out, n, left);
    return 0;
}
