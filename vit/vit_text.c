/* The public API for text (vit.h): a BERT classifier or a joint model's text tower, its tokenizer
 * (text/text_tokenizer.h) and its buffers; batches of texts tokenized, padded to the longest and
 * run in one forward pass. */
#include "vit/vit.h"

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/canonicalize.h"
#include "text/decode.h"
#include "text/text_tokenizer.h"
#include "text/tj.h"
#include "text/utf8.h"
#include "vit/base/threads.h"
#include "vit/core/ops.h"
#include "vit/io/model_dir.h"
#include "vit/io/st_folder.h"
#include "vit/model/pooling.h"
#include "vit/model/text_model.h"
#include "vit/vit_internal.h"

/* What the contexts of one vit_text_load (and its vit_text_share copies) have in common:
 * written while vit_text_load runs, only read after, freed with the last context using it. */
typedef struct {
    atomic_int refs;     /* contexts using it */
    model m;             /* the parameters and their prepared layers */
    text_tokenizer *tok; /* read-only: each context encodes with its own scratch */
    char tokenizer_error[sizeof(((vit_error *)0)->msg)]; /* tok NULL (params.tokenizer_optional) */
    int max_batch, max_tokens, pad_id;
    char compute[128];
    int sentence; /* a sentence-transformers folder: st holds its pipeline */
    st_pipeline st;
    int widest;         /* the widest row the pipeline makes (pooled or a Dense's output) */
    char pipeline[512]; /* what vit_text_pipeline says */
} text_weights;

/* One computation's state over shared weights. */
struct vit_text_context {
    text_weights *w;
    text_acts acts;
    gemm_state *gemm; /* acts.gemm: running the prepared layers */
    text_tokenizer_scratch *scratch;
    int threads;
    int32_t *rows;              /* [max_batch, max_tokens]: each text's ids, rows of the last run */
    int *lengths;               /* [max_batch] */
    int32_t *ids;               /* [max_batch * max_tokens]: the last batch packed as [B, T] */
    uint8_t *mask;              /* same layout: 1 = token, 0 = padding */
    int32_t *row_types, *types; /* as rows and ids: the token types of pairs (types NULL: none) */
    float *logits;              /* [max_batch, labels]: vit_text_classify's and vit_text_embed's */
    float *rows_a, *rows_b;     /* [widest]: a sentence pipeline's steps, one text at a time */
    int prompt_tokens;          /* the last batch's prompt: tokens before its text (CLS included) */
    /* a token classifier's: each token's byte offsets, [max_batch, max_tokens] as rows, and for
     * each text of the last vit_text_token_logits whether it has them, else why not */
    int32_t *starts, *ends;
    vit_error *no_offsets; /* [max_batch]; msg "" when the text has offsets */
    api_tag_state *tag;    /* vit_text_entities' results */
};

vit_text_params vit_text_default_params(void) {
    return (vit_text_params){
        .threads = 0, .max_batch = 32, .backend = VIT_BACKEND_DEFAULT, .precision = VIT_FP32};
}

/* Refuses image models before their weights are read. */
static int require_text(const char *dir, vit_error *err) {
    model_config cfg;
    if (model_config_load_tower(dir, TOWER_TEXT, &cfg, err) != 0) return -1;
    const model_kind kind = cfg.kind;
    model_config_free(&cfg);
    if (kind != MODEL_TEXT)
        return vit_fail(
            err,
            "%s: not a text model (config.json model_type is not bert, roberta, xlm-roberta, "
            "distilbert, mpnet, clip or siglip); text needs a text encoder, CLIP or SigLIP "
            "folder",
            dir);
    return 0;
}

static int check_vocab(const text_weights *w, const char *dir, vit_error *err) {
    const int n = text_tokenizer_vocab_size(w->tok), limit = w->m.cfg.vocab_size;
    if (n > limit)
        return vit_fail(err, "%s: the %s vocabulary has %d tokens but config.json vocab_size is %d",
                        dir, text_tokenizer_kind(w->tok), n, limit);
    return 0;
}

static void weights_release(text_weights *w) {
    if (!w || atomic_fetch_sub(&w->refs, 1) != 1) return;
    text_tokenizer_free(w->tok);
    model_free(&w->m);
    st_pipeline_free(&w->st);
    free(w);
}

/* dir's tokenizer, checked against the model's vocabulary; when optional, one that does not load
 * leaves w->tok NULL and says why in w->tokenizer_error. */
static int load_tokenizer(text_weights *w, const char *dir, int optional, vit_error *err) {
    vit_error why = {0};
    if (text_tokenizer_load(dir, &w->tok, &why) == 0) return check_vocab(w, dir, err);
    if (!optional) return vit_fail(err, "%s", why.msg);
    w->tok = NULL;
    snprintf(w->tokenizer_error, sizeof w->tokenizer_error, "%s", why.msg);
    return 0;
}

/* The model and tokenizer of dir, unprepared, with one reference. */
static text_weights *weights_load(const char *dir, const vit_text_params *p, vit_error *err) {
    text_weights *w = calloc(1, sizeof *w);
    if (!w) return vit_fail(err, "%s: out of memory", dir), NULL;
    atomic_init(&w->refs, 1);
    if ((p->inference_only ? model_load_tower_lazy : model_load_tower)(&w->m, dir, TOWER_TEXT,
                                                                       err) != 0) {
        free(w);
        return NULL;
    }
    w->max_batch = p->max_batch;
    if (load_tokenizer(w, dir, p->tokenizer_optional, err) != 0) {
        weights_release(w);
        return NULL;
    }
    w->max_tokens = w->tok ? text_tokenizer_max_len(w->tok) : 0;
    if (w->max_tokens < 2 || w->max_tokens > config_text_max_tokens(&w->m.cfg))
        w->max_tokens = config_text_max_tokens(&w->m.cfg);
    w->pad_id = w->tok ? text_tokenizer_pad_id(w->tok) : 0;
    /* open_clip cuts at context_length whatever the folder's tokenizer_config.json says, and its
     * SimpleTokenizer pads with 0 (HFTokenizer with the tokenizer's pad token); the padding is
     * read only by a 'last' tower, which attends to it */
    if (w->m.cfg.open_clip) w->max_tokens = config_text_max_tokens(&w->m.cfg);
    if (w->m.cfg.open_clip && !w->m.cfg.oc_hf_tokenizer) w->pad_id = 0;
    ops_init();
    return w;
}

