/*
 * bcast_scatter_allgather.c - van de Geijn broadcast for large messages:
 * a binomial scatter of p blocks followed by a ring allgather of them.
 *
 * The buffer is cut into p balanced blocks (bcast_ranks.h); block i belongs
 * to virtual rank i.  In the scatter, vr receives from its binomial parent
 * the blocks of its whole subtree, [vr, vr + lowbit(vr)), one contiguous
 * range, and passes each child its subtree's range.  In ring step s
 * (0 <= s < p-1) vr sends block vr-s to vr+1 and receives block vr-s-1 from
 * vr-1 (mod p).  The root already has every block, so nobody sends to it.
 * Empty blocks (n < p) are skipped by sender and receiver alike.
 */
#include "coll.h"
#include "bcast_ranks.h"
#include "selector_cost.h"

#define RING_STEP0 32u   /* scatter steps are binomial rounds, < 32 */

typedef struct {
    int vr;
    int s;          /* ring step */
} bcast_sag_state_t;
RCOLL_ALG_STATE_CHECK(bcast_sag_state_t);

enum { PH_START = 0, PH_SCATTER_RECV, PH_SCATTER_SEND, PH_RING };

static rcoll_status_t sag_scatter_recv(rcoll_task_t *task, int vr, size_t n)
{
    int p = rcoll_task_size(task), root = task->args.root;
    int mask = rcoll_bc_binomial_mask(vr, p);
    size_t len = rcoll_bc_blocks_len(n, p, vr, vr + mask);
    char *buf = task->args.recvbuf;

    if (vr == 0 || len == 0)
        return RCOLL_OK;
    return rcoll_task_recv(task, rcoll_bc_rank(rcoll_bc_binomial_parent(vr), root, p),
                           rcoll_bc_binomial_round(vr), buf + rcoll_bc_block_off(n, p, vr), len);
}

static rcoll_status_t sag_scatter_send(rcoll_task_t *task, int vr, size_t n)
{
    int p = rcoll_task_size(task), root = task->args.root;
    char *buf = task->args.recvbuf;

    for (int m = rcoll_bc_binomial_mask(vr, p) >> 1; m > 0; m >>= 1) {
        int child = vr + m;
        size_t len = rcoll_bc_blocks_len(n, p, child, child + m);
        rcoll_status_t s;
        if (child >= p || len == 0)
            continue;
        s = rcoll_task_send(task, rcoll_bc_rank(child, root, p), rcoll_bc_binomial_round(child),
                            buf + rcoll_bc_block_off(n, p, child), len);
        if (s != RCOLL_OK)
            return s;
    }
    return RCOLL_OK;
}

/* Post ring step s: send block vr-s right, receive block vr-s-1 from the left. */
static rcoll_status_t sag_ring_post(rcoll_task_t *task, int vr, int s, size_t n)
{
    int p = rcoll_task_size(task), root = task->args.root;
    char *buf = task->args.recvbuf;
    int sb = ((vr - s) % p + p) % p, rb = ((vr - s - 1) % p + p) % p;
    size_t slen = rcoll_bc_block_len(n, p, sb), rlen = rcoll_bc_block_len(n, p, rb);
    rcoll_status_t st;

    if (vr != 0 && rlen > 0) {
        st = rcoll_task_recv(task, rcoll_bc_rank(vr - 1, root, p), RING_STEP0 + (uint32_t)s,
                             buf + rcoll_bc_block_off(n, p, rb), rlen);
        if (st != RCOLL_OK)
            return st;
    }
    if (vr + 1 < p && slen > 0) {
        st = rcoll_task_send(task, rcoll_bc_rank(vr + 1, root, p), RING_STEP0 + (uint32_t)s,
                             buf + rcoll_bc_block_off(n, p, sb), slen);
        if (st != RCOLL_OK)
            return st;
    }
    return RCOLL_OK;
}

static rcoll_status_t bcast_sag_progress(rcoll_task_t *task)
{
    bcast_sag_state_t *st = rcoll_task_state(task, bcast_sag_state_t);
    int p = rcoll_task_size(task);
    size_t n = task->args.count * rcoll_datatype_size(task->args.dtype);
    rcoll_status_t s;

    switch (task->phase) {
    case PH_START:
        st->vr = rcoll_bc_vrank(rcoll_task_rank(task), task->args.root, p);
        s = sag_scatter_recv(task, st->vr, n);
        if (s != RCOLL_OK)
            return s;
        task->phase = PH_SCATTER_RECV;
        /* fall through */
    case PH_SCATTER_RECV:
        s = rcoll_task_test(task);
        if (s != RCOLL_OK)
            return s;
        s = sag_scatter_send(task, st->vr, n);
        if (s != RCOLL_OK)
            return s;
        task->phase = PH_SCATTER_SEND;
        /* fall through */
    case PH_SCATTER_SEND:
        s = rcoll_task_test(task);
        if (s != RCOLL_OK)
            return s;
        st->s = 0;
        if (p > 1) {
            s = sag_ring_post(task, st->vr, 0, n);
            if (s != RCOLL_OK)
                return s;
        }
        task->phase = PH_RING;
        /* fall through */
    case PH_RING:
        while (st->s < p - 1) {
            s = rcoll_task_test(task);
            if (s != RCOLL_OK)
                return s;
            if (++st->s < p - 1) {
                s = sag_ring_post(task, st->vr, st->s, n);
                if (s != RCOLL_OK)
                    return s;
            }
        }
        return RCOLL_OK;
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

const rcoll_alg_t rcoll_bcast_scatter_allgather = {
    .name     = "scatter_allgather",
    .coll     = RCOLL_COLL_BCAST,
    .progress = bcast_sag_progress,
    .cost     = bcast_sag_cost,
};
