/*
 * verbs_put.c - put(): RDMA WRITE into a peer's advertised region.
 *
 * The packed key carries the advertised range; a put outside it is refused
 * and logged, never posted.  The source is registered through the rcache
 * (or per put).  Large puts are split into WRITEs of at most the port's
 * max_msg_sz.  The completion runs from progress() once every WRITE has
 * completed: on InfiniBand and RoCE an RC WRITE completes when the target
 * has acknowledged the data.  An iWARP WRITE completes as soon as the data
 * is handed to TCP, so on iWARP a put ends with a 1-byte RDMA READ of its
 * last byte: the READ response comes back only after the WRITEs are placed
 * (and an error at the target, such as a revoked key, fails the READ).
 * Either way a message sent after the completion is processed after the data.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "verbs_int.h"

static rcoll_status_t refuse(rcoll_tl_t *tl, int peer, const char *why)
{
    rcoll_error("verbs: put to peer %d on %s refused: %s", peer, tl->port.dev, why);
    return RCOLL_ERR_INVALID_ARG;
}

rcoll_status_t rcoll__verbs_put(rcoll_tl_t *tl, int peer, const void *laddr, size_t len,
                                uint64_t raddr, const void *rkey, size_t rkey_len,
                                rcoll_tl_completion_t *comp)
{
    rcoll_verbs_rkey_t k;
    rcoll_verbs_put_t *p;
    rcoll_verbs_ep_t *ep;
    char why[200];

    if (peer < 0 || peer >= tl->size || comp == NULL || comp->cb == NULL || (laddr == NULL && len > 0)) {
        return refuse(tl, peer, "bad peer, source buffer or completion");
    }
    if (rcoll__verbs_rkey_unpack(rkey, rkey_len, &k, why, sizeof(why)) != 0 ||
        !rcoll__verbs_rkey_check_range(&k, raddr, len, why, sizeof(why))) {
        return refuse(tl, peer, why);
    }
    ep = &tl->eps[peer];
    if (ep->state == RCOLL_VERBS_EP_FAILED) {
        rcoll_error("verbs: put to peer %d on %s refused: the peer failed earlier (%s)", peer,
                    tl->port.dev, ep->fail_reason);
        return ep->fail_status;
    }
    p = calloc(1, sizeof(*p));
    if (p == NULL) {
        rcoll_error("verbs: no memory for a put to peer %d", peer);
        return RCOLL_ERR_NO_MEMORY;
    }
    p->wr.kind = RCOLL_VERBS_WR_PUT;
    p->wr.peer = peer;
    p->comp = comp;
    p->laddr = laddr;
    p->len = len;
    p->raddr = raddr;
    p->rkey = k.rkey;
    p->status = RCOLL_OK;
    rcoll_list_init(&p->link);
    if (peer == tl->rank || len == 0) {
        if (len > 0) {
            memcpy((void *)(uintptr_t)raddr, laddr, len);   /* our own region, range checked */
        }
        rcoll_list_add_tail(&tl->done_puts, &p->link);
        return RCOLL_OK;
    }
    if (rcoll__verbs_rcache_get(&tl->rcache, laddr, len, &p->reg) != 0) {
        free(p);
        rcoll_error("verbs: put to peer %d: registering its source (%zu bytes at %p) on %s failed",
                    peer, len, laddr, tl->port.dev);
        return RCOLL_ERR_NO_MEMORY;
    }
    rcoll_list_add_tail(&ep->puts, &p->link);
    ep->puts_unposted++;
    if (ep->state == RCOLL_VERBS_EP_CONNECTED) {
        rcoll__verbs_put_post(tl, ep);
    }
    if (ep->puts_unposted > 0) {
        rcoll__verbs_ep_busy(tl, ep);
        rcoll__verbs_cm_want(tl, ep);       /* no connection yet: make one (verbs_cm.c) */
    }
    return RCOLL_OK;
}

static int needs_fence(const rcoll_tl_t *tl)
{
    return tl->port.kind == RCOLL_VERBS_KIND_IWARP;
}

static int fully_posted(const rcoll_tl_t *tl, const rcoll_verbs_put_t *p)
{
    return p->posted == p->len && (p->fenced || !needs_fence(tl));
}

/* iWARP: READ the last byte written, into this peer's sink slot. */
static int post_fence(rcoll_tl_t *tl, rcoll_verbs_ep_t *ep, rcoll_verbs_put_t *p)
{
    struct ibv_sge sge = { (uintptr_t)&tl->read_sink[ep->peer], 1, tl->credit_mr->lkey };
    struct ibv_send_wr wr, *bad = NULL;
    int rc;

    memset(&wr, 0, sizeof(wr));
    wr.wr_id = (uintptr_t)&p->wr;
    wr.opcode = IBV_WR_RDMA_READ;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.wr.rdma.remote_addr = p->raddr + p->len - 1;
    wr.wr.rdma.rkey = p->rkey;
    rc = ibv_post_send(ep->qp, &wr, &bad);
    if (rc != 0) {
        rcoll__verbs_post_failed(tl, ep, rc, "the 1-byte RDMA READ closing a put");
        return -1;
    }
    ep->sq_avail--;
    p->fenced = 1;
    p->outstanding++;
    return 0;
}

