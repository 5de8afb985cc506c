/*
 * allgather_ring.c - ring allgather, bandwidth-optimal for large blocks.
 *
 * p - 1 steps; in step s rank j sends block j - s to j + 1 and receives
 * block j - s - 1 from j - 1 (mod p), straight into the receive buffer:
 * an allgather pass of the ring engine (engines/ring.h).
 */
#include <string.h>
#include "coll.h"
#include "engines/ring.h"
#include "selector_cost.h"

typedef struct {
    rcoll__ring_t ring;
} ag_ring_state_t;
RCOLL_ALG_STATE_CHECK(ag_ring_state_t);

enum { PH_START = 0, PH_RING };

static rcoll_status_t ag_ring_progress(rcoll_task_t *task)
{
    ag_ring_state_t *S = rcoll_task_state(task, ag_ring_state_t);
    rcoll_coll_args_t *a = &task->args;
    int p = rcoll_task_size(task), j = rcoll_task_rank(task);
    size_t es = rcoll__esize(task), blk = a->count * es;
    char *buf = a->recvbuf;

    if (task->phase == PH_START) {
        if (!a->in_place && a->sendbuf != buf + (size_t)j * blk) {
            memcpy(buf + (size_t)j * blk, a->sendbuf, blk);
        }
        /* p blocks of count elements, one message per block (no segments) */
        rcoll__ring_init_ag(&S->ring, task, 0, 0, buf, (size_t)p * a->count, es, a->count, 0);
        task->phase = PH_RING;
    }
    return rcoll__ring_progress(task, &S->ring);
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
