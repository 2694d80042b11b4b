/* sentence-transformers folders (tests/data/st-*-micro, tools/sentence_transformers_reference.py):
 * vit_text_embed with the folder's own pipeline (VIT_POOL_SENTENCE) against the float64
 * re-implementation of SentenceTransformer.encode, every pooling mode, Dense with Tanh and with
 * Identity, Normalize, max_seq_length, the Transformer at the root and in 0_Transformer/, prompts
 * with include_prompt false, Matryoshka dimensions; a batch against each text alone; refusals. */
#include "tests/testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vit/vit.h"

/* float32 against float64 through two post-LN layers of width 32, a pooling, a Dense and a
 * Normalize: measured below 1.5e-6 (the encoder's own error, test_embed's bert-base-micro);
 * 1e-5 leaves room for other GEMM kernels' rounding while catching any wrong step (a wrong
 * mask, weight or order moves these vectors by 1e-2 or more). */
#define TOL 1e-5

static const char *const texts[] = {"the cat sat on the mat", "a dog ran",
                                    "it was very good and then my old dog slept in the sun"};
enum { N = 3 };

static vit_text_context *load(const char *name) {
    char dir[4096];
    snprintf(dir, sizeof dir, TEST_DATA "/%s", name);
    vit_error err = {0};
    vit_text_context *c = vit_text_load(dir, NULL, &err);
    if (!c) print_message("%s: %s\n", name, err.msg);
    assert_non_null(c);
    return c;
}

static void expect_golden(const char *name, const char *tensor, const float *got, size_t n) {
    char dir[4096];
    snprintf(dir, sizeof dir, TEST_DATA "/%s", name);
    size_t numel;
    float *want = test_golden_tensor(dir, tensor, &numel);
    assert_int_equal(numel, n);
    double worst = 0;
    for (size_t i = 0; i < n; i++) worst = fmax(worst, fabs((double)got[i] - want[i]));
    print_message("%s %s: max |d| %.2g\n", name, tensor, worst);
    assert_true(worst <= TOL);
    free(want);
}

/* opts over the three texts in one batch, against golden tensor; then each text alone, which
 * must give its batch row within 5e-6 of its size: padding is masked out of attention and the
 * poolings, but the sums' order follows the padded length and the GEMM's blocking the row count,
 * so the last bits differ (seen: below 1e-7 with oneDNN, 1.4e-6 on 0.608 with OpenBLAS alone). */
static void expect_embed(vit_text_context *c, const char *name, const vit_text_embed_opts *o,
                         const char *tensor, int dim) {
    size_t lengths[N];
    for (int i = 0; i < N; i++) lengths[i] = strlen(texts[i]);
    float *got = test_alloc_floats((size_t)N * dim), *one = test_alloc_floats((size_t)dim);
    vit_error err = {0};
    if (vit_text_embed_with(c, texts, lengths, N, o, got, &err) != 0)
        print_message("%s: %s\n", name, err.msg);
    assert_int_equal(err.msg[0], 0);
    expect_golden(name, tensor, got, (size_t)N * dim);
    for (int i = 0; i < N; i++) {
        assert_int_equal(vit_text_embed_with(c, texts + i, lengths + i, 1, o, one, &err), 0);
        for (int d = 0; d < dim; d++) {
            const float want = got[(size_t)i * dim + d];
            assert_true(fabs(one[d] - want) <= 5e-6 * (1 + fabs(want)));
        }
    }
    free(got);
    free(one);
}

static void test_pipelines(void **state) {
    (void)state;
    const struct {
        const char *name;
        int dim;
    } folders[] = {{"st-mean-micro", 32},
                   {"st-cls-dense-micro", 16},
                   {"st-multi-micro", 24},
                   {"st-prompt-micro", 32}};
    for (size_t f = 0; f < sizeof folders / sizeof *folders; f++) {
        vit_text_context *c = load(folders[f].name);
        assert_int_equal(vit_text_default_pool(c), VIT_POOL_SENTENCE);
        assert_int_equal(vit_text_embed_size(c, VIT_POOL_SENTENCE), folders[f].dim);
        expect_embed(c, folders[f].name, NULL, "sentence", folders[f].dim);
        /* vit_text_embed with the default pooling is the same call */
        size_t lengths[N];
        for (int i = 0; i < N; i++) lengths[i] = strlen(texts[i]);
        float got[N * 32];
        vit_error err = {0};
        assert_int_equal(vit_text_embed(c, texts, lengths, N, VIT_POOL_SENTENCE, got, &err), 0);
        expect_golden(folders[f].name, "sentence", got, (size_t)N * folders[f].dim);
        vit_text_free(c);
    }
}

