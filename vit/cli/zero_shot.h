#ifndef VIT_CLI_ZERO_SHOT_H
#define VIT_CLI_ZERO_SHOT_H

/* Zero-shot classification's options, shared by `vit classify` and `vit eval`: the class names
 * (--classes, --classes-file) and the prompt templates (--template, --templates), embedded once
 * with the model folder's text tower (vit_classes_create). A command puts CLI_ZERO_SHOT_OPTIONS at
 * the end of its table and hands their ids to cli_zero_shot_option:
 *
 *   if (CLI_IS_ZERO_SHOT_OPTION(id)) return cli_zero_shot_option(p, id, &zs);
 *   ...  after parsing:  cli_zero_shot_check(&command, &zs)
 *   ...  the image model loaded:  cli_zero_shot_check_model(&command, &zs, ctx, dir)
 *   cli_zero_shot_read(&zs, &err);                   // the names (zs.names, zs.num_names)
 *   cli_zero_shot_embed(&zs, dir, &params, &err);    // zs.classes, zs.seconds
 *   cli_zero_shot_free(&zs); */

#include "vit/base/strlist.h"
#include "vit/cli/cli.h"
#include "vit/vit.h"

/* The prompt when none is given: CLIP's (its paper's and README's "a photo of a {}"). */
#define CLI_DEFAULT_TEMPLATE "a photo of a {}."

enum {
    CLI_OPT_CLASSES = 900, /* below the shared options, above any command's own */
    CLI_OPT_CLASSES_FILE,
    CLI_OPT_TEMPLATE,
    CLI_OPT_TEMPLATES,
};
#define CLI_IS_ZERO_SHOT_OPTION(id) ((id) >= CLI_OPT_CLASSES && (id) <= CLI_OPT_TEMPLATES)

/* The rows of the options (a heading first: put them last in the table). */
#define CLI_ZERO_SHOT_OPTIONS                                                                      \
    {0,                                                                                            \
     NULL,                                                                                         \
     0,                                                                                            \
     NULL,                                                                                         \
     "zero-shot, with a CLIP or SigLIP model (their text tower embeds the names)",                 \
     NULL},                                                                                        \
        {CLI_OPT_CLASSES,                                                                          \
         "classes",                                                                                \
         0,                                                                                        \
         "LIST",                                                                                   \
         "the class names, comma-separated (spaces around a name are dropped)",                    \
         NULL},                                                                                    \
        {CLI_OPT_CLASSES_FILE,                                                                     \
         "classes-file",                                                                           \
         0,                                                                                        \
         "FILE",                                                                                   \
         "the class names, one per line, in class order",                                          \
         NULL},                                                                                    \
        {CLI_OPT_TEMPLATE,                                                                         \
         "template",                                                                               \
         0,                                                                                        \
         "T",                                                                                      \
         "a prompt, {} standing for the name (one without {} is used as it is); repeatable: "      \
         "each name's prompts are averaged, CLIP's prompt ensembling",                             \
         "'" CLI_DEFAULT_TEMPLATE "', CLIP's"},                                                    \
    {                                                                                              \
        CLI_OPT_TEMPLATES, "templates", 0, "FILE",                                                 \
            "prompt templates, one per line (blank lines skipped), beside any --template", NULL    \
    }

typedef struct {
    /* the options as given */
    const char *list, *list_file, *templates_file;
    const char **templates; /* --template values, in order */
    int num_templates;
    /* the names, once cli_zero_shot_check has split --classes (or cli_zero_shot_load read the
     * file); num_names 0 when none are given */
    char *list_copy;
    strlist file_names, file_templates;
    const char **names;
    int num_names;
    const char **all_templates; /* --template's, then --templates's; else the default */
    int num_prompts;            /* templates per name */
    /* cli_zero_shot_embed's */
    vit_text_context *text;
    vit_classes *classes;
    double seconds; /* embedding the names' prompts */
} cli_zero_shot;

/* One of the ids above: its value into zs. 0, or -1 after reporting a usage error. */
int cli_zero_shot_option(const cli_parser *p, int id, cli_zero_shot *zs);
/* Whether class names were given (--classes or --classes-file). */
int cli_zero_shot_given(const cli_zero_shot *zs);
/* After parsing: --classes split into names (an empty name is an error), --classes with
 * --classes-file refused, templates without names refused. */
cli_outcome cli_zero_shot_check(const cli_command *cmd, cli_zero_shot *zs);
/* The image model against the options: a joint model (CLIP, SigLIP) needs class names, and
 * class names need a joint model. */
cli_outcome cli_zero_shot_check_model(const cli_command *cmd, const cli_zero_shot *zs,
                                      const vit_context *ctx, const char *model_dir);
/* Reads --classes-file and --templates (zs->names, zs->num_prompts). 0, or -1 with err naming the
 * file. */
int cli_zero_shot_read(cli_zero_shot *zs, vit_error *err);
/* Then loads model_dir's text tower with params' threads, backend and precision, and embeds every
 * name's prompts (zs->classes; zs->seconds the time that took). 0, or -1 with err. */
int cli_zero_shot_embed(cli_zero_shot *zs, const char *model_dir, const vit_params *params,
                        vit_error *err);
void cli_zero_shot_free(cli_zero_shot *zs);

#endif
