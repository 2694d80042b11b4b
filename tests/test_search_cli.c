/* `vit search` end to end on tests/data/clip-micro: the ranking is the order of the dot products
 * of `vit embed`'s rows (images and --text), and the cache of the folder's embeddings: a second
 * run encodes nothing (and really reads the cache: an image damaged in place with its size and
 * time kept is still ranked by its old row), a touched, added or removed image is the only change,
 * a different model never reads another's cache, a damaged cache is a warning and is rebuilt, an
 * unwritable one is a warning; an unreadable image among good ones is reported and the others are
 * ranked. Runs the binary named by $VIT_BIN (set by `make test`). */
#include "tests/testutil.h"

#include <cjson/cJSON.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CLIP      "tests/data/clip-micro"
#define CLIP_GELU "tests/data/clip-micro-gelu"
#define IMAGES    12
#define QUERIES   3

static const char *const queries[QUERIES] = {"a photo of a cat", "a red rocket",
                                             "a cup of coffee on a table"};

static const char *tmp(const char *name) {
    static char paths[16][4200];
    static int next;
    char *p = paths[next++ % 16];
    snprintf(p, sizeof paths[0], "%s/%s", test_tmpdir(), name);
    return p;
}

static void copy_file(const char *from, const char *to) {
    size_t n;
    uint8_t *data = read_whole_file(from, &n);
    assert_non_null(data);
    FILE *f = fopen(to, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, n, f), n);
    fclose(f);
    free(data);
}

/* A fresh folder `name` of IMAGES images, nested: name/ and name/sub/ (and hidden entries and a
 * text file, which are not images). */
