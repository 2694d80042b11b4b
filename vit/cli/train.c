/* vit train: train a new ViT or fine-tune one on ImageFolder directories; the same for a BERT
 * text classifier on sentence<TAB>label files. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "vit/base/clock.h"
#include "vit/cli/cli.h"
#include "vit/train/run.h"

static const char usage_text[] =
    "usage: vit train --train DIR [--val DIR | --val-split F] --out MODEL_DIR [options]\n"
    "       vit train --train FILE.tsv [--val FILE.tsv] (--vocab vocab.txt | --init BERT_DIR)\n"
    "                 --out MODEL_DIR [options]\n"
    "       vit train --out MODEL_DIR --resume [-t THREADS]\n"
    "\n"
    "data: images DIR/<class>/*.png|jpg (classes from the folder names unless --labels), or\n"
    "text: a sentence<TAB>label file with a header line (label an index or a name; classes from\n"
    "--labels, the --init model, or the file's labels) for a BERT classifier:\n"
    "  --train DIR|FILE      training data\n"
    "  --val DIR|FILE        validation data (same classes)\n"
    "  --val-split F         else hold out this fraction of each training class (default 0.1)\n"
    "  --labels FILE         label names, one per line in index order, matched to the folders\n"
    "                        (or to the TSV labels)\n"
    "model (new):\n"
    "  --image-size N (28)  --patch N (4)  --hidden N (64)  --layers N (6)  --heads N (4)\n"
    "  --mlp N (128)  --channels 1|3 (1)     (text: --hidden --layers --heads --mlp only)\n"
    "  --vocab FILE          text: the WordPiece vocabulary (vocab.txt; lower-casing tokenizer)\n"
    "  --max-len N           text: tokens per sentence at most (new model: 128, also its\n"
    "                        position table; fine-tuning: the model's limit)\n"
    "model (fine-tune):\n"
    "  --init MODEL_DIR      start from this model (its shape and preprocessing or tokenizer); a\n"
    "                        new classifier when its labels are not the data's classes\n"
    "  --freeze-encoder      linear probe: train the head only (ViT: final LayerNorm and\n"
    "                        classifier; BERT: pooler and classifier)\n"
    "training:\n"
    "  --epochs N (10)  --batch N (128)  --lr F (1e-3)  --min-lr F (1e-5)\n"
    "  --weight-decay F (0.05)  --warmup EPOCHS (1)  --label-smoothing F (0.1)\n"
    "  --adam-beta2 F (0.999)\n"
    "  --dropout F (0)  --attention-dropout F (0)  --clip NORM (1; 0 = off)\n"
    "  --augment LIST        images: comma-separated crop (random crop, zero padding), rrc\n"
    "                        (random resized crop), flip; or none (default crop,flip)\n"
    "  --no-augment          same as --augment none\n"
    "  --crop-pad N          padding of the random crop (default image size / 14)\n"
    "  --rrc-scale F         smallest area fraction of the random resized crop (0.35)\n"
    "  --token-dropout F     text: each word piece becomes [UNK] with this chance (0)\n"
    "  --seed N (1)  -t, --threads N (0 = one per core)\n"
    "  --resume              continue the interrupted run in MODEL_DIR exactly\n"
    "\n"
    "Writes MODEL_DIR/config.json, model.safetensors and preprocessor_config.json (text:\n"
    "vocab.txt, tokenizer_config.json) after every epoch, and appends one JSON line per epoch to\n"
    "MODEL_DIR/train_log.jsonl. Text batches group sentences of similar length (padding costs\n"
    "little) unless --no-length-groups. Ctrl-C saves a checkpoint (continue with --resume).\n";

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
    double last_print;
    int line_open; /* a progress line without its newline is on stderr */
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

static void on_progress(void *user, const train_progress *p) {
    cli_state *s = user;
    const double t = clock_seconds();
    if (!s->tty || (t - s->last_print < 0.25 && p->step != p->total_steps)) return;
    s->last_print = t;
    char eta[32];
    format_duration(eta, sizeof eta, p->eta_s);
    fprintf(stderr, "\r\033[Kepoch %d/%d  step %lld/%lld  loss %.4f  lr %.2e  %.0f %s/s  ETA %s",
            p->epoch, p->epochs, (long long)p->step, (long long)p->total_steps, p->loss, p->lr,
            p->images_per_s, p->unit, eta);
    s->line_open = 1;
}

static void on_epoch(void *user, const train_epoch *e) {
    cli_state *s = user;
    end_line(s);
    char val[64] = "no validation";
    if (e->val_top1 >= 0)
        snprintf(val, sizeof val, "val loss %.4f top-1 %.4f", e->val_loss, e->val_top1);
    printf("epoch %d/%d: train loss %.4f top-1 %.4f, %s, %.1f s (%.0f %s/s)\n", e->epoch, e->epochs,
           e->train_loss, e->train_top1, val, e->seconds, e->images_per_s, e->unit);
    fflush(stdout);
}

