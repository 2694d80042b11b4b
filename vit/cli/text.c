/* vit text: top-k labels of texts with a BERT sentence classifier. */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "text/tokenizer.h"
#include "text/utf8.h"
#include "vit/model/bert.h"
#include "vit/cli/cli.h"

#define DEFAULT_BATCH 32

static const char usage_text[] =
    "usage: vit text [-m MODEL_DIR] [-k N] [--json] [--logits] [--tokens] [-b BATCH] [-t THREADS]\n"
    "                [-f FILE] [--] TEXT...\n"
    "Classifies each TEXT, then each line of FILE ('-': standard input); with neither, each line\n"
    "of standard input. MODEL_DIR is a BertForSequenceClassification folder (default: "
    "$VIT_MODEL).\n"
    "  -k N          show the N most likely labels (default 5, at most the model's labels)\n"
    "  --json        one JSON object per text: text, top, and logits / ids, pieces if asked\n"
    "  --logits      also print the raw logits\n"
    "  --tokens      also print the token ids and WordPiece pieces, [CLS] and [SEP] included\n"
    "  -b BATCH      texts per forward pass (default 32; 1 when reading a terminal)\n"
    "  -t THREADS    compute threads (default: one per core)\n"
    "Texts are UTF-8 (invalid bytes are skipped, with a warning) and are cut to the model's\n"
    "maximum length. Put TEXTs that begin with '-' after '--'.\n";

typedef struct {
    const char *model_opt, *file;
    int top_k, json, logits, tokens, batch, threads;
    char **texts; /* the TEXT arguments */
    int num_texts;
} options;

/* The inputs of one batch. File lines live in per-slot getline buffers that are reused from
 * batch to batch; arguments are used in place. */
typedef struct {
    const char **text;
    size_t *len;
    char **buf;
    size_t *cap;
    char (*source)[320]; /* "argument 2", "FILE:7": where each text came from, for messages */
    float *logits, *probs;
    int count;
} batch;

typedef struct {
    options opt;
    FILE *in; /* FILE or stdin once the arguments are used up; NULL when none */
    const char *in_name;
    long in_line;
    int next_text;
    bert_classifier *clf;
    int labels;
    int *top; /* [top_k] */
    batch b;
    int failures;
} text_run;

/* ---- options ---- */

/* The option getopt_long just refused: a long one is the whole argument, a short one may sit
 * inside a cluster ("-jx"). */
static const char *option_name(char **argv) {
    static char name[3];
    const char *arg = argv[optind - 1];
    if (strncmp(arg, "--", 2) == 0 || !optopt) return arg;
    snprintf(name, sizeof name, "-%c", optopt);
    return name;
}

/* Returns 0 to run, 1 after --help, 2 on a usage error (already reported). */
static int parse_options(int argc, char **argv, options *o) {
    static const struct option longopts[] = {
        {"model", required_argument, 0, 'm'},   {"top", required_argument, 0, 'k'},
        {"json", no_argument, 0, 'j'},          {"logits", no_argument, 0, 'l'},
        {"tokens", no_argument, 0, 'o'},        {"batch", required_argument, 0, 'b'},
        {"threads", required_argument, 0, 't'}, {"file", required_argument, 0, 'f'},
        {"help", no_argument, 0, 'h'},          {0, 0, 0, 0}};
    *o = (options){.top_k = 5};
    int c;
    optind = 1;
    opterr = 0; /* one-line messages of our own */
    while ((c = getopt_long(argc, argv, ":m:k:b:t:f:h", longopts, NULL)) != -1) {
        long long v = 0;
        switch (c) {
        case 'm':
            o->model_opt = optarg;
            break;
        case 'f':
            o->file = optarg;
            break;
        case 'j':
            o->json = 1;
            break;
        case 'l':
            o->logits = 1;
            break;
        case 'o':
            o->tokens = 1;
            break;
        case 'k':
            v = o->top_k = (int)cli_parse_int(optarg, 1, 1 << 20, "-k");
            break;
        case 'b':
            v = o->batch = (int)cli_parse_int(optarg, 1, 4096, "-b");
            break;
        case 't':
            v = o->threads = (int)cli_parse_int(optarg, 1, 1024, "-t");
            break;
        case 'h':
            fputs(usage_text, stdout);
            return 1;
        case ':':
            fprintf(stderr, "vit text: option '%s' needs a value\n", option_name(argv));
            return 2;
        default:
            fprintf(stderr, "vit text: unknown option '%s' (vit text --help lists them)\n",
                    option_name(argv));
            return 2;
        }
        if (v < 0) return 2;
    }
    o->texts = argv + optind;
    o->num_texts = argc - optind;
    return 0;
}

