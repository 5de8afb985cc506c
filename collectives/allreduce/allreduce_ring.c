/*
 * allreduce_ring.c - bandwidth-optimal allreduce for large vectors: a ring
 * reduce-scatter (p-1 steps) then a ring allgather (p-1 steps) over p
 * balanced blocks.  Every block transfer is cut into RCOLL_SEGMENT_SIZE
 * segments and up to 32 are kept in flight, with the reduction of one batch
 * overlapping the transfer of the next (engines/ring.h).  Each block's
 * final value is computed by one rank, so all ranks agree bitwise.
 *
 * Tags: item index; reduce-scatter items 0..(p-1)·nseg-1, allgather items
 * follow (item = step·nseg + segment).
 * Cost: 2(p-1)·(alpha + n/p·beta) + (p-1)/p·n·gamma.
 */
#include <string.h>
#include "coll.h"
#include "reduce.h"
#include "selector_cost.h"
#include "engines/ring.h"

enum { PH_START = 0, PH_RS, PH_AG };

typedef struct {
    rcoll__ring_t ring;
    size_t        seg;
} ar_ring_state_t;
RCOLL_ALG_STATE_CHECK(ar_ring_state_t);

static rcoll_status_t ar_ring_progress(rcoll_task_t *task)
{
    ar_ring_state_t *S = rcoll_task_state(task, ar_ring_state_t);
    rcoll_coll_args_t *a = &task->args;
    int rank = rcoll_task_rank(task), p = rcoll_task_size(task);
    size_t es = rcoll__esize(task);
    char *tmp, *rbuf = a->recvbuf;
    rcoll_status_t st;

    switch (task->phase) {
    case PH_START:
        S->seg = rcoll__ring_seg(task, a->count, p);
        tmp = rcoll__scratch(task, rcoll__ring_tmp_bytes(a->count, p, S->seg, es), "allreduce ring");
        if (tmp == NULL) {
            return RCOLL_ERR_NO_MEMORY;
        }
        rcoll__ring_init(&S->ring, task, RCOLL__RING_RS, a->count, S->seg, a->sendbuf, rbuf, 0,
                         rbuf + rcoll__block_lo(a->count, p, rank) * es, tmp, 0);
        task->phase = PH_RS;
        /* fall through */
    case PH_RS:
        if ((st = rcoll__ring_progress(task, &S->ring)) != RCOLL_OK) {
            return st;
        }
        rcoll__ring_init(&S->ring, task, RCOLL__RING_AG, a->count, S->seg, NULL, rbuf, 0, NULL,
                         NULL, (uint32_t)S->ring.nitems);
        task->phase = PH_AG;
        /* fall through */
    case PH_AG:
        return rcoll__ring_progress(task, &S->ring);
    default:
        rcoll_error("allreduce ring: bad phase %d", task->phase);
        return RCOLL_ERR_INTERNAL;
    }
}

static double ar_ring_cost(const rcoll_model_t *m, size_t bytes, int nranks, int ppn)
{
    double n = (double)bytes, p = nranks;

    if (nranks < 2) {
        return 0;
    }
    return 2 * (p - 1) * rcoll_cost_msg(m, n / p, nranks, ppn, 1) + (p - 1) / p * n * m->gamma;
}

const rcoll_alg_t rcoll_allreduce_ring = {
    .name     = "ring",
    .coll     = RCOLL_COLL_ALLREDUCE,
    .progress = ar_ring_progress,
    .cost     = ar_ring_cost,
};
