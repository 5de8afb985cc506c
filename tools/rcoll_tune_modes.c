/*
 * rcoll_tune_modes.c - timing the shm algorithm of a collective under two
 * values of one setting that a segment takes when it is set up
 * (RCOLL_SHM_CMA, RCOLL_SHM_STREAM_MIN): two duplicates of the world
 * communicator, each with its segment set up under one value, timed size
 * by size, the two alternating, so that a change of load hits both.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "rcoll_tune.h"

int tune_shm_measurable(const tune_run_t *r)
{
    const char *shm = rcoll_config_get(r->ctx, "RCOLL_SHM");
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

    if (r->nnodes != 1 || shm == NULL || strcmp(shm, "1") != 0)
        return 0;
    return ncpu <= 0 || r->size <= ncpu;
}

const char *tune_shm_why_not(const tune_run_t *r)
{
    return r->nnodes != 1 ? "the ranks span several nodes" : "RCOLL_SHM=0, or more ranks than CPUs";
}

rcoll_status_t tune_modes_open(tune_run_t *r, const char *var, const char *const value[2],
                               rcoll_comm_t *comm[2])
{
    const char *was = rcoll_config_get(r->ctx, var);
    char saved[64];
    rcoll_status_t st = RCOLL_OK;

    /* copied at once: rcoll_config_get's answer lasts until its next call */
    snprintf(saved, sizeof(saved), "%s", was != NULL ? was : "auto");
    comm[0] = comm[1] = NULL;
    for (int m = 0; m < 2 && st == RCOLL_OK; m++) {
        st = rcoll_config_set(r->ctx, var, value[m]);
        if (st == RCOLL_OK)
            st = rcoll_comm_dup(r->world, &comm[m]);
        if (st == RCOLL_OK)             /* the segment: set up by the first shm collective */
            st = tune_force(r, RCOLL_COLL_BARRIER, "shm");
        if (st == RCOLL_OK)
            st = rcoll_barrier(comm[m]);
        if (st == RCOLL_OK)
            st = tune_force(r, RCOLL_COLL_BARRIER, "");
    }
    if (st == RCOLL_OK)
        st = rcoll_config_set(r->ctx, var, saved);
    return st;
}

rcoll_status_t tune_modes_time(tune_run_t *r, rcoll_coll_type_t coll, rcoll_comm_t *comm[2],
                               const size_t *size, int n, double *t[2])
{
    rcoll_status_t st = tune_force(r, coll, "shm");

    for (int s = 0; s < n && st == RCOLL_OK; s++) {
        for (int m = 0; m < 2 && st == RCOLL_OK; m++) {
            r->comm = comm[m];
            t[m][s] = tune_time_coll(r, coll, size[s], &st);
            r->comm = r->world;
        }
    }
    if (st == RCOLL_OK)
        st = tune_force(r, coll, "");
    for (int m = 0; m < 2 && st == RCOLL_OK; m++)
        st = tune_max(r, t[m], n);
    return st;
}

rcoll_status_t tune_modes_measure(tune_run_t *r, const char *var, const char *const value[2],
                                  rcoll_coll_type_t coll, const size_t *size, int n, double *t[2])
{
    rcoll_comm_t *comm[2];
    rcoll_status_t st = tune_modes_open(r, var, value, comm);

    if (st == RCOLL_OK)
        st = tune_modes_time(r, coll, comm, size, n, t);
    tune_modes_close(comm);
    return st;
}

void tune_modes_close(rcoll_comm_t *comm[2])
{
    for (int m = 0; m < 2; m++) {
        if (comm[m] != NULL)
            rcoll_comm_free(comm[m]);
        comm[m] = NULL;
    }
}
