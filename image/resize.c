/* Pillow's Image.resize for 8-bit images, bit for bit (docs/SPEC.md §6; Pillow 9.4 Resample.c and,
 * for nearest, Geometry.c). The arithmetic (double coefficients, 22-bit fixed point, rounding,
 * clamping, multiplying by 1/filterscale rather than dividing) follows Pillow's exactly, because a
 * different but "equivalent" formula changes the odd pixel by one grey level. */
#include "image/image.h"

#include "vit/base/hot.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define PRECISION_BITS (32 - 8 - 2)

typedef struct {
    double support;
    double (*weight)(double x);
} resample_filter;

static double box_weight(double x) {
    return x > -0.5 && x <= 0.5 ? 1.0 : 0.0;
}

static double bilinear_weight(double x) {
    x = fabs(x);
    return x < 1.0 ? 1.0 - x : 0.0;
}

static double bicubic_weight(double x) {
    const double a = -0.5;
    x = fabs(x);
    if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
    if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
    return 0.0;
}

static double sinc(double x) {
    if (x == 0.0) return 1.0;
    x *= M_PI;
    return sin(x) / x;
}

static double hamming_weight(double x) {
    x = fabs(x);
    if (x == 0.0) return 1.0;
    if (x >= 1.0) return 0.0;
    x *= M_PI;
    return sin(x) / x * (0.54 + 0.46 * cos(x));
}

static double lanczos_weight(double x) {
    return x > -3.0 && x < 3.0 ? sinc(x) * sinc(x / 3) : 0.0;
}

static const resample_filter *filter_for(int resample) {
    static const resample_filter lanczos = {3.0, lanczos_weight}, bilinear = {1.0, bilinear_weight},
                                 bicubic = {2.0, bicubic_weight}, box = {0.5, box_weight},
                                 hamming = {1.0, hamming_weight};
    switch (resample) {
    case RESAMPLE_LANCZOS:
        return &lanczos;
    case RESAMPLE_BILINEAR:
        return &bilinear;
    case RESAMPLE_BICUBIC:
        return &bicubic;
    case RESAMPLE_BOX:
        return &box;
    case RESAMPLE_HAMMING:
        return &hamming;
    default:
        return NULL;
    }
}

/* One axis's taps: output i reads inputs first[i] .. first[i] + count[i] - 1 with the fixed-point
 * weights k[i * ksize ...]. */
typedef struct {
    int ksize;
    int *first, *count;
    int32_t *k;
} axis_taps;

static void axis_taps_free(axis_taps *t) {
    free(t->first);
    free(t->count);
    free(t->k);
}

/* Taps reading the source span in0 .. in1 (Pillow's box: fractional after a reduce) of an axis of
 * `in` pixels. */
static int axis_taps_compute(axis_taps *t, int in, double in0, double in1, int out,
                             const resample_filter *f) {
    const double scale = (in1 - in0) / out;
    const double filterscale = scale < 1.0 ? 1.0 : scale;
    const double support = f->support * filterscale;
    t->ksize = (int)ceil(support) * 2 + 1;
    t->first = malloc(sizeof(int) * (size_t)out);
    t->count = malloc(sizeof(int) * (size_t)out);
    t->k = malloc(sizeof(int32_t) * (size_t)out * t->ksize);
    double *w = malloc(sizeof(double) * (size_t)t->ksize);
    if (!t->first || !t->count || !t->k || !w) {
        free(w);
        axis_taps_free(t);
        return -1;
    }
    const double ss = 1.0 / filterscale;
    for (int i = 0; i < out; i++) {
        const double center = in0 + (i + 0.5) * scale;
        int xmin = (int)(center - support + 0.5), xmax = (int)(center + support + 0.5);
        if (xmin < 0) xmin = 0;
        if (xmax > in) xmax = in;
        xmax -= xmin;
        double sum = 0.0;
        for (int x = 0; x < xmax; x++) {
            w[x] = f->weight((x + xmin - center + 0.5) * ss);
            sum += w[x];
        }
        int32_t *k = t->k + (size_t)i * t->ksize;
        for (int x = 0; x < t->ksize; x++) {
            double v = x < xmax && sum != 0.0 ? w[x] / sum : 0.0;
            k[x] = (int32_t)(v < 0 ? -0.5 + v * (1 << PRECISION_BITS)
                                   : 0.5 + v * (1 << PRECISION_BITS));
        }
        t->first[i] = xmin;
        t->count[i] = xmax;
    }
    free(w);
    return 0;
}