static const char *make_folder(const char *name) {
    static const char *const files[IMAGES] = {
        "examples/photos/cat.jpg",
        "examples/photos/coffee.jpg",
        "tests/data/golden-images/444_q95_128x96.jpg",
        "tests/data/golden-images/gray_100x60.png",
        "tests/data/golden-images/palette_120x90.png",
        "tests/data/golden-images/rgb_17x23.png",
        "tests/data/golden-images/rgb_64x48.png",
        "tests/data/golden-images/rgba_80x80.png",
        "tests/data/golden-images/tall_40x400.jpg",
        "tests/data/golden-images/wide_500x37.png",
        "tests/data/golden-images/progressive_200x150.jpg",
        "tests/data/golden-images/gray_alpha_50x50.png",
    };
    char dir[4200], path[4400];
    snprintf(dir, sizeof dir, "%s", tmp(name));
    assert_int_equal(mkdir(dir, 0755), 0);
    snprintf(path, sizeof path, "%s/sub", dir);
    assert_int_equal(mkdir(path, 0755), 0);
    for (int i = 0; i < IMAGES; i++) {
        snprintf(path, sizeof path, "%s/%s%s", dir, i % 3 == 2 ? "sub/" : "",
                 strrchr(files[i], '/') + 1);
        copy_file(files[i], path);
    }
    snprintf(path, sizeof path, "%s/.hidden.png", dir);
    copy_file(files[3], path);
    snprintf(path, sizeof path, "%s/notes.txt", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("not an image\n", f);
    fclose(f);
    return tmp(name);
}

/* `vit search ARGS...` (NULL-terminated, at most 24). */
static test_run_result search(const char *const *args) {
    const char *argv[32] = {"search"};
    int n = 1;
    while (*args) argv[n++] = *args++;
    argv[n] = NULL;
    return test_run_vit(NULL, NULL, argv);
}

typedef struct {
    char file[4200];
    double score;
} result;

/* The results of --json output: query q's, in rank order, into r; their number. */
static int json_results(const char *out, int q, result *r, int max) {
    const char *line = out;
    for (int i = 0; i < q; i++) {
        line = strchr(line, '\n');
        assert_non_null(line);
        line++;
    }
    cJSON *o = cJSON_ParseWithLength(line, strcspn(line, "\n"));
    if (!o) fail_msg("not JSON: %s", line);
    assert_string_equal(cJSON_GetObjectItem(o, "query")->valuestring, queries[q]);
    const cJSON *list = cJSON_GetObjectItem(o, "results");
    const int n = cJSON_GetArraySize(list);
    assert_true(n <= max);
    for (int i = 0; i < n; i++) {
        const cJSON *item = cJSON_GetArrayItem(list, i);
        assert_int_equal(cJSON_GetObjectItem(item, "rank")->valueint, i + 1);
        snprintf(r[i].file, sizeof r[i].file, "%s", cJSON_GetObjectItem(item, "file")->valuestring);
        r[i].score = cJSON_GetObjectItem(item, "score")->valuedouble;
    }
    cJSON_Delete(o);
    return n;
}

/* The counts of --verbose's line: images, encoded, from the cache, dropped from it. */
typedef struct {
    int images, encoded, cached, dropped;
} counts;

static counts verbose_counts(const char *err) {
    const char *line = strstr(err, " images: ");
    if (!line) fail_msg("no counts in: %s", err);
    while (line > err && line[-1] != ' ') line--;
    counts c = {0};
    if (sscanf(line, "%d images: %d encoded, %d from the cache", &c.images, &c.encoded,
               &c.cached) != 3)
        fail_msg("counts: %s", line);
    const char *dropped = strstr(line, " from the cache, ");
    if (dropped && strstr(dropped, "dropped")) c.dropped = atoi(dropped + 17);
    return c;
}

static void expect_counts(const test_run_result *r, int images, int encoded, int cached,
                          int dropped) {
    const counts c = verbose_counts(r->err);
    if (c.images != images || c.encoded != encoded || c.cached != cached || c.dropped != dropped)
        fail_msg("expected %d images: %d encoded, %d from the cache, %d dropped; got: %s", images,
                 encoded, cached, dropped, r->err);
}

/* A run of the three queries over folder with --json -k 0 -v and --cache cache (NULL: the
 * default); exit status 0 unless told. */
static test_run_result run_json(const char *model, const char *folder, const char *cache) {
    const char *args[16] = {"-m", model, "--json", "-k", "0", "-v"};
    int n = 6;
    if (cache) args[n++] = "--cache", args[n++] = cache;
    for (int q = 0; q < QUERIES; q++) args[n++] = queries[q];
    args[n++] = folder;
    args[n] = NULL;
    return search(args);
}

/* Two runs' results are the same files in the same order, scores within tol. */
static void expect_same_results(const char *a, const char *b, double tol) {
    for (int q = 0; q < QUERIES; q++) {
        result ra[IMAGES + 2], rb[IMAGES + 2];
        const int na = json_results(a, q, ra, IMAGES + 2), nb = json_results(b, q, rb, IMAGES + 2);
        assert_int_equal(na, nb);
        for (int i = 0; i < na; i++) {
            assert_string_equal(ra[i].file, rb[i].file);
            assert_float_equal(ra[i].score, rb[i].score, tol);
        }
    }
}

/* `vit embed` of args (images, or --text ...) to a safetensors file: its rows, *n of them. */
static float *embed_rows(const char *const *args, const char *out, char **names, size_t *n,
                         int dim) {
    const char *argv[16] = {"embed", "-m", CLIP, "-o", out};
    int k = 5;
    while (*args) argv[k++] = *args++;
    argv[k] = NULL;
    test_run_result r = test_run_vit(NULL, NULL, argv);
    if (r.status != 0) fail_msg("vit embed: %s", r.err);
    test_run_free(&r);
    size_t numel;
    float *rows = test_read_tensor(out, "embeddings", &numel);
    assert_non_null(rows);
    *n = numel / dim;
    char list[4200];
    snprintf(list, sizeof list, "%.*s.txt", (int)(strrchr(out, '.') - out), out);
    *names = (char *)read_whole_file(list, NULL);
    return rows;
}

/* The ranking is the order of the dot products of vit embed's rows: for every query, every image
 * (-k 0) by score, the scores those dot products; -k and the text output say the same. */
static void test_ranking_is_embed_dot_products(void **state) {
    (void)state;
    REQUIRE_BIN();
    const char *folder = make_folder("rank");
    const int D = 20; /* clip-micro's projection_dim */
    size_t n_images, n_texts;
    char *image_names, *text_names;
    const char *image_args[] = {folder, NULL};
    float *images = embed_rows(image_args, tmp("images.safetensors"), &image_names, &n_images, D);
    assert_int_equal(n_images, IMAGES);
    const char *text_args[] = {"--text", queries[0], "--text", queries[1],
                               "--text", queries[2], NULL};
    float *texts = embed_rows(text_args, tmp("texts.safetensors"), &text_names, &n_texts, D);
    assert_int_equal(n_texts, QUERIES);
    char *names[IMAGES], *save = NULL;
    for (int i = 0; i < IMAGES; i++) names[i] = strtok_r(i ? NULL : image_names, "\n", &save);

    /* a first run encodes every image in vit embed's batches: the same rows */
    test_run_result r = run_json(CLIP, folder, tmp("rank.cache"));
    assert_int_equal(r.status, 0);
    expect_counts(&r, IMAGES, IMAGES, 0, 0);
    for (int q = 0; q < QUERIES; q++) {
        double dots[IMAGES];
        int order[IMAGES];
        for (int i = 0; i < IMAGES; i++) {
            dots[i] = 0;
            for (int d = 0; d < D; d++) dots[i] += (double)images[i * D + d] * texts[q * D + d];
            order[i] = i;
        }
        for (int i = 1; i < IMAGES; i++) /* by dot product, highest first; ties in input order */
            for (int j = i; j > 0 && dots[order[j]] > dots[order[j - 1]]; j--) {
                const int t = order[j];
                order[j] = order[j - 1], order[j - 1] = t;
            }
        result got[IMAGES + 2];
        assert_int_equal(json_results(r.out, q, got, IMAGES + 2), IMAGES);
        for (int i = 0; i < IMAGES; i++) {
            assert_string_equal(got[i].file, names[order[i]]);
            assert_float_equal(got[i].score, dots[order[i]], 1e-6);
        }
        assert_true(dots[order[0]] > dots[order[IMAGES - 1]]); /* a ranking, not a constant */
    }
    /* -k 3 in text: the query, then rank, score and path of the first three of the JSON's */
    const char *args[] = {"-m",       CLIP,   "-k", "3", "--cache", tmp("rank.cache"),
                          queries[1], folder, NULL};
    test_run_result t = search(args);
    assert_int_equal(t.status, 0);
    assert_string_equal(t.err, ""); /* no --verbose: nothing on stderr */
    result want[IMAGES + 2];
    json_results(r.out, 1, want, IMAGES + 2);
    char *line = strtok_r(t.out, "\n", &save);
    assert_string_equal(line, queries[1]);
    for (int i = 0; i < 3; i++) {
        line = strtok_r(NULL, "\n", &save);
        assert_non_null(line);
        int rank;
        double score;
        char file[4200];
        assert_int_equal(sscanf(line, " %d %lf %4199s", &rank, &score, file), 3);
        assert_int_equal(rank, i + 1);
        assert_string_equal(file, want[i].file);
        assert_float_equal(score, want[i].score, 5e-5);
    }
    assert_null(strtok_r(NULL, "\n", &save));
    test_run_free(&t);
    test_run_free(&r);
    free(images);
    free(texts);
    free(image_names);
    free(text_names);
}

/* Sets path's modification time to `seconds` (the size stays). */
static void set_mtime(const char *path, time_t seconds) {
    const struct timespec times[2] = {{seconds, 0}, {seconds, 0}};
    assert_int_equal(utimensat(AT_FDCWD, path, times, 0), 0);
}

/* The cache: a second run encodes nothing, and reads its rows (an image damaged in place, its
 * size and time kept, still has its old score); a touched, an added and a removed image; each
 * time the results those of a run without cache. */
static void test_cache_hits_and_changes(void **state) {
    (void)state;
    REQUIRE_BIN();
    const char *folder = make_folder("changes");
    char cache[4200], path[4400];
    snprintf(cache, sizeof cache, "%s", tmp("changes.cache"));
    test_run_result first = run_json(CLIP, folder, cache);
    assert_int_equal(first.status, 0);
    expect_counts(&first, IMAGES, IMAGES, 0, 0);
    assert_non_null(strstr(first.err, "(written)"));
    size_t size;
    uint8_t *written = read_whole_file(cache, &size);
    assert_non_null(written);

    test_run_result again = run_json(CLIP, folder, cache);
    assert_int_equal(again.status, 0);
    expect_counts(&again, IMAGES, 0, IMAGES, 0);
    assert_non_null(strstr(again.err, "(unchanged)"));
    assert_string_equal(again.out, first.out); /* the same rows, bit for bit */
    size_t size_after;
    uint8_t *kept = read_whole_file(cache, &size_after);
    assert_int_equal(size_after, size);
    assert_memory_equal(kept, written, size);
    free(kept);
    free(written);
    test_run_free(&again);

    /* cat.jpg overwritten with zeros, its size and time kept: decoding it would fail */
    snprintf(path, sizeof path, "%s/cat.jpg", folder);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    uint8_t *original = read_whole_file(path, &size);
    uint8_t *zeros = calloc(size, 1);
    FILE *f = fopen(path, "r+b");
    assert_int_equal(fwrite(zeros, 1, size, f), size);
    fclose(f);
    const struct timespec times[2] = {st.st_atim, st.st_mtim};
    assert_int_equal(utimensat(AT_FDCWD, path, times, 0), 0);
    test_run_result stale = run_json(CLIP, folder, cache);
    assert_int_equal(stale.status, 0);
    expect_counts(&stale, IMAGES, 0, IMAGES, 0);
    assert_string_equal(stale.out, first.out);
    test_run_free(&stale);
    f = fopen(path, "wb");
    assert_int_equal(fwrite(original, 1, size, f), size);
    fclose(f);
    free(original);
    free(zeros);

    /* restored (a new mtime): that one image is encoded again, and the answers are as before */
    set_mtime(path, 1000000000);
    test_run_result touched = run_json(CLIP, folder, cache);
    assert_int_equal(touched.status, 0);
    expect_counts(&touched, IMAGES, 1, IMAGES - 1, 1);
    expect_same_results(touched.out, first.out, 1e-6);
    test_run_free(&touched);

    /* an image added: it alone is encoded */
    snprintf(path, sizeof path, "%s/sub/added.png", folder);
    copy_file("tests/data/golden-images/rgb_300x200.png", path);
    test_run_result added = run_json(CLIP, folder, cache);
    assert_int_equal(added.status, 0);
    expect_counts(&added, IMAGES + 1, 1, IMAGES, 0);
    const char *none_args[] = {"-m", CLIP,       "--json",   "-k",       "0",    "--no-cache",
                               "-v", queries[0], queries[1], queries[2], folder, NULL};
    test_run_result fresh = search(none_args);
    assert_int_equal(fresh.status, 0);
    assert_non_null(strstr(fresh.err, "; no cache"));
    expect_same_results(added.out, fresh.out, 1e-6);
    test_run_free(&fresh);
    test_run_free(&added);

    /* removed: nothing encoded, its row dropped from the cache */
    snprintf(path, sizeof path, "%s/coffee.jpg", folder);
    assert_int_equal(unlink(path), 0);
    test_run_result removed = run_json(CLIP, folder, cache);
    assert_int_equal(removed.status, 0);
    expect_counts(&removed, IMAGES, 0, IMAGES, 1);
    assert_null(strstr(removed.out, "coffee.jpg"));
    fresh = search(none_args);
    expect_same_results(removed.out, fresh.out, 1e-6);
    test_run_free(&fresh);
    test_run_free(&removed);
    test_run_free(&first);
}

/* A model whose weights are not one model.safetensors (here an index and its one shard,
 * clip-micro's file): the cache key stamps the file the weights are found by, so a model saved
 * again (its index rewritten) rebuilds the cache. Before (issue 41), the key stamped a
 * model.safetensors the folder lacks and the old rows were read for the new model. */
static void test_sharded_model_changed(void **state) {
    (void)state;
    REQUIRE_BIN();
    const char *folder = make_folder("sharded");
    char model[4200], path[4400], cache[4200];
    snprintf(model, sizeof model, "%s", tmp("sharded-model"));
    mkdir(model, 0777);
    static const char *const files[] = {"config.json", "preprocessor_config.json", "vocab.json",
                                        "merges.txt", "tokenizer_config.json"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char from[600];
        snprintf(from, sizeof from, CLIP "/%s", files[i]);
        snprintf(path, sizeof path, "%s/%s", model, files[i]);
        copy_file(from, path);
    }
    snprintf(path, sizeof path, "%s/model-00001-of-00001.safetensors", model);
    copy_file(CLIP "/model.safetensors", path);
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", model);
    const char *index[] = {
        "{\"weight_map\": {\"logit_scale\": \"model-00001-of-00001.safetensors\"}}",
        "{\"metadata\": {}, \"weight_map\": {\"logit_scale\": "
        "\"model-00001-of-00001.safetensors\"}}"};
    snprintf(cache, sizeof cache, "%s", tmp("sharded.cache"));
    for (int k = 0; k < 2; k++) {
        FILE *f = fopen(path, "wb");
        fputs(index[k], f);
        fclose(f);
        test_run_result r = run_json(model, folder, cache);
        assert_int_equal(r.status, 0);
        expect_counts(&r, IMAGES, IMAGES, 0, 0);
        if (k == 1) assert_non_null(strstr(r.err, "made by another model or with other settings"));
        test_run_free(&r);
    }
}

/* Another model never reads this one's cache: the same --cache file is rebuilt for it; in the
 * default place ($XDG_CACHE_HOME/vit/search) each model has its own file, both kept. */
static void test_other_model(void **state) {
    (void)state;
    REQUIRE_BIN();
    const char *folder = make_folder("models");
    char cache[4200];
    snprintf(cache, sizeof cache, "%s", tmp("models.cache"));
    test_run_result a = run_json(CLIP, folder, cache);
    assert_int_equal(a.status, 0);
    expect_counts(&a, IMAGES, IMAGES, 0, 0);
    test_run_result b = run_json(CLIP_GELU, folder, cache);
    assert_int_equal(b.status, 0);
    expect_counts(&b, IMAGES, IMAGES, 0, 0);
    assert_non_null(strstr(b.err, "made by another model or with other settings"));
    assert_string_not_equal(a.out, b.out);
    test_run_free(&a);
    test_run_free(&b);

    char xdg[4200], listing[4400];
    snprintf(xdg, sizeof xdg, "%s", tmp("xdg"));
    assert_int_equal(setenv("XDG_CACHE_HOME", xdg, 1), 0);
    const char *models[] = {CLIP, CLIP_GELU, CLIP, CLIP_GELU};
    for (int i = 0; i < 4; i++) {
        test_run_result r = run_json(models[i], folder, NULL);
        assert_int_equal(r.status, 0);
        expect_counts(&r, IMAGES, i < 2 ? IMAGES : 0, i < 2 ? 0 : IMAGES, 0);
        assert_non_null(strstr(r.err, xdg));
        test_run_free(&r);
    }
    snprintf(listing, sizeof listing,
             "ls %s/vit/search | grep -c '^models-[0-9a-f]*\\.safetensors$'", xdg);
    FILE *p = popen(listing, "r");
    int files = 0;
    assert_int_equal(fscanf(p, "%d", &files), 1);
    pclose(p);
    assert_int_equal(files, 2);
    unsetenv("XDG_CACHE_HOME");
}

/* A damaged cache (cut short; a safetensors file that is no cache) is a one-line warning, and
 * rebuilt; a cache that cannot be written is a warning and the search still answers. */
static void test_damaged_and_unwritable_cache(void **state) {
    (void)state;
    REQUIRE_BIN();
    const char *folder = make_folder("damaged");
    char cache[4200];
    snprintf(cache, sizeof cache, "%s", tmp("damaged.cache"));
    test_run_result good = run_json(CLIP, folder, cache);
    assert_int_equal(good.status, 0);
    size_t size;
    uint8_t *bytes = read_whole_file(cache, &size);
    /* the same file with its format, or its list of paths, changed in place */
    uint8_t *format = malloc(size), *paths = malloc(size);
    memcpy(format, bytes, size);
    memcpy(paths, bytes, size);
    uint8_t *at = memmem(format, size, "\"vit_embed_cache\":\"1\"", 21);
    assert_non_null(at);
    at[19] = '9';
    at = memmem(paths, size, "\"paths\":\"[", 10);
    assert_non_null(at);
    at[9] = '{';
    const struct {
        const void *data;
        size_t size;
        const char *says;
    } damaged[] = {
        {bytes, size / 2, "outside the file"},
        {bytes, 5, "truncated"},
        {NULL, 0, "not an embedding cache"}, /* a model's weights */
        {format, size, "embedding cache format '9', this vit reads '1'"},
        {paths, size, "metadata 'paths' is not a JSON list"},
    };
    for (int i = 0; i < 5; i++) {
        if (damaged[i].data) {
            FILE *f = fopen(cache, "wb");
            assert_int_equal(fwrite(damaged[i].data, 1, damaged[i].size, f), damaged[i].size);
            fclose(f);
        } else {
            copy_file(CLIP "/model.safetensors", cache);
        }
        test_run_result r = run_json(CLIP, folder, cache);
        assert_int_equal(r.status, 0);
        expect_counts(&r, IMAGES, IMAGES, 0, 0);
        const char *warning = strstr(r.err, "vit search: warning: ");
        assert_non_null(warning);
        assert_true(warning == r.err);
        const char *eol = strchr(warning, '\n');
        if (!strstr(warning, damaged[i].says) || strstr(warning, damaged[i].says) > eol ||
            !strstr(warning, "the cache is ignored and rebuilt"))
            fail_msg("%s", r.err);
        expect_same_results(r.out, good.out, 1e-6);
        test_run_free(&r);
        test_run_result next = run_json(CLIP, folder, cache);
        expect_counts(&next, IMAGES, 0, IMAGES, 0);
        assert_null(strstr(next.err, "warning"));
        test_run_free(&next);
    }
    free(bytes);
    free(format);
    free(paths);

    /* unwritable: a path under a regular file (root ignores permissions), given and by default */
    char blocked[4400];
    snprintf(blocked, sizeof blocked, "%s/cache.safetensors", cache);
    test_run_result r = run_json(CLIP, folder, blocked);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.err, "vit search: warning: the cache cannot be written"));
    assert_non_null(strstr(r.err, "Not a directory"));
    expect_same_results(r.out, good.out, 1e-6);
    test_run_free(&r);
    assert_int_equal(setenv("XDG_CACHE_HOME", cache, 1), 0);
    r = run_json(CLIP, folder, NULL);
    unsetenv("XDG_CACHE_HOME");
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.err, "vit search: warning: the cache cannot be written"));
    expect_same_results(r.out, good.out, 1e-6);
    test_run_free(&r);
    test_run_free(&good);
}

