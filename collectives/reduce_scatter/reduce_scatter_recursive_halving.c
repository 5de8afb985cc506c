/*
 * reduce_scatter_recursive_halving.c - reduce_scatter in log2(p2) steps.
 *
 * Schedule: fold in (non-powers of two, the whole input), recursive
 * halving over super-blocks, fold out (engines/fold.h, recursive.h).  With
 * the even/odd fold newrank j stands for original ranks fold_first(j) ..
 * fold_first(j+1)-1, whose output blocks are contiguous, so super-block j
 * is exactly their blocks; at the end a newrank that stands for an extra
 * rank sends it its block.  Input: size·recvcount elements; output:
 * recvcount elements.
 *
 * Tags: 0 fold-in, 1 + k halving step k, 64 block to the extra.
 * Cost (n = p·b bytes in, b per rank): log2(p2)·alpha + (p2-1)/p2·n·beta +
 * (p2-1)/p2·n·gamma, plus 2 alpha + (n + b)·beta + n·gamma for the fold.
 */
#include <string.h>
#include "coll.h"
#include "engines/fold.h"
#include "engines/recursive.h"

enum { TAG_RH = 1 };
enum { PH_START = 0, PH_FOLD_IN, PH_HALVING, PH_FOLD_OUT };

typedef struct {
    rcoll__fold_t      fold;
    rcoll__recursive_t steps;
    char              *acc;       /* p·recvcount elements of scratch */
    char              *tmp;
} rs_rh_state_t;
RCOLL_ALG_STATE_CHECK(rs_rh_state_t);

static rcoll_status_t rs_rh_progress(rcoll_task_t *task)
{
    rs_rh_state_t *S = rcoll_task_state(task, rs_rh_state_t);
    rcoll_coll_args_t *a = &task->args;
    int rank = rcoll_task_rank(task);
    size_t b = a->count * rcoll__esize(task), n = (size_t)rcoll_task_size(task) * b, tmplen;
    rcoll__blocks_t sb;
    char *mem;
    rcoll_status_t st;

    rcoll__blocks_folded(&sb, task, a->count);
    switch (task->phase) {
    case PH_START:
        rcoll__fold_init(&S->fold, task);
        if (!rcoll__fold_is_extra(&S->fold)) {
            tmplen = S->fold.partner >= 0 ? n : rcoll__halving_tmp_bytes(&sb);
            mem = rcoll__scratch(task, n + tmplen, "reduce_scatter recursive_halving");
            if (mem == NULL) {
                return RCOLL_ERR_NO_MEMORY;
            }
            S->acc = mem;
            S->tmp = mem + n;
        }
        task->phase = PH_FOLD_IN;
        /* fall through */
    case PH_FOLD_IN:
        if ((st = rcoll__fold_in(task, &S->fold, a->sendbuf, n, S->tmp, S->acc)) != RCOLL_OK) {
            return st;
        }
        rcoll__halving_init(&S->steps, task, S->fold.newrank, &sb,
                            S->fold.partner >= 0 ? S->acc : a->sendbuf, S->acc, S->tmp, TAG_RH);
        task->phase = PH_HALVING;
        /* fall through */
    case PH_HALVING:
        if ((st = rcoll__recursive_progress(task, &S->steps)) != RCOLL_OK) {
            return st;
        }
        /* acc holds the blocks of the ranks this newrank stands for */
        if (!rcoll__fold_is_extra(&S->fold)) {
            memcpy(a->recvbuf, S->acc + (size_t)rank * b, b);
        }
        task->phase = PH_FOLD_OUT;
        /* fall through */
    case PH_FOLD_OUT:
        /* the partner sends the extra's block of acc; the extra receives it */
        if (S->fold.partner < 0) {
            return RCOLL_OK;
        }
        mem = rcoll__fold_is_extra(&S->fold) ? a->recvbuf : S->acc + (size_t)S->fold.partner * b;
        return rcoll__fold_out(task, &S->fold, mem, b);
    default:
        rcoll_error("reduce_scatter recursive_halving: bad phase %d", task->phase);
        return RCOLL_ERR_INTERNAL;
    }
}

static double rs_rh_cost(const rcoll_model_t *m, size_t bytes, int nranks, int ppn)
{
    double b = (double)bytes, n = b * nranks;

    return rcoll__cost_fold(m, n, b, nranks, ppn) + rcoll__cost_halving(m, n, nranks, ppn);
}

const rcoll_alg_t rcoll_reduce_scatter_recursive_halving = {
    .name     = "recursive_halving",
    .coll     = RCOLL_COLL_REDUCE_SCATTER,
    .progress = rs_rh_progress,
    .cost     = rs_rh_cost,
};
