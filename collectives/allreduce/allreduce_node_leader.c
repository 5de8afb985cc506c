/*
 * allreduce_node_leader.c - the small-message node-aware allreduce: the
 * schedule of allreduce_node_aware.c with one slice, i.e. a node-local
 * reduce to local rank 0, an allreduce among the node leaders (local rank 0
 * of every node), a node-local bcast from the leader.  Three latencies of
 * which one crosses the network, with one message per node leaving it.
 */
#include "coll.h"
#include "allreduce_node.h"

static rcoll_status_t ar_node_leader_progress(rcoll_task_t *task)
{
    return rcoll__allreduce_node_progress(task, 1);
}

static double ar_node_leader_cost(const rcoll_model_t *m, size_t bytes, int nranks, int ppn)
{
    return rcoll__allreduce_node_cost(m, bytes, nranks, ppn, 1);
}

const rcoll_alg_t rcoll_allreduce_node_leader = {
    .name     = "node_leader",
    .coll     = RCOLL_COLL_ALLREDUCE,
    .progress = ar_node_leader_progress,
    .cost     = ar_node_leader_cost,
    .abort    = rcoll__allreduce_node_abort,
    .flags    = RCOLL_ALG_COMPOSED,
};
