/*
 * allgather_node_aware.c - allgather over several nodes, composed from the
 * node-local (shm) allgather and bcast and a network allgather among the
 * node leaders (coll.h: node_comm, rail_comm rail 0; engines/compose.h):
 *   1. node-local allgather: every rank of a node gets the node's blocks,
 *      in local-rank order; the leader (local rank 0) puts them in its
 *      node's slot of a staging buffer, slots of P blocks each, P = the most
 *      ranks on any node (uneven nodes leave the tail of a slot unused);
 *   2. the leaders allgather their slots (P blocks each) among the nodes:
 *      one message stream per node crosses the network;
 *   3. the leader copies every block from the staging buffer to its place
 *      in the receive buffer, in comm rank order (the ranks of a node need
 *      not be contiguous in comm order: block r goes to r, wherever its
 *      node's slot and its local index put it), then bcasts the receive
 *      buffer to its node (node-local bcast).
 * Every step's algorithm is the selector's choice for its sub-communicator
 * (shm on a node unless RCOLL_SHM=0).  docs/algorithms-node-aware.md.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>
#include "coll.h"
#include "selector.h"
#include "selector_cost.h"
#include "engines/compose.h"
#include "engines/engine.h"

enum { PH_ENTER = 0, PH_RUN };

typedef struct {
    rcoll_compose_t        c;
    rcoll_compose_stream_t s;
    int                    leader, ppn_max, unpacked;
    char                  *stage;    /* leader: node_count x P blocks; others: the node's blocks */
    int                   *count;    /* leader: per node of the job, for the unpack */
    int                   *slot;
} ag_node_state_t;
RCOLL_ALG_STATE_CHECK(ag_node_state_t);

/* Copy block r of every comm rank r from the staging buffer (node slots in
 * rail 0 order, i.e. in the order of the nodes' first ranks in comm order;
 * a node's blocks in local-rank order) to recvbuf.  count and slot hold one
 * int per node of the job. */
static void unpack(const rcoll_comm_t *comm, const char *stage, char *recvbuf, size_t n,
                   int ppn_max, int *count, int *slot)
{
    int nn = rcoll_comm_nnodes(comm), next = 0;
    memset(count, 0, (size_t)nn * sizeof(int));
    for (int r = 0; r < comm->size; r++) {
        int j = rcoll_comm_node(comm, r);
        if (count[j] == 0) {
            slot[j] = next++;
        }
        const char *src = stage + ((size_t)slot[j] * (size_t)ppn_max + (size_t)count[j]++) * n;
        memcpy(recvbuf + (size_t)r * n, src, n);
    }
}

static rcoll_status_t start(rcoll_task_t *task, ag_node_state_t *S)
{
    rcoll_comm_t *comm = task->comm;
    size_t n = task->args.count * rcoll_datatype_size(task->args.dtype);
    S->leader = comm->local_rank == 0;
    S->ppn_max = rcoll_selector_comm_ppn(comm);
    if (S->ppn_max < comm->local_size) {
        rcoll_error("allgather node_aware: no memory to count the ranks per node");
        return RCOLL_ERR_NO_MEMORY;
    }
    if (!S->leader) {
        S->stage = rcoll__scratch(task, (size_t)comm->local_size * n, "allgather node_aware");
        return S->stage != NULL ? RCOLL_OK : RCOLL_ERR_NO_MEMORY;
    }
    size_t blocks = (size_t)comm->node_count * (size_t)S->ppn_max;
    size_t nn = (size_t)rcoll_comm_nnodes(comm);
    if (n > (SIZE_MAX / 4) / blocks) {
        rcoll_error("allgather node_aware: %zu blocks of %zu bytes overflow", blocks, n);
        return RCOLL_ERR_NO_MEMORY;
    }
    size_t stage = (blocks * n + 63) & ~(size_t)63;
    S->stage = rcoll__scratch(task, stage + 2 * nn * sizeof(int), "allgather node_aware");
    if (S->stage == NULL) {
        return RCOLL_ERR_NO_MEMORY;
    }
    S->count = (int *)(void *)(S->stage + stage);
    S->slot = S->count + nn;
    return RCOLL_OK;
}

