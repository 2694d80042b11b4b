/* Zero-shot and tokenizing from the command line ($VIT_BIN, set by `make test`): `vit classify
 * --classes` and `vit eval --classes-file` against the library's vit_zero_shot (itself checked
 * against the float64 goldens in tests/test_zero_shot.c), prompt ensembling in any order,
 * --classes-file, --templates, an image on standard input, the errors; `vit tokenize` against
 * clip-micro's golden ids, BERT's golden ids and pieces, and OpenAI's ids of 26 texts with CLIP's
 * real vocabulary (a temporary CLIP folder with that vocabulary).
 *
 * Tolerances: the CLI's numbers are the library's, printed with 9 significant digits (JSON) or 6
 * decimals (CSV); the CLI runs its images in one batch as the reference does, so only the
 * summation order of another batch composition could differ (~1e-7). 1e-5 on scores, 1e-6 on
 * probabilities. */
#include "tests/testutil.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vit/io/safetensors.h"
#include "vit/vit.h"

#define CLIP             TEST_DATA "/clip-micro"
#define CLIP_GELU        TEST_DATA "/clip-micro-gelu"
#define SIGLIP           TEST_DATA "/siglip-micro"
#define IMAGES           3
#define DEFAULT_TEMPLATE "a photo of a {}." /* the CLI's, CLIP's */

static const char *const image_paths[IMAGES] = {GOLDEN_IMAGES "/rgb_64x48.png",
                                                GOLDEN_IMAGES "/tall_40x400.jpg",
                                                GOLDEN_IMAGES "/palette_120x90.png"};

static const char *tmp(const char *name) {
    static char paths[8][4200];
    static int next;
    char *p = paths[next++ % 8];
    snprintf(p, sizeof paths[0], "%s/%s", test_tmpdir(), name);
    return p;
}

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