static uint8_t clip8(int32_t acc) {
    acc >>= PRECISION_BITS;
    return acc < 0 ? 0 : acc > 255 ? 255 : (uint8_t)acc;
}

typedef int32_t v4si __attribute__((vector_size(4 * sizeof(int32_t))));

/* One RGB output pixel from a row widened to int32: the channels in the lanes of one vector, a
 * tap each step (the fourth lane, the next pixel's first channel, is not used). Integer sums in
 * any order are the same: this is Pillow's arithmetic exactly. */
static void rgb_pixel(uint8_t *o, const int32_t *p, const int32_t *k, int n) {
    v4si acc = {1 << (PRECISION_BITS - 1), 1 << (PRECISION_BITS - 1), 1 << (PRECISION_BITS - 1), 0};
    for (int i = 0; i < n; i++) {
        v4si px;
        memcpy(&px, p + 3 * i, sizeof px);
        acc += px * k[i];
    }
    for (int c = 0; c < 3; c++) o[c] = clip8(acc[c]);
}

/* Horizontal pass over source rows y0 .. y0 + rows - 1 into dst [rows, out_w, C]. wide holds
 * width·C + 4 int32: each row widened once, read about n/scale times. */
HOT_LOOP static void resample_rows(uint8_t *dst, const image_u8 *src, int y0, int rows, int out_w,
                                   const axis_taps *t, int32_t *wide) {
    const int C = src->channels;
    const size_t row_len = (size_t)src->width * C;
    for (int j = 0; j < 4; j++) wide[row_len + j] = 0;
    for (int y = 0; y < rows; y++) {
        const uint8_t *in = src->pixels + (size_t)(y0 + y) * row_len;
        uint8_t *o = dst + (size_t)y * out_w * C;
        for (size_t j = 0; j < row_len; j++) wide[j] = in[j];
        for (int x = 0; x < out_w; x++) {
            const int32_t *k = t->k + (size_t)x * t->ksize;
            const int32_t *p = wide + (size_t)t->first[x] * C;
            const int n = t->count[x];
            if (C == 3) {
                rgb_pixel(o + x * 3, p, k, n);
                continue;
            }
            int32_t acc = 1 << (PRECISION_BITS - 1);
            for (int i = 0; i < n; i++) acc += p[i] * k[i];
            o[x] = clip8(acc);
        }
    }
}

/* Vertical pass: src [*, width, C] (row 0 = source row y0) into dst [out_h, width, C]. Whole rows
 * are accumulated tap by tap in acc (width·C int32 scratch): contiguous, so it vectorises. */
HOT_LOOP static void resample_columns(uint8_t *dst, const uint8_t *src, int y0, int width, int C,
                                      int out_h, const axis_taps *t, int32_t *acc) {
    const size_t stride = (size_t)width * C;
    for (int y = 0; y < out_h; y++) {
        const int32_t *k = t->k + (size_t)y * t->ksize;
        const uint8_t *in = src + (size_t)(t->first[y] - y0) * stride;
        for (size_t x = 0; x < stride; x++) acc[x] = 1 << (PRECISION_BITS - 1);
        for (int i = 0; i < t->count[y]; i++) {
            const uint8_t *row = in + (size_t)i * stride;
            const int32_t w = k[i];
            for (size_t x = 0; x < stride; x++) acc[x] += row[x] * w;
        }
        uint8_t *o = dst + (size_t)y * stride;
        for (size_t x = 0; x < stride; x++) o[x] = clip8(acc[x]);
    }
}

