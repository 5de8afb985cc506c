/*
 * verbs_close.c - a graceful end, before close() destroys anything.
 *
 * 1. Drain: progress until every connected (or connecting) peer's queued
 *    sends and puts are posted and every posted work request has completed, so nothing we sent
 *    is lost when the QP goes away.
 * 2. rdma_cm: send each peer a BYE, then rdma_disconnect, and on iWARP wait
 *    for the DISCONNECTED events.  Destroying a connected iWARP id is an
 *    abrupt close that can drop data a SEND completion already reported (an
 *    iWARP SEND completes once in TCP); a graceful disconnect delivers it
 *    first.  On IB and RoCE a completion means the peer's HCA acknowledged
 *    the data, and the DISCONNECTED event would wait for the peer to call
 *    rdma_disconnect itself (its DREP), up to the 10 s below when it is busy
 *    elsewhere: nothing to wait for.  The BYE tells the peer that the
 *    disconnect is a departure, not a failure.
 * All of it within min(RCOLL_TIMEOUT, 10 s); no upcalls to the core meanwhile.
 */
#include <stdlib.h>
#include "verbs_int.h"

#define CLOSE_MAX_S 10.0

static int ep_quiet(const rcoll_tl_t *tl, const rcoll_verbs_ep_t *ep)
{
    if (ep->state == RCOLL_VERBS_EP_CONNECTING) {   /* what was sent while it connects */
        return rcoll_list_empty(&ep->pending) && ep->puts_unposted == 0;
    }
    return ep->state != RCOLL_VERBS_EP_CONNECTED || ep->peer == tl->rank ||
           (rcoll_list_empty(&ep->pending) && ep->puts_unposted == 0 &&
            ep->sq_avail == tl->sq_depth && !ep->credit_inflight);
}

static int all_quiet(const rcoll_tl_t *tl)
{
    for (int p = 0; p < tl->size; p++) {
        if (!ep_quiet(tl, &tl->eps[p])) {
            return 0;
        }
    }
    return 1;
}

static int byes_sent(rcoll_tl_t *tl, int *sent)
{
    int missing = 0;

    for (int p = 0; p < tl->size; p++) {
        rcoll_verbs_ep_t *ep = &tl->eps[p];
        if (sent[p] || p == tl->rank || ep->state != RCOLL_VERBS_EP_CONNECTED) {
            continue;
        }
        if (rcoll__verbs_send_bye(tl, ep) == RCOLL_OK) {
            sent[p] = 1;
        } else {
            missing++;
        }
    }
    return missing == 0;
}

static int all_disconnected(const rcoll_tl_t *tl, const int *asked)
{
    for (int p = 0; p < tl->size; p++) {
        if (asked[p] && tl->eps[p].qp_ready) {
            return 0;
        }
    }
    return 1;
}

static int wait_until(rcoll_tl_t *tl, double end, int (*done)(rcoll_tl_t *, int *), int *arg)
{
    while (!done(tl, arg)) {
        if (rcoll__verbs_now() > end) {
            return 0;
        }
        rcoll__verbs_progress(tl);
    }
    return 1;
}

static int quiet_cb(rcoll_tl_t *tl, int *unused) { return all_quiet(tl); }
static int disc_cb(rcoll_tl_t *tl, int *asked) { return all_disconnected(tl, asked); }

void rcoll__verbs_drain(rcoll_tl_t *tl)
{
    double limit = tl->conn_timeout < CLOSE_MAX_S ? tl->conn_timeout : CLOSE_MAX_S;
    double end = rcoll__verbs_now() + limit;
    int *flags = calloc((size_t)tl->size, sizeof(int));

    tl->closing = 1;
    if (!wait_until(tl, end, quiet_cb, NULL)) {
        rcoll_warn("verbs: close on %s: sends still in flight after %.0f s; closing anyway",
                   tl->port.dev, limit);
    }
    if (tl->cm != RCOLL_VERBS_CM_RDMACM || flags == NULL) {
        free(flags);
        return;
    }
    if (!wait_until(tl, end, byes_sent, flags) || !wait_until(tl, end, quiet_cb, NULL)) {
        rcoll_warn("verbs: close on %s: could not tell every peer we leave", tl->port.dev);
    }
    for (int p = 0; p < tl->size; p++) {
        rcoll_verbs_ep_t *ep = &tl->eps[p];
        flags[p] = p != tl->rank && ep->cm_id != NULL && ep->qp_ready &&
                   rdma_disconnect(ep->cm_id) == 0;
    }
    if (tl->port.kind != RCOLL_VERBS_KIND_IWARP) {
        free(flags);
        return;
    }
    if (!wait_until(tl, end, disc_cb, flags)) {
        rcoll_debug("verbs: close on %s: some peers did not confirm the disconnect", tl->port.dev);
    }
    free(flags);
}
