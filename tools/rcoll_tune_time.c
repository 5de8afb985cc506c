/*
 * rcoll_tune_time.c - timing one collective call shape: forced algorithm,
 * a fixed number of calls per repetition (the same on every rank, from the
 * size alone), the median of the repetitions.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "rcoll_tune.h"

double tune_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double tune_median(double *v, int n)
{
    if (n <= 0)
        return 0;
    qsort(v, (size_t)n, sizeof(*v), by_value);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

rcoll_status_t tune_max(tune_run_t *r, double *v, int n)
{
    if (n <= 0)
        return RCOLL_OK;
    double *in = malloc((size_t)n * sizeof(*in));
    if (in == NULL)
        return RCOLL_ERR_NO_MEMORY;
    memcpy(in, v, (size_t)n * sizeof(*in));
    rcoll_status_t st = rcoll_allreduce(in, v, (size_t)n, RCOLL_FLOAT64, RCOLL_MAX, r->world);
    free(in);
    return st;
}

static const char *const force_names[RCOLL_COLL_LAST] = {
    [RCOLL_COLL_ALLREDUCE]      = "RCOLL_ALLREDUCE_ALGORITHM",
    [RCOLL_COLL_BCAST]          = "RCOLL_BCAST_ALGORITHM",
    [RCOLL_COLL_BARRIER]        = "RCOLL_BARRIER_ALGORITHM",
    [RCOLL_COLL_REDUCE]         = "RCOLL_REDUCE_ALGORITHM",
    [RCOLL_COLL_ALLGATHER]      = "RCOLL_ALLGATHER_ALGORITHM",
    [RCOLL_COLL_REDUCE_SCATTER] = "RCOLL_REDUCE_SCATTER_ALGORITHM",
};

rcoll_status_t tune_force(tune_run_t *r, rcoll_coll_type_t coll, const char *name)
{
    return rcoll_config_set(r->ctx, force_names[coll], name);
}

rcoll_status_t tune_call(tune_run_t *r, rcoll_coll_type_t coll, size_t bytes, int bcast_root)
{
    size_t count = bytes / sizeof(float);

    switch (coll) {
    case RCOLL_COLL_ALLREDUCE:
        return rcoll_allreduce(r->sbuf, r->rbuf, count, RCOLL_FLOAT32, RCOLL_SUM, r->comm);
    case RCOLL_COLL_BCAST:
        return rcoll_bcast(r->rbuf, bytes, RCOLL_UINT8, bcast_root, r->comm);
    case RCOLL_COLL_BARRIER:
        return rcoll_barrier(r->comm);
    case RCOLL_COLL_REDUCE:
        return rcoll_reduce(r->sbuf, r->rbuf, count, RCOLL_FLOAT32, RCOLL_SUM, 0, r->comm);
    case RCOLL_COLL_ALLGATHER:
        return rcoll_allgather(r->sbuf, r->rbuf, count, RCOLL_FLOAT32, r->comm);
    case RCOLL_COLL_REDUCE_SCATTER:
        return rcoll_reduce_scatter(r->sbuf, r->rbuf, count, RCOLL_FLOAT32, RCOLL_SUM, r->comm);
    default:
        return RCOLL_ERR_INVALID_ARG;
    }
}

/* Calls per repetition: enough that a repetition moves r->target bytes
 * (small calls are timed in bulk), at most 200; a function of the size
 * only, so every rank makes the same calls. */
static int calls_for(const tune_run_t *r, size_t bytes)
{
    size_t n = r->target / (bytes > 64 ? bytes : 64);
    return n < 1 ? 1 : n > 200 ? 200 : (int)n;
}

double tune_time_coll(tune_run_t *r, rcoll_coll_type_t coll, size_t bytes, rcoll_status_t *st)
{
    int calls = calls_for(r, bytes);
    double t[64];
    int reps = r->reps < 64 ? r->reps : 64;

    /* warm-up: first touch of the buffers, the algorithm's set-up */
    for (int i = 0; i < 2; i++)
        if ((*st = tune_call(r, coll, bytes, 0)) != RCOLL_OK)
            return -1;
    for (int k = 0; k < reps; k++) {
        if ((*st = rcoll_barrier(r->comm)) != RCOLL_OK)
            return -1;
        double t0 = tune_now();
        for (int i = 0; i < calls; i++)
            if ((*st = tune_call(r, coll, bytes, 0)) != RCOLL_OK)
                return -1;
        t[k] = (tune_now() - t0) / calls;
    }
    *st = RCOLL_OK;
    return tune_median(t, reps);
}