/* -m, else $VIT_MODEL. The shipped default model reads images, so there is no fallback. */
static const char *model_dir(const options *o) {
    const char *env = getenv("VIT_MODEL");
    if (o->model_opt) return o->model_opt;
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

/* Reads the next text into slot i. Returns 1, 0 at the end of the input, -1 on a read error
 * (reported). */
static int next_input(text_run *r, int i) {
    batch *b = &r->b;
    if (r->next_text < r->opt.num_texts) {
        b->text[i] = r->opt.texts[r->next_text++];
        b->len[i] = strlen(b->text[i]);
        snprintf(b->source[i], sizeof b->source[i], "argument %d", r->next_text);
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
    return 1;
}

/* Bytes the tokenizer will skip as invalid UTF-8. */
static size_t invalid_utf8(const char *s, size_t n) {
    size_t bad = 0;
    for (size_t i = 0; i < n;) bad += utf8_decode((const uint8_t *)s, n, &i) < 0;
    return bad;
}

/* Fills the batch. Returns the count; a read error ends the input (r->failures counts it). */
static int fill_batch(text_run *r) {
    batch *b = &r->b;
    b->count = 0;
    while (b->count < r->opt.batch) {
        const int rc = next_input(r, b->count);
        if (rc < 0) r->failures++;
        if (rc <= 0) break;
        const size_t bad = invalid_utf8(b->text[b->count], b->len[b->count]);
        if (bad)
            fprintf(stderr, "vit text: %s: invalid UTF-8 (%zu byte%s skipped)\n",
                    b->source[b->count], bad, bad == 1 ? "" : "s");
        b->count++;
    }
    return b->count;
}

/* ---- output ---- */

/* s[0..n) as a JSON string; invalid UTF-8 bytes become U+FFFD so every line stays valid JSON. */
static void put_json_string(const char *s, size_t n) {
    putchar('"');
    for (size_t i = 0; i < n;) {
        const size_t at = i;
        const int32_t cp = utf8_decode((const uint8_t *)s, n, &i);
        if (cp < 0)
            fputs("\\ufffd", stdout);
        else if (cp == '"' || cp == '\\')
            printf("\\%c", (char)cp);
        else if (cp == '\n')
            fputs("\\n", stdout);
        else if (cp == '\t')
            fputs("\\t", stdout);
        else if (cp == '\r')
            fputs("\\r", stdout);
        else if (cp < 0x20)
            printf("\\u%04x", (unsigned)cp);
        else
            fwrite(s + at, 1, i - at, stdout);
    }
    putchar('"');
}

static void print_json(text_run *r, int i, const float *logits, const float *probs) {
    const batch *b = &r->b;
    fputs("{\"text\": ", stdout);
    put_json_string(b->text[i], b->len[i]);
    fputs(", \"top\": [", stdout);
    for (int j = 0; j < r->opt.top_k; j++) {
        const int c = r->top[j];
        const char *label = bert_classifier_label(r->clf, c);
        printf("%s{\"index\": %d, \"label\": ", j ? ", " : "", c);
        put_json_string(label, strlen(label));
        printf(", \"prob\": %.9g}", (double)probs[c]);
    }
    putchar(']');
    if (r->opt.logits) {
        fputs(", \"logits\": [", stdout);
        for (int j = 0; j < r->labels; j++) printf("%s%.9g", j ? ", " : "", (double)logits[j]);
        putchar(']');
    }
    if (r->opt.tokens) {
        int n;
        const int32_t *ids = bert_classifier_ids(r->clf, i, &n);
        const tokenizer *tok = bert_classifier_tokenizer(r->clf);
        fputs(", \"ids\": [", stdout);
        for (int t = 0; t < n; t++) printf("%s%d", t ? ", " : "", ids[t]);
        fputs("], \"pieces\": [", stdout);
        for (int t = 0; t < n; t++) {
            const char *piece = tokenizer_piece(tok, ids[t]);
            if (t) fputs(", ", stdout);
            put_json_string(piece, strlen(piece));
        }
        putchar(']');
    }
    fputs("}\n", stdout);
}

static void print_plain(text_run *r, int i, const float *logits, const float *probs) {
    const batch *b = &r->b;
    fwrite(b->text[i], 1, b->len[i], stdout);
    putchar('\n');
    for (int j = 0; j < r->opt.top_k; j++)
        printf("  %.4f  %s\n", (double)probs[r->top[j]], bert_classifier_label(r->clf, r->top[j]));
    if (r->opt.logits) {
        fputs("  logits:", stdout);
        for (int j = 0; j < r->labels; j++) printf(" %.6g", (double)logits[j]);
        putchar('\n');
    }
    if (r->opt.tokens) {
        int n;
        const int32_t *ids = bert_classifier_ids(r->clf, i, &n);
        fputs("  pieces:", stdout);
        for (int t = 0; t < n; t++)
            printf(" %s", tokenizer_piece(bert_classifier_tokenizer(r->clf), ids[t]));
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
    b->buf = calloc(n, sizeof *b->buf);
    b->cap = calloc(n, sizeof *b->cap);
    b->source = calloc(n, sizeof *b->source);
    b->logits = calloc(n * (size_t)labels, sizeof *b->logits);
    b->probs = calloc(n * (size_t)labels, sizeof *b->probs);
    return b->text && b->len && b->buf && b->cap && b->source && b->logits && b->probs ? 0 : -1;
}

static void batch_free(batch *b, int size) {
    for (int i = 0; b->buf && i < size; i++) free(b->buf[i]);
    free(b->text);
    free(b->len);
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
        if (bert_classifier_run(r->clf, b->text, b->len, b->count, b->logits, b->probs, &err)) {
            fprintf(stderr, "vit text: %s: %s\n", b->source[0], err.msg);
            return -1;
        }
        for (int i = 0; i < b->count; i++) {
            const float *logits = b->logits + (size_t)i * L, *probs = b->probs + (size_t)i * L;
            cli_top_indices(probs, L, r->opt.top_k, r->top);
            if (r->opt.json)
                print_json(r, i, logits, probs);
            else
                print_plain(r, i, logits, probs);
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
    const int parsed = parse_options(argc, argv, &r.opt);
    if (parsed != 0) return parsed == 1 ? 0 : 2;
    const char *dir = model_dir(&r.opt);
    if (!dir) {
        fprintf(stderr, "vit text: no model: give -m MODEL_DIR (a BERT text classifier) or set "
                        "VIT_MODEL; the default model reads images, not text\n");
        return 2;
    }
    if (open_input(&r) != 0) return 1;
    /* Batches wait for their last line: someone typing wants each answer at once. */
    if (r.opt.batch == 0) r.opt.batch = r.in == stdin && isatty(STDIN_FILENO) ? 1 : DEFAULT_BATCH;
    vit_error err = {0};
    int rc = 1;
    r.clf = bert_classifier_load(dir, r.opt.batch, r.opt.threads, &err);
    if (!r.clf) {
        fprintf(stderr, "vit text: %s\n", err.msg);
    } else {
        r.labels = bert_classifier_num_labels(r.clf);
        if (r.opt.top_k > r.labels) r.opt.top_k = r.labels;
        r.top = malloc(sizeof *r.top * (size_t)r.opt.top_k);
        if (!r.top || batch_alloc(&r.b, r.opt.batch, r.labels) != 0)
            fprintf(stderr, "vit text: out of memory for batches of %d texts\n", r.opt.batch);
        else
            rc = classify_all(&r) != 0 || r.failures ? 1 : 0;
    }
    batch_free(&r.b, r.opt.batch);
    free(r.top);
    bert_classifier_free(r.clf);
    if (r.in && r.in != stdin) fclose(r.in);
    return rc;
}
