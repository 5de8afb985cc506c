/*
 * verbs_tl.c - the raw verbs backend's instance and its ops table.
 *
 * open() picks the port (verbs_device.c), chooses how connections are made
 * (RCOLL_VERBS_CM: auto = rdmacm = rdma_cm on first use, verbs_cm.c; oob =
 * manual RTR/RTS), creates the PD, one CQ, the registered buffers, the
 * shared receive queue (SRQ mode, verbs_srq.c) and, for oob only, one RC QP
 * per peer at once so the published address can carry every QPN.
 * Memory: in SRQ mode (RCOLL_VERBS_SRQ, the default on IB and RoCE) the
 * receive buffers are one fixed pool of RCOLL_VERBS_SRQ_SIZE x buf_size
 * bytes, whatever the peers; in per-peer mode (iWARP, or SRQ off) each
 * connected peer gets `depth` receive buffers of buf_size bytes, so the
 * footprint grows with the peers connected; depth shrinks as the job grows
 * (it is each peer's credit window in both modes).
 *
 * Fork: registered memory and fork() are safe without help on Linux >= 5.13
 * (ibv_is_fork_initialized() says IBV_FORK_UNNEEDED).  On older kernels we
 * call ibv_fork_init() at the first open, so a forked child does not corrupt
 * registered pages (it then cannot touch them: they are not inherited).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include "verbs_int.h"

#define MAX_INLINE_WANTED 256
#define CONN_MIN_S        10.0

/* Once per process (pthread_once: contexts of several threads may open
 * verbs at the same time). */
static void fork_safety_once(void)
{
    enum ibv_fork_status s = ibv_is_fork_initialized();
    if (s == IBV_FORK_DISABLED) {
        int rc = ibv_fork_init();
        if (rc != 0) {
            rcoll_warn("verbs: ibv_fork_init failed (%s): do not fork() while rcoll is in use",
                       strerror(rc));
        } else {
            rcoll_info("verbs: this kernel needs ibv_fork_init for fork() safety: called it");
        }
    } else {
        rcoll_debug("verbs: fork() safety: %s", s == IBV_FORK_UNNEEDED ? "provided by the kernel"
                                                                    : "ibv_fork_init already called");
    }
}

static void fork_safety(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;

    pthread_once(&once, fork_safety_once);
}

static rcoll_status_t choose_cm(rcoll_tl_t *tl)
{
    const char *want = tl->config.verbs_cm;
    int iwarp = tl->port.kind == RCOLL_VERBS_KIND_IWARP;

    if (strcmp(want, "rdmacm") == 0) {
        tl->cm = RCOLL_VERBS_CM_RDMACM;
    } else if (strcmp(want, "oob") == 0) {
        if (iwarp) {
            rcoll_error("verbs: RCOLL_VERBS_CM=oob is impossible on %s:%d: an iWARP QP cannot be "
                        "moved to RTR by hand (use auto or rdmacm)", tl->port.dev, tl->port.port);
            return RCOLL_ERR_NOT_SUPPORTED;
        }
        tl->cm = RCOLL_VERBS_CM_OOB;
    } else if (want[0] == '\0' || strcmp(want, "auto") == 0) {
        tl->cm = RCOLL_VERBS_CM_RDMACM;     /* a fixed-size blob, connections on first use */
    } else {
        rcoll_error("verbs: RCOLL_VERBS_CM=%s: expected auto, rdmacm or oob", want);
        return RCOLL_ERR_INVALID_ARG;
    }
    return RCOLL_OK;
}

/* Queue sizes; shrink the receive window until a CQ fits the device.  A CQ
 * holds the work of cq_peers QPs (verbs_cqset.c). */
