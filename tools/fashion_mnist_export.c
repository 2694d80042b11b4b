/* Writes Fashion-MNIST (Debian's dataset-fashion-mnist, IDX files compressed with gzip) as PNG
 * ImageFolders:
 *   fashion_mnist_export SRC_DIR OUT_DIR
 *   -> OUT_DIR/{train,test}/<class folder>/NNNNN.png (NNNNN: index in the split) and
 *      OUT_DIR/labels.txt, the ten label names in index order;
 *   fashion_mnist_export --sample N SRC_DIR OUT_DIR
 *   -> the first N test images, OUT_DIR/NNNNN_<class folder>.png (for make demo).
 * Folder names are the labels made filesystem-safe ("T-shirt/top" -> "T-shirt_top"); the
 * ImageFolder matching rules (and labels.txt) map them back. Everything is written under
 * OUT_DIR.tmp and renamed at the end, so OUT_DIR is either complete or absent; an existing OUT_DIR
 * is left alone. */
#include <errno.h>
#include <png.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

static const char *const labels[10] = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                       "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};
static const char *const folders[10] = {"T-shirt_top", "Trouser",   "Pullover", "Dress",
                                        "Coat",        "Sandal",    "Shirt",    "Sneaker",
                                        "Bag",         "Ankle_boot"};

