/* `vit train` on text: a BERT classifier trained from a sentence<TAB>label file and a vocabulary,
 * saved as a Hugging Face BERT folder that the text evaluation reads back; resume; bad input. */
#include "tests/testutil.h"

#include <math.h>
#include "vit/base/rng.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vit/base/json.h"
#include "vit/io/model_dir.h"
#include "vit/model/params.h"
#include "vit/io/safetensors.h"
#include "vit/data/text_set.h"
#include "vit/eval/eval_text.h"
#include "vit/data/image_set.h"
#include "vit/train/run.h"

static const char *const positive[] = {"good", "great", "fine", "lovely"};
static const char *const negative[] = {"bad", "awful", "poor", "dull"};
static const char *const filler[] = {"the", "movie", "was", "film", "plot", "very", "a", "and"};

static const char *make_vocab(void) {
    static char path[4096];
    if (path[0]) return path;
    snprintf(path, sizeof path, "%s/toy-vocab.txt", test_tmpdir());
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n.\n", f);
    for (int i = 0; i < 4; i++) fprintf(f, "%s\n%s\n", positive[i], negative[i]);
    for (int i = 0; i < 8; i++) fprintf(f, "%s\n", filler[i]);
    assert_int_equal(fclose(f), 0);
    return path;
}

/* n sentences of 1..12 filler words with one sentiment word somewhere, labelled by name or by
 * index; with noisy set, one label in 8 is the wrong one (so accuracies are not all 1). */