static int alloc_batch(vit_text_context *c, vit_error *err) {
    const text_weights *w = c->w;
    const size_t cells = (size_t)w->max_batch * (size_t)w->max_tokens;
    c->rows = malloc(sizeof *c->rows * cells);
    c->ids = malloc(sizeof *c->ids * cells);
    c->mask = malloc(cells);
    c->row_types = malloc(sizeof *c->row_types * cells);
    c->types = malloc(sizeof *c->types * cells);
    c->lengths = calloc((size_t)w->max_batch, sizeof *c->lengths);
    /* a token classifier's logits are per token */
    const size_t rows = w->m.cfg.opt.pool == POOL_TOKENS ? cells : (size_t)w->max_batch;
    c->logits = malloc(sizeof *c->logits * rows * (size_t)w->m.cfg.num_labels);
    c->scratch = w->tok ? text_tokenizer_scratch_create(w->tok) : NULL;
    const size_t widest =
        (size_t)(w->widest > w->m.cfg.hidden_size ? w->widest : w->m.cfg.hidden_size);
    c->rows_a = malloc(sizeof *c->rows_a * widest);
    c->rows_b = malloc(sizeof *c->rows_b * widest);
    const int tags = w->m.cfg.opt.pool == POOL_TOKENS;
    if (tags) {
        c->starts = malloc(sizeof *c->starts * cells);
        c->ends = malloc(sizeof *c->ends * cells);
        c->no_offsets = calloc((size_t)w->max_batch, sizeof *c->no_offsets);
    }
    if (!c->rows || !c->ids || !c->mask || !c->row_types || !c->types || !c->lengths ||
        !c->logits || (w->tok && !c->scratch) || !c->rows_a || !c->rows_b ||
        (tags && (!c->starts || !c->ends || !c->no_offsets)))
        return vit_fail(err, "out of memory for batches of %d texts", w->max_batch);
    return 0;
}

/* A context over w (taking one reference to it, released on failure) with its buffers and
 * activations; the gemm state follows once w is prepared. */
static vit_text_context *context_create(text_weights *w, int threads, vit_error *err) {
    vit_text_context *c = calloc(1, sizeof *c);
    if (!c) {
        weights_release(w);
        return vit_fail(err, "out of memory"), NULL;
    }
    c->w = w;
    c->threads = threads;
    if (alloc_batch(c, err) != 0 ||
        text_acts_alloc(&c->acts, &w->m, w->max_batch, w->max_tokens, 0, err) != 0) {
        vit_text_free(c);
        return NULL;
    }
    return c;
}

static int add_gemm_state(vit_text_context *c, vit_error *err) {
    c->acts.gemm = c->gemm = model_gemm_state(&c->w->m, err);
    return c->gemm ? 0 : -1;
}

/* "Pooling mean (include_prompt false) -> Dense 32 -> 16 tanh -> Normalize" into w->pipeline. */
static void describe_pipeline(text_weights *w) {
    static const char *const modes[] = {"cls",           "max",          "mean",
                                        "mean_sqrt_len", "weightedmean", "lasttoken"};
    static const char *const acts[] = {"identity", "tanh", "relu", "sigmoid", "gelu"};
    const st_pipeline *st = &w->st;
    char *out = w->pipeline;
    const size_t size = sizeof w->pipeline;
    size_t n = (size_t)snprintf(out, size, "Pooling");
    for (int i = 0, first = 1; i < POOL_MODE_COUNT && n < size; i++)
        if (st->modes >> i & 1)
            n += (size_t)snprintf(out + n, size - n, "%s%s", first ? " " : "+", modes[i]),
                first = 0;
    if (!st->include_prompt && n < size)
        n += (size_t)snprintf(out + n, size - n, " (include_prompt false)");
    for (int i = 0; i < st->nsteps && n < size; i++) {
        if (st->steps[i].kind == ST_STEP_NORMALIZE) {
            n += (size_t)snprintf(out + n, size - n, " -> Normalize");
            continue;
        }
        const st_dense *d = &st->dense[st->steps[i].dense];
        n += (size_t)snprintf(out + n, size - n, " -> Dense %d -> %d %s%s", d->in, d->out,
                              acts[d->act], d->b ? "" : " (no bias)");
    }
}

/* Moves st into w: the pipeline after w's Transformer, checked against it. */
static int adopt_pipeline(text_weights *w, st_pipeline *st, const char *dir, vit_error *err) {
    w->st = *st;
    memset(st, 0, sizeof *st);
    w->sentence = 1;
    if (w->m.cfg.opt.pool == POOL_LAST) /* its forward attends to padding: no token mask */
        return vit_fail(err, "%s: a sentence-transformers folder over %s is not read", dir,
                        config_architecture(&w->m.cfg));
    if (w->st.word_dim != w->m.cfg.hidden_size)
        return vit_fail(err,
                        "%s: the Pooling's word_embedding_dimension is %d, the Transformer's "
                        "hidden_size %d",
                        dir, w->st.word_dim, w->m.cfg.hidden_size);
    w->widest = st_pooled_dim(&w->st);
    for (int i = 0; i < w->st.ndense; i++)
        if (w->st.dense[i].out > w->widest) w->widest = w->st.dense[i].out;
    /* the Transformer module's max_seq_length cuts as the tokenizer's model_max_length does */
    if (w->st.max_seq_length > 1 && w->st.max_seq_length < w->max_tokens)
        w->max_tokens = w->st.max_seq_length;
    describe_pipeline(w);
    return 0;
}

