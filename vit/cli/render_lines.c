/* vit render-lines: synthetic printed text lines for OCR (vit/data/ocr_render.h) as a folder of
 * images and labels.tsv. */
#include <errno.h>
#include <limits.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "image/draw.h"
#include "vit/base/clock.h"
#include "vit/base/file.h"
#include "vit/base/strlist.h"
#include "vit/base/threads.h"
#include "text/utf8.h"
#include "vit/cli/cli.h"
#include "vit/data/ocr_render.h"

enum {
    OPT_FONTS = 1,
    OPT_OUT,
    OPT_COUNT,
    OPT_START,
    OPT_SEED,
    OPT_HEIGHT,
    OPT_WIDTH,
    OPT_DEGRADE,
    OPT_SENTENCES,
    OPT_HELD_OUT,
    OPT_GENERATED,
    OPT_UPPER,
    OPT_TITLE,
    OPT_CROP,
    OPT_LINE_HEIGHT,
    OPT_TIGHT,
    OPT_NEIGHBOURS,
    OPT_TEXTS,
    OPT_PAGES,
};

static const cli_option options[] = {
    {OPT_FONTS, "fonts", 0, "FILE",
     "the font files, one path per line (words after it name its Debian package; '#' comments)",
     NULL},
    {OPT_OUT, "out", 'o', "DIR", "where the images and labels.tsv go (made with its parents)",
     NULL},
    {OPT_COUNT, "count", 'n', "N", "lines to render", "1000"},
    {OPT_START, "start", 0, "I", "the first line's number (lines I .. I+N-1 of the seed's set)",
     "0"},
    {OPT_SEED, "seed", 0, "S", "the set: the same seed gives the same lines", "1"},
    {OPT_HEIGHT, "height", 0, "H", "image height, pixels", "32"},
    {OPT_WIDTH, "width", 0, "W", "image width, pixels (at least 4 x H)", "384"},
    {OPT_DEGRADE, "degrade", 0, "P",
     "share of lines with scan and photo effects (0: a clean set, 1: all degraded)", "0.8"},
    {OPT_SENTENCES, "sentences", 0, "FILE",
     "real text: SST-2's TSV (first column after a header) or one sentence per line",
     "generated items only"},
    {OPT_HELD_OUT, "held-out", 0, "FILE",
     "sentences (same formats) no line may occur in, ignoring case: the test set's", NULL},
    {OPT_GENERATED, "generated", 0, "P", "share of lines of numbers, dates, prices, codes", "0.25"},
    {OPT_UPPER, "upper", 0, "P", "share of lines in capitals", "0.05"},
    {OPT_TITLE, "title", 0, "P", "share of lines in title case", "0.05"},
    {OPT_CROP, "crop", 0, NULL,
     "lines as people crop them: each at its own size, cut around its ink, page-like texts "
     "(prose, headings, lists, table cells, code, generated items; --height, --width and the "
     "three shares above unused)",
     NULL},
    {OPT_LINE_HEIGHT, "line-height", 0, "MIN-MAX",
     "--crop: the lines' heights (the font's ascender - descender), pixels, drawn log-uniformly; "
     "one number for one height",
     "16-96"},
    {OPT_TIGHT, "tight", 0, "P", "--crop: share of tight crops (0-2 px around the ink)", "0.4"},
    {OPT_NEIGHBOURS, "neighbours", 0, "P",
     "--crop: share of the loose crops that show the lines above and below", "0.3"},
    {OPT_PAGES, "pages", 0, NULL,
     "N pages of paragraphs instead (DIR/pages/: each page's image and .txt; DIR: every line cut "
     "by its true box, labels.tsv, boxes.tsv); --line-height, --degrade and --sentences apply",
     NULL},
    {OPT_TEXTS, "texts", 0, "FILE",
     "draw these texts, one a line (line i of the set shows text i, round again after the last)",
     NULL},
    CLI_THREADS_OPTION,
};

