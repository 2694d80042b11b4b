/* The FP32 FMA peak of this machine: per thread, twelve independent chains of fused
 * multiply-adds (enough to fill two FMA pipes of latency 4-5; sixteen with AVX-512), 8 floats wide
 * (AVX2) and, where the CPU has it, 16 wide (AVX-512: the same on CPUs that split it over 256-bit
 * pipes, twice on those with 512-bit ones), timed over a fixed count; prints GFLOP/s for 1 thread
 * and for every thread (OpenMP). The higher width's figure is the peak the project's GFLOP/s are
 * shares of. Where the CPU has them, the same chains of the dot products bf16 and int8 run on:
 * AVX512_BF16's vdpbf16ps (32 bf16 pairs, 64 flops an instruction) and AVX512_VNNI's vpdpbusd (64
 * u8 x s8 products and their sums, 128 integer ops), so the bf16 and int8 shares are measured, not
 * assumed to be twice and four times the FMA's.
 * build/bench/fma_peak [SECONDS_PER_RUN] */
#include <immintrin.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#include "vit/base/clock.h"

#define CHAINS 12
/* AVX-512's 32 registers hold more chains; vdpbf16ps's longer latency needs them (12 chains
 * measured 995 GFLOP/s on a Zen 5, 16 chains 1084). */
#define CHAINS512 16

typedef float v8f __attribute__((vector_size(32)));
typedef float v16f __attribute__((vector_size(64)));

#if defined(__x86_64__)
__attribute__((target("avx512f"))) static double chains16(long iterations) {
    v16f acc[CHAINS512], a, b;
    for (int i = 0; i < 16; i++) a[i] = 1.0f, b[i] = 0.999999f;
    for (int c = 0; c < CHAINS512; c++) acc[c] = a * (float)c;
    for (long i = 0; i < iterations; i++)
        for (int c = 0; c < CHAINS512; c++)
            acc[c] = __builtin_ia32_vfmaddps512_mask(acc[c], b, a, (unsigned short)-1, 4);
    double sink = 0;
    for (int c = 0; c < CHAINS512; c++) sink += acc[c][0];
    return sink;
}

__attribute__((target("avx2,fma"))) static double chains(long iterations) {
    v8f acc[CHAINS], a = {1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f},
                     b = {0.999999f, 0.999999f, 0.999999f, 0.999999f,
                          0.999999f, 0.999999f, 0.999999f, 0.999999f};
    for (int c = 0; c < CHAINS; c++) acc[c] = a * (float)c;
    for (long i = 0; i < iterations; i++)
        for (int c = 0; c < CHAINS; c++) acc[c] = __builtin_ia32_vfmaddps256(acc[c], b, a);
    double sink = 0;
    for (int c = 0; c < CHAINS; c++) sink += acc[c][0];
    return sink;
}
__attribute__((target("avx512f,avx512bf16"))) static double chains_bf16(long iterations) {
    __m512 acc[CHAINS512];
    const __m512bh a = (__m512bh)_mm512_set1_epi16(0x3f80), b = (__m512bh)_mm512_set1_epi16(0x3f7f);
    for (int c = 0; c < CHAINS512; c++) acc[c] = _mm512_set1_ps((float)c);
    for (long i = 0; i < iterations; i++)
        for (int c = 0; c < CHAINS512; c++) acc[c] = _mm512_dpbf16_ps(acc[c], a, b);
    double sink = 0;
    for (int c = 0; c < CHAINS512; c++) sink += _mm512_reduce_add_ps(acc[c]);
    return sink;
}

__attribute__((target("avx512f,avx512vnni"))) static double chains_u8s8(long iterations) {
    __m512i acc[CHAINS512];
    const __m512i a = _mm512_set1_epi8(3), b = _mm512_set1_epi8(-1);
    for (int c = 0; c < CHAINS512; c++) acc[c] = _mm512_set1_epi32(c);
    for (long i = 0; i < iterations; i++)
        for (int c = 0; c < CHAINS512; c++) acc[c] = _mm512_dpbusd_epi32(acc[c], a, b);
    double sink = 0;
    for (int c = 0; c < CHAINS512; c++) sink += _mm512_reduce_add_epi32(acc[c]);
    return sink;
}

static int has_avx512(void) {
    return __builtin_cpu_supports("avx512f");
}
static int has_bf16_dot(void) {
    return __builtin_cpu_supports("avx512bf16");
}
static int has_vnni(void) {
    return __builtin_cpu_supports("avx512vnni");
}
#else
static double chains(long iterations) { /* x86-64 only: the FMA chains above */
    (void)iterations;
    return 0;
}
static double chains16(long iterations) {
    return chains(iterations);
}
static double chains_bf16(long iterations) {
    return chains(iterations);
}
static double chains_u8s8(long iterations) {
    return chains(iterations);
}
static int has_avx512(void) {
    return 0;
}
static int has_bf16_dot(void) {
    return 0;
}
static int has_vnni(void) {
    return 0;
}
#endif

enum kind { FMA256, FMA512, DOT_BF16, DOT_U8S8 };
/* Operations (a multiply and an add each count one) per instruction of each kind. */
static const double ops_per_instruction[] = {16, 32, 64, 128};

static double run_chains(enum kind kind, long iterations) {
    switch (kind) {
    case FMA256:
        return chains(iterations);
    case FMA512:
        return chains16(iterations);
    case DOT_BF16:
        return chains_bf16(iterations);
    default:
        return chains_u8s8(iterations);
    }
}

/* G operations/s of `threads` threads running the chains of one kind at once. */
static double measure(enum kind kind, int threads, long iterations) {
    double sink = 0, t0 = clock_seconds();
#pragma omp parallel num_threads(threads) reduction(+ : sink)
    sink += run_chains(kind, iterations);
    const double seconds = clock_seconds() - t0;
    if (sink == 42.0) puts(""); /* keeps the work */
    const int chains = kind == FMA256 ? CHAINS : CHAINS512;
    return ops_per_instruction[kind] * chains * (double)iterations * threads / seconds / 1e9;
}

/* Best of five runs on one thread and on all, each run about as long as the first kind's. */
static void report(enum kind kind, const char *what, const char *unit, long iterations) {
    const int all = omp_get_max_threads();
    const long scaled =
        (long)(iterations * ops_per_instruction[FMA256] / ops_per_instruction[kind]);
    double best1 = 0, best_all = 0;
    for (int r = 0; r < 5; r++) {
        const double one = measure(kind, 1, scaled), many = measure(kind, all, scaled);
        best1 = one > best1 ? one : best1;
        best_all = many > best_all ? many : best_all;
    }
    printf("%s (best of 5): 1 thread %.1f %s, %d threads %.1f %s\n", what, best1, unit, all,
           best_all, unit);
}

int main(int argc, char **argv) {
    const double target = argc > 1 ? atof(argv[1]) : 0.5;
    long iterations = 1000000;
    while (measure(FMA256, 1, iterations) * 1e9 * target >
           ops_per_instruction[FMA256] * CHAINS * (double)iterations)
        iterations *= 2;
    report(FMA256, "FMA peak, 256-bit", "GFLOP/s", iterations);
    if (has_avx512()) report(FMA512, "FMA peak, 512-bit", "GFLOP/s", iterations);
    if (has_bf16_dot()) report(DOT_BF16, "bf16 dot peak (vdpbf16ps)", "GFLOP/s", iterations);
    if (has_vnni()) report(DOT_U8S8, "int8 dot peak (vpdpbusd)", "GOP/s", iterations);
    return 0;
}
