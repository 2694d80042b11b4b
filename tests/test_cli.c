/* The shape every `vit` command shares: -h prints its help and exits 0; an unknown option or a
 * wrong operand is a one-line usage error and exit 2; --model, --exif and --no-exif are the same
 * options wherever they apply. The commands are taken from `vit --help`, so a new one is checked
 * too. Runs the binary named by $VIT_BIN (set by `make test`). */
#include "tests/testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_COMMANDS 32

/* The commands `vit --help` lists ("  NAME   summary" lines after "commands:"). */
static int list_commands(char names[][32]) {
    test_run_result r = test_run_vit(NULL, NULL, (const char *const[]){"--help", NULL});
    assert_int_equal(r.status, 0);
    const char *at = strstr(r.out, "commands:\n");
    assert_non_null(at);
    int n = 0;
    for (at += strlen("commands:\n"); n < MAX_COMMANDS && strncmp(at, "  ", 2) == 0; n++) {
        sscanf(at, " %31s", names[n]);
        at = strchr(at, '\n') + 1;
    }
    test_run_free(&r);
    assert_true(n >= 11);
    return n;
}

static int count_lines(const char *s) {
    int n = 0;
    for (; *s; s++) n += *s == '\n';
    return n;
}

/* stderr is exactly one line that begins with "vit CMD: " and contains want. */
static void expect_one_line(const test_run_result *r, const char *cmd, const char *want) {
    char prefix[64];
    snprintf(prefix, sizeof prefix, "vit %s: ", cmd);
    if (count_lines(r->err) != 1 || strncmp(r->err, prefix, strlen(prefix)) != 0 ||
        !strstr(r->err, want))
        fail_msg("vit %s: expected one line '%s...%s' on stderr, got: %s", cmd, prefix, want,
                 r->err);
}

static void test_help(void **state) {
    (void)state;
    REQUIRE_BIN();
    char names[MAX_COMMANDS][32];
    const int n = list_commands(names);
    for (int i = 0; i < n; i++) {
        const char *flags[] = {"-h", "--help"};
        for (int f = 0; f < 2; f++) {
            test_run_result r =
                test_run_vit(NULL, NULL, (const char *const[]){names[i], flags[f], NULL});
            char usage[64];
            snprintf(usage, sizeof usage, "usage: vit %.31s ", names[i]);
            if (r.status != 0 || strncmp(r.out, usage, strlen(usage)) != 0 || r.err[0])
                fail_msg("vit %s %s: exit %d, stdout '%.60s', stderr '%s'", names[i], flags[f],
                         r.status, r.out, r.err);
            assert_non_null(strstr(r.out, "  -h, --help "));
            test_run_free(&r);
        }
    }
    print_message("  %d commands answer -h and --help with their help, exit 0\n", n);
}

static void test_unknown_option(void **state) {
    (void)state;
    REQUIRE_BIN();
    char names[MAX_COMMANDS][32];
    const int n = list_commands(names);
    for (int i = 0; i < n; i++) {
        test_run_result r =
            test_run_vit(NULL, NULL, (const char *const[]){names[i], "--no-such-option", NULL});
        if (r.status != 2) fail_msg("vit %s --no-such-option: exit %d", names[i], r.status);
        expect_one_line(&r, names[i], "unknown option '--no-such-option'");
        assert_string_equal(r.out, "");
        test_run_free(&r);
    }
    print_message("  %d commands refuse an unknown option in one line, exit 2\n", n);
}

/* Operands and option combinations the commands refuse: one line ending in "(vit CMD --help)",
 * exit 2, before anything is loaded. */
