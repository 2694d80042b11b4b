#ifndef VIT_BASE_ERROR_H
#define VIT_BASE_ERROR_H

/* Library code never prints or exits: it fills a vit_error (the public type, vit/vit_error.h)
 * and returns -1 (or NULL). */
#include "vit/vit_error.h"

/* Formats the message into err (if non-NULL) and returns -1, so callers can `return vit_fail(...)`.
 */
int vit_fail(vit_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
