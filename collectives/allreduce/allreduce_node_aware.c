/*
 * allreduce_node_aware.c - allreduce over several nodes, composed from the
 * node-local (shm) and network algorithms on the communicator's
 * sub-communicators (coll.h: node_comm, rail_comm; engines/compose.h).
 *
 * With S = the number of ranks of the smallest node (at most count), the
 * vector is cut into S slices, and slice k is owned by local rank k of
 * every node:
 *   1. node-local reduce of slice k to local rank k, k = 0..S-1 (on one node
 *      the shm pipeline: together, a reduce-scatter);
 *   2. local rank k < S allreduces slice k with the local ranks k of the
 *      other nodes (its rail): all S ranks of a node drive the network at
 *      once, each with 1/S of the data;
 *   3. node-local bcast of slice k from local rank k (together, an
 *      allgather).
 * The steps of different slices overlap (post_ready).
 * Uneven nodes: ranks beyond the smallest node's count take part in 1 and
 * 3 only.  allreduce_node_leader.c is the same schedule with S = 1.
 * Every step's algorithm is the selector's choice for its sub-communicator
 * (shm on a node unless RCOLL_SHM=0).  docs/algorithms-node-aware.md.
 */
#include <math.h>
#include "coll.h"
#include "selector.h"
#include "selector_cost.h"
#include "engines/compose.h"
#include "engines/compose_cost.h"
#include "allreduce_node.h"

enum { PH_ENTER = 0, PH_RUN };

typedef struct {
    rcoll_compose_t        c;
    rcoll_compose_stream_t node, rail;
    int                    slices, next;     /* node children posted: reduces, then bcasts */
} ar_node_state_t;
RCOLL_ALG_STATE_CHECK(ar_node_state_t);

/* The child args of slice k: coll type, root k (node) or none (rail). */
static rcoll_coll_args_t slice_args(const rcoll_task_t *task, rcoll_coll_type_t type, int slices,
                                    int k)
{
    const rcoll_coll_args_t *a = &task->args;
    size_t es = rcoll_datatype_size(a->dtype), off, len;
    rcoll_compose_slice(a->count, slices, k, &off, &len);
    rcoll_coll_args_t c = *a;
    c.type = type;
    c.count = len;
    c.recvbuf = (char *)a->recvbuf + off * es;
    c.sendbuf = type == RCOLL_COLL_REDUCE ? (const char *)a->sendbuf + off * es : c.recvbuf;
    c.in_place = type == RCOLL_COLL_REDUCE ? a->in_place : 1;
    c.root = type == RCOLL_COLL_ALLREDUCE ? 0 : k;
    return c;
}

/*
 * The three passes overlap: every rank posts its node children in one
 * order (reduce of slice 0..S-1, then bcast of slice 0..S-1), as the
 * window allows; local rank k < S posts its rail allreduce as soon as the
 * reduce of slice k has ended, and the bcast of slice k (of which it is the
 * root) only once that allreduce has ended.  No cycle: a rail needs only
 * reduces, which are all posted before any bcast.
 */
static void post_ready(rcoll_task_t *task, ar_node_state_t *S)
{
    rcoll_comm_t *comm = task->comm;
    int me = comm->local_rank, s = S->slices;
    for (;;) {
        rcoll_compose_reap(task, &S->c, &S->node);
        rcoll_compose_reap(task, &S->c, &S->rail);
        if (me < s && S->rail.posted == 0 && S->node.ended > me &&
            rcoll_compose_room(&S->c, &S->rail)) {
            rcoll_coll_args_t c = slice_args(task, RCOLL_COLL_ALLREDUCE, s, me);
            rcoll_compose_post(task, &S->c, &S->rail, comm->rail_comm, &c);
            continue;
        }
        if (S->next < 2 * s && rcoll_compose_room(&S->c, &S->node)) {
            int bcast = S->next >= s, k = bcast ? S->next - s : S->next;
            if (bcast && k == me && (S->rail.posted == 0 || S->rail.ended < S->rail.posted)) {
                return;          /* my slice is not back from the rail yet */
            }
            rcoll_coll_args_t c = slice_args(task, bcast ? RCOLL_COLL_BCAST : RCOLL_COLL_REDUCE,
                                             s, k);
            rcoll_compose_post(task, &S->c, &S->node, comm->node_comm, &c);
            S->next++;
            continue;
        }
        return;
    }
}

