/* org/name[@revision] downloaded into the Hugging Face cache, as huggingface_hub's hf_hub_download
 * writes it: the metadata from a HEAD of {endpoint}/{repo}/resolve/{revision}/{file}
 * (X-Repo-Commit, X-Linked-Etag or ETag, X-Linked-Size), the bytes into
 * blobs/{etag}.incomplete (resumed with a Range request), an LFS file's sha256 checked against its
 * ETag, renamed to blobs/{etag}, linked from snapshots/{commit}/{file}, refs/{revision} written;
 * a file the repository does not have is remembered in .no_exist/{commit}/{file}. Only the files
 * the model needs: config.json, its weights, and per its kind the preprocessing, tokenizer and
 * generation files. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "vit/base/file.h"
#include "vit/base/json.h"
#include "vit/io/hub.h"
#include "vit/io/hub_http.h"
#include "vit/io/weights.h"
#include "vit/model/config.h"

typedef struct {
    hub_ref r;
    const char *ref;
    char repo_dir[HUB_PATH_MAX];
    char endpoint[1024];
    char token[1024];
    char commit[41]; /* once known: from refs/ or the first answer */
    hub_session s;
    int download;    /* 0: only look at what the snapshot has */
    int incomplete;  /* looking: a file the model needs is neither there nor known absent */
    int unreachable; /* downloading: the endpoint did not answer */
} fetch;

/* huggingface_hub's _is_true: 1, ON, YES or TRUE, in any case. */
static int env_true(const char *name) {
    const char *v = getenv(name);
    if (!v) return 0;
    static const char *const yes[] = {"1", "ON", "YES", "TRUE"};
    for (int i = 0; i < 4; i++)
        if (strcasecmp(v, yes[i]) == 0) return 1;
    return 0;
}

int hub_offline(void) {
    return env_true("HF_HUB_OFFLINE") || env_true("TRANSFORMERS_OFFLINE");
}

void hub_endpoint(char *buf, size_t size) {
    const char *e = getenv("HF_ENDPOINT");
    snprintf(buf, size, "%s", e && *e ? e : "https://huggingface.co");
    for (size_t n = strlen(buf); n > 0 && buf[n - 1] == '/'; n--) buf[n - 1] = 0;
}

/* $HF_TOKEN, else $HUGGING_FACE_HUB_TOKEN, else the file $HF_TOKEN_PATH or $HF_HOME/token (HF_HOME
 * defaulting to $XDG_CACHE_HOME/huggingface or ~/.cache/huggingface), white space stripped. */
static void read_token(char *buf, size_t size) {
    const char *t = getenv("HF_TOKEN");
    if (!t || !*t) t = getenv("HUGGING_FACE_HUB_TOKEN");
    buf[0] = 0;
    if (t && *t) {
        snprintf(buf, size, "%s", t);
    } else {
        char path[HUB_PATH_MAX + 16];
        const char *p = getenv("HF_TOKEN_PATH");
        if (p && *p) {
            snprintf(path, sizeof path, "%s", p);
        } else {
            hub_home_dir(path, sizeof path - 16);
            strcat(path, "/token");
        }
        FILE *f = fopen(path, "r");
        if (f) {
            if (!fgets(buf, (int)size, f)) buf[0] = 0;
            fclose(f);
        }
    }
    size_t n = strlen(buf);
    while (n > 0 && isspace((unsigned char)buf[n - 1])) buf[--n] = 0;
    const size_t lead = strspn(buf, " \t");
    memmove(buf, buf + lead, n - lead + 1);
}

/* s percent-encoded onto out (keep: the characters left as they are besides the unreserved). */
static void url_encode(const char *s, const char *keep, char *out, size_t size) {
    size_t n = strlen(out);
    for (; *s && n + 4 < size; s++) {
        const unsigned char c = (unsigned char)*s;
        if (isalnum(c) || strchr("-._~", c) || (keep && strchr(keep, c)))
            out[n++] = (char)c;
        else
            n += (size_t)snprintf(out + n, size - n, "%%%02X", c);
    }
    out[n] = 0;
}

/* {endpoint}/{repo}/resolve/{revision, '/' encoded}/{file} */
static void file_url(const fetch *f, const char *file, char *url, size_t size) {
    snprintf(url, size, "%s/%s/resolve/", f->endpoint, f->r.repo);
    url_encode(f->commit[0] ? f->commit : f->r.revision, NULL, url, size);
    strncat(url, "/", size - strlen(url) - 1);
    url_encode(file, "/", url, size);
}

