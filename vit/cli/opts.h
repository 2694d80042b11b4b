#ifndef VIT_CLI_OPTS_H
#define VIT_CLI_OPTS_H

/* One option idiom for every subcommand: a table of options drives the parsing (getopt_long),
 * `vit COMMAND --help` and the man page, so the three never disagree. Commands parse through
 * cli_parse (cli.h), which runs the loop below and gives one of three outcomes.
 *
 *   static const cli_option options[] = {
 *       {OPT_TOP, "top", 'k', "N", "show the N most likely labels", "5"},
 *       ...};
 *   static const cli_command command = {"classify", "[options] FILE...", "Classifies ...",
 *                                       options, N};
 *   cli_parser p;
 *   cli_parse_begin(&p, &command, argc, argv);
 *   while ((id = cli_parse_next(&p)) > 0) switch (id) { case OPT_TOP: ... p.value ... }
 *   // id: CLI_END (operands in p.rest[0 .. p.num_rest)), CLI_HELP or CLI_ERROR
 */

#include <getopt.h>
#include <stdint.h>
#include <stdio.h>

typedef struct {
    int id;           /* > 0, what cli_parse_next returns for it */
    const char *name; /* --name; NULL: a heading for the options below (its text in help) */
    char short_name;  /* -x, or 0 */
    const char *arg;  /* the value's name ("N", "DIR"); NULL: a flag */
    const char *help; /* one sentence */
    const char *def;  /* the default as shown, or NULL */
} cli_option;

typedef struct {
    const char *name;        /* the subcommand */
    const char *summary;     /* one line, for `vit --help` */
    const char *synopsis;    /* after "vit NAME " */
    const char *description; /* paragraphs, '\n'-separated lines */
    const cli_option *options;
    int count;
} cli_command;

enum { CLI_END = 0, CLI_HELP = -1, CLI_ERROR = -2 };

#define CLI_MAX_OPTIONS 64

typedef struct {
    const cli_command *cmd;
    int argc;
    char **argv;
    struct option longopts[CLI_MAX_OPTIONS + 2];
    char shortopts[2 * CLI_MAX_OPTIONS + 4];
    const char *value; /* the current option's value */
    char option[128];  /* the current option as written: "-b" or "--batch" */
    char **rest;       /* operands, once parsing ended */
    int num_rest;
} cli_parser;

void cli_parse_begin(cli_parser *p, const cli_command *cmd, int argc, char **argv);
/* The next option's id (its value in p->value), CLI_END when the options are done (operands in
 * p->rest), CLI_HELP after printing --help, CLI_ERROR after reporting a usage error. */
int cli_parse_next(cli_parser *p);

/* Integer and number values in [lo, hi]; report a usage error and return -1 when invalid. */
int cli_int(const cli_parser *p, int lo, int hi, int *out);
int cli_int64(const cli_parser *p, long long lo, long long hi, int64_t *out);
int cli_number(const cli_parser *p, double lo, double hi, double *out);
/* The index of the value among names[0..n), or -1 after reporting a usage error. */
int cli_choice(const cli_parser *p, const char *const *names, int n);
/* The name of the current option as the user wrote it ("-b" or "--batch"). */
const char *cli_option_name(const cli_parser *p);

void cli_print_help(const cli_command *cmd, FILE *out);
/* The command's section of the man page (roff). */
void cli_print_man(const cli_command *cmd, FILE *out);

#endif
