/*
 * verbs_int.h - the raw verbs backend's objects, shared by its files.
 *
 * One instance (rcoll_tl) owns every verbs resource: one protection domain,
 * a completion queue per RCOLL_VERBS_CQ_PEERS QPs made (verbs_cqset.c),
 * one RC queue pair per connected peer (rdma_cm:
 * made on first use), a pool of registered send buffers and the receive
 * buffers: one shared receive queue with a fixed pool (RCOLL_VERBS_SRQ,
 * IB and RoCE) or each connected peer's own (iWARP, or SRQ off).
 * Files: verbs_device.c (discovery, classification, GID),
 * verbs_tl.c (open/close/ops), verbs_addr.c (address blob), verbs_qp.c
 * (QPs, manual INIT->RTR->RTS), verbs_cm.c (rdma_cm), verbs_send.c (eager
 * with credits), verbs_put.c (RDMA WRITE), verbs_mr.c (registrations and
 * rcache), verbs_cq.c (progress, completions, errors), verbs_cqset.c (the
 * CQs), verbs_srq.c (the shared receive queue), verbs_qpmap.c (QP number ->
 * peer, for its completions).
 */
#ifndef RCOLL_VERBS_INT_H
#define RCOLL_VERBS_INT_H

#include <stdint.h>
#include <netinet/in.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include "transport.h"
#include "list.h"
#include "log.h"
#include "auth.h"
#include "verbs_credit.h"
#include "verbs_gid.h"
#include "verbs_qpmap.h"
#include "verbs_rcache.h"
#include "verbs_rkey.h"

typedef enum {
    RCOLL_VERBS_KIND_IB = 0,
    RCOLL_VERBS_KIND_ROCE_V1,
    RCOLL_VERBS_KIND_ROCE_V2,
    RCOLL_VERBS_KIND_IWARP,
    RCOLL_VERBS_KIND_UNKNOWN
} rcoll_verbs_kind_t;

/* What we know of one port. */
typedef struct rcoll_verbs_port {
    char               dev[64];
    int                port;
    rcoll_verbs_kind_t kind;
    struct ibv_port_attr attr;
    int                gid_index;        /* -1 if none usable */
    union ibv_gid      gid;
    char               gid_why[96];
} rcoll_verbs_port_t;

/* Connection set-up: manual (out of band through the PMIx exchange) or rdma_cm. */
typedef enum { RCOLL_VERBS_CM_OOB = 1, RCOLL_VERBS_CM_RDMACM = 2 } rcoll_verbs_cm_t;

typedef enum {
    RCOLL_VERBS_EP_IDLE = 0,      /* no connection: none needed yet (rdma_cm connects
                                     on first use, verbs_cm.c) or connect() not called */
    RCOLL_VERBS_EP_CONNECTING,    /* rdma_cm in progress */
    RCOLL_VERBS_EP_CONNECTED,
    RCOLL_VERBS_EP_FAILED
} rcoll_verbs_ep_state_t;

/* Work request kinds: every wr_id points to a struct starting with one. */
typedef enum {
    RCOLL_VERBS_WR_RECV = 1,
    RCOLL_VERBS_WR_SEND,          /* from a bounce buffer */
    RCOLL_VERBS_WR_INLINE,        /* inline SEND or inline credit WRITE */
    RCOLL_VERBS_WR_PUT,
    RCOLL_VERBS_WR_CREDIT         /* credit WRITE from the credit source slot */
} rcoll_verbs_wr_kind_t;

typedef struct rcoll_verbs_wrctx {
    uint8_t kind;
    int     peer;
} rcoll_verbs_wrctx_t;

/* A registered send or receive buffer. */
typedef struct rcoll_verbs_buf {
    rcoll_verbs_wrctx_t     wr;       /* first */
    uint32_t                gen;      /* receive: the QP generation it was posted to */
    char                   *data;
    struct rcoll_verbs_buf *next;     /* free list */
} rcoll_verbs_buf_t;

