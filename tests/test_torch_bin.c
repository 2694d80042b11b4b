/* Model folders whose weights are not one model.safetensors (issue 41): pytorch_model.bin in
 * PyTorch's zip and legacy formats, safetensors and .bin shards through their index's weight_map,
 * float16 / bfloat16 with strided and shared-storage tensors, old LayerNorm.gamma/beta names.
 * Fixtures: tests/data/torch-bin, written by tools/torch_bin_fixtures.py with torch.save from
 * tests/data/vit-base-micro and bert-base-micro; every folder must load bit for bit what the
 * safetensors folder loads. Hostile and broken files are refused in one line naming the file. */
#include "tests/testutil.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vit/io/model_dir.h"
#include "vit/io/torch_bin.h"
#include "vit/io/torch_pickle.h"
#include "vit/io/weights.h"
#include "vit/model/params.h"
#include "vit/vit.h"

#define BIN      TEST_DATA "/torch-bin"
#define VIT_SRC  TEST_DATA "/vit-base-micro"
#define BERT_SRC TEST_DATA "/bert-base-micro"

static void load_or_fail(model *m, const char *dir, int lazy) {
    vit_error err = {0};
    if ((lazy ? model_load_lazy : model_load)(m, dir, &err) != 0) fail_msg("%s: %s", dir, err.msg);
    if (lazy && model_read_rest(m, &err) != 0) fail_msg("%s: %s", dir, err.msg);
}

/* dir's parameters, loaded whole and lazily, are want's bit for bit. */
static void expect_same_params(const char *dir, const char *want_dir) {
    for (int lazy = 0; lazy < 2; lazy++) {
        model want, got;
        load_or_fail(&want, want_dir, 0);
        load_or_fail(&got, dir, lazy);
        assert_int_equal(got.num_params, want.num_params);
        if (memcmp(got.params, want.params, sizeof(float) * want.num_params) != 0)
            fail_msg("%s (lazy %d): parameters differ from %s's", dir, lazy, want_dir);
        model_free(&got);
        model_free(&want);
    }
}

/* vit_embed's CLS and mean features of the golden pixels, identical for dir and want_dir. */
static void expect_same_outputs(const char *dir, const char *want_dir) {
    size_t numel;
    float *pixels = test_read_tensor(VIT_SRC "/golden.safetensors", "pixels", &numel);
    assert_true(pixels && numel == 2 * 3 * 32 * 32);
    float out[2][2 * 24];
    const char *dirs[2] = {dir, want_dir};
    for (int k = 0; k < 2; k++) {
        vit_error err = {0};
        vit_params params = vit_default_params();
        params.max_batch = 2;
        vit_context *ctx = vit_load(dirs[k], &params, &err);
        if (!ctx) fail_msg("%s: %s", dirs[k], err.msg);
        if (vit_embed(ctx, pixels, 2, VIT_POOL_CLS, out[k], &err) != 0) fail_msg("%s", err.msg);
        vit_free(ctx);
    }
    assert_memory_equal(out[0], out[1], sizeof out[0]);
    free(pixels);
}

static void test_same_weights_every_layout(void **state) {
    (void)state;
    static const char *const dirs[] = {BIN "/vit-zip", BIN "/vit-legacy", BIN "/vit-shards",
                                       BIN "/vit-bin-shards"};
    static const char *const files[] = {"pytorch_model.bin", "pytorch_model.bin",
                                        "model.safetensors.index.json",
                                        "pytorch_model.bin.index.json"};
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        assert_string_equal(weights_file_name(dirs[i]), files[i]);
        expect_same_params(dirs[i], VIT_SRC);
        expect_same_outputs(dirs[i], VIT_SRC);
    }
}

/* The float16 file (its query weights transposed views at a storage offset, key weight and bias
 * views of one storage) and the bfloat16 one load as vit convert's rounding of the float32
 * folder: torch's .half() / .bfloat16() and vit's st_f32_to_f16 / bf16 both round to nearest
 * even, so the two are independent computations of the same numbers. */
