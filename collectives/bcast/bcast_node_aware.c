/*
 * bcast_node_aware.c - bcast over several nodes, composed from the
 * node-local (shm) bcast and a network bcast among one rank per node
 * (engines/compose.h), pipelined in segments of 4 x RCOLL_SEGMENT_SIZE.
 *
 * Let q = the root's local index if the smallest node has that many ranks,
 * else 0; the ranks of local index q form a rail that spans every node.
 *   - Root's node, root on the rail (local index q): the root sends segment
 *     j on the rail and on its node at once.
 *   - Root's node, root off the rail: segment j first goes to the node
 *     (node bcast from the root), then local rank q sends it on the rail.
 *   - Any other node: local rank q receives segment j on the rail, then
 *     sends it to its node (node bcast from local rank q).
 * So each segment crosses the network once per node, in a bcast among the
 * nodes, while the previous one spreads inside the nodes.  Every step's
 * algorithm is the selector's choice for its sub-communicator.
 */
#include <math.h>
#include "coll.h"
#include "selector.h"
#include "selector_cost.h"
#include "engines/compose.h"

#define SEG_FACTOR 4     /* segments of SEG_FACTOR x RCOLL_SEGMENT_SIZE */

typedef struct {
    rcoll_compose_t        c;
    rcoll_compose_stream_t a, b;       /* first and second step of each segment */
    rcoll_comm_t          *a_comm, *b_comm;
    int                    a_root, b_root, b_waits_a;
    size_t                 seg;        /* elements */
    int                    nseg, ja, jb;
} bc_node_state_t;
RCOLL_ALG_STATE_CHECK(bc_node_state_t);

/* Comm rank r's index among the members on its node, and that node. */
static int local_index(const rcoll_comm_t *comm, int r, int *node)
{
    int idx = 0;
    *node = rcoll_comm_node(comm, r);
    for (int i = 0; i < r; i++) {
        idx += rcoll_comm_node(comm, i) == *node;
    }
    return idx;
}

/* The rank of the rail member on node, or -1. */
static int rail_rank_on(const rcoll_comm_t *rail, int node)
{
    for (int i = 0; i < rail->size; i++) {
        if (rcoll_comm_node(rail, i) == node) {
            return i;
        }
    }
    return -1;
}

/* Who does what (the header's three cases). */
static rcoll_status_t roles(rcoll_task_t *task, bc_node_state_t *S)
{
    rcoll_comm_t *comm = task->comm;
    int rnode, lr = local_index(comm, task->args.root, &rnode);
    int q = lr < comm->node_min ? lr : 0, mynode = rcoll_comm_node(comm, comm->rank);
    int on_rail = comm->local_rank == q;
    int rail_root = on_rail ? rail_rank_on(comm->rail_comm, rnode) : -1;

    if (on_rail && rail_root < 0) {
        rcoll_error("bcast node_aware: no rank of the root's node on rail %d of communicator "
                    "0x%llx", q, (unsigned long long)comm->id);
        return RCOLL_ERR_INTERNAL;
    }
    S->a_comm = S->b_comm = NULL;
    S->b_waits_a = 1;
    if (mynode == rnode && lr == q) {
        if (comm->rank == task->args.root) {
            S->a_comm = comm->rail_comm;
            S->a_root = rail_root;
            S->b_waits_a = 0;
        }
        S->b_comm = comm->node_comm;
        S->b_root = lr;
    } else if (mynode == rnode) {
        S->a_comm = comm->node_comm;
        S->a_root = lr;
        if (on_rail) {
            S->b_comm = comm->rail_comm;
            S->b_root = rail_root;
        }
    } else {
        if (on_rail) {
            S->a_comm = comm->rail_comm;
            S->a_root = rail_root;
        }
        S->b_comm = comm->node_comm;
        S->b_root = q;
    }
    return RCOLL_OK;
}

static void post_seg(rcoll_task_t *task, bc_node_state_t *S, rcoll_compose_stream_t *s,
                     rcoll_comm_t *sub, int root, int j)
{
    const rcoll_coll_args_t *a = &task->args;
    size_t off = (size_t)j * S->seg, es = rcoll_datatype_size(a->dtype);
    rcoll_coll_args_t c = *a;
    c.count = a->count - off < S->seg ? a->count - off : S->seg;
    c.recvbuf = (char *)a->recvbuf + off * es;
    c.sendbuf = c.recvbuf;
    c.in_place = 1;
    c.root = root;
    rcoll_compose_post(task, &S->c, s, sub, &c);
}