static void test_usage_errors(void **state) {
    (void)state;
    REQUIRE_BIN();
    static const char *const cases[][10] = {
        {"classify", NULL},
        {"eval", NULL},
        {"eval", "a", "b", NULL},
        {"info", "extra", NULL},
        {"bench", "extra", NULL},
        {"preprocess", "x.png", NULL},
        {"convert", "in", NULL},
        {"average", "-o", "out", "one", NULL},
        {"average", "a", "b", NULL},
        {"serve", "extra", NULL},
        {"explain", "x.png", NULL},
        {"embed", "x.png", NULL},
        {"generate", NULL},
        {"train", "--train", "data", NULL},
        {"train", "--train", "d", "--out", "o", "--init", "m", "--layers", "2", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *cmd = cases[i][0];
        test_run_result r = test_run_vit(NULL, NULL, cases[i]);
        char help[64];
        snprintf(help, sizeof help, "(vit %s --help)\n", cmd);
        if (r.status != 2) fail_msg("vit %s ...: exit %d: %s", cmd, r.status, r.err);
        expect_one_line(&r, cmd, help);
        test_run_free(&r);
    }
}

/* An image folder of one class with one (unread) file, and a model folder that does not exist. */
static const char *image_folder(void) {
    static char dir[4200], class_dir[4300];
    snprintf(dir, sizeof dir, "%s/cli-images", test_tmpdir());
    snprintf(class_dir, sizeof class_dir, "%s/a", dir);
    assert_int_equal(mkdir(dir, 0700) | mkdir(class_dir, 0700), 0);
    write_temp_file("cli-images/a/x.png", "not read", 8);
    return dir;
}

/* --model, --exif and --no-exif are accepted by every command that reads images (the run then
 * fails on the missing model, exit 1, naming it); --model by those that load any model. */
static void test_model_and_exif(void **state) {
    (void)state;
    REQUIRE_BIN();
    char missing[4200], out[4200];
    snprintf(missing, sizeof missing, "%s/no-such-model", test_tmpdir());
    snprintf(out, sizeof out, "%s/cli-out", test_tmpdir());
    const char *image = write_temp_file("cli-x.png", "not read", 8);
    const char *const operands[][4] = {
        {"classify", image, NULL},
        {"eval", image_folder(), NULL},
        {"serve", "--port", "0", NULL},
        {"explain", image, "-o", out},
        {"embed", image, "-o", out},
        {"preprocess", image, "-o", out},
        {"generate", image, NULL},
        {"text", "a sentence", NULL},
        {"tokenize", "a sentence", NULL},
        {"bench", NULL},
        {"info", NULL},
    };
    for (size_t i = 0; i < sizeof operands / sizeof operands[0]; i++) {
        const int images = i < 7;
        const char *args[12] = {operands[i][0], "--model", missing};
        int n = 3;
        if (images) args[n++] = "--no-exif", args[n++] = "--exif";
        for (int k = 1; k < 4 && operands[i][k]; k++) args[n++] = operands[i][k];
        test_run_result r = test_run_vit(NULL, NULL, args);
        if (r.status != 1 || !strstr(r.err, "no-such-model"))
            fail_msg("vit %s --model DIR%s: exit %d: %s", args[0],
                     images ? " --no-exif --exif" : "", r.status, r.err);
        test_run_free(&r);
    }
}

/* Every command of `vit --help` is one the bash completion offers and has its section in the man
 * page. */
static void test_completion_and_man(void **state) {
    (void)state;
    REQUIRE_BIN();
    char names[MAX_COMMANDS][32];
    const int n = list_commands(names);
    char *completion = (char *)read_whole_file("tools/vit.bash-completion", NULL);
    assert_non_null(completion);
    const char *start = strstr(completion, "compgen -W \"");
    assert_non_null(start);
    start += strlen("compgen -W \"");
    const char *end = strchr(start, '"');
    assert_non_null(end);
    char words[1024]; /* the offered words, with a space before and after each */
    snprintf(words, sizeof words, " %.*s ", (int)(end - start), start);
    test_run_result man = test_run_vit(NULL, NULL, (const char *const[]){"--man", NULL});
    assert_int_equal(man.status, 0);
    for (int i = 0; i < n; i++) {
        char word[40], section[48];
        snprintf(word, sizeof word, " %.31s ", names[i]);
        if (!strstr(words, word))
            fail_msg("tools/vit.bash-completion does not offer the command %s", names[i]);
        snprintf(section, sizeof section, ".SS vit %.31s\n", names[i]);
        if (!strstr(man.out, section)) fail_msg("vit --man has no section for %s", names[i]);
    }
    test_run_free(&man);
    free(completion);
}

/* vit train into a log (standard error a pipe): with --progress-every 0 a line of its own for
 * every step, images/s and time left on it, the last at the last step; a bad value is refused. */
/* Every variable the program reads (a getenv in vit/, read from the sources, not listed here) is
 * in the man page's ENVIRONMENT, except those mpirun sets (OMPI_*, PMIX_*). */
static void test_man_environment(void **state) {
    (void)state;
    REQUIRE_BIN();
    test_run_result man = test_run_vit(NULL, NULL, (const char *const[]){"--man", NULL});
    assert_int_equal(man.status, 0);
    const char *env = strstr(man.out, ".SH ENVIRONMENT\n");
    assert_non_null(env);
    FILE *names = popen("grep -rhoE 'getenv\\(\"[A-Z_]+\"' vit | sed 's/.*(\"//; s/\"$//' | "
                        "sort -u",
                        "r");
    assert_non_null(names);
    char name[64], entry[80];
    int read = 0;
    while (fgets(name, sizeof name, names)) {
        name[strcspn(name, "\n")] = 0;
        if (strncmp(name, "OMPI_", 5) == 0 || strncmp(name, "PMIX_", 5) == 0) continue;
        snprintf(entry, sizeof entry, ".B %s\n", name);
        if (!strstr(env, entry)) fail_msg("vit --man's ENVIRONMENT does not name %s", name);
        read++;
    }
    pclose(names);
    assert_true(read >= 4); /* VIT_MODEL, VIT_API_KEY, OMP_WAIT_POLICY, XDG_CACHE_HOME at least */
    test_run_free(&man);
}

/* dir (under the temporary folder): two classes of two copies of pullover.png. */
static void two_class_images(const char *name, char *dir, size_t size) {
    snprintf(dir, size, "%s/%s", test_tmpdir(), name);
    assert_int_equal(mkdir(dir, 0700), 0);
    FILE *in = fopen("tests/data/pullover.png", "rb");
    assert_non_null(in);
    unsigned char png[4096];
    const size_t n = fread(png, 1, sizeof png, in);
    fclose(in);
    for (int c = 0; c < 2; c++) {
        char sub[256];
        snprintf(sub, sizeof sub, "%s/%c", name, 'a' + c);
        char path[4400];
        snprintf(path, sizeof path, "%s/%s", test_tmpdir(), sub);
        assert_int_equal(mkdir(path, 0700), 0);
        for (int i = 0; i < 2; i++) {
            char file[300];
            snprintf(file, sizeof file, "%s/%d.png", sub, i);
            write_temp_file(file, png, n);
        }
    }
}

/* vit explain refuses two inputs of one file name (a/0.png, b/0.png), which would write the
 * same OUT/0.png, before it writes anything, naming both; distinct names each get a picture. */
static void test_explain_same_names(void **state) {
    (void)state;
    REQUIRE_BIN();
    char dir[4200], a[4300], b[4300], a1[4300], out[4200], png[4300];
    two_class_images("explain-images", dir, sizeof dir);
    snprintf(a, sizeof a, "%s/a/0.png", dir);
    snprintf(b, sizeof b, "%s/b/0.png", dir);
    snprintf(a1, sizeof a1, "%s/a/1.png", dir);
    snprintf(out, sizeof out, "%s/explain-out", test_tmpdir());
    snprintf(png, sizeof png, "%s/0.png", out);
    const char *same[] = {"explain", "-m", "models/fashion-vit", "-o", out, a, a1, b, NULL};
    test_run_result r = test_run_vit(NULL, NULL, same);
    assert_int_equal(r.status, 2);
    char want[13000];
    snprintf(want, sizeof want, "%s and %s would both be written to %s", a, b, png);
    expect_one_line(&r, "explain", want);
    assert_int_not_equal(access(png, F_OK), 0);
    test_run_free(&r);
    const char *distinct[] = {"explain", "-m", "models/fashion-vit", "-o", out, a, a1, NULL};
    r = test_run_vit(NULL, NULL, distinct);
    if (r.status != 0) fail_msg("vit explain a/0.png a/1.png: exit %d: %s", r.status, r.err);
    assert_int_equal(count_lines(r.out), 2);
    assert_int_equal(access(png, F_OK), 0);
    test_run_free(&r);
}

static void test_train_progress_into_log(void **state) {
    (void)state;
    REQUIRE_BIN();
    char dir[4200], out[4200];
    two_class_images("progress-images", dir, sizeof dir); /* 2 steps of 2 an epoch */
    snprintf(out, sizeof out, "%s/progress-model", test_tmpdir());
    const char *args[] = {"train", "--train",          dir, "--out",       out, "--epochs",
                          "2",     "--batch",          "2", "--val-split", "0", "--hidden",
                          "8",     "--layers",         "1", "--heads",     "2", "--mlp",
                          "16",    "--progress-every", "0", "-t",          "1", NULL};
    test_run_result r = test_run_vit(NULL, NULL, args);
    if (r.status != 0) fail_msg("vit train: exit %d: %s", r.status, r.err);
    int lines = 0;
    for (const char *at = r.err; (at = strstr(at, "vit train: epoch ")); at++) {
        lines++;
        assert_non_null(strstr(at, " images/s  ETA "));
    }
    assert_int_equal(lines, 4); /* 2 epochs of 2 steps */
    assert_non_null(strstr(r.err, "vit train: epoch 2/2  step 4/4  loss "));
    assert_null(strchr(r.err, '\r')); /* no terminal redraws into a log */
    test_run_free(&r);
    const char *bad[] = {"train", "--train", dir, "--out", out, "--progress-every", "-1", NULL};
    r = test_run_vit(NULL, NULL, bad);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "invalid value for --progress-every: '-1'"));
    test_run_free(&r);
}