static void test_half_and_strided(void **state) {
    (void)state;
    const st_dtype dtypes[] = {ST_F16, ST_BF16};
    const char *dirs[] = {BIN "/vit-f16-strided", BIN "/vit-bf16"};
    for (int k = 0; k < 2; k++) {
        char out[512];
        snprintf(out, sizeof out, "%s/half-%d", test_tmpdir(), k);
        vit_error err = {0};
        if (model_dir_convert(VIT_SRC, out, dtypes[k], &err) != 0) fail_msg("%s", err.msg);
        expect_same_params(dirs[k], out);
    }
    st_file f;
    vit_error err = {0};
    assert_int_equal(torch_bin_open(BIN "/vit-f16-strided/pytorch_model.bin", &f, &err), 0);
    int copies = 0;
    for (int i = 0; i < f.count; i++) copies += f.tensors[i].owned;
    /* the 2 strided query weights; key weight and bias share a storage at disjoint offsets, so
     * they stay in the file */
    assert_int_equal(copies, 2);
    st_close(&f);
}

/* bert-base-uncased's own file names LayerNorm parameters gamma / beta; transformers renames them
 * on load (_fix_state_dict_key_on_load), so does vit. */
static void test_gamma_beta(void **state) {
    (void)state;
    expect_same_params(BIN "/bert-gamma", BERT_SRC);
    weights w;
    vit_error err = {0};
    assert_int_equal(weights_open(BIN "/bert-gamma", 1, &w, &err), 0);
    assert_non_null(weights_find(&w, "embeddings.LayerNorm.weight"));
    assert_non_null(weights_find(&w, "encoder.layer.1.output.LayerNorm.bias"));
    assert_null(weights_find(&w, "embeddings.LayerNorm.gamma"));
    weights_close(&w);
}

/* vit convert of a .bin folder and of a sharded one: one model.safetensors with the safetensors
 * folder's tensors, the same bytes under the same names. */
static void test_convert(void **state) {
    (void)state;
    const char *dirs[] = {BIN "/vit-legacy", BIN "/vit-bin-shards", BIN "/bert-gamma"};
    const char *want[] = {VIT_SRC, VIT_SRC, BERT_SRC};
    for (int k = 0; k < 3; k++) {
        char out[512], path[600];
        snprintf(out, sizeof out, "%s/converted-%d", test_tmpdir(), k);
        vit_error err = {0};
        if (model_dir_convert(dirs[k], out, ST_F32, &err) != 0) fail_msg("%s", err.msg);
        snprintf(path, sizeof path, "%s/model.safetensors", want[k]);
        st_file a, b;
        assert_int_equal(st_open(path, &a, &err), 0);
        snprintf(path, sizeof path, "%s/model.safetensors", out);
        assert_int_equal(st_open(path, &b, &err), 0);
        assert_int_equal(a.count, b.count);
        for (int i = 0; i < a.count; i++) {
            const st_tensor *t = st_find(&b, a.tensors[i].name);
            if (!t) fail_msg("%s lacks '%s'", path, a.tensors[i].name);
            assert_int_equal(t->nbytes, a.tensors[i].nbytes);
            assert_memory_equal(t->data, a.tensors[i].data, t->nbytes);
        }
        st_close(&a);
        st_close(&b);
        expect_same_params(out, want[k]);
    }
}

/* vit convert IN OUT from a .bin folder: OUT's model.safetensors written once; a second run
 * refuses to replace it (one line naming the file, the file untouched) unless --overwrite. */
