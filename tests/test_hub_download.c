/* Downloads from a Hub: tests/hub_server.py, started here on the loopback, answers as the Hugging
 * Face Hub does (the redirect to a CDN host for LFS files, X-Repo-Commit, X-Linked-Etag,
 * X-Linked-Size, 401/403 for a gated repository, 404 with X-Error-Code). Each case gets a fresh
 * cache and reads the server's request log: a cold cache (the files the model needs and no other,
 * in huggingface_hub's layout, outputs identical to the folder's), a warm one (no request),
 * @branch and @commit, a download cut off and resumed, a wrong sha256 refused and not kept,
 * offline, gated with and without a token, an unreachable endpoint with and without a cached
 * copy, shards and pytorch_model.bin fetched by their names. */
#include "tests/testutil.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "vit/io/hub.h"
#include "vit/io/hub_http.h"
#include "vit/io/model_dir.h"
#include "vit/io/weights.h"
#include "vit/vit.h"

#define COMMIT_A  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define COMMIT_B  "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
#define BERT      TEST_DATA "/bert-base-micro"
#define VED       TEST_DATA "/ved-trocr-vit"
#define OPEN_CLIP TEST_DATA "/open-clip-micro"
#define TORCH_BIN TEST_DATA "/torch-bin"
#define ST        TEST_DATA "/st-multi-micro" /* a sentence-transformers folder with a Dense */
/* one model (vit-base-micro) in each of weights.h's layouts, in its order */
#define LAYOUT_0 TEST_DATA "/vit-base-micro"
#define LAYOUT_1 TORCH_BIN "/vit-shards"
#define LAYOUT_2 TORCH_BIN "/vit-zip"
#define LAYOUT_3 TORCH_BIN "/vit-bin-shards"

static pid_t server = -1;
static char endpoint[64], log_path[4096], root[4096];
static int cache_number;

static void sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void sh(const char *fmt, ...) {
    char cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    if (system(cmd) != 0) fail_msg("failed: %s", cmd);
}

/* Folders the server serves besides tests/data's: sharded safetensors and a .bin-only repo. */
static void write_extra_repos(void) {
    sh("mkdir -p %s/sharded %s/bin && cp %s/config.json %s/sharded/ && cp %s/config.json %s/bin/",
       root, root, MICRO_A, root, MICRO_A, root);
    sh("head -c 1000 %s/model.safetensors > %s/sharded/model-00001-of-00002.safetensors", MICRO_A,
       root);
    sh("tail -c 1000 %s/model.safetensors > %s/sharded/model-00002-of-00002.safetensors", MICRO_A,
       root);
    sh("printf '{\"metadata\": {}, \"weight_map\": {\"a\": \"model-00001-of-00002.safetensors\", "
       "\"b\": \"model-00002-of-00002.safetensors\", \"c\": "
       "\"model-00001-of-00002.safetensors\"}}' "
       "> %s/sharded/model.safetensors.index.json",
       root);
    sh("head -c 3000 %s/model.safetensors > %s/bin/pytorch_model.bin", MICRO_A, root);
    /* both the safetensors and the .bin of one model: only the first is fetched */
    sh("mkdir -p %s/both && cp %s/* %s/both/ && cp %s/pytorch_model.bin %s/both/", root, LAYOUT_0,
       root, LAYOUT_2, root);
}

