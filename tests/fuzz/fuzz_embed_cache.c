/* vit search's cache of a folder's image embeddings (vit/data/embed_cache): a safetensors file
 * whose metadata holds the format, the key and the images' paths as a JSON list, beside rows,
 * sizes and mtimes. An input that reads is then checked: every path finds its own row, and the
 * cache written back and read again is the same. Seeds: tests/fuzz/make-embed-cache-seeds.sh. */
#include "tests/fuzz/fuzz_input.h"
#include "vit/data/embed_cache.h"

static int same(const embed_cache *a, const embed_cache *b) {
    if (strcmp(a->key, b->key) != 0 || a->dim != b->dim || a->count != b->count) return 0;
    for (size_t i = 0; i < a->count; i++)
        if (strcmp(a->paths[i], b->paths[i]) != 0 || a->sizes[i] != b->sizes[i] ||
            a->mtimes[i] != b->mtimes[i])
            return 0;
    return memcmp(a->rows, b->rows, sizeof(float) * a->count * (size_t)a->dim) == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    embed_cache c, back;
    vit_error err;
    if (embed_cache_read(fuzz_file(0, data, size), &c, &err) != 0) return 0;
    for (size_t i = 0; i < c.count; i++) {
        if (embed_cache_find(&c, c.paths[i], c.sizes[i], c.mtimes[i]) != (long)i) abort();
        if (embed_cache_find(&c, c.paths[i], c.sizes[i] + 1, c.mtimes[i]) != -1) abort();
    }
    if (embed_cache_find(&c, "", 0, 0) != -1) abort(); /* no path is empty */
    char path[128];
    snprintf(path, sizeof path, "%s/cache.safetensors", fuzz_dir());
    if (embed_cache_write(path, &c, &err) != 0) abort();
    if (embed_cache_read(path, &back, &err) != 0 || !same(&c, &back)) abort();
    embed_cache_free(&back);
    embed_cache_free(&c);
    return 0;
}
