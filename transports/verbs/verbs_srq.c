/*
 * verbs_srq.c - the shared receive queue (RCOLL_VERBS_SRQ, issue 11 item 5).
 *
 * In SRQ mode one SRQ per instance holds a registered pool of
 * RCOLL_VERBS_SRQ_SIZE receive buffers, posted once at open() and each
 * re-posted as soon as its message is handled (verbs_cq.c); every QP is made
 * with it (verbs_qp.c), so receive memory is fixed whatever the number of
 * peers connected.  A completion names its QP, not its buffer's peer: the QP
 * number map (verbs_qpmap.c) says whose SEND it was.
 *
 * Each peer keeps its credit window (verbs_credit.h): it bounds the peer's
 * SENDs in flight and carries the credit returns, but the windows together
 * may exceed the pool.  A SEND that finds the SRQ empty is answered with an
 * RNR NAK and retried by the sender's HCA: QPs in SRQ mode have rnr_retry 7
 * (retry for ever, the IB spec's value) and a short min_rnr_timer
 * (verbs_qp.c, verbs_cm.c).  iWARP has no RNR NAK (a SEND without a posted
 * receive ends the connection), so there auto keeps the per-peer buffers and
 * "on" is refused at open().
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "verbs_int.h"

#define SRQ_SIZE_DEFAULT 1024

rcoll_status_t rcoll__verbs_srq_choose(rcoll_tl_t *tl, const struct ibv_device_attr *da)
{
    const char *want = tl->config.verbs_srq;
    const char *kind = rcoll__verbs_kind_name(tl->port.kind);
    int iwarp = tl->port.kind == RCOLL_VERBS_KIND_IWARP;
    int ib_or_roce = tl->port.kind == RCOLL_VERBS_KIND_IB || tl->port.kind == RCOLL_VERBS_KIND_ROCE_V1 ||
                     tl->port.kind == RCOLL_VERBS_KIND_ROCE_V2;
    int has = da->max_srq > 0 && da->max_srq_wr > 1;
    int size = tl->config.verbs_srq_size > 0 ? tl->config.verbs_srq_size : SRQ_SIZE_DEFAULT;

    tl->srq_size = 0;
    if (strcmp(want, "on") == 0) {
        if (iwarp) {
            rcoll_error("verbs: RCOLL_VERBS_SRQ=on is refused on %s:%d (iWARP): iWARP has no RNR "
                        "retry, a SEND that finds the shared queue empty would end the connection "
                        "(use auto or off)", tl->port.dev, tl->port.port);
            return RCOLL_ERR_NOT_SUPPORTED;
        }
        if (!has) {
            rcoll_error("verbs: RCOLL_VERBS_SRQ=on: %s has no shared receive queues (max_srq %d, "
                        "max_srq_wr %d)", tl->port.dev, da->max_srq, da->max_srq_wr);
            return RCOLL_ERR_NOT_SUPPORTED;
        }
    } else if (strcmp(want, "off") == 0) {
        rcoll_info("verbs: receive buffers per peer (%d of %zu bytes each): RCOLL_VERBS_SRQ=off",
                   tl->depth, tl->buf_size);
        return RCOLL_OK;
    } else if (want[0] != '\0' && strcmp(want, "auto") != 0) {
        rcoll_error("verbs: RCOLL_VERBS_SRQ=%s: expected auto, on or off", want);
        return RCOLL_ERR_INVALID_ARG;
    } else if (!has || !ib_or_roce) {
        rcoll_info("verbs: receive buffers per peer (%d of %zu bytes each): RCOLL_VERBS_SRQ=auto "
                   "and %s:%d is %s%s", tl->depth, tl->buf_size, tl->port.dev, tl->port.port, kind,
                   iwarp ? " (no RNR retry: a shared queue running empty would end connections)" :
                   !has ? " without shared receive queues" : "");
        return RCOLL_OK;
    }
    if (size > da->max_srq_wr) {
        rcoll_info("verbs: RCOLL_VERBS_SRQ_SIZE=%d clamped to %s's max_srq_wr %d", size,
                   tl->port.dev, da->max_srq_wr);
        size = da->max_srq_wr;
    }
    tl->srq_size = size;
    rcoll_info("verbs: receive buffers shared by all peers: one SRQ of %d x %zu bytes "
               "(RCOLL_VERBS_SRQ=%s, %s:%d is %s)", size, tl->buf_size, want[0] ? want : "auto",
               tl->port.dev, tl->port.port, kind);
    return RCOLL_OK;
}

rcoll_status_t rcoll__verbs_srq_open(rcoll_tl_t *tl)
{
    struct ibv_srq_init_attr a;
    size_t bytes = (size_t)tl->srq_size * tl->buf_size;
    void *mem = NULL;

    memset(&a, 0, sizeof(a));
    a.attr.max_wr = (uint32_t)tl->srq_size;
    a.attr.max_sge = 1;
    tl->srq = ibv_create_srq(tl->pd, &a);
    if (tl->srq == NULL) {
        rcoll_error("verbs: %s: creating a shared receive queue of %d entries failed: %s",
                    tl->port.dev, tl->srq_size, strerror(errno));
        return RCOLL_ERR_TRANSPORT;
    }
    if (posix_memalign(&mem, 4096, bytes) != 0 ||
        (tl->srq_bufs = calloc((size_t)tl->srq_size, sizeof(*tl->srq_bufs))) == NULL) {
        free(mem);
        rcoll_error("verbs: no memory for %d shared receive buffers of %zu bytes", tl->srq_size,
                    tl->buf_size);
        return RCOLL_ERR_NO_MEMORY;
    }
    tl->srq_mem = mem;
    tl->srq_mr = rcoll__verbs_reg(tl, mem, bytes, IBV_ACCESS_LOCAL_WRITE, "the shared receive buffers");
    if (tl->srq_mr == NULL) {
        return RCOLL_ERR_NO_MEMORY;
    }
    for (int i = 0; i < tl->srq_size; i++) {
        rcoll_verbs_buf_t *b = &tl->srq_bufs[i];
        b->wr.kind = RCOLL_VERBS_WR_RECV;
        b->wr.peer = -1;                /* whoever's SEND lands in it */
        b->data = tl->srq_mem + (size_t)i * tl->buf_size;
        if (rcoll__verbs_srq_repost(tl, b) != RCOLL_OK) {
            return RCOLL_ERR_TRANSPORT;
        }
    }
    return RCOLL_OK;
}