static int parse_float(const char *text, double lo, double hi, const char *option, float *out) {
    char *end;
    errno = 0;
    const double v = strtod(text, &end);
    if (errno || end == text || *end || !(v >= lo && v <= hi)) {
        fprintf(stderr, "vit: invalid value for %s: '%s' (expected a number in [%g, %g])\n", option,
                text, lo, hi);
        return -1;
    }
    *out = (float)v;
    return 0;
}

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
        fprintf(stderr, "vit: invalid value for --augment: '%s' (crop, rrc, flip or none)\n", text);
        return -1;
    }
    if (!crop) o->aug.crop_pad = 0;
    o->augment = crop || o->aug.resized_crop || o->aug.flip;
    return 0;
}

enum {
    OPT_TRAIN = 1000,
    OPT_VAL,
    OPT_VAL_SPLIT,
    OPT_OUT,
    OPT_LABELS,
    OPT_INIT,
    OPT_FREEZE,
    OPT_IMAGE_SIZE,
    OPT_PATCH,
    OPT_HIDDEN,
    OPT_LAYERS,
    OPT_HEADS,
    OPT_MLP,
    OPT_CHANNELS,
    OPT_EPOCHS,
    OPT_BATCH,
    OPT_LR,
    OPT_MIN_LR,
    OPT_WD,
    OPT_WARMUP,
    OPT_SMOOTHING,
    OPT_DROPOUT,
    OPT_ATTN_DROPOUT,
    OPT_CLIP,
    OPT_AUGMENT,
    OPT_NO_AUGMENT,
    OPT_CROP_PAD,
    OPT_RRC_SCALE,
    OPT_SEED,
    OPT_RESUME,
    OPT_VOCAB,
    OPT_MAX_LEN,
    OPT_UNGROUPED,
    OPT_TOKEN_DROPOUT,
    OPT_BETA2,
    OPT_HELP
};

static const struct option long_options[] = {
    {"train", required_argument, 0, OPT_TRAIN},
    {"val", required_argument, 0, OPT_VAL},
    {"val-split", required_argument, 0, OPT_VAL_SPLIT},
    {"out", required_argument, 0, OPT_OUT},
    {"labels", required_argument, 0, OPT_LABELS},
    {"init", required_argument, 0, OPT_INIT},
    {"freeze-encoder", no_argument, 0, OPT_FREEZE},
    {"image-size", required_argument, 0, OPT_IMAGE_SIZE},
    {"patch", required_argument, 0, OPT_PATCH},
    {"hidden", required_argument, 0, OPT_HIDDEN},
    {"layers", required_argument, 0, OPT_LAYERS},
    {"heads", required_argument, 0, OPT_HEADS},
    {"mlp", required_argument, 0, OPT_MLP},
    {"channels", required_argument, 0, OPT_CHANNELS},
    {"epochs", required_argument, 0, OPT_EPOCHS},
    {"batch", required_argument, 0, OPT_BATCH},
    {"lr", required_argument, 0, OPT_LR},
    {"min-lr", required_argument, 0, OPT_MIN_LR},
    {"weight-decay", required_argument, 0, OPT_WD},
    {"warmup", required_argument, 0, OPT_WARMUP},
    {"label-smoothing", required_argument, 0, OPT_SMOOTHING},
    {"dropout", required_argument, 0, OPT_DROPOUT},
    {"attention-dropout", required_argument, 0, OPT_ATTN_DROPOUT},
    {"clip", required_argument, 0, OPT_CLIP},
    {"augment", required_argument, 0, OPT_AUGMENT},
    {"no-augment", no_argument, 0, OPT_NO_AUGMENT},
    {"crop-pad", required_argument, 0, OPT_CROP_PAD},
    {"rrc-scale", required_argument, 0, OPT_RRC_SCALE},
    {"seed", required_argument, 0, OPT_SEED},
    {"threads", required_argument, 0, 't'},
    {"resume", no_argument, 0, OPT_RESUME},
    {"vocab", required_argument, 0, OPT_VOCAB},
    {"max-len", required_argument, 0, OPT_MAX_LEN},
    {"no-length-groups", no_argument, 0, OPT_UNGROUPED},
    {"token-dropout", required_argument, 0, OPT_TOKEN_DROPOUT},
    {"adam-beta2", required_argument, 0, OPT_BETA2},
    {"help", no_argument, 0, OPT_HELP},
    {0, 0, 0, 0},
};

