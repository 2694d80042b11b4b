/* safetensors validation (SPEC §3) and model loading errors: each bad file is a clear error. */
#include "tests/testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vit/io/model_dir.h"
#include "vit/model/params.h"
#include "vit/io/safetensors.h"

/* A safetensors file from a header string and `data_len` bytes of data (value = byte index). */
static const char *make_file(const char *name, const char *header, size_t data_len) {
    size_t hlen = strlen(header), total = 8 + hlen + data_len;
    uint8_t *buf = calloc(1, total);
    for (int i = 0; i < 8; i++) buf[i] = (uint8_t)((uint64_t)hlen >> (8 * i));
    memcpy(buf + 8, header, hlen);
    for (size_t i = 0; i < data_len; i++) buf[8 + hlen + i] = (uint8_t)i;
    const char *path = write_temp_file(name, buf, total);
    free(buf);
    return path;
}

static void expect_open_error(const char *path, const char *needle) {
    st_file f;
    vit_error err = {0};
    assert_int_equal(st_open(path, &f, &err), -1);
    print_message("  %s\n", err.msg);
    assert_non_null(strstr(err.msg, path));
    if (!strstr(err.msg, needle)) fail_msg("expected '%s' in '%s'", needle, err.msg);
}

static void test_valid_file(void **state) {
    (void)state;
    const char *path =
        make_file("ok.safetensors",
                  "{\"__metadata__\":{\"format\":\"pt\"},"
                  "\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                  "\"b\":{\"dtype\":\"F16\",\"shape\":[1,2],\"data_offsets\":[8,12]}}",
                  12);
    st_file f;
    vit_error err = {0};
    assert_int_equal(st_open(path, &f, &err), 0);
    assert_int_equal(f.count, 2);
    const st_tensor *b = st_find(&f, "b");
    assert_non_null(b);
    assert_int_equal(b->ndim, 2);
    assert_int_equal(b->shape[1], 2);
    assert_null(st_find(&f, "__metadata__"));
    st_close(&f);
}

static void test_half_conversions(void **state) {
    (void)state;
    /* F16: 0x3c00 = 1.0, 0xc000 = -2.0, 0x0001 = 2^-24 (subnormal), 0x7bff = 65504.
       BF16: 0x3f80 = 1.0, 0xc0a0 = -5.0 */
    const char *header = "{\"h\":{\"dtype\":\"F16\",\"shape\":[4],\"data_offsets\":[0,8]},"
                         "\"b\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[8,12]}}";
    size_t hlen = strlen(header);
    uint8_t buf[256] = {0};
    for (int i = 0; i < 8; i++) buf[i] = (uint8_t)((uint64_t)hlen >> (8 * i));
    memcpy(buf + 8, header, hlen);
    const uint8_t data[12] = {0x00, 0x3c, 0x00, 0xc0, 0x01, 0x00,
                              0xff, 0x7b, 0x80, 0x3f, 0xa0, 0xc0};
    memcpy(buf + 8 + hlen, data, sizeof data);
    const char *path = write_temp_file("half.safetensors", buf, 8 + hlen + sizeof data);
    st_file f;
    vit_error err = {0};
    assert_int_equal(st_open(path, &f, &err), 0);
    float h[4], b[2];
    assert_int_equal(st_to_f32(&f, st_find(&f, "h"), h, &err), 0);
    assert_int_equal(st_to_f32(&f, st_find(&f, "b"), b, &err), 0);
    assert_true(h[0] == 1.0f && h[1] == -2.0f && h[2] == ldexpf(1.0f, -24) && h[3] == 65504.0f);
    assert_true(b[0] == 1.0f && b[1] == -5.0f);
    st_close(&f);
}

