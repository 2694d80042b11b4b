#ifndef VIT_TEXT_TEXT_TOKENIZER_H
#define VIT_TEXT_TEXT_TOKENIZER_H

/* The tokenizers of the text models behind one interface. A folder with tokenizer.json is read
 * from it (text/tokenizer_json.h), as transformers prefers the fast tokenizer; when that file
 * holds a part vit does not follow and the folder also has the older files below, those are
 * read instead. Otherwise a folder's tokenizer is the one its
 * tokenizer_config.json's tokenizer_class names (with or without "Fast"): BertTokenizer
 * (WordPiece, text/wordpiece.h; DistilBertTokenizer and MPNetTokenizer too), CLIPTokenizer,
 * GPT2Tokenizer, RobertaTokenizer (byte-level BPE, text/byte_level.h), SiglipTokenizer
 * (SentencePiece, text/siglip_text.h), XLMRobertaTokenizer (SentencePiece with fairseq's ids,
 * text/xlmr_text.h); with another class or none, the files tell: vocab.json and merges.txt,
 * byte-level BPE; vocab.txt, WordPiece; spiece.model, SigLIP's; sentencepiece.bpe.model, XLM-R's.
 * So a VisionEncoderDecoder folder, whose tokenizer files lie beside its config.json, loads like
 * any other. The SentencePiece ones need a build with libsentencepiece (without it, one line saying
 * so).
 *
 * Encoding gives the ids the class's tokenizer(text) gives, with the special tokens it puts
 * around a text ([CLS] ... [SEP], <|startoftext|> ... <|endoftext|>, <s> ... </s>, ... </s>;
 * GPT-2 none), cut to max_len keeping those. Decoding gives the class's
 * decode(ids, skip_special_tokens). A loaded tokenizer is immutable: threads encode and decode
 * with one at once, each encoding with its own scratch. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vit/base/error.h"

typedef struct text_tokenizer text_tokenizer;
typedef struct text_tokenizer_scratch text_tokenizer_scratch;

/* dir's tokenizer; an error naming the folder when it has none vit reads. */
int text_tokenizer_load(const char *dir, text_tokenizer **out, vit_error *err);
void text_tokenizer_free(text_tokenizer *t);
/* The WordPiece tokenizer wp (text/wordpiece.h; a new model's, made in memory) behind this
 * interface, as text_tokenizer_load would give it from its files: *out owns wp (freed on
 * failure too). */
struct tokenizer;
int text_tokenizer_from_wordpiece(struct tokenizer *wp, text_tokenizer **out, vit_error *err);
/* The id of token piece (exact match), or -1 when the tokenizer has none: a linear search. */
int text_tokenizer_find(const text_tokenizer *t, const char *piece);

/* "WordPiece", "byte-level BPE", "SentencePiece" or "tokenizer.json (MODEL)", MODEL its
 * WordPiece, BPE or Unigram. */
const char *text_tokenizer_kind(const text_tokenizer *t);
/* The transformers class it follows: "BertTokenizer", "CLIPTokenizer", "GPT2Tokenizer",
 * "RobertaTokenizer", "SiglipTokenizer" or "XLMRobertaTokenizer"; for tokenizer.json,
 * tokenizer_config.json's tokenizer_class, else "PreTrainedTokenizerFast". */
const char *text_tokenizer_class(const text_tokenizer *t);
/* One past the largest id it has (its vocabulary and added tokens). */
int text_tokenizer_vocab_size(const text_tokenizer *t);
/* The longest sequence the tokenizer's settings allow (model_max_length), 0 when they say none. */
int text_tokenizer_max_len(const text_tokenizer *t);
/* The id padding is written with: the pad token where the tokenizer has one, else the end token. */
int text_tokenizer_pad_id(const text_tokenizer *t);
/* The start and end tokens (bos_token, eos_token), -1 when the class has none (BERT). */
int text_tokenizer_bos_id(const text_tokenizer *t);
int text_tokenizer_eos_id(const text_tokenizer *t);
/* The token of id (owned by t), or NULL when out of range. */
const char *text_tokenizer_piece(const text_tokenizer *t, int id);

/* Working memory of one thread's encodes (NULL when out of memory). */
text_tokenizer_scratch *text_tokenizer_scratch_create(const text_tokenizer *t);
void text_tokenizer_scratch_free(text_tokenizer_scratch *s);

/* text[0..len) -> ids (room for max_len >= 2), s a scratch of t's (NULL will do for every kind
 * but WordPiece, which needs one). Returns their number or -1 with err. */
int text_tokenizer_encode(const text_tokenizer *t, text_tokenizer_scratch *s, const char *text,
                          size_t len, int max_len, int32_t *ids, vit_error *err);

