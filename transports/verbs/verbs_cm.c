/*
 * verbs_cm.c - connection set-up through rdma_cm, on every device kind by
 * default (RCOLL_VERBS_CM=auto; iWARP has no other way: its QPs cannot be
 * moved to RTR by hand), connections made on first use.
 *
 * Each rank listens on an IP address of its device (found by binding to the
 * addresses of the host's interfaces until one lands on the device) and
 * publishes it: the address blob is the same size for any job size.
 * connect() only records a peer's listener; the first send or put to a peer
 * (rcoll__verbs_cm_want) starts a connection, and what was sent meanwhile is
 * queued in order and posted once it is made.  Either rank of a pair may
 * connect; when both do at once, the lower rank's request wins: the higher
 * rank gives up its own attempt and accepts, the lower rank refuses the
 * higher one's request (quietly: that is no attack), so one connection
 * results.  Everything runs from progress() on a non-blocking event
 * channel; a failed attempt is retried with back-off until the deadline
 * (RCOLL_TIMEOUT, or 300 s when that is 0), after which the peer is
 * reported failed, naming the step the set-up was waiting for.
 *
 * The listener is reachable by anyone who can reach its IP port, so the
 * private data proves who connects (docs/security.md), little-endian:
 *   0 magic (4)   4 src rank (4)   8 dst rank (4)   12 nonce (8)
 *  20 credit slot address (8)   28 its rkey (4)   32 mac (8)
 * mac is SipHash-2-4 of bytes 0..31 under the key of the pair (src, dst)
 * for "cm", derived from the job's secret (common/auth.h).  The credit slot
 * is the sender's 4 bytes that the receiver may RDMA WRITE its credit
 * reports into (one memory region per peer, registered when that peer is
 * first connected): the blob carries no per-peer field.  The request
 * carries a fresh random nonce per attempt; the listener checks the proof,
 * that dst is itself and that it has not accepted this nonce before, and
 * only then touches the endpoint (an earlier attempt's QP is torn down only
 * for a genuine new request).  The accept carries the same nonce under the
 * reverse pair's key, checked by the connecting side at ESTABLISHED.  A
 * refused request costs one rate-limited log line and an rdma_reject.
 */
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>
#include "verbs_int.h"

#define CM_MAGIC       0x52434d32u   /* "RCM2": a connection request */
#define CM_MAGIC_ACK   0x52434132u   /* "RCA2": its accept */
#define CM_PRIV_LEN    40              /* fits IB's 56-byte REQ private data */
#define CM_SLOT_OFF    20
#define CM_MAC_OFF     32
#define CM_RESOLVE_MS  5000

static void sockaddr_str(const struct sockaddr *sa, char *buf, size_t len)
{
    char ip[INET6_ADDRSTRLEN] = "?";
    int port = 0;

    if (sa->sa_family == AF_INET6) {
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, ip, sizeof(ip));
        port = ntohs(((const struct sockaddr_in6 *)(const void *)sa)->sin6_port);
    } else if (sa->sa_family == AF_INET) {
        inet_ntop(AF_INET, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, ip, sizeof(ip));
        port = ntohs(((const struct sockaddr_in *)(const void *)sa)->sin_port);
    }
    snprintf(buf, len, "%s:%d", ip, port);
}

/* Bind a listener to an address of our device: IPv4 first, then global IPv6. */
static struct rdma_cm_id *bind_listener(rcoll_tl_t *tl)
{
    struct ifaddrs *ifs = NULL;
    struct rdma_cm_id *found = NULL;

