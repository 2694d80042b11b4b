#ifndef VIT_BASE_HOT_H
#define VIT_BASE_HOT_H

/* HOT_LOOP marks a function whose loops gain from wider vectors: on x86-64 it is compiled for
 * x86-64-v4 (AVX-512), v3 (AVX2, FMA) and the baseline, and the best the CPU has is picked once,
 * when the program starts (function multiversioning through an ifunc), so one portable binary
 * runs as fast as a -march=native one. Elsewhere, or with VIT_NO_CLONES, a plain function.
 * A HOT_LOOP function must not contain an OpenMP region (the region's outlined body would not be
 * cloned): parallel code calls it on its share of the work instead. A HOT_LOOP function is
 * static: clang 14 names the dispatcher of an exported clone set "f.ifunc", so another file's
 * call to f does not link; export a plain wrapper instead. */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(VIT_NO_CLONES)
#define HOT_LOOP __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define HOT_LOOP
#endif

#endif
