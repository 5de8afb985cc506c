/*
 * reduce_node_aware.c - reduce over several nodes, composed from the
 * node-local (shm) and network reduces on the communicator's
 * sub-communicators (coll.h: node_comm, rail_comm; engines/compose.h).
 *
 * With S = the number of ranks of the smallest node (at most count), the
 * vector is cut into S slices; slice k travels on rail k (local rank k of
 * every node):
 *   1. on every node but the root's: node-local reduce of slice k to local
 *      rank k, k = 0..S-1;
 *   2. rail k reduces slice k to its member on the root's node, which
 *      contributes its own data only: all S ranks of a node drive the
 *      network at once, each with 1/S of the vector;
 *   3. on the root's node: node-local reduce of slice k to the root itself,
 *      in which local rank k contributes the rail's result (its own data
 *      and the other nodes') and every other rank its own data.
 * So the root's node needs no extra hand-over, and the slices overlap: rail
 * k starts once slice k is reduced on a node, step 3 of slice k once rail k
 * is back.  Ranks beyond the smallest node's count (uneven layouts) take
 * part in the node steps only.  reduce_node_leader.c is the same schedule
 * with S = 1.  Every step's algorithm is the selector's choice for its
 * sub-communicator (shm on a node unless RCOLL_SHM=0).
 * docs/algorithms-node-aware.md.
 */
#include <math.h>
#include "coll.h"
#include "selector.h"
#include "selector_cost.h"
#include "engines/compose.h"
#include "engines/compose_cost.h"
#include "engines/engine.h"
#include "reduce_node.h"

enum { PH_ENTER = 0, PH_RUN };

typedef struct {
    rcoll_compose_t        c;
    rcoll_compose_stream_t node, rail;
    int                    slices, next;   /* node children posted */
    int                    root_node;      /* 1: this rank is on the root's node */
    int                    node_root;      /* root's node: the root's node_comm rank */
    int                    rail_root;      /* the rail rank of the rail's member on the root's node */
    char                  *part;           /* local rank k < S: slice k reduced (node or rail) */
} red_node_state_t;
RCOLL_ALG_STATE_CHECK(red_node_state_t);

/* Where the root is: its node_comm rank if this rank shares its node (else
 * -1), and the rail rank of my rail's member on its node (-1: no rail). */
static void find_root(const rcoll_comm_t *comm, int root, int *node_root, int *rail_root)
{
    int rnode = rcoll_comm_node(comm, root), idx = 0;
    const rcoll_comm_t *rail = comm->rail_comm;

    for (int i = 0; i < root; i++) {
        idx += rcoll_comm_node(comm, i) == rnode;
    }
    *node_root = rcoll_comm_node(comm, comm->rank) == rnode ? idx : -1;
    *rail_root = -1;
    for (int i = 0; rail != NULL && i < rail->size; i++) {
        if (rcoll_comm_node(rail, i) == rnode) {
            *rail_root = i;
            break;
        }
    }
}

/* The args of a child on slice k: type, root and buffers per the header's steps. */
static rcoll_coll_args_t slice_args(const rcoll_task_t *task, const red_node_state_t *S,
                                    int rail, int k)
{
    const rcoll_coll_args_t *a = &task->args;
    size_t es = rcoll_datatype_size(a->dtype), off, len;
    int me = task->comm->local_rank;
    rcoll_compose_slice(a->count, S->slices, k, &off, &len);
    rcoll_coll_args_t c = *a;
    c.count = len;
    c.sendbuf = (const char *)a->sendbuf + off * es;
    c.recvbuf = NULL;
    c.in_place = 0;
    if (rail) {                                   /* step 2 */
        c.root = S->rail_root;
        if (S->root_node) {
            c.recvbuf = S->part;
        } else {
            c.sendbuf = S->part;
        }
    } else if (S->root_node) {                    /* step 3 */
        c.root = S->node_root;
        if (k == me) {
            c.sendbuf = S->part;
        }
        if (a->root == task->comm->rank) {
            c.recvbuf = (char *)a->recvbuf + off * es;
            c.in_place = c.recvbuf == c.sendbuf;
        }
    } else {                                      /* step 1 */
        c.root = k;
        if (k == me) {
            c.recvbuf = S->part;
        }
    }
    return c;
}

/*
 * Every node member posts its node children in slice order.  Local rank
 * k < S posts its rail child once its slice is reduced on its node (root's
 * node: at once), and on the root's node posts the node child of slice k
 * only once the rail is back.  No cycle: a rail needs only other nodes'
 * step 1, which waits for nothing but its own node.
 */
static void post_ready(rcoll_task_t *task, red_node_state_t *S)
{
    rcoll_comm_t *comm = task->comm;
    int me = comm->local_rank, s = S->slices;
    for (;;) {
        rcoll_compose_reap(task, &S->c, &S->node);
        rcoll_compose_reap(task, &S->c, &S->rail);
        if (me < s && S->rail.posted == 0 && (S->root_node || S->node.ended > me) &&
            rcoll_compose_room(&S->c, &S->rail)) {
            rcoll_coll_args_t c = slice_args(task, S, 1, me);
            rcoll_compose_post(task, &S->c, &S->rail, comm->rail_comm, &c);
            continue;
        }
        if (S->next < s && rcoll_compose_room(&S->c, &S->node)) {
            if (S->root_node && S->next == me && (S->rail.posted == 0 || S->rail.ended == 0)) {
                return;          /* my slice is not back from the rail yet */
            }
            rcoll_coll_args_t c = slice_args(task, S, 0, S->next);
            rcoll_compose_post(task, &S->c, &S->node, comm->node_comm, &c);
            S->next++;
            continue;
        }
        return;
    }
}

