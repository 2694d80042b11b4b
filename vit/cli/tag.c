/* vit tag: a token classifier's entities (NER, POS) as the token-classification pipeline gives
 * them, with its aggregation strategies and character offsets into each text. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vit/cli/cli.h"
#include "vit/vit.h"

#define DEFAULT_BATCH 32

enum { OPT_FILE = 1, OPT_ALL, OPT_JSON, OPT_AGGREGATION };

static const cli_option options[] = {
    CLI_MODEL_OPTION("a ForTokenClassification folder", "$VIT_MODEL"),
    {OPT_FILE, "file", 'f', "FILE", "tag each line of FILE ('-': standard input)", NULL},
    {OPT_AGGREGATION, "aggregation", 'a', "HOW",
     "none, simple, first, average or max (the pipeline's aggregation_strategy)", "none"},
    {OPT_ALL, "all", 0, NULL, "also the entities labelled O (the pipeline's ignore_labels=[])",
     NULL},
    {OPT_JSON, "json", 0, NULL, "one JSON object per text: text, entities", NULL},
    CLI_BATCH_OPTION("texts per forward pass", "32"),
    CLI_THREADS_OPTION,
    CLI_BACKEND_OPTION,
    CLI_PRECISION_OPTION,
};

static const cli_command command = {
    "tag",
    "label every token of texts with a token classifier (NER), text or JSON lines",
    "[options] [--] TEXT...",
    "Tags each TEXT, then each line of FILE; with neither, each line of standard input, as\n"
    "transformers' token-classification pipeline does (softmax per token, the start and end\n"
    "tokens left out). --aggregation none gives each token its most probable label (entity,\n"
    "score, index: its position, word: its piece); simple groups adjacent tokens of one entity\n"
    "(B- starts one, I- continues it) into entity_group, the mean score and their word; first,\n"
    "average and max first give each word the label of its first token, of its tokens' mean\n"
    "probabilities or of its most confident token, then group words (they need the tokenizer's\n"
    "offsets, to see where words begin). start and end count characters (code points, as\n"
    "Python) of the text; a tokenizer without offsets (SigLIP's, a BPE SentencePiece model)\n"
    "gives none. Entities labelled O are left out unless --all.",
    options,
    sizeof options / sizeof options[0]};

const cli_command *cli_tag_command(void) {
    return &command;
}

typedef struct {
    cli_common common;
    const char *file;
    int all, json;
    vit_aggregation aggregation;
    char **rest;
    int num_rest;
    char **text; /* every text, the arguments' then the lines' */
    size_t *len;
    int n, cap;
} options_t;

static int tag_option(const cli_parser *p, int id, void *user) {
    options_t *o = user;
    if (id == OPT_FILE) o->file = p->value;
    if (id == OPT_ALL) o->all = 1;
    if (id == OPT_JSON) o->json = 1;
    if (id == OPT_AGGREGATION) {
        static const char *const names[] = {"none", "simple", "first", "average", "max"};
        const int k = cli_choice(p, names, 5);
        if (k < 0) return -1;
        o->aggregation = (vit_aggregation)k;
    }
    return 0;
}

static int add_text(options_t *o, const char *s, size_t n) {
    if (o->n == o->cap) {
        const int cap = o->cap ? 2 * o->cap : 64;
        char **t = realloc(o->text, sizeof *t * (size_t)cap);
        if (t) o->text = t;
        size_t *l = realloc(o->len, sizeof *l * (size_t)cap);
        if (l) o->len = l;
        if (!t || !l) return -1;
        o->cap = cap;
    }
    if (!(o->text[o->n] = strndup(s, n))) return -1;
    o->len[o->n++] = n;
    return 0;
}

static int read_texts(options_t *o) {
    for (int i = 0; i < o->num_rest; i++)
        if (add_text(o, o->rest[i], strlen(o->rest[i])) != 0) return -1;
    if (!o->file && o->num_rest > 0) return 0;
    const char *path = o->file && strcmp(o->file, "-") != 0 ? o->file : NULL;
    FILE *f = path ? fopen(path, "r") : stdin;
    if (!f) return fprintf(stderr, "vit tag: %s: %s\n", path, strerror(errno)), -1;
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    int rc = 0;
    while (rc == 0 && (n = getline(&line, &cap, f)) >= 0) {
        if (n > 0 && line[n - 1] == '\n') n--;
        if (n > 0 && line[n - 1] == '\r') n--;
        rc = add_text(o, line, (size_t)n);
    }
    if (rc == 0 && ferror(f))
        rc = -1, fprintf(stderr, "vit tag: %s: %s\n", path ? path : "stdin", strerror(EIO));
    free(line);
    if (f != stdin) fclose(f);
    return rc;
}

