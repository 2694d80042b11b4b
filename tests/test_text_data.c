/* vit/data/text_set: the TSV line parser (shared with `vit eval`), a file tokenized into memory,
 * padded batches; then a tiny BERT trained end to end from a TSV (text_set ->
 * text_model_forward/backward -> AdamW) on a separable task. Self-contained: the vocabulary is
 * written here, no ../shared. */
#include "tests/testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/wordpiece.h"
#include "vit/model/text_model.h"
#include "vit/model/config.h"
#include "vit/model/params.h"
#include "vit/core/ops.h"
#include "vit/train/optim.h"
#include "vit/data/text_set.h"

static const char *const names[] = {"negative", "positive"};

/* words of the test vocabulary after the special tokens, id = 5 + index */
static const char *const words[] = {
    "the", "a",  "movie", "film", "plot", "story", "actor", "scene", "music", "was", "is",
    "and", "of", "it",    "this", "with", "good",  "bad",   "very",  "long",  "##s", "."};
enum { NWORDS = sizeof words / sizeof words[0], GOOD = 5 + 16, BAD = 5 + 17, VOCAB = 5 + NWORDS };

/* A model folder holding only vocab.txt ([PAD] 0, [UNK] 1, [CLS] 2, [SEP] 3, [MASK] 4). */
static tokenizer *test_tokenizer(void) {
    char vocab[1024] = "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n";
    for (int i = 0; i < NWORDS; i++) strcat(strcat(vocab, words[i]), "\n");
    write_temp_file("vocab.txt", vocab, strlen(vocab));
    tokenizer *tok;
    vit_error err = {0};
    if (tokenizer_load(test_tmpdir(), &tok, &err) != 0) fail_msg("%s", err.msg);
    assert_int_equal(tokenizer_vocab_size(tok), VOCAB);
    return tok;
}

/* The same folder's tokenizer behind text/text_tokenizer.h, as the trainer loads it. */
static text_tokenizer *test_text_tokenizer(void) {
    text_tokenizer *tok;
    vit_error err = {0};
    if (text_tokenizer_load(test_tmpdir(), &tok, &err) != 0) fail_msg("%s", err.msg);
    return tok;
}

/* ---- one line ---- */

static void expect_bad(const char *line, const char *why) {
    text_tsv_line l;
    char got[1000];
    assert_int_equal(text_tsv_parse_line(line, strlen(line), names, 2, &l, got, sizeof got), -1);
    if (strcmp(got, why) != 0) fail_msg("'%s': got '%s', expected '%s'", line, got, why);
}

static void expect_good(const char *line, const char *text, int label) {
    text_tsv_line l = {0};
    char why[1000];
    assert_int_equal(text_tsv_parse_line(line, strlen(line), names, 2, &l, why, sizeof why), 1);
    assert_true(l.text == line); /* points into the line */
    assert_int_equal(l.len, strlen(text));
    assert_memory_equal(l.text, text, l.len);
    assert_int_equal(l.label, label);
}

static void test_parse_line(void **state) {
    (void)state;
    expect_good("a fine film\t1\n", "a fine film", 1);
    expect_good("a fine film\t0", "a fine film", 0);
    expect_good("bleak \t POSITIVE \r\n", "bleak ", 1); /* blanks trimmed, case ignored */
    expect_good("\tnegative\n", "", 0);                 /* an empty sentence is a sentence */
    expect_good("x\t00\n", "x", 0);
    text_tsv_line l;
    char why[1000];
    assert_int_equal(text_tsv_parse_line("\r\n", 2, names, 2, &l, why, sizeof why), 0);
    assert_int_equal(text_tsv_parse_line("", 0, names, 2, &l, why, sizeof why), 0);
    expect_bad("no tab here\n", "no tab between sentence and label");
    expect_bad("x\ty\tz\n", "more than one tab (expected sentence<TAB>label)");
    expect_bad("fine\tneutral\n",
               "unknown label 'neutral' (expected 0..1 or one of: negative, positive)");
    expect_bad("fine\t2\n", "unknown label '2' (expected 0..1 or one of: negative, positive)");
    expect_bad("fine\t-1\n", "unknown label '-1' (expected 0..1 or one of: negative, positive)");
    expect_bad("fine\t \n", "empty label");
    expect_bad("fine\tbad\x01\xff\n", "unknown label 'bad?"
                                      "?' (expected 0..1 or one of: negative, positive)");
    /* a name that is also a number: indices win, then names */
    static const char *const numeric[] = {"1", "0", "b"};
    assert_int_equal(text_tsv_parse_line("s\t1", 3, numeric, 3, &l, why, sizeof why), 1);
    assert_int_equal(l.label, 1);
    assert_int_equal(text_tsv_parse_line("s\tB", 3, numeric, 3, &l, why, sizeof why), 1);
    assert_int_equal(l.label, 2);
}

