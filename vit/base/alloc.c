#include "vit/base/alloc.h"

#include <malloc.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <stdlib.h>

float *vit_alloc_floats(size_t n) {
    /* aligned_alloc wants a multiple of the alignment (AddressSanitizer enforces it) */
    const size_t bytes = (n * sizeof(float) + 63) & ~(size_t)63;
    return aligned_alloc(64, bytes ? bytes : 64);
}

/* The whole pages inside bytes at p: [*from, *to), empty when to <= from. */
static void inner_pages(const void *p, size_t bytes, uintptr_t *from, uintptr_t *to) {
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), at = (uintptr_t)p;
    *from = (at + page - 1) / page * page;
    *to = (at + bytes) / page * page;
}

void vit_release_pages(void *p, size_t bytes) {
    uintptr_t from, to;
    inner_pages(p, bytes, &from, &to);
    if (to > from) (void)madvise((void *)from, to - from, MADV_DONTNEED);
}

void vit_zero_lazily(void *p, size_t bytes) {
    const uintptr_t at = (uintptr_t)p;
    uintptr_t from, to;
    inner_pages(p, bytes, &from, &to);
    if (to <= from || madvise((void *)from, to - from, MADV_DONTNEED) != 0) {
        memset(p, 0, bytes);
        return;
    }
    memset(p, 0, from - at);
    memset((void *)to, 0, at + bytes - to);
}

float *alloc_float_sets(size_t sets, size_t count, const size_t *sizes, float **const *fields,
                        size_t *set_floats) {
    size_t total = 0;
    for (size_t i = 0; i < count; i++) total += alloc_pad16(sizes[i]);
    float *block = vit_alloc_floats(total * sets);
    if (!block) return NULL;
    if (set_floats) *set_floats = total;
    total = 0;
    for (size_t i = 0; i < count; i++) {
        *fields[i] = block + total;
        total += alloc_pad16(sizes[i]);
    }
    return block;
}

float *alloc_float_block(size_t count, const size_t *sizes, float **const *fields) {
    return alloc_float_sets(1, count, sizes, fields, NULL);
}

uint8_t *alloc_byte_block(size_t count, const size_t *sizes, uint8_t **const *fields) {
    size_t total = 0;
    for (size_t i = 0; i < count; i++) total += (sizes[i] + 63) & ~(size_t)63;
    uint8_t *block = aligned_alloc(64, total ? total : 64);
    if (!block) return NULL;
    total = 0;
    for (size_t i = 0; i < count; i++) {
        *fields[i] = block + total;
        total += (sizes[i] + 63) & ~(size_t)63;
    }
    return block;
}

void vit_keep_freed_memory(void) {
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 256 << 20);
}
