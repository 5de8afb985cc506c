/*
 * shm_reduce.c - reduce through the communicator's shared-memory segment
 * (every rank on one node), no messages: the reduction engine of
 * shm_reduction.c with only the root receiving the result.  Flat: every
 * rank leaves its vector in its slot and returns; the root folds them in
 * rank order.  Pipelined: every rank reduces its slice of each chunk; the
 * root alone copies the results out.  Single copy (shm_reduce_cma.c) where
 * the sizes fixed at set-up say, or where rank 0's run-time choice does
 * (shm_adapt.h, "rpath").
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
    rcoll__shm_t *sh = S->op.sh;
    size_t n = task->args.count * rcoll_datatype_size(task->args.dtype);
    if (S->path == 0) {
        /* once per call: the fixed sizes, or rank 0's run-time choice */
        int cma = rcoll__shm_cma_reduce(sh, n), explore = 0;
        if (rcoll__shm_rpath_covers(sh, n)) {
            if (!rcoll__shm_rpath_choose(task, &S->op, n, &cma, &explore)) {
                return RCOLL_INPROGRESS;
            }
            if (sh->me == 0 && task->args.root == 0) {
                S->t0 = rcoll__shm_adapt_now();
            }
        }
        S->path = cma ? 2 : 1;
        rcoll__shm_word_path(&S->op, S->path);
        S->explore = (int8_t)explore;
    }
    st = S->path == 2 ? rcoll__shm_reduce_cma(task, S, n)
                      : rcoll__shm_reduce_progress(task, S, task->args.root);
    if (st == RCOLL_OK && S->t0 != 0 && !(S->path == 1 && S->store.explore)) {
        /* (a store try's time is not the two-copy path's) */
        rcoll__shm_chooser_sample(&sh->rpath, n, S->path == 2, S->explore,
                                  rcoll__shm_adapt_now() - S->t0);
    }
    return st;
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