/* The folder's model, tokenizer and (for a sentence-transformers folder) pipeline. */
static text_weights *load_weights(const char *model_dir, const vit_text_params *p, vit_error *err) {
    st_pipeline st = {0};
    const int sentence = st_folder_is(model_dir);
    if (sentence && st_pipeline_load(model_dir, &st, err) != 0) return NULL;
    const char *dir = sentence ? st.transformer_dir : model_dir;
    text_weights *w = require_text(dir, err) == 0 ? weights_load(dir, p, err) : NULL;
    if (w && sentence && adopt_pipeline(w, &st, model_dir, err) != 0) {
        weights_release(w);
        w = NULL;
    }
    st_pipeline_free(&st);
    return w;
}

vit_text_context *vit_text_load(const char *model, const vit_text_params *params, vit_error *err) {
    const vit_text_params p = params ? *params : vit_text_default_params();
    char model_dir[4096];
    if (vit_resolve_model(model, model_dir, sizeof model_dir, err) != 0) return NULL;
    if (p.max_batch < 1) return vit_fail(err, "batch size %d is not positive", p.max_batch), NULL;
    text_weights *w = load_weights(model_dir, &p, err);
    vit_text_context *c = w ? context_create(w, threads_resolve(p.threads), err) : NULL;
    if (!c) return NULL;
    if (api_prepare(&w->m, p.backend, p.precision, w->max_batch, w->max_tokens, c->threads,
                    p.inference_only, w->compute, sizeof w->compute, err) != 0 ||
        model_read_rest(&w->m, err) != 0 || add_gemm_state(c, err) != 0) {
        vit_text_free(c);
        return NULL;
    }
    return c;
}

vit_text_context *vit_text_share(const vit_text_context *ctx, vit_error *err) {
    atomic_fetch_add(&ctx->w->refs, 1);
    vit_text_context *c = context_create(ctx->w, ctx->threads, err);
    if (c && add_gemm_state(c, err) != 0) {
        vit_text_free(c);
        return NULL;
    }
    return c;
}

void vit_text_free(vit_text_context *c) {
    if (!c) return;
    text_acts_free(&c->acts);
    gemm_state_free(c->gemm);
    text_tokenizer_scratch_free(c->scratch);
    free(c->rows);
    free(c->starts);
    free(c->ends);
    free(c->no_offsets);
    api_tag_state_free(c->tag);
    free(c->lengths);
    free(c->ids);
    free(c->mask);
    free(c->row_types);
    free(c->types);
    free(c->logits);
    free(c->rows_a);
    free(c->rows_b);
    weights_release(c->w);
    free(c);
}

int vit_text_num_labels(const vit_text_context *c) {
    return c->w->m.cfg.num_labels;
}
int vit_text_regression(const vit_text_context *c) {
    return c->w->m.cfg.regression;
}
const char *vit_text_label(const vit_text_context *c, int index) {
    return index >= 0 && index < c->w->m.cfg.num_labels ? c->w->m.cfg.labels[index] : NULL;
}
int vit_text_max_batch(const vit_text_context *c) {
    return c->w->max_batch;
}
int vit_text_max_tokens(const vit_text_context *c) {
    return c->w->max_tokens;
}
const char *vit_text_compute(const vit_text_context *c) {
    return c->w->compute;
}
const char *vit_text_piece(const vit_text_context *c, int id) {
    return c->w->tok ? text_tokenizer_piece(c->w->tok, id) : NULL;
}
const char *vit_text_tokenizer_error(const vit_text_context *c) {
    return c->w->tok ? NULL : c->w->tokenizer_error;
}

int vit_text_token_offsets(const vit_text_context *c, int i, const int32_t **starts,
                           const int32_t **ends, vit_error *err) {
    if (!c->starts) return vit_fail(err, "offsets are kept of a token classifier's texts only");
    if (i < 0 || i >= c->w->max_batch) return vit_fail(err, "no text %d in the last batch", i);
    if (c->no_offsets[i].msg[0]) return vit_fail(err, "%s", c->no_offsets[i].msg);
    *starts = c->starts + (size_t)i * c->w->max_tokens;
    *ends = c->ends + (size_t)i * c->w->max_tokens;
    return c->lengths[i];
}

api_tag_state **api_text_tag_state(vit_text_context *c) {
    return &c->tag;
}

const int32_t *vit_text_ids(const vit_text_context *c, int i, int *n) {
    *n = c->lengths[i];
    return c->rows + (size_t)i * c->w->max_tokens;
}

/* The tokenizer's ids of one text, after open_clip's cleaning when its HFTokenizer asks for it
 * (text/canonicalize.h). */
/* text's ids, at most max of them, in scratch s. */
static int encode_with(const text_weights *w, text_tokenizer_scratch *s, const char *text,
                       size_t len, int max, int32_t *row, vit_error *err) {
    if (!w->m.cfg.oc_hf_tokenizer)
        return text_tokenizer_encode(w->tok, s, text, len, max, row, err);
    char *clean;
    size_t n;
    if (text_canonicalize(text, len, &clean, &n) != 0) return vit_fail(err, "out of memory");
    const int r = text_tokenizer_encode(w->tok, s, clean, n, max, row, err);
    free(clean);
    return r;
}

