/*
 * ucx_tl.c - the UCX backend (UCP).
 *
 * Messages: one active message id; the payload is a 24-byte backend header
 *   0 mac (8)   8 sender's world rank (4)   12 magic (4)   16 seq (8)
 * followed by rcoll's message, sent with UCP_AM_SEND_FLAG_EAGER from a pool
 * of bounce buffers (so the caller's buffer is free at once) and delivered
 * to the core from the AM callback.
 *
 * Authentication (docs/security.md): UCX tells the receiver nothing about
 * who sent an active message, and anyone who learns a worker address can
 * create an endpoint to it.  So mac is the MAC of bytes 8.. (this header,
 * rcoll's header, a control message's body and the length, not an eager
 * message's data: rcoll__auth_msg_mac) under the key of the pair (sender, receiver) derived
 * from the job's secret (common/auth.h), and seq counts the sender's
 * messages to that receiver from 1; the receiver drops (one rate-limited log line) a
 * message whose mac does not verify under the key of the rank it claims,
 * and one whose seq it has accepted before or that is older than the
 * replay window (UCX does not promise order on an endpoint: a window of
 * RCOLL_AUTH_WINDOW, not a strict counter).
 *
 * RDMA: UCX cannot revoke a remote key (tcp and cma have none to revoke; on
 * InfiniBand ucp_mem_unmap only drops the registration cache's reference),
 * so this backend grants no remote write: mem_reg refuses REMOTE_WRITE and
 * maps with exactly the protection asked for, and the core's rendezvous
 * pulls with get() instead (src/p2p.c, docs/protocols.md).  The packed key
 * carries {address, length} of the region ahead of UCX's packed rkey so
 * that get() refuses any read outside what was advertised.  get() is
 * ucp_get_nbx; its completion is queued and reported from progress().
 * abort_peer() force-closes the endpoint: UCX purges what is in flight on
 * it, so the receiver alone decides when writes into its buffer stop.
 *
 * Endpoints on first use (docs/scaling.md "Memory and start-up"), in jobs
 * of more than UCX_LAZY_AUTO_RANKS ranks or with RCOLL_UCX_LAZY_EPS=on
 * (smaller jobs make every endpoint in connect(), connect_now, as UCX 1.13
 * can abort on an endpoint made to a peer already dead): connect()
 * only keeps the peer's worker address, copied into one arena for all peers
 * (addrs, with an offset and a length per peer); the ucp_ep is created by
 * the first send, get or probe to that peer (ep_first_use).  A rank that
 * only receives from a peer needs no endpoint to it: UCX delivers active
 * messages to the worker, and rcoll's own header names the sender.  So
 * rcoll_init creates no endpoint, and a process holds one per peer it has
 * sent to.  On the hot path eps[peer] == NULL was already tested; it now
 * leads to ep_first_use instead of an error, so the cost is unchanged.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucp/api/ucp.h>
#include "transport.h"
#include "log.h"
#include "auth.h"

#define UCX_AM_ID        7
#define UCX_MAGIC        0x72636f6cu      /* "rcol" */
#define UCX_TL_HDR       24
#define UCX_MAC_OFF      8                /* the mac covers the bytes from here */
#define UCX_BOUNCE_COUNT 128
#define UCX_MAX_MSG      (1u << 20)


/* RCOLL_UCX_LAZY_EPS=auto: endpoints on first use above this many ranks.
 * Below, making all of them in rcoll_init costs at most ~256 x 18 KiB and
 * ~256 x 0.3 ms per process (docs/scaling.md). */
#define UCX_LAZY_AUTO_RANKS 256

typedef struct bounce {
    struct bounce   *next;             /* the free list, or the queue of a peer wiring up */
    struct rcoll_tl *tl;
    int              pooled;
    int              peer;             /* queued: to whom, and how many bytes */
    size_t           len;
    uint8_t          data[];
} bounce_t;

/* A finished get, waiting for progress() to report it. */
typedef struct get_done {
    struct get_done       *next;
    struct get_ctx        *owner;      /* the get it is embedded in, or NULL (its own allocation) */
    rcoll_tl_completion_t *comp;
    rcoll_status_t         status;
} get_done_t;

/* A get in flight: in tl->gets until UCX completes it or abort_peer gives up on it. */
typedef struct get_ctx {
    struct get_ctx  *next, **pprev;
    struct rcoll_tl *tl;
    ucp_rkey_h       rkey;
    int              peer;
    int              orphaned;         /* abort_peer reported it; UCX's callback only frees it */
    get_done_t       done;
} get_ctx_t;

/* Keys and sequence numbers of one peer (auth.h). */
typedef struct {
    uint8_t             tx_key[RCOLL_SIPHASH_KEY_LEN];   /* this rank -> peer */
    uint8_t             rx_key[RCOLL_SIPHASH_KEY_LEN];   /* peer -> this rank */
    uint64_t            tx_seq;                          /* last sent */
    rcoll_auth_window_t rx_win;
    int                 keyed;
} peer_auth_t;

/* A get or probe that wanted a new endpoint inside ucp_worker_progress:
 * done once progress has returned (ep_later). */
typedef struct later {
    struct later          *next;
    int                    peer;
    int                    is_get;      /* else a probe */
    void                  *laddr;
    size_t                 len;
    uint64_t               raddr;
    rcoll_tl_completion_t *comp;
    size_t                 rkey_len;
    uint8_t                rkey[];      /* a copy: the caller's lies in a message */
} later_t;

/* Where a peer's worker address lies in tl->addrs (len 0: no address). */
typedef struct {
    uint32_t off, len;
} peer_addr_t;

