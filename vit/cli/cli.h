#ifndef VIT_CLI_H
#define VIT_CLI_H

#include <stddef.h>

#include "vit/base/error.h"

/* Subcommands of bin/vit. Each takes argv after the subcommand name (argv[0] is the subcommand)
 * and returns the process exit status: 0 success, 1 a run that failed, 2 usage error. */
int cli_preprocess(int argc, char **argv);
int cli_classify(int argc, char **argv);
int cli_eval(int argc, char **argv);
int cli_text(int argc, char **argv);
int cli_info(int argc, char **argv);
int cli_bench(int argc, char **argv);
int cli_train(int argc, char **argv);

/* The model directory: the -m value if given, else $VIT_MODEL, else the default model shipped
 * in models/ beside the binary's bin/ folder. Writes into buf; returns buf. */
const char *cli_model_dir(const char *option, char *buf, size_t size);

/* Prints "vit COMMAND: <err>" and, when the model came from no -m and no $VIT_MODEL and the
 * default model is not there, how to get one. */
void cli_print_load_error(const char *command, const char *model_opt, const char *model_dir,
                          const vit_error *err);

/* out[0..k) = indices of the k largest of x[0..n), largest first (ties: lower index first). */
void cli_top_indices(const float *x, int n, int k, int *out);

/* Parses an integer option in [lo, hi]; on failure prints "vit: invalid value ..." and returns -1. */
long long cli_parse_int(const char *text, long long lo, long long hi, const char *option);

/* Threads that decode images beside the forward pass, given the forward's thread request. */
int cli_decode_threads(int threads);

/* "Haswell", "SkylakeX", ...: the OpenBLAS kernel in use (figures depend on it). */
const char *cli_blas_core(void);

#endif
