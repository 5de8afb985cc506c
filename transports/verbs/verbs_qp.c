/*
 * verbs_qp.c - RC queue pairs: creation (plain or through rdma_cm), the
 * receive buffers of each peer (per-peer mode; in SRQ mode every QP takes
 * its receives from the shared queue, verbs_srq.c, and is entered in the QP
 * number map), and the manual INIT -> RTR -> RTS used on InfiniBand and RoCE
 * when addresses come through the PMIx exchange.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "verbs_int.h"

/* Local ACK timeout 4.096 us * 2^18 ~ 1.07 s, 6 retries: a dead peer is
 * reported after ~7.5 s.  Not 7: Soft-RoCE (rdma_rxe's completer) treats a
 * retry count of 7 as "retry forever", so a dead peer would never be
 * reported there (verbs_cm.c passes the same count to rdma_cm).
 * Per-peer mode: RNR should never happen thanks to credits: a few retries,
 * then an error.  SRQ mode: the pool may be smaller than the peers' credit
 * windows together, so a SEND may find it empty for a moment: retry for ever
 * (7, the IB spec's "infinite"), 0.64 ms apart (min_rnr_timer 12). */
#define QP_TIMEOUT        18
#define QP_RETRY          6
#define QP_RNR_RETRY      3
#define QP_RNR_TIMER      12
#define QP_SRQ_RNR_RETRY  7

static void init_attr(rcoll_tl_t *tl, struct ibv_qp_init_attr *a, struct ibv_cq *cq,
                      uint32_t max_inline)
{
    memset(a, 0, sizeof(*a));
    a->send_cq = cq;
    a->recv_cq = cq;
    a->qp_type = IBV_QPT_RC;
    a->cap.max_send_wr = (uint32_t)tl->sq_depth;
    a->cap.max_recv_wr = tl->srq != NULL ? 0 : (uint32_t)tl->depth;
    a->cap.max_send_sge = 3;
    a->cap.max_recv_sge = tl->srq != NULL ? 0 : 1;
    a->srq = tl->srq;
    a->cap.max_inline_data = max_inline;
}

static rcoll_status_t to_init(rcoll_tl_t *tl, rcoll_verbs_ep_t *ep)
{
    struct ibv_qp_attr a = {
        .qp_state = IBV_QPS_INIT,
        .pkey_index = 0,
        .port_num = (uint8_t)tl->port.port,
        .qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
    };
    int rc = ibv_modify_qp(ep->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
                                       IBV_QP_ACCESS_FLAGS);
    if (rc != 0) {
        rcoll_error("verbs: peer %d on %s:%d: QP 0x%x RESET->INIT failed: %s", ep->peer,
                    tl->port.dev, tl->port.port, ep->qp->qp_num, strerror(rc));
        return RCOLL_ERR_TRANSPORT;
    }
    return RCOLL_OK;
}

/* Fresh receive descriptors for a new QP; the old array may still be named
 * by flush completions, so it is kept until close. */
static rcoll_status_t alloc_rbufs(rcoll_tl_t *tl, rcoll_verbs_ep_t *ep)
{
    rcoll_verbs_buf_t *b = calloc((size_t)tl->depth, sizeof(*b));
    size_t bytes = (size_t)tl->depth * tl->buf_size;

    if (b == NULL) {
        rcoll_error("verbs: peer %d: no memory for receive descriptors", ep->peer);
        return RCOLL_ERR_NO_MEMORY;
    }
    if (ep->rmem == NULL) {             /* the peer's first QP: its receive buffers */
        void *mem = NULL;
        if (posix_memalign(&mem, 4096, bytes) != 0) {
            free(b);
            rcoll_error("verbs: peer %d: no memory for %d receive buffers of %zu bytes", ep->peer,
                        tl->depth, tl->buf_size);
            return RCOLL_ERR_NO_MEMORY;
        }
        ep->rmr = rcoll__verbs_reg(tl, mem, bytes, IBV_ACCESS_LOCAL_WRITE, "a peer's receive buffers");
        if (ep->rmr == NULL) {
            free(mem);
            free(b);
            return RCOLL_ERR_NO_MEMORY;
        }
        ep->rmem = mem;
    }
    if (ep->rbufs != NULL) {
        void **g = realloc(tl->graveyard, (size_t)(tl->ngraveyard + 1) * sizeof(void *));
        if (g == NULL) {
            free(b);
            return RCOLL_ERR_NO_MEMORY;
        }
        tl->graveyard = g;
        tl->graveyard[tl->ngraveyard++] = ep->rbufs;
    }
    for (int i = 0; i < tl->depth; i++) {
        b[i].wr.kind = RCOLL_VERBS_WR_RECV;
        b[i].wr.peer = ep->peer;
        b[i].data = ep->rmem + (size_t)i * tl->buf_size;
    }
    ep->rbufs = b;
    return RCOLL_OK;
}