struct rcoll_tl {
    ucp_context_h        ucp;
    ucp_worker_h         worker;
    ucp_address_t       *addr;
    size_t               addr_len;
    int                  rank, size;
    const int           *node_of;
    ucp_ep_h            *eps;             /* NULL: not created yet, wiring up, or closed (failed[] set) */
    ucp_ep_h            *wiring;          /* created, its wire-up flush not yet complete */
    bounce_t            *q_head, **q_tail;   /* messages for peers wiring up */
    int                  q_check;         /* a wire-up ended or a peer failed: look at the queue */
    int                  in_progress;     /* inside ucp_worker_progress: no ucp_ep_create now */
    int                  create_later;    /* some endpoint waits for progress to return */
    later_t             *later_head, **later_tail;   /* gets and probes waiting for that */
    int                 *failed;
    peer_addr_t         *peer_addr;       /* per peer, from connect() */
    uint8_t             *addrs;           /* the peers' worker addresses, one arena */
    size_t               addrs_used, addrs_cap;
    rcoll_tl_callbacks_t cb;
    size_t               bounce_size;
    bounce_t            *free_bounce;
    void                *bounce_mem;
    int                  inflight;        /* sends not completed */
    int                  closing;         /* peers going away now is expected */
    int                  to_report;       /* some failed[] is 2: aborted, not yet reported */
    int                  lazy;            /* endpoints on first use (RCOLL_UCX_LAZY_EPS), else in connect() */
    get_ctx_t           *gets;            /* gets in flight */
    get_done_t          *done_head, **done_tail;   /* finished gets to report */
    const rcoll_auth_t  *auth;            /* the job's secret */
    peer_auth_t         *pa;              /* per peer */
    rcoll_auth_limiter_t rejects;         /* log of dropped messages */
};

struct rcoll_tl_mr {
    ucp_mem_h memh;
    void     *addr;
    size_t    len;
};

typedef struct {
    uint64_t addr;
    uint64_t len;
} ucx_rkey_hdr_t;

static void bounce_put(bounce_t *b);
static void queue_drain(struct rcoll_tl *tl);
static void after_progress(struct rcoll_tl *tl);
static void later_drop_all(struct rcoll_tl *tl);
static void ucx_probe_peer(rcoll_tl_t *tl, int peer);

/* Every ucp_worker_progress of this transport goes through here: the UCX
 * callbacks it runs (am_cb, hence the core's receive handler; ep_error_cb,
 * hence its peer-error handler) may send or get, and an endpoint they need
 * is created only once progress has returned (ep_first_use). */
static unsigned worker_progress(struct rcoll_tl *tl)
{
    tl->in_progress++;
    unsigned n = ucp_worker_progress(tl->worker);
    tl->in_progress--;
    return n;
}

static void put32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static uint32_t get32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static void put64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }
static uint64_t get64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }

/* The keys of the pair with peer, derived once the job's secret is known. */
static peer_auth_t *peer_auth(struct rcoll_tl *tl, int peer)
{
    peer_auth_t *a = &tl->pa[peer];
    if (!a->keyed && tl->auth->ready) {
        rcoll__auth_pair_key(tl->auth, "ucx", (uint64_t)tl->rank, (uint64_t)peer, a->tx_key);
        rcoll__auth_pair_key(tl->auth, "ucx", (uint64_t)peer, (uint64_t)tl->rank, a->rx_key);
        a->keyed = 1;
    }
    return a->keyed ? a : NULL;
}

static int ep_rank(struct rcoll_tl *tl, ucp_ep_h ep)
{
    for (int r = 0; r < tl->size; r++) {
        if (tl->eps[r] == ep || tl->wiring[r] == ep) {
            return r;
        }
    }
    return -1;
}

static void ep_error_cb(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    struct rcoll_tl *tl = arg;
    int peer = ep_rank(tl, ep);
    if (peer < 0 || tl->failed[peer] || tl->closing) {
        return;
    }
    tl->failed[peer] = 1;
    tl->q_check = 1;                 /* drop what waits for its wire-up */
    char reason[160];
    snprintf(reason, sizeof(reason), "UCX reports endpoint error: %s", ucs_status_string(status));
    tl->cb.peer_error(tl->cb.arg, peer, RCOLL_ERR_PEER_FAILED, reason);
}

static ucs_status_t am_cb(void *arg, const void *header, size_t header_length, void *data,
                          size_t length, const ucp_am_recv_param_t *param)
{
    struct rcoll_tl *tl = arg;
    if (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) {
        rcoll__auth_reject(&tl->rejects, "ucx: dropping an unexpected rendezvous active message "
                           "of %zu bytes", length);
        return UCS_OK;
    }
    const uint8_t *d = data;
    if (length < UCX_TL_HDR || get32(d + 12) != UCX_MAGIC) {
        rcoll__auth_reject(&tl->rejects, "ucx: dropping a malformed message of %zu bytes", length);
        return UCS_OK;
    }
    uint32_t src = get32(d + 8);
    if (src >= (uint32_t)tl->size) {
        rcoll__auth_reject(&tl->rejects, "ucx: dropping a message from out-of-range rank %u", src);
        return UCS_OK;
    }
    peer_auth_t *a = peer_auth(tl, (int)src);
    uint64_t mac = a ? rcoll__auth_msg_mac(a->rx_key, d + UCX_MAC_OFF, length - UCX_MAC_OFF,
                                           UCX_TL_HDR - UCX_MAC_OFF) : 0;
    if (a == NULL || !rcoll__auth_equal64(mac, get64(d))) {
        rcoll__auth_reject(&tl->rejects, "ucx: dropping a %zu-byte message that claims to come "
                           "from rank %u: its MAC does not verify (not from this job)", length, src);
        return UCS_OK;
    }
    uint64_t seq = get64(d + 16);
    if (!rcoll__auth_window_accept(&a->rx_win, seq)) {
        rcoll__auth_reject(&tl->rejects, "ucx: dropping a replayed message from rank %u (sequence "
                           "%llu, latest %llu)", src, (unsigned long long)seq,
                           (unsigned long long)a->rx_win.top);
        return UCS_OK;
    }
    tl->cb.recv(tl->cb.arg, (int)src, (const uint8_t *)data + UCX_TL_HDR, length - UCX_TL_HDR);
    return UCS_OK;
}

/* Whether UCX_TLS lets UCX use posix or sysv (unset: it does); else UCX
 * would warn that nothing takes MM_ERROR_HANDLING. */
static int mm_in_tls(void)
{
    const char *tls = getenv("UCX_TLS");
    if (tls == NULL || *tls == '\0' || *tls == '^') {
        return 1;
    }
    return strstr(tls, "posix") != NULL || strstr(tls, "sysv") != NULL ||
           strstr(tls, "sm") != NULL || strstr(tls, "all") != NULL;
}

