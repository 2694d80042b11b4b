#ifndef VIT_ALLOC_H
#define VIT_ALLOC_H

#include <stdlib.h>

/* n floats, 64-byte aligned for the BLAS kernels; release with free(). The byte count is rounded
 * up to a multiple of 64 because aligned_alloc requires it (AddressSanitizer enforces it). */
static inline float *vit_alloc_floats(size_t n) {
    const size_t bytes = (n * sizeof(float) + 63) & ~(size_t)63;
    return aligned_alloc(64, bytes ? bytes : 64);
}

#endif
