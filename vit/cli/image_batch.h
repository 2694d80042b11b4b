#ifndef VIT_CLI_IMAGE_BATCH_H
#define VIT_CLI_IMAGE_BATCH_H

/* Image files through vit_embed in batches (vit embed, vit search): the queued files are
 * preprocessed in parallel, the readable ones go through one forward pass, and each one's row is
 * handed to a callback in queue order. A file that cannot be read is reported on stderr as
 * "vit COMMAND: <why>" and counted, and the others go on.
 *
 *   image_batch *b = image_batch_create(ctx, "embed", 16, VIT_POOL_MEAN, dim, on_row, user);
 *   image_batch_add(b, path, tag); ...      // a forward pass each time the batch fills
 *   image_batch_flush(b);                   // the rest
 *   image_batch_failed(b);                  // files that could not be read
 *   image_batch_free(b);
 */

#include <stddef.h>

#include "vit/vit.h"

/* One image's features (dim floats), with the path and tag it was queued with; non-zero stops. */
typedef int (*image_row_fn)(void *user, const char *path, size_t tag, const float *row);

typedef struct image_batch image_batch;

/* dim: the row's length for pool (vit_hidden_size, or vit_joint_dim for VIT_POOL_JOINT). NULL
 * when out of memory. */
image_batch *image_batch_create(vit_context *ctx, const char *command, int batch, vit_pool pool,
                                int dim, image_row_fn on_row, void *user);
/* Queues one file; runs the batch when it is full. 0, or -1: out of memory or a failed forward
 * pass (reported on stderr), or a callback that returned non-zero (it says why itself). */
int image_batch_add(image_batch *b, const char *path, size_t tag);
/* Runs what is queued. 0 or -1, as image_batch_add. */
int image_batch_flush(image_batch *b);
/* The files that could not be read (each reported). */
int image_batch_failed(const image_batch *b);
void image_batch_free(image_batch *b);

#endif