/* Integer options: where each goes and its range. */
static int *int_target(train_options *o, int code, long long *lo, long long *hi) {
    *lo = 1, *hi = 1 << 16;
    switch (code) {
    case OPT_IMAGE_SIZE:
        return &o->image_size;
    case OPT_PATCH:
        return &o->patch_size;
    case OPT_HIDDEN:
        return &o->hidden_size;
    case OPT_LAYERS:
        return *hi = 1024, &o->num_layers;
    case OPT_HEADS:
        return *hi = 1024, &o->num_heads;
    case OPT_MLP:
        return &o->mlp_size;
    case OPT_CHANNELS:
        return *hi = 3, &o->channels;
    case OPT_EPOCHS:
        return *hi = 100000, &o->epochs;
    case OPT_BATCH:
        return &o->batch;
    case OPT_MAX_LEN:
        return *lo = 2, *hi = 1 << 16, &o->max_len;
    case OPT_CROP_PAD:
        return *lo = 0, *hi = 4096, &o->aug.crop_pad;
    case 't':
        return *lo = 0, *hi = 1024, &o->threads;
    default:
        return NULL;
    }
}

static float *float_target(train_options *o, int code, double *lo, double *hi) {
    *lo = 0, *hi = 1e6;
    switch (code) {
    case OPT_VAL_SPLIT:
        return *hi = 0.99, &o->val_split;
    case OPT_LR:
        return *hi = 10, &o->lr;
    case OPT_MIN_LR:
        return *hi = 10, &o->min_lr;
    case OPT_WD:
        return *hi = 10, &o->weight_decay;
    case OPT_WARMUP:
        return &o->warmup_epochs;
    case OPT_SMOOTHING:
        return *hi = 0.99, &o->label_smoothing;
    case OPT_DROPOUT:
        return *hi = 0.99, &o->dropout;
    case OPT_ATTN_DROPOUT:
        return *hi = 0.99, &o->attention_dropout;
    case OPT_CLIP:
        return &o->clip_norm;
    case OPT_BETA2:
        return *hi = 0.999999, &o->beta2;
    case OPT_TOKEN_DROPOUT:
        return *hi = 0.99, &o->token_dropout;
    case OPT_RRC_SCALE:
        return *lo = 0.01, *hi = 1, &o->aug.rrc_min_scale;
    default:
        return NULL;
    }
}

int cli_train(int argc, char **argv) {
    train_options o = train_default_options();
    int resume = 0, shape_given = 0, c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "t:h", long_options, NULL)) != -1) {
        long long lo, hi;
        double flo, fhi;
        int *ip = int_target(&o, c, &lo, &hi);
        float *fp = float_target(&o, c, &flo, &fhi);
        if (ip) {
            const long long v = cli_parse_int(optarg, lo, hi, argv[optind - 2]);
            if (v < 0) return 2;
            *ip = (int)v;
            shape_given |= c >= OPT_IMAGE_SIZE && c <= OPT_CHANNELS;
            continue;
        }
        if (fp) {
            if (parse_float(optarg, flo, fhi, argv[optind - 2], fp) != 0) return 2;
            continue;
        }
        switch (c) {
        case OPT_TRAIN:
            o.train_path = optarg;
            break;
        case OPT_VAL:
            o.val_path = optarg;
            break;
        case OPT_OUT:
            o.out_dir = optarg;
            break;
        case OPT_LABELS:
            o.labels_file = optarg;
            break;
        case OPT_INIT:
            o.init_dir = optarg;
            break;
        case OPT_VOCAB:
            o.vocab_file = optarg;
            break;
        case OPT_UNGROUPED:
            o.ungrouped = 1;
            break;
        case OPT_FREEZE:
            o.freeze_encoder = 1;
            break;
        case OPT_AUGMENT:
            if (parse_augment(optarg, &o) != 0) return 2;
            break;
        case OPT_NO_AUGMENT:
            o.augment = 0;
            break;
        case OPT_SEED: {
            const long long v = cli_parse_int(optarg, 0, (1LL << 62), "--seed");
            if (v < 0) return 2;
            o.seed = (uint64_t)v;
            break;
        }
        case OPT_RESUME:
            resume = 1;
            break;
        case 'h':
        case OPT_HELP:
            fputs(usage_text, stdout);
            return 0;
        default:
            fputs(usage_text, stderr);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "vit train: unexpected argument '%s'\n%s", argv[optind], usage_text);
        return 2;
    }
    if (!o.out_dir || (!resume && !o.train_path)) {
        fprintf(stderr, "vit train: --out and --train are required\n%s", usage_text);
        return 2;
    }
    if (o.init_dir && shape_given) {
        fprintf(stderr, "vit train: --init takes the model's shape; drop the shape options\n");
        return 2;
    }
    if (o.channels == 2) {
        fprintf(stderr, "vit train: --channels must be 1 (grey) or 3 (RGB)\n");
        return 2;
    }
    if (o.val_path && o.val_split > 0) o.val_split = 0;

    cli_state s = {.tty = isatty(2)};
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
    if (rc == 1) {
        fprintf(stderr,
                "vit train: stopped by %s after %s; checkpoint saved in %s (continue with: vit "
                "train --out %s --resume)\n",
                stop_signal == SIGTERM ? "SIGTERM" : "SIGINT", took, o.out_dir, o.out_dir);
        return 128 + (stop_signal ? stop_signal : SIGINT);
    }
    fprintf(stderr, "vit train: done in %s; model in %s\n", took, o.out_dir);
    return 0;
}
