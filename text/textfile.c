#include "text/textfile.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *text_read_file(const char *path, size_t *size, vit_error *err) {
    FILE *f = fopen(path, "rb");
    if (!f) return vit_fail(err, "%s: %s", path, strerror(errno)), NULL;
    char *buf = NULL;
    long n = -1;
    if (fseek(f, 0, SEEK_END) == 0) n = ftell(f);
    if (n >= 0 && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n + 1)) != NULL &&
        fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    if (!buf) return vit_fail(err, "%s: cannot read the file", path), NULL;
    buf[n] = '\0';
    *size = (size_t)n;
    return buf;
}