static uint32_t be32(const uint8_t *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* The whole decompressed IDX file with its header checked: magic 0x0000080N (N = dims),
 * dims[0..n). Returns the data after the header, or NULL after printing why. */
static uint8_t *read_idx(const char *path, int ndims, uint32_t *dims, uint8_t **whole) {
    gzFile f = gzopen(path, "rb");
    if (!f) {
        fprintf(stderr, "fashion_mnist_export: %s: %s\n", path, strerror(errno ? errno : ENOENT));
        return NULL;
    }
    size_t cap = 1 << 20, n = 0;
    uint8_t *buf = malloc(cap);
    int got;
    while (buf && (got = gzread(f, buf + n, (unsigned)(cap - n))) > 0) {
        n += (size_t)got;
        if (n == cap) {
            uint8_t *grown = realloc(buf, cap *= 2);
            if (!grown) free(buf);
            buf = grown;
        }
    }
    int errnum = 0;
    const char *msg = gzerror(f, &errnum);
    gzclose(f);
    if (!buf || errnum < 0) {
        fprintf(stderr, "fashion_mnist_export: %s: %s\n", path, buf ? msg : "out of memory");
        free(buf);
        return NULL;
    }
    size_t need = 4 + 4 * (size_t)ndims, items = 1;
    if (n < need || be32(buf) != (0x800u | (uint32_t)ndims)) {
        fprintf(stderr, "fashion_mnist_export: %s: not an IDX file of %d dimensions\n", path,
                ndims);
        free(buf);
        return NULL;
    }
    for (int d = 0; d < ndims; d++) items *= dims[d] = be32(buf + 4 + 4 * d);
    if (n != need + items) {
        fprintf(stderr, "fashion_mnist_export: %s: %zu bytes of data, expected %zu\n", path,
                n - need, items);
        free(buf);
        return NULL;
    }
    *whole = buf;
    return buf + need;
}

static int make_dir(const char *path) {
    if (mkdir(path, 0777) == 0 || errno == EEXIST) return 0;
    fprintf(stderr, "fashion_mnist_export: %s: %s\n", path, strerror(errno));
    return -1;
}

static int write_grey_png(const char *path, const uint8_t *pixels, uint32_t width,
                          uint32_t height) {
    png_image img;
    memset(&img, 0, sizeof img);
    img.version = PNG_IMAGE_VERSION;
    img.width = width;
    img.height = height;
    img.format = PNG_FORMAT_GRAY;
    if (png_image_write_to_file(&img, path, 0, pixels, 0, NULL)) return 0;
    fprintf(stderr, "fashion_mnist_export: %s: %s\n", path, img.message);
    return -1;
}

/* --sample N (make demo): the first N test images as OUT_DIR/NNNNN_<folder>.png, the true label
 * in the name. */
static int export_sample(const char *src, const char *out, long n) {
    char path[4096];
    uint32_t idims[3], ldims[1];
    uint8_t *iwhole = NULL, *lwhole = NULL;
    snprintf(path, sizeof path, "%s/t10k-images-idx3-ubyte.gz", src);
    const uint8_t *images = read_idx(path, 3, idims, &iwhole);
    snprintf(path, sizeof path, "%s/t10k-labels-idx1-ubyte.gz", src);
    const uint8_t *labs = images ? read_idx(path, 1, ldims, &lwhole) : NULL;
    int rc = images && labs && make_dir(out) == 0 ? 0 : -1;
    for (uint32_t i = 0; rc == 0 && i < idims[0] && i < ldims[0] && i < (uint32_t)n; i++) {
        snprintf(path, sizeof path, "%s/%05u_%s.png", out, i,
                 labs[i] < 10 ? folders[labs[i]] : "?");
        rc = write_grey_png(path, images + (size_t)i * idims[1] * idims[2], idims[2], idims[1]);
    }
    free(iwhole);
    free(lwhole);
    return rc;
}

static int export_split(const char *src, const char *images_name, const char *labels_name,
                        const char *out, const char *split) {
    char path[4096];
    uint32_t idims[3], ldims[1];
    uint8_t *iwhole = NULL, *lwhole = NULL;
    snprintf(path, sizeof path, "%s/%s", src, images_name);
    const uint8_t *images = read_idx(path, 3, idims, &iwhole);
    snprintf(path, sizeof path, "%s/%s", src, labels_name);
    const uint8_t *labs = images ? read_idx(path, 1, ldims, &lwhole) : NULL;
    int rc = images && labs ? 0 : -1;
    if (rc == 0 && ldims[0] != idims[0]) {
        fprintf(stderr, "fashion_mnist_export: %s: %u labels for %u images\n", path, ldims[0],
                idims[0]);
        rc = -1;
    }
    snprintf(path, sizeof path, "%s/%s", out, split);
    if (rc == 0) rc = make_dir(path);
    for (int c = 0; c < 10 && rc == 0; c++) {
        snprintf(path, sizeof path, "%s/%s/%s", out, split, folders[c]);
        rc = make_dir(path);
    }
    const size_t per = rc == 0 ? (size_t)idims[1] * idims[2] : 0;
    for (uint32_t i = 0; rc == 0 && i < idims[0]; i++) {
        if (labs[i] > 9) {
            fprintf(stderr, "fashion_mnist_export: %s: label %u of image %u outside 0..9\n",
                    labels_name, labs[i], i);
            rc = -1;
            break;
        }
        snprintf(path, sizeof path, "%s/%s/%s/%05u.png", out, split, folders[labs[i]], i);
        if (write_grey_png(path, images + i * per, idims[2], idims[1]) != 0) rc = -1;
    }
    if (rc == 0) printf("%s: %u images\n", split, idims[0]);
    free(iwhole);
    free(lwhole);
    return rc;
}

int main(int argc, char **argv) {
    if (argc == 5 && strcmp(argv[1], "--sample") == 0) {
        const long n = strtol(argv[2], NULL, 10);
        if (n < 1 || n > 10000) return fprintf(stderr, "--sample takes 1..10000\n"), 2;
        return export_sample(argv[3], argv[4], n) == 0 ? 0 : 1;
    }
    if (argc != 3) {
        fprintf(stderr, "usage: %s SRC_DIR OUT_DIR\n       %s --sample N SRC_DIR OUT_DIR\n",
                argv[0], argv[0]);
        return 2;
    }
    const char *src = argv[1], *out = argv[2];
    struct stat st;
    if (stat(out, &st) == 0) {
        printf("%s exists; nothing to do\n", out);
        return 0;
    }
    char tmp[2048], path[4096];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp", out) >= sizeof tmp) {
        fprintf(stderr, "fashion_mnist_export: %s: path too long\n", out);
        return 2;
    }
    if (make_dir(tmp) != 0) return 1;
    int rc =
        export_split(src, "train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", tmp, "train");
    if (rc == 0)
        rc = export_split(src, "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz", tmp,
                          "test");
    if (rc == 0) {
        snprintf(path, sizeof path, "%s/labels.txt", tmp);
        FILE *f = fopen(path, "w");
        for (int c = 0; f && c < 10; c++) fprintf(f, "%s\n", labels[c]);
        if (!f || fclose(f) != 0) {
            fprintf(stderr, "fashion_mnist_export: %s: %s\n", path, strerror(errno));
            rc = -1;
        }
    }
    if (rc == 0 && rename(tmp, out) != 0) {
        fprintf(stderr, "fashion_mnist_export: %s: %s\n", out, strerror(errno));
        rc = -1;
    }
    if (rc != 0)
        fprintf(stderr, "fashion_mnist_export: incomplete output left in %s\n", tmp);
    else
        printf("wrote %s\n", out);
    return rc == 0 ? 0 : 1;
}
