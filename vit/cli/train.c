/* vit train: train a new ViT or fine-tune one on ImageFolder directories; the same for a BERT
 * text classifier on sentence<TAB>label files. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "vit/base/clock.h"
#include "vit/base/dist.h"
#include "vit/cli/cli.h"
#include "vit/train/options.h"
#include "vit/train/run.h"

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig) {
    stop_signal = sig;
}

static void install_signals(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESETHAND; /* a second Ctrl-C ends the process at once */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

typedef struct {
    int tty;
    double every; /* into a log: seconds between progress lines */
    double last_print;
    int line_open;  /* a progress line without its newline is on stderr */
    int best_epoch; /* of the lowest validation loss, saved in MODEL_DIR/best (0: none) */
    double best_loss;
} cli_state;

static void end_line(cli_state *s) {
    if (s->line_open) fprintf(stderr, "\r\033[K");
    s->line_open = 0;
}

static void on_info(void *user, const char *message) {
    cli_state *s = user;
    end_line(s);
    fprintf(stderr, "vit train: %s\n", message);
}

static void on_load(void *user, size_t done, size_t total) {
    cli_state *s = user;
    if (!s->tty) return;
    fprintf(stderr, "\r\033[Kdecoding images: %zu/%zu", done, total);
    s->line_open = 1;
}

