#include "vit/cli/opts.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "vit/cli/cli.h"

void cli_parse_begin(cli_parser *p, const cli_command *cmd, int argc, char **argv) {
    memset(p, 0, sizeof *p);
    p->cmd = cmd;
    p->argc = argc;
    p->argv = argv;
    char *s = p->shortopts;
    *s++ = ':'; /* a missing value is reported as ':', so the message can say so */
    int n = 0;
    for (int i = 0; i < cmd->count && n < CLI_MAX_OPTIONS; i++) {
        const cli_option *o = &cmd->options[i];
        if (!o->name) continue; /* a heading */
        p->longopts[n++] =
            (struct option){o->name, o->arg ? required_argument : no_argument, 0, o->id};
        if (o->short_name) {
            *s++ = o->short_name;
            if (o->arg) *s++ = ':';
        }
    }
    p->longopts[n++] = (struct option){"help", no_argument, 0, 'h'};
    p->longopts[n] = (struct option){0, 0, 0, 0};
    *s++ = 'h';
    *s = 0;
    optind = 1;
    opterr = 0; /* one-line messages of our own */
}

static const cli_option *by_short(const cli_command *cmd, int c) {
    for (int i = 0; i < cmd->count; i++)
        if (cmd->options[i].short_name == c) return &cmd->options[i];
    return NULL;
}

const char *cli_option_name(const cli_parser *p) {
    static char name[4];
    const char *arg = p->argv[optind - 1];
    /* a long option is the whole argument (up to any '='); a short one may sit in a cluster */
    if (strncmp(arg, "--", 2) == 0 || !optopt) {
        static char buf[128];
        snprintf(buf, sizeof buf, "%.*s", (int)strcspn(arg, "="), arg);
        return buf;
    }
    snprintf(name, sizeof name, "-%c", optopt);
    return name;
}

/* The option getopt_long just returned, as written: "-b" or "--batch". */
static void set_current_name(cli_parser *p, int id) {
    char *buf = p->option;
    const size_t size = sizeof p->option;
    snprintf(buf, size, "?");
    for (int i = 0; i < p->cmd->count; i++) {
        const cli_option *o = &p->cmd->options[i];
        if (o->id != id) continue;
        int at = optind - 1; /* the value in an argument of its own: the option is the one before */
        if (p->value && at >= 1 && p->value == p->argv[at]) at--;
        const char *arg = at >= 1 ? p->argv[at] : "";
        if (o->short_name && strncmp(arg, "--", 2) != 0)
            snprintf(buf, size, "-%c", o->short_name);
        else
            snprintf(buf, size, "--%s", o->name);
    }
}

/* getopt_long answers '?' both for an unknown option and for an abbreviation that two options
 * begin with: the second is reported as ambiguous, with the options it could be. 1 when it was. */
static int report_ambiguous(const cli_parser *p) {
    const char *arg = p->argv[optind - 1];
    if (strncmp(arg, "--", 2) != 0) return 0;
    const size_t len = strcspn(arg + 2, "=");
    int matches = 0;
    for (const struct option *o = p->longopts; o->name; o++) {
        if (strlen(o->name) == len && strncmp(o->name, arg + 2, len) == 0) return 0; /* exact */
        matches += strncmp(o->name, arg + 2, len) == 0;
    }
    if (len == 0 || matches < 2) return 0;
    fprintf(stderr, "vit %s: ambiguous option '--%.*s' (could be", p->cmd->name, (int)len, arg + 2);
    int n = 0;
    for (const struct option *o = p->longopts; o->name; o++)
        if (strncmp(o->name, arg + 2, len) == 0)
            fprintf(stderr, "%s --%s", n++ ? (n == matches ? " or" : ",") : "", o->name);
    fprintf(stderr, ")\n");
    return 1;
}