/* ---- a file ---- */

static void expect_ids(const tokenizer *tok, const text_set *s, int i, const char *text,
                       int max_len) {
    int32_t want[64];
    vit_error err = {0};
    const int n = tokenizer_encode(tok, text, strlen(text), max_len, want, NULL, &err);
    assert_true(n >= 2);
    assert_int_equal((int)(s->offset[i + 1] - s->offset[i]), n);
    assert_memory_equal(s->ids + s->offset[i], want, sizeof *want * (size_t)n);
}

static void test_load_and_batch(void **state) {
    (void)state;
    tokenizer *tok = test_tokenizer();
    text_tokenizer *tt = test_text_tokenizer();
    static const char tsv[] = "sentence\tlabel\r\n"                    /* 1: header */
                              "the movie was good .\t1\r\n"            /* 2 */
                              "\n"                                     /* 3 */
                              "a bad film\tNegative\n"                 /* 4 */
                              "Films of music and actors\t positive\n" /* 5 */
                              "it\t0";                                 /* 6: no final newline */
    const char *path = write_temp_file("small.tsv", tsv, sizeof tsv - 1);
    text_set s;
    vit_error err = {0};
    if (text_set_load(&s, path, tt, 32, 0, names, 2, &err) != 0) fail_msg("%s", err.msg);
    assert_int_equal(s.count, 4);
    assert_int_equal(s.max_len, 32);
    assert_int_equal(s.pad_id, 0);
    const int labels[] = {1, 0, 1, 0};
    const long lines[] = {1, 3, 4, 5};
    const char *texts[] = {"the movie was good .", "a bad film", "Films of music and actors", "it"};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(s.labels[i], labels[i]);
        assert_int_equal(s.data_line[i], lines[i]);
        expect_ids(tok, &s, i, texts[i], 32);
    }
    /* "Films of music and actors": [CLS] film ##s of music and actor ##s [SEP] */
    assert_int_equal(s.longest, 9);
    assert_int_equal(s.ids[s.offset[2] + 2], 5 + 20);

    /* a batch: T is the longest of its sentences, the rest padded and masked */
    const int idx[] = {3, 1, 0};
    int32_t ids[3 * 32];
    uint8_t mask[3 * 32];
    int got[3];
    const int T = text_set_batch(&s, idx, 3, ids, NULL, mask, got);
    assert_int_equal(T, 7); /* "the movie was good ." */
    const int32_t want_ids[3 * 7] = {
        2, 5 + 13, 3,      0,     0,    0,      0,  /* it */
        2, 6,      5 + 17, 8,     3,    0,      0,  /* a bad film */
        2, 5,      7,      5 + 9, GOOD, 5 + 21, 3}; /* the movie was good . */
    const uint8_t want_mask[3 * 7] = {1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1,
                                      1, 0, 0, 1, 1, 1, 1, 1, 1, 1};
    assert_memory_equal(ids, want_ids, sizeof want_ids);
    assert_memory_equal(mask, want_mask, sizeof want_mask);
    assert_int_equal(got[0], 0), assert_int_equal(got[1], 0), assert_int_equal(got[2], 1);
    assert_int_equal(text_set_batch(&s, idx, 1, ids, NULL, mask, NULL), 3);
    text_set_free(&s);

    /* truncation at load: pieces dropped from the end, [SEP] kept */
    if (text_set_load(&s, path, tt, 4, 0, names, 2, &err) != 0) fail_msg("%s", err.msg);
    assert_int_equal(s.longest, 4);
    const int32_t cut[] = {2, 5, 7, 3};
    assert_memory_equal(s.ids + s.offset[0], cut, sizeof cut);
    expect_ids(tok, &s, 3, "it", 4);
    text_set_free(&s);
    tokenizer_free(tok);
    text_tokenizer_free(tt);
}

static void expect_load_error(const text_tokenizer *tt, const char *path, int max_len,
                              const char *needle) {
    text_set s;
    vit_error err = {0};
    assert_int_equal(text_set_load(&s, path, tt, max_len, 0, names, 2, &err), -1);
    assert_null(s.ids);
    assert_int_equal(s.count, 0);
    print_message("  %s\n", err.msg);
    if (!strstr(err.msg, needle)) fail_msg("expected '%s' in '%s'", needle, err.msg);
}

