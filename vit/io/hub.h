#ifndef VIT_IO_HUB_H
#define VIT_IO_HUB_H

/* Model references: a folder, or org/name[@revision] in the Hugging Face cache, the layout
 * huggingface_hub writes (so vit and Python share one cache):
 *   CACHE/models--org--name/refs/REV          the commit REV points at (40 hex digits)
 *   CACHE/models--org--name/snapshots/COMMIT/ the files, symlinks to ../../blobs/ETAG
 *   CACHE/models--org--name/blobs/ETAG        the bytes (ETAG: an LFS file's sha256, else git's
 *                                             blob id)
 * CACHE is $HF_HUB_CACHE, else $HUGGINGFACE_HUB_CACHE (its old name), else $HF_HOME/hub, else
 * $XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub, as huggingface_hub's constants
 * say. */

#include <stddef.h>
#include <stdint.h>

#include "vit/base/error.h"

#define HUB_PATH_MAX 4096

typedef struct {
    char repo[128];     /* org/name */
    char revision[256]; /* a branch, tag or commit; "main" when the reference names none */
} hub_ref;

/* Whether ref has the shape org/name[@revision] (huggingface_hub's repo id rules: letters,
 * digits, '-', '_' and '.', no "--" or "..", neither end a '-' or '.'); fills r. */
int hub_parse_ref(const char *ref, hub_ref *r);

/* The cache folder (it need not exist) into buf. */
void hub_cache_dir(char *buf, size_t size);
/* CACHE/models--org--name into buf (-1 when it does not fit). */
int hub_repo_dir(const hub_ref *r, char *buf, size_t size, vit_error *err);

/* Whether revision is a commit (40 lowercase hex digits, as huggingface_hub's REGEX_COMMIT_HASH).
 */
int hub_is_commit(const char *revision);

/* The commit r's revision names in the cache (refs/REV, or the revision itself when it is a
 * commit) into commit[41]: 0, or -1 when the cache has no such ref (err says so, naming the
 * cache). */
int hub_cached_commit(const hub_ref *r, char commit[41], vit_error *err);

/* The folder of huggingface_hub's own files (the token): $HF_HOME, else
 * $XDG_CACHE_HOME/huggingface, else ~/.cache/huggingface. */
void hub_home_dir(char *buf, size_t size);
/* Whether etag is a sha256 (64 lowercase hex digits: an LFS file's). */
int hub_is_sha256(const char *etag);
/* A cached snapshot folder vit can read: config.json there and no broken link (a blob deleted
 * behind the cache's back), else one line naming them. */
int hub_check_snapshot(const char *snapshot, const char *ref, vit_error *err);

/* $HF_HUB_OFFLINE (or $TRANSFORMERS_OFFLINE) is 1, ON, YES or TRUE. */
int hub_offline(void);
/* $HF_ENDPOINT without a trailing '/', else https://huggingface.co. */
void hub_endpoint(char *buf, size_t size);

/* done of total bytes of file (total -1 when unknown); called as bytes arrive. */
typedef void (*hub_progress_fn)(void *user, const char *file, int64_t done, int64_t total);

/* The folder a model reference names, into dir: an existing folder as it is (a name that is also
 * a folder is the folder, as transformers reads it); else org/name[@revision]'s snapshot in the
 * cache, downloaded first unless it holds what the model needs (config.json, its weights, and the
 * files of its kind that the repository has: no request then), or offline ($HF_HUB_OFFLINE), or
 * this build has no libcurl; an unreachable endpoint falls back to what the cache has. Anything
 * else is given back unchanged (its loading then names what is missing). progress may be NULL. */
int hub_resolve(const char *ref, hub_progress_fn progress, void *user, char *dir, size_t size,
                vit_error *err);

#endif
