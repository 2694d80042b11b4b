/* Training on images: ImageFolder data decoded once into memory, a ViT, augmented batches. */
#include <stdlib.h>
#include <string.h>

#include "image/image.h"
#include "vit/base/file.h"
#include "vit/base/rng.h"
#include "vit/data/image_set.h"
#include "vit/data/imagefolder.h"
#include "vit/data/mix.h"
#include "vit/io/model_dir.h"
#include "vit/model/vit_model.h"
#include "vit/train/trainer.h"

typedef struct {
    image_set train, val;
    float *lut;      /* [C·256] bytes to normalised floats */
    float *pixels;   /* [B, C, S, S] the next batch */
    float *partners; /* [B, C, S, S] the images mixed into it (Mixup, CutMix), or NULL */
    vit_acts acts;
} image_task;

static image_task *task_data(const trainer *t) {
    return t->data;
}

/* ---- classes, model ---- */

static int image_classes(const trainer *t, const model *from, char ***classes, int *n,
                         vit_error *err) {
    (void)from; /* a fine-tuned model's labels are matched to the folders, not taken */
    imagefolder f;
    if (imagefolder_open(&f, t->o.train_path, err) != 0) return -1;
    char **out = calloc((size_t)f.num_folders, sizeof *out);
    int ok = out != NULL;
    for (int i = 0; ok && i < f.num_folders; i++) ok = (out[i] = strdup(f.folders[i])) != NULL;
    *n = f.num_folders;
    imagefolder_close(&f);
    if (!ok) {
        free_strings(out, *n);
        return vit_fail(err, "out of memory");
    }
    *classes = out;
    return 0;
}

/* ---- a new ViT's input, from the images when not given ---- */

#define SHAPE_SAMPLES 32 /* images decoded to decide: spread over the whole walk */

typedef struct {
    int colour;        /* an image sampled has a pixel whose R, G and B differ */
    int width, height; /* the size every sampled image has, or 0 when they differ */
    int sampled;
} data_shape;

/* Every image path under the training folder, in the walk's order (caller frees each and the
 * list); -1 with err. */
static int walk_paths(const char *dir, char ***paths, size_t *n, vit_error *err) {
    imagefolder_walk *w = imagefolder_walk_tree(dir, err);
    if (!w) return -1;
    size_t cap = 0;
    imagefolder_entry e;
    int more, rc = 0;
    while (rc == 0 && (more = imagefolder_walk_next(w, &e, err)) == 1) {
        if (e.unreadable) { /* load_data reports it */
            free(e.path);
            continue;
        }
        if (*n == cap) {
            char **grown = realloc(*paths, sizeof *grown * (cap = cap ? 2 * cap : 256));
            if (!grown) {
                free(e.path);
                rc = vit_fail(err, "out of memory");
                break;
            }
            *paths = grown;
        }
        (*paths)[(*n)++] = e.path;
    }
    imagefolder_walk_close(w);
    return rc == 0 && more < 0 ? -1 : rc;
}

static int is_colour(const image_u8 *img) {
    const size_t n = (size_t)img->width * img->height;
    for (size_t i = 0; i < n; i++) {
        const uint8_t *p = img->pixels + 3 * i;
        if (p[0] != p[1] || p[1] != p[2]) return 1;
    }
    return 0;
}

/* Up to SHAPE_SAMPLES images, spread over the training folder, decoded as RGB. */
static int sample_shape(const trainer *t, data_shape *d, vit_error *err) {
    char **paths = NULL;
    size_t n = 0;
    int rc = walk_paths(t->o.train_path, &paths, &n, err);
    *d = (data_shape){0};
    const size_t take = n < SHAPE_SAMPLES ? n : SHAPE_SAMPLES;
    for (size_t k = 0; rc == 0 && k < take; k++) {
        image_u8 img;
        vit_error ignored; /* an unreadable image is load_data's to report */
        if (image_decode_file(paths[k * n / take], 3, 0, 0, &img, &ignored) != 0) continue;
        d->colour |= is_colour(&img);
        if (d->sampled++ == 0) d->width = img.width, d->height = img.height;
        if (img.width != d->width || img.height != d->height) d->width = d->height = 0;
        image_free(&img);
    }
    for (size_t i = 0; i < n; i++) free(paths[i]);
    free(paths);
    return rc;
}

