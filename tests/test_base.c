/* vit/base: the line-list reader against hand-written files, the block allocator's layout, the
 * atomic writer's all-or-nothing promise, the thread scope's restore, the generator's moments. */
#include "tests/testutil.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vit/base/alloc.h"
#include "vit/base/base64.h"
#include "vit/base/bytes.h"
#include "vit/base/file.h"
#include "vit/base/rng.h"
#include "vit/base/strlist.h"
#include "vit/base/threads.h"

static void expect_lines(const strlist *l, const char *const *want, int n) {
    assert_int_equal(l->count, n);
    for (int i = 0; i < n; i++) {
        assert_string_equal(l->lines[i], want[i]);
        assert_int_equal(l->lengths[i], strlen(want[i]));
    }
}

static void test_strlist(void **state) {
    (void)state;
    vit_error err = {0};
    strlist l;
    /* every line ending; no empty line after the last ending; a last line without one */
    const char text[] = "a\nb b\r\nc\r\r\nlast";
    const char *path = write_temp_file("lines.txt", text, sizeof text - 1);
    assert_int_equal(strlist_read(&l, path, 1 << 20, 0, &err), 0);
    expect_lines(&l, (const char *const[]){"a", "b b", "c", "", "last"}, 5);
    strlist_free(&l);
    /* trimming (a byte-order mark at the start only), blank lines kept or skipped */
    const char names[] = "\xEF\xBB\xBF  tench \n\n\t goldfish\t\n \xEF\xBB\xBF x\n";
    path = write_temp_file("names.txt", names, sizeof names - 1);
    assert_int_equal(strlist_read(&l, path, 1 << 20, STRLIST_TRIM, &err), 0);
    expect_lines(&l, (const char *const[]){"tench", "", "goldfish", "\xEF\xBB\xBF x"}, 4);
    strlist_free(&l);
    assert_int_equal(strlist_read(&l, path, 1 << 20, STRLIST_TRIM | STRLIST_SKIP_BLANK, &err), 0);
    expect_lines(&l, (const char *const[]){"tench", "goldfish", "\xEF\xBB\xBF x"}, 3);
    strlist_free(&l);
    /* an empty file has no lines */
    path = write_temp_file("empty.txt", "", 0);
    assert_int_equal(strlist_read(&l, path, 1 << 20, 0, &err), 0);
    assert_int_equal(l.count, 0);
    strlist_free(&l);
    /* a NUL byte is an error naming its line, as is a file over the limit */
    const char nul[] = "one\ntw\0o\nthree\n";
    path = write_temp_file("nul.txt", nul, sizeof nul - 1);
    assert_int_equal(strlist_read(&l, path, 1 << 20, 0, &err), -1);
    assert_non_null(strstr(err.msg, "line 2 contains a NUL byte"));
    assert_int_equal(strlist_read(&l, path, 4, 0, &err), -1);
    assert_non_null(strstr(err.msg, "nul.txt"));
}

static void test_block_allocator(void **state) {
    (void)state;
    const size_t sizes[] = {3, 0, 17, 16};
    float *a, *b, *c, *d;
    float **fields[] = {&a, &b, &c, &d};
    size_t set;
    float *block = alloc_float_sets(2, 4, sizes, fields, &set);
    assert_non_null(block);
    assert_int_equal(set, 16 + 0 + 32 + 16); /* each array rounded up to 16 floats */
    assert_ptr_equal(a, block);
    assert_ptr_equal(c, block + 16);
    assert_ptr_equal(d, block + 48);
    for (int i = 0; i < 4; i++) assert_int_equal((uintptr_t)*fields[i] % 64, 0);
    memset(block, 0, sizeof(float) * set * 2); /* both copies are there (ASan checks) */
    free(block);
    uint8_t *x, *y;
    uint8_t **bytes[] = {&x, &y};
    uint8_t *bb = alloc_byte_block(2, (const size_t[]){65, 1}, bytes);
    assert_non_null(bb);
    assert_ptr_equal(y, x + 128);
    memset(bb, 1, 129);
    free(bb);
}

static void test_atomic_file(void **state) {
    (void)state;
    vit_error err = {0};
    char path[4096], tmp[4200];
    snprintf(path, sizeof path, "%s/atomic.txt", test_tmpdir());
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    assert_int_equal(write_file_atomic(path, "first", 5, &err), 0);
    /* abandoned: the old file stays whole and no temporary file is left */
    atomic_file a;
    assert_int_equal(atomic_file_open(&a, path, &err), 0);
    fputs("half", a.f);
    atomic_file_abort(&a);
    size_t size;
    char *got = (char *)read_whole_file(path, &size);
    assert_string_equal(got, "first");
    free(got);
    assert_int_equal(access(tmp, F_OK), -1);
    /* a folder that does not exist: an error naming it */
    assert_int_equal(write_file_atomic("/nonexistent/x.txt", "x", 1, &err), -1);
    assert_non_null(strstr(err.msg, "/nonexistent/x.txt"));
}

static void test_thread_scope(void **state) {
    (void)state;
    omp_set_num_threads(3);
    threads_scope s = threads_begin(2);
    assert_int_equal(omp_get_max_threads(), 2);
    int team = 0;
#pragma omp parallel
#pragma omp single
    team = omp_get_num_threads();
    assert_int_equal(team, 2);
    threads_end(s);
    assert_int_equal(omp_get_max_threads(), 3);
    assert_int_equal(threads_resolve(5), 5);
    assert_int_equal(threads_resolve(0), 3);
}

