/* Model references: org/name[@revision] in a Hugging Face cache built by the test in
 * huggingface_hub's layout (tests/hub_cache.sh: blobs named by their ETag, relative snapshot
 * links, refs/main and refs/a-branch) from tests/data folders. Each reference must give outputs
 * identical (bit for bit) to the plain folder's; missing names, refs and blobs are refused in one
 * line. Offline (HF_HUB_OFFLINE=1): the cache alone (downloads: test_hub_download). */
#include "tests/testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "vit/io/hub.h"
#include "vit/vit.h"

#define COMMIT_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define COMMIT_B "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
#define BERT     TEST_DATA "/bert-base-micro"
#define VED      TEST_DATA "/ved-trocr-vit"

static char cache[4096];

static void sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void sh(const char *fmt, ...) {
    char cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    if (system(cmd) != 0) fail_msg("failed: %s", cmd);
}

/* org/vit: main at COMMIT_A (micro-a), a-branch at COMMIT_B (micro-b); org/bert, org/ved and
 * org/open-clip (open_clip_config.json, no config.json) at COMMIT_A. */
static int build_cache(void **state) {
    (void)state;
    snprintf(cache, sizeof cache, "%s/hub", test_tmpdir());
    sh("tests/hub_cache.sh %s %s org/vit %s main", MICRO_A, cache, COMMIT_A);
    sh("tests/hub_cache.sh %s %s org/vit %s a-branch", MICRO_B, cache, COMMIT_B);
    sh("tests/hub_cache.sh %s %s org/bert %s main", BERT, cache, COMMIT_A);
    sh("tests/hub_cache.sh %s %s org/ved %s main", VED, cache, COMMIT_A);
    sh("tests/hub_cache.sh %s %s org/open-clip %s main", TEST_DATA "/open-clip-micro", cache,
       COMMIT_A);
    setenv("HF_HUB_CACHE", cache, 1);
    setenv("HF_HUB_OFFLINE", "1", 1);
    return 0;
}

