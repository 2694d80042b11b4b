/* Model references and the Hugging Face cache, offline (HF_HUB_OFFLINE=1: nothing is ever
 * requested). The input is "REFERENCE\nREFS_MAIN\x01INDEX": the reference goes through
 * hub_parse_ref (a parsed one names one '/' repository of at most 96 characters and a revision
 * with no empty, '.' or '..' part) and then hub_resolve, as does org/model, whose cache the
 * harness keeps: refs/main holds REFS_MAIN (any bytes: a commit or not), and its snapshot
 * (config.json, model.safetensors known absent) the shard index INDEX, whose weight_map names
 * files that must be in the snapshot. Whatever the bytes, a resolved folder is inside the cache. */
#include "tests/fuzz/fuzz_input.h"
#include "vit/io/hub.h"

#define COMMIT "0123456789abcdef0123456789abcdef01234567"

static char cache[256];

static void write_at(const char *relative, const uint8_t *data, size_t size) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", cache, relative);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0) abort();
}

static void set_up(void) {
    static const char config[] =
        "{\"model_type\": \"vit\", \"architectures\": [\"ViTModel\"], \"hidden_size\": 8, "
        "\"num_hidden_layers\": 1, \"num_attention_heads\": 2, \"intermediate_size\": 16, "
        "\"image_size\": 8, \"patch_size\": 4, \"num_channels\": 3}";
    snprintf(cache, sizeof cache, "%s/hub", fuzz_dir());
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "mkdir -p %s/models--org--model/refs %s/models--org--model/snapshots/" COMMIT
             " %s/models--org--model/.no_exist/" COMMIT
             " && touch %s/models--org--model/.no_exist/" COMMIT "/model.safetensors",
             cache, cache, cache, cache);
    if (system(cmd) != 0) abort();
    write_at("models--org--model/snapshots/" COMMIT "/config.json", (const uint8_t *)config,
             sizeof config - 1);
    setenv("HF_HUB_CACHE", cache, 1);
    setenv("HF_HUB_OFFLINE", "1", 1);
}

static void check_ref(const char *ref) {
    hub_ref r;
    if (!hub_parse_ref(ref, &r)) return;
    const char *slash = strchr(r.repo, '/');
    if (!slash || strchr(slash + 1, '/') || strlen(r.repo) > 96 || !r.revision[0]) abort();
    for (const char *part = r.revision; part;) {
        const char *end = strchr(part, '/');
        const size_t n = end ? (size_t)(end - part) : strlen(part);
        if (n == 0 || (n == 1 && part[0] == '.') || (n == 2 && !strncmp(part, "..", 2))) abort();
        part = end ? end + 1 : NULL;
    }
}

static void resolve(const char *ref) {
    char dir[4096];
    vit_error err;
    hub_ref r;
    if (hub_resolve(ref, NULL, NULL, dir, sizeof dir, &err) == 0 && hub_parse_ref(ref, &r)) {
        struct stat st;
        const int folder = stat(ref, &st) == 0 && S_ISDIR(st.st_mode);
        if (!folder && strncmp(dir, cache, strlen(cache)) != 0) abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!cache[0]) set_up();
    const uint8_t *a, *rest, *refs, *index;
    size_t na, nrest, nrefs, nindex;
    fuzz_split(data, size, '\n', &a, &na, &rest, &nrest);
    fuzz_split(rest, nrest, 1, &refs, &nrefs, &index, &nindex);
    char *ref = malloc(na + 1);
    if (!ref) return 0;
    memcpy(ref, a, na);
    ref[na] = 0;
    write_at("models--org--model/refs/main", refs, nrefs);
    write_at("models--org--model/snapshots/" COMMIT "/model.safetensors.index.json", index, nindex);
    check_ref(ref);
    resolve(ref);
    resolve("org/model");
    free(ref);
    return 0;
}
