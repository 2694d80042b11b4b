/* Token classification as transformers' TokenClassificationPipeline postprocesses it
 * (vit_text_entities, vit/vit_tag.c):
 *   - hand-worked cases of the aggregation on given probabilities and offsets, each written out
 *     below from the pipeline's rules (gather_pre_entities, aggregate_word, group_entities);
 *   - two micro NER models, BERT over a 6,000-token vocab.txt (word-aware: "##" pieces) and
 *     RoBERTa's byte-level BPE tokenizer.json (the fallback heuristic), on 8 texts x 5 strategies
 *     x ignore_labels ["O"] and [], field by field against tools/token_classification_reference.py
 *     (the npm tokenizers library's ids, offsets and decoder, a float64 forward, the pipeline's
 *     postprocess rewritten in float64): label, word, start, end and index exactly, the score to
 *     1e-5;
 *   - the refusals: "first" without offsets (a BPE SentencePiece model), an unknown strategy, a
 *     model that tags nothing;
 *   - vit eval of tagged words (vit/eval/eval_tags.h): seqeval's chunking and scores on
 *     hand-counted sequences, and the micro models on CoNLL and JSON-lines files against the
 *     reference's seqeval (get_entities and the scores rewritten from seqeval's code) of its
 *     float64 predictions at each word's first token. */
#include "testutil.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vit/eval/eval_tags.h"
#include "vit/vit.h"
#include "vit/vit_internal.h"

/* ---- hand-worked cases ---- */

static const char *const LABELS[] = {"O",     "B-ORG", "I-ORG", "B-LOC",
                                     "I-LOC", "B-PER", "I-PER", "MISC"};
#define NL 8

/* convert_tokens_to_string as the WordPiece decoder (no clean-up needed here): a "##" piece
 * glued on, another token after a space. */
static int wordpiece_join(void *user, const char *const *t, int n, int first, int last, char *out,
                          size_t size, vit_error *err) {
    (void)user, (void)first, (void)last, (void)err;
    char buf[256] = "";
    for (int i = 0; i < n; i++) {
        const int glue = i > 0 && strncmp(t[i], "##", 2) == 0;
        if (i > 0 && !glue) strcat(buf, " ");
        strcat(buf, glue ? t[i] + 2 : t[i]);
    }
    return snprintf(out, size, "%s", buf);
}

/* ... and as ByteLevel's for the tokens here: "G" stands for the space byte symbol */
static int byte_join(void *user, const char *const *t, int n, int first, int last, char *out,
                     size_t size, vit_error *err) {
    (void)user, (void)first, (void)last, (void)err;
    char buf[256] = "";
    for (int i = 0; i < n; i++)
        strcat(buf, t[i][0] == 'G' ? " " : ""), strcat(buf, t[i] + (t[i][0] == 'G'));
    return snprintf(out, size, "%s", buf);
}

typedef struct {
    const char *piece;
    int32_t bs, be;
    int label; /* the most probable label */
    float p;   /* its probability; the others share the rest equally */
    int unk;
} hand_token;

static float probs[16][NL];

static int run_case(const char *text, const hand_token *h, int n, int word_aware,
                    vit_aggregation agg, int keep_all, api_tag_join join, const vit_entity **out) {
    api_tag_token tokens[16];
    for (int i = 0; i < n; i++) {
        for (int k = 0; k < NL; k++) probs[i][k] = (1 - h[i].p) / (NL - 1);
        probs[i][h[i].label] = h[i].p;
        tokens[i] = (api_tag_token){probs[i], h[i].piece, h[i].unk, i + 1, h[i].bs, h[i].be};
    }
    api_tag_state *s = api_tag_state_create();
    const api_tag_input in = {.text = text,
                              .len = strlen(text),
                              .tokens = tokens,
                              .n = n,
                              .K = NL,
                              .labels = LABELS,
                              .word_aware = word_aware,
                              .keep_all = keep_all,
                              .aggregation = agg,
                              .join = join,
                              .no_offsets = "none here"};
    vit_error err = {0};
    static api_tag_state *last;
    api_tag_state_free(last); /* the previous case's results, read by its caller */
    last = s;
    const int m = api_tag_aggregate(s, &in, out, &err);
    if (m < 0) print_message("%s\n", err.msg);
    return m;
}

