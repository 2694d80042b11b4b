#include "vit/serve/class_sets.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vit/base/error.h"

struct serve_class_set {
    char *key; /* the query's lists, each string with its NUL, after their counts */
    size_t key_size;
    uint64_t hash;
    vit_classes *classes; /* NULL while being embedded */
    int failed;           /* embedding failed: err says why (for those waiting) */
    vit_error err;
    int refs;                /* takers, and the cache while it lists the set */
    unsigned long long used; /* the cache's clock when last taken */
    serve_class_set *next;   /* in the cache's list */
};

struct serve_class_cache {
    pthread_mutex_t lock; /* guards everything below and every set's fields after the key */
    pthread_cond_t embedded;
    int capacity;
    serve_class_set *sets; /* embedded and being embedded */
    unsigned long long clock;
    serve_class_stats stats;
};

serve_class_cache *serve_class_cache_create(int capacity) {
    serve_class_cache *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->capacity = capacity < 1 ? 1 : capacity;
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->embedded, NULL);
    return c;
}

static void set_free(serve_class_set *s) {
    vit_classes_free(s->classes);
    free(s->key);
    free(s);
}

/* With the lock held. */
static void drop_ref(serve_class_set *s) {
    if (--s->refs == 0) set_free(s);
}

static void unlink_set(serve_class_cache *c, serve_class_set *s) {
    for (serve_class_set **link = &c->sets; *link; link = &(*link)->next)
        if (*link == s) {
            *link = s->next;
            return;
        }
}

void serve_class_cache_free(serve_class_cache *c) {
    if (!c) return;
    while (c->sets) {
        serve_class_set *s = c->sets;
        c->sets = s->next;
        drop_ref(s);
    }
    pthread_mutex_destroy(&c->lock);
    pthread_cond_destroy(&c->embedded);
    free(c);
}

/* "count\0name\0...\0n_templates\0template\0...": the lists' exact bytes, unambiguous (no string
 * holds a NUL). */
static char *make_key(const serve_class_query *q, size_t *size) {
    size_t n = 48;
    for (int i = 0; i < q->count; i++) n += strlen(q->names[i]) + 1;
    for (int i = 0; i < q->n_templates; i++) n += strlen(q->templates[i]) + 1;
    char *key = malloc(n), *at = key;
    if (!key) return NULL;
    at += sprintf(at, "%d", q->count) + 1;
    for (int i = 0; i < q->count; i++) at = stpcpy(at, q->names[i]) + 1;
    at += sprintf(at, "%d", q->n_templates) + 1;
    for (int i = 0; i < q->n_templates; i++) at = stpcpy(at, q->templates[i]) + 1;
    *size = (size_t)(at - key);
    return key;
}

static uint64_t fnv1a(const char *p, size_t n) {
    uint64_t h = 14695981039346656037ull;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)p[i]) * 1099511628211ull;
    return h;
}

/* With the lock held: the listed set of the key, or NULL. */
static serve_class_set *lookup(serve_class_cache *c, const char *key, size_t size, uint64_t hash) {
    for (serve_class_set *s = c->sets; s; s = s->next)
        if (s->hash == hash && s->key_size == size && memcmp(s->key, key, size) == 0) return s;
    return NULL;
}

/* With the lock held: s taken once more, as used now. */
static serve_class_set *take(serve_class_cache *c, serve_class_set *s) {
    s->refs++;
    s->used = ++c->clock;
    return s;
}

/* With the lock held: the sets used longest ago go until capacity are left (those being embedded
 * are not counted). */
static void evict(serve_class_cache *c) {
    for (;;) {
        int ready = 0;
        serve_class_set *oldest = NULL;
        for (serve_class_set *s = c->sets; s; s = s->next) {
            if (!s->classes) continue;
            ready++;
            if (!oldest || s->used < oldest->used) oldest = s;
        }
        c->stats.cached = ready;
        if (ready <= c->capacity) return;
        unlink_set(c, oldest);
        drop_ref(oldest);
        c->stats.evicted++;
    }
}

serve_class_set *serve_class_cache_find(serve_class_cache *c, const serve_class_query *q) {
    size_t size;
    char *key = make_key(q, &size);
    if (!key) return NULL;
    const uint64_t hash = fnv1a(key, size);
    pthread_mutex_lock(&c->lock);
    serve_class_set *s = lookup(c, key, size, hash);
    if (s && s->classes) {
        take(c, s);
        c->stats.hits++;
    } else {
        s = NULL;
    }
    pthread_mutex_unlock(&c->lock);
    free(key);
    return s;
}

/* Waits (the lock held) for s, which another thread embeds; the caller has taken it. */
static serve_class_set *await_set(serve_class_cache *c, serve_class_set *s, vit_error *err) {
    while (!s->classes && !s->failed) pthread_cond_wait(&c->embedded, &c->lock);
    if (s->failed) {
        if (err) *err = s->err;
        drop_ref(s);
        return NULL;
    }
    c->stats.hits++;
    return s;
}

/* Embeds s's classes (the lock not held), then lists them or, failing, unlists s. */
static serve_class_set *embed(serve_class_cache *c, serve_class_set *s, const serve_class_query *q,
                              vit_text_context *text, vit_error *err) {
    vit_error why = {0};
    vit_classes *classes =
        vit_classes_create(text, q->names, q->count, q->templates, q->n_templates, &why);
    pthread_mutex_lock(&c->lock);
    if (classes) {
        s->classes = classes;
        s->used = ++c->clock;
        c->stats.embedded++;
        c->stats.classes_embedded += (unsigned long long)q->count;
        evict(c);
    } else {
        s->failed = 1;
        s->err = why;
        unlink_set(c, s);
        s->refs--;   /* the cache's (the caller's is still held) */
        drop_ref(s); /* the caller's */
        s = NULL;
        if (err) *err = why;
    }
    pthread_cond_broadcast(&c->embedded);
    pthread_mutex_unlock(&c->lock);
    return s;
}

serve_class_set *serve_class_cache_get(serve_class_cache *c, const serve_class_query *q,
                                       vit_text_context *text, vit_error *err) {
    size_t size;
    char *key = make_key(q, &size);
    if (!key) return vit_fail(err, "out of memory"), NULL;
    const uint64_t hash = fnv1a(key, size);
    pthread_mutex_lock(&c->lock);
    serve_class_set *s = lookup(c, key, size, hash);
    if (s) {
        free(key);
        s = await_set(c, take(c, s), err);
        pthread_mutex_unlock(&c->lock);
        return s;
    }
    if (!(s = calloc(1, sizeof *s))) {
        pthread_mutex_unlock(&c->lock);
        free(key);
        return vit_fail(err, "out of memory"), NULL;
    }
    *s = (serve_class_set){.key = key, .key_size = size, .hash = hash, .refs = 2, .next = c->sets};
    c->sets = s; /* listed while being embedded: others asking for it wait */
    pthread_mutex_unlock(&c->lock);
    return embed(c, s, q, text, err);
}

void serve_class_set_release(serve_class_cache *c, serve_class_set *s) {
    if (!s) return;
    pthread_mutex_lock(&c->lock);
    drop_ref(s);
    pthread_mutex_unlock(&c->lock);
}

const vit_classes *serve_class_set_classes(const serve_class_set *s) {
    return s->classes;
}

serve_class_stats serve_class_cache_stats(serve_class_cache *c) {
    pthread_mutex_lock(&c->lock);
    const serve_class_stats stats = c->stats;
    pthread_mutex_unlock(&c->lock);
    return stats;
}