static const char *make_tsv(const char *name, int n, uint64_t seed, int noisy) {
    static char paths[2][4096];
    char *path = paths[seed & 1];
    snprintf(path, 4096, "%s/%s", test_tmpdir(), name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("sentence\tlabel\n", f);
    uint64_t st = seed;
    for (int i = 0; i < n; i++) {
        const int label = (int)(rng_next(&st) % 2), words = 1 + (int)(rng_next(&st) % 12);
        const int at = (int)(rng_next(&st) % (uint64_t)words);
        for (int w = 0; w < words; w++) {
            const char *word = w == at ? (label ? positive : negative)[rng_next(&st) % 4]
                                       : filler[rng_next(&st) % 8];
            fprintf(f, "%s%s", w ? " " : "", word);
            if (w == at && rng_next(&st) % 4 == 0) fputs(" .", f);
        }
        const int written = noisy && rng_next(&st) % 8 == 0 ? !label : label;
        if (i % 3 == 0)
            fprintf(f, "\t%d\n", written);
        else
            fprintf(f, "\t%s\n", written ? "positive" : "negative");
    }
    assert_int_equal(fclose(f), 0);
    return path;
}

static const char *write_text(const char *name, const char *text) {
    return write_temp_file(name, text, strlen(text));
}

static const char *make_labels(void) {
    return write_text("toy-labels.txt", "negative\npositive\n");
}

static train_options tiny_text_run(const char *out) {
    train_options o = train_default_options();
    o.train_path = make_tsv("toy-train.tsv", 96, 11, 0);
    o.labels_file = make_labels();
    o.vocab_file = make_vocab();
    o.out_dir = out;
    o.val_split = 0.25f;
    o.max_len = 16;
    o.hidden_size = 16, o.num_layers = 2, o.num_heads = 2, o.mlp_size = 32;
    o.epochs = 3, o.batch = 8;
    o.lr = 3e-3f, o.warmup_epochs = 0.5f;
    o.dropout = 0.1f, o.attention_dropout = 0.1f; /* every generator stream in use */
    o.token_dropout = 0.1f;
    o.seed = 3;
    o.threads = 1;
    return o;
}

static void out_dir(char *buf, size_t size, const char *name) {
    snprintf(buf, size, "%s/%s", test_tmpdir(), name);
}

static char *read_text(const char *dir, const char *name) {
    char path[4300];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    size_t n;
    uint8_t *bytes = read_whole_file(path, &n);
    if (!bytes) fail_msg("%s missing", path);
    return (char *)bytes;
}

/* The last line's value of "key": in train_log.jsonl. */
static double last_logged(const char *dir, const char *key) {
    char *log = read_text(dir, TRAIN_LOG_FILE), *at = NULL, pattern[64];
    snprintf(pattern, sizeof pattern, "\"%s\": ", key);
    for (char *p = strstr(log, pattern); p; p = strstr(p + 1, pattern)) at = p;
    assert_non_null(at);
    const double v = atof(at + strlen(pattern));
    free(log);
    return v;
}

/* The classes of a TSV without a label list. */
static void test_tsv_classes(void **state) {
    (void)state;
    vit_error err = {0};
    char **names;
    int n;
    const char *idx = write_text("idx.tsv", "sentence\tlabel\na\t0\nb\t2\n\nc\t0\n");
    assert_int_equal(text_tsv_classes(idx, 0, &names, &n, &err), 0);
    assert_int_equal(n, 3); /* the largest index sets the count: LABEL_1 exists unseen */
    assert_string_equal(names[0], "LABEL_0");
    assert_string_equal(names[2], "LABEL_2");
    for (int i = 0; i < n; i++) free(names[i]);
    free(names);
    const char *named = write_text("named.tsv", "s\tl\na\tpos\r\nb\t neg \nc\tpos\n");
    assert_int_equal(text_tsv_classes(named, 0, &names, &n, &err), 0);
    assert_int_equal(n, 2);
    assert_string_equal(names[0], "neg"); /* byte order, trimmed */
    assert_string_equal(names[1], "pos");
    for (int i = 0; i < n; i++) free(names[i]);
    free(names);
    const char *bad = write_text("notab.tsv", "s\tl\nno tab here\n");
    assert_int_equal(text_tsv_classes(bad, 0, &names, &n, &err), -1);
    assert_non_null(strstr(err.msg, "notab.tsv:2 (data line 1): no tab"));
}

/* A tiny BERT learns the toy task, and the folder it writes is a BERT model the evaluation reads:
 * its accuracy on the validation file equals the one the trainer logged. */
static void test_text_training_learns(void **state) {
    (void)state;
    char dir[4200];
    out_dir(dir, sizeof dir, "text-learns");
    train_options o = tiny_text_run(dir);
    o.val_path = make_tsv("toy-val.tsv", 64, 12, 1);
    o.val_split = 0;
    o.epochs = 12;
    o.dropout = o.attention_dropout = o.token_dropout = 0;
    vit_error err = {0};
    if (train_run(&o, 0, NULL, &err) != 0) fail_msg("%s", err.msg);
    const double logged = last_logged(dir, "val_top1");
    print_message("  validation top-1 %.4f (chance 0.5; 1/8 of the labels wrong)\n", logged);
    assert_true(logged >= 0.75 && logged < 1.0);

    char *config = read_text(dir, "config.json");
    assert_non_null(strstr(config, "\"BertForSequenceClassification\""));
    assert_non_null(strstr(config, "\"positive\""));
    free(config);
    char *tok = read_text(dir, "tokenizer_config.json");
    assert_non_null(strstr(tok, "\"do_lower_case\":\ttrue"));
    free(tok);
    char path[4300];
    snprintf(path, sizeof path, "%s/preprocessor_config.json", dir);
    assert_int_equal(access(path, F_OK), -1);

    text_eval_result res;
    if (text_eval_tsv(dir, o.val_path, &(text_eval_options){.batch = 5, .threads = 1}, NULL, &res,
                      &err) != 0)
        fail_msg("%s", err.msg);
    print_message("  the saved model through vit eval: top-1 %.4f\n", eval_report_top1(res.report));
    assert_true(eval_report_top1(res.report) == logged);
    text_eval_result_free(&res);
}

static void expect_same_text_run(const char *a, const char *b) {
    model ma, mb;
    vit_error err = {0};
    if (model_load(&ma, a, &err) != 0 || model_load(&mb, b, &err) != 0) fail_msg("%s", err.msg);
    assert_int_equal(ma.num_params, mb.num_params);
    assert_memory_equal(ma.params, mb.params, ma.num_params * sizeof(float));
    model_free(&ma), model_free(&mb);
    assert_true(last_logged(a, "val_loss") == last_logged(b, "val_loss"));
    assert_true(last_logged(a, "train_loss") == last_logged(b, "train_loss"));
}

/* 72 training sentences in batches of 8: 9 steps an epoch; stopped at step 13, then resumed. */
static void test_text_resume(void **state) {
    (void)state;
    char whole[4200], split[4200];
    out_dir(whole, sizeof whole, "text-whole");
    out_dir(split, sizeof split, "text-split");
    vit_error err = {0};
    train_options o = tiny_text_run(whole);
    if (train_run(&o, 0, NULL, &err) != 0) fail_msg("%s", err.msg);
    o = tiny_text_run(split);
    const train_hooks stop = {.stop_at_step = 13};
    assert_int_equal(train_run(&o, 0, &stop, &err), 1);
    const train_options r = {.out_dir = split, .threads = 1};
    if (train_run(&r, 1, NULL, &err) != 0) fail_msg("%s", err.msg);
    expect_same_text_run(whole, split);
}

/* Fine-tuning a text model: its tokenizer files travel with it, its head is kept when the labels
 * agree, and a linear probe changes only the pooler and the classifier. */
static void test_text_fine_tune(void **state) {
    (void)state;
    char base[4200], tuned[4200];
    out_dir(base, sizeof base, "text-base");
    out_dir(tuned, sizeof tuned, "text-probe");
    vit_error err = {0};
    train_options o = tiny_text_run(base);
    o.epochs = 1;
    if (train_run(&o, 0, NULL, &err) != 0) fail_msg("%s", err.msg);
    o = tiny_text_run(tuned);
    o.vocab_file = NULL;
    o.init_dir = base;
    o.freeze_encoder = 1;
    o.epochs = 2;
    if (train_run(&o, 0, NULL, &err) != 0) fail_msg("%s", err.msg);
    free(read_text(tuned, "vocab.txt"));
    model a, b;
    if (model_load(&a, base, &err) != 0 || model_load(&b, tuned, &err) != 0)
        fail_msg("%s", err.msg);
    int changed = 0;
    for (int i = 0; i < a.num_entries; i++) {
        const param_entry *e = &a.entries[i];
        const int head = !strncmp(e->name, "pooler.", 7) || !strncmp(e->name, "classifier.", 11);
        const int same =
            !memcmp(a.params + e->offset, b.params + e->offset, e->numel * sizeof(float));
        if (!head && !same) fail_msg("%s changed under --freeze-encoder", e->name);
        changed += head && !same;
    }
    assert_int_equal(changed, 4);
    model_free(&a), model_free(&b);
}

/* A BertModel (no classifier: tests/data/bert-base-micro, tools/base_model_reference.py) starts a
 * run as DINOv2's base models do: it becomes a BertForSequenceClassification with its encoder and
 * pooler and a new classifier (issue 40: it was refused for a missing classifier). */
static void test_text_fine_tune_base_model(void **state) {
    (void)state;
    char tuned[4200];
    out_dir(tuned, sizeof tuned, "text-from-bert-model");
    train_options o = tiny_text_run(tuned);
    o.vocab_file = NULL;
    o.init_dir = TEST_DATA "/bert-base-micro";
    o.epochs = 1;
    vit_error err = {0};
    if (train_run(&o, 0, NULL, &err) != 0) fail_msg("%s", err.msg);
    model from, m;
    if (model_load(&from, o.init_dir, &err) != 0 || model_load(&m, tuned, &err) != 0)
        fail_msg("%s", err.msg);
    assert_string_equal(config_architecture(&from.cfg), "BertModel");
    assert_string_equal(config_architecture(&m.cfg), "BertForSequenceClassification");
    assert_int_equal(m.cfg.num_labels, 2);
    assert_int_equal(m.num_entries, from.num_entries + 2); /* + classifier */
    const char *names[] = {"encoder.layer.1.output.dense.weight", "pooler.dense.weight"};
    for (int i = 0; i < 2; i++) {
        const param_entry *x = model_find_param(&from, names[i]),
                          *y = model_find_param(&m, names[i]);
        assert_true(x && y);
        double moved = 0;
        for (size_t j = 0; j < x->numel; j++)
            moved = fmax(moved, fabs(from.params[x->offset + j] - m.params[y->offset + j]));
        print_message("  %s moved by up to %.3g\n", names[i], moved);
        assert_true(moved > 0 && moved < 0.1); /* trained from the base model's values */
    }
    free(read_text(tuned, "vocab.txt"));
    model_free(&from), model_free(&m);
}

/* The folder is laid out as Hugging Face's: the same tensor names as the PyTorch-trained
 * bert-sst2-tiny (the shapes differ: another size), every config.json field it has. */
static void test_text_layout_matches_hf(void **state) {
    (void)state;
    REQUIRE_SHARED("models/bert-sst2-tiny");
    char dir[4200], path[4300];
    out_dir(dir, sizeof dir, "text-layout");
    train_options o = tiny_text_run(dir);
    o.epochs = 1;
    vit_error err = {0};
    if (train_run(&o, 0, NULL, &err) != 0) fail_msg("%s", err.msg);
    st_file ours, hf;
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    if (st_open(path, &ours, &err) != 0 ||
        st_open(shared_path("models/bert-sst2-tiny/model.safetensors"), &hf, &err) != 0)
        fail_msg("%s", err.msg);
    assert_int_equal(ours.count, hf.count);
    for (int i = 0; i < hf.count; i++)
        if (!st_find(&ours, hf.tensors[i].name)) fail_msg("no tensor %s", hf.tensors[i].name);
    st_close(&ours), st_close(&hf);
    snprintf(path, sizeof path, "%s/config.json", dir);
    cJSON *mine = json_load_object(path, &err),
          *theirs = json_load_object(shared_path("models/bert-sst2-tiny/config.json"), &err);
    assert_non_null(mine), assert_non_null(theirs);
    for (const cJSON *it = theirs->child; it; it = it->next)
        if (!cJSON_GetObjectItemCaseSensitive(mine, it->string))
            fail_msg("config.json lacks '%s'", it->string);
    cJSON_Delete(mine), cJSON_Delete(theirs);
}

static void test_text_errors(void **state) {
    (void)state;
    char dir[4200];
    out_dir(dir, sizeof dir, "text-errors");
    vit_error err = {0};
    train_options o = tiny_text_run(dir);
    o.vocab_file = NULL;
    assert_int_equal(train_run(&o, 0, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "--vocab"));
    o = tiny_text_run(dir);
    o.train_path = write_text("badlabel.tsv", "s\tl\nfine\tmaybe\n");
    assert_int_equal(train_run(&o, 0, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "badlabel.tsv:2 (data line 1): unknown label 'maybe'"));
    o = tiny_text_run(dir);
    o.train_path = test_tmpdir(); /* a folder: images, where --vocab makes no sense */
    assert_int_equal(train_run(&o, 0, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "--vocab is for text"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tsv_classes),
        cmocka_unit_test(test_text_training_learns),
        cmocka_unit_test(test_text_resume),
        cmocka_unit_test(test_text_fine_tune),
        cmocka_unit_test(test_text_fine_tune_base_model),
        cmocka_unit_test(test_text_layout_matches_hf),
        cmocka_unit_test(test_text_errors),
    };
    return cmocka_run_group_tests_name("text_train", tests, NULL, NULL);
}