static void write_config(const char *path) {
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(
        f,
        "{\"repos\": {"
        "\"org/vit\": {\"refs\": {\"main\": \"%s\", \"a-branch\": \"%s\"}, "
        "\"commits\": {\"%s\": \"%s\", \"%s\": \"%s\"}},"
        "\"org/bert\": {\"refs\": {\"main\": \"%s\"}, \"commits\": {\"%s\": \"%s\"}},"
        "\"org/ved\": {\"refs\": {\"main\": \"%s\"}, \"commits\": {\"%s\": \"%s\"}},"
        "\"org/gated\": {\"refs\": {\"main\": \"%s\"}, \"commits\": {\"%s\": \"%s\"}, "
        "\"token\": \"hf_secret\"},"
        "\"org/badsha\": {\"refs\": {\"main\": \"%s\"}, \"commits\": {\"%s\": \"%s\"}, "
        "\"bad_sha256\": true},"
        "\"org/drop\": {\"refs\": {\"main\": \"%s\"}, \"commits\": {\"%s\": \"%s\"}, "
        "\"drop_after\": 50000},"
        "\"org/slow\": {\"refs\": {\"main\": \"%s\"}, \"commits\": {\"%s\": \"%s\"}, "
        "\"slow\": 1},"
        "\"org/sharded\": {\"refs\": {\"main\": \"%s\"}, \"commits\": {\"%s\": \"%s/sharded\"}},"
        "\"org/bin\": {\"refs\": {\"main\": \"%s\"}, \"commits\": {\"%s\": \"%s/bin\"}},"
        "\"org/vit-shards\": {\"refs\": {\"main\": \"%s\"}, \"commits\": {\"%s\": \"%s\"}},"
        "\"org/vit-bin-shards\": {\"refs\": {\"main\": \"%s\"}, \"commits\": {\"%s\": \"%s\"}},"
        "\"org/vit-zip\": {\"refs\": {\"main\": \"%s\"}, \"commits\": {\"%s\": \"%s\"}},"
        "\"org/badsize\": {\"refs\": {\"main\": \"%s\"}, \"commits\": {\"%s\": \"%s\"}, "
        "\"size_error\": 1},"
        "\"old/vit\": {\"moved_to\": \"org/vit\"},"
        "\"org/open-clip\": {\"refs\": {\"main\": \"%s\"}, \"commits\": {\"%s\": \"%s\"}},"
        "\"org/layout-0\": {\"refs\": {\"main\": \"%s\"}, \"commits\": {\"%s\": \"%s\"}},"
        "\"org/layout-1\": {\"refs\": {\"main\": \"%s\"}, \"commits\": {\"%s\": \"%s\"}},"
        "\"org/layout-2\": {\"refs\": {\"main\": \"%s\"}, \"commits\": {\"%s\": \"%s\"}},"
        "\"org/layout-3\": {\"refs\": {\"main\": \"%s\"}, \"commits\": {\"%s\": \"%s\"}},"
        "\"org/both\": {\"refs\": {\"main\": \"%s\"}, \"commits\": {\"%s\": \"%s/both\"}},"
        "\"org/st\": {\"refs\": {\"main\": \"%s\"}, \"commits\": {\"%s\": \"%s\"}}}}",
        COMMIT_A, COMMIT_B, COMMIT_A, MICRO_A, COMMIT_B, MICRO_B, COMMIT_A, COMMIT_A, BERT,
        COMMIT_A, COMMIT_A, VED, COMMIT_A, COMMIT_A, MICRO_A, COMMIT_A, COMMIT_A, MICRO_A, COMMIT_A,
        COMMIT_A, MICRO_A, COMMIT_A, COMMIT_A, MICRO_A, COMMIT_A, COMMIT_A, root, COMMIT_A,
        COMMIT_A, root, COMMIT_A, COMMIT_A, TORCH_BIN "/vit-shards", COMMIT_A, COMMIT_A,
        TORCH_BIN "/vit-bin-shards", COMMIT_A, COMMIT_A, TORCH_BIN "/vit-zip", COMMIT_A, COMMIT_A,
        MICRO_A, COMMIT_A, COMMIT_A, OPEN_CLIP, COMMIT_A, COMMIT_A, LAYOUT_0, COMMIT_A, COMMIT_A,
        LAYOUT_1, COMMIT_A, COMMIT_A, LAYOUT_2, COMMIT_A, COMMIT_A, LAYOUT_3, COMMIT_A, COMMIT_A,
        root, COMMIT_A, COMMIT_A, ST);
    fclose(f);
}

static int start_server(void **state) {
    (void)state;
    if (!hub_http_built()) return 0;
    snprintf(root, sizeof root, "%s/repos", test_tmpdir());
    write_extra_repos();
    char config[4200], port_file[4200];
    snprintf(config, sizeof config, "%s/hub.json", test_tmpdir());
    snprintf(port_file, sizeof port_file, "%s/port", test_tmpdir());
    snprintf(log_path, sizeof log_path, "%s/requests.log", test_tmpdir());
    write_config(config);
    if ((server = fork()) == 0) {
        execlp("python3", "python3", "tests/hub_server.py", config, port_file, log_path, NULL);
        _exit(127);
    }
    for (int i = 0; i < 200 && access(port_file, F_OK) != 0; i++)
        nanosleep(&(struct timespec){0, 50000000}, NULL);
    char *port = (char *)read_whole_file(port_file, NULL);
    if (!port) return fprintf(stderr, "tests/hub_server.py did not start\n"), -1;
    snprintf(endpoint, sizeof endpoint, "http://127.0.0.1:%s", port);
    free(port);
    setenv("HF_ENDPOINT", endpoint, 1);
    unsetenv("HF_HUB_OFFLINE");
    unsetenv("HF_TOKEN");
    return 0;
}