typedef struct {
    const char *label;
    double score;
    const char *word;
    int start, end, index;
} want_entity;

static void expect(const char *what, const vit_entity *e, int n, const want_entity *w, int m) {
    if (n != m) fail_msg("%s: %d entities, want %d", what, n, m);
    for (int i = 0; i < n; i++) {
        if (strcmp(e[i].label, w[i].label) != 0 || fabs(e[i].score - w[i].score) > 1e-6 ||
            strcmp(e[i].word, w[i].word) != 0 || e[i].start != w[i].start || e[i].end != w[i].end ||
            e[i].index != w[i].index)
            fail_msg("%s: entity %d is %s %.6f \"%s\" %d-%d #%d, want %s %.6f \"%s\" %d-%d #%d",
                     what, i, e[i].label, (double)e[i].score, e[i].word, e[i].start, e[i].end,
                     e[i].index, w[i].label, w[i].score, w[i].word, w[i].start, w[i].end,
                     w[i].index);
    }
}

/* "Microsoft Corp in Paris", WordPiece (word-aware): Micro ##soft form one word, as "##soft" (6
 * characters) is not as long as "soft" (4). Probabilities: Micro B-ORG .7, ##soft B-LOC .8, Corp
 * I-ORG .6, in O .9, Paris B-LOC .7 (the rest of each shared by the other labels). */
static const hand_token MICROSOFT[] = {{"Micro", 0, 5, 1, .7f, 0},
                                       {"##soft", 5, 9, 3, .8f, 0},
                                       {"Corp", 10, 14, 2, .6f, 0},
                                       {"in", 15, 17, 0, .9f, 0},
                                       {"Paris", 18, 23, 3, .7f, 0}};

static void test_word_aware(void **state) {
    (void)state;
    const char *text = "Microsoft Corp in Paris";
    const vit_entity *e;
    /* none: each token, O left out; index its position after [CLS] */
    const want_entity none[] = {{"B-ORG", .7, "Micro", 0, 5, 1},
                                {"B-LOC", .8, "##soft", 5, 9, 2},
                                {"I-ORG", .6, "Corp", 10, 14, 3},
                                {"B-LOC", .7, "Paris", 18, 23, 5}};
    expect("none", e, run_case(text, MICROSOFT, 5, 1, VIT_AGGREGATE_NONE, 0, wordpiece_join, &e),
           none, 4);
    /* simple: B-ORG | B-LOC | I-ORG (ORG after LOC: a new group) | O | B-LOC; a group's word is
     * its tokens joined ("##soft" alone stays as it is) */
    const want_entity simple[] = {{"ORG", .7, "Micro", 0, 5, -1},
                                  {"LOC", .8, "##soft", 5, 9, -1},
                                  {"ORG", .6, "Corp", 10, 14, -1},
                                  {"LOC", .7, "Paris", 18, 23, -1}};
    expect("simple", e,
           run_case(text, MICROSOFT, 5, 1, VIT_AGGREGATE_SIMPLE, 0, wordpiece_join, &e), simple, 4);
    /* simple with ignore_labels []: the O group too */
    const want_entity all[] = {{"ORG", .7, "Micro", 0, 5, -1},
                               {"LOC", .8, "##soft", 5, 9, -1},
                               {"ORG", .6, "Corp", 10, 14, -1},
                               {"O", .9, "in", 15, 17, -1},
                               {"LOC", .7, "Paris", 18, 23, -1}};
    expect("simple all", e,
           run_case(text, MICROSOFT, 5, 1, VIT_AGGREGATE_SIMPLE, 1, wordpiece_join, &e), all, 5);
    /* first: Microsoft takes Micro's B-ORG .7; Corp I-ORG continues it: ORG (.7 + .6) / 2 */
    const want_entity first[] = {{"ORG", .65, "Microsoft Corp", 0, 14, -1},
                                 {"LOC", .7, "Paris", 18, 23, -1}};
    expect("first", e, run_case(text, MICROSOFT, 5, 1, VIT_AGGREGATE_FIRST, 0, wordpiece_join, &e),
           first, 2);
    /* max: ##soft is surer (.8): Microsoft B-LOC .8; Corp I-ORG is another tag: its own group */
    const want_entity max[] = {{"LOC", .8, "Microsoft", 0, 9, -1},
                               {"ORG", .6, "Corp", 10, 14, -1},
                               {"LOC", .7, "Paris", 18, 23, -1}};
    expect("max", e, run_case(text, MICROSOFT, 5, 1, VIT_AGGREGATE_MAX, 0, wordpiece_join, &e), max,
           3);
    /* average: Microsoft's mean probabilities: B-ORG (.7 + .2/7) / 2 = .364286, B-LOC
     * (.3/7 + .8) / 2 = .421429, the others less: B-LOC */
    const double b_loc = (0.3 / 7 + 0.8) / 2;
    const want_entity average[] = {{"LOC", b_loc, "Microsoft", 0, 9, -1},
                                   {"ORG", .6, "Corp", 10, 14, -1},
                                   {"LOC", .7, "Paris", 18, 23, -1}};
    expect("average", e,
           run_case(text, MICROSOFT, 5, 1, VIT_AGGREGATE_AVERAGE, 0, wordpiece_join, &e), average,
           3);
}

