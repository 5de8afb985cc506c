/*
 * comm_node.c - rcoll_comm_split_node: the ranks of a communicator that share
 * this rank's node, in the communicator's order.
 *
 * Node membership was settled at init (ctx->node_of, numbered identically on
 * every rank from the launcher's node names), so the colour is this rank's
 * node index and the key its rank in comm: an ordinary split, which keeps
 * communicator ids consistent however this interleaves with other splits.
 */
#include "core.h"

RCOLL_API rcoll_status_t rcoll_comm_split_node(rcoll_comm_t *comm, rcoll_comm_t **nodecomm)
{
    if (comm == NULL || nodecomm == NULL) {
        rcoll_error("rcoll_comm_split_node: invalid argument: %s is NULL",
                    comm ? "nodecomm" : "comm");
        return RCOLL_ERR_INVALID_ARG;
    }
    const rcoll_context_t *ctx = comm->ctx;
    int node = ctx->node_of[comm->world_ranks[comm->rank]];
    return rcoll_comm_split(comm, node, comm->rank, nodecomm);
}
