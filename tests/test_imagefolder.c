/* ImageFolder listing, the walk, and the folder-to-label rules on hand-made cases. */
#include "tests/testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vit/data/imagefolder.h"

#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* label_of for folders against labels; returns the call's result. */
static int match(const char *const *folders, int nf, const char *const *labels, int nl,
                 int *label_of, int *by_order, vit_error *err) {
    memset(err, 0, sizeof *err);
    return imagefolder_match_labels(folders, nf, labels, nl, label_of, by_order, err);
}

static void test_image_names(void **state) {
    (void)state;
    const char *yes[] = {"a.png",   "a.PNG", "b.jpg",  "b.JpG", "c.jpeg", "c.JPEG",
                         "x.y.png", "a.gif", "a.webp", "a.tif", "a.TIFF", "a.bmp"};
    const char *no[] = {"png", ".png", "a.png.txt", "a.pn", "a.jpe", "a", "a.tga", "a.webpx"};
    for (int i = 0; i < COUNT(yes); i++) assert_true(imagefolder_is_image_name(yes[i]));
    for (int i = 0; i < COUNT(no); i++) assert_false(imagefolder_is_image_name(no[i]));
}

static void test_match_rules(void **state) {
    (void)state;
    const char *labels[] = {"tench, Tinca tinca", "great white shark", "Golden-Retriever",
                            "bat/ball",           "sea_lion",          "cat"};
    /* rule 1 exact ("cat"), rule 2 normalised ("GREAT_WHITE-shark", "golden retriever",
     * "BAT BALL", "Sea Lion"), rule 3 first name ("Tench") */
    const char *folders[] = {"BAT BALL", "GREAT_WHITE-shark", "Sea Lion", "Tench",
                             "cat",      "golden retriever"};
    int label_of[6], by_order = -1;
    vit_error err;
    assert_int_equal(match(folders, 6, labels, 6, label_of, &by_order, &err), 0);
    const int want[] = {3, 1, 4, 0, 5, 2};
    for (int i = 0; i < 6; i++) assert_int_equal(label_of[i], want[i]);
    assert_int_equal(by_order, 0);
}

static void test_match_precedence(void **state) {
    (void)state;
    /* "crane" equals label 1 exactly; rule 2 would also match "Crane" (0) if rule 1 failed. The
     * exact match must win, and "CRANE" (no exact match) then matches "Crane" and "crane" by
     * rule 2: ambiguous. */
    const char *labels[] = {"Crane", "crane", "maillot", "maillot, tank suit"};
    const char *exact[] = {"crane", "maillot"};
    int label_of[2], by_order;
    vit_error err;
    assert_int_equal(match(exact, 2, labels, 4, label_of, &by_order, &err), 0);
    assert_int_equal(label_of[0], 1);
    assert_int_equal(label_of[1], 2); /* exact beats the first name of label 3 */
    const char *upper[] = {"CRANE"};
    assert_int_equal(match(upper, 1, labels, 4, label_of, &by_order, &err), -1);
    assert_non_null(strstr(err.msg, "'CRANE'"));
    assert_non_null(strstr(err.msg, "labels 0 ('Crane') and 1 ('crane')"));
    /* First names: "Maillot" matches "maillot" by rule 2 before rule 3 could see label 3. */
    const char *first[] = {"Maillot"};
    assert_int_equal(match(first, 1, labels, 4, label_of, &by_order, &err), 0);
    assert_int_equal(label_of[0], 2);
}

static void test_match_errors(void **state) {
    (void)state;
    const char *labels[] = {"cat", "dog", "bird"};
    int label_of[4], by_order;
    vit_error err;
    /* one folder matches nothing while others do: named, even though the counts agree */
    const char *partly[] = {"cat", "dog", "lizard"};
    assert_int_equal(match(partly, 3, labels, 3, label_of, &by_order, &err), -1);
    assert_non_null(strstr(err.msg, "'lizard'"));
    /* two folders on one label */
    const char *twice[] = {"Cat", "cat"};
    assert_int_equal(match(twice, 2, labels, 3, label_of, &by_order, &err), -1);
    assert_non_null(strstr(err.msg, "'Cat'"));
    assert_non_null(strstr(err.msg, "'cat'"));
    /* nothing matches and the counts differ: no order fallback */
    const char *none[] = {"n01", "n02"};
    assert_int_equal(match(none, 2, labels, 3, label_of, &by_order, &err), -1);
    assert_non_null(strstr(err.msg, "'n01'"));
}