static rcoll_status_t ucx_open(const rcoll_tl_params_t *p, rcoll_tl_t **out)
{
    struct rcoll_tl *tl = calloc(1, sizeof(*tl));
    if (tl == NULL) {
        return RCOLL_ERR_NO_MEMORY;
    }
    tl->rank = p->rank;
    tl->size = p->size;
    tl->node_of = p->node_of;
    tl->cb = p->cb;
    tl->auth = p->auth != NULL ? p->auth : &rcoll__auth_none;
    const char *lazy = p->config->ucx_lazy_eps;
    tl->lazy = strcmp(lazy, "on") == 0 || (strcmp(lazy, "off") != 0 && p->size > UCX_LAZY_AUTO_RANKS);
    rcoll_debug("ucx: endpoints %s (RCOLL_UCX_LAZY_EPS=%s, %d ranks)",
                tl->lazy ? "on first use" : "made in rcoll_init", lazy[0] ? lazy : "auto", p->size);
    tl->done_tail = &tl->done_head;
    tl->q_tail = &tl->q_head;
    tl->later_tail = &tl->later_head;
    tl->wiring = calloc((size_t)p->size, sizeof(*tl->wiring));
    tl->eps = calloc((size_t)p->size, sizeof(*tl->eps));
    tl->failed = calloc((size_t)p->size, sizeof(int));
    tl->pa = calloc((size_t)p->size, sizeof(*tl->pa));
    tl->peer_addr = calloc((size_t)p->size, sizeof(*tl->peer_addr));
    tl->bounce_size = UCX_TL_HDR + p->config->eager_limit + 64 + RCOLL_TL_RKEY_MAX;
    if (tl->bounce_size > UCX_MAX_MSG + UCX_TL_HDR) {
        tl->bounce_size = UCX_MAX_MSG + UCX_TL_HDR;
    }
    size_t stride = (sizeof(bounce_t) + tl->bounce_size + 63) & ~(size_t)63;
    tl->bounce_mem = calloc(UCX_BOUNCE_COUNT, stride);
    if (!tl->eps || !tl->wiring || !tl->failed || !tl->pa || !tl->peer_addr || !tl->bounce_mem) {
        free(tl->eps); free(tl->wiring); free(tl->failed); free(tl->pa); free(tl->peer_addr);
        free(tl->bounce_mem); free(tl);
        return RCOLL_ERR_NO_MEMORY;
    }
    for (int i = 0; i < UCX_BOUNCE_COUNT; i++) {
        bounce_t *b = (bounce_t *)((char *)tl->bounce_mem + (size_t)i * stride);
        b->tl = tl;
        b->pooled = 1;
        b->next = tl->free_bounce;
        tl->free_bounce = b;
    }

    ucp_config_t *config;
    ucs_status_t s = ucp_config_read(NULL, NULL, &config);
    if (s != UCS_OK) {
        rcoll_error("ucx: ucp_config_read failed: %s", ucs_status_string(s));
        goto err;
    }
    /* posix and sysv take part in peer-failure handling only when asked
     * (UCX_POSIX_ERROR_HANDLING, UCX_SYSV_ERROR_HANDLING: n by default; the
     * field is MM_ERROR_HANDLING for both); a value the user set wins. */
    if (mm_in_tls() && getenv("UCX_POSIX_ERROR_HANDLING") == NULL &&
        getenv("UCX_SYSV_ERROR_HANDLING") == NULL && ucp_config_modify(config, "MM_ERROR_HANDLING", "y") != UCS_OK) {
        rcoll_warn("ucx: cannot turn on UCX_POSIX/SYSV_ERROR_HANDLING: same-node endpoints may "
                   "use tcp");
    }
    ucp_params_t params = {
        .field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_NAME,
        .features = UCP_FEATURE_AM | UCP_FEATURE_RMA,
        .name = "rcoll",
    };
    s = ucp_init(&params, config, &tl->ucp);
    ucp_config_release(config);
    if (s != UCS_OK) {
        rcoll_error("ucx: ucp_init failed: %s (check UCX_TLS / UCX_NET_DEVICES)", ucs_status_string(s));
        goto err;
    }
    ucp_worker_params_t wparams = {
        .field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
        .thread_mode = UCS_THREAD_MODE_SINGLE,
    };
    s = ucp_worker_create(tl->ucp, &wparams, &tl->worker);
    if (s != UCS_OK) {
        rcoll_error("ucx: ucp_worker_create failed: %s", ucs_status_string(s));
        goto err_cleanup;
    }
    ucp_am_handler_param_t am = {
        .field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
                      UCP_AM_HANDLER_PARAM_FIELD_ARG,
        .id = UCX_AM_ID, .cb = am_cb, .arg = tl,
    };
    s = ucp_worker_set_am_recv_handler(tl->worker, &am);
    if (s == UCS_OK) {
        s = ucp_worker_get_address(tl->worker, &tl->addr, &tl->addr_len);
    }
    if (s != UCS_OK) {
        rcoll_error("ucx: worker set-up failed: %s", ucs_status_string(s));
        goto err_worker;
    }
    *out = tl;
    return RCOLL_OK;

err_worker:
    ucp_worker_destroy(tl->worker);
err_cleanup:
    ucp_cleanup(tl->ucp);
err:
    free(tl->eps); free(tl->wiring); free(tl->failed); free(tl->pa); free(tl->peer_addr);
    free(tl->bounce_mem); free(tl);
    return RCOLL_ERR_TRANSPORT;
}

static void get_unlink(get_ctx_t *g)
{
    *g->pprev = g->next;
    if (g->next != NULL) {
        g->next->pprev = g->pprev;
    }
}

static void wait_request(struct rcoll_tl *tl, ucs_status_ptr_t req)
{
    if (req == NULL || UCS_PTR_IS_ERR(req)) {
        return;
    }
    /* Bounded: closing endpoints to dead peers is forced, so this ends. */
    for (int i = 0; i < 10000000 && ucp_request_check_status(req) == UCS_INPROGRESS; i++) {
        worker_progress(tl);
    }
    ucp_request_free(req);
}

