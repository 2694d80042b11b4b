#ifndef VIT_ERROR_H
#define VIT_ERROR_H

/* The library's one error type: a function that fails returns -1 (or NULL) and fills a vit_error
 * with one line naming the file and the problem. Public: installed beside vit.h, which includes
 * it; it is also the bottom of the layers (vit/base/error.h builds on it), so the library and its
 * users see one definition. */

typedef struct {
    char msg[512];
} vit_error;

#endif
