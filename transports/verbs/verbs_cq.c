/*
 * verbs_cq.c - progress(): rdma_cm events, messages to ourselves, the
 * completion queue, queued work, and error handling.
 *
 * An error completion (retry exceeded, remote access error, ...) fails its
 * peer: the QP is moved to the error state so everything posted to it
 * flushes, queued sends are dropped, callbacks.peer_error() runs once, and
 * then every put to the peer completes with the error, all from progress(),
 * without waiting for flushes that may never come (verbs_put.c).  Never an
 * abort.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "verbs_int.h"

double rcoll__verbs_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void rcoll__verbs_ep_fail(rcoll_tl_t *tl, rcoll_verbs_ep_t *ep, rcoll_status_t status,
                          const char *fmt, ...)
{
    rcoll_list_t *pos, *tmp;
    va_list ap;

    if (ep->state == RCOLL_VERBS_EP_FAILED) {
        return;
    }
    va_start(ap, fmt);
    vsnprintf(ep->fail_reason, sizeof(ep->fail_reason), fmt, ap);
    va_end(ap);
    if (ep->bye || tl->closing) {
        rcoll_debug("verbs: peer %d on %s:%d closed: %s", ep->peer, tl->port.dev, tl->port.port,
                    ep->fail_reason);
        ep->error_reported = 1;         /* a departure, not a failure: no upcall */
    } else {
        rcoll_error("verbs: peer %d on %s:%d failed: %s", ep->peer, tl->port.dev, tl->port.port,
                    ep->fail_reason);
    }
    if (ep->state == RCOLL_VERBS_EP_CONNECTING) {
        tl->cm_waiting--;
    }
    ep->state = RCOLL_VERBS_EP_FAILED;
    ep->fail_status = status;
    if (ep->qp != NULL) {
        struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
        ibv_modify_qp(ep->qp, &a, IBV_QP_STATE);     /* posted work flushes */
    }
    rcoll_list_for_each_safe(pos, tmp, &ep->pending) {
        rcoll_list_del(pos);
        free(rcoll_container_of(pos, rcoll_verbs_pending_t, link));
    }
    rcoll_list_for_each_safe(pos, tmp, &ep->puts) {
        rcoll_verbs_put_t *p = rcoll_container_of(pos, rcoll_verbs_put_t, link);
        p->status = status;
        if (p->outstanding == 0) {      /* nothing will flush: complete it now */
            rcoll_list_del(&p->link);
            rcoll_list_add_tail(&tl->done_puts, &p->link);
        }
    }
    ep->puts_unposted = 0;
    rcoll__verbs_ep_busy(tl, ep);       /* the upcall happens in progress() */
}

rcoll_status_t rcoll__verbs_post_failed(rcoll_tl_t *tl, rcoll_verbs_ep_t *ep, int rc, const char *fmt, ...)
{
    struct ibv_qp_attr attr;
    struct ibv_qp_init_attr init;
    rcoll_status_t st = RCOLL_ERR_TRANSPORT;
    const char *state = "";
    char what[96];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);

    memset(&attr, 0, sizeof(attr));
    if (ep->qp != NULL && ibv_query_qp(ep->qp, &attr, IBV_QP_STATE, &init) == 0 &&
        attr.qp_state != IBV_QPS_RTS) {
        state = attr.qp_state == IBV_QPS_ERR ? " (the QP is in the error state)" :
                " (the QP has left the ready-to-send state)";
        if (tl->cm == RCOLL_VERBS_CM_RDMACM) {
            /* The provider ended the connection under us: siw does so when
             * the peer's TCP connection breaks, before any completion or
             * rdma_cm event says it.  As for wc_error's flushes there. */
            st = RCOLL_ERR_PEER_FAILED;
        }
    }
    rcoll__verbs_ep_fail(tl, ep, st, "ibv_post_send of %s failed: %s%s", what, strerror(rc), state);
    return ep->fail_status;             /* st, or the earlier failure's */
}

static const char *wr_name(int kind)
{
    switch (kind) {
    case RCOLL_VERBS_WR_RECV:   return "RECV";
    case RCOLL_VERBS_WR_PUT:    return "RDMA WRITE (put)";
    case RCOLL_VERBS_WR_CREDIT: return "RDMA WRITE (credits)";
    default:                    return "SEND";
    }
}

