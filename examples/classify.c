/* The smallest program on libvit: the top 3 labels of an image.
 *   cc classify.c $(pkg-config --cflags --libs vit) -o classify && ./classify MODEL_DIR IMAGE */
#include <stdio.h>
#include <vit.h>

int main(int argc, char **argv) {
    if (argc != 3) return fprintf(stderr, "usage: %s MODEL_DIR IMAGE\n", argv[0]), 2;
    vit_error err;
    vit_context *ctx = vit_load(argv[1], NULL, &err);
    if (!ctx) return fprintf(stderr, "%s\n", err.msg), 1;
    vit_prediction top[3];
    int n = vit_classify_file(ctx, argv[2], 3, top, &err);
    if (n < 0) fprintf(stderr, "%s\n", err.msg);
    for (int i = 0; i < n; i++) printf("%.4f  %s\n", top[i].prob, top[i].label);
    vit_free(ctx);
    return n < 0;
}
