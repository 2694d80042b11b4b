/* The public API's explanations (vit.h): maps of where the model looked, and pictures of them. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "image/draw.h"
#include "image/image.h"
#include "vit/base/threads.h"
#include "vit/model/explain.h"
#include "vit/vit.h"
#include "vit/vit_internal.h"

static const char *method_name(vit_explain_method method) {
    return method == VIT_EXPLAIN_LAST   ? "last layer"
           : method == VIT_EXPLAIN_GRAD ? "grad"
                                        : "rollout";
}

/* The context's explainer, made on first use (its buffers stay for the next image). */
static explainer *get_explainer(const api_image_view *v, vit_error *err) {
    if (*v->explain) return *v->explain;
    explainer *e = calloc(1, sizeof *e);
    if (!e) return vit_fail(err, "out of memory"), NULL;
    if (explainer_init(e, v->m, v->height, v->width, err) != 0) {
        free(e);
        vit_error inner = *err;
        return vit_fail(err, "%s: %s", v->model_dir, inner.msg), NULL;
    }
    return *v->explain = e;
}

int vit_explain(vit_context *ctx, const float *pixels, vit_explain_method method, int label,
                vit_explanation *out, vit_error *err) {
    memset(out, 0, sizeof *out);
    const api_image_view v = api_image_context(ctx);
    const int L = v.m->cfg.num_labels;
    if (label >= L)
        return vit_fail(err, "label %d outside the model's classes 0..%d", label, L - 1);
    const int classes = v.m->cfg.opt.head == HEAD_CLASSIFIER;
    if (!classes && method == VIT_EXPLAIN_GRAD)
        return vit_fail(err,
                        "%s: %s has no classes for the gradient method to explain; rollout and "
                        "last explain it",
                        v.model_dir, config_architecture(&v.m->cfg));
    explainer *e = get_explainer(&v, err);
    if (!e) return -1;
    const int gh = e->acts.grid_h, gw = e->acts.grid_w,
              maps = explain_maps(v.m, (explain_method)method);
    float *logits = e->logits;
    out->map = malloc(sizeof(float) * maps * gh * gw);
    if (!out->map) return vit_fail(err, "out of memory");
    const threads_scope scope = threads_begin(v.threads);
    int rc = explainer_run(e, v.m, pixels, (explain_method)method, &label, logits, out->map, err);
    threads_end(scope);
    for (int i = 0; rc == 0 && i < maps * gh * gw; i++)
        if (!isfinite(out->map[i]))
            rc = vit_fail(err, "%s: the explanation is not finite (NaN or Inf in the weights)",
                          v.model_dir);
    if (rc != 0) api_blame_input(pixels, 1, vit_input_floats(ctx), err);
    if (rc != 0) {
        vit_explanation_free(out);
        return -1;
    }
    vit_softmax(logits, L);
    *out = (vit_explanation){.label = classes ? label : -1, /* a base model's outputs: features */
                             .prob = classes ? logits[label] : 0.0f,
                             .maps = maps,
                             .grid_h = gh,
                             .grid_w = gw,
                             .map = out->map};
    return 0;
}

int vit_explain_check(const vit_context *ctx, vit_error *err) {
    const api_image_view v = api_image_context((vit_context *)ctx);
    if (vit_model_check_explain(v.m, v.size, err) == 0) return 0;
    if (err) {
        vit_error inner = *err;
        vit_fail(err, "%s: %s", v.model_dir, inner.msg);
    }
    return -1;
}

void vit_explanation_free(vit_explanation *e) {
    free(e->map);
    e->map = NULL;
}