/* 100000 normal draws: mean 0 and variance 1 within 5 standard errors; the same seed repeats. */
static void test_rng(void **state) {
    (void)state;
    uint64_t st = rng_derive(7, 1, 2), again = rng_derive(7, 1, 2);
    assert_true(st == again && st != rng_derive(7, 2, 1));
    double sum = 0, sq = 0;
    const int n = 100000;
    for (int i = 0; i < n; i++) {
        const double z = rng_normal(&st);
        sum += z;
        sq += z * z;
    }
    const double mean = sum / n, var = sq / n - mean * mean;
    assert_true(fabs(mean) < 5 / sqrt(n));
    assert_true(fabs(var - 1) < 5 * sqrt(2.0 / n));
    assert_true(rng_normal(&again) == rng_normal(&(uint64_t){rng_derive(7, 1, 2)}));
}

/* 200000 bytes appended in pieces of 1..997 equal the same bytes written in one go; a limit on
 * the capacity holds, and an append past it is refused with the buffer unchanged. */
static void test_byte_buf(void **state) {
    (void)state;
    enum { N = 200000 };
    static char want[N];
    for (int i = 0; i < N; i++) want[i] = (char)(i * 7 + i / 251);
    byte_buf b = {0};
    assert_int_equal(byte_buf_append(&b, NULL, 0, SIZE_MAX), 0);
    for (size_t at = 0, piece = 1; at < N; at += piece, piece = piece % 997 + 1) {
        if (piece > N - at) piece = N - at;
        assert_int_equal(byte_buf_append(&b, want + at, piece, SIZE_MAX), 0);
    }
    assert_int_equal(b.size, N);
    assert_true(b.cap >= N && b.cap < 2 * N + (64 << 10));
    assert_memory_equal(b.data, want, N);
    byte_buf_free(&b);
    assert_null(b.data);

    const size_t limit = 100000;
    assert_int_equal(byte_buf_append(&b, want, 70000, limit), 0);
    assert_int_equal(byte_buf_append(&b, want + 70000, 30000, limit), 0);
    assert_int_equal(b.cap, limit); /* 64 KiB doubled would be 128 KiB */
    assert_int_equal(byte_buf_append(&b, want, 1, limit), -1);
    assert_int_equal(b.size, limit);
    assert_memory_equal(b.data, want, limit);
    byte_buf_free(&b);
}

/* RFC 4648's vectors; every length 0..300 of bytes round trips, with and without padding and with
 * line breaks; what is not base64 is refused at the right offset. */
static void test_base64(void **state) {
    (void)state;
    static const char *const plain[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
    static const char *const coded[] = {"",         "Zg==",     "Zm8=",    "Zm9v",
                                        "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};
    char text[512], bytes[512];
    size_t where = 0;
    for (int i = 0; i < 7; i++) {
        assert_int_equal(base64_encoded_size(strlen(plain[i])), strlen(coded[i]));
        base64_encode(plain[i], strlen(plain[i]), text);
        assert_string_equal(text, coded[i]);
        assert_int_equal(base64_decode(coded[i], strlen(coded[i]), bytes, &where),
                         strlen(plain[i]));
        assert_memory_equal(bytes, plain[i], strlen(plain[i]));
    }
    unsigned char data[300];
    for (int i = 0; i < 300; i++) data[i] = (unsigned char)(i * 89 + 7);
    for (size_t n = 0; n <= 300; n++) {
        base64_encode(data, n, text);
        size_t len = strlen(text);
        assert_int_equal(base64_decode(text, len, bytes, &where), n);
        assert_memory_equal(bytes, data, n);
        while (len > 0 && text[len - 1] == '=') len--; /* unpadded */
        assert_int_equal(base64_decode(text, len, bytes, &where), n);
        assert_memory_equal(bytes, data, n);
    }
    const char *wrapped = "Zm9v\r\nYmFy\n"; /* as `base64` wraps its lines */
    assert_int_equal(base64_decode(wrapped, strlen(wrapped), bytes, &where), 6);
    assert_memory_equal(bytes, "foobar", 6);
    static const struct {
        const char *in;
        size_t where;
    } bad[] = {{"Z", 0},     {"Zm9vY", 4}, {"Zm*v", 2}, {"Zg=v", 3},    {"Zm9v=", 4},
               {"Zg===", 4}, {"Zm8==", 4}, {"Zm-_", 2}, {"Zm9v\x80", 4}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        where = 99;
        if (base64_decode(bad[i].in, strlen(bad[i].in), bytes, &where) != -1)
            fail_msg("'%s' decoded", bad[i].in);
        if (where != bad[i].where)
            fail_msg("'%s': refused at %zu, expected %zu", bad[i].in, where, bad[i].where);
    }
}

/* vit_zero_lazily zeroes every byte, inside pages handed back and at both unaligned ends, and
 * nothing around them; a span within one page is zeroed too. */
static void test_zero_lazily(void **state) {
    (void)state;
    const size_t n = 3 << 20;
    unsigned char *block = malloc(n);
    assert_non_null(block);
    const size_t spans[][2] = {{5, n - 17}, {4096, 8192}, {100, 200}, {0, n}};
    for (int s = 0; s < 4; s++) {
        memset(block, 0xA5, n);
        const size_t from = spans[s][0], len = spans[s][1] - from;
        vit_zero_lazily(block + from, len);
        for (size_t i = 0; i < n; i++)
            if (block[i] != (i >= from && i < from + len ? 0 : 0xA5))
                fail_msg("span %d: byte %zu is %d", s, i, block[i]);
    }
    free(block);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_strlist),     cmocka_unit_test(test_block_allocator),
        cmocka_unit_test(test_atomic_file), cmocka_unit_test(test_thread_scope),
        cmocka_unit_test(test_rng),         cmocka_unit_test(test_byte_buf),
        cmocka_unit_test(test_zero_lazily), cmocka_unit_test(test_base64),
    };
    return cmocka_run_group_tests_name("base", tests, NULL, NULL);
}
