#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cblas.h>
#include <errno.h>

#include "vit/cli/cli.h"

#define DEFAULT_MODEL "models/fashion-vit"

const char *cli_model_dir(const char *option, char *buf, size_t size) {
    const char *env = getenv("VIT_MODEL");
    if (option) {
        snprintf(buf, size, "%s", option);
    } else if (env && *env) {
        snprintf(buf, size, "%s", env);
    } else {
        /* bin/vit lives beside models/: resolve from the executable, not the working directory. */
        char exe[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        if (n <= 0) {
            snprintf(buf, size, "%s", DEFAULT_MODEL);
            return buf;
        }
        exe[n] = 0;
        char *slash = strrchr(exe, '/');
        if (slash) *slash = 0; /* .../bin */
        slash = strrchr(exe, '/');
        if (slash) *slash = 0; /* project root */
        snprintf(buf, size, "%s/%s", exe, DEFAULT_MODEL);
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
                "vit %s: no model given, and the default model %s is not there; pass -m "
                "MODEL_DIR, set VIT_MODEL, or build it with 'make model'\n",
                command, model_dir);
        return;
    }
    fprintf(stderr, "vit %s: %s\n", command, err->msg);
}

void cli_top_indices(const float *x, int n, int k, int *out) {
    for (int i = 0; i < k; i++) {
        int best = -1;
        for (int j = 0; j < n; j++) {
            int taken = 0;
            for (int t = 0; t < i && !taken; t++) taken = out[t] == j;
            if (!taken && (best < 0 || x[j] > x[best])) best = j;
        }
        out[i] = best;
    }
}

long long cli_parse_int(const char *text, long long lo, long long hi, const char *option) {
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno || end == text || *end || v < lo || v > hi) {
        fprintf(stderr, "vit: invalid value for %s: '%s' (expected an integer in %lld..%lld)\n",
                option, text, lo, hi);
        return -1;
    }
    return v;
}

int cli_decode_threads(int threads) {
    (void)threads;
    return 1; /* one loader thread beside OpenBLAS's; measured best on 2 cores (README figures) */
}

const char *cli_blas_core(void) {
    return openblas_get_corename();
}