static void wc_error(rcoll_tl_t *tl, rcoll_verbs_ep_t *ep, const struct ibv_wc *wc, int kind)
{
    /* A flush with no error of ours on an rdma_cm connection: the peer (or
     * the path to it) tore the connection down.  So does a local QP
     * operation error there: siw completes the work request it was sending
     * when its TCP connection broke (the peer died) with that status, and
     * drops the connection (drivers/infiniband/sw/siw/siw_qp_tx.c). */
    int cm_gone = tl->cm == RCOLL_VERBS_CM_RDMACM &&
                  (wc->status == IBV_WC_WR_FLUSH_ERR || wc->status == IBV_WC_LOC_QP_OP_ERR);
    /* A WRITE or READ of ours refused for its key: the peer took back
     * memory it had advertised and not yet released - a put's target
     * buffer, or the credit slot it keeps for the whole connection.  A
     * live peer does that only when it has given up on the operation; a
     * dying one does it as its process exits (Soft-RoCE: its MRs go
     * before its QPs).  Either way the peer has left, and that is what
     * RCOLL_ERR_PEER_FAILED says; the message keeps the verbs status. */
    int revoked = wc->status == IBV_WC_REM_ACCESS_ERR &&
                  (kind == RCOLL_VERBS_WR_PUT || kind == RCOLL_VERBS_WR_CREDIT);
    rcoll_status_t st = wc->status == IBV_WC_RETRY_EXC_ERR || wc->status == IBV_WC_RNR_RETRY_EXC_ERR ||
                        cm_gone || revoked ? RCOLL_ERR_PEER_FAILED : RCOLL_ERR_TRANSPORT;

    if (wc->status == IBV_WC_WR_FLUSH_ERR && ep->state == RCOLL_VERBS_EP_FAILED) {
        return;                         /* the expected aftermath of a failure */
    }
    if (wc->status == IBV_WC_WR_FLUSH_ERR && ep->state == RCOLL_VERBS_EP_CONNECTING) {
        return;                         /* a half-made connection's receives: the set-up
                                           retries under its deadline (verbs_cm.c) */
    }
    rcoll__verbs_ep_fail(tl, ep, st, "%s completed with status \"%s\" (%d, vendor error 0x%x) on QP 0x%x",
                         wr_name(kind), ibv_wc_status_str(wc->status), (int)wc->status,
                         wc->vendor_err, wc->qp_num);
}

/*
 * A received message of the peer's current QP: checked (every byte from the
 * wire is hostile) and delivered.  1 when the buffer held a message of a
 * live peer, whose credit is to be returned once the buffer is re-posted; 0
 * when the peer failed (now or before) and the buffer is not the peer's any
 * more.
 */
static int recv_msg(rcoll_tl_t *tl, rcoll_verbs_ep_t *ep, rcoll_verbs_buf_t *b, const struct ibv_wc *wc)
{
    const uint8_t *d = (const uint8_t *)b->data;

    if (wc->status != IBV_WC_SUCCESS) {
        wc_error(tl, ep, wc, RCOLL_VERBS_WR_RECV);
        return 0;
    }
    if (ep->state == RCOLL_VERBS_EP_FAILED) {
        return 0;
    }
    if (wc->byte_len < RCOLL_VERBS_BH_SIZE || wc->byte_len > tl->buf_size ||
        d[0] < RCOLL_VERBS_BH_DATA || d[0] > RCOLL_VERBS_BH_HELLO) {
        rcoll__verbs_ep_fail(tl, ep, RCOLL_ERR_PROTOCOL, "malformed message of %u bytes (type %u)",
                             wc->byte_len, wc->byte_len > 0 ? d[0] : 0);
        return 0;
    }
    if (rcoll__verbs_credit_update(&ep->credit, rcoll__verbs_get_u32(d + 4)) != 0) {
        rcoll__verbs_ep_fail(tl, ep, RCOLL_ERR_PROTOCOL, "credit report %u exceeds the %u messages sent",
                             rcoll__verbs_get_u32(d + 4), ep->credit.sent);
        return 0;
    }
    if (!ep->heard) {
        ep->heard = 1;
        rcoll__verbs_cm_maybe_connected(tl, ep);   /* the accepting side may now send */
    }
    if (d[0] == RCOLL_VERBS_BH_BYE) {
        ep->bye = 1;
    } else if (d[0] == RCOLL_VERBS_BH_DATA && !tl->closing) {
        tl->params.cb.recv(tl->params.cb.arg, ep->peer, d + RCOLL_VERBS_BH_SIZE,
                           wc->byte_len - RCOLL_VERBS_BH_SIZE);
    }
    return ep->state != RCOLL_VERBS_EP_FAILED;
}