static void test_load_errors(void **state) {
    (void)state;
    tokenizer *tok = test_tokenizer();
    text_tokenizer *tt = test_text_tokenizer();
    const char bad[] = "s\tl\nthe film\t1\n\nno tab here\nfine\tneutral\n";
    const char *path = write_temp_file("bad.tsv", bad, sizeof bad - 1);
    expect_load_error(tt, path, 16, "bad.tsv:4 (data line 3): no tab between sentence and label");
    const char unknown[] = "s\tl\nthe film\t1\nfine\tneutral\n";
    path = write_temp_file("unknown.tsv", unknown, sizeof unknown - 1);
    expect_load_error(tt, path, 16,
                      "unknown.tsv:3 (data line 2): unknown label 'neutral' (expected 0..1 or one "
                      "of: negative, positive)");
    path = write_temp_file("header.tsv", "sentence\tlabel\n\n", 16);
    expect_load_error(tt, path, 16, "header.tsv: no labelled sentence");
    char missing[4200];
    snprintf(missing, sizeof missing, "%s/missing.tsv", test_tmpdir());
    expect_load_error(tt, missing, 16, "missing.tsv: No such file or directory");
    expect_load_error(tt, test_tmpdir(), 16, "Is a directory");
    expect_load_error(tt, path, 1, "max_len 1");
    tokenizer_free(tok);
    text_tokenizer_free(tt);
}

/* ---- training end to end ---- */

static uint64_t test_rng = 777;

