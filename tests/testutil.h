#ifndef VIT_TESTUTIL_H
#define VIT_TESTUTIL_H

/* Shared helpers for the cmocka tests. Include it first: it includes <cmocka.h> and what cmocka.h
 * needs before it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>
#include <cmocka.h>

#include "vit/core/gemm.h"
#include "vit/model/params.h"

/* The tests' own data, written by the float64 tools in tools/ (paths from the project root, where
 * the tests run): the micro ViTs with their goldens and the golden images they are computed on. */
#define TEST_DATA     "tests/data"
#define MICRO_A       TEST_DATA "/micro-a"       /* tools/vit_reference.py */
#define MICRO_B       TEST_DATA "/micro-b"       /* tools/vit_reference.py */
#define GOLDEN_IMAGES TEST_DATA "/golden-images" /* tools/vit_reference.py */

/* The reference data folder for what is big or real (the ImageNet model and samples, SST-2 and the
 * BERT trained on it, CLIP's vocabulary, CIFAR-10): $VIT_SHARED, else ../shared from the project
 * root. NULL when absent. */
const char *shared_dir(void);

/* Path inside shared/ (static buffer, overwritten by the next call). */
const char *shared_path(const char *relative);

/* Skips the current test with a loud message naming what it needs when ../shared, or `relative`
 * inside it, is missing: only tests that need real data use it. */
#define REQUIRE_SHARED(relative)                                                                   \
    do {                                                                                           \
        if (!shared_dir() || access(shared_path(relative), R_OK) != 0) {                           \
            print_message("SKIP %s: needs real data that is not in the repository, "               \
                          "../shared/%s: not found (set VIT_SHARED to ../shared's path)\n",        \
                          __func__, relative);                                                     \
            skip();                                                                                \
        }                                                                                          \
    } while (0)

/* A fresh private temporary directory for this process (created once, removed at exit). */
const char *test_tmpdir(void);
/* Writes bytes to test_tmpdir()/name (name's folders must exist; aborts when it cannot write) and
 * returns the full path, in one of eight static buffers used in turn. */
const char *write_temp_file(const char *name, const void *data, size_t size);
/* Reads a whole file, NUL-terminated (not counted in *size; size may be NULL); caller frees. NULL
 * on failure. */
uint8_t *read_whole_file(const char *path, size_t *size);

/* tests/data/siglip-micro without its tokenizer files (links to its config, weights and
 * preprocessing in a folder of test_tmpdir()): a joint model whose text tower cannot load. */
const char *test_joint_without_tokenizer(void);

/* ---- running bin/vit ---- */

/* $VIT_BIN (set by `make test`), or NULL. */
const char *test_vit_bin(void);
/* Skips the current test loudly when $VIT_BIN is missing. */
#define REQUIRE_BIN()                                                                              \
    do {                                                                                           \
        if (!test_vit_bin()) {                                                                     \
            print_message("SKIP %s: VIT_BIN not set (run through make test)\n", __func__);         \
            skip();                                                                                \
        }                                                                                          \
    } while (0)

typedef struct {
    int status; /* the exit status, or 128 + the signal that ended it */
    char *out, *err;
    long peak_kb; /* its peak resident memory (getrusage's ru_maxrss) */
} test_run_result;

/* Runs `$VIT_BIN ARGS...` (NULL-terminated) with standard input from the file stdin_path (NULL:
 * empty) and VIT_MODEL set to model (NULL: unset); killed after two minutes (a hang fails). */
test_run_result test_run_vit(const char *model, const char *stdin_path, const char *const *args);
void test_run_free(test_run_result *r);

/* An F32 tensor of a safetensors file, read with the tests' own parser (independent of the
 * library's): *numel gets its element count (may be NULL). NULL when absent; caller frees. */
float *test_read_tensor(const char *path, const char *name, size_t *numel);

/* Tensor name of DIR/golden.safetensors (test_read_tensor); fails the test when it is absent. */
float *test_golden_tensor(const char *dir, const char *name, size_t *numel);

/* ---- random test data: the tests' own splitmix64, independent of the library's ---- */

/* Restarts the generator (it starts at 12345). */
void test_seed(uint64_t seed);
/* Uniform in [lo, hi). */
float test_uniform(float lo, float hi);
void test_fill(float *x, size_t n, float lo, float hi);
/* n zeroed floats (fails the test when out of memory); free() them. */
float *test_alloc_floats(size_t n);

/* ---- running a model on each backend (test_clip, test_ved) ---- */

/* The ways a model's layers run: -1 (unprepared: the plain fp32 layers), GEMM_OPENBLAS and, where
 * built, GEMM_ONEDNN, into list[3]; returns their number. */
int test_backends(int *list);
/* m prepared in fp32 on backend for batch x tokens rows, and a gemm_state for it (NULL for -1,
 * unprepared); fails the test on an error. */
gemm_state *test_prepare(model *m, int backend, int batch, int tokens);

/* ---- finite-difference gradient checks (test_gradcheck, test_bert_gradcheck) ---- */

#define GRADCHECK_TOL 1e-2 /* largest accepted error per element */
#define GRADCHECK_FLOOR                                                                            \
    1e-2 /* error = |a - n| / max(|a| + |n|, FLOOR): relative above, absolute below */

typedef double (*gradcheck_loss)(void *ctx);

/* Max error of the analytic grad[0..n) against five-point numeric gradients of loss() wrt
 * x[0..n) (each x[i] is restored). Each element is tried at the first step size; if that disagrees
 * by more than a quarter of GRADCHECK_TOL, at the others too, keeping the best: rounding noise
 * shrinks as h grows and the truncation error grows with h^4, so a correct gradient agrees at some
 * step (a wrong one at none). *max_grad receives the largest |analytic|. GRADCHECK_DEBUG=1 prints
 * the elements above 1e-3. */
double gradcheck_tensor(float *x, const float *grad, size_t n, gradcheck_loss loss, void *ctx,
                        double *max_grad);

#endif