/* A name a server gave (an ETag, a shard's file name) that is safe as a path inside the cache. */
static int safe_name(const char *s, int slashes) {
    if (!*s || *s == '/' || strstr(s, "..")) return 0;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && !strchr("-_.", *s) && !(slashes && *s == '/')) return 0;
    return 1;
}

/* The folders of path's parent, created as needed. */
static int make_parents(const char *path) {
    char buf[HUB_PATH_MAX + 512];
    if ((size_t)snprintf(buf, sizeof buf, "%s", path) >= sizeof buf)
        return errno = ENAMETOOLONG, -1;
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(buf, 0755) != 0 && errno != EEXIST) return -1;
        *p = '/';
    }
    return 0;
}

static void snapshot_path(const fetch *f, const char *file, char *out, size_t size) {
    snprintf(out, size, "%s/snapshots/%s%s%s", f->repo_dir, f->commit, file ? "/" : "",
             file ? file : "");
}

/* 1: the snapshot has file; 0: the repository is known not to (.no_exist); -1: not known. */
static int file_state(const fetch *f, const char *file) {
    char path[HUB_PATH_MAX + 512];
    if (!f->commit[0]) return -1;
    snapshot_path(f, file, path, sizeof path);
    if (access(path, F_OK) == 0) return 1;
    snprintf(path, sizeof path, "%s/.no_exist/%s/%s", f->repo_dir, f->commit, file);
    return access(path, F_OK) == 0 ? 0 : -1;
}

static void remember_absent(const fetch *f, const char *file) {
    char path[HUB_PATH_MAX + 512];
    snprintf(path, sizeof path, "%s/.no_exist/%s/%s", f->repo_dir, f->commit, file);
    FILE *out = make_parents(path) == 0 ? fopen(path, "w") : NULL;
    if (out) fclose(out);
}

/* path holding data, written beside it under this process's own name and renamed into place:
 * two processes may write one ref at once (write_file_atomic's one temporary name would clash). */
static int write_shared_file(const char *path, const char *data, size_t size, vit_error *err) {
    char temp[HUB_PATH_MAX + 340];
    snprintf(temp, sizeof temp, "%s.%ld.tmp", path, (long)getpid());
    FILE *out = fopen(temp, "wb");
    const int ok = out && fwrite(data, 1, size, out) == size;
    if ((out && fclose(out) != 0) || !ok || rename(temp, path) != 0) {
        vit_fail(err, "%s: %s", path, strerror(errno));
        unlink(temp);
        return -1;
    }
    return 0;
}

/* The commit the first answer named, and refs/{revision} pointing at it. */
static int take_commit(fetch *f, const char *commit, vit_error *err) {
    if (f->commit[0]) return 0;
    if (!hub_is_commit(commit))
        return vit_fail(err, "%s: %s does not answer as the Hub does (X-Repo-Commit '%s')", f->ref,
                        f->endpoint, commit);
    memcpy(f->commit, commit, 41);
    if (hub_is_commit(f->r.revision)) return 0;
    char path[HUB_PATH_MAX + 300];
    snprintf(path, sizeof path, "%s/refs/%s", f->repo_dir, f->r.revision);
    if (make_parents(path) != 0) return vit_fail(err, "%s: %s", path, strerror(errno));
    return write_shared_file(path, commit, 40, err);
}

/* The HTTP status of a HEAD as one line: gated, missing repository, revision or file. */
static int http_refusal(const fetch *f, const char *file, const hub_meta *m, vit_error *err) {
    if (m->status == 401 || m->status == 403) {
        if (f->token[0])
            return vit_fail(err,
                            "%s: the token (HF_TOKEN) is refused (HTTP %ld%s%s): gated or "
                            "private, and this token has no access to it",
                            f->ref, m->status, m->error_code[0] ? ", " : "", m->error_code);
        return vit_fail(err, "%s: gated or private (HTTP %ld from %s): set HF_TOKEN", f->ref,
                        m->status, f->endpoint);
    }
    if (m->status == 404 && strcmp(m->error_code, "RepoNotFound") == 0)
        return vit_fail(err, "%s: no such repository on %s (a private one needs HF_TOKEN)", f->ref,
                        f->endpoint);
    if (m->status == 404 && strcmp(m->error_code, "RevisionNotFound") == 0)
        return vit_fail(err, "%s: %s has no revision '%s'", f->ref, f->endpoint, f->r.revision);
    if (m->status == 404)
        return vit_fail(err, "%s: the repository has no %s (HTTP 404 from %s)", f->ref, file,
                        f->endpoint);
    return vit_fail(err, "%s: %s: HTTP %ld from %s", f->ref, file, m->status, f->endpoint);
}

