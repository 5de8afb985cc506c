/*
 * coll_support.c - what the collectives may ask of the core about a context
 * or communicator, off the per-collective path (declared in coll.h, which
 * keeps the context opaque).
 */
#include "core.h"

size_t rcoll_ctx_eager_limit(const rcoll_context_t *ctx)
{
    return ctx->eager_limit;
}

const char *rcoll_ctx_hostname(const rcoll_context_t *ctx)
{
    return ctx->hostname;
}

int rcoll_comm_nnodes(const rcoll_comm_t *comm)
{
    return comm->ctx->node_of != NULL ? comm->ctx->nnodes : -1;
}

int rcoll_comm_node(const rcoll_comm_t *comm, int r)
{
    const rcoll_context_t *ctx = comm->ctx;
    if (ctx->node_of == NULL || r < 0 || r >= comm->size) {
        return -1;
    }
    return ctx->node_of[comm->world_ranks[r]];
}

void **rcoll_ctx_coll_slot(rcoll_context_t *ctx)
{
    return &ctx->selector;
}