static int encode_text(vit_text_context *c, const char *text, size_t len, int32_t *row,
                       vit_error *err) {
    return encode_with(c->w, c->scratch, text, len, c->w->max_tokens, row, err);
}

int vit_text_tokenize(vit_text_context *c, const char *text, size_t len, int32_t *ids, int cap,
                      vit_error *err) {
    if (cap < 0) return vit_fail(err, "tokenize: room for %d ids is negative", cap);
    if (!c->w->tok) return vit_fail(err, "%s", c->w->tokenizer_error);
    int32_t *row = malloc(sizeof *row * (size_t)c->w->max_tokens);
    if (!row) return vit_fail(err, "out of memory");
    const int n = encode_text(c, text, len, row, err);
    if (n > 0 && cap > 0) memcpy(ids, row, sizeof *ids * (size_t)(n < cap ? n : cap));
    free(row);
    return n;
}

/* Copies the B rows into [B, T] with T the longest, padding and masking the rest. A tower pooled
 * at the last position (SigLIP, trained on texts padded to max_length and attending to the
 * padding) gets every text padded to max_tokens, and its mask is not used (run_mask). */
static int pack_batch(vit_text_context *c, int B, int pairs) {
    int T = 1;
    for (int b = 0; b < B; b++) T = c->lengths[b] > T ? c->lengths[b] : T;
    if (c->w->m.cfg.opt.pool == POOL_LAST) T = c->w->max_tokens;
    for (int b = 0; b < B; b++) {
        const int n = c->lengths[b];
        int32_t *ids = c->ids + (size_t)b * T;
        uint8_t *mask = c->mask + (size_t)b * T;
        memcpy(ids, c->rows + (size_t)b * c->w->max_tokens, sizeof *ids * (size_t)n);
        memset(mask, 1, (size_t)n);
        for (int t = n; t < T; t++) ids[t] = c->w->pad_id;
        int32_t *types = c->types + (size_t)b * T;
        if (pairs) memcpy(types, c->row_types + (size_t)b * c->w->max_tokens, sizeof *types * n);
        for (int t = n; pairs && t < T; t++) types[t] = 0;
        memset(mask + n, 0, (size_t)(T - n));
    }
    return T;
}

/* Appends text[0..len) to out (room for 4 * len bytes), lower-cased character by character
 * when lower (sentence_bert_config.json's do_lower_case: the Transformer module lowers each text
 * before its tokenizer; the characters' own lower case, without Python's final-sigma rule).
 * Returns the bytes written. */
static size_t append_text(char *out, const char *text, size_t len, int lower) {
    if (!lower) return memcpy(out, text, len), len;
    size_t i = 0, n = 0;
    while (i < len) {
        const size_t start = i;
        const int32_t cp = utf8_decode((const uint8_t *)text, len, &i);
        int32_t low[3];
        const int k = cp < 0 ? 0 : tj_lowercase(cp, low);
        if (cp < 0) out[n++] = text[start]; /* left for the tokenizer to read as it reads it */
        for (int j = 0; j < k; j++) n += utf8_encode(low[j], (uint8_t *)out + n);
    }
    return n;
}

/* prompt + text as a sentence-transformers Transformer module gives it its tokenizer: stripped,
 * then lower-cased with do_lower_case (malloc'ed, *n its length; NULL when out of memory). */
static char *prompted_text(const text_weights *w, const char *prompt, const char *text, size_t len,
                           size_t *n) {
    const size_t plen = prompt ? strlen(prompt) : 0;
    char *out = malloc(4 * (plen + len) + 1);
    if (!out) return NULL;
    const int lower = w->sentence && w->st.do_lower_case;
    *n = append_text(out, prompt ? prompt : "", plen, lower);
    *n += append_text(out + *n, text ? text : "", len, lower);
    out[*n] = '\0';
    if (w->sentence) { /* str.strip() */
        size_t start = 0, end = *n;
        py_strip(out, &start, &end);
        memmove(out, out + start, end - start);
        *n = end - start;
        out[*n] = '\0';
    }
    return out;
}

static int encode_one(vit_text_context *c, const char *prompt, const char *text, size_t len,
                      int32_t *row, vit_error *err) {
    const text_weights *w = c->w;
    if (!(prompt && *prompt) && !w->sentence) return encode_text(c, text, len, row, err);
    size_t n;
    char *joined = prompted_text(w, prompt, text, len, &n);
    if (!joined) return vit_fail(err, "out of memory");
    const int rc = encode_text(c, joined, n, row, err);
    free(joined);
    return rc;
}

/* A token per byte, the start and end tokens and a pair's separators: more than any of the
 * tokenizers makes of a text (each token covers a byte at least, or is special). */
static int token_bound(size_t bytes) {
    return bytes > (1u << 20) ? -1 : (int)bytes + 16;
}

/* The tokens of a (prompt and) text, or of a pair when b is not NULL, with room for all of them:
 * a scratch and a row of its own, so beside anything else on c. */
