/* The FP32 FMA peak of this machine: per thread, twelve independent chains of fused
 * multiply-adds (enough to fill two FMA pipes of latency 4-5), 8 floats wide (AVX2) and, where the
 * CPU has it, 16 wide (AVX-512: the same on CPUs that split it over 256-bit pipes, twice on those
 * with 512-bit ones), timed over a fixed count; prints GFLOP/s for 1 thread and for every thread
 * (OpenMP). The higher width's figure is the peak the project's GFLOP/s are shares of.
 * build/bench/fma_peak [SECONDS_PER_RUN] */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#include "vit/base/clock.h"

#define CHAINS 12

typedef float v8f __attribute__((vector_size(32)));
typedef float v16f __attribute__((vector_size(64)));

#if defined(__x86_64__)
__attribute__((target("avx512f"))) static double chains16(long iterations) {
    v16f acc[CHAINS], a, b;
    for (int i = 0; i < 16; i++) a[i] = 1.0f, b[i] = 0.999999f;
    for (int c = 0; c < CHAINS; c++) acc[c] = a * (float)c;
    for (long i = 0; i < iterations; i++)
        for (int c = 0; c < CHAINS; c++)
            acc[c] = __builtin_ia32_vfmaddps512_mask(acc[c], b, a, (unsigned short)-1, 4);
    double sink = 0;
    for (int c = 0; c < CHAINS; c++) sink += acc[c][0];
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
static int has_avx512(void) {
    return __builtin_cpu_supports("avx512f");
}
#else
static double chains(long iterations) { /* x86-64 only: the FMA chains above */
    (void)iterations;
    return 0;
}
static double chains16(long iterations) {
    return chains(iterations);
}
static int has_avx512(void) {
    return 0;
}
#endif

/* GFLOP/s of `threads` threads running the chains `width` floats wide at once. */
static double measure(int width, int threads, long iterations) {
    double sink = 0, t0 = clock_seconds();
#pragma omp parallel num_threads(threads) reduction(+ : sink)
    sink += width == 16 ? chains16(iterations) : chains(iterations);
    const double seconds = clock_seconds() - t0;
    if (sink == 42.0) puts(""); /* keeps the work */
    return 2.0 * width * CHAINS * (double)iterations * threads / seconds / 1e9;
}

int main(int argc, char **argv) {
    const double target = argc > 1 ? atof(argv[1]) : 0.5;
    long iterations = 1000000;
    while (measure(8, 1, iterations) * 1e9 * target > 2.0 * 8 * CHAINS * (double)iterations)
        iterations *= 2;
    const int all = omp_get_max_threads();
    for (int width = 8; width <= (has_avx512() ? 16 : 8); width *= 2) {
        double best1 = 0, best_all = 0;
        for (int r = 0; r < 5; r++) {
            const double one = measure(width, 1, iterations / (width / 8));
            const double many = measure(width, all, iterations / (width / 8));
            best1 = one > best1 ? one : best1;
            best_all = many > best_all ? many : best_all;
        }
        printf("FMA peak, %d-bit (best of 5): 1 thread %.1f GFLOP/s, %d threads %.1f GFLOP/s\n",
               width * 32, best1, all, best_all);
    }
    return 0;
}