/* "Jürgen Müller-Lüdenscheidt ist" (ü two bytes), byte-level BPE (no subword prefix): the
 * pipeline's fallback, a token is a subword when neither the character before it nor its first
 * is a space. Bytes: J 0-1, ürgen 1-7, GMüller 8-15 (trimmed of its space), - 15-16,
 * Lüdenscheidt 16-29, Gist 30-33; characters: Jürgen 0-6, Müller 7-13, - 13-14, Lüdenscheidt
 * 14-26, ist 27-30. Words: [J ürgen] [GMüller - Lüdenscheidt] [Gist]. Probabilities: J B-PER .6,
 * ürgen I-PER .5, GMüller I-PER .7, - O .8, Lüdenscheidt I-PER .4, Gist O .9. */
static const hand_token JURGEN[] = {{"J", 0, 1, 5, .6f, 0},
                                    {"\xc3\xbcrgen", 1, 7, 6, .5f, 0},
                                    {"GM\xc3\xbcller", 8, 15, 6, .7f, 0},
                                    {"-", 15, 16, 0, .8f, 0},
                                    {"L\xc3\xbc"
                                     "denscheidt",
                                     16, 29, 6, .4f, 0},
                                    {"Gist", 30, 33, 0, .9f, 0}};

static void test_fallback_words(void **state) {
    (void)state;
    const char *text = "J\xc3\xbcrgen M\xc3\xbcller-L\xc3\xbc"
                       "denscheidt ist";
    const vit_entity *e;
    /* first: Jürgen B-PER .6, Müller-Lüdenscheidt (from GMüller) I-PER .7: one PER group */
    const want_entity first[] = {{"PER", .65,
                                  "J\xc3\xbcrgen M\xc3\xbcller-L\xc3\xbc"
                                  "denscheidt",
                                  0, 26, -1}};
    expect("fallback first", e, run_case(text, JURGEN, 6, 0, VIT_AGGREGATE_FIRST, 0, byte_join, &e),
           first, 1);
    /* simple: J ürgen GMüller (B-PER I-PER I-PER) one group, mean .6; - O; Lüdenscheidt alone */
    const want_entity simple[] = {{"PER", .6, "J\xc3\xbcrgen M\xc3\xbcller", 0, 13, -1},
                                  {"PER", .4,
                                   "L\xc3\xbc"
                                   "denscheidt",
                                   14, 26, -1}};
    expect("fallback simple", e,
           run_case(text, JURGEN, 6, 0, VIT_AGGREGATE_SIMPLE, 0, byte_join, &e), simple, 2);
    /* max: the second word's surest token is - (O .8): the word is O, left out */
    const want_entity max[] = {{"PER", .6, "J\xc3\xbcrgen", 0, 6, -1}};
    expect("fallback max", e, run_case(text, JURGEN, 6, 0, VIT_AGGREGATE_MAX, 0, byte_join, &e),
           max, 1);
}

