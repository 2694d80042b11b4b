/* vit preprocess: the model-ready tensor of one image, written as safetensors so users can diff it
 * against what their Python pipeline produces. Needs only config.json and
 * preprocessor_config.json from the model directory. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "image/image.h"
#include "vit/cli/cli.h"
#include "vit/io/safetensors.h"

static const char usage_text[] =
    "usage: vit preprocess [-m MODEL_DIR] [--size N] [--max-pixels N] FILE -o OUT.safetensors\n"
    "  writes one F32 tensor 'pixels' of shape [C, H, W]\n";

int cli_preprocess(int argc, char **argv) {
    static const struct option longopts[] = {
        {"model", required_argument, 0, 'm'}, {"output", required_argument, 0, 'o'},
        {"size", required_argument, 0, 's'},  {"max-pixels", required_argument, 0, 'p'},
        {"help", no_argument, 0, 'h'},        {0, 0, 0, 0}};
    const char *model_opt = NULL, *out_path = NULL;
    long long size = 0, max_pixels = 0;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "m:o:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'm':
            model_opt = optarg;
            break;
        case 'o':
            out_path = optarg;
            break;
        case 's':
            size = cli_parse_int(optarg, 1, IMAGE_MAX_SIDE, "--size");
            break;
        case 'p':
            max_pixels = cli_parse_int(optarg, 1, 1LL << 40, "--max-pixels");
            break;
        case 'h':
            fputs(usage_text, stdout);
            return 0;
        default:
            fputs(usage_text, stderr);
            return 2;
        }
        if (size < 0 || max_pixels < 0) return 2;
    }
    if (optind != argc - 1 || !out_path) {
        fprintf(stderr, "vit preprocess: expected one FILE and -o OUT\n%s", usage_text);
        return 2;
    }
    const char *path = argv[optind];
    char model_dir[4096];
    cli_model_dir(model_opt, model_dir, sizeof model_dir);
    vit_error err = {0};
    preprocess_config cfg;
    if (preprocess_config_load(model_dir, &cfg, &err) != 0) {
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
    int rc = preprocess_file(&cfg, path, max_pixels, pixels, &err);
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
