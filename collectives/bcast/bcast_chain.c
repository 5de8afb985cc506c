/*
 * bcast_chain.c - pipelined chain broadcast for large messages.
 *
 * Virtual ranks 0 (the root) -> 1 -> ... -> p-1 form a chain.  The buffer
 * goes down it in segments of RCOLL_SEGMENT_SIZE bytes; segment k travels
 * with step k.  In iteration k a rank sends segment k to the right and
 * receives segment k+1 from the left at the same time, so every link of the
 * chain is busy once the pipeline has filled.
 */
#include "coll.h"
#include "bcast_ranks.h"
#include "selector_cost.h"

typedef struct {
    int    vr;
    size_t seg;       /* segment size in bytes */
    size_t nsegs;
    size_t k;         /* segment being sent */
} bcast_chain_state_t;
RCOLL_ALG_STATE_CHECK(bcast_chain_state_t);

enum { PH_START = 0, PH_FIRST, PH_PIPE };

static rcoll_status_t chain_post(rcoll_task_t *task, bcast_chain_state_t *st, size_t n,
                                 int send_k, size_t k, int recv_k, size_t k2)
{
    int p = rcoll_task_size(task), root = task->args.root;
    char *buf = task->args.recvbuf;
    rcoll_status_t s;

    if (recv_k && st->vr > 0 && k2 < st->nsegs) {
        s = rcoll_task_recv(task, rcoll_bc_rank(st->vr - 1, root, p), (uint32_t)k2,
                            buf + k2 * st->seg, rcoll_bc_seg_len(n, st->seg, k2));
        if (s != RCOLL_OK)
            return s;
    }
    if (send_k && st->vr + 1 < p && k < st->nsegs) {
        s = rcoll_task_send(task, rcoll_bc_rank(st->vr + 1, root, p), (uint32_t)k,
                            buf + k * st->seg, rcoll_bc_seg_len(n, st->seg, k));
        if (s != RCOLL_OK)
            return s;
    }
    return RCOLL_OK;
}

static rcoll_status_t bcast_chain_progress(rcoll_task_t *task)
{
    bcast_chain_state_t *st = rcoll_task_state(task, bcast_chain_state_t);
    int p = rcoll_task_size(task);
    size_t n = task->args.count * rcoll_datatype_size(task->args.dtype);
    rcoll_status_t s;

    switch (task->phase) {
    case PH_START:
        st->vr = rcoll_bc_vrank(rcoll_task_rank(task), task->args.root, p);
        st->seg = rcoll_task_config(task)->segment_size;
        if (st->seg == 0 || st->seg > n)
            st->seg = n;
        st->nsegs = rcoll_bc_nsegs(n, st->seg);
        if (st->nsegs > UINT32_MAX) {
            rcoll_error("bcast chain: %zu segments of %zu bytes do not fit the 32-bit step; "
                        "raise RCOLL_SEGMENT_SIZE", st->nsegs, st->seg);
            return RCOLL_ERR_INVALID_ARG;
        }
        st->k = 0;
        s = chain_post(task, st, n, 0, 0, 1, 0);   /* receive segment 0 */
        if (s != RCOLL_OK)
            return s;
        task->phase = PH_FIRST;
        /* fall through */
    case PH_FIRST:
        s = rcoll_task_test(task);
        if (s != RCOLL_OK)
            return s;
        s = chain_post(task, st, n, 1, 0, 1, 1);
        if (s != RCOLL_OK)
            return s;
        task->phase = PH_PIPE;
        /* fall through */
    case PH_PIPE:
        while (st->k < st->nsegs) {
            s = rcoll_task_test(task);
            if (s != RCOLL_OK)
                return s;
            st->k++;
            s = chain_post(task, st, n, 1, st->k, 1, st->k + 1);
            if (s != RCOLL_OK)
                return s;
        }
        return RCOLL_OK;
    default:
        rcoll_error("bcast chain: bad phase %d", task->phase);
        return RCOLL_ERR_INTERNAL;
    }
}

/* The segment size the cost formula assumes when the model has none. */
#define CHAIN_COST_SEGMENT (64 * 1024)

/* nsegs + p - 2 pipeline stages, each one segment over one link; one rank
 * per node sends off node. */
static double bcast_chain_cost(const rcoll_model_t *m, size_t bytes, int nranks, int ppn)
{
    size_t seg = m->segment_size ? m->segment_size : CHAIN_COST_SEGMENT;
    size_t nsegs;
    if (nranks < 2 || bytes == 0)
        return 0;
    if (seg > bytes)
        seg = bytes;
    nsegs = rcoll_bc_nsegs(bytes, seg);
    return (double)(nsegs + (size_t)nranks - 2) * rcoll_cost_msg(m, (double)seg, nranks, ppn, 1);
}

const rcoll_alg_t rcoll_bcast_chain = {
    .name     = "chain",
    .coll     = RCOLL_COLL_BCAST,
    .progress = bcast_chain_progress,
    .cost     = bcast_chain_cost,
};