/* A buffer that held the peer's SEND is posted again: its credit goes back. */
static void recv_credit(rcoll_tl_t *tl, rcoll_verbs_ep_t *ep)
{
    rcoll__verbs_credit_freed(&ep->credit);
    rcoll__verbs_credit_return(tl, ep);
    if (!rcoll_list_empty(&ep->pending)) {
        rcoll__verbs_ep_busy(tl, ep);   /* the piggybacked credits may unblock it */
    }
}

/* Per-peer mode: the buffer is the peer's, posted to its QP. */
static void recv_done(rcoll_tl_t *tl, rcoll_verbs_ep_t *ep, rcoll_verbs_buf_t *b, const struct ibv_wc *wc)
{
    if (b->gen != ep->gen || ep->qp == NULL) {
        /* posted to a QP since replaced or destroyed: a receive it
         * completed may still be in the CQ, and every QP that goes away
         * moves ep->gen on (verbs_qp.c).  ep->qp == NULL as well, belt and
         * braces: reposting would post to no QP (a SIGSEGV once). */
        return;
    }
    if (!recv_msg(tl, ep, b, wc)) {
        return;
    }
    if (rcoll__verbs_qp_repost(tl, ep, b) != RCOLL_OK) {
        rcoll__verbs_ep_fail(tl, ep, RCOLL_ERR_TRANSPORT, "re-posting a receive buffer failed");
        return;
    }
    recv_credit(tl, ep);
}

/*
 * SRQ mode: the buffer is the pool's; the QP number says whose SEND it
 * holds.  A QP no longer in the map (dropped or replaced: its completions
 * may outlive it) names no peer: the message is dropped.  Whatever
 * happens, the buffer goes back to the shared queue, or the pool would
 * shrink with every failure.
 */
static void srq_recv_done(rcoll_tl_t *tl, rcoll_verbs_buf_t *b, const struct ibv_wc *wc)
{
    int peer = rcoll__verbs_qpmap_get(&tl->qpmap, wc->qp_num);
    rcoll_verbs_ep_t *ep = peer >= 0 && peer < tl->size ? &tl->eps[peer] : NULL;
    int credit = 0;

    if (ep != NULL && ep->qp != NULL && ep->qp->qp_num == wc->qp_num) {
        credit = recv_msg(tl, ep, b, wc);
    } else {
        tl->srq_stale++;
        rcoll_debug("verbs: %s: a receive completion (status %d, %u bytes) of QP 0x%x, which is "
                    "no peer's now: dropped", tl->port.dev, (int)wc->status, wc->byte_len, wc->qp_num);
    }
    if (rcoll__verbs_srq_repost(tl, b) != RCOLL_OK) {
        return;                         /* logged; the peer's credit stays taken */
    }
    if (credit) {
        recv_credit(tl, ep);
    }
}

