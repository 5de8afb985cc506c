/*
 * verbs_send.c - eager messages: SENDs with credit-based flow control.
 *
 * Every SEND starts with an 8-byte backend header {type, 0, 0, 0, freed}
 * where `freed` piggybacks our credit report (see verbs_credit.h).  Tiny
 * messages go inline (no copy, no buffer) where the QP allows; others are
 * copied into a registered bounce buffer.  With no credit, send slot or
 * buffer free, send() copies the message into a queue that progress()
 * drains in order: send() never blocks.
 */
#include <stdlib.h>
#include <string.h>
#include "verbs_int.h"

void rcoll__verbs_ep_busy(rcoll_tl_t *tl, rcoll_verbs_ep_t *ep)
{
    if (!ep->busy) {
        ep->busy = 1;
        tl->nbusy++;
    }
}

static void refresh_credits(rcoll_tl_t *tl, rcoll_verbs_ep_t *ep, uint32_t report)
{
    if (rcoll__verbs_credit_update(&ep->credit, report) != 0) {
        rcoll__verbs_ep_fail(tl, ep, RCOLL_ERR_PROTOCOL,
                             "credit report %u exceeds the %u messages sent (window %u)",
                             report, ep->credit.sent, ep->credit.depth);
    }
}

/* Post one SEND of hdr+data; RCOLL_AGAIN when no credit, send slot or buffer is free. */
static rcoll_status_t post_send_type(rcoll_tl_t *tl, rcoll_verbs_ep_t *ep, uint8_t type,
                                     const void *hdr, size_t hlen, const void *data, size_t len)
{
    size_t total = RCOLL_VERBS_BH_SIZE + hlen + len;
    struct ibv_send_wr wr, *bad = NULL;
    struct ibv_sge sge[3];
    uint8_t bh[RCOLL_VERBS_BH_SIZE] = { type };
    rcoll_verbs_buf_t *b = NULL;
    int inl = total <= tl->max_inline, rc;

    if (ep->sq_avail == 0) {
        return RCOLL_AGAIN;
    }
    if (rcoll__verbs_credit_avail(&ep->credit) == 0) {
        refresh_credits(tl, ep, __atomic_load_n(&tl->credit_slots[ep->peer], __ATOMIC_ACQUIRE));
        if (ep->state == RCOLL_VERBS_EP_FAILED) {
            return ep->fail_status;
        }
        if (rcoll__verbs_credit_avail(&ep->credit) == 0) {
            return RCOLL_AGAIN;
        }
    }
    if (!inl && (b = tl->sfree) == NULL) {
        return RCOLL_AGAIN;
    }
    rcoll__verbs_credit_take(&ep->credit);
    rcoll__verbs_put_u32(bh + 4, rcoll__verbs_credit_report(&ep->credit));
    memset(&wr, 0, sizeof(wr));
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.sg_list = sge;
    if (inl) {
        wr.send_flags |= IBV_SEND_INLINE;
        wr.wr_id = (uintptr_t)&ep->inline_ctx;
        sge[wr.num_sge++] = (struct ibv_sge){ (uintptr_t)bh, RCOLL_VERBS_BH_SIZE, 0 };
        if (hlen > 0) {
            sge[wr.num_sge++] = (struct ibv_sge){ (uintptr_t)hdr, (uint32_t)hlen, 0 };
        }
        if (len > 0) {
            sge[wr.num_sge++] = (struct ibv_sge){ (uintptr_t)data, (uint32_t)len, 0 };
        }
    } else {
        tl->sfree = b->next;
        b->wr.peer = ep->peer;
        memcpy(b->data, bh, RCOLL_VERBS_BH_SIZE);
        if (hlen > 0) {
            memcpy(b->data + RCOLL_VERBS_BH_SIZE, hdr, hlen);
        }
        if (len > 0) {
            memcpy(b->data + RCOLL_VERBS_BH_SIZE + hlen, data, len);
        }
        wr.wr_id = (uintptr_t)&b->wr;
        sge[0] = (struct ibv_sge){ (uintptr_t)b->data, (uint32_t)total, tl->buf_mr->lkey };
        wr.num_sge = 1;
    }
    rc = ibv_post_send(ep->qp, &wr, &bad);
    if (rc != 0) {
        if (b != NULL) {
            b->next = tl->sfree;
            tl->sfree = b;
        }
        return rcoll__verbs_post_failed(tl, ep, rc, "a %zu-byte SEND", total);
    }
    ep->sq_avail--;
    return RCOLL_OK;
}

static rcoll_status_t post_send(rcoll_tl_t *tl, rcoll_verbs_ep_t *ep, const void *hdr, size_t hlen,
                                const void *data, size_t len)
{
    return post_send_type(tl, ep, RCOLL_VERBS_BH_DATA, hdr, hlen, data, len);
}