static void test_round_trip(void **state) {
    (void)state;
    float a[6] = {1, -2, 3.5f, 0, 1e-30f, -7}, b[1] = {42};
    st_entry entries[2] = {{"x.weight", 2, {2, 3}, a}, {"y", 1, {1}, b}};
    char path[512];
    snprintf(path, sizeof path, "%s/rt.safetensors", test_tmpdir());
    vit_error err = {0};
    assert_int_equal(st_write_f32(path, entries, 2, &err), 0);
    st_file f;
    assert_int_equal(st_open(path, &f, &err), 0);
    const st_tensor *t = st_find(&f, "x.weight");
    assert_non_null(t);
    assert_int_equal(t->shape[0], 2);
    assert_int_equal(t->shape[1], 3);
    assert_memory_equal(t->data, a, sizeof a);
    assert_memory_equal(st_find(&f, "y")->data, b, sizeof b);
    st_close(&f);
}

static void test_truncated_file(void **state) {
    (void)state;
    expect_open_error(write_temp_file("short.safetensors", "abc", 3), "truncated");
}

static void test_header_beyond_file(void **state) {
    (void)state;
    uint8_t buf[16] = {0xff, 0xff, 0, 0, 0, 0, 0, 0, '{', '}'};
    expect_open_error(write_temp_file("long.safetensors", buf, 10), "beyond the file");
}

static void test_header_not_json(void **state) {
    (void)state;
    expect_open_error(make_file("nojson.safetensors", "{\"a\": [", 0), "not valid JSON");
}

static void test_offsets_out_of_range(void **state) {
    (void)state;
    expect_open_error(make_file("range.safetensors",
                                "{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}",
                                8),
                      "outside the file");
}

static void test_size_mismatch(void **state) {
    (void)state;
    expect_open_error(make_file("size.safetensors",
                                "{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}",
                                8),
                      "bytes but shape and dtype need");
}

static void test_overlap(void **state) {
    (void)state;
    expect_open_error(make_file("overlap.safetensors",
                                "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                                "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}",
                                12),
                      "overlap");
}

static void test_unknown_dtype(void **state) {
    (void)state;
    expect_open_error(
        make_file("dtype.safetensors",
                  "{\"a\":{\"dtype\":\"F128\",\"shape\":[1],\"data_offsets\":[0,16]}}", 16),
        "unknown dtype");
}

static void test_shape_overflow(void **state) {
    (void)state;
    expect_open_error(
        make_file("overflow.safetensors",
                  "{\"a\":{\"dtype\":\"F32\",\"shape\":[4294967295,4294967295,4294967295],"
                  "\"data_offsets\":[0,4]}}",
                  4),
        "overflows");
}

static void test_non_float_dtype_rejected_on_convert(void **state) {
    (void)state;
    const char *path = make_file(
        "int.safetensors", "{\"a\":{\"dtype\":\"I64\",\"shape\":[1],\"data_offsets\":[0,8]}}", 8);
    st_file f;
    vit_error err = {0};
    assert_int_equal(st_open(path, &f, &err), 0);
    float out[2];
    assert_int_equal(st_to_f32(&f, st_find(&f, "a"), out, &err), -1);
    assert_non_null(strstr(err.msg, "I64"));
    st_close(&f);
}

/* A model directory whose config is micro-a's but whose weights are edited. */
static const char *model_dir_with(const char *name, const char *drop, const char *reshape) {
    static char dir[512];
    snprintf(dir, sizeof dir, "%s/%s", test_tmpdir(), name);
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s' && cp '%s' '%s/config.json'", dir,
             shared_path("models/micro-a/config.json"), dir);
    assert_int_equal(system(cmd), 0);
    st_file src;
    vit_error err = {0};
    assert_int_equal(st_open(shared_path("models/micro-a/model.safetensors"), &src, &err), 0);
    st_entry *entries = calloc((size_t)src.count, sizeof *entries);
    float **bufs = calloc((size_t)src.count, sizeof *bufs);
    int n = 0;
    for (int i = 0; i < src.count; i++) {
        const st_tensor *t = &src.tensors[i];
        if (drop && strcmp(t->name, drop) == 0) continue;
        bufs[n] = malloc(sizeof(float) * (size_t)t->numel);
        assert_int_equal(st_to_f32(&src, t, bufs[n], &err), 0);
        entries[n] = (st_entry){.name = t->name, .ndim = t->ndim, .data = bufs[n]};
        memcpy(entries[n].shape, t->shape, sizeof t->shape);
        if (reshape && strcmp(t->name, reshape) == 0) { /* same data, transposed-looking shape */
            entries[n].shape[0] = t->shape[1];
            entries[n].shape[1] = t->shape[0];
        }
        n++;
    }
    char path[600];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    assert_int_equal(st_write_f32(path, entries, n, &err), 0);
    for (int i = 0; i < n; i++) free(bufs[i]);
    free(bufs);
    free(entries);
    st_close(&src);
    return dir;
}

