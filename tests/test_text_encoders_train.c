/* vit train on the text encoders beside BERT (issue 42): RoBERTa, XLM-R (SentencePiece),
 * DistilBERT and MPNet sequence classifiers, their base models given a new head, and BERT's pair
 * classifier with token types (--pair), each fine-tuned 16 epochs on the micro folders' golden
 * texts; and the token classifiers (and a sequence classifier given a token head) on tagged
 * words (--tags: one token and its label per line), `vit tag` on the reloaded folder against
 * the float64 token logits (each token's label their argmax, its score their softmax there).
 * Checked: the training loss falls (train_log.jsonl), the folder holds the tokenizer files of its
 * kind, copied (vocab.json and merges.txt, sentencepiece.bpe.model, vocab.txt), its config.json
 * names the class, and vit reloads it: `vit text --logits` on every text equals the float64 forward
 * of tools/text_train_reference.py --check on the saved weights, read with transformers' names
 * (1e-4, the project's tolerance against float64); where transformers is installed that script also
 * loads the folder with AutoModelFor...Classification and compares (else it says it skipped,
 * printed here). Without /usr/bin/python3 and torch the comparison is skipped loudly; the rest
 * runs. */
#include "tests/testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "vit/eval/eval_text.h"
#include "vit/io/model_dir.h"
#include "vit/train/run.h"

#define TOL    1e-4
#define PYTHON "/usr/bin/python3"

typedef struct {
    const char *dir;
    const char *arch;      /* config.json's class after training */
    const char *tok_files; /* the tokenizer files the folder must hold, space separated */
    int pair;
} family_case;

static const family_case cases[] = {
    {"tests/data/roberta-seq-micro", "RobertaForSequenceClassification", "vocab.json merges.txt",
     0},
    {"tests/data/xlmr-seq-micro", "XLMRobertaForSequenceClassification",
     "sentencepiece.bpe.model tokenizer_config.json", 0},
    {"tests/data/distilbert-seq-micro", "DistilBertForSequenceClassification", "vocab.txt", 0},
    {"tests/data/mpnet-seq-micro", "MPNetForSequenceClassification", "vocab.txt", 0},
    {"tests/data/roberta-model-micro", "RobertaForSequenceClassification", "vocab.json merges.txt",
     0},
    {"tests/data/distilbert-model-micro", "DistilBertForSequenceClassification", "vocab.txt", 0},
    {"tests/data/bert-nli-micro", "BertForSequenceClassification", "vocab.txt", 1},
};

static const char *const labels[] = {"negative", "neutral", "positive"};
static const char *const nli[] = {"contradiction", "entailment", "neutral"};

/* The golden texts (or pairs) of dir with a control character in none (a TSV field cannot hold
 * a tab or newline): a JSON list, and the TSV written from them. */
static cJSON *golden_texts(const char *dir, int pair) {
    char path[4096];
    snprintf(path, sizeof path, "%s/golden.safetensors", dir);
    size_t size;
    uint8_t *bytes = read_whole_file(path, &size);
    assert_non_null(bytes);
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = n << 8 | bytes[i];
    cJSON *header = cJSON_ParseWithLength((const char *)bytes + 8, (size_t)n);
    free(bytes);
    const cJSON *meta = cJSON_GetObjectItem(header, "__metadata__");
    cJSON *list = cJSON_Parse(cJSON_GetObjectItem(meta, pair ? "pairs" : "texts")->valuestring);
    cJSON_Delete(header);
    return list;
}

static int plain(const char *s) {
    if (!*s) return 0;
    for (; *s; s++)
        if ((unsigned char)*s < 0x20) return 0;
    return 1;
}

/* text i of list (a pair: its two texts joined by sep) into out */
static void text_of(const cJSON *list, int i, int pair, const char *sep, char *out, size_t size) {
    const cJSON *item = cJSON_GetArrayItem(list, i);
    if (!pair)
        snprintf(out, size, "%s", item->valuestring);
    else
        snprintf(out, size, "%s%s%s", cJSON_GetArrayItem(item, 0)->valuestring, sep,
                 cJSON_GetArrayItem(item, 1)->valuestring);
}