/* vit train onto a model already in --out is refused in one line and leaves it as it was;
 * --overwrite replaces it; the last line names the best epoch's folder, MODEL_DIR/best. */
static void test_train_overwrite(void **state) {
    (void)state;
    REQUIRE_BIN();
    char dir[4200], out[4200], weights[4300];
    two_class_images("overwrite-images", dir, sizeof dir);
    snprintf(out, sizeof out, "%s/overwrite-model", test_tmpdir());
    snprintf(weights, sizeof weights, "%s/model.safetensors", out);
    const char *args[] = {"train", "--train",  dir, "--out",       out,   "--epochs",
                          "1",     "--batch",  "2", "--val-split", "0.5", "--hidden",
                          "8",     "--layers", "1", "--heads",     "2",   "--mlp",
                          "16",    "-t",       "1", NULL,          NULL};
    test_run_result r = test_run_vit(NULL, NULL, args);
    if (r.status != 0) fail_msg("vit train: exit %d: %s", r.status, r.err);
    char want[9000];
    snprintf(want, sizeof want, "model in %s (the last epoch's), the best in %s/best (epoch 1,",
             out, out);
    if (!strstr(r.err, want)) fail_msg("expected '%s' in: %s", want, r.err);
    assert_non_null(strstr(r.err, "vit train: a new ViT: grey input (the images are grey), 28x28 "
                                  "(the images' size), patch 4\n"));
    test_run_free(&r);
    size_t n_before, n_after;
    uint8_t *before = read_whole_file(weights, &n_before);
    r = test_run_vit(NULL, NULL, args);
    assert_int_equal(r.status, 1);
    snprintf(want, sizeof want, "%s already holds a model (config.json): --overwrite", out);
    expect_one_line(&r, "train", want);
    uint8_t *after = read_whole_file(weights, &n_after);
    assert_true(n_before == n_after && memcmp(before, after, n_before) == 0);
    free(before), free(after);
    test_run_free(&r);
    args[sizeof args / sizeof args[0] - 2] = "--overwrite";
    r = test_run_vit(NULL, NULL, args);
    if (r.status != 0) fail_msg("vit train --overwrite: exit %d: %s", r.status, r.err);
    test_run_free(&r);
}

