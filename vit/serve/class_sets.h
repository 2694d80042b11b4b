#ifndef VIT_SERVE_CLASS_SETS_H
#define VIT_SERVE_CLASS_SETS_H

/* Zero-shot class sets for `vit serve`: a request's class names (and templates) embedded by a
 * joint model's text tower once (vit_classes_create), and kept in a small cache of the sets used
 * last, keyed by the exact lists, so that a repeated request does not embed them again. The
 * embedding runs on the thread that asks for a set not cached (the batcher's forward threads, in
 * vit serve); another thread asking for a set being embedded waits for it rather than embed it a
 * second time. Every function may be called from any thread. */

#include "vit/vit.h"

typedef struct {
    const char *const *names; /* the class names, in order */
    int count;
    const char *const *templates; /* each "{}" filled with a name; none: the names themselves */
    int n_templates;
} serve_class_query;

typedef struct serve_class_cache serve_class_cache;
typedef struct serve_class_set serve_class_set;

/* Holds up to capacity sets (at least 1) beyond those being embedded; a new one evicts the one
 * used longest ago. NULL when out of memory. */
serve_class_cache *serve_class_cache_create(int capacity);
/* Every set taken from it must have been released. */
void serve_class_cache_free(serve_class_cache *c);

/* The set of q if it is cached and embedded, taken (a hit), else NULL. Never embeds: cheap enough
 * for a thread that must not wait. */
serve_class_set *serve_class_cache_find(serve_class_cache *c, const serve_class_query *q);
/* The set of q, taken: cached, or being embedded by another thread (waits for it), or embedded
 * here with text (a joint model's text tower, used by this thread alone) and cached. NULL with err
 * when embedding it failed. */
serve_class_set *serve_class_cache_get(serve_class_cache *c, const serve_class_query *q,
                                       vit_text_context *text, vit_error *err);
/* Gives back a set taken by find or get (NULL: nothing); an evicted set is freed by its last
 * release. */
void serve_class_set_release(serve_class_cache *c, serve_class_set *s);
const vit_classes *serve_class_set_classes(const serve_class_set *s);

typedef struct {
    int cached;                          /* sets embedded and held now */
    unsigned long long embedded;         /* sets embedded (each a miss) */
    unsigned long long classes_embedded; /* class names embedded, over those sets */
    unsigned long long hits;             /* sets found cached or being embedded */
    unsigned long long evicted;          /* sets dropped for newer ones */
} serve_class_stats;
serve_class_stats serve_class_cache_stats(serve_class_cache *c);

#endif