/* Post WRITEs of queued puts, in order, while send slots last. */
int rcoll__verbs_put_post(rcoll_tl_t *tl, rcoll_verbs_ep_t *ep)
{
    size_t chunk_max = tl->port.attr.max_msg_sz > 0 ? tl->port.attr.max_msg_sz : (1u << 30);
    rcoll_list_t *pos, *tmp;
    int n = 0;

    rcoll_list_for_each_safe(pos, tmp, &ep->puts) {
        rcoll_verbs_put_t *p = rcoll_container_of(pos, rcoll_verbs_put_t, link);
        if (fully_posted(tl, p)) {
            continue;
        }
        while (p->posted < p->len) {
            size_t chunk = p->len - p->posted < chunk_max ? p->len - p->posted : chunk_max;
            struct ibv_mr *mr = p->reg->handle;
            struct ibv_sge sge = { (uintptr_t)(p->laddr + p->posted), (uint32_t)chunk, mr->lkey };
            struct ibv_send_wr wr, *bad = NULL;
            int rc;

            if (ep->sq_avail == 0) {
                return n;
            }
            memset(&wr, 0, sizeof(wr));
            wr.wr_id = (uintptr_t)&p->wr;
            wr.opcode = IBV_WR_RDMA_WRITE;
            wr.send_flags = IBV_SEND_SIGNALED;
            wr.sg_list = &sge;
            wr.num_sge = 1;
            wr.wr.rdma.remote_addr = p->raddr + p->posted;
            wr.wr.rdma.rkey = p->rkey;
            rc = ibv_post_send(ep->qp, &wr, &bad);
            if (rc != 0) {
                rcoll__verbs_post_failed(tl, ep, rc, "a %zu-byte RDMA WRITE", chunk);
                return n;
            }
            ep->sq_avail--;
            p->posted += chunk;
            p->outstanding++;
            n++;
        }
        if (!fully_posted(tl, p)) {
            if (ep->sq_avail == 0 || post_fence(tl, ep, p) != 0) {
                return n;
            }
            n++;
        }
        if (fully_posted(tl, p)) {
            ep->puts_unposted--;
        }
    }
    return n;
}

/* One WRITE of p completed (or was flushed). */
void rcoll__verbs_put_wr_done(rcoll_tl_t *tl, rcoll_verbs_put_t *p, rcoll_status_t status)
{
    rcoll_verbs_ep_t *ep = &tl->eps[p->wr.peer];

    p->outstanding--;
    if (status != RCOLL_OK && p->status == RCOLL_OK) {
        p->status = status;
    }
    /* (a failed ep's puts_unposted was reset by rcoll__verbs_ep_fail) */
    if (p->outstanding == 0 && (fully_posted(tl, p) || ep->state == RCOLL_VERBS_EP_FAILED)) {
        rcoll_list_del(&p->link);
        rcoll_list_add_tail(&tl->done_puts, &p->link);
    }
}

/* Run the completions of finished puts. */
int rcoll__verbs_put_deliver(rcoll_tl_t *tl)
{
    int n = 0;

    while (!rcoll_list_empty(&tl->done_puts)) {
        rcoll_verbs_put_t *p = rcoll_container_of(tl->done_puts.next, rcoll_verbs_put_t, link);
        rcoll_tl_completion_t *comp = p->delivered ? NULL : p->comp;
        rcoll_status_t status = p->status;

        rcoll_list_del(&p->link);
        if (p->reg != NULL) {
            rcoll__verbs_rcache_put(&tl->rcache, p->reg);
        }
        free(p);
        if (comp != NULL) {
            comp->cb(comp, status);
            n++;
        }
    }
    return n;
}

/*
 * A failed peer's puts complete with its error now, from progress(), even
 * those whose posted WRs have not flushed yet: the contract promises that
 * they complete, and a provider may never flush some of them (siw leaves
 * the closing RDMA READ on its ORQ when the target terminated the
 * connection, e.g. for a revoked key).  Such a put stays on ep->puts, its
 * source registration held, until its flush completions arrive or close()
 * destroys the QP; put_deliver then frees it without a second callback.
 */
int rcoll__verbs_put_fail_all(rcoll_tl_t *tl, rcoll_verbs_ep_t *ep)
{
    rcoll_list_t *pos, *tmp;
    int n = 0;

    rcoll_list_for_each_safe(pos, tmp, &ep->puts) {
        rcoll_verbs_put_t *p = rcoll_container_of(pos, rcoll_verbs_put_t, link);
        if (p->delivered) {
            continue;
        }
        p->delivered = 1;
        if (p->status == RCOLL_OK) {
            p->status = ep->fail_status;
        }
        /* put() refuses a failed peer, so the callback cannot touch ep->puts. */
        p->comp->cb(p->comp, p->status);
        n++;
    }
    return n;
}
