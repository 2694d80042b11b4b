/* bin/vit: one binary, one subcommand per job. */
#include <stdio.h>
#include <string.h>

#include "vit/cli.h"

static const struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} commands[] = {
    {"classify", cli_classify, "classify image files (top-k labels, text or JSON lines)"},
    {"text", cli_text, "classify texts with a BERT model (top-k labels, text or JSON lines)"},
    {"info", cli_info, "describe a model: architecture, parameters, FLOPs, labels"},
    {"bench", cli_bench, "time forward passes on synthetic input"},
    {"preprocess", cli_preprocess, "write the model-ready pixel tensor of an image as safetensors"},
};

static void usage(FILE *out) {
    fprintf(out, "usage: vit COMMAND [OPTIONS]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(out, "  %-11s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\nRun 'vit COMMAND --help' for a command's options.\n");
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(argv[1], commands[i].name) == 0) return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "vit: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
