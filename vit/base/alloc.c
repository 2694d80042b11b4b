#include "vit/base/alloc.h"

#include <malloc.h>
#include <stdlib.h>

float *vit_alloc_floats(size_t n) {
    /* aligned_alloc wants a multiple of the alignment (AddressSanitizer enforces it) */
    const size_t bytes = (n * sizeof(float) + 63) & ~(size_t)63;
    return aligned_alloc(64, bytes ? bytes : 64);
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
