/*
 * transport.h - the one interface between rcoll's core and its networks.
 *
 * A backend (transports/ucx, transports/verbs) fills in an rcoll_tl_ops_t.
 * The core never calls UCX or verbs directly.  Contract:
 *
 *  - probe(), if not NULL, says without opening anything whether the
 *    backend can start under a configuration, whether it should carry the
 *    traffic to peers on other nodes even when another backend also opens
 *    (prefer_remote: e.g. iWARP, which UCX cannot drive), and why (the
 *    device it would use, or why none is usable).  The core uses it for
 *    RCOLL_TRANSPORT=auto; a backend without probe is simply opened.
 *  - open() creates an instance for this process (world rank `rank` of
 *    `size`).  Every message the core sends is a header of at most
 *    params->hdr_size bytes followed by a payload of at most the eager
 *    limit (config) or RCOLL_TL_RKEY_MAX bytes: receive buffers must hold
 *    that.  address() gives a blob the core publishes through the bootstrap;
 *    connect() takes each peer's blob (it may finish the connection lazily,
 *    in progress(), but must not lose messages sent before it finishes).
 *  - send() transmits one message of hdr_len + len bytes (at most
 *    max_msg_size) to a peer.  It copies both parts before returning: the
 *    caller may reuse them at once.  It never blocks; when no credit or
 *    buffer is free the backend queues the message itself and sends it from
 *    progress().  Messages between two peers may arrive in any order.
 *  - Incoming messages are handed to callbacks->recv(), from inside
 *    progress() only, as one contiguous buffer valid during the call.
 *  - mem_reg() registers [addr, addr+len) for the given access and grants
 *    no more than it: pack_rkey() serialises a key that lets the peer put()
 *    into (REMOTE_WRITE) or get() from (REMOTE_READ) exactly that region.
 *    mem_dereg() revokes it: after it returns, no remote write can land.  A
 *    backend that cannot revoke a key it handed out (UCX over tcp, cma,
 *    posix: docs/protocols.md) refuses REMOTE_WRITE with
 *    RCOLL_ERR_NOT_SUPPORTED and does not claim RCOLL_TL_CAP_PUT; after its
 *    mem_dereg a peer may still read the region, never write it.
 *  - put() (RCOLL_TL_CAP_PUT) writes len bytes from laddr into the peer's
 *    registered region at raddr.  The source needs no registration by the
 *    caller (the backend registers or caches as it needs).  comp->cb is
 *    called from progress() once the data is visible at the target: a
 *    message sent after that is processed by the target only after the data
 *    is in place.
 *  - get() (RCOLL_TL_CAP_GET) reads len bytes of the peer's registered region
 *    at raddr into laddr (no registration by the caller).  The backend writes
 *    [laddr, laddr+len) only between get() and the completion: comp->cb is
 *    called from progress(), exactly once, when the data is in place (or the
 *    read failed), and nothing of this get lands after it.  abort_peer()
 *    ends every get to a peer at once: after it returns nothing more of them
 *    lands (their completions still run, with an error, from progress()),
 *    and the peer is reported failed (peer_error) from the next progress().
 *    So the caller that owns laddr decides when writes into it stop.
 *  - progress() polls once and returns the number of events handled (0 when
 *    idle: the core then backs off).
 *  - When a peer becomes unreachable the backend calls callbacks->peer_error()
 *    and completes that peer's outstanding puts and gets with an error; it never
 *    aborts the process.
 *  - Every function that fails logs why (peer, device, status string) before
 *    returning an error.
 */
#ifndef RCOLL_TRANSPORT_H
#define RCOLL_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>
#include "rcoll.h"
#include "status.h"
#include "config.h"

typedef struct rcoll_tl      rcoll_tl_t;      /* a backend instance (backend-defined) */
typedef struct rcoll_tl_mr   rcoll_tl_mr_t;   /* a memory registration (backend-defined) */

enum {
    RCOLL_TL_ACCESS_LOCAL        = 1u << 0,
    RCOLL_TL_ACCESS_REMOTE_WRITE = 1u << 1,
    RCOLL_TL_ACCESS_REMOTE_READ  = 1u << 2
};

enum {
    RCOLL_TL_CAP_PUT        = 1u << 0,   /* put() is implemented; mem_dereg revokes writes */
    RCOLL_TL_CAP_WRITE_IMM  = 1u << 1,   /* RDMA WRITE with immediate is used */
    RCOLL_TL_CAP_GET        = 1u << 2    /* get() and abort_peer() are implemented */
};