/* The 8-byte header of every SEND. */
#define RCOLL_VERBS_BH_SIZE  8
#define RCOLL_VERBS_BH_DATA  1
#define RCOLL_VERBS_BH_BYE   2     /* rdma_cm: the sender closes; a disconnect follows */
#define RCOLL_VERBS_BH_HELLO 3     /* rdma_cm: the connecting side's first message */

/* A message queued because no credit, buffer or send slot was free. */
typedef struct rcoll_verbs_pending {
    rcoll_list_t link;
    int          peer;
    uint8_t      type;            /* RCOLL_VERBS_BH_* */
    size_t       len;
    char         data[];
} rcoll_verbs_pending_t;

/* A put: one or more RDMA WRITEs. */
typedef struct rcoll_verbs_put {
    rcoll_verbs_wrctx_t         wr;   /* first */
    rcoll_list_t                link; /* ep->puts (queued or posted) */
    rcoll_tl_completion_t      *comp;
    const char                 *laddr;
    uint64_t                    raddr;
    uint32_t                    rkey;
    size_t                      len, posted;
    int                         outstanding;   /* WRs posted, not completed */
    int                         fenced;        /* iWARP: the closing READ is posted */
    int                         delivered;     /* the peer failed: comp already called;
                                                  kept only for its flush completions */
    rcoll_status_t              status;
    rcoll_verbs_rcache_entry_t *reg;
} rcoll_verbs_put_t;

typedef struct rcoll_verbs_ep {
    int                    peer;
    rcoll_verbs_ep_state_t state;
    rcoll_status_t         fail_status;
    int                    error_reported;      /* peer_error upcall made */
    struct ibv_qp         *qp;
    struct rdma_cm_id     *cm_id;
    uint32_t               gen;                 /* bumped when the QP is replaced */
    int                    sq_avail;
    rcoll_verbs_credit_t   credit;
    rcoll_verbs_buf_t     *rbufs;               /* per-peer mode (no SRQ): depth receive
                                                   buffers for this peer,
                                                   new descriptors for each QP (old ones
                                                   may still have flush completions) */
    char                  *rmem;                /* their memory: made with the peer's first
                                                   QP (verbs_qp.c), kept until close */
    struct ibv_mr         *rmr;
    int                    recvs_posted;
    rcoll_list_t           pending;             /* queued sends, oldest first */
    rcoll_list_t           puts;                /* puts not yet completed */
    rcoll_verbs_wrctx_t    inline_ctx;          /* wr_id of inline WRs */
    rcoll_verbs_wrctx_t    credit_ctx;          /* wr_id of the credit WRITE */
    int                    credit_inflight;
    int                    busy;                /* on the scan: queued work or an error to report */
    int                    puts_unposted;       /* puts with WRITEs still to post */
    char                   fail_reason[200];
    /* the peer's credit slot for us */
    uint64_t               rcredit_addr;
    uint32_t               rcredit_rkey;
    /* rdma_cm: the peer's listener and the set-up deadline */
    struct sockaddr_storage raddr;
    double                 deadline, retry_at;
    int                    retries;
    int                    have_addr;           /* connect() gave us its blob */
    int                    qp_ready;            /* rdma_cm: ESTABLISHED */
    int                    active;              /* rdma_cm: we connect, the peer accepts */
    const char            *cm_step;             /* rdma_cm: what the set-up waits for */
    const char            *cm_last_error;       /* rdma_cm: how the last attempt ended */
    int                    bye;                 /* the peer said it is closing */
    int                    heard;               /* a message arrived from the peer */
    int                    disconnected;        /* rdma_cm: DISCONNECTED seen, CQ not yet drained */
    uint64_t               cm_nonce;            /* rdma_cm: this attempt's (verbs_cm.c) */
    uint64_t               cm_seen[4];          /* rdma_cm: nonces of requests accepted */
    unsigned               cm_nseen;
} rcoll_verbs_ep_t;

