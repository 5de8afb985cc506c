/*
 * p2p_flow.h - credits that bound the eager messages a receiver keeps for
 * receives not yet posted (unexpected), and so what a sender queues too.
 *
 * Each rank gives every peer a credit of flow_share = RCOLL_UNEXPECTED_MAX /
 * (ranks - 1) bytes; an eager message of len bytes is charged len +
 * RCOLL__FLOW_ENTRY.  A sender sends eagerly only while its charged bytes to
 * that peer not yet returned fit in the share, else it holds the message
 * (HOLD header; the receiver asks for it with PULL once the receive is
 * posted: p2p.c).  The receiver returns the charge of every eager message it
 * has taken (matched, or copied out of the unexpected queue) in CREDIT
 * messages, one per half share.  So the bytes a receiver keeps from a peer
 * never exceed the share, which it enforces: a peer that sends beyond it is
 * broken or hostile and its message is dropped.  Messages to this process
 * itself are not charged.  docs/protocols.md has the whole protocol.
 * Private to src/.
 */
#ifndef RCOLL_P2P_FLOW_H
#define RCOLL_P2P_FLOW_H

#include <stddef.h>
#include "core.h"

/* Charged per message besides its payload: the kept copy's own header. */
#define RCOLL__FLOW_ENTRY 128u

typedef struct rcoll__flow_peer {
    size_t sent;       /* sender: charged bytes to this peer, not yet returned */
    size_t kept;       /* receiver: charged bytes of this peer's messages kept unexpected */
    size_t consumed;   /* receiver: charged bytes taken from this peer, not yet returned */
} rcoll__flow_peer_t;

static inline size_t rcoll__flow_charge(size_t len)
{
    return len + RCOLL__FLOW_ENTRY;
}

/* Sender: charge an eager message of len bytes to wpeer (not this process)
 * if the credit allows; 0: hold it instead. */
static inline int rcoll__flow_take(rcoll_context_t *ctx, int wpeer, size_t len)
{
    rcoll__flow_peer_t *f = &ctx->flow[wpeer];
    size_t c = rcoll__flow_charge(len);
    if (c > ctx->flow_share - f->sent) {          /* sent <= share always */
        return 0;
    }
    f->sent += c;
    return 1;
}

void rcoll__flow_return(rcoll_context_t *ctx, int wpeer);

/* Receiver: the message of len bytes from wpeer (not this process) has been
 * taken; its charge goes back with the next CREDIT. */
static inline void rcoll__flow_consumed(rcoll_context_t *ctx, int wpeer, size_t len)
{
    rcoll__flow_peer_t *f = &ctx->flow[wpeer];
    f->consumed += rcoll__flow_charge(len);
    if (f->consumed > ctx->flow_return_at) {
        rcoll__flow_return(ctx, wpeer);
    }
}

/* Receiver: may a message of len bytes from wpeer be kept unexpected?
 * Counts it if so; 0: the peer exceeded its credit. */
int  rcoll__flow_keep(rcoll_context_t *ctx, int wpeer, size_t len);
/* Receiver: a kept message of len bytes from wpeer left the queue. */
void rcoll__flow_unkeep(rcoll_context_t *ctx, int wpeer, size_t len);
/* Sender: a CREDIT arrived. */
void rcoll__flow_on_credit(rcoll_context_t *ctx, int wpeer, size_t len);

#endif
