/* --classes, --classes-file, --template, --templates: zero-shot's class names and prompts. */
#include "vit/cli/zero_shot.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vit/base/clock.h"

#define MAX_FILE_BYTES (64 << 20)
#define TEXT_BATCH     64 /* prompts per text forward pass: vit_classes_create's most */

static int add_template(const cli_parser *p, cli_zero_shot *zs) {
    const char **grown = realloc(zs->templates, sizeof *grown * (size_t)(zs->num_templates + 1));
    if (!grown) {
        cli_usage_error(p->cmd, "out of memory");
        return -1;
    }
    zs->templates = grown;
    zs->templates[zs->num_templates++] = p->value;
    return 0;
}

int cli_zero_shot_option(const cli_parser *p, int id, cli_zero_shot *zs) {
    switch (id) {
    case CLI_OPT_CLASSES:
        return zs->list = p->value, 0;
    case CLI_OPT_CLASSES_FILE:
        return zs->list_file = p->value, 0;
    case CLI_OPT_TEMPLATE:
        return add_template(p, zs);
    case CLI_OPT_TEMPLATES:
        return zs->templates_file = p->value, 0;
    }
    return 0;
}

int cli_zero_shot_given(const cli_zero_shot *zs) {
    return zs->list || zs->list_file;
}

static int is_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/* --classes "a, b,c" into names (in place in a copy); an empty name is a usage error. */
static cli_outcome split_list(const cli_command *cmd, cli_zero_shot *zs) {
    int n = 1;
    for (const char *s = zs->list; *s; s++) n += *s == ',';
    zs->list_copy = strdup(zs->list);
    zs->names = malloc(sizeof *zs->names * (size_t)n);
    if (!zs->list_copy || !zs->names) return cli_usage_error(cmd, "out of memory");
    char *s = zs->list_copy;
    for (int i = 0; i < n; i++) {
        char *end = strchr(s, ',');
        if (end) *end = 0;
        while (is_space(*s)) s++;
        for (char *t = s + strlen(s); t > s && is_space(t[-1]);) *--t = 0;
        if (!*s)
            return cli_usage_error(cmd, "--classes: class %d of \"%s\" is empty", i + 1, zs->list);
        zs->names[i] = s;
        s = end ? end + 1 : s + strlen(s);
    }
    zs->num_names = n;
    return CLI_PARSED;
}

cli_outcome cli_zero_shot_check(const cli_command *cmd, cli_zero_shot *zs) {
    if (zs->list && zs->list_file)
        return cli_usage_error(cmd, "give --classes or --classes-file, not both");
    if (!cli_zero_shot_given(zs) && (zs->num_templates || zs->templates_file))
        return cli_usage_error(cmd, "--template and --templates need --classes or --classes-file");
    return zs->list ? split_list(cmd, zs) : CLI_PARSED;
}

cli_outcome cli_zero_shot_check_model(const cli_command *cmd, const cli_zero_shot *zs,
                                      const vit_context *ctx, const char *model_dir) {
    const int joint = vit_joint_dim(ctx) > 0;
    if (joint && !cli_zero_shot_given(zs))
        return cli_usage_error(
            cmd,
            "%s is a joint image-text model (CLIP, SigLIP): give the class names "
            "to score images against, --classes \"cat,dog\" or --classes-file "
            "FILE",
            model_dir);
    if (!joint && cli_zero_shot_given(zs))
        return cli_usage_error(cmd,
                               "%s is an image classifier with its own %d labels: --classes and "
                               "--classes-file need a CLIP or SigLIP model",
                               model_dir, vit_num_labels(ctx));
    return CLI_PARSED;
}

/* --classes-file: every line a name (surrounding white space dropped); a blank line would shift
 * the classes after it, so it is an error. */
static int read_names(cli_zero_shot *zs, vit_error *err) {
    if (strlist_read(&zs->file_names, zs->list_file, MAX_FILE_BYTES, STRLIST_TRIM, err) != 0)
        return -1;
    const strlist *l = &zs->file_names;
    if (l->count <= 0) return vit_fail(err, "%s: no class names", zs->list_file);
    for (int i = 0; i < l->count; i++)
        if (!l->lines[i][0])
            return vit_fail(err, "%s:%d: an empty class name (one name per line, in class order)",
                            zs->list_file, i + 1);
    zs->names = malloc(sizeof *zs->names * (size_t)l->count);
    if (!zs->names) return vit_fail(err, "out of memory");
    for (int i = 0; i < l->count; i++) zs->names[i] = l->lines[i];
    zs->num_names = l->count;
    return 0;
}

/* --template values, then --templates FILE's lines; none: CLI_DEFAULT_TEMPLATE. */
static int gather_templates(cli_zero_shot *zs, vit_error *err) {
    const strlist *l = &zs->file_templates;
    if (zs->templates_file) {
        if (strlist_read(&zs->file_templates, zs->templates_file, MAX_FILE_BYTES,
                         STRLIST_TRIM | STRLIST_SKIP_BLANK, err) != 0)
            return -1;
        if (l->count == 0) return vit_fail(err, "%s: no templates", zs->templates_file);
    }
    const int n = zs->num_templates + l->count;
    const char **all = malloc(sizeof *all * (size_t)(n ? n : 1));
    if (!all) return vit_fail(err, "out of memory");
    for (int i = 0; i < zs->num_templates; i++) all[i] = zs->templates[i];
    for (int i = 0; i < l->count; i++) all[zs->num_templates + i] = l->lines[i];
    if (n == 0) all[0] = CLI_DEFAULT_TEMPLATE;
    zs->num_prompts = n ? n : 1;
    zs->all_templates = all;
    return 0;
}

int cli_zero_shot_read(cli_zero_shot *zs, vit_error *err) {
    if (zs->list_file && read_names(zs, err) != 0) return -1;
    return gather_templates(zs, err);
}

int cli_zero_shot_embed(cli_zero_shot *zs, const char *model_dir, const vit_params *params,
                        vit_error *err) {
    vit_text_params tp = cli_text_params(params);
    tp.max_batch = TEXT_BATCH;
    if (!(zs->text = vit_text_load(model_dir, &tp, err))) return -1;
    const double start = clock_seconds();
    zs->classes = vit_classes_create(zs->text, zs->names, zs->num_names, zs->all_templates,
                                     zs->num_prompts, err);
    zs->seconds = clock_seconds() - start;
    return zs->classes ? 0 : -1;
}

void cli_zero_shot_free(cli_zero_shot *zs) {
    vit_classes_free(zs->classes);
    vit_text_free(zs->text);
    strlist_free(&zs->file_names);
    strlist_free(&zs->file_templates);
    free(zs->names);
    free(zs->all_templates);
    free(zs->list_copy);
    free(zs->templates);
    *zs = (cli_zero_shot){0};
}