/* max_seq_length 12 cuts the long text (15 tokens): its tokens are the first 11 and [SEP]. */
static void test_max_seq_length(void **state) {
    (void)state;
    vit_text_context *c = load("st-mean-micro");
    assert_int_equal(vit_text_max_tokens(c), 12);
    vit_error err = {0};
    int32_t ids[40];
    assert_int_equal(vit_text_tokenize(c, texts[2], strlen(texts[2]), ids, 40, &err), 12);
    vit_text_free(c);
}

/* Each pooling mode alone (the raw pooling, no Dense): st-multi-micro's golden. */
static void test_every_mode(void **state) {
    (void)state;
    vit_text_context *c = load("st-multi-micro");
    const struct {
        vit_pool pool;
        const char *tensor;
    } modes[] = {{VIT_POOL_CLS, "cls"},
                 {VIT_POOL_MAX, "max"},
                 {VIT_POOL_MEAN, "mean"},
                 {VIT_POOL_MEAN_SQRT_LEN, "mean_sqrt_len"},
                 {VIT_POOL_WEIGHTED_MEAN, "weightedmean"},
                 {VIT_POOL_LAST_TOKEN, "lasttoken"}};
    for (size_t m = 0; m < sizeof modes / sizeof *modes; m++) {
        assert_int_equal(vit_text_embed_size(c, modes[m].pool), 32);
        const vit_text_embed_opts o = {.pool = modes[m].pool};
        expect_embed(c, "st-multi-micro", &o, modes[m].tensor, 32);
    }
    vit_text_free(c);
}

static void test_prompts_and_dimensions(void **state) {
    (void)state;
    vit_text_context *c = load("st-prompt-micro");
    assert_int_equal(vit_text_prompt_count(c), 2);
    assert_string_equal(vit_text_prompt_name(c, 0), "query");
    assert_string_equal(vit_text_prompt_name(c, 1), "passage");
    assert_string_equal(vit_text_default_prompt(c), "query");
    assert_string_equal(vit_text_prompt(c, "passage"), "the ");
    assert_null(vit_text_prompt(c, "document"));
    assert_string_equal(vit_text_similarity(c), "cosine");
    const vit_text_embed_opts query = {.pool = VIT_POOL_SENTENCE, .prompt = "my old "};
    const vit_text_embed_opts passage = {.pool = VIT_POOL_SENTENCE, .prompt = "the "};
    const vit_text_embed_opts none = {.pool = VIT_POOL_SENTENCE, .prompt = ""};
    const vit_text_embed_opts dims = {.pool = VIT_POOL_SENTENCE, .dimensions = 8};
    expect_embed(c, "st-prompt-micro", &query, "sentence", 32);
    expect_embed(c, "st-prompt-micro", &passage, "passage", 32);
    expect_embed(c, "st-prompt-micro", &none, "none", 32);
    expect_embed(c, "st-prompt-micro", &dims, "dims8", 8);
    const vit_text_embed_opts wide = {.pool = VIT_POOL_SENTENCE, .dimensions = 33};
    size_t len = strlen(texts[0]);
    float out[40];
    vit_error err = {0};
    assert_int_equal(vit_text_embed_with(c, texts, &len, 1, &wide, out, &err), -1);
    assert_string_equal(err.msg, "dimensions 33: the embedding has 32");
    vit_text_free(c);
}

/* A folder of links to st-mean-micro's files with modules.json (and the Pooling config) as
 * given. */
