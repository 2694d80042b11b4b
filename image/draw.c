#include "image/draw.h"

#include <float.h>
#include <math.h>
#include <png.h>
#include <stdlib.h>
#include <string.h>

#include "vit/base/file.h"

void heat_colour(float v, uint8_t rgb[3]) {
    /* inferno at 0, 1/4, 1/2, 3/4, 1 */
    static const float stops[5][3] = {
        {0, 0, 4}, {87, 16, 110}, {188, 55, 84}, {249, 142, 9}, {252, 255, 164}};
    v = v < 0.0f ? 0.0f : v > 1.0f ? 1.0f : v;
    const float at = v * 4.0f;
    const int i = at >= 4.0f ? 3 : (int)at;
    const float t = at - (float)i;
    for (int c = 0; c < 3; c++)
        rgb[c] = (uint8_t)lrintf(stops[i][c] + t * (stops[i + 1][c] - stops[i][c]));
}

/* The map at grid coordinates (gx, gy), bilinear between patch centres, clamped at the edges. */
static float sample(const float *map, int grid_h, int grid_w, float gx, float gy) {
    gx = gx < 0.0f ? 0.0f : gx > (float)(grid_w - 1) ? (float)(grid_w - 1) : gx;
    gy = gy < 0.0f ? 0.0f : gy > (float)(grid_h - 1) ? (float)(grid_h - 1) : gy;
    const int x0 = (int)gx, y0 = (int)gy;
    const int x1 = x0 + 1 < grid_w ? x0 + 1 : x0, y1 = y0 + 1 < grid_h ? y0 + 1 : y0;
    const float tx = gx - (float)x0, ty = gy - (float)y0;
    const float top = map[y0 * grid_w + x0] * (1 - tx) + map[y0 * grid_w + x1] * tx;
    const float bottom = map[y1 * grid_w + x0] * (1 - tx) + map[y1 * grid_w + x1] * tx;
    return top * (1 - ty) + bottom * ty;
}

static int compare_floats(const void *a, const void *b) {
    const float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* The colour scale's ends: the smallest value, and the 95th percentile (ViTs pile attention onto
 * a few background patches; scaled to the largest, the rest of the map would be black). */
static void scale_range(const float *map, int n, float *lo, float *hi) {
    float *sorted = malloc(sizeof(float) * n);
    if (!sorted) {
        *lo = 0.0f, *hi = 1.0f;
        return;
    }
    memcpy(sorted, map, sizeof(float) * n);
    qsort(sorted, n, sizeof(float), compare_floats);
    *lo = sorted[0];
    *hi = sorted[(int)(0.95 * (n - 1))];
    if (*hi <= *lo) *hi = sorted[n - 1];
    free(sorted);
}

void draw_heat_overlay(image_u8 *rgb, int orig_w, int orig_h, const preprocess_geometry *g,
                       const float *map, int grid_h, int grid_w, float alpha) {
    float lo, hi;
    scale_range(map, grid_h * grid_w, &lo, &hi);
    const float range = hi > lo ? hi - lo : 1.0f;
    /* picture pixel -> original -> resized -> model input -> grid */
    const double sx = (double)orig_w / rgb->width * g->resized_w / orig_w;
    const double sy = (double)orig_h / rgb->height * g->resized_h / orig_h;
    for (int y = 0; y < rgb->height; y++) {
        const double iy = (y + 0.5) * sy - g->top;
        for (int x = 0; x < rgb->width; x++) {
            const double ix = (x + 0.5) * sx - g->left;
            uint8_t *p = rgb->pixels + ((size_t)y * rgb->width + x) * 3;
            if (ix < 0 || iy < 0 || ix >= g->out_w || iy >= g->out_h) {
                for (int c = 0; c < 3; c++) p[c] = (uint8_t)(p[c] / 3);
                continue;
            }
            const float v = sample(map, grid_h, grid_w, (float)(ix / g->out_w * grid_w - 0.5),
                                   (float)(iy / g->out_h * grid_h - 0.5));
            uint8_t heat[3];
            heat_colour((v - lo) / range, heat);
            for (int c = 0; c < 3; c++)
                p[c] = (uint8_t)lrintf((1.0f - alpha) * p[c] + alpha * heat[c]);
        }
    }
}

int draw_add_strip(const image_u8 *img, int strip, image_u8 *out, vit_error *err) {
    out->width = img->width;
    out->height = img->height + strip;
    out->channels = 3;
    out->pixels = malloc((size_t)out->width * out->height * 3);
    if (!out->pixels)
        return vit_fail(err, "out of memory for a %dx%d picture", out->width, out->height);
    memcpy(out->pixels, img->pixels, (size_t)img->width * img->height * 3);
    memset(out->pixels + (size_t)img->width * img->height * 3, 24, (size_t)img->width * strip * 3);
    return 0;
}

void draw_colour_bar(image_u8 *img, int x, int y, int w, int h) {
    for (int i = 0; i < w && x + i < img->width; i++) {
        uint8_t rgb[3];
        heat_colour(w > 1 ? (float)i / (float)(w - 1) : 1.0f, rgb);
        for (int j = 0; j < h && y + j < img->height; j++)
            memcpy(img->pixels + ((size_t)(y + j) * img->width + x + i) * 3, rgb, 3);
    }
}

int draw_scale_nearest(const image_u8 *src, int width, int height, image_u8 *out, vit_error *err) {
    const int C = src->channels;
    out->width = width, out->height = height, out->channels = C;
    out->pixels = malloc((size_t)width * height * C);
    if (!out->pixels) return vit_fail(err, "out of memory for a %dx%d picture", width, height);
    for (int y = 0; y < height; y++) {
        const int sy = (int)((y + 0.5) * src->height / height);
        for (int x = 0; x < width; x++) {
            const int sx = (int)((x + 0.5) * src->width / width);
            memcpy(out->pixels + ((size_t)y * width + x) * C,
                   src->pixels + ((size_t)sy * src->width + sx) * C, C);
        }
    }
    return 0;
}

int image_write_png(const char *path, const image_u8 *img, vit_error *err) {
    png_image png;
    memset(&png, 0, sizeof png);
    png.version = PNG_IMAGE_VERSION;
    png.width = (png_uint_32)img->width;
    png.height = (png_uint_32)img->height;
    png.format = img->channels == 3 ? PNG_FORMAT_RGB : PNG_FORMAT_GRAY;
    atomic_file a;
    if (atomic_file_open(&a, path, err) != 0) return -1;
    if (!png_image_write_to_stdio(&png, a.f, 0, img->pixels, 0, NULL)) {
        atomic_file_abort(&a);
        return vit_fail(err, "%s: cannot write the PNG: %s", path, png.message);
    }
    return atomic_file_commit(&a, err);
}
