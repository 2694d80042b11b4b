#ifndef VIT_CLI_H
#define VIT_CLI_H

/* The `vit` program: one binary, a subcommand per job. Each takes argv after the subcommand name
 * (argv[0] is the subcommand) and returns the process exit status: 0 success, 1 a run that
 * failed, 2 a usage error. */

#include <stddef.h>

#include "vit/cli/json_writer.h"
#include "vit/cli/opts.h"
#include "vit/io/safetensors.h"
#include "vit/vit.h"

int cli_classify(int argc, char **argv);
int cli_eval(int argc, char **argv);
int cli_text(int argc, char **argv);
int cli_rerank(int argc, char **argv);
int cli_tag(int argc, char **argv);
int cli_info(int argc, char **argv);
int cli_bench(int argc, char **argv);
int cli_train(int argc, char **argv);
int cli_preprocess(int argc, char **argv);
int cli_convert(int argc, char **argv);
int cli_average(int argc, char **argv);
/* --dtype's value (f16, bf16 or f32, any case) into *out; else -1 after a one-line error. */
int cli_parse_dtype(const cli_parser *p, const char *command, st_dtype *out);
/* -1 after a one-line error when out_dir already holds a model (its config.json or
 * model.safetensors, an open_clip folder's open_clip_config.json or open_clip_model.safetensors),
 * which vit convert and vit average replace only with --overwrite. */
int cli_refuse_existing_model(const char *command, const char *out_dir);
int cli_serve(int argc, char **argv);
int cli_explain(int argc, char **argv);
int cli_embed(int argc, char **argv);
int cli_tokenize(int argc, char **argv);
int cli_search(int argc, char **argv);
int cli_generate(int argc, char **argv);
int cli_render_lines(int argc, char **argv);

/* Each subcommand's options and texts: its --help, and its section of the man page. */
const cli_command *cli_classify_command(void);
const cli_command *cli_eval_command(void);
const cli_command *cli_text_command(void);
const cli_command *cli_rerank_command(void);
const cli_command *cli_tag_command(void);
const cli_command *cli_info_command(void);
const cli_command *cli_bench_command(void);
const cli_command *cli_train_command(void);
const cli_command *cli_preprocess_command(void);
const cli_command *cli_convert_command(void);
const cli_command *cli_average_command(void);
const cli_command *cli_serve_command(void);
const cli_command *cli_explain_command(void);
const cli_command *cli_embed_command(void);
const cli_command *cli_tokenize_command(void);
const cli_command *cli_search_command(void);
const cli_command *cli_generate_command(void);
const cli_command *cli_render_lines_command(void);

/* ---- the command line ---- */

/* What parsing a command line came to: every command's parser ends in one of these. */
typedef enum {
    CLI_PARSED,      /* run the command (operands: p->rest[0 .. p->num_rest)) */
    CLI_HELP_SHOWN,  /* --help was printed: exit 0 */
    CLI_USAGE_ERROR, /* a usage error was reported on one line: exit 2 */
} cli_outcome;

/* The exit status of a command line that does not run: 0 after --help, 2 after a usage error. */
int cli_exit_status(cli_outcome outcome);