rcoll_status_t rcoll__verbs_srq_repost(rcoll_tl_t *tl, rcoll_verbs_buf_t *b)
{
    struct ibv_recv_wr wr, *bad = NULL;
    struct ibv_sge sge = {
        .addr = (uintptr_t)b->data,
        .length = (uint32_t)tl->buf_size,
        .lkey = tl->srq_mr->lkey,
    };
    int rc;

    memset(&wr, 0, sizeof(wr));
    wr.wr_id = (uintptr_t)&b->wr;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    rc = ibv_post_srq_recv(tl->srq, &wr, &bad);
    if (rc != 0) {
        tl->srq_lost++;
        rcoll_error("verbs: %s: ibv_post_srq_recv failed: %s (%d of %d shared receive buffers lost)",
                    tl->port.dev, strerror(rc), tl->srq_lost, tl->srq_size);
        return RCOLL_ERR_TRANSPORT;
    }
    return RCOLL_OK;
}

/* After every QP is gone: an SRQ can be destroyed only once no QP uses it. */
void rcoll__verbs_srq_close(rcoll_tl_t *tl)
{
    if (tl->srq != NULL) {
        int rc = ibv_destroy_srq(tl->srq);
        if (rc != 0) {
            rcoll_warn("verbs: %s: ibv_destroy_srq failed: %s", tl->port.dev, strerror(rc));
        }
        tl->srq = NULL;
    }
    if (tl->srq_mr != NULL) {
        ibv_dereg_mr(tl->srq_mr);
        tl->srq_mr = NULL;
    }
    free(tl->srq_mem);
    free(tl->srq_bufs);
    tl->srq_mem = NULL;
    tl->srq_bufs = NULL;
    rcoll__verbs_qpmap_free(&tl->qpmap);
}
