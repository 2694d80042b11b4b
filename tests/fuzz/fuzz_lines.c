/* Line lists: labels (--labels), class maps (--class-map), vocab.txt's lines; every flag. */
#include "tests/fuzz/fuzz_input.h"
#include "vit/base/strlist.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fuzz_file(0, data, size);
    for (int flags = 0; flags < 4; flags++) {
        strlist l;
        vit_error err;
        if (strlist_read(&l, path, 1 << 20, flags, &err) != 0) continue;
        size_t total = 0;
        for (int i = 0; i < l.count; i++) total += l.lengths[i] + (l.lines[i][0] != 0);
        (void)total;
        strlist_free(&l);
    }
    return 0;
}