static void test_convert_cli(void **state) {
    (void)state;
    REQUIRE_BIN();
    char out[512], path[600];
    snprintf(out, sizeof out, "%s/convert-cli", test_tmpdir());
    snprintf(path, sizeof path, "%s/model.safetensors", out);
    const char *first[] = {"convert", "--dtype", "f32", BIN "/vit-zip", out, NULL};
    test_run_result r = test_run_vit(NULL, NULL, first);
    if (r.status != 0) fail_msg("vit convert: %s", r.err);
    test_run_free(&r);
    expect_same_params(out, VIT_SRC);
    size_t n0, n1;
    uint8_t *before = read_whole_file(path, &n0);
    const char *again[] = {"convert", "--dtype", "f16", BIN "/vit-legacy", out, NULL};
    r = test_run_vit(NULL, NULL, again);
    assert_int_equal(r.status, 1);
    char want[700];
    snprintf(want, sizeof want, "vit convert: %s/config.json exists (--overwrite replaces it)\n",
             out);
    assert_string_equal(r.err, want);
    test_run_free(&r);
    uint8_t *after = read_whole_file(path, &n1);
    assert_true(n0 == n1 && memcmp(before, after, n0) == 0);
    free(after);
    const char *forced[] = {"convert",         "--overwrite", "--dtype", "f16",
                            BIN "/vit-legacy", out,           NULL};
    r = test_run_vit(NULL, NULL, forced);
    if (r.status != 0) fail_msg("vit convert --overwrite: %s", r.err);
    test_run_free(&r);
    after = read_whole_file(path, &n1);
    assert_true(n1 < n0); /* float16 now */
    free(after);
    free(before);
}

/* dir's model.safetensors as three shards (tensor i in shard i % 3, so each shard holds parts of
 * every layer) with the index save_pretrained writes, and links to dir's other files, in out. */
static void write_shards(const char *dir, const char *out) {
    char path[1200];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    st_file f;
    vit_error err = {0};
    if (st_open(path, &f, &err) != 0) fail_msg("%s", err.msg);
    mkdir(out, 0777);
    st_entry *entries = calloc((size_t)f.count + 1, sizeof *entries);
    char map[1 << 16];
    size_t used = (size_t)snprintf(map, sizeof map, "{\"weight_map\": {");
    for (int k = 0; k < 3; k++) {
        int n = 0;
        for (int i = k; i < f.count; i += 3) {
            const st_tensor *t = &f.tensors[i];
            entries[n] =
                (st_entry){.name = t->name, .ndim = t->ndim, .data = t->data, .dtype = t->dtype};
            memcpy(entries[n++].shape, t->shape, sizeof t->shape);
            used +=
                (size_t)snprintf(map + used, sizeof map - used, "%s\"%s\": \"m-%d.safetensors\"",
                                 used > 16 ? ", " : "", t->name, k);
        }
        snprintf(path, sizeof path, "%s/m-%d.safetensors", out, k);
        if (st_write_f32(path, entries, n, &err) != 0) fail_msg("%s", err.msg);
    }
    assert_true(used + 3 < sizeof map);
    snprintf(map + used, sizeof map - used, "}}");
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", out);
    FILE *o = fopen(path, "wb");
    fputs(map, o);
    fclose(o);
    free(entries);
    st_close(&f);
    DIR *d = opendir(dir);
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.' || strcmp(e->d_name, "model.safetensors") == 0) continue;
        char from[1200], *real;
        snprintf(from, sizeof from, "%s/%s", dir, e->d_name);
        snprintf(path, sizeof path, "%s/%s", out, e->d_name);
        assert_non_null(real = realpath(from, NULL));
        unlink(path);
        assert_int_equal(symlink(real, path), 0);
        free(real);
    }
    closedir(d);
}

/* Every model folder of tests/data (each family: ViT, DeiT, BERT, CLIP, SigLIP, DINOv2, BEiT,
 * the decoders, timm) sharded: both towers load the same parameters bit for bit. */
static void test_shards_every_folder(void **state) {
    (void)state;
    DIR *d = opendir(TEST_DATA);
    assert_non_null(d);
    int folders = 0;
    for (struct dirent *e; (e = readdir(d));) {
        char dir[600], path[700], out[700];
        snprintf(dir, sizeof dir, TEST_DATA "/%s", e->d_name);
        snprintf(path, sizeof path, "%s/model.safetensors", dir);
        if (e->d_name[0] == '.' || access(path, R_OK) != 0) continue;
        snprintf(out, sizeof out, "%s/shards-%s", test_tmpdir(), e->d_name);
        write_shards(dir, out);
        for (int tower = 0; tower < 2; tower++) {
            model want, got;
            vit_error err = {0};
            const config_tower which = tower ? TOWER_TEXT : TOWER_IMAGE;
            if (model_load_tower(&want, dir, which, &err) != 0) fail_msg("%s", err.msg);
            if (model_load_tower(&got, out, which, &err) != 0) fail_msg("%s", err.msg);
            assert_int_equal(got.num_params, want.num_params);
            if (memcmp(got.params, want.params, sizeof(float) * want.num_params) != 0)
                fail_msg("%s sharded: parameters differ", dir);
            model_free(&got);
            model_free(&want);
        }
        folders++;
    }
    closedir(d);
    print_message("  %d model folders sharded\n", folders);
    assert_true(folders >= 20);
}