static void size_queues(rcoll_tl_t *tl, const struct ibv_device_attr *da)
{
    int peers = tl->size > 1 ? tl->size - 1 : 1;
    size_t eager = tl->config.eager_limit;

    tl->cq_peers = tl->config.verbs_cq_peers > 0 && tl->config.verbs_cq_peers < peers ?
                   tl->config.verbs_cq_peers : peers;
    tl->depth = tl->size <= 9 ? 32 : tl->size <= 65 ? 16 : 8;
    for (;;) {
        tl->sq_depth = tl->depth + 16;
        long cqe = (long)tl->cq_peers * (tl->depth + tl->sq_depth) + 64;
        if ((cqe <= da->max_cqe && tl->sq_depth <= da->max_qp_wr) || tl->depth <= 2) {
            tl->cq_size = (int)(cqe < da->max_cqe ? cqe : da->max_cqe);
            break;
        }
        tl->depth /= 2;
    }
    tl->buf_size = eager + tl->params.hdr_size + RCOLL_TL_RKEY_MAX + RCOLL_VERBS_BH_SIZE;
    if (tl->buf_size < 4096) {
        tl->buf_size = 4096;
    }
    tl->buf_size = (tl->buf_size + 63) & ~(size_t)63;
    tl->nsbufs = 128;
    tl->max_inline = MAX_INLINE_WANTED;
}

static rcoll_status_t alloc_buffers(rcoll_tl_t *tl)
{
    size_t nbufs = (size_t)tl->nsbufs;     /* receive buffers: per peer, with its QP (verbs_qp.c) */
    long page = sysconf(_SC_PAGESIZE);
    void *mem = NULL;

    if (posix_memalign(&mem, (size_t)page, nbufs * tl->buf_size) != 0 ||
        posix_memalign((void **)&tl->credit_slots, (size_t)page, 12 * (size_t)tl->size) != 0) {
        free(mem);
        rcoll_error("verbs: no memory for %zu buffers of %zu bytes", nbufs, tl->buf_size);
        return RCOLL_ERR_NO_MEMORY;
    }
    tl->bufmem = mem;
    memset(tl->credit_slots, 0, 12 * (size_t)tl->size);
    tl->credit_src = tl->credit_slots + tl->size;
    tl->read_sink = tl->credit_slots + 2 * (size_t)tl->size;
    tl->buf_mr = rcoll__verbs_reg(tl, tl->bufmem, nbufs * tl->buf_size, IBV_ACCESS_LOCAL_WRITE,
                                  "the message buffers");
    tl->credit_mr = rcoll__verbs_reg(tl, tl->credit_slots, 12 * (size_t)tl->size,
                                     IBV_ACCESS_LOCAL_WRITE, "the credit slots");
    tl->sbufs = calloc((size_t)tl->nsbufs, sizeof(*tl->sbufs));
    tl->slot_mrs = calloc((size_t)tl->size, sizeof(*tl->slot_mrs));
    if (tl->buf_mr == NULL || tl->credit_mr == NULL || tl->sbufs == NULL || tl->slot_mrs == NULL) {
        return RCOLL_ERR_NO_MEMORY;
    }
    /* Peer p may write its own slot and nothing else (docs/security.md).
     * rdma_cm: each made when p is first connected (verbs_cm.c). */
    for (int p = 0; p < tl->size && tl->cm == RCOLL_VERBS_CM_OOB; p++) {
        tl->slot_mrs[p] = rcoll__verbs_reg(tl, &tl->credit_slots[p], sizeof(tl->credit_slots[p]),
                                           IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
                                           "a peer's credit slot");
        if (tl->slot_mrs[p] == NULL) {
            return RCOLL_ERR_NO_MEMORY;
        }
    }
    for (int i = 0; i < tl->nsbufs; i++) {
        rcoll_verbs_buf_t *b = &tl->sbufs[i];
        b->wr.kind = RCOLL_VERBS_WR_SEND;
        b->data = tl->bufmem + (size_t)i * tl->buf_size;
        b->next = tl->sfree;
        tl->sfree = b;
    }
    return RCOLL_OK;
}

static void verbs_close(rcoll_tl_t *tl);

