#include "vit/train/curves.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "image/draw.h"
#include "image/plot.h"

/* The log's numbers, one column per key, one row per epoch. */
enum { TRAIN_LOSS, VAL_LOSS, TRAIN_TOP1, VAL_TOP1, VAL_CER, VAL_WER, N_COLUMNS };
static const char *const column_keys[N_COLUMNS] = {"train_loss", "val_loss", "train_top1",
                                                   "val_top1",   "val_cer",  "val_wer"};

typedef struct {
    int n;
    double *epoch, *values[N_COLUMNS];
} log_columns;

static void columns_free(log_columns *c) {
    free(c->epoch);
    for (int k = 0; k < N_COLUMNS; k++) free(c->values[k]);
}

static int columns_alloc(log_columns *c, int rows, vit_error *err) {
    memset(c, 0, sizeof *c);
    c->epoch = malloc(sizeof(double) * rows);
    int ok = c->epoch != NULL;
    for (int k = 0; k < N_COLUMNS; k++)
        ok &= (c->values[k] = malloc(sizeof(double) * rows)) != NULL;
    if (!ok) return columns_free(c), vit_fail(err, "out of memory for %d epochs", rows);
    return 0;
}

/* A number, or NaN (missing, null, not a number). */
static double number_or_nan(const cJSON *obj, const char *key) {
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsNumber(item) ? item->valuedouble : NAN;
}

/* The record as the next row; its epoch is its line's number when it has none. */
static void add_record(log_columns *c, const cJSON *obj) {
    const double epoch = number_or_nan(obj, "epoch");
    c->epoch[c->n] = isfinite(epoch) ? epoch : c->n + 1;
    for (int k = 0; k < N_COLUMNS; k++) c->values[k][c->n] = number_or_nan(obj, column_keys[k]);
    c->n++;
}

static int read_log(const char *text, log_columns *c, vit_error *err) {
    int lines = 1;
    for (const char *p = text; *p; p++) lines += *p == '\n';
    if (columns_alloc(c, lines, err) != 0) return -1;
    for (const char *line = text; *line;) {
        const char *end = strchr(line, '\n');
        const size_t len = end ? (size_t)(end - line) : strlen(line);
        cJSON *obj = cJSON_ParseWithLength(line, len);
        if (cJSON_IsObject(obj)) add_record(c, obj);
        cJSON_Delete(obj);
        line += len + (end != NULL);
    }
    return 0;
}

static int column_has_data(const log_columns *c, int k) {
    for (int i = 0; i < c->n; i++)
        if (isfinite(c->values[k][i])) return 1;
    return 0;
}

static plot_series series(const log_columns *c, int k, const char *name, uint8_t r, uint8_t g,
                          uint8_t b) {
    return (plot_series){
        .name = name, .rgb = {r, g, b}, .n = c->n, .x = c->epoch, .y = c->values[k]};
}

static plot_panel panel(const char *title, const plot_series *s, int n, plot_range y) {
    return (plot_panel){
        .title = title, .x_label = "epoch", .series = s, .n_series = n, .y = y, .x_integer = 1};
}

int train_curves_draw(const char *log_text, image_u8 *out, vit_error *err) {
    log_columns c;
    if (read_log(log_text, &c, err) != 0) return -1;
    /* matplotlib's first colours: train blue, validation orange; the error rates green, red */
    const plot_series loss[2] = {series(&c, TRAIN_LOSS, "train", 31, 119, 180),
                                 series(&c, VAL_LOSS, "validation", 255, 127, 14)};
    const plot_series top1[2] = {series(&c, TRAIN_TOP1, "train", 31, 119, 180),
                                 series(&c, VAL_TOP1, "validation", 255, 127, 14)};
    const plot_series rates[2] = {series(&c, VAL_CER, "CER", 44, 160, 44),
                                  series(&c, VAL_WER, "WER", 214, 39, 40)};
    const plot_panel panels[3] = {panel("loss", loss, 2, (plot_range){0}),
                                  panel("top-1", top1, 2, (plot_range){1, 1, 0, 1}),
                                  panel("error rate", rates, 2, (plot_range){.lo_fixed = 1})};
    const int n = column_has_data(&c, VAL_CER) || column_has_data(&c, VAL_WER) ? 3 : 2;
    const int rc = plot_draw(panels, n, TRAIN_CURVES_WIDTH, TRAIN_CURVES_HEIGHT, out, err);
    columns_free(&c);
    return rc;
}

int train_curves_write(const char *log_text, const char *path, vit_error *err) {
    image_u8 img;
    if (train_curves_draw(log_text, &img, err) != 0) return -1;
    const int rc = image_write_png(path, &img, err);
    image_free(&img);
    return rc;
}