static void copy_file(const char *from, const char *to) {
    size_t n;
    uint8_t *data = read_whole_file(from, &n);
    assert_non_null(data);
    FILE *f = fopen(to, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
    free(data);
}

static int count_lines(const char *s) {
    int n = 0;
    for (; *s; s++) n += *s == '\n';
    return n;
}

/* stderr is exactly one line beginning "vit CMD: " and containing want. */
static void expect_one_line(const test_run_result *r, const char *cmd, const char *want) {
    char prefix[64];
    snprintf(prefix, sizeof prefix, "vit %s: ", cmd);
    if (count_lines(r->err) != 1 || strncmp(r->err, prefix, strlen(prefix)) != 0 ||
        !strstr(r->err, want))
        fail_msg("expected one line '%s...%s' on stderr, got: %s", prefix, want, r->err);
}

/* The JSON objects of out, one per line, in an array. */
static cJSON *json_lines(const char *out) {
    cJSON *all = cJSON_CreateArray();
    for (const char *p = out; *p;) {
        const char *eol = strchr(p, '\n');
        assert_non_null(eol);
        cJSON *o = cJSON_ParseWithLength(p, (size_t)(eol - p));
        if (!o) fail_msg("not JSON: %.*s", (int)(eol - p), p);
        cJSON_AddItemToArray(all, o);
        p = eol + 1;
    }
    return all;
}

/* `vit ARGS...` (NULL-terminated), standard input from stdin_path (may be NULL). */
static test_run_result run(const char *stdin_path, const char *const *args) {
    return test_run_vit(NULL, stdin_path, args);
}

static cJSON *read_json(const char *path) {
    size_t n;
    char *text = (char *)read_whole_file(path, &n);
    if (!text) fail_msg("%s: cannot read", path);
    cJSON *root = cJSON_ParseWithLength(text, n);
    free(text);
    if (!root) fail_msg("%s: not JSON", path);
    return root;
}

/* ---- the reference: the library ---- */

typedef struct {
    int n;         /* classes */
    float *scores; /* [IMAGES, n] */
    float *probs;  /* [IMAGES, n] */
    int sigmoid;   /* SigLIP: each probability its own sigmoid, not summing to 1 */
} reference;

/* vit_zero_shot of the three images against names put into templates, in one batch. */
static reference library_zero_shot(const char *model, const char *const *names, int n,
                                   const char *const *templates, int n_templates) {
    vit_error err = {0};
    vit_params ip = vit_default_params();
    ip.max_batch = IMAGES;
    vit_context *img = vit_load(model, &ip, &err);
    if (!img) fail_msg("%s", err.msg);
    vit_text_context *txt = vit_text_load(model, NULL, &err);
    if (!txt) fail_msg("%s", err.msg);
    vit_classes *classes = vit_classes_create(txt, names, n, templates, n_templates, &err);
    if (!classes) fail_msg("%s", err.msg);
    const size_t F = vit_input_floats(img);
    float *pixels = test_alloc_floats(IMAGES * F);
    for (int i = 0; i < IMAGES; i++)
        if (vit_preprocess_file(img, image_paths[i], pixels + i * F, &err) != 0)
            fail_msg("%s", err.msg);
    reference ref = {n, test_alloc_floats((size_t)IMAGES * n),
                     test_alloc_floats((size_t)IMAGES * n), vit_classes_sigmoid(classes)};
    if (vit_zero_shot(img, classes, pixels, IMAGES, ref.scores, ref.probs, &err) != 0)
        fail_msg("%s", err.msg);
    free(pixels);
    vit_classes_free(classes);
    vit_text_free(txt);
    vit_free(img);
    return ref;
}

static void reference_free(reference *r) {
    free(r->scores);
    free(r->probs);
}

/* One `classify --json --logits` line against image i of the reference: every score, and the top
 * k in order with their probabilities and names. */
static void expect_line(const cJSON *line, const reference *ref, int i, const char *const *names,
                        int k) {
    const cJSON *logits = cJSON_GetObjectItem(line, "logits"),
                *top = cJSON_GetObjectItem(line, "top");
    assert_int_equal(cJSON_GetArraySize(logits), ref->n);
    for (int c = 0; c < ref->n; c++)
        assert_float_equal(cJSON_GetArrayItem(logits, c)->valuedouble, ref->scores[i * ref->n + c],
                           1e-5);
    assert_int_equal(cJSON_GetArraySize(top), k);
    double previous = 2;
    for (int j = 0; j < k; j++) {
        const cJSON *t = cJSON_GetArrayItem(top, j);
        const int index = cJSON_GetObjectItem(t, "index")->valueint;
        const double prob = cJSON_GetObjectItem(t, "prob")->valuedouble;
        assert_true(index >= 0 && index < ref->n);
        assert_float_equal(prob, ref->probs[i * ref->n + index], 1e-6);
        assert_string_equal(cJSON_GetObjectItem(t, "label")->valuestring, names[index]);
        assert_true(prob <= previous);
        previous = prob;
    }
    if (k == ref->n && !ref->sigmoid) { /* CLIP: the softmax over the classes */
        double sum = 0;
        for (int j = 0; j < k; j++)
            sum += cJSON_GetObjectItem(cJSON_GetArrayItem(top, j), "prob")->valuedouble;
        assert_float_equal(sum, 1.0, 1e-5);
    }
}

/* ---- classify ---- */

/* --classes with the default template, both CLIP configurations: the library's scores and
 * probabilities; -k cut to the classes. */
static void test_classes(void **state) {
    (void)state;
    REQUIRE_BIN();
    const char *names[] = {"a photo of a cat", "dog", "a red car", "bird", "the photo 12"};
    const char *template = DEFAULT_TEMPLATE;
    const char *models[] = {CLIP, CLIP_GELU, SIGLIP};
    for (int m = 0; m < 3; m++) {
        vit_error err = {0};
        vit_text_context *probe = vit_text_load(models[m], NULL, &err);
        if (!probe) { /* SigLIP's tokenizer where the build has SentencePiece */
            print_message("SKIP %s: %s\n", models[m], err.msg);
            continue;
        }
        vit_text_free(probe);
        reference ref = library_zero_shot(models[m], names, 5, &template, 1);
        const char *args[] = {"classify", "-m", models[m], "--json", "--logits", "-k", "9",
                              "--classes",
                              /* spaces around the names are dropped */
                              " a photo of a cat,dog ,a red car,  bird,the photo 12",
                              image_paths[0], image_paths[1], image_paths[2], NULL};
        test_run_result r = run(NULL, args);
        if (r.status != 0) fail_msg("exit %d: %s", r.status, r.err);
        assert_string_equal(r.err, "");
        cJSON *lines = json_lines(r.out);
        assert_int_equal(cJSON_GetArraySize(lines), IMAGES);
        for (int i = 0; i < IMAGES; i++) {
            const cJSON *line = cJSON_GetArrayItem(lines, i);
            assert_string_equal(cJSON_GetObjectItem(line, "file")->valuestring, image_paths[i]);
            expect_line(line, &ref, i, names, 5);
        }
        cJSON_Delete(lines);
        test_run_free(&r);
        reference_free(&ref);
    }
}

/* Several templates are averaged (CLIP's prompt ensembling): in any order, from --template and
 * --templates alike (blank lines skipped; a template without {} used as it is), as the library
 * computes them; and not what one template alone gives. */
static void test_ensembling(void **state) {
    (void)state;
    REQUIRE_BIN();
    const char *names[] = {"cat", "dog", "car"};
    const char *templates[] = {"a photo of a {}.", "a {} and a {}", "a blurry picture"};
    reference ref = library_zero_shot(CLIP, names, 3, templates, 3);
    const char *file = tmp("templates.txt");
    write_text(file, "\n  a {} and a {}\r\n\na photo of a {}.\n");
    const char *const in_order[] = {
        "classify",    "-m",           CLIP,           "--json",       "--logits",   "--classes",
        "cat,dog,car", "--template",   templates[0],   "--template",   templates[1], "--template",
        templates[2],  image_paths[0], image_paths[1], image_paths[2], NULL};
    const char *const shuffled[] = {"classify",     "-m",           CLIP,          "--json",
                                    "--logits",     "--classes",    "cat,dog,car", "--templates",
                                    file,           "--template",   templates[2],  image_paths[0],
                                    image_paths[1], image_paths[2], NULL};
    const char *const *runs[] = {in_order, shuffled};
    for (int v = 0; v < 2; v++) {
        test_run_result r = run(NULL, runs[v]);
        if (r.status != 0) fail_msg("exit %d: %s", r.status, r.err);
        cJSON *lines = json_lines(r.out);
        for (int i = 0; i < IMAGES; i++)
            expect_line(cJSON_GetArrayItem(lines, i), &ref, i, names, 3);
        cJSON_Delete(lines);
        test_run_free(&r);
    }
    /* one template alone is another answer: the ensemble is not its first member */
    reference one = library_zero_shot(CLIP, names, 3, templates, 1);
    double differ = 0;
    for (int i = 0; i < IMAGES * 3; i++) differ = fmax(differ, fabs(one.scores[i] - ref.scores[i]));
    assert_true(differ > 1e-3);
    reference_free(&one);
    reference_free(&ref);
}

/* --classes-file (CRLF, surrounding spaces; a name with a comma) in CSV: the names quoted, the
 * library's ranks and probabilities; --stdin-image: the first image's scores. */
static void test_classes_file_csv_stdin(void **state) {
    (void)state;
    REQUIRE_BIN();
    const char *names[] = {"a photo of a cat", "dog", "tabby, tabby cat"};
    const char *template = DEFAULT_TEMPLATE;
    reference ref = library_zero_shot(CLIP, names, 3, &template, 1);
    const char *file = tmp("classes.txt");
    write_text(file, "  a photo of a cat \r\ndog\r\ntabby, tabby cat\r\n");
    const char *const args[] = {
        "classify", "-m",           CLIP,           "--format",     "csv", "--classes-file",
        file,       image_paths[0], image_paths[1], image_paths[2], NULL};
    test_run_result r = run(NULL, args);
    if (r.status != 0) fail_msg("exit %d: %s", r.status, r.err);
    assert_int_equal(count_lines(r.out), 1 + IMAGES * 3);
    assert_true(strncmp(r.out, "file,rank,index,label,prob\n", 27) == 0);
    for (int i = 0; i < IMAGES; i++) {
        int best = 0;
        for (int c = 1; c < 3; c++)
            if (ref.probs[i * 3 + c] > ref.probs[i * 3 + best]) best = c;
        char row[512];
        snprintf(row, sizeof row, "\n%s,1,%d,%s%s%s,%.6f\n", image_paths[i], best,
                 best == 2 ? "\"" : "", names[best], best == 2 ? "\"" : "",
                 ref.probs[i * 3 + best]);
        if (!strstr(r.out, row)) fail_msg("no row %s in:\n%s", row + 1, r.out);
    }
    test_run_free(&r);
    const char *const one[] = {
        "classify",      "-m", CLIP, "--json", "--logits", "--classes-file", file,
        "--stdin-image", NULL};
    r = run(image_paths[0], one);
    if (r.status != 0) fail_msg("exit %d: %s", r.status, r.err);
    cJSON *lines = json_lines(r.out);
    assert_int_equal(cJSON_GetArraySize(lines), 1);
    expect_line(cJSON_GetArrayItem(lines, 0), &ref, 0, names, 3);
    cJSON_Delete(lines);
    test_run_free(&r);
    reference_free(&ref);
}

/* A labelled folder: three classes named as the class names (or as x0, x1, x2 for a class map),
 * the golden images spread over them. */
static const char *make_folder(const char *name, const char *const *classes) {
    const char *dir = tmp(name);
    assert_int_equal(mkdir(dir, 0700), 0);
    for (int c = 0; c < 3; c++) {
        char sub[4300];
        snprintf(sub, sizeof sub, "%s/%s", dir, classes[c]);
        assert_int_equal(mkdir(sub, 0700), 0);
        for (int i = 0; i < IMAGES; i++) {
            if ((i + c) % 3 == 2) continue; /* two images per class */
            char to[4400];
            snprintf(to, sizeof to, "%s/%d%s", sub, i, strrchr(image_paths[i], '.'));
            copy_file(image_paths[i], to);
        }
    }
    return dir;
}

/* What is refused, each in one line: exit 2 for the command line, 1 for a file or a model. */
static void test_errors(void **state) {
    (void)state;
    REQUIRE_BIN();
    const char *blank = tmp("blank-line.txt"), *empty = tmp("empty.txt");
    write_text(blank, "cat\n\ndog\n");
    write_text(empty, "\n  \n");
    const char *missing = tmp("no-such-file.txt");
    const char *img = image_paths[0];
    const char *const names[] = {"cat", "dog", "car"};
    const char *folder = make_folder("errors-folder", names);
    static const struct {
        int status;
        const char *want;
        const char *args[10];
    } cases[] = {
        {2, "is a joint image-text model", {"classify", "-m", CLIP, NULL}},
        {2,
         "--classes and --classes-file need a CLIP or SigLIP model",
         {"classify", "-m", "models/fashion-vit", "--classes", "cat,dog", NULL}},
        {2,
         "class 2 of \"cat,,dog\" is empty",
         {"classify", "-m", CLIP, "--classes", "cat,,dog", NULL}},
        {2, "class 1 of \" \" is empty", {"classify", "-m", CLIP, "--classes", " ", NULL}},
        {2,
         "class 3 of \"cat,dog,\" is empty",
         {"classify", "-m", CLIP, "--classes", "cat,dog,", NULL}},
        {2, "not both", {"classify", "-m", CLIP, "--classes", "a", "--classes-file", "f", NULL}},
        {2,
         "--template and --templates need --classes",
         {"classify", "-m", CLIP, "--template", "a {}", NULL}},
        {2, "--labels renames", {"classify", "-m", CLIP, "--classes", "a", "--labels", "f", NULL}},
        {2, "is a joint image-text model", {"eval", "-m", CLIP, NULL}},
        /* folders that match no name: said before the names are embedded */
        {2, "folder 'car' matches no label", {"eval", "-m", CLIP, "--classes", "a,b", NULL}},
        {2,
         "--classes and --classes-file are for image folders",
         {"eval", "-m", CLIP, "--classes", "a,b", NULL}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *args[16];
        int n = 0;
        for (; cases[i].args[n]; n++) args[n] = cases[i].args[n];
        /* the operand: an image for classify; a folder (or a TSV file) for eval */
        if (strcmp(args[0], "classify") == 0) {
            args[n++] = img;
        } else if (i == sizeof cases / sizeof cases[0] - 1) {
            const char *tsv = tmp("sentences.tsv");
            write_text(tsv, "sentence\tlabel\na\t0\n");
            args[n++] = tsv;
        } else {
            args[n++] = folder;
        }
        args[n] = NULL;
        test_run_result r = run(NULL, args);
        if (r.status != cases[i].status)
            fail_msg("case %zu: exit %d, want %d: %s", i, r.status, cases[i].status, r.err);
        expect_one_line(&r, args[0], cases[i].want);
        assert_string_equal(r.out, "");
        test_run_free(&r);
    }
    /* the files: each error names the file (and the line) */
    const struct {
        const char *option, *file, *want;
    } files[] = {
        {"--classes-file", missing, "no-such-file.txt"},
        {"--classes-file", blank, "blank-line.txt:2: an empty class name"},
        {"--classes-file", empty, "empty.txt:1: an empty class name"},
        {"--templates", empty, "empty.txt: no templates"},
        {"--templates", missing, "no-such-file.txt"},
    };
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        const int templates = strcmp(files[i].option, "--templates") == 0;
        const char *const args[] = {"classify",
                                    "-m",
                                    CLIP,
                                    templates ? "--classes" : files[i].option,
                                    templates ? "cat" : files[i].file,
                                    files[i].option,
                                    files[i].file,
                                    img,
                                    NULL};
        /* for --classes-file the option is given twice: the second (the same) stands */
        test_run_result r = run(NULL, args);
        if (r.status != 1)
            fail_msg("%s %s: exit %d: %s", files[i].option, files[i].file, r.status, r.err);
        expect_one_line(&r, "classify", files[i].want);
        test_run_free(&r);
    }
    /* a joint folder without its tokenizer files: the text tower's one-line refusal */
    const char *nontok[] = {"classify",  "-m",      test_joint_without_tokenizer(),
                            "--classes", "cat,dog", image_paths[0],
                            NULL};
    test_run_result t = test_run_vit(NULL, NULL, nontok);
    assert_int_equal(t.status, 1);
    expect_one_line(&t, "classify", "no tokenizer files");
    test_run_free(&t);
}

/* ---- eval ---- */

/* Zero-shot eval: each image's prediction and probability (--predictions) as the library's, the
 * report's top-1 their count, folders mapped by name or by --class-map's lines, the time it took
 * to embed the names on stderr. */
static void test_eval(void **state) {
    (void)state;
    REQUIRE_BIN();
    const char *names[] = {"cat", "dog", "car"};
    const char *template = DEFAULT_TEMPLATE;
    reference ref = library_zero_shot(CLIP, names, 3, &template, 1);
    int best[IMAGES];
    for (int i = 0; i < IMAGES; i++) {
        best[i] = 0;
        for (int c = 1; c < 3; c++)
            if (ref.probs[i * 3 + c] > ref.probs[i * 3 + best[i]]) best[i] = c;
    }
    const char *by_name = make_folder("eval-names", names);
    const char *const mapped[] = {"x0", "x1", "x2"};
    const char *by_map = make_folder("eval-map", mapped);
    const char *map = tmp("eval-map.txt"), *classes = tmp("eval-classes.txt");
    write_text(map, "x0\nx1\nx2\n");
    write_text(classes, "cat\ndog\ncar\n");
    const char *report = tmp("eval-report.json");
    const char *const runs[][16] = {
        {"eval", "-m", CLIP, "--batch", "4", "--classes", "cat, dog, car", "--predictions", "-",
         "--json-file", report, by_name, NULL},
        {"eval", "-m", CLIP, "--classes-file", classes, "--class-map", map, "--predictions", "-",
         "--json-file", report, by_map, NULL},
    };
    const char *const *folders[] = {names, mapped};
    const char *dirs[] = {by_name, by_map};
    for (int v = 0; v < 2; v++) {
        test_run_result r = run(NULL, runs[v]);
        if (r.status != 0) fail_msg("exit %d: %s", r.status, r.err);
        expect_one_line(&r, "eval", "3 class names x 1 template embedded in ");
        /* file, true, predicted, probability; in the walk's order */
        assert_true(strncmp(r.out, "file\ttrue\tpredicted\tprobability\n", 32) == 0);
        int rows = 0, correct = 0;
        for (int c = 0; c < 3; c++)
            for (int i = 0; i < IMAGES; i++) {
                if ((i + c) % 3 == 2) continue;
                char row[4400];
                snprintf(row, sizeof row, "\n%s/%s/%d%s\t%d\t", dirs[v], folders[v][c], i,
                         strrchr(image_paths[i], '.'), c);
                const char *at = strstr(r.out, row);
                if (!at) fail_msg("no row %s in:\n%s", row + 1, r.out);
                int pred;
                float prob;
                assert_int_equal(sscanf(at + strlen(row), "%d\t%f", &pred, &prob), 2);
                assert_int_equal(pred, best[i]);
                assert_float_equal(prob, ref.probs[i * 3 + best[i]], 1e-6);
                correct += pred == c;
                rows++;
            }
        assert_int_equal(rows, 6);
        assert_int_equal(count_lines(r.out), 1 + 6);
        /* the report: the names as labels, top-1 the predictions' */
        cJSON *json = read_json(report);
        assert_int_equal(cJSON_GetObjectItem(json, "images")->valueint, 6);
        assert_float_equal(cJSON_GetObjectItem(json, "top1")->valuedouble, correct / 6.0, 1e-9);
        const cJSON *first = cJSON_GetArrayItem(cJSON_GetObjectItem(json, "classes"), 0);
        assert_string_equal(cJSON_GetObjectItem(first, "label")->valuestring, "cat");
        assert_string_equal(cJSON_GetObjectItem(first, "folder")->valuestring, folders[v][0]);
        cJSON_Delete(json);
        test_run_free(&r);
    }
    reference_free(&ref);
}

/* imagenet-sample-100 against CLIP's 1,000 ImageNet class names (the micro model is random: the
 * accuracy is chance, the point is that every image is evaluated against the names). */
static void test_eval_imagenet(void **state) {
    (void)state;
    REQUIRE_BIN();
    REQUIRE_SHARED("data/imagenet-sample-100");
    REQUIRE_SHARED("data/clip/imagenet_classes.txt");
    char names[4200], wnids[4200], folder[4200];
    snprintf(names, sizeof names, "%s", shared_path("data/clip/imagenet_classes.txt"));
    snprintf(wnids, sizeof wnids, "%s", shared_path("data/imagenet-wnids.txt"));
    snprintf(folder, sizeof folder, "%s", shared_path("data/imagenet-sample-100"));
    const char *const args[] = {"eval",        "-m",  CLIP,     "--classes-file", names,
                                "--class-map", wnids, "--json", folder,           NULL};
    test_run_result r = run(NULL, args);
    if (r.status != 0) fail_msg("exit %d: %s", r.status, r.err);
    expect_one_line(&r, "eval", "1000 class names x 1 template embedded in ");
    cJSON *report = cJSON_Parse(r.out);
    if (!report) fail_msg("not JSON: %.200s", r.out);
    assert_int_equal(cJSON_GetObjectItem(report, "images")->valueint, 100);
    assert_int_equal(cJSON_GetObjectItem(report, "skipped")->valueint, 0);
    const cJSON *classes = cJSON_GetObjectItem(report, "classes");
    assert_int_equal(cJSON_GetArraySize(classes), 100);
    const cJSON *tench = cJSON_GetArrayItem(classes, 0);
    assert_string_equal(cJSON_GetObjectItem(tench, "label")->valuestring, "tench");
    assert_string_equal(cJSON_GetObjectItem(tench, "folder")->valuestring, "n01440764");
    print_message("  imagenet-sample-100 zero-shot with the random clip-micro: top-1 %.2f, top-5 "
                  "%.2f (chance: 0.001, 0.005)\n",
                  cJSON_GetObjectItem(report, "top1")->valuedouble,
                  cJSON_GetObjectItem(report, "top5")->valuedouble);
    cJSON_Delete(report);
    test_run_free(&r);
}

/* ---- tokenize ---- */

static const cJSON *array_item(const cJSON *a, int i) {
    return cJSON_GetArrayItem(a, i);
}

/* `vit tokenize -m model --json -- texts...`: each line's ids against want[i] (an int array). */
static void expect_ids(const char *model, const cJSON *texts, const cJSON *want_ids,
                       const cJSON *want_pieces) {
    const int n = cJSON_GetArraySize(texts);
    const char *args[128] = {"tokenize", "-m", model, "--json", "--"};
    int argc = 5;
    for (int i = 0; i < n; i++) args[argc++] = array_item(texts, i)->valuestring;
    args[argc] = NULL;
    test_run_result r = run(NULL, args);
    if (r.status != 0) fail_msg("exit %d: %s", r.status, r.err);
    assert_string_equal(r.err, "");
    cJSON *lines = json_lines(r.out);
    assert_int_equal(cJSON_GetArraySize(lines), n);
    for (int i = 0; i < n; i++) {
        const cJSON *line = array_item(lines, i);
        assert_string_equal(cJSON_GetObjectItem(line, "text")->valuestring,
                            array_item(texts, i)->valuestring);
        const cJSON *ids = cJSON_GetObjectItem(line, "ids"), *want = array_item(want_ids, i);
        const cJSON *pieces = cJSON_GetObjectItem(line, "pieces");
        if (cJSON_GetArraySize(ids) != cJSON_GetArraySize(want))
            fail_msg("text %d: %d ids, want %d", i, cJSON_GetArraySize(ids),
                     cJSON_GetArraySize(want));
        assert_int_equal(cJSON_GetArraySize(pieces), cJSON_GetArraySize(want));
        for (int t = 0; t < cJSON_GetArraySize(want); t++) {
            if (array_item(ids, t)->valueint != array_item(want, t)->valueint)
                fail_msg("text %d, token %d: id %d, want %d", i, t, array_item(ids, t)->valueint,
                         array_item(want, t)->valueint);
            if (want_pieces)
                assert_string_equal(array_item(pieces, t)->valuestring,
                                    array_item(array_item(want_pieces, i), t)->valuestring);
        }
    }
    cJSON_Delete(lines);
    test_run_free(&r);
}

/* clip-micro's golden texts (an empty one, one cut to the model's 16 positions) give the
 * reference's ids; the plain output shows the pieces and the ids; standard input's lines. */
static void test_tokenize_clip_micro(void **state) {
    (void)state;
    REQUIRE_BIN();
    cJSON *golden = read_json(CLIP "/golden.json");
    expect_ids(CLIP, cJSON_GetObjectItem(golden, "texts"), cJSON_GetObjectItem(golden, "ids"),
               NULL);
    cJSON_Delete(golden);
    const char *in = tmp("tokenize-in.txt");
    write_text(in, "a photo of a cat\r\n\n");
    test_run_result r = run(in, (const char *const[]){"tokenize", "-m", CLIP, NULL});
    assert_int_equal(r.status, 0);
    assert_string_equal(r.out, "a photo of a cat\n"
                               "  pieces: <|startoftext|> a</w> photo</w> of</w> a</w> cat</w> "
                               "<|endoftext|>\n"
                               "  ids: 530 353 517 522 353 519 531\n"
                               "\n"
                               "  pieces: <|startoftext|> <|endoftext|>\n"
                               "  ids: 530 531\n");
    test_run_free(&r);
    /* invalid UTF-8: warned about; byte-level BPE reads it as U+FFFD (bytes 239 191 189) */
    r = run(NULL, (const char *const[]){"tokenize", "-m", CLIP, "cat\xff", NULL});
    assert_int_equal(r.status, 0);
    expect_one_line(&r, "tokenize", "argument 1: invalid UTF-8 (1 byte; ");
    assert_non_null(strstr(r.out, "ids: 530 519 239 191 445 531\n"));
    test_run_free(&r);
    /* a folder without tokenizer files (an image model) is refused, and so is no model */
    r = run(NULL, (const char *const[]){"tokenize", "-m", "models/fashion-vit", "cat", NULL});
    assert_int_equal(r.status, 1);
    expect_one_line(&r, "tokenize", "models/fashion-vit: no tokenizer files");
    test_run_free(&r);
    r = run(NULL, (const char *const[]){"tokenize", "cat", NULL});
    assert_int_equal(r.status, 2);
    expect_one_line(&r, "tokenize", "no model");
    test_run_free(&r);
}

/* BERT's WordPiece: bert-sst2-tiny's golden texts, ids and pieces. */
static void test_tokenize_bert(void **state) {
    (void)state;
    REQUIRE_BIN();
    REQUIRE_SHARED("models/bert-sst2-tiny/golden.json");
    cJSON *golden = read_json(shared_path("models/bert-sst2-tiny/golden.json"));
    cJSON *texts = cJSON_CreateArray(), *ids = cJSON_CreateArray(), *pieces = cJSON_CreateArray();
    const cJSON *item;
    cJSON_ArrayForEach(item, golden) {
        cJSON_AddItemToArray(texts, cJSON_Duplicate(cJSON_GetObjectItem(item, "text"), 1));
        cJSON_AddItemToArray(ids, cJSON_Duplicate(cJSON_GetObjectItem(item, "ids"), 1));
        cJSON_AddItemToArray(pieces, cJSON_Duplicate(cJSON_GetObjectItem(item, "pieces"), 1));
    }
    expect_ids(shared_path("models/bert-sst2-tiny"), texts, ids, pieces);
    cJSON_Delete(texts);
    cJSON_Delete(ids);
    cJSON_Delete(pieces);
    cJSON_Delete(golden);
}

/* A CLIP folder with the real vocabulary: clip-micro's towers with a token table of 49,408 rows
 * and 77 positions, CLIP's vocab.json and merges.txt, model_max_length 77. */
static const char *real_vocab_model(void) {
    const char *dir = tmp("clip-real-vocab");
    assert_int_equal(mkdir(dir, 0700), 0);
    char path[4400];
    vit_error err = {0};
    st_file in;
    if (st_open(CLIP "/model.safetensors", &in, &err) != 0) fail_msg("%s", err.msg);
    st_entry *entries = calloc((size_t)in.count, sizeof *entries);
    float **data = calloc((size_t)in.count, sizeof *data);
    for (int i = 0; i < in.count; i++) {
        const st_tensor *t = &in.tensors[i];
        st_entry *e = &entries[i];
        e->name = t->name;
        e->ndim = t->ndim;
        memcpy(e->shape, t->shape, sizeof e->shape);
        int64_t numel = t->numel;
        if (strcmp(t->name, "text_model.embeddings.token_embedding.weight") == 0)
            e->shape[0] = 49408;
        if (strcmp(t->name, "text_model.embeddings.position_embedding.weight") == 0)
            e->shape[0] = 77;
        if (e->shape[0] != (t->ndim ? t->shape[0] : 0)) numel = e->shape[0] * t->shape[1];
        data[i] = test_alloc_floats((size_t)(numel ? numel : 1));
        if (numel == t->numel) {
            if (st_to_f32(&in, t, data[i], &err) != 0) fail_msg("%s", err.msg);
        } else {
            test_fill(data[i], (size_t)numel, -0.1f, 0.1f);
        }
        e->data = data[i];
    }
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    if (st_write_f32(path, entries, in.count, &err) != 0) fail_msg("%s", err.msg);
    for (int i = 0; i < in.count; i++) free(data[i]);
    free(data);
    free(entries);
    st_close(&in);
    cJSON *config = read_json(CLIP "/config.json");
    cJSON *text = cJSON_GetObjectItem(config, "text_config");
    cJSON_ReplaceItemInObject(text, "vocab_size", cJSON_CreateNumber(49408));
    cJSON_ReplaceItemInObject(text, "max_position_embeddings", cJSON_CreateNumber(77));
    char *json = cJSON_Print(config);
    snprintf(path, sizeof path, "%s/config.json", dir);
    write_text(path, json);
    free(json);
    cJSON_Delete(config);
    snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
    write_text(path, "{\"model_max_length\": 77, \"pad_token\": \"<|endoftext|>\"}\n");
    const char *files[] = {"vocab.json", "merges.txt"};
    for (int i = 0; i < 2; i++) {
        char from[4200];
        snprintf(from, sizeof from, "data/clip/%s", files[i]);
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        copy_file(shared_path(from), path);
    }
    return dir;
}

/* OpenAI's tokenizer's ids of 26 texts (../shared/data/clip/tokenizer-golden.json), cut to the
 * 77-token context as CLIP cuts them (ids_77). */
static void test_tokenize_real_vocab(void **state) {
    (void)state;
    REQUIRE_BIN();
    REQUIRE_SHARED("data/clip/tokenizer-golden.json");
    const char *model = real_vocab_model();
    cJSON *golden = read_json(shared_path("data/clip/tokenizer-golden.json"));
    cJSON *texts = cJSON_CreateArray(), *ids = cJSON_CreateArray();
    const cJSON *item;
    cJSON_ArrayForEach(item, cJSON_GetObjectItem(golden, "cases")) {
        cJSON_AddItemToArray(texts, cJSON_Duplicate(cJSON_GetObjectItem(item, "text"), 1));
        cJSON_AddItemToArray(ids, cJSON_Duplicate(cJSON_GetObjectItem(item, "ids_77"), 1));
    }
    assert_int_equal(cJSON_GetArraySize(texts), 26);
    expect_ids(model, texts, ids, NULL);
    cJSON_Delete(texts);
    cJSON_Delete(ids);
    cJSON_Delete(golden);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_classes),
        cmocka_unit_test(test_ensembling),
        cmocka_unit_test(test_classes_file_csv_stdin),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_eval),
        cmocka_unit_test(test_eval_imagenet),
        cmocka_unit_test(test_tokenize_clip_micro),
        cmocka_unit_test(test_tokenize_bert),
        cmocka_unit_test(test_tokenize_real_vocab),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
