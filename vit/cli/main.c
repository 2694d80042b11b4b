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
    {cli_rerank, cli_rerank_command},
    {cli_tag, cli_tag_command},
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
    fprintf(out, "usage: vit COMMAND [OPTIONS]\n       vit help COMMAND\n       vit --version\n\n"
                 "commands:\n");
    for (size_t i = 0; i < NUM_COMMANDS; i++) {
        const cli_command *c = commands[i].command();
        fprintf(out, "  %-12s %s\n", c->name, c->summary);
    }
    fprintf(out, "\nRun 'vit COMMAND --help' for a command's options.\n");
}

/* FEATURE(VIT_X): 1 when the build defined VIT_X (make passes -DVIT_X, which is 1), else 0; the
 * Linux kernel's IS_ENABLED idiom: "1" pastes into a placeholder that adds an argument. */
#define FEATURE_PLACEHOLDER_1               0,
#define FEATURE_SECOND(ignored, value, ...) value
#define FEATURE_PICK(arg_or_junk)           FEATURE_SECOND(arg_or_junk 1, 0, 0)
#define FEATURE_PASTE(value)                FEATURE_PICK(FEATURE_PLACEHOLDER_##value)
#define FEATURE(macro)                      FEATURE_PASTE(macro)

/* The optional features this build has, as make's "vit: built with" line names them. */
static const struct {
    const char *name;
    int built_in;
} features[] = {
    {"oneDNN", FEATURE(VIT_ONEDNN)},
    {"MPI", FEATURE(VIT_MPI)},
    {"microhttpd", FEATURE(VIT_MICROHTTPD)},
    {"WebP", FEATURE(VIT_WEBP)},
    {"TIFF", FEATURE(VIT_TIFF)},
    {"GIF", FEATURE(VIT_GIF)},
    {"SentencePiece", FEATURE(VIT_SENTENCEPIECE)},
    {"FreeType", FEATURE(VIT_FREETYPE)},
    {"libcurl", FEATURE(VIT_CURL)},
};
#define NUM_FEATURES (sizeof features / sizeof features[0])

/* One line: the version, OpenBLAS's kernel, the features built in, then those left out. */
static void print_version(FILE *out) {
    fprintf(out, "vit %s (OpenBLAS %s)", vit_version(), openblas_get_corename());
    for (int with = 1; with >= 0; with--) {
        int n = 0;
        for (size_t i = 0; i < NUM_FEATURES; i++)
            if (features[i].built_in == with)
                fprintf(out, "%s%s",
                        n++    ? ", "
                        : with ? "; built with "
                               : "; left out: ",
                        features[i].name);
        if (with && n == 0) fprintf(out, "; built with no optional feature");
    }
    fputc('\n', out);
}

/* vit help CMD: CMD's own --help. */
static int help_for(const char *name) {
    for (size_t i = 0; i < NUM_COMMANDS; i++)
        if (strcmp(name, commands[i].command()->name) == 0) {
            cli_print_help(commands[i].command(), stdout);
            return 0;
        }
    fprintf(stderr, "vit help: unknown command '%s' (vit --help lists them)\n", name);
    return 2;
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
    fputs(".SH ENVIRONMENT\n.TP\n.B VIT_MODEL\nthe model (a folder, or org/name[@revision] of the "
          "Hugging Face Hub) when no \\-m is given\n"
          ".TP\n.B HF_HUB_CACHE\nthe Hugging Face cache org/name is looked for (and downloaded) "
          "in, shared with Python's huggingface_hub; else\n.B HUGGINGFACE_HUB_CACHE\n, else\n"
          ".B HF_HOME\n/hub, else $XDG_CACHE_HOME/huggingface/hub, else "
          "~/.cache/huggingface/hub\n"
          ".TP\n.B HF_ENDPOINT\nthe Hub downloads come from (default https://huggingface.co)\n"
          ".TP\n.B HF_TOKEN\nthe token sent to it for gated and private models (else\n"
          ".B HUGGING_FACE_HUB_TOKEN\n, else the file\n.B HF_TOKEN_PATH\nnames, else "
          "$HF_HOME/token)\n"
          ".TP\n.B HF_HUB_OFFLINE\n1 (or\n.B TRANSFORMERS_OFFLINE\n1): nothing is downloaded, "
          "the cache is used as it is\n"
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
    if (strcmp(arg, "help") == 0 && argc > 2) return help_for(argv[2]);
    if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0 || strcmp(arg, "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(arg, "--version") == 0) {
        print_version(stdout);
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
            /* only eval, train and embed share their work among ranks: any other command would run
             * N times over */
            if (dist_get().size > 1 && strcmp(arg, "eval") != 0 && strcmp(arg, "train") != 0 &&
                strcmp(arg, "embed") != 0) {
                if (dist_get().rank == 0)
                    fprintf(stderr,
                            "vit %s: runs in one process (under mpirun only 'vit eval', 'vit "
                            "train' and 'vit embed' of texts split their work); run it without "
                            "mpirun\n",
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
