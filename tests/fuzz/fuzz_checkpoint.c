/* The training checkpoint on `vit train --resume`: the input is train_state.safetensors (weights,
 * AdamW moments, counters and the run's options as JSON in its metadata), placed in a model folder
 * beside a fixed small model (tests/fuzz/checkpoint/: config.json, model.safetensors,
 * preprocessor_config.json, as `vit train` wrote them); the run resumes, takes one step on a tiny
 * image folder and checkpoints again (a stop requested from the start).
 *
 * The options name the training data by absolute path: the seeds name DATA_DIR, which this
 * harness creates. An input whose options name another folder is not run (it would read
 * whatever that folder holds, "/" included: slow, not a parser's bug). */
#include <cjson/cJSON.h>
#include <signal.h>
#include <sys/stat.h>

#include "tests/fuzz/fuzz_input.h"
#include "vit/io/safetensors.h"
#include "vit/train/run.h"

#define MODEL_FILES "tests/fuzz/checkpoint"
#define DATA_DIR    "/dev/shm/vit-fuzz-train-data"
#define IMAGE       "tests/data/pullover.png"

typedef struct {
    const char *name;
    uint8_t *data;
    size_t size;
} file_copy;

static file_copy model_files[] = {
    {"config.json", NULL, 0},
    {"model.safetensors", NULL, 0},
    {"preprocessor_config.json", NULL, 0},
};
#define NUM_MODEL_FILES ((int)(sizeof model_files / sizeof model_files[0]))

static void slurp(const char *path, uint8_t **data, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "fuzz_checkpoint: cannot read %s (run from the project's root)\n", path);
        abort();
    }
    fseek(f, 0, SEEK_END);
    *size = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    *data = malloc(*size ? *size : 1);
    if (!*data || fread(*data, 1, *size, f) != *size) abort();
    fclose(f);
}

/* Two classes of two images each (the same picture: the step's numbers do not matter here). */
static void make_data(void) {
    uint8_t *png;
    size_t size;
    slurp(IMAGE, &png, &size);
    mkdir(DATA_DIR, 0755);
    const char *classes[] = {"a", "b"};
    for (int c = 0; c < 2; c++) {
        char path[256];
        snprintf(path, sizeof path, DATA_DIR "/%s", classes[c]);
        mkdir(path, 0755);
        for (int i = 0; i < 2; i++) {
            snprintf(path, sizeof path, DATA_DIR "/%s/%d.png", classes[c], i);
            char tmp[300];
            snprintf(tmp, sizeof tmp, "%s.%d", path, (int)getpid());
            FILE *f = fopen(tmp, "wb");
            if (!f || fwrite(png, 1, size, f) != size || fclose(f) != 0) abort();
            rename(tmp, path); /* atomic: another instance may be reading */
        }
    }
    free(png);
}

static void set_up(void) {
    for (int i = 0; i < NUM_MODEL_FILES; i++) {
        char path[256];
        snprintf(path, sizeof path, MODEL_FILES "/%s", model_files[i].name);
        slurp(path, &model_files[i].data, &model_files[i].size);
    }
    make_data();
}

/* Whether every path among the options lies in DATA_DIR (or the options cannot be read: then the
 * library's own check is what runs). */
static int paths_stay_in_data(const char *path) {
    st_file f;
    vit_error err;
    if (st_open(path, &f, &err) != 0) return 1;
    char *opts = malloc(1 << 16);
    int ok = 1;
    if (opts && st_metadata(&f, "options", opts, 1 << 16, &err) == 0) {
        cJSON *json = cJSON_Parse(opts);
        const char *keys[] = {"train", "val", "labels", "init", "vocab"};
        for (int i = 0; json && i < 5; i++) {
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(json, keys[i]);
            if (cJSON_IsString(v) && strncmp(v->valuestring, DATA_DIR "/", strlen(DATA_DIR) + 1) &&
                strcmp(v->valuestring, DATA_DIR))
                ok = 0;
        }
        cJSON_Delete(json);
    }
    free(opts);
    st_close(&f);
    return ok;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!model_files[0].data) set_up();
    char out[256];
    snprintf(out, sizeof out, "%s/out", fuzz_dir());
    mkdir(out, 0755);
    for (int i = 0; i < NUM_MODEL_FILES; i++)
        fuzz_write_in("out", model_files[i].name, model_files[i].data, model_files[i].size);
    fuzz_write_in("out", TRAIN_STATE_FILE, data, size);
    char state[300];
    snprintf(state, sizeof state, "%s/" TRAIN_STATE_FILE, out);
    if (!paths_stay_in_data(state)) return 0;
    static volatile sig_atomic_t stop = 1;
    const train_hooks hooks = {.stop = &stop};
    train_options opt = train_default_options();
    opt.out_dir = out;
    opt.threads = 1;
    vit_error err;
    const int rc = train_run(&opt, 1, &hooks, &err);
    if (rc < -1 || rc > 1) abort();
    if (rc == -1 && !err.msg[0]) abort(); /* a failure must say why */
    return 0;
}
