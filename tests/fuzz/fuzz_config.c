/* config.json and preprocessor_config.json: the input up to the first 0xff byte is a config.json
 * (parsed as a model's, and as a joint model's text tower), the rest a preprocessor_config.json
 * read against it; then --size on top (a size taken from the input's first byte) and the output
 * shape. */
#include "image/image.h"
#include "tests/fuzz/fuzz_input.h"
#include "vit/model/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const uint8_t *config, *prep;
    size_t nconfig, nprep;
    fuzz_split(data, size, 0xff, &config, &nconfig, &prep, &nprep);
    char *json = malloc(nconfig + 1);
    if (!json) return 0;
    memcpy(json, config, nconfig);
    json[nconfig] = 0;
    model_config cfg;
    vit_error err;
    if (model_config_parse_tower(json, "config.json", TOWER_TEXT, &cfg, &err) == 0)
        model_config_free(&cfg); /* a joint model's text tower too */
    const int ok = model_config_parse(json, "config.json", &cfg, &err) == 0;
    free(json);
    if (!ok) return 0;
    const int image_size = cfg.image_size, channels = cfg.num_channels;
    model_config_free(&cfg);
    fuzz_write("preprocessor_config.json", prep, nprep);
    preprocess_config pc;
    if (preprocess_config_read(fuzz_dir(), image_size, channels, &pc, &err) != 0) return 0;
    int c, h, w;
    preprocess_output_shape(&pc, &c, &h, &w);
    if (c < 1 || h < 0 || w < 0) abort(); /* a shape no tensor can have */
    preprocess_config_set_size(&pc, 1 + (size ? data[0] : 0) * 4);
    preprocess_output_shape(&pc, &c, &h, &w);
    if (c < 1 || h < 0 || w < 0) abort();
    return 0;
}
