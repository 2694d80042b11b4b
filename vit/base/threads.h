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

#endif
