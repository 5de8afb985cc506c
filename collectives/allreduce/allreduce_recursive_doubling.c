/*
 * allreduce_recursive_doubling.c - latency-optimal allreduce.
 *
 * Schedule: fold the extra ranks of a non-power of two in (their vector
 * reduced into their partner's), log2(p2) steps in which newrank exchanges
 * its whole vector with newrank ^ 2^k and both compute (lower group) op
 * (upper group), so every rank ends with bitwise the same result, then
 * fold the result out to the extras (engines/fold.h, engines/recursive.h).
 *
 * Tags: 0 fold-in, 1 + k step k, 64 fold-out.
 * Cost: ceil(log2 p)·(alpha + n·beta + n·gamma), plus 2(alpha + n·beta) +
 * n·gamma for the fold when p is not a power of two.
 */
#include "coll.h"
#include "engines/fold.h"
#include "engines/recursive.h"

enum { TAG_STEP = 1 };
enum { PH_START = 0, PH_FOLD_IN, PH_STEPS, PH_FOLD_OUT };

typedef struct {
    rcoll__fold_t      fold;
    rcoll__recursive_t steps;
    char              *tmp;
} ar_rd_state_t;
RCOLL_ALG_STATE_CHECK(ar_rd_state_t);

static rcoll_status_t ar_rd_progress(rcoll_task_t *task)
{
    ar_rd_state_t *S = rcoll_task_state(task, ar_rd_state_t);
    rcoll_coll_args_t *a = &task->args;
    size_t n = a->count * rcoll__esize(task);
    rcoll_status_t st;

    switch (task->phase) {
    case PH_START:
        rcoll__fold_init(&S->fold, task);
        if (!rcoll__fold_is_extra(&S->fold)) {
            S->tmp = rcoll__scratch(task, n, "allreduce recursive_doubling");
            if (S->tmp == NULL) {
                return RCOLL_ERR_NO_MEMORY;
            }
        }
        task->phase = PH_FOLD_IN;
        /* fall through */
    case PH_FOLD_IN:
        if ((st = rcoll__fold_in(task, &S->fold, a->sendbuf, n, S->tmp, a->recvbuf)) != RCOLL_OK) {
            return st;
        }
        rcoll__reduce_all_init(&S->steps, task, S->fold.newrank, n,
                               S->fold.partner >= 0 ? a->recvbuf : a->sendbuf, a->recvbuf,
                               S->tmp, TAG_STEP);
        task->phase = PH_STEPS;
        /* fall through */
    case PH_STEPS:
        if ((st = rcoll__recursive_progress(task, &S->steps)) != RCOLL_OK) {
            return st;
        }
        task->phase = PH_FOLD_OUT;
        /* fall through */
    case PH_FOLD_OUT:
        return rcoll__fold_out(task, &S->fold, a->recvbuf, n);
    default:
        rcoll_error("allreduce recursive_doubling: bad phase %d", task->phase);
        return RCOLL_ERR_INTERNAL;
    }
}

static double ar_rd_cost(const rcoll_model_t *m, size_t bytes, int nranks, int ppn)
{
    double n = (double)bytes;
    int steps = rcoll__log2_exact(rcoll__pow2_floor(nranks));

    return rcoll__cost_fold(m, n, n, nranks, ppn) + rcoll__cost_tree(m, n, steps, 1, 1, nranks, ppn);
}

const rcoll_alg_t rcoll_allreduce_recursive_doubling = {
    .name     = "recursive_doubling",
    .coll     = RCOLL_COLL_ALLREDUCE,
    .progress = ar_rd_progress,
    .cost     = ar_rd_cost,
};
