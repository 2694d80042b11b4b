/* safetensors validation (docs/SPEC.md §3) and model loading errors: each bad file is a clear
 * error. */
#include "tests/testutil.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "vit/base/file.h"
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

/* st_open and st_open_lazy (the same validation of the header) refuse path with needle. */
static void expect_open_error(const char *path, const char *needle) {
    for (int lazy = 0; lazy < 2; lazy++) {
        st_file f;
        vit_error err = {0};
        assert_int_equal((lazy ? st_open_lazy : st_open)(path, &f, &err), -1);
        if (!lazy) print_message("  %s\n", err.msg);
        assert_non_null(strstr(err.msg, path));
        if (!strstr(err.msg, needle)) fail_msg("expected '%s' in '%s'", needle, err.msg);
    }
}

/* st_open_lazy: the tensor table as st_open's, each tensor's bytes only once st_read has read
 * them (zeros before), and a file cut short after opening an error, not a signal. */
static void test_lazy_read(void **state) {
    (void)state;
    const char *path = make_file("lazy.safetensors",
                                 "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                                 "\"b\":{\"dtype\":\"F16\",\"shape\":[3],\"data_offsets\":[8,14]}}",
                                 14);
    st_file whole, lazy;
    vit_error err = {0};
    assert_int_equal(st_open(path, &whole, &err), 0);
    assert_int_equal(st_open_lazy(path, &lazy, &err), 0);
    assert_int_equal(lazy.count, 2);
    const st_tensor *a = st_find(&lazy, "a"), *b = st_find(&lazy, "b");
    assert_non_null(a);
    assert_non_null(b);
    assert_int_equal(b->numel, 3);
    const uint8_t zeros[8] = {0};
    assert_memory_equal(a->data, zeros, 8); /* not read yet */
    assert_int_equal(st_read(&lazy, a, &err), 0);
    assert_memory_equal(a->data, st_find(&whole, "a")->data, 8);
    assert_memory_equal(b->data, zeros, 6);
    assert_int_equal(st_read(&whole, st_find(&whole, "b"), &err), 0); /* nothing to do */
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(truncate(path, st.st_size - 3), 0); /* into b's bytes */
    assert_int_equal(st_read(&lazy, b, &err), -1);
    print_message("  %s\n", err.msg);
    assert_non_null(strstr(err.msg, path));
    assert_non_null(strstr(err.msg, "changed while it was read"));
    st_close(&lazy);
    st_close(&whole);
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
    st_entry entries[2] = {{"x.weight", 2, {2, 3}, a, ST_F32}, {"y", 1, {1}, b, ST_F32}};
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
             MICRO_A "/config.json", dir);
    assert_int_equal(system(cmd), 0);
    st_file src;
    vit_error err = {0};
    assert_int_equal(st_open(MICRO_A "/model.safetensors", &src, &err), 0);
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
    const char *dir = model_dir_with("missing", "vit.encoder.layer.1.output.dense.bias", NULL);
    model m;
    vit_error err = {0};
    assert_int_equal(model_load(&m, dir, &err), -1);
    print_message("  %s\n", err.msg);
    assert_non_null(strstr(err.msg, "missing tensor 'vit.encoder.layer.1.output.dense.bias'"));
}