/* The HEAD of file's URL, following redirects within the endpoint (a renamed repository). */
static int head(fetch *f, const char *file, hub_meta *m, char *url, size_t size, vit_error *err) {
    file_url(f, file, url, size);
    for (int hops = 0;; hops++) {
        if (hub_http_head(&f->s, url, m, err) != 0) return f->unreachable = 1, -1;
        if (!m->relative || m->status < 300 || m->status >= 400 || hops == 5) return 0;
        snprintf(url, size, "%s", m->location);
    }
}

static int64_t file_size(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? (int64_t)st.st_size : -1;
}

/* blobs/{etag}.incomplete until whole: resumed from what an earlier attempt (or run) left, up
 * to 5 attempts. */
static int fetch_bytes(fetch *f, const char *url, const char *part, const char *file, int64_t total,
                       vit_error *err) {
    /* the token is for the endpoint: not for the CDN a large file is redirected to */
    const size_t n = strlen(f->endpoint);
    hub_session s = f->s;
    if (strncmp(url, f->endpoint, n) != 0 || (url[n] != '/' && url[n] != 0)) s.token = NULL;
    for (int attempt = 0;; attempt++) {
        int64_t offset = file_size(part);
        if (offset < 0) offset = 0;
        if (total >= 0 && offset > total) unlink(part), offset = 0;
        if (total >= 0 && offset == total) return 0; /* whole: check_blob checks it */
        const int rc = hub_http_get(&s, url, part, offset, total, file, err);
        if (rc != -2 || attempt == 4) return rc == 0 ? 0 : -1; /* err says why */
        /* a broken transfer: again from where it stopped, after 0.2, 0.4, ... s */
        nanosleep(&(struct timespec){0, 200000000L * (attempt + 1)}, NULL);
    }
}

/* The bytes are the ones announced: the size, and an LFS file's sha256 (its ETag). */
static int check_blob(const fetch *f, const char *part, const char *file, const hub_meta *m,
                      vit_error *err) {
    const int64_t got = file_size(part);
    if (m->size >= 0 && got != m->size) {
        unlink(part);
        return vit_fail(err, "%s: %s: %lld bytes came, the server announced %lld (deleted)", f->ref,
                        file, (long long)got, (long long)m->size);
    }
    char sha[65];
    if (!m->lfs || !hub_is_sha256(m->etag)) return 0;
    if (hub_sha256_file(part, sha, err) != 0) return -1;
    if (strcmp(sha, m->etag) == 0) return 0;
    unlink(part);
    return vit_fail(err, "%s: %s: its sha256 is %s, not the %s its ETag says (deleted)", f->ref,
                    file, sha, m->etag);
}

/* snapshots/{commit}/{file} -> ../../blobs/{etag} (one more ../ per folder in file). */
static int link_blob(const fetch *f, const char *file, const char *etag, vit_error *err) {
    char link[HUB_PATH_MAX + 512], target[HUB_PATH_MAX];
    snapshot_path(f, file, link, sizeof link);
    size_t n = 0;
    target[0] = 0;
    for (const char *p = file; *p; p++)
        if (*p == '/') n += (size_t)snprintf(target + n, sizeof target - n, "../");
    snprintf(target + n, sizeof target - n, "../../blobs/%s", etag);
    /* made beside it and renamed over it: another process may be linking the same file */
    char temp[HUB_PATH_MAX + 560];
    snprintf(temp, sizeof temp, "%s.%ld.link", link, (long)getpid());
    unlink(temp);
    if (make_parents(link) != 0 || symlink(target, temp) != 0 || rename(temp, link) != 0) {
        vit_fail(err, "%s: %s", link, strerror(errno));
        unlink(temp);
        return -1;
    }
    return 0;
}

/* CACHE/.locks/models--org--name/{etag}.lock held (flock, the lock huggingface_hub's filelock
 * takes there too): two processes, vit's or Python's, never write one blob at once. The open
 * descriptor; closing it lets go. */