static void ucx_close(rcoll_tl_t *tl)
{
    /* Deliver what is still queued, then close without a handshake: peers
     * that finished first may already be gone, and waiting for them to
     * acknowledge would stall finalize. */
    /* Messages still waiting for a wire-up go first (bounded like
     * wait_request: a dead peer's wire-up ends in an error). */
    for (int i = 0; i < 10000000 && tl->q_head != NULL; i++) {
        worker_progress(tl);
        after_progress(tl);
    }
    later_drop_all(tl);
    while (tl->q_head != NULL) {
        bounce_t *b = tl->q_head;
        tl->q_head = b->next;
        rcoll_warn("ucx: finalize: a %zu-byte message to rank %d never left: its endpoint did "
                   "not wire up", b->len, b->peer);
        bounce_put(b);
    }
    ucp_request_param_t none = { .op_attr_mask = 0 };
    wait_request(tl, ucp_worker_flush_nbx(tl->worker, &none));
    tl->closing = 1;
    while (tl->gets != NULL) {      /* the core waits for its gets: none are left normally */
        get_ctx_t *g = tl->gets;
        get_unlink(g);
        g->orphaned = 1;
        g->next = NULL;
        g->pprev = &g->next;
    }
    for (int r = 0; r < tl->size; r++) {
        if (tl->eps[r] == NULL && tl->wiring[r] != NULL) {
            tl->eps[r] = tl->wiring[r];
            tl->wiring[r] = NULL;
        }
        if (tl->eps[r] == NULL) {
            continue;
        }
        ucp_request_param_t p = { .op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
                                  .flags = 0 };
        wait_request(tl, ucp_ep_close_nbx(tl->eps[r], &p));
    }
    while (tl->done_head != NULL) {     /* completions nobody will progress */
        get_done_t *d = tl->done_head;
        tl->done_head = d->next;
        free(d->owner != NULL ? (void *)d->owner : (void *)d);
    }
    while (tl->q_head != NULL) {     /* queued while closing (from a callback): never sent */
        bounce_t *b = tl->q_head;
        tl->q_head = b->next;
        bounce_put(b);
    }
    later_drop_all(tl);
    ucp_worker_release_address(tl->worker, tl->addr);
    ucp_worker_destroy(tl->worker);
    ucp_cleanup(tl->ucp);
    free(tl->eps);
    free(tl->wiring);
    free(tl->failed);
    free(tl->pa);
    free(tl->peer_addr);
    free(tl->addrs);
    free(tl->bounce_mem);
    free(tl);
}

static rcoll_status_t ucx_address(rcoll_tl_t *tl, const void **addr, size_t *len)
{
    *addr = tl->addr;
    *len = tl->addr_len;
    return RCOLL_OK;
}

/* Create tl->eps[peer] (NULL on failure) from the kept worker address, with
 * UCX's peer-failure handling, as every endpoint has (see ep_first_use). */
static ucs_status_t ep_create(struct rcoll_tl *tl, int peer)
{
    ucp_ep_params_t p = {
        .field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                      UCP_EP_PARAM_FIELD_ERR_HANDLER,
        .address = (const ucp_address_t *)(tl->addrs + tl->peer_addr[peer].off),
        .err_mode = UCP_ERR_HANDLING_MODE_PEER,
        .err_handler = { .cb = ep_error_cb, .arg = tl },
    };
    ucs_status_t s = ucp_ep_create(tl->worker, &p, &tl->eps[peer]);
    if (s != UCS_OK) {
        tl->eps[peer] = NULL;
    }
    return s;
}

/*
 * RCOLL_UCX_LAZY_EPS off (auto: jobs of up to UCX_LAZY_AUTO_RANKS ranks):
 * the endpoint is made here, in rcoll_init, while every peer is alive, and
 * serves sends at once (UCX queues them during its own wire-up).  Why not
 * always on first use: UCX 1.13.1 aborts the process when an endpoint made
 * to a peer that is already dead fails with its wire-up request still
 * pending on ud_verbs (uct_ud_ep_pending_purge -> ucp_request_send_state_ff:
 * the assert that only EP_REMOVED, EP_CHECK or ACK wire-up messages are
 * purged there).  Seen in the soft-RDMA guest over rc_verbs + ud_verbs:
 * dead_check with RCOLL_LIVENESS=transport, 3 ranks: rank 0, whose
 * endpoint to the killed rank 2 is made on first use (by a probe, in the
 * run that logged it), aborted in 2 runs of 2 (2026-12-02).  Above the
 * threshold the O(p) endpoints are what the first-use design avoids, and
 * that risk stays (docs/scaling.md).
 */
static rcoll_status_t connect_now(struct rcoll_tl *tl, int peer)
{
    ucs_status_t s = ep_create(tl, peer);
    if (s != UCS_OK) {
        rcoll_error("ucx: cannot create an endpoint to rank %d: %s", peer, ucs_status_string(s));
        return RCOLL_ERR_TRANSPORT;
    }
    return RCOLL_OK;
}

/*
 * Keep the peer's worker address for ep_first_use.  The arena grows by
 * doubling, so p peers cost O(log p) allocations, not one each; it is
 * never shrunk (a peer's endpoint may be wanted at any time).
 */
static rcoll_status_t ucx_connect(rcoll_tl_t *tl, int peer, const void *addr, size_t len)
{
    if (len == 0 || len > UINT32_MAX || tl->addrs_used > UINT32_MAX - len) {
        rcoll_error("ucx: rank %d published a worker address of %zu bytes: unusable", peer, len);
        return RCOLL_ERR_BOOTSTRAP;
    }
    if (tl->addrs_cap - tl->addrs_used < len) {
        size_t cap = tl->addrs_cap != 0 ? tl->addrs_cap : len * 4;
        while (cap - tl->addrs_used < len) {
            cap *= 2;
        }
        uint8_t *a = realloc(tl->addrs, cap);
        if (a == NULL) {
            rcoll_error("ucx: out of memory keeping the address of rank %d (%zu bytes kept)", peer,
                        tl->addrs_used);
            return RCOLL_ERR_NO_MEMORY;
        }
        tl->addrs = a;
        tl->addrs_cap = cap;
    }
    memcpy(tl->addrs + tl->addrs_used, addr, len);
    tl->peer_addr[peer].off = (uint32_t)tl->addrs_used;
    tl->peer_addr[peer].len = (uint32_t)len;
    tl->addrs_used += len;
    return tl->lazy ? RCOLL_OK : connect_now(tl, peer);
}

typedef struct {
    struct rcoll_tl *tl;
    int              peer;
    ucp_ep_h         ep;
} wiring_t;

/* The wire-up flush of ep is over: it serves sends from now on. */
static void wired(struct rcoll_tl *tl, int peer, ucp_ep_h ep)
{
    if (tl->wiring[peer] == ep) {        /* else abort_peer closed it meanwhile */
        tl->wiring[peer] = NULL;
        tl->eps[peer] = ep;
        tl->q_check = 1;
    }
}

