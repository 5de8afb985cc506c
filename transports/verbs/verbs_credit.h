/*
 * verbs_credit.h - credit-based flow control for eager SENDs (pure logic).
 *
 * Each connection has a window of `depth` messages: a sender may have at
 * most `depth` messages that the receiver has not yet re-posted.  In
 * per-peer mode the receiver posted `depth` buffers for that peer, so a SEND
 * always finds one: no RNR.  In SRQ mode (verbs_srq.c) the buffers are a
 * shared pool that the windows together may exceed: the window still bounds
 * each peer's SENDs in flight, and an empty pool costs an RNR retry.
 *
 * All counters are cumulative modulo 2^32, so an old report can never be
 * mistaken for a new one.  The receiver tells the sender how many buffers it
 * has re-posted (`freed`) in two ways: piggybacked in the 8-byte backend
 * header of every SEND it makes to that peer, and, when it has nothing to
 * send and at least half of the window is waiting to be returned, by an RDMA
 * WRITE of the counter into a slot the sender registered for it.  A WRITE
 * consumes no receive buffer, so returning credits can never deadlock on the
 * credits themselves.
 */
#ifndef RCOLL_VERBS_CREDIT_H
#define RCOLL_VERBS_CREDIT_H

#include <stdint.h>

typedef struct rcoll_verbs_credit {
    uint32_t depth;        /* receive buffers the peer posted for us */
    uint32_t sent;         /* SENDs we made to the peer */
    uint32_t peer_freed;   /* of those, how many the peer re-posted (latest report) */
    uint32_t freed;        /* buffers we re-posted for the peer's SENDs */
    uint32_t reported;     /* the last `freed` value we told the peer */
} rcoll_verbs_credit_t;

void rcoll__verbs_credit_init(rcoll_verbs_credit_t *c, uint32_t depth);

/* Credits left: SENDs we may make now. */
uint32_t rcoll__verbs_credit_avail(const rcoll_verbs_credit_t *c);

/* Take one credit for a SEND; 0 if none is left. */
int rcoll__verbs_credit_take(rcoll_verbs_credit_t *c);

/*
 * The peer reports it has re-posted `cumulative` of our SENDs.  Old reports
 * are ignored (returns 0); a report of more than we sent is a protocol error
 * (returns -1, nothing changes).
 */
int rcoll__verbs_credit_update(rcoll_verbs_credit_t *c, uint32_t cumulative);

/* We re-posted one buffer that held a SEND from the peer. */
void rcoll__verbs_credit_freed(rcoll_verbs_credit_t *c);

/* The value to report now (piggybacked or written); marks it reported. */
uint32_t rcoll__verbs_credit_report(rcoll_verbs_credit_t *c);

/* 1 when enough credits wait to be returned that an explicit report is due. */
int rcoll__verbs_credit_report_due(const rcoll_verbs_credit_t *c);

#endif
