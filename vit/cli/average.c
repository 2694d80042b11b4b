/* vit average: the mean of models' weights (a uniform model soup). */
#include <stdio.h>

#include "vit/cli/cli.h"
#include "vit/io/model_dir.h"

enum { OPT_DTYPE = 1, OPT_OUT, OPT_OVERWRITE };

static const cli_option options[] = {
    {OPT_OUT, "out", 'o', "DIR", "the averaged model's directory (required)", NULL},
    {OPT_DTYPE, "dtype", 0, "T", "f16, bf16 or f32: how model.safetensors stores floats", "f32"},
    {OPT_OVERWRITE, "overwrite", 0, NULL, "replace the model an OUT_DIR already holds", NULL},
};

static const cli_command command = {
    "average",
    "average the weights of models fine-tuned from one start (a model soup)",
    "-o OUT_DIR [--dtype f16|bf16|f32] [--overwrite] MODEL_DIR MODEL_DIR...",
    "Writes OUT_DIR (created if missing; a model it holds is replaced only with --overwrite) with "
    "the first model's config.json,\n"
    "preprocessor_config.json and tokenizer files, and a model.safetensors holding the mean of\n"
    "every float tensor over the models (summed in double, then rounded to the chosen type).\n"
    "The models must have the same tensors with the same shapes: models fine-tuned from the same\n"
    "weights on the same labels, e.g. with other seeds or settings. Their average (a \"uniform\n"
    "soup\", Wortsman et al. 2022) often classifies better than each; check it on held-out data\n"
    "with vit eval. Models trained apart from different starts do not average into anything\n"
    "useful. Sentence-transformers folders (modules.json) average into one: the Transformer\n"
    "modules' weights and each Dense module's, the other files copied from the first.",
    options,
    sizeof options / sizeof options[0]};

const cli_command *cli_average_command(void) {
    return &command;
}

typedef struct {
    st_dtype dtype;
    const char *out;
    int overwrite;
} average_args;

static int average_option(const cli_parser *p, int id, void *user) {
    average_args *a = user;
    if (id == OPT_OUT) {
        a->out = p->value;
        return 0;
    }
    if (id == OPT_OVERWRITE) return a->overwrite = 1, 0;
    return id == OPT_DTYPE ? cli_parse_dtype(p, "average", &a->dtype) : 0;
}

int cli_average(int argc, char **argv) {
    average_args a = {ST_F32, NULL, 0};
    cli_parser p;
    cli_outcome parsed = cli_parse(&p, &command, argc, argv, NULL, average_option, &a);
    if (parsed == CLI_PARSED && !a.out)
        parsed = cli_usage_error(&command, "expected -o OUT_DIR");
    else if (parsed == CLI_PARSED && p.num_rest < 2)
        parsed = cli_usage_error(&command, "expected two or more MODEL_DIRs");
    if (parsed != CLI_PARSED) return cli_exit_status(parsed);
    if (!a.overwrite && cli_refuse_existing_model("average", a.out) != 0) return 1;
    vit_error err = {0};
    if (model_dir_average((const char *const *)p.rest, p.num_rest, a.out, a.dtype, &err) != 0) {
        fprintf(stderr, "vit average: %s\n", err.msg);
        return 1;
    }
    printf("%d models -> %s (%s)\n", p.num_rest, a.out, st_dtype_name(a.dtype));
    return 0;
}