static int count_tokens(const vit_text_context *c, const char *prompt, const char *a, size_t alen,
                        const char *b, size_t blen, vit_error *err) {
    const text_weights *w = c->w;
    if (!w->tok) return vit_fail(err, "%s", w->tokenizer_error);
    char *joined = NULL;
    size_t n = alen;
    if (!b && ((prompt && *prompt) || w->sentence)) {
        if (!(joined = prompted_text(w, prompt, a, alen, &n)))
            return vit_fail(err, "out of memory");
        a = joined;
    }
    const int max = token_bound(n + blen);
    if (max < 0) {
        free(joined);
        return vit_fail(err, "%zu bytes: more than the 1 MiB a text's tokens are counted for",
                        n + blen);
    }
    int32_t *row = malloc(sizeof *row * (size_t)max * (b ? 2 : 1));
    text_tokenizer_scratch *s = text_tokenizer_scratch_create(w->tok);
    int rc = row && s ? 0 : vit_fail(err, "out of memory");
    if (rc == 0)
        rc = b ? text_tokenizer_encode_pair(w->tok, s, a, alen, b, blen, max, row, row + max, err)
               : encode_with(w, s, a, n, max, row, err);
    text_tokenizer_scratch_free(s);
    free(row);
    free(joined);
    return rc;
}

int vit_text_padded_length(const vit_text_context *c, int tokens) {
    return c->w->m.cfg.opt.pool == POOL_LAST ? c->w->max_tokens : tokens; /* as pack_batch pads */
}

int vit_text_count_tokens(const vit_text_context *c, const char *text, size_t len, vit_error *err) {
    return count_tokens(c, vit_text_prompt(c, vit_text_default_prompt(c)), text, len, NULL, 0, err);
}

int vit_text_count_pair_tokens(const vit_text_context *c, const char *a, size_t alen, const char *b,
                               size_t blen, vit_error *err) {
    return count_tokens(c, NULL, a, alen, b ? b : "", blen, err);
}

/* The prompt's tokens before a text, as SentenceTransformer.encode counts them: the prompt
 * tokenized alone, less its last token (the end token). */
static int prompt_tokens(vit_text_context *c, const char *prompt, vit_error *err) {
    if (!prompt) return 0; /* "" counts, as encode counts prompt="": its [CLS] */
    const int n = encode_one(c, prompt, "", 0, c->rows, err);
    return n < 0 ? -1 : n > 0 ? n - 1 : 0;
}

static int tokenize_batch(vit_text_context *c, const char *const *texts, const size_t *lengths,
                          int B, const char *prompt, vit_error *err) {
    if (!c->w->tok) return vit_fail(err, "%s", c->w->tokenizer_error);
    if ((c->prompt_tokens = prompt_tokens(c, prompt, err)) < 0) return -1;
    for (int b = 0; b < B; b++) {
        c->lengths[b] = encode_one(c, prompt, texts[b], lengths[b],
                                   c->rows + (size_t)b * c->w->max_tokens, err);
        if (c->lengths[b] < 0) {
            for (int k = b; k < B; k++) c->lengths[k] = 0;
            return -1;
        }
    }
    return 0;
}

/* The mask the forward gets: none for a tower that attends to its padding. */
static const uint8_t *run_mask(const vit_text_context *c) {
    return c->w->m.cfg.opt.pool == POOL_LAST ? NULL : c->mask;
}

/* A token classifier's texts with the offsets of their tokens where the tokenizer gives them
 * (the Fast class's ids, what the token-classification pipeline reads), else their ids alone
 * and why not. */
static int tokenize_tagged(vit_text_context *c, const char *const *texts, const size_t *lengths,
                           int B, vit_error *err) {
    if (!c->w->tok) return vit_fail(err, "%s", c->w->tokenizer_error);
    const size_t T = (size_t)c->w->max_tokens;
    const int plain = c->w->sentence || c->w->m.cfg.oc_hf_tokenizer; /* texts it rewrites */
    for (int b = 0; b < B; b++) {
        vit_error *why = &c->no_offsets[b];
        *why = (vit_error){0};
        int n = -1;
        if (plain)
            vit_fail(why, "offsets are not computed for a text the model rewrites first");
        else
            n = text_tokenizer_encode_offsets(c->w->tok, c->scratch, texts[b], lengths[b], (int)T,
                                              c->rows + b * T, c->starts + b * T, c->ends + b * T,
                                              why);
        if (n < 0 && !why->msg[0]) vit_fail(why, "no offsets");
        if (n < 0) n = encode_text(c, texts[b], lengths[b], c->rows + b * T, err);
        if ((c->lengths[b] = n) < 0) {
            for (int k = b; k < B; k++) c->lengths[k] = 0;
            return -1;
        }
    }
    return 0;
}

/* Packs the B tokenized rows and runs them: out as run_texts says. */
static int forward_rows(vit_text_context *c, int B, float *out, int *tokens, vit_error *err) {
    const int T = pack_batch(c, B, 0);
    const threads_scope scope = threads_begin(c->threads);
    const int rc =
        text_model_forward(&c->w->m, &c->acts, c->ids, run_mask(c), B, T, NULL, out, err);
    threads_end(scope);
    *tokens = T;
    return rc;
}

/* Tokenizes B texts (prompt put before each), packs and runs them: out gets what the forward
 * gives ([B, labels], or a token classifier's [B, T, labels]); the packed length T into *tokens. */
static int run_texts(vit_text_context *c, const char *const *texts, const size_t *lengths, int B,
                     const char *prompt, float *out, int *tokens, vit_error *err) {
    if (B < 1 || B > c->w->max_batch)
        return vit_fail(err, "batch of %d texts outside 1..%d", B, c->w->max_batch);
    if (tokenize_batch(c, texts, lengths, B, prompt, err) != 0) return -1;
    return forward_rows(c, B, out, tokens, err);
}

/* The text-classification pipeline's function_to_apply: none for a regression model (its score),
 * the sigmoid of a one-label model's logit (a cross-encoder's relevance, a binary classifier with
 * one output), else the softmax. */
