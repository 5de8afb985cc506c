/*
 * reduce_node_leader.c - the small-message node-aware reduce: the schedule
 * of reduce_node_aware.c with one slice, i.e. a node-local reduce to local
 * rank 0 on every node but the root's, a reduce among the node leaders
 * (local rank 0 of every node) to the leader of the root's node, and on
 * the root's node a node-local reduce to the root itself, the leader
 * contributing the leaders' result.  Three latencies of which one crosses
 * the network, with one message per node leaving it.
 */
#include "coll.h"
#include "reduce_node.h"

static rcoll_status_t red_node_leader_progress(rcoll_task_t *task)
{
    return rcoll__reduce_node_progress(task, 1);
}

static double red_node_leader_cost(const rcoll_model_t *m, size_t bytes, int nranks, int ppn)
{
    return rcoll__reduce_node_cost(m, bytes, nranks, ppn, 1);
}

const rcoll_alg_t rcoll_reduce_node_leader = {
    .name     = "node_leader",
    .coll     = RCOLL_COLL_REDUCE,
    .progress = red_node_leader_progress,
    .cost     = red_node_leader_cost,
    .abort    = rcoll__reduce_node_abort,
    .flags    = RCOLL_ALG_COMPOSED,
};