static int stop_server(void **state) {
    (void)state;
    if (server > 0) kill(server, SIGTERM), waitpid(server, NULL, 0);
    return 0;
}

#define REQUIRE_CURL()                                                                             \
    do {                                                                                           \
        if (!hub_http_built()) {                                                                   \
            print_message("SKIP %s: this build has no libcurl (CURL=0 or libcurl4-openssl-dev "    \
                          "missing)\n",                                                            \
                          __func__);                                                               \
            skip();                                                                                \
        }                                                                                          \
    } while (0)

/* A fresh empty cache as HF_HUB_CACHE, and the request log emptied; returns the cache. */
static const char *fresh_cache(void) {
    static char dir[4200];
    snprintf(dir, sizeof dir, "%s/cache%d", test_tmpdir(), cache_number++);
    setenv("HF_HUB_CACHE", dir, 1);
    FILE *f = fopen(log_path, "w");
    if (f) fclose(f);
    return dir;
}

/* The request log since fresh_cache (or clear_log). */
static char *requests(void) {
    char *log = (char *)read_whole_file(log_path, NULL);
    return log ? log : strdup("");
}
static int count_lines(const char *s) {
    int n = 0;
    for (; *s; s++) n += *s == '\n';
    return n;
}
static void clear_log(void) {
    FILE *f = fopen(log_path, "w");
    if (f) fclose(f);
}

static void resolve_ok(const char *ref, char *dir, size_t size) {
    vit_error err = {0};
    if (vit_resolve_model(ref, dir, size, &err) != 0) fail_msg("%s: %s", ref, err.msg);
}

static void expect_refused(const char *ref, const char *want) {
    char dir[4096];
    vit_error err = {0};
    assert_int_equal(vit_resolve_model(ref, dir, sizeof dir, &err), -1);
    if (!strstr(err.msg, want)) fail_msg("%s: '%s' does not say '%s'", ref, err.msg, want);
    assert_null(strchr(err.msg, '\n'));
}

static void expect_same_logits(const char *folder, const char *ref) {
    vit_error err = {0};
    vit_context *a = vit_load(folder, NULL, &err), *b = vit_load(ref, NULL, &err);
    if (!a || !b) fail_msg("%s: %s", ref, err.msg);
    const size_t n = vit_input_floats(a), labels = (size_t)vit_num_labels(a);
    float *pixels = test_alloc_floats(n), *la = test_alloc_floats(labels),
          *lb = test_alloc_floats(labels);
    test_seed(3);
    test_fill(pixels, n, -1, 1);
    assert_int_equal(vit_forward(a, pixels, 1, la, &err), 0);
    assert_int_equal(vit_forward(b, pixels, 1, lb, &err), 0);
    assert_memory_equal(la, lb, labels * sizeof *la);
    free(pixels), free(la), free(lb);
    vit_free(a), vit_free(b);
}

static void expect_link(const char *cache, const char *repo, const char *commit, const char *file,
                        const char *target) {
    char link[4600], got[4096];
    snprintf(link, sizeof link, "%s/models--%s/snapshots/%s/%s", cache, repo, commit, file);
    const ssize_t n = readlink(link, got, sizeof got - 1);
    if (n < 0) fail_msg("%s is not a link", link);
    got[n] = 0;
    assert_string_equal(got, target);
}

static void sha256_of(const char *path, char hex[65]) {
    vit_error err = {0};
    if (hub_sha256_file(path, hex, &err) != 0) fail_msg("%s", err.msg);
}

/* A cold cache: config.json, model.safetensors (through the CDN, no token there) and
 * preprocessor_config.json; not the folder's golden files. Then warm: no request at all. */
