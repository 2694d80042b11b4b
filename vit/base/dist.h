#ifndef VIT_BASE_DIST_H
#define VIT_BASE_DIST_H

/* Processes that work together, started by mpirun (OpenMPI): each has a rank, 0..size-1. Built
 * with VIT_MPI and launched by mpirun, dist_start joins them (MPI_Init); otherwise, or in a build
 * without MPI, the process is alone: rank 0 of 1, and every function below is a no-op that
 * succeeds. Calls are collective: every rank makes the same ones in the same order. */

#include <stddef.h>
#include <stdint.h>

#include "vit/base/error.h"

typedef struct {
    int rank, size;
} dist_world;

/* Joins the processes mpirun started, if it did. Call once, from main, before any thread. */
int dist_start(int *argc, char ***argv, vit_error *err);
void dist_stop(void);
dist_world dist_get(void);
/* Whether this build can run under mpirun ("OpenMPI 4.1.4"), or NULL. */
const char *dist_library(void);

/* Whether every rank's ok is nonzero (each rank gets the answer). */
int dist_all_ok(int ok);
/* 0 when every rank's rc is 0; else -1 on every rank: err keeps a failed rank's own reason, and
 * tells the others "another process failed <what> (see its message)". Where one rank can fail
 * alone, this is how the others learn it instead of waiting for it (or aborting). Alone: rc. */
int dist_all_succeeded(int rc, const char *what, vit_error *err);
/* Sums n doubles / floats over the ranks, in place, on every rank. */
int dist_sum_doubles(double *v, int n, vit_error *err);
int dist_sum_floats(float *v, size_t n, vit_error *err);
/* Rank 0 gets every rank's bytes one after another in rank order (*all malloc'ed, *total
 * bytes); the other ranks get NULL and 0. A failure (more than 1 GiB in all, rank 0 out of
 * memory) is every rank's: each returns -1. */
int dist_gather(const void *mine, size_t n, char **all, size_t *total, vit_error *err);

#endif
