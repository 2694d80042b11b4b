#include "vit/io/hub.h"

#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* huggingface_hub's validate_repo_id: [\w\-.]+ on each side of one '/', no "--" or "..", each
 * part starting and ending with a letter, digit or '_' (its \b), at most 96 characters. */
static int repo_part_ok(const char *s, size_t n) {
    if (n == 0 || s[0] == '-' || s[0] == '.' || s[n - 1] == '-' || s[n - 1] == '.') return 0;
    for (size_t i = 0; i < n; i++) {
        const unsigned char c = (unsigned char)s[i];
        if (!isalnum(c) && c != '-' && c != '_' && c != '.') return 0;
        if (i > 0 && (c == '-' || c == '.') && s[i - 1] == c) return 0;
    }
    return 1;
}

/* A branch or tag may hold '/' (refs/pr/1); no empty, "." or ".." part and nothing a shell or a
 * URL would read otherwise. */
static int revision_ok(const char *s) {
    if (!*s) return 0;
    for (const char *p = s; *p; p++) {
        const unsigned char c = (unsigned char)*p;
        if (!isalnum(c) && !strchr("-_./", c)) return 0;
    }
    for (const char *part = s; part;) {
        const char *end = strchr(part, '/');
        const size_t n = end ? (size_t)(end - part) : strlen(part);
        if (n == 0 || (n == 1 && part[0] == '.') || (n == 2 && part[0] == '.' && part[1] == '.'))
            return 0;
        part = end ? end + 1 : NULL;
    }
    return 1;
}

int hub_parse_ref(const char *ref, hub_ref *r) {
    const char *at = strchr(ref, '@');
    const size_t len = at ? (size_t)(at - ref) : strlen(ref);
    const char *slash = memchr(ref, '/', len);
    if (!slash || len > 96 || memchr(slash + 1, '/', len - (size_t)(slash - ref) - 1)) return 0;
    if (!repo_part_ok(ref, (size_t)(slash - ref)) ||
        !repo_part_ok(slash + 1, len - (size_t)(slash - ref) - 1))
        return 0;
    const char *rev = at ? at + 1 : "main";
    if (!revision_ok(rev) || strlen(rev) >= sizeof r->revision) return 0;
    snprintf(r->repo, sizeof r->repo, "%.*s", (int)len, ref);
    snprintf(r->revision, sizeof r->revision, "%s", rev);
    return 1;
}

/* An environment variable's value, "~/" expanded as os.path.expanduser does; NULL when unset or
 * empty. */
static const char *env_path(const char *name, char *buf, size_t size) {
    const char *v = getenv(name);
    if (!v || !*v) return NULL;
    const char *home = getenv("HOME");
    if (v[0] == '~' && (v[1] == '/' || !v[1]) && home)
        snprintf(buf, size, "%s%s", home, v + 1);
    else
        snprintf(buf, size, "%s", v);
    return buf;
}

void hub_home_dir(char *buf, size_t size) {
    char tmp[HUB_PATH_MAX];
    if (env_path("HF_HOME", buf, size)) return;
    if (env_path("XDG_CACHE_HOME", tmp, sizeof tmp)) {
        if ((size_t)snprintf(buf, size, "%s/huggingface", tmp) >= size) buf[0] = 0;
    } else {
        const char *home = getenv("HOME");
        snprintf(buf, size, "%s/.cache/huggingface", home && *home ? home : ".");
    }
}

void hub_cache_dir(char *buf, size_t size) {
    char home[HUB_PATH_MAX];
    if (env_path("HF_HUB_CACHE", buf, size) || env_path("HUGGINGFACE_HUB_CACHE", buf, size)) return;
    hub_home_dir(home, sizeof home);
    snprintf(buf, size, "%s/hub", home);
}