static void test_match_by_order(void **state) {
    (void)state;
    const char *labels[] = {"LABEL_0", "LABEL_1", "LABEL_2"};
    const char *folders[] = {"0_zero", "1_one", "2_two"};
    int label_of[3], by_order = 0;
    vit_error err;
    assert_int_equal(match(folders, 3, labels, 3, label_of, &by_order, &err), 0);
    assert_int_equal(by_order, 1);
    for (int i = 0; i < 3; i++) assert_int_equal(label_of[i], i);
}

static void test_class_map(void **state) {
    (void)state;
    /* BOM, CRLF, surrounding blanks, an empty line (index 2 unused), trailing blank lines */
    const char text[] = "\xEF\xBB\xBFn01\r\n  n02 \n\nn04\n\n\n";
    const char *path = write_temp_file("classes.txt", text, sizeof text - 1);
    const char *folders[] = {"n04", "n01"};
    int label_of[2];
    vit_error err = {{0}};
    assert_int_equal(imagefolder_match_class_map(path, folders, 2, 4, label_of, &err), 0);
    assert_int_equal(label_of[0], 3);
    assert_int_equal(label_of[1], 0);
    /* more names than the model has labels */
    assert_int_equal(imagefolder_match_class_map(path, folders, 2, 3, label_of, &err), -1);
    assert_non_null(strstr(err.msg, "classes.txt"));
    /* a folder missing from the map is named */
    const char *missing[] = {"n01", "n03"};
    assert_int_equal(imagefolder_match_class_map(path, missing, 2, 4, label_of, &err), -1);
    assert_non_null(strstr(err.msg, "'n03'"));
    /* a name listed twice */
    const char dup[] = "a\nb\na\n";
    path = write_temp_file("dup.txt", dup, sizeof dup - 1);
    assert_int_equal(imagefolder_match_class_map(path, folders, 0, 5, label_of, &err), -1);
    assert_non_null(strstr(err.msg, "lines 1 and 3"));
    /* no such file */
    assert_int_equal(
        imagefolder_match_class_map("/nonexistent/map.txt", folders, 2, 4, label_of, &err), -1);
    assert_non_null(strstr(err.msg, "/nonexistent/map.txt"));
}

static void make_dir(const char *rel) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", test_tmpdir(), rel);
    assert_int_equal(mkdir(path, 0755), 0);
}

static void make_file(const char *rel) {
    write_temp_file(rel, "x", 1);
}

/* root/
 *   README.txt            (a file beside the class folders: ignored)
 *   .git/x.png            (hidden: ignored)
 *   b/z.png
 *   a/1.JPG  a/notes.txt  a/.hidden.png  a/sub/deep/2.jpeg  a/sub/3.png
 *   a/dangling.jpg -> nowhere    a/loop -> ..    a/fifo.png (a FIFO)
 *   c -> b                (a symlinked class folder) */
static const char *build_tree(void) {
    static char root[1024];
    snprintf(root, sizeof root, "%s/walk", test_tmpdir());
    const char *dirs[] = {"walk", "walk/.git", "walk/a", "walk/a/sub", "walk/a/sub/deep", "walk/b"};
    for (int i = 0; i < COUNT(dirs); i++) make_dir(dirs[i]);
    const char *files[] = {"walk/README.txt",  "walk/.git/x.png",       "walk/b/z.png",
                           "walk/a/1.JPG",     "walk/a/notes.txt",      "walk/a/.hidden.png",
                           "walk/a/sub/3.png", "walk/a/sub/deep/2.jpeg"};
    for (int i = 0; i < COUNT(files); i++) make_file(files[i]);
    char path[4096];
    snprintf(path, sizeof path, "%s/a/dangling.jpg", root);
    assert_int_equal(symlink("/nonexistent/target.jpg", path), 0);
    snprintf(path, sizeof path, "%s/a/loop", root);
    assert_int_equal(symlink("..", path), 0);
    snprintf(path, sizeof path, "%s/a/fifo.png", root);
    assert_int_equal(mkfifo(path, 0644), 0);
    snprintf(path, sizeof path, "%s/c", root);
    assert_int_equal(symlink("b", path), 0);
    return root;
}