/* A folder of config.json (vit-base-micro's) and name holding data[0..size). */
static const char *folder_with(const char *tag, const char *name, const void *data, size_t size) {
    static char dir[512];
    char path[700];
    snprintf(dir, sizeof dir, "%s/%s", test_tmpdir(), tag);
    mkdir(dir, 0777);
    size_t n;
    uint8_t *config = read_whole_file(VIT_SRC "/config.json", &n);
    snprintf(path, sizeof path, "%s/config.json", dir);
    FILE *f = fopen(path, "wb");
    fwrite(config, 1, n, f);
    fclose(f);
    free(config);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    f = fopen(path, "wb");
    fwrite(data, 1, size, f);
    fclose(f);
    return dir;
}

/* model_load of dir fails in one line naming file (under dir) and containing needle. */
static void expect_load_error(const char *dir, const char *file, const char *needle) {
    model m;
    vit_error err = {0};
    char path[700];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    assert_int_equal(model_load(&m, dir, &err), -1);
    if (!strstr(err.msg, path) || !strstr(err.msg, needle) || strchr(err.msg, '\n'))
        fail_msg("expected '%s: ...%s' in '%s'", path, needle, err.msg);
}

/* As torch.load(weights_only=True): a global a state dict does not hold is refused by name and
 * nothing runs (os.system('touch /tmp/x') would leave its file). */
static void test_hostile_pickles(void **state) {
    (void)state;
    static const struct {
        const char *file, *needle;
    } cases[] = {
        {"os-system.bin", "global os.system is not one a state dict holds: refused"},
        {"legacy-os-system.bin", "global os.system is not one a state dict holds: refused"},
        {"builtins-eval.bin", "global builtins.eval is not one a state dict holds: refused"},
        {"stack-global.bin", "global posix.system is not one a state dict holds: refused"},
        {"unknown-global.bin",
         "global numpy.core.multiarray._reconstruct is not one a state dict holds: refused"},
        {"complex.bin", "global torch.ComplexFloatStorage is not one a state dict holds"},
        {"not-a-tensor.bin", "'epoch' is not a tensor"},
        {"deflated.bin", "is compressed (method 8)"},
    };
    unlink("/tmp/x");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char src[600];
        snprintf(src, sizeof src, BIN "/pickles/%s", cases[i].file);
        size_t n;
        uint8_t *bytes = read_whole_file(src, &n);
        assert_non_null(bytes);
        const char *dir = folder_with("hostile", "pytorch_model.bin", bytes, n);
        free(bytes);
        expect_load_error(dir, "pytorch_model.bin", cases[i].needle);
    }
    assert_int_equal(access("/tmp/x", F_OK), -1);
}

/* tp_load on data: -1 with needle in the one-line message. */
static void expect_pickle_refused(const uint8_t *data, size_t size, int want_rc,
                                  const char *needle) {
    tp_arena arena = {0};
    tp_obj *result;
    size_t end;
    vit_error err = {0};
    const int rc = tp_load(data, size, "p.pkl", &arena, &result, &end, &err);
    if (rc != want_rc) fail_msg("tp_load gave %d, not %d: %s", rc, want_rc, err.msg);
    if (!strstr(err.msg, "p.pkl: ") || !strstr(err.msg, needle))
        fail_msg("expected '%s' in '%s'", needle, err.msg);
    tp_free(&arena);
}

/* The unpickler by hand: Python's pickle.dumps({'a': [1, 2.5, None, True, 'x', (1,), -7, 70000,
 * 2**70]}, protocol=2) read back value for value; and its bounds, each refused in one line. */