/* The ids of text with each one's byte offsets into text: token k stands for
 * text[starts[k] .. ends[k]), the special tokens around the text (0, 0), as the tokenizers
 * library's encoding.offsets (in bytes: its Python and npm bindings count characters), so as the
 * Fast class gives them (what transformers' pipelines read). starts and ends have room for
 * max_len. tokenizer.json gives its own for BERT's path (BertNormalizer, BertPreTokenizer,
 * WordPiece), RoBERTa's (ByteLevel, BPE) and XLM-R's (Metaspace, Unigram or BPE); the older files
 * go through the tokenizer.json transformers' converter writes of them: vocab.txt
 * (BertConverter), RobertaTokenizer's vocab.json and merges.txt (RobertaConverter), a Unigram
 * sentencepiece.bpe.model (XLMRobertaConverter). Those ids can differ from
 * text_tokenizer_encode's (the slow class's) on rare texts. Other kinds (CLIP's, GPT-2's,
 * SigLIP's files, a BPE SentencePiece model) are an error saying so. Returns the number of ids or
 * -1 with err. */
int text_tokenizer_encode_offsets(const text_tokenizer *t, text_tokenizer_scratch *s,
                                  const char *text, size_t len, int max_len, int32_t *ids,
                                  int32_t *starts, int32_t *ends, vit_error *err);

/* What transformers' fast tokenizer gives of the tokenizers with offsets (the tokenizer.json
 * behind text_tokenizer_encode_offsets): convert_tokens_to_string(tokens) (the decoder over
 * token strings; as text_tokenizer_decode writes, -1 with err), and whether its model has a
 * continuing_subword_prefix (a word-aware model, "##") and its unk token's id (-1: none).
 * Another kind is an error as text_tokenizer_encode_offsets says. */
int text_tokenizer_tokens_to_string(const text_tokenizer *t, const char *const *tokens, int n,
                                    char *out, size_t size, vit_error *err);
int text_tokenizer_word_facts(const text_tokenizer *t, bool *word_aware, int32_t *unk_id,
                              vit_error *err);

/* A pair of texts a, b as tokenizer(a, b) encodes them: ids (room for max_len) through the
 * tokenizer's pair template, cut to max_len longest text first, and their token type ids in
 * type_ids (room for max_len; NULL: not wanted). tokenizer.json's kind through its post-processor;
 * the older files as the slow tokenizers join a pair: BertTokenizer and DistilBertTokenizer
 * [CLS] a [SEP] b [SEP] (b and its [SEP] of type 1), RobertaTokenizer, XLMRobertaTokenizer and
 * MPNetTokenizer <s> a </s></s> b </s> (all 0), cut 'longest_first' as truncate_sequences cuts
 * (a token at a time off the longer text, off b when they are as long). The others (GPT-2, CLIP,
 * SigLIP) are an error saying so. Returns the number of ids or -1 with err. */
int text_tokenizer_encode_pair(const text_tokenizer *t, text_tokenizer_scratch *s, const char *a,
                               size_t alen, const char *b, size_t blen, int max_len, int32_t *ids,
                               int32_t *type_ids, vit_error *err);

/* ids[0..n) -> UTF-8 text, as the class's tokenizer.decode(ids, skip_special_tokens) gives it
 * (with skip_special_tokens: the special tokens, such as a generated sequence's start, end and
 * padding, left out). Writes at most size - 1 bytes and a NUL (out may be NULL when size is 0);
 * returns the length of the whole text (as snprintf: call again with more room when it is not
 * below size), or -1 with err: an id the tokenizer does not have, out of memory. */
int text_tokenizer_decode(const text_tokenizer *t, const int32_t *ids, int n,
                          bool skip_special_tokens, char *out, size_t size, vit_error *err);

/* ---- the interface each kind implements (text/wordpiece.c, text/byte_level.c,
 * text/siglip_text.c, text/xlmr_text.c), which the functions above call through ---- */

/* What a loaded tokenizer tells of itself: fixed at load, as the tokenizer is. */
typedef struct {
    const char *kind;                                /* text_tokenizer_kind's */
    const char *class_name;                          /* text_tokenizer_class's */
    int vocab_size, max_len, pad_id, bos_id, eos_id; /* as their functions above say */
} text_tokenizer_info;

typedef struct {
    /* dir's tokenizer of this kind into *impl, what it tells of itself into *info */
    int (*load)(const char *dir, void **impl, text_tokenizer_info *info, vit_error *err);
    void (*free)(void *impl);
    const char *(*piece)(const void *impl, int id);
    /* one thread's working memory for encode; both NULL for a kind that needs none */
    void *(*scratch_create)(void);
    void (*scratch_free)(void *scratch);
    int (*encode)(const void *impl, void *scratch, const char *text, size_t len, int max_len,
                  int32_t *ids, vit_error *err);
    int (*decode)(const void *impl, const int32_t *ids, int n, bool skip_special_tokens, char *out,
                  size_t size, vit_error *err);
    /* NULL for a kind without pairs */
    int (*encode_pair)(const void *impl, void *scratch, const char *a, size_t alen, const char *b,
                       size_t blen, int max_len, int32_t *ids, int32_t *type_ids, vit_error *err);
    /* NULL for a kind without offsets */
    int (*encode_offsets)(const void *impl, const char *text, size_t len, int max_len, int32_t *ids,
                          int32_t *starts, int32_t *ends, vit_error *err);
    /* The tokenizer.json transformers' converter writes of it (the Fast class's tokenizer,
     * malloc'd), which gives the offsets of a kind without encode_offsets; NULL: none */
    int (*fast_json)(const void *impl, char **json, vit_error *err);
} text_tokenizer_ops;

#endif