static void text_probs(const vit_text_context *c, const float *logits, float *probs, int B) {
    const int L = c->w->m.cfg.num_labels;
    if (c->w->m.cfg.regression) {
        memcpy(probs, logits, sizeof(float) * (size_t)B * L);
        return;
    }
    if (L != 1) return softmax_probs(probs, logits, B, L);
    for (int i = 0; i < B; i++) probs[i] = 1.0f / (1.0f + expf(-logits[i]));
}

/* run_texts returning T, or -1. */
static int forward_prompted(vit_text_context *c, const char *const *texts, const size_t *lengths,
                            int B, const char *prompt, float *out, vit_error *err) {
    int T;
    return run_texts(c, texts, lengths, B, prompt, out, &T, err) == 0 ? T : -1;
}

static int is_token_classifier(const vit_text_context *c) {
    return c->w->m.cfg.opt.pool == POOL_TOKENS;
}

static int tokenize_pairs(vit_text_context *c, const vit_text_pairs *p, int B, vit_error *err) {
    if (!c->w->tok) return vit_fail(err, "%s", c->w->tokenizer_error);
    const size_t T = (size_t)c->w->max_tokens;
    for (int i = 0; i < B; i++) {
        c->lengths[i] = text_tokenizer_encode_pair(c->w->tok, c->scratch, p->a[i], p->a_lengths[i],
                                                   p->b[i], p->b_lengths[i], (int)T,
                                                   c->rows + i * T, c->row_types + i * T, err);
        if (c->lengths[i] < 0) {
            for (int k = i; k < B; k++) c->lengths[k] = 0;
            return -1;
        }
    }
    return 0;
}

int vit_text_forward_pairs(vit_text_context *c, const vit_text_pairs *pairs, int B, float *logits,
                           float *probs, vit_error *err) {
    const tower_options *o = &c->w->m.cfg.opt;
    if (o->head != HEAD_CLASSIFIER || o->pool != POOL_BERT)
        return vit_fail(err, "%s is not a sequence classifier: pairs are classified by one",
                        config_architecture(&c->w->m.cfg));
    if (B < 1 || B > c->w->max_batch)
        return vit_fail(err, "batch of %d pairs outside 1..%d", B, c->w->max_batch);
    if (tokenize_pairs(c, pairs, B, err) != 0) return -1;
    const int T = pack_batch(c, B, 1);
    const threads_scope scope = threads_begin(c->threads);
    const int rc = text_model_forward_typed(&c->w->m, &c->acts, c->ids, c->types, c->mask, B, T,
                                            NULL, logits, err);
    threads_end(scope);
    if (rc == 0 && probs) text_probs(c, logits, probs, B);
    return rc;
}

int vit_text_forward(vit_text_context *c, const char *const *texts, const size_t *lengths, int B,
                     float *logits, float *probs, vit_error *err) {
    if (is_token_classifier(c))
        return vit_fail(err, "%s classifies every token: vit_text_token_logits gives its logits",
                        config_architecture(&c->w->m.cfg));
    int T;
    const int rc = run_texts(c, texts, lengths, B, NULL, logits, &T, err);
    if (rc == 0 && probs) text_probs(c, logits, probs, B);
    return rc;
}

int vit_text_token_logits(vit_text_context *c, const char *const *texts, const size_t *lengths,
                          int B, float *logits, vit_error *err) {
    if (!is_token_classifier(c))
        return vit_fail(err, "%s has no token classifier", config_architecture(&c->w->m.cfg));
    if (B < 1 || B > c->w->max_batch)
        return vit_fail(err, "batch of %d texts outside 1..%d", B, c->w->max_batch);
    int T;
    if (tokenize_tagged(c, texts, lengths, B, err) != 0 ||
        forward_rows(c, B, c->logits, &T, err) != 0)
        return -1;
    const size_t K = (size_t)c->w->m.cfg.num_labels, room = (size_t)c->w->max_tokens * K;
    memset(logits, 0, sizeof(float) * (size_t)B * room);
    for (int b = 0; b < B; b++) /* [B, T, K] into rows of max_tokens */
        memcpy(logits + b * room, c->logits + (size_t)b * T * K,
               sizeof(float) * (size_t)c->lengths[b] * K);
    return 0;
}

void vit_text_pair_activate(const vit_text_context *c, float *logits, int B) {
    const model_config *cfg = &c->w->m.cfg;
    score_activation act = cfg->score_act;
    if (act == SCORE_DEFAULT) act = cfg->num_labels == 1 ? SCORE_SIGMOID : SCORE_IDENTITY;
    for (size_t i = 0; i < (size_t)B * cfg->num_labels; i++) {
        if (act == SCORE_SIGMOID) logits[i] = 1.0f / (1.0f + expf(-logits[i]));
        if (act == SCORE_TANH) logits[i] = tanhf(logits[i]);
    }
}

int vit_text_pair_scores(vit_text_context *c, const vit_text_pairs *pairs, int B, float *scores,
                         vit_error *err) {
    if (vit_text_forward_pairs(c, pairs, B, scores, NULL, err) != 0) return -1;
    vit_text_pair_activate(c, scores, B);
    return 0;
}

int vit_text_hidden_size(const vit_text_context *c) {
    return c->w->m.cfg.hidden_size;
}

const text_tokenizer *api_text_tokenizer(const vit_text_context *c) {
    return c->w->tok;
}

const model *api_text_model(const vit_text_context *c) {
    return &c->w->m;
}

int vit_text_joint_dim(const vit_text_context *c) {
    api_joint j;
    return api_joint_of(&c->w->m, &j, NULL) == 0 ? j.dim : 0;
}

/* VIT_POOL_JOINT: the text tower's output, normalised. */
static int embed_joint(vit_text_context *c, const char *const *texts, const size_t *lengths, int B,
                       const char *prompt, float *features, vit_error *err) {
    api_joint j;
    if (api_joint_of(&c->w->m, &j, err) != 0) return -1;
    if (forward_prompted(c, texts, lengths, B, prompt, features, err) < 0) return -1;
    api_normalize_rows(features, B, j.dim);
    return 0;
}

