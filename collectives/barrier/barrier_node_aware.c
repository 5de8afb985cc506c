/*
 * barrier_node_aware.c - barrier over several nodes, composed from barriers
 * on the communicator's sub-communicators (coll.h: node_comm, rail_comm;
 * engines/compose.h), one after the other:
 *   1. node-local barrier (every rank of the node has arrived);
 *   2. the node leaders (local rank 0, rail 0) run a barrier among the
 *      nodes: every rank of every node has arrived;
 *   3. node-local barrier again: the leader enters it only after step 2,
 *      so it releases the node.
 * One message stream per node crosses the network (log2(nodes) rounds of
 * empty messages) instead of one per rank.  The node steps are the
 * selector's choice for the node communicator (shm unless RCOLL_SHM=0).
 * Uneven layouts: every node has a local rank 0, so rail 0 spans them all.
 */
#include <math.h>
#include "coll.h"
#include "selector.h"
#include "selector_cost.h"
#include "engines/compose.h"

enum { PH_ENTER = 0, PH_RUN };

typedef struct {
    rcoll_compose_t        c;
    rcoll_compose_stream_t s;
    int                    nsteps;     /* 3 for the leaders, 2 for the others */
} bar_node_state_t;
RCOLL_ALG_STATE_CHECK(bar_node_state_t);

/* The sub-communicator of step i of a rank with nsteps steps. */
static rcoll_comm_t *step_comm(rcoll_comm_t *comm, int nsteps, int i)
{
    return nsteps == 3 && i == 1 ? comm->rail_comm : comm->node_comm;
}

static rcoll_status_t bar_node_progress(rcoll_task_t *task)
{
    bar_node_state_t *S = rcoll_task_state(task, bar_node_state_t);
    rcoll_comm_t *comm = task->comm;
    rcoll_status_t st;

    switch (task->phase) {
    case PH_ENTER:
        if ((st = rcoll_compose_enter(task, &S->c)) != RCOLL_OK) {
            return st;
        }
        S->nsteps = comm->local_rank == 0 ? 3 : 2;
        rcoll_compose_stream_init(&S->s, comm->local_rank == 0
                                  ? "node barrier, leaders' barrier among nodes, node release"
                                  : "node barrier, then node release");
        task->phase = PH_RUN;
        /* fall through */
    case PH_RUN:
        for (;;) {
            rcoll_compose_reap(task, &S->c, &S->s);
            if (S->s.ended < S->s.posted) {
                return RCOLL_INPROGRESS;
            }
            if (S->s.posted == S->nsteps || !rcoll_compose_room(&S->c, &S->s)) {
                break;            /* done, or a child failed */
            }
            rcoll_coll_args_t c = { .type = RCOLL_COLL_BARRIER, .dtype = RCOLL_UINT8 };
            rcoll_compose_post(task, &S->c, &S->s, step_comm(comm, S->nsteps, S->s.posted), &c);
        }
        break;
    default:
        rcoll_error("barrier %s: bad phase %d", task->alg->name, task->phase);
        return RCOLL_ERR_INTERNAL;
    }
    rcoll_compose_leave(task, &S->c);
    return S->c.error;
}

static void bar_node_abort(rcoll_task_t *task)
{
    bar_node_state_t *S = rcoll_task_state(task, bar_node_state_t);
    if (task->phase != PH_ENTER) {
        rcoll_compose_abort(task, &S->s);
    }
    rcoll_compose_leave(task, &S->c);
}

/* Two node barriers and a barrier among the nodes, plus posting three
 * children. */
static double bar_node_cost(const rcoll_model_t *m, size_t bytes, int nranks, int ppn)
{
    (void)bytes;
    if (ppn < 2 || ppn >= nranks) {
        return INFINITY;   /* offered only across nodes with > 1 rank on a node */
    }
    int nodes = (nranks + ppn - 1) / ppn;
    rcoll_model_t node = *m, rail = *m;
    node.shm = m->shm_node;
    rail.shm = 0;
    return 2 * rcoll_select_best_cost(RCOLL_COLL_BARRIER, &node, 0, ppn, ppn) +
           rcoll_select_best_cost(RCOLL_COLL_BARRIER, &rail, 0, nodes, 1) + 3 * 0.5e-6;
}

const rcoll_alg_t rcoll_barrier_node_aware = {
    .name     = "node_aware",
    .coll     = RCOLL_COLL_BARRIER,
    .progress = bar_node_progress,
    .cost     = bar_node_cost,
    .abort    = bar_node_abort,
    .flags    = RCOLL_ALG_COMPOSED,
};