static const char *broken_folder(const char *modules, const char *pooling) {
    static char dir[4096];
    static int n;
    snprintf(dir, sizeof dir, "%s/broken%d", test_tmpdir(), n++);
    assert_int_equal(mkdir(dir, 0755), 0);
    const char *files[] = {"config.json", "model.safetensors", "vocab.txt",
                           "tokenizer_config.json"};
    char from[4096], to[4096 + 64];
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        snprintf(from, sizeof from, "%s/" TEST_DATA "/st-mean-micro/%s", getcwd(to, 4096),
                 files[i]);
        snprintf(to, sizeof to, "%s/%s", dir, files[i]);
        assert_int_equal(symlink(from, to), 0);
    }
    snprintf(to, sizeof to, "%s/1_Pooling", dir);
    assert_int_equal(mkdir(to, 0755), 0);
    char name[256];
    snprintf(name, sizeof name, "%s/modules.json", strrchr(dir, '/') + 1);
    write_temp_file(name, modules, strlen(modules));
    snprintf(name, sizeof name, "%s/1_Pooling/config.json", strrchr(dir, '/') + 1);
    write_temp_file(name, pooling, strlen(pooling));
    return dir;
}

static void expect_refused(const char *modules, const char *pooling, const char *says) {
    const char *dir = broken_folder(modules, pooling);
    vit_error err = {0};
    assert_null(vit_text_load(dir, NULL, &err));
    print_message("refused: %s\n", err.msg);
    assert_non_null(strstr(err.msg, says));
}

static void test_refusals(void **state) {
    (void)state;
    const char *pool = "{\"word_embedding_dimension\": 32, \"pooling_mode_mean_tokens\": true}";
    const char *tr = "{\"idx\": 0, \"name\": \"0\", \"path\": \"\", \"type\": "
                     "\"sentence_transformers.models.Transformer\"}";
    char modules[1024];
    snprintf(modules, sizeof modules,
             "[%s, {\"idx\": 1, \"name\": \"1\", \"path\": \"1_Pooling\", \"type\": "
             "\"sentence_transformers.models.CNN\"}]",
             tr);
    expect_refused(modules, pool, "module 1 is CNN; vit needs a Pooling after the Transformer");
    snprintf(modules, sizeof modules,
             "[%s, {\"idx\": 1, \"name\": \"1\", \"path\": \"1_Pooling\", \"type\": "
             "\"sentence_transformers.models.Pooling\"}]",
             tr);
    expect_refused(modules, "{\"word_embedding_dimension\": 48, \"pooling_mode_cls_token\": true}",
                   "word_embedding_dimension is 48, the Transformer's hidden_size 32");
    expect_refused(modules, "{\"word_embedding_dimension\": 32}", "no pooling mode is true");
    /* keys are case-sensitive, as Python's json.loads and Pooling(**config) read them */
    expect_refused(modules,
                   "{\"word_embeddIng_dimension\": 32, \"pooling_mode_mean_tokens\": true}",
                   "word_embedding_dimension is missing");
    expect_refused("{}", pool, "not a JSON list of modules");
    snprintf(modules, sizeof modules,
             "[%s, {\"idx\": 1, \"name\": \"1\", \"path\": \"../x\", \"type\": "
             "\"sentence_transformers.models.Pooling\"}]",
             tr);
    expect_refused(modules, pool, "not a sentence_transformers.models one in the folder");
    snprintf(modules, sizeof modules,
             "[%s, {\"idx\": 1, \"name\": \"1\", \"path\": \"1_Pooling\", \"type\": "
             "\"sentence_transformers.models.Pooling\"}, {\"idx\": 2, \"name\": \"2\", \"path\": "
             "\"2_Dense\", \"type\": \"sentence_transformers.models.Dense\"}]",
             tr);
    expect_refused(modules, pool, "2_Dense/config.json");
    /* an encoder folder that is not a sentence-transformers one has no VIT_POOL_SENTENCE */
    vit_error err = {0};
    vit_text_context *c = vit_text_load(TEST_DATA "/bert-base-micro", NULL, &err);
    assert_non_null(c);
    size_t len = 3;
    float out[32];
    assert_int_equal(vit_text_embed(c, texts, &len, 1, VIT_POOL_SENTENCE, out, &err), -1);
    assert_non_null(strstr(err.msg, "no modules.json"));
    vit_text_free(c);
}