static int usable(const cJSON *list, int i, int pair) {
    const cJSON *item = cJSON_GetArrayItem(list, i);
    if (!pair) return plain(item->valuestring);
    return plain(cJSON_GetArrayItem(item, 0)->valuestring) &&
           plain(cJSON_GetArrayItem(item, 1)->valuestring);
}

/* train_log.jsonl's train_loss of the first and last epochs */
static void first_last_loss(const char *out, double *first, double *last) {
    char path[4400];
    snprintf(path, sizeof path, "%s/train_log.jsonl", out);
    char *text = (char *)read_whole_file(path, NULL);
    assert_non_null(text);
    *first = *last = NAN;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        cJSON *o = cJSON_Parse(line);
        const cJSON *loss = cJSON_GetObjectItem(o, "train_loss");
        if (cJSON_IsNumber(loss)) {
            if (isnan(*first)) *first = loss->valuedouble;
            *last = loss->valuedouble;
        }
        cJSON_Delete(o);
    }
    free(text);
}

/* tools/text_train_reference.py --check OUT DIR's JSON, or NULL (printed why) without python or
 * torch */
static cJSON *python_check(const char *out, const char *dir) {
    if (access(PYTHON, X_OK) != 0) return NULL;
    char cmd[9000];
    snprintf(cmd, sizeof cmd, "%s tools/text_train_reference.py --check '%s' '%s' 2>&1", PYTHON,
             out, dir);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    static char buf[1 << 20];
    const size_t n = fread(buf, 1, sizeof buf - 1, p);
    buf[n] = 0;
    const int status = pclose(p);
    if (status != 0) {
        if (strstr(buf, "No module named 'torch'") || strstr(buf, "No module named 'numpy'"))
            return NULL;
        fail_msg("the python check of %s failed:\n%s", out, buf);
    }
    return cJSON_Parse(buf);
}