rcoll_status_t rcoll__verbs_qp_create(rcoll_tl_t *tl, rcoll_verbs_ep_t *ep, struct rdma_cm_id *id)
{
    struct ibv_qp_init_attr a;
    uint32_t inl = tl->max_inline;
    struct ibv_cq *cq = rcoll__verbs_cq_for_qp(tl);

    if (cq == NULL) {
        return RCOLL_ERR_TRANSPORT;
    }
    for (;;) {
        init_attr(tl, &a, cq, inl);
        if (id != NULL) {
            ep->qp = rdma_create_qp(id, tl->pd, &a) == 0 ? id->qp : NULL;
        } else {
            ep->qp = ibv_create_qp(tl->pd, &a);
        }
        if (ep->qp != NULL || inl == 0) {
            break;
        }
        inl = 0;                        /* the device may not do inline: try without */
    }
    if (ep->qp == NULL) {
        rcoll_error("verbs: peer %d on %s:%d: creating an RC QP (send %d, recv %d) failed: %s",
                    ep->peer, tl->port.dev, tl->port.port, tl->sq_depth, tl->depth, strerror(errno));
        return RCOLL_ERR_TRANSPORT;
    }
    if (tl->srq == NULL && alloc_rbufs(tl, ep) != RCOLL_OK) {
        return RCOLL_ERR_NO_MEMORY;
    }
    if (a.cap.max_inline_data < tl->max_inline) {
        tl->max_inline = a.cap.max_inline_data;     /* every QP gets the smallest */
    }
    ep->cm_id = id;
    ep->gen++;
    tl->nqps++;
    ep->sq_avail = tl->sq_depth;
    ep->recvs_posted = 0;
    if (tl->srq != NULL && rcoll__verbs_qpmap_put(&tl->qpmap, ep->qp->qp_num, ep->peer) != 0) {
        rcoll_error("verbs: peer %d: no memory for the QP number map", ep->peer);
        return RCOLL_ERR_NO_MEMORY;
    }
    return id == NULL ? to_init(tl, ep) : RCOLL_OK;
}

/*
 * The endpoint has no QP any more.  Receives the old QP completed may still
 * be in the CQ (destroying a QP does not take its completions back): the
 * generation moves on, as for a replaced QP, so that recv_done (verbs_cq.c)
 * drops them instead of reposting them to a QP that is gone.  In SRQ mode
 * its number leaves the map first, so that such completions find no peer
 * (their buffers go back to the shared queue).
 */
static void unmap_qp(rcoll_tl_t *tl, rcoll_verbs_ep_t *ep)
{
    if (tl->srq != NULL && ep->qp != NULL) {
        rcoll__verbs_qpmap_del(&tl->qpmap, ep->qp->qp_num);
    }
}

static void forget_qp(rcoll_verbs_ep_t *ep)
{
    ep->qp = NULL;
    ep->cm_id = NULL;
    ep->gen++;
    ep->recvs_posted = 0;
}

void rcoll__verbs_qp_destroy(rcoll_tl_t *tl, rcoll_verbs_ep_t *ep)
{
    unmap_qp(tl, ep);
    if (ep->cm_id != NULL) {
        if (ep->qp != NULL) {
            rdma_destroy_qp(ep->cm_id);
        }
        rdma_destroy_id(ep->cm_id);
    } else if (ep->qp != NULL) {
        int rc = ibv_destroy_qp(ep->qp);
        if (rc != 0) {
            rcoll_warn("verbs: peer %d on %s: ibv_destroy_qp failed: %s", ep->peer, tl->port.dev,
                       strerror(rc));
        }
    }
    forget_qp(ep);
}

void rcoll__verbs_qp_drop(rcoll_tl_t *tl, rcoll_verbs_ep_t *ep, struct rdma_cm_id *id)
{
    unmap_qp(tl, ep);
    if (ep->qp != NULL) {
        rdma_destroy_qp(id);
    }
    forget_qp(ep);
}

static void recv_wr(rcoll_tl_t *tl, rcoll_verbs_ep_t *ep, rcoll_verbs_buf_t *b,
                    struct ibv_recv_wr *wr, struct ibv_sge *sge)
{
    sge->addr = (uintptr_t)b->data;
    sge->length = (uint32_t)tl->buf_size;
    sge->lkey = ep->rmr->lkey;
    memset(wr, 0, sizeof(*wr));
    wr->wr_id = (uintptr_t)&b->wr;
    wr->sg_list = sge;
    wr->num_sge = 1;
    b->gen = ep->gen;
}

