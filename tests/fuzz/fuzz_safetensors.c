/* safetensors: the header and the tensor table (st_open validates every offset, shape and dtype),
 * then every float tensor converted as a model load would; the same through st_open_lazy, each
 * tensor read from the file as it is needed. */
#include "tests/fuzz/fuzz_input.h"
#include "vit/io/safetensors.h"

static void convert_all(st_file *f) {
    vit_error err;
    for (int i = 0; i < f->count; i++) {
        const st_tensor *t = &f->tensors[i];
        if (t->numel > (1 << 20)) continue; /* valid, only slow */
        if (st_read(f, t, &err) != 0) continue;
        float *out = malloc(sizeof(float) * (size_t)(t->numel ? t->numel : 1));
        if (out) st_to_f32(f, t, out, &err);
        free(out);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    st_file f;
    vit_error err;
    const char *path = fuzz_file(0, data, size);
    if (st_open_lazy(path, &f, &err) == 0) {
        convert_all(&f);
        st_close(&f);
    }
    if (st_open(path, &f, &err) != 0) return 0;
    convert_all(&f);
    char buf[64];
    st_metadata(&f, "format", buf, sizeof buf, &err);
    st_find(&f, "classifier.weight");
    st_close(&f);
    return 0;
}