    if (getifaddrs(&ifs) != 0) {
        rcoll_error("verbs: getifaddrs failed: %s", strerror(errno));
        return NULL;
    }
    for (int pass = 0; pass < 2 && found == NULL; pass++) {
        int family = pass == 0 ? AF_INET : AF_INET6;
        for (struct ifaddrs *i = ifs; i != NULL && found == NULL; i = i->ifa_next) {
            struct sockaddr_storage ss;
            struct rdma_cm_id *id = NULL;
            if (i->ifa_addr == NULL || i->ifa_addr->sa_family != family ||
                !(i->ifa_flags & IFF_UP) || (i->ifa_flags & IFF_LOOPBACK)) {
                continue;
            }
            memcpy(&ss, i->ifa_addr, family == AF_INET ? sizeof(struct sockaddr_in)
                                                       : sizeof(struct sockaddr_in6));
            if (family == AF_INET6 &&
                IN6_IS_ADDR_LINKLOCAL(&((struct sockaddr_in6 *)(void *)&ss)->sin6_addr)) {
                continue;
            }
            if (rdma_create_id(tl->ch, &id, NULL, RDMA_PS_TCP) != 0) {
                continue;
            }
            if (rdma_bind_addr(id, (struct sockaddr *)&ss) == 0 && id->verbs != NULL &&
                strcmp(ibv_get_device_name(id->verbs->device), tl->port.dev) == 0 &&
                (id->port_num == 0 || id->port_num == tl->port.port)) {
                found = id;
                rcoll_debug("verbs: rdma_cm listens on %s (%s) for %s:%d", i->ifa_name,
                            family == AF_INET ? "IPv4" : "IPv6", tl->port.dev, tl->port.port);
            } else {
                rdma_destroy_id(id);
            }
        }
    }
    freeifaddrs(ifs);
    return found;
}

rcoll_status_t rcoll__verbs_cm_open(rcoll_tl_t *tl)
{
    char where[80];

    tl->ch = rdma_create_event_channel();
    if (tl->ch == NULL) {
        rcoll_error("verbs: rdma_create_event_channel failed: %s (is rdma_ucm loaded?)", strerror(errno));
        return RCOLL_ERR_TRANSPORT;
    }
    int fl = fcntl(tl->ch->fd, F_GETFL);
    if (fl < 0 || fcntl(tl->ch->fd, F_SETFL, fl | O_NONBLOCK) != 0) {
        rcoll_error("verbs: cannot make the rdma_cm channel non-blocking: %s", strerror(errno));
        return RCOLL_ERR_TRANSPORT;
    }
    tl->listen_id = bind_listener(tl);
    if (tl->listen_id == NULL) {
        rcoll_error("verbs: no IP address of this host is on %s:%d; rdma_cm needs one "
                    "(give the device's network interface an address)", tl->port.dev, tl->port.port);
        return RCOLL_ERR_TRANSPORT;
    }
    if (rdma_listen(tl->listen_id, tl->size < 128 ? 128 : tl->size) != 0) {
        rcoll_error("verbs: rdma_listen on %s failed: %s", tl->port.dev, strerror(errno));
        return RCOLL_ERR_TRANSPORT;
    }
    memcpy(&tl->laddr, rdma_get_local_addr(tl->listen_id), sizeof(tl->laddr));
    tl->ctx = tl->listen_id->verbs;
    sockaddr_str((struct sockaddr *)&tl->laddr, where, sizeof(where));
    rcoll_info("verbs: %s:%d (%s) connects through rdma_cm, listening on %s", tl->port.dev,
               tl->port.port, rcoll__verbs_kind_name(tl->port.kind), where);
    return RCOLL_OK;
}

void rcoll__verbs_cm_close(rcoll_tl_t *tl)
{
    if (tl->listen_id != NULL) {
        rdma_destroy_id(tl->listen_id);
        tl->listen_id = NULL;
    }
    if (tl->ch != NULL) {
        rdma_destroy_event_channel(tl->ch);
        tl->ch = NULL;
    }
}

static const rcoll_auth_t *job_auth(const rcoll_tl_t *tl)
{
    return tl->params.auth != NULL ? tl->params.auth : &rcoll__auth_none;
}

/* The mac of a private data block from `from` to `to` (bytes 0..CM_MAC_OFF). */
static uint64_t cm_mac(const rcoll_tl_t *tl, int from, int to, const uint8_t *priv)
{
    uint8_t key[RCOLL_SIPHASH_KEY_LEN];
    rcoll__auth_pair_key(job_auth(tl), "cm", (uint64_t)from, (uint64_t)to, key);
    return rcoll__siphash24(key, priv, CM_MAC_OFF);
}

/* Whether priv (len bytes) is a genuine `magic` from rank `from` to this
 * rank; *nonce is the nonce it carries, *why what is wrong if not. */