/* An image that cannot be read: one line naming it, the others ranked, exit 1; it is not cached
 * (the next run reports it again and encodes nothing). */
static void test_unreadable_image(void **state) {
    (void)state;
    REQUIRE_BIN();
    const char *folder = make_folder("unreadable");
    char cache[4200], bad[4400];
    snprintf(cache, sizeof cache, "%s", tmp("unreadable.cache"));
    snprintf(bad, sizeof bad, "%s/sub/broken.jpg", folder);
    FILE *f = fopen(bad, "wb");
    fputs("not a jpeg", f);
    fclose(f);
    for (int run = 0; run < 2; run++) {
        test_run_result r = run_json(CLIP, folder, cache);
        assert_int_equal(r.status, 1);
        char says[4600];
        snprintf(says, sizeof says, "vit search: %s: not a PNG, JPEG", bad);
        assert_non_null(strstr(r.err, says));
        expect_counts(&r, IMAGES, run ? 0 : IMAGES, run ? IMAGES : 0, 0);
        assert_non_null(strstr(r.err, ", 1 unreadable"));
        for (int q = 0; q < QUERIES; q++) {
            result got[IMAGES + 2];
            assert_int_equal(json_results(r.out, q, got, IMAGES + 2), IMAGES);
        }
        assert_null(strstr(r.out, "broken.jpg"));
        test_run_free(&r);
    }
}