static const cli_command command = {
    "render-lines",
    "synthetic printed text lines for OCR: images and labels.tsv",
    "[options] --fonts FILE --out DIR",
    "Renders N lines of text in the fonts of FILE (FreeType; one font a line, drawn uniformly),\n"
    "each on an H x W grey canvas, into DIR: 0000000.png ... (a JPEG-compressed line is stored\n"
    "as .jpg at its quality), labels.tsv (`file<TAB>text` in line order, no header, UTF-8;\n"
    "written last) and render.tsv (with a header: each line's font, size and effects). Line i\n"
    "depends only on the seed and i, not on the thread count or --start; the same seed rendered\n"
    "with --degrade 0 and --degrade 1 gives the same texts in the same fonts, clean and\n"
    "degraded. The texts: real sentences cut at word ends to what fits, and generated items;\n"
    "the characters are printable ASCII, the Latin-1 letters and £ ° € (docs/OCR_DATA.md).\n"
    "With --crop each line is drawn as people crop lines: at its own size (--line-height),\n"
    "cut tight or loose around its ink (neighbouring lines peeking in at times), any width, 1\n"
    "to 80 characters of page-like text; render.tsv then adds each crop's line height, size,\n"
    "the label's box in it, how it was cut and the kind of text. --texts draws given texts.",
    options,
    sizeof options / sizeof options[0]};

const cli_command *cli_render_lines_command(void) {
    return &command;
}

typedef struct {
    const char *fonts_path, *out, *sentences_path, *held_out_path, *texts_path;
    long count, start;
    int64_t seed;
    int threads, pages;
    ocr_render_options render;
} render_args;

static int number_option(const cli_parser *p, double *value) {
    return cli_number(p, 0, 1, value);
}

static int render_option(const cli_parser *p, int id, void *user) {
    render_args *a = user;
    int64_t v;
    switch (id) {
    case OPT_FONTS:
        return a->fonts_path = p->value, 0;
    case OPT_OUT:
        return a->out = p->value, 0;
    case OPT_COUNT:
        if (cli_int64(p, 1, 100000000, &v) != 0) return -1;
        return a->count = (long)v, 0;
    case OPT_START:
        if (cli_int64(p, 0, 1000000000000LL, &v) != 0) return -1;
        return a->start = (long)v, 0;
    case OPT_SEED:
        return cli_int64(p, 0, INT64_MAX, &a->seed);
    case OPT_HEIGHT:
        return cli_int(p, 16, 512, &a->render.height);
    case OPT_WIDTH:
        return cli_int(p, 64, 16384, &a->render.width);
    case OPT_DEGRADE:
        return number_option(p, &a->render.degrade);
    case OPT_SENTENCES:
        return a->sentences_path = p->value, 0;
    case OPT_HELD_OUT:
        return a->held_out_path = p->value, 0;
    case OPT_GENERATED:
        return number_option(p, &a->render.text.generated);
    case OPT_UPPER:
        return number_option(p, &a->render.text.upper_case);
    case OPT_TITLE:
        return number_option(p, &a->render.text.title_case);
    case OPT_CROP:
        return a->render.crop = 1, 0;
    case OPT_LINE_HEIGHT: {
        int lo, hi, end = 0;
        const int n = sscanf(p->value, "%d%n-%d%n", &lo, &end, &hi, &end);
        if (n == 1) hi = lo;
        if (n < 1 || p->value[end] || lo < 8 || hi > 512 || lo > hi) {
            cli_usage_error(&command, "--line-height '%s' is not MIN-MAX (or N) inside 8..512",
                            p->value);
            return -1;
        }
        return a->render.line_min = lo, a->render.line_max = hi, 0;
    }
    case OPT_TIGHT:
        return number_option(p, &a->render.tight);
    case OPT_NEIGHBOURS:
        return number_option(p, &a->render.neighbours);
    case OPT_TEXTS:
        return a->texts_path = p->value, 0;
    case OPT_PAGES:
        return a->pages = 1, 0;
    }
    return 0;
}

/* ---- the fonts ---- */

typedef struct {
    char **paths;
    int count;
} font_list;

/* The paths of the list file (the first word of each line that is not blank or a comment), each
 * checked to be readable; a missing one is reported with its line and Debian package. */
