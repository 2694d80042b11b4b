#ifndef VIT_BASE_CLOCK_H
#define VIT_BASE_CLOCK_H

#include <time.h>

/* Seconds on the monotonic clock (durations only). */
static inline double clock_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#endif
