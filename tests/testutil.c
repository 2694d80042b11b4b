#include "tests/testutil.h"

#include <cjson/cJSON.h>
#include <errno.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

const char *shared_dir(void) {
    static char dir[4096];
    const char *env = getenv("VIT_SHARED");
    snprintf(dir, sizeof dir, "%s", env && *env ? env : "../shared");
    struct stat st;
    char probe[4200];
    snprintf(probe, sizeof probe, "%s/SPEC.md", dir);
    return stat(probe, &st) == 0 ? dir : NULL;
}

const char *shared_path(const char *relative) {
    static char path[4][4096];
    static int slot;
    slot = (slot + 1) % 4;
    snprintf(path[slot], sizeof path[slot], "%s/%s", shared_dir() ? shared_dir() : "../shared",
             relative);
    return path[slot];
}

static char tmpdir[256];

static void remove_tmpdir(void) {
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
}

const char *test_tmpdir(void) {
    if (!tmpdir[0]) {
        snprintf(tmpdir, sizeof tmpdir, "/tmp/vit-test-XXXXXX");
        if (!mkdtemp(tmpdir)) {
            perror("mkdtemp");
            abort();
        }
        atexit(remove_tmpdir);
    }
    return tmpdir;
}

const char *write_temp_file(const char *name, const void *data, size_t size) {
    static char path[8][4096];
    static int slot;
    slot = (slot + 1) % 8;
    snprintf(path[slot], sizeof path[slot], "%s/%s", test_tmpdir(), name);
    FILE *f = fopen(path[slot], "wb");
    if (!f || fwrite(data, 1, size, f) != size) abort();
    fclose(f);
    return path[slot];
}

