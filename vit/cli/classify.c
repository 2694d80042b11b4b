/* vit classify: top-k labels of image files. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vit/cli/cli.h"
#include "vit/cli/json_writer.h"
#include "vit/eval/eval_images.h"
#include "vit/vit.h"

enum {
    OPT_MODEL = 1,
    OPT_TOP,
    OPT_JSON,
    OPT_LOGITS,
};

static const cli_option options[] = {
    {OPT_MODEL, "model", 'm', "DIR", "model directory", "$VIT_MODEL, else the shipped model"},
    {OPT_TOP, "top", 'k', "N", "show the N most likely labels", "5"},
    {OPT_JSON, "json", 0, NULL, "one JSON object per line and file, in input order", NULL},
    {OPT_LOGITS, "logits", 0, NULL, "also print every logit", NULL},
    CLI_BATCH_OPTION("images per forward pass", "8"),
    CLI_THREADS_OPTION,
    CLI_SIZE_OPTION("run at N x N pixels (position embeddings interpolated as Hugging Face does)"),
    CLI_PIXELS_OPTION,
    CLI_BACKEND_OPTION,
    CLI_PRECISION_OPTION,
};

static const cli_command command = {
    "classify",
    "classify image files (top-k labels, text or JSON lines)",
    "[options] FILE...",
    "Classifies each FILE (PNG or JPEG, told by its first bytes); FILE '-' reads paths from\n"
    "standard input, one per line. A file that cannot be read is reported and the others still\n"
    "run; the exit status is then 1.",
    options,
    sizeof options / sizeof options[0]};

const cli_command *cli_classify_command(void) {
    return &command;
}

typedef struct {
    int top_k, json, with_logits;
    char **files;
    int num_files, next_file;
    int from_stdin;
    int failures;
    vit_context *ctx;
    float *probs;
    vit_prediction *top;
} classify_run;

static int next_path(void *user, char **path) {
    classify_run *r = user;
    for (;;) {
        if (r->from_stdin) {
            char *line = NULL;
            size_t cap = 0;
            ssize_t n = getline(&line, &cap, stdin);
            if (n >= 0) {
                while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = 0;
                if (n == 0) {
                    free(line);
                    continue;
                }
                *path = line;
                return 1;
            }
            free(line);
            r->from_stdin = 0;
        }
        if (r->next_file >= r->num_files) return 0;
        const char *f = r->files[r->next_file++];
        if (strcmp(f, "-") == 0) {
            r->from_stdin = 1;
            continue;
        }
        *path = strdup(f);
        return *path != NULL;
    }
}

static void print_json(const classify_run *r, const pipeline_item *it) {
    json_writer w = json_begin(stdout);
    json_object(&w);
    json_key(&w, "file");
    json_string(&w, it->path);
    if (!it->ok) {
        json_key(&w, "error");
        json_string(&w, it->err.msg);
    } else {
        cli_json_top(&w, r->top, r->top_k);
        if (r->with_logits) {
            json_key(&w, "logits");
            json_array(&w);
            for (int i = 0; i < vit_num_labels(r->ctx); i++) json_float(&w, it->logits[i]);
            json_end(&w);
        }
    }
    json_end(&w);
    json_line(&w);
}

static void print_text(const classify_run *r, const pipeline_item *it) {
    if (!it->ok) return; /* reported on stderr */
    printf("%s\n", it->path);
    for (int i = 0; i < r->top_k; i++) printf("  %.4f  %s\n", r->top[i].prob, r->top[i].label);
    if (r->with_logits) {
        printf("  logits:");
        for (int i = 0; i < vit_num_labels(r->ctx); i++) printf(" %.6g", it->logits[i]);
        printf("\n");
    }
}

static void batch_done(void *user, const pipeline_item *items, int count) {
    classify_run *r = user;
    const int L = vit_num_labels(r->ctx);
    for (int i = 0; i < count; i++) {
        const pipeline_item *it = &items[i];
        if (it->ok) {
            memcpy(r->probs, it->logits, sizeof(float) * (size_t)L);
            vit_softmax(r->probs, L);
            vit_top_k(r->ctx, r->probs, r->top_k, r->top);
        } else {
            r->failures++;
            fprintf(stderr, "vit classify: %s\n", it->err.msg);
        }
        if (r->json)
            print_json(r, it);
        else
            print_text(r, it);
    }
    fflush(stdout);
}

/* Options into r and params; returns 0 to run, else the exit status. */
static int parse_options(int argc, char **argv, classify_run *r, vit_params *params,
                         const char **model_opt) {
    cli_parser p;
    cli_parse_begin(&p, &command, argc, argv);
    int id, bad = 0;
    while (!bad && (id = cli_parse_next(&p)) > 0) {
        switch (id) {
        case OPT_MODEL:
            *model_opt = p.value;
            break;
        case OPT_TOP:
            bad = cli_int(&p, 1, 1 << 20, &r->top_k);
            break;
        case OPT_JSON:
            r->json = 1;
            break;
        case OPT_LOGITS:
            r->with_logits = 1;
            break;
        default:
            bad = cli_shared_option(&p, id, params);
        }
    }
    if (bad || id == CLI_ERROR) return 2;
    if (id == CLI_HELP) return -1;
    if (p.num_rest == 0) {
        fprintf(stderr, "vit classify: no input files (vit classify --help)\n");
        return 2;
    }
    r->files = p.rest;
    r->num_files = p.num_rest;
    return 0;
}

int cli_classify(int argc, char **argv) {
    classify_run r = {.top_k = 5};
    const char *model_opt = NULL;
    vit_params params = vit_default_params();
    params.max_batch = 8;
    const int parsed = parse_options(argc, argv, &r, &params, &model_opt);
    if (parsed != 0) return parsed < 0 ? 0 : parsed;
    char model_dir[4096];
    vit_error err = {0};
    r.ctx = vit_load(cli_model_dir(model_opt, model_dir, sizeof model_dir), &params, &err);
    if (!r.ctx) {
        cli_print_load_error("classify", model_opt, model_dir, &err);
        return 1;
    }
    if (r.top_k > vit_num_labels(r.ctx)) r.top_k = vit_num_labels(r.ctx);
    r.probs = malloc(sizeof(float) * (size_t)vit_num_labels(r.ctx));
    r.top = malloc(sizeof *r.top * (size_t)r.top_k);
    int rc = -1;
    if (!r.probs || !r.top) {
        fprintf(stderr, "vit classify: out of memory\n");
    } else {
        const pipeline_options opt = {.batch = params.max_batch,
                                      .decode_threads = cli_decode_threads(params.threads)};
        const pipeline_model model = eval_pipeline_model(r.ctx);
        rc = pipeline_run(&model, &opt, next_path, batch_done, &r, &err);
        if (rc != 0) fprintf(stderr, "vit classify: %s\n", err.msg);
    }
    free(r.probs);
    free(r.top);
    vit_free(r.ctx);
    return rc != 0 || r.failures ? 1 : 0;
}