static void wired_cb(void *request, ucs_status_t status, void *user_data)
{
    wiring_t *w = user_data;
    if (status != UCS_OK) {
        rcoll_debug("ucx: wire-up of the endpoint to rank %d ended with %s", w->peer,
                    ucs_status_string(status));
    }
    wired(w->tl, w->peer, w->ep);
    ucp_request_free(request);
    free(w);
}

/*
 * A new endpoint serves no message until its wire-up is over: a flush of it
 * (non-blocking; wired_cb from progress), meanwhile sends to the peer are
 * queued (tl->q_head) and sent from progress().  Without this, UCX 1.13.1
 * over tcp aborts the process (ucs_fatal "unexpected error: Endpoint
 * timeout" in ucp_get_req_handler) when the peer of an endpoint still
 * wiring up dies with a software get in flight: 9 of 12 runs of the fault
 * matrix's ucx-tcp rndv cell (victim 0, 4 ranks) before, none on main,
 * whose endpoints were all made and wired up in rcoll_init.
 */
static void wire_up(struct rcoll_tl *tl, int peer, ucp_ep_h ep)
{
    tl->wiring[peer] = ep;
    wiring_t *w = malloc(sizeof(*w));
    ucs_status_ptr_t req = NULL;
    if (w != NULL) {
        *w = (wiring_t){ tl, peer, ep };
        ucp_request_param_t p = {
            .op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA,
            .cb.send = wired_cb,
            .user_data = w,
        };
        req = ucp_ep_flush_nbx(ep, &p);
    }
    if (w == NULL || req == NULL || UCS_PTR_IS_ERR(req)) {    /* done, or failed: an error
                                                                 callback tells */
        free(w);
        wired(tl, peer, ep);
    }
}

/*
 * The endpoint to peer, created now (or the one wiring up): the first send,
 * get or probe to it (off the hot path: eps[peer] was NULL).  It is in
 * eps[] only once wired up (wire_up): until then send() queues.  NULL with *st set when the peer
 * has failed (or this rank closed its endpoint: abort_peer), or with *st =
 * RCOLL_OK when UCX cannot create the endpoint: the peer is then taken as
 * failed and reported from the next progress(), like an endpoint error, and
 * the caller drops what it was to send (as a message in flight to a peer
 * that dies is lost).  Not an error returned from send() at once: the core
 * would act on it (revoke the communicator) before it knows which rank
 * failed, and its peers would not learn the name.
 *
 * Inside ucp_worker_progress (a UCX callback: the core answering an RTS
 * with a get, forwarding, reporting a failure) it creates nothing and
 * returns EP_LATER: the caller queues its message or get, and
 * after_progress() creates the endpoint once progress has returned.  UCX
 * does not expect ucp_ep_create from inside its progress: over tcp, with
 * the peer connecting to this worker at the same moment, it segfaulted in
 * uct_tcp_iface_progress (reading an rx buffer at address -8) right after
 * the core's get, on receiving an RTS, created the endpoint to the sender
 * from inside am_cb: each of 8 crashes (8 processes) of nb_check under --nodes
 * 2x2, 2x4 and 3x3 came right after such a creation, in the same process.
 *
 * Every endpoint gets UCX's peer-failure handling (ucx_open turns it on for
 * the shared-memory transports, which otherwise lack it and would send
 * same-node traffic over tcp).  Beyond reporting a dead peer, it is what
 * makes abort_peer() final: only endpoints with error handling track their
 * requests, so only there does a forced close purge a get in flight; without
 * it, the replies of a sw-emulated get still land after the close
 * (test/contract late_get, measured with UCX 1.13.1).
 */
#define EP_LATER ((ucp_ep_h)(uintptr_t)1)

static __attribute__((noinline)) ucp_ep_h ep_first_use(struct rcoll_tl *tl, int peer,
                                                        const char *what, rcoll_status_t *st)
{
    if (tl->failed[peer]) {
        rcoll_error("ucx: %s to rank %d: the peer has failed or its endpoint was closed", what, peer);
        *st = RCOLL_ERR_PEER_FAILED;
        return NULL;
    }
    if (tl->wiring[peer] != NULL) {
        return tl->wiring[peer];
    }
    const peer_addr_t *pa = &tl->peer_addr[peer];
    if (pa->len == 0) {
        rcoll_error("ucx: %s to rank %d: no address for it (not connected)", what, peer);
        *st = RCOLL_ERR_INTERNAL;
        return NULL;
    }
    if (tl->in_progress) {
        rcoll_debug("ucx: endpoint to rank %d wanted inside progress (%s): created after it", peer,
                    what);
        tl->create_later = 1;
        tl->q_check = 1;
        return EP_LATER;
    }
    ucs_status_t s = ep_create(tl, peer);
    if (s != UCS_OK) {
        /* The peer cannot be reached (e.g. a dead same-node peer's FIFO is
         * gone: "Shared memory error"): it has failed, as far as this rank
         * can tell; reported from the next progress(), like abort_peer. */
        rcoll_error("ucx: %s to rank %d: cannot create an endpoint: %s: taking the peer as failed",
                    what, peer, ucs_status_string(s));
        tl->failed[peer] = 2;
        tl->to_report = 1;
        *st = RCOLL_OK;
        return NULL;
    }
    rcoll_debug("ucx: endpoint to rank %d created (%s)", peer, what);
    ucp_ep_h ep = tl->eps[peer];
    tl->eps[peer] = NULL;
    wire_up(tl, peer, ep);
    return ep;
}

static void bounce_put(bounce_t *b)
{
    if (b->pooled) {
        b->next = b->tl->free_bounce;
        b->tl->free_bounce = b;
    } else {
        free(b);
    }
}

static void send_cb(void *request, ucs_status_t status, void *user_data)
{
    bounce_t *b = user_data;
    b->tl->inflight--;
    if (status != UCS_OK && status != UCS_ERR_CANCELED) {
        rcoll_debug("ucx: send completed with %s", ucs_status_string(status));
    }
    bounce_put(b);
    ucp_request_free(request);
}

/* Send the len bytes of bounce b on ep (an active message, eager): done at
 * once (b back to the pool), in flight (send_cb returns it), or an error
 * (b back to the pool). */
