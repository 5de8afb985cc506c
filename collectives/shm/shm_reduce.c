/*
 * shm_reduce.c - reduce through the communicator's shared-memory segment
 * (every rank on one node), no messages: the reduction engine of
 * shm_reduction.c with only the root receiving the result.  Flat: every
 * rank leaves its vector in its slot and returns; the root folds them in
 * rank order.  Pipelined: every rank reduces its slice of each chunk; the
 * root alone copies the results out.
 */
#include "shm.h"
#include "shm_cma.h"
#include "shm_reduction.h"

static rcoll_status_t red_shm_progress(rcoll_task_t *task)
{
    rcoll__shm_red_t *S = rcoll_task_state(task, rcoll__shm_red_t);
    rcoll_status_t st = rcoll__shm_enter(task, &S->op);
    if (st != RCOLL_OK) {
        return st;
    }
    size_t n = task->args.count * rcoll_datatype_size(task->args.dtype);
    if (rcoll__shm_cma_reduce(S->op.sh, n)) {
        return rcoll__shm_reduce_cma(task, S, n);
    }
    return rcoll__shm_reduce_progress(task, S, task->args.root);
}

static double red_shm_cost(const rcoll_model_t *m, size_t bytes, int nranks, int ppn)
{
    double n = (double)bytes;
    int flat = rcoll__shm_flat_fits(bytes, nranks);
    /* flat: copy in, the root reads p slots; pipelined: copy in, a slice, copy out */
    return rcoll__shm_cost(m, nranks, ppn, flat ? n * (1 + nranks) : 2.5 * n);
}

const rcoll_alg_t rcoll_reduce_shm = {
    .name     = "shm",
    .coll     = RCOLL_COLL_REDUCE,
    .progress = red_shm_progress,
    .cost     = red_shm_cost,
    .abort    = rcoll__shm_abort,
};
