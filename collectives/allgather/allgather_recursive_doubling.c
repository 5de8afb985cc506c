/*
 * allgather_recursive_doubling.c - recursive doubling allgather, for small
 * blocks.
 *
 * Schedule: the fold (engines/fold.h) hands each extra rank's block to its
 * partner, log2(p2) recursive-doubling steps (engines/recursive.h) swap
 * ever larger windows of blocks between newrank and newrank ^ 2^k, and the
 * fold hands the whole result back to the extras.  The blocks are grouped
 * by the fold: newrank j holds the blocks of the ranks it stands for,
 * contiguous in the receive buffer, so every step is one message each way.
 *
 * Tags: 0 fold-in, 1 + k step k, 64 fold-out.
 */
#include <string.h>
#include "coll.h"
#include "engines/fold.h"
#include "engines/recursive.h"
#include "selector_cost.h"

enum { TAG_STEP = 1 };
enum { PH_START = 0, PH_FOLD_IN, PH_STEPS, PH_FOLD_OUT };

typedef struct {
    rcoll__fold_t      fold;
    rcoll__recursive_t steps;
} ag_rd_state_t;
RCOLL_ALG_STATE_CHECK(ag_rd_state_t);

static rcoll_status_t ag_rd_progress(rcoll_task_t *task)
{
    ag_rd_state_t *S = rcoll_task_state(task, ag_rd_state_t);
    rcoll_coll_args_t *a = &task->args;
    int p = rcoll_task_size(task), j = rcoll_task_rank(task);
    size_t blk = a->count * rcoll__esize(task);
    char *buf = a->recvbuf;
    rcoll__blocks_t b;
    rcoll_status_t st;

    switch (task->phase) {
    case PH_START:
        if (!a->in_place && a->sendbuf != buf + (size_t)j * blk) {
            memcpy(buf + (size_t)j * blk, a->sendbuf, blk);
        }
        rcoll__fold_init(&S->fold, task);
        task->phase = PH_FOLD_IN;
        /* fall through */
    case PH_FOLD_IN:
        /* the extra's block straight into its place at the partner */
        st = rcoll__fold_in(task, &S->fold, buf + (size_t)j * blk, blk,
                            S->fold.partner >= 0 ? buf + (size_t)S->fold.partner * blk : NULL, NULL);
        if (st != RCOLL_OK) {
            return st;
        }
        rcoll__blocks_folded(&b, task, a->count);
        rcoll__doubling_init(&S->steps, task, S->fold.newrank, &b, buf, TAG_STEP);
        task->phase = PH_STEPS;
        /* fall through */
    case PH_STEPS:
        if ((st = rcoll__recursive_progress(task, &S->steps)) != RCOLL_OK) {
            return st;
        }
        task->phase = PH_FOLD_OUT;
        /* fall through */
    case PH_FOLD_OUT:
        /* the result overwrites the extra's block: the fold in has completed */
        return rcoll__fold_out(task, &S->fold, buf, (size_t)p * blk);
    default:
        rcoll_error("allgather recursive_doubling: bad phase %d", task->phase);
        return RCOLL_ERR_INTERNAL;
    }
}

/* Fold in (one block) and out (p blocks) when p is not a power of two; in
 * step k a message of the largest window of 2^k newranks' blocks. */
static double ag_rd_cost(const rcoll_model_t *m, size_t bytes, int nranks, int ppn)
{
    int p2 = rcoll__pow2_floor(nranks);
    double t = 0, b = (double)bytes;

    for (int d = 1; d < p2; d <<= 1) {
        int most = 0;
        for (int base = 0; base < p2; base += d) {
            int w = rcoll__fold_first(base + d, nranks) - rcoll__fold_first(base, nranks);
            most = w > most ? w : most;
        }
        t += rcoll_cost_msg(m, b * most, nranks, ppn, rcoll_cost_cross_xor(d, ppn));
    }
    if (p2 < nranks) {
        int cross = rcoll_cost_cross_xor(1, ppn);
        t += rcoll_cost_msg(m, b, nranks, ppn, cross) + rcoll_cost_msg(m, b * nranks, nranks, ppn, cross);
    }
    return t;
}

const rcoll_alg_t rcoll_allgather_recursive_doubling = {
    .name     = "recursive_doubling",
    .coll     = RCOLL_COLL_ALLGATHER,
    .progress = ag_rd_progress,
    .cost     = ag_rd_cost,
};
