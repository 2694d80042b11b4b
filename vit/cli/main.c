/* bin/vit: one binary, one subcommand per job. */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vit/base/alloc.h"
#include "vit/base/dist.h"
#include "vit/cli/cli.h"

static const struct {
    int (*run)(int argc, char **argv);
    const cli_command *(*command)(void);
} commands[] = {
    {cli_classify, cli_classify_command},
    {cli_text, cli_text_command},
    {cli_eval, cli_eval_command},
    {cli_info, cli_info_command},
    {cli_bench, cli_bench_command},
    {cli_train, cli_train_command},
    {cli_preprocess, cli_preprocess_command},
    {cli_convert, cli_convert_command},
    {cli_average, cli_average_command},
    {cli_serve, cli_serve_command},
    {cli_explain, cli_explain_command},
    {cli_embed, cli_embed_command},
    {cli_tokenize, cli_tokenize_command},
    {cli_search, cli_search_command},
    {cli_generate, cli_generate_command},
    {cli_render_lines, cli_render_lines_command},
};
#define NUM_COMMANDS (sizeof commands / sizeof commands[0])

static void usage(FILE *out) {
    fprintf(out, "usage: vit COMMAND [OPTIONS]\n       vit --version\n\ncommands:\n");
    for (size_t i = 0; i < NUM_COMMANDS; i++) {
        const cli_command *c = commands[i].command();
        fprintf(out, "  %-12s %s\n", c->name, c->summary);
    }
    fprintf(out, "\nRun 'vit COMMAND --help' for a command's options.\n");
}

/* The man page, from the same tables as every --help. */
static void print_man(FILE *out) {
    fprintf(out, ".TH VIT 1 \"\" \"vit %s\" \"User Commands\"\n", vit_version());
    fputs(".SH NAME\nvit \\- transformer encoders in C: Vision Transformers, CLIP and SigLIP, "
          "BERT and image-to-text models, to run, evaluate, train and serve\n.SH SYNOPSIS\n"
          ".B vit\n\\fICOMMAND\\fR [\\fIOPTIONS\\fR]\n"
          ".SH DESCRIPTION\nvit loads Hugging Face model directories (config.json, "
          "model.safetensors, preprocessor_config.json, the tokenizer's files) and classifies, "
          "embeds, explains and searches images and texts and reads text from images with the "
          "same numbers as PyTorch; it evaluates models on labelled data, trains or fine-tunes "
          "them, and serves them over HTTP.\n.SH COMMANDS\n",
          out);
    for (size_t i = 0; i < NUM_COMMANDS; i++) cli_print_man(commands[i].command(), out);
    fputs(".SH ENVIRONMENT\n.TP\n.B VIT_MODEL\nthe model directory when no \\-m is given\n"
          ".TP\n.B OMP_NUM_THREADS\nthe default thread count\n.TP\n.B OMP_WAIT_POLICY\n"
          "libgomp's default unless set (spin briefly, then sleep); passive makes waiting threads "
          "sleep at once (kinder to other processes, slower per oneDNN call)\n"
          ".TP\n.B OPENBLAS_CORETYPE\nforces an OpenBLAS kernel (figures depend on it)\n"
          ".TP\n.B VIT_API_KEY\nvit serve's API key when no \\-\\-api\\-key is given (every "
          "endpoint but GET /health and the page GET /, which asks for the key, then needs it)\n"
          ".TP\n.B XDG_CACHE_HOME\nwhere vit search keeps its caches of image embeddings "
          "(vit/search/ inside it)\n.TP\n.B HOME\n~/.cache holds those caches when "
          "XDG_CACHE_HOME is unset\n",
          out);
}

int main(int argc, char **argv) {
    vit_keep_freed_memory();
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *arg = argv[1];
    if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0 || strcmp(arg, "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(arg, "--version") == 0) {
        printf("vit %s (OpenBLAS %s)\n", vit_version(), openblas_get_corename());
        return 0;
    }
    if (strcmp(arg, "--man") == 0) {
        print_man(stdout);
        return 0;
    }
    for (size_t i = 0; i < NUM_COMMANDS; i++)
        if (strcmp(arg, commands[i].command()->name) == 0) {
            /* under mpirun, every rank runs the same command; alone, this does nothing */
            vit_error err = {0};
            if (dist_start(&argc, &argv, &err) != 0) {
                fprintf(stderr, "vit: %s\n", err.msg);
                return 1;
            }
            /* only eval and train share their work among ranks: any other command would run N
             * times over */
            if (dist_get().size > 1 && strcmp(arg, "eval") != 0 && strcmp(arg, "train") != 0) {
                if (dist_get().rank == 0)
                    fprintf(stderr,
                            "vit %s: runs in one process (under mpirun only 'vit eval' and "
                            "'vit train' split their work); run it without mpirun\n",
                            arg);
                dist_stop();
                return 2;
            }
            const int status = commands[i].run(argc - 1, argv + 1);
            dist_stop();
            return status;
        }
    fprintf(stderr, "vit: unknown command '%s'\n", arg);
    usage(stderr);
    return 2;
}
