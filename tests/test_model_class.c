/* A config.json that names no class (issue 41): SigLIP 2's, many base models' and hand-written
 * ones have no `architectures`. The weights then say which class the folder is: a classifier's
 * or a projection's tensors present, the class holding them; absent, the base model (ViTModel,
 * BertModel, CLIPVisionModel); DeiTModel and CLIPTextModel, which vit does not run, refused in
 * one line. Each folder is a micro folder of tests/data with its architectures taken out and its
 * weights with or without the head's tensors; the expectation is the same weights under a
 * config.json naming the class: the same class, the same parameters bit for bit. */
#include "tests/testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "vit/io/model_dir.h"
#include "vit/io/safetensors.h"
#include "vit/model/params.h"

/* Writes src's config.json into dir with `architectures` set to arch (NULL: taken out). */
static void write_config(const char *src, const char *dir, const char *arch) {
    char path[600];
    snprintf(path, sizeof path, "%s/config.json", src);
    char *text = (char *)read_whole_file(path, NULL);
    assert_non_null(text);
    cJSON *root = cJSON_Parse(text);
    free(text);
    assert_non_null(root);
    cJSON_DeleteItemFromObjectCaseSensitive(root, "architectures");
    if (arch) {
        cJSON *list = cJSON_AddArrayToObject(root, "architectures");
        cJSON_AddItemToArray(list, cJSON_CreateString(arch));
    }
    char *out = cJSON_Print(root);
    cJSON_Delete(root);
    snprintf(path, sizeof path, "%s/config.json", dir);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs(out, f);
    fclose(f);
    free(out);
}

/* src's model.safetensors into dir without the tensors whose names start with drop (NULL: none)
 * and with a [2, width] classifier added when add_classifier (its values: 0.01 * index). */
static void write_weights(const char *src, const char *dir, const char *drop, int add_classifier,
                          int width) {
    char path[600];
    snprintf(path, sizeof path, "%s/model.safetensors", src);
    st_file f;
    vit_error err = {0};
    if (st_open(path, &f, &err) != 0) fail_msg("%s", err.msg);
    st_entry *e = calloc((size_t)f.count + 2, sizeof *e);
    float *w = calloc((size_t)2 * width + 2, sizeof *w);
    for (int i = 0; i < 2 * width + 2; i++) w[i] = 0.01f * (float)i;
    int n = 0;
    for (int i = 0; i < f.count; i++) {
        const st_tensor *t = &f.tensors[i];
        if (drop && strncmp(t->name, drop, strlen(drop)) == 0) continue;
        e[n] = (st_entry){.name = t->name, .ndim = t->ndim, .data = t->data, .dtype = t->dtype};
        memcpy(e[n++].shape, t->shape, sizeof t->shape);
    }
    if (add_classifier) {
        e[n++] = (st_entry){.name = "classifier.weight", .ndim = 2, .shape = {2, width}, .data = w};
        e[n++] =
            (st_entry){.name = "classifier.bias", .ndim = 1, .shape = {2}, .data = w + 2 * width};
    }
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    if (st_write_f32(path, e, n, &err) != 0) fail_msg("%s", err.msg);
    st_close(&f);
    free(e);
    free(w);
}

/* A folder tag in the temporary directory: src's weights (less drop, plus a classifier) under
 * its config.json with architectures arch (NULL: none). */
static const char *folder(const char *tag, const char *src, const char *arch, const char *drop,
                          int add_classifier, int width) {
    static char dirs[4][512];
    static int next;
    char *dir = dirs[next++ % 4];
    snprintf(dir, 512, "%s/%s", test_tmpdir(), tag);
    mkdir(dir, 0777);
    write_config(src, dir, arch);
    write_weights(src, dir, drop, add_classifier, width);
    return dir;
}

/* src's weights (less drop, plus a classifier) load without architectures as want_class, the
 * same parameters as under a config.json naming it. */