/* --precision bf16 trains (the log names the bf16 products) where oneDNN has bf16 kernels; a
 * precision that is not fp32 or bf16, and bf16 on OpenBLAS, get one-line refusals. */
static void test_train_precision(void **state) {
    (void)state;
    REQUIRE_BIN();
    char dir[4200], out[4200];
    two_class_images("precision-images", dir, sizeof dir);
    snprintf(out, sizeof out, "%s/precision-model", test_tmpdir());
    const char *args[] = {"train", "--train",     dir,    "--out",       out, "--epochs",
                          "1",     "--batch",     "2",    "--val-split", "0", "--hidden",
                          "8",     "--layers",    "1",    "--heads",     "2", "--mlp",
                          "16",    "--precision", "bf16", "-t",          "2", NULL};
    test_run_result r = test_run_vit(NULL, NULL, args);
    if (r.status != 0 && strstr(r.err, "has no bf16 kernels")) {
        fprintf(stderr, "SKIPPED bf16 training: %s", r.err);
    } else {
        if (r.status != 0) fail_msg("vit train --precision bf16: exit %d: %s", r.status, r.err);
        assert_non_null(strstr(r.err, "bf16 matmul (operands rounded to bfloat16)"));
    }
    test_run_free(&r);
    const char *bad[] = {"train", "--train", dir, "--out", out, "--precision", "fp16", NULL};
    r = test_run_vit(NULL, NULL, bad);
    assert_int_not_equal(r.status, 0);
    assert_non_null(strstr(r.err, "--precision: 'fp16' is neither fp32 nor bf16"));
    test_run_free(&r);
    const char *openblas[] = {"train",       "--train", dir,      "--out",    out,
                              "--precision", "bf16",    "--blas", "openblas", NULL};
    r = test_run_vit(NULL, NULL, openblas);
    assert_int_not_equal(r.status, 0);
    assert_non_null(strstr(r.err, "not with --blas openblas"));
    test_run_free(&r);
}