static int cm_check(const rcoll_tl_t *tl, const uint8_t *priv, size_t len, uint32_t magic, int from,
                    uint64_t *nonce, const char **why)
{
    if (priv == NULL || len < CM_PRIV_LEN || rcoll__verbs_get_u32(priv) != magic) {
        *why = "not rcoll's connection format";
        return 0;
    }
    if (rcoll__verbs_get_u32(priv + 8) != (uint32_t)tl->rank) {
        *why = "addressed to another rank";
        return 0;
    }
    *nonce = rcoll__verbs_get_u64(priv + 12);
    if (!job_auth(tl)->ready ||
        !rcoll__auth_equal64(cm_mac(tl, from, tl->rank, priv), rcoll__verbs_get_u64(priv + CM_MAC_OFF))) {
        *why = "its proof does not verify (not from this job)";
        return 0;
    }
    return 1;
}

/* The memory region of peer's credit slot (only peer may write it), made
 * when the peer is first connected; NULL if registering failed. */
static struct ibv_mr *slot_mr(rcoll_tl_t *tl, int peer)
{
    if (tl->slot_mrs[peer] == NULL) {
        tl->slot_mrs[peer] = rcoll__verbs_reg(tl, &tl->credit_slots[peer], sizeof(tl->credit_slots[peer]),
                                              IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
                                              "a peer's credit slot");
    }
    return tl->slot_mrs[peer];
}

/* Where the peer's credit reports to us go, from its genuine private data. */
static void take_slot(rcoll_verbs_ep_t *ep, const uint8_t *priv)
{
    ep->rcredit_addr = rcoll__verbs_get_u64(priv + CM_SLOT_OFF);
    ep->rcredit_rkey = rcoll__verbs_get_u32(priv + CM_SLOT_OFF + 8);
}

static void conn_param(rcoll_tl_t *tl, rcoll_verbs_ep_t *ep, struct rdma_conn_param *p, uint8_t *priv,
                       const struct ibv_mr *slot)
{
    rcoll__verbs_put_u32(priv, ep->active ? CM_MAGIC : CM_MAGIC_ACK);
    rcoll__verbs_put_u32(priv + 4, (uint32_t)tl->rank);
    rcoll__verbs_put_u32(priv + 8, (uint32_t)ep->peer);
    rcoll__verbs_put_u64(priv + 12, ep->cm_nonce);
    rcoll__verbs_put_u64(priv + CM_SLOT_OFF, (uintptr_t)&tl->credit_slots[ep->peer]);
    rcoll__verbs_put_u32(priv + CM_SLOT_OFF + 8, slot->rkey);
    rcoll__verbs_put_u64(priv + CM_MAC_OFF, cm_mac(tl, tl->rank, ep->peer, priv));
    memset(p, 0, sizeof(*p));
    p->private_data = priv;
    p->private_data_len = CM_PRIV_LEN;
    p->responder_resources = 1;
    p->initiator_depth = 1;
    p->retry_count = 6;                 /* not 7: see QP_RETRY in verbs_qp.c */
    p->rnr_retry_count = tl->srq != NULL ? 7 : 3;  /* verbs_qp.c: QP_SRQ_RNR_RETRY, QP_RNR_RETRY */
}

static void start_active(rcoll_tl_t *tl, rcoll_verbs_ep_t *ep)
{
    struct sockaddr_storage src = tl->laddr;
    struct rdma_cm_id *id = NULL;
    char where[80];

    ep->retry_at = 0;
    ep->cm_step = "resolving its address";
    if (rcoll__auth_random(&ep->cm_nonce, sizeof(ep->cm_nonce)) != RCOLL_OK) {
        ep->retry_at = rcoll__verbs_now() + 0.1;
        return;
    }
    if (src.ss_family == AF_INET) {
        ((struct sockaddr_in *)(void *)&src)->sin_port = 0;
    } else {
        ((struct sockaddr_in6 *)(void *)&src)->sin6_port = 0;
    }
    if (rdma_create_id(tl->ch, &id, ep, RDMA_PS_TCP) != 0 ||
        rdma_resolve_addr(id, (struct sockaddr *)&src, (struct sockaddr *)&ep->raddr, CM_RESOLVE_MS) != 0) {
        sockaddr_str((struct sockaddr *)&ep->raddr, where, sizeof(where));
        rcoll_debug("verbs: peer %d: resolving %s failed: %s; retrying", ep->peer, where, strerror(errno));
        if (id != NULL) {
            rdma_destroy_id(id);
        }
        ep->retry_at = rcoll__verbs_now() + 0.1;
        return;
    }
    ep->cm_id = id;
}

