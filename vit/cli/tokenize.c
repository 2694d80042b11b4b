/* vit tokenize: the token ids (and vocabulary pieces) a model's tokenizer gives each text, and
 * with --decode the text of token ids. Tokenizing runs no model, so it works with any folder
 * holding tokenizer files (a text model, a VisionEncoderDecoder model, a bare tokenizer). */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/text_tokenizer.h"
#include "text/utf8.h"
#include "vit/cli/cli.h"
#include "vit/model/config.h"

enum {
    OPT_JSON = 1,
    OPT_DECODE,
    OPT_KEEP_SPECIAL,
};

static const cli_option options[] = {
    CLI_MODEL_OPTION("a folder with tokenizer files: tokenizer.json (read first when there), "
                     "BERT (vocab.txt), CLIP, GPT-2, RoBERTa (vocab.json, merges.txt), SigLIP "
                     "(spiece.model), XLM-R (sentencepiece.bpe.model)",
                     "$VIT_MODEL"),
    {OPT_JSON, "json", 0, NULL, "one JSON object per text: text, ids, pieces", NULL},
    {OPT_DECODE, "decode", 0, NULL,
     "the operands (or each line of standard input) are token ids: print their text", NULL},
    {OPT_KEEP_SPECIAL, "keep-special", 0, NULL,
     "with --decode, keep the special tokens (start, end, padding) in the text", NULL},
};

static const cli_command command = {
    "tokenize",
    "print the token ids and pieces a model's tokenizer gives a text, or with --decode the text "
    "of token ids",
    "[options] [--] TEXT... | --decode [ID...]",
    "Prints, for each TEXT (with none, each line of standard input), the ids the model's\n"
    "tokenizer gives it, with the special tokens its class puts around a text ([CLS] ... [SEP],\n"
    "<|startoftext|> ... <|endoftext|>, <s> ... </s>; GPT-2 none; a tokenizer.json's template),\n"
    "cut to the model's maximum length as every command cuts them, and the vocabulary piece of\n"
    "each id. A folder's tokenizer.json is read first (its normalizer, pre-tokenizer, WordPiece,\n"
    "BPE or Unigram model, post-processor and decoder, as the tokenizers library runs them),\n"
    "else the older files. Invalid UTF-8 bytes are warned about: WordPiece's vocab.txt skips\n"
    "them, the others read each as U+FFFD (Python's errors=\"replace\"). With --decode, the\n"
    "operands together are one list of ids (each line of standard input one list; spaces,\n"
    "commas and brackets separate them, so --json's \"ids\" arrays can be fed back), printed as\n"
    "the text tokenizer.decode(ids, skip_special_tokens=True) gives, or with --keep-special the\n"
    "special tokens kept. Put TEXTs that begin with '-' after '--'.",
    options,
    sizeof options / sizeof options[0]};

const cli_command *cli_tokenize_command(void) {
    return &command;
}

typedef struct {
    int json, decode, keep_special;
} tokenize_flags;

typedef struct {
    text_tokenizer *tok;
    text_tokenizer_scratch *scratch;
    tokenize_flags flags;
    int max_len;  /* the cut, 0: none */
    int32_t *ids; /* [cap] */
    size_t cap;
} tokenize_run;

static int tokenize_option(const cli_parser *p, int id, void *user) {
    (void)p;
    tokenize_flags *f = user;
    if (id == OPT_JSON) f->json = 1;
    if (id == OPT_DECODE) f->decode = 1;
    if (id == OPT_KEEP_SPECIAL) f->keep_special = 1;
    return 0;
}

static int grow_ids(tokenize_run *r, size_t cap) {
    if (cap <= r->cap) return 0;
    int32_t *ids = realloc(r->ids, cap * sizeof *ids);
    if (!ids) return -1;
    r->ids = ids, r->cap = cap;
    return 0;
}

/* ---- encoding ---- */

static void print_text(const tokenize_run *r, const char *text, size_t len, int n) {
    if (r->flags.json) {
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
        for (int t = 0; t < n; t++) json_string(&w, text_tokenizer_piece(r->tok, r->ids[t]));
        json_end(&w);
        json_end(&w);
        json_line(&w);
        return;
    }
    fwrite(text, 1, len, stdout);
    fputs("\n  pieces:", stdout);
    for (int t = 0; t < n; t++) printf(" %s", text_tokenizer_piece(r->tok, r->ids[t]));
    fputs("\n  ids:", stdout);
    for (int t = 0; t < n; t++) printf(" %d", r->ids[t]);
    putchar('\n');
}

