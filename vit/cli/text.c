/* vit text: top-k labels of texts with a BERT sentence classifier. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "text/utf8.h"
#include "vit/vit.h"
#include "vit/cli/cli.h"

#define DEFAULT_BATCH 32

enum {
    OPT_TOP = 1,
    OPT_JSON,
    OPT_LOGITS,
    OPT_TOKENS,
    OPT_FILE,
    OPT_PAIR,
};

static const cli_option options[] = {
    CLI_MODEL_OPTION("a BertForSequenceClassification folder", "$VIT_MODEL"),
    {OPT_TOP, "top", 'k', "N", "show the N most likely labels (at most the model's labels)", "5"},
    {OPT_JSON, "json", 0, NULL,
     "one JSON object per text: text, top, and logits / ids, pieces if asked", NULL},
    {OPT_LOGITS, "logits", 0, NULL, "also print the raw logits", NULL},
    {OPT_TOKENS, "tokens", 0, NULL,
     "also print the token ids and WordPiece pieces, [CLS] and [SEP] included", NULL},
    CLI_BATCH_OPTION("texts per forward pass", "32; 1 when reading a terminal"),
    CLI_THREADS_OPTION,
    {OPT_FILE, "file", 'f', "FILE", "classify each line of FILE ('-': standard input)", NULL},
    {OPT_PAIR, "pair", 0, NULL,
     "classify pairs of texts (a cross-encoder, NLI): TEXT arguments two at a time, lines as "
     "A<TAB>B",
     NULL},
    CLI_BACKEND_OPTION,
    CLI_PRECISION_OPTION,
};

static const cli_command command = {
    "text",
    "classify texts with a BERT model (top-k labels, text or JSON lines)",
    "[options] [--] TEXT...",
    "Classifies each TEXT, then each line of FILE; with neither, each line of standard input.\n"
    "Texts are UTF-8 (invalid bytes are skipped, with a warning) and are cut to the model's\n"
    "maximum length. Put TEXTs that begin with '-' after '--'. With --pair each input is a pair\n"
    "(A, B), joined as tokenizer(A, B) joins them ([CLS] A [SEP] B [SEP] for BERT) and cut\n"
    "longest first; a line's pair is split at its first tab.",
    options,
    sizeof options / sizeof options[0]};

const cli_command *cli_text_command(void) {
    return &command;
}

typedef struct {
    const char *file;
    int top_k, json, logits, tokens, pair;
    cli_common common; /* -m; threads, max_batch (0: not given), backend, precision */
    char **texts;      /* the TEXT arguments */
    int num_texts;
} options_t;

/* The inputs of one batch. File lines live in per-slot getline buffers that are reused from
 * batch to batch; arguments are used in place. */
typedef struct {
    const char **text;
    size_t *len;
    const char **text_b; /* --pair: each input's second text */
    size_t *len_b;
    char **buf;
    size_t *cap;
    char (*source)[320]; /* "argument 2", "FILE:7": where each text came from, for messages */
    float *logits, *probs;
    int count;
} batch;

typedef struct {
    options_t opt;
    FILE *in; /* FILE or stdin once the arguments are used up; NULL when none */
    const char *in_name;
    long in_line;
    int next_text;
    vit_text_context *clf;
    int labels;
    vit_prediction *top; /* [top_k]: the text being printed */
    batch b;
    int failures;
} text_run;

/* ---- options ---- */

static int text_option(const cli_parser *p, int id, void *user) {
    options_t *o = user;
    switch (id) {
    case OPT_FILE:
        return o->file = p->value, 0;
    case OPT_JSON:
        return o->json = 1, 0;
    case OPT_LOGITS:
        return o->logits = 1, 0;
    case OPT_TOKENS:
        return o->tokens = 1, 0;
    case OPT_PAIR:
        return o->pair = 1, 0;
    case OPT_TOP:
        return cli_int(p, 1, 1 << 20, &o->top_k);
    }
    return 0;
}

