/* vit explain: pictures of where the model looked, one PNG per image (vit_explain_file). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "vit/cli/cli.h"
#include "vit/io/safetensors.h"

enum { OPT_OUTPUT = 1, OPT_METHOD, OPT_LABEL, OPT_TOP, OPT_RAW };

static const cli_option options[] = {
    CLI_MODEL_OPTION("the image model", CLI_MODEL_DEFAULT),
    {OPT_OUTPUT, "output", 'o', "OUT_DIR", "where the pictures go (created; required)", NULL},
    {OPT_METHOD, "method", 0, "rollout|last|grad",
     "attention rollout; the last layer's CLS attention per head; gradient-weighted rollout "
     "(class-specific)",
     "rollout"},
    {OPT_LABEL, "label", 0, "N", "explain class N (grad: the map is N's; others: the legend)",
     NULL},
    {OPT_TOP, "top", 0, NULL, "explain the most probable class", "yes"},
    {OPT_RAW, "raw", 0, NULL,
     "also write the map as OUT_DIR/NAME.safetensors (F32 'map' [maps, grid, grid], raw values)",
     NULL},
    CLI_EXIF_UPRIGHT,
    CLI_SIZE_OPTION("run at N x N (position embeddings interpolated)"),
    CLI_PIXELS_OPTION,
    CLI_THREADS_OPTION,
};

static const cli_command command = {
    "explain",
    "draw where the model looked, as a heat map over each image",
    "[options] IMAGE... -o OUT_DIR",
    "Writes OUT_DIR/NAME.png for each IMAGE: the image (its original size) with the map blended\n"
    "over it, placed back through the preprocessing's resize and crop (what the model never saw\n"
    "is darkened), and a strip below with the class, its probability and the colour scale.\n"
    "Prints one line per image: the file, the class explained, its probability, the picture.\n"
    "Two IMAGEs of one name (a/cat.jpg b/cat.jpg) are refused: they would write one picture.",
    options,
    sizeof options / sizeof options[0]};

const cli_command *cli_explain_command(void) {
    return &command;
}

typedef struct {
    const char *out_dir;
    vit_explain_method method;
    int label, raw;
    cli_common common;
    char **files;
    int num_files;
} explain_options;

static int parse_method(const cli_parser *p, vit_explain_method *m) {
    static const char *const names[] = {"rollout", "last", "grad"};
    const int i = cli_choice(p, names, 3);
    if (i >= 0) *m = (vit_explain_method)i;
    return i < 0 ? -1 : 0;
}

static int explain_option(const cli_parser *p, int id, void *user) {
    explain_options *o = user;
    switch (id) {
    case OPT_OUTPUT:
        return o->out_dir = p->value, 0;
    case OPT_METHOD:
        return parse_method(p, &o->method);
    case OPT_LABEL:
        return cli_int(p, 0, 1 << 20, &o->label);
    case OPT_TOP:
        return o->label = -1, 0;
    case OPT_RAW:
        return o->raw = 1, 0;
    }
    return 0;
}

static cli_outcome parse_options(int argc, char **argv, explain_options *o) {
    cli_parser p;
    const cli_outcome parsed = cli_parse(&p, &command, argc, argv, &o->common, explain_option, o);
    if (parsed != CLI_PARSED) return parsed;
    if (p.num_rest < 1 || !o->out_dir)
        return cli_usage_error(&command, "expected IMAGE... and -o OUT_DIR");
    o->files = p.rest;
    o->num_files = p.num_rest;
    return CLI_PARSED;
}

/* An input's picture name (its file name without the extension) and where it came from. */
typedef struct {
    const char *file;
    int len; /* of the name, which starts at file + start */
    int start;
} picture_name;

static picture_name name_of(const char *file) {
    const char *base = strrchr(file, '/');
    base = base ? base + 1 : file;
    const char *dot = strrchr(base, '.');
    return (picture_name){file, dot && dot != base ? (int)(dot - base) : (int)strlen(base),
                          (int)(base - file)};
}