static rcoll_status_t start(rcoll_task_t *task, red_node_state_t *S, int max_slices)
{
    rcoll_comm_t *comm = task->comm;
    S->slices = max_slices > 0 && max_slices < comm->node_min ? max_slices : comm->node_min;
    if ((size_t)S->slices > task->args.count) {
        S->slices = (int)task->args.count;
    }
    find_root(comm, task->args.root, &S->node_root, &S->rail_root);
    S->root_node = S->node_root >= 0;
    if (comm->local_rank < S->slices) {
        if (S->rail_root < 0) {
            rcoll_error("reduce %s: no rank of the root's node on rail %d of communicator 0x%llx",
                        task->alg->name, comm->local_rank, (unsigned long long)comm->id);
            return RCOLL_ERR_INTERNAL;
        }
        size_t es = rcoll_datatype_size(task->args.dtype), off, len;
        rcoll_compose_slice(task->args.count, S->slices, comm->local_rank, &off, &len);
        S->part = rcoll__scratch(task, len * es, "reduce node_aware");
        if (S->part == NULL) {
            return RCOLL_ERR_NO_MEMORY;
        }
    }
    rcoll_compose_stream_init(&S->node, S->root_node ? "node-local reduce of a slice to the root"
                                                     : "node-local reduce of a slice");
    rcoll_compose_stream_init(&S->rail, "inter-node reduce of this rank's slice");
    S->next = 0;
    return RCOLL_OK;
}

rcoll_status_t rcoll__reduce_node_progress(rcoll_task_t *task, int max_slices)
{
    red_node_state_t *S = rcoll_task_state(task, red_node_state_t);
    rcoll_comm_t *comm = task->comm;
    rcoll_status_t st;

    switch (task->phase) {
    case PH_ENTER:
        if ((st = rcoll_compose_enter(task, &S->c)) != RCOLL_OK) {
            return st;
        }
        if ((st = start(task, S, max_slices)) != RCOLL_OK) {
            rcoll_compose_leave(task, &S->c);
            return st;
        }
        task->phase = PH_RUN;
        /* fall through */
    case PH_RUN:
        post_ready(task, S);
        if (S->node.ended < S->node.posted || S->rail.ended < S->rail.posted) {
            return RCOLL_INPROGRESS;
        }
        if (S->c.error == RCOLL_OK &&
            (S->next < S->slices || (comm->local_rank < S->slices && S->rail.posted == 0))) {
            return RCOLL_INPROGRESS;
        }
        break;
    default:
        rcoll_error("reduce %s: bad phase %d", task->alg->name, task->phase);
        return RCOLL_ERR_INTERNAL;
    }
    /* every child has ended (compose.h: errors only once they have) */
    rcoll_compose_leave(task, &S->c);
    return S->c.error;
}

void rcoll__reduce_node_abort(rcoll_task_t *task)
{
    red_node_state_t *S = rcoll_task_state(task, red_node_state_t);
    if (task->phase != PH_ENTER) {
        rcoll_compose_abort(task, &S->node);
        rcoll_compose_abort(task, &S->rail);
    }
    rcoll_compose_leave(task, &S->c);
}

/* The pipeline of post_ready, priced: the other nodes' reduce of slice k
 * ends at t_node + k c (c: compose_cost.h), then rail k runs (the S rails of
 * a node share its link); the root's node reduces the slices in order, one
 * every c, slice k not before rail k is back.  Plus posting the children. */
double rcoll__reduce_node_cost(const rcoll_model_t *m, size_t bytes, int nranks, int ppn,
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
    rail.beta_inter *= s;
    double p_node;
    double t_node = rcoll_select_best_cost_port(RCOLL_COLL_REDUCE, &node, slice, ppn, &p_node);
    double t_rail = rcoll_select_best_cost(RCOLL_COLL_REDUCE, &rail, slice, nodes, 1);
    double c = rcoll_compose_cost_spacing(&node, t_node, p_node);
    return rcoll_compose_cost_last_start(t_node, c, t_rail, c, s) + t_node + (s + 1) * 0.5e-6;
}

static rcoll_status_t red_node_aware_progress(rcoll_task_t *task)
{
    return rcoll__reduce_node_progress(task, 0);
}

static double red_node_aware_cost(const rcoll_model_t *m, size_t bytes, int nranks, int ppn)
{
    return rcoll__reduce_node_cost(m, bytes, nranks, ppn, 0);
}

const rcoll_alg_t rcoll_reduce_node_aware = {
    .name     = "node_aware",
    .coll     = RCOLL_COLL_REDUCE,
    .progress = red_node_aware_progress,
    .cost     = red_node_aware_cost,
    .abort    = rcoll__reduce_node_abort,
    .flags    = RCOLL_ALG_COMPOSED,
};