/* vit --version names each optional feature once, as built in or left out: the full and the
 * minimal build say different things (tests/minimal-build.sh checks the minimal line). */
static void test_version_features(void **state) {
    (void)state;
    REQUIRE_BIN();
    test_run_result r = test_run_vit(NULL, NULL, (const char *const[]){"--version", NULL});
    assert_int_equal(r.status, 0);
    assert_int_equal(count_lines(r.out), 1);
    assert_true(strncmp(r.out, "vit ", 4) == 0);
    const char *with = strstr(r.out, "; built with ");
    if (!with) fail_msg("vit --version: no '; built with': %s", r.out);
    static const char *const features[] = {"oneDNN", "MPI", "microhttpd",    "WebP",
                                           "TIFF",   "GIF", "SentencePiece", "FreeType"};
    for (size_t i = 0; i < sizeof features / sizeof features[0]; i++) {
        const char *at = strstr(with, features[i]);
        if (!at || strstr(at + 1, features[i]))
            fail_msg("vit --version does not name %s once: %s", features[i], r.out);
    }
    test_run_free(&r);
}

/* vit help CMD prints CMD's help, as vit CMD --help does; an unknown CMD is a one-line error. */
static void test_help_command(void **state) {
    (void)state;
    REQUIRE_BIN();
    char names[MAX_COMMANDS][32];
    const int n = list_commands(names);
    for (int i = 0; i < n; i++) {
        test_run_result a = test_run_vit(NULL, NULL, (const char *const[]){"help", names[i], NULL});
        test_run_result b =
            test_run_vit(NULL, NULL, (const char *const[]){names[i], "--help", NULL});
        if (a.status != 0 || strcmp(a.out, b.out) != 0)
            fail_msg("vit help %s: exit %d, '%.80s' where vit %s --help says '%.80s'", names[i],
                     a.status, a.out, names[i], b.out);
        test_run_free(&a);
        test_run_free(&b);
    }
    test_run_result r = test_run_vit(NULL, NULL, (const char *const[]){"help", "nope", NULL});
    assert_int_equal(r.status, 2);
    expect_one_line(&r, "help", "unknown command 'nope'");
    test_run_free(&r);
}

/* One idiom for --json: wherever a command has it, it is a flag (the output as JSON on standard
 * output), never an option with a value (eval's took a file: --json-file now). And eval's old
 * form, --json FILE DIR, is a usage error that says so. */
static void test_json_is_a_flag(void **state) {
    (void)state;
    REQUIRE_BIN();
    char names[MAX_COMMANDS][32];
    const int n = list_commands(names);
    int with_json = 0;
    for (int i = 0; i < n; i++) {
        test_run_result r =
            test_run_vit(NULL, NULL, (const char *const[]){names[i], "--help", NULL});
        const char *at = strstr(r.out, "    --json");
        if (at) {
            with_json++;
            at += strlen("    --json");
            if (*at != ' ' || at[1] != ' ')
                fail_msg("vit %s --help: '--json%.20s' takes a value; it is a flag elsewhere",
                         names[i], at);
        }
        test_run_free(&r);
    }
    assert_true(with_json >= 6);
    test_run_result r =
        test_run_vit(NULL, NULL, (const char *const[]){"eval", "--json", "out.json", "dir", NULL});
    assert_int_equal(r.status, 2);
    expect_one_line(&r, "eval",
                    "--json is a flag (the report as JSON on standard output), "
                    "--json-file FILE writes it into a file");
    test_run_free(&r);
}