static int compare_names(const void *a, const void *b) {
    const picture_name *x = a, *y = b;
    const int n = x->len < y->len ? x->len : y->len;
    const int c = memcmp(x->file + x->start, y->file + y->start, (size_t)n);
    return c ? c : x->len - y->len;
}

/* Two inputs that would write the same OUT_DIR/NAME.png (a/cat.jpg and b/cat.jpg, cat.jpg and
 * cat.png): refused before anything runs, naming both, rather than one picture overwriting the
 * other. 0, or -1 after the message. */
static int check_distinct_names(const explain_options *o) {
    picture_name *names = malloc(sizeof *names * (size_t)o->num_files);
    if (!names) return fprintf(stderr, "vit explain: out of memory\n"), -1;
    for (int i = 0; i < o->num_files; i++) names[i] = name_of(o->files[i]);
    qsort(names, (size_t)o->num_files, sizeof *names, compare_names);
    int rc = 0;
    for (int i = 1; i < o->num_files && rc == 0; i++)
        if (compare_names(&names[i - 1], &names[i]) == 0) {
            fprintf(stderr,
                    "vit explain: %s and %s would both be written to %s/%.*s.png; explain them "
                    "into different -o folders\n",
                    names[i - 1].file, names[i].file, o->out_dir, names[i].len,
                    names[i].file + names[i].start);
            rc = -1;
        }
    free(names);
    return rc;
}

/* OUT_DIR/<the file's name without its extension>.EXT */
static void output_path(const char *out_dir, const char *file, const char *ext, char *buf,
                        size_t size) {
    const picture_name n = name_of(file);
    snprintf(buf, size, "%s/%.*s.%s", out_dir, n.len, file + n.start, ext);
}

static int write_raw(const char *path, const vit_explanation *x, vit_error *err) {
    st_entry e = {
        .name = "map", .ndim = 3, .shape = {x->maps, x->grid_h, x->grid_w}, .data = x->map};
    return st_write_f32(path, &e, 1, err);
}

static int explain_one(vit_context *ctx, const explain_options *o, const char *file) {
    char png[4096], raw[4096];
    output_path(o->out_dir, file, "png", png, sizeof png);
    vit_explanation x;
    vit_error err = {0};
    int rc = vit_explain_file(ctx, file, o->method, o->label, png, &x, &err);
    if (rc == 0 && o->raw) {
        output_path(o->out_dir, file, "safetensors", raw, sizeof raw);
        rc = write_raw(raw, &x, &err);
    }
    if (rc != 0) {
        fprintf(stderr, "vit explain: %s\n", err.msg);
        return 1;
    }
    const char *label = vit_label(ctx, x.label);
    printf("%s\t%d\t%s\t%.4f\t%s\n", file, x.label, label ? label : "", x.prob, png);
    vit_explanation_free(&x);
    return 0;
}

/* mkdir -p */
static int make_dirs(const char *path) {
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(buf, 0777) != 0 && errno != EEXIST) return -1;
        *p = '/';
    }
    return mkdir(buf, 0777) != 0 && errno != EEXIST ? -1 : 0;
}

int cli_explain(int argc, char **argv) {
    explain_options o = {.common.params = vit_default_params(), .label = -1};
    const cli_outcome parsed = parse_options(argc, argv, &o);
    if (parsed != CLI_PARSED) return cli_exit_status(parsed);
    if (check_distinct_names(&o) != 0) return 2;
    if (make_dirs(o.out_dir) != 0) {
        fprintf(stderr, "vit explain: cannot create %s: %s\n", o.out_dir, strerror(errno));
        return 1;
    }
    char model_dir[4096];
    vit_context *ctx = cli_load_classifier(&command, &o.common, model_dir, sizeof model_dir);
    if (!ctx) return 1;
    if (o.label >= vit_num_labels(ctx)) {
        fprintf(stderr, "vit explain: --label %d: the model has classes 0..%d\n", o.label,
                vit_num_labels(ctx) - 1);
        vit_free(ctx);
        return 2;
    }
    int failed = 0;
    for (int i = 0; i < o.num_files; i++) failed += explain_one(ctx, &o, o.files[i]);
    vit_free(ctx);
    return failed ? 1 : 0;
}
