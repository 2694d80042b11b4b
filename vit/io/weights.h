#ifndef VIT_WEIGHTS_H
#define VIT_WEIGHTS_H

/* A model folder's weights behind one reader, whatever files hold them. The folder is looked at
 * in transformers' order: model.safetensors, model.safetensors.index.json (its weight_map's
 * shards), pytorch_model.bin, pytorch_model.bin.index.json. Each file is an st_file (a .bin read
 * by torch_bin.h); a tensor is found by its name in whichever file holds it. Old checkpoints'
 * LayerNorm names (*LayerNorm.gamma, *LayerNorm.beta) are renamed *LayerNorm.weight / .bias as
 * transformers renames them on load. */

#include "vit/base/error.h"
#include "vit/io/safetensors.h"

typedef struct {
    char *path; /* the file the folder's weights were found by: messages name it */
    st_file *files;
    int nfiles;
    int count;  /* tensors over all files */
    int *first; /* per file: the index of its first tensor among all */
    int sharded, torch;
} weights;

/* dir's weights: a lone model.safetensors read whole (lazy 0) or header only (lazy 1, as
 * st_open_lazy); shards and .bin files always as st_open_lazy does, so that loading holds about
 * the weights, never the files beside them. */
int weights_open(const char *dir, int lazy, weights *w, vit_error *err);
void weights_close(weights *w);
/* Which file the folder's weights are in ("model.safetensors", ...), or NULL when it has none. */
const char *weights_file_name(const char *dir);
/* The same for an open_clip folder (open_clip_config.json): open_clip_model.safetensors, else
 * open_clip_pytorch_model.bin, as open_clip's factory prefers them. */
int weights_open_open_clip(const char *dir, int lazy, weights *w, vit_error *err);
const char *weights_file_name_open_clip(const char *dir);

const st_tensor *weights_find(const weights *w, const char *name);
/* Tensor number i (0 <= i < count), and the number of tensor t. */
const st_tensor *weights_tensor(const weights *w, int i);
int weights_index(const weights *w, const st_tensor *t);
/* The file holding t (for st_read, st_to_f32, st_release and their messages). */
st_file *weights_file(const weights *w, const st_tensor *t);
int weights_read(const weights *w, const st_tensor *t, vit_error *err);
void weights_release(const weights *w, const st_tensor *t);
int weights_to_f32(const weights *w, const st_tensor *t, float *out, vit_error *err);
/* The "format" metadata of a lone safetensors file (or its first shard) into buf, else "pt". */
void weights_format(const weights *w, char *buf, size_t size);

#endif
