#ifndef VIT_CLI_H
#define VIT_CLI_H

/* Subcommands of bin/vit. Each takes argv after the subcommand name (argv[0] is the subcommand)
 * and returns the process exit status: 0 success, 1 a run that failed, 2 usage error. */
int cli_preprocess(int argc, char **argv);

/* The model directory: the -m value if given, else $VIT_MODEL, else the default model shipped
 * in models/ beside the binary's bin/ folder. Writes into buf; returns buf. */
const char *cli_model_dir(const char *option, char *buf, size_t size);

#endif