static void test_cold_then_warm(void **state) {
    (void)state;
    REQUIRE_CURL();
    const char *cache = fresh_cache();
    char dir[4096], want[4400], sha[65];
    resolve_ok("org/vit", dir, sizeof dir);
    snprintf(want, sizeof want, "%s/models--org--vit/snapshots/%s", cache, COMMIT_A);
    assert_string_equal(dir, want);
    char *log = requests();
    const char *needed[] = {"HEAD /org/vit/resolve/main/config.json",
                            "HEAD /org/vit/resolve/" COMMIT_A "/model.safetensors", "GET /cdn/",
                            "HEAD /org/vit/resolve/" COMMIT_A "/preprocessor_config.json"};
    for (int i = 0; i < 4; i++)
        if (!strstr(log, needed[i])) fail_msg("no '%s' in:\n%s", needed[i], log);
    if (strstr(log, "golden")) fail_msg("a file the model does not need was asked for:\n%s", log);
    assert_int_equal(count_lines(log), 6); /* 3 HEADs, 3 GETs */
    free(log);
    sha256_of(MICRO_A "/model.safetensors", sha);
    snprintf(want, sizeof want, "../../blobs/%s", sha);
    expect_link(cache, "org--vit", COMMIT_A, "model.safetensors", want);
    /* git's blob id of config.json (tests/hub_cache.sh's, checked there against git hash-object) */
    expect_link(cache, "org--vit", COMMIT_A, "config.json",
                "../../blobs/0c9af3b4843362940662bb74543ff499cd642970");
    snprintf(want, sizeof want, "%s/models--org--vit/refs/main", cache);
    char *ref = (char *)read_whole_file(want, NULL);
    assert_string_equal(ref, COMMIT_A); /* no newline, as huggingface_hub writes it */
    free(ref);
    sh("! ls %s/models--org--vit/blobs | grep -q incomplete", cache);
    clear_log();
    expect_same_logits(MICRO_A, "org/vit");
    log = requests();
    assert_string_equal(log, "");
    free(log);
}

static void test_revisions(void **state) {
    (void)state;
    REQUIRE_CURL();
    const char *cache = fresh_cache();
    expect_same_logits(MICRO_B, "org/vit@a-branch");
    char path[4400];
    snprintf(path, sizeof path, "%s/models--org--vit/refs/a-branch", cache);
    char *ref = (char *)read_whole_file(path, NULL);
    assert_string_equal(ref, COMMIT_B);
    free(ref);
    fresh_cache();
    expect_same_logits(MICRO_B, "org/vit@" COMMIT_B);
    char *log = requests();
    assert_non_null(strstr(log, "HEAD /org/vit/resolve/" COMMIT_B "/config.json"));
    free(log);
    expect_refused("org/vit@no-branch", "has no revision 'no-branch'");
    expect_refused("org/nothing", "org/nothing: no such repository on http://127.0.0.1:");
}

/* The text and image-to-text kinds bring their tokenizer and generation files; the files the
 * repository lacks are remembered in .no_exist, so the warm cache asks nothing. */
static void test_text_and_generation(void **state) {
    (void)state;
    REQUIRE_CURL();
    const char *cache = fresh_cache();
    vit_error err = {0};
    vit_text_context *a = vit_text_load(BERT, NULL, &err),
                     *b = vit_text_load("org/bert", NULL, &err);
    if (!a || !b) fail_msg("org/bert: %s", err.msg);
    const char *texts[] = {"a fine film"};
    const size_t lengths[] = {strlen(texts[0])}, n = (size_t)vit_text_num_labels(a);
    float *la = test_alloc_floats(n), *lb = test_alloc_floats(n);
    assert_int_equal(vit_text_forward(a, texts, lengths, 1, la, NULL, &err), 0);
    assert_int_equal(vit_text_forward(b, texts, lengths, 1, lb, NULL, &err), 0);
    assert_memory_equal(la, lb, n * sizeof *la);
    free(la), free(lb);
    vit_text_free(a), vit_text_free(b);
    char path[4400];
    snprintf(path, sizeof path, "%s/models--org--bert/.no_exist/%s/vocab.json", cache, COMMIT_A);
    assert_int_equal(access(path, F_OK), 0);
    clear_log();
    char dir[4096];
    resolve_ok("org/bert", dir, sizeof dir);
    char *log = requests();
    assert_string_equal(log, "");
    free(log);
    vit_gen_context *ga = vit_gen_load(VED, NULL, &err), *gb = vit_gen_load("org/ved", NULL, &err);
    if (!ga || !gb) fail_msg("org/ved: %s", err.msg);
    vit_generation x, y;
    assert_int_equal(vit_generate_file(ga, "examples/photos/cat.jpg", NULL, &x, &err), 0);
    assert_int_equal(vit_generate_file(gb, "examples/photos/cat.jpg", NULL, &y, &err), 0);
    assert_int_equal(x.num_ids, y.num_ids);
    assert_memory_equal(x.ids, y.ids, (size_t)x.num_ids * sizeof *x.ids);
    vit_generation_free(&x, 1), vit_generation_free(&y, 1);
    vit_gen_free(ga), vit_gen_free(gb);
    snprintf(path, sizeof path, "%s/models--org--ved/snapshots/%s/generation_config.json", cache,
             COMMIT_A);
    assert_int_equal(access(path, F_OK), 0);
}

