/* vit preprocess: the model-ready tensor of one image, written as safetensors so users can diff it
 * against what their Python pipeline produces. Needs only config.json and
 * preprocessor_config.json from the model directory. */
#include <stdio.h>
#include <stdlib.h>

#include "image/image.h"
#include "vit/io/model_dir.h"
#include "vit/cli/cli.h"
#include "vit/io/safetensors.h"

enum { OPT_MODEL = 1, OPT_OUTPUT, OPT_EXIF };

static const cli_option options[] = {
    {OPT_MODEL, "model", 'm', "DIR",
     "the model whose preprocessing to apply (config.json and "
     "preprocessor_config.json suffice)",
     "$VIT_MODEL, else the shipped model"},
    {OPT_OUTPUT, "output", 'o', "OUT.safetensors", "where the tensor goes (required)", NULL},
    {OPT_EXIF, "exif", 0, NULL,
     "turn the image upright by its EXIF orientation, as Hugging Face pipelines do (by default "
     "Pillow's raw pixels)",
     NULL},
    CLI_SIZE_OPTION("preprocess to N x N instead"),
    CLI_PIXELS_OPTION,
};

static const cli_command command = {
    "preprocess",
    "write the model-ready pixel tensor of an image as safetensors",
    "[options] FILE -o OUT.safetensors",
    "Writes one F32 tensor 'pixels' of shape [C, H, W]: exactly what the model sees, to compare\n"
    "with a Python pipeline.",
    options,
    sizeof options / sizeof options[0]};

const cli_command *cli_preprocess_command(void) {
    return &command;
}

typedef struct {
    const char *model_opt, *out_path, *path;
    vit_params params; /* image_size and max_pixels (shared options), exif_orientation */
} preprocess_options;

/* Returns 0 to run, else the exit status (-1: --help). */
static int parse_options(int argc, char **argv, preprocess_options *o) {
    int id, bad = 0;
    cli_parser p;
    cli_parse_begin(&p, &command, argc, argv);
    while (!bad && (id = cli_parse_next(&p)) > 0) {
        switch (id) {
        case OPT_MODEL:
            o->model_opt = p.value;
            break;
        case OPT_OUTPUT:
            o->out_path = p.value;
            break;
        case OPT_EXIF:
            o->params.exif_orientation = 1;
            break;
        default:
            bad = cli_shared_option(&p, id, &o->params);
        }
    }
    if (bad || id == CLI_ERROR) return 2;
    if (id == CLI_HELP) return -1;
    if (p.num_rest != 1 || !o->out_path) {
        fprintf(stderr, "vit preprocess: expected one FILE and -o OUT (vit preprocess --help)\n");
        return 2;
    }
    o->path = p.rest[0];
    return 0;
}

int cli_preprocess(int argc, char **argv) {
    preprocess_options o = {0};
    const int parsed = parse_options(argc, argv, &o);
    if (parsed != 0) return parsed < 0 ? 0 : parsed;
    const char *model_opt = o.model_opt, *out_path = o.out_path, *path = o.path;
    const int size = o.params.image_size;
    const int64_t max_pixels = o.params.max_pixels;
    char model_dir[4096];
    cli_model_dir(model_opt, model_dir, sizeof model_dir);
    vit_error err = {0};
    preprocess_config cfg;
    if (model_dir_load_preprocess(model_dir, &cfg, &err) != 0) {
        fprintf(stderr, "vit preprocess: %s\n", err.msg);
        return 1;
    }
    if (size > 0) preprocess_config_set_size(&cfg, (int)size);
    int C, H, W;
    preprocess_output_shape(&cfg, &C, &H, &W);
    if (H == 0) {
        fprintf(stderr, "vit preprocess: %s: the preprocessing gives no fixed size\n", model_dir);
        return 1;
    }
    float *pixels = malloc(sizeof(float) * (size_t)C * H * W);
    if (!pixels) {
        fprintf(stderr, "vit preprocess: out of memory\n");
        return 1;
    }
    const int flags = o.params.exif_orientation ? IMAGE_EXIF_ORIENTATION : 0;
    int rc = preprocess_file(&cfg, path, max_pixels, flags, pixels, &err);
    if (rc == 0) {
        st_entry entry = {.name = "pixels", .ndim = 3, .shape = {C, H, W}, .data = pixels};
        rc = st_write_f32(out_path, &entry, 1, &err);
    }
    if (rc != 0)
        fprintf(stderr, "vit preprocess: %s\n", err.msg);
    else
        printf("%s: pixels [%d, %d, %d] -> %s\n", path, C, H, W, out_path);
    free(pixels);
    return rc != 0 ? 1 : 0;
}
