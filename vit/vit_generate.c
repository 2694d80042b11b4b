/* The public API for image to text (vit.h): a VisionEncoderDecoderModel folder as an image context
 * over its encoder (vit.c), its decoder, the generation settings and the tokenizer that turns ids
 * back into text. Generation (vit/gen) sees the decoder only as a function from the rows' newest
 * tokens to their next-token logits. */
#include "vit/vit.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/text_tokenizer.h"
#include "vit/base/alloc.h"
#include "vit/base/threads.h"
#include "vit/gen/generate.h"
#include "vit/io/model_dir.h"
#include "vit/model/decoder_model.h"
#include "vit/vit_internal.h"

#define DEFAULT_MAX_BEAMS 8
#define MAX_BEAMS_LIMIT   64

/* Shared by the contexts of one vit_gen_load and its vit_gen_share copies; read-only after load. */
typedef struct {
    atomic_int refs;
    model dec;                                           /* the decoder, prepared */
    text_tokenizer *tok;                                 /* decodes generated ids */
    char tokenizer_error[sizeof(((vit_error *)0)->msg)]; /* tok NULL (params.tokenizer_optional) */
    gen_config gen;                    /* generation_config.json (else config.json's settings) */
    int max_images, max_beams, states; /* states: the encoder's output rows per image */
    char compute[128];
} gen_weights;

struct vit_gen_context {
    gen_weights *w;
    vit_context *image; /* the encoder, with its own state */
    int threads;
    decoder_acts acts; /* sized on demand: rows x positions */
    gemm_state *gemm;
    int acts_rows, acts_len;
    float *pixels; /* one image's (vit_generate_file) */
};

vit_gen_params vit_gen_default_params(void) {
    return (vit_gen_params){.image = vit_default_params(), .max_beams = DEFAULT_MAX_BEAMS};
}

static void gen_weights_release(gen_weights *w) {
    if (!w || atomic_fetch_sub(&w->refs, 1) != 1) return;
    model_free(&w->dec);
    text_tokenizer_free(w->tok);
    free(w);
}

/* Refuses other folders before any weight is read. */
static int require_ved(const char *dir, vit_error *err) {
    model_config cfg;
    if (model_config_load_tower(dir, TOWER_TEXT, &cfg, err) != 0) return -1;
    const int ok = cfg.kind == MODEL_DECODER;
    model_config_free(&cfg);
    return ok ? 0
              : vit_fail(err,
                         "%s: not an image-to-text model (config.json model_type is not "
                         "vision-encoder-decoder)",
                         dir);
}

/* dir's tokenizer; when optional, one that does not load leaves w->tok NULL, saying why. */
static int load_tokenizer(gen_weights *w, const char *dir, int optional, vit_error *err) {
    vit_error why = {0};
    if (text_tokenizer_load(dir, &w->tok, &why) == 0) return 0;
    if (!optional) return vit_fail(err, "%s", why.msg);
    w->tok = NULL;
    snprintf(w->tokenizer_error, sizeof w->tokenizer_error, "%s", why.msg);
    return 0;
}

/* The decoder, its generation settings and tokenizer, prepared for images x max(beams, states)
 * rows: a step runs images x beams rows, the cross-attention's keys images x states. */
static gen_weights *gen_weights_load(const char *dir, const vit_gen_params *p, int states,
                                     int threads, vit_error *err) {
    gen_weights *w = calloc(1, sizeof *w);
    if (!w) return vit_fail(err, "out of memory"), NULL;
    atomic_init(&w->refs, 1);
    w->max_images = p->image.max_batch > 0 ? p->image.max_batch : 1;
    w->max_beams = p->max_beams > 0 ? p->max_beams : DEFAULT_MAX_BEAMS;
    w->states = states;
    const int per_image = w->max_beams > states ? w->max_beams : states;
    if (model_load_tower(&w->dec, dir, TOWER_TEXT, err) == 0 &&
        gen_config_load(dir, &w->gen, err) == 0 &&
        load_tokenizer(w, dir, p->tokenizer_optional, err) == 0 &&
        api_prepare(&w->dec, p->image.backend, p->image.precision, w->max_images, per_image,
                    threads, 0, w->compute, sizeof w->compute, err) == 0)
        return w;
    gen_weights_release(w);
    return NULL;
}

static int add_gemm_state(vit_gen_context *c, vit_error *err) {
    c->acts.gemm = c->gemm = model_gemm_state(&c->w->dec, err);
    return c->gemm ? 0 : -1;
}