/* st-mean-micro's model under a tokenizer that keeps case (tokenizer_config.json do_lower_case
 * false), with sentence_bert_config.json's do_lower_case as given. */
static const char *case_folder(int lower) {
    static char dir[4096];
    snprintf(dir, sizeof dir, "%s/case%d", test_tmpdir(), lower);
    assert_int_equal(mkdir(dir, 0755), 0);
    const char *files[] = {"config.json", "model.safetensors", "vocab.txt", "modules.json",
                           "1_Pooling"};
    char cwd[4096], from[8300], to[4200];
    assert_non_null(getcwd(cwd, sizeof cwd));
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        snprintf(from, sizeof from, "%s/" TEST_DATA "/st-mean-micro/%s", cwd, files[i]);
        snprintf(to, sizeof to, "%s/%s", dir, files[i]);
        assert_int_equal(symlink(from, to), 0);
    }
    const char *tok = "{\"do_lower_case\": false, \"model_max_length\": 40, \"tokenizer_class\": "
                      "\"BertTokenizer\"}";
    const char *sbert = lower ? "{\"max_seq_length\": 40, \"do_lower_case\": true}"
                              : "{\"max_seq_length\": 40, \"do_lower_case\": false}";
    char name[256];
    snprintf(name, sizeof name, "case%d/tokenizer_config.json", lower);
    write_temp_file(name, tok, strlen(tok));
    snprintf(name, sizeof name, "case%d/sentence_bert_config.json", lower);
    write_temp_file(name, sbert, strlen(sbert));
    return dir;
}

/* do_lower_case: the Transformer module lowers each text before a tokenizer that keeps case, so
 * "The CAT sat" embeds as "the cat sat"; without it the capitalised words are unknown tokens. */
static void test_do_lower_case(void **state) {
    (void)state;
    const char *const pair[] = {"The CAT sat", "the cat sat"};
    const size_t lengths[] = {strlen(pair[0]), strlen(pair[1])};
    for (int lower = 0; lower < 2; lower++) {
        vit_error err = {0};
        vit_text_context *c = vit_text_load(case_folder(lower), NULL, &err);
        if (!c) print_message("%s\n", err.msg);
        assert_non_null(c);
        float a[32], b[32];
        assert_int_equal(vit_text_embed(c, pair, lengths, 1, VIT_POOL_SENTENCE, a, &err), 0);
        assert_int_equal(vit_text_embed(c, pair + 1, lengths + 1, 1, VIT_POOL_SENTENCE, b, &err),
                         0);
        if (lower)
            assert_memory_equal(a, b, sizeof a);
        else
            assert_memory_not_equal(a, b, sizeof a);
        vit_text_free(c);
    }
}

/* A Dense saved as pytorch_model.bin (older sentence-transformers wrote it so): st-cls-dense-micro
 * with tests/data/st-dense-bin/pytorch_model.bin (torch.save of the same tensors) in place of
 * 2_Dense/model.safetensors embeds bit for bit as st-cls-dense-micro. */
static void test_dense_from_pytorch_bin(void **state) {
    (void)state;
    char dir[4096], cwd[4096], from[8300], to[8300];
    assert_non_null(getcwd(cwd, sizeof cwd));
    snprintf(dir, sizeof dir, "%s/dense-bin", test_tmpdir());
    assert_int_equal(mkdir(dir, 0755), 0);
    const char *files[] = {"modules.json", "1_Pooling", "0_Transformer",
                           "config_sentence_transformers.json", "2_Dense/config.json"};
    snprintf(to, sizeof to, "%s/2_Dense", dir);
    assert_int_equal(mkdir(to, 0755), 0);
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        snprintf(from, sizeof from, "%s/" TEST_DATA "/st-cls-dense-micro/%s", cwd, files[i]);
        snprintf(to, sizeof to, "%s/%s", dir, files[i]);
        assert_int_equal(symlink(from, to), 0);
    }
    snprintf(from, sizeof from, "%s/" TEST_DATA "/st-dense-bin/pytorch_model.bin", cwd);
    snprintf(to, sizeof to, "%s/2_Dense/pytorch_model.bin", dir);
    assert_int_equal(symlink(from, to), 0);
    vit_error err = {0};
    vit_text_context *bin = vit_text_load(dir, NULL, &err);
    if (!bin) print_message("%s\n", err.msg);
    assert_non_null(bin);
    vit_text_context *st = load("st-cls-dense-micro");
    size_t lengths[N];
    for (int i = 0; i < N; i++) lengths[i] = strlen(texts[i]);
    float a[N * 16], b[N * 16];
    assert_int_equal(vit_text_embed(bin, texts, lengths, N, VIT_POOL_SENTENCE, a, &err), 0);
    assert_int_equal(vit_text_embed(st, texts, lengths, N, VIT_POOL_SENTENCE, b, &err), 0);
    assert_memory_equal(a, b, sizeof a);
    expect_golden("st-cls-dense-micro", "sentence", a, N * 16);
    vit_text_free(bin);
    vit_text_free(st);
}

