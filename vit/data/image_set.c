#include "vit/data/image_set.h"

#include "vit/base/rng.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

void image_set_free(image_set *s) {
    for (int i = 0; s->colour && i < s->count; i++) free(s->colour[i]);
    free(s->colour);
    free(s->pixels);
    free(s->labels);
    memset(s, 0, sizeof *s);
}

/* The transform up to its 8-bit stage: rescale and normalise switched off, so preprocess_image
 * returns the resized bytes as floats. */
static preprocess_config bytes_only(const preprocess_config *pp) {
    preprocess_config q = *pp;
    q.do_rescale = 0;
    q.do_normalize = 0;
    return q;
}

int pixel_lut(const preprocess_config *pp, float *lut, vit_error *err) {
    preprocess_config q = *pp;
    q.do_resize = 0;   /* a 16x16 crop of a 16x16 image: the bytes 0..255 untouched */
    q.keep_aspect = 0; /* its margin crop would cut the ramp */
    q.do_center_crop = 1;
    q.crop_height = q.crop_width = 16;
    const int C = pp->channels;
    uint8_t bytes[256 * 3];
    for (int v = 0; v < 256; v++)
        for (int c = 0; c < C; c++) bytes[v * C + c] = (uint8_t)v;
    image_u8 img = {.width = 16, .height = 16, .channels = C, .pixels = bytes};
    return preprocess_image(&q, &img, lut, err); /* CHW of a 16x16 image: lut[c·256 + v] */
}

/* Image i of out into its slot (a grey set: one plane when its channels are equal, else its own
 * colour copy). */
static int load_one(const preprocess_config *q, const char *path, image_set *out, size_t i,
                    float *buf, vit_error *err) {
    const int C = out->C;
    const size_t plane = (size_t)out->H * out->W;
    size_t per = (size_t)C * plane;
    image_u8 img = {0};
    /* Pillow's raw pixels (no EXIF orientation), as timm's datasets read them */
    if (image_decode_file(path, C, 0, 0, &img, err) != 0) return -1;
    vit_error e;
    const int rc = preprocess_image(q, &img, buf, &e);
    image_free(&img);
    if (rc != 0) return vit_fail(err, "%s: %s", path, e.msg);
    uint8_t *dst = out->pixels + i * per;
    if (out->grey) {
        int same = 1;
        for (size_t j = 0; same && j < (size_t)(C - 1) * plane; j++)
            same = buf[j] == buf[j + plane];
        dst = out->pixels + i * plane;
        if (!same && !(dst = out->colour[i] = malloc(per))) return vit_fail(err, "out of memory");
        if (same) per = plane;
    }
    for (size_t j = 0; j < per; j++) {
        const float v = buf[j];
        dst[j] = (uint8_t)(v <= 0.0f ? 0 : v >= 255.0f ? 255 : (int)lrintf(v));
    }
    return 0;
}

/* Decodes every image of out into its slot on the OpenMP threads; the first failure stops the
 * rest and is reported. */
static int decode_all(image_set *out, const preprocess_config *q, char *const *paths,
                      image_set_progress_fn progress, void *user, vit_error *err) {
    const size_t n = (size_t)out->count, per = (size_t)out->C * out->H * out->W;
    size_t done = 0;
    int failed = 0;
#pragma omp parallel
    {
        float *buf = malloc(per * sizeof(float));
        vit_error e = {0};
        if (!buf) vit_fail(&e, "out of memory");
#pragma omp for schedule(dynamic, 64)
        for (size_t i = 0; i < n; i++) {
            int stop;
#pragma omp atomic read
            stop = failed;
            if (stop) continue;
            if (!buf || load_one(q, paths[i], out, i, buf, &e) != 0) {
#pragma omp critical
                if (!failed) {
                    failed = 1;
                    *err = e;
                }
                continue;
            }
            size_t d;
#pragma omp atomic capture
            d = ++done;
            if (progress && omp_get_thread_num() == 0 && d % 1024 == 0) progress(user, d, n);
        }
        free(buf);
    }
    return failed ? -1 : 0;
}

static int load_set(image_set *out, const preprocess_config *pp, char *const *paths,
                    const int *labels, size_t n, int grey, image_set_progress_fn progress,
                    void *user, vit_error *err) {
    memset(out, 0, sizeof *out);
    int C, H, W;
    preprocess_output_shape(pp, &C, &H, &W);
    out->grey = grey && C > 1;
    const size_t per = (size_t)(out->grey ? 1 : C) * H * W;
    out->count = (int)n;
    out->C = C;
    out->H = H, out->W = W;
    out->S = H == W && !out->grey ? H : 0;
    out->pixels = malloc(n * per + 1);
    out->labels = malloc(n * sizeof(int) + 1);
    if (out->grey) out->colour = calloc(n + 1, sizeof *out->colour);
    if (!out->pixels || !out->labels || (out->grey && !out->colour)) {
        image_set_free(out);
        return vit_fail(err, "out of memory for %zu images of %dx%dx%d", n, C, H, W);
    }
    memcpy(out->labels, labels, n * sizeof(int));
    const preprocess_config q = bytes_only(pp);
    if (decode_all(out, &q, paths, progress, user, err) != 0) {
        image_set_free(out);
        return -1;
    }
    if (progress) progress(user, n, n);
    return 0;
}

int image_set_load(image_set *out, const preprocess_config *pp, char *const *paths,
                   const int *labels, size_t n, image_set_progress_fn progress, void *user,
                   vit_error *err) {
    return load_set(out, pp, paths, labels, n, 0, progress, user, err);
}