static void expect_class(const char *src, const char *drop, int add_classifier, int width,
                         const char *want_class) {
    const char *named = folder("named", src, want_class, drop, add_classifier, width);
    const char *unnamed = folder("unnamed", src, NULL, drop, add_classifier, width);
    model want, got;
    vit_error err = {0};
    if (model_load(&want, named, &err) != 0) fail_msg("%s: %s", src, err.msg);
    if (model_load(&got, unnamed, &err) != 0)
        fail_msg("%s without architectures: %s", src, err.msg);
    if (strcmp(config_architecture(&got.cfg), want_class) != 0)
        fail_msg("%s without architectures: %s, expected %s", src, config_architecture(&got.cfg),
                 want_class);
    assert_int_equal(got.num_params, want.num_params);
    assert_int_equal(got.cfg.num_labels, want.cfg.num_labels);
    assert_memory_equal(got.params, want.params, sizeof(float) * want.num_params);
    model_free(&want);
    model_free(&got);
}

static void test_class_from_weights(void **state) {
    (void)state;
    expect_class(TEST_DATA "/micro-a", NULL, 0, 0, "ViTForImageClassification");
    expect_class(TEST_DATA "/vit-base-micro", NULL, 0, 0, "ViTModel");
    expect_class(TEST_DATA "/bert-base-micro", NULL, 0, 0, "BertModel");
    expect_class(TEST_DATA "/bert-base-micro", NULL, 1, 32, "BertForSequenceClassification");
    expect_class(TEST_DATA "/deit-micro", NULL, 0, 0, "DeiTForImageClassification");
    expect_class(TEST_DATA "/deit-micro-teacher", NULL, 0, 0,
                 "DeiTForImageClassificationWithTeacher");
    expect_class(TEST_DATA "/clip-vision-micro", NULL, 0, 0, "CLIPVisionModel");
    expect_class(TEST_DATA "/clip-vision-proj-micro", NULL, 0, 0, "CLIPVisionModelWithProjection");
    expect_class(TEST_DATA "/clip-vision-proj-micro", "visual_projection", 0, 0, "CLIPVisionModel");
    expect_class(TEST_DATA "/clip-text-proj-micro", NULL, 0, 0, "CLIPTextModelWithProjection");
}

/* model_load of dir fails in one line naming dir/config.json and containing needle. */
static void expect_refused(const char *dir, const char *needle) {
    model m;
    vit_error err = {0};
    char path[600];
    snprintf(path, sizeof path, "%s/config.json", dir);
    assert_int_equal(model_load(&m, dir, &err), -1);
    if (!strstr(err.msg, path) || !strstr(err.msg, needle) || strchr(err.msg, '\n'))
        fail_msg("expected '%s: ...%s' in '%s'", path, needle, err.msg);
}

/* The base models vit does not run are refused, not run as a class whose tensors are missing;
 * a config.json naming a class is read as it says, whatever the weights hold. */
static void test_refused_and_named(void **state) {
    (void)state;
    expect_refused(folder("deit-base", TEST_DATA "/deit-micro", NULL, "classifier", 0, 0),
                   "DeiTModel (no classifier.weight), which vit does not run");
    expect_refused(
        folder("clip-text", TEST_DATA "/clip-text-proj-micro", NULL, "text_projection", 0, 0),
        "CLIPTextModel (no text_projection.weight), which vit does not run");
    const char *named =
        folder("named-head", TEST_DATA "/vit-base-micro", "ViTForImageClassification", NULL, 0, 0);
    model m;
    vit_error err = {0};
    assert_int_equal(model_load(&m, named, &err), -1);
    if (!strstr(err.msg, "missing tensor 'classifier.weight'"))
        fail_msg("expected the missing classifier, got '%s'", err.msg);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_class_from_weights),
        cmocka_unit_test(test_refused_and_named),
    };
    return cmocka_run_group_tests_name("model_class", tests, NULL, NULL);
}
