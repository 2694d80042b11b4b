/* Writes examples/lines: six 64x64 pictures of short texts in the 5x7 font (a word per line, each
 * picture its own colour over a pale tint of it) and their labels.tsv, the folder README's
 * image-to-text fine-tuning example trains on (tests/test_ved_train_run.c draws the same kind).
 *   make build/tools/example_lines && build/tools/example_lines examples/lines */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "image/draw.h"

#define LINES 6

static const char *const texts[LINES] = {"the cat sat",      "a red dog",        "the mat",
                                         "a cat in the mat", "dog sat on a mat", "red of the dog"};
static const uint8_t colours[LINES][3] = {{200, 20, 20}, {20, 150, 30},  {30, 40, 200},
                                          {160, 120, 0}, {150, 20, 160}, {0, 130, 140}};

/* Picture i into dir/s<i>.png. */
static int write_picture(const char *dir, int i) {
    image_u8 img = {.width = 64, .height = 64, .channels = 3, .pixels = malloc(64 * 64 * 3)};
    if (!img.pixels) return fprintf(stderr, "example_lines: out of memory\n"), -1;
    for (int p = 0; p < 64 * 64 * 3; p++) img.pixels[p] = 255 - (255 - colours[i][p % 3]) / 3;
    char words[64], path[4200];
    snprintf(words, sizeof words, "%s", texts[i]);
    int y = 4;
    for (char *w = strtok(words, " "); w; w = strtok(NULL, " "), y += 10)
        draw_text(&img, 4 + 3 * i, y, 1, w, colours[i]);
    snprintf(path, sizeof path, "%s/s%d.png", dir, i);
    vit_error err = {0};
    const int rc = image_write_png(path, &img, &err);
    if (rc != 0) fprintf(stderr, "example_lines: %s\n", err.msg);
    image_free(&img);
    return rc;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: example_lines DIR (an existing folder)\n");
        return 2;
    }
    char path[4200];
    snprintf(path, sizeof path, "%s/labels.tsv", argv[1]);
    FILE *tsv = fopen(path, "w");
    if (!tsv) return perror(path), 1;
    for (int i = 0; i < LINES; i++) {
        if (write_picture(argv[1], i) != 0) return fclose(tsv), 1;
        fprintf(tsv, "s%d.png\t%s\n", i, texts[i]);
    }
    return fclose(tsv) != 0 ? (perror(path), 1) : 0;
}