static ucs_status_t am_send(struct rcoll_tl *tl, ucp_ep_h ep, bounce_t *b, size_t len)
{
    ucp_request_param_t p = {
        .op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                        UCP_OP_ATTR_FIELD_FLAGS,
        .cb.send = send_cb,
        .user_data = b,
        .flags = UCP_AM_SEND_FLAG_EAGER,
    };
    ucs_status_ptr_t req = ucp_am_send_nbx(ep, UCX_AM_ID, NULL, 0, b->data, len, &p);
    if (req == NULL || UCS_PTR_IS_ERR(req)) {
        bounce_put(b);
        return UCS_PTR_STATUS(req);
    }
    tl->inflight++;
    return UCS_OK;
}

static rcoll_status_t ucx_send(rcoll_tl_t *tl, int peer, const void *hdr, size_t hdr_len,
                               const void *data, size_t len)
{
    size_t total = UCX_TL_HDR + hdr_len + len;
    rcoll_status_t st;
    ucp_ep_h ep = tl->eps[peer];
    int queue = 0;
    if (ep == NULL) {
        if ((ep = ep_first_use(tl, peer, "send", &st)) == NULL) {
            return st;
        }
        queue = tl->eps[peer] == NULL;          /* wiring up, or EP_LATER */
    }
    peer_auth_t *a = peer_auth(tl, peer);
    if (a == NULL) {
        rcoll_error("ucx: send to rank %d before the job's secret is known", peer);
        return RCOLL_ERR_INTERNAL;
    }
    bounce_t *b = tl->free_bounce;
    if (b != NULL && total <= tl->bounce_size) {
        tl->free_bounce = b->next;
    } else if ((b = malloc(sizeof(*b) + total)) != NULL) {
        b->tl = tl;
        b->pooled = 0;
    } else {
        rcoll_error("ucx: out of memory for a %zu-byte message to rank %d", total, peer);
        return RCOLL_ERR_NO_MEMORY;
    }
    put32(b->data + 8, (uint32_t)tl->rank);
    put32(b->data + 12, UCX_MAGIC);
    put64(b->data + 16, ++a->tx_seq);
    memcpy(b->data + UCX_TL_HDR, hdr, hdr_len);
    if (len) {
        memcpy(b->data + UCX_TL_HDR + hdr_len, data, len);
    }
    put64(b->data, rcoll__auth_msg_mac(a->tx_key, b->data + UCX_MAC_OFF, total - UCX_MAC_OFF,
                                       UCX_TL_HDR - UCX_MAC_OFF));
    if (queue) {
        b->peer = peer;
        b->len = total;
        b->next = NULL;
        *tl->q_tail = b;
        tl->q_tail = &b->next;
        return RCOLL_OK;
    }
    ucs_status_t s = am_send(tl, ep, b, total);
    if (s != UCS_OK) {
        rcoll_error("ucx: send of %zu bytes to rank %d failed: %s", total, peer,
                    ucs_status_string(s));
        return tl->failed[peer] ? RCOLL_ERR_PEER_FAILED : RCOLL_ERR_TRANSPORT;
    }
    return RCOLL_OK;
}

/* Send the queued messages of peers whose wire-up is over; drop those of
 * peers that failed (reported by then). */
static void queue_drain(struct rcoll_tl *tl)
{
    bounce_t **pp = &tl->q_head;
    tl->q_check = 0;
    while (*pp != NULL) {
        bounce_t *b = *pp;
        ucp_ep_h ep = tl->eps[b->peer];
        if (ep == NULL && !tl->failed[b->peer]) {
            pp = &b->next;
            continue;
        }
        *pp = b->next;
        if (ep == NULL || tl->failed[b->peer]) {
            rcoll_debug("ucx: dropping a queued %zu-byte message to failed rank %d", b->len, b->peer);
            bounce_put(b);
            continue;
        }
        ucs_status_t s = am_send(tl, ep, b, b->len);
        if (s != UCS_OK) {
            rcoll_error("ucx: queued send of %zu bytes to rank %d failed: %s", b->len, b->peer,
                        ucs_status_string(s));
        }
    }
    tl->q_tail = pp;
}

static rcoll_status_t ucx_mem_reg(rcoll_tl_t *tl, void *addr, size_t len, unsigned access,
                                  rcoll_tl_mr_t **out)
{
    /* UCX cannot take back a key a peer has unpacked (tcp and cma have
     * nothing to revoke, InfiniBand's registration cache outlives
     * ucp_mem_unmap): granting remote write would let a late put land in
     * whatever lives at the address next.  So no remote write at all. */
    if (access & RCOLL_TL_ACCESS_REMOTE_WRITE) {
        rcoll_error("ucx: refusing to register %zu bytes at %p for remote write: UCX cannot "
                    "revoke the key (the core pulls with get instead)", len, addr);
        return RCOLL_ERR_NOT_SUPPORTED;
    }
    struct rcoll_tl_mr *mr = malloc(sizeof(*mr));
    if (mr == NULL) {
        return RCOLL_ERR_NO_MEMORY;
    }
    ucp_mem_map_params_t p = {
        .field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH |
                      UCP_MEM_MAP_PARAM_FIELD_PROT,
        .address = addr,
        .length = len,
        .prot = UCP_MEM_MAP_PROT_LOCAL_READ | UCP_MEM_MAP_PROT_LOCAL_WRITE |
                ((access & RCOLL_TL_ACCESS_REMOTE_READ) ? UCP_MEM_MAP_PROT_REMOTE_READ : 0),
    };
    ucs_status_t s = ucp_mem_map(tl->ucp, &p, &mr->memh);
    if (s != UCS_OK) {
        rcoll_error("ucx: ucp_mem_map of %zu bytes at %p failed: %s", len, addr, ucs_status_string(s));
        free(mr);
        return RCOLL_ERR_NO_MEMORY;
    }
    mr->addr = addr;
    mr->len = len;
    *out = mr;
    return RCOLL_OK;
}

static rcoll_status_t ucx_pack_rkey(rcoll_tl_t *tl, rcoll_tl_mr_t *mr, void *buf, size_t *len)
{
    void *rkey;
    size_t size;
    ucs_status_t s = ucp_rkey_pack(tl->ucp, mr->memh, &rkey, &size);
    if (s != UCS_OK) {
        rcoll_error("ucx: ucp_rkey_pack failed: %s", ucs_status_string(s));
        return RCOLL_ERR_TRANSPORT;
    }
    ucx_rkey_hdr_t h = { (uint64_t)(uintptr_t)mr->addr, mr->len };
    if (sizeof(h) + size > *len) {
        rcoll_error("ucx: packed remote key of %zu bytes exceeds %zu", size, *len - sizeof(h));
        ucp_rkey_buffer_release(rkey);
        return RCOLL_ERR_INTERNAL;
    }
    memcpy(buf, &h, sizeof(h));
    memcpy((uint8_t *)buf + sizeof(h), rkey, size);
    *len = sizeof(h) + size;
    ucp_rkey_buffer_release(rkey);
    return RCOLL_OK;
}

