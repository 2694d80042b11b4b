#ifndef VIT_IO_HUB_HTTP_H
#define VIT_IO_HUB_HTTP_H

/* The Hub's HTTP side, over libcurl (an optional feature: without it every call says the build
 * has no downloads): the metadata of a file, the download of its bytes, sha256. */

#include <stddef.h>
#include <stdint.h>

#include "vit/io/hub.h"

typedef struct {
    const char *token; /* sent as Authorization: Bearer to the endpoint's host only; may be NULL */
    hub_progress_fn progress;
    void *user;
} hub_session;

/* What the Hub's first answer to /{repo}/resolve/{rev}/{file} says. */
typedef struct {
    long status;         /* the HTTP status; 0 when no answer came */
    char commit[64];     /* X-Repo-Commit */
    char etag[160];      /* X-Linked-Etag (an LFS file: its sha256), else ETag, unquoted */
    int lfs;             /* the etag came from X-Linked-Etag */
    int64_t size;        /* X-Linked-Size, else Content-Length; -1 unknown */
    char location[4096]; /* a redirect's Location, made absolute */
    int relative;        /* the Location was a path on the same host (a renamed repository) */
    char error_code[64]; /* X-Error-Code (RepoNotFound, RevisionNotFound, EntryNotFound,
                          * GatedRepo) */
} hub_meta;

/* Whether this build downloads (libcurl built in). */
int hub_http_built(void);
/* A HEAD of url without following redirects: m filled. -1 only when no answer came (err names
 * the endpoint and libcurl's reason); an HTTP error status is m->status. */
int hub_http_head(const hub_session *s, const char *url, hub_meta *m, vit_error *err);
/* url's bytes (redirects followed) appended to path from offset (a Range request when offset >
 * 0; a server that ignores it is read from the start), reporting progress of total as file.
 * -1 with err on an HTTP error status, -2 when the transfer broke off (what came is in path:
 * worth resuming). */
int hub_http_get(const hub_session *s, const char *url, const char *path, int64_t offset,
                 int64_t total, const char *file, vit_error *err);
/* The sha256 of path's bytes as 64 lowercase hex digits. */
int hub_sha256_file(const char *path, char hex[65], vit_error *err);

#endif
