#ifndef VIT_H
#define VIT_H

/* vit: Vision Transformer (and BERT) inference from Hugging Face model directories, in C.
 *
 *   #include <vit.h>
 *
 *   vit_error err;
 *   vit_context *ctx = vit_load("models/vit-tiny-in1k", NULL, &err);   // NULL: default params
 *   if (!ctx) return fprintf(stderr, "%s\n", err.msg), 1;
 *   vit_prediction top[3];
 *   int n = vit_classify_file(ctx, "photo.jpg", 3, top, &err);
 *   for (int i = 0; i < n; i++) printf("%.4f  %s\n", top[i].prob, top[i].label);
 *   vit_context *more = vit_share(ctx, &err);   // the same weights, for another thread
 *   ...
 *   vit_free(more);
 *   vit_free(ctx);
 *
 * Build: cc app.c $(pkg-config --cflags --libs vit)
 *
 * Errors: a function that fails returns -1 (or NULL) and fills *err (which may be NULL) with one
 * line naming the file and the problem. The library never prints and never exits.
 *
 * Threads: a context is a model's weights, read-only once loaded, and the state of one
 * computation (activations, buffers). vit_share makes another context over the same weights
 * with a state of its own: contexts sharing weights may compute at the same time on different
 * threads, and the weights stay in memory until the last of them is freed, in any order. One
 * context runs one computation at a time: give each thread its own (vit_share costs no second
 * copy of the weights), or share one behind a lock. A context computes with its own thread count
 * (params.threads), applied on every call whichever thread makes it, and restored afterwards;
 * contexts computing at once should split the cores between them (their threads summing to the
 * cores at most). vit_preprocess_* may run on any thread at any time, concurrently with
 * anything. The same holds for text contexts (vit_text_share).
 *
 * Versions 0.x: the API may still change between minor versions (the soname says so). */

#include <stddef.h>
#include <stdint.h>

#include "vit_error.h" /* vit_error */

