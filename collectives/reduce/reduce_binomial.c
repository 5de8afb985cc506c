/*
 * reduce_binomial.c - reduce along a binomial tree rooted at root
 * (relative rank vr = rank - root): at step k a rank with bit k set sends
 * its partial result to vr - 2^k and stops; the others receive from
 * vr + 2^k and reduce as (own, lower ranks) op (child's subtree).
 * Non-root ranks may pass recvbuf NULL: interior ones accumulate in scratch.
 *
 * Tags: k for step k.
 * Cost: ceil(log2 p)·(alpha + n·beta + n·gamma).
 */
#include <string.h>
#include "coll.h"
#include "selector_cost.h"
#include "reduce.h"
#include "engines/binomial.h"

enum { PH_START = 0, PH_REDUCE };

typedef struct {
    rcoll__binred_t red;
} red_bin_state_t;
RCOLL_ALG_STATE_CHECK(red_bin_state_t);

static rcoll_status_t red_bin_progress(rcoll_task_t *task)
{
    red_bin_state_t *S = rcoll_task_state(task, red_bin_state_t);
    rcoll_coll_args_t *a = &task->args;
    int rank = rcoll_task_rank(task), p = rcoll_task_size(task);
    int vr = rcoll__rel_rank(rank, a->root, p);
    size_t n = a->count * rcoll__esize(task);
    char *acc = NULL, *tmp = NULL;

    switch (task->phase) {
    case PH_START:
        if (rcoll__binomial_child(vr, p, 0) >= 0) {        /* not a leaf */
            if (rank == a->root) {
                acc = a->recvbuf;
                tmp = rcoll__scratch(task, n, "reduce binomial");
            } else {
                acc = rcoll__scratch(task, 2 * n, "reduce binomial");
                tmp = acc ? acc + n : NULL;
            }
            if (tmp == NULL) {
                return RCOLL_ERR_NO_MEMORY;
            }
        }
        rcoll__binred_init(&S->red, task, a->root, a->count, a->sendbuf, acc, tmp, 0);
        task->phase = PH_REDUCE;
        /* fall through */
    case PH_REDUCE:
        return rcoll__binred_progress(task, &S->red);
    default:
        rcoll_error("reduce binomial: bad phase %d", task->phase);
        return RCOLL_ERR_INTERNAL;
    }
}

static double red_bin_cost(const rcoll_model_t *m, size_t bytes, int nranks, int ppn)
{
    return rcoll__cost_tree(m, (double)bytes, rcoll__ceil_log2(nranks), 1, 1, nranks, ppn);
}

static double red_bin_port(const rcoll_model_t *m, size_t bytes, int nranks)
{
    return rcoll_cost_port_tree(m, (double)bytes, nranks);
}

const rcoll_alg_t rcoll_reduce_binomial = {
    .name     = "binomial",
    .coll     = RCOLL_COLL_REDUCE,
    .progress = red_bin_progress,
    .cost     = red_bin_cost,
    .port     = red_bin_port,
};