/* Query q of --json output: its "query" and its first result's file and score. */
static void first_result(const char *out, int q, const char *query, result *top) {
    const char *line = out;
    for (int i = 0; i < q; i++) line = strchr(line, '\n') + 1;
    cJSON *o = cJSON_ParseWithLength(line, strcspn(line, "\n"));
    if (!o) fail_msg("not JSON: %s", line);
    assert_string_equal(cJSON_GetObjectItem(o, "query")->valuestring, query);
    const cJSON *item = cJSON_GetArrayItem(cJSON_GetObjectItem(o, "results"), 0);
    assert_non_null(item);
    snprintf(top->file, sizeof top->file, "%s", cJSON_GetObjectItem(item, "file")->valuestring);
    top->score = cJSON_GetObjectItem(item, "score")->valuedouble;
    cJSON_Delete(o);
}

/* Each operand before FOLDER has its kind: an existing file is an image query (the same image
 * in the folder comes first, its cosine 1; a text query beside it ranks as it does alone), a
 * folder is refused (a second FOLDER is not searched for as words), --text takes a path as
 * words (its score that of vit embed --text's row). */
static void test_operand_kinds(void **state) {
    (void)state;
    REQUIRE_BIN();
    const char *folder = make_folder("kinds");
    const char *cat = "examples/photos/cat.jpg";
    const char *mixed[] = {"-m", CLIP, "--json", "--no-cache", cat, queries[0], folder, NULL};
    test_run_result r = search(mixed);
    if (r.status != 0) fail_msg("vit search IMAGE TEXT FOLDER: exit %d: %s", r.status, r.err);
    result top, alone_top;
    first_result(r.out, 0, cat, &top);
    assert_non_null(strstr(top.file, "/cat.jpg"));
    assert_float_equal(top.score, 1.0, 1e-5);
    first_result(r.out, 1, queries[0], &top);
    const char *alone[] = {"-m", CLIP, "--json", "--no-cache", queries[0], folder, NULL};
    test_run_result a = search(alone);
    assert_int_equal(a.status, 0);
    first_result(a.out, 0, queries[0], &alone_top);
    assert_string_equal(top.file, alone_top.file);
    assert_true(top.score == alone_top.score);
    test_run_free(&a);
    test_run_free(&r);

    const char *two_folders[] = {"-m", CLIP, "a cat", "examples/photos", folder, NULL};
    r = search(two_folders);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "examples/photos is a folder: a search has one FOLDER"));
    assert_string_equal(strchr(r.err, '\n'), "\n");
    assert_string_equal(r.out, "");
    test_run_free(&r);

    const char *words[] = {"-m", CLIP, "--json", "--no-cache", "--text", cat, folder, NULL};
    r = search(words);
    assert_int_equal(r.status, 0);
    first_result(r.out, 0, cat, &top);
    const int D = 20; /* clip-micro's projection_dim */
    size_t n;
    char *names, *text_names;
    const char *text_args[] = {"--text", cat, NULL}, *image_args[] = {top.file, NULL};
    float *text = embed_rows(text_args, tmp("kinds-text.safetensors"), &text_names, &n, D);
    assert_int_equal(n, 1);
    float *image = embed_rows(image_args, tmp("kinds-image.safetensors"), &names, &n, D);
    double dot = 0;
    for (int d = 0; d < D; d++) dot += (double)text[d] * image[d];
    assert_float_equal(top.score, dot, 1e-6);
    free(text), free(image), free(names), free(text_names);
    test_run_free(&r);
}

