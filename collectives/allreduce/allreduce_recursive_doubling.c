/*
 * allreduce_recursive_doubling.c - latency-optimal allreduce.
 *
 * log2(p2) steps; at step k newrank exchanges its whole vector with
 * newrank ^ 2^k and both compute (lower group) op (upper group), so every
 * rank ends with bitwise the same result.  Non-powers of two fold: the
 * extra (even) rank of each pair sends its vector to the odd one first and
 * receives the result at the end (reduction_math.h).
 *
 * Tags: 0 fold-in, 1 + k step k, 64 fold-out.
 * Cost: ceil(log2 p)·(alpha + n·beta + n·gamma), plus 2(alpha + n·beta) +
 * n·gamma for the fold when p is not a power of two.
 */
#include <string.h>
#include "coll.h"
#include "reduce.h"
#include "reduction_engine.h"

enum { TAG_FOLD = 0, TAG_STEP = 1, TAG_UNFOLD = 64 };

enum {
    PH_START = 0,
    PH_EXTRA_SENT,      /* extra: vector sent to partner */
    PH_EXTRA_RECV,      /* extra: waiting for the result */
    PH_FOLD,            /* partner's vector coming in */
    PH_STEP_POST,
    PH_STEP_WAIT,
    PH_UNFOLD           /* result going back to the extra */
};

typedef struct {
    const char *cur;     /* this rank's partial result */
    char       *tmp;
    int         newrank, p2, partner, k, nsteps;
} ar_rd_state_t;
RCOLL_ALG_STATE_CHECK(ar_rd_state_t);

static rcoll_status_t ar_rd_progress(rcoll_task_t *task)
{
    ar_rd_state_t *S = rcoll_task_state(task, ar_rd_state_t);
    rcoll_coll_args_t *a = &task->args;
    int rank = rcoll_task_rank(task), p = rcoll_task_size(task);
    size_t n = a->count * rcoll__esize(task);
    rcoll_status_t st;
    int peer;

    for (;;) {
        switch (task->phase) {
        case PH_START:
            if (p == 1) {
                if (a->sendbuf != a->recvbuf) {
                    memcpy(a->recvbuf, a->sendbuf, n);
                }
                return RCOLL_OK;
            }
            S->p2 = rcoll__pow2_floor(p);
            S->nsteps = rcoll__log2_exact(S->p2);
            S->newrank = rcoll__fold_newrank(rank, p);
            S->partner = rcoll__fold_partner(rank, p);
            S->cur = a->sendbuf;
            if (S->newrank < 0) {
                st = rcoll_task_send(task, S->partner, TAG_FOLD, a->sendbuf, n);
                task->phase = PH_EXTRA_SENT;
            } else {
                S->tmp = rcoll__scratch(task, n, "allreduce recursive_doubling");
                if (S->tmp == NULL) {
                    return RCOLL_ERR_NO_MEMORY;
                }
                if (S->partner >= 0) {
                    st = rcoll_task_recv(task, S->partner, TAG_FOLD, S->tmp, n);
                    task->phase = PH_FOLD;
                } else {
                    st = RCOLL_OK;
                    task->phase = PH_STEP_POST;
                }
            }
            if (st != RCOLL_OK) {
                return st;
            }
            break;
        case PH_EXTRA_SENT:
            if ((st = rcoll_task_test(task)) != RCOLL_OK) {
                return st;
            }
            if ((st = rcoll_task_recv(task, S->partner, TAG_UNFOLD, a->recvbuf, n)) != RCOLL_OK) {
                return st;
            }
            task->phase = PH_EXTRA_RECV;
            break;
        case PH_EXTRA_RECV:
        case PH_UNFOLD:
            return rcoll_task_test(task);
        case PH_FOLD:
            if ((st = rcoll_task_test(task)) != RCOLL_OK) {
                return st;
            }
            /* the extra is the lower rank of the pair */
            rcoll_reduce_local3(a->recvbuf, S->tmp, a->sendbuf, a->count, a->dtype, a->op);
            S->cur = a->recvbuf;
            task->phase = PH_STEP_POST;
            break;
        case PH_STEP_POST:
            if (S->k == S->nsteps) {
                if (S->cur != a->recvbuf) {
                    memcpy(a->recvbuf, S->cur, n);
                }
                if (S->partner < 0) {
                    return RCOLL_OK;
                }
                st = rcoll_task_send(task, S->partner, TAG_UNFOLD, a->recvbuf, n);
                if (st != RCOLL_OK) {
                    return st;
                }
                task->phase = PH_UNFOLD;
                break;
            }
            peer = rcoll__fold_rank(S->newrank ^ (1 << S->k), p);
            st = rcoll_task_recv(task, peer, TAG_STEP + (uint32_t)S->k, S->tmp, n);
            if (st == RCOLL_OK) {
                st = rcoll_task_send(task, peer, TAG_STEP + (uint32_t)S->k, S->cur, n);
            }
            if (st != RCOLL_OK) {
                return st;
            }
            task->phase = PH_STEP_WAIT;
            break;
        case PH_STEP_WAIT:
            if ((st = rcoll_task_test(task)) != RCOLL_OK) {
                return st;
            }
            if (S->newrank & (1 << S->k)) {
                rcoll_reduce_local3(a->recvbuf, S->tmp, S->cur, a->count, a->dtype, a->op);
            } else {
                rcoll_reduce_local3(a->recvbuf, S->cur, S->tmp, a->count, a->dtype, a->op);
            }
            S->cur = a->recvbuf;
            S->k++;
            task->phase = PH_STEP_POST;
            break;
        default:
            rcoll_error("allreduce recursive_doubling: bad phase %d", task->phase);
            return RCOLL_ERR_INTERNAL;
        }
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