static int read_font_list(const char *file, font_list *out) {
    strlist l;
    vit_error err = {{0}};
    if (strlist_read(&l, file, 1 << 20, STRLIST_TRIM, &err) != 0) {
        fprintf(stderr, "vit render-lines: %s\n", err.msg);
        return -1;
    }
    out->paths = calloc((size_t)l.count + 1, sizeof *out->paths);
    out->count = 0;
    int rc = out->paths ? 0 : -1;
    for (int i = 0; rc == 0 && i < l.count; i++) {
        char *line = l.lines[i];
        if (!*line || *line == '#') continue;
        const size_t n = strcspn(line, " \t");
        const char *package = line + n + strspn(line + n, " \t");
        line[n] = '\0';
        if (access(line, R_OK) != 0) {
            fprintf(stderr, "vit render-lines: %s:%d: %s: %s%s%s%s\n", file, i + 1, line,
                    strerror(errno), *package ? " (Debian package " : "", package,
                    *package ? "; make deps-ocr installs it)" : "");
            rc = -1;
        } else if (!(out->paths[out->count++] = strdup(line))) {
            rc = -1;
        }
    }
    if (rc == 0 && out->count == 0) {
        fprintf(stderr, "vit render-lines: %s: no font listed\n", file);
        rc = -1;
    }
    strlist_free(&l);
    return rc;
}

static void free_font_list(font_list *l) {
    for (int i = 0; l->paths && i < l->count; i++) free(l->paths[i]);
    free(l->paths);
}

/* ---- given texts ---- */

/* The texts of file, one a line (blank lines skipped), each checked: valid UTF-8 of the OCR
 * character set, at most OCR_DRAW_BYTES bytes, no doubled or surrounding spaces. */
static int read_texts(const char *file, strlist *out) {
    vit_error err = {{0}};
    if (strlist_read(out, file, 1 << 26, STRLIST_TRIM | STRLIST_SKIP_BLANK, &err) != 0) {
        fprintf(stderr, "vit render-lines: %s\n", err.msg);
        return -1;
    }
    const char *bad = out->count == 0 ? "no text in it" : NULL;
    int at = 0;
    for (int i = 0; !bad && i < out->count; i++) {
        const char *t = out->lines[i];
        const size_t n = strlen(t);
        at = i + 1;
        if (n > OCR_DRAW_BYTES) bad = "a text longer than 240 bytes";
        if (strstr(t, "  ")) bad = "two spaces in a row (a line's words are single-spaced)";
        for (size_t k = 0; !bad && k < n;) {
            const int32_t cp = utf8_decode((const uint8_t *)t, n, &k);
            if (cp < 0)
                bad = "not UTF-8";
            else if (!ocr_charset_has((uint32_t)cp))
                bad = "a character outside the OCR set (docs/OCR_DATA.md)";
        }
    }
    if (bad) {
        fprintf(stderr, "vit render-lines: %s%s%.0d: %s\n", file, at ? ":" : "", at, bad);
        strlist_free(out);
        return -1;
    }
    return 0;
}

/* ---- rendering ---- */

/* What one run reads once and every thread shares. */
typedef struct {
    const render_args *a;
    ocr_fonts **fonts; /* one per thread */
    ocr_sentences sentences, held_out;
    int have_sentences, have_held_out;
    strlist texts;
    int have_texts;
} render_inputs;

typedef struct {
    char name[32];
    int width, height; /* the image's, kept after its pixels are freed */
    ocr_line line;
    ocr_page page; /* --pages */
    int failed;
    vit_error err;
} rendered;