/* "vit NAME: <message> (vit NAME --help)" on stderr; returns CLI_USAGE_ERROR. */
cli_outcome cli_usage_error(const cli_command *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* What the shared options below set: a row each in the option tables of the commands that take
 * them and one handler, so their names, limits and help read the same everywhere. */
typedef struct {
    const char *model; /* -m DIR, or NULL */
    vit_params params; /* --batch, --threads, --size, --max-pixels, --backend, --precision,
                        * --exif and --no-exif */
} cli_common;

/* One of a command's own options (id below CLI_OPT_MODEL), its value in p->value: 0, or -1 after
 * reporting an invalid value. */
typedef int (*cli_option_fn)(const cli_parser *p, int id, void *user);

/* Parses argv with cmd's table: the shared options into *common, the command's own through
 * own(p, id, user). */
cli_outcome cli_parse(cli_parser *p, const cli_command *cmd, int argc, char **argv,
                      cli_common *common, cli_option_fn own, void *user);

/* The shared options. Their ids lie above any command's own. */
enum {
    CLI_OPT_MODEL = 1000,
    CLI_OPT_BATCH,
    CLI_OPT_THREADS,
    CLI_OPT_SIZE,
    CLI_OPT_PIXELS,
    CLI_OPT_BACKEND,
    CLI_OPT_PRECISION,
    CLI_OPT_EXIF,
    CLI_OPT_NO_EXIF,
};
#define CLI_MODEL_DEFAULT "$VIT_MODEL, else the shipped model"
#define CLI_MODEL_OPTION(help, def)                                                                \
    { CLI_OPT_MODEL, "model", 'm', "DIR|ORG/NAME", help, def }
#define CLI_BATCH_OPTION(help, def)                                                                \
    { CLI_OPT_BATCH, "batch", 'b', "N", help, def }
#define CLI_THREADS_OPTION                                                                         \
    {                                                                                              \
        CLI_OPT_THREADS, "threads", 't', "N", "compute threads",                                   \
            "OMP_NUM_THREADS, else one per core"                                                   \
    }
#define CLI_SIZE_OPTION(help)                                                                      \
    { CLI_OPT_SIZE, "size", 0, "N", help, "the model's image_size" }
#define CLI_PIXELS_OPTION                                                                          \
    { CLI_OPT_PIXELS, "max-pixels", 0, "N", "refuse images larger than this", "100000000" }
#define CLI_BACKEND_OPTION                                                                         \
    {                                                                                              \
        CLI_OPT_BACKEND, "backend", 0, "NAME", "openblas (the reference) or onednn",               \
            "onednn where built, else openblas"                                                    \
    }
#define CLI_PRECISION_OPTION                                                                       \
    { CLI_OPT_PRECISION, "precision", 0, "P", "fp32, bf16 or int8 for the linear layers", "fp32" }
/* --exif and --no-exif, for every command that reads image files; the command's default (its
 * params.exif_orientation before parsing) is shown as "yes" on one of the two. */
#define CLI_EXIF_OPTIONS(exif_default, no_exif_default)                                            \
    {CLI_OPT_EXIF,                                                                                 \
     "exif",                                                                                       \
     0,                                                                                            \
     NULL,                                                                                         \
     "turn images upright by their EXIF orientation, as Hugging Face pipelines do",                \
     exif_default},                                                                                \
    {                                                                                              \
        CLI_OPT_NO_EXIF, "no-exif", 0, NULL,                                                       \
            "ignore EXIF orientation: Pillow's raw pixels, as timm's and torchvision's datasets "  \
            "read them",                                                                           \
            no_exif_default                                                                        \
    }
#define CLI_EXIF_UPRIGHT CLI_EXIF_OPTIONS("yes", NULL)
#define CLI_EXIF_RAW     CLI_EXIF_OPTIONS(NULL, "yes")

/* ---- models, outputs ---- */

/* The model directory: the -m value if given, else $VIT_MODEL, else the default model shipped
 * with the program (see cli_models_dir), resolved by vit_resolve_model (a folder, or org/name in
 * the Hugging Face cache). Writes into buf; returns buf, or NULL after saying why on stderr
 * ("vit COMMAND: ..."). */
const char *cli_model_dir(const char *command, const char *option, char *buf, size_t size);
/* Where the shipped models are: models/ beside the binary's bin/ folder (a build tree), else
 * share/vit/models/ beside it (an installed prefix). */
const char *cli_models_dir(char *buf, size_t size);
/* Whether path names a directory (following links). */
int cli_is_dir(const char *path);

/* Prints "vit COMMAND: <err>" and, when the model came from no -m and no $VIT_MODEL and the
 * default model is not there, how to get one. */
void cli_print_load_error(const char *command, const char *model_opt, const char *model_dir,
                          const vit_error *err);

/* The image model the shared options name (-m, else $VIT_MODEL, else the shipped one), loaded
 * with their params; its folder into dir. NULL after reporting why, as cli_print_load_error. */
vit_context *cli_load_image_model(const cli_command *cmd, const cli_common *c, char *dir,
                                  size_t size);
/* The same for commands that need labels (classify, explain, eval): an image-to-text folder
 * (VisionEncoderDecoderModel) is refused in one line pointing to vit generate. */
vit_context *cli_load_classifier(const cli_command *cmd, const cli_common *c, char *dir,
                                 size_t size);
/* The same for commands that read classes (classify, eval): a base model (Dinov2Model,
 * BeitModel: features, no classifier) is refused too, pointing to vit embed. */
vit_context *cli_load_labelled(const cli_command *cmd, const cli_common *c, char *dir, size_t size);
/* Whether dir holds a text model (a BERT-like encoder, a sentence-transformers folder) that
 * vit_text_load reads: 0 when not, or unreadable (loading it says why). */
int cli_is_text_model(const char *dir);
/* Whether dir's config.json is a VisionEncoderDecoderModel's (0 when unreadable). */
int cli_is_image_to_text(const char *dir);
/* The shared options' threads, batch (when set), backend and precision for a text model. */
vit_text_params cli_text_params(const vit_params *p);

/* "top": [{"index": i, "label": "...", "prob": p}, ...] inside the current JSON object. */
void cli_json_top(json_writer *w, const vit_prediction *top, int k);

/* One entity as the token-classification pipeline writes it: {"entity" (or "entity_group" when
 * grouped), "score", "index" (not grouped), "word", "start", "end"} (null without offsets). */
void cli_json_entity(json_writer *w, const vit_entity *e, int grouped);

/* Threads that decode images beside the forward pass, given the forward's thread request. */
int cli_decode_threads(int threads);

/* "Haswell", "SkylakeX", ...: the OpenBLAS kernel in use (figures depend on it). */
const char *cli_blas_core(void);

#endif