static void test_misshapen_tensor(void **state) {
    (void)state;
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
    /* A bare checkpoint: same tensors without "vit." loads to identical parameters. */
    st_file src;
    vit_error err = {0};
    assert_int_equal(st_open(MICRO_A "/model.safetensors", &src, &err), 0);
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
    assert_int_equal(model_load(&b, MICRO_A, &err), 0);
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

/* float32 -> float16 / bfloat16, cases worked out by hand from the IEEE formats: rounding to
 * nearest with ties to even, overflow, subnormals, signed zero, NaN. */
/* True when all n floats at p are zero. */
static int all_zero(const float *p, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (p[i] != 0) return 0;
    return 1;
}

/* model_load_lazy: the weight matrices not read at load, everything else read; model_prepare
 * reads the matrices it prepares, model_read_rest the others, to the very parameters model_load
 * gives; a file cut short meanwhile is an error naming it. */
static void test_lazy_model_load(void **state) {
    (void)state;
    const char *dir = model_dir_with("lazy", NULL, NULL);
    model whole, lazy;
    vit_error err = {0};
    assert_int_equal(model_load(&whole, dir, &err), 0);
    assert_int_equal(model_load_lazy(&lazy, dir, &err), 0);
    assert_int_equal(lazy.num_params, whole.num_params);
    const size_t D = (size_t)lazy.cfg.hidden_size;
    assert_true(all_zero(lazy.layers[0].qkv_w, 3 * D * D)); /* a matrix: not read yet */
    assert_true(all_zero(lazy.head_w, D * (size_t)lazy.cfg.num_labels));
    assert_memory_equal(lazy.pos_embed, whole.pos_embed, sizeof(float) * D); /* the rest: read */
    assert_memory_equal(lazy.final_ln_w, whole.final_ln_w, sizeof(float) * D);
    assert_int_equal(
        model_prepare(&lazy, GEMM_OPENBLAS, PRECISION_FP32, 1, model_vit_tokens(&lazy, 0), &err),
        0);
    assert_memory_equal(lazy.layers[0].qkv_w, whole.layers[0].qkv_w, sizeof(float) * 3 * D * D);
    assert_memory_equal(lazy.head_w, whole.head_w, sizeof(float) * D * lazy.cfg.num_labels);
    assert_int_equal(model_read_rest(&lazy, &err), 0);
    assert_memory_equal(lazy.params, whole.params, sizeof(float) * whole.num_params);
    model_free(&lazy);

    assert_int_equal(model_load_lazy(&lazy, dir, &err), 0);
    char path[600];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(truncate(path, st.st_size / 2), 0);
    assert_int_equal(model_read_rest(&lazy, &err), -1);
    print_message("  %s\n", err.msg);
    assert_non_null(strstr(err.msg, path));
    assert_non_null(strstr(err.msg, "changed while it was read"));
    model_free(&lazy);
    model_free(&whole);
}

static void test_half_rounding(void **state) {
    (void)state;
    const struct {
        float x;
        uint16_t f16, bf16;
    } cases[] = {
        {1.0f, 0x3c00, 0x3f80},
        {-2.0f, 0xc000, 0xc000},
        {65504.0f, 0x7bff, 0x4780},     /* the largest half (bf16: 2^16, up) */
        {65519.0f, 0x7bff, 0x4780},     /* below the midpoint to 65536: stays finite */
        {65520.0f, 0x7c00, 0x4780},     /* the midpoint: rounds to infinity */
        {0x1p-24f, 0x0001, 0x3380},     /* the smallest subnormal half */
        {0x1p-25f, 0x0000, 0x3300},     /* half of it: a tie, to even (zero) */
        {0x3p-25f, 0x0002, 0x33c0},     /* 1.5 units: a tie, to even (2) */
        {0x1.002p0f, 0x3c00, 0x3f80},   /* 1 + 2^-11: a tie, to even */
        {0x1.006p0f, 0x3c02, 0x3f80},   /* 1 + 3·2^-11: a tie, to even (up) */
        {0x1.ffcp-15f, 0x0400, 0x3880}, /* rounds up into the smallest normal half */
        {-0.0f, 0x8000, 0x8000},
        {0x1.0101p0f, 0x3c04, 0x3f81}, /* bf16: 1 + 2^-8 + 2^-16, above the tie: up */
        {0x1.01p0f, 0x3c04, 0x3f80},   /* bf16: 1 + 2^-8, a tie, to even (down) */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint16_t h, b;
        st_f32_to_f16(&h, &cases[i].x, 1);
        st_f32_to_bf16(&b, &cases[i].x, 1);
        if (h != cases[i].f16 || b != cases[i].bf16)
            fail_msg("%a: f16 %04x (want %04x), bf16 %04x (want %04x)", (double)cases[i].x, h,
                     cases[i].f16, b, cases[i].bf16);
    }
    const float nan = NAN, inf = INFINITY;
    uint16_t h, b;
    st_f32_to_f16(&h, &nan, 1);
    st_f32_to_bf16(&b, &nan, 1);
    assert_true((h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0);
    assert_true((b & 0x7f80) == 0x7f80 && (b & 0x7f) != 0);
    st_f32_to_f16(&h, &inf, 1);
    assert_int_equal(h, 0x7c00);
}

/* convert: F32 -> F16 -> F32 -> F16 gives the same bytes (F16 values are exact in F32), and the
 * F16 model loads with every weight equal to its F32 value rounded to half. */
static void test_convert_round_trip(void **state) {
    (void)state;
    char src[4096], a[4200], b[4200], c[4200], pa[4300], pc[4300];
    snprintf(src, sizeof src, "%s", MICRO_A);
    snprintf(a, sizeof a, "%s/conv-f16", test_tmpdir());
    snprintf(b, sizeof b, "%s/conv-f32", test_tmpdir());
    snprintf(c, sizeof c, "%s/conv-f16-again", test_tmpdir());
    vit_error err = {0};
    if (model_dir_convert(src, a, ST_F16, &err) != 0 ||
        model_dir_convert(a, b, ST_F32, &err) != 0 || model_dir_convert(b, c, ST_F16, &err) != 0)
        fail_msg("%s", err.msg);
    snprintf(pa, sizeof pa, "%s/model.safetensors", a);
    snprintf(pc, sizeof pc, "%s/model.safetensors", c);
    size_t na, nc;
    uint8_t *fa = read_whole_file(pa, &na), *fc = read_whole_file(pc, &nc);
    assert_int_equal(na, nc);
    assert_memory_equal(fa, fc, na);
    free(fa), free(fc);
    model full, half;
    if (model_load(&full, src, &err) != 0 || model_load(&half, a, &err) != 0)
        fail_msg("%s", err.msg);
    assert_int_equal(full.num_params, half.num_params);
    for (size_t i = 0; i < full.num_params; i++) {
        uint16_t want, got; /* the loaded float is exactly the half: it converts back unchanged */
        st_f32_to_f16(&want, &full.params[i], 1);
        st_f32_to_f16(&got, &half.params[i], 1);
        if (got != want)
            fail_msg("parameter %zu: %g loads as %g", i, full.params[i], half.params[i]);
    }
    model_free(&full), model_free(&half);
    assert_int_equal(model_dir_convert(a, a, ST_F16, &err), -1);
    assert_non_null(strstr(err.msg, "the output directory is the input directory"));
}

/* ---- model_dir_average ---- */

/* A model folder for averaging: config.json, and model.safetensors with "w" (F32 [2, cols]: i +
 * shift), "h" (F16 [4]: i/4 - shift) and "ids" (I64 [3]: 0, 1, last). */
static const char *soup_dir(const char *name, float shift, int cols, int64_t last) {
    static char dirs[8][4200];
    static int next;
    char *dir = dirs[next++ % 8];
    snprintf(dir, 4200, "%s/%s", test_tmpdir(), name);
    mkdir(dir, 0755);
    char path[4300];
    snprintf(path, sizeof path, "%s/config.json", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("{\"model_type\": \"vit\"}\n", f);
    fclose(f);
    float w[8], hf[4];
    uint16_t h[4];
    for (int i = 0; i < 2 * cols; i++) w[i] = (float)i + shift;
    for (int i = 0; i < 4; i++) hf[i] = (float)i / 4 - shift;
    st_f32_to_f16(h, hf, 4);
    const int64_t ids[3] = {0, 1, last};
    const st_entry e[] = {
        {"w", 2, {2, cols}, w, ST_F32}, {"h", 1, {4}, h, ST_F16}, {"ids", 1, {3}, ids, ST_I64}};
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    vit_error err;
    if (st_write_f32(path, e, 3, &err) != 0) fail_msg("%s", err.msg);
    return dir;
}

/* The mean of three models, each float tensor against the mean computed here (the F16 one from
 * its half values), stored F32 and F16; the integer tensor copied; mismatched models refused with
 * the file and the tensor named. */
static void test_model_average(void **state) {
    (void)state;
    const char *in[3] = {soup_dir("soup-a", 0.1f, 3, 7), soup_dir("soup-b", 0.7f, 3, 7),
                         soup_dir("soup-c", -2.5f, 3, 7)};
    char out[4200], path[4300];
    snprintf(out, sizeof out, "%s/soup-out", test_tmpdir());
    vit_error err = {0};
    const st_dtype dtypes[] = {ST_F32, ST_F16};
    for (int k = 0; k < 2; k++) {
        if (model_dir_average(in, 3, out, dtypes[k], &err) != 0) fail_msg("%s", err.msg);
        snprintf(path, sizeof path, "%s/model.safetensors", out);
        st_file f;
        if (st_open(path, &f, &err) != 0) fail_msg("%s", err.msg);
        const st_tensor *w = st_find(&f, "w"), *h = st_find(&f, "h"), *ids = st_find(&f, "ids");
        assert_true(w && h && ids);
        assert_int_equal(w->dtype, dtypes[k]);
        float got[6], want[6];
        assert_int_equal(st_to_f32(&f, w, got, &err), 0);
        for (int i = 0; i < 6; i++) {
            want[i] = (float)(((double)(i + 0.1f) + (double)(i + 0.7f) + (double)(i - 2.5f)) / 3);
            if (dtypes[k] == ST_F16) { /* rounded to half as st_f32_to_f16 does */
                uint16_t half;
                st_f32_to_f16(&half, &want[i], 1);
                float back[1];
                st_tensor one = {.dtype = ST_F16, .numel = 1, .nbytes = 2, .data = &half};
                assert_int_equal(st_to_f32(&f, &one, back, &err), 0);
                want[i] = back[0];
            }
            if (got[i] != want[i]) fail_msg("w[%d]: %.9g, expected %.9g", i, got[i], want[i]);
        }
        assert_int_equal(st_to_f32(&f, h, got, &err), 0);
        for (int i = 0; i < 4; i++) { /* the inputs' halves: i/4 - shift rounded to F16 */
            double sum = 0;
            const float shifts[] = {0.1f, 0.7f, -2.5f};
            for (int m = 0; m < 3; m++) {
                uint16_t half;
                const float v = (float)i / 4 - shifts[m];
                st_f32_to_f16(&half, &v, 1);
                float back[1];
                st_tensor one = {.dtype = ST_F16, .numel = 1, .nbytes = 2, .data = &half};
                assert_int_equal(st_to_f32(&f, &one, back, &err), 0);
                sum += back[0];
            }
            float mean = (float)(sum / 3);
            if (dtypes[k] == ST_F16) {
                uint16_t half;
                st_f32_to_f16(&half, &mean, 1);
                st_tensor one = {.dtype = ST_F16, .numel = 1, .nbytes = 2, .data = &half};
                assert_int_equal(st_to_f32(&f, &one, &mean, &err), 0);
            }
            if (got[i] != mean) fail_msg("h[%d]: %.9g, expected %.9g", i, got[i], mean);
        }
        assert_int_equal(ids->dtype, ST_I64);
        int64_t id[3];
        memcpy(id, ids->data, sizeof id);
        assert_true(id[0] == 0 && id[1] == 1 && id[2] == 7);
        st_close(&f);
    }
    snprintf(path, sizeof path, "%s/config.json", out);
    assert_int_equal(access(path, R_OK), 0);
    /* a refused average writes nothing: out's own files stay as they are, and a new folder is not
     * left behind */
    FILE *marked = fopen(path, "w");
    assert_non_null(marked);
    fputs("{\"model_type\": \"marked\"}\n", marked);
    fclose(marked);
    char fresh[4200];
    snprintf(fresh, sizeof fresh, "%s/soup-refused", test_tmpdir());
    /* refused: another shape, another integer tensor, one model, the output among the inputs */
    const char *wide[2] = {in[0], soup_dir("soup-wide", 0, 4, 7)};
    assert_int_equal(model_dir_average(wide, 2, out, ST_F32, &err), -1);
    print_message("  %s\n", err.msg);
    assert_non_null(strstr(err.msg, "soup-wide/model.safetensors: tensor 'w' is [2, 4]"));
    assert_int_equal(model_dir_average(wide, 2, fresh, ST_F32, &err), -1);
    assert_int_not_equal(access(fresh, F_OK), 0);
    size_t size;
    char *kept = vit_read_file(path, 1 << 20, &size, &err);
    assert_non_null(kept);
    assert_non_null(strstr(kept, "marked"));
    free(kept);
    const char *ids8[2] = {in[0], soup_dir("soup-ids", 0, 3, 8)};
    assert_int_equal(model_dir_average(ids8, 2, out, ST_F32, &err), -1);
    assert_non_null(strstr(err.msg, "soup-ids/model.safetensors: tensor 'ids' (I64, not averaged) "
                                    "differs"));
    assert_int_equal(model_dir_average(in, 1, out, ST_F32, &err), -1);
    const char *self[2] = {in[0], out};
    assert_int_equal(model_dir_average(self, 2, out, ST_F32, &err), -1);
    assert_non_null(strstr(err.msg, "the output directory is one of the inputs"));
}

/* A model folder of config.json text beside a valid safetensors file of one tiny tensor. */
static const char *config_beside_tiny_file(const char *name, const char *config) {
    static char dir[4200];
    snprintf(dir, sizeof dir, "%s/%s", test_tmpdir(), name);
    mkdir(dir, 0755);
    char path[4300];
    snprintf(path, sizeof path, "%s/config.json", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(config, f);
    fclose(f);
    float x = 1;
    st_entry e = {"vit.embeddings.cls_token", 3, {1, 1, 1}, &x, ST_F32};
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    vit_error err;
    if (st_write_f32(path, &e, 1, &err) != 0) fail_msg("%s", err.msg);
    return dir;
}

/* A config.json alone cannot make vit allocate: a 1.2-billion-parameter config beside a file of
 * one value fails on the first tensor that does not match before the parameters exist, a larger one
 * on the limit, and a patch grid whose square would overflow on the grid. */
static void test_config_bounded_by_file(void **state) {
    (void)state;
    struct rusage before, after;
    getrusage(RUSAGE_SELF, &before);
    model m;
    vit_error err = {0};
    const char *dir = config_beside_tiny_file(
        "huge", "{\"model_type\": \"vit\", \"architectures\": [\"ViTForImageClassification\"], "
                "\"hidden_size\": 2048, \"num_hidden_layers\": 24, "
                "\"num_attention_heads\": 16, \"intermediate_size\": 8192}");
    assert_int_equal(model_load(&m, dir, &err), -1);
    print_message("  %s\n", err.msg);
    assert_non_null(strstr(err.msg, "tensor 'vit.embeddings.cls_token' has shape [1, 1, 1]"));
    getrusage(RUSAGE_SELF, &after);
    assert_true(after.ru_maxrss - before.ru_maxrss < 200 * 1024); /* kB: not the 4.8 GB */
    dir = config_beside_tiny_file(
        "too-big", "{\"model_type\": \"vit\", \"hidden_size\": 8192, \"num_hidden_layers\": 48, "
                   "\"num_attention_heads\": 16, \"intermediate_size\": 32768}");
    assert_int_equal(model_load(&m, dir, &err), -1);
    print_message("  %s\n", err.msg);
    assert_non_null(strstr(err.msg, "more than the limit"));
    dir = config_beside_tiny_file("grid", "{\"model_type\": \"vit\", \"image_size\": 65536, "
                                          "\"patch_size\": 1, \"hidden_size\": 8, "
                                          "\"num_attention_heads\": 1}");
    assert_int_equal(model_load(&m, dir, &err), -1);
    print_message("  %s\n", err.msg);
    assert_non_null(strstr(err.msg, "65536 patches per side, more than the limit of 128"));
}

/* ---- model_bind: a view has every tensor pointer of its layout ---- */

/* The offsets (in floats) of the words in [p, p + bytes) that point into [base, base + n), sorted
 * into out (at most cap); *stray counts the words that point into [other, other + n) instead.
 * Reading the struct's memory word by word finds every pointer field, named or not yet named, so
 * a tensor pointer added to `model` or `encoder_layer` and forgotten in model_bind is caught. */
static int pointed_offsets(const void *p, size_t bytes, const float *base, const float *other,
                           size_t n, size_t *out, int count, int cap, int *stray) {
    for (size_t at = 0; at + sizeof(void *) <= bytes; at += sizeof(void *)) {
        const float *word;
        memcpy(&word, (const char *)p + at, sizeof word);
        if (other && word >= other && word < other + n) ++*stray;
        if (!(word >= base && word < base + n)) continue;
        assert_true(count < cap);
        out[count++] = (size_t)(word - base);
    }
    return count;
}

/* Every tensor pointer of m (its fields, its layers', its probe's, its relative tables') as an
 * offset into base's block of m->num_params floats; *stray: those into other's block. */
static int model_offsets(const model *m, const float *base, const float *other, size_t *out,
                         int cap, int *stray) {
    const size_t n = m->num_params;
    const int L = m->cfg.num_layers;
    int k = pointed_offsets(m, sizeof *m, base, other, n, out, 0, cap, stray);
    if (m->layers)
        k = pointed_offsets(m->layers, (size_t)L * sizeof *m->layers, base, other, n, out, k, cap,
                            stray);
    if (m->rel_table)
        k = pointed_offsets(m->rel_table, (size_t)L * sizeof *m->rel_table, base, other, n, out, k,
                            cap, stray);
    return k;
}

static int compare_sizes(const void *a, const void *b) {
    const size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return (x > y) - (x < y);
}

/* One tower of dir: the view's pointers are the layout's, rebased, and none is left pointing at
 * the weights (gradients written there would change the model); the sinusoid table, computed at
 * load and never trained, is shared. */
static void expect_bind_complete(const char *dir, config_tower tower) {
    model m, view;
    vit_error err = {0};
    if (model_load_tower(&m, dir, tower, &err) != 0) fail_msg("%s", err.msg);
    float *block = test_alloc_floats(m.num_params);
    assert_int_equal(model_bind(&view, &m, block), 0);
    enum { CAP = 4096 };
    static size_t want[CAP], got[CAP];
    int stray = 0;
    const int nw = model_offsets(&m, m.params, NULL, want, CAP, &stray);
    const int ng = model_offsets(&view, block, m.params, got, CAP, &stray);
    if (stray) fail_msg("%s: %d pointers of the bound view still point at the weights", dir, stray);
    qsort(want, (size_t)nw, sizeof *want, compare_sizes);
    qsort(got, (size_t)ng, sizeof *got, compare_sizes);
    assert_int_equal(ng, nw);
    assert_memory_equal(got, want, (size_t)nw * sizeof *want);
    /* every tensor of the layout begins at or after a pointer the view has */
    for (int i = 0; i < m.num_entries; i++)
        if (nw == 0 || m.entries[i].offset < want[0])
            fail_msg("%s: %s not reachable", dir, m.entries[i].name);
    assert_ptr_equal(view.pos_table, m.pos_table);
    model_unbind(&view);
    free(block);
    model_free(&m);
}

/* Every model folder of tests/data, both towers (a one-model folder gives its model twice). */
static void test_bind_covers_every_tensor(void **state) {
    (void)state;
    DIR *d = opendir("tests/data");
    assert_non_null(d);
    int folders = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        char path[600];
        snprintf(path, sizeof path, "tests/data/%s/model.safetensors", e->d_name);
        if (e->d_name[0] == '.' || access(path, R_OK) != 0) continue;
        snprintf(path, sizeof path, "tests/data/%s", e->d_name);
        expect_bind_complete(path, TOWER_IMAGE);
        expect_bind_complete(path, TOWER_TEXT);
        folders++;
    }
    closedir(d);
    print_message("  %d model folders\n", folders);
    assert_true(folders >= 20);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_file),
        cmocka_unit_test(test_half_conversions),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_lazy_read),
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
        cmocka_unit_test(test_lazy_model_load),
        cmocka_unit_test(test_half_rounding),
        cmocka_unit_test(test_convert_round_trip),
        cmocka_unit_test(test_model_average),
        cmocka_unit_test(test_config_bounded_by_file),
        cmocka_unit_test(test_bind_covers_every_tensor),
    };
    return cmocka_run_group_tests_name("safetensors", tests, NULL, NULL);
}