/* Page `index` rendered: its image and text into DIR/pages/, each line cut by its box into DIR. */
static int render_page(ocr_fonts *f, const render_inputs *in, long index, rendered *r) {
    const render_args *a = in->a;
    const ocr_page_options o = {.line_min = a->render.line_min,
                                .line_max = a->render.line_max,
                                .degrade = a->render.degrade};
    ocr_page *p = &r->page;
    if (ocr_render_page(f, in->have_sentences ? &in->sentences : NULL, &o, (uint64_t)a->seed, index,
                        p, &r->err) != 0)
        return -1;
    const int jpeg = p->jpeg_quality > 0;
    r->width = p->image.width, r->height = p->image.height;
    snprintf(r->name, sizeof r->name, "%07ld.%s", index, jpeg ? "jpg" : "png");
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/pages/%s", a->out, r->name);
    int rc = jpeg ? write_file_atomic(path, p->jpeg, p->jpeg_size, &r->err)
                  : image_write_png(path, &p->image, &r->err);
    char text[OCR_PAGE_LINES * (OCR_DRAW_BYTES + 1) + 1];
    size_t len = 0;
    for (int k = 0; k < p->lines; k++)
        len += (size_t)snprintf(text + len, sizeof text - len, "%s\n", p->line[k].text);
    snprintf(path, sizeof path, "%s/pages/%07ld.txt", a->out, index);
    if (rc == 0) rc = write_file_atomic(path, text, len, &r->err);
    for (int k = 0; rc == 0 && k < p->lines; k++) { /* the line by its true box */
        const int *b = p->line[k].box, w = b[2] - b[0], h = b[3] - b[1];
        image_u8 cut = {w, h, 1, malloc((size_t)w * (size_t)h)};
        if (!cut.pixels) {
            rc = vit_fail(&r->err, "out of memory");
            break;
        }
        for (int y = 0; y < h; y++)
            memcpy(cut.pixels + (size_t)y * (size_t)w,
                   p->image.pixels + (size_t)(b[1] + y) * (size_t)p->image.width + (size_t)b[0],
                   (size_t)w);
        snprintf(path, sizeof path, "%s/%07ld-%02d.png", a->out, index, k);
        rc = image_write_png(path, &cut, &r->err);
        image_free(&cut);
    }
    ocr_page_free(p);
    return rc;
}

/* Line `index` rendered and written to the folder as r->name. */
static int render_one(ocr_fonts *f, const render_inputs *in, long index, rendered *r) {
    const render_args *a = in->a;
    if (a->pages) return render_page(f, in, index, r);
    if (ocr_render_line(f, in->have_sentences ? &in->sentences : NULL,
                        in->have_held_out ? &in->held_out : NULL, &a->render, (uint64_t)a->seed,
                        index, &r->line, &r->err) != 0)
        return -1;
    const int jpeg = r->line.jpeg_quality > 0;
    r->width = r->line.image.width, r->height = r->line.image.height;
    snprintf(r->name, sizeof r->name, "%07ld.%s", index, jpeg ? "jpg" : "png");
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", a->out, r->name);
    const int rc = jpeg ? write_file_atomic(path, r->line.jpeg, r->line.jpeg_size, &r->err)
                        : image_write_png(path, &r->line.image, &r->err);
    ocr_line_free(&r->line);
    return rc;
}

/* Lines first .. first + n - 1 over the threads, each with its own fonts. */
static void render_block(const render_inputs *in, int threads, long first, int n, rendered *out) {
#pragma omp parallel for schedule(dynamic, 4) num_threads(threads)
    for (int k = 0; k < n; k++)
        out[k].failed = render_one(in->fonts[omp_get_thread_num()], in, first + k, &out[k]) != 0;
}

static void write_rows(FILE *labels, FILE *info, const rendered *r, int n, const ocr_fonts *fonts,
                       int crop) {
    for (int k = 0; k < n; k++) {
        const ocr_line *l = &r[k].line;
        const char *font = ocr_fonts_path(fonts, l->font), *slash = strrchr(font, '/');
        fprintf(labels, "%s\t%s\n", r[k].name, l->text);
        fprintf(info, "%s\t%s\t%.2f\t%d\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%d",
                r[k].name, slash ? slash + 1 : font, l->cap_height, l->degraded, l->angle, l->shear,
                l->gamma, l->paper, l->ink, l->blur, l->scale, l->noise, l->jpeg_quality);
        if (crop) /* the crop: its size, the label's box in it, how it was cut, the text's kind */
            fprintf(info, "\t%.2f\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s", l->line_size, r[k].width,
                    r[k].height, l->box[0], l->box[1], l->box[2], l->box[3], l->tight,
                    l->neighbours, l->kind >= 0 ? ocr_text_kind_names[l->kind] : "given");
        fputc('\n', info);
    }
}