rcoll_status_t rcoll__verbs_qp_post_recvs(rcoll_tl_t *tl, rcoll_verbs_ep_t *ep)
{
    if (tl->srq != NULL) {              /* posted once to the shared queue */
        ep->recvs_posted = 1;
        return RCOLL_OK;
    }
    for (int i = 0; i < tl->depth; i++) {
        rcoll_status_t st = rcoll__verbs_qp_repost(tl, ep, &ep->rbufs[i]);
        if (st != RCOLL_OK) {
            return st;
        }
    }
    ep->recvs_posted = 1;
    return RCOLL_OK;
}

rcoll_status_t rcoll__verbs_qp_repost(rcoll_tl_t *tl, rcoll_verbs_ep_t *ep, rcoll_verbs_buf_t *b)
{
    struct ibv_recv_wr wr, *bad = NULL;
    struct ibv_sge sge;
    int rc;

    recv_wr(tl, ep, b, &wr, &sge);
    rc = ibv_post_recv(ep->qp, &wr, &bad);
    if (rc != 0) {
        rcoll_error("verbs: peer %d on %s:%d: ibv_post_recv failed: %s", ep->peer,
                    tl->port.dev, tl->port.port, strerror(rc));
        return RCOLL_ERR_TRANSPORT;
    }
    return RCOLL_OK;
}

rcoll_status_t rcoll__verbs_qp_connect_oob(rcoll_tl_t *tl, rcoll_verbs_ep_t *ep, uint32_t qpn,
                                           uint32_t psn, uint16_t lid, const uint8_t gid[16],
                                           enum ibv_mtu mtu)
{
    struct ibv_qp_attr a = {
        .qp_state = IBV_QPS_RTR,
        .path_mtu = mtu < tl->port.attr.active_mtu ? mtu : tl->port.attr.active_mtu,
        .dest_qp_num = qpn,
        .rq_psn = psn,
        .max_dest_rd_atomic = 1,
        .min_rnr_timer = QP_RNR_TIMER,
        .ah_attr = {
            .dlid = lid,
            .sl = 0,
            .src_path_bits = 0,
            .port_num = (uint8_t)tl->port.port,
            .is_global = tl->port.kind != RCOLL_VERBS_KIND_IB,
        },
    };
    int rc;

    if (a.ah_attr.is_global) {
        memcpy(a.ah_attr.grh.dgid.raw, gid, 16);
        a.ah_attr.grh.sgid_index = (uint8_t)tl->port.gid_index;
        a.ah_attr.grh.hop_limit = 64;
    }
    rc = ibv_modify_qp(ep->qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                                   IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
    if (rc != 0) {
        rcoll_error("verbs: peer %d on %s:%d: QP 0x%x INIT->RTR (remote QP 0x%x, lid %u, mtu %d) failed: %s",
                    ep->peer, tl->port.dev, tl->port.port, ep->qp->qp_num, qpn, lid,
                    128 << a.path_mtu, strerror(rc));
        return RCOLL_ERR_TRANSPORT;
    }
    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_RTS;
    a.timeout = QP_TIMEOUT;
    a.retry_cnt = QP_RETRY;
    a.rnr_retry = tl->srq != NULL ? QP_SRQ_RNR_RETRY : QP_RNR_RETRY;
    a.sq_psn = tl->psn;
    a.max_rd_atomic = 1;
    rc = ibv_modify_qp(ep->qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                                   IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
    if (rc != 0) {
        rcoll_error("verbs: peer %d on %s:%d: QP 0x%x RTR->RTS failed: %s", ep->peer,
                    tl->port.dev, tl->port.port, ep->qp->qp_num, strerror(rc));
        return RCOLL_ERR_TRANSPORT;
    }
    return RCOLL_OK;
}

/* rdma_cm moves the QP to RTR itself, with the kernel CM's min_rnr_timer,
 * not ours (as far as we know 0 there: 655 ms between a sender's RNR
 * retries); in SRQ mode, where RNR NAKs are expected, make it QP_RNR_TIMER
 * as on the manual path (RTS -> RTS may change it).  On failure the QP
 * still works, its senders just wait longer. */
void rcoll__verbs_qp_rnr_timer(rcoll_tl_t *tl, rcoll_verbs_ep_t *ep)
{
    struct ibv_qp_attr a = { .min_rnr_timer = QP_RNR_TIMER };
    int rc;

    if (tl->srq == NULL || ep->qp == NULL) {
        return;
    }
    rc = ibv_modify_qp(ep->qp, &a, IBV_QP_MIN_RNR_TIMER);
    if (rc != 0) {
        rcoll_debug("verbs: peer %d on %s: setting min_rnr_timer %d on QP 0x%x failed: %s",
                    ep->peer, tl->port.dev, QP_RNR_TIMER, ep->qp->qp_num, strerror(rc));
    }
}
