#ifndef VIT_ST_FOLDER_H
#define VIT_ST_FOLDER_H

/* A sentence-transformers folder as SentenceTransformer.save writes it: modules.json listing the
 * modules in order (sentence_transformers.models.Transformer at "" or "0_Transformer", Pooling,
 * Dense, Normalize), 1_Pooling/config.json, each Dense's config.json and weights,
 * sentence_bert_config.json (max_seq_length, do_lower_case) and
 * config_sentence_transformers.json (prompts, default_prompt_name, similarity_fn_name). */

#include <stddef.h>

#include "vit/base/error.h"
#include "vit/model/pooling.h"

typedef struct {
    int in, out;
    float *w; /* [out, in] (linear.weight) */
    float *b; /* [out] or NULL (bias false) */
    dense_act act;
    char module[256]; /* its folder in the sentence-transformers one (modules.json's path) */
} st_dense;

typedef enum { ST_STEP_DENSE, ST_STEP_NORMALIZE } st_step_kind;
typedef struct {
    st_step_kind kind;
    int dense; /* ST_STEP_DENSE: index into dense */
} st_step;

typedef struct {
    char transformer_dir[4096]; /* the Transformer module's folder (config.json, weights) */
    int modes;                  /* POOL_MODE_* bits */
    int word_dim;               /* word_embedding_dimension */
    int include_prompt;
    st_dense *dense;
    int ndense;
    st_step *steps; /* what follows the pooling, in modules.json's order */
    int nsteps;
    int max_seq_length; /* 0: not given */
    int do_lower_case;
    char **prompt_names, **prompt_texts;
    int nprompts;
    char *default_prompt; /* default_prompt_name, or NULL */
    char similarity[32];  /* similarity_fn_name: cosine, dot, euclidean, manhattan; or "" */
} st_pipeline;

/* 1 when dir holds a modules.json. */
int st_folder_is(const char *dir);
/* Reads dir's pipeline; every file's problem is one line naming the file. */
int st_pipeline_load(const char *dir, st_pipeline *p, vit_error *err);
void st_pipeline_free(st_pipeline *p);
/* The width of the pooled row (word_dim times the number of modes) and of the pipeline's output. */
int st_pooled_dim(const st_pipeline *p);
int st_output_dim(const st_pipeline *p);
/* The text of prompt `name`, NULL when the folder has none of that name. */
const char *st_prompt(const st_pipeline *p, const char *name);
/* Whether the pipeline ends L2-normalised (its last step a Normalize). */
int st_normalizes(const st_pipeline *p);
/* The path of dir's Transformer module (modules.json's first module; "": dir itself) into sub;
 * every module's type and path checked as st_folder_copy_modules needs them. */
int st_folder_transformer(const char *dir, char *sub, size_t size, vit_error *err);
/* in_dir's modules.json, sentence_bert_config.json, config_sentence_transformers.json and every
 * module folder (1_Pooling/, 2_Dense/, ..., the Transformer's own when it has one: their files)
 * into out_dir, as SentenceTransformer.save lays them out; a Transformer at the root (path "") is
 * the caller's to copy. */
int st_folder_copy_modules(const char *in_dir, const char *out_dir, vit_error *err);
/* The same with a module's weights (its model.safetensors or pytorch_model.bin, a Dense's) not
 * copied but written by `write`, given the two folders and the module's path sub, e.g. converted
 * to another dtype or averaged; the module's other files are copied. The Transformer's folder,
 * wherever it is, is then the caller's to write. */
typedef int (*st_module_weights)(const char *in_dir, const char *out_dir, const char *sub,
                                 void *user, vit_error *err);
int st_folder_write_modules(const char *in_dir, const char *out_dir, st_module_weights write,
                            void *user, vit_error *err);
/* Dense d's weights as Dense.save writes them: out_dir/<its module>/model.safetensors
 * (linear.weight, linear.bias when it has one), a pytorch_model.bin there removed (the weights
 * it held replaced); its config.json is the copied one. */
int st_dense_save(const char *out_dir, const st_dense *d, vit_error *err);

#endif