/* A folder of links to tests/data/SRC's files (config.json, model.safetensors and its tokenizer
 * files as named) with a modules.json of Transformer, Pooling (pooling as given) and Normalize. */
static const char *st_over(const char *src, const char *const *files, int nfiles,
                           const char *pooling) {
    static char dir[4096];
    char cwd[4096], from[8300], to[8300], name[256];
    assert_non_null(getcwd(cwd, sizeof cwd));
    snprintf(dir, sizeof dir, "%s/st-over-%s", test_tmpdir(), src);
    assert_int_equal(mkdir(dir, 0755), 0);
    for (int i = 0; i < nfiles; i++) {
        snprintf(from, sizeof from, "%s/" TEST_DATA "/%s/%s", cwd, src, files[i]);
        snprintf(to, sizeof to, "%s/%s", dir, files[i]);
        assert_int_equal(symlink(from, to), 0);
    }
    snprintf(to, sizeof to, "%s/1_Pooling", dir);
    assert_int_equal(mkdir(to, 0755), 0);
    const char *modules =
        "[{\"idx\": 0, \"name\": \"0\", \"path\": \"\", \"type\": "
        "\"sentence_transformers.models.Transformer\"}, {\"idx\": 1, \"name\": \"1\", \"path\": "
        "\"1_Pooling\", \"type\": \"sentence_transformers.models.Pooling\"}, {\"idx\": 2, "
        "\"name\": \"2\", \"path\": \"2_Normalize\", \"type\": "
        "\"sentence_transformers.models.Normalize\"}]";
    snprintf(name, sizeof name, "st-over-%s/modules.json", src);
    write_temp_file(name, modules, strlen(modules));
    snprintf(name, sizeof name, "st-over-%s/1_Pooling/config.json", src);
    write_temp_file(name, pooling, strlen(pooling));
    return dir;
}

/* all-mpnet-base-v2's shape: an MPNetModel (tests/data/mpnet-model-micro) with mean pooling and
 * Normalize gives, for its golden's texts in one batch (2 to 72 tokens), the mean of the float64
 * reference's last hidden states over each text's tokens, normalised, within 1e-5. */
static void test_mpnet_mean_normalize(void **state) {
    (void)state;
    const char *files[] = {"config.json", "model.safetensors", "vocab.txt",
                           "tokenizer_config.json"};
    const char *dir = st_over("mpnet-model-micro", files, 4,
                              "{\"word_embedding_dimension\": 32, \"pooling_mode_mean_tokens\": "
                              "true}");
    vit_error err = {0};
    vit_text_context *c = vit_text_load(dir, NULL, &err);
    if (!c) print_message("%s\n", err.msg);
    assert_non_null(c);
    static const char *const mp_texts[] = {"the cat sat on the mat", "a dog ran far away from home",
                                           "it was very good", "the zebra slept", ""};
    enum { M = 5, T = 72, D = 32 };
    size_t numel, lengths[M];
    float *hidden = test_golden_tensor(TEST_DATA "/mpnet-model-micro", "hidden", &numel);
    assert_int_equal(numel, 6 * T * D);
    for (int i = 0; i < M; i++) lengths[i] = strlen(mp_texts[i]);
    float got[M * D];
    assert_int_equal(vit_text_embed(c, mp_texts, lengths, M, VIT_POOL_SENTENCE, got, &err), 0);
    double worst = 0;
    for (int i = 0; i < M; i++) {
        int32_t ids[T];
        const int n = vit_text_tokenize(c, mp_texts[i], lengths[i], ids, T, &err);
        assert_true(n >= 2 && n < T);
        const float *h = hidden + (size_t)i * T * D;
        assert_true(h[(size_t)(n - 1) * D] != 0 && h[(size_t)n * D] == 0); /* its padding */
        double mean[D], norm = 0;
        for (int d = 0; d < D; d++) {
            mean[d] = 0;
            for (int t = 0; t < n; t++) mean[d] += h[(size_t)t * D + d];
            mean[d] /= n;
            norm += mean[d] * mean[d];
        }
        for (int d = 0; d < D; d++)
            worst = fmax(worst, fabs(got[i * D + d] - mean[d] / sqrt(norm)));
    }
    print_message("mpnet-model-micro mean + Normalize: max |d| %.2g\n", worst);
    assert_true(worst <= TOL);
    free(hidden);
    vit_text_free(c);
}

