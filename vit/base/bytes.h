#ifndef VIT_BASE_BYTES_H
#define VIT_BASE_BYTES_H

/* A growable run of bytes (a request body, a form part, records to gather): the capacity doubles
 * from 64 KiB, so appending n bytes in pieces costs O(n) copies and O(log n) reallocations. */

#include <stddef.h>

typedef struct {
    char *data;
    size_t size, cap;
} byte_buf;

/* Appends n bytes (data may be NULL when n is 0). The capacity never exceeds max_cap (SIZE_MAX:
 * no limit), so a body capped at a limit is not over-allocated. Returns 0, or -1 when size + n
 * is over max_cap or memory runs out (b unchanged). */
int byte_buf_append(byte_buf *b, const void *data, size_t n, size_t max_cap);
void byte_buf_free(byte_buf *b);

#endif