#ifdef __cplusplus
extern "C" {
#endif

/* What the shared library exports: these functions and nothing else. */
#if defined(__GNUC__) || defined(__clang__)
#define VIT_API __attribute__((visibility("default")))
#else
#define VIT_API
#endif

#define VIT_VERSION_MAJOR 0
#define VIT_VERSION_MINOR 1
#define VIT_VERSION_PATCH 0

/* "0.1.0": the library's version (may differ from the header's VIT_VERSION_* if linked against
 * another build). */
VIT_API const char *vit_version(void);

/* How the linear layers run. The backend: oneDNN where the build has it (the faster), else
 * OpenBLAS (the reference). The precision: fp32; bf16 (weights and activations rounded to
 * bfloat16, fp32 accumulation: oneDNN's bf16 kernels where the CPU has them, else the same
 * numbers computed in fp32, with no speed-up); int8 (oneDNN: weights per output channel at load,
 * activations per token at run time, as ONNX Runtime's dynamic quantisation). LayerNorm, softmax
 * and the residual stream stay fp32. */
typedef enum { VIT_BACKEND_DEFAULT, VIT_BACKEND_OPENBLAS, VIT_BACKEND_ONEDNN } vit_backend;
typedef enum { VIT_FP32, VIT_BF16, VIT_INT8 } vit_precision;

/* ---- image classification ---- */

typedef struct vit_context vit_context;

typedef struct {
    int threads;        /* compute threads; 0 = OMP_NUM_THREADS, else one per core */
    int max_batch;      /* largest batch vit_forward will be given (buffers are sized once) */
    int image_size;     /* 0 = the model's image_size (DINOv2: its preprocessor's output size, as
                         * Hugging Face runs it, a rectangle too: vit_input_shape says it); else
                         * run at this resolution (the position embeddings are interpolated as
                         * Hugging Face's interpolate_pos_encoding) */
    int64_t max_pixels; /* decoder limit; 0 = 100 megapixels */
    vit_backend backend;
    vit_precision precision;
    int exif_orientation; /* 1 (the default): images are turned upright as their EXIF orientation
                           * says, as Hugging Face pipelines do (Pillow's ImageOps.exif_transpose);
                           * 0: Pillow's raw pixels, as timm's datasets read them */
    int inference_only;   /* 1: each weight matrix the prepared model holds a copy of (oneDNN's
                           * reordered layout, bf16, int8) is released once copied, so that it is
                           * not in memory twice; vit_explain then refuses the model. 0 (the
                           * default): kept */
} vit_params;

VIT_API vit_params vit_default_params(void);

/* The folder a model reference names, into dir (size bytes): a folder as it is (a name that is
 * also a folder is the folder, as transformers reads it); else org/name or org/name@REVISION (a
 * branch, tag or 40-hex commit; "main" when none is given) in the Hugging Face cache as
 * huggingface_hub writes it: $HF_HUB_CACHE, else $HF_HOME/hub, else
 * $XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub; refs/REVISION gives the commit,
 * snapshots/COMMIT/ is the folder. Any other string is given back as it is. vit_load,
 * vit_text_load, vit_gen_load and vit_folder_kind call it: they take references too.
 *
 * What the cache lacks is downloaded into it (a build with libcurl), from $HF_ENDPOINT (default
 * https://huggingface.co), in the layout huggingface_hub writes (blobs named by their ETag,
 * snapshot links, refs), so vit and Python share one cache: config.json, then the weights
 * (model.safetensors, else its shards' index and the shards, else pytorch_model.bin or its
 * shards) and the files of the model's kind (preprocessor_config.json, the tokenizer files,
 * generation_config.json: those the repository has). A snapshot that holds them is used with no
 * request (a cached revision is not checked for a newer commit). $HF_TOKEN (else the token file
 * $HF_HOME/token) is sent for gated and private repositories; $HF_HUB_OFFLINE=1 downloads
 * nothing; a partial download is resumed; an LFS file's sha256 must be its ETag. An endpoint that
 * cannot be reached falls back to what the cache has. -1 with err (one line) when the name is
 * neither cached nor downloadable, or its snapshot has a broken link. Two processes (vit's or
 * Python's) downloading one file take turns: each blob is written under a lock,
 * CACHE/.locks/models--org--name/ETAG.lock, the one huggingface_hub takes. */
VIT_API int vit_resolve_model(const char *model, char *dir, size_t size, vit_error *err);
/* done of total bytes of file (total -1 when unknown), as a download goes. */
typedef void (*vit_progress_fn)(void *user, const char *file, int64_t done, int64_t total);
/* vit_resolve_model reporting each download's progress to progress(user, ...) (may be NULL). */
VIT_API int vit_download_model(const char *model, vit_progress_fn progress, void *user, char *dir,
                               size_t size, vit_error *err);

/* Loads a ViTForImageClassification, DeiTForImageClassification or
 * DeiTForImageClassificationWithTeacher directory (config.json, model.safetensors or another
 * layout of the weights: model.safetensors.index.json and its shards, pytorch_model.bin,
 * pytorch_model.bin.index.json; optional preprocessor_config.json); also DINOv2 (Dinov2Model,
 * Dinov2ForImageClassification, and the WithRegisters pair) and BEiT / data2vec-vision (BeitModel,
 * BeitForImageClassification, ...); also timm's VisionTransformer folders (config.json with
 * `architecture` and `pretrained_cfg`, timm's tensor names; num_classes 0: the pooled features are
 * the output); and open_clip's folders (open_clip_config.json and open_clip_model.safetensors or
 * open_clip_pytorch_model.bin, no config.json: a CLIP's image tower, as vit_text_load reads its
 * text tower). A base model (Dinov2Model, BeitModel) has no classifier: its "logits" are its pooled
 * features (hidden_size of them, labelled DIM_0..), and vit_embed is what it is for. params NULL:
 * vit_default_params(). */
VIT_API vit_context *vit_load(const char *model, const vit_params *params, vit_error *err);
/* Another context over ctx's weights (no copy of them), with its own activations and buffers and
 * ctx's parameters (its thread count too): it may compute on another thread while ctx does.
 * Safe to call while ctx computes. NULL with err when out of memory. */
VIT_API vit_context *vit_share(const vit_context *ctx, vit_error *err);
/* Frees the context's state, and the weights with the last context using them. */
VIT_API void vit_free(vit_context *ctx);

VIT_API int vit_num_labels(const vit_context *ctx);
/* 1 when the model classifies (its logits are classes), 0 for a base model (Dinov2Model,
 * BeitModel: features only) or a joint model's image tower (CLIP, SigLIP: embeddings). */
VIT_API int vit_has_classifier(const vit_context *ctx);
/* id2label of config.json ("LABEL_i" where it has none); NULL outside 0..num_labels-1. */
VIT_API const char *vit_label(const vit_context *ctx, int index);
/* Floats in one preprocessed input (C·H·W) and its shape. */
VIT_API size_t vit_input_floats(const vit_context *ctx);
VIT_API void vit_input_shape(const vit_context *ctx, int *channels, int *height, int *width);
VIT_API int vit_tokens(const vit_context *ctx);
VIT_API int vit_hidden_size(const vit_context *ctx); /* the length of a vit_embed feature */
VIT_API double vit_flops_per_image(const vit_context *ctx);
VIT_API size_t vit_num_parameters(const vit_context *ctx);
/* What computes: "oneDNN 2.6.3 (avx2), fp32" (owned by the context). */
VIT_API const char *vit_compute(const vit_context *ctx);
/* NULL when the model folder has a preprocessor_config.json; else the defaults its images are
 * preprocessed with, in one line: "no preprocessor_config.json: ViTImageProcessor's defaults at
 * 224x224 (resize 224x224 bilinear, mean [0.5 0.5 0.5] std [0.5 0.5 0.5])" (owned by the context).
 * Such a folder classifies differently from one with its processor's file: worth saying. */
VIT_API const char *vit_preprocess_defaults(const vit_context *ctx);

/* One image -> the model's input tensor `pixels` (vit_input_floats floats), exactly as Hugging
 * Face's image processor with Pillow: from a file (PNG, JPEG, WebP, TIFF, GIF or BMP, told by its
 * first bytes; WebP, TIFF and GIF only in a library built with them, `vit info` says which;
 * params.exif_orientation says whether EXIF orientation is applied), from an encoded
 * file in memory, or from 8-bit RGB pixels (width·height·3 bytes, row-major). */
VIT_API int vit_preprocess_file(const vit_context *ctx, const char *path, float *pixels,
                                vit_error *err);
VIT_API int vit_preprocess_memory(const vit_context *ctx, const void *bytes, size_t size,
                                  float *pixels, vit_error *err);
VIT_API int vit_preprocess_rgb(const vit_context *ctx, const uint8_t *rgb, int width, int height,
                               float *pixels, vit_error *err);

/* As vit_preprocess_memory, and where the input lies in the image: image_size gets the image's
 * width and height as decoded (upright, as params.exif_orientation says), region the part of it
 * the resize and crop made the input, {x, y, width, height} in the image's pixels (beyond its
 * edges where the crop is larger than the resized image). What a map of the input's patches
 * (vit_explain) is drawn over. */
VIT_API int vit_preprocess_memory_region(const vit_context *ctx, const void *bytes, size_t size,
                                         float *pixels, int image_size[2], float region[4],
                                         vit_error *err);

/* logits [batch, labels] for pixels [batch, C, H, W]; 1 <= batch <= max_batch. */
VIT_API int vit_forward(vit_context *ctx, const float *pixels, int batch, float *logits,
                        vit_error *err);

/* Features for retrieval: [batch, hidden] per image, the final LayerNorm's output at the CLS token
 * (VIT_POOL_CLS, what the classifier reads) or the mean of the patch tokens after it
 * (VIT_POOL_MEAN). For a DeiT too: the CLS token (not the distillation token), and the mean of
 * the patch tokens alone. */
/* VIT_POOL_JOINT (CLIP, SigLIP): the embedding in the joint image-text space, L2-normalised
 * (vit_joint_dim floats; HF's image_embeds and text_embeds). A SigLIP image tower has no CLS
 * token: VIT_POOL_JOINT only. */
/* DINOv2: VIT_POOL_CLS is its pooler_output, VIT_POOL_MEAN the mean of the patch tokens (the
 * registers left out). BEiT with mean pooling (use_mean_pooling, no final LayerNorm): VIT_POOL_MEAN
 * is its pooler_output (the mean of the patch tokens through pooler.layernorm), VIT_POOL_CLS the
 * CLS token as the last layer left it. VIT_POOL_PATCHES: dense features, [batch, grid_h, grid_w,
 * hidden] (vit_patch_grid), every patch token of last_hidden_state (after the final LayerNorm
 * where the model has one; CLS, a DeiT's distillation token and DINOv2's registers left out), the
 * form segmentation and depth heads read. */
typedef enum {
    VIT_POOL_CLS,
    VIT_POOL_MEAN,
    VIT_POOL_POOLER, /* text; images: a SigLIP image tower's attention-pooling output */
    VIT_POOL_JOINT,
    VIT_POOL_PATCHES,
    VIT_POOL_PROJECTION, /* a tower with a projection (CLIP's): the projected pooled row, not
                          * normalised (a ...WithProjection tower alone: image_embeds, text_embeds)
                          */
    /* text encoders, as sentence-transformers' Pooling computes them over the tokens (padding
     * out): */
    VIT_POOL_MAX,           /* the largest value of each feature */
    VIT_POOL_MEAN_SQRT_LEN, /* the sum over the tokens / sqrt(their number) */
    VIT_POOL_WEIGHTED_MEAN, /* token t weighs t + 1 (pooling_mode_weightedmean_tokens) */
    VIT_POOL_LAST_TOKEN,    /* the last token's row */
    VIT_POOL_SENTENCE /* a sentence-transformers folder's own pipeline (modules.json: its Pooling,
                       * Dense and Normalize modules): SentenceTransformer.encode's output */
} vit_pool;
/* The grid of patches the model sees (its input size / the patch size, each way). */
VIT_API void vit_patch_grid(const vit_context *ctx, int *grid_h, int *grid_w);
VIT_API int vit_embed(vit_context *ctx, const float *pixels, int batch, vit_pool pool,
                      float *features, vit_error *err);
/* A SigLIP image tower alone (SiglipVisionModel) has no joint space: VIT_POOL_POOLER is its
 * attention-pooling head's output (pooler_output, not normalised); without the head
 * (vision_use_head false) VIT_POOL_MEAN and VIT_POOL_PATCHES only. A ViTModel's VIT_POOL_CLS is
 * last_hidden_state[:, 0] (its pooler, pooler.dense, is not read). The pooling vit embed takes
 * by default (transformers' output for the class): VIT_POOL_JOINT for a joint model,
 * VIT_POOL_PROJECTION for CLIPVisionModelWithProjection (image_embeds), VIT_POOL_POOLER for a
 * SigLIP image tower alone, VIT_POOL_MEAN for one without its head and for a model that pools
 * by the mean (BEiT's use_mean_pooling, timm's global_pool 'avg': its pooler_output or
 * pre-logits), else VIT_POOL_CLS. */
VIT_API vit_pool vit_default_pool(const vit_context *ctx);
/* The floats vit_embed gives one image with pool (one the model gives): vit_joint_dim for
 * VIT_POOL_JOINT, the forward's outputs for VIT_POOL_POOLER and VIT_POOL_PROJECTION, grid_h x
 * grid_w x hidden for VIT_POOL_PATCHES, else vit_hidden_size. */
VIT_API int vit_embed_size(const vit_context *ctx, vit_pool pool);

/* In-place softmax of n logits (computed in double). */
VIT_API void vit_softmax(float *logits, int n);

typedef struct {
    int index;         /* class index */
    float prob;        /* softmax probability */
    const char *label; /* owned by the context */
} vit_prediction;

/* The k most probable classes of probs [num_labels] (largest first; ties: lower index first; NaN
 * last) into top[0..min(k, num_labels)). Returns their number, or -1 (k negative, or out of
 * memory). O(n log k) in the labels n. Reads only the labels: safe beside a computation on the
 * same context. */
VIT_API int vit_top_k(const vit_context *ctx, const float *probs, int k, vit_prediction *top,
                      vit_error *err);

/* Where ranked classes get their labels: label(labels, index) (label NULL: none). */
typedef struct {
    const char *(*label)(const void *labels, int index);
    const void *labels;
} vit_labeler;

/* One input's n classes ranked, the one place for softmax, top-k and threshold: with logits
 * nonzero, probs [n] gets the softmax of values [n] (vit_softmax's; probs may be values), else
 * values are the probabilities already (zero-shot's softmax or sigmoids) and probs is not used;
 * then the k most probable into top[0..min(k, n)) in vit_top_k's order, labelled by labeler
 * (NULL: labels NULL), and *shown (when not NULL) how many of those come first with a
 * probability of at least threshold. Returns min(k, n), or -1 (k negative, out of memory). */
VIT_API int vit_rank(const float *values, int n, int logits, float *probs, int k, double threshold,
                     const vit_labeler *labeler, vit_prediction *top, int *shown, vit_error *err);

/* Preprocess + forward + softmax + top-k of one image: a file, an encoded file in memory, or
 * 8-bit RGB pixels. Returns the number of predictions written (min(k, num_labels)) or -1. */
VIT_API int vit_classify_file(vit_context *ctx, const char *path, int k, vit_prediction *top,
                              vit_error *err);
VIT_API int vit_classify_memory(vit_context *ctx, const void *bytes, size_t size, int k,
                                vit_prediction *top, vit_error *err);
VIT_API int vit_classify_image(vit_context *ctx, const uint8_t *rgb, int width, int height, int k,
                               vit_prediction *top, vit_error *err);

/* ---- where the model looked ---- */

/* VIT_EXPLAIN_ROLLOUT: attention rollout (Abnar & Zuidema 2020: per layer the mean over heads
 * plus the identity, rows normalised, multiplied through the layers; the CLS row), whatever the
 * class. VIT_EXPLAIN_LAST: the last layer's CLS attention, one map per head. VIT_EXPLAIN_GRAD:
 * gradient-weighted rollout for one class (Chefer et al. 2021: per layer the mean over heads of
 * max(0, dy/dA ∘ A), accumulated R += Ā·R; y the class's logit). Computed in fp32 with the plain
 * (training) forward, whatever the context's backend and precision. */
typedef enum { VIT_EXPLAIN_ROLLOUT, VIT_EXPLAIN_LAST, VIT_EXPLAIN_GRAD } vit_explain_method;

typedef struct {
    int label;          /* the class explained: the one asked for, or the most probable; -1 for a
                         * base model (Dinov2Model, BeitModel: no classes; VIT_EXPLAIN_GRAD is
                         * refused for it) */
    float prob;         /* its softmax probability (0 without classes) */
    int maps;           /* 1, or the number of heads (VIT_EXPLAIN_LAST) */
    int grid_h, grid_w; /* one value per patch of the model's input */
    float *map;         /* [maps, grid_h, grid_w], raw (not scaled); vit_explanation_free */
} vit_explanation;

/* One preprocessed image (vit_input_floats floats) -> its explanation. label < 0: the most
 * probable class. Not for a DeiT with teacher. */
VIT_API int vit_explain(vit_context *ctx, const float *pixels, vit_explain_method method, int label,
                        vit_explanation *out, vit_error *err);
VIT_API void vit_explanation_free(vit_explanation *e);
/* 0 when vit_explain explains this model (ViT, DeiT with one head, DINOv2, BEiT, an image-to-text
 * model's encoder), else -1 with why (a DeiT with teacher; CLIP's and SigLIP's towers, for now).
 * Allocates nothing. */
VIT_API int vit_explain_check(const vit_context *ctx, vit_error *err);

/* An image file -> a PNG at png_path: the (upright, as params.exif_orientation says) original
 * image with the map blended over it (VIT_EXPLAIN_LAST: a grid of small copies, one per head),
 * placed back through the resize and crop, and below it a strip with the label, its probability,
 * the method and the colour scale. out (may be NULL) gets the explanation. */
VIT_API int vit_explain_file(vit_context *ctx, const char *path, vit_explain_method method,
                             int label, const char *png_path, vit_explanation *out, vit_error *err);

/* ---- joint image-text models: CLIP and SigLIP ----
 *
 * A CLIPModel or SiglipModel folder holds two towers: vit_load reads its image tower, vit_text_load
 * its text tower (CLIP's byte-level BPE tokenizer; SigLIP's SentencePiece one where the build has
 * it). vit_embed and vit_text_embed with VIT_POOL_JOINT give embeddings in one space; zero-shot
 * classification embeds the class names once (vit_classes_create) and scores each image against
 * them:
 *
 *   vit_context *img = vit_load(dir, NULL, &err);
 *   vit_text_context *txt = vit_text_load(dir, NULL, &err);
 *   const char *names[] = {"cat", "dog"}, *templates[] = {"a photo of a {}."};
 *   vit_classes *classes = vit_classes_create(txt, names, 2, templates, 1, &err);
 *   float scores[2], probs[2];
 *   vit_preprocess_file(img, "photo.jpg", pixels, &err);
 *   vit_zero_shot(img, classes, pixels, 1, scores, probs, &err);  // probs[0]: "cat" */

/* The joint embedding's length (projection_dim), 0 for a model of another kind. */
VIT_API int vit_joint_dim(const vit_context *ctx);

typedef struct vit_classes vit_classes;
typedef struct vit_text_context vit_text_context; /* the text API below */

/* The class names' embeddings, computed once: for each name, every template with "{}" replaced by
 * the name (templates NULL or n_templates 0: the name itself), embedded and normalised, their mean
 * normalised again (CLIP's prompt ensembling). text must be a joint model's text tower. */
VIT_API vit_classes *vit_classes_create(vit_text_context *text, const char *const *names, int n,
                                        const char *const *templates, int n_templates,
                                        vit_error *err);
VIT_API void vit_classes_free(vit_classes *classes);
VIT_API int vit_classes_count(const vit_classes *classes);
VIT_API const char *vit_classes_name(const vit_classes *classes, int index);
/* 1 when the scores are read one by one through a sigmoid (SigLIP), 0 through a softmax over the
 * classes (CLIP). */
VIT_API int vit_classes_sigmoid(const vit_classes *classes);

/* pixels [batch, C, H, W] -> scores [batch, classes]: the cosine similarity times
 * exp(logit_scale) (plus SigLIP's logit_bias), HF's logits_per_image; probs (may be NULL): their
 * softmax over the classes (CLIP) or each one's sigmoid (SigLIP). The image model must be the
 * image tower of the folder the classes' text tower came from (same joint dim). */
VIT_API int vit_zero_shot(vit_context *image, const vit_classes *classes, const float *pixels,
                          int batch, float *scores, float *probs, vit_error *err);
/* The same scores of images already embedded: embeds [batch, vit_joint_dim] as vit_embed gives
 * them with VIT_POOL_JOINT (a server embeds an image once and scores it against any classes).
 * vit_zero_shot is vit_embed followed by this. */
VIT_API int vit_classes_score(const vit_classes *classes, const float *embeds, int batch,
                              float *scores, float *probs, vit_error *err);
/* The k most probable classes of one image's probs [classes], as vit_top_k (labels: the class
 * names, owned by classes). */
VIT_API int vit_classes_top_k(const vit_classes *classes, const float *probs, int k,
                              vit_prediction *top, vit_error *err);

/* ---- text classification (BERT on the same encoder) ---- */

typedef struct {
    int threads;   /* compute threads; 0 = OMP_NUM_THREADS, else one per core */
    int max_batch; /* largest batch of texts per vit_text_forward */
    vit_backend backend;
    vit_precision precision;
    /* 1: a tokenizer that does not load (its files missing) is no failure: the context describes
     * the folder (vit_text_model_info, the labels and sizes) and refuses every call that reads
     * texts, saying why (vit_text_tokenizer_error). What `vit info` loads with. */
    int tokenizer_optional;
    /* 1: the encoder layers' weight matrices are read from the file as they are prepared and
     * released once their prepared copy (oneDNN's layout, bf16, int8) is made, so they are not in
     * memory twice (vit embed: bge-base's max RSS in fp32 from 787 to about 470 MB); the model
     * cannot then be trained. 0 (the default): kept */
    int inference_only;
} vit_text_params;

VIT_API vit_text_params vit_text_default_params(void);

/* Loads a text encoder's directory (config.json, its weights as vit_load reads them, and the
 * tokenizer's files): a BERT, RoBERTa, XLM-RoBERTa, DistilBERT or MPNet base model (its
 * features), sequence classifier (vit_text_forward) or token classifier (vit_text_token_logits),
 * or a CLIP or SigLIP text tower. params NULL: the defaults. */
VIT_API vit_text_context *vit_text_load(const char *model, const vit_text_params *params,
                                        vit_error *err);
/* NULL when the tokenizer loaded; else why not (params.tokenizer_optional). Owned by ctx. */
VIT_API const char *vit_text_tokenizer_error(const vit_text_context *ctx);
/* Another context over ctx's weights and tokenizer, as vit_share. */
VIT_API vit_text_context *vit_text_share(const vit_text_context *ctx, vit_error *err);
VIT_API void vit_text_free(vit_text_context *ctx);

VIT_API int vit_text_num_labels(const vit_text_context *ctx);
/* 1 for a regression model (problem_type "regression"): its one output is a score, not a class's
 * logit. */
VIT_API int vit_text_regression(const vit_text_context *ctx);
VIT_API const char *vit_text_label(const vit_text_context *ctx, int index);
/* The most texts one call takes (params.max_batch). */
VIT_API int vit_text_max_batch(const vit_text_context *ctx);
/* Longest token sequence ([CLS] and [SEP] included): longer texts are cut (HF truncation). */
VIT_API int vit_text_max_tokens(const vit_text_context *ctx);
/* What computes, as vit_compute. */
VIT_API const char *vit_text_compute(const vit_text_context *ctx);

/* texts[i][0..lengths[i]) for i < n (UTF-8; an invalid byte is skipped by WordPiece, read as U+FFFD
 * by byte-level BPE as Python's errors="replace" reads it) in one forward pass padded to the
 * longest: logits [n, labels], probs [n, labels] (may be NULL): the softmax, or for a one-label
 * model its logit's sigmoid, or for a regression model (problem_type "regression") the logits
 * themselves, as the text-classification pipeline applies them. */
VIT_API int vit_text_forward(vit_text_context *ctx, const char *const *texts, const size_t *lengths,
                             int n, float *logits, float *probs, vit_error *err);
/* Pairs of texts (a[i][0..a_lengths[i]), b[i][0..b_lengths[i])), as tokenizer(a, b) joins them:
 * [CLS] a [SEP] b [SEP] with b of token type 1 (BERT), <s> a </s></s> b </s> (RoBERTa, XLM-R,
 * MPNet), tokenizer.json's pair template; cut to vit_text_max_tokens longest text first. */
typedef struct {
    const char *const *a, *const *b;
    const size_t *a_lengths, *b_lengths;
} vit_text_pairs;
/* A sequence classifier on n pairs (a cross-encoder: a query and a document), in one forward pass
 * padded to the longest: logits [n, labels], probs [n, labels] (as vit_text_forward's; may be
 * NULL). vit_text_ids gives each pair's ids after it. */
VIT_API int vit_text_forward_pairs(vit_text_context *ctx, const vit_text_pairs *pairs, int n,
                                   float *logits, float *probs, vit_error *err);
/* The scores sentence-transformers' CrossEncoder.predict gives the pairs: scores [n, labels], the
 * logits through the model's activation_fn (config.json's sentence_transformers.activation_fn:
 * Identity, Sigmoid or Tanh; without one, Sigmoid for one label, as ms-marco rerankers are
 * scored, and the logits themselves for more). */
VIT_API int vit_text_pair_scores(vit_text_context *ctx, const vit_text_pairs *pairs, int n,
                                 float *scores, vit_error *err);
/* That activation on logits [n, labels] in place (vit_text_pair_scores is vit_text_forward_pairs
 * and this). */
VIT_API void vit_text_pair_activate(const vit_text_context *ctx, float *logits, int n);
/* A token classifier (BertForTokenClassification, RobertaForTokenClassification, ...): the logits
 * of every token of texts as vit_text_forward takes them, in one forward pass padded to the
 * longest: logits [n, vit_text_max_tokens, labels], text i's token t at (i * max_tokens + t) *
 * labels, its vit_text_ids count of rows filled and the rest zero. (vit_text_forward refuses a
 * token classifier, whose logits do not fit [n, labels].) */
VIT_API int vit_text_token_logits(vit_text_context *ctx, const char *const *texts,
                                  const size_t *lengths, int n, float *logits, vit_error *err);
/* The token ids of text i of the last vit_text_forward ([CLS] ... [SEP]); *count gets their
 * number. And the vocabulary string of an id (NULL when out of range). */
VIT_API const int32_t *vit_text_ids(const vit_text_context *ctx, int i, int *count);
VIT_API const char *vit_text_piece(const vit_text_context *ctx, int id);
/* Text i of the last vit_text_token_logits: each of its tokens' byte offsets into the text,
 * token t standing for text[(*starts)[t], (*ends)[t]) and the start and end tokens (0, 0), as the
 * Fast tokenizer's offset_mapping (whose ids vit_text_token_logits then reads, as the
 * token-classification pipeline does). Returns their count (vit_text_ids's), or -1 with err saying
 * why the tokenizer gives none (a BPE SentencePiece model, invalid UTF-8, ...). Owned by ctx, valid
 * until its next forward. */
VIT_API int vit_text_token_offsets(const vit_text_context *ctx, int i, const int32_t **starts,
                                   const int32_t **ends, vit_error *err);

/* The token-classification pipeline's aggregation_strategy: "none" (each token its label),
 * "simple" (adjacent tokens of one entity grouped: B- starts one, I- or a bare label continues
 * it), "first", "average", "max" (the label of a word, its tokens joined, taken from its first
 * token, the mean of its tokens' probabilities or its most confident token, then grouped). */
typedef enum {
    VIT_AGGREGATE_NONE,
    VIT_AGGREGATE_SIMPLE,
    VIT_AGGREGATE_FIRST,
    VIT_AGGREGATE_AVERAGE,
    VIT_AGGREGATE_MAX
} vit_aggregation;
/* "none", ... by name; -1 for another. And the name of one. */
VIT_API int vit_aggregation_from_name(const char *name);
VIT_API const char *vit_aggregation_name(vit_aggregation a);

/* One entity as the pipeline gives it: entity ("none") or entity_group (the label without its B-
 * or I-), score, word (convert_tokens_to_string of its tokens), start and end (characters, the
 * code points Python counts, of the text; -1 when the tokenizer gives no offsets) and the same in
 * bytes; index, the token's position ("none"), else -1. */
typedef struct {
    const char *label;
    float score;
    const char *word;
    int start, end, byte_start, byte_end;
    int index;
} vit_entity;

/* Where vit_text_entities_of puts its results (one per thread). */
typedef struct vit_entities vit_entities;
VIT_API vit_entities *vit_entities_create(void);
VIT_API void vit_entities_free(vit_entities *e);

/* Text i of the last vit_text_token_logits (text[0..len) the text it was given, logits its rows:
 * logits + i * max_tokens * labels) as the pipeline's postprocess: softmax per token, the start
 * and end tokens left out, aggregated, then entities labelled O left out unless keep_all (the
 * pipeline's ignore_labels=[]). *entities (owned by ctx, valid until its next call) gets them;
 * returns their number or -1 with err ("first", "average" and "max" need offsets, as the
 * pipeline refuses them without a fast tokenizer). */
VIT_API int vit_text_entities(vit_text_context *ctx, int i, const char *text, size_t len,
                              const float *logits, vit_aggregation aggregation, int keep_all,
                              const vit_entity **entities, vit_error *err);
/* The same of a text's tokens kept from such a call (its n ids, byte offsets starts and ends, NULL
 * when vit_text_token_offsets gave none, and logits [n, labels]), into results (valid until its
 * next use): ctx is only read, so threads may call this at once, each with its own results. */
VIT_API int vit_text_entities_of(const vit_text_context *ctx, const char *text, size_t len,
                                 const int32_t *ids, const int32_t *starts, const int32_t *ends,
                                 int n, const float *logits, vit_aggregation aggregation,
                                 int keep_all, vit_entities *results, const vit_entity **entities,
                                 vit_error *err);

/* text[0..len) (UTF-8, invalid bytes as vit_text_forward takes them) -> the token ids a forward
 * pass would read, start and end tokens included, cut to vit_text_max_tokens as vit_text_forward
 * cuts (not the padding a SigLIP tower also reads up to that length): the first min(count, cap)
 * into ids. Returns count (which may exceed cap), or -1. No forward pass; not beside a
 * computation on the same context (it encodes with the context's working memory). */
VIT_API int vit_text_tokenize(vit_text_context *ctx, const char *text, size_t len, int32_t *ids,
                              int cap, vit_error *err);

/* The tokens text[0..len) has before the cut to vit_text_max_tokens (start and end tokens
 * included; a sentence-transformers folder's default prompt before it, as vit_text_embed reads
 * it), and a pair's as vit_text_forward_pairs joins it: what a server that will not truncate
 * compares with vit_text_max_tokens (TEI's "truncate": false). They use working memory of their
 * own: safe beside any other call on ctx, from any thread. Texts of at most 1 MiB; -1 with err. */
VIT_API int vit_text_count_tokens(const vit_text_context *ctx, const char *text, size_t len,
                                  vit_error *err);
VIT_API int vit_text_count_pair_tokens(const vit_text_context *ctx, const char *a, size_t alen,
                                       const char *b, size_t blen, vit_error *err);
/* The places a text of that many tokens (at most vit_text_max_tokens) takes in a forward pass
 * with no longer text beside it: its tokens, or vit_text_max_tokens for a tower that reads every
 * text padded to it (SigLIP's). */
VIT_API int vit_text_padded_length(const vit_text_context *ctx, int tokens);

/* Sentence features [n, hidden] of texts as vit_text_forward takes them, in one forward pass:
 * VIT_POOL_CLS the final hidden state at [CLS], VIT_POOL_POOLER the pooler's output (tanh of a
 * linear layer on it: what the classifier reads), VIT_POOL_MEAN the mean of the final hidden
 * states over the text's tokens ([CLS] and [SEP] included, padding not). */
VIT_API int vit_text_embed(vit_text_context *ctx, const char *const *texts, const size_t *lengths,
                           int n, vit_pool pool, float *features, vit_error *err);
/* How vit_text_embed_with embeds: pool; prompt, a text put before each text (NULL: the folder's
 * default prompt, config_sentence_transformers.json's default_prompt_name, else none; "" an empty
 * prompt, as encode's prompt="": with include_prompt false its one token, [CLS], is left out);
 * dimensions, the first N floats of each embedding (0: all), normalised again when the
 * embedding is (VIT_POOL_JOINT, VIT_POOL_SENTENCE ending in Normalize): Matryoshka models. */
typedef struct {
    vit_pool pool;
    const char *prompt;
    int dimensions;
} vit_text_embed_opts;
/* vit_text_embed with opts (NULL: vit_text_default_pool, the default prompt, every dimension).
 * features holds n x (opts->dimensions or vit_text_embed_size) floats. With a prompt and a
 * Pooling whose include_prompt is false, the prompt's tokens ([CLS] among them, as
 * SentenceTransformer.encode counts them) are left out of the poolings over the tokens. */
VIT_API int vit_text_embed_with(vit_text_context *ctx, const char *const *texts,
                                const size_t *lengths, int n, const vit_text_embed_opts *opts,
                                float *features, vit_error *err);
/* A sentence-transformers folder's prompts (config_sentence_transformers.json): their number,
 * name i, the text of a name (NULL when the folder has none of that name), the default prompt's
 * name (NULL: none) and similarity_fn_name: "cosine" (also when not given), "dot", "euclidean"
 * or "manhattan" (SentenceTransformer.similarity's functions; a folder naming another is refused
 * at load, as SentenceTransformer refuses it). */
VIT_API int vit_text_prompt_count(const vit_text_context *ctx);
VIT_API const char *vit_text_prompt_name(const vit_text_context *ctx, int i);
VIT_API const char *vit_text_prompt(const vit_text_context *ctx, const char *name);
VIT_API const char *vit_text_default_prompt(const vit_text_context *ctx);
VIT_API const char *vit_text_similarity(const vit_text_context *ctx);
/* A sentence-transformers folder's modules after its Transformer, e.g. "Pooling mean
 * (include_prompt false) -> Dense 32 -> 16 tanh -> Normalize"; NULL for another folder. */
VIT_API const char *vit_text_pipeline(const vit_text_context *ctx);
/* 1 when vit_text_embed's rows with pool are L2-normalised (VIT_POOL_JOINT; VIT_POOL_SENTENCE
 * of a pipeline ending in Normalize): a cut of them is normalised again (vit_text_embed_opts). */
VIT_API int vit_text_embed_normalized(const vit_text_context *ctx, vit_pool pool);
/* A CLIP or SigLIP text tower takes VIT_POOL_JOINT where it has a joint space, and its own output
 * (not normalised): VIT_POOL_PROJECTION for CLIP's (text_embeds of CLIPTextModelWithProjection),
 * VIT_POOL_POOLER for SigLIP's (its head at the last position: SiglipTextModel's pooler_output) and
 * CLIPTextModel's (the final LayerNorm at the end token: its pooler_output).
 * The pooling vit embed --text takes by default: VIT_POOL_JOINT for a joint model, else that
 * output; VIT_POOL_SENTENCE for a sentence-transformers folder; VIT_POOL_CLS for a BERT. */
VIT_API vit_pool vit_text_default_pool(const vit_text_context *ctx);
/* The floats vit_text_embed gives one text with pool (one the model gives): vit_text_joint_dim
 * for VIT_POOL_JOINT, the forward's outputs for a CLIP or SigLIP tower's own (VIT_POOL_PROJECTION,
 * VIT_POOL_POOLER), else vit_text_hidden_size. */
VIT_API int vit_text_embed_size(const vit_text_context *ctx, vit_pool pool);
VIT_API int vit_text_hidden_size(const vit_text_context *ctx);
/* The joint embedding's length of a CLIP or SigLIP text tower, 0 for a BERT. */
VIT_API int vit_text_joint_dim(const vit_text_context *ctx);

/* The k most probable classes of probs [labels], as vit_top_k. */
VIT_API int vit_text_top_k(const vit_text_context *ctx, const float *probs, int k,
                           vit_prediction *top, vit_error *err);

/* One text (NUL-terminated) -> its k most probable classes. Returns their number or -1. */
VIT_API int vit_text_classify(vit_text_context *ctx, const char *text, int k, vit_prediction *top,
                              vit_error *err);

/* ---- image to text: VisionEncoderDecoderModel (TrOCR, ViT-GPT2) ----
 *
 *   vit_gen_context *g = vit_gen_load("models/trocr", NULL, &err);
 *   vit_generation out;
 *   if (vit_generate_file(g, "line.png", NULL, &out, &err) == 0) puts(out.text);
 *   vit_generation_free(&out, 1);
 *   vit_gen_free(g);
 *
 * The image goes through the encoder once; the decoder then generates greedily or by beam search
 * exactly as transformers' generate, with the settings of the folder's generation_config.json
 * (else config.json's) unless the call gives others; each step runs the batch's images x beams as
 * the rows of one matrix product per layer, over a cache of the earlier positions. Thread safety
 * as for vit_context: one context computes at a time; vit_gen_share gives another over the same
 * weights. */
typedef struct vit_gen_context vit_gen_context;

typedef struct {
    vit_params image; /* threads, max_batch (images per call), backend, precision, decoding */
    int max_beams;    /* the most beams a call may ask for (0: 8; at most 64) */
    /* 1: a tokenizer that does not load is no failure, as vit_text_params': the context describes
     * the folder and refuses to generate, saying why (vit_gen_tokenizer_error) */
    int tokenizer_optional;
} vit_gen_params;
VIT_API vit_gen_params vit_gen_default_params(void);

VIT_API vit_gen_context *vit_gen_load(const char *model, const vit_gen_params *params,
                                      vit_error *err);
/* NULL when the tokenizer loaded; else why not (params.tokenizer_optional). Owned by ctx. */
VIT_API const char *vit_gen_tokenizer_error(const vit_gen_context *ctx);
VIT_API vit_gen_context *vit_gen_share(const vit_gen_context *ctx, vit_error *err);
VIT_API void vit_gen_free(vit_gen_context *ctx);
/* The image context over the encoder: its preprocessing (vit_preprocess_*, vit_input_floats) and
 * features (vit_embed) serve the generator too. Owned by ctx. */
VIT_API vit_context *vit_gen_image_context(vit_gen_context *ctx);
/* What computes the decoder: "oneDNN 2.6.3 (avx2), fp32" (owned by the context). */
VIT_API const char *vit_gen_compute(const vit_gen_context *ctx);
VIT_API int vit_gen_vocab_size(const vit_gen_context *ctx);
/* The most tokens one call may generate (max_new_tokens): the decoder's positions (the last token
 * generated is never run through it). */
VIT_API int vit_gen_max_new_tokens(const vit_gen_context *ctx);

/* transformers' GenerationConfig fields a call may set. */
typedef struct {
    int num_beams;            /* 1: greedy search */
    int max_new_tokens;       /* > 0: at most this many tokens after the start token */
    int max_length;           /* else the whole sequence's limit, the start token included */
    int min_length;           /* the end token is barred before this length */
    float length_penalty;     /* beam scores are sum(log p) / length^length_penalty */
    int early_stopping;       /* beam search: 0 false (a heuristic), 1 true, 2 "never" */
    int no_repeat_ngram_size; /* > 0: no n-gram of this size twice in a sequence */
} vit_gen_options;
/* The model's own settings (generation_config.json), to change before a call. */
VIT_API vit_gen_options vit_gen_default_options(const vit_gen_context *ctx);

typedef struct {
    char *text;   /* the ids decoded to UTF-8, special tokens skipped */
    int32_t *ids; /* the sequence, from the decoder's start token on (transformers' sequences) */
    int num_ids;
    float score; /* beam search: the sequence score (sequences_scores); greedy: the sum of the
                  * chosen tokens' log-probabilities */
} vit_generation;

/* Text for each of batch preprocessed images (pixels [batch, C, H, W], batch <= the params'
 * max_batch) into out[batch]; opt NULL: the model's settings. Free out with vit_generation_free. */
VIT_API int vit_generate(vit_gen_context *ctx, const float *pixels, int batch,
                         const vit_gen_options *opt, vit_generation *out, vit_error *err);
VIT_API int vit_generate_file(vit_gen_context *ctx, const char *path, const vit_gen_options *opt,
                              vit_generation *out, vit_error *err);
VIT_API void vit_generation_free(vit_generation *g, int n);

/* ---- what a model is: vit info and GET /v1/model read it ----
 *
 * Filled by the library from the config.json vit_load (vit_text_load, vit_gen_load) parsed; the
 * strings are static or owned by the context. */
typedef enum {
    VIT_KIND_IMAGE,        /* an image model: a classifier, a base model, a joint tower alone */
    VIT_KIND_TEXT,         /* a text model: the same of texts */
    VIT_KIND_JOINT,        /* CLIPModel, SiglipModel: an image and a text tower in one space */
    VIT_KIND_IMAGE_TO_TEXT /* VisionEncoderDecoderModel */
} vit_model_kind;
typedef enum { VIT_TOWER_IMAGE, VIT_TOWER_TEXT, VIT_TOWER_DECODER } vit_tower;
/* What a context answers (vit_model_info.capabilities): vit_forward's classes, vit_embed's
 * features, vit_zero_shot, vit_generate, vit_explain. */
enum {
    VIT_CAN_CLASSIFY = 1,
    VIT_CAN_EMBED = 2,
    VIT_CAN_ZERO_SHOT = 4,
    VIT_CAN_GENERATE = 8,
    VIT_CAN_EXPLAIN = 16,
    VIT_CAN_TAG = 32 /* vit_text_token_logits: classes per token */
};
typedef struct {
    vit_model_kind kind;      /* of the folder */
    vit_tower tower;          /* which of its towers this context runs */
    const char *family;       /* "ViT", "DeiT", "BERT", "CLIP", "SigLIP", "DINOv2", "BEiT", ... */
    const char *model_type;   /* config.json's ("vit", "clip", "trocr", ...) */
    const char *architecture; /* the class ("ViTForImageClassification", "CLIPModel (vision
                               * tower)", "TrOCRForCausalLM", ...) */
    int layers, hidden, heads, mlp;
    const char *activation; /* "gelu", "quick_gelu", ... */
    float layer_norm_eps;
    int post_norm; /* the blocks are post-LN (the family's option), else pre-LN */
    /* image towers: config.json's size and patch (vit_input_shape and vit_tokens: the run's) */
    int channels, image_height, image_width, patch_size, tokens;
    /* text towers and decoders: the longest sequence the position table holds (a RoBERTa's
     * positions start after its padding index: max_position_embeddings - pad - 1) */
    int max_positions, vocab_size;
    /* text encoders: positions count the non-padding tokens from padding_idx + 1 (RoBERTa, XLM-R,
     * MPNet), else 0..T-1; the dense layer on token 0 before the output ("tanh": BERT's pooler
     * or RoBERTa's classifier.dense, "relu": DistilBERT's pre_classifier, NULL: none) */
    int positions_from_padding;
    const char *pooler;
    int num_labels; /* classes, or the outputs of a model without a classifier */
    int joint_dim;  /* the joint embedding's length, 0 outside CLIP and SigLIP */
    int sigmoid;    /* joint scores are read through a sigmoid each (SigLIP), else a softmax */
    unsigned capabilities; /* VIT_CAN_* */
    /* decoders (VIT_TOWER_DECODER) */
    int sinusoidal;        /* positions from the sinusoid table, else learned */
    int cross_project;     /* the encoder's states go through enc_to_dec_proj */
    int cross_width;       /* the width of the states cross-attention reads */
    int tied_head;         /* the output head is the token embedding matrix */
    const char *tokenizer; /* decoders and text towers: its tokenizer's class ("RobertaTokenizer",
                            * ...) */
    /* how the folder and its tower are built (the family's options, as vit info prints them) */
    const char *folder_class; /* "CLIPModel" / "SiglipModel" for either tower of a joint model,
                               * "VisionEncoderDecoderModel", else architecture */
    int tower_alone;          /* a joint model's tower saved alone (CLIPVisionModelWithProjection,
                               * SiglipTextModel, ...) */
    size_t parameters;        /* this tower's, shared ones once */
    int size_tokens;          /* images: the tokens at config.json's size (tokens: the run's) */
    double flops;       /* one forward at config.json's size: an image, or 128 tokens of text */
    int special_tokens; /* images: 1 CLS, 2 CLS and a DeiT's distillation token, 0 (SigLIP) */
    int registers;      /* register tokens (DINOv2's, timm's: no positions unless
                         * registers_positioned) */
    int registers_positioned; /* 1: the registers have positions (timm's no_embed_class false) */
    int classifier_heads;     /* 2: a DeiT's CLS and distillation heads, logits their mean */
    int positions;            /* images: 0 none, 1 an absolute table (other sizes: bicubic), 2 the
                               * same antialiased, 3 one for the model's size only (timm's) */
    int qkv_bias, key_bias;   /* biases on q, k, v; key_bias 0: q and v only (BEiT) */
    int swiglu, layer_scale, embed_norm, final_norm, causal;
    int rel_bias; /* 1: a relative position bias per layer, 2: one shared */
    /* the model's own pooling: "cls", "cls_mean" ([CLS, mean of the patches]), "mean"
     * (through pooler.layernorm), "probe" (SigLIP's attention pooling), "bert" (token 0
     * through the tanh pooler), "eos" (the first end token), "eos_max" (the largest id: CLIP's
     * argmax), "last" (the last position), "all" (every row), "next" (a decoder's every row),
     * "norm_mean" (every row normalised, then the mean of the patches: timm's avg without
     * fc_norm), "tokens" (every row through the classifier: a token classifier) */
    const char *pooling;
    const char *head; /* after it: "classifier", "projection" (no bias), "linear", "none" */
    vit_pool pool;    /* vit_default_pool / vit_text_default_pool: vit embed's default */
    const char *preprocessing; /* images: preprocessor_config.json's steps, as read ("shortest
                                * edge 248 bicubic, center crop 224x224, mean [...] std [...]") */
    double score_scale; /* exp(logit_scale) of a joint model's scores, 0 where there is none */
    int score_bias;     /* logit_bias is added to the scores (SigLIP) */
    /* decoders */
    int pos_offset, scale_embedding; /* learned positions offset by this; embeddings x sqrt(D) */
    int eos_ids[4], num_eos, pad_id, decoder_start_id, bos_id; /* -1: unset */
    /* decoders and text towers: "byte-level BPE", "WordPiece", "SentencePiece",
     * "tokenizer.json (WordPiece|BPE|Unigram)" */
    const char *tokenizer_kind;
    int tokenizer_ids; /* the tokenizer's vocabulary */
    /* which files the weights were read from: "model.safetensors (52 tensors: F32)",
     * "pytorch_model.bin (zip, ...)", "4 shards of model.safetensors.index.json (...)"; "" for a
     * model not read from files */
    const char *weights;
    /* text encoders' positions beyond learned ones: rotary (NomicBERT) on rotary_dim columns of
     * each head, pairs GPT-NeoX's halves or interleaved, angles position·base^(-2i/rotary_dim);
     * alibi (JinaBERT v2): -slope_h·|i - j| on the scores. no_bias: projections without a bias
     * (1 qkv, 2 attention output, 4 fc1, 8 fc2) */
    int rotary_dim, rotary_interleaved, alibi, no_bias;
    double rotary_base;
} vit_model_info;

VIT_API void vit_model_info_get(const vit_context *ctx, vit_model_info *info);
VIT_API void vit_text_model_info(const vit_text_context *ctx, vit_model_info *info);
/* The decoder of an image-to-text model (its encoder: vit_gen_image_context's info). */
VIT_API void vit_gen_decoder_info(const vit_gen_context *ctx, vit_model_info *info);
/* What the folder model_dir holds, from its config.json alone (no weights read): to choose the
 * loader (vit_load, vit_text_load, vit_gen_load). -1 with err when config.json is unreadable. */
VIT_API int vit_folder_kind(const char *model, vit_model_kind *kind, vit_error *err);
/* From config.json alone too: *tags 1 when the folder's model is a token classifier (a
 * ...ForTokenClassification: classes per token), else 0 (a sequence classifier, a base model, an
 * image model). vit eval chooses how to read a file of labelled text by it. */
VIT_API int vit_folder_tags(const char *model, int *tags, vit_error *err);

#ifdef __cplusplus
}
#endif

#endif
