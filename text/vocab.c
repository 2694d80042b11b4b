#include "text/vocab.h"

#include <stdlib.h>
#include <string.h>

#include "vit/base/strlist.h"
#include "text/utf8.h"

/* FNV-1a, continued from state h so that "##" + s hashes without building the string. */
static uint64_t fnv1a(uint64_t h, const char *s, size_t n) {
    for (size_t i = 0; i < n; i++) {
        h ^= (uint8_t)s[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

#define FNV_SEED 0xcbf29ce484222325ULL

static uint64_t token_hash(const char *s, size_t n, bool continuation) {
    return fnv1a(continuation ? fnv1a(FNV_SEED, "##", 2) : FNV_SEED, s, n);
}

static bool token_equals(const vocab *v, int id, const char *s, size_t n, bool continuation) {
    const char *t = v->lines.lines[id];
    const size_t len = v->lines.lengths[id];
    if (continuation) {
        if (len != n + 2 || t[0] != '#' || t[1] != '#') return false;
        t += 2;
    } else if (len != n) {
        return false;
    }
    return memcmp(t, s, n) == 0;
}

int vocab_find(const vocab *v, const char *s, size_t n, bool continuation) {
    for (size_t i = token_hash(s, n, continuation) & v->mask;; i = (i + 1) & v->mask) {
        const int32_t id = v->slots[i];
        if (id < 0) return -1;
        if (token_equals(v, id, s, n, continuation)) return id;
    }
}

const char *vocab_token(const vocab *v, int id) {
    return id >= 0 && id < v->count ? v->lines.lines[id] : NULL;
}

/* Later duplicates replace earlier ones, like assigning into Python's dict. */
static void insert(vocab *v, int id) {
    const char *s = v->lines.lines[id];
    const size_t n = v->lines.lengths[id];
    for (size_t i = token_hash(s, n, false) & v->mask;; i = (i + 1) & v->mask) {
        if (v->slots[i] < 0 || token_equals(v, v->slots[i], s, n, false)) {
            v->slots[i] = id;
            return;
        }
    }
}

static int check_utf8(const vocab *v, const char *path, vit_error *err) {
    for (int id = 0; id < v->count; id++) {
        const uint8_t *s = (const uint8_t *)v->lines.lines[id];
        const size_t n = v->lines.lengths[id];
        for (size_t i = 0; i < n;) {
            if (utf8_decode(s, n, &i) < 0)
                return vit_fail(err, "%s: line %d is not valid UTF-8", path, id + 1);
        }
    }
    return 0;
}

static int build_table(vocab *v, const char *path, vit_error *err) {
    size_t size = 1;
    while (size < 2 * (size_t)v->count) size *= 2;
    v->slots = malloc(sizeof *v->slots * size);
    if (!v->slots) return vit_fail(err, "%s: out of memory", path);
    memset(v->slots, 0xff, sizeof *v->slots * size); /* every slot -1 */
    v->mask = size - 1;
    for (int id = 0; id < v->count; id++) {
        insert(v, id);
        if (v->lines.lengths[id] > v->max_length) v->max_length = v->lines.lengths[id];
    }
    return 0;
}

/* The table over v->lines, or -1 (v freed) when the vocabulary is empty or not UTF-8. */
static int index_lines(vocab *v, const char *name, vit_error *err) {
    v->count = v->lines.count;
    int rc = v->count == 0 ? vit_fail(err, "%s: empty vocabulary", name) : 0;
    if (rc == 0 && (check_utf8(v, name, err) != 0 || build_table(v, name, err) != 0)) rc = -1;
    if (rc != 0) vocab_free(v);
    return rc;
}

int vocab_from_memory(vocab *v, const char *bytes, size_t size, const char *name, vit_error *err) {
    memset(v, 0, sizeof *v);
    if (strlist_from_memory(&v->lines, bytes, size, name, 0, err) != 0) return -1;
    return index_lines(v, name, err);
}

void vocab_free(vocab *v) {
    strlist_free(&v->lines);
    free(v->slots);
    memset(v, 0, sizeof *v);
}
