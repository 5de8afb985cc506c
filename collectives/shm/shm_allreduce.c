/*
 * shm_allreduce.c - allreduce through the communicator's shared-memory
 * segment (every rank on one node), no messages: the reduction engine of
 * shm_reduction.c with every rank receiving the result.
 */
#include "shm.h"
#include "selector.h"
#include "shm_reduction.h"

static rcoll_status_t ar_shm_progress(rcoll_task_t *task)
{
    rcoll__shm_red_t *S = rcoll_task_state(task, rcoll__shm_red_t);
    rcoll_status_t st = rcoll__shm_enter(task, &S->op);
    if (st != RCOLL_OK) {
        return st;
    }
    return rcoll__shm_reduce_progress(task, S, -1);
}

static double ar_shm_cost(const rcoll_model_t *m, size_t bytes, int nranks, int ppn)
{
    double n = (double)bytes;
    /* small: copy in, read p slots; large: copy in, reduce a slice, copy out */
    int flat = rcoll__shm_flat_fits(bytes, nranks) &&
               (nranks > 2 || bytes <= RCOLL_TUNE_PAIR_FLAT_MAX_DEFAULT);
    return rcoll__shm_cost(m, nranks, ppn, flat ? n * (1 + nranks) : 3 * n);
}

const rcoll_alg_t rcoll_allreduce_shm = {
    .name     = "shm",
    .coll     = RCOLL_COLL_ALLREDUCE,
    .progress = ar_shm_progress,
    .cost     = ar_shm_cost,
    .abort    = rcoll__shm_abort,
};
