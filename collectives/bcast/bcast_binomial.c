/*
 * bcast_binomial.c - binomial tree broadcast, for small messages.
 *
 * Virtual rank vr = (rank - root) mod p.  vr > 0 receives the whole buffer
 * from vr - lowbit(vr), then forwards it to vr + m for each power of two
 * m < lowbit(vr) (vr + m < p), largest subtree first.  ceil(log2 p) rounds.
 */
#include "coll.h"
#include "bcast_ranks.h"
#include "selector_cost.h"

typedef struct {
    int vr;
} bcast_binomial_state_t;
RCOLL_ALG_STATE_CHECK(bcast_binomial_state_t);

enum { PH_START = 0, PH_RECV, PH_SEND };

static rcoll_status_t bcast_binomial_progress(rcoll_task_t *task)
{
    bcast_binomial_state_t *st = rcoll_task_state(task, bcast_binomial_state_t);
    int p = rcoll_task_size(task), root = task->args.root;
    size_t n = task->args.count * rcoll_datatype_size(task->args.dtype);
    void *buf = task->args.recvbuf;
    rcoll_status_t s;

    switch (task->phase) {
    case PH_START:
        st->vr = rcoll_bc_vrank(rcoll_task_rank(task), root, p);
        if (st->vr != 0) {
            int parent = rcoll_bc_rank(rcoll_bc_binomial_parent(st->vr), root, p);
            s = rcoll_task_recv(task, parent, rcoll_bc_binomial_round(st->vr), buf, n);
            if (s != RCOLL_OK)
                return s;
        }
        task->phase = PH_RECV;
        /* fall through */
    case PH_RECV:
        s = rcoll_task_test(task);
        if (s != RCOLL_OK)
            return s;
        for (int m = rcoll_bc_binomial_mask(st->vr, p) >> 1; m > 0; m >>= 1) {
            int child = st->vr + m;
            if (child >= p)
                continue;
            s = rcoll_task_send(task, rcoll_bc_rank(child, root, p),
                                rcoll_bc_binomial_round(child), buf, n);
            if (s != RCOLL_OK)
                return s;
        }
        task->phase = PH_SEND;
        /* fall through */
    case PH_SEND:
        return rcoll_task_test(task);
    default:
        rcoll_error("bcast binomial: bad phase %d", task->phase);
        return RCOLL_ERR_INTERNAL;
    }
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

const rcoll_alg_t rcoll_bcast_binomial = {
    .name     = "binomial",
    .coll     = RCOLL_COLL_BCAST,
    .progress = bcast_binomial_progress,
    .cost     = bcast_binomial_cost,
};