static int lock_blob(const fetch *f, const char *etag, vit_error *err) {
    char cache[HUB_PATH_MAX], path[HUB_PATH_MAX + 512];
    hub_cache_dir(cache, sizeof cache);
    const int n = snprintf(path, sizeof path, "%s/.locks/%s/%s.lock", cache,
                           strrchr(f->repo_dir, '/') + 1, etag);
    const int fd = n > 0 && (size_t)n < sizeof path && make_parents(path) == 0
                       ? open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644)
                       : -1;
    if (fd < 0) return vit_fail(err, "%s: %s", path, strerror(errno));
    if (flock(fd, LOCK_EX) != 0) {
        close(fd);
        return vit_fail(err, "%s: %s", path, strerror(errno));
    }
    return fd;
}

/* blobs/{etag}, unless there already (another revision's file, or another process's download
 * finished while this one waited for the lock). */
static int fetch_blob(fetch *f, const char *file, const hub_meta *m, const char *url,
                      vit_error *err) {
    char blob[HUB_PATH_MAX + 256], part[HUB_PATH_MAX + 300];
    snprintf(blob, sizeof blob, "%s/blobs/%s", f->repo_dir, m->etag);
    snprintf(part, sizeof part, "%s.incomplete", blob);
    if (access(blob, F_OK) == 0) return 0;
    if (make_parents(blob) != 0) return vit_fail(err, "%s: %s", blob, strerror(errno));
    const int lock = lock_blob(f, m->etag, err);
    if (lock < 0) return -1;
    int rc = 0;
    if (access(blob, F_OK) != 0) {
        rc = fetch_bytes(f, url, part, file, m->size, err) != 0 ||
                     check_blob(f, part, file, m, err) != 0
                 ? -1
                 : 0;
        if (rc == 0 && rename(part, blob) != 0) rc = vit_fail(err, "%s: %s", blob, strerror(errno));
    }
    close(lock);
    return rc;
}

/* One file into the cache: 1, or 0 when the repository does not have it (and !required). */
static int fetch_file(fetch *f, const char *file, int required, vit_error *err) {
    hub_meta m;
    char url[8192];
    if (head(f, file, &m, url, sizeof url, err) != 0) return -1;
    if (m.status == 404 && !required && strcmp(m.error_code, "RepoNotFound") != 0 &&
        strcmp(m.error_code, "RevisionNotFound") != 0 && f->commit[0]) {
        remember_absent(f, file);
        return 0;
    }
    /* the first file of a cold cache (config.json, which an open_clip repo lacks): absent, the
     * commit not known yet, so remembered by the caller once it is */
    if (m.status == 404 && !required && strcmp(m.error_code, "EntryNotFound") == 0) return 0;
    if (m.status >= 400) return http_refusal(f, file, &m, err);
    if (take_commit(f, m.commit, err) != 0) return -1;
    if (!safe_name(m.etag, 0))
        return vit_fail(err, "%s: %s: the server's ETag '%s' cannot name a blob", f->ref, file,
                        m.etag);
    const char *from = m.status >= 300 && m.status < 400 ? m.location : url;
    if (fetch_blob(f, file, &m, from, err) != 0) return -1;
    return link_blob(f, file, m.etag, err) == 0 ? 1 : -1;
}

/* 1: the snapshot has file (fetched if it had to be); 0: it is not one the repository has, or
 * (only looking) not one the snapshot has. */
static int need(fetch *f, const char *file, int required, vit_error *err) {
    const int state = file_state(f, file);
    if (state == 1) return 1;
    if (state == 0 && !required) return 0;
    if (!f->download) return f->incomplete = 1, 0;
    return fetch_file(f, file, required, err);
}

/* The shards an index's weight_map names, each once. */
static int need_shards(fetch *f, const char *index, vit_error *err) {
    char path[HUB_PATH_MAX + 512];
    snapshot_path(f, index, path, sizeof path);
    cJSON *root = json_load_object(path, err);
    if (!root) return -1;
    const cJSON *map = cJSON_GetObjectItemCaseSensitive(root, "weight_map");
    int rc = cJSON_IsObject(map) ? 0 : vit_fail(err, "%s: no weight_map object", path);
    for (const cJSON *e = map ? map->child : NULL; rc == 0 && e; e = e->next) {
        if (!cJSON_IsString(e) || !safe_name(e->valuestring, 1)) {
            rc = vit_fail(err, "%s: weight_map's %s is not a file name", path, e->string);
        } else {
            int seen = 0;
            for (const cJSON *p = map->child; p != e && !seen; p = p->next)
                seen = cJSON_IsString(p) && strcmp(p->valuestring, e->valuestring) == 0;
            if (!seen && need(f, e->valuestring, 1, err) < 0) rc = -1;
        }
    }
    cJSON_Delete(root);
    return rc;
}