struct rcoll_tl {
    rcoll_tl_params_t      params;
    rcoll_config_t         config;
    int                    rank, size;
    rcoll_verbs_port_t     port;
    rcoll_verbs_cm_t       cm;
    struct ibv_context    *ctx;
    struct ibv_pd         *pd;
    struct ibv_cq        **cqs;                 /* [ncqs]: completion queues, made as QPs come */
    int                    ncqs, cqs_cap;
    int                    cq_peers;            /* QPs a CQ is sized for (RCOLL_VERBS_CQ_PEERS) */
    int                    cq_fill;             /* QPs made on the newest CQ */
    int                    cq_size;             /* entries of each CQ */
    uint32_t               psn;
    int                    depth;               /* receive buffers per peer, or in SRQ
                                                   mode the credit window of each peer */
    int                    sq_depth;
    uint32_t               max_inline;
    size_t                 buf_size;            /* bytes per bounce/receive buffer */
    char                  *bufmem;              /* the send buffers, one registration */
    struct ibv_mr         *buf_mr;
    rcoll_verbs_buf_t     *sbufs, *sfree;
    void                 **graveyard;           /* receive descriptors of replaced QPs */
    int                    ngraveyard;
    int                    nsbufs;
    /* SRQ mode (verbs_srq.c): srq != NULL; no per-peer receive buffers */
    struct ibv_srq        *srq;
    int                    srq_size;            /* buffers in the pool; 0: per-peer mode */
    char                  *srq_mem;
    struct ibv_mr         *srq_mr;
    rcoll_verbs_buf_t     *srq_bufs;            /* [srq_size] */
    int                    srq_lost;            /* buffers a failed re-post took out */
    unsigned long          srq_stale;           /* completions of QPs no longer known */
    rcoll_verbs_qpmap_t    qpmap;               /* qp_num -> peer, every live QP */
    uint32_t              *credit_slots;        /* [size]: peers write their freed counts */
    uint32_t              *credit_src;          /* [size]: our counts, source of the WRITEs */
    uint32_t              *read_sink;           /* [size]: where iWARP put fences read to */
    struct ibv_mr         *credit_mr;           /* all three arrays, local access only */
    struct ibv_mr        **slot_mrs;            /* [size]: credit_slots[p], remote write for p */
    rcoll_verbs_ep_t      *eps;                 /* [size] */
    int                    nbusy;               /* eps with ep->busy set */
    rcoll_list_t           self_msgs;           /* send() to ourselves */
    rcoll_list_t           done_puts;           /* completions to deliver */
    int                    in_progress;
    int                    closing;             /* close(): no more upcalls */
    int                    ndisconnected;
    /* rdma_cm */
    struct rdma_event_channel *ch;
    struct rdma_cm_id     *listen_id;
    struct sockaddr_storage laddr;              /* listener's address and port */
    double                 conn_timeout;        /* seconds for a connection set-up */
    double                 next_cm_check;
    int                    cm_waiting;          /* eps still connecting */
    rcoll_auth_limiter_t   cm_rejects;          /* log of refused requests */
    unsigned               nqps;                /* QPs created so far (tests, the close log) */
    unsigned               nconnected;          /* peers connected so far */
    /* registrations of put sources */
    rcoll_verbs_rcache_t   rcache;
    int                    pagemap_fd;
    /* the address blob */
    uint8_t               *blob;
    size_t                 blob_len;
};

struct rcoll_tl_mr {
    struct ibv_mr *mr;
    void          *addr;
    size_t         len;
    unsigned       access;
};

/* verbs_device.c */
const char *rcoll__verbs_kind_name(rcoll_verbs_kind_t kind);
rcoll_status_t rcoll__verbs_port_query(struct ibv_context *ctx, int port, int gid_override,
                                       rcoll_verbs_port_t *out);
