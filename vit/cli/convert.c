/* vit convert: a model directory with its weights stored in another float type. */
#include <stdio.h>
#include <strings.h>
#include <unistd.h>

#include "vit/cli/cli.h"
#include "vit/io/model_dir.h"

enum { OPT_DTYPE = 1, OPT_OVERWRITE };

static const cli_option options[] = {
    {OPT_DTYPE, "dtype", 0, "T", "f16, bf16 or f32: how model.safetensors stores floats", "f16"},
    {OPT_OVERWRITE, "overwrite", 0, NULL, "replace the model an OUT_DIR already holds", NULL},
};

typedef struct {
    st_dtype dtype;
    int overwrite;
} convert_options;

static const cli_command command = {
    "convert",
    "copy a model directory with its weights stored as F16, BF16 or F32",
    "[--dtype f16|bf16|f32] [--overwrite] IN_DIR OUT_DIR",
    "Reads IN_DIR's weights in any layout vit loads: model.safetensors, its shards\n"
    "(model.safetensors.index.json), pytorch_model.bin or its shards; an open_clip folder's\n"
    "open_clip_model.safetensors or open_clip_pytorch_model.bin. Writes OUT_DIR (created if\n"
    "missing) with them as one file, model.safetensors (open_clip_model.safetensors for an\n"
    "open_clip folder), every float tensor rounded to the chosen type (to nearest, ties to\n"
    "even), the tensors' names kept (old LayerNorm.gamma/beta read as weight/bias). Beside it\n"
    "IN_DIR's other files are copied as they are: config.json (Hugging Face and timm folders)\n"
    "or open_clip_config.json, preprocessor_config.json, generation_config.json, and the\n"
    "tokenizer's (tokenizer.json, vocab.txt, vocab.json, merges.txt, spiece.model,\n"
    "sentencepiece.bpe.model, added_tokens.json, tokenizer_config.json,\n"
    "special_tokens_map.json). A sentence-transformers folder (modules.json) stays one: its\n"
    "Transformer module converted where modules.json has it (the root or 0_Transformer/), with\n"
    "sentence_bert_config.json; modules.json, config_sentence_transformers.json (prompts,\n"
    "similarity) and every module folder copied (1_Pooling/, 2_Normalize/), a Dense's weights\n"
    "converted as the model's. vit loads the result; so do transformers and PyTorch. F16 halves\n"
    "an F32 model's files; vit computes in float32 either way. IN_DIR may be a Hugging Face\n"
    "Hub name, org/name[@revision] (from the cache, downloaded into it if missing).",
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
    convert_options *o = user;
    if (id == OPT_OVERWRITE) return o->overwrite = 1, 0;
    return id == OPT_DTYPE ? cli_parse_dtype(p, "convert", &o->dtype) : 0;
}

int cli_refuse_existing_model(const char *command, const char *out_dir) {
    static const char *const names[] = {"config.json", "model.safetensors", "open_clip_config.json",
                                        "open_clip_model.safetensors", "modules.json"};
    char path[4096];
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        snprintf(path, sizeof path, "%s/%s", out_dir, names[i]);
        if (access(path, F_OK) == 0) {
            fprintf(stderr, "vit %s: %s exists (--overwrite replaces it)\n", command, path);
            return -1;
        }
    }
    return 0;
}

int cli_convert(int argc, char **argv) {
    convert_options o = {ST_F16, 0};
    cli_parser p;
    cli_outcome parsed = cli_parse(&p, &command, argc, argv, NULL, convert_option, &o);
    if (parsed == CLI_PARSED && p.num_rest != 2)
        parsed = cli_usage_error(&command, "expected IN_DIR and OUT_DIR");
    if (parsed != CLI_PARSED) return cli_exit_status(parsed);
    if (!o.overwrite && cli_refuse_existing_model("convert", p.rest[1]) != 0) return 1;
    const st_dtype dtype = o.dtype;
    vit_error err = {0};
    char in[4096]; /* a folder, or org/name from the Hub (vit_resolve_model) */
    if (vit_resolve_model(p.rest[0], in, sizeof in, &err) != 0 ||
        model_dir_convert(in, p.rest[1], dtype, &err) != 0) {
        fprintf(stderr, "vit convert: %s\n", err.msg);
        return 1;
    }
    printf("%s -> %s (%s)\n", p.rest[0], p.rest[1], st_dtype_name(dtype));
    return 0;
}
