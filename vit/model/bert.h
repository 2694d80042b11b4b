#ifndef VIT_BERT_H
#define VIT_BERT_H

/* BERT sentence classification on the shared encoder (post-LN): token + position + segment
 * embeddings, LayerNorm, encoder with a key-padding mask, tanh pooler on [CLS], classifier.
 *
 * Two levels: bert_runner runs the network on token ids; bert_classifier adds the model folder's
 * WordPiece tokenizer and turns batches of texts into logits and probabilities:
 *
 *   bert_classifier *c = bert_classifier_load("models/bert-sst2-tiny", 32, 0, &err);
 *   bert_classifier_run(c, texts, lengths, n, logits, probs, &err);   // n <= 32
 *   bert_classifier_free(c);
 */

#include <stddef.h>
#include <stdint.h>

#include "text/tokenizer.h"
#include "vit/base/error.h"
#include "vit/model/model.h"

typedef struct bert_runner bert_runner;

/* Buffers for batches of up to max_batch sequences of up to max_tokens tokens. m is not owned. */
bert_runner *bert_runner_create(const model *m, int max_batch, int max_tokens, vit_error *err);
void bert_runner_free(bert_runner *r);

/* ids [B, T] (padded with any valid id where mask is 0), mask [B, T] (1 = real token) -> logits
 * [B, labels]. Token type 0 throughout (single-sentence classification). */
int bert_forward(bert_runner *r, const int32_t *ids, const uint8_t *mask, int B, int T,
                 float *logits, vit_error *err);

typedef struct bert_classifier bert_classifier;

/* Loads a BertForSequenceClassification folder (config.json, model.safetensors, vocab.txt and
 * the optional tokenizer files) for batches of up to max_batch texts, and gives the forward pass
 * `threads` OpenMP threads (0: one per core; see vit_threads_init). Image models, and a
 * vocabulary larger than the embedding table, are errors naming the folder. */
bert_classifier *bert_classifier_load(const char *model_dir, int max_batch, int threads,
                                      vit_error *err);
void bert_classifier_free(bert_classifier *c);

int bert_classifier_num_labels(const bert_classifier *c);
/* id2label of config.json (HF's "LABEL_i" where it has none). */
const char *bert_classifier_label(const bert_classifier *c, int index);
const char *const *bert_classifier_labels(const bert_classifier *c);
const tokenizer *bert_classifier_tokenizer(const bert_classifier *c);
const model *bert_classifier_model(const bert_classifier *c);
/* Longest sequence, [CLS] and [SEP] included: texts are cut to fit (HF truncation=True). */
int bert_classifier_max_tokens(const bert_classifier *c);

/* Tokenizes texts[i][0..lengths[i]) for i < B (1 <= B <= max_batch; UTF-8, invalid bytes
 * skipped as the tokenizer documents) and classifies them in one forward pass padded to the
 * longest of them. logits [B, labels]; probs [B, labels] (softmax, may be NULL). */
int bert_classifier_run(bert_classifier *c, const char *const *texts, const size_t *lengths, int B,
                        float *logits, float *probs, vit_error *err);
/* The ids of text i of the last run ([CLS] ... [SEP]); *n receives their count. */
const int32_t *bert_classifier_ids(const bert_classifier *c, int i, int *n);

#endif
