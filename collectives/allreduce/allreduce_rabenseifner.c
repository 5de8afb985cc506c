/*
 * allreduce_rabenseifner.c - bandwidth-optimal allreduce in 2 log2(p) steps.
 *
 * Schedule: fold in (non-powers of two, whole vector), recursive-halving
 * reduce-scatter over p2 balanced blocks of the vector, recursive-doubling
 * allgather of the blocks, fold out (engines/fold.h, engines/recursive.h).
 * Each block's final value is computed by one rank and copied to the
 * others, so all ranks end with bitwise the same result.
 *
 * Tags: 0 fold-in, 1 + k halving step k, 32 + k doubling step k, 64 fold-out.
 * Cost: 2 log2(p2)·alpha + 2 (p2-1)/p2·n·beta + (p2-1)/p2·n·gamma, plus
 * 2(alpha + n·beta) + n·gamma for the fold.
 */
#include "coll.h"
#include "engines/fold.h"
#include "engines/recursive.h"

enum { TAG_RH = 1, TAG_AG = 32 };
enum { PH_START = 0, PH_FOLD_IN, PH_HALVING, PH_DOUBLING, PH_FOLD_OUT };

typedef struct {
    rcoll__fold_t      fold;
    rcoll__recursive_t steps;
    char              *tmp;
} ar_rab_state_t;
RCOLL_ALG_STATE_CHECK(ar_rab_state_t);

static rcoll_status_t ar_rab_progress(rcoll_task_t *task)
{
    ar_rab_state_t *S = rcoll_task_state(task, ar_rab_state_t);
    rcoll_coll_args_t *a = &task->args;
    size_t n = a->count * rcoll__esize(task);
    rcoll__blocks_t b;
    rcoll_status_t st;

    rcoll__blocks_balanced(&b, task, a->count);
    switch (task->phase) {
    case PH_START:
        rcoll__fold_init(&S->fold, task);
        if (!rcoll__fold_is_extra(&S->fold)) {
            size_t tmplen = S->fold.partner >= 0 ? n : rcoll__halving_tmp_bytes(&b);
            S->tmp = rcoll__scratch(task, tmplen, "allreduce rabenseifner");
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
        rcoll__halving_init(&S->steps, task, S->fold.newrank, &b,
                            S->fold.partner >= 0 ? a->recvbuf : a->sendbuf, a->recvbuf, S->tmp,
                            TAG_RH);
        task->phase = PH_HALVING;
        /* fall through */
    case PH_HALVING:
        if ((st = rcoll__recursive_progress(task, &S->steps)) != RCOLL_OK) {
            return st;
        }
        rcoll__doubling_init(&S->steps, task, S->fold.newrank, &b, a->recvbuf, TAG_AG);
        task->phase = PH_DOUBLING;
        /* fall through */
    case PH_DOUBLING:
        if ((st = rcoll__recursive_progress(task, &S->steps)) != RCOLL_OK) {
            return st;
        }
        task->phase = PH_FOLD_OUT;
        /* fall through */
    case PH_FOLD_OUT:
        return rcoll__fold_out(task, &S->fold, a->recvbuf, n);
    default:
        rcoll_error("allreduce rabenseifner: bad phase %d", task->phase);
        return RCOLL_ERR_INTERNAL;
    }
}

static double ar_rab_cost(const rcoll_model_t *m, size_t bytes, int nranks, int ppn)
{
    double n = (double)bytes;

    return rcoll__cost_fold(m, n, n, nranks, ppn) + rcoll__cost_halving(m, n, nranks, ppn) +
           rcoll__cost_doubling(m, n, nranks, ppn);
}

const rcoll_alg_t rcoll_allreduce_rabenseifner = {
    .name     = "rabenseifner",
    .coll     = RCOLL_COLL_ALLREDUCE,
    .progress = ar_rab_progress,
    .cost     = ar_rab_cost,
};