static rcoll_status_t open_resources(rcoll_tl_t *tl)
{
    struct ibv_device_attr da;
    rcoll_status_t st;

    if (tl->cm == RCOLL_VERBS_CM_RDMACM) {
        if ((st = rcoll__verbs_cm_open(tl)) != RCOLL_OK) {
            return st;
        }
    } else if ((tl->ctx = rcoll__verbs_open_by_name(tl->port.dev)) == NULL) {
        return RCOLL_ERR_TRANSPORT;
    }
    if (ibv_query_device(tl->ctx, &da) != 0 || (tl->pd = ibv_alloc_pd(tl->ctx)) == NULL) {
        rcoll_error("verbs: %s: querying the device or allocating a PD failed: %s", tl->port.dev,
                    strerror(errno));
        return RCOLL_ERR_TRANSPORT;
    }
    size_queues(tl, &da);
    if ((st = rcoll__verbs_srq_choose(tl, &da)) != RCOLL_OK) {
        return st;
    }
    if ((st = rcoll__verbs_cq_add(tl)) != RCOLL_OK) {   /* the first: fail at open, not later */
        return st;
    }
    if ((st = alloc_buffers(tl)) != RCOLL_OK || (st = rcoll__verbs_mr_init(tl)) != RCOLL_OK) {
        return st;
    }
    if (tl->srq_size > 0 && (st = rcoll__verbs_srq_open(tl)) != RCOLL_OK) {   /* before any QP */
        return st;
    }
    for (int p = 0; p < tl->size && tl->cm == RCOLL_VERBS_CM_OOB; p++) {
        if (p != tl->rank && (st = rcoll__verbs_qp_create(tl, &tl->eps[p], NULL)) != RCOLL_OK) {
            return st;
        }
    }
    return rcoll__verbs_addr_pack(tl);
}

static rcoll_status_t verbs_open(const rcoll_tl_params_t *params, rcoll_tl_t **out)
{
    char why[256], gid[INET6_ADDRSTRLEN] = "-";
    rcoll_status_t st;
    rcoll_tl_t *tl;

    if (params == NULL || out == NULL || params->config == NULL || params->size < 1 ||
        params->rank < 0 || params->rank >= params->size || params->cb.recv == NULL) {
        rcoll_error("verbs: open refused: bad parameters");
        return RCOLL_ERR_INVALID_ARG;
    }
    fork_safety();
    tl = calloc(1, sizeof(*tl));
    if (tl == NULL || (tl->eps = calloc((size_t)params->size, sizeof(*tl->eps))) == NULL) {
        free(tl);
        rcoll_error("verbs: no memory for %d endpoints", params->size);
        return RCOLL_ERR_NO_MEMORY;
    }
    tl->params = *params;
    tl->config = *params->config;
    tl->params.config = &tl->config;
    tl->rank = params->rank;
    tl->size = params->size;
    tl->pagemap_fd = -1;
    tl->psn = ((uint32_t)getpid() * 2654435761u ^ (uint32_t)tl->rank) & 0xffffff;
    /* A connection is made on first use, when the peer may be busy elsewhere
     * (not yet in the collective: it accepts from its own progress) for a
     * while; a failed set-up fails the peer for good, so it gets at least
     * CONN_MIN_S even under a short RCOLL_TIMEOUT (the collective's own
     * deadline still ends the wait on it sooner). */
    tl->conn_timeout = tl->config.timeout <= 0 ? 300.0 :
                       tl->config.timeout < CONN_MIN_S ? CONN_MIN_S : tl->config.timeout;
    rcoll_list_init(&tl->self_msgs);
    rcoll_list_init(&tl->done_puts);
    for (int p = 0; p < tl->size; p++) {
        rcoll_verbs_ep_t *ep = &tl->eps[p];
        ep->peer = p;
        rcoll_list_init(&ep->pending);
        rcoll_list_init(&ep->puts);
        ep->inline_ctx = (rcoll_verbs_wrctx_t){ RCOLL_VERBS_WR_INLINE, p };
        ep->credit_ctx = (rcoll_verbs_wrctx_t){ RCOLL_VERBS_WR_CREDIT, p };
        rcoll__verbs_credit_init(&ep->credit, 1);
    }
    if (rcoll__verbs_select(&tl->config, &tl->port, why, sizeof(why)) != RCOLL_OK) {
        rcoll_error("verbs: no usable RDMA port: %s", why);
        verbs_close(tl);
        return RCOLL_ERR_NOT_SUPPORTED;
    }
    if (tl->port.gid_index >= 0) {
        inet_ntop(AF_INET6, tl->port.gid.raw, gid, sizeof(gid));
    }
    rcoll_info("verbs: using %s:%d, %s, mtu %d, GID[%d] %s (%s)", tl->port.dev, tl->port.port,
               rcoll__verbs_kind_name(tl->port.kind), 128 << tl->port.attr.active_mtu,
               tl->port.gid_index, gid, tl->port.gid_why);
    if ((st = choose_cm(tl)) != RCOLL_OK || (st = open_resources(tl)) != RCOLL_OK) {
        verbs_close(tl);
        return st;
    }
    for (int p = 0; p < tl->size; p++) {
        rcoll__verbs_credit_init(&tl->eps[p].credit, (uint32_t)tl->depth);
    }
    rcoll_debug("verbs: %s%d receive buffers of %zu bytes%s, %d send buffers, inline %u, %s set-up",
                tl->srq != NULL ? "a credit window of " : "", tl->depth,
                tl->buf_size, tl->srq != NULL ? " per peer over a shared queue" : " per peer",
                tl->nsbufs, tl->max_inline,
                tl->cm == RCOLL_VERBS_CM_OOB ? "manual (PMIx)" : "rdma_cm");
    *out = tl;
    return RCOLL_OK;
}