static void count_problem(void *user, const char *message) {
    assert_non_null(strstr(message, "/walk/a/"));
    (*(int *)user)++;
}

static void test_walk(void **state) {
    (void)state;
    const char *root = build_tree();
    imagefolder f;
    vit_error err = {{0}};
    assert_int_equal(imagefolder_open(&f, root, &err), 0);
    assert_int_equal(f.num_folders, 3);
    assert_string_equal(f.folders[0], "a");
    assert_string_equal(f.folders[1], "b");
    assert_string_equal(f.folders[2], "c");
    const char *labels[] = {"c", "a", "b"};
    int by_order;
    assert_int_equal(imagefolder_map_labels(&f, labels, 3, &by_order, &err), 0);
    /* Sorted, depth first; unreadable entries reported in place. */
    const struct {
        const char *rel;
        int label, unreadable;
        const char *why;
    } want[] = {
        {"a/1.JPG", 1, 0, NULL},
        {"a/dangling.jpg", 1, 1, "No such file"},
        {"a/fifo.png", 1, 1, "not a regular file"},
        {"a/loop", 1, 1, "loop"},
        {"a/sub/3.png", 1, 0, NULL},
        {"a/sub/deep/2.jpeg", 1, 0, NULL},
        {"b/z.png", 2, 0, NULL},
        {"c/z.png", 0, 0, NULL},
    };
    imagefolder_walk *w = imagefolder_walk_open(&f, &err);
    assert_non_null(w);
    imagefolder_entry e;
    for (int i = 0; i < COUNT(want); i++) {
        memset(&err, 0, sizeof err);
        assert_int_equal(imagefolder_walk_next(w, &e, &err), 1);
        char expect[8192];
        snprintf(expect, sizeof expect, "%s/%s", root, want[i].rel);
        assert_string_equal(e.path, expect);
        assert_int_equal(e.label, want[i].label);
        assert_int_equal(e.unreadable, want[i].unreadable);
        if (want[i].why) {
            assert_non_null(strstr(err.msg, expect));
            assert_non_null(strstr(err.msg, want[i].why));
        }
        free(e.path);
    }
    assert_int_equal(imagefolder_walk_next(w, &e, &err), 0);
    assert_int_equal(imagefolder_walk_next(w, &e, &err), 0); /* stays at the end */
    imagefolder_walk_close(w);

    /* All at once: the readable images only, problems passed on. */
    imagefolder_entry *all;
    size_t n;
    int problems = 0;
    assert_int_equal(imagefolder_list(&f, &all, &n, count_problem, &problems, &err), 0);
    assert_int_equal((int)n, 5);
    assert_int_equal(problems, 3);
    assert_int_equal(all[4].label, 0);
    imagefolder_list_free(all, n);

    /* A trailing slash on the root gives the same paths. */
    imagefolder g;
    char slashed[4200];
    snprintf(slashed, sizeof slashed, "%s//", root);
    assert_int_equal(imagefolder_open(&g, slashed, &err), 0);
    assert_string_equal(g.root, root);
    imagefolder_close(&g);
    imagefolder_close(&f);
}

static void test_open_errors(void **state) {
    (void)state;
    imagefolder f;
    vit_error err = {{0}};
    assert_int_equal(imagefolder_open(&f, "/nonexistent/data", &err), -1);
    assert_non_null(strstr(err.msg, "/nonexistent/data"));
    const char *file = write_temp_file("plain.txt", "x", 1);
    assert_int_equal(imagefolder_open(&f, file, &err), -1);
    assert_non_null(strstr(err.msg, "not a directory"));
    make_dir("flat");
    make_file("flat/a.png"); /* images but no class folder */
    char flat[4096];
    snprintf(flat, sizeof flat, "%s/flat", test_tmpdir());
    assert_int_equal(imagefolder_open(&f, flat, &err), -1);
    assert_non_null(strstr(err.msg, "no class folders"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_image_names),
        cmocka_unit_test(test_match_rules),
        cmocka_unit_test(test_match_precedence),
        cmocka_unit_test(test_match_errors),
        cmocka_unit_test(test_match_by_order),
        cmocka_unit_test(test_class_map),
        cmocka_unit_test(test_walk),
        cmocka_unit_test(test_open_errors),
    };
    return cmocka_run_group_tests_name("imagefolder", tests, NULL, NULL);
}