/* What vit search refuses, each in one line. */
static void test_refusals(void **state) {
    (void)state;
    REQUIRE_BIN();
    const char *folder = make_folder("refusals");
    const struct {
        const char *args[8];
        int status;
        const char *says;
    } refused[] = {
        {{"-m", CLIP, folder}, 2, "expected QUERY... FOLDER"},
        {{"-m", CLIP, "--cache", "x", "--no-cache", "a cat", folder}, 2, "--cache and --no-cache"},
        {{"-m", CLIP, "a cat", "examples/photos/cat.jpg"}, 1, "cat.jpg: not a folder"},
        {{"-m", CLIP, "a cat", "no-such-folder"}, 1, "no-such-folder: No such file or directory"},
        {{"-m", "tests/data/deit-micro", "a cat", folder}, 1, "not a CLIP or SigLIP model"},
        {{"-m", test_joint_without_tokenizer(), "a cat", folder}, 1, "no tokenizer files"},
        {{"-m", CLIP, "-k", "-1", "a cat", folder}, 2, "invalid value for -k"},
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        test_run_result r = search(refused[i].args);
        assert_int_equal(r.status, refused[i].status);
        if (!strstr(r.err, refused[i].says)) fail_msg("%s: expected '%s'", r.err, refused[i].says);
        assert_string_equal(strchr(r.err, '\n'), "\n");
        assert_string_equal(r.out, "");
        test_run_free(&r);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ranking_is_embed_dot_products),
        cmocka_unit_test(test_cache_hits_and_changes),
        cmocka_unit_test(test_other_model),
        cmocka_unit_test(test_sharded_model_changed),
        cmocka_unit_test(test_damaged_and_unwritable_cache),
        cmocka_unit_test(test_unreadable_image),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_operand_kinds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