static void check_family(const family_case *f) {
    cJSON *list = golden_texts(f->dir, f->pair);
    const int n = cJSON_GetArraySize(list);
    char tsv[16384] = "", line[2048];
    snprintf(tsv, sizeof tsv, f->pair ? "a\tb\tlabel\n" : "sentence\tlabel\n");
    int rows = 0;
    for (int i = 0; i < n; i++) {
        if (!usable(list, i, f->pair)) continue;
        text_of(list, i, f->pair, "\t", line, sizeof line);
        snprintf(tsv + strlen(tsv), sizeof tsv - strlen(tsv), "%s\t%s\n", line,
                 (f->pair ? nli : labels)[rows++ % 3]);
    }
    const char *data = write_temp_file("train.tsv", tsv, strlen(tsv));
    char out[4200];
    snprintf(out, sizeof out, "%s/trained-%s", test_tmpdir(), strrchr(f->dir, '/') + 1);
    const char *train[] = {"train", "--init",      f->dir, "--train",
                           data,    "--out",       out,    "--epochs",
                           "16",    "--batch",     "4",    "--lr",
                           "3e-3",  "--val-split", "0",    "--label-smoothing",
                           "0",     "--seed",      "3",    f->pair ? "--pair" : NULL,
                           NULL};
    test_run_result r = test_run_vit(NULL, NULL, train);
    if (r.status != 0) fail_msg("%s: vit train exited %d: %s", f->dir, r.status, r.err);
    test_run_free(&r);
    double first, last;
    first_last_loss(out, &first, &last);
    if (!(last < first - 0.05))
        fail_msg("%s: the training loss did not fall (%.4f -> %.4f)", f->dir, first, last);

    char path[4400], names[256];
    snprintf(names, sizeof names, "%s", f->tok_files);
    for (char *name = strtok(names, " "); name; name = strtok(NULL, " ")) {
        snprintf(path, sizeof path, "%s/%s", out, name);
        if (access(path, F_OK) != 0) fail_msg("%s: %s was not copied", f->dir, name);
    }
    snprintf(path, sizeof path, "%s/config.json", out);
    char *config = (char *)read_whole_file(path, NULL);
    if (!strstr(config, f->arch)) fail_msg("%s: config.json does not name %s", out, f->arch);
    free(config);

    cJSON *want = python_check(out, f->dir);
    double worst = 0.0;
    int texts = 0;
    if (!want)
        print_message("SKIP the float64 comparison of %s: %s or its torch is missing\n", out,
                      PYTHON);
    const cJSON *logits = want ? cJSON_GetObjectItem(want, "logits") : NULL;
    for (int i = 0, k = 0; want && i < n; i++) {
        const int keep = usable(list, i, f->pair);
        char a[2048], b[2048];
        if (!f->pair) {
            text_of(list, i, 0, "", a, sizeof a);
        } else {
            const cJSON *item = cJSON_GetArrayItem(list, i);
            snprintf(a, sizeof a, "%s", cJSON_GetArrayItem(item, 0)->valuestring);
            snprintf(b, sizeof b, "%s", cJSON_GetArrayItem(item, 1)->valuestring);
        }
        /* the reference ran every text of more than two ids: the usable ones are among them */
        const cJSON *row = NULL;
        const cJSON *ref_texts = cJSON_GetObjectItem(want, f->pair ? "pairs" : "texts");
        for (; k < cJSON_GetArraySize(ref_texts) && !row; k++) {
            char ref[4200];
            text_of(ref_texts, k, f->pair, "\t", ref, sizeof ref);
            char mine[4200];
            text_of(list, i, f->pair, "\t", mine, sizeof mine);
            if (strcmp(ref, mine) == 0) row = cJSON_GetArrayItem(logits, k);
        }
        if (!keep || !row) continue;
        const char *text[] = {"text", "-m", out, "--json", "--logits", "--", a, NULL};
        const char *pair_text[] = {"text",   "-m", out, "--json", "--logits",
                                   "--pair", "--", a,   b,        NULL};
        r = test_run_vit(NULL, NULL, f->pair ? pair_text : text);
        if (r.status != 0) fail_msg("%s: vit text exited %d: %s", out, r.status, r.err);
        cJSON *got = cJSON_Parse(r.out);
        const cJSON *g = cJSON_GetObjectItem(got, "logits");
        assert_int_equal(cJSON_GetArraySize(g), cJSON_GetArraySize(row));
        for (int j = 0; j < cJSON_GetArraySize(row); j++)
            worst = fmax(worst, fabs(cJSON_GetArrayItem(g, j)->valuedouble -
                                     cJSON_GetArrayItem(row, j)->valuedouble));
        cJSON_Delete(got);
        test_run_free(&r);
        texts++;
    }
    if (want) {
        if (!(worst <= TOL)) fail_msg("%s: vit's logits differ from float64's by %.3g", out, worst);
        const cJSON *hf = cJSON_GetObjectItem(want, "transformers");
        char hf_says[200];
        if (cJSON_IsNumber(hf)) {
            if (!(hf->valuedouble <= TOL))
                fail_msg("%s: transformers' logits differ by %.3g", out, hf->valuedouble);
            snprintf(hf_says, sizeof hf_says, "transformers within %.1e", hf->valuedouble);
        } else {
            snprintf(hf_says, sizeof hf_says, "%s", hf ? hf->valuestring : "?");
        }
        assert_true(texts >= 3);
        print_message("  %-36s loss %.4f -> %.4f; %d texts reloaded, within %.1e of float64; %s\n",
                      f->dir, first, last, texts, worst, hf_says);
    }
    cJSON_Delete(want);
    cJSON_Delete(list);
}

static void test_fine_tune(void **state) {
    (void)state;
    REQUIRE_BIN();
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) check_family(&cases[i]);
}

/* ---- token classification ---- */

typedef struct {
    const char *dir;
    const char *arch;
} tag_case;

static const tag_case tag_cases[] = {
    {"tests/data/roberta-tok-micro", "RobertaForTokenClassification"},
    {"tests/data/xlmr-tok-micro", "XLMRobertaForTokenClassification"},
    {"tests/data/distilbert-tok-micro", "DistilBertForTokenClassification"},
    {"tests/data/mpnet-tok-micro", "MPNetForTokenClassification"},
    {"tests/data/bert-tok-micro", "BertForTokenClassification"},
    /* a sequence classifier given a token classifier's head */
    {"tests/data/distilbert-seq-micro", "DistilBertForTokenClassification"},
};

/* CoNLL words: "the" is O, the animals B-PER, places B-LOC, the rest O (space and tab
 * separated, a -DOCSTART- line, CRLF endings on one sentence) */