/* box: Pillow's (x0, y0, x1, y1) source region. */
static int resize_convolve(const image_u8 *src, int out_w, int out_h, const resample_filter *f,
                           const double box[4], uint8_t *dst) {
    const int C = src->channels;
    const int need_h = out_w != src->width || box[0] != 0 || box[2] != out_w;
    const int need_v = out_h != src->height || box[1] != 0 || box[3] != out_h;
    axis_taps th = {0}, tv = {0};
    uint8_t *mid = NULL;
    int32_t *acc = NULL, *wide = NULL;
    int rc = -1;
    if (!need_h && !need_v) {
        memcpy(dst, src->pixels, (size_t)out_w * out_h * C);
        return 0;
    }
    if (axis_taps_compute(&th, src->width, box[0], box[2], out_w, f) != 0) goto done;
    if (axis_taps_compute(&tv, src->height, box[1], box[3], out_h, f) != 0) goto done;
    wide = malloc(sizeof(int32_t) * ((size_t)src->width * C + 4));
    if (!wide) goto done;
    if (!need_v) {
        resample_rows(dst, src, 0, src->height, out_w, &th, wide);
        rc = 0;
        goto done;
    }
    /* The horizontal pass only makes the source rows the vertical taps read. */
    const int y0 = need_h ? tv.first[0] : 0;
    const int y1 = need_h ? tv.first[out_h - 1] + tv.count[out_h - 1] : src->height;
    const uint8_t *rows = src->pixels;
    acc = malloc(sizeof(int32_t) * (size_t)out_w * C);
    if (!acc) goto done;
    if (need_h) {
        mid = malloc((size_t)(y1 - y0) * out_w * C);
        if (!mid) goto done;
        resample_rows(mid, src, y0, y1 - y0, out_w, &th, wide);
        rows = mid;
    }
    resample_columns(dst, rows, y0, out_w, C, out_h, &tv, acc);
    rc = 0;
done:
    free(acc);
    free(wide);
    free(mid);
    axis_taps_free(&th);
    axis_taps_free(&tv);
    return rc;
}

/* Pillow's NEAREST resize is an affine transform (ImagingScaleAffine): source coordinates are
 * accumulated in steps of in/out from half a step, then truncated; a coordinate that rounding
 * pushes past the edge leaves its pixel at 0, as Pillow's fill does. */
static int resize_nearest(const image_u8 *src, int out_w, int out_h, uint8_t *dst) {
    const int C = src->channels;
    int *xin = malloc(sizeof(int) * (size_t)out_w);
    if (!xin) return -1;
    const double ax = (double)src->width / out_w, ay = (double)src->height / out_h;
    double xo = ax * 0.5, yo = ay * 0.5;
    for (int x = 0; x < out_w; x++, xo += ax) xin[x] = (int)xo < src->width ? (int)xo : -1;
    memset(dst, 0, (size_t)out_w * out_h * C);
    for (int y = 0; y < out_h; y++, yo += ay) {
        const int yi = (int)yo;
        if (yi >= src->height) continue;
        const uint8_t *in = src->pixels + (size_t)yi * src->width * C;
        uint8_t *o = dst + (size_t)y * out_w * C;
        for (int x = 0; x < out_w; x++)
            if (xin[x] >= 0) memcpy(o + x * C, in + (size_t)xin[x] * C, (size_t)C);
    }
    free(xin);
    return 0;
}

int image_resize(const image_u8 *src, int out_width, int out_height, int resample, image_u8 *dst,
                 vit_error *err) {
    memset(dst, 0, sizeof *dst);
    if (out_width <= 0 || out_height <= 0 ||
        (int64_t)out_width * out_height > IMAGE_DEFAULT_MAX_PIXELS)
        return vit_fail(err, "resize to %dx%d: outside 1 pixel .. %lld pixels", out_width,
                        out_height, IMAGE_DEFAULT_MAX_PIXELS);
    const resample_filter *f = filter_for(resample);
    if (!f && resample != RESAMPLE_NEAREST)
        return vit_fail(err, "resize: unknown resample filter %d", resample);
    const size_t bytes = (size_t)out_width * out_height * src->channels;
    uint8_t *pixels = malloc(bytes);
    if (!pixels) return vit_fail(err, "resize to %dx%d: out of memory", out_width, out_height);
    int rc;
    if (out_width == src->width && out_height == src->height) {
        memcpy(pixels, src->pixels, bytes);
        rc = 0;
    } else {
        const double box[4] = {0, 0, src->width, src->height};
        rc = f ? resize_convolve(src, out_width, out_height, f, box, pixels)
               : resize_nearest(src, out_width, out_height, pixels);
    }
    if (rc != 0) {
        free(pixels);
        return vit_fail(err, "resize to %dx%d: out of memory", out_width, out_height);
    }
    *dst = (image_u8){out_width, out_height, src->channels, pixels};
    return 0;
}