static void free_list(rcoll_list_t *head, size_t offset)
{
    rcoll_list_t *pos, *tmp;

    rcoll_list_for_each_safe(pos, tmp, head) {
        rcoll_list_del(pos);
        free((char *)pos - offset);
    }
}

static void verbs_close(rcoll_tl_t *tl)
{
    if (tl == NULL) {
        return;
    }
    if (tl->ncqs > 0 && tl->blob != NULL) {
        rcoll__verbs_drain(tl);         /* verbs_close.c: nothing sent is lost */
        rcoll_debug("verbs: closing %s: %u of %d peers were connected, %u QPs created, %d CQs of "
                    "%d entries, %s", tl->port.dev, tl->nconnected, tl->size - 1, tl->nqps, tl->ncqs,
                    tl->cq_size, tl->srq != NULL ? "a shared receive queue" : "per-peer receives");
        if (tl->srq != NULL && (tl->srq_stale > 0 || tl->srq_lost > 0)) {
            rcoll_debug("verbs: %s: %lu receive completions of dropped QPs, %d shared buffers lost",
                        tl->port.dev, tl->srq_stale, tl->srq_lost);
        }
    }
    for (int p = 0; p < tl->size; p++) {
        rcoll_verbs_ep_t *ep = &tl->eps[p];
        rcoll__verbs_qp_destroy(tl, ep);
        free_list(&ep->pending, offsetof(rcoll_verbs_pending_t, link));
        rcoll_list_t *pos, *tmp;
        rcoll_list_for_each_safe(pos, tmp, &ep->puts) {
            rcoll_list_del(pos);
            rcoll_list_add_tail(&tl->done_puts, pos);
        }
        free(ep->rbufs);
        if (ep->rmr != NULL) {
            ibv_dereg_mr(ep->rmr);
        }
        free(ep->rmem);
    }
    rcoll__verbs_srq_close(tl);         /* after every QP: none may use it any more */
    rcoll_list_t *pos, *tmp;
    rcoll_list_for_each_safe(pos, tmp, &tl->done_puts) {   /* dropped: the core closes idle */
        rcoll_verbs_put_t *p = rcoll_container_of(pos, rcoll_verbs_put_t, link);
        rcoll_list_del(pos);
        if (p->reg != NULL) {
            rcoll__verbs_rcache_put(&tl->rcache, p->reg);
        }
        free(p);
    }
    free_list(&tl->self_msgs, offsetof(rcoll_verbs_pending_t, link));
    if (tl->pd != NULL) {
        rcoll__verbs_mr_cleanup(tl);
    }
    if (tl->buf_mr != NULL) {
        ibv_dereg_mr(tl->buf_mr);
    }
    if (tl->credit_mr != NULL) {
        ibv_dereg_mr(tl->credit_mr);
    }
    for (int p = 0; tl->slot_mrs != NULL && p < tl->size; p++) {
        if (tl->slot_mrs[p] != NULL) {
            ibv_dereg_mr(tl->slot_mrs[p]);
        }
    }
    free(tl->slot_mrs);
    rcoll__verbs_cq_destroy_all(tl);
    if (tl->pd != NULL) {
        ibv_dealloc_pd(tl->pd);
    }
    if (tl->cm == RCOLL_VERBS_CM_RDMACM) {
        rcoll__verbs_cm_close(tl);      /* the context belongs to rdma_cm */
    } else if (tl->ctx != NULL) {
        ibv_close_device(tl->ctx);
    }
    for (int i = 0; i < tl->ngraveyard; i++) {
        free(tl->graveyard[i]);
    }
    free(tl->graveyard);
    free(tl->sbufs);
    free(tl->bufmem);
    free(tl->credit_slots);
    free(tl->blob);
    free(tl->eps);
    free(tl);
}