/* The channels and size a new ViT takes when the options leave them to the data (0): colour if
 * a sampled image has colour, the images' size when they share one square size that is a
 * multiple of the patch, else 8 patches; said in one line either way. */
static int choose_input(trainer *t, vit_error *err) {
    train_options *o = &t->o;
    const int given_c = o->channels != 0, given_s = o->image_size != 0;
    data_shape d = {0};
    if ((!given_c || !given_s) && sample_shape(t, &d, err) != 0) return -1;
    if (!given_c) o->channels = d.colour ? 3 : 1;
    const int square = d.width > 0 && d.width == d.height && d.width % o->patch_size == 0;
    if (!given_s) o->image_size = square ? d.width : 8 * o->patch_size;
    trainer_info(t, "a new ViT: %s input (%s), %dx%d (%s), patch %d",
                 o->channels == 3 ? "RGB" : "grey",
                 given_c    ? "--channels"
                 : d.colour ? "the images have colour"
                            : "the images are grey",
                 o->image_size, o->image_size,
                 given_s  ? "--image-size"
                 : square ? "the images' size"
                          : "8 patches: the images differ in size or are no multiple of the "
                            "patch; --image-size N for another",
                 o->patch_size);
    return 0;
}

static int new_vit(trainer *t, char **classes, int n, vit_error *err) {
    if (choose_input(t, err) != 0) return -1;
    const train_options *o = &t->o;
    model_config cfg = {.kind = MODEL_VIT,
                        .hidden_size = o->hidden_size,
                        .num_layers = o->num_layers,
                        .num_heads = o->num_heads,
                        .intermediate_size = o->mlp_size,
                        .act = ACT_GELU,
                        .layer_norm_eps = 1e-6f, /* timm's ViT value: safe for near-flat rows */
                        .image_size = o->image_size,
                        .image_width = o->image_size,
                        .patch_size = o->patch_size,
                        .num_channels = o->channels,
                        .qkv_bias = 1,
                        .num_labels = n,
                        .labels = classes};
    if (trainer_create_model(t, &cfg, classes, n, err) != 0) return -1;
    t->pp = (preprocess_config){.do_resize = 1,
                                .resize_height = o->image_size,
                                .resize_width = o->image_size,
                                .resample = RESAMPLE_BILINEAR,
                                .do_rescale = 1,
                                .rescale_factor = 1.0 / 255.0,
                                .do_normalize = 1,
                                .mean = {0.5f, 0.5f, 0.5f},
                                .std = {0.5f, 0.5f, 0.5f},
                                .channels = o->channels};
    return 0;
}

/* The model's own preprocessing, at the size training runs (image_size: a DINOv2 processor crops
 * smaller, and the interpolated positions of another size are not trained). */
static int image_companion(trainer *t, const char *dir, vit_error *err) {
    if (!dir) return 0;
    if (model_dir_load_preprocess(dir, &t->pp, err) != 0) return -1;
    preprocess_config_set_size(&t->pp, t->m.cfg.image_size);
    if (dir == t->o.init_dir) /* fine-tuning (not resuming): the input is the model's */
        trainer_info(t, "input: %s at %dx%d, patch %d (from %s)",
                     t->m.cfg.num_channels == 3 ? "RGB" : "grey", t->m.cfg.image_size,
                     t->m.cfg.image_width, t->m.cfg.patch_size, dir);
    return 0;
}

/* ---- data ---- */

typedef struct {
    char **paths;
    int *labels;
    size_t n;
} file_list;

static void file_list_free(file_list *l) {
    for (size_t i = 0; i < l->n; i++) free(l->paths[i]);
    free(l->paths);
    free(l->labels);
    memset(l, 0, sizeof *l);
}

static void problem(void *user, const char *message) {
    trainer_info(user, "skipped: %s", message);
}