static cli_outcome parse_options(int argc, char **argv, options_t *o) {
    *o = (options_t){.top_k = 5};
    cli_parser p;
    const cli_outcome parsed = cli_parse(&p, &command, argc, argv, &o->common, text_option, o);
    o->texts = p.rest;
    o->num_texts = p.num_rest;
    if (parsed == CLI_PARSED && o->pair && o->num_texts % 2)
        return cli_usage_error(&command, "--pair takes TEXT arguments two at a time (%d given)",
                               o->num_texts);
    return parsed;
}

/* -m, else $VIT_MODEL. The shipped default model reads images, so there is no fallback. */
static const char *model_dir(const options_t *o) {
    const char *env = getenv("VIT_MODEL");
    if (o->common.model) return o->common.model;
    return env && *env ? env : NULL;
}

/* ---- input ---- */

static int open_input(text_run *r) {
    const char *file = r->opt.file;
    if (!file && r->opt.num_texts > 0) return 0;
    if (!file || strcmp(file, "-") == 0) {
        r->in = stdin;
        r->in_name = "stdin";
        return 0;
    }
    r->in = fopen(file, "r");
    r->in_name = file;
    if (r->in) return 0;
    fprintf(stderr, "vit text: %s: %s\n", file, strerror(errno));
    return -1;
}

enum { SKIPPED = 2 }; /* next_input: a line that is no input (reported), the next may be */

/* --pair: slot i's line is A<TAB>B. 1, or SKIPPED (reported) when it has no tab. */
static int split_pair(batch *b, int i) {
    const char *tab = memchr(b->text[i], '\t', b->len[i]);
    if (!tab) {
        fprintf(stderr, "vit text: %s: no tab between the pair's two texts (--pair)\n",
                b->source[i]);
        return SKIPPED;
    }
    b->text_b[i] = tab + 1;
    b->len_b[i] = b->len[i] - (size_t)(tab + 1 - b->text[i]);
    b->len[i] = (size_t)(tab - b->text[i]);
    return 1;
}

/* Reads the next text into slot i. Returns 1, 0 at the end of the input, -1 on a read error
 * (reported). */
static int next_input(text_run *r, int i) {
    batch *b = &r->b;
    if (r->next_text < r->opt.num_texts) {
        b->text[i] = r->opt.texts[r->next_text++];
        b->len[i] = strlen(b->text[i]);
        snprintf(b->source[i], sizeof b->source[i], "argument %d", r->next_text);
        if (r->opt.pair) { /* parse_options made the count even */
            b->text_b[i] = r->opt.texts[r->next_text++];
            b->len_b[i] = strlen(b->text_b[i]);
        }
        return 1;
    }
    if (!r->in) return 0;
    errno = 0;
    ssize_t n = getline(&b->buf[i], &b->cap[i], r->in);
    if (n < 0) {
        if (!ferror(r->in) && errno != ENOMEM) return 0;
        fprintf(stderr, "vit text: %s: %s\n", r->in_name, strerror(errno ? errno : EIO));
        return -1;
    }
    r->in_line++;
    if (n > 0 && b->buf[i][n - 1] == '\n') n--;
    if (n > 0 && b->buf[i][n - 1] == '\r') n--;
    b->text[i] = b->buf[i];
    b->len[i] = (size_t)n;
    snprintf(b->source[i], sizeof b->source[i], "%.290s:%ld", r->in_name, r->in_line);
    return r->opt.pair ? split_pair(b, i) : 1;
}

/* Bytes the tokenizer will skip as invalid UTF-8. */
static size_t invalid_utf8(const char *s, size_t n) {
    size_t bad = 0;
    for (size_t i = 0; i < n;) bad += utf8_decode((const uint8_t *)s, n, &i) < 0;
    return bad;
}

/* Fills the batch. Returns the count; a read error ends the input, a line that is no pair is
 * skipped (r->failures counts both). */
