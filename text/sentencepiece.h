#ifndef VIT_TEXT_SENTENCEPIECE_H
#define VIT_TEXT_SENTENCEPIECE_H

/* SentencePiece models (a spiece.model file: a serialized sentencepiece ModelProto) through
 * Debian's libsentencepiece: a C interface over its C++ SentencePieceProcessor
 * (text/sentencepiece_shim.cc), so the library's own normalisation (the model's precompiled NFKC
 * rules, its white space handling) and segmentation (unigram, BPE, byte fallback) give the ids,
 * exactly as Python's sentencepiece module, which wraps the same library, gives them. No C++
 * exception leaves these functions.
 *
 * The library is an optional part of the build (VIT_SENTENCEPIECE: built in when
 * libsentencepiece-dev is installed, left out by make SENTENCEPIECE=0). Without it spm_load and
 * spm_load_memory fail with one line saying so, and spm_library is NULL.
 *
 * A loaded model is immutable: any number of threads may encode and decode with one at once.
 * (SentencePieceProcessor's Encode and Decode are const and keep no state between calls; the
 * library's one piece of mutable state, the random generator of sampling, is thread-local, and
 * this interface never samples.) */

#include <stddef.h>
#include <stdint.h>

#include "text/tokenizer_files.h"
#include "vit/base/error.h"

typedef struct spm spm;

/* Flags of spm_load. */
enum {
    /* The model's normalizer_spec.add_dummy_prefix set false, as transformers' SiglipTokenizer
     * (and T5Tokenizer with legacy=False) load spiece.model: no "▁" is put before the text, so
     * its first word does not start with a word-start piece. */
    SPM_NO_DUMMY_PREFIX = 1,
};

/* "libsentencepiece VERSION" when this build has the library, else NULL. */
const char *spm_library(void);

/* Loads the model file at path (flags: SPM_NO_DUMMY_PREFIX or 0). Errors name the file: absent,
 * unreadable, not a SentencePiece model, or this build is without the library. */
int spm_load(const char *path, unsigned flags, spm **out, vit_error *err);
/* The same from the file's bytes data[0..size) (copied); name is what errors call it. */
int spm_load_memory(const void *data, size_t size, const char *name, unsigned flags, spm **out,
                    vit_error *err);
void spm_free(spm *m);

/* A SentencePiece tokenizer folder's files (SigLIP's and XLM-R's loaders read the same three). */
typedef struct {
    tokenizer_source model;              /* the model file (required) */
    tokenizer_source config;             /* tokenizer_config.json */
    tokenizer_source special_tokens_map; /* special_tokens_map.json */
} spm_sources;
/* dir's model_file, tokenizer_config.json and special_tokens_map.json into f (its src[0..3) in
 * spm_sources' order; tokenizer_files_free it); in a build without the library, first and
 * whatever the folder holds, the one line saying so. */
int spm_files_read(tokenizer_files *f, const char *dir, const char *model_file, vit_error *err);

/* text[0..len) (UTF-8; the library reads each invalid byte as U+FFFD) to ids, as the library's
 * Encode gives them: no start or end token. Writes the first min(count, cap) ids to ids (which may
 * be NULL when cap is 0) and returns count, the number the whole text encodes to, or -1 with err
 * (out of memory). */
int spm_encode(const spm *m, const char *text, size_t len, int32_t *ids, int cap, vit_error *err);

/* ids[0..n) back to text as the library's Decode gives it (control pieces give nothing, <unk>
 * gives the model's unk surface, byte pieces their bytes). Writes at most size - 1 bytes and a
 * NUL; returns the length the whole text needs (as snprintf), or -1 with err for an id out of
 * range. */
int spm_decode(const spm *m, const int32_t *ids, int n, char *out, size_t size, vit_error *err);

/* The piece of id (owned by m), or NULL when id is out of range. */
const char *spm_piece(const spm *m, int id);
/* The id of piece (exact match), or -1 when the vocabulary has no such piece. */
int spm_piece_id(const spm *m, const char *piece);
/* Number of pieces: ids are 0..size-1. */
int spm_vocab_size(const spm *m);
/* The model's own special ids (its trainer's unk_id, bos_id, eos_id, pad_id), -1 when it has
 * none. */
int spm_unk_id(const spm *m);
int spm_bos_id(const spm *m);
int spm_eos_id(const spm *m);
int spm_pad_id(const spm *m);

#endif