static vit_gen_context *context_create(gen_weights *w, vit_context *image, vit_error *err) {
    vit_gen_context *c = calloc(1, sizeof *c);
    if (!c) {
        gen_weights_release(w);
        vit_free(image);
        return vit_fail(err, "out of memory"), NULL;
    }
    c->w = w;
    c->image = image;
    c->threads = api_image_context(image).threads;
    c->pixels = vit_alloc_floats(vit_input_floats(image));
    if (!c->pixels || add_gemm_state(c, err) != 0) {
        if (!c->pixels) vit_fail(err, "out of memory");
        vit_gen_free(c);
        return NULL;
    }
    return c;
}

vit_gen_context *vit_gen_load(const char *model, const vit_gen_params *params, vit_error *err) {
    const vit_gen_params p = params ? *params : vit_gen_default_params();
    char dir[4096];
    if (vit_resolve_model(model, dir, sizeof dir, err) != 0) return NULL;
    if (p.max_beams > MAX_BEAMS_LIMIT)
        return vit_fail(err, "%d beams: more than the limit of %d", p.max_beams, MAX_BEAMS_LIMIT),
               NULL;
    if (require_ved(dir, err) != 0) return NULL;
    vit_context *image = vit_load(dir, &p.image, err);
    if (!image) return NULL;
    gen_weights *w =
        gen_weights_load(dir, &p, vit_tokens(image), api_image_context(image).threads, err);
    if (!w) {
        vit_free(image);
        return NULL;
    }
    return context_create(w, image, err);
}

const char *vit_gen_tokenizer_error(const vit_gen_context *c) {
    return c->w->tok ? NULL : c->w->tokenizer_error;
}

vit_gen_context *vit_gen_share(const vit_gen_context *ctx, vit_error *err) {
    vit_context *image = vit_share(ctx->image, err);
    if (!image) return NULL;
    atomic_fetch_add(&ctx->w->refs, 1);
    return context_create(ctx->w, image, err);
}

void vit_gen_free(vit_gen_context *c) {
    if (!c) return;
    decoder_acts_free(&c->acts);
    gemm_state_free(c->gemm);
    free(c->pixels);
    vit_free(c->image);
    gen_weights_release(c->w);
    free(c);
}

vit_context *vit_gen_image_context(vit_gen_context *c) {
    return c->image;
}
const char *vit_gen_compute(const vit_gen_context *c) {
    return c->w->compute;
}
void vit_gen_decoder_info(const vit_gen_context *c, vit_model_info *info) {
    api_tower_info(&c->w->dec, info);
    info->capabilities = VIT_CAN_GENERATE;
    if (c->w->tok) {
        info->tokenizer = text_tokenizer_class(c->w->tok);
        info->tokenizer_kind = text_tokenizer_kind(c->w->tok);
        info->tokenizer_ids = text_tokenizer_vocab_size(c->w->tok);
    }
    const gen_config *g = &c->w->gen;
    info->num_eos = g->num_eos < 4 ? g->num_eos : 4;
    for (int i = 0; i < info->num_eos; i++) info->eos_ids[i] = g->eos_ids[i];
    info->pad_id = g->pad_token_id;
    info->decoder_start_id = g->decoder_start_token_id;
    info->bos_id = g->bos_token_id;
}
int vit_gen_vocab_size(const vit_gen_context *c) {
    return c->w->dec.cfg.vocab_size;
}
int vit_gen_max_new_tokens(const vit_gen_context *c) {
    return c->w->dec.cfg.max_position_embeddings;
}

vit_gen_options vit_gen_default_options(const vit_gen_context *c) {
    const gen_config *g = &c->w->gen;
    return (vit_gen_options){.num_beams = g->num_beams,
                             .max_new_tokens = g->max_new_tokens > 0 ? g->max_new_tokens : 0,
                             .max_length = g->max_length,
                             .min_length = g->min_length,
                             .length_penalty = g->length_penalty,
                             .early_stopping = (int)g->early_stopping,
                             .no_repeat_ngram_size = g->no_repeat_ngram_size};
}

/* The model's settings with the caller's options over them. */
static gen_config options_config(const vit_gen_context *c, const vit_gen_options *o) {
    gen_config g = c->w->gen;
    g.num_beams = o->num_beams;
    g.max_new_tokens = o->max_new_tokens > 0 ? o->max_new_tokens : -1;
    g.max_length = o->max_length;
    g.min_length = o->min_length;
    g.length_penalty = o->length_penalty;
    g.early_stopping = (gen_early_stopping)o->early_stopping;
    g.no_repeat_ngram_size = o->no_repeat_ngram_size;
    return g;
}

/* ---- generation ---- */