static void ucx_mem_dereg(rcoll_tl_t *tl, rcoll_tl_mr_t *mr)
{
    ucs_status_t s = ucp_mem_unmap(tl->ucp, mr->memh);
    if (s != UCS_OK) {
        rcoll_warn("ucx: ucp_mem_unmap failed: %s", ucs_status_string(s));
    }
    free(mr);
}

static void done_push(struct rcoll_tl *tl, get_done_t *d, rcoll_status_t status)
{
    d->status = status;
    d->next = NULL;
    *tl->done_tail = d;
    tl->done_tail = &d->next;
}

/* The get is over (status): report it from the next progress(). */
static void get_finish(get_ctx_t *g, rcoll_status_t status)
{
    get_unlink(g);
    ucp_rkey_destroy(g->rkey);
    g->rkey = NULL;
    done_push(g->tl, &g->done, status);
}

static void get_cb(void *request, ucs_status_t status, void *user_data)
{
    get_ctx_t *g = user_data;
    ucp_request_free(request);
    if (g->orphaned) {          /* abort_peer already reported it */
        ucp_rkey_destroy(g->rkey);
        free(g);
        return;
    }
    if (status != UCS_OK) {
        rcoll_error("ucx: RDMA read from rank %d failed: %s", g->peer, ucs_status_string(status));
    }
    get_finish(g, status == UCS_OK ? RCOLL_OK :
               g->tl->failed[g->peer] ? RCOLL_ERR_PEER_FAILED : RCOLL_ERR_TRANSPORT);
}

static rcoll_status_t ucx_get(rcoll_tl_t *tl, int peer, void *laddr, size_t len, uint64_t raddr,
                              const void *rkey_buf, size_t rkey_len, rcoll_tl_completion_t *comp)
{
    ucx_rkey_hdr_t h;
    if (tl->failed[peer]) {
        rcoll_error("ucx: RDMA read of %zu bytes from rank %d: the peer has failed", len, peer);
        return RCOLL_ERR_PEER_FAILED;
    }
    if (rkey_len <= sizeof(h)) {
        rcoll_error("ucx: remote key from rank %d is %zu bytes: malformed", peer, rkey_len);
        return RCOLL_ERR_PROTOCOL;
    }
    memcpy(&h, rkey_buf, sizeof(h));
    if (raddr < h.addr || len > h.len || raddr - h.addr > h.len - len) {
        rcoll_error("ucx: refusing a read of %zu bytes at 0x%llx from rank %d: outside the region "
                    "it advertised (0x%llx, %llu bytes)", len, (unsigned long long)raddr, peer,
                    (unsigned long long)h.addr, (unsigned long long)h.len);
        return RCOLL_ERR_PROTOCOL;
    }
    rcoll_status_t st;
    ucp_ep_h ep = tl->eps[peer];
    if (ep == NULL && (ep = ep_first_use(tl, peer, "RDMA read", &st)) == EP_LATER) {
        later_t *l = malloc(sizeof(*l) + rkey_len);
        if (l == NULL) {
            return RCOLL_ERR_NO_MEMORY;
        }
        *l = (later_t){ .peer = peer, .is_get = 1, .laddr = laddr, .len = len, .raddr = raddr,
                        .comp = comp, .rkey_len = rkey_len };
        memcpy(l->rkey, rkey_buf, rkey_len);
        *tl->later_tail = l;
        tl->later_tail = &l->next;
        return RCOLL_OK;
    }
    if (ep == NULL) {
        if (st != RCOLL_OK) {
            return st;
        }
        get_done_t *d = malloc(sizeof(*d));     /* the peer is unreachable: failed from progress */
        if (d == NULL) {
            return RCOLL_ERR_NO_MEMORY;
        }
        d->owner = NULL;
        d->comp = comp;
        done_push(tl, d, RCOLL_ERR_PEER_FAILED);
        return RCOLL_OK;
    }
    get_ctx_t *g = calloc(1, sizeof(*g));
    if (g == NULL) {
        return RCOLL_ERR_NO_MEMORY;
    }
    ucs_status_t s = ucp_ep_rkey_unpack(ep, (const uint8_t *)rkey_buf + sizeof(h), &g->rkey);
    if (s != UCS_OK) {
        rcoll_error("ucx: cannot unpack the remote key of rank %d: %s", peer, ucs_status_string(s));
        free(g);
        return RCOLL_ERR_TRANSPORT;
    }
    g->tl = tl;
    g->peer = peer;
    g->done.owner = g;
    g->done.comp = comp;
    g->next = tl->gets;
    g->pprev = &tl->gets;
    if (tl->gets != NULL) {
        tl->gets->pprev = &g->next;
    }
    tl->gets = g;
    ucp_request_param_t p = {
        .op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA,
        .cb.send = get_cb,
        .user_data = g,
    };
    ucs_status_ptr_t req = ucp_get_nbx(ep, laddr, len, raddr, g->rkey, &p);
    if (UCS_PTR_IS_ERR(req)) {
        rcoll_error("ucx: RDMA read of %zu bytes from rank %d failed: %s", len, peer,
                    ucs_status_string(UCS_PTR_STATUS(req)));
        get_unlink(g);
        ucp_rkey_destroy(g->rkey);
        free(g);
        return tl->failed[peer] ? RCOLL_ERR_PEER_FAILED : RCOLL_ERR_TRANSPORT;
    }
    if (req == NULL) {
        get_finish(g, RCOLL_OK);        /* done already: reported from progress() */
    }
    return RCOLL_OK;
}

/* Close the endpoint to peer at once: UCX purges what is in flight on it,
 * so nothing more lands.  A get UCX has not completed by then is reported
 * failed through a record of its own; its late callback, if any, frees it. */
