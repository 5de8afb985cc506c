/*
 * allgather_ring.c - ring allgather, bandwidth-optimal for large blocks.
 *
 * p - 1 steps; in step s rank j sends block j - s to j + 1 and receives
 * block j - s - 1 from j - 1 (mod p), straight into the receive buffer.
 */
#include <string.h>
#include "coll.h"
#include "allgather_ranks.h"
#include "selector_cost.h"

typedef struct {
    int s;          /* step */
} ag_ring_state_t;
RCOLL_ALG_STATE_CHECK(ag_ring_state_t);

enum { PH_START = 0, PH_STEPS };

static rcoll_status_t ag_ring_step(rcoll_task_t *task, int s, size_t blk)
{
    int p = rcoll_task_size(task), j = rcoll_task_rank(task);
    char *buf = task->args.recvbuf;
    rcoll_status_t st;

    st = rcoll_task_recv(task, (j - 1 + p) % p, (uint32_t)s,
                         buf + (size_t)rcoll_ag_ring_recv_block(j, s, p) * blk, blk);
    if (st != RCOLL_OK)
        return st;
    return rcoll_task_send(task, (j + 1) % p, (uint32_t)s,
                           buf + (size_t)rcoll_ag_ring_send_block(j, s, p) * blk, blk);
}

static rcoll_status_t ag_ring_progress(rcoll_task_t *task)
{
    ag_ring_state_t *st = rcoll_task_state(task, ag_ring_state_t);
    int p = rcoll_task_size(task), j = rcoll_task_rank(task);
    size_t blk = task->args.count * rcoll_datatype_size(task->args.dtype);
    char *buf = task->args.recvbuf;
    rcoll_status_t s;

    switch (task->phase) {
    case PH_START:
        if (!task->args.in_place && task->args.sendbuf != buf + (size_t)j * blk)
            memcpy(buf + (size_t)j * blk, task->args.sendbuf, blk);
        st->s = 0;
        if (p > 1) {
            s = ag_ring_step(task, 0, blk);
            if (s != RCOLL_OK)
                return s;
        }
        task->phase = PH_STEPS;
        /* fall through */
    case PH_STEPS:
        while (st->s < p - 1) {
            s = rcoll_task_test(task);
            if (s != RCOLL_OK)
                return s;
            if (++st->s < p - 1) {
                s = ag_ring_step(task, st->s, blk);
                if (s != RCOLL_OK)
                    return s;
            }
        }
        return RCOLL_OK;
    default:
        rcoll_error("allgather ring: bad phase %d", task->phase);
        return RCOLL_ERR_INTERNAL;
    }
}

/* p - 1 steps of one block; one rank per node sends off node. */
static double ag_ring_cost(const rcoll_model_t *m, size_t bytes, int nranks, int ppn)
{
    if (nranks < 2)
        return 0;
    return (nranks - 1) * rcoll_cost_msg(m, (double)bytes, nranks, ppn, 1);
}

const rcoll_alg_t rcoll_allgather_ring = {
    .name     = "ring",
    .coll     = RCOLL_COLL_ALLGATHER,
    .progress = ag_ring_progress,
    .cost     = ag_ring_cost,
};