/* A sentence-transformers repository brings its modules as SentenceTransformer downloads them
 * (modules.json, 1_Pooling/config.json, 2_Dense/config.json and model.safetensors,
 * sentence_bert_config.json, config_sentence_transformers.json), so org/st embeds bit for bit
 * as the folder, with its pipeline; not the goldens; the warm cache asks nothing. */
static void test_sentence_transformers(void **state) {
    (void)state;
    REQUIRE_CURL();
    const char *cache = fresh_cache();
    vit_error err = {0};
    vit_text_context *a = vit_text_load(ST, NULL, &err), *b = vit_text_load("org/st", NULL, &err);
    if (!a || !b) fail_msg("org/st: %s", err.msg);
    if (!vit_text_pipeline(b)) fail_msg("org/st loads without its modules.json pipeline");
    assert_string_equal(vit_text_pipeline(b), vit_text_pipeline(a));
    const char *texts[] = {"a fine film", "the cat sat on the mat"};
    const size_t lengths[] = {strlen(texts[0]), strlen(texts[1])};
    const int dim = vit_text_embed_size(a, VIT_POOL_SENTENCE);
    assert_int_equal(vit_text_embed_size(b, VIT_POOL_SENTENCE), dim);
    float *ea = test_alloc_floats(2 * (size_t)dim), *eb = test_alloc_floats(2 * (size_t)dim);
    assert_int_equal(vit_text_embed(a, texts, lengths, 2, VIT_POOL_SENTENCE, ea, &err), 0);
    assert_int_equal(vit_text_embed(b, texts, lengths, 2, VIT_POOL_SENTENCE, eb, &err), 0);
    assert_memory_equal(ea, eb, 2 * (size_t)dim * sizeof *ea);
    free(ea), free(eb);
    vit_text_free(a), vit_text_free(b);
    char *log = requests();
    const char *fetched[] = {"modules.json",
                             "1_Pooling/config.json",
                             "2_Dense/config.json",
                             "2_Dense/model.safetensors",
                             "sentence_bert_config.json",
                             "config_sentence_transformers.json"};
    for (size_t i = 0; i < sizeof fetched / sizeof *fetched; i++) {
        char want[256];
        snprintf(want, sizeof want, " /org/st/resolve/%s/%s range=", COMMIT_A, fetched[i]);
        if (!strstr(log, want)) fail_msg("no '%s' in:\n%s", want, log);
    }
    assert_null(strstr(log, "golden"));
    assert_null(strstr(log, "2_Dense/pytorch_model.bin")); /* the safetensors was there */
    free(log);
    char path[4400];
    snprintf(path, sizeof path, "%s/models--org--st/snapshots/%s/2_Dense/model.safetensors", cache,
             COMMIT_A);
    assert_int_equal(access(path, F_OK), 0);
    clear_log();
    char dir[4096];
    resolve_ok("org/st", dir, sizeof dir);
    log = requests();
    assert_string_equal(log, "");
    free(log);
}

/* The server drops the connection after 50,000 bytes: the rest is asked for with a Range and the
 * blob is whole. Then a .incomplete left by an earlier run is resumed from its size. */
static void test_resume(void **state) {
    (void)state;
    REQUIRE_CURL();
    fresh_cache();
    expect_same_logits(MICRO_A, "org/drop");
    char *log = requests();
    if (!strstr(log, "range=bytes=50000-")) fail_msg("no resumed request in:\n%s", log);
    free(log);
    const char *cache = fresh_cache();
    char sha[65];
    sha256_of(MICRO_A "/model.safetensors", sha);
    sh("mkdir -p %s/models--org--vit/blobs && head -c 1234 %s/model.safetensors > "
       "%s/models--org--vit/blobs/%s.incomplete",
       cache, MICRO_A, cache, sha);
    expect_same_logits(MICRO_A, "org/vit");
    log = requests();
    if (!strstr(log, "range=bytes=1234-")) fail_msg("the partial blob was not resumed:\n%s", log);
    free(log);
}