static void test_pickle_values_and_limits(void **state) {
    (void)state;
    static const uint8_t plain[] =
        "\x80\x02\x7d\x71\x00\x58\x01\x00\x00\x00\x61\x71\x01\x5d\x71\x02\x28\x4b\x01\x47\x40\x04"
        "\x00\x00\x00\x00\x00\x00\x4e\x88\x58\x01\x00\x00\x00\x78\x71\x03\x4b\x01\x85\x71\x04\x4a"
        "\xf9\xff\xff\xff\x4a\x70\x11\x01\x00\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x00\x40\x65\x73"
        "\x2e";
    tp_arena arena = {0};
    tp_obj *d;
    size_t end;
    vit_error err = {0};
    assert_int_equal(tp_load(plain, sizeof plain - 1, "p.pkl", &arena, &d, &end, &err), 0);
    assert_int_equal(end, sizeof plain - 1);
    const tp_obj *l = tp_dict_get(d, "a");
    assert_true(l && l->kind == TP_LIST && l->n == 9);
    assert_true(l->items[0]->kind == TP_INT && l->items[0]->i == 1);
    assert_true(l->items[1]->kind == TP_FLOAT && l->items[1]->f == 2.5);
    assert_int_equal(l->items[2]->kind, TP_NONE);
    assert_true(l->items[3]->kind == TP_BOOL && l->items[3]->i == 1);
    assert_true(l->items[4]->kind == TP_STR && strcmp(l->items[4]->s, "x") == 0);
    assert_true(l->items[5]->kind == TP_TUPLE && l->items[5]->n == 1);
    assert_true(l->items[6]->kind == TP_INT && l->items[6]->i == -7);
    assert_true(l->items[7]->kind == TP_INT && l->items[7]->i == 70000);
    assert_true(l->items[8]->kind == TP_LONG && l->items[8]->len == 9);
    tp_free(&arena);

    expect_pickle_refused(plain, 30, -2, "ends early"); /* cut inside: the caller may read more */
    expect_pickle_refused((const uint8_t *)"\x80\x06N.", 4, -1, "pickle protocol 6");
    expect_pickle_refused((const uint8_t *)"\x80\x02i", 3, -1,
                          "opcode 0x69 is not one a state dict holds: refused");
    expect_pickle_refused((const uint8_t *)"\x80\x02h\x05", 4, -1, "memo index 5 was never stored");
    expect_pickle_refused((const uint8_t *)"\x80\x02Nr\xff\xff\xff\xff", 8, -1, "is too large");
    expect_pickle_refused((const uint8_t *)"\x80\x02.", 3, -1, "the stack is empty");
    /* a tensor whose stride reaches past 2^62 elements (its storage: 4 floats) */
    static const uint8_t strided[] =
        "\x80\x02\x63torch._utils\n_rebuild_tensor_v2\n((X\x07\x00\x00\x00storage"
        "ctorch\nFloatStorage\nX\x01\x00\x00\x00"
        "0X\x03\x00\x00\x00"
        "cpuK\x04tQK\x00K\x03\x85"
        "\x8a\x08\x00\x00\x00\x00\x00\x00\x00\x40\x85\x89}tR.";
    expect_pickle_refused(strided, sizeof strided - 1, -1, "reach past 2^62");
    const size_t n = 1u << 21;
    uint8_t *deep = malloc(n + 3);
    memcpy(deep, "\x80\x02", 2);
    memset(deep + 2, '(', n);
    expect_pickle_refused(deep, n + 2, -1, "marks nest too deep");
    memset(deep + 2, 'N', n);
    expect_pickle_refused(deep, n + 2, -1, "the stack is too deep");
    free(deep);
}

/* Every prefix of both formats' files (and bytes flipped through them) is refused in one line
 * naming the file, or (a flipped byte in a tensor's data) loads: never a crash or a hang. */