/* B- twice starts two groups; a bare label (MISC) continues like I-; an unk token's word is its
 * text and it always starts a word ("ab☃": a ##b [UNK], the snowman bytes 2-5). */
static void test_tags_and_unk(void **state) {
    (void)state;
    const vit_entity *e;
    const hand_token two_b[] = {{"Anna", 0, 4, 5, .9f, 0}, {"Bob", 5, 8, 5, .7f, 0}};
    const want_entity b[] = {{"PER", .9, "Anna", 0, 4, -1}, {"PER", .7, "Bob", 5, 8, -1}};
    expect("B B", e, run_case("Anna Bob", two_b, 2, 1, VIT_AGGREGATE_SIMPLE, 0, wordpiece_join, &e),
           b, 2);
    const hand_token bare[] = {{"x", 0, 1, 7, .9f, 0}, {"y", 2, 3, 7, .5f, 0}};
    const want_entity m[] = {{"MISC", .7, "x y", 0, 3, -1}};
    expect("MISC MISC", e, run_case("x y", bare, 2, 1, VIT_AGGREGATE_SIMPLE, 0, wordpiece_join, &e),
           m, 1);
    const hand_token unk[] = {
        {"a", 0, 1, 1, .9f, 0}, {"##b", 1, 2, 2, .9f, 0}, {"[UNK]", 2, 5, 3, .8f, 1}};
    const want_entity u[] = {{"ORG", .9, "ab", 0, 2, -1}, {"LOC", .8, "\xe2\x98\x83", 2, 3, -1}};
    expect("unk", e,
           run_case("ab\xe2\x98\x83", unk, 3, 1, VIT_AGGREGATE_FIRST, 0, wordpiece_join, &e), u, 2);
    const want_entity un[] = {{"B-LOC", .8, "\xe2\x98\x83", 2, 3, 1}}; /* the first token */
    expect("unk none", e,
           run_case("ab\xe2\x98\x83", unk + 2, 1, 1, VIT_AGGREGATE_NONE, 0, wordpiece_join, &e), un,
           1);
    /* no offsets: simple without start and end; first refused, saying why */
    const hand_token none[] = {{"a", -1, -1, 1, .9f, 0}};
    const want_entity no[] = {{"ORG", .9, "a", -1, -1, -1}};
    expect("no offsets", e, run_case("a", none, 1, 0, VIT_AGGREGATE_SIMPLE, 0, wordpiece_join, &e),
           no, 1);
    assert_int_equal(run_case("a", none, 1, 0, VIT_AGGREGATE_FIRST, 0, wordpiece_join, &e), -1);
    /* nothing: no entities */
    assert_int_equal(run_case("", none, 0, 0, VIT_AGGREGATE_AVERAGE, 0, wordpiece_join, &e), 0);
}

/* ---- the micro models against the reference ---- */