/* The args of step i (header: 1, 2 for the leader; then the bcast). */
static rcoll_coll_args_t step_args(const rcoll_task_t *task, const ag_node_state_t *S, int i,
                                   rcoll_comm_t **sub)
{
    const rcoll_comm_t *comm = task->comm;
    const rcoll_coll_args_t *a = &task->args;
    size_t n = a->count * rcoll_datatype_size(a->dtype);
    size_t slot = S->leader ? (size_t)comm->rail_comm->rank * (size_t)S->ppn_max * n : 0;
    rcoll_coll_args_t c = *a;
    if (i == 0) {                        /* node allgather of my block */
        c.recvbuf = S->stage + slot;
        c.in_place = 0;
        *sub = comm->node_comm;
    } else if (S->leader && i == 1) {    /* the leaders' allgather of node slots */
        c.count = a->count * (size_t)S->ppn_max;
        c.sendbuf = S->stage + slot;
        c.recvbuf = S->stage;
        c.in_place = 1;
        *sub = comm->rail_comm;
    } else {                             /* node bcast of the whole result */
        c.type = RCOLL_COLL_BCAST;
        c.count = a->count * (size_t)comm->size;
        c.sendbuf = c.recvbuf;
        c.in_place = 1;
        c.root = 0;
        *sub = comm->node_comm;
    }
    return c;
}

static rcoll_status_t ag_node_progress(rcoll_task_t *task)
{
    ag_node_state_t *S = rcoll_task_state(task, ag_node_state_t);
    rcoll_comm_t *comm = task->comm;
    int nsteps;
    rcoll_status_t st;

    switch (task->phase) {
    case PH_ENTER:
        if ((st = rcoll_compose_enter(task, &S->c)) != RCOLL_OK) {
            return st;
        }
        if ((st = start(task, S)) != RCOLL_OK) {
            rcoll_compose_leave(task, &S->c);
            return st;
        }
        rcoll_compose_stream_init(&S->s, S->leader
                                  ? "node allgather, leaders' allgather among nodes, node bcast"
                                  : "node allgather, then node bcast");
        task->phase = PH_RUN;
        /* fall through */
    case PH_RUN:
        nsteps = S->leader ? 3 : 2;
        for (;;) {
            rcoll_compose_reap(task, &S->c, &S->s);
            if (S->s.ended < S->s.posted) {
                return RCOLL_INPROGRESS;
            }
            if (S->s.posted == nsteps || !rcoll_compose_room(&S->c, &S->s)) {
                break;            /* done, or a child failed */
            }
            if (S->leader && S->s.posted == 2 && !S->unpacked) {
                size_t n = task->args.count * rcoll_datatype_size(task->args.dtype);
                unpack(comm, S->stage, task->args.recvbuf, n, S->ppn_max, S->count, S->slot);
                S->unpacked = 1;
            }
            rcoll_comm_t *sub;
            rcoll_coll_args_t c = step_args(task, S, S->s.posted, &sub);
            rcoll_compose_post(task, &S->c, &S->s, sub, &c);
        }
        break;
    default:
        rcoll_error("allgather %s: bad phase %d", task->alg->name, task->phase);
        return RCOLL_ERR_INTERNAL;
    }
    rcoll_compose_leave(task, &S->c);
    return S->c.error;
}

static void ag_node_abort(rcoll_task_t *task)
{
    ag_node_state_t *S = rcoll_task_state(task, ag_node_state_t);
    if (task->phase != PH_ENTER) {
        rcoll_compose_abort(task, &S->s);
    }
    rcoll_compose_leave(task, &S->c);
}

/* Node allgather of one block, the leaders' allgather of ppn blocks per
 * node, the leader's copy of every block, the node bcast of all of them,
 * and posting three children. */
static double ag_node_cost(const rcoll_model_t *m, size_t bytes, int nranks, int ppn)
{
    if (ppn < 2 || ppn >= nranks) {
        return INFINITY;   /* offered only across nodes with > 1 rank on a node */
    }
    int nodes = (nranks + ppn - 1) / ppn;
    rcoll_model_t node = *m, rail = *m;
    node.shm = m->shm_node;
    rail.shm = 0;
    double all = (double)bytes * nranks;
    return rcoll_select_best_cost(RCOLL_COLL_ALLGATHER, &node, bytes, ppn, ppn) +
           rcoll_select_best_cost(RCOLL_COLL_ALLGATHER, &rail, bytes * (size_t)ppn, nodes, 1) +
           all * m->beta + rcoll_select_best_cost(RCOLL_COLL_BCAST, &node, (size_t)all, ppn, ppn) +
           3 * 0.5e-6;
}

const rcoll_alg_t rcoll_allgather_node_aware = {
    .name     = "node_aware",
    .coll     = RCOLL_COLL_ALLGATHER,
    .progress = ag_node_progress,
    .cost     = ag_node_cost,
    .abort    = ag_node_abort,
    .flags    = RCOLL_ALG_COMPOSED,
};
