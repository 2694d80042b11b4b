#include "vit/base/bytes.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int byte_buf_append(byte_buf *b, const void *data, size_t n, size_t max_cap) {
    if (n == 0) return 0;
    if (b->size > max_cap || n > max_cap - b->size) return -1;
    if (b->size + n > b->cap) {
        size_t cap = b->cap ? b->cap : 64 << 10;
        while (cap < b->size + n) cap = cap > SIZE_MAX / 2 ? SIZE_MAX : cap * 2;
        if (cap > max_cap) cap = max_cap;
        char *grown = realloc(b->data, cap);
        if (!grown) return -1;
        b->data = grown;
        b->cap = cap;
    }
    memcpy(b->data + b->size, data, n);
    b->size += n;
    return 0;
}

void byte_buf_free(byte_buf *b) {
    free(b->data);
    *b = (byte_buf){0};
}
