/* A new image-to-text model over a ViT or DeiT folder: its encoder as it was trained, and a fresh
 * TrOCR decoder (`vit train --init VIT_DIR --tokenizer DIR`) initialised as transformers'
 * TrOCRPreTrainedModel._init_weights does: linear and embedding weights normal(0, init_std =
 * 0.02), the padding token's row and every bias zero, LayerNorms weight 1 and bias 0. The folder
 * it makes is a VisionEncoderDecoderModel folder in Hugging Face's layout from the first
 * checkpoint on. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vit/base/file.h"
#include "vit/base/rng.h"
#include "vit/io/model_dir.h"
#include "patch/patch.h"
#include "vit/train/trainer.h"

/* The decoder o asks for, for tok, over an encoder of encoder_hidden. */
static int decoder_spec(const trainer *t, const text_tokenizer *tok, int encoder_hidden,
                        ved_decoder_spec *d, vit_error *err) {
    const train_options *o = &t->o;
    *d = (ved_decoder_spec){.layers = o->dec_layers,
                            .hidden = o->dec_hidden,
                            .heads = o->dec_heads,
                            .ffn = o->dec_mlp,
                            .positions = o->max_len ? o->max_len : 128,
                            .vocab = text_tokenizer_vocab_size(tok),
                            .pad_id = text_tokenizer_pad_id(tok),
                            .bos_id = text_tokenizer_bos_id(tok),
                            .eos_id = text_tokenizer_eos_id(tok),
                            .encoder_hidden = encoder_hidden,
                            .image_height = o->enc_height,
                            .image_width = o->enc_width};
    if ((o->enc_height > 0) != (o->enc_width > 0))
        return vit_fail(err, "--input-height and --input-width go together");
    if (o->keep_aspect && o->enc_height <= 0)
        return vit_fail(err, "--keep-aspect needs --input-height and --input-width (the size each "
                             "line is fitted into)");
    if (d->hidden % d->heads != 0)
        return vit_fail(err, "--decoder-hidden %d is not divisible by --decoder-heads %d",
                        d->hidden, d->heads);
    if (d->eos_id < 0 || d->pad_id < 0)
        return vit_fail(err, "%s: a decoder's tokenizer needs an end token and a pad token",
                        o->tokenizer_dir);
    return 0;
}

/* config.json of the new model (d: its decoder). */
static char *new_config(const trainer *t, const char *dir, const text_tokenizer *tok,
                        ved_decoder_spec *d, vit_error *err) {
    model_config image;
    if (model_config_load(dir, &image, err) != 0) return NULL;
    const int ok = image.kind == MODEL_VIT && image.family == FAMILY_PLAIN,
              width = image.hidden_size;
    model_config_free(&image);
    if (!ok)
        return vit_fail(err, "%s: neither a VisionEncoderDecoder nor a ViT or DeiT folder", dir),
               NULL;
    char path[4096];
    snprintf(path, sizeof path, "%s/config.json", dir);
    char *encoder = vit_read_file(path, 16 << 20, NULL, err), *text = NULL;
    if (!encoder || decoder_spec(t, tok, width, d, err) != 0) return free(encoder), NULL;
    if (!(text = ved_config_json(encoder, d)))
        vit_fail(err, "%s: not a JSON object, or out of memory", path);
    free(encoder);
    return text;
}

int trainer_resize_positions(model *enc, const model *from, const param_entry *e,
                             const param_entry *src, vit_error *err) {
    const int D = enc->cfg.hidden_size, S = config_special_tokens(&enc->cfg);
    const int P = enc->cfg.patch_size, n = from->cfg.image_size / P;
    if (from->cfg.image_width != from->cfg.image_size || src->numel != (size_t)(S + n * n) * D)
        return vit_fail(err, "%s: positions not on a square grid to resize", e->name);
    if (pos_embed_resize_rect(enc->params + e->offset, from->params + src->offset, S, n,
                              enc->cfg.image_size / P, enc->cfg.image_width / P, D,
                              GRID_BICUBIC) != 0)
        return vit_fail(err, "out of memory");
    return 0;
}

/* The encoder's tensors from the image model in dir, by name (the same in both layouts); the
 * positions resized for another input size. */