static void format_duration(char *buf, size_t size, double seconds) {
    const long t = (long)(seconds + 0.5);
    if (t >= 3600)
        snprintf(buf, size, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
    else
        snprintf(buf, size, "%ld:%02ld", t / 60, t % 60);
}

/* The progress line: redrawn 4 times a second on a terminal; into a log (standard error not a
 * terminal), a line of its own every --progress-every seconds (a minute). */
static void on_progress(void *user, const train_progress *p) {
    cli_state *s = user;
    const double t = clock_seconds();
    if (s->last_print == 0) s->last_print = t; /* a log's first line a minute in */
    if (t - s->last_print < (s->tty ? 0.25 : s->every) && (p->step != p->total_steps || !s->tty))
        return;
    s->last_print = t;
    char eta[32];
    format_duration(eta, sizeof eta, p->eta_s);
    fprintf(stderr, "%sepoch %d/%d  step %lld/%lld  loss %.4f  lr %.2e  %.0f %s/s  ETA %s%s",
            s->tty ? "\r\033[K" : "vit train: ", p->epoch, p->epochs, (long long)p->step,
            (long long)p->total_steps, p->loss, p->lr, p->images_per_s, p->unit, eta,
            s->tty ? "" : "\n");
    s->line_open = s->tty;
}

static void on_epoch(void *user, const train_epoch *e) {
    cli_state *s = user;
    end_line(s);
    char val[128] = "no validation";
    char top1[32] = "";
    if (!e->scores) snprintf(top1, sizeof top1, " top-1 %.4f", e->train_top1);
    if (e->val_top1 >= 0 && e->scores) snprintf(val, sizeof val, "val loss %.4f", e->val_loss);
    if (e->val_top1 >= 0 && !e->scores)
        snprintf(val, sizeof val, "val loss %.4f top-1 %.4f", e->val_loss, e->val_top1);
    if (e->val_cer >= 0) /* image to text: what reading the lines gives */
        snprintf(val + strlen(val), sizeof val - strlen(val), " CER %.2f%% WER %.2f%%",
                 100 * e->val_cer, 100 * e->val_wer);
    if (e->best) s->best_epoch = e->epoch, s->best_loss = e->val_loss;
    printf("epoch %d/%d: train loss %.4f%s, %s, %.1f s (%.0f %s/s)\n", e->epoch, e->epochs,
           e->train_loss, top1, val, e->seconds, e->images_per_s, e->unit);
    fflush(stdout);
}

/* --augment LIST: crop, rrc, flip or none. */
static int parse_augment(const char *text, train_options *o) {
    o->augment = 0;
    o->aug.crop_pad = o->aug.crop_pad > 0 ? o->aug.crop_pad : -1;
    o->aug.flip = o->aug.resized_crop = 0;
    int crop = 0;
    char *copy = strdup(text);
    if (!copy) return -1;
    int rc = 0;
    for (char *tok = strtok(copy, ","); tok && rc == 0; tok = strtok(NULL, ",")) {
        if (strcmp(tok, "crop") == 0)
            crop = 1;
        else if (strcmp(tok, "rrc") == 0)
            o->aug.resized_crop = 1;
        else if (strcmp(tok, "flip") == 0)
            o->aug.flip = 1;
        else if (strcmp(tok, "none") != 0)
            rc = -1;
    }
    free(copy);
    if (rc != 0) {
        fprintf(stderr, "vit train: invalid value for --augment: '%s' (crop, rrc, flip or none)\n",
                text);
        return -1;
    }
    if (!crop) o->aug.crop_pad = 0;
    o->augment = crop || o->aug.resized_crop || o->aug.flip;
    return 0;
}

/* The command line: every row of the library's option table that has a name, then the few that
 * act on several fields or on the run itself. Option ids: these, then OPT_TABLE + table index. */
enum { OPT_AUGMENT = 1, OPT_NO_AUGMENT, OPT_RESUME, OPT_PROGRESS, OPT_TABLE = 256 };

static const char *group_names[] = {
    ("data (images: DIR/<class>/*.png|jpg|webp|tif|gif|bmp; text: a "
     "sentence<TAB>label file with a header line; image to text: DIR/labels.tsv, file<TAB>text "
     "per line)"),
    "model (new)", "model (fine-tune)", "training"};

static cli_option options[CLI_MAX_OPTIONS];
static char defaults[CLI_MAX_OPTIONS][32];
static cli_command command = {
    "train",
    "train a ViT or a BERT classifier, or fine-tune one or an image-to-text model (AdamW, "
    "checkpoints)",
    "--train DIR|FILE.tsv --out MODEL_DIR [options]\n"
    "       vit train --out MODEL_DIR --resume [-t N]",
    "Trains on images (DIR/<class>/...) or on text (a sentence<TAB>label file; a new model needs\n"
    "--vocab, or --init a BERT, RoBERTa, XLM-R, DistilBERT or MPNet folder, a classifier or its\n"
    "base model). Text also trains on pairs (--pair), on tagged words for token classification\n"
    "(--tags), on scores (--regression: MSE, vit eval then reports Pearson, Spearman and MSE),\n"
    "and a sentence-transformers folder on anchor/positive rows (--loss mnrl), saved in its\n"
    "layout for vit embed. Writes MODEL_DIR/config.json, model.safetensors and\n"
    "preprocessor_config.json (text: the tokenizer's files) after every epoch, and\n"
    "appends one JSON line per epoch to MODEL_DIR/train_log.jsonl; MODEL_DIR/best/ holds the\n"
    "model of the epoch of lowest validation loss. A MODEL_DIR that holds a model already is\n"
    "refused unless --overwrite. A new ViT takes its channels and size from the images unless\n"
    "--channels and --image-size say (one line says what it chose). A folder with a labels.tsv\n"
    "(file<TAB>text lines) fine-tunes a VisionEncoderDecoder folder (--init) to write those\n"
    "texts: teacher forcing, the token cross-entropy, top-1 its token accuracy; the folder it\n"
    "writes is the model's own layout, for vit generate. Ctrl-C saves a checkpoint;\n"
    "--resume continues exactly where the run stopped. Over N processes: mpirun -np N vit train\n"
    "... (as root, mpirun also wants --allow-run-as-root).",
    options,
    0};

static void add_option(cli_option o) {
    if (command.count < CLI_MAX_OPTIONS) options[command.count++] = o;
}

static const char *default_text(const train_option *t, char *buf, size_t size) {
    if (t->def_text) return t->def_text;
    if (t->type == OPTION_STRING || t->type == OPTION_FLAG) return NULL;
    snprintf(buf, size, "%g", t->def);
    return buf;
}

const cli_command *cli_train_command(void) {
    if (command.count) return &command;
    for (int g = GROUP_DATA; g <= GROUP_TRAINING; g++) {
        add_option((cli_option){.help = group_names[g]});
        for (int i = 0; i < train_option_count; i++) {
            const train_option *t = &train_option_table[i];
            if (!t->name || (int)t->group != g) continue;
            add_option((cli_option){OPT_TABLE + i, t->name,
                                    strcmp(t->name, "threads") == 0 ? 't' : 0, t->arg, t->help,
                                    default_text(t, defaults[i], sizeof defaults[i])});
        }
        if (g == GROUP_TRAINING) {
            add_option((cli_option){OPT_AUGMENT, "augment", 0, "LIST",
                                    "images: comma-separated crop (random crop, zero padding), rrc "
                                    "(random resized crop), flip; or none",
                                    "crop,flip"});
            add_option((cli_option){OPT_NO_AUGMENT, "no-augment", 0, NULL, "same as --augment none",
                                    NULL});
            add_option((cli_option){OPT_RESUME, "resume", 0, NULL,
                                    "continue the interrupted run in --out exactly", NULL});
            add_option((cli_option){OPT_PROGRESS, "progress-every", 0, "SECONDS",
                                    "into a log (standard error not a terminal): a progress line "
                                    "every SECONDS (0: every step)",
                                    "60"});
        }
    }
    return &command;
}

typedef struct {
    train_options *o;
    int resume, shape_given;
    double progress_every;
} train_command_line;

static int parse_train_option(const cli_parser *p, int id, void *user) {
    train_command_line *l = user;
    if (id == OPT_AUGMENT) return parse_augment(p->value, l->o);
    if (id == OPT_NO_AUGMENT) return l->o->augment = 0, 0;
    if (id == OPT_RESUME) return l->resume = 1, 0;
    if (id == OPT_PROGRESS) return cli_number(p, 0, 1e6, &l->progress_every);
    const train_option *t = &train_option_table[id - OPT_TABLE];
    vit_error err;
    if (train_option_set(l->o, t, p->value, &err) != 0) {
        fprintf(stderr, "vit train: %s\n", err.msg);
        return -1;
    }
    l->shape_given |= (t->flags & OPTION_SHAPE) != 0;
    return 0;
}

/* Options into o (and whether to resume); then the checks of their combination. */
static cli_outcome parse_options(int argc, char **argv, train_options *o, int *resume,
                                 double *progress_every) {
    const cli_command *cmd = cli_train_command();
    train_command_line l = {.o = o, .progress_every = 60};
    cli_parser p;
    const cli_outcome parsed = cli_parse(&p, cmd, argc, argv, NULL, parse_train_option, &l);
    *resume = l.resume;
    *progress_every = l.progress_every;
    if (parsed != CLI_PARSED) return parsed;
    if (p.num_rest) return cli_usage_error(cmd, "unexpected argument '%s'", p.rest[0]);
    if (!o->out_dir || (!l.resume && !o->train_path))
        return cli_usage_error(cmd, "--out and --train are required");
    if (o->init_dir && l.shape_given)
        return cli_usage_error(cmd, "--init takes the model's shape; drop the shape options");
    if (o->channels == 2) return cli_usage_error(cmd, "--channels must be 1 (grey) or 3 (RGB)");
    if (o->val_path && o->val_split > 0) o->val_split = 0;
    return CLI_PARSED;
}

int cli_train(int argc, char **argv) {
    train_options o = train_default_options();
    int resume = 0;
    double every = 60;
    const cli_outcome parsed = parse_options(argc, argv, &o, &resume, &every);
    if (parsed != CLI_PARSED) return cli_exit_status(parsed);
    char init[4096]; /* --init: a folder, or org/name from the Hub (vit_resolve_model) */
    vit_error init_err = {0};
    if (o.init_dir && vit_resolve_model(o.init_dir, init, sizeof init, &init_err) != 0) {
        fprintf(stderr, "vit train: --init: %s\n", init_err.msg);
        return 1;
    }
    if (o.init_dir) o.init_dir = init;

    cli_state s = {.tty = isatty(2), .every = every};
    install_signals();
    const train_hooks hooks = {.user = &s,
                               .info = on_info,
                               .load_progress = on_load,
                               .progress = on_progress,
                               .epoch_done = on_epoch,
                               .stop = &stop_signal};
    vit_error err = {0};
    const double t0 = clock_seconds();
    const int rc = train_run(&o, resume, &hooks, &err);
    end_line(&s);
    if (rc < 0) {
        fprintf(stderr, "vit train: %s\n", err.msg);
        return 1;
    }
    char took[32];
    format_duration(took, sizeof took, clock_seconds() - t0);
    const int speaks = dist_get().rank == 0; /* under mpirun, process 0 says how it ended */
    if (rc == 1 && speaks) {
        fprintf(stderr,
                "vit train: stopped by %s after %s; checkpoint saved in %s (continue with: vit "
                "train --out %s --resume)\n",
                stop_signal == SIGTERM ? "SIGTERM" : "SIGINT", took, o.out_dir, o.out_dir);
    }
    if (rc == 1) return 128 + (stop_signal ? stop_signal : SIGINT);
    if (speaks && s.best_epoch)
        fprintf(stderr,
                "vit train: done in %s; model in %s (the last epoch's), the best in %s/best "
                "(epoch %d, validation loss %.4f)\n",
                took, o.out_dir, o.out_dir, s.best_epoch, s.best_loss);
    else if (speaks)
        fprintf(stderr, "vit train: done in %s; model in %s\n", took, o.out_dir);
    return 0;
}