static void test_parse(void **state) {
    (void)state;
    hub_ref r;
    assert_true(hub_parse_ref("google/vit-base-patch16-224", &r));
    assert_string_equal(r.repo, "google/vit-base-patch16-224");
    assert_string_equal(r.revision, "main");
    assert_true(hub_parse_ref("a_b/c.d-e@refs/pr/1", &r));
    assert_string_equal(r.repo, "a_b/c.d-e");
    assert_string_equal(r.revision, "refs/pr/1");
    const char *bad[] = {"vit",    "a/b/c", "/abs/path", "a//b",     "a/-b",  "a/b.",     "a--b/c",
                         "a/b..c", "a/b@",  "a/b@..",    "a/b@x//y", "a b/c", "./models", "../x"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        if (hub_parse_ref(bad[i], &r)) fail_msg("'%s' was read as a reference", bad[i]);
    assert_true(hub_is_commit(COMMIT_A));
    assert_false(hub_is_commit("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"));
    assert_false(hub_is_commit("main"));
}

/* huggingface_hub's order: HF_HUB_CACHE, HUGGINGFACE_HUB_CACHE, HF_HOME/hub,
 * XDG_CACHE_HOME/huggingface/hub, ~/.cache/huggingface/hub (a leading ~ expanded). */
static void test_cache_dir(void **state) {
    (void)state;
    const char *vars[] = {"HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME"};
    char home[4096];
    snprintf(home, sizeof home, "%s", getenv("HOME") ? getenv("HOME") : "/");
    for (int i = 0; i < 4; i++) unsetenv(vars[i]);
    setenv("HOME", "/home/u", 1);
    char dir[4096];
    hub_cache_dir(dir, sizeof dir);
    assert_string_equal(dir, "/home/u/.cache/huggingface/hub");
    setenv("XDG_CACHE_HOME", "/xdg", 1);
    hub_cache_dir(dir, sizeof dir);
    assert_string_equal(dir, "/xdg/huggingface/hub");
    setenv("HF_HOME", "~/hf", 1);
    hub_cache_dir(dir, sizeof dir);
    assert_string_equal(dir, "/home/u/hf/hub");
    setenv("HUGGINGFACE_HUB_CACHE", "/old", 1);
    hub_cache_dir(dir, sizeof dir);
    assert_string_equal(dir, "/old");
    setenv("HF_HUB_CACHE", "/new", 1);
    hub_cache_dir(dir, sizeof dir);
    assert_string_equal(dir, "/new");
    for (int i = 0; i < 4; i++) unsetenv(vars[i]);
    setenv("HF_HUB_CACHE", cache, 1);
    setenv("HOME", home, 1);
}

static void expect_resolves(const char *ref, const char *commit) {
    char dir[4096], want[4400];
    vit_error err = {0};
    if (vit_resolve_model(ref, dir, sizeof dir, &err) != 0) fail_msg("%s: %s", ref, err.msg);
    const char *slash = strchr(ref, '/');
    const size_t org = (size_t)(slash - ref), name = strcspn(slash + 1, "@");
    snprintf(want, sizeof want, "%s/models--%.*s--%.*s/snapshots/%s", cache, (int)org, ref,
             (int)name, slash + 1, commit);
    assert_string_equal(dir, want);
}

static void test_resolve(void **state) {
    (void)state;
    expect_resolves("org/vit", COMMIT_A);
    expect_resolves("org/vit@main", COMMIT_A);
    expect_resolves("org/vit@a-branch", COMMIT_B);
    expect_resolves("org/vit@" COMMIT_B, COMMIT_B);
    /* a folder stays a folder, even when the cache has a repository of that name */
    sh("tests/hub_cache.sh %s %s tests/data %s main", MICRO_A, cache, COMMIT_A);
    char dir[4096];
    vit_error err = {0};
    assert_int_equal(vit_resolve_model("tests/data", dir, sizeof dir, &err), 0);
    assert_string_equal(dir, "tests/data");
    assert_int_equal(vit_resolve_model(MICRO_A, dir, sizeof dir, &err), 0);
    assert_string_equal(dir, MICRO_A);
}

/* The logits of the same random pixels through the folder and through the reference. */
static void expect_same_logits(const char *folder, const char *ref) {
    vit_error err = {0};
    vit_context *a = vit_load(folder, NULL, &err), *b = vit_load(ref, NULL, &err);
    if (!a || !b) fail_msg("%s: %s", ref, err.msg);
    const size_t n = vit_input_floats(a), labels = (size_t)vit_num_labels(a);
    assert_int_equal(vit_input_floats(b), n);
    assert_int_equal(vit_num_labels(b), labels);
    float *pixels = test_alloc_floats(n), *la = test_alloc_floats(labels),
          *lb = test_alloc_floats(labels);
    test_seed(7);
    test_fill(pixels, n, -1, 1);
    assert_int_equal(vit_forward(a, pixels, 1, la, &err), 0);
    assert_int_equal(vit_forward(b, pixels, 1, lb, &err), 0);
    assert_memory_equal(la, lb, labels * sizeof *la);
    free(pixels), free(la), free(lb);
    vit_free(a), vit_free(b);
}

static void test_image_model(void **state) {
    (void)state;
    expect_same_logits(MICRO_A, "org/vit");
    expect_same_logits(MICRO_B, "org/vit@a-branch");
    expect_same_logits(MICRO_B, "org/vit@" COMMIT_B);
    vit_model_kind kind;
    vit_error err = {0};
    assert_int_equal(vit_folder_kind("org/vit", &kind, &err), 0);
    assert_int_equal(kind, VIT_KIND_IMAGE);
    assert_int_equal(vit_folder_kind("org/ved", &kind, &err), 0);
    assert_int_equal(kind, VIT_KIND_IMAGE_TO_TEXT);
}

static void test_text_model(void **state) {
    (void)state;
    vit_error err = {0};
    vit_text_context *a = vit_text_load(BERT, NULL, &err),
                     *b = vit_text_load("org/bert", NULL, &err);
    if (!a || !b) fail_msg("org/bert: %s", err.msg);
    const char *texts[] = {"a fine film", "not good at all"};
    const size_t lengths[] = {strlen(texts[0]), strlen(texts[1])};
    const size_t n = 2 * (size_t)vit_text_num_labels(a);
    float *la = test_alloc_floats(n), *lb = test_alloc_floats(n);
    assert_int_equal(vit_text_forward(a, texts, lengths, 2, la, NULL, &err), 0);
    assert_int_equal(vit_text_forward(b, texts, lengths, 2, lb, NULL, &err), 0);
    assert_memory_equal(la, lb, n * sizeof *la);
    free(la), free(lb);
    vit_text_free(a), vit_text_free(b);
}

/* An open_clip snapshot (open_clip_config.json and no config.json) read from the cache as it is,
 * offline: both towers as the folder's, bit for bit. */
static void test_open_clip_model(void **state) {
    (void)state;
    vit_error err = {0};
    vit_context *a = vit_load(TEST_DATA "/open-clip-micro", NULL, &err),
                *b = vit_load("org/open-clip", NULL, &err);
    vit_text_context *ta = vit_text_load(TEST_DATA "/open-clip-micro", NULL, &err),
                     *tb = vit_text_load("org/open-clip", NULL, &err);
    if (!a || !b || !ta || !tb) fail_msg("org/open-clip: %s", err.msg);
    const int E = vit_joint_dim(a);
    const size_t n = vit_input_floats(a);
    float *px = test_alloc_floats(n), *x = test_alloc_floats((size_t)E),
          *y = test_alloc_floats((size_t)E);
    assert_int_equal(vit_preprocess_file(a, "examples/photos/cat.jpg", px, &err), 0);
    assert_int_equal(vit_embed(a, px, 1, VIT_POOL_JOINT, x, &err), 0);
    assert_int_equal(vit_preprocess_file(b, "examples/photos/cat.jpg", px, &err), 0);
    assert_int_equal(vit_embed(b, px, 1, VIT_POOL_JOINT, y, &err), 0);
    assert_memory_equal(x, y, sizeof(float) * (size_t)E);
    const char *text = "a photo of a cat";
    const size_t len = strlen(text);
    assert_int_equal(vit_text_embed(ta, &text, &len, 1, VIT_POOL_JOINT, x, &err), 0);
    assert_int_equal(vit_text_embed(tb, &text, &len, 1, VIT_POOL_JOINT, y, &err), 0);
    assert_memory_equal(x, y, sizeof(float) * (size_t)E);
    free(px), free(x), free(y);
    vit_text_free(ta), vit_text_free(tb);
    vit_free(a), vit_free(b);
}

static void test_gen_model(void **state) {
    (void)state;
    vit_error err = {0};
    vit_gen_context *a = vit_gen_load(VED, NULL, &err), *b = vit_gen_load("org/ved", NULL, &err);
    if (!a || !b) fail_msg("org/ved: %s", err.msg);
    vit_generation ga, gb;
    assert_int_equal(vit_generate_file(a, "examples/photos/cat.jpg", NULL, &ga, &err), 0);
    assert_int_equal(vit_generate_file(b, "examples/photos/cat.jpg", NULL, &gb, &err), 0);
    assert_int_equal(ga.num_ids, gb.num_ids);
    assert_memory_equal(ga.ids, gb.ids, (size_t)ga.num_ids * sizeof *ga.ids);
    assert_string_equal(ga.text, gb.text);
    vit_generation_free(&ga, 1), vit_generation_free(&gb, 1);
    vit_gen_free(a), vit_gen_free(b);
}

static void expect_refused(const char *ref, const char *want) {
    vit_error err = {0};
    char dir[4096];
    assert_int_equal(vit_resolve_model(ref, dir, sizeof dir, &err), -1);
    if (!strstr(err.msg, want)) fail_msg("%s: '%s' does not say '%s'", ref, err.msg, want);
    assert_null(strchr(err.msg, '\n'));
    assert_null(vit_load(ref, NULL, &err));
    if (!strstr(err.msg, want)) fail_msg("vit_load %s: '%s' does not say '%s'", ref, err.msg, want);
}

static void test_refusals(void **state) {
    (void)state;
    char want[4200];
    snprintf(want, sizeof want,
             "org/missing is not in the cache (HF_HUB_CACHE=%s); with HF_HUB_OFFLINE=1 nothing is "
             "downloaded",
             cache);
    expect_refused("org/missing", want);
    expect_refused("org/vit@no-branch", "org/vit@no-branch is not in the cache");
    expect_refused("org/vit@" COMMIT_B "0", "org/vit@" COMMIT_B "0 is not in the cache");
    expect_refused("org/vit@cccccccccccccccccccccccccccccccccccccccc",
                   "snapshot cccccccccccccccccccccccccccccccccccccccc is not in the cache");
    /* a blob deleted behind the cache's back: its snapshot link is broken */
    sh("tests/hub_cache.sh %s %s org/broken %s main", MICRO_A, cache, COMMIT_A);
    sh("rm %s/models--org--broken/blobs/$(sha256sum %s/model.safetensors | cut -c1-64)", cache,
       MICRO_A);
    expect_refused("org/broken", "model.safetensors is a broken link (its blob ../../blobs/");
    /* a ref file that holds no commit */
    sh("printf 'not a commit' > %s/models--org--vit/refs/bad", cache);
    expect_refused("org/vit@bad", "does not hold a commit (40 hex digits)");
    vit_error err = {0};
    char dir[16];
    assert_int_equal(vit_resolve_model("", dir, sizeof dir, &err), -1);
    assert_int_equal(vit_resolve_model("org/vit", dir, sizeof dir, &err), -1);
    assert_non_null(strstr(err.msg, "too long"));
}

/* bin/vit's -m and $VIT_MODEL take references; an unknown one is one line and exit status 1. */
static void test_cli(void **state) {
    (void)state;
    REQUIRE_BIN();
    test_run_result folder = test_run_vit(
        NULL, NULL,
        (const char *const[]){"classify", "-m", MICRO_A, "examples/photos/cat.jpg", NULL});
    test_run_result ref = test_run_vit(
        NULL, NULL,
        (const char *const[]){"classify", "-m", "org/vit", "examples/photos/cat.jpg", NULL});
    test_run_result env = test_run_vit(
        "org/vit", NULL, (const char *const[]){"classify", "examples/photos/cat.jpg", NULL});
    assert_int_equal(folder.status, 0);
    assert_int_equal(ref.status, 0);
    assert_int_equal(env.status, 0);
    assert_string_equal(folder.out, ref.out);
    assert_string_equal(folder.out, env.out);
    test_run_result missing =
        test_run_vit(NULL, NULL, (const char *const[]){"info", "-m", "org/missing", NULL});
    assert_int_equal(missing.status, 1);
    char want[4200];
    snprintf(want, sizeof want, "vit info: org/missing is not in the cache (HF_HUB_CACHE=%s)",
             cache);
    if (strncmp(missing.err, want, strlen(want)) != 0 ||
        strchr(missing.err, '\n') != missing.err + strlen(missing.err) - 1)
        fail_msg("vit info -m org/missing said '%s'", missing.err);
    test_run_result tok_folder = test_run_vit(
        NULL, NULL, (const char *const[]){"tokenize", "-m", BERT, "a fine film", NULL});
    test_run_result tok_ref = test_run_vit(
        NULL, NULL, (const char *const[]){"tokenize", "-m", "org/bert", "a fine film", NULL});
    assert_int_equal(tok_ref.status, 0);
    assert_string_equal(tok_folder.out, tok_ref.out);
    test_run_free(&tok_folder), test_run_free(&tok_ref);
    /* vit convert takes a reference as its input; vit train --init too */
    char out_ref[4200], out_folder[4200];
    snprintf(out_ref, sizeof out_ref, "%s/convert-ref", test_tmpdir());
    snprintf(out_folder, sizeof out_folder, "%s/convert-folder", test_tmpdir());
    test_run_result c1 = test_run_vit(
        NULL, NULL, (const char *const[]){"convert", "org/vit@a-branch", out_ref, NULL});
    test_run_result c2 =
        test_run_vit(NULL, NULL, (const char *const[]){"convert", MICRO_B, out_folder, NULL});
    assert_int_equal(c1.status, 0);
    assert_int_equal(c2.status, 0);
    sh("cmp %s/model.safetensors %s/model.safetensors && cmp %s/config.json %s/config.json",
       out_ref, out_folder, out_ref, out_folder);
    test_run_free(&c1), test_run_free(&c2);
    char train_out[4200];
    snprintf(train_out, sizeof train_out, "%s/train-from-ref", test_tmpdir());
    test_run_result t =
        test_run_vit(NULL, NULL,
                     (const char *const[]){"train", "--train", "examples/lines", "--init",
                                           "org/ved", "--out", train_out, "--epochs", "1",
                                           "--batch", "6", "--val-split", "0", "-t", "1", NULL});
    if (t.status != 0) fail_msg("vit train --init org/ved: exit %d: %s", t.status, t.err);
    test_run_free(&t);
    test_run_result bad =
        test_run_vit(NULL, NULL,
                     (const char *const[]){"train", "--train", "examples/lines", "--init",
                                           "org/missing", "--out", train_out, NULL});
    assert_int_equal(bad.status, 1);
    assert_non_null(strstr(bad.err, "vit train: --init: org/missing is not in the cache"));
    test_run_free(&bad);
    test_run_result info =
        test_run_vit(NULL, NULL, (const char *const[]){"info", "-m", "org/ved", NULL});
    assert_int_equal(info.status, 0);
    char line[4400];
    snprintf(line, sizeof line, "model:          org/ved (%s/models--org--ved/snapshots/%s)\n",
             cache, COMMIT_A);
    if (strncmp(info.out, line, strlen(line)) != 0)
        fail_msg("vit info -m org/ved said:\n%s", info.out);
    test_run_free(&folder), test_run_free(&ref), test_run_free(&env), test_run_free(&missing);
    test_run_free(&info);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_cache_dir),
        cmocka_unit_test(test_resolve),
        cmocka_unit_test(test_image_model),
        cmocka_unit_test(test_text_model),
        cmocka_unit_test(test_gen_model),
        cmocka_unit_test(test_open_clip_model),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_cli),
    };
    return cmocka_run_group_tests(tests, build_cache, NULL);
}