/* An abbreviation two options begin with is called ambiguous, with its candidates; one that a
 * single option begins with still works (getopt_long's abbreviations). */
static void test_ambiguous_option(void **state) {
    (void)state;
    REQUIRE_BIN();
    test_run_result r =
        test_run_vit(NULL, NULL, (const char *const[]){"classify", "--thr", "0.5", "x.png", NULL});
    assert_int_equal(r.status, 2);
    expect_one_line(&r, "classify", "ambiguous option '--thr' (could be --threshold or --threads)");
    test_run_free(&r);
    r = test_run_vit(NULL, NULL, (const char *const[]){"classify", "--thres=0.5", NULL});
    assert_int_equal(r.status, 2); /* --threshold, then no FILE */
    assert_null(strstr(r.err, "ambiguous"));
    assert_null(strstr(r.err, "unknown option"));
    test_run_free(&r);
}

/* README's examples read what the repository ships: they run as written from the project root
 * (the same inputs; smaller counts and fewer epochs, into test_tmpdir()). */
static void test_readme_train_lines(void **state) {
    (void)state;
    REQUIRE_BIN();
    char out[4200];
    snprintf(out, sizeof out, "%s/ved-lines", test_tmpdir());
    const char *args[] = {"train",
                          "--train",
                          "examples/lines",
                          "--init",
                          "tests/data/ved-trocr-vit",
                          "--out",
                          out,
                          "--epochs",
                          "2",
                          "--batch",
                          "6",
                          "--val-split",
                          "0",
                          "-t",
                          "1",
                          NULL};
    test_run_result r = test_run_vit(NULL, NULL, args);
    if (r.status != 0) fail_msg("vit train --train examples/lines: exit %d: %s", r.status, r.err);
    assert_non_null(strstr(r.err, "decoding 6 training and 0 validation images"));
    test_run_free(&r);
}

static void test_readme_embed_sentences(void **state) {
    (void)state;
    REQUIRE_BIN();
    REQUIRE_SHARED("models/bert-sst2-tiny");
    const char *args[] = {"embed",  "-m",     shared_path("models/bert-sst2-tiny"),
                          "--pool", "pooler", "examples/sentences.txt",
                          "-o",     "-",      NULL};
    test_run_result r = test_run_vit(NULL, NULL, args);
    if (r.status != 0) fail_msg("vit embed examples/sentences.txt: exit %d: %s", r.status, r.err);
    assert_int_equal(count_lines(r.out), 2);
    assert_true(strncmp(r.out, "examples/sentences.txt:1\t", 25) == 0);
    test_run_free(&r);
}

static void test_readme_render_lines(void **state) {
    (void)state;
    REQUIRE_BIN();
    REQUIRE_SHARED("data/sst2/train.tsv");
    char out[4200], labels[4300];
    snprintf(out, sizeof out, "%s/ocr-lines", test_tmpdir());
    snprintf(labels, sizeof labels, "%s/labels.tsv", out);
    const char *args[] = {"render-lines",
                          "--fonts",
                          "examples/fonts-dejavu.txt",
                          "--sentences",
                          shared_path("data/sst2/train.tsv"),
                          "--count",
                          "20",
                          "-t",
                          "1",
                          "--out",
                          out,
                          NULL};
    test_run_result r = test_run_vit(NULL, NULL, args);
    if (r.status != 0 && strstr(r.err, "built without FreeType")) {
        print_message("SKIP %s: %s", __func__, r.err);
        test_run_free(&r);
        skip();
    }
    if (r.status != 0) fail_msg("vit render-lines --fonts examples/fonts-dejavu.txt: %s", r.err);
    test_run_free(&r);
    char *tsv = (char *)read_whole_file(labels, NULL);
    assert_non_null(tsv);
    assert_int_equal(count_lines(tsv), 20);
    free(tsv);
}

