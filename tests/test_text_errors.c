/* Character and word error rates (text/text_errors.h): hand-computed edit distances (insertions,
 * deletions, substitutions, empty texts, multibyte and combining characters, invalid UTF-8, white
 * space), and the library's distance against a full-table Levenshtein written here on random
 * strings. */
#include "tests/testutil.h"

#include <stdlib.h>
#include <string.h>

#include "text/text_errors.h"

static text_errors count(const char *ref, const char *hyp) {
    text_errors e;
    vit_error err = {{0}};
    if (text_errors_count(ref, strlen(ref), hyp, strlen(hyp), &e, &err) != 0)
        fail_msg("text_errors_count(\"%s\", \"%s\"): %s", ref, hyp, err.msg);
    return e;
}

/* char edits, true characters, word edits, true words of ref -> hyp. */
static void expect(const char *ref, const char *hyp, long ce, long c, long we, long w) {
    const text_errors e = count(ref, hyp);
    if (e.char_edits != ce || e.chars != c || e.word_edits != we || e.words != w)
        fail_msg("\"%s\" -> \"%s\": got %ld/%ld chars, %ld/%ld words; want %ld/%ld, %ld/%ld", ref,
                 hyp, e.char_edits, e.chars, e.word_edits, e.words, ce, c, we, w);
}

static void test_edits(void **state) {
    (void)state;
    expect("kitten", "sitting", 3, 6, 1, 1); /* k->s, e->i, +g */
    expect("same text", "same text", 0, 9, 0, 2);
    expect("abc", "abxc", 1, 3, 1, 1);    /* one insertion */
    expect("abxc", "abc", 1, 4, 1, 1);    /* one deletion */
    expect("abc", "", 3, 3, 1, 1);        /* everything deleted */
    expect("ab cd", "cd ab", 4, 5, 2, 2); /* 4 substitutions beat 3 + 3 moves */
    expect("a b c", "c b a", 2, 5, 2, 3); /* two substitutions either way */
    expect("the cat sat on the mat", "the cat sat on mat", 4, 22, 1, 6); /* "the " dropped */
    expect("a a a a", "a a b a", 1, 7, 1, 4);                            /* repeated words */
    expect("one two", "one two three", 6, 7, 1, 2);                      /* " three" inserted */
}

static void test_empty(void **state) {
    (void)state;
    expect("", "", 0, 0, 0, 0);
    expect("", "abc", 3, 0, 1, 0);
    expect("   ", " \t ", 0, 0, 0, 0); /* white space only is empty */
    text_errors none = count("", ""), some = count("", "x");
    assert_true(text_errors_cer(&none) == 0.0 && text_errors_wer(&none) == 0.0);
    assert_true(text_errors_cer(&some) == 1.0 && text_errors_wer(&some) == 1.0);
}

static void test_multibyte(void **state) {
    (void)state;
    expect("café", "cafe", 1, 4, 1, 1); /* é is one code point of two bytes */
    expect("naïve café", "naive cafe", 2, 10, 2, 2);
    expect("€5 £3", "£5 €3", 2, 5, 2, 2); /* three-byte €, two-byte £ */
    expect("é", "e\xcc\x81", 2, 1, 1, 1); /* precomposed vs e + U+0301: not normalised */
    expect("日本語", "日本", 1, 3, 1, 1);
    expect("a\xff"
           "b",
           "a\xfe"
           "b",
           0, 3, 0, 1); /* each invalid byte is one U+FFFD */
    expect("a\xe2\x82"
           "b",
           "a?b", 1, 3, 1, 1); /* a cut three-byte sequence: one U+FFFD */
}

static void test_white_space(void **state) {
    (void)state;
    expect("a  b\t c ", "a b c", 0, 5, 0, 3);
    expect("  hello\n", "hello", 0, 5, 0, 1);
    expect("a\xc2\xa0"
           "b",
           "a b", 0, 3, 0, 2); /* no-break space */
    expect("a\xe2\x80\x83"
           "b",
           "a\fb", 0, 3, 0, 2);      /* em space, form feed */
    expect("ab", "a b", 1, 2, 2, 1); /* a space inserted is an edit */
    assert_true(text_is_space(0x3000) && text_is_space(0x85) && !text_is_space(0x200B));
}

static void test_rates_and_sums(void **state) {
    (void)state;
    text_errors total = {0};
    const text_errors a = count("kitten", "sitting"), b = count("the cat", "the hat");
    text_errors_add(&total, &a);
    text_errors_add(&total, &b);
    assert_int_equal(total.char_edits, 4);
    assert_int_equal(total.chars, 13);
    assert_int_equal(total.word_edits, 2);
    assert_int_equal(total.words, 3);
    assert_true(text_errors_cer(&total) == 4.0 / 13.0);
    assert_true(text_errors_wer(&total) == 2.0 / 3.0);
}

static void test_too_long(void **state) {
    (void)state;
    const size_t n = TEXT_ERRORS_MAX_BYTES + 1;
    char *big = malloc(n + 1);
    memset(big, 'a', n);
    big[n] = 0;
    text_errors e;
    vit_error err = {{0}};
    assert_int_equal(text_errors_count(big, n, "a", 1, &e, &err), -1);
    assert_non_null(strstr(err.msg, "too long"));
    free(big);
}

/* The distance by the whole (n+1) x (m+1) table, as textbooks write it. */
static long full_table(const uint32_t *a, size_t n, const uint32_t *b, size_t m) {
    long *d = malloc((n + 1) * (m + 1) * sizeof *d);
    for (size_t i = 0; i <= n; i++) d[i * (m + 1)] = (long)i;
    for (size_t j = 0; j <= m; j++) d[j] = (long)j;
    for (size_t i = 1; i <= n; i++)
        for (size_t j = 1; j <= m; j++) {
            long best = d[(i - 1) * (m + 1) + j - 1] + (a[i - 1] != b[j - 1]);
            if (d[(i - 1) * (m + 1) + j] + 1 < best) best = d[(i - 1) * (m + 1) + j] + 1;
            if (d[i * (m + 1) + j - 1] + 1 < best) best = d[i * (m + 1) + j - 1] + 1;
            d[i * (m + 1) + j] = best;
        }
    const long r = d[n * (m + 1) + m];
    free(d);
    return r;
}

static void test_random_against_table(void **state) {
    (void)state;
    test_seed(7);
    uint32_t a[40], b[40];
    long row[41];
    for (int t = 0; t < 2000; t++) {
        const size_t n = (size_t)test_uniform(0, 40), m = (size_t)test_uniform(0, 40);
        const float alphabet = t % 2 ? 3 : 26; /* small alphabets: many equal symbols */
        for (size_t i = 0; i < n; i++) a[i] = (uint32_t)test_uniform(0, alphabet);
        for (size_t j = 0; j < m; j++) b[j] = (uint32_t)test_uniform(0, alphabet);
        assert_int_equal(text_edit_distance(a, n, b, m, row), full_table(a, n, b, m));
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_edits),
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_multibyte),
        cmocka_unit_test(test_white_space),
        cmocka_unit_test(test_rates_and_sums),
        cmocka_unit_test(test_too_long),
        cmocka_unit_test(test_random_against_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