static const char tagged[] = "-DOCSTART- -X- O O\n\n"
                             "the O\ncat B-PER\nsat O\non O\nthe O\nmat B-LOC\n\n"
                             "a\tO\ndog\tB-PER\nran\tO\nfar\tO\naway\tB-LOC\n\n"
                             "it O\r\nwas O\r\nvery O\r\ngood O\r\n\r\n"
                             "the O\nzebra B-PER\nslept O\n\n"
                             "the O\ndog B-PER\nsat O\non O\nthe O\nmat B-LOC\n";

/* id2label of out's config.json into names (strdup'ed), returning their number */
static int saved_labels(const char *out, char **names, int max) {
    char path[4400];
    snprintf(path, sizeof path, "%s/config.json", out);
    char *text = (char *)read_whole_file(path, NULL);
    cJSON *root = cJSON_Parse(text);
    free(text);
    const cJSON *map = cJSON_GetObjectItem(root, "id2label");
    const int n = cJSON_GetArraySize(map);
    assert_true(n <= max);
    for (int i = 0; i < n; i++) {
        char key[16];
        snprintf(key, sizeof key, "%d", i);
        names[i] = strdup(cJSON_GetObjectItem(map, key)->valuestring);
    }
    cJSON_Delete(root);
    return n;
}

/* vit tag --all --json on out against the float64 token logits: each token's label the argmax,
 * its score the softmax there. */
static void check_tags_reloaded(const char *out, const char *dir, double *worst, int *tokens) {
    cJSON *want = python_check(out, dir);
    if (!want) {
        print_message("SKIP the float64 comparison of %s: %s or its torch is missing\n", out,
                      PYTHON);
        return;
    }
    char *names[16];
    const int L = saved_labels(out, names, 16);
    const cJSON *texts = cJSON_GetObjectItem(want, "texts"),
                *logits = cJSON_GetObjectItem(want, "logits");
    for (int i = 0; i < cJSON_GetArraySize(texts); i++) {
        const char *text = cJSON_GetArrayItem(texts, i)->valuestring;
        if (!plain(text)) continue;
        const char *args[] = {"tag", "-m", out, "--all", "--json", "--", text, NULL};
        test_run_result r = test_run_vit(NULL, NULL, args);
        if (r.status != 0) fail_msg("%s: vit tag exited %d: %s", out, r.status, r.err);
        cJSON *got = cJSON_Parse(r.out);
        const cJSON *entities = cJSON_GetObjectItem(got, "entities"), *e;
        const cJSON *rows = cJSON_GetArrayItem(logits, i);
        assert_int_equal(cJSON_GetArraySize(entities), cJSON_GetArraySize(rows) - 2);
        cJSON_ArrayForEach(e, entities) {
            const int t = cJSON_GetObjectItem(e, "index")->valueint;
            const cJSON *row = cJSON_GetArrayItem(rows, t);
            double max = -INFINITY, sum = 0.0;
            int best = 0;
            for (int k = 0; k < L; k++) {
                const double z = cJSON_GetArrayItem(row, k)->valuedouble;
                if (z > max) max = z, best = k;
            }
            for (int k = 0; k < L; k++) sum += exp(cJSON_GetArrayItem(row, k)->valuedouble - max);
            const char *label = cJSON_GetObjectItem(e, "entity")->valuestring;
            if (strcmp(label, names[best]) != 0)
                fail_msg("%s: token %d of '%s' tagged %s, float64 says %s", out, t, text, label,
                         names[best]);
            *worst = fmax(*worst, fabs(cJSON_GetObjectItem(e, "score")->valuedouble - 1.0 / sum));
            ++*tokens;
        }
        cJSON_Delete(got);
        test_run_free(&r);
    }
    for (int k = 0; k < L; k++) free(names[k]);
    cJSON_Delete(want);
}