/* Largest packed remote key any backend produces. */
#define RCOLL_TL_RKEY_MAX 1024

typedef struct rcoll_tl_callbacks {
    void *arg;
    /* A message from world rank `peer`; `msg` is valid only during the call. */
    void (*recv)(void *arg, int peer, const void *msg, size_t len);
    /* `peer` failed or became unreachable; `reason` names what happened. */
    void (*peer_error)(void *arg, int peer, rcoll_status_t status, const char *reason);
} rcoll_tl_callbacks_t;

typedef struct rcoll_tl_params {
    int                   rank;        /* world rank of this process */
    int                   size;        /* world size */
    size_t                hdr_size;    /* the core's largest message header */
    const int            *node_of;     /* node index of every world rank: filled in
                                          after open(), valid from the first connect() */
    const rcoll_config_t *config;
    rcoll_tl_callbacks_t  cb;
    const struct rcoll_auth *auth;     /* the job's secret (common/auth.h): ready from
                                          the first connect(); NULL: rcoll__auth_none */
} rcoll_tl_params_t;

/* What probe() found. */
typedef struct rcoll_tl_probe {
    int  available;                    /* 1: a usable device; open() should succeed */
    int  prefer_remote;                /* 1: use it for peers on other nodes */
    char reason[160];                  /* the device ("siw0:1 iWARP") or why none */
} rcoll_tl_probe_t;

/* Completion of a put or a get: embed it in the caller's object. */
typedef struct rcoll_tl_completion rcoll_tl_completion_t;
struct rcoll_tl_completion {
    void (*cb)(rcoll_tl_completion_t *self, rcoll_status_t status);
};

typedef struct rcoll_tl_ops {
    const char *name;                  /* "ucx", "verbs" */
    void           (*probe)(const rcoll_config_t *config, rcoll_tl_probe_t *out);   /* optional */
    rcoll_status_t (*open)(const rcoll_tl_params_t *params, rcoll_tl_t **tl);
    void           (*close)(rcoll_tl_t *tl);
    rcoll_status_t (*address)(rcoll_tl_t *tl, const void **addr, size_t *len);
    rcoll_status_t (*connect)(rcoll_tl_t *tl, int peer, const void *addr, size_t len);
    rcoll_status_t (*send)(rcoll_tl_t *tl, int peer, const void *hdr, size_t hdr_len,
                           const void *data, size_t len);
    rcoll_status_t (*mem_reg)(rcoll_tl_t *tl, void *addr, size_t len, unsigned access,
                              rcoll_tl_mr_t **mr);
    rcoll_status_t (*pack_rkey)(rcoll_tl_t *tl, rcoll_tl_mr_t *mr, void *buf, size_t *len /* in: capacity */);
    void           (*mem_dereg)(rcoll_tl_t *tl, rcoll_tl_mr_t *mr);
    rcoll_status_t (*put)(rcoll_tl_t *tl, int peer, const void *laddr, size_t len, uint64_t raddr,
                          const void *rkey, size_t rkey_len, rcoll_tl_completion_t *comp);
    rcoll_status_t (*get)(rcoll_tl_t *tl, int peer, void *laddr, size_t len, uint64_t raddr,
                          const void *rkey, size_t rkey_len, rcoll_tl_completion_t *comp);
    void           (*abort_peer)(rcoll_tl_t *tl, int peer, const char *why);
    int            (*progress)(rcoll_tl_t *tl);
    /* Capabilities (RCOLL_TL_CAP_*) and the largest hdr+payload send() takes. */
    unsigned       (*caps)(rcoll_tl_t *tl);
    size_t         (*max_msg_size)(rcoll_tl_t *tl);
    /* Optional: make sure the transport will learn whether `peer` is still
     * there, for a wait that hears nothing from it (a receiver is told of
     * nothing on Soft-RoCE): post something small that errors, through
     * peer_error(), if the peer is gone; it may skip a peer with work
     * outstanding (whose completion tells the same) or no connection.  Never blocks; off the hot path
     * (the deadline check, every RCOLL_PROBE_S of no progress). */
    void           (*probe_peer)(rcoll_tl_t *tl, int peer);
} rcoll_tl_ops_t;

/* Backends, listed explicitly in one place (transports/transport.c). */
extern const rcoll_tl_ops_t rcoll_tl_ucx_ops;
extern const rcoll_tl_ops_t rcoll_tl_verbs_ops;
extern const rcoll_tl_ops_t *const rcoll_tl_backends[];

/* Find a backend by name; NULL if unknown. */
const rcoll_tl_ops_t *rcoll_tl_find(const char *name);

#endif