/* Tell an rdma_cm peer we close, so that our disconnect is not a failure. */
rcoll_status_t rcoll__verbs_send_bye(rcoll_tl_t *tl, rcoll_verbs_ep_t *ep)
{
    return post_send_type(tl, ep, RCOLL_VERBS_BH_BYE, NULL, 0, NULL, 0);
}

/*
 * iWARP: the accepting side may not send before it has received from the
 * connecting side, so the connecting side's first message is a HELLO (ahead
 * of anything already queued).
 */
rcoll_status_t rcoll__verbs_send_hello(rcoll_tl_t *tl, rcoll_verbs_ep_t *ep)
{
    rcoll_verbs_pending_t *m = malloc(sizeof(*m));

    if (m == NULL) {
        rcoll_error("verbs: no memory for a HELLO to peer %d", ep->peer);
        return RCOLL_ERR_NO_MEMORY;
    }
    m->peer = ep->peer;
    m->type = RCOLL_VERBS_BH_HELLO;
    m->len = 0;
    m->link.next = ep->pending.next;       /* at the head */
    m->link.prev = &ep->pending;
    ep->pending.next->prev = &m->link;
    ep->pending.next = &m->link;
    rcoll__verbs_ep_busy(tl, ep);
    return RCOLL_OK;
}

/* RDMA WRITE credit_src[peer] into the peer's credit slot (its one
 * remote-writable 4 bytes), signalled; the caller checked that no credit
 * WRITE is in flight and the send queue has room.  0, or -1 when the post
 * failed (the endpoint is failed then). */
static int post_credit_write(rcoll_tl_t *tl, rcoll_verbs_ep_t *ep, const char *what)
{
    struct ibv_send_wr wr, *bad = NULL;
    struct ibv_sge sge = { (uintptr_t)&tl->credit_src[ep->peer], 4, tl->credit_mr->lkey };
    memset(&wr, 0, sizeof(wr));
    wr.wr_id = (uintptr_t)&ep->credit_ctx;
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.send_flags = IBV_SEND_SIGNALED | (tl->max_inline >= 4 ? IBV_SEND_INLINE : 0);
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.wr.rdma.remote_addr = ep->rcredit_addr;
    wr.wr.rdma.rkey = ep->rcredit_rkey;
    int rc = ibv_post_send(ep->qp, &wr, &bad);
    if (rc != 0) {
        rcoll__verbs_post_failed(tl, ep, rc, "a %s WRITE", what);
        return -1;
    }
    ep->credit_inflight = 1;
    ep->sq_avail--;
    return 0;
}

/* Return credits by RDMA WRITE when half the window waits and no SEND carried them. */
void rcoll__verbs_credit_return(rcoll_tl_t *tl, rcoll_verbs_ep_t *ep)
{
    if (!rcoll__verbs_credit_report_due(&ep->credit) || ep->state != RCOLL_VERBS_EP_CONNECTED) {
        return;
    }
    if (ep->credit_inflight || ep->sq_avail == 0) {
        rcoll__verbs_ep_busy(tl, ep);       /* try again from progress */
        return;
    }
    tl->credit_src[ep->peer] = rcoll__verbs_credit_report(&ep->credit);
    (void)post_credit_write(tl, ep, "credit");
}

/* The probe (transport.h, probe_peer): write the peer's credit slot again
 * with the value last written there (credit_src[peer] changes only right
 * before a credit WRITE, and one is in flight at a time), so the peer sees
 * no change; a dead peer's QP is gone and the WRITE ends with
 * IBV_WC_RETRY_EXC_ERR once the retries run out (QP_TIMEOUT, QP_RETRY in
 * verbs_qp.c), or flushes once rdma_cm saw the connection go: either way
 * wc_error() -> peer_error.  Nothing while a credit WRITE is in flight
 * (its completion tells the same), the send queue is full, or a
 * connection is being made.  A peer never talked to gets a connection
 * (rdma_cm on first use): a dead one then fails it by its deadline. */
void rcoll__verbs_probe_peer(rcoll_tl_t *tl, int peer)
{
    if (peer < 0 || peer >= tl->size || peer == tl->rank) {
        return;
    }
    rcoll_verbs_ep_t *ep = &tl->eps[peer];
    if (ep->state == RCOLL_VERBS_EP_IDLE && !tl->closing) {
        rcoll__verbs_cm_want(tl, ep);
        return;
    }
    if (ep->state != RCOLL_VERBS_EP_CONNECTED || ep->qp == NULL || ep->credit_inflight ||
        ep->sq_avail == 0 || tl->closing) {
        return;
    }
    if (post_credit_write(tl, ep, "probe") == 0) {
        rcoll_debug("verbs: probing peer %d (nothing heard for a while)", peer);
    }
}

void rcoll__verbs_ep_connected(rcoll_tl_t *tl, rcoll_verbs_ep_t *ep)
{
    ep->state = RCOLL_VERBS_EP_CONNECTED;
    tl->nconnected++;
    rcoll_debug("verbs: peer %d connected on %s:%d (window %u, inline %u)", ep->peer,
                tl->port.dev, tl->port.port, ep->credit.depth, tl->max_inline);
    rcoll__verbs_ep_busy(tl, ep);           /* progress sends what was queued */
}

