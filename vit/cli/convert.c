/* vit convert: a model directory with its weights stored in another float type. */
#include <stdio.h>
#include <strings.h>

#include "vit/cli/cli.h"
#include "vit/io/model_dir.h"

enum { OPT_DTYPE = 1 };

static const cli_option options[] = {
    {OPT_DTYPE, "dtype", 0, "T", "f16, bf16 or f32: how model.safetensors stores floats", "f16"},
};

static const cli_command command = {
    "convert",
    "copy a model directory with its weights stored as F16, BF16 or F32",
    "[--dtype f16|bf16|f32] IN_DIR OUT_DIR",
    "Writes OUT_DIR (created if missing) with IN_DIR's config.json, preprocessor_config.json and\n"
    "tokenizer files, and its model.safetensors with every float tensor rounded to the chosen "
    "type\n"
    "(to nearest, ties to even). vit loads all three; so do transformers and PyTorch. F16 halves\n"
    "the files of an F32 model; vit computes in float32 either way.",
    options,
    sizeof options / sizeof options[0]};

const cli_command *cli_convert_command(void) {
    return &command;
}

int cli_parse_dtype(const cli_parser *p, const char *command, st_dtype *out) {
    static const struct {
        const char *name;
        st_dtype dtype;
    } names[] = {{"f16", ST_F16}, {"bf16", ST_BF16}, {"f32", ST_F32}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcasecmp(p->value, names[i].name) == 0) {
            *out = names[i].dtype;
            return 0;
        }
    fprintf(stderr, "vit %s: invalid value for %s: '%s' (expected f16, bf16 or f32)\n", command,
            p->option, p->value);
    return -1;
}

static int convert_option(const cli_parser *p, int id, void *user) {
    return id == OPT_DTYPE ? cli_parse_dtype(p, "convert", user) : 0;
}

int cli_convert(int argc, char **argv) {
    st_dtype dtype = ST_F16;
    cli_parser p;
    cli_outcome parsed = cli_parse(&p, &command, argc, argv, NULL, convert_option, &dtype);
    if (parsed == CLI_PARSED && p.num_rest != 2)
        parsed = cli_usage_error(&command, "expected IN_DIR and OUT_DIR");
    if (parsed != CLI_PARSED) return cli_exit_status(parsed);
    vit_error err = {0};
    if (model_dir_convert(p.rest[0], p.rest[1], dtype, &err) != 0) {
        fprintf(stderr, "vit convert: %s\n", err.msg);
        return 1;
    }
    printf("%s -> %s (%s)\n", p.rest[0], p.rest[1], st_dtype_name(dtype));
    return 0;
}