static uint64_t next(void) {
    uint64_t z = (test_rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* n sentences of 3..9 filler words with "good" (label 1) or "bad" (label 0) among them. */
static const char *write_task(const char *name, int n) {
    static const char *const filler[] = {"the",   "a",     "movie", "film", "plot", "story",
                                         "actor", "scene", "music", "was",  "is",   "and",
                                         "of",    "it",    "this",  "with", "very", "long"};
    const int nf = sizeof filler / sizeof filler[0];
    size_t cap = 64 * (size_t)n + 64, len = 0;
    char *tsv = malloc(cap);
    len += (size_t)sprintf(tsv, "sentence\tlabel\n");
    for (int i = 0; i < n; i++) {
        const int label = (int)(next() % 2), words = 3 + (int)(next() % 7);
        const int at = (int)(next() % (uint64_t)words);
        for (int w = 0; w < words; w++)
            len += (size_t)sprintf(tsv + len, "%s%s", w ? " " : "",
                                   w == at ? (label ? "good" : "bad") : filler[next() % nf]);
        len += (size_t)sprintf(tsv + len, "\t%s\n", names[label]);
    }
    const char *path = write_temp_file(name, tsv, len);
    free(tsv);
    return path;
}

static const char *tiny_json =
    "{\"model_type\": \"bert\", \"vocab_size\": 27, \"hidden_size\": 16, \"num_hidden_layers\": 2,"
    " \"num_attention_heads\": 2, \"intermediate_size\": 32, \"max_position_embeddings\": 16,"
    " \"type_vocab_size\": 2, \"layer_norm_eps\": 1e-12, \"id2label\": {\"0\": \"negative\","
    " \"1\": \"positive\"}}";

/* HF BertPreTrainedModel._init_weights: normal(0, 0.02) weights and embeddings (here uniform of
 * the same spread), zero biases, LayerNorm weights 1. */
static void init_params(model *m) {
    for (int i = 0; i < m->num_entries; i++) {
        const param_entry *e = &m->entries[i];
        const size_t len = strlen(e->name);
        const int bias = strcmp(e->name + len - 4, "bias") == 0;
        const int norm = strstr(e->name, "LayerNorm.weight") != NULL;
        for (size_t j = 0; j < e->numel; j++)
            m->params[e->offset + j] =
                bias   ? 0.0f
                : norm ? 1.0f
                       : 0.02f * 1.7320508f * (2.0f * (float)(next() >> 40) / 16777216.0f - 1);
    }
}

/* Accuracy of t on s in eval mode. */
static double accuracy(const model *m, text_acts *a, const text_set *s, int B, int32_t *ids,
                       uint8_t *mask) {
    int idx[64], labels[64], correct = 0;
    float logits[64 * 2];
    vit_error err = {0};
    for (int i0 = 0; i0 < s->count; i0 += B) {
        const int n = s->count - i0 < B ? s->count - i0 : B;
        for (int b = 0; b < n; b++) idx[b] = i0 + b;
        const int T = text_set_batch(s, idx, n, ids, NULL, mask, labels);
        if (text_model_forward(m, a, ids, mask, n, T, NULL, logits, &err) != 0)
            fail_msg("%s", err.msg);
        for (int b = 0; b < n; b++) correct += (logits[2 * b + 1] > logits[2 * b]) == labels[b];
    }
    return (double)correct / s->count;
}

/* "good" vs "bad" anywhere among filler words: the label is one token whose position varies, so
 * attention has to carry it to [CLS]. AdamW, dropout 0.1: the loss falls from ln 2 and held-out
 * accuracy reaches 1 within a few hundred steps. */
static void test_train_separable(void **state) {
    (void)state;
    enum { B = 16, STEPS = 200, MAXT = 16 };
    tokenizer *tok = test_tokenizer();
    text_tokenizer *tt = test_text_tokenizer();
    vit_error err = {0};
    text_set train, val;
    if (text_set_load(&train, write_task("train.tsv", 512), tt, MAXT, 0, names, 2, &err) != 0 ||
        text_set_load(&val, write_task("val.tsv", 200), tt, MAXT, 0, names, 2, &err) != 0)
        fail_msg("%s", err.msg);
    model_config cfg;
    model m;
    if (model_config_parse(tiny_json, "tiny", &cfg, &err) != 0 || model_create(&m, &cfg, &err) != 0)
        fail_msg("%s", err.msg);
    init_params(&m);
    text_acts a;
    model g;
    float *grads = test_alloc_floats(m.num_params);
    if (text_acts_alloc(&a, &m, B, MAXT, 1, &err) != 0 || model_bind(&g, &m, grads) != 0)
        fail_msg("%s", err.msg);
    adamw opt;
    if (adamw_init(&opt, &m, &(adamw_hparams){.lr = 1e-3f, .weight_decay = 0.01f}, &err) != 0)
        fail_msg("%s", err.msg);
    int32_t ids[B * MAXT];
    uint8_t mask[B * MAXT];
    int idx[B], labels[B];
    uint64_t drop_rng = 1;
    const forward_mode mode = {.train = 1,
                               .dropout = 0.1f,
                               .attention_dropout = 0.1f,
                               .classifier_dropout = -1.0f,
                               .rng = &drop_rng};
    float logits[B * 2], probs[B * 2], dlogits[B * 2];
    const double before = accuracy(&m, &a, &val, B, ids, mask);
    double first = 0.0, last = 0.0;
    for (int step = 0; step < STEPS; step++) {
        for (int b = 0; b < B; b++) idx[b] = (int)(next() % (uint64_t)train.count);
        const int T = text_set_batch(&train, idx, B, ids, NULL, mask, labels);
        memset(grads, 0, m.num_params * sizeof(float));
        if (text_model_forward(&m, &a, ids, mask, B, T, &mode, logits, &err) != 0)
            fail_msg("%s", err.msg);
        const float loss = (float)crossentropy_forward(probs, logits, labels, B, 2, 0.0f);
        crossentropy_backward(dlogits, probs, labels, B, 2, 0.0f, 1.0f);
        text_model_backward(&m, &g, &a, dlogits);
        assert_true(isfinite(loss));
        grad_clip_global_norm(&m, grads, &opt, 1.0f);
        adamw_step(&opt, &m, grads, 1e-3f);
        if (step < 20) first += loss / 20;
        if (step >= STEPS - 20) last += loss / 20;
    }
    const double after = accuracy(&m, &a, &val, B, ids, mask);
    print_message("good/bad task, %d steps of %d: mean loss of the first 20 steps %.4f, last 20 "
                  "%.4f; held-out accuracy %.3f before, %.3f after\n",
                  STEPS, B, first, last, before, after);
    assert_true(first > 0.6);        /* starts at chance: ln 2 = 0.693 */
    assert_true(last < 0.1 * first); /* and learns */
    assert_true(after >= 0.99);
    adamw_free(&opt);
    text_acts_free(&a);
    model_unbind(&g);
    free(grads);
    model_free(&m);
    text_set_free(&train);
    text_set_free(&val);
    tokenizer_free(tok);
    text_tokenizer_free(tt);
}

/* Tagged words (CoNLL): ids and per-token labels by hand (words of the test vocabulary: the 5,
 * film 8, ##s 25, good 21, it 18; "were" is not in it), the labels sorted as run_ner sorts them,
 * a cut sentence, a batch's tags, and the errors. */
static void test_tags(void **state) {
    (void)state;
    tokenizer *tok = test_tokenizer();
    text_tokenizer *tt = test_text_tokenizer();
    static const char conll[] = "-DOCSTART- -X- O O\n" /* 1 */
                                "\n"                   /* 2 */
                                "the O\n"              /* 3 */
                                "films\tB-X\n"         /* 4: film ##s */
                                "were  O\n"            /* 5: [UNK] */
                                "good POS NP O\n"      /* 6: CoNLL-2003's four columns */
                                "\n\n"                 /* 7, 8 */
                                "it I-X\r\n";          /* 9 */
    const char *path = write_temp_file("tags.conll", conll, sizeof conll - 1);
    char **names;
    int n;
    vit_error err = {0};
    if (tag_file_labels(path, &names, &n, &err) != 0) fail_msg("%s", err.msg);
    assert_int_equal(n, 3);
    assert_string_equal(names[0], "B-X"), assert_string_equal(names[1], "I-X");
    assert_string_equal(names[2], "O");
    const char *const *labels = (const char *const *)names;
    text_set s;
    if (text_set_load_tags(&s, path, tt, 16, labels, 3, &err) != 0) fail_msg("%s", err.msg);
    assert_int_equal(s.count, 2);
    const int32_t ids[] = {2, 5, 8, 25, 1, 21, 3, 2, 18, 3};
    const int tags[] = {-100, 2, 0, -100, 2, 2, -100, -100, 1, -100};
    assert_int_equal(s.offset[1], 7), assert_int_equal(s.offset[2], 10);
    assert_memory_equal(s.ids, ids, sizeof ids);
    assert_memory_equal(s.tags, tags, sizeof tags);
    assert_int_equal(s.data_line[0], 3), assert_int_equal(s.data_line[1], 9);
    /* a batch: the tags of sentence 1 then 0, padded with -100; 5 count */
    const int idx[] = {1, 0};
    int32_t bids[2 * 16], btypes[2 * 16];
    uint8_t mask[2 * 16];
    const int T = text_set_batch(&s, idx, 2, bids, btypes, mask, NULL);
    assert_int_equal(T, 7);
    int btags[2 * 7];
    assert_int_equal(text_set_batch_tags(&s, idx, 2, T, btags), 5);
    const int want[] = {-100, 1, -100, -100, -100, -100, -100, -100, 2, 0, -100, 2, 2, -100};
    assert_memory_equal(btags, want, sizeof want);
    for (int i = 0; i < 2 * T; i++) assert_int_equal(btypes[i], 0);
    text_set_free(&s);
    /* cut at 5 ids: the end token kept */
    if (text_set_load_tags(&s, path, tt, 5, labels, 3, &err) != 0) fail_msg("%s", err.msg);
    const int32_t cut[] = {2, 5, 8, 25, 3};
    const int cut_tags[] = {-100, 2, 0, -100, -100};
    assert_memory_equal(s.ids, cut, sizeof cut);
    assert_memory_equal(s.tags, cut_tags, sizeof cut_tags);
    text_set_free(&s);
    /* errors name the file and line */
    const char *bad = write_temp_file("bad.conll", "the O\nfilm\n", strlen("the O\nfilm\n"));
    assert_int_equal(text_set_load_tags(&s, bad, tt, 16, labels, 3, &err), -1);
    assert_non_null(strstr(err.msg, "bad.conll:2: expected a token and its label"));
    assert_int_equal(tag_file_labels(bad, &names, &n, &err), -1);
    bad = write_temp_file("bad.conll", "the O\nfilm B-Y\n", strlen("the O\nfilm B-Y\n"));
    assert_int_equal(text_set_load_tags(&s, bad, tt, 16, labels, 3, &err), -1);
    assert_non_null(strstr(err.msg, "bad.conll:2: unknown label 'B-Y'"));
    bad = write_temp_file("bad.conll", "\n-DOCSTART- O\n", strlen("\n-DOCSTART- O\n"));
    assert_int_equal(text_set_load_tags(&s, bad, tt, 16, labels, 3, &err), -1);
    assert_non_null(strstr(err.msg, "no tagged sentence"));
    for (int i = 0; i < 3; i++) free((char *)labels[i]);
    free((void *)labels);
    tokenizer_free(tok);
    text_tokenizer_free(tt);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tags),
        cmocka_unit_test(test_parse_line),
        cmocka_unit_test(test_load_and_batch),
        cmocka_unit_test(test_load_errors),
        cmocka_unit_test(test_train_separable),
    };
    return cmocka_run_group_tests_name("text data", tests, NULL, NULL);
}
