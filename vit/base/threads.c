#include "vit/base/threads.h"

#include <omp.h>
#include <pthread.h>
#include <sys/resource.h>
#include <unistd.h>

int threads_resolve(int requested) {
    return requested > 0 ? requested : omp_get_max_threads();
}

threads_scope threads_begin(int threads) {
    const threads_scope s = {.saved = omp_get_max_threads()};
    if (threads > 0) omp_set_num_threads(threads);
    return s;
}

void threads_end(threads_scope s) {
    omp_set_num_threads(s.saved);
}

void threads_become_decoder(const char *name) {
    pthread_setname_np(pthread_self(), name);
    (void)setpriority(PRIO_PROCESS, (id_t)gettid(), 19);
}
