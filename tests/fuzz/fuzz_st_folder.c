/* A sentence-transformers folder (st_pipeline_load): the input's parts, split at 0xff bytes, are
 * modules.json, 1_Pooling/config.json, 2_Dense/config.json, sentence_bert_config.json and
 * config_sentence_transformers.json; 2_Dense/model.safetensors is a fixed valid file (a 32 -> 16
 * linear layer with a bias). Whatever the files say, the folder is refused or its pipeline is
 * consistent: modes set, widths chained from the pooling through each Dense, every prompt and the
 * default prompt found, the similarity function one of the four. */
#include "tests/fuzz/fuzz_input.h"
#include "vit/io/safetensors.h"
#include "vit/io/st_folder.h"

static void write_dense_weights(void) {
    static int done;
    if (done) return;
    static float w[16 * 32], b[16];
    char path[256];
    snprintf(path, sizeof path, "%s/2_Dense/model.safetensors", fuzz_dir());
    st_entry e[2] = {{.name = "linear.weight", .ndim = 2, .shape = {16, 32}, .data = w},
                     {.name = "linear.bias", .ndim = 1, .shape = {16}, .data = b}};
    vit_error err;
    if (st_write_f32(path, e, 2, &err) != 0) abort();
    done = 1;
}

static void check(const st_pipeline *p) {
    if (!p->modes || p->word_dim < 1) abort();
    int width = st_pooled_dim(p);
    for (int i = 0; i < p->nsteps; i++) {
        if (p->steps[i].kind != ST_STEP_DENSE) continue;
        const st_dense *d = &p->dense[p->steps[i].dense];
        if (d->in != width || !d->w) abort(); /* a Dense not fed what it takes */
        width = d->out;
    }
    if (width != st_output_dim(p)) abort();
    for (int i = 0; i < p->nprompts; i++)
        if (!p->prompt_names[i] || !p->prompt_texts[i]) abort();
    if (p->default_prompt && !st_prompt(p, p->default_prompt)) abort();
    /* similarity_fn_name: none, or one of SentenceTransformer.similarity's four */
    if (p->similarity[0] && strcmp(p->similarity, "cosine") && strcmp(p->similarity, "dot") &&
        strcmp(p->similarity, "euclidean") && strcmp(p->similarity, "manhattan"))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const char *const files[] = {"modules.json", "1_Pooling/config.json",
                                        "2_Dense/config.json", "sentence_bert_config.json",
                                        "config_sentence_transformers.json"};
    char sub[256];
    snprintf(sub, sizeof sub, "%s/1_Pooling", fuzz_dir());
    mkdir(sub, 0700);
    snprintf(sub, sizeof sub, "%s/2_Dense", fuzz_dir());
    mkdir(sub, 0700);
    write_dense_weights();
    const uint8_t *rest = data;
    size_t left = size;
    for (size_t f = 0; f < sizeof files / sizeof *files; f++) {
        const uint8_t *part, *after;
        size_t npart, nafter;
        fuzz_split(rest, left, 0xff, &part, &npart, &after, &nafter);
        fuzz_write(files[f], part, npart);
        rest = after, left = nafter;
    }
    st_pipeline p;
    vit_error err;
    if (st_pipeline_load(fuzz_dir(), &p, &err) != 0) return 0;
    check(&p);
    st_pipeline_free(&p);
    return 0;
}
