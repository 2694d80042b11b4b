#ifndef VIT_CHECKPOINT_H
#define VIT_CHECKPOINT_H

/* Writing model directories that bin/vit, transformers and PyTorch read: config.json
 * (ViTForImageClassification, a DeiT class, or BertForSequenceClassification, docs/SPEC.md §1),
 * model.safetensors (docs/SPEC.md §2 names, float32, metadata {"format": "pt"}), and for a ViT or a
 * DeiT preprocessor_config.json (the evaluation transform), for a BERT the tokenizer files. Every
 * file is written to a temporary name and renamed into place, so a crash never leaves a
 * half-written file. */

#include "image/image.h"
#include "vit/base/error.h"
#include "vit/model/params.h"
#include "vit/io/safetensors.h"

/* config.json text for a ViT, a DeiT or a BERT (caller frees). Dropout probabilities go to
 * hidden_dropout_prob and attention_probs_dropout_prob (training-time only, as in HF). */
char *model_config_json(const model_config *cfg, float hidden_dropout, float attention_dropout);
/* preprocessor_config.json text (ViTImageProcessor fields; caller frees). */
char *preprocess_config_json(const preprocess_config *pp);

/* The tensors of a model as safetensors entries with their file names ("vit."/"deit." prefix where
 * docs/SPEC.md §2 has it); absent tensors (no qkv bias) are left out. names must hold
 * m->num_entries buffers of 128 bytes; entries m->num_entries. Returns the number of entries. block
 * supplies the data (m->params, or another block of the same layout such as optimizer moments). */
int model_st_entries(const model *m, const float *block, st_entry *entries, char (*names)[128]);

/* path (a model.safetensors) with m's tensors as the file stores them: names as
 * model_st_entries gives them, GPT-2's Conv1D weights transposed back to [in, out], float32,
 * metadata {"format": "pt"}; then the n_extra entries `extra` as they are (a checkpoint's tensors
 * that m does not hold, such as an unused pooler, kept so the file stays complete). */
int model_save_weights(const char *path, const model *m, const st_entry *extra, int n_extra,
                       vit_error *err);

/* MODEL_DIR/{config.json, model.safetensors}, and for a ViT preprocessor_config.json from pp (a
 * BERT's pp is ignored: its tokenizer files are written once, by tokenizer_files_save); MODEL_DIR
 * is created if missing. */
int model_save(const char *dir, const model *m, const preprocess_config *pp, float hidden_dropout,
               float attention_dropout, vit_error *err);

/* The tokenizer files of a text model in dir: either copied from the model directory from_dir
 * (whichever it has, as tokenizer_files_copy: tokenizer.json, vocab.txt, vocab.json and
 * merges.txt, the SentencePiece models, their settings), or, with
 * from_dir NULL, vocab_file copied to vocab.txt beside a tokenizer_config.json for a lower-casing
 * BertTokenizer (bert-base-uncased's settings) cut at max_len tokens. */
int tokenizer_files_save(const char *dir, const char *from_dir, const char *vocab_file, int max_len,
                         vit_error *err);
/* That tokenizer_config.json's text (malloc'ed; NULL when out of memory). */
char *tokenizer_default_config(int max_len);

/* config.json + model.safetensors from a model directory: every tensor by its name, of the
 * shape config.json implies, converted to float32. */
int model_load(model *m, const char *model_dir, vit_error *err);
/* The same for one tower of a joint model (CLIP, SigLIP: TOWER_IMAGE or TOWER_TEXT; a ViT, DeiT or
 * BERT folder's one model whatever is asked). */
int model_load_tower(model *m, const char *model_dir, config_tower tower, vit_error *err);
/* model_load with the weight matrices left in the file: model_prepare reads each as it prepares
 * it (and model_prepare_released hands it back at once), model_read_rest the others; every other
 * tensor is read now. A model for inference then never holds all its float weights at once (nor
 * the file beside them). */
int model_load_lazy(model *m, const char *model_dir, vit_error *err);
/* model_load_lazy for one tower (a text model's: vit_text_params.inference_only). */
int model_load_tower_lazy(model *m, const char *model_dir, config_tower tower, vit_error *err);

