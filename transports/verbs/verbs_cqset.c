/*
 * verbs_cqset.c - the completion queues, made as connections are.
 *
 * One CQ for every peer of the job, sized at open(), would grow with the
 * job: (p - 1)(depth + sq_depth) entries, 4 M at 1024 x 128 ranks, pinned
 * whether or not the process ever talks to those peers.  Instead a CQ is
 * sized for cq_peers QPs (RCOLL_VERBS_CQ_PEERS, at most the job's peers),
 * and another one is made each time that many QPs have been created, so
 * the CQ memory follows the connections made (connections on first use,
 * verbs_cm.c).  A QP's send and receive completions share its CQ, so what
 * one peer's completions say stays in order; progress() polls every CQ.
 * A CQ's room is never given back: the flush completions of a replaced QP
 * may still be in it.  No ibv_resize_cq: siw has none.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "verbs_int.h"

rcoll_status_t rcoll__verbs_cq_add(rcoll_tl_t *tl)
{
    if (tl->ncqs == tl->cqs_cap) {
        int cap = tl->cqs_cap > 0 ? 2 * tl->cqs_cap : 4;
        struct ibv_cq **cqs = realloc(tl->cqs, (size_t)cap * sizeof(*cqs));
        if (cqs == NULL) {
            rcoll_error("verbs: %s: no memory for %d completion queues", tl->port.dev, cap);
            return RCOLL_ERR_NO_MEMORY;
        }
        tl->cqs = cqs;
        tl->cqs_cap = cap;
    }
    struct ibv_cq *cq = ibv_create_cq(tl->ctx, tl->cq_size, NULL, NULL, 0);
    if (cq == NULL) {
        rcoll_error("verbs: %s: creating completion queue %d (%d entries, for %d connections) "
                    "failed: %s", tl->port.dev, tl->ncqs + 1, tl->cq_size, tl->cq_peers,
                    strerror(errno));
        return RCOLL_ERR_TRANSPORT;
    }
    tl->cqs[tl->ncqs++] = cq;
    tl->cq_fill = 0;
    return RCOLL_OK;
}

struct ibv_cq *rcoll__verbs_cq_for_qp(rcoll_tl_t *tl)
{
    if ((tl->ncqs == 0 || tl->cq_fill >= tl->cq_peers) && rcoll__verbs_cq_add(tl) != RCOLL_OK) {
        return NULL;
    }
    tl->cq_fill++;
    return tl->cqs[tl->ncqs - 1];
}

int rcoll__verbs_cq_poll(rcoll_tl_t *tl, void (*handle)(rcoll_tl_t *, const struct ibv_wc *))
{
    struct ibv_wc wc[16];
    int n = 0;

    for (int i = 0; i < tl->ncqs; i++) {
        int k;
        while ((k = ibv_poll_cq(tl->cqs[i], 16, wc)) > 0) {
            for (int j = 0; j < k; j++) {
                handle(tl, &wc[j]);
            }
            n += k;
            if (k < 16) {
                break;
            }
        }
        if (k < 0) {
            rcoll_error("verbs: ibv_poll_cq on %s (completion queue %d of %d) failed (%d)",
                        tl->port.dev, i + 1, tl->ncqs, k);
            return -1;
        }
    }
    return n;
}

void rcoll__verbs_cq_destroy_all(rcoll_tl_t *tl)
{
    for (int i = 0; i < tl->ncqs; i++) {
        int rc = ibv_destroy_cq(tl->cqs[i]);
        if (rc != 0) {
            rcoll_warn("verbs: %s: ibv_destroy_cq failed: %s", tl->port.dev, strerror(rc));
        }
    }
    free(tl->cqs);
    tl->cqs = NULL;
    tl->ncqs = tl->cqs_cap = 0;
}