static void test_truncated_and_corrupt(void **state) {
    (void)state;
    const char *files[] = {BIN "/vit-zip/pytorch_model.bin", BIN "/vit-legacy/pytorch_model.bin"};
    char path[600];
    snprintf(path, sizeof path, "%s/cut.bin", test_tmpdir());
    for (int k = 0; k < 2; k++) {
        size_t n;
        uint8_t *bytes = read_whole_file(files[k], &n);
        assert_non_null(bytes);
        int refused = 0, loaded = 0;
        for (size_t len = 0; len < n; len += len < 1024 ? 1 : 97) {
            write_temp_file("cut.bin", bytes, len);
            st_file f;
            vit_error err = {0};
            if (torch_bin_open(path, &f, &err) == 0)
                fail_msg("%s cut at %zu loaded", files[k], len);
            if (!strstr(err.msg, path) || strchr(err.msg, '\n')) fail_msg("'%s'", err.msg);
            refused++;
        }
        for (size_t at = 0; at < n; at += at < 1024 ? 3 : 251) {
            bytes[at] ^= 0x5a;
            write_temp_file("cut.bin", bytes, n);
            st_file f;
            vit_error err = {0};
            if (torch_bin_open(path, &f, &err) == 0) {
                for (int i = 0; i < f.count; i++)
                    assert_int_equal(st_read(&f, &f.tensors[i], &err), 0);
                st_close(&f);
                loaded++;
            } else if (!strstr(err.msg, path) || strchr(err.msg, '\n')) {
                fail_msg("'%s'", err.msg);
            }
            bytes[at] ^= 0x5a;
        }
        print_message("  %s: %d prefixes refused, %d of the flipped files still load\n", files[k],
                      refused, loaded);
        free(bytes);
    }
}

/* An index whose weight_map names a file outside the folder, a shard that is missing, or a
 * tensor in a shard that does not hold it: refused naming the index. */
static void test_bad_index(void **state) {
    (void)state;
    static const struct {
        const char *index, *needle;
    } cases[] = {
        {"{\"weight_map\": {\"a\": \"../model.safetensors\"}}",
         "weight_map gives 'a' a file that is not a name in the folder"},
        {"{\"weight_map\": {}}", "weight_map names no file"},
        {"{\"metadata\": {}}", "no weight_map object"},
        {"[1, 2", "no weight_map object"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *dir = folder_with("index", "model.safetensors.index.json", cases[i].index,
                                      strlen(cases[i].index));
        expect_load_error(dir, "model.safetensors.index.json", cases[i].needle);
    }
    /* vit-shards' index with its first shard's tensor placed in the second shard */
    size_t n;
    char *index = (char *)read_whole_file(BIN "/vit-shards/model.safetensors.index.json", &n);
    assert_non_null(index);
    const char *dir = folder_with("index", "model.safetensors.index.json", index, n);
    expect_load_error(dir, "model-00001-of-00004.safetensors", "No such file or directory");
    char *at = strstr(index, "\"embeddings.cls_token\": \"model-00001");
    assert_non_null(at);
    at[strlen("\"embeddings.cls_token\": \"model-0000")] = '2';
    char from[700], to[700];
    for (int k = 1; k <= 4; k++) {
        snprintf(from, sizeof from, "%s/vit-shards/model-0000%d-of-00004.safetensors", BIN, k);
        snprintf(to, sizeof to, "%s/model-0000%d-of-00004.safetensors", dir, k);
        unlink(to);
        char *real = realpath(from, NULL);
        assert_int_equal(symlink(real, to), 0);
        free(real);
    }
    dir = folder_with("index", "model.safetensors.index.json", index, n);
    expect_load_error(dir, "model.safetensors.index.json",
                      "weight_map puts 'embeddings.cls_token' in model-00002-of-00004.safetensors, "
                      "which does not hold it");
    free(index);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_weights_every_layout),
        cmocka_unit_test(test_half_and_strided),
        cmocka_unit_test(test_gamma_beta),
        cmocka_unit_test(test_convert),
        cmocka_unit_test(test_convert_cli),
        cmocka_unit_test(test_shards_every_folder),
        cmocka_unit_test(test_hostile_pickles),
        cmocka_unit_test(test_pickle_values_and_limits),
        cmocka_unit_test(test_truncated_and_corrupt),
        cmocka_unit_test(test_bad_index),
    };
    return cmocka_run_group_tests_name("torch_bin", tests, NULL, NULL);
}