static void check_model(const char *name) {
    char dir[512], path[600];
    snprintf(dir, sizeof dir, TEST_DATA "/%s", name);
    snprintf(path, sizeof path, "%s/expected.json", dir);
    uint8_t *json = read_whole_file(path, NULL);
    assert_non_null(json);
    cJSON *root = cJSON_Parse((const char *)json);
    free(json);
    const cJSON *cases = cJSON_GetObjectItem(root, "cases");
    const int n = cJSON_GetArraySize(cases);
    vit_text_params params = vit_text_default_params();
    params.threads = 1;
    vit_error err = {0};
    vit_text_context *ctx = vit_text_load(dir, &params, &err);
    if (!ctx) fail_msg("%s: %s", dir, err.msg);
    const char *texts[16];
    size_t lengths[16];
    for (int i = 0; i < n; i++) {
        texts[i] = cJSON_GetObjectItem(cJSON_GetArrayItem(cases, i), "text")->valuestring;
        lengths[i] = strlen(texts[i]);
    }
    const size_t room = (size_t)vit_text_max_tokens(ctx) * (size_t)vit_text_num_labels(ctx);
    float *logits = malloc(sizeof *logits * room * (size_t)n);
    if (vit_text_token_logits(ctx, texts, lengths, n, logits, &err) != 0) fail_msg("%s", err.msg);
    static const char *const keys[] = {"none", "simple", "first", "average", "max"};
    int compared = 0, differ = 0;
    for (int i = 0; i < n; i++) {
        const cJSON *c = cJSON_GetArrayItem(cases, i);
        int count;
        const int32_t *ids = vit_text_ids(ctx, i, &count);
        const cJSON *want_ids = cJSON_GetObjectItem(c, "ids");
        assert_int_equal(count, cJSON_GetArraySize(want_ids));
        for (int t = 0; t < count; t++)
            assert_int_equal(ids[t], (int)cJSON_GetArrayItem(want_ids, t)->valuedouble);
        for (int a = 0; a < 5; a++)
            for (int all = 0; all < 2; all++) {
                char key[32];
                snprintf(key, sizeof key, "%s%s", keys[a], all ? " all" : "");
                const cJSON *want = cJSON_GetObjectItem(cJSON_GetObjectItem(c, "entities"), key);
                const vit_entity *e;
                const int m = vit_text_entities(ctx, i, texts[i], lengths[i], logits + i * room,
                                                (vit_aggregation)a, all, &e, &err);
                if (m < 0) fail_msg("%s %s: %s", name, key, err.msg);
                bool same = m == cJSON_GetArraySize(want);
                for (int k = 0; same && k < m; k++) {
                    const cJSON *w = cJSON_GetArrayItem(want, k);
                    const cJSON *label = cJSON_GetObjectItem(w, a ? "entity_group" : "entity"),
                                *index = cJSON_GetObjectItem(w, "index");
                    same = strcmp(e[k].label, label->valuestring) == 0 &&
                           fabs(e[k].score - cJSON_GetObjectItem(w, "score")->valuedouble) < 1e-5 &&
                           strcmp(e[k].word, cJSON_GetObjectItem(w, "word")->valuestring) == 0 &&
                           e[k].start == cJSON_GetObjectItem(w, "start")->valueint &&
                           e[k].end == cJSON_GetObjectItem(w, "end")->valueint &&
                           e[k].index == (index ? index->valueint : -1);
                    if (!same)
                        print_message("%s \"%s\" %s entity %d: %s %.6f \"%s\" %d-%d, want %s\n",
                                      name, texts[i], key, k, e[k].label, (double)e[k].score,
                                      e[k].word, e[k].start, e[k].end, cJSON_PrintUnformatted(w));
                }
                compared += m, differ += !same;
            }
    }
    print_message("%s: %d entities of %d texts x 10 compared, %d lists differ\n", name, compared, n,
                  differ);
    assert_int_equal(differ, 0);
    assert_true(compared > 500);
    free(logits);
    vit_text_free(ctx);
    cJSON_Delete(root);
}

static void test_bert_ner(void **state) {
    (void)state;
    check_model("bert-ner-micro");
}

static void test_roberta_ner(void **state) {
    (void)state;
    check_model("roberta-ner-micro");
}

static void test_refusals(void **state) {
    (void)state;
    assert_int_equal(vit_aggregation_from_name("average"), VIT_AGGREGATE_AVERAGE);
    assert_int_equal(vit_aggregation_from_name("mean"), -1);
    assert_string_equal(vit_aggregation_name(VIT_AGGREGATE_MAX), "max");
    vit_error err = {0};
    vit_text_context *ctx = vit_text_load(TEST_DATA "/xlmr-tok-micro", NULL, &err);
    if (!ctx) fail_msg("%s", err.msg);
    const char *text = "Hello New York";
    const size_t len = strlen(text);
    float *logits = malloc(sizeof *logits * (size_t)vit_text_max_tokens(ctx) *
                           (size_t)vit_text_num_labels(ctx));
    assert_int_equal(vit_text_token_logits(ctx, &text, &len, 1, logits, &err), 0);
    const vit_entity *e;
    /* its sentencepiece.bpe.model is a BPE one, which is not converted: no offsets */
    assert_int_equal(vit_text_entities(ctx, 0, text, len, logits, VIT_AGGREGATE_FIRST, 0, &e, &err),
                     -1);
    assert_non_null(strstr(err.msg, "aggregation \"first\" needs word boundaries"));
    assert_non_null(strstr(err.msg, "not for this BPE one"));
    assert_true(vit_text_entities(ctx, 0, text, len, logits, VIT_AGGREGATE_SIMPLE, 1, &e, &err) >
                0);
    assert_int_equal(e[0].start, -1);
    assert_int_equal(vit_text_entities(ctx, 0, text, len, logits, (vit_aggregation)9, 0, &e, &err),
                     -1);
    assert_non_null(strstr(err.msg, "not one of none, simple"));
    free(logits);
    vit_text_free(ctx);
    ctx = vit_text_load(TEST_DATA "/bert-nli-micro", NULL, &err);
    if (!ctx) fail_msg("%s", err.msg);
    float none[4] = {0};
    assert_int_equal(vit_text_entities(ctx, 0, text, len, none, VIT_AGGREGATE_NONE, 0, &e, &err),
                     -1);
    assert_non_null(strstr(err.msg, "has no token classifier"));
    vit_text_free(ctx);
}