/* Every image of dir, its folder mapped to t's classes. */
static int list_folder(trainer *t, const char *dir, file_list *out, vit_error *err) {
    imagefolder f;
    if (imagefolder_open(&f, dir, err) != 0) return -1;
    int by_order = 0;
    if (imagefolder_map_labels(&f, (const char *const *)t->classes, t->num_classes, &by_order,
                               err) != 0) {
        imagefolder_close(&f);
        return -1;
    }
    if (by_order)
        trainer_info(t,
                     "%s: no folder name matches a label; folders taken in sorted order as labels "
                     "0..%d",
                     dir, t->num_classes - 1);
    imagefolder_entry *s = NULL;
    size_t n = 0;
    const int rc = imagefolder_list(&f, &s, &n, problem, t, err);
    imagefolder_close(&f);
    if (rc != 0) return -1;
    if (n == 0)
        return vit_fail(err, "%s: no images (*.png, *.jpg, *.jpeg) in the class folders", dir);
    out->paths = malloc(n * sizeof *out->paths);
    out->labels = malloc(n * sizeof *out->labels);
    if (!out->paths || !out->labels) {
        imagefolder_list_free(s, n);
        return vit_fail(err, "out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        out->paths[i] = s[i].path; /* taken over */
        out->labels[i] = s[i].label;
    }
    free(s);
    out->n = n;
    return 0;
}

/* The held-out images, `file<TAB>class` per line, beside the model: the split made visible, so
 * the same images can be evaluated apart (vit eval on a folder of them). */
static int write_held_out(const trainer *t, const file_list *val, vit_error *err) {
    char path[4096];
    trainer_path(t, path, sizeof path, TRAIN_VAL_FILE);
    atomic_file a;
    if (atomic_file_open(&a, path, err) != 0) return -1;
    for (size_t i = 0; i < val->n; i++)
        fprintf(a.f, "%s\t%s\n", val->paths[i], t->classes[val->labels[i]]);
    return atomic_file_commit(&a, err);
}

/* Moves every image of all into train or val (trainer_hold_out's choice). */
static int split_val(const trainer *t, file_list *all, file_list *train, file_list *val,
                     vit_error *err) {
    const size_t n = all->n;
    int *is_val = malloc(n * sizeof *is_val);
    train->paths = malloc(n * sizeof(char *)), val->paths = malloc(n * sizeof(char *));
    train->labels = malloc(n * sizeof(int)), val->labels = malloc(n * sizeof(int));
    if (!is_val || !train->paths || !val->paths || !train->labels || !val->labels) {
        free(is_val);
        return vit_fail(err, "out of memory");
    }
    if (trainer_hold_out(t, all->labels, n, is_val, err) != 0) return free(is_val), -1;
    for (size_t i = 0; i < n; i++) {
        file_list *to = is_val[i] ? val : train;
        to->paths[to->n] = all->paths[i];
        to->labels[to->n++] = all->labels[i];
    }
    free(all->paths), free(all->labels), free(is_val);
    memset(all, 0, sizeof *all);
    return t->rank == 0 ? write_held_out(t, val, err) : 0;
}

static void load_progress(void *user, size_t done, size_t total) {
    const trainer *t = user;
    if (t->rank == 0 && t->hooks && t->hooks->load_progress)
        t->hooks->load_progress(t->hooks->user, done, total);
}

static int load_images(trainer *t, vit_error *err) {
    image_task *d = calloc(1, sizeof *d);
    if (!(t->data = d)) return vit_fail(err, "out of memory");
    file_list all = {0}, train = {0}, val = {0};
    int rc = list_folder(t, t->o.train_path, &all, err);
    if (rc == 0 && t->o.val_path) {
        train = all;
        memset(&all, 0, sizeof all);
        rc = list_folder(t, t->o.val_path, &val, err);
    } else if (rc == 0) {
        rc = split_val(t, &all, &train, &val, err);
    }
    if (rc == 0 && train.n == 0) rc = vit_fail(err, "%s: no training images", t->o.train_path);
    if (rc == 0) {
        trainer_info(t, "decoding %zu training and %zu validation images", train.n, val.n);
        rc = image_set_load(&d->train, &t->pp, train.paths, train.labels, train.n, load_progress, t,
                            err);
    }
    if (rc == 0 && val.n)
        rc = image_set_load(&d->val, &t->pp, val.paths, val.labels, val.n, load_progress, t, err);
    file_list_free(&all), file_list_free(&train), file_list_free(&val);
    t->n_train = d->train.count;
    t->n_val = d->val.count;
    if (rc == 0 && d->train.S == 0)
        rc = vit_fail(err,
                      "the preprocessing makes %dx%d images; a classifier trains on square ones "
                      "(its augmentations are square)",
                      d->train.W, d->train.H);
    /* default crop padding: 1/14 of the side (2 pixels at 28, 16 at 224) */
    if (rc == 0 && t->o.aug.crop_pad < 0) t->o.aug.crop_pad = (d->train.S + 7) / 14;
    return rc;
}

/* ---- batches and passes ---- */

static int prepare_images(trainer *t, vit_error *err) {
    image_task *d = task_data(t);
    const size_t per = (size_t)d->train.C * d->train.H * d->train.W;
    d->pixels = malloc((size_t)t->B * per * sizeof(float));
    d->lut = malloc((size_t)d->train.C * 256 * sizeof(float));
    if (t->o.mix.mixup_alpha > 0.0f || t->o.mix.cutmix_alpha > 0.0f) {
        d->partners = malloc((size_t)t->B * per * sizeof(float));
        if (!d->partners) return vit_fail(err, "out of memory");
    }
    if (!d->pixels || !d->lut) return vit_fail(err, "out of memory");
    if (pixel_lut(&t->pp, d->lut, err) != 0) return -1;
    return vit_acts_alloc(&d->acts, &t->m, t->B, 0, 1, err);
}

/* The training batch's images mixed with their partners (the batch reversed: whole-batch image j
 * with B-1-j, augmented as when it is itself loaded), as this step's draw says. This process's
 * part, images first..first+n-1, has partners B-first-n..B-1-first: one contiguous run, loaded
 * at once, then paired in reverse. */
static void mix_batch(trainer *t, const int *whole_idx, int first, int n, uint64_t aug_seed) {
    image_task *d = task_data(t);
    const image_set *s = &d->train;
    uint64_t st = rng_derive(t->o.seed, RNG_MIX, (uint64_t)t->step);
    mix_draw draw;
    mix_draw_batch(&t->o.mix, s->S, &st, &draw);
    t->mix_lambda = draw.lambda;
    const int B = t->B, from = B - first - n;
    image_set_batch_part(s, whole_idx + from, n, d->lut, t->o.augment ? &t->o.aug : NULL, aug_seed,
                         from, d->partners);
    const size_t per = (size_t)s->C * s->S * s->S;
    for (int b = 0; b < n; b++) {
        t->partners[b] = s->labels[whole_idx[B - 1 - first - b]];
        mix_apply(d->pixels + b * per, d->partners + (size_t)(n - 1 - b) * per, s->C, s->S, &draw);
    }
}

static int image_batch(trainer *t, const int *idx, int n, int train, vit_error *err) {
    (void)err;
    image_task *d = task_data(t);
    const int *whole_idx = idx;
    if (train) idx += t->part_first, n = t->part_n;
    const image_set *s = train ? &d->train : &d->val;
    for (int b = 0; b < n; b++) t->labels[b] = s->labels[idx[b]];
    const int augment = train && t->o.augment;
    const uint64_t seed = train ? rng_derive(t->o.seed, RNG_AUGMENT, (uint64_t)t->step) : 0;
    image_set_batch_part(s, idx, n, d->lut, augment ? &t->o.aug : NULL, seed,
                         train ? t->part_first : 0, d->pixels);
    t->mix_lambda = 1.0f;
    if (train && d->partners) mix_batch(t, whole_idx, t->part_first, n, seed);
    return 0;
}

static int image_forward(trainer *t, int n, const forward_mode *mode, float *logits,
                         vit_error *err) {
    image_task *d = task_data(t);
    return vit_model_forward(&t->m, &d->acts, d->pixels, n, mode, logits, err);
}

static void image_backward(trainer *t, const float *dlogits) {
    vit_model_backward(&t->m, &t->g, &task_data(t)->acts, dlogits);
}

static void free_images(trainer *t) {
    image_task *d = task_data(t);
    if (!d) return;
    vit_acts_free(&d->acts);
    image_set_free(&d->train);
    image_set_free(&d->val);
    free(d->pixels);
    free(d->partners);
    free(d->lut);
    free(d);
    t->data = NULL;
}

const train_task task_image = {.unit = "images",
                               .kind = MODEL_VIT,
                               .data_classes = image_classes,
                               .new_model = new_vit,
                               .companion = image_companion,
                               .load_data = load_images,
                               .prepare = prepare_images,
                               .order = NULL,
                               .load_batch = image_batch,
                               .forward = image_forward,
                               .backward = image_backward,
                               .free = free_images};
