/* open_clip_config.json: the input is an open_clip folder's config (no config.json beside it),
 * read as both towers' configurations and as the image tower's preprocess_cfg; then the output
 * shape. */
#include "image/image.h"
#include "tests/fuzz/fuzz_input.h"
#include "vit/model/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_write("open_clip_config.json", data, size);
    model_config cfg;
    vit_error err;
    if (model_config_load_tower(fuzz_dir(), TOWER_TEXT, &cfg, &err) == 0) model_config_free(&cfg);
    if (model_config_load_tower(fuzz_dir(), TOWER_IMAGE, &cfg, &err) != 0) return 0;
    if (!cfg.open_clip) abort(); /* the folder has no config.json: only open_clip's reader */
    const int image_size = cfg.image_size, channels = cfg.num_channels;
    model_config_free(&cfg);
    preprocess_config pc;
    if (preprocess_config_read(fuzz_dir(), image_size, channels, &pc, &err) != 0) return 0;
    int c, h, w;
    preprocess_output_shape(&pc, &c, &h, &w);
    if (c < 1 || h < 1 || w < 1) abort(); /* a shape no tensor can have */
    return 0;
}