static void ucx_abort_peer(rcoll_tl_t *tl, int peer, const char *why)
{
    if (tl->eps[peer] == NULL && tl->wiring[peer] != NULL) {     /* its queue goes */
        tl->eps[peer] = tl->wiring[peer];
        tl->wiring[peer] = NULL;
        tl->q_check = 1;
    }
    if (tl->eps[peer] == NULL) {
        /* Never connected (or closed before): nothing can be in flight,
         * but the peer is still to be reported failed, once. */
        if (!tl->failed[peer]) {
            rcoll_error("ucx: giving up on rank %d (no endpoint to close): %s", peer, why);
            tl->failed[peer] = 2;
            tl->to_report = 1;
            tl->q_check = 1;     /* messages queued for an endpoint made later go */
        }
        return;
    }
    rcoll_error("ucx: closing the endpoint to rank %d: %s", peer, why);
    ucp_request_param_t p = { .op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
                              .flags = UCP_EP_CLOSE_FLAG_FORCE };
    ucp_ep_h ep = tl->eps[peer];
    tl->eps[peer] = NULL;
    tl->q_check = 1;
    if (!tl->failed[peer]) {
        tl->failed[peer] = 2;
        tl->to_report = 1;
    }
    wait_request(tl, ucp_ep_close_nbx(ep, &p));
    for (get_ctx_t *g = tl->gets, *next; g != NULL; g = next) {
        next = g->next;
        if (g->peer != peer) {
            continue;
        }
        get_unlink(g);
        g->next = NULL;
        g->pprev = &g->next;
        g->orphaned = 1;
        get_done_t *d = malloc(sizeof(*d));
        if (d == NULL) {
            rcoll_error("ucx: out of memory reporting an aborted read from rank %d", peer);
            continue;
        }
        d->owner = NULL;
        d->comp = g->done.comp;
        done_push(tl, d, RCOLL_ERR_PEER_FAILED);
    }
}

/* Out of ucp_worker_progress (not nested in it): create the endpoints that
 * callbacks wanted (ep_first_use returned EP_LATER), start the gets and
 * probes that waited for them, and send what the queue can. */
static void after_progress(struct rcoll_tl *tl)
{
    if (tl->in_progress) {
        return;
    }
    if (tl->create_later) {
        tl->create_later = 0;
        rcoll_status_t st;
        for (bounce_t *b = tl->q_head; b != NULL; b = b->next) {
            if (tl->eps[b->peer] == NULL && tl->wiring[b->peer] == NULL && !tl->failed[b->peer]) {
                (void)ep_first_use(tl, b->peer, "queued send", &st);
            }
        }
        later_t *l = tl->later_head;
        tl->later_head = NULL;
        tl->later_tail = &tl->later_head;
        while (l != NULL) {
            later_t *next = l->next;
            if (!l->is_get) {
                ucx_probe_peer(tl, l->peer);
            } else {
                rcoll_status_t gs = ucx_get(tl, l->peer, l->laddr, l->len, l->raddr, l->rkey,
                                            l->rkey_len, l->comp);
                if (gs != RCOLL_OK) {           /* report it as the get's completion */
                    get_done_t *d = malloc(sizeof(*d));
                    if (d != NULL) {
                        d->owner = NULL;
                        d->comp = l->comp;
                        done_push(tl, d, gs);
                    } else {
                        rcoll_error("ucx: out of memory reporting a failed RDMA read from rank %d",
                                    l->peer);
                    }
                }
            }
            free(l);
            l = next;
        }
    }
    if (tl->q_check) {
        queue_drain(tl);
    }
}

/* Finalize: gets and probes never started (the core waits for its gets, so
 * normally none). */
static void later_drop_all(struct rcoll_tl *tl)
{
    while (tl->later_head != NULL) {
        later_t *l = tl->later_head;
        tl->later_head = l->next;
        if (l->is_get) {
            rcoll_warn("ucx: finalize: an RDMA read of %zu bytes from rank %d never started",
                       l->len, l->peer);
        }
        free(l);
    }
    tl->later_tail = &tl->later_head;
}

static int ucx_progress(rcoll_tl_t *tl)
{
    int n = (int)worker_progress(tl);
    after_progress(tl);
    get_done_t *d = tl->done_head;        /* a snapshot: callbacks may start more gets */
    tl->done_head = NULL;
    tl->done_tail = &tl->done_head;
    while (d != NULL) {
        get_done_t *next = d->next;
        d->comp->cb(d->comp, d->status);
        free(d->owner != NULL ? (void *)d->owner : (void *)d);
        d = next;
        n++;
    }
    if (tl->to_report) {
        tl->to_report = 0;
        for (int r = 0; r < tl->size; r++) {
            if (tl->failed[r] == 2) {
                tl->failed[r] = 1;
                tl->cb.peer_error(tl->cb.arg, r, RCOLL_ERR_PEER_FAILED,
                                  "ucx: this rank gave up on the peer (abort_peer, or no endpoint could be made)");
                n++;
            }
        }
    }
    return n;
}

/* A wait hears nothing from peer: make sure UCX watches it.  A peer with
 * an endpoint is watched already (peer-failure mode: a dead peer errors the
 * endpoint, keepalive finds a silent one); one this rank never sent to has
 * none, so create it now, and its wire-up or keepalive will report a dead
 * peer through ep_error_cb.  Never blocks: ucp_ep_create does not wait. */
static void ucx_probe_peer(rcoll_tl_t *tl, int peer)
{
    rcoll_status_t st;
    if (tl->eps[peer] == NULL && !tl->failed[peer] && !tl->closing &&
        ep_first_use(tl, peer, "probe", &st) == EP_LATER) {
        later_t *l = calloc(1, sizeof(*l));
        if (l != NULL) {                    /* else the next probe asks again */
            l->peer = peer;
            *tl->later_tail = l;
            tl->later_tail = &l->next;
        }
    }
}

static unsigned ucx_caps(rcoll_tl_t *tl)
{
    return RCOLL_TL_CAP_GET;
}

static size_t ucx_max_msg_size(rcoll_tl_t *tl)
{
    return UCX_MAX_MSG;
}

const rcoll_tl_ops_t rcoll_tl_ucx_ops = {
    .name = "ucx",
    .open = ucx_open,
    .close = ucx_close,
    .address = ucx_address,
    .connect = ucx_connect,
    .send = ucx_send,
    .mem_reg = ucx_mem_reg,
    .pack_rkey = ucx_pack_rkey,
    .mem_dereg = ucx_mem_dereg,
    .get = ucx_get,
    .abort_peer = ucx_abort_peer,
    .progress = ucx_progress,
    .caps = ucx_caps,
    .max_msg_size = ucx_max_msg_size,
    .probe_peer = ucx_probe_peer,
};