/* test_tmpdir()/name with links to src's config.json and model.safetensors (and its
 * preprocessor_config.json and generation_config.json where it has them): the folder without its
 * tokenizer files. */
static const char *weights_only_copy(const char *name, const char *src) {
    static char dir[4096];
    snprintf(dir, sizeof dir, "%s/%s", test_tmpdir(), name);
    mkdir(dir, 0700);
    char cwd[2048];
    assert_non_null(getcwd(cwd, sizeof cwd));
    const char *files[] = {"config.json", "model.safetensors", "preprocessor_config.json",
                           "generation_config.json"};
    for (int i = 0; i < 4; i++) {
        char from[4096], to[8192];
        snprintf(from, sizeof from, "%s/%s/%s", cwd, src, files[i]);
        snprintf(to, sizeof to, "%s/%s", dir, files[i]);
        if (access(from, R_OK) == 0) assert_int_equal(symlink(from, to), 0);
    }
    return dir;
}

/* `vit info -m DIR`'s output without its "model:" and "tokenizer:" lines; with missing set, the
 * tokenizer line must be there once and say "not loadable" and why. */
static char *info_lines(const char *dir, int missing_tokenizer) {
    test_run_result r = test_run_vit(NULL, NULL, (const char *const[]){"info", "-m", dir, NULL});
    if (r.status != 0) fail_msg("vit info -m %s: exit %d: %s", dir, r.status, r.err);
    char *out = malloc(strlen(r.out) + 1), *o = out;
    int missing = 0;
    for (char *line = strtok(r.out, "\n"); line; line = strtok(NULL, "\n")) {
        if (!strncmp(line, "model:", 6)) continue;
        if (!strncmp(line, "tokenizer:      ", 16)) { /* not the build's "tokenizers:" */
            if (missing_tokenizer &&
                !(strstr(line, "not loadable: ") && strstr(line, "no tokenizer files")))
                fail_msg("%s: %s", dir, line);
            missing++;
            continue;
        }
        o += sprintf(o, "%s\n", line);
    }
    if (missing_tokenizer && missing != 1)
        fail_msg("vit info -m %s: %d tokenizer lines", dir, missing);
    test_run_free(&r);
    return out;
}

/* vit info describes a text folder (a BERT, a text tower alone, a joint model's text tower, an
 * image-to-text model's decoder) from its config and weights when the tokenizer files are
 * missing, as it describes the whole folder, and says in one line that the tokenizer is not
 * loadable and why. */
static void test_info_without_tokenizer(void **state) {
    (void)state;
    REQUIRE_BIN();
    const char *folders[] = {"tests/data/bert-base-micro", "tests/data/clip-text-proj-micro",
                             "tests/data/siglip-micro", "tests/data/ved-gpt2-vit"};
    for (int i = 0; i < 4; i++) {
        char name[32];
        snprintf(name, sizeof name, "no-tokenizer-%d", i);
        char *want = info_lines(folders[i], 0);
        char *got = info_lines(weights_only_copy(name, folders[i]), 1);
        if (strcmp(got, want) != 0)
            fail_msg("%s without its tokenizer:\n%s\nwith it:\n%s", folders[i], got, want);
        free(want), free(got);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_help),
        cmocka_unit_test(test_unknown_option),
        cmocka_unit_test(test_usage_errors),
        cmocka_unit_test(test_model_and_exif),
        cmocka_unit_test(test_completion_and_man),
        cmocka_unit_test(test_man_environment),
        cmocka_unit_test(test_version_features),
        cmocka_unit_test(test_help_command),
        cmocka_unit_test(test_ambiguous_option),
        cmocka_unit_test(test_json_is_a_flag),
        cmocka_unit_test(test_explain_same_names),
        cmocka_unit_test(test_train_progress_into_log),
        cmocka_unit_test(test_train_precision),
        cmocka_unit_test(test_train_overwrite),
        cmocka_unit_test(test_readme_train_lines),
        cmocka_unit_test(test_readme_embed_sentences),
        cmocka_unit_test(test_readme_render_lines),
        cmocka_unit_test(test_info_without_tokenizer),
    };
    return cmocka_run_group_tests_name("cli", tests, NULL, NULL);
}
