#ifndef VIT_ALLOC_H
#define VIT_ALLOC_H

#include <malloc.h>
#include <stdlib.h>

/* n floats, 64-byte aligned for the BLAS kernels; release with free(). The byte count is rounded
 * up to a multiple of 64 because aligned_alloc requires it (AddressSanitizer enforces it). */
static inline float *vit_alloc_floats(size_t n) {
    const size_t bytes = (n * sizeof(float) + 63) & ~(size_t)63;
    return aligned_alloc(64, bytes ? bytes : 64);
}

/* For programs (main, benchmarks), not the library: keep freed memory in the process instead of
 * returning it to the kernel. Each image's buffers (decoded pixels, resize intermediates, about
 * 1.5 MB for a 500x375 photo) would otherwise be mmap'ed fresh and first-touched page by page:
 * that was half the decode + preprocess time (5.4 -> 2.6 ms). 32 MB is glibc's largest mmap
 * threshold; the pipeline's working set is bounded, so the heap does not grow without limit. */
static inline void vit_keep_freed_memory(void) {
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 256 << 20);
}

#endif
