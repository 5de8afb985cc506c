/*
 * bcast_scatter_allgather.c - van de Geijn broadcast for large messages:
 * a binomial scatter of p blocks followed by a ring allgather of them.
 *
 * The buffer is cut into p balanced blocks (rcoll__block_lo); block i belongs
 * to virtual rank i.  In the scatter, vr receives from its binomial parent
 * the blocks of its whole subtree, [vr, vr + lowbit(vr)), one contiguous
 * range, and passes each child its subtree's range.  In ring step s
 * (0 <= s < p-1) vr sends block vr-s to vr+1 and receives block vr-s-1 from
 * vr-1 (mod p).  The root already has every block, so nobody sends to it.
 * Empty blocks (n < p) are skipped by sender and receiver alike.
 * Schedule: the binomial scatter and an open ring allgather
 * (engines/binomial.h, engines/ring.h).
 */
#include "coll.h"
#include "engines/binomial.h"
#include "engines/ring.h"
#include "selector_cost.h"

#define RING_STEP0 32u   /* scatter steps are binomial rounds, < 32 */

typedef struct {
    rcoll__binbc_t scatter;
    rcoll__ring_t  ring;
} bcast_sag_state_t;
RCOLL_ALG_STATE_CHECK(bcast_sag_state_t);

enum { PH_START = 0, PH_SCATTER, PH_RING };

static rcoll_status_t bcast_sag_progress(rcoll_task_t *task)
{
    bcast_sag_state_t *S = rcoll_task_state(task, bcast_sag_state_t);
    rcoll_coll_args_t *a = &task->args;
    int p = rcoll_task_size(task);
    size_t n = a->count * rcoll__esize(task);
    rcoll_status_t st;

    switch (task->phase) {
    case PH_START:
        rcoll__binscatter_init(&S->scatter, task, a->root, a->recvbuf, n, 0);
        task->phase = PH_SCATTER;
        /* fall through */
    case PH_SCATTER:
        if ((st = rcoll__binbc_progress(task, &S->scatter)) != RCOLL_OK) {
            return st;
        }
        /* byte blocks, one message per block (no segments), no link to the root */
        rcoll__ring_init_ag(&S->ring, task, a->root, 1, a->recvbuf, n, 1, rcoll__block_max(n, p),
                            RING_STEP0);
        task->phase = PH_RING;
        /* fall through */
    case PH_RING:
        return rcoll__ring_progress(task, &S->ring);
    default:
        rcoll_error("bcast scatter_allgather: bad phase %d", task->phase);
        return RCOLL_ERR_INTERNAL;
    }
}

/*
 * Scatter: ceil(log2 p) rounds; in the round of distance d the message holds
 * d blocks (n*d/p bytes).  Ring: p-1 steps of one block (n/p bytes), where
 * one rank per node sends off node.
 */
static double bcast_sag_cost(const rcoll_model_t *m, size_t bytes, int nranks, int ppn)
{
    double t = 0, blk = (double)bytes / nranks;
    int rounds = rcoll_cost_ceil_log2(nranks);

    for (int k = 0; k < rounds; k++) {
        int d = 1 << k;
        t += rcoll_cost_msg(m, blk * d, nranks, ppn, rcoll_cost_cross_xor(d, ppn));
    }
    if (nranks > 1)
        t += (nranks - 1) * rcoll_cost_msg(m, blk, nranks, ppn, 1);
    return t;
}

/* Every rank sends p-1 ring blocks, after its share of the scatter. */
static double bcast_sag_port(const rcoll_model_t *m, size_t bytes, int nranks)
{
    double blk = (double)bytes / nranks;
    return rcoll_cost_port_scatter(m, (double)bytes, nranks) +
           (nranks - 1) * rcoll_cost_port_msg(m, blk);
}

const rcoll_alg_t rcoll_bcast_scatter_allgather = {
    .name     = "scatter_allgather",
    .coll     = RCOLL_COLL_BCAST,
    .progress = bcast_sag_progress,
    .cost     = bcast_sag_cost,
    .port     = bcast_sag_port,
};
