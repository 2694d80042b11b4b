#ifndef VIT_VIT_INTERNAL_H
#define VIT_VIT_INTERNAL_H

/* Shared by vit.c and vit_text.c, the two halves of the public API. */

#include <stddef.h>

#include "vit/model/params.h"
#include "vit/vit.h"

/* Prepares m's linear layers on the backend and precision asked for (VIT_BACKEND_DEFAULT:
 * oneDNN where the build has it, else OpenBLAS), for batches of max_batch inputs of tokens
 * tokens, and describes the result in compute ("oneDNN 2.6.3 (avx2), fp32"). */
int api_prepare(model *m, vit_backend backend, vit_precision precision, int max_batch, int tokens,
                char *compute, size_t size, vit_error *err);

#endif