/* The Transformer module strips each text (str.strip()): with a byte-level BPE tokenizer, where a
 * leading space is a token of its own (roberta-seq-micro), "  a dog ran " embeds as "a dog ran"
 * in a sentence-transformers folder, though the tokenizer alone gives other ids. */
static void test_texts_stripped(void **state) {
    (void)state;
    const char *files[] = {"config.json", "model.safetensors",     "vocab.json",
                           "merges.txt",  "tokenizer_config.json", "special_tokens_map.json"};
    const char *dir = st_over("roberta-seq-micro", files, 6,
                              "{\"word_embedding_dimension\": 32, \"pooling_mode_mean_tokens\": "
                              "true}");
    vit_error err = {0};
    vit_text_context *plain = vit_text_load(TEST_DATA "/roberta-seq-micro", NULL, &err);
    vit_text_context *st = vit_text_load(dir, NULL, &err);
    if (!st) print_message("%s\n", err.msg);
    assert_non_null(plain);
    assert_non_null(st);
    const char *const pair[] = {"  a dog ran ", "a dog ran"};
    const size_t lengths[] = {strlen(pair[0]), strlen(pair[1])};
    int32_t a[64], b[64];
    const int na = vit_text_tokenize(plain, pair[0], lengths[0], a, 64, &err),
              nb = vit_text_tokenize(plain, pair[1], lengths[1], b, 64, &err);
    assert_true(na != nb || memcmp(a, b, sizeof(int32_t) * (size_t)na) != 0);
    float ea[32], eb[32];
    assert_int_equal(vit_text_embed(st, pair, lengths, 1, VIT_POOL_SENTENCE, ea, &err), 0);
    assert_int_equal(vit_text_embed(st, pair + 1, lengths + 1, 1, VIT_POOL_SENTENCE, eb, &err), 0);
    assert_memory_equal(ea, eb, sizeof ea);
    vit_text_free(plain);
    vit_text_free(st);
}

/* Runs vit embed -m tests/data/NAME ARGS... --text TEXTS... -o - and reads the rows
 * ("text\tnumbers") into out (n x dim); the numbers are %.9g, so they read back as the floats
 * written. */
static void cli_rows(const char *name, const char *const *args, int nargs, float *out, int dim) {
    char model[256];
    snprintf(model, sizeof model, TEST_DATA "/%s", name);
    const char *argv[40] = {"embed", "-m", model, "--threads", "1", "-b", "16"};
    int k = 7;
    for (int i = 0; i < nargs; i++) argv[k++] = args[i];
    for (int i = 0; i < N; i++) argv[k++] = "--text", argv[k++] = texts[i];
    argv[k++] = "-o", argv[k++] = "-", argv[k] = NULL;
    test_run_result r = test_run_vit(NULL, NULL, argv);
    if (r.status != 0) print_message("%s\n", r.err);
    assert_int_equal(r.status, 0);
    const char *line = r.out;
    for (int i = 0; i < N; i++) {
        const char *tab = strchr(line, '\t');
        assert_non_null(tab);
        assert_int_equal((size_t)(tab - line), strlen(texts[i]));
        char *end = (char *)tab + 1;
        for (int d = 0; d < dim; d++) out[i * dim + d] = strtof(end, &end);
        assert_int_equal(*end, '\n');
        line = end + 1;
    }
    assert_int_equal(*line, 0);
    test_run_free(&r);
}

