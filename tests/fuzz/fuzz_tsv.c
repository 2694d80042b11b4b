/* The TSV reader of text datasets: the class list of a whole file, then every line parsed
 * against it, as a sentence's line and as a pair's. */
#include <string.h>

#include "tests/fuzz/fuzz_input.h"
#include "vit/data/text_set.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char **names = NULL;
    int count = 0;
    vit_error err;
    if (text_tsv_classes(fuzz_file(0, data, size), 0, &names, &count, &err) != 0) {
        static const char *const fallback[] = {"negative", "positive"};
        names = NULL;
        count = 0;
        for (size_t at = 0; at < size;) { /* the lines against two labels */
            const uint8_t *eol = memchr(data + at, '\n', size - at);
            const size_t n = eol ? (size_t)(eol - data - at) + 1 : size - at;
            text_tsv_line line;
            char why[256];
            text_tsv_parse_line((const char *)data + at, n, fallback, 2, &line, why, sizeof why);
            text_tsv_parse_pair((const char *)data + at, n, fallback, 2, &line, why, sizeof why);
            at += n;
        }
        return 0;
    }
    for (size_t at = 0; at < size;) {
        const uint8_t *eol = memchr(data + at, '\n', size - at);
        const size_t n = eol ? (size_t)(eol - data - at) + 1 : size - at;
        text_tsv_line line;
        char why[256];
        if (text_tsv_parse_line((const char *)data + at, n, (const char *const *)names, count,
                                &line, why, sizeof why) == 1 &&
            (line.label < 0 || line.label >= count))
            abort(); /* a label out of range */
        const char *s = (const char *)data + at;
        if (text_tsv_parse_pair(s, n, (const char *const *)names, count, &line, why, sizeof why) ==
                1 &&
            (line.label < 0 || line.label >= count || line.text != s ||
             line.text_b < s + line.len || line.text_b + line.len_b > s + n))
            abort(); /* a label out of range, or a text outside the line */
        at += n;
    }
    for (int i = 0; i < count; i++) free(names[i]);
    free(names);
    return 0;
}