/* text's ids into r->ids; without a cut, the room grows until the ids fit. Returns their count
 * or -1 with err. */
static int encode_text(tokenize_run *r, const char *text, size_t len, vit_error *err) {
    size_t cap = r->max_len > 0 ? (size_t)r->max_len : 2 * len + 16;
    for (;;) {
        if (cap > INT_MAX || grow_ids(r, cap) != 0)
            return vit_fail(err, "out of memory for a text of %zu bytes", len);
        const int n = text_tokenizer_encode(r->tok, r->scratch, text, len, (int)cap, r->ids, err);
        if (n < 0 || r->max_len > 0 || (size_t)n < cap) return n;
        cap *= 2; /* it filled the room: there may be more */
    }
}

/* One text: its ids printed. source names it in messages ("argument 2", "stdin:7"). */
static int tokenize_one(tokenize_run *r, const char *text, size_t len, const char *source) {
    size_t bad = 0;
    for (size_t i = 0; i < len;) bad += utf8_decode((const uint8_t *)text, len, &i) < 0;
    if (bad)
        fprintf(stderr,
                "vit tokenize: %s: invalid UTF-8 (%zu byte%s; WordPiece skips them, the other "
                "tokenizers read each as U+FFFD)\n",
                source, bad, bad == 1 ? "" : "s");
    vit_error err = {0};
    const int n = encode_text(r, text, len, &err);
    if (n < 0) {
        fprintf(stderr, "vit tokenize: %s: %s\n", source, err.msg);
        return -1;
    }
    print_text(r, text, len, n);
    return 0;
}

/* ---- decoding ---- */

/* The ids written in s[0..len) (separated by white space, commas, brackets) appended to r->ids
 * from *n on. Returns 0, or -1 after saying what is not an id. */
static int parse_ids(tokenize_run *r, const char *s, size_t len, int *n, const char *source) {
    for (size_t i = 0; i < len;) {
        if (strchr(" \t\r\n,[]", s[i])) {
            i++;
            continue;
        }
        size_t j = i;
        while (j < len && !strchr(" \t\r\n,[]", s[j])) j++;
        char word[32] = "", *end;
        if (j - i < sizeof word) memcpy(word, s + i, j - i);
        errno = 0;
        const long id = strtol(word, &end, 10);
        if (!word[0] || *end || errno || id < INT32_MIN || id > INT32_MAX) {
            fprintf(stderr, "vit tokenize: %s: '%.*s' is not a token id\n", source,
                    (int)(j - i > 40 ? 40 : j - i), s + i);
            return -1;
        }
        if (grow_ids(r, (size_t)*n + 1) != 0) {
            fprintf(stderr, "vit tokenize: %s: out of memory\n", source);
            return -1;
        }
        r->ids[(*n)++] = (int32_t)id;
        i = j;
    }
    return 0;
}

static void print_decoded(const tokenize_run *r, int n, const char *text, size_t len) {
    if (!r->flags.json) {
        fwrite(text, 1, len, stdout);
        putchar('\n');
        return;
    }
    json_writer w = json_begin(stdout);
    json_object(&w);
    json_key(&w, "ids");
    json_array(&w);
    for (int t = 0; t < n; t++) json_int(&w, r->ids[t]);
    json_end(&w);
    json_key(&w, "text");
    json_value_string(&w, text, len);
    json_end(&w);
    json_line(&w);
}

/* r->ids[0..n) decoded and printed. */
static int decode_one(const tokenize_run *r, int n, const char *source) {
    vit_error err = {0};
    const bool skip = !r->flags.keep_special;
    const int len = text_tokenizer_decode(r->tok, r->ids, n, skip, NULL, 0, &err);
    char *text = len >= 0 ? malloc((size_t)len + 1) : NULL;
    if (len >= 0 && !text) snprintf(err.msg, sizeof err.msg, "out of memory");
    if (!text || text_tokenizer_decode(r->tok, r->ids, n, skip, text, (size_t)len + 1, &err) < 0) {
        fprintf(stderr, "vit tokenize: %s: %s\n", source, err.msg);
        free(text);
        return -1;
    }
    print_decoded(r, n, text, (size_t)len);
    free(text);
    return 0;
}

