/*
 * verbs_addr.c - the address blob each rank publishes through PMIx.
 *
 * Little-endian, field by field:
 *   off size field
 *     0    1 magic 'V'      1 version   2 cm (1 oob, 2 rdma_cm)   3 kind
 *     4    4 rank           8 size     12 depth (receive buffers per peer; SRQ mode: the credit window)
 *    16    8 credit slots address      24 4 zero (was one rkey for all slots)
 *    28    4 psn           32 2 lid    34 1 port   35 1 active mtu (enum)
 *    36   16 gid
 *    52      rdma_cm: 1 family, 1 zero, 2 port (network order), 16 address;
 *            72 bytes in all, whatever the job size
 *            oob:     size x 4 bytes: the QPN this rank created for each peer,
 *            then size x 4 bytes: the rkey of each peer's own credit slot
 *
 * Each peer may write only its own 4-byte credit slot: a memory region per
 * slot, its rkey given to that peer alone (docs/security.md): with rdma_cm
 * in the connection's private data (verbs_cm.c), with oob in the blob.
 *
 * rdma_cm (the default, any device kind): the blob names this rank's
 * listener; connect() records it and the connection is made on first use
 * (verbs_cm.c).  oob (RCOLL_VERBS_CM=oob, IB or RoCE without IP addresses on
 * the device): every QP exists from open() on, so one blob carries each
 * peer's QPN and connect() finishes INIT->RTR->RTS at once; its size and the
 * QPs grow with the job.
 */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>
#include "verbs_int.h"

#define ADDR_MAGIC   'V'
#define ADDR_VERSION 3
#define ADDR_FIXED   52
#define ADDR_CM_LEN  20

rcoll_status_t rcoll__verbs_addr_pack(rcoll_tl_t *tl)
{
    int oob = tl->cm == RCOLL_VERBS_CM_OOB;
    size_t part = oob ? 4 * (size_t)tl->size : ADDR_CM_LEN;
    size_t len = ADDR_FIXED + part + (oob ? 4 * (size_t)tl->size : 0);
    uint8_t *b = calloc(1, len);

    if (b == NULL) {
        rcoll_error("verbs: no memory for a %zu-byte address", len);
        return RCOLL_ERR_NO_MEMORY;
    }
    b[0] = ADDR_MAGIC;
    b[1] = ADDR_VERSION;
    b[2] = (uint8_t)tl->cm;
    b[3] = (uint8_t)tl->port.kind;
    rcoll__verbs_put_u32(b + 4, (uint32_t)tl->rank);
    rcoll__verbs_put_u32(b + 8, (uint32_t)tl->size);
    rcoll__verbs_put_u32(b + 12, (uint32_t)tl->depth);
    rcoll__verbs_put_u64(b + 16, (uintptr_t)tl->credit_slots);
    for (int p = 0; oob && p < tl->size; p++) {
        rcoll__verbs_put_u32(b + ADDR_FIXED + part + 4 * (size_t)p, tl->slot_mrs[p]->rkey);
    }
    rcoll__verbs_put_u32(b + 28, tl->psn);
    rcoll__verbs_put_u16(b + 32, tl->port.attr.lid);
    b[34] = (uint8_t)tl->port.port;
    b[35] = (uint8_t)tl->port.attr.active_mtu;
    memcpy(b + 36, tl->port.gid.raw, 16);
    if (tl->cm == RCOLL_VERBS_CM_OOB) {
        for (int p = 0; p < tl->size; p++) {
            struct ibv_qp *qp = tl->eps[p].qp;
            rcoll__verbs_put_u32(b + ADDR_FIXED + 4 * p, qp != NULL ? qp->qp_num : 0);
        }
    } else {
        const struct sockaddr *sa = (const struct sockaddr *)&tl->laddr;
        b[ADDR_FIXED] = sa->sa_family == AF_INET6 ? 6 : 4;
        if (sa->sa_family == AF_INET6) {
            const struct sockaddr_in6 *s6 = (const void *)sa;
            memcpy(b + ADDR_FIXED + 2, &s6->sin6_port, 2);
            memcpy(b + ADDR_FIXED + 4, &s6->sin6_addr, 16);
        } else {
            const struct sockaddr_in *s4 = (const void *)sa;
            memcpy(b + ADDR_FIXED + 2, &s4->sin_port, 2);
            memcpy(b + ADDR_FIXED + 4, &s4->sin_addr, 4);
        }
    }
    tl->blob = b;
    tl->blob_len = len;
    return RCOLL_OK;
}

static void cm_sockaddr(const uint8_t *p, struct sockaddr_storage *ss)
{
    memset(ss, 0, sizeof(*ss));
    if (p[0] == 6) {
        struct sockaddr_in6 *s6 = (void *)ss;
        s6->sin6_family = AF_INET6;
        memcpy(&s6->sin6_port, p + 2, 2);
        memcpy(&s6->sin6_addr, p + 4, 16);
    } else {
        struct sockaddr_in *s4 = (void *)ss;
        s4->sin_family = AF_INET;
        memcpy(&s4->sin_port, p + 2, 2);
        memcpy(&s4->sin_addr, p + 4, 4);
    }
}