static void expect_cli(const char *name, const char *const *args, int nargs,
                       const vit_text_embed_opts *o, int dim) {
    float cli[N * 32], lib[N * 32];
    cli_rows(name, args, nargs, cli, dim);
    /* the CLI's threads and batch: the GEMM's blocking and its threads' split follow both, and
     * with them the last bits */
    char dir[4096];
    snprintf(dir, sizeof dir, TEST_DATA "/%s", name);
    vit_text_params p = vit_text_default_params();
    p.threads = 1, p.max_batch = 16;
    vit_error err = {0};
    vit_text_context *c = vit_text_load(dir, &p, &err);
    assert_non_null(c);
    size_t lengths[N];
    for (int i = 0; i < N; i++) lengths[i] = strlen(texts[i]);
    /* the --text values go in batches of -b, as a file's lines: here one batch of the N */
    assert_int_equal(vit_text_embed_with(c, texts, lengths, N, o, lib, &err), 0);
    assert_memory_equal(cli, lib, sizeof(float) * N * dim);
    vit_text_free(c);
}

static void expect_cli_refusal(const char *const *argv, const char *says) {
    test_run_result r = test_run_vit(NULL, NULL, argv);
    print_message("%s", r.err);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, says));
    assert_string_equal(strchr(r.err, '\n'), "\n"); /* one line */
    test_run_free(&r);
}

/* vit embed gives the library's floats: the folder's pipeline by default, --prompt,
 * --prompt-text, --dimensions, --pool (the pooling alone); refusals in one line, exit 2. */
static void test_cli_matches_library(void **state) {
    (void)state;
    REQUIRE_BIN();
    expect_cli("st-cls-dense-micro", NULL, 0, NULL, 16);
    expect_cli("st-multi-micro", NULL, 0, NULL, 24);
    expect_cli("st-prompt-micro", NULL, 0, NULL, 32);
    const char *passage[] = {"--prompt", "passage"}, *none[] = {"--prompt-text", ""},
               *dims[] = {"--dimensions", "8"}, *max[] = {"--pool", "max"};
    const vit_text_embed_opts o_passage = {.pool = VIT_POOL_SENTENCE, .prompt = "the "},
                              o_none = {.pool = VIT_POOL_SENTENCE, .prompt = ""},
                              o_dims = {.pool = VIT_POOL_SENTENCE, .dimensions = 8},
                              o_max = {.pool = VIT_POOL_MAX};
    expect_cli("st-prompt-micro", passage, 2, &o_passage, 32);
    expect_cli("st-prompt-micro", none, 2, &o_none, 32);
    expect_cli("st-prompt-micro", dims, 2, &o_dims, 8);
    expect_cli("st-prompt-micro", max, 2, &o_max, 32);
    const char *unknown[] = {
        "embed", "-m", TEST_DATA "/st-prompt-micro", "--prompt", "doc", "--text", "a", "-o",
        "-",     NULL};
    expect_cli_refusal(unknown, "has no prompt 'doc' (its prompts: query, passage)");
    const char *wide[] = {
        "embed", "-m", TEST_DATA "/st-prompt-micro", "--dimensions", "33", "--text", "a", "-o",
        "-",     NULL};
    expect_cli_refusal(wide, "--dimensions 33: tests/data/st-prompt-micro's embedding has 32");
    const char *plain[] = {
        "embed", "-m", TEST_DATA "/bert-base-micro", "--pool", "sentence", "--text", "a", "-o",
        "-",     NULL};
    expect_cli_refusal(plain, "--pool sentence is for sentence-transformers folders");
}

/* vit embed --help gives --pool's whole help (it was cut at 512 bytes, mid-sentence). */
static void test_help_whole(void **state) {
    (void)state;
    REQUIRE_BIN();
    const char *argv[] = {"embed", "--help", NULL};
    test_run_result r = test_run_vit(NULL, NULL, argv);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "--pool cls|mean|max|mean_sqrt_len|weightedmean|lasttoken|pooler|"
                                  "joint|patches|projection|sentence\n"));
    assert_non_null(strstr(r.out, "mean for an image tower without its head), else cls)\n"));
    test_run_free(&r);
}

