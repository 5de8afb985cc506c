/*
 * bcast_binomial.c - binomial tree broadcast, for small messages.
 *
 * Schedule: the binomial broadcast engine (engines/binomial.h) over the
 * whole buffer.  Virtual rank vr = (rank - root) mod p.  vr > 0 receives
 * the whole buffer from vr - lowbit(vr), then forwards it to vr + m for
 * each power of two m < lowbit(vr) (vr + m < p), largest subtree first.
 * ceil(log2 p) rounds; tags: the round, log2(m).
 */
#include "coll.h"
#include "engines/binomial.h"
#include "selector_cost.h"

typedef struct {
    rcoll__binbc_t bc;
} bcast_binomial_state_t;
RCOLL_ALG_STATE_CHECK(bcast_binomial_state_t);

enum { PH_START = 0, PH_BCAST };

static rcoll_status_t bcast_binomial_progress(rcoll_task_t *task)
{
    bcast_binomial_state_t *S = rcoll_task_state(task, bcast_binomial_state_t);
    rcoll_coll_args_t *a = &task->args;

    if (task->phase == PH_START) {
        rcoll__binbc_init(&S->bc, task, a->root, a->recvbuf, a->count * rcoll__esize(task), 0);
        task->phase = PH_BCAST;
    }
    return rcoll__binbc_progress(task, &S->bc);
}

/* ceil(log2 p) rounds, each one message of n bytes.  In the round of
 * distance d the senders are vr < d sending to vr + d: on one node while
 * d < ppn, and from every rank of a node at once when d >= ppn. */
static double bcast_binomial_cost(const rcoll_model_t *m, size_t bytes, int nranks, int ppn)
{
    double t = 0;
    int rounds = rcoll_cost_ceil_log2(nranks);
    for (int k = 0; k < rounds; k++)
        t += rcoll_cost_msg(m, (double)bytes, nranks, ppn, rcoll_cost_cross_xor(1 << k, ppn));
    return t;
}

static double bcast_binomial_port(const rcoll_model_t *m, size_t bytes, int nranks)
{
    return rcoll_cost_port_tree(m, (double)bytes, nranks);
}

const rcoll_alg_t rcoll_bcast_binomial = {
    .name     = "binomial",
    .coll     = RCOLL_COLL_BCAST,
    .progress = bcast_binomial_progress,
    .cost     = bcast_binomial_cost,
    .port     = bcast_binomial_port,
};