int hub_repo_dir(const hub_ref *r, char *buf, size_t size, vit_error *err) {
    char cache[HUB_PATH_MAX];
    hub_cache_dir(cache, sizeof cache);
    const char *slash = strchr(r->repo, '/');
    const int n = snprintf(buf, size, "%s/models--%.*s--%s", cache, (int)(slash - r->repo), r->repo,
                           slash + 1);
    return n >= 0 && (size_t)n < size ? 0
                                      : vit_fail(err, "%s: the cache path is too long", r->repo);
}

/* s is n lowercase hex digits. */
static int lower_hex(const char *s, size_t n) {
    size_t i = 0;
    for (; s[i]; i++)
        if (!isdigit((unsigned char)s[i]) && !(s[i] >= 'a' && s[i] <= 'f')) return 0;
    return i == n;
}

int hub_is_commit(const char *revision) {
    return lower_hex(revision, 40);
}
int hub_is_sha256(const char *etag) {
    return lower_hex(etag, 64);
}

/* The first line of a refs/ file: a commit, else -1. */
static int read_ref(const char *path, char commit[41]) {
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char line[128] = {0};
    const int ok = fgets(line, sizeof line, f) != NULL;
    fclose(f);
    line[strcspn(line, "\r\n")] = 0;
    if (!ok || !hub_is_commit(line)) return -1;
    memcpy(commit, line, 41);
    return 0;
}

int hub_cached_commit(const hub_ref *r, char commit[41], vit_error *err) {
    if (hub_is_commit(r->revision)) {
        memcpy(commit, r->revision, 41);
        return 0;
    }
    char repo[HUB_PATH_MAX], path[HUB_PATH_MAX + 300], cache[HUB_PATH_MAX];
    if (hub_repo_dir(r, repo, sizeof repo, err) != 0) return -1;
    snprintf(path, sizeof path, "%s/refs/%s", repo, r->revision);
    if (read_ref(path, commit) == 0) return 0;
    hub_cache_dir(cache, sizeof cache);
    if (access(path, F_OK) == 0)
        return vit_fail(err, "%s: %s does not hold a commit (40 hex digits)", r->repo, path);
    if (strcmp(r->revision, "main") == 0)
        return vit_fail(err, "%s is not in the cache (HF_HUB_CACHE=%s)", r->repo, cache);
    return vit_fail(err, "%s@%s is not in the cache (HF_HUB_CACHE=%s: no %s)", r->repo, r->revision,
                    cache, path);
}

/* Every symbolic link in dir leads to a file: a blob deleted behind the cache's back (or a copy
 * that lost them) is named here, not as a missing weight later. */
static int check_links(const char *dir, const char *ref, vit_error *err) {
    DIR *d = opendir(dir);
    if (!d) return vit_fail(err, "%s: cannot open %s", ref, dir);
    int rc = 0;
    for (struct dirent *e; rc == 0 && (e = readdir(d));) {
        char path[HUB_PATH_MAX + 256], target[HUB_PATH_MAX];
        if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >= sizeof path) continue;
        struct stat st;
        if (lstat(path, &st) != 0 || !S_ISLNK(st.st_mode) || stat(path, &st) == 0) continue;
        const ssize_t n = readlink(path, target, sizeof target - 1);
        target[n > 0 ? n : 0] = 0;
        rc = vit_fail(err, "%s: %s is a broken link (its blob %s is missing)", ref, path, target);
    }
    closedir(d);
    return rc;
}

int hub_check_snapshot(const char *snapshot, const char *ref, vit_error *err) {
    char config[HUB_PATH_MAX + 96];
    if (check_links(snapshot, ref, err) != 0) return -1;
    snprintf(config, sizeof config, "%s/config.json", snapshot);
    const int has_config = access(config, F_OK) == 0;
    snprintf(config, sizeof config, "%s/open_clip_config.json", snapshot); /* an open_clip repo */
    if (!has_config && access(config, F_OK) != 0)
        return vit_fail(err, "%s: the cached snapshot has no config.json (%s)", ref, snapshot);
    return 0;
}