int image_set_load_lines(image_set *out, const preprocess_config *pp, char *const *paths,
                         const int *labels, size_t n, image_set_progress_fn progress, void *user,
                         vit_error *err) {
    return load_set(out, pp, paths, labels, n, 1, progress, user, err);
}

/* torchvision RandomResizedCrop.get_params on an S x S image: the crop box. */
static void rrc_box(uint64_t *st, int S, float min_scale, int *left, int *top, int *w, int *h) {
    const double area = (double)S * S, lr0 = log(3.0 / 4.0), lr1 = log(4.0 / 3.0);
    for (int attempt = 0; attempt < 10; attempt++) {
        const double target = area * (min_scale + (1.0 - min_scale) * rng_uniform(st));
        const double ratio = exp(lr0 + (lr1 - lr0) * rng_uniform(st));
        const int cw = (int)lround(sqrt(target * ratio)), ch = (int)lround(sqrt(target / ratio));
        if (cw > 0 && cw <= S && ch > 0 && ch <= S) {
            *top = rng_int(st, 0, S - ch);
            *left = rng_int(st, 0, S - cw);
            *w = cw, *h = ch;
            return;
        }
    }
    *left = *top = 0, *w = *h = S; /* square input: the fallback center crop is the whole image */
}

/* Bilinear sample (no antialias, edge clamp) of the box to S x S, flipped if asked. */
static void resized_crop(const uint8_t *src, int C, int S, const float *lut, int left, int top,
                         int w, int h, int flip, float *dst) {
    const float sx = (float)w / S, sy = (float)h / S;
    for (int y = 0; y < S; y++) {
        float fy = top + (y + 0.5f) * sy - 0.5f;
        fy = fy < 0 ? 0 : fy > S - 1 ? (float)(S - 1) : fy;
        const int y0 = (int)fy, y1 = y0 + 1 < S ? y0 + 1 : y0;
        const float ay = fy - (float)y0;
        for (int x = 0; x < S; x++) {
            float fx = left + ((flip ? S - 1 - x : x) + 0.5f) * sx - 0.5f;
            fx = fx < 0 ? 0 : fx > S - 1 ? (float)(S - 1) : fx;
            const int x0 = (int)fx, x1 = x0 + 1 < S ? x0 + 1 : x0;
            const float ax = fx - (float)x0;
            for (int c = 0; c < C; c++) {
                const uint8_t *p = src + (size_t)c * S * S;
                const float *l = lut + c * 256;
                const float top_row = l[p[y0 * S + x0]] * (1 - ax) + l[p[y0 * S + x1]] * ax;
                const float bot_row = l[p[y1 * S + x0]] * (1 - ax) + l[p[y1 * S + x1]] * ax;
                dst[(size_t)c * S * S + (size_t)y * S + x] = top_row * (1 - ay) + bot_row * ay;
            }
        }
    }
}

/* Shift by (dx, dy) with zero (black) bytes where the padded image has no pixel, flipped if
 * asked: torchvision RandomCrop(S, padding) then RandomHorizontalFlip. */
static void shifted(const uint8_t *src, int C, int S, const float *lut, int dx, int dy, int flip,
                    float *dst) {
    for (int c = 0; c < C; c++) {
        const uint8_t *p = src + (size_t)c * S * S;
        const float *l = lut + c * 256;
        float *o = dst + (size_t)c * S * S;
        for (int y = 0; y < S; y++) {
            const int ys = y + dy;
            for (int x = 0; x < S; x++) {
                const int xs = (flip ? S - 1 - x : x) + dx;
                o[y * S + x] = ys >= 0 && ys < S && xs >= 0 && xs < S ? l[p[ys * S + xs]] : l[0];
            }
        }
    }
}

void image_set_batch(const image_set *s, const int *idx, int n, const float *lut,
                     const augment_options *aug, uint64_t seed, float *pixels) {
    image_set_batch_part(s, idx, n, lut, aug, seed, 0, pixels);
}

void image_set_batch_part(const image_set *s, const int *idx, int n, const float *lut,
                          const augment_options *aug, uint64_t seed, int first, float *pixels) {
    const int C = s->C, S = s->S;
    const size_t per = (size_t)C * s->H * s->W, plane = (size_t)s->H * s->W;
#pragma omp parallel for schedule(static) if (n * per >= 16384)
    for (int i = 0; i < n; i++) {
        const uint8_t *src = s->pixels + (size_t)idx[i] * per;
        float *dst = pixels + (size_t)i * per;
        if (s->grey) { /* one plane for every channel, unless the image kept its colours */
            const uint8_t *one = s->colour[idx[i]];
            for (size_t j = 0; j < per; j++)
                dst[j] = lut[(j / plane) * 256 +
                             (one ? one[j] : s->pixels[(size_t)idx[i] * plane + j % plane])];
            continue;
        }
        uint64_t st = rng_derive(seed, (uint64_t)(first + i), 0);
        if (!aug || S == 0) {
            for (size_t j = 0; j < per; j++) dst[j] = lut[(j / plane) * 256 + src[j]];
            continue;
        }
        if (aug->resized_crop) {
            int left, top, w, h;
            rrc_box(&st, S, aug->rrc_min_scale, &left, &top, &w, &h);
            const int flip = aug->flip && rng_uniform(&st) < 0.5;
            resized_crop(src, C, S, lut, left, top, w, h, flip, dst);
        } else {
            const int pad = aug->crop_pad;
            const int dx = pad > 0 ? rng_int(&st, -pad, pad) : 0;
            const int dy = pad > 0 ? rng_int(&st, -pad, pad) : 0;
            const int flip = aug->flip && rng_uniform(&st) < 0.5;
            shifted(src, C, S, lut, dx, dy, flip, dst);
        }
    }
}