/* A page's rows: each line's crop in labels.tsv and its box in boxes.tsv, the page in render.tsv.
 */
static void write_page_rows(FILE *labels, FILE *info, FILE *boxes, const rendered *r, long index,
                            const ocr_fonts *fonts) {
    const ocr_page *p = &r->page;
    const char *font = ocr_fonts_path(fonts, p->font), *slash = strrchr(font, '/');
    fprintf(info, "pages/%s\t%s\t%.2f\t%.2f\t%d\t%d\t%d\t%d\t%d\t%.3f\t%.3f\t%.3f\t%.3f\t%d\n",
            r->name, slash ? slash + 1 : font, p->line_size, p->pitch, p->columns, p->lines,
            r->width, r->height, p->degraded, p->angle, p->blur, p->scale, p->noise,
            p->jpeg_quality);
    for (int k = 0; k < p->lines; k++) {
        const ocr_page_line *l = &p->line[k];
        fprintf(labels, "%07ld-%02d.png\t%s\n", index, k, l->text);
        fprintf(boxes, "%07ld-%02d.png\tpages/%s\t%d\t%d\t%d\t%d\t%d\t%d\t%s\n", index, k, r->name,
                k, l->column, l->box[0], l->box[1], l->box[2], l->box[3], l->text);
    }
}

enum { BLOCK = 256 }; /* lines rendered in parallel before their rows are written */

typedef struct {
    atomic_file labels, info, boxes;
    long degraded, jpeg, lines;
    double start;
} render_output;

static int open_outputs(const render_args *a, render_output *o) {
    char path[PATH_MAX];
    vit_error err = {{0}};
    snprintf(path, sizeof path, "%s/render.tsv", a->out);
    if (atomic_file_open(&o->info, path, &err) != 0) {
        fprintf(stderr, "vit render-lines: %s\n", err.msg);
        return -1;
    }
    if (a->pages) {
        snprintf(path, sizeof path, "%s/boxes.tsv", a->out);
        if (atomic_file_open(&o->boxes, path, &err) != 0) {
            fprintf(stderr, "vit render-lines: %s\n", err.msg);
            atomic_file_abort(&o->info);
            return -1;
        }
    }
    snprintf(path, sizeof path, "%s/labels.tsv", a->out);
    if (atomic_file_open(&o->labels, path, &err) != 0) {
        fprintf(stderr, "vit render-lines: %s\n", err.msg);
        atomic_file_abort(&o->info);
        if (a->pages) atomic_file_abort(&o->boxes);
        return -1;
    }
    if (a->pages) {
        fputs("page\tfont\tline_height\tpitch\tcolumns\tlines\twidth\theight\tdegraded\tangle\t"
              "blur\tscale\tnoise\tjpeg_quality\n",
              o->info.f);
        fputs("file\tpage\tline\tcolumn\tx0\ty0\tx1\ty1\ttext\n", o->boxes.f);
        return 0;
    }
    fputs("file\tfont\tcap_height\tdegraded\tangle\tshear\tgamma\tpaper\tink\tblur\tscale\tnoise\t"
          "jpeg_quality",
          o->info.f);
    if (a->render.crop)
        fputs(
            "\tline_height\twidth\theight\tbox_x0\tbox_y0\tbox_x1\tbox_y1\ttight\tneighbours\tkind",
            o->info.f);
    fputc('\n', o->info.f);
    return 0;
}

/* The first failed line of a block, reported; 0 when none failed. */
static int block_failed(const rendered *r, int n, long first) {
    for (int k = 0; k < n; k++)
        if (r[k].failed) {
            fprintf(stderr, "vit render-lines: line %ld: %s\n", first + k, r[k].err.msg);
            return 1;
        }
    return 0;
}