/* Pillow's division_UINT32(n, 8): 2^32 / (256 n) in single precision, truncated. */
static uint32_t reduce_multiplier(int n) {
    const float max_int = 4294967296.0f;
    return (uint32_t)(max_int / (float)(256u * (uint32_t)n));
}

/* Pillow's Image.reduce((fx, fy)) of the whole image (Reduce.c): each output pixel the mean of its
 * fx x fy block, the last column and row over the pixels left; every one of Pillow's special
 * cases (2x2, 1xN, corners ...) computes ((sum + n / 2) * multiplier(n)) >> 24 for n pixels. */
static int image_reduce(const image_u8 *src, int fx, int fy, image_u8 *dst, vit_error *err) {
    const int C = src->channels;
    const int w = (src->width + fx - 1) / fx, h = (src->height + fy - 1) / fy;
    uint8_t *pixels = malloc((size_t)w * h * C);
    if (!pixels) return vit_fail(err, "reduce to %dx%d: out of memory", w, h);
    for (int y = 0; y < h; y++) {
        const int y0 = y * fy, y1 = y0 + fy < src->height ? y0 + fy : src->height;
        for (int x = 0; x < w; x++) {
            const int x0 = x * fx, x1 = x0 + fx < src->width ? x0 + fx : src->width;
            const int n = (x1 - x0) * (y1 - y0);
            const uint32_t mult = reduce_multiplier(n);
            for (int c = 0; c < C; c++) {
                uint32_t ss = (uint32_t)n / 2;
                for (int yy = y0; yy < y1; yy++)
                    for (int xx = x0; xx < x1; xx++)
                        ss += src->pixels[((size_t)yy * src->width + xx) * C + c];
                pixels[((size_t)y * w + x) * C + c] = (uint8_t)((ss * mult) >> 24);
            }
        }
    }
    *dst = (image_u8){w, h, C, pixels};
    return 0;
}

int image_resize_reducing(const image_u8 *src, int out_width, int out_height, int resample,
                          double reducing_gap, image_u8 *dst, vit_error *err) {
    memset(dst, 0, sizeof *dst);
    const resample_filter *f = filter_for(resample);
    /* Image.resize: a size already right is a copy; NEAREST never reduces */
    if (!f || (out_width == src->width && out_height == src->height))
        return image_resize(src, out_width, out_height, resample, dst, err);
    if (out_width <= 0 || out_height <= 0 ||
        (int64_t)out_width * out_height > IMAGE_DEFAULT_MAX_PIXELS)
        return vit_fail(err, "resize to %dx%d: outside 1 pixel .. %lld pixels", out_width,
                        out_height, IMAGE_DEFAULT_MAX_PIXELS);
    /* int(box / size / reducing_gap) or 1, per axis, in Python's float64 */
    int fx = (int)((double)src->width / out_width / reducing_gap);
    int fy = (int)((double)src->height / out_height / reducing_gap);
    fx = fx > 0 ? fx : 1, fy = fy > 0 ? fy : 1;
    image_u8 reduced = {0};
    const image_u8 *in = src;
    /* the safe box of the whole image is the whole image: the box after is its size / factor */
    double box[4] = {0, 0, src->width, src->height};
    if (fx > 1 || fy > 1) {
        if (image_reduce(src, fx, fy, &reduced, err) != 0) return -1;
        in = &reduced;
        box[2] = (double)src->width / fx, box[3] = (double)src->height / fy;
    }
    uint8_t *pixels = malloc((size_t)out_width * out_height * src->channels);
    int rc = pixels ? resize_convolve(in, out_width, out_height, f, box, pixels) : -1;
    image_free(&reduced);
    if (rc != 0) {
        free(pixels);
        return vit_fail(err, "resize to %dx%d: out of memory", out_width, out_height);
    }
    *dst = (image_u8){out_width, out_height, src->channels, pixels};
    return 0;
}
