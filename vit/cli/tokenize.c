/* vit tokenize: the token ids (and vocabulary pieces) a text model reads for each text. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/utf8.h"
#include "vit/cli/cli.h"
#include "vit/vit.h"

enum {
    OPT_JSON = 1,
};

static const cli_option options[] = {
    CLI_MODEL_OPTION("a text model's folder: BERT (vocab.txt) or CLIP (vocab.json, merges.txt)",
                     "$VIT_MODEL"),
    {OPT_JSON, "json", 0, NULL, "one JSON object per text: text, ids, pieces", NULL},
};

static const cli_command command = {
    "tokenize",
    "print the token ids and pieces a text model reads (BERT's WordPiece, CLIP's BPE)",
    "[options] [--] TEXT...",
    "Prints, for each TEXT (with none, each line of standard input), the ids the model's text\n"
    "tower reads: start and end tokens included ([CLS] ... [SEP], <|startoftext|> ...\n"
    "<|endoftext|>), cut to the model's maximum length as every command cuts them, and the\n"
    "vocabulary piece of each id. Invalid UTF-8 bytes are warned about: WordPiece skips them,\n"
    "byte-level BPE reads each as U+FFFD (Python's errors=\"replace\"). Put TEXTs that begin with\n"
    "'-' after '--'.",
    options,
    sizeof options / sizeof options[0]};

const cli_command *cli_tokenize_command(void) {
    return &command;
}

typedef struct {
    vit_text_context *ctx;
    int json;
    int32_t *ids; /* [vit_text_max_tokens] */
} tokenize_run;

static int tokenize_option(const cli_parser *p, int id, void *user) {
    (void)p;
    if (id == OPT_JSON) *(int *)user = 1;
    return 0;
}

static void print_text(const tokenize_run *r, const char *text, size_t len, int n) {
    if (r->json) {
        json_writer w = json_begin(stdout);
        json_object(&w);
        json_key(&w, "text");
        json_value_string(&w, text, len);
        json_key(&w, "ids");
        json_array(&w);
        for (int t = 0; t < n; t++) json_int(&w, r->ids[t]);
        json_end(&w);
        json_key(&w, "pieces");
        json_array(&w);
        for (int t = 0; t < n; t++) json_string(&w, vit_text_piece(r->ctx, r->ids[t]));
        json_end(&w);
        json_end(&w);
        json_line(&w);
        return;
    }
    fwrite(text, 1, len, stdout);
    fputs("\n  pieces:", stdout);
    for (int t = 0; t < n; t++) printf(" %s", vit_text_piece(r->ctx, r->ids[t]));
    fputs("\n  ids:", stdout);
    for (int t = 0; t < n; t++) printf(" %d", r->ids[t]);
    putchar('\n');
}

/* One text: its ids printed. source names it in messages ("argument 2", "stdin:7"). */
static int tokenize_one(tokenize_run *r, const char *text, size_t len, const char *source) {
    size_t bad = 0;
    for (size_t i = 0; i < len;) bad += utf8_decode((const uint8_t *)text, len, &i) < 0;
    if (bad)
        fprintf(stderr,
                "vit tokenize: %s: invalid UTF-8 (%zu byte%s; WordPiece skips them, byte-level BPE "
                "reads each as U+FFFD)\n",
                source, bad, bad == 1 ? "" : "s");
    vit_error err = {0};
    const int n = vit_text_tokenize(r->ctx, text, len, r->ids, vit_text_max_tokens(r->ctx), &err);
    if (n < 0) {
        fprintf(stderr, "vit tokenize: %s: %s\n", source, err.msg);
        return -1;
    }
    print_text(r, text, len, n);
    return 0;
}

/* Each line of standard input. Returns the texts that failed, or -1 on a read error. */
static int tokenize_lines(tokenize_run *r) {
    char *line = NULL, source[64];
    size_t cap = 0;
    ssize_t n;
    long number = 0;
    int failed = 0;
    errno = 0;
    while ((n = getline(&line, &cap, stdin)) >= 0) {
        number++;
        if (n > 0 && line[n - 1] == '\n') n--;
        if (n > 0 && line[n - 1] == '\r') n--;
        snprintf(source, sizeof source, "stdin:%ld", number);
        failed += tokenize_one(r, line, (size_t)n, source) != 0;
    }
    free(line);
    if (ferror(stdin)) {
        fprintf(stderr, "vit tokenize: stdin: %s\n", strerror(errno ? errno : EIO));
        return -1;
    }
    return failed;
}

int cli_tokenize(int argc, char **argv) {
    cli_parser p;
    cli_common c = {.params = vit_default_params()};
    tokenize_run r = {0};
    const cli_outcome parsed = cli_parse(&p, &command, argc, argv, &c, tokenize_option, &r.json);
    if (parsed != CLI_PARSED) return cli_exit_status(parsed);
    const char *env = getenv("VIT_MODEL");
    const char *dir = c.model ? c.model : env && *env ? env : NULL;
    if (!dir) {
        fprintf(stderr, "vit tokenize: no model: give -m MODEL_DIR (a BERT or CLIP folder) or set "
                        "VIT_MODEL; the default model reads images, not text\n");
        return 2;
    }
    /* tokenizing runs no forward pass: the plain backend, one thread, one text */
    vit_text_params tp = vit_text_default_params();
    tp.threads = 1;
    tp.max_batch = 1;
    tp.backend = VIT_BACKEND_OPENBLAS;
    vit_error err = {0};
    if (!(r.ctx = vit_text_load(dir, &tp, &err))) {
        fprintf(stderr, "vit tokenize: %s\n", err.msg);
        return 1;
    }
    int failed = 0;
    if (!(r.ids = malloc(sizeof *r.ids * (size_t)vit_text_max_tokens(r.ctx)))) {
        fputs("vit tokenize: out of memory\n", stderr);
        failed = 1;
    } else if (p.num_rest == 0) {
        failed = tokenize_lines(&r) != 0;
    } else {
        for (int i = 0; i < p.num_rest; i++) {
            char source[32];
            snprintf(source, sizeof source, "argument %d", i + 1);
            failed += tokenize_one(&r, p.rest[i], strlen(p.rest[i]), source) != 0;
        }
    }
    if (fflush(stdout) != 0) {
        fprintf(stderr, "vit tokenize: writing the output: %s\n", strerror(errno));
        failed = 1;
    }
    free(r.ids);
    vit_text_free(r.ctx);
    return failed ? 1 : 0;
}