static void show_progress(const render_output *o, long done, long count) {
    if (!isatty(STDERR_FILENO)) return;
    const double rate = done / (clock_seconds() - o->start + 1e-9);
    fprintf(stderr, "\r\033[K%ld/%ld lines  %.0f lines/s", done, count, rate);
    if (done == count) fputs("\r\033[K", stderr);
}

/* Every line, block by block; the rows of each block written in line order. */
static int render_all(const render_inputs *in, int threads, render_output *o) {
    const render_args *a = in->a;
    rendered *block = calloc(BLOCK, sizeof *block);
    if (!block) return fputs("vit render-lines: out of memory\n", stderr), -1;
    int rc = 0;
    for (long done = 0; rc == 0 && done < a->count;) {
        const int n = a->count - done < BLOCK ? (int)(a->count - done) : BLOCK;
        render_block(in, threads, a->start + done, n, block);
        if ((rc = block_failed(block, n, a->start + done)) != 0) break;
        if (a->pages) {
            for (int k = 0; k < n; k++) {
                write_page_rows(o->labels.f, o->info.f, o->boxes.f, &block[k], a->start + done + k,
                                in->fonts[0]);
                o->degraded += block[k].page.degraded;
                o->jpeg += block[k].page.jpeg_quality > 0;
                o->lines += block[k].page.lines;
            }
        } else {
            write_rows(o->labels.f, o->info.f, block, n, in->fonts[0], a->render.crop);
            for (int k = 0; k < n; k++) {
                o->degraded += block[k].line.degraded;
                o->jpeg += block[k].line.jpeg_quality > 0;
            }
        }
        done += n;
        show_progress(o, done, a->count);
    }
    free(block);
    return rc;
}

/* render.tsv, then labels.tsv: labels.tsv in place marks a finished folder. */
static int commit_outputs(render_output *o, int pages) {
    vit_error err = {{0}};
    if (atomic_file_commit(&o->info, &err) != 0 ||
        (pages && atomic_file_commit(&o->boxes, &err) != 0) ||
        atomic_file_commit(&o->labels, &err) != 0) {
        fprintf(stderr, "vit render-lines: %s\n", err.msg);
        return -1;
    }
    return 0;
}

static int render_to_folder(const render_inputs *in, int threads) {
    const render_args *a = in->a;
    render_output o = {.start = clock_seconds()};
    if (open_outputs(a, &o) != 0) return 1;
    if (render_all(in, threads, &o) != 0) {
        atomic_file_abort(&o.info);
        if (a->pages) atomic_file_abort(&o.boxes);
        atomic_file_abort(&o.labels);
        return 1;
    }
    if (commit_outputs(&o, a->pages) != 0) {
        atomic_file_abort(&o.labels);
        return 1;
    }
    const double s = clock_seconds() - o.start;
    if (a->pages) {
        printf("%s: %ld pages of %ld lines (%ld degraded, %ld as JPEG) in %.1f s: %.1f pages/s on "
               "%d thread%s\n",
               a->out, a->count, o.lines, o.degraded, o.jpeg, s, a->count / (s + 1e-9), threads,
               threads == 1 ? "" : "s");
        return 0;
    }
    printf("%s: %ld lines (%ld degraded, %ld as JPEG) in %.1f s: %.0f lines/s on %d thread%s\n",
           a->out, a->count, o.degraded, o.jpeg, s, a->count / (s + 1e-9), threads,
           threads == 1 ? "" : "s");
    return 0;
}

/* ---- the command ---- */

static cli_outcome parse_options(int argc, char **argv, render_args *a) {
    cli_parser p;
    cli_common c = {.params = vit_default_params()};
    const cli_outcome parsed = cli_parse(&p, &command, argc, argv, &c, render_option, a);
    a->threads = threads_resolve(c.params.threads);
    if (parsed != CLI_PARSED) return parsed;
    if (p.num_rest) return cli_usage_error(&command, "unexpected argument '%s'", p.rest[0]);
    if (!a->fonts_path) return cli_usage_error(&command, "no --fonts FILE given");
    if (!a->out) return cli_usage_error(&command, "no --out DIR given");
    if (a->render.width < 4 * a->render.height)
        return cli_usage_error(&command, "--width %d is less than 4 x --height (%d)",
                               a->render.width, 4 * a->render.height);
    if (a->render.text.upper_case + a->render.text.title_case > 1)
        return cli_usage_error(&command, "--upper and --title add up to more than 1");
    if (a->pages && (a->render.crop || a->texts_path || a->held_out_path))
        return cli_usage_error(&command, "--pages draws its own paragraphs: no --crop, --texts "
                                         "or --held-out with it");
    if (a->held_out_path && !a->sentences_path)
        return cli_usage_error(&command, "--held-out without --sentences: generated lines "
                                         "need no held-out sentences");
    return CLI_PARSED;
}