/* BERT and the text encoders like it (token 0, the pooler, every row), not a joint tower. */
static int is_encoder(const model_config *cfg) {
    return cfg->opt.pool == POOL_BERT || cfg->opt.pool == POOL_TOKENS;
}

vit_pool vit_text_default_pool(const vit_text_context *c) {
    const model_config *cfg = &c->w->m.cfg;
    if (c->w->sentence) return VIT_POOL_SENTENCE;
    if (vit_text_joint_dim(c) > 0) return VIT_POOL_JOINT;
    if (cfg->opt.head == HEAD_PROJECTION) return VIT_POOL_PROJECTION; /* text_embeds */
    return is_encoder(cfg) ? VIT_POOL_CLS : VIT_POOL_POOLER;
}

int vit_text_embed_size(const vit_text_context *c, vit_pool pool) {
    if (pool == VIT_POOL_JOINT) return vit_text_joint_dim(c);
    if (pool == VIT_POOL_SENTENCE) return c->w->sentence ? st_output_dim(&c->w->st) : 0;
    const int tower = !is_encoder(&c->w->m.cfg); /* CLIP's or SigLIP's: its forward's */
    return tower && (pool == VIT_POOL_PROJECTION || pool == VIT_POOL_POOLER)
               ? vit_text_num_labels(c)
               : vit_text_hidden_size(c);
}

/* A CLIP or SigLIP text tower: its output as the forward gives it, the one pooling it has
 * besides the joint space (a causal tower's CLS row and mean are no features of its own). */
static int embed_tower_output(vit_text_context *c, const char *const *texts, const size_t *lengths,
                              int B, vit_pool pool, const char *prompt, float *features,
                              vit_error *err) {
    const head_kind head = c->w->m.cfg.opt.head;
    if ((pool == VIT_POOL_PROJECTION && head == HEAD_PROJECTION) ||
        (pool == VIT_POOL_POOLER && (head == HEAD_LINEAR || head == HEAD_NONE)))
        return forward_prompted(c, texts, lengths, B, prompt, features, err) < 0 ? -1 : 0;
    const vit_pool own = vit_text_default_pool(c);
    return vit_fail(err, "%s: its text embedding is %s", config_architecture(&c->w->m.cfg),
                    own == VIT_POOL_JOINT        ? "VIT_POOL_JOINT"
                    : own == VIT_POOL_PROJECTION ? "VIT_POOL_PROJECTION (text_embeds)"
                                                 : "VIT_POOL_POOLER (pooler_output)");
}

/* The POOL_MODE_* bits of a pooling over the tokens (0 for the others). */
static int pool_modes(const text_weights *w, vit_pool pool) {
    switch (pool) {
    case VIT_POOL_CLS:
        return POOL_MODE_CLS;
    case VIT_POOL_MEAN:
        return POOL_MODE_MEAN;
    case VIT_POOL_MAX:
        return POOL_MODE_MAX;
    case VIT_POOL_MEAN_SQRT_LEN:
        return POOL_MODE_MEAN_SQRT_LEN;
    case VIT_POOL_WEIGHTED_MEAN:
        return POOL_MODE_WEIGHTED_MEAN;
    case VIT_POOL_LAST_TOKEN:
        return POOL_MODE_LAST_TOKEN;
    case VIT_POOL_SENTENCE:
        return w->sentence ? w->st.modes : 0;
    default:
        return 0;
    }
}

/* The Dense and Normalize modules after the pooling, in modules.json's order, on one text's
 * pooled row in a (b: room for the widest step); returns the buffer holding the result. */
static float *run_steps(const st_pipeline *st, float *a, float *b) {
    int n = st_pooled_dim(st);
    for (int i = 0; i < st->nsteps; i++) {
        if (st->steps[i].kind == ST_STEP_NORMALIZE) {
            l2_normalize(a, n);
            continue;
        }
        const st_dense *d = &st->dense[st->steps[i].dense];
        dense_forward(d->w, d->b, d->in, d->out, d->act, a, b);
        n = d->out;
        float *t = a;
        a = b, b = t;
    }
    return a;
}

/* Text b's embedding after a forward of T tokens a row: the pooling's, or for
 * VIT_POOL_SENTENCE the folder's whole pipeline. */
static const float *pooled_row(vit_text_context *c, int b, int T, vit_pool pool) {
    const int D = c->w->m.cfg.hidden_size;
    if (pool == VIT_POOL_POOLER) return c->acts.pooled + (size_t)b * D;
    /* include_prompt false: the prompt's tokens (CLS among them) are left out as padding */
    const int skip = c->w->sentence && !c->w->st.include_prompt ? c->prompt_tokens : 0;
    pool_tokens(c->acts.x + (size_t)b * T * D, c->mask + (size_t)b * T, T, D,
                pool_modes(c->w, pool), skip, c->rows_a);
    return pool == VIT_POOL_SENTENCE ? run_steps(&c->w->st, c->rows_a, c->rows_b) : c->rows_a;
}