/* The server announces another sha256 than the bytes have: refused, nothing of it kept. */
static void test_wrong_sha256(void **state) {
    (void)state;
    REQUIRE_CURL();
    const char *cache = fresh_cache();
    char sha[65], want[300];
    sha256_of(MICRO_A "/model.safetensors", sha);
    snprintf(want, sizeof want,
             "org/badsha: model.safetensors: its sha256 is %s, not the %064d its ETag says "
             "(deleted)",
             sha, 0);
    expect_refused("org/badsha", want);
    sh("! ls %s/models--org--badsha/blobs | grep -q '^0000\\|incomplete'", cache);
    char link[4400];
    snprintf(link, sizeof link, "%s/models--org--badsha/snapshots/%s/model.safetensors", cache,
             COMMIT_A);
    assert_int_not_equal(access(link, F_OK), 0);
}

/* The announced size is one byte more than the bytes: refused, not kept. */
static void test_wrong_size(void **state) {
    (void)state;
    REQUIRE_CURL();
    const char *cache = fresh_cache();
    expect_refused("org/badsize",
                   "org/badsize: model.safetensors: 197788 bytes came, the server announced 197789 "
                   "(deleted)");
    sh("! ls %s/models--org--badsize/blobs | grep -q '^f314'", cache);
}

/* A renamed repository: the Hub's relative redirect is followed, and the files are cached under
 * the name asked for, as huggingface_hub caches them. */
static void test_renamed(void **state) {
    (void)state;
    REQUIRE_CURL();
    const char *cache = fresh_cache();
    expect_same_logits(MICRO_A, "old/vit");
    char path[4400];
    snprintf(path, sizeof path, "%s/models--old--vit/refs/main", cache);
    assert_int_equal(access(path, F_OK), 0);
    char *log = requests();
    assert_non_null(strstr(log, "HEAD /old/vit/resolve/main/config.json"));
    assert_non_null(strstr(log, "HEAD /org/vit/resolve/main/config.json"));
    free(log);
}

static void test_offline(void **state) {
    (void)state;
    REQUIRE_CURL();
    const char *cache = fresh_cache();
    setenv("HF_HUB_OFFLINE", "1", 1);
    char want[4400];
    snprintf(want, sizeof want,
             "org/vit is not in the cache (HF_HUB_CACHE=%s); with HF_HUB_OFFLINE=1 nothing is "
             "downloaded",
             cache);
    expect_refused("org/vit", want);
    unsetenv("HF_HUB_OFFLINE");
    char *log = requests();
    assert_string_equal(log, "");
    free(log);
}

/* 401 without a token, 403 with another; HF_TOKEN or the token file let it through, and the token
 * goes to the endpoint only, not to the CDN host. */
static void test_gated(void **state) {
    (void)state;
    REQUIRE_CURL();
    fresh_cache();
    expect_refused("org/gated", "org/gated: gated or private (HTTP 401 from http://127.0.0.1:");
    expect_refused("org/gated", "set HF_TOKEN");
    setenv("HF_TOKEN", "hf_other", 1);
    expect_refused("org/gated", "org/gated: the token (HF_TOKEN) is refused (HTTP 403, GatedRepo)");
    setenv("HF_TOKEN", "hf_secret", 1);
    expect_same_logits(MICRO_A, "org/gated");
    unsetenv("HF_TOKEN");
    char *log = requests();
    for (char *line = strtok(log, "\n"); line; line = strtok(NULL, "\n"))
        if (strstr(line, "/cdn/") && !strstr(line, "auth=-"))
            fail_msg("the token went to the CDN: %s", line);
    free(log);
    fresh_cache();
    char home[4200];
    snprintf(home, sizeof home, "%s/hf-home", test_tmpdir());
    sh("mkdir -p %s && printf 'hf_secret\\n' > %s/token", home, home);
    setenv("HF_HOME", home, 1);
    char dir[4096];
    resolve_ok("org/gated", dir, sizeof dir);
    unsetenv("HF_HOME");
}

/* An endpoint that does not answer: a complete cached copy needs none; a partial one is used as
 * it is; no copy is one line naming the endpoint. */
static void test_unreachable(void **state) {
    (void)state;
    REQUIRE_CURL();
    const char *cache = fresh_cache();
    char dir[4096];
    resolve_ok("org/vit", dir, sizeof dir);
    setenv("HF_ENDPOINT", "http://127.0.0.1:9", 1);
    expect_same_logits(MICRO_A, "org/vit");
    sh("rm %s/models--org--vit/snapshots/%s/preprocessor_config.json", cache, COMMIT_A);
    resolve_ok("org/vit", dir, sizeof dir);
    expect_refused("org/bert", "cannot reach http://127.0.0.1:9/org/bert/resolve/main/config.json");
    setenv("HF_ENDPOINT", endpoint, 1);
}