static int read_sentences(const char *path, ocr_sentences *s, int *have) {
    if (!path) return 0;
    vit_error err = {{0}};
    if (ocr_sentences_read(s, path, &err) != 0) {
        fprintf(stderr, "vit render-lines: %s\n", err.msg);
        return -1;
    }
    *have = 1;
    return 0;
}

/* The output folder and any missing parents (mkdir -p). */
static int make_folder(const char *dir) {
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s", dir);
    for (char *p = path + 1;; p++) {
        const char c = *p;
        if (c != '/' && c != '\0') continue;
        *p = '\0';
        if (mkdir(path, 0777) != 0 && !(errno == EEXIST && cli_is_dir(path))) {
            fprintf(stderr, "vit render-lines: %s: %s\n", path,
                    errno == EEXIST ? "exists and is not a folder" : strerror(errno));
            return -1;
        }
        *p = c;
        if (!c) return 0;
    }
}

static int make_pages_folder(const char *out) {
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/pages", out);
    return make_folder(path);
}

/* Fonts for each thread (FreeType faces are one thread's). */
static int open_fonts(render_inputs *in, const font_list *fl, int threads) {
    if (!(in->fonts = calloc((size_t)threads, sizeof *in->fonts))) return -1;
    for (int t = 0; t < threads; t++) {
        vit_error err = {{0}};
        in->fonts[t] = ocr_fonts_open((const char *const *)fl->paths, fl->count, &err);
        if (!in->fonts[t]) {
            fprintf(stderr, "vit render-lines: %s\n", err.msg);
            return -1;
        }
    }
    return 0;
}

static void free_inputs(render_inputs *in, int threads) {
    for (int t = 0; in->fonts && t < threads; t++) ocr_fonts_free(in->fonts[t]);
    free(in->fonts);
    if (in->have_sentences) ocr_sentences_free(&in->sentences);
    if (in->have_held_out) ocr_sentences_free(&in->held_out);
    if (in->have_texts) strlist_free(&in->texts);
}

int cli_render_lines(int argc, char **argv) {
    render_args a = {.count = 1000, .seed = 1, .render = ocr_render_default_options()};
    const cli_outcome parsed = parse_options(argc, argv, &a);
    if (parsed != CLI_PARSED) return cli_exit_status(parsed);
    if (!ocr_render_built_in()) {
        fprintf(stderr, "vit render-lines: not built in (this vit was built without FreeType: "
                        "install libfreetype-dev, make deps-optional, and rebuild)\n");
        return 1;
    }
    render_inputs in = {.a = &a};
    font_list fl = {0};
    int status = 1;
    if (read_font_list(a.fonts_path, &fl) == 0 &&
        read_sentences(a.sentences_path, &in.sentences, &in.have_sentences) == 0 &&
        read_sentences(a.held_out_path, &in.held_out, &in.have_held_out) == 0 &&
        (!a.texts_path || (in.have_texts = read_texts(a.texts_path, &in.texts) == 0)) &&
        open_fonts(&in, &fl, a.threads) == 0 && make_folder(a.out) == 0 &&
        (!a.pages || make_pages_folder(a.out) == 0)) {
        if (in.have_texts) {
            a.render.texts = (const char *const *)in.texts.lines;
            a.render.text_count = in.texts.count;
        }
        status = render_to_folder(&in, a.threads);
    }
    free_inputs(&in, a.threads);
    free_font_list(&fl);
    if (fflush(stdout) != 0) status = 1;
    return status;
}
