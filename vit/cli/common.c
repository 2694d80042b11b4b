/* What the subcommands share: where models are, error and JSON conventions. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cblas.h>

#include "vit/base/file.h"
#include "vit/cli/cli.h"
#include "vit/model/config.h"

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

/* A download's bar on stderr, redrawn as the percentage changes, ended by a newline. */
typedef struct {
    const char *ref;
    char file[256];
    int percent;
} download_bar;

static void show_progress(void *user, const char *file, int64_t done, int64_t total) {
    download_bar *b = user;
    if (strcmp(b->file, file) != 0) snprintf(b->file, sizeof b->file, "%s", file), b->percent = -1;
    const int percent = total > 0 ? (int)(100 * done / total) : 0;
    if (percent == b->percent) return;
    b->percent = percent;
    char bar[31];
    for (int i = 0; i < 30; i++) bar[i] = i < percent * 30 / 100 ? '#' : '.';
    bar[30] = 0;
    const int mb = total >= 1000000; /* kB below a megabyte: 0.0/0.0 MB says nothing */
    fprintf(stderr, "\r%s %s [%s] %3d%% %.1f/%.1f %s", b->ref, file, bar, percent,
            done / (mb ? 1e6 : 1e3), total / (mb ? 1e6 : 1e3), mb ? "MB" : "kB");
    if (total > 0 && done >= total) fputc('\n', stderr);
}

const char *cli_model_dir(const char *command, const char *option, char *buf, size_t size) {
    const char *env = getenv("VIT_MODEL");
    char ref[PATH_MAX + 64];
    if (option) {
        snprintf(ref, sizeof ref, "%s", option);
    } else if (env && *env) {
        snprintf(ref, sizeof ref, "%s", env);
    } else {
        char models[PATH_MAX];
        cli_models_dir(models, sizeof models);
        snprintf(ref, sizeof ref, "%s/%s", models, DEFAULT_MODEL);
    }
    vit_error err = {0};
    download_bar bar = {.ref = ref};
    if (vit_download_model(ref, isatty(STDERR_FILENO) ? show_progress : NULL, &bar, buf, size,
                           &err) != 0) {
        fprintf(stderr, "vit %s: %s\n", command, err.msg);
        return NULL;
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

vit_context *cli_load_image_model(const cli_command *cmd, const cli_common *c, char *dir,
                                  size_t size) {
    vit_error err = {0};
    if (!cli_model_dir(cmd->name, c->model, dir, size)) return NULL;
    vit_context *ctx = vit_load(dir, &c->params, &err);
    if (!ctx) cli_print_load_error(cmd->name, c->model, dir, &err);
    if (ctx && vit_preprocess_defaults(ctx))
        fprintf(stderr, "vit %s: %s: %s\n", cmd->name, dir, vit_preprocess_defaults(ctx));
    return ctx;
}

int cli_is_text_model(const char *dir) {
    vit_model_kind kind;
    vit_error why = {0};
    if (vit_folder_kind(dir, &kind, &why) == 0 && kind == VIT_KIND_TEXT) return 1;
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/config.json", dir);
    vit_error err = {0};
    char *json = vit_read_file(path, 1 << 24, NULL, &err);
    if (!json) return 0; /* loading it says what is wrong */
    model_config cfg;
    const int ok = model_config_parse(json, path, &cfg, &err) == 0;
    free(json);
    const int text = ok && cfg.kind == MODEL_TEXT;
    if (ok) model_config_free(&cfg);
    return text;
}

int cli_is_image_to_text(const char *dir) {
    vit_model_kind kind;
    vit_error err = {0};
    if (vit_folder_kind(dir, &kind, &err) != 0) return 0; /* loading it says why */
    return kind == VIT_KIND_IMAGE_TO_TEXT;
}

vit_context *cli_load_classifier(const cli_command *cmd, const cli_common *c, char *dir,
                                 size_t size) {
    if (!cli_model_dir(cmd->name, c->model, dir, size)) return NULL;
    if (cli_is_image_to_text(dir)) {
        fprintf(stderr,
                "vit %s: %s is an image-to-text model (VisionEncoderDecoderModel), without "
                "labels: vit generate -m %s IMAGE... writes each image's text\n",
                cmd->name, dir, dir);
        return NULL;
    }
    return cli_load_image_model(cmd, c, dir, size);
}

vit_context *cli_load_labelled(const cli_command *cmd, const cli_common *c, char *dir,
                               size_t size) {
    vit_context *ctx = cli_load_classifier(cmd, c, dir, size);
    if (!ctx || vit_has_classifier(ctx) || vit_joint_dim(ctx) > 0) return ctx;
    fprintf(stderr,
            "vit %s: %s is a base model without a classifier (ViTModel, Dinov2Model, BeitModel, "
            "SiglipVisionModel: its "
            "outputs are features): vit embed -m %s IMAGE... writes them\n",
            cmd->name, dir, dir);
    vit_free(ctx);
    return NULL;
}

vit_text_params cli_text_params(const vit_params *p) {
    vit_text_params tp = vit_text_default_params();
    tp.threads = p->threads;
    if (p->max_batch > 0) tp.max_batch = p->max_batch;
    tp.backend = p->backend;
    tp.precision = p->precision;
    return tp;
}

void cli_json_entity(json_writer *w, const vit_entity *e, int grouped) {
    json_object(w);
    json_key(w, grouped ? "entity_group" : "entity");
    json_string(w, e->label);
    json_key(w, "score");
    json_float(w, e->score);
    if (!grouped) {
        json_key(w, "index");
        json_int(w, e->index);
    }
    json_key(w, "word");
    json_string(w, e->word);
    for (int k = 0; k < 2; k++) {
        json_key(w, k ? "end" : "start");
        if (e->start >= 0)
            json_int(w, k ? e->end : e->start);
        else
            json_raw(w, "null", 4);
    }
    json_end(w);
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