static void test_missing_tensor(void **state) {
    (void)state;
    REQUIRE_SHARED();
    const char *dir = model_dir_with("missing", "vit.encoder.layer.1.output.dense.bias", NULL);
    model m;
    vit_error err = {0};
    assert_int_equal(model_load(&m, dir, &err), -1);
    print_message("  %s\n", err.msg);
    assert_non_null(strstr(err.msg, "missing tensor 'vit.encoder.layer.1.output.dense.bias'"));
}

static void test_misshapen_tensor(void **state) {
    (void)state;
    REQUIRE_SHARED();
    const char *dir =
        model_dir_with("shape", NULL, "vit.encoder.layer.0.intermediate.dense.weight");
    model m;
    vit_error err = {0};
    assert_int_equal(model_load(&m, dir, &err), -1);
    print_message("  %s\n", err.msg);
    assert_non_null(
        strstr(err.msg, "'vit.encoder.layer.0.intermediate.dense.weight' has shape [48, 96]"));
}

static void test_unprefixed_names_load(void **state) {
    (void)state;
    REQUIRE_SHARED();
    /* A bare checkpoint: same tensors without "vit." loads to identical parameters. */
    st_file src;
    vit_error err = {0};
    assert_int_equal(st_open(shared_path("models/micro-a/model.safetensors"), &src, &err), 0);
    st_entry *entries = calloc((size_t)src.count, sizeof *entries);
    char **names = calloc((size_t)src.count, sizeof *names);
    float **bufs = calloc((size_t)src.count, sizeof *bufs);
    for (int i = 0; i < src.count; i++) {
        const st_tensor *t = &src.tensors[i];
        names[i] = strdup(strncmp(t->name, "vit.", 4) == 0 ? t->name + 4 : t->name);
        bufs[i] = malloc(sizeof(float) * (size_t)t->numel);
        assert_int_equal(st_to_f32(&src, t, bufs[i], &err), 0);
        entries[i] = (st_entry){.name = names[i], .ndim = t->ndim, .data = bufs[i]};
        memcpy(entries[i].shape, t->shape, sizeof t->shape);
    }
    const char *dir = model_dir_with("bare", NULL, NULL);
    char path[600];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    assert_int_equal(st_write_f32(path, entries, src.count, &err), 0);
    model a, b;
    assert_int_equal(model_load(&a, dir, &err), 0);
    assert_int_equal(model_load(&b, shared_path("models/micro-a"), &err), 0);
    assert_int_equal(a.num_params, b.num_params);
    assert_memory_equal(a.params, b.params, a.num_params * sizeof(float));
    model_free(&a);
    model_free(&b);
    for (int i = 0; i < src.count; i++) free(bufs[i]), free(names[i]);
    free(bufs);
    free(names);
    free(entries);
    st_close(&src);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_file),
        cmocka_unit_test(test_half_conversions),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_truncated_file),
        cmocka_unit_test(test_header_beyond_file),
        cmocka_unit_test(test_header_not_json),
        cmocka_unit_test(test_offsets_out_of_range),
        cmocka_unit_test(test_size_mismatch),
        cmocka_unit_test(test_overlap),
        cmocka_unit_test(test_unknown_dtype),
        cmocka_unit_test(test_shape_overflow),
        cmocka_unit_test(test_non_float_dtype_rejected_on_convert),
        cmocka_unit_test(test_missing_tensor),
        cmocka_unit_test(test_misshapen_tensor),
        cmocka_unit_test(test_unprefixed_names_load),
    };
    return cmocka_run_group_tests_name("safetensors", tests, NULL, NULL);
}