/* Shards by the index's weight_map (each once), and pytorch_model.bin when there is no
 * safetensors file; tests/data/torch-bin's sharded safetensors, sharded .bin and zip .bin
 * checkpoints give the same logits through the cache as from their folders. */
static void test_weight_files(void **state) {
    (void)state;
    REQUIRE_CURL();
    const char *cache = fresh_cache();
    char dir[4096], path[4600];
    resolve_ok("org/sharded", dir, sizeof dir);
    for (int i = 1; i <= 2; i++) {
        snprintf(path, sizeof path, "%s/model-0000%d-of-00002.safetensors", dir, i);
        assert_int_equal(access(path, R_OK), 0);
    }
    char *log = requests();
    const char *first = strstr(log, "HEAD /org/sharded/resolve/" COMMIT_A "/model-00001");
    assert_non_null(first);
    assert_null(strstr(first + 1, "HEAD /org/sharded/resolve/" COMMIT_A "/model-00001"));
    free(log);
    resolve_ok("org/bin", dir, sizeof dir);
    snprintf(path, sizeof path, "%s/pytorch_model.bin", dir);
    assert_int_equal(access(path, R_OK), 0);
    snprintf(path, sizeof path, "%s/models--org--bin/.no_exist/%s/model.safetensors", cache,
             COMMIT_A);
    assert_int_equal(access(path, F_OK), 0);
    /* real checkpoints in those layouts load from the cache as from their folders */
    expect_same_logits(TORCH_BIN "/vit-shards", "org/vit-shards");
    expect_same_logits(TORCH_BIN "/vit-bin-shards", "org/vit-bin-shards");
    expect_same_logits(TORCH_BIN "/vit-zip", "org/vit-zip");
}

/* An open_clip repository (open_clip_config.json, no config.json): a cold cache fetches its
 * config, weights and tokenizer files, config.json remembered absent (.no_exist), not the goldens;
 * a warm cache asks nothing; the features are the folder's, bit for bit. */
static void test_open_clip(void **state) {
    (void)state;
    REQUIRE_CURL();
    const char *cache = fresh_cache();
    char dir[4096], path[4600];
    resolve_ok("org/open-clip", dir, sizeof dir);
    static const char *const files[] = {"open_clip_config.json", "open_clip_model.safetensors",
                                        "vocab.json", "merges.txt", "tokenizer_config.json"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        if (access(path, R_OK) != 0) fail_msg("no %s in the snapshot", files[i]);
    }
    snprintf(path, sizeof path, "%s/golden.safetensors", dir);
    assert_int_not_equal(access(path, F_OK), 0);
    snprintf(path, sizeof path, "%s/models--org--open-clip/.no_exist/%s/config.json", cache,
             COMMIT_A);
    assert_int_equal(access(path, F_OK), 0);
    clear_log();
    resolve_ok("org/open-clip", dir, sizeof dir);
    char *log = requests();
    assert_int_equal(count_lines(log), 0);
    free(log);
    vit_error err = {0};
    vit_context *a = vit_load(OPEN_CLIP, NULL, &err), *b = vit_load("org/open-clip", NULL, &err);
    if (!a || !b) fail_msg("%s", err.msg);
    const size_t n = vit_input_floats(a);
    const int E = vit_joint_dim(a);
    float *px = test_alloc_floats(n), *x = test_alloc_floats((size_t)E),
          *y = test_alloc_floats((size_t)E);
    test_fill(px, n, -1, 1);
    assert_int_equal(vit_embed(a, px, 1, VIT_POOL_JOINT, x, &err), 0);
    assert_int_equal(vit_embed(b, px, 1, VIT_POOL_JOINT, y, &err), 0);
    assert_memory_equal(x, y, sizeof(float) * (size_t)E);
    free(px), free(x), free(y);
    vit_free(a), vit_free(b);
}

/* Every layout the loader reads (weights.h's list) is the one the download fetches: a
 * repository holding the model in that layout alone resolves to a folder whose weights are
 * found by that name and load as the safetensors folder does; one holding two layouts gets the
 * first only. */