/* A copy of model directory in_dir in out_dir (created if missing; not in_dir itself) with every
 * float tensor of model.safetensors stored as dtype (ST_F32, ST_F16 or ST_BF16, rounded to
 * nearest even), the other tensors and the metadata as they are, and config.json,
 * preprocessor_config.json, generation_config.json and the tokenizer files (WordPiece, byte-level
 * BPE, SentencePiece, with their settings) copied. A sentence-transformers folder (modules.json)
 * is copied whole: its Transformer module converted so where modules.json puts it, the folder's
 * own files and every module folder copied, a module's weights (a Dense's) converted too. */
int model_dir_convert(const char *in_dir, const char *out_dir, st_dtype dtype, vit_error *err);
/* The mean of n >= 2 models' weights (a uniform "model soup": models fine-tuned from one starting
 * point, averaged, often classify better than each) in out_dir (created if missing; none of the
 * inputs): every float tensor averaged (summed in double) and stored as dtype, every other tensor
 * the same bytes in every model and copied; the other files copied from in_dirs[0]. Every model
 * must have the same tensors with the same shapes: otherwise an error naming the model and the
 * tensor, and no weights written. Sentence-transformers folders: their Transformer modules
 * averaged so, and each module's weights (a Dense's) over the same module of every folder. */
int model_dir_average(const char *const *in_dirs, int n, const char *out_dir, st_dtype dtype,
                      vit_error *err);
/* in_dir/name copied to out_dir/name byte for byte (atomically); a missing source is an error only
 * when required. */
int model_dir_copy_file(const char *in_dir, const char *out_dir, const char *name, int required,
                        vit_error *err);
/* The tokenizer files of in_dir (vocab.txt, vocab.json, merges.txt, the SentencePiece models,
 * added_tokens.json, tokenizer_config.json, special_tokens_map.json: those it has) into out_dir. */
int tokenizer_files_copy(const char *in_dir, const char *out_dir, vit_error *err);

/* A new VisionEncoderDecoder's decoder: a TrOCRForCausalLM of this shape (gelu, learned
 * positions, layernorm_embedding, no embedding scale, the output projection tied to the token
 * embeddings; cross_attention_hidden_size the encoder's width when it differs from the decoder's,
 * as trocr-small's), the token ids its tokenizer has (the start token: eos, as TrOCR's). */
typedef struct {
    int layers, hidden, heads, ffn, positions, vocab;
    int pad_id, bos_id, eos_id, encoder_hidden;
    int image_height, image_width; /* > 0: the encoder's new input size (image_size [h, w]) */
} ved_decoder_spec;
/* config.json text of the VisionEncoderDecoderModel with encoder_json (a ViT or DeiT folder's
 * config.json text) as its encoder and d's decoder, or NULL (unreadable encoder_json, out of
 * memory); generation_config.json text for it (greedy, max_length the positions). Caller frees. */
char *ved_config_json(const char *encoder_json, const ved_decoder_spec *d);
char *ved_generation_config_json(const ved_decoder_spec *d);
/* pp made to resize to exactly height x width (bilinear, ViTImageProcessor's default; no crop),
 * or with keep_aspect NougatImageProcessor's steps to that size (crop margin, short side,
 * thumbnail, pad), then rescale by 1/255 and normalise with its mean and std: a new image-to-text
 * model's input. */
void resize_preprocess_config(preprocess_config *pp, int height, int width, int keep_aspect);

/* Every file of model directory in_dir but its weights (config.json, preprocessor_config.json,
 * generation_config.json, the tokenizer files: those model_dir_convert copies) into out_dir,
 * byte for byte; config.json is required. */
int model_dir_copy_files(const char *in_dir, const char *out_dir, vit_error *err);
/* MODEL_DIR's preprocessing: preprocessor_config.json read against config.json's image_size and
 * num_channels (preprocess_config_read). */
int model_dir_load_preprocess(const char *dir, preprocess_config *cfg, vit_error *err);

#endif