/* ---- vit eval of tagged words ---- */

static tag_eval_result counted(const char *const *const *truth, const char *const *const *pred,
                               const int *n, int sentences) {
    tag_counts *c = tag_counts_create();
    for (int i = 0; i < sentences; i++)
        assert_int_equal(tag_counts_add(c, truth[i], pred[i], n[i]), 0);
    tag_eval_result r;
    assert_int_equal(tag_counts_result(c, &r), 0);
    tag_counts_free(c);
    return r;
}

static void test_seqeval_hand(void **state) {
    (void)state;
    /* seqeval's docstring: true MISC 3-5 and PER 0-1 (of the second sentence), predicted MISC
     * 2-5 and PER 0-1: one of two right, P = R = F1 = .5; words 8 of 10 */
    const char *t1[] = {"O", "O", "O", "B-MISC", "I-MISC", "I-MISC", "O"},
               *t2[] = {"B-PER", "I-PER", "O"};
    const char *p1[] = {"O", "O", "B-MISC", "I-MISC", "I-MISC", "I-MISC", "O"},
               *p2[] = {"B-PER", "I-PER", "O"};
    const char *const *truth[] = {t1, t2}, *const * pred[] = {p1, p2};
    tag_eval_result r = counted(truth, pred, (const int[]){7, 3}, 2);
    assert_true(fabs(r.overall.precision - .5) < 1e-12 && fabs(r.overall.recall - .5) < 1e-12 &&
                fabs(r.overall.f1 - .5) < 1e-12 && fabs(r.accuracy - .8) < 1e-12);
    assert_int_equal(r.num_types, 2);
    assert_string_equal(r.types[0].type, "MISC");
    assert_int_equal(r.types[0].correct, 0);
    assert_true(fabs(r.types[1].f1 - 1) < 1e-12); /* PER */
    tag_eval_result_free(&r);
    /* IOB1 and type changes: I-PER I-PER O I-LOC B-LOC I-ORG is PER 0-1, LOC 3, LOC 4, ORG 5;
     * a bare label MISC is seqeval's tag M of type "ISC": MISC MISC one chunk ISC 0-1 */
    const char *labels[] = {"I-PER", "I-PER", "O", "I-LOC", "B-LOC", "I-ORG"};
    tag_entity e[8];
    assert_int_equal(tag_entities(labels, 6, e), 4);
    const int want[4][2] = {{0, 1}, {3, 3}, {4, 4}, {5, 5}};
    const char *types[4] = {"PER", "LOC", "LOC", "ORG"};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(e[i].first, want[i][0]);
        assert_int_equal(e[i].last, want[i][1]);
        assert_true(e[i].type_len == strlen(types[i]) &&
                    !memcmp(e[i].type, types[i], e[i].type_len));
    }
    const char *bare[] = {"MISC", "MISC"};
    assert_int_equal(tag_entities(bare, 2, e), 1);
    assert_true(e[0].first == 0 && e[0].last == 1 && e[0].type_len == 3 &&
                !memcmp(e[0].type, "ISC", 3));
    /* types found only in predictions are rows too (recall 0 of 0 true: 0) */
    const char *tt[] = {"O", "B-LOC"}, *pp[] = {"B-ORG", "B-LOC"};
    const char *const *tr[] = {tt}, *const * pr[] = {pp};
    r = counted(tr, pr, (const int[]){2}, 1);
    assert_int_equal(r.num_types, 2);
    assert_string_equal(r.types[1].type, "ORG");
    assert_int_equal(r.types[1].true_count, 0);
    assert_true(r.types[1].f1 == 0 && fabs(r.overall.precision - .5) < 1e-12 &&
                fabs(r.overall.recall - 1) < 1e-12);
    tag_eval_result_free(&r);
}

