/*
 * allgather_bruck.c - Bruck's allgather: ceil(log2 p) rounds for any p.
 *
 * Each rank gathers into a scratch copy rotated so that position i holds the
 * block of rank (rank + i) mod p.  In round k (d = 2^k) it sends its first
 * min(d, p - d) blocks to rank - d and receives as many from rank + d into
 * positions d.., then finally rotates the scratch into the receive buffer.
 */
#include <string.h>
#include "coll.h"
#include "allgather_ranks.h"
#include "engines/dissemination.h"
#include "selector_cost.h"

typedef struct {
    rcoll__dissem_t rounds;
    size_t          blk;    /* bytes per rank */
    char           *tmp;
} ag_bruck_state_t;
RCOLL_ALG_STATE_CHECK(ag_bruck_state_t);

enum { PH_START = 0, PH_ROUNDS };

static rcoll_status_t ag_bruck_round(rcoll_task_t *task, int d, int k, void *arg)
{
    const ag_bruck_state_t *st = arg;
    int p = rcoll_task_size(task), j = rcoll_task_rank(task);
    size_t len = (size_t)rcoll_ag_bruck_nblk(d, p) * st->blk;
    rcoll_status_t s;

    s = rcoll_task_recv(task, rcoll_ag_bruck_recv_peer(j, d, p), (uint32_t)k,
                        st->tmp + (size_t)d * st->blk, len);
    if (s != RCOLL_OK)
        return s;
    return rcoll_task_send(task, rcoll_ag_bruck_send_peer(j, d, p), (uint32_t)k, st->tmp, len);
}

static rcoll_status_t ag_bruck_progress(rcoll_task_t *task)
{
    ag_bruck_state_t *st = rcoll_task_state(task, ag_bruck_state_t);
    int p = rcoll_task_size(task), j = rcoll_task_rank(task);
    size_t blk = task->args.count * rcoll_datatype_size(task->args.dtype);
    char *buf = task->args.recvbuf;
    rcoll_status_t s;

    switch (task->phase) {
    case PH_START:
        st->tmp = rcoll_task_scratch(task, (size_t)p * blk);
        if (st->tmp == NULL) {
            rcoll_error("allgather bruck: no memory for %zu bytes of scratch", (size_t)p * blk);
            return RCOLL_ERR_NO_MEMORY;
        }
        memcpy(st->tmp, task->args.in_place ? buf + (size_t)j * blk : task->args.sendbuf, blk);
        st->blk = blk;
        rcoll__dissem_init(&st->rounds);
        task->phase = PH_ROUNDS;
        /* fall through */
    case PH_ROUNDS:
        if ((s = rcoll__dissem_progress(task, &st->rounds, ag_bruck_round, st)) != RCOLL_OK)
            return s;
        /* position i -> block (j + i) mod p */
        memcpy(buf + (size_t)j * blk, st->tmp, (size_t)(p - j) * blk);
        memcpy(buf, st->tmp + (size_t)(p - j) * blk, (size_t)j * blk);
        return RCOLL_OK;
    default:
        rcoll_error("allgather bruck: bad phase %d", task->phase);
        return RCOLL_ERR_INTERNAL;
    }
}

/* Round k moves min(2^k, p - 2^k) blocks; the final rotation copies p blocks
 * locally (counted at beta). */
static double ag_bruck_cost(const rcoll_model_t *m, size_t bytes, int nranks, int ppn)
{
    double t = 0, b = (double)bytes;
    for (int d = 1; d < nranks; d <<= 1)
        t += rcoll_cost_msg(m, b * rcoll_ag_bruck_nblk(d, nranks), nranks, ppn,
                            rcoll_cost_cross_shift(d, ppn));
    return t + b * nranks * m->beta;
}

const rcoll_alg_t rcoll_allgather_bruck = {
    .name     = "bruck",
    .coll     = RCOLL_COLL_ALLGATHER,
    .progress = ag_bruck_progress,
    .cost     = ag_bruck_cost,
};