/*
 * Usable for sending once established, addressed (connect() called), and,
 * on the accepting side, once the connecting side's HELLO has arrived
 * (iWARP: the responder must not send first).
 */
void rcoll__verbs_cm_maybe_connected(rcoll_tl_t *tl, rcoll_verbs_ep_t *ep)
{
    if (ep->state != RCOLL_VERBS_EP_CONNECTING || !ep->qp_ready || !ep->have_addr ||
        (!ep->active && !ep->heard)) {
        return;
    }
    tl->cm_waiting--;
    rcoll__verbs_ep_connected(tl, ep);
    if (ep->active) {
        rcoll__verbs_send_hello(tl, ep);
    }
}

static void cm_start(rcoll_tl_t *tl, rcoll_verbs_ep_t *ep)
{
    ep->active = 1;
    ep->state = RCOLL_VERBS_EP_CONNECTING;
    ep->deadline = rcoll__verbs_now() + tl->conn_timeout;
    tl->cm_waiting++;
    start_active(tl, ep);
}

void rcoll__verbs_cm_want(rcoll_tl_t *tl, rcoll_verbs_ep_t *ep)
{
    if (ep->state == RCOLL_VERBS_EP_IDLE && ep->have_addr && tl->cm == RCOLL_VERBS_CM_RDMACM &&
        ep->peer != tl->rank) {
        rcoll_debug("verbs: peer %d: first use, connecting", ep->peer);
        cm_start(tl, ep);
    }
}

/* Set up the QP of an id (route resolved, or a connection request). */
static int setup_qp(rcoll_tl_t *tl, rcoll_verbs_ep_t *ep, struct rdma_cm_id *id)
{
    struct rdma_conn_param p;
    uint8_t priv[CM_PRIV_LEN];
    struct ibv_mr *slot = slot_mr(tl, ep->peer);

    if (slot == NULL || rcoll__verbs_qp_create(tl, ep, id) != RCOLL_OK ||
        rcoll__verbs_qp_post_recvs(tl, ep) != RCOLL_OK) {
        return -1;
    }
    conn_param(tl, ep, &p, priv, slot);
    if ((ep->active ? rdma_connect(id, &p) : rdma_accept(id, &p)) != 0) {
        rcoll_debug("verbs: peer %d: rdma_%s failed: %s", ep->peer, ep->active ? "connect" : "accept",
                    strerror(errno));
        return -1;
    }
    ep->cm_step = ep->active ? "waiting for its accept" : "waiting for the connection to establish";
    return 0;
}

/*
 * A connection request; the ep to use, or NULL to reject.  Nothing of the
 * ep is touched before the request has proven to come from that rank of
 * this job (a forged or replayed one must not tear down the QP of a
 * connection being made).  A genuine request that loses to our own attempt
 * (both connect at once: the lower rank's wins), or comes after that
 * attempt is made, is refused without a warning: it is no attack.
 */
static rcoll_verbs_ep_t *request_ep(rcoll_tl_t *tl, struct rdma_cm_event *ev)
{
    const uint8_t *priv = ev->param.conn.private_data;
    size_t len = priv != NULL ? ev->param.conn.private_data_len : 0;
    const char *why = NULL;
    uint64_t nonce = 0;
    int peer = len >= 8 ? (int)rcoll__verbs_get_u32(priv + 4) : -1;
    char where[80];

    if (len >= 8 && (peer < 0 || peer >= tl->size || peer == tl->rank)) {
        why = "no such peer";
    } else if (cm_check(tl, priv, len, CM_MAGIC, peer, &nonce, &why)) {
        rcoll_verbs_ep_t *ep = &tl->eps[peer];
        for (unsigned i = 0; i < ep->cm_nseen && i < 4; i++) {
            if (ep->cm_seen[i] == nonce) {
                why = "a replay of a request already accepted";
            }
        }
        if (why == NULL && (ep->state == RCOLL_VERBS_EP_CONNECTED || ep->state == RCOLL_VERBS_EP_FAILED)) {
            /* genuine: its attempt crossed ours, which won and is made (or the peer failed) */
            rcoll_debug("verbs: peer %d: refusing a late connection request (we are %s)", peer,
                        ep->state == RCOLL_VERBS_EP_CONNECTED ? "connected" : "done with it");
            return NULL;
        }
        if (why == NULL && ep->state == RCOLL_VERBS_EP_CONNECTING && ep->active && peer > tl->rank) {
            rcoll_debug("verbs: peer %d connects to us while we connect to it: ours (the lower "
                        "rank's) wins, refusing its request", peer);
            return NULL;
        }
        if (why == NULL) {
            ep->cm_seen[ep->cm_nseen++ % 4] = nonce;
            ep->cm_nonce = nonce;
            take_slot(ep, priv);
            return ep;
        }
    }
    sockaddr_str(rdma_get_peer_addr(ev->id), where, sizeof(where));
    rcoll__auth_reject(&tl->cm_rejects, "verbs: rejected an rdma_cm connection request on %s from %s "
                       "claiming rank %d: %s", tl->port.dev, where, peer, why);
    return NULL;
}