static void check_eval(const char *name, const char *file) {
    char dir[512], data[600], path[600];
    snprintf(dir, sizeof dir, TEST_DATA "/%s", name);
    snprintf(data, sizeof data, "%s/%s", dir, file);
    snprintf(path, sizeof path, "%s/expected_eval.json", dir);
    uint8_t *json = read_whole_file(path, NULL);
    cJSON *root = cJSON_Parse((const char *)json);
    free(json);
    const cJSON *want = cJSON_GetObjectItem(root, file),
                *types = cJSON_GetObjectItem(want, "types");
    tag_eval_result r;
    vit_error err = {0};
    if (tag_eval_file(dir, data, &(tag_eval_options){.threads = 1}, NULL, &r, &err) != 0)
        fail_msg("%s", err.msg);
    assert_int_equal(r.words, (long)cJSON_GetObjectItem(root, "kept_words")->valuedouble);
    assert_int_equal(r.words + r.words_without_token,
                     (long)cJSON_GetObjectItem(root, "words")->valuedouble);
    assert_int_equal(r.num_types, cJSON_GetArraySize(types));
    long correct = 0;
    for (int k = 0; k < r.num_types; k++) {
        const cJSON *t = cJSON_GetObjectItem(types, r.types[k].type);
        if (!t) fail_msg("%s %s: type %s is not the reference's", name, file, r.types[k].type);
        assert_int_equal(r.types[k].true_count, cJSON_GetObjectItem(t, "number")->valueint);
        assert_int_equal(r.types[k].pred_count, cJSON_GetObjectItem(t, "found")->valueint);
        assert_int_equal(r.types[k].correct, cJSON_GetObjectItem(t, "correct")->valueint);
        assert_true(fabs(r.types[k].f1 - cJSON_GetObjectItem(t, "f1")->valuedouble) < 1e-12);
        correct += r.types[k].correct;
    }
    static const char *const keys[] = {"overall_precision", "overall_recall", "overall_f1",
                                       "overall_accuracy"};
    const double got[] = {r.overall.precision, r.overall.recall, r.overall.f1, r.accuracy};
    for (int i = 0; i < 4; i++)
        if (fabs(got[i] - cJSON_GetObjectItem(want, keys[i])->valuedouble) > 1e-12)
            fail_msg("%s %s: %s %.6f, want %.6f", name, file, keys[i], got[i],
                     cJSON_GetObjectItem(want, keys[i])->valuedouble);
    print_message("%s %s: %ld words, %ld entities right, F1 %.4f, accuracy %.4f\n", name, file,
                  r.words, correct, r.overall.f1, r.accuracy);
    tag_eval_result_free(&r);
    cJSON_Delete(root);
}

static void test_eval_files(void **state) {
    (void)state;
    check_eval("bert-ner-micro", "eval.conll");
    check_eval("bert-ner-micro", "eval.jsonl");
    check_eval("roberta-ner-micro", "eval.conll");
    check_eval("roberta-ner-micro", "eval.jsonl");
}