static int fill_batch(text_run *r) {
    batch *b = &r->b;
    b->count = 0;
    while (b->count < r->opt.common.params.max_batch) {
        const int rc = next_input(r, b->count);
        if (rc < 0 || rc == SKIPPED) r->failures++;
        if (rc == SKIPPED) continue;
        if (rc <= 0) break;
        const size_t bad =
            invalid_utf8(b->text[b->count], b->len[b->count]) +
            (r->opt.pair ? invalid_utf8(b->text_b[b->count], b->len_b[b->count]) : 0);
        if (bad)
            fprintf(stderr, "vit text: %s: invalid UTF-8 (%zu byte%s skipped)\n",
                    b->source[b->count], bad, bad == 1 ? "" : "s");
        b->count++;
    }
    return b->count;
}

/* ---- output ---- */

static void print_json(text_run *r, int i, const float *logits) {
    const batch *b = &r->b;
    json_writer w = json_begin(stdout);
    json_object(&w);
    json_key(&w, "text");
    json_value_string(&w, b->text[i], b->len[i]);
    if (r->opt.pair) { /* the pipeline's name for a pair's second text */
        json_key(&w, "text_pair");
        json_value_string(&w, b->text_b[i], b->len_b[i]);
    }
    cli_json_top(&w, r->top, r->opt.top_k);
    if (r->opt.logits) {
        json_key(&w, "logits");
        json_array(&w);
        for (int j = 0; j < r->labels; j++) json_float(&w, logits[j]);
        json_end(&w);
    }
    if (r->opt.tokens) {
        int n;
        const int32_t *ids = vit_text_ids(r->clf, i, &n);
        json_key(&w, "ids");
        json_array(&w);
        for (int t = 0; t < n; t++) json_int(&w, ids[t]);
        json_end(&w);
        json_key(&w, "pieces");
        json_array(&w);
        for (int t = 0; t < n; t++) json_string(&w, vit_text_piece(r->clf, ids[t]));
        json_end(&w);
    }
    json_end(&w);
    json_line(&w);
}

static void print_plain(text_run *r, int i, const float *logits) {
    const batch *b = &r->b;
    fwrite(b->text[i], 1, b->len[i], stdout);
    if (r->opt.pair) putchar('\t'), fwrite(b->text_b[i], 1, b->len_b[i], stdout);
    putchar('\n');
    for (int j = 0; j < r->opt.top_k; j++)
        printf("  %.4f  %s\n", (double)r->top[j].prob, r->top[j].label);
    if (r->opt.logits) {
        fputs("  logits:", stdout);
        for (int j = 0; j < r->labels; j++) printf(" %.6g", (double)logits[j]);
        putchar('\n');
    }
    if (r->opt.tokens) {
        int n;
        const int32_t *ids = vit_text_ids(r->clf, i, &n);
        fputs("  pieces:", stdout);
        for (int t = 0; t < n; t++) printf(" %s", vit_text_piece(r->clf, ids[t]));
        fputs("\n  ids:", stdout);
        for (int t = 0; t < n; t++) printf(" %d", ids[t]);
        putchar('\n');
    }
}

/* ---- run ---- */

static int batch_alloc(batch *b, int size, int labels) {
    const size_t n = (size_t)size;
    b->text = calloc(n, sizeof *b->text);
    b->len = calloc(n, sizeof *b->len);
    b->text_b = calloc(n, sizeof *b->text_b);
    b->len_b = calloc(n, sizeof *b->len_b);
    b->buf = calloc(n, sizeof *b->buf);
    b->cap = calloc(n, sizeof *b->cap);
    b->source = calloc(n, sizeof *b->source);
    b->logits = calloc(n * (size_t)labels, sizeof *b->logits);
    b->probs = calloc(n * (size_t)labels, sizeof *b->probs);
    return b->text && b->len && b->text_b && b->len_b && b->buf && b->cap && b->source &&
                   b->logits && b->probs
               ? 0
               : -1;
}