/* The connecting side: whether the accept of attempt ep->cm_nonce is the peer's. */
static int accept_genuine(rcoll_tl_t *tl, rcoll_verbs_ep_t *ep, struct rdma_cm_event *ev)
{
    const uint8_t *priv = ev->param.conn.private_data;
    size_t len = priv != NULL ? ev->param.conn.private_data_len : 0;
    const char *why = NULL;
    uint64_t nonce = 0;

    if (cm_check(tl, priv, len, CM_MAGIC_ACK, ep->peer, &nonce, &why) &&
        rcoll__verbs_get_u32(priv + 4) == (uint32_t)ep->peer && nonce == ep->cm_nonce) {
        take_slot(ep, priv);
        return 1;
    }
    rcoll__auth_reject(&tl->cm_rejects, "verbs: refusing the rdma_cm accept from rank %d on %s: %s",
                       ep->peer, tl->port.dev, why != NULL ? why : "it answers another attempt");
    return 0;
}

static void attempt_failed(rcoll_tl_t *tl, rcoll_verbs_ep_t *ep, const char *what, int status)
{
    rcoll_debug("verbs: peer %d on %s: rdma_cm %s (status %d); %s", ep->peer, tl->port.dev, what,
                status, ep->active ? "retrying" : "waiting for a new request");
    ep->qp_ready = 0;
    ep->cm_last_error = what;
    ep->cm_step = ep->active ? "retrying" : "waiting for a new request";
    if (ep->active) {
        int shift = ep->retries < 5 ? ep->retries : 5;
        ep->retries++;
        ep->retry_at = rcoll__verbs_now() + 0.05 * (1 << shift);
    }
}

/* Handle one event; returns an id to destroy once the event is acknowledged. */
static struct rdma_cm_id *handle(rcoll_tl_t *tl, struct rdma_cm_event *ev)
{
    rcoll_verbs_ep_t *ep = ev->event == RDMA_CM_EVENT_CONNECT_REQUEST ? request_ep(tl, ev)
                                                                      : ev->id->context;
    struct rdma_cm_id *doomed = NULL;