int cli_parse_next(cli_parser *p) {
    const int c = getopt_long(p->argc, p->argv, p->shortopts, p->longopts, NULL);
    p->value = optarg;
    if (c == -1) {
        p->rest = p->argv + optind;
        p->num_rest = p->argc - optind;
        return CLI_END;
    }
    if (c == 'h' && !by_short(p->cmd, 'h')) {
        cli_print_help(p->cmd, stdout);
        return CLI_HELP;
    }
    if (c == ':') {
        fprintf(stderr, "vit %s: option '%s' needs a value\n", p->cmd->name, cli_option_name(p));
        return CLI_ERROR;
    }
    if (c == '?') {
        if (report_ambiguous(p)) return CLI_ERROR;
        fprintf(stderr, "vit %s: unknown option '%s' (vit %s --help lists them)\n", p->cmd->name,
                cli_option_name(p), p->cmd->name);
        return CLI_ERROR;
    }
    const cli_option *o = c < 256 ? by_short(p->cmd, c) : NULL;
    const int id = o ? o->id : c;
    set_current_name(p, id);
    return id;
}

int cli_int64(const cli_parser *p, long long lo, long long hi, int64_t *out) {
    char *end;
    errno = 0;
    const long long v = strtoll(p->value, &end, 10);
    if (errno || end == p->value || *end || v < lo || v > hi) {
        fprintf(stderr, "vit %s: invalid value for %s: '%s' (expected an integer in %lld..%lld)\n",
                p->cmd->name, p->option, p->value, lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

int cli_int(const cli_parser *p, int lo, int hi, int *out) {
    int64_t v;
    if (cli_int64(p, lo, hi, &v) != 0) return -1;
    *out = (int)v;
    return 0;
}

int cli_choice(const cli_parser *p, const char *const *names, int n) {
    for (int i = 0; i < n; i++)
        if (strcmp(p->value, names[i]) == 0) return i;
    fprintf(stderr, "vit %s: invalid value for %s: '%s' (expected", p->cmd->name, p->option,
            p->value);
    for (int i = 0; i < n; i++)
        fprintf(stderr, "%s %s", i ? (i == n - 1 ? " or" : ",") : "", names[i]);
    fprintf(stderr, ")\n");
    return -1;
}

int cli_number(const cli_parser *p, double lo, double hi, double *out) {
    char *end;
    errno = 0;
    const double v = strtod(p->value, &end);
    if (errno || end == p->value || *end || !(v >= lo && v <= hi)) {
        fprintf(stderr, "vit %s: invalid value for %s: '%s' (expected a number in [%g, %g])\n",
                p->cmd->name, p->option, p->value, lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

/* ---- a command line: its three outcomes, the shared options ---- */

int cli_exit_status(cli_outcome outcome) {
    return outcome == CLI_HELP_SHOWN ? 0 : 2;
}

cli_outcome cli_usage_error(const cli_command *cmd, const char *fmt, ...) {
    fprintf(stderr, "vit %s: ", cmd->name);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, " (vit %s --help)\n", cmd->name);
    return CLI_USAGE_ERROR;
}

static int parse_backend(const cli_parser *p, vit_backend *out) {
    static const char *names[] = {"openblas", "onednn"};
    const int i = cli_choice(p, names, 2);
    if (i >= 0) *out = i == 0 ? VIT_BACKEND_OPENBLAS : VIT_BACKEND_ONEDNN;
    return i < 0 ? -1 : 0;
}

static int parse_precision(const cli_parser *p, vit_precision *out) {
    static const char *names[] = {"fp32", "bf16", "int8"};
    const int i = cli_choice(p, names, 3);
    if (i >= 0) *out = i == 0 ? VIT_FP32 : i == 1 ? VIT_BF16 : VIT_INT8;
    return i < 0 ? -1 : 0;
}

/* The current shared option's value into c: 0, or -1 after reporting an invalid value. */
static int shared_option(const cli_parser *p, int id, cli_common *c) {
    vit_params *params = &c->params;
    switch (id) {
    case CLI_OPT_MODEL:
        return c->model = p->value, 0;
    case CLI_OPT_BATCH:
        return cli_int(p, 1, 4096, &params->max_batch);
    case CLI_OPT_THREADS:
        return cli_int(p, 1, 1024, &params->threads);
    case CLI_OPT_SIZE:
        return cli_int(p, 1, 8192, &params->image_size);
    case CLI_OPT_PIXELS:
        return cli_int64(p, 1, 2000000000, &params->max_pixels);
    case CLI_OPT_BACKEND:
        return parse_backend(p, &params->backend);
    case CLI_OPT_PRECISION:
        return parse_precision(p, &params->precision);
    case CLI_OPT_EXIF:
    case CLI_OPT_NO_EXIF:
        return params->exif_orientation = id == CLI_OPT_EXIF, 0;
    }
    return 0;
}

cli_outcome cli_parse(cli_parser *p, const cli_command *cmd, int argc, char **argv,
                      cli_common *common, cli_option_fn own, void *user) {
    cli_parse_begin(p, cmd, argc, argv);
    int id, bad = 0;
    while (!bad && (id = cli_parse_next(p)) > 0)
        bad = id >= CLI_OPT_MODEL && common ? shared_option(p, id, common) : own(p, id, user);
    if (bad || id == CLI_ERROR) return CLI_USAGE_ERROR;
    return id == CLI_HELP ? CLI_HELP_SHOWN : CLI_PARSED;
}

/* ---- help and man page ---- */

static void option_label(const cli_option *o, char *buf, size_t size) {
    int n = o->short_name ? snprintf(buf, size, "-%c, --%s", o->short_name, o->name)
                          : snprintf(buf, size, "    --%s", o->name);
    if (o->arg && n > 0 && (size_t)n < size) snprintf(buf + n, size - (size_t)n, " %s", o->arg);
}

/* text word-wrapped to `width` columns, continuation lines indented by `indent`. */
static void print_wrapped(FILE *out, const char *text, int column, int indent, int width) {
    while (*text) {
        const char *word = text + strspn(text, " ");
        const int len = (int)strcspn(word, " ");
        if (!*word) break;
        if (column > indent && column + 1 + len > width) {
            fprintf(out, "\n%*s", indent, "");
            column = indent;
        } else if (column > indent) {
            fputc(' ', out);
            column++;
        }
        fwrite(word, 1, (size_t)len, out);
        column += len;
        text = word + len;
    }
    fputc('\n', out);
}

void cli_print_help(const cli_command *cmd, FILE *out) {
    fprintf(out, "usage: vit %s %s\n\n", cmd->name, cmd->synopsis);
    if (cmd->description) fprintf(out, "%s\n\n", cmd->description);
    fprintf(out, "options:\n");
    for (int i = 0; i < cmd->count; i++) {
        const cli_option *o = &cmd->options[i];
        if (!o->name) {
            fprintf(out, "%s:\n", o->help);
            continue;
        }
        char label[160], help[2048]; /* vit embed's --pool: 11 names, 900 characters of help */
        option_label(o, label, sizeof label);
        snprintf(help, sizeof help, "%s%s%s%s", o->help, o->def ? " (default: " : "",
                 o->def ? o->def : "", o->def ? ")" : "");
        fprintf(out, "  %-26s", label);
        if (strlen(label) > 26) fprintf(out, "\n%28s", "");
        print_wrapped(out, help, 28, 28, 100);
    }
    fprintf(out, "  %-26s%s\n", "-h, --help", "show this help");
}

/* roff: a backslash is written \e, a leading dot or quote is escaped. */
static void man_text(FILE *out, const char *s) {
    for (; *s; s++) {
        if (*s == '\\')
            fputs("\\e", out);
        else if (*s == '-')
            fputs("\\-", out);
        else if (*s == '\n') {
            fputc('\n', out);
            if (s[1] == '.' || s[1] == '\'') fputs("\\&", out);
        } else
            fputc(*s, out);
    }
}

void cli_print_man(const cli_command *cmd, FILE *out) {
    fprintf(out, ".SS vit %s\n", cmd->name);
    fputs(".B vit ", out);
    man_text(out, cmd->name);
    fputs("\n", out);
    man_text(out, cmd->synopsis);
    fputs("\n.PP\n", out);
    if (cmd->description) {
        man_text(out, cmd->description);
        fputs("\n", out);
    }
    for (int i = 0; i < cmd->count; i++) {
        const cli_option *o = &cmd->options[i];
        if (!o->name) {
            fputs(".PP\n.I ", out);
            man_text(out, o->help);
            fputs("\n", out);
            continue;
        }
        char label[160];
        option_label(o, label, sizeof label);
        fputs(".TP\n.B ", out);
        const char *l = label + strspn(label, " ");
        man_text(out, l);
        fputs("\n", out);
        man_text(out, o->help);
        if (o->def) {
            fputs(" (default: ", out);
            man_text(out, o->def);
            fputs(")", out);
        }
        fputs("\n", out);
    }
}
