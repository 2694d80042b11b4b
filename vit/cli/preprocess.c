/* vit preprocess: the model-ready tensor of one image, written as safetensors so users can diff it
 * against what their Python pipeline produces. Needs only config.json and
 * preprocessor_config.json from the model directory. */
#include <stdio.h>
#include <stdlib.h>

#include "image/image.h"
#include "vit/io/model_dir.h"
#include "vit/cli/cli.h"
#include "vit/io/safetensors.h"

enum { OPT_OUTPUT = 1 };

static const cli_option options[] = {
    CLI_MODEL_OPTION("the model whose preprocessing to apply (config.json and "
                     "preprocessor_config.json suffice)",
                     CLI_MODEL_DEFAULT),
    {OPT_OUTPUT, "output", 'o', "OUT.safetensors", "where the tensor goes (required)", NULL},
    CLI_EXIF_RAW,
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
    const char *out_path, *path;
    cli_common common; /* -m, and the params' image_size, max_pixels and exif_orientation */
} preprocess_options;

static int preprocess_option(const cli_parser *p, int id, void *user) {
    if (id == OPT_OUTPUT) ((preprocess_options *)user)->out_path = p->value;
    return 0;
}

static cli_outcome parse_options(int argc, char **argv, preprocess_options *o) {
    cli_parser p;
    const cli_outcome parsed =
        cli_parse(&p, &command, argc, argv, &o->common, preprocess_option, o);
    if (parsed != CLI_PARSED) return parsed;
    if (p.num_rest != 1 || !o->out_path)
        return cli_usage_error(&command, "expected one FILE and -o OUT");
    o->path = p.rest[0];
    return CLI_PARSED;
}

int cli_preprocess(int argc, char **argv) {
    preprocess_options o = {0}; /* EXIF orientation off unless --exif, as eval */
    const cli_outcome parsed = parse_options(argc, argv, &o);
    if (parsed != CLI_PARSED) return cli_exit_status(parsed);
    const char *model_opt = o.common.model, *out_path = o.out_path, *path = o.path;
    const int size = o.common.params.image_size;
    const int64_t max_pixels = o.common.params.max_pixels;
    char model_dir[4096];
    if (!cli_model_dir("preprocess", model_opt, model_dir, sizeof model_dir)) return 1;
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
    const int flags = o.common.params.exif_orientation ? IMAGE_EXIF_ORIENTATION : 0;
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