/* s, then spaces up to width characters (code points: a word such as "Zürich" lines up). */
static void print_padded(const char *s, int width) {
    fputs(s, stdout);
    for (const char *c = s; *c; c++) width -= ((unsigned char)*c & 0xC0) != 0x80;
    for (; width > 0; width--) putchar(' ');
}

/* Text i of the batch: its entities, or -1 after saying why. */
static int print_tags(const options_t *o, vit_text_context *ctx, int at, int i,
                      const float *logits) {
    const size_t room = (size_t)vit_text_max_tokens(ctx) * (size_t)vit_text_num_labels(ctx);
    const vit_entity *e;
    vit_error err = {0};
    const int n = vit_text_entities(ctx, i, o->text[at], o->len[at], logits + (size_t)i * room,
                                    o->aggregation, o->all, &e, &err);
    if (n < 0) return fprintf(stderr, "vit tag: text %d: %s\n", at + 1, err.msg), -1;
    const int grouped = o->aggregation != VIT_AGGREGATE_NONE;
    json_writer w = json_begin(stdout);
    if (o->json) {
        json_object(&w);
        json_key(&w, "text");
        json_value_string(&w, o->text[at], o->len[at]);
        json_key(&w, "entities");
        json_array(&w);
    } else {
        fwrite(o->text[at], 1, o->len[at], stdout);
        putchar('\n');
    }
    for (int k = 0; k < n; k++) {
        if (!o->json) {
            char span[32] = "";
            if (e[k].start >= 0) snprintf(span, sizeof span, "%d-%d", e[k].start, e[k].end);
            printf("  ");
            if (grouped) {
                print_padded(e[k].label, 10);
                printf(" %.4f  %-9s %s\n", (double)e[k].score, span, e[k].word);
            } else {
                printf("%4d  ", e[k].index);
                print_padded(e[k].word, 16);
                putchar(' ');
                print_padded(e[k].label, 10);
                printf(" %.4f  %s\n", (double)e[k].score, span);
            }
            continue;
        }
        cli_json_entity(&w, &e[k], grouped);
    }
    if (o->json) {
        json_end(&w);
        json_end(&w);
        json_line(&w);
    }
    return 0;
}

static int tag_all(const options_t *o, vit_text_context *ctx) {
    const int B = vit_text_max_batch(ctx);
    float *logits = malloc(sizeof *logits * (size_t)B * (size_t)vit_text_max_tokens(ctx) *
                           (size_t)vit_text_num_labels(ctx));
    if (!logits) return fprintf(stderr, "vit tag: out of memory\n"), 1;
    int rc = 0;
    for (int first = 0; rc == 0 && first < o->n; first += B) {
        const int n = o->n - first < B ? o->n - first : B;
        vit_error err = {0};
        if (vit_text_token_logits(ctx, (const char *const *)o->text + first, o->len + first, n,
                                  logits, &err) != 0) {
            fprintf(stderr, "vit tag: text %d: %s\n", first, err.msg);
            rc = 1;
        }
        for (int i = 0; rc == 0 && i < n; i++) rc = print_tags(o, ctx, first + i, i, logits) != 0;
    }
    free(logits);
    return rc || fflush(stdout) != 0;
}

static int run(options_t *o, const char *dir) {
    if (read_texts(o) != 0) return 1;
    vit_params *c = &o->common.params;
    if (c->max_batch == 0) c->max_batch = DEFAULT_BATCH;
    const vit_text_params params = cli_text_params(c);
    vit_error err = {0};
    vit_text_context *ctx = vit_text_load(dir, &params, &err);
    if (!ctx) return fprintf(stderr, "vit tag: %s\n", err.msg), 1;
    vit_model_info info;
    vit_text_model_info(ctx, &info);
    int rc = 1;
    if (!(info.capabilities & VIT_CAN_TAG))
        fprintf(stderr, "vit tag: %s: %s has no token classifier ('vit text' classifies texts)\n",
                dir, info.architecture);
    else
        rc = tag_all(o, ctx);
    vit_text_free(ctx);
    return rc;
}

int cli_tag(int argc, char **argv) {
    options_t o = {0};
    cli_parser p;
    const cli_outcome parsed = cli_parse(&p, &command, argc, argv, &o.common, tag_option, &o);
    o.rest = p.rest, o.num_rest = p.num_rest;
    const char *env = getenv("VIT_MODEL");
    const char *dir = o.common.model ? o.common.model : env && *env ? env : NULL;
    int rc;
    if (parsed != CLI_PARSED)
        rc = cli_exit_status(parsed);
    else if (!dir)
        rc = cli_exit_status(cli_usage_error(&command, "no model: give -m TOKEN_CLASSIFIER"));
    else
        rc = run(&o, dir);
    for (int i = 0; i < o.n; i++) free(o.text[i]);
    free(o.text);
    free(o.len);
    return rc;
}