static void batch_free(batch *b, int size) {
    for (int i = 0; b->buf && i < size; i++) free(b->buf[i]);
    free(b->text);
    free(b->len);
    free(b->text_b);
    free(b->len_b);
    free(b->buf);
    free(b->cap);
    free(b->source);
    free(b->logits);
    free(b->probs);
}

/* Classifies and prints batches until the input ends. Returns 0, or -1 when a batch failed. */
static int classify_all(text_run *r) {
    batch *b = &r->b;
    const int L = r->labels;
    while (fill_batch(r) > 0) {
        vit_error err = {0};
        const vit_text_pairs pairs = {b->text, b->text_b, b->len, b->len_b};
        if (r->opt.pair
                ? vit_text_forward_pairs(r->clf, &pairs, b->count, b->logits, b->probs, &err)
                : vit_text_forward(r->clf, b->text, b->len, b->count, b->logits, b->probs, &err)) {
            fprintf(stderr, "vit text: %s: %s\n", b->source[0], err.msg);
            return -1;
        }
        for (int i = 0; i < b->count; i++) {
            const float *logits = b->logits + (size_t)i * L, *probs = b->probs + (size_t)i * L;
            if (vit_text_top_k(r->clf, probs, r->opt.top_k, r->top, &err) < 0) {
                fprintf(stderr, "vit text: %s: %s\n", b->source[i], err.msg);
                return -1;
            }
            if (r->opt.json)
                print_json(r, i, logits);
            else
                print_plain(r, i, logits);
        }
        if (fflush(stdout) != 0) {
            fprintf(stderr, "vit text: writing the output: %s\n", strerror(errno));
            return -1;
        }
    }
    return 0;
}

int cli_text(int argc, char **argv) {
    text_run r = {0};
    const cli_outcome parsed = parse_options(argc, argv, &r.opt);
    if (parsed != CLI_PARSED) return cli_exit_status(parsed);
    const char *dir = model_dir(&r.opt);
    if (!dir) {
        fprintf(stderr, "vit text: no model: give -m MODEL_DIR (a BERT text classifier) or set "
                        "VIT_MODEL; the default model reads images, not text\n");
        return 2;
    }
    if (open_input(&r) != 0) return 1;
    /* Batches wait for their last line: someone typing wants each answer at once. */
    vit_params *c = &r.opt.common.params;
    if (c->max_batch == 0) c->max_batch = r.in == stdin && isatty(STDIN_FILENO) ? 1 : DEFAULT_BATCH;
    vit_error err = {0};
    int rc = 1;
    const vit_text_params params = cli_text_params(c);
    r.clf = vit_text_load(dir, &params, &err);
    if (!r.clf) {
        fprintf(stderr, "vit text: %s\n", err.msg);
    } else if (vit_text_joint_dim(r.clf) > 0) {
        /* a joint tower's outputs are embedding dimensions, not classes (Python refuses too) */
        fprintf(stderr,
                "vit text: %s is a CLIP or SigLIP model, whose text tower has no classifier "
                "head: 'vit embed -m %s --text TEXT -o -' gives its embeddings, 'vit classify "
                "-m %s --classes A,B IMAGE' scores images against texts (zero-shot)\n",
                dir, dir, dir);
    } else {
        r.labels = vit_text_num_labels(r.clf);
        if (r.opt.top_k > r.labels) r.opt.top_k = r.labels;
        r.top = malloc(sizeof *r.top * (size_t)r.opt.top_k);
        if (!r.top || batch_alloc(&r.b, c->max_batch, r.labels) != 0)
            fprintf(stderr, "vit text: out of memory for batches of %d texts\n", c->max_batch);
        else
            rc = classify_all(&r) != 0 || r.failures ? 1 : 0;
    }
    batch_free(&r.b, c->max_batch);
    free(r.top);
    vit_text_free(r.clf);
    if (r.in && r.in != stdin) fclose(r.in);
    return rc;
}