uint8_t *read_whole_file(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = malloc((size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    if (buf) {
        buf[n] = 0; /* text files can go straight to parsers */
        if (size) *size = (size_t)n;
    }
    return buf;
}

static double gradcheck_error(double analytic, double numeric) {
    const double den = fabs(analytic) + fabs(numeric);
    return fabs(analytic - numeric) / (den > GRADCHECK_FLOOR ? den : GRADCHECK_FLOOR);
}

/* Five-point numeric derivative of loss wrt x[i] with step h (x[i] is restored). */
static double numeric_grad(float *x, size_t i, gradcheck_loss loss, void *ctx, float h) {
    const float v = x[i];
    const float at[4] = {v - 2 * h, v - h, v + h, v + 2 * h};
    double l[4];
    for (int k = 0; k < 4; k++) {
        x[i] = at[k];
        l[k] = loss(ctx);
    }
    x[i] = v;
    return (8.0 * (l[2] - l[1]) - (l[3] - l[0])) / (12.0 * h);
}

double gradcheck_tensor(float *x, const float *grad, size_t n, gradcheck_loss loss, void *ctx,
                        double *max_grad) {
    static const float steps[] = {2e-2f, 5e-2f, 5e-3f};
    double worst = 0.0;
    *max_grad = 0.0;
    for (size_t i = 0; i < n; i++) {
        if (fabs(grad[i]) > *max_grad) *max_grad = fabs(grad[i]);
        double num = 0.0, e = INFINITY;
        for (size_t k = 0; k < sizeof steps / sizeof steps[0] && e > GRADCHECK_TOL / 4; k++) {
            const double nk = numeric_grad(x, i, loss, ctx, steps[k]);
            const double ek = gradcheck_error(grad[i], nk);
            if (ek < e) e = ek, num = nk;
        }
        if (e > worst) worst = e;
        if (getenv("GRADCHECK_DEBUG") && e > 1e-3)
            print_message("    [%zu] analytic %.6g numeric %.6g err %.3g\n", i, grad[i], num, e);
    }
    return worst;
}

static uint64_t test_rng = 12345;

void test_seed(uint64_t seed) {
    test_rng = seed;
}

float test_uniform(float lo, float hi) {
    uint64_t z = (test_rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return lo + (hi - lo) * (float)((z >> 40) / 16777216.0);
}

void test_fill(float *x, size_t n, float lo, float hi) {
    for (size_t i = 0; i < n; i++) x[i] = test_uniform(lo, hi);
}

float *test_alloc_floats(size_t n) {
    float *p = calloc(n ? n : 1, sizeof(float));
    assert_non_null(p);
    return p;
}

float *test_read_tensor(const char *path, const char *name, size_t *numel) {
    size_t size;
    uint8_t *file = read_whole_file(path, &size);
    if (!file || size < 8) return free(file), NULL;
    uint64_t n = 0;
    for (int i = 0; i < 8; i++) n |= (uint64_t)file[i] << (8 * i);
    cJSON *header = n <= size - 8 ? cJSON_ParseWithLength((const char *)file + 8, n) : NULL;
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(header, name);
    const cJSON *dtype = cJSON_GetObjectItemCaseSensitive(t, "dtype");
    const cJSON *offsets = cJSON_GetObjectItemCaseSensitive(t, "data_offsets");
    float *out = NULL;
    if (cJSON_IsString(dtype) && strcmp(dtype->valuestring, "F32") == 0 &&
        cJSON_GetArraySize(offsets) == 2) {
        const size_t begin = (size_t)cJSON_GetArrayItem(offsets, 0)->valuedouble;
        const size_t end = (size_t)cJSON_GetArrayItem(offsets, 1)->valuedouble;
        if (begin <= end && 8 + n + end <= size && (out = malloc(end - begin + 4))) {
            memcpy(out, file + 8 + n + begin, end - begin);
            if (numel) *numel = (end - begin) / 4;
        }
    }
    cJSON_Delete(header);
    free(file);
    return out;
}

const char *test_vit_bin(void) {
    const char *bin = getenv("VIT_BIN");
    return bin && *bin ? bin : NULL;
}

test_run_result test_run_vit(const char *model, const char *stdin_path, const char *const *args) {
    static int calls;
    char out[4200], err[4200];
    snprintf(out, sizeof out, "%s/run-out-%d", test_tmpdir(), calls);
    snprintf(err, sizeof err, "%s/run-err-%d", test_tmpdir(), calls++);
    const char *argv[128] = {test_vit_bin()};
    int argc = 1;
    while (*args && argc < 127) argv[argc++] = *args++;
    argv[argc] = NULL;
    assert_non_null(argv[0]);
    fflush(NULL);
    const pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (model)
            setenv("VIT_MODEL", model, 1);
        else
            unsetenv("VIT_MODEL");
        const int fds[3] = {open(stdin_path ? stdin_path : "/dev/null", O_RDONLY),
                            open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600),
                            open(err, O_WRONLY | O_CREAT | O_TRUNC, 0600)};
        for (int i = 0; i < 3; i++)
            if (fds[i] < 0 || dup2(fds[i], i) < 0) _exit(127);
        alarm(120);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    int status;
    struct rusage usage;
    assert_int_equal(wait4(pid, &status, 0, &usage), pid);
    size_t n;
    test_run_result r = {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status),
                         (char *)read_whole_file(out, &n), (char *)read_whole_file(err, &n),
                         usage.ru_maxrss};
    assert_non_null(r.out);
    assert_non_null(r.err);
    return r;
}

void test_run_free(test_run_result *r) {
    free(r->out);
    free(r->err);
}

const char *test_joint_without_tokenizer(void) {
    static char dir[4096];
    if (dir[0]) return dir;
    snprintf(dir, sizeof dir, "%s/siglip-no-tokenizer", test_tmpdir());
    mkdir(dir, 0700);
    char cwd[2048];
    if (!getcwd(cwd, sizeof cwd)) return NULL;
    const char *files[] = {"config.json", "model.safetensors", "preprocessor_config.json"};
    for (int i = 0; i < 3; i++) {
        char from[4096], to[8192];
        snprintf(from, sizeof from, "%s/tests/data/siglip-micro/%s", cwd, files[i]);
        snprintf(to, sizeof to, "%s/%s", dir, files[i]);
        if (symlink(from, to) != 0 && errno != EEXIST) return NULL;
    }
    return dir;
}

float *test_golden_tensor(const char *dir, const char *name, size_t *numel) {
    char path[4096];
    snprintf(path, sizeof path, "%s/golden.safetensors", dir);
    float *t = test_read_tensor(path, name, numel);
    if (!t) fail_msg("%s: golden tensor %s missing", path, name);
    return t;
}

int test_backends(int *list) {
    int n = 0;
    list[n++] = -1;
    list[n++] = GEMM_OPENBLAS;
    if (gemm_backend_available(GEMM_ONEDNN)) list[n++] = GEMM_ONEDNN;
    return n;
}

gemm_state *test_prepare(model *m, int backend, int batch, int tokens) {
    vit_error err = {0};
    if (backend < 0) return NULL;
    if (model_prepare(m, (gemm_backend)backend, PRECISION_FP32, batch, tokens, &err) != 0)
        fail_msg("model_prepare: %s", err.msg);
    gemm_state *s = model_gemm_state(m, &err);
    if (!s) fail_msg("model_gemm_state: %s", err.msg);
    return s;
}