static void handle_wc(rcoll_tl_t *tl, const struct ibv_wc *wc)
{
    rcoll_verbs_wrctx_t *ctx = (rcoll_verbs_wrctx_t *)(uintptr_t)wc->wr_id;
    rcoll_verbs_ep_t *ep;

    if (ctx->kind == RCOLL_VERBS_WR_RECV && tl->srq != NULL) {
        srq_recv_done(tl, (rcoll_verbs_buf_t *)ctx, wc);   /* ctx->peer: none */
        return;
    }
    ep = &tl->eps[ctx->peer];
    if (ctx->kind == RCOLL_VERBS_WR_RECV) {
        recv_done(tl, ep, (rcoll_verbs_buf_t *)ctx, wc);
        return;
    }
    ep->sq_avail++;
    if (wc->status != IBV_WC_SUCCESS) {
        /* Before the put's bookkeeping below, so that a put ends with the
         * failure's status (a dead peer: RCOLL_ERR_PEER_FAILED), not a bare
         * transport error; once for any kind. */
        wc_error(tl, ep, wc, ctx->kind);
    }
    switch (ctx->kind) {
    case RCOLL_VERBS_WR_SEND: {
        rcoll_verbs_buf_t *b = (rcoll_verbs_buf_t *)ctx;
        b->next = tl->sfree;
        tl->sfree = b;
        break;
    }
    case RCOLL_VERBS_WR_CREDIT:
        ep->credit_inflight = 0;
        break;
    case RCOLL_VERBS_WR_PUT:
        rcoll__verbs_put_wr_done(tl, (rcoll_verbs_put_t *)ctx,
                                 wc->status == IBV_WC_SUCCESS ? RCOLL_OK :
                                 ep->state == RCOLL_VERBS_EP_FAILED ? ep->fail_status :
                                 RCOLL_ERR_TRANSPORT);
        break;
    default:
        break;
    }
    if (wc->status == IBV_WC_SUCCESS &&
        (!rcoll_list_empty(&ep->pending) || ep->puts_unposted > 0 ||
         rcoll__verbs_credit_report_due(&ep->credit))) {
        rcoll__verbs_ep_busy(tl, ep);   /* a send slot is free again */
    }
}

/* Queued work of every busy peer, and peer failures to report. */
static int scan_busy(rcoll_tl_t *tl)
{
    int n = 0;

    for (int p = 0; p < tl->size && tl->nbusy > 0; p++) {
        rcoll_verbs_ep_t *ep = &tl->eps[p];
        if (!ep->busy) {
            continue;
        }
        if (ep->state == RCOLL_VERBS_EP_FAILED) {
            ep->busy = 0;
            tl->nbusy--;
            if (!ep->error_reported) {
                ep->error_reported = 1;
                if (tl->params.cb.peer_error != NULL && !tl->closing) {
                    tl->params.cb.peer_error(tl->params.cb.arg, p, ep->fail_status, ep->fail_reason);
                }
                n++;
            }
            if (!tl->closing) {
                n += rcoll__verbs_put_fail_all(tl, ep);
            }
        } else {
            n += rcoll__verbs_ep_flush(tl, ep);
        }
    }
    return n;
}

/* rdma_cm peers whose DISCONNECTED arrived: fail them now that the CQ is drained. */
static void check_disconnected(rcoll_tl_t *tl)
{
    for (int p = 0; p < tl->size && tl->ndisconnected > 0; p++) {
        rcoll_verbs_ep_t *ep = &tl->eps[p];
        if (ep->disconnected) {
            ep->disconnected = 0;
            tl->ndisconnected--;
            rcoll__verbs_ep_fail(tl, ep, RCOLL_ERR_PEER_FAILED, "%s",
                                 ep->bye ? "the peer closed its connection (it finished)"
                                         : "the peer disconnected (rdma_cm) without closing");
        }
    }
}

int rcoll__verbs_progress(rcoll_tl_t *tl)
{
    int n = 0, k;

    if (tl == NULL || tl->in_progress) {
        return 0;
    }
    tl->in_progress = 1;
    if (tl->ch != NULL) {
        n += rcoll__verbs_cm_progress(tl);
    }
    if (!tl->closing) {
        n += rcoll__verbs_self_deliver(tl);
    }
    if ((k = rcoll__verbs_cq_poll(tl, handle_wc)) < 0) {
        rcoll_error("verbs: %s: a completion queue failed: failing every peer", tl->port.dev);
        for (int p = 0; p < tl->size; p++) {
            if (p != tl->rank) {
                rcoll__verbs_ep_fail(tl, &tl->eps[p], RCOLL_ERR_TRANSPORT, "the completion queue failed");
            }
        }
    } else {
        n += k;
    }
    if (tl->ndisconnected > 0) {
        check_disconnected(tl);          /* after the CQ: their last messages came first */
    }
    if (tl->nbusy > 0) {
        n += scan_busy(tl);
    }
    if (!tl->closing) {
        n += rcoll__verbs_put_deliver(tl);
    }
    tl->in_progress = 0;
    return n;
}