rcoll_status_t rcoll__verbs_select(const rcoll_config_t *cfg, rcoll_verbs_port_t *out,
                                   char *why, size_t len);
struct ibv_context *rcoll__verbs_open_by_name(const char *name);

/* verbs_cqset.c: the CQs, one more per cq_peers QPs made */
rcoll_status_t rcoll__verbs_cq_add(rcoll_tl_t *tl);
struct ibv_cq *rcoll__verbs_cq_for_qp(rcoll_tl_t *tl);     /* NULL: failed (logged) */
/* Polls every CQ, handing each completion to handle; the number handled,
 * or -1 if a poll failed (logged). */
int rcoll__verbs_cq_poll(rcoll_tl_t *tl, void (*handle)(rcoll_tl_t *, const struct ibv_wc *));
void rcoll__verbs_cq_destroy_all(rcoll_tl_t *tl);

/* verbs_qp.c */
rcoll_status_t rcoll__verbs_qp_create(rcoll_tl_t *tl, rcoll_verbs_ep_t *ep, struct rdma_cm_id *id);
void           rcoll__verbs_qp_destroy(rcoll_tl_t *tl, rcoll_verbs_ep_t *ep);
/* rdma_cm: drop the QP a connection attempt made on `id` (if it made one),
 * leaving `id` itself to the caller: an id can be destroyed only once its
 * event is acknowledged (verbs_cm.c).  Like qp_destroy, ep->cm_id is cleared
 * and ep->gen bumped. */
void           rcoll__verbs_qp_drop(rcoll_tl_t *tl, rcoll_verbs_ep_t *ep, struct rdma_cm_id *id);
/* SRQ mode, rdma_cm: the short min_rnr_timer on an established QP. */
void           rcoll__verbs_qp_rnr_timer(rcoll_tl_t *tl, rcoll_verbs_ep_t *ep);
rcoll_status_t rcoll__verbs_qp_post_recvs(rcoll_tl_t *tl, rcoll_verbs_ep_t *ep);
rcoll_status_t rcoll__verbs_qp_repost(rcoll_tl_t *tl, rcoll_verbs_ep_t *ep, rcoll_verbs_buf_t *b);
rcoll_status_t rcoll__verbs_qp_connect_oob(rcoll_tl_t *tl, rcoll_verbs_ep_t *ep, uint32_t qpn,
                                           uint32_t psn, uint16_t lid, const uint8_t gid[16],
                                           enum ibv_mtu mtu);

/* verbs_srq.c: the shared receive queue.  choose: after size_queues, sets
 * srq_size (0: per-peer mode) from RCOLL_VERBS_SRQ and the device, logging
 * the choice; open: the SRQ and its posted pool; close: after every QP. */
rcoll_status_t rcoll__verbs_srq_choose(rcoll_tl_t *tl, const struct ibv_device_attr *da);
rcoll_status_t rcoll__verbs_srq_open(rcoll_tl_t *tl);
rcoll_status_t rcoll__verbs_srq_repost(rcoll_tl_t *tl, rcoll_verbs_buf_t *b);
void           rcoll__verbs_srq_close(rcoll_tl_t *tl);

/* verbs_addr.c: the blob published through PMIx */
rcoll_status_t rcoll__verbs_addr_pack(rcoll_tl_t *tl);
rcoll_status_t rcoll__verbs_addr_connect(rcoll_tl_t *tl, rcoll_verbs_ep_t *ep,
                                         const void *addr, size_t len);

/* verbs_cm.c */
rcoll_status_t rcoll__verbs_cm_open(rcoll_tl_t *tl);
void           rcoll__verbs_cm_close(rcoll_tl_t *tl);
/* rdma_cm connects on first use: a send or put to a peer without a
 * connection calls cm_want, which starts one unless one is being made. */