static int copy_encoder(model *enc, const char *dir, vit_error *err) {
    model from;
    if (model_load(&from, dir, err) != 0) return -1;
    int rc = 0;
    for (int i = 0; i < enc->num_entries && rc == 0; i++) {
        const param_entry *e = &enc->entries[i], *src = model_find_param(&from, e->name);
        if (e->absent) continue;
        const int positions = enc->params + e->offset == enc->pos_embed;
        if (src && !src->absent && positions && src->numel != e->numel)
            rc = trainer_resize_positions(enc, &from, e, src, err);
        else if (!src || src->absent || src->numel != e->numel)
            rc = vit_fail(err, "%s: no tensor %s of %zu values for the encoder", dir, e->name,
                          e->numel);
        else
            memcpy(enc->params + e->offset, from.params + src->offset, e->numel * sizeof(float));
    }
    model_free(&from);
    return rc;
}

static int is_norm(const char *name) {
    return strstr(name, "layer_norm") || strstr(name, "layernorm");
}

static void init_decoder(model *dec, uint64_t seed) {
    uint64_t st = rng_derive(seed, RNG_INIT, 1);
    const size_t D = (size_t)dec->cfg.hidden_size, len = strlen("weight");
    for (int i = 0; i < dec->num_entries; i++) {
        const param_entry *e = &dec->entries[i];
        float *p = dec->params + e->offset;
        const size_t n = strlen(e->name);
        const int weight = n >= len && strcmp(e->name + n - len, "weight") == 0;
        for (size_t j = 0; j < e->numel; j++)
            p[j] = !weight ? 0.0f : is_norm(e->name) ? 1.0f : (float)(0.02 * rng_normal(&st));
    }
    const int pad = dec->cfg.pad_token_id;
    if (pad >= 0 && pad < dec->cfg.vocab_size)
        memset(dec->word_emb + pad * D, 0, D * sizeof(float));
}

/* The image model's rescaling and normalisation, resizing to the new input size. */
static int write_resize_preprocessor(const trainer *t, const char *dir, const ved_decoder_spec *d,
                                     vit_error *err) {
    preprocess_config pp;
    if (model_dir_load_preprocess(dir, &pp, err) != 0) return -1;
    resize_preprocess_config(&pp, d->image_height, d->image_width, t->o.keep_aspect);
    char path[4096], *text = preprocess_config_json(&pp);
    if (!text) return vit_fail(err, "out of memory");
    trainer_path(t, path, sizeof path, "preprocessor_config.json");
    const int rc = write_file_atomic(path, text, strlen(text), err);
    free(text);
    return rc;
}

/* Process 0: the new folder's files beside the weights the checkpoints write. */
static int write_files(const trainer *t, const char *dir, const char *config,
                       const ved_decoder_spec *d, vit_error *err) {
    char path[4096];
    char *generation = ved_generation_config_json(d);
    if (!generation) return vit_fail(err, "out of memory");
    trainer_path(t, path, sizeof path, "generation_config.json");
    int rc = write_file_atomic(path, generation, strlen(generation), err);
    free(generation);
    trainer_path(t, path, sizeof path, "config.json");
    if (rc == 0) rc = write_file_atomic(path, config, strlen(config), err);
    if (rc == 0)
        rc = d->image_height
                 ? write_resize_preprocessor(t, dir, d, err)
                 : model_dir_copy_file(dir, t->o.out_dir, "preprocessor_config.json", 0, err);
    if (rc == 0) rc = tokenizer_files_copy(t->o.tokenizer_dir, t->o.out_dir, err);
    return rc;
}

int ved_new_towers(trainer *t, const char *dir, const text_tokenizer *tok, model *enc, model *dec,
                   vit_error *err) {
    ved_decoder_spec d;
    char *config = new_config(t, dir, tok, &d, err);
    if (!config) return -1;
    model_config ec, dc;
    int rc = model_config_parse_tower(config, "the new model's config.json", TOWER_IMAGE, &ec, err);
    if (rc == 0) rc = model_create(enc, &ec, err);
    if (rc == 0)
        rc = model_config_parse_tower(config, "the new model's config.json", TOWER_TEXT, &dc, err);
    if (rc == 0) rc = model_create(dec, &dc, err);
    if (rc == 0) rc = copy_encoder(enc, dir, err);
    if (rc == 0) init_decoder(dec, t->o.seed);
    if (rc == 0 && t->rank == 0) rc = write_files(t, dir, config, &d, err);
    if (rc == 0)
        trainer_info(t,
                     "a new decoder: %d layers of width %d (%d heads, feed-forward %d) for %s's "
                     "%d tokens, at most %d positions",
                     d.layers, d.hidden, d.heads, d.ffn, t->o.tokenizer_dir, d.vocab, d.positions);
    free(config);
    return rc;
}