static rcoll_status_t bc_node_progress(rcoll_task_t *task)
{
    bc_node_state_t *S = rcoll_task_state(task, bc_node_state_t);
    rcoll_status_t st;

    if (task->phase == 0) {
        if ((st = rcoll_compose_enter(task, &S->c)) != RCOLL_OK) {
            return st;
        }
        if ((st = roles(task, S)) != RCOLL_OK) {
            rcoll_compose_leave(task, &S->c);
            return st;
        }
        size_t es = rcoll_datatype_size(task->args.dtype);
        size_t segb = rcoll_task_config(task)->segment_size * SEG_FACTOR;
        S->seg = segb / es > 0 ? segb / es : 1;
        S->nseg = (int)((task->args.count + S->seg - 1) / S->seg);
        rcoll_compose_stream_init(&S->a, "first step of a segment (rail or node bcast)");
        rcoll_compose_stream_init(&S->b, "second step of a segment (node or rail bcast)");
        task->phase = 1;
    }
    for (;;) {
        rcoll_compose_reap(task, &S->c, &S->a);
        rcoll_compose_reap(task, &S->c, &S->b);
        if (S->a_comm != NULL && S->ja < S->nseg && rcoll_compose_room(&S->c, &S->a)) {
            post_seg(task, S, &S->a, S->a_comm, S->a_root, S->ja++);
            continue;
        }
        int ready = S->a_comm != NULL && S->b_waits_a ? S->a.ended : S->nseg;
        if (S->b_comm != NULL && S->jb < ready && rcoll_compose_room(&S->c, &S->b)) {
            post_seg(task, S, &S->b, S->b_comm, S->b_root, S->jb++);
            continue;
        }
        break;
    }
    if (S->a.ended < S->a.posted || S->b.ended < S->b.posted) {
        return RCOLL_INPROGRESS;
    }
    int all = (S->a_comm == NULL || S->ja == S->nseg) && (S->b_comm == NULL || S->jb == S->nseg);
    if (S->c.error == RCOLL_OK && !all) {
        return RCOLL_INPROGRESS;
    }
    rcoll_compose_leave(task, &S->c);
    return S->c.error;
}

static void bc_node_abort(rcoll_task_t *task)
{
    bc_node_state_t *S = rcoll_task_state(task, bc_node_state_t);
    if (task->phase != 0) {
        rcoll_compose_abort(task, &S->a);
        rcoll_compose_abort(task, &S->b);
    }
    rcoll_compose_leave(task, &S->c);
}

static double bc_node_cost(const rcoll_model_t *m, size_t bytes, int nranks, int ppn)
{
    if (ppn < 2 || ppn >= nranks) {
        return INFINITY;   /* offered only across nodes with > 1 rank on a node */
    }
    int nodes = (nranks + ppn - 1) / ppn;
    size_t segb = (m->segment_size ? m->segment_size : 65536) * SEG_FACTOR;
    size_t seg = bytes < segb ? bytes : segb;
    double nseg = bytes > seg ? ceil((double)bytes / (double)seg) : 1;
    rcoll_model_t node = *m, rail = *m;
    node.shm = m->shm_node;
    rail.shm = 0;
    double tn = rcoll_select_best_cost(RCOLL_COLL_BCAST, &node, seg, ppn, ppn);
    double tr = rcoll_select_best_cost(RCOLL_COLL_BCAST, &rail, seg, nodes, 1);
    return tn + tr + (nseg - 1) * (tn > tr ? tn : tr) + 2 * nseg * 0.5e-6;
}

const rcoll_alg_t rcoll_bcast_node_aware = {
    .name     = "node_aware",
    .coll     = RCOLL_COLL_BCAST,
    .progress = bc_node_progress,
    .cost     = bc_node_cost,
    .abort    = bc_node_abort,
    .flags    = RCOLL_ALG_COMPOSED,
};