/* An open_clip repository's weights, in open_clip's order (weights.h's list). */
static int need_open_clip_weights(fetch *f, vit_error *err) {
    for (int i = 0; weights_open_clip_layout(i); i++) {
        const int rc = need(f, weights_open_clip_layout(i), 0, err);
        if (rc != 0 || f->incomplete) return rc < 0 ? -1 : 0;
    }
    return vit_fail(err,
                    "%s: the repository has no open_clip weights (open_clip_model.safetensors or "
                    "open_clip_pytorch_model.bin)",
                    f->ref);
}

/* The first of the weight files the loader looks for (weights.h's list: safetensors, its
 * shards, pytorch_model.bin, its shards) that the repository has. */
static int need_weights(fetch *f, vit_error *err) {
    for (int i = 0; weights_layout(i); i++) {
        const char *name = weights_layout(i);
        const int rc = need(f, name, 0, err);
        if (rc < 0) return -1;
        if (rc == 1) return weights_is_index(name) ? need_shards(f, name, err) : 0;
        if (f->incomplete) return 0;
    }
    return vit_fail(err,
                    "%s: the repository has no weights (model.safetensors, "
                    "pytorch_model.bin or their shards' index)",
                    f->ref);
}

/* config.json, or an open_clip repository's open_clip_config.json (config.json then
 * remembered absent): 1, or 0 when not looked for yet (the download does). */
static int need_config(fetch *f, vit_error *err) {
    const int rc = need(f, "config.json", 0, err);
    if (rc != 0 || f->incomplete) return rc;
    const int oc = need(f, OPEN_CLIP_CONFIG, 0, err);
    if (oc < 0 || f->incomplete) return oc;
    if (oc == 0)
        return vit_fail(err, "%s: the repository has no config.json (nor open_clip_config.json)",
                        f->ref);
    remember_absent(f, "config.json"); /* the commit is known now */
    return 1;
}

/* A sentence-transformers repository's own files, which SentenceTransformer downloads beside the
 * Transformer's: modules.json, sentence_bert_config.json, config_sentence_transformers.json and
 * each module's folder after the Transformer (its config.json; a Dense's weights,
 * model.safetensors else pytorch_model.bin; a Normalize has none). Nothing without modules.json;
 * what the files say is the loader's to check. */
static int need_st_files(fetch *f, vit_error *err) {
    int rc = need(f, "modules.json", 0, err);
    if (rc <= 0 || f->incomplete) return rc < 0 ? -1 : 0;
    if (need(f, "sentence_bert_config.json", 0, err) < 0 ||
        need(f, "config_sentence_transformers.json", 0, err) < 0)
        return -1;
    char path[HUB_PATH_MAX + 512];
    snapshot_path(f, "modules.json", path, sizeof path);
    size_t size;
    char *text = vit_read_file(path, 1 << 20, &size, err);
    if (!text) return -1;
    cJSON *list = cJSON_ParseWithOpts(text, NULL, 1);
    free(text);
    rc = 0;
    for (int i = 1; rc == 0 && i < cJSON_GetArraySize(list); i++) {
        const cJSON *m = cJSON_GetArrayItem(list, i);
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(m, "type"),
                    *sub = cJSON_GetObjectItemCaseSensitive(m, "path");
        if (!cJSON_IsString(type) || !cJSON_IsString(sub) || !sub->valuestring[0] ||
            strstr(type->valuestring, "Normalize"))
            continue;
        if (!safe_name(sub->valuestring, 1) || strlen(sub->valuestring) > 200) {
            rc = vit_fail(err, "%s: module %d's path '%.200s' is not a folder of the repository",
                          path, i, sub->valuestring);
            break;
        }
        char file[256];
        snprintf(file, sizeof file, "%s/config.json", sub->valuestring);
        if (need(f, file, 0, err) < 0) rc = -1;
        if (rc != 0 || !strstr(type->valuestring, "Dense")) continue;
        snprintf(file, sizeof file, "%s/model.safetensors", sub->valuestring);
        const int weights = need(f, file, 0, err);
        snprintf(file, sizeof file, "%s/pytorch_model.bin", sub->valuestring);
        if (weights < 0 || (weights == 0 && !f->incomplete && need(f, file, 0, err) < 0)) rc = -1;
    }
    cJSON_Delete(list);
    return rc;
}