static void test_tags(void **state) {
    (void)state;
    REQUIRE_BIN();
    const char *data = write_temp_file("tagged.txt", tagged, sizeof tagged - 1);
    for (size_t i = 0; i < sizeof tag_cases / sizeof *tag_cases; i++) {
        const tag_case *f = &tag_cases[i];
        char out[4200];
        snprintf(out, sizeof out, "%s/tagged-%s", test_tmpdir(), strrchr(f->dir, '/') + 1);
        const char *train[] = {"train",
                               "--init",
                               f->dir,
                               "--train",
                               data,
                               "--out",
                               out,
                               "--tags",
                               "--epochs",
                               "16",
                               "--batch",
                               "2",
                               "--lr",
                               "3e-3",
                               "--val-split",
                               "0",
                               "--seed",
                               "3",
                               "--label-smoothing",
                               "0",
                               NULL};
        test_run_result r = test_run_vit(NULL, NULL, train);
        if (r.status != 0) fail_msg("%s: vit train exited %d: %s", f->dir, r.status, r.err);
        test_run_free(&r);
        double first, last;
        first_last_loss(out, &first, &last);
        if (!(last < first / 2))
            fail_msg("%s: the training loss did not halve (%.4f -> %.4f)", f->dir, first, last);
        char path[4400];
        snprintf(path, sizeof path, "%s/config.json", out);
        char *config = (char *)read_whole_file(path, NULL);
        if (!strstr(config, f->arch)) fail_msg("%s: config.json does not name %s", out, f->arch);
        free(config);
        double worst = 0.0;
        int tokens = 0;
        check_tags_reloaded(out, f->dir, &worst, &tokens);
        if (!(worst <= TOL))
            fail_msg("%s: vit tag's scores differ from float64's by %.3g", out, worst);
        print_message("  %-36s loss %.4f -> %.4f; %d tokens tagged as float64 tags them, scores "
                      "within %.1e\n",
                      f->dir, first, last, tokens, worst);
    }
}