/* Bad files: one line naming the file and line. */
static void test_eval_refusals(void **state) {
    (void)state;
    static const struct {
        const char *text, *says;
    } bad[] = {{"John B-PER\nSmith\n", ":2: a word without a label"},
               {"{\"tokens\": [\"a\"], \"ner_tags\": [9]}\n", ":1: tag 1 is neither a label name"},
               {"{\"tokens\": [\"a\", \"b\"], \"ner_tags\": [0]}\n", ":1: want \"tokens\" and"},
               {"\n\n", "no labelled words"}};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char path[] = "/tmp/vit_test_tag_XXXXXX";
        const int fd = mkstemp(path);
        assert_true(fd >= 0);
        FILE *f = fdopen(fd, "w");
        fputs(bad[i].text, f);
        fclose(f);
        tag_eval_result r;
        vit_error err = {0};
        assert_int_equal(tag_eval_file(TEST_DATA "/bert-ner-micro", path, &(tag_eval_options){0},
                                       NULL, &r, &err),
                         -1);
        if (!strstr(err.msg, bad[i].says) || !strstr(err.msg, path))
            fail_msg("\"%s\" does not say \"%s\" and the file", err.msg, bad[i].says);
        remove(path);
    }
}

/* vit eval reads a file as its model reads: a token classifier's CoNLL named .tsv is labelled
 * words (the report of the same file named .conll, expected_eval.json's); a sequence classifier
 * given CoNLL, or a token classifier given --pair, refused in one line. */
static void test_eval_by_model(void **state) {
    (void)state;
    REQUIRE_BIN();
    size_t n;
    uint8_t *conll = read_whole_file(TEST_DATA "/bert-ner-micro/eval.conll", &n);
    assert_non_null(conll);
    const char *tsv = write_temp_file("ner.tsv", conll, n);
    free(conll);
    const char *json[] = {"eval", "-m", TEST_DATA "/bert-ner-micro", "--json", tsv, NULL};
    test_run_result r = test_run_vit(NULL, NULL, json);
    if (r.status != 0) fail_msg("vit eval of a CoNLL .tsv exited %d: %s", r.status, r.err);
    cJSON *got = cJSON_Parse(r.out);
    test_run_free(&r);
    uint8_t *text = read_whole_file(TEST_DATA "/bert-ner-micro/expected_eval.json", NULL);
    cJSON *root = cJSON_Parse((const char *)text);
    free(text);
    const cJSON *want = cJSON_GetObjectItem(root, "eval.conll");
    static const char *const keys[] = {"overall_precision", "overall_recall", "overall_f1",
                                       "overall_accuracy"};
    for (int i = 0; i < 4; i++) {
        const cJSON *g = cJSON_GetObjectItem(got, keys[i]);
        if (!cJSON_IsNumber(g) ||
            fabs(g->valuedouble - cJSON_GetObjectItem(want, keys[i])->valuedouble) > 1e-12)
            fail_msg("%s of the .tsv: %s, the reference's %.6f", keys[i],
                     g ? cJSON_Print(g) : "missing",
                     cJSON_GetObjectItem(want, keys[i])->valuedouble);
    }
    cJSON_Delete(got), cJSON_Delete(root);
    static const struct {
        const char *model, *pair, *data, *says;
    } bad[] = {{"distilbert-seq-micro", NULL, TEST_DATA "/bert-ner-micro/eval.conll",
                "is no token classifier: it reads a FILE.tsv"},
               {"bert-ner-micro", "--pair", NULL, "is a token classifier: it reads"}};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char model[512];
        snprintf(model, sizeof model, TEST_DATA "/%s", bad[i].model);
        const char *data = bad[i].data ? bad[i].data : tsv;
        const char *argv[] = {"eval", "-m", model, data, bad[i].pair, NULL};
        r = test_run_vit(NULL, NULL, argv);
        assert_int_equal(r.status, 1);
        const char *nl = strchr(r.err, '\n');
        if (!strstr(r.err, bad[i].says) || !strstr(r.err, data) || (nl && nl[1]))
            fail_msg("expected one line with '%s' and the file, got: %s", bad[i].says, r.err);
        test_run_free(&r);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_word_aware),    cmocka_unit_test(test_fallback_words),
        cmocka_unit_test(test_tags_and_unk),  cmocka_unit_test(test_bert_ner),
        cmocka_unit_test(test_roberta_ner),   cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_seqeval_hand),  cmocka_unit_test(test_eval_files),
        cmocka_unit_test(test_eval_refusals), cmocka_unit_test(test_eval_by_model),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
