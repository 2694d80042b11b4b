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
int cli_convert(int argc, char **argv);
int cli_serve(int argc, char **argv);
int cli_explain(int argc, char **argv);
int cli_embed(int argc, char **argv);

/* Each subcommand's options and texts: its --help, and its section of the man page. */
const cli_command *cli_classify_command(void);
const cli_command *cli_eval_command(void);
const cli_command *cli_text_command(void);
const cli_command *cli_info_command(void);
const cli_command *cli_bench_command(void);
const cli_command *cli_train_command(void);
const cli_command *cli_preprocess_command(void);
const cli_command *cli_convert_command(void);
const cli_command *cli_serve_command(void);
const cli_command *cli_explain_command(void);
const cli_command *cli_embed_command(void);

/* The model directory: the -m value if given, else $VIT_MODEL, else the default model shipped
 * with the program (see cli_default_model_dir). Writes into buf; returns buf. */
const char *cli_model_dir(const char *option, char *buf, size_t size);
/* Where the shipped models are: models/ beside the binary's bin/ folder (a build tree), else
 * share/vit/models/ beside it (an installed prefix). */
const char *cli_models_dir(char *buf, size_t size);
/* Whether path names a directory (following links). */
int cli_is_dir(const char *path);

/* Prints "vit COMMAND: <err>" and, when the model came from no -m and no $VIT_MODEL and the
 * default model is not there, how to get one. */
void cli_print_load_error(const char *command, const char *model_opt, const char *model_dir,
                          const vit_error *err);

/* "top": [{"index": i, "label": "...", "prob": p}, ...] inside the current JSON object. */
void cli_json_top(json_writer *w, const vit_prediction *top, int k);

/* Options the inference commands share: a row each in their option tables and one handler,
 * so their names, limits and help read the same everywhere. The ids lie above any command's own. */
enum {
    CLI_OPT_BATCH = 1000,
    CLI_OPT_THREADS,
    CLI_OPT_SIZE,
    CLI_OPT_PIXELS,
    CLI_OPT_BACKEND,
    CLI_OPT_PRECISION,
    CLI_OPT_LAST
};
#define CLI_BATCH_OPTION(help, def)                                                                \
    { CLI_OPT_BATCH, "batch", 'b', "N", help, def }
#define CLI_THREADS_OPTION                                                                         \
    {                                                                                              \
        CLI_OPT_THREADS, "threads", 't', "N", "compute threads",                                   \
            "OMP_NUM_THREADS, else one per core"                                                   \
    }
#define CLI_SIZE_OPTION(help)                                                                      \
    { CLI_OPT_SIZE, "size", 0, "N", help, "the model's image_size" }
#define CLI_PIXELS_OPTION                                                                          \
    { CLI_OPT_PIXELS, "max-pixels", 0, "N", "refuse images larger than this", "100000000" }
#define CLI_BACKEND_OPTION                                                                         \
    {                                                                                              \
        CLI_OPT_BACKEND, "backend", 0, "NAME", "openblas (the reference) or onednn",               \
            "onednn where built, else openblas"                                                    \
    }
#define CLI_PRECISION_OPTION                                                                       \
    { CLI_OPT_PRECISION, "precision", 0, "P", "fp32, bf16 or int8 for the linear layers", "fp32" }

/* Whether id is one of the shared options above. */
static inline int cli_is_shared_option(int id) {
    return id >= CLI_OPT_BATCH && id < CLI_OPT_LAST;
}
/* Stores the current shared option's value (p->value) in params. Returns 0, or -1 after
 * reporting an invalid value. */
int cli_shared_option(const cli_parser *p, int id, vit_params *params);

/* Threads that decode images beside the forward pass, given the forward's thread request. */
int cli_decode_threads(int threads);

/* "Haswell", "SkylakeX", ...: the OpenBLAS kernel in use (figures depend on it). */
const char *cli_blas_core(void);

#endif