    if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
        if (ep == NULL) {
            rdma_reject(ev->id, NULL, 0);
            return ev->id;
        }
        if (ep->state == RCOLL_VERBS_EP_IDLE) {     /* the peer's first use */
            ep->state = RCOLL_VERBS_EP_CONNECTING;
            ep->deadline = rcoll__verbs_now() + tl->conn_timeout;
            tl->cm_waiting++;
        } else if (ep->active) {
            rcoll_debug("verbs: peer %d connects to us while we connect to it: theirs (the lower "
                        "rank's) wins, dropping our attempt", ep->peer);
        }
        ep->active = 0;
        ep->retry_at = 0;
        ep->heard = 0;
        ep->qp_ready = 0;
        if (ep->cm_id != NULL) {        /* our own attempt, or an earlier one of theirs */
            rcoll__verbs_qp_destroy(tl, ep);
        }
        ev->id->context = ep;
        if (setup_qp(tl, ep, ev->id) != 0) {
            rcoll__verbs_qp_drop(tl, ep, ev->id);
            return ev->id;              /* destroyed once the event is acknowledged */
        }
        return NULL;
    }
    if (ep == NULL || ev->id != ep->cm_id) {
        return NULL;                    /* an old attempt's id */
    }
    switch (ev->event) {
    case RDMA_CM_EVENT_ADDR_RESOLVED:
        ep->cm_step = "resolving its route";
        if (rdma_resolve_route(ev->id, CM_RESOLVE_MS) != 0) {
            attempt_failed(tl, ep, "resolve_route", errno);
            doomed = ep->cm_id;
            ep->cm_id = NULL;
        }
        break;
    case RDMA_CM_EVENT_ROUTE_RESOLVED:
        if (setup_qp(tl, ep, ev->id) != 0) {
            attempt_failed(tl, ep, "connect", errno);
            doomed = ep->cm_id;
            rcoll__verbs_qp_drop(tl, ep, ev->id);
        }
        break;
    case RDMA_CM_EVENT_ESTABLISHED:
        if (ep->active && !accept_genuine(tl, ep, ev)) {
            attempt_failed(tl, ep, "accept without a valid proof", 0);
            doomed = ep->cm_id;
            rcoll__verbs_qp_drop(tl, ep, ev->id);
            break;
        }
        ep->qp_ready = 1;
        rcoll__verbs_qp_rnr_timer(tl, ep);
        ep->cm_step = ep->active ? "sending" : "waiting for its HELLO";
        rcoll__verbs_cm_maybe_connected(tl, ep);
        break;
    case RDMA_CM_EVENT_DISCONNECTED:
        if (ep->state == RCOLL_VERBS_EP_CONNECTED || ep->state == RCOLL_VERBS_EP_FAILED) {
            if (ep->state == RCOLL_VERBS_EP_CONNECTED && !ep->disconnected) {
                ep->disconnected = 1;   /* decided after the CQ is drained (verbs_cq.c) */
                tl->ndisconnected++;
            }
            ep->qp_ready = 0;
            break;
        }
        __attribute__((fallthrough));   /* a half-made connection went away */
    case RDMA_CM_EVENT_ADDR_ERROR:
    case RDMA_CM_EVENT_ROUTE_ERROR:
    case RDMA_CM_EVENT_CONNECT_ERROR:
    case RDMA_CM_EVENT_UNREACHABLE:
    case RDMA_CM_EVENT_REJECTED:
        if (ep->state == RCOLL_VERBS_EP_CONNECTED || ep->state == RCOLL_VERBS_EP_FAILED) {
            break;
        }
        attempt_failed(tl, ep, rdma_event_str(ev->event), ev->status);
        doomed = ep->cm_id;
        rcoll__verbs_qp_drop(tl, ep, ev->id);
        break;
    case RDMA_CM_EVENT_DEVICE_REMOVAL:
        rcoll__verbs_ep_fail(tl, ep, RCOLL_ERR_TRANSPORT, "the device was removed");
        break;
    default:
        break;
    }
    return doomed;
}

/* Deadlines and retries of connections still being made. */
static void check_waiting(rcoll_tl_t *tl, double now)
{
    for (int p = 0; p < tl->size && tl->cm_waiting > 0; p++) {
        rcoll_verbs_ep_t *ep = &tl->eps[p];
        if (ep->state != RCOLL_VERBS_EP_CONNECTING) {
            continue;
        }
        if (now > ep->deadline) {
            char where[80];
            sockaddr_str((struct sockaddr *)&ep->raddr, where, sizeof(where));
            /* (ep_fail takes it off tl->cm_waiting) */
            rcoll__verbs_ep_fail(tl, ep, RCOLL_ERR_PEER_FAILED,
                                 "no rdma_cm connection %s %s within %.0f s (%d attempts; "
                                 "the set-up was %s; the last attempt ended with %s)",
                                 ep->active ? "to" : "from", where, tl->conn_timeout,
                                 ep->retries + 1, ep->cm_step != NULL ? ep->cm_step : "not started",
                                 ep->cm_last_error != NULL ? ep->cm_last_error : "nothing");
        } else if (ep->active && ep->cm_id == NULL && ep->retry_at > 0 && now >= ep->retry_at) {
            start_active(tl, ep);
        }
    }
}

int rcoll__verbs_cm_progress(rcoll_tl_t *tl)
{
    struct rdma_cm_event *ev;
    int n = 0;

    while (rdma_get_cm_event(tl->ch, &ev) == 0) {
        struct rdma_cm_id *doomed = handle(tl, ev);
        rdma_ack_cm_event(ev);
        if (doomed != NULL) {
            rdma_destroy_id(doomed);
        }
        n++;
    }
    if (tl->cm_waiting > 0) {
        double now = rcoll__verbs_now();
        if (now >= tl->next_cm_check) {
            tl->next_cm_check = now + 0.01;
            check_waiting(tl, now);
        }
    }
    return n;
}
