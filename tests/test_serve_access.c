/* vit serve's access rules (vit/serve/access.h): the API keys a request's Authorization header is
 * checked against (Bearer tokens one byte off, prefixes, extensions, tokens past the length bound,
 * other schemes), the keys and origins refused at start, and which origin a CORS answer names. The
 * HTTP side (401, WWW-Authenticate, preflights) is test_serve_http's. */
#include "tests/testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vit/serve/access.h"

#define KEY "vit-test-key-0123456789abcdef"

static serve_auth check(const serve_access *a, const char *fmt, const char *token) {
    char header[1024];
    snprintf(header, sizeof header, fmt, token);
    return serve_access_check(a, header);
}

static serve_access *with_keys(const char *const *keys, int n) {
    serve_access *a = serve_access_create();
    assert_non_null(a);
    vit_error err = {0};
    for (int i = 0; i < n; i++) assert_int_equal(serve_access_add_key(a, keys[i], &err), 0);
    assert_int_equal(serve_access_num_keys(a), n);
    return a;
}

/* No keys: every request is let in, with or without a header. */
static void test_no_keys_lets_all_in(void **state) {
    (void)state;
    serve_access *a = serve_access_create();
    assert_int_equal(serve_access_check(a, NULL), SERVE_AUTH_OK);
    assert_int_equal(serve_access_check(a, "Bearer anything"), SERVE_AUTH_OK);
    assert_int_equal(serve_access_check(NULL, NULL), SERVE_AUTH_OK);
    serve_access_free(a);
}

/* The key, and nothing else: not one byte changed at either end, a prefix, the key and more, the
 * key's bytes past the length bound, another key's. */
static void test_key_matches_exactly(void **state) {
    (void)state;
    const char *keys[] = {KEY};
    serve_access *a = with_keys(keys, 1);
    assert_int_equal(check(a, "Bearer %s", KEY), SERVE_AUTH_OK);
    assert_int_equal(check(a, "bearer  %s ", KEY), SERVE_AUTH_OK); /* the scheme's case, spaces */
    assert_int_equal(check(a, "BEARER\t%s", KEY), SERVE_AUTH_OK);
    static const char *const wrong[] = {"Vit-test-key-0123456789abcdef",
                                        "vit-test-key-0123456789abcdeF",
                                        "vit-test-key-0123456789abcde",
                                        KEY "f",
                                        KEY "\x01",
                                        "v",
                                        "other"};
    for (size_t i = 0; i < sizeof wrong / sizeof wrong[0]; i++)
        if (check(a, "Bearer %s", wrong[i]) != SERVE_AUTH_WRONG) fail_msg("'%s' let in", wrong[i]);
    /* longer than any key can be: its first bytes are the key, the rest zeros in the padding */
    char *longer = calloc(SERVE_MAX_KEY_BYTES + 40, 1);
    memcpy(longer, KEY, strlen(KEY));
    memset(longer + strlen(KEY), 'x', SERVE_MAX_KEY_BYTES + 20 - strlen(KEY));
    assert_int_equal(check(a, "Bearer %s", longer), SERVE_AUTH_WRONG);
    free(longer);
    serve_access_free(a);
}

/* No header, another scheme, a scheme without a token, a token without a scheme: missing. */
static void test_missing_key(void **state) {
    (void)state;
    const char *keys[] = {KEY};
    serve_access *a = with_keys(keys, 1);
    assert_int_equal(serve_access_check(a, NULL), SERVE_AUTH_MISSING);
    static const char *const missing[] = {
        "", "Bearer", "Bearer ", "Basic dml0OnZpdA==", KEY, "Bearer" KEY, "Bearerx " KEY};
    for (size_t i = 0; i < sizeof missing / sizeof missing[0]; i++)
        if (serve_access_check(a, missing[i]) != SERVE_AUTH_MISSING)
            fail_msg("'%s' is not a missing key", missing[i]);
    serve_access_free(a);
}

/* Several keys: each lets in; the longest a key may be works too. */
static void test_several_keys(void **state) {
    (void)state;
    char longest[SERVE_MAX_KEY_BYTES + 1];
    memset(longest, 'k', SERVE_MAX_KEY_BYTES);
    longest[SERVE_MAX_KEY_BYTES] = 0;
    const char *keys[] = {KEY, "second", longest};
    serve_access *a = with_keys(keys, 3);
    for (int i = 0; i < 3; i++) assert_int_equal(check(a, "Bearer %s", keys[i]), SERVE_AUTH_OK);
    char past[SERVE_MAX_KEY_BYTES + 2]; /* the longest key and one byte more: its lengths differ */
    snprintf(past, sizeof past, "%sk", longest);
    assert_int_equal(check(a, "Bearer %s", past), SERVE_AUTH_WRONG);
    longest[SERVE_MAX_KEY_BYTES - 1] = 'j';
    assert_int_equal(check(a, "Bearer %s", longest), SERVE_AUTH_WRONG);
    assert_int_equal(check(a, "Bearer %s", "secon"), SERVE_AUTH_WRONG);
    serve_access_free(a);
}