void           rcoll__verbs_cm_want(rcoll_tl_t *tl, rcoll_verbs_ep_t *ep);
int            rcoll__verbs_cm_progress(rcoll_tl_t *tl);
void           rcoll__verbs_cm_maybe_connected(rcoll_tl_t *tl, rcoll_verbs_ep_t *ep);

/* verbs_close.c */
void rcoll__verbs_drain(rcoll_tl_t *tl);

/* verbs_send.c */
rcoll_status_t rcoll__verbs_send_bye(rcoll_tl_t *tl, rcoll_verbs_ep_t *ep);
rcoll_status_t rcoll__verbs_send_hello(rcoll_tl_t *tl, rcoll_verbs_ep_t *ep);
void rcoll__verbs_ep_busy(rcoll_tl_t *tl, rcoll_verbs_ep_t *ep);
int  rcoll__verbs_self_deliver(rcoll_tl_t *tl);
void rcoll__verbs_ep_connected(rcoll_tl_t *tl, rcoll_verbs_ep_t *ep);
int  rcoll__verbs_ep_flush(rcoll_tl_t *tl, rcoll_verbs_ep_t *ep);
void rcoll__verbs_credit_return(rcoll_tl_t *tl, rcoll_verbs_ep_t *ep);
/* transport.h's probe_peer: a credit WRITE that changes nothing at the peer. */
void rcoll__verbs_probe_peer(rcoll_tl_t *tl, int peer);
rcoll_status_t rcoll__verbs_send(rcoll_tl_t *tl, int peer, const void *hdr, size_t hdr_len,
                                 const void *data, size_t len);

/* verbs_put.c */
rcoll_status_t rcoll__verbs_put(rcoll_tl_t *tl, int peer, const void *laddr, size_t len,
                                uint64_t raddr, const void *rkey, size_t rkey_len,
                                rcoll_tl_completion_t *comp);
int  rcoll__verbs_put_post(rcoll_tl_t *tl, rcoll_verbs_ep_t *ep);
void rcoll__verbs_put_wr_done(rcoll_tl_t *tl, rcoll_verbs_put_t *p, rcoll_status_t status);
int  rcoll__verbs_put_deliver(rcoll_tl_t *tl);
int  rcoll__verbs_put_fail_all(rcoll_tl_t *tl, rcoll_verbs_ep_t *ep);

/* verbs_mr.c */
rcoll_status_t rcoll__verbs_mr_init(rcoll_tl_t *tl);
void           rcoll__verbs_mr_cleanup(rcoll_tl_t *tl);
struct ibv_mr *rcoll__verbs_reg(rcoll_tl_t *tl, void *addr, size_t len, int access, const char *what);
rcoll_status_t rcoll__verbs_mem_reg(rcoll_tl_t *tl, void *addr, size_t len, unsigned access,
                                    rcoll_tl_mr_t **mr);
rcoll_status_t rcoll__verbs_pack_rkey(rcoll_tl_t *tl, rcoll_tl_mr_t *mr, void *buf, size_t *len);
void           rcoll__verbs_mem_dereg(rcoll_tl_t *tl, rcoll_tl_mr_t *mr);

/* verbs_cq.c */
int  rcoll__verbs_progress(rcoll_tl_t *tl);
/* Mark a peer failed: queued work fails, posted work flushes, peer_error
 * is reported from progress().  `reason` is logged with peer and device. */
void rcoll__verbs_ep_fail(rcoll_tl_t *tl, rcoll_verbs_ep_t *ep, rcoll_status_t status,
                          const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* ibv_post_send(ep->qp) returned rc: fail the peer (fmt: the work request,
 * for the message), as PEER_FAILED where the QP shows that the provider
 * ended an rdma_cm connection, else TRANSPORT.  The status the peer failed
 * with. */
rcoll_status_t rcoll__verbs_post_failed(rcoll_tl_t *tl, rcoll_verbs_ep_t *ep, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

double rcoll__verbs_now(void);

#endif
