#ifndef VIT_TRAIN_CURVES_H
#define VIT_TRAIN_CURVES_H

/* train_curves.png: the epochs of train_log.jsonl drawn as line charts, side by side: "loss"
 * (train_loss, val_loss), "top-1" (train_top1, val_top1, from 0 to 1) and, when a line has
 * val_cer or val_wer, "error rate" (from 0); the epoch across. Null values (a run without
 * validation) are missing points: their series is left out. */

#include "image/image.h"
#include "vit/base/error.h"

#define TRAIN_CURVES_WIDTH  400 /* of one panel */
#define TRAIN_CURVES_HEIGHT 300

/* The chart of the log's text (JSON lines; a line that is not a JSON object is skipped: the
 * picture shows what the log can tell). */
int train_curves_draw(const char *log_text, image_u8 *out, vit_error *err);

/* The same written to path as PNG, atomically (so it joins an open atomic_group). */
int train_curves_write(const char *log_text, const char *path, vit_error *err);

#endif
