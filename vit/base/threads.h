#ifndef VIT_BASE_THREADS_H
#define VIT_BASE_THREADS_H

/* Who owns the cores: OpenMP threads, for the length of one compute call. OpenMP keeps its thread
 * count per calling thread, so a count set once (at load, say) would not follow a context to
 * another thread: every compute entry point opens a scope with the context's count instead, and
 * closes it before returning, leaving the caller's own setting as it was.
 *
 *   threads_scope s = threads_begin(ctx->threads);
 *   ... parallel regions run with ctx->threads threads ...
 *   threads_end(s);
 */

typedef struct {
    int saved; /* the calling thread's count before the scope */
} threads_scope;

/* The count a context keeps: `requested` if positive, else the calling thread's OpenMP default
 * (OMP_NUM_THREADS, or one per core). */
int threads_resolve(int requested);

threads_scope threads_begin(int threads);
void threads_end(threads_scope scope);

/* Called first on a thread that decodes inputs beside the forward passes (vit/data/pipeline.c's,
 * vit/serve/batcher.c's): names it (as top -H and debuggers show it) and lowers it to nice 19.
 * The forward owns the cores: a decoder sharing a core with an OpenMP thread at equal priority
 * stalls the forward's static split at every barrier (eval on 2 cores: 0.82 of the speed at equal
 * priority, 0.84 at nice 19). Decoders are plain threads, not OpenMP: an OpenMP region started
 * off the forward's thread makes libgomp slow down the forward's own team (a 1 ms forward took
 * 140 ms). Per thread on Linux; harmless where it is refused. */
void threads_become_decoder(const char *name);

#endif
