/* What the subcommands share: where models are, error and JSON conventions. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cblas.h>

#include "vit/cli/cli.h"

#define DEFAULT_MODEL "vit-tiny-in1k"

/* dir/name when dir/name/config.json... exists: a folder of models. */
static int has_models(const char *dir) {
    char probe[PATH_MAX + 64];
    snprintf(probe, sizeof probe, "%s/%s/config.json", dir, DEFAULT_MODEL);
    return access(probe, F_OK) == 0;
}

const char *cli_models_dir(char *buf, size_t size) {
    /* resolved from the executable, not the working directory */
    char exe[PATH_MAX];
    const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) {
        snprintf(buf, size, "models");
        return buf;
    }
    exe[n] = 0;
    char *slash = strrchr(exe, '/');
    if (slash) *slash = 0; /* .../bin */
    slash = strrchr(exe, '/');
    if (slash) *slash = 0; /* the build tree, or the installation prefix */
    snprintf(buf, size, "%s/models", exe);
    if (!has_models(buf)) {
        char installed[PATH_MAX + 32];
        snprintf(installed, sizeof installed, "%s/share/vit/models", exe);
        if (has_models(installed)) snprintf(buf, size, "%s", installed);
    }
    return buf;
}

int cli_is_dir(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

const char *cli_model_dir(const char *option, char *buf, size_t size) {
    const char *env = getenv("VIT_MODEL");
    if (option) {
        snprintf(buf, size, "%s", option);
    } else if (env && *env) {
        snprintf(buf, size, "%s", env);
    } else {
        char models[PATH_MAX];
        cli_models_dir(models, sizeof models);
        snprintf(buf, size, "%s/%s", models, DEFAULT_MODEL);
    }
    return buf;
}

void cli_print_load_error(const char *command, const char *model_opt, const char *model_dir,
                          const vit_error *err) {
    const char *env = getenv("VIT_MODEL");
    char probe[4200];
    snprintf(probe, sizeof probe, "%s/config.json", model_dir);
    if (!model_opt && !(env && *env) && access(probe, F_OK) != 0) {
        fprintf(stderr,
                "vit %s: no model given, and the default model %s is not there (it ships in "
                "models/ beside bin/, or share/vit/models/ when installed); pass -m MODEL_DIR or "
                "set VIT_MODEL\n",
                command, model_dir);
        return;
    }
    fprintf(stderr, "vit %s: %s\n", command, err->msg);
}

void cli_json_top(json_writer *w, const vit_prediction *top, int k) {
    json_key(w, "top");
    json_array(w);
    for (int i = 0; i < k; i++) {
        json_object(w);
        json_key(w, "index");
        json_int(w, top[i].index);
        json_key(w, "label");
        json_string(w, top[i].label);
        json_key(w, "prob");
        json_float(w, top[i].prob);
        json_end(w);
    }
    json_end(w);
}

int cli_decode_threads(int threads) {
    (void)threads;
    return 1; /* one loader thread beside the forward's; measured best on 2 cores (README) */
}

const char *cli_blas_core(void) {
    return openblas_get_corename();
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

int cli_shared_option(const cli_parser *p, int id, vit_params *params) {
    switch (id) {
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
    }
    return 0;
}