/* config.json, the weights, and the files of the model's kind (optional each). */
static int need_model(fetch *f, vit_error *err) {
    static const char *const image[] = {"preprocessor_config.json"};
    static const char *const text[] = {"tokenizer_config.json",
                                       "special_tokens_map.json",
                                       "tokenizer.json",
                                       "vocab.txt",
                                       "vocab.json",
                                       "merges.txt",
                                       "spiece.model",
                                       "sentencepiece.bpe.model",
                                       "added_tokens.json"};
    int rc = need_config(f, err);
    if (rc <= 0) return rc;
    char dir[HUB_PATH_MAX + 64];
    snapshot_path(f, NULL, dir, sizeof dir);
    model_config cfg;
    if (model_config_load(dir, &cfg, err) != 0) return -1;
    const int ved = cfg.family == FAMILY_VED, joint = config_is_joint(&cfg);
    const int images = ved || joint || cfg.kind == MODEL_VIT;
    const int texts = ved || joint || cfg.kind == MODEL_TEXT, open_clip = cfg.open_clip;
    model_config_free(&cfg);
    if ((open_clip ? need_open_clip_weights : need_weights)(f, err) != 0) return -1;
    for (size_t i = 0; images && i < sizeof image / sizeof *image; i++)
        if (need(f, image[i], 0, err) < 0) return -1;
    for (size_t i = 0; texts && i < sizeof text / sizeof *text; i++)
        if (need(f, text[i], 0, err) < 0) return -1;
    if (texts && !ved && !joint && need_st_files(f, err) != 0) return -1;
    return ved && need(f, "generation_config.json", 0, err) < 0 ? -1 : 0;
}

/* The snapshot as the cache has it: its links whole and its config.json there. */
static int give_snapshot(const fetch *f, char *dir, size_t size, vit_error *err) {
    char snapshot[HUB_PATH_MAX + 64];
    snapshot_path(f, NULL, snapshot, sizeof snapshot);
    if (hub_check_snapshot(snapshot, f->ref, err) != 0) return -1;
    if ((size_t)snprintf(dir, size, "%s", snapshot) >= size)
        return vit_fail(err, "%s: the cache path %s is too long", f->ref, snapshot);
    return 0;
}

/* Why a cached commit is not enough to go on without the endpoint. */
static void snapshot_missing(const fetch *f, vit_error *why) {
    char snapshot[HUB_PATH_MAX + 64];
    snapshot_path(f, NULL, snapshot, sizeof snapshot);
    struct stat st;
    if (stat(snapshot, &st) != 0)
        vit_fail(why, "%s: snapshot %s is not in the cache (no %s)", f->ref, f->commit, snapshot);
    else
        vit_fail(why, "%s: the cached snapshot has no config.json (%s)", f->ref, snapshot);
}

int hub_resolve(const char *ref, hub_progress_fn progress, void *user, char *dir, size_t size,
                vit_error *err) {
    struct stat st;
    fetch f = {.ref = ref, .s = {.progress = progress, .user = user}};
    if ((stat(ref, &st) == 0 && S_ISDIR(st.st_mode)) || !hub_parse_ref(ref, &f.r)) {
        snprintf(dir, size, "%s", ref);
        return 0;
    }
    if (hub_repo_dir(&f.r, f.repo_dir, sizeof f.repo_dir, err) != 0) return -1;
    vit_error why = {0};
    const int cached = hub_cached_commit(&f.r, f.commit, &why) == 0;
    if (cached && need_model(&f, err) != 0) return -1; /* the cached config.json is refused */
    if (cached && !f.incomplete) return give_snapshot(&f, dir, size, err);
    const int has_config =
        cached && (file_state(&f, "config.json") == 1 || file_state(&f, OPEN_CLIP_CONFIG) == 1);
    if (cached && !has_config) snapshot_missing(&f, &why);
    if (hub_offline() || !hub_http_built()) {
        if (has_config) return give_snapshot(&f, dir, size, err); /* what it has, as it is */
        return vit_fail(err, "%s; %s", why.msg[0] ? why.msg : "not in the cache",
                        hub_offline() ? "with HF_HUB_OFFLINE=1 nothing is downloaded"
                                      : "this vit is built without libcurl: nothing is downloaded");
    }
    hub_endpoint(f.endpoint, sizeof f.endpoint);
    read_token(f.token, sizeof f.token);
    f.s.token = f.token;
    f.download = 1, f.incomplete = 0;
    if (need_model(&f, err) != 0)
        return f.unreachable && has_config ? give_snapshot(&f, dir, size, err) : -1;
    return give_snapshot(&f, dir, size, err);
}