/* Post queued work; returns how many items went out.  Clears busy when done. */
int rcoll__verbs_ep_flush(rcoll_tl_t *tl, rcoll_verbs_ep_t *ep)
{
    int n = 0;

    if (ep->state != RCOLL_VERBS_EP_CONNECTED) {
        return 0;
    }
    while (!rcoll_list_empty(&ep->pending)) {
        rcoll_verbs_pending_t *m = rcoll_container_of(ep->pending.next, rcoll_verbs_pending_t, link);
        if (post_send_type(tl, ep, m->type, m->data, m->len, NULL, 0) != RCOLL_OK) {
            break;                          /* no resources, or the peer failed (lists cleared) */
        }
        rcoll_list_del(&m->link);
        free(m);
        n++;
    }
    if (ep->state != RCOLL_VERBS_EP_CONNECTED) {
        return n;
    }
    n += rcoll__verbs_put_post(tl, ep);
    rcoll__verbs_credit_return(tl, ep);
    if (rcoll_list_empty(&ep->pending) && ep->puts_unposted == 0 &&
        !rcoll__verbs_credit_report_due(&ep->credit)) {
        ep->busy = 0;
        tl->nbusy--;
    }
    return n;
}

static rcoll_verbs_pending_t *copy_msg(int peer, const void *hdr, size_t hlen, const void *data, size_t len)
{
    rcoll_verbs_pending_t *m = malloc(sizeof(*m) + hlen + len);

    if (m == NULL) {
        return NULL;
    }
    m->peer = peer;
    m->type = RCOLL_VERBS_BH_DATA;
    m->len = hlen + len;
    if (hlen > 0) {
        memcpy(m->data, hdr, hlen);
    }
    if (len > 0) {
        memcpy(m->data + hlen, data, len);
    }
    return m;
}

rcoll_status_t rcoll__verbs_send(rcoll_tl_t *tl, int peer, const void *hdr, size_t hdr_len,
                                 const void *data, size_t len)
{
    rcoll_verbs_pending_t *m;
    rcoll_verbs_ep_t *ep;

    if (peer < 0 || peer >= tl->size || (hdr == NULL && hdr_len > 0) || (data == NULL && len > 0) ||
        hdr_len + len > tl->buf_size - RCOLL_VERBS_BH_SIZE) {
        rcoll_error("verbs: send to peer %d (of %d) of %zu+%zu bytes refused: bad peer, buffer, "
                    "or larger than %zu", peer, tl->size, hdr_len, len, tl->buf_size - RCOLL_VERBS_BH_SIZE);
        return RCOLL_ERR_INVALID_ARG;
    }
    ep = &tl->eps[peer];
    if (ep->state == RCOLL_VERBS_EP_FAILED) {
        rcoll_error("verbs: send to peer %d on %s refused: the peer failed earlier (%s)", peer,
                    tl->port.dev, ep->fail_reason);
        return ep->fail_status;
    }
    if (peer != tl->rank && ep->state == RCOLL_VERBS_EP_CONNECTED && rcoll_list_empty(&ep->pending)) {
        rcoll_status_t st = post_send(tl, ep, hdr, hdr_len, data, len);
        if (st != RCOLL_AGAIN) {
            return st;
        }
    }
    m = copy_msg(peer, hdr, hdr_len, data, len);
    if (m == NULL) {
        rcoll_error("verbs: no memory to queue a %zu-byte message for peer %d", hdr_len + len, peer);
        return RCOLL_ERR_NO_MEMORY;
    }
    if (peer == tl->rank) {
        rcoll_list_add_tail(&tl->self_msgs, &m->link);
    } else {
        rcoll_list_add_tail(&ep->pending, &m->link);
        rcoll__verbs_ep_busy(tl, ep);
        rcoll__verbs_cm_want(tl, ep);       /* no connection yet: make one (verbs_cm.c) */
    }
    return RCOLL_OK;
}

/* Messages to ourselves, delivered from progress like any other. */
int rcoll__verbs_self_deliver(rcoll_tl_t *tl)
{
    rcoll_list_t batch;
    int n = 0;

    if (rcoll_list_empty(&tl->self_msgs)) {
        return 0;
    }
    /* Take the current ones: an upcall may queue more for the next round. */
    batch = tl->self_msgs;
    batch.next->prev = &batch;
    batch.prev->next = &batch;
    rcoll_list_init(&tl->self_msgs);
    while (!rcoll_list_empty(&batch)) {
        rcoll_verbs_pending_t *m = rcoll_container_of(batch.next, rcoll_verbs_pending_t, link);
        rcoll_list_del(&m->link);
        tl->params.cb.recv(tl->params.cb.arg, tl->rank, m->data, m->len);
        free(m);
        n++;
    }
    return n;
}