/* An encoder's poolings: the first dims floats of each text's row into features. */
static int embed_encoder(vit_text_context *c, const char *const *texts, const size_t *lengths,
                         int B, vit_pool pool, const char *prompt, int dims, float *features,
                         vit_error *err) {
    const model_config *cfg = &c->w->m.cfg;
    if (pool == VIT_POOL_PROJECTION)
        return vit_fail(err, "%s: VIT_POOL_PROJECTION is a CLIP text tower's projection",
                        config_architecture(cfg));
    if (pool == VIT_POOL_POOLER && !cfg->opt.pooler)
        return vit_fail(err, "%s has no pooler: VIT_POOL_CLS or VIT_POOL_MEAN",
                        config_architecture(cfg));
    if (pool == VIT_POOL_SENTENCE && !c->w->sentence)
        return vit_fail(err, "VIT_POOL_SENTENCE: the folder is no sentence-transformers one (no "
                             "modules.json)");
    if (pool != VIT_POOL_POOLER && !pool_modes(c->w, pool))
        return vit_fail(err, "unknown pooling %d", (int)pool);
    const int T = forward_prompted(c, texts, lengths, B, prompt, c->logits, err);
    if (T < 0) return -1;
    for (int b = 0; b < B; b++)
        memcpy(features + (size_t)b * dims, pooled_row(c, b, T, pool), sizeof(float) * dims);
    return 0;
}

/* A CLIP or SigLIP tower's own output or joint embedding, cut to dims. */
static int embed_tower(vit_text_context *c, const char *const *texts, const size_t *lengths, int B,
                       vit_pool pool, const char *prompt, int dims, int full, float *features,
                       vit_error *err) {
    float *all = dims < full ? malloc(sizeof *all * (size_t)B * full) : features;
    if (!all) return vit_fail(err, "out of memory");
    const int rc = pool == VIT_POOL_JOINT
                       ? embed_joint(c, texts, lengths, B, prompt, all, err)
                       : embed_tower_output(c, texts, lengths, B, pool, prompt, all, err);
    for (int b = 0; rc == 0 && all != features && b < B; b++)
        memcpy(features + (size_t)b * dims, all + (size_t)b * full, sizeof(float) * dims);
    if (all != features) free(all);
    return rc;
}

int vit_text_embed_with(vit_text_context *c, const char *const *texts, const size_t *lengths, int B,
                        const vit_text_embed_opts *opts, float *features, vit_error *err) {
    const vit_text_embed_opts own = {.pool = vit_text_default_pool(c)};
    const vit_text_embed_opts *o = opts ? opts : &own;
    const char *prompt = o->prompt ? o->prompt : vit_text_prompt(c, vit_text_default_prompt(c));
    const int full = vit_text_embed_size(c, o->pool), dims = o->dimensions ? o->dimensions : full;
    if (dims < 0 || dims > full)
        return vit_fail(err, "dimensions %d: the embedding has %d", o->dimensions, full);
    if (B < 1 || B > c->w->max_batch)
        return vit_fail(err, "batch of %d texts outside 1..%d", B, c->w->max_batch);
    const int rc =
        o->pool == VIT_POOL_JOINT || !is_encoder(&c->w->m.cfg)
            ? embed_tower(c, texts, lengths, B, o->pool, prompt, dims, full, features, err)
            : embed_encoder(c, texts, lengths, B, o->pool, prompt, dims, features, err);
    /* Matryoshka: a cut row of a normalised embedding is normalised again */
    const int normalised = vit_text_embed_normalized(c, o->pool);
    for (int b = 0; rc == 0 && normalised && dims < full && b < B; b++)
        l2_normalize(features + (size_t)b * dims, dims);
    return rc;
}

int vit_text_embed_normalized(const vit_text_context *c, vit_pool pool) {
    return pool == VIT_POOL_JOINT ||
           (pool == VIT_POOL_SENTENCE && c->w->sentence && st_normalizes(&c->w->st));
}

int vit_text_embed(vit_text_context *c, const char *const *texts, const size_t *lengths, int B,
                   vit_pool pool, float *features, vit_error *err) {
    const vit_text_embed_opts o = {.pool = pool};
    return vit_text_embed_with(c, texts, lengths, B, &o, features, err);
}

int vit_text_prompt_count(const vit_text_context *c) {
    return c->w->sentence ? c->w->st.nprompts : 0;
}
const char *vit_text_prompt_name(const vit_text_context *c, int i) {
    return i >= 0 && i < vit_text_prompt_count(c) ? c->w->st.prompt_names[i] : NULL;
}
const char *vit_text_prompt(const vit_text_context *c, const char *name) {
    return name && c->w->sentence ? st_prompt(&c->w->st, name) : NULL;
}
const char *vit_text_default_prompt(const vit_text_context *c) {
    return c->w->sentence ? c->w->st.default_prompt : NULL;
}
const char *vit_text_pipeline(const vit_text_context *c) {
    return c->w->sentence ? c->w->pipeline : NULL;
}
const char *vit_text_similarity(const vit_text_context *c) {
    return c->w->sentence && c->w->st.similarity[0] ? c->w->st.similarity : "cosine";
}

int vit_text_classify(vit_text_context *c, const char *text, int k, vit_prediction *top,
                      vit_error *err) {
    if (k < 1) return vit_fail(err, "k %d is not positive", k);
    const size_t len = text ? strlen(text) : 0;
    if (vit_text_forward(c, &text, &len, 1, c->logits, c->logits, err) != 0) return -1;
    return vit_text_top_k(c, c->logits, k, top, err);
}

int vit_text_top_k(const vit_text_context *c, const float *probs, int k, vit_prediction *top,
                   vit_error *err) {
    const model_config *cfg = &c->w->m.cfg;
    if (cfg->opt.head != HEAD_CLASSIFIER) /* DIM_i "labels" would be a silent wrong answer */
        return vit_fail(err,
                        "%s has no classifier: its outputs are features (vit_text_embed, vit "
                        "embed --text)",
                        config_architecture(cfg));
    return api_top_k(c->w->m.cfg.labels, c->w->m.cfg.num_labels, probs, k, top, err);
}
