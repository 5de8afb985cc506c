/*
 * reduce_scatter_ring.c - reduce_scatter in p-1 ring steps: at step s a
 * rank sends the partial sum of block rank-s-1 to the right and receives
 * block rank-s-2 from the left, reducing (received) op (own input).  Blocks
 * are cut into RCOLL_SEGMENT_SIZE segments, pipelined as in allreduce ring
 * (engines/ring.h); partial results alternate between two block-sized
 * scratch buffers, the last step writes straight into recvbuf.
 *
 * Tags: item = step·nseg + segment.
 * Cost (b bytes per rank): (p-1)·(alpha + b·beta + b·gamma).
 */
#include <string.h>
#include "coll.h"
#include "reduce.h"
#include "selector_cost.h"
#include "engines/ring.h"

enum { PH_START = 0, PH_RS };

typedef struct {
    rcoll__ring_t ring;
} rs_ring_state_t;
RCOLL_ALG_STATE_CHECK(rs_ring_state_t);

static rcoll_status_t rs_ring_progress(rcoll_task_t *task)
{
    rs_ring_state_t *S = rcoll_task_state(task, rs_ring_state_t);
    rcoll_coll_args_t *a = &task->args;
    int p = rcoll_task_size(task);
    size_t es = rcoll__esize(task), b = a->count * es, total = (size_t)p * a->count, seg, tmpb;
    char *mem;

    switch (task->phase) {
    case PH_START:
        seg = rcoll__ring_seg(task, total, p);
        tmpb = rcoll__ring_tmp_bytes(total, p, seg, es);
        mem = rcoll__scratch(task, tmpb + 2 * b, "reduce_scatter ring");
        if (mem == NULL) {
            return RCOLL_ERR_NO_MEMORY;
        }
        rcoll__ring_init(&S->ring, task, RCOLL__RING_RS, total, seg, a->sendbuf, mem + tmpb, 1,
                         a->recvbuf, mem, 0);
        task->phase = PH_RS;
        /* fall through */
    case PH_RS:
        return rcoll__ring_progress(task, &S->ring);
    default:
        rcoll_error("reduce_scatter ring: bad phase %d", task->phase);
        return RCOLL_ERR_INTERNAL;
    }
}

static double rs_ring_cost(const rcoll_model_t *m, size_t bytes, int nranks, int ppn)
{
    double b = (double)bytes;

    return (nranks - 1) * (rcoll_cost_msg(m, b, nranks, ppn, 1) + b * m->gamma);
}

const rcoll_alg_t rcoll_reduce_scatter_ring = {
    .name     = "ring",
    .coll     = RCOLL_COLL_REDUCE_SCATTER,
    .progress = rs_ring_progress,
    .cost     = rs_ring_cost,
};