rcoll_status_t rcoll__allreduce_node_progress(rcoll_task_t *task, int max_slices)
{
    ar_node_state_t *S = rcoll_task_state(task, ar_node_state_t);
    rcoll_comm_t *comm = task->comm;
    rcoll_status_t st;

    switch (task->phase) {
    case PH_ENTER:
        if ((st = rcoll_compose_enter(task, &S->c)) != RCOLL_OK) {
            return st;
        }
        S->slices = max_slices > 0 && max_slices < comm->node_min ? max_slices : comm->node_min;
        if ((size_t)S->slices > task->args.count) {
            S->slices = (int)task->args.count;
        }
        rcoll_compose_stream_init(&S->node, "node-local reduce or bcast of a slice");
        rcoll_compose_stream_init(&S->rail, "inter-node allreduce of this rank's slice");
        S->next = 0;
        task->phase = PH_RUN;
        /* fall through */
    case PH_RUN:
        post_ready(task, S);
        if (S->node.ended < S->node.posted || S->rail.ended < S->rail.posted) {
            return RCOLL_INPROGRESS;
        }
        if (S->c.error == RCOLL_OK &&
            (S->next < 2 * S->slices || (comm->local_rank < S->slices && S->rail.posted == 0))) {
            return RCOLL_INPROGRESS;
        }
        break;
    default:
        rcoll_error("allreduce %s: bad phase %d", task->alg->name, task->phase);
        return RCOLL_ERR_INTERNAL;
    }
    /* every child has ended (compose.h: errors only once they have) */
    rcoll_compose_leave(task, &S->c);
    return S->c.error;
}

void rcoll__allreduce_node_abort(rcoll_task_t *task)
{
    ar_node_state_t *S = rcoll_task_state(task, ar_node_state_t);
    if (task->phase != PH_ENTER) {
        rcoll_compose_abort(task, &S->node);
        rcoll_compose_abort(task, &S->rail);
    }
    rcoll_compose_leave(task, &S->c);
}

double rcoll__allreduce_node_cost(const rcoll_model_t *m, size_t bytes, int nranks, int ppn,
                                  int slices)
{
    if (ppn < 2 || ppn >= nranks) {
        return INFINITY;   /* offered only across nodes with > 1 rank on a node */
    }
    int nodes = (nranks + ppn - 1) / ppn, s = slices > 0 && slices < ppn ? slices : ppn;
    /* The algorithm cuts at most one slice per element (and count >= slices):
     * the cost sees bytes, not the datatype, so count 8-byte elements, the
     * widest; but at least 2, as one slice is node_leader's schedule, which
     * node_leader prices (rcoll_sim found this: 128 slices priced for 8 B). */
    if (s > 2 && (size_t)s > bytes / 8) {
        s = bytes / 8 > 2 ? (int)(bytes / 8) : 2;
    }
    size_t slice = bytes / (size_t)s;
    rcoll_model_t node = *m, rail = *m;
    node.shm = m->shm_node;
    rail.shm = 0;
    rail.beta_inter *= s;          /* the s rails of a node share its link */
    double p_r, p_b;
    double t_r = rcoll_select_best_cost_port(RCOLL_COLL_REDUCE, &node, slice, ppn, &p_r);
    double t_b = rcoll_select_best_cost_port(RCOLL_COLL_BCAST, &node, slice, ppn, &p_b);
    double t_rail = rcoll_select_best_cost(RCOLL_COLL_ALLREDUCE, &rail, slice, nodes, 1);
    double c_r = rcoll_compose_cost_spacing(&node, t_r, p_r);
    double c_b = rcoll_compose_cost_spacing(&node, t_b, p_b);
    /* The pipeline (post_ready): reduce k ends at t_r + k c_r and its rail
     * then runs; the bcasts follow the reduces in the stream, one every
     * c_b, but the bcast of slice k not before rail k is back. */
    double after_reduces = t_r + (s - 1) * c_r + (s - 1) * c_b;
    double last = rcoll_compose_cost_last_start(t_r, c_r, t_rail, c_b, s);
    if (after_reduces > last) {
        last = after_reduces;
    }
    return last + t_b + (2 * s + 1) * 0.5e-6;   /* posting a child */
}

static rcoll_status_t ar_node_aware_progress(rcoll_task_t *task)
{
    return rcoll__allreduce_node_progress(task, 0);
}

static double ar_node_aware_cost(const rcoll_model_t *m, size_t bytes, int nranks, int ppn)
{
    return rcoll__allreduce_node_cost(m, bytes, nranks, ppn, 0);
}

const rcoll_alg_t rcoll_allreduce_node_aware = {
    .name     = "node_aware",
    .coll     = RCOLL_COLL_ALLREDUCE,
    .progress = ar_node_aware_progress,
    .cost     = ar_node_aware_cost,
    .abort    = rcoll__allreduce_node_abort,
    .flags    = RCOLL_ALG_COMPOSED,
};
