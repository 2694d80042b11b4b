/* vit generate: text from images with a VisionEncoderDecoderModel (TrOCR, ViT-GPT2). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vit/cli/cli.h"
#include "vit/vit.h"

/* The settings are named as transformers' generate names them (and the server, and Python);
 * the *_OLD ids are the names before, still accepted. */
enum {
    OPT_BEAMS = 1,
    OPT_MAX_TOKENS,
    OPT_MAX_LENGTH,
    OPT_MIN_LENGTH,
    OPT_LENGTH_PENALTY,
    OPT_NO_REPEAT,
    OPT_EARLY,
    OPT_JSON,
    OPT_BEAMS_OLD,
    OPT_MAX_TOKENS_OLD,
    OPT_NO_REPEAT_OLD,
};

static const cli_option options[] = {
    CLI_MODEL_OPTION("a VisionEncoderDecoderModel folder (TrOCR, ViT-GPT2)", "$VIT_MODEL"),
    {OPT_BEAMS, "num-beams", 0, "N", "beam search with N beams (1: greedy search)",
     "generation_config.json's num_beams"},
    {OPT_MAX_TOKENS, "max-new-tokens", 0, "N", "at most N tokens after the start token",
     "generation_config.json's max_new_tokens or max_length"},
    {OPT_MAX_LENGTH, "max-length", 0, "N",
     "instead: at most N tokens in all, the start token included", NULL},
    {OPT_MIN_LENGTH, "min-length", 0, "N", "no end token before the sequence is N long",
     "generation_config.json's min_length"},
    {OPT_LENGTH_PENALTY, "length-penalty", 0, "X",
     "beam scores are sum(log p) / length^X: above 0 favours longer texts",
     "generation_config.json's length_penalty"},
    {OPT_NO_REPEAT, "no-repeat-ngram-size", 0, "N", "no N-gram twice in a text (0: off)",
     "generation_config.json's no_repeat_ngram_size"},
    {OPT_EARLY, "early-stopping", 0, "true|false|never",
     "when beam search stops (transformers' early_stopping)",
     "generation_config.json's early_stopping"},
    {OPT_JSON, "json", 0, NULL, "one JSON object per image: file, text, ids, score", NULL},
    {OPT_BEAMS_OLD, "beams", 0, "N", "the old name of --num-beams", NULL},
    {OPT_MAX_TOKENS_OLD, "max-tokens", 0, "N", "the old name of --max-new-tokens", NULL},
    {OPT_NO_REPEAT_OLD, "no-repeat-ngram", 0, "N", "the old name of --no-repeat-ngram-size", NULL},
    CLI_BATCH_OPTION("images per forward pass", "1"),
    CLI_EXIF_UPRIGHT,
    CLI_PIXELS_OPTION,
    CLI_THREADS_OPTION,
    CLI_BACKEND_OPTION,
    CLI_PRECISION_OPTION,
};

static const cli_command command = {
    "generate",
    "text from images: TrOCR reads a line, ViT-GPT2 writes a caption",
    "[options] IMAGE...",
    "Runs each IMAGE through the model's encoder once, then its decoder token by token, greedily\n"
    "or by beam search exactly as transformers' generate, with the settings of the folder's\n"
    "generation_config.json unless an option changes them. Prints the text of each image (after\n"
    "'FILE: ' when there are several); --json prints the ids from the decoder's start token on\n"
    "and the sequence score too (beam search: transformers' sequences_scores; greedy: the sum of\n"
    "the chosen tokens' log-probabilities). On a terminal, control characters in a text (a\n"
    "model may write any byte) are shown escaped, \\xHH (C0 and DEL), \\u00HH (C1), with \\\\ for\n"
    "a backslash, so that they cannot move the cursor or change the terminal; into a pipe or a\n"
    "file the text is written as generated, byte for byte.",
    options,
    sizeof options / sizeof options[0]};

const cli_command *cli_generate_command(void) {
    return &command;
}

typedef struct {
    vit_gen_options opt;
    int set_beams, set_max, set_max_length, set_min, set_penalty, set_repeat,
        set_early; /* given on the line */
    double penalty;
    int json;
} generate_args;

static int early_value(const cli_parser *p, int *out) {
    static const char *const names[] = {"false", "true", "never"};
    for (int i = 0; i < 3; i++)
        if (strcmp(p->value, names[i]) == 0) return *out = i, 0;
    return cli_usage_error(p->cmd, "--early-stopping: '%s' is not true, false or never", p->value),
           -1;
}

static int generate_option(const cli_parser *p, int id, void *user) {
    generate_args *a = user;
    switch (id) {
    case OPT_BEAMS:
    case OPT_BEAMS_OLD:
        return a->set_beams = 1, cli_int(p, 1, 64, &a->opt.num_beams);
    case OPT_MAX_TOKENS:
    case OPT_MAX_TOKENS_OLD:
        return a->set_max = 1, cli_int(p, 1, 4096, &a->opt.max_new_tokens);
    case OPT_MAX_LENGTH:
        return a->set_max_length = 1, cli_int(p, 1, 4096, &a->opt.max_length);
    case OPT_MIN_LENGTH:
        return a->set_min = 1, cli_int(p, 0, 4096, &a->opt.min_length);
    case OPT_LENGTH_PENALTY:
        return a->set_penalty = 1, cli_number(p, -100, 100, &a->penalty);
    case OPT_NO_REPEAT:
    case OPT_NO_REPEAT_OLD:
        return a->set_repeat = 1, cli_int(p, 0, 64, &a->opt.no_repeat_ngram_size);
    case OPT_EARLY:
        return a->set_early = 1, early_value(p, &a->opt.early_stopping);
    case OPT_JSON:
        a->json = 1;
        return 0;
    }
    return 0;
}