/* Keys a header cannot carry, or over the bound, are refused with a reason that never holds the
 * key. */
static void test_bad_keys_refused(void **state) {
    (void)state;
    char over[SERVE_MAX_KEY_BYTES + 2];
    memset(over, 's', SERVE_MAX_KEY_BYTES + 1);
    over[SERVE_MAX_KEY_BYTES + 1] = 0;
    static const char *const says[] = {"an empty API key", "a space", "a space", "a space",
                                       "of 257 bytes, over the limit of 256"};
    const char *keys[] = {"", "two words", "tab\tkey", "caf\xc3\xa9-secret", over};
    serve_access *a = serve_access_create();
    for (int i = 0; i < 5; i++) {
        vit_error err = {0};
        assert_int_equal(serve_access_add_key(a, keys[i], &err), -1);
        if (!strstr(err.msg, says[i])) fail_msg("'%s' does not say '%s'", err.msg, says[i]);
        if (*keys[i] && strstr(err.msg, keys[i])) fail_msg("the key is in '%s'", err.msg);
    }
    assert_int_equal(serve_access_num_keys(a), 0);
    serve_access_free(a);
}

/* CORS: a listed origin is named back (whatever the case of its letters: scheme and host are
 * case-insensitive), others and a missing Origin get none; "*" names "*" to all. */
static void test_origins(void **state) {
    (void)state;
    serve_access *a = serve_access_create();
    vit_error err = {0};
    assert_null(serve_access_allow_origin(a, "http://localhost:3000")); /* no CORS */
    assert_int_equal(serve_access_add_origins(a, "http://localhost:3000,https://app.example", &err),
                     0);
    assert_int_equal(serve_access_add_origins(a, "null", &err), 0);
    assert_int_equal(serve_access_num_origins(a), 3);
    const char *origin = "http://localhost:3000";
    assert_ptr_equal(serve_access_allow_origin(a, origin), origin); /* the request's own bytes */
    assert_string_equal(serve_access_allow_origin(a, "HTTPS://App.Example"), "HTTPS://App.Example");
    assert_string_equal(serve_access_allow_origin(a, "null"), "null");
    static const char *const others[] = {
        "http://localhost:3001", "https://localhost:3000", "http://localhost:3000.evil.example",
        "http://localhost",      "https://app.example/",   ""};
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++)
        if (serve_access_allow_origin(a, others[i])) fail_msg("'%s' allowed", others[i]);
    assert_null(serve_access_allow_origin(a, NULL));
    assert_int_equal(serve_access_add_origins(a, "*", &err), 0);
    assert_string_equal(serve_access_allow_origin(a, "http://anywhere.example"), "*");
    assert_string_equal(serve_access_allow_origin(a, NULL), "*");
    serve_access_free(a);
}

/* Origins as a browser never sends them: with a path or a trailing slash, without a scheme, an
 * empty one in a list. */
static void test_bad_origins_refused(void **state) {
    (void)state;
    static const char *const bad[] = {
        "http://localhost:3000/",     "localhost:3000", "http://", "://host", "1http://host",
        "http://a.example,,http://b", "http://a b",     ""};
    static const char *const says[] = {"is not an origin", "is not an origin", "is not an origin",
                                       "is not an origin", "is not an origin", "an empty origin",
                                       "is not an origin", "an empty origin"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        serve_access *a = serve_access_create();
        vit_error err = {0};
        assert_int_equal(serve_access_add_origins(a, bad[i], &err), -1);
        if (!strstr(err.msg, says[i]))
            fail_msg("'%s': '%s' does not say '%s'", bad[i], err.msg, says[i]);
        serve_access_free(a);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_keys_lets_all_in), cmocka_unit_test(test_key_matches_exactly),
        cmocka_unit_test(test_missing_key),         cmocka_unit_test(test_several_keys),
        cmocka_unit_test(test_bad_keys_refused),    cmocka_unit_test(test_origins),
        cmocka_unit_test(test_bad_origins_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
