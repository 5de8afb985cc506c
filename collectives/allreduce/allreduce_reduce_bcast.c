/*
 * allreduce_reduce_bcast.c - allreduce as a binomial reduce to rank 0
 * followed by a binomial broadcast from rank 0.  Twice the steps of
 * recursive doubling but each rank sends its vector only once or twice, so
 * it can win on very small communicators and tiny vectors.  Rank 0 computes
 * the result and everyone else receives a copy: bitwise equal everywhere.
 *
 * Tags: 0 + k reduce step k, 64 + k broadcast step k.
 * Cost: 2 ceil(log2 p)·(alpha + n·beta) + ceil(log2 p)·n·gamma.
 */
#include <string.h>
#include "coll.h"
#include "reduce.h"
#include "engines/binomial.h"

enum { TAG_REDUCE = 0, TAG_BCAST = 64 };
enum { PH_START = 0, PH_REDUCE, PH_BCAST };

typedef struct {
    rcoll__binred_t red;
    rcoll__binbc_t  bc;
} ar_rb_state_t;
RCOLL_ALG_STATE_CHECK(ar_rb_state_t);

static rcoll_status_t ar_rb_progress(rcoll_task_t *task)
{
    ar_rb_state_t *S = rcoll_task_state(task, ar_rb_state_t);
    rcoll_coll_args_t *a = &task->args;
    int p = rcoll_task_size(task);
    size_t n = a->count * rcoll__esize(task);
    char *tmp;
    rcoll_status_t st;

    switch (task->phase) {
    case PH_START:
        tmp = NULL;
        if (rcoll__binomial_child(rcoll_task_rank(task), p, 0) >= 0) {   /* not a leaf */
            tmp = rcoll__scratch(task, n, "allreduce reduce_bcast");
            if (tmp == NULL) {
                return RCOLL_ERR_NO_MEMORY;
            }
        }
        rcoll__binred_init(&S->red, task, 0, a->count, a->sendbuf, a->recvbuf, tmp, TAG_REDUCE);
        task->phase = PH_REDUCE;
        /* fall through */
    case PH_REDUCE:
        if ((st = rcoll__binred_progress(task, &S->red)) != RCOLL_OK) {
            return st;
        }
        rcoll__binbc_init(&S->bc, task, 0, a->recvbuf, n, TAG_BCAST);
        task->phase = PH_BCAST;
        /* fall through */
    case PH_BCAST:
        return rcoll__binbc_progress(task, &S->bc);
    default:
        rcoll_error("allreduce reduce_bcast: bad phase %d", task->phase);
        return RCOLL_ERR_INTERNAL;
    }
}

static double ar_rb_cost(const rcoll_model_t *m, size_t bytes, int nranks, int ppn)
{
    double n = (double)bytes;
    int steps = rcoll__ceil_log2(nranks);

    return rcoll__cost_tree(m, n, steps, 1, 1, nranks, ppn) + rcoll__cost_tree(m, n, steps, 1, 0, nranks, ppn);
}

const rcoll_alg_t rcoll_allreduce_reduce_bcast = {
    .name     = "reduce_bcast",
    .coll     = RCOLL_COLL_ALLREDUCE,
    .progress = ar_rb_progress,
    .cost     = ar_rb_cost,
};
