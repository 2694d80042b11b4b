#include "text/vocab.h"

#include <stdlib.h>
#include <string.h>

#include "vit/base/file.h"
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
    const char *t = v->text + v->offset[id];
    const size_t len = v->length[id];
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
    return id >= 0 && id < v->count ? v->text + v->offset[id] : NULL;
}

/* Later duplicates replace earlier ones, like assigning into Python's dict. */
static void insert(vocab *v, int id) {
    const char *s = v->text + v->offset[id];
    const size_t n = v->length[id];
    for (size_t i = token_hash(s, n, false) & v->mask;; i = (i + 1) & v->mask) {
        if (v->slots[i] < 0 || token_equals(v, v->slots[i], s, n, false)) {
            v->slots[i] = id;
            return;
        }
    }
}

/* Splits text in place into NUL-terminated lines, recording where each starts. */
static int split_lines(vocab *v, const char *path, size_t size, vit_error *err) {
    size_t bound = 1; /* every line but the last ends in \n or \r */
    for (size_t i = 0; i < size; i++) bound += v->text[i] == '\n' || v->text[i] == '\r';
    if (bound > INT32_MAX / 2 || size > UINT32_MAX)
        return vit_fail(err, "%s: vocabulary too large", path);
    v->offset = malloc(sizeof *v->offset * bound);
    v->length = malloc(sizeof *v->length * bound);
    if (!v->offset || !v->length) return vit_fail(err, "%s: out of memory", path);
    for (size_t start = 0, i = 0; start < size; start = i) {
        while (i < size && v->text[i] != '\n' && v->text[i] != '\r') i++;
        v->offset[v->count] = (uint32_t)start;
        v->length[v->count++] = (uint32_t)(i - start);
        const size_t end = i;
        if (i + 1 < size && v->text[i] == '\r' && v->text[i + 1] == '\n') i++;
        if (i < size) i++;
        v->text[end] = '\0';
    }
    if (v->count == 0) return vit_fail(err, "%s: empty vocabulary", path);
    return 0;
}

static int check_utf8(const vocab *v, const char *path, vit_error *err) {
    for (int id = 0; id < v->count; id++) {
        const uint8_t *s = (const uint8_t *)v->text + v->offset[id];
        for (size_t i = 0; i < v->length[id];) {
            if (utf8_decode(s, v->length[id], &i) < 0)
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
        if (v->length[id] > v->max_length) v->max_length = v->length[id];
    }
    return 0;
}

int vocab_load(vocab *v, const char *path, vit_error *err) {
    memset(v, 0, sizeof *v);
    size_t size;
    v->text = vit_read_file(path, 256 << 20, &size, err); /* BERT vocabularies: ~230 kB */
    if (!v->text) return -1;
    if (split_lines(v, path, size, err) != 0 || check_utf8(v, path, err) != 0 ||
        build_table(v, path, err) != 0) {
        vocab_free(v);
        return -1;
    }
    return 0;
}

void vocab_free(vocab *v) {
    free(v->text);
    free(v->offset);
    free(v->length);
    free(v->slots);
    memset(v, 0, sizeof *v);
}
