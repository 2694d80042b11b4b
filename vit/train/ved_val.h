#ifndef VIT_TRAIN_VED_VAL_H
#define VIT_TRAIN_VED_VAL_H

/* Reading validation lines during image-to-text training (vit/train/ved_val.c). */

#include "text/text_errors.h"
#include "text/text_tokenizer.h"
#include "vit/model/decoder_model.h"

/* Greedy generation (the decoder's start and end ids, at most max_len ids) for n images whose
 * encoder states [n, S, encoder width] are given, on acts (decoder_acts_alloc for >= n rows and
 * images and max_len positions); each text decoded (special tokens skipped) and its edits against
 * refs[i] added to *sum. */
int ved_val_read(const model *dec, decoder_acts *acts, const float *states, int n, int S,
                 int max_len, const text_tokenizer *tok, char *const *refs, text_errors *sum,
                 vit_error *err);

#endif