/* Bad tagged files and options: exit status 1 and a message naming the file and line. */
static void test_tag_errors(void **state) {
    (void)state;
    REQUIRE_BIN();
    static const struct {
        const char *text, *extra, *says;
    } bad[] = {
        {"the O\ncat\n", NULL, "bad.txt:2: expected a token and its label"},
        {"the O\ncat B-NOPE\n", NULL, "bad.txt:2: unknown label 'B-NOPE'"},
        {"the O\n", "--pair", "--pair is for sequence classifiers"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        const char *data = write_temp_file("bad.txt", bad[i].text, strlen(bad[i].text));
        char out[4200];
        snprintf(out, sizeof out, "%s/bad-%zu", test_tmpdir(), i);
        const char *train[] = {"train",   "--init",     "tests/data/bert-tok-micro",
                               "--train", data,         "--out",
                               out,       bad[i].extra, NULL};
        test_run_result r = test_run_vit(NULL, NULL, train);
        assert_int_equal(r.status, 1);
        if (!strstr(r.err, bad[i].says)) fail_msg("expected '%s' in: %s", bad[i].says, r.err);
        test_run_free(&r);
    }
}

/* ---- regression ---- */

/* Pearson, Spearman (ties at their mean rank) and MSE by hand. */
static void test_agreement(void **state) {
    (void)state;
    double p, sp, mse;
    /* dx = -2..2, dy = -1 -2 1 0 2: sxy 8, sxx 10, syy 10; ranks are the values */
    const double x[] = {1, 2, 3, 4, 5}, y[] = {2, 1, 4, 3, 5};
    text_eval_agreement(x, y, 5, &p, &sp, &mse);
    assert_true(fabs(p - 0.8) < 1e-12 && fabs(sp - 0.8) < 1e-12 && fabs(mse - 0.8) < 1e-12);
    /* ranks 1 2.5 2.5 4 and 1 3 2 4: 4.5 / sqrt(4.5 * 5) */
    const double a[] = {1, 2, 2, 3}, b[] = {1, 3, 2, 4};
    text_eval_agreement(a, b, 4, &p, &sp, &mse);
    assert_true(fabs(sp - 4.5 / sqrt(22.5)) < 1e-12);
    assert_true(fabs(mse - 0.5) < 1e-12); /* 0 1 0 1 */
    const double c[] = {3, 3, 3};
    text_eval_agreement(c, b, 3, &p, &sp, &mse);
    assert_true(isnan(p) && isnan(sp));
}

/* STS-like pairs and scores: bert-pair-micro (one label: regression, as transformers trains
 * num_labels 1) fine-tuned with MSE; config.json says problem_type regression; vit text prints
 * the raw score (its "prob" the logit itself, the pipeline's function "none"); vit eval's
 * Pearson, Spearman and MSE equal those computed here from vit text's scores. */
static void test_regression(void **state) {
    (void)state;
    REQUIRE_BIN();
    static const struct {
        const char *a, *b;
        double score;
    } sts[] = {{"the cat sat", "the cat sat", 5.0},      {"the cat sat", "a dog ran", 1.0},
               {"it was very good", "it was good", 4.2}, {"the zebra slept", "the mat", 0.4},
               {"a dog ran far away", "a dog ran", 3.5}, {"the mat", "the mat", 5.0},
               {"it was good", "the zebra slept", 0.0},  {"the cat ran", "the cat sat", 3.1}};
    enum { N = sizeof sts / sizeof *sts };
    char tsv[4096] = "a\tb\tscore\n";
    for (int i = 0; i < N; i++)
        snprintf(tsv + strlen(tsv), sizeof tsv - strlen(tsv), "%s\t%s\t%g\n", sts[i].a, sts[i].b,
                 sts[i].score);
    const char *data = write_temp_file("sts.tsv", tsv, strlen(tsv));
    char out[4200];
    snprintf(out, sizeof out, "%s/sts", test_tmpdir());
    const char *train[] = {"train",  "--init",  "tests/data/bert-pair-micro",
                           "--pair", "--train", data,
                           "--out",  out,       "--epochs",
                           "20",     "--batch", "4",
                           "--lr",   "3e-3",    "--val-split",
                           "0",      "--seed",  "3",
                           NULL};
    test_run_result r = test_run_vit(NULL, NULL, train);
    if (r.status != 0) fail_msg("vit train exited %d: %s", r.status, r.err);
    test_run_free(&r);
    double first, last;
    first_last_loss(out, &first, &last);
    if (!(last < first / 4))
        fail_msg("the MSE did not fall to a quarter (%.4f -> %.4f)", first, last);
    char path[4400];
    snprintf(path, sizeof path, "%s/config.json", out);
    char *config = (char *)read_whole_file(path, NULL);
    if (!strstr(config, "\"problem_type\":\t\"regression\"")) fail_msg("%s", config);
    free(config);
    double truth[N], got[N];
    for (int i = 0; i < N; i++) {
        const char *text[] = {"text",   "-m", out,      "--json", "--logits",
                              "--pair", "--", sts[i].a, sts[i].b, NULL};
        r = test_run_vit(NULL, NULL, text);
        if (r.status != 0) fail_msg("vit text exited %d: %s", r.status, r.err);
        cJSON *o = cJSON_Parse(r.out);
        const double logit = cJSON_GetArrayItem(cJSON_GetObjectItem(o, "logits"), 0)->valuedouble;
        const cJSON *top = cJSON_GetArrayItem(cJSON_GetObjectItem(o, "top"), 0);
        /* no sigmoid: the score is the logit */
        assert_true(fabs(cJSON_GetObjectItem(top, "prob")->valuedouble - logit) < 1e-6);
        truth[i] = sts[i].score, got[i] = logit;
        cJSON_Delete(o);
        test_run_free(&r);
    }
    double p, sp, mse;
    text_eval_agreement(truth, got, N, &p, &sp, &mse);
    const char *eval[] = {"eval", "-m", out, "--pair", "--json", data, NULL};
    r = test_run_vit(NULL, NULL, eval);
    if (r.status != 0) fail_msg("vit eval exited %d: %s", r.status, r.err);
    cJSON *o = cJSON_Parse(strstr(r.out, "{\"model\""));
    assert_non_null(o);
    assert_int_equal(cJSON_GetObjectItem(o, "pairs")->valueint, N);
    const double tol = 1e-5; /* vit eval's batch of 8 against texts one by one */
    assert_true(fabs(cJSON_GetObjectItem(o, "pearson")->valuedouble - p) < tol);
    assert_true(fabs(cJSON_GetObjectItem(o, "spearman")->valuedouble - sp) < tol);
    assert_true(fabs(cJSON_GetObjectItem(o, "mse")->valuedouble - mse) < tol);
    print_message(
        "  STS pairs: MSE %.4f -> %.4f; vit eval: Pearson %.4f, Spearman %.4f, MSE %.4f\n", first,
        last, p, sp, mse);
    cJSON_Delete(o);
    test_run_free(&r);
    /* a folder whose tokenizer is tokenizer.json alone: one label, so scores (as transformers
     * trains num_labels 1), the file copied, the folder read back */
    snprintf(out, sizeof out, "%s/sts-fast", test_tmpdir());
    const char *fast[] = {"train",  "--init",      "tests/data/bert-pair-fast-micro",
                          "--pair", "--train",     data,
                          "--out",  out,           "--epochs",
                          "2",      "--val-split", "0",
                          NULL};
    r = test_run_vit(NULL, NULL, fast);
    if (r.status != 0) fail_msg("vit train exited %d: %s", r.status, r.err);
    test_run_free(&r);
    snprintf(path, sizeof path, "%s/tokenizer.json", out);
    assert_int_equal(access(path, F_OK), 0);
    const char *again[] = {"text", "-m", out, "--pair", "--", sts[0].a, sts[0].b, NULL};
    r = test_run_vit(NULL, NULL, again);
    if (r.status != 0) fail_msg("vit text on %s exited %d: %s", out, r.status, r.err);
    test_run_free(&r);
}

/* A score that is not a finite number: training refuses the file naming the line; vit eval
 * skips the line, says why, and scores the rest. */
static void test_score_errors(void **state) {
    (void)state;
    REQUIRE_BIN();
    static const char bad[] = "a\tb\tscore\nthe cat\tthe cat\tfive\nthe cat\ta dog\tnan\n"
                              "the cat\tthe mat\t2\nthe mat\tthe mat\t4\n";
    const char *data = write_temp_file("bad-scores.tsv", bad, sizeof bad - 1);
    char out[4200];
    snprintf(out, sizeof out, "%s/bad-scores", test_tmpdir());
    const char *train[] = {"train",  "--init",  "tests/data/bert-pair-micro",
                           "--pair", "--train", data,
                           "--out",  out,       NULL};
    test_run_result r = test_run_vit(NULL, NULL, train);
    assert_int_equal(r.status, 1);
    if (!strstr(r.err, "bad-scores.tsv:2 (data line 1): the score 'five' is not a finite number"))
        fail_msg("%s", r.err);
    test_run_free(&r);
    /* a regression model to evaluate with: bert-pair-micro's config with problem_type set */
    char model_dir[4200], path[4400];
    snprintf(model_dir, sizeof model_dir, "%s/pair-regression", test_tmpdir());
    mkdir(model_dir, 0777);
    char *config = (char *)read_whole_file("tests/data/bert-pair-micro/config.json", NULL);
    char *brace = strrchr(config, '}');
    *brace = 0;
    char text[8192];
    snprintf(text, sizeof text, "%s, \"problem_type\": \"regression\"}\n", config);
    free(config);
    snprintf(path, sizeof path, "pair-regression/config.json");
    write_temp_file(path, text, strlen(text));
    static const char *const files[] = {"model.safetensors", "vocab.txt"};
    for (int i = 0; i < 2; i++) {
        char from[4400], to[4400];
        snprintf(from, sizeof from, "%s/tests/data/bert-pair-micro/%s", getcwd(text, sizeof text),
                 files[i]);
        snprintf(to, sizeof to, "%s/%s", model_dir, files[i]);
        assert_int_equal(symlink(from, to), 0);
    }
    const char *eval[] = {"eval", "-m", model_dir, "--pair", data, NULL};
    r = test_run_vit(NULL, NULL, eval);
    assert_int_equal(r.status, 0);
    static const char *const says[] = {"pairs:     2 scored, 2 skipped", "skipped:\n",
                                       "bad-scores.tsv:2 (data line 1): the score 'five' is not",
                                       "bad-scores.tsv:3 (data line 2): the score 'nan' is not"};
    for (int i = 0; i < 4; i++)
        if (!strstr(r.out, says[i])) fail_msg("vit eval does not say '%s':\n%s", says[i], r.out);
    test_run_free(&r);
}

/* ---- resuming ---- */

/* A run stopped at step 5 and resumed ends with the weights of the run never stopped, bit for
 * bit (one thread), for tagged words, scores and MultipleNegativesRankingLoss, dropout on. */
static void resume_case(const char *name, const char *init, const char *data, int tags,
                        int regression, int pair, const char *loss) {
    char whole[4200], split[4200];
    snprintf(whole, sizeof whole, "%s/%s-whole", test_tmpdir(), name);
    snprintf(split, sizeof split, "%s/%s-split", test_tmpdir(), name);
    train_options o = train_default_options();
    o.init_dir = init, o.train_path = data, o.tags = tags, o.regression = regression;
    o.pair = pair, o.loss = loss;
    o.epochs = 4, o.batch = 2, o.lr = 3e-3f, o.val_split = 0.25f, o.seed = 5, o.threads = 1;
    o.dropout = 0.1f, o.attention_dropout = 0.1f;
    vit_error err = {0};
    o.out_dir = whole;
    if (train_run(&o, 0, NULL, &err) != 0) fail_msg("%s: %s", name, err.msg);
    o.out_dir = split;
    const train_hooks stop = {.stop_at_step = 5};
    assert_int_equal(train_run(&o, 0, &stop, &err), 1);
    const train_options r = {.out_dir = split, .threads = 1};
    if (train_run(&r, 1, NULL, &err) != 0) fail_msg("%s: resuming: %s", name, err.msg);
    model a, b;
    /* the trained Dense module too (its moments are in the state) */
    if (strstr(init, "cls-dense")) {
        char da[4400], db[4400];
        snprintf(da, sizeof da, "%s/2_Dense/model.safetensors", whole);
        snprintf(db, sizeof db, "%s/2_Dense/model.safetensors", split);
        size_t na = 0, nb = 0;
        float *wa = test_read_tensor(da, "linear.weight", &na),
              *wb = test_read_tensor(db, "linear.weight", &nb);
        if (!wa || !wb || na != nb || memcmp(wa, wb, na * sizeof *wa) != 0)
            fail_msg("%s: the resumed run's Dense weights differ", name);
        free(wa), free(wb);
    }
    /* a Transformer in its own folder (0_Transformer/) is saved there */
    if (strstr(init, "cls-dense")) {
        strcat(whole, "/0_Transformer");
        strcat(split, "/0_Transformer");
    }
    if (model_load(&a, whole, &err) != 0 || model_load(&b, split, &err) != 0)
        fail_msg("%s", err.msg);
    assert_int_equal(a.num_params, b.num_params);
    if (memcmp(a.params, b.params, a.num_params * sizeof(float)) != 0)
        fail_msg("%s: the resumed run's weights differ", name);
    model_free(&a), model_free(&b);
    print_message("  %s: stopped at step 5 and resumed, the same weights\n", name);
}

static void test_resume(void **state) {
    (void)state;
    static const char sts[] =
        "a\tb\tscore\nthe cat sat\tthe cat sat\t5\nthe cat sat\ta dog ran\t1\n"
        "it was good\tit was very good\t4\nthe mat\tthe mat\t5\n"
        "a dog ran\tthe zebra slept\t0\nthe cat ran\tthe cat sat\t3\n"
        "it was good\tthe mat\t0.5\na dog\ta dog ran\t3.5\n";
    static const char rows[] = "anchor\tpositive\nthe cat sat on the mat\ta cat sat\n"
                               "a dog ran far away\tthe dog ran\nit was very good\tit was good\n"
                               "the sun was bad\tbad sun\nhome from home\tmy home\n"
                               "the mat was very old\tan old mat\nit ran far\tit ran away\n"
                               "my old dog slept\tthe dog slept\n";
    resume_case("tags", "tests/data/distilbert-tok-micro",
                write_temp_file("resume-tags.txt", tagged, sizeof tagged - 1), 1, 0, 0, NULL);
    resume_case("scores", "tests/data/bert-pair-micro",
                write_temp_file("resume-sts.tsv", sts, sizeof sts - 1), 0, 1, 1, NULL);
    const char *rows_file = write_temp_file("resume-rows.tsv", rows, sizeof rows - 1);
    resume_case("mnrl", "tests/data/st-mean-micro", rows_file, 0, 0, 0, "mnrl");
    resume_case("mnrl-0_Transformer", "tests/data/st-cls-dense-micro", rows_file, 0, 0, 0, "mnrl");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fine_tune),  cmocka_unit_test(test_tags),
        cmocka_unit_test(test_tag_errors), cmocka_unit_test(test_agreement),
        cmocka_unit_test(test_regression), cmocka_unit_test(test_score_errors),
        cmocka_unit_test(test_resume),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
