/* pytorch_model.bin: the input both as a pickle for the restricted unpickler (tp_load, every
 * value it builds walked) and as a file for torch_bin_open (zip or legacy format, then every
 * tensor's bytes read and converted as a model load would). */
#include "tests/fuzz/fuzz_input.h"
#include "vit/io/torch_bin.h"
#include "vit/io/torch_pickle.h"

static void load_tensors(st_file *f) {
    vit_error err;
    for (int i = 0; i < f->count; i++) {
        const st_tensor *t = &f->tensors[i];
        if (t->numel > (1 << 20) || st_read(f, t, &err) != 0) continue;
        float *out = malloc(sizeof(float) * (size_t)(t->numel ? t->numel : 1));
        if (out) st_to_f32(f, t, out, &err);
        free(out);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    tp_arena arena = {0};
    tp_obj *result;
    size_t end;
    vit_error err;
    if (tp_load(data, size, "fuzz", &arena, &result, &end, &err) == 0) {
        if (end > size) abort();
        tp_dict_get(result, "little_endian");
    }
    tp_free(&arena);
    st_file f;
    if (torch_bin_open(fuzz_file(0, data, size), &f, &err) == 0) {
        load_tensors(&f);
        st_close(&f);
    }
    return 0;
}
