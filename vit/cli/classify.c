/* vit classify: top-k labels of image files. */
#include <cjson/cJSON.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vit/cli/cli.h"
#include "vit/data/pipeline.h"
#include "vit/vit.h"

typedef struct {
    int top_k, json, with_logits;
    char **files;
    int num_files, next_file;
    int from_stdin;
    int failures;
    vit_context *ctx;
    float *probs;
} classify_run;

static const char usage_text[] =
    "usage: vit classify [-m MODEL_DIR] [-k N] [--json] [--logits] [-b BATCH] [-t THREADS] [--size N]\n"
    "                    [--max-pixels N] FILE...   (FILE '-' reads paths from stdin, one per line)\n";

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

static void print_json(classify_run *r, const pipeline_item *it, const int *top) {
    cJSON *obj = cJSON_CreateObject();
    cJSON_AddStringToObject(obj, "file", it->path);
    if (!it->ok) {
        cJSON_AddStringToObject(obj, "error", it->err.msg);
    } else {
        cJSON *arr = cJSON_AddArrayToObject(obj, "top");
        for (int i = 0; i < r->top_k; i++) {
            cJSON *e = cJSON_CreateObject();
            cJSON_AddNumberToObject(e, "index", top[i]);
            cJSON_AddStringToObject(e, "label", vit_label(r->ctx, top[i]));
            cJSON_AddNumberToObject(e, "prob", r->probs[top[i]]);
            cJSON_AddItemToArray(arr, e);
        }
        if (r->with_logits) {
            cJSON *lg = cJSON_AddArrayToObject(obj, "logits");
            for (int i = 0; i < vit_num_labels(r->ctx); i++) cJSON_AddItemToArray(lg, cJSON_CreateNumber(it->logits[i]));
        }
    }
    char *text = cJSON_PrintUnformatted(obj);
    if (text) puts(text);
    free(text);
    cJSON_Delete(obj);
}

static void print_text(classify_run *r, const pipeline_item *it, const int *top) {
    if (!it->ok) return; /* reported on stderr */
    printf("%s\n", it->path);
    for (int i = 0; i < r->top_k; i++) printf("  %.4f  %s\n", r->probs[top[i]], vit_label(r->ctx, top[i]));
    if (r->with_logits) {
        printf("  logits:");
        for (int i = 0; i < vit_num_labels(r->ctx); i++) printf(" %.6g", it->logits[i]);
        printf("\n");
    }
}

static void batch_done(void *user, const pipeline_item *items, int count) {
    classify_run *r = user;
    const int L = vit_num_labels(r->ctx);
    int top[L];
    for (int i = 0; i < count; i++) {
        const pipeline_item *it = &items[i];
        if (it->ok) {
            memcpy(r->probs, it->logits, sizeof(float) * (size_t)L);
            vit_softmax(r->probs, L);
            cli_top_indices(r->probs, L, r->top_k, top);
        } else {
            r->failures++;
            fprintf(stderr, "vit classify: %s\n", it->err.msg);
        }
        if (r->json) print_json(r, it, top);
        else print_text(r, it, top);
    }
    fflush(stdout);
}

int cli_classify(int argc, char **argv) {
    static const struct option longopts[] = {
        {"model", required_argument, 0, 'm'},   {"top", required_argument, 0, 'k'},
        {"json", no_argument, 0, 'j'},          {"logits", no_argument, 0, 'l'},
        {"batch", required_argument, 0, 'b'},   {"threads", required_argument, 0, 't'},
        {"size", required_argument, 0, 's'},    {"max-pixels", required_argument, 0, 'p'},
        {"help", no_argument, 0, 'h'},          {0, 0, 0, 0}};
    classify_run r = {.top_k = 5};
    const char *model_opt = NULL;
    vit_params params = vit_default_params();
    params.max_batch = 8;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "m:k:b:t:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'm': model_opt = optarg; break;
        case 'k': r.top_k = cli_parse_int(optarg, 1, 1 << 20, "-k"); break;
        case 'j': r.json = 1; break;
        case 'l': r.with_logits = 1; break;
        case 'b': params.max_batch = cli_parse_int(optarg, 1, 4096, "-b"); break;
        case 't': params.threads = cli_parse_int(optarg, 1, 1024, "-t"); break;
        case 's': params.image_size = cli_parse_int(optarg, 1, 8192, "--size"); break;
        case 'p': params.max_pixels = cli_parse_int(optarg, 1, 2000000000, "--max-pixels"); break;
        case 'h': fputs(usage_text, stdout); return 0;
        default: fputs(usage_text, stderr); return 2;
        }
        if (r.top_k < 0 || params.max_batch < 0 || params.threads < 0 || params.image_size < 0 || params.max_pixels < 0) {
            fputs(usage_text, stderr);
            return 2;
        }
    }
    if (optind >= argc) {
        fprintf(stderr, "vit classify: no input files\n%s", usage_text);
        return 2;
    }
    r.files = argv + optind;
    r.num_files = argc - optind;
    char model_dir[4096];
    vit_error err = {0};
    r.ctx = vit_load(cli_model_dir(model_opt, model_dir, sizeof model_dir), &params, &err);
    if (!r.ctx) {
        cli_print_load_error("classify", model_opt, model_dir, &err);
        return 1;
    }
    if (r.top_k > vit_num_labels(r.ctx)) r.top_k = vit_num_labels(r.ctx);
    r.probs = malloc(sizeof(float) * (size_t)vit_num_labels(r.ctx));
    pipeline_options opt = {.batch = params.max_batch, .decode_threads = cli_decode_threads(params.threads)};
    int rc = pipeline_run(r.ctx, &opt, next_path, batch_done, &r, &err);
    if (rc != 0) fprintf(stderr, "vit classify: %s\n", err.msg);
    free(r.probs);
    vit_free(r.ctx);
    return rc != 0 || r.failures ? 1 : 0;
}