/* vit info names the pipeline, the prompts and the cut. */
static void test_info(void **state) {
    (void)state;
    REQUIRE_BIN();
    const struct {
        const char *name, *says;
    } cases[] = {
        {"st-mean-micro", "pipeline:       Pooling mean -> Normalize (modules.json); similarity "
                          "cosine; texts cut at 12 tokens\n"},
        {"st-cls-dense-micro", "pipeline:       Pooling cls -> Dense 32 -> 16 tanh -> Normalize"},
        {"st-multi-micro", "Pooling cls+max+mean+mean_sqrt_len+weightedmean+lasttoken -> Dense "
                           "192 -> 24 identity (no bias)"},
        {"st-prompt-micro", "prompts:        query \"my old \" (default), passage \"the \"\n"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char model[256];
        snprintf(model, sizeof model, TEST_DATA "/%s", cases[i].name);
        const char *argv[] = {"info", "-m", model, NULL};
        test_run_result r = test_run_vit(NULL, NULL, argv);
        assert_int_equal(r.status, 0);
        if (!strstr(r.out, cases[i].says)) fail_msg("%s: %s", cases[i].name, r.out);
        assert_non_null(strstr(r.out, "embedding:      --pool sentence"));
        test_run_free(&r);
    }
}

/* vit_text_count_tokens: the tokens before the cut, counted by hand on the micro vocabulary (each
 * word one token): a text of 6 words is 8 ([CLS], [SEP]) as vit_text_tokenize gives it; the
 * default prompt "my old " adds 2; 30 words are 32, where vit_text_tokenize cuts at
 * max_seq_length (12); a pair is [CLS] a [SEP] b [SEP], uncut. */
static void test_count_tokens(void **state) {
    (void)state;
    vit_error err = {0};
    vit_text_context *plain = vit_text_load(TEST_DATA "/st-mean-micro", NULL, &err),
                     *prompted = vit_text_load(TEST_DATA "/st-prompt-micro", NULL, &err);
    assert_non_null(plain);
    assert_non_null(prompted);
    const char *six = "the cat sat on the mat";
    char thirty[256] = "";
    for (int i = 0; i < 30; i++) strcat(thirty, i % 2 ? "dog " : "cat ");
    int32_t ids[64];
    assert_int_equal(vit_text_count_tokens(plain, six, strlen(six), &err), 8);
    assert_int_equal(vit_text_tokenize(plain, six, strlen(six), ids, 64, &err), 8);
    assert_int_equal(vit_text_count_tokens(prompted, six, strlen(six), &err), 10);
    assert_int_equal(vit_text_count_tokens(plain, thirty, strlen(thirty), &err), 32);
    assert_int_equal(vit_text_tokenize(plain, thirty, strlen(thirty), ids, 64, &err), 12);
    assert_int_equal(vit_text_max_tokens(plain), 12);
    assert_int_equal(vit_text_count_tokens(plain, "", 0, &err), 2);
    vit_text_context *pairs = vit_text_load(TEST_DATA "/bert-pair-micro", NULL, &err);
    assert_non_null(pairs);
    assert_int_equal(vit_text_count_pair_tokens(pairs, "the cat", 7, thirty, strlen(thirty), &err),
                     2 + 30 + 3);
    vit_text_free(pairs);
    vit_text_free(plain);
    vit_text_free(prompted);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pipelines),
        cmocka_unit_test(test_max_seq_length),
        cmocka_unit_test(test_count_tokens),
        cmocka_unit_test(test_every_mode),
        cmocka_unit_test(test_prompts_and_dimensions),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_do_lower_case),
        cmocka_unit_test(test_dense_from_pytorch_bin),
        cmocka_unit_test(test_mpnet_mean_normalize),
        cmocka_unit_test(test_texts_stripped),
        cmocka_unit_test(test_cli_matches_library),
        cmocka_unit_test(test_info),
        cmocka_unit_test(test_help_whole),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
