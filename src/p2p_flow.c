/*
 * p2p_flow.c - the credit accounting of eager messages (p2p_flow.h); the
 * HOLD / PULL / PULLED messages themselves are matched in p2p.c.
 */
#include <stdlib.h>
#include "p2p_flow.h"
#include "wire.h"

rcoll_status_t rcoll__p2p_flow_init(rcoll_context_t *ctx)
{
    ctx->flow = calloc((size_t)ctx->size, sizeof(*ctx->flow));
    if (ctx->flow == NULL) {
        return RCOLL_ERR_NO_MEMORY;
    }
    size_t peers = ctx->size > 1 ? (size_t)ctx->size - 1 : 1;
    ctx->flow_share = ctx->config.unexpected_max / peers;
    ctx->flow_return_at = ctx->flow_share / 2;
    return RCOLL_OK;
}

void rcoll__p2p_flow_fini(rcoll_context_t *ctx)
{
    free(ctx->flow);
    ctx->flow = NULL;
}

void rcoll__flow_return(rcoll_context_t *ctx, int wpeer)
{
    rcoll__flow_peer_t *f = &ctx->flow[wpeer];
    rcoll_wire_hdr_t h = { .type = RCOLL_MSG_CREDIT, .version = RCOLL_WIRE_VERSION,
                           .src = (uint32_t)ctx->rank, .len = f->consumed };
    uint8_t hdr[RCOLL_WIRE_HDR_SIZE];
    f->consumed = 0;
    if (ctx->peer_failed[wpeer] != RCOLL_OK) {
        return;
    }
    rcoll_wire_encode(&h, hdr);
    /* A failed send: the peer is failing, peer_error follows; its credit no longer matters. */
    (void)ctx->peer_ops[wpeer]->send(ctx->peer_tl[wpeer], wpeer, hdr, sizeof(hdr), NULL, 0);
}

int rcoll__flow_keep(rcoll_context_t *ctx, int wpeer, size_t len)
{
    rcoll__flow_peer_t *f = &ctx->flow[wpeer];
    size_t c = rcoll__flow_charge(len);
    if (c > ctx->flow_share - f->kept) {
        return 0;
    }
    f->kept += c;
    ctx->unexpected_bytes += c;
    if (ctx->unexpected_bytes > ctx->unexpected_peak) {
        ctx->unexpected_peak = ctx->unexpected_bytes;
    }
    return 1;
}

void rcoll__flow_unkeep(rcoll_context_t *ctx, int wpeer, size_t len)
{
    size_t c = rcoll__flow_charge(len);
    ctx->flow[wpeer].kept -= c;
    ctx->unexpected_bytes -= c;
}

void rcoll__flow_on_credit(rcoll_context_t *ctx, int wpeer, size_t len)
{
    rcoll__flow_peer_t *f = &ctx->flow[wpeer];
    if (len > f->sent) {
        rcoll_warn("rank %d returned %zu bytes of eager credit, only %zu were charged to it; "
                   "ignoring the excess", wpeer, len, f->sent);
        len = f->sent;
    }
    f->sent -= len;
}
