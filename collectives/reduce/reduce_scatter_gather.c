/*
 * reduce_scatter_gather.c - reduce for large vectors (Rabenseifner's
 * reduce).
 *
 * Schedule: fold in (non-powers of two, whole vector), recursive-halving
 * reduce-scatter over p2 balanced blocks, binomial gather of the blocks to
 * the root's newrank (the target), and when the root is an extra rank, its
 * partner (the target) hands the result over as the fold out
 * (engines/fold.h, engines/recursive.h).
 *
 * Tags: 0 fold-in, 1 + k halving step k, 32 + k gather step k, 64 result
 * to an extra root.
 * Cost: 2 log2(p2)·alpha + 2 (p2-1)/p2·n·beta + (p2-1)/p2·n·gamma, plus
 * alpha + n·beta + n·gamma for the fold.
 */
#include "coll.h"
#include "selector_cost.h"
#include "engines/fold.h"
#include "engines/recursive.h"

enum { TAG_RH = 1, TAG_GATHER = 32 };
enum { PH_START = 0, PH_FOLD_IN, PH_HALVING, PH_GATHER, PH_FOLD_OUT };

typedef struct {
    rcoll__fold_t      fold;
    rcoll__recursive_t steps;
    char              *acc;       /* the vector being reduced: root's recvbuf or scratch */
    char              *tmp;
    int                target;    /* the newrank the blocks gather to */
} red_rsg_state_t;
RCOLL_ALG_STATE_CHECK(red_rsg_state_t);

/* The newrank that gathers the result: the root's, or its partner's when
 * the root is an extra rank. */
static int gather_target(int root, int p)
{
    int nr = rcoll__fold_newrank(root, p);

    return nr >= 0 ? nr : rcoll__fold_newrank(rcoll__fold_partner(root, p), p);
}

static rcoll_status_t red_rsg_progress(rcoll_task_t *task)
{
    red_rsg_state_t *S = rcoll_task_state(task, red_rsg_state_t);
    rcoll_coll_args_t *a = &task->args;
    int rank = rcoll_task_rank(task), p = rcoll_task_size(task);
    size_t n = a->count * rcoll__esize(task), tmplen;
    rcoll__blocks_t b;
    char *mem;
    rcoll_status_t st;

    rcoll__blocks_balanced(&b, task, a->count);
    switch (task->phase) {
    case PH_START:
        rcoll__fold_init(&S->fold, task);
        S->target = gather_target(a->root, p);
        if (!rcoll__fold_is_extra(&S->fold)) {
            tmplen = S->fold.partner >= 0 ? n : rcoll__halving_tmp_bytes(&b);
            mem = rcoll__scratch(task, tmplen + (rank == a->root ? 0 : n),
                                 "reduce reduce_scatter_gather");
            if (mem == NULL) {
                return RCOLL_ERR_NO_MEMORY;
            }
            S->tmp = mem;
            S->acc = rank == a->root ? (char *)a->recvbuf : mem + tmplen;
        }
        task->phase = PH_FOLD_IN;
        /* fall through */
    case PH_FOLD_IN:
        if ((st = rcoll__fold_in(task, &S->fold, a->sendbuf, n, S->tmp, S->acc)) != RCOLL_OK) {
            return st;
        }
        rcoll__halving_init(&S->steps, task, S->fold.newrank, &b,
                            S->fold.partner >= 0 ? S->acc : a->sendbuf, S->acc, S->tmp, TAG_RH);
        task->phase = PH_HALVING;
        /* fall through */
    case PH_HALVING:
        if ((st = rcoll__recursive_progress(task, &S->steps)) != RCOLL_OK) {
            return st;
        }
        rcoll__gather_init(&S->steps, task, S->fold.newrank, S->target, &b, S->acc, TAG_GATHER);
        task->phase = PH_GATHER;
        /* fall through */
    case PH_GATHER:
        if ((st = rcoll__recursive_progress(task, &S->steps)) != RCOLL_OK) {
            return st;
        }
        task->phase = PH_FOLD_OUT;
        /* fall through */
    case PH_FOLD_OUT:
        /* only between an extra root and its partner, the target */
        if (a->root != (rcoll__fold_is_extra(&S->fold) ? rank : S->fold.partner)) {
            return RCOLL_OK;
        }
        return rcoll__fold_out(task, &S->fold, rank == a->root ? a->recvbuf : S->acc, n);
    default:
        rcoll_error("reduce reduce_scatter_gather: bad phase %d", task->phase);
        return RCOLL_ERR_INTERNAL;
    }
}

static double red_rsg_cost(const rcoll_model_t *m, size_t bytes, int nranks, int ppn)
{
    double n = (double)bytes;

    return rcoll__cost_fold(m, n, 0, nranks, ppn) + rcoll__cost_halving(m, n, nranks, ppn) +
           rcoll__cost_doubling(m, n, nranks, ppn);
}

/* Recursive halving: ceil(log2 p) messages per rank, (p-1)/p of the
 * vector in all; then the binomial gather of the reduced blocks. */
static double red_rsg_port(const rcoll_model_t *m, size_t bytes, int nranks)
{
    double n = (double)bytes;
    if (nranks < 2) {
        return 0;
    }
    return rcoll_cost_ceil_log2(nranks) * m->alpha + (nranks - 1) / (double)nranks * n * m->beta +
           rcoll_cost_port_scatter(m, n, nranks);
}

const rcoll_alg_t rcoll_reduce_reduce_scatter_gather = {
    .name     = "reduce_scatter_gather",
    .coll     = RCOLL_COLL_REDUCE,
    .progress = red_rsg_progress,
    .cost     = red_rsg_cost,
    .port     = red_rsg_port,
};
