#ifndef VIT_TORCH_BIN_H
#define VIT_TORCH_BIN_H

/* pytorch_model.bin and other torch.save(state_dict) files, read without running anything: the
 * zip format of PyTorch 1.6 and later (ARCHIVE/data.pkl and ARCHIVE/data/KEY, stored
 * uncompressed) and the legacy format before it (magic number, protocol and system pickles, the
 * state dict pickle, the storage keys, then each storage's element count and bytes). The pickle
 * goes through torch_pickle.h's restricted unpickler. */

#include "vit/base/error.h"
#include "vit/io/safetensors.h"

/* path as an st_file opened as st_open_lazy opens a safetensors file: the tensor table now (names,
 * dtypes, shapes), each tensor's bytes read by st_read. A tensor that is a strided view, or whose
 * bytes overlap another's (tied weights), is copied now into a contiguous buffer of its own.
 * Every failure is one line naming path. */
int torch_bin_open(const char *path, st_file *file, vit_error *err);

#endif