static void test_every_layout(void **state) {
    (void)state;
    REQUIRE_CURL();
    fresh_cache();
    model want;
    vit_error err = {0};
    if (model_load(&want, LAYOUT_0, &err) != 0) fail_msg("%s", err.msg);
    int n = 0;
    for (; weights_layout(n); n++) {
        char ref[64], dir[4096];
        snprintf(ref, sizeof ref, "org/layout-%d", n);
        resolve_ok(ref, dir, sizeof dir);
        const char *name = weights_file_name(dir);
        if (!name || strcmp(name, weights_layout(n)) != 0)
            fail_msg("%s: weights found by %s, expected %s", ref, name ? name : "nothing",
                     weights_layout(n));
        model got;
        if (model_load(&got, dir, &err) != 0) fail_msg("%s: %s", ref, err.msg);
        assert_int_equal(got.num_params, want.num_params);
        assert_memory_equal(got.params, want.params, sizeof(float) * want.num_params);
        model_free(&got);
    }
    assert_int_equal(n, 4);
    model_free(&want);
    char dir[4096];
    clear_log();
    resolve_ok("org/both", dir, sizeof dir);
    assert_string_equal(weights_file_name(dir), "model.safetensors");
    char *log = requests();
    if (strstr(log, "pytorch_model.bin")) fail_msg("pytorch_model.bin fetched too:\n%s", log);
    free(log);
}

/* Two processes resolving one cold model at once (each CDN answer takes a second): the lock on
 * .locks/models--org--slow/{etag}.lock makes the second wait and find the blob there, so each
 * blob is fetched once and both get the folder. */
static void test_two_processes(void **state) {
    (void)state;
    REQUIRE_CURL();
    const char *cache = fresh_cache();
    pid_t kids[2];
    for (int i = 0; i < 2; i++)
        if ((kids[i] = fork()) == 0) {
            char dir[4096];
            vit_error err = {0};
            const int rc = vit_resolve_model("org/slow", dir, sizeof dir, &err);
            if (rc != 0) fprintf(stderr, "child %d: %s\n", i, err.msg);
            _exit(rc == 0 ? 0 : 1);
        }
    int failed = 0;
    for (int i = 0; i < 2; i++) {
        int status = -1;
        waitpid(kids[i], &status, 0);
        failed += !WIFEXITED(status) || WEXITSTATUS(status) != 0;
    }
    char *log = requests();
    if (failed) fail_msg("%d of the two processes failed; the requests:\n%s", failed, log);
    int gets = 0;
    for (const char *p = log; (p = strstr(p, "GET /cdn/")); p++) gets++;
    if (gets != 1) fail_msg("the weights were fetched %d times:\n%s", gets, log);
    free(log);
    char lock[4400];
    snprintf(lock, sizeof lock, "%s/.locks/models--org--slow", cache);
    assert_int_equal(access(lock, F_OK), 0);
    expect_same_logits(MICRO_A, "org/slow");
}

/* bin/vit: a download shows no progress bar when stderr is not a terminal. */
static void test_cli(void **state) {
    (void)state;
    REQUIRE_CURL();
    REQUIRE_BIN();
    fresh_cache();
    test_run_result r = test_run_vit(
        NULL, NULL,
        (const char *const[]){"classify", "-m", "org/vit", "examples/photos/cat.jpg", NULL});
    test_run_result folder = test_run_vit(
        NULL, NULL,
        (const char *const[]){"classify", "-m", MICRO_A, "examples/photos/cat.jpg", NULL});
    assert_int_equal(r.status, 0);
    assert_string_equal(r.out, folder.out);
    assert_string_equal(r.err, "");
    test_run_free(&r), test_run_free(&folder);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cold_then_warm),
        cmocka_unit_test(test_revisions),
        cmocka_unit_test(test_text_and_generation),
        cmocka_unit_test(test_sentence_transformers),
        cmocka_unit_test(test_resume),
        cmocka_unit_test(test_wrong_sha256),
        cmocka_unit_test(test_wrong_size),
        cmocka_unit_test(test_renamed),
        cmocka_unit_test(test_offline),
        cmocka_unit_test(test_gated),
        cmocka_unit_test(test_unreachable),
        cmocka_unit_test(test_weight_files),
        cmocka_unit_test(test_open_clip),
        cmocka_unit_test(test_every_layout),
        cmocka_unit_test(test_two_processes),
        cmocka_unit_test(test_cli),
    };
    return cmocka_run_group_tests(tests, start_server, stop_server);
}
