/* bin/vit: one binary, one subcommand per job. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vit/base/alloc.h"
#include "vit/cli/cli.h"

static const struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} commands[] = {
    {"classify", cli_classify, "classify image files (top-k labels, text or JSON lines)"},
    {"text", cli_text, "classify texts with a BERT model (top-k labels, text or JSON lines)"},
    {"eval", cli_eval, "accuracy on labeled image folders: top-1/top-5, per class, confusions"},
    {"info", cli_info, "describe a model: architecture, parameters, FLOPs, labels"},
    {"bench", cli_bench, "time forward passes on synthetic input"},
    {"train", cli_train, "train a ViT or fine-tune one on image folders (AdamW, checkpoints)"},
    {"preprocess", cli_preprocess, "write the model-ready pixel tensor of an image as safetensors"},
};

static void usage(FILE *out) {
    fprintf(out, "usage: vit COMMAND [OPTIONS]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(out, "  %-11s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\nRun 'vit COMMAND --help' for a command's options.\n");
}

/* OpenMP threads spin at every barrier by default, which starves whatever else wants the cores:
 * the image loader thread of classify and eval, or any other process. Beside one busy process,
 * eval went from 40 to 1590 images/s with passive waiting. libgomp reads its wait policy from the
 * environment only when it is loaded, so when the user has not chosen one, the program runs itself
 * again with OMP_WAIT_POLICY=passive (if that fails, it carries on as it is). */
static void prefer_passive_openmp(char **argv) {
    if (getenv("OMP_WAIT_POLICY")) return;
    setenv("OMP_WAIT_POLICY", "passive", 1);
    execv("/proc/self/exe", argv);
}

int main(int argc, char **argv) {
    prefer_passive_openmp(argv);
    vit_keep_freed_memory();
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(argv[1], commands[i].name) == 0) return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "vit: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