/* The model's settings with the options given on the command line over them. */
static vit_gen_options effective_options(const vit_gen_context *g, const generate_args *a) {
    vit_gen_options o = vit_gen_default_options(g);
    if (a->set_beams) o.num_beams = a->opt.num_beams;
    if (a->set_max) o.max_new_tokens = a->opt.max_new_tokens;
    if (a->set_max_length) o.max_length = a->opt.max_length, o.max_new_tokens = 0;
    if (a->set_min) o.min_length = a->opt.min_length;
    if (a->set_penalty) o.length_penalty = (float)a->penalty;
    if (a->set_repeat) o.no_repeat_ngram_size = a->opt.no_repeat_ngram_size;
    if (a->set_early) o.early_stopping = a->opt.early_stopping;
    return o;
}

/* text for a terminal: C0 controls and DEL as \xHH, C1 controls (UTF-8 C2 80..C2 9F) as \u00HH,
 * a backslash doubled; everything else, other UTF-8 included, as it is. */
static void put_escaped(const char *text, FILE *out) {
    for (const unsigned char *s = (const unsigned char *)text; *s; s++) {
        if (*s < 0x20 || *s == 0x7f)
            fprintf(out, "\\x%02x", *s);
        else if (*s == 0xc2 && s[1] >= 0x80 && s[1] <= 0x9f)
            fprintf(out, "\\u00%02x", *++s);
        else if (*s == '\\')
            fputs("\\\\", out);
        else
            fputc(*s, out);
    }
}

static void print_generation(const char *file, const vit_generation *g, int json, int named,
                             int tty) {
    if (!json) {
        if (named) printf("%s: ", file);
        if (tty)
            put_escaped(g->text, stdout);
        else
            fputs(g->text, stdout);
        putchar('\n');
        return;
    }
    json_writer w = json_begin(stdout);
    json_object(&w);
    json_key(&w, "file");
    json_string(&w, file);
    json_key(&w, "text");
    json_string(&w, g->text);
    json_key(&w, "ids");
    json_array(&w);
    for (int i = 0; i < g->num_ids; i++) json_int(&w, g->ids[i]);
    json_end(&w);
    json_key(&w, "score");
    json_float(&w, g->score);
    json_end(&w);
    json_line(&w);
}

/* Images files[0..n) in batches: returns the images that failed. */
static int generate_files(vit_gen_context *g, char **files, int n, int batch,
                          const vit_gen_options *o, int json) {
    const int tty = isatty(STDOUT_FILENO); /* a terminal: control bytes escaped */
    vit_context *img = vit_gen_image_context(g);
    const size_t per = vit_input_floats(img);
    float *pixels = malloc(sizeof(float) * per * (size_t)batch);
    vit_generation *out = calloc((size_t)batch, sizeof *out);
    const char **names = calloc((size_t)batch, sizeof *names);
    if (!pixels || !out || !names) {
        fputs("vit generate: out of memory\n", stderr);
        free(pixels), free(out), free(names);
        return n;
    }
    int failed = 0;
    for (int i = 0; i < n;) {
        int b = 0;
        vit_error err = {0};
        for (; i < n && b < batch; i++) {
            if (vit_preprocess_file(img, files[i], pixels + per * (size_t)b, &err) != 0) {
                fprintf(stderr, "vit generate: %s\n", err.msg);
                failed++;
                continue;
            }
            names[b++] = files[i];
        }
        if (b == 0) continue;
        if (vit_generate(g, pixels, b, o, out, &err) != 0) {
            fprintf(stderr, "vit generate: %s\n", err.msg);
            failed += b;
            continue;
        }
        for (int k = 0; k < b; k++) print_generation(names[k], &out[k], json, n > 1, tty);
        vit_generation_free(out, b);
    }
    free(pixels), free(out), free(names);
    return failed;
}

int cli_generate(int argc, char **argv) {
    cli_parser p;
    cli_common c = {.params = vit_default_params()};
    generate_args a = {0};
    const cli_outcome parsed = cli_parse(&p, &command, argc, argv, &c, generate_option, &a);
    if (parsed != CLI_PARSED) return cli_exit_status(parsed);
    if (p.num_rest == 0) return cli_exit_status(cli_usage_error(&command, "no IMAGE given"));
    if (a.set_max && a.set_max_length)
        return cli_exit_status(
            cli_usage_error(&command, "--max-new-tokens and --max-length together: one limit"));
    const char *env = getenv("VIT_MODEL");
    const char *dir = c.model ? c.model : env && *env ? env : NULL;
    if (!dir) {
        fprintf(stderr, "vit generate: no model: give -m MODEL_DIR (a VisionEncoderDecoderModel "
                        "folder) or set VIT_MODEL\n");
        return 2;
    }
    vit_gen_params gp = vit_gen_default_params();
    gp.image = c.params;
    if (a.set_beams && a.opt.num_beams > gp.max_beams) gp.max_beams = a.opt.num_beams;
    vit_error err = {0};
    vit_gen_context *g = vit_gen_load(dir, &gp, &err);
    if (!g) {
        fprintf(stderr, "vit generate: %s\n", err.msg);
        return 1;
    }
    const vit_gen_options o = effective_options(g, &a);
    int failed = generate_files(g, p.rest, p.num_rest, c.params.max_batch, &o, a.json);
    if (fflush(stdout) != 0) {
        fprintf(stderr, "vit generate: writing the output: %s\n", strerror(errno));
        failed++;
    }
    vit_gen_free(g);
    return failed ? 1 : 0;
}
