#ifndef VIT_IMAGE_PLOT_H
#define VIT_IMAGE_PLOT_H

/* Line charts on RGB pixels (training curves): panels side by side, each with a title, axes whose
 * ticks fall on 1-2-5 steps, a legend of its series and their lines with a mark at every point.
 * Drawn with the 5x7 font of draw.h; the same input gives the same pixels. */

#include <stddef.h>
#include <stdint.h>

#include "image/image.h"
#include "vit/base/error.h"

/* Where a panel's plotting area sits inside the panel (pixels from its edges): the title and the
 * legend above it, the y tick labels to its left, the x tick labels and the x label below. A point
 * (x, y) lands at column left + (x - x.lo) / (x.hi - x.lo) * (area width - 1) of the area, and at
 * the row as far up from the area's bottom row, both rounded to the nearest pixel. */
#define PLOT_MARGIN_LEFT   58
#define PLOT_MARGIN_RIGHT  16
#define PLOT_MARGIN_TOP    48
#define PLOT_MARGIN_BOTTOM 36

#define PLOT_MIN_WIDTH  160 /* smallest panel the margins leave room in */
#define PLOT_MIN_HEIGHT 120
#define PLOT_MAX_SIDE   4096
#define PLOT_MAX_PANELS 16

typedef struct {
    const char *name; /* in the legend */
    uint8_t rgb[3];
    int n;
    const double *x, *y; /* n points; a point with a NaN is missing: the line breaks there */
} plot_series;

/* An axis's ends: each taken from the data (padded by 5 % of the span), or fixed. */
typedef struct {
    int lo_fixed, hi_fixed;
    double lo, hi;
} plot_range;

typedef struct {
    const char *title, *x_label;
    const plot_series *series;
    int n_series;
    plot_range x, y;
    int x_integer; /* ticks at whole numbers only (epochs) */
} plot_panel;

/* An axis as drawn: from lo to hi, `ticks` ticks at first, first + step, ...; step is 1, 2 or 5
 * times 10^exponent. */
typedef struct {
    double lo, hi, first, step;
    int exponent, ticks;
} plot_axis;

/* The ticks of [lo, hi] (lo < hi): the smallest 1-2-5 step (at least 1 when integer) that puts at
 * most max_ticks (>= 2) of its multiples inside the range. */
plot_axis plot_nice_axis(double lo, double hi, int max_ticks, int integer);

/* The i-th tick's label: as many decimals as the step has ("0.2", "10", "0.005"). */
void plot_tick_label(const plot_axis *a, int i, char *buf, size_t size);

/* The chart: n_panels panels of panel_width x panel_height side by side, on a white RGB picture
 * (image_free it). A panel without a finite point says "no data"; a series without one is left
 * out of its legend. Errors: sizes out of range, a fixed range with lo >= hi, a series with points
 * but no x or y. */
int plot_draw(const plot_panel *panels, int n_panels, int panel_width, int panel_height,
              image_u8 *out, vit_error *err);

/* A count matrix (a confusion matrix: rows the true class, columns the predicted one) on a white
 * RGB picture (image_free it): cell (i, j) PLOT_CELL_W x PLOT_CELL_H, shaded from white (0) to
 * dark blue (the whole row) by counts[i·n + j] / its row's total, the count written in it (white on
 * dark cells, nothing for 0); rows named "i name" to the left, columns numbered i above, each
 * row's diagonal share right of it ("97.3%", "-" for an empty row), the title on top (the picture
 * widened to hold it whole, up to 127 characters, when the cells are narrower). Cell (i, j)'s
 * top-left corner is at (plot_matrix_left(names, n) + j·PLOT_CELL_W, PLOT_MATRIX_TOP +
 * i·PLOT_CELL_H). Errors: n outside 1..PLOT_MAX_MATRIX, a negative count. */
#define PLOT_CELL_W     56
#define PLOT_CELL_H     36
#define PLOT_MATRIX_TOP 64
#define PLOT_MAX_MATRIX 64
int plot_matrix_left(const char *const *names, int n);
int plot_matrix(const int *counts, int n, const char *const *names, const char *title,
                image_u8 *out, vit_error *err);

#endif