/* Heads side by side in a grid of tiles, each a small copy of the original with its map. */
static int draw_heads(image_u8 *pic, const image_u8 *orig, const preprocess_geometry *g,
                      const vit_explanation *x, vit_error *err) {
    const int cols = (int)ceil(sqrt((double)x->maps)), rows = (x->maps + cols - 1) / cols;
    const int tw = orig->width / cols > 0 ? orig->width / cols : 1;
    const int th = orig->height / rows > 0 ? orig->height / rows : 1;
    memset(pic->pixels, 0, (size_t)pic->width * pic->height * 3);
    for (int h = 0; h < x->maps; h++) {
        image_u8 tile;
        if (draw_scale_nearest(orig, tw, th, &tile, err) != 0) return -1;
        draw_heat_overlay(&tile, orig->width, orig->height, g,
                          x->map + (size_t)h * x->grid_h * x->grid_w, x->grid_h, x->grid_w, 0.6f);
        const int x0 = (h % cols) * tw, y0 = (h / cols) * th;
        for (int y = 0; y < th; y++)
            memcpy(pic->pixels + ((size_t)(y0 + y) * pic->width + x0) * 3,
                   tile.pixels + (size_t)y * tw * 3, (size_t)tw * 3);
        char name[16];
        snprintf(name, sizeof name, "%d", h);
        const uint8_t white[3] = {255, 255, 255};
        draw_text(pic, x0 + 2, y0 + 2, 1, name, white);
        image_free(&tile);
    }
    return 0;
}

/* The legend strip's height for a picture this wide: the font at scale 1 below 300 pixels. */
static int legend_scale(int width) {
    const int s = width / 300;
    return s < 1 ? 1 : s > 3 ? 3 : s;
}

static int write_picture(const api_image_view *v, const char *path, vit_context *ctx,
                         vit_explain_method method, const vit_explanation *x, const char *png_path,
                         vit_error *err) {
    image_u8 orig;
    if (image_decode_file(path, 3, v->max_pixels, v->decode_flags, &orig, err) != 0) return -1;
    preprocess_geometry g;
    int rc = preprocess_geometry_of(v->prep, orig.width, orig.height, &g, err);
    api_patched_geometry(v->m, &g); /* a remainder the patches drop is darkened: never seen */
    const int scale = legend_scale(orig.width), strip = 9 * scale + 4;
    image_u8 pic = {0};
    if (rc == 0) rc = draw_add_strip(&orig, strip, &pic, err);
    if (rc == 0 && method == VIT_EXPLAIN_LAST) {
        image_u8 top = {
            .width = orig.width, .height = orig.height, .channels = 3, .pixels = pic.pixels};
        rc = draw_heads(&top, &orig, &g, x, err);
    } else if (rc == 0) {
        image_u8 top = {
            .width = orig.width, .height = orig.height, .channels = 3, .pixels = pic.pixels};
        draw_heat_overlay(&top, orig.width, orig.height, &g, x->map, x->grid_h, x->grid_w, 0.6f);
    }
    if (rc == 0) {
        char text[160];
        const char *label = vit_label(ctx, x->label);
        if (x->label < 0) /* no classes: the method alone */
            snprintf(text, sizeof text, "%s", method_name(method));
        else
            snprintf(text, sizeof text, "%s %.3f (%s)", label ? label : "?", x->prob,
                     method_name(method));
        const int bar = pic.width / 5;
        const uint8_t white[3] = {235, 235, 235};
        draw_text(&pic, 2, orig.height + 2 + scale, scale, text, white);
        draw_colour_bar(&pic, pic.width - bar - 2, orig.height + 2, bar, strip - 4);
        rc = image_write_png(png_path, &pic, err);
    }
    image_free(&pic);
    image_free(&orig);
    return rc;
}

int vit_explain_file(vit_context *ctx, const char *path, vit_explain_method method, int label,
                     const char *png_path, vit_explanation *out, vit_error *err) {
    const api_image_view v = api_image_context(ctx);
    float *pixels = malloc(sizeof(float) * vit_input_floats(ctx));
    if (!pixels) return vit_fail(err, "out of memory");
    vit_explanation x = {0};
    int rc = vit_preprocess_file(ctx, path, pixels, err);
    if (rc == 0) rc = vit_explain(ctx, pixels, method, label, &x, err);
    free(pixels);
    if (rc == 0 && png_path) rc = write_picture(&v, path, ctx, method, &x, png_path, err);
    if (rc == 0 && out)
        *out = x;
    else
        vit_explanation_free(&x);
    return rc;
}
