#ifndef VIT_BASE_ERROR_H
#define VIT_BASE_ERROR_H

/* Library code never prints or exits: it fills a vit_error and returns -1 (or NULL). The public
 * header vit.h declares the same struct (whichever comes first defines it). */
#ifndef VIT_ERROR_DEFINED
#define VIT_ERROR_DEFINED
typedef struct {
    char msg[512];
} vit_error;
#endif

/* Formats the message into err (if non-NULL) and returns -1, so callers can `return vit_fail(...)`.
 */
int vit_fail(vit_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
