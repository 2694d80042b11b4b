#ifndef VIT_BASE_ALLOC_H
#define VIT_BASE_ALLOC_H

#include <stddef.h>
#include <stdint.h>

/* Floats per alignment unit: every array of a block starts 64 bytes after the previous one's
 * start, rounded up, so each stays aligned for the BLAS kernels. */
#define ALLOC_ALIGN_FLOATS 16

static inline size_t alloc_pad16(size_t n) {
    return (n + ALLOC_ALIGN_FLOATS - 1) & ~(size_t)(ALLOC_ALIGN_FLOATS - 1);
}

/* n floats, 64-byte aligned; release with free(). */
float *vit_alloc_floats(size_t n);

/* Zeroes bytes at p without touching the whole pages inside them: those are handed back to the
 * kernel (madvise MADV_DONTNEED), to come back as zero pages when first used. A block about to
 * be filled piece by piece (a model's parameters from its file) is then resident only as it
 * fills, not all at once beside the file. */
void vit_zero_lazily(void *p, size_t bytes);
/* Hands the whole pages inside bytes at p back to the kernel (MADV_DONTNEED): memory no longer
 * needed (a weight a prepared copy replaced). They read as zeros if touched again. */
void vit_release_pages(void *p, size_t bytes);

/* One allocation for many arrays (llm.c's pattern): *fields[i] gets sizes[i] floats, each array
 * 64-byte aligned. Returns the block (free() it, which frees them all) or NULL. */
float *alloc_float_block(size_t count, const size_t *sizes, float **const *fields);
/* `sets` copies of such a layout back to back (per-layer activations): the fields point into the
 * first copy, and copy k of a field is k·*set_floats further on. */
float *alloc_float_sets(size_t sets, size_t count, const size_t *sizes, float **const *fields,
                        size_t *set_floats);
/* The same for byte arrays (masks), each starting 64 bytes apart, rounded up. */
uint8_t *alloc_byte_block(size_t count, const size_t *sizes, uint8_t **const *fields);

/* For programs (main, benchmarks), not the library: keep freed memory in the process instead of
 * returning it to the kernel. Each image's buffers (decoded pixels, resize intermediates, about
 * 1.5 MB for a 500x375 photo) would otherwise be mmap'ed fresh and first-touched page by page:
 * that was half the decode + preprocess time (5.4 -> 2.6 ms). 32 MB is glibc's largest mmap
 * threshold; the pipeline's working set is bounded, so the heap does not grow without limit. */
void vit_keep_freed_memory(void);

#endif