rcoll_status_t rcoll__verbs_addr_connect(rcoll_tl_t *tl, rcoll_verbs_ep_t *ep,
                                         const void *addr, size_t len)
{
    const uint8_t *b = addr;
    const char *dev = tl->port.dev;
    int peer = ep->peer;

    if (b == NULL || len < ADDR_FIXED || b[0] != ADDR_MAGIC || b[1] != ADDR_VERSION) {
        rcoll_error("verbs: peer %d: address of %zu bytes is not a verbs address (version %d)",
                    peer, len, ADDR_VERSION);
        return RCOLL_ERR_PROTOCOL;
    }
    if (b[2] != tl->cm || rcoll__verbs_get_u32(b + 4) != (uint32_t)peer ||
        rcoll__verbs_get_u32(b + 8) != (uint32_t)tl->size) {
        rcoll_error("verbs: peer %d: its address says rank %u of %u with %s set-up; we are on %s "
                    "with %s set-up and %d ranks (every rank must use the same RCOLL_VERBS_CM and device kind)",
                    peer, rcoll__verbs_get_u32(b + 4), rcoll__verbs_get_u32(b + 8),
                    b[2] == RCOLL_VERBS_CM_OOB ? "oob" : "rdma_cm", dev,
                    tl->cm == RCOLL_VERBS_CM_OOB ? "oob" : "rdma_cm", tl->size);
        return RCOLL_ERR_PROTOCOL;
    }
    if ((b[3] == RCOLL_VERBS_KIND_IB) != (tl->port.kind == RCOLL_VERBS_KIND_IB)) {
        rcoll_error("verbs: peer %d uses %s but %s is %s: they cannot talk", peer,
                    rcoll__verbs_kind_name((rcoll_verbs_kind_t)b[3]), dev,
                    rcoll__verbs_kind_name(tl->port.kind));
        return RCOLL_ERR_NOT_SUPPORTED;
    }
    uint32_t depth = rcoll__verbs_get_u32(b + 12);
    if (depth == 0 || depth > 65536) {
        rcoll_error("verbs: peer %d: address announces %u receive buffers", peer, depth);
        return RCOLL_ERR_PROTOCOL;
    }
    ep->credit.depth = depth;           /* our window: the peer's receive buffers */
    int oob = tl->cm == RCOLL_VERBS_CM_OOB;
    size_t part = oob ? 4 * (size_t)tl->size : ADDR_CM_LEN;
    size_t want = ADDR_FIXED + part + (oob ? 4 * (size_t)tl->size : 0);
    if (len != want) {
        rcoll_error("verbs: peer %d: address of %zu bytes, expected %zu", peer, len, want);
        return RCOLL_ERR_PROTOCOL;
    }

    if (oob) {
        ep->rcredit_addr = rcoll__verbs_get_u64(b + 16) + 4 * (uint64_t)tl->rank;
        ep->rcredit_rkey = rcoll__verbs_get_u32(b + ADDR_FIXED + part + 4 * (size_t)tl->rank);
        ep->have_addr = 1;
        uint32_t qpn = rcoll__verbs_get_u32(b + ADDR_FIXED + 4 * (size_t)tl->rank);
        rcoll_status_t st = rcoll__verbs_qp_post_recvs(tl, ep);
        if (st == RCOLL_OK) {
            st = rcoll__verbs_qp_connect_oob(tl, ep, qpn, rcoll__verbs_get_u32(b + 28),
                                             rcoll__verbs_get_u16(b + 32), b + 36,
                                             (enum ibv_mtu)b[35]);
        }
        if (st != RCOLL_OK) {
            return st;
        }
        rcoll_debug("verbs: peer %d connected on %s:%d (QP 0x%x -> 0x%x)", peer, dev,
                    tl->port.port, ep->qp->qp_num, qpn);
        rcoll__verbs_ep_connected(tl, ep);
        return RCOLL_OK;
    }
    if (b[ADDR_FIXED] != 4 && b[ADDR_FIXED] != 6) {
        rcoll_error("verbs: peer %d: malformed rdma_cm address (%zu bytes)", peer, len);
        return RCOLL_ERR_PROTOCOL;
    }
    cm_sockaddr(b + ADDR_FIXED, &ep->raddr);
    ep->have_addr = 1;
    if (ep->state == RCOLL_VERBS_EP_CONNECTING) {
        rcoll__verbs_cm_maybe_connected(tl, ep);   /* it connected to us before connect() */
    } else if (!rcoll_list_empty(&ep->pending) || ep->puts_unposted > 0) {
        rcoll__verbs_cm_want(tl, ep);              /* sent to before connect() */
    }
    return RCOLL_OK;
}