/* Decoder buffers for rows sequences of up to len positions (kept when large enough). */
static int ensure_buffers(vit_gen_context *c, int rows, int len, vit_error *err) {
    const model *m = &c->w->dec;
    if (rows <= c->acts_rows && len <= c->acts_len) return 0;
    decoder_acts_free(&c->acts);
    c->acts_rows = c->acts_len = 0;
    if (decoder_acts_alloc(&c->acts, m, rows, len, c->w->max_images, c->w->states, err) != 0)
        return -1;
    c->acts.gemm = c->gemm;
    c->acts_rows = rows;
    c->acts_len = len;
    return 0;
}

/* gen_logits_fn: the decoder's step, the cache reordered to the rows' parents first. */
static int decoder_step(void *ctx, int step, const int *parent, const int32_t *tokens, int rows,
                        float *logits, vit_error *err) {
    vit_gen_context *c = ctx;
    (void)step;
    int identity = 1;
    for (int r = 0; parent && r < rows; r++) identity &= parent[r] == r;
    if (parent && !identity) decoder_reorder(&c->acts, parent, rows);
    return decoder_forward(&c->w->dec, &c->acts, tokens, rows, 1, 0, logits, err);
}

/* generated ids -> vit_generation (the text decoded with special tokens skipped). */
static int to_generation(const vit_gen_context *c, gen_sequence *s, vit_generation *out,
                         vit_error *err) {
    const int n = text_tokenizer_decode(c->w->tok, s->ids, s->length, 1, NULL, 0, err);
    char *text = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (n >= 0 && !text) return vit_fail(err, "out of memory for a text of %d bytes", n);
    if (!text ||
        text_tokenizer_decode(c->w->tok, s->ids, s->length, 1, text, (size_t)n + 1, err) < 0) {
        free(text);
        return -1;
    }
    *out = (vit_generation){.text = text, .ids = s->ids, .num_ids = s->length, .score = s->score};
    s->ids = NULL; /* the generation's now */
    return 0;
}

static int run_generation(vit_gen_context *c, int B, const gen_config *g, vit_generation *out,
                          vit_error *err) {
    const int beams = g->num_beams, rows = B * beams;
    /* the longest sequence generation may reach (HF lengthens a default max_length by the start
     * token), within the decoder's positions: beyond them a step fails, as HF's would */
    int len = (g->max_new_tokens > 0 ? g->max_new_tokens : g->max_length) + 1;
    if (len > c->w->dec.cfg.max_position_embeddings) len = c->w->dec.cfg.max_position_embeddings;
    if (beams > c->w->max_beams)
        return vit_fail(err, "%d beams: the model was loaded for at most %d", beams,
                        c->w->max_beams);
    if (ensure_buffers(c, rows, len, err) != 0) return -1;
    const float *states = api_image_hidden(c->image);
    if (decoder_set_states(&c->w->dec, &c->acts, states, B, c->w->states, beams, err) != 0)
        return -1;
    gen_sequence *seqs = calloc((size_t)B, sizeof *seqs);
    if (!seqs) return vit_fail(err, "out of memory");
    int rc = gen_run(g, B, c->w->dec.cfg.vocab_size, decoder_step, c, seqs, err);
    int done = 0;
    for (; rc == 0 && done < B; done++) rc = to_generation(c, &seqs[done], &out[done], err);
    if (rc != 0) vit_generation_free(out, done);
    gen_sequences_free(seqs, B); /* their ids (those not handed over) */
    free(seqs);
    return rc;
}

int vit_generate(vit_gen_context *c, const float *pixels, int batch, const vit_gen_options *opt,
                 vit_generation *out, vit_error *err) {
    const vit_gen_options o = opt ? *opt : vit_gen_default_options(c);
    const gen_config g = options_config(c, &o);
    if (batch < 1 || batch > c->w->max_images)
        return vit_fail(err, "batch %d outside 1..%d", batch, c->w->max_images);
    if (!c->w->tok) return vit_fail(err, "%s", c->w->tokenizer_error);
    if (vit_forward(c->image, pixels, batch, NULL, err) != 0) return -1;
    const threads_scope scope = threads_begin(c->threads);
    const int rc = run_generation(c, batch, &g, out, err);
    threads_end(scope);
    return rc;
}

int vit_generate_file(vit_gen_context *c, const char *path, const vit_gen_options *opt,
                      vit_generation *out, vit_error *err) {
    if (vit_preprocess_file(c->image, path, c->pixels, err) != 0) return -1;
    return vit_generate(c, c->pixels, 1, opt, out, err);
}

void vit_generation_free(vit_generation *g, int n) {
    for (int i = 0; g && i < n; i++) {
        free(g[i].text);
        free(g[i].ids);
        g[i] = (vit_generation){0};
    }
}