static rcoll_status_t verbs_address(rcoll_tl_t *tl, const void **addr, size_t *len)
{
    *addr = tl->blob;
    *len = tl->blob_len;
    return RCOLL_OK;
}

static rcoll_status_t verbs_connect(rcoll_tl_t *tl, int peer, const void *addr, size_t len)
{
    if (peer < 0 || peer >= tl->size) {
        rcoll_error("verbs: connect to peer %d refused: not in 0..%d", peer, tl->size - 1);
        return RCOLL_ERR_INVALID_ARG;
    }
    if (peer == tl->rank) {
        tl->eps[peer].state = RCOLL_VERBS_EP_CONNECTED;   /* loopback through progress() */
        return RCOLL_OK;
    }
    if (tl->eps[peer].have_addr) {
        rcoll_error("verbs: connect to peer %d called twice", peer);
        return RCOLL_ERR_INVALID_ARG;
    }
    return rcoll__verbs_addr_connect(tl, &tl->eps[peer], addr, len);
}

static unsigned verbs_caps(rcoll_tl_t *tl)
{
    return RCOLL_TL_CAP_PUT;
}

static size_t verbs_max_msg_size(rcoll_tl_t *tl)
{
    return tl->buf_size - RCOLL_VERBS_BH_SIZE;
}

/* A device with an active port under cfg (RCOLL_NET_DEVICES honoured); an
 * iWARP one should carry the remote traffic, as UCX cannot drive it. */
static void verbs_probe(const rcoll_config_t *cfg, rcoll_tl_probe_t *out)
{
    rcoll_verbs_port_t p;

    memset(out, 0, sizeof(*out));
    if (rcoll__verbs_select(cfg, &p, out->reason, sizeof(out->reason)) != RCOLL_OK) {
        return;
    }
    out->available = 1;
    out->prefer_remote = p.kind == RCOLL_VERBS_KIND_IWARP;
    snprintf(out->reason, sizeof(out->reason), "%s:%d %s", p.dev, p.port,
             rcoll__verbs_kind_name(p.kind));
}

const rcoll_tl_ops_t rcoll_tl_verbs_ops = {
    .name         = "verbs",
    .probe        = verbs_probe,
    .open         = verbs_open,
    .close        = verbs_close,
    .address      = verbs_address,
    .connect      = verbs_connect,
    .send         = rcoll__verbs_send,
    .mem_reg      = rcoll__verbs_mem_reg,
    .pack_rkey    = rcoll__verbs_pack_rkey,
    .mem_dereg    = rcoll__verbs_mem_dereg,
    .put          = rcoll__verbs_put,
    .progress     = rcoll__verbs_progress,
    .caps         = verbs_caps,
    .max_msg_size = verbs_max_msg_size,
    .probe_peer   = rcoll__verbs_probe_peer,
};
