/* safetensors: the header and the tensor table (st_open validates every offset, shape and dtype),
 * then every float tensor converted as a model load would. */
#include "tests/fuzz/fuzz_input.h"
#include "vit/io/safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    st_file f;
    vit_error err;
    if (st_open(fuzz_file(0, data, size), &f, &err) != 0) return 0;
    for (int i = 0; i < f.count; i++) {
        const st_tensor *t = &f.tensors[i];
        if (t->numel > (1 << 20)) continue; /* valid, only slow */
        float *out = malloc(sizeof(float) * (size_t)(t->numel ? t->numel : 1));
        if (out) st_to_f32(&f, t, out, &err);
        free(out);
    }
    char buf[64];
    st_metadata(&f, "format", buf, sizeof buf, &err);
    st_find(&f, "classifier.weight");
    st_close(&f);
    return 0;
}
