#include "vit/base/dist.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static dist_world world = {0, 1};

dist_world dist_get(void) {
    return world;
}

#ifdef VIT_MPI

#include <mpi.h>

static int joined;

/* mpirun sets OMPI_COMM_WORLD_SIZE (and PMIx its own) in every process it starts: without it,
 * MPI_Init would start a singleton runtime for nothing. */
static int launched_by_mpirun(void) {
    return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK");
}

int dist_start(int *argc, char ***argv, vit_error *err) {
    if (!launched_by_mpirun()) return 0;
    if (MPI_Init(argc, argv) != MPI_SUCCESS) return vit_fail(err, "MPI_Init failed");
    joined = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &world.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world.size);
    return 0;
}

void dist_stop(void) {
    if (joined) MPI_Finalize();
    joined = 0;
}

const char *dist_library(void) {
    static char version[64];
    if (!version[0]) {
        char v[MPI_MAX_LIBRARY_VERSION_STRING];
        int n = 0;
        MPI_Get_library_version(v, &n);
        /* "Open MPI v4.1.4, package: ..." -> "Open MPI v4.1.4" */
        const char *comma = strchr(v, ',');
        snprintf(version, sizeof version, "%.*s", comma ? (int)(comma - v) : 48, v);
    }
    return version;
}

int dist_all_ok(int ok) {
    if (!joined) return ok;
    int all = 0;
    ok = ok != 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    return all;
}

int dist_sum_doubles(double *v, int n, vit_error *err) {
    if (!joined || n == 0) return 0;
    if (MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD) != MPI_SUCCESS)
        return vit_fail(err, "MPI_Allreduce failed");
    return 0;
}

int dist_sum_floats(float *v, size_t n, vit_error *err) {
    if (!joined) return 0;
    /* in pieces of at most 2^30 elements: MPI counts are ints */
    for (size_t at = 0; at < n; at += (size_t)1 << 30) {
        const int count = (int)(n - at < ((size_t)1 << 30) ? n - at : (size_t)1 << 30);
        if (MPI_Allreduce(MPI_IN_PLACE, v + at, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD) !=
            MPI_SUCCESS)
            return vit_fail(err, "MPI_Allreduce failed");
    }
    return 0;
}

/* Rank 0: room for the gathered bytes, and the table of who sends how many. The other ranks
 * learn whether it got them: each returns the error, and no one starts sending. */
static int gather_room(int64_t sum, char **all, int **sizes, int **offsets, vit_error *err) {
    if (world.rank == 0) {
        *sizes = calloc((size_t)world.size, sizeof **sizes);
        *offsets = calloc((size_t)world.size, sizeof **offsets);
        *all = malloc((size_t)sum + 1);
    }
    if (dist_all_ok(world.rank != 0 || (*sizes && *offsets && *all))) return 0;
    free(*sizes), free(*offsets), free(*all);
    *sizes = *offsets = NULL, *all = NULL;
    return vit_fail(err, "rank 0: out of memory for %lld gathered bytes", (long long)sum);
}

int dist_gather(const void *mine, size_t n, char **all, size_t *total, vit_error *err) {
    *all = NULL, *total = 0;
    if (!joined) {
        if (!(*all = malloc(n ? n : 1))) return vit_fail(err, "out of memory");
        if (n) memcpy(*all, mine, n);
        *total = n;
        return 0;
    }
    /* the total first, on every rank, so that all refuse together */
    int64_t sum = (int64_t)n;
    MPI_Allreduce(MPI_IN_PLACE, &sum, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    if (sum > (int64_t)1 << 30)
        return vit_fail(err, "%lld bytes to gather on rank 0: more than 1 GiB", (long long)sum);
    int size = (int)n, *sizes = NULL, *offsets = NULL;
    if (gather_room(sum, all, &sizes, &offsets, err) != 0) return -1;
    if (world.rank == 0) *total = (size_t)sum;
    MPI_Gather(&size, 1, MPI_INT, sizes, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (world.rank == 0)
        for (int r = 0, at = 0; r < world.size; at += sizes[r], r++) offsets[r] = at;
    MPI_Gatherv(mine, size, MPI_BYTE, *all, sizes, offsets, MPI_BYTE, 0, MPI_COMM_WORLD);
    free(sizes);
    free(offsets);
    return 0;
}

#else

int dist_start(int *argc, char ***argv, vit_error *err) {
    (void)argc, (void)argv, (void)err;
    return 0;
}
void dist_stop(void) {}
const char *dist_library(void) {
    return NULL;
}
int dist_all_ok(int ok) {
    return ok;
}
int dist_sum_floats(float *v, size_t n, vit_error *err) {
    (void)v, (void)n, (void)err;
    return 0;
}
int dist_sum_doubles(double *v, int n, vit_error *err) {
    (void)v, (void)n, (void)err;
    return 0;
}
int dist_gather(const void *mine, size_t n, char **all, size_t *total, vit_error *err) {
    *total = 0;
    if (!(*all = malloc(n ? n : 1))) return vit_fail(err, "out of memory");
    if (n) memcpy(*all, mine, n);
    *total = n;
    return 0;
}

#endif

int dist_all_succeeded(int rc, const char *what, vit_error *err) {
    if (dist_all_ok(rc == 0)) return 0;
    return rc != 0 ? -1 : vit_fail(err, "another process failed %s (see its message)", what);
}
