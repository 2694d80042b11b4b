#ifndef VIT_CLI_H
#define VIT_CLI_H

/* The `vit` program: one binary, a subcommand per job. Each takes argv after the subcommand name
 * (argv[0] is the subcommand) and returns the process exit status: 0 success, 1 a run that
 * failed, 2 a usage error. */

#include <stddef.h>

#include "vit/cli/json_writer.h"
#include "vit/cli/opts.h"
#include "vit/vit.h"

int cli_classify(int argc, char **argv);
int cli_eval(int argc, char **argv);
int cli_text(int argc, char **argv);
int cli_info(int argc, char **argv);
int cli_bench(int argc, char **argv);
int cli_train(int argc, char **argv);
int cli_preprocess(int argc, char **argv);

/* Each subcommand's options and texts: its --help, and its section of the man page. */
const cli_command *cli_classify_command(void);
const cli_command *cli_eval_command(void);
const cli_command *cli_text_command(void);
const cli_command *cli_info_command(void);
const cli_command *cli_bench_command(void);
const cli_command *cli_train_command(void);
const cli_command *cli_preprocess_command(void);

/* The model directory: the -m value if given, else $VIT_MODEL, else the default model shipped
 * with the program (see cli_default_model_dir). Writes into buf; returns buf. */
const char *cli_model_dir(const char *option, char *buf, size_t size);
/* Where the shipped models are: models/ beside the binary's bin/ folder (a build tree), else
 * share/vit/models/ beside it (an installed prefix). */
const char *cli_models_dir(char *buf, size_t size);

/* Prints "vit COMMAND: <err>" and, when the model came from no -m and no $VIT_MODEL and the
 * default model is not there, how to get one. */
void cli_print_load_error(const char *command, const char *model_opt, const char *model_dir,
                          const vit_error *err);

/* "top": [{"index": i, "label": "...", "prob": p}, ...] inside the current JSON object. */
void cli_json_top(json_writer *w, const vit_prediction *top, int k);

/* The --backend and --precision rows of an option table, and their values. */
#define CLI_BACKEND_OPTION(id)                                                                     \
    {                                                                                              \
        id, "backend", 0, "NAME", "openblas (the reference) or onednn",                            \
            "onednn where built, else openblas"                                                    \
    }
#define CLI_PRECISION_OPTION(id)                                                                   \
    { id, "precision", 0, "P", "fp32, bf16 or int8 for the linear layers", "fp32" }
int cli_backend(const cli_parser *p, vit_backend *out);
int cli_precision(const cli_parser *p, vit_precision *out);

/* Threads that decode images beside the forward pass, given the forward's thread request. */
int cli_decode_threads(int threads);

/* "Haswell", "SkylakeX", ...: the OpenBLAS kernel in use (figures depend on it). */
const char *cli_blas_core(void);

#endif