/* ---- the texts or id lists ---- */

/* One line of standard input, as a text or a list of ids. */
static int process_line(tokenize_run *r, const char *line, size_t len, const char *source) {
    if (!r->flags.decode) return tokenize_one(r, line, len, source);
    int n = 0;
    if (parse_ids(r, line, len, &n, source) != 0) return -1;
    return decode_one(r, n, source);
}

/* Each line of standard input. Returns the lines that failed, or -1 on a read error. */
static int process_lines(tokenize_run *r) {
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
        failed += process_line(r, line, (size_t)n, source) != 0;
    }
    free(line);
    if (ferror(stdin)) {
        fprintf(stderr, "vit tokenize: stdin: %s\n", strerror(errno ? errno : EIO));
        return -1;
    }
    return failed;
}

/* The operands: each a text, or with --decode together one list of ids. */
static int process_operands(tokenize_run *r, const cli_parser *p) {
    char source[32];
    if (r->flags.decode) {
        int n = 0;
        for (int i = 0; i < p->num_rest; i++) {
            snprintf(source, sizeof source, "argument %d", i + 1);
            if (parse_ids(r, p->rest[i], strlen(p->rest[i]), &n, source) != 0) return 1;
        }
        return decode_one(r, n, "arguments") != 0;
    }
    int failed = 0;
    for (int i = 0; i < p->num_rest; i++) {
        snprintf(source, sizeof source, "argument %d", i + 1);
        failed += tokenize_one(r, p->rest[i], strlen(p->rest[i]), source) != 0;
    }
    return failed;
}

/* ---- the command ---- */

/* The cut every command makes: the tokenizer's model_max_length, within the text tower's
 * positions when the folder's config.json describes a text model (or a VisionEncoderDecoder's
 * decoder). */
static int cut_length(const text_tokenizer *tok, const char *dir) {
    int max_len = text_tokenizer_max_len(tok);
    model_config cfg;
    vit_error err = {0};
    if (model_config_load_tower(dir, TOWER_TEXT, &cfg, &err) != 0) return max_len;
    const bool text = cfg.kind == MODEL_TEXT || cfg.kind == MODEL_DECODER;
    const int positions = text ? cfg.max_position_embeddings : 0;
    model_config_free(&cfg);
    if (positions > 0 && (max_len < 2 || max_len > positions)) max_len = positions;
    return max_len;
}

int cli_tokenize(int argc, char **argv) {
    cli_parser p;
    cli_common c = {.params = vit_default_params()};
    tokenize_run r = {0};
    const cli_outcome parsed = cli_parse(&p, &command, argc, argv, &c, tokenize_option, &r.flags);
    if (parsed != CLI_PARSED) return cli_exit_status(parsed);
    if (r.flags.keep_special && !r.flags.decode)
        return cli_exit_status(cli_usage_error(&command, "--keep-special goes with --decode"));
    const char *env = getenv("VIT_MODEL");
    const char *ref = c.model ? c.model : env && *env ? env : NULL;
    if (!ref) {
        fprintf(stderr, "vit tokenize: no model: give -m MODEL_DIR (a folder with tokenizer files) "
                        "or set VIT_MODEL; the default model reads images, not text\n");
        return 2;
    }
    vit_error err = {0};
    char dir[4096];
    if (vit_resolve_model(ref, dir, sizeof dir, &err) != 0 ||
        text_tokenizer_load(dir, &r.tok, &err) != 0) {
        fprintf(stderr, "vit tokenize: %s\n", err.msg);
        return 1;
    }
    r.max_len = cut_length(r.tok, dir);
    int failed = 0;
    if (!(r.scratch = text_tokenizer_scratch_create(r.tok))) {
        fputs("vit tokenize: out of memory\n", stderr);
        failed = 1;
    } else {
        failed = p.num_rest == 0 ? process_lines(&r) != 0 : process_operands(&r, &p) != 0;
    }
    if (fflush(stdout) != 0) {
        fprintf(stderr, "vit tokenize: writing the output: %s\n", strerror(errno));
        failed = 1;
    }
    free(r.ids);
    text_tokenizer_scratch_free(r.scratch);
    text_tokenizer_free(r.tok);
    return failed ? 1 : 0;
}
